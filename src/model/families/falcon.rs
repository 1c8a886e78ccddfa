//! Falcon: a fused `query_key_value` for multi-query (one K/V head) or grouped attention
//! (`new_decoder_architecture`), rotary, attention and MLP in parallel on one LayerNorm (two with
//! the new architecture), plain GELU MLP, no biases by default.

use super::gpt_neox::parallel_block;
pub(super) use super::gpt_neox::params;
use super::*;

const STYLE: Style = Style { norm: NormKind::Layer, fused_qkv: true, act: Act::Gelu, gated: false, ..LLAMA };

pub(super) fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: T) -> T {
    parallel_block(g, m, flags, x, &STYLE)
}

/// Falcon's attention: q is a view of the fused projection; k and v are index copies of the one
/// K/V head (multi-query) or broadcast to every head (new architecture); the causal mask is always
/// materialised, so SDPA runs the memory-efficient kernel with a bias.
pub(super) fn attention(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: T) -> T {
    let ctx = g.ctx;
    let (t, ts, h, c) = (ctx.t, ctx.ts, m.hidden_size, ctx.c);
    let (qw, kw) = (m.q_width(), m.kv_width());
    let nda = m.parallel_norms >= 2;
    let qkv = g.linear(x, ts, h, qw + 2 * kw, LinearRole::Q, Cat::AttentionIo, "query_key_value");
    let rg = g.rg(qkv);
    let kvw = if nda { qw } else { kw };
    let k = g.tensor(t * kvw * c, c, rg, Cat::AttentionIo);
    let v = g.tensor(t * kvw * c, c, rg, Cat::AttentionIo);
    let q = g.rope(qkv, t * qw, rope_dim(m), Shared::Rope);
    let k = g.rope(k, t * kvw, rope_dim(m), Shared::Rope);
    let mut a = attn_of(ctx, m, flags);
    if nda {
        a.kv_heads = a.heads;
    }
    let o = g.attention(q, k, v, a);
    g.linear(o, t, qw, h, LinearRole::O, Cat::AttentionIo, "dense")
}
