//! Memory-usage curves: reading `nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total
//! --format=csv` logs (or vramscope's own `t_s,gpu,used_bytes,total_bytes` CSV) and telling apart
//! a model too large for the card, a batch too large, a leak, and a healthy run.

use serde::Serialize;

/// One sample.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Sample {
    /// Seconds since the first sample.
    pub t_s: f64,
    /// GPU index.
    pub gpu: u32,
    /// Used memory, bytes.
    pub used: u64,
    /// Total memory, bytes.
    pub total: u64,
}

/// Why a trace could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// A line that is neither a header nor a sample.
    #[error("line {line}: {msg}")]
    Line {
        /// 1-based line.
        line: usize,
        /// What is wrong.
        msg: String,
    },
    /// Too few samples to say anything.
    #[error("{0} samples of GPU {1}: at least 8 are needed")]
    TooShort(usize, u32),
    /// The GPU asked for is not in the trace.
    #[error("GPU {0} is not in the trace (it has GPU {1})")]
    NoSuchGpu(u32, String),
}

fn parse_mib(field: &str) -> Option<u64> {
    let f = field.trim();
    let num = f.trim_end_matches("MiB").trim();
    num.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0 && *v < 1e12)
        .map(|v| (v * 1048576.0) as u64)
}

/// "2026/11/29 10:00:00.123" → seconds of the day (traces spanning midnight wrap forward).
fn parse_clock(field: &str) -> Option<f64> {
    let time = field.split_whitespace().last()?;
    let mut parts = time.split(':');
    let h: f64 = parts.next()?.parse().ok()?;
    let m: f64 = parts.next()?.parse().ok()?;
    let s: f64 = parts.next()?.parse().ok()?;
    Some(h * 3600.0 + m * 60.0 + s)
}

/// Parses a trace: `nvidia-smi --query-gpu=… --format=csv` output (its header names the columns,
/// in any order, extra columns ignored; `noheader,nounits` reads as timestamp, index, used,
/// total), vramscope's own `t_s,gpu,used_bytes,total_bytes`, `nvidia-smi dmon -s m` output
/// (which has no total: samples carry `total = 0`, see [`with_total`]) and the boxed table that
/// `nvidia-smi -l 1` prints. Lines that are empty or start with `#` are skipped in CSV.
pub fn parse(text: &str) -> Result<Vec<Sample>, TraceError> {
    let text = &text[..floor_boundary(text, super::MAX_INPUT_BYTES * 16)];
    if text.lines().any(|l| l.trim_start().starts_with('|') && l.contains("MiB /")) {
        return parse_table(text);
    }
    if text.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with('#') && l.split_whitespace().any(|w| w.eq_ignore_ascii_case("fb"))
    }) {
        return parse_dmon(text);
    }
    parse_csv(text)
}

fn floor_boundary(text: &str, at: usize) -> usize {
    let mut end = text.len().min(at);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// Fills the card size of samples that have none (`nvidia-smi dmon` logs), bytes.
pub fn with_total(samples: &mut [Sample], total: u64) {
    for s in samples.iter_mut().filter(|s| s.total == 0) {
        s.total = total;
    }
}

/// Turns clock readings into seconds since the first, wrapping forward over midnight.
struct Clock {
    t0: Option<f64>,
    day: f64,
    last: f64,
}

impl Clock {
    const fn new() -> Self {
        Self { t0: None, day: 0.0, last: 0.0 }
    }

    fn at(&mut self, clock: f64) -> f64 {
        if clock + self.day < self.last - 43200.0 {
            self.day += 86400.0;
        }
        self.last = clock + self.day;
        self.last - *self.t0.get_or_insert(self.last)
    }
}

/// Column positions of a CSV trace.
#[derive(Clone, Copy)]
struct Columns {
    time: usize,
    gpu: usize,
    used: Option<usize>,
    total: Option<usize>,
    free: Option<usize>,
    /// vramscope's own format: seconds and bytes.
    raw: bool,
}

impl Columns {
    const POSITIONAL: Self = Self { time: 0, gpu: 1, used: Some(2), total: Some(3), free: None, raw: false };

    /// From a header line, `None` when it names no timestamp or index.
    fn from_header(fields: &[&str]) -> Option<Self> {
        let find = |names: &[&str]| {
            fields.iter().position(|f| {
                let f = f.trim().to_ascii_lowercase();
                let name = f.split_whitespace().next().unwrap_or("");
                names.contains(&name)
            })
        };
        let raw = find(&["t_s"]).is_some();
        Some(Self {
            time: find(&["timestamp", "t_s"])?,
            gpu: find(&["index", "gpu"])?,
            used: find(&["memory.used", "used_bytes"]),
            total: find(&["memory.total", "total_bytes"]),
            free: find(&["memory.free", "free_bytes"]),
            raw,
        })
    }
}

fn parse_csv(text: &str) -> Result<Vec<Sample>, TraceError> {
    let mut out = Vec::new();
    let mut clock = Clock::new();
    let mut cols: Option<Columns> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split(',').collect();
        let lower = line.to_ascii_lowercase();
        let bad = |msg: &str| TraceError::Line { line: i + 1, msg: msg.to_owned() };
        if lower.starts_with("timestamp") || lower.starts_with("t_s") || lower.contains("memory.used") {
            cols = Some(Columns::from_header(&fields).ok_or_else(|| {
                bad("the header names no timestamp and index columns (nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total)")
            })?);
            continue;
        }
        let c = cols.unwrap_or(Columns {
            raw: !fields[0].contains(':') && !line.contains("MiB"),
            ..Columns::POSITIONAL
        });
        let need =
            [Some(c.time), Some(c.gpu), c.used, c.total, c.free].into_iter().flatten().max().unwrap_or(0);
        if fields.len() <= need {
            return Err(bad(
                "expected timestamp, index, memory.used, memory.total (nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total --format=csv)",
            ));
        }
        let gpu: u32 = fields[c.gpu].trim().parse().map_err(|_| bad("GPU index is not a number"))?;
        let field = |k: Option<usize>| k.map(|k| fields[k]);
        let sample = if c.raw {
            let ts: f64 = fields[c.time].trim().parse().map_err(|_| bad("t_s is not a number"))?;
            let num = |k: Option<usize>, what: &str| -> Result<Option<u64>, TraceError> {
                field(k)
                    .map(|f| f.trim().parse::<u64>().map_err(|_| bad(&format!("{what} is not a number"))))
                    .transpose()
            };
            let (used, total, free) =
                (num(c.used, "used_bytes")?, num(c.total, "total_bytes")?, num(c.free, "free_bytes")?);
            let total = total.ok_or_else(|| bad("no total_bytes column"))?;
            let used =
                used.or(free.map(|f| total.saturating_sub(f))).ok_or_else(|| bad("no used_bytes column"))?;
            Sample { t_s: clock.at(ts), gpu, used, total }
        } else {
            let t = parse_clock(fields[c.time]).ok_or_else(|| bad("timestamp not understood"))?;
            let mib = |k: Option<usize>, what: &str| -> Result<Option<u64>, TraceError> {
                field(k)
                    .map(|f| parse_mib(f).ok_or_else(|| bad(&format!("{what} not understood"))))
                    .transpose()
            };
            let (used, total, free) =
                (mib(c.used, "memory.used")?, mib(c.total, "memory.total")?, mib(c.free, "memory.free")?);
            let total = total.ok_or_else(|| bad("no memory.total column"))?;
            let used =
                used.or(free.map(|f| total.saturating_sub(f))).ok_or_else(|| bad("no memory.used column"))?;
            Sample { t_s: clock.at(t), gpu, used, total }
        };
        out.push(sample);
    }
    Ok(out)
}

/// `nvidia-smi dmon -s m [-o T|DT]`: whitespace columns named by the `# gpu fb …` header, `fb`
/// in MiB, one line per GPU per interval (1 s unless a time column says otherwise).
fn parse_dmon(text: &str) -> Result<Vec<Sample>, TraceError> {
    let mut out = Vec::new();
    let mut clock = Clock::new();
    let mut cols: Option<(usize, usize, Option<usize>)> = None;
    let mut tick = 0.0f64;
    let mut first_gpu: Option<u32> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let words: Vec<&str> = line.trim_start_matches('#').split_whitespace().collect();
        if line.starts_with('#') {
            let pos = |name: &str| words.iter().position(|w| w.eq_ignore_ascii_case(name));
            if let (Some(g), Some(fb)) = (pos("gpu"), pos("fb")) {
                cols = Some((g, fb, pos("time")));
            }
            continue;
        }
        let bad = |msg: &str| TraceError::Line { line: i + 1, msg: msg.to_owned() };
        let (g, fb, time) = cols.ok_or_else(|| bad("nvidia-smi dmon output needs its '# gpu fb' header"))?;
        if words.len() <= g.max(fb) {
            return Err(bad("fewer columns than the '# gpu fb' header names"));
        }
        let gpu: u32 = words[g].parse().map_err(|_| bad("GPU index is not a number"))?;
        let used = parse_mib(words[fb]).ok_or_else(|| bad("fb (MiB used) not understood"))?;
        let t_s = match time.and_then(|k| words.get(k)).and_then(|w| parse_clock(w)) {
            Some(t) => clock.at(t),
            None => {
                // no time column: one interval each time the first GPU comes round again
                if first_gpu == Some(gpu) {
                    tick += 1.0;
                }
                first_gpu.get_or_insert(gpu);
                tick
            }
        };
        out.push(Sample { t_s, gpu, used, total: 0 });
    }
    Ok(out)
}

/// The boxed table of `nvidia-smi` (`nvidia-smi -l 1` logs): each GPU's row pair gives its index
/// and `used MiB / total MiB`; a date line (`Tue May 14 10:00:00 2024`) times the block.
fn parse_table(text: &str) -> Result<Vec<Sample>, TraceError> {
    let mut out = Vec::new();
    let mut clock = Clock::new();
    let mut t_s = 0.0f64;
    let mut timed = false;
    let mut blocks = 0u64;
    let mut gpu: Option<u32> = None;
    let mut seen_in_block: Vec<u32> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if !line.starts_with('|') && !line.starts_with('+') {
            // a date line ("Tue May 14 10:00:00 2024") starts a block
            if line.matches(':').count() >= 2
                && let Some(t) =
                    line.split_whitespace().find(|w| w.matches(':').count() == 2).and_then(parse_clock)
            {
                t_s = clock.at(t);
                timed = true;
                seen_in_block.clear();
            }
            continue;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let first = cells.first().copied().unwrap_or("");
        // "0  NVIDIA A100-SXM4-80GB  On": the GPU row
        if let Some(idx) = first.split_whitespace().next().and_then(|w| w.parse::<u32>().ok())
            && first.split_whitespace().count() >= 2
            && !first.contains("MiB")
        {
            gpu = Some(idx);
            continue;
        }
        if let Some(cell) = cells.iter().find(|c| c.contains("MiB /"))
            && let Some(g) = gpu.take()
        {
            let bad = |msg: &str| TraceError::Line { line: i + 1, msg: msg.to_owned() };
            let (u, t) = cell.split_once('/').ok_or_else(|| bad("memory usage not understood"))?;
            let used = parse_mib(u).ok_or_else(|| bad("memory used not understood"))?;
            let total = parse_mib(t).ok_or_else(|| bad("memory total not understood"))?;
            if !timed && (seen_in_block.contains(&g) || seen_in_block.is_empty()) {
                // untimed tables: a new block when a GPU comes round again (one per second)
                if seen_in_block.contains(&g) {
                    seen_in_block.clear();
                }
                if seen_in_block.is_empty() {
                    t_s = blocks as f64;
                    blocks += 1;
                }
            }
            seen_in_block.push(g);
            out.push(Sample { t_s, gpu: g, used, total });
        }
    }
    Ok(out)
}

/// The verdict on a curve.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Usage pinned near capacity from the start: the model (states) alone nearly fill the card.
    ModelTooLarge,
    /// Periodic peaks that reach capacity: the per-step activations (batch) are too large.
    BatchTooLarge,
    /// Usage keeps growing from iteration to iteration.
    Leak,
    /// None of the above.
    Healthy,
    /// Healthy until its process ended together with another GPU's that ran out of memory
    /// (the job was killed on every rank).
    StoppedWithJob,
}

impl Verdict {
    /// Name for display.
    pub const fn label(self) -> &'static str {
        match self {
            Self::ModelTooLarge => "model too large for the card",
            Self::BatchTooLarge => "batch too large (the step's peaks reach the card)",
            Self::Leak => "memory leak",
            Self::Healthy => "healthy",
            Self::StoppedWithJob => "stopped with the job (another GPU ran out of memory)",
        }
    }

    /// Does the verdict say the job fails (or will)?
    pub const fn fails(self) -> bool {
        !matches!(self, Self::Healthy | Self::StoppedWithJob)
    }
}

/// A diagnosed curve.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceReport {
    /// GPU examined.
    pub gpu: u32,
    /// Samples of it.
    pub samples: usize,
    /// Verdict.
    pub verdict: Verdict,
    /// Iterations (peaks) detected.
    pub iterations: usize,
    /// Growth of the per-window minimum, MiB per iteration (leaks), robust (Theil–Sen).
    pub growth_mib_per_iteration: f64,
    /// Growth, MiB per second.
    pub growth_mib_per_s: f64,
    /// Seconds until the card is full at that rate (leaks).
    pub seconds_to_oom: Option<f64>,
    /// Highest use as a fraction of capacity.
    pub peak_fraction: f64,
    /// Sample index ranges that show the evidence (to highlight on a plot).
    pub evidence: Vec<(usize, usize)>,
    /// What it means and what to do.
    pub advice: Vec<String>,
    /// When the GPU's process ended (usage fell to the driver's own and stayed there), seconds.
    pub ended_at_s: Option<f64>,
}

/// Median of a slice (sorted copy).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Theil–Sen slope of (x, y) points: the median of pairwise slopes (robust to spikes).
pub fn theil_sen(points: &[(f64, f64)]) -> f64 {
    let mut slopes = Vec::with_capacity(points.len() * points.len() / 2);
    for (i, a) in points.iter().enumerate() {
        for b in &points[i + 1..] {
            if (b.0 - a.0).abs() > 1e-12 {
                slopes.push((b.1 - a.1) / (b.0 - a.0));
            }
        }
    }
    median(&mut slopes)
}

/// Classifies every GPU of the trace, in the order they first appear (a GPU with too few samples
/// is left out; an error only when none has enough).
pub fn classify_all(samples: &[Sample]) -> Result<Vec<TraceReport>, TraceError> {
    let mut gpus: Vec<u32> = Vec::new();
    for x in samples {
        if !gpus.contains(&x.gpu) {
            gpus.push(x.gpu);
        }
    }
    let mut out = Vec::new();
    let mut first_err = None;
    for g in gpus {
        match classify(samples, Some(g)) {
            Ok(r) => out.push(r),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    // a GPU whose process ended when another ran out of memory was killed with the job
    let died: Vec<(u32, f64)> = out
        .iter()
        .filter(|r| r.verdict == Verdict::BatchTooLarge)
        .filter_map(|r| r.ended_at_s.map(|t| (r.gpu, t)))
        .collect();
    for r in out.iter_mut().filter(|r| r.verdict == Verdict::Healthy) {
        let Some(t) = r.ended_at_s else { continue };
        if let Some((g, at)) = died.iter().find(|(_, at)| (t - at).abs() <= 5.0) {
            r.verdict = Verdict::StoppedWithJob;
            r.advice.insert(
                0,
                format!("Its process ended at {t:.1} s, when GPU {g} ran out of memory ({at:.1} s): the job stopped on every rank."),
            );
        }
    }
    match (out.is_empty(), first_err) {
        (true, Some(e)) => Err(e),
        (true, None) => Err(TraceError::TooShort(0, 0)),
        _ => Ok(out),
    }
}

/// Classifies the curve of one GPU (the first one in the trace when `gpu` is `None`).
pub fn classify(samples: &[Sample], gpu: Option<u32>) -> Result<TraceReport, TraceError> {
    let gpu = gpu.or_else(|| samples.first().map(|s| s.gpu)).unwrap_or(0);
    let s: Vec<&Sample> = samples.iter().filter(|x| x.gpu == gpu).collect();
    if s.is_empty() && !samples.is_empty() {
        let mut gpus: Vec<u32> = samples.iter().map(|x| x.gpu).collect();
        gpus.sort_unstable();
        gpus.dedup();
        return Err(TraceError::NoSuchGpu(
            gpu,
            gpus.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
        ));
    }
    if s.len() < 8 {
        return Err(TraceError::TooShort(s.len(), gpu));
    }
    let cap = s.iter().map(|x| x.total).max().unwrap_or(1).max(1) as f64;
    let frac: Vec<f64> = s.iter().map(|x| x.used as f64 / cap).collect();
    let peak_fraction = frac.iter().copied().fold(0.0, f64::max);
    // iterations: local maxima that rise at least 3 % of the card above the preceding trough
    let mut peaks = Vec::new();
    let mut trough = frac[0];
    let mut rising_from = 0;
    for i in 1..frac.len() {
        if frac[i] < trough {
            trough = frac[i];
            rising_from = i;
        }
        let is_max = frac[i] >= frac[i - 1] && (i + 1 == frac.len() || frac[i] > frac[i + 1]);
        if is_max && frac[i] - trough > 0.03 {
            peaks.push((rising_from, i));
            trough = frac[i];
        }
    }
    let iterations = peaks.len();
    // baseline growth: per-window minima over time, robust slope
    let windows = 12.min(s.len() / 2).max(2);
    let per = s.len() / windows;
    let mins: Vec<(f64, f64)> = (0..windows)
        .map(|w| {
            let chunk = &s[w * per..((w + 1) * per).min(s.len())];
            chunk.iter().min_by_key(|x| x.used).map_or((0.0, 0.0), |x| (x.t_s, x.used as f64))
        })
        .collect();
    let slope_b_per_s = theil_sen(&mins);
    let duration = s.last().map_or(0.0, |x| x.t_s).max(1e-9);
    let growth_mib_per_s = slope_b_per_s / 1048576.0;
    let growth_mib_per_iteration = if iterations > 0 {
        growth_mib_per_s * duration / iterations as f64
    } else {
        growth_mib_per_s * duration / windows as f64
    };
    let grew = slope_b_per_s * duration / cap; // fraction of the card over the trace
    let early = &frac[..(frac.len() / 10).max(1)];
    let early_min = early.iter().copied().fold(f64::INFINITY, f64::min);
    let near_cap_peaks: Vec<(usize, usize)> =
        peaks.iter().copied().filter(|(_, p)| frac[*p] >= 0.95).collect();
    // the process disappeared after reaching the card: the last samples are back near zero
    // (only the driver's own use) and stay there — the job died, most likely of an OOM
    let top = frac.iter().copied().enumerate().fold((0, 0.0), |m, (i, f)| if f >= m.1 { (i, f) } else { m });
    let tail_from = top.0 + 1;
    let died = top.1 >= 0.95
        && tail_from < frac.len()
        && frac[tail_from..].iter().all(|f| *f < 0.1)
        && frac.len() - tail_from >= 2;
    // a flat curve pinned at the card (one "iteration" or none): once the first rise is over,
    // nearly every sample sits at 97 % or more
    let settled = frac.iter().position(|f| *f >= 0.5).unwrap_or(frac.len());
    let pinned = frac.len() - settled >= 8 && {
        let after = &frac[settled..];
        after.iter().filter(|f| **f >= 0.97).count() * 10 >= after.len() * 9
    };
    let mut advice = Vec::new();
    let last = s.last().map_or(0.0, |x| x.used as f64);
    // a leak grows window after window; one step up (a plateau the caching allocator settles on)
    // is not one: at least half the windows' minima must rise, each by 0.05 % of the card
    let rises = mins.windows(2).filter(|w| w[1].1 > w[0].1 + cap * 5e-4).count();
    let (verdict, evidence, seconds_to_oom) = if grew > 0.02
        && mins.windows(2).filter(|w| w[1].1 >= w[0].1).count() * 3 >= (windows - 1) * 2
        && rises * 2 >= windows - 1
    {
        let left = (cap - last).max(0.0);
        let tto = if slope_b_per_s > 0.0 { Some(left / slope_b_per_s) } else { None };
        advice.push(format!(
            "Memory grows by about {growth_mib_per_iteration:.1} MiB per iteration ({growth_mib_per_s:.2} MiB/s) and does not come back: something keeps tensors alive across steps."
        ));
        advice.push("usual causes: accumulating `loss` (not `loss.item()`) for logging, keeping outputs or hidden states in a list, a growing cache (KV cache, `torch.compile` recompiles, dataloader pinning); `torch.cuda.memory._record_memory_history()` then `_dump_snapshot()` shows which allocations stay".into());
        (Verdict::Leak, vec![(0, s.len() - 1)], tto)
    } else if died {
        advice.push(format!(
            "Usage reached {:.0} % of the card at sample {} and then dropped to nothing: the process ended there, the way a step that runs out of memory ends it.",
            100.0 * top.1,
            top.0
        ));
        advice.push("lower the micro-batch or sequence length (keep the global batch with gradient accumulation), enable gradient checkpointing, or use SDPA/flash attention — `vramscope estimate` shows what each saves".into());
        (Verdict::BatchTooLarge, vec![(top.0.saturating_sub(1), frac.len() - 1)], None)
    } else if early_min >= 0.90 || pinned {
        // the level it sits at: the median once the load ramp is over
        let mut after: Vec<f64> = frac[settled..].to_vec();
        let level = if after.is_empty() { early_min } else { median(&mut after) };
        advice.push(format!(
            "Usage is pinned at about {:.0} % of the card from the start, with no room for a step to breathe: the model states (weights, gradients, optimizer) nearly fill it before any batch runs.",
            100.0 * level
        ));
        advice.push("shrink the states: bf16 or 8-bit optimizer, LoRA/QLoRA, ZeRO-2/3 or FSDP across GPUs, or a larger card — `vramscope plan --search` lists layouts that fit".into());
        (Verdict::ModelTooLarge, vec![(settled.min(early.len() - 1), s.len() - 1)], None)
    } else if near_cap_peaks.len() >= 2 {
        advice.push(format!(
            "{} of {iterations} iterations peak at 95 % of the card or more and fall back between steps: activations of each step are what fills it.",
            near_cap_peaks.len()
        ));
        advice.push("lower the micro-batch or sequence length (keep the global batch with gradient accumulation), enable gradient checkpointing, or use SDPA/flash attention — `vramscope estimate` shows what each saves".into());
        (Verdict::BatchTooLarge, near_cap_peaks, None)
    } else {
        advice.push(format!("Peak {:.0} % of the card, no growth across iterations.", 100.0 * peak_fraction));
        (Verdict::Healthy, Vec::new(), None)
    };
    // when the process ended: usage above 30 % of the card, then under 10 % to the end
    let ended_at_s = frac
        .iter()
        .rposition(|f| *f >= 0.3)
        .filter(|&i| i + 2 < frac.len() && frac[i + 1..].iter().all(|f| *f < 0.1))
        .map(|i| s[i + 1].t_s);
    Ok(TraceReport {
        ended_at_s,
        gpu,
        samples: s.len(),
        verdict,
        iterations,
        growth_mib_per_iteration,
        growth_mib_per_s,
        seconds_to_oom,
        peak_fraction,
        evidence,
        advice,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn trace(f: impl Fn(usize) -> u64, n: usize) -> Vec<Sample> {
        (0..n).map(|i| Sample { t_s: i as f64 * 0.1, gpu: 0, used: f(i), total: 80 * GIB }).collect()
    }

    /// A training loop: states `base`, each 10-sample step rises by `act` and falls back.
    fn steps(base: u64, act: u64, leak_per_step: u64) -> impl Fn(usize) -> u64 {
        move |i| {
            let step = (i / 10) as u64;
            let phase = (i % 10) as u64;
            base + leak_per_step * step + act * phase.min(10 - phase) / 5
        }
    }

    #[test]
    fn the_four_verdicts() {
        let healthy = classify(&trace(steps(30 * GIB, 20 * GIB, 0), 300), None).unwrap();
        assert_eq!(healthy.verdict, Verdict::Healthy, "{healthy:?}");
        assert!(healthy.iterations >= 25);
        let batch = classify(&trace(steps(40 * GIB, 37 * GIB, 0), 300), None).unwrap();
        assert_eq!(batch.verdict, Verdict::BatchTooLarge, "{batch:?}");
        assert!(!batch.evidence.is_empty());
        let model = classify(&trace(|i| 77 * GIB + (i as u64 % 3) * (GIB / 4), 300), None).unwrap();
        assert_eq!(model.verdict, Verdict::ModelTooLarge, "{model:?}");
        let leak = classify(&trace(steps(20 * GIB, 10 * GIB, 100 << 20), 300), None).unwrap();
        assert_eq!(leak.verdict, Verdict::Leak, "{leak:?}");
        assert!((leak.growth_mib_per_iteration - 100.0).abs() < 15.0, "{}", leak.growth_mib_per_iteration);
        assert!(leak.seconds_to_oom.is_some_and(|t| t > 0.0));
    }

    #[test]
    fn a_job_that_dies_at_the_card_ran_out_of_memory() {
        let cap = 80 * GIB;
        // two steps rising to 60 %, the third to 99 %, then the process is gone
        let used = |i: usize| match i {
            0..=9 => 20 * GIB + (i as u64 % 5) * 8 * GIB,
            10..=14 => 20 * GIB + (i as u64 - 9) * 16 * GIB - GIB,
            _ => 300 << 20,
        };
        let samples: Vec<Sample> =
            (0..24).map(|i| Sample { t_s: i as f64, gpu: 0, used: used(i).min(cap), total: cap }).collect();
        let r = classify(&samples, None).unwrap();
        assert_eq!(r.verdict, Verdict::BatchTooLarge, "{r:?}");
        assert!(r.advice[0].contains("ended"), "{:?}", r.advice);
    }

    #[test]
    fn a_flat_curve_at_the_card_is_a_model_too_large() {
        let cap = 24 * GIB;
        // loading for three samples, then pinned at 98 % with a wobble that reads as one peak
        let samples: Vec<Sample> = (0..40)
            .map(|i| {
                let used = match i {
                    0 => GIB,
                    1 => 8 * GIB,
                    2 => 16 * GIB,
                    20 => cap - (200 << 20),
                    _ => cap - (480 << 20),
                };
                Sample { t_s: i as f64, gpu: 0, used, total: cap }
            })
            .collect();
        let r = classify(&samples, None).unwrap();
        assert_eq!(r.verdict, Verdict::ModelTooLarge, "{r:?}");
    }

    #[test]
    fn every_gpu_gets_its_own_verdict() {
        let cap = 80 * GIB;
        let mut samples = Vec::new();
        for i in 0..40 {
            for g in 0..4u32 {
                let base = 30 * GIB + (i as u64 % 4) * 6 * GIB;
                let used = if g == 2 { (base + i as u64 * GIB).min(cap) } else { base };
                samples.push(Sample { t_s: i as f64, gpu: g, used, total: cap });
            }
        }
        let all = classify_all(&samples).unwrap();
        assert_eq!(all.iter().map(|r| r.gpu).collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!(all.iter().filter(|r| r.verdict.fails()).map(|r| r.gpu).collect::<Vec<_>>(), [2]);
    }

    #[test]
    fn reads_nvidia_smi_csv() {
        let text = "timestamp, index, memory.used [MiB], memory.total [MiB]\n\
                    2026/11/29 23:59:59.900, 0, 1000 MiB, 81559 MiB\n\
                    2026/11/29 23:59:59.950, 1, 10 MiB, 81559 MiB\n\
                    2026/11/30 00:00:00.000, 0, 1100 MiB, 81559 MiB\n";
        let s = parse(text).unwrap();
        assert_eq!(s.len(), 3);
        assert!((s[2].t_s - 0.1).abs() < 1e-6, "midnight wrap: {}", s[2].t_s);
        assert_eq!(s[0].used, 1000 << 20);
        let err = parse("timestamp, index\n2026/11/29 10:00:00, zero, 1 MiB, 2 MiB").unwrap_err();
        assert!(err.to_string().starts_with("line 2"), "{err}");
        assert_eq!(classify(&s, Some(0)).unwrap_err(), TraceError::TooShort(2, 0));
    }

    #[test]
    fn theil_sen_ignores_a_spike() {
        let pts: Vec<(f64, f64)> =
            (0..20).map(|i| (i as f64, 2.0 * i as f64 + if i == 7 { 500.0 } else { 0.0 })).collect();
        assert!((theil_sen(&pts) - 2.0).abs() < 1e-9);
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(s in "[0-9a-zA-Z:/., \\n-]{0,500}") {
            if let Ok(samples) = parse(&s) {
                let _ = classify(&samples, None);
            }
        }
    }
}
