//! GPT-2 (`GPT2LMHeadModel`): learned positions, pre-LayerNorm, a fused `c_attn` Conv1D (q, k, v
//! are views of one storage), eager softmax in the scores' dtype, `gelu_new` written out in ops,
//! dropout on embeddings, attention probabilities and both residual branches.

use super::*;

pub(super) fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: T) -> T {
    let ctx = g.ctx;
    let (t, ts, h) = (ctx.t, ctx.ts, m.hidden_size);
    let (n, q, i) = (ts * h, m.q_width(), m.intermediate_size);
    let a_in = g.norm(x, ts, h, NormKind::Layer, "ln_1");
    // LoRA on q, k or v puts one adapter on the fused c_attn
    let role = [LinearRole::Q, LinearRole::K, LinearRole::V]
        .into_iter()
        .find(|r| ctx.adapted(*r))
        .unwrap_or(LinearRole::Q);
    let qkv = g.linear(a_in, ts, h, 3 * q, role, Cat::AttentionIo, "c_attn");
    let o = g.attention(qkv, qkv, qkv, attn_of(ctx, m, flags));
    let a = g.linear(o, t, q, h, LinearRole::O, Cat::AttentionIo, "attn.c_proj");
    let a = g.dropout(a, n, m.hidden_dropout);
    let x2 = g.add(x, a, n, Cat::Residual);
    let f_in = g.norm(x2, ts, h, NormKind::Layer, "ln_2");
    let up = g.linear(f_in, ts, h, i, LinearRole::Up, Cat::Mlp, "c_fc");
    let act = g.gelu_new(up, t * i);
    let f = g.linear(act, t, i, h, LinearRole::Down, Cat::Mlp, "mlp.c_proj");
    let f = g.dropout(f, n, m.hidden_dropout);
    g.add(x2, f, n, Cat::Residual)
}

/// Token and position embeddings (ids and position ids kept when they train), dropout.
pub(super) fn embed(g: &mut Graph<'_>, m: &TransformerSpec) -> T {
    let ctx = g.ctx;
    let e = g.embedding(m.hidden_size);
    if ctx.full {
        g.keep_new(ctx.s * 8, Cat::Embeddings); // position ids (wpe)
    }
    g.dropout(e, ctx.ts * m.hidden_size, m.hidden_dropout)
}
