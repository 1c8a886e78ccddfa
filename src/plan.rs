//! Multi-GPU planning: step-time and speed-up estimates, the smallest GPU count for a global batch,
//! and a search over parallel layouts ranked by step time and memory headroom.

use crate::estimate::{Checkpointing, Estimate, Mode, Offload, Parallel, Scenario, estimate};
use crate::gpu::Gpu;
use serde::Serialize;

/// Links and efficiency assumed by the speed model (documented defaults, overridable).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SpeedModel {
    /// Fraction of the GPU's dense bf16 peak the math reaches (model FLOPs utilisation).
    pub mfu: f64,
    /// Per-GPU bandwidth between nodes, GB/s (one 400 Gb/s NIC per GPU ≈ 50 GB/s).
    pub inter_node_gbs: f64,
    /// Fraction of the backward pass gradient communication can hide behind (DDP/ZeRO overlap
    /// all-reduce / reduce-scatter with backward compute).
    pub overlap: f64,
}

impl Default for SpeedModel {
    fn default() -> Self {
        Self { mfu: 0.4, inter_node_gbs: 50.0, overlap: 0.8 }
    }
}

/// Time of one optimizer step (one global batch) on the whole job.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct StepTime {
    /// Math time per GPU, seconds.
    pub compute_s: f64,
    /// Pipeline bubble, seconds.
    pub bubble_s: f64,
    /// Communication that is not hidden, seconds.
    pub exposed_comm_s: f64,
    /// Total, seconds.
    pub step_s: f64,
    /// Tokens per second over the job.
    pub tokens_per_s: f64,
}

/// Parameters whose FLOPs a token pays (MoE: only the routed experts).
pub fn active_params(sc: &Scenario, total: u64) -> f64 {
    match sc.model.transformer().and_then(|t| t.moe.map(|m| (t, m))) {
        Some((t, m)) => {
            let expert = 3 * t.hidden_size * t.intermediate_size * t.num_layers;
            total as f64 - (expert * (m.experts - m.top_k)) as f64
        }
        None => total as f64,
    }
}

/// Step time of `global_batch` sequences with the scenario's parallel layout on `gpu`s.
pub fn step_time(sc: &Scenario, e: &Estimate, gpu: &Gpu, global_batch: u64, speed: &SpeedModel) -> StepTime {
    let p = &sc.parallel;
    let world = p.world().max(1) as f64;
    let tokens = (global_batch * sc.seq) as f64;
    let n = active_params(sc, e.n_params);
    // 6·N per token for training (2 forward + 4 backward), + 2·N when blocks are recomputed;
    // attention adds 12·L·s·h per token (6 for inference passes: ×1/3)
    let (layers, h) =
        sc.model.transformer().map_or((0.0, 0.0), |t| (t.num_layers as f64, t.hidden_size as f64));
    let recompute = match sc.checkpointing {
        Checkpointing::None => 0.0,
        Checkpointing::Selective => 0.1,
        _ => 1.0,
    };
    let per_token = match sc.mode {
        Mode::Train => (6.0 + 2.0 * recompute) * n + 12.0 * layers * sc.seq as f64 * h,
        Mode::Infer => 2.0 * n + 4.0 * layers * sc.seq as f64 * h,
    };
    let flops_per_gpu = per_token * tokens / world;
    let peak = gpu.bf16_dense_tflops.max(1) as f64 * 1e12;
    let compute_s = flops_per_gpu / (peak * speed.mfu.clamp(0.01, 1.0));
    let link = |group: u64| {
        if group * p.tp.max(1) <= p.node_size() {
            (gpu.link_gbs.max(1) as f64 / 2.0) * 1e9 // one direction
        } else {
            speed.inter_node_gbs * 1e9
        }
    };
    let mut comm = 0.0;
    let mut exposed = 0.0;
    if sc.mode == Mode::Train && p.dp > 1 {
        // ring all-reduce (ZeRO-0/1/2: reduce-scatter + all-gather of the same volume) of this
        // rank's unsharded gradients; ZeRO-3 / FSDP also all-gathers parameters twice
        let grads =
            (e.n_params as f64 / (p.tp * p.pp).max(1) as f64) * sc.precision.compute_dtype().bytes(1) as f64;
        let ring = 2.0 * (p.dp - 1) as f64 / p.dp as f64;
        let volume = grads * ring * if p.effective_zero() >= 3 { 1.5 } else { 1.0 };
        let t = volume / link(p.dp);
        comm += t;
        // overlapped with the backward pass (two thirds of the math)
        exposed += (t - speed.overlap * compute_s * 2.0 / 3.0).max(0.0);
    }
    if p.tp > 1 {
        // two all-reduces (or all-gather + reduce-scatter with SP) of b·s·h per block forward, two
        // backward; on the critical path
        let bytes = (sc.batch * sc.seq) as f64 * h * sc.precision.compute_dtype().bytes(1) as f64;
        let per_step_micro = global_batch as f64 / (sc.batch * p.dp.max(1)) as f64;
        let calls = if sc.mode == Mode::Train { 4.0 } else { 2.0 };
        let t = calls * layers / p.pp.max(1) as f64 * 2.0 * (p.tp - 1) as f64 / p.tp as f64 * bytes / link(1);
        comm += t * per_step_micro;
        exposed += t * per_step_micro;
    }
    let _ = comm;
    if sc.mode == Mode::Train && p.offload != Offload::None {
        // ZeRO-Offload: the step runs on the CPU over this rank's partition (~16 B of state per
        // parameter read and written at ~50 GB/s host bandwidth), and gradients go down and
        // parameters come back over PCIe (~25 GB/s)
        let part = e.trainable_params as f64 / (p.tp * p.pp * p.shard_degree()).max(1) as f64;
        exposed += part * 16.0 / 50e9 + part * 4.0 / 25e9;
    }
    let bubble_s = if p.pp > 1 {
        let m = (global_batch / (sc.batch * p.dp.max(1))).max(1) as f64;
        compute_s * (p.pp - 1) as f64 / (m * p.virtual_stages.max(1) as f64)
    } else {
        0.0
    };
    let step_s = compute_s + bubble_s + exposed;
    StepTime {
        compute_s,
        bubble_s,
        exposed_comm_s: exposed,
        step_s,
        tokens_per_s: tokens / step_s.max(1e-12),
    }
}

/// The rule of thumb for data-parallel speed-up: `n / (1 + 0.5 (n - 1))`.
pub fn rule_of_thumb_speedup(n: u64) -> f64 {
    let n = n.max(1) as f64;
    n / (1.0 + 0.5 * (n - 1.0))
}

/// Communication-aware data-parallel speed-up on `n` GPUs: one GPU's step time over n GPUs' for
/// the same global batch.
pub fn comm_aware_speedup(
    sc: &Scenario,
    gpu: &Gpu,
    n: u64,
    global_batch: u64,
    speed: &SpeedModel,
) -> Option<f64> {
    let mut one = sc.clone();
    one.parallel = Parallel { dp: 1, ..sc.parallel };
    let mut many = sc.clone();
    many.parallel = Parallel { dp: n.max(1), ..sc.parallel };
    let e1 = estimate(&one).ok()?;
    let en = estimate(&many).ok()?;
    let t1 = step_time(&one, &e1, gpu, global_batch, speed).step_s;
    let tn = step_time(&many, &en, gpu, global_batch, speed).step_s;
    Some(t1 / tn)
}

/// One feasible (or not) layout found by the search.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// The layout.
    pub parallel: Parallel,
    /// Checkpointing.
    pub checkpoint: String,
    /// Micro-batch per GPU chosen (the largest that fits, up to what the global batch allows).
    pub micro_batch: u64,
    /// Gradient-accumulation steps to reach the global batch.
    pub grad_accum: u64,
    /// Per-GPU total of the most loaded rank, bytes.
    pub total_bytes: u64,
    /// Capacity minus total, bytes (negative: does not fit).
    pub headroom_bytes: i64,
    /// Estimated step time.
    pub step: StepTime,
    /// Host memory per rank for offloaded states.
    pub cpu_bytes: u64,
}

fn divisors(n: u64) -> impl Iterator<Item = u64> {
    (1..=n).filter(move |d| n.is_multiple_of(*d))
}

/// Gradient accumulation steps of a layout: micro-batches per optimizer step on a data-parallel
/// rank (a pipeline's micro-batches are its own schedule, not accumulation).
fn accum(pp: u64, micro_batches: u64) -> u32 {
    if pp > 1 { 1 } else { u32::try_from(micro_batches.max(1)).unwrap_or(u32::MAX) }
}

/// Searches layouts of `gpus` GPUs for a global batch: tensor parallelism inside a node (1-8),
/// pipeline stages dividing the blocks, ZeRO 0-3, checkpointing none/full and optimizer offload.
/// Returns the plans that fit, fastest first (ties: more headroom first).
pub fn search(sc: &Scenario, gpu: &Gpu, gpus: u64, global_batch: u64, speed: &SpeedModel) -> Vec<Plan> {
    let Some(t) = sc.model.transformer() else { return Vec::new() };
    let cap = gpu.memory_bytes();
    let node = sc.parallel.node_size();
    let mut plans = Vec::new();
    for tp in
        [1u64, 2, 4, 8].into_iter().filter(|&tp| tp <= node && tp <= t.num_heads && gpus.is_multiple_of(tp))
    {
        for pp in divisors(t.num_layers).filter(|&pp| pp <= 64 && gpus.is_multiple_of(tp * pp)) {
            let dp = gpus / (tp * pp);
            if dp == 0 || !global_batch.is_multiple_of(dp) {
                continue;
            }
            for zero in 0..=3u8 {
                if dp == 1 && zero > 0 {
                    continue;
                }
                for ckpt in [Checkpointing::None, Checkpointing::Full] {
                    for offload in [Offload::None, Offload::Optimizer] {
                        if offload != Offload::None && zero == 0 {
                            continue;
                        }
                        let mut s = sc.clone();
                        s.parallel = Parallel { dp, tp, pp, zero, offload, micro_batches: 0, ..sc.parallel };
                        s.checkpointing = ckpt;
                        let max_mb = global_batch / dp;
                        // largest micro-batch that fits (memory is monotone in the batch)
                        let fits = |b: u64| {
                            let mut x = s.clone();
                            x.batch = b;
                            x.parallel.micro_batches = (max_mb / b).max(1);
                            x.stack.grad_accum = accum(pp, max_mb / b);
                            estimate(&x).ok().filter(|e| e.total <= cap)
                        };
                        let (mut lo, mut hi) = (0u64, max_mb + 1);
                        while hi - lo > 1 {
                            let mid = lo + (hi - lo) / 2;
                            if fits(mid).is_some() { lo = mid } else { hi = mid }
                        }
                        if lo == 0 {
                            continue;
                        }
                        // a micro-batch that divides the per-replica batch
                        let mb = (1..=lo).rev().find(|b| max_mb.is_multiple_of(*b)).unwrap_or(1);
                        s.batch = mb;
                        s.parallel.micro_batches = max_mb / mb;
                        s.stack.grad_accum = accum(pp, max_mb / mb);
                        let Ok(e) = estimate(&s) else { continue };
                        let step = step_time(&s, &e, gpu, global_batch, speed);
                        plans.push(Plan {
                            parallel: s.parallel,
                            checkpoint: ckpt.to_string(),
                            micro_batch: mb,
                            grad_accum: u64::from(s.stack.grad_accum.max(1)),
                            total_bytes: e.total,
                            headroom_bytes: cap as i64 - e.total as i64,
                            step,
                            cpu_bytes: e.cpu_bytes,
                        });
                    }
                }
            }
        }
    }
    plans.sort_by(|a, b| {
        a.step.step_s.total_cmp(&b.step.step_s).then(b.headroom_bytes.cmp(&a.headroom_bytes))
    });
    plans
}

/// Smallest data-parallel GPU count (a power of two up to 4096, with the scenario's other degrees)
/// whose most loaded rank fits, for a global batch split evenly.
pub fn min_gpus(sc: &Scenario, gpu: &Gpu, global_batch: u64) -> Option<u64> {
    let cap = gpu.memory_bytes();
    (0..=12).map(|i| 1u64 << i).find(|&dp| {
        let mut s = sc.clone();
        s.parallel.dp = dp;
        s.batch = (global_batch / dp).max(1).min(s.batch.max(1));
        estimate(&s).is_ok_and(|e| e.total <= cap)
    })
}
