//! A training step's events, phase by phase: the forward block by block (op by op for the
//! timeline), the head and the loss, the head's backward, the blocks' backward from the last
//! (with checkpoint recomputes and the calibrated moments), the gradient reduction, the optimizer
//! step and `zero_grad`.

use super::{
    Event, Ops, Parts, Pass, Sink, checkpointed, checkpointed_prefix, ev, free_ops, ops_of, scaled,
    stored_all, stored_saves,
};
use crate::engine::inputs::saved::Cat;
use crate::engine::ops::Pieces;
use crate::estimate::{Checkpointing, Phase, Snapshot};

const FWD: Phase = Phase::Forward;
const BWD: Phase = Phase::Backward;

/// What the phases of one training step share.
struct Train<'p, 'a> {
    p: &'p Parts<'a>,
    /// Parameters, optimizer states and the gradients alive from the step's start.
    base: Snapshot,
    /// Gradients accumulated (or zeroed in place) are alive from the step's start: backward sums
    /// each new gradient into its tensor and frees it, so they never grow.
    persist: bool,
    /// The sink wants per-op events (the timeline).
    detail: bool,
    /// Op records of each kind of block, walked once.
    kinds: Vec<(u8, Ops)>,
    /// `checkpoint_sequential`: blocks per segment (1 otherwise).
    segments: bool,
    seg_len: u64,
    /// Autocast's weight cache under checkpointing: the half copy of a block's weights.
    autocast_cache: bool,
    cast_per_block: u64,
    /// What each block keeps when it is not checkpointed (or once recomputed), block by block.
    stored: Vec<u64>,
    /// What each block's forward kept.
    block_fwd: Vec<u64>,
    /// The autocast cache at the end of the forward.
    cache: u64,
}

/// DeepSpeed ZeRO 1/2's reduction buckets: made as the backward starts, freed at its end.
struct ZeroBackward<'s, S> {
    inner: &'s mut S,
    bytes: u64,
}

impl<S: Sink> Sink for ZeroBackward<'_, S> {
    fn detail(&self) -> bool {
        self.inner.detail()
    }
    fn push(&mut self, mut e: Event) {
        if e.phase == BWD {
            e.alive.zero_buckets += self.bytes;
        }
        self.inner.push(e);
    }
    fn persistent_gradients(&mut self, bytes: u64) {
        self.inner.persistent_gradients(bytes);
    }
}

/// The gradients and activations the blocks' backward starts from.
#[derive(Clone, Copy)]
struct AfterHead {
    grads: u64,
    /// Saves left once the head and the loss ran backward.
    acts: u64,
    head_grads: u64,
}

/// Runs the training step's events into `sink`.
pub(super) fn train(p: &Parts, sink: &mut impl Sink) {
    let sink = &mut ZeroBackward { inner: sink, bytes: p.st.zero_buckets_backward };
    let mut t = Train::new(p, sink.detail());
    if t.persist {
        sink.persistent_gradients(p.st.grad_alloc);
    }
    t.forward(sink);
    t.head_forward(sink);
    let start = t.head_backward(sink);
    let grads = t.blocks_backward(sink, start);
    t.finish(sink, grads);
}

impl<'p, 'a> Train<'p, 'a> {
    fn new(p: &'p Parts<'a>, detail: bool) -> Self {
        let (sc, st, am) = (p.sc, &p.st, &p.am);
        // a pipeline's micro-batches accumulate too: from the second one's backward on, the
        // stage's gradients exist while later micro-batches run forward and backward
        let pipelined = sc.parallel.pp > 1 && sc.parallel.micro_batches() > 1;
        let persist = sc.stack.grads_persist() || (pipelined && !sc.stack.optimizer_in_backward);
        let base = super::step_base(st, persist);
        let ck = sc.checkpointing;
        let layers = p.layers;
        // autocast caches only the casts of fp32 leaf tensors that require grad (`cached_cast`'s
        // `arg.requires_grad() && arg.is_leaf() && !arg.is_view()`): the trained weights of a
        // full fine-tune, not a LoRA run's frozen base (its adapters' casts are not counted) nor
        // FSDP1's views of a flat parameter
        let cached_casts = sc.lora.is_none() && !crate::estimate::fsdp::fsdp1(sc);
        Self {
            p,
            base,
            persist,
            detail,
            kinds: Vec::new(),
            segments: matches!(ck, Checkpointing::Segments(_)),
            seg_len: match ck {
                Checkpointing::Segments(n) => (layers / n.clamp(1, layers.max(1))).max(1),
                _ => 1,
            },
            autocast_cache: sc.precision.is_amp() && p.recompute.checkpointed_blocks > 0,
            cast_per_block: if cached_casts { am.full_layer.get(Cat::WeightCasts) } else { 0 },
            // every block's saves are read once or twice (forward, recompute, backward): one
            // lookup each
            stored: stored_all(p),
            block_fwd: Vec::new(),
            cache: 0,
        }
    }

    /// What block `j` keeps when it is not checkpointed ([`stored_saves`]).
    fn stored(&self, j: u64) -> u64 {
        self.stored.get(j as usize).copied().unwrap_or_else(|| stored_saves(self.p, j))
    }

    /// What is alive: the base with these activations, gradients and temporaries.
    fn with(&self, acts: u64, grads: u64, temp: u64) -> Snapshot {
        Snapshot { activations: acts, gradients: grads, temporaries: temp, ..self.base }
    }

    /// The forward: the embedding, then each block adds what it keeps (a checkpointed block only
    /// its input).
    fn forward(&mut self, sink: &mut impl Sink) {
        let p = self.p;
        let (layers, stage) = (p.layers, &p.stage);
        let grads = self.base.gradients;
        if stage.first() && p.spec.is_some() {
            sink.push(ev(FWD, None, "embedding", Pass::Step, false, self.with(p.top_input, grads, 0)));
        }
        let (mut shared_stored, mut shared_ckpt) = (false, false);
        let (mut cum, mut cache) = (0u64, 0u64);
        let mut block_fwd = Vec::with_capacity(layers.min(1 << 16) as usize);
        let mut kinds = std::mem::take(&mut self.kinds);
        for j in 0..layers {
            let saves = if checkpointed(p.sc.checkpointing, layers, j) {
                if self.autocast_cache {
                    cache += self.cast_per_block;
                }
                self.checkpointed_input(j, &mut shared_ckpt)
            } else {
                let b = self.stored(j)
                    + if std::mem::replace(&mut shared_stored, true) { 0 } else { p.am.shared_layer_bytes };
                if self.detail {
                    self.op_forward_events(sink, &mut kinds, (j, b), cum, cache);
                }
                b
            };
            block_fwd.push(saves);
            let fwd_t = p.am.block_forward_transient;
            if fwd_t > 0 && (self.detail || j + 1 == layers) {
                // the block's no-grad working set (DeepSeek-V3.2's indexer, after q, k and v)
                // beside what the blocks before it keep and what it kept up to its attention
                let own = saves.saturating_sub(p.am.freed_before_attention_backward);
                let a = p.top_input + scaled(cum + own, stage.in_flight).min(p.blocks_total);
                let what = "sparse-attention indexer (no grad)";
                sink.push(ev(FWD, Some(j), what, Pass::Step, false, self.with(a + cache, grads, fwd_t)));
            }
            cum += saves;
            // the forward only adds: its block events stay below the last one (the estimator's
            // walk skips them)
            if self.detail || j + 1 == layers {
                // the last block lands on the estimator's composed total (pipeline in-flight
                // scaling rounds per category there: the running sum never passes it)
                let a = if j + 1 == layers {
                    p.top_input + p.blocks_total
                } else {
                    p.top_input + scaled(cum, stage.in_flight).min(p.blocks_total)
                };
                sink.push(ev(FWD, Some(j), "forward", Pass::Step, false, self.with(a + cache, grads, 0)));
            }
        }
        (self.block_fwd, self.cache, self.kinds) = (block_fwd, cache, kinds);
    }

    /// What checkpointed block `j` keeps: its input (once a segment under
    /// `checkpoint_sequential`), the tensors every checkpointed block shares once.
    fn checkpointed_input(&self, j: u64, shared_ckpt: &mut bool) -> u64 {
        if self.segments && !j.is_multiple_of(self.seg_len) {
            0
        } else {
            let am = &self.p.am;
            let input =
                if j == 0 && self.p.stage.first() { am.first_input_bytes } else { am.layer_input_bytes };
            input + if std::mem::replace(shared_ckpt, true) { 0 } else { am.shared_checkpoint_bytes }
        }
    }

    /// Block `j`'s ops one by one, each adding what it keeps (up to the block's `block` bytes on
    /// top of the `cum` kept before it, beside autocast's `cache`): the timeline's per-op forward.
    fn op_forward_events(
        &self,
        sink: &mut impl Sink,
        kinds: &mut Vec<(u8, Ops)>,
        (j, block): (u64, u64),
        cum: u64,
        cache: u64,
    ) {
        let p = self.p;
        if p.sc.checkpointing == Checkpointing::Selective {
            return;
        }
        let mut kept = 0;
        for r in ops_of(p, kinds, j).iter().filter(|r| r.kept_bytes > 0) {
            kept = (kept + r.kept_bytes).min(block);
            let a = p.top_input + scaled(cum + kept, p.stage.in_flight).min(p.blocks_total);
            let alive = self.with(a + cache, self.base.gradients, 0);
            sink.push(Event { tensors: r.tensors, ..ev(FWD, Some(j), r.op, Pass::OpForward, false, alive) });
        }
    }

    /// The loss's forward on the last stage, and the end of the forward under autocast's cache.
    fn head_forward(&self, sink: &mut impl Sink) {
        let (p, am) = (self.p, &self.p.am);
        let acts = p.activations;
        let grads = self.base.gradients;
        if p.stage.last() {
            // the loss runs with the logits (and their fp32 copy, or the chunks' and one chunk's
            // fp32 copy) alive beside what it saves; transformers' causal-LM loss
            // (`logits.float()`) peaks later, at the loss backward, but its forward makes those
            // tensors (the allocator's cache keeps their blocks); a 4-bit head (Lightning's
            // plugin) dequantizes its weight before the logits exist
            let chunked = p.sc.stack.loss != crate::estimate::stack::Loss::Hf;
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
                ..ev(FWD, None, what, Pass::Step, false, self.with(acts + self.cache, grads, temp))
            });
        }
        if self.autocast_cache {
            // autocast caches the half copy of every weight until the autocast region ends;
            // inside checkpointed blocks they are not saved, but the cache still holds them at
            // the loss
            let cached = p.recompute.checkpointed_blocks * self.cast_per_block;
            let temp = if p.stage.last() { am.head_forward_transient } else { 0 };
            let what = "end of forward (autocast weight cache)";
            sink.push(Event {
                pieces: am.head_pieces.forward,
                ..ev(FWD, None, what, Pass::Step, true, self.with(acts + cached, grads, temp))
            });
        }
    }

    /// Gradients that do not add up in backward: stepped and freed (optimizer in backward) or
    /// summed into the accumulated ones (the new gradient is then a transient).
    fn flat(&self) -> bool {
        self.p.sc.stack.optimizer_in_backward || self.persist
    }

    /// The loss's and the LM head's backward on the last stage.
    fn head_backward(&self, sink: &mut impl Sink) -> AfterHead {
        let (p, am, st) = (self.p, &self.p.am, &self.p.st);
        let (acts, base_grads) = (p.activations, self.base.gradients);
        let last = p.stage.last();
        if last {
            let what = if p.sc.stack.compiled_loss {
                "loss backward (compiled cross-entropy)"
            } else {
                "loss and log-softmax backward"
            };
            sink.push(Event {
                pieces: am.head_pieces.loss_backward,
                ..ev(
                    BWD,
                    None,
                    what,
                    Pass::Step,
                    true,
                    self.with(acts, base_grads, am.loss_backward_transient),
                )
            });
        }
        let head_grads = if last { st.head_grad_alloc } else { 0 };
        let head_released = if last { am.head_released_bytes } else { 0 };
        let after_head = acts - head_released.min(acts);
        let grads = base_grads + if self.flat() { 0 } else { head_grads };
        if last && p.spec.is_some() && am.head_chunk_sum_transient > 0 {
            // a chunked head: the second chunk's weight gradient summed in the engine's buffer,
            // before any head gradient reaches `.grad` (nothing stepped yet in backward)
            let what = "LM head backward: a chunk's weight gradient summed";
            let a = after_head + am.head_chunk_kept.min(acts - after_head);
            sink.push(Event {
                pieces: am.head_pieces.chunk_sum,
                ..ev(BWD, None, what, Pass::Step, true, self.with(a, base_grads, am.head_chunk_sum_transient))
            });
        }
        if last && p.spec.is_some() {
            let temp = match (p.sc.stack.optimizer_in_backward, self.persist) {
                (true, _) => st.largest_grad_alloc + st.largest_step_temp,
                (_, true) => head_grads,
                _ => 0,
            };
            // a 4-bit head dequantizes its weight again for the input's gradient
            let temp = temp.max(am.head_dequant);
            // the head's gradient (or its summand, its step's temporary, its dequantized
            // weight): a tensor of its own, not a block's transient
            sink.push(Event {
                pieces: Pieces::of(temp, 1),
                ..ev(BWD, None, "LM head backward", Pass::Step, false, self.with(after_head, grads, temp))
            });
        }
        AfterHead { grads, acts: after_head, head_grads }
    }
}

/// What every block's backward shares (resolved once, copied into the loop).
#[derive(Clone, Copy)]
struct BlockBackward {
    /// A block's MLP and attention backward transients, with `per_param`.
    mlp_t: u64,
    attn_t: u64,
    /// What a block frees before its attention runs backward.
    freed_attn: u64,
    /// Gradients a block adds once done (0 when they do not add up).
    block_grads: u64,
    /// Gradients a block holds before its attention runs backward (its MLP's).
    grads_before_attention: u64,
    /// Gradients of one block.
    per_block: u64,
    /// One parameter's gradient and step temporary beside the transients (optimizer in
    /// backward), or its new gradient (accumulation).
    per_param: u64,
    /// Where the estimator's calibrated moments sit: the recompute of an earlier checkpointed
    /// block, the first checkpointed segment.
    earlier_at: Option<u64>,
    first_at: Option<u64>,
}

impl Train<'_, '_> {
    fn block_backward(&self, start: AfterHead) -> BlockBackward {
        let (p, st) = (self.p, &self.p.st);
        let (layers, ck, rc) = (p.layers, p.sc.checkpointing, &p.recompute);
        let embed = if p.stage.first() { st.embed_grad_alloc } else { 0 };
        let per_block = st.grad_alloc.saturating_sub(start.head_grads + embed) / layers.max(1);
        let (grads_before_attention, block_grads) =
            if self.flat() { (0, 0) } else { (st.grads_before_attention, per_block) };
        let per_param = match (p.sc.stack.optimizer_in_backward, self.persist) {
            (true, _) => st.largest_grad_alloc.min(per_block) + st.largest_step_temp,
            (_, true) => st.largest_grad_alloc.min(per_block),
            _ => 0,
        };
        let am = &p.am;
        BlockBackward {
            mlp_t: am.mlp_backward_transient + per_param,
            attn_t: am.attention_backward_transient + per_param,
            freed_attn: am.freed_before_attention_backward,
            block_grads,
            grads_before_attention,
            per_block,
            per_param,
            earlier_at: rc.earlier.map(|_| match ck {
                Checkpointing::Every(k) => layers.saturating_sub(1) / k.max(1) * k.max(1),
                _ => checkpointed_prefix(ck, layers).saturating_sub(1),
            }),
            first_at: rc.first.filter(|_| layers > 1).map(|(seg, _)| seg.saturating_sub(1)),
        }
    }

    /// The last block's MLP and attention backward (the estimator's calibrated moments).
    fn last_block(&self, start: AfterHead, b: BlockBackward, grads: u64) -> (Event, Event) {
        let (mlp_t, attn_t, freed_attn) = (b.mlp_t, b.attn_t, b.freed_attn);
        let a = start.acts + self.p.recompute.at_last_block;
        (
            ev(BWD, None, "last block MLP backward", Pass::Step, true, self.with(a, grads, mlp_t)),
            ev(
                BWD,
                None,
                "last block attention backward",
                Pass::Step,
                true,
                self.with(a - freed_attn.min(a), grads + b.grads_before_attention, attn_t),
            ),
        )
    }

    /// The first checkpointed segment's MLP and attention backward, run last: every later
    /// block's gradients exist, the embedding's (when untied) not yet.
    fn first_segment(
        &self,
        start: AfterHead,
        b: BlockBackward,
        seg_blocks: u64,
        recomputed: u64,
    ) -> (Event, Event) {
        let (p, am) = (self.p, &self.p.am);
        let (mlp_t, attn_t) = (am.mlp_backward_transient, am.attention_backward_transient);
        let input = if p.stage.first() { p.top_input } else { 0 };
        let a = input + am.layer_input_bytes + recomputed;
        let base = self.base.gradients;
        let g = if self.flat() {
            base
        } else {
            base + start.head_grads + b.per_block * (p.layers - seg_blocks.min(p.layers))
        };
        let g_attn = (g + b.grads_before_attention).min(base + p.st.grad_alloc);
        let freed_attn = am.freed_before_attention_backward;
        let mlp = "first block MLP backward (recomputed)";
        let attn = "first block attention backward (recomputed)";
        (
            ev(BWD, None, mlp, Pass::Step, true, self.with(a, g, mlp_t + b.per_param)),
            ev(
                BWD,
                None,
                attn,
                Pass::Step,
                true,
                self.with(a - freed_attn.min(a), g_attn, attn_t + b.per_param),
            ),
        )
    }

    /// Every block's backward from the last; returns the gradients alive at the end. Kept out of
    /// the step's other phases (inlined into one function they spill the loop's state: a
    /// 100-block hybrid's estimate took 4.0 µs instead of 3.2 µs).
    #[inline(never)]
    fn blocks_backward(&mut self, sink: &mut impl Sink, start: AfterHead) -> u64 {
        let b = self.block_backward(start);
        let (layers, ck) = (self.p.layers, self.p.sc.checkpointing);
        // the op records (timeline only) are the one thing the loop changes
        let mut kinds = std::mem::take(&mut self.kinds);
        let mut grads = start.grads;
        // `acts`: what the forward kept and is not freed yet; `rec`: recomputed saves alive
        let (mut acts, mut rec) = (start.acts, 0u64);
        for j in (0..layers).rev() {
            let ckj = checkpointed(ck, layers, j);
            let recomputes = !self.segments
                || j % self.seg_len == self.seg_len - 1
                || j + 1 == checkpointed_prefix(ck, layers);
            if ckj && recomputes {
                rec = self.recompute(sink, start, b, j, acts, grads);
            }
            (acts, rec) =
                self.block_backward_events(sink, (start, b), &mut kinds, (j, ckj), (acts, rec), grads);
            grads += b.block_grads;
            // a finished block holds what the next block's MLP backward starts from, without
            // its transient: only the last one (block 0) can be a maximum
            if self.detail || j == 0 {
                sink.push(ev(
                    BWD,
                    Some(j),
                    "backward done",
                    Pass::Step,
                    false,
                    self.with(acts + rec, grads, 0),
                ));
            }
        }
        if layers == 0 {
            // a layer table: the whole model runs backward as one block
            let (mlp, attn) = self.last_block(start, b, grads);
            sink.push(mlp);
            sink.push(attn);
        }
        self.kinds = kinds;
        grads
    }

    /// Backward reaches a checkpointed block (or `checkpoint_sequential`'s segment): its forward
    /// runs again and keeps everything. Returns the recomputed saves.
    fn recompute(
        &self,
        sink: &mut impl Sink,
        start: AfterHead,
        b: BlockBackward,
        j: u64,
        acts: u64,
        grads: u64,
    ) -> u64 {
        let p = self.p;
        let am = &p.am;
        let from = if self.segments { j + 1 - self.seg_len.min(j + 1) } else { j };
        let rec: u64 = if self.segments { (from..=j).map(|i| self.stored(i)).sum() } else { self.stored(j) };
        if Some(j) == b.earlier_at
            && let Some((freed, recomputed)) = p.recompute.earlier
        {
            let a = start.acts - freed.min(start.acts) + recomputed;
            let what = "recompute of a checkpointed block";
            let g = grads.min(self.base.gradients + start.head_grads);
            let temp = am.mlp_backward_transient.max(am.attention_backward_transient);
            sink.push(ev(BWD, None, what, Pass::Step, true, self.with(a, g, temp)));
        }
        // the recomputed forward's no-grad working set (DeepSeek-V3.2's indexer) comes after
        // the block's saves up to its attention
        let fwd_t = am.block_forward_transient;
        if fwd_t > 0 {
            let what = "recompute: sparse-attention indexer (no grad)";
            let before = acts + rec - am.freed_before_attention_backward.min(rec);
            sink.push(ev(BWD, Some(j), what, Pass::Step, false, self.with(before, grads, fwd_t)));
        }
        // the block's MLP backward comes next with the same tensors and its transient: a sink
        // without detail (the maximum) needs this moment only before the last block's or the
        // first segment's calibrated moments
        if self.detail || j + 1 == p.layers || Some(j) == b.first_at {
            sink.push(ev(BWD, Some(j), "recompute", Pass::Step, false, self.with(acts + rec, grads, 0)));
        }
        rec
    }

    /// Block `j`'s MLP and attention backward (and its ops' frees for the timeline); returns
    /// the forward's saves and the recomputed ones still alive once it is done.
    fn block_backward_events(
        &self,
        sink: &mut impl Sink,
        (start, b): (AfterHead, BlockBackward),
        kinds: &mut Vec<(u8, Ops)>,
        (j, ckj): (u64, bool),
        (acts, rec): (u64, u64),
        grads: u64,
    ) -> (u64, u64) {
        let p = self.p;
        let live = acts + rec;
        let own = if ckj { self.stored(j) } else { self.block_fwd[j as usize] };
        let after = if ckj {
            (acts.saturating_sub(self.block_fwd[j as usize]), rec.saturating_sub(own))
        } else {
            (acts.saturating_sub(own), rec)
        };
        let (mlp, attn) = if j + 1 == p.layers {
            self.last_block(start, b, grads)
        } else if Some(j) == b.first_at
            && let Some((seg_blocks, recomputed)) = p.recompute.first
        {
            self.first_segment(start, b, seg_blocks, recomputed)
        } else {
            let a = live - b.freed_attn.min(own);
            let g_attn = grads + b.grads_before_attention.min(b.per_block);
            (
                ev(BWD, Some(j), "MLP backward", Pass::Step, false, self.with(live, grads, b.mlp_t)),
                ev(BWD, Some(j), "attention backward", Pass::Step, false, self.with(a, g_attn, b.attn_t)),
            )
        };
        sink.push(mlp);
        let ops = if self.detail { ops_of(p, kinds, j) } else { Vec::new() };
        let core = ops.iter().rposition(|r| r.op == "attention");
        // the ops after the attention core run backward first, freeing what they kept
        if let Some(at) = core {
            free_ops(sink, j, &ops[at + 1..], mlp.alive, attn.alive.activations);
        }
        sink.push(attn);
        if let Some(at) = core {
            free_ops(sink, j, &ops[..=at], attn.alive, after.0 + after.1);
        }
        // the block is done: what it kept (or its input and the recomputed saves) is freed and
        // all its weight gradients exist
        after
    }

    /// The end of backward (gradient reduction), the optimizer step and `zero_grad`.
    fn finish(&self, sink: &mut impl Sink, grads: u64) {
        let (p, st) = (self.p, &self.p.st);
        let step = Phase::OptimizerStep;
        if p.sc.stack.optimizer_in_backward {
            let what = "end of backward (every parameter stepped)";
            sink.push(ev(BWD, None, what, Pass::Step, false, self.with(0, grads, 0)));
            sink.push(ev(
                step,
                None,
                "optimizer steps ran in backward",
                Pass::Step,
                false,
                self.with(0, grads, 0),
            ));
            return;
        }
        let base = self.base.gradients;
        let all_grads = if self.persist { base } else { base + st.grad_alloc };
        let what = if p.sc.parallel.dp > 1 || p.sc.parallel.effective_zero() > 0 {
            "end of backward (gradients reduced across data-parallel ranks)"
        } else {
            "end of backward"
        };
        // the embedding's new gradient is summed into the accumulated one last
        let embed = if p.stage.first() { st.embed_grad_alloc } else { 0 };
        let embed_temp = if self.persist { embed } else { 0 };
        sink.push(Event {
            pieces: Pieces::of(embed_temp, 1),
            ..ev(BWD, None, what, Pass::Step, false, self.with(0, all_grads, embed_temp))
        });
        let temp = st.optimizer_step_temp;
        sink.push(ev(step, None, "optimizer step", Pass::Step, true, self.with(0, all_grads, temp)));
        if p.sc.stack.keep_grads {
            let what = "zero_grad (set_to_none=False: zeroed in place, kept)";
            sink.push(ev(step, None, what, Pass::Step, false, self.with(0, all_grads, 0)));
        } else {
            let freed = all_grads - st.grad_alloc.min(all_grads);
            let what = if self.persist {
                "zero_grad (set_to_none) after the last micro-batch"
            } else {
                "zero_grad (set_to_none)"
            };
            sink.push(ev(step, None, what, Pass::Step, false, self.with(0, freed, 0)));
        }
    }
}
