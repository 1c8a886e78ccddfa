//! Reading usage logs: nvidia-smi CSV (header-mapped), vramscope's CSV, `nvidia-smi dmon` and
//! the boxed `nvidia-smi` table.

use super::{Sample, TraceError};
use crate::i18n::Lang;
use crate::text;

pub(super) fn parse_mib(field: &str) -> Option<u64> {
    let f = field.trim();
    let num = f.trim_end_matches("MiB").trim();
    num.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0 && *v < 1e12)
        .map(|v| (v * 1048576.0) as u64)
}

/// "2026/11/29 10:00:00.123" → seconds of the day (traces spanning midnight wrap forward).
pub(super) fn parse_clock(field: &str) -> Option<f64> {
    let time = field.split_whitespace().last()?;
    let mut parts = time.split(':');
    let h: f64 = parts.next()?.parse().ok()?;
    let m: f64 = parts.next()?.parse().ok()?;
    let s: f64 = parts.next()?.parse().ok()?;
    Some(h * 3600.0 + m * 60.0 + s)
}

/// A usage log read: its samples, and what the reader noted (a last line cut short).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Log {
    /// The samples, in the log's order.
    pub samples: Vec<Sample>,
    /// One line each, in the language asked for.
    pub notes: Vec<String>,
}

/// Parses a trace: `nvidia-smi --query-gpu=… --format=csv` output (its header names the columns,
/// in any order, extra columns ignored; `noheader,nounits` reads as timestamp, index, used,
/// total), vramscope's own `t_s,gpu,used_bytes,total_bytes`, `nvidia-smi dmon -s m` output
/// (which has no total: samples carry `total = 0`, see [`with_total`]) and the boxed table that
/// `nvidia-smi -l 1` prints. Lines that are empty or start with `#` are skipped in CSV. A last
/// line cut short (a stopped `nvidia-smi -l`) is left out: [`read_log`] says so.
pub fn parse(text: &str) -> Result<Vec<Sample>, TraceError> {
    read_log(text, Lang::En).map(|l| l.samples)
}

/// [`parse`], with a note in `lang` when the last line was cut short: a log that ends mid-line,
/// as `nvidia-smi -l` (or `--query-gpu=… -l 1`) leaves it when stopped with Ctrl-C (its output to
/// a file is block-buffered), is read up to the line before.
pub fn read_log(text: &str, lang: Lang) -> Result<Log, TraceError> {
    let text = &text[..floor_boundary(text, crate::diagnose::MAX_INPUT_BYTES * 16)];
    // the last two lines with content: a cut line is shorter than the whole line before it
    let mut filled = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let (before, last) =
        filled.by_ref().fold((None, None), |(_, last), (i, l)| (last, Some((i + 1, l.trim().len()))));
    match parse_any(text) {
        Err(TraceError::Line { line, msg })
            if last.is_some_and(|(n, len)| n == line && before.is_some_and(|(_, b)| len < b)) =>
        {
            let start: usize = text.split_inclusive('\n').take(line - 1).map(str::len).sum();
            let samples = parse_any(&text[..start])?;
            if samples.is_empty() {
                return Err(TraceError::Line { line, msg });
            }
            let note = text!(
                lang,
                "line {line} is cut short (the log ends mid-line, as a stopped `nvidia-smi -l` leaves it): read up to line {}",
                "第 {line} 行不完整（日志在行中间结束，`nvidia-smi -l` 被中断时就会这样）：已读取到第 {} 行",
                line - 1
            );
            Ok(Log { samples, notes: vec![note] })
        }
        r => r.map(|samples| Log { samples, notes: Vec::new() }),
    }
}

/// The log in whichever format it is.
fn parse_any(text: &str) -> Result<Vec<Sample>, TraceError> {
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
            if used > total + total / 20 {
                return Err(bad("used_bytes is above total_bytes"));
            }
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
            if used > total + total / 20 {
                return Err(bad("memory.used is above memory.total (columns swapped, or two logs mixed?)"));
            }
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
    let mut cols: Option<(usize, usize, Option<usize>, usize)> = None;
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
                cols = Some((g, fb, pos("time"), words.len()));
            }
            continue;
        }
        let bad = |msg: &str| TraceError::Line { line: i + 1, msg: msg.to_owned() };
        let (g, fb, time, named) =
            cols.ok_or_else(|| bad("nvidia-smi dmon output needs its '# gpu fb' header"))?;
        // dmon prints every column it names ("-" where a value is missing)
        if words.len() < named.max(g.max(fb) + 1) {
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
            if used > total + total / 20 {
                return Err(bad("memory used is above memory total"));
            }
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
