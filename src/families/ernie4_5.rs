//! ERNIE-4.5 (dense) and ERNIE-4.5-MoE: Llama's pre-norm block with biases on every projection
//! (`use_bias`) and GLM's interleaved rotary computed in fp32 (the cos/sin rebuilt in each
//! attention call, q and k cast back). The MoE layers (every `moe_layer_interval`-th, from
//! `moe_layer_start_index` to `moe_layer_end_index`) run the shared experts, then an fp32
//! softmax router (weight kept in fp32, a frozen fp32 `e_score_correction_bias`) whose top-k
//! weights are renormalised and cast back to the stream's dtype.

use super::prelude::*;

const STYLE: Style = Style { rope_rebuilt: true, rope_fp32: true, ..LLAMA };

/// ERNIE-4.5 and ERNIE-4.5-MoE.
pub(super) struct Ernie45;

impl FamilyDef for Ernie45 {
    fn id(&self) -> &'static str {
        "ernie4_5"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["ernie4_5", "ernie4_5_moe"]
    }

    fn block_class(&self, m: &TransformerSpec, _: &str) -> &'static str {
        if m.moe.is_some() { "Ernie4_5_MoeDecoderLayer" } else { "Ernie4_5DecoderLayer" }
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        p.ends(m, false);
        p.qkvo(m, m.qkv_bias, m.o_bias);
        let (dense, sparse) = dense_and_sparse_layers(m);
        moe_params_fp32_router(p, m, sparse);
        if let Some(moe) = m.moe {
            // `moe_statics.e_score_correction_bias`: (1, experts), fp32, never trained
            p.push(moe.experts, 1, sparse, ParamKind::FrozenFp32, Scope::Block, false);
        }
        mlp_params(p, h, dense_width(m), dense, true, false, m.mlp_bias);
        p.norms(h, 2, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &STYLE)
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        match model_type {
            "ernie4_5" => Some(
                r#"{"vocab_size":103424,"hidden_size":1024,"intermediate_size":3072,"num_hidden_layers":18,
                "num_attention_heads":16,"num_key_value_heads":2,"head_dim":128,"tie_word_embeddings":true,
                "use_bias":false,"max_position_embeddings":131072,"rope_theta":500000.0}"#,
            ),
            "ernie4_5_moe" => Some(
                r#"{"vocab_size":103424,"hidden_size":2560,"intermediate_size":12288,"num_hidden_layers":28,
                "num_attention_heads":20,"num_key_value_heads":4,"tie_word_embeddings":true,"use_bias":false,
                "max_position_embeddings":131072,"moe_intermediate_size":1536,"moe_k":6,"moe_num_experts":64,
                "moe_num_shared_experts":2,"moe_layer_start_index":1,"moe_layer_end_index":27,
                "moe_layer_interval":1,"rope_theta":500000.0}"#,
            ),
            _ => None,
        }
    }

    fn config(&self, r: &Reader<'_>, model_type: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let bias = r.bool_or("use_bias", false)?;
        (d.spec.qkv_bias, d.spec.o_bias, d.spec.mlp_bias) = (bias, bias, bias);
        if model_type == "ernie4_5_moe" {
            read_moe(r, d)?;
            if let Some(moe) = d.spec.moe.as_mut() {
                moe.router = Router::SoftmaxClampedNorm;
            }
        }
        Ok(())
    }

    fn ops(&self, m: &TransformerSpec) -> OpKinds {
        // `(q.float() * cos + …).to(dtype)` keeps q's token-major strides (unlike a `cat`), so the
        // attention output o_proj reads needs no contiguous copy
        OpKinds { router_fp32: m.moe.is_some(), ..STYLE.kinds() }
    }
}
