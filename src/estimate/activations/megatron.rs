//! Megatron-LM GPT blocks, as Korthikanti et al. 2022 account for them.

use super::*;

/// One Megatron GPT block as Korthikanti et al. 2022 (§4.1) account for it, per tensor-parallel
/// rank: replicated (or, with sequence parallelism, sharded) residual-width tensors, and
/// head- and MLP-width tensors divided by the tensor-parallel degree (via the sharded spec).
fn megatron_layer(ctx: &Ctx, m: &TransformerSpec, selective: bool) -> (Saved, u64) {
    let mut acc = Saved::default();
    let (t, ts, h, c) = (ctx.t, ctx.ts, m.hidden_size, ctx.c);
    let q = m.q_width();
    let i = m.intermediate_size;
    // LayerNorm 1: input (the block input) and fp32 mean/rstd; QKV GEMM input (LN output)
    acc.add(Cat::Residual, ts * h * c);
    acc.add(Cat::Norms, 2 * ts * 4 + ts * h * c);
    if ctx.amp {
        acc.add(Cat::WeightCasts, 4 * h * q * c);
    }
    // core attention: Q and K for QKᵀ, V for P·V
    acc.add(Cat::AttentionIo, 3 * t * q * c);
    match ctx.kernel {
        Kernel::Eager if !selective => {
            let sc = ctx.scores(m.num_heads);
            acc.add(Cat::AttentionScores, sc * c); // fused scale-mask-softmax output
            if m.attention_dropout > 0.0 {
                acc.add(Cat::AttentionScores, sc * c); // dropout output for P·V
                acc.add(Cat::DropoutMasks, sc);
            }
        }
        Kernel::Eager => {}
        _ => acc.add(Cat::AttentionIo, ctx.lse_bytes(m.num_heads)),
    }
    // output projection input, then the post-attention dropout mask
    acc.add(Cat::AttentionIo, t * q * c);
    let before_post = acc.total();
    if m.hidden_dropout > 0.0 {
        acc.add(Cat::DropoutMasks, ts * h);
    }
    // LayerNorm 2 input and stats; fc1 input
    acc.add(Cat::Residual, ts * h * c);
    acc.add(Cat::Norms, 2 * ts * 4 + ts * h * c);
    // fused GeLU keeps its input; fc2 keeps the GeLU output
    acc.add(Cat::Mlp, 2 * t * i * c);
    if ctx.amp {
        acc.add(Cat::WeightCasts, 2 * h * i * c);
    }
    if m.hidden_dropout > 0.0 {
        acc.add(Cat::DropoutMasks, ts * h);
    }
    let tail = if ctx.kernel == Kernel::Eager && !selective {
        t * q * c * 2 + ctx.scores(m.num_heads) * c
    } else {
        0
    };
    let freed = acc.total() - before_post + tail;
    (acc, freed)
}

pub(super) fn megatron(ctx: &Ctx, m: &TransformerSpec) -> ActivationModel {
    let (t, ts, h, c, s) = (ctx.t, ctx.ts, m.hidden_size, ctx.c, ctx.s);
    let (full_layer, freed) = megatron_layer(ctx, m, false);
    let (selective_layer, _) = megatron_layer(ctx, m, true);
    let mut top = Saved::default();
    top.add(Cat::Embeddings, t * 8 + s * 8); // token and position ids
    if m.hidden_dropout > 0.0 {
        top.add(Cat::DropoutMasks, ts * h); // embedding dropout
    }
    let top_input = top;
    // final LayerNorm: input, stats, output (the LM head input)
    top.add(Cat::Residual, ts * h * c);
    top.add(Cat::Norms, 2 * ts * 4 + ts * h * c);
    let before = top.total();
    // vocab-parallel cross-entropy keeps fp32 softmax over the local vocabulary shard, and labels
    let v = logits_width(m);
    top.add(Cat::HeadLoss, t * v * 4 + t * 8);
    let released = top.total() - before;
    let i = m.intermediate_size;
    let attn_t = match ctx.kernel {
        Kernel::Eager => 2 * ctx.scores(m.num_heads) * c,
        _ => (4 * m.q_width()) * t * c + ctx.b * m.num_heads * s * 4,
    };
    ActivationModel {
        mix: LayerMix::default(),
        full_layer,
        first_layer: full_layer,
        selective_layer,
        layer_input_bytes: ts * h * c,
        shared_layer_bytes: 0,
        shared_checkpoint_bytes: 0,
        freed_before_attention_backward: freed,
        top,
        top_input,
        head_released_bytes: released,
        mlp_backward_transient: 2 * t * i * c,
        attention_backward_transient: attn_t,
        loss_backward_transient: 2 * t * v * 4,
        head_forward_transient: t * v * (c + 4),
        infer_persistent: ts * h * c,
        infer_layer_peak: 2 * ts * h * c + (3 * t * m.q_width() * c).max(2 * t * i * c),
        infer_head_peak: ts * h * c + t * v * c,
        kv_per_layer_elems: 2 * t * m.kv_width(),
    }
}
