//! The interpreter: walks a family's ops (embedding, each kind of block, final norm and head) on
//! a [`Graph`] and turns what the rules kept into the [`ActivationModel`] the estimator composes
//! (checkpointing, pipeline stages, candidate moments of the peak).

pub mod net;
mod output;

pub use output::{ActivationModel, HeadPieces, LayerMix, Pieces};

use super::inputs::saved::{Cat, Saved};
use super::inputs::{AttentionImpl, Ctx, Kernel};
use super::ops::{
    BlockFacts, Dequant, Graph, HeadTransients, InferPeaks, OpRecord, Shared, attention_backward_transient,
    kda_backward_transient, mamba_backward_transient, ssm_backward_transient,
};
use crate::families;
use crate::model::{TransformerSpec, layer};

/// One walk of a block.
struct BlockWalk {
    kept: Saved,
    freed_before_attention: u64,
    /// Tables every block of the model shares (rotary cos/sin), with their bytes.
    shared: [(Option<Shared>, u64); 2],
}

fn walk_block(ctx: &Ctx, m: &TransformerSpec, flags: u8, input_rg: bool, selective: bool) -> BlockWalk {
    walk_block_at(ctx, m, flags, (input_rg, selective), false)
}

/// [`walk_block`], of the model's first block when `first`.
fn walk_block_at(
    ctx: &Ctx,
    m: &TransformerSpec,
    flags: u8,
    (input_rg, selective): (bool, bool),
    first: bool,
) -> BlockWalk {
    let ctx = &ctx.for_block();
    let mut g = Graph::new(ctx);
    g.selective = selective;
    g.first_block = first;
    let x = g.tensor(
        ctx.rank_tokens * m.hidden_size * ctx.residual_elem,
        ctx.residual_elem,
        input_rg,
        Cat::Residual,
    );
    families::block(&mut g, m, flags, x);
    let total = g.kept.total();
    let after = total.saturating_sub(g.kept_at_attention);
    BlockWalk { kept: g.kept, freed_before_attention: after + g.eager_tail, shared: g.shared }
}

/// The ops of one block of the given kind, with what each keeps (the GUI's "which op keeps what").
pub fn block_ops(ctx: &Ctx, m: &TransformerSpec, flags: u8) -> Vec<OpRecord> {
    let ctx = &ctx.for_block();
    let mut g = Graph::new(ctx).with_trace();
    let x =
        g.tensor(ctx.rank_tokens * m.hidden_size * ctx.residual_elem, ctx.residual_elem, true, Cat::Residual);
    families::block(&mut g, m, flags, x);
    g.records().to_vec()
}

/// The distinct layer kinds of a spec, in order of first appearance (at most 4).
fn kinds(m: &TransformerSpec) -> ([u8; 4], usize) {
    let mut out = [families::default_flags(m), 0, 0, 0];
    let mut n = 0;
    for &f in m.layer_flags.iter().take(m.num_layers as usize) {
        if n == 4 {
            break;
        }
        if !out[..n].contains(&f) {
            out[n] = f;
            n += 1;
        }
    }
    (out, n.max(1))
}

/// Flags of layer `i`.
pub fn layer_flags(m: &TransformerSpec, i: u64) -> u8 {
    m.layer_flags.get(i as usize).copied().unwrap_or_else(|| families::default_flags(m))
}

/// What walking each kind of block gave.
struct Blocks {
    mix: LayerMix,
    full_layer: Saved,
    first_layer: Saved,
    selective_layer: Saved,
    /// Tables kept once for all blocks (rotary cos/sin of each base).
    shared: u64,
    /// Bytes of the last block freed before its attention core runs backward.
    freed_last: u64,
}

/// Walks each distinct kind of block once (and block 0 when it differs: its input may not
/// require grad).
fn walk_blocks(ctx: &Ctx, m: &TransformerSpec) -> Blocks {
    let (kind_flags, n_kinds) = kinds(m);
    let mut mix = LayerMix { n: n_kinds, flags: kind_flags, ..LayerMix::default() };
    let mut tables: [(Option<Shared>, u64); 2] = [(None, 0); 2];
    let mut freed_last = 0;
    let last_flags = layer_flags(m, m.num_layers.saturating_sub(1));
    let first_flags = layer_flags(m, 0);
    let mut first = None;
    // a family whose first block is built differently walks it on its own
    let own_first = families::first_block_differs(m);
    for (i, &kf) in kind_flags.iter().enumerate().take(n_kinds) {
        let full = walk_block(ctx, m, kf, true, false);
        mix.full[i] = full.kept;
        if ctx.selective {
            mix.selective[i] = walk_block(ctx, m, kind_flags[i], true, true).kept;
        }
        if ctx.full && kind_flags[i] == first_flags && !own_first {
            first = Some(full.kept);
        }
        // tables shared across kinds (Gemma 3's two rotary bases) add up; one table counts once
        for t in full.shared.into_iter().filter(|t| t.0.is_some()) {
            if let Some(slot) = tables.iter_mut().find(|x| x.0.is_none() || x.0 == t.0) {
                *slot = t;
            }
        }
        if kind_flags[i] == last_flags {
            freed_last = full.freed_before_attention;
        }
    }
    let first_layer =
        first.unwrap_or_else(|| walk_block_at(ctx, m, first_flags, (ctx.full, false), own_first).kept);
    Blocks {
        full_layer: mix.of(last_flags, mix.full[0], false),
        selective_layer: mix.of(last_flags, mix.selective[0], true),
        mix: if n_kinds > 1 { mix.with_totals() } else { LayerMix::default() },
        first_layer,
        shared: tables.iter().map(|t| t.1).sum(),
        freed_last,
    }
}

/// The embedding part and the final norm, head and loss: what each keeps.
struct Top {
    /// Embeddings, final norm, head and loss.
    top: Saved,
    /// The part on the first pipeline stage.
    top_input: Saved,
    /// Bytes the head and the loss keep (released before the last block's backward).
    head_released: u64,
}

fn walk_top(ctx: &Ctx, m: &TransformerSpec) -> Top {
    let mut g = Graph::new(ctx);
    let _ = families::embed(&mut g, m);
    let top_input = g.kept;
    let last =
        g.tensor(ctx.rank_tokens * m.hidden_size * ctx.residual_elem, ctx.residual_elem, true, Cat::Residual);
    let head_released = families::head(&mut g, m, last);
    Top { top: g.kept, top_input, head_released }
}

/// The facts of a model's blocks the transient rules read, resolved once.
fn block_facts(ctx: &Ctx, m: &TransformerSpec, kinds: &families::OpKinds) -> BlockFacts {
    let full = families::default_flags(m) & !crate::model::layer::SLIDING;
    let kernel = crate::engine::ops::kernel(ctx, families::attn_with(kinds, ctx, m, full));
    let attn = families::attn_with(kinds, ctx, m, 0);
    BlockFacts {
        kernel,
        // SDPA gets a mask when a layer's window is shorter than the sequence (or always)
        any_masked: ctx.attn == AttentionImpl::Sdpa
            && (kinds.always_masked
                || (kinds.images_masked && ctx.image_mask)
                || (0..m.num_layers.min(8)).any(|i| families::windowed(ctx, m, layer_flags(m, i)))),
        eager_sinks: kernel == Kernel::Eager && attn.sinks,
        named_scores: kernel == Kernel::Eager && kinds.named_scores,
        probs_elem: attn.softmax.elem_bytes(ctx.amp, ctx.compute_elem),
        mlp_width: families::mlp_width(m),
        gated: kinds.gated,
        act: kinds.act,
        fused_gate_up: kinds.fused_gate_up,
        gelu_new_ops: m.gelu_new && !families::litgpt_runs(ctx, m),
        router_fp32: kinds.router_fp32,
        routing_fp32: kinds.routing_fp32,
        moe_all_experts: kinds.moe_all_experts,
        rope_cols: if kinds.rope == families::Rope::None { 0 } else { families::rope_cols(kinds, m) },
        classes: families::classes(m),
        mixer_infer: crate::engine::ops::mixer_infer_working_set(ctx, m),
        attends: m.attention_layers_among(m.num_layers) > 0,
    }
}

/// Builds the activation model of a decoder/encoder family from its ops.
pub(crate) fn activation_model(ctx: &Ctx, m: &TransformerSpec) -> ActivationModel {
    let blocks = walk_blocks(ctx, m);
    let top = walk_top(ctx, m);
    let kinds = families::ops(m);
    let facts = block_facts(ctx, m, &kinds);
    let dequant = Dequant::of(ctx, m, facts.mlp_width, facts.classes);
    // the mixers' backward: attention where a layer attends, a Mamba2 mixer's where one is
    let attends = m.attention_layers_among(m.num_layers) > 0;
    let attention = if attends { attention_backward_transient(ctx, m, &facts) } else { 0 };
    let ssm = match m.ssm {
        Some(s) if m.ssm_layers_among(m.num_layers) > 0 => ssm_backward_transient(ctx, &s),
        _ => 0,
    };
    let ssm = match m.mamba {
        Some(s) if m.layers_with(layer::MAMBA, m.num_layers) > 0 => {
            ssm.max(mamba_backward_transient(ctx, &s))
        }
        _ => ssm,
    };
    let ssm = match m.delta {
        Some(d) if d.kda && m.ssm_layers_among(m.num_layers) > 0 => ssm.max(kda_backward_transient(ctx, &d)),
        _ => ssm,
    };
    let (mlp_t, attn_t) = dequant
        .in_backward(kinds.mlp_backward.transient(ctx, facts.mlp_width, facts.gated), attention.max(ssm));
    let infer = InferPeaks::of(kinds.inference, ctx, m, &facts, &dequant);
    let head = HeadTransients::of(kinds.loss, ctx, m, top.head_released, dequant.head);
    ActivationModel {
        mix: blocks.mix,
        full_layer: blocks.full_layer,
        first_layer: blocks.first_layer,
        selective_layer: blocks.selective_layer,
        layer_input_bytes: ctx.rank_tokens * m.hidden_size * residual_elem(ctx, m),
        first_input_bytes: ctx.rank_tokens * m.hidden_size * ctx.residual_elem,
        shared_layer_bytes: blocks.shared,
        shared_checkpoint_bytes: match kinds.checkpoint_mask {
            // GPT-2's eager path builds a (b, 1, s, s) causal mask passed to every block
            // positionally: checkpointed blocks keep it (one storage for all)
            families::CheckpointMask::Eager if facts.kernel == Kernel::Eager => {
                ctx.batch * ctx.seq * ctx.seq * ctx.residual_elem
            }
            families::CheckpointMask::Fp32 => ctx.batch * ctx.seq * ctx.seq * 4,
            _ => 0,
        } + if kinds.checkpoint_shares_embeddings {
            ctx.rank_tokens * m.hidden_size * ctx.residual_elem
        } else {
            0
        },
        freed_before_attention_backward: blocks.freed_last,
        top: top.top,
        top_input: top.top_input,
        head_released_bytes: top.head_released,
        mlp_backward_transient: mlp_t,
        attention_backward_transient: attn_t,
        loss_backward_transient: head.loss_backward,
        head_forward_transient: head.forward,
        block_forward_transient: crate::engine::ops::indexer_transient(ctx, m),
        head_chunk_sum_transient: head.chunk_sum,
        head_chunk_kept: head.chunk_kept,
        head_pieces: head.pieces,
        infer_persistent: infer.persistent,
        infer_layer_peak: infer.layer,
        infer_head_peak: infer.head,
        head_dequant: dequant.head,
        layer_dequant: dequant.layer,
        kv_per_layer_elems: 2 * ctx.tokens * m.kv_width(),
    }
}

/// Bytes per element of the residual stream between blocks: fp32 where the model keeps it so
/// (Mamba2's `residual_in_fp32`), else the recipe's.
fn residual_elem(ctx: &Ctx, m: &TransformerSpec) -> u64 {
    if m.residual_fp32() { 4 } else { ctx.residual_elem }
}
