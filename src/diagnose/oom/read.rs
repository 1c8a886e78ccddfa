//! The pieces an out-of-memory message is read with: sizes before and after keys of the
//! compacted (whitespace-free) text, the processes it names, the GPU index, log-line prefixes.

use super::OtherProcess;

/// Parses "12.50 GiB", "512 MiB", "20.00 MB", "1.5 GB", "300 KiB", "123 bytes" (spaces optional).
pub(super) fn size_at(text: &str) -> Option<(u64, usize)> {
    let t = text.trim_start();
    let skipped = text.len() - t.len();
    let num_len = t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ',')).unwrap_or(t.len());
    if num_len == 0 {
        return None;
    }
    let num: f64 = t[..num_len].trim_end_matches(['.', ',']).replace(',', "").parse().ok()?;
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
pub(super) fn size_after(text: &str, key: &str) -> Option<u64> {
    let i = text.find(key)?;
    size_at(&text[i + key.len()..]).map(|(v, _)| v)
}

/// A compacted size as a reader writes it: "10.20GiB" → "10.20 GiB".
pub(super) fn spaced(w: &str) -> String {
    match w.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => format!("{} {}", &w[..i], &w[i..]),
        None => w.to_owned(),
    }
}

/// The size after `key` as the message wrote it ("10.20 GiB").
pub(super) fn written_after(text: &str, key: &str) -> Option<String> {
    let i = text.find(key)?;
    let tail = &text[i + key.len()..];
    let (_, len) = size_at(tail)?;
    Some(spaced(tail[..len].trim()))
}

/// The integer after `key` ("(29000)", "436,528").
pub(super) fn int_after(text: &str, key: &str) -> Option<u64> {
    let i = text.find(key)?;
    let digits: String = text[i + key.len()..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Every "Process <pid> has <size> memory in use" of a compacted message.
pub(super) fn processes(c: &str) -> Vec<OtherProcess> {
    let mut out = Vec::new();
    let mut rest = c;
    while let Some(i) = rest.find("Process") {
        let tail = &rest[i + 7..];
        let digits: String = tail.chars().take_while(char::is_ascii_digit).collect();
        rest = tail;
        let Ok(pid) = digits.parse::<u64>() else { continue };
        let Some(h) = tail[digits.len()..].strip_prefix("has") else { continue };
        if let Some((bytes, len)) = size_at(h) {
            out.push(OtherProcess { pid, bytes, as_written: spaced(&h[..len]), likely_this_process: false });
        }
        if out.len() >= 64 {
            break;
        }
    }
    out
}

/// The size that precedes `key` in a compacted message ("…;14.56GiBalreadyallocated").
pub(super) fn size_before(c: &str, key: &str) -> Option<u64> {
    let i = c.find(key)?;
    let head = &c[..i];
    let unit_start = head.rfind(|ch: char| !ch.is_ascii_alphabetic())? + 1;
    let num_start = head[..unit_start]
        .rfind(|ch: char| !(ch.is_ascii_digit() || ch == '.' || ch == ','))
        .map_or(0, |p| p + 1);
    size_at(&head[num_start..]).map(|(v, _)| v)
}

/// The first "GPU<digits>" of a compacted message.
pub(super) fn gpu_index(c: &str) -> Option<u32> {
    let mut rest = c;
    while let Some(i) = rest.find("GPU") {
        let tail = &rest[i + 3..];
        let digits: String = tail.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(g) = digits.parse() {
            return Some(g);
        }
        rest = tail;
    }
    None
}

pub(super) fn gib(b: u64) -> String {
    if b == 0 {
        "0 bytes".into()
    } else if b >= 1 << 30 {
        format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    }
}

/// Removes the per-line prefixes logs add: `[rank3]: `, `[default0]:`, `(VllmWorkerProcess
/// pid=2421) ERROR 10-14 12:32:47 multiproc_worker_utils.py:233] `. A prefix is a leading
/// bracketed tag, or a log header that ends in `] ` within the first 160 characters.
pub(super) fn strip_prefix(line: &str) -> &str {
    let mut l = line.trim_end_matches('\r');
    for _ in 0..3 {
        let t = l.trim_start();
        let mut end = t.len().min(160);
        while !t.is_char_boundary(end) {
            end -= 1;
        }
        let head = &t[..end];
        let cut = if t.starts_with('[') || t.starts_with('(') {
            head.find("]:").map(|i| i + 2).or_else(|| head.find("] ").map(|i| i + 2)).or_else(|| {
                // "(VllmWorkerProcess pid=2421) ERROR …] " and "(EngineCore_0 pid=3305) …"
                head.find(") ").filter(|_| t.starts_with('(')).map(|i| i + 2)
            })
        } else if ["INFO", "ERROR", "WARNING", "DEBUG"].iter().any(|k| t.starts_with(k)) {
            head.find("] ").map(|i| i + 2)
        } else {
            None
        };
        match cut {
            Some(i) if i <= t.len() && t.is_char_boundary(i) => l = &t[i..],
            _ => break,
        }
    }
    l
}
