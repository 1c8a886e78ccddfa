//! One steady-state step as a sequence of events: the liveness walk the estimate's peak is the
//! maximum of, and the timeline the GUI and `vramscope timeline` draw.
//!
//! [`walk`] replays a step over the quantities the op walk produced ([`ActivationModel`]) and the
//! model states ([`States`]): the forward pass block by block (op by op when a [`Sink`] asks for
//! detail), the loss, the backward pass block by block with checkpoint recomputes, the gradient
//! reduction, the optimizer step and `zero_grad`; an inference pass block by block with its KV
//! cache growing. Every event carries what is alive, by category. The estimator runs the same walk
//! without the per-op detail: per-op events only add saves (forward) or free them (backward) between
//! two block-level events, so they never exceed the block-level events around them, and the
//! maximum of the detailed timeline is the estimate's peak by construction.

use super::activations::{ActivationModel, Pieces};
use super::moments::{in_block, moment_in};
use super::rank::Stage;
use super::saved::Cat;
use super::states::States;
use super::{Checkpointing, Mode, Moment, Phase, Recompute, Scenario, Snapshot, blocks_saved};
use crate::i18n::Lang;

/// What an event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pass {
    /// One op's forward (adds the tensors its backward keeps).
    OpForward,
    /// One op's backward (frees what it kept).
    OpBackward,
    /// A block-level moment or state (a block done, a recompute, the loss, the step).
    Step,
}

/// One moment of the step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Event {
    /// Phase of the step.
    pub phase: Phase,
    /// Block (0-based, on this rank's pipeline stage) the event belongs to.
    pub block: Option<u64>,
    /// What runs: an op name for op events, a short description otherwise.
    pub op: &'static str,
    /// Op forward, op backward or a block-level moment.
    pub pass: Pass,
    /// One of the estimator's candidate moments of the peak (its transients included).
    pub candidate: bool,
    /// What is alive.
    pub alive: Snapshot,
    /// An op event's saved storages one by one (what the op keeps, or frees in backward; zeros
    /// after the last): the tensor sizes the allocator replay uses.
    #[serde(skip)]
    pub tensors: [u64; crate::engine::ops::OP_TENSORS],
    /// The tensors the event's temporaries are made of (the head's and the loss's: pieces of
    /// logits, weight-sized gradients); the default: one tensor.
    #[serde(skip)]
    pub pieces: Pieces,
    /// The size of each tensor the event adds to the activations in (the loss's log-softmax a
    /// piece of logits); 0: as one tensor (op events carry theirs in `tensors`).
    #[serde(skip)]
    pub saved_piece: u64,
}

impl Event {
    /// "block 17 linear down_proj backward", "optimizer step".
    pub fn label(&self) -> String {
        let suffix = match self.pass {
            Pass::OpForward => " forward",
            Pass::OpBackward => " backward",
            Pass::Step => "",
        };
        match self.block {
            Some(b) => format!("block {b} {}{suffix}", self.op),
            None => format!("{}{suffix}", self.op),
        }
    }

    /// [`Self::label`] in `lang`: the op names stay as they are, the words around them and the
    /// step's moments are translated ("第 17 块 linear down_proj 反向", "优化器更新步").
    pub fn label_in(&self, lang: Lang) -> String {
        if lang == Lang::En {
            return self.label();
        }
        let what = match self.pass {
            Pass::OpForward => format!("{} {}", self.op, Phase::Forward.label_in(lang)),
            Pass::OpBackward => format!("{} {}", self.op, Phase::Backward.label_in(lang)),
            Pass::Step => moment_in(self.op, lang).into_owned(),
        };
        match self.block {
            Some(b) => in_block(b, &what, lang),
            None => what,
        }
    }

    pub(crate) fn moment(&self) -> Moment {
        Moment { phase: self.phase, what: self.op, block: self.block, alive: self.alive }
    }
}

/// One step, event by event, with the estimate it belongs to.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Timeline {
    /// Events in the order they happen.
    pub events: Vec<Event>,
    /// Index of the (last) event at the maximum.
    pub peak_index: usize,
    /// The estimate of the same rank.
    pub estimate: super::Estimate,
    /// Gradient bytes alive from the first event on because they persist between steps
    /// (gradient accumulation, zero_grad without set_to_none); 0 otherwise.
    pub persistent_gradients: u64,
}

impl Timeline {
    pub(crate) fn new(events: Vec<Event>, estimate: super::Estimate) -> Self {
        let mut peak_index = 0;
        for (i, e) in events.iter().enumerate() {
            if e.alive.total() >= events[peak_index].alive.total() {
                peak_index = i;
            }
        }
        Self { events, peak_index, estimate, persistent_gradients: 0 }
    }

    /// The event at the maximum.
    pub fn peak(&self) -> Option<&Event> {
        self.events.get(self.peak_index)
    }

    /// Index ranges of the phases, in order (for the chart's bands).
    pub fn phase_spans(&self) -> Vec<(Phase, std::ops::Range<usize>)> {
        let mut out: Vec<(Phase, std::ops::Range<usize>)> = Vec::new();
        for (i, e) in self.events.iter().enumerate() {
            match out.last_mut() {
                Some((p, r)) if *p == e.phase => r.end = i + 1,
                _ => out.push((e.phase, i..i + 1)),
            }
        }
        out
    }
}

/// Receives the events of a walk.
pub(crate) trait Sink {
    /// Wants per-op events.
    fn detail(&self) -> bool;
    fn push(&mut self, e: Event);
    /// Gradient bytes alive from the step's start because they persist between steps (the
    /// allocator replay creates them in the first step's backward instead).
    fn persistent_gradients(&mut self, _bytes: u64) {}
}

/// The estimator's sink: the named candidate moments and the maximum.
#[derive(Default)]
pub(crate) struct Peak {
    pub moments: Vec<Moment>,
    pub max: Option<Event>,
    /// Largest total per phase (forward, backward, optimizer step).
    pub phases: PhasePeaks,
}

/// The largest allocated bytes of each phase of the step (0 for a phase the step has not).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PhasePeaks {
    pub forward: u64,
    pub backward: u64,
    pub optimizer_step: u64,
}

impl PhasePeaks {
    /// The peak of one phase.
    pub fn of(&self, phase: Phase) -> u64 {
        match phase {
            Phase::Forward => self.forward,
            Phase::Backward => self.backward,
            Phase::OptimizerStep => self.optimizer_step,
        }
    }

    fn raise(&mut self, phase: Phase, bytes: u64) {
        let slot = match phase {
            Phase::Forward => &mut self.forward,
            Phase::Backward => &mut self.backward,
            Phase::OptimizerStep => &mut self.optimizer_step,
        };
        *slot = (*slot).max(bytes);
    }
}

impl Sink for Peak {
    fn detail(&self) -> bool {
        false
    }
    fn push(&mut self, e: Event) {
        if e.candidate && e.block.is_none() {
            self.moments.push(e.moment());
        }
        self.phases.raise(e.phase, e.alive.total());
        // ties go to the later event (the peak is where memory last reaches its maximum)
        if self.max.is_none_or(|m| e.alive.total() >= m.alive.total()) {
            self.max = Some(e);
        }
    }
}

impl Peak {
    /// The peak as a moment, listed among the moments when it is a block-level one.
    pub fn finish(mut self) -> (Moment, Vec<Moment>, PhasePeaks) {
        let peak = self.max.map_or(
            Moment { phase: Phase::Forward, what: "", block: None, alive: Snapshot::default() },
            |e| e.moment(),
        );
        if !self.moments.contains(&peak) && peak.alive.total() > 0 {
            self.moments.push(peak);
        }
        (peak, self.moments, self.phases)
    }
}

/// Every event, in order (the timeline).
#[derive(Default)]
pub(crate) struct All(pub Vec<Event>, pub u64);

impl Sink for All {
    fn detail(&self) -> bool {
        true
    }
    fn push(&mut self, e: Event) {
        self.0.push(e);
    }
    fn persistent_gradients(&mut self, bytes: u64) {
        self.1 = bytes;
    }
}

/// What the walk of one rank's step reads.
pub(crate) struct Parts<'a> {
    /// The scenario with the rank's sequence slice (context parallelism).
    pub sc: &'a Scenario,
    pub spec: Option<&'a crate::model::TransformerSpec>,
    pub stage: Stage,
    pub st: States,
    pub am: ActivationModel,
    /// Blocks on this stage.
    pub layers: u64,
    pub recompute: Recompute,
    /// Saved bytes at the end of the forward pass (training).
    pub activations: u64,
    /// The part of `activations` on the first stage before the blocks (ids, embedding outputs).
    pub top_input: u64,
    /// The part of `activations` the blocks keep (in-flight micro-batches included).
    pub blocks_total: u64,
    /// KV cache of the stage's blocks (inference).
    pub kv_cache: u64,
    /// HF `generate`'s terms (inference with new tokens).
    pub generate: Option<super::generate::Terms>,
}

fn ev(
    phase: Phase,
    block: Option<u64>,
    op: &'static str,
    pass: Pass,
    candidate: bool,
    alive: Snapshot,
) -> Event {
    Event {
        phase,
        block,
        op,
        pass,
        candidate,
        alive,
        tensors: [0; crate::engine::ops::OP_TENSORS],
        pieces: Pieces::default(),
        saved_piece: 0,
    }
}

/// Replays the step into `sink`.
pub(crate) fn walk(p: &Parts, sink: &mut impl Sink) {
    if p.sc.mode == Mode::Train { train(p, sink) } else { infer(p, sink) }
}

/// Is block `j` run under checkpointing (its forward keeps only its input)?
fn checkpointed(ck: Checkpointing, layers: u64, j: u64) -> bool {
    match ck {
        Checkpointing::Full => true,
        Checkpointing::Every(k) => j.is_multiple_of(k.max(1)),
        Checkpointing::Segments(n) => {
            let n = n.clamp(1, layers.max(1));
            n > 1 && j < (n - 1) * (layers / n)
        }
        Checkpointing::None | Checkpointing::Selective => false,
    }
}

/// Bytes block `j` keeps through the forward pass when it is not checkpointed.
fn stored_saves(p: &Parts, j: u64) -> u64 {
    let am = &p.am;
    let selective = p.sc.checkpointing == Checkpointing::Selective;
    if selective && j == 0 {
        // the first block differs from the others only by its input (as compose_layers has it)
        let mut first = am.first_layer;
        for (f, (a, b)) in first.0.iter_mut().zip(am.full_layer.0.iter().zip(am.selective_layer.0.iter())) {
            *f = f.saturating_sub(a.saturating_sub(*b));
        }
        return first.total();
    }
    match (am.mix.n > 1, j, selective) {
        // blocks of one kind: block 0 (its input may not need a gradient) or any other
        (false, 0, false) => am.first_layer.total(),
        (false, _, false) => am.full_layer.total(),
        (false, _, true) => am.selective_layer.total(),
        _ => blocks_saved(p.sc, am, j, j + 1, selective).total(),
    }
}

fn scaled(bytes: u64, in_flight: f64) -> u64 {
    if in_flight > 1.0 { (bytes as f64 * in_flight).round() as u64 } else { bytes }
}

type Ops = Vec<crate::engine::ops::OpRecord>;

/// The op records of block `j`'s kind, walked once per kind.
fn ops_of(p: &Parts, cache: &mut Vec<(u8, Ops)>, j: u64) -> Ops {
    let Some(t) = p.spec else { return Vec::new() };
    let f = crate::engine::walk::layer_flags(t, j);
    if let Some((_, o)) = cache.iter().find(|k| k.0 == f) {
        return o.clone();
    }
    let o = crate::engine::walk::block_ops(&crate::estimate::activations::Ctx::new(p.sc), t, f);
    cache.push((f, o.clone()));
    o
}

/// Per-op backward events: each op of `ops` (walked in reverse) frees what it kept, from `start`
/// down to no lower than `floor` activations.
fn free_ops(sink: &mut impl Sink, j: u64, ops: &[crate::engine::ops::OpRecord], start: Snapshot, floor: u64) {
    let mut s = Snapshot { temporaries: 0, ..start };
    for r in ops.iter().rev().filter(|r| r.kept_bytes > 0) {
        s.activations = s.activations.saturating_sub(r.kept_bytes).max(floor.min(s.activations));
        sink.push(Event {
            tensors: r.tensors,
            ..ev(Phase::Backward, Some(j), r.op, Pass::OpBackward, false, s)
        });
    }
}

fn train(p: &Parts, sink: &mut impl Sink) {
    let (sc, st, am, stage, rc) = (p.sc, &p.st, &p.am, &p.stage, &p.recompute);
    let layers = p.layers;
    let ck = sc.checkpointing;
    // accumulated (or zeroed-in-place) gradients are alive from the step's start: backward sums
    // each new gradient into its tensor and frees it, so they never grow
    // a pipeline's micro-batches accumulate too: from the second one's backward on, the stage's
    // gradients exist while later micro-batches run forward and backward
    let pipelined = sc.parallel.pp > 1 && sc.parallel.micro_batches() > 1;
    let persist = sc.stack.grads_persist() || (pipelined && !sc.stack.optimizer_in_backward);
    let base = Snapshot {
        parameters: st.param_alloc,
        optimizer_states: st.optimizer_alloc,
        gradients: st.ddp_bucket_alloc + if persist { st.grad_alloc } else { 0 },
        ..Snapshot::default()
    };
    let with = |acts: u64, grads: u64, temp: u64| Snapshot {
        activations: acts,
        gradients: grads,
        temporaries: temp,
        ..base
    };
    if persist {
        sink.persistent_gradients(st.grad_alloc);
    }
    let detail = sink.detail();
    let mut kinds: Vec<(u8, Ops)> = Vec::new();
    let (fwd, bwd) = (Phase::Forward, Phase::Backward);

    // ---- forward: each block adds what it keeps (a checkpointed block only its input)
    let segments = matches!(ck, Checkpointing::Segments(_));
    let seg_len = match ck {
        Checkpointing::Segments(n) => (layers / n.clamp(1, layers.max(1))).max(1),
        _ => 1,
    };
    let autocast_cache = sc.precision.is_amp() && rc.checkpointed_blocks > 0;
    // autocast caches only the casts of fp32 leaf tensors that require grad (`cached_cast`'s
    // `arg.requires_grad() && arg.is_leaf() && !arg.is_view()`): the trained weights of a full
    // fine-tune, not a LoRA run's frozen base (its adapters' casts are not counted) nor FSDP1's
    // views of a flat parameter
    let cached_casts = sc.lora.is_none() && !super::fsdp::fsdp1(sc);
    let cast_per_block = if cached_casts { am.full_layer.get(Cat::WeightCasts) } else { 0 };
    let mut cache = 0;
    if stage.first() && p.spec.is_some() {
        sink.push(ev(fwd, None, "embedding", Pass::Step, false, with(p.top_input, base.gradients, 0)));
    }
    let (mut shared_stored, mut shared_ckpt) = (false, false);
    let mut block_fwd = Vec::with_capacity(layers.min(1 << 16) as usize);
    let mut cum: u64 = 0;
    for j in 0..layers {
        let saves = if checkpointed(ck, layers, j) {
            if autocast_cache {
                cache += cast_per_block;
            }
            // checkpoint_sequential keeps one input per segment, not per block
            if segments && !j.is_multiple_of(seg_len) {
                0
            } else {
                am.layer_input_bytes
                    + if std::mem::replace(&mut shared_ckpt, true) { 0 } else { am.shared_checkpoint_bytes }
            }
        } else {
            let b = stored_saves(p, j)
                + if std::mem::replace(&mut shared_stored, true) { 0 } else { am.shared_layer_bytes };
            if detail && ck != Checkpointing::Selective {
                let mut kept = 0;
                for r in ops_of(p, &mut kinds, j).iter().filter(|r| r.kept_bytes > 0) {
                    kept = (kept + r.kept_bytes).min(b);
                    let a = p.top_input + scaled(cum + kept, stage.in_flight).min(p.blocks_total);
                    sink.push(Event {
                        tensors: r.tensors,
                        ..ev(fwd, Some(j), r.op, Pass::OpForward, false, with(a + cache, base.gradients, 0))
                    });
                }
            }
            b
        };
        block_fwd.push(saves);
        cum += saves;
        // the last block lands on the estimator's composed total (pipeline in-flight scaling
        // rounds per category there: the running sum never passes it)
        let a = if j + 1 == layers {
            p.top_input + p.blocks_total
        } else {
            p.top_input + scaled(cum, stage.in_flight).min(p.blocks_total)
        };
        // the forward only adds: its block events stay below the last one (the estimator's walk
        // skips them)
        if detail || j + 1 == layers {
            sink.push(ev(fwd, Some(j), "forward", Pass::Step, false, with(a + cache, base.gradients, 0)));
        }
    }
    let acts = p.activations;
    if stage.last() {
        // the loss runs with the logits (and their fp32 copy, or the chunks' and one chunk's fp32
        // copy) alive beside what it saves; transformers' causal-LM loss (`logits.float()`)
        // peaks later, at the loss backward, but its forward makes those tensors (the allocator's
        // cache keeps their blocks); a 4-bit head (Lightning's plugin) dequantizes its weight
        // before the logits exist
        let chunked = sc.stack.loss != super::stack::Loss::Hf;
        let upcast = p.spec.is_some_and(|t| {
            t.head == crate::model::Head::CausalLm
                && crate::families::ops(t).loss == crate::engine::ops::LossKind::CausalLm
        });
        let (what, temp) = match p.spec {
            Some(_) if chunked || upcast => {
                ("final norm, LM head and loss", am.head_forward_transient.max(am.head_dequant))
            }
            Some(_) => ("final norm, LM head and loss", am.head_dequant),
            None => ("forward", 0),
        };
        let pieces = am.head_pieces;
        sink.push(Event {
            pieces: pieces.forward,
            saved_piece: pieces.saved,
            ..ev(fwd, None, what, Pass::Step, false, with(acts + cache, base.gradients, temp))
        });
    }
    if autocast_cache {
        // autocast caches the half copy of every weight until the autocast region ends; inside
        // checkpointed blocks they are not saved, but the cache still holds them at the loss
        let cached = rc.checkpointed_blocks * cast_per_block;
        let temp = if stage.last() { am.head_forward_transient } else { 0 };
        let what = "end of forward (autocast weight cache)";
        sink.push(Event {
            pieces: am.head_pieces.forward,
            ..ev(fwd, None, what, Pass::Step, true, with(acts + cached, base.gradients, temp))
        });
    }

    // ---- backward
    if stage.last() {
        let what = if sc.stack.compiled_loss {
            "loss backward (compiled cross-entropy)"
        } else {
            "loss and log-softmax backward"
        };
        sink.push(Event {
            pieces: am.head_pieces.loss_backward,
            ..ev(bwd, None, what, Pass::Step, true, with(acts, base.gradients, am.loss_backward_transient))
        });
    }
    // optimizer in backward: each gradient is stepped and freed as soon as it is accumulated, so
    // gradients never add up; one parameter's gradient and its step temporary are the transient
    let oib = sc.stack.optimizer_in_backward;
    // gradients that do not add up in backward: stepped and freed (optimizer in backward) or
    // summed into the accumulated ones (the new gradient is then a transient)
    let flat = oib || persist;
    let head_grads = if stage.last() { st.head_grad_alloc } else { 0 };
    let head_released = if stage.last() { am.head_released_bytes } else { 0 };
    let after_head = acts - head_released.min(acts);
    let mut grads = base.gradients + if flat { 0 } else { head_grads };
    if stage.last() && p.spec.is_some() && am.head_chunk_sum_transient > 0 {
        // a chunked head: the second chunk's weight gradient summed in the engine's buffer,
        // before any head gradient reaches `.grad` (nothing stepped yet in backward)
        let what = "LM head backward: a chunk's weight gradient summed";
        let a = after_head + am.head_chunk_kept.min(acts - after_head);
        sink.push(Event {
            pieces: am.head_pieces.chunk_sum,
            ..ev(bwd, None, what, Pass::Step, true, with(a, base.gradients, am.head_chunk_sum_transient))
        });
    }
    if stage.last() && p.spec.is_some() {
        let temp = match (oib, persist) {
            (true, _) => st.largest_grad_alloc + st.largest_step_temp,
            (_, true) => head_grads,
            _ => 0,
        };
        // a 4-bit head dequantizes its weight again for the input's gradient
        let temp = temp.max(am.head_dequant);
        // the head's gradient (or its summand, its step's temporary, its dequantized weight): a
        // tensor of its own, not a block's transient
        sink.push(Event {
            pieces: Pieces::of(temp, 1),
            ..ev(bwd, None, "LM head backward", Pass::Step, false, with(after_head, grads, temp))
        });
    }
    let embed = if stage.first() { st.embed_grad_alloc } else { 0 };
    let per_block = st.grad_alloc.saturating_sub(head_grads + embed) / layers.max(1);
    let (grads_before_attention, block_grads) =
        if flat { (0, 0) } else { (st.grads_before_attention, per_block) };
    let per_param = match (oib, persist) {
        (true, _) => st.largest_grad_alloc.min(per_block) + st.largest_step_temp,
        (_, true) => st.largest_grad_alloc.min(per_block),
        _ => 0,
    };
    let (mlp_t, attn_t) = (am.mlp_backward_transient, am.attention_backward_transient);
    let freed_attn = am.freed_before_attention_backward;
    // where the estimator's calibrated moments sit
    let earlier_at = rc.earlier.map(|_| match ck {
        Checkpointing::Every(k) => layers.saturating_sub(1) / k.max(1) * k.max(1),
        _ => checkpointed_prefix(ck, layers).saturating_sub(1),
    });
    let first_at = rc.first.filter(|_| layers > 1).map(|(seg, _)| seg.saturating_sub(1));
    let last_block = |grads: u64| {
        let a = after_head + rc.at_last_block;
        (
            ev(bwd, None, "last block MLP backward", Pass::Step, true, with(a, grads, mlp_t + per_param)),
            ev(
                bwd,
                None,
                "last block attention backward",
                Pass::Step,
                true,
                with(a - freed_attn.min(a), grads + grads_before_attention, attn_t + per_param),
            ),
        )
    };
    let mut acts = after_head;
    let mut rec = 0u64;
    for j in (0..layers).rev() {
        let ckj = checkpointed(ck, layers, j);
        if ckj && (!segments || j % seg_len == seg_len - 1 || j + 1 == checkpointed_prefix(ck, layers)) {
            // backward reaches a checkpointed block (or checkpoint_sequential's segment): its
            // forward runs again and keeps everything
            let from = if segments { j + 1 - seg_len.min(j + 1) } else { j };
            rec = (from..=j).map(|i| stored_saves(p, i)).sum();
            if Some(j) == earlier_at
                && let Some((freed, recomputed)) = rc.earlier
            {
                let a = after_head - freed.min(after_head) + recomputed;
                let what = "recompute of a checkpointed block";
                sink.push(ev(
                    bwd,
                    None,
                    what,
                    Pass::Step,
                    true,
                    with(a, grads.min(base.gradients + head_grads), mlp_t.max(attn_t)),
                ));
            }
            sink.push(ev(bwd, Some(j), "recompute", Pass::Step, false, with(acts + rec, grads, 0)));
        }
        // `acts`: what the forward kept and is not freed yet; `rec`: recomputed saves alive
        let live = acts + rec;
        let own = if ckj { stored_saves(p, j) } else { block_fwd[j as usize] };
        let (acts_after, rec_after) = if ckj {
            (acts.saturating_sub(block_fwd[j as usize]), rec.saturating_sub(own))
        } else {
            (acts.saturating_sub(own), rec)
        };
        let done = acts_after + rec_after;
        let (mlp, attn) = if j + 1 == layers {
            last_block(grads)
        } else if Some(j) == first_at
            && let Some((seg_blocks, recomputed)) = rc.first
        {
            // the first checkpointed segment runs backward last: every later block's gradients
            // exist, the embedding's (when untied) not yet
            let input = if stage.first() { p.top_input } else { 0 };
            let a = input + am.layer_input_bytes + recomputed;
            let g = if flat {
                base.gradients
            } else {
                base.gradients + head_grads + per_block * (layers - seg_blocks.min(layers))
            };
            let g_attn = (g + grads_before_attention).min(base.gradients + st.grad_alloc);
            (
                ev(
                    bwd,
                    None,
                    "first block MLP backward (recomputed)",
                    Pass::Step,
                    true,
                    with(a, g, mlp_t + per_param),
                ),
                ev(
                    bwd,
                    None,
                    "first block attention backward (recomputed)",
                    Pass::Step,
                    true,
                    with(a - freed_attn.min(a), g_attn, attn_t + per_param),
                ),
            )
        } else {
            let a = live - freed_attn.min(own);
            (
                ev(bwd, Some(j), "MLP backward", Pass::Step, false, with(live, grads, mlp_t + per_param)),
                ev(
                    bwd,
                    Some(j),
                    "attention backward",
                    Pass::Step,
                    false,
                    with(a, grads + grads_before_attention.min(per_block), attn_t + per_param),
                ),
            )
        };
        sink.push(mlp);
        let ops = if detail { ops_of(p, &mut kinds, j) } else { Vec::new() };
        let core = ops.iter().rposition(|r| r.op == "attention");
        // the ops after the attention core run backward first, freeing what they kept
        if let Some(at) = core {
            free_ops(sink, j, &ops[at + 1..], mlp.alive, attn.alive.activations);
        }
        sink.push(attn);
        if let Some(at) = core {
            free_ops(sink, j, &ops[..=at], attn.alive, done);
        }
        // the block is done: what it kept (or its input and the recomputed saves) is freed and
        // all its weight gradients exist
        (acts, rec) = (acts_after, rec_after);
        grads += block_grads;
        // a finished block holds what the next block's MLP backward starts from, without its
        // transient: only the last one (block 0) can be a maximum
        if detail || j == 0 {
            sink.push(ev(bwd, Some(j), "backward done", Pass::Step, false, with(done, grads, 0)));
        }
    }
    if layers == 0 {
        // a layer table: the whole model runs backward as one block
        let (mlp, attn) = last_block(grads);
        sink.push(mlp);
        sink.push(attn);
    }
    let step = Phase::OptimizerStep;
    if oib {
        sink.push(ev(
            bwd,
            None,
            "end of backward (every parameter stepped)",
            Pass::Step,
            false,
            with(0, grads, 0),
        ));
        sink.push(ev(step, None, "optimizer steps ran in backward", Pass::Step, false, with(0, grads, 0)));
        return;
    }
    let all_grads = if persist { base.gradients } else { base.gradients + st.grad_alloc };
    let what = if sc.parallel.dp > 1 || sc.parallel.effective_zero() > 0 {
        "end of backward (gradients reduced across data-parallel ranks)"
    } else {
        "end of backward"
    };
    // the embedding's new gradient is summed into the accumulated one last
    let embed_temp = if persist { embed } else { 0 };
    sink.push(Event {
        pieces: Pieces::of(embed_temp, 1),
        ..ev(bwd, None, what, Pass::Step, false, with(0, all_grads, embed_temp))
    });
    sink.push(ev(step, None, "optimizer step", Pass::Step, true, with(0, all_grads, st.optimizer_step_temp)));
    if sc.stack.keep_grads {
        let what = "zero_grad (set_to_none=False: zeroed in place, kept)";
        sink.push(ev(step, None, what, Pass::Step, false, with(0, all_grads, 0)));
    } else {
        let freed = all_grads - st.grad_alloc.min(all_grads);
        let what = if persist {
            "zero_grad (set_to_none) after the last micro-batch"
        } else {
            "zero_grad (set_to_none)"
        };
        sink.push(ev(step, None, what, Pass::Step, false, with(0, freed, 0)));
    }
}

/// Blocks at the start of the stage that `checkpoint_sequential` checkpoints (0 otherwise).
fn checkpointed_prefix(ck: Checkpointing, layers: u64) -> u64 {
    match ck {
        Checkpointing::Segments(n) => {
            let n = n.clamp(1, layers.max(1));
            if n > 1 { (n - 1) * (layers / n) } else { 0 }
        }
        _ => 0,
    }
}

fn infer(p: &Parts, sink: &mut impl Sink) {
    if let Some(g) = &p.generate {
        return generate(p, g, sink);
    }
    let (st, am) = (&p.st, &p.am);
    let fwd = Phase::Forward;
    let at = |kv: u64, acts: u64, temp: u64| Snapshot {
        parameters: st.param_alloc,
        kv_cache: kv,
        activations: acts,
        temporaries: temp,
        ..Snapshot::default()
    };
    sink.push(ev(fwd, None, "embedding", Pass::Step, false, at(0, am.infer_persistent, 0)));
    let layers = p.layers.max(1);
    for j in 0..p.layers.saturating_sub(1) {
        // each block appends its keys and values to the cache as it runs
        let kv = (p.kv_cache as u128 * (j + 1) as u128 / layers as u128) as u64;
        let alive = at(kv, am.infer_persistent, am.infer_layer_peak);
        sink.push(ev(fwd, Some(j), "forward", Pass::Step, false, alive));
    }
    // the last block (a layer table's whole forward), with every block's KV cache
    let alive = at(p.kv_cache, am.infer_persistent, am.infer_layer_peak);
    sink.push(ev(fwd, None, "last block forward", Pass::Step, true, alive));
    // only the last pipeline stage runs the head; the others send their last block's output on
    if p.stage.last() {
        sink.push(ev(fwd, None, "LM head (logits)", Pass::Step, true, at(p.kv_cache, 0, am.infer_head_peak)));
    }
}

/// HF `generate`: the prompt's forward block by block (as [`infer`]) with only the last token's
/// logits, then the last decode step, where the cache is longest.
fn generate(p: &Parts, g: &super::generate::Terms, sink: &mut impl Sink) {
    let (st, am) = (&p.st, &p.am);
    let fwd = Phase::Forward;
    let at = |kv: u64, acts: u64, temp: u64| Snapshot {
        parameters: st.param_alloc,
        kv_cache: kv,
        activations: acts,
        temporaries: temp,
        ..Snapshot::default()
    };
    sink.push(ev(fwd, None, "prefill: embedding", Pass::Step, false, at(0, am.infer_persistent, 0)));
    let layers = p.layers.max(1);
    for j in 0..p.layers.saturating_sub(1) {
        let kv = (g.kv_prefill as u128 * (j + 1) as u128 / layers as u128) as u64;
        let alive = at(kv, am.infer_persistent, am.infer_layer_peak);
        sink.push(ev(fwd, Some(j), "prefill forward", Pass::Step, false, alive));
    }
    let alive = at(g.kv_prefill, am.infer_persistent, am.infer_layer_peak);
    sink.push(ev(fwd, None, "prefill: last block forward", Pass::Step, true, alive));
    // a 4-bit head dequantizes its weight over the prompt's rows before the logits exist
    let dequantizing = g.prefill_hidden + am.head_dequant;
    let what = if dequantizing > g.prefill_head() {
        "prefill: the 4-bit LM head dequantizing its weight"
    } else {
        "prefill: LM head (last token's logits) and their fp32 copy"
    };
    let prefill_head = g.prefill_head().max(dequantizing);
    sink.push(ev(fwd, None, what, Pass::Step, true, at(g.kv_prefill, 0, prefill_head)));
    // a decode step of one row runs bitsandbytes' gemv_4bit (nothing dequantized); of several
    // rows, every 4-bit matmul dequantizes its weight again
    let (layer_dq, head_dq) = if p.sc.batch > 1 { (am.layer_dequant, am.head_dequant) } else { (0, 0) };
    if g.new_tokens > 1 {
        let what = if g.decode_attention > g.cat_transient {
            "decode (last step): a layer's attention over the whole cache (scores, K/V repeated to every head)"
        } else {
            "decode (last step): torch.cat of a layer's cache (its old and new keys/values)"
        };
        sink.push(ev(fwd, None, what, Pass::Step, true, at(g.kv_final, 0, g.decode_layer() + layer_dq)));
        let what = "decode (last step): logits and two fp32 copies";
        let head = g.decode_head().max(g.logits_fp32 + g.ids + head_dq);
        sink.push(ev(fwd, None, what, Pass::Step, true, at(g.kv_final, 0, head)));
    }
}
