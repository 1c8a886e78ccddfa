//! Mamba2 (`Mamba2ForCausalLM`): every block is an RMSNorm and a Mamba2 mixer on a residual
//! stream kept in fp32 (`residual_in_fp32`), no attention and no MLP; `backbone.norm_f` and an
//! untied head whose input is cast to the head's dtype.

use super::prelude::*;

/// Mamba2.
pub(super) struct Mamba2;

impl FamilyDef for Mamba2 {
    fn id(&self) -> &'static str {
        "mamba2"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["mamba2"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "Mamba2Block"
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "mamba2").then_some(
            r#"{"num_heads":128,"head_dim":64,"vocab_size":32768,"hidden_size":4096,"state_size":128,
            "num_hidden_layers":64,"layer_norm_epsilon":1e-5,"expand":2,"conv_kernel":4,"n_groups":8,
            "use_bias":false,"use_conv_bias":true,"hidden_act":"silu","residual_in_fp32":true,
            "chunk_size":256,"tie_word_embeddings":false}"#,
        )
    }

    fn config_intermediate(&self, _: &Reader<'_>, _: u64) -> Result<u64, ConfigError> {
        // no MLP
        Ok(0)
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let mut s = super::ssm::read(r, d.spec.hidden_size, &super::ssm::MAMBA2)?;
        s.residual_fp32 = r.bool_or("residual_in_fp32", true)?;
        d.spec.ssm = Some(s);
        d.more = vec![layer::SSM | layer::NO_MLP; d.spec.num_layers as usize];
        Ok(())
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        p.ends(m, false);
        if let Some(s) = &m.ssm {
            ssm_params(p, s, h, l);
        }
        p.norms(h, 1, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, _: u8, x: Tensor) -> Tensor {
        let Some(s) = m.ssm else { return x };
        lone_mixer_block(g, m, s.residual_fp32, x, |g, n| g.mamba2(n, m.hidden_size, &s))
    }

    fn head(&self, g: &mut Graph<'_>, m: &TransformerSpec, x: Tensor) -> u64 {
        fp32_residual_head(g, m, x)
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        LLAMA.kinds()
    }

    fn peft_modules(&self) -> Option<&'static PeftModules> {
        None
    }
}

/// `norm(x.to(dtype))`, the mixer, and the residual sum, in fp32 when `residual_in_fp32`
/// (Mamba's and Mamba2's blocks).
pub(super) fn lone_mixer_block(
    g: &mut Graph<'_>,
    m: &TransformerSpec,
    residual_fp32: bool,
    x: Tensor,
    mixer: impl FnOnce(&mut Graph<'_>, Tensor) -> Tensor,
) -> Tensor {
    let ctx = g.ctx;
    let (ts, h, c) = (ctx.rank_tokens, m.hidden_size, ctx.compute_elem);
    // an fp32 stream is cast to the norm's dtype first (a copy nothing keeps)
    let xin = if g.elem(x) != c { g.tensor(ts * h * c, c, g.rg(x), Cat::Residual) } else { x };
    let n = g.norm(xin, ts, h, LLAMA.norm, "norm");
    let a = mixer(g, n);
    if residual_fp32 {
        g.tensor(ts * h * 4, 4, true, Cat::Residual)
    } else {
        g.add(a, x, ts * h, Cat::Residual)
    }
}

/// The final norm on the fp32 residual stream (it keeps that stream and its fp32 normalised
/// value), then the head on its cast to the head's dtype.
pub(super) fn fp32_residual_head(g: &mut Graph<'_>, m: &TransformerSpec, x: Tensor) -> u64 {
    let ctx = g.ctx;
    let (ts, h, c) = (ctx.rank_tokens, m.hidden_size, ctx.compute_elem);
    let fp32 = m.residual_fp32();
    let x = if fp32 && g.elem(x) != 4 { g.tensor(ts * h * 4, 4, g.rg(x), Cat::Residual) } else { x };
    let n = g.norm(x, ts, h, super::ops(m).final_norm, "norm_f");
    let n = if g.elem(n) != c { g.tensor(ts * h * c, c, g.rg(n), Cat::Residual) } else { n };
    g.head_loss(n, ts, h, classes(m), false, m.head == Head::CausalLm)
}
