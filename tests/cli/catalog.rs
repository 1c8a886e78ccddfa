//! The GPU catalog and the small things of the command line (#42 §1, §8): short forms and "did
//! you mean", the ranges of numeric flags, the roadmap in Chinese, --lora's help, missing paths.

use super::{assert_usage_error, json, run};

#[test]
fn misspelled_flags_and_gpus_say_what_was_meant() {
    assert_usage_error(&["estimate", "--model", "gpt2", "--bacth", "2"], "did you mean --batch?");
    assert_usage_error(&["estimate", "--model", "gpt2", "--gpu", "rtx4090"], "did you mean rtx-4090?");
    assert_usage_error(&["estimat", "--model", "gpt2"], "did you mean estimate?");
    assert_usage_error(&["estimate", "--model", "lama-3.1-8b"], "did you mean llama-3.1-8b?");
}

#[test]
fn a_family_name_takes_its_sxm_part_and_says_so() {
    let v = json(&["estimate", "--model", "gpt2", "--gpu", "h100", "--json"]);
    assert_eq!(v["gpu"]["id"], "h100-80gb");
    let notes = v["notes"].to_string();
    assert!(notes.contains("--gpu h100 is taken as h100-80gb") && notes.contains("h100-pcie"), "{notes}");
    let v = json(&["serve", "--model", "llama-3.1-8b", "--gpu", "h100", "--json"]);
    assert!(v["notes"].to_string().contains("--gpu h100 is taken as h100-80gb"), "{}", v["notes"]);
    // where the parts differ in memory the short form stays an error naming them
    assert_usage_error(&["estimate", "--model", "gpt2", "--gpu", "a100"], "a100-40gb, a100-80gb");
}

#[test]
fn numeric_flags_outside_their_range_name_the_flag_and_the_range() {
    for (flag, value, range) in [
        ("--context-mib", "99999999999", "0..=65536"),
        ("--workspace-mib", "100000", "0..=65536"),
        ("--nccl-mib", "100000", "0..=65536"),
        ("--dp", "1000000", "1..=131072"),
        ("--tp", "0", "1..=4096"),
        ("--pp", "5000", "1..=4096"),
        ("--cp", "0", "1..=4096"),
        ("--ep", "0", "1..=4096"),
        ("--zero", "4", "0..=3"),
        ("--micro-batches", "100000", "0..=65536"),
        ("--virtual-stages", "0", "1..=1024"),
        ("--gpus-per-node", "0", "1..=576"),
        ("--batch", "0", "1..=16777216"),
        ("--seq", "0", "1..=16777216"),
        ("--grad-accum", "0", "1..=65536"),
        ("--lora-dropout", "1.5", "[0, 1)"),
        ("--reserve-frac", "1.5", "[0, 1]"),
    ] {
        assert_usage_error(&["estimate", "--model", "gpt2", flag, value], &format!("'{flag} "));
        assert_usage_error(&["estimate", "--model", "gpt2", flag, value], range);
    }
    for (flag, value, range) in [
        ("--gpus", "1000000", "1..=131072"),
        ("--mfu", "0", "(0, 1]"),
        ("--top", "0", "1..=1000"),
        ("--spot-discount", "1", "[0, 1)"),
        ("--committed-discount", "1.5", "[0, 1)"),
        ("--tokens", "1e30", "[1, 1000000000000000000]"),
        ("--global-batch", "0", "1..=16777216"),
    ] {
        assert_usage_error(&["plan", "--model", "gpt2", "--gpu", "h100-80gb", flag, value], range);
    }
    for (flag, value, range) in [
        ("--max-num-seqs", "0", "1..=65536"),
        ("--block-size", "4096", "1..=1024"),
        ("--cuda-total-mib", "0", "1..=1048576"),
        ("--target-concurrency", "0", "(0, 10000000]"),
    ] {
        assert_usage_error(&["serve", "--model", "llama-3.1-8b", "--gpu", "h100-80gb", flag, value], range);
    }
    assert_usage_error(&["monitor", "--interval-ms", "0"], "1..=3600000");
    assert_usage_error(&["diagnose", "--gpu-index", "5000", "--trace", "x.csv"], "0..=1023");
    // in range, the same flags still run
    let out = run(&["estimate", "--model", "gpt2", "--context-mib", "600", "--dp", "4", "--zero", "3"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_gpu_list_shows_the_cuda_total_beside_nvidia_smi_s() {
    let g = String::from_utf8(run(&["gpus"]).stdout).unwrap();
    let line = g.lines().find(|l| l.starts_with("rtx-4090 ")).unwrap();
    assert!(line.contains("23.99") && line.contains("23.64"), "{line}");
    // a card without a published total gives the rule's figure, marked
    let line = g.lines().find(|l| l.starts_with("h800 ")).unwrap();
    assert!(line.contains('*'), "{line}");
    assert!(g.contains("* no published CUDA total"), "{g}");
}

#[test]
fn lora_help_names_all_and_a_missing_path_is_no_such_file() {
    let help = String::from_utf8(run(&["estimate", "--help"]).stdout).unwrap();
    assert!(help.contains("RANK:all"), "{help}");
    assert_usage_error(
        &["estimate", "--model", "./no/such/config.json"],
        "no such file: ./no/such/config.json",
    );
    // a Hub id that is no preset is looked up on the Hub; offline, in the caches only
    assert_usage_error(
        &["estimate", "--model", "nobody/nothing", "--offline"],
        "neither the Hugging Face cache",
    );
    assert_usage_error(
        &["estimate", "--model", "meta-llama/Llama-3.1-8C", "--offline"],
        "did you mean the preset llama-3.1-8b?",
    );
    assert_usage_error(&["estimate", "--model", "no/such.json"], "no such file: no/such.json");
}

#[test]
fn the_roadmap_speaks_chinese_with_the_same_figures() {
    let args = ["plan", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--roadmap"];
    let en = run(&args);
    let mut zh_args = args.to_vec();
    zh_args.extend(["--lang", "zh-CN"]);
    let zh = run(&zh_args);
    assert!(zh.status.success(), "{}", String::from_utf8_lossy(&zh.stderr));
    let (en, zh) = (String::from_utf8(en.stdout).unwrap(), String::from_utf8(zh.stdout).unwrap());
    assert!(zh.starts_with("# 显存路线图") && zh.contains("## 做法"), "{zh}");
    // the figures and commands are the language's only constant: every GiB figure of the English
    // roadmap is in the Chinese one
    let figures = |s: &str| -> Vec<String> {
        s.split_whitespace()
            .filter(|w| w.ends_with("GiB") || w.parse::<f64>().is_ok())
            .map(str::to_owned)
            .collect()
    };
    for f in figures(&en) {
        assert!(zh.contains(&f), "{f} missing from the Chinese roadmap");
    }
    // JSON: the titles in Chinese, the numbers the same
    let mut j = zh_args.clone();
    j.push("--json");
    let v = json(&j);
    assert!(v["headline"].as_str().unwrap().contains("容纳"), "{}", v["headline"]);
    assert_eq!(v["steps"][1]["effort"], "低");
    // --lang is the roadmap's: elsewhere plan says it needs --roadmap
    assert_usage_error(&["plan", "--model", "gpt2", "--gpu", "h100-80gb", "--lang", "zh-CN"], "--roadmap");
}
