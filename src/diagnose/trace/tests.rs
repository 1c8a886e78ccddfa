//! Unit tests of the curve diagnosis (fixtures as users paste them: `tests/diagnose.rs`).
use super::*;
use crate::i18n::Lang;

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

/// A training loop sampled every `dt` s: `base` bytes of states, a sawtooth of `swing` bytes that
/// rises over `period` s and drops, and `leak` bytes a second kept, on a card of `cap` bytes.
fn sawtooth(n: usize, dt: f64, period: f64, base: u64, swing: u64, leak: f64, cap: u64) -> Vec<Sample> {
    (0..n)
        .map(|i| {
            let t = i as f64 * dt;
            let phase = (t / period + 1e-9).fract();
            let used = base as f64 + leak * t + swing as f64 * phase;
            Sample { t_s: t, gpu: 0, used: used as u64, total: cap }
        })
        .collect()
}

#[test]
fn iterations_and_the_leak_do_not_depend_on_the_card() {
    // issue #42: a 10 MiB/s leak on a 4 s sawtooth read 41 MiB/iteration on a 24 GB card and
    // 856 MiB/iteration (7 iterations) on an 80 GB one; it is 40 MiB an iteration on both
    let mib = 1048576.0;
    let (r24, r80) = [24_564u64 << 20, 81_559 << 20]
        .map(|cap| classify(&sawtooth(1200, 0.5, 4.0, 12 * GIB, 3 * GIB / 2, 10.0 * mib, cap), None).unwrap())
        .into();
    for r in [&r24, &r80] {
        assert_eq!(r.verdict, Verdict::Leak, "{r:?}");
        assert!((149..=150).contains(&r.iterations), "{r:?}");
        assert!((r.period_s.unwrap() - 4.0).abs() < 0.01, "{r:?}");
        assert!((r.growth_mib_per_s - 10.0).abs() < 0.2, "{r:?}");
        assert!((r.growth_mib_per_iteration - 40.0).abs() < 1.0, "{r:?}");
        assert!(r.advice[0].contains("one every 4.0 s"), "{:?}", r.advice);
    }
    assert_eq!(
        (r24.iterations, r24.growth_mib_per_iteration),
        (r80.iterations, r80.growth_mib_per_iteration)
    );
    // a period that is not a whole number of samples (nvidia-smi -l 1 on a 6.5 s step)
    let r = classify(&sawtooth(400, 1.0, 6.5, 20 * GIB, 8 * GIB, 0.0, 80 * GIB), None).unwrap();
    assert!((r.period_s.unwrap() - 6.5).abs() < 0.1 && (60..=62).contains(&r.iterations), "{r:?}");
}

#[test]
fn a_steady_trace_has_no_iterations() {
    // loading for five samples, then flat with nvidia-smi's MiB jitter: not "1 iteration"
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let samples: Vec<Sample> = (0..120)
        .map(|i| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let used = if i < 5 { (i as u64 + 1) * 4 * GIB } else { 20 * GIB + (seed % 3) * (1 << 20) };
            Sample { t_s: i as f64, gpu: 0, used, total: 80 * GIB }
        })
        .collect();
    let r = classify(&samples, None).unwrap();
    assert_eq!((r.verdict, r.iterations, r.period_s), (Verdict::Healthy, 0, None), "{r:?}");
    assert_eq!(r.growth_mib_per_iteration, 0.0);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
    /// The same trace on cards from 16 to 141 GiB, shifted up by a constant on each: the same
    /// iterations, period and leak, and the iterations and the leak are the trace's own.
    #[test]
    fn the_same_trace_on_any_card_reads_the_same(
        samples_per_period in 6usize..40,
        dt in proptest::sample::select(vec![0.1, 0.25, 0.5, 1.0]),
        periods in 20usize..50,
        swing_mib in 300u64..6000,
        leak_total_mib in 0u64..4000,
    ) {
        let period = samples_per_period as f64 * dt;
        let n = samples_per_period * periods;
        let leak = leak_total_mib as f64 * 1048576.0 / (n as f64 * dt);
        let reads: Vec<TraceReport> = [16u64, 24, 48, 80, 141]
            .iter()
            .map(|&c| {
                let base = 4 * GIB + (c - 16) * GIB / 2;
                classify(&sawtooth(n, dt, period, base, swing_mib << 20, leak, c * GIB), None).unwrap()
            })
            .collect();
        for r in &reads {
            proptest::prop_assert_eq!(r.iterations, reads[0].iterations);
            proptest::prop_assert_eq!(r.period_s.map(|p| (p * 1e6).round()), reads[0].period_s.map(|p| (p * 1e6).round()));
            proptest::prop_assert!((r.growth_mib_per_s - reads[0].growth_mib_per_s).abs() < 1e-6);
            proptest::prop_assert!((r.growth_mib_per_iteration - reads[0].growth_mib_per_iteration).abs() < 1e-6);
        }
        let r = &reads[0];
        proptest::prop_assert!(r.iterations + 1 >= periods && r.iterations <= periods, "{r:?}");
        proptest::prop_assert!((r.period_s.unwrap_or(0.0) - period).abs() < 1e-6 * period.max(1.0), "{r:?}");
        let truth = leak / 1048576.0 * period;
        proptest::prop_assert!((r.growth_mib_per_iteration - truth).abs() <= 0.05 * truth + 1.0, "{r:?} vs {truth}");
    }
}

#[test]
fn a_log_cut_mid_line_is_read_up_to_the_cut_with_a_note() {
    // `nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total --format=csv -l 1 > log`
    // stopped with Ctrl-C: the block-buffered file ends mid-line
    let mut full = String::from("timestamp, index, memory.used [MiB], memory.total [MiB]\n");
    for i in 0..12 {
        full += &format!("2026/11/29 10:00:{i:02}.012, 0, {} MiB, 81559 MiB\n", 30000 + (i % 4) * 5000);
    }
    let whole = parse(&full).unwrap();
    assert_eq!(whole.len(), 12);
    let last_line_start = full.trim_end().rfind('\n').unwrap() + 1;
    // cut anywhere in the last line (line 13): the first 11 samples and one note naming line 13
    for cut in [last_line_start + 3, last_line_start + 26, last_line_start + 31, full.len() - 9] {
        let text = &full[..cut];
        let log = read_log(text, Lang::En).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        assert_eq!(log.samples, whole[..11], "cut at {cut}: {:?}", &text[last_line_start..]);
        assert_eq!(log.notes.len(), 1);
        assert!(
            log.notes[0].starts_with("line 13 is cut short") && log.notes[0].ends_with("read up to line 12")
        );
        let zh = read_log(text, Lang::ZhCn).unwrap();
        assert!(zh.notes[0].contains("第 13 行不完整") && zh.notes[0].contains("第 12 行"), "{:?}", zh.notes);
        assert_eq!(parse(text).unwrap(), log.samples);
    }
    // a whole log has no note; a bad line before the last is still an error naming it
    assert!(read_log(&full, Lang::En).unwrap().notes.is_empty());
    let bad = full.replacen("35000 MiB", "35000 MiX", 1);
    assert!(matches!(parse(&bad), Err(TraceError::Line { line: 3, .. })), "{:?}", parse(&bad));
    // the boxed table of `nvidia-smi -l 1` cut inside its memory cell
    let table = "Tue May 14 10:00:00 2024\n|   0  NVIDIA A100-SXM4-80GB          On  | 00000000:07:00.0 Off |                    0 |\n| N/A   61C    P0             349W / 400W |  43787MiB / 81920MiB |     99%      Default |\nTue May 14 10:00:01 2024\n|   0  NVIDIA A100-SXM4-80GB          On  | 00000000:07:00.0 Off |                    0 |\n| N/A   61C    P0             349W / 400W |  43787MiB / 81";
    let log = read_log(table, Lang::En).unwrap();
    assert_eq!((log.samples.len(), log.notes.len()), (1, 1), "{log:?}");
    assert!(log.notes[0].starts_with("line 6 is cut short"), "{:?}", log.notes);
    // `nvidia-smi dmon -s m` cut the same way
    let dmon = "# gpu     fb   bar1   ccpm\n# Idx     MB     MB     MB\n    0  30000      5      0\n    0  31000      5      0\n    0  3";
    let log = read_log(dmon, Lang::En).unwrap();
    assert_eq!((log.samples.len(), log.notes.len()), (2, 1));
    assert!(log.notes[0].starts_with("line 5 is cut short"), "{:?}", log.notes);
}
