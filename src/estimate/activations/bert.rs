//! BERT encoder blocks (HF `BertLayer`: post-LayerNorm, separate q/k/v, erf GELU).

use super::*;

/// One BERT block: saves and the bytes freed before its attention core runs backward.
fn bert_layer(ctx: &Ctx, m: &TransformerSpec, active_in: bool, selective: bool) -> (Saved, u64) {
    let mut acc = Saved::default();
    let (t, h, c, r) = (ctx.t, m.hidden_size, ctx.c, ctx.r);
    let i = m.intermediate_size;
    // the block input (previous LayerNorm output, or the embedding dropout output for block 0)
    // is kept by query/key/value when they train
    let q = m.q_width();
    let qkv = [(LinearRole::Q, q * h), (LinearRole::K, q * h), (LinearRole::V, q * h)];
    let attn_active = linears(
        &mut acc,
        ctx,
        &LinearGroup { members: &qkv, in_features: h, in_bytes: r, in_cat: Cat::Norms, tokens: ctx.ts },
        active_in,
    );
    let o_trains = ctx.weight_trains(LinearRole::O);
    if attn_active {
        match ctx.kernel {
            Kernel::Eager if !selective => {
                attention_core(&mut acc, ctx, m.num_heads, h, h, m.attention_dropout, o_trains, false)
            }
            Kernel::Eager => acc.add(Cat::AttentionIo, 3 * t * h * c + if o_trains { t * h * c } else { 0 }),
            _ => attention_core(&mut acc, ctx, m.num_heads, h, h, m.attention_dropout, o_trains, false),
        }
    }
    let o = [(LinearRole::O, h * q)];
    let active_mid = linears_no_input(&mut acc, ctx, &o, q, attn_active) || active_in;
    let before_post = acc.total();
    let tail =
        eager_core_tail(ctx, m, attn_active && !selective, o_trains, m.attention_dropout > 0.0 || ctx.amp);
    if active_mid {
        if m.hidden_dropout > 0.0 {
            acc.add(Cat::DropoutMasks, ctx.ts * h);
        }
        acc.add(Cat::Residual, ctx.ts * h * r); // dropout(dense) + input, kept by LayerNorm
        acc.add(Cat::Norms, ln_stats(ctx, r));
    }
    let up = [(LinearRole::Up, i * h)];
    let mlp_active = linears(
        &mut acc,
        ctx,
        &LinearGroup { members: &up, in_features: h, in_bytes: r, in_cat: Cat::Norms, tokens: ctx.ts },
        active_mid,
    );
    if mlp_active {
        acc.add(Cat::Mlp, t * i * c); // intermediate.dense output, kept by GELU
        if ctx.weight_trains(LinearRole::Down) {
            acc.add(Cat::Mlp, t * i * c); // GELU output, kept by output.dense
        }
    }
    let down = [(LinearRole::Down, h * i)];
    let active_out = linears_no_input(&mut acc, ctx, &down, i, mlp_active) || active_mid;
    if active_out {
        if m.hidden_dropout > 0.0 {
            acc.add(Cat::DropoutMasks, ctx.ts * h);
        }
        acc.add(Cat::Residual, ctx.ts * h * r);
        acc.add(Cat::Norms, ln_stats(ctx, r));
    }
    let freed = acc.total() - before_post + tail;
    (acc, freed)
}

pub(super) fn bert(ctx: &Ctx, m: &TransformerSpec) -> ActivationModel {
    let (t, h, c, r, s) = (ctx.t, m.hidden_size, ctx.c, ctx.r, ctx.s);
    let (full_layer, freed) = bert_layer(ctx, m, true, false);
    let (selective_layer, _) = bert_layer(ctx, m, true, true);
    let (first_layer, _) = bert_layer(ctx, m, ctx.full, false);
    let mut top = Saved::default();
    if ctx.full {
        // word ids, labels come with the loss; token-type ids gathered from the buffer (1, s)
        top.add(Cat::Embeddings, t * 8 + s * 8);
        top.add(Cat::Embeddings, t * h * r); // word+position+type sum, kept by LayerNorm
        top.add(Cat::Norms, ln_stats(ctx, r));
        if m.hidden_dropout > 0.0 {
            top.add(Cat::DropoutMasks, t * h);
        }
    }
    let top_input = top;
    let (released, loss_t) = match m.head {
        Head::MaskedLm => {
            let before = top.total();
            let v = m.vocab_size;
            // transform: dense (keeps the last block output) -> GELU -> LayerNorm
            if ctx.full {
                if !ctx.amp {
                    top.add(Cat::Norms, t * h * r);
                }
                if ctx.amp {
                    top.add(Cat::InputCasts, t * h * c);
                    top.add(Cat::WeightCasts, h * h * c);
                }
                top.add(Cat::HeadLoss, t * h * c); // dense output, kept by GELU
                top.add(Cat::HeadLoss, t * h * if ctx.amp { 4 } else { c }); // GELU out (fp32 cast for LN)
                top.add(Cat::Norms, ln_stats(ctx, r));
                if ctx.amp {
                    top.add(Cat::InputCasts, t * h * c);
                } else {
                    top.add(Cat::HeadLoss, t * h * c); // LN output, kept by the decoder
                }
            }
            if ctx.amp {
                top.add(Cat::WeightCasts, v * h * c);
                // cross_entropy autocasts the logits to fp32; log_softmax output stays half
                top.add(Cat::HeadLoss, t * v * 4 + t * v * c + 4 + t * 8);
            } else {
                // no upcast: log_softmax in the compute dtype, total_weight likewise
                top.add(Cat::HeadLoss, t * v * c + c + t * 8);
            }
            (top.total() - before, 2 * t * v * if ctx.amp { 4 } else { c })
        }
        _ => {
            let before = top.total();
            let n = logits_width(m);
            if n > 0 {
                // pooler (dense + tanh on the first token) and classifier; small
                top.add(Cat::HeadLoss, 3 * ctx.b * h * c + ctx.b * n * 4 + ctx.b * 8);
            }
            (top.total() - before, 2 * ctx.b * n * 4)
        }
    };
    let (attn_t, mlp_t) = layer_backward_transients(ctx, m, false);
    let i = m.intermediate_size;
    let infer_persistent = t * h * r + s * 8;
    let attn_phase = gpt_like_attention_phase(ctx, m);
    let mlp_phase = 2 * t * h * r + 2 * t * i * c;
    ActivationModel {
        mix: LayerMix::default(),
        full_layer,
        first_layer,
        selective_layer,
        layer_input_bytes: ctx.ts * h * r,
        shared_layer_bytes: 0,
        shared_checkpoint_bytes: 0,
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
        kv_per_layer_elems: 0,
    }
}
