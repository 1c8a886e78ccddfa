//! GLM-4 and GLM-4.5 (MoE). GLM-4: a sandwich block (`post_self_attn_layernorm`,
//! `post_mlp_layernorm` after each sublayer), q/k/v with biases, a fused `gate_up_proj`, and an
//! interleaved partial rotary whose cos/sin are rebuilt in every attention call. GLM-4.5: a
//! Llama-like pre-norm block with optional per-head q/k norms, partial rotary ending in a
//! `cat`, dense MLPs in the first `first_k_dense_replace` layers, then routed experts behind an
//! fp32 sigmoid router (DeepSeek-V3's) whose weights stay fp32, plus shared experts.

use super::prelude::*;

const GLM4: Style =
    Style { placement: Placement::Sandwich, fused_gate_up: true, rope_rebuilt: true, ..LLAMA };
const GLM4_MOE: Style = LLAMA;
const GLM4_MOE_QK: Style = Style { qk_norm: QkNorm::PerHead, ..LLAMA };

/// GLM-4 and GLM-4.5.
pub(super) struct Glm4;

impl FamilyDef for Glm4 {
    fn id(&self) -> &'static str {
        "glm4"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["glm4", "glm4_moe"]
    }

    fn block_class(&self, m: &TransformerSpec, _: &str) -> &'static str {
        if m.moe.is_some() { "Glm4MoeDecoderLayer" } else { "Glm4DecoderLayer" }
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        p.ends(m, false);
        p.qkvo(m, m.qkv_bias, false);
        if m.moe.is_none() {
            mlp_params(p, h, m.intermediate_size, l, true, true, false);
            p.norms(h, 4, l, false);
            return;
        }
        if m.qk_layernorm {
            p.norms(m.head_dim, 2, l, false);
        }
        let (dense, sparse) = dense_and_sparse_layers(m);
        moe_params_fp32_router(p, m, sparse);
        mlp_params(p, h, dense_width(m), dense, true, false, false);
        p.norms(h, 2, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, style(m))
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        match model_type {
            "glm4" => Some(
                r#"{"vocab_size":151552,"hidden_size":4096,"intermediate_size":13696,"num_hidden_layers":40,
                "num_attention_heads":32,"num_key_value_heads":2,"head_dim":128,"tie_word_embeddings":false,
                "attention_bias":true,"max_position_embeddings":131072,
                "rope_parameters":{"rope_theta":10000.0,"rope_type":"default","partial_rotary_factor":0.5}}"#,
            ),
            "glm4_moe" => Some(
                r#"{"vocab_size":151552,"hidden_size":4096,"intermediate_size":10944,"num_hidden_layers":46,
                "num_attention_heads":96,"num_key_value_heads":8,"tie_word_embeddings":false,
                "attention_bias":false,"max_position_embeddings":131072,"moe_intermediate_size":1408,
                "num_experts_per_tok":8,"n_shared_experts":1,"n_routed_experts":128,"norm_topk_prob":true,
                "first_k_dense_replace":1,"use_qk_norm":false,"n_group":1,"topk_group":1,
                "rope_parameters":{"rope_theta":10000.0,"rope_type":"default","partial_rotary_factor":0.5}}"#,
            ),
            _ => None,
        }
    }

    fn config(&self, r: &Reader<'_>, model_type: &str, d: &mut Draft) -> Result<(), ConfigError> {
        d.spec.o_bias = false;
        if model_type == "glm4_moe" {
            d.spec.qk_layernorm = r.bool_or("use_qk_norm", false)?;
            read_moe(r, d)?;
            if let Some(moe) = d.spec.moe.as_mut() {
                moe.router = Router::SigmoidGroup;
                moe.groups = r.u64_or("n_group", 1)?.max(1);
                moe.topk_group = r.u64_or("topk_group", 1)?.max(1);
            }
        }
        Ok(())
    }

    fn ops(&self, m: &TransformerSpec) -> OpKinds {
        let moe = m.moe.is_some();
        OpKinds { rope: Rope::Cat, router_fp32: moe, routing_fp32: moe, ..style(m).kinds() }
    }
}

fn style(m: &TransformerSpec) -> &'static Style {
    match (m.moe.is_some(), m.qk_layernorm) {
        (false, _) => &GLM4,
        (true, false) => &GLM4_MOE,
        (true, true) => &GLM4_MOE_QK,
    }
}
