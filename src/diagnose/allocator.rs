//! Allocator reports: `torch.cuda.memory_summary()` text, `torch.cuda.memory_stats()` JSON and
//! TensorFlow's `tf.config.experimental.get_memory_info('GPU:0')` output — allocated vs reserved,
//! peaks, fragmentation, cudaMalloc retries (the usual cause of a run that suddenly slows down) and
//! OOM counts.

use serde::Serialize;
use serde_json::Value;

/// Which report was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AllocatorSource {
    /// `torch.cuda.memory_summary()`.
    PytorchSummary,
    /// `torch.cuda.memory_stats()` as JSON.
    PytorchStats,
    /// `tf.config.experimental.get_memory_info(...)`.
    Tensorflow,
}

impl AllocatorSource {
    /// Name for display.
    pub const fn label(self) -> &'static str {
        match self {
            Self::PytorchSummary => "PyTorch torch.cuda.memory_summary()",
            Self::PytorchStats => "PyTorch torch.cuda.memory_stats()",
            Self::Tensorflow => "TensorFlow get_memory_info()",
        }
    }
}

/// What the allocator says, in bytes.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AllocatorNumbers {
    /// Bytes in live tensors now.
    pub allocated_current: Option<u64>,
    /// Peak bytes in live tensors.
    pub allocated_peak: Option<u64>,
    /// Bytes reserved from the driver now.
    pub reserved_current: Option<u64>,
    /// Peak reserved.
    pub reserved_peak: Option<u64>,
    /// Reserved bytes that cannot be released (split blocks).
    pub non_releasable: Option<u64>,
    /// Times cudaMalloc failed and the cache was flushed and retried.
    pub cuda_malloc_retries: Option<u64>,
    /// Out-of-memory errors raised.
    pub ooms: Option<u64>,
}

/// An explained allocator report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AllocatorReport {
    /// Which report.
    pub source: AllocatorSource,
    /// The numbers.
    pub numbers: AllocatorNumbers,
    /// 1 - allocated / reserved, when both are known.
    pub fragmentation: Option<f64>,
    /// What it means.
    pub advice: Vec<String>,
}

/// Why a report could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AllocatorError {
    /// Not one of the known formats.
    #[error(
        "not a torch.cuda.memory_summary() table, a memory_stats() JSON object or TensorFlow memory info"
    )]
    Unknown,
}

fn json_u64(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

/// "12345 KiB", "1.5 GiB", "512 B" inside a summary cell.
fn cell_bytes(cell: &str) -> Option<u64> {
    let mut it = cell.split_whitespace();
    let n: f64 = it.next()?.parse().ok()?;
    let mult = match it.next()? {
        "B" => 1.0,
        "KiB" | "KB" => 1024.0,
        "MiB" | "MB" => 1048576.0,
        "GiB" | "GB" => 1073741824.0,
        "TiB" | "TB" => 1099511627776.0,
        _ => return None,
    };
    let v = n * mult;
    (v.is_finite() && (0.0..1e18).contains(&v)).then_some(v as u64)
}

/// Count after "label:" in the summary header ("CUDA OOMs: 0").
fn count_after(text: &str, label: &str) -> Option<u64> {
    let i = text.find(label)?;
    text[i + label.len()..].trim_start().split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// (current, peak) of a summary row like "| Allocated memory | 1 KiB | 2 KiB | …".
fn summary_row(text: &str, metric: &str) -> (Option<u64>, Option<u64>) {
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() >= 4 && cells[1] == metric {
            return (cell_bytes(cells[2]), cell_bytes(cells[3]));
        }
    }
    (None, None)
}

/// Reads any of the three formats.
pub fn parse_allocator(input: &str) -> Result<AllocatorReport, AllocatorError> {
    let text = &input[..floor_char_boundary(input, super::MAX_INPUT_BYTES)];
    let trimmed = text.trim();
    let (source, numbers) = if let Ok(v) = serde_json::from_str::<Value>(trimmed)
        && v.get("allocated_bytes.all.current").is_some()
    {
        (
            AllocatorSource::PytorchStats,
            AllocatorNumbers {
                allocated_current: json_u64(&v, "allocated_bytes.all.current"),
                allocated_peak: json_u64(&v, "allocated_bytes.all.peak"),
                reserved_current: json_u64(&v, "reserved_bytes.all.current"),
                reserved_peak: json_u64(&v, "reserved_bytes.all.peak"),
                non_releasable: json_u64(&v, "inactive_split_bytes.all.current"),
                cuda_malloc_retries: json_u64(&v, "num_alloc_retries"),
                ooms: json_u64(&v, "num_ooms"),
            },
        )
    } else if text.contains("PyTorch CUDA memory summary") || text.contains("| Allocated memory") {
        let (ac, ap) = summary_row(text, "Allocated memory");
        let (rc, rp) = summary_row(text, "GPU reserved memory");
        let (nr, _) = summary_row(text, "Non-releasable memory");
        (
            AllocatorSource::PytorchSummary,
            AllocatorNumbers {
                allocated_current: ac,
                allocated_peak: ap,
                reserved_current: rc,
                reserved_peak: rp,
                non_releasable: nr,
                cuda_malloc_retries: count_after(text, "cudaMalloc retries:"),
                ooms: count_after(text, "CUDA OOMs:"),
            },
        )
    } else if trimmed.starts_with('{') && trimmed.contains("'current'") && trimmed.contains("'peak'") {
        // Python dict repr: {'current': 123, 'peak': 456}
        let json = trimmed.replace('\'', "\"");
        let v: Value = serde_json::from_str(&json).map_err(|_| AllocatorError::Unknown)?;
        (
            AllocatorSource::Tensorflow,
            AllocatorNumbers {
                allocated_current: json_u64(&v, "current"),
                allocated_peak: json_u64(&v, "peak"),
                ..AllocatorNumbers::default()
            },
        )
    } else {
        return Err(AllocatorError::Unknown);
    };
    let fragmentation = match (numbers.allocated_current, numbers.reserved_current) {
        (Some(a), Some(r)) if r > 0 => Some(1.0 - a.min(r) as f64 / r as f64),
        _ => None,
    };
    let mut advice = Vec::new();
    let g = |b: u64| format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64);
    if let (Some(a), Some(p)) = (numbers.allocated_current, numbers.allocated_peak) {
        advice.push(format!(
            "Tensors hold {} now, {} at the peak (compare the peak with `vramscope estimate`).",
            g(a),
            g(p)
        ));
    }
    if let (Some(f), Some(r)) = (fragmentation, numbers.reserved_current)
        && f > 0.2
    {
        advice.push(format!(
            "{:.0} % of the {} the allocator reserved holds no tensor: cached or fragmented blocks. PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True reduces fragmentation.",
            100.0 * f,
            g(r)
        ));
    }
    if let Some(n) = numbers.cuda_malloc_retries
        && n > 0
    {
        advice.push(format!(
            "{n} cudaMalloc retries: the allocator ran out, flushed its cache and tried again — each one stalls the step; a run that suddenly slows down is usually this. Leave more headroom (smaller micro-batch) or fix fragmentation."
        ));
    }
    if let Some(n) = numbers.ooms
        && n > 0
    {
        advice.push(format!("{n} out-of-memory errors were raised (and caught) in this process."));
    }
    Ok(AllocatorReport { source, numbers, fragmentation, advice })
}

fn floor_char_boundary(s: &str, max: usize) -> usize {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUMMARY: &str = "|===========================================================================|
|                  PyTorch CUDA memory summary, device ID 0                 |
|---------------------------------------------------------------------------|
|            CUDA OOMs: 1            |        cudaMalloc retries: 17        |
|===========================================================================|
|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |
|---------------------------------------------------------------------------|
| Allocated memory      |  10240 MiB |  71680 MiB |   1200 GiB |   1190 GiB |
|       from large pool |  10000 MiB |  71000 MiB |   1100 GiB |   1090 GiB |
|---------------------------------------------------------------------------|
| GPU reserved memory   |  40960 MiB |  76800 MiB |  80000 MiB |  39040 MiB |
| Non-releasable memory |   5120 MiB |   9000 MiB |    500 GiB |    495 GiB |
|===========================================================================|";

    #[test]
    fn memory_summary_table() {
        let r = parse_allocator(SUMMARY).unwrap();
        assert_eq!(r.source, AllocatorSource::PytorchSummary);
        assert_eq!(r.numbers.allocated_current, Some(10240 << 20));
        assert_eq!(r.numbers.allocated_peak, Some(71680 << 20));
        assert_eq!(r.numbers.reserved_current, Some(40960 << 20));
        assert_eq!(r.numbers.non_releasable, Some(5120 << 20));
        assert_eq!(r.numbers.cuda_malloc_retries, Some(17));
        assert_eq!(r.numbers.ooms, Some(1));
        assert!((r.fragmentation.unwrap() - 0.75).abs() < 1e-9);
        assert!(r.advice.iter().any(|a| a.contains("cudaMalloc retries")));
    }

    #[test]
    fn memory_stats_json_and_tensorflow() {
        let j = r#"{"allocated_bytes.all.current": 100, "allocated_bytes.all.peak": 300, "reserved_bytes.all.current": 400, "num_alloc_retries": 0, "num_ooms": 0}"#;
        let r = parse_allocator(j).unwrap();
        assert_eq!(r.source, AllocatorSource::PytorchStats);
        assert_eq!(r.numbers.reserved_current, Some(400));
        assert!((r.fragmentation.unwrap() - 0.75).abs() < 1e-9);
        let tf = parse_allocator("{'current': 1073741824, 'peak': 2147483648}").unwrap();
        assert_eq!(tf.source, AllocatorSource::Tensorflow);
        assert_eq!(tf.numbers.allocated_peak, Some(2 << 30));
        assert_eq!(parse_allocator("hello"), Err(AllocatorError::Unknown));
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in ".{0,300}") {
            let _ = parse_allocator(&s);
            let _ = parse_allocator(&format!("| Allocated memory | {s} | {s} |\ncudaMalloc retries: {s}"));
        }
    }
}
