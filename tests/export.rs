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
