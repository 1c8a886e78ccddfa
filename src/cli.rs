//! The command-line front: `vramscope <subcommand>`. Flags become a checked [`Scenario`] here,
//! once; everything else is the core's.

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};
use vramscope::estimate::{
    AttentionImpl, BaseQuant, Checkpointing, Lora, Mode, Optimizer, Overhead, Scenario, estimate,
};
use vramscope::model::preset;
use vramscope::report::{self, FitInfo};
use vramscope::units::{DType, Precision};
use vramscope::{fit, gpu};

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
    #[arg(long, default_value_t = 10)]
    pub frames: u32,
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
}

/// Flags of `estimate`.
#[derive(Args, Debug, Clone)]
pub struct EstimateArgs {
    /// Preset name, or a path to config.json, a .ron preset, a .safetensors file or
    /// model.safetensors.index.json.
    #[arg(long)]
    pub model: String,
    /// train or infer.
    #[arg(long, default_value = "train")]
    pub mode: Mode,
    /// Micro-batch size per GPU.
    #[arg(long, default_value_t = 1)]
    pub batch: u64,
    /// Sequence length (default: 512, or the model's positions if fewer).
    #[arg(long)]
    pub seq: Option<u64>,
    /// fp32, bf16, fp16, bf16-amp, fp16-amp, fp8, int8, int4.
    #[arg(long, default_value = "bf16")]
    pub precision: Precision,
    /// adamw, adam, adamw-fused, adamw-8bit, adafactor, sgd, sgd-momentum, none.
    #[arg(long, default_value = "adamw")]
    pub optimizer: Optimizer,
    /// eager, sdpa or flash.
    #[arg(long, default_value = "sdpa")]
    pub attention: AttentionImpl,
    /// none, full, every:K, segments:N, selective.
    #[arg(long, default_value = "none")]
    pub checkpoint: Checkpointing,
    /// LoRA: RANK or RANK:q,k,v,o,gate,up,down (default targets q,v).
    #[arg(long)]
    pub lora: Option<Lora>,
    /// LoRA adapter dropout probability.
    #[arg(long, default_value_t = 0.0)]
    pub lora_dropout: f64,
    /// Quantized frozen base for LoRA (QLoRA): nf4 or int8.
    #[arg(long, default_value = "none")]
    pub base_quant: BaseQuant,
    /// KV-cache element type for inference (default: compute dtype): bf16, fp16, fp8, int8.
    #[arg(long)]
    pub kv_dtype: Option<DType>,
    /// GPU from the catalog (see `vramscope gpus`) or a size like 24gb: adds fits and max_batch.
    #[arg(long)]
    pub gpu: Option<String>,
    /// CUDA context size in MiB (default 500).
    #[arg(long)]
    pub context_mib: Option<u64>,
    /// cuBLAS workspace in MiB (default 32).
    #[arg(long)]
    pub workspace_mib: Option<u64>,
    /// Allocator reserve as a fraction of the peak (default 0.05).
    #[arg(long)]
    pub reserve_frac: Option<f64>,
    /// Data-parallel degree (GPUs sharing the model states under ZeRO).
    #[arg(long, default_value_t = 1)]
    pub dp: u64,
    /// ZeRO stage 0-3 (0: DDP replicas; 1: optimizer states sharded; 2: + gradients; 3: + parameters).
    #[arg(long, default_value_t = 0)]
    pub zero: u8,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Builds and checks the scenario; returns it with the notes from loading the model.
pub fn scenario(a: &EstimateArgs) -> Result<(Scenario, Vec<String>)> {
    let loaded = preset::load(&a.model)?;
    let mut sc = Scenario::new(loaded.model);
    sc.mode = a.mode;
    sc.batch = a.batch;
    if let Some(s) = a.seq {
        sc.seq = s;
    }
    sc.precision = a.precision;
    sc.optimizer = a.optimizer;
    sc.attention = a.attention;
    sc.checkpointing = a.checkpoint;
    sc.lora = a.lora.map(|l| Lora { dropout: a.lora_dropout, ..l });
    if a.lora.is_none() && a.lora_dropout != 0.0 {
        bail!("--lora-dropout needs --lora");
    }
    sc.base_quant = a.base_quant;
    if a.base_quant != BaseQuant::None && a.lora.is_none() {
        bail!(
            "--base-quant applies to the frozen base of a LoRA run; for inference use --precision int8|int4|fp8"
        );
    }
    sc.kv_cache_dtype = a.kv_dtype;
    let d = Overhead::default();
    sc.overhead = Overhead {
        cuda_context_bytes: a.context_mib.map_or(d.cuda_context_bytes, |m| m << 20),
        workspace_bytes: a.workspace_mib.map_or(d.workspace_bytes, |m| m << 20),
        allocator_reserve_fraction: a.reserve_frac.unwrap_or(d.allocator_reserve_fraction),
    };
    sc.parallel = vramscope::estimate::Parallel { dp: a.dp, zero: a.zero, ..Default::default() };
    sc.validate()?;
    Ok((sc, loaded.notes))
}

/// Runs `estimate`.
pub fn run_estimate(a: &EstimateArgs) -> Result<String> {
    let (sc, notes) = scenario(a)?;
    let e = estimate(&sc)?;
    let fit_info = match &a.gpu {
        Some(id) => {
            let g = gpu::find(id).map_err(anyhow::Error::msg)?;
            let cap = g.memory_bytes();
            Some(FitInfo { fits: e.total <= cap, max_batch: fit::max_batch(&sc, cap), gpu: g })
        }
        None => None,
    };
    Ok(if a.json {
        serde_json::to_string_pretty(&report::to_json(&sc, &e, fit_info.as_ref(), &notes))
            .context("serialising the estimate")?
            + "\n"
    } else {
        report::to_text(&sc, &e, fit_info.as_ref(), &notes)
    })
}

/// The built-in default scenario: Llama-3.1-8B full fine-tune, bf16, AdamW, on one H100 80 GB.
pub fn default_args() -> EstimateArgs {
    EstimateArgs {
        model: "llama-3.1-8b".into(),
        mode: Mode::Train,
        batch: 1,
        seq: Some(2048),
        precision: Precision::Bf16,
        optimizer: Optimizer::Adamw,
        attention: AttentionImpl::Sdpa,
        checkpoint: Checkpointing::Full,
        lora: None,
        lora_dropout: 0.0,
        base_quant: BaseQuant::None,
        kv_dtype: None,
        gpu: Some("h100-80gb".into()),
        context_mib: None,
        workspace_mib: None,
        reserve_frac: None,
        dp: 1,
        zero: 0,
        json: false,
    }
}

/// `presets`.
pub fn list_presets() -> String {
    let mut s = String::new();
    for name in preset::preset_names() {
        if let Some(m) = preset::builtin(name) {
            s += &format!("{name:<20} {:<28} {:>10} params\n", m.name, report::human_count(m.n_params()));
        }
    }
    s
}

/// `gpus`.
pub fn list_gpus() -> String {
    let mut s = String::new();
    for g in gpu::catalog() {
        s += &format!(
            "{:<11} {:<32} {:>7.1} GiB {:>6} GB/s {:>5} TFLOP/s  {}\n",
            g.id,
            g.name,
            g.memory_mib as f64 / 1024.0,
            g.bandwidth_gbs,
            g.bf16_dense_tflops,
            g.link
        );
    }
    s
}
