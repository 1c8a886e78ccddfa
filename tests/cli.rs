//! The `vramscope` command line: the JSON contract, error handling and exit codes.

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

fn data(p: &str) -> String {
    format!("{}/tests/data/{p}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn json_has_the_contract_keys() {
    let v = json(&[
        "estimate",
        "--model",
        "llama-2-7b",
        "--batch",
        "2",
        "--seq",
        "1024",
        "--gpu",
        "a100-80gb",
        "--json",
    ]);
    assert_eq!(v["schema"], 1);
    assert_eq!(v["model"]["name"], "Llama-2-7B");
    assert_eq!(v["model"]["n_params"], 6_738_415_616u64);
    for k in [
        "parameters",
        "gradients",
        "optimizer_states",
        "activations",
        "kv_cache",
        "peak_allocated",
        "overhead",
        "total",
    ] {
        assert!(v["bytes"][k].is_u64(), "bytes.{k} missing");
    }
    let b = &v["bytes"];
    assert_eq!(
        b["total"].as_u64().unwrap(),
        b["peak_allocated"].as_u64().unwrap() + b["overhead"].as_u64().unwrap()
    );
    assert!(["forward", "backward", "optimizer_step"].contains(&v["peak_phase"].as_str().unwrap()));
    assert!(v["fits"].is_boolean());
    assert!(v["max_batch"].is_u64() || v["max_batch"].is_null());
}

#[test]
fn infer_reports_exact_kv_cache() {
    let v = json(&[
        "estimate",
        "--model",
        "llama-3.1-8b",
        "--mode",
        "infer",
        "--batch",
        "4",
        "--seq",
        "4096",
        "--json",
    ]);
    // 2 (k, v) x 32 layers x 4 x 4096 tokens x 8 kv heads x 128 x 2 bytes
    assert_eq!(v["bytes"]["kv_cache"], 2u64 * 32 * 4 * 4096 * 8 * 128 * 2);
    assert_eq!(v["bytes"]["gradients"], 0);
    assert_eq!(v["peak_phase"], "forward");
    let fp8 = json(&[
        "estimate",
        "--model",
        "llama-3.1-8b",
        "--mode",
        "infer",
        "--batch",
        "4",
        "--seq",
        "4096",
        "--kv-dtype",
        "fp8",
        "--json",
    ]);
    assert_eq!(fp8["bytes"]["kv_cache"], 2u64 * 32 * 4 * 4096 * 8 * 128);
}

#[test]
fn reads_a_config_json() {
    let v = json(&["estimate", "--model", &data("truth/configs/mistral-7b.json"), "--json"]);
    assert_eq!(v["model"]["n_params"], 7_241_732_096u64);
}

#[test]
fn text_output_is_readable() {
    let out = run(&["estimate", "--model", "gpt2", "--gpu", "t4"]);
    assert!(out.status.success());
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(s.contains("peak allocated") && s.contains("largest micro-batch"), "{s}");
}

#[test]
fn default_prints_the_app_s_default_scenario() {
    let out = run(&["default"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("Llama-3.1-8B"));
}

#[test]
fn no_display_is_a_readable_error_not_a_panic() {
    let out = Command::new(env!("CARGO_BIN_EXE_vramscope"))
        .env_remove("WAYLAND_DISPLAY")
        .env("DISPLAY", ":4242")
        .output()
        .expect("binary runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("could not open a window") && !err.contains("panicked"), "{err}");
}

fn assert_usage_error(args: &[&str], needle: &str) {
    let out = run(args);
    assert_eq!(out.status.code(), Some(2), "{args:?} should exit 2");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "one line expected, got: {err}");
    assert!(err.contains(needle), "{args:?}: expected \"{needle}\" in: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    assert_usage_error(&["estimate", "--model", "no-such-model"], "no-such-model");
    assert_usage_error(&["estimate", "--model", "gpt2", "--precision", "fp64"], "fp64");
    assert_usage_error(&["estimate", "--model", "gpt2", "--batch", "0"], "batch");
    assert_usage_error(&["estimate", "--model", "gpt2", "--seq", "5000"], "1024");
    assert_usage_error(&["estimate", "--model", "gpt2", "--checkpoint", "segments:0"], "segments:0");
    assert_usage_error(&["estimate", "--model", "gpt2", "--lora", "8:q,zz"], "zz");
    assert_usage_error(&["estimate", "--model", "gpt2", "--gpu", "tpu-v9"], "tpu-v9");
    assert_usage_error(&["estimate", "--model", "llama-2-7b", "--precision", "int4"], "--lora");
    assert_usage_error(&["estimate", "--bogus"], "--bogus");
}

#[test]
fn bad_files_name_the_file() {
    let dir = std::env::temp_dir().join(format!("vramscope-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("config.json");
    std::fs::write(&bad, "{\"model_type\": \"llama\", \"hidden_size\": 64,\n \"num_attention_heads\": 5}")
        .unwrap();
    assert_usage_error(&["estimate", "--model", bad.to_str().unwrap()], "config.json");
    let t5 = dir.join("t5.json");
    std::fs::write(&t5, "{\"model_type\": \"t5\"}").unwrap();
    assert_usage_error(&["estimate", "--model", t5.to_str().unwrap()], "t5");
    let ron = dir.join("m.ron");
    std::fs::write(&ron, "(schema: 1,\n name: \"x\",\n arch: Nope)").unwrap();
    assert_usage_error(&["estimate", "--model", ron.to_str().unwrap()], "m.ron:3");
    let st = dir.join("w.safetensors");
    std::fs::write(&st, [0u8; 3]).unwrap();
    assert_usage_error(&["estimate", "--model", st.to_str().unwrap()], "w.safetensors");
}

#[test]
fn lists_presets_and_gpus() {
    let p = String::from_utf8(run(&["presets"]).stdout).unwrap();
    for name in ["llama-2-70b", "mixtral-8x7b", "qwen2.5-7b", "resnet-50", "bert-base-uncased"] {
        assert!(p.contains(name), "{name} missing");
    }
    let g = String::from_utf8(run(&["gpus"]).stdout).unwrap();
    assert!(g.contains("h100-80gb") && g.contains("mi300x"));
}

#[test]
fn plan_reports_the_per_rank_breakdown_and_speed() {
    let v = json(&[
        "plan",
        "--model",
        "llama-2-70b",
        "--gpu",
        "h100-80gb",
        "--dp",
        "8",
        "--tp",
        "8",
        "--zero",
        "1",
        "--precision",
        "bf16-mixed",
        "--seq",
        "4096",
        "--checkpoint",
        "full",
        "--global-batch",
        "64",
        "--json",
    ]);
    for k in [
        "parameters",
        "gradients",
        "optimizer_states",
        "activations",
        "peak_allocated",
        "total",
        "cpu_bytes",
        "nvme_bytes",
    ] {
        assert!(v["bytes"][k].is_u64(), "bytes.{k}");
    }
    assert_eq!(v["world"], 64);
    assert_eq!(v["model"]["n_params"], 68_976_648_192u64, "the model's count, not one rank's");
    assert!(v["step_time"]["step_s"].as_f64().unwrap() > 0.0);
    let rule = v["speedup"]["rule_of_thumb"].as_f64().unwrap();
    assert!((rule - 8.0 / 4.5).abs() < 1e-9);
    let offload = json(&[
        "plan",
        "--model",
        "llama-2-7b",
        "--gpu",
        "rtx-4090",
        "--dp",
        "2",
        "--zero",
        "2",
        "--offload",
        "optimizer",
        "--json",
    ]);
    assert!(offload["bytes"]["cpu_bytes"].as_u64().unwrap() > 0);
    assert_eq!(offload["bytes"]["optimizer_states"], 0);
}

#[test]
fn plan_search_ranks_layouts() {
    let v = json(&[
        "plan",
        "--model",
        "llama-2-13b",
        "--gpu",
        "a100-80gb",
        "--gpus",
        "16",
        "--global-batch",
        "64",
        "--seq",
        "2048",
        "--precision",
        "bf16-mixed",
        "--search",
        "--json",
    ]);
    let plans = v["plans"].as_array().unwrap();
    assert!(!plans.is_empty());
    let times: Vec<f64> = plans.iter().map(|p| p["step"]["step_s"].as_f64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "ranked by step time");
    // each row's micro-batch x micro-batches per step x dp is the global batch
    for p in plans {
        let n = p["micro_batch"].as_u64().unwrap() * p["grad_accum"].as_u64().unwrap();
        assert_eq!(n * p["parallel"]["dp"].as_u64().unwrap(), 64, "{p}");
        let zero = p["parallel"]["zero"].as_u64().unwrap();
        assert!(p["parallel"]["pp"].as_u64().unwrap() == 1 || zero <= 1, "ZeRO-{zero} with pipeline stages");
    }
    assert_usage_error(&["plan", "--model", "gpt2"], "--gpu");
    assert_usage_error(&["plan", "--model", "gpt2", "--gpu", "t4", "--tp", "64"], "tensor parallelism");
}

#[test]
fn plan_roadmap_makes_an_oversized_fine_tune_fit() {
    let args = [
        "plan",
        "--model",
        "llama-2-13b",
        "--gpu",
        "rtx-4090",
        "--seq",
        "2048",
        "--batch",
        "4",
        "--precision",
        "fp32",
    ];
    let mut with_json = args.to_vec();
    with_json.extend(["--roadmap", "--json"]);
    let v = json(&with_json);
    let cap = v["capacity_before"].as_u64().unwrap();
    assert!(v["total_before"].as_u64().unwrap() > cap, "does not fit before");
    let steps = v["steps"].as_array().unwrap();
    assert!(steps.iter().any(|s| s["fits"] == true), "a step makes it fit");
    for s in steps {
        assert!(["short", "mid", "long"].contains(&s["horizon"].as_str().unwrap()));
        assert!(!s["how"].as_array().unwrap().is_empty(), "every step says how");
    }
    let mut md_args = args.to_vec();
    md_args.push("--roadmap");
    let out = Command::new(env!("CARGO_BIN_EXE_vramscope")).args(&md_args).output().unwrap();
    assert!(out.status.success());
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(md.starts_with("# Memory roadmap: "), "{md}");
    assert!(md.contains("| horizon | step |") && md.contains("## How"));
}

#[test]
fn plan_options_lists_the_hardware_paths() {
    let v = json(&[
        "plan",
        "--model",
        "llama-2-13b",
        "--gpu",
        "a100-40gb",
        "--seq",
        "2048",
        "--checkpoint",
        "full",
        "--options",
        "--json",
    ]);
    let paths = v["paths"].as_array().unwrap();
    let kinds: Vec<&str> = paths.iter().map(|p| p["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds[0], "current");
    assert!(kinds.contains(&"newer generation") && kinds.contains(&"more GPUs"), "{kinds:?}");
    assert_eq!(paths[0]["fits"], false);
    assert!((paths[0]["speedup"].as_f64().unwrap() - 1.0).abs() < 1e-9);
    let more = paths.iter().find(|p| p["kind"] == "more GPUs").unwrap();
    assert!(more["fits"] == true && more["total_bytes"].as_u64() <= more["capacity"].as_u64());
}

#[test]
fn plan_tokens_prices_the_run_on_every_instance() {
    let v = json(&[
        "plan",
        "--model",
        "llama-2-7b",
        "--gpu",
        "a100-80gb",
        "--dp",
        "8",
        "--zero",
        "3",
        "--tokens",
        "1e9",
        "--json",
    ]);
    let n = v["model"]["n_params"].as_f64().unwrap();
    let run = &v["run"];
    assert!((run["flops"].as_f64().unwrap() - 6.0 * n * 1e9).abs() < 1e6, "6 x N x tokens");
    let opts = run["options"].as_array().unwrap();
    assert!(opts.len() >= 10, "the catalog's instances");
    for o in opts.iter().filter(|o| o["instance"]["purchase"].is_null()) {
        let c = &o["cost"];
        let od = c["on_demand"].as_f64().unwrap();
        assert!((c["spot"].as_f64().unwrap() - 0.3 * od).abs() < 1e-6 * od.max(1.0));
        assert!((c["committed"].as_f64().unwrap() - 0.6 * od).abs() < 1e-6 * od.max(1.0));
    }
    assert_usage_error(&["plan", "--model", "gpt2", "--gpu", "t4", "--tokens", "0"], "--tokens");
}

#[test]
fn diagnose_explains_an_oom_message() {
    let dir = std::env::temp_dir().join(format!("vramscope-oom-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("oom.txt");
    std::fs::write(
        &f,
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of \
         79.15 GiB of which 1.21 GiB is free. Including non-PyTorch memory, this process has 77.93 GiB memory in use. \
         Of the allocated memory 71.02 GiB is allocated by PyTorch, and 6.39 GiB is reserved by PyTorch but unallocated.",
    )
    .unwrap();
    let v = json(&["diagnose", "--oom", f.to_str().unwrap(), "--json"]);
    assert_eq!(v["oom"]["source"], "pytorch_current");
    assert_eq!(v["oom"]["numbers"]["requested"], 2u64 << 30);
    assert!(v["oom"]["findings"].as_array().unwrap().iter().any(|x| x == "fragmentation"));
    let not = dir.join("not.txt");
    std::fs::write(&not, "all good").unwrap();
    assert_usage_error(&["diagnose", "--oom", not.to_str().unwrap()], "not.txt");
    assert_usage_error(&["diagnose", "--oom", "/no/such/file"], "/no/such/file");
}

#[test]
fn diagnose_classifies_a_leaking_trace() {
    let dir = std::env::temp_dir().join(format!("vramscope-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("trace.csv");
    let mut csv = String::from("t_s,gpu,used_bytes,total_bytes\n");
    for i in 0..400u64 {
        // 20 GiB of states, 10 GiB of activations per 10-sample step, 200 MiB kept per step
        let used = (20u64 << 30) + (i / 10) * (200 << 20) + (10u64 << 30) * (i % 10).min(10 - i % 10) / 5;
        csv += &format!("{:.1},0,{used},{}\n", i as f64 * 0.1, 80u64 << 30);
    }
    std::fs::write(&f, csv).unwrap();
    let v = json(&["diagnose", "--trace", f.to_str().unwrap(), "--json"]);
    assert_eq!(v["trace"]["verdict"], "leak");
    let g = v["trace"]["growth_mib_per_iteration"].as_f64().unwrap();
    assert!((g - 200.0).abs() < 30.0, "{g}");
    assert_usage_error(&["diagnose"], "required");
}

#[test]
fn monitor_without_a_driver_exits_3_with_a_plain_message() {
    let out = run(&["monitor", "--count", "1", "--json"]);
    if out.status.success() {
        return; // a machine with an NVIDIA driver: nothing to check here
    }
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("NVML unavailable") && !err.contains("panicked"), "{err}");
}

#[test]
fn diagnose_reads_allocator_reports_and_snapshots() {
    let v = json(&["diagnose", "--snapshot", &data("snapshot/snapshot_p4.pickle"), "--json"]);
    assert_eq!(v["snapshot"]["largest_free_block"], 6u64 << 20);
    let dir = std::env::temp_dir().join(format!("vramscope-alloc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("stats.json");
    std::fs::write(
        &f,
        r#"{"allocated_bytes.all.current": 1, "reserved_bytes.all.current": 4, "num_alloc_retries": 3}"#,
    )
    .unwrap();
    let v = json(&["diagnose", "--memory-summary", f.to_str().unwrap(), "--json"]);
    assert_eq!(v["allocator"]["numbers"]["cuda_malloc_retries"], 3);
    let evil = dir.join("evil.pickle");
    std::fs::write(&evil, b"\x80\x02cos\nsystem\n.").unwrap();
    assert_usage_error(&["diagnose", "--snapshot", evil.to_str().unwrap()], "refused");
}

#[test]
fn diagnose_snapshot_reports_the_trace_and_compares() {
    let (a, b) = (data("snapshot/trace_train.pickle"), data("snapshot/trace_train_ckpt.pickle"));
    let want: Value =
        serde_json::from_str(&std::fs::read_to_string(data("snapshot/trace_expected.json")).unwrap())
            .unwrap();
    let v = json(&["diagnose", "--snapshot", &a, "--json"]);
    assert!(v["snapshot"]["segments"].is_array() && v["snapshot"]["fragmentation"].is_number());
    let t = &v["trace"];
    assert_eq!(t["peak_allocated"], want["trace_train.pickle"]["peak_allocated"]);
    assert_eq!(t["peak_reserved"], want["trace_train.pickle"]["peak_reserved"]);
    assert_eq!(t["step_source"], "annotations");
    assert_eq!(t["steps"].as_array().unwrap().len(), 3);
    assert_eq!(t["phase_peaks"][0]["phase"], "forward");
    assert_eq!(t["ooms"][0]["requested"], 40u64 << 30);
    let v = json(&["diagnose", "--snapshot", &a, "--compare", &b, "--json"]);
    assert!(v["compare"]["peak_delta"].as_i64().unwrap() < 0);
    assert_eq!(v["compare"]["diff"].as_array().unwrap().len(), 512);
    assert_eq!(v["compare_trace"]["step_source"], "pattern");
    let out = run(&["diagnose", "--snapshot", &a, "--compare", &b]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "3 steps from annotations",
        "forward peak",
        "OOM after event",
        "compare: peak allocated",
        "differs most",
    ] {
        assert!(text.contains(needle), "{needle} missing in:\n{text}");
    }
    // a snapshot without history: the segments view, no trace
    let v = json(&["diagnose", "--snapshot", &data("snapshot/snapshot_p4.pickle"), "--json"]);
    assert!(v["trace"].is_null());
    assert_usage_error(&["diagnose", "--compare", &b], "--snapshot");
    let dir = std::env::temp_dir().join(format!("vramscope-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cut = dir.join("cut.pickle");
    std::fs::write(&cut, &std::fs::read(&b).unwrap()[..5000]).unwrap();
    assert_usage_error(&["diagnose", "--snapshot", &a, "--compare", cut.to_str().unwrap()], "ends early");
}

/// Every Hub config in tests/data/hub (see its SOURCES.md), given as the model folder and as the
/// config.json path: exit 0, the exact HF parameter count (params.json, from meta-device
/// instantiation with transformers 5.24), `model.validated` true except where the architecture
/// has no family of its own.
#[test]
fn every_hub_config_estimates_with_exact_parameters() {
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(data("hub/params.json")).unwrap()).unwrap();
    let mut n = 0;
    for (dir, row) in expected.as_object().unwrap() {
        let want = row["n_params"].as_u64().unwrap();
        for path in [data(&format!("hub/{dir}")), data(&format!("hub/{dir}/config.json"))] {
            let v = json(&["estimate", "--model", &path, "--json"]);
            assert_eq!(v["model"]["n_params"].as_u64(), Some(want), "{path}");
            let generic = matches!(dir.as_str(), "t5-base" | "whisper-small");
            // Qwen2-MoE follows the Llama family's rules but has not been measured itself
            let unmeasured = dir == "qwen2-moe";
            assert_eq!(v["model"]["validated"], !generic && !unmeasured, "{path}: {}", v["model"]);
            if unmeasured {
                assert!(v["notes"].to_string().contains("not been measured"), "{path}: {}", v["notes"]);
            }
            if generic {
                assert_eq!(v["model"]["family"], "generic");
                assert!(v["notes"].to_string().contains("unvalidated"), "{path}: {}", v["notes"]);
            }
        }
        n += 1;
    }
    assert!(n >= 30, "hub configs missing ({n})");
}

#[test]
fn hub_ids_and_near_misses() {
    let v = json(&["estimate", "--model", "Qwen/Qwen3-8B", "--json"]);
    assert_eq!(v["model"]["n_params"], 8_190_735_360u64);
    assert_eq!(v["model"]["family"], "qwen3");
    let v = json(&["estimate", "--model", "meta-llama/Llama-3.1-8B", "--json"]);
    assert_eq!(v["model"]["n_params"], 8_030_261_248u64);
    let out = run(&["estimate", "--model", "qwen3-7b"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did you mean qwen3-8b") || err.contains("did you mean qwen3-0.6b"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn quantized_checkpoints_weigh_their_format() {
    // GPTQ 4-bit Llama-3.1-8B for inference: about 5.7 GB of weights, not 16 GB of bf16
    let v = json(&["estimate", "--model", &data("hub/llama-gptq"), "--mode", "infer", "--json"]);
    let w = v["bytes"]["parameters"].as_u64().unwrap() as f64 / 1e9;
    assert!((5.4..6.0).contains(&w), "{w} GB");
    assert!(v["model"]["weight_format"].as_str().unwrap().contains("GPTQ"));
    // full fine-tuning dequantizes, and says so
    let v = json(&["estimate", "--model", &data("hub/llama-gptq"), "--json"]);
    assert!(v["bytes"]["parameters"].as_u64().unwrap() > 15_000_000_000);
    assert!(v["notes"].to_string().contains("dequantizes"), "{}", v["notes"]);
}

#[test]
fn timeline_json_and_csv_peak_where_estimate_does() {
    let flags = ["--model", "llama-3.1-8b", "--batch", "2", "--seq", "1024", "--checkpoint", "segments:4"];
    let est = json(&[&["estimate"][..], &flags, &["--json"]].concat());
    let tl = json(&[&["timeline"][..], &flags, &["--json"]].concat());
    assert_eq!(tl["schema"], 1);
    let events = tl["events"].as_array().expect("events");
    assert!(events.len() > 100, "{} events", events.len());
    let max = events.iter().map(|e| e["total"].as_u64().unwrap()).max().unwrap();
    assert_eq!(Some(max), est["bytes"]["peak_allocated"].as_u64());
    assert_eq!(tl["peak"]["total"].as_u64(), Some(max));
    assert_eq!(tl["peak"]["phase"], est["peak_phase"]);
    for e in events {
        let b = &e["bytes"];
        let sum: u64 =
            ["parameters", "gradients", "optimizer_states", "activations", "temporaries", "kv_cache"]
                .iter()
                .map(|k| b[k].as_u64().unwrap())
                .sum();
        assert_eq!(Some(sum), e["total"].as_u64(), "{e}");
    }
    assert_eq!(events.last().unwrap()["op"], "zero_grad (set_to_none)");
    assert!(events.iter().any(|e| e["op"] == "down_proj" && e["pass"] == "op_backward"));
    let csv = run(&[&["timeline"][..], &flags, &["--csv"]].concat());
    assert!(csv.status.success());
    let text = String::from_utf8(csv.stdout).unwrap();
    assert!(text.starts_with("index,phase,block,op,pass,parameters,gradients,optimizer_states,activations,temporaries,kv_cache,total\n"));
    assert_eq!(text.lines().count(), events.len() + 1);
    let table = run(&[&["timeline"][..], &flags].concat());
    assert!(String::from_utf8(table.stdout).unwrap().contains("<- peak"));
    let bad = run(&["timeline", "--model", "llama-3.1-8b", "--csv", "--json"]);
    assert_eq!(bad.status.code(), Some(2));
    assert_eq!(String::from_utf8(bad.stderr).unwrap().lines().count(), 1);
}

#[test]
fn the_overhead_is_given_term_by_term_and_eager_loading_adds_the_kernel_images() {
    let base = ["estimate", "--model", "llama-3.2-1b", "--seq", "512", "--json"];
    let lazy = json(&base);
    let eager = json(&[&base[..], &["--module-loading", "11.3"]].concat());
    let t = |v: &Value, k: &str| v["bytes"]["overhead_terms"][k].as_u64().unwrap();
    assert_eq!(t(&lazy, "eager_kernels"), 0);
    assert_eq!(t(&eager, "eager_kernels"), 943 << 20);
    assert_eq!(t(&lazy, "cuda_context"), 500 << 20, "the default context");
    assert_eq!(eager["scenario"]["module_loading"], "eager");
    // the terms add up to the overhead, and only the context moved
    for v in [&lazy, &eager] {
        let sum: u64 = ["cuda_context", "eager_kernels", "nccl", "allocator"].iter().map(|k| t(v, k)).sum();
        assert_eq!(sum, v["bytes"]["overhead"].as_u64().unwrap());
    }
    let total = |v: &Value| v["bytes"]["total"].as_u64().unwrap();
    assert_eq!(total(&eager) - total(&lazy), 943 << 20);
    // the stack's loop settings are named in the JSON
    // (a fused AdamW, so the peak is in backward, where accumulated gradients add up)
    let fused = [&base[..], &["--optimizer", "adamw-fused"]].concat();
    let one = json(&fused);
    let acc = json(&[&fused[..], &["--grad-accum", "4", "--keep-grads", "--compile-loss"]].concat());
    let st = &acc["scenario"]["stack"];
    assert_eq!((st["grad_accum"].as_u64(), st["keep_grads"].as_bool()), (Some(4), Some(true)));
    assert_eq!(st["compiled_loss"].as_bool(), Some(true));
    assert_eq!(one["scenario"]["stack"]["grad_accum"].as_u64(), Some(1));
    assert!(acc["bytes"]["peak_allocated"].as_u64() > one["bytes"]["peak_allocated"].as_u64());
}

#[test]
fn contradictory_overhead_and_stack_flags_are_one_line_errors() {
    let m = ["estimate", "--model", "llama-3.2-1b"];
    assert_usage_error(
        &[&m[..], &["--context-mib", "900", "--module-loading", "eager"]].concat(),
        "--context-mib",
    );
    assert_usage_error(&[&m[..], &["--module-loading", "fast"]].concat(), "--module-loading");
    assert_usage_error(&[&m[..], &["--grad-accum", "0"]].concat(), "--grad-accum");
    assert_usage_error(&[&m[..], &["--grad-accum", "4", "--optimizer-in-backward"]].concat(), "--grad-accum");
}

/// Found by a new user: `plan` and `estimate` gave different totals for the same flags, a card
/// just above the total panicked, an export's note ignored the global batch's accumulation.
#[test]
fn plan_export_and_estimate_give_one_number() {
    let total = |args: &[&str]| json(args)["bytes"]["total"].as_u64().unwrap();
    let e = total(&[
        "estimate",
        "--model",
        "llama-2-13b",
        "--gpu",
        "a100-80gb",
        "--dp",
        "8",
        "--zero",
        "3",
        "--json",
    ]);
    let p = total(&[
        "plan",
        "--model",
        "llama-2-13b",
        "--gpu",
        "a100-80gb",
        "--gpus",
        "8",
        "--zero",
        "3",
        "--json",
    ]);
    assert_eq!(e, p, "plan's total is estimate's");
    // a card between the peak and the allocator's reserve: a verdict, never a panic
    for card in ["122gb", "122.5gb", "123gb", "124gb"] {
        let out = run(&["estimate", "--model", "llama-2-13b", "--gpu", card]);
        assert!(out.status.success(), "{card}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("fits") || text.contains("does NOT fit"), "{card}: {text}");
    }
    // the DeepSpeed note names the accumulation the config writes
    let out = run(&[
        "export",
        "--model",
        "llama-2-13b",
        "--gpu",
        "a100-80gb",
        "--dp",
        "8",
        "--zero",
        "3",
        "--global-batch",
        "64",
        "--format",
        "deepspeed",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--grad-accum 8"), "{err}");
}

#[test]
fn impossible_traces_and_capped_processes_are_named() {
    let dir = std::env::temp_dir().join(format!("vramscope-cli-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("t.csv");
    let mut csv = String::from("timestamp, index, memory.used [MiB], memory.total [MiB]\n");
    for i in 0..10 {
        csv += &format!("2026/11/29 10:00:{i:02}.000, 0, {} MiB, 100 MiB\n", if i == 5 { 200 } else { 50 });
    }
    std::fs::write(&p, csv).unwrap();
    let out = run(&["diagnose", "--trace", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("above memory.total"));
    let m = dir.join("oom.txt");
    std::fs::write(&m, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 30.00 GiB is free. Including non-PyTorch memory, this process has 48.00 GiB memory in use. Of the allocated memory 46.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated.").unwrap();
    let out = run(&["diagnose", "--oom", m.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("capped below the card") && text.contains("set_per_process_memory_fraction"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn stages_give_every_pipeline_stage_and_the_most_loaded_is_the_estimate() {
    // 32 blocks over 4 stages, 8 micro-batches: stage 0 holds 4 in flight and the embedding,
    // stage 3 one and the head with the loss
    let args = [
        "estimate",
        "--model",
        "llama-3.1-8b",
        "--seq",
        "2048",
        "--pp",
        "4",
        "--dp",
        "2",
        "--micro-batches",
        "8",
        "--gpu",
        "h100-80gb",
        "--stages",
        "--json",
    ];
    let v = json(&args);
    let stages = v["stages"].as_array().expect("stages");
    assert_eq!(stages.len(), 4);
    let blocks: Vec<u64> = stages.iter().map(|s| s["blocks"].as_u64().unwrap()).collect();
    assert_eq!(blocks, [8, 8, 8, 8]);
    let flight: Vec<f64> = stages.iter().map(|s| s["in_flight"].as_f64().unwrap()).collect();
    assert_eq!(flight, [4.0, 3.0, 2.0, 1.0]);
    // the stage `estimate` reports (the most loaded) has the same total in both places
    let totals: Vec<u64> = stages.iter().map(|s| s["total"].as_u64().unwrap()).collect();
    assert_eq!(totals.iter().max(), v["bytes"]["total"].as_u64().as_ref(), "{v:#}");
    assert_eq!(totals.iter().max(), totals.first(), "stage 0, 4 micro-batches in flight: {totals:?}");
    assert!(totals[1] > totals[2], "fewer micro-batches in flight, less memory: {totals:?}");
    // the table names the ranks of each stage (the pipeline outermost: 2 ranks a stage)
    let text = String::from_utf8(run(&args[..args.len() - 1]).stdout).unwrap();
    assert!(text.contains("stage  2 (ranks 4-5):"), "{text}");
    assert!(text.contains("<- most loaded"), "{text}");
}

#[test]
fn the_headline_is_the_most_loaded_stage_and_inference_charges_the_logits_to_the_last() {
    // the default micro-batches: the flat estimate and the replayed one pick different stages
    let v = json(&[
        "estimate",
        "--model",
        "llama-3.1-8b",
        "--pp",
        "4",
        "--dp",
        "2",
        "--gpu",
        "h100-80gb",
        "--stages",
        "--json",
    ]);
    let totals: Vec<u64> =
        v["stages"].as_array().unwrap().iter().map(|s| s["total"].as_u64().unwrap()).collect();
    assert_eq!(totals.iter().max(), v["bytes"]["total"].as_u64().as_ref(), "{totals:?}");
    // inference through a pipeline: only the last stage runs the LM head
    let v = json(&[
        "estimate",
        "--model",
        "llama-3.1-8b",
        "--mode",
        "infer",
        "--seq",
        "4096",
        "--pp",
        "2",
        "--stages",
        "--json",
    ]);
    let s = v["stages"].as_array().unwrap();
    let peak = |i: usize| s[i]["peak_allocated"].as_u64().unwrap();
    let params = |i: usize| s[i]["parameters"].as_u64().unwrap();
    // the last stage holds the bf16 logits (4096 x 128,256) at its peak; the first never does
    let logits = 4096 * 128_256 * 2;
    assert!(peak(1) - params(1) >= logits, "{:?}", (peak(0), peak(1)));
    assert!(peak(0) - params(0) < logits, "{:?}", (peak(0), peak(1)));
}

#[test]
fn a_cluster_csv_trace_is_diagnosed_gpu_by_gpu_per_host() {
    // the Live tab's CSV of two hosts, both with a GPU 0: node-b's leaks
    let g = 1u64 << 30;
    let mut csv = String::from("t_s,gpu,used_bytes,total_bytes,host\n");
    for i in 0..30u64 {
        csv += &format!("{},0,{},{},node-a\n", 1000 + i, 40 * g + (i % 2) * 10 * g, 80 * g);
        csv += &format!("{},0,{},{},node-b\n", 1000 + i, 30 * g + i * g / 2, 80 * g);
    }
    let path = std::env::temp_dir().join(format!("vramscope-cluster-{}.csv", std::process::id()));
    std::fs::write(&path, csv).unwrap();
    let p = path.to_str().unwrap();
    let v = json(&["diagnose", "--trace", p, "--json"]);
    let gpus: Vec<(String, String)> = v["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["host"].as_str().unwrap().to_owned(), x["verdict"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(gpus, [("node-a".into(), "healthy".into()), ("node-b".into(), "leak".into())], "{v:#}");
    let text = String::from_utf8(run(&["diagnose", "--trace", p]).stdout).unwrap();
    assert!(text.contains("fails: 1 of 2 GPUs (node-b GPU 0)"), "{text}");
    // one GPU index would mix the hosts: refused in one line
    let out = run(&["diagnose", "--trace", p, "--gpu-index", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("GPUs by host") && err.trim().lines().count() == 1, "{err}");
    let _ = std::fs::remove_file(&path);
    // a recording of `monitor --prometheus --range --json` reads the same way
    let rec = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/prometheus/cluster-recording.json");
    let text = String::from_utf8(run(&["diagnose", "--trace", rec]).stdout).unwrap();
    assert!(text.contains("fails: 1 of 8 GPUs (node-b GPU 3)"), "{text}");
}

#[test]
fn virtual_stages_must_divide_the_blocks() {
    let out = run(&["estimate", "--model", "llama-3.1-8b", "--pp", "4", "--virtual-stages", "3"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--virtual-stages 3") && err.trim().lines().count() == 1, "{err}");
    assert!(
        run(&["estimate", "--model", "llama-3.1-8b", "--pp", "4", "--virtual-stages", "2"]).status.success()
    );
}

#[test]
fn litgpt_model_code_says_which_families_it_walks() {
    // litgpt's own GPT is walked for Llama-like, Phi and GPT-NeoX models; others say they are not
    for (model, walked) in [("phi-1.5", true), ("llama-3.1-8b", true), ("gpt2", false)] {
        let v = json(&["estimate", "--model", model, "--framework", "litgpt", "--json"]);
        let note = v["notes"].to_string().contains("litgpt's own code is walked for");
        assert_eq!(note, !walked, "{model}: {}", v["notes"]);
    }
}

#[test]
fn fsdp_implementations_keep_their_own_gradients() {
    let base = [
        "estimate",
        "--model",
        "llama-2-7b",
        "--lora",
        "8:q,v",
        "--dp",
        "2",
        "--fsdp",
        "full_shard",
        "--grad-accum",
        "4",
    ];
    let with = |extra: &[&str]| {
        let args: Vec<&str> = base.iter().chain(extra).copied().chain(["--json"]).collect();
        json(&args)
    };
    // litgpt (Lightning's FSDPStrategy): the adapters share each block's flat parameter, whose
    // whole gradient no_sync keeps unsharded: 2 bytes for every block weight
    let lit = with(&["--framework", "litgpt"]);
    let g = lit["bytes"]["gradients"].as_u64().unwrap() as f64 / 1e9;
    assert!((12.9..13.1).contains(&g), "{g} GB");
    let notes = lit["notes"].to_string();
    assert!(notes.contains("no_sync") && notes.contains("frozen weights take gradients"), "{notes}");
    // PEFT's wrap policy (the HF Trainer) and FSDP2 keep the adapters' gradients only
    for extra in [&["--fsdp-impl", "fsdp1"][..], &["--framework", "torchtune"]] {
        let v = with(extra);
        assert!(v["bytes"]["gradients"].as_u64().unwrap() < 100_000_000, "{extra:?}: {}", v["bytes"]);
    }
    // naming the implementation without FSDP, or an unknown one, is a usage error
    assert_usage_error(&["estimate", "--model", "gpt2", "--fsdp-impl", "fsdp2"], "--fsdp");
    assert_usage_error(
        &["estimate", "--model", "gpt2", "--dp", "2", "--fsdp", "full_shard", "--fsdp-impl", "fsdp3"],
        "fsdp3",
    );
}

/// The JSON names every setting the per-GPU figures depend on: the layout (degrees, sharding,
/// offload), whose FSDP and bitsandbytes run, and how many NCCL communicators the default counts.
#[test]
fn the_json_names_the_layout_and_the_stack_it_is_for() {
    let v = json(&[
        "estimate",
        "--model",
        "llama-2-7b",
        "--dp",
        "4",
        "--tp",
        "2",
        "--fsdp",
        "full_shard",
        "--fsdp-impl",
        "fsdp2",
        "--lora",
        "16:q,v",
        "--base-quant",
        "nf4",
        "--bitsandbytes",
        "lightning",
        "--json",
    ]);
    let sc = &v["scenario"];
    assert_eq!(sc["parallel"]["dp"], 4);
    assert_eq!(sc["parallel"]["tp"], 2);
    assert_eq!(sc["parallel"]["fsdp"], "full_shard");
    assert_eq!(sc["stack"]["fsdp_impl"], "fsdp2");
    assert_eq!(sc["stack"]["bitsandbytes"], "lightning");
    // the data- and tensor-parallel groups
    assert_eq!(v["nccl_communicators"], 2);
    assert_eq!(v["bytes"]["overhead_terms"]["nccl"], 2 * (256u64 << 20));
    let one = json(&["estimate", "--model", "llama-2-7b", "--json"]);
    assert_eq!(one["nccl_communicators"], 0);
    assert_eq!(one["bytes"]["overhead_terms"]["nccl"], 0);
}

#[test]
fn a_split_model_says_whose_parameter_counts_the_table_shows() {
    // tensor parallelism: the model's count, the rank's slice and its trainable part, each named
    let out = run(&["estimate", "--model", "llama-2-7b", "--tp", "2", "--lora", "16:q,v"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let head = text.lines().next().unwrap_or_default();
    assert!(head.contains("on this GPU's rank"), "{head}");
    let v = json(&["estimate", "--model", "llama-2-7b", "--tp", "2", "--lora", "16:q,v", "--json"]);
    let (n, rank, trainable) = (
        v["model"]["n_params"].as_u64().unwrap(),
        v["model"]["rank_params"].as_u64().unwrap(),
        v["model"]["trainable_params"].as_u64().unwrap(),
    );
    assert!(rank < n && trainable < rank, "{n} {rank} {trainable}");
    // the whole model's LoRA adapters, halved by the column split of q and v
    let whole = json(&["estimate", "--model", "llama-2-7b", "--lora", "16:q,v", "--json"]);
    assert_eq!(whole["model"]["rank_params"], whole["model"]["n_params"]);
    let all = whole["model"]["trainable_params"].as_u64().unwrap();
    assert!(trainable < all && trainable * 2 >= all, "{trainable} of {all}");
    // one GPU: no rank wording
    let plain = run(&["estimate", "--model", "llama-2-7b"]);
    assert!(!String::from_utf8_lossy(&plain.stdout).contains("on this GPU's rank"));
    // HSDP names the shard group the states divide over and the replicas across nodes
    let out = run(&["estimate", "--model", "llama-2-7b", "--fsdp", "hybrid_shard", "--dp", "16"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("sharded over 8 GPUs and replicated 2 times"), "{text}");
}

/// Before PyTorch 2.0 there is no SDPA: asked for, the attention becomes eager (the scenario, its
/// JSON and exports say so) with a note naming the flag; from 2.0 SDPA stays.
#[test]
fn a_pytorch_without_sdpa_estimates_eager_attention_and_says_so() {
    let args = |torch: &'static str| {
        ["estimate", "--model", "llama-3.1-8b", "--attention", "sdpa", "--torch", torch, "--json"]
    };
    for (torch, sdpa) in [("1.10", false), ("1.13", false), ("2.0", true), ("2.5", true)] {
        let v = json(&args(torch));
        let attention = v["scenario"]["attention"].as_str().unwrap_or_default().to_owned();
        let noted = v["notes"].as_array().is_some_and(|n| {
            n.iter().any(|s| s.as_str().is_some_and(|s| s.contains("no scaled_dot_product_attention")))
        });
        assert_eq!(attention == "sdpa", sdpa, "--torch {torch}: attention {attention}");
        assert_eq!(noted, !sdpa, "--torch {torch}: {}", v["notes"]);
    }
    // the same numbers as asking for eager
    let eager =
        json(&["estimate", "--model", "llama-3.1-8b", "--attention", "eager", "--torch", "1.13", "--json"]);
    assert_eq!(json(&args("1.13"))["bytes"]["total"], eager["bytes"]["total"]);
}

/// An export's report is the estimate `estimate` prints for the same flags, with or without a
/// card (without one: the allocator replayed over the step, as `estimate` does).
#[test]
fn the_json_export_reports_what_estimate_prints() {
    for gpu in [None, Some("a100-80gb")] {
        let mut base = vec!["--model", "llama-3.1-8b", "--batch", "2", "--torch", "1.10"];
        if let Some(g) = gpu {
            base.extend(["--gpu", g]);
        }
        let est = json(&[&["estimate", "--json"][..], &base].concat());
        let exp = json(&[&["export", "--format", "json"][..], &base].concat());
        for key in ["total", "reserved", "peak_allocated", "overhead"] {
            assert_eq!(exp["bytes"][key], est["bytes"][key], "{gpu:?}: {key}");
        }
    }
}
