//! Qwen3 and Qwen3-MoE: Llama with an RMSNorm over each head of q and k (before rotary).

use super::prelude::*;

const STYLE: Style = Style { qk_norm: QkNorm::PerHead, ..LLAMA };

/// Qwen3-VL's language model: Qwen3's block with the multimodal rotary.
const QWEN3_VL: Style = Style { rope_per_sequence: true, ..STYLE };

/// Qwen3 and Qwen3-MoE.
pub(super) struct Qwen3;

impl FamilyDef for Qwen3 {
    fn id(&self) -> &'static str {
        "qwen3"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["qwen3", "qwen3_moe", "qwen3_vl_text"]
    }

    fn block_class(&self, m: &TransformerSpec, _: &str) -> &'static str {
        if m.moe.is_some() {
            "Qwen3MoeDecoderLayer"
        } else if m.vision.is_some() {
            "Qwen3VLTextDecoderLayer"
        } else {
            "Qwen3DecoderLayer"
        }
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        p.ends(m, false);
        p.qkvo(m, m.qkv_bias, m.o_bias);
        p.norms(m.head_dim, 2, l, false); // q_norm, k_norm
        let (dense, sparse) = dense_and_sparse_layers(m);
        moe_params(p, m, sparse, false);
        let di = dense_width(m);
        mlp_params(p, h, di, dense, true, false, false);
        p.norms(h, 2, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        let mrope = m.vision.is_some_and(|v| v.per_sequence_rope());
        sequential_block(g, m, flags, x, if mrope { &QWEN3_VL } else { &STYLE })
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        match model_type {
            "qwen3" => Some(
                r#"{"vocab_size":151936,"hidden_size":4096,"intermediate_size":22016,"num_hidden_layers":32,
                "num_attention_heads":32,"num_key_value_heads":32,"head_dim":128,"tie_word_embeddings":false,
                "attention_bias":false,"use_sliding_window":false,"max_window_layers":28}"#,
            ),
            "qwen3_vl_text" => Some(
                r#"{"vocab_size":151936,"hidden_size":4096,"intermediate_size":22016,"num_hidden_layers":32,
                "num_attention_heads":32,"num_key_value_heads":32,"head_dim":128,"tie_word_embeddings":false,
                "attention_bias":false,"max_position_embeddings":128000}"#,
            ),
            "qwen3_moe" => Some(
                r#"{"vocab_size":151936,"hidden_size":2048,"intermediate_size":6144,"num_hidden_layers":24,
                "num_attention_heads":32,"num_key_value_heads":4,"tie_word_embeddings":false,
                "attention_bias":false,"use_sliding_window":false,"max_window_layers":28,
                "decoder_sparse_step":1,"moe_intermediate_size":768,"num_experts_per_tok":8,
                "num_experts":128,"norm_topk_prob":false,"mlp_only_layers":[]}"#,
            ),
            _ => None,
        }
    }

    fn config(&self, r: &Reader<'_>, model_type: &str, d: &mut Draft) -> Result<(), ConfigError> {
        if model_type == "qwen3_moe" {
            qwen_moe(r, model_type, d)?;
        }
        qwen_sliding(r, d)
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        STYLE.kinds()
    }
}

/// Qwen2-MoE's and Qwen3-MoE's experts: routed experts of `moe_intermediate_size`, the dense
/// layers (`mlp_only_layers`, `decoder_sparse_step`) of `intermediate_size`, Qwen2-MoE's gated
/// shared expert; Qwen3-MoE renormalises the top-k weights when `norm_topk_prob`.
pub(super) fn qwen_moe(r: &Reader<'_>, model_type: &str, d: &mut Draft) -> Result<(), ConfigError> {
    let l = d.spec.num_layers;
    let experts = r.positive_any(&["num_experts", "num_local_experts"])?;
    let top_k = r.positive("num_experts_per_tok")?;
    check_top_k(r, top_k, experts)?;
    let moe_i = r.positive("moe_intermediate_size")?;
    d.spec.dense_intermediate_size = d.spec.intermediate_size;
    d.spec.intermediate_size = moe_i;
    let step = r.u64_or("decoder_sparse_step", 1)?.max(1);
    let only = r.u64_list("mlp_only_layers")?.unwrap_or_default();
    d.dense = (0..l).map(|j| only.contains(&j) || !(j + 1).is_multiple_of(step)).collect();
    d.spec.moe = Some(if model_type == "qwen2_moe" {
        let shared = r.u64_or("shared_expert_intermediate_size", 0)?;
        Moe {
            shared_experts: u64::from(shared > 0),
            shared_intermediate_size: shared,
            router: Router::SoftmaxSharedGate,
            ..Moe::routed(experts, top_k)
        }
    } else {
        let router =
            if r.bool_or("norm_topk_prob", false)? { Router::Softmax } else { Router::SoftmaxNoNorm };
        Moe { router, ..Moe::routed(experts, top_k) }
    });
    Ok(())
}
