//! Scale-out against published figures (`tests/data/published.md`) and the properties sharding
//! must have.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use vramscope::estimate::{
    AttentionImpl, Checkpointing, Estimate, FsdpMode, Mode, Offload, Optimizer, Parallel, Scenario,
    block_saved_bytes, estimate, per_stage,
};
use vramscope::model::preset::builtin;
use vramscope::model::{Architecture, LayerTable, ModelSpec, TableLayer};
use vramscope::units::Precision;

/// `cases` cases; a failing case's seed is kept with the crate's others, in
/// `proptest-regressions/tests/scale.txt` (the lib's unit tests use proptest's default,
/// `proptest-regressions/<path under src>.txt`), and re-run first.
fn config(cases: u32) -> ProptestConfig {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/proptest-regressions/tests/scale.txt");
    ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(file))),
        ..ProptestConfig::with_cases(cases)
    }
}

/// A model known only by its parameter count and its largest layer, for model-state checks.
fn states_only(total: u64, largest: u64) -> ModelSpec {
    let layer = |name: String, params: u64| TableLayer {
        name,
        params,
        saved_elems_per_sample: 0,
        output_elems_per_sample: 0,
        fixed_bytes_per_sample: 0,
    };
    let mut layers = vec![layer("largest".into(), largest)];
    let mut rest = total - largest;
    while rest > 0 {
        let p = rest.min(largest);
        layers.push(layer(format!("layer {}", layers.len()), p));
        rest -= p;
    }
    let n = layers.len() as u64;
    ModelSpec { name: "states".into(), arch: Architecture::Table(LayerTable { layers, param_tensors: n }) }
}

/// Model states alive at the optimizer step (no activations, no overhead).
fn model_states(e: &Estimate) -> f64 {
    let a = e.moments.iter().find(|m| m.what == "optimizer step").expect("optimizer moment").alive;
    (a.parameters + a.gradients + a.optimizer_states + a.temporaries) as f64
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b
}

/// ZeRO paper (Rajbhandari et al. 2020, Fig. 1): Ψ = 7.5 B, K = 12 (mixed-precision Adam),
/// 64 GPUs: 120 / 31.4 / 16.6 / 1.88 GB per GPU for stages 0-3 (GB = 1e9; model states only).
#[test]
fn zero_paper_model_states_per_gpu() {
    let psi = 7_500_000_000u64;
    let mut sc = Scenario::new(states_only(psi, 100_000_000));
    sc.precision = Precision::Bf16Mixed;
    sc.optimizer = Optimizer::AdamwFused;
    sc.seq = 1;
    for (stage, want_gb) in [(0u8, 120.0), (1, 31.4), (2, 16.6), (3, 1.88)] {
        sc.parallel = Parallel { dp: if stage == 0 { 1 } else { 64 }, zero: stage, ..Parallel::default() };
        let e = estimate(&sc).unwrap();
        // 2Ψ half parameters + 2Ψ half gradients + KΨ (fp32 master, momentum, variance)
        let got = (e.parameters + e.gradients + e.optimizer_states) as f64 / 1e9;
        println!("ZeRO-{stage}: {got:.2} GB (paper {want_gb})");
        assert!(rel(got, want_gb) < 0.01, "stage {stage}: {got} GB vs {want_gb}");
    }
}

/// DeepSpeed's `estimate_zero3_model_states_mem_needs_all_live` for T0_3B (2,783 M parameters,
/// largest layer 67.1 M): 1 GPU 46.91 / 5.43 / 0.25 GB (no offload / optimizer / parameters),
/// 2 GPUs 23.58 / 2.84 / 0.25 GB (GB = 2^30). DeepSpeed counts 18 B per parameter (half
/// parameters + fp32 master, moments and gradients) plus 4 B per parameter of the largest layer
/// (gathered); at the optimizer step we also count the half-precision gradient partition that is
/// still allocated next to its fp32 copy, 2 B per parameter more. The offload rows match as they
/// are; the no-offload row must equal DeepSpeed's figure plus that partition.
#[test]
fn deepspeed_zero3_estimator_t0_3b() {
    let mut sc = Scenario::new(states_only(2_783_000_000, 67_108_864));
    sc.precision = Precision::Fp16Mixed;
    sc.optimizer = Optimizer::AdamwFused;
    sc.seq = 1;
    for (gpus, want) in [(1u64, [46.91, 5.43, 0.25]), (2, [23.58, 2.84, 0.25])] {
        for (offload, want_gib) in [Offload::None, Offload::Optimizer, Offload::Params].into_iter().zip(want)
        {
            sc.parallel = Parallel { dp: gpus, zero: 3, offload, ..Parallel::default() };
            let got = model_states(&estimate(&sc).unwrap()) / (1u64 << 30) as f64;
            let half_grads = if offload == Offload::None {
                2.0 * 2_783e6 / gpus as f64 / (1u64 << 30) as f64
            } else {
                0.0
            };
            println!(
                "T0_3B on {gpus} GPU(s), offload {offload:?}: {got:.2} GB (DeepSpeed {want_gib} + half grads {half_grads:.2})"
            );
            assert!(
                rel(got, want_gib + half_grads) < 0.01,
                "{gpus} GPUs {offload:?}: {got} vs {want_gib} + {half_grads}"
            );
        }
    }
}

/// Korthikanti et al. 2022, GPT-3 175B, s 2048, b 1, t 8: bytes per layer without parallelism,
/// with TP, TP+SP, TP+SP+selective recomputation and full recomputation:
/// s·b·h·(34 + 5as/h), s·b·h·(10 + 24/t + 5as/(ht)), s·b·h·(34/t + 5as/(ht)), s·b·h·34/t, 2·s·b·h.
#[test]
fn korthikanti_gpt3_per_layer_activations() {
    let mut sc = Scenario::new(builtin("gpt3-175b-megatron").unwrap());
    sc.seq = 2048;
    sc.batch = 1;
    sc.precision = Precision::Bf16Mixed;
    sc.attention = AttentionImpl::Eager;
    let (s, b, h, a, t) = (2048.0, 1.0, 12288.0, 96.0, 8.0);
    let sbh = s * b * h;
    let per_layer = |tp: u64, sp: bool| {
        let mut x = sc.clone();
        x.parallel = Parallel { tp, sp, ..Parallel::default() };
        block_saved_bytes(&x).unwrap()
    };
    let (none, _, full_ckpt) = per_layer(1, false);
    let (tp, _, _) = per_layer(8, false);
    let (tp_sp, sel, _) = per_layer(8, true);
    let cases = [
        ("no parallelism", none, sbh * (34.0 + 5.0 * a * s / h)),
        ("TP 8", tp, sbh * (10.0 + 24.0 / t + 5.0 * a * s / (h * t))),
        ("TP 8 + SP", tp_sp, sbh * (34.0 / t + 5.0 * a * s / (h * t))),
        ("TP 8 + SP + selective", sel, sbh * 34.0 / t),
        ("full recomputation", full_ckpt, 2.0 * sbh),
    ];
    for (name, got, want) in cases {
        println!("{name:<24} {:>8.1} MB (paper {:>8.1} MB)", got as f64 / 1e6, want / 1e6);
        assert!(rel(got as f64, want) < 0.001, "{name}: {got} vs {want}");
    }
    // and the published rounded figures
    assert!(
        rel(none as f64, 2.87e9) < 0.01 && rel(tp as f64, 579e6) < 0.01 && rel(tp_sp as f64, 359e6) < 0.01
    );
}

/// Per-GPU memory never rises when a sharding degree rises.
fn llama_train() -> Scenario {
    let mut sc = Scenario::new(builtin("llama-2-13b").unwrap());
    sc.seq = 2048;
    sc.batch = 2;
    sc.precision = Precision::Bf16Mixed;
    sc.checkpointing = Checkpointing::Full;
    sc
}

/// The most any pipeline stage holds in parameters, gradients and optimizer states.
fn fullest_stage_states(sc: &Scenario) -> u64 {
    let mut flat = sc.clone();
    flat.overhead.flat_reserve = true; // model states do not depend on the allocator's replay
    per_stage(&flat, None)
        .unwrap()
        .iter()
        .map(|e| e.parameters + e.gradients + e.optimizer_states)
        .max()
        .unwrap()
}

proptest! {
    #![proptest_config(config(120))]

    #[test]
    fn more_sharding_never_costs_more_per_gpu(zero in 1u8..=3, dp in 1u64..=64, tp_exp in 0u32..=3, pp_exp in 0u32..=3, sp: bool) {
        let mut sc = llama_train();
        let tp = 1u64 << tp_exp;
        let pp = 1u64 << pp_exp;
        sc.parallel = Parallel { dp, zero, tp, pp, sp, micro_batches: 8, ..Parallel::default() };
        let base = estimate(&sc).unwrap();
        for bump in 0..4 {
            let mut more = sc.clone();
            match bump {
                0 => more.parallel.dp *= 2,
                1 => more.parallel.zero = (zero + 1).min(3),
                2 => more.parallel.tp = (tp * 2).min(8), // 40 heads: 16 does not divide them
                _ => more.parallel.pp = (pp * 2).min(40),
            }
            let e = estimate(&more).unwrap();
            // the fullest stage's (the stage reported as most loaded can change with the bump:
            // ZeRO-3's gathered blocks make the last stage, with the final norm, the fuller one)
            let (before, after) = (fullest_stage_states(&sc), fullest_stage_states(&more));
            prop_assert!(after <= before, "bump {bump}: model states {before} -> {after}");
            // one GPU gains nothing from ZeRO-3 but pays for the gathered block buffers
            // more pipeline stages can put more micro-batches in flight on the first stage
            if bump != 3 {
                // ZeRO-3 pays for its own working set: the gathered blocks (running and prefetched)
                // and its buckets, which outweigh the parameter shard it saves on few ranks and
                // few layers (dp 2 over a 5-layer pipeline stage); the rest must not grow
                let own = if bump == 1 && zero < 3 {
                    e.peak.alive.parameters.saturating_sub(e.parameters) + e.peak.alive.zero_buckets
                } else {
                    0
                };
                prop_assert!(
                    e.peak_allocated - own <= base.peak_allocated + (64 << 20),
                    "bump {bump}: peak {} -> {} ({own} of ZeRO-3's own)", base.peak_allocated, e.peak_allocated
                );
            }
        }
    }
}

#[test]
fn sharded_states_sum_to_the_unsharded_totals() {
    let mut sc = llama_train();
    let single = estimate(&sc).unwrap();
    for (zero, parts) in [(1u8, 1), (2, 2), (3, 3)] {
        let dp = 16u64;
        sc.parallel = Parallel { dp, zero, ..Parallel::default() };
        let e = estimate(&sc).unwrap();
        let sum = |x: u64| x * dp;
        // optimizer states always sharded from stage 1 on; every rank holds an equal (rounded-up) part
        let opt = sum(e.optimizer_states);
        assert!(
            opt >= single.optimizer_states && opt - single.optimizer_states < dp,
            "stage {zero}: optimizer {opt} vs {}",
            single.optimizer_states
        );
        if parts == 3 {
            let p = sum(e.parameters);
            assert!(p >= single.parameters && p - single.parameters < dp, "stage 3: parameters");
        }
    }
    // tensor parallelism: the linear weights of all ranks add up to the model's
    let t = builtin("llama-2-13b").unwrap();
    let mut sc = Scenario::new(t);
    sc.parallel = Parallel { tp: 8, ..Parallel::default() };
    let rank = estimate(&sc).unwrap();
    let single = estimate(&Scenario { parallel: Parallel::default(), ..sc.clone() }).unwrap();
    // norms are replicated, everything else is split: 8 ranks hold a little more than one model
    let total = rank.parameters * 8;
    assert!(total >= single.parameters && (total as f64) < single.parameters as f64 * 1.001);
}

#[test]
fn pipeline_first_stage_holds_the_most_micro_batches() {
    let mut sc = llama_train();
    sc.checkpointing = Checkpointing::None;
    sc.parallel = Parallel { pp: 4, micro_batches: 8, ..Parallel::default() };
    let e = estimate(&sc).unwrap();
    assert_eq!(e.stage.stages, 4);
    assert!(e.stage.in_flight >= 1.0);
    // interleaving adds (pp-1)/(pp·v) on the first stage
    let mut il = sc.clone();
    il.parallel.virtual_stages = 2;
    let ei = estimate(&il).unwrap();
    assert!(ei.peak_allocated >= e.peak_allocated);
}

#[test]
fn fsdp_modes_and_offload_behave() {
    let mut sc = llama_train();
    sc.parallel = Parallel { dp: 16, fsdp: Some(FsdpMode::FullShard), ..Parallel::default() };
    let full = estimate(&sc).unwrap();
    sc.parallel.fsdp = Some(FsdpMode::ShardGradOp);
    let grad_op = estimate(&sc).unwrap();
    sc.parallel.fsdp = Some(FsdpMode::HybridShard);
    let hybrid = estimate(&sc).unwrap();
    assert!(full.parameters < grad_op.parameters, "full_shard splits parameters");
    assert!(hybrid.optimizer_states > full.optimizer_states, "hybrid shards within a node only");
    sc.parallel = Parallel { dp: 16, zero: 2, offload: Offload::Optimizer, ..Parallel::default() };
    let off = estimate(&sc).unwrap();
    assert_eq!(off.optimizer_states, 0);
    assert!(off.cpu_bytes > 0);
    sc.parallel.offload = Offload::Params;
    let nvme = estimate(&sc).unwrap();
    assert!(nvme.nvme_bytes > 0 && nvme.parameters == 0);
    sc.mode = Mode::Infer;
    assert!(estimate(&sc).is_ok());
}

#[test]
fn search_finds_fitting_plans_fast() {
    use vramscope::plan::{SpeedModel, search};
    let mut sc = Scenario::new(builtin("llama-2-70b").unwrap());
    sc.seq = 4096;
    sc.precision = Precision::Bf16Mixed;
    let gpu = vramscope::gpu::find("h100-80gb").unwrap();
    let t0 = std::time::Instant::now();
    let plans = search(&sc, &gpu, 64, 512, &SpeedModel::default());
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    println!("search: {} plans in {ms:.1} ms (debug build)", plans.len());
    assert!(!plans.is_empty());
    assert!(plans.iter().all(|p| p.headroom_bytes >= 0 && p.parallel.world() == 64));
    assert!(plans.windows(2).all(|w| w[0].step.step_s <= w[1].step.step_s));
}

#[test]
fn nvlink_beats_pcie_at_eight_gpus() {
    use vramscope::plan::{SpeedModel, comm_aware_speedup, rule_of_thumb_speedup};
    let mut sc = Scenario::new(builtin("llama-3.1-8b").unwrap());
    sc.seq = 2048;
    sc.checkpointing = Checkpointing::Full;
    sc.parallel = Parallel { zero: 2, ..Parallel::default() };
    let speed = SpeedModel::default();
    // one sequence per GPU per step: little compute to hide the gradient exchange behind
    let nvlink = comm_aware_speedup(&sc, &vramscope::gpu::find("h100-80gb").unwrap(), 8, 8, &speed).unwrap();
    let pcie = comm_aware_speedup(&sc, &vramscope::gpu::find("h100-pcie").unwrap(), 8, 8, &speed).unwrap();
    println!("8 GPUs: NVLink {nvlink:.2}x, PCIe {pcie:.2}x, rule of thumb {:.2}x", rule_of_thumb_speedup(8));
    assert!(nvlink > pcie && nvlink <= 8.0 + 1e-9 && pcie >= 1.0);
    assert!((rule_of_thumb_speedup(8) - 8.0 / 4.5).abs() < 1e-12);
}

#[test]
fn pipeline_inference_splits_weights_and_kv_cache() {
    let mut sc = Scenario::new(builtin("llama-2-70b").unwrap());
    sc.mode = Mode::Infer;
    sc.seq = 4096;
    let one = estimate(&sc).unwrap();
    sc.parallel = Parallel { pp: 4, ..Parallel::default() };
    let four = estimate(&sc).unwrap();
    assert_eq!(four.kv_cache * 4, one.kv_cache, "80 blocks over 4 stages");
    let ratio = four.parameters as f64 / one.parameters as f64;
    assert!(ratio > 0.24 && ratio < 0.27, "each stage holds about a quarter of the weights: {ratio}");
}

/// Expert parallelism lives inside the data-parallel group: ZeRO shards a rank's experts over
/// the dp/ep ranks that hold the same experts, not over all dp ranks (it double-counted the
/// division: 8 × too small per GPU at ep 8 × dp 8, ZeRO-3).
#[test]
fn experts_are_sharded_over_the_expert_data_parallel_group() {
    let model = builtin("qwen3-30b-a3b").unwrap();
    let states = |dp: u64, ep: u64| {
        let mut sc = Scenario::new(model.clone());
        sc.precision = Precision::Bf16Mixed;
        sc.parallel = Parallel { dp, ep, zero: 3, ..Parallel::default() };
        let e = estimate(&sc).unwrap();
        e.parameters + e.gradients + e.optimizer_states
    };
    let (zero_only, ep_in_dp, ep_small) = (states(8, 1), states(8, 8), states(64, 8));
    // ep 8 inside dp 8: every rank holds 1/8 of the experts whole, as ZeRO-3 over 8 holds 1/8 of all
    let r = ep_in_dp as f64 / zero_only as f64;
    assert!((0.99..1.01).contains(&r), "ep 8 x dp 8 vs ZeRO-3 over 8: {r}");
    // dp 64 with ep 8: the experts' share is sharded over 8 more ranks
    let r = ep_small as f64 / ep_in_dp as f64;
    assert!((0.12..0.14).contains(&r), "dp 64 vs dp 8 at ep 8: {r}");
    // and ep must divide dp and the experts
    let mut sc = Scenario::new(model.clone());
    sc.parallel = Parallel { dp: 1, ep: 4, ..Parallel::default() };
    assert!(estimate(&sc).unwrap_err().to_string().contains("--dp"));
    sc.parallel = Parallel { dp: 6, ep: 6, ..Parallel::default() };
    assert!(estimate(&sc).unwrap_err().to_string().contains("does not divide the 128 experts"));
}
