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

/// Where a storage's bytes count when kept: by the op that made it.
fn cat(m: &TracedModel, made: &super::Made, phase: Phase) -> Cat {
    let op = m.op_name(made.op);
    if m.module_name(made.module).contains("lora_") {
        return Cat::Adapters;
    }
    match op {
        _ if phase == Phase::Input => {
            if made.item == 8 {
                Cat::Embeddings
            } else {
                Cat::FeatureMaps
            }
        }
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
pub fn run(m: &TracedModel, x: &[u64]) -> (Net, NetRun) {
    run_with(m, &super::sizes(m, x).unwrap_or_else(|_| vec![0; m.events.len()]))
}

/// [`run`] from every event's bytes ([`TracedModel::resolve_sizes`]).
pub fn run_with(m: &TracedModel, bytes: &[u64]) -> (Net, NetRun) {
    let mut names = vec![None::<&'static str>; m.strings.len()];
    let n_made = m.events.iter().filter(|e| e.made.is_some()).count();
    // per storage: its bytes as allocated, and where it was made
    let mut at = vec![None::<(u64, Phase, bool)>; n_made];
    for (e, &b) in m.events.iter().zip(bytes) {
        if let (Some(made), Some(slot)) = (&e.made, at.get_mut(e.sid as usize)) {
            *slot = Some((round_alloc(b), e.phase, made.saved));
        }
    }
    let mut net = Net::new(NetCtx { batch: 1, elem: 2 });
    net.tensors.push(NetTensor {
        bytes: 0,
        rg: false,
        cat: Cat::Mlp,
        external: false,
        alias_of: None,
        train_only: false,
    });
    let held = m
        .events
        .iter()
        .filter(|e| e.phase == Phase::Input)
        .filter_map(|e| at.get(e.sid as usize)?.map(|a| a.0))
        .sum();
    let mut run = NetRun { held, ..NetRun::default() };
    forward(m, &at, &mut net, &mut run, &mut names);
    backward(m, &at, &mut net, &mut run, &mut names);
    run.infer_peak = infer(m, &at, run.held);
    if let Some(first) = net.nodes.first_mut() {
        first.buffers = m.buffers.clone();
    }
    (net, run)
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

type At = [Option<(u64, Phase, bool)>];

/// The training forward: its most alive, what each op keeps, and what is alive at its end.
fn forward(m: &TracedModel, at: &At, net: &mut Net, run: &mut NetRun, names: &mut [Option<&'static str>]) {
    let (mut live, mut kept) = (run.held, run.held);
    let mut alive = vec![false; at.len()];
    for e in m.events.iter().filter(|e| e.phase == Phase::Input) {
        if let Some(a) = alive.get_mut(e.sid as usize) {
            *a = true;
        }
    }
    for e in m.events.iter().filter(|e| e.phase == Phase::Train) {
        let Some(&Some((b, _, saved))) = at.get(e.sid as usize) else { continue };
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
            None if alive[i] => {
                alive[i] = false;
                live -= b;
                kept -= if saved { b } else { 0 };
            }
            None => {}
        }
    }
    // what is alive at the forward's end: the saves, the inputs, the loss
    for e in m.events.iter().filter(|e| matches!(e.phase, Phase::Input | Phase::Train)) {
        if let (Some(made), Some(&Some((b, _, _)))) = (&e.made, at.get(e.sid as usize))
            && alive[e.sid as usize]
        {
            run.saved.add(cat(m, made, e.phase), b);
            run.saved_alloc += b;
        }
    }
}

/// The backward, event by event.
fn backward(m: &TracedModel, at: &At, net: &mut Net, run: &mut NetRun, names: &mut [Option<&'static str>]) {
    let mut acts = run.saved_alloc;
    let mut buffers = 0u64;
    let mut grad = vec![false; at.len()];
    let mut freed = vec![false; at.len()];
    for e in m.events.iter().filter(|e| e.phase == Phase::Backward) {
        let i = e.sid as usize;
        let Some(&Some((b, made_in, _))) = at.get(i) else { continue };
        match &e.made {
            Some(made) => {
                let mut n = node(m, made, names);
                match made.grad_of.and_then(|p| m.params.get(p as usize)) {
                    Some(p) => {
                        grad[i] = true;
                        n.params.push(p.numel);
                    }
                    None => buffers += b,
                }
                net.nodes.push(n);
                run.backward.push(NetBackward { node: net.nodes.len() - 1, acts, buffers });
            }
            None if freed[i] => {}
            None => {
                freed[i] = true;
                if matches!(made_in, Phase::Input | Phase::Train) {
                    acts = acts.saturating_sub(b);
                } else if !grad[i] {
                    buffers = buffers.saturating_sub(b);
                }
            }
        }
    }
}

/// The no-grad forward's most alive, the inputs included.
fn infer(m: &TracedModel, at: &At, held: u64) -> u64 {
    let (mut live, mut peak) = (held, held);
    let mut alive = vec![false; at.len()];
    for e in m.events.iter().filter(|e| e.phase == Phase::Infer) {
        let i = e.sid as usize;
        let Some(&Some((b, _, _))) = at.get(i) else { continue };
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
