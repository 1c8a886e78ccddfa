//! Reading a HuggingFace `config.json` into a [`TransformerSpec`].
//!
//! Supported `model_type`s: `gpt2`, `bert`, `llama`, `mistral`, `qwen2`, `mixtral`. The task head
//! follows `architectures[0]` (e.g. `BertForMaskedLM`, `LlamaForCausalLM`); without it the default
//! head is the one HF's `AutoModelForCausalLM` / `BertForMaskedLM` would build, and the spec says so.

use super::{Family, Head, Moe, TransformerSpec};
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
        /// The key.
        key: &'static str,
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
    /// `model_type` not supported.
    #[error(
        "{path}: model_type \"{model_type}\" is not supported (supported: gpt2, bert, llama, mistral, qwen2, mixtral)"
    )]
    UnknownType {
        /// File name.
        path: String,
        /// The type read.
        model_type: String,
    },
}

struct Reader<'a> {
    path: &'a str,
    obj: &'a Map<String, Value>,
    model_type: String,
}

impl Reader<'_> {
    fn get(&self, key: &'static str) -> Option<&Value> {
        self.obj.get(key).filter(|v| !v.is_null())
    }

    fn invalid(&self, key: &str, msg: impl Into<String>) -> ConfigError {
        ConfigError::Invalid { path: self.path.to_owned(), key: key.to_owned(), msg: msg.into() }
    }

    fn opt_u64(&self, key: &'static str) -> Result<Option<u64>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if n <= (1u64 << 40) => Ok(Some(n)),
                Some(n) => Err(self.invalid(key, format!("{n} is implausibly large"))),
                None => Err(self.invalid(key, format!("expected a non-negative integer, found {v}"))),
            },
        }
    }

    fn u64(&self, key: &'static str) -> Result<u64, ConfigError> {
        self.opt_u64(key)?.ok_or_else(|| ConfigError::Missing {
            path: self.path.to_owned(),
            key,
            model_type: self.model_type.clone(),
        })
    }

    fn positive(&self, key: &'static str) -> Result<u64, ConfigError> {
        let n = self.u64(key)?;
        if n == 0 {
            return Err(self.invalid(key, "must be at least 1"));
        }
        Ok(n)
    }

    fn f64_or(&self, key: &'static str, default: f64) -> Result<f64, ConfigError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => match v.as_f64() {
                Some(x) if (0.0..1.0).contains(&x) => Ok(x),
                Some(x) => Err(self.invalid(key, format!("probability {x} is outside [0, 1)"))),
                None => Err(self.invalid(key, format!("expected a number, found {v}"))),
            },
        }
    }

    fn bool_or(&self, key: &'static str, default: bool) -> Result<bool, ConfigError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => {
                v.as_bool().ok_or_else(|| self.invalid(key, format!("expected true or false, found {v}")))
            }
        }
    }
}

/// Parses the text of a `config.json`. `path` is used in error messages only.
/// Returns the spec and, when `architectures` was absent, a note naming the head assumed.
pub fn parse_config(path: &str, text: &str) -> Result<(TransformerSpec, Option<String>), ConfigError> {
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
            return Err(ConfigError::Missing {
                path: path.to_owned(),
                key: "model_type",
                model_type: "?".into(),
            });
        }
    };
    let r = Reader { path, obj, model_type: model_type.clone() };
    let arch = match r.get("architectures") {
        Some(Value::Array(a)) => a.first().and_then(Value::as_str).map(str::to_owned),
        Some(other) => {
            return Err(r.invalid("architectures", format!("expected a list of names, found {other}")));
        }
        None => None,
    };
    let family = match model_type.as_str() {
        "gpt2" => Family::Gpt2,
        "bert" => Family::Bert,
        "llama" | "mistral" | "qwen2" | "mixtral" => Family::Llama,
        _ => {
            return Err(ConfigError::UnknownType { path: path.to_owned(), model_type });
        }
    };
    let spec = match family {
        Family::Gpt2 | Family::Megatron => {
            let h = r.positive("n_embd")?;
            let a = r.positive("n_head")?;
            check_divides(&r, "n_head", h, a)?;
            TransformerSpec {
                family,
                head: Head::CausalLm,
                hidden_size: h,
                num_layers: r.positive("n_layer")?,
                num_heads: a,
                num_kv_heads: a,
                head_dim: h / a,
                intermediate_size: r.opt_u64("n_inner")?.unwrap_or(4 * h),
                vocab_size: r.positive("vocab_size")?,
                max_position_embeddings: r.positive("n_positions")?,
                type_vocab_size: 0,
                tie_word_embeddings: r.bool_or("tie_word_embeddings", true)?,
                qkv_bias: true,
                o_bias: true,
                mlp_bias: true,
                attention_dropout: r.f64_or("attn_pdrop", 0.1)?,
                hidden_dropout: r.f64_or("resid_pdrop", 0.1)?,
                moe: None,
                sliding_window: None,
                ..TransformerSpec::default()
            }
        }
        Family::Bert => {
            let h = r.positive("hidden_size")?;
            let a = r.positive("num_attention_heads")?;
            check_divides(&r, "num_attention_heads", h, a)?;
            TransformerSpec {
                family,
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
                moe: None,
                sliding_window: None,
                ..TransformerSpec::default()
            }
        }
        _ => {
            let h = r.positive("hidden_size")?;
            let a = r.positive("num_attention_heads")?;
            let kv = r.opt_u64("num_key_value_heads")?.unwrap_or(a);
            if kv == 0 || a % kv != 0 {
                return Err(
                    r.invalid("num_key_value_heads", format!("{kv} must divide num_attention_heads ({a})"))
                );
            }
            let head_dim = match r.opt_u64("head_dim")? {
                Some(d) if d > 0 => d,
                _ => {
                    check_divides(&r, "num_attention_heads", h, a)?;
                    h / a
                }
            };
            let moe = if model_type == "mixtral" {
                let experts = r.positive("num_local_experts")?;
                let top_k = r.positive("num_experts_per_tok")?;
                if top_k > experts {
                    return Err(r.invalid(
                        "num_experts_per_tok",
                        format!("{top_k} exceeds num_local_experts ({experts})"),
                    ));
                }
                Some(Moe::routed(experts, top_k))
            } else {
                None
            };
            TransformerSpec {
                family,
                head: Head::CausalLm,
                hidden_size: h,
                num_layers: r.positive("num_hidden_layers")?,
                num_heads: a,
                num_kv_heads: kv,
                head_dim,
                intermediate_size: r.positive("intermediate_size")?,
                vocab_size: r.positive("vocab_size")?,
                max_position_embeddings: 0,
                type_vocab_size: 0,
                tie_word_embeddings: r.bool_or("tie_word_embeddings", false)?,
                qkv_bias: model_type == "qwen2" || r.bool_or("attention_bias", false)?,
                o_bias: model_type != "qwen2" && r.bool_or("attention_bias", false)?,
                mlp_bias: r.bool_or("mlp_bias", false)?,
                attention_dropout: r.f64_or("attention_dropout", 0.0)?,
                hidden_dropout: 0.0,
                moe,
                // Qwen2 carries a window but applies it only with use_sliding_window
                sliding_window: if model_type == "mistral"
                    || model_type == "mixtral"
                    || (model_type == "qwen2" && r.bool_or("use_sliding_window", false)?)
                {
                    r.opt_u64("sliding_window")?.filter(|w| *w > 0)
                } else {
                    None
                },
                ..TransformerSpec::default()
            }
        }
    };
    let (head, note) = head_from_architecture(&r, family, arch.as_deref())?;
    Ok((TransformerSpec { head, ..spec }, note))
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
    let head = if arch.ends_with("ForCausalLM") || arch == "GPT2LMHeadModel" {
        Head::CausalLm
    } else if arch.ends_with("ForMaskedLM") {
        Head::MaskedLm
    } else if arch.ends_with("ForSequenceClassification") {
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
                "\"{arch}\" is not a supported head (…ForCausalLM, …ForMaskedLM, …ForSequenceClassification, …Model)"
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
        let e = parse_config("x/config.json", r#"{"model_type":"llama","hidden_size":64}"#).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("x/config.json") && msg.contains("num_attention_heads"), "{msg}");
        let e = parse_config("y.json", r#"{"model_type":"t5"}"#).unwrap_err().to_string();
        assert!(e.contains("t5") && e.contains("not supported"), "{e}");
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
}
