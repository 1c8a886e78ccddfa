//! BERT (`BertForMaskedLM`, `BertForSequenceClassification`): word + position + token-type
//! embeddings under a LayerNorm, post-LayerNorm blocks (`LN(x + dropout(f(x)))`), separate q/k/v,
//! eager softmax in the scores' dtype, erf GELU; the MLM head's transform (dense, GELU,
//! LayerNorm) and decoder, with the loss on logits in the compute dtype.

use super::params::classic_head_params;
use super::prelude::*;

/// BERT's (and ViT's) module names for PEFT.
pub(super) const PEFT: PeftModules = PeftModules {
    qkv: None,
    q: r"attention\.(?:self|attention)\.query",
    k: r"attention\.(?:self|attention)\.key",
    v: r"attention\.(?:self|attention)\.value",
    o: r"attention\.output\.dense",
    gate_up: None,
    gate: "",
    up: r"intermediate\.dense",
    down: r"layer\.\d+\.output\.dense",
};

/// BERT.
pub(super) struct Bert;

impl FamilyDef for Bert {
    fn id(&self) -> &'static str {
        "bert"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["bert"]
    }

    fn read_own_config(&self, c: &ConfigSource<'_>) -> Option<Result<TransformerSpec, ConfigError>> {
        Some(read(c.text))
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "BertLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        params(p, m);
        classic_head_params(p, m, true);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        block(g, m, flags, x)
    }

    fn embed(&self, g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
        embed(g, m)
    }

    fn head(&self, g: &mut Graph<'_>, m: &TransformerSpec, x: Tensor) -> u64 {
        head(g, m, x)
    }

    fn peft_modules(&self) -> Option<&'static PeftModules> {
        Some(&PEFT)
    }

    fn default_head(&self) -> (Head, &'static str) {
        (Head::MaskedLm, "BertForMaskedLM")
    }

    fn ops(&self, m: &TransformerSpec) -> OpKinds {
        OpKinds {
            rope: Rope::None,
            gated: false,
            softmax: Softmax::Native,
            loss: if m.head == Head::MaskedLm { LossKind::MaskedLm } else { LossKind::Pooled },
            inference: InferKind::Classic { positions: false, mlp_widths: 2, mlp_inputs: 2 },
            kv: KvLayout::None,
            final_norm: NormKind::Layer,
            ..OpKinds::DECODER
        }
    }
}

/// Word, position and token-type embeddings with their LayerNorm; per block q, k, v, o, the
/// attention output's LayerNorm, the intermediate and output dense layers and the output
/// LayerNorm, every Linear biased.
pub(super) fn params(p: &mut Params, m: &TransformerSpec) {
    use LinearRole as R;
    use ParamKind as K;
    use Scope::{Block as B, Input as In};
    let (h, l, v, i, q) = (m.hidden_size, m.num_layers, m.vocab_size, m.intermediate_size, m.q_width());
    p.push(v, h, 1, K::Embedding, In, true);
    p.push(m.max_position_embeddings, h, 1, K::Embedding, In, false);
    p.push(m.type_vocab_size, h, 1, K::Embedding, In, false);
    p.push(h, 1, 2, K::Vector, In, false); // embeddings LayerNorm
    p.push(q, h, l, K::Linear(R::Q), B, true);
    p.push(q, h, l, K::Linear(R::K), B, true);
    p.push(q, h, l, K::Linear(R::V), B, true);
    p.push(h, q, l, K::Linear(R::O), B, true);
    p.push(q, 1, 3 * l, K::Vector, B, true); // q,k,v biases
    p.push(h, 1, l, K::Vector, B, false); // o bias
    p.push(h, 1, 2 * l, K::Vector, B, false); // attention.output.LayerNorm
    p.push(i, h, l, K::Linear(R::Up), B, true);
    p.push(i, 1, l, K::Vector, B, true);
    p.push(h, i, l, K::Linear(R::Down), B, true);
    p.push(h, 1, l, K::Vector, B, false);
    p.push(h, 1, 2 * l, K::Vector, B, false); // output.LayerNorm
}

pub(super) fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
    let ctx = g.ctx;
    let (ts, h, q) = (ctx.rank_tokens, m.hidden_size, m.q_width());
    let qp = g.linear(x, ts, h, q, LinearRole::Q, Cat::AttentionIo, "query");
    let kp = g.linear(x, ts, h, q, LinearRole::K, Cat::AttentionIo, "key");
    let vp = g.linear(x, ts, h, q, LinearRole::V, Cat::AttentionIo, "value");
    let o = g.attention(qp, kp, vp, attn_of(ctx, m, flags));
    post_ln_tail(g, m, x, o)
}

/// The post-LayerNorm block after its attention core `o` (BERT's, and DeBERTa's around its own
/// attention): the output projection, dropout and `LN(x + ·)`, then the GELU MLP, dropout and
/// `LN(x2 + ·)`.
pub(super) fn post_ln_tail(g: &mut Graph<'_>, m: &TransformerSpec, x: Tensor, o: Tensor) -> Tensor {
    let ctx = g.ctx;
    let (t, ts, h) = (ctx.tokens, ctx.rank_tokens, m.hidden_size);
    let (n, q, i) = (ts * h, m.q_width(), m.intermediate_size);
    let a = g.linear(o, t, q, h, LinearRole::O, Cat::AttentionIo, "attention.output.dense");
    let a = g.dropout(a, n, m.hidden_dropout);
    let s1 = g.add(x, a, n, Cat::Residual);
    let x2 = g.norm(s1, ts, h, NormKind::Layer, "attention.output.LayerNorm");
    let up = g.linear(x2, ts, h, i, LinearRole::Up, Cat::Mlp, "intermediate.dense");
    let act = g.act(up, t * i, Act::Gelu);
    let f = g.linear(act, t, i, h, LinearRole::Down, Cat::Mlp, "output.dense");
    let f = g.dropout(f, n, m.hidden_dropout);
    let s2 = g.add(x2, f, n, Cat::Residual);
    g.norm(s2, ts, h, NormKind::Layer, "output.LayerNorm")
}

/// Word ids and token-type ids (gathered from a `(1, s)` buffer) kept when the embeddings train;
/// the sum kept by the embedding LayerNorm; dropout.
fn embed(g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
    let ctx = g.ctx;
    let (t, h) = (ctx.tokens, m.hidden_size);
    let e = g.embedding(h);
    if ctx.full {
        g.keep_new(ctx.seq * 8, Cat::Embeddings);
    }
    let sum = g.tensor(t * h * ctx.residual_elem, ctx.residual_elem, g.rg(e), Cat::Embeddings);
    let n = g.norm(sum, ctx.rank_tokens, h, NormKind::Layer, "embeddings.LayerNorm");
    g.dropout(n, t * h, m.hidden_dropout)
}

/// The MLM head (transform + decoder + cross-entropy) or the pooled classifier.
pub(super) fn head(g: &mut Graph<'_>, m: &TransformerSpec, x: Tensor) -> u64 {
    let ctx = g.ctx;
    let (t, ts, h, c) = (ctx.tokens, ctx.rank_tokens, m.hidden_size, ctx.compute_elem);
    let before = g.kept.total();
    match m.head {
        Head::MaskedLm => {
            let v = m.vocab_size;
            let d = g.linear(x, ts, h, h, LinearRole::Dense, Cat::HeadLoss, "transform.dense");
            let a = g.act(d, t * h, Act::Gelu);
            let n = g.norm(a, ts, h, NormKind::Layer, "transform.LayerNorm");
            let _ = g.linear(n, ts, h, v, LinearRole::Dense, Cat::HeadLoss, "decoder");
            g.cross_entropy(t, v);
        }
        _ => {
            let n = classes(m);
            if n > 0 {
                // pooler (dense + tanh on the first token), dropout and the classifier: small
                g.keep_new(3 * ctx.batch * h * c + ctx.batch * n * 4 + ctx.batch * 8, Cat::HeadLoss);
                if ctx.torch.softmax_keeps_input() {
                    // before PyTorch 1.11 log_softmax keeps its input (the logits) too
                    g.keep_new(ctx.batch * n * if ctx.amp { 4 } else { c }, Cat::HeadLoss);
                }
            }
        }
    }
    g.kept.total() - before
}

/// BERT's own keys.
pub(super) fn read(r: &Reader<'_>) -> Result<TransformerSpec, ConfigError> {
    let h = r.positive("hidden_size")?;
    let a = r.positive("num_attention_heads")?;
    super::config::check_divides(r, "num_attention_heads", h, a)?;
    Ok(TransformerSpec {
        family: super::by_id("bert").unwrap_or_default(),
        head: Head::MaskedLm,
        hidden_size: h,
        num_layers: r.positive("num_hidden_layers")?,
        num_heads: a,
        num_kv_heads: a,
        head_dim: h / a,
        intermediate_size: r.positive("intermediate_size")?,
        vocab_size: r.positive("vocab_size")?,
        max_position_embeddings: r.positive("max_position_embeddings")?,
        type_vocab_size: r.opt_u64("type_vocab_size")?.unwrap_or(2),
        tie_word_embeddings: r.bool_or("tie_word_embeddings", true)?,
        qkv_bias: true,
        o_bias: true,
        mlp_bias: true,
        attention_dropout: r.f64_or("attention_probs_dropout_prob", 0.1)?,
        hidden_dropout: r.f64_or("hidden_dropout_prob", 0.1)?,
        ..TransformerSpec::default()
    })
}
