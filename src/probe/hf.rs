//! An HF `config.json` equivalent of a [`TransformerSpec`] read from a RON preset (GPT-2, BERT and
//! the Llama-style presets: Llama, Mistral, Mixtral, Qwen2), so the probe can build the model with
//! `from_config`. Anything the spec holds that the chosen HF class cannot express is refused.

use super::ProbeError;
use crate::model::{Head, ModelSpec, TransformerSpec};
use serde_json::{Map, Value, json};

fn refuse(msg: impl Into<String>) -> ProbeError {
    ProbeError::Unsupported(msg.into())
}

/// The HF config dict (`model_type`, `architectures` and the architecture numbers).
pub fn config_from_spec(model: &ModelSpec, seq: u64) -> Result<Value, ProbeError> {
    let Some(t) = model.transformer() else {
        if model.net().is_some() {
            return Err(refuse(format!(
                "{}: a vision backbone built op by op (ResNet, ConvNeXt, Swin) is not probed yet; probe a transformer (preset, config.json or .ron)",
                model.name
            )));
        }
        return Err(refuse(format!(
            "{}: a layer table has no HF config to build the model from; probe a transformer (preset, config.json or .ron)",
            model.name
        )));
    };
    let extra = unexpressible(t);
    if let Some(what) = extra {
        return Err(refuse(format!("{}: the probe cannot express {what} in an HF config", model.name)));
    }
    let mut c = match t.family.id() {
        "gpt2" => gpt2(t)?,
        "bert" => bert(t)?,
        "llama" => llama_like(t, seq)?,
        _ => {
            let f = t.family;
            return Err(refuse(format!(
                "{}: family {f:?} has no HF class the probe can build from a RON preset; pass the model's config.json",
                model.name
            )));
        }
    };
    if let Some(o) = c.as_object_mut() {
        o.insert("tie_word_embeddings".into(), json!(t.tie_word_embeddings));
        o.insert("use_cache".into(), json!(false));
    }
    Ok(c)
}

/// The first feature of `t` no generated config can carry.
fn unexpressible(t: &TransformerSpec) -> Option<&'static str> {
    let checks: [(bool, &'static str); 10] = [
        (!t.layer_flags.is_empty(), "per-layer flags"),
        (t.mla.is_some(), "multi-head latent attention"),
        (t.vision.is_some(), "a vision tower"),
        (t.quant.is_some(), "a quantized weight format"),
        (t.attn_softcap.is_some() || t.final_softcap.is_some(), "soft-capping"),
        (t.parallel_norms != 0, "a parallel residual"),
        (t.extra_params != 0, "extra untyped parameters"),
        (t.rope_dim != 0 && t.rope_dim != t.head_dim, "partial rotary"),
        (t.dense_intermediate_size != 0, "dense layers in an MoE model"),
        (t.embedding_dropout != 0.0, "a separate embedding dropout"),
    ];
    checks.into_iter().find(|(bad, _)| *bad).map(|(_, what)| what)
}

fn arch(t: &TransformerSpec, prefix: &str, causal: &str) -> Result<(String, Option<u64>), ProbeError> {
    Ok(match t.head {
        Head::CausalLm => (causal.to_owned(), None),
        Head::MaskedLm if prefix == "Bert" => ("BertForMaskedLM".to_owned(), None),
        Head::MaskedLm => return Err(refuse(format!("a masked-LM head on a {prefix} model"))),
        Head::SequenceClassification { num_labels } => {
            (format!("{prefix}ForSequenceClassification"), Some(num_labels))
        }
        Head::Base => (format!("{prefix}Model"), None),
    })
}

fn finish(mut m: Map<String, Value>, model_type: &str, arch: (String, Option<u64>)) -> Value {
    m.insert("model_type".into(), json!(model_type));
    m.insert("architectures".into(), json!([arch.0]));
    if let Some(n) = arch.1 {
        m.insert("num_labels".into(), json!(n));
    }
    Value::Object(m)
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn gpt2(t: &TransformerSpec) -> Result<Value, ProbeError> {
    if t.num_heads * t.head_dim != t.hidden_size || t.num_kv_heads != t.num_heads {
        return Err(refuse("GPT-2 needs heads x head_dim = hidden size and no GQA"));
    }
    if !(t.qkv_bias && t.o_bias && t.mlp_bias) {
        return Err(refuse("GPT-2 without biases"));
    }
    let m = obj(json!({
        "vocab_size": t.vocab_size,
        "n_positions": t.max_position_embeddings,
        "n_embd": t.hidden_size,
        "n_layer": t.num_layers,
        "n_head": t.num_heads,
        "n_inner": t.intermediate_size,
        "activation_function": "gelu_new",
        "attn_pdrop": t.attention_dropout,
        "resid_pdrop": t.hidden_dropout,
        "embd_pdrop": t.hidden_dropout,
        "summary_first_dropout": t.hidden_dropout,
    }));
    Ok(finish(m, "gpt2", arch(t, "GPT2", "GPT2LMHeadModel")?))
}

fn bert(t: &TransformerSpec) -> Result<Value, ProbeError> {
    if t.num_heads * t.head_dim != t.hidden_size || t.num_kv_heads != t.num_heads {
        return Err(refuse("BERT needs heads x head_dim = hidden size and no GQA"));
    }
    let m = obj(json!({
        "vocab_size": t.vocab_size,
        "hidden_size": t.hidden_size,
        "num_hidden_layers": t.num_layers,
        "num_attention_heads": t.num_heads,
        "intermediate_size": t.intermediate_size,
        "hidden_act": "gelu",
        "hidden_dropout_prob": t.hidden_dropout,
        "attention_probs_dropout_prob": t.attention_dropout,
        "max_position_embeddings": t.max_position_embeddings,
        "type_vocab_size": t.type_vocab_size,
        "pad_token_id": 0,
    }));
    Ok(finish(m, "bert", arch(t, "Bert", "BertLMHeadModel")?))
}

/// Llama, Mistral (sliding window), Mixtral (routed experts) or Qwen2 (q/k/v biases only).
fn llama_like(t: &TransformerSpec, seq: u64) -> Result<Value, ProbeError> {
    if t.hidden_dropout != 0.0 {
        return Err(refuse("residual dropout on a Llama-style decoder"));
    }
    let mut m = obj(json!({
        "vocab_size": t.vocab_size,
        "hidden_size": t.hidden_size,
        "intermediate_size": t.intermediate_size,
        "num_hidden_layers": t.num_layers,
        "num_attention_heads": t.num_heads,
        "num_key_value_heads": t.num_kv_heads,
        "head_dim": t.head_dim,
        "hidden_act": "silu",
        // rotary models: positions are computed on the fly, this only bounds the inputs
        "max_position_embeddings": seq.max(4096),
        "attention_dropout": t.attention_dropout,
        "rms_norm_eps": 1e-5,
    }));
    let (model_type, prefix) = if let Some(moe) = t.moe {
        if moe.shared_experts != 0 || moe.shared_intermediate_size != 0 {
            return Err(refuse("shared experts (probe the model's own config.json)"));
        }
        if moe.router != crate::model::Router::Softmax {
            return Err(refuse("a router other than Mixtral's softmax top-k"));
        }
        if t.qkv_bias || t.o_bias || t.mlp_bias {
            return Err(refuse("biases on a Mixtral-style model"));
        }
        m.insert("num_local_experts".into(), json!(moe.experts));
        m.insert("num_experts_per_tok".into(), json!(moe.top_k));
        m.insert("sliding_window".into(), json!(t.sliding_window));
        ("mixtral", "Mixtral")
    } else if t.qkv_bias && !t.o_bias {
        if t.mlp_bias {
            return Err(refuse("MLP biases on a Qwen2-style model"));
        }
        m.insert("use_sliding_window".into(), json!(t.sliding_window.is_some()));
        m.insert("sliding_window".into(), json!(t.sliding_window));
        ("qwen2", "Qwen2")
    } else if let Some(w) = t.sliding_window {
        if t.qkv_bias || t.o_bias || t.mlp_bias {
            return Err(refuse("biases on a Mistral-style model"));
        }
        m.insert("sliding_window".into(), json!(w));
        ("mistral", "Mistral")
    } else {
        if t.qkv_bias != t.o_bias {
            return Err(refuse("LlamaConfig's attention_bias covers q, k, v and o together"));
        }
        m.insert("attention_bias".into(), json!(t.qkv_bias));
        m.insert("mlp_bias".into(), json!(t.mlp_bias));
        ("llama", "Llama")
    };
    Ok(finish(m, model_type, arch(t, prefix, &format!("{prefix}ForCausalLM"))?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::preset;

    fn cfg(name: &str) -> Result<Value, ProbeError> {
        config_from_spec(&preset::builtin(name).unwrap(), 512)
    }

    #[test]
    fn probe_configs_of_the_ron_presets() {
        let g = cfg("gpt2").unwrap();
        assert_eq!(g["model_type"], "gpt2");
        assert_eq!(g["architectures"][0], "GPT2LMHeadModel");
        assert_eq!(g["n_embd"], 768);
        let b = cfg("bert-base-uncased").unwrap();
        assert_eq!(b["architectures"][0], "BertForMaskedLM");
        assert_eq!(b["type_vocab_size"], 2);
        assert_eq!(cfg("mixtral-8x7b").unwrap()["model_type"], "mixtral");
        assert_eq!(cfg("mistral-7b").unwrap()["sliding_window"], 4096);
        assert_eq!(cfg("qwen2.5-7b").unwrap()["model_type"], "qwen2");
        let l = cfg("llama-3.1-8b").unwrap();
        assert_eq!((l["model_type"].as_str(), l["num_key_value_heads"].as_u64()), (Some("llama"), Some(8)));
    }

    #[test]
    fn probe_refuses_what_it_cannot_express() {
        let e = cfg("resnet-50").unwrap_err().to_string();
        assert!(e.contains("vision backbone built op by op"), "{e}");
        let e = cfg("gpt3-175b-megatron").unwrap_err().to_string();
        assert!(e.contains("Megatron"), "{e}");
    }
}
