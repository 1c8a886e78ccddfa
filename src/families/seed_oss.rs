//! Seed-OSS: Llama's block with biases on q/k/v (`attention_bias`) but not on o
//! (`attention_out_bias`), and residual dropout after the attention and after the MLP
//! (`residual_dropout`, 0.1 in the class defaults: a bool mask each in training).

use super::prelude::*;

/// ByteDance Seed-OSS.
pub(super) struct SeedOss;

impl FamilyDef for SeedOss {
    fn id(&self) -> &'static str {
        "seed_oss"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["seed_oss"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "SeedOssDecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        super::llama::params(p, m);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &LLAMA)
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "seed_oss").then_some(
            r#"{"vocab_size":155136,"hidden_size":4096,"intermediate_size":27648,"num_hidden_layers":64,
            "num_attention_heads":80,"num_key_value_heads":8,"head_dim":128,"tie_word_embeddings":false,
            "attention_bias":true,"attention_out_bias":false,"mlp_bias":false,"attention_dropout":0.1,
            "residual_dropout":0.1,"max_position_embeddings":524288,"rope_theta":10000.0}"#,
        )
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        d.spec.o_bias = r.bool_or("attention_out_bias", false)?;
        d.spec.hidden_dropout = r.f64_or("residual_dropout", 0.1)?;
        Ok(())
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        LLAMA.kinds()
    }
}
