//! Unit tests of the OOM reader (the fixtures as users paste them are in `tests/diagnose.rs`).
use super::*;

const CURRENT: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.21 GiB is free. Including non-PyTorch memory, this process has 77.93 GiB memory in use. Of the allocated memory 71.02 GiB is allocated by PyTorch, and 6.39 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.";
const LEGACY: &str = "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; 14.56 GiB already allocated; 3.75 MiB free; 14.81 GiB reserved in total by PyTorch)";
const TF: &str = "ResourceExhaustedError: OOM when allocating tensor with shape[32,1024,1024] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc";

#[test]
fn current_wording() {
    let r = explain_oom(CURRENT).unwrap();
    assert_eq!(r.source, Source::PytorchCurrent);
    assert_eq!(r.numbers.requested, Some(2 << 30));
    assert_eq!(r.numbers.gpu, Some(0));
    assert_eq!(r.numbers.total, Some((79.15 * (1u64 << 30) as f64).round() as u64));
    assert_eq!(r.numbers.free, Some((1.21 * (1u64 << 30) as f64).round() as u64));
    assert!(r.numbers.allocated.is_some() && r.numbers.reserved_unallocated.is_some());
    // 6.39 GiB cached against a 2 GiB request: the tensors plus the request fit what PyTorch
    // holds, so the cache is fragmented and the job is not too large
    assert!(r.findings.contains(&Finding::Fragmentation), "{r:?}");
    assert!(!r.findings.contains(&Finding::JobTooLarge), "{r:?}");
    assert!(r.fixes[0].contains("expandable_segments"));
    assert!(r.not_understood.is_empty());
}

#[test]
fn legacy_wording() {
    let r = explain_oom(LEGACY).unwrap();
    assert_eq!(r.source, Source::PytorchLegacy);
    assert_eq!(r.numbers.requested, Some(20 << 20));
    assert_eq!(r.numbers.allocated, Some((14.56 * (1u64 << 30) as f64).round() as u64));
    assert_eq!(r.numbers.free, Some((3.75 * (1u64 << 20) as f64).round() as u64));
    assert_eq!(r.numbers.reserved, Some((14.81 * (1u64 << 30) as f64).round() as u64));
    // 0.25 GiB cached on a full 15.78 GiB card: the card is full, not fragmented
    assert!(!r.findings.contains(&Finding::Fragmentation) && r.findings.contains(&Finding::JobTooLarge));
}

#[test]
fn other_processes_are_quoted_with_their_pids_and_sizes() {
    let m = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 10.06 MiB is free. Process 12345 has 10.20 GiB memory in use. Including non-PyTorch memory, this process has 13.43 GiB memory in use. Of the allocated memory 12.90 GiB is allocated by PyTorch, and 120.00 MiB is reserved by PyTorch but unallocated.";
    let r = explain_oom(m).unwrap();
    assert_eq!(r.numbers.processes.len(), 1);
    assert_eq!(r.numbers.processes[0].pid, 12345);
    assert_eq!(r.numbers.processes[0].as_written, "10.20 GiB");
    let text = r.explanation.join(" ");
    assert!(text.contains("process 12345 has 10.20 GiB"), "{text}");
    assert!(!text.contains("about"), "{text}");
    assert!(r.fixes.iter().any(|f| f.contains("PID 12345")));
    assert!(r.findings.contains(&Finding::OtherProcesses));
    assert!(!r.findings.contains(&Finding::Fragmentation), "120 MiB cached is not fragmentation");
}

#[test]
fn classic_messages_keep_their_reading_and_their_hint() {
    // older wording: its own hint (max_split_size_mb) is quoted; the card is full
    let old = format!(
        "{LEGACY} If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF"
    );
    let r = explain_oom(&old).unwrap();
    assert_eq!(r.findings, [Finding::JobTooLarge]);
    let hint =
        "If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.";
    assert_eq!(r.numbers.hint.as_deref(), Some(hint));
    assert!(r.explanation.iter().any(|l| l.contains(hint) && l.contains("(1.6 % of the card)")), "{r:?}");
    // the current wording without a hint (cut paste): no hint line
    let r = explain_oom(CURRENT.split(" If reserved").next().unwrap()).unwrap();
    assert_eq!((r.numbers.hint.as_deref(), r.findings.as_slice()), (None, &[Finding::Fragmentation][..]));
    assert!(!r.explanation.iter().any(|l| l.contains("own hint")));
    // out of memory with no PyTorch numbers: outside the allocator, no hint
    let r = explain_oom(
        "RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported",
    )
    .unwrap();
    assert_eq!(
        (r.source, r.findings.as_slice(), r.numbers.hint.as_deref()),
        (Source::CudaRuntime, &[Finding::OutsideAllocator][..], None)
    );
    // other processes hold the card: still theirs, even with a cache that with the free memory
    // would hold the request (it is no real share of the card)
    let m = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.64 GiB of which 1.50 GiB is free. Process 4242 has 9.80 GiB memory in use. Including non-PyTorch memory, this process has 12.30 GiB memory in use. Of the allocated memory 11.20 GiB is allocated by PyTorch, and 600.00 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.";
    let r = explain_oom(m).unwrap();
    assert_eq!(r.findings, [Finding::OtherProcesses], "{r:?}");
    assert!(r.fixes.iter().any(|f| f.contains("PID 4242")));
}

#[test]
fn tensorflow_wording() {
    let r = explain_oom(TF).unwrap();
    assert_eq!(r.source, Source::Tensorflow);
    assert_eq!(r.numbers.shape, Some(vec![32, 1024, 1024]));
    assert_eq!(r.numbers.requested, Some(32 * 1024 * 1024 * 4));
}

#[test]
fn not_an_oom_and_garbage() {
    assert_eq!(explain_oom("hello"), Err(OomError::NotAnOom));
    let r = explain_oom("Tried to allocate lots of memory").unwrap();
    assert!(r.not_understood.iter().any(|s| s.contains("requested")));
    let huge = "Tried to allocate 1e400 GiB".to_string();
    assert!(explain_oom(&huge).is_ok());
    // input past the cap is cut: the message behind it is not read
    let long = "x".repeat(MAX_INPUT_BYTES + 10) + "Tried to allocate 2.00 GiB";
    assert_eq!(explain_oom(&long), Err(OomError::NotAnOom));
    let cut = "Tried to allocate 2.00 GiB ".to_string() + &"é".repeat(MAX_INPUT_BYTES);
    let r = explain_oom(&cut).unwrap();
    assert_eq!(r.numbers.requested, Some(2 << 30));
    assert!(r.not_understood.iter().any(|s| s.contains("cut")));
}

proptest::proptest! {
    #[test]
    fn never_panics(s in ".{0,400}") {
        let _ = explain_oom(&s);
        let _ = explain_oom(&format!("Tried to allocate {s} GPU {s} has a total capacity of {s} of which {s}"));
        let _ = explain_oom(&format!("OOM when allocating tensor with shape[{s}] and type {s}"));
    }
}
