//! DINOv2 (`Dinov2ForImageClassification`, the bare `Dinov2Model`): ViT's encoder with a layer
//! scale after each sublayer (`x * lambda`, whose backward keeps `x` while lambda trains), an
//! optional SwiGLU MLP (`use_swiglu_ffn`, the giant model's; a second family definition below),
//! positions interpolated to any image size on every forward, and a classifier on the class token
//! concatenated with the mean of the patch tokens (so the final norm's output is not kept: the
//! classifier keeps the `(b, 2h)` concatenation).

use super::prelude::*;

const GELU: Style = Style { norm: NormKind::Layer, act: Act::Gelu, gated: false, ..LLAMA };
const SWIGLU: Style = Style { norm: NormKind::Layer, act: Act::Silu, gated: true, ..LLAMA };

/// DINOv2 with its GELU MLP.
pub(super) struct Dinov2;

/// DINOv2 with `use_swiglu_ffn` (read from the same `model_type`).
pub(super) struct Dinov2Swiglu;

impl FamilyDef for Dinov2 {
    fn id(&self) -> &'static str {
        "dinov2"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["dinov2"]
    }

    fn read_own_config(&self, c: &ConfigSource<'_>) -> Option<Result<TransformerSpec, ConfigError>> {
        Some(read(c.text))
    }

    fn class_defaults(&self, model_type: &str) -> Option<&'static str> {
        // Dinov2Config's defaults (transformers 5.25)
        (model_type == "dinov2").then_some(
            r#"{"hidden_size":768,"num_hidden_layers":12,"num_attention_heads":12,"mlp_ratio":4,
            "hidden_dropout_prob":0.0,"attention_probs_dropout_prob":0.0,"image_size":224,"patch_size":14,
            "num_channels":3,"qkv_bias":true,"use_swiglu_ffn":false,"use_mask_token":true}"#,
        )
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "Dinov2Layer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        params(p, m, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        block(g, m, flags, x, &GELU)
    }

    fn embed(&self, g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
        super::vit::embed(g, m)
    }

    fn head(&self, g: &mut Graph<'_>, m: &TransformerSpec, x: Tensor) -> u64 {
        head(g, m, x)
    }

    fn peft_modules(&self) -> Option<&'static PeftModules> {
        Some(&super::vit::PEFT)
    }

    fn takes_pixels(&self) -> bool {
        true
    }

    fn default_head(&self) -> (Head, &'static str) {
        (Head::Base, "Dinov2Model")
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        OpKinds { rope: Rope::None, loss: LossKind::Classifier, kv: KvLayout::None, ..GELU.kinds() }
    }
}

impl FamilyDef for Dinov2Swiglu {
    fn id(&self) -> &'static str {
        "dinov2-swiglu"
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "Dinov2Layer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        params(p, m, true);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        block(g, m, flags, x, &SWIGLU)
    }

    fn embed(&self, g: &mut Graph<'_>, m: &TransformerSpec) -> Tensor {
        super::vit::embed(g, m)
    }

    fn head(&self, g: &mut Graph<'_>, m: &TransformerSpec, x: Tensor) -> u64 {
        head(g, m, x)
    }

    fn peft_modules(&self) -> Option<&'static PeftModules> {
        Some(&super::vit::PEFT)
    }

    fn takes_pixels(&self) -> bool {
        true
    }

    fn default_head(&self) -> (Head, &'static str) {
        (Head::Base, "Dinov2Model")
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        OpKinds { rope: Rope::None, loss: LossKind::Classifier, kv: KvLayout::None, ..SWIGLU.kinds() }
    }
}

/// `x + ls1(attn(norm1(x)))`, then `+ ls2(mlp(norm2(·)))`; no dropout inside the layer
/// (`drop_path` is the identity at rate 0, which is how the checkpoints ship).
fn block(g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor, st: &Style) -> Tensor {
    let (ts, h) = (g.ctx.rank_tokens, m.hidden_size);
    let n1 = g.norm(x, ts, h, NormKind::Layer, "norm1");
    let a = attention(g, m, flags, n1, st);
    let a = g.scale_by_weight(a, ts * h);
    let x2 = g.add(a, x, ts * h, Cat::Residual);
    let n2 = g.norm(x2, ts, h, NormKind::Layer, "norm2");
    let f = mlp(g, m, flags, n2, st);
    let f = g.scale_by_weight(f, ts * h);
    g.add(f, x2, ts * h, Cat::Residual)
}

/// The final LayerNorm, then (with a classifier) `cat(cls, mean(patches))`: views and a mean
/// whose backward keeps nothing, so the norm's output is not kept; the classifier keeps the
/// `(b, 2h)` concatenation (autocast's half copy of it), then the cross-entropy.
fn head(g: &mut Graph<'_>, m: &TransformerSpec, x: Tensor) -> u64 {
    let ctx = g.ctx;
    let before = g.kept.total();
    let _ = g.norm(x, ctx.rank_tokens, m.hidden_size, NormKind::Layer, "layernorm");
    let classes = classes(m);
    if classes > 0 {
        if ctx.full {
            g.keep_new(ctx.batch * 2 * m.hidden_size * ctx.compute_elem, Cat::HeadLoss);
        }
        g.cross_entropy(ctx.batch, classes);
    }
    g.kept.total() - before
}

fn params(p: &mut Params, m: &TransformerSpec, swiglu: bool) {
    use LinearRole as R;
    let (h, l) = (m.hidden_size, m.num_layers);
    let Some(px) = m.patches else { return };
    let k = ParamKind::Vector;
    p.push(h, px.channels * px.patch * px.patch, 1, ParamKind::Embedding, Scope::Input, false);
    p.push(h, 1, 2, k, Scope::Input, false); // conv bias, class token
    if px.mask_token {
        // the mask token (`use_mask_token`): used only with `bool_masked_pos`, so no gradient
        p.push(h, 1, 1, ParamKind::Frozen, Scope::Input, false);
    }
    p.push(m.max_position_embeddings, h, 1, ParamKind::Embedding, Scope::Input, false);
    for role in [R::Q, R::K, R::V] {
        p.linear(h, h, l, role, m.qkv_bias);
    }
    p.linear(h, h, l, R::O, true);
    mlp_params(p, h, m.intermediate_size, l, swiglu, false, true);
    p.norms(h, 2, l, true);
    p.push(h, 1, 2 * l, k, Scope::Block, false); // the two layer scales
    p.push(h, 1, 2, k, Scope::Output, false);
    if let Head::SequenceClassification { num_labels } = m.head {
        p.push(num_labels, 2 * h, 1, ParamKind::Head, Scope::Output, false);
        p.push(num_labels, 1, 1, k, Scope::Output, false);
    }
}

/// DINOv2's own keys: the MLP width from `mlp_ratio` (SwiGLU: two thirds of it, rounded up to a
/// multiple of 8, as `Dinov2SwiGLUFFN` sizes it).
fn read(r: &Reader<'_>) -> Result<TransformerSpec, ConfigError> {
    let h = r.positive("hidden_size")?;
    let a = r.positive("num_attention_heads")?;
    super::config::check_divides(r, "num_attention_heads", h, a)?;
    let ratio = r.opt_f64("mlp_ratio")?.unwrap_or(4.0);
    if !(ratio > 0.0 && ratio <= 64.0) {
        return Err(r.invalid("mlp_ratio", format!("{ratio} is outside (0, 64]")));
    }
    let swiglu = r.bool_or("use_swiglu_ffn", false)?;
    let fc = (h as f64 * ratio) as u64;
    let inter = if swiglu { (fc * 2 / 3).div_ceil(8) * 8 } else { fc };
    let patches = Patches {
        mask_token: r.bool_or("use_mask_token", true)?,
        ..super::config::patches(r, 1, PositionInterpolation::Always)?
    };
    Ok(TransformerSpec {
        family: super::by_id(if swiglu { "dinov2-swiglu" } else { "dinov2" }).unwrap_or_default(),
        head: Head::Base,
        hidden_size: h,
        num_layers: r.positive("num_hidden_layers")?,
        num_heads: a,
        num_kv_heads: a,
        head_dim: h / a,
        intermediate_size: inter,
        max_position_embeddings: patches.patches(patches.image) + 1,
        patches: Some(patches),
        qkv_bias: r.bool_or("qkv_bias", true)?,
        o_bias: true,
        mlp_bias: true,
        attention_dropout: r.f64_or("attention_probs_dropout_prob", 0.0)?,
        hidden_dropout: r.f64_or("hidden_dropout_prob", 0.0)?,
        ..TransformerSpec::default()
    })
}

#[cfg(test)]
mod tests {
    use crate::model::pixels::ImageSize;

    fn spec(text: &str) -> crate::model::ModelSpec {
        let spec = crate::model::hf_config::parse("config.json", text).expect("config").spec;
        crate::model::ModelSpec {
            name: "m".into(),
            arch: crate::model::Architecture::Transformer(Box::new(spec)),
        }
    }

    /// Counted on the meta device with transformers 5.25: `Dinov2Model` from the class defaults,
    /// `Dinov2ForImageClassification` with 5 labels (a `(5, 2h)` classifier on the class token
    /// and the patches' mean), and the giant widths with `use_swiglu_ffn` (1.1 B published).
    #[test]
    fn parameters_count_as_transformers_builds_them() {
        let base = spec(r#"{"model_type":"dinov2","architectures":["Dinov2Model"]}"#);
        assert_eq!(base.n_params(), 85_725_696);
        let cls = spec(
            r#"{"model_type":"dinov2","architectures":["Dinov2ForImageClassification"],"num_labels":5}"#,
        );
        assert_eq!(cls.n_params(), 85_733_381);
        let giant = spec(
            r#"{"model_type":"dinov2","architectures":["Dinov2Model"],"hidden_size":1536,"num_hidden_layers":40,
            "num_attention_heads":24,"mlp_ratio":4,"use_swiglu_ffn":true,"image_size":518,"patch_size":14}"#,
        );
        assert_eq!(giant.transformer().map(|t| t.family.id()), Some("dinov2-swiglu"));
        assert_eq!(giant.n_params(), 1_136_480_768);
    }

    /// Positions follow any image: 224 pixels on the 518-pixel checkpoint are 16×16 patches and
    /// the class token; the config's own size is 37×37 + 1.
    #[test]
    fn tokens_follow_the_image() {
        let m = spec(r#"{"model_type":"dinov2","architectures":["Dinov2Model"],"image_size":518}"#);
        let mut sc = crate::estimate::Scenario::new(m);
        assert_eq!(sc.seq, 37 * 37 + 1);
        sc.set_image(ImageSize::square(224)).expect("image");
        assert_eq!(sc.seq, 257);
        sc.validate().expect("valid");
        sc.seq = 300;
        assert!(sc.validate().unwrap_err().to_string().contains("257 tokens of a 224×224 image"));
        // the activations grow with the image's area
        sc.seq = 257;
        let small = crate::estimate::estimate(&sc).expect("estimate").activations;
        sc.set_image(ImageSize { height: 448, width: 224 }).expect("image");
        assert_eq!(sc.seq, 513);
        let tall = crate::estimate::estimate(&sc).expect("estimate").activations;
        assert!(tall > small * 19 / 10, "{tall} vs {small}");
    }
}
