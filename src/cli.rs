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
    /// Explain an out-of-memory message (PyTorch or TensorFlow) or classify a memory-usage trace.
    Diagnose(DiagnoseArgs),
    /// Sample GPU memory through NVML (exit code 3 when NVML is unavailable).
    Monitor(MonitorArgs),
    /// Plan a multi-GPU job: per-rank memory of a layout, step time and speed-up, or (with
    /// --search) the feasible layouts ranked by step time and headroom.
    Plan(PlanArgs),
}

/// Flags of `monitor`.
#[derive(Args, Debug, Clone)]
pub struct MonitorArgs {
    /// Milliseconds between samples.
    #[arg(long, default_value_t = 250)]
    pub interval_ms: u64,
    /// Samples to take.
    #[arg(long, default_value_t = 1)]
    pub count: u64,
    /// One JSON object per sample (JSON lines).
    #[arg(long)]
    pub json: bool,
}

/// Runs `monitor`: prints as it samples; a `MonitorError` comes back for exit code 3.
pub fn run_monitor(a: &MonitorArgs) -> Result<String> {
    use std::io::Write;
    use vramscope::monitor::{NvmlSampler, Sampler};
    if a.interval_ms == 0 || a.interval_ms > 3_600_000 {
        bail!("--interval-ms {} is out of range (1 to 3600000)", a.interval_ms);
    }
    let mut sampler = NvmlSampler::new()?;
    let mut out = std::io::stdout().lock();
    for i in 0..a.count {
        let s = sampler.sample()?;
        let line = if a.json {
            serde_json::to_string(&serde_json::json!({"schema": 1, "snapshot": s}))?
        } else {
            s.gpus
                .iter()
                .map(|g| {
                    format!(
                        "{:>8.2}s GPU {} {}: {:.2} / {:.2} GiB used, {} processes",
                        s.t_s,
                        g.index,
                        g.name,
                        g.used as f64 / vramscope::units::GIB,
                        g.total as f64 / vramscope::units::GIB,
                        g.processes.len()
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let _ = writeln!(out, "{line}");
        if i + 1 < a.count {
            std::thread::sleep(std::time::Duration::from_millis(a.interval_ms));
        }
    }
    Ok(String::new())
}

/// Flags of `diagnose`.
#[derive(Args, Debug, Clone)]
pub struct DiagnoseArgs {
    /// File holding an out-of-memory error text, or - for standard input.
    #[arg(long)]
    pub oom: Option<String>,
    /// A memory-usage CSV: `nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total
    /// --format=csv -lms 100` output, or `t_s,gpu,used_bytes,total_bytes`.
    #[arg(long)]
    pub trace: Option<String>,
    /// `torch.cuda.memory_summary()` text, `memory_stats()` JSON or TensorFlow memory info.
    #[arg(long)]
    pub memory_summary: Option<String>,
    /// A memory snapshot pickle (`torch.cuda.memory._dump_snapshot(path)`): segments, blocks,
    /// fragmentation.
    #[arg(long)]
    pub snapshot: Option<String>,
    /// GPU index to examine in a trace (default: the first one in it).
    #[arg(long)]
    pub gpu_index: Option<u32>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Reads a text file (or standard input for `-`), at most `limit` bytes.
fn read_capped(path: &str, limit: u64) -> Result<String> {
    use std::io::Read;
    let mut text = String::new();
    if path == "-" {
        std::io::stdin().take(limit).read_to_string(&mut text).context("reading standard input")?;
    } else {
        let f = std::fs::File::open(path).with_context(|| format!("opening {path}"))?;
        f.take(limit).read_to_string(&mut text).with_context(|| format!("{path}: not UTF-8 text"))?;
    }
    Ok(text)
}

/// Runs `diagnose`.
pub fn run_diagnose(a: &DiagnoseArgs) -> Result<String> {
    let given = [a.oom.is_some(), a.trace.is_some(), a.memory_summary.is_some(), a.snapshot.is_some()]
        .iter()
        .filter(|x| **x)
        .count();
    if given != 1 {
        bail!(
            "diagnose needs exactly one of --oom FILE|-, --trace FILE.csv, --memory-summary FILE, --snapshot FILE.pickle (one is required)"
        );
    }
    if let Some(path) = &a.snapshot {
        use std::io::Read;
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .with_context(|| format!("opening {path}"))?
            .take(vramscope::diagnose::snapshot::MAX_SNAPSHOT_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .with_context(|| format!("reading {path}"))?;
        let r = vramscope::diagnose::snapshot::read_snapshot(&bytes).with_context(|| path.clone())?;
        if a.json {
            return Ok(serde_json::to_string_pretty(&serde_json::json!({"schema": 1, "snapshot": r}))? + "\n");
        }
        let g = |b: u64| format!("{:.2} GiB", b as f64 / vramscope::units::GIB);
        let mut s = format!(
            "{} segments: {} reserved, {} allocated; largest free block {} ({:.0} % of free memory is in smaller holes)\n",
            r.segments.len(),
            g(r.reserved),
            g(r.allocated),
            g(r.largest_free_block),
            100.0 * r.fragmentation
        );
        for seg in r.segments.iter().take(10) {
            s += &format!(
                "  {:<5} segment {}: {} allocated, {} blocks\n",
                seg.pool,
                g(seg.total),
                g(seg.allocated),
                seg.blocks.len()
            );
        }
        return Ok(s);
    }
    if let Some(path) = &a.memory_summary {
        let text = read_capped(path, vramscope::diagnose::MAX_INPUT_BYTES as u64)?;
        let r = vramscope::diagnose::allocator::parse_allocator(&text).with_context(|| path.clone())?;
        if a.json {
            return Ok(
                serde_json::to_string_pretty(&serde_json::json!({"schema": 1, "allocator": r}))? + "\n"
            );
        }
        let mut s = format!("{:?} report\n", r.source);
        if let Some(f) = r.fragmentation {
            s += &format!("  fragmentation (1 - allocated/reserved): {:.0} %\n", 100.0 * f);
        }
        for line in &r.advice {
            s += &format!("  {line}\n");
        }
        return Ok(s);
    }
    if let Some(path) = &a.trace {
        let text = read_capped(path, 16 * vramscope::diagnose::MAX_INPUT_BYTES as u64)?;
        let samples = vramscope::diagnose::trace::parse(&text).with_context(|| path.clone())?;
        let r = vramscope::diagnose::trace::classify(&samples, a.gpu_index).with_context(|| path.clone())?;
        if a.json {
            return Ok(serde_json::to_string_pretty(&serde_json::json!({"schema": 1, "trace": r}))? + "\n");
        }
        let mut s = format!(
            "GPU {}: {} samples, {} iterations, peak {:.0} % of the card → {:?}\n",
            r.gpu,
            r.samples,
            r.iterations,
            100.0 * r.peak_fraction,
            r.verdict
        );
        for line in &r.advice {
            s += &format!("  {line}\n");
        }
        if let Some(t) = r.seconds_to_oom {
            s += &format!("  at this rate the card is full in {t:.0} s\n");
        }
        return Ok(s);
    }
    let path = a.oom.as_deref().unwrap_or("-");
    let text = read_capped(path, vramscope::diagnose::MAX_INPUT_BYTES as u64 + 1)?;
    let r = vramscope::diagnose::explain_oom(&text).with_context(|| path.to_owned())?;
    if a.json {
        return Ok(serde_json::to_string_pretty(&serde_json::json!({"schema": 1, "oom": r}))? + "\n");
    }
    let mut s = format!("{:?} out-of-memory message\n", r.source);
    for line in &r.explanation {
        s += &format!("  {line}\n");
    }
    if !r.fixes.is_empty() {
        s += "\nwhat to do:\n";
        for (i, f) in r.fixes.iter().enumerate() {
            s += &format!("  {}. {f}\n", i + 1);
        }
    }
    for n in &r.not_understood {
        s += &format!("\n  not understood: {n}");
    }
    Ok(s)
}

/// Flags of `plan`.
#[derive(Args, Debug, Clone)]
pub struct PlanArgs {
    /// The scenario (same flags as `estimate`; --gpu is required).
    #[command(flatten)]
    pub estimate: EstimateArgs,
    /// GPUs in the job (default: the product of the parallel degrees).
    #[arg(long)]
    pub gpus: Option<u64>,
    /// Sequences per optimizer step over the whole job (default: micro-batch x data-parallel).
    #[arg(long)]
    pub global_batch: Option<u64>,
    /// Search layouts (TP, PP, ZeRO, checkpointing, offload) of --gpus GPUs and rank them.
    #[arg(long)]
    pub search: bool,
    /// Model FLOPs utilisation assumed for step times.
    #[arg(long, default_value_t = 0.4)]
    pub mfu: f64,
    /// Show this many plans with --search.
    #[arg(long, default_value_t = 15)]
    pub top: usize,
}

/// Runs `plan`.
pub fn run_plan(a: &PlanArgs) -> Result<String> {
    use vramscope::plan;
    let (sc, notes) = scenario(&a.estimate)?;
    let gpu_id = a.estimate.gpu.as_deref().context("plan needs --gpu")?;
    let gpu = gpu::find(gpu_id).map_err(anyhow::Error::msg)?;
    if !(0.01..=1.0).contains(&a.mfu) {
        bail!("--mfu {} is outside (0, 1]", a.mfu);
    }
    let speed = plan::SpeedModel { mfu: a.mfu, ..Default::default() };
    let world = sc.parallel.world();
    let gpus = a.gpus.unwrap_or(world);
    let global = a.global_batch.unwrap_or(sc.batch * sc.parallel.dp * sc.parallel.micro_batches().max(1));
    if a.search {
        let t0 = std::time::Instant::now();
        let plans = plan::search(&sc, &gpu, gpus, global, &speed);
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        if a.estimate.json {
            let v = serde_json::json!({"schema": 1, "model": sc.model.name, "gpu": gpu.id, "gpus": gpus,
                "global_batch": global, "search_ms": ms, "plans": plans.iter().take(a.top).collect::<Vec<_>>()});
            return Ok(serde_json::to_string_pretty(&v)? + "\n");
        }
        let mut s = format!(
            "{} on {gpus} x {} ({:.1} GiB), global batch {global} x seq {}: {} feasible layouts (searched in {ms:.1} ms)\n\n",
            sc.model.name,
            gpu.name,
            gpu.memory_mib as f64 / 1024.0,
            sc.seq,
            plans.len()
        );
        s += "  rank  dp  tp  pp  zero  ckpt  offload    mb  accum   GiB/GPU  headroom   step s   tokens/s\n";
        for (i, p) in plans.iter().take(a.top).enumerate() {
            let q = &p.parallel;
            s += &format!(
                "  {:>4} {:>3} {:>3} {:>3} {:>5}  {:<5} {:<9} {:>3} {:>6} {:>9.1} {:>9.1} {:>8.2} {:>10.0}\n",
                i + 1,
                q.dp,
                q.tp,
                q.pp,
                q.zero,
                if p.checkpoint == "none" { "no" } else { "full" },
                format!("{:?}", q.offload).to_lowercase(),
                p.micro_batch,
                p.grad_accum,
                p.total_bytes as f64 / vramscope::units::GIB,
                p.headroom_bytes as f64 / vramscope::units::GIB,
                p.step.step_s,
                p.step.tokens_per_s
            );
        }
        if plans.is_empty() {
            s += "  nothing fits: more GPUs, a larger card, LoRA/QLoRA or offload to NVMe\n";
        }
        return Ok(s);
    }
    let e = estimate(&sc)?;
    let step = plan::step_time(&sc, &e, &gpu, global, &speed);
    let cap = gpu.memory_bytes();
    let rule = plan::rule_of_thumb_speedup(sc.parallel.dp);
    let aware = plan::comm_aware_speedup(&sc, &gpu, sc.parallel.dp, global, &speed);
    let min = plan::min_gpus(&sc, &gpu, global);
    if a.estimate.json {
        let fit = FitInfo { fits: e.total <= cap, max_batch: fit::max_batch(&sc, cap), gpu: gpu.clone() };
        let mut v = report::to_json(&sc, &e, Some(&fit), &notes);
        if let Some(o) = v.as_object_mut() {
            if let Some(b) = o.get_mut("bytes").and_then(|b| b.as_object_mut()) {
                b.insert("cpu_bytes".into(), serde_json::json!(e.cpu_bytes));
                b.insert("nvme_bytes".into(), serde_json::json!(e.nvme_bytes));
            }
            o.insert("parallel".into(), serde_json::json!(sc.parallel));
            o.insert("world".into(), serde_json::json!(sc.parallel.world()));
            o.insert("stage".into(), serde_json::json!(e.stage));
            o.insert("global_batch".into(), serde_json::json!(global));
            o.insert("step_time".into(), serde_json::json!(step));
            o.insert(
                "speedup".into(),
                serde_json::json!({"rule_of_thumb": rule, "comm_aware": aware, "gpus": sc.parallel.dp}),
            );
            o.insert("min_gpus_for_global_batch".into(), serde_json::json!(min));
        }
        return Ok(serde_json::to_string_pretty(&v)? + "\n");
    }
    let fit = FitInfo { fits: e.total <= cap, max_batch: fit::max_batch(&sc, cap), gpu };
    let mut s = report::to_text(&sc, &e, Some(&fit), &notes);
    let p = &sc.parallel;
    s += &format!(
        "\n  layout: {} GPUs = dp {} x tp {} x pp {} x cp {}{}; ZeRO-{}{}; most loaded rank: pipeline stage {} of {} ({} blocks, {:.1} micro-batches in flight)\n",
        p.world(),
        p.dp,
        p.tp,
        p.pp,
        p.cp,
        if p.sp { " + SP" } else { "" },
        p.effective_zero(),
        p.fsdp.map(|f| format!(" (FSDP {f:?})")).unwrap_or_default(),
        e.stage.index + 1,
        e.stage.stages,
        e.stage.blocks,
        e.stage.in_flight,
    );
    if e.cpu_bytes + e.nvme_bytes > 0 {
        s += &format!(
            "  offload: {:.1} GiB host RAM, {:.1} GiB NVMe per GPU\n",
            e.cpu_bytes as f64 / vramscope::units::GIB,
            e.nvme_bytes as f64 / vramscope::units::GIB
        );
    }
    s += &format!(
        "  step (global batch {global}): {:.2} s = compute {:.2} + bubble {:.2} + exposed comm {:.2}; {:.0} tokens/s (MFU {:.0} %)\n",
        step.step_s,
        step.compute_s,
        step.bubble_s,
        step.exposed_comm_s,
        step.tokens_per_s,
        100.0 * a.mfu
    );
    s += &format!(
        "  speed-up on {} data-parallel GPUs: rule of thumb n/(1+0.5(n-1)) = {rule:.2}x; communication-aware = {}\n",
        p.dp,
        aware.map_or("n/a".into(), |x| format!("{x:.2}x"))
    );
    if let Some(m) = min {
        s += &format!("  fewest data-parallel GPUs that fit (this layout): {m}\n");
    }
    Ok(s)
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
    /// Parallel layout.
    #[command(flatten)]
    pub parallel: ParallelArgs,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Parallelism flags shared by `estimate` and `plan`.
#[derive(Args, Debug, Clone, Default)]
pub struct ParallelArgs {
    /// Data-parallel degree (GPUs sharing the model states under ZeRO/FSDP).
    #[arg(long, default_value_t = 1)]
    pub dp: u64,
    /// Tensor-parallel degree (Megatron column/row split).
    #[arg(long, default_value_t = 1)]
    pub tp: u64,
    /// Pipeline-parallel degree.
    #[arg(long, default_value_t = 1)]
    pub pp: u64,
    /// Context-parallel degree (sequence split, ring attention).
    #[arg(long, default_value_t = 1)]
    pub cp: u64,
    /// Expert-parallel degree (MoE).
    #[arg(long, default_value_t = 1)]
    pub ep: u64,
    /// Sequence parallelism with tensor parallelism.
    #[arg(long)]
    pub sp: bool,
    /// ZeRO stage 0-3 (0: DDP replicas; 1: optimizer states sharded; 2: + gradients; 3: + parameters).
    #[arg(long, default_value_t = 0)]
    pub zero: u8,
    /// PyTorch FSDP: full_shard, shard_grad_op or hybrid_shard (overrides --zero).
    #[arg(long)]
    pub fsdp: Option<vramscope::estimate::FsdpMode>,
    /// Offload: none, optimizer (ZeRO-Offload) or params (ZeRO-Infinity, NVMe).
    #[arg(long, default_value = "none")]
    pub offload: vramscope::estimate::Offload,
    /// Pipeline micro-batches per step (default: as many as stages).
    #[arg(long, default_value_t = 0)]
    pub micro_batches: u64,
    /// Virtual pipeline stages per rank (interleaved 1F1B).
    #[arg(long, default_value_t = 1)]
    pub virtual_stages: u64,
    /// GPUs per node (default 8).
    #[arg(long, default_value_t = 8)]
    pub gpus_per_node: u64,
    /// NCCL buffers per GPU in MiB when more than one GPU takes part (default 256).
    #[arg(long)]
    pub nccl_mib: Option<u64>,
}

impl ParallelArgs {
    /// The core's parallel layout.
    pub fn to_parallel(&self) -> vramscope::estimate::Parallel {
        vramscope::estimate::Parallel {
            dp: self.dp,
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
    // the overhead defaults of the chosen card, else the generic ones
    let d = match &a.gpu {
        Some(id) => gpu::find(id).map_err(anyhow::Error::msg)?.overhead(),
        None => Overhead::default(),
    };
    sc.overhead = Overhead {
        cuda_context_bytes: a.context_mib.map_or(d.cuda_context_bytes, |m| m << 20),
        workspace_bytes: a.workspace_mib.map_or(d.workspace_bytes, |m| m << 20),
        allocator_reserve_fraction: a.reserve_frac.unwrap_or(d.allocator_reserve_fraction),
    };
    sc.parallel = a.parallel.to_parallel();
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
        parallel: ParallelArgs {
            dp: 1,
            tp: 1,
            pp: 1,
            cp: 1,
            ep: 1,
            virtual_stages: 1,
            gpus_per_node: 8,
            ..Default::default()
        },
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
