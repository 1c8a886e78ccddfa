//! Mamba (`MambaForCausalLM`): every block an RMSNorm and a Mamba (selective scan) mixer on a
//! residual stream kept in fp32 (`residual_in_fp32`), no attention and no MLP; tied embeddings
//! by default. Also the Mamba mixer's keys and tensors, which Jamba shares.

use super::prelude::*;

/// Mamba.
pub(super) struct MambaFamily;

impl FamilyDef for MambaFamily {
    fn id(&self) -> &'static str {
        "mamba"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["mamba"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "MambaBlock"
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "mamba").then_some(
            r#"{"vocab_size":50280,"hidden_size":768,"state_size":16,"num_hidden_layers":32,
            "layer_norm_epsilon":1e-5,"expand":2,"conv_kernel":4,"use_bias":false,"use_conv_bias":true,
            "hidden_act":"silu","residual_in_fp32":true,"time_step_rank":"auto","tie_word_embeddings":true}"#,
        )
    }

    fn config_heads(&self, _: &Reader<'_>) -> Result<u64, ConfigError> {
        // no attention
        Ok(1)
    }

    fn config_intermediate(&self, _: &Reader<'_>, _: u64) -> Result<u64, ConfigError> {
        // no MLP (`intermediate_size` is the mixer's width)
        Ok(0)
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let h = d.spec.hidden_size;
        let inner = match r.opt_u64("intermediate_size")? {
            Some(i) if i > 0 => i,
            _ => r.u64_or("expand", 2)? * h,
        };
        let mut m = read(r, h, inner, &KEYS)?;
        m.residual_fp32 = r.bool_or("residual_in_fp32", true)?;
        d.spec.mamba = Some(m);
        d.more = vec![layer::MAMBA | layer::NO_MLP; d.spec.num_layers as usize];
        Ok(())
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        p.ends(m, false);
        if let Some(x) = &m.mamba {
            params(p, x, h, l);
        }
        p.norms(h, 1, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, _: u8, x: Tensor) -> Tensor {
        let Some(s) = m.mamba else { return x };
        super::mamba2::lone_mixer_block(g, m, s.residual_fp32, x, |g, n| g.mamba1(n, m.hidden_size, &s))
    }

    fn head(&self, g: &mut Graph<'_>, m: &TransformerSpec, x: Tensor) -> u64 {
        super::mamba2::fp32_residual_head(g, m, x)
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        LLAMA.kinds()
    }

    fn peft_modules(&self) -> Option<&'static PeftModules> {
        None
    }
}

/// The spellings of one config class.
pub(super) struct Keys {
    pub state: &'static str,
    pub conv: &'static str,
    pub rank: &'static str,
    pub conv_bias: &'static str,
    pub proj_bias: &'static str,
}

/// `MambaConfig`'s.
const KEYS: Keys = Keys {
    state: "state_size",
    conv: "conv_kernel",
    rank: "time_step_rank",
    conv_bias: "use_conv_bias",
    proj_bias: "use_bias",
};

/// The mixer of hidden size `h` and width `inner` (dt's rank "auto": ceil(h / 16)).
pub(super) fn read(r: &Reader<'_>, h: u64, inner: u64, k: &Keys) -> Result<Mamba, ConfigError> {
    let rank = match r.get(k.rank) {
        Some(v) if v.as_str() == Some("auto") => h.div_ceil(16),
        Some(v) => v.as_u64().filter(|x| *x > 0).ok_or_else(|| {
            r.invalid(k.rank, format!("expected a positive integer or \"auto\", found {v}"))
        })?,
        None => h.div_ceil(16),
    };
    Ok(Mamba {
        inner,
        state: r.positive(k.state)?,
        dt_rank: rank,
        conv_kernel: r.positive(k.conv)?,
        conv_bias: r.bool_or(k.conv_bias, true)?,
        proj_bias: r.bool_or(k.proj_bias, false)?,
        dt_norms: false,
        residual_fp32: false,
    })
}

/// One Mamba mixer's tensors on `layers` layers: `in_proj`, the convolution, `x_proj`,
/// `dt_proj` (with its bias), `A_log`, `D`, Jamba's three norms, `out_proj`.
pub(super) fn params(p: &mut Params, m: &Mamba, h: u64, layers: u64) {
    use LinearRole as R;
    let (i, n, r) = (m.inner, m.state, m.dt_rank);
    p.linear(2 * i, h, layers, R::Q, m.proj_bias);
    p.push(i, m.conv_kernel, layers, ParamKind::Vector, Scope::Block, true);
    if m.conv_bias {
        p.push(i, 1, layers, ParamKind::Vector, Scope::Block, true);
    }
    p.linear(r + 2 * n, i, layers, R::K, false);
    p.linear(i, r, layers, R::V, true);
    p.push(i, n, layers, ParamKind::Vector, Scope::Block, true);
    p.push(i, 1, layers, ParamKind::Vector, Scope::Block, true);
    if m.dt_norms {
        p.push(r + 2 * n, 1, layers, ParamKind::Vector, Scope::Block, false);
    }
    p.linear(h, i, layers, R::O, m.proj_bias);
}
