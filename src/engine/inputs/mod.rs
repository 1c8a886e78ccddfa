//! What a walk reads: the scenario's quantities ([`Ctx`]: tokens, widths, the dtype recipe, the
//! kernels), the choices behind them ([`choices`]: attention, LoRA, loss, model code, PyTorch
//! release) and the categories of what is kept ([`saved`]). Below the op rules: nothing here
//! knows a family or a scenario.

pub mod choices;
pub mod saved;

use crate::model::LinearRole;
pub use choices::{AttentionImpl, Lora, Loss, MixerImpl, ModelCode, Targets, Torch};

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
    /// Sequences in the micro-batch.
    pub batch: u64,
    /// Tokens per sequence.
    pub seq: u64,
    /// Input values of one sample's image (`channels · h · w`); 0 for text.
    pub pixels: u64,
    /// The token embeddings get image features `masked_scatter`ed in (a vision-language batch):
    /// its backward keeps the `(b, s, 1)` placeholder mask.
    pub image_mask: bool,
    /// Tokens in the micro-batch, `batch · seq`.
    pub tokens: u64,
    /// Tokens of residual-stream tensors on this rank: `tokens / tp` under sequence parallelism.
    pub rank_tokens: u64,
    /// Bytes per element of half-precision compute (4 in pure fp32).
    pub compute_elem: u64,
    /// Bytes per element of the residual stream: fp32 under autocast, else `compute_elem`.
    pub residual_elem: u64,
    /// Autocast (mixed precision): fp32 weights and residual stream, half matmuls.
    pub amp: bool,
    /// All weights train (full fine-tuning).
    pub full: bool,
    /// LoRA adapters (a frozen base) or none.
    pub lora: Option<Lora>,
    /// The attention implementation asked for.
    pub attn: AttentionImpl,
    /// Selective recomputation is asked for (the recomputed block's saves are walked too).
    pub selective: bool,
    /// How the logits and the loss are computed.
    pub loss: Loss,
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
    pub model_code: ModelCode,
    /// The PyTorch release class (which ops keep their input for backward).
    pub torch: Torch,
    /// Which code runs the state-space mixers.
    pub mixer: MixerImpl,
    /// The half compute dtype is fp16 (CUDA's softmax upcasts fp16 in its kernel, not by a copy).
    pub f16: bool,
    /// Every block weight receives a gradient although LoRA freezes it: FSDP1 with the adapters
    /// inside each block's flat parameter (`--fsdp-impl fsdp1-shared`), whose views all require
    /// grad. The embeddings and head (the root unit, nothing trainable) stay frozen.
    pub block_weights_grad: bool,
}

impl Ctx {
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
