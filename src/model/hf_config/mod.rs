//! Reading a HuggingFace `config.json` into a [`TransformerSpec`].
//!
//! Every `model_type` with the usual keys is read. The families with their own modelling rules
//! (gpt2, bert, llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, gemma, gemma2,
//! gemma3 / gemma3_text, mistral3, phi, phi3, olmo2, gpt_neox, falcon, starcoder2, granite, smollm3,
//! deepseek_v2 / deepseek_v3, gpt_oss, vit) follow transformers 5.24: a key missing from the file
//! takes its config class's default. Any other type is estimated as a generic Llama-style
//! decoder and flagged unvalidated (t5 and whisper with their exact parameter count). A nested
//! `text_config` describes the language model (multimodal checkpoints; the SigLIP / Pixtral
//! vision tower of gemma3 / mistral3 is counted too). The task head follows `architectures[0]`;
//! without it the default head is the one HF's `AutoModelForCausalLM` / `BertForMaskedLM` would
//! build, and a note says so. `quantization_config` becomes the spec's weight format.

pub use super::config::ConfigError;
use super::config::Reader;
use super::quant::WeightFormat;
use super::{Family, Head, TransformerSpec, VisionKind, VisionTower};
use crate::families::ConfigSource;
use serde_json::{Map, Value};

/// A parsed config: the spec, notes for the user, and the checkpoint dtype (`torch_dtype` /
/// `dtype`) when the file names one.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    /// The architecture.
    pub spec: TransformerSpec,
    /// Assumptions made while reading (head assumed, unvalidated architecture, quantization).
    pub notes: Vec<String>,
    /// `torch_dtype` / `dtype` as written (`"bfloat16"`, …).
    pub dtype: Option<String>,
    /// Every key read and where its value came from (the file, the class default, vramscope's).
    pub facts: Vec<super::header_check::Fact>,
}

mod defaults;
mod extras;

use defaults::class_defaults;
use extras::{encoder_decoder_params, quantization, vision};

/// A parsed config of any architecture: a transformer ([`Parsed`]) or a convolutional backbone.
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedModel {
    /// The architecture.
    pub arch: super::Architecture,
    /// Assumptions made while reading.
    pub notes: Vec<String>,
    /// `torch_dtype` / `dtype` as written.
    pub dtype: Option<String>,
    /// Every key read and where its value came from.
    pub facts: Vec<super::header_check::Fact>,
}

/// Parses the text of a `config.json` into whichever architecture it describes: a
/// convolutional backbone (`resnet`, `convnext`) or a transformer ([`parse`]).
pub fn parse_model(path: &str, text: &str) -> Result<ParsedModel, ConfigError> {
    let value = json(path, text)?;
    let obj = value.as_object().ok_or_else(|| ConfigError::NotObject { path: path.to_owned() })?;
    let model_type = model_type(path, obj)?;
    if !crate::families::is_net_type(&model_type) {
        let p = parse(path, text)?;
        let arch = super::Architecture::Transformer(Box::new(p.spec));
        return Ok(ParsedModel { arch, notes: p.notes, dtype: p.dtype, facts: p.facts });
    }
    let r = Reader::new(path, obj, &model_type, "", class_defaults(&model_type));
    let spec = crate::families::read_net(&r)?;
    let dtype =
        ["torch_dtype", "dtype"].iter().find_map(|k| obj.get(*k).and_then(Value::as_str)).map(str::to_owned);
    let arch = obj.get("architectures").and_then(|a| a.get(0)).and_then(Value::as_str);
    let mut notes = Vec::new();
    if arch.is_none() {
        notes.push(format!(
            "no \"architectures\" in {path}: assuming {}ForImageClassification with {} labels",
            if model_type == "resnet" { "ResNet" } else { "ConvNext" },
            spec.num_labels
        ));
    }
    let empty = Reader::new(path, obj, &model_type, "", "{}");
    let facts = facts(&empty, &r, arch.is_some(), dtype.is_some());
    Ok(ParsedModel { arch: super::Architecture::Net(Box::new(spec)), notes, dtype, facts })
}

fn json(path: &str, text: &str) -> Result<Value, ConfigError> {
    serde_json::from_str(&crate::model::config::python_json(text)).map_err(|e| ConfigError::Json {
        path: path.to_owned(),
        line: e.line(),
        column: e.column(),
        msg: e.to_string(),
    })
}

fn model_type(path: &str, obj: &Map<String, Value>) -> Result<String, ConfigError> {
    match obj.get("model_type") {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(ConfigError::Invalid {
            path: path.to_owned(),
            key: "model_type".into(),
            msg: format!("expected a string, found {other}"),
        }),
        None => Err(ConfigError::Invalid {
            path: path.to_owned(),
            key: "model_type".into(),
            msg: "missing: a transformers config.json names its architecture (\"llama\", \"qwen3\", …)"
                .into(),
        }),
    }
}

/// Parses the text of a `config.json`. `path` is used in messages only.
pub fn parse(path: &str, text: &str) -> Result<Parsed, ConfigError> {
    let value = json(path, text)?;
    let obj = value.as_object().ok_or_else(|| ConfigError::NotObject { path: path.to_owned() })?;
    let model_type = model_type(path, obj)?;
    if crate::families::is_net_type(&model_type) {
        return Err(ConfigError::Invalid {
            path: path.to_owned(),
            key: "model_type".into(),
            msg: format!("\"{model_type}\" is a vision backbone built op by op, not a transformer"),
        });
    }
    let top = Reader::new(path, obj, &model_type, "", class_defaults(&model_type));
    let arch = match obj.get("architectures") {
        Some(Value::Array(a)) => a.first().and_then(Value::as_str).map(str::to_owned),
        Some(Value::Null) | None => None,
        Some(other) => {
            return Err(top.invalid("architectures", format!("expected a list of names, found {other}")));
        }
    };
    static EMPTY: std::sync::LazyLock<serde_json::Map<String, Value>> =
        std::sync::LazyLock::new(Default::default);
    let (tobj, ttype, prefix) = modelled_part(obj, &model_type, &top, &EMPTY)?;
    let mut r = Reader::new(path, tobj, &ttype, prefix, class_defaults(&ttype));
    let mut notes = Vec::new();
    let dtype = ["torch_dtype", "dtype"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(Value::as_str))
        .or_else(|| ["torch_dtype", "dtype"].iter().find_map(|k| tobj.get(*k).and_then(Value::as_str)))
        .map(str::to_owned);

    let family = crate::families::for_model_type(&ttype).unwrap_or_else(crate::families::generic);
    r.generic = family == crate::families::generic();
    let source = ConfigSource { text: &r, top: &top, nested: !prefix.is_empty() };
    let mut spec = crate::families::read_config(family, &source)?;
    // vision tower of multimodal checkpoints
    match (model_type.as_str(), obj.get("vision_config")) {
        ("siglip", _) => siglip_text_tower(path, obj, &top, arch.as_deref(), &mut spec, &mut notes)?,
        ("gemma3", v) => spec.vision = Some(vision(path, v, VisionKind::Siglip, &top, spec.hidden_size)?),
        ("mistral3", v) => spec.vision = Some(vision(path, v, VisionKind::Pixtral, &top, spec.hidden_size)?),
        ("llama4", v) => spec.vision = Some(vision(path, v, VisionKind::Llama4, &top, spec.hidden_size)?),
        ("qwen2_5_vl", v) => {
            spec.vision = Some(vision(path, v, VisionKind::Qwen25Vl, &top, spec.hidden_size)?)
        }
        ("qwen3_vl", v) => spec.vision = Some(vision(path, v, VisionKind::Qwen3Vl, &top, spec.hidden_size)?),
        ("llava" | "llava_next", v) => {
            spec.vision = Some(vision(path, v, VisionKind::Clip, &top, spec.hidden_size)?)
        }
        (_, Some(Value::Object(_))) => {
            notes.push(format!("{path}: the vision tower (vision_config) is not counted"));
        }
        _ => {}
    }
    if spec.family == crate::families::generic() {
        notes.push(format!(
            "unvalidated architecture: model_type \"{}\" estimated as a generic Llama-style decoder",
            ttype
        ));
        spec.unvalidated_type = Some(ttype.clone());
        spec.unmodelled = unmodelled_mixers(&r);
        if let Some(exact) = encoder_decoder_params(&top, &model_type)? {
            let generic = spec.param_groups().iter().map(|g| g.rows * g.cols * g.count).sum::<u64>();
            spec.extra_params = exact.saturating_sub(generic);
            notes.push(format!(
                "{model_type} is an encoder-decoder: activations as a {}-layer decoder, parameter count exact",
                spec.num_layers
            ));
        }
    }
    let defaulted = r.defaulted.borrow().clone();
    if !defaulted.is_empty() {
        notes.push(format!(
            "{path}: not in the file, taken from transformers' {ttype} config defaults: {}",
            defaulted.join(", ")
        ));
    }
    // a multimodal wrapper of a known text model but an unknown vision side: not validated
    if prefix == "text_config."
        && !matches!(
            model_type.as_str(),
            "gemma3" | "mistral3" | "qwen2_5_vl" | "qwen3_vl" | "llava" | "llava_next"
        )
        && spec.unvalidated_type.is_none()
    {
        spec.unvalidated_type = Some(model_type.clone());
        notes.push(format!(
            "unvalidated architecture: \"{model_type}\" wraps a {ttype} text model; the text part follows the {ttype} family, the rest is not modelled"
        ));
    }
    spec.hf_model_type = Some(model_type.clone());
    spec.quant = quantization(&top, &mut notes)?;
    if let Some(q) = spec.quant {
        notes.push(format!(
            "quantized checkpoint: weights stored as {}; parameters are counted unquantized",
            q.label()
        ));
    }
    let (head, note) = head_from_architecture(&top, spec.family, arch.as_deref())?;
    spec.head = head;
    if let Some(n) = note {
        notes.insert(0, n);
    }
    let facts = facts(&top, &r, arch.is_some(), dtype.is_some());
    Ok(Parsed { spec, notes, dtype, facts })
}

/// The object holding the model that is walked, its `model_type` and its key prefix: a nested
/// `text_config` (the language model of a multimodal file), SigLIP's `vision_config`, or the
/// top level.
fn modelled_part<'a>(
    obj: &'a serde_json::Map<String, Value>,
    model_type: &str,
    top: &Reader<'_>,
    empty: &'a serde_json::Map<String, Value>,
) -> Result<(&'a serde_json::Map<String, Value>, String, &'static str), ConfigError> {
    Ok(match obj.get("text_config") {
        _ if model_type == "siglip" => match obj.get("vision_config") {
            Some(Value::Object(v)) => (v, "siglip_vision_model".to_owned(), "vision_config."),
            Some(Value::Null) | None => (empty, "siglip_vision_model".to_owned(), "vision_config."),
            Some(other) => {
                return Err(top.invalid("vision_config", format!("expected an object, found {other}")));
            }
        },
        Some(Value::Object(t)) => {
            let tt = match t.get("model_type").and_then(Value::as_str) {
                Some(s) => s.to_owned(),
                None => match model_type {
                    "gemma3" => "gemma3_text".to_owned(),
                    "mistral3" => "mistral".to_owned(),
                    "llava" | "llava_next" => "llama".to_owned(),
                    "qwen2_5_vl" => "qwen2_5_vl_text".to_owned(),
                    "qwen3_vl" => "qwen3_vl_text".to_owned(),
                    other => other.to_owned(),
                },
            };
            (t, tt, "text_config.")
        }
        // LlavaConfig and Qwen3VLConfig build their class-default text model
        Some(Value::Null) | None if matches!(model_type, "llava" | "llava_next") => {
            (empty, "llama".to_owned(), "text_config.")
        }
        Some(Value::Null) | None if model_type == "qwen3_vl" => {
            (empty, "qwen3_vl_text".to_owned(), "text_config.")
        }
        Some(Value::Null) | None => (obj, model_type.to_owned(), ""),
        Some(other) => return Err(top.invalid("text_config", format!("expected an object, found {other}"))),
    })
}

/// A `siglip` file estimated as its vision model: under `SiglipModel` (or no `architectures`)
/// the text tower's parameters are counted too, its activations are not.
fn siglip_text_tower(
    path: &str,
    obj: &serde_json::Map<String, Value>,
    top: &Reader<'_>,
    arch: Option<&str>,
    spec: &mut TransformerSpec,
    notes: &mut Vec<String>,
) -> Result<(), ConfigError> {
    if arch.is_some_and(|a| a != "SiglipModel") {
        return Ok(());
    }
    let empty = serde_json::Map::new();
    let tobj = match obj.get("text_config") {
        Some(Value::Object(t)) => t,
        Some(Value::Null) | None => &empty,
        Some(other) => return Err(top.invalid("text_config", format!("expected an object, found {other}"))),
    };
    let t = Reader::new(path, tobj, "siglip_text_model", "text_config.", class_defaults("siglip_text_model"));
    spec.extra_params = crate::families::siglip::text_tower_params(&t)?;
    spec.unvalidated_type = Some("siglip (SiglipModel)".into());
    notes.push(format!(
        "SiglipModel: the text tower's parameters (with logit_scale and logit_bias: {}) are counted, but only the vision tower is walked (its activations as SiglipVisionModel's); an image classifier is architectures [\"SiglipForImageClassification\"]",
        spec.extra_params
    ));
    Ok(())
}

/// Where each key read came from: `model_type`, `architectures` and `torch_dtype` from the file
/// (or not), then every key the readers looked up, in the order first read.
fn facts(top: &Reader<'_>, r: &Reader<'_>, arch: bool, dtype: bool) -> Vec<super::header_check::Fact> {
    use super::config::{FROM_BUILTIN, FROM_FILE};
    use super::header_check::Fact;
    let mut facts = vec![
        Fact::new("model_type", FROM_FILE),
        Fact::new("architectures", if arch { FROM_FILE } else { FROM_BUILTIN }),
    ];
    if dtype {
        facts.push(Fact::new("torch_dtype", FROM_FILE));
    }
    for (key, from) in top.seen.borrow().iter().chain(r.seen.borrow().iter()) {
        if !facts.iter().any(|f| f.fact == *key) {
            facts.push(Fact::new(key.clone(), from));
        }
    }
    facts
}

/// Parses the text of a `config.json`. `path` is used in error messages only.
/// Returns the spec and the first note (the head assumed when `architectures` was absent, …).
pub fn parse_config(path: &str, text: &str) -> Result<(TransformerSpec, Option<String>), ConfigError> {
    let p = parse(path, text)?;
    Ok((p.spec, p.notes.into_iter().next()))
}

fn head_from_architecture(
    r: &Reader<'_>,
    family: Family,
    arch: Option<&str>,
) -> Result<(Head, Option<String>), ConfigError> {
    let default = crate::families::def(family).default_head();
    let Some(arch) = arch else {
        // an encoder's masked-LM head (logits over the vocabulary) is most of its step: say how
        // to ask for the classifier people fine-tune
        let hint = if default.0 == Head::MaskedLm {
            format!(
                " (a classifier: \"architectures\": [\"{}\"] with num_labels)",
                default.1.replace("ForMaskedLM", "ForSequenceClassification")
            )
        } else {
            String::new()
        };
        return Ok((
            default.0,
            Some(format!("no \"architectures\" in {}: assuming {}{hint}", r.path, default.1)),
        ));
    };
    let head = if arch.ends_with("ForCausalLM")
        || arch.ends_with("LMHeadModel")
        || arch.ends_with("ForConditionalGeneration")
    {
        Head::CausalLm
    } else if arch.ends_with("ForMaskedLM") {
        Head::MaskedLm
    } else if arch.ends_with("ForSequenceClassification") || arch.ends_with("ForImageClassification") {
        let num_labels = match r.obj.get("id2label") {
            Some(Value::Object(m)) if !m.is_empty() => m.len() as u64,
            _ => r.opt_u64("num_labels")?.unwrap_or(2),
        };
        Head::SequenceClassification { num_labels }
    } else if arch.ends_with("Model") {
        Head::Base
    } else {
        return Err(r.invalid(
            "architectures",
            format!(
                "\"{arch}\" is not a supported head (…ForCausalLM, …ForConditionalGeneration, …ForMaskedLM, …ForSequenceClassification, …ForImageClassification, …Model)"
            ),
        ));
    };
    Ok((head, None))
}

#[cfg(test)]
mod tests;

/// A note for a config whose layers are not all attention (state-space and linear-attention
/// hybrids: `layer_types`, `layers_block_type`, Nemotron-H's `hybrid_override_pattern`, pure
/// Mamba's `state_size`), which the generic decoder costs as attention layers.
fn unmodelled_mixers(r: &Reader<'_>) -> Option<String> {
    const ATTENTION: &[&str] =
        &["full_attention", "sliding_attention", "chunked_attention", "attention", "global"];
    let listed = |key: &str| -> Option<(usize, usize, String)> {
        let v = r.obj.get(key)?.as_array()?;
        let names: Vec<&str> = v.iter().filter_map(Value::as_str).collect();
        let other: Vec<&str> = names.iter().copied().filter(|n| !ATTENTION.contains(n)).collect();
        let kinds = {
            let mut k: Vec<&str> = other.clone();
            k.sort_unstable();
            k.dedup();
            k.join(", ")
        };
        (!other.is_empty()).then(|| (other.len(), names.len(), format!("{key}: {kinds}")))
    };
    let found = listed("layer_types").or_else(|| listed("layers_block_type")).or_else(|| {
        let p = r.obj.get("hybrid_override_pattern")?.as_str()?;
        let m = p.chars().filter(|&c| c == 'M').count();
        (m > 0).then(|| (m, p.len(), "hybrid_override_pattern: M (Mamba2)".to_owned()))
    });
    // else the keys of a state-space or convolution mixer (Mamba, Jamba, Bamba, Falcon-H1, LFM2)
    const MIXER_KEYS: &[&str] =
        &["state_size", "ssm_cfg", "ssm_state_size", "conv_L_cache", "linear_conv_kernel_dim"];
    let mixer_key =
        || r.obj.keys().find(|k| k.starts_with("mamba_") || MIXER_KEYS.contains(&k.as_str())).cloned();
    let (what, of) = match found {
        Some((n, l, what)) => (what, format!("{n} of {l}")),
        None => (mixer_key()?, "some or all".to_owned()),
    };
    Some(format!(
        "not modelled: state-space or linear-attention layers ({of} layers; {what}): the generic decoder costs them as attention layers, so parameters and activations can be far off (a model folder or Hub id with its safetensors gives the exact parameter count)"
    ))
}
