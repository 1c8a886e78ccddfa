//! `diagnose` and `monitor`: OOM messages, usage traces (one GPU, a cluster's CSV by host, the
//! impossible ones), allocator reports and snapshots, and a missing driver.

use super::*;

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
fn a_trace_cut_by_ctrl_c_is_read_up_to_the_cut_with_a_note() {
    // `nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total --format=csv -l 1 > log`
    // stopped with Ctrl-C: the file ends mid-line (it was refused: "line 42: …")
    let mut csv = String::from("timestamp, index, memory.used [MiB], memory.total [MiB]\n");
    for i in 0..40 {
        csv += &format!("2026/11/29 10:00:{:02}.017, 0, {} MiB, 81559 MiB\n", i, 30000 + (i % 5) * 6000);
    }
    csv += "2026/11/29 10:00:40.017, 0, 42";
    let path = std::env::temp_dir().join(format!("vramscope-cut-{}.csv", std::process::id()));
    std::fs::write(&path, &csv).unwrap();
    let p = path.to_str().unwrap();
    let out = run(&["diagnose", "--trace", p]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let notes: Vec<&str> = text.lines().filter(|l| l.starts_with("note:")).collect();
    assert_eq!(notes.len(), 1, "{text}");
    assert!(notes[0].contains("line 42 is cut short") && notes[0].contains("read up to line 41"), "{text}");
    assert!(text.contains("GPU 0: 40 samples"), "{text}");
    let v = json(&["diagnose", "--trace", p, "--json"]);
    assert_eq!(v["trace"]["samples"], 40);
    assert!(v["notes"][0].as_str().unwrap().starts_with("line 42 is cut short"), "{v:#}");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_cluster_s_gpus_are_named_as_on_their_host_with_their_rank() {
    // issue #42: node-b's DCGM gpu="2" was reported as GPU 6 (its place among the 8 GPUs); it is
    // GPU 2 of node-b, as nvidia-smi there shows it, and rank 6 of a job over the 8
    let rec = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/prometheus/cluster-recording.json");
    let v = json(&["diagnose", "--trace", rec, "--json"]);
    let gpus: Vec<(&str, u64, &str, u64)> = v["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let s = |k: &str| g[k].as_str().unwrap();
            (s("host"), g["gpu"].as_u64().unwrap(), s("gpu_label"), g["rank"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(gpus[6], ("node-b", 2, "2", 6), "{v:#}");
    assert!(gpus.iter().all(|(_, g, label, _)| g.to_string() == *label), "{gpus:?}");
    assert_eq!(gpus.iter().map(|g| g.3).collect::<Vec<_>>(), (0..8).collect::<Vec<u64>>());
    let worst = &v["trace"];
    assert_eq!(
        (worst["host"].as_str(), worst["gpu"].as_u64(), worst["rank"].as_u64()),
        (Some("node-b"), Some(3), Some(7))
    );
    let text = String::from_utf8(run(&["diagnose", "--trace", rec]).stdout).unwrap();
    assert!(text.contains("node-b GPU 2 (rank 6): 37 samples"), "{text}");
    assert!(!text.contains("GPU 6"), "{text}");
}
