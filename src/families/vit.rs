//! ViT (`ViTForImageClassification`): a conv patch embedding with a class token and learned
//! positions, pre-LayerNorm encoder blocks (biased q/k/v/o, GELU MLP, hidden dropout), the final
//! LayerNorm and a linear classifier on the class token. Tokens are `(image/patch)² + 1`.

use super::prelude::*;

const STYLE: Style = Style { norm: NormKind::Layer, act: Act::Gelu, gated: false, ..LLAMA };

/// ViT's and DINOv2's module names for PEFT: transformers 5's (`q_proj`, `fc1`, DINOv2's
/// `gate_proj`) and the older BERT-like ones (`attention.attention.query`, `intermediate.dense`).
pub(super) const PEFT: PeftModules = PeftModules {
    qkv: None,
    q: r"(?:q_proj|attention\.attention\.query)",
    k: r"(?:k_proj|attention\.attention\.key)",
    v: r"(?:v_proj|attention\.attention\.value)",
    o: r"(?:o_proj|attention\.output\.dense)",
    gate_up: None,
    gate: "gate_proj",
    up: r"(?:fc1|up_proj|intermediate\.dense)",
    down: r"(?:fc2|down_proj|layer\.\d+\.output\.dense)",
};

/// ViT.
pub(super) struct Vit;

impl FamilyDef for Vit {
    fn id(&self) -> &'static str {
        "vit"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["vit"]
    }

    fn read_own_config(&self, c: &ConfigSource<'_>) -> Option<Result<TransformerSpec, ConfigError>> {
        Some(read(c.text))
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "ViTLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        params(p, m);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &STYLE)
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

    fn takes_pixels(&self) -> bool {
        true
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        match model_type {
            "vit" => Some(
                r#"{"hidden_size":768,"intermediate_size":3072,"num_hidden_layers":12,"num_attention_heads":12,
                "hidden_dropout_prob":0.0,"attention_probs_dropout_prob":0.0,"image_size":224,"patch_size":16,
                "num_channels":3,"qkv_bias":true}"#,
            ),
            _ => None,
        }
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        OpKinds { rope: Rope::None, loss: LossKind::Classifier, kv: KvLayout::None, ..STYLE.kinds() }
    }
}

/// Patch conv, class token concatenated, positions added (interpolated to another grid: an
/// upsample whose backward keeps nothing, and an add), dropout.
pub(super) fn embed(g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
    let ctx = g.ctx;
    let n = ctx.tokens * m.hidden_size;
    g.patch_conv(ctx.batch * ctx.pixels, n);
    let e = g.tensor(n * ctx.residual_elem, ctx.residual_elem, ctx.full, Cat::Embeddings);
    g.dropout(e, n, m.hidden_dropout)
}

/// Final LayerNorm over all tokens, the classifier on the class token (a view of the norm's
/// output, so the whole output is kept), cross-entropy on the logits in the model dtype.
fn head(g: &mut Graph<'_>, m: &TransformerSpec, x: Tensor) -> u64 {
    let ctx = g.ctx;
    let n = g.norm(x, ctx.rank_tokens, m.hidden_size, NormKind::Layer, "layernorm");
    let before = g.kept.total();
    if ctx.full {
        g.keep(n);
    }
    let classes = classes(m);
    if classes > 0 {
        g.cross_entropy(ctx.batch, classes);
    }
    g.kept.total() - before
}

fn params(p: &mut Params, m: &TransformerSpec) {
    use LinearRole as R;
    let (h, l) = (m.hidden_size, m.num_layers);
    let (patch, channels) = m.patches.map_or((m.rope_dim.max(1), 3), |p| (p.patch, p.channels));
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

/// ViT's own keys.
fn read(r: &Reader<'_>) -> Result<TransformerSpec, ConfigError> {
    let h = r.positive("hidden_size")?;
    let a = r.positive("num_attention_heads")?;
    super::config::check_divides(r, "num_attention_heads", h, a)?;
    let patches = super::config::patches(r, 1, PositionInterpolation::OnRequest)?;
    let grid = patches.patches(patches.image);
    Ok(TransformerSpec {
        family: super::by_id("vit").unwrap_or_default(),
        head: Head::Base,
        hidden_size: h,
        num_layers: r.positive("num_hidden_layers")?,
        num_heads: a,
        num_kv_heads: a,
        head_dim: h / a,
        intermediate_size: r.positive("intermediate_size")?,
        vocab_size: 0,
        max_position_embeddings: grid + 1,
        patches: Some(patches),
        tie_word_embeddings: false,
        qkv_bias: r.bool_or("qkv_bias", true)?,
        o_bias: true,
        mlp_bias: true,
        attention_dropout: r.f64_or("attention_probs_dropout_prob", 0.0)?,
        hidden_dropout: r.f64_or("hidden_dropout_prob", 0.0)?,
        ..TransformerSpec::default()
    })
}
