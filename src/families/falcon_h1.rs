//! TII's Falcon-H1: every block runs a Mamba2 mixer and GQA attention side by side on one
//! normed input (each through a scalar multiplier, so each projection keeps its own copy), sums
//! their scaled outputs, then a SwiGLU MLP. The mixer's gated RMSNorm is optional
//! (`mamba_rms_norm`, off by default: the scan output times `silu(z)`), its width is
//! `mamba_d_ssm`, and `in_proj`'s output is scaled by the μP vector (a buffer). The logits are
//! scaled by `lm_head_multiplier` (a second logits-sized tensor).

use super::prelude::*;

/// Falcon-H1.
pub(super) struct FalconH1;

impl FamilyDef for FalconH1 {
    fn id(&self) -> &'static str {
        "falcon_h1"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["falcon_h1"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "FalconH1DecoderLayer"
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "falcon_h1").then_some(
            r#"{"vocab_size":128000,"tie_word_embeddings":false,"hidden_size":4096,"intermediate_size":14336,
            "num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"hidden_act":"silu",
            "rms_norm_eps":1e-5,"max_position_embeddings":8192,"attention_dropout":0.0,"mamba_d_ssm":1024,
            "mamba_n_heads":128,"mamba_d_head":"auto","mamba_n_groups":1,"mamba_d_state":256,"mamba_d_conv":4,
            "mamba_expand":2,"mamba_chunk_size":256,"mamba_conv_bias":true,"mamba_proj_bias":false,
            "mamba_norm_before_gate":true,"mamba_rms_norm":false,"projectors_bias":false,
            "attention_bias":false,"mlp_bias":false}"#,
        )
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let h = d.spec.hidden_size;
        let mut s = super::ssm::read(r, h, &super::ssm::HYBRID)?;
        let inner = match r.opt_u64("mamba_d_ssm")? {
            Some(i) if i > 0 => i,
            _ => r.u64_or("mamba_expand", 2)? * h,
        };
        if r.get("mamba_d_head").is_none_or(|v| v.as_u64().is_none()) {
            s.head_dim = inner / s.heads;
        }
        if s.inner() != inner {
            let msg = format!("{} heads of {} must make mamba_d_ssm ({inner})", s.heads, s.head_dim);
            return Err(r.invalid("mamba_d_head", msg));
        }
        s.gated_norm = r.bool_or("mamba_rms_norm", false)?;
        if s.gated_norm && r.bool_or("mamba_norm_before_gate", true)? {
            d.spec.unmodelled = Some(
                "mamba_rms_norm with mamba_norm_before_gate: the norm before the gate is walked as the gate before the norm (the same tensors, not measured)".into(),
            );
        }
        d.spec.ssm = Some(s);
        d.spec.o_bias = r.bool_or("projectors_bias", false)?;
        d.spec.logits_scaled = true;
        Ok(())
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        p.ends(m, false);
        p.qkvo(m, m.qkv_bias, m.qkv_bias);
        if let Some(s) = &m.ssm {
            // in_proj's bias is `mamba_proj_bias`, out_proj's `projectors_bias`
            ssm_params_out_bias(p, s, h, l, m.o_bias);
        }
        mlp_params(p, h, m.intermediate_size, l, true, false, m.mlp_bias);
        p.norms(h, 2, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        let Some(s) = m.ssm else { return sequential_block(g, m, flags, x, &LLAMA) };
        let ctx = g.ctx;
        let (ts, h, c) = (ctx.rank_tokens, m.hidden_size, ctx.compute_elem);
        let n = g.norm(x, ts, h, LLAMA.norm, "input_layernorm");
        // `x * ssm_in_multiplier` and `x * attention_in_multiplier`: two copies, one per branch
        let rg = g.rg(n);
        let to_mamba = g.tensor(ts * h * c, c, rg, Cat::AttentionIo);
        let a = g.mamba2(to_mamba, h, &s);
        let to_attention = g.tensor(ts * h * c, c, rg, Cat::AttentionIo);
        let b = attention(g, m, flags, to_attention, &LLAMA);
        let mixed = g.add(a, b, ts * h, Cat::Residual);
        let x2 = g.add(mixed, x, ts * h, Cat::Residual);
        let f_in = g.norm(x2, ts, h, LLAMA.norm, "pre_ff_layernorm");
        let f = mlp(g, m, flags, f_in, &LLAMA);
        g.add(f, x2, ts * h, Cat::Residual)
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        LLAMA.kinds()
    }
}
