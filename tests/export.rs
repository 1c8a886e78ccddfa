//! Golden-file tests for every export format, the scenario round trip through the CLI, and write
//! failures. Regenerate the goldens after an intended change with `UPDATE_GOLDEN=1 cargo test --test export`
//! and review the diff.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use vramscope::estimate::{Checkpointing, Offload, Optimizer, Scenario};
use vramscope::export::{self, Format, ScenarioFile};
use vramscope::gpu;
use vramscope::model::preset::builtin;
use vramscope::units::Precision;

fn plans() -> Vec<(&'static str, ScenarioFile)> {
    // a ZeRO-3 fine-tune on 8 A100s
    let mut a = Scenario::new(builtin("llama-2-7b").unwrap());
    a.seq = 4096;
    a.batch = 2;
    a.checkpointing = Checkpointing::Full;
    a.parallel.dp = 8;
    a.parallel.zero = 3;
    // a 3D-parallel GPT-3 pre-training layout
    let mut b = Scenario::new(builtin("gpt3-175b-megatron").unwrap());
    b.seq = 2048;
    b.precision = Precision::Fp16Mixed;
    b.checkpointing = Checkpointing::Selective;
    b.parallel.tp = 8;
    b.parallel.pp = 8;
    b.parallel.dp = 4;
    b.parallel.sp = true;
    b.parallel.zero = 1;
    b.parallel.micro_batches = 16;
    // a 13B fine-tune that does not fit one 24 GB card, with offload
    let mut c = Scenario::new(builtin("llama-2-13b").unwrap());
    c.seq = 2048;
    c.batch = 4;
    c.precision = Precision::Fp32;
    c.optimizer = Optimizer::Adamw8bit;
    c.parallel.offload = Offload::Optimizer;
    c.parallel.zero = 2;
    vec![
        ("zero3-7b", ScenarioFile::new(a, Some(&gpu::find("a100-80gb").unwrap()), Some(64))),
        ("gpt3-3d", ScenarioFile::new(b, Some(&gpu::find("a100-80gb").unwrap()), Some(1536))),
        ("13b-24gb", ScenarioFile::new(c, Some(&gpu::find("rtx-4090").unwrap()), None)),
    ]
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden")
}

/// The golden file of plan `name` in `format`: `{name}.{ext}` where the format's name is its
/// extension (`zero3-7b.json`), else `{name}.{format}.{ext}` (`zero3-7b.deepspeed.json`).
fn golden_path(name: &str, format: Format) -> PathBuf {
    let (fname, ext) = (format.name(), format.extension());
    if fname == ext {
        golden_dir().join(format!("{name}.{ext}"))
    } else {
        golden_dir().join(format!("{name}.{fname}.{ext}"))
    }
}

#[test]
fn every_format_matches_its_golden_file() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut failures = Vec::new();
    for (name, plan) in plans() {
        for (format, fname) in Format::ALL {
            let text = export::render(&plan, format).unwrap();
            // rendering is deterministic
            assert_eq!(text, export::render(&plan, format).unwrap(), "{name}.{fname}");
            let path = golden_path(name, format);
            if update {
                std::fs::write(&path, &text).unwrap();
                continue;
            }
            match std::fs::read_to_string(&path) {
                Ok(want) if want == text => {}
                Ok(want) => {
                    let line = want.lines().zip(text.lines()).position(|(a, b)| a != b).unwrap_or(0);
                    failures.push(format!(
                        "{}: differs at line {}:\n  want: {:?}\n  got:  {:?}",
                        path.display(),
                        line + 1,
                        want.lines().nth(line),
                        text.lines().nth(line)
                    ));
                }
                Err(e) => failures.push(format!("{}: {e} (UPDATE_GOLDEN=1 creates it)", path.display())),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_golden_file_is_one_the_test_reads() {
    let read: std::collections::BTreeSet<PathBuf> = plans()
        .iter()
        .flat_map(|(name, _)| Format::ALL.iter().map(|&(format, _)| golden_path(name, format)))
        .collect();
    let mut stray = Vec::new();
    for entry in std::fs::read_dir(golden_dir()).unwrap() {
        let path = entry.unwrap().path();
        if !read.contains(&path) {
            stray.push(path.display().to_string());
        }
    }
    assert!(stray.is_empty(), "golden files no test reads (renamed or stale): {stray:?}");
    assert_eq!(read.len(), plans().len() * Format::ALL.len(), "each plan and format its own file");
}

#[test]
fn golden_scenario_files_load_back_to_the_same_plan() {
    for (name, plan) in plans() {
        let path = golden_path(name, Format::Ron);
        let f = ScenarioFile::load(&path).unwrap();
        assert_eq!(f, plan, "{name}");
    }
}

#[test]
fn deepspeed_configs_use_documented_keys_and_consistent_batches() {
    for (name, plan) in plans() {
        let v = export::deepspeed_config(&plan);
        for k in v.as_object().unwrap().keys() {
            assert!(export::DEEPSPEED_KEYS.contains(&k.as_str()), "{name}: {k}");
        }
        for k in v["zero_optimization"].as_object().unwrap().keys() {
            assert!(export::DEEPSPEED_ZERO_KEYS.contains(&k.as_str()), "{name}: zero_optimization.{k}");
        }
        let tb = v["train_batch_size"].as_u64().unwrap();
        let mb = v["train_micro_batch_size_per_gpu"].as_u64().unwrap();
        let ga = v["gradient_accumulation_steps"].as_u64().unwrap();
        assert_eq!(tb, mb * ga * plan.scenario.parallel.dp, "{name}: DeepSpeed's batch assertion");
        assert!(tb >= plan.global_batch(), "{name}");
    }
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vramscope")).args(args).output().unwrap()
}

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vramscope-export-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn cli_export_round_trips_and_never_overwrites_silently() {
    let d = tmp("cli");
    let ron = d.join("plan.ron");
    let r = ron.to_str().unwrap();
    let flags = ["--model", "llama-2-7b", "--gpu", "a100-80gb", "--batch", "2", "--seq", "4096"];
    let mut args = vec!["export"];
    args.extend(flags);
    args.extend(["--format", "ron", "-o", r]);
    let out = run(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let saved = std::fs::read(&ron).unwrap();
    // the saved scenario gives the same estimate as the flags
    let mut est = vec!["estimate", "--json"];
    est.extend(flags);
    let from_flags: serde_json::Value = serde_json::from_slice(&run(&est).stdout).unwrap();
    let from_file: serde_json::Value =
        serde_json::from_slice(&run(&["estimate", "--json", "--scenario", r]).stdout).unwrap();
    assert_eq!(from_flags["bytes"], from_file["bytes"]);
    assert_eq!(from_flags["max_batch"], from_file["max_batch"]);
    // an existing file is refused, untouched
    let out = run(&["export", "--model", "gpt2", "--format", "ron", "-o", r]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("already exists") && err.contains("--force"), "{err}");
    assert_eq!(std::fs::read(&ron).unwrap(), saved);
    // --force replaces it
    let out = run(&["export", "--model", "gpt2", "--format", "ron", "-o", r, "--force"]);
    assert!(out.status.success());
    assert!(
        std::fs::read_to_string(&ron).unwrap().contains("\"GPT-2\"") || std::fs::read(&ron).unwrap() != saved
    );
    // a folder that is a file: a clear error and nothing written
    let blocker = d.join("not-a-dir");
    std::fs::write(&blocker, "x").unwrap();
    let bad = blocker.join("out.md");
    let out = run(&["export", "--scenario", r, "--format", "md", "-o", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not-a-dir"));
    // a broken scenario file names file and line
    std::fs::write(d.join("bad.ron"), "(\n  schema: 1,\n  scenario: oops,\n)\n").unwrap();
    let out = run(&["estimate", "--scenario", d.join("bad.ron").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.ron:3:"), "{err}");
    // png is GUI-only, said plainly
    let out = run(&["export", "--scenario", r, "--format", "png"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("GUI-only"));
    let names: Vec<_> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(names.iter().all(|n| !n.to_string_lossy().ends_with(".tmp")), "no temporaries: {names:?}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[cfg(unix)]
#[test]
fn a_read_only_folder_gives_a_clear_error_and_leaves_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let d = tmp("ro");
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o555)).unwrap();
    let probe = d.join("probe");
    if std::fs::write(&probe, "x").is_ok() {
        // running as root: permissions do not bind; the not-a-folder case above covers the path
        let _ = std::fs::remove_file(&probe);
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
        return;
    }
    let out = d.join("plan.md");
    let r = run(&["export", "--model", "gpt2", "--format", "md", "-o", out.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(2));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("plan.md") && err.to_lowercase().contains("permission"), "{err}");
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn an_accumulating_scenario_exports_the_accumulation_it_was_estimated_with() {
    let mut sc = Scenario::new(builtin("llama-2-7b").unwrap());
    sc.batch = 2;
    sc.parallel.dp = 4;
    sc.stack.grad_accum = 8;
    let f = ScenarioFile::new(sc, Some(&gpu::find("a100-80gb").unwrap()), None);
    assert_eq!(f.global_batch(), 2 * 4 * 8);
    assert_eq!(f.grad_accum(), 8);
    let v = export::deepspeed_config(&f);
    assert_eq!(v["gradient_accumulation_steps"].as_u64(), Some(8));
    assert_eq!(v["train_batch_size"].as_u64(), Some(64));
}

/// `vramscope estimate --model M ARGS --json`'s per-GPU total, formatted as the notes print it.
fn estimate_gib(cmd: &str) -> String {
    let words: Vec<&str> = cmd.trim_start_matches("vramscope ").split(' ').collect();
    let mut args = words.clone();
    args.push("--json");
    let out = run(&args);
    assert!(out.status.success(), "{cmd}: {}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    format!("{:.2} GiB", v["bytes"]["total"].as_u64().unwrap() as f64 / f64::from(1u32 << 30))
}

#[test]
fn a_framework_export_states_its_recipe_and_both_totals_re_estimate() {
    // the default pure-bf16 recipe exported to DeepSpeed: DeepSpeed runs bf16-mixed
    let dir = std::env::temp_dir().join(format!("vramscope-recipe-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let base = ["--model", "llama-2-13b", "--gpu", "a100-80gb", "--seq", "2048", "--dp", "8", "--zero", "3"];
    let out_path = dir.join("ds.json");
    let mut args = vec!["export"];
    args.extend(base);
    args.extend(["--format", "deepspeed", "-o", out_path.to_str().unwrap()]);
    let out = run(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let last = text.lines().last().unwrap();
    assert!(last.starts_with("note: differs from the scenario in --precision bf16-mixed"), "{text}");
    // the note's command re-estimates to the total it prints, and the scenario's total is estimate's
    let cmd = last.split_once('(').unwrap().1.split_once(')').unwrap().0;
    let framework = estimate_gib(cmd);
    assert!(last.contains(&format!("job is {framework} per GPU")), "{last} vs {framework}");
    let mut scenario = vec!["estimate"];
    scenario.extend(base);
    assert!(last.ends_with(&format!("the scenario's {}", estimate_gib(&scenario.join(" ")))), "{last}");
    // the JSON file itself is DeepSpeed's, and printed to stdout it stays parseable
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    assert_eq!(v["bf16"]["enabled"], true);
    let mut args = vec!["export"];
    args.extend(base);
    args.extend(["--format", "deepspeed"]);
    let out = run(&args);
    serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("stdout is the JSON alone");
    assert!(String::from_utf8_lossy(&out.stderr).contains("note: DeepSpeed: `bf16: {enabled: true}`"));
    // an inference scenario gets an inference config, and no training setup
    let out = run(&["export", "--model", "gpt2", "--mode", "infer", "--format", "deepspeed"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.get("train_batch_size").is_none() && v["tensor_parallel"]["tp_size"] == 1, "{v}");
    let out = run(&["export", "--model", "gpt2", "--mode", "infer", "--format", "megatron"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("training setup") && err.lines().count() == 1, "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The numbers of a text, in order ("6.74", "4096", "1.57", …).
fn numbers(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .map(|w| w.trim_matches(|c: char| c == '.' || c == '-'))
        .filter(|w| w.chars().any(|c| c.is_ascii_digit()))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_markdown_report_speaks_chinese_with_the_same_numbers() {
    let d = tmp("lang");
    let flags = ["--model", "llama-2-7b", "--gpu", "a100-80gb", "--batch", "2", "--seq", "4096"];
    let export_to = |name: &str, lang: Option<&str>| {
        let path = d.join(name);
        let mut args = vec!["export"];
        args.extend(flags);
        args.extend(["--format", "md", "-o", path.to_str().unwrap()]);
        if let Some(l) = lang {
            args.extend(["--lang", l]);
        }
        let out = run(&args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        std::fs::read_to_string(&path).unwrap()
    };
    let en = export_to("en.md", None);
    assert_eq!(en, export_to("en-explicit.md", Some("en")), "--lang en is the default");
    let zh = export_to("zh.md", Some("zh-CN"));
    for heading in [
        "# 显存规划：Llama-2-7B",
        "## 输入",
        "## 每 GPU 显存（负载最重的 rank）",
        "| 组成项 | 字节 | GiB |",
        "## 假设分析",
        "## 硬件方案（相同布局）",
        "峰值出现在：",
    ] {
        assert!(zh.contains(heading), "{heading} missing in:\n{zh}");
    }
    assert!(!zh.contains("## Per-GPU memory") && !zh.contains("Peak at:"), "{zh}");
    // the same figures in both languages (a Chinese sentence may name them in another order)
    let sorted = |s: &str| {
        let mut v = numbers(s);
        v.sort();
        v
    };
    assert_eq!(sorted(&en), sorted(&zh), "the same figures in both languages");
    assert_eq!(en.lines().count(), zh.lines().count());
    // the chart link finds the Chinese heading too
    let linked = export::with_chart_link(&zh, "plan.chart.png");
    assert!(
        linked.contains("## 每 GPU 显存（负载最重的 rank）\n\n![每 GPU 显存分解](plan.chart.png)\n"),
        "{linked}"
    );
    // other formats ignore the language
    let csv = |lang: &str| {
        let mut args = vec!["export"];
        args.extend(flags);
        args.extend(["--format", "csv", "--lang", lang]);
        run(&args).stdout
    };
    assert_eq!(csv("zh-CN"), csv("en"));
    // an unknown language: one line, exit 2, nothing written
    let bad = d.join("fr.md");
    let mut args = vec!["export"];
    args.extend(flags);
    args.extend(["--format", "md", "--lang", "fr", "-o", bad.to_str().unwrap()]);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("--lang") && err.contains("fr") && err.contains("zh-CN"), "{err}");
    assert!(!bad.exists());
    std::fs::remove_dir_all(&d).unwrap();
}

/// Scenarios whose framework exports must carry every setting the framework can express.
fn setting_cases() -> Vec<(&'static str, ScenarioFile)> {
    use vramscope::estimate::{AdapterDtype, BaseQuant, Framework, FsdpMode, Mode};
    let h100 = gpu::find("h100-80gb").unwrap();
    let model = |m: &str| Scenario::new(builtin(m).unwrap());
    // the issue's QLoRA: Llama-3.1-70B, LoRA r16 on every projection, NF4 base, full checkpointing
    let mut qlora = model("llama-3.1-70b");
    qlora.seq = 2048;
    qlora.lora = Some("16:all".parse().unwrap());
    qlora.base_quant = BaseQuant::Nf4;
    qlora.checkpointing = Checkpointing::Full;
    // FSDP QLoRA on 8 GPUs, without double quantization, the adapters in the model's dtype, a paged
    // 8-bit optimizer and expandable segments
    let mut fsdp = qlora.clone();
    fsdp.base_quant = BaseQuant::Nf4NoDq;
    fsdp.lora = Some(vramscope::estimate::Lora { dropout: 0.05, ..fsdp.lora.unwrap() });
    fsdp.stack.adapter_dtype = AdapterDtype::Model;
    fsdp.optimizer = Optimizer::PagedAdamw8bit;
    fsdp.parallel.dp = 8;
    fsdp.parallel.fsdp = Some(FsdpMode::FullShard);
    fsdp.overhead.allocator.expandable_segments = true;
    // LoRA on an LLM.int8() base, q and v only
    let mut int8 = model("llama-2-7b");
    int8.lora = Some("8:q,v".parse().unwrap());
    int8.base_quant = BaseQuant::Int8;
    // ZeRO-2 under the HF Trainer, ZeRO-3 under DeepSpeed, and a tensor/pipeline layout
    let mut z2 = model("llama-3.1-8b");
    z2.precision = Precision::Bf16Mixed;
    z2.parallel.dp = 8;
    z2.parallel.zero = 2;
    z2.stack.framework = Some(Framework::HfTrainer);
    let mut z3 = z2.clone();
    z3.parallel.zero = 3;
    z3.stack.framework = Some(Framework::Deepspeed);
    let mut tp = model("llama-3.1-8b");
    tp.parallel.tp = 2;
    tp.parallel.pp = 2;
    tp.checkpointing = Checkpointing::Every(2);
    // inference on an NF4 base
    let mut infer = model("llama-3.1-8b");
    infer.mode = Mode::Infer;
    infer.base_quant = BaseQuant::Nf4;
    let mut out: Vec<(&'static str, ScenarioFile)> = [
        ("qlora-70b", qlora),
        ("fsdp-qlora-70b", fsdp),
        ("int8-lora-7b", int8),
        ("zero2-8b", z2),
        ("zero3-8b", z3),
        ("tp-pp-8b", tp),
        ("infer-nf4-8b", infer),
    ]
    .into_iter()
    .map(|(n, sc)| (n, ScenarioFile::new(sc, Some(&h100), None)))
    .collect();
    out.extend(plans());
    out
}

fn render_ok(f: &ScenarioFile, format: Format) -> Option<String> {
    let infer = f.scenario.mode == vramscope::estimate::Mode::Infer;
    (!(infer && matches!(format, Format::Fsdp | Format::Megatron)))
        .then(|| export::render(f, format).unwrap())
}

fn has(text: &str, name: &str, want: &[&str]) {
    for w in want {
        assert!(text.contains(w), "{name}: {w:?} missing from\n{text}");
    }
}

#[test]
fn framework_exports_carry_the_scenario_s_settings() {
    let cases = setting_cases();
    let get = |n: &str| &cases.iter().find(|c| c.0 == n).unwrap().1;
    // the issue's QLoRA: the 4-bit base, the adapters and the checkpointing, as the Trainer loads them
    let hf = export::render(get("qlora-70b"), Format::Hf).unwrap();
    has(
        &hf,
        "qlora hf",
        &[
            "BitsAndBytesConfig(",
            "load_in_4bit=True",
            "bnb_4bit_quant_type=\"nf4\"",
            "bnb_4bit_use_double_quant=True",
            "bnb_4bit_compute_dtype=torch.bfloat16",
            "quantization_config=bnb_config",
            "LoraConfig(",
            "r=16,",
            "q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj",
            "get_peft_model(model, lora_config)",
            "gradient_checkpointing=True",
            "MAX_SEQ_LEN = 2048",
            "per_device_train_batch_size=1",
            "# every setting of the scenario is expressed above",
        ],
    );
    assert!(!hf.contains("bnb_4bit_quant_storage"), "only FSDP stores the 4-bit weights as bf16");
    // FSDP QLoRA: the quant storage FSDP's flat parameters need, the adapters' dtype and dropout,
    // the paged optimizer and the allocator setting
    let fsdp = export::render(get("fsdp-qlora-70b"), Format::Fsdp).unwrap();
    has(
        &fsdp,
        "fsdp qlora",
        &[
            "bnb_4bit_quant_storage=torch.bfloat16",
            "bnb_4bit_use_double_quant=False",
            "lora_dropout=0.05",
            "autocast_adapter_dtype=False",
            "bnb.optim.PagedAdamW8bit(",
            "import bitsandbytes as bnb",
            "PYTORCH_CUDA_ALLOC_CONF\"] = \"expandable_segments:True\"",
            "ShardingStrategy.FULL_SHARD",
            "apply_activation_checkpointing(",
        ],
    );
    let hf = export::render(get("fsdp-qlora-70b"), Format::Hf).unwrap();
    has(
        &hf,
        "fsdp qlora hf",
        &[
            "optim=\"paged_adamw_8bit\"",
            "fsdp=\"full_shard auto_wrap\"",
            "bnb_4bit_quant_storage=torch.bfloat16",
        ],
    );
    let hf = export::render(get("int8-lora-7b"), Format::Hf).unwrap();
    has(&hf, "int8", &["BitsAndBytesConfig(load_in_8bit=True)", "q_proj|v_proj)", "r=8,"]);
    // Megatron: the rope base and Llama 3's scaling, and what it cannot run
    let meg = export::render(get("qlora-70b"), Format::Megatron).unwrap();
    has(
        &meg,
        "megatron",
        &[
            "--rotary-base 500000",
            "--use-rope-scaling",
            "--rope-scaling-factor 8",
            "# not expressed here",
            "--lora 16:q,k,v,o,gate,up,down",
            "--base-quant nf4",
        ],
    );
    let meg = export::render(get("zero2-8b"), Format::Megatron).unwrap();
    assert!(meg.contains("--rotary-base 500000"), "{meg}");
    // what the Trainer cannot express is named
    let hf = export::render(get("tp-pp-8b"), Format::Hf).unwrap();
    has(&hf, "tp", &["# not expressed here", "--tp 2", "--pp 2", "--checkpoint every:2"]);
    // inference on an NF4 base loads it quantized
    let inf = export::render(get("infer-nf4-8b"), Format::Hf).unwrap();
    has(&inf, "infer", &["load_in_4bit=True", "quantization_config=bnb_config"]);
    // DeepSpeed writes the bucket sizes its estimate assumed, and names the model-side settings
    let z2 = get("zero2-8b");
    let v = export::deepspeed_config(z2);
    assert_eq!(
        v["zero_optimization"]["reduce_bucket_size"],
        4096 * 4096,
        "the HF Trainer's \"auto\": hidden²"
    );
    assert_eq!(v["zero_optimization"]["overlap_comm"], true);
    let notes = export::notes(z2, Format::Deepspeed).unwrap().join("\n");
    has(&notes, "zero2 notes", &["ZeRO-2 allocates 2 reduce bucket(s)", "not expressed in the config"]);
    let v = export::deepspeed_config(get("zero3-8b"));
    let z = &v["zero_optimization"];
    assert_eq!(z["reduce_bucket_size"], 500_000_000u64);
    assert_eq!(z["stage3_prefetch_bucket_size"], 50_000_000u64);
    assert_eq!(z["stage3_max_live_parameters"], 1_000_000_000u64);
}

fn schema(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/schema").join(name))
        .unwrap()
}

#[test]
fn deepspeed_and_megatron_exports_use_only_their_framework_s_own_keys() {
    // the schemas are written from the frameworks' source (see their headers)
    let ds: serde_json::Value = serde_json::from_str(&schema("deepspeed.json")).unwrap();
    let allowed =
        |section: &str, k: &str| ds[section].as_array().unwrap().iter().any(|x| x.as_str() == Some(k));
    let megatron = schema("megatron.txt");
    let flags: std::collections::HashSet<&str> = megatron.lines().filter(|l| l.starts_with("--")).collect();
    for (name, f) in setting_cases() {
        if f.scenario.mode == vramscope::estimate::Mode::Train {
            let v = export::deepspeed_config(&f);
            for (k, sub) in v.as_object().unwrap() {
                assert!(allowed("top", k), "{name}: DeepSpeed has no key {k}");
                if let (Some(o), true) = (sub.as_object(), ds.get(k.as_str()).is_some()) {
                    for (kk, inner) in o {
                        assert!(allowed(k, kk), "{name}: DeepSpeed has no key {k}.{kk}");
                        if let (Some(oo), true) = (inner.as_object(), ds.get(kk.as_str()).is_some()) {
                            for kkk in oo.keys() {
                                assert!(allowed(kk, kkk), "{name}: DeepSpeed has no key {k}.{kk}.{kkk}");
                            }
                        }
                    }
                }
            }
        }
        if let Some(sh) = render_ok(&f, Format::Megatron) {
            for line in sh.lines().map(str::trim).filter(|l| l.starts_with("--")) {
                let flag = line.split_whitespace().next().unwrap();
                assert!(flags.contains(flag), "{name}: Megatron-LM has no flag {flag}");
            }
        }
    }
}

#[test]
#[ignore = "needs python3"]
fn python_exports_parse_and_call_only_the_libraries_own_arguments() {
    // each Python export goes through python3's parser; every call with keyword arguments must
    // be one the schema knows (written from the libraries' source), with only its arguments
    let dir = tmp("python");
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    for (name, f) in setting_cases() {
        for format in [Format::Hf, Format::Fsdp] {
            if let Some(text) = render_ok(&f, format) {
                let p = dir.join(format!("{name}.{}.py", format.name()));
                std::fs::write(&p, text).unwrap();
                files.push(p.display().to_string());
            }
        }
    }
    let script = r#"
import ast, json, sys
schema = json.load(open(sys.argv[1]))
bad = []
for path in sys.argv[2:]:
    tree = ast.parse(open(path).read(), path)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.keywords:
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "?")
        if name not in schema:
            bad.append(f"{path}: {name}(...) is not in the schema")
            continue
        for k in node.keywords:
            if k.arg not in schema[name]:
                bad.append(f"{path}: {name} has no argument {k.arg}")
            if k.arg == "optim" and k.value.value not in schema["optim"]:
                bad.append(f"{path}: optim={k.value.value!r} is not an OptimizerNames value")
print(len(sys.argv) - 2, "files")
if bad:
    print("\n".join(bad))
    sys.exit(1)
"#;
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/schema/python_kwargs.json");
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&schema_path)
        .args(&files)
        .output()
        .expect("python3 runs");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(files.len() >= 15, "{} files", files.len());
}
