//! Sequence mixers other than attention: LFM2's short convolution and Mamba2's state space
//! duality (SSD) mixer.

use super::{Graph, Tensor};
use crate::engine::inputs::MixerImpl;
use crate::engine::inputs::saved::Cat;
use crate::model::{LinearRole, Ssm};

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

    /// A Mamba2 mixer of hidden size `h` (`Mamba2Mixer` and its copies). `in_proj` keeps its
    /// input; what the rest keeps depends on the code that runs it ([`MixerImpl`]).
    pub fn mamba2(&mut self, x: Tensor, h: u64, s: &Ssm) -> Tensor {
        let ctx = self.ctx;
        let (t, ts, c) = (ctx.tokens, ctx.rank_tokens, ctx.compute_elem);
        let proj = self.linear(x, ts, h, s.proj(), LinearRole::Q, Cat::AttentionIo, "in_proj");
        let before = self.kept.total();
        // A_log trains under full fine-tuning, so everything after it requires grad too
        let active = ctx.full || self.rg(proj);
        // `A = -exp(A_log.float())`: exp keeps its output when A_log trains
        let a_log = if ctx.full { s.heads * 4 } else { 0 };
        if !active {
            let y = self.tensor(t * s.inner() * c, c, false, Cat::AttentionIo);
            self.record("mamba2 (conv1d, scan, gated norm)", before);
            return self.linear(y, t, s.inner(), h, LinearRole::O, Cat::AttentionIo, "out_proj");
        }
        self.keep(proj);
        if ctx.mixer == MixerImpl::Kernels {
            // `MambaSplitConv1dScanCombinedFn` keeps zxbcdt (in_proj's output), A, the scan's
            // output in the input dtype and the gated norm's fp32 rstd; `out_proj` runs inside
            // it on its weight, and the convolution and the norm are recomputed in backward
            let rstd = if s.gated_norm { t * s.groups * 4 } else { 0 };
            self.keep_new(a_log + s.heads * 4 + t * s.inner() * c + rstd, Cat::AttentionIo);
            // the mixer's backward runs with all of it alive (its transient is the mixer's)
            self.kept_at_attention = self.kept.total();
            self.record("mamba2 fused (mamba_ssm: scan, gated norm, out_proj)", before);
            return self.tensor(ts * h * c, c, true, Cat::AttentionIo);
        }
        let mut kept = 2 * a_log + s.heads * 4 + ssm_torch_bytes(ctx.batch, ctx.seq, c, s);
        if s.gated_norm && ctx.full {
            // `weight * normalised` keeps the fp32 normalised value when the weight trains
            kept += t * s.inner() * 4;
        }
        self.keep_new(kept, Cat::AttentionIo);
        // the mixer's backward peaks in the gated norm's, once out_proj's is done and the gate's
        // fp32 copy and its SiLU (kept by the first product) are freed
        let copies = if c < 4 { 2 } else { 1 };
        let gate = if s.gated_norm { copies * t * s.inner() * 4 } else { 0 };
        self.kept_at_attention = self.kept.total().saturating_sub(gate);
        self.record("mamba2 (conv1d, chunked scan, gated norm)", before);
        // the norm's output cast to the compute dtype (its product with the weight is fp32)
        let y = self.tensor(t * s.inner() * c, c, true, Cat::AttentionIo);
        self.linear(y, t, s.inner(), h, LinearRole::O, Cat::AttentionIo, "out_proj")
    }
}

/// What transformers' PyTorch path of a Mamba2 mixer keeps for backward past `in_proj`'s output,
/// its `out_proj` input and the A_log terms, for `b` sequences of `seq` tokens in a compute dtype
/// of `c` bytes: derived op by op from `Mamba2Mixer.forward`, `causal_conv1d_fn`,
/// `mamba2_chunk_scan` and `Mamba2RMSNormGated` (transformers 5.25), exact against PyTorch 2.15.
fn ssm_torch_bytes(b: u64, seq: u64, c: u64, s: &Ssm) -> u64 {
    let (hh, n, q, k) = (s.heads, s.state, s.chunk.max(1), s.conv_kernel);
    let (i, cd, t) = (s.inner(), s.conv_dim(), b * seq);
    let chunks = seq.div_ceil(q);
    // the sequence padded to whole chunks
    let tp = b * chunks * q;
    // the convolution's whole output (padded by kernel − 1, sliced), kept by its activation;
    // `dt + dt_bias` and its softplus, in the compute dtype
    let mut x = b * (seq + k.saturating_sub(1)) * cd * c + 2 * t * hh * c;
    // `D · pad(x.float())` keeps the padded fp32 x
    x += tp * i * 4;
    x += if c < 4 {
        // half: `x.float()` (kept by `x · dt`), two `dt.float()` copies (for x and for A)
        t * i * 4 + 2 * t * hh * 4
    } else {
        // fp32: x is a view of the activation's output, dt (the clamp's output) is kept once
        t * cd * c + t * hh * 4
    };
    // segment_sum's two bool masks, for the chunk and for the chunk-to-chunk decay
    x += 2 * q * q + 2 * (chunks + 1) * (chunks + 1);
    // L = exp(segsum(A)), G = C·B^T and M = G·L's copy for its einsum: (b, h, c, q, q) each
    x += 3 * b * hh * chunks * q * q * 4;
    // B and C repeated to every head: the copies the einsums make (C·B: both; B_decay·x: B_decay;
    // C·states: C), and B itself kept by `B · decay`
    x += 5 * tp * hh * n * 4;
    // x chunked (the Y_diag and the states einsums' copies) and `C·states` kept by its decay
    x += 3 * tp * i * 4;
    // decay_states and exp(A_cumsum), the chunk decay, the states with the initial zeros, and
    // their copy for `C·states`
    x += 2 * b * hh * chunks * q * 4 + b * hh * (chunks + 1) * (chunks + 1) * 4;
    x += b * (chunks + 1) * i * n * 4 + b * chunks * i * n * 4;
    if chunks == 1 {
        // one chunk: the states einsum takes the Y_diag copy of x, C·states the states whole
        x = x - tp * i * 4 + b * i * n * 4;
        if b == 1 {
            // and one sequence: the einsums take B and C without copying them
            x -= 2 * tp * hh * n * 4;
        }
    }
    if s.gated_norm {
        // `Mamba2RMSNormGated(scan, z)`: z.float() (half only), silu(z), the scan's output, their
        // product and the group rsqrt
        x += if c < 4 { t * i * 4 } else { 0 } + 3 * t * i * 4 + t * s.groups * 4;
    } else {
        // Falcon-H1 without the norm: `scan * silu(z)` keeps silu(z) (z's dtype) and the fp32 scan
        x += t * i * c + t * i * 4;
    }
    x
}

/// What one Mamba2 mixer's backward allocates at once. PyTorch path: the gated norm's fp32
/// gradients, five and a half `(t, inner)` fp32 tensors at their most (measured where a
/// one-block model's peak is in the mixer's backward: inner 2048 at 1-2 × 1024-2048 tokens,
/// chunks of 128 and 256, 1 and 2 groups, bf16 and fp32, and the tiny checkpointed rows; the
/// scan's own `(b, heads, chunks, Q, Q)` gradients are not the peak there). Fused kernels:
/// `dzxbcdt` and `dxBC` (`empty_like`), the recomputed convolution, the recomputed norm output
/// and `dz`'s clone (`ssd_combined.py`; not measured).
pub fn ssm_backward_transient(ctx: &crate::engine::inputs::Ctx, s: &Ssm) -> u64 {
    let (t, c) = (ctx.tokens, ctx.compute_elem);
    match ctx.mixer {
        MixerImpl::Torch => 11 * t * s.inner() * 2,
        MixerImpl::Kernels => t * (s.proj() + 2 * s.conv_dim() + 2 * s.inner()) * c,
    }
}
