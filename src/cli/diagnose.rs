//! `vramscope monitor` and `vramscope diagnose`.

use anyhow::{Context, Result, bail};
use clap::Args;

/// Flags of `monitor`.
#[derive(Args, Debug, Clone)]
pub struct MonitorArgs {
    /// Milliseconds between samples.
    #[arg(long, default_value_t = 250, value_parser = super::bounds::int(1, 3_600_000))]
    pub interval_ms: u64,
    /// Samples to take.
    #[arg(long, default_value_t = 1, value_parser = super::bounds::int(1, 1 << 32))]
    pub count: u64,
    /// One JSON object per sample (JSON lines).
    #[arg(long)]
    pub json: bool,
    /// A cluster's GPUs from Prometheus instead of this machine's (NVML).
    #[command(flatten)]
    pub cluster: super::cluster::PromArgs,
}

/// Runs `monitor`: prints as it samples; a `MonitorError` comes back for exit code 3.
pub fn run_monitor(a: &MonitorArgs) -> Result<String> {
    use std::io::Write;
    use vramscope::monitor::{NvmlSampler, Sampler};
    if a.interval_ms == 0 || a.interval_ms > 3_600_000 {
        bail!("--interval-ms {} is out of range (1 to 3600000)", a.interval_ms);
    }
    if let Some(src) = a.cluster.source()? {
        return super::cluster::monitor(src, &a.cluster, a.count, a.interval_ms, a.json);
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
    /// --format=csv -lms 100` output, or `t_s,gpu,used_bytes,total_bytes[,host]` (the Live tab's Record; with a host column each GPU is read by host).
    #[arg(long)]
    pub trace: Option<String>,
    /// `torch.cuda.memory_summary()` text, `memory_stats()` JSON or TensorFlow memory info.
    #[arg(long)]
    pub memory_summary: Option<String>,
    /// A memory snapshot pickle (`torch.cuda.memory._dump_snapshot(path)`): segments, blocks,
    /// fragmentation, and the allocation trace when history was recorded.
    #[arg(long)]
    pub snapshot: Option<String>,
    /// A second snapshot to compare the first one's trace with (only with --snapshot).
    #[arg(long)]
    pub compare: Option<String>,
    /// GPU index to examine in a trace (default: every GPU in it, each with its verdict).
    #[arg(long, value_parser = super::bounds::int32(0, 1023))]
    pub gpu_index: Option<u32>,
    /// The card's memory in MiB, for traces that do not record it (`nvidia-smi dmon`).
    #[arg(long, value_name = "MIB", value_parser = super::bounds::int(1, 1 << 20))]
    pub total_mib: Option<u64>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
    /// A cluster's GPU memory curves from Prometheus (DCGM exporter), each GPU diagnosed.
    #[command(flatten)]
    pub cluster: super::cluster::PromArgs,
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
    if a.compare.is_some() && a.snapshot.is_none() {
        bail!("--compare FILE2 compares traces of two snapshots: it needs --snapshot FILE");
    }
    let given = [
        a.oom.is_some(),
        a.trace.is_some(),
        a.memory_summary.is_some(),
        a.snapshot.is_some(),
        a.cluster.prometheus.is_some(),
    ]
    .iter()
    .filter(|x| **x)
    .count();
    if given != 1 {
        bail!(
            "diagnose needs exactly one of --oom FILE|-, --trace FILE.csv, --memory-summary FILE, --snapshot FILE.pickle, --prometheus URL (one is required)"
        );
    }
    if let Some(src) = a.cluster.source()? {
        return super::cluster::diagnose(&src, &a.cluster, a.json);
    }
    if let Some(path) = &a.snapshot {
        return snapshot_report(path, a.compare.as_deref(), a.json);
    }
    if let Some(path) = &a.memory_summary {
        return memory_summary_report(path, a.json);
    }
    if let Some(path) = &a.trace {
        return trace_report(a, path);
    }
    oom_report(a.oom.as_deref().unwrap_or("-"), a.json)
}

/// `diagnose --memory-summary`: the allocator's report read.
fn memory_summary_report(path: &str, json: bool) -> Result<String> {
    let text = read_capped(path, vramscope::diagnose::MAX_INPUT_BYTES as u64)?;
    let r = vramscope::diagnose::allocator::parse_allocator(&text).with_context(|| path.to_owned())?;
    if json {
        return Ok(serde_json::to_string_pretty(&serde_json::json!({"schema": 1, "allocator": r}))? + "\n");
    }
    let mut s = format!("{} report\n", r.source.label());
    if let Some(f) = r.fragmentation {
        s += &format!("  fragmentation (1 - allocated/reserved): {:.0} %\n", 100.0 * f);
    }
    for line in &r.advice {
        s += &format!("  {line}\n");
    }
    Ok(s)
}

/// `diagnose --trace`: each GPU's usage curve classified (a cluster's recording by host).
fn trace_report(a: &DiagnoseArgs, path: &str) -> Result<String> {
    let text = read_capped(path, 16 * vramscope::diagnose::MAX_INPUT_BYTES as u64)?;
    // a cluster's recording (`monitor --prometheus --range --json`, or the Live tab's CSV
    // with a host column): each GPU by host and index
    let recording = text.trim_start().starts_with('{');
    if recording || vramscope::monitor::recording::csv_has_host(&text) {
        if let Some(g) = a.gpu_index {
            bail!(
                "{path}: a cluster's recording (GPUs by host): --gpu-index {g} would mix every host's GPU {g}; drop --gpu-index to diagnose each GPU by host"
            );
        }
        let snaps = vramscope::monitor::recording::read(&text).map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
        let span = snaps.last().map_or(0.0, |s| s.t_s) - snaps.first().map_or(0.0, |s| s.t_s);
        let step = span / snaps.len().saturating_sub(1).max(1) as f64;
        let series = vramscope::monitor::recording::series_of(&snaps);
        return super::cluster::diagnose_series(&series, step, a.json);
    }
    let vramscope::diagnose::trace::Log { mut samples, notes } =
        vramscope::diagnose::trace::read_log(&text, vramscope::i18n::Lang::En)
            .with_context(|| path.to_owned())?;
    if let Some(t) = a.total_mib {
        if t == 0 {
            bail!("--total-mib must be above 0");
        }
        vramscope::diagnose::trace::with_total(&mut samples, t << 20);
    }
    if samples.iter().any(|x| x.total == 0) {
        bail!(
            "{path}: this log records no memory.total (nvidia-smi dmon): give the card's memory with --total-mib (e.g. 81559 for an H100 80 GB; `nvidia-smi --query-gpu=memory.total --format=csv`)"
        );
    }
    let reports = match a.gpu_index {
        Some(g) => {
            vec![vramscope::diagnose::trace::classify(&samples, Some(g)).with_context(|| path.to_owned())?]
        }
        None => vramscope::diagnose::trace::classify_all(&samples).with_context(|| path.to_owned())?,
    };
    // the GPU to look at first: the first that fails, else the first
    let worst = reports.iter().find(|r| r.verdict.fails()).or(reports.first());
    if a.json {
        return Ok(serde_json::to_string_pretty(
            &serde_json::json!({"schema": 1, "trace": worst, "gpus": reports, "notes": notes}),
        )? + "\n");
    }
    let mut s: String = notes.iter().map(|n| format!("note: {path}: {n}\n")).collect();
    for r in &reports {
        s += &format!(
            "GPU {}: {} samples, {}, peak {:.0} % of the card: {}\n",
            r.gpu,
            r.samples,
            iterations(r),
            100.0 * r.peak_fraction,
            r.verdict.label()
        );
        for line in &r.advice {
            s += &format!("  {line}\n");
        }
        if let Some(t) = r.seconds_to_oom {
            s += &format!("  at this rate the card is full in {t:.0} s\n");
        }
    }
    if reports.len() > 1 {
        let named = |keep: fn(vramscope::diagnose::trace::Verdict) -> bool| -> Vec<String> {
            reports.iter().filter(|r| keep(r.verdict)).map(|r| format!("GPU {}", r.gpu)).collect()
        };
        s += &summary(reports.len(), &named(|v| v.fails()), &named(|v| v.warns()), "");
    }
    Ok(s)
}

/// A curve's iterations in words: "30 iterations, one every 10.0 s", or "no iterations found".
pub(super) fn iterations(r: &vramscope::diagnose::trace::TraceReport) -> String {
    match (r.iterations, r.period_s) {
        (0, _) => "no iterations found".to_owned(),
        (n, Some(p)) => format!("{}, one every {p:.1} s", vramscope::units::count(n as u64, "iteration")),
        (n, None) => vramscope::units::count(n as u64, "iteration"),
    }
}

/// The last line of a multi-GPU diagnosis: how many of `n` GPUs fail, which sit near the card
/// all along, and `tail` (what else to say, from "; ").
pub(super) fn summary(n: usize, failing: &[String], near: &[String], tail: &str) -> String {
    let near_line = if near.is_empty() {
        String::new()
    } else {
        format!("near capacity all along: {} of {n} GPUs ({})", near.len(), near.join(", "))
    };
    match (failing.is_empty(), near.is_empty(), tail.is_empty()) {
        (true, true, true) => format!("all {n} GPUs healthy\n"),
        (true, true, false) => format!("no curve fails on the {n} GPUs diagnosed{tail}\n"),
        (true, false, _) => format!("no curve fails; {near_line}{tail}\n"),
        (false, true, _) => format!("fails: {} of {n} GPUs ({}){tail}\n", failing.len(), failing.join(", ")),
        (false, false, _) => {
            format!("fails: {} of {n} GPUs ({}); {near_line}{tail}\n", failing.len(), failing.join(", "))
        }
    }
}

/// `diagnose --oom`: the out-of-memory message explained.
fn oom_report(path: &str, json: bool) -> Result<String> {
    let text = read_capped(path, vramscope::diagnose::MAX_INPUT_BYTES as u64 + 1)?;
    let r = vramscope::diagnose::explain_oom(&text).with_context(|| path.to_owned())?;
    if json {
        return Ok(serde_json::to_string_pretty(&serde_json::json!({"schema": 1, "oom": r}))? + "\n");
    }
    let rocm = if r.numbers.backend.as_deref() == Some("HIP") { " on ROCm (HIP)" } else { "" };
    let mut s = format!("{}{rocm} out-of-memory message\n", r.source.label());
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
    if !s.ends_with('\n') {
        s.push('\n');
    }
    Ok(s)
}

fn read_pickle(path: &str) -> Result<Vec<u8>> {
    use std::io::Read;
    let limit = vramscope::diagnose::snapshot::MAX_SNAPSHOT_BYTES as u64;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .with_context(|| format!("opening {path}"))?
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {path}"))?;
    Ok(bytes)
}

fn gib(b: u64) -> String {
    format!("{:.2} GiB", b as f64 / vramscope::units::GIB)
}

fn mib(b: i64) -> String {
    format!("{:+.1} MiB", b as f64 / (1u64 << 20) as f64)
}

/// `diagnose --snapshot FILE [--compare FILE2]`.
fn snapshot_report(path: &str, compare: Option<&str>, json: bool) -> Result<String> {
    use vramscope::diagnose::memtrace;
    let (r, t) = memtrace::read_snapshot_and_trace(&read_pickle(path)?).with_context(|| path.to_owned())?;
    let other = match compare {
        Some(p2) => Some(memtrace::read_trace(&read_pickle(p2)?).with_context(|| p2.to_owned())?),
        None => None,
    };
    let cmp = other.as_ref().map(|b| memtrace::compare(&t, b, 512));
    let summary = (t.entries > 0).then(|| t.summary());
    if json {
        let mut v = serde_json::json!({"schema": 1, "snapshot": r, "trace": summary});
        if let (Some(c), Some(b)) = (&cmp, &other) {
            v["compare"] = serde_json::to_value(c)?;
            v["compare_trace"] = serde_json::to_value(b.summary())?;
        }
        return Ok(serde_json::to_string_pretty(&v)? + "\n");
    }
    let mut s = format!(
        "{} segments: {} reserved, {} allocated; largest free block {} ({:.0} % of free memory is in smaller holes)\n",
        r.segments.len(),
        gib(r.reserved),
        gib(r.allocated),
        gib(r.largest_free_block),
        100.0 * r.fragmentation
    );
    for seg in r.segments.iter().take(10) {
        s += &format!(
            "  {:<5} segment {}: {} allocated, {} blocks\n",
            seg.pool,
            gib(seg.total),
            gib(seg.allocated),
            seg.blocks.len()
        );
    }
    match &summary {
        None => s += "no allocation trace (record one with torch.cuda.memory._record_memory_history())\n",
        Some(x) => {
            s += &format!(
                "trace (device {}): {} entries, {} events; peak allocated {} at event {}{}{}; peak reserved {}; {} from before the trace\n",
                x.device,
                x.entries,
                x.events,
                gib(x.peak_allocated),
                x.peak_event,
                x.peak_phase.map(|p| format!(" ({})", p.label())).unwrap_or_default(),
                x.peak_frame.as_deref().map(|f| format!(" in {f}")).unwrap_or_default(),
                gib(x.peak_reserved),
                gib(x.baseline_allocated),
            );
            let how = match x.step_source {
                memtrace::StepSource::Annotations => "from annotations",
                memtrace::StepSource::Pattern => "from the allocation pattern",
                memtrace::StepSource::None => "",
            };
            s += &format!("  {} steps {how}\n", x.steps.len());
            for (k, st) in x.steps.iter().enumerate().take(20) {
                s += &format!(
                    "    step {k}: events {}..{}, peak {} at event {}\n",
                    st.events.start,
                    st.events.end,
                    gib(st.bytes),
                    st.event
                );
            }
            for p in &x.phase_peaks {
                s += &format!("  {} peak {} at event {}\n", p.phase.label(), gib(p.bytes), p.event);
            }
            for o in &x.ooms {
                s += &format!(
                    "  OOM after event {}: {} requested, {} free on the device\n",
                    o.event.saturating_sub(1),
                    gib(o.requested),
                    gib(o.device_free)
                );
            }
        }
    }
    if let Some(c) = &cmp {
        s += &format!(
            "compare: peak allocated {} vs {} ({}), peak reserved {} vs {}; over one step: {} vs {}\n",
            gib(c.peak_a),
            gib(c.peak_b),
            mib(c.peak_delta),
            gib(c.peak_reserved_a),
            gib(c.peak_reserved_b),
            gib(c.step_peak_a),
            gib(c.step_peak_b),
        );
        if let Some(d) = &c.most_different {
            let at = |e: usize, ph: Option<memtrace::TracePhase>, f: &Option<String>| {
                format!(
                    "event {e}{}{}",
                    ph.map(|p| format!(" ({})", p.label())).unwrap_or_default(),
                    f.as_deref().map(|f| format!(" in {f}")).unwrap_or_default()
                )
            };
            s += &format!(
                "  differs most {} through the step: {} vs {} ({}) — {} / {}\n",
                format_args!("{:.0} %", 100.0 * d.sample as f64 / c.diff.len().max(1) as f64),
                gib(d.allocated_a),
                gib(d.allocated_b),
                mib(d.delta),
                at(d.event_a, d.phase_a, &d.frame_a),
                at(d.event_b, d.phase_b, &d.frame_b),
            );
        }
    }
    Ok(s)
}
