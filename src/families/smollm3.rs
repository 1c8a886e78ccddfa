//! SmolLM3: Llama whose NoPE layers skip the rotary op (the `NO_ROPE` layer flag).

use super::prelude::*;

/// SmolLM3.
pub(super) struct Smollm3;

impl FamilyDef for Smollm3 {
    fn id(&self) -> &'static str {
        "smollm3"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["smollm3"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "SmolLM3DecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        super::llama::params(p, m);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &LLAMA)
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        LLAMA.kinds()
    }
}
