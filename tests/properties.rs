//! Properties over the whole input space: no panics or overflow, parts add up, memory never
//! decreases with batch or sequence length, and the fit search equals a brute-force scan.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use vramscope::estimate::{
    AttentionImpl, BaseQuant, Checkpointing, Lora, Mode, Optimizer, Scenario, Targets, estimate, timeline,
};
use vramscope::fit::{Knob, max_batch, sweep_flat};
use vramscope::model::preset::{builtin, preset_names};
use vramscope::units::Precision;

/// `cases` cases; a failing case's seed is kept with the crate's others, in
/// `proptest-regressions/tests/properties.txt` (the lib's unit tests use proptest's default,
/// `proptest-regressions/<path under src>.txt`), and re-run first.
fn config(cases: u32) -> ProptestConfig {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/proptest-regressions/tests/properties.txt");
    ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(file))),
        ..ProptestConfig::with_cases(cases)
    }
}

fn arb_scenario() -> impl Strategy<Value = Scenario> {
    let names = preset_names();
    (
        0..names.len(),
        prop_oneof![Just(Mode::Train), Just(Mode::Infer)],
        1u64..=4096,
        1u64..=32768,
        prop::sample::select(Precision::ALL.to_vec()),
        prop::sample::select(Optimizer::ALL.to_vec()),
        prop_oneof![Just(AttentionImpl::Eager), Just(AttentionImpl::Sdpa), Just(AttentionImpl::Flash)],
        prop_oneof![
            Just(Checkpointing::None),
            Just(Checkpointing::Full),
            Just(Checkpointing::Selective),
            (1u64..100).prop_map(Checkpointing::Every),
            (1u64..100).prop_map(Checkpointing::Segments),
        ],
        prop::option::of((1u64..=256, 1u8..=127, prop_oneof![Just(0.0), Just(0.1)])),
        prop_oneof![Just(BaseQuant::None), Just(BaseQuant::Nf4), Just(BaseQuant::Int8)],
    )
        .prop_map(move |(mi, mode, batch, seq, precision, optimizer, attention, ckpt, lora, bq)| {
            let model = builtin(names[mi]).expect("preset");
            let mut sc = Scenario::new(model);
            sc.mode = mode;
            sc.batch = batch;
            sc.seq = match sc.model.transformer() {
                Some(t) if t.max_position_embeddings > 0 => seq.min(t.max_position_embeddings),
                _ => seq,
            };
            if let Some(p) = sc.model.patches() {
                // a vision model's sequence is its image's tokens: the number drawn is the side
                // (at least the smallest side it runs: Swin-B's last stage needs 193 px)
                let min = sc.model.min_image_side().unwrap_or(p.patch);
                let side = vramscope::model::pixels::ImageSize::square(seq.clamp(min, 1024.max(min)));
                sc.set_image(side).expect("an image the model takes");
            }
            sc.precision = precision;
            sc.optimizer = optimizer;
            sc.attention = attention;
            // every:K and segments:N beyond the blocks are refused (checkpoint_sequential raises)
            let blocks = sc.model.transformer().map_or(1, |t| t.num_layers);
            sc.checkpointing = match ckpt {
                Checkpointing::Every(k) => Checkpointing::Every(k.min(blocks)),
                Checkpointing::Segments(n) => Checkpointing::Segments(n.min(blocks)),
                c => c,
            };
            sc.lora = lora.map(|(rank, t, dropout)| Lora { rank, targets: Targets(t), dropout });
            sc.base_quant = if sc.lora.is_some() { bq } else { BaseQuant::None };
            if sc.model.traced().is_some() {
                // a traced model answers in its own precision and trainable set, with no
                // sequence; half the time exactly so (the other half must be refused)
                let at = Scenario::new(sc.model.clone());
                if batch % 2 == 0 {
                    (sc.seq, sc.precision, sc.lora, sc.base_quant) = (1, at.precision, None, BaseQuant::None);
                }
            }
            sc
        })
}

proptest! {
    #![proptest_config(config(400))]

    #[test]
    fn parts_add_up_and_nothing_panics(sc in arb_scenario()) {
        match estimate(&sc) {
            Err(err) => {
                // rejected combinations must be the documented ones (or sizes past the 1 EiB guard)
                prop_assert!(err.to_string().contains("too large to estimate")
                    || err.to_string().contains("match no nn.Linear")
                    || sc.mode == Mode::Train && sc.precision.is_quantized()
                    || sc.base_quant != BaseQuant::None && sc.precision.is_quantized()
                    || sc.lora.is_some() && sc.model.transformer().is_none()
                    // a convolutional network: only pure bf16/fp16/fp32, never checkpointed
                    || sc.model.net().is_some()
                        && (!matches!(sc.precision, Precision::Bf16 | Precision::Fp16 | Precision::Fp32)
                            || sc.mode == Mode::Train && sc.checkpointing != Checkpointing::None)
                    // Swin: SDPA only
                    || sc.model.net().is_some_and(|n| n.family_id() == "swin")
                        && sc.attention != AttentionImpl::Sdpa
                    // a traced model: what its trace cannot tell, refused naming the model
                    || sc.model.traced().is_some() && err.to_string().contains(&sc.model.name)
                        && (sc.seq != 1 || sc.lora.is_some() || Scenario::new(sc.model.clone()).precision != sc.precision
                            || !matches!(sc.checkpointing, Checkpointing::None | Checkpointing::Full)));
            }
            Ok(e) => {
                prop_assert_eq!(e.activation_breakdown.total(), e.activations);
                prop_assert_eq!(e.peak.alive.total(), e.peak_allocated);
                prop_assert_eq!(e.total, e.peak_allocated + e.overhead);
                prop_assert!(e.moments.iter().all(|m| m.alive.total() <= e.peak_allocated));
                prop_assert!(e.peak_allocated >= e.parameters);
                prop_assert!(e.trainable_params <= e.n_params + e.trainable_params);
                if sc.mode == Mode::Infer {
                    prop_assert_eq!(e.gradients, 0);
                    prop_assert_eq!(e.activations, 0);
                }
            }
        }
    }

    #[test]
    fn memory_never_decreases_with_batch_or_seq(sc in arb_scenario(), db in 1u64..64, ds in 1u64..512) {
        if let Ok(a) = estimate(&sc) {
            let mut more_b = sc.clone();
            more_b.batch += db;
            let b = match estimate(&more_b) {
                Ok(b) => b,
                // the size guard (1 EiB a term) may refuse the larger batch; nothing else may
                Err(e) if e.to_string().contains("too large to estimate") => return Ok(()),
                Err(e) => panic!("a larger batch is still valid: {e}"),
            };
            prop_assert!(b.peak_allocated >= a.peak_allocated, "batch {} -> {}: {} -> {}", sc.batch, more_b.batch, a.peak_allocated, b.peak_allocated);
            prop_assert!(b.activations >= a.activations);
            prop_assert!(b.kv_cache >= a.kv_cache);
            let mut more_s = sc.clone();
            more_s.seq += ds;
            if let Ok(s) = estimate(&more_s) {
                prop_assert!(s.peak_allocated >= a.peak_allocated, "seq {} -> {}: {} -> {}", sc.seq, more_s.seq, a.peak_allocated, s.peak_allocated);
                prop_assert!(s.activations >= a.activations);
            }
        }
    }
}

#[test]
fn max_batch_equals_a_brute_force_scan() {
    for (name, seq, gib) in
        [("gpt2", 1024, 24), ("llama-2-7b", 512, 80), ("bert-base-uncased", 512, 16), ("resnet-50", 1, 24)]
    {
        let mut sc = Scenario::new(builtin(name).unwrap());
        sc.seq = seq;
        if name == "llama-2-7b" {
            sc.lora = Some("16:q,k,v,o".parse().unwrap());
        }
        let cap = gib << 30;
        // the flat-reserve search equals a scan of the flat estimate
        let scan_of = |fits: &dyn Fn(&Scenario) -> bool| {
            let mut scan = None;
            for b in 1..=4096 {
                let mut s = sc.clone();
                s.batch = b;
                if fits(&s) {
                    scan = Some(b);
                } else {
                    break;
                }
            }
            scan
        };
        let flat = scan_of(&|s| estimate(s).unwrap().total <= cap);
        assert_eq!(vramscope::fit::max_batch_flat(&sc, cap), flat, "{name}");
        // the answer `estimate` prints equals a scan of its own verdict (the allocator replayed)
        let found = max_batch(&sc, cap);
        assert_eq!(found, scan_of(&|s| vramscope::fit::fits(s, cap)), "{name}");
        assert!(found.is_some(), "{name} should fit at batch 1");
    }
    let sc = Scenario::new(builtin("llama-2-70b").unwrap());
    assert_eq!(max_batch(&sc, 24 << 30), None, "a 70B full fine-tune does not fit 24 GiB");
}

/// `checkpoint_sequential(blocks, N)` keeps N-1 segment inputs plus the last segment, and
/// recomputes one segment of floor(L/N) blocks at a time: peak ≈ (N-1)·input + (L/N)·block, a U over
/// N with its bottom at N* = sqrt(L · block / input). (With fine-grained units, where a unit keeps
/// about as much as its input, that is the textbook sqrt(L).) Not the naive "saves 1 - 1/N".
#[test]
fn checkpoint_segments_curve_is_u_shaped() {
    let mut sc = Scenario::new(builtin("llama-2-70b").unwrap());
    sc.batch = 8;
    sc.seq = 4096;
    sc.lora = Some("16:q,v".parse().unwrap());
    let layers = 80u64;
    let divisors: Vec<u64> = (1..=layers).filter(|n| layers.is_multiple_of(*n)).collect();
    let curve = sweep_flat(&sc, Knob::Segments, divisors.iter().copied());
    let curve: Vec<(u64, u64)> = curve.iter().map(|p| (p.x, p.peak)).collect();
    let (best_n, best) = curve.iter().copied().min_by_key(|(_, b)| *b).unwrap();
    println!("{curve:?}");
    assert!(curve[0].1 > best && curve[curve.len() - 1].1 > best, "not U-shaped: {curve:?}");
    assert!(best_n > 1 && best_n < layers, "minimum at an end: {curve:?}");
    // a Llama block keeps ~20x its input here, so N* = sqrt(80 · 20) ≈ 40
    assert!((20..=40).contains(&best_n), "minimum at {best_n}: {curve:?}");
    // falling then rising
    let at = curve.iter().position(|(n, _)| *n == best_n).unwrap();
    assert!(curve[..=at].windows(2).all(|w| w[0].1 >= w[1].1), "{curve:?}");
    assert!(curve[at..].windows(2).all(|w| w[0].1 <= w[1].1), "{curve:?}");
}

fn arb_parallel() -> impl Strategy<Value = vramscope::estimate::Parallel> {
    use vramscope::estimate::{FsdpMode, Offload, Parallel};
    (
        1u64..=512,
        0u8..=3,
        prop::sample::select(vec![1u64, 2, 4, 8, 16]),
        1u64..=16,
        1u64..=4,
        1u64..=8,
        any::<bool>(),
        prop::option::of(prop_oneof![
            Just(FsdpMode::FullShard),
            Just(FsdpMode::ShardGradOp),
            Just(FsdpMode::HybridShard)
        ]),
        0u64..=32,
        1u64..=4,
        prop_oneof![Just(Offload::None), Just(Offload::Optimizer), Just(Offload::Params)],
    )
        .prop_map(|(dp, zero, tp, pp, cp, ep, sp, fsdp, m, v, offload)| Parallel {
            dp,
            zero,
            tp,
            pp,
            cp,
            ep,
            sp,
            fsdp,
            micro_batches: m,
            virtual_stages: v,
            offload,
            ..Parallel::default()
        })
}

proptest! {
    #![proptest_config(config(400))]

    /// Any layout either estimates (with its parts adding up) or is rejected with a message.
    #[test]
    fn any_parallel_layout_estimates_or_is_rejected(sc in arb_scenario(), p in arb_parallel()) {
        let mut sc = sc;
        sc.parallel = p;
        match estimate(&sc) {
            Ok(e) => {
                prop_assert_eq!(e.peak.alive.total(), e.peak_allocated);
                prop_assert_eq!(e.total, e.peak_allocated + e.overhead);
                prop_assert!(e.stage.index < e.stage.stages.max(1));
            }
            Err(err) => prop_assert!(!err.to_string().is_empty()),
        }
    }
}

proptest! {
    #![proptest_config(config(300))]

    /// The predicted timeline of a step peaks exactly where the estimate does (same bytes, same
    /// phase), per-op events never rise above the block-level moments around them, the forward
    /// pass only adds saved activations, and a training step ends with the gradients freed.
    #[test]
    fn the_timeline_peaks_where_the_estimate_does(sc in arb_scenario(), p in arb_parallel()) {
        let mut sc = sc;
        sc.parallel = p;
        let Ok(e) = estimate(&sc) else { return Ok(()) };
        let t = timeline(&sc).expect("a scenario that estimates has a timeline");
        let max = t.events.iter().map(|ev| ev.alive.total()).max().unwrap_or(0);
        prop_assert_eq!(max, e.peak_allocated);
        prop_assert_eq!(t.peak().map(|p| p.phase), Some(e.peak.phase));
        prop_assert_eq!(t.estimate.total, e.total);
        let fwd: Vec<u64> = t
            .events
            .iter()
            .filter(|ev| ev.phase == vramscope::estimate::Phase::Forward && ev.alive.temporaries == 0)
            .map(|ev| ev.alive.activations)
            .collect();
        prop_assert!(fwd.windows(2).all(|w| w[0] <= w[1]), "forward activations only grow: {:?}", fwd);
        if sc.mode == Mode::Train {
            let last = t.events.last().expect("events");
            let step = t.events.iter().find(|ev| ev.op == "optimizer step").expect("an optimizer step");
            prop_assert_eq!(last.alive.activations, 0);
            // every gradient exists at the step (allocator-rounded), and zero_grad frees them
            prop_assert!(step.alive.gradients >= e.gradients, "{} < {}", step.alive.gradients, e.gradients);
            prop_assert!(last.alive.gradients < step.alive.gradients || e.gradients == 0);
        }
    }
}

/// `checkpoint_sequential` keeps one input per segment: the forward rises to the estimate's saved
/// activations without overshooting them (found by the proptest on gpt-oss, 36 mixed blocks).
#[test]
fn segment_checkpointing_keeps_one_input_per_segment_in_the_timeline() {
    let mut sc = Scenario::new(builtin("gpt-oss-120b").expect("preset"));
    sc.batch = 1;
    sc.seq = 1;
    sc.precision = Precision::Fp32;
    sc.attention = AttentionImpl::Eager;
    sc.checkpointing = Checkpointing::Segments(2);
    let e = estimate(&sc).unwrap();
    let t = timeline(&sc).unwrap();
    let fwd: Vec<u64> = t
        .events
        .iter()
        .filter(|ev| ev.phase == vramscope::estimate::Phase::Forward)
        .map(|ev| ev.alive.activations)
        .collect();
    assert!(fwd.windows(2).all(|w| w[0] <= w[1]), "{fwd:?}");
    assert_eq!(fwd.last().copied(), Some(e.activations));
}

proptest! {
    #![proptest_config(config(48))]

    /// The figure `vramscope estimate` gives (its most loaded stage, the allocator replayed) is
    /// the largest of `--stages`' per-stage figures, whatever the stage that holds it.
    #[test]
    fn the_headline_is_the_most_loaded_of_the_stages(
        sc in arb_scenario(),
        p in arb_parallel(),
        pp in 2u64..=6,
        gpu in prop::sample::select(vec![None, Some(80u64 << 30), Some(24u64 << 30)]),
    ) {
        let mut sc = sc;
        sc.parallel = vramscope::estimate::Parallel { pp, ..p };
        let Ok((e, _)) = vramscope::estimate::estimate_reserved(&sc, gpu) else { return Ok(()) };
        let stages = vramscope::estimate::per_stage(&sc, gpu).expect("a scenario that estimates has stages");
        prop_assert_eq!(stages.len() as u64, pp);
        let totals: Vec<u64> = stages.iter().map(|s| s.total).collect();
        prop_assert!(totals.contains(&e.total), "stage {} reported; stages {:?}", e.stage.index, totals);
        // without a card nothing runs out: the headline is the largest; on a card a stage that
        // runs out is reported first
        if gpu.is_none() {
            prop_assert_eq!(totals.iter().max(), Some(&e.total), "stage {} reported; stages {:?}", e.stage.index, totals);
        }
    }
}
