//! ViT (`ViTForImageClassification`): a conv patch embedding with a class token and learned
//! positions, pre-LayerNorm encoder blocks (biased q/k/v/o, GELU MLP, hidden dropout), the final
//! LayerNorm and a linear classifier on the class token. Tokens are `(image/patch)² + 1`.

use super::*;

const STYLE: Style = Style { norm: NormKind::Layer, act: Act::Gelu, gated: false, ..LLAMA };

pub(super) fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: T) -> T {
    sequential_block(g, m, flags, x, &STYLE)
}

/// Patch conv (keeps the pixels, in the model dtype, when it trains), class token concatenated,
/// positions added, dropout.
pub(super) fn embed(g: &mut Graph<'_>, m: &TransformerSpec) -> T {
    let ctx = g.ctx;
    let patch = m.rope_dim.max(1);
    if ctx.full {
        let pixels = ctx.b * 3 * m.max_position_embeddings.saturating_sub(1) * patch * patch;
        g.keep_new(pixels * ctx.c, Cat::Embeddings);
    }
    let n = ctx.t * m.hidden_size;
    let e = g.tensor(n * ctx.r, ctx.r, ctx.full, Cat::Embeddings);
    g.dropout(e, n, m.hidden_dropout)
}

/// Final LayerNorm over all tokens, the classifier on the class token (a view of the norm's
/// output, so the whole output is kept), cross-entropy on the logits in the model dtype.
pub(super) fn head(g: &mut Graph<'_>, m: &TransformerSpec, x: T) -> u64 {
    let ctx = g.ctx;
    let n = g.norm(x, ctx.ts, m.hidden_size, NormKind::Layer, "layernorm");
    let before = g.kept.total();
    if ctx.full {
        g.keep(n);
    }
    let classes = classes(m);
    g.keep_new(ctx.b * classes * ctx.c + ctx.c + ctx.b * 8, Cat::HeadLoss);
    if ctx.torch.softmax_keeps_input() && classes > 0 {
        // before PyTorch 1.11 log_softmax keeps its input (the logits) too
        g.keep_new(ctx.b * classes * ctx.c, Cat::HeadLoss);
    }
    g.kept.total() - before
}

pub(super) fn params(p: &mut Params, m: &TransformerSpec) {
    use LinearRole as R;
    let (h, l) = (m.hidden_size, m.num_layers);
    let patch = m.rope_dim.max(1); // ViT stores its patch size here (no rotary)
    let channels = 3;
    let k = ParamKind::Vector;
    p.push(h, channels * patch * patch, 1, ParamKind::Embedding, Scope::Input, false);
    p.push(h, 1, 2, k, Scope::Input, false); // conv bias, cls token
    p.push(m.max_position_embeddings, h, 1, ParamKind::Embedding, Scope::Input, false);
    for role in [R::Q, R::K, R::V] {
        p.linear(h, h, l, role, true);
    }
    p.linear(h, h, l, R::O, true);
    mlp_params(p, h, m.intermediate_size, l, false, false, true);
    p.norms(h, 2, l, true);
    p.push(h, 1, 2, k, Scope::Output, false);
    if let Head::SequenceClassification { num_labels } = m.head {
        p.push(num_labels, h, 1, ParamKind::Head, Scope::Output, false);
        p.push(num_labels, 1, 1, k, Scope::Output, false);
    }
}
