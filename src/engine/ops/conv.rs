//! Convolutions and per-channel scales: what `convolution_backward` and `mul` by a learned
//! vector keep.

use super::{Cat, Graph, Tensor};

impl Graph<'_> {
    /// A patch embedding, `nn.Conv2d(c, h, kernel=p, stride=p)` over the micro-batch's images,
    /// flattened to `(b, patches, h)`. `convolution_backward` needs the input for the weight's
    /// gradient and the weight for the input's: the pixels (no gradient) are kept when the
    /// weight trains, in the dtype the convolution runs in (autocast's half copy, or the model's
    /// dtype, to which HF casts them). Output: `out_elems` in the compute dtype.
    pub fn patch_conv(&mut self, pixels: u64, out_elems: u64) -> Tensor {
        let before = self.kept.total();
        let ctx = self.ctx;
        if ctx.full {
            self.keep_new(pixels * ctx.compute_elem, Cat::Embeddings);
        }
        let c = ctx.compute_elem;
        let out = self.tensor(out_elems * c, c, ctx.full, Cat::Embeddings);
        self.record("conv2d (patch embedding)", before);
        out
    }

    /// `x * gamma` with a learned per-channel vector (DINOv2's layer scale): `mul`'s backward
    /// keeps `x` for gamma's gradient only when gamma trains (a frozen base under LoRA keeps
    /// nothing but the parameter). The product takes the wider dtype: fp32 under autocast, whose
    /// weights are fp32.
    pub fn scale_by_weight(&mut self, x: Tensor, elems: u64) -> Tensor {
        let before = self.kept.total();
        let ctx = self.ctx;
        if ctx.full {
            self.keep(x);
        }
        let e = self.elem(x).max(ctx.residual_elem);
        let out = self.tensor(elems * e, e, ctx.full || self.rg(x), Cat::Residual);
        self.record("mul (layer scale)", before);
        out
    }
}
