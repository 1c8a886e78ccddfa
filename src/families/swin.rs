//! Swin (`model_type: swin`, transformers' `modeling_swin.py`): a stride-`patch` convolution and
//! a LayerNorm make the patch grid; stages of blocks attend within `ws × ws` windows (every other
//! block's windows shifted by `ws / 2`, a cyclic roll and a mask), each stage but the last ends
//! in a patch merging (2×2 neighbours concatenated, a LayerNorm, a bias-free Linear 4c → 2c);
//! a final LayerNorm, the mean over tokens and the classifier.
//!
//! A block: LayerNorm, `F.pad` to whole windows (a copy even when nothing is padded), the roll,
//! the window partition (a contiguous copy unless a stage has one window column), attention
//! over the windows, the reverse copies, stochastic depth, the residual sum; LayerNorm, Linear
//! `mlp_ratio·c`, GELU, Linear back and the second sum (no stochastic depth there). A stage
//! whose grid is no larger than the window runs one unshifted window of the whole grid.

use crate::engine::inputs::saved::Cat;
use crate::engine::ops::net::{Conv, Fm, Net, NetCtx, Rows, T};
use crate::engine::ops::net_window::Windows;
use crate::model::config::{ConfigError, Reader};
use crate::model::net::{NetKind, NetSpec, SwinLayout};
use crate::model::pixels::ImageSize;

/// One stage's grid and window.
#[derive(Clone, Copy, Debug)]
struct Grid {
    /// Rows and columns of the patch grid.
    h: u64,
    w: u64,
    /// The window side the stage runs (the config's, or the whole grid when smaller).
    ws: u64,
    /// Shift of the odd blocks (0 when the window covers the grid).
    shift: u64,
}

/// The patch grid of each stage for `image`, each after padding and merging (sides halved,
/// rounded up).
pub fn grids(s: &NetSpec, l: &SwinLayout, image: ImageSize) -> Vec<(u64, u64)> {
    let mut g = (image.height.div_ceil(l.patch), image.width.div_ceil(l.patch));
    let mut out = Vec::with_capacity(s.depths.len());
    for _ in &s.depths {
        out.push(g);
        g = (g.0.div_ceil(2), g.1.div_ceil(2));
    }
    out
}

/// `SwinLayer`, the block at global index `at` of stage grid `g`.
fn layer(net: &mut Net, m: &str, x: Rows, (g, heads, at): (Grid, u64, usize), l: &SwinLayout) -> Rows {
    let b = net.ctx.map_or(1, |c| c.batch);
    let c = x.cols;
    let shift = if at % 2 == 1 { g.shift } else { 0 };
    let ln = net.layer_norm(&format!("{m}.layernorm_before"), x);
    let (hp, wp) = (g.h.next_multiple_of(g.ws), g.w.next_multiple_of(g.ws));
    let map = hp * wp * c;
    let mut t =
        net.copy("constant_pad_nd", &format!("{m} (pad to whole windows)"), vec![ln.t], map, Cat::Norms);
    if shift > 0 {
        t = net.copy("roll", &format!("{m} (cyclic shift)"), vec![t], map, Cat::AttentionIo);
    }
    let columns = wp / g.ws.max(1);
    if g.ws > 1 && columns > 1 {
        t = net.copy("clone", &format!("{m} (window partition)"), vec![t], map, Cat::AttentionIo);
    }
    let windows = Rows { t, rows: b * hp * wp, cols: c };
    let count = (hp / g.ws.max(1)) * columns;
    let mask = (shift > 0).then(|| net.shift_mask(m, count, g.ws * g.ws));
    let w = Windows {
        count,
        tokens: g.ws * g.ws,
        heads,
        mask,
        qkv_bias: l.qkv_bias,
        built_tokens: l.window * l.window,
        table: (2 * l.window - 1) * (2 * l.window - 1),
    };
    let attn = net.window_attention(&format!("{m}.attention"), windows, w);
    let mut y = attn.t;
    if g.ws > 1 && columns > 1 {
        y = net.copy("clone", &format!("{m} (window reverse)"), vec![y], map, Cat::AttentionIo);
    }
    if shift > 0 {
        y = net.copy("roll", &format!("{m} (shift back)"), vec![y], map, Cat::AttentionIo);
    }
    if (hp, wp) != (g.h, g.w) {
        y = net.copy("clone", &format!("{m} (crop the padding)"), vec![y], g.h * g.w * c, Cat::AttentionIo);
    }
    let branch = Fm { t: y, c, h: g.h, w: g.w };
    let branch = if l.drop_path > 0.0 && at > 0 {
        let d = net.copy("div", &format!("{m}.drop_path"), vec![branch.t], g.h * g.w * c, Cat::AttentionIo);
        net.drop_path(&format!("{m}.drop_path"), Fm { t: d, ..branch })
    } else {
        branch
    };
    let h1 = net.add(&format!("{m} (+ shortcut)"), Fm { t: x.t, ..branch }, branch);
    let h1 = Rows { t: h1.t, ..x };
    let n = net.layer_norm(&format!("{m}.layernorm_after"), h1);
    let inner = (l.mlp_ratio * c as f64) as u64;
    let f = net.linear(&format!("{m}.mlp.fc1"), n, inner, Cat::Mlp);
    let f = net.gelu(&format!("{m}.mlp.activation_fn"), f);
    let f = net.linear(&format!("{m}.mlp.fc2"), f, c, Cat::Mlp);
    // the caller's variable holds the MLP's input until the MLP returns
    net.hold(n.t);
    let out = net.add(&format!("{m} (+ residual)"), fm(h1, g), fm(f, g));
    // the block's locals live until it returns: its input, the windows, attention's output and
    // the branch before stochastic depth
    for t in [x.t, windows.t, attn.t, y].into_iter().chain(mask) {
        net.hold(t);
    }
    Rows { t: out.t, ..x }
}

/// Rows as a feature map of grid `g`.
fn fm(x: Rows, g: Grid) -> Fm {
    Fm { t: x.t, c: x.cols, h: g.h, w: g.w }
}

/// `SwinPatchMerging`: pad odd sides, concatenate the 2×2 neighbours, LayerNorm, Linear 4c → 2c
/// without bias.
fn merge(net: &mut Net, m: &str, x: Rows, g: Grid) -> Rows {
    let b = net.ctx.map_or(1, |c| c.batch);
    let c = x.cols;
    let mut t: T = x.t;
    let (h2, w2) = (g.h.div_ceil(2), g.w.div_ceil(2));
    if g.h % 2 == 1 || g.w % 2 == 1 {
        t = net.copy(
            "constant_pad_nd",
            &format!("{m} (pad odd sides)"),
            vec![t],
            4 * h2 * w2 * c,
            Cat::FeatureMaps,
        );
    }
    let cat = net.copy("cat", &format!("{m} (2×2 neighbours)"), vec![t], 4 * h2 * w2 * c, Cat::FeatureMaps);
    let rows = Rows { t: cat, rows: b * h2 * w2, cols: 4 * c };
    let n = net.layer_norm(&format!("{m}.norm"), rows);
    let out = net.linear_bias(&format!("{m}.reduction"), n, (2 * c, false), Cat::FeatureMaps);
    // the normalized rows are the local `input_feature` while the reduction runs
    net.hold(n.t);
    out
}

/// The network for `ctx` and `image`.
pub fn build(s: &NetSpec, ctx: NetCtx, image: ImageSize) -> Net {
    let NetKind::Swin(l) = &s.kind else { return Net::new(ctx) };
    let b = ctx.batch;
    let mut net = Net::new(ctx);
    let mut px = net.pixels(s.channels, image.height, image.width);
    let (ph, pw) = (image.height.next_multiple_of(l.patch), image.width.next_multiple_of(l.patch));
    if pw != image.width {
        let t = net.copy(
            "constant_pad_nd",
            "swin.embeddings.patch_embeddings (pad)",
            vec![px.t],
            s.channels * image.height * pw,
            Cat::FeatureMaps,
        );
        px = Fm { t, w: pw, ..px };
    }
    if ph != image.height {
        let t = net.copy(
            "constant_pad_nd",
            "swin.embeddings.patch_embeddings (pad)",
            vec![px.t],
            s.channels * ph * pw,
            Cat::FeatureMaps,
        );
        px = Fm { t, h: ph, ..px };
    }
    let c0 = s.hidden_sizes.first().copied().unwrap_or(1);
    let stem = Conv { out: c0, k: l.patch, stride: l.patch, pad: 0, groups: 1, bias: true };
    let x = net.conv2d("swin.embeddings.patch_embeddings.projection", px, stem);
    let mut x = net.layer_norm("swin.embeddings.norm", Rows { t: x.t, rows: b * x.h * x.w, cols: c0 });
    if l.abs_pos {
        let grid = (s.image.height / l.patch) * (s.image.width / l.patch);
        let t = net.copy(
            "add",
            "swin.embeddings (+ position embeddings)",
            vec![x.t],
            x.rows / b.max(1) * c0,
            Cat::Embeddings,
        );
        if let Some(n) = net.nodes.last_mut() {
            n.params = vec![grid * c0];
        }
        x = Rows { t, ..x };
    }
    let embedded = x.t;
    let grids = grids(s, l, image);
    let mut at = 0;
    for (i, (&depth, &(h, w))) in s.depths.iter().zip(&grids).enumerate() {
        let small = h.min(w) <= l.window;
        let g = Grid {
            h,
            w,
            ws: if small { h.min(w) } else { l.window },
            shift: if small { 0 } else { l.window / 2 },
        };
        let heads = l.heads.get(i).copied().unwrap_or(1);
        for j in 0..depth {
            x = layer(&mut net, &format!("swin.encoder.layers.{i}.blocks.{j}"), x, (g, heads, at), l);
            at += 1;
        }
        let m = format!("swin.encoder.layers.{i}");
        let before = x.t;
        if i + 1 < s.depths.len() {
            x = merge(&mut net, &format!("{m}.downsample"), x, g);
        }
        // the stage's (b, c, h, w) copy of its output, returned and dropped
        net.copy(
            "clone",
            &format!("{m} (reshaped hidden states)"),
            vec![x.t],
            x.rows / b.max(1) * x.cols,
            Cat::FeatureMaps,
        );
        // `hidden_states_before_downsampling` lives until the stage returns
        net.hold(before);
    }
    let x = net.layer_norm("swin.layernorm", x);
    let last = grids.last().copied().unwrap_or((1, 1));
    let pooled = net.mean_hw("swin.pooler", Fm { t: x.t, c: x.cols, h: last.0, w: last.1 });
    // `embedding_output` lives until the model's forward returns
    net.hold(embedded);
    net.classifier("classifier", pooled, s.num_labels);
    net
}

/// Reads a `swin` config (transformers' `SwinConfig` defaults: Swin-T, window 7, 224 px).
pub fn read(r: &Reader<'_>) -> Result<NetSpec, ConfigError> {
    let embed = r.u64_or("embed_dim", 96)?;
    let depths = r.u64_list("depths")?.unwrap_or_else(|| vec![2, 2, 6, 2]);
    let heads = r.u64_list("num_heads")?.unwrap_or_else(|| vec![3, 6, 12, 24]);
    if embed == 0 || embed > 1 << 16 {
        return Err(r.invalid("embed_dim", format!("{embed} is not a usable width")));
    }
    let widths: Vec<u64> = (0..depths.len()).map(|i| embed << i.min(20)).collect();
    super::convnext::check_stages(r, &widths, &depths)?;
    if heads.len() != depths.len() {
        return Err(r.invalid("num_heads", format!("{} entries for {} stages", heads.len(), depths.len())));
    }
    if let Some(i) = (0..heads.len()).find(|&i| heads[i] == 0 || !widths[i].is_multiple_of(heads[i])) {
        return Err(r.invalid(
            "num_heads",
            format!("stage {i}'s {} heads do not divide its width {}", heads[i], widths[i]),
        ));
    }
    let side = r.u64_or("image_size", 224)?;
    let patch = r.u64_or("patch_size", 4)?;
    let window = r.u64_or("window_size", 7)?;
    if patch == 0 || patch > 64 {
        return Err(r.invalid("patch_size", format!("{patch} is not a usable patch")));
    }
    if window == 0 || window > 64 {
        return Err(r.invalid("window_size", format!("{window} is not a usable window")));
    }
    let mlp_ratio = r.opt_f64("mlp_ratio")?.unwrap_or(4.0);
    if !(mlp_ratio > 0.0 && mlp_ratio <= 64.0) {
        return Err(r.invalid("mlp_ratio", format!("{mlp_ratio} is not a usable ratio")));
    }
    for key in ["hidden_dropout_prob", "attention_probs_dropout_prob"] {
        if r.opt_f64(key)?.unwrap_or(0.0) > 0.0 {
            return Err(
                r.invalid(key, "dropout in Swin is not modelled yet (the published checkpoints use 0.0)")
            );
        }
    }
    if r.u64_or("num_channels", 3)? == 0 {
        return Err(r.invalid("num_channels", "must be at least 1"));
    }
    let layout = SwinLayout {
        patch,
        window,
        heads,
        mlp_ratio,
        qkv_bias: r.bool_or("qkv_bias", true)?,
        abs_pos: r.bool_or("use_absolute_embeddings", false)?,
        drop_path: r.opt_f64("drop_path_rate")?.unwrap_or(0.1).max(0.0),
    };
    Ok(NetSpec {
        kind: NetKind::Swin(Box::new(layout)),
        hidden_sizes: widths,
        depths,
        channels: r.u64_or("num_channels", 3)?,
        num_labels: super::convnext::labels(r)?,
        image: ImageSize::square(side.max(1)),
        act: super::convnext::act(r, "gelu")?,
        hf_model_type: "swin".into(),
    })
}

/// Why transformers' Swin cannot run `image`, if it cannot: a stage whose grid is smaller than
/// the window (its bias is built for the full window: the shapes do not broadcast), or absolute
/// position embeddings at another size than the config's.
pub fn refuses(s: &NetSpec, image: ImageSize) -> Option<String> {
    let NetKind::Swin(l) = &s.kind else { return None };
    if let Some((i, (h, w))) =
        grids(s, l, image).into_iter().enumerate().find(|(_, (h, w))| h.min(w) < &l.window)
    {
        return Some(format!(
            "at {}×{} px Swin's stage {} of {} has a {h}×{w} grid, smaller than its {}×{} window: transformers' SwinAttention fails there (its bias is built for the whole window); use an image of at least {} px a side",
            image.height,
            image.width,
            i + 1,
            s.depths.len(),
            l.window,
            l.window,
            s.min_side()
        ));
    }
    if l.abs_pos && image != s.image {
        return Some(format!(
            "this Swin adds absolute position embeddings for {}×{} px and transformers cannot interpolate them (use_absolute_embeddings): use that size",
            s.image.height, s.image.width
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use crate::engine::ops::net::NetCtx;
    use crate::model::hf_config::parse_model;
    use crate::model::pixels::ImageSize;

    fn spec(text: &str) -> crate::model::net::NetSpec {
        let crate::model::Architecture::Net(s) = parse_model("config.json", text).expect("config").arch
        else {
            panic!("a net")
        };
        *s
    }

    #[test]
    fn swin_base_has_its_parameters_and_refuses_a_grid_under_its_window() {
        let s = spec(
            r#"{"model_type":"swin","embed_dim":128,"depths":[2,2,18,2],"num_heads":[4,8,16,32],"window_size":7,"num_labels":1000}"#,
        );
        let net = super::build(&s, NetCtx { batch: 1, elem: 2 }, ImageSize::square(224));
        // transformers' SwinForImageClassification (swin-base-patch4-window7-224)
        assert_eq!(net.n_params(), 87_768_224);
        assert_eq!(s.total_stride(), 32);
        assert!(super::refuses(&s, ImageSize::square(224)).is_none());
        // 192 px: the last stage is 6×6 patches, under the 7×7 window
        let why = super::refuses(&s, ImageSize::square(192)).expect("refused");
        assert!(why.contains("6×6") && why.contains("193 px"), "{why}");
        assert!(super::refuses(&s, ImageSize::square(193)).is_none());
        assert_eq!(s.min_side(), 193);
    }

    #[test]
    fn the_tiny_configs_count_what_transformers_counts() {
        let tiny = spec(
            r#"{"model_type":"swin","embed_dim":16,"depths":[2,2,2,2],"num_heads":[2,2,4,4],"window_size":4,"num_labels":10}"#,
        );
        let net = super::build(&tiny, NetCtx { batch: 2, elem: 2 }, ImageSize::square(100));
        assert_eq!(net.n_params(), 575_922);
        assert_eq!(net.buffer_tensors().sum::<u64>(), 8 * 8 * 16 * 16);
        let w7 = spec(
            r#"{"model_type":"swin","embed_dim":16,"depths":[2,3,2],"num_heads":[2,4,4],"window_size":7,"image_size":112,"num_labels":10,"drop_path_rate":0.0,"use_absolute_embeddings":true,"qkv_bias":false}"#,
        );
        let net = super::build(&w7, NetCtx { batch: 2, elem: 2 }, ImageSize::square(112));
        assert_eq!(net.n_params(), 172_690);
        assert!(super::refuses(&w7, ImageSize::square(140)).is_some_and(|m| m.contains("absolute")));
    }
}
