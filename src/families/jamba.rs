//! AI21's Jamba: Llama-like blocks (input norm, mixer, pre-FFN norm, MLP) whose mixer is a Mamba
//! mixer with RMSNorms on dt, B and C, except every `attn_layer_period`-th layer (from
//! `attn_layer_offset`), where it is GQA attention without positions; every
//! `expert_layer_period`-th MLP (from `expert_layer_offset`) is a mixture of SwiGLU experts
//! (softmax in fp32, top k, not renormalised).

use super::prelude::*;

/// Jamba.
pub(super) struct Jamba;

impl FamilyDef for Jamba {
    fn id(&self) -> &'static str {
        "jamba"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["jamba"]
    }

    fn block_class(&self, m: &TransformerSpec, _: &str) -> &'static str {
        // FSDP wraps both decoder-layer classes; the Mamba one is the most common
        if m.attention_layers_among(m.num_layers) == m.num_layers {
            "JambaAttentionDecoderLayer"
        } else {
            "JambaMambaDecoderLayer"
        }
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "jamba").then_some(
            r#"{"vocab_size":65536,"tie_word_embeddings":false,"hidden_size":4096,"intermediate_size":14336,
            "num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"hidden_act":"silu",
            "rms_norm_eps":1e-6,"max_position_embeddings":262144,"attention_dropout":0.0,
            "num_experts_per_tok":2,"num_experts":16,"expert_layer_period":2,"expert_layer_offset":1,
            "attn_layer_period":8,"attn_layer_offset":4,"mamba_d_state":16,"mamba_d_conv":4,
            "mamba_expand":2,"mamba_dt_rank":"auto","mamba_conv_bias":true,"mamba_proj_bias":false}"#,
        )
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let (h, l) = (d.spec.hidden_size, d.spec.num_layers);
        let keys = super::mamba::Keys {
            state: "mamba_d_state",
            conv: "mamba_d_conv",
            rank: "mamba_dt_rank",
            conv_bias: "mamba_conv_bias",
            proj_bias: "mamba_proj_bias",
        };
        let mut m = super::mamba::read(r, h, r.u64_or("mamba_expand", 2)? * h, &keys)?;
        m.dt_norms = true;
        d.spec.mamba = Some(m);
        let (period, offset) = (r.u64_or("attn_layer_period", 8)?.max(1), r.u64_or("attn_layer_offset", 4)?);
        // attention without positions on its layers, the Mamba mixer elsewhere
        d.more = (0..l).map(|i| if i % period == offset { layer::NO_ROPE } else { layer::MAMBA }).collect();
        read_moe(r, d)?;
        if let Some(moe) = d.spec.moe.as_mut() {
            moe.router = Router::SoftmaxNoNorm;
        }
        Ok(())
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        let mamba = m.layers_with(layer::MAMBA, l);
        p.ends(m, false);
        p.qkvo_on(m, l - mamba, false, false);
        if let Some(x) = &m.mamba {
            super::mamba::params(p, x, h, mamba);
        }
        let (dense, sparse) = dense_and_sparse_layers(m);
        mlp_params(p, h, dense_width(m), dense, true, false, false);
        moe_params(p, m, sparse, false);
        p.norms(h, 2, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        let (Some(s), true) = (m.mamba, flags & layer::MAMBA != 0) else {
            return sequential_block(g, m, flags, x, &LLAMA);
        };
        mixer_block(g, m, flags, x, &LLAMA, ("input_layernorm", "pre_ff_layernorm"), |g, n| {
            g.mamba1(n, m.hidden_size, &s)
        })
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        LLAMA.kinds()
    }
}
