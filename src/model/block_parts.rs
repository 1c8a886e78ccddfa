//! The parts of a block that vary most between the 2024-2025 decoders: a mixture-of-experts
//! MLP (its experts, shared experts, router) and multi-head latent attention.

use super::is_zero;
use serde::{Deserialize, Serialize};

/// Mixture-of-experts block (Mixtral-style sparse MLP, with DeepSeek / Qwen-MoE shared experts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Moe {
    /// Routed experts per layer.
    pub experts: u64,
    /// Experts each token is routed to.
    pub top_k: u64,
    /// Always-active shared experts (DeepSeek `n_shared_experts`); their MLP is one gated MLP of
    /// `shared_intermediate_size` (Qwen-MoE `shared_expert_intermediate_size`).
    #[serde(default)]
    pub shared_experts: u64,
    /// Width of the shared-expert MLP (all shared experts together).
    #[serde(default)]
    pub shared_intermediate_size: u64,
    /// How tokens are routed.
    #[serde(default)]
    pub router: Router,
    /// Expert groups of a group-limited router (`n_group`; 0: none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub groups: u64,
    /// Groups a token's experts are chosen from (`topk_group`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub topk_group: u64,
    /// In training the tokens are multiplied in place by a uniform draw, once by the MoE block
    /// and once by its router (PhiMoE's `input_jitter_noise` > 0).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub input_jitter: bool,
}

impl Moe {
    /// A routed-only MoE (Mixtral).
    pub const fn routed(experts: u64, top_k: u64) -> Self {
        Self {
            experts,
            top_k,
            shared_experts: 0,
            shared_intermediate_size: 0,
            router: Router::Softmax,
            groups: 0,
            topk_group: 0,
            input_jitter: false,
        }
    }
}

/// The router of an MoE layer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Router {
    /// `softmax(fp32) → top-k → renormalise` (Mixtral, Qwen-MoE with `norm_topk_prob`).
    #[default]
    Softmax,
    /// `softmax(fp32) → top-k`, weights not renormalised (Qwen-MoE `norm_topk_prob: false`).
    SoftmaxNoNorm,
    /// DeepSeek-V3: `sigmoid(fp32)` scores + correction bias, group-limited top-k, renormalised
    /// and scaled; Qwen2-MoE-style sigmoid gate on the shared expert is not used.
    SigmoidGroup,
    /// `top-k` of the logits then `softmax` over the k (gpt-oss), router with a bias.
    TopkSoftmax,
    /// Qwen2-MoE: softmax routing plus a sigmoid-gated shared expert (`shared_expert_gate`).
    SoftmaxSharedGate,
    /// ERNIE-4.5: `softmax(fp32) → top-k`, renormalised by their sum clamped at `moe_norm_min`.
    SoftmaxClampedNorm,
    /// PhiMoE's sparsemixer: two rounds of a masked softmax over the logits in their dtype,
    /// an expert drawn (Gumbel) in each, its weight a gather of the softmax; always 2 experts.
    SparseMixer,
}

/// Multi-head latent attention numbers (DeepSeek-V2/V3 `q_lora_rank`, `kv_lora_rank`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mla {
    /// Rank of the query compression; 0 when queries are projected directly (V2-Lite).
    pub q_lora_rank: u64,
    /// Rank of the joint key/value compression.
    pub kv_lora_rank: u64,
    /// Per-head query/key dimensions without rotary.
    pub qk_nope_head_dim: u64,
    /// Per-head rotary dimensions (shared key part).
    pub qk_rope_head_dim: u64,
    /// Per-head value dimensions.
    pub v_head_dim: u64,
    /// DeepSeek-V3.2's sparse-attention indexer: its heads (`index_n_heads`; 0: none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub index_heads: u64,
    /// The indexer's head width (`index_head_dim`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub index_head_dim: u64,
}

impl Mla {
    /// Query/key width per head.
    pub fn qk_head_dim(&self) -> u64 {
        self.qk_nope_head_dim + self.qk_rope_head_dim
    }
}
