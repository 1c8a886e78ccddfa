//! ConvNeXt (`model_type: convnext`, transformers' `modeling_convnext.py`, v1): a stride-`patch`
//! stem convolution and a channels-first LayerNorm; stages whose first three downsample (a
//! channels-first LayerNorm and a 2×2 stride-2 convolution); blocks of a 7×7 depthwise
//! convolution, a channels-last LayerNorm, Linear 4×, GELU, Linear back, the layer scale and the
//! residual sum; the mean over rows and columns, a LayerNorm and the classifier.
//!
//! A channels-first LayerNorm permutes its input to channels-last and normalizes the view: it
//! keeps the convolution's output itself, and so does the block's LayerNorm after the permute.

use crate::engine::inputs::saved::Cat;
use crate::engine::ops::net::{Conv, Fm, Net, NetCtx, Rows};
use crate::model::config::ConfigError;
use crate::model::config::Reader;
use crate::model::net::{NetAct, NetKind, NetSpec};
use crate::model::pixels::ImageSize;

/// A feature map seen as channels-last rows.
fn rows(x: Fm, batch: u64) -> Rows {
    Rows { t: x.t, rows: batch * x.h * x.w, cols: x.c }
}

/// One block: depthwise 7×7, LayerNorm, the MLP, the layer scale, stochastic depth, the sum.
fn block(net: &mut Net, m: &str, x: Fm, s: &NetSpec, batch: u64) -> Fm {
    let NetKind::Convnext { layer_scale, drop_path, .. } = s.kind else { return x };
    let dw = Conv { out: x.c, k: 7, stride: 1, pad: 3, groups: x.c, bias: true };
    let y = net.conv2d(&format!("{m}.dwconv"), x, dw);
    let y = net.layer_norm(&format!("{m}.layernorm"), rows(y, batch));
    let y = net.linear(&format!("{m}.pwconv1"), y, 4 * x.c, Cat::Mlp);
    let y = match s.act {
        NetAct::Gelu => net.gelu(&format!("{m}.act"), y),
        NetAct::Relu => {
            let f = Fm { t: y.t, c: y.cols, h: y.rows / batch.max(1), w: 1 };
            Rows { t: net.relu(&format!("{m}.act"), f).t, ..y }
        }
    };
    let y = net.linear(&format!("{m}.pwconv2"), y, x.c, Cat::Mlp);
    let y = if layer_scale { net.scale(&format!("{m}.layer_scale_parameter"), y) } else { y };
    let y = Fm { t: y.t, ..x };
    let y = if drop_path { net.drop_path(&format!("{m}.drop_path"), y) } else { y };
    net.add(&format!("{m} (+ residual)"), x, y)
}

/// The network for `ctx` and `image`.
pub fn build(s: &NetSpec, ctx: NetCtx, image: ImageSize) -> Net {
    let NetKind::Convnext { patch, .. } = s.kind else { return Net::new(ctx) };
    let b = ctx.batch;
    let mut net = Net::new(ctx);
    let x = net.pixels(s.channels, image.height, image.width);
    let first = s.hidden_sizes.first().copied().unwrap_or(1);
    let stem = Conv { out: first, k: patch, stride: patch, pad: 0, groups: 1, bias: true };
    let x = net.conv2d("convnext.embeddings.patch_embeddings", x, stem);
    let n = net.layer_norm("convnext.embeddings.layernorm", rows(x, b));
    let mut x = Fm { t: n.t, ..x };
    let embedded = x;
    for (i, (&out, &depth)) in s.hidden_sizes.iter().zip(&s.depths).enumerate() {
        let input = x;
        if i > 0 {
            let m = format!("convnext.encoder.stages.{i}.downsampling_layer");
            let n = net.layer_norm(&format!("{m}.0"), rows(x, b));
            let down = Conv { out, k: 2, stride: 2, pad: 0, groups: 1, bias: true };
            x = net.conv2d(&format!("{m}.1"), Fm { t: n.t, ..x }, down);
        }
        for j in 0..depth {
            let input = x;
            x = block(&mut net, &format!("convnext.encoder.stages.{i}.layers.{j}"), x, s, b);
            // the caller's variable holds a layer's input until it returns
            net.hold(input.t);
        }
        // a stage's input lives until it returns
        net.hold(input.t);
    }
    let pooled = net.mean_hw("convnext (mean over rows and columns)", x);
    let pooled = net.layer_norm("convnext.layernorm", pooled);
    // `embedding_output` lives until the model's forward returns
    net.hold(embedded.t);
    net.classifier("classifier", pooled, s.num_labels);
    net
}

/// Reads a `convnext` config (transformers' `ConvNextConfig` defaults: ConvNeXt-T).
pub fn read(r: &Reader<'_>) -> Result<NetSpec, ConfigError> {
    let hidden_sizes = r.u64_list("hidden_sizes")?.unwrap_or_else(|| vec![96, 192, 384, 768]);
    let depths = r.u64_list("depths")?.unwrap_or_else(|| vec![3, 3, 9, 3]);
    check_stages(r, &hidden_sizes, &depths)?;
    if let Some(n) = r.opt_u64("num_stages")?
        && n != hidden_sizes.len() as u64
    {
        return Err(
            r.invalid("num_stages", format!("{n}, but hidden_sizes lists {} stages", hidden_sizes.len()))
        );
    }
    let side = r.u64_or("image_size", 224)?;
    let patch = r.u64_or("patch_size", 4)?;
    if r.u64_or("num_channels", 3)? == 0 {
        return Err(r.invalid("num_channels", "must be at least 1"));
    }
    if patch == 0 || patch > 64 {
        return Err(r.invalid("patch_size", format!("{patch} is not a usable stem stride")));
    }
    Ok(NetSpec {
        kind: NetKind::Convnext {
            patch,
            layer_scale: r.opt_f64("layer_scale_init_value")?.unwrap_or(1e-6) > 0.0,
            drop_path: r.opt_f64("drop_path_rate")?.unwrap_or(0.0) > 0.0,
        },
        hidden_sizes,
        depths,
        channels: r.u64_or("num_channels", 3)?.max(1),
        num_labels: labels(r)?,
        image: ImageSize::square(side.max(1)),
        act: act(r, "gelu")?,
        hf_model_type: "convnext".into(),
    })
}

/// The stages' widths and depths: as many of each, none zero.
pub(super) fn check_stages(r: &Reader<'_>, widths: &[u64], depths: &[u64]) -> Result<(), ConfigError> {
    if widths.is_empty() || widths.len() != depths.len() {
        return Err(
            r.invalid("depths", format!("{} stages, but hidden_sizes lists {}", depths.len(), widths.len()))
        );
    }
    if let Some(i) = widths.iter().position(|&w| w == 0 || w > 1 << 20) {
        return Err(r.invalid("hidden_sizes", format!("stage {i}'s width {} is not usable", widths[i])));
    }
    if depths.iter().any(|&d| d > 1024) {
        return Err(r.invalid("depths", "a stage of over 1024 blocks is implausible"));
    }
    Ok(())
}

/// The classifier's outputs: `id2label`'s size, else `num_labels`, else transformers' 2; 0 for
/// a bare backbone (`…Model`).
pub(super) fn labels(r: &Reader<'_>) -> Result<u64, ConfigError> {
    let arch = r.obj.get("architectures").and_then(|a| a.get(0)).and_then(serde_json::Value::as_str);
    if arch.is_some_and(|a| a.ends_with("Model") || a.ends_with("Backbone")) {
        return Ok(0);
    }
    match r.obj.get("id2label") {
        Some(serde_json::Value::Object(m)) if !m.is_empty() => Ok(m.len() as u64),
        _ => Ok(r.opt_u64("num_labels")?.unwrap_or(2)),
    }
}

/// `hidden_act`: ReLU or GELU.
pub(super) fn act(r: &Reader<'_>, default: &str) -> Result<NetAct, ConfigError> {
    match r.str("hidden_act").unwrap_or(default) {
        "relu" => Ok(NetAct::Relu),
        "gelu" => Ok(NetAct::Gelu),
        other => Err(r.invalid(
            "hidden_act",
            format!("\"{other}\" is not modelled for convolutional nets (relu, gelu)"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::ops::net::NetCtx;
    use crate::model::hf_config::parse_model;
    use crate::model::pixels::ImageSize;

    #[test]
    fn convnext_b_has_its_parameters_and_takes_no_image_under_its_stride() {
        let text = r#"{"model_type":"convnext","hidden_sizes":[128,256,512,1024],"depths":[3,3,27,3],"num_labels":1000}"#;
        let crate::model::Architecture::Net(s) = parse_model("config.json", text).expect("config").arch
        else {
            panic!("a net")
        };
        let net = super::build(&s, NetCtx { batch: 1, elem: 2 }, ImageSize::square(224));
        assert_eq!(net.n_params(), 88_591_464);
        // the paper's 15.4 G multiply-accumulates at 224
        let macs = net.macs() as f64 / 1e9;
        assert!((15.2..15.6).contains(&macs), "{macs}");
        assert_eq!(s.total_stride(), 32);
        // a 2×2 stride-2 convolution floors: 225 pixels give ConvNeXt a 7×7 map, ResNet (padded) 8×8
        let m = crate::model::ModelSpec { name: "c".into(), arch: crate::model::Architecture::Net(s) };
        assert_eq!(m.patches().map(|p| p.feature_map(ImageSize::square(225))), Some((7, 7)));
    }
}
