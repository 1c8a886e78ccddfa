//! `estimate --mode infer --new-tokens N`: HF `generate` as the second inference engine (the
//! numbers themselves are checked against measured `generate` calls in `tests/accuracy.rs`).

use serde_json::Value;
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vramscope")).args(args).output().expect("binary runs")
}

fn json(args: &[&str]) -> Value {
    let out = run(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

fn b(v: &Value, k: &str) -> u64 {
    v["bytes"][k].as_u64().unwrap()
}

const BASE: [&str; 10] =
    ["estimate", "--model", "llama-3.1-8b", "--mode", "infer", "--batch", "4", "--seq", "2048", "--json"];

#[test]
fn generate_keeps_last_token_logits_and_grows_the_cache() {
    let scoring = json(&BASE);
    let generated = json(&[&BASE[..], &["--new-tokens", "512"]].concat());
    assert_eq!(generated["scenario"]["new_tokens"], 512);
    let g = &generated["generate"];
    assert_eq!(g["engine"], "hf-generate");
    assert_eq!(g["cached_tokens"], 2048 + 512 - 1);
    // the cache: 2 × 32 layers × 8 KV heads × 128 × 2 B per token and row
    let per_token = 2 * 32 * 8 * 128 * 2 * 4;
    assert_eq!(g["kv_cache_after_prompt"], per_token * 2048);
    assert_eq!(b(&generated, "kv_cache"), per_token * 2559);
    assert_eq!(b(&scoring, "kv_cache"), per_token * 2048);
    // last-token logits: 4 × 128,256 in bf16, not 4 × 2048 × 128,256 with an fp32 copy
    assert_eq!(g["last_token_logits"], 4 * 128_256 * 2);
    assert!(b(&generated, "peak_allocated") < b(&scoring, "peak_allocated"));
    // the scoring forward says what it is and where generation is
    let notes = scoring["notes"].to_string();
    assert!(notes.contains("scoring pass") && notes.contains("--new-tokens"), "{notes}");
    assert!(generated["notes"].to_string().contains("Hugging Face generate"));
    assert!(scoring.get("generate").is_none());
}

#[test]
fn a_long_generation_peaks_in_decode() {
    let v = json(&[
        "estimate",
        "--model",
        "llama-3.1-8b",
        "--mode",
        "infer",
        "--batch",
        "16",
        "--seq",
        "128",
        "--new-tokens",
        "8000",
        "--json",
    ]);
    assert!(v["peak_moment"].as_str().unwrap().starts_with("decode"), "{}", v["peak_moment"]);
    assert_eq!(b(&v, "kv_cache"), 2 * 32 * 8 * 128 * 2 * 16 * (128 + 8000 - 1));
}

#[test]
fn sliding_window_layers_keep_their_window_once_decoding() {
    // Gemma-3-1B: 5 of 6 layers slide over 512 tokens
    let v = json(&[
        "estimate",
        "--model",
        "gemma-3-1b",
        "--mode",
        "infer",
        "--seq",
        "2048",
        "--new-tokens",
        "64",
        "--json",
    ]);
    let per = 2 * 256 * 2; // K and V, one head of 256, bf16
    let layers = 26u64;
    let full = layers / 6; // every sixth layer is global: 5, 11, 17, 23
    let expect = per * (full * (2048 + 63) + (layers - full) * 512);
    assert_eq!(b(&v, "kv_cache"), expect);
}

#[test]
fn bad_generation_flags_are_one_line_errors() {
    for (args, want) in [
        (vec!["--mode", "train", "--new-tokens", "8"], "--new-tokens is for inference"),
        (vec!["--mode", "infer", "--new-tokens", "0"], "--new-tokens must be at least 1"),
        (
            vec!["--mode", "infer", "--seq", "1000", "--new-tokens", "30"],
            "exceeds the model's 1024 positions",
        ),
    ] {
        let out = run(&[&["estimate", "--model", "gpt2"][..], &args[..]].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want) && err.trim().lines().count() == 1, "{args:?}: {err}");
    }
    let out = run(&["estimate", "--model", "bert-base-uncased", "--mode", "infer", "--new-tokens", "8"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("causal language model"));
}
