//! What autograd saves for backward, op by op, as HF transformers 5 and PyTorch 2.x run on an sm80+
//! GPU, plus the short-lived tensors that decide the peak.
//!
//! Each family function walks one transformer block in forward order and adds, for every op, the
//! storages its backward keeps (PyTorch's `derivatives.yaml` rules): a Linear keeps its input (only
//! when its weight trains), `mul` keeps the operand the *other* side's gradient needs, softmax keeps
//! its output, dropout keeps a 1-byte mask, LayerNorm keeps input + mean + rstd, RMSNorm (HF) keeps
//! an fp32 upcast, flash attention keeps q, k, v, output and an fp32 logsumexp. A storage shared by
//! several consumers is counted once; views of one storage (GPT-2's fused q/k/v) count as one.
//! Autocast adds the half-precision copies of inputs and weights that each matmul saves.

use super::saved::{Cat, Saved};
use super::scenario::{AttentionImpl, Lora, Scenario};
use crate::model::{Family, Head, LinearRole, TransformerSpec};
use crate::units::DType;

mod bert;
mod gpt2;
mod llama;
mod megatron;

use bert::bert;
use gpt2::gpt2;
use llama::llama;
use megatron::megatron;

/// Attention kernel PyTorch dispatches to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// Explicit matmul + softmax.
    Eager,
    /// FlashAttention (fp16/bf16, head_dim ≤ 256 and a multiple of 8).
    Flash,
    /// Memory-efficient (cutlass) kernel: fp32, or shapes flash does not take.
    MemEfficient,
}

/// The per-block quantities shared by all family walkers.
#[derive(Clone, Copy, Debug)]
pub struct Ctx {
    pub b: u64,
    pub s: u64,
    /// Tokens in the micro-batch, `b·s`.
    pub t: u64,
    /// Tokens of residual-stream tensors on this rank: `t / tp` under sequence parallelism.
    pub ts: u64,
    /// Bytes per element of half-precision compute (4 in pure fp32).
    pub c: u64,
    /// Bytes per element of the residual stream: fp32 under autocast, else `c`.
    pub r: u64,
    pub amp: bool,
    pub kernel: Kernel,
    /// All weights train (full fine-tuning).
    pub full: bool,
    pub lora: Option<Lora>,
    /// SDPA gets an explicit mask (sliding window shorter than the sequence): the memory-efficient
    /// kernel runs and keeps the mask converted to an additive bias, per layer.
    pub sdpa_bias: bool,
    /// The attention implementation asked for.
    pub attn: AttentionImpl,
}

impl Ctx {
    pub fn new(sc: &Scenario) -> Self {
        let c = sc.precision.compute_dtype().bytes(1);
        let amp = sc.precision.is_amp();
        let head_dim = sc.model.transformer().map_or(64, |t| t.head_dim);
        let window_mask = sc.model.transformer().and_then(|t| t.sliding_window).is_some_and(|w| sc.seq > w);
        let half = c == 2;
        let sdpa_bias = sc.attention == AttentionImpl::Sdpa && window_mask;
        // transformers 5 has no SDPA path for Gemma 2 (soft-capping) and gpt-oss (sinks): eager runs
        let attention = match (sc.attention, sc.model.transformer().map(|t| t.family)) {
            (AttentionImpl::Sdpa, Some(Family::Gemma2 | Family::GptOss)) => AttentionImpl::Eager,
            (a, _) => a,
        };
        let kernel = match attention {
            AttentionImpl::Eager => Kernel::Eager,
            AttentionImpl::Flash => Kernel::Flash,
            AttentionImpl::Sdpa => {
                if half && head_dim <= 256 && head_dim.is_multiple_of(8) && !window_mask {
                    Kernel::Flash
                } else {
                    Kernel::MemEfficient
                }
            }
        };
        Self {
            b: sc.batch,
            s: sc.seq,
            t: sc.batch * sc.seq,
            ts: if sc.parallel.sp && sc.parallel.tp > 1 {
                (sc.batch * sc.seq).div_ceil(sc.parallel.tp)
            } else {
                sc.batch * sc.seq
            },
            c,
            r: if amp { 4 } else { c },
            amp,
            kernel,
            full: sc.lora.is_none(),
            lora: sc.lora,
            sdpa_bias,
            attn: attention,
        }
    }

    /// Does this projection's weight train (so its Linear keeps its input)?
    #[inline]
    pub(crate) fn weight_trains(&self, role: LinearRole) -> bool {
        self.full || (role == LinearRole::Dense && self.lora.is_none())
    }

    #[inline]
    pub(crate) fn adapted(&self, role: LinearRole) -> bool {
        self.lora.is_some_and(|l| l.targets.has(role))
    }

    /// `b·a·s²` elements of one attention score matrix.
    #[inline]
    fn scores(&self, heads: u64) -> u64 {
        self.b * heads * self.s * self.s
    }

    /// Logsumexp (+ RNG state) the fused kernels keep per layer.
    fn lse_bytes(&self, heads: u64) -> u64 {
        match self.kernel {
            // (b, a, s) fp32 logsumexp + philox seed/offset and an empty debug mask
            Kernel::Flash => self.b * heads * self.s * 4 + 24,
            // (b, a, ceil(s/32)*32) fp32 logsumexp + philox seed and offset (2 x int64)
            Kernel::MemEfficient => self.b * heads * self.s.div_ceil(32) * 32 * 4 + 16,
            Kernel::Eager => 0,
        }
    }
}

/// A group of Linear layers that read the same input tensor.
struct LinearGroup<'a> {
    /// (role, weight elements) of each Linear.
    members: &'a [(LinearRole, u64)],
    /// Input features.
    in_features: u64,
    /// Bytes per element of the input as produced (before any autocast copy).
    in_bytes: u64,
    /// Category of the input when it is saved as it is.
    in_cat: Cat,
    /// Tokens of the saved input (`ts` for residual-width inputs: sequence parallelism keeps them
    /// sharded and all-gathers again in backward).
    tokens: u64,
}

/// Saves of one group of Linears; returns whether the outputs require grad.
fn linears(acc: &mut Saved, ctx: &Ctx, g: &LinearGroup<'_>, active_in: bool) -> bool {
    let t = g.tokens;
    let mut input_saved = false;
    let mut any_adapted = false;
    for &(role, weight_elems) in g.members {
        let trains = ctx.weight_trains(role);
        let adapted = ctx.adapted(role);
        any_adapted |= adapted;
        if trains {
            if ctx.amp {
                acc.add(Cat::InputCasts, t * g.in_features * ctx.c);
            } else {
                input_saved = true;
            }
        }
        // mm keeps the (cast) weight to form the input gradient; under autocast that copy is a
        // fresh half-precision tensor, not a parameter, so it counts.
        if ctx.amp && (active_in || trains) {
            acc.add(Cat::WeightCasts, weight_elems * ctx.c);
        }
        if adapted && let Some(l) = ctx.lora {
            adapter(acc, ctx, l, g.in_features, t, &mut input_saved);
        }
    }
    if input_saved {
        acc.add(g.in_cat, t * g.in_features * g.in_bytes);
    }
    active_in || any_adapted || g.members.iter().any(|(r, _)| ctx.weight_trains(*r))
}

/// PEFT LoRA on one Linear: `lora_B(lora_A(dropout(x))) * scaling` with fp32 adapter weights
/// (PEFT's `autocast_adapter_dtype`): a half-precision input is copied to fp32 per adapter
/// (under autocast, to the autocast dtype), and lora_A's output is kept for lora_B.
fn adapter(acc: &mut Saved, ctx: &Ctx, l: Lora, in_features: u64, t: u64, shared_input_saved: &mut bool) {
    let ad = if ctx.amp { ctx.c } else { 4 };
    if l.dropout > 0.0 {
        acc.add(Cat::Adapters, t * in_features * ad);
        acc.add(Cat::DropoutMasks, t * in_features);
    } else if ctx.amp || ctx.c != 4 {
        acc.add(Cat::Adapters, t * in_features * ad);
    } else {
        *shared_input_saved = true; // fp32 input used as it is, shared by the group's adapters
    }
    acc.add(Cat::Adapters, t * l.rank * ad);
}

/// The distinct kinds of block of a model whose layers differ (sliding-window or global
/// attention, dense or MoE MLP, rotary or not), keyed by their [`crate::model::layer`] flags.
#[derive(Clone, Copy, Debug, Default)]
pub struct LayerMix {
    /// Kinds in use (0 or 1: every block is `full_layer`).
    pub n: usize,
    /// The flags of each kind.
    pub flags: [u8; 4],
    /// What a block of each kind keeps (input requiring grad).
    pub full: [Saved; 4],
    /// The same with the attention core recomputed.
    pub selective: [Saved; 4],
}

impl LayerMix {
    /// The saves of a block with these flags (`fallback` when the kind is not listed).
    pub fn of(&self, flags: u8, fallback: Saved, selective: bool) -> Saved {
        for i in 0..self.n.min(4) {
            if self.flags[i] == flags {
                return if selective { self.selective[i] } else { self.full[i] };
            }
        }
        fallback
    }
}

/// Activation model of one scenario: per-layer and top-level saves plus the transients.
#[derive(Clone, Copy, Debug, Default)]
pub struct ActivationModel {
    /// Blocks of different kinds (empty when all blocks are alike).
    pub mix: LayerMix,
    /// A block whose input requires grad, keeping everything.
    pub full_layer: Saved,
    /// Block 0 (its input may not require grad when the embeddings are frozen).
    pub first_layer: Saved,
    /// `full_layer` with the attention core recomputed (selective checkpointing).
    pub selective_layer: Saved,
    /// Bytes of one block input (what a checkpointed block keeps).
    pub layer_input_bytes: u64,
    /// Tables kept once for all non-checkpointed blocks (rotary cos/sin).
    pub shared_layer_bytes: u64,
    /// Tensors every checkpointed block receives as positional inputs, kept once (GPT-2's eager
    /// causal mask).
    pub shared_checkpoint_bytes: u64,
    /// Bytes of the last block freed before its attention core runs backward.
    pub freed_before_attention_backward: u64,
    /// Embeddings, final norm, head and loss.
    pub top: Saved,
    /// The part of `top` on the first pipeline stage (ids, embedding outputs).
    pub top_input: Saved,
    /// Part of `top` released by the time backward reaches the last block.
    pub head_released_bytes: u64,
    /// Allocation burst of the MLP backward of one block (gradients of its widest tensors).
    pub mlp_backward_transient: u64,
    /// Allocation burst of the attention backward of one block (score gradients for eager).
    pub attention_backward_transient: u64,
    /// Gradients alive while the loss and log-softmax run backward.
    pub loss_backward_transient: u64,
    /// Logits (and their fp32 upcast) alive while the loss runs forward.
    pub head_forward_transient: u64,
    /// Inference: bytes alive during the whole forward (embedding outputs, masks, rotary tables).
    pub infer_persistent: u64,
    /// Inference: most bytes one block holds at once, not counting the KV cache.
    pub infer_layer_peak: u64,
    /// Inference: bytes at the LM head (final hidden state and logits).
    pub infer_head_peak: u64,
    /// KV-cache bytes per block (compute dtype; the caller rescales for another cache dtype).
    pub kv_per_layer_elems: u64,
}

/// Builds the activation model of a transformer scenario.
pub(crate) fn transformer(sc: &Scenario, m: &TransformerSpec) -> ActivationModel {
    let ctx = Ctx::new(sc);
    match m.family {
        Family::Llama if crate::engine::LEGACY_LLAMA => llama(&ctx, m),
        Family::Gpt2 => gpt2(&ctx, m),
        Family::Bert => bert(&ctx, m),
        Family::Megatron => megatron(&ctx, m),
        _ => crate::engine::walk::activation_model(&ctx, m),
    }
}

/// Saves of the loss on `t` rows of `n` classes in the given element size, plus labels.
fn loss(acc: &mut Saved, ctx: &Ctx, n_classes: u64, logit_bytes: u64, shifted: bool) {
    let t = ctx.t;
    acc.add(Cat::HeadLoss, t * n_classes * logit_bytes); // log_softmax output
    acc.add(Cat::HeadLoss, logit_bytes); // nll_loss total_weight scalar
    // labels: HF pads labels with -100 then takes [..., 1:].contiguous(): a view (no copy) when b == 1
    let labels = if shifted && ctx.b == 1 { (ctx.s + 1) * 8 } else { t * 8 };
    acc.add(Cat::HeadLoss, labels);
}

/// Linears whose input is already counted elsewhere (attention output, MLP product); they add
/// only autocast weight copies and adapters. Returns whether their output requires grad.
fn linears_no_input(
    acc: &mut Saved,
    ctx: &Ctx,
    members: &[(LinearRole, u64)],
    in_features: u64,
    active_in: bool,
) -> bool {
    let mut any = false;
    for &(role, weight_elems) in members {
        let trains = ctx.weight_trains(role);
        if ctx.amp && (active_in || trains) {
            acc.add(Cat::WeightCasts, weight_elems * ctx.c);
        }
        if ctx.adapted(role)
            && let Some(l) = ctx.lora
        {
            let mut unused = false;
            adapter(acc, ctx, l, in_features, ctx.t, &mut unused);
            if unused {
                // fp32 input shared by the adapter: attention output / MLP product, kept once
                acc.add(Cat::Adapters, ctx.t * in_features * ctx.c);
            }
            any = true;
        }
        any |= trains;
    }
    active_in || any
}

/// The attention core between the projections. `qw`/`kw` are the q and k/v widths;
/// `upcast_softmax` is Llama's `softmax(..., dtype=float32)`.
#[allow(clippy::too_many_arguments)]
fn attention_core(
    acc: &mut Saved,
    ctx: &Ctx,
    heads: u64,
    qw: u64,
    kw: u64,
    dropout: f64,
    out_kept: bool,
    upcast_softmax: bool,
) {
    let (t, c) = (ctx.t, ctx.c);
    match ctx.kernel {
        Kernel::Eager => {
            // matmul copies q and kᵀ (or takes GQA's repeat_kv copies) and v; the output's
            // transpose-contiguous copy is kept by o_proj.
            acc.add(Cat::AttentionIo, 3 * t * qw * c);
            if out_kept {
                acc.add(Cat::AttentionIo, t * qw * c);
            }
            let sc = ctx.scores(heads);
            // softmax output: fp32 when upcast (Llama) or under autocast (softmax is an fp32 op)
            let sm_bytes = if upcast_softmax || ctx.amp { 4 } else { c };
            acc.add(Cat::AttentionScores, sc * sm_bytes);
            if dropout > 0.0 {
                acc.add(Cat::AttentionScores, sc * c); // dropout output (or its cast) for P·V
                acc.add(Cat::DropoutMasks, sc);
            } else if sm_bytes != c {
                acc.add(Cat::AttentionScores, sc * c); // probabilities cast back for P·V
            }
        }
        Kernel::Flash | Kernel::MemEfficient => {
            // q, k, v as passed: GQA natively, except that with a mask HF repeats K/V to all heads
            // (`use_gqa_in_sdpa` is false when an attention mask is given)
            let kw = if ctx.sdpa_bias { qw } else { kw };
            acc.add(Cat::AttentionIo, t * (qw + 2 * kw) * c);
            acc.add(Cat::AttentionIo, t * qw * c + ctx.lse_bytes(heads)); // output + logsumexp
            if ctx.sdpa_bias {
                // the boolean (b, 1, s, s) mask becomes an additive bias in the query dtype, kept
                acc.add(Cat::AttentionScores, ctx.b * ctx.s * ctx.s * c);
            }
        }
    }
}

fn logits_width(m: &TransformerSpec) -> u64 {
    match m.head {
        Head::CausalLm | Head::MaskedLm => m.vocab_size,
        Head::SequenceClassification { num_labels } => num_labels,
        Head::Base => 0,
    }
}

/// LM-head and loss saves of a causal LM (`lm_head`, `logits.float()`, shifted cross-entropy).
/// Returns (bytes freed before the last block's backward, loss-backward transient).
fn head_saves(top: &mut Saved, ctx: &Ctx, m: &TransformerSpec) -> (u64, u64) {
    let (t, h, c) = (ctx.t, m.hidden_size, ctx.c);
    let before = top.total();
    let head_trains = ctx.full;
    let v = logits_width(m);
    if v == 0 {
        return (0, 0);
    }
    if head_trains {
        if ctx.amp {
            top.add(Cat::InputCasts, ctx.ts * h * c);
        } else {
            top.add(Cat::HeadLoss, ctx.ts * h * ctx.r); // final norm output kept by lm_head
        }
    }
    if ctx.amp {
        top.add(Cat::WeightCasts, v * h * c);
    }
    match m.head {
        Head::CausalLm => loss(top, ctx, v, 4, true),
        _ => loss(top, ctx, v, 4, false),
    }
    let released = top.total() - before;
    // nll backward makes a (t, V) fp32 gradient, log_softmax backward another
    (released, 2 * t * v * 4)
}

/// (attention, MLP) allocation bursts in one block's backward.
fn layer_backward_transients(ctx: &Ctx, m: &TransformerSpec, upcast_softmax: bool) -> (u64, u64) {
    let (t, c) = (ctx.t, ctx.c);
    let attn = match ctx.kernel {
        // gradient of the probabilities and the softmax backward output, both fp32 when upcast
        Kernel::Eager => 2 * ctx.scores(m.num_heads) * if upcast_softmax || ctx.amp { 4 } else { c },
        // dq, dk, dv, d_out and the fp32 softmax row sums
        _ => (2 * m.q_width() + 2 * m.kv_width()) * t * c + ctx.b * m.num_heads * ctx.s * 4,
    };
    let width = m.moe.map_or(m.intermediate_size, |x| x.top_k * m.intermediate_size);
    let mlp = match m.family {
        Family::Gpt2 => 4 * t * width * if ctx.amp { 4 } else { c },
        Family::Bert | Family::Megatron => 2 * t * width * c,
        _ => 3 * t * width * c,
    };
    (attn, mlp)
}

/// LayerNorm statistics: mean and rstd per token. The reference harness (fake tensors) reports
/// them in the input dtype for half inputs; fp32 inputs give fp32.
fn ln_stats(ctx: &Ctx, input_bytes: u64) -> u64 {
    2 * ctx.ts * input_bytes
}

/// Tensors of an eager block freed by the time its softmax runs backward: the v copy, the output
/// copy (when o_proj trains) and the probabilities kept for `P·V` when they are a separate tensor.
fn eager_core_tail(
    ctx: &Ctx,
    m: &TransformerSpec,
    eager_active: bool,
    o_trains: bool,
    separate_probs: bool,
) -> u64 {
    if ctx.kernel != Kernel::Eager || !eager_active {
        return 0;
    }
    let tq = ctx.t * m.q_width() * ctx.c;
    tq + if o_trains { tq } else { 0 } + if separate_probs { ctx.scores(m.num_heads) * ctx.c } else { 0 }
}

/// Inference, GPT-2 and BERT: bytes alive in a block's attention (block input and norm output,
/// q/k/v, then the scores or the kernel output).
fn gpt_like_attention_phase(ctx: &Ctx, m: &TransformerSpec) -> u64 {
    let (t, h, q, c) = (ctx.t, m.hidden_size, m.q_width(), ctx.c);
    2 * t * h * ctx.r
        + 3 * t * q * c
        + match ctx.kernel {
            Kernel::Eager => 2 * ctx.scores(m.num_heads) * c,
            _ => t * q * c,
        }
}

/// KV cache bytes for the whole model.
pub fn kv_cache_bytes(m: &TransformerSpec, batch: u64, seq: u64, dtype: DType) -> u64 {
    if matches!(m.family, Family::Bert | Family::Vit) {
        return 0;
    }
    // DeepSeek's HF cache holds the MLA latent (`kv_lora_rank`) and the shared rotary key part
    if let Some(mla) = m.mla {
        return dtype.bytes(m.num_layers * batch * seq * (mla.kv_lora_rank + mla.qk_rope_head_dim));
    }
    // Falcon's new decoder architecture caches K/V broadcast to every query head
    let width = if m.family == Family::Falcon && m.parallel_norms >= 2 { m.q_width() } else { m.kv_width() };
    // sliding-window layers keep a view of the full-length prefill K/V: the storage is full length
    dtype.bytes(2 * m.num_layers * batch * seq * width)
}
