//! Serving capacity: what a vLLM-style server gives the KV cache, and how many requests fit.
//!
//! The model follows vLLM's V1 engine as of its `memory_profiling` accounting
//! (`vllm/v1/worker/gpu_worker.py::determine_available_memory`, `vllm/v1/core/kv_cache_utils.py`,
//! `vllm/v1/kv_cache_interface.py`), by release class ([`VllmRelease`], `--vllm-version`: what
//! changes between them is the profiling sampler's path and whether CUDA-graph memory is
//! subtracted), each term reported on its own and overridable:
//!
//! * budget = the CUDA-visible total (`torch.cuda.mem_get_info()[1]`, less than NVML's total) ×
//!   `--gpu-memory-utilization`;
//! * non-KV = the weights on the rank + the torch peak increase of the profiling forward over
//!   `max_num_batched_tokens` ([`profile`]: the largest of a decoder layer's transient tensors and
//!   the dummy sampler's — FlashInfer's, Triton's or the sort path's, as the release picks —,
//!   attention itself not executed while profiling) + the non-torch increase (cuBLAS workspace,
//!   NCCL buffers under TP/PP; the CUDA context predates vLLM's baseline) + a CUDA-graph
//!   estimate when one is given (vLLM ≥ 0.21 subtracts its own by default; earlier versions
//!   capture graphs after the KV cache is allocated);
//! * KV = budget − non-KV, cut into pages of `block_size` tokens ([`kv`]); every rank takes the
//!   smallest block count.
//!
//! `config` holds the settings and their flags' enums, `checks` what is refused before an answer
//! (as vLLM refuses it at start-up) and the served dtype; `advice` what to change.

pub mod advice;
mod checks;
mod config;
pub mod kv;
pub mod profile;
pub mod text;

pub use config::{CheckpointFormat, KvDtype, Quantization, SamplerPath, ServeConfig, VllmRelease};

use crate::estimate::{Mode, Scenario, estimate};
use crate::gpu::Gpu;
use crate::model::ModelSpec;
use crate::units::{DType, Precision};
use checks::{check, model_dtype, transformer};
use serde::Serialize;
use std::borrow::Cow;

/// Schema version of `serve --json`.
pub const SERVE_SCHEMA: u32 = 1;

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
    /// The profiling sampler's path (`--sampler`'s spelling).
    #[serde(serialize_with = "token")]
    pub sampler: SamplerPath,
    /// The vLLM release class modelled (`--vllm-version`'s spelling: "0.17").
    #[serde(serialize_with = "token")]
    pub vllm_version: VllmRelease,
}

/// A choice as its flag spells it.
fn token<S: serde::Serializer, T: Copy + Into<&'static str>>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str((*v).into())
}

impl From<SamplerPath> for &'static str {
    fn from(v: SamplerPath) -> Self {
        v.name()
    }
}

impl From<VllmRelease> for &'static str {
    fn from(v: VllmRelease) -> Self {
        v.name()
    }
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
        if self.vllm_version != VllmRelease::default() {
            put("--vllm-version", self.vllm_version.name().into());
        }
        if self.sampler != self.vllm_version.sampler(self.max_num_seqs) {
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
    /// Tokens per block as vLLM runs it: `--block-size`, raised for a hybrid model so that a
    /// page holds a recurrent layer's state.
    pub kv_block_size: u64,
    /// A recurrent layer's state per request on a rank, before vLLM pads it to a page (0: no
    /// recurrent layers).
    pub state_bytes_per_layer: u64,
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
    gpu.cuda_total()
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
    let served = exported(model, cfg)?;
    let model: &ModelSpec = &served;
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
    let sampler = cfg.sampler.unwrap_or_else(|| cfg.release.sampler(max_num_seqs));
    let peak = profile::peak(t, cfg.tp, cfg.pp, mnbt, max_num_seqs, dtype, sampler);
    let world = cfg.tp * cfg.pp;
    let non_torch = cfg.non_torch_bytes.unwrap_or_else(|| {
        let nccl = crate::estimate::Parallel { tp: cfg.tp, pp: cfg.pp, ..Default::default() }.nccl();
        (gpu.workspace_mib << 20) + if world > 1 { nccl } else { 0 }
    });
    let cudagraph = if cfg.enforce_eager { 0 } else { cfg.cudagraph_bytes.unwrap_or(0) };
    if !cfg.enforce_eager && cfg.cudagraph_bytes.is_none() {
        notes.push(if cfg.release.subtracts_cudagraphs() {
            "vLLM ≥ 0.21 subtracts its own CUDA-graph estimate before the KV cache: not modelled, give it with --cudagraph-mib (its start-up log's estimate), or --enforce-eager".into()
        } else {
            format!("{}: CUDA graphs are captured after the KV cache is allocated, not subtracted (0.18 to 0.20 subtract their estimate with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1: give it with --cudagraph-mib)", cfg.release.span())
        });
    }
    let non_kv = weights + peak.bytes + non_torch + cudagraph;
    let kv_cache = budget.saturating_sub(non_kv);
    let old_log = cfg.release != VllmRelease::From0_21;
    let layout = kv::Layout::of(t, cfg.tp, cfg.pp, cfg.block_size, kv_dtype_bytes(cfg.kv_dtype, dtype))
        .with_state(t, cfg.tp, cfg.pp, dtype.bytes(1), old_log);
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
    if cap.max_concurrency > max_num_seqs as f64 {
        notes.push(format!(
            "the KV cache holds {:.1} requests of max_model_len, as vLLM's \"Maximum concurrency\" line counts it; the scheduler runs at most --max-num-seqs {max_num_seqs} at once",
            cap.max_concurrency
        ));
    }
    if layout.state_layers > 0 {
        notes.push(state_note(t, &layout, t.num_layers.div_ceil(cfg.pp.max(1)), cfg.block_size));
    }
    if t.unmodelled.is_some() {
        // a state-space layer keeps a constant state per request, not a per-token KV cache
        notes.push("the KV cache per token above counts every layer as attention: the state-space or linear-attention layers keep a fixed-size state per request instead (vLLM's hybrid allocator), not modelled, so the token and concurrency figures are not this model's".into());
    }
    Ok(Serve {
        schema: SERVE_SCHEMA,
        model: model.name.clone(),
        gpu: gpu.id.clone(),
        settings: ServeSettings::of(cfg, dtype, (max_model_len, mnbt, max_num_seqs), sampler),
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
        kv_block_size: layout.block_size,
        state_bytes_per_layer: layout.state_bytes,
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

/// The model as served: a `--checkpoint-format` what-if stores the format's quantized weights.
fn exported<'a>(model: &'a ModelSpec, cfg: &ServeConfig) -> Result<Cow<'a, ModelSpec>, ServeError> {
    let Some(f) = cfg.checkpoint_format else { return Ok(Cow::Borrowed(model)) };
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
    Ok(Cow::Owned(m))
}

/// vLLM's name of a model dtype.
fn dtype_name(d: DType) -> &'static str {
    match d {
        DType::F16 => "float16",
        DType::F32 => "float32",
        _ => "bfloat16",
    }
}

impl ServeSettings {
    /// The settings an answer used: `cfg` with vLLM's defaults filled in.
    fn of(cfg: &ServeConfig, dtype: DType, lens: (u64, u64, u64), sampler: SamplerPath) -> Self {
        let (max_model_len, mnbt, max_num_seqs) = lens;
        ServeSettings {
            tp: cfg.tp,
            pp: cfg.pp,
            gpu_memory_utilization: cfg.gpu_memory_utilization,
            max_model_len,
            max_num_batched_tokens: mnbt,
            max_num_seqs,
            block_size: cfg.block_size,
            dtype: dtype_name(dtype).into(),
            kv_cache_dtype: match cfg.kv_dtype {
                KvDtype::Auto => dtype_name(dtype).into(),
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
            sampler,
            vllm_version: cfg.release,
        }
    }
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
    /// Why the server would not start, on one line (`None` when it starts): what `vramscope
    /// serve` writes on stderr with exit code 3.
    pub fn refusal(&self) -> Option<String> {
        use crate::units::{digits, gib};
        if self.fits {
            return None;
        }
        let b = &self.bytes;
        Some(if b.kv_cache == 0 {
            format!(
                "the server would not start: nothing is left for the KV cache (weights {} + profiling peak {} + non-torch {} + CUDA graphs {} against a budget of {})",
                gib(b.weights),
                gib(b.activation_peak),
                gib(b.non_torch),
                gib(b.cudagraph),
                gib(b.budget)
            )
        } else {
            format!(
                "the server would not start: one {}-token request needs more than the {} tokens of KV cache left (--max-model-len {} fits)",
                digits(self.settings.max_model_len),
                digits(self.kv_tokens),
                self.max_model_len_that_fits
            )
        })
    }

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

/// What vLLM's hybrid allocator does with the recurrent layers' state, as its start-up log says it.
fn state_note(t: &crate::model::TransformerSpec, l: &kv::Layout, layers: u64, asked_block: u64) -> String {
    let kind = if t.delta.is_some_and(|d| d.kda) {
        "Kimi Delta Attention"
    } else if t.delta.is_some() {
        "gated DeltaNet"
    } else if t.ssm.is_some() {
        "Mamba2"
    } else if t.mamba.is_some() {
        "Mamba"
    } else {
        "short-convolution"
    };
    let mut n = format!(
        "{} of {layers} layers are {kind} mixers: each keeps a fixed state of {:.1} KiB per request on a rank (the convolution's last taps and the scan's state, in the model's dtype), which vLLM keeps in pages of its own, one per request in each state group (prefix caching off, vLLM's default for hybrid models up to 0.25; from 0.26 it is on and a request holds 2 or more: not modelled)",
        l.state_layers,
        l.state_bytes as f64 / 1024.0,
    );
    if l.full_layers + l.sliding_layers > 0 {
        if l.block_size > asked_block {
            n += &format!(
                "; the attention block is raised to {} tokens so that a K/V page holds a state",
                l.block_size
            );
        }
        n += &format!(" (\"Padding mamba page size by {:.2}%\")", l.state_padding_percent());
        if l.tokens_per_group {
            n += "; the KV tokens are vLLM's logged count (the blocks of one layer group × the block), not what the attention layers can hold: read the concurrency";
        }
    }
    n
}
