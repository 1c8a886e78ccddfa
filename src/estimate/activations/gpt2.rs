//! GPT-2 blocks (HF `GPT2Block`: LayerNorm, fused c_attn, gelu_new, dropout everywhere).

use super::*;

/// One GPT-2 block: saves and the bytes freed before its attention core runs backward.
fn gpt2_layer(ctx: &Ctx, m: &TransformerSpec, active_in: bool, selective: bool) -> (Saved, u64) {
    let mut acc = Saved::default();
    let (t, h, c, r) = (ctx.t, m.hidden_size, ctx.c, ctx.r);
    let i = m.intermediate_size;
    // ln_1 keeps its input (the block input, counted by the caller) and mean/rstd
    if active_in {
        acc.add(Cat::Norms, ln_stats(ctx, r));
    }
    // c_attn: fused q/k/v Conv1D (addmm); LoRA targets q/k/v all map to it
    let cattn_adapted =
        ctx.adapted(LinearRole::Q) || ctx.adapted(LinearRole::K) || ctx.adapted(LinearRole::V);
    let q = m.q_width();
    let cattn = [(if cattn_adapted { first_adapted(ctx) } else { LinearRole::Q }, 3 * h * q)];
    let attn_active = linears(
        &mut acc,
        ctx,
        &LinearGroup { members: &cattn, in_features: h, in_bytes: r, in_cat: Cat::Norms, tokens: ctx.ts },
        active_in,
    );
    let o_trains = ctx.weight_trains(LinearRole::O);
    if attn_active {
        match ctx.kernel {
            Kernel::Eager if !selective => {
                acc.add(Cat::AttentionIo, 3 * t * q * c + if o_trains { t * q * c } else { 0 });
                let sc = ctx.scores(m.num_heads);
                acc.add(Cat::AttentionScores, sc * if ctx.amp { 4 } else { c }); // softmax output
                if m.attention_dropout > 0.0 {
                    acc.add(Cat::AttentionScores, sc * c);
                    acc.add(Cat::DropoutMasks, sc);
                } else if ctx.amp {
                    acc.add(Cat::AttentionScores, sc * c);
                }
            }
            Kernel::Eager => {
                acc.add(Cat::AttentionIo, 3 * t * q * c + if o_trains { t * q * c } else { 0 });
            }
            _ => {
                // q, k, v are views of c_attn's output: one storage, kept once
                acc.add(Cat::AttentionIo, 4 * t * q * c + ctx.lse_bytes(m.num_heads));
            }
        }
    }
    let cproj = [(LinearRole::O, h * q)];
    let active_mid = linears_no_input(&mut acc, ctx, &cproj, q, attn_active) || active_in;
    let before_post = acc.total();
    let tail =
        eager_core_tail(ctx, m, attn_active && !selective, o_trains, m.attention_dropout > 0.0 || ctx.amp);
    if m.hidden_dropout > 0.0 && active_mid {
        acc.add(Cat::DropoutMasks, ctx.ts * h); // resid_dropout
    }
    // residual sum kept by ln_2, then ln_2 stats
    if active_mid {
        acc.add(Cat::Residual, ctx.ts * h * r);
        acc.add(Cat::Norms, ln_stats(ctx, r));
    }
    let cfc = [(LinearRole::Up, h * i)];
    let mlp_active = linears(
        &mut acc,
        ctx,
        &LinearGroup { members: &cfc, in_features: h, in_bytes: r, in_cat: Cat::Norms, tokens: ctx.ts },
        active_mid,
    );
    let down_trains = ctx.weight_trains(LinearRole::Down);
    if mlp_active {
        // gelu_new = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
        if ctx.amp {
            // pow is an fp32 autocast op: x upcast, tanh and 1+tanh in fp32, 0.5·x in half;
            // the product is fp32 and c_proj keeps its half cast
            acc.add(Cat::Mlp, 3 * t * i * 4 + t * i * c);
            if down_trains {
                acc.add(Cat::InputCasts, t * i * c);
            }
        } else {
            // x (pow), 0.5·x, tanh, 1+tanh; the output is kept by c_proj
            acc.add(Cat::Mlp, 4 * t * i * c);
            if down_trains {
                acc.add(Cat::Mlp, t * i * c);
            }
        }
    }
    let mproj = [(LinearRole::Down, i * h)];
    let active_out = linears_no_input(&mut acc, ctx, &mproj, i, mlp_active) || active_mid;
    if m.hidden_dropout > 0.0 && active_out {
        acc.add(Cat::DropoutMasks, ctx.ts * h); // mlp dropout
    }
    let freed = acc.total() - before_post + tail;
    (acc, freed)
}

fn first_adapted(ctx: &Ctx) -> LinearRole {
    [LinearRole::Q, LinearRole::K, LinearRole::V]
        .into_iter()
        .find(|r| ctx.adapted(*r))
        .unwrap_or(LinearRole::Q)
}

pub(super) fn gpt2(ctx: &Ctx, m: &TransformerSpec) -> ActivationModel {
    let (t, h, c, r, s) = (ctx.t, m.hidden_size, ctx.c, ctx.r, ctx.s);
    let (mut full_layer, freed) = gpt2_layer(ctx, m, true, false);
    let (mut selective_layer, _) = gpt2_layer(ctx, m, true, true);
    let (mut first_layer, _) = gpt2_layer(ctx, m, ctx.full, false);
    // every block's input is kept by its ln_1 (block 0: the embedding dropout output)
    for l in [&mut full_layer, &mut selective_layer] {
        l.add(Cat::Residual, ctx.ts * h * r);
    }
    if ctx.full {
        first_layer.add(Cat::Residual, ctx.ts * h * r);
    }
    let mut top = Saved::default();
    if ctx.full {
        top.add(Cat::Embeddings, t * 8 + s * 8); // input ids (wte), position ids (wpe)
    }
    if m.hidden_dropout > 0.0 && ctx.full {
        top.add(Cat::DropoutMasks, ctx.ts * h); // embedding dropout
    }
    let top_input = top;
    // ln_f keeps the last block's output and its stats
    top.add(Cat::Residual, ctx.ts * h * r);
    top.add(Cat::Norms, ln_stats(ctx, r));
    let (released, loss_t) = head_saves(&mut top, ctx, m);
    let (attn_t, mlp_t) = layer_backward_transients(ctx, m, false);
    let i = m.intermediate_size;
    let infer_persistent = t * h * r + s * h * r + s * 8;
    // eager attention gets a materialised (b, 1, s, s) causal mask in the stream dtype, passed to
    // every block positionally: a checkpointed block saves it (one storage for all blocks)
    let ckpt_mask = if ctx.kernel == Kernel::Eager { ctx.b * s * s * r } else { 0 };
    let attn_phase = gpt_like_attention_phase(ctx, m);
    let mlp_phase = 3 * t * h * r + 4 * t * i * c;
    ActivationModel {
        mix: LayerMix::default(),
        full_layer,
        first_layer,
        selective_layer,
        layer_input_bytes: ctx.ts * h * r,
        shared_layer_bytes: 0,
        shared_checkpoint_bytes: ckpt_mask,
        freed_before_attention_backward: freed,
        top,
        top_input,
        head_released_bytes: released,
        mlp_backward_transient: mlp_t,
        attention_backward_transient: attn_t,
        loss_backward_transient: loss_t,
        head_forward_transient: t * logits_width(m) * (c + if c == 4 { 0 } else { 4 }),
        infer_persistent,
        infer_layer_peak: t * h * r + attn_phase.max(mlp_phase),
        infer_head_peak: t * h * r + t * logits_width(m) * c,
        kv_per_layer_elems: 2 * t * m.kv_width(),
    }
}
