//! Reading a family's `config.json`: the keys every Llama-shaped decoder shares ([`decoder`]),
//! a [`Draft`] each family's own keys refine ([`super::FamilyDef::config`]), and the per-layer
//! flags. The config classes' defaults are the families' too ([`super::FamilyDef::class_defaults`]).

use super::{FamilyDef, by_id, generic};
use crate::model::config::{ConfigError, Reader};
use crate::model::{Head, TransformerSpec, layer};

/// The config a family reads: its language model's object (a nested `text_config`, or the top
/// level) and the top level (wrapper keys, multimodal checkpoints).
pub struct ConfigSource<'a> {
    /// The language model's keys.
    pub text: &'a Reader<'a>,
    /// The file's top level (the same object when there is no `text_config`).
    pub top: &'a Reader<'a>,
    /// The text model is nested in a wrapper (`text_config`).
    pub nested: bool,
}

/// A decoder spec being read, with the per-layer lists the flags are made of.
pub struct Draft {
    /// The spec so far.
    pub spec: TransformerSpec,
    /// Layers attending within the window.
    pub sliding: Vec<bool>,
    /// Layers with a dense MLP in an MoE model.
    pub dense: Vec<bool>,
    /// Layers without rotary.
    pub no_rope: Vec<bool>,
    /// Layers with a short convolution instead of attention (LFM2).
    pub conv: Vec<bool>,
    /// Other [`layer`] bits per layer (Mamba2 mixers, blocks without an MLP or a mixer), OR-ed in.
    pub more: Vec<u8>,
    /// The window (`sliding_window`), dropped when no layer slides.
    pub window: Option<u64>,
}

impl Draft {
    /// Every layer slides.
    pub fn all_sliding(&mut self) {
        self.sliding = vec![true; self.spec.num_layers as usize];
    }
}

/// The sliding layers `layer_types` names, else all but every `sliding_window_pattern`-th
/// (`every` when the file has no pattern), as EXAONE 4 and Cohere 2 configs build them.
pub(crate) fn sliding_or_every(r: &Reader<'_>, layers: u64, every: u64) -> Result<Vec<bool>, ConfigError> {
    if let Some(t) = r.layer_types(layers)? {
        return Ok(t);
    }
    let every = r.u64_or("sliding_window_pattern", every)?.max(1);
    Ok((0..layers).map(|j| !(j + 1).is_multiple_of(every)).collect())
}

/// Per-layer flags from per-layer sliding / dense / no-rope bits; empty when every layer is
/// alike (every layer sliding is `sliding_window` alone).
pub(crate) fn flags_of(
    sliding: &[bool],
    dense: &[bool],
    no_rope: &[bool],
    conv: &[bool],
    layers: u64,
) -> Vec<u8> {
    let f: Vec<u8> = (0..layers as usize)
        .map(|i| {
            let mut x = 0;
            if sliding.get(i).copied().unwrap_or(false) {
                x |= layer::SLIDING;
            }
            if dense.get(i).copied().unwrap_or(false) {
                x |= layer::DENSE;
            }
            if no_rope.get(i).copied().unwrap_or(false) {
                x |= layer::NO_ROPE;
            }
            if conv.get(i).copied().unwrap_or(false) {
                x |= layer::CONV;
            }
            x
        })
        .collect();
    compact_flags(f)
}

/// Per-layer flags as the spec keeps them: empty when every layer is alike and plain (or every
/// layer sliding, which `sliding_window` alone says).
pub(crate) fn compact_flags(f: Vec<u8>) -> Vec<u8> {
    match f.first() {
        Some(&x) if (x == 0 || x == layer::SLIDING) && f.iter().all(|&y| y == x) => Vec::new(),
        _ => f,
    }
}

/// A Llama-shaped decoder's keys, the family's own ([`FamilyDef::config`]), the per-layer flags
/// and the embedding tie (the text model's, the top level's, the wrapper class's, else tied).
pub(crate) fn decoder(d: &dyn FamilyDef, c: &ConfigSource<'_>) -> Result<TransformerSpec, ConfigError> {
    let r = c.text;
    let mt = r.model_type.clone();
    let family = by_id(d.id()).unwrap_or_else(generic);
    let mut draft = shape(d, r, family)?;
    d.config(r, &mt, &mut draft)?;
    let Draft { spec: mut s, mut sliding, dense, no_rope, conv, more, mut window } = draft;
    if !sliding.iter().any(|&x| x) {
        window = None;
    }
    if window.is_none() {
        sliding.clear();
    }
    s.sliding_window = window;
    s.layer_flags = flags_of(&sliding, &dense, &no_rope, &conv, s.num_layers);
    if more.iter().any(|&b| b != 0) {
        let mut f = s.layer_flags.clone();
        f.resize(s.num_layers as usize, super::default_flags(&s));
        for (x, b) in f.iter_mut().zip(&more) {
            *x |= b;
        }
        s.layer_flags = f;
    }
    if s.rope_dim == 0
        && let Some(f) = r.rotary_fraction("partial_rotary_factor")?
        && f > 0.0
        && f < 1.0
    {
        s.rope_dim = ((s.head_dim as f64) * f) as u64;
    }
    s.tie_word_embeddings = tie(c);
    Ok(s)
}

/// `tie_word_embeddings`. A wrapper's (a multimodal checkpoint's `…ForConditionalGeneration`)
/// own value decides, as transformers ties the head by the loaded model's config (the file's
/// top level, else the wrapper class default: Mistral 3 ties although its `text_config` says
/// not); else the text model's, then its class default, else tied.
fn tie(c: &ConfigSource<'_>) -> bool {
    let explicit = |r: &Reader<'_>| r.obj.get("tie_word_embeddings").and_then(|v| v.as_bool());
    let wrapper = if c.nested {
        explicit(c.top).or_else(|| c.top.get("tie_word_embeddings").and_then(|v| v.as_bool()))
    } else {
        None
    };
    wrapper
        .or_else(|| explicit(c.text))
        .or_else(|| c.text.get("tie_word_embeddings").and_then(|v| v.as_bool()))
        .unwrap_or(true)
}

/// The shape keys every decoder has (under their aliases), an encoder-decoder's both stacks.
fn shape(d: &dyn FamilyDef, r: &Reader<'_>, family: crate::model::Family) -> Result<Draft, ConfigError> {
    let h = r.positive_any(&["hidden_size", "n_embd", "n_embed", "d_model"])?;
    let enc_dec = r.bool_or("is_encoder_decoder", false)?;
    let mut l = d.config_layers(r)?;
    let a = d.config_heads(r)?;
    let kv = d.config_kv_heads(r, a)?;
    if kv == 0 || !a.is_multiple_of(kv) {
        return Err(r.invalid("num_key_value_heads", format!("{kv} must divide num_attention_heads ({a})")));
    }
    let head_dim = match r.any_u64(&["head_dim", "d_kv"])? {
        Some(width) if width > 0 && d.config_head_dim_key() => width,
        // transformers' decoders: `getattr(config, "head_dim", None) or hidden_size // heads`,
        // a floor (GLM-4.5's class default: 96 heads of 42 over a hidden size of 4096)
        _ if h >= a => h / a,
        _ => return Err(r.invalid("num_attention_heads", format!("{a} heads exceed the hidden size {h}"))),
    };
    let mut i = d.config_intermediate(r, h)?;
    let v = r.positive_any(&["vocab_size", "n_vocab", "padded_vocab_size"])?;
    if enc_dec {
        // encoder and decoder stacks; a Llama-shaped MLP with the real MLP's parameters
        l += r.any_u64(&["num_decoder_layers", "decoder_layers"])?.unwrap_or(l);
        let ff_proj = r.str("feed_forward_proj").unwrap_or("relu");
        if !ff_proj.starts_with("gated") {
            i = (2 * i / 3).max(1);
        }
    }
    let attention_bias = r.bool_or("attention_bias", false)?;
    let spec = TransformerSpec {
        family,
        head: Head::CausalLm,
        hidden_size: h,
        num_layers: l,
        num_heads: a,
        num_kv_heads: kv,
        head_dim,
        intermediate_size: i,
        vocab_size: v,
        qkv_bias: attention_bias,
        o_bias: attention_bias,
        mlp_bias: r.bool_or("mlp_bias", false)?,
        attention_dropout: r.f64_or("attention_dropout", 0.0)?,
        context_length: r
            .any_u64(&[
                "max_position_embeddings",
                "n_positions",
                "max_seq_len",
                "seq_length",
                "max_sequence_length",
                "model_max_length",
            ])?
            .unwrap_or(0),
        rope: rope(r)?,
        ..TransformerSpec::default()
    };
    let window = r.opt_u64("sliding_window")?.filter(|w| *w > 0);
    Ok(Draft {
        spec,
        sliding: Vec::new(),
        dense: Vec::new(),
        no_rope: Vec::new(),
        conv: Vec::new(),
        more: Vec::new(),
        window,
    })
}

/// The rotary base and scaling: transformers 5's `rope_parameters` (`rope_theta`, `rope_type`,
/// `factor`, …), else the top-level `rope_theta` and `rope_scaling` of earlier releases; `None`
/// when the file names no base.
pub(crate) fn rope(r: &Reader<'_>) -> Result<Option<crate::model::RopeConfig>, ConfigError> {
    let nested = r.get("rope_parameters").and_then(|v| v.as_object());
    let theta = match nested.and_then(|o| o.get("rope_theta")).and_then(serde_json::Value::as_f64) {
        Some(t) => Some(t),
        None => r.opt_f64("rope_theta")?,
    };
    let Some(theta) = theta else { return Ok(None) };
    if !(theta.is_finite() && theta > 0.0) {
        return Err(r.invalid("rope_theta", format!("{theta} is not a positive number")));
    }
    let scaling = nested.or_else(|| r.get("rope_scaling").and_then(|v| v.as_object())).and_then(|o| {
        let f = |k: &str| o.get(k).and_then(serde_json::Value::as_f64);
        let kind = o.get("rope_type").or_else(|| o.get("type")).and_then(|v| v.as_str())?;
        (kind != "default").then(|| crate::model::RopeScaling {
            rope_type: kind.to_owned(),
            factor: f("factor").unwrap_or(1.0),
            low_freq_factor: f("low_freq_factor"),
            high_freq_factor: f("high_freq_factor"),
            original_max_position_embeddings: o
                .get("original_max_position_embeddings")
                .and_then(serde_json::Value::as_u64),
        })
    });
    Ok(Some(crate::model::RopeConfig { theta, scaling }))
}

/// The usual aliases of the MLP width, `4·h` when none is given.
pub(crate) fn intermediate(r: &Reader<'_>, h: u64) -> Result<u64, ConfigError> {
    Ok(r.any_u64(&["intermediate_size", "ffn_dim", "d_ff", "n_inner", "encoder_ffn_dim", "ffn_hidden_size"])?
        .unwrap_or(4 * h))
}

/// `key`'s heads must divide the hidden size.
pub(crate) fn check_divides(r: &Reader<'_>, key: &'static str, h: u64, a: u64) -> Result<(), ConfigError> {
    if !h.is_multiple_of(a) {
        return Err(r.invalid(key, format!("{a} heads do not divide the hidden size {h}")));
    }
    Ok(())
}

/// Experts per token must not exceed the experts.
pub(crate) fn check_top_k(r: &Reader<'_>, top_k: u64, experts: u64) -> Result<(), ConfigError> {
    if top_k > experts {
        return Err(
            r.invalid("num_experts_per_tok", format!("{top_k} exceeds the number of experts ({experts})"))
        );
    }
    Ok(())
}

/// Qwen2's and Qwen3's sliding layers: from `max_window_layers` on when `use_sliding_window`.
pub(crate) fn qwen_sliding(r: &Reader<'_>, d: &mut Draft) -> Result<(), ConfigError> {
    let l = d.spec.num_layers;
    if r.bool_or("use_sliding_window", false)? && d.window.is_some() {
        let from = r.u64_or("max_window_layers", 28)?;
        d.sliding = r.layer_types(l)?.unwrap_or_else(|| (0..l).map(|j| j >= from).collect());
    } else {
        d.window = None;
    }
    Ok(())
}

/// A patch-embedding model's grid: `patch_size` and `image_size` (a number, or `[h, w]` as
/// DINOv2 and ViT allow), `num_channels` (3 when absent), and the model's `prefix` tokens.
pub(crate) fn patches(
    r: &Reader<'_>,
    prefix: u64,
    interpolation: crate::model::pixels::PositionInterpolation,
) -> Result<crate::model::pixels::Patches, ConfigError> {
    use crate::model::pixels::{ImageSize, MAX_IMAGE_SIDE};
    let pair = |key: &str| -> Result<(u64, u64), ConfigError> {
        let (a, b) = match r.get(key) {
            Some(v) if v.is_array() => match r.u64_list(key)?.as_deref() {
                Some(&[a, b]) => (a, b),
                _ => return Err(r.invalid(key, "expected a number or [height, width]")),
            },
            _ => (r.positive(key)?, r.positive(key)?),
        };
        if !(1..=MAX_IMAGE_SIDE).contains(&a) || !(1..=MAX_IMAGE_SIDE).contains(&b) {
            return Err(r.invalid(key, format!("expected 1..={MAX_IMAGE_SIDE} pixels")));
        }
        Ok((a, b))
    };
    let (ph, pw) = pair("patch_size")?;
    if ph != pw {
        return Err(r.invalid("patch_size", format!("non-square patches ({ph}×{pw}) are not modelled")));
    }
    let (h, w) = pair("image_size")?;
    let image = ImageSize { height: h, width: w };
    if h < ph || w < ph {
        return Err(r.invalid("image_size", format!("{image} is smaller than one {ph}-pixel patch")));
    }
    Ok(crate::model::pixels::Patches {
        patch: ph,
        image,
        prefix,
        channels: r.u64_or("num_channels", 3)?.max(1),
        interpolation,
        mask_token: false,
        conv: false,
        ceil: false,
    })
}
