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

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        match model_type {
            "smollm3" => Some(
                r#"{"vocab_size":128256,"hidden_size":2048,"intermediate_size":11008,"num_hidden_layers":36,
                "num_attention_heads":16,"num_key_value_heads":4,"tie_word_embeddings":true,
                "use_sliding_window":false,"no_rope_layer_interval":4,"attention_bias":false,"mlp_bias":false}"#,
            ),
            _ => None,
        }
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let l = d.spec.num_layers;
        let uses_rope = match r.u64_list("no_rope_layers")? {
            Some(v) => v.iter().map(|&x| x != 0).collect::<Vec<_>>(),
            None => {
                let k = r.u64_or("no_rope_layer_interval", 4)?.max(1);
                (0..l).map(|j| !(j + 1).is_multiple_of(k)).collect()
            }
        };
        d.no_rope = uses_rope.iter().map(|u| !u).collect();
        let sw = r.bool_or("use_sliding_window", false)? && d.window.is_some();
        d.sliding = match r.layer_types(l)? {
            Some(t) if sw => t,
            _ => uses_rope.iter().map(|u| sw && !u).collect(),
        };
        Ok(())
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        LLAMA.kinds()
    }
}
