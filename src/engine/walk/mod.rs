//! The interpreter: walks a family's ops (embedding, each kind of block, final norm and head) on
//! a [`Graph`] and turns what the rules kept into the [`ActivationModel`] the estimator composes
//! (checkpointing, pipeline stages, candidate moments of the peak).

mod output;

pub use output::{ActivationModel, HeadPieces, LayerMix, Pieces};

use super::inputs::saved::{Cat, Saved};
use super::inputs::{AttentionImpl, Ctx, Kernel, Loss};
use super::ops::{Graph, OpRecord, Shared, T};
use crate::model::{Family, TransformerSpec, families};

/// One walk of a block.
struct BlockWalk {
    kept: Saved,
    freed_before_attention: u64,
    /// Tables every block of the model shares (rotary cos/sin), with their bytes.
    shared: [(Option<Shared>, u64); 2],
}

fn walk_block(ctx: &Ctx, m: &TransformerSpec, flags: u8, input_rg: bool, selective: bool) -> BlockWalk {
    let ctx = &ctx.for_block();
    let mut g = Graph::new(ctx);
    g.selective = selective;
    let x = g.tensor(ctx.ts * m.hidden_size * ctx.r, ctx.r, input_rg, Cat::Residual);
    families::block(&mut g, m, flags, x);
    let total = g.kept.total();
    let after = total.saturating_sub(g.kept_at_attention);
    BlockWalk { kept: g.kept, freed_before_attention: after + g.eager_tail, shared: g.shared }
}

/// The ops of one block of the given kind, with what each keeps (the GUI's "which op keeps what").
pub fn block_ops(ctx: &Ctx, m: &TransformerSpec, flags: u8) -> Vec<OpRecord> {
    let ctx = &ctx.for_block();
    let mut g = Graph::new(ctx).with_trace();
    let x = g.tensor(ctx.ts * m.hidden_size * ctx.r, ctx.r, true, Cat::Residual);
    families::block(&mut g, m, flags, x);
    g.records().to_vec()
}

/// The distinct layer kinds of a spec, in order of first appearance (at most 4).
fn kinds(m: &TransformerSpec) -> ([u8; 4], usize) {
    let mut out = [families::default_flags(m), 0, 0, 0];
    let mut n = 0;
    for &f in m.layer_flags.iter().take(m.num_layers as usize) {
        if !out[..n].contains(&f) && n < 4 {
            out[n] = f;
            n += 1;
        }
    }
    (out, n.max(1))
}

/// Flags of layer `i`.
pub fn layer_flags(m: &TransformerSpec, i: u64) -> u8 {
    m.layer_flags.get(i as usize).copied().unwrap_or_else(|| families::default_flags(m))
}

/// Builds the activation model of a decoder/encoder family from its ops.
pub(crate) fn activation_model(ctx: &Ctx, m: &TransformerSpec) -> ActivationModel {
    let (t, h, c, r, s) = (ctx.t, m.hidden_size, ctx.c, ctx.r, ctx.s);
    let (kind_flags, n_kinds) = kinds(m);
    let mut mix = LayerMix { n: n_kinds, flags: kind_flags, ..LayerMix::default() };
    let mut tables: [(Option<Shared>, u64); 2] = [(None, 0); 2];
    let mut freed_last = 0;
    let last_flags = layer_flags(m, m.num_layers.saturating_sub(1));
    let first_flags = layer_flags(m, 0);
    let mut first = None;
    for (i, &kf) in kind_flags.iter().enumerate().take(n_kinds) {
        let full = walk_block(ctx, m, kf, true, false);
        mix.full[i] = full.kept;
        if ctx.selective {
            mix.selective[i] = walk_block(ctx, m, kind_flags[i], true, true).kept;
        }
        if ctx.full && kind_flags[i] == first_flags {
            first = Some(full.kept);
        }
        // tables shared across kinds (Gemma 3's two rotary bases) add up; one table counts once
        for t in full.shared.into_iter().filter(|t| t.0.is_some()) {
            if let Some(slot) = tables.iter_mut().find(|x| x.0.is_none() || x.0 == t.0) {
                *slot = t;
            }
        }
        if kind_flags[i] == last_flags {
            freed_last = full.freed_before_attention;
        }
    }
    let shared: u64 = tables.iter().map(|t| t.1).sum();
    let first = first.unwrap_or_else(|| walk_block(ctx, m, first_flags, ctx.full, false).kept);
    let full_layer = mix.of(last_flags, mix.full[0], false);
    let selective_layer = mix.of(last_flags, mix.selective[0], true);

    // embeddings (ids kept on the first stage), then the final norm, head and loss
    let mut g = Graph::new(ctx);
    let _ = families::embed(&mut g, m);
    let top_input = g.kept;
    let last: T = g.tensor(ctx.ts * h * r, r, true, Cat::Residual);
    let head_released = families::head(&mut g, m, last);
    let top = g.kept;

    let v = families::classes(m);
    let kernel = families::kernel_of(ctx, m);
    let qw = m.q_width();
    let kvw = m.kv_width();
    let scores = ctx.b * m.num_heads * s * s;
    let mlp_w = families::mlp_width(m);
    let gated = families::gated(m);
    let eager_sinks = kernel == Kernel::Eager && m.family == Family::GptOss;
    let probs_e = families::attn_of(ctx, m, 0).softmax.elem_bytes(ctx.amp, c);
    let attn_t = match kernel {
        // gradients of the probabilities and of the scores (in the softmax dtype), plus the
        // tanh backward of soft-capping
        Kernel::Eager => 2 * scores * probs_e + if m.attn_softcap.is_some() { scores * c } else { 0 },
        _ => (2 * qw + 2 * kvw) * t * c + ctx.b * m.num_heads * s * 4,
    };
    let mlp_t = match m.family {
        // gelu_new's backward: four (fp32 under autocast) intermediates
        Family::Gpt2 => 4 * t * mlp_w * if ctx.amp { 4 } else { c },
        _ => (if gated { 3 } else { 2 }) * t * mlp_w * c,
    };
    // a 4-bit matmul dequantizes its weight for every matmul, forward and backward
    // (bitsandbytes' `F.dequantize_4bit(B, state).to(A.dtype)`, torchao's `linear_nf4`:
    // `weight.to(input.dtype)`): one projection's weight in the compute dtype is alive while its
    // input gradient is computed
    let (mlp_t, attn_t) = match ctx.nf4_dequant {
        Some(e) if m.moe.is_none() => (mlp_t + mlp_w * h * e, attn_t + qw.max(kvw) * h * e),
        _ => (mlp_t, attn_t),
    };
    // the same dequantization in a forward: a block's largest 4-bit projection, and the head's
    // weight when it is a 4-bit Linear too (Lightning's plugin). A single row takes
    // bitsandbytes' `gemv_4bit` instead (`matmul_4bit`: `A.numel() == A.shape[-1]`, no grad),
    // which dequantizes nothing.
    let rows_dequantize = ctx.t > 1 || ctx.lora.is_some();
    let (layer_dequant, head_dequant) = match ctx.nf4_dequant {
        Some(e) if rows_dequantize && m.moe.is_none() => {
            (mlp_w.max(qw).max(kvw) * h * e, if ctx.head_bnb4 { v * h * e } else { 0 })
        }
        _ => (0, 0),
    };
    let any_masked = ctx.attn == AttentionImpl::Sdpa
        && (m.family == crate::model::Family::Falcon
            || (0..m.num_layers.min(8)).any(|i| families::windowed(ctx, m, layer_flags(m, i))));
    // inference
    let mask = if kernel == Kernel::Eager { ctx.b * s * s * c.max(if r == 4 { 4 } else { c }) } else { 0 };
    let rope = if families::has_rope(m) { 2 * s * families::rope_table_dim(m) * c } else { 0 };
    // the boolean (b, 1, s, s) mask built once per forward when SDPA needs one
    let bool_mask = if any_masked { ctx.b * s * s } else { 0 };
    let infer_persistent = t * h * r + rope + s * 8 + mask + bool_mask;
    let attn_phase = t * h * r
        + t * qw * c
        + match kernel {
            // scores, scaled and masked scores, softmax(dtype=float32) of a half input (an fp32
            // copy and an fp32 output); with sinks the softmax stays in the logits' dtype
            Kernel::Eager if eager_sinks => scores * 4 * c,
            Kernel::Eager => {
                scores * if c == 4 { 8 } else { c + 8 }
                    + if m.num_kv_heads != m.num_heads { 2 * t * qw * c } else { 0 }
            }
            // with a mask: the additive bias and K/V repeated to every head
            _ if any_masked => {
                let repeat = m.num_kv_heads != m.num_heads && m.num_kv_heads > 1;
                t * qw * c + ctx.b * s * s * c + if repeat { 2 * t * qw * c } else { 0 }
            }
            _ => t * qw * c,
        }
        + match m.mla {
            // latent attention: kv_b's output and the concatenated query and key besides q
            Some(a) => t * m.num_heads * (a.qk_nope_head_dim + a.v_head_dim) * c + 2 * t * qw * c,
            None => 0,
        };
    let mlp_phase = 2 * t * h * r
        + match m.moe {
            // routed copies of the tokens, the grouped gate_up output, the activation and the
            // product, the grouped down output
            Some(moe) => {
                let tk = t * moe.top_k;
                let i = m.intermediate_size;
                // DeepSeek's router works on an fp32 copy of the tokens
                let router = if m.family == Family::Deepseek { t * h * 4 } else { 0 };
                let shared = 3 * t * moe.shared_intermediate_size * c;
                2 * tk * h * c + tk * 2 * i * c + 2 * tk * i * c + router + shared
            }
            // a fused gate_up output stays alive until its second half is read: 4 widths
            None if m.family == Family::Phi3 => 4 * t * mlp_w * c,
            // `gelu_new` in ops: the input, `0.5·x` and two intermediates alive at once
            None if m.gelu_new && !families::litgpt_runs(ctx, m) => 4 * t * mlp_w * c,
            None => (if gated { 3 } else { 2 }) * t * mlp_w * c,
        };
    let infer_head_peak = match m.family {
        Family::Megatron => ctx.ts * h * c + t * v * c,
        // final soft-capping makes new logits-sized tensors (x/cap, tanh, ·cap): two alive at once
        _ if m.final_softcap.is_some() => t * h * r + 2 * t * v * c,
        // a 4-bit head dequantizes its weight before the logits exist
        _ => t * h * r + (t * v * c).max(head_dequant),
    };
    let (infer_persistent, infer_layer_peak) = match m.family {
        // learned positions; the block input, ln_1 output, q/k/v, then scores or the kernel output
        Family::Gpt2 | Family::Bert => {
            let pos = if m.family == Family::Gpt2 { s * h * r } else { 0 };
            let attn = 2 * t * h * r
                + 3 * t * qw * c
                + if kernel == Kernel::Eager { 2 * scores * c } else { t * qw * c };
            let (k, mlp_in) = if m.family == Family::Gpt2 { (4, 3) } else { (2, 2) };
            let mlp = mlp_in * t * h * r + k * t * m.intermediate_size * c;
            (t * h * r + pos + s * 8, t * h * r + attn.max(mlp))
        }
        Family::Megatron => {
            let q3 = 3 * t * qw * c;
            (ctx.ts * h * c, 2 * ctx.ts * h * c + q3.max(2 * t * m.intermediate_size * c))
        }
        _ => (infer_persistent, t * h * r + attn_phase.max(mlp_phase) + layer_dequant),
    };
    let shared_checkpoint_bytes = match (m.family, kernel) {
        // GPT-2's eager path builds a (b, 1, s, s) causal mask passed to every block
        // positionally: checkpointed blocks keep it (one storage for all)
        (Family::Gpt2, Kernel::Eager) => ctx.b * s * s * r,
        _ => 0,
    };
    let pieces = ctx.loss.pieces(ctx.b, s, h, v);
    let chunk = t.div_ceil(pieces);
    // torchtune's LinearCrossEntropyLoss works on the unmasked rows only
    let ce_chunk = ctx.loss.rows(ctx.b, s).div_ceil(pieces);
    // before PyTorch 1.11 log_softmax keeps its input: the fp32 logits the formulas below hold
    // for a moment are kept instead (Megatron's vocab-parallel loss is its own Function)
    let lsm_input = ctx.torch.softmax_keeps_input() && !ctx.compiled_loss && m.family != Family::Megatron;
    // the logits are half, so an fp32 copy of them exists
    let up = u64::from(c != 4);
    let head_forward_transient = match (m.family, ctx.loss) {
        (Family::Megatron, _) => t * v * (c + 4),
        // the compiled loss keeps the logits it reads (counted as saved) and fuses the upcast
        _ if ctx.compiled_loss => 0,
        (Family::Bert | Family::Vit, _) | (_, Loss::Hf | Loss::Chunked { .. }) if lsm_input => up * t * v * c,
        (_, Loss::LinearCe { .. }) if lsm_input => {
            let copy = if ctx.full { 0 } else { ctx.loss.rows(ctx.b, s) * h * c };
            t * h * c + copy + up * ce_chunk * v * c
        }
        (Family::Bert | Family::Vit, _) | (_, Loss::Hf) => t * v * (c + if c == 4 { 0 } else { 4 }),
        // the chunks' logits stay in a list until the loss returns; one chunk's fp32 copy at a time
        (_, Loss::Chunked { .. }) => t * v * c + if c == 4 { 0 } else { chunk * v * 4 },
        // the chunks in the compute dtype while Fabric converts them (the fp32 list is kept)
        (_, Loss::ChunkedNative { .. }) => {
            if c == 4 {
                0
            } else {
                t * v * c
            }
        }
        // one chunk of logits at a time
        (_, Loss::FusedLinearCe) => chunk * v * c,
        // the model's final hidden state (no op keeps it) and, for a frozen head, the unsaved
        // copy of its unmasked rows, alive while the loss runs; the last chunk's logits and
        // their fp32 copy
        (_, Loss::LinearCe { .. }) => {
            let copy = if ctx.full { 0 } else { ctx.loss.rows(ctx.b, s) * h * c };
            t * h * c + copy + ce_chunk * v * (c + if c == 4 { 0 } else { 4 })
        }
    };
    // a 4-bit head dequantizes its weight for each chunk it runs, the earlier chunks' logits alive
    let head_forward_transient = if head_dequant > 0 {
        let before = if pieces > 1 { (t - chunk.min(t)) * v * c } else { 0 };
        head_forward_transient.max(before + head_dequant)
    } else {
        head_forward_transient
    };
    let loss_backward_transient = match (m.family, m.head, ctx.loss) {
        (Family::Bert, crate::model::Head::MaskedLm, _) => 2 * t * v * if ctx.amp { 4 } else { c },
        (Family::Bert, _, _) => 2 * ctx.b * v * 4,
        (_, _, _) if v == 0 => 0,
        // the compiled backward writes each piece's logits gradient in the compute dtype at once
        (Family::Megatron | Family::Vit, _, _) if ctx.compiled_loss => 2 * t * v * 4,
        (_, _, _) if ctx.compiled_loss => t.div_ceil(pieces) * v * c,
        (Family::Megatron | Family::Vit, _, _) | (_, _, Loss::Hf) => 2 * t * v * 4,
        // chunk by chunk: nll's and log-softmax's fp32 gradients and the cast back
        (_, _, Loss::Chunked { .. }) => chunk * v * (8 + if c == 4 { 0 } else { c }),
        // chunk by chunk: nll's and log-softmax's fp32 gradients
        (_, _, Loss::ChunkedNative { .. }) => 2 * chunk * v * 4,
        // the input's gradient was computed in the forward
        (_, _, Loss::FusedLinearCe) => 0,
        // the last chunk first: its nll and log-softmax fp32 gradients and the cast back
        (_, _, Loss::LinearCe { .. }) => ce_chunk * v * (8 + if c == 4 { 0 } else { c }),
    };
    // a head run per chunk makes one weight-sized gradient per chunk. Every loss op was created
    // after every chunk's projection, so the engine (ready nodes by decreasing sequence number)
    // runs the whole loss backward first: all chunks' logits gradients exist in the compute
    // dtype. Then the chunks' projections run backward one by one, and each weight gradient goes
    // to the engine's input buffer of the weight's AccumulateGrad, which runs once, after the
    // last use (with tied embeddings after the embedding's backward): the second chunk's sum is
    // `first + new` out of place (the first is a `t()` view), three weight-sized tensors at once,
    // with the logits gradients of the N-2 chunks not yet run and two chunks' input gradients
    // (waiting for the split's backward). Later sums have fewer logits gradients beside them.
    let chunked_head =
        matches!(ctx.loss, Loss::Chunked { .. } | Loss::ChunkedNative { .. } | Loss::LinearCe { .. })
            && !matches!(m.family, Family::Megatron | Family::Bert | Family::Vit)
            && m.head == crate::model::Head::CausalLm;
    let sums_chunks = chunked_head && ctx.full && pieces > 1 && v > 0;
    let weight_grad = crate::units::round_alloc(v * h * c);
    let (head_chunk_sum_transient, head_chunk_kept) = match (sums_chunks, ctx.loss) {
        // LinearCrossEntropyLoss runs each chunk's projection, cast and loss one after the other,
        // so backward finishes the last chunk (its log-softmax freed) before the next: at the
        // second chunk's weight-gradient sum only those two chunks' input gradients are alive
        // beside the three weight-sized tensors
        (true, Loss::LinearCe { .. }) => {
            (3 * weight_grad + 2 * ce_chunk * h * c, head_released.saturating_sub(2 * ce_chunk * v * 4))
        }
        (true, _) => {
            let logits_grads = (pieces - 2) * chunk * v * c;
            let transient = 3 * weight_grad + logits_grads + 2 * chunk * h * c;
            // tensor_split / split along the sequence: views of one storage when b == 1, else
            // strided chunks the matmul's reshape copies (each freed by its chunk's backward);
            // autocast casts each chunk on its own
            let kept = if ctx.b == 1 && !ctx.amp { ctx.ts * h * c } else { (pieces - 2) * chunk * h * c };
            (transient, kept)
        }
        (false, _) => (0, 0),
    };
    // the tensors of those transients, as the formulas above make them: a piece of logits in the
    // compute dtype (`low`), its fp32 copy or log-softmax (`f32`), `up` of the copies
    let (low, f32) = (chunk * v * c, chunk * v * 4);
    let (ce_low, ce_f32) = (ce_chunk * v * c, ce_chunk * v * 4);
    let whole = |e: u64| Pieces::of(t * v * e, 2);
    let logits_head = matches!(m.head, crate::model::Head::CausalLm | crate::model::Head::MaskedLm);
    let head_pieces = if !logits_head {
        HeadPieces::default()
    } else {
        HeadPieces {
            forward: match (m.family, ctx.loss) {
                _ if ctx.compiled_loss && m.family != Family::Megatron => Pieces::default(),
                // the fp32 copies are kept (before PyTorch 1.11): the half logits alone
                (Family::Bert | Family::Vit, _) | (_, Loss::Hf) if lsm_input => Pieces::of(t * v * c, up),
                (_, Loss::Chunked { .. }) if lsm_input => Pieces::of(low, pieces * up),
                (_, Loss::LinearCe { .. }) if lsm_input => Pieces::of(ce_low, up),
                (Family::Megatron | Family::Bert | Family::Vit, _) | (_, Loss::Hf) => {
                    Pieces::two(t * v * c, 1, t * v * 4, if m.family == Family::Megatron { 1 } else { up })
                }
                (_, Loss::Chunked { .. }) => Pieces::two(low, pieces, f32, up),
                (_, Loss::ChunkedNative { .. }) => Pieces::of(low, pieces * up),
                (_, Loss::FusedLinearCe) => Pieces::of(low, 1),
                (_, Loss::LinearCe { .. }) => Pieces::two(ce_low, 1, ce_f32, up),
            },
            saved: match (m.family, ctx.loss) {
                (Family::Megatron | Family::Bert | Family::Vit, _) | (_, Loss::Hf) if !ctx.compiled_loss => {
                    t * v * 4
                }
                _ if ctx.compiled_loss => low,
                (_, Loss::Chunked { .. } | Loss::ChunkedNative { .. }) => f32,
                (_, Loss::LinearCe { .. }) => ce_f32,
                (_, Loss::FusedLinearCe) => 0,
                (_, Loss::Hf) => t * v * 4,
            },
            loss_backward: match (m.family, m.head, ctx.loss) {
                (Family::Bert, crate::model::Head::MaskedLm, _) => whole(if ctx.amp { 4 } else { c }),
                (Family::Bert, _, _) => Pieces::of(ctx.b * v * 4, 2),
                (_, _, _) if v == 0 => Pieces::default(),
                (Family::Megatron | Family::Vit, _, _) => whole(4),
                (_, _, _) if ctx.compiled_loss => Pieces::of(low, 1),
                (_, _, Loss::Hf) => whole(4),
                (_, _, Loss::Chunked { .. }) => Pieces::two(f32, 2, low, up),
                (_, _, Loss::ChunkedNative { .. }) => Pieces::of(f32, 2),
                (_, _, Loss::FusedLinearCe) => Pieces::default(),
                (_, _, Loss::LinearCe { .. }) => Pieces::two(ce_f32, 2, ce_low, up),
            },
            chunk_sum: match (sums_chunks, ctx.loss) {
                (true, Loss::LinearCe { .. }) => Pieces::of(weight_grad, 3),
                (true, _) => Pieces::two(weight_grad, 3, low, pieces - 2),
                (false, _) => Pieces::default(),
            },
        }
    };
    ActivationModel {
        mix: if n_kinds > 1 { mix } else { LayerMix::default() },
        full_layer,
        first_layer: first,
        selective_layer,
        layer_input_bytes: ctx.ts * h * r,
        shared_layer_bytes: shared,
        shared_checkpoint_bytes,
        freed_before_attention_backward: freed_last,
        top,
        top_input,
        head_released_bytes: head_released,
        mlp_backward_transient: mlp_t,
        attention_backward_transient: attn_t,
        loss_backward_transient,
        head_forward_transient,
        head_chunk_sum_transient,
        head_chunk_kept,
        head_pieces,
        infer_persistent,
        infer_layer_peak,
        infer_head_peak,
        head_dequant,
        layer_dequant,
        kv_per_layer_elems: 2 * t * kvw,
    }
}
