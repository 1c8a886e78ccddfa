//! The estimator's view of a block walk: the scenario quantities every op rule reads ([`Ctx`]),
//! and what the walk yields ([`ActivationModel`]: saves per block kind, the top of the model, the
//! transients of the peak). The walk itself is [`crate::engine`]: op kinds with their autograd
//! rules, and families (in [`crate::model::families`]) as short op lists.

use super::saved::Saved;
use super::scenario::{AttentionImpl, Lora, Scenario};
use crate::model::{Family, LinearRole, TransformerSpec};
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
    /// All weights train (full fine-tuning).
    pub full: bool,
    pub lora: Option<Lora>,
    /// The attention implementation asked for.
    pub attn: AttentionImpl,
    /// Selective recomputation is asked for (the recomputed block's saves are walked too).
    pub selective: bool,
    /// How the logits and the loss are computed.
    pub loss: crate::estimate::stack::Loss,
    /// The loss is compiled (inductor's fused cross-entropy).
    pub compiled_loss: bool,
    /// A bitsandbytes 4-bit base: bytes per element of the input `MatMul4Bit` receives (and keeps)
    /// after `Linear4bit` casts it to `bnb_4bit_compute_dtype`.
    pub bnb4_input: Option<u64>,
    /// A 4-bit (NF4) base or bitsandbytes 4-bit weights: bytes per weight element alive while a
    /// matmul dequantizes it (bitsandbytes' `dequantize_4bit(B, state).to(A.dtype)`: the weight in
    /// `quant_state.dtype`, plus its cast when that is not the compute dtype; torchao's
    /// `weight.to(input.dtype)`).
    pub nf4_dequant: Option<u64>,
    /// The LM head is a 4-bit Linear too (Lightning's plugin converts every `nn.Linear`).
    pub head_bnb4: bool,
    /// Bytes per element of the LoRA adapters' weights (4 for PEFT's fp32 adapters).
    pub adapter_elem: u64,
    /// Whose model code runs (litgpt's Llama-like block differs from transformers').
    pub model_code: crate::estimate::stack::ModelCode,
    /// The PyTorch release class (which ops keep their input for backward).
    pub torch: crate::estimate::stack::Torch,
    /// The half compute dtype is fp16 (CUDA's softmax upcasts fp16 in its kernel, not by a copy).
    pub f16: bool,
    /// Every block weight receives a gradient although LoRA freezes it: FSDP1 with the adapters
    /// inside each block's flat parameter (`--fsdp-impl fsdp1-shared`), whose views all require
    /// grad. The embeddings and head (the root unit, nothing trainable) stay frozen.
    pub block_weights_grad: bool,
}

impl Ctx {
    pub fn new(sc: &Scenario) -> Self {
        let c = sc.precision.compute_dtype().bytes(1);
        let amp = sc.precision.is_amp();
        // a 4-bit (NF4) base: the dtype its matmuls compute in
        let nf4_base =
            matches!(sc.base_quant, super::scenario::BaseQuant::Nf4 | super::scenario::BaseQuant::Nf4NoDq);
        let compute = sc.stack.bnb_compute_dtype.unwrap_or(sc.precision.compute_dtype());
        let nf4 = nf4_base.then(|| compute.bytes(1));
        // bitsandbytes 4-bit weights in inference: a checkpoint's own format, when no base
        // format is asked for
        let bnb4_checkpoint = sc.mode == super::Mode::Infer
            && sc.base_quant == super::scenario::BaseQuant::None
            && matches!(
                sc.model.transformer().and_then(|t| t.quant),
                Some(crate::model::quant::WeightFormat::Bnb4 { .. })
            );
        // what a 4-bit matmul holds while it dequantizes, per weight element: the weight in
        // `quant_state.dtype` (fp16 when quantized from fp16, else the model's weight dtype) and,
        // when that is not the compute dtype (`bnb_4bit_compute_dtype`), its cast (`.to(A.dtype)`)
        let dequant = (nf4_base || bnb4_checkpoint).then(|| {
            // otherwise the dtype the model was loaded in: the precision's half dtype (a quantized
            // base is loaded in it also under autocast), fp32 for an fp32 run
            let from = if sc.stack.bnb.from_fp16() {
                crate::units::DType::F16
            } else {
                sc.precision.compute_dtype()
            };
            from.bytes(1) + if from == compute { 0 } else { compute.bytes(1) }
        });
        // transformers 5 has no SDPA path for Gemma 2 (soft-capping) and gpt-oss (sinks), and
        // PyTorch before 2.0 has no SDPA at all: eager runs
        let attention = match (sc.attention, sc.model.transformer().map(|t| t.family)) {
            (AttentionImpl::Sdpa, Some(Family::Gemma2 | Family::GptOss)) => AttentionImpl::Eager,
            (AttentionImpl::Sdpa, _) if !sc.stack.torch.has_sdpa() => AttentionImpl::Eager,
            (a, _) => a,
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
            // Megatron keeps half activations under mixed precision
            r: if amp && sc.model.transformer().is_none_or(|t| t.family != Family::Megatron) { 4 } else { c },
            amp,
            full: sc.lora.is_none(),
            lora: sc.lora,
            attn: attention,
            selective: sc.checkpointing == super::scenario::Checkpointing::Selective,
            loss: sc.stack.loss,
            compiled_loss: sc.stack.compiled_loss,
            // torchtune's QLoRA runs torchao's NF4Tensor through `linear_nf4`, which keeps only the
            // weight: the input rule is bitsandbytes' own
            bnb4_input: nf4.filter(|_| sc.stack.framework != Some(super::stack::Framework::Torchtune)),
            nf4_dequant: dequant,
            head_bnb4: (nf4_base || bnb4_checkpoint) && sc.stack.bnb.quantizes_head(),
            adapter_elem: super::states::adapter_dtype(sc).bytes(1),
            model_code: sc.stack.model_code,
            torch: sc.stack.torch,
            f16: sc.precision.compute_dtype() == crate::units::DType::F16,
            block_weights_grad: super::fsdp::block_weights_grad(sc),
        }
    }

    /// The quantities a block is walked with: under [`Ctx::block_weights_grad`] its weights
    /// train as in full fine-tuning (the adapters' own tensors are walked as well).
    pub(crate) fn for_block(&self) -> Self {
        Self { full: self.full || self.block_weights_grad, ..*self }
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
/// The tensors a transient (or a run of saves) is made of, for the allocator replay: up to two
/// sizes with how many of each, made in that order; what they leave of the bytes is one tensor
/// made before them. The default is no breakdown (one tensor).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pieces(pub [(u64, u64); 2]);

impl Pieces {
    /// `n` tensors of `bytes`.
    pub const fn of(bytes: u64, n: u64) -> Self {
        Self([(bytes, n), (0, 0)])
    }

    /// `n` tensors of `bytes`, then `m` of `then`.
    pub const fn two(bytes: u64, n: u64, then: u64, m: u64) -> Self {
        Self([(bytes, n), (then, m)])
    }

    /// The sizes of the tensors that make up `total` bytes, in the order they are made: the
    /// remainder first (when the listed tensors do not fill it), then the listed ones that fit.
    pub fn sizes(self, total: u64) -> Vec<u64> {
        let mut listed = Vec::new();
        let mut left = total;
        for (b, n) in self.0 {
            if b == 0 {
                continue;
            }
            let fit = n.min(left / b).min(1 << 12);
            listed.extend(std::iter::repeat_n(b, fit as usize));
            left -= fit * b;
        }
        let mut out = Vec::with_capacity(listed.len() + 1);
        if left > 0 {
            out.push(left);
        }
        out.extend(listed);
        out
    }
}

/// The head's and the loss's tensors (pieces of logits, their fp32 copies and log-softmax, the
/// head weight's gradients), as [`Pieces`] of the transients and saves of the step's head events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeadPieces {
    /// The head forward's transient: the logits (a piece a chunk) and one piece's fp32 copy.
    pub forward: Pieces,
    /// What the loss keeps, a tensor a piece (its fp32 log-softmax); 0: no breakdown.
    pub saved: u64,
    /// The loss backward's transient: one piece's nll and log-softmax gradients (fp32), the cast
    /// back.
    pub loss_backward: Pieces,
    /// A chunked head's weight-gradient sum: three weight-sized tensors, then the unrun chunks'
    /// logits gradients.
    pub chunk_sum: Pieces,
}

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
    /// A head run once per chunk of the sequence (torchtune's chunked output, litgpt's
    /// `lm_head_chunk_size`) with a trained weight: the temporaries alive when the second chunk's
    /// weight gradient is summed into the first (the autograd engine's input buffer of the weight:
    /// the first gradient, the new one and their sum, three weight-sized tensors, out of place
    /// because the first arrives as a view), with the logits gradients of the chunks not yet run
    /// backward and the two chunks' input gradients. 0 for a head run once or a frozen head.
    pub head_chunk_sum_transient: u64,
    /// The tensors of the head transients above and of the loss's saves (allocator replay).
    pub head_pieces: HeadPieces,
    /// At that moment, the head inputs still kept (the whole hidden state when the chunks are
    /// views of it, else the copies of the chunks not yet run backward).
    pub head_chunk_kept: u64,
    /// Inference: bytes alive during the whole forward (embedding outputs, masks, rotary tables).
    pub infer_persistent: u64,
    /// Inference: most bytes one block holds at once, not counting the KV cache.
    pub infer_layer_peak: u64,
    /// Inference: bytes at the LM head (final hidden state and logits).
    pub infer_head_peak: u64,
    /// A 4-bit LM head's weight while its matmul dequantizes it (0 unless the head is 4-bit and
    /// its rows dequantize); in backward too, once per chunk.
    pub head_dequant: u64,
    /// A block's largest 4-bit projection while its matmul dequantizes it (0 when none does).
    pub layer_dequant: u64,
    /// KV-cache bytes per block (compute dtype; the caller rescales for another cache dtype).
    pub kv_per_layer_elems: u64,
}

/// Builds the activation model of a transformer scenario.
pub(crate) fn transformer(sc: &Scenario, m: &TransformerSpec) -> ActivationModel {
    let ctx = Ctx::new(sc);
    crate::engine::walk::activation_model(&ctx, m)
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

#[cfg(test)]
mod tests {
    use super::Pieces;

    #[test]
    fn pieces_list_the_named_tensors_after_what_they_leave() {
        // torchtune's chunked loss in bf16: eight chunks of logits, then one chunk's fp32 copy
        let p = Pieces::two(2, 8, 4, 1);
        assert_eq!(p.sizes(20), vec![2, 2, 2, 2, 2, 2, 2, 2, 4]);
        // more bytes than the tensors named: the rest is one tensor, made first
        assert_eq!(Pieces::of(4, 2).sizes(11), vec![3, 4, 4]);
        // fewer: as many whole tensors as fit, in order
        assert_eq!(Pieces::two(4, 3, 1, 2).sizes(9), vec![4, 4, 1]);
        assert_eq!(Pieces::default().sizes(7), vec![7]);
        assert!(Pieces::of(0, 1).sizes(0).is_empty());
    }
}
