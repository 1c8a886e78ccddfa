//! Granite: Llama with scalar multipliers (embedding, residual, attention, logits), which scale by
//! Python floats and keep nothing (the logits' division makes a second logits-sized tensor). Granite-MoE (and -MoE-Shared): the same block with routed
//! experts of `intermediate_size`, routed by a softmax over the top k logits taken in fp32
//! (`F.linear(x, w).float().topk(k)`), and an optional shared expert
//! (`shared_intermediate_size`).

use super::prelude::*;

/// IBM Granite (dense and MoE).
pub(super) struct Granite;

impl FamilyDef for Granite {
    fn id(&self) -> &'static str {
        "granite"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["granite", "granitemoe", "granitemoeshared"]
    }

    fn block_class(&self, m: &TransformerSpec, model_type: &str) -> &'static str {
        match (m.moe.is_some(), model_type) {
            (true, "granitemoeshared") => "GraniteMoeSharedDecoderLayer",
            (true, _) => "GraniteMoeDecoderLayer",
            _ => "GraniteDecoderLayer",
        }
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        super::llama::params(p, m);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &LLAMA)
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        match model_type {
            // transformers' GraniteConfig keeps LlamaConfig's defaults for the keys read
            "granite" => super::llama::Llama.class_defaults("llama"),
            "granitemoe" | "granitemoeshared" => Some(
                r#"{"vocab_size":32000,"hidden_size":4096,"intermediate_size":11008,"num_hidden_layers":32,
                "num_attention_heads":32,"tie_word_embeddings":false,"attention_bias":false,
                "num_local_experts":8,"num_experts_per_tok":2,"shared_intermediate_size":0,
                "max_position_embeddings":2048,"rope_theta":10000.0}"#,
            ),
            _ => None,
        }
    }

    fn config(&self, r: &Reader<'_>, model_type: &str, d: &mut Draft) -> Result<(), ConfigError> {
        d.spec.logits_scaled = true;
        if model_type == "granite" {
            return Ok(());
        }
        read_moe(r, d)?;
        let shared = r.u64_or("shared_intermediate_size", 0)?;
        if let Some(moe) = d.spec.moe.as_mut() {
            moe.router = Router::TopkSoftmax;
            (moe.shared_experts, moe.shared_intermediate_size) = (u64::from(shared > 0), shared);
        }
        Ok(())
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        LLAMA.kinds()
    }
}
