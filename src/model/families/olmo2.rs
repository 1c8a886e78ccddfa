//! OLMo 2: norms after attention and after the MLP (`x + norm(f(x))`, no pre-norm), and an
//! RMSNorm over the whole q and k projections.

use super::*;

const STYLE: Style =
    Style { norm: NormKind::RmsWeightFp32, qk_norm: QkNorm::Full, placement: Placement::Post, ..LLAMA };

pub(super) fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: T) -> T {
    sequential_block(g, m, flags, x, &STYLE)
}

pub(super) fn params(p: &mut Params, m: &TransformerSpec) {
    let (h, l) = (m.hidden_size, m.num_layers);
    let (q, kv) = (m.q_width(), m.kv_width());
    p.ends(m, false);
    p.qkvo(m, m.qkv_bias, m.qkv_bias);
    p.norms(q, 1, l, false);
    p.norms(kv, 1, l, false);
    mlp_params(p, h, m.intermediate_size, l, true, false, false);
    p.norms(h, 2, l, false);
}
