//! Gemma, Gemma 2 and Gemma 3 (text): `(1 + w)` RMSNorm in fp32, GeGLU with tanh GELU, the
//! embedding scaled by `sqrt(h)` (a 0-dim tensor). Gemma 2 and 3 put a norm before and after
//! attention and MLP; Gemma 2 soft-caps attention (eager: transformers has no SDPA path for it)
//! and the final logits; Gemma 3 adds a per-head q/k norm and keeps two rotary tables (local and
//! global layers).

use super::prelude::*;

const GEMMA: Style = Style { norm: NormKind::RmsOffset, act: Act::Gelu, ..LLAMA };
const GEMMA2: Style = Style { placement: Placement::Sandwich, ..GEMMA };
const GEMMA3: Style = Style { qk_norm: QkNorm::PerHead, local_rope: true, ..GEMMA2 };

/// Gemma's embedding: the token embedding times a 0-dim `sqrt(h)` buffer (which the multiply
/// keeps, a buffer and not an activation).
fn scaled_embedding(g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
    let e = g.embedding(m.hidden_size);
    let n = g.ctx.tokens * m.hidden_size;
    g.scale_by_tensor(e, n)
}

/// Gemma's tensors; `norms` a block (2, or 4 with sandwich norms), per-head q/k norms (Gemma 3).
fn params(p: &mut Params, m: &TransformerSpec, norms: u64, qk_norm: bool) {
    let (h, l) = (m.hidden_size, m.num_layers);
    p.ends(m, false);
    p.qkvo(m, m.qkv_bias, m.qkv_bias);
    if qk_norm {
        p.norms(m.head_dim, 2, l, false);
    }
    mlp_params(p, h, m.intermediate_size, l, true, false, false);
    p.norms(h, norms, l, false);
}

/// Gemma (1).
pub(super) struct Gemma;

impl FamilyDef for Gemma {
    fn id(&self) -> &'static str {
        "gemma"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["gemma"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "GemmaDecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        params(p, m, 2, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &GEMMA)
    }

    fn embed(&self, g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
        scaled_embedding(g, m)
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        GEMMA.kinds()
    }
}

/// Gemma 2.
pub(super) struct Gemma2;

impl FamilyDef for Gemma2 {
    fn id(&self) -> &'static str {
        "gemma2"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["gemma2"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "Gemma2DecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        params(p, m, 4, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &GEMMA2)
    }

    fn embed(&self, g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
        scaled_embedding(g, m)
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        OpKinds { eager_only: true, ..GEMMA2.kinds() }
    }
}

/// Gemma 3 (the text part of multimodal checkpoints too).
pub(super) struct Gemma3;

impl FamilyDef for Gemma3 {
    fn id(&self) -> &'static str {
        "gemma3"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["gemma3_text", "gemma3"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "Gemma3DecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        params(p, m, 4, true);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &GEMMA3)
    }

    fn embed(&self, g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
        scaled_embedding(g, m)
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        GEMMA3.kinds()
    }
}
