//! IBM Granite-4.0-H (`granitemoehybrid`): Granite's blocks (scalar multipliers that keep
//! nothing, logits divided by `logits_scaling`) whose mixer is a Mamba2 mixer on the
//! `linear_attention` (`mamba`) layers and GQA attention elsewhere, without rotary unless
//! `position_embedding_type` is `rope`; the MLP is routed experts beside a shared fused-gate MLP
//! (`shared_mlp`), or that shared MLP alone when `num_local_experts` is 0.

use super::prelude::*;

/// Granite-4.0-H.
pub(super) struct GraniteMoeHybrid;

impl FamilyDef for GraniteMoeHybrid {
    fn id(&self) -> &'static str {
        "granitemoehybrid"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["granitemoehybrid"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "GraniteMoeHybridDecoderLayer"
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "granitemoehybrid").then_some(
            r#"{"vocab_size":32000,"hidden_size":4096,"intermediate_size":11008,"num_hidden_layers":32,
            "num_attention_heads":32,"max_position_embeddings":2048,"tie_word_embeddings":false,
            "attention_bias":false,"num_local_experts":8,"num_experts_per_tok":2,
            "shared_intermediate_size":1024,"mamba_n_heads":128,"mamba_n_groups":1,"mamba_d_state":256,
            "mamba_d_head":"auto","mamba_d_conv":4,"mamba_expand":2,"mamba_chunk_size":256,
            "mamba_conv_bias":true,"mamba_proj_bias":false}"#,
        )
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let l = d.spec.num_layers;
        d.spec.logits_scaled = true;
        d.spec.ssm = Some(super::ssm::read(r, d.spec.hidden_size, &super::ssm::HYBRID)?);
        let mamba = super::ssm::mamba_layers(r, l)?;
        d.more = mamba.iter().map(|&m| if m { layer::SSM } else { 0 }).collect();
        // attention without positions unless the config asks for rotary
        if r.str("position_embedding_type") != Some("rope") {
            d.no_rope = vec![true; l as usize];
        }
        read_moe(r, d)?;
        let shared = r.u64_or("shared_intermediate_size", 0)?;
        match d.spec.moe.as_mut() {
            Some(moe) => {
                moe.router = Router::TopkSoftmax;
                (moe.shared_experts, moe.shared_intermediate_size) = (u64::from(shared > 0), shared);
            }
            // no experts: the shared MLP is the block's MLP
            None => d.spec.intermediate_size = shared,
        }
        Ok(())
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        let mamba = m.layers_with(layer::SSM, l);
        let attn = l - mamba;
        p.ends(m, false);
        p.qkvo_on(m, attn, m.qkv_bias, m.o_bias);
        if let Some(s) = &m.ssm {
            ssm_params(p, s, h, mamba);
        }
        match m.moe {
            Some(_) => moe_params(p, m, l, false),
            None => mlp_params(p, h, m.intermediate_size, l, true, true, false),
        }
        p.norms(h, 2, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        let (Some(s), true) = (m.ssm, flags & layer::SSM != 0) else {
            return sequential_block(g, m, flags, x, &STYLE);
        };
        mixer_block(g, m, flags, x, &STYLE, ("input_layernorm", "post_attention_layernorm"), |g, n| {
            g.mamba2(n, m.hidden_size, &s)
        })
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        STYLE.kinds()
    }
}

/// The shared MLP is one fused gate-and-up Linear (`input_linear`).
const STYLE: Style = Style { fused_gate_up: true, ..LLAMA };
