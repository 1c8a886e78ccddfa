//! An architecture without a family of its own: estimated as the closest Llama-style decoder
//! (its experts, sliding layers and dropout read from the config's usual keys) and flagged
//! unvalidated everywhere.

use super::prelude::*;

/// The generic decoder.
pub(super) struct Generic;

impl FamilyDef for Generic {
    fn id(&self) -> &'static str {
        "generic"
    }

    fn validated(&self) -> bool {
        false
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "LlamaDecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        super::llama::params(p, m);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &LLAMA)
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        d.sliding = match r.layer_types(d.spec.num_layers)? {
            Some(t) => t,
            None if r.bool_or("use_sliding_window", true)? => vec![true; d.spec.num_layers as usize],
            None => Vec::new(),
        };
        d.spec.hidden_dropout = r.f64_or("hidden_dropout", 0.0)?;
        super::moe::read(r, d)
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        LLAMA.kinds()
    }
}
