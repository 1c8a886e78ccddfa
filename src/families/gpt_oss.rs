//! gpt-oss: Llama-like pre-norm block with biased projections, learned attention sinks (an
//! extra logit column per head in eager attention; transformers has no SDPA path for them),
//! alternating sliding-window and full layers, rotary over two halves, and an MoE MLP (router with
//! a bias, top-k then softmax, experts with biases and a clamped SwiGLU).

use super::prelude::*;

/// gpt-oss's RMSNorm multiplies the weight in fp32 before casting back (like OLMo 2's).
const STYLE: Style = Style { norm: NormKind::RmsWeightFp32, ..LLAMA };

/// gpt-oss.
pub(super) struct GptOss;

impl FamilyDef for GptOss {
    fn id(&self) -> &'static str {
        "gpt_oss"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["gpt_oss"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "GptOssDecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        p.ends(m, false);
        p.qkvo(m, true, true);
        p.push(m.num_heads, 1, l, ParamKind::Vector, Scope::Block, true); // sinks
        moe_params(p, m, l, true, true);
        p.norms(h, 2, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &STYLE)
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        OpKinds { rope: Rope::Halves, sinks: true, eager_only: true, clamped_swiglu: true, ..STYLE.kinds() }
    }
}
