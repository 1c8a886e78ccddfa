//! `vramscope probe` (the PyTorch script) and `vramscope calibrate` (measured beside predicted,
//! calibration profiles). Tests that need a tool are `#[ignore]`d with the tool in the reason, so
//! a missing tool shows as ignored, never as a pass: the script checks under `python3` (`.ci/run`
//! runs them: `cargo test --test probe -- --ignored python3`), and the end-to-end runs, which need
//! a Python with torch and transformers (`VRAMSCOPE_PYTHON=/path/to/python cargo test --test probe
//! -- --ignored`).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vramscope")).args(args).output().expect("binary runs")
}

fn ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

fn data(p: &str) -> String {
    format!("{}/tests/data/{p}", env!("CARGO_MANIFEST_DIR"))
}

/// A fresh folder for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vramscope-probe-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn usage_error(args: &[&str], needle: &str) {
    let out = run(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line, got {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
}

/// Writes the probe for `flags` to `dir/{name}.py` and returns the script text.
fn probe_script(dir: &Path, name: &str, flags: &[String]) -> String {
    let out = dir.join(format!("{name}.py"));
    let out_s = out.to_string_lossy().to_string();
    let mut args = vec!["probe"];
    args.extend(flags.iter().map(String::as_str));
    args.extend_from_slice(&["-o", &out_s]);
    let msg = ok(&args);
    assert!(msg.contains("vramscope calibrate"), "{msg}");
    std::fs::read_to_string(&out).expect("script written")
}

/// The probes the script tests write: a RON preset (its HF config generated); an HF preset (its
/// config.json verbatim) with LoRA, full checkpointing and amp; a config.json from disk, for
/// inference; BERT (its masked-LM class) with SGD and every third block checkpointed.
fn script_cases() -> [(&'static str, Vec<String>); 4] {
    let cfg = data("truth/configs/llama_tiny_gqa.json");
    let flags = |f: &[&str]| f.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    [
        ("gpt2", flags(&["--model", "gpt2", "--batch", "2", "--seq", "128", "--precision", "bf16"])),
        (
            "qwen3",
            flags(&[
                "--model",
                "qwen3-0.6b",
                "--seq",
                "256",
                "--precision",
                "bf16-amp",
                "--lora",
                "8:q,v",
                "--checkpoint",
                "full",
            ]),
        ),
        ("tiny", flags(&["--model", &cfg, "--mode", "infer", "--batch", "3", "--seq", "64"])),
        ("bert", flags(&["--model", "bert-base-uncased", "--optimizer", "sgd", "--checkpoint", "every:3"])),
    ]
}

#[test]
fn probe_script_embeds_the_scenario() {
    let d = scratch("scripts");
    let [gpt2, qwen3, tiny, bert] = script_cases().map(|(name, flags)| probe_script(&d, name, &flags));
    // a RON preset: the HF config is generated
    let s = gpt2;
    for needle in [
        "\"model_type\": \"gpt2\"",
        "\"GPT2LMHeadModel\"",
        "\"n_embd\": 768",
        "\"batch\": 2",
        "\"seq\": 128",
        "\"precision\": \"bf16\"",
        "\"dtype\": \"bfloat16\"",
        "\"config_verbatim\": false",
        "# Written by: vramscope probe --model gpt2",
    ] {
        assert!(s.contains(needle), "gpt2 script lacks {needle}");
    }
    // an HF preset: its config.json verbatim; LoRA, full checkpointing, amp
    let s = qwen3;
    for needle in [
        "\"Qwen3ForCausalLM\"",
        "\"config_verbatim\": true",
        "\"autocast\": \"bfloat16\"",
        "\"dtype\": \"float32\"",
        "\"checkpoint\": \"full\"",
        "q_proj|v_proj",
    ] {
        assert!(s.contains(needle), "qwen3 script lacks {needle}");
    }
    // a config.json from disk, inference; BERT's masked-LM class
    let s = tiny;
    assert!(s.contains("\"mode\": \"infer\"") && s.contains("\"num_key_value_heads\": 2"));
    let s = bert;
    assert!(
        s.contains("AutoModelForMaskedLM")
            && s.contains("\"every\": 3")
            && s.contains("\"optimizer\": \"sgd\"")
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// `python3`'s output for `args`; a missing `python3` fails the test (it is ignored by default).
fn python3(args: &[&std::ffi::OsStr]) -> Output {
    Command::new("python3")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("this test needs python3 on PATH (Debian: apt-get install python3): {e}"))
}

#[test]
#[ignore = "needs python3; .ci/run runs it: cargo test --test probe -- --ignored python3"]
fn probe_scripts_compile_under_python3() {
    let d = scratch("compile");
    for (name, flags) in script_cases() {
        probe_script(&d, name, &flags);
        let path = d.join(format!("{name}.py"));
        let c = python3(&["-m".as_ref(), "py_compile".as_ref(), path.as_os_str()]);
        assert!(c.status.success(), "{name}: {}", String::from_utf8_lossy(&c.stderr));
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn probe_refuses_what_it_cannot_measure() {
    let d = scratch("refuse");
    let o = d.join("x.py");
    let o = o.to_string_lossy();
    usage_error(&["probe", "--model", "resnet-50", "-o", &o], "vision backbone built op by op");
    usage_error(&["probe", "--model", "llama-2-7b", "--tp", "2", "-o", &o], "one GPU");
    usage_error(&["probe", "--model", "llama-2-7b", "--checkpoint", "selective", "-o", &o], "whole blocks");
    usage_error(&["probe", "--model", "llama-2-7b", "--precision", "bf16-mixed", "-o", &o], "bf16-mixed");
    usage_error(&["probe", "--model", "gpt3-175b-megatron", "-o", &o], "Megatron");
    usage_error(&["probe", "--model", "gpt2", "--device", "tpu", "-o", &o], "tpu");
    assert!(!d.join("x.py").exists());
    let _ = std::fs::remove_dir_all(&d);
}

/// The Python to run the probe with (`VRAMSCOPE_PYTHON`); the test fails without one that
/// imports torch and transformers.
fn python_with_torch() -> String {
    let py = std::env::var("VRAMSCOPE_PYTHON")
        .unwrap_or_else(|_| panic!("set VRAMSCOPE_PYTHON to a Python with torch and transformers"));
    let has = Command::new(&py).args(["-c", "import torch, transformers"]).output();
    assert!(has.is_ok_and(|o| o.status.success()), "no torch/transformers in VRAMSCOPE_PYTHON={py}");
    py
}

#[test]
#[ignore = "needs a Python with torch and transformers: VRAMSCOPE_PYTHON=/path/to/python cargo test --test probe -- --ignored"]
fn probe_end_to_end_on_the_cpu_then_calibrate() {
    let py = python_with_torch();
    let d = scratch("e2e");
    let cfg = data("truth/configs/llama_tiny_gqa.json");
    let script = d.join("probe.py");
    let script_s = script.to_string_lossy().to_string();
    ok(&[
        "probe",
        "--model",
        &cfg,
        "--batch",
        "2",
        "--seq",
        "64",
        "--precision",
        "fp32",
        "--device",
        "cpu",
        "--steps",
        "1",
        "--warmup",
        "1",
        "-o",
        &script_s,
    ]);
    let t0 = std::time::Instant::now();
    let out = Command::new(&py).arg(&script_s).output().expect("python runs");
    println!("probe.py ({:.1} s):\n{}", t0.elapsed().as_secs_f64(), String::from_utf8_lossy(&out.stdout));
    assert!(out.status.success(), "probe.py failed: {}", String::from_utf8_lossy(&out.stderr));
    let json = d.join("probe.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).expect("probe.json")).expect("JSON");
    assert_eq!(v["schema"], 1);
    assert!(v["measured"]["peak_allocated"].is_null(), "CPU: no CUDA statistics");
    assert_eq!(v["predicted"]["scenario"]["batch"], 2);
    let json_s = json.to_string_lossy().to_string();
    println!("{}", ok(&["calibrate", &json_s]));
    let c: Value = serde_json::from_str(&ok(&["calibrate", &json_s, "--json"])).expect("JSON");
    let row =
        |k: &str| c["rows"].as_array().and_then(|r| r.iter().find(|x| x["key"] == k)).cloned().expect(k);
    // exact on any device: parameters, gradients and AdamW states of a fp32 model
    for k in ["parameters", "gradients", "optimizer_states"] {
        let r = row(k);
        assert!(r["measured"].as_u64().is_some_and(|m| m > 1_000_000), "{k}: {r}");
        assert_eq!(r["error_pct"].as_f64(), Some(0.0), "{k}: {r}");
    }
    assert!(row("peak_allocated")["measured"].is_null());
    // a CPU run has no allocator statistics to save
    usage_error(
        &["calibrate", &json_s, "--save", "--gpu", "h100-80gb", "--profile-dir", &d.to_string_lossy()],
        "peak_allocated",
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// The committed GPU-style result: GPT-2 bf16, batch 4, seq 512, AdamW, on an H100.
fn fixture() -> String {
    data("probe/h100-gpt2-bf16.json")
}

#[test]
fn calibrate_a_gpu_probe_fixture() {
    let c: Value = serde_json::from_str(&ok(&["calibrate", &fixture(), "--json"])).expect("JSON");
    assert_eq!(c["device"], "NVIDIA H100 80GB HBM3");
    let est: Value = serde_json::from_str(&ok(&[
        "estimate",
        "--model",
        "gpt2",
        "--batch",
        "4",
        "--seq",
        "512",
        "--precision",
        "bf16",
        "--gpu",
        "h100-80gb",
        "--json",
    ]))
    .expect("JSON");
    let rows = c["rows"].as_array().expect("rows").clone();
    let row = |k: &str| rows.iter().find(|x| x["key"] == k).cloned().expect(k);
    // states are exact: 124,439,808 bf16 parameters, their gradients, two AdamW moments
    assert_eq!(row("parameters")["measured"], 248_879_616u64);
    assert_eq!(row("parameters")["error_pct"].as_f64(), Some(0.0));
    assert_eq!(row("gradients")["error_pct"].as_f64(), Some(0.0));
    assert_eq!(row("optimizer_states")["error_pct"].as_f64(), Some(0.0));
    // the predicted side is the estimate of the echoed scenario (GPU matched from the name)
    assert_eq!(row("peak_allocated")["predicted"], est["bytes"]["peak_allocated"]);
    assert_eq!(row("nvml_total")["predicted"], est["bytes"]["total"]);
    for r in &rows {
        if let (Some(m), Some(p)) = (r["measured"].as_f64(), r["predicted"].as_f64()) {
            let want = ((p - m) / m * 100.0 * 100.0).round() / 100.0;
            assert_eq!(r["error_pct"].as_f64(), Some(want), "{r}");
        }
    }
    // measured side as committed
    assert_eq!(row("peak_allocated")["measured"], 3_221_225_472u64);
    assert_eq!(row("peak_reserved")["measured"], 3_439_329_280u64);
    assert_eq!(row("outside_allocator")["measured"], 3_984_588_800u64 - 3_439_329_280u64);
    let text = ok(&["calibrate", &fixture()]);
    assert!(text.contains("peak in backward") && text.contains("NVML used vs total"), "{text}");
    assert!(text.contains("matched from the device name"), "{text}");
}

#[test]
fn calibrate_saves_a_profile_and_estimate_takes_it() {
    let d = scratch("profile");
    let dir = d.to_string_lossy().to_string();
    let msg = ok(&["calibrate", &fixture(), "--save", "--profile-dir", &dir]);
    assert!(msg.contains("saved the calibration profile for h100-80gb"), "{msg}");
    let prof: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("h100-80gb.json")).expect("profile"))
            .expect("JSON");
    let ctx = 3_984_588_800u64 - 3_439_329_280u64;
    assert_eq!(prof["cuda_context_bytes"], ctx);
    let frac = ((3_439_329_280.0 - 3_221_225_472.0) / 3_221_225_472.0 * 1e4_f64).round() / 1e4;
    assert_eq!(prof["allocator_reserve_fraction"].as_f64(), Some(frac));
    assert_eq!(prof["date"], "2025-06-02");
    let flags = ["estimate", "--model", "gpt2", "--batch", "4", "--seq", "512", "--gpu", "h100-80gb"];
    let mut cal = flags.to_vec();
    cal.extend_from_slice(&["--calibrated", "--profile-dir", &dir]);
    let text = ok(&cal);
    assert!(text.contains("calibrated on NVIDIA H100 80GB HBM3, 2025-06-02"), "{text}");
    cal.push("--json");
    let v: Value = serde_json::from_str(&ok(&cal)).expect("JSON");
    let peak = v["bytes"]["peak_allocated"].as_u64().expect("peak");
    let want = ctx + (32 << 20) + (peak as f64 * frac).round() as u64;
    assert_eq!(v["bytes"]["overhead"], want);
    // no profile for another card: one line naming the missing file
    usage_error(
        &["estimate", "--model", "gpt2", "--gpu", "a100-80gb", "--calibrated", "--profile-dir", &dir],
        "a100-80gb.json",
    );
    usage_error(&["estimate", "--model", "gpt2", "--calibrated"], "--gpu");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn calibrate_malformed_input_is_one_line_and_exit_2() {
    let d = scratch("malformed");
    let bad = d.join("probe.json");
    let bad_s = bad.to_string_lossy().to_string();
    std::fs::write(&bad, "{\"schema\": 1, \"kind\": \"vramscope-probe\", \"args\": [").expect("write");
    usage_error(&["calibrate", &bad_s], "probe.json");
    std::fs::write(&bad, "[1, 2, 3]").expect("write");
    usage_error(&["calibrate", &bad_s], "not a probe result");
    std::fs::write(
        &bad,
        r#"{"schema": 1, "kind": "vramscope-probe", "args": ["--model", "gpt2", "--batch", "zero"]}"#,
    )
    .expect("write");
    usage_error(&["calibrate", &bad_s], "args");
    std::fs::write(&bad, r#"{"schema": 7, "kind": "vramscope-probe", "args": ["--model", "gpt2"]}"#)
        .expect("write");
    usage_error(&["calibrate", &bad_s], "schema 7");
    usage_error(&["calibrate", &d.join("missing.json").to_string_lossy()], "missing.json");
    let _ = std::fs::remove_dir_all(&d);
}

/// Run without site-packages (`python3 -I -S`), so torch is absent whatever is installed.
#[test]
#[ignore = "needs python3; .ci/run runs it: cargo test --test probe -- --ignored python3"]
fn probe_script_under_python3_without_torch_says_so() {
    let d = scratch("notorch");
    let s = d.join("p.py");
    ok(&["probe", "--model", "gpt2", "-o", &s.to_string_lossy()]);
    let out = python3(&["-I".as_ref(), "-S".as_ref(), s.as_os_str()]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("PyTorch is not installed"));
    assert!(!d.join("p.json").exists());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
#[ignore = "needs a Python with torch and transformers: VRAMSCOPE_PYTHON=/path/to/python cargo test --test probe -- --ignored"]
fn probe_runs_hf_generate_and_its_kv_cache_is_the_estimate() {
    let py = python_with_torch();
    let d = scratch("gen");
    let cfg = data("truth/configs/llama_tiny_gqa.json");
    let script_s = d.join("probe.py").to_string_lossy().to_string();
    ok(&[
        "probe",
        "--model",
        &cfg,
        "--mode",
        "infer",
        "--batch",
        "2",
        "--seq",
        "48",
        "--new-tokens",
        "16",
        "--precision",
        "fp32",
        "--device",
        "cpu",
        "--steps",
        "1",
        "--warmup",
        "0",
        "-o",
        &script_s,
    ]);
    let out = Command::new(&py).arg(&script_s).output().expect("python runs");
    assert!(out.status.success(), "probe.py failed: {}", String::from_utf8_lossy(&out.stderr));
    let json_s = d.join("probe.json").to_string_lossy().to_string();
    let c: Value = serde_json::from_str(&ok(&["calibrate", &json_s, "--json"])).expect("JSON");
    let kv = c["rows"]
        .as_array()
        .and_then(|r| r.iter().find(|x| x["key"] == "kv_cache"))
        .cloned()
        .expect("kv row");
    // 2 × 4 layers × 2 rows × 2 KV heads × 32 × (48 + 15) tokens × 4 B
    assert_eq!(kv["measured"].as_u64(), Some(2 * 4 * 2 * 2 * 32 * 63 * 4), "{kv}");
    assert_eq!(kv["error_pct"].as_f64(), Some(0.0), "{kv}");
    let _ = std::fs::remove_dir_all(&d);
}
