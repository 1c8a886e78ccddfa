//! Liquid AI's LFM2: most blocks mix the sequence with a short convolution (`in_proj` to B, C
//! and x; `B·x` through a depthwise causal `conv1d` of `conv_L_cache` taps; `C·y`; `out_proj`),
//! the others with GQA attention with per-head q/k RMSNorm; every block has a SwiGLU MLP whose
//! width is adjusted from `block_ff_dim` as the config class does.

use super::prelude::*;

const STYLE: Style = Style { qk_norm: QkNorm::PerHead, ..LLAMA };

/// LFM2.
pub(super) struct Lfm2;

impl FamilyDef for Lfm2 {
    fn id(&self) -> &'static str {
        "lfm2"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["lfm2"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "Lfm2DecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        use LinearRole as R;
        let (h, l) = (m.hidden_size, m.num_layers);
        let conv = m.conv_layers();
        let attn = l - conv;
        p.ends(m, false);
        p.qkvo_on(m, attn, false, false);
        p.norms(m.head_dim, 2, attn, false);
        let bias = m.conv_bias;
        p.linear(3 * h, h, conv, R::Q, bias);
        // the depthwise convolution's (h, 1, taps) weight: not a Linear (never quantized)
        p.push(h, m.conv_kernel, conv, ParamKind::Vector, Scope::Block, true);
        if bias {
            p.push(h, 1, conv, ParamKind::Vector, Scope::Block, true);
        }
        p.linear(h, h, conv, R::O, bias);
        mlp_params(p, h, m.intermediate_size, l, true, false, false);
        p.norms(h, 2, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        if flags & layer::CONV == 0 {
            return sequential_block(g, m, flags, x, &STYLE);
        }
        mixer_block(g, m, flags, x, &STYLE, ("operator_norm", "ffn_norm"), |g, n| {
            g.short_conv(n, m.hidden_size, m.conv_kernel)
        })
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "lfm2").then_some(
            r#"{"vocab_size":65536,"hidden_size":2560,"intermediate_size":12288,"num_hidden_layers":32,
            "num_attention_heads":32,"num_key_value_heads":8,"max_position_embeddings":128000,
            "norm_eps":1e-5,"tie_word_embeddings":true,"conv_bias":false,"conv_L_cache":3,
            "block_multiple_of":256,"block_ffn_dim_multiplier":1.0,"block_auto_adjust_ff_dim":true,
            "rope_theta":1000000.0}"#,
        )
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let l = d.spec.num_layers;
        // `layer_types`, else `full_attn_idxs` (attention there, convolutions elsewhere), else
        // every layer attention (the class default)
        let names: Option<Vec<String>> = r
            .get("layer_types")
            .and_then(|v| v.as_array())
            .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect());
        d.conv = match (names, r.u64_list("full_attn_idxs")?) {
            (Some(n), _) if n.len() as u64 == l => n.iter().map(|t| t == "conv").collect(),
            (Some(n), _) => {
                return Err(r.invalid(
                    "layer_types",
                    format!("{} entries for {l} layers (num_hidden_layers)", n.len()),
                ));
            }
            (None, Some(idx)) => (0..l).map(|i| !idx.contains(&i)).collect(),
            (None, None) => Vec::new(),
        };
        d.spec.conv_kernel = r.positive("conv_L_cache")?;
        d.spec.conv_bias = r.bool_or("conv_bias", false)?;
        // `block_ff_dim` (the files' spelling), two thirds of it, times the multiplier, rounded
        // up to `block_multiple_of`
        let mut i = r.any_u64(&["block_ff_dim", "intermediate_size"])?.unwrap_or(d.spec.intermediate_size);
        if r.bool_or("block_auto_adjust_ff_dim", true)? {
            i = 2 * i / 3;
            if let Some(mult) = r.opt_f64("block_ffn_dim_multiplier")? {
                let of = r.u64_or("block_multiple_of", 256)?.max(1);
                i = ((mult * i as f64) as u64).div_ceil(of) * of;
            }
        }
        d.spec.intermediate_size = i;
        Ok(())
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        STYLE.kinds()
    }
}
