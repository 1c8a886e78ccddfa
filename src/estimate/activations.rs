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
pub(crate) struct Ctx {
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
}

impl Ctx {
    pub fn new(sc: &Scenario) -> Self {
        let c = sc.precision.compute_dtype().bytes(1);
        let amp = sc.precision.is_amp();
        let head_dim = sc.model.transformer().map_or(64, |t| t.head_dim);
        let window_mask = sc.model.transformer().and_then(|t| t.sliding_window).is_some_and(|w| sc.seq > w);
        let half = c == 2;
        let sdpa_bias = sc.attention == AttentionImpl::Sdpa && window_mask;
        let kernel = match sc.attention {
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
        }
    }

    /// Does this projection's weight train (so its Linear keeps its input)?
    #[inline]
    fn weight_trains(&self, role: LinearRole) -> bool {
        self.full || (role == LinearRole::Dense && self.lora.is_none())
    }

    #[inline]
    fn adapted(&self, role: LinearRole) -> bool {
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

/// Activation model of one scenario: per-layer and top-level saves plus the transients.
#[derive(Clone, Copy, Debug, Default)]
pub struct ActivationModel {
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
        Family::Llama => llama(&ctx, m),
        Family::Gpt2 => gpt2(&ctx, m),
        Family::Bert => bert(&ctx, m),
        Family::Megatron => megatron(&ctx, m),
    }
}

// ---------------------------------------------------------------------------------------------
// Megatron-LM GPT
// ---------------------------------------------------------------------------------------------

/// One Megatron GPT block as Korthikanti et al. 2022 (§4.1) account for it, per tensor-parallel
/// rank: replicated (or, with sequence parallelism, sharded) residual-width tensors, and
/// head- and MLP-width tensors divided by the tensor-parallel degree (via the sharded spec).
fn megatron_layer(ctx: &Ctx, m: &TransformerSpec, selective: bool) -> (Saved, u64) {
    let mut acc = Saved::default();
    let (t, ts, h, c) = (ctx.t, ctx.ts, m.hidden_size, ctx.c);
    let q = m.q_width();
    let i = m.intermediate_size;
    // LayerNorm 1: input (the block input) and fp32 mean/rstd; QKV GEMM input (LN output)
    acc.add(Cat::Residual, ts * h * c);
    acc.add(Cat::Norms, 2 * ts * 4 + ts * h * c);
    if ctx.amp {
        acc.add(Cat::WeightCasts, 4 * h * q * c);
    }
    // core attention: Q and K for QKᵀ, V for P·V
    acc.add(Cat::AttentionIo, 3 * t * q * c);
    match ctx.kernel {
        Kernel::Eager if !selective => {
            let sc = ctx.scores(m.num_heads);
            acc.add(Cat::AttentionScores, sc * c); // fused scale-mask-softmax output
            if m.attention_dropout > 0.0 {
                acc.add(Cat::AttentionScores, sc * c); // dropout output for P·V
                acc.add(Cat::DropoutMasks, sc);
            }
        }
        Kernel::Eager => {}
        _ => acc.add(Cat::AttentionIo, ctx.lse_bytes(m.num_heads)),
    }
    // output projection input, then the post-attention dropout mask
    acc.add(Cat::AttentionIo, t * q * c);
    let before_post = acc.total();
    if m.hidden_dropout > 0.0 {
        acc.add(Cat::DropoutMasks, ts * h);
    }
    // LayerNorm 2 input and stats; fc1 input
    acc.add(Cat::Residual, ts * h * c);
    acc.add(Cat::Norms, 2 * ts * 4 + ts * h * c);
    // fused GeLU keeps its input; fc2 keeps the GeLU output
    acc.add(Cat::Mlp, 2 * t * i * c);
    if ctx.amp {
        acc.add(Cat::WeightCasts, 2 * h * i * c);
    }
    if m.hidden_dropout > 0.0 {
        acc.add(Cat::DropoutMasks, ts * h);
    }
    let tail = if ctx.kernel == Kernel::Eager && !selective {
        t * q * c * 2 + ctx.scores(m.num_heads) * c
    } else {
        0
    };
    let freed = acc.total() - before_post + tail;
    (acc, freed)
}

fn megatron(ctx: &Ctx, m: &TransformerSpec) -> ActivationModel {
    let (t, ts, h, c, s) = (ctx.t, ctx.ts, m.hidden_size, ctx.c, ctx.s);
    let (full_layer, freed) = megatron_layer(ctx, m, false);
    let (selective_layer, _) = megatron_layer(ctx, m, true);
    let mut top = Saved::default();
    top.add(Cat::Embeddings, t * 8 + s * 8); // token and position ids
    if m.hidden_dropout > 0.0 {
        top.add(Cat::DropoutMasks, ts * h); // embedding dropout
    }
    let top_input = top;
    // final LayerNorm: input, stats, output (the LM head input)
    top.add(Cat::Residual, ts * h * c);
    top.add(Cat::Norms, 2 * ts * 4 + ts * h * c);
    let before = top.total();
    // vocab-parallel cross-entropy keeps fp32 softmax over the local vocabulary shard, and labels
    let v = logits_width(m);
    top.add(Cat::HeadLoss, t * v * 4 + t * 8);
    let released = top.total() - before;
    let i = m.intermediate_size;
    let attn_t = match ctx.kernel {
        Kernel::Eager => 2 * ctx.scores(m.num_heads) * c,
        _ => (4 * m.q_width()) * t * c + ctx.b * m.num_heads * s * 4,
    };
    ActivationModel {
        full_layer,
        first_layer: full_layer,
        selective_layer,
        layer_input_bytes: ts * h * c,
        shared_layer_bytes: 0,
        shared_checkpoint_bytes: 0,
        freed_before_attention_backward: freed,
        top,
        top_input,
        head_released_bytes: released,
        mlp_backward_transient: 2 * t * i * c,
        attention_backward_transient: attn_t,
        loss_backward_transient: 2 * t * v * 4,
        head_forward_transient: t * v * (c + 4),
        infer_persistent: ts * h * c,
        infer_layer_peak: 2 * ts * h * c + (3 * t * m.q_width() * c).max(2 * t * i * c),
        infer_head_peak: ts * h * c + t * v * c,
        kv_per_layer_elems: 2 * t * m.kv_width(),
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

// ---------------------------------------------------------------------------------------------
// Llama / Mistral / Qwen2 / Mixtral
// ---------------------------------------------------------------------------------------------

/// One Llama block. Returns the saves, whether its output requires grad, and the bytes freed
/// before its attention core runs backward (everything after the core, plus for eager attention
/// the tensors of `P·V` and the output copy).
fn llama_layer(ctx: &Ctx, m: &TransformerSpec, active_in: bool, selective: bool) -> (Saved, bool, u64) {
    let mut acc = Saved::default();
    let (t, h, c, r) = (ctx.t, m.hidden_size, ctx.c, ctx.r);
    let (qw, kw) = (m.q_width(), m.kv_width());
    let norm_out_bytes = r; // RMSNorm returns the input dtype (fp32 stream under autocast)
    // --- input_layernorm
    norm_saves(&mut acc, ctx, h, active_in);
    // --- q, k, v projections
    let qkv = [(LinearRole::Q, qw * h), (LinearRole::K, kw * h), (LinearRole::V, kw * h)];
    let attn_active = linears(
        &mut acc,
        ctx,
        &LinearGroup {
            members: &qkv,
            in_features: h,
            in_bytes: norm_out_bytes,
            in_cat: Cat::Norms,
            tokens: ctx.ts,
        },
        active_in,
    );
    // --- attention core (rotary multiplies keep only the shared cos/sin tables)
    let o_trains = ctx.weight_trains(LinearRole::O);
    if attn_active && !selective {
        attention_core(&mut acc, ctx, m.num_heads, qw, kw, m.attention_dropout, o_trains, true);
    } else if attn_active {
        // selective recompute keeps the core's inputs (q, k, v) and output only
        acc.add(
            Cat::AttentionIo,
            t * (qw + 2 * kw) * c + if o_trains || ctx.kernel != Kernel::Eager { t * qw * c } else { 0 },
        );
    }
    // --- o_proj (its input, the attention output, is counted by the core when it trains)
    let o = [(LinearRole::O, h * qw)];
    let o_active = linears_no_input(&mut acc, ctx, &o, qw, attn_active);
    let active_mid = active_in || o_active;
    let before_post = acc.total();
    let core_tail = if ctx.kernel == Kernel::Eager && attn_active && !selective {
        // v copy, the probabilities cast for P·V (when softmax ran in fp32), the output copy
        let sc = ctx.scores(m.num_heads);
        t * qw * c + if c != 4 { sc * c } else { 0 } + if o_trains { t * qw * c } else { 0 }
    } else {
        0
    };
    // --- residual add, post_attention_layernorm (keeps its fp32 input: the residual sum)
    if active_mid && r == 4 {
        acc.add(Cat::Residual, ctx.ts * h * 4);
    }
    norm_saves(&mut acc, ctx, h, active_mid);
    // --- MLP
    let mlp_active = match m.moe {
        None => {
            let i = m.intermediate_size;
            let gu = [(LinearRole::Gate, i * h), (LinearRole::Up, i * h)];
            let act = linears(
                &mut acc,
                ctx,
                &LinearGroup {
                    members: &gu,
                    in_features: h,
                    in_bytes: norm_out_bytes,
                    in_cat: Cat::Norms,
                    tokens: ctx.ts,
                },
                active_mid,
            );
            if act {
                acc.add(Cat::Mlp, 3 * t * i * c); // gate out (silu), up out and silu out (mul)
            }
            let down = [(LinearRole::Down, h * i)];
            let d_trains = ctx.weight_trains(LinearRole::Down);
            if act && d_trains {
                acc.add(Cat::Mlp, t * i * c); // act * up, kept by down_proj
            }
            act | linears_no_input(&mut acc, ctx, &down, i, act)
        }
        Some(moe) => {
            moe_block(&mut acc, ctx, m, moe.experts, moe.top_k, active_mid);
            active_mid || ctx.full
        }
    };
    let freed = acc.total() - before_post + core_tail;
    (acc, active_mid || mlp_active, freed)
}

/// HF `LlamaRMSNorm` (`x.to(f32)`, `pow(2).mean`, `x * rsqrt(var + eps)`, `weight * y.to(dtype)`)
/// saves rsqrt, the fp32 upcast (when the stream is half) and `y` when the weight trains. The
/// norm's own input (the residual stream) is counted by whoever produced it.
fn norm_saves(acc: &mut Saved, ctx: &Ctx, h: u64, active: bool) {
    if !active {
        return;
    }
    let t = ctx.ts;
    acc.add(Cat::Norms, t * 4);
    if ctx.r != 4 {
        acc.add(Cat::Norms, t * h * 4);
    }
    if ctx.full {
        acc.add(Cat::Norms, t * h * if ctx.r == 4 { 4 } else { ctx.c });
    }
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

/// Mixtral sparse MLP as transformers 5 runs it (`experts_implementation="grouped_mm"`).
fn moe_block(acc: &mut Saved, ctx: &Ctx, m: &TransformerSpec, experts: u64, top_k: u64, active: bool) {
    let (t, h, c, i) = (ctx.t, m.hidden_size, ctx.c, m.intermediate_size);
    let tk = t * top_k;
    // router: Linear(h, E) keeps the norm output; softmax in fp32; top-k ids; normalised weights
    if ctx.full {
        if ctx.amp {
            acc.add(Cat::InputCasts, t * h * c);
            acc.add(Cat::WeightCasts, experts * h * c);
        } else {
            acc.add(Cat::Norms, t * h * ctx.r);
        }
    }
    if !(active || ctx.full) {
        return;
    }
    acc.add(Cat::Mlp, t * experts * 4 + tk * 8 + tk * 4 + t * 4);
    // token permutation: expert ids, sort order, inverse order (int64), offsets (int32)
    acc.add(Cat::Mlp, 3 * tk * 8 + experts * 4);
    // routed copies of the tokens (gathered input) and of their routing weights (fp32)
    acc.add(Cat::Mlp, tk * h * c + tk * 4);
    // grouped gate_up output (2I), silu output, silu*up product, down output
    acc.add(Cat::Mlp, tk * 2 * i * c + tk * i * c + tk * i * c + tk * h * c);
    if ctx.amp {
        acc.add(Cat::WeightCasts, experts * 3 * h * i * c);
    }
}

fn llama(ctx: &Ctx, m: &TransformerSpec) -> ActivationModel {
    let (t, h, c, r, s) = (ctx.t, m.hidden_size, ctx.c, ctx.r, ctx.s);
    let (full_layer, _, freed) = llama_layer(ctx, m, true, false);
    let (selective_layer, _, _) = llama_layer(ctx, m, true, true);
    let (mut first_layer, _, _) = llama_layer(ctx, m, ctx.full, false);
    // block 0's input is the embedding output: kept by input_layernorm when the stream is fp32
    if ctx.full && r == 4 {
        first_layer.add(Cat::Residual, ctx.ts * h * 4);
    }
    // later blocks' inputs are the previous block's output (a residual sum), kept by the norm
    let mut full_layer = full_layer;
    let mut selective_layer = selective_layer;
    if r == 4 {
        full_layer.add(Cat::Residual, ctx.ts * h * 4);
        selective_layer.add(Cat::Residual, ctx.ts * h * 4);
    }
    let mut top = Saved::default();
    if ctx.full {
        top.add(Cat::Embeddings, t * 8); // input ids, kept by the embedding backward
    }
    let top_input = top;
    // rotary cos/sin (1, s, d): fp32 under autocast (x is fp32), else the compute dtype; kept by
    // the rotary multiplies of blocks that are not checkpointed
    let rope_tables = 2 * s * m.head_dim * if ctx.amp { 4 } else { c };
    // final norm keeps the last block's output (fp32 stream) and its own saves
    if r == 4 {
        top.add(Cat::Residual, ctx.ts * h * 4);
    }
    norm_saves(&mut top, ctx, h, true);
    let (head_released, loss_transient) = head_saves(&mut top, ctx, m);
    let (attn_t, mlp_t) = layer_backward_transients(ctx, m, true);
    // inference
    let mask =
        if ctx.kernel == Kernel::Eager { ctx.b * s * s * c.max(if r == 4 { 4 } else { c }) } else { 0 };
    let infer_persistent = t * h * r + 2 * s * m.head_dim * c + s * 8 + mask;
    let q_embed = t * m.q_width() * c;
    let attn_phase = t * h * r
        + q_embed
        + match ctx.kernel {
            Kernel::Eager => {
                // scores, scaled scores, masked scores, then softmax(dtype=float32): a half input
                // is upcast first, so add (c) + fp32 copy (4) + fp32 output (4) are alive at once
                ctx.scores(m.num_heads) * if c == 4 { 8 } else { c + 8 }
                    + if m.num_kv_heads != m.num_heads { 2 * t * m.q_width() * c } else { 0 }
            }
            _ => t * m.q_width() * c,
        };
    let mlp_width = m.moe.map_or(m.intermediate_size, |x| x.top_k * m.intermediate_size);
    let mlp_phase = 2 * t * h * r + 3 * t * mlp_width * c;
    ActivationModel {
        full_layer,
        first_layer,
        selective_layer,
        layer_input_bytes: ctx.ts * h * r,
        shared_layer_bytes: rope_tables,
        shared_checkpoint_bytes: 0,
        freed_before_attention_backward: freed,
        top,
        top_input,
        head_released_bytes: head_released,
        mlp_backward_transient: mlp_t,
        attention_backward_transient: attn_t,
        loss_backward_transient: loss_transient,
        head_forward_transient: t * logits_width(m) * (c + if c == 4 { 0 } else { 4 }),
        infer_persistent,
        infer_layer_peak: t * h * r + attn_phase.max(mlp_phase),
        infer_head_peak: t * h * r + t * logits_width(m) * c,
        kv_per_layer_elems: 2 * t * m.kv_width(),
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
        Family::Llama => 3 * t * width * c,
    };
    (attn, mlp)
}

// ---------------------------------------------------------------------------------------------
// GPT-2
// ---------------------------------------------------------------------------------------------

/// LayerNorm statistics: mean and rstd per token. The reference harness (fake tensors) reports
/// them in the input dtype for half inputs; fp32 inputs give fp32.
fn ln_stats(ctx: &Ctx, input_bytes: u64) -> u64 {
    2 * ctx.ts * input_bytes
}

/// One GPT-2 block: saves and the bytes freed before its attention core runs backward.
fn gpt2_layer(ctx: &Ctx, m: &TransformerSpec, active_in: bool, selective: bool) -> (Saved, u64) {
    let mut acc = Saved::default();
    let (t, h, c, r) = (ctx.t, m.hidden_size, ctx.c, ctx.r);
    let i = m.intermediate_size;
    // ln_1 keeps its input (the block input, counted by the caller) and mean/rstd
    if active_in {
        acc.add(Cat::Norms, ln_stats(ctx, r));
    }
    // c_attn: fused q/k/v Conv1D (addmm); LoRA targets q/k/v all map to it
    let cattn_adapted =
        ctx.adapted(LinearRole::Q) || ctx.adapted(LinearRole::K) || ctx.adapted(LinearRole::V);
    let q = m.q_width();
    let cattn = [(if cattn_adapted { first_adapted(ctx) } else { LinearRole::Q }, 3 * h * q)];
    let attn_active = linears(
        &mut acc,
        ctx,
        &LinearGroup { members: &cattn, in_features: h, in_bytes: r, in_cat: Cat::Norms, tokens: ctx.ts },
        active_in,
    );
    let o_trains = ctx.weight_trains(LinearRole::O);
    if attn_active {
        match ctx.kernel {
            Kernel::Eager if !selective => {
                acc.add(Cat::AttentionIo, 3 * t * q * c + if o_trains { t * q * c } else { 0 });
                let sc = ctx.scores(m.num_heads);
                acc.add(Cat::AttentionScores, sc * if ctx.amp { 4 } else { c }); // softmax output
                if m.attention_dropout > 0.0 {
                    acc.add(Cat::AttentionScores, sc * c);
                    acc.add(Cat::DropoutMasks, sc);
                } else if ctx.amp {
                    acc.add(Cat::AttentionScores, sc * c);
                }
            }
            Kernel::Eager => {
                acc.add(Cat::AttentionIo, 3 * t * q * c + if o_trains { t * q * c } else { 0 });
            }
            _ => {
                // q, k, v are views of c_attn's output: one storage, kept once
                acc.add(Cat::AttentionIo, 4 * t * q * c + ctx.lse_bytes(m.num_heads));
            }
        }
    }
    let cproj = [(LinearRole::O, h * q)];
    let active_mid = linears_no_input(&mut acc, ctx, &cproj, q, attn_active) || active_in;
    let before_post = acc.total();
    let tail =
        eager_core_tail(ctx, m, attn_active && !selective, o_trains, m.attention_dropout > 0.0 || ctx.amp);
    if m.hidden_dropout > 0.0 && active_mid {
        acc.add(Cat::DropoutMasks, ctx.ts * h); // resid_dropout
    }
    // residual sum kept by ln_2, then ln_2 stats
    if active_mid {
        acc.add(Cat::Residual, ctx.ts * h * r);
        acc.add(Cat::Norms, ln_stats(ctx, r));
    }
    let cfc = [(LinearRole::Up, h * i)];
    let mlp_active = linears(
        &mut acc,
        ctx,
        &LinearGroup { members: &cfc, in_features: h, in_bytes: r, in_cat: Cat::Norms, tokens: ctx.ts },
        active_mid,
    );
    let down_trains = ctx.weight_trains(LinearRole::Down);
    if mlp_active {
        // gelu_new = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
        if ctx.amp {
            // pow is an fp32 autocast op: x upcast, tanh and 1+tanh in fp32, 0.5·x in half;
            // the product is fp32 and c_proj keeps its half cast
            acc.add(Cat::Mlp, 3 * t * i * 4 + t * i * c);
            if down_trains {
                acc.add(Cat::InputCasts, t * i * c);
            }
        } else {
            // x (pow), 0.5·x, tanh, 1+tanh; the output is kept by c_proj
            acc.add(Cat::Mlp, 4 * t * i * c);
            if down_trains {
                acc.add(Cat::Mlp, t * i * c);
            }
        }
    }
    let mproj = [(LinearRole::Down, i * h)];
    let active_out = linears_no_input(&mut acc, ctx, &mproj, i, mlp_active) || active_mid;
    if m.hidden_dropout > 0.0 && active_out {
        acc.add(Cat::DropoutMasks, ctx.ts * h); // mlp dropout
    }
    let freed = acc.total() - before_post + tail;
    (acc, freed)
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

fn first_adapted(ctx: &Ctx) -> LinearRole {
    [LinearRole::Q, LinearRole::K, LinearRole::V]
        .into_iter()
        .find(|r| ctx.adapted(*r))
        .unwrap_or(LinearRole::Q)
}

fn gpt2(ctx: &Ctx, m: &TransformerSpec) -> ActivationModel {
    let (t, h, c, r, s) = (ctx.t, m.hidden_size, ctx.c, ctx.r, ctx.s);
    let (mut full_layer, freed) = gpt2_layer(ctx, m, true, false);
    let (mut selective_layer, _) = gpt2_layer(ctx, m, true, true);
    let (mut first_layer, _) = gpt2_layer(ctx, m, ctx.full, false);
    // every block's input is kept by its ln_1 (block 0: the embedding dropout output)
    for l in [&mut full_layer, &mut selective_layer] {
        l.add(Cat::Residual, ctx.ts * h * r);
    }
    if ctx.full {
        first_layer.add(Cat::Residual, ctx.ts * h * r);
    }
    let mut top = Saved::default();
    if ctx.full {
        top.add(Cat::Embeddings, t * 8 + s * 8); // input ids (wte), position ids (wpe)
    }
    if m.hidden_dropout > 0.0 && ctx.full {
        top.add(Cat::DropoutMasks, ctx.ts * h); // embedding dropout
    }
    let top_input = top;
    // ln_f keeps the last block's output and its stats
    top.add(Cat::Residual, ctx.ts * h * r);
    top.add(Cat::Norms, ln_stats(ctx, r));
    let (released, loss_t) = head_saves(&mut top, ctx, m);
    let (attn_t, mlp_t) = layer_backward_transients(ctx, m, false);
    let i = m.intermediate_size;
    let infer_persistent = t * h * r + s * h * r + s * 8;
    // eager attention gets a materialised (b, 1, s, s) causal mask in the stream dtype, passed to
    // every block positionally: a checkpointed block saves it (one storage for all blocks)
    let ckpt_mask = if ctx.kernel == Kernel::Eager { ctx.b * s * s * r } else { 0 };
    let attn_phase = gpt_like_attention_phase(ctx, m);
    let mlp_phase = 3 * t * h * r + 4 * t * i * c;
    ActivationModel {
        full_layer,
        first_layer,
        selective_layer,
        layer_input_bytes: ctx.ts * h * r,
        shared_layer_bytes: 0,
        shared_checkpoint_bytes: ckpt_mask,
        freed_before_attention_backward: freed,
        top,
        top_input,
        head_released_bytes: released,
        mlp_backward_transient: mlp_t,
        attention_backward_transient: attn_t,
        loss_backward_transient: loss_t,
        head_forward_transient: t * logits_width(m) * (c + if c == 4 { 0 } else { 4 }),
        infer_persistent,
        infer_layer_peak: t * h * r + attn_phase.max(mlp_phase),
        infer_head_peak: t * h * r + t * logits_width(m) * c,
        kv_per_layer_elems: 2 * t * m.kv_width(),
    }
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

// ---------------------------------------------------------------------------------------------
// BERT
// ---------------------------------------------------------------------------------------------

/// One BERT block: saves and the bytes freed before its attention core runs backward.
fn bert_layer(ctx: &Ctx, m: &TransformerSpec, active_in: bool, selective: bool) -> (Saved, u64) {
    let mut acc = Saved::default();
    let (t, h, c, r) = (ctx.t, m.hidden_size, ctx.c, ctx.r);
    let i = m.intermediate_size;
    // the block input (previous LayerNorm output, or the embedding dropout output for block 0)
    // is kept by query/key/value when they train
    let q = m.q_width();
    let qkv = [(LinearRole::Q, q * h), (LinearRole::K, q * h), (LinearRole::V, q * h)];
    let attn_active = linears(
        &mut acc,
        ctx,
        &LinearGroup { members: &qkv, in_features: h, in_bytes: r, in_cat: Cat::Norms, tokens: ctx.ts },
        active_in,
    );
    let o_trains = ctx.weight_trains(LinearRole::O);
    if attn_active {
        match ctx.kernel {
            Kernel::Eager if !selective => {
                attention_core(&mut acc, ctx, m.num_heads, h, h, m.attention_dropout, o_trains, false)
            }
            Kernel::Eager => acc.add(Cat::AttentionIo, 3 * t * h * c + if o_trains { t * h * c } else { 0 }),
            _ => attention_core(&mut acc, ctx, m.num_heads, h, h, m.attention_dropout, o_trains, false),
        }
    }
    let o = [(LinearRole::O, h * q)];
    let active_mid = linears_no_input(&mut acc, ctx, &o, q, attn_active) || active_in;
    let before_post = acc.total();
    let tail =
        eager_core_tail(ctx, m, attn_active && !selective, o_trains, m.attention_dropout > 0.0 || ctx.amp);
    if active_mid {
        if m.hidden_dropout > 0.0 {
            acc.add(Cat::DropoutMasks, ctx.ts * h);
        }
        acc.add(Cat::Residual, ctx.ts * h * r); // dropout(dense) + input, kept by LayerNorm
        acc.add(Cat::Norms, ln_stats(ctx, r));
    }
    let up = [(LinearRole::Up, i * h)];
    let mlp_active = linears(
        &mut acc,
        ctx,
        &LinearGroup { members: &up, in_features: h, in_bytes: r, in_cat: Cat::Norms, tokens: ctx.ts },
        active_mid,
    );
    if mlp_active {
        acc.add(Cat::Mlp, t * i * c); // intermediate.dense output, kept by GELU
        if ctx.weight_trains(LinearRole::Down) {
            acc.add(Cat::Mlp, t * i * c); // GELU output, kept by output.dense
        }
    }
    let down = [(LinearRole::Down, h * i)];
    let active_out = linears_no_input(&mut acc, ctx, &down, i, mlp_active) || active_mid;
    if active_out {
        if m.hidden_dropout > 0.0 {
            acc.add(Cat::DropoutMasks, ctx.ts * h);
        }
        acc.add(Cat::Residual, ctx.ts * h * r);
        acc.add(Cat::Norms, ln_stats(ctx, r));
    }
    let freed = acc.total() - before_post + tail;
    (acc, freed)
}

fn bert(ctx: &Ctx, m: &TransformerSpec) -> ActivationModel {
    let (t, h, c, r, s) = (ctx.t, m.hidden_size, ctx.c, ctx.r, ctx.s);
    let (full_layer, freed) = bert_layer(ctx, m, true, false);
    let (selective_layer, _) = bert_layer(ctx, m, true, true);
    let (first_layer, _) = bert_layer(ctx, m, ctx.full, false);
    let mut top = Saved::default();
    if ctx.full {
        // word ids, labels come with the loss; token-type ids gathered from the buffer (1, s)
        top.add(Cat::Embeddings, t * 8 + s * 8);
        top.add(Cat::Embeddings, t * h * r); // word+position+type sum, kept by LayerNorm
        top.add(Cat::Norms, ln_stats(ctx, r));
        if m.hidden_dropout > 0.0 {
            top.add(Cat::DropoutMasks, t * h);
        }
    }
    let top_input = top;
    let (released, loss_t) = match m.head {
        Head::MaskedLm => {
            let before = top.total();
            let v = m.vocab_size;
            // transform: dense (keeps the last block output) -> GELU -> LayerNorm
            if ctx.full {
                if !ctx.amp {
                    top.add(Cat::Norms, t * h * r);
                }
                if ctx.amp {
                    top.add(Cat::InputCasts, t * h * c);
                    top.add(Cat::WeightCasts, h * h * c);
                }
                top.add(Cat::HeadLoss, t * h * c); // dense output, kept by GELU
                top.add(Cat::HeadLoss, t * h * if ctx.amp { 4 } else { c }); // GELU out (fp32 cast for LN)
                top.add(Cat::Norms, ln_stats(ctx, r));
                if ctx.amp {
                    top.add(Cat::InputCasts, t * h * c);
                } else {
                    top.add(Cat::HeadLoss, t * h * c); // LN output, kept by the decoder
                }
            }
            if ctx.amp {
                top.add(Cat::WeightCasts, v * h * c);
                // cross_entropy autocasts the logits to fp32; log_softmax output stays half
                top.add(Cat::HeadLoss, t * v * 4 + t * v * c + 4 + t * 8);
            } else {
                // no upcast: log_softmax in the compute dtype, total_weight likewise
                top.add(Cat::HeadLoss, t * v * c + c + t * 8);
            }
            (top.total() - before, 2 * t * v * if ctx.amp { 4 } else { c })
        }
        _ => {
            let before = top.total();
            let n = logits_width(m);
            if n > 0 {
                // pooler (dense + tanh on the first token) and classifier; small
                top.add(Cat::HeadLoss, 3 * ctx.b * h * c + ctx.b * n * 4 + ctx.b * 8);
            }
            (top.total() - before, 2 * ctx.b * n * 4)
        }
    };
    let (attn_t, mlp_t) = layer_backward_transients(ctx, m, false);
    let i = m.intermediate_size;
    let infer_persistent = t * h * r + s * 8;
    let attn_phase = gpt_like_attention_phase(ctx, m);
    let mlp_phase = 2 * t * h * r + 2 * t * i * c;
    ActivationModel {
        full_layer,
        first_layer,
        selective_layer,
        layer_input_bytes: ctx.ts * h * r,
        shared_layer_bytes: 0,
        shared_checkpoint_bytes: 0,
        freed_before_attention_backward: freed,
        top,
        top_input,
        head_released_bytes: released,
        mlp_backward_transient: mlp_t,
        attention_backward_transient: attn_t,
        loss_backward_transient: loss_t,
        head_forward_transient: t * logits_width(m) * (c + if c == 4 { 0 } else { 4 }),
        infer_persistent,
        infer_layer_peak: t * h * r + attn_phase.max(mlp_phase),
        infer_head_peak: t * h * r + t * logits_width(m) * c,
        kv_per_layer_elems: 0,
    }
}

/// KV cache bytes for the whole model.
pub fn kv_cache_bytes(m: &TransformerSpec, batch: u64, seq: u64, dtype: DType) -> u64 {
    if m.family == Family::Bert {
        return 0;
    }
    dtype.bytes(2 * m.num_layers * batch * seq * m.kv_width())
}
