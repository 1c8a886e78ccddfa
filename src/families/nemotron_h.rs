//! NVIDIA's Nemotron-H (and Nemotron Nano 2/3): every block is one norm, one mixer and a residual
//! sum, the mixer picked per layer by `layers_block_type` (or the older `hybrid_override_pattern`,
//! one letter a layer): a Mamba2 mixer (`M`), GQA attention without positions (`*`), a ReLU² MLP
//! (`-`) or a mixture of ReLU² experts (`E`, a sigmoid router over groups with a correction bias,
//! fp32, and a ReLU² shared expert). Norms multiply their weight in fp32.

use super::prelude::*;

const STYLE: Style = Style { norm: NormKind::RmsWeightCastFp32, gated: false, act: Act::Relu2, ..LLAMA };

/// Nemotron-H.
pub(super) struct NemotronH;

impl FamilyDef for NemotronH {
    fn id(&self) -> &'static str {
        "nemotron_h"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["nemotron_h"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "NemotronHBlock"
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "nemotron_h").then_some(
            r#"{"vocab_size":131072,"hidden_size":4096,
            "tie_word_embeddings":false,
            "num_attention_heads":32,"num_key_value_heads":8,"head_dim":128,"max_position_embeddings":4096,
            "attention_bias":false,"intermediate_size":21504,"mlp_hidden_act":"relu2","mlp_bias":false,
            "ssm_state_size":128,"mamba_num_heads":128,"mamba_head_dim":64,"n_groups":8,"conv_kernel":4,
            "expand":2,"use_conv_bias":true,"chunk_size":128,"mamba_proj_bias":false,"n_routed_experts":8,
            "n_shared_experts":1,"moe_intermediate_size":7688,"moe_shared_expert_intermediate_size":7688,
            "num_experts_per_tok":2,"n_group":1,"topk_group":1,"norm_topk_prob":true,
            "residual_in_fp32":false,"use_bias":false}"#,
        )
    }

    fn config_layers(&self, r: &Reader<'_>) -> Result<u64, ConfigError> {
        // `num_hidden_layers` is the length of the block list (the key itself is ignored)
        Ok(block_kinds(r)?.len() as u64)
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let kinds = block_kinds(r)?;
        let keys = super::ssm::Keys { conv_bias: "use_conv_bias", ..super::ssm::HYBRID };
        let mut s = super::ssm::read(r, d.spec.hidden_size, &keys)?;
        s.proj_bias = r.bool_or("use_bias", false)? || r.bool_or("mamba_proj_bias", false)?;
        // `residual_in_fp32` is in the config class but the block never reads it
        d.spec.ssm = Some(s);
        // the `-` blocks carry their DENSE bit here
        d.more = kinds.iter().map(|k| k.flags()).collect();
        if kinds.contains(&Kind::Moe) {
            read_moe(r, d)?;
            let shared = r.u64_or("moe_shared_expert_intermediate_size", 0)?;
            if let Some(moe) = d.spec.moe.as_mut() {
                moe.router = Router::SigmoidGroup;
                moe.groups = r.u64_or("n_group", 1)?;
                moe.topk_group = r.u64_or("topk_group", 1)?;
                moe.shared_experts = u64::from(shared > 0);
                moe.shared_intermediate_size = shared;
            }
            // `read_moe` takes the dense layers from its own keys: here they are the `-` blocks
            d.dense.clear();
        }
        if let Some(l) = r.opt_u64("moe_latent_size")?.filter(|l| *l > 0) {
            if let Some(moe) = d.spec.moe.as_mut() {
                moe.latent = l;
            }
            d.spec.unmodelled = Some(format!(
                "moe_latent_size {l}: the experts' latent projections are counted, their activations are not modelled"
            ));
        }
        Ok(())
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        use LinearRole as R;
        let (h, l) = (m.hidden_size, m.num_layers);
        let mamba = m.layers_with(layer::SSM, l);
        let attn = m.attention_layers_among(l);
        let mlp = m.layers_with(layer::DENSE, l);
        let moe = m.layers_with(layer::NO_MIXER, l) - mlp;
        p.ends(m, false);
        p.qkvo_on(m, attn, m.qkv_bias, m.o_bias);
        if let Some(s) = &m.ssm {
            ssm_params(p, s, h, mamba);
        }
        mlp_params(p, h, super::dense_width(m), mlp, false, false, m.mlp_bias);
        if let Some(x) = m.moe {
            let i = m.intermediate_size;
            // the experts' width in and out: the latent one, between two projections, if any
            let w = if x.latent > 0 { x.latent } else { h };
            p.push(x.experts, h, moe, ParamKind::RouterFp32, Scope::Block, false);
            p.push(x.experts * i, w, moe, ParamKind::Experts(R::Up), Scope::Block, true);
            p.push(x.experts * w, i, moe, ParamKind::Experts(R::Down), Scope::Block, true);
            if x.latent > 0 {
                p.linear(x.latent, h, moe, R::Up, m.mlp_bias);
                p.linear(h, x.latent, moe, R::Down, m.mlp_bias);
            }
            mlp_params(p, h, x.shared_intermediate_size, moe, false, false, m.mlp_bias);
        }
        p.norms(h, 1, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        let (ts, h) = (g.ctx.rank_tokens, m.hidden_size);
        let n = g.norm(x, ts, h, STYLE.norm, "norm");
        let y = match (m.ssm, flags) {
            (Some(s), f) if f & layer::SSM != 0 => g.mamba2(n, h, &s),
            (_, f) if f & layer::NO_MIXER != 0 => mlp(g, m, flags, n, &STYLE),
            _ => attention(g, m, flags, n, &STYLE),
        };
        g.add(y, x, ts * h, Cat::Residual)
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        OpKinds { rope: Rope::None, router_fp32: true, routing_fp32: true, ..STYLE.kinds() }
    }
}

/// One block's mixer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Mamba,
    Attention,
    Mlp,
    Moe,
}

impl Kind {
    fn flags(self) -> u8 {
        match self {
            Self::Mamba => layer::SSM | layer::NO_MLP,
            // no positions in the attention
            Self::Attention => layer::NO_MLP | layer::NO_ROPE,
            Self::Mlp => layer::NO_MIXER | layer::DENSE,
            Self::Moe => layer::NO_MIXER,
        }
    }
}

/// The blocks' mixers: `layers_block_type` (or `layer_types`) names, else the pattern's letters,
/// else the config class's four blocks.
fn block_kinds(r: &Reader<'_>) -> Result<Vec<Kind>, ConfigError> {
    let name = |key: &str, t: &str| -> Result<Kind, ConfigError> {
        Ok(match t {
            "mamba" | "linear_attention" | "M" => Kind::Mamba,
            "attention" | "full_attention" | "*" => Kind::Attention,
            "mlp" | "-" => Kind::Mlp,
            "moe" | "E" => Kind::Moe,
            _ => {
                return Err(
                    r.invalid(key, format!("unknown block type \"{t}\" (mamba, attention, mlp, moe)"))
                );
            }
        })
    };
    for key in ["layers_block_type", "layer_types"] {
        if let Some(v) = r.get(key) {
            let Some(a) = v.as_array() else {
                return Err(r.invalid(key, format!("expected a list of block types, found {v}")));
            };
            return a
                .iter()
                .map(|t| t.as_str().ok_or_else(|| r.invalid(key, format!("expected names, found {t}"))))
                .map(|t| t.and_then(|t| name(key, t)))
                .collect();
        }
    }
    if let Some(p) = r.str("hybrid_override_pattern") {
        let mut buf = [0u8; 4];
        return p.chars().map(|ch| name("hybrid_override_pattern", ch.encode_utf8(&mut buf))).collect();
    }
    // the config class's default
    Ok(vec![Kind::Mamba, Kind::Moe, Kind::Attention, Kind::Mlp])
}
