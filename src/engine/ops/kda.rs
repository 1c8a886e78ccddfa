//! Kimi Delta Attention (`KimiLinearDeltaAttention`, Kimi-Linear's `linear_attention` layers):
//! the gated delta rule with a decay per channel. What its backward keeps on transformers' PyTorch
//! path (`chunk_kimi_delta_attention`) and with flash-linear-attention's `chunk_kda`, derived op
//! by op from their code and checked against the saved-storage listing of Kimi-Linear's blocks.

use super::{Graph, Tensor};
use crate::engine::inputs::MixerImpl;
use crate::engine::inputs::saved::Cat;
use crate::model::{Delta, LinearRole};

/// Tokens per chunk of the chunked rule.
const Q: u64 = 64;

impl Graph<'_> {
    /// A KDA mixer of hidden size `h`. `q_proj`, `k_proj`, `v_proj` and the gates' low-rank
    /// projections keep their input; the rest depends on the code that runs the rule
    /// ([`MixerImpl`]).
    pub fn kda(&mut self, x: Tensor, h: u64, d: &Delta) -> Tensor {
        let ctx = self.ctx;
        let (t, ts, c) = (ctx.tokens, ctx.rank_tokens, ctx.compute_elem);
        let (w, heads, hd) = (d.value_width(), d.v_heads, d.k_dim);
        let io = Cat::AttentionIo;
        let q = self.linear(x, ts, h, d.key_width(), LinearRole::Q, io, "q_proj");
        let _k = self.linear(x, ts, h, d.key_width(), LinearRole::K, io, "k_proj");
        let _v = self.linear(x, ts, h, w, LinearRole::V, io, "v_proj");
        // the decay `-exp(A_log) · softplus(f_b(f_a(x)).float() + dt_bias)` and `b_proj`
        let fa = self.linear(x, ts, h, hd, LinearRole::Dense, io, "f_a_proj");
        let _fb = self.linear(fa, t, hd, w, LinearRole::Dense, io, "f_b_proj");
        let _b = self.linear(x, ts, h, heads, LinearRole::Dense, io, "b_proj");
        let before = self.kept.total();
        let active = ctx.full || self.rg(q) || self.rg(x);
        if !active {
            let y = self.tensor(t * w * c, c, false, io);
            self.record("kimi delta attention (conv1d, chunked rule, gated norm)", before);
            return self.linear(y, t, w, h, LinearRole::O, io, "o_proj");
        }
        // q·k·v concatenated (the convolution's input); beta = sigmoid(b)
        self.keep_new(t * d.conv_dim() * c, io);
        self.keep_new(t * heads * c, io);
        // the softplus: the `> 20` mask, exp(g) and 1 + exp(g) in fp32; with A_log training, the
        // softplus (kept by the product with -exp(A_log)), exp(A_log) and its negation
        self.keep_new(t * w + 2 * t * w * 4, io);
        if ctx.full {
            self.keep_new(t * w * 4 + 2 * heads * 4, io);
        }
        match ctx.mixer {
            // `ChunkKDAFunction`: the L2-normalised q and k and their rstd, v made contiguous,
            // the decay as passed and its chunk cumsum (fp32), Aqk and Akk in the input dtype
            MixerImpl::Kernels => {
                self.keep_new(3 * t * w * c + 2 * t * heads * 4, io);
                self.keep_new(2 * t * w * 4, io);
                self.keep_new(2 * t * heads * Q * c, io);
            }
            MixerImpl::Torch => kda_torch_keeps(self, ctx.batch, ctx.seq, c, d),
        }
        self.kept_at_attention = self.kept.total();
        self.record("kimi delta attention (conv1d, chunked rule)", before);
        let gate = self.gate_norm_keeps(x, t, ts, h, d);
        self.record("gated RMSNorm (g_a, g_b, fp32 norm, sigmoid gate)", gate);
        let y = self.tensor(t * w * c, c, true, io);
        self.linear(y, t, w, h, LinearRole::O, io, "o_proj")
    }

    /// The output gate `g_b(g_a(x))` and `o_norm` (`KimiLinearRMSNormGated`, norm before gate,
    /// in fp32): the rule's output in fp32, rsqrt, the normed and the weighted values, the
    /// gate's sigmoid, and the weight's fp32 copy when the compute dtype is narrower. Returns
    /// the kept total before the norm (for its record).
    fn gate_norm_keeps(&mut self, x: Tensor, t: u64, ts: u64, h: u64, d: &Delta) -> u64 {
        let (c, io) = (self.ctx.compute_elem, Cat::AttentionIo);
        let (w, hd) = (d.value_width(), d.k_dim);
        let ga = self.linear(x, ts, h, hd, LinearRole::Dense, io, "g_a_proj");
        let _gate = self.linear(ga, t, hd, w, LinearRole::Dense, io, "g_b_proj");
        let before = self.kept.total();
        self.keep_new(4 * t * w * 4 + t * d.v_heads * 4, io);
        if c < 4 {
            self.keep_new(d.v_dim * 4, io);
        }
        before
    }
}

/// What transformers' `chunk_kimi_delta_attention` keeps for `b` sequences of `seq` tokens in a
/// compute dtype of `c` bytes, past the concatenated q·k·v, beta and the decay: derived op by op
/// from its code (transformers 5.25) and the saved-storage listing of Kimi-Linear's blocks.
fn kda_torch_keeps(g: &mut Graph<'_>, b: u64, seq: u64, c: u64, d: &Delta) {
    let io = Cat::AttentionIo;
    let (bh, dk, dv) = (b * d.v_heads, d.k_dim, d.v_dim);
    let n = seq.div_ceil(Q);
    let sp = n * Q;
    // the convolution's padded output (kept by its SiLU) and the three causal masks
    g.keep_new(b * (seq + d.conv_kernel.saturating_sub(1)) * d.conv_dim() * c + 3 * Q * Q, io);
    // the pairwise decays exp(g_i − g_j) `(b, h, n, 64, 64, dk)`, their products with k·β and k,
    // and the intra-chunk q·k products: the three largest
    for _ in 0..3 {
        g.keep_new(bh * sp * Q * dk * 4, io);
    }
    // the row-by-row solve of the system: each step clones row i and the block above it
    let solve: u64 = (1..Q).map(|i| i + i * i).sum();
    g.keep_new(bh * n * solve * 4, io);
    g.keep_new(bh * delta_rule_small(seq, n, dk, dv) * 4, io);
}

/// The smaller fp32 tensors of the chunked rule per sequence and head (elements).
fn delta_rule_small(seq: u64, n: u64, dk: u64, dv: u64) -> u64 {
    let sp = n * Q;
    // q and k cast to fp32 and their L2 norms
    2 * seq * dk + 2 * seq
        // k, v and beta padded; the scaled q; k·β and v·β
        + sp * dk + sp * dv + sp + sp * dk + sp * dk + sp * dv
        // the solved system and the intra-chunk scores
        + 2 * sp * Q
        // exp(g) and k·β·exp(g), the decayed keys (A @ that)
        + 3 * sp * dk
        // per chunk: exp(g_i) for q, q·exp(g_i) past the first chunk, the entering state, the
        // new values, exp(g_last), exp(g_last − g_i) and k times it
        + sp * dk + (n - 1) * Q * dk + n * dk * dv + sp * dv + n * dk + 2 * sp * dk
}

/// The most one KDA mixer holds at once in a forward without autograd: the projections'
/// outputs and the convolution's input; on the PyTorch path the pairwise decays, the k·β·k
/// product and their product (three of `(b, h, n, 64, 64, dk)` in fp32) while the padded q, k,
/// v, the decays' cumsum, beta, k·β and v·β are held; with the kernels its fp32 output and
/// state.
pub fn kda_infer_working_set(ctx: &crate::engine::inputs::Ctx, d: &Delta) -> u64 {
    let (b, s, t, c) = (ctx.batch, ctx.seq, ctx.tokens, ctx.compute_elem);
    let base = 3 * t * d.value_width() * c + t * d.conv_dim() * c;
    if ctx.mixer == MixerImpl::Kernels {
        return base + 2 * t * d.value_width() * 4;
    }
    let sp = s.div_ceil(Q) * Q;
    let bh = b * d.v_heads;
    base + 3 * bh * sp * Q * d.k_dim * 4 + bh * (5 * sp * d.k_dim + 2 * sp * d.v_dim + sp) * 4
}

/// What one KDA mixer's backward allocates at once, past what it has freed by then. PyTorch
/// path: three gradients the size of the pairwise decays `(b, h, n, 64, 64, dk)` in fp32 (the
/// decays' accumulated gradient, the full-size zeros each chunk's `decay_mask[:, :, i]`
/// scatters into, and a product's gradient) less the one chunk's q·k product already released:
/// measured on Kimi-Linear's tiny rows (bf16 and fp32, 2 and 4 chunks, checkpointed). Kernels
/// (`chunk_kda_bwd`, not measured): the recomputed `w`, `u`, `qg`, `kg` and `v_new`, the
/// per-chunk states and their gradients, dq/dk/dv/dg in fp32 and the two `(t, h, 64)` score
/// gradients.
pub fn kda_backward_transient(ctx: &crate::engine::inputs::Ctx, d: &Delta) -> u64 {
    let (b, t, c) = (ctx.batch, ctx.tokens, ctx.compute_elem);
    let (bh, dk, n) = (b * d.v_heads, d.k_dim, ctx.seq.div_ceil(Q));
    match ctx.mixer {
        MixerImpl::Torch => (3 * n - 1) * bh * Q * Q * dk * 4,
        MixerImpl::Kernels => {
            let w = d.value_width();
            5 * t * w * c + 4 * t * w * 4 + 2 * bh * n * dk * d.v_dim * 4 + 2 * t * d.v_heads * Q * 4
        }
    }
}
