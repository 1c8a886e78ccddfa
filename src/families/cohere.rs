//! Cohere's Command R (`cohere`) and Command R7B / Command A (`cohere2`): attention and a
//! SwiGLU MLP in parallel on one LayerNorm written out in fp32 without a bias, rotary
//! (interleaved, in fp32, cast back), the logits multiplied by `logit_scale` (a second
//! logits-sized tensor, as Granite's division). Command R+ normalises q and k per head with
//! the same LayerNorm, a weight row per head (`use_qk_norm`); Cohere 2 has sliding-window
//! layers with rotary and, every `sliding_window_pattern`-th layer, global ones without.

use super::gpt_neox::parallel_block;
use super::prelude::*;

fn style(m: &TransformerSpec) -> Style {
    let qk_norm = if m.qk_layernorm { QkNorm::PerHeadOwnWeights } else { QkNorm::None };
    Style { norm: NormKind::LayerManualFp32, qk_norm, ..LLAMA }
}

/// Cohere and Cohere 2.
pub(super) struct Cohere;

impl FamilyDef for Cohere {
    fn id(&self) -> &'static str {
        "cohere"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["cohere", "cohere2"]
    }

    fn block_class(&self, _: &TransformerSpec, model_type: &str) -> &'static str {
        if model_type == "cohere2" { "Cohere2DecoderLayer" } else { "CohereDecoderLayer" }
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        p.ends(m, false);
        p.qkvo(m, m.qkv_bias, m.o_bias);
        if m.qk_layernorm {
            p.norms(m.q_width(), 1, l, false);
            p.norms(m.kv_width(), 1, l, false);
        }
        mlp_params(p, h, m.intermediate_size, l, true, false, false);
        p.norms(h, 1, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        parallel_block(g, m, flags, x, &style(m), attention)
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        match model_type {
            "cohere" => Some(
                r#"{"vocab_size":256000,"hidden_size":8192,"intermediate_size":22528,"logit_scale":0.0625,
                "num_hidden_layers":40,"num_attention_heads":64,"max_position_embeddings":8192,
                "layer_norm_eps":1e-5,"tie_word_embeddings":true,"attention_bias":false,"attention_dropout":0.0,
                "use_qk_norm":false,"rope_theta":10000.0}"#,
            ),
            "cohere2" => Some(
                r#"{"vocab_size":256000,"hidden_size":8192,"intermediate_size":22528,"logit_scale":0.0625,
                "num_hidden_layers":40,"num_attention_heads":64,"max_position_embeddings":8192,
                "layer_norm_eps":1e-5,"tie_word_embeddings":true,"attention_bias":false,"attention_dropout":0.0,
                "sliding_window":4096,"sliding_window_pattern":4,"rope_theta":10000.0}"#,
            ),
            _ => None,
        }
    }

    fn config(&self, r: &Reader<'_>, model_type: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let l = d.spec.num_layers;
        // transformers sets head_dim to hidden / heads whatever the file says
        d.spec.head_dim = d.spec.hidden_size / d.spec.num_heads.max(1);
        let bias = r.bool_or("attention_bias", false)?;
        (d.spec.qkv_bias, d.spec.o_bias) = (bias, bias);
        d.spec.parallel_norms = 1;
        d.spec.logits_scaled = r.f64_or("logit_scale", 0.0625)? != 1.0;
        if model_type == "cohere" {
            d.spec.qk_layernorm = r.bool_or("use_qk_norm", false)?;
            return Ok(());
        }
        d.sliding = sliding_or_every(r, l, 4)?;
        // rotary on the sliding layers only
        d.no_rope = d.sliding.iter().map(|s| !s).collect();
        Ok(())
    }

    fn ops(&self, m: &TransformerSpec) -> OpKinds {
        style(m).kinds()
    }
}
