//! The attention op: what each kernel (eager, SDPA flash / memory-efficient) keeps for backward,
//! and which kernel a call dispatches to.

use super::*;

/// One attention call.
#[derive(Clone, Copy, Debug)]
pub struct Attn {
    /// Query heads (on this rank).
    pub heads: u64,
    /// Key/value heads (on this rank).
    pub kv_heads: u64,
    /// Query/key width per head.
    pub qk_dim: u64,
    /// Value width per head.
    pub v_dim: u64,
    /// SDPA gets an explicit mask: a window shorter than the sequence, or a family that always
    /// materialises its causal mask (Falcon).
    pub masked: bool,
    /// q is a fresh `(b, h, s, d)` storage (built by `cat`, as partial rotary does) rather than a
    /// transposed view of its projection: flash then returns its output head-major and o_proj
    /// reads a transpose-contiguous copy.
    pub q_head_major: bool,
    /// The caller passes grouped K/V to SDPA as they are even with a mask (Falcon); HF's generic
    /// SDPA path repeats them to every head when it passes a mask.
    pub gqa_native: bool,
    /// Eager attention soft-caps the scores (`cap·tanh(x/cap)`).
    pub softcap: bool,
    /// Learned attention sinks (gpt-oss): an extra logit column per head.
    pub sinks: bool,
    /// Dropout on the probabilities.
    pub dropout: f64,
    /// How eager attention's softmax runs.
    pub softmax: Softmax,
}

/// Eager attention's softmax.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Softmax {
    /// `softmax(x, dtype=float32).to(q.dtype)` (HF Llama-style `eager_attention_forward`).
    Fp32,
    /// `softmax(x)` in the scores' dtype; fp32 under autocast (softmax is an fp32 autocast op)
    /// and cast back (GPT-2, BERT).
    Native,
    /// A fused scale-mask-softmax kernel that keeps its half output (Megatron).
    Fused,
}

impl Softmax {
    /// Bytes per element of the tensor `_softmax` receives (what its node keeps before PyTorch
    /// 1.11), for half-precision compute of `c` bytes. Under autocast the scores are fp32: HF's
    /// eager paths add an additive mask made in the embeddings' dtype (fp32 weights). Otherwise
    /// `softmax(x, dtype=float32)` on CUDA runs an fp16 `x` through the half-to-float kernel and
    /// converts anything else first (the copy is the input); a native softmax runs on the scores
    /// as they are. Megatron's fused kernel is its own Function and keeps only its output;
    /// gpt-oss's sink-extended logits stay in the compute dtype.
    pub fn input_bytes(self, ctx: &Ctx, c: u64, sinks: bool) -> u64 {
        let scores = if ctx.amp { 4 } else { c };
        match self {
            Self::Fused => 0,
            _ if sinks => c,
            Self::Fp32 => Self::fp32_input_bytes(scores, ctx.f16),
            Self::Native => scores,
        }
    }

    /// Bytes per element of what `softmax(x, dtype=float32)` hands `_softmax` (and its node
    /// keeps before PyTorch 1.11) for an `x` of `x_bytes`: on CUDA an fp16 `x` itself (the
    /// half-to-float kernel), anything else converted to fp32 first.
    pub fn fp32_input_bytes(x_bytes: u64, f16: bool) -> u64 {
        if x_bytes == 2 && f16 { 2 } else { 4 }
    }

    /// Bytes per element of the softmax output for half-precision compute of `c` bytes.
    pub fn elem_bytes(self, amp: bool, c: u64) -> u64 {
        match self {
            Self::Fp32 => 4,
            Self::Native if amp => 4,
            Self::Native | Self::Fused => c,
        }
    }
}

impl Graph<'_> {
    /// The attention core. Flash / memory-efficient SDPA keep q, k, v as passed, the output and
    /// an fp32 logsumexp (plus the additive mask when one is given, with K/V repeated to all
    /// heads); eager attention keeps the matmul copies of q, k^T and v, the fp32 softmax output
    /// and the probabilities cast back (or dropped out), the soft-capping tanh and the sinks'
    /// extra column. Returns the output as o_proj reads it.
    pub fn attention(&mut self, q: Tensor, k: Tensor, v: Tensor, a: Attn) -> Tensor {
        let before = self.kept.total();
        let ctx = self.ctx;
        let (t, c) = (ctx.tokens, ctx.compute_elem);
        let qw = a.heads * a.qk_dim;
        let ow = a.heads * a.v_dim;
        let active = self.rg(q) || self.rg(k) || self.rg(v);
        let kernel = self.kernel(a);
        let masked = ctx.attn == AttentionImpl::Sdpa && a.masked;
        self.eager_tail = 0;
        let out;
        if !active {
            out = self.tensor(t * ow * c, c, false, Cat::AttentionIo);
        } else if self.selective {
            // the core is recomputed in backward: only its inputs and output are kept
            for x in [q, k, v] {
                self.keep(x);
            }
            out = self.tensor(t * ow * c, c, true, Cat::AttentionIo);
            if kernel != Kernel::Eager {
                self.keep(out);
            }
        } else {
            match kernel {
                Kernel::Eager => {
                    let sc = ctx.batch * a.heads * ctx.seq * ctx.seq;
                    if ctx.batch > 1 {
                        // matmul reshapes (b, h, s, d) operands laid out as (b, s, h, d) to
                        // (b·h, s, d): not a view, so bmm keeps copies of q, k^T and v at every head
                        self.keep_new(t * (2 * qw + a.heads * a.v_dim) * c, Cat::AttentionIo);
                    } else {
                        // one sequence: the reshape is a view and bmm keeps the operands as they
                        // are; HF's repeat_kv copies grouped K/V to every head (a single K/V head
                        // broadcasts as a view, and Falcon broadcasts in the matmul)
                        self.keep_qkv(q, k, v, a, true);
                    }
                    if a.softcap {
                        self.keep_new(sc * c, Cat::AttentionScores); // tanh output
                    }
                    let sm = a.softmax.elem_bytes(ctx.amp, c);
                    if ctx.torch.softmax_keeps_input() && a.softmax != Softmax::Fused {
                        // before PyTorch 1.11 softmax's node keeps its input too
                        let n = if a.sinks { ctx.batch * a.heads * ctx.seq * (ctx.seq + 1) } else { sc };
                        self.keep_new(n * a.softmax.input_bytes(ctx, c, a.sinks), Cat::AttentionScores);
                    }
                    if a.sinks {
                        // logits with one sink column: the softmax output (in the logits' dtype)
                        // and the row-max indices; P·V reads a view of the probabilities
                        let scs = ctx.batch * a.heads * ctx.seq * (ctx.seq + 1);
                        self.keep_new(scs * c + ctx.batch * a.heads * ctx.seq * 8, Cat::AttentionScores);
                    } else {
                        self.keep_new(sc * sm, Cat::AttentionScores);
                        if a.dropout > 0.0 {
                            self.keep_new(sc * c, Cat::AttentionScores);
                            self.keep_new(sc, Cat::DropoutMasks);
                        } else if sm != c {
                            self.keep_new(sc * c, Cat::AttentionScores);
                        }
                    }
                    // freed before the softmax runs backward: the v copy, the probabilities cast
                    // for P·V, the output copy (when o_proj keeps it)
                    let probs = if !a.sinks && (sm != c || a.dropout > 0.0) { sc * c } else { 0 };
                    let o_keeps = if ctx.weight_trains(LinearRole::O) { t * ow * c } else { 0 };
                    self.eager_tail = t * a.heads * a.v_dim * c + probs + o_keeps;
                    // the transpose-contiguous copy o_proj reads
                    out = self.tensor(t * ow * c, c, true, Cat::AttentionIo);
                }
                Kernel::Flash | Kernel::MemEfficient => {
                    // HF repeats K/V when it passes a mask (`use_gqa_in_sdpa` is false)
                    self.keep_qkv(q, k, v, a, masked);
                    let o = self.tensor(t * ow * c, c, true, Cat::AttentionIo);
                    self.keep(o);
                    self.keep_new(self.lse_bytes(kernel, a.heads), Cat::AttentionIo);
                    out = if kernel == Kernel::Flash && a.q_head_major {
                        self.tensor(t * ow * c, c, true, Cat::AttentionIo)
                    } else {
                        o
                    };
                    if masked {
                        // the boolean (b, 1, s, s) mask as an additive bias in the query dtype
                        self.keep_new(ctx.batch * ctx.seq * ctx.seq * c, Cat::AttentionScores);
                    }
                }
            }
        }
        self.kept_at_attention = self.kept.total();
        self.record("attention", before);
        out
    }

    /// The kernel this attention call dispatches to (flash needs half inputs, no mask, equal
    /// q/k and v widths of at most 256 and a multiple of 8).
    pub fn kernel(&self, a: Attn) -> Kernel {
        kernel(self.ctx, a)
    }

    /// Keeps q, k and v as the kernel receives them: grouped K/V repeated to every head by HF's
    /// `repeat_kv` when `repeats` (a copy; a single K/V head expands to a view, and Falcon passes
    /// grouped K/V as they are), else the storages themselves.
    fn keep_qkv(&mut self, q: Tensor, k: Tensor, v: Tensor, a: Attn, repeats: bool) {
        self.keep(q);
        if repeats && a.kv_heads != a.heads && a.kv_heads > 1 && !a.gqa_native {
            let ctx = self.ctx;
            self.keep_new(ctx.tokens * a.heads * (a.qk_dim + a.v_dim) * ctx.compute_elem, Cat::AttentionIo);
        } else {
            self.keep(k);
            self.keep(v);
        }
    }

    fn lse_bytes(&self, kernel: Kernel, heads: u64) -> u64 {
        let ctx = self.ctx;
        match kernel {
            // (b, a, s) fp32 logsumexp + philox seed/offset and an empty debug mask
            Kernel::Flash => ctx.batch * heads * ctx.seq * 4 + 24,
            // (b, a, ceil(s/32)·32) fp32 logsumexp + philox seed and offset (2 × int64)
            Kernel::MemEfficient => ctx.batch * heads * ctx.seq.div_ceil(32) * 32 * 4 + 16,
            Kernel::Eager => 0,
        }
    }
}

/// The kernel an attention call dispatches to (flash needs half inputs, no mask, equal q/k and v
/// widths of at most 256 and a multiple of 8).
pub fn kernel(ctx: &Ctx, a: Attn) -> Kernel {
    match ctx.attn {
        AttentionImpl::Eager => Kernel::Eager,
        AttentionImpl::Flash => Kernel::Flash,
        AttentionImpl::Sdpa => {
            if ctx.compute_elem == 2
                && !a.masked
                && a.qk_dim == a.v_dim
                && a.qk_dim <= 256
                && a.qk_dim.is_multiple_of(8)
            {
                Kernel::Flash
            } else {
                Kernel::MemEfficient
            }
        }
    }
}

/// What an attention core's backward allocates at once: eager attention's gradients of the
/// probabilities and of the scores (in the softmax dtype), plus soft-capping's tanh backward; a
/// fused kernel's gradients of q, k, v and its output, and an fp32 row statistic.
pub fn attention_backward_transient(
    ctx: &Ctx,
    m: &crate::model::TransformerSpec,
    f: &super::BlockFacts,
) -> u64 {
    let (t, c) = (ctx.tokens, ctx.compute_elem);
    let scores = ctx.batch * m.num_heads * ctx.seq * ctx.seq;
    match f.kernel {
        Kernel::Eager => 2 * scores * f.probs_elem + if m.attn_softcap.is_some() { scores * c } else { 0 },
        _ => (2 * m.q_width() + 2 * m.kv_width()) * t * c + ctx.batch * m.num_heads * ctx.seq * 4,
    }
}

/// What DeepSeek-V3.2's sparse-attention indexer allocates at once in a block's forward (it runs
/// under `no_grad`, in training and inference alike): q and k cast to fp32, k broadcast to every
/// query (`matmul` of `(b, s, heads, d)` by `(b, 1, d, s)` copies k per query, `(b, s, d, s)` in
/// fp32) and the `(b, s, heads, s)` fp32 scores; measured on a tiny DeepSeek-V3.2 (transformers
/// 5.25's bf16 reference path, not the fp8 kernel of the original code).
pub fn indexer_transient(ctx: &super::super::inputs::Ctx, m: &crate::model::TransformerSpec) -> u64 {
    let Some(a) = m.mla.filter(|a| a.index_heads > 0) else { return 0 };
    let (b, s, t) = (ctx.batch, ctx.seq, ctx.tokens);
    let (heads, d) = (a.index_heads, a.index_head_dim);
    b * s * s * (d + heads) * 4 + t * heads * d * 4 + t * d * 4
}
