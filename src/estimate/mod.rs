//! The estimator: per-GPU bytes of one training step or inference pass, and the peak.
//!
//! [`estimate`] is pure and allocation-free apart from the returned struct, so the GUI can call it
//! every frame and sweeps can call it thousands of times.

pub mod activations;
pub mod context;
pub mod fsdp;
pub mod generate;
pub mod moments;
pub mod parallel;
pub mod rank;
pub mod reserved;
pub use crate::engine::inputs::saved;
pub mod scenario;
pub mod stack;
pub mod states;
pub mod step;

pub use moments::moment_in;
pub use rank::{Stage, shard_spec, stage_of_rank};
use rank::{stage_groups, stages_of};
pub use saved::{Cat, Saved};
pub use scenario::{
    AttentionImpl, BaseQuant, Checkpointing, FsdpMode, Lora, Mode, Offload, Optimizer, Overhead, Parallel,
    Scenario, ScenarioError, Targets,
};
pub use stack::{
    AdapterDtype, Bnb, Framework, FsdpImpl, Loss, ModelCode, Stack, Torch, bnb_release_before_0_43,
};

use crate::model::{Architecture, LayerTable};
use activations::ActivationModel;
use serde::Serialize;
use states::States;

/// Where in the step the peak happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Forward pass (inference, or the end of the training forward).
    Forward,
    /// Backward pass.
    Backward,
    /// Optimizer step.
    OptimizerStep,
}

impl Phase {
    /// Name for display.
    pub const fn label(self) -> &'static str {
        match self {
            Self::Forward => "forward",
            Self::Backward => "backward",
            Self::OptimizerStep => "optimizer step",
        }
    }

    /// [`Self::label`] in `lang`.
    pub const fn label_in(self, lang: crate::i18n::Lang) -> &'static str {
        match (lang, self) {
            (crate::i18n::Lang::En, _) => self.label(),
            (crate::i18n::Lang::ZhCn, Self::Forward) => "前向",
            (crate::i18n::Lang::ZhCn, Self::Backward) => "反向",
            (crate::i18n::Lang::ZhCn, Self::OptimizerStep) => "优化器更新步",
        }
    }
}

/// What is alive at one moment of the step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Snapshot {
    /// Parameters (allocator-rounded).
    pub parameters: u64,
    /// Gradients alive at that moment.
    pub gradients: u64,
    /// Optimizer states.
    pub optimizer_states: u64,
    /// Saved activations alive at that moment (including recomputed ones).
    pub activations: u64,
    /// KV cache.
    pub kv_cache: u64,
    /// Short-lived tensors of the op running at that moment.
    pub temporaries: u64,
}

impl Snapshot {
    /// Sum of the parts.
    pub fn total(&self) -> u64 {
        self.parameters
            + self.gradients
            + self.optimizer_states
            + self.activations
            + self.kv_cache
            + self.temporaries
    }
}

/// One candidate moment for the peak.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Moment {
    /// Phase of the step.
    pub phase: Phase,
    /// What runs then.
    pub what: &'static str,
    /// The block, when the moment is one block's (its index on the rank's pipeline stage).
    pub block: Option<u64>,
    /// What is alive.
    pub alive: Snapshot,
}

impl Moment {
    /// "optimizer step", "backward: block 3 MLP backward": where in the step this moment is.
    pub fn describe(&self) -> String {
        let what = match self.block {
            Some(b) => format!("block {b} {}", self.what),
            None => self.what.to_owned(),
        };
        if what == self.phase.label() { what } else { format!("{}: {what}", self.phase.label()) }
    }

    /// [`Self::describe`] in `lang` ("反向：第 3 块 MLP 反向"); English is [`Self::describe`].
    pub fn describe_in(&self, lang: crate::i18n::Lang) -> String {
        if lang == crate::i18n::Lang::En {
            return self.describe();
        }
        let what = match self.block {
            Some(b) => moments::in_block(b, &moments::moment_in(self.what, lang), lang),
            None => moments::moment_in(self.what, lang).into_owned(),
        };
        let phase = self.phase.label_in(lang);
        if what == phase { what } else { format!("{phase}：{what}") }
    }
}

/// The result of an estimate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// Distinct parameters of the model.
    pub n_params: u64,
    /// Parameters this rank holds: its pipeline stage's blocks (with the embeddings on the first
    /// and the head on the last), its tensor- and expert-parallel slice; before ZeRO / FSDP
    /// sharding, which `parameters` reflects. Equal to `n_params` on an unsplit model.
    pub rank_params: u64,
    /// Parameters of this rank that train (of `rank_params`, before ZeRO / FSDP sharding).
    pub trainable_params: u64,
    /// Parameter bytes (exact).
    pub parameters: u64,
    /// Gradient bytes after backward (exact).
    pub gradients: u64,
    /// Optimizer-state bytes (exact).
    pub optimizer_states: u64,
    /// Bytes saved for backward at the end of the forward pass (0 for inference).
    pub activations: u64,
    /// Saved bytes by category.
    pub activation_breakdown: Saved,
    /// KV-cache bytes (inference).
    pub kv_cache: u64,
    /// `torch.cuda.max_memory_allocated()` over a steady-state step.
    pub peak_allocated: u64,
    /// The moment of the peak.
    pub peak: Moment,
    /// The named candidate moments (and the peak when it is a block's).
    pub moments: Vec<Moment>,
    /// The largest allocated bytes of each phase of the step.
    pub phase_peaks: step::PhasePeaks,
    /// CUDA context, workspaces and allocator reserve.
    pub overhead: u64,
    /// `torch.cuda.max_memory_reserved()` from the caching-allocator replay (set by
    /// [`estimate_reserved`]; `None` from [`estimate`], whose overhead uses the flat reserve fraction).
    pub reserved: Option<u64>,
    /// Optimizer states in CUDA unified memory (paged optimizers): outside `peak_allocated` and
    /// `total`; nvidia-smi adds the part that is resident, up to the card, and the driver pages
    /// the rest to host memory, so they never stop a step from fitting.
    pub paged_optimizer_states: u64,
    /// `peak_allocated + overhead`: what the step needs on the card, and what nvidia-smi shows
    /// (plus resident paged optimizer states).
    pub total: u64,
    /// The pipeline stage this (most loaded) rank runs.
    pub stage: Stage,
    /// Host memory the offloaded states need on this rank's node share.
    pub cpu_bytes: u64,
    /// NVMe space the offloaded states need per rank.
    pub nvme_bytes: u64,
    /// HF `generate`'s terms (inference with `new_tokens`); `None` for a scoring forward.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generate: Option<generate::Terms>,
}

/// What backward recomputes under checkpointing.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Recompute {
    /// Blocks run under checkpointing.
    checkpointed_blocks: u64,
    /// Bytes recomputed while the last block runs backward (it is checkpointed).
    at_last_block: u64,
    /// For a checkpointed block further down: (bytes of stored blocks already freed by then,
    /// bytes recomputed).
    earlier: Option<(u64, u64)>,
    /// The first checkpointed segment, recomputed last, when almost every gradient exists:
    /// (blocks in it, bytes recomputed).
    first: Option<(u64, u64)>,
}

/// The saves of blocks `from..to` (block 0 is `first_layer`); blocks of different kinds (sliding
/// or global attention, dense or MoE) are summed one by one.
fn blocks_saved(sc: &Scenario, am: &ActivationModel, from: u64, to: u64, selective: bool) -> Saved {
    let mut s = Saved::default();
    if to <= from {
        return s;
    }
    let base = if selective { am.selective_layer } else { am.full_layer };
    match sc.model.transformer().filter(|_| am.mix.n > 1) {
        None => {
            let mut n = to - from;
            if from == 0 && !selective {
                s.add_all(&am.first_layer);
                n -= 1;
            }
            s.add_all(&base.times(n));
        }
        Some(t) => {
            for i in from..to {
                if i == 0 && !selective {
                    s.add_all(&am.first_layer);
                } else {
                    let f = crate::engine::walk::layer_flags(t, i);
                    s.add_all(&am.mix.of(f, base, selective));
                }
            }
        }
    }
    s
}

/// Saved bytes of all blocks under a checkpointing choice, and what backward recomputes.
fn compose_layers(sc: &Scenario, am: &ActivationModel, layers: u64) -> (Saved, Recompute) {
    let mut s = Saved::default();
    let none = Recompute::default();
    if layers == 0 {
        return (s, none);
    }
    let full = am.full_layer;
    let ckpt_input = |s: &mut Saved, n: u64| {
        s.add(
            Cat::CheckpointInputs,
            n * am.layer_input_bytes + if n > 0 { am.shared_checkpoint_bytes } else { 0 },
        )
    };
    let largest = if am.mix.n > 1 {
        am.mix.full[..am.mix.n.min(4)].iter().map(Saved::total).max().unwrap_or(0).max(full.total())
    } else {
        full.total()
    };
    let train = sc.mode == Mode::Train;
    match if train { sc.checkpointing } else { Checkpointing::None } {
        Checkpointing::None => {
            s.add_all(&blocks_saved(sc, am, 0, layers, false));
            s.add(Cat::Embeddings, am.shared_layer_bytes);
            (s, none)
        }
        Checkpointing::Full => {
            ckpt_input(&mut s, layers);
            (
                s,
                Recompute {
                    checkpointed_blocks: layers,
                    at_last_block: full.total(),
                    earlier: None,
                    first: Some((1, am.first_layer.total())),
                },
            )
        }
        Checkpointing::Every(k) => {
            let k = k.max(1);
            let n_ckpt = layers.div_ceil(k);
            ckpt_input(&mut s, n_ckpt);
            // checkpointed blocks are 0, K, 2K, …; the others keep their activations
            let mut stored = Saved::default();
            let mut i = 0;
            while i < layers {
                stored.add_all(&blocks_saved(sc, am, i + 1, (i + k).min(layers), false));
                i += k;
            }
            s.add_all(&stored);
            if layers > n_ckpt {
                s.add(Cat::Embeddings, am.shared_layer_bytes);
            }
            // the last checkpointed block is j
            let j = (layers - 1) / k * k;
            let stored_after = layers - 1 - j;
            if stored_after == 0 {
                (
                    s,
                    Recompute {
                        checkpointed_blocks: n_ckpt,
                        at_last_block: full.total(),
                        earlier: None,
                        first: Some((1, am.first_layer.total())),
                    },
                )
            } else {
                let after = blocks_saved(sc, am, j + 1, layers, false).total();
                (
                    s,
                    Recompute {
                        checkpointed_blocks: n_ckpt,
                        at_last_block: 0,
                        earlier: Some((after, largest)),
                        first: Some((1, am.first_layer.total())),
                    },
                )
            }
        }
        Checkpointing::Segments(n) => {
            let n = n.clamp(1, layers);
            if n == 1 {
                s.add_all(&blocks_saved(sc, am, 0, layers, false));
                s.add(Cat::Embeddings, am.shared_layer_bytes);
                return (s, none);
            }
            // checkpoint_sequential: N-1 segments of floor(L/N) blocks are checkpointed, the last
            // segment (the rest) keeps its activations; backward frees the last segment, then
            // recomputes one checkpointed segment at a time
            let seg = layers / n;
            let start = (n - 1) * seg;
            ckpt_input(&mut s, n - 1);
            let last = blocks_saved(sc, am, start, layers, false);
            s.add_all(&last);
            s.add(Cat::Embeddings, am.shared_layer_bytes);
            let recomputed = if am.mix.n > 1 {
                blocks_saved(sc, am, start - seg, start, false).total()
            } else {
                seg * full.total()
            };
            (
                s,
                Recompute {
                    checkpointed_blocks: start,
                    at_last_block: 0,
                    earlier: Some((last.total(), recomputed)),
                    first: Some((seg, blocks_saved(sc, am, 0, seg, false).total())),
                },
            )
        }
        Checkpointing::Selective => {
            // the first block differs from the others only by its input; drop the same
            // recomputed attention terms from it
            let mut first = am.first_layer;
            for (f, (a, b)) in first.0.iter_mut().zip(full.0.iter().zip(am.selective_layer.0.iter())) {
                *f = f.saturating_sub(a.saturating_sub(*b));
            }
            s.add_all(&first);
            s.add_all(&blocks_saved(sc, am, 1, layers, true));
            s.add(Cat::Embeddings, am.shared_layer_bytes);
            (s, none)
        }
    }
}

fn table_model(sc: &Scenario, t: &LayerTable) -> (ActivationModel, u64) {
    let c = sc.precision.compute_dtype().bytes(1);
    let b = sc.batch;
    let mut top = Saved::default();
    let mut largest_out = 0;
    for l in &t.layers {
        top.add(Cat::Mlp, b * l.saved_elems_per_sample * c);
        top.add(Cat::DropoutMasks, b * l.fixed_bytes_per_sample);
        largest_out = largest_out.max(l.output_elems_per_sample);
    }
    let burst = 2 * b * largest_out * c;
    let am = ActivationModel {
        top,
        top_input: Saved::default(),
        mlp_backward_transient: burst,
        loss_backward_transient: burst,
        infer_layer_peak: burst,
        infer_head_peak: burst,
        ..ActivationModel::default()
    };
    (am, 0)
}

/// Bytes one transformer block keeps for backward on one tensor-parallel rank: (everything,
/// with the attention core recomputed (selective), a checkpointed block's input).
pub fn block_saved_bytes(sc: &Scenario) -> Option<(u64, u64, u64)> {
    let t = sc.model.transformer()?;
    // the selective variant is walked only when asked for
    let sel = Scenario { checkpointing: Checkpointing::Selective, ..sc.clone() };
    let am = activations::transformer(&sel, &shard_spec(t, &sc.parallel));
    Some((am.full_layer.total(), am.selective_layer.total(), am.layer_input_bytes))
}

/// One kind of block and what each of its ops keeps for backward on one tensor-parallel rank.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BlockOps {
    /// Layers of this kind (sliding-window / global attention, dense / MoE, rotary or not).
    pub layers: u64,
    /// The kind's layer flags ([`crate::model::layer`] bits).
    pub flags: u8,
    /// Ops in forward order with the bytes each keeps that no earlier op kept.
    pub ops: Vec<crate::engine::ops::OpRecord>,
}

/// "Which op keeps what": the op table of every kind of block of a transformer scenario (the same
/// walk the estimate composes; empty for a layer table).
pub fn block_ops(sc: &Scenario) -> Vec<BlockOps> {
    let Some(t) = sc.model.transformer() else { return Vec::new() };
    let spec = shard_spec(t, &sc.parallel);
    let ctx = activations::Ctx::new(sc);
    let mut out: Vec<BlockOps> = Vec::new();
    for i in 0..spec.num_layers {
        let f = crate::engine::walk::layer_flags(&spec, i);
        match out.iter_mut().find(|b| b.flags == f) {
            Some(b) => b.layers += 1,
            None => out.push(BlockOps {
                layers: 1,
                flags: f,
                ops: crate::engine::walk::block_ops(&ctx, &spec, f),
            }),
        }
    }
    out
}

/// Estimates the per-GPU memory of a validated scenario: for the most loaded rank when the job is
/// split (tensor ranks are alike; pipeline stages differ, so each kind of stage is evaluated).
pub fn estimate(sc: &Scenario) -> Result<Estimate, ScenarioError> {
    sc.validate()?;
    let layers = sc.model.transformer().map_or(0, |t| t.num_layers);
    let mut worst: Option<Estimate> = None;
    for stage in stages_of(sc, layers) {
        let e = estimate_rank(sc, &stage, None);
        if worst.as_ref().is_none_or(|w| e.total > w.total) {
            worst = Some(e);
        }
    }
    worst.ok_or_else(|| ScenarioError::Invalid("no pipeline stage to estimate".into()))
}

/// The predicted memory of one steady-state step, event by event, on the rank [`estimate`]
/// reports (the most loaded pipeline stage by the flat reserve): its maximum is that estimate's
/// `peak_allocated`. [`replayed`] picks the stage by its replayed total instead.
pub fn timeline(sc: &Scenario) -> Result<step::Timeline, ScenarioError> {
    sc.validate()?;
    let layers = sc.model.transformer().map_or(0, |t| t.num_layers);
    let mut worst: Option<(Stage, u64)> = None;
    for stage in stages_of(sc, layers) {
        let e = estimate_rank(sc, &stage, None);
        if worst.as_ref().is_none_or(|w| e.total > w.1) {
            worst = Some((stage, e.total));
        }
    }
    let (stage, _) = worst.ok_or_else(|| ScenarioError::Invalid("no pipeline stage to estimate".into()))?;
    Ok(stage_timeline(sc, &stage))
}

/// The timeline of one stage's rank.
fn stage_timeline(sc: &Scenario, stage: &Stage) -> step::Timeline {
    let mut all = step::All::default();
    let estimate = estimate_rank(sc, stage, Some(&mut all));
    let mut tl = step::Timeline::new(all.0, estimate);
    tl.persistent_gradients = all.1;
    tl
}

/// The estimate with the caching allocator replayed over its step ([`reserved::replay`]):
/// `reserved` is the predicted `max_memory_reserved`, and `overhead` / `total` use it instead of
/// the flat reserve fraction. `capacity`: the card's memory, when known (the allocator releases
/// its cache and retries before it runs out, as PyTorch does).
pub fn estimate_reserved(
    sc: &Scenario,
    capacity: Option<u64>,
) -> Result<(Estimate, reserved::Reserved), ScenarioError> {
    replayed(sc, capacity).map(|(tl, r)| (tl.estimate, r))
}

/// [`timeline`] with the caching allocator replayed over it: the timeline's estimate is
/// [`estimate_reserved`]'s, and the replay's `per_event` is aligned with its events.
pub fn replayed(
    sc: &Scenario,
    capacity: Option<u64>,
) -> Result<(step::Timeline, reserved::Reserved), ScenarioError> {
    sc.validate()?;
    let layers = sc.model.transformer().map_or(0, |t| t.num_layers);
    // the most loaded stage: one whose replay runs out of the card (the job then does not fit),
    // else the largest replayed total (the allocator's cache differs between stages), so that
    // the headline is the largest of `per_stage`'s figures on a card the job fits
    let key = |r: &(step::Timeline, reserved::Reserved)| (r.1.ooms > 0, r.0.estimate.total);
    let mut worst: Option<(step::Timeline, reserved::Reserved)> = None;
    for stage in stages_of(sc, layers) {
        let r = replay_timeline(sc, stage_timeline(sc, &stage), capacity);
        if worst.as_ref().is_none_or(|w| key(&r) > key(w)) {
            worst = Some(r);
        }
    }
    worst.ok_or_else(|| ScenarioError::Invalid("no pipeline stage to estimate".into()))
}

/// Every pipeline stage's rank, stage 0 first (one element without pipeline parallelism), each
/// as `vramscope estimate` computes the most loaded one: with the caching allocator replayed over
/// its step on a card of `capacity` bytes, or with the flat reserve where the scenario asks for it.
/// Ranks of one stage (their tensor, context, expert and data-parallel peers) are alike.
pub fn per_stage(sc: &Scenario, capacity: Option<u64>) -> Result<Vec<Estimate>, ScenarioError> {
    sc.validate()?;
    let layers = sc.model.transformer().map_or(0, |t| t.num_layers);
    Ok(rank::all_stages(sc, layers)
        .iter()
        .map(|stage| {
            if sc.overhead.flat_reserve {
                estimate_rank(sc, stage, None)
            } else {
                replay_timeline(sc, stage_timeline(sc, stage), capacity).0.estimate
            }
        })
        .collect())
}

/// `tl` with the caching allocator replayed over it (see [`replayed`]).
fn replay_timeline(
    sc: &Scenario,
    mut tl: step::Timeline,
    capacity: Option<u64>,
) -> (step::Timeline, reserved::Reserved) {
    let o = sc.overhead;
    let outside = context::outside(sc).total();
    let cfg = crate::alloc::Config {
        capacity: capacity.map_or(u64::MAX, |c| c.saturating_sub(outside)),
        max_split_size: o.allocator.max_split_size_mib.map(|m| m << 20),
        garbage_collection_threshold: o.allocator.garbage_collection_threshold,
        expandable_segments: o.allocator.expandable_segments,
    };
    let r = reserved::replay(sc, &tl, cfg, o.workspace_bytes);
    let e = &mut tl.estimate;
    let cache = r.peak_reserved.saturating_sub(e.peak_allocated);
    e.reserved = Some(r.peak_reserved);
    e.overhead = outside + cache.max(o.workspace_bytes);
    e.total = e.peak_allocated + e.overhead;
    (tl, r)
}

fn estimate_rank(sc: &Scenario, stage: &Stage, sink: Option<&mut step::All>) -> Estimate {
    let p = sc.parallel;
    // context parallelism: each rank holds a 1/cp slice of the sequence
    let local;
    let sc_local = if p.cp > 1 {
        let mut s = sc.clone();
        s.seq = sc.seq.div_ceil(p.cp);
        local = s;
        &local
    } else {
        sc
    };
    let spec = sc.model.transformer().map(|t| shard_spec(t, &p));
    let groups = match &spec {
        Some(t) => stage_groups(t, stage),
        None => sc.model.param_groups(),
    };
    let RankStates { st, cpu_bytes, nvme_bytes } = rank_states(sc, stage, &groups);
    let (am, layers) = match (&sc.model.arch, &spec) {
        (Architecture::Transformer(_), Some(t)) => (activations::transformer(sc_local, t), stage.blocks),
        (Architecture::Table(t), _) => table_model(sc, t),
        (Architecture::Transformer(t), None) => (activations::transformer(sc_local, t), t.num_layers),
    };
    let train = sc.mode == Mode::Train;
    let (layer_saved, recompute) = compose_layers(sc_local, &am, layers);
    let saved = RankSaves::of(&am, stage, layer_saved);
    let activations_bytes = if train { saved.breakdown.total() } else { 0 };
    let (generation, kv_cache) = inference_terms(sc, sc_local, stage, spec.as_ref());
    let parts = step::Parts {
        sc: sc_local,
        spec: spec.as_ref(),
        stage: *stage,
        st,
        am,
        layers,
        recompute,
        activations: activations_bytes,
        top_input: saved.top_input,
        blocks_total: saved.blocks.total(),
        kv_cache,
        generate: generation,
    };
    let (peak, moments, phase_peaks) = match sink {
        Some(all) => {
            step::walk(&parts, all);
            let mut peak = step::Peak::default();
            step::walk(&parts, &mut peak);
            peak.finish()
        }
        None => {
            let mut peak = step::Peak::default();
            step::walk(&parts, &mut peak);
            peak.finish()
        }
    };
    let peak_allocated = peak.alive.total();
    let o = sc.overhead;
    let overhead = context::outside(sc).total()
        + o.workspace_bytes
        + (peak_allocated as f64 * o.allocator_reserve_fraction).round() as u64;
    let sharded = p.tp > 1 || p.pp > 1 || p.ep > 1;
    Estimate {
        // the model's parameter count (the rank's own share shows in `parameters`)
        n_params: if sharded { sc.model.n_params() } else { st.n_params },
        rank_params: st.n_params,
        trainable_params: st.trainable_params,
        parameters: st.param_bytes,
        gradients: st.grad_bytes,
        optimizer_states: st.optimizer_bytes,
        activations: activations_bytes,
        activation_breakdown: if train { saved.breakdown } else { Saved::default() },
        kv_cache,
        peak_allocated,
        peak,
        moments,
        phase_peaks,
        overhead,
        reserved: None,
        paged_optimizer_states: st.paged_bytes,
        total: peak_allocated + overhead,
        stage: *stage,
        cpu_bytes,
        nvme_bytes,
        generate: generation,
    }
}

/// A rank's model states and what it offloads.
struct RankStates {
    st: States,
    /// Bytes offloaded to host memory.
    cpu_bytes: u64,
    /// Bytes offloaded to NVMe.
    nvme_bytes: u64,
}

/// The rank's parameters, gradients and optimizer states: sharded by ZeRO / FSDP, offloaded.
fn rank_states(sc: &Scenario, stage: &Stage, groups: &[crate::model::ParamGroup]) -> RankStates {
    let p = sc.parallel;
    let mut st: States = states::states(sc, groups);
    let mut cpu_bytes = 0;
    let mut nvme_bytes = 0;
    let gathered = gathered_bytes(sc, stage, groups);
    if p.dp > 1 || p.effective_zero() > 0 {
        let unsharded = st;
        states::shard(&mut st, &p, gathered);
        fsdp::apply(&mut st, &unsharded, sc, groups);
    }
    match p.offload {
        Offload::None => {}
        Offload::Optimizer => {
            // ZeRO-Offload: moments (and fp32 master) live and step on the CPU, and the gradient
            // partitions are copied down (fp32) as backward produces them
            cpu_bytes = st.optimizer_bytes + 4 * st.trainable_params.div_ceil(p.shard_degree().max(1));
            st.optimizer_bytes = 0;
            st.optimizer_alloc = 0;
            st.optimizer_step_temp = 0;
        }
        Offload::Params => {
            // ZeRO-Infinity: parameters, gradients and states on NVMe; the GPU holds the block in
            // use and the prefetched next one. FSDP's `CPUOffload(offload_params=True)` the same
            // with the CPU for the NVMe, except what FSDP1 keeps on the GPU all the same: its root
            // unit, all-gathered through the step, and under `no_sync` the unsharded gradients
            // it accumulates (offloading moves only the reduce-scattered shard)
            let offloaded = st.param_bytes + st.optimizer_bytes + 4 * st.trainable_params;
            if p.fsdp.is_some() {
                cpu_bytes = offloaded;
            } else {
                nvme_bytes = offloaded;
                cpu_bytes = 4 * gathered;
            }
            st.param_bytes = 0;
            st.param_alloc = 2 * gathered + fsdp::root_unit(sc, groups);
            st.optimizer_bytes = 0;
            st.optimizer_alloc = 0;
            st.optimizer_step_temp = 0;
        }
    }
    // either offload moves the gradients off the GPU, except the unsharded ones FSDP1 keeps
    // there while `no_sync` accumulates them
    if p.offload != Offload::None && !fsdp::accumulates_unsharded(sc) {
        st.grad_bytes = 0;
        st.grad_alloc = 0;
    }
    RankStates { st, cpu_bytes, nvme_bytes }
}

/// Parameters ZeRO-3 / FSDP gather at once: one block (a layer table's largest layer), in the
/// compute dtype (FSDP's `param_dtype`), or as stored for a quantized LoRA base.
fn gathered_bytes(sc: &Scenario, stage: &Stage, groups: &[crate::model::ParamGroup]) -> u64 {
    // parameters ZeRO-3 / FSDP gather at once: one block (a layer table's largest layer), in
    // the compute dtype (FSDP's `param_dtype`), or as stored for a quantized LoRA base: NF4 and
    // int8 shards are all-gathered quantized (torchao's `NF4Tensor.fsdp_pre_all_gather`,
    // bitsandbytes' `bnb_4bit_quant_storage`) and dequantized per Linear as it runs
    let block_linear = |g: &&crate::model::ParamGroup| {
        matches!(
            g.kind,
            crate::model::ParamKind::Linear(_)
                | crate::model::ParamKind::Experts(_)
                | crate::model::ParamKind::Router
        )
    };
    match &sc.model.arch {
        Architecture::Table(t) => {
            sc.precision.compute_dtype().bytes(t.layers.iter().map(|l| l.params).max().unwrap_or(0))
        }
        Architecture::Transformer(_) if sc.lora.is_some() && sc.base_quant != BaseQuant::None => {
            groups
                .iter()
                .filter(block_linear)
                .map(|g| {
                    states::quantized_bytes(g.rows * g.cols, g.rows, sc.precision, sc.base_quant) * g.count
                })
                .sum::<u64>()
                / stage.blocks.max(1)
        }
        Architecture::Transformer(_) => sc.precision.compute_dtype().bytes(
            groups.iter().filter(block_linear).map(|g| g.rows * g.cols * g.count).sum::<u64>()
                / stage.blocks.max(1),
        ),
    }
}

/// What a rank keeps through the forward: its blocks' saves (the in-flight micro-batches
/// scaled in), the embedding part on the first stage, the head part on the last.
struct RankSaves {
    blocks: Saved,
    breakdown: Saved,
    /// The first stage's embedding part.
    top_input: u64,
}

impl RankSaves {
    fn of(am: &activations::ActivationModel, stage: &Stage, layer_saved: Saved) -> Self {
        let mut blocks = layer_saved;
        if stage.in_flight > 1.0 {
            let mut scaled = Saved::default();
            for (dst, src) in scaled.0.iter_mut().zip(blocks.0.iter()) {
                *dst = (*src as f64 * stage.in_flight).round() as u64;
            }
            blocks = scaled;
        }
        let mut breakdown = blocks;
        let top_output = {
            let mut o = am.top;
            for (a, b) in o.0.iter_mut().zip(am.top_input.0.iter()) {
                *a -= *b;
            }
            o
        };
        let mut top_input = 0;
        if stage.first() {
            for (dst, src) in breakdown.0.iter_mut().zip(am.top_input.0.iter()) {
                let v = (*src as f64 * stage.in_flight).round() as u64;
                *dst += v;
                top_input += v;
            }
        }
        if stage.last() {
            breakdown.add_all(&top_output);
        }
        Self { blocks, breakdown, top_input }
    }
}

/// HF `generate`'s terms and the KV cache of the stage's blocks (their tensor-parallel share of
/// the KV heads) in inference.
fn inference_terms(
    sc: &Scenario,
    sc_local: &Scenario,
    stage: &Stage,
    spec: Option<&crate::model::TransformerSpec>,
) -> (Option<generate::Terms>, u64) {
    let kv_dtype = sc.kv_cache_dtype.unwrap_or(sc.precision.compute_dtype());
    // the stage's blocks (their tensor-parallel share of the KV heads)
    let stage_spec = spec.map(|t| crate::model::TransformerSpec { num_layers: stage.blocks, ..t.clone() });
    let generation = match &stage_spec {
        Some(t) if sc.mode == Mode::Infer && sc.new_tokens > 0 => {
            let ctx = activations::Ctx::new(sc_local);
            Some(generate::terms(
                t,
                sc_local.batch,
                sc_local.seq,
                sc.new_tokens,
                (ctx.compute_elem, ctx.residual_elem),
                kv_dtype,
                crate::families::kernel_of(&ctx, t),
                (stage.first(), stage.last()),
            ))
        }
        _ => None,
    };
    let kv_cache = match (&stage_spec, sc.mode, generation) {
        (_, _, Some(g)) => g.kv_final,
        (Some(t), Mode::Infer, None) => {
            activations::kv_cache_bytes(t, sc_local.batch, sc_local.seq, kv_dtype)
        }
        _ => 0,
    };
    (generation, kv_cache)
}
