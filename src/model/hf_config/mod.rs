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

use super::quant::WeightFormat;
use super::{Family, Head, Mla, Moe, Router, TransformerSpec, VisionKind, VisionTower, layer};
use serde_json::{Map, Value};
use thiserror::Error;

/// What can be wrong with a config file.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// Not valid JSON.
    #[error("{path}: not valid JSON at line {line}, column {column}: {msg}")]
    Json {
        /// File name.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// Parser message.
        msg: String,
    },
    /// Top level is not an object.
    #[error("{path}: expected a JSON object at the top level")]
    NotObject {
        /// File name.
        path: String,
    },
    /// A required key is missing.
    #[error("{path}: missing key \"{key}\" (needed for model_type \"{model_type}\")")]
    Missing {
        /// File name.
        path: String,
        /// The key (with its alternatives).
        key: String,
        /// The model type read.
        model_type: String,
    },
    /// A key has the wrong type or an impossible value.
    #[error("{path}: key \"{key}\": {msg}")]
    Invalid {
        /// File name.
        path: String,
        /// The key.
        key: String,
        /// What is wrong.
        msg: String,
    },
    /// A `model_type` without its own family that also lacks a key the generic decoder needs.
    #[error(
        "{path}: model_type \"{model_type}\" has no family of its own and cannot be estimated as a generic decoder: missing key \"{key}\""
    )]
    UnknownType {
        /// File name.
        path: String,
        /// The type read.
        model_type: String,
        /// The first missing key (with its alternatives).
        key: String,
    },
}

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
}

mod decoder;
mod defaults;
mod extras;

use decoder::decoder;
use defaults::class_defaults;
use extras::{encoder_decoder_params, quantization, vision};

struct Reader<'a> {
    path: &'a str,
    obj: &'a Map<String, Value>,
    defaults: Map<String, Value>,
    model_type: String,
    /// `"text_config."` etc. for key names in messages.
    prefix: &'static str,
    generic: bool,
    /// Core shape keys the file leaves out and the class default fills (said in a note).
    defaulted: std::cell::RefCell<Vec<String>>,
}

/// Shape keys whose class default is worth a note when a file leaves them out.
const CORE_KEYS: &[&str] = &[
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "intermediate_size",
    "moe_intermediate_size",
    "vocab_size",
    "head_dim",
    "num_experts",
    "num_local_experts",
    "n_routed_experts",
    "num_experts_per_tok",
];

impl<'a> Reader<'a> {
    fn new(path: &'a str, obj: &'a Map<String, Value>, model_type: &str, prefix: &'static str) -> Self {
        let defaults = match serde_json::from_str::<Value>(class_defaults(model_type)) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
        Reader {
            path,
            obj,
            defaults,
            model_type: model_type.to_owned(),
            prefix,
            generic: false,
            defaulted: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// The value of `key`: the file's (null meaning "unset", as HF passes `None`), else the
    /// config class default.
    fn get(&self, key: &str) -> Option<&Value> {
        match self.obj.get(key) {
            Some(v) => (!v.is_null()).then_some(v),
            None => {
                let d = self.defaults.get(key).filter(|v| !v.is_null());
                if let Some(v) = d
                    && CORE_KEYS.contains(&key)
                {
                    let entry = format!("{}{key}={v}", self.prefix);
                    let mut seen = self.defaulted.borrow_mut();
                    if !seen.contains(&entry) {
                        seen.push(entry);
                    }
                }
                d
            }
        }
    }

    fn name(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    fn invalid(&self, key: &str, msg: impl Into<String>) -> ConfigError {
        ConfigError::Invalid { path: self.path.to_owned(), key: self.name(key), msg: msg.into() }
    }

    fn missing(&self, keys: &[&str]) -> ConfigError {
        let key = match keys {
            [k] => self.name(k),
            [k, rest @ ..] => format!("{} (or {})", self.name(k), rest.join(", ")),
            [] => String::new(),
        };
        if self.generic {
            ConfigError::UnknownType { path: self.path.to_owned(), model_type: self.model_type.clone(), key }
        } else {
            ConfigError::Missing { path: self.path.to_owned(), key, model_type: self.model_type.clone() }
        }
    }

    fn opt_u64(&self, key: &str) -> Result<Option<u64>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if n <= (1u64 << 40) => Ok(Some(n)),
                Some(n) => Err(self.invalid(key, format!("{n} is implausibly large"))),
                None => Err(self.invalid(key, format!("expected a non-negative integer, found {v}"))),
            },
        }
    }

    fn u64_or(&self, key: &str, default: u64) -> Result<u64, ConfigError> {
        Ok(self.opt_u64(key)?.unwrap_or(default))
    }

    /// The first of `keys` present.
    fn any_u64(&self, keys: &[&str]) -> Result<Option<u64>, ConfigError> {
        // a key the file spells (under any of its aliases) wins over the class defaults
        if let Some(k) = keys.iter().find(|k| self.obj.get(**k).is_some_and(|v| !v.is_null())) {
            return self.opt_u64(k);
        }
        for k in keys {
            if let Some(n) = self.opt_u64(k)? {
                return Ok(Some(n));
            }
        }
        Ok(None)
    }

    /// The first of `keys` present, at least 1.
    fn positive_any(&self, keys: &[&str]) -> Result<u64, ConfigError> {
        let n = self.any_u64(keys)?.ok_or_else(|| self.missing(keys))?;
        if n == 0 {
            return Err(self.invalid(keys[0], "must be at least 1"));
        }
        Ok(n)
    }

    fn positive(&self, key: &str) -> Result<u64, ConfigError> {
        self.positive_any(&[key])
    }

    fn opt_f64(&self, key: &str) -> Result<Option<f64>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => {
                v.as_f64().map(Some).ok_or_else(|| self.invalid(key, format!("expected a number, found {v}")))
            }
        }
    }

    /// The fraction of each head that rotary rotates: transformers 5 writes it into
    /// `rope_parameters.partial_rotary_factor`, earlier versions as the top-level `key`
    /// (`partial_rotary_factor`, GPT-NeoX's `rotary_pct`); the file's nested value wins over both.
    fn rotary_fraction(&self, key: &str) -> Result<Option<f64>, ConfigError> {
        let nested = self
            .obj
            .get("rope_parameters")
            .and_then(|p| p.get("partial_rotary_factor"))
            .filter(|v| !v.is_null());
        match nested {
            Some(v) => v.as_f64().map(Some).ok_or_else(|| {
                self.invalid("rope_parameters.partial_rotary_factor", format!("expected a number, found {v}"))
            }),
            None => self.opt_f64(key),
        }
    }

    /// A probability (dropout), `default` when absent.
    fn f64_or(&self, key: &str, default: f64) -> Result<f64, ConfigError> {
        match self.opt_f64(key)? {
            None => Ok(default),
            Some(x) if (0.0..1.0).contains(&x) => Ok(x),
            Some(x) => Err(self.invalid(key, format!("probability {x} is outside [0, 1)"))),
        }
    }

    fn bool_or(&self, key: &str, default: bool) -> Result<bool, ConfigError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => {
                v.as_bool().ok_or_else(|| self.invalid(key, format!("expected true or false, found {v}")))
            }
        }
    }

    fn str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }

    /// A list of integers.
    fn u64_list(&self, key: &str) -> Result<Option<Vec<u64>>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| x.as_u64().ok_or_else(|| self.invalid(key, format!("expected integers, found {x}"))))
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(v) => Err(self.invalid(key, format!("expected a list of integers, found {v}"))),
        }
    }

    /// `layer_types` as "slides?" per layer (None when absent).
    fn layer_types(&self, layers: u64) -> Result<Option<Vec<bool>>, ConfigError> {
        let Some(v) = self.obj.get("layer_types").filter(|v| !v.is_null()) else { return Ok(None) };
        let Some(a) = v.as_array() else {
            return Err(self.invalid("layer_types", format!("expected a list of names, found {v}")));
        };
        if a.len() as u64 != layers {
            return Err(self.invalid(
                "layer_types",
                format!("{} entries for {layers} layers (num_hidden_layers)", a.len()),
            ));
        }
        a.iter()
            .map(|t| match t.as_str() {
                Some("sliding_attention") => Ok(true),
                Some(_) => Ok(false),
                None => Err(self.invalid("layer_types", format!("expected names, found {t}"))),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
}

/// Parses the text of a `config.json`. `path` is used in messages only.
pub fn parse(path: &str, text: &str) -> Result<Parsed, ConfigError> {
    let value: Value = serde_json::from_str(text).map_err(|e| ConfigError::Json {
        path: path.to_owned(),
        line: e.line(),
        column: e.column(),
        msg: e.to_string(),
    })?;
    let obj = value.as_object().ok_or_else(|| ConfigError::NotObject { path: path.to_owned() })?;
    let model_type = match obj.get("model_type") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(ConfigError::Invalid {
                path: path.to_owned(),
                key: "model_type".into(),
                msg: format!("expected a string, found {other}"),
            });
        }
        None => {
            return Err(ConfigError::Invalid {
                path: path.to_owned(),
                key: "model_type".into(),
                msg: "missing: a transformers config.json names its architecture (\"llama\", \"qwen3\", …)"
                    .into(),
            });
        }
    };
    let top = Reader::new(path, obj, &model_type, "");
    let arch = match obj.get("architectures") {
        Some(Value::Array(a)) => a.first().and_then(Value::as_str).map(str::to_owned),
        Some(Value::Null) | None => None,
        Some(other) => {
            return Err(top.invalid("architectures", format!("expected a list of names, found {other}")));
        }
    };
    // the language model: a nested text_config, or the top level
    let (tobj, ttype, prefix) = match obj.get("text_config") {
        Some(Value::Object(t)) => {
            let tt = match t.get("model_type").and_then(Value::as_str) {
                Some(s) => s.to_owned(),
                None => match model_type.as_str() {
                    "gemma3" => "gemma3_text".to_owned(),
                    "mistral3" => "mistral".to_owned(),
                    other => other.to_owned(),
                },
            };
            (t, tt, "text_config.")
        }
        Some(Value::Null) | None => (obj, model_type.clone(), ""),
        Some(other) => return Err(top.invalid("text_config", format!("expected an object, found {other}"))),
    };
    let mut r = Reader::new(path, tobj, &ttype, prefix);
    let mut notes = Vec::new();
    let dtype = ["torch_dtype", "dtype"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(Value::as_str))
        .or_else(|| ["torch_dtype", "dtype"].iter().find_map(|k| tobj.get(*k).and_then(Value::as_str)))
        .map(str::to_owned);

    let mut spec = match ttype.as_str() {
        "gpt2" => gpt2(&r)?,
        "bert" => bert(&r)?,
        "vit" => vit(&r)?,
        _ => {
            let family = crate::families::for_model_type(&ttype).unwrap_or_else(crate::families::generic);
            r.generic = family == crate::families::generic();
            decoder(&r, family, &ttype)?
        }
    };
    // tie_word_embeddings: text_config, then the top level, then the (wrapper) class default
    if !matches!(spec.family.id(), "gpt2" | "bert" | "vit") {
        let explicit = |o: &Map<String, Value>| o.get("tie_word_embeddings").and_then(Value::as_bool);
        let wrapper_default =
            if prefix.is_empty() { None } else { top.get("tie_word_embeddings").and_then(Value::as_bool) };
        spec.tie_word_embeddings = explicit(tobj)
            .or_else(|| explicit(obj))
            .or(wrapper_default)
            .or_else(|| r.get("tie_word_embeddings").and_then(Value::as_bool))
            .unwrap_or(true);
    }
    // vision tower of multimodal checkpoints
    match (model_type.as_str(), obj.get("vision_config")) {
        ("gemma3", v) => spec.vision = Some(vision(path, v, VisionKind::Siglip, &top, spec.hidden_size)?),
        ("mistral3", v) => spec.vision = Some(vision(path, v, VisionKind::Pixtral, &top, spec.hidden_size)?),
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
        && !matches!(model_type.as_str(), "gemma3" | "mistral3")
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
    Ok(Parsed { spec, notes, dtype })
}

/// Parses the text of a `config.json`. `path` is used in error messages only.
/// Returns the spec and the first note (the head assumed when `architectures` was absent, …).
pub fn parse_config(path: &str, text: &str) -> Result<(TransformerSpec, Option<String>), ConfigError> {
    let p = parse(path, text)?;
    Ok((p.spec, p.notes.into_iter().next()))
}

/// The registered family `id` (the readers below name their own).
fn family(id: &str) -> Family {
    crate::families::by_id(id).unwrap_or_default()
}

fn gpt2(r: &Reader<'_>) -> Result<TransformerSpec, ConfigError> {
    let h = r.positive("n_embd")?;
    let a = r.positive("n_head")?;
    check_divides(r, "n_head", h, a)?;
    Ok(TransformerSpec {
        family: family("gpt2"),
        head: Head::CausalLm,
        hidden_size: h,
        num_layers: r.positive("n_layer")?,
        num_heads: a,
        num_kv_heads: a,
        head_dim: h / a,
        intermediate_size: r.opt_u64("n_inner")?.unwrap_or(4 * h),
        vocab_size: r.positive("vocab_size")?,
        max_position_embeddings: r.positive("n_positions")?,
        tie_word_embeddings: r.bool_or("tie_word_embeddings", true)?,
        qkv_bias: true,
        o_bias: true,
        mlp_bias: true,
        attention_dropout: r.f64_or("attn_pdrop", 0.1)?,
        hidden_dropout: r.f64_or("resid_pdrop", 0.1)?,
        ..TransformerSpec::default()
    })
}

fn bert(r: &Reader<'_>) -> Result<TransformerSpec, ConfigError> {
    let h = r.positive("hidden_size")?;
    let a = r.positive("num_attention_heads")?;
    check_divides(r, "num_attention_heads", h, a)?;
    Ok(TransformerSpec {
        family: family("bert"),
        head: Head::MaskedLm,
        hidden_size: h,
        num_layers: r.positive("num_hidden_layers")?,
        num_heads: a,
        num_kv_heads: a,
        head_dim: h / a,
        intermediate_size: r.positive("intermediate_size")?,
        vocab_size: r.positive("vocab_size")?,
        max_position_embeddings: r.positive("max_position_embeddings")?,
        type_vocab_size: r.opt_u64("type_vocab_size")?.unwrap_or(2),
        tie_word_embeddings: r.bool_or("tie_word_embeddings", true)?,
        qkv_bias: true,
        o_bias: true,
        mlp_bias: true,
        attention_dropout: r.f64_or("attention_probs_dropout_prob", 0.1)?,
        hidden_dropout: r.f64_or("hidden_dropout_prob", 0.1)?,
        ..TransformerSpec::default()
    })
}

fn vit(r: &Reader<'_>) -> Result<TransformerSpec, ConfigError> {
    let h = r.positive("hidden_size")?;
    let a = r.positive("num_attention_heads")?;
    check_divides(r, "num_attention_heads", h, a)?;
    let patch = r.positive("patch_size")?;
    let image = r.positive("image_size")?;
    let side = image / patch;
    Ok(TransformerSpec {
        family: family("vit"),
        head: Head::Base,
        hidden_size: h,
        num_layers: r.positive("num_hidden_layers")?,
        num_heads: a,
        num_kv_heads: a,
        head_dim: h / a,
        intermediate_size: r.positive("intermediate_size")?,
        vocab_size: 0,
        max_position_embeddings: side * side + 1,
        rope_dim: patch,
        tie_word_embeddings: false,
        qkv_bias: r.bool_or("qkv_bias", true)?,
        o_bias: true,
        mlp_bias: true,
        attention_dropout: r.f64_or("attention_probs_dropout_prob", 0.0)?,
        hidden_dropout: r.f64_or("hidden_dropout_prob", 0.0)?,
        ..TransformerSpec::default()
    })
}

fn check_divides(r: &Reader<'_>, key: &'static str, h: u64, a: u64) -> Result<(), ConfigError> {
    if !h.is_multiple_of(a) {
        return Err(r.invalid(key, format!("{a} heads do not divide the hidden size {h}")));
    }
    Ok(())
}

fn head_from_architecture(
    r: &Reader<'_>,
    family: Family,
    arch: Option<&str>,
) -> Result<(Head, Option<String>), ConfigError> {
    let default = match family.id() {
        "bert" => (Head::MaskedLm, "BertForMaskedLM"),
        _ => (Head::CausalLm, "ForCausalLM"),
    };
    let Some(arch) = arch else {
        return Ok((default.0, Some(format!("no \"architectures\" in {}: assuming {}", r.path, default.1))));
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
