//! A network of explicit ops over explicit tensors — the convolutional backbones' graph, whose
//! blocks differ stage by stage — and the rules of the ops it runs: what each op's backward keeps
//! (PyTorch's `derivatives.yaml`), as the transformer rules say it for a block.
//!
//! A family builds a [`Net`] for one scenario (batch, dtype, image): every tensor has its bytes,
//! every op its inputs, its output, what it saves and the parameter tensors it owns. The walk
//! (`engine::walk::net`) runs it as PyTorch's autograd engine would: the forward frees what
//! nothing reads any more, the backward runs the ops in reverse and frees each op's saves and
//! its output's gradient once it has run.

use super::Cat;

/// A tensor of a [`Net`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct T(pub u32);

/// One tensor: its bytes, whether autograd tracks it, where its bytes go when saved.
#[derive(Clone, Copy, Debug)]
pub struct NetTensor {
    /// Bytes.
    pub bytes: u64,
    /// Requires grad: its gradient flows back (a buffer of its size in backward).
    pub rg: bool,
    /// The category it counts in when saved.
    pub cat: Cat,
    /// Alive through the whole step (the batch's pixel values and labels the caller holds).
    pub external: bool,
    /// An in-place op's result: the storage of this tensor (no bytes of its own), a tensor of
    /// its own to autograd (its gradient is a buffer of `bytes`).
    pub alias_of: Option<T>,
    /// A side tensor only a training forward makes (BatchNorm's batch statistics: in eval mode
    /// it reads its running ones).
    pub train_only: bool,
}

impl NetTensor {
    /// Its bytes as the caching allocator hands them out (rounded up to 512).
    pub fn alloc(&self) -> u64 {
        crate::units::round_alloc(self.bytes)
    }
}

/// One op.
#[derive(Clone, Debug)]
pub struct NetNode {
    /// Op kind ("conv2d", "batch_norm", …).
    pub op: &'static str,
    /// The module that runs it (`encoder.stages.2.layers.0.layer.1`), for the per-op table.
    pub module: String,
    /// Tensors it reads.
    pub inputs: Vec<T>,
    /// Tensor it makes (an in-place op's is its first input).
    pub output: T,
    /// Tensors its backward keeps.
    pub saved: Vec<T>,
    /// Elements of each trainable parameter tensor it owns.
    pub params: Vec<u64>,
    /// Bytes of each buffer it owns (BatchNorm's running statistics and batch count).
    pub buffers: Vec<u64>,
    /// Multiply-accumulates of its forward (convolutions and Linears; 0 for the rest).
    pub macs: u64,
    /// Bytes its backward allocates beside the gradients of its inputs, freed before the next
    /// op's backward (the memory-efficient attention's gradient of a broadcast bias).
    pub scratch: u64,
}

/// The scenario's quantities a net is built for.
#[derive(Clone, Copy, Debug)]
pub struct NetCtx {
    /// Samples.
    pub batch: u64,
    /// Bytes per element of the model's dtype (activations and parameters).
    pub elem: u64,
}

/// A feature map `(b, c, h, w)` (or `(b, h, w, c)` once permuted: the same bytes).
#[derive(Clone, Copy, Debug)]
pub struct Fm {
    /// Its tensor.
    pub t: T,
    /// Channels.
    pub c: u64,
    /// Rows.
    pub h: u64,
    /// Columns.
    pub w: u64,
}

/// Rows and features of a 2-D (or flattened) tensor.
#[derive(Clone, Copy, Debug)]
pub struct Rows {
    /// Its tensor.
    pub t: T,
    /// Rows (`b·h·w` for a channels-last feature map, `b` for a pooled one).
    pub rows: u64,
    /// Features.
    pub cols: u64,
}

/// A network built for one scenario.
#[derive(Clone, Debug, Default)]
pub struct Net {
    /// The scenario's quantities.
    pub ctx: Option<NetCtx>,
    /// Every tensor.
    pub tensors: Vec<NetTensor>,
    /// Every op, in forward order.
    pub nodes: Vec<NetNode>,
    /// The loss (the scalar backward starts from); `None` for a bare backbone.
    pub loss: Option<T>,
    /// Tensors Python keeps referenced up to an op (inclusive) though no op reads them there:
    /// a module's input lives until the module returns (its caller's variable), so a
    /// `Sequential`'s input outlives the convolution that read it through its BatchNorm.
    pub holds: Vec<(T, usize)>,
}

/// Output side of a convolution: `floor((n + 2p - k) / s) + 1`.
pub fn conv_out(n: u64, k: u64, stride: u64, pad: u64) -> u64 {
    ((n + 2 * pad).saturating_sub(k)) / stride.max(1) + 1
}

/// A convolution's shape.
#[derive(Clone, Copy, Debug)]
pub struct Conv {
    /// Output channels.
    pub out: u64,
    /// Kernel side.
    pub k: u64,
    /// Stride.
    pub stride: u64,
    /// Padding.
    pub pad: u64,
    /// Groups (`c` for a depthwise convolution).
    pub groups: u64,
    /// A bias vector.
    pub bias: bool,
}

impl Net {
    /// An empty net for `ctx`.
    pub fn new(ctx: NetCtx) -> Self {
        Self { ctx: Some(ctx), ..Self::default() }
    }

    fn c(&self) -> NetCtx {
        self.ctx.unwrap_or(NetCtx { batch: 1, elem: 2 })
    }

    /// A new tensor.
    pub fn tensor(&mut self, bytes: u64, rg: bool, cat: Cat) -> T {
        self.tensors.push(NetTensor { bytes, rg, cat, external: false, alias_of: None, train_only: false });
        T(self.tensors.len() as u32 - 1)
    }

    /// The tensor `t`.
    pub fn get(&self, t: T) -> NetTensor {
        self.tensors[t.0 as usize]
    }

    /// A new activation of `elems` elements a sample in the model's dtype, requiring grad.
    pub(crate) fn act(&mut self, elems: u64, cat: Cat) -> T {
        let c = self.c();
        self.tensor(c.batch * elems * c.elem, true, cat)
    }

    pub(crate) fn push(
        &mut self,
        op: &'static str,
        module: &str,
        inputs: Vec<T>,
        output: T,
        saved: Vec<T>,
        params: Vec<u64>,
    ) {
        self.nodes.push(NetNode {
            op,
            module: module.to_owned(),
            inputs,
            output,
            saved,
            params,
            buffers: Vec::new(),
            macs: 0,
            scratch: 0,
        });
    }

    /// The batch's images `(b, c, h, w)` in the model's dtype, held by the caller (no grad).
    pub fn pixels(&mut self, channels: u64, h: u64, w: u64) -> Fm {
        let c = self.c();
        let t = self.tensor(c.batch * channels * h * w * c.elem, false, Cat::FeatureMaps);
        self.tensors[t.0 as usize].external = true;
        Fm { t, c: channels, h, w }
    }

    /// `nn.Conv2d`: `convolution_backward` needs the input (for the weight's gradient) and the
    /// weight (for the input's): the input is kept, whether or not it requires grad.
    pub fn conv2d(&mut self, module: &str, x: Fm, k: Conv) -> Fm {
        let (h, w) = (conv_out(x.h, k.k, k.stride, k.pad), conv_out(x.w, k.k, k.stride, k.pad));
        let out = self.act(k.out * h * w, Cat::FeatureMaps);
        let mut params = vec![k.out * (x.c / k.groups.max(1)) * k.k * k.k];
        if k.bias {
            params.push(k.out);
        }
        self.push("conv2d", module, vec![x.t], out, vec![x.t], params);
        self.set_macs(self.c().batch * k.out * h * w * (x.c / k.groups.max(1)) * k.k * k.k);
        Fm { t: out, c: k.out, h, w }
    }

    /// `nn.BatchNorm2d` in training: `native_batch_norm_backward` keeps the input and the batch's
    /// mean and inverse standard deviation per channel, in the input's dtype as the reference
    /// measures them (CUDA's kernel makes them fp32 for a half input: 2·c·2 bytes more). Its
    /// running mean and variance (the model's dtype) and its int64 batch count are buffers.
    pub fn batch_norm(&mut self, module: &str, x: Fm) -> Fm {
        let e = self.c().elem;
        let out = self.act(x.c * x.h * x.w, Cat::FeatureMaps);
        let mean = self.tensor(e * x.c, false, Cat::Norms);
        let invstd = self.tensor(e * x.c, false, Cat::Norms);
        for t in [mean, invstd] {
            self.tensors[t.0 as usize].train_only = true;
        }
        self.push("batch_norm", module, vec![x.t], out, vec![x.t, mean, invstd], vec![x.c, x.c]);
        if let Some(n) = self.nodes.last_mut() {
            n.buffers = vec![e * x.c, e * x.c, 8];
        }
        Fm { t: out, ..x }
    }

    /// `relu`: `threshold_backward` reads the output.
    pub fn relu(&mut self, module: &str, x: Fm) -> Fm {
        let out = self.act(x.c * x.h * x.w, Cat::FeatureMaps);
        self.push("relu", module, vec![x.t], out, vec![out], Vec::new());
        Fm { t: out, ..x }
    }

    /// `gelu` (exact): `gelu_backward` reads the input.
    pub fn gelu(&mut self, module: &str, x: Rows) -> Rows {
        let out = self.act(x.rows * x.cols / self.c().batch.max(1), Cat::Mlp);
        self.push("gelu", module, vec![x.t], out, vec![x.t], Vec::new());
        Rows { t: out, ..x }
    }

    /// `a += b` (ResNet's residual, in place on `a`'s storage): addition keeps nothing.
    pub fn add_(&mut self, module: &str, a: Fm, b: Fm) -> Fm {
        let bytes = self.get(a.t).bytes;
        let out = self.tensor(bytes, true, Cat::FeatureMaps);
        self.tensors[out.0 as usize].alias_of = Some(self.storage(a.t));
        self.push("add_", module, vec![a.t, b.t], out, Vec::new(), Vec::new());
        Fm { t: out, ..a }
    }

    pub(crate) fn set_macs(&mut self, macs: u64) {
        if let Some(n) = self.nodes.last_mut() {
            n.macs = macs;
        }
    }

    /// Multiply-accumulates of the whole forward.
    pub fn macs(&self) -> u64 {
        self.nodes.iter().map(|n| n.macs).sum()
    }

    /// Keeps `t` alive up to the last op made so far (the end of the module that took it).
    pub fn hold(&mut self, t: T) {
        if let Some(last) = self.nodes.len().checked_sub(1) {
            self.holds.push((t, last));
        }
    }

    /// The tensor that owns `t`'s storage (`t` itself unless an in-place op made it).
    pub fn storage(&self, t: T) -> T {
        self.get(t).alias_of.unwrap_or(t)
    }

    /// `a + b` into a new tensor: addition keeps nothing.
    pub fn add(&mut self, module: &str, a: Fm, b: Fm) -> Fm {
        let out = self.act(a.c * a.h * a.w, Cat::Residual);
        self.push("add", module, vec![a.t, b.t], out, Vec::new(), Vec::new());
        Fm { t: out, ..a }
    }

    /// `nn.MaxPool2d`: `max_pool2d_with_indices_backward` keeps the input and the int64 indices
    /// of the maxima (one per output element).
    pub fn max_pool(&mut self, module: &str, x: Fm, k: u64, stride: u64, pad: u64) -> Fm {
        let (h, w) = (conv_out(x.h, k, stride, pad), conv_out(x.w, k, stride, pad));
        let out = self.act(x.c * h * w, Cat::FeatureMaps);
        let idx = self.tensor(self.c().batch * x.c * h * w * 8, false, Cat::FeatureMaps);
        self.push("max_pool2d", module, vec![x.t], out, vec![x.t, idx], Vec::new());
        Fm { t: out, c: x.c, h, w }
    }

    /// The mean over rows and columns (`AdaptiveAvgPool2d((1, 1))`, `x.mean([-2, -1])`): its
    /// backward needs only the shape.
    pub fn mean_hw(&mut self, module: &str, x: Fm) -> Rows {
        let out = self.act(x.c, Cat::FeatureMaps);
        self.push("mean", module, vec![x.t], out, Vec::new(), Vec::new());
        Rows { t: out, rows: self.c().batch, cols: x.c }
    }

    /// `F.layer_norm` over the last dimension: `native_layer_norm_backward` keeps the input and
    /// the mean and reciprocal standard deviation of each row, in the input's dtype as the
    /// reference measures them (the transformer rule's `NormKind::Layer`).
    pub fn layer_norm(&mut self, module: &str, x: Rows) -> Rows {
        let e = self.c().elem;
        let out = self.act(x.rows * x.cols / self.c().batch.max(1), Cat::Norms);
        let mean = self.tensor(e * x.rows, false, Cat::Norms);
        let rstd = self.tensor(e * x.rows, false, Cat::Norms);
        self.push("layer_norm", module, vec![x.t], out, vec![x.t, mean, rstd], vec![x.cols, x.cols]);
        Rows { t: out, ..x }
    }

    /// `nn.Linear` (trained weight): `mm`'s backward keeps the input for the weight's gradient.
    pub fn linear(&mut self, module: &str, x: Rows, out: u64, cat: Cat) -> Rows {
        self.linear_bias(module, x, (out, true), cat)
    }

    /// `nn.Linear` with a bias vector or without (`bias=False`).
    pub fn linear_bias(&mut self, module: &str, x: Rows, (out, bias): (u64, bool), cat: Cat) -> Rows {
        let t = self.act(x.rows * out / self.c().batch.max(1), cat);
        let params = if bias { vec![out * x.cols, out] } else { vec![out * x.cols] };
        self.push("linear", module, vec![x.t], t, vec![x.t], params);
        self.set_macs(x.rows * x.cols * out);
        Rows { t, rows: x.rows, cols: out }
    }

    /// A copy that keeps nothing for backward (`F.pad`, `torch.roll`, `.contiguous()`, `cat`,
    /// a division by a constant): `elems` elements a sample in the model's dtype.
    pub fn copy(&mut self, op: &'static str, module: &str, inputs: Vec<T>, elems: u64, cat: Cat) -> T {
        let rg = inputs.iter().any(|&t| self.get(t).rg);
        let out = self.act(elems, cat);
        self.tensors[out.0 as usize].rg = rg;
        self.push(op, module, inputs, out, Vec::new(), Vec::new());
        out
    }

    /// A trained per-channel scale times `x` (ConvNeXt's layer scale): `mul`'s backward keeps
    /// `x` for the scale's gradient (and the scale, a parameter, for `x`'s).
    pub fn scale(&mut self, module: &str, x: Rows) -> Rows {
        let t = self.act(x.rows * x.cols / self.c().batch.max(1), Cat::Mlp);
        self.push("mul", module, vec![x.t], t, vec![x.t], vec![x.cols]);
        Rows { t, ..x }
    }

    /// Stochastic depth in training (`x.div(keep) * floor(rand + keep)`): the multiplication
    /// keeps the `(b, 1, 1, 1)` random tensor (the other operand needs no gradient).
    pub fn drop_path(&mut self, module: &str, x: Fm) -> Fm {
        let c = self.c();
        let noise = self.tensor(c.batch * c.elem, false, Cat::DropoutMasks);
        let out = self.act(x.c * x.h * x.w, Cat::FeatureMaps);
        self.push("drop_path", module, vec![x.t], out, vec![noise], Vec::new());
        Fm { t: out, ..x }
    }

    /// The classifier's loss on `logits` (HF's single-label cross-entropy, in the logits'
    /// dtype): `log_softmax` keeps its output, `nll_loss` the labels (held by the caller) and
    /// its one-element total weight.
    pub fn cross_entropy(&mut self, logits: Rows) -> T {
        let c = self.c();
        let labels = self.tensor(c.batch * 8, false, Cat::HeadLoss);
        self.tensors[labels.0 as usize].external = true;
        let logp = self.act(logits.cols, Cat::HeadLoss);
        self.push("log_softmax", "loss", vec![logits.t], logp, vec![logp], Vec::new());
        let weight = self.tensor(c.elem, false, Cat::HeadLoss);
        let loss = self.tensor(c.elem, true, Cat::HeadLoss);
        self.push("nll_loss", "loss", vec![logp, labels], loss, vec![labels, weight], Vec::new());
        self.loss = Some(loss);
        loss
    }

    /// The classifier on the pooled features and its loss, when the model has labels (a bare
    /// backbone's forward ends at the pooled features).
    pub fn classifier(&mut self, module: &str, pooled: Rows, labels: u64) {
        if labels > 0 {
            let logits = self.linear(module, pooled, labels, Cat::HeadLoss);
            self.cross_entropy(logits);
        }
    }

    /// Every trainable parameter tensor's elements, in forward order.
    pub fn param_tensors(&self) -> impl Iterator<Item = u64> + '_ {
        self.nodes.iter().flat_map(|n| n.params.iter().copied())
    }

    /// Bytes of every buffer tensor, in forward order.
    pub fn buffer_tensors(&self) -> impl Iterator<Item = u64> + '_ {
        self.nodes.iter().flat_map(|n| n.buffers.iter().copied())
    }

    /// Trainable parameters.
    pub fn n_params(&self) -> u64 {
        self.param_tensors().sum()
    }
}
