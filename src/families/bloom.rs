//! BLOOM: ALiBi instead of positions (a per-head linear bias added to the scores, no rotary), a
//! LayerNorm after the embedding, pre-LayerNorm blocks with a fused biased `query_key_value`
//! (q, k, v interleaved per head), a biased `dense`, and a `4h` GELU MLP (`GeLUFunction` keeps
//! its input). transformers has one attention path for it, the eager one: `alibi.baddbmm(q, k^T)`
//! keeps q and k, the fp32 softmax its output, the product with v the probabilities in the
//! model's dtype and v: the eager rule, whatever attention is asked for.

use super::gpt_neox::PEFT;
use super::prelude::*;

const STYLE: Style = Style { norm: NormKind::Layer, fused_qkv: true, act: Act::Gelu, gated: false, ..LLAMA };

/// BigScience BLOOM.
pub(super) struct Bloom;

impl FamilyDef for Bloom {
    fn id(&self) -> &'static str {
        "bloom"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["bloom"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "BloomBlock"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let h = m.hidden_size;
        super::gpt_neox::params(p, m);
        // word_embeddings_layernorm
        p.push(h, 1, 2, ParamKind::Vector, Scope::Input, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        // ALiBi: the scores get a bias, q and k are not rotated
        sequential_block(g, m, flags | layer::NO_ROPE, x, &STYLE)
    }

    fn embed(&self, g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
        let h = m.hidden_size;
        let e = g.embedding(h);
        g.norm(e, g.ctx.rank_tokens, h, NormKind::Layer, "word_embeddings_layernorm")
    }

    fn peft_modules(&self) -> Option<&'static PeftModules> {
        Some(&PEFT)
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        (model_type == "bloom").then_some(
            r#"{"vocab_size":250880,"hidden_size":64,"n_layer":2,"n_head":8,"layer_norm_epsilon":1e-05,
            "apply_residual_connection_post_layernorm":false,"hidden_dropout":0.0,
            "attention_dropout":0.0,"tie_word_embeddings":true}"#,
        )
    }

    fn config_kv_heads(&self, _: &Reader<'_>, heads: u64) -> Result<u64, ConfigError> {
        Ok(heads)
    }

    fn config_head_dim_key(&self) -> bool {
        false
    }

    fn config_intermediate(&self, _: &Reader<'_>, h: u64) -> Result<u64, ConfigError> {
        Ok(4 * h)
    }

    fn config(&self, r: &Reader<'_>, _: &str, d: &mut Draft) -> Result<(), ConfigError> {
        let s = &mut d.spec;
        (s.qkv_bias, s.o_bias, s.mlp_bias) = (true, true, true);
        s.hidden_dropout = r.f64_or("hidden_dropout", 0.0)?;
        s.attention_dropout = r.f64_or("attention_dropout", 0.0)?;
        // ALiBi: no position table, no rotary, no length limit but the training one
        s.rope = None;
        Ok(())
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        OpKinds {
            rope: Rope::None,
            eager_only: true,
            own_attention: true,
            named_scores: true,
            ..STYLE.kinds()
        }
    }
}
