//! The estimator: per-GPU bytes of one training step or inference pass, and the peak.
//!
//! [`estimate`] is pure and allocation-free apart from the returned struct, so the GUI can call it
//! every frame and sweeps can call it thousands of times.

pub mod activations;
mod compose;
pub mod context;
pub mod deepspeed;
pub mod fsdp;
pub mod generate;
pub mod moments;
pub mod parallel;
mod per_rank;
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
    AdapterDtype, Bnb, Framework, FsdpImpl, Loss, MixerImpl, ModelCode, Stack, Torch, bnb_release_before_0_43,
};

use crate::model::{Architecture, LayerTable};
use activations::ActivationModel;
use compose::{blocks_saved, compose_layers, table_model};
use per_rank::estimate_rank;
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
    /// DeepSpeed ZeRO's gradient-reduction buckets ([`deepspeed`]).
    pub zero_buckets: u64,
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
            + self.zero_buckets
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
    /// DeepSpeed ZeRO's gradient-reduction buckets at their largest (stage 1 and 2: during the
    /// backward; stage 3: all the time), exact as allocated ([`deepspeed::buckets`]).
    pub zero_buckets: u64,
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

/// What a traced model's training forward keeps at its end by module, at the scenario's dims,
/// the largest first (empty for any other model, inference, or dims the trace cannot answer).
pub fn traced_modules(sc: &Scenario) -> Vec<crate::trace::modules::ModuleKept> {
    let Some(t) = sc.model.traced() else { return Vec::new() };
    if sc.mode != Mode::Train {
        return Vec::new();
    }
    let ckpt = sc.checkpointing == Checkpointing::Full;
    match t.resolve_sizes(|d| sc.dim(d)) {
        Ok((_, bytes)) => crate::trace::modules::kept(t, &bytes, ckpt),
        Err(_) => Vec::new(),
    }
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
    replayed_on(sc, capacity, true)
}

/// Whether the step's replay on a card of `capacity` bytes serves every request: [`replayed`]'s
/// failed requests, without replaying a step that does not fit a second time for its need.
pub fn replay_fits(sc: &Scenario, capacity: u64) -> Result<(Estimate, reserved::Reserved), ScenarioError> {
    replayed_on(sc, Some(capacity), false).map(|(tl, r)| (tl.estimate, r))
}

fn replayed_on(
    sc: &Scenario,
    capacity: Option<u64>,
    need: bool,
) -> Result<(step::Timeline, reserved::Reserved), ScenarioError> {
    sc.validate()?;
    let layers = sc.model.transformer().map_or(0, |t| t.num_layers);
    // the most loaded stage: one whose replay runs out of the card (the job then does not fit),
    // else the largest replayed total (the allocator's cache differs between stages), so that
    // the headline is the largest of `per_stage`'s figures on a card the job fits
    let key = |r: &(step::Timeline, reserved::Reserved)| (r.1.ooms > 0, r.0.estimate.total);
    let mut worst: Option<(step::Timeline, reserved::Reserved)> = None;
    for stage in stages_of(sc, layers) {
        let r = replay_timeline(sc, stage_timeline(sc, &stage), capacity, need);
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
                replay_timeline(sc, stage_timeline(sc, stage), capacity, true).0.estimate
            }
        })
        .collect())
}

/// `tl` with the caching allocator replayed over it (see [`replayed`]).
///
/// When the step does not fit `capacity` and `need` is set, the totals are those of the replay
/// on a card without end (what the job needs), the failed requests those on the card.
fn replay_timeline(
    sc: &Scenario,
    mut tl: step::Timeline,
    capacity: Option<u64>,
    need: bool,
) -> (step::Timeline, reserved::Reserved) {
    let o = sc.overhead;
    let outside = context::outside(sc).total();
    let cfg = crate::alloc::Config {
        capacity: capacity.map_or(u64::MAX, |c| c.saturating_sub(outside)),
        max_split_size: o.allocator.max_split_size_mib.map(|m| m << 20),
        garbage_collection_threshold: o.allocator.garbage_collection_threshold,
        expandable_segments: o.allocator.expandable_segments,
    };
    let mut r = reserved::replay(sc, &tl, cfg, o.workspace_bytes);
    if need && r.ooms > 0 && cfg.capacity < u64::MAX {
        // the step does not fit: where the replay ran out is not what the job needs. Its total
        // is the replay on a card without end (the cache kept, never released), and the first
        // replay's failed requests say it does not fit here
        let ooms = r.ooms;
        r = reserved::replay(sc, &tl, crate::alloc::Config { capacity: u64::MAX, ..cfg }, o.workspace_bytes);
        r.ooms = ooms;
    }
    let e = &mut tl.estimate;
    let cache = r.peak_reserved.saturating_sub(e.peak_allocated);
    e.reserved = Some(r.peak_reserved);
    e.overhead = outside + cache.max(o.workspace_bytes);
    e.total = e.peak_allocated + e.overhead;
    (tl, r)
}
