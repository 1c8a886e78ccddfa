//! The parts of a config beside the text model: vision towers, encoder-decoder counts, and
//! `quantization_config`.

use super::*;
use crate::model::image_tokens::ImageTokens;

/// The vision tower of a multimodal checkpoint (`vision_config`, class defaults for missing keys).
pub(super) fn vision(
    path: &str,
    v: Option<&Value>,
    kind: VisionKind,
    top: &Reader<'_>,
    text_h: u64,
) -> Result<VisionTower, ConfigError> {
    let empty = Map::new();
    let obj = match v {
        Some(Value::Object(o)) => o,
        Some(Value::Null) | None => &empty,
        Some(other) => return Err(top.invalid("vision_config", format!("expected an object, found {other}"))),
    };
    let vt = match kind {
        VisionKind::Siglip => "siglip_vision_model",
        VisionKind::Pixtral => "pixtral",
        VisionKind::Llama4 => "llama4_vision_model",
        VisionKind::Qwen25Vl => "qwen2_5_vl_vision",
        VisionKind::Qwen3Vl => "qwen3_vl_vision",
        // LlavaConfig builds a 336-pixel CLIP-L/14 when the file has no vision_config
        VisionKind::Clip if v.is_none_or(Value::is_null) => "llava_clip_vision",
        VisionKind::Clip => "clip_vision_model",
    };
    let r = Reader::new(path, obj, vt, "vision_config.", super::class_defaults(vt));
    match kind {
        VisionKind::Qwen25Vl | VisionKind::Qwen3Vl => return qwen_vision(&r, kind),
        VisionKind::Clip => return clip_vision(&r, top, text_h),
        _ => {}
    }
    let (h, i) = (r.positive("hidden_size")?, r.positive("intermediate_size")?);
    let projector_params = match kind {
        VisionKind::Siglip => {
            // mm_input_projection_weight (vh × th) + mm_soft_emb_norm; SigLIP's pooling head if used
            let head = if r.bool_or("vision_use_head", true)? {
                h + 3 * h * h + 3 * h + h * h + h + 2 * h + 2 * h * i + i + h
            } else {
                0
            };
            h * text_h + h + head
        }
        VisionKind::Pixtral => {
            let m = top.u64_or("spatial_merge_size", 2)?;
            let bias = top.bool_or("multimodal_projector_bias", false)?;
            h + h * h * m * m + text_h * h + text_h * text_h + if bias { 2 * text_h } else { 0 }
        }
        _ => {
            // Llama 4: the pixel-shuffle adapter's two Linears, then the projector into the text width
            let (pin, pout) = (r.positive("projector_input_dim")?, r.positive("projector_output_dim")?);
            i * pin + pout * pout + r.positive("vision_output_dim")? * text_h
        }
    };
    let (patch_size, image_size) = (r.positive("patch_size")?, r.positive("image_size")?);
    let image_tokens = match kind {
        VisionKind::Siglip => Some(gemma3_image_tokens(top, image_size / patch_size, image_size)?),
        // Mistral 3's processor: the longest edge is the tower's image size (1540 for
        // Mistral-Small-3.1), 2×2 merged patches
        VisionKind::Pixtral => Some(ImageTokens::Rows {
            patch: patch_size,
            merge: top.u64_or("spatial_merge_size", 2)?.max(1),
            longest_edge: image_size,
        }),
        _ => None,
    };
    Ok(VisionTower {
        kind,
        hidden_size: h,
        intermediate_size: i,
        num_layers: r.positive("num_hidden_layers")?,
        patch_size,
        image_size,
        num_channels: r.positive("num_channels")?,
        projector_params,
        temporal_patch: 1,
        image_tokens,
    })
}

/// Gemma 3's images: the processor resizes each to the tower's side (pan-and-scan off, its
/// default), and the projector average-pools the `patches × patches` grid to
/// `mm_tokens_per_image` tokens (a square grid whose side divides the patches).
fn gemma3_image_tokens(top: &Reader<'_>, patches: u64, side: u64) -> Result<ImageTokens, ConfigError> {
    let tokens = top.u64_or("mm_tokens_per_image", 256)?;
    let per_side = (tokens as f64).sqrt().round() as u64;
    if per_side == 0 || per_side * per_side != tokens || !patches.is_multiple_of(per_side) {
        return Err(top.invalid(
            "mm_tokens_per_image",
            format!("{tokens} is not a square grid that pools the tower's {patches}×{patches} patches"),
        ));
    }
    Ok(ImageTokens::Fixed { side, tokens })
}

/// Qwen2.5-VL's and Qwen3-VL's `vision_config`: the tower, its mergers, and the processor's
/// dynamic resolution (the published checkpoints' `preprocessor_config.json` bounds).
fn qwen_vision(r: &Reader<'_>, kind: VisionKind) -> Result<VisionTower, ConfigError> {
    let (h, i) = (r.positive("hidden_size")?, r.positive("intermediate_size")?);
    let merge = r.positive("spatial_merge_size")?;
    let out = r.positive("out_hidden_size")?;
    let wide = h * merge * merge;
    // ln_q / norm over h, then Linear(wide, wide) and Linear(wide, out), both biased
    let merger = |norm: u64| norm + wide * wide + wide + out * wide + out;
    let patch = r.positive("patch_size")?;
    let (projector_params, (min_pixels, max_pixels)) = if kind == VisionKind::Qwen25Vl {
        // Qwen/Qwen2.5-VL-*-Instruct preprocessor_config.json: min_pixels 3136, max_pixels 12845056
        (merger(h), (3136, 12_845_056))
    } else {
        // the LayerNorm merger, then one post-shuffle-normed merger per deepstack layer; the learned
        // positions (num_position_embeddings × h) are counted here too
        let deepstack = r.u64_list("deepstack_visual_indexes")?.map_or(0, |d| d.len() as u64);
        let positions = r.positive("num_position_embeddings")? * h;
        // Qwen/Qwen3-VL-*-Instruct preprocessor_config.json: size.shortest_edge 65536, longest_edge 16777216
        (merger(2 * h) + deepstack * merger(2 * wide) + positions, (65_536, 16_777_216))
    };
    Ok(VisionTower {
        kind,
        hidden_size: h,
        intermediate_size: i,
        num_layers: r.positive("depth")?,
        patch_size: patch,
        image_size: 0,
        num_channels: r.positive_any(&["in_channels", "in_chans"])?,
        projector_params,
        temporal_patch: r.positive("temporal_patch_size")?,
        image_tokens: Some(ImageTokens::Resized { patch, merge, min_pixels, max_pixels }),
    })
}

/// LLaVA's CLIP tower and projector (`multi_modal_projector`: Linear(vh · layers read, th),
/// GELU, Linear(th, th)); every image is one `image_size` crop.
fn clip_vision(r: &Reader<'_>, top: &Reader<'_>, text_h: u64) -> Result<VisionTower, ConfigError> {
    let h = r.positive("hidden_size")?;
    let (image, patch) = (r.positive("image_size")?, r.positive("patch_size")?);
    // a list of feature layers is concatenated
    let layers_read = match top.get("vision_feature_layer") {
        Some(Value::Array(a)) => a.len().max(1) as u64,
        _ => 1,
    };
    let bias = top.bool_or("multimodal_projector_bias", true)?;
    let next = top.model_type == "llava_next";
    // LLaVA-NeXT adds the learned `image_newline` (one text-width vector)
    let projector_params = h * layers_read * text_h
        + text_h * text_h
        + if bias { 2 * text_h } else { 0 }
        + if next { text_h } else { 0 };
    let grid = (image / patch).pow(2);
    let full = top.str("vision_feature_select_strategy") == Some("full");
    // "default": the class token's feature dropped
    let tokens = if full { grid + 1 } else { grid };
    let rule =
        if next { anyres(top, (image, patch), full)? } else { ImageTokens::Fixed { side: image, tokens } };
    Ok(VisionTower {
        kind: VisionKind::Clip,
        hidden_size: h,
        intermediate_size: r.positive("intermediate_size")?,
        num_layers: r.positive("num_hidden_layers")?,
        patch_size: patch,
        image_size: image,
        num_channels: r.positive("num_channels")?,
        projector_params,
        temporal_patch: 1,
        image_tokens: Some(rule),
    })
}

/// LLaVA-NeXT's anyres rule from `image_grid_pinpoints` (`LlavaNextConfig`'s five by default).
fn anyres(top: &Reader<'_>, (side, patch): (u64, u64), full: bool) -> Result<ImageTokens, ConfigError> {
    use crate::model::image_tokens::MAX_PINS;
    let bad = |why: String| top.invalid("image_grid_pinpoints", why);
    let listed: Vec<(u16, u16)> = match top.get("image_grid_pinpoints") {
        None | Some(Value::Null) => vec![(336, 672), (672, 336), (672, 672), (1008, 336), (336, 1008)],
        Some(Value::Array(a)) => a
            .iter()
            .map(|p| {
                match p.as_array().map(|v| {
                    v.iter().map(|x| x.as_u64().and_then(|x| u16::try_from(x).ok())).collect::<Vec<_>>()
                }) {
                    Some(v) if v.len() == 2 && v.iter().all(|x| x.is_some_and(|x| x > 0)) => {
                        Ok((v[0].unwrap_or(1), v[1].unwrap_or(1)))
                    }
                    _ => Err(bad(format!("{p} is not a [height, width] pair"))),
                }
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(bad(format!("expected a list of [height, width], found {other}"))),
    };
    if listed.is_empty() || listed.len() > MAX_PINS {
        return Err(bad(format!("{} resolutions (1 to {MAX_PINS} are read)", listed.len())));
    }
    if let Some((h, w)) = listed.iter().find(|(h, w)| u64::from(*h) % side != 0 || u64::from(*w) % side != 0)
    {
        return Err(bad(format!("{h}×{w} is not whole {side}-pixel tiles")));
    }
    let mut pins = [(0, 0); MAX_PINS];
    pins[..listed.len()].copy_from_slice(&listed);
    Ok(ImageTokens::Anyres { side, patch, pins, n: listed.len() as u8, full })
}

/// Exact parameter count of the encoder-decoder types counted as generic (t5, whisper).
pub(super) fn encoder_decoder_params(r: &Reader<'_>, mt: &str) -> Result<Option<u64>, ConfigError> {
    Ok(Some(match mt {
        "t5" | "mt5" => {
            let d = r.positive("d_model")?;
            let heads = r.positive("num_heads")?;
            let inner = heads * r.positive("d_kv")?;
            let ff = r.positive("d_ff")?;
            let enc = r.positive("num_layers")?;
            let dec = r.u64_or("num_decoder_layers", enc)?;
            let v = r.positive("vocab_size")?;
            let buckets = r.u64_or("relative_attention_num_buckets", 32)?;
            let gated = r.str("feed_forward_proj").unwrap_or("relu").starts_with("gated");
            let mlp = if gated { 3 } else { 2 } * d * ff;
            let tied = r.bool_or("tie_word_embeddings", true)?;
            v * d
                + enc * (4 * d * inner + mlp + 2 * d)
                + dec * (8 * d * inner + mlp + 3 * d)
                + 2 * buckets * heads
                + 2 * d
                + if tied { 0 } else { v * d }
        }
        "whisper" => {
            let d = r.positive("d_model")?;
            let (enc, dec) = (r.positive("encoder_layers")?, r.positive("decoder_layers")?);
            let (fe, fd) = (r.positive("encoder_ffn_dim")?, r.positive("decoder_ffn_dim")?);
            let mel = r.u64_or("num_mel_bins", 80)?;
            let (src, tgt) =
                (r.u64_or("max_source_positions", 1500)?, r.u64_or("max_target_positions", 448)?);
            let v = r.positive("vocab_size")?;
            let attn = 4 * d * d + 3 * d; // q, v, out biased; k without bias
            let tied = r.bool_or("tie_word_embeddings", true)?;
            (d * mel * 3 + d)
                + (d * d * 3 + d)
                + src * d
                + enc * (attn + 2 * d + 2 * d * fe + fe + d + 2 * d)
                + 2 * d
                + v * d
                + tgt * d
                + dec * (2 * attn + 4 * d + 2 * d * fd + fd + d + 2 * d)
                + 2 * d
                + if tied { 0 } else { v * d }
        }
        _ => return Ok(None),
    }))
}

/// `quantization_config` → the checkpoint's weight format.
pub(super) fn quantization(
    r: &Reader<'_>,
    notes: &mut Vec<String>,
) -> Result<Option<WeightFormat>, ConfigError> {
    let q = match r.obj.get("quantization_config") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(q)) => q,
        Some(other) => {
            return Err(r.invalid("quantization_config", format!("expected an object, found {other}")));
        }
    };
    let key = "quantization_config.quant_method";
    let bad = |k: &str, msg: String| ConfigError::Invalid {
        path: r.path.to_owned(),
        key: format!("quantization_config.{k}"),
        msg,
    };
    let int = |keys: &[&str], default: i64| -> Result<i64, ConfigError> {
        for k in keys {
            match q.get(*k) {
                None | Some(Value::Null) => continue,
                Some(v) => {
                    return v.as_i64().ok_or_else(|| bad(k, format!("expected an integer, found {v}")));
                }
            }
        }
        Ok(default)
    };
    let group = |g: i64| if g <= 0 { 1u64 << 32 } else { g as u64 };
    let flag = |k: &str| q.get(k).and_then(Value::as_bool).unwrap_or(false);
    let method = match q.get("quant_method").and_then(Value::as_str) {
        Some(m) => m.to_ascii_lowercase(),
        None if flag("load_in_4bit") || flag("load_in_8bit") => "bitsandbytes".into(),
        None => {
            return Err(ConfigError::Missing {
                path: r.path.to_owned(),
                key: key.into(),
                model_type: r.model_type.clone(),
            });
        }
    };
    Ok(Some(match method.as_str() {
        "gptq" => WeightFormat::Gptq {
            bits: int(&["bits"], 4)? as u64,
            group_size: group(int(&["group_size"], 128)?),
        },
        "awq" => WeightFormat::Awq {
            bits: int(&["bits", "w_bit"], 4)? as u64,
            group_size: group(int(&["group_size", "q_group_size"], 128)?),
        },
        "bitsandbytes" if flag("load_in_4bit") => {
            WeightFormat::Bnb4 { double_quant: flag("bnb_4bit_use_double_quant") }
        }
        "bitsandbytes" if flag("load_in_8bit") => WeightFormat::Bnb8,
        "bitsandbytes" => {
            return Err(bad(
                "load_in_4bit",
                "bitsandbytes config with neither load_in_4bit nor load_in_8bit".into(),
            ));
        }
        "fp8" => {
            let block = q
                .get("weight_block_size")
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(Value::as_u64)
                .unwrap_or(0);
            WeightFormat::Fp8 { block }
        }
        "mxfp4" => WeightFormat::Mxfp4,
        "compressed-tensors" | "compressed_tensors" => {
            let w = q
                .get("config_groups")
                .and_then(Value::as_object)
                .and_then(|g| g.values().find_map(|x| x.get("weights").and_then(Value::as_object)))
                .ok_or_else(|| {
                    bad("config_groups", "no group with \"weights\" to read the format from".into())
                })?;
            let bits = w.get("num_bits").and_then(Value::as_u64).unwrap_or(8);
            let ty = w.get("type").and_then(Value::as_str).unwrap_or("int");
            let gs = w.get("group_size").and_then(Value::as_i64).unwrap_or(-1);
            match (ty, bits) {
                ("float", 8) => {
                    let block = w
                        .get("block_structure")
                        .and_then(Value::as_array)
                        .and_then(|a| a.first())
                        .and_then(Value::as_u64)
                        .unwrap_or(0);
                    WeightFormat::Fp8 { block }
                }
                ("int", b) if b <= 8 => WeightFormat::Gptq { bits: b, group_size: group(gs) },
                _ => {
                    return Err(bad(
                        "config_groups",
                        format!(
                            "compressed-tensors weights of type \"{ty}\" with {bits} bits are not supported"
                        ),
                    ));
                }
            }
        }
        other => {
            // a method vLLM / transformers know but this tool does not model: estimate unquantized
            notes.push(format!(
                "{}: quantization_config.quant_method \"{other}\" is not modelled; weights are counted in the compute dtype",
                r.path
            ));
            return Ok(None);
        }
    }))
}
