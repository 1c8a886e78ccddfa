//! Reading a HuggingFace `config.json`: a [`Reader`] over one object of it, with the config
//! class's defaults for missing keys and errors that name the file and the key ([`ConfigError`]).
//! The families read their own keys through it ([`crate::families::FamilyDef::read_config`]).

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

pub struct Reader<'a> {
    /// The file, for messages.
    pub path: &'a str,
    /// The object read (the top level, or a nested `text_config` / `vision_config`).
    pub obj: &'a Map<String, Value>,
    defaults: Map<String, Value>,
    /// Its `model_type`.
    pub model_type: String,
    /// `"text_config."` etc. for key names in messages.
    prefix: &'static str,
    /// Read as the generic decoder (a missing key is an unknown type's error).
    pub generic: bool,
    /// Core shape keys the file leaves out and the class default fills (said in a note).
    pub defaulted: std::cell::RefCell<Vec<String>>,
    /// Every key read and where its value came from (`config.json`, the class default, or
    /// neither: vramscope's own default), in the order first read.
    pub seen: std::cell::RefCell<Vec<(String, &'static str)>>,
}

/// A key's value was in the file.
pub const FROM_FILE: &str = "config.json";
/// A key's value was the config class's default (transformers).
pub const FROM_CLASS_DEFAULT: &str = "class default";
/// Neither: the feature is off, or vramscope's own default applies.
pub const FROM_BUILTIN: &str = "vramscope default";

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
    /// A reader of `obj`, with the config class's defaults (`defaults`, JSON) for missing keys.
    pub fn new(
        path: &'a str,
        obj: &'a Map<String, Value>,
        model_type: &str,
        prefix: &'static str,
        defaults: &str,
    ) -> Self {
        let defaults = match serde_json::from_str::<Value>(defaults) {
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
            seen: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// The value of `key`: the file's (null meaning "unset", as HF passes `None`), else the
    /// config class default.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self.obj.get(key) {
            Some(v) => {
                self.saw(key, FROM_FILE);
                (!v.is_null()).then_some(v)
            }
            None => {
                let d = self.defaults.get(key).filter(|v| !v.is_null());
                self.saw(key, if d.is_some() { FROM_CLASS_DEFAULT } else { FROM_BUILTIN });
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

    /// Whether `key` is set, by the file or the class defaults; records nothing (a probe for
    /// which of several spellings a file uses).
    pub fn has(&self, key: &str) -> bool {
        let set = |v: Option<&Value>| v.is_some_and(|v| !v.is_null());
        set(self.obj.get(key)) || set(self.defaults.get(key))
    }

    fn saw(&self, key: &str, from: &'static str) {
        let name = self.name(key);
        let mut seen = self.seen.borrow_mut();
        if !seen.iter().any(|(k, _)| *k == name) {
            seen.push((name, from));
        }
    }

    pub fn name(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    pub fn invalid(&self, key: &str, msg: impl Into<String>) -> ConfigError {
        ConfigError::Invalid { path: self.path.to_owned(), key: self.name(key), msg: msg.into() }
    }

    pub fn missing(&self, keys: &[&str]) -> ConfigError {
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

    pub fn opt_u64(&self, key: &str) -> Result<Option<u64>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if n <= (1u64 << 40) => Ok(Some(n)),
                Some(n) => Err(self.invalid(key, format!("{n} is implausibly large"))),
                None => Err(self.invalid(key, format!("expected a non-negative integer, found {v}"))),
            },
        }
    }

    pub fn u64_or(&self, key: &str, default: u64) -> Result<u64, ConfigError> {
        Ok(self.opt_u64(key)?.unwrap_or(default))
    }

    /// The first of `keys` present.
    pub fn any_u64(&self, keys: &[&str]) -> Result<Option<u64>, ConfigError> {
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
    pub fn positive_any(&self, keys: &[&str]) -> Result<u64, ConfigError> {
        let n = self.any_u64(keys)?.ok_or_else(|| self.missing(keys))?;
        if n == 0 {
            return Err(self.invalid(keys[0], "must be at least 1"));
        }
        Ok(n)
    }

    pub fn positive(&self, key: &str) -> Result<u64, ConfigError> {
        self.positive_any(&[key])
    }

    pub fn opt_f64(&self, key: &str) -> Result<Option<f64>, ConfigError> {
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
    pub fn rotary_fraction(&self, key: &str) -> Result<Option<f64>, ConfigError> {
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
    pub fn f64_or(&self, key: &str, default: f64) -> Result<f64, ConfigError> {
        match self.opt_f64(key)? {
            None => Ok(default),
            Some(x) if (0.0..1.0).contains(&x) => Ok(x),
            Some(x) => Err(self.invalid(key, format!("probability {x} is outside [0, 1)"))),
        }
    }

    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool, ConfigError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => {
                v.as_bool().ok_or_else(|| self.invalid(key, format!("expected true or false, found {v}")))
            }
        }
    }

    pub fn str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }

    /// A list of integers.
    pub fn u64_list(&self, key: &str) -> Result<Option<Vec<u64>>, ConfigError> {
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
    pub fn layer_types(&self, layers: u64) -> Result<Option<Vec<bool>>, ConfigError> {
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

/// A `config.json`'s text as strict JSON: Python's `json.dumps` writes the non-finite floats
/// bare (`Infinity`, `-Infinity`, `NaN`: transformers 4's Mamba2 and hybrid configs carry
/// `"time_step_limit": [0.0, Infinity]`), which JSON has no word for. Outside strings they
/// become `null` (no estimate reads them); the text is borrowed when there are none.
pub fn python_json(text: &str) -> std::borrow::Cow<'_, str> {
    const WORDS: [&str; 3] = ["-Infinity", "Infinity", "NaN"];
    let b = text.as_bytes();
    let (mut out, mut last, mut i, mut in_str) = (String::new(), 0, 0, false);
    while i < b.len() {
        match b[i] {
            b'\\' if in_str => i += 1,
            b'"' => in_str = !in_str,
            _ if !in_str => {
                if let Some(w) = WORDS.iter().find(|w| b[i..].starts_with(w.as_bytes())) {
                    out.push_str(&text[last..i]);
                    out.push_str("null");
                    i += w.len();
                    last = i;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    if last == 0 {
        return std::borrow::Cow::Borrowed(text);
    }
    out.push_str(&text[last..]);
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod python_json_tests {
    use super::python_json;

    #[test]
    fn bare_non_finite_floats_become_null_outside_strings_only() {
        let t = r#"{"time_step_limit": [0.0, Infinity], "a": -Infinity, "b": NaN, "s": "Infinity \"NaN\""}"#;
        let v: serde_json::Value = serde_json::from_str(&python_json(t)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(v["time_step_limit"][1], serde_json::Value::Null);
        assert!(v["a"].is_null() && v["b"].is_null());
        assert_eq!(v["s"], "Infinity \"NaN\"");
        assert!(matches!(python_json("{\"x\": 1}"), std::borrow::Cow::Borrowed(_)));
    }
}
