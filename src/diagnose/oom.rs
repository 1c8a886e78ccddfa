//! Reading out-of-memory messages: every number in PyTorch's `torch.OutOfMemoryError` (current and
//! older wording) and TensorFlow's `ResourceExhaustedError`, what they mean, and which memory
//! problem they point to.
//!
//! Input is untrusted text: it is size-capped, never panics, and says what it did not understand.

use serde::Serialize;

/// Longest message read (larger input is cut, with a note).
pub const MAX_INPUT_BYTES: usize = 1 << 20;

/// Which framework wrote the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// PyTorch ≥ 2.1 wording ("GPU 0 has a total capacity of …").
    PytorchCurrent,
    /// Older PyTorch wording ("(GPU 0; … total capacity; … already allocated; …)").
    PytorchLegacy,
    /// TensorFlow ("OOM when allocating tensor with shape[…]").
    Tensorflow,
}

impl Source {
    /// Name for display.
    pub const fn label(self) -> &'static str {
        match self {
            Self::PytorchCurrent => "PyTorch (2.1 and later wording)",
            Self::PytorchLegacy => "PyTorch (older wording)",
            Self::Tensorflow => "TensorFlow",
        }
    }
}

/// Another process the message names: "Process 12345 has 10.20 GiB memory in use".
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OtherProcess {
    /// Its PID.
    pub pid: u64,
    /// Its memory, bytes.
    pub bytes: u64,
    /// The size as the message wrote it ("10.20 GiB").
    pub as_written: String,
}

/// Numbers found in the message, in bytes.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OomNumbers {
    /// The allocation that failed.
    pub requested: Option<u64>,
    /// Device index.
    pub gpu: Option<u32>,
    /// Total capacity of the GPU.
    pub total: Option<u64>,
    /// Free memory reported by the driver.
    pub free: Option<u64>,
    /// Memory this process holds, including non-PyTorch memory (current wording).
    pub process_in_use: Option<u64>,
    /// Allocated by PyTorch tensors.
    pub allocated: Option<u64>,
    /// Reserved by PyTorch but not allocated (cached blocks).
    pub reserved_unallocated: Option<u64>,
    /// Reserved in total by PyTorch (older wording).
    pub reserved: Option<u64>,
    /// TensorFlow: the tensor shape.
    pub shape: Option<Vec<u64>>,
    /// TensorFlow: the element type.
    pub dtype: Option<String>,
    /// Other processes the message names, in its order.
    pub processes: Vec<OtherProcess>,
    /// The message's own wording of the total, free and this process's sizes.
    pub as_written: std::collections::BTreeMap<String, String>,
}

/// What the numbers say.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Finding {
    /// The single request is larger than the whole card.
    RequestExceedsCard,
    /// Much memory is reserved but unallocated: fragmentation.
    Fragmentation,
    /// Other processes hold a large share of the card.
    OtherProcesses,
    /// PyTorch's own tensors fill the card: the job is too big for it.
    JobTooLarge,
}

/// An explained OOM message.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OomReport {
    /// Framework and wording.
    pub source: Source,
    /// Extracted numbers.
    pub numbers: OomNumbers,
    /// Findings, most important first.
    pub findings: Vec<Finding>,
    /// Plain-language explanation, one line per point.
    pub explanation: Vec<String>,
    /// Suggested settings and commands, most useful first.
    pub fixes: Vec<String>,
    /// Parts that were expected but not understood.
    pub not_understood: Vec<String>,
}

/// Why a message could not be read at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OomError {
    /// No known OOM wording found.
    #[error(
        "no PyTorch or TensorFlow out-of-memory message found (looked for \"CUDA out of memory\", \"Tried to allocate\", \"OOM when allocating\")"
    )]
    NotAnOom,
}

/// Parses "12.50 GiB", "512 MiB", "20.00 MB", "1.5 GB", "300 KiB", "123 bytes".
fn size_at(text: &str) -> Option<(u64, usize)> {
    let t = text.trim_start();
    let skipped = text.len() - t.len();
    let num_len = t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ',')).unwrap_or(t.len());
    if num_len == 0 {
        return None;
    }
    let num: f64 = t[..num_len].replace(',', "").parse().ok()?;
    let rest = t[num_len..].trim_start();
    let ws = t[num_len..].len() - rest.len();
    let units: [(&str, f64); 10] = [
        ("GiB", 1024f64.powi(3)),
        ("MiB", 1024f64.powi(2)),
        ("KiB", 1024.0),
        ("TiB", 1024f64.powi(4)),
        ("GB", 1e9),
        ("MB", 1e6),
        ("KB", 1e3),
        ("TB", 1e12),
        ("bytes", 1.0),
        ("B", 1.0),
    ];
    for (u, mult) in units {
        if rest.starts_with(u) {
            let v = num * mult;
            if !v.is_finite() || !(0.0..=1e18).contains(&v) {
                return None;
            }
            return Some((v.round() as u64, skipped + num_len + ws + u.len()));
        }
    }
    None
}

/// The size that follows `key` in `text`.
fn size_after(text: &str, key: &str) -> Option<u64> {
    let i = text.find(key)?;
    size_at(&text[i + key.len()..]).map(|(v, _)| v)
}

/// The size after `key` as the message wrote it ("10.20 GiB").
fn written_after(text: &str, key: &str) -> Option<String> {
    let i = text.find(key)?;
    let tail = &text[i + key.len()..];
    let (_, len) = size_at(tail)?;
    Some(tail[..len].trim().to_owned())
}

/// Every "Process <pid> has <size> memory in use" of a message.
fn processes(text: &str) -> Vec<OtherProcess> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("Process ") {
        let tail = &rest[i + 8..];
        let digits: String = tail.chars().take_while(char::is_ascii_digit).collect();
        rest = tail;
        let Ok(pid) = digits.parse::<u64>() else { continue };
        let after = &tail[digits.len()..];
        let Some(h) = after.strip_prefix(" has ") else { continue };
        if let Some((bytes, len)) = size_at(h) {
            out.push(OtherProcess { pid, bytes, as_written: h[..len].trim().to_owned() });
        }
        if out.len() >= 64 {
            break;
        }
    }
    out
}

/// The size that precedes `key` ("… 2.00 GiB is free").
fn size_before(text: &str, key: &str) -> Option<u64> {
    let i = text.find(key)?;
    let head = &text[..i];
    // walk back over "<number> <unit> "
    let trimmed = head.trim_end();
    let unit_start = trimmed.rfind(' ')?;
    let number_start = trimmed[..unit_start].trim_end().rfind([' ', '(', ';', ',']).map_or(0, |p| p + 1);
    size_at(&trimmed[number_start..]).map(|(v, _)| v)
}

fn gpu_index(text: &str) -> Option<u32> {
    let i = text.find("GPU ")?;
    let digits: String = text[i + 4..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn gib(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    }
}

/// Explains an out-of-memory message.
pub fn explain_oom(input: &str) -> Result<OomReport, OomError> {
    let mut not_understood = Vec::new();
    let text = if input.len() > MAX_INPUT_BYTES {
        not_understood.push(format!("input cut to the first {MAX_INPUT_BYTES} bytes"));
        let mut end = MAX_INPUT_BYTES;
        while !input.is_char_boundary(end) {
            end -= 1;
        }
        &input[..end]
    } else {
        input
    };
    let text = text.replace(['\n', '\r'], " ");
    let mut n = OomNumbers::default();
    let source = if let Some(i) = text.find("OOM when allocating tensor") {
        let tail = &text[i..];
        if let (Some(a), Some(b)) = (tail.find("shape["), tail.find(']'))
            && a + 6 <= b
        {
            n.shape = tail[a + 6..b].split(',').map(|d| d.trim().parse().ok()).collect::<Option<Vec<u64>>>();
        }
        if n.shape.is_none() {
            not_understood.push("the tensor shape".into());
        }
        n.dtype = tail
            .find("type ")
            .map(|p| tail[p + 5..].chars().take_while(|c| c.is_ascii_alphanumeric()).collect());
        let bytes_per = match n.dtype.as_deref() {
            Some("float" | "float32" | "int32") => Some(4),
            Some("half" | "bfloat16" | "float16") => Some(2),
            Some("double" | "float64" | "int64") => Some(8),
            Some("int8" | "uint8" | "bool") => Some(1),
            _ => None,
        };
        if let (Some(s), Some(b)) = (&n.shape, bytes_per) {
            n.requested = s.iter().try_fold(b as u64, |acc, d| acc.checked_mul(*d));
        }
        n.gpu = gpu_index(tail);
        Source::Tensorflow
    } else if text.contains("Tried to allocate") {
        n.requested = size_after(&text, "Tried to allocate");
        n.gpu = gpu_index(&text);
        if text.contains("has a total capacity of") {
            n.total = size_after(&text, "has a total capacity of");
            n.free = size_after(&text, "of which");
            n.process_in_use = size_after(&text, "this process has");
            n.processes = processes(&text);
            for (k, key) in [
                ("total", "has a total capacity of"),
                ("free", "of which"),
                ("this_process", "this process has"),
            ] {
                if let Some(w) = written_after(&text, key) {
                    n.as_written.insert(k.to_owned(), w);
                }
            }
            n.allocated = size_after(&text, "Of the allocated memory");
            n.reserved_unallocated =
                size_after(&text, "and").filter(|_| text.contains("reserved by PyTorch but unallocated"));
            if n.reserved_unallocated.is_none() {
                n.reserved_unallocated = size_before(&text, "is reserved by PyTorch but unallocated");
            }
            Source::PytorchCurrent
        } else {
            n.total = size_before(&text, "total capacity");
            n.allocated = size_before(&text, "already allocated");
            n.free = size_before(&text, "free;").or_else(|| size_before(&text, "free)"));
            n.reserved = size_before(&text, "reserved in total by PyTorch");
            Source::PytorchLegacy
        }
    } else {
        return Err(OomError::NotAnOom);
    };
    for (name, v) in [("the requested size", n.requested), ("the GPU's total capacity", n.total)] {
        if v.is_none() && source != Source::Tensorflow {
            not_understood.push(name.into());
        }
    }
    let (findings, explanation, fixes) = interpret(&n);
    Ok(OomReport { source, numbers: n, findings, explanation, fixes, not_understood })
}

fn interpret(n: &OomNumbers) -> (Vec<Finding>, Vec<String>, Vec<String>) {
    let mut f = Vec::new();
    let mut e = Vec::new();
    let mut x = Vec::new();
    if let Some(r) = n.requested {
        e.push(format!("One allocation of {} failed.", gib(r)));
    }
    if let (Some(r), Some(t)) = (n.requested, n.total)
        && r > t
    {
        f.push(Finding::RequestExceedsCard);
        e.push(format!(
            "The request alone is larger than the whole card ({}): no setting of the allocator helps.",
            gib(t)
        ));
        x.push("shrink the tensor behind it: smaller micro-batch or sequence, chunked loss / logits, or split it across GPUs (tensor or sequence parallelism)".into());
    }
    let reserved_free = n.reserved_unallocated.or_else(|| match (n.reserved, n.allocated) {
        (Some(r), Some(a)) if r > a => Some(r - a),
        _ => None,
    });
    if let (Some(ru), Some(r)) = (reserved_free, n.requested) {
        e.push(format!("PyTorch holds {} reserved but unallocated (cached blocks).", gib(ru)));
        // fragmentation: the cache could have served the request (and more) yet did not, and it
        // is a real share of the card — a few cached MiB on a full card are not the problem
        let share = n.total.is_none_or(|t| ru * 20 >= t);
        if ru >= 2 * r && share {
            f.push(Finding::Fragmentation);
            e.push("More memory is cached than was requested, yet no block was large enough: the cache is fragmented.".into());
            x.push("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True  (lets segments grow instead of fragmenting)".into());
        }
    }
    if !n.processes.is_empty() {
        let sum: u64 = n.processes.iter().map(|p| p.bytes).sum();
        let list: Vec<String> =
            n.processes.iter().map(|p| format!("process {} has {}", p.pid, p.as_written)).collect();
        if n.total.is_none_or(|t| sum > t / 10) {
            f.push(Finding::OtherProcesses);
        }
        e.push(format!("The message names other processes on the card: {}.", list.join(", ")));
        x.push(format!(
            "check `nvidia-smi` for {} (a second job, a notebook kernel, a leftover worker) and stop it",
            n.processes.iter().map(|p| format!("PID {}", p.pid)).collect::<Vec<_>>().join(", ")
        ));
    } else if let (Some(t), Some(p)) = (n.total, n.process_in_use) {
        let free = n.free.unwrap_or(0);
        let others = t.saturating_sub(p).saturating_sub(free);
        if others > t / 10 {
            f.push(Finding::OtherProcesses);
            e.push(format!("Other processes hold about {} of the card.", gib(others)));
            x.push("check `nvidia-smi` for other processes (a second job, a notebook kernel, a leftover worker) and stop them".into());
        }
    }
    if let (Some(t), Some(a)) = (n.total, n.allocated)
        && a > t / 2
        && !f.contains(&Finding::RequestExceedsCard)
    {
        f.push(Finding::JobTooLarge);
        e.push(format!(
            "PyTorch tensors already take {} of {}: the job itself is too large for this card.",
            gib(a),
            gib(t)
        ));
        x.push("lower the micro-batch (keep the global batch with gradient accumulation), enable gradient checkpointing, use bf16 / an 8-bit optimizer, LoRA, or ZeRO/FSDP across GPUs — `vramscope estimate` ranks what each saves".into());
    }
    if f.is_empty() {
        e.push("The numbers do not single out one cause; compare the job with `vramscope estimate`.".into());
    }
    (f, e, x)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CURRENT: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.21 GiB is free. Including non-PyTorch memory, this process has 77.93 GiB memory in use. Of the allocated memory 71.02 GiB is allocated by PyTorch, and 6.39 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.";
    const LEGACY: &str = "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; 14.56 GiB already allocated; 3.75 MiB free; 14.81 GiB reserved in total by PyTorch)";
    const TF: &str = "ResourceExhaustedError: OOM when allocating tensor with shape[32,1024,1024] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc";

    #[test]
    fn current_wording() {
        let r = explain_oom(CURRENT).unwrap();
        assert_eq!(r.source, Source::PytorchCurrent);
        assert_eq!(r.numbers.requested, Some(2 << 30));
        assert_eq!(r.numbers.gpu, Some(0));
        assert_eq!(r.numbers.total, Some((79.15 * (1u64 << 30) as f64).round() as u64));
        assert_eq!(r.numbers.free, Some((1.21 * (1u64 << 30) as f64).round() as u64));
        assert!(r.numbers.allocated.is_some() && r.numbers.reserved_unallocated.is_some());
        assert!(r.findings.contains(&Finding::Fragmentation), "{r:?}");
        assert!(r.findings.contains(&Finding::JobTooLarge));
        assert!(r.fixes[0].contains("expandable_segments"));
        assert!(r.not_understood.is_empty());
    }

    #[test]
    fn legacy_wording() {
        let r = explain_oom(LEGACY).unwrap();
        assert_eq!(r.source, Source::PytorchLegacy);
        assert_eq!(r.numbers.requested, Some(20 << 20));
        assert_eq!(r.numbers.allocated, Some((14.56 * (1u64 << 30) as f64).round() as u64));
        assert_eq!(r.numbers.free, Some((3.75 * (1u64 << 20) as f64).round() as u64));
        assert_eq!(r.numbers.reserved, Some((14.81 * (1u64 << 30) as f64).round() as u64));
        // 0.25 GiB cached on a full 15.78 GiB card: the card is full, not fragmented
        assert!(!r.findings.contains(&Finding::Fragmentation) && r.findings.contains(&Finding::JobTooLarge));
    }

    #[test]
    fn other_processes_are_quoted_with_their_pids_and_sizes() {
        let m = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 10.06 MiB is free. Process 12345 has 10.20 GiB memory in use. Including non-PyTorch memory, this process has 13.43 GiB memory in use. Of the allocated memory 12.90 GiB is allocated by PyTorch, and 120.00 MiB is reserved by PyTorch but unallocated.";
        let r = explain_oom(m).unwrap();
        assert_eq!(r.numbers.processes.len(), 1);
        assert_eq!(r.numbers.processes[0].pid, 12345);
        assert_eq!(r.numbers.processes[0].as_written, "10.20 GiB");
        let text = r.explanation.join(" ");
        assert!(text.contains("process 12345 has 10.20 GiB"), "{text}");
        assert!(!text.contains("about"), "{text}");
        assert!(r.fixes.iter().any(|f| f.contains("PID 12345")));
        assert!(r.findings.contains(&Finding::OtherProcesses));
        assert!(!r.findings.contains(&Finding::Fragmentation), "120 MiB cached is not fragmentation");
    }

    #[test]
    fn tensorflow_wording() {
        let r = explain_oom(TF).unwrap();
        assert_eq!(r.source, Source::Tensorflow);
        assert_eq!(r.numbers.shape, Some(vec![32, 1024, 1024]));
        assert_eq!(r.numbers.requested, Some(32 * 1024 * 1024 * 4));
    }

    #[test]
    fn not_an_oom_and_garbage() {
        assert_eq!(explain_oom("hello"), Err(OomError::NotAnOom));
        let r = explain_oom("Tried to allocate lots of memory").unwrap();
        assert!(r.not_understood.iter().any(|s| s.contains("requested")));
        let huge = "Tried to allocate 1e400 GiB".to_string();
        assert!(explain_oom(&huge).is_ok());
        // input past the cap is cut: the message behind it is not read
        let long = "x".repeat(MAX_INPUT_BYTES + 10) + "Tried to allocate 2.00 GiB";
        assert_eq!(explain_oom(&long), Err(OomError::NotAnOom));
        let cut = "Tried to allocate 2.00 GiB ".to_string() + &"é".repeat(MAX_INPUT_BYTES);
        let r = explain_oom(&cut).unwrap();
        assert_eq!(r.numbers.requested, Some(2 << 30));
        assert!(r.not_understood.iter().any(|s| s.contains("cut")));
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in ".{0,400}") {
            let _ = explain_oom(&s);
            let _ = explain_oom(&format!("Tried to allocate {s} GPU {s} has a total capacity of {s} of which {s}"));
            let _ = explain_oom(&format!("OOM when allocating tensor with shape[{s}] and type {s}"));
        }
    }
}
