//! BERT (`BertForMaskedLM`, `BertForSequenceClassification`): word + position + token-type
//! embeddings under a LayerNorm, post-LayerNorm blocks (`LN(x + dropout(f(x)))`), separate q/k/v,
//! eager softmax in the scores' dtype, erf GELU; the MLM head's transform (dense, GELU,
//! LayerNorm) and decoder, with the loss on logits in the compute dtype.

use super::*;

pub(super) fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: T) -> T {
    let ctx = g.ctx;
    let (t, ts, h) = (ctx.t, ctx.ts, m.hidden_size);
    let (n, q, i) = (ts * h, m.q_width(), m.intermediate_size);
    let qp = g.linear(x, ts, h, q, LinearRole::Q, Cat::AttentionIo, "query");
    let kp = g.linear(x, ts, h, q, LinearRole::K, Cat::AttentionIo, "key");
    let vp = g.linear(x, ts, h, q, LinearRole::V, Cat::AttentionIo, "value");
    let o = g.attention(qp, kp, vp, attn_of(ctx, m, flags));
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
pub(super) fn embed(g: &mut Graph<'_>, m: &TransformerSpec) -> T {
    let ctx = g.ctx;
    let (t, h) = (ctx.t, m.hidden_size);
    let e = g.embedding(h);
    if ctx.full {
        g.keep_new(ctx.s * 8, Cat::Embeddings);
    }
    let sum = g.tensor(t * h * ctx.r, ctx.r, g.rg(e), Cat::Embeddings);
    let n = g.norm(sum, ctx.ts, h, NormKind::Layer, "embeddings.LayerNorm");
    g.dropout(n, t * h, m.hidden_dropout)
}

/// The MLM head (transform + decoder + cross-entropy) or the pooled classifier.
pub(super) fn head(g: &mut Graph<'_>, m: &TransformerSpec, x: T) -> u64 {
    let ctx = g.ctx;
    let (t, ts, h, c) = (ctx.t, ctx.ts, m.hidden_size, ctx.c);
    let before = g.kept.total();
    match m.head {
        Head::MaskedLm => {
            let v = m.vocab_size;
            let d = g.linear(x, ts, h, h, LinearRole::Dense, Cat::HeadLoss, "transform.dense");
            let a = g.act(d, t * h, Act::Gelu);
            let n = g.norm(a, ts, h, NormKind::Layer, "transform.LayerNorm");
            let _ = g.linear(n, ts, h, v, LinearRole::Dense, Cat::HeadLoss, "decoder");
            if ctx.amp {
                // cross_entropy autocasts the logits to fp32; the log-softmax output stays half
                g.keep_new(t * v * 4 + t * v * c + 4 + t * 8, Cat::HeadLoss);
            } else {
                // no upcast: log_softmax in the compute dtype, total_weight likewise
                g.keep_new(t * v * c + c + t * 8, Cat::HeadLoss);
            }
            if ctx.torch.softmax_keeps_input() {
                // before PyTorch 1.11 log_softmax keeps its input too: the logits (fp32 under
                // autocast, which casts them for cross_entropy)
                g.keep_new(t * v * if ctx.amp { 4 } else { c }, Cat::HeadLoss);
            }
        }
        _ => {
            let n = classes(m);
            if n > 0 {
                // pooler (dense + tanh on the first token), dropout and the classifier: small
                g.keep_new(3 * ctx.b * h * c + ctx.b * n * 4 + ctx.b * 8, Cat::HeadLoss);
                if ctx.torch.softmax_keeps_input() {
                    // before PyTorch 1.11 log_softmax keeps its input (the logits) too
                    g.keep_new(ctx.b * n * if ctx.amp { 4 } else { c }, Cat::HeadLoss);
                }
            }
        }
    }
    g.kept.total() - before
}
