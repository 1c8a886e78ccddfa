//! Exports of a plan: the scenario file (`.ron`, versioned), the plan report (Markdown / JSON),
//! the what-if curves (CSV), the roadmap, and framework settings that match the plan (DeepSpeed
//! JSON, Hugging Face `TrainingArguments`, PyTorch FSDP, Megatron-LM flags). Files are written
//! atomically and never overwrite an existing file unless asked to.

use crate::estimate::{Checkpointing, Estimate, Mode, Offload, Optimizer, Scenario, estimate};
use crate::fit::{self, Knob};
use crate::gpu::{self, Gpu};
use crate::model::{Family, ModelSpec};
use crate::report::{self, FitInfo};
use crate::units::{GIB, Precision};
use crate::{cost, roadmap};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Schema version of scenario files.
pub const SCENARIO_SCHEMA: u32 = 1;

/// A saved scenario: what `--scenario FILE` and the app's File > Open read back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScenarioFile {
    /// [`SCENARIO_SCHEMA`].
    pub schema: u32,
    /// GPU catalog id the plan targets.
    #[serde(default)]
    pub gpu: Option<String>,
    /// Sequences per optimizer step over the whole job (default: micro-batch x data-parallel).
    #[serde(default)]
    pub global_batch: Option<u64>,
    /// The scenario, model included (a file opens without the preset it came from).
    pub scenario: Scenario,
}

/// What went wrong reading or writing an export.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// A scenario file that does not parse.
    #[error("{path}:{line}:{col}: {msg}")]
    Parse {
        /// File.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        col: usize,
        /// Parser message.
        msg: String,
    },
    /// A scenario file of another schema.
    #[error("{path}: scenario schema {found} is not supported (this build reads schema {SCENARIO_SCHEMA})")]
    Schema {
        /// File.
        path: String,
        /// Its schema.
        found: u32,
    },
    /// A scenario the estimator rejects, or a GPU not in the catalog.
    #[error("{path}: {msg}")]
    Invalid {
        /// File.
        path: String,
        /// Why.
        msg: String,
    },
    /// The target exists and overwriting was not asked for.
    #[error("{0}: already exists (use --force to overwrite)")]
    Exists(PathBuf),
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// File.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// Serialising failed.
    #[error("serialising: {0}")]
    Serialise(String),
}

impl ScenarioFile {
    /// Wraps a scenario.
    pub fn new(scenario: Scenario, gpu: Option<&Gpu>, global_batch: Option<u64>) -> Self {
        Self { schema: SCENARIO_SCHEMA, gpu: gpu.map(|g| g.id.clone()), global_batch, scenario }
    }

    /// The file's text.
    pub fn to_ron(&self) -> Result<String, ExportError> {
        let cfg = ron::ser::PrettyConfig::new().depth_limit(5);
        ron::ser::to_string_pretty(self, cfg)
            .map(|s| s + "\n")
            .map_err(|e| ExportError::Serialise(e.to_string()))
    }

    /// Parses and checks a scenario file; `path` is used in messages.
    pub fn from_ron(path: &str, text: &str) -> Result<Self, ExportError> {
        let f: Self = ron::from_str(text).map_err(|e| ExportError::Parse {
            path: path.to_owned(),
            line: e.span.start.line,
            col: e.span.start.col,
            msg: e.code.to_string(),
        })?;
        if f.schema != SCENARIO_SCHEMA {
            return Err(ExportError::Schema { path: path.to_owned(), found: f.schema });
        }
        f.scenario
            .validate()
            .map_err(|e| ExportError::Invalid { path: path.to_owned(), msg: e.to_string() })?;
        if let Some(id) = &f.gpu {
            gpu::find(id).map_err(|msg| ExportError::Invalid { path: path.to_owned(), msg })?;
        }
        Ok(f)
    }

    /// Reads a scenario file.
    pub fn load(path: &Path) -> Result<Self, ExportError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ExportError::Io { path: path.to_owned(), source })?;
        Self::from_ron(&path.display().to_string(), &text)
    }

    /// The GPU, if the file names one.
    pub fn gpu(&self) -> Option<Gpu> {
        self.gpu.as_deref().and_then(|id| gpu::find(id).ok())
    }

    /// The global batch: the file's, else micro-batch x data-parallel x pipeline micro-batches.
    pub fn global_batch(&self) -> u64 {
        let p = &self.scenario.parallel;
        self.global_batch.unwrap_or(self.scenario.batch * p.dp * p.micro_batches().max(1))
    }

    /// Micro-batches per optimizer step on each data-parallel rank, pipeline micro-batches
    /// included (DeepSpeed's `gradient_accumulation_steps`, at least 1).
    pub fn grad_accum(&self) -> u64 {
        let per_step = self.scenario.batch * self.scenario.parallel.dp;
        self.global_batch().div_ceil(per_step.max(1)).max(1)
    }
}

/// Writes `bytes` to `path` atomically: a temporary file in the same folder, synced, then moved
/// into place. Without `force` an existing file is an error and is left untouched (the move is a
/// hard link, which refuses an existing target, so there is no window for a race). On any failure
/// the temporary file is removed and nothing half-written is left.
pub fn write_atomic(path: &Path, bytes: &[u8], force: bool) -> Result<(), ExportError> {
    let io = |source| ExportError::Io { path: path.to_owned(), source };
    if !force && path.exists() {
        return Err(ExportError::Exists(path.to_owned()));
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().map_or_else(|| "export".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        if force {
            std::fs::rename(&tmp, path)
        } else {
            std::fs::hard_link(&tmp, path).and_then(|()| std::fs::remove_file(&tmp))
        }
    })();
    match result {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            if e.kind() == std::io::ErrorKind::AlreadyExists && !force {
                Err(ExportError::Exists(path.to_owned()))
            } else {
                Err(io(e))
            }
        }
    }
}

/// An export format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The scenario file.
    Ron,
    /// Plan report, Markdown.
    Markdown,
    /// Plan report, JSON.
    Json,
    /// What-if curves, CSV.
    Csv,
    /// Roadmap, Markdown.
    Roadmap,
    /// Roadmap, JSON.
    RoadmapJson,
    /// DeepSpeed config JSON.
    Deepspeed,
    /// Hugging Face `TrainingArguments`.
    Hf,
    /// PyTorch FSDP snippet.
    Fsdp,
    /// Megatron-LM flags.
    Megatron,
}

impl Format {
    /// All formats with their names.
    pub const ALL: [(Self, &'static str); 10] = [
        (Self::Ron, "ron"),
        (Self::Markdown, "md"),
        (Self::Json, "json"),
        (Self::Csv, "csv"),
        (Self::Roadmap, "roadmap"),
        (Self::RoadmapJson, "roadmap-json"),
        (Self::Deepspeed, "deepspeed"),
        (Self::Hf, "hf"),
        (Self::Fsdp, "fsdp"),
        (Self::Megatron, "megatron"),
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(f, _)| *f == self).map_or("?", |(_, n)| n)
    }

    /// The usual file extension.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Ron => "ron",
            Self::Markdown | Self::Roadmap => "md",
            Self::Json | Self::RoadmapJson | Self::Deepspeed => "json",
            Self::Csv => "csv",
            Self::Hf | Self::Fsdp => "py",
            Self::Megatron => "sh",
        }
    }
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("png") {
            return Err("png is GUI-only: use File > Export chart/window as PNG in the app, or \
                        `vramscope --screenshot PATH.png` for the window"
                .into());
        }
        Self::ALL.iter().find(|(_, n)| n.eq_ignore_ascii_case(s)).map(|(f, _)| *f).ok_or_else(|| {
            let names: Vec<_> = Self::ALL.iter().map(|(_, n)| *n).collect();
            format!("unknown format \"{s}\" ({})", names.join(", "))
        })
    }
}

/// Renders one format.
pub fn render(f: &ScenarioFile, format: Format) -> Result<String, ExportError> {
    let ser = |e: serde_json::Error| ExportError::Serialise(e.to_string());
    let est = || {
        estimate(&f.scenario)
            .map_err(|e| ExportError::Invalid { path: "scenario".into(), msg: e.to_string() })
    };
    Ok(match format {
        Format::Ron => f.to_ron()?,
        Format::Markdown => report_markdown(f, &est()?),
        Format::Json => serde_json::to_string_pretty(&report_json(f, &est()?)).map_err(ser)? + "\n",
        Format::Csv => curves_csv(f),
        Format::Roadmap | Format::RoadmapJson => {
            let g = f.gpu().ok_or_else(|| ExportError::Invalid {
                path: "scenario".into(),
                msg: "a roadmap needs a GPU (--gpu)".into(),
            })?;
            let r = roadmap::roadmap(&f.scenario, &g).ok_or_else(|| ExportError::Invalid {
                path: "scenario".into(),
                msg: "the scenario cannot be estimated".into(),
            })?;
            if format == Format::Roadmap {
                roadmap::to_markdown(&f.scenario, &r)
            } else {
                serde_json::to_string_pretty(&r).map_err(ser)? + "\n"
            }
        }
        Format::Deepspeed => serde_json::to_string_pretty(&deepspeed_config(f)).map_err(ser)? + "\n",
        Format::Hf => hf_training_args(f),
        Format::Fsdp => fsdp_snippet(f),
        Format::Megatron => megatron_args(f),
    })
}

fn g(b: u64) -> String {
    format!("{:.2} GiB", b as f64 / GIB)
}

/// The report's JSON: the estimate (as `estimate --json`), the plan's settings, the what-if
/// curves and the hardware options.
pub fn report_json(f: &ScenarioFile, e: &Estimate) -> Value {
    let gpu = f.gpu();
    let fit = gpu.as_ref().map(|g| {
        let cap = g.memory_bytes();
        FitInfo { fits: e.total <= cap, max_batch: fit::max_batch(&f.scenario, cap), gpu: g.clone() }
    });
    let mut v = report::to_json(&f.scenario, e, fit.as_ref(), &[]);
    if let Some(o) = v.as_object_mut() {
        o.insert("parallel".into(), json!(f.scenario.parallel));
        o.insert("global_batch".into(), json!(f.global_batch()));
        o.insert("grad_accum".into(), json!(f.grad_accum()));
        let curves: serde_json::Map<String, Value> = Knob::ALL
            .iter()
            .map(|&k| {
                let pts: Vec<Value> = fit::sweep(&f.scenario, k, table_values(k, &f.scenario))
                    .iter()
                    .map(|p| json!({"x": p.x, "peak_bytes": p.peak, "total_bytes": p.total}))
                    .collect();
                (knob_name(k).to_owned(), Value::Array(pts))
            })
            .collect();
        o.insert("what_if".into(), Value::Object(curves));
        o.insert("options".into(), json!(options(f)));
    }
    v
}

fn knob_name(k: Knob) -> &'static str {
    match k {
        Knob::Batch => "batch",
        Knob::Seq => "seq",
        Knob::Segments => "segments",
        Knob::Gpus => "gpus",
    }
}

/// The few values a report's what-if table shows (the curves CSV has the full sweeps).
fn table_values(k: Knob, sc: &Scenario) -> Vec<u64> {
    match k {
        Knob::Batch => vec![1, 2, 4, 8, 16, 32, 64],
        Knob::Seq => {
            let max = sc.model.transformer().map_or(4096, |t| t.max_position_embeddings.max(512));
            [512u64, 1024, 2048, 4096, 8192, 16384, 32768].into_iter().filter(|&s| s <= max).collect()
        }
        Knob::Segments => {
            let l = sc.model.transformer().map_or(1, |t| t.num_layers);
            let mut v: Vec<u64> = [1, 2, 4, 8, 16, 32, l].into_iter().filter(|&s| s <= l).collect();
            v.sort_unstable();
            v.dedup();
            v
        }
        Knob::Gpus => vec![1, 2, 4, 8, 16, 32, 64],
    }
}

/// One hardware option: a catalog card, whether the plan fits it, and the cheapest cloud price.
#[derive(Clone, Debug, Serialize)]
pub struct HwOption {
    /// Catalog id.
    pub gpu: String,
    /// Name.
    pub name: String,
    /// Capacity, bytes.
    pub capacity: u64,
    /// Fits?
    pub fits: bool,
    /// Headroom (negative: short by), bytes.
    pub headroom: i64,
    /// Largest micro-batch that fits.
    pub max_batch: Option<u64>,
    /// Cheapest on-demand price per GPU-hour in the catalog, and its instance.
    pub price_per_gpu_hour: Option<f64>,
    /// That instance.
    pub instance: Option<String>,
}

/// Every catalog card, for the scenario as it is (same parallel layout).
pub fn options(f: &ScenarioFile) -> Vec<HwOption> {
    let Ok(e) = estimate(&f.scenario) else { return Vec::new() };
    gpu::catalog()
        .iter()
        .map(|g| {
            let cap = g.memory_bytes();
            let cheapest = cost::cheapest_on_demand(&g.id);
            HwOption {
                fits: e.total <= cap,
                headroom: cap as i64 - e.total as i64,
                max_batch: fit::max_batch(&f.scenario, cap),
                price_per_gpu_hour: cheapest.map(cost::Instance::per_gpu_hour),
                instance: cheapest.map(|i| format!("{} {}", i.provider, i.name)),
                gpu: g.id.clone(),
                name: g.name.clone(),
                capacity: cap,
            }
        })
        .collect()
}

/// The plan report in Markdown: inputs, breakdown, what-if tables, options with prices, roadmap.
pub fn report_markdown(f: &ScenarioFile, e: &Estimate) -> String {
    let sc = &f.scenario;
    let p = &sc.parallel;
    let mut s = String::new();
    let _ = writeln!(s, "# Memory plan: {}\n", sc.model.name);
    let _ = writeln!(s, "## Inputs\n\n| setting | value |\n|---|---|");
    let rows: Vec<(&str, String)> = vec![
        ("model", format!("{} ({} parameters)", sc.model.name, report::human_count(e.n_params))),
        ("mode", if sc.mode == Mode::Train { "training step".into() } else { "inference (prefill)".into() }),
        ("micro-batch x sequence", format!("{} x {}", sc.batch, sc.seq)),
        ("global batch / accumulation", format!("{} / {}", f.global_batch(), f.grad_accum())),
        ("precision", sc.precision.to_string()),
        ("optimizer", format!("{:?}", sc.optimizer).to_lowercase()),
        ("checkpointing", sc.checkpointing.to_string()),
        (
            "parallel",
            format!(
                "dp {} (ZeRO {}{}), tp {}{}, pp {}, cp {}, ep {}, offload {:?}",
                p.dp,
                p.zero,
                p.fsdp.map_or(String::new(), |m| format!(", FSDP {m:?}")),
                p.tp,
                if p.sp { " + SP" } else { "" },
                p.pp,
                p.cp,
                p.ep,
                p.offload
            ),
        ),
        ("GPU", f.gpu().map_or_else(|| "(none chosen)".into(), |g| g.name)),
    ];
    for (k, v) in rows {
        let _ = writeln!(s, "| {k} | {v} |");
    }
    let _ =
        writeln!(s, "\n## Per-GPU memory (most loaded rank)\n\n| component | bytes | GiB |\n|---|---:|---:|");
    for (k, b) in [
        ("parameters", e.parameters),
        ("gradients", e.gradients),
        ("optimizer states", e.optimizer_states),
        ("activations (saved)", e.activations),
        ("KV cache", e.kv_cache),
        ("peak allocated", e.peak_allocated),
        ("CUDA context + allocator", e.overhead),
        ("total (nvidia-smi)", e.total),
    ] {
        let _ = writeln!(s, "| {k} | {b} | {:.2} |", b as f64 / GIB);
    }
    let _ = writeln!(
        s,
        "\nPeak at: {} ({:?}); temporaries then {}.",
        e.peak.what,
        e.peak.phase,
        g(e.peak.alive.temporaries)
    );
    if let Some(gpu) = f.gpu() {
        let cap = gpu.memory_bytes();
        let verdict = if e.total <= cap {
            format!("fits, {} free", g(cap - e.total))
        } else {
            format!("does NOT fit, short by {}", g(e.total - cap))
        };
        let mb = fit::max_batch(sc, cap).map_or_else(|| "none".into(), |b| b.to_string());
        let _ = writeln!(s, "\n{} ({}): {verdict}; largest micro-batch that fits: {mb}.", gpu.name, g(cap));
    }
    let _ = writeln!(s, "\n## What if\n");
    for k in Knob::ALL {
        if k == Knob::Segments && sc.mode != Mode::Train {
            continue;
        }
        let pts = fit::sweep(sc, k, table_values(k, sc));
        if pts.is_empty() {
            continue;
        }
        let _ = writeln!(s, "| {} | peak allocated | total |\n|---:|---:|---:|", knob_name(k));
        for pt in pts {
            let _ = writeln!(s, "| {} | {} | {} |", pt.x, g(pt.peak), g(pt.total));
        }
        s.push('\n');
    }
    let _ = writeln!(
        s,
        "## Hardware options (same layout)\n\n| GPU | memory | fits | headroom | largest micro-batch | cheapest on-demand |\n|---|---:|---|---:|---:|---|"
    );
    for o in options(f) {
        let price = match (&o.instance, o.price_per_gpu_hour) {
            (Some(i), Some(p)) => format!("${p:.2}/GPU-h ({i})"),
            _ => "-".into(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:+.2} GiB | {} | {price} |",
            o.name,
            g(o.capacity),
            if o.fits { "yes" } else { "no" },
            o.headroom as f64 / GIB,
            o.max_batch.map_or_else(|| "-".into(), |b| b.to_string())
        );
    }
    if let Some(r) = f.gpu().and_then(|gp| roadmap::roadmap(sc, &gp)) {
        let md = roadmap::to_markdown(sc, &r);
        // demote the roadmap's headings one level under the report
        s.push('\n');
        for line in md.lines() {
            if line.starts_with('#') {
                s.push('#');
            }
            s.push_str(line);
            s.push('\n');
        }
    }
    let _ = writeln!(s, "\n---\nvramscope {}; prices from presets/clouds.ron.", env!("CARGO_PKG_VERSION"));
    s
}

/// Inserts a link to the chart picture under the report's breakdown heading.
pub fn with_chart_link(report_md: &str, png_file_name: &str) -> String {
    let heading = "## Per-GPU memory (most loaded rank)\n";
    match report_md.find(heading) {
        Some(i) => {
            let at = i + heading.len();
            format!(
                "{}\n![per-GPU memory breakdown]({png_file_name})\n{}",
                &report_md[..at],
                &report_md[at..]
            )
        }
        None => format!("{report_md}\n![per-GPU memory breakdown]({png_file_name})\n"),
    }
}

/// The what-if curves: every knob's full sweep, one row per point.
pub fn curves_csv(f: &ScenarioFile) -> String {
    let cap = f.gpu().map(|g| g.memory_bytes());
    let mut s = String::from("knob,value,peak_allocated_bytes,total_bytes,fits\n");
    for k in Knob::ALL {
        for p in fit::sweep(&f.scenario, k, k.values(&f.scenario)) {
            let fits = cap.map_or(String::new(), |c| (p.total <= c).to_string());
            let _ = writeln!(s, "{},{},{},{},{fits}", knob_name(k), p.x, p.peak, p.total);
        }
    }
    s
}

/// DeepSpeed's documented top-level configuration keys that the exporter may write.
pub const DEEPSPEED_KEYS: &[&str] = &[
    "train_batch_size",
    "train_micro_batch_size_per_gpu",
    "gradient_accumulation_steps",
    "optimizer",
    "fp16",
    "bf16",
    "zero_optimization",
    "gradient_clipping",
    "activation_checkpointing",
    "steps_per_print",
    "wall_clock_breakdown",
    "zero_allow_untested_optimizer",
];

/// DeepSpeed's documented `zero_optimization` keys that the exporter may write.
pub const DEEPSPEED_ZERO_KEYS: &[&str] = &[
    "stage",
    "offload_optimizer",
    "offload_param",
    "overlap_comm",
    "contiguous_gradients",
    "reduce_bucket_size",
    "stage3_prefetch_bucket_size",
    "stage3_param_persistence_threshold",
    "stage3_gather_16bit_weights_on_model_save",
];

/// A DeepSpeed config for the plan. `train_batch_size` = micro-batch x accumulation x data
/// parallel, as DeepSpeed checks at start-up.
pub fn deepspeed_config(f: &ScenarioFile) -> Value {
    let sc = &f.scenario;
    let p = &sc.parallel;
    let accum = f.grad_accum();
    let mut v = serde_json::Map::new();
    v.insert("train_batch_size".into(), json!(sc.batch * accum * p.dp));
    v.insert("train_micro_batch_size_per_gpu".into(), json!(sc.batch));
    v.insert("gradient_accumulation_steps".into(), json!(accum));
    match sc.precision {
        Precision::Bf16 | Precision::Bf16Amp | Precision::Bf16Mixed => {
            v.insert("bf16".into(), json!({"enabled": true}));
        }
        Precision::Fp16 | Precision::Fp16Amp | Precision::Fp16Mixed => {
            v.insert(
                "fp16".into(),
                json!({"enabled": true, "loss_scale": 0, "initial_scale_power": 16, "loss_scale_window": 1000, "hysteresis": 2, "min_loss_scale": 1}),
            );
        }
        _ => {}
    }
    let opt = match sc.optimizer {
        Optimizer::Adamw | Optimizer::AdamwFused => Some("AdamW"),
        Optimizer::Adam => Some("Adam"),
        _ => None,
    };
    if let Some(t) = opt {
        v.insert(
            "optimizer".into(),
            json!({"type": t, "params": {"lr": 1e-5, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.0}}),
        );
    } else if sc.optimizer != Optimizer::None {
        // the client's optimizer (bitsandbytes, Adafactor, SGD) passed to deepspeed.initialize
        v.insert("zero_allow_untested_optimizer".into(), json!(true));
    }
    let stage = if p.fsdp.is_some() { 3 } else { p.zero };
    let mut z = serde_json::Map::new();
    z.insert("stage".into(), json!(stage));
    if stage >= 1 {
        z.insert("overlap_comm".into(), json!(true));
        z.insert("contiguous_gradients".into(), json!(true));
        z.insert("reduce_bucket_size".into(), json!(500_000_000u64));
    }
    if stage == 3 {
        z.insert("stage3_prefetch_bucket_size".into(), json!(50_000_000u64));
        z.insert("stage3_param_persistence_threshold".into(), json!(100_000u64));
        z.insert("stage3_gather_16bit_weights_on_model_save".into(), json!(true));
    }
    match p.offload {
        Offload::None => {}
        Offload::Optimizer => {
            z.insert("offload_optimizer".into(), json!({"device": "cpu", "pin_memory": true}));
        }
        Offload::Params => {
            z.insert(
                "offload_optimizer".into(),
                json!({"device": "nvme", "nvme_path": "/local_nvme", "pin_memory": true}),
            );
            z.insert(
                "offload_param".into(),
                json!({"device": "nvme", "nvme_path": "/local_nvme", "pin_memory": true}),
            );
        }
    }
    v.insert("zero_optimization".into(), Value::Object(z));
    v.insert("gradient_clipping".into(), json!(1.0));
    if sc.checkpointing != Checkpointing::None {
        v.insert(
            "activation_checkpointing".into(),
            json!({"partition_activations": p.tp > 1, "contiguous_memory_optimization": false, "cpu_checkpointing": false}),
        );
    }
    v.insert("steps_per_print".into(), json!(100));
    v.insert("wall_clock_breakdown".into(), json!(false));
    Value::Object(v)
}

fn hf_optim(o: Optimizer) -> &'static str {
    match o {
        Optimizer::Adamw | Optimizer::Adam => "adamw_torch",
        Optimizer::AdamwFused => "adamw_torch_fused",
        Optimizer::Adamw8bit => "adamw_bnb_8bit",
        Optimizer::Adafactor => "adafactor",
        Optimizer::Sgd | Optimizer::SgdMomentum | Optimizer::None => "sgd",
    }
}

fn torch_dtype(p: Precision) -> &'static str {
    match p {
        Precision::Bf16 => "torch.bfloat16",
        Precision::Fp16 => "torch.float16",
        _ => "torch.float32",
    }
}

/// Hugging Face `TrainingArguments` for the plan (with the DeepSpeed / FSDP hook-up).
pub fn hf_training_args(f: &ScenarioFile) -> String {
    let sc = &f.scenario;
    let p = &sc.parallel;
    let mut s = format!("# vramscope plan for {}: {} x {} per GPU\n", sc.model.name, sc.batch, sc.seq);
    let _ = writeln!(s, "import torch\nfrom transformers import AutoModelForCausalLM, TrainingArguments\n");
    let _ = writeln!(
        s,
        "# weights are loaded in {} ({})",
        torch_dtype(sc.precision),
        if matches!(sc.precision, Precision::Bf16 | Precision::Fp16) {
            "pure half precision: no fp32 master copy"
        } else {
            "fp32 weights; autocast computes in half precision"
        }
    );
    let _ = writeln!(
        s,
        "model = AutoModelForCausalLM.from_pretrained(MODEL_ID, torch_dtype={})",
        torch_dtype(sc.precision)
    );
    if let Some(l) = sc.lora {
        let _ = writeln!(
            s,
            "from peft import LoraConfig, get_peft_model\nmodel = get_peft_model(model, LoraConfig(r={}, lora_dropout={}, target_modules=\"all-linear\"))",
            l.rank, l.dropout
        );
    }
    let _ = writeln!(s, "\nargs = TrainingArguments(\n    output_dir=\"out\",");
    let _ = writeln!(s, "    per_device_train_batch_size={},", sc.batch);
    let _ = writeln!(s, "    gradient_accumulation_steps={},", f.grad_accum());
    match sc.precision {
        Precision::Bf16 | Precision::Bf16Amp | Precision::Bf16Mixed => {
            let _ = writeln!(s, "    bf16=True,");
        }
        Precision::Fp16 | Precision::Fp16Amp | Precision::Fp16Mixed => {
            let _ = writeln!(s, "    fp16=True,");
        }
        _ => {}
    }
    if sc.checkpointing != Checkpointing::None {
        let _ = writeln!(s, "    gradient_checkpointing=True,");
        let _ = writeln!(s, "    gradient_checkpointing_kwargs={{\"use_reentrant\": False}},");
    }
    let _ = writeln!(s, "    optim=\"{}\",", hf_optim(sc.optimizer));
    if let Some(m) = p.fsdp {
        let strategy = match m {
            crate::estimate::FsdpMode::FullShard => "full_shard",
            crate::estimate::FsdpMode::ShardGradOp => "shard_grad_op",
            crate::estimate::FsdpMode::HybridShard => "hybrid_shard",
        };
        let off = if p.offload != Offload::None { " offload" } else { "" };
        let _ = writeln!(s, "    fsdp=\"{strategy} auto_wrap{off}\",");
    } else if p.zero > 0 || p.offload != Offload::None {
        let _ = writeln!(s, "    deepspeed=\"ds_config.json\",  # vramscope export --format deepspeed");
    }
    let _ = writeln!(s, ")");
    let _ = writeln!(
        s,
        "# launch on {} GPU(s): torchrun --nproc_per_node {} train.py",
        p.world(),
        p.world().min(p.gpus_per_node.max(8))
    );
    s
}

fn block_class(m: &ModelSpec) -> &'static str {
    let name = m.name.to_lowercase();
    match m.transformer().map(|t| t.family) {
        Some(Family::Gpt2) => "GPT2Block",
        Some(Family::Bert) => "BertLayer",
        Some(Family::Megatron) => "ParallelTransformerLayer",
        Some(Family::Llama) if name.contains("mixtral") => "MixtralDecoderLayer",
        Some(Family::Llama) if name.contains("mistral") => "MistralDecoderLayer",
        Some(Family::Llama) if name.contains("qwen") => "Qwen2DecoderLayer",
        Some(Family::Llama) => "LlamaDecoderLayer",
        None => "Block  # your model's repeated block class",
    }
}

/// A PyTorch FSDP wrapping snippet for the plan.
pub fn fsdp_snippet(f: &ScenarioFile) -> String {
    let sc = &f.scenario;
    let p = &sc.parallel;
    let strategy = match (p.fsdp, p.zero) {
        (Some(crate::estimate::FsdpMode::ShardGradOp), _) => "SHARD_GRAD_OP",
        (Some(crate::estimate::FsdpMode::HybridShard), _) => "HYBRID_SHARD",
        (Some(crate::estimate::FsdpMode::FullShard), _) | (None, 3) => "FULL_SHARD",
        (None, 1 | 2) => "SHARD_GRAD_OP",
        (None, _) => "NO_SHARD",
    };
    let half = match sc.precision {
        Precision::Fp16 | Precision::Fp16Amp | Precision::Fp16Mixed => Some("torch.float16"),
        Precision::Bf16 | Precision::Bf16Amp | Precision::Bf16Mixed => Some("torch.bfloat16"),
        _ => None,
    };
    let mut s = format!(
        "# vramscope plan for {}: FSDP {strategy} over {} GPU(s), micro-batch {}, accumulation {}\n",
        sc.model.name,
        p.dp,
        sc.batch,
        f.grad_accum()
    );
    s += "import functools\nimport torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n";
    s += "from torch.distributed.fsdp import ShardingStrategy, MixedPrecision, CPUOffload\n";
    s += "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n\n";
    let cls = block_class(&sc.model);
    let _ = writeln!(
        s,
        "wrap = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={{{cls}}})"
    );
    s += "model = FSDP(\n    model,\n    auto_wrap_policy=wrap,\n";
    let _ = writeln!(s, "    sharding_strategy=ShardingStrategy.{strategy},");
    if let Some(h) = half {
        let _ = writeln!(
            s,
            "    mixed_precision=MixedPrecision(param_dtype={h}, reduce_dtype={h}, buffer_dtype={h}),"
        );
    }
    let _ = writeln!(
        s,
        "    cpu_offload=CPUOffload(offload_params={}),",
        if p.offload != Offload::None { "True" } else { "False" }
    );
    s += "    device_id=torch.cuda.current_device(),\n    use_orig_params=True,\n)\n";
    if sc.checkpointing != Checkpointing::None {
        s += "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing\n";
        let _ = writeln!(
            s,
            "apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, {}))",
            cls.split(' ').next().unwrap_or(cls)
        );
    }
    s
}

/// Megatron-LM `pretrain_gpt.py` flags for the plan.
pub fn megatron_args(f: &ScenarioFile) -> String {
    let sc = &f.scenario;
    let p = &sc.parallel;
    let mut a: Vec<String> = vec![
        format!("--tensor-model-parallel-size {}", p.tp),
        format!("--pipeline-model-parallel-size {}", p.pp),
    ];
    if p.sp && p.tp > 1 {
        a.push("--sequence-parallel".into());
    }
    if p.cp > 1 {
        a.push(format!("--context-parallel-size {}", p.cp));
    }
    if p.ep > 1 {
        a.push(format!("--expert-model-parallel-size {}", p.ep));
    }
    if let Some(t) = sc.model.transformer() {
        if p.virtual_stages > 1 && p.pp > 1 {
            a.push(format!(
                "--num-layers-per-virtual-pipeline-stage {}",
                (t.num_layers / (p.pp * p.virtual_stages)).max(1)
            ));
        }
        a.push(format!("--num-layers {}", t.num_layers));
        a.push(format!("--hidden-size {}", t.hidden_size));
        a.push(format!("--ffn-hidden-size {}", t.intermediate_size));
        a.push(format!("--num-attention-heads {}", t.num_heads));
        if t.num_kv_heads != t.num_heads {
            a.push("--group-query-attention".into());
            a.push(format!("--num-query-groups {}", t.num_kv_heads));
        }
        a.push(format!("--max-position-embeddings {}", t.max_position_embeddings.max(sc.seq)));
        if t.family == Family::Llama {
            a.extend(
                [
                    "--swiglu",
                    "--normalization RMSNorm",
                    "--position-embedding-type rope",
                    "--disable-bias-linear",
                ]
                .map(String::from),
            );
            if !t.tie_word_embeddings {
                a.push("--untie-embeddings-and-output-weights".into());
            }
        }
    }
    a.push(format!("--seq-length {}", sc.seq));
    a.push(format!("--micro-batch-size {}", sc.batch));
    a.push(format!("--global-batch-size {}", f.global_batch()));
    match sc.precision {
        Precision::Bf16 | Precision::Bf16Amp | Precision::Bf16Mixed => a.push("--bf16".into()),
        Precision::Fp16 | Precision::Fp16Amp | Precision::Fp16Mixed => a.push("--fp16".into()),
        Precision::Fp8 => a.extend(["--bf16", "--fp8-format hybrid"].map(String::from)),
        _ => {}
    }
    if p.zero >= 1 || p.fsdp.is_some() {
        a.push("--use-distributed-optimizer".into());
    }
    match sc.checkpointing {
        Checkpointing::None => {}
        Checkpointing::Selective => a.push("--recompute-granularity selective".into()),
        Checkpointing::Full => {
            a.extend(
                ["--recompute-granularity full", "--recompute-method uniform", "--recompute-num-layers 1"]
                    .map(String::from),
            );
        }
        Checkpointing::Every(k) => a.extend([
            "--recompute-granularity full".into(),
            "--recompute-method uniform".into(),
            format!("--recompute-num-layers {k}"),
        ]),
        Checkpointing::Segments(n) => {
            let l = sc.model.transformer().map_or(1, |t| t.num_layers);
            a.extend([
                "--recompute-granularity full".into(),
                "--recompute-method uniform".into(),
                format!("--recompute-num-layers {}", l.div_ceil(n.max(1))),
            ]);
        }
    }
    if sc.attention == crate::estimate::AttentionImpl::Flash {
        a.push("--use-flash-attn".into());
    }
    let mut s = format!(
        "# vramscope plan for {}: {} GPU(s) = dp {} x tp {} x pp {} x cp {}\nMEGATRON_ARGS=(\n",
        sc.model.name,
        p.world(),
        p.dp,
        p.tp,
        p.pp,
        p.cp
    );
    for x in a {
        let _ = writeln!(s, "    {x}");
    }
    s += ")\ntorchrun --nproc_per_node 8 pretrain_gpt.py \"${MEGATRON_ARGS[@]}\"\n";
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::preset::builtin;

    fn plan() -> ScenarioFile {
        let mut sc = Scenario::new(builtin("llama-2-7b").unwrap());
        sc.seq = 4096;
        sc.batch = 2;
        sc.checkpointing = Checkpointing::Full;
        sc.parallel.dp = 8;
        sc.parallel.zero = 3;
        ScenarioFile::new(sc, Some(&gpu::find("a100-80gb").unwrap()), Some(64))
    }

    #[test]
    fn scenario_file_round_trips() {
        let f = plan();
        let text = f.to_ron().unwrap();
        assert_eq!(ScenarioFile::from_ron("plan.ron", &text).unwrap(), f);
    }

    #[test]
    fn scenario_file_errors_name_the_line() {
        let text = plan().to_ron().unwrap().replacen("batch: 2", "batch: two", 1);
        let e = ScenarioFile::from_ron("plan.ron", &text).unwrap_err().to_string();
        assert!(
            e.starts_with("plan.ron:") && e.split(':').nth(1).unwrap().parse::<usize>().unwrap() > 1,
            "{e}"
        );
        let text = plan().to_ron().unwrap().replacen("schema: 1", "schema: 9", 1);
        assert!(ScenarioFile::from_ron("plan.ron", &text).unwrap_err().to_string().contains("schema 9"));
        let text = plan().to_ron().unwrap().replacen("batch: 2", "batch: 0", 1);
        assert!(ScenarioFile::from_ron("p.ron", &text).is_err());
    }

    #[test]
    fn deepspeed_batch_arithmetic_and_documented_keys() {
        let f = plan();
        let v = deepspeed_config(&f);
        let o = v.as_object().unwrap();
        for k in o.keys() {
            assert!(DEEPSPEED_KEYS.contains(&k.as_str()), "undocumented key {k}");
        }
        for k in v["zero_optimization"].as_object().unwrap().keys() {
            assert!(DEEPSPEED_ZERO_KEYS.contains(&k.as_str()), "undocumented zero key {k}");
        }
        // DeepSpeed asserts train_batch_size == micro x accumulation x world/mp
        assert_eq!(v["train_batch_size"], 64);
        assert_eq!(v["train_micro_batch_size_per_gpu"], 2);
        assert_eq!(v["gradient_accumulation_steps"], 4);
        assert_eq!(v["zero_optimization"]["stage"], 3);
        assert_eq!(v["bf16"]["enabled"], true);
    }

    #[test]
    fn the_chart_link_goes_under_the_breakdown_heading() {
        let f = plan();
        let md = report_markdown(&f, &estimate(&f.scenario).unwrap());
        let linked = with_chart_link(&md, "plan.chart.png");
        let i = linked.find("## Per-GPU memory").unwrap();
        let j = linked.find("![per-GPU memory breakdown](plan.chart.png)").unwrap();
        let k = linked.find("| component |").unwrap();
        assert!(i < j && j < k, "link between the heading and the table");
        assert_eq!(linked.replace("\n![per-GPU memory breakdown](plan.chart.png)\n", ""), md);
    }

    #[test]
    fn atomic_writes_refuse_to_overwrite_and_leave_nothing_behind() {
        let dir = std::env::temp_dir().join(format!("vramscope-export-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.txt");
        write_atomic(&p, b"one", false).unwrap();
        assert!(matches!(write_atomic(&p, b"two", false), Err(ExportError::Exists(_))));
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        write_atomic(&p, b"three", true).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"three");
        let e = write_atomic(&dir.join("missing/b.txt"), b"x", false).unwrap_err();
        assert!(matches!(e, ExportError::Io { .. }), "{e}");
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.txt")], "no temporary files left");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
