//! Phi-3: Llama with fused `qkv_proj` (q, k and v are views of one storage, so flash attention's
//! saved v keeps the whole projection) and fused `gate_up_proj`; residual dropout; a rope that
//! ends in `cat` (q head-major: flash's output is too, and o_proj reads a contiguous copy).

use super::prelude::*;

const STYLE: Style = Style { fused_qkv: true, fused_gate_up: true, ..LLAMA };

/// Phi-3.
pub(super) struct Phi3;

impl FamilyDef for Phi3 {
    fn id(&self) -> &'static str {
        "phi3"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["phi3"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "Phi3DecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        p.ends(m, false);
        p.linear(m.q_width() + 2 * m.kv_width(), h, l, LinearRole::Q, false);
        p.linear(h, m.q_width(), l, LinearRole::O, false);
        mlp_params(p, h, m.intermediate_size, l, true, true, false);
        p.norms(h, 2, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &STYLE)
    }

    fn peft_modules(&self) -> Option<&'static PeftModules> {
        Some(&PeftModules { qkv: Some("qkv_proj"), gate_up: Some("gate_up_proj"), ..PeftModules::LLAMA })
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        match model_type {
            "phi3" => Some(
                r#"{"vocab_size":32064,"hidden_size":3072,"intermediate_size":8192,"num_hidden_layers":32,
                "num_attention_heads":32,"resid_pdrop":0.0,"tie_word_embeddings":false,"partial_rotary_factor":1.0}"#,
            ),
            _ => None,
        }
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        d.spec.hidden_dropout = r.f64_or("resid_pdrop", 0.0)?;
        d.all_sliding();
        Ok(())
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        // modeling_phi3's rope ends in a cat even at partial_rotary_factor 1.0
        OpKinds { rope: Rope::Cat, ..STYLE.kinds() }
    }
}
