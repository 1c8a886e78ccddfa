//! SigLIP's vision model (`SiglipVisionModel`, `SiglipForImageClassification`; a `siglip`
//! config's `vision_config`): ViT's encoder without a class token (the patches are the tokens),
//! learned positions for the config's grid (interpolated when the forward is asked to),
//! `gelu_pytorch_tanh`, a post-LayerNorm, and with `vision_use_head` a multi-head attention
//! pooling head. The classifier reads the mean of the tokens, so the post-norm's output is not
//! kept; the pooling head still runs in that forward, but nothing reads its output: its
//! parameters get no gradient (and no optimizer state), and what it saves is freed when the
//! forward returns.

use super::prelude::*;

const STYLE: Style = Style { norm: NormKind::Layer, act: Act::Gelu, gated: false, ..LLAMA };

/// SigLIP's vision model.
pub(super) struct Siglip;

impl FamilyDef for Siglip {
    fn id(&self) -> &'static str {
        "siglip"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["siglip_vision_model"]
    }

    fn read_own_config(&self, c: &ConfigSource<'_>) -> Option<Result<TransformerSpec, ConfigError>> {
        Some(read(c.text))
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        // SiglipVisionConfig's defaults (transformers 5.25)
        (model_type == "siglip_vision_model").then_some(
            r#"{"hidden_size":768,"intermediate_size":3072,"num_hidden_layers":12,"num_attention_heads":12,
            "num_channels":3,"image_size":224,"patch_size":16,"attention_dropout":0.0,"vision_use_head":true}"#,
        )
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "SiglipEncoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        params(p, m);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &STYLE)
    }

    fn embed(&self, g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
        super::vit::embed(g, m)
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

    fn default_head(&self) -> (Head, &'static str) {
        (Head::Base, "SiglipVisionModel")
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        OpKinds { rope: Rope::None, loss: LossKind::Classifier, kv: KvLayout::None, ..STYLE.kinds() }
    }
}

/// SigLIP's module names for PEFT (`self_attn.q_proj`, `out_proj`, `mlp.fc1`).
const PEFT: PeftModules = PeftModules {
    qkv: None,
    q: r"self_attn\.q_proj",
    k: r"self_attn\.k_proj",
    v: r"self_attn\.v_proj",
    o: r"self_attn\.out_proj",
    gate_up: None,
    gate: "",
    up: r"layers\.\d+\.mlp\.fc1",
    down: r"layers\.\d+\.mlp\.fc2",
};

/// The post-LayerNorm, then (with a classifier) the mean over the tokens, which keeps nothing,
/// the classifier, which keeps that `(b, h)` mean, and the cross-entropy.
fn head(g: &mut Graph<'_>, m: &TransformerSpec, x: Tensor) -> u64 {
    let ctx = g.ctx;
    let before = g.kept.total();
    let _ = g.norm(x, ctx.rank_tokens, m.hidden_size, NormKind::Layer, "post_layernorm");
    let classes = classes(m);
    if classes > 0 {
        if ctx.full {
            g.keep_new(ctx.batch * m.hidden_size * ctx.compute_elem, Cat::HeadLoss);
        }
        g.cross_entropy(ctx.batch, classes);
    }
    g.kept.total() - before
}

fn params(p: &mut Params, m: &TransformerSpec) {
    use LinearRole as R;
    let (h, i, l) = (m.hidden_size, m.intermediate_size, m.num_layers);
    let Some(px) = m.patches else { return };
    let k = ParamKind::Vector;
    p.push(h, px.channels * px.patch * px.patch, 1, ParamKind::Embedding, Scope::Input, false);
    p.push(h, 1, 1, k, Scope::Input, false); // conv bias
    p.push(m.max_position_embeddings, h, 1, ParamKind::Embedding, Scope::Input, false);
    for role in [R::Q, R::K, R::V, R::O] {
        p.linear(h, h, l, role, true);
    }
    mlp_params(p, h, i, l, false, false, true);
    p.norms(h, 2, l, true);
    p.push(h, 1, 2, k, Scope::Output, false); // post_layernorm
    if m.attention_pool {
        // probe, in_proj (3h × h) and its bias, out_proj, LayerNorm, MLP: trained with the
        // vision model, never under a classifier (which reads the tokens' mean instead)
        let pool = if matches!(m.head, Head::SequenceClassification { .. }) { ParamKind::Frozen } else { k };
        for (rows, cols, n) in [(h, 1, 1), (3 * h, h, 1), (3 * h, 1, 1), (h, h, 1), (h, 1, 3), (i, h, 1)] {
            p.push(rows, cols, n, pool, Scope::Output, false);
        }
        for (rows, cols) in [(i, 1), (h, i), (h, 1)] {
            p.push(rows, cols, 1, pool, Scope::Output, false);
        }
    }
    if let Head::SequenceClassification { num_labels } = m.head {
        p.push(num_labels, h, 1, ParamKind::Head, Scope::Output, false);
        p.push(num_labels, 1, 1, k, Scope::Output, false);
    }
}

/// `SiglipVisionConfig`'s keys (at the top of a `siglip_vision_model` file, or a `siglip`
/// file's `vision_config`).
fn read(r: &Reader<'_>) -> Result<TransformerSpec, ConfigError> {
    let h = r.positive("hidden_size")?;
    let a = r.positive("num_attention_heads")?;
    super::config::check_divides(r, "num_attention_heads", h, a)?;
    let patches = super::config::patches(r, 0, PositionInterpolation::OnRequest)?;
    Ok(TransformerSpec {
        family: super::by_id("siglip").unwrap_or_default(),
        head: Head::Base,
        hidden_size: h,
        num_layers: r.positive("num_hidden_layers")?,
        num_heads: a,
        num_kv_heads: a,
        head_dim: h / a,
        intermediate_size: r.positive("intermediate_size")?,
        max_position_embeddings: patches.patches(patches.image),
        patches: Some(patches),
        attention_pool: r.bool_or("vision_use_head", true)?,
        qkv_bias: true,
        o_bias: true,
        mlp_bias: true,
        attention_dropout: r.f64_or("attention_dropout", 0.0)?,
        ..TransformerSpec::default()
    })
}

/// A `siglip` (`SiglipModel`) file's text tower, counted: its parameters (`text_config`, class
/// defaults for missing keys), with the model's `logit_scale` and `logit_bias`.
pub(crate) fn text_tower_params(t: &Reader<'_>) -> Result<u64, ConfigError> {
    let (h, i, l) =
        (t.positive("hidden_size")?, t.positive("intermediate_size")?, t.positive("num_hidden_layers")?);
    let (v, pos) = (t.positive("vocab_size")?, t.positive("max_position_embeddings")?);
    let proj = t.opt_u64("projection_size")?.unwrap_or(h);
    let layer = 4 * (h * h + h) + 4 * h + (h * i + i) + (i * h + h);
    Ok(v * h + pos * h + l * layer + 2 * h + proj * h + proj + 2)
}

#[cfg(test)]
mod tests {
    fn spec(text: &str) -> crate::model::ModelSpec {
        let spec = crate::model::hf_config::parse("config.json", text).expect("config").spec;
        crate::model::ModelSpec {
            name: "m".into(),
            arch: crate::model::Architecture::Transformer(Box::new(spec)),
        }
    }

    /// Counted on the meta device with transformers 5.25.
    #[test]
    fn parameters_count_as_transformers_builds_them() {
        // the harness's tiny classifier: the pooling head built (frozen) beside a 10-class head
        let tiny = spec(
            r#"{"model_type":"siglip","architectures":["SiglipForImageClassification"],"num_labels":10,
            "vision_config":{"hidden_size":256,"intermediate_size":1024,"num_hidden_layers":4,
            "num_attention_heads":8,"image_size":64,"patch_size":16}}"#,
        );
        assert_eq!(tiny.n_params(), 4_152_586);
        let frozen: u64 = tiny
            .param_groups()
            .iter()
            .filter(|g| g.kind.is_frozen())
            .map(|g| g.rows * g.cols * g.count)
            .sum();
        assert_eq!(frozen, 789_504, "the pooling head gets no gradient");
        // SiglipModel (the so400m preset): the text tower counted beside the walked vision tower
        let so400m = crate::model::preset::builtin("siglip-so400m").expect("preset");
        assert_eq!(so400m.n_params(), 877_960_498);
        assert_eq!(so400m.transformer().map(|t| t.extra_params), Some(449_734_898));
    }
}
