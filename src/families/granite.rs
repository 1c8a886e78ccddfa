//! Granite: Llama with scalar multipliers (embedding, residual, attention, logits), which scale by
//! Python floats and keep nothing.

use super::prelude::*;

/// IBM Granite (dense).
pub(super) struct Granite;

impl FamilyDef for Granite {
    fn id(&self) -> &'static str {
        "granite"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["granite"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "GraniteDecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        super::llama::params(p, m);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &LLAMA)
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        // transformers' GraniteConfig keeps LlamaConfig's defaults for the keys read
        (model_type == "granite").then(|| super::llama::Llama.class_defaults("llama")).flatten()
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        LLAMA.kinds()
    }
}
