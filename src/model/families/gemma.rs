//! Gemma, Gemma 2 and Gemma 3 (text): `(1 + w)` RMSNorm in fp32, GeGLU with tanh GELU, the
//! embedding scaled by `sqrt(h)` (a 0-dim tensor). Gemma 2 and 3 put a norm before and after
//! attention and MLP; Gemma 2 soft-caps attention (eager) and the final logits; Gemma 3 adds a
//! per-head q/k norm and keeps two rotary tables (local and global layers).

use super::*;

const GEMMA: Style = Style { norm: NormKind::RmsOffset, act: Act::Gelu, ..LLAMA };
const GEMMA2: Style = Style { placement: Placement::Sandwich, ..GEMMA };
const GEMMA3: Style = Style { qk_norm: QkNorm::PerHead, ..GEMMA2 };

pub(super) fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: T) -> T {
    let st = match m.family {
        Family::Gemma => GEMMA,
        Family::Gemma2 => GEMMA2,
        _ => GEMMA3,
    };
    sequential_block(g, m, flags, x, &st)
}

pub(super) fn params(p: &mut Params, m: &TransformerSpec) {
    let (h, l) = (m.hidden_size, m.num_layers);
    p.ends(m, false);
    p.qkvo(m, m.qkv_bias, m.qkv_bias);
    if m.family == Family::Gemma3 {
        p.norms(m.head_dim, 2, l, false);
    }
    mlp_params(p, h, m.intermediate_size, l, true, false, false);
    p.norms(h, if m.family == Family::Gemma { 2 } else { 4 }, l, false);
}
