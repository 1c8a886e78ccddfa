//! The server's settings as `vramscope serve` takes them ([`ServeConfig`], `None` fields taking
//! vLLM's defaults) and the option enums of its flags, with their parsing.

use crate::tokens::Parse;
use crate::units::DType;
use serde::Serialize;

crate::tokens::token_enum! {
    /// KV-cache element type (`--kv-cache-dtype`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "snake_case")]
    pub enum KvDtype {
        /// The model's dtype.
        Auto => "auto",
        /// fp8 (e4m3): one byte per element.
        Fp8 => "fp8" | "fp8_e4m3",
        /// fp8 e5m2: one byte per element.
        Fp8E5m2 => "fp8_e5m2",
    }
    impl FromStr = Parse::named("KV-cache dtype").any_case().listing_aliases();
}

crate::tokens::token_enum! {
    /// How the profiling run's dummy sampler filters top-k / top-p (`topk_topp_sampler.py`; the
    /// default follows the release, [`VllmRelease::sampler`]).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "snake_case")]
    pub enum SamplerPath {
        /// FlashInfer's `top_k_top_p_sampling_from_logits`: `top_k_mask_logits` then `softmax`,
        /// no sort (the default up to 0.11 with FlashInfer installed, and from 0.21; opt-in with
        /// `VLLM_USE_FLASHINFER_SAMPLER=1` from 0.12 to 0.20).
        FlashInfer => "flashinfer",
        /// vLLM's Triton top-k / top-p kernel (`topk_topp_triton.py`, 0.17 to 0.20, 8 rows or
        /// more): in place on the fp32 logits, then `softmax` and the exponential draw.
        Triton => "triton",
        /// The PyTorch sort path (`apply_top_k_top_p`: the default from 0.12 to 0.16, below 8 rows
        /// from 0.17, or `VLLM_USE_FLASHINFER_SAMPLER=0` / no FlashInfer).
        Sort => "sort" | "torch" | "native",
    }
    impl FromStr = Parse::named("sampler").any_case();
}

crate::tokens::token_enum! {
    /// The vLLM release whose start-up is modelled (`--vllm-version`), as the classes its
    /// profiling defaults fall into (read in each release's `topk_topp_sampler.py`, `envs.py`
    /// and `gpu_worker.py::determine_available_memory`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
    pub enum VllmRelease {
        /// V1 up to 0.11: FlashInfer's sampler when FlashInfer imports (`VLLM_USE_FLASHINFER_SAMPLER`
        /// unset means on), CUDA graphs captured after the KV cache is sized (read in 0.11.0;
        /// 0.8 to 0.10 taken as alike).
        Upto0_11 => "0.11",
        /// 0.12 to 0.16: FlashInfer's sampler opt-in, so the PyTorch sort path; graphs not
        /// subtracted.
        From0_12 => "0.12",
        /// 0.17 to 0.20: the Triton top-k / top-p kernel for 8 rows or more; 0.18 on measure
        /// the CUDA-graph memory but subtract it only with
        /// `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1` (read in 0.17.0 to 0.19.1; 0.20 assumed).
        #[default]
        From0_17 => "0.17",
        /// 0.21 on: FlashInfer's sampler on by default, the CUDA-graph estimate subtracted before
        /// the KV cache (`VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS` defaults to 1).
        From0_21 => "0.21",
    }
}

impl VllmRelease {
    /// The release class of a version ("0.19.1", "v0.11.0", "0.21"). V0-engine releases (below
    /// 0.8, or run with `VLLM_USE_V1=0`) are not modelled by a class.
    pub fn of_version(s: &str) -> Result<Self, String> {
        let v = s.trim().trim_start_matches(['v', 'V']);
        let mut parts = v.split('.');
        let num = |p: Option<&str>| p.and_then(|x| x.trim().parse::<u64>().ok());
        let (Some(major), Some(minor)) = (num(parts.next()), num(parts.next())) else {
            return Err(format!("\"{s}\" is not a version (e.g. 0.19.1)"));
        };
        if major > 0 {
            return Ok(Self::From0_21);
        }
        Ok(match minor {
            0..=7 => {
                return Err(format!(
                    "{s}: vLLM before 0.8 ran the V0 engine, whose profiling is not modelled (0.8 to 0.11 are one class)"
                ));
            }
            8..=11 => Self::Upto0_11,
            12..=16 => Self::From0_12,
            17..=20 => Self::From0_17,
            _ => Self::From0_21,
        })
    }

    /// The profiling sampler's path by default with `rows` dummy requests (the Triton kernel
    /// runs from 8 rows: `apply_top_k_top_p`'s `logits.shape[0] >= 8`).
    pub const fn sampler(self, rows: u64) -> SamplerPath {
        match self {
            Self::Upto0_11 | Self::From0_21 => SamplerPath::FlashInfer,
            Self::From0_12 => SamplerPath::Sort,
            Self::From0_17 if rows >= 8 => SamplerPath::Triton,
            Self::From0_17 => SamplerPath::Sort,
        }
    }

    /// Whether the release subtracts its CUDA-graph estimate before sizing the KV cache.
    pub const fn subtracts_cudagraphs(self) -> bool {
        matches!(self, Self::From0_21)
    }

    /// The releases the class covers, in words.
    pub const fn span(self) -> &'static str {
        match self {
            Self::Upto0_11 => "vLLM 0.8 to 0.11",
            Self::From0_12 => "vLLM 0.12 to 0.16",
            Self::From0_17 => "vLLM 0.17 to 0.20",
            Self::From0_21 => "vLLM 0.21 or later",
        }
    }
}

impl std::str::FromStr for VllmRelease {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::of_version(s)
    }
}

crate::tokens::token_enum! {
    /// Weight quantization (`--quantization`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Quantization {
        /// The checkpoint's own (its `quantization_config`: AWQ, GPTQ, FP8, MXFP4, bitsandbytes), or
        /// none.
        Auto => "auto" | "none",
        /// vLLM's online fp8: the Linear weights of an unquantized checkpoint cast to fp8 e4m3 with a
        /// per-tensor scale (embeddings and the LM head stay in the model dtype).
        Fp8 => "fp8",
    }
}

impl Quantization {
    /// The methods vLLM reads from a checkpoint's `quantization_config`, which `--quantization`
    /// cannot ask of an unquantized one.
    pub const FROM_CHECKPOINT: [&'static str; 4] = ["awq", "gptq", "mxfp4", "bitsandbytes"];
}

impl std::str::FromStr for Quantization {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(q) = crate::tokens::find(&Self::SPELLINGS, s, true) {
            return Ok(q);
        }
        if Self::FROM_CHECKPOINT.iter().any(|m| m.eq_ignore_ascii_case(s)) {
            return Err(format!(
                "--quantization {s} is read from the checkpoint's config.json (quantization_config): give that model, with --quantization {}",
                Self::Auto.name()
            ));
        }
        Err(format!("unknown quantization \"{s}\" ({})", Self::TOKENS.join(", ")))
    }
}

/// The server's settings; `None` fields take vLLM's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct ServeConfig {
    /// Tensor-parallel size.
    pub tp: u64,
    /// Pipeline-parallel size.
    pub pp: u64,
    /// `--gpu-memory-utilization`, in (0, 1].
    pub gpu_memory_utilization: f64,
    /// `--max-model-len` (default: the model's maximum positions).
    pub max_model_len: Option<u64>,
    /// Allow a `max_model_len` above the model's positions (`VLLM_ALLOW_LONG_MAX_MODEL_LEN=1`).
    pub allow_long_max_model_len: bool,
    /// `--max-num-batched-tokens` (default by card, as `vllm serve` sets it).
    pub max_num_batched_tokens: Option<u64>,
    /// `--max-num-seqs` (default by card).
    pub max_num_seqs: Option<u64>,
    /// Tokens per KV block (a power of two; vLLM's default 16).
    pub block_size: u64,
    /// KV-cache dtype.
    pub kv_dtype: KvDtype,
    /// Model dtype (`--dtype`; `None`: the checkpoint's, fp32 served as bf16).
    pub dtype: Option<DType>,
    /// Weight quantization.
    pub quantization: Quantization,
    /// `--enforce-eager`: no CUDA graphs.
    pub enforce_eager: bool,
    /// CUDA-graph memory subtracted before the KV cache (vLLM ≥ 0.21 estimates it), bytes.
    pub cudagraph_bytes: Option<u64>,
    /// Non-torch memory the profiling adds, bytes (default: the card's cuBLAS workspace, plus
    /// NCCL buffers under TP/PP).
    pub non_torch_bytes: Option<u64>,
    /// The CUDA-visible total of the card, bytes (default: the catalog's).
    pub cuda_total_bytes: Option<u64>,
    /// A mean context length to give the concurrency at, besides `max_model_len`.
    pub context: Option<u64>,
    /// A what-if: the model as a quantized checkpoint of this format (an AWQ / GPTQ export of
    /// it), for a model whose own checkpoint is not quantized.
    pub checkpoint_format: Option<CheckpointFormat>,
    /// The profiling sampler's top-k / top-p path (`None`: the release's default).
    pub sampler: Option<SamplerPath>,
    /// The vLLM release modelled.
    pub release: VllmRelease,
}

crate::tokens::token_enum! {
    /// A quantized export of an unquantized model (`--checkpoint-format`), as the Hub's
    /// `<model>-AWQ` / `-GPTQ` repositories hold it: 4-bit weights, groups of 128 input features.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum CheckpointFormat {
        /// AWQ 4-bit, group 128 (AutoAWQ / llm-compressor's GEMM packing).
        AwqInt4 => "awq-int4" | "awq",
        /// GPTQ 4-bit, group 128.
        GptqInt4 => "gptq-int4" | "gptq",
    }
    impl FromStr = Parse::named("checkpoint format").any_case();
}

impl CheckpointFormat {
    /// The weight format the checkpoint stores.
    pub const fn format(self) -> crate::model::quant::WeightFormat {
        use crate::model::quant::WeightFormat;
        match self {
            Self::AwqInt4 => WeightFormat::Awq { bits: 4, group_size: 128 },
            Self::GptqInt4 => WeightFormat::Gptq { bits: 4, group_size: 128 },
        }
    }
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            tp: 1,
            pp: 1,
            gpu_memory_utilization: 0.9,
            max_model_len: None,
            allow_long_max_model_len: false,
            max_num_batched_tokens: None,
            max_num_seqs: None,
            block_size: 16,
            kv_dtype: KvDtype::Auto,
            dtype: None,
            quantization: Quantization::Auto,
            enforce_eager: false,
            cudagraph_bytes: None,
            non_torch_bytes: None,
            cuda_total_bytes: None,
            context: None,
            checkpoint_format: None,
            sampler: None,
            release: VllmRelease::default(),
        }
    }
}
