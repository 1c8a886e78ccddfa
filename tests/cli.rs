//! The `vramscope` command line: the JSON contract, error handling and exit codes. `plan` and
//! `diagnose` have their tests in `tests/cli/`.

use serde_json::Value;
use std::process::{Command, Output};

// groups of tests in tests/cli/ (modules of this one test binary)
#[path = "cli/catalog.rs"]
mod catalog;
#[path = "cli/diagnose.rs"]
mod diagnose;
#[path = "cli/plan.rs"]
mod plan;
#[path = "cli/traced.rs"]
mod traced;
#[path = "cli/vision.rs"]
mod vision;
#[path = "cli/vlm.rs"]
mod vlm;

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
    // (5 heads over 64 would be 5 heads of 12, as transformers floors it; 96 heads exceed 64)
    std::fs::write(&bad, "{\"model_type\": \"llama\", \"hidden_size\": 64,\n \"num_attention_heads\": 96}")
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
fn a_safetensors_header_alone_is_not_validated_but_a_measured_table_is() {
    let dir = std::env::temp_dir().join(format!("vramscope-cli-stonly-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let header = br#"{"embed.weight":{"dtype":"BF16","shape":[100,64],"data_offsets":[0,12800]}}"#;
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header);
    std::fs::write(dir.join("model.safetensors"), bytes).unwrap();
    let v = json(&["estimate", "--model", dir.to_str().unwrap(), "--json"]);
    assert_eq!(
        (v["model"]["family"].as_str(), v["model"]["validated"].as_bool()),
        (Some("layer_table"), Some(false))
    );
    let v = json(&["estimate", "--model", "resnet-50", "--json"]);
    assert_eq!(v["model"]["validated"], true);
    let _ = std::fs::remove_dir_all(&dir);
}

/// LFM2: a conv layer caches its last taps, an attention layer its K/V; its training and its
/// inference are measured (validated); `full_attn_idxs` and `block_ff_dim` (the files' spellings)
/// read as `layer_types` and `intermediate_size` do. A Mamba2 model caches its conv taps and its
/// fp32 scan state; its inference working set is not measured (flagged), its training is.
#[test]
fn recurrent_layers_cache_their_state_and_unmeasured_inference_is_flagged() {
    let cfg = data("truth/configs/lfm2_tiny.json");
    let v = json(&["estimate", "--model", &cfg, "--mode", "infer", "--batch", "2", "--seq", "256", "--json"]);
    // one attention layer: 2 (K, V) x b 2 x s 256 x 2 KV heads x 32 x bf16; three conv layers:
    // b 2 x h 256 x 3 taps x bf16
    assert_eq!(v["bytes"]["kv_cache"], 2 * 2 * 256 * 64 * 2 + 3 * (2 * 256 * 3 * 2));
    assert_eq!(v["model"]["validated"], true);
    let mamba2 = data("truth/configs/mamba2_tiny.json");
    let m =
        json(&["estimate", "--model", &mamba2, "--mode", "infer", "--batch", "2", "--seq", "256", "--json"]);
    // 4 layers x (conv taps: b 2 x (512 + 2 x 2 x 16) x 4 x bf16 + state: b 2 x 512 x 16 x fp32)
    assert_eq!(m["bytes"]["kv_cache"], 4 * (2 * 576 * 4 * 2 + 2 * 512 * 16 * 4));
    assert_eq!(m["model"]["validated"], false);
    let m = json(&["estimate", "--model", &mamba2, "--json"]);
    assert_eq!(m["model"]["validated"], true);
    let v = json(&["estimate", "--model", &cfg, "--json"]);
    assert_eq!(v["model"]["validated"], true);
    let n = v["model"]["n_params"].clone();
    let dir = std::env::temp_dir().join(format!("vramscope-cli-lfm2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut c: Value = serde_json::from_slice(&std::fs::read(&cfg).unwrap()).unwrap();
    let o = c.as_object_mut().unwrap();
    o.remove("layer_types");
    let i = o.remove("intermediate_size").unwrap();
    o.insert("full_attn_idxs".into(), serde_json::json!([2]));
    o.insert("block_ff_dim".into(), i);
    let path = dir.join("config.json");
    std::fs::write(&path, c.to_string()).unwrap();
    let v = json(&["estimate", "--model", path.to_str().unwrap(), "--json"]);
    assert_eq!(v["model"]["n_params"], n);
    let _ = std::fs::remove_dir_all(&dir);
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
            // Qwen2-MoE follows its family's rules but has not been measured itself; Llama 4's
            // multimodal wrapper is measured as text only
            let unmeasured = dir == "qwen2-moe";
            let wrapper = dir.starts_with("llama-4-");
            // SiglipModel: the vision tower walked, the text tower counted only
            let two_towers = dir == "siglip-so400m";
            assert_eq!(
                v["model"]["validated"],
                !generic && !unmeasured && !wrapper && !two_towers,
                "{path}: {}",
                v["model"]
            );
            if wrapper {
                assert!(v["notes"].to_string().contains("wraps a llama4_text"), "{path}: {}", v["notes"]);
            }
            if two_towers {
                assert!(
                    v["notes"].to_string().contains("only the vision tower is walked"),
                    "{path}: {}",
                    v["notes"]
                );
            }
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

#[test]
fn litgpt_precision_names_mean_what_lightning_means() {
    // Lightning's bf16-mixed is autocast over fp32 weights (bf16-amp), its bf16-true pure bf16;
    // without litgpt, bf16-mixed stays the fp32-master recipe of DeepSpeed and Megatron
    let total = |extra: &[&str]| {
        let mut a = vec!["estimate", "--model", "llama-3.1-8b", "--seq", "2048", "--json"];
        a.extend_from_slice(extra);
        let v = json(&a);
        (v["bytes"]["total"].as_u64().unwrap(), v["scenario"]["precision"].clone(), v["notes"].to_string())
    };
    let lit = |p| total(&["--framework", "litgpt", "--precision", p]);
    let (mixed, prec, notes) = lit("bf16-mixed");
    assert_eq!(prec, "bf16-amp");
    assert!(notes.contains("Lightning's bf16-mixed is torch.autocast over fp32 weights"), "{notes}");
    assert_eq!(mixed, lit("bf16-amp").0);
    let (pure, prec, notes) = lit("bf16-true");
    assert_eq!(prec, "bf16");
    assert!(notes.contains("Lightning's bf16-true"), "{notes}");
    assert_eq!(pure, lit("bf16").0);
    assert!(mixed > pure);
    assert_eq!(lit("16-mixed").1, "fp16-amp");
    assert_eq!(lit("16-true").1, "fp16");
    assert_eq!(lit("32-true").1, "fp32");
    // elsewhere bf16-mixed keeps its meaning
    let (_, prec, _) = total(&["--precision", "bf16-mixed"]);
    assert_eq!(prec, "bf16-mixed");
    let (_, prec, _) = total(&["--framework", "torchtune", "--precision", "bf16-mixed"]);
    assert_eq!(prec, "bf16-mixed");
}

#[test]
fn deepspeed_buckets_are_a_named_component_in_json_and_text() {
    let args =
        ["estimate", "--model", "llama-3.1-8b", "--dp", "8", "--zero", "2", "--precision", "bf16-mixed"];
    let mut j = args.to_vec();
    j.push("--json");
    let v = json(&j);
    assert_eq!(v["bytes"]["zero_buckets"], 2_000_000_000u64);
    // alive in the backward only: at this peak (the optimizer step) they are gone
    assert_eq!(v["peak_phase"], "optimizer_step");
    assert_eq!(v["at_peak"]["zero_buckets"], 0);
    let out = run(&args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ZeRO buckets"), "{text}");
}

/// `vramscope --help | head -1`: the reader closes the pipe before the help is written; the
/// command ends quietly instead of panicking on the write.
#[test]
fn a_closed_pipe_is_not_a_panic() {
    use std::process::Stdio;
    for args in [&["timeline", "--help"][..], &["estimate", "--model", "llama-3.1-8b"][..]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_vramscope"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take()); // the reader is gone before anything is written
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// A checkpoint's multi-token-prediction layers (`model.layers.N.*` past `num_hidden_layers`,
/// DeepSeek-V3's and GLM-4.5's `num_nextn_predict_layers`) are not loaded by transformers: the
/// header's count leaves them out and says so.
#[test]
fn multi_token_prediction_layers_in_a_header_are_left_out() {
    let dir = std::env::temp_dir().join(format!("vramscope-mtp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.json"),
        r#"{"model_type":"llama","architectures":["LlamaForCausalLM"],"vocab_size":16,"hidden_size":8,
        "intermediate_size":16,"num_hidden_layers":1,"num_attention_heads":2,"tie_word_embeddings":false,
        "num_nextn_predict_layers":1}"#,
    )
    .unwrap();
    let mut tensors = vec![
        ("model.embed_tokens.weight", vec![16, 8]),
        ("model.norm.weight", vec![8]),
        ("lm_head.weight", vec![16, 8]),
        ("model.layers.0.input_layernorm.weight", vec![8]),
        ("model.layers.0.post_attention_layernorm.weight", vec![8]),
        ("model.layers.0.mlp.gate_proj.weight", vec![16, 8]),
        ("model.layers.0.mlp.up_proj.weight", vec![16, 8]),
        ("model.layers.0.mlp.down_proj.weight", vec![8, 16]),
    ];
    for p in ["q", "k", "v", "o"] {
        tensors.push((
            Box::leak(format!("model.layers.0.self_attn.{p}_proj.weight").into_boxed_str()),
            vec![8, 8],
        ));
    }
    // the MTP layer
    tensors.push(("model.layers.1.eh_proj.weight", vec![8, 16]));
    tensors.push(("model.layers.1.enorm.weight", vec![8]));
    let mut header = serde_json::Map::new();
    let mut off = 0u64;
    for (name, shape) in &tensors {
        let n: u64 = shape.iter().product::<u64>() * 2;
        header.insert(
            (*name).into(),
            serde_json::json!({"dtype": "BF16", "shape": shape, "data_offsets": [off, off + n]}),
        );
        off += n;
    }
    let h = serde_json::Value::Object(header).to_string().into_bytes();
    let mut bytes = (h.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(&h);
    bytes.resize(bytes.len() + off as usize, 0);
    std::fs::write(dir.join("model.safetensors"), bytes).unwrap();
    let out = run(&["estimate", "--model", dir.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let family = 2 * 16 * 8 + 8 + 2 * 8 + 3 * 16 * 8 + 4 * 8 * 8; // ends, final norm, block norms, MLP, q/k/v/o
    assert_eq!(v["model"]["n_params"], family);
    assert_eq!(v["model"]["header_check"]["agrees"], true);
    assert!(v["model"]["header_check"]["resolved"].to_string().contains("multi-token-prediction"), "{v}");
}
