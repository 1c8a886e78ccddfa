use super::synth::{PickleWriter, SynthEntry, trace_pickle, training_trace, training_trace_with};
use super::*;

const MIB: u64 = 1 << 20;

fn entry(action: &'static str, addr: u64, size: u64, frames: Option<usize>) -> SynthEntry {
    SynthEntry { action, addr, size, frames }
}

/// A hand-built trace: one block allocated before the trace and still live, one allocated in it
/// and still live, one allocated and freed, one freed with no alloc, a segment grown and freed,
/// an OOM.
fn hand_built() -> Vec<u8> {
    let seg = 0x1000_0000u64;
    let segments = vec![(seg, 64 * MIB, vec![(seg, 4 * MIB), (seg + 4 * MIB, 2 * MIB)])];
    let entries = vec![
        entry("alloc", seg + 4 * MIB, 2 * MIB, Some(0)),
        entry("alloc", seg + 6 * MIB, MIB, Some(0)),
        entry("free_requested", seg + 6 * MIB, MIB, None),
        entry("free_completed", seg + 6 * MIB, MIB, Some(1)),
        entry("free_completed", seg + 8 * MIB, 3 * MIB, Some(1)), // alloc before the trace
        entry("segment_alloc", 0x2000_0000, 20 * MIB, None),
        entry("oom", 0, 100 << 30, None),
        entry("segment_free", 0x2000_0000, 20 * MIB, None),
        entry("snapshot", 0, 0, None),
    ];
    let frames = vec![
        vec![
            ("/usr/lib/python3/site-packages/torch/nn/functional.py", 10, "linear"),
            ("model.py", 5, "forward"),
        ],
        vec![("/usr/lib/python3/site-packages/torch/autograd/graph.py", 7, "backward")],
    ];
    trace_pickle(&segments, &entries, &frames)
}

#[test]
fn matching_and_baseline_follow_memory_viz() {
    let t = read_trace(&hand_built()).unwrap();
    assert_eq!(t.entries, 9);
    assert_eq!(t.len(), 6, "free_requested, oom and snapshot are not events");
    // 4 MiB live with no alloc + 3 MiB freed with no alloc; the 2 MiB live block has its alloc
    assert_eq!(t.baseline_allocated, 7 * MIB);
    assert_eq!((t.unmatched_frees, t.live_before_trace), (1, 1));
    assert_eq!(t.allocated, [9, 10, 9, 6, 6, 6].map(|m| m * MIB));
    assert_eq!(t.peak, (1, 10 * MIB));
    // reserved: 64 MiB at the end, net zero in the trace
    assert_eq!(t.baseline_reserved, 64 * MIB);
    assert_eq!(t.reserved, [64, 64, 64, 64, 84, 64].map(|m| m * MIB));
    assert_eq!(t.peak_reserved, (4, 84 * MIB));
    assert_eq!(t.ooms, [TraceOom { event: 5, requested: 100 << 30, device_free: 0 }]);
    assert_eq!(t.kind[0], EventKind::Alloc);
    assert_eq!(t.kind[4], EventKind::SegmentAlloc);
    // the frames list is written once and referenced by the second alloc: both see it
    assert_eq!(t.frame_at(0), Some("model.py:5:forward"));
    assert_eq!(t.frame_at(1), Some("model.py:5:forward"));
    assert_eq!(t.frame_at(2), Some("graph.py:7:backward"), "only torch frames: the innermost");
    assert_eq!(t.frame_at(4), None);
    assert_eq!(t.frame_names.len(), 2);
    // the segments view of the same pickle still reads
    let (s, t2) = read_snapshot_and_trace(&hand_built()).unwrap();
    assert_eq!(s.reserved, 64 * MIB);
    assert_eq!(s.allocated, 6 * MIB);
    assert_eq!(t2, t);
}

#[test]
fn steps_from_the_curve() {
    let t = read_trace(&training_trace(5, 4)).unwrap();
    assert_eq!(t.len(), 2 + 5 * 18);
    assert_eq!(t.baseline_allocated, 32 * MIB);
    // forward ends at 96 MiB; the first gradient lands before the first activation is freed
    assert_eq!(t.peak, (2 + 4, 104 * MIB));
    assert_eq!(t.step_source, StepSource::Pattern);
    let want: Vec<Range<usize>> = (0..5).map(|k| 2 + 18 * k..2 + 18 * (k + 1)).collect();
    assert_eq!(t.steps, want);
    assert!(t.step_peaks().iter().all(|s| s.bytes == 104 * MIB));
    assert!(t.phases.is_empty() && t.phase_peaks().is_empty());
    assert_eq!(read_trace(&training_trace(1, 4)).unwrap().steps, vec![2..20_usize; 1]);
    // cut by the trace's start or end: not a step; noise that never reaches the high mark: no step
    assert_eq!(steps::from_pattern(&[9, 9, 0, 0, 10, 10, 0, 0, 10, 10, 0, 0, 10]), [4..8, 8..12]);
    assert_eq!(steps::from_pattern(&[0, 10, 0, 2, 0, 10, 0, 10, 0]), [1..5, 5..7, 7..9]);
    assert!(steps::from_pattern(&[5; 100]).is_empty());
    assert!(steps::from_pattern(&[1, 2]).is_empty());
}

/// A root dict with one device trace (`time_us` = 10 × index) and `external_annotations`.
fn annotated(entries: &[(&str, u64, u64)], anns: &[(&str, &str, i64)]) -> Vec<u8> {
    let mut w = PickleWriter::new();
    w.begin_dict();
    w.str("segments");
    w.begin_list();
    w.end_list();
    w.str("device_traces");
    w.begin_list();
    w.begin_list();
    for (i, (action, addr, size)) in entries.iter().enumerate() {
        w.begin_dict();
        w.kv_str("action", action);
        w.kv_int("addr", *addr as i64);
        w.kv_int("size", *size as i64);
        w.kv_int("stream", 0);
        w.kv_int("time_us", 10 * i as i64);
        w.end_dict();
        w.item();
    }
    w.end_list();
    w.item();
    w.end_list();
    w.str("external_annotations");
    w.begin_list();
    for (name, stage, t) in anns {
        w.begin_dict();
        w.kv_str("name", name);
        w.kv_str("stage", stage);
        w.kv_int("device", 0);
        w.kv_int("time_us", *t);
        w.end_dict();
        w.item();
    }
    w.end_list();
    w.end_dict();
    w.finish()
}

#[test]
fn steps_and_phases_from_annotations() {
    // per step (events at t = 10 i): fwd allocs at 0, 10; bwd frees at 20, 30; opt alloc+free 40, 50
    let mut entries = Vec::new();
    let mut anns = Vec::new();
    for s in 0..2u64 {
        let t0 = 60 * s as i64;
        entries.extend([
            ("alloc", 0x100, 10 * MIB),
            ("alloc", 0x200, 20 * MIB),
            ("free_completed", 0x200, 20 * MIB),
            ("free_completed", 0x100, 10 * MIB),
            ("alloc", 0x300, 5 * MIB),
            ("free_completed", 0x300, 5 * MIB),
        ]);
        anns.extend([
            ("ProfilerStep#1", "START", t0),
            ("## forward ##", "START", t0),
            ("## forward ##", "END", t0 + 15),
            ("## backward ##", "START", t0 + 15),
            ("## backward ##", "END", t0 + 35),
            ("Optimizer.step#AdamW.step", "START", t0 + 35),
            ("Optimizer.step#AdamW.step", "END", t0 + 55),
            ("ProfilerStep#1", "END", t0 + 55),
        ]);
    }
    let t = read_trace(&annotated(&entries, &anns)).unwrap();
    assert_eq!(t.step_source, StepSource::Annotations);
    assert_eq!(t.steps, [0..6, 6..12]);
    assert_eq!(t.phase_at(1), Some(TracePhase::Forward));
    assert_eq!(t.phase_at(2), Some(TracePhase::Backward));
    assert_eq!(t.phase_at(4), Some(TracePhase::Optimizer));
    assert_eq!(t.phases.len(), 6);
    let peaks = t.phase_peaks();
    assert_eq!(peaks[0], PhasePeak { phase: TracePhase::Forward, event: 1, bytes: 30 * MIB });
    assert_eq!(peaks[1], PhasePeak { phase: TracePhase::Backward, event: 2, bytes: 10 * MIB });
    assert_eq!(peaks[2], PhasePeak { phase: TracePhase::Optimizer, event: 4, bytes: 5 * MIB });
    // phases only: steps begin at each forward
    let no_steps: Vec<_> = anns.iter().filter(|a| !a.0.starts_with("Profiler")).copied().collect();
    let t = read_trace(&annotated(&entries, &no_steps)).unwrap();
    assert_eq!(t.steps, [0..6, 6..12]);
    assert_eq!(t.summary().peak_phase, Some(TracePhase::Forward));
}

#[test]
fn decimate_keeps_extremes() {
    assert_eq!(decimate(&[1, 5, 2, 8, 3], 2), [(1, 5), (2, 8)]);
    assert_eq!(decimate(&[1, 5, 2], 10), [(1, 1), (5, 5), (2, 2)]);
    assert!(decimate(&[], 10).is_empty());
    assert!(decimate(&[1, 2], 0).is_empty());
}

#[test]
fn compare_finds_where_checkpointing_saves() {
    let a = read_trace(&training_trace_with(3, 4, 16)).unwrap();
    let b = read_trace(&training_trace_with(3, 4, 4)).unwrap();
    let c = compare(&a, &b, 64);
    assert_eq!((c.peak_a, c.peak_b), (104 * MIB, 72 * MIB));
    assert_eq!(c.peak_delta, -32 * MIB as i64);
    assert_eq!(c.diff.len(), 64);
    // the curve rule starts b's steps one event later (its first activation stays under the low
    // mark), so the alignment is approximate; the largest gap is at the end of forward
    assert!(c.diff.iter().filter(|d| **d > 0).count() <= 8, "{:?}", c.diff);
    let d = c.most_different.unwrap();
    assert!(d.delta <= -40 * MIB as i64 && d.allocated_a >= 96 * MIB, "{d:?}");
    assert!(d.frame_a.as_deref().is_some_and(|f| f.starts_with("train.py:")), "{d:?}");
    assert_eq!(c.step_a, a.steps[2].clone());
    // a trace with no events: no divergence, no panic
    let empty = MemTrace::default();
    assert!(compare(&empty, &b, 16).most_different.is_none());
    assert_eq!(compare(&a, &a, 0).diff, [0]);
}

#[test]
fn refuses_objects_and_limits() {
    let evil = b"\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00lsq\x01\x85q\x02Rq\x03.";
    assert!(matches!(read_trace(evil), Err(PickleError::Unsupported { .. })));
    assert!(read_trace(b"\x80\x04N\x72\xff\xff\xff\xff.").is_err());
    // a list root (legacy segments-only snapshot) and a trace-less dict: empty traces
    assert!(read_trace(b"\x80\x04].").unwrap().is_empty());
    assert!(read_trace(b"\x80\x04}.").unwrap().is_empty());
}

proptest::proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600)) {
        let _ = read_trace(&bytes);
        let mut prefixed = b"\x80\x04}(\x8c\x0ddevice_traces](](}(\x8c\x06action".to_vec();
        prefixed.extend_from_slice(&bytes);
        let _ = read_trace(&prefixed);
    }

    #[test]
    fn random_traces_replay_without_wrapping(
        ops in proptest::collection::vec((0u8..6, 0u64..8, 1u64..1000), 0..200),
    ) {
        let actions = ["alloc", "free_completed", "segment_alloc", "segment_free", "oom", "free_requested"];
        let entries: Vec<SynthEntry> =
            ops.iter().map(|(a, addr, size)| entry(actions[*a as usize], addr * 4096, *size, None)).collect();
        let t = read_trace(&trace_pickle(&[], &entries, &[])).unwrap();
        let allocs: u64 = entries.iter().filter(|e| e.action == "alloc").map(|e| e.size).sum();
        let grown: u64 = entries.iter().filter(|e| e.action == "segment_alloc").map(|e| e.size).sum();
        proptest::prop_assert!(t.allocated.iter().all(|v| *v <= t.baseline_allocated + allocs));
        proptest::prop_assert!(t.reserved.iter().all(|v| *v <= t.baseline_reserved + grown));
        let cols = decimate(&t.allocated, 7);
        proptest::prop_assert_eq!(cols.iter().map(|c| c.1).max(), t.allocated.iter().copied().max());
    }
}

/// The CPython-pickled fixtures (tests/data/snapshot/make_snapshot.py) against the numbers the
/// script's own bookkeeping wrote beside them.
#[test]
fn fixtures_match_the_generators_bookkeeping() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/snapshot/");
    let want: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{dir}trace_expected.json")).unwrap()).unwrap();
    let read = |name: &str| read_trace(&std::fs::read(format!("{dir}{name}")).unwrap()).unwrap();
    let u = |v: &serde_json::Value| v.as_u64().unwrap();
    let ranges = |v: &serde_json::Value| -> Vec<Range<usize>> {
        v.as_array().unwrap().iter().map(|r| u(&r[0]) as usize..u(&r[1]) as usize).collect()
    };
    for name in ["trace_train.pickle", "trace_train_ckpt.pickle"] {
        let (t, w) = (read(name), &want[name]);
        assert_eq!(t.entries as u64, u(&w["entries"]), "{name}");
        assert_eq!(t.len() as u64, u(&w["events"]), "{name}");
        assert_eq!(t.baseline_allocated, u(&w["baseline_allocated"]), "{name}");
        assert_eq!(t.peak, (u(&w["peak_event"]) as usize, u(&w["peak_allocated"])), "{name}");
        assert_eq!(t.peak_reserved.1, u(&w["peak_reserved"]), "{name}");
        assert_eq!((t.unmatched_frees, t.live_before_trace), (1, 4), "{name}");
        assert!(t.frame_names.iter().any(|f| f == "train.py:31:block_forward"), "{name}");
    }
    let (a, w) = (read("trace_train.pickle"), &want["trace_train.pickle"]);
    assert_eq!(a.step_source, StepSource::Annotations);
    assert_eq!(a.steps, ranges(&w["step_events"]));
    let step_peaks: Vec<u64> = a.step_peaks().iter().map(|s| s.bytes).collect();
    assert_eq!(step_peaks, w["step_peaks"].as_array().unwrap().iter().map(u).collect::<Vec<_>>());
    assert_eq!(a.ooms.len(), 1);
    assert_eq!(a.ooms[0].requested, 40 << 30);
    let phases: Vec<TracePhase> = a.phase_peaks().iter().map(|p| p.phase).collect();
    assert_eq!(phases, [TracePhase::Forward, TracePhase::Backward, TracePhase::Optimizer]);
    // the peak: the first gradient of backward lands before the last activation is freed
    assert_eq!(a.phase_at(a.peak.0), Some(TracePhase::Backward));
    // checkpointing variant: no annotations; steps 1 and 2 found from the curve (step 0 warms up
    // below the settled floor), each starting inside the true step
    let (b, w) = (read("trace_train_ckpt.pickle"), &want["trace_train_ckpt.pickle"]);
    assert_eq!(b.step_source, StepSource::Pattern);
    let truth = ranges(&w["step_events"]);
    assert_eq!(b.steps.len(), 2, "{:?} vs {truth:?}", b.steps);
    for (found, real) in b.steps.iter().zip(&truth[1..]) {
        assert!(real.contains(&found.start), "{found:?} not inside {real:?}");
    }
    assert!(b.step_peaks().iter().all(|s| s.bytes == u(&w["step_peaks"][2])));
    let c = compare(&a, &b, 256);
    assert!(c.peak_delta < 0 && c.step_peak_b < c.step_peak_a);
    assert!(c.most_different.is_some_and(|d| d.delta < 0));
}
