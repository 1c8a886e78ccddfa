//! Megatron-LM GPT (the layer Korthikanti et al. 2022 account for): the GPT-2 block run with
//! Megatron's fused kernels — fused LayerNorm (fp32 statistics), a fused scale-mask-softmax that
//! keeps its half output, a fused GeLU that keeps only its input — with half activations under
//! mixed precision, and tensor / sequence parallelism through the sharded spec.

use super::*;

pub(super) fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: T) -> T {
    let ctx = g.ctx;
    let (t, ts, h) = (ctx.t, ctx.ts, m.hidden_size);
    let (n, q, i) = (ts * h, m.q_width(), m.intermediate_size);
    let a_in = g.norm(x, ts, h, NormKind::LayerFp32Stats, "input_layernorm");
    let qkv = g.linear(a_in, ts, h, 3 * q, LinearRole::Q, Cat::AttentionIo, "query_key_value");
    let o = g.attention(qkv, qkv, qkv, attn_of(ctx, m, flags));
    let a = g.linear(o, t, q, h, LinearRole::O, Cat::AttentionIo, "dense");
    let a = g.dropout(a, n, m.hidden_dropout);
    let x2 = g.add(x, a, n, Cat::Residual);
    let f_in = g.norm(x2, ts, h, NormKind::LayerFp32Stats, "post_attention_layernorm");
    let up = g.linear(f_in, ts, h, i, LinearRole::Up, Cat::Mlp, "dense_h_to_4h");
    let act = g.act(up, t * i, Act::Gelu);
    let f = g.linear(act, t, i, h, LinearRole::Down, Cat::Mlp, "dense_4h_to_h");
    let f = g.dropout(f, n, m.hidden_dropout);
    g.add(x2, f, n, Cat::Residual)
}

/// Token and position ids, embedding dropout.
pub(super) fn embed(g: &mut Graph<'_>, m: &TransformerSpec) -> T {
    let ctx = g.ctx;
    let e = g.embedding(m.hidden_size);
    g.keep_new(ctx.s * 8, Cat::Embeddings);
    g.dropout(e, ctx.ts * m.hidden_size, m.hidden_dropout)
}

/// Final fused LayerNorm (its output is the LM head's input), then the vocab-parallel
/// cross-entropy: fp32 softmax over the local vocabulary shard and the labels.
pub(super) fn head(g: &mut Graph<'_>, m: &TransformerSpec, x: T) -> u64 {
    let ctx = g.ctx;
    let n = g.norm(x, ctx.ts, m.hidden_size, NormKind::LayerFp32Stats, "final_layernorm");
    g.keep(n);
    let before = g.kept.total();
    g.keep_new(ctx.t * classes(m) * 4 + ctx.t * 8, Cat::HeadLoss);
    g.kept.total() - before
}
