//! `monitor --prometheus` and `diagnose --prometheus`: a cluster's GPUs from the Prometheus
//! server that scrapes NVIDIA's DCGM exporter. A source that fails is a `MonitorError` (exit 3,
//! as NVML's); bad flags are exit 2.

use anyhow::{Result, bail};
use clap::Args;
use vramscope::diagnose::trace::{Sample, TraceError, TraceReport, Verdict, classify};
use vramscope::monitor::MonitorError;
use vramscope::monitor::prometheus::{PromConfig, PrometheusSource, Series, parse_duration, unix_now};

/// Where a cluster's GPU memory is read from.
#[derive(Args, Debug, Clone, Default)]
pub struct PromArgs {
    /// A Prometheus server scraping NVIDIA's DCGM exporter (`http://prometheus:9090`): read a
    /// cluster's GPUs (`DCGM_FI_DEV_FB_USED` / `_FREE` / `_RESERVED` by host and GPU) from it
    /// (monitor: instead of this machine's NVML; diagnose: every GPU's curve over --range).
    #[arg(long, value_name = "URL")]
    pub prometheus: Option<String>,
    /// A PromQL label selector for the DCGM series, e.g. '{job="train-42"}'.
    #[arg(long, value_name = "{LABEL=\"VALUE\",…}", requires = "prometheus")]
    pub selector: Option<String>,
    /// The label naming the host (default: the DCGM exporter's `Hostname`; the scrape's
    /// `instance` where a series has none).
    #[arg(long, value_name = "LABEL", requires = "prometheus")]
    pub host_label: Option<String>,
    /// The label naming the GPU on its host (default: the DCGM exporter's `gpu`).
    #[arg(long, value_name = "LABEL", requires = "prometheus")]
    pub gpu_label: Option<String>,
    /// With --prometheus: read back this range, ending now (90s, 15m, 1h, 2d; diagnose: 1h).
    #[arg(long, requires = "prometheus")]
    pub range: Option<String>,
    /// Seconds between the range's points (default: the range / 240, at least 1 s).
    #[arg(long, requires = "range", value_parser = super::bounds::real(0.0, super::bounds::End::Open, 86_400.0, super::bounds::End::Closed))]
    pub step_s: Option<f64>,
}

impl PromArgs {
    /// The source these flags name (`None` without --prometheus).
    pub fn source(&self) -> Result<Option<PrometheusSource>> {
        let Some(url) = &self.prometheus else { return Ok(None) };
        let mut cfg = PromConfig::new(url);
        if let Some(s) = &self.selector {
            cfg.selector = s.clone();
        }
        if let Some(l) = &self.host_label {
            cfg.host_label = l.clone();
        }
        if let Some(l) = &self.gpu_label {
            cfg.gpu_label = l.clone();
        }
        PrometheusSource::new(cfg).map(Some).map_err(anyhow::Error::msg)
    }

    /// (start, end, step) in unix seconds for `--range` (or `default`).
    fn window(&self, default: Option<&str>) -> Result<Option<(f64, f64, f64)>> {
        let Some(r) = self.range.as_deref().or(default) else { return Ok(None) };
        let span = parse_duration(r).map_err(anyhow::Error::msg)?;
        let step = match self.step_s {
            Some(s) if !(s.is_finite() && s > 0.0) => bail!("--step-s {s} must be above 0"),
            Some(s) => s,
            None => (span / 240.0).max(1.0),
        };
        if span / step > 11_000.0 {
            bail!(
                "--range {r} at --step-s {step} is more than 11,000 points (Prometheus' limit): raise --step-s"
            );
        }
        let end = unix_now();
        Ok(Some((end - span, end, step)))
    }
}

fn failed(e: impl std::fmt::Display) -> anyhow::Error {
    MonitorError::Source(e.to_string()).into()
}

/// `monitor --prometheus`: snapshots of the cluster (as NVML's, with the host), or with
/// --range every GPU's used memory over it.
pub fn monitor(
    mut src: PrometheusSource,
    p: &PromArgs,
    count: u64,
    interval_ms: u64,
    json: bool,
) -> Result<String> {
    use std::io::Write;
    use vramscope::monitor::Sampler;
    if let Some((start, end, step)) = p.window(None)? {
        let series = src.range(start, end, step).map_err(failed)?;
        return Ok(if json { range_json(&series, start, end, step)? } else { range_text(&series) });
    }
    let mut out = std::io::stdout().lock();
    for i in 0..count {
        if i > 0 {
            std::thread::sleep(std::time::Duration::from_millis(interval_ms));
        }
        let s = src.sample()?;
        let line = if json {
            serde_json::to_string(&serde_json::json!({"schema": 1, "source": "prometheus", "snapshot": s}))?
        } else {
            s.gpus
                .iter()
                .map(|g| {
                    format!(
                        "{} GPU {} {}: {:.2} / {:.2} GiB used{}",
                        g.host.as_deref().unwrap_or("?"),
                        g.index,
                        g.name,
                        g.used as f64 / vramscope::units::GIB,
                        g.total as f64 / vramscope::units::GIB,
                        g.util_pct.map_or_else(String::new, |u| format!(", {u} % busy"))
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let _ = writeln!(out, "{line}");
    }
    Ok(String::new())
}

fn range_json(series: &[Series], start: f64, end: f64, step: f64) -> Result<String> {
    let rows: Vec<serde_json::Value> = series
        .iter()
        .map(|s| {
            serde_json::json!({
                "host": s.host, "gpu": s.gpu, "name": s.name, "total": s.total,
                "points": s.points.iter().map(|(t, u)| serde_json::json!([t, u])).collect::<Vec<_>>(),
            })
        })
        .collect();
    Ok(serde_json::to_string_pretty(&serde_json::json!({
        "schema": 1, "source": "prometheus", "start": start, "end": end, "step_s": step, "series": rows,
    }))? + "\n")
}

fn range_text(series: &[Series]) -> String {
    let gib = vramscope::units::GIB;
    let mut s = String::new();
    let mut host = "";
    for x in series {
        if x.host != host {
            s += &format!("{}\n", x.host);
            host = &x.host;
        }
        let used: Vec<u64> = x.points.iter().map(|p| p.1).collect();
        let (lo, hi) = (used.iter().min().copied().unwrap_or(0), used.iter().max().copied().unwrap_or(0));
        s += &format!(
            "  GPU {} {}: now {:.2}, min {:.2}, max {:.2} of {:.2} GiB ({} points)\n",
            x.gpu,
            x.name,
            used.last().copied().unwrap_or(0) as f64 / gib,
            lo as f64 / gib,
            hi as f64 / gib,
            x.total as f64 / gib,
            used.len()
        );
    }
    s
}

/// One GPU's curve diagnosis, with where it is: its host, the exporter's own `gpu` label (the
/// index `nvidia-smi` shows on that host) and the rank a job over these GPUs gives it.
struct ClusterReport<'a> {
    host: &'a str,
    gpu_label: &'a str,
    rank: u64,
    /// Seconds between this GPU's last point and the newest point of any GPU, where it stopped
    /// reporting (its node or exporter down) more than two steps before the others.
    stopped_reporting_s: Option<f64>,
    report: TraceReport,
}

impl ClusterReport<'_> {
    /// "node-b GPU 2 (rank 6)".
    fn name(&self) -> String {
        format!("{} GPU {} (rank {})", self.host, self.gpu_label, self.rank)
    }

    /// The report's JSON with the GPU named as on its host: `gpu` is the exporter's label (a
    /// number when it is one, as DCGM's is), never the GPU's place in the cluster.
    fn to_json(&self) -> Result<serde_json::Value> {
        let mut v = serde_json::to_value(&self.report)?;
        v["host"] = self.host.into();
        v["gpu"] = self.gpu_label.parse::<u32>().map_or_else(|_| self.gpu_label.into(), Into::into);
        v["gpu_label"] = self.gpu_label.into();
        v["rank"] = self.rank.into();
        if let Some(s) = self.stopped_reporting_s {
            v["stopped_reporting_s"] = s.into();
        }
        Ok(v)
    }
}

/// A GPU of the range that could not be diagnosed, and why.
#[derive(serde::Serialize)]
struct Skipped<'a> {
    host: &'a str,
    gpu_label: &'a str,
    rank: u64,
    reason: String,
}

/// Each series' rank in launch order (torchrun's, as `cluster::map` numbers a job's ranks): the
/// hosts by name, node `n` holding the next GPUs, local rank `i` on GPU `i` of its host.
fn ranks(series: &[Series]) -> Vec<u64> {
    use vramscope::cluster::{Measured, map};
    let gpus: Vec<Measured> = series
        .iter()
        .map(|s| Measured {
            host: s.host.clone(),
            gpu: s.gpu.parse().unwrap_or(u32::MAX),
            used: 0,
            peak: 0,
            total: s.total,
        })
        .collect();
    let world = vramscope::estimate::Parallel { dp: gpus.len().max(1) as u64, ..Default::default() };
    let rows = map(&gpus, "", &world, &[]).rows;
    series
        .iter()
        .map(|s| {
            rows.iter()
                .find(|r| r.gpu.host == s.host && r.gpu.gpu == s.gpu.parse().unwrap_or(u32::MAX))
                .and_then(|r| r.rank)
                .unwrap_or(0)
        })
        .collect()
}

/// `diagnose --prometheus`: the curve diagnosis (leak / batch too large / model too large) of
/// every GPU of the cluster over --range (default 1 h). A GPU that cannot be diagnosed is named
/// with the reason, never dropped.
pub fn diagnose(src: &PrometheusSource, p: &PromArgs, json: bool) -> Result<String> {
    let Some((start, end, step)) = p.window(Some("1h"))? else { bail!("no range") };
    let series = src.range(start, end, step).map_err(failed)?;
    diagnose_series(&series, step, json)
}

/// The curve diagnosis of every GPU of `series` (points `step` seconds apart): a Prometheus
/// range, or a cluster's recording.
pub fn diagnose_series(series: &[Series], step: f64, json: bool) -> Result<String> {
    let newest = series.iter().filter_map(|s| s.points.last().map(|p| p.0)).fold(f64::MIN, f64::max);
    let ranks = ranks(series);
    let mut reports = Vec::new();
    let mut skipped = Vec::new();
    for (s, &rank) in series.iter().zip(&ranks) {
        // the GPU as its host numbers it (the samples are this series' alone)
        let gpu = s.gpu.parse().unwrap_or(0);
        let t0 = s.points.first().map_or(0.0, |p| p.0);
        let samples: Vec<Sample> =
            s.points.iter().map(|&(t, used)| Sample { t_s: t - t0, gpu, used, total: s.total }).collect();
        let r = if s.total == 0 {
            Err("its total memory is unknown (no DCGM_FI_DEV_FB_FREE series for it)".to_owned())
        } else {
            classify(&samples, Some(gpu)).map_err(|e| match e {
                TraceError::TooShort(n, _) => {
                    format!("{n} points in the range, at least 8 are needed: widen --range or lower --step-s")
                }
                e => e.to_string(),
            })
        };
        let r = match r {
            Ok(r) => r,
            Err(reason) => {
                skipped.push(Skipped { host: &s.host, gpu_label: &s.gpu, rank, reason });
                continue;
            }
        };
        let last = s.points.last().map_or(newest, |p| p.0);
        let stopped = vramscope::monitor::recording::stopped_for(last, newest, step);
        reports.push(ClusterReport {
            host: &s.host,
            gpu_label: &s.gpu,
            rank,
            stopped_reporting_s: stopped,
            report: r,
        });
    }
    if reports.is_empty() {
        let why: Vec<String> = skipped
            .iter()
            .map(|k| format!("{} GPU {} (rank {}): {}", k.host, k.gpu_label, k.rank, k.reason))
            .collect();
        bail!("no GPU could be diagnosed ({})", why.join("; "));
    }
    let worst = reports.iter().find(|r| r.report.verdict.fails()).or(reports.first());
    if json {
        let gpus = reports.iter().map(ClusterReport::to_json).collect::<Result<Vec<_>>>()?;
        return Ok(serde_json::to_string_pretty(&serde_json::json!({
            "schema": 1, "source": "prometheus", "trace": worst.map(ClusterReport::to_json).transpose()?,
            "gpus": gpus, "skipped": skipped,
        }))? + "\n");
    }
    Ok(series_text(&reports, &skipped))
}

/// The text of a cluster's diagnosis: each GPU by host, label and rank, then the summary.
fn series_text(reports: &[ClusterReport], skipped: &[Skipped]) -> String {
    let mut s = String::new();
    for r in reports {
        let t = &r.report;
        s += &format!(
            "{}: {} samples, {}, peak {:.0} % of the card: {}\n",
            r.name(),
            t.samples,
            super::diagnose::iterations(t),
            100.0 * t.peak_fraction,
            t.verdict.label()
        );
        for line in &t.advice {
            s += &format!("  {line}\n");
        }
        if let Some(x) = t.seconds_to_oom {
            s += &format!("  at this rate the card is full in {x:.0} s\n");
        }
        if let Some(x) = r.stopped_reporting_s {
            s += &format!(
                "  stopped reporting {x:.0} s before the others (its node or DCGM exporter is down?)\n"
            );
        }
    }
    for k in skipped {
        s += &format!("{} GPU {} (rank {}): not diagnosed: {}\n", k.host, k.gpu_label, k.rank, k.reason);
    }
    let named = |keep: fn(Verdict) -> bool| -> Vec<String> {
        reports
            .iter()
            .filter(|r| keep(r.report.verdict))
            .map(|r| format!("{} GPU {}", r.host, r.gpu_label))
            .collect()
    };
    let (failing, near) = (named(Verdict::fails), named(Verdict::warns));
    let stopped = reports.iter().filter(|r| r.stopped_reporting_s.is_some()).count();
    let mut tail = Vec::new();
    if stopped > 0 {
        tail.push(format!("{stopped} stopped reporting"));
    }
    if !skipped.is_empty() {
        tail.push(format!("{} not diagnosed", skipped.len()));
    }
    let tail = if tail.is_empty() { String::new() } else { format!("; {}", tail.join(", ")) };
    s += &super::diagnose::summary(reports.len(), &failing, &near, &tail);
    s
}
