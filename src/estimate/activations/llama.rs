//! Llama / Mistral / Qwen2 / Mixtral blocks (HF `LlamaDecoderLayer` and kin).

use super::*;

/// One Llama block. Returns the saves, whether its output requires grad, and the bytes freed
/// before its attention core runs backward (everything after the core, plus for eager attention
/// the tensors of `P·V` and the output copy).
fn llama_layer(ctx: &Ctx, m: &TransformerSpec, active_in: bool, selective: bool) -> (Saved, bool, u64) {
    let mut acc = Saved::default();
    let (t, h, c, r) = (ctx.t, m.hidden_size, ctx.c, ctx.r);
    let (qw, kw) = (m.q_width(), m.kv_width());
    let norm_out_bytes = r; // RMSNorm returns the input dtype (fp32 stream under autocast)
    // --- input_layernorm
    norm_saves(&mut acc, ctx, h, active_in);
    // --- q, k, v projections
    let qkv = [(LinearRole::Q, qw * h), (LinearRole::K, kw * h), (LinearRole::V, kw * h)];
    let attn_active = linears(
        &mut acc,
        ctx,
        &LinearGroup {
            members: &qkv,
            in_features: h,
            in_bytes: norm_out_bytes,
            in_cat: Cat::Norms,
            tokens: ctx.ts,
        },
        active_in,
    );
    // --- attention core (rotary multiplies keep only the shared cos/sin tables)
    let o_trains = ctx.weight_trains(LinearRole::O);
    if attn_active && !selective {
        attention_core(&mut acc, ctx, m.num_heads, qw, kw, m.attention_dropout, o_trains, true);
    } else if attn_active {
        // selective recompute keeps the core's inputs (q, k, v) and output only
        acc.add(
            Cat::AttentionIo,
            t * (qw + 2 * kw) * c + if o_trains || ctx.kernel != Kernel::Eager { t * qw * c } else { 0 },
        );
    }
    // --- o_proj (its input, the attention output, is counted by the core when it trains)
    let o = [(LinearRole::O, h * qw)];
    let o_active = linears_no_input(&mut acc, ctx, &o, qw, attn_active);
    let active_mid = active_in || o_active;
    let before_post = acc.total();
    let core_tail = if ctx.kernel == Kernel::Eager && attn_active && !selective {
        // v copy, the probabilities cast for P·V (when softmax ran in fp32), the output copy
        let sc = ctx.scores(m.num_heads);
        t * qw * c + if c != 4 { sc * c } else { 0 } + if o_trains { t * qw * c } else { 0 }
    } else {
        0
    };
    // --- residual add, post_attention_layernorm (keeps its fp32 input: the residual sum)
    if active_mid && r == 4 {
        acc.add(Cat::Residual, ctx.ts * h * 4);
    }
    norm_saves(&mut acc, ctx, h, active_mid);
    // --- MLP
    let mlp_active = match m.moe {
        None => {
            let i = m.intermediate_size;
            let gu = [(LinearRole::Gate, i * h), (LinearRole::Up, i * h)];
            let act = linears(
                &mut acc,
                ctx,
                &LinearGroup {
                    members: &gu,
                    in_features: h,
                    in_bytes: norm_out_bytes,
                    in_cat: Cat::Norms,
                    tokens: ctx.ts,
                },
                active_mid,
            );
            if act {
                acc.add(Cat::Mlp, 3 * t * i * c); // gate out (silu), up out and silu out (mul)
            }
            let down = [(LinearRole::Down, h * i)];
            let d_trains = ctx.weight_trains(LinearRole::Down);
            if act && d_trains {
                acc.add(Cat::Mlp, t * i * c); // act * up, kept by down_proj
            }
            act | linears_no_input(&mut acc, ctx, &down, i, act)
        }
        Some(moe) => {
            moe_block(&mut acc, ctx, m, moe.experts, moe.top_k, active_mid);
            active_mid || ctx.full
        }
    };
    let freed = acc.total() - before_post + core_tail;
    (acc, active_mid || mlp_active, freed)
}

/// HF `LlamaRMSNorm` (`x.to(f32)`, `pow(2).mean`, `x * rsqrt(var + eps)`, `weight * y.to(dtype)`)
/// saves rsqrt, the fp32 upcast (when the stream is half) and `y` when the weight trains. The
/// norm's own input (the residual stream) is counted by whoever produced it.
fn norm_saves(acc: &mut Saved, ctx: &Ctx, h: u64, active: bool) {
    if !active {
        return;
    }
    let t = ctx.ts;
    acc.add(Cat::Norms, t * 4);
    if ctx.r != 4 {
        acc.add(Cat::Norms, t * h * 4);
    }
    if ctx.full {
        acc.add(Cat::Norms, t * h * if ctx.r == 4 { 4 } else { ctx.c });
    }
}

/// Mixtral sparse MLP as transformers 5 runs it (`experts_implementation="grouped_mm"`).
fn moe_block(acc: &mut Saved, ctx: &Ctx, m: &TransformerSpec, experts: u64, top_k: u64, active: bool) {
    let (t, h, c, i) = (ctx.t, m.hidden_size, ctx.c, m.intermediate_size);
    let tk = t * top_k;
    // router: Linear(h, E) keeps the norm output; softmax in fp32; top-k ids; normalised weights
    if ctx.full {
        if ctx.amp {
            acc.add(Cat::InputCasts, t * h * c);
            acc.add(Cat::WeightCasts, experts * h * c);
        } else {
            acc.add(Cat::Norms, t * h * ctx.r);
        }
    }
    if !(active || ctx.full) {
        return;
    }
    acc.add(Cat::Mlp, t * experts * 4 + tk * 8 + tk * 4 + t * 4);
    // token permutation: expert ids, sort order, inverse order (int64), offsets (int32)
    acc.add(Cat::Mlp, 3 * tk * 8 + experts * 4);
    // routed copies of the tokens (gathered input) and of their routing weights (fp32)
    acc.add(Cat::Mlp, tk * h * c + tk * 4);
    // grouped gate_up output (2I), silu output, silu*up product, down output
    acc.add(Cat::Mlp, tk * 2 * i * c + tk * i * c + tk * i * c + tk * h * c);
    if ctx.amp {
        acc.add(Cat::WeightCasts, experts * 3 * h * i * c);
    }
}

pub(super) fn llama(ctx: &Ctx, m: &TransformerSpec) -> ActivationModel {
    let (t, h, c, r, s) = (ctx.t, m.hidden_size, ctx.c, ctx.r, ctx.s);
    let (full_layer, _, freed) = llama_layer(ctx, m, true, false);
    let (selective_layer, _, _) = llama_layer(ctx, m, true, true);
    let (mut first_layer, _, _) = llama_layer(ctx, m, ctx.full, false);
    // block 0's input is the embedding output: kept by input_layernorm when the stream is fp32
    if ctx.full && r == 4 {
        first_layer.add(Cat::Residual, ctx.ts * h * 4);
    }
    // later blocks' inputs are the previous block's output (a residual sum), kept by the norm
    let mut full_layer = full_layer;
    let mut selective_layer = selective_layer;
    if r == 4 {
        full_layer.add(Cat::Residual, ctx.ts * h * 4);
        selective_layer.add(Cat::Residual, ctx.ts * h * 4);
    }
    let mut top = Saved::default();
    if ctx.full {
        top.add(Cat::Embeddings, t * 8); // input ids, kept by the embedding backward
    }
    let top_input = top;
    // rotary cos/sin (1, s, d): fp32 under autocast (x is fp32), else the compute dtype; kept by
    // the rotary multiplies of blocks that are not checkpointed
    let rope_tables = 2 * s * m.head_dim * if ctx.amp { 4 } else { c };
    // final norm keeps the last block's output (fp32 stream) and its own saves
    if r == 4 {
        top.add(Cat::Residual, ctx.ts * h * 4);
    }
    norm_saves(&mut top, ctx, h, true);
    let (head_released, loss_transient) = head_saves(&mut top, ctx, m);
    let (attn_t, mlp_t) = layer_backward_transients(ctx, m, true);
    // inference
    let mask =
        if ctx.kernel == Kernel::Eager { ctx.b * s * s * c.max(if r == 4 { 4 } else { c }) } else { 0 };
    let infer_persistent = t * h * r + 2 * s * m.head_dim * c + s * 8 + mask;
    let q_embed = t * m.q_width() * c;
    let attn_phase = t * h * r
        + q_embed
        + match ctx.kernel {
            Kernel::Eager => {
                // scores, scaled scores, masked scores, then softmax(dtype=float32): a half input
                // is upcast first, so add (c) + fp32 copy (4) + fp32 output (4) are alive at once
                ctx.scores(m.num_heads) * if c == 4 { 8 } else { c + 8 }
                    + if m.num_kv_heads != m.num_heads { 2 * t * m.q_width() * c } else { 0 }
            }
            _ => t * m.q_width() * c,
        };
    let mlp_width = m.moe.map_or(m.intermediate_size, |x| x.top_k * m.intermediate_size);
    let mlp_phase = 2 * t * h * r + 3 * t * mlp_width * c;
    ActivationModel {
        mix: LayerMix::default(),
        full_layer,
        first_layer,
        selective_layer,
        layer_input_bytes: ctx.ts * h * r,
        shared_layer_bytes: rope_tables,
        shared_checkpoint_bytes: 0,
        freed_before_attention_backward: freed,
        top,
        top_input,
        head_released_bytes: head_released,
        mlp_backward_transient: mlp_t,
        attention_backward_transient: attn_t,
        loss_backward_transient: loss_transient,
        head_forward_transient: t * logits_width(m) * (c + if c == 4 { 0 } else { 4 }),
        infer_persistent,
        infer_layer_peak: t * h * r + attn_phase.max(mlp_phase),
        infer_head_peak: t * h * r + t * logits_width(m) * c,
        kv_per_layer_elems: 2 * t * m.kv_width(),
    }
}
