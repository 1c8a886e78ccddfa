//! The command-line front: `vramscope <subcommand>`. Flags become a checked [`Scenario`] here,
//! once; everything else is the core's.

use anyhow::{Context, Result};
use choice::choice;
use clap::{Args, Parser, Subcommand};
use vramscope::estimate::context::ModuleLoading;
use vramscope::estimate::scenario::CheckpointKeyword;
use vramscope::estimate::{
    AdapterDtype, AttentionImpl, BaseQuant, Checkpointing, Framework, FsdpImpl, FsdpMode, Lora, Loss, Mode,
    ModelCode, Offload, Optimizer, estimate,
};
use vramscope::gui::{lang::Lang, state::Tab};
use vramscope::model::preset;
use vramscope::report::{self, FitInfo};
use vramscope::units::{DType, Precision};
use vramscope::{fit, gpu};

mod bounds;
mod choice;
mod cluster;
mod diagnose;
mod export;
mod hub;
mod inputs;
mod notes;
mod plan;
mod probe;
mod serve;
mod timeline;
mod trace;

#[cfg(test)]
mod advice_tests;

pub use diagnose::{DiagnoseArgs, MonitorArgs, run_diagnose, run_monitor};
pub use export::{ExportArgs, run_export};
pub use inputs::{Inputs, inputs, inputs_with};
pub use plan::{PlanArgs, run_plan};
pub use probe::{CalibrateArgs, ProbeArgs, run_calibrate, run_probe};
pub use serve::{ServeArgs, WouldNotStart, run_serve};
pub use timeline::{TimelineArgs, run_timeline};
pub use trace::{TraceArgs, run_trace};

/// How much GPU memory a deep-learning job needs, why, and what to change so it fits.
#[derive(Parser, Debug)]
#[command(name = "vramscope", version, about, long_about = None)]
pub struct Cli {
    /// What to do; without one, the desktop app opens on the default scenario.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Open the app, render `--frames` frames of the default scenario, save a PNG screenshot of
    /// the window here and exit (for CI smoke tests and docs).
    #[arg(long, value_name = "PATH.png")]
    pub screenshot: Option<std::path::PathBuf>,
    /// Frames to render before the screenshot.
    #[arg(long, default_value_t = 10, value_parser = bounds::int32(1, 100_000))]
    pub frames: u32,
    /// With --screenshot: crop the picture to the stacked breakdown chart (for slides).
    #[arg(long, requires = "screenshot")]
    pub chart_only: bool,
    /// With --screenshot: the tab to show.
    #[arg(long, requires = "screenshot", value_parser = choice::<Tab>().notes(notes::TAB))]
    pub tab: Option<Tab>,
    /// Open the app in Serve mode: a vLLM-style server's KV-cache budget, concurrency against
    /// context, serving options (the default server: the default model on its GPU, 8k context).
    #[arg(long)]
    pub serve: bool,
    /// Open the app on a saved scenario (`vramscope export --format ron`, File > Export >
    /// Scenario) or a model file instead of the default scenario.
    #[arg(long, value_name = "FILE")]
    pub open: Option<std::path::PathBuf>,
    /// Open a recorded cluster in the Live tab: `vramscope monitor --prometheus URL --range 1h
    /// --json > run.json`, or the Live tab's CSV.
    #[arg(long, value_name = "FILE")]
    pub recording: Option<std::path::PathBuf>,
    /// The app's language, kept for the next start; default: the saved choice, else the system
    /// locale (LC_ALL, LC_MESSAGES, LANG).
    #[arg(long, value_name = "en|zh-CN", value_parser = choice::<Lang>().notes(notes::LANG))]
    pub lang: Option<Lang>,
    /// With --screenshot: the presentation layout (View > Presentation: large type, the chart in
    /// the centre, the controls as a slim strip), as on a projector.
    #[arg(long, requires = "screenshot")]
    pub presentation: bool,
    /// With --screenshot: the light theme (the default is dark).
    #[arg(long, requires = "screenshot")]
    pub light: bool,
    /// Write the slide of the scenario (the default, or --open FILE) to this PNG and exit, without
    /// a window: the chart with a title, caption, verdict and footer, 1920x1080 at 2x pixel
    /// density, light theme, in --lang (default en).
    #[arg(long, value_name = "PATH.png", conflicts_with = "screenshot")]
    pub slide: Option<std::path::PathBuf>,
    /// Open the Learn view at lesson N (1-8): the lesson's scenario, tab and highlighted
    /// segments; leaving it brings back the scenario the app opened on.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=8))]
    pub lesson: Option<u8>,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Estimate per-GPU memory of one training step or inference pass.
    Estimate(EstimateArgs),
    /// List the built-in model presets.
    Presets,
    /// List the GPU catalog.
    Gpus,
    /// Print the default scenario's estimate (what the app opens on) without opening a window.
    Default,
    /// Explain an out-of-memory message (PyTorch or TensorFlow) or classify a memory-usage trace.
    Diagnose(DiagnoseArgs),
    /// Sample GPU memory: this machine's through NVML, or a cluster's from Prometheus
    /// (--prometheus URL); exit code 3 when the source is unavailable.
    Monitor(MonitorArgs),
    /// Plan a multi-GPU job: per-rank memory of a layout, step time and speed-up, or (with
    /// --search) the feasible layouts ranked by step time and headroom.
    Plan(PlanArgs),
    /// The predicted memory of one step, event by event (forward op by op, backward block by
    /// block with recomputes, optimizer step): a table, --json or --csv.
    Timeline(TimelineArgs),
    /// Serving capacity of a vLLM-style server: its KV-cache budget, tokens, concurrent
    /// requests and the longest max_model_len that fits.
    #[command(
        after_help = "Exit codes: 0 the server starts (or --options / --roadmap answered); 2 bad input (one line on stderr); 3 the server would not start (the model leaves no KV cache, or one --max-model-len request does not fit): the answer on stdout as usual, the reason on one line on stderr."
    )]
    Serve(ServeArgs),
    /// Write the plan to a file: the scenario (.ron), a report (md/json), the what-if curves
    /// (csv), the roadmap, or framework settings (deepspeed/hf/fsdp/megatron).
    Export(ExportArgs),
    /// Write a PyTorch script that measures the scenario on a real GPU (`-o probe.py`); its
    /// result goes to `calibrate`.
    Probe(ProbeArgs),
    /// Compare a probe's measurement with the estimate per component; --save stores the GPU's
    /// measured CUDA context and allocator reserve for `estimate --calibrated`.
    Calibrate(CalibrateArgs),
    /// Any PyTorch model: write the tracer script (--emit-script) that records one step of a
    /// model file under fake tensors (no GPU, no weights), or read what a trace holds (--info).
    /// A trace is a model: vramscope estimate --model FILE.vstrace.json.
    Trace(TraceArgs),
}

/// Flags of `estimate`.
#[derive(Args, Debug, Clone)]
pub struct EstimateArgs {
    /// Preset name, a path to config.json, a .ron preset, a .safetensors file or
    /// model.safetensors.index.json, or a Hugging Face Hub id (ORG/NAME[@REV]: its config.json
    /// and safetensors headers are fetched, never the weights; see --revision, --offline).
    #[arg(long, required_unless_present = "scenario")]
    pub model: Option<String>,
    /// --revision and --offline, for a Hub id.
    #[command(flatten)]
    pub hub: hub::HubArgs,
    /// A saved scenario (`vramscope export --format ron`, or File > Save in the app) instead of
    /// --model and the scenario flags; --gpu overrides the file's GPU.
    #[arg(long, value_name = "FILE.ron", conflicts_with_all = [
        "model", "mode", "batch", "seq", "image_size", "dim", "images", "new_tokens", "precision", "optimizer", "attention", "checkpoint", "lora",
        "lora_dropout", "base_quant", "kv_dtype", "context_mib", "workspace_mib", "reserve_frac",
        "dp", "tp", "pp", "cp", "ep", "sp", "zero", "fsdp", "offload", "micro_batches", "virtual_stages",
        "gpus_per_node", "nccl_mib", "framework", "loss", "optimizer_in_backward", "adapter_dtype",
        "bnb_compute_dtype", "alloc_conf", "grad_accum", "keep_grads", "compile_loss", "module_loading",
        "model_code", "torch", "bitsandbytes", "fsdp_impl", "mixer_impl",
    ])]
    pub scenario: Option<std::path::PathBuf>,
    /// A training step or an inference pass.
    #[arg(long, default_value = Mode::Train.name(), value_parser = choice::<Mode>())]
    pub mode: Mode,
    /// Micro-batch size per GPU.
    #[arg(long, default_value_t = 1, value_parser = bounds::int(1, bounds::MAX_TOKENS))]
    pub batch: u64,
    /// Sequence length (default: 512, or the model's positions if fewer); the prompt with
    /// --new-tokens. A vision-language model's text tokens: its image tokens are added.
    #[arg(long, value_parser = bounds::int(1, bounds::MAX_TOKENS))]
    pub seq: Option<u64>,
    /// A vision model's input image, `N` or `HxW` pixels (default: the config's `image_size`):
    /// its tokens (the patches, and the class token where the model has one) set the sequence.
    /// A vision-language model's images (with --images; alone, one image a sample): their tokens,
    /// as its processor makes them, are added to the text's.
    #[arg(long, value_name = "HxW")]
    pub image_size: Option<vramscope::model::pixels::ImageSize>,
    /// A traced model's named dim (repeat for several): NAME=VALUE, e.g. --dim frames=16.
    /// Its `batch` is --batch and its `height` and `width` are --image-size.
    #[arg(long, value_name = "NAME=VALUE", value_parser = parse_dim)]
    pub dim: Vec<(String, u64)>,
    /// Images per sample of a vision-language model (Qwen2.5-VL, Qwen3-VL, LLaVA, Gemma 3, Mistral 3), of
    /// --image-size; the vision tower and projector are frozen.
    #[arg(long, value_name = "N", value_parser = bounds::int(1, vramscope::model::image_tokens::MAX_IMAGES))]
    pub images: Option<u64>,
    /// Inference as HF `generate`: the prompt's forward keeps only the last token's logits, then
    /// N new tokens grow the KV cache (`max_new_tokens`). Without it, inference is one scoring
    /// forward over --seq tokens with the full logits.
    #[arg(long, value_name = "N")]
    pub new_tokens: Option<u64>,
    /// Precision recipe (default: the config's `torch_dtype` — float32 → fp32, float16 → fp16 —
    /// else bf16).
    #[arg(long, value_parser = choice::<Precision>())]
    pub precision: Option<Precision>,
    /// Optimizer, as PyTorch, bitsandbytes or transformers implement it.
    #[arg(long, default_value = Optimizer::Adamw.name(), value_parser = choice::<Optimizer>())]
    pub optimizer: Optimizer,
    /// Attention implementation (transformers' attn_implementation).
    #[arg(long, default_value = AttentionImpl::Sdpa.name(), value_parser = choice::<AttentionImpl>())]
    pub attention: AttentionImpl,
    /// Gradient (activation) checkpointing.
    #[arg(long, default_value = CheckpointKeyword::None.form())]
    #[arg(value_parser = choice::<Checkpointing>().notes(notes::CHECKPOINT))]
    pub checkpoint: Checkpointing,
    /// LoRA: RANK (targets q,v, PEFT's default for Llama-like models), RANK:all (every projection:
    /// q,k,v,o,gate,up,down), or RANK:LIST of those (e.g. 16:q,k,v,o).
    #[arg(long)]
    pub lora: Option<Lora>,
    /// LoRA adapter dropout probability.
    #[arg(long, default_value_t = 0.0, value_parser = bounds::share())]
    pub lora_dropout: f64,
    /// bitsandbytes weights quantized at load: the frozen base of a LoRA run (QLoRA), or the
    /// weights of an inference run (transformers' BitsAndBytesConfig, litgpt --quantize bnb.*).
    #[arg(long, default_value = BaseQuant::None.name())]
    #[arg(value_parser = choice::<BaseQuant>().notes(notes::BASE_QUANT))]
    pub base_quant: BaseQuant,
    /// Training framework whose defaults set --loss, --adapter-dtype and --model-code (explicit
    /// flags win).
    #[arg(long, value_parser = choice::<Framework>())]
    pub framework: Option<Framework>,
    /// How the logits and the cross-entropy loss are computed.
    #[arg(long, value_parser = choice::<Loss>().notes(notes::LOSS))]
    pub loss: Option<Loss>,
    /// Step each parameter in backward and free its gradient (torchtune optimizer_in_bwd).
    #[arg(long)]
    pub optimizer_in_backward: bool,
    /// Micro-batches per optimizer step (gradient accumulation): from the second on, every
    /// gradient is alive through forward and backward.
    #[arg(long, value_name = "N", value_parser = bounds::int32(1, 65_536))]
    pub grad_accum: Option<u32>,
    /// zero_grad(set_to_none=False), the default before PyTorch 2.0: gradients stay allocated
    /// between steps.
    #[arg(long)]
    pub keep_grads: bool,
    /// The loss runs under torch.compile (torchtune compile: True): the fused cross-entropy
    /// keeps the logits and a logsumexp per row, not the fp32 log-softmax.
    #[arg(long)]
    pub compile_loss: bool,
    /// LoRA adapter dtype.
    #[arg(long, value_parser = choice::<AdapterDtype>().notes(notes::ADAPTER_DTYPE))]
    pub adapter_dtype: Option<AdapterDtype>,
    /// Whose model code runs a Llama-like model.
    #[arg(long, value_name = "CODE", value_parser = choice::<ModelCode>().notes(notes::MODEL_CODE))]
    pub model_code: Option<ModelCode>,
    /// The PyTorch version (e.g. 2.1): before 2.2, `mean` keeps its input for backward, so every
    /// RMSNorm keeps its squared input; before 2.0 there is no SDPA (eager attention is
    /// estimated); before 1.11 softmax and log_softmax keep their input too. `zero_grad`'s
    /// pre-2.0 default is a separate flag (--keep-grads).
    #[arg(long, value_name = "X.Y")]
    pub torch: Option<vramscope::estimate::Torch>,
    /// Which code runs a recurrent model's mixers (Mamba2, Mamba, gated DeltaNet, Kimi Delta
    /// Attention): `kernels` (mamba_ssm, causal_conv1d or flash-linear-attention installed, on a
    /// GPU: transformers' default there) or `torch` (transformers' PyTorch path, which keeps the
    /// chunked scan's fp32 tensors: several times more).
    #[arg(long, value_name = "IMPL", value_parser = choice::<vramscope::estimate::MixerImpl>())]
    pub mixer_impl: Option<vramscope::estimate::MixerImpl>,
    /// The bitsandbytes version (e.g. 0.41): before 0.43, 4-bit weights are quantized from fp16,
    /// so under bf16 each 4-bit matmul holds the fp16 weight and its bf16 cast; or `lightning`:
    /// Lightning's BitsandbytesPrecision plugin (litgpt's default), which always quantizes from
    /// fp16, the LM head included.
    #[arg(long, value_name = "X.Y|lightning")]
    pub bitsandbytes: Option<String>,
    /// Whose FSDP runs under --fsdp. Default: the framework's.
    #[arg(long, value_name = "IMPL", value_parser = choice::<FsdpImpl>().notes(notes::FSDP_IMPL))]
    pub fsdp_impl: Option<FsdpImpl>,
    /// bnb_4bit_compute_dtype of a 4-bit base: fp32, fp16, bf16 (default: the compute dtype).
    #[arg(long)]
    pub bnb_compute_dtype: Option<DType>,
    /// KV-cache element type for inference (default: compute dtype): bf16, fp16, fp8, int8.
    #[arg(long)]
    pub kv_dtype: Option<DType>,
    /// GPU from the catalog (see `vramscope gpus`; unambiguous short forms such as 4090 or h200
    /// work, a family name takes its usual part: h100 is the SXM5 h100-80gb) or a size like 24gb:
    /// adds fits and max_batch.
    #[arg(long)]
    pub gpu: Option<String>,
    /// CUDA context size in MiB (default 500).
    #[arg(long, value_parser = bounds::int(0, bounds::MAX_TERM_MIB))]
    pub context_mib: Option<u64>,
    /// CUDA_MODULE_LOADING, or the CUDA runtime version to take its default (e.g. 11.3). Applies
    /// to the card's default context, not to --context-mib.
    #[arg(long, value_name = "lazy|eager|CUDA")]
    #[arg(value_parser = choice::<ModuleLoading>().notes(notes::MODULE_LOADING))]
    pub module_loading: Option<ModuleLoading>,
    /// cuBLAS workspace in MiB (default 32).
    #[arg(long, value_parser = bounds::int(0, bounds::MAX_TERM_MIB))]
    pub workspace_mib: Option<u64>,
    /// A flat allocator reserve as a fraction of the peak instead of the allocator replay (the
    /// GUI's sampled curves use 0.05 between the points they mark).
    #[arg(long, value_parser = bounds::real(0.0, bounds::End::Closed, 1.0, bounds::End::Closed))]
    pub reserve_frac: Option<f64>,
    /// PYTORCH_CUDA_ALLOC_CONF for the allocator replay, e.g. expandable_segments:True or
    /// max_split_size_mb:128,garbage_collection_threshold:0.8.
    #[arg(long, value_name = "CONF")]
    pub alloc_conf: Option<vramscope::estimate::scenario::AllocConf>,
    /// Parallel layout.
    #[command(flatten)]
    pub parallel: ParallelArgs,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also list which op of each kind of block keeps what for backward (JSON: `block_ops`).
    #[arg(long)]
    pub ops: bool,
    /// Also give every pipeline stage's rank (with --pp: each stage's blocks, micro-batches in
    /// flight, peak and total; JSON: `stages`), the prediction a cluster's GPUs are read against.
    #[arg(long)]
    pub stages: bool,
    /// Use the --gpu's calibration profile (`vramscope calibrate probe.json --save`) for the CUDA
    /// context and allocator reserve; --context-mib / --reserve-frac still win.
    #[arg(long)]
    pub calibrated: bool,
    /// Where calibration profiles live (default: vramscope's data folder, `calibration/`).
    #[arg(long, value_name = "DIR")]
    pub profile_dir: Option<std::path::PathBuf>,
}

/// Parallelism flags shared by `estimate` and `plan`.
#[derive(Args, Debug, Clone, Default)]
pub struct ParallelArgs {
    /// Data-parallel degree (GPUs sharing the model states under ZeRO/FSDP; default 1, or with
    /// `plan --gpus N` the GPUs left by the other degrees).
    #[arg(long, value_parser = bounds::int(1, bounds::MAX_GPUS))]
    pub dp: Option<u64>,
    /// Tensor-parallel degree (Megatron column/row split).
    #[arg(long, default_value_t = 1, value_parser = bounds::int(1, bounds::MAX_DEGREE))]
    pub tp: u64,
    /// Pipeline-parallel degree.
    #[arg(long, default_value_t = 1, value_parser = bounds::int(1, bounds::MAX_DEGREE))]
    pub pp: u64,
    /// Context-parallel degree (sequence split, ring attention).
    #[arg(long, default_value_t = 1, value_parser = bounds::int(1, bounds::MAX_DEGREE))]
    pub cp: u64,
    /// Expert-parallel degree (MoE).
    #[arg(long, default_value_t = 1, value_parser = bounds::int(1, bounds::MAX_DEGREE))]
    pub ep: u64,
    /// Sequence parallelism with tensor parallelism.
    #[arg(long)]
    pub sp: bool,
    /// ZeRO stage 0-3 (0: DDP replicas; 1: optimizer states sharded; 2: + gradients; 3: + parameters).
    #[arg(long, default_value_t = 0, value_parser = bounds::int8(0, 3))]
    pub zero: u8,
    /// PyTorch FSDP's sharding strategy (overrides --zero).
    #[arg(long, value_parser = choice::<FsdpMode>())]
    pub fsdp: Option<FsdpMode>,
    /// What ZeRO-Offload / ZeRO-Infinity moves off the GPU.
    #[arg(long, default_value = Offload::None.name())]
    #[arg(value_parser = choice::<Offload>().notes(notes::OFFLOAD))]
    pub offload: Offload,
    /// Pipeline micro-batches per step (default: as many as stages).
    #[arg(long, default_value_t = 0, value_parser = bounds::int(0, 65_536))]
    pub micro_batches: u64,
    /// Virtual pipeline stages per rank (interleaved 1F1B).
    #[arg(long, default_value_t = 1, value_parser = bounds::int(1, 1024))]
    pub virtual_stages: u64,
    /// GPUs per node (default 8).
    #[arg(long, default_value_t = 8, value_parser = bounds::int(1, 576))]
    pub gpus_per_node: u64,
    /// NCCL buffers per GPU in MiB when more than one GPU takes part, all communicators together
    /// (default 256 for each process group in use: data-, tensor-, pipeline-, context-,
    /// expert-parallel; two for HSDP across nodes).
    #[arg(long, value_parser = bounds::int(0, bounds::MAX_TERM_MIB))]
    pub nccl_mib: Option<u64>,
}

impl ParallelArgs {
    /// The core's parallel layout.
    pub fn to_parallel(&self) -> vramscope::estimate::Parallel {
        vramscope::estimate::Parallel {
            dp: self.dp.unwrap_or(1),
            zero: self.zero,
            tp: self.tp,
            pp: self.pp,
            cp: self.cp,
            ep: self.ep,
            sp: self.sp,
            fsdp: self.fsdp,
            micro_batches: self.micro_batches,
            virtual_stages: self.virtual_stages,
            offload: self.offload,
            gpus_per_node: self.gpus_per_node,
            nccl_bytes: self.nccl_mib.map(|m| m << 20),
        }
    }
}

/// Runs `estimate`.
pub fn run_estimate(a: &EstimateArgs) -> Result<String> {
    let Inputs { sc, mut notes, gpu, source, provenance, .. } = inputs(a)?;
    // the allocator is replayed over the step on the card (a calibration profile's or
    // --reserve-frac's flat reserve stands for it where given): the verdict every advice uses
    let (e, replay, fit_info) = match gpu {
        Some(g) => {
            let cap = g.capacity();
            let v = fit::verdict(&sc, cap)?;
            if let Some(r) = v.replay.as_ref().filter(|r| v.fits && r.alloc_retries > 0) {
                notes.push(format!(
                    "the caching allocator ran out of free segments {} time(s) and released its cache to serve the step (PyTorch retries a failed cudaMalloc after emptying the cache): the total is what it holds then, at the card's edge; a smaller job that never nears the card keeps more cached, so its total can be higher",
                    r.alloc_retries
                ));
            }
            let fit = FitInfo {
                fits: v.fits,
                max_batch: fit::max_batch(&sc, cap),
                max_seq: fit::max_seq(&sc, cap),
                gpu: g,
            };
            (v.estimate, v.replay, Some(fit))
        }
        None if sc.overhead.flat_reserve => (estimate(&sc)?, None, None),
        None => {
            let (e, r) = vramscope::estimate::estimate_reserved(&sc, None)?;
            (e, Some(r), None)
        }
    };
    let ops = if a.ops { vramscope::estimate::block_ops(&sc) } else { Vec::new() };
    let stages = if a.stages {
        let cap = fit_info.as_ref().map(|f| f.gpu.capacity());
        vramscope::estimate::per_stage(&sc, cap)?
    } else {
        Vec::new()
    };
    Ok(if a.json {
        let mut v = report::to_json(&sc, &e, fit_info.as_ref(), &notes);
        if let Some(m) = v.get_mut("model").and_then(|m| m.as_object_mut()) {
            if let Some(src) = &source {
                m.insert("source".into(), src.to_json());
            }
            if !provenance.0.is_empty() {
                m.insert(
                    "facts".into(),
                    serde_json::to_value(&provenance.0).context("serialising the facts")?,
                );
            }
            if let Some(h) = &provenance.1 {
                m.insert(
                    "header_check".into(),
                    serde_json::to_value(h).context("serialising the header check")?,
                );
            }
        }
        if let (Some(obj), Some(replay)) = (v.as_object_mut(), &replay) {
            obj.insert(
                "allocator_replay".into(),
                serde_json::json!({
                    "peak_reserved": replay.peak_reserved,
                    "peak_allocated": replay.peak_allocated,
                    "segments": replay.segments,
                    "cuda_mallocs": replay.cuda_mallocs,
                    "alloc_retries": replay.alloc_retries,
                    "ooms": replay.ooms,
                    "alloc_conf": sc.overhead.allocator,
                }),
            );
        }
        if a.ops
            && let Some(obj) = v.as_object_mut()
        {
            obj.insert("block_ops".into(), serde_json::to_value(&ops).context("serialising the op table")?);
        }
        if a.stages
            && let Some(obj) = v.as_object_mut()
        {
            obj.insert("stages".into(), serde_json::Value::Array(stages.iter().map(stage_json).collect()));
        }
        serde_json::to_string_pretty(&v).context("serialising the estimate")? + "\n"
    } else {
        let mut s = report::to_text(&sc, &e, fit_info.as_ref(), &notes);
        if !stages.is_empty() {
            s += &stages_text(&sc, &stages);
        }
        for b in &ops {
            let kind = vramscope::model::layer::describe(b.flags);
            let kind = if kind.is_empty() { String::new() } else { format!(" ({kind})") };
            s += &format!("\n  which op keeps what, per block, {} block(s){kind}:\n", b.layers);
            for op in b.ops.iter().filter(|o| o.kept_bytes > 0) {
                let mib = op.kept_bytes as f64 / (1u64 << 20) as f64;
                s += &format!("    {:<30}{:>14} B  {mib:>10.1} MiB\n", op.op, op.kept_bytes);
            }
        }
        s
    })
}

/// One stage's rank in `estimate --stages --json`.
fn stage_json(e: &vramscope::estimate::Estimate) -> serde_json::Value {
    serde_json::json!({
        "index": e.stage.index, "blocks": e.stage.blocks, "in_flight": e.stage.in_flight,
        "parameters": e.parameters, "activations": e.activations, "peak_allocated": e.peak_allocated,
        "reserved": e.reserved, "total": e.total,
    })
}

/// The `--stages` table: each stage, the ranks that run it, and its totals.
fn stages_text(sc: &vramscope::estimate::Scenario, stages: &[vramscope::estimate::Estimate]) -> String {
    let gib = |b: u64| b as f64 / vramscope::units::GIB;
    let per = (sc.parallel.world() / sc.parallel.pp.max(1)).max(1);
    let worst = stages.iter().map(|e| e.total).max().unwrap_or(0);
    let mut s = String::from(
        "\n  per pipeline stage (ranks in Megatron / torchrun order, the pipeline outermost):\n",
    );
    for e in stages {
        let (lo, hi) = (e.stage.index * per, (e.stage.index + 1) * per - 1);
        let ranks = if lo == hi { format!("rank {lo}") } else { format!("ranks {lo}-{hi}") };
        s += &format!(
            "    stage {:>2} ({ranks}): {:>3} blocks, {:.1} micro-batches in flight, peak {:.2} GiB, total {:.2} GiB{}\n",
            e.stage.index,
            e.stage.blocks,
            e.stage.in_flight,
            gib(e.peak_allocated),
            gib(e.total),
            if e.total == worst && stages.len() > 1 { "  <- most loaded" } else { "" }
        );
    }
    s
}

/// The built-in default scenario: Llama-3.1-8B full fine-tune, bf16, AdamW, on one H100 80 GB.
pub fn default_args() -> EstimateArgs {
    EstimateArgs {
        model: Some("llama-3.1-8b".into()),
        hub: hub::HubArgs::default(),
        scenario: None,
        mode: Mode::Train,
        batch: 1,
        seq: Some(2048),
        image_size: None,
        dim: Vec::new(),
        images: None,
        new_tokens: None,
        precision: Some(Precision::Bf16),
        optimizer: Optimizer::Adamw,
        attention: AttentionImpl::Sdpa,
        checkpoint: Checkpointing::Full,
        lora: None,
        lora_dropout: 0.0,
        base_quant: BaseQuant::None,
        framework: None,
        loss: None,
        optimizer_in_backward: false,
        grad_accum: None,
        keep_grads: false,
        compile_loss: false,
        adapter_dtype: None,
        model_code: None,
        torch: None,
        mixer_impl: None,
        bitsandbytes: None,
        fsdp_impl: None,
        bnb_compute_dtype: None,
        kv_dtype: None,
        gpu: Some("h100-80gb".into()),
        context_mib: None,
        module_loading: None,
        workspace_mib: None,
        reserve_frac: None,
        alloc_conf: None,
        parallel: ParallelArgs {
            dp: None,
            tp: 1,
            pp: 1,
            cp: 1,
            ep: 1,
            virtual_stages: 1,
            gpus_per_node: 8,
            ..Default::default()
        },
        json: false,
        ops: false,
        stages: false,
        calibrated: false,
        profile_dir: None,
    }
}

/// `presets`.
pub fn list_presets() -> String {
    let mut s = String::new();
    // the display names' column as wide as the longest
    let width = preset::preset_names().iter().filter_map(|n| preset::builtin(n)).map(|m| m.name.len()).max();
    let width = width.unwrap_or(28).max(28);
    for name in preset::preset_names() {
        if let Some(m) = preset::builtin(name) {
            let family = match m.transformer() {
                Some(t) => serde_json::to_value(t.family)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                None if m.traced().is_some() => "traced".into(),
                None => m.net().map_or("layer table", |n| n.family_id()).into(),
            };
            // a traced preset says what it is where a Hub id would be
            let from = match m.traced() {
                Some(_) => preset::display_name(name),
                None => preset::hub_id(name).to_owned(),
            };
            s += &format!(
                "{name:<20} {:<width$} {:>10} params  {family:<12} {from}\n",
                m.name,
                report::human_count(m.n_params()),
            );
        }
    }
    s
}

/// `gpus`: each card with nvidia-smi's total and the total CUDA reports beside it (published,
/// else the rule's figure, marked).
pub fn list_gpus() -> String {
    let mut s = format!(
        "{:<17} {:<36} {:>10} {:>11} {:>6} {:>8}  {}\n",
        "id", "name", "nvidia-smi", "CUDA total", "GB/s", "TFLOP/s", "link"
    );
    let mut ruled = false;
    for g in gpu::catalog() {
        let (cuda, published) = g.cuda_total();
        ruled |= !published;
        s += &format!(
            "{:<17} {:<36} {:>6.2} GiB {:>6.2} GiB{} {:>6} {:>8}  {}\n",
            g.id,
            g.name,
            g.memory_mib as f64 / 1024.0,
            cuda as f64 / vramscope::units::GIB,
            if published { ' ' } else { '*' },
            g.bandwidth_gbs,
            g.bf16_dense_tflops,
            g.link
        );
    }
    if ruled {
        s += "\n* no published CUDA total for this card: 1 % below nvidia-smi's total is taken (a published one goes in presets/gpus.ron's cuda_total_mib)\n";
    }
    s
}

/// `--dim NAME=VALUE`.
fn parse_dim(s: &str) -> Result<(String, u64), String> {
    let (name, value) = s.split_once('=').ok_or_else(|| format!("expected NAME=VALUE, got \"{s}\""))?;
    let ok = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        return Err(format!("\"{name}\" is not a dim name (letters, digits, _)"));
    }
    let v: u64 =
        value.trim().parse().map_err(|_| format!("{name}={value}: the value is not a whole number"))?;
    if v == 0 || v > 1 << 24 {
        return Err(format!("{name}={v}: out of range (1 to 16777216)"));
    }
    Ok((name.to_owned(), v))
}
