//! Sequence mixers other than attention, each one rule: LFM2's short convolution, Mamba2's state
//! space duality (SSD) mixer, Mamba's selective scan and the gated DeltaNet; for each, what the
//! code that runs it keeps (transformers' PyTorch path or the kernels of `mamba_ssm`,
//! `causal_conv1d` and flash-linear-attention) and what its backward allocates at once.

use super::NormKind;
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

impl Graph<'_> {
    /// A Mamba (1) mixer of hidden size `h` (`MambaMixer`, Jamba's with its dt/B/C norms).
    /// `in_proj` keeps its input; the rest depends on the code that runs it ([`MixerImpl`]):
    /// Mamba's fused `mamba_inner_fn`, Jamba's `causal_conv1d` and `selective_scan_fn` kernels,
    /// or transformers' PyTorch path (a sequential scan that keeps every step's state).
    pub fn mamba1(&mut self, x: Tensor, h: u64, m: &crate::model::Mamba) -> Tensor {
        let ctx = self.ctx;
        let (b, s, t, ts, c) = (ctx.batch, ctx.seq, ctx.tokens, ctx.rank_tokens, ctx.compute_elem);
        let (i, n, r) = (m.inner, m.state, m.dt_rank);
        let xz = self.linear(x, ts, h, 2 * i, LinearRole::Q, Cat::AttentionIo, "in_proj");
        let before = self.kept.total();
        let active = ctx.full || self.rg(xz);
        let a_log = if ctx.full { i * n * 4 } else { 0 };
        if !active {
            let y = self.tensor(t * i * c, c, false, Cat::AttentionIo);
            self.record("mamba (conv1d, selective scan)", before);
            return self.linear(y, t, i, h, LinearRole::O, Cat::AttentionIo, "out_proj");
        }
        self.keep(xz);
        let kernels = ctx.mixer == MixerImpl::Kernels;
        // the fused Function keeps the scan's chunk states: (b, inner, ceil(s / 2048), 2·state) fp32
        let intermediates = b * i * s.div_ceil(2048) * 2 * n * 4;
        if kernels && !m.dt_norms {
            // `MambaInnerFn` (checkpoint_lvl 1): xz, x_dbl, B and C made contiguous, A, D and
            // dt's bias as fp32 copies, the chunk states and the scan's output; the convolution
            // and dt are recomputed, `out_proj` runs inside it
            let keep =
                t * (r + 2 * n) * c + 2 * t * n * c + i * n * 4 + 2 * i * 4 + intermediates + t * i * c;
            self.keep_new(keep + a_log, Cat::AttentionIo);
            self.kept_at_attention = self.kept.total();
            self.record("mamba fused (mamba_inner_fn: conv1d, selective scan, out_proj)", before);
            return self.tensor(ts * h * c, c, true, Cat::AttentionIo);
        }
        // the convolution's padded output (kept by its SiLU, or the kernel's input: xz's view)
        if !kernels {
            self.keep_new(b * (s + m.conv_kernel.saturating_sub(1)) * i * c, Cat::AttentionIo);
        }
        let u = self.tensor(t * i * c, c, true, Cat::AttentionIo);
        self.keep(u);
        // `x_proj` on the transposed activation: one sequence reads it as it is, more make a
        // contiguous copy for the matmul
        let xin = if b > 1 { self.tensor(t * i * c, c, true, Cat::AttentionIo) } else { u };
        self.record("mamba conv1d", before);
        let xdbl = self.linear(xin, t, i, r + 2 * n, LinearRole::Q, Cat::AttentionIo, "x_proj");
        let before = self.kept.total();
        self.mamba_dt_b_c(xdbl, m, kernels);
        // dt_proj's output, `dt + bias` and its softplus (the kernel keeps dt_proj's output)
        self.keep_new(if kernels { t * i * c } else { 2 * t * i * c }, Cat::AttentionIo);
        // A (kept by its product or the kernel) and exp(A_log) when A_log trains: twice on
        // Mamba's PyTorch path (the mixer computes A for its fused path, then the scan again)
        let exps = if !kernels && !m.dt_norms { 2 } else { 1 };
        let mut keep = i * n * 4 + exps * a_log;
        keep += if kernels {
            // `SelectiveScanFn`: D and dt's bias as fp32 copies, the chunk states, the output
            // (and `out_z`, which out_proj keeps)
            2 * i * 4 + intermediates + t * i * c
        } else {
            // exp(A·dt), dt·B, the sequential states, silu(z) and the scan plus D·x in fp32
            2 * t * i * n * 4 + sequential_states(b, s, i, n, c) + t * i * c + t * i * 4
        };
        self.keep_new(keep, Cat::AttentionIo);
        self.kept_at_attention = self.kept.total();
        self.record("mamba selective scan", before);
        let y = self.tensor(t * i * c, c, true, Cat::AttentionIo);
        self.linear(y, t, i, h, LinearRole::O, Cat::AttentionIo, "out_proj")
    }

    /// dt, B and C from `x_proj`'s output: views of it (kept by dt_proj's matmul), or Jamba's
    /// RMSNorms of each; then what the scan keeps of B (its fp32 copy, or the kernel's
    /// contiguous one) and of C (every step's matmul, or the kernel's copy).
    fn mamba_dt_b_c(&mut self, xdbl: Tensor, m: &crate::model::Mamba, kernels: bool) {
        let ctx = self.ctx;
        let (t, c) = (ctx.tokens, ctx.compute_elem);
        let (n, r) = (m.state, m.dt_rank);
        if m.dt_norms {
            let dt = self.norm(xdbl, t, r, NormKind::Rms, "dt_layernorm");
            self.keep(dt);
            let bn = self.norm(xdbl, t, n, NormKind::Rms, "b_layernorm");
            let cn = self.norm(xdbl, t, n, NormKind::Rms, "c_layernorm");
            if kernels {
                self.keep_new(2 * t * n * c, Cat::AttentionIo);
            } else {
                if c < 4 {
                    self.keep_new(t * n * 4, Cat::AttentionIo)
                } else {
                    self.keep(bn)
                }
                self.keep(cn);
            }
        } else {
            self.keep(xdbl);
            if kernels {
                self.keep_new(2 * t * n * c, Cat::AttentionIo);
            } else if c < 4 {
                self.keep_new(t * n * 4, Cat::AttentionIo);
            }
        }
    }
}

/// The PyTorch path's sequential scan: the zero initial state, and each step's state kept by
/// the next step's product and (cast to the compute dtype, in half) by its matmul with C.
fn sequential_states(b: u64, s: u64, i: u64, n: u64, c: u64) -> u64 {
    let state = b * i * n;
    if c < 4 {
        // x.float() and D.float() too
        state * c + s * state * c + s.saturating_sub(1) * state * 4 + b * s * i * 4 + i * 4
    } else {
        state * 4 + s * state * 4
    }
}

/// What one Mamba (1) mixer's backward allocates at once. PyTorch path: the gradients of the
/// sequential scan's `(b, inner, s, state)` fp32 tensors (`exp(A·dt)`, `dt·B`, their product and
/// the per-step slices' accumulation: four at their most) and two to four `(t, inner)` ones,
/// measured on Jamba's tiny rows (4.11-4.24 state-wide tensors). Kernels: `dxz` and the
/// recomputed convolution and dt (`selective_scan_interface.py`; not measured).
pub fn mamba_backward_transient(ctx: &crate::engine::inputs::Ctx, m: &crate::model::Mamba) -> u64 {
    let (t, c) = (ctx.tokens, ctx.compute_elem);
    match ctx.mixer {
        MixerImpl::Torch => 4 * t * m.inner * m.state * 4 + 4 * c * t * m.inner,
        MixerImpl::Kernels => 4 * t * m.inner * c,
    }
}

impl Graph<'_> {
    /// A gated DeltaNet mixer of hidden size `h` (`Qwen3NextGatedDeltaNet`). The two input
    /// projections keep their input; the rest depends on the code that runs the rule
    /// ([`MixerImpl`]): flash-linear-attention's `chunk_gated_delta_rule` or transformers'
    /// `torch_chunk_gated_delta_rule`.
    pub fn gated_delta(&mut self, x: Tensor, h: u64, d: &crate::model::Delta) -> Tensor {
        let ctx = self.ctx;
        let (b, s, t, ts, c) = (ctx.batch, ctx.seq, ctx.tokens, ctx.rank_tokens, ctx.compute_elem);
        let (kw, vw, cd, hv) = (d.key_width(), d.value_width(), d.conv_dim(), d.v_heads);
        let qkvz = self.linear(x, ts, h, 2 * kw + 2 * vw, LinearRole::Q, Cat::AttentionIo, "in_proj_qkvz");
        let _ba = self.linear(x, ts, h, 2 * hv, LinearRole::K, Cat::AttentionIo, "in_proj_ba");
        let before = self.kept.total();
        let active = ctx.full || self.rg(qkvz);
        if !active {
            let y = self.tensor(t * vw * c, c, false, Cat::AttentionIo);
            self.record("gated delta rule (conv1d, chunked rule, gated norm)", before);
            return self.linear(y, t, vw, h, LinearRole::O, Cat::AttentionIo, "out_proj");
        }
        // q·k·v concatenated (the convolution's input), beta = sigmoid(b); the decay
        // `-exp(A_log) · softplus(a.float() + dt_bias)`: its sum and softplus in fp32, -A and
        // (A_log training) exp(A_log)
        let a_log = if ctx.full { hv * 4 } else { 0 };
        let mut keep = t * cd * c + t * hv * c + 2 * t * hv * 4 + hv * 4 + a_log;
        keep += if ctx.mixer == MixerImpl::Kernels {
            // `ChunkGatedDeltaRuleFunction` (inputs made contiguous): the L2-normalised q and k
            // and their rstd, v, the decay's chunk cumsum in fp32, beta and the inverted
            // `(t, v_heads, 64)` system A in the input dtype
            2 * t * kw * c + 2 * t * d.k_heads * 4 + t * vw * c + t * hv * 4 + t * hv * 64 * c
        } else {
            delta_torch_bytes(b, s, c, d)
        };
        // the gated RMSNorm per head (norm before gate): the fp32 copy, rsqrt, the cast kept by
        // `weight *`, z's fp32 copy, its SiLU, and the weighted value kept by the product
        keep += t * vw * 4 + t * hv * 4 + t * vw * c + 2 * t * vw * 4 + t * vw * c;
        self.keep_new(keep, Cat::AttentionIo);
        self.kept_at_attention = self.kept.total();
        self.record("gated delta rule (conv1d, chunked rule, gated norm)", before);
        let y = self.tensor(t * vw * c, c, true, Cat::AttentionIo);
        self.linear(y, t, vw, h, LinearRole::O, Cat::AttentionIo, "out_proj")
    }
}

/// What transformers' `torch_chunk_gated_delta_rule` keeps for `b` sequences of `seq` tokens in a
/// compute dtype of `c` bytes, past the concatenated q·k·v and beta: derived op by op from its
/// code (transformers 5.25) and the saved-storage listing of one block.
fn delta_torch_bytes(b: u64, seq: u64, c: u64, d: &crate::model::Delta) -> u64 {
    const Q: u64 = 64;
    let (hv, dk, dv, cd) = (d.v_heads, d.k_dim, d.v_dim, d.conv_dim());
    let t = b * seq;
    let chunks = seq.div_ceil(Q);
    let sp = chunks * Q;
    // the convolution's padded output (kept by its SiLU)
    let mut x = b * (seq + d.conv_kernel.saturating_sub(1)) * cd * c;
    // q and k repeated to the value heads in fp32, each with its L2 norm's rsqrt
    x += 2 * (t * hv * dk * 4 + t * hv * 4);
    // beta and v padded in fp32; k and the scaled q padded, and k·beta
    x += b * hv * sp * 4 + b * hv * sp * dv * 4 + 3 * b * hv * sp * dk * 4;
    // the causal mask; the pairwise decay, k·β·k^T and q·k^T, the system and the intra-chunk scores
    x += Q * Q + 5 * b * hv * chunks * Q * Q * 4;
    // exp(cumsum) for the decayed k·β; the solved values and decayed keys
    x += b * hv * sp * 4 + b * hv * sp * dv * 4 + b * hv * sp * dk * 4;
    // q's and k's decays, the chunk decay; the decayed q and k
    x += 2 * b * hv * sp * 4 + b * hv * chunks * 4 + 2 * b * hv * sp * dk * 4;
    // the sequential part: one `(dk, dv)` state per chunk and the new values
    x += chunks * b * hv * dk * dv * 4 + b * hv * sp * dv * 4;
    x
}

/// The most one recurrent mixer of `m` holds at once in a forward without autograd (inference):
/// on transformers' PyTorch path the scan's intermediates stay referenced until it returns, so
/// about what training would keep of them; with the kernels, the projections' outputs, the
/// convolution's and the scan's output.
pub fn mixer_infer_working_set(ctx: &crate::engine::inputs::Ctx, m: &crate::model::TransformerSpec) -> u64 {
    let (b, s, t, c) = (ctx.batch, ctx.seq, ctx.tokens, ctx.compute_elem);
    let torch = ctx.mixer == MixerImpl::Torch;
    let ssm = m.ssm.map_or(0, |x| {
        let base = t * x.proj() * c + t * x.conv_dim() * c;
        if torch { base + ssm_torch_bytes(b, s, c, &x) } else { base + 2 * t * x.inner() * 4 }
    });
    let mamba = m.mamba.map_or(0, |x| {
        let base = t * 2 * x.inner * c + 2 * t * x.inner * c;
        // exp(A·dt), dt·B and their product with x, each `(b, inner, s, state)` in fp32
        if torch { base + 3 * t * x.inner * x.state * 4 + t * x.inner * 4 } else { base + t * x.inner * 4 }
    });
    let delta = m.delta.map_or(0, |x| {
        if x.kda {
            return super::kda::kda_infer_working_set(ctx, &x);
        }
        let base = t * (2 * x.key_width() + 2 * x.value_width()) * c + t * x.conv_dim() * c;
        if torch { base + delta_torch_bytes(b, s, c, &x) } else { base + 2 * t * x.value_width() * 4 }
    });
    ssm.max(mamba).max(delta)
}
