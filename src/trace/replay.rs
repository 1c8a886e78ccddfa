//! A traced step replayed at new sizes: every storage's bytes from its fitted shape, the events
//! in their recorded order, and what the step walk needs ([`NetRun`]) read off them: the
//! forward's most alive (split into what autograd keeps and the rest), what is kept at its end,
//! the backward event by event with the gradient buffers and transients alive (parameter
//! gradients apart, as the states count them), and the no-grad forward's peak.

use super::{Phase, TracedModel};
use crate::engine::inputs::saved::Cat;
use crate::engine::ops::net::{Net, NetCtx, NetNode, NetTensor, T};
use crate::engine::walk::net::{NetBackward, NetRun};
use crate::units::round_alloc;

/// Where a storage's bytes count when kept: by the op that made it, each op's and module's
/// name read once a run.
struct Cats<'a> {
    m: &'a TracedModel,
    /// By op string.
    op: Vec<Option<Cat>>,
    /// By module string: a LoRA adapter's.
    lora: Vec<Option<bool>>,
}

impl<'a> Cats<'a> {
    fn new(m: &'a TracedModel) -> Self {
        Self { m, op: vec![None; m.strings.len()], lora: vec![None; m.strings.len()] }
    }

    fn of(&mut self, made: &super::Made, phase: Phase) -> Cat {
        let m = self.m;
        let lora = match self.lora.get_mut(made.module as usize) {
            Some(Some(l)) => *l,
            Some(slot) => *slot.insert(m.module_name(made.module).contains("lora_")),
            None => false,
        };
        if lora {
            Cat::Adapters
        } else if phase == Phase::Input {
            if made.item == 8 { Cat::Embeddings } else { Cat::FeatureMaps }
        } else {
            match self.op.get_mut(made.op as usize) {
                Some(Some(c)) => *c,
                Some(slot) => *slot.insert(op_cat(m.op_name(made.op))),
                None => Cat::Mlp,
            }
        }
    }
}

/// Where the bytes an op made count.
fn op_cat(op: &str) -> Cat {
    match op {
        "_softmax" | "softmax" => Cat::AttentionScores,
        o if o.contains("attention") || o == "bmm" || o == "baddbmm" => Cat::AttentionIo,
        o if o.starts_with("native_layer_norm")
            || o.starts_with("native_batch_norm")
            || o.starts_with("_native_batch_norm")
            || o.starts_with("native_group_norm")
            || o.contains("rms_norm") =>
        {
            Cat::Norms
        }
        "native_dropout" | "bernoulli" => Cat::DropoutMasks,
        o if o.starts_with("convolution") || o.contains("pool") || o.starts_with("upsample") => {
            Cat::FeatureMaps
        }
        o if o.starts_with("embedding") => Cat::Embeddings,
        o if o.contains("log_softmax") || o.contains("loss") => Cat::HeadLoss,
        "_to_copy" => Cat::InputCasts,
        "add" | "add_" => Cat::Residual,
        _ => Cat::Mlp,
    }
}

/// The step at `x` (a [`TracedModel::resolve`]d point): a net whose ops are the recorded
/// events that made storages (for the timeline and the parameter gradients each made), and
/// what running it gives.
pub fn run(m: &TracedModel, x: &[u64], checkpoint: bool) -> (Net, NetRun) {
    run_with(m, &super::sizes(m, x).unwrap_or_else(|_| vec![0; m.events.len()]), checkpoint)
}

/// [`run`] from every event's bytes ([`TracedModel::resolve_sizes`]); `checkpoint`: the
/// blocks checkpointed ([`super::ckpt`]).
pub fn run_with(m: &TracedModel, bytes: &[u64], checkpoint: bool) -> (Net, NetRun) {
    let mut names = vec![None::<&'static str>; m.strings.len()];
    let ckpt = checkpoint && m.checkpoint.available();
    let at = slots(m, bytes, ckpt);
    let n_made = at.len();
    let mut net = Net::new(NetCtx { batch: 1, elem: 2 });
    // a node per storage made in the step (and per recompute's): reserved once, not regrown
    let n_train = m.events.iter().filter(|e| e.phase == Phase::Train && e.made.is_some()).count();
    let n_recomputed = if ckpt { m.checkpoint.early.len() } else { 0 };
    net.nodes.reserve(n_made + n_recomputed);
    net.tensors.push(NetTensor {
        bytes: 0,
        rg: false,
        cat: Cat::Mlp,
        external: false,
        alias_of: None,
        train_only: false,
    });
    let mut run = NetRun { held: held(m, &at), ..NetRun::default() };
    run.forward_kept.reserve(n_train);
    run.backward.reserve(n_made - n_train + n_recomputed);
    let w = Walk { m, at: &at, ckpt };
    forward(&w, &mut net, &mut run, &mut names, None);
    backward(&w, &mut net, &mut run, &mut names);
    run.infer_peak = infer(m, &at, run.held);
    if let Some(first) = net.nodes.first_mut() {
        first.buffers = m.buffers.clone();
    }
    (net, run)
}

/// What the training forward keeps at its end (saves, held inputs, the loss) by the module
/// that made it: bytes per string of the trace (a module's name), as [`run_with`] replays it.
pub fn kept_by_module(m: &TracedModel, bytes: &[u64], checkpoint: bool) -> Vec<u64> {
    let ckpt = checkpoint && m.checkpoint.available();
    let at = slots(m, bytes, ckpt);
    let mut net = Net::new(NetCtx { batch: 1, elem: 2 });
    let mut run = NetRun { held: held(m, &at), ..NetRun::default() };
    let mut by_module = vec![0; m.strings.len()];
    let mut names = vec![None::<&'static str>; m.strings.len()];
    forward(&Walk { m, at: &at, ckpt }, &mut net, &mut run, &mut names, Some(&mut by_module));
    by_module
}

/// Per storage: its bytes as allocated, where it was made, whether autograd keeps it (a
/// checkpointed region's own saves are dropped) and whether a checkpoint holds it.
fn slots(m: &TracedModel, bytes: &[u64], ckpt: bool) -> Vec<Option<Slot>> {
    let n_made = m.events.iter().filter(|e| e.made.is_some()).count();
    let mut at = vec![None::<Slot>; n_made];
    for (e, &b) in m.events.iter().zip(bytes) {
        if let (Some(made), Some(slot)) = (&e.made, at.get_mut(e.sid as usize)) {
            let kept = made.saved && !(ckpt && made.dropped.is_some());
            *slot = Some((round_alloc(b), e.phase, kept, ckpt && made.held.is_some()));
        }
    }
    at
}

/// The inputs' bytes, held through the step.
fn held(m: &TracedModel, at: &At) -> u64 {
    m.events
        .iter()
        .filter(|e| e.phase == Phase::Input)
        .filter_map(|e| at.get(e.sid as usize)?.map(|a| a.0))
        .sum()
}

/// A node for the op that made a storage (its name interned once a run: `names`).
fn node(m: &TracedModel, made: &super::Made, names: &mut [Option<&'static str>]) -> NetNode {
    let op = match names.get_mut(made.op as usize) {
        Some(Some(n)) => n,
        Some(slot) => slot.insert(super::intern(m.op_name(made.op))),
        None => "op",
    };
    NetNode {
        op,
        // the module is the trace's (`Made::module`); nothing reads a node's (and a string a
        // node would cost the slider an allocation)
        module: String::new(),
        inputs: Vec::new(),
        output: T(0),
        saved: Vec::new(),
        params: Vec::new(),
        buffers: Vec::new(),
        macs: 0,
        scratch: 0,
    }
}

/// A storage's bytes as allocated, where it was made, whether autograd keeps it, and whether
/// a checkpoint holds it past its forward free.
type Slot = (u64, Phase, bool, bool);
type At = [Option<Slot>];

/// What a replay reads: the trace, each storage's bytes, where it was made and whether
/// autograd keeps it, and whether the blocks are checkpointed.
struct Walk<'a> {
    m: &'a TracedModel,
    at: &'a At,
    ckpt: bool,
}

/// The training forward: its most alive, what each op keeps, and what is alive at its end
/// (by module into `by_module` when asked).
fn forward(
    w: &Walk,
    net: &mut Net,
    run: &mut NetRun,
    names: &mut [Option<&'static str>],
    mut by_module: Option<&mut [u64]>,
) {
    let (m, at) = (w.m, w.at);
    let (mut live, mut kept) = (run.held, run.held);
    let mut alive = vec![false; at.len()];
    for e in m.events.iter().filter(|e| e.phase == Phase::Input) {
        if let Some(a) = alive.get_mut(e.sid as usize) {
            *a = true;
        }
    }
    let early: &[(u32, u32)] = if w.ckpt { &m.checkpoint.early } else { &[] };
    let mut next = 0;
    for (j, e) in m.events.iter().enumerate().filter(|(_, e)| e.phase == Phase::Train) {
        let Some(&Some((b, _, saved, held))) = at.get(e.sid as usize) else { continue };
        let i = e.sid as usize;
        match &e.made {
            Some(made) => {
                alive[i] = true;
                live += b;
                kept += if saved { b } else { 0 };
                let first = if net.nodes.is_empty() { run.held } else { 0 };
                run.forward_kept.push(first + if saved { b } else { 0 });
                net.nodes.push(node(m, made, names));
                if live > run.forward_most.0 + run.forward_most.1 {
                    run.forward_most = (kept, live - kept);
                }
            }
            // a checkpoint holds its inputs: kept from here on
            None if alive[i] && held => kept += if saved { 0 } else { b },
            None if alive[i] => {
                alive[i] = false;
                live -= b;
                kept -= if saved { b } else { 0 };
            }
            None => {}
        }
        // a dropped save is freed where nothing but the save would hold it
        while let Some(&(_, sid)) = early.get(next).filter(|x| x.0 as usize <= j) {
            next += 1;
            let s = sid as usize;
            if let (Some(true), Some(&Some((b, ..)))) = (alive.get(s).copied(), at.get(s)) {
                alive[s] = false;
                live -= b;
            }
        }
    }
    // what is alive at the forward's end: the saves, the inputs, the loss
    let mut cats = Cats::new(m);
    for e in m.events.iter().filter(|e| matches!(e.phase, Phase::Input | Phase::Train)) {
        if let (Some(made), Some(&Some((b, ..)))) = (&e.made, at.get(e.sid as usize))
            && alive[e.sid as usize]
        {
            run.saved.add(cats.of(made, e.phase), b);
            run.saved_alloc += b;
            if let Some(k) = by_module.as_deref_mut().and_then(|v| v.get_mut(made.module as usize)) {
                *k += b;
            }
        }
    }
}

/// The backward, event by event (a checkpointed region's forward rerun where backward first
/// reads one of its saves).
fn backward(w: &Walk, net: &mut Net, run: &mut NetRun, names: &mut [Option<&'static str>]) {
    let (m, at) = (w.m, w.at);
    let mut state = State { acts: run.saved_alloc, buffers: 0 };
    let mut grad = vec![false; at.len()];
    let mut freed = vec![false; at.len()];
    let mut triggers: Vec<(u32, usize)> = if w.ckpt {
        m.checkpoint.regions.iter().enumerate().map(|(k, r)| (r.trigger, k)).collect()
    } else {
        Vec::new()
    };
    triggers.sort_unstable();
    let late: &[(u32, u32)] = if w.ckpt { &m.checkpoint.late } else { &[] };
    let (mut next, mut next_late, mut scratch) = (0, 0, Vec::new());
    for (j, e) in m.events.iter().enumerate().filter(|(_, e)| e.phase == Phase::Backward) {
        while let Some(&(_, k)) = triggers.get(next).filter(|t| t.0 as usize <= j) {
            next += 1;
            recompute(w, k, &mut state, (net, run, names), &mut scratch);
        }
        // the inputs a checkpoint held, once its region's backward is done
        while let Some(&(_, s)) = late.get(next_late).filter(|t| t.0 as usize <= j) {
            next_late += 1;
            if let Some(&Some((b, ..))) = at.get(s as usize) {
                state.acts = state.acts.saturating_sub(b);
            }
        }
        let i = e.sid as usize;
        let Some(&Some((b, made_in, _, held))) = at.get(i) else { continue };
        match &e.made {
            Some(made) => {
                let mut n = node(m, made, names);
                match made.grad_of.and_then(|p| m.params.get(p as usize)) {
                    Some(p) => {
                        grad[i] = true;
                        n.params.push(p.numel);
                    }
                    None => state.buffers += b,
                }
                net.nodes.push(n);
                let (acts, buffers) = (state.acts, state.buffers);
                run.backward.push(NetBackward { node: net.nodes.len() - 1, acts, buffers });
            }
            // a held input is freed by the checkpoint (`late`)
            None if freed[i] || held => {}
            None => {
                freed[i] = true;
                if matches!(made_in, Phase::Input | Phase::Train) {
                    state.acts = state.acts.saturating_sub(b);
                } else if !grad[i] {
                    state.buffers = state.buffers.saturating_sub(b);
                }
            }
        }
    }
}

/// The backward's saves alive and its other buffers.
struct State {
    acts: u64,
    buffers: u64,
}

/// Region `k`'s forward rerun up to its last dropped save: those are saved again (freed where
/// backward frees them), the rest lives as in the forward or to the rerun's end.
fn recompute(
    w: &Walk,
    k: usize,
    state: &mut State,
    (net, run, names): (&mut Net, &mut NetRun, &mut [Option<&'static str>]),
    alive: &mut Vec<usize>,
) {
    let Some(r) = w.m.checkpoint.regions.get(k) else { return };
    let mut rerun = 0u64;
    alive.clear();
    let window = w.m.events.get(r.start as usize..=r.stop as usize).unwrap_or_default();
    for e in window.iter().filter(|e| e.phase == Phase::Train) {
        let i = e.sid as usize;
        let Some(&Some((b, ..))) = w.at.get(i) else { continue };
        match &e.made {
            Some(made) if made.dropped.is_some_and(|d| d.0 as usize == k) => state.acts += b,
            Some(_) => {
                rerun += b;
                alive.push(i);
            }
            None => {
                if let Some(p) = alive.iter().position(|&a| a == i) {
                    alive.swap_remove(p);
                    rerun -= b;
                }
                continue;
            }
        }
        if let Some(made) = &e.made {
            net.nodes.push(node(w.m, made, names));
            let (acts, buffers) = (state.acts, state.buffers + rerun);
            run.backward.push(NetBackward { node: net.nodes.len() - 1, acts, buffers });
        }
    }
}

/// The no-grad forward's most alive, the inputs included.
fn infer(m: &TracedModel, at: &At, held: u64) -> u64 {
    let (mut live, mut peak) = (held, held);
    let mut alive = vec![false; at.len()];
    for e in m.events.iter().filter(|e| e.phase == Phase::Infer) {
        let i = e.sid as usize;
        let Some(&Some((b, ..))) = at.get(i) else { continue };
        if e.made.is_some() {
            alive[i] = true;
            live += b;
            peak = peak.max(live);
        } else if alive[i] {
            alive[i] = false;
            live -= b;
        }
    }
    peak
}
