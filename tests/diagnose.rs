//! `vramscope diagnose` on messages and logs as users paste them: the fixtures in
//! `tests/data/diagnose/` (their sources and the expert reading of each are in its `EXPECTED.md`).
//! Each OOM message must give the expert's finding(s) and numbers; each trace the expert's verdict
//! per GPU.

use vramscope::diagnose::trace::{self, Verdict};
use vramscope::diagnose::{Finding, Source, explain_oom};

fn fixture(name: &str) -> String {
    let p = format!("{}/tests/data/diagnose/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

const GIB: f64 = (1u64 << 30) as f64;

fn near_gib(v: Option<u64>, gib: f64) -> bool {
    v.is_some_and(|v| (v as f64 / GIB - gib).abs() < 0.006)
}

#[test]
fn every_oom_fixture_gets_the_expert_s_findings() {
    use Finding::*;
    let cases: &[(&str, Source, &[Finding], Option<u32>)] = &[
        ("oom_brief_fragmentation_at_the_edge.txt", Source::PytorchCurrent, &[Fragmentation], Some(0)),
        ("oom_container_own_pid.txt", Source::PytorchCurrent, &[JobTooLarge], Some(0)),
        ("oom_cublas_alloc_failed.txt", Source::Cublas, &[OutsideAllocator], None),
        ("oom_cuda_error_no_numbers.txt", Source::CudaRuntime, &[OutsideAllocator], None),
        ("oom_default_prefixed_interleaved.txt", Source::PytorchCurrent, &[JobTooLarge], Some(0)),
        ("oom_hip_request_exceeds_card.txt", Source::PytorchCurrent, &[RequestExceedsCard], Some(0)),
        ("oom_hip_unified_memory.txt", Source::PytorchCurrent, &[OtherProcesses], Some(0)),
        ("oom_legacy_card_full.txt", Source::PytorchLegacy, &[JobTooLarge], Some(0)),
        ("oom_legacy_fragmentation.txt", Source::PytorchLegacy, &[Fragmentation], Some(0)),
        ("oom_lightning_log.txt", Source::PytorchCurrent, &[JobTooLarge], Some(0)),
        ("oom_oldest_cached.txt", Source::PytorchLegacy, &[JobTooLarge], Some(0)),
        ("oom_oldest_cached_fragmentation.txt", Source::PytorchLegacy, &[JobTooLarge], Some(0)),
        ("oom_other_processes_multi.txt", Source::PytorchCurrent, &[OtherProcesses], Some(0)),
        ("oom_pt21_capacty_typo.txt", Source::PytorchCurrent, &[Fragmentation], Some(0)),
        ("oom_pt23_card_full.txt", Source::PytorchCurrent, &[JobTooLarge], Some(0)),
        ("oom_pt23_fragmentation.txt", Source::PytorchCurrent, &[Fragmentation], Some(0)),
        ("oom_pt26_private_pools_vllm.txt", Source::PytorchCurrent, &[JobTooLarge], Some(0)),
        ("oom_rank_prefixed_torchrun.txt", Source::PytorchCurrent, &[JobTooLarge], Some(3)),
        ("oom_request_large_not_fragmentation.txt", Source::PytorchCurrent, &[JobTooLarge], Some(0)),
        ("oom_traceback_hf_trainer.txt", Source::PytorchCurrent, &[JobTooLarge], Some(0)),
        ("oom_vllm_max_seq_len_kv_cache.txt", Source::Vllm, &[KvCacheTooSmall], None),
        ("oom_vllm_no_cache_blocks.txt", Source::Vllm, &[KvCacheTooSmall], None),
        ("oom_vllm_this_process_0_bytes.txt", Source::PytorchCurrent, &[JobTooLarge], Some(3)),
        ("oom_vllm_v1_kv_cache_needed.txt", Source::Vllm, &[KvCacheTooSmall], None),
        ("oom_wrapped_midword_crlf.txt", Source::PytorchCurrent, &[JobTooLarge], Some(0)),
        ("oom_wrapped_word_boundary.txt", Source::PytorchCurrent, &[JobTooLarge], Some(0)),
    ];
    let mut wrong = Vec::new();
    for (name, source, findings, gpu) in cases {
        let r = explain_oom(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        if r.source != *source || r.findings != *findings || r.numbers.gpu != *gpu {
            wrong.push(format!(
                "{name}: {:?} {:?} gpu {:?}\n  {}",
                r.source,
                r.findings,
                r.numbers.gpu,
                r.explanation.join("\n  ")
            ));
        }
        // human words only, and every line a sentence or a command
        for line in r.explanation.iter().chain(&r.fixes) {
            assert!(
                !line.contains("Some(") && !line.contains("None") && !line.contains(" 0.0 MiB"),
                "{name}: {line}"
            );
        }
    }
    assert!(wrong.is_empty(), "{} of {} fixtures misread:\n{}", wrong.len(), cases.len(), wrong.join("\n"));
}

#[test]
fn the_numbers_survive_wraps_prefixes_and_typos() {
    // PyTorch 2.1's "total capacty": every number is read
    let r = explain_oom(&fixture("oom_pt21_capacty_typo.txt")).unwrap();
    assert!(near_gib(r.numbers.total, 23.65) && near_gib(r.numbers.free, 1.66), "{:?}", r.numbers);
    assert!(near_gib(r.numbers.allocated, 12.09) && near_gib(r.numbers.reserved_unallocated, 4.84));
    assert!(r.not_understood.is_empty(), "{:?}", r.not_understood);
    // hard-wrapped mid-word with CRLF line ends
    let r = explain_oom(&fixture("oom_wrapped_midword_crlf.txt")).unwrap();
    assert!(near_gib(r.numbers.allocated, 6.91) && r.numbers.free == Some(0), "{:?}", r.numbers);
    assert!(r.numbers.reserved_unallocated.is_some_and(|b| (b >> 20) == 310), "{:?}", r.numbers);
    // [rankN]: prefixes; the second rank is counted with its GPU
    let r = explain_oom(&fixture("oom_rank_prefixed_torchrun.txt")).unwrap();
    assert_eq!(r.numbers.more_messages, vec![Some(1)]);
    assert!(r.explanation.iter().any(|l| l.contains("1 more out-of-memory message") && l.contains("GPU 1")));
    // the container's own PID is not "another process", and several PIDs are "them"
    let r = explain_oom(&fixture("oom_wrapped_word_boundary.txt")).unwrap();
    let me: Vec<u64> = r.numbers.processes.iter().filter(|p| p.likely_this_process).map(|p| p.pid).collect();
    assert_eq!(me, vec![852079]);
    assert!(!r.fixes.iter().any(|f| f.contains("852079")), "{:?}", r.fixes);
    let r = explain_oom(&fixture("oom_other_processes_multi.txt")).unwrap();
    assert!(r.fixes.iter().any(|f| f.contains("PID 3269913, PID 3269914") && f.ends_with("stop them")));
    assert!(r.numbers.processes.iter().all(|p| !p.likely_this_process));
    // "this process has 0 bytes": an NVML artefact, not other processes
    let r = explain_oom(&fixture("oom_vllm_this_process_0_bytes.txt")).unwrap();
    assert_eq!(r.numbers.process_in_use, None);
    assert!(!r.findings.contains(&Finding::OtherProcesses));
    // ROCm: the HIP allocator's variable
    let r = explain_oom(&fixture("oom_hip_unified_memory.txt")).unwrap();
    assert_eq!(r.numbers.backend.as_deref(), Some("HIP"));
    // vLLM's own figures become the fix
    let r = explain_oom(&fixture("oom_vllm_max_seq_len_kv_cache.txt")).unwrap();
    assert_eq!((r.numbers.max_model_len, r.numbers.kv_tokens), (Some(29000), Some(23648)));
    assert!(r.fixes[0].starts_with("--max-model-len 23648"), "{:?}", r.fixes);
    let r = explain_oom(&fixture("oom_vllm_v1_kv_cache_needed.txt")).unwrap();
    assert_eq!(r.numbers.estimated_max_model_len, Some(78304));
    assert!(near_gib(r.numbers.kv_needed, 16.0) && near_gib(r.numbers.kv_available, 9.56), "{:?}", r.numbers);
}

#[test]
fn the_brief_s_oom_is_fragmentation_at_the_edge_with_pytorch_s_own_hint() {
    // 20.10 GiB allocated + 2.00 GiB requested < 20.10 + 1.90 cached + 1.12 free = 23.12 GiB
    // reachable: neither the cache nor the free memory alone holds the request, together they do
    let r = explain_oom(&fixture("oom_brief_fragmentation_at_the_edge.txt")).unwrap();
    assert_eq!(r.findings, [Finding::Fragmentation], "{:?}", r.explanation);
    assert!(near_gib(r.numbers.process_in_use, 22.51) && near_gib(r.numbers.reserved_unallocated, 1.90));
    let text = r.explanation.join("\n");
    assert!(!text.contains("too large for this card"), "{text}");
    assert!(text.contains("together they hold 3.02 GiB") && text.contains("23.12 GiB"), "{text}");
    assert!(text.contains("1.02 GiB (4.3 % of the card)") && text.contains("at the edge"), "{text}");
    // PyTorch's own hint is echoed, and is the first fix
    let hint = "If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.";
    assert_eq!(r.numbers.hint.as_deref(), Some(hint));
    assert!(text.contains(&format!("PyTorch's own hint applies here: \"{hint}\"")), "{text}");
    assert!(
        r.fixes[0].starts_with("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"),
        "{:?}",
        r.fixes
    );
    // vLLM's profiling run at the same edge stays too large: its peak (95 % of the card) leaves
    // the KV cache nothing under gpu_memory_utilization
    let r = explain_oom(&fixture("oom_vllm_this_process_0_bytes.txt")).unwrap();
    assert!(r.numbers.vllm_profile_run);
    assert_eq!(r.findings, [Finding::JobTooLarge]);
    assert!(r.explanation.iter().any(|l| l.contains("vLLM's profiling run") && l.contains("95 %")), "{r:?}");
    // a full card keeps its reading, the hint quoted with how little it would free
    let r = explain_oom(&fixture("oom_pt23_card_full.txt")).unwrap();
    assert_eq!(r.findings, [Finding::JobTooLarge]);
    assert!(
        r.explanation.iter().any(|l| l.contains("PyTorch's own hint") && l.contains("not what fills it"))
    );
}

/// A fixture, the card size to give it (dmon logs have none) and the verdict of each GPU.
type TraceCase = (&'static str, Option<u64>, Vec<(u32, Verdict)>);

fn verdicts(name: &str, total_mib: Option<u64>) -> Vec<(u32, Verdict)> {
    let mut s = trace::parse(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    if let Some(t) = total_mib {
        trace::with_total(&mut s, t << 20);
    }
    trace::classify_all(&s)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .iter()
        .map(|r| (r.gpu, r.verdict))
        .collect()
}

#[test]
fn every_trace_fixture_gets_the_expert_s_verdict_per_gpu() {
    use Verdict::*;
    let one = |v: Verdict| vec![(0, v)];
    let eight = |bad: u32, v: Verdict, rest: Verdict| {
        (0..8).map(|g| (g, if g == bad { v } else { rest })).collect::<Vec<_>>()
    };
    let cases: Vec<TraceCase> = vec![
        ("trace_healthy_csv.csv", None, one(Healthy)),
        ("trace_healthy_plateau_csv.csv", None, one(Healthy)),
        ("trace_batch_too_large_noheader_nounits.csv", None, one(BatchTooLarge)),
        ("trace_leak_midnight_csv.csv", None, one(Leak)),
        ("trace_model_too_large_noheader.csv", None, one(ModelTooLarge)),
        ("trace_model_too_large_reordered_columns.csv", None, one(ModelTooLarge)),
        ("trace_nvidia_smi_table.txt", None, one(Leak)),
        ("trace_dmon_s_m.txt", Some(81559), vec![(0, Healthy), (1, Healthy)]),
        ("trace_8gpu_gpu5_leak.csv", None, eight(5, Leak, Healthy)),
        ("trace_8gpu_gpu3_oom.csv", None, eight(3, BatchTooLarge, StoppedWithJob)),
        // GPU 2 sits at 88 % from its first sample: near the card all along, not "healthy"
        (
            "trace_4gpu_gpu2_near_capacity.csv",
            None,
            (0..4).map(|g| (g, if g == 2 { NearCapacity } else { Healthy })).collect(),
        ),
    ];
    let mut wrong = Vec::new();
    for (name, total, want) in &cases {
        let got = verdicts(name, *total);
        if got != *want {
            wrong.push(format!("{name}: {got:?}, expected {want:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn trace_readings_name_the_level_and_the_rate() {
    let s = trace::parse(&fixture("trace_model_too_large_noheader.csv")).unwrap();
    let r = trace::classify(&s, None).unwrap();
    assert!(r.advice[0].contains("about 98 %"), "{:?}", r.advice);
    let s = trace::parse(&fixture("trace_nvidia_smi_table.txt")).unwrap();
    let r = trace::classify(&s, None).unwrap();
    assert!((r.growth_mib_per_iteration - 240.0).abs() < 30.0, "{}", r.growth_mib_per_iteration);
    let s = trace::parse(&fixture("trace_8gpu_gpu5_leak.csv")).unwrap();
    let e = trace::classify(&s, Some(9)).unwrap_err().to_string();
    assert!(e.contains("GPU 9 is not in the trace") && e.contains("0, 1, 2, 3, 4, 5, 6, 7"), "{e}");
    let s = trace::parse(&fixture("trace_4gpu_gpu2_near_capacity.csv")).unwrap();
    let r = trace::classify(&s, Some(2)).unwrap();
    assert!(r.advice[0].contains("at about 88 % of the card from the first sample"), "{:?}", r.advice);
    assert!(!r.verdict.fails() && r.verdict.warns() && r.iterations == 0);
    // dmon logs have no total: the samples say so, and the CLI asks for --total-mib
    let s = trace::parse(&fixture("trace_dmon_s_m.txt")).unwrap();
    assert!(s.iter().all(|x| x.total == 0) && s.iter().any(|x| x.used > 30_000 << 20));
}
