//! `vramscope calibrate`: a probe's measurement beside the estimate for the same scenario, and the
//! calibration profile of a GPU (the CUDA context and allocator reserve it showed).
//!
//! Pure: the CLI reads the probe's JSON and the profile files; [`apply`] is how an estimate takes a
//! profile.

use crate::estimate::{Estimate, Overhead, Phase, Scenario};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Largest probe JSON read (a probe writes a few hundred KiB at most).
pub const MAX_PROBE_BYTES: u64 = 16 << 20;

/// Schema of a calibration profile.
pub const PROFILE_SCHEMA: u32 = 1;

/// Why a probe result or a profile cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CalibrateError {
    /// Not a probe JSON, or a field of the wrong type.
    #[error("{path}: {msg}")]
    Malformed {
        /// File.
        path: String,
        /// What is wrong.
        msg: String,
    },
    /// The probe lacks what a profile needs.
    #[error("{0}")]
    NoProfile(String),
}

/// `measured` of a probe (allocator statistics; all null on the CPU).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct Measured {
    /// `max_memory_allocated` over the measured steps.
    pub peak_allocated: Option<u64>,
    /// `max_memory_reserved` over the measured steps.
    pub peak_reserved: Option<u64>,
    /// Peak allocated per phase.
    pub per_phase: PerPhase,
    /// Peak reserved per phase.
    pub per_phase_reserved: PerPhase,
    /// NVML's used memory of the whole GPU after the steps.
    pub nvml_used: Option<u64>,
    /// `nvml_used - memory_reserved()`: CUDA context and other memory outside the allocator.
    pub cuda_context_estimate: Option<i64>,
}

/// Bytes per phase of the step.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct PerPhase {
    /// Forward (with the loss).
    pub forward: Option<u64>,
    /// Backward.
    pub backward: Option<u64>,
    /// Optimizer step and zero_grad.
    pub optimizer_step: Option<u64>,
}

/// `tensors` of a probe: exact storage bytes (on any device).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct Tensors {
    /// Distinct parameter storages.
    pub parameters: Option<u64>,
    /// Gradients after backward.
    pub gradients: Option<u64>,
    /// Optimizer state tensors (not the scalar `step`s).
    pub optimizer_states: Option<u64>,
    /// KV cache after the prefill (inference).
    pub kv_cache: Option<u64>,
}

/// `environment` of a probe.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct Environment {
    /// `cuda` or `cpu`.
    pub device: Option<String>,
    /// `torch.cuda.get_device_name`.
    pub gpu_name: Option<String>,
    /// Total memory the device reports, bytes.
    pub gpu_total_memory: Option<u64>,
    /// Driver version.
    pub driver: Option<String>,
    /// torch version.
    pub torch: Option<String>,
    /// transformers version.
    pub transformers: Option<String>,
    /// CUDA runtime torch was built with.
    pub cuda: Option<String>,
    /// When the probe ran (ISO 8601, UTC).
    pub date_utc: Option<String>,
}

/// The parts of a probe's JSON that calibration reads.
#[derive(Clone, Debug, Deserialize)]
pub struct ProbeResult {
    /// 1.
    pub schema: u64,
    /// `"vramscope-probe"`.
    pub kind: String,
    /// The scenario as `vramscope estimate` flags.
    pub args: Vec<String>,
    /// The model's HF config the probe built.
    #[serde(default)]
    pub config: Option<Value>,
    /// The model's name and whether `config` is its own config.json.
    #[serde(default)]
    pub model: Value,
    /// Allocator statistics.
    #[serde(default)]
    pub measured: Measured,
    /// Exact tensor bytes.
    #[serde(default)]
    pub tensors: Tensors,
    /// Versions and GPU.
    #[serde(default)]
    pub environment: Environment,
    /// The estimate embedded when the script was written.
    #[serde(default)]
    pub predicted: Value,
    /// An out-of-memory or other failure of the run.
    #[serde(default)]
    pub error: Option<String>,
    /// The script's notes.
    #[serde(default)]
    pub notes: Vec<String>,
}

impl ProbeResult {
    /// Was `config` the model's own config.json (not generated from a RON preset)?
    pub fn config_verbatim(&self) -> bool {
        self.model.get("config_verbatim").and_then(Value::as_bool).unwrap_or(false)
    }

    /// The date part of `date_utc`.
    pub fn date(&self) -> String {
        self.environment
            .date_utc
            .as_deref()
            .map_or_else(|| "unknown date".into(), |d| d.chars().take(10).collect())
    }
}

/// Reads a probe's JSON; `path` is used in messages.
pub fn parse(path: &str, text: &str) -> Result<ProbeResult, CalibrateError> {
    let bad = |msg: String| CalibrateError::Malformed { path: path.to_owned(), msg };
    let p: ProbeResult = serde_json::from_str(text).map_err(|e| bad(format!("not a probe result: {e}")))?;
    if p.kind != "vramscope-probe" {
        return Err(bad(format!("kind \"{}\" is not \"vramscope-probe\"", p.kind)));
    }
    if p.schema != crate::probe::SCHEMA {
        return Err(bad(format!(
            "probe schema {} is not supported (this build reads {})",
            p.schema,
            crate::probe::SCHEMA
        )));
    }
    if p.args.is_empty() {
        return Err(bad("\"args\" is empty: no scenario to re-estimate".into()));
    }
    Ok(p)
}

/// One line of the comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// Stable key.
    pub key: &'static str,
    /// Label.
    pub what: &'static str,
    /// What the probe measured.
    pub measured: Option<i64>,
    /// What the estimate says.
    pub predicted: Option<i64>,
}

impl Row {
    /// `(predicted - measured) / measured` in %: positive when the estimate is above.
    pub fn error_pct(&self) -> Option<f64> {
        match (self.measured, self.predicted) {
            (Some(m), Some(p)) if m > 0 => Some((p - m) as f64 / m as f64 * 100.0),
            _ => None,
        }
    }
}

/// The estimate's peak in one phase (from the step's timeline walk).
fn phase_peak(e: &Estimate, phase: Phase) -> Option<u64> {
    Some(e.phase_peaks.of(phase)).filter(|b| *b > 0)
}

/// Measured beside predicted, component by component.
pub fn compare(p: &ProbeResult, sc: &Scenario, e: &Estimate) -> Vec<Row> {
    let train = sc.mode == crate::estimate::Mode::Train;
    let i = |v: Option<u64>| v.map(|x| x as i64);
    let o = sc.overhead;
    let reserve = (e.peak_allocated as f64 * o.allocator_reserve_fraction).round() as u64;
    let m = &p.measured;
    let t = &p.tensors;
    let mut rows = vec![Row {
        key: "parameters",
        what: "parameters",
        measured: i(t.parameters),
        predicted: i(Some(e.parameters)),
    }];
    if train {
        rows.push(Row {
            key: "gradients",
            what: "gradients",
            measured: i(t.gradients),
            predicted: i(Some(e.gradients)),
        });
        rows.push(Row {
            key: "optimizer_states",
            what: "optimizer states",
            measured: i(t.optimizer_states),
            predicted: i(Some(e.optimizer_states)),
        });
    } else {
        rows.push(Row {
            key: "kv_cache",
            what: "KV cache",
            measured: i(t.kv_cache),
            predicted: i(Some(e.kv_cache)),
        });
    }
    rows.push(Row {
        key: "peak_allocated",
        what: "peak allocated",
        measured: i(m.peak_allocated),
        predicted: i(Some(e.peak_allocated)),
    });
    let phases: &[(&'static str, &'static str, Phase, Option<u64>)] = if train {
        &[
            ("forward", "  peak in forward", Phase::Forward, m.per_phase.forward),
            ("backward", "  peak in backward", Phase::Backward, m.per_phase.backward),
            ("optimizer_step", "  peak in optimizer step", Phase::OptimizerStep, m.per_phase.optimizer_step),
        ]
    } else {
        &[("forward", "  peak in forward", Phase::Forward, m.per_phase.forward)]
    };
    for (key, what, phase, measured) in phases {
        rows.push(Row { key, what, measured: i(*measured), predicted: i(phase_peak(e, *phase)) });
    }
    rows.push(Row {
        key: "peak_reserved",
        what: "peak reserved (allocated + reserve)",
        measured: i(m.peak_reserved),
        predicted: i(Some(e.peak_allocated + reserve)),
    });
    rows.push(Row {
        key: "outside_allocator",
        what: "outside the allocator (context)",
        measured: m.cuda_context_estimate,
        predicted: i(Some(e.overhead - reserve)),
    });
    rows.push(Row {
        key: "nvml_total",
        what: "NVML used vs total",
        measured: i(m.nvml_used),
        predicted: i(Some(e.total)),
    });
    rows
}

/// A GPU's measured overhead: what `estimate --calibrated` uses instead of the catalog defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// 1.
    pub schema: u32,
    /// Catalog id (`h100-80gb`): the file name and what `--gpu` matches.
    pub gpu_id: String,
    /// The device name torch reported.
    pub gpu_name: String,
    /// Driver version.
    pub driver: Option<String>,
    /// torch version.
    pub torch: Option<String>,
    /// CUDA runtime version.
    pub cuda: Option<String>,
    /// Date of the probe (YYYY-MM-DD).
    pub date: String,
    /// NVML used minus reserved: CUDA context, kernels, libraries.
    pub cuda_context_bytes: u64,
    /// `(peak_reserved - peak_allocated) / peak_allocated`.
    pub allocator_reserve_fraction: f64,
    /// The scenario probed (its flags).
    pub scenario: String,
}

/// The profile a GPU probe yields (needs the allocator statistics and an NVML reading).
pub fn profile(p: &ProbeResult, gpu_id: &str) -> Result<Profile, CalibrateError> {
    let none =
        |what: &str| CalibrateError::NoProfile(format!("cannot save a profile: the probe has no {what}"));
    let m = &p.measured;
    let alloc =
        m.peak_allocated.filter(|&a| a > 0).ok_or_else(|| none("peak_allocated (a --device cpu run?)"))?;
    let reserved = m.peak_reserved.ok_or_else(|| none("peak_reserved"))?;
    let ctx = m.cuda_context_estimate.ok_or_else(|| none("NVML reading (pynvml or nvidia-smi)"))?;
    if ctx <= 0 {
        return Err(CalibrateError::NoProfile(format!(
            "cannot save a profile: NVML used is below the reserved memory ({ctx} B outside the allocator)"
        )));
    }
    let frac = (reserved.saturating_sub(alloc) as f64 / alloc as f64).clamp(0.0, 1.0);
    Ok(Profile {
        schema: PROFILE_SCHEMA,
        gpu_id: gpu_id.to_owned(),
        gpu_name: p.environment.gpu_name.clone().unwrap_or_else(|| gpu_id.to_owned()),
        driver: p.environment.driver.clone(),
        torch: p.environment.torch.clone(),
        cuda: p.environment.cuda.clone(),
        date: p.date(),
        cuda_context_bytes: ctx as u64,
        allocator_reserve_fraction: (frac * 1e4).round() / 1e4,
        scenario: p.args.join(" "),
    })
}

/// The overhead under a profile: its context and allocator reserve; the cuBLAS workspace stays
/// (PyTorch allocates it through the caching allocator, so the probe's context excludes it).
pub fn apply(o: Overhead, profile: &Profile) -> Overhead {
    Overhead {
        cuda_context_bytes: profile.cuda_context_bytes,
        allocator_reserve_fraction: profile.allocator_reserve_fraction,
        // the measured context holds whatever kernels the card's runtime loaded
        module_loading: crate::estimate::context::ModuleLoading::Lazy,
        flat_reserve: true,
        ..o
    }
}

/// "calibrated on NVIDIA H100 80GB HBM3, 2025-06-01 (driver 550.54.15): …", the note an estimate
/// under a profile carries.
pub fn note(profile: &Profile) -> String {
    let drv = profile.driver.as_deref().map(|d| format!(" (driver {d})")).unwrap_or_default();
    format!(
        "calibrated on {}, {}{drv}: CUDA context {:.0} MiB, allocator reserve {:.1} %",
        profile.gpu_name,
        profile.date,
        profile.cuda_context_bytes as f64 / (1u64 << 20) as f64,
        profile.allocator_reserve_fraction * 100.0
    )
}

/// The catalog GPU a device name and size belong to (`NVIDIA H100 80GB HBM3`, 79.6 GiB →
/// h100-80gb): the card's model word in the name, the nearest memory size within 8 %, and a
/// form-factor word (`PCIe`, `NVL`) breaking ties.
pub fn match_gpu(name: &str, total_bytes: u64) -> Option<&'static crate::gpu::Gpu> {
    let words: Vec<String> =
        name.split(|c: char| !c.is_ascii_alphanumeric()).map(str::to_ascii_lowercase).collect();
    let mib = (total_bytes >> 20) as f64;
    let mut found: Vec<&crate::gpu::Gpu> = crate::gpu::catalog()
        .iter()
        .filter(|g| {
            let model = g.name.split_whitespace().find(|w| w.chars().any(|c| c.is_ascii_digit()));
            model.is_some_and(|m| words.iter().any(|w| *w == m.to_ascii_lowercase()))
                && (mib == 0.0 || (g.memory_mib as f64 / mib - 1.0).abs() < 0.08)
        })
        .collect();
    if found.len() > 1 {
        let tagged: Vec<&crate::gpu::Gpu> = found
            .iter()
            .copied()
            .filter(|g| g.id.rsplit('-').next().is_some_and(|tag| words.iter().any(|w| w == tag)))
            .collect();
        if !tagged.is_empty() {
            found = tagged;
        } else {
            // no form-factor word: the plain card (SXM), the one without such a tag
            found.retain(|g| !["pcie", "nvl"].iter().any(|t| g.id.ends_with(t)));
        }
    }
    found.into_iter().min_by_key(|g| (g.memory_mib as f64 - mib).abs() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibrate_matches_torch_device_names() {
        let gib = |g: f64| (g * (1u64 << 30) as f64) as u64;
        assert_eq!(match_gpu("NVIDIA H100 80GB HBM3", gib(79.19)).map(|g| g.id.as_str()), Some("h100-80gb"));
        assert_eq!(match_gpu("NVIDIA H100 PCIe", gib(79.19)).map(|g| g.id.as_str()), Some("h100-pcie"));
        assert_eq!(match_gpu("NVIDIA A100-SXM4-40GB", gib(39.4)).map(|g| g.id.as_str()), Some("a100-40gb"));
        assert_eq!(match_gpu("NVIDIA GeForce RTX 4090", gib(23.6)).map(|g| g.id.as_str()), Some("rtx-4090"));
        assert_eq!(match_gpu("NVIDIA L4", gib(22.0)).map(|g| g.id.as_str()), Some("l4"));
        assert!(match_gpu("Some Other Card", gib(16.0)).is_none());
    }

    #[test]
    fn calibrate_profile_replaces_context_and_reserve() {
        let p = Profile {
            schema: 1,
            gpu_id: "h100-80gb".into(),
            gpu_name: "NVIDIA H100 80GB HBM3".into(),
            driver: Some("550.54.15".into()),
            torch: None,
            cuda: None,
            date: "2025-06-01".into(),
            cuda_context_bytes: 600 << 20,
            allocator_reserve_fraction: 0.02,
            scenario: String::new(),
        };
        let o = apply(Overhead::default(), &p);
        assert_eq!((o.cuda_context_bytes, o.workspace_bytes), (600 << 20, 32 << 20));
        assert!(note(&p).starts_with("calibrated on NVIDIA H100 80GB HBM3, 2025-06-01"));
    }

    #[test]
    fn calibrate_rejects_other_json() {
        assert!(parse("x.json", "{\"schema\": 1}").unwrap_err().to_string().starts_with("x.json: "));
        let e = parse("y.json", r#"{"schema":1,"kind":"other","args":["--model","gpt2"]}"#).unwrap_err();
        assert!(e.to_string().contains("kind"), "{e}");
    }
}
