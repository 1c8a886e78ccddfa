//! Model descriptions: what the estimator needs to know about a network.
//!
//! A [`ModelSpec`] is either a transformer described by its architecture numbers (read from a
//! HuggingFace `config.json`, a preset, or a generic "N billion parameters" shape) or a plain layer
//! table (parameters and activation elements per sample per layer) for non-transformer networks.
//! Parameter counts are exact: every tensor is listed with its shape, tied embeddings once.

mod block_parts;
pub mod config;
pub mod generation;
pub mod header_check;
pub mod hf_config;
pub mod image_tokens;
pub mod net;
pub mod pixels;
pub mod preset;
pub mod quant;
pub mod safetensors;
mod vision;

pub use block_parts::{Delta, Disentangled, Mamba, Mla, Moe, Router, Ssm, Zamba};
use serde::{Deserialize, Serialize};
pub use vision::{VisionKind, VisionTower};

/// Which family's code the walk follows: a handle to one entry of the family registry
/// ([`crate::families`]), named in presets, scenario files and the JSON by its id (`"llama"`,
/// `"gpt2"`, …). The families layer gives it meaning (its ops, parameters, config keys); here it
/// is only compared and stored. The default is Llama.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Family(pub(crate) u8);

/// The task head on top of the base model, from the config's `architectures`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Head {
    /// Language-model head over the vocabulary with a shifted cross-entropy (`*ForCausalLM`).
    #[default]
    CausalLm,
    /// BERT masked-LM head: transform (dense + GELU + LayerNorm) and a decoder over the vocabulary.
    MaskedLm,
    /// Pooled classifier with `num_labels` outputs (`*ForSequenceClassification`).
    SequenceClassification {
        /// Number of classes.
        num_labels: u64,
    },
    /// The bare base model (no head, no loss).
    Base,
}

/// Architecture numbers of a transformer. Field names follow HuggingFace where they exist.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TransformerSpec {
    /// Which modelling code the activation model follows.
    pub family: Family,
    /// Task head.
    pub head: Head,
    /// Model width `h`.
    pub hidden_size: u64,
    /// Number of transformer blocks `L`.
    pub num_layers: u64,
    /// Attention heads `a`.
    pub num_heads: u64,
    /// Key/value heads (GQA/MQA); equals `num_heads` for multi-head attention.
    pub num_kv_heads: u64,
    /// Per-head width `d`.
    pub head_dim: u64,
    /// MLP width (per expert for MoE).
    pub intermediate_size: u64,
    /// Vocabulary size `V`.
    pub vocab_size: u64,
    /// Learned position embeddings (GPT-2, BERT); 0 for rotary models.
    pub max_position_embeddings: u64,
    /// The longest context the config declares (`max_position_embeddings` and its aliases), which
    /// rotary models do not store as a tensor; 0 when unknown. Serving's default `max_model_len`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub context_length: u64,
    /// BERT token-type embeddings; 0 elsewhere.
    #[serde(default)]
    pub type_vocab_size: u64,
    /// Input and output embeddings share one tensor.
    pub tie_word_embeddings: bool,
    /// Bias on q/k/v projections (Qwen2: true).
    #[serde(default)]
    pub qkv_bias: bool,
    /// Bias on the attention output projection.
    #[serde(default)]
    pub o_bias: bool,
    /// Bias on MLP projections.
    #[serde(default)]
    pub mlp_bias: bool,
    /// A bias on the LM head (PhiMoE's `lm_head_bias`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub head_bias: bool,
    /// The kernel of the short convolutions of the layers flagged [`layer::CONV`] (LFM2's
    /// `conv_L_cache`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub conv_kernel: u64,
    /// Biases on the short convolutions' projections and taps (LFM2's `conv_bias`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub conv_bias: bool,
    /// Dropout probability on attention probabilities.
    #[serde(default)]
    pub attention_dropout: f64,
    /// Dropout probability on residual branches (and embeddings for GPT-2/BERT).
    #[serde(default)]
    pub hidden_dropout: f64,
    /// Dropout on the embedding output (StarCoder2, Phi-3), where it differs from `hidden_dropout`.
    #[serde(default)]
    pub embedding_dropout: f64,
    /// Mixture of experts, if any.
    #[serde(default)]
    pub moe: Option<Moe>,
    /// Sliding-window attention span (Mistral); sequences longer than it need an explicit mask.
    /// With `layer_flags`, only the layers flagged [`layer::SLIDING`] use it.
    #[serde(default)]
    pub sliding_window: Option<u64>,
    /// Rotary dimensions per head (partial rotary: GPT-NeoX `rotary_pct`, Phi-3
    /// `partial_rotary_factor`); 0 means the whole head.
    #[serde(default)]
    pub rope_dim: u64,
    /// The rotary embedding's base and scaling (`rope_theta`, `rope_scaling` or transformers 5's
    /// `rope_parameters`), when the config names them: they move no memory, but a framework export
    /// that builds the model from flags (Megatron-LM) must carry them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rope: Option<RopeConfig>,
    /// Per-layer flags ([`layer`] bits: sliding-window attention, dense MLP in an MoE model, no
    /// rotary); empty when every layer is alike (and, with `sliding_window`, every layer slides).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layer_flags: Vec<u8>,
    /// Soft-capping of the attention logits (`cap·tanh(x/cap)`, Gemma 2), applied by eager attention.
    #[serde(default)]
    pub attn_softcap: Option<f64>,
    /// Soft-capping of the final logits (Gemma 2).
    #[serde(default)]
    pub final_softcap: Option<f64>,
    /// What the generic decoder could not model in this config (state-space or linear-attention
    /// layers, `layer_types`…), said wherever the estimate is shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmodelled: Option<String>,
    /// LayerNorm after each residual sum instead of before each sublayer (OPT's
    /// `do_layer_norm_before: false`, opt-350m).
    #[serde(default, skip_serializing_if = "is_false")]
    pub post_layer_norm: bool,
    /// A final LayerNorm before the head (OPT with pre-norm blocks).
    #[serde(default, skip_serializing_if = "is_false")]
    pub post_norm_final: bool,
    /// A multi-head attention pooling head after the final norm (SigLIP's `vision_use_head`: a
    /// learned probe attending over the tokens, a LayerNorm and an MLP).
    #[serde(default, skip_serializing_if = "is_false")]
    pub attention_pool: bool,
    /// The token embeddings' width when it differs from the hidden size (OPT's
    /// `word_embed_proj_dim`, with `project_in`/`project_out`); 0 otherwise.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub embed_dim: u64,
    /// q is scaled by a position-dependent temperature on layers without rotary (Llama 4's
    /// `attn_temperature_tuning`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub attn_temperature: bool,
    /// The logits are divided by a scale after the head (Granite's `logits / logits_scaling`,
    /// whatever its value): a second logits-sized tensor.
    #[serde(default, skip_serializing_if = "is_false")]
    pub logits_scaled: bool,
    /// MLP width of the dense layers of an MoE model (DeepSeek's first layers, Qwen3-MoE's
    /// `mlp_only_layers`); 0 when there are none or they use `intermediate_size`.
    #[serde(default)]
    pub dense_intermediate_size: u64,
    /// Multi-head latent attention (DeepSeek-V2/V3).
    #[serde(default)]
    pub mla: Option<Mla>,
    /// The Mamba2 mixer of the layers flagged [`layer::SSM`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssm: Option<Ssm>,
    /// Zamba2's shared transformer blocks (the layers without [`layer::SSM`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zamba: Option<Zamba>,
    /// The gated DeltaNet mixer of the layers flagged [`layer::SSM`] in a model without a Mamba2
    /// mixer (Qwen3-Next's `linear_attention` layers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<Delta>,
    /// DeBERTa-v2's disentangled attention.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disentangled: Option<Disentangled>,
    /// Attention sublayers in each attending block, each with its own KV cache (LongCat-Flash's
    /// decoder layers hold two MLAs); 0 reads as 1.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attn_per_block: u64,
    /// Learned positions the model never reaches: RoBERTa counts positions from its padding id
    /// (`padding_idx + 1` of `max_position_embeddings` are unused, so 514 allow 512 tokens).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub position_offset: u64,
    /// The Mamba (1) mixer of the layers flagged [`layer::MAMBA`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mamba: Option<Mamba>,
    /// Parallel attention and MLP on the same input (GPT-NeoX `use_parallel_residual`, Falcon
    /// `parallel_attn`), with this many input norms (1 or 2).
    #[serde(default)]
    pub parallel_norms: u64,
    /// A norm on each head of q and k (Phi's `qk_layernorm`, GLM-4.5's `use_qk_norm`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub qk_layernorm: bool,
    /// The MLP activation is transformers' `gelu_new` written out in elementwise ops (Phi's
    /// default `hidden_act`), not one fused GELU kernel.
    #[serde(default, skip_serializing_if = "is_false")]
    pub gelu_new: bool,
    /// A vision model's patch grid (ViT, DINOv2): its tokens come from the image size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patches: Option<pixels::Patches>,
    /// A vision tower in front of the language model (multimodal checkpoints): parameters counted.
    #[serde(default)]
    pub vision: Option<VisionTower>,
    /// Weight format of a quantized checkpoint (`quantization_config`).
    #[serde(default)]
    pub quant: Option<crate::model::quant::WeightFormat>,
    /// `model_type` of an architecture without its own family (estimated as the generic decoder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unvalidated_type: Option<String>,
    /// The config's own `model_type` (top level), when read from a `config.json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hf_model_type: Option<String>,
    /// Parameters the family's tensor list does not describe (the encoder-decoder part of t5 /
    /// whisper read as a generic decoder), counted as one vector group.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub extra_params: u64,
    /// Tensors of the family's list that the checkpoint's safetensors header does not hold
    /// (`[rows, cols, count]`, as the family lists them): left out of the parameter groups, so
    /// the count is the header's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub absent_tensors: Vec<[u64; 3]>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A rotary embedding's base and scaling, as the model's config states them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RopeConfig {
    /// `rope_theta`, the base of the rotary frequencies.
    pub theta: f64,
    /// `rope_scaling` (`rope_type` other than `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaling: Option<RopeScaling>,
}

/// `rope_scaling`: the context-extension rule and its numbers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RopeScaling {
    /// `rope_type` (`llama3`, `linear`, `dynamic`, `yarn`, …).
    pub rope_type: String,
    /// `factor`.
    pub factor: f64,
    /// `low_freq_factor` (llama3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low_freq_factor: Option<f64>,
    /// `high_freq_factor` (llama3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high_freq_factor: Option<f64>,
    /// `original_max_position_embeddings`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_max_position_embeddings: Option<u64>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Per-layer flag bits of [`TransformerSpec::layer_flags`].
pub mod layer {
    /// The layer attends within the sliding window.
    pub const SLIDING: u8 = 1;
    /// A dense MLP (of `dense_intermediate_size`) instead of the experts.
    pub const DENSE: u8 = 2;
    /// No rotary embedding on this layer (SmolLM3's NoPE layers).
    pub const NO_ROPE: u8 = 4;
    /// A short convolution instead of attention (LFM2's `conv` layers): no KV cache, a conv state.
    pub const CONV: u8 = 8;
    /// A Mamba2 mixer (`TransformerSpec::ssm`) or a gated DeltaNet (`TransformerSpec::delta`)
    /// instead of attention: no KV cache, a conv state and a recurrent state per sequence.
    pub const SSM: u8 = 16;
    /// The block is its mixer alone, no MLP (Nemotron-H's `M` and `*` blocks).
    pub const NO_MLP: u8 = 32;
    /// The block is its MLP alone, no mixer (Nemotron-H's `-` and `E` blocks).
    pub const NO_MIXER: u8 = 64;
    /// A Mamba (1) mixer instead of attention (`TransformerSpec::mamba`): a conv state and a
    /// recurrent state per sequence.
    pub const MAMBA: u8 = 128;

    /// The flags in words (English, for the CLI): "sliding window, dense MLP"; "" for none.
    pub fn describe(flags: u8) -> String {
        [
            (SLIDING, "sliding window"),
            (DENSE, "dense MLP"),
            (NO_ROPE, "no rotary"),
            (CONV, "short conv"),
            (SSM, "state-space or linear-attention mixer"),
            (NO_MLP, "no MLP"),
            (NO_MIXER, "MLP only"),
            (MAMBA, "Mamba"),
        ]
        .iter()
        .filter(|(b, _)| flags & b != 0)
        .map(|(_, n)| *n)
        .collect::<Vec<_>>()
        .join(", ")
    }
}

/// One row of a layer table (for non-transformer networks such as ResNet-50).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableLayer {
    /// Layer name, for display.
    pub name: String,
    /// Trainable parameters in this layer.
    pub params: u64,
    /// Elements autograd saves for backward, per sample, in the activation dtype.
    pub saved_elems_per_sample: u64,
    /// Elements of the layer's output per sample (the largest transient in a forward pass).
    pub output_elems_per_sample: u64,
    /// Saved bytes per sample whose size does not follow the activation dtype (masks, pooling
    /// indices, fp32 loss terms).
    #[serde(default)]
    pub fixed_bytes_per_sample: u64,
}

/// A network described layer by layer rather than by transformer hyper-parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayerTable {
    /// The layers in forward order.
    pub layers: Vec<TableLayer>,
    /// Number of distinct parameter tensors (for allocator rounding and optimizer temporaries).
    pub param_tensors: u64,
}

/// The network architecture.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Architecture {
    /// A transformer from the supported families (boxed: the spec is much larger than a table).
    Transformer(Box<TransformerSpec>),
    /// A layer table.
    Table(LayerTable),
    /// A convolutional backbone read from its config (ResNet, ConvNeXt): its ops are built per
    /// image and batch.
    Net(Box<net::NetSpec>),
    /// A model traced by `vramscope_trace.py`: its parameter list and its recorded step,
    /// replayed at the scenario's dims.
    Traced(std::sync::Arc<crate::trace::TracedModel>),
}

/// A named model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    /// Display name.
    pub name: String,
    /// Architecture.
    pub arch: Architecture,
}

/// A group of identically shaped parameter tensors: `count` tensors of `rows x cols` elements
/// (`cols == 1` for vectors).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamGroup {
    /// Leading dimension (output features for a Linear weight).
    pub rows: u64,
    /// Trailing dimension; 1 for a vector.
    pub cols: u64,
    /// How many tensors of this shape.
    pub count: u64,
    /// What the tensor is, for LoRA targeting and quantization.
    pub kind: ParamKind,
    /// Where it lives (which pipeline stage holds it).
    pub scope: Scope,
    /// Tensor parallelism splits it (column/row-parallel weights, vocab-parallel embeddings).
    pub tp_split: bool,
}

/// Where a parameter group sits in the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Embeddings: the first pipeline stage.
    Input,
    /// Repeated per block (`count` is a multiple of the number of blocks).
    Block,
    /// Final norm and head: the last pipeline stage.
    Output,
}

/// Role of a parameter tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// Token, position or type embedding table.
    Embedding,
    /// Untied LM head / classifier weight.
    Head,
    /// A projection weight named by its HuggingFace module (`q`, `k`, `v`, `o`, `gate`, `up`, `down`).
    Linear(LinearRole),
    /// Routed experts fused into 3-D tensors (`gate_up_proj`, `down_proj`), by projection.
    Experts(LinearRole),
    /// MoE router weight.
    Router,
    /// MoE router weight kept in fp32 whatever the model dtype (`_keep_in_fp32_modules`).
    RouterFp32,
    /// Bias vectors and norm weights.
    Vector,
    /// A trained vector kept in fp32 whatever the model dtype (`_keep_in_fp32_modules_strict`:
    /// Kimi-Linear's `dt_bias`).
    VectorFp32,
    /// Parameters a text-only step leaves without gradients (a multimodal model's vision tower
    /// and projector): stored, never trained.
    Frozen,
    /// A parameter kept in fp32 that is never trained (`requires_grad=False`: ERNIE-4.5's
    /// `moe_statics.e_score_correction_bias`).
    FrozenFp32,
    /// A frozen parameter held in the compute dtype whatever the weights' (a LoRA base under
    /// autocast, as diffusers' and PEFT's scripts cast it to `weight_dtype`).
    FrozenCompute,
}

impl ParamKind {
    /// Stored, never trained: no gradient, no optimizer state.
    pub fn is_frozen(self) -> bool {
        matches!(self, Self::Frozen | Self::FrozenFp32 | Self::FrozenCompute)
    }

    /// Kept in fp32 whatever the model's dtype.
    pub fn fp32_kept(self) -> bool {
        matches!(self, Self::RouterFp32 | Self::VectorFp32 | Self::FrozenFp32)
    }
}

/// Which projection a Linear weight is, for `--lora RANK:q,k,v,...` targeting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinearRole {
    /// Query projection (GPT-2's fused `c_attn` counts as q, k and v at once).
    Q,
    /// Key projection.
    K,
    /// Value projection.
    V,
    /// Attention output projection.
    O,
    /// Gate projection of a gated MLP.
    Gate,
    /// Up projection (GPT-2 `c_fc`, BERT `intermediate.dense`).
    Up,
    /// Down projection (GPT-2 `mlp.c_proj`, BERT `output.dense`).
    Down,
    /// A dense layer inside a head (BERT transform, pooler).
    Dense,
}

impl LinearRole {
    /// Parses one `--lora` target name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s.trim() {
            "q" | "q_proj" | "query" => Self::Q,
            "k" | "k_proj" | "key" => Self::K,
            "v" | "v_proj" | "value" => Self::V,
            "o" | "o_proj" | "out" => Self::O,
            "gate" | "gate_proj" => Self::Gate,
            "up" | "up_proj" | "fc1" => Self::Up,
            "down" | "down_proj" | "fc2" => Self::Down,
            _ => return None,
        })
    }

    /// Short name as used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Q => "q",
            Self::K => "k",
            Self::V => "v",
            Self::O => "o",
            Self::Gate => "gate",
            Self::Up => "up",
            Self::Down => "down",
            Self::Dense => "dense",
        }
    }
}

/// How many of `flags` satisfy `pred`: counted in bytes, 255 at a time, so that the count
/// vectorizes 16 wide (a 100-block hybrid's layer kinds are counted several times an estimate).
pub(crate) fn count_flags(flags: &[u8], pred: impl Fn(u8) -> bool) -> u64 {
    flags.chunks(255).map(|c| u64::from(c.iter().fold(0u8, |n, &f| n + u8::from(pred(f))))).sum()
}

impl TransformerSpec {
    /// The residual stream is kept in fp32 whatever the model's dtype (Mamba's and Mamba2's
    /// `residual_in_fp32`).
    pub fn residual_fp32(&self) -> bool {
        self.ssm.is_some_and(|s| s.residual_fp32) || self.mamba.is_some_and(|s| s.residual_fp32)
    }

    /// Layers with a Mamba2 mixer (or gated DeltaNet) among the first `layers`: those flagged
    /// [`layer::SSM`], or every layer when the spec has a mixer and no layer is flagged (Falcon-H1
    /// runs it beside attention in every block).
    pub fn ssm_layers_among(&self, layers: u64) -> u64 {
        match self.layers_with(layer::SSM, layers) {
            _ if self.ssm.is_some_and(|s| s.beside_attention) => layers.min(self.num_layers),
            0 if self.ssm.is_some() || self.delta.is_some() => layers.min(self.num_layers),
            n => n,
        }
    }

    /// Layers flagged `bit` among the first `layers` (a pipeline stage's).
    pub fn layers_with(&self, bit: u8, layers: u64) -> u64 {
        count_flags(self.first_flags(layers), |f| f & bit != 0)
    }

    /// Attention layers (each with a KV cache) in the first `layers` blocks: the blocks that
    /// attend (neither a short convolution, a recurrent mixer nor an MLP alone), times the
    /// attention sublayers of each ([`Self::attn_per_block`]).
    pub fn attention_layers_among(&self, layers: u64) -> u64 {
        let n = layers.min(self.num_layers);
        if self.layer_flags.is_empty() {
            return n * self.attn_per_block.max(1);
        }
        let none = layer::CONV | layer::SSM | layer::NO_MIXER | layer::MAMBA;
        let per = self.attn_per_block.max(1);
        per * count_flags(self.first_flags(n), |f| f & none == 0)
    }

    /// The flags of the first `layers` blocks (a slice, so that counting them vectorizes).
    fn first_flags(&self, layers: u64) -> &[u8] {
        let n = usize::try_from(layers).unwrap_or(usize::MAX).min(self.layer_flags.len());
        &self.layer_flags[..n]
    }

    /// Layers with a short convolution instead of attention (LFM2's `conv` layers).
    pub fn conv_layers(&self) -> u64 {
        self.conv_layers_among(self.num_layers)
    }

    /// Short-convolution layers among the first `layers` (a pipeline stage's).
    pub fn conv_layers_among(&self, layers: u64) -> u64 {
        self.layers_with(layer::CONV, layers)
    }
}

impl TransformerSpec {
    /// The longest context the model declares: the config's, else its learned positions; 0 when
    /// unknown.
    pub fn max_context(&self) -> u64 {
        self.context_length.max(self.usable_positions())
    }

    /// The positions a sequence can use: `max_position_embeddings` less the ones RoBERTa never
    /// reaches ([`Self::position_offset`]); 0 when the config declares none.
    pub fn usable_positions(&self) -> u64 {
        self.max_position_embeddings.saturating_sub(self.position_offset)
    }

    /// Width of the query projection output (`a * d`).
    pub fn q_width(&self) -> u64 {
        self.num_heads * self.head_dim
    }

    /// Width of the key (and value) projection output (`kv * d`).
    pub fn kv_width(&self) -> u64 {
        self.num_kv_heads * self.head_dim
    }
}

impl ModelSpec {
    /// The transformer description, if this is one.
    pub fn transformer(&self) -> Option<&TransformerSpec> {
        match &self.arch {
            Architecture::Transformer(t) => Some(t),
            Architecture::Table(_) | Architecture::Net(_) | Architecture::Traced(_) => None,
        }
    }

    /// The transformer description, mutable, if this is one.
    pub fn transformer_mut(&mut self) -> Option<&mut TransformerSpec> {
        match &mut self.arch {
            Architecture::Transformer(t) => Some(t),
            Architecture::Table(_) | Architecture::Net(_) | Architecture::Traced(_) => None,
        }
    }

    /// The traced model, if this is one.
    pub fn traced(&self) -> Option<&crate::trace::TracedModel> {
        match &self.arch {
            Architecture::Traced(t) => Some(t),
            _ => None,
        }
    }

    /// The convolutional backbone, if this is one.
    pub fn net(&self) -> Option<&net::NetSpec> {
        match &self.arch {
            Architecture::Net(n) => Some(n),
            _ => None,
        }
    }

    /// How the model takes an image, if it does: a vision transformer's patch grid, or a
    /// convolutional network's input (its total stride as the grain, no tokens).
    /// The smallest image side (pixels, whole patches) the model runs: a patch; a network's
    /// total stride; Swin's window at its last stage.
    pub fn min_image_side(&self) -> Option<u64> {
        let p = self.patches()?;
        Some(self.net().map_or(p.patch, |n| n.min_side().max(p.patch)))
    }

    pub fn patches(&self) -> Option<pixels::Patches> {
        match &self.arch {
            Architecture::Transformer(t) => t.patches,
            Architecture::Net(n) => Some(pixels::Patches {
                patch: n.total_stride(),
                image: n.image,
                prefix: 0,
                channels: n.channels,
                interpolation: pixels::PositionInterpolation::Always,
                mask_token: false,
                conv: true,
                ceil: matches!(n.kind, net::NetKind::Resnet { .. } | net::NetKind::Swin(_)),
            }),
            Architecture::Table(_) | Architecture::Traced(_) => None,
        }
    }
}

/// A Llama-shaped model of about `params_b` billion parameters, for quick "what if my model had N
/// parameters" questions: head_dim 128, width from N ≈ 12·L·h² with L ≈ h/128, gated MLP of
/// 8/3·h rounded to 256, 32k vocabulary, untied embeddings. Returns `None` outside 0.01-2000 B.
pub fn generic(params_b: f64) -> Option<ModelSpec> {
    if !(0.01..=2000.0).contains(&params_b) {
        return None;
    }
    let n = params_b * 1e9;
    let v = 32000.0;
    let h = ((n * 128.0 / 12.0).cbrt() / 128.0).round().max(1.0) * 128.0;
    let i = ((8.0 / 3.0 * h) / 256.0).round().max(1.0) * 256.0;
    let per_layer = 4.0 * h * h + 3.0 * h * i + 2.0 * h;
    let layers = ((n - 2.0 * v * h) / per_layer).round().max(1.0);
    let heads = (h / 128.0) as u64;
    Some(ModelSpec {
        name: format!("Generic {params_b} B (Llama-shaped)"),
        arch: Architecture::Transformer(Box::new(TransformerSpec {
            family: Family::default(),
            head: Head::CausalLm,
            hidden_size: h as u64,
            num_layers: layers as u64,
            num_heads: heads,
            num_kv_heads: heads,
            head_dim: 128,
            intermediate_size: i as u64,
            vocab_size: v as u64,
            max_position_embeddings: 0,
            type_vocab_size: 0,
            tie_word_embeddings: false,
            qkv_bias: false,
            o_bias: false,
            mlp_bias: false,
            head_bias: false,
            conv_kernel: 0,
            conv_bias: false,
            attention_dropout: 0.0,
            hidden_dropout: 0.0,
            moe: None,
            sliding_window: None,
            ..TransformerSpec::default()
        })),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_model_lands_near_the_asked_size() {
        for b in [0.1, 1.0, 7.0, 13.0, 70.0, 405.0] {
            let m = generic(b).unwrap();
            let n = m.n_params() as f64 / 1e9;
            assert!((n / b - 1.0).abs() < 0.2, "{b} B -> {n} B");
        }
        assert!(generic(0.0).is_none() && generic(f64::NAN).is_none());
    }
}
