//! The choices a walk reads besides the model: the attention implementation, LoRA's rank and
//! targets, how the loss is computed, whose model code runs and the PyTorch release class. The
//! scenario ([`crate::estimate::Scenario`]) holds them; the op rules read them through
//! [`super::Ctx`].

use crate::model::LinearRole;
use crate::tokens::Parse;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

crate::tokens::token_enum! {
    /// Attention implementation (`attn_implementation` in HF transformers).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum AttentionImpl {
        /// Explicit `softmax(QK^T)V`: saves the `b·a·s²` scores.
        Eager => "eager",
        /// `scaled_dot_product_attention`: flash kernel for fp16/bf16 without a mask, memory-efficient
        /// kernel otherwise (fp32).
        Sdpa => "sdpa",
        /// FlashAttention 2 (`flash_attention_2`): saves output and logsumexp only.
        Flash => "flash" | "flash_attention_2" | "fa2",
    }
    impl FromStr = Parse::named("attention");
}

/// Set of LoRA target projections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Targets(pub u8);

impl Targets {
    /// All attention and MLP projections.
    pub const ALL: Self = Self(0b0111_1111);

    /// Does the set contain `role`?
    #[inline]
    pub const fn has(self, role: LinearRole) -> bool {
        self.0 & Self::bit(role) != 0
    }

    /// Adds `role`.
    pub fn insert(&mut self, role: LinearRole) {
        self.0 |= Self::bit(role);
    }

    const fn bit(role: LinearRole) -> u8 {
        match role {
            LinearRole::Q => 1,
            LinearRole::K => 2,
            LinearRole::V => 4,
            LinearRole::O => 8,
            LinearRole::Gate => 16,
            LinearRole::Up => 32,
            LinearRole::Down => 64,
            LinearRole::Dense => 128,
        }
    }

    /// The projections an adapter can target, in the order `--lora` names them.
    pub const ROLES: [LinearRole; 7] = [
        LinearRole::Q,
        LinearRole::K,
        LinearRole::V,
        LinearRole::O,
        LinearRole::Gate,
        LinearRole::Up,
        LinearRole::Down,
    ];

    /// `--lora RANK:all`: every projection of [`Self::ROLES`].
    pub const ALL_KEYWORD: &'static str = "all";

    /// Comma-separated names.
    pub fn names(self) -> String {
        Self::ROLES.into_iter().filter(|r| self.has(*r)).map(LinearRole::name).collect::<Vec<_>>().join(",")
    }
}

/// LoRA fine-tuning: frozen base, rank-r adapters (PEFT defaults: fp32 adapter weights).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Lora {
    /// Adapter rank r.
    pub rank: u64,
    /// Which projections get adapters.
    pub targets: Targets,
    /// Adapter dropout probability (`lora_dropout`).
    pub dropout: f64,
}

impl FromStr for Lora {
    type Err = String;
    /// `RANK` or `RANK:q,k,v,o,gate,up,down` (default targets: q,v as PEFT does for Llama).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (rank, targets) = match s.split_once(':') {
            Some((r, t)) => (r, Some(t)),
            None => (s, None),
        };
        let rank = match rank.parse::<u64>() {
            Ok(r) if (1..=65536).contains(&r) => r,
            _ => {
                return Err(format!("--lora \"{s}\": rank must be a whole number from 1 to 65536"));
            }
        };
        let mut set = Targets::default();
        match targets {
            None => {
                set.insert(LinearRole::Q);
                set.insert(LinearRole::V);
            }
            Some(Targets::ALL_KEYWORD) => set = Targets::ALL,
            Some(list) => {
                for name in list.split(',') {
                    let role = LinearRole::parse(name).ok_or_else(|| {
                        let known: Vec<&str> = Targets::ROLES.iter().map(|r| r.name()).collect();
                        let all = Targets::ALL_KEYWORD;
                        format!("--lora \"{s}\": unknown target \"{name}\" ({}, {all})", known.join(", "))
                    })?;
                    set.insert(role);
                }
            }
        }
        Ok(Self { rank, targets: set, dropout: 0.0 })
    }
}

/// How the logits and the cross-entropy loss are computed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Loss {
    /// transformers' own path (`ForCausalLMLoss`): full logits in the compute dtype, an fp32 copy,
    /// `cross_entropy` keeping the fp32 log-softmax output.
    #[default]
    Hf,
    /// torchtune `CEWithChunkedOutputLoss`: the output projection runs per chunk of the sequence
    /// (the chunks' logits are kept in a list until the loss returns), each chunk is upcast to
    /// fp32 and reduced on its own; backward works one chunk at a time.
    Chunked {
        /// Number of chunks (`num_output_chunks`, 8 in torchtune's recipes).
        chunks: u64,
    },
    /// litgpt's `chunked_cross_entropy` with `lm_head_chunk_size`: logits in chunks of this many
    /// positions, which Fabric's precision plugin converts to fp32 on the way out of the model
    /// (`convert_output`), held by the training loop's `logits` through backward; the loss keeps
    /// each chunk's fp32 log-softmax.
    ChunkedNative {
        /// Positions per chunk (128 in litgpt's fine-tuning scripts).
        positions: u64,
    },
    /// Liger kernel's `FusedLinearCrossEntropy` / Apple's Cut Cross-Entropy: the head and the
    /// loss fused, no logits kept; one chunk of logits is alive at a time.
    FusedLinearCe,
    /// torchtune `LinearCrossEntropyLoss` (the loss of its current configs, `mask_ignored_tokens`):
    /// the model returns the final hidden state, the loss copies its unmasked rows
    /// (`index_select`), then per chunk runs the output projection, an fp32 copy and
    /// `cross_entropy`, one chunk after the other (so backward finishes each chunk before the
    /// next); each chunk keeps its fp32 log-softmax.
    LinearCe {
        /// Number of chunks (`num_output_chunks`, 8 in torchtune's configs).
        chunks: u64,
    },
}

impl Loss {
    /// Number of pieces the logits of `b` sequences of `s` tokens are computed in (1 = whole).
    pub fn pieces(self, b: u64, s: u64, hidden: u64, vocab: u64) -> u64 {
        let t = b * s;
        match self {
            Self::Hf => 1,
            Self::Chunked { chunks } | Self::LinearCe { chunks } => chunks.clamp(1, s.max(1)),
            Self::ChunkedNative { positions } => s.div_ceil(positions.max(1)).max(1),
            // Liger: chunk_size = next_pow2(ceil(t / ceil(v / h))), so t / chunk_size chunks
            Self::FusedLinearCe => {
                let inc = vocab.div_ceil(hidden.max(1)).max(1);
                let chunk = t.div_ceil(inc).max(1).next_power_of_two();
                t.div_ceil(chunk).max(1)
            }
        }
    }
}

impl Loss {
    /// Rows the loss runs on: torchtune's `LinearCrossEntropyLoss` drops the ignored positions
    /// first (the shifted labels end each sequence with `ignore_index`), the others take them all.
    pub fn rows(self, b: u64, s: u64) -> u64 {
        match self {
            Self::LinearCe { .. } => b * s.saturating_sub(1).max(1),
            _ => b * s,
        }
    }
}

crate::tokens::token_enum! {
    /// The keywords of `--loss`: a loss is written `keyword` or `keyword:NUMBER`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum LossKeyword {
        /// [`Loss::Hf`].
        Hf => "hf" | "default",
        /// [`Loss::Chunked`] and its chunks (8 when not given).
        Chunked => "chunked": "N",
        /// [`Loss::ChunkedNative`] and its positions per chunk.
        ChunkedNative => "chunked-native": "POSITIONS",
        /// [`Loss::LinearCe`] and its chunks (8 when not given).
        LinearCe => "linear-ce": "N",
        /// [`Loss::FusedLinearCe`].
        FusedLinearCe => "fused-linear-ce" | "liger" | "cce",
    }
}

impl Loss {
    /// The keyword that writes it.
    pub const fn keyword(self) -> LossKeyword {
        match self {
            Self::Hf => LossKeyword::Hf,
            Self::Chunked { .. } => LossKeyword::Chunked,
            Self::ChunkedNative { .. } => LossKeyword::ChunkedNative,
            Self::FusedLinearCe => LossKeyword::FusedLinearCe,
            Self::LinearCe { .. } => LossKeyword::LinearCe,
        }
    }

    /// The number written after the keyword's colon.
    const fn number(self) -> Option<u64> {
        match self {
            Self::Hf | Self::FusedLinearCe => None,
            Self::Chunked { chunks } | Self::LinearCe { chunks } => Some(chunks),
            Self::ChunkedNative { positions } => Some(positions),
        }
    }
}

impl fmt::Display for Loss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keyword = self.keyword().name();
        match self.number() {
            Some(n) => write!(f, "{keyword}:{n}"),
            None => f.write_str(keyword),
        }
    }
}

impl FromStr for Loss {
    type Err = String;
    /// `keyword` or `keyword:NUMBER` ([`LossKeyword`]).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let unknown = || format!("unknown --loss \"{s}\" ({})", LossKeyword::FORMS.join(", "));
        let num = |v: &str| match v.parse::<u64>() {
            Ok(n) if (1..=1 << 20).contains(&n) => Ok(n),
            _ => Err(format!("--loss \"{s}\": expected a whole number from 1 to 1048576 after the colon")),
        };
        let (word, number) = match s.split_once(':') {
            Some((word, v)) => (word, Some(v)),
            None => (s, None),
        };
        match (LossKeyword::from_token(word).ok_or_else(unknown)?, number) {
            (LossKeyword::Hf, None) => Ok(Self::Hf),
            (LossKeyword::FusedLinearCe, None) => Ok(Self::FusedLinearCe),
            (LossKeyword::Chunked, None) => Ok(Self::Chunked { chunks: 8 }),
            (LossKeyword::LinearCe, None) => Ok(Self::LinearCe { chunks: 8 }),
            (LossKeyword::Chunked, Some(v)) => num(v).map(|chunks| Self::Chunked { chunks }),
            (LossKeyword::ChunkedNative, Some(v)) => {
                num(v).map(|positions| Self::ChunkedNative { positions })
            }
            (LossKeyword::LinearCe, Some(v)) => num(v).map(|chunks| Self::LinearCe { chunks }),
            (LossKeyword::Hf | LossKeyword::FusedLinearCe, Some(_)) | (LossKeyword::ChunkedNative, None) => {
                Err(unknown())
            }
        }
    }
}

impl crate::tokens::Forms for Loss {
    fn forms() -> &'static [&'static str] {
        &LossKeyword::FORMS
    }
}

crate::tokens::token_enum! {
    /// Whose implementation of the architecture runs: what a block keeps depends on the code, not
    /// only on the architecture.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum ModelCode {
        /// transformers' modelling files (and torchtune's, which keep the same tensors).
        #[default]
        Hf => "hf",
        /// litgpt's `model.py` / `lora.py` for Llama-like models: one fused qkv Linear (SDPA's `v`
        /// is a view of it, so the whole qkv output is kept), `LoRAQKVLinear` (one dropout, a grouped
        /// `conv1d` for B, and `zero_pad`'s `index_copy`, which keeps its source when q, k and v are
        /// not all adapted, and an int64 index), RMSNorm `x.float()`, `(x_normed * weight.float())`.
        Litgpt => "litgpt",
        /// litgpt before its "half precision fixes" (#606, 24 Oct 2023; the resource tables of
        /// commit 8641822): the same, with RMSNorm in the input dtype (`x * rsqrt(mean(x * x))`).
        #[serde(rename = "litgpt-2023")]
        Litgpt2023 => "litgpt-2023",
    }
    impl FromStr = Parse::named("--model-code");
}

crate::tokens::token_enum! {
    /// Which code runs the state-space mixers (Mamba2's `in_proj` → conv → scan → gated norm):
    /// transformers calls the fused kernels of `mamba_ssm` and `causal_conv1d` when they are
    /// installed and the model trains on a GPU, else its own PyTorch ops.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum MixerImpl {
        /// `mamba_ssm`'s `mamba_split_conv1d_scan_combined` (one autograd Function: it keeps
        /// `in_proj`'s output, the scan's output and the norm's fp32 `rstd`, and recomputes the
        /// convolution and the norm in backward).
        #[default]
        Kernels => "kernels",
        /// transformers' PyTorch path (no `mamba_ssm`, or on a CPU): the convolution, the chunked
        /// scan's fp32 einsums and the gated norm each keep their tensors.
        Torch => "torch",
    }
    impl FromStr = Parse::named("--mixer-impl");
}

impl ModelCode {
    /// litgpt's code (either version).
    pub const fn litgpt(self) -> bool {
        matches!(self, Self::Litgpt | Self::Litgpt2023)
    }
}

/// The PyTorch release whose autograd keeps the tensors: only where a rule changed between
/// releases does it matter. Ordered oldest first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Torch {
    /// Before 1.11: also softmax's and log_softmax's backward keep their input beside their
    /// output (derivatives.yaml's `_softmax_backward_data(grad, result, dim, self)`, read only
    /// for its dtype; pytorch/pytorch#65242 passes the dtype instead, from 1.11).
    #[serde(rename = "before-1-11")]
    Before1_11,
    /// 1.11 to 1.13: as before 2.2, and no `scaled_dot_product_attention` yet (2.0).
    #[serde(rename = "before-2-0")]
    Before2_0,
    /// 2.0 and 2.1 (before 2.2): `mean(dim)`'s backward keeps its input (`MeanBackward1._saved_self`,
    /// pytorch/pytorch#109876; later releases keep the element count), so an RMSNorm's
    /// `mean(x²)` keeps the squared tensor.
    #[serde(rename = "before-2-2")]
    Before2_2,
    /// PyTorch 2.2 and later (the measured ground truth runs 2.15).
    #[default]
    Current,
}

impl Torch {
    /// Every class, oldest first.
    pub const ALL: [Self; 4] = [Self::Before1_11, Self::Before2_0, Self::Before2_2, Self::Current];

    /// `mean(dim)`'s backward keeps its input (before 2.2).
    pub fn mean_keeps_input(self) -> bool {
        self < Self::Current
    }

    /// softmax's and log_softmax's backward keep their input as well as their output (before
    /// 1.11).
    pub fn softmax_keeps_input(self) -> bool {
        self == Self::Before1_11
    }

    /// `torch.nn.functional.scaled_dot_product_attention` exists (from 2.0): before it, eager
    /// attention runs where SDPA is asked for.
    pub fn has_sdpa(self) -> bool {
        self >= Self::Before2_2
    }

    /// The releases of the class, as the CLI and the GUI name them.
    pub const fn label(self) -> &'static str {
        match self {
            Self::Before1_11 => "PyTorch 1.10 or older",
            Self::Before2_0 => "PyTorch 1.11 - 1.13",
            Self::Before2_2 => "PyTorch 2.0 - 2.1",
            Self::Current => "PyTorch 2.2 or later",
        }
    }
}

impl FromStr for Torch {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("--torch \"{s}\": expected a PyTorch version such as 1.10, 2.1 or 2.5");
        let (major, minor) = s.split_once('.').ok_or_else(bad)?;
        let minor = minor.split('.').next().unwrap_or(minor);
        let (major, minor) =
            (major.parse::<u32>().map_err(|_| bad())?, minor.parse::<u32>().map_err(|_| bad())?);
        if !(1..=9).contains(&major) {
            return Err(bad());
        }
        Ok(if (major, minor) < (1, 11) {
            Self::Before1_11
        } else if (major, minor) < (2, 0) {
            Self::Before2_0
        } else if (major, minor) < (2, 2) {
            Self::Before2_2
        } else {
            Self::Current
        })
    }
}

impl fmt::Display for Torch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // the newest release of the class (parses back to the same class)
        f.write_str(match self {
            Self::Before1_11 => "1.10",
            Self::Before2_0 => "1.13",
            Self::Before2_2 => "2.1",
            Self::Current => "2.2",
        })
    }
}
