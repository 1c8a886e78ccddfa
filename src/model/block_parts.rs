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
    /// The routed experts work in a latent width, between a down and an up projection
    /// (Nemotron-H's `moe_latent_size`; 0: none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub latent: u64,
    /// Identity ("zero-computation") experts the router scores beside the routed ones
    /// (LongCat-Flash's `zero_expert_num`): a token sent there keeps itself, times its weight.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub zero_experts: u64,
    /// The router Linear has a bias (gpt-oss; LongCat-Flash's `router_bias`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub router_bias: bool,
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
            latent: 0,
            zero_experts: 0,
            router_bias: false,
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

/// A Mamba2 mixer (state space duality): `in_proj` to the gate `z`, `x·B·C` and `dt`; a
/// depthwise causal conv1d over `x·B·C`; the chunked scan over `heads` heads of `head_dim`
/// channels with a state of `state` per channel (`B`, `C` shared by `groups` groups of heads);
/// a gated RMSNorm per group; `out_proj`. transformers' `Mamba2Mixer` and its copies (Bamba,
/// Nemotron-H, Granite-4.0-H, Falcon-H1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ssm {
    /// Heads (`num_heads`, `mamba_n_heads`).
    pub heads: u64,
    /// Channels per head (`head_dim`, `mamba_d_head`).
    pub head_dim: u64,
    /// State per channel (`state_size`, `ssm_state_size`, `mamba_d_state`).
    pub state: u64,
    /// Groups sharing `B` and `C` (`n_groups`, `mamba_n_groups`).
    pub groups: u64,
    /// Positions per chunk of the scan (`chunk_size`).
    pub chunk: u64,
    /// Taps of the causal convolution (`conv_kernel`, `mamba_d_conv`).
    pub conv_kernel: u64,
    /// The convolution has a bias (`use_conv_bias`, `mamba_conv_bias`).
    pub conv_bias: bool,
    /// `in_proj` and `out_proj` have biases (`use_bias`, `mamba_proj_bias`).
    pub proj_bias: bool,
    /// A gated RMSNorm before `out_proj` (Falcon-H1's `mamba_rms_norm: false` has none: the scan
    /// output is multiplied by `silu(z)`).
    pub gated_norm: bool,
    /// The residual stream is kept in fp32 whatever the model's dtype (`residual_in_fp32`:
    /// Mamba2's default, Nemotron-H's option).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub residual_fp32: bool,
    /// The mixer runs in every layer, those with attention too (Zamba2's hybrid layers).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub beside_attention: bool,
}

/// Zamba2's shared transformer blocks: how many distinct ones the hybrid layers take in turn,
/// and the low-rank adapters each hybrid layer adds to them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Zamba {
    /// Distinct shared blocks (`num_mem_blocks`).
    pub shared_blocks: u64,
    /// The adapters' rank (`adapter_rank`).
    pub adapter_rank: u64,
    /// q, k and v have adapters too (`use_shared_attention_adapter`); gate_up always has one.
    pub attention_adapters: bool,
}

impl Ssm {
    /// The scan's width, `heads · head_dim` (`intermediate_size` of the mixer).
    pub const fn inner(&self) -> u64 {
        self.heads * self.head_dim
    }

    /// Channels of the convolution: `x`, `B` and `C`.
    pub const fn conv_dim(&self) -> u64 {
        self.inner() + 2 * self.groups * self.state
    }

    /// Width of `in_proj`'s output: `z`, `x·B·C`, `dt`.
    pub const fn proj(&self) -> u64 {
        self.inner() + self.conv_dim() + self.heads
    }
}

/// A Mamba (1) mixer, the selective scan: `in_proj` to x and the gate z; a depthwise causal
/// conv1d over x; `x_proj` to dt (rank `dt_rank`), B and C (`state` each); `dt_proj`; the scan
/// over `inner` channels with a state of `state` per channel; `out_proj`. transformers'
/// `MambaMixer` and Jamba's (which normalises dt, B and C).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mamba {
    /// Channels (`intermediate_size`, `mamba_expand · hidden_size`).
    pub inner: u64,
    /// State per channel (`state_size`, `mamba_d_state`).
    pub state: u64,
    /// Rank of dt (`time_step_rank`, `mamba_dt_rank`).
    pub dt_rank: u64,
    /// Taps of the causal convolution (`conv_kernel`, `mamba_d_conv`).
    pub conv_kernel: u64,
    /// The convolution has a bias.
    pub conv_bias: bool,
    /// `in_proj` and `out_proj` have biases (`use_bias`, `mamba_proj_bias`).
    pub proj_bias: bool,
    /// dt, B and C go through RMSNorms (Jamba's `dt_layernorm`, `b_layernorm`, `c_layernorm`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dt_norms: bool,
    /// The residual stream is kept in fp32 (`residual_in_fp32`: Mamba's default).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub residual_fp32: bool,
}

/// A gated DeltaNet mixer (Qwen3-Next's `linear_attention` layers): `in_proj_qkvz` and
/// `in_proj_ba`; a depthwise causal conv1d over q·k·v; L2-normalised q and k; the gated delta rule
/// over chunks of 64 with a `(k_dim, v_dim)` state per value head; a gated RMSNorm per head;
/// `out_proj`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delta {
    /// Query/key heads (`linear_num_key_heads`).
    pub k_heads: u64,
    /// Value heads (`linear_num_value_heads`).
    pub v_heads: u64,
    /// Query/key width per head (`linear_key_head_dim`).
    pub k_dim: u64,
    /// Value width per head (`linear_value_head_dim`).
    pub v_dim: u64,
    /// Taps of the causal convolution (`linear_conv_kernel_dim`).
    pub conv_kernel: u64,
    /// Kimi Delta Attention (Kimi-Linear's `linear_attention` layers): separate q/k/v
    /// projections, a decay per channel (`(b, s, heads, k_dim)`, from a low-rank `f_a → f_b`)
    /// instead of one per head, a low-rank output gate, and as many key as value heads.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kda: bool,
}

impl Delta {
    /// q's (and k's) width, `k_heads · k_dim`.
    pub const fn key_width(&self) -> u64 {
        self.k_heads * self.k_dim
    }

    /// v's (and z's) width, `v_heads · v_dim`.
    pub const fn value_width(&self) -> u64 {
        self.v_heads * self.v_dim
    }

    /// Channels of the convolution: q, k and v.
    pub const fn conv_dim(&self) -> u64 {
        2 * self.key_width() + self.value_width()
    }
}

/// DeBERTa-v2's disentangled attention (`relative_attention`): besides content-to-content scores,
/// content-to-position (`c2p`) and position-to-content (`p2c`) scores against `2·span` relative
/// position embeddings, gathered at each token pair's (log-bucketed) relative position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Disentangled {
    /// Relative positions on either side (`position_buckets`, else `max_relative_positions`,
    /// else `max_position_embeddings`): the position embeddings have `2·span` rows.
    pub span: u64,
    /// Content-to-position scores (`"c2p"` in `pos_att_type`).
    pub c2p: bool,
    /// Position-to-content scores (`"p2c"`).
    pub p2c: bool,
    /// The positions go through the content's query and key projections (`share_att_key`), not
    /// their own `pos_query_proj` / `pos_key_proj`.
    pub shared_keys: bool,
    /// A LayerNorm on the relative embeddings (`norm_rel_ebd: "layer_norm"`).
    pub norm: bool,
    /// The kernel of the convolution beside the first layer (`conv_kernel_size`; 0: none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub conv_kernel: u64,
    /// Its groups (`conv_groups`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub conv_groups: u64,
    /// Its activation (`conv_act`) is tanh (the default), which keeps its output; else one that
    /// keeps its input (GELU).
    #[serde(default)]
    pub conv_tanh: bool,
    /// Absolute position embeddings added to the input (`position_biased_input`).
    #[serde(default)]
    pub absolute: bool,
}

impl Disentangled {
    /// Rows of the relative position embeddings.
    pub fn rows(&self) -> u64 {
        2 * self.span
    }
}
