//! StarCoder2: pre-LayerNorm with bias, biased projections, GQA with rotary, a plain
//! `c_proj(gelu_tanh(c_fc(x)))` MLP, residual dropout.

use super::prelude::*;

const STYLE: Style = Style { norm: NormKind::Layer, act: Act::Gelu, gated: false, ..LLAMA };

/// StarCoder2.
pub(super) struct Starcoder2;

impl FamilyDef for Starcoder2 {
    fn id(&self) -> &'static str {
        "starcoder2"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["starcoder2"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "Starcoder2DecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        p.ends(m, true);
        p.qkvo(m, m.qkv_bias, m.o_bias);
        mlp_params(p, h, m.intermediate_size, l, false, false, m.mlp_bias);
        p.norms(h, 2, l, true);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &STYLE)
    }

    fn peft_modules(&self) -> Option<&'static PeftModules> {
        Some(&PeftModules { up: "c_fc", down: r"mlp\.c_proj", ..PeftModules::LLAMA })
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        match model_type {
            "starcoder2" => Some(
                r#"{"vocab_size":49152,"hidden_size":3072,"intermediate_size":12288,"num_hidden_layers":30,
                "num_attention_heads":24,"num_key_value_heads":2,"use_bias":true,"tie_word_embeddings":true,
                "residual_dropout":0.0}"#,
            ),
            _ => None,
        }
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let b = r.bool_or("use_bias", true)?;
        (d.spec.qkv_bias, d.spec.o_bias, d.spec.mlp_bias) = (b, b, b);
        d.spec.hidden_dropout = r.f64_or("residual_dropout", 0.0)?;
        d.all_sliding();
        Ok(())
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        STYLE.kinds()
    }
}
