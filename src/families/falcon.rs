//! Falcon: a fused `query_key_value` for multi-query (one K/V head) or grouped attention
//! (`new_decoder_architecture`), rotary, attention and MLP in parallel on one LayerNorm (two with
//! the new architecture), plain GELU MLP, no biases by default. Its causal mask is always
//! materialised (SDPA runs the memory-efficient kernel with a bias on grouped K/V as they are),
//! and its eager softmax runs in the hidden states' dtype.

use super::gpt_neox::parallel_block;
use super::prelude::*;

const STYLE: Style = Style { norm: NormKind::Layer, fused_qkv: true, act: Act::Gelu, gated: false, ..LLAMA };

/// Falcon.
pub(super) struct Falcon;

impl FamilyDef for Falcon {
    fn id(&self) -> &'static str {
        "falcon"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["falcon"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "FalconDecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        super::gpt_neox::params(p, m);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        parallel_block(g, m, flags, x, &STYLE, attention)
    }

    fn peft_modules(&self) -> Option<&'static PeftModules> {
        Some(&super::gpt_neox::PEFT)
    }

    fn ops(&self, m: &TransformerSpec) -> OpKinds {
        OpKinds {
            // softmax(dtype=hidden_states.dtype)
            softmax: Softmax::Native,
            always_masked: true,
            // the new decoder architecture caches K/V broadcast to every query head
            kv: if m.parallel_norms >= 2 { KvLayout::Broadcast } else { KvLayout::PerKvHead },
            ..STYLE.kinds()
        }
    }
}

/// Falcon's attention: q is a view of the fused projection; k and v are index copies of the one
/// K/V head (multi-query) or broadcast to every head (new architecture); the causal mask is always
/// materialised, so SDPA runs the memory-efficient kernel with a bias.
fn attention(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor, _: &Style) -> Tensor {
    let ctx = g.ctx;
    let (t, ts, h, c) = (ctx.tokens, ctx.rank_tokens, m.hidden_size, ctx.compute_elem);
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
