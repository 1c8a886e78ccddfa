//! Unit tests of the curve diagnosis (fixtures as users paste them: `tests/diagnose.rs`).
use super::*;

const GIB: u64 = 1 << 30;

fn trace(f: impl Fn(usize) -> u64, n: usize) -> Vec<Sample> {
    (0..n).map(|i| Sample { t_s: i as f64 * 0.1, gpu: 0, used: f(i), total: 80 * GIB }).collect()
}

/// A training loop: states `base`, each 10-sample step rises by `act` and falls back.
fn steps(base: u64, act: u64, leak_per_step: u64) -> impl Fn(usize) -> u64 {
    move |i| {
        let step = (i / 10) as u64;
        let phase = (i % 10) as u64;
        base + leak_per_step * step + act * phase.min(10 - phase) / 5
    }
}

#[test]
fn the_four_verdicts() {
    let healthy = classify(&trace(steps(30 * GIB, 20 * GIB, 0), 300), None).unwrap();
    assert_eq!(healthy.verdict, Verdict::Healthy, "{healthy:?}");
    assert!(healthy.iterations >= 25);
    let batch = classify(&trace(steps(40 * GIB, 37 * GIB, 0), 300), None).unwrap();
    assert_eq!(batch.verdict, Verdict::BatchTooLarge, "{batch:?}");
    assert!(!batch.evidence.is_empty());
    let model = classify(&trace(|i| 77 * GIB + (i as u64 % 3) * (GIB / 4), 300), None).unwrap();
    assert_eq!(model.verdict, Verdict::ModelTooLarge, "{model:?}");
    let leak = classify(&trace(steps(20 * GIB, 10 * GIB, 100 << 20), 300), None).unwrap();
    assert_eq!(leak.verdict, Verdict::Leak, "{leak:?}");
    assert!((leak.growth_mib_per_iteration - 100.0).abs() < 15.0, "{}", leak.growth_mib_per_iteration);
    assert!(leak.seconds_to_oom.is_some_and(|t| t > 0.0));
}

#[test]
fn a_job_that_dies_at_the_card_ran_out_of_memory() {
    let cap = 80 * GIB;
    // two steps rising to 60 %, the third to 99 %, then the process is gone
    let used = |i: usize| match i {
        0..=9 => 20 * GIB + (i as u64 % 5) * 8 * GIB,
        10..=14 => 20 * GIB + (i as u64 - 9) * 16 * GIB - GIB,
        _ => 300 << 20,
    };
    let samples: Vec<Sample> =
        (0..24).map(|i| Sample { t_s: i as f64, gpu: 0, used: used(i).min(cap), total: cap }).collect();
    let r = classify(&samples, None).unwrap();
    assert_eq!(r.verdict, Verdict::BatchTooLarge, "{r:?}");
    assert!(r.advice[0].contains("ended"), "{:?}", r.advice);
}

#[test]
fn a_flat_curve_at_the_card_is_a_model_too_large() {
    let cap = 24 * GIB;
    // loading for three samples, then pinned at 98 % with a wobble that reads as one peak
    let samples: Vec<Sample> = (0..40)
        .map(|i| {
            let used = match i {
                0 => GIB,
                1 => 8 * GIB,
                2 => 16 * GIB,
                20 => cap - (200 << 20),
                _ => cap - (480 << 20),
            };
            Sample { t_s: i as f64, gpu: 0, used, total: cap }
        })
        .collect();
    let r = classify(&samples, None).unwrap();
    assert_eq!(r.verdict, Verdict::ModelTooLarge, "{r:?}");
}

#[test]
fn every_gpu_gets_its_own_verdict() {
    let cap = 80 * GIB;
    let mut samples = Vec::new();
    for i in 0..40 {
        for g in 0..4u32 {
            let base = 30 * GIB + (i as u64 % 4) * 6 * GIB;
            let used = if g == 2 { (base + i as u64 * GIB).min(cap) } else { base };
            samples.push(Sample { t_s: i as f64, gpu: g, used, total: cap });
        }
    }
    let all = classify_all(&samples).unwrap();
    assert_eq!(all.iter().map(|r| r.gpu).collect::<Vec<_>>(), [0, 1, 2, 3]);
    assert_eq!(all.iter().filter(|r| r.verdict.fails()).map(|r| r.gpu).collect::<Vec<_>>(), [2]);
}

#[test]
fn reads_nvidia_smi_csv() {
    let text = "timestamp, index, memory.used [MiB], memory.total [MiB]\n\
                2026/11/29 23:59:59.900, 0, 1000 MiB, 81559 MiB\n\
                2026/11/29 23:59:59.950, 1, 10 MiB, 81559 MiB\n\
                2026/11/30 00:00:00.000, 0, 1100 MiB, 81559 MiB\n";
    let s = parse(text).unwrap();
    assert_eq!(s.len(), 3);
    assert!((s[2].t_s - 0.1).abs() < 1e-6, "midnight wrap: {}", s[2].t_s);
    assert_eq!(s[0].used, 1000 << 20);
    let err = parse("timestamp, index\n2026/11/29 10:00:00, zero, 1 MiB, 2 MiB").unwrap_err();
    assert!(err.to_string().starts_with("line 2"), "{err}");
    assert_eq!(classify(&s, Some(0)).unwrap_err(), TraceError::TooShort(2, 0));
}

#[test]
fn theil_sen_ignores_a_spike() {
    let pts: Vec<(f64, f64)> =
        (0..20).map(|i| (i as f64, 2.0 * i as f64 + if i == 7 { 500.0 } else { 0.0 })).collect();
    assert!((theil_sen(&pts) - 2.0).abs() < 1e-9);
}

proptest::proptest! {
    #[test]
    fn parse_never_panics(s in "[0-9a-zA-Z:/., \\n-]{0,500}") {
        if let Ok(samples) = parse(&s) {
            let _ = classify(&samples, None);
        }
    }
}
