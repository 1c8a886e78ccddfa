//! Sequence mixers other than attention: LFM2's short convolution.

use super::{Graph, Tensor};
use crate::engine::inputs::saved::Cat;
use crate::model::LinearRole;

impl Graph<'_> {
    /// LFM2's short convolution (`Lfm2ShortConv`, the PyTorch path): `in_proj` to `B`, `C`, `x`
    /// (one output, kept by both products), `B·x` (kept by the convolution), a depthwise
    /// `conv1d` over the sequence padded by `kernel − 1` on both sides whose whole output is kept
    /// by `C · out[..., :s]`, and that product (kept by `out_proj`, the transpose back being a
    /// view of it).
    pub fn short_conv(&mut self, x: Tensor, width: u64, kernel: u64) -> Tensor {
        let ctx = self.ctx;
        let (t, ts, c) = (ctx.tokens, ctx.rank_tokens, ctx.compute_elem);
        let bcx = self.linear(x, ts, width, 3 * width, LinearRole::Q, Cat::AttentionIo, "in_proj");
        let before = self.kept.total();
        let active = self.rg(bcx);
        if active {
            self.keep(bcx);
        }
        let bx = self.tensor(t * width * c, c, active, Cat::AttentionIo);
        if active {
            self.keep(bx);
        }
        let padded = ctx.batch * (ctx.seq + kernel.saturating_sub(1)) * width * c;
        let conv = self.tensor(padded, c, active, Cat::AttentionIo);
        if active {
            self.keep(conv);
        }
        let y = self.tensor(t * width * c, c, active, Cat::AttentionIo);
        self.record("short conv (B·x, conv1d, C·y)", before);
        self.linear(y, t, width, width, LinearRole::O, Cat::AttentionIo, "out_proj")
    }
}
