//! Inference: what a forward without autograd holds at once — the tensors alive through the whole
//! pass (embedding output, masks, rotary tables), the most one block holds, and the head's logits.

use super::{Act, BlockFacts, Ctx, Dequant, Kernel};
use crate::model::TransformerSpec;

/// The forward working set of a block in inference, by the code that runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InferKind {
    /// transformers' decoders: the block input, then the larger of the attention phase (the
    /// normed input, q, the kernel's or eager's tensors, masks, repeated K/V) and the MLP phase.
    Decoder,
    /// The eager-era encoders and GPT-2: the block input, ln output, q/k/v, then scores or the
    /// kernel output; the MLP's `mlp_inputs` residual-width tensors and `mlp_widths` intermediate
    /// ones (GPT-2's `gelu_new` in ops: 4 and 3; BERT: 2 and 2); learned positions alive.
    Classic {
        /// A learned position embedding output alive through the pass (GPT-2).
        positions: bool,
        /// Intermediate-width tensors of the MLP alive at once.
        mlp_widths: u64,
        /// Residual-width tensors beside them.
        mlp_inputs: u64,
    },
    /// Megatron: the residual stream in the compute dtype, fused q/k/v, no autocast copies.
    HalfStream,
    /// DeBERTa-v2: the encoder holds every layer's output (its model asks for all hidden
    /// states), the float `(b, 1, s, s)` mask, the relative positions and their normalised
    /// embeddings through the pass; a layer's disentangled attention holds q, k, v, the position
    /// projections and their int64 indices, and up to five score-sized tensors at once.
    Disentangled,
}

/// The inference peaks of a model.
#[derive(Clone, Copy, Debug, Default)]
pub struct InferPeaks {
    /// Bytes alive during the whole forward (embedding outputs, masks, rotary tables).
    pub persistent: u64,
    /// Most bytes one block holds at once, not counting the KV cache.
    pub layer: u64,
    /// Bytes at the LM head (final hidden state and logits).
    pub head: u64,
}

impl InferPeaks {
    /// The peaks of `kind` for this model.
    pub fn of(kind: InferKind, ctx: &Ctx, m: &TransformerSpec, f: &BlockFacts, dq: &Dequant) -> Self {
        let (t, h, c, r, s) = (ctx.tokens, m.hidden_size, ctx.compute_elem, ctx.residual_elem, ctx.seq);
        let (qw, v) = (m.q_width(), f.classes);
        let scores = ctx.batch * m.num_heads * s * s;
        match kind {
            InferKind::Classic { positions, mlp_widths, mlp_inputs } => {
                let pos = if positions { s * h * r } else { 0 };
                let attn = 2 * t * h * r
                    + 3 * t * qw * c
                    + if f.kernel == Kernel::Eager { 2 * scores * c } else { t * qw * c };
                let mlp = mlp_inputs * t * h * r + mlp_widths * t * m.intermediate_size * c;
                Self {
                    persistent: t * h * r + pos + s * 8,
                    layer: t * h * r + attn.max(mlp),
                    head: head(ctx, m, f, dq),
                }
            }
            InferKind::HalfStream => {
                let ts = ctx.rank_tokens;
                let q3 = 3 * t * qw * c;
                Self {
                    persistent: ts * h * c,
                    layer: 2 * ts * h * c + q3.max(2 * t * m.intermediate_size * c),
                    head: ts * h * c + t * v * c,
                }
            }
            InferKind::Disentangled => disentangled(ctx, m, f),
            InferKind::Decoder => Self {
                persistent: decoder_persistent(ctx, m, f),
                layer: t * h * r
                    + if f.attends { attention_phase(ctx, m, f) } else { 0 }
                        .max(mlp_phase(ctx, m, f))
                        .max(t * h * r + f.mixer_infer)
                    + dq.layer,
                head: head(ctx, m, f, dq),
            },
        }
    }
}

/// The head of a transformers model: the final hidden state and the logits.
fn head(ctx: &Ctx, m: &TransformerSpec, f: &BlockFacts, dq: &Dequant) -> u64 {
    let (t, h, c, r, v) = (ctx.tokens, m.hidden_size, ctx.compute_elem, ctx.residual_elem, f.classes);
    if m.final_softcap.is_some() || m.logits_scaled {
        // final soft-capping makes new logits-sized tensors (x/cap, tanh, ·cap), as Granite's
        // `logits / logits_scaling` makes one: two alive at once
        t * h * r + 2 * t * v * c
    } else {
        // a 4-bit head dequantizes its weight before the logits exist
        t * h * r + (t * v * c).max(dq.head)
    }
}

/// The embedding output, rotary tables, position ids, eager's additive mask and SDPA's boolean
/// `(b, 1, s, s)` mask (built once per forward when a layer needs one).
fn decoder_persistent(ctx: &Ctx, m: &TransformerSpec, f: &BlockFacts) -> u64 {
    let (t, h, c, r, s) = (ctx.tokens, m.hidden_size, ctx.compute_elem, ctx.residual_elem, ctx.seq);
    let mask =
        if f.kernel == Kernel::Eager { ctx.batch * s * s * c.max(if r == 4 { 4 } else { c }) } else { 0 };
    let rope = 2 * s * f.rope_cols * c;
    let bool_mask = if f.any_masked { ctx.batch * s * s } else { 0 };
    t * h * r + rope + s * 8 + mask + bool_mask
}

/// The attention phase: the normed input, q, and the kernel's tensors.
fn attention_phase(ctx: &Ctx, m: &TransformerSpec, f: &BlockFacts) -> u64 {
    let (t, h, c, r, s) = (ctx.tokens, m.hidden_size, ctx.compute_elem, ctx.residual_elem, ctx.seq);
    let qw = m.q_width();
    let scores = ctx.batch * m.num_heads * s * s;
    let core = match f.kernel {
        // scores, scaled and masked scores, softmax(dtype=float32) of a half input (an fp32
        // copy and an fp32 output); with sinks the softmax stays in the logits' dtype
        Kernel::Eager if f.eager_sinks => scores * 4 * c,
        Kernel::Eager => {
            scores * if c == 4 { 8 } else { c + 8 }
                + if m.num_kv_heads != m.num_heads { 2 * t * qw * c } else { 0 }
                // BLOOM: the raw scores and the previous block's returned probabilities, the
                // fused q/k/v output beside q's copy
                // (q's reshape copies from two sequences on; one sequence reads a view)
                + if f.named_scores { 2 * scores * c + if ctx.batch > 1 { 3 } else { 2 } * t * qw * c } else { 0 }
        }
        // with a mask: the additive bias and K/V repeated to every head
        _ if f.any_masked => {
            let repeat = m.num_kv_heads != m.num_heads && m.num_kv_heads > 1;
            t * qw * c + ctx.batch * s * s * c + if repeat { 2 * t * qw * c } else { 0 }
        }
        _ => t * qw * c,
    };
    let latent = match m.mla {
        // latent attention: kv_b's output and the concatenated query and key besides q
        Some(a) => t * m.num_heads * (a.qk_nope_head_dim + a.v_head_dim) * c + 2 * t * qw * c,
        None => 0,
    };
    t * h * r + t * qw * c + core + latent + super::indexer_transient(ctx, m)
}

/// The MLP phase: its input twice (residual and normed), then the experts' or the MLP's widths.
fn mlp_phase(ctx: &Ctx, m: &TransformerSpec, f: &BlockFacts) -> u64 {
    let (t, h, c, r) = (ctx.tokens, m.hidden_size, ctx.compute_elem, ctx.residual_elem);
    let w = f.mlp_width;
    2 * t * h * r
        + match m.moe {
            // transformers' grouped experts (`grouped_mm_experts_forward`): the routed copies of
            // the tokens throughout, then the larger of two moments: the grouped gate_up output,
            // the activation and the product beside the down output; or the down output, its
            // weighted rows and their un-permuted copy (`weighted_out[inv_perm]`), in fp32 when
            // the routing weights are (`down * w` promotes)
            // The router's fp32 copy of the tokens, the routed experts and the shared ones run one
            // after the other, each beside the other's output (t·h) when there are shared experts.
            // Llama 4: the input repeated per expert and weighted, then in the batched experts
            // gate_up, the activation and the product, and the down output beside them; then the
            // shared expert beside the routed output
            Some(moe) if f.moe_all_experts => {
                let (rows, i, si) = (t * moe.experts, m.intermediate_size, moe.shared_intermediate_size);
                let routed = rows * (h + 3 * i) * c + rows * i.max(h) * c;
                routed.max(rows * h * c + 3 * t * si * c)
            }
            Some(moe) => {
                let tk = t * moe.top_k;
                let i = m.intermediate_size;
                let router = if f.router_fp32 { t * h * 4 } else { 0 };
                let w = if f.routing_fp32 { 4 } else { c };
                let widths = tk * h * c + tk * 2 * i * c + 2 * tk * i * c;
                let weighting = tk * h * c + 2 * tk * h * w;
                let si = moe.shared_intermediate_size;
                let beside = if si > 0 { t * h * c } else { 0 };
                // LongCat-Flash's identity experts: the tokens times their weights (fp32 when the
                // weights are), made before the routed experts run and added after
                let identity = if moe.zero_experts > 0 { t * h * w } else { 0 };
                let routed = tk * h * c + widths.max(weighting) + beside + identity;
                let shared = if si > 0 { beside + 3 * t * si * c } else { 0 };
                router.max(routed).max(shared)
            }
            // a fused gate_up output stays alive until its second half is read: 4 widths
            None if f.fused_gate_up => 4 * t * w * c,
            // `gelu_new` in ops: the input, `0.5·x` and two intermediates alive at once
            None if f.gelu_new_ops => 4 * t * w * c,
            // a plain MLP's activation written in ops holds more widths at once: ReLU² its input,
            // relu's output and the square; xIELU (Python) its input, `where`'s bool condition
            // (made first), the positive branch's result and, at the negative branch's last sum,
            // its two terms and the sum
            None if f.act == Act::Relu2 => 3 * t * w * c,
            None if f.act == Act::Xielu => 5 * t * w * c + t * w,
            None => (if f.gated { 3 } else { 2 }) * t * w * c,
        }
}

/// [`InferKind::Disentangled`]. With content-to-position and position-to-content scores, the
/// position-to-content division holds the content scores, both gathered scores, their running
/// sum and the quotient (five score-sized tensors); each `gather` holds its `(b·h, s, 2·span)`
/// input beside the earlier ones, which is more when the sequence is shorter than the positions
/// (`2n` score-sized tensors and the input, for n kinds of position scores). Without relative
/// attention, the scores and their masked copy. The head: the last hidden state (still held by
/// the model), the head's input and the logits.
fn disentangled(ctx: &Ctx, m: &TransformerSpec, f: &BlockFacts) -> InferPeaks {
    let (b, t, h, c, r, s) =
        (ctx.batch, ctx.tokens, m.hidden_size, ctx.compute_elem, ctx.residual_elem, ctx.seq);
    let (qw, heads) = (m.q_width(), m.num_heads);
    let scores = b * heads * s * s * c;
    let (kinds, rows, table) = match m.disentangled {
        Some(d) => {
            let e = if ctx.amp { 4 } else { c };
            (u64::from(d.c2p) + u64::from(d.p2c), d.rows(), if d.norm { d.rows() * h * e } else { 0 })
        }
        None => (0, 0, 0),
    };
    let gathered = b * heads * s * rows * c;
    let core =
        if kinds == 0 { 2 * scores } else { ((3 + kinds) * scores).max(2 * kinds * scores + gathered) };
    let positions = kinds * (b * rows * qw * c + s * s * 8);
    let earlier = m.num_layers.saturating_sub(1) * t * h * r;
    InferPeaks {
        persistent: t * h * r + b * s * s * 4 + if kinds > 0 { s * s * 8 } else { 0 } + table,
        layer: earlier + 3 * t * qw * c + core + positions,
        head: 2 * t * h * r + t * f.classes * c,
    }
}
