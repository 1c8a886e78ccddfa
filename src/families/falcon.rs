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

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        match model_type {
            "falcon" => Some(
                r#"{"vocab_size":65024,"hidden_size":4544,"num_hidden_layers":32,"num_attention_heads":71,
                "multi_query":true,"parallel_attn":true,"new_decoder_architecture":false,"bias":false,
                "tie_word_embeddings":true,"hidden_dropout":0.0,"attention_dropout":0.0}"#,
            ),
            _ => None,
        }
    }

    fn config_kv_heads(&self, r: &Reader<'_>, heads: u64) -> Result<u64, ConfigError> {
        Ok(if r.bool_or("new_decoder_architecture", false)? {
            r.u64_or("num_kv_heads", heads)?
        } else if r.bool_or("multi_query", true)? {
            1
        } else {
            heads
        })
    }

    fn config_head_dim_key(&self) -> bool {
        false
    }

    fn config_intermediate(&self, r: &Reader<'_>, hidden: u64) -> Result<u64, ConfigError> {
        Ok(r.opt_u64("ffn_hidden_size")?.unwrap_or(4 * hidden))
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let s = &mut d.spec;
        let b = r.bool_or("bias", false)?;
        (s.qkv_bias, s.o_bias, s.mlp_bias) = (b, b, b);
        s.parallel_norms = if r.bool_or("new_decoder_architecture", false)? {
            r.u64_or("num_ln_in_parallel_attn", 2)?.max(1)
        } else if r.bool_or("parallel_attn", true)? {
            1
        } else {
            0
        };
        s.hidden_dropout = r.f64_or("hidden_dropout", 0.0)?;
        Ok(())
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
