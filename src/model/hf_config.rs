//! Reading a HuggingFace `config.json` into a [`TransformerSpec`].
//!
//! Every `model_type` with the usual keys is read. The families with their own modelling rules
//! (gpt2, bert, llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, gemma, gemma2,
//! gemma3 / gemma3_text, mistral3, phi3, olmo2, gpt_neox, falcon, starcoder2, granite, smollm3,
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

/// Config-class defaults (transformers 5.24) of the keys read, by `model_type`.
fn class_defaults(model_type: &str) -> &'static str {
    match model_type {
        "llama" | "granite" => {
            r#"{"vocab_size":32000,"hidden_size":4096,"intermediate_size":11008,"num_hidden_layers":32,
            "num_attention_heads":32,"tie_word_embeddings":false,"attention_bias":false,"mlp_bias":false}"#
        }
        "mistral" => {
            r#"{"vocab_size":32000,"hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,
            "num_attention_heads":32,"num_key_value_heads":8,"tie_word_embeddings":false,"sliding_window":4096}"#
        }
        "mixtral" => {
            r#"{"vocab_size":32000,"hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,
            "num_attention_heads":32,"num_key_value_heads":8,"tie_word_embeddings":false,
            "num_local_experts":8,"num_experts_per_tok":2}"#
        }
        "qwen2" => {
            r#"{"vocab_size":151936,"hidden_size":4096,"intermediate_size":22016,"num_hidden_layers":32,
            "num_attention_heads":32,"tie_word_embeddings":false,"use_sliding_window":false,
            "sliding_window":4096,"max_window_layers":28}"#
        }
        "qwen2_moe" => {
            r#"{"vocab_size":151936,"hidden_size":2048,"intermediate_size":5632,"num_hidden_layers":24,
            "num_attention_heads":16,"num_key_value_heads":16,"tie_word_embeddings":false,
            "use_sliding_window":false,"max_window_layers":28,"decoder_sparse_step":1,
            "moe_intermediate_size":1408,"shared_expert_intermediate_size":5632,"num_experts_per_tok":4,
            "num_experts":60,"norm_topk_prob":false,"mlp_only_layers":[],"qkv_bias":true}"#
        }
        "qwen3" => {
            r#"{"vocab_size":151936,"hidden_size":4096,"intermediate_size":22016,"num_hidden_layers":32,
            "num_attention_heads":32,"num_key_value_heads":32,"head_dim":128,"tie_word_embeddings":false,
            "attention_bias":false,"use_sliding_window":false,"max_window_layers":28}"#
        }
        "qwen3_moe" => {
            r#"{"vocab_size":151936,"hidden_size":2048,"intermediate_size":6144,"num_hidden_layers":24,
            "num_attention_heads":32,"num_key_value_heads":4,"tie_word_embeddings":false,
            "attention_bias":false,"use_sliding_window":false,"max_window_layers":28,
            "decoder_sparse_step":1,"moe_intermediate_size":768,"num_experts_per_tok":8,
            "num_experts":128,"norm_topk_prob":false,"mlp_only_layers":[]}"#
        }
        "gemma" => {
            r#"{"vocab_size":256000,"hidden_size":3072,"intermediate_size":24576,"num_hidden_layers":28,
            "num_attention_heads":16,"num_key_value_heads":16,"head_dim":256,"tie_word_embeddings":true,
            "attention_bias":false}"#
        }
        "gemma2" => {
            r#"{"vocab_size":256000,"hidden_size":2304,"intermediate_size":9216,"num_hidden_layers":26,
            "num_attention_heads":8,"num_key_value_heads":4,"head_dim":256,"tie_word_embeddings":true,
            "attention_bias":false,"sliding_window":4096,"final_logit_softcapping":30.0,
            "attn_logit_softcapping":50.0}"#
        }
        "gemma3_text" => {
            r#"{"vocab_size":262208,"hidden_size":2304,"intermediate_size":9216,"num_hidden_layers":26,
            "num_attention_heads":8,"num_key_value_heads":4,"head_dim":256,"tie_word_embeddings":true,
            "attention_bias":false,"sliding_window":4096,"sliding_window_pattern":6}"#
        }
        "siglip_vision_model" => {
            r#"{"hidden_size":768,"intermediate_size":3072,"num_hidden_layers":12,"num_channels":3,
            "image_size":224,"patch_size":16,"vision_use_head":true}"#
        }
        "pixtral" => {
            r#"{"hidden_size":1024,"intermediate_size":4096,"num_hidden_layers":24,"num_channels":3,
            "image_size":1024,"patch_size":16}"#
        }
        "gemma3" => r#"{"tie_word_embeddings":true}"#,
        "mistral3" => {
            r#"{"tie_word_embeddings":true,"multimodal_projector_bias":false,"spatial_merge_size":2}"#
        }
        "phi3" => {
            r#"{"vocab_size":32064,"hidden_size":3072,"intermediate_size":8192,"num_hidden_layers":32,
            "num_attention_heads":32,"resid_pdrop":0.0,"tie_word_embeddings":false,"partial_rotary_factor":1.0}"#
        }
        "olmo2" => {
            r#"{"vocab_size":50304,"hidden_size":4096,"intermediate_size":11008,"num_hidden_layers":32,
            "num_attention_heads":32,"tie_word_embeddings":false,"attention_bias":false}"#
        }
        "gpt_neox" => {
            r#"{"vocab_size":50432,"hidden_size":6144,"intermediate_size":24576,"num_hidden_layers":44,
            "num_attention_heads":64,"rotary_pct":0.25,"use_parallel_residual":true,"attention_bias":true,
            "tie_word_embeddings":false,"hidden_dropout":0.0,"attention_dropout":0.0}"#
        }
        "falcon" => {
            r#"{"vocab_size":65024,"hidden_size":4544,"num_hidden_layers":32,"num_attention_heads":71,
            "multi_query":true,"parallel_attn":true,"new_decoder_architecture":false,"bias":false,
            "tie_word_embeddings":true,"hidden_dropout":0.0,"attention_dropout":0.0}"#
        }
        "starcoder2" => {
            r#"{"vocab_size":49152,"hidden_size":3072,"intermediate_size":12288,"num_hidden_layers":30,
            "num_attention_heads":24,"num_key_value_heads":2,"use_bias":true,"tie_word_embeddings":true,
            "residual_dropout":0.0}"#
        }
        "smollm3" => {
            r#"{"vocab_size":128256,"hidden_size":2048,"intermediate_size":11008,"num_hidden_layers":36,
            "num_attention_heads":16,"num_key_value_heads":4,"tie_word_embeddings":true,
            "use_sliding_window":false,"no_rope_layer_interval":4,"attention_bias":false,"mlp_bias":false}"#
        }
        "deepseek_v2" => {
            r#"{"vocab_size":102400,"hidden_size":4096,"intermediate_size":11008,"num_hidden_layers":32,
            "num_attention_heads":32,"tie_word_embeddings":false,"attention_bias":false,
            "first_k_dense_replace":0,"kv_lora_rank":512,"q_lora_rank":1536,"n_routed_experts":64,
            "n_shared_experts":2,"qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128,
            "moe_intermediate_size":1407,"moe_layer_freq":1}"#
        }
        "deepseek_v3" => {
            r#"{"vocab_size":129280,"hidden_size":7168,"intermediate_size":18432,"num_hidden_layers":61,
            "num_attention_heads":128,"tie_word_embeddings":false,"attention_bias":false,
            "first_k_dense_replace":3,"kv_lora_rank":512,"q_lora_rank":1536,"n_routed_experts":256,
            "n_shared_experts":1,"qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128,
            "moe_intermediate_size":2048,"num_experts_per_tok":8,"moe_layer_freq":1}"#
        }
        "gpt_oss" => {
            r#"{"vocab_size":201088,"hidden_size":2880,"intermediate_size":2880,"num_hidden_layers":36,
            "num_attention_heads":64,"num_key_value_heads":8,"head_dim":64,"tie_word_embeddings":false,
            "attention_bias":true,"sliding_window":128,"num_local_experts":128,"num_experts_per_tok":4}"#
        }
        "vit" => {
            r#"{"hidden_size":768,"intermediate_size":3072,"num_hidden_layers":12,"num_attention_heads":12,
            "hidden_dropout_prob":0.0,"attention_probs_dropout_prob":0.0,"image_size":224,"patch_size":16,
            "num_channels":3,"qkv_bias":true}"#
        }
        "t5" => r#"{"tie_word_embeddings":true}"#,
        "whisper" => r#"{"tie_word_embeddings":true}"#,
        _ => "{}",
    }
}

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
            let family = family_of(&ttype);
            r.generic = family == Family::Generic;
            decoder(&r, family, &ttype)?
        }
    };
    // tie_word_embeddings: text_config, then the top level, then the (wrapper) class default
    if !matches!(spec.family, Family::Gpt2 | Family::Bert | Family::Vit) {
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
    if spec.family == Family::Generic {
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

fn family_of(model_type: &str) -> Family {
    match model_type {
        "llama" | "mistral" | "qwen2" | "mixtral" | "qwen2_moe" => Family::Llama,
        "qwen3" | "qwen3_moe" => Family::Qwen3,
        "gemma" => Family::Gemma,
        "gemma2" => Family::Gemma2,
        "gemma3_text" | "gemma3" => Family::Gemma3,
        "phi3" => Family::Phi3,
        "olmo2" => Family::Olmo2,
        "gpt_neox" => Family::GptNeox,
        "falcon" => Family::Falcon,
        "starcoder2" => Family::Starcoder2,
        "granite" => Family::Granite,
        "smollm3" => Family::Smollm3,
        "deepseek_v2" | "deepseek_v3" => Family::Deepseek,
        "gpt_oss" => Family::GptOss,
        _ => Family::Generic,
    }
}

fn gpt2(r: &Reader<'_>) -> Result<TransformerSpec, ConfigError> {
    let h = r.positive("n_embd")?;
    let a = r.positive("n_head")?;
    check_divides(r, "n_head", h, a)?;
    Ok(TransformerSpec {
        family: Family::Gpt2,
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
        family: Family::Bert,
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
        family: Family::Vit,
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

/// Per-layer flags from per-layer sliding / dense / no-rope bits; empty when every layer is
/// alike (every layer sliding is `sliding_window` alone).
fn flags_of(sliding: &[bool], dense: &[bool], no_rope: &[bool], layers: u64) -> Vec<u8> {
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
            x
        })
        .collect();
    match f.first() {
        Some(&x) if (x == 0 || x == layer::SLIDING) && f.iter().all(|&y| y == x) => Vec::new(),
        _ => f,
    }
}

/// Every decoder family but GPT-2 (Llama-shaped keys, with the family's own extras).
fn decoder(r: &Reader<'_>, family: Family, mt: &str) -> Result<TransformerSpec, ConfigError> {
    let h = r.positive_any(&["hidden_size", "n_embd", "d_model"])?;
    let enc_dec = r.bool_or("is_encoder_decoder", false)?;
    let mut l = r.positive_any(&["num_hidden_layers", "n_layer", "num_layers", "encoder_layers"])?;
    let a = r.positive_any(&["num_attention_heads", "n_head", "num_heads", "encoder_attention_heads"])?;
    let kv = match family {
        Family::GptNeox => a,
        Family::Falcon => {
            if r.bool_or("new_decoder_architecture", false)? {
                r.u64_or("num_kv_heads", a)?
            } else if r.bool_or("multi_query", true)? {
                1
            } else {
                a
            }
        }
        _ => r.any_u64(&["num_key_value_heads", "num_kv_heads", "n_head_kv"])?.unwrap_or(a),
    };
    if kv == 0 || !a.is_multiple_of(kv) {
        return Err(r.invalid("num_key_value_heads", format!("{kv} must divide num_attention_heads ({a})")));
    }
    let mut head_dim = match r.any_u64(&["head_dim", "d_kv"])? {
        Some(d) if d > 0 && !matches!(family, Family::GptNeox | Family::Falcon) => d,
        _ => {
            check_divides(r, "num_attention_heads", h, a)?;
            h / a
        }
    };
    let mut i = match family {
        Family::Falcon => r.opt_u64("ffn_hidden_size")?.unwrap_or(4 * h),
        _ => r
            .any_u64(&[
                "intermediate_size",
                "ffn_dim",
                "d_ff",
                "n_inner",
                "encoder_ffn_dim",
                "ffn_hidden_size",
            ])?
            .unwrap_or(4 * h),
    };
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
    let mut s = TransformerSpec {
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
        ..TransformerSpec::default()
    };
    let n = l as usize;
    let mut sliding: Vec<bool> = Vec::new();
    let mut dense: Vec<bool> = Vec::new();
    let mut no_rope: Vec<bool> = Vec::new();
    let mut window = r.opt_u64("sliding_window")?.filter(|w| *w > 0);
    let all = vec![true; n];
    match mt {
        "qwen2" => {
            s.qkv_bias = true;
            s.o_bias = false;
        }
        "qwen2_moe" | "qwen3_moe" => {
            if mt == "qwen2_moe" {
                s.qkv_bias = r.bool_or("qkv_bias", true)?;
                s.o_bias = false;
            }
            let experts = r.positive_any(&["num_experts", "num_local_experts"])?;
            let top_k = r.positive("num_experts_per_tok")?;
            check_top_k(r, top_k, experts)?;
            let moe_i = r.positive("moe_intermediate_size")?;
            s.dense_intermediate_size = i;
            s.intermediate_size = moe_i;
            let step = r.u64_or("decoder_sparse_step", 1)?.max(1);
            let only = r.u64_list("mlp_only_layers")?.unwrap_or_default();
            dense = (0..l).map(|j| only.contains(&j) || !(j + 1).is_multiple_of(step)).collect();
            s.moe = Some(if mt == "qwen2_moe" {
                let shared = r.u64_or("shared_expert_intermediate_size", 0)?;
                Moe {
                    experts,
                    top_k,
                    shared_experts: u64::from(shared > 0),
                    shared_intermediate_size: shared,
                    router: Router::SoftmaxSharedGate,
                }
            } else {
                let router =
                    if r.bool_or("norm_topk_prob", false)? { Router::Softmax } else { Router::SoftmaxNoNorm };
                Moe { router, ..Moe::routed(experts, top_k) }
            });
        }
        "mixtral" => {
            let experts = r.positive("num_local_experts")?;
            let top_k = r.positive("num_experts_per_tok")?;
            check_top_k(r, top_k, experts)?;
            s.moe = Some(Moe::routed(experts, top_k));
        }
        "deepseek_v2" | "deepseek_v3" => {
            let mla = Mla {
                q_lora_rank: r.u64_or("q_lora_rank", 0)?,
                kv_lora_rank: r.positive("kv_lora_rank")?,
                qk_nope_head_dim: r.u64_or("qk_nope_head_dim", 0)?,
                qk_rope_head_dim: r.u64_or("qk_rope_head_dim", 0)?,
                v_head_dim: r.positive("v_head_dim")?,
            };
            head_dim = mla.qk_head_dim();
            s.head_dim = head_dim;
            s.num_kv_heads = a;
            s.mla = Some(mla);
            let experts = r.positive("n_routed_experts")?;
            let top_k = r.positive("num_experts_per_tok")?;
            check_top_k(r, top_k, experts)?;
            let moe_i = r.positive("moe_intermediate_size")?;
            let shared = r.u64_or("n_shared_experts", 0)?;
            s.dense_intermediate_size = i;
            s.intermediate_size = moe_i;
            let first = r.u64_or("first_k_dense_replace", 0)?;
            let freq = r.u64_or("moe_layer_freq", 1)?.max(1);
            dense = (0..l).map(|j| j < first || !j.is_multiple_of(freq)).collect();
            s.moe = Some(Moe {
                experts,
                top_k,
                shared_experts: shared,
                shared_intermediate_size: moe_i * shared,
                router: if mt == "deepseek_v3" { Router::SigmoidGroup } else { Router::Softmax },
            });
            window = None;
        }
        "gpt_oss" => {
            let experts = r.positive("num_local_experts")?;
            let top_k = r.positive_any(&["num_experts_per_tok", "experts_per_token"])?;
            check_top_k(r, top_k, experts)?;
            s.moe = Some(Moe { router: Router::TopkSoftmax, ..Moe::routed(experts, top_k) });
            s.qkv_bias = r.bool_or("attention_bias", true)?;
            s.o_bias = s.qkv_bias;
            sliding = r.layer_types(l)?.unwrap_or_else(|| (0..n).map(|j| (j + 1) % 2 != 0).collect());
        }
        "phi3" => {
            s.hidden_dropout = r.f64_or("resid_pdrop", 0.0)?;
        }
        "gpt_neox" => {
            s.qkv_bias = r.bool_or("attention_bias", true)?;
            s.o_bias = s.qkv_bias;
            s.mlp_bias = true;
            let pct = r.opt_f64("rotary_pct")?.unwrap_or(0.25);
            s.rope_dim = ((head_dim as f64) * pct) as u64;
            s.parallel_norms = if r.bool_or("use_parallel_residual", true)? { 2 } else { 0 };
            s.hidden_dropout = r.f64_or("hidden_dropout", 0.0)?;
            window = None;
        }
        "falcon" => {
            let b = r.bool_or("bias", false)?;
            (s.qkv_bias, s.o_bias, s.mlp_bias) = (b, b, b);
            s.parallel_norms = if r.bool_or("new_decoder_architecture", false)? {
                r.u64_or("num_ln_in_parallel_attn", 2)?.max(1)
            } else if r.bool_or("parallel_attn", true)? {
                1
            } else {
                0
            };
            s.hidden_dropout = r.f64_or("hidden_dropout", 0.0)?;
            window = None;
        }
        "starcoder2" => {
            let b = r.bool_or("use_bias", true)?;
            (s.qkv_bias, s.o_bias, s.mlp_bias) = (b, b, b);
            s.hidden_dropout = r.f64_or("residual_dropout", 0.0)?;
        }
        "smollm3" => {
            let uses_rope = match r.u64_list("no_rope_layers")? {
                Some(v) => v.iter().map(|&x| x != 0).collect::<Vec<_>>(),
                None => {
                    let k = r.u64_or("no_rope_layer_interval", 4)?.max(1);
                    (0..l).map(|j| !(j + 1).is_multiple_of(k)).collect()
                }
            };
            no_rope = uses_rope.iter().map(|u| !u).collect();
            let sw = r.bool_or("use_sliding_window", false)? && window.is_some();
            sliding = match r.layer_types(l)? {
                Some(t) if sw => t,
                _ => uses_rope.iter().map(|u| sw && !u).collect(),
            };
        }
        "gemma" | "olmo2" | "llama" | "granite" => window = None,
        _ => {}
    }
    // sliding layers
    match mt {
        "mistral" | "mixtral" | "starcoder2" | "phi3" => sliding = all.clone(),
        "qwen2" | "qwen2_moe" | "qwen3" | "qwen3_moe" => {
            if r.bool_or("use_sliding_window", false)? && window.is_some() {
                let from = r.u64_or("max_window_layers", 28)?;
                sliding = r.layer_types(l)?.unwrap_or_else(|| (0..l).map(|j| j >= from).collect());
            } else {
                window = None;
            }
        }
        "gemma2" => sliding = r.layer_types(l)?.unwrap_or_else(|| (0..n).map(|j| (j + 1) % 2 != 0).collect()),
        "gemma3_text" | "gemma3" => {
            let p = r.any_u64(&["sliding_window_pattern", "_sliding_window_pattern"])?.unwrap_or(6).max(1);
            sliding =
                r.layer_types(l)?.unwrap_or_else(|| (0..l).map(|j| !(j + 1).is_multiple_of(p)).collect());
        }
        "gpt_oss" | "smollm3" => {}
        _ if family == Family::Generic => {
            sliding = match r.layer_types(l)? {
                Some(t) => t,
                None if r.bool_or("use_sliding_window", true)? => all.clone(),
                None => Vec::new(),
            }
        }
        _ => {}
    }
    if !sliding.iter().any(|&x| x) {
        window = None;
    }
    if window.is_none() {
        sliding.clear();
    }
    s.sliding_window = window;
    s.layer_flags = flags_of(&sliding, &dense, &no_rope, l);
    if matches!(family, Family::Gemma2 | Family::Gemma3) {
        s.attn_softcap = r.opt_f64("attn_logit_softcapping")?.filter(|x| *x > 0.0);
        s.final_softcap = r.opt_f64("final_logit_softcapping")?.filter(|x| *x > 0.0);
    }
    if s.rope_dim == 0
        && let Some(f) = r.opt_f64("partial_rotary_factor")?
        && f > 0.0
        && f < 1.0
    {
        s.rope_dim = ((head_dim as f64) * f) as u64;
    }
    if family == Family::Generic {
        s.hidden_dropout = r.f64_or("hidden_dropout", 0.0)?;
    }
    Ok(s)
}

fn check_top_k(r: &Reader<'_>, top_k: u64, experts: u64) -> Result<(), ConfigError> {
    if top_k > experts {
        return Err(
            r.invalid("num_experts_per_tok", format!("{top_k} exceeds the number of experts ({experts})"))
        );
    }
    Ok(())
}

/// The vision tower of a multimodal checkpoint (`vision_config`, class defaults for missing keys).
fn vision(
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
    };
    let r = Reader::new(path, obj, vt, "vision_config.");
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
    };
    Ok(VisionTower {
        kind,
        hidden_size: h,
        intermediate_size: i,
        num_layers: r.positive("num_hidden_layers")?,
        patch_size: r.positive("patch_size")?,
        image_size: r.positive("image_size")?,
        num_channels: r.positive("num_channels")?,
        projector_params,
    })
}

/// Exact parameter count of the encoder-decoder types counted as generic (t5, whisper).
fn encoder_decoder_params(r: &Reader<'_>, mt: &str) -> Result<Option<u64>, ConfigError> {
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
fn quantization(r: &Reader<'_>, notes: &mut Vec<String>) -> Result<Option<WeightFormat>, ConfigError> {
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
    let default = match family {
        Family::Bert => (Head::MaskedLm, "BertForMaskedLM"),
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
mod tests {
    use super::*;

    #[test]
    fn llama_without_head_dim_and_defaults() {
        let text = r#"{"model_type":"mixtral","hidden_size":4096,"num_attention_heads":32,
            "num_key_value_heads":8,"num_hidden_layers":32,"intermediate_size":14336,
            "vocab_size":32000,"num_local_experts":8,"num_experts_per_tok":2,"head_dim":null,
            "architectures":["MixtralForCausalLM"]}"#;
        let (spec, note) = parse_config("c.json", text).unwrap();
        assert_eq!(spec.head_dim, 128);
        assert_eq!(spec.moe, Some(Moe::routed(8, 2)));
        assert!(note.is_none());
    }

    #[test]
    fn errors_name_file_and_key() {
        let e = parse_config("x/config.json", r#"{"model_type":"bert","hidden_size":64}"#).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("x/config.json") && msg.contains("num_attention_heads"), "{msg}");
        let e = parse_config("y.json", r#"{"model_type":"t5"}"#).unwrap_err().to_string();
        assert!(e.contains("y.json") && e.contains("t5") && e.contains("hidden_size"), "{e}");
        let e = parse_config("z.json", "{\n  \"model_type\": ,\n}").unwrap_err().to_string();
        assert!(e.contains("z.json") && e.contains("line 2"), "{e}");
        let e = parse_config("w.json", r#"{"model_type":"gpt2","n_embd":"768"}"#).unwrap_err().to_string();
        assert!(e.contains("n_embd"), "{e}");
    }

    #[test]
    fn head_follows_architectures() {
        let base = r#""model_type":"bert","hidden_size":64,"num_attention_heads":4,"num_hidden_layers":2,
            "intermediate_size":128,"vocab_size":100,"max_position_embeddings":64"#;
        let (s, _) =
            parse_config("b", &format!(r#"{{{base},"architectures":["BertForSequenceClassification"]}}"#))
                .unwrap();
        assert_eq!(s.head, Head::SequenceClassification { num_labels: 2 });
        let (s, note) = parse_config("b", &format!("{{{base}}}")).unwrap();
        assert_eq!(s.head, Head::MaskedLm);
        assert!(note.unwrap().contains("BertForMaskedLM"));
    }

    #[test]
    fn missing_keys_take_the_class_defaults() {
        // gemma3 with a minimal text_config: Gemma3TextConfig defaults (vocab 262208, 8 heads,
        // head_dim 256, window 4096, full attention every 6th layer), tied by Gemma3Config
        let text = r#"{"model_type":"gemma3","architectures":["Gemma3ForConditionalGeneration"],
            "text_config":{"hidden_size":2560,"intermediate_size":10240,"num_hidden_layers":12},
            "vision_config":{"hidden_size":1152,"intermediate_size":4304,"num_hidden_layers":27,
            "image_size":896,"patch_size":14,"vision_use_head":false},"torch_dtype":"bfloat16"}"#;
        let p = parse("c.json", text).unwrap();
        let s = &p.spec;
        assert_eq!(
            (s.family, s.vocab_size, s.num_heads, s.num_kv_heads, s.head_dim),
            (Family::Gemma3, 262208, 8, 4, 256)
        );
        assert_eq!(s.sliding_window, Some(4096));
        let full: Vec<usize> = s
            .layer_flags
            .iter()
            .enumerate()
            .filter(|(_, f)| **f & layer::SLIDING == 0)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(full, vec![5, 11]);
        assert!(s.tie_word_embeddings && s.head == Head::CausalLm);
        assert_eq!(s.vision.unwrap().projector_params, 1152 * 2560 + 1152);
        assert_eq!(p.dtype.as_deref(), Some("bfloat16"));
    }

    #[test]
    fn every_layer_sliding_keeps_flags_empty() {
        let base = r#""model_type":"mistral","hidden_size":64,"num_attention_heads":4,"num_key_value_heads":4,"num_hidden_layers":3,
            "intermediate_size":128,"vocab_size":100,"architectures":["MistralForCausalLM"]"#;
        let s = parse("m", &format!("{{{base}}}")).unwrap().spec;
        assert_eq!((s.sliding_window, s.layer_flags.len()), (Some(4096), 0));
        let s = parse("m", &format!(r#"{{{base},"sliding_window":null}}"#)).unwrap().spec;
        assert_eq!(s.sliding_window, None);
        let s = parse(
            "m",
            &format!(
                r#"{{{base},"model_type":"qwen3","use_sliding_window":true,"sliding_window":32,"max_window_layers":1}}"#
            )
            .replace(r#""model_type":"mistral","#, ""),
        )
        .unwrap()
        .spec;
        assert_eq!(
            (s.sliding_window, s.layer_flags.clone()),
            (Some(32), vec![0, layer::SLIDING, layer::SLIDING])
        );
    }

    #[test]
    fn quantization_formats_and_unknown_methods() {
        let base = r#""model_type":"llama","hidden_size":64,"num_attention_heads":4,"num_hidden_layers":2,
            "intermediate_size":128,"vocab_size":100,"architectures":["LlamaForCausalLM"]"#;
        let q = |cfg: &str| parse("q.json", &format!(r#"{{{base},"quantization_config":{cfg}}}"#));
        use WeightFormat as W;
        assert_eq!(
            q(r#"{"quant_method":"gptq","bits":4,"group_size":-1}"#).unwrap().spec.quant,
            Some(W::Gptq { bits: 4, group_size: 1 << 32 })
        );
        assert_eq!(
            q(r#"{"quant_method":"awq","w_bit":4,"q_group_size":64}"#).unwrap().spec.quant,
            Some(W::Awq { bits: 4, group_size: 64 })
        );
        assert_eq!(
            q(r#"{"quant_method":"bitsandbytes","load_in_8bit":true}"#).unwrap().spec.quant,
            Some(W::Bnb8)
        );
        assert_eq!(
            q(r#"{"quant_method":"fp8","weight_block_size":[128,128]}"#).unwrap().spec.quant,
            Some(W::Fp8 { block: 128 })
        );
        let ct = r#"{"quant_method":"compressed-tensors","config_groups":{"group_0":{"weights":{"num_bits":8,"type":"float"}}}}"#;
        assert_eq!(q(ct).unwrap().spec.quant, Some(W::Fp8 { block: 0 }));
        let p = q(r#"{"quant_method":"bitsandbytes","load_in_4bit":true,"bnb_4bit_use_double_quant":true}"#)
            .unwrap();
        assert_eq!(p.spec.quant, Some(W::Bnb4 { double_quant: true }));
        assert!(p.notes.iter().any(|n| n.contains("bitsandbytes 4-bit")), "{:?}", p.notes);
        let p = q(r#"{"quant_method":"hqq"}"#).unwrap();
        assert_eq!(p.spec.quant, None);
        assert!(
            p.notes.iter().any(|n| n.contains("q.json") && n.contains("hqq") && n.contains("not modelled")),
            "{:?}",
            p.notes
        );
    }

    #[test]
    fn unknown_types_are_generic_decoders() {
        let text = r#"{"model_type":"internlm2","hidden_size":64,"num_attention_heads":4,"num_hidden_layers":2,
            "intermediate_size":128,"vocab_size":100,"architectures":["InternLM2ForCausalLM"],
            "tie_word_embeddings":false}"#;
        let p = parse("g.json", text).unwrap();
        assert_eq!(p.spec.family, Family::Generic);
        assert_eq!(p.spec.unvalidated_type.as_deref(), Some("internlm2"));
        assert!(p.notes[0].contains("unvalidated architecture: model_type \"internlm2\""), "{:?}", p.notes);
        let e = parse("g.json", r#"{"model_type":"mamba","hidden_size":64}"#).unwrap_err().to_string();
        assert!(e.contains("g.json") && e.contains("mamba") && e.contains("num_hidden_layers"), "{e}");
    }
}
