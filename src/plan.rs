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
    // a convolutional network: its forward's multiply-accumulates per image stand for the
    // parameters (2·N FLOPs a token is 2·MACs an image); ResNet-50 at 224: 4.1 G
    if let Some(n) = sc.model.net() {
        let ctx = crate::engine::ops::net::NetCtx { batch: 1, elem: 2 };
        return crate::families::build_net(n, ctx, sc.image.unwrap_or(n.image)).macs() as f64;
    }
    match sc.model.transformer().and_then(|t| t.moe.map(|m| (t, m))) {
        Some((t, m)) => {
            let idle = expert_params(t) as f64 * (m.experts - m.top_k.min(m.experts)) as f64
                / m.experts.max(1) as f64;
            total as f64 - idle
        }
        None => total as f64,
    }
}

/// The routed experts' parameters (every sparse layer's, shared experts and routers apart).
fn expert_params(t: &crate::model::TransformerSpec) -> u64 {
    t.param_groups()
        .iter()
        .filter(|g| matches!(g.kind, crate::model::ParamKind::Experts(_)))
        .map(|g| g.rows * g.cols * g.count)
        .sum()
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
        // a rank's experts are 1/ep of them (expert parallelism inside data parallelism)
        let experts = sc.model.transformer().map_or(0, expert_params).min(e.n_params);
        let held = (e.n_params - experts) as f64 + experts as f64 / p.ep.max(1) as f64;
        let grads = (held / (p.tp * p.pp).max(1) as f64) * sc.precision.compute_dtype().bytes(1) as f64;
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
    if p.ep > 1
        && let Some((t, m)) = sc.model.transformer().and_then(|t| t.moe.map(|m| (t, m)))
    {
        // each sparse layer's dispatch and combine all-to-alls of the routed tokens (b·s·k·h),
        // forward, and again backward; on the critical path
        let sparse = t.num_layers - crate::families::dense_and_sparse_layers(t).0;
        let bytes = (sc.batch * sc.seq * m.top_k) as f64 * h * sc.precision.compute_dtype().bytes(1) as f64;
        let per_step_micro = global_batch as f64 / (sc.batch * p.dp.max(1)) as f64;
        let calls = if sc.mode == Mode::Train { 4.0 } else { 2.0 };
        let t =
            calls * sparse as f64 / p.pp.max(1) as f64 * (p.ep - 1) as f64 / p.ep as f64 * bytes / link(p.ep);
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

/// The job a plan covers: the world size and the global batch, checked against the layout.
///
/// `gpus` sets the world size: the data-parallel degree becomes `gpus / (tp · pp · cp)` unless
/// `dp` was given, and then the two must agree. A global batch is `micro-batch × dp ×
/// micro-batches per step`; when given, its micro-batches per step become the scenario's gradient
/// accumulation (pipeline parallelism: its pipeline micro-batches), so the estimate is of the job
/// the plan names. Without one it is what the scenario already runs. Returns the global batch.
pub fn resolve_job(
    sc: &mut Scenario,
    gpus: Option<u64>,
    dp_given: bool,
    global_batch: Option<u64>,
) -> Result<u64, String> {
    let p = &mut sc.parallel;
    let rest = p.tp.saturating_mul(p.pp).saturating_mul(p.cp);
    if let Some(n) = gpus {
        if n == 0 {
            return Err("--gpus must be at least 1".into());
        }
        if !n.is_multiple_of(rest) {
            return Err(format!(
                "--gpus {n} is not a multiple of --tp {} x --pp {} x --cp {} = {rest}",
                p.tp, p.pp, p.cp
            ));
        }
        if dp_given && p.dp.saturating_mul(rest) != n {
            return Err(format!(
                "--gpus {n} does not match --dp {} x --tp {} x --pp {} x --cp {} = {} GPUs (leave out --dp and it is {})",
                p.dp,
                p.tp,
                p.pp,
                p.cp,
                p.dp.saturating_mul(rest),
                n / rest
            ));
        }
        p.dp = n / rest;
    }
    let per_step = sc.micro_batches_per_step();
    let p = &mut sc.parallel;
    let Some(g) = global_batch else { return Ok(sc.batch.saturating_mul(p.dp).saturating_mul(per_step)) };
    if g == 0 {
        return Err("--global-batch must be at least 1".into());
    }
    let replica = p.dp.saturating_mul(sc.batch);
    if !g.is_multiple_of(replica) {
        return Err(format!(
            "--global-batch {g} is not micro-batch {} x dp {} x a whole number of micro-batches per step",
            sc.batch, p.dp
        ));
    }
    let m = g / replica;
    if p.pp > 1 {
        if p.micro_batches != 0 && p.micro_batches != m {
            return Err(format!(
                "--micro-batches {} contradicts --global-batch {g} = micro-batch {} x dp {} x {m} pipeline micro-batches",
                p.micro_batches, sc.batch, p.dp
            ));
        }
        if sc.stack.grad_accum > 1 {
            return Err("with pipeline parallelism the global batch's micro-batches are the pipeline's: leave out --grad-accum".into());
        }
        p.micro_batches = m;
    } else {
        if sc.stack.grad_accum > 1 && u64::from(sc.stack.grad_accum) != m {
            return Err(format!(
                "--grad-accum {} contradicts --global-batch {g} = micro-batch {} x dp {} x {m} accumulation steps",
                sc.stack.grad_accum, sc.batch, p.dp
            ));
        }
        if m > 1 {
            sc.stack.grad_accum = u32::try_from(m).map_err(|_| format!("--global-batch {g} is too large"))?;
        }
        if m > 1 && sc.stack.optimizer_in_backward {
            return Err(format!(
                "--global-batch {g} needs {m} accumulation steps, which --optimizer-in-backward cannot do (each gradient is stepped and freed as it is made)"
            ));
        }
    }
    sc.validate().map_err(|e| e.to_string())?;
    Ok(g)
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
    /// The `vramscope estimate` flags of this row's most loaded rank (after `--model`): they
    /// give `total_bytes`.
    pub estimate_args: Vec<String>,
    /// The row's scenario.
    #[serde(skip)]
    pub scenario: Scenario,
}

fn divisors(n: u64) -> impl Iterator<Item = u64> {
    (1..=n).filter(move |d| n.is_multiple_of(*d))
}

/// Sets a layout's micro-batch and its micro-batches per optimizer step: gradient accumulation,
/// or with pipeline parallelism the pipeline's micro-batches (which accumulate the same way).
fn set_batch(s: &mut Scenario, mb: u64, per_step: u64) {
    s.batch = mb;
    if s.parallel.pp > 1 {
        s.parallel.micro_batches = per_step.max(1);
        s.stack.grad_accum = 0;
    } else {
        s.parallel.micro_batches = 0;
        // 0 and 1 both mean "no accumulation"; 0 is what the command line gives without the flag
        s.stack.grad_accum = if per_step > 1 { u32::try_from(per_step).unwrap_or(u32::MAX) } else { 0 };
    }
}

/// The largest divisor of `n` that is at most `at_most` and that `fits` (searched downwards
/// from the flat estimate's guess, then upwards while the next divisor still fits): the replay
/// decides, the flat estimate only says where to start.
fn largest_fitting_divisor(n: u64, guess: u64, fits: &mut impl FnMut(u64) -> bool) -> Option<u64> {
    let divs: Vec<u64> = divisors(n).collect();
    let start = divs.iter().rposition(|&d| d <= guess.max(1))?;
    if fits(divs[start]) {
        let mut best = divs[start];
        for &d in &divs[start + 1..] {
            if !fits(d) {
                break;
            }
            best = d;
        }
        Some(best)
    } else {
        divs[..start].iter().rev().copied().find(|&d| fits(d))
    }
}

/// Searches layouts of `gpus` GPUs for a global batch: tensor parallelism inside a node (1-8),
/// pipeline stages dividing the blocks, expert parallelism for an MoE model (powers of two
/// dividing the experts and dp), ZeRO 0-3 (0-1 with pipeline parallelism, as DeepSpeed
/// allows), checkpointing none/full and optimizer offload. In every row the micro-batch × the
/// micro-batches per step × dp is the global batch, and the total is [`crate::fit::verdict`]'s —
/// what `vramscope estimate` prints for the row's flags. Returns the plans that fit, fastest first
/// (ties: more headroom first).
pub fn search(sc: &Scenario, gpu: &Gpu, gpus: u64, global_batch: u64, speed: &SpeedModel) -> Vec<Plan> {
    // a convolutional network: data parallelism and ZeRO only, never checkpointed (its HF
    // classes do not support it)
    let conv = sc.model.net().is_some();
    let (heads, layers) = match sc.model.transformer() {
        Some(t) => (t.num_heads, t.num_layers),
        None if conv => (1, 1),
        None => return Vec::new(),
    };
    let ckpts: &[Checkpointing] =
        if conv { &[Checkpointing::None] } else { &[Checkpointing::None, Checkpointing::Full] };
    let node = sc.parallel.node_size();
    // every layout the search considers, in a fixed order (the ranking's tie order)
    let mut layouts = Vec::new();
    for tp in [1u64, 2, 4, 8].into_iter().filter(|&tp| tp <= node && tp <= heads && gpus.is_multiple_of(tp)) {
        for pp in divisors(layers).filter(|&pp| pp <= 64 && gpus.is_multiple_of(tp * pp)) {
            let dp = gpus / (tp * pp);
            if dp == 0 || !global_batch.is_multiple_of(dp) {
                continue;
            }
            for zero in 0..=3u8 {
                // DeepSpeed: "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism"
                if (dp == 1 && zero > 0) || (pp > 1 && zero >= 2) {
                    continue;
                }
                for &ckpt in ckpts {
                    for offload in [Offload::None, Offload::Optimizer] {
                        if offload != Offload::None && zero == 0 {
                            continue;
                        }
                        for ep in sc.model.transformer().map_or(vec![1], |t| expert_degrees(t, dp)) {
                            let mut s = sc.clone();
                            s.parallel =
                                Parallel { dp, tp, pp, zero, offload, ep, micro_batches: 0, ..sc.parallel };
                            s.checkpointing = ckpt;
                            layouts.push(s);
                        }
                    }
                }
            }
        }
    }
    // each layout is a handful of allocator replays: spread them over the cores
    let workers = std::thread::available_parallelism().map_or(1, usize::from).min(layouts.len()).max(1);
    let chunk = layouts.len().div_ceil(workers).max(1);
    let eval = |part: &[Scenario]| -> Vec<Plan> {
        part.iter().filter_map(|s| layout_plan(s, gpu, global_batch, speed)).collect()
    };
    let mut plans: Vec<Plan> = std::thread::scope(|scope| {
        let running: Vec<_> = layouts
            .chunks(chunk)
            .enumerate()
            .map(|(i, part)| {
                let h = std::thread::Builder::new()
                    .name(format!("plan-search-{i}"))
                    .spawn_scoped(scope, move || eval(part));
                (part, h)
            })
            .collect();
        // a worker that could not start (or did not finish) is evaluated here, never dropped
        running
            .into_iter()
            .flat_map(|(part, h)| h.ok().and_then(|h| h.join().ok()).unwrap_or_else(|| eval(part)))
            .collect()
    });
    plans.sort_by(|a, b| {
        a.step.step_s.total_cmp(&b.step.step_s).then(b.headroom_bytes.cmp(&a.headroom_bytes))
    });
    plans
}

/// Expert-parallel degrees the search tries at `dp` data-parallel ranks: 1, and for an MoE model
/// the powers of two up to 64 that divide both the experts and `dp`.
fn expert_degrees(t: &crate::model::TransformerSpec, dp: u64) -> Vec<u64> {
    let experts = t.moe.map_or(1, |m| m.experts);
    (0..=6)
        .map(|i| 1u64 << i)
        .filter(|&ep| ep == 1 || (ep <= dp && dp.is_multiple_of(ep) && experts.is_multiple_of(ep)))
        .collect()
}

/// One layout of the search: the largest micro-batch dividing the replica's batch that the
/// allocator replay fits, with its step time; `None` when no micro-batch fits.
fn layout_plan(s: &Scenario, gpu: &Gpu, global_batch: u64, speed: &SpeedModel) -> Option<Plan> {
    let cap = gpu.capacity();
    let replica = global_batch / s.parallel.dp.max(1);
    let at = |b: u64| {
        let mut x = s.clone();
        set_batch(&mut x, b, replica / b);
        x
    };
    // the flat estimate's largest micro-batch (memory is monotone in the batch)
    let flat_fits = |b: u64| estimate(&at(b)).is_ok_and(|e| e.total <= cap);
    let (mut lo, mut hi) = (0u64, replica + 1);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if flat_fits(mid) { lo = mid } else { hi = mid }
    }
    // the replay decides, among micro-batches that divide the replica's batch
    let mut verdicts = Vec::new();
    let mut fits = |b: u64| {
        let v = crate::fit::verdict(&at(b), cap);
        let ok = v.as_ref().is_ok_and(|v| v.fits);
        verdicts.push((b, v));
        ok
    };
    let mb = largest_fitting_divisor(replica, lo, &mut fits)?;
    let Some(Ok(v)) = verdicts.into_iter().find(|(b, _)| *b == mb).map(|(_, v)| v) else {
        return None;
    };
    let s = at(mb);
    let step = step_time(&s, &v.estimate, gpu, global_batch, speed);
    Some(Plan {
        parallel: s.parallel,
        checkpoint: s.checkpointing.to_string(),
        micro_batch: mb,
        grad_accum: replica / mb,
        total_bytes: v.estimate.total,
        headroom_bytes: v.headroom(),
        step,
        cpu_bytes: v.estimate.cpu_bytes,
        estimate_args: crate::flags::words(&crate::flags::flags(&s, gpu)),
        scenario: s,
    })
}

/// Smallest data-parallel GPU count (a power of two up to 4096, with the scenario's other degrees)
/// whose most loaded rank fits, for a global batch split evenly.
pub fn min_gpus(sc: &Scenario, gpu: &Gpu, global_batch: u64) -> Option<u64> {
    let cap = gpu.capacity();
    (0..=12).map(|i| 1u64 << i).find(|&dp| {
        let mut s = sc.clone();
        s.parallel.dp = dp;
        let replica = (global_batch / dp).max(1);
        let mb = s.batch.max(1).min(replica);
        set_batch(&mut s, mb, replica.div_ceil(mb));
        crate::fit::fits(&s, cap)
    })
}
