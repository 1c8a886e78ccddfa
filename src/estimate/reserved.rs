//! What the caching allocator reserves: the step's events replayed through [`crate::alloc`].
//!
//! The timeline says what is alive, by category, event by event. The replay turns each change
//! into tensor allocations and frees the way the step makes them, and feeds them to the model of
//! PyTorch's `CUDACachingAllocator`:
//!
//! * **parameters** are loaded first, one tensor per parameter (sizes from the model's parameter
//!   groups, scaled to this rank's share);
//! * **activations** grow by what each op keeps (one allocation per op event) and shrink last-in
//!   first-out, as backward frees them;
//! * **gradients** are allocated tensor by tensor in the order backward produces them and freed
//!   by `zero_grad(set_to_none=True)`; under FSDP1 a wrapped unit's gradient is one tensor, its
//!   `FlatParameter`'s (the views' gradients, made one by one, are concatenated into it when the
//!   unit's backward is done: [`flat_grad_units`]);
//! * **optimizer states** do not exist during the first step: they are allocated, two per
//!   trainable tensor, when it reaches `optimizer.step()` — into whatever the freed activations
//!   left in the cache, which is why a first step can leave the next ones without room;
//! * **temporaries** of an event are allocated at it and freed before the next one (the
//!   optimizer's per-tensor lists tensor by tensor).
//!
//! Three steps are replayed (the first, then two steady ones); `max_memory_reserved` is the
//! replay's peak of reserved bytes, and the last step's reserved bytes are returned event by event
//! for the timeline. The cuBLAS workspace is one allocation made at the first matmul.

use super::activations::Pieces;
use super::step::{Event, Pass, Timeline};
use super::{Mode, Phase, Scenario, Snapshot};
use crate::alloc::{Allocator, Config};

/// What the replay found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reserved {
    /// `torch.cuda.max_memory_reserved()` over the replayed steps.
    pub peak_reserved: u64,
    /// `torch.cuda.max_memory_allocated()` of the replay (the timeline's maximum plus the
    /// workspace, up to the per-tensor splitting).
    pub peak_allocated: u64,
    /// Reserved bytes after each event of the last (steady) step, aligned with the timeline.
    pub per_event: Vec<u64>,
    /// Reserved bytes once the parameters are loaded (before the first step).
    pub after_load: u64,
    /// Segments held at the end.
    pub segments: u64,
    /// `cudaMalloc` calls.
    pub cuda_mallocs: u64,
    /// Requests that failed even after the cache was released (the step does not fit).
    pub ooms: u64,
    /// Allocations that had to release the cache and retry.
    pub alloc_retries: u64,
}

/// Tensors of one category: a stack of (id, bytes), with the sizes new ones take.
struct Pool {
    live: Vec<(u32, u64)>,
    bytes: u64,
    sizes: Vec<u64>,
    cursor: usize,
}

impl Pool {
    fn new(sizes: Vec<u64>) -> Self {
        Self { live: Vec::new(), bytes: 0, sizes, cursor: 0 }
    }

    /// The largest total up to `target` that whole tensors reach: the live ones (the newest
    /// dropped first), then new ones of the pool's sizes.
    fn whole(&self, target: u64) -> u64 {
        let mut b = self.bytes;
        if target <= b {
            for &(_, s) in self.live.iter().rev() {
                if b <= target {
                    break;
                }
                b -= s;
            }
            return b;
        }
        if self.sizes.is_empty() {
            return target;
        }
        let mut k = self.cursor;
        loop {
            let s = self.sizes[k % self.sizes.len()].max(512);
            if b + s > target {
                return b;
            }
            b += s;
            k += 1;
        }
    }
}

/// The categories of a replay, each a pool of tensors.
struct Pools {
    params: Pool,
    grads: Pool,
    /// Under FSDP1: the gradients of the unit whose backward runs, before they are concatenated
    /// into the unit's flat gradient (`grads` then holds whole units only).
    pieces: Option<Pool>,
    states: Pool,
    acts: Pool,
    kv: Pool,
    /// DeepSpeed ZeRO's reduction buckets, each of its configured size.
    zero: Pool,
    /// The largest tensor one op of a block keeps (the largest change of the activations at an
    /// op event): the size a block's transients are allocated in.
    op_tensor: u64,
}

impl Pools {
    /// Gradients at `bytes`: per tensor, or under FSDP1 whole units plus the running unit's
    /// pieces (the flat gradient is made before the pieces are freed).
    fn set_grads(&mut self, r: &mut Replay, bytes: u64) {
        match &mut self.pieces {
            None => r.set(&mut self.grads, bytes, true),
            Some(pieces) => {
                let whole = self.grads.whole(bytes);
                r.set(&mut self.grads, whole, true);
                r.set(pieces, bytes - whole, false);
            }
        }
    }
}

struct Replay {
    a: Allocator,
    next_id: u32,
}

impl Replay {
    fn alloc(&mut self, bytes: u64) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        // a failed request is counted by the allocator; the replay goes on as PyTorch would not
        let _ = self.a.malloc(id, bytes, 0);
        id
    }

    /// Allocates one tensor of `b` bytes into `p`.
    fn push(&mut self, p: &mut Pool, b: u64) {
        let id = self.alloc(b);
        p.live.push((id, b));
        p.bytes += b;
    }

    /// Grows `p` to `target`: one tensor of what `sizes` leave, then the tensors of `sizes` in
    /// their order (the one backward frees last comes first).
    fn grow(&mut self, p: &mut Pool, target: u64, sizes: &[u64]) {
        let need = target.saturating_sub(p.bytes);
        let listed: u64 = sizes.iter().sum();
        let mut left = need;
        if need > listed {
            self.push(p, need - listed);
            left = listed;
        }
        for &b in sizes {
            if left == 0 {
                break;
            }
            let b = b.min(left);
            self.push(p, b);
            left -= b;
        }
    }

    /// Grows or shrinks a category to `target` bytes, new bytes in tensors of `piece` and one of
    /// what they leave (0: one tensor), that one first when `rest_first`.
    fn set_in(&mut self, p: &mut Pool, target: u64, piece: u64, rest_first: bool) {
        if piece == 0 || target <= p.bytes {
            return self.set(p, target, false);
        }
        let need = target - p.bytes;
        let rest = need % piece;
        if rest_first && rest > 0 {
            self.push(p, rest);
        }
        for _ in 0..need / piece {
            self.push(p, piece);
        }
        if !rest_first && rest > 0 {
            self.push(p, rest);
        }
    }

    /// Grows or shrinks a category to `target` bytes. `chunked`: new bytes come as tensors of
    /// the pool's sizes (parameters, gradients, states); otherwise as one tensor.
    fn set(&mut self, p: &mut Pool, target: u64, chunked: bool) {
        while p.bytes > target {
            let Some((id, b)) = p.live.pop() else { break };
            self.a.free(id);
            let over = p.bytes - target;
            p.bytes -= b;
            if b > over {
                // part of this tensor stays: free it whole and keep the rest as a new one
                self.push(p, b - over);
            }
        }
        while p.bytes < target {
            let need = target - p.bytes;
            let b = if chunked && !p.sizes.is_empty() {
                let s = p.sizes[p.cursor % p.sizes.len()].max(512);
                p.cursor += 1;
                s.min(need)
            } else {
                need
            };
            self.push(p, b);
        }
    }
}

/// The tensors an event that adds activations makes, in the order it makes them: an op's
/// forward its saved storages one by one; a checkpointed block's recompute (a backward event
/// that adds activations) the storages the op events after it free, in reverse. The timeline adds
/// a recompute's saves in one event; as one allocation, a block-sized free block would be left
/// behind for a gradient to split, where PyTorch's recompute allocates op by op, storage by
/// storage. Aligned with `events`: a range into the returned sizes (empty for other events).
fn growth_tensors(events: &[Event]) -> (Vec<(u32, u32)>, Vec<u64>) {
    let mut ranges = vec![(0u32, 0u32); events.len()];
    let mut sizes = Vec::new();
    for i in 1..events.len() {
        let (e, before) = (&events[i], events[i - 1].alive.activations);
        if e.alive.activations <= before {
            continue;
        }
        let start = sizes.len();
        if e.pass == Pass::OpForward {
            sizes.extend(e.tensors.iter().copied().filter(|&b| b > 0));
        } else if e.phase == Phase::Backward {
            let added = e.alive.activations - before;
            let (mut prev, mut freed) = (e.alive.activations, 0u64);
            for f in &events[i + 1..] {
                if f.phase != Phase::Backward || f.block != e.block || f.alive.activations > prev {
                    break;
                }
                let d = prev - f.alive.activations;
                prev = f.alive.activations;
                if d == 0 {
                    continue;
                }
                // the op's storages when they are what it frees (reversed with the list below),
                // the frees of what was there before the recompute ending the list
                let whole: u64 = f.tensors.iter().sum();
                if whole == d {
                    for b in f.tensors.iter().rev().copied().filter(|&b| b > 0) {
                        if freed >= added {
                            break;
                        }
                        let b = b.min(added - freed);
                        sizes.push(b);
                        freed += b;
                    }
                } else {
                    let d = d.min(added - freed);
                    sizes.push(d);
                    freed += d;
                }
                if freed >= added {
                    break;
                }
            }
            sizes[start..].reverse();
        }
        ranges[i] = (start as u32, (sizes.len() - start) as u32);
    }
    (ranges, sizes)
}

/// Element counts of the parameter tensors and of the trainable ones (adapters under LoRA).
fn tensor_sizes(sc: &Scenario) -> (Vec<u64>, Vec<u64>) {
    let groups = sc.model.param_groups();
    let mut all = Vec::new();
    let mut trainable = Vec::new();
    let spec = sc.model.transformer();
    for g in &groups {
        let n = g.rows * g.cols;
        for _ in 0..g.count.min(1 << 16) {
            all.push(n);
            match (&sc.lora, spec) {
                (None, _) if !g.kind.is_frozen() => trainable.push(n),
                (Some(l), Some(t)) if super::states::adapted(l, t, g.kind) => {
                    all.push(l.rank * g.cols);
                    all.push(g.rows * l.rank);
                    trainable.push(l.rank * g.cols);
                    trainable.push(g.rows * l.rank);
                }
                _ => {}
            }
        }
    }
    (all, trainable)
}

/// Under FSDP1 each wrapped unit's gradient is one tensor: `split_with_sizes`' backward
/// concatenates the gradients of the unit's parameter views into its `FlatParameter`'s gradient
/// when the unit's backward is done. Element counts of the units whose gradients backward makes,
/// in that order: the blocks from the last (the frozen weights with the adapters when they share
/// the block's flat parameter, [`super::fsdp::block_weights_grad`]), then the root unit (the
/// embeddings, final norm and head, whose embedding gradient comes last). `None` where gradients
/// are per tensor: no FSDP1, and LoRA adapters in units of their own (PEFT's wrap policy).
fn flat_grad_units(sc: &Scenario) -> Option<Vec<u64>> {
    use crate::model::Scope;
    if sc.mode != Mode::Train || !super::fsdp::fsdp1(sc) || sc.parallel.pp > 1 {
        return None;
    }
    let shared = super::fsdp::block_weights_grad(sc);
    if sc.lora.is_some() && !shared {
        return None;
    }
    let t = sc.model.transformer()?;
    let (mut block, mut root) = (0u64, 0u64);
    for g in &sc.model.param_groups() {
        let mut n = if g.kind.is_frozen() { 0 } else { g.rows * g.cols * g.count };
        if let Some(l) = &sc.lora {
            if g.scope != Scope::Block {
                n = 0;
            }
            if super::states::adapted(l, t, g.kind) {
                n += l.rank * (g.rows + g.cols) * g.count;
            }
        }
        match g.scope {
            Scope::Block => block += n,
            Scope::Input | Scope::Output => root += n,
        }
    }
    let layers = t.num_layers.max(1);
    let mut units = vec![block / layers; layers.min(1 << 16) as usize];
    if root > 0 {
        units.push(root);
    }
    Some(units)
}

/// Scales element counts to tensor byte sizes summing to about `total` (the rank's share of a
/// category: dtype, sharding and quantization are in the total).
fn scaled(counts: &[u64], total: u64) -> Vec<u64> {
    let sum: u128 = counts.iter().map(|&n| n as u128).sum();
    if sum == 0 || total == 0 {
        return Vec::new();
    }
    // bytes per element: the total is the exact sizes rounded up to 512 B each, so a ratio
    // within 2 % of a power of two (4 B fp32, 2 B half, 0.25 B a quarter shard of half…) is that
    // power of two; tensor sizes then stay what PyTorch asks for (a 16 MiB tensor, not 16 MiB
    // and a few bytes, which would take an 18 MiB segment)
    let e = total as f64 / sum as f64;
    let p2 = 2f64.powi(e.log2().round() as i32);
    if (e / p2 - 1.0).abs() < 0.02 {
        return counts.iter().map(|&n| ((n as f64 * p2).ceil() as u64).max(1)).collect();
    }
    counts.iter().map(|&n| ((n as u128 * total as u128) / sum).max(1) as u64).collect()
}

/// Replays `tl`'s step through the caching allocator with `cfg` (capacity: what PyTorch may
/// take from the card) and `workspace` bytes of cuBLAS workspace.
pub fn replay(sc: &Scenario, tl: &Timeline, cfg: Config, workspace: u64) -> Reserved {
    let events = &tl.events;
    let Some(first) = events.first() else { return Reserved::default() };
    let (all, trainable) = tensor_sizes(sc);
    let base = first.alive;
    let mut r =
        Replay { a: Allocator::with_capacity_hint(cfg, events.len() * 8 + all.len() * 4), next_id: 0 };
    let grads_total = events.iter().map(|e| e.alive.gradients).max().unwrap_or(0);
    let units = flat_grad_units(sc);
    // backward produces gradients from the last parameters to the first
    let reversed: Vec<u64> = trainable.iter().rev().copied().collect();
    let states_total = base.optimizer_states;
    // two states a tensor, allocated one after the other (`_init_group`); an optimizer in
    // backward creates them in the first backward, as the gradients come (the last tensors first)
    let oib = sc.stack.optimizer_in_backward;
    let order = if oib { &reversed } else { &trainable };
    let doubled: Vec<u64> = order.iter().flat_map(|&n| [n, n]).collect();
    // a key and a value tensor per block
    let kv_tensors = 2 * sc.model.transformer().map_or(1, |t| t.num_layers.max(1));
    let mut p = Pools {
        params: Pool::new(scaled(&all, base.parameters)),
        grads: Pool::new(scaled(units.as_deref().unwrap_or(&reversed), grads_total)),
        pieces: units.is_some().then(|| Pool::new(Vec::new())),
        states: Pool::new(scaled(&doubled, states_total)),
        acts: Pool::new(Vec::new()),
        kv: Pool::new(vec![tl.estimate.kv_cache / kv_tensors; kv_tensors.min(1 << 16) as usize]),
        zero: Pool::new(vec![crate::estimate::deepspeed::buckets(sc).0]),
        op_tensor: events
            .windows(2)
            .filter(|w| w[1].pass != super::step::Pass::Step)
            .map(|w| w[1].alive.activations.abs_diff(w[0].alive.activations))
            .max()
            .unwrap_or(0),
    };
    let (growth, growth_sizes) = growth_tensors(events);
    // each checkpointed block's recompute, by block
    let mut recompute: Vec<Option<(u32, u32)>> = Vec::new();
    for (e, &(at, len)) in events.iter().zip(&growth) {
        if let (Phase::Backward, Some(j), true) = (e.phase, e.block, len > 0) {
            let j = j as usize;
            if recompute.len() <= j {
                recompute.resize(j + 1, None);
            }
            recompute[j].get_or_insert((at, len));
        }
    }
    r.set(&mut p.params, base.parameters, true);
    let after_load = r.a.stats().reserved;
    let _workspace = (workspace > 0).then(|| r.alloc(workspace));
    let steps = if sc.mode == Mode::Train { 3 } else { 2 };
    let backward_events = events.iter().filter(|e| e.phase == Phase::Backward).count();
    let mut per_event = Vec::with_capacity(events.len());
    for step in 0..steps {
        let first_step = step == 0 && sc.mode == Mode::Train;
        let mut stepped = !first_step;
        let mut backward = 0usize;
        for (e, &(at, len)) in events.iter().zip(&growth) {
            if e.phase == Phase::OptimizerStep {
                stepped = true;
            }
            if e.phase == Phase::Backward {
                backward += 1;
            }
            let mut alive = if stepped { e.alive } else { Snapshot { optimizer_states: 0, ..e.alive } };
            if first_step && oib && e.phase == Phase::Backward {
                // each parameter's states are made by its hook in the first backward, block after
                // block among the activations
                let made = states_total as u128 * backward as u128 / backward_events.max(1) as u128;
                alive.optimizer_states = p.states.whole(made as u64);
            }
            if first_step && backward < backward_events {
                // persistent gradients are first made by the first backward, block after block
                // among its activations
                let p = tl.persistent_gradients;
                let made = (p as u128 * backward as u128 / backward_events.max(1) as u128) as u64;
                alive.gradients = alive.gradients.saturating_sub(p - made);
            }
            apply(&mut r, e, alive, &mut p, &growth_sizes[at as usize..(at + len) as usize]);
            if let (Phase::Forward, Pass::Step, Some(j)) = (e.phase, e.pass, e.block) {
                // a checkpointed block's forward runs its ops without keeping their outputs: the
                // tensors its recompute will make come and go in the forward too
                if let Some(&(at, len)) = recompute.get(j as usize).and_then(Option::as_ref) {
                    let sizes = &growth_sizes[at as usize..(at + len) as usize];
                    let mut tmp = Pool::new(Vec::new());
                    r.grow(&mut tmp, sizes.iter().sum(), sizes);
                    r.set(&mut tmp, 0, false);
                }
            }
            if step + 1 == steps {
                per_event.push(r.a.stats().reserved);
            }
        }
        // what one step leaves for the next: the first event's state
        let end = Snapshot { optimizer_states: states_total, ..base };
        r.set(&mut p.acts, end.activations, false);
        p.set_grads(&mut r, end.gradients);
        r.set(&mut p.kv, 0, true);
    }
    let s = r.a.stats();
    Reserved {
        peak_reserved: s.peak_reserved,
        peak_allocated: s.peak_allocated,
        per_event,
        after_load,
        segments: s.segments,
        cuda_mallocs: s.cuda_mallocs,
        ooms: s.ooms,
        alloc_retries: s.alloc_retries,
    }
}

fn apply(r: &mut Replay, e: &Event, alive: Snapshot, p: &mut Pools, growth: &[u64]) {
    r.set(&mut p.params, alive.parameters, true);
    r.set(&mut p.states, alive.optimizer_states, true);
    p.set_grads(r, alive.gradients);
    r.set(&mut p.kv, alive.kv_cache, true);
    r.set(&mut p.zero, alive.zero_buckets, true);
    // the loss in the forward: the logits (a piece a chunk), then an fp32 copy, exist before the
    // log-softmax outputs it saves
    let pieces = e.pieces != Pieces::default();
    let head_forward = e.phase == Phase::Forward && e.block.is_none() && pieces;
    let mut tmp = Pool::new(Vec::new());
    if head_forward {
        r.grow(&mut tmp, alive.temporaries, &e.pieces.sizes(alive.temporaries));
    }
    if growth.is_empty() || alive.activations <= p.acts.bytes {
        r.set_in(&mut p.acts, alive.activations, e.saved_piece, false);
    } else {
        r.grow(&mut p.acts, alive.activations, growth);
    }
    if alive.temporaries > 0 && !head_forward {
        // the head's and the loss's transients in the tensors the event names (pieces of
        // logits, weight-sized gradients); the optimizer's per-tensor lists tensor by tensor, in
        // the parameters' order (`_foreach_sqrt` over the list; the gradients pool's sizes are in
        // backward's, the reverse); a block's transients (its MLP's or attention's widest
        // gradients, at a block's events and at the backward's calibrated moments) as tensors of
        // the block's largest op tensor; anything else as one tensor
        if pieces {
            r.grow(&mut tmp, alive.temporaries, &e.pieces.sizes(alive.temporaries));
        } else {
            let sizes = if e.phase == Phase::OptimizerStep {
                p.grads.sizes.iter().rev().copied().collect()
            } else if (e.block.is_some() || e.phase == Phase::Backward) && p.op_tensor > 0 {
                vec![p.op_tensor]
            } else {
                Vec::new()
            };
            let listed = !sizes.is_empty();
            tmp = Pool::new(sizes);
            r.set(&mut tmp, alive.temporaries, listed);
        }
    }
    r.set(&mut tmp, 0, false);
}
