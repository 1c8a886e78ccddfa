//! A checkpoint's `generation_config.json`: what HF `generate` does with it by default that
//! changes the memory of an inference run. Read as facts and notes; the estimate's own settings
//! (`--batch`, `--new-tokens`) stay what the command names, so every number stays reproducible.

use super::header_check::Fact;
use serde_json::Value;

/// Where these facts come from.
pub const FROM: &str = "generation_config.json";

/// The facts and notes of a `generation_config.json`'s text (`file` names it in the notes); a
/// file that is not a JSON object gives one note and nothing else.
pub fn read(file: &str, text: &str) -> (Vec<Fact>, Vec<String>) {
    let Ok(Value::Object(o)) = serde_json::from_str::<Value>(&crate::model::config::python_json(text)) else {
        return (Vec::new(), vec![format!("{file}: not a JSON object, ignored")]);
    };
    let mut facts = Vec::new();
    let mut notes = Vec::new();
    for key in ["max_length", "max_new_tokens", "num_beams", "num_return_sequences", "cache_implementation"] {
        if let Some(v) = o.get(key).filter(|v| !v.is_null()) {
            let value = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
            facts.push(Fact { fact: key.into(), from: FROM.into(), value: Some(value) });
        }
    }
    let n = |k: &str| o.get(k).and_then(Value::as_u64).unwrap_or(1);
    let (beams, returned) = (n("num_beams"), n("num_return_sequences"));
    if beams > 1 || returned > 1 {
        let rows = beams.max(returned);
        notes.push(format!(
            "{file}: generate keeps {rows} sequences per prompt by default (num_beams {beams}, num_return_sequences {returned}): its KV cache and activations are those of a batch {rows} times the prompts; the estimate's --batch counts sequences, so name prompts × {rows} there"
        ));
    }
    if let Some(c) = o.get("cache_implementation").and_then(Value::as_str)
        && matches!(c, "static" | "hybrid" | "sliding_window" | "offloaded_static")
    {
        notes.push(format!(
            "{file}: cache_implementation \"{c}\": generate allocates the KV cache for the whole max_cache_len at the start (the estimate grows it token by token, as the default dynamic cache does)"
        ));
    }
    (facts, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beams_and_a_static_cache_are_named_and_the_rest_is_facts() {
        let (f, n) = read(
            "g.json",
            r#"{"max_new_tokens": 256, "num_beams": 4, "cache_implementation": "static", "eos_token_id": [1, 2]}"#,
        );
        let keys: Vec<&str> = f.iter().map(|x| x.fact.as_str()).collect();
        assert_eq!(keys, ["max_new_tokens", "num_beams", "cache_implementation"]);
        assert_eq!(f[2].value.as_deref(), Some("static"));
        assert_eq!(n.len(), 2, "{n:?}");
        assert!(n[0].contains("4 sequences per prompt") && n[1].contains("\"static\""), "{n:?}");
        let (f, n) = read("g.json", r#"{"do_sample": true, "temperature": 0.6}"#);
        assert!(f.is_empty() && n.is_empty());
        let (f, n) = read("g.json", "[1, 2");
        assert!(f.is_empty() && n[0].contains("not a JSON object"));
    }
}
