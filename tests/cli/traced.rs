//! Traced models (`tests/data/traced/`): a model file, its trace (`vramscope_trace.py` over a
//! grid of dims) and the truth measured by `tests/data/truth/measure_traced.py` at sizes that
//! were not traced. The estimate replays the trace at those sizes.

use super::{data, json, run};
use serde_json::Value;

/// The truth rows of one traced model (a path under the repository).
fn truth(file: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(format!("{}/{file}", env!("CARGO_MANIFEST_DIR"))).expect("truth file");
    serde_json::from_str::<Vec<Value>>(&text).expect("rows")
}

/// `estimate --json` of `trace` (a path under the repository) at a truth row's dims.
fn estimate_at(trace: &str, row: &Value, infer: bool) -> Value {
    let dims = row["dims"].as_object().expect("dims");
    // a built-in traced preset by its name, else a file of the repository
    let path = if trace.contains('/') {
        format!("{}/{trace}", env!("CARGO_MANIFEST_DIR"))
    } else {
        trace.to_owned()
    };
    let mut args: Vec<String> = vec!["estimate".into(), "--model".into(), path, "--json".into()];
    let (h, w) = (dims.get("height"), dims.get("width"));
    for (k, v) in dims {
        match k.as_str() {
            "batch" => args.extend(["--batch".into(), v.to_string()]),
            "height" | "width" => {}
            _ => args.extend(["--dim".into(), format!("{k}={v}")]),
        }
    }
    if let (Some(h), Some(w)) = (h, w) {
        args.extend(["--image-size".into(), format!("{h}x{w}")]);
    }
    if infer {
        args.extend(["--mode".into(), "infer".into()]);
    } else if row["checkpoint"].as_array().is_some_and(|c| !c.is_empty()) {
        // measured with the trace's blocks checkpointed
        args.extend(["--checkpoint".into(), "full".into()]);
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    json(&refs)
}

fn within(got: u64, want: u64, tol: f64) -> bool {
    (got as f64 - want as f64).abs() <= tol * want as f64
}

#[test]
fn a_traced_model_answers_untraced_sizes_as_pytorch_measures_them() {
    for (trace, truth_file) in [
        ("tests/data/traced/convattn-fp32.vstrace.json", "tests/data/traced/truth-convattn-fp32.json"),
        ("tests/data/traced/block-bf16-lora.vstrace.json", "tests/data/traced/truth-block-bf16-lora.json"),
        ("tests/data/traced/tiny-unet-bf16.vstrace.json", "tests/data/traced/truth-tiny-unet-bf16.json"),
        (
            "tests/data/traced/tiny-unet-amp-lora.vstrace.json",
            "tests/data/traced/truth-tiny-unet-amp-lora.json",
        ),
        // Stable Diffusion 1.5's UNet at its real size (860 M parameters), at 768² and 1024×704
        ("sd1.5-unet", "examples/trace/truth-sd15-unet-bf16.json"),
        // its LoRA under autocast, with and without its blocks checkpointed
        ("sd1.5-unet-lora", "examples/trace/truth-sd15-unet-lora-amp.json"),
        // the other built-in traces (bf16-amp): SD 3.5 Medium's LoRA checkpointed at 1024²
        // (traced at 512-640²), the SD VAE, torchvision's ResNet-50 and ViT-B/16
        ("sd3.5-medium-lora", "examples/trace/truth-sd3.5-medium-lora.json"),
        ("sd-vae", "examples/trace/truth-sd-vae.json"),
        ("tv-resnet50", "examples/trace/truth-resnet50.json"),
        ("tv-vit-b16", "examples/trace/truth-vit-b16.json"),
    ] {
        for row in truth(truth_file) {
            let v = estimate_at(trace, &row, false);
            let b = &v["bytes"];
            let peak = b["peak_allocated"].as_u64().expect("peak");
            let want = row["peak_gpu_bytes"].as_u64().expect("truth peak");
            // checkpointing replays the recompute from the recorded forward: within 2 %
            let ckpt = row["checkpoint"].as_array().is_some_and(|c| !c.is_empty());
            let tol = if ckpt { 0.02 } else { 0.005 };
            assert!(within(peak, want, tol), "{trace} {}: peak {peak} against {want}", row["dims"]);
            let acts = b["activations"].as_u64().expect("activations");
            let want_acts = row["activation_saved_bytes"].as_u64().expect("truth activations");
            assert!(
                within(acts, want_acts, 0.03),
                "{trace} {}: activations {acts} against {want_acts}",
                row["dims"]
            );
            assert_eq!(v["model"]["n_params"], row["n_params"]);
            assert_eq!(v["model"]["trainable_params"], row["n_trainable"]);
            let inf = estimate_at(trace, &row, true)["bytes"]["peak_allocated"].as_u64().expect("peak");
            let want = row["infer_peak_bytes"].as_u64().expect("truth infer peak");
            assert!(within(inf, want, 0.005), "{trace} {} inference: {inf} against {want}", row["dims"]);
        }
    }
}

#[test]
fn a_traced_model_says_what_was_traced_and_what_is_extrapolated() {
    let path = data("traced/convattn-fp32.vstrace.json");
    // a traced point: the recorded step itself
    let v = json(&["estimate", "--model", &path, "--batch", "3", "--image-size", "24x32", "--json"]);
    assert_eq!(v["model"]["family"], "traced");
    assert_eq!(v["model"]["validated"], true);
    assert_eq!(v["model"]["trace"]["extrapolated"], false);
    // another size: fitted shapes, said so in the JSON and the text
    let v = json(&["estimate", "--model", &path, "--batch", "7", "--image-size", "64x64", "--json"]);
    assert_eq!(v["model"]["validated"], false);
    assert_eq!(v["model"]["trace"]["extrapolated"], true);
    assert_eq!(v["model"]["trace"]["dims"][0]["name"], "batch");
    assert_eq!(v["model"]["trace"]["dims"][0]["value"], 7);
    let out = run(&["estimate", "--model", &path, "--batch", "7", "--image-size", "64x64"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("EXTRAPOLATED") && text.contains("batch at 2, 3, 4"), "{text}");
    let info = run(&["trace", "--info", &path]);
    let text = String::from_utf8_lossy(&info.stdout);
    assert!(text.contains("dim height: traced at 16, 24, 32; answers any value"), "{text}");
}

#[test]
fn what_a_trace_cannot_tell_is_refused_with_what_to_trace() {
    let path = data("traced/convattn-fp32.vstrace.json");
    for (args, says) in [
        (vec!["--precision", "bf16"], "was traced in fp32"),
        (vec!["--image-size", "41x40"], "height = 40 or 42 works"),
        (vec!["--dim", "frames=4"], "--dim frames: convattn-fp32 was traced in batch, height, width"),
        (vec!["--seq", "128"], "--seq: convattn-fp32 is a traced model"),
        (vec!["--lora", "8"], "what trains is fixed by the trace"),
        (vec!["--tp", "2"], "tensor, pipeline, context and expert parallelism"),
        (vec!["--checkpoint", "full"], "the trace does not say what checkpointing does"),
        (vec!["--checkpoint", "every:2"], "is a layer stack's schedule"),
    ] {
        let mut a = vec!["estimate", "--model", path.as_str()];
        a.extend(&args);
        let out = run(&a);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says) && err.lines().count() == 1, "{args:?}: {err}");
    }
    let dir = std::env::temp_dir().join(format!("vramscope-traced-export-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("train.py");
    let out = run(&["export", "--model", &path, "--format", "hf", "-o", file.to_str().expect("utf-8")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(2) && err.contains("a traced model's training code is your own"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
    let out = run(&["estimate", "--model", "llama-3.1-8b", "--dim", "x=3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("only a traced model"));
}

#[test]
fn the_tracer_script_is_written_and_a_broken_trace_is_one_line_and_exit_2() {
    let out = run(&["trace", "--emit-script"]);
    let script = String::from_utf8_lossy(&out.stdout);
    assert!(script.starts_with("#!/usr/bin/env python3") && script.contains("FakeTensorMode"));
    let good = std::fs::read_to_string(data("traced/convattn-fp32.vstrace.json")).expect("trace");
    let dir = std::env::temp_dir().join(format!("vramscope-traced-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let bad = dir.join("bad.vstrace.json");
    for cut in [0, 10, good.len() / 3, good.len() - 2] {
        std::fs::write(&bad, &good[..cut]).expect("write");
        let out = run(&["estimate", "--model", bad.to_str().expect("utf-8")]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "cut at {cut}: {err}");
        assert!(err.contains("bad.vstrace.json") && err.lines().count() == 1, "{err}");
    }
    // past the size cap: refused before it is read
    let big = std::fs::File::create(&bad).expect("create");
    big.set_len(vramscope::trace::MAX_FILE + 1).expect("sparse file");
    let out = run(&["estimate", "--model", bad.to_str().expect("utf-8")]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("over the 50 MB a trace may have"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_saved_traced_scenario_and_its_flags_give_the_same_estimate() {
    let path = data("traced/block-bf16-lora.vstrace.json");
    let direct = json(&["estimate", "--model", &path, "--batch", "6", "--dim", "seq=160", "--json"]);
    let dir = std::env::temp_dir().join(format!("vramscope-traced-ron-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let ron = dir.join("s.ron");
    let ron = ron.to_str().expect("utf-8");
    let out =
        run(&["export", "--model", &path, "--batch", "6", "--dim", "seq=160", "--format", "ron", "-o", ron]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let saved = json(&["estimate", "--scenario", ron, "--json"]);
    assert_eq!(saved["bytes"], direct["bytes"]);
    assert_eq!(saved["model"]["trace"]["dims"][1]["value"], 160);
    // the md report names the dims, not a sequence
    let md = dir.join("r.md");
    let out = run(&["export", "--scenario", ron, "--format", "md", "-o", md.to_str().expect("utf-8")]);
    assert!(out.status.success());
    let text = std::fs::read_to_string(&md).expect("report");
    assert!(text.contains("| micro-batch x dims | 6 x seq 160 |"), "{text}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn checkpointing_a_traced_model_wraps_its_blocks_and_says_which() {
    let path = data("traced/tiny-unet-amp-lora.vstrace.json");
    let at = ["--batch", "6", "--image-size", "640x448", "--json"];
    let mut a = vec!["estimate", "--model", path.as_str()];
    a.extend(at);
    let plain = json(&a);
    a.extend(["--checkpoint", "full"]);
    let ckpt = json(&a);
    assert_eq!(
        ckpt["model"]["trace"]["checkpoint_blocks"],
        serde_json::json!(["BasicTransformerBlock", "ResnetBlock2D"])
    );
    let (p, c) = (&plain["bytes"], &ckpt["bytes"]);
    let saves = |v: &Value| v["activations"].as_u64().expect("activations");
    assert!(saves(c) * 5 < saves(p), "checkpointing keeps {} of {}", saves(c), saves(p));
    assert_eq!(p["parameters"], c["parameters"]);
    let info = run(&["trace", "--info", &path]);
    let text = String::from_utf8_lossy(&info.stdout);
    assert!(text.contains("calls of BasicTransformerBlock, ResnetBlock2D checkpointed"), "{text}");
    let out = run(&["estimate", "--model", &path, "--checkpoint", "full"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("checkpoint full (BasicTransformerBlock, ResnetBlock2D)"), "{text}");
}

#[test]
fn flux_lora_checkpointed_at_an_untraced_size_is_as_pytorch_measures_it() {
    // FLUX.1-dev's transformer (11.9 B parameters) with its 57 blocks checkpointed, batch 1 at
    // 768×1024 (traced at 2-4 × 512-640²). The harness counts saved tensors through hooks, and
    // its checkpoint wrapper passes the blocks' keyword inputs, which the checkpoint holds
    // without saving: its activations are not comparable here, its peaks are.
    for row in truth("examples/trace/truth-flux-lora-amp-ckpt.json") {
        let v = estimate_at("flux.1-dev-lora", &row, false);
        let peak = v["bytes"]["peak_allocated"].as_u64().expect("peak");
        let want = row["peak_gpu_bytes"].as_u64().expect("truth peak");
        assert!(within(peak, want, 0.01), "{}: peak {peak} against {want}", row["dims"]);
        assert_eq!(v["model"]["n_params"], row["n_params"]);
        let inf =
            estimate_at("flux.1-dev-lora", &row, true)["bytes"]["peak_allocated"].as_u64().expect("peak");
        let want = row["infer_peak_bytes"].as_u64().expect("truth infer peak");
        assert!(within(inf, want, 0.005), "{} inference: {inf} against {want}", row["dims"]);
    }
}
