//! Serving capacity: what a vLLM-style server gives the KV cache, and how many requests fit.
//!
//! The model follows vLLM's V1 engine as of its `memory_profiling` accounting (v0.7 to v0.20;
//! `vllm/v1/worker/gpu_worker.py::determine_available_memory`, `vllm/v1/core/kv_cache_utils.py`,
//! `vllm/v1/kv_cache_interface.py`), each term reported on its own and overridable:
//!
//! * budget = the CUDA-visible total (`torch.cuda.mem_get_info()[1]`, less than NVML's total) ×
//!   `--gpu-memory-utilization`;
//! * non-KV = the weights on the rank + the torch peak increase of the profiling forward over
//!   `max_num_batched_tokens` ([`profile`]: the largest of a decoder layer's transient tensors and
//!   the dummy sampler's, attention itself not executed while profiling) + the non-torch increase
//!   (cuBLAS workspace, NCCL buffers under TP/PP; the CUDA context predates vLLM's baseline) + a
//!   CUDA-graph estimate when one is given (vLLM ≥ 0.21 subtracts its own by default; earlier
//!   versions capture graphs after the KV cache is allocated);
//! * KV = budget − non-KV, cut into pages of `block_size` tokens ([`kv`]); every rank takes the
//!   smallest block count.

pub mod advice;
pub mod kv;
pub mod profile;
pub mod text;

use crate::estimate::{Mode, Scenario, estimate};
use crate::gpu::Gpu;
use crate::model::{ModelSpec, TransformerSpec};
use crate::units::{DType, Precision};
use serde::Serialize;

/// Schema version of `serve --json`.
pub const SERVE_SCHEMA: u32 = 1;

/// KV-cache element type (`--kv-cache-dtype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KvDtype {
    /// The model's dtype.
    Auto,
    /// fp8 (e4m3): one byte per element.
    Fp8,
    /// fp8 e5m2: one byte per element.
    Fp8E5m2,
}

impl std::str::FromStr for KvDtype {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "fp8" | "fp8_e4m3" => Ok(Self::Fp8),
            "fp8_e5m2" => Ok(Self::Fp8E5m2),
            _ => Err(format!("unknown KV-cache dtype \"{s}\" (auto, fp8, fp8_e4m3, fp8_e5m2)")),
        }
    }
}

/// How the profiling run's dummy sampler filters top-k / top-p (`VLLM_USE_FLASHINFER_SAMPLER`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SamplerPath {
    /// FlashInfer's `top_k_top_p_sampling_from_logits` (vLLM's default on CUDA with FlashInfer
    /// installed): `top_k_mask_logits` then `softmax`, no sort.
    #[default]
    FlashInfer,
    /// The PyTorch sort path (`VLLM_USE_FLASHINFER_SAMPLER=0`, or no FlashInfer).
    Sort,
}

impl SamplerPath {
    /// The `--sampler` value.
    pub const fn name(self) -> &'static str {
        match self {
            Self::FlashInfer => "flashinfer",
            Self::Sort => "sort",
        }
    }
}

impl std::str::FromStr for SamplerPath {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "flashinfer" => Ok(Self::FlashInfer),
            "sort" | "torch" | "native" => Ok(Self::Sort),
            _ => Err(format!("unknown sampler \"{s}\" (flashinfer, sort)")),
        }
    }
}

/// Weight quantization (`--quantization`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Quantization {
    /// The checkpoint's own (its `quantization_config`: AWQ, GPTQ, FP8, MXFP4, bitsandbytes), or
    /// none.
    Auto,
    /// vLLM's online fp8: the Linear weights of an unquantized checkpoint cast to fp8 e4m3 with a
    /// per-tensor scale (embeddings and the LM head stay in the model dtype).
    Fp8,
}

impl std::str::FromStr for Quantization {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "auto" | "none" => Ok(Self::Auto),
            "fp8" => Ok(Self::Fp8),
            "awq" | "gptq" | "mxfp4" | "bitsandbytes" => Err(format!(
                "--quantization {s} is read from the checkpoint's config.json (quantization_config): give that model, with --quantization auto"
            )),
            _ => Err(format!("unknown quantization \"{s}\" (auto, fp8)")),
        }
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
    /// The profiling sampler's top-k / top-p path.
    pub sampler: SamplerPath,
}

/// A quantized export of an unquantized model (`--checkpoint-format`), as the Hub's
/// `<model>-AWQ` / `-GPTQ` repositories hold it: 4-bit weights, groups of 128 input features.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckpointFormat {
    /// AWQ 4-bit, group 128 (AutoAWQ / llm-compressor's GEMM packing).
    AwqInt4,
    /// GPTQ 4-bit, group 128.
    GptqInt4,
}

impl CheckpointFormat {
    /// The flag's value.
    pub const fn name(self) -> &'static str {
        match self {
            Self::AwqInt4 => "awq-int4",
            Self::GptqInt4 => "gptq-int4",
        }
    }

    /// The weight format the checkpoint stores.
    pub const fn format(self) -> crate::model::quant::WeightFormat {
        use crate::model::quant::WeightFormat;
        match self {
            Self::AwqInt4 => WeightFormat::Awq { bits: 4, group_size: 128 },
            Self::GptqInt4 => WeightFormat::Gptq { bits: 4, group_size: 128 },
        }
    }
}

impl std::str::FromStr for CheckpointFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "awq-int4" | "awq" => Ok(Self::AwqInt4),
            "gptq-int4" | "gptq" => Ok(Self::GptqInt4),
            _ => Err(format!("unknown checkpoint format \"{s}\" (awq-int4, gptq-int4)")),
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
            sampler: SamplerPath::FlashInfer,
        }
    }
}

/// Why a serving question cannot be answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServeError {
    /// A setting out of range or a combination vLLM refuses.
    #[error("{0}")]
    Invalid(String),
}

fn bad<T>(m: impl Into<String>) -> Result<T, ServeError> {
    Err(ServeError::Invalid(m.into()))
}

/// The memory terms of a server, bytes per GPU (the most loaded rank).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServeBytes {
    /// The CUDA-visible total of the card.
    pub cuda_total: u64,
    /// `cuda_total × gpu_memory_utilization`.
    pub budget: u64,
    /// Weights on the rank.
    pub weights: u64,
    /// Torch peak increase of the profiling forward and sampler.
    pub activation_peak: u64,
    /// Non-torch increase during profiling (cuBLAS workspace, NCCL).
    pub non_torch: u64,
    /// CUDA-graph memory subtracted before the KV cache.
    pub cudagraph: u64,
    /// What is left for the KV cache (negative values are 0: the server does not start).
    pub kv_cache: u64,
}

/// The settings the answer used (vLLM's defaults filled in).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServeSettings {
    /// Tensor-parallel size.
    pub tp: u64,
    /// Pipeline-parallel size.
    pub pp: u64,
    /// Utilisation.
    pub gpu_memory_utilization: f64,
    /// The max_model_len asked for.
    pub max_model_len: u64,
    /// Tokens of the profiling forward.
    pub max_num_batched_tokens: u64,
    /// Sequences per step (and rows of the profiling sampler).
    pub max_num_seqs: u64,
    /// Tokens per block.
    pub block_size: u64,
    /// Model dtype.
    pub dtype: String,
    /// KV-cache dtype.
    pub kv_cache_dtype: String,
    /// No CUDA graphs.
    pub enforce_eager: bool,
    /// Weight quantization.
    pub quantization: Quantization,
    /// The what-if checkpoint format, when one was asked for.
    pub checkpoint_format: Option<CheckpointFormat>,
    /// Longer than the model's positions allowed.
    pub allow_long_max_model_len: bool,
    /// CUDA-graph memory given, MiB.
    pub cudagraph_mib: Option<u64>,
    /// Non-torch memory given, MiB.
    pub non_torch_mib: Option<u64>,
    /// The CUDA-visible total given, MiB.
    pub cuda_total_mib: Option<u64>,
    /// The profiling sampler's path.
    pub sampler: SamplerPath,
}

impl ServeSettings {
    /// Every setting as `vramscope serve` flags (after `--model` and `--gpu`): pasted back, they
    /// give the same answer. vLLM's own flags keep their names.
    pub fn args(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        let mut put = |k: &str, val: String| {
            v.push(k.to_owned());
            v.push(val);
        };
        put("--tp", self.tp.to_string());
        put("--pp", self.pp.to_string());
        put("--gpu-memory-utilization", self.gpu_memory_utilization.to_string());
        put("--max-model-len", self.max_model_len.to_string());
        put("--max-num-batched-tokens", self.max_num_batched_tokens.to_string());
        put("--max-num-seqs", self.max_num_seqs.to_string());
        put("--block-size", self.block_size.to_string());
        put("--dtype", self.dtype.clone());
        // the model's dtype is vLLM's "auto"
        let kv =
            if self.kv_cache_dtype == self.dtype { "auto".to_owned() } else { self.kv_cache_dtype.clone() };
        put("--kv-cache-dtype", kv);
        if self.quantization == Quantization::Fp8 {
            put("--quantization", "fp8".into());
        }
        if let Some(f) = self.checkpoint_format {
            put("--checkpoint-format", f.name().into());
        }
        for (k, m) in [
            ("--cudagraph-mib", self.cudagraph_mib),
            ("--non-torch-mib", self.non_torch_mib),
            ("--cuda-total-mib", self.cuda_total_mib),
        ] {
            if let Some(m) = m {
                put(k, m.to_string());
            }
        }
        if self.sampler != SamplerPath::FlashInfer {
            put("--sampler", self.sampler.name().into());
        }
        if self.enforce_eager {
            v.push("--enforce-eager".into());
        }
        if self.allow_long_max_model_len {
            v.push("--allow-long-max-model-len".into());
        }
        v
    }
}

/// The answer: will it start, how many tokens of KV cache, how many requests.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Serve {
    /// [`SERVE_SCHEMA`].
    pub schema: u32,
    /// Model name.
    pub model: String,
    /// GPU catalog id.
    pub gpu: String,
    /// The settings, defaults filled in.
    pub settings: ServeSettings,
    /// Memory terms per GPU.
    pub bytes: ServeBytes,
    /// Where the profiling peak is.
    pub activation_peak_at: String,
    /// KV bytes of one token on the most loaded rank (every layer of it).
    pub kv_bytes_per_token: u64,
    /// KV blocks (the smallest over the ranks).
    pub kv_blocks: u64,
    /// Tokens of KV cache (vLLM's "GPU KV cache size").
    pub kv_tokens: u64,
    /// Requests of `max_model_len` tokens that fit at once (vLLM's "Maximum concurrency").
    pub max_concurrency: f64,
    /// Requests of `context` tokens that fit at once, when a context was given.
    pub concurrency_at_context: Option<f64>,
    /// The context `concurrency_at_context` is for.
    pub context: Option<u64>,
    /// The largest max_model_len whose one request fits (vLLM's `estimate_max_model_len`).
    pub max_model_len_that_fits: u64,
    /// Would the server start (budget within the card, the KV cache positive and one request of
    /// `max_model_len` in it)?
    pub fits: bool,
    /// What was assumed, and what is not modelled.
    pub notes: Vec<String>,
    /// The KV layout of the most loaded rank (for concurrency at other contexts).
    #[serde(skip)]
    pub layout: kv::Layout,
}

/// vLLM's defaults of `vllm serve` by card (`arg_utils.py::_set_default_args`): H100-class cards
/// (70 GiB or more, not an A100) batch 8192 tokens and 1024 sequences, others 2048 and 256.
pub fn default_batching(gpu: &Gpu) -> (u64, u64) {
    let big = gpu.memory_bytes() >= 70 << 30 && !gpu.id.to_ascii_lowercase().contains("a100");
    if big { (8192, 1024) } else { (2048, 256) }
}

/// The CUDA-visible total of a card: the catalog's measured figure, else (stated in the notes)
/// 1 % below NVML's total.
pub fn cuda_total(gpu: &Gpu) -> (u64, bool) {
    match gpu.cuda_total_mib {
        Some(m) => (m << 20, true),
        None => (gpu.memory_bytes() / 100 * 99, false),
    }
}

fn model_dtype(
    cfg: &ServeConfig,
    checkpoint: Option<&str>,
    gpu: &Gpu,
    notes: &mut Vec<String>,
) -> Result<DType, ServeError> {
    // bfloat16 needs compute capability 8.0 (Ampere) or newer
    let no_bf16 = crate::options::generation(gpu).is_some_and(|(g, _)| g < 2);
    if let Some(d) = cfg.dtype {
        if d == DType::Bf16 && no_bf16 {
            return bad(format!(
                "--dtype bfloat16: the {} has no bfloat16 (compute capability below 8.0; vLLM refuses it): use --dtype float16",
                gpu.name
            ));
        }
        return Ok(d);
    }
    let d = match checkpoint {
        Some("float16") => DType::F16,
        Some("float32") => {
            notes.push("the checkpoint is float32: served in bfloat16, as vLLM's dtype \"auto\" does".into());
            DType::Bf16
        }
        _ => DType::Bf16,
    };
    if d == DType::Bf16 && no_bf16 {
        notes.push(format!(
            "the {} has no bfloat16: served in float16, as vLLM's dtype \"auto\" falls back",
            gpu.name
        ));
        return Ok(DType::F16);
    }
    Ok(d)
}

fn transformer(model: &ModelSpec) -> Result<&TransformerSpec, ServeError> {
    match model.transformer() {
        Some(t) if t.num_heads > 0 && crate::families::has_kv_cache(t) => Ok(t),
        _ => bad(format!("{}: serving capacity needs a decoder language model", model.name)),
    }
}

/// Checks the settings against the model, as vLLM does at start-up.
fn check(cfg: &ServeConfig, t: &TransformerSpec) -> Result<(), ServeError> {
    let u = cfg.gpu_memory_utilization;
    if !(u > 0.0 && u <= 1.0) {
        return bad(format!("--gpu-memory-utilization {u} is outside (0, 1]"));
    }
    if cfg.block_size == 0 || !cfg.block_size.is_power_of_two() || cfg.block_size > 1024 {
        return bad(format!("--block-size {} is not a power of two up to 1024", cfg.block_size));
    }
    if cfg.tp == 0 || cfg.pp == 0 {
        return bad("--tp and --pp are at least 1");
    }
    if !t.num_heads.is_multiple_of(cfg.tp) {
        return bad(format!("--tp {} does not divide the {} attention heads", cfg.tp, t.num_heads));
    }
    if t.mla.is_none()
        && !t.num_kv_heads.is_multiple_of(cfg.tp)
        && !cfg.tp.is_multiple_of(t.num_kv_heads.max(1))
    {
        return bad(format!(
            "--tp {} neither divides the {} KV heads nor is a multiple of them (vLLM refuses it)",
            cfg.tp, t.num_kv_heads
        ));
    }
    if cfg.pp > t.num_layers {
        return bad(format!("--pp {} is more than the {} layers", cfg.pp, t.num_layers));
    }
    if let Some(m) = cfg.max_model_len {
        if m == 0 {
            return bad("--max-model-len is at least 1");
        }
        if m > t.max_context() && !cfg.allow_long_max_model_len && t.max_context() > 0 {
            return bad(format!(
                "--max-model-len {m} is above the model's {} positions (vLLM refuses it unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: add --allow-long-max-model-len)",
                t.max_context()
            ));
        }
    } else if t.max_context() == 0 {
        return bad(
            "the model's config names no context length (max_position_embeddings): give --max-model-len",
        );
    }
    for (name, v) in
        [("--max-num-batched-tokens", cfg.max_num_batched_tokens), ("--max-num-seqs", cfg.max_num_seqs)]
    {
        if v == Some(0) {
            return bad(format!("{name} is at least 1"));
        }
    }
    if cfg.context == Some(0) {
        return bad("--context is at least 1");
    }
    Ok(())
}

/// The weights on the most loaded rank, as the estimator counts them (the checkpoint's
/// quantized formats included).
fn weights(model: &ModelSpec, cfg: &ServeConfig, dtype: DType) -> Result<u64, ServeError> {
    let mut sc = Scenario::new(model.clone());
    sc.mode = Mode::Infer;
    sc.batch = 1;
    sc.seq = 1;
    sc.precision = match (cfg.quantization, dtype) {
        (Quantization::Fp8, _) => Precision::Fp8,
        (_, DType::F16) => Precision::Fp16,
        (_, DType::F32) => Precision::Fp32,
        _ => Precision::Bf16,
    };
    sc.parallel.tp = cfg.tp;
    sc.parallel.pp = cfg.pp;
    estimate(&sc).map(|e| e.parameters).map_err(|e| ServeError::Invalid(e.to_string()))
}

/// Answers the serving question for `model` on `gpu`. `checkpoint_dtype` is the config's
/// `torch_dtype` (for `--dtype auto`).
pub fn serve(
    model: &ModelSpec,
    gpu: &Gpu,
    cfg: &ServeConfig,
    checkpoint_dtype: Option<&str>,
) -> Result<Serve, ServeError> {
    let exported;
    let model = match cfg.checkpoint_format {
        None => model,
        Some(f) => {
            if model.transformer().is_some_and(|t| t.quant.is_some()) {
                return bad(format!(
                    "--checkpoint-format {}: {} is already a quantized checkpoint",
                    f.name(),
                    model.name
                ));
            }
            let mut m = model.clone();
            if let Some(t) = m.transformer_mut() {
                t.quant = Some(f.format());
            }
            exported = m;
            &exported
        }
    };
    let t = transformer(model)?;
    check(cfg, t)?;
    let mut notes = Vec::new();
    if let Some(f) = cfg.checkpoint_format {
        notes.push(format!(
            "a what-if: the model as a {} checkpoint (an export of it, e.g. a Hub repository \"…-{}\"); vLLM serves that repository, not --quantization",
            f.format().label(),
            if f == CheckpointFormat::AwqInt4 { "AWQ" } else { "GPTQ" }
        ));
    }
    let dtype = model_dtype(cfg, checkpoint_dtype, gpu, &mut notes)?;
    let (mnbt_default, seqs_default) = default_batching(gpu);
    let max_model_len = cfg.max_model_len.unwrap_or(t.max_context()).max(1);
    let mnbt = cfg.max_num_batched_tokens.unwrap_or(mnbt_default);
    let max_num_seqs = cfg.max_num_seqs.unwrap_or(seqs_default).min(mnbt);
    let (cuda_total, measured) = match cfg.cuda_total_bytes {
        Some(b) => (b, true),
        None => cuda_total(gpu),
    };
    if !measured {
        notes.push(format!(
            "the CUDA-visible total of the {} is not measured in the catalog: taken as 1 % below NVML's total (--cuda-total-mib gives torch.cuda.mem_get_info()'s)",
            gpu.name
        ));
    }
    let budget = (cuda_total as f64 * cfg.gpu_memory_utilization).ceil() as u64;
    let weights = weights(model, cfg, dtype)?;
    if cfg.quantization == Quantization::Fp8 {
        notes.push("online fp8: the weights counted as the estimator's fp8 precision (one byte per Linear weight and a per-tensor scale)".into());
    }
    let peak = profile::peak(t, cfg.tp, cfg.pp, mnbt, max_num_seqs, dtype, cfg.sampler);
    let world = cfg.tp * cfg.pp;
    let non_torch = cfg.non_torch_bytes.unwrap_or_else(|| {
        let nccl = crate::estimate::Parallel { tp: cfg.tp, pp: cfg.pp, ..Default::default() }.nccl();
        (gpu.workspace_mib << 20) + if world > 1 { nccl } else { 0 }
    });
    let cudagraph = if cfg.enforce_eager { 0 } else { cfg.cudagraph_bytes.unwrap_or(0) };
    if !cfg.enforce_eager && cfg.cudagraph_bytes.is_none() {
        notes.push("CUDA graphs are captured after the KV cache is allocated (vLLM ≤ 0.20): not subtracted; vLLM ≥ 0.21 subtracts its own estimate first (give it with --cudagraph-mib, or --enforce-eager)".into());
    }
    let non_kv = weights + peak.bytes + non_torch + cudagraph;
    let kv_cache = budget.saturating_sub(non_kv);
    let layout = kv::Layout::of(t, cfg.tp, cfg.pp, cfg.block_size, kv_dtype_bytes(cfg.kv_dtype, dtype));
    let cap = kv::Capacity::of(&layout, kv_cache, max_model_len, mnbt);
    let concurrency_at_context =
        cfg.context.map(|c| kv::Capacity::of(&layout, kv_cache, c.min(max_model_len), mnbt).max_concurrency);
    let fits = budget <= cuda_total && kv_cache > 0 && cap.max_model_len_that_fits >= max_model_len;
    if kv_cache == 0 {
        notes.push("no memory is left for KV cache blocks: vLLM stops with \"No available memory for the cache blocks\"".into());
    } else if !fits {
        notes.push(format!(
            "one request of max_model_len {max_model_len} needs more KV cache than is left: vLLM refuses to start (--max-model-len {} fits)",
            cap.max_model_len_that_fits
        ));
    }
    if layout.has_sliding {
        notes.push("sliding-window layers keep their window plus the batched tokens per request; the token count is vLLM's (concurrency × max_model_len)".into());
    }
    if t.unvalidated_type.is_some() {
        notes.push(format!("{}: a generic decoder (not validated for this architecture)", model.name));
    }
    let name = |d: DType| match d {
        DType::F16 => "float16",
        DType::F32 => "float32",
        _ => "bfloat16",
    };
    Ok(Serve {
        schema: SERVE_SCHEMA,
        model: model.name.clone(),
        gpu: gpu.id.clone(),
        settings: ServeSettings {
            tp: cfg.tp,
            pp: cfg.pp,
            gpu_memory_utilization: cfg.gpu_memory_utilization,
            max_model_len,
            max_num_batched_tokens: mnbt,
            max_num_seqs,
            block_size: cfg.block_size,
            dtype: name(dtype).into(),
            kv_cache_dtype: match cfg.kv_dtype {
                KvDtype::Auto => name(dtype).into(),
                KvDtype::Fp8 => "fp8_e4m3".into(),
                KvDtype::Fp8E5m2 => "fp8_e5m2".into(),
            },
            enforce_eager: cfg.enforce_eager,
            quantization: cfg.quantization,
            checkpoint_format: cfg.checkpoint_format,
            allow_long_max_model_len: cfg.allow_long_max_model_len,
            cudagraph_mib: cfg.cudagraph_bytes.map(|b| b >> 20),
            non_torch_mib: cfg.non_torch_bytes.map(|b| b >> 20),
            cuda_total_mib: cfg.cuda_total_bytes.map(|b| b >> 20),
            sampler: cfg.sampler,
        },
        bytes: ServeBytes {
            cuda_total,
            budget,
            weights,
            activation_peak: peak.bytes,
            non_torch,
            cudagraph,
            kv_cache,
        },
        activation_peak_at: peak.at.into(),
        kv_bytes_per_token: layout.bytes_per_token(),
        kv_blocks: cap.blocks,
        kv_tokens: cap.tokens,
        max_concurrency: cap.max_concurrency,
        concurrency_at_context,
        context: cfg.context,
        max_model_len_that_fits: cap.max_model_len_that_fits,
        fits,
        notes,
        layout,
    })
}

fn kv_dtype_bytes(k: KvDtype, model: DType) -> u64 {
    match k {
        KvDtype::Auto => model.bytes(1),
        KvDtype::Fp8 | KvDtype::Fp8E5m2 => 1,
    }
}

#[cfg(test)]
mod tests;

impl Serve {
    /// No memory left for KV blocks.
    pub fn kv_cache_is_empty(&self) -> bool {
        self.bytes.kv_cache == 0
    }

    /// Every setting as `vramscope serve` flags after `--model`: `--gpu` and
    /// [`ServeSettings::args`].
    pub fn args(&self) -> Vec<String> {
        let mut v = vec!["--gpu".to_owned(), self.gpu.clone()];
        v.extend(self.settings.args());
        if let Some(c) = self.context {
            v.extend(["--context".to_owned(), c.to_string()]);
        }
        v
    }

    /// GPUs the server uses.
    pub fn gpus(&self) -> u64 {
        self.settings.tp * self.settings.pp
    }

    /// Requests of `context` tokens that fit at once (`context` capped at max_model_len).
    pub fn concurrency_at(&self, context: u64) -> f64 {
        let c = context.clamp(1, self.settings.max_model_len);
        kv::Capacity::of(&self.layout, self.bytes.kv_cache, c, self.settings.max_num_batched_tokens)
            .max_concurrency
    }

    /// The concurrency against context length, from 128 tokens to max_model_len (doubling),
    /// for the GUI's curve.
    pub fn concurrency_curve(&self) -> Vec<(u64, f64)> {
        let top = self.settings.max_model_len;
        let mut out = Vec::new();
        // from 128 tokens: below that the scheduler's --max-num-seqs caps any server
        let mut c = 128.min(top);
        while c < top {
            out.push((c, self.concurrency_at(c)));
            c *= 2;
        }
        out.push((top, self.max_concurrency));
        out
    }
}
