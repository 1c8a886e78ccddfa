//! A convolutional backbone's step, op by op from the walk of its [`Net`]: the forward adds
//! what each op keeps, the backward runs the ops in reverse with their gradient buffers and the
//! parameter gradients each makes, then the optimizer step; an inference is one no-grad forward.

use super::{Event, Parts, Pass, Sink, ev};
use crate::engine::ops::net::Net;
use crate::engine::walk::net::NetRun;
use crate::estimate::{Mode, Phase, Snapshot};
use crate::units::round_alloc;

/// A net and what walking it gave, built once per estimate.
pub(crate) struct NetParts {
    pub net: Net,
    pub run: NetRun,
}

/// The step's events into `sink`.
pub(super) fn walk(p: &Parts, n: &NetParts, sink: &mut impl Sink) {
    if p.sc.mode == Mode::Infer {
        let alive =
            Snapshot { parameters: p.st.param_alloc, temporaries: n.run.infer_peak, ..Snapshot::default() };
        sink.push(ev(Phase::Forward, None, "forward (no grad)", Pass::Step, true, alive));
        return;
    }
    let st = &p.st;
    let persist = p.sc.stack.grads_persist();
    let base = super::step_base(st, persist);
    if persist {
        sink.persistent_gradients(st.grad_alloc);
    }
    let with = |acts: u64, grads: u64, temp: u64| Snapshot {
        activations: acts,
        gradients: grads,
        temporaries: temp,
        ..base
    };
    let fwd = Phase::Forward;
    let mut kept = 0;
    if sink.detail() {
        for (node, k) in n.net.nodes.iter().zip(&n.run.forward_kept) {
            kept += k;
            sink.push(ev(fwd, None, node.op, Pass::OpForward, false, with(kept, base.gradients, 0)));
        }
    }
    let (acts, temp) = n.run.forward_most;
    let what = "the op holding the most (its output and the tensors later ops read)";
    sink.push(ev(fwd, None, what, Pass::Step, true, with(acts, base.gradients, temp)));
    let what = "end of forward";
    sink.push(ev(fwd, None, what, Pass::Step, false, with(n.run.saved_alloc, base.gradients, 0)));
    let grads = backward(p, n, sink, base, &with);
    finish(p, sink, (base, grads, n.run.held), &with);
}

/// The backward op by op; returns the gradients alive at its end.
fn backward(
    p: &Parts,
    n: &NetParts,
    sink: &mut impl Sink,
    base: Snapshot,
    with: &impl Fn(u64, u64, u64) -> Snapshot,
) -> u64 {
    let bwd = Phase::Backward;
    // each op's parameter gradients as allocated, scaled to the rank's share (ZeRO-2 / FSDP
    // shards them; accumulated or stepped in backward they never add up)
    let dt = p.sc.precision.weight_dtype();
    let made = |node: &crate::engine::ops::net::NetNode| -> u64 {
        node.params.iter().map(|&e| round_alloc(dt.bytes(e))).sum()
    };
    let total: u64 = n.run.backward.iter().map(|b| made(&n.net.nodes[b.node])).sum();
    let adds = !p.sc.stack.grads_persist() && !p.sc.stack.optimizer_in_backward;
    let rank = if adds { p.st.grad_alloc } else { 0 };
    let share = |g: u64| (u128::from(g) * u128::from(rank) / u128::from(total.max(1))) as u64;
    let mut grads = base.gradients;
    let mut most: Option<Event> = None;
    for b in &n.run.backward {
        let node = &n.net.nodes[b.node];
        let g = share(made(node));
        let e = ev(bwd, None, node.op, Pass::OpBackward, false, with(b.acts, grads + g, b.buffers));
        grads += g;
        if sink.detail() {
            sink.push(e);
        } else if most.is_none_or(|m| e.alive.total() >= m.alive.total()) {
            most = Some(e);
        }
    }
    if let Some(mut m) = most {
        // the estimator's moment: the op whose backward holds the most
        m.op = "backward of the op holding the most";
        m.pass = Pass::Step;
        m.candidate = true;
        sink.push(m);
    }
    grads
}

/// The end of backward, the optimizer step and `zero_grad`, the images and labels still held.
fn finish(
    p: &Parts,
    sink: &mut impl Sink,
    (base, grads, held): (Snapshot, u64, u64),
    with: &impl Fn(u64, u64, u64) -> Snapshot,
) {
    let st = &p.st;
    let all =
        if p.sc.stack.grads_persist() { base.gradients } else { (base.gradients + st.grad_alloc).max(grads) };
    sink.push(ev(Phase::Backward, None, "end of backward", Pass::Step, false, with(held, all, 0)));
    let step = Phase::OptimizerStep;
    if p.sc.stack.optimizer_in_backward {
        sink.push(ev(step, None, "optimizer steps ran in backward", Pass::Step, false, with(held, all, 0)));
        return;
    }
    sink.push(ev(step, None, "optimizer step", Pass::Step, true, with(held, all, st.optimizer_step_temp)));
    if p.sc.stack.keep_grads {
        let what = "zero_grad (set_to_none=False: zeroed in place, kept)";
        sink.push(ev(step, None, what, Pass::Step, false, with(held, all, 0)));
    } else {
        let left = all - st.grad_alloc.min(all);
        sink.push(ev(step, None, "zero_grad (set_to_none)", Pass::Step, false, with(held, left, 0)));
    }
}
