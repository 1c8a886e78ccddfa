//! `vramscope probe` (write the PyTorch measuring script) and `vramscope calibrate` (compare its
//! result with the estimate; save a GPU's calibration profile). The file IO of both; the logic is
//! in `vramscope::probe` and `vramscope::calibrate`.

use super::choice::choice;
use super::{EstimateArgs, Inputs, inputs, inputs_with, notes};
use anyhow::{Context, Result, bail};
use clap::{Args, Parser};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use vramscope::calibrate::{self, ProbeResult, Profile};
use vramscope::model::{hf_config, preset};
use vramscope::probe::{self, Device};
use vramscope::report::{self, FitInfo};
use vramscope::units::MIB;

/// Flags of `probe`.
#[derive(Args, Debug, Clone)]
pub struct ProbeArgs {
    /// The scenario (same flags as `estimate`; one GPU, --model a preset, config.json or .ron).
    #[command(flatten)]
    pub estimate: EstimateArgs,
    /// The script to write (its result goes next to it: probe.py → probe.json).
    #[arg(short, long, value_name = "PROBE.py")]
    pub output: PathBuf,
    /// Where the script runs.
    #[arg(long, default_value = Device::Cuda.name(), value_parser = choice::<Device>().notes(notes::DEVICE))]
    pub device: Device,
    /// Measured steps (training) or forward passes (inference).
    #[arg(long, default_value_t = 2, value_parser = super::bounds::int32(1, 10_000))]
    pub steps: u32,
    /// Unmeasured steps first (optimizer states allocated, kernels loaded).
    #[arg(long, default_value_t = 1, value_parser = super::bounds::int32(0, 1000))]
    pub warmup: u32,
    /// `torch.cuda.memory._record_memory_history(max_entries=N)` for the snapshot; 0: none.
    #[arg(long, default_value_t = 100_000, value_parser = super::bounds::int(0, 100_000_000))]
    pub snapshot_entries: u64,
    /// Overwrite an existing script.
    #[arg(long)]
    pub force: bool,
}

/// Flags of `calibrate`.
#[derive(Args, Debug, Clone)]
pub struct CalibrateArgs {
    /// The JSON a probe wrote.
    #[arg(value_name = "PROBE.json")]
    pub probe: PathBuf,
    /// The catalog GPU it ran on (default: the probe's --gpu, else matched from the device name).
    #[arg(long)]
    pub gpu: Option<String>,
    /// Store the measured CUDA context and allocator reserve as this GPU's calibration profile.
    #[arg(long)]
    pub save: bool,
    /// Where profiles live (default: vramscope's data folder, `calibration/`).
    #[arg(long, value_name = "DIR")]
    pub profile_dir: Option<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The profiles folder: `--profile-dir`, else `<data dir>/vramscope/calibration` (where the app
/// keeps its state).
pub fn profile_dir(flag: Option<&Path>) -> Result<PathBuf> {
    match flag {
        Some(d) => Ok(d.to_owned()),
        None => eframe::storage_dir("vramscope")
            .map(|d| d.join("calibration"))
            .context("no home folder for calibration profiles; pass --profile-dir"),
    }
}

fn read_bounded(path: &Path, max: u64, what: &str) -> Result<String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).with_context(|| format!("{shown}"))?;
    if meta.len() > max {
        bail!("{shown}: larger than {} MiB; not {what}", max >> 20);
    }
    std::fs::read_to_string(path).with_context(|| format!("{shown}"))
}

/// Loads the calibration profile of `gpu_id` (for `estimate --calibrated`).
pub fn load_profile(dir: Option<&Path>, gpu_id: &str) -> Result<Profile> {
    let path = profile_dir(dir)?.join(format!("{gpu_id}.json"));
    if !path.exists() {
        bail!(
            "no calibration profile for {gpu_id} ({} is missing); run `vramscope calibrate probe.json --save` with a probe from that GPU",
            path.display()
        );
    }
    let text = read_bounded(&path, 1 << 20, "a calibration profile")?;
    let p: Profile = serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: not a calibration profile: {e}", path.display()))?;
    if p.schema != calibrate::PROFILE_SCHEMA {
        bail!("{}: profile schema {} is not supported", path.display(), p.schema);
    }
    Ok(p)
}

/// The model's HF config: a built-in HF preset's or a config.json verbatim, else generated from
/// the RON preset's numbers.
fn model_config(model: &str, sc: &vramscope::Scenario) -> Result<probe::Config> {
    if let Some(text) = preset::builtin_hf_config(model) {
        let config = serde_json::from_str(text).context("a built-in config.json")?;
        return Ok(probe::Config { config, verbatim: true });
    }
    let path = Path::new(model);
    let file = if path.is_dir() { path.join("config.json") } else { path.to_owned() };
    let name = file.to_string_lossy();
    if preset::builtin(model).is_none()
        && name.ends_with(".json")
        && !name.ends_with(".safetensors.index.json")
    {
        let text = read_bounded(&file, 16 << 20, "a config.json")?;
        let config = serde_json::from_str(&text).with_context(|| format!("{}", file.display()))?;
        return Ok(probe::Config { config, verbatim: true });
    }
    if preset::builtin(model).is_none() && !name.ends_with(".ron") {
        bail!(
            "probe: {model}: the probe builds the model from its config.json; pass that file or its folder"
        );
    }
    Ok(probe::Config { config: probe::hf::config_from_spec(&sc.model, sc.seq)?, verbatim: false })
}

/// The scenario as `estimate` flags, from the checked scenario (seq and precision explicit).
fn echo_args(a: &EstimateArgs, sc: &vramscope::Scenario) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    let mut push = |k: &str, val: String| {
        v.push(k.to_owned());
        v.push(val);
    };
    push("--model", a.model.clone().unwrap_or_default());
    push("--mode", sc.mode.name().into());
    push("--batch", sc.batch.to_string());
    match sc.image {
        // a vision model's sequence is its image's tokens
        Some(i) if sc.image_size().is_some() => push("--image-size", format!("{}x{}", i.height, i.width)),
        _ => push("--seq", sc.seq.to_string()),
    }
    if sc.new_tokens > 0 {
        push("--new-tokens", sc.new_tokens.to_string());
    }
    push("--precision", sc.precision.name().into());
    push("--optimizer", sc.optimizer.name().into());
    push("--attention", sc.attention.name().into());
    push("--checkpoint", sc.checkpointing.to_string());
    if let Some(l) = sc.lora {
        push("--lora", format!("{}:{}", l.rank, l.targets.names()));
        if l.dropout != 0.0 {
            push("--lora-dropout", l.dropout.to_string());
        }
    }
    if let Some(g) = &a.gpu {
        push("--gpu", g.clone());
    }
    for (k, val) in [("--context-mib", a.context_mib), ("--workspace-mib", a.workspace_mib)] {
        if let Some(x) = val {
            push(k, x.to_string());
        }
    }
    if let Some(r) = a.reserve_frac {
        push("--reserve-frac", r.to_string());
    }
    v
}

/// Runs `probe`: checks the scenario, estimates it, writes the script.
pub fn run_probe(a: &ProbeArgs) -> Result<String> {
    if a.estimate.scenario.is_some() {
        bail!(
            "probe: --scenario files hold no HF config; pass --model (a preset, config.json or .ron) and the flags"
        );
    }
    if a.estimate.calibrated {
        bail!("probe: --calibrated does not apply (the probe measures the overhead a profile holds)");
    }
    let model = a.estimate.model.as_deref().context("probe: --model is required")?;
    let Inputs { sc, notes, gpu, .. } = inputs(&a.estimate)?;
    probe::check(&sc)?;
    let config = model_config(model, &sc)?;
    // what `estimate` prints: the verdict on the card, else the replay on a card without end
    let (e, fits) = vramscope::fit::printed(&sc, gpu.as_ref().map(vramscope::gpu::Gpu::capacity))?;
    let fit = gpu.map(|g| FitInfo {
        fits,
        max_batch: vramscope::fit::max_batch(&sc, g.capacity()),
        max_seq: vramscope::fit::max_seq(&sc, g.capacity()),
        gpu: g,
    });
    let predicted = report::to_json(&sc, &e, fit.as_ref(), &notes);
    let opts = probe::Options {
        device: a.device,
        steps: a.steps,
        warmup: a.warmup,
        snapshot_entries: a.snapshot_entries,
    };
    let text = probe::script(&sc, &config, &echo_args(&a.estimate, &sc), &predicted, &opts)?;
    vramscope::export::write_atomic(&a.output, text.as_bytes(), a.force)
        .context("writing the probe script")?;
    let json = a.output.with_extension("json");
    Ok(format!(
        "wrote {} ({} bytes; predicted peak {:.1} MiB, total {:.1} MiB)\nrun it where torch and transformers are installed: python3 {}\nthen: vramscope calibrate {}\n",
        a.output.display(),
        text.len(),
        e.peak_allocated as f64 / MIB,
        e.total as f64 / MIB,
        a.output.display(),
        json.display()
    ))
}

#[derive(Parser)]
#[command(no_binary_name = true)]
struct Echo {
    #[command(flatten)]
    estimate: EstimateArgs,
}

fn mib(v: Option<i64>) -> String {
    v.map_or_else(|| "n/a".into(), |b| format!("{:.1} MiB", b as f64 / MIB))
}

/// Runs `calibrate`.
pub fn run_calibrate(a: &CalibrateArgs) -> Result<String> {
    let shown = a.probe.display().to_string();
    let text = read_bounded(&a.probe, calibrate::MAX_PROBE_BYTES, "a probe result")?;
    let p: ProbeResult = calibrate::parse(&shown, &text)?;
    let mut ea = Echo::try_parse_from(&p.args)
        .map_err(|e| {
            let msg = e.to_string();
            anyhow::anyhow!("{shown}: args: {}", msg.lines().next().unwrap_or("invalid"))
        })?
        .estimate;
    let mut gpu_note = None;
    if a.gpu.is_some() {
        ea.gpu = a.gpu.clone();
    } else if ea.gpu.is_none()
        && let Some(name) = &p.environment.gpu_name
        && let Some(g) = calibrate::match_gpu(name, p.environment.gpu_total_memory.unwrap_or(0))
    {
        gpu_note = Some(format!("GPU {} matched from the device name \"{name}\" (--gpu changes it)", g.id));
        ea.gpu = Some(g.id.clone());
    }
    let i = probe_inputs(&p, &shown, &ea)?;
    let (e, _) =
        vramscope::estimate::estimate_reserved(&i.sc, i.gpu.as_ref().map(vramscope::gpu::Gpu::capacity))?;
    let rows = calibrate::compare(&p, &i.sc, &e);
    let mut notes: Vec<String> = gpu_note.into_iter().collect();
    if let Some(err) = &p.error {
        notes.push(format!("the probe did not finish: {err}"));
    }
    let embedded = p.predicted.pointer("/bytes/peak_allocated").and_then(Value::as_u64);
    if embedded.is_some_and(|b| b != e.peak_allocated) {
        notes.push(format!(
            "the estimate changed since the probe was written (peak allocated {} then, {} now)",
            mib(embedded.map(|b| b as i64)),
            mib(Some(e.peak_allocated as i64))
        ));
    }
    notes.extend(p.notes.iter().map(|n| format!("probe: {n}")));
    let saved = if a.save { Some(save_profile(a, &p, &ea)?) } else { None };
    let env = &p.environment;
    let device = env.gpu_name.clone().or_else(|| env.device.clone()).unwrap_or_else(|| "?".into());
    if a.json {
        let v = json!({
            "schema": 1,
            "probe": shown,
            "model": i.sc.model.name,
            "device": device,
            "date": p.date(),
            "environment": env,
            "rows": rows.iter().map(|r| json!({
                "key": r.key, "what": r.what.trim(), "measured": r.measured, "predicted": r.predicted,
                "error_pct": r.error_pct().map(|x| (x * 100.0).round() / 100.0),
            })).collect::<Vec<_>>(),
            "profile": saved.as_ref().map(|(prof, path)| json!({"path": path, "profile": prof})),
            "notes": notes,
        });
        return Ok(serde_json::to_string_pretty(&v).context("serialising")? + "\n");
    }
    let mut s = format!("calibrate {shown}: {} on {device}, {}\n", i.sc.model.name, p.date());
    let versions: Vec<String> = [
        ("torch", &env.torch),
        ("transformers", &env.transformers),
        ("CUDA", &env.cuda),
        ("driver", &env.driver),
    ]
    .iter()
    .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k} {v}")))
    .collect();
    if !versions.is_empty() {
        s += &format!("  {}\n", versions.join(", "));
    }
    s += &format!("  scenario: {}\n\n", p.args.join(" "));
    s += &format!("  {:<38}{:>14}{:>14}{:>10}\n", "component", "measured", "predicted", "error");
    for r in &rows {
        let err = r.error_pct().map_or_else(|| "n/a".into(), |x| format!("{x:+.1} %"));
        s += &format!("  {:<38}{:>14}{:>14}{:>10}\n", r.what, mib(r.measured), mib(r.predicted), err);
    }
    s += "  error = (predicted - measured) / measured: + means the estimate is above the measurement\n";
    for n in &notes {
        s += &format!("  note: {n}\n");
    }
    if let Some((prof, path)) = &saved {
        s += &format!(
            "saved the calibration profile for {} to {}\n  {}\n  use it with: vramscope estimate --gpu {} --calibrated ...\n",
            prof.gpu_id,
            path.display(),
            calibrate::note(prof),
            prof.gpu_id
        );
    }
    Ok(s)
}

/// The probed scenario: its flags over a preset or a model file here, else the config the probe
/// embedded.
fn probe_inputs(p: &ProbeResult, shown: &str, ea: &EstimateArgs) -> Result<Inputs> {
    let model = ea.model.clone().unwrap_or_default();
    if preset::builtin(&model).is_some() || Path::new(&model).exists() {
        inputs(ea)
    } else if let (true, Some(cfg)) = (p.config_verbatim(), &p.config) {
        let label = format!("{shown} (embedded config of {model})");
        let parsed = hf_config::parse(&label, &cfg.to_string())?;
        let name = p.model.get("name").and_then(Value::as_str).unwrap_or("probed model").to_owned();
        let loaded = preset::Loaded {
            model: vramscope::model::ModelSpec {
                name,
                arch: vramscope::model::Architecture::Transformer(Box::new(parsed.spec)),
            },
            notes: parsed.notes,
            dtype: parsed.dtype,
            facts: parsed.facts,
            header: None,
        };
        inputs_with(ea, loaded)
    } else {
        bail!("{shown}: model \"{model}\" is neither a preset nor a file here");
    }
}

/// `calibrate --save`: the probe's GPU's calibration profile written to the profile folder.
fn save_profile(a: &CalibrateArgs, p: &ProbeResult, ea: &EstimateArgs) -> Result<(Profile, PathBuf)> {
    let id = ea.gpu.clone().context(
        "--save: cannot tell which catalog GPU the probe ran on; pass --gpu ID (see `vramscope gpus`)",
    )?;
    let id = vramscope::gpu::find(&id).map_err(anyhow::Error::msg)?.id;
    let prof = calibrate::profile(p, &id)?;
    let dir = profile_dir(a.profile_dir.as_deref())?;
    std::fs::create_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
    let path = dir.join(format!("{id}.json"));
    let body = serde_json::to_string_pretty(&prof).context("serialising the profile")? + "\n";
    vramscope::export::write_atomic(&path, body.as_bytes(), true).context("writing the profile")?;
    Ok((prof, path))
}
