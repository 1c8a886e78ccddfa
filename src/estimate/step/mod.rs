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
use super::states::States;
use super::{Checkpointing, Mode, Moment, Phase, Recompute, Scenario, Snapshot, blocks_saved};
use crate::i18n::Lang;
use train::train;

pub(crate) mod net;
mod train;

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
    /// The event at the maximum so far, as a moment, with its total.
    pub max: Option<(Moment, u64)>,
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
        let total = e.alive.total();
        self.phases.raise(e.phase, total);
        // ties go to the later event (the peak is where memory last reaches its maximum)
        if self.max.is_none_or(|m| total >= m.1) {
            self.max = Some((e.moment(), total));
        }
    }
}

impl Peak {
    /// The peak as a moment, listed among the moments when it is a block-level one.
    pub fn finish(mut self) -> (Moment, Vec<Moment>, PhasePeaks) {
        let peak = self.max.map_or(
            Moment { phase: Phase::Forward, what: "", block: None, alive: Snapshot::default() },
            |m| m.0,
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
    /// A convolutional backbone's ops and their walk (its step runs op by op).
    pub net: Option<&'a net::NetParts>,
}

/// What a training step holds from its start: parameters, optimizer states, DDP's buckets,
/// ZeRO's step buckets, and the gradients when they persist across micro-batches.
fn step_base(st: &super::states::States, persist: bool) -> Snapshot {
    Snapshot {
        parameters: st.param_alloc,
        optimizer_states: st.optimizer_alloc,
        gradients: st.ddp_bucket_alloc + if persist { st.grad_alloc } else { 0 },
        zero_buckets: st.zero_buckets_step,
        ..Snapshot::default()
    }
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
    if let Some(n) = p.net {
        return net::walk(p, n, sink);
    }
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
        (true, 0, false) => am.first_layer.total(),
        _ => match p.spec {
            Some(t) => {
                am.mix.total_of(crate::engine::walk::layer_flags(t, j), selective).unwrap_or_else(|| {
                    if selective { am.selective_layer.total() } else { am.full_layer.total() }
                })
            }
            None => blocks_saved(p.sc, am, j, j + 1, selective).total(),
        },
    }
}

/// [`stored_saves`] of the stage's blocks, in order (the first 65,536: past them, [`stored_saves`]
/// is asked block by block).
fn stored_all(p: &Parts) -> Vec<u64> {
    let n = p.layers.min(1 << 16);
    let am = &p.am;
    let mut out: Vec<u64> = match p.spec {
        // blocks of several kinds: each block's kind looked up in the kinds' totals
        Some(t) if am.mix.n > 1 => {
            let selective = p.sc.checkpointing == Checkpointing::Selective;
            let other = if selective { am.selective_layer.total() } else { am.full_layer.total() };
            let flags = &t.layer_flags[..t.layer_flags.len().min(n as usize)];
            let mut v: Vec<u64> =
                flags.iter().map(|&f| am.mix.total_of(f, selective).unwrap_or(other)).collect();
            v.extend((flags.len() as u64..n).map(|j| stored_saves(p, j)));
            v
        }
        // blocks alike: every block keeps what block 1 keeps
        Some(_) => vec![stored_saves(p, 1); n as usize],
        None => (0..n).map(|j| stored_saves(p, j)).collect(),
    };
    if let Some(first) = out.first_mut() {
        *first = stored_saves(p, 0);
    }
    out
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

/// What is alive in inference: the parameters, the KV cache, the activations and a transient.
fn infer_alive(p: &Parts, kv: u64, acts: u64, temp: u64) -> Snapshot {
    Snapshot {
        parameters: p.st.param_alloc,
        kv_cache: kv,
        activations: acts,
        temporaries: temp,
        ..Snapshot::default()
    }
}

/// An inference forward block by block, each appending its keys and values to the cache as it
/// runs, up to `kv` after the last; `names`: the embedding's, a block's and the last block's events.
fn forward_blocks(p: &Parts, sink: &mut impl Sink, kv: u64, names: [&'static str; 3]) {
    let am = &p.am;
    let fwd = Phase::Forward;
    let [embedding, block, last] = names;
    sink.push(ev(fwd, None, embedding, Pass::Step, false, infer_alive(p, 0, am.infer_persistent, 0)));
    let layers = p.layers.max(1);
    for j in 0..p.layers.saturating_sub(1) {
        let kv_j = (kv as u128 * (j + 1) as u128 / layers as u128) as u64;
        let alive = infer_alive(p, kv_j, am.infer_persistent, am.infer_layer_peak);
        sink.push(ev(fwd, Some(j), block, Pass::Step, false, alive));
    }
    // the last block (a layer table's whole forward), with every block's KV cache
    let alive = infer_alive(p, kv, am.infer_persistent, am.infer_layer_peak);
    sink.push(ev(fwd, None, last, Pass::Step, true, alive));
}

fn infer(p: &Parts, sink: &mut impl Sink) {
    if let Some(g) = &p.generate {
        return generate(p, g, sink);
    }
    let am = &p.am;
    let fwd = Phase::Forward;
    let at = |kv, acts, temp| infer_alive(p, kv, acts, temp);
    let names = ["embedding", "forward", "last block forward"];
    forward_blocks(p, sink, p.kv_cache, names);
    // only the last pipeline stage runs the head; the others send their last block's output on
    if p.stage.last() {
        sink.push(ev(fwd, None, "LM head (logits)", Pass::Step, true, at(p.kv_cache, 0, am.infer_head_peak)));
    }
}

/// HF `generate`: the prompt's forward block by block (as [`infer`]) with only the last token's
/// logits, then the last decode step, where the cache is longest.
fn generate(p: &Parts, g: &super::generate::Terms, sink: &mut impl Sink) {
    let am = &p.am;
    let fwd = Phase::Forward;
    let at = |kv, acts, temp| infer_alive(p, kv, acts, temp);
    let names = ["prefill: embedding", "prefill forward", "prefill: last block forward"];
    forward_blocks(p, sink, g.kv_prefill, names);
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
