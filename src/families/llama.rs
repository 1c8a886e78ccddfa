//! Llama and its kin that transformers runs with the same block (Mistral, Qwen2, Mixtral,
//! Qwen2-MoE): `x + attn(rms(x))`, `x + mlp(rms(x))`, rotary, gated SiLU MLP or experts.

use super::prelude::*;

/// Qwen2.5-VL's language model: Qwen2's block with the multimodal rotary.
const QWEN_VL: Style = Style { rope_per_sequence: true, ..LLAMA };

/// Llama, Mistral, Qwen2, Mixtral and Qwen2-MoE.
pub(super) struct Llama;

impl FamilyDef for Llama {
    fn id(&self) -> &'static str {
        "llama"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["llama", "mistral", "qwen2", "mixtral", "qwen2_moe", "qwen2_5_vl", "qwen2_5_vl_text"]
    }

    fn block_class(&self, m: &TransformerSpec, model_type: &str) -> &'static str {
        let n = model_type;
        if n.contains("mixtral") {
            "MixtralDecoderLayer"
        } else if n.contains("mistral") {
            "MistralDecoderLayer"
        } else if n.contains("qwen") && m.moe.is_some() {
            "Qwen2MoeDecoderLayer"
        } else if n.starts_with("qwen2_5_vl") {
            "Qwen2_5_VLDecoderLayer"
        } else if n == "granite" {
            "GraniteDecoderLayer"
        } else if n.contains("qwen") {
            "Qwen2DecoderLayer"
        } else {
            "LlamaDecoderLayer"
        }
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        params(p, m);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        let mrope = m.vision.is_some_and(|v| v.per_sequence_rope());
        sequential_block(g, m, flags, x, if mrope { &QWEN_VL } else { &LLAMA })
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        match model_type {
            "llama" => Some(
                r#"{"vocab_size":32000,"hidden_size":4096,"intermediate_size":11008,"num_hidden_layers":32,
                "num_attention_heads":32,"tie_word_embeddings":false,"attention_bias":false,"mlp_bias":false}"#,
            ),
            "mistral" => Some(
                r#"{"vocab_size":32000,"hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,
                "num_attention_heads":32,"num_key_value_heads":8,"tie_word_embeddings":false,"sliding_window":4096}"#,
            ),
            "mixtral" => Some(
                r#"{"vocab_size":32000,"hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,
                "num_attention_heads":32,"num_key_value_heads":8,"tie_word_embeddings":false,
                "num_local_experts":8,"num_experts_per_tok":2}"#,
            ),
            "qwen2" => Some(
                r#"{"vocab_size":151936,"hidden_size":4096,"intermediate_size":22016,"num_hidden_layers":32,
                "num_attention_heads":32,"tie_word_embeddings":false,"use_sliding_window":false,
                "sliding_window":4096,"max_window_layers":28}"#,
            ),
            // Qwen2_5_VLTextConfig's (a legacy file's top-level keys build it too)
            "qwen2_5_vl" | "qwen2_5_vl_text" => Some(
                r#"{"vocab_size":152064,"hidden_size":8192,"intermediate_size":29568,"num_hidden_layers":80,
                "num_attention_heads":64,"num_key_value_heads":8,"tie_word_embeddings":false,
                "use_sliding_window":false,"sliding_window":4096,"max_window_layers":80,
                "max_position_embeddings":32768}"#,
            ),
            "qwen2_moe" => Some(
                r#"{"vocab_size":151936,"hidden_size":2048,"intermediate_size":5632,"num_hidden_layers":24,
                "num_attention_heads":16,"num_key_value_heads":16,"tie_word_embeddings":false,
                "use_sliding_window":false,"max_window_layers":28,"decoder_sparse_step":1,
                "moe_intermediate_size":1408,"shared_expert_intermediate_size":5632,"num_experts_per_tok":4,
                "num_experts":60,"norm_topk_prob":false,"mlp_only_layers":[],"qkv_bias":true}"#,
            ),
            _ => None,
        }
    }

    fn config(&self, r: &Reader<'_>, model_type: &str, d: &mut Draft) -> Result<(), ConfigError> {
        match model_type {
            "qwen2" | "qwen2_5_vl" | "qwen2_5_vl_text" => {
                (d.spec.qkv_bias, d.spec.o_bias) = (true, false);
                qwen_sliding(r, d)?;
            }
            "qwen2_moe" => {
                d.spec.qkv_bias = r.bool_or("qkv_bias", true)?;
                d.spec.o_bias = false;
                super::qwen3::qwen_moe(r, model_type, d)?;
                qwen_sliding(r, d)?;
            }
            "mixtral" => {
                let experts = r.positive("num_local_experts")?;
                let top_k = r.positive("num_experts_per_tok")?;
                check_top_k(r, top_k, experts)?;
                d.spec.moe = Some(Moe::routed(experts, top_k));
                d.all_sliding();
            }
            "mistral" => d.all_sliding(),
            _ => {}
        }
        Ok(())
    }

    fn ops(&self, m: &TransformerSpec) -> OpKinds {
        // Mixtral's top-k weights stay fp32 (`softmax(logits.float())`, no cast back);
        // Qwen2-MoE's are cast to the logits' dtype
        OpKinds { routing_fp32: m.moe.is_some_and(|x| x.router == Router::Softmax), ..LLAMA.kinds() }
    }

    fn litgpt(&self) -> Option<Litgpt> {
        Some(Litgpt::Llama)
    }
}

/// A Llama-like model's tensors: embedding, final norm and head, q/k/v/o, the experts of the
/// sparse layers and the dense MLPs of the others, two norms a block.
pub(super) fn params(p: &mut Params, m: &TransformerSpec) {
    let (h, l) = (m.hidden_size, m.num_layers);
    p.ends(m, false);
    p.qkvo(m, m.qkv_bias, m.o_bias);
    let (dense, sparse) = dense_and_sparse_layers(m);
    // routed experts are fused 3-D tensors in transformers 5 (Mixtral included)
    moe_params(p, m, sparse, false);
    let di = dense_width(m);
    mlp_params(p, h, di, dense, true, false, m.mlp_bias);
    p.norms(h, 2, l, false);
}
