//! Runs a [`Net`] as PyTorch's autograd engine would, tensor by tensor: the forward frees a
//! tensor once the last op reading it has run unless a backward keeps it; the backward runs the
//! ops in reverse (the engine's ready queue takes the latest-made op first, so a residual
//! block's shortcut runs backward before its main branch), gives each tensor that requires grad
//! a gradient buffer when the first op reading it runs backward (a second one is summed into
//! it in place, a transient while it is made), and frees, once an op has run, its output's
//! gradient and what it alone still kept. Parameter gradients are made as each op runs.

use crate::engine::inputs::saved::Saved;
use crate::engine::ops::net::{Net, T};

/// One op's backward: what is alive while it runs (beside the model states).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetBackward {
    /// The op (an index into [`Net::nodes`]).
    pub node: usize,
    /// Saves not freed yet (the held images and labels included).
    pub acts: u64,
    /// Gradient buffers of tensors (the op's output's among them) and the gradients it makes
    /// for its inputs.
    pub buffers: u64,
}

/// What running a net gives.
#[derive(Clone, Debug, Default)]
pub struct NetRun {
    /// Every tensor a backward keeps (each storage once), the held images and labels included,
    /// by category.
    pub saved: Saved,
    /// Those tensors as the caching allocator hands them out (each rounded up to 512 bytes): the
    /// bytes the step's moments count, as every other tensor of the walk.
    pub saved_alloc: u64,
    /// The forward's most alive at once: the saves made so far, and the outputs and tensors
    /// later ops read (or Python still holds) beside them.
    pub forward_most: (u64, u64),
    /// Bytes each op's forward keeps that no earlier op kept (the held images and labels are
    /// the first op's), in forward order.
    pub forward_kept: Vec<u64>,
    /// The training backward op by op, in the order it runs.
    pub backward: Vec<NetBackward>,
    /// The images and labels the caller holds through the step.
    pub held: u64,
    /// The most alive at once in a no-grad forward (the held images included).
    pub infer_peak: u64,
}

/// Runs `net` in training and in inference.
pub fn run(net: &Net) -> NetRun {
    let n = net.tensors.len();
    let root = |t: T| net.storage(t).0 as usize;
    // the last op reading each storage in the forward, and the first and last ops keeping it
    let mut last_read = vec![None::<usize>; n];
    let mut saved_by = vec![None::<usize>; n];
    for &(t, until) in &net.holds {
        let r = root(t);
        last_read[r] = Some(last_read[r].map_or(until, |j: usize| j.max(until)));
    }
    for (i, node) in net.nodes.iter().enumerate() {
        for &t in &node.inputs {
            let r = root(t);
            last_read[r] = Some(last_read[r].map_or(i, |j: usize| j.max(i)));
        }
        for &t in &node.saved {
            let r = root(t);
            // the backward runs in reverse: the earliest op keeping it frees it
            saved_by[r] = Some(saved_by[r].map_or(i, |j: usize| j.min(i)));
        }
    }
    let mut saved = Saved::default();
    let mut saved_alloc = 0;
    for (i, t) in net.tensors.iter().enumerate() {
        if t.alias_of.is_none() && (saved_by[i].is_some() || t.external) {
            saved.add(t.cat, t.bytes);
            saved_alloc += t.alloc();
        }
    }
    NetRun {
        saved,
        saved_alloc,
        forward_kept: forward_kept(net, &saved_by),
        held: net.tensors.iter().filter(|t| t.external).map(|t| t.alloc()).sum(),
        forward_most: forward(net, &last_read, &saved_by, true),
        backward: backward(net, &saved_by),
        infer_peak: forward(net, &last_read, &saved_by, false).1,
    }
}

/// What each op's forward keeps first.
fn forward_kept(net: &Net, saved_by: &[Option<usize>]) -> Vec<u64> {
    let mut seen = vec![false; net.tensors.len()];
    let mut out = Vec::with_capacity(net.nodes.len());
    let held: u64 = net.tensors.iter().filter(|t| t.external).map(|t| t.alloc()).sum();
    for (i, node) in net.nodes.iter().enumerate() {
        let mut kept = if i == 0 { held } else { 0 };
        for &t in &node.saved {
            let r = net.storage(t).0 as usize;
            if !seen[r] && !net.tensors[r].external && saved_by[r].is_some() {
                seen[r] = true;
                kept += net.tensors[r].alloc();
            }
        }
        out.push(kept);
    }
    out
}

/// The forward's most alive at once, as (saves made so far, everything else alive): with saves
/// (`train`) or without (inference: everything is the second).
fn forward(net: &Net, last_read: &[Option<usize>], saved_by: &[Option<usize>], train: bool) -> (u64, u64) {
    let kept = |i: usize| train && saved_by[i].is_some();
    // the storages whose last reader (or holder) each op is
    let mut dies = vec![Vec::new(); net.nodes.len()];
    for (r, at) in last_read.iter().enumerate() {
        if let Some(i) = at {
            dies[*i].push(r);
        }
    }
    let mut live: u64 = net.tensors.iter().filter(|t| t.external).map(|t| t.alloc()).sum();
    let mut kept_so_far = if train { live } else { 0 };
    let mut most = (0u64, 0u64);
    for (i, node) in net.nodes.iter().enumerate() {
        let o = node.output.0 as usize;
        if net.tensors[o].alias_of.is_none() {
            live += net.tensors[o].alloc();
            if kept(o) {
                kept_so_far += net.tensors[o].alloc();
            }
        }
        // side tensors an op makes only to keep (statistics, indices): kept in training, a
        // transient of the op in inference (BatchNorm's batch statistics not even made)
        let mut side = 0;
        for &t in &node.saved {
            let r = net.storage(t).0 as usize;
            let x = &net.tensors[r];
            if x.alias_of.is_none()
                && r != o
                && !x.external
                && last_read[r].is_none()
                && (train || !x.train_only)
            {
                side += x.alloc();
            }
        }
        live += side;
        if train {
            kept_so_far += side;
        }
        if live > most.0 + most.1 {
            most = (kept_so_far, live - kept_so_far);
        }
        for &r in &dies[i] {
            if !kept(r) && !net.tensors[r].external && net.tensors[r].alias_of.is_none() {
                live -= net.tensors[r].alloc();
            }
        }
        if !train {
            live -= side;
        }
        // an output nothing reads or keeps dies with the op (the loss is held)
        let held = Some(node.output) == net.loss;
        if last_read[o].is_none() && !kept(o) && !held && net.tensors[o].alias_of.is_none() {
            live -= net.tensors[o].alloc();
        }
    }
    most
}

/// The backward op by op.
fn backward(net: &Net, saved_by: &[Option<usize>]) -> Vec<NetBackward> {
    let n = net.tensors.len();
    let mut acts: u64 = net
        .tensors
        .iter()
        .enumerate()
        .filter(|(i, t)| t.alias_of.is_none() && (saved_by[*i].is_some() || t.external))
        .map(|(_, t)| t.alloc())
        .sum();
    let mut grad = vec![false; n];
    let mut buffers = 0u64;
    let Some(loss) = net.loss else { return Vec::new() };
    grad[loss.0 as usize] = true;
    buffers += net.get(loss).alloc();
    let mut out = Vec::with_capacity(net.nodes.len());
    for (i, node) in net.nodes.iter().enumerate().rev() {
        let o = node.output.0 as usize;
        if !grad[o] {
            continue;
        }
        // the gradients it makes: a buffer per input that requires grad; a second one for the
        // same tensor is summed in place and freed
        let mut made = 0;
        let mut summed = 0;
        for &t in &node.inputs {
            let x = net.get(t);
            if !x.rg {
                continue;
            }
            made += x.alloc();
            if grad[t.0 as usize] {
                summed += x.alloc();
            } else {
                grad[t.0 as usize] = true;
            }
        }
        out.push(NetBackward { node: i, acts, buffers: buffers + made + node.scratch });
        buffers = buffers + made - summed - net.tensors[o].alloc();
        for &t in &node.saved {
            let r = net.storage(t).0 as usize;
            if saved_by[r] == Some(i) && !net.tensors[r].external {
                acts -= net.tensors[r].alloc();
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::inputs::saved::Cat;
    use crate::engine::ops::net::{Conv, NetCtx};

    fn small() -> Net {
        let mut net = Net::new(NetCtx { batch: 2, elem: 2 });
        let x = net.pixels(3, 8, 8);
        let k = Conv { out: 4, k: 3, stride: 1, pad: 1, groups: 1, bias: false };
        let y = net.conv2d("conv", x, k);
        let y = net.batch_norm("bn", y);
        let y = net.relu("act", y);
        let p = net.mean_hw("pool", y);
        let logits = net.linear("fc", p, 10, Cat::HeadLoss);
        net.cross_entropy(logits);
        net
    }

    #[test]
    fn a_conv_bn_relu_chain_keeps_the_images_conv_output_relu_output_and_stats() {
        let net = small();
        let r = run(&net);
        let fm = 2 * 4 * 8 * 8 * 2;
        // images, conv output (BN's input), relu output, pooled (the linear's input), log-probs,
        // BN's two statistics (the input's dtype), labels and nll's total weight
        let expect = 2 * 3 * 64 * 2 + fm + fm + 2 * 4 * 2 + 2 * 10 * 2 + 2 * 4 * 2 + 2 * 8 + 2;
        assert_eq!(r.saved.total(), expect);
        // the backward runs every op but the pixels' (which need no gradient) in reverse
        let order: Vec<&str> = r.backward.iter().map(|b| net.nodes[b.node].op).collect();
        assert_eq!(order, ["nll_loss", "log_softmax", "linear", "mean", "relu", "batch_norm", "conv2d"]);
        // once the conv ran backward, only the held images and labels are left
        let last = r.backward.last().expect("ops");
        assert!(last.acts >= 2 * 3 * 64 * 2);
        assert_eq!(net.n_params(), 4 * 3 * 9 + 4 + 4 + 10 * 4 + 10);
    }
}
