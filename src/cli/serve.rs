//! `vramscope serve`: what a vLLM-style server gives the KV cache, and how many requests fit.

use super::bounds;
use super::choice::choice;
use super::notes;
use anyhow::{Result, bail};
use clap::Args;
use vramscope::gpu;
use vramscope::serve::{
    self, CheckpointFormat, KvDtype, Quantization, SamplerPath, ServeConfig, VllmRelease,
};
use vramscope::units::DType;

/// Flags of `serve` (vLLM's names).
#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Preset name, a path to config.json / a model folder, or a Hugging Face Hub id
    /// (ORG/NAME[@REV]: its config.json and safetensors headers are fetched, never the weights).
    #[arg(long)]
    pub model: String,
    /// --revision and --offline, for a Hub id.
    #[command(flatten)]
    pub hub: super::hub::HubArgs,
    /// GPU (catalog id or short form: h100, 4090, a100-80gb).
    #[arg(long)]
    pub gpu: String,
    /// Tensor-parallel size.
    #[arg(long, alias = "tensor-parallel-size", default_value_t = 1, value_parser = bounds::int(1, bounds::MAX_DEGREE))]
    pub tp: u64,
    /// Pipeline-parallel size.
    #[arg(long, alias = "pipeline-parallel-size", default_value_t = 1, value_parser = bounds::int(1, bounds::MAX_DEGREE))]
    pub pp: u64,
    /// Fraction of the CUDA-visible memory the server may use, in (0, 1].
    #[arg(long, default_value_t = 0.9, value_parser = bounds::fraction())]
    pub gpu_memory_utilization: f64,
    /// Longest request (default: the model's context length).
    #[arg(long, value_parser = bounds::int(1, bounds::MAX_TOKENS))]
    pub max_model_len: Option<u64>,
    /// Allow a --max-model-len above the model's positions (vLLM's VLLM_ALLOW_LONG_MAX_MODEL_LEN=1).
    #[arg(long)]
    pub allow_long_max_model_len: bool,
    /// Tokens per scheduler step, and of the profiling forward (default: vLLM's for the card).
    #[arg(long, value_parser = bounds::int(1, bounds::MAX_TOKENS))]
    pub max_num_batched_tokens: Option<u64>,
    /// Sequences per step, and rows of the profiling sampler (default: vLLM's for the card).
    #[arg(long, value_parser = bounds::int(1, 65_536))]
    pub max_num_seqs: Option<u64>,
    /// Tokens per KV block (a power of two).
    #[arg(long, default_value_t = 16, value_parser = bounds::int(1, 1024))]
    pub block_size: u64,
    /// KV-cache dtype.
    #[arg(long, alias = "kv-cache-dtype", default_value = KvDtype::Auto.name())]
    #[arg(value_parser = choice::<KvDtype>().notes(notes::KV_DTYPE))]
    pub kv_dtype: KvDtype,
    /// Model dtype: auto (the checkpoint's; float32 served as bfloat16), bfloat16, float16.
    #[arg(long, default_value = "auto")]
    pub dtype: String,
    /// Weight quantization.
    #[arg(long, default_value = Quantization::Auto.name())]
    #[arg(value_parser = choice::<Quantization>().notes(notes::QUANTIZATION))]
    pub quantization: Quantization,
    /// No CUDA graphs.
    #[arg(long)]
    pub enforce_eager: bool,
    /// CUDA-graph memory vLLM subtracts before the KV cache (>= 0.21 estimates it), MiB.
    #[arg(long, value_name = "MIB", value_parser = bounds::int(0, bounds::MAX_TERM_MIB))]
    pub cudagraph_mib: Option<u64>,
    /// Non-torch memory the profiling adds, MiB (default: the card's cuBLAS workspace, plus NCCL
    /// buffers under TP/PP).
    #[arg(long, value_name = "MIB", value_parser = bounds::int(0, bounds::MAX_TERM_MIB))]
    pub non_torch_mib: Option<u64>,
    /// The card's CUDA-visible total (torch.cuda.mem_get_info()[1]), MiB (default: the catalog's).
    #[arg(long, value_name = "MIB", value_parser = bounds::int(1, 1 << 20))]
    pub cuda_total_mib: Option<u64>,
    /// Also give the concurrency at this mean context length (tokens).
    #[arg(long, value_parser = bounds::int(1, bounds::MAX_TOKENS))]
    pub context: Option<u64>,
    /// A what-if: the model as a 4-bit export of itself (group 128), as a Hub "…-AWQ" repository
    /// holds it.
    #[arg(long, value_name = "FORMAT", value_parser = choice::<CheckpointFormat>())]
    pub checkpoint_format: Option<CheckpointFormat>,
    /// The vLLM release (0.8 to 0.11, 0.12 to 0.16, 0.17 to 0.20, 0.21 on are modelled
    /// classes: the profiling sampler and whether CUDA-graph memory is subtracted change
    /// between them), e.g. 0.19.1.
    #[arg(long, value_name = "VERSION", default_value = "0.19")]
    #[arg(value_parser = |s: &str| VllmRelease::of_version(s))]
    pub vllm_version: VllmRelease,
    /// The profiling sampler's top-k / top-p path (default: the release's).
    #[arg(long)]
    #[arg(value_parser = choice::<SamplerPath>().notes(notes::SAMPLER))]
    pub sampler: Option<SamplerPath>,
    /// Print the serving options: each change alone (utilisation, fewer sequences, fp8 KV, fp8 or
    /// 4-bit weights, more GPUs with TP, a larger card), with what the server gives after it.
    #[arg(long, conflicts_with = "roadmap")]
    pub options: bool,
    /// Print a short / mid / long-term roadmap: changes applied in order until the server starts
    /// (and, with --target-concurrency, holds that many requests).
    #[arg(long)]
    pub roadmap: bool,
    /// With --options / --roadmap: concurrent requests to reach (at --context, else at
    /// --max-model-len).
    #[arg(long, value_name = "N", value_parser = bounds::real(0.0, bounds::End::Open, 1e7, bounds::End::Closed))]
    pub target_concurrency: Option<f64>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// [`load`] without the source (the tests').
#[cfg(test)]
pub fn setup(a: &ServeArgs) -> Result<(serve::advice::Setup, Vec<String>)> {
    load(a).map(|(s, notes, _)| (s, notes))
}

/// The server `a` describes: the model, its card and vLLM's settings (with the loader's notes),
/// and where a model named by its Hub id came from.
fn load(a: &ServeArgs) -> Result<(serve::advice::Setup, Vec<String>, Option<vramscope::hub::Source>)> {
    let super::hub::Model { loaded, source } = super::hub::load_model(&a.model, &a.hub)?;
    let g = gpu::find(&a.gpu).map_err(anyhow::Error::msg)?;
    let dtype = match a.dtype.to_ascii_lowercase().as_str() {
        "auto" => None,
        "bfloat16" | "bf16" => Some(DType::Bf16),
        "float16" | "fp16" | "half" => Some(DType::F16),
        other => bail!("--dtype {other}: use auto, bfloat16 or float16"),
    };
    let cfg = ServeConfig {
        tp: a.tp,
        pp: a.pp,
        gpu_memory_utilization: a.gpu_memory_utilization,
        max_model_len: a.max_model_len,
        allow_long_max_model_len: a.allow_long_max_model_len,
        max_num_batched_tokens: a.max_num_batched_tokens,
        max_num_seqs: a.max_num_seqs,
        block_size: a.block_size,
        kv_dtype: a.kv_dtype,
        dtype,
        quantization: a.quantization,
        enforce_eager: a.enforce_eager,
        cudagraph_bytes: a.cudagraph_mib.map(|m| m << 20),
        non_torch_bytes: a.non_torch_mib.map(|m| m << 20),
        cuda_total_bytes: a.cuda_total_mib.map(|m| m << 20),
        context: a.context,
        checkpoint_format: a.checkpoint_format,
        sampler: a.sampler,
        release: a.vllm_version,
    };
    let setup = serve::advice::Setup { model: loaded.model, gpu: g, cfg, checkpoint_dtype: loaded.dtype };
    let mut notes = loaded.notes;
    notes.extend(gpu::default_note(&a.gpu));
    Ok((setup, notes, source))
}

/// Runs `serve`.
pub fn run_serve(a: &ServeArgs) -> Result<String> {
    let (setup, load_notes, source) = load(a)?;
    if a.target_concurrency.is_some() && !(a.options || a.roadmap) {
        bail!("--target-concurrency goes with --options or --roadmap");
    }
    if a.options || a.roadmap {
        let adv = serve::advice::advise(&setup, a.target_concurrency)?;
        if a.json {
            return Ok(serde_json::to_string_pretty(&adv)? + "\n");
        }
        return Ok(serve::text::advice(&adv, &a.model, a.options));
    }
    let mut s = serve::serve(&setup.model, &setup.gpu, &setup.cfg, setup.checkpoint_dtype.as_deref())?;
    // the loader's "unvalidated architecture" note says what serve's own says, more exactly
    if load_notes.iter().any(|n| n.starts_with("unvalidated architecture")) {
        s.notes.retain(|n| !n.ends_with(": a generic decoder (not validated for this architecture)"));
    }
    s.notes.splice(0..0, load_notes);
    let out = if a.json {
        let mut v = serde_json::to_value(&s)?;
        if let (Some(obj), Some(src)) = (v.as_object_mut(), &source) {
            obj.insert("source".into(), src.to_json());
        }
        serde_json::to_string_pretty(&v)? + "\n"
    } else {
        serve::text::answer(&s, &setup.gpu.name)
    };
    match s.refusal() {
        Some(reason) => Err(WouldNotStart { output: out, reason }.into()),
        None => Ok(out),
    }
}

/// The answer of a server that would not start: printed as usual on stdout, the reason on one
/// line on stderr, exit code 3 (`main`).
#[derive(Debug)]
pub struct WouldNotStart {
    /// What `serve` prints on stdout (the text or the JSON).
    pub output: String,
    /// Why, on one line.
    pub reason: String,
}

impl std::fmt::Display for WouldNotStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for WouldNotStart {}
