//! Mamba2 mixers read from a `config.json`, under the two spellings transformers' configs use:
//! Mamba2's own (`num_heads`, `state_size`, `n_groups`, …) and the hybrids' `mamba_*` keys
//! (Bamba, Granite-4.0-H, Falcon-H1, Nemotron-H), and which layers are Mamba2 layers.

use crate::model::Ssm;
use crate::model::config::{ConfigError, Reader};

/// The spellings of one config class.
pub(super) struct Keys {
    pub heads: &'static [&'static str],
    pub head_dim: &'static [&'static str],
    pub state: &'static [&'static str],
    pub groups: &'static [&'static str],
    pub chunk: &'static [&'static str],
    pub conv: &'static [&'static str],
    pub conv_bias: &'static str,
    pub proj_bias: &'static str,
    pub expand: &'static [&'static str],
}

/// `Mamba2Config`'s.
pub(super) const MAMBA2: Keys = Keys {
    heads: &["num_heads"],
    head_dim: &["head_dim"],
    state: &["state_size"],
    groups: &["n_groups"],
    chunk: &["chunk_size"],
    conv: &["conv_kernel"],
    conv_bias: "use_conv_bias",
    proj_bias: "use_bias",
    expand: &["expand"],
};

/// The hybrids' `mamba_*` keys (Bamba, Granite-4.0-H; Nemotron-H's `mamba_num_heads`,
/// `mamba_head_dim`, `ssm_state_size`, `n_groups`, `conv_kernel`, `chunk_size`).
pub(super) const HYBRID: Keys = Keys {
    heads: &["mamba_n_heads", "mamba_num_heads"],
    head_dim: &["mamba_d_head", "mamba_head_dim"],
    state: &["mamba_d_state", "ssm_state_size"],
    groups: &["mamba_n_groups", "n_groups"],
    chunk: &["mamba_chunk_size", "chunk_size"],
    conv: &["mamba_d_conv", "conv_kernel"],
    conv_bias: "mamba_conv_bias",
    proj_bias: "mamba_proj_bias",
    expand: &["mamba_expand", "expand"],
};

/// The mixer of hidden size `h` (`head_dim` "auto": `expand · h / heads`, as the configs do).
pub(super) fn read(r: &Reader<'_>, h: u64, k: &Keys) -> Result<Ssm, ConfigError> {
    let heads = r.positive_any(k.heads)?;
    let expand = r.any_u64(k.expand)?.unwrap_or(2);
    let auto = |r: &Reader<'_>| -> Result<u64, ConfigError> {
        for key in k.head_dim {
            if let Some(v) = r.get(key) {
                return match v.as_u64() {
                    Some(d) if d > 0 => Ok(d),
                    _ if v.as_str() == Some("auto") => Ok(expand * h / heads),
                    _ => Err(r.invalid(key, format!("expected a positive integer or \"auto\", found {v}"))),
                };
            }
        }
        Ok(expand * h / heads)
    };
    let head_dim = auto(r)?;
    let groups = r.positive_any(k.groups)?;
    if !heads.is_multiple_of(groups) {
        return Err(r.invalid(k.groups[0], format!("{groups} groups must divide the {heads} heads")));
    }
    let conv_bias = r.bool_or(k.conv_bias, true)?;
    let proj_bias = r.bool_or(k.proj_bias, false)?;
    Ok(Ssm {
        heads,
        head_dim,
        state: r.positive_any(k.state)?,
        groups,
        chunk: r.positive_any(k.chunk)?,
        conv_kernel: r.positive_any(k.conv)?,
        conv_bias,
        proj_bias,
        gated_norm: true,
        residual_fp32: false,
        beside_attention: false,
    })
}

/// Which layers are Mamba2 layers: `layer_types` / `layers_block_type` names (`mamba`,
/// `linear_attention` against `attention`, `full_attention`), else `attn_layer_indices`
/// (attention there), else every layer. `None` from a list means "not a mixer" (Nemotron-H's
/// MLP and MoE blocks), decided by the caller.
pub(super) fn mamba_layers(r: &Reader<'_>, layers: u64) -> Result<Vec<bool>, ConfigError> {
    if let Some(listed) = listed_mixer_layers(r, layers)? {
        return Ok(listed);
    }
    if let Some(idx) = r.u64_list("attn_layer_indices")? {
        return Ok((0..layers).map(|i| !idx.contains(&i)).collect());
    }
    Ok(vec![true; layers as usize])
}

/// The recurrent layers a `layer_types` / `layers_block_type` list names (`mamba`, `mamba2`,
/// `linear_attention`); `None` when the file has no list, an error when its length is not the
/// layers'.
pub(super) fn listed_mixer_layers(r: &Reader<'_>, layers: u64) -> Result<Option<Vec<bool>>, ConfigError> {
    for key in ["layer_types", "layers_block_type"] {
        let Some(v) = r.get(key) else { continue };
        let names: Vec<&str> =
            v.as_array().map(|a| a.iter().filter_map(|x| x.as_str()).collect()).unwrap_or_default();
        if names.len() as u64 != layers {
            return Err(
                r.invalid(key, format!("{} names for {layers} layers (num_hidden_layers)", names.len()))
            );
        }
        return Ok(Some(
            names.iter().map(|t| matches!(*t, "mamba" | "linear_attention" | "mamba2")).collect(),
        ));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use crate::estimate::{Checkpointing, MixerImpl, Mode, Scenario, estimate};
    use crate::model::hf_config::parse_config;
    use crate::model::{Architecture, ModelSpec, layer};
    use crate::units::Precision;

    fn model(text: &str) -> ModelSpec {
        let (spec, _) = parse_config("config.json", text).unwrap_or_else(|e| panic!("{e}"));
        ModelSpec { name: "m".into(), arch: Architecture::Transformer(Box::new(spec)) }
    }

    /// The config classes' defaults (transformers 5.25) give the parameter counts of the models
    /// instantiated on the meta device.
    #[test]
    fn class_defaults_count_the_meta_device_parameters() {
        for (mt, n) in [
            ("mamba2", 7_285_403_648),
            ("bamba", 9_992_765_440),
            ("granitemoehybrid", 38_601_064_448),
            ("nemotron_h", 1_968_355_712),
            ("falcon_h1", 8_514_961_408),
            ("mamba", 159_308_544),
            ("jamba", 51_570_323_328),
            ("qwen3_next", 79_674_391_296),
            ("zamba2", 2_481_848_336),
            ("bloom", 16_156_544),
            ("kimi_linear", 49_133_074_464),
            ("longcat_flash", 560_664_958_976),
        ] {
            let m = model(&format!(r#"{{"model_type":"{mt}"}}"#));
            assert_eq!(m.n_params(), n, "{mt}");
        }
        // Nemotron-H's blocks from the pattern, and its latent experts (meta-device count)
        let m = model(
            r#"{"model_type":"nemotron_h","hybrid_override_pattern":"M-*E","hidden_size":256,
            "num_attention_heads":8,"num_key_value_heads":2,"head_dim":32,"intermediate_size":512,
            "mamba_num_heads":8,"mamba_head_dim":64,"ssm_state_size":16,"n_groups":2,"n_routed_experts":4,
            "num_experts_per_tok":2,"moe_intermediate_size":128,"moe_shared_expert_intermediate_size":256,
            "vocab_size":1000}"#,
        );
        let t = m.transformer().unwrap_or_else(|| panic!("a transformer"));
        assert_eq!((t.num_layers, t.attention_layers_among(4), t.layers_with(layer::SSM, 4)), (4, 1, 1));
        // Bamba's attention layers from `attn_layer_indices`, the rest Mamba2
        let m = model(r#"{"model_type":"bamba","num_hidden_layers":4,"attn_layer_indices":[2]}"#);
        let t = m.transformer().unwrap_or_else(|| panic!("a transformer"));
        assert_eq!(t.layers_with(layer::SSM, 4), 3);
        assert_eq!(t.attention_layers_among(4), 1);
        // Zamba2: a Mamba2 mixer in every layer, the hybrid ones attend too (one KV, every state)
        let m = model(
            r#"{"model_type":"zamba2","num_hidden_layers":4,"layers_block_type":["mamba","hybrid","mamba","hybrid"]}"#,
        );
        let t = m.transformer().unwrap_or_else(|| panic!("a transformer"));
        assert_eq!((t.attention_layers_among(4), t.ssm_layers_among(4)), (2, 4));
        // transformers derives the hybrid layers from the 54-name list, not `hybrid_layer_ids`
        assert!(
            crate::model::hf_config::parse("z.json", r#"{"model_type":"zamba2","num_hidden_layers":8}"#)
                .is_err()
        );
    }

    /// The fused kernels keep `in_proj`'s output, the scan's output and the norm's rstd; the
    /// PyTorch path keeps the chunked scan's fp32 tensors as well: several times more. A cache
    /// holds each Mamba2 layer's conv taps and fp32 scan state, whatever the prompt's length.
    #[test]
    fn the_mixer_code_decides_what_a_layer_keeps_and_the_state_is_constant() {
        let m = model(r#"{"model_type":"mamba2","num_hidden_layers":4,"hidden_size":1024,"num_heads":32}"#);
        let mut sc = Scenario::new(m);
        (sc.batch, sc.seq, sc.precision) = (1, 2048, Precision::Bf16);
        let kernels = estimate(&sc).unwrap_or_else(|e| panic!("{e}")).activations;
        sc.stack.mixer = MixerImpl::Torch;
        let torch = estimate(&sc).unwrap_or_else(|e| panic!("{e}")).activations;
        assert!(torch > 3 * kernels, "torch {torch} vs kernels {kernels}");
        sc.checkpointing = Checkpointing::Full;
        assert!(estimate(&sc).unwrap_or_else(|e| panic!("{e}")).activations < kernels);
        sc.mode = Mode::Infer;
        let short = estimate(&sc).unwrap_or_else(|e| panic!("{e}")).kv_cache;
        sc.seq = 8192;
        let long = estimate(&sc).unwrap_or_else(|e| panic!("{e}")).kv_cache;
        // 4 layers × (conv (2048 + 2·8·128) × 4 taps in bf16 + 32 heads × 64 × 128 in fp32)
        assert_eq!(short, 4 * ((2048 + 2 * 8 * 128) * 4 * 2 + 2048 * 128 * 4));
        assert_eq!(short, long);
    }
}
