//! ResNet (`model_type: resnet`, transformers' `modeling_resnet.py`): a 7×7 stride-2 stem with
//! BatchNorm and ReLU, a 3×3 stride-2 max-pool, stages of bottleneck (1×1, 3×3, 1×1) or basic
//! (3×3, 3×3) blocks whose first block downsamples through a 1×1 shortcut, a global average pool
//! and a linear classifier. Every convolution is bias-free and followed by its BatchNorm; a
//! block's last BatchNorm output takes the shortcut in place (`hidden_state += residual`) before
//! the block's ReLU.

use crate::engine::ops::net::{Conv, Fm, Net, NetCtx};
use crate::model::config::ConfigError;
use crate::model::config::Reader;
use crate::model::net::{NetAct, NetKind, NetSpec};
use crate::model::pixels::ImageSize;

/// A convolution's shape without bias (ResNet's are all bias-free).
fn conv(out: u64, k: u64, stride: u64) -> Conv {
    Conv { out, k, stride, pad: k / 2, groups: 1, bias: false }
}

/// `ResNetConvLayer`: convolution, BatchNorm, then the activation unless `act` is false.
fn conv_layer(net: &mut Net, m: &str, x: Fm, k: Conv, act: Option<NetAct>) -> Fm {
    let y = net.conv2d(&format!("{m}.convolution"), x, k);
    let y = net.batch_norm(&format!("{m}.normalization"), y);
    let y = match act {
        Some(a) => activation(net, &format!("{m}.activation"), y, a),
        None => y,
    };
    // the caller's variable (a `Sequential`'s loop) holds the input until the layer returns
    net.hold(x.t);
    y
}

/// The block's activation.
fn activation(net: &mut Net, m: &str, y: Fm, act: NetAct) -> Fm {
    match act {
        NetAct::Relu => net.relu(m, y),
        NetAct::Gelu => {
            // a row a sample: `gelu` sizes its output as rows · cols over the batch
            let b = net.ctx.map_or(1, |c| c.batch);
            let t = crate::engine::ops::net::Rows { t: y.t, rows: b, cols: y.c * y.h * y.w };
            Fm { t: net.gelu(m, t).t, ..y }
        }
    }
}

/// The layout fields of a ResNet spec.
struct Layout {
    bottleneck: bool,
    in_bottleneck: bool,
}

/// One residual block: the main branch, the shortcut (a strided 1×1 and its BatchNorm when the
/// width or the size changes), the in-place sum and the block's activation.
fn block(net: &mut Net, m: &str, x: Fm, (out, stride): (u64, u64), l: &Layout, act: NetAct) -> Fm {
    let main = if l.bottleneck {
        let r = out / 4;
        let (s1, s2) = if l.in_bottleneck { (stride, 1) } else { (1, stride) };
        let y = conv_layer(net, &format!("{m}.layer.0"), x, conv(r, 1, s1), Some(act));
        let y = conv_layer(net, &format!("{m}.layer.1"), y, conv(r, 3, s2), Some(act));
        conv_layer(net, &format!("{m}.layer.2"), y, conv(out, 1, 1), None)
    } else {
        let y = conv_layer(net, &format!("{m}.layer.0"), x, conv(out, 3, stride), Some(act));
        conv_layer(net, &format!("{m}.layer.1"), y, conv(out, 3, 1), None)
    };
    let shortcut = if x.c != out || stride != 1 {
        let s = net.conv2d(&format!("{m}.shortcut.convolution"), x, conv(out, 1, stride));
        net.batch_norm(&format!("{m}.shortcut.normalization"), s)
    } else {
        x
    };
    let y = net.add_(&format!("{m} (+= shortcut)"), main, shortcut);
    let y = activation(net, &format!("{m}.activation"), y, act);
    // `residual` (the shortcut's output) and the caller's input live until the block returns
    net.hold(shortcut.t);
    net.hold(x.t);
    y
}

/// The network for `ctx` and `image`.
pub fn build(s: &NetSpec, ctx: NetCtx, image: ImageSize) -> Net {
    let NetKind::Resnet { embedding_size, bottleneck, downsample_first_stage, downsample_in_bottleneck } =
        s.kind
    else {
        return Net::new(ctx);
    };
    let mut net = Net::new(ctx);
    let x = net.pixels(s.channels, image.height, image.width);
    let x = conv_layer(&mut net, "resnet.embedder.embedder", x, conv(embedding_size, 7, 2), Some(s.act));
    let embedded = net.max_pool("resnet.embedder.pooler", x, 3, 2, 1);
    let mut x = embedded;
    let l = Layout { bottleneck, in_bottleneck: downsample_in_bottleneck };
    for (i, (&out, &depth)) in s.hidden_sizes.iter().zip(&s.depths).enumerate() {
        let stride = if i > 0 || downsample_first_stage { 2 } else { 1 };
        let input = x;
        for j in 0..depth {
            let m = format!("resnet.encoder.stages.{i}.layers.{j}");
            x = block(&mut net, &m, x, (out, if j == 0 { stride } else { 1 }), &l, s.act);
        }
        // a stage's `input` lives until it returns
        net.hold(input.t);
    }
    let pooled = net.mean_hw("resnet.pooler", x);
    // `embedding_output` lives until the model's forward returns
    net.hold(embedded.t);
    net.classifier("classifier.1", pooled, s.num_labels);
    net
}

/// Reads a `resnet` config (transformers' `ResNetConfig` defaults: ResNet-50).
pub fn read(r: &Reader<'_>) -> Result<NetSpec, ConfigError> {
    let bottleneck = match r.str("layer_type").unwrap_or("bottleneck") {
        "bottleneck" => true,
        "basic" => false,
        other => {
            return Err(r.invalid(
                "layer_type",
                format!("\"{other}\": ResNet's layers are \"basic\" or \"bottleneck\""),
            ));
        }
    };
    let hidden_sizes = r.u64_list("hidden_sizes")?.unwrap_or_else(|| vec![256, 512, 1024, 2048]);
    let depths = r.u64_list("depths")?.unwrap_or_else(|| vec![3, 4, 6, 3]);
    super::convnext::check_stages(r, &hidden_sizes, &depths)?;
    // transformers builds a stage's first block whatever its depth says
    if let Some(i) = depths.iter().position(|&d| d == 0) {
        return Err(r.invalid("depths", format!("stage {i} has 0 blocks (ResNet builds at least one)")));
    }
    if r.u64_or("embedding_size", 64)? == 0 || r.u64_or("num_channels", 3)? == 0 {
        return Err(r.invalid("embedding_size", "the stem's width and the input channels must be at least 1"));
    }
    Ok(NetSpec {
        kind: NetKind::Resnet {
            embedding_size: r.u64_or("embedding_size", 64)?.max(1),
            bottleneck,
            downsample_first_stage: r.bool_or("downsample_in_first_stage", false)?,
            downsample_in_bottleneck: r.bool_or("downsample_in_bottleneck", false)?,
        },
        hidden_sizes,
        depths,
        channels: r.u64_or("num_channels", 3)?.max(1),
        num_labels: super::convnext::labels(r)?,
        image: ImageSize::square(224),
        act: super::convnext::act(r, "relu")?,
        hf_model_type: "resnet".into(),
    })
}

#[cfg(test)]
mod tests {
    use crate::engine::ops::net::NetCtx;
    use crate::model::hf_config::parse_model;
    use crate::model::pixels::ImageSize;

    fn spec(text: &str) -> Result<crate::model::net::NetSpec, String> {
        match parse_model("config.json", text).map_err(|e| e.to_string())?.arch {
            crate::model::Architecture::Net(n) => Ok(*n),
            _ => Err("not a net".into()),
        }
    }

    #[test]
    fn resnet_50_has_its_parameters_and_multiply_accumulates() {
        let s = spec(
            r#"{"model_type":"resnet","architectures":["ResNetForImageClassification"],"num_labels":1000}"#,
        )
        .expect("class defaults: ResNet-50");
        let net = super::build(&s, NetCtx { batch: 1, elem: 2 }, ImageSize::square(224));
        assert_eq!(net.n_params(), 25_557_032);
        // torchvision's published 4.09 G multiply-accumulates at 224
        let macs = net.macs() as f64 / 1e9;
        assert!((4.05..4.15).contains(&macs), "{macs}");
        // 53 BatchNorms: running mean, variance and batch count each
        assert_eq!(net.buffer_tensors().count(), 53 * 3);
    }

    #[test]
    fn configs_it_cannot_build_are_refused_by_key() {
        for (bad, key) in [
            (r#"{"model_type":"resnet","layer_type":"weird"}"#, "layer_type"),
            (r#"{"model_type":"resnet","depths":[1,2]}"#, "depths"),
            (r#"{"model_type":"resnet","depths":[0,1,1,1]}"#, "depths"),
            (r#"{"model_type":"resnet","embedding_size":0}"#, "embedding_size"),
            (r#"{"model_type":"convnext","patch_size":0}"#, "patch_size"),
            (r#"{"model_type":"convnext","num_channels":0}"#, "num_channels"),
        ] {
            let e = spec(bad).expect_err(bad);
            assert!(e.contains(key), "{bad}: {e}");
        }
    }
}
