//! What a family declares besides its ops: the op kinds its blocks, embedding and head use (the
//! facts the walk's rules read), its KV layout, its PEFT module names, litgpt's shape for it.

use crate::engine::ops::{Act, InferKind, LossKind, MlpBackward, NormKind, Softmax};

/// The shape litgpt's `GPT` gives a family it covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Litgpt {
    /// Llama-like: its RMSNorm, `LLaMAMLP`.
    Llama,
    /// Phi-1.5/2 and GPT-NeoX: LayerNorm, parallel residual, `GptNeoxMLP`.
    Parallel,
}

/// The module names (regex pieces) PEFT's `target_modules` matches for each LoRA target.
#[derive(Clone, Copy, Debug)]
pub struct PeftModules {
    /// One fused q/k/v projection adapted for any of q, k, v (else the three below).
    pub qkv: Option<&'static str>,
    /// Query, key and value projections.
    pub q: &'static str,
    /// Key projection.
    pub k: &'static str,
    /// Value projection.
    pub v: &'static str,
    /// Attention output projection.
    pub o: &'static str,
    /// One fused gate/up projection adapted for either (else the two below).
    pub gate_up: Option<&'static str>,
    /// Gate projection.
    pub gate: &'static str,
    /// Up projection.
    pub up: &'static str,
    /// Down projection.
    pub down: &'static str,
}

impl PeftModules {
    /// transformers' Llama-like names.
    pub const LLAMA: Self = Self {
        qkv: None,
        q: "q_proj",
        k: "k_proj",
        v: "v_proj",
        o: "o_proj",
        gate_up: None,
        gate: "gate_proj",
        up: "up_proj",
        down: "down_proj",
    };
}

/// Rotary position embeddings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rope {
    /// Learned positions or none (GPT-2, BERT, ViT, Megatron).
    None,
    /// Rotary over `rope_dim` of each head, `(s, d)` cos/sin tables.
    Full,
    /// The two halves rotated with `(s, d/2)` tables (gpt-oss); q is built head-major.
    Halves,
    /// Llama 4's complex rotary: `view_as_complex(q.float()) * freqs_cis`, one `(s, d/2)`
    /// complex64 table (the size of fp32 cos/sin over `d/2` columns), q and k cast back.
    Complex,
    /// Rotary over `rope_dim` of each head, then `torch.cat([rotated, pass], dim=-1)` even when
    /// the pass-through part is empty (HF's Phi-3 and GPT-NeoX `apply_rotary_pos_emb`): q and k
    /// come out of `cat` as fresh head-major `(b, h, s, d)` storages at any rotary fraction.
    Cat,
}

/// A mask every checkpointed block receives (see [`OpKinds::checkpoint_mask`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckpointMask {
    /// None, or one made inside each block.
    None,
    /// GPT-2's eager causal mask, in the stream's dtype (SDPA gets none).
    Eager,
    /// DeBERTa's product of the float attention mask with itself: fp32 whatever the dtype.
    Fp32,
}

/// Where inference keeps its cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvLayout {
    /// K and V per KV head (MLA models: the latent and the shared rotary key).
    PerKvHead,
    /// K and V broadcast to every query head (Falcon's new decoder architecture).
    Broadcast,
    /// An encoder: no cache.
    None,
}

/// The op kinds a family uses: what the walk's rules (in [`crate::engine::ops`]) are given.
#[derive(Clone, Copy, Debug)]
pub struct OpKinds {
    /// Rotary embeddings.
    pub rope: Rope,
    /// Gated MLP (`act(gate) * up`) or plain (`act(fc)`).
    pub gated: bool,
    /// The MLP's activation.
    pub act: Act,
    /// gate and up come from one fused projection.
    pub fused_gate_up: bool,
    /// What an MLP's backward allocates at once.
    pub mlp_backward: MlpBackward,
    /// Eager attention's softmax.
    pub softmax: Softmax,
    /// SDPA always gets an explicit mask (the causal mask is materialised) and takes grouped K/V
    /// as they are (Falcon).
    pub always_masked: bool,
    /// A batch with images passes every layer an explicit `(b, 1, s, s)` mask (Gemma 3: each
    /// image attends to itself bidirectionally, from `token_type_ids`).
    pub images_masked: bool,
    /// Learned attention sinks (gpt-oss).
    pub sinks: bool,
    /// transformers has no SDPA path for it (soft-capping, sinks): eager runs where SDPA is asked.
    pub eager_only: bool,
    /// The attention is the family's own eager code (BLOOM's ALiBi, DeBERTa's disentangled
    /// attention), not transformers' attention interface: eager runs whatever is asked.
    pub own_attention: bool,
    /// BLOOM's eager attention in inference: the raw scores stay named beside the masked ones,
    /// the fused q/k/v output beside q's copy, and the block returns its probabilities, which
    /// the model holds through the next block.
    pub named_scores: bool,
    /// The residual stream stays half under mixed precision (Megatron).
    pub half_residual: bool,
    /// The MoE router works on an fp32 copy of the tokens (DeepSeek).
    pub router_fp32: bool,
    /// The router's weight is stored in the model's dtype and `w.float()` makes an fp32 copy,
    /// kept by the product (LongCat-Flash's `classifier`, not kept in fp32 under bf16).
    pub router_weight_cast: bool,
    /// The routing weights reach the experts in fp32 (sigmoid scores not cast back: MiniMax-M2,
    /// GLM-4.5), so each routed row's weighted output is an fp32 tensor.
    pub routing_fp32: bool,
    /// The experts' clamped SwiGLU (gpt-oss).
    pub clamped_swiglu: bool,
    /// Every token goes through every expert (Llama 4), not only its top k.
    pub moe_all_experts: bool,
    /// The loss.
    pub loss: LossKind,
    /// The forward working set of a block in inference.
    pub inference: InferKind,
    /// A `(b, 1, s, s)` mask every checkpointed block receives as an argument: the checkpoint
    /// keeps it (one storage for all).
    pub checkpoint_mask: CheckpointMask,
    /// A copy of the embeddings' output every checkpointed layer receives (Zamba2's
    /// `original_hidden_states`, one storage for all).
    pub checkpoint_shares_embeddings: bool,
    /// A fused q/k/v projection takes one LoRA adapter for any of q, k, v (GPT-2's `c_attn`).
    pub qkv_one_adapter: bool,
    /// Where inference keeps its cache.
    pub kv: KvLayout,
    /// The final norm before the head.
    pub final_norm: NormKind,
}

impl OpKinds {
    /// A Llama-style decoder's op kinds.
    pub const DECODER: Self = Self {
        rope: Rope::Full,
        gated: true,
        act: Act::Silu,
        fused_gate_up: false,
        mlp_backward: MlpBackward::Widths,
        softmax: Softmax::Fp32,
        always_masked: false,
        images_masked: false,
        sinks: false,
        own_attention: false,
        named_scores: false,
        eager_only: false,
        half_residual: false,
        router_fp32: false,
        router_weight_cast: false,
        routing_fp32: false,
        clamped_swiglu: false,
        moe_all_experts: false,
        loss: LossKind::CausalLm,
        inference: InferKind::Decoder,
        checkpoint_mask: CheckpointMask::None,
        checkpoint_shares_embeddings: false,
        qkv_one_adapter: false,
        kv: KvLayout::PerKvHead,
        final_norm: NormKind::Rms,
    };
}
