//! IBM's Bamba: Llama-like blocks (input norm, mixer, residual, pre-FFN norm, SwiGLU MLP) whose
//! mixer is a Mamba2 mixer except on `attn_layer_indices`, where it is GQA attention with rotary.

use super::prelude::*;

/// Bamba.
pub(super) struct Bamba;

impl FamilyDef for Bamba {
    fn id(&self) -> &'static str {
        "bamba"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["bamba"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "BambaDecoderLayer"
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "bamba").then_some(
            r#"{"vocab_size":128000,"tie_word_embeddings":false,"hidden_size":4096,"intermediate_size":14336,
            "num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"hidden_act":"silu",
            "rms_norm_eps":1e-5,"max_position_embeddings":262144,"attention_dropout":0.0,
            "mamba_n_heads":128,"mamba_d_head":"auto","mamba_n_groups":1,"mamba_d_state":256,
            "mamba_d_conv":4,"mamba_expand":2,"mamba_chunk_size":256,"mamba_conv_bias":true,
            "mamba_proj_bias":false,"attention_bias":false,"mlp_bias":false}"#,
        )
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let l = d.spec.num_layers;
        d.spec.ssm = Some(super::ssm::read(r, d.spec.hidden_size, &super::ssm::HYBRID)?);
        d.more = super::ssm::mamba_layers(r, l)?.iter().map(|&m| if m { layer::SSM } else { 0 }).collect();
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
        mlp_params(p, h, m.intermediate_size, l, true, false, m.mlp_bias);
        p.norms(h, 2, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        let (Some(s), true) = (m.ssm, flags & layer::SSM != 0) else {
            return sequential_block(g, m, flags, x, &LLAMA);
        };
        mixer_block(g, m, flags, x, &LLAMA, ("input_layernorm", "pre_ff_layernorm"), |g, n| {
            g.mamba2(n, m.hidden_size, &s)
        })
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        LLAMA.kinds()
    }
}
