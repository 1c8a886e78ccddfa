//! A rank's blocks composed: what each block keeps by kind, checkpointing (the blocks'
//! inputs, the recompute of the one running backward, selective recompute), a layer table's
//! activation model.

use super::*;

/// The saves of blocks `from..to` (block 0 is `first_layer`); blocks of different kinds (sliding
/// or global attention, dense or MoE) are summed one by one.
pub(super) fn blocks_saved(
    sc: &Scenario,
    am: &ActivationModel,
    from: u64,
    to: u64,
    selective: bool,
) -> Saved {
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
            // kind by kind: each kind's saves times its blocks in the range
            if from == 0 && !selective {
                s.add_all(&am.first_layer);
            }
            let counts = am.mix.counts(t, from, to, !selective);
            let kinds = if selective { &am.mix.selective } else { &am.mix.full };
            for (k, &n) in counts.iter().enumerate().filter(|(_, n)| **n > 0) {
                s.add_all(&kinds.get(k).copied().unwrap_or(base).times(n));
            }
        }
    }
    s
}

/// Saved bytes of all blocks under a checkpointing choice, and what backward recomputes.
pub(super) fn compose_layers(
    sc: &Scenario,
    am: &ActivationModel,
    layers: u64,
    first_stage: bool,
) -> (Saved, Recompute) {
    let mut s = Saved::default();
    let none = Recompute::default();
    if layers == 0 {
        return (s, none);
    }
    let full = am.full_layer;
    let ckpt_input = |s: &mut Saved, n: u64| {
        s.add(
            Cat::CheckpointInputs,
            n * am.layer_input_bytes + if n > 0 { am.shared_checkpoint_bytes } else { 0 }
                - if n > 0 && first_stage {
                    am.layer_input_bytes.saturating_sub(am.first_input_bytes)
                } else {
                    0
                },
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

pub(super) fn table_model(sc: &Scenario, t: &LayerTable) -> (ActivationModel, u64) {
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
