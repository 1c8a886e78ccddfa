//! The checked inputs of an estimate: model, workload, precision, optimizer, memory savers.

pub use super::parallel::{FsdpMode, Offload, Parallel};
pub use super::stack::{AdapterDtype, Framework, Loss, Stack};
pub use crate::engine::inputs::choices::{AttentionImpl, Lora, Targets};
use crate::model::ModelSpec;
use crate::tokens::Parse;
use crate::units::{DType, Precision};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

mod check;
mod images;
mod method;
mod traced;

pub use images::VlmImages;

crate::tokens::token_enum! {
    /// Training step or inference pass.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Mode {
        /// One optimizer step: forward, backward, optimizer update.
        Train => "train",
        /// One forward pass over the prompt that fills the KV cache (prefill), no gradients.
        Infer => "infer" | "inference",
    }
    impl FromStr = Parse::named("mode");
}

crate::tokens::token_enum! {
    /// Optimizer, as PyTorch / bitsandbytes / HF implement it.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum Optimizer {
        /// `torch.optim.AdamW` (foreach, the CUDA default): `exp_avg`, `exp_avg_sq`; the step allocates a
        /// parameter-sized `sqrt(exp_avg_sq)` temporary.
        Adamw => "adamw",
        /// `torch.optim.Adam`: same memory as AdamW.
        Adam => "adam",
        /// `AdamW(fused=True)`: same states, no step temporary.
        AdamwFused => "adamw-fused",
        /// AdamW stepping one tensor at a time (`foreach=False`, or transformers' own `AdamW`, the
        /// Trainer's `adamw_hf` default before transformers 4.41): same states, a temporary the size of
        /// the tensor being stepped (`exp_avg_sq.sqrt()`), so the largest tensor's at most.
        AdamwLoop => "adamw-loop",
        /// bitsandbytes `AdamW8bit`: 1-byte states with one fp32 absmax per 2048-element block
        /// (tensors under 4096 elements keep 32-bit states).
        Adamw8bit => "adamw-8bit",
        /// bitsandbytes `PagedAdamW8bit`: `AdamW8bit`'s states in CUDA unified memory (`cudaMallocManaged`),
        /// outside PyTorch's allocator: not in `max_memory_allocated`, in nvidia-smi's used while
        /// resident (paged out to host memory under pressure).
        PagedAdamw8bit => "paged-adamw-8bit",
        /// bitsandbytes `PagedAdamW32bit` (`paged_adamw_32bit`): fp32 states in unified memory.
        PagedAdamw32bit => "paged-adamw-32bit",
        /// HF `Adafactor` (no first moment, factored second moment for matrices).
        Adafactor => "adafactor",
        /// Plain SGD: no state.
        Sgd => "sgd",
        /// SGD with momentum: one buffer.
        SgdMomentum => "sgd-momentum",
        /// No optimizer (gradients only).
        None => "none",
    }
    impl FromStr = Parse::named("optimizer");
}

impl Optimizer {
    /// Are the states in CUDA unified memory (bitsandbytes' paged optimizers)?
    pub const fn paged(self) -> bool {
        matches!(self, Self::PagedAdamw8bit | Self::PagedAdamw32bit)
    }
}

/// Gradient (activation) checkpointing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Checkpointing {
    /// Keep every activation.
    None,
    /// Every transformer block (HF `gradient_checkpointing_enable`).
    Full,
    /// Every K-th block is checkpointed (layers 0, K, 2K, …), the others keep their activations.
    Every(u64),
    /// `torch.utils.checkpoint.checkpoint_sequential(blocks, N)`: the first N-1 segments are
    /// checkpointed and recomputed one at a time in backward; the last runs normally.
    Segments(u64),
    /// Recompute only the attention core (Korthikanti et al. 2022 "selective").
    Selective,
}

crate::tokens::token_enum! {
    /// The keywords of `--checkpoint`: a choice is written `keyword` or `keyword:NUMBER`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum CheckpointKeyword {
        /// [`Checkpointing::None`].
        None => "none",
        /// [`Checkpointing::Full`].
        Full => "full",
        /// [`Checkpointing::Every`] and its K.
        Every => "every": "K",
        /// [`Checkpointing::Segments`] and its N.
        Segments => "segments": "N",
        /// [`Checkpointing::Selective`].
        Selective => "selective",
    }
}

impl Checkpointing {
    /// The keyword that writes it.
    pub const fn keyword(self) -> CheckpointKeyword {
        match self {
            Self::None => CheckpointKeyword::None,
            Self::Full => CheckpointKeyword::Full,
            Self::Every(_) => CheckpointKeyword::Every,
            Self::Segments(_) => CheckpointKeyword::Segments,
            Self::Selective => CheckpointKeyword::Selective,
        }
    }
}

impl fmt::Display for Checkpointing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keyword = self.keyword().name();
        match self {
            Self::Every(n) | Self::Segments(n) => write!(f, "{keyword}:{n}"),
            Self::None | Self::Full | Self::Selective => f.write_str(keyword),
        }
    }
}

impl FromStr for Checkpointing {
    type Err = String;
    /// `keyword` or `keyword:NUMBER` ([`CheckpointKeyword`]).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("unknown checkpointing \"{s}\" ({})", CheckpointKeyword::FORMS.join(", "));
        let num = |v: &str| -> Result<u64, String> {
            match v.parse::<u64>() {
                Ok(n) if n >= 1 => Ok(n),
                _ => Err(format!("\"{s}\": expected a whole number of at least 1 after the colon")),
            }
        };
        let (word, number) = match s.split_once(':') {
            Some((word, v)) => (word, Some(v)),
            None => (s, None),
        };
        match (CheckpointKeyword::from_token(word).ok_or_else(bad)?, number) {
            (CheckpointKeyword::None, None) => Ok(Self::None),
            (CheckpointKeyword::Full, None) => Ok(Self::Full),
            (CheckpointKeyword::Selective, None) => Ok(Self::Selective),
            (CheckpointKeyword::Every, Some(v)) => num(v).map(Self::Every),
            (CheckpointKeyword::Segments, Some(v)) => num(v).map(Self::Segments),
            _ => Err(bad()),
        }
    }
}

impl crate::tokens::Forms for Checkpointing {
    fn forms() -> &'static [&'static str] {
        &CheckpointKeyword::FORMS
    }
}

crate::tokens::token_enum! {
    /// Quantized storage of the frozen base weights under LoRA (QLoRA).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum BaseQuant {
        /// Base weights in the precision's weight dtype.
        None => "none",
        /// bitsandbytes NF4, block size 64, double quantization (8-bit absmax, fp32 per 256 blocks).
        Nf4 => "nf4" | "nf4-dq",
        /// bitsandbytes NF4 without double quantization (`bnb_4bit_use_double_quant=False`, litgpt's
        /// `bnb.nf4`): one fp32 absmax per 64 weights.
        #[serde(rename = "nf4-nodq")]
        Nf4NoDq => "nf4-nodq",
        /// bitsandbytes LLM.int8(): int8 weights with one fp32 scale per output row.
        Int8 => "int8",
    }
    impl FromStr = Parse::named("--base-quant");
}

/// Memory outside PyTorch's tensor allocations (what nvidia-smi shows on top of the peak).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    /// CUDA context, kernels and libraries loaded (lazy module loading on).
    pub cuda_context_bytes: u64,
    /// cuBLAS / cuBLASLt workspaces.
    pub workspace_bytes: u64,
    /// Memory the caching allocator reserves beyond the peak of live tensors (block rounding,
    /// fragmentation), as a fraction of the peak.
    pub allocator_reserve_fraction: f64,
    /// `PYTORCH_CUDA_ALLOC_CONF` settings the allocator replay follows.
    #[serde(default)]
    pub allocator: AllocConf,
    /// `CUDA_MODULE_LOADING`: eager loading adds every kernel image to the context.
    #[serde(default)]
    pub module_loading: super::context::ModuleLoading,
    /// The reserve is a measured flat fraction (a calibration profile, or `--reserve-frac`):
    /// totals use it instead of replaying the caching allocator.
    #[serde(default)]
    pub flat_reserve: bool,
}

/// The caching allocator's settings (`PYTORCH_CUDA_ALLOC_CONF`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AllocConf {
    /// `expandable_segments:True`.
    pub expandable_segments: bool,
    /// `max_split_size_mb`.
    pub max_split_size_mib: Option<u64>,
    /// `garbage_collection_threshold` (a fraction of the card).
    pub garbage_collection_threshold: Option<f64>,
}

crate::tokens::token_enum! {
    /// The keys of `PYTORCH_CUDA_ALLOC_CONF` that [`AllocConf`] reads.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum AllocKey {
        /// [`AllocConf::expandable_segments`].
        ExpandableSegments => "expandable_segments",
        /// [`AllocConf::max_split_size_mib`].
        MaxSplitSizeMb => "max_split_size_mb",
        /// [`AllocConf::garbage_collection_threshold`].
        GarbageCollectionThreshold => "garbage_collection_threshold",
    }
}

impl fmt::Display for AllocConf {
    /// The `PYTORCH_CUDA_ALLOC_CONF` value that [`FromStr`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if self.expandable_segments {
            parts.push(format!("{}:True", AllocKey::ExpandableSegments.name()));
        }
        if let Some(m) = self.max_split_size_mib {
            parts.push(format!("{}:{m}", AllocKey::MaxSplitSizeMb.name()));
        }
        if let Some(g) = self.garbage_collection_threshold {
            parts.push(format!("{}:{g}", AllocKey::GarbageCollectionThreshold.name()));
        }
        f.write_str(&parts.join(","))
    }
}

impl FromStr for AllocConf {
    type Err = String;
    /// `expandable_segments:True,max_split_size_mb:128,garbage_collection_threshold:0.8`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut c = Self::default();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) =
                part.split_once(':').ok_or_else(|| format!("--alloc-conf \"{part}\": expected key:value"))?;
            let bad = || format!("--alloc-conf \"{part}\": bad value");
            let key = AllocKey::from_token(k.trim()).ok_or_else(|| {
                format!("--alloc-conf: unknown key \"{}\" ({})", k.trim(), AllocKey::TOKENS.join(", "))
            })?;
            match key {
                AllocKey::ExpandableSegments => {
                    c.expandable_segments = match v.trim() {
                        "True" | "true" | "1" => true,
                        "False" | "false" | "0" => false,
                        _ => return Err(bad()),
                    }
                }
                AllocKey::MaxSplitSizeMb => {
                    let m: u64 = v.trim().parse().map_err(|_| bad())?;
                    if m < 20 {
                        return Err(format!(
                            "--alloc-conf \"{part}\": PyTorch requires {} of at least 20",
                            key.name()
                        ));
                    }
                    c.max_split_size_mib = Some(m);
                }
                AllocKey::GarbageCollectionThreshold => {
                    let f: f64 = v.trim().parse().map_err(|_| bad())?;
                    if !(f > 0.0 && f < 1.0) {
                        return Err(format!(
                            "--alloc-conf \"{part}\": {} must be between 0 and 1",
                            key.name()
                        ));
                    }
                    c.garbage_collection_threshold = Some(f);
                }
            }
        }
        Ok(c)
    }
}

impl Default for Overhead {
    /// Defaults for a recent driver and PyTorch 2.x with lazy loading on an sm80+ GPU: ~500 MiB
    /// context (measured range 300-600 MiB), 32 MiB cuBLAS workspace (Hopper default) and 5 % of
    /// the peak kept by the caching allocator.
    fn default() -> Self {
        Self {
            cuda_context_bytes: 500 << 20,
            workspace_bytes: 32 << 20,
            allocator_reserve_fraction: 0.05,
            allocator: AllocConf::default(),
            module_loading: super::context::ModuleLoading::Lazy,
            flat_reserve: false,
        }
    }
}

/// Everything an estimate depends on. Build it with [`Scenario::new`] and the field setters; the
/// values are checked once by [`Scenario::validate`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// The network.
    pub model: ModelSpec,
    /// Train or infer.
    pub mode: Mode,
    /// Micro-batch size per GPU.
    pub batch: u64,
    /// Sequence length (prompt length for inference). A vision model's is its image's tokens
    /// ([`Self::image`]).
    pub seq: u64,
    /// The input image of a vision model (ViT, DINOv2); `None` = the config's `image_size`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<crate::model::pixels::ImageSize>,
    /// Images per sample of a vision-language model (their size is [`Self::image`]); their
    /// tokens are part of [`Self::seq`], which is text and image tokens together.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub images: u64,
    /// Inference only: tokens HF `generate` adds after the prompt (`max_new_tokens`); 0 = one
    /// scoring forward over `seq` tokens that keeps the full logits.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub new_tokens: u64,
    /// A traced model's named dims other than `batch`, `height` and `width` (which are
    /// [`Self::batch`] and [`Self::image`]): `--dim NAME=VALUE`.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub dims: std::collections::BTreeMap<String, u64>,
    /// Precision recipe.
    pub precision: Precision,
    /// Optimizer (ignored for inference).
    pub optimizer: Optimizer,
    /// Attention implementation.
    pub attention: AttentionImpl,
    /// Gradient checkpointing (ignored for inference).
    pub checkpointing: Checkpointing,
    /// LoRA adapters; `None` means full fine-tuning.
    pub lora: Option<Lora>,
    /// Quantized base weights (with LoRA, or for inference).
    pub base_quant: BaseQuant,
    /// KV-cache element type for inference; `None` = compute dtype.
    pub kv_cache_dtype: Option<DType>,
    /// Non-PyTorch overhead.
    pub overhead: Overhead,
    /// Parallelism (per-GPU results for the most loaded rank).
    #[serde(default)]
    pub parallel: Parallel,
    /// Loss, optimizer placement, adapter and 4-bit compute dtypes (a framework's defaults).
    #[serde(default)]
    pub stack: Stack,
}

/// Largest byte count any single term may reach (2^60 B = 1 EiB): keeps every u64 sum exact.
const MAX_TERM_BYTES: u128 = 1 << 60;

impl Scenario {
    /// "training step", "inference (prefill)" (one scoring forward) or
    /// "inference (HF generate, 128 new tokens)".
    pub fn mode_label(&self) -> String {
        self.mode_label_in(crate::i18n::Lang::En)
    }

    /// [`Self::mode_label`] in `lang`.
    pub fn mode_label_in(&self, lang: crate::i18n::Lang) -> String {
        match self.mode {
            Mode::Train => lang.pick("training step", "训练步").into(),
            Mode::Infer if self.new_tokens > 0 => crate::text!(
                lang,
                "inference (HF generate, {} new tokens)",
                "推理（HF generate，{} 个新 token）",
                self.new_tokens
            ),
            // an encoder's forward fills no cache
            Mode::Infer if !self.model.transformer().is_some_and(crate::families::has_kv_cache) => {
                lang.pick("inference (forward)", "推理（前向）").into()
            }
            Mode::Infer => lang.pick("inference (prefill)", "推理（预填充）").into(),
        }
    }

    /// A family whose attention is its own eager code (BLOOM's ALiBi, DeBERTa's disentangled
    /// attention) runs it whatever implementation is asked for: the scenario says eager.
    pub fn settle_attention(&mut self) {
        if self.model.transformer().is_some_and(|t| crate::families::ops(t).own_attention) {
            self.attention = AttentionImpl::Eager;
        }
    }

    /// Micro-batches per optimizer step on one data-parallel rank: the pipeline's micro-batches
    /// with pipeline stages, else the gradient accumulation (1 without it).
    pub fn micro_batches_per_step(&self) -> u64 {
        if self.parallel.pp > 1 {
            self.parallel.micro_batches()
        } else {
            u64::from(self.stack.grad_accum.max(1))
        }
    }

    /// Rejects models and workloads whose byte counts would not fit the estimator's integers
    /// (far beyond any real GPU), so the arithmetic never overflows.
    fn check_sizes(&self) -> Result<(), ScenarioError> {
        let too_big =
            |what: &str| Err(ScenarioError::Invalid(format!("{what} is too large to estimate (over 1 EiB)")));
        let mut params: u128 = 0;
        let mut widest: u128 = 1;
        for g in self.model.param_groups() {
            params += g.rows as u128 * g.cols as u128 * g.count as u128;
            widest = widest.max(g.rows as u128).max(g.cols as u128);
        }
        if params * 16 > MAX_TERM_BYTES {
            return too_big("the model");
        }
        let b = self.batch as u128;
        let s = self.seq as u128;
        let mut per_token: u128 = widest;
        let mut heads: u128 = 1;
        let mut layers: u128 = 1;
        if let Some(t) = self.model.transformer() {
            let k = t.moe.map_or(1, |m| m.top_k as u128);
            per_token = per_token.max(t.intermediate_size as u128 * k).max(t.vocab_size as u128);
            heads = t.num_heads as u128;
            layers = t.num_layers as u128;
            if t.num_layers > MAX_BLOCKS {
                return Err(ScenarioError::Invalid(format!(
                    "the model's {} blocks exceed {MAX_BLOCKS} (the largest published models have under 200)",
                    t.num_layers
                )));
            }
        }
        if b * s * per_token * layers * 64 > MAX_TERM_BYTES
            || b * heads * s * s * layers * 16 > MAX_TERM_BYTES
        {
            return too_big("batch x sequence for this model");
        }
        Ok(())
    }
}

/// Most transformer blocks a model may have (every estimate walks them).
pub const MAX_BLOCKS: u64 = 10_000;

/// A scenario that cannot be estimated.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScenarioError {
    /// A value out of range.
    #[error("{0}")]
    Invalid(String),
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
