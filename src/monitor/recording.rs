//! Recorded GPU memory: a Prometheus range as snapshots, and the files a recording is kept in —
//! `vramscope monitor --prometheus URL --range 1h --json` (every GPU's series) and the Live tab's
//! CSV (`t_s,gpu,used_bytes,total_bytes[,host]`) — read back into snapshots for the app.

use super::prometheus::Series;
use super::{GpuSample, Snapshot};
use serde::Deserialize;

/// The largest recording read (bytes).
pub const MAX_BYTES: u64 = 64 << 20;

/// The series of a range, one snapshot per timestamp (oldest first), each GPU with its host.
pub fn snapshots(series: &[Series]) -> Vec<Snapshot> {
    // Prometheus aligns a range's points on start + k·step for every series; a millisecond key
    // merges them (a GPU missing at a point is missing from that snapshot)
    let mut at: std::collections::BTreeMap<i64, Vec<GpuSample>> = std::collections::BTreeMap::new();
    for (i, s) in series.iter().enumerate() {
        let index = s.gpu.parse().unwrap_or(u32::try_from(i).unwrap_or(u32::MAX));
        for &(t, used) in &s.points {
            at.entry((t * 1000.0).round() as i64).or_default().push(GpuSample {
                index,
                name: s.name.clone(),
                total: s.total,
                used,
                free: s.total.saturating_sub(used),
                util_pct: None,
                processes: Vec::new(),
                host: Some(s.host.clone()),
            });
        }
    }
    at.into_iter().map(|(ms, gpus)| Snapshot { t_s: ms as f64 / 1000.0, gpus }).collect()
}

/// The inverse of [`snapshots`]: every GPU's series (host, then GPU order), its total from its
/// last sample.
pub fn series_of(snaps: &[Snapshot]) -> Vec<Series> {
    let mut by: std::collections::BTreeMap<(String, u32), Series> = std::collections::BTreeMap::new();
    for s in snaps {
        for g in &s.gpus {
            let host = g.host.clone().unwrap_or_default();
            let e = by.entry((host.clone(), g.index)).or_insert_with(|| Series {
                host,
                gpu: g.index.to_string(),
                name: g.name.clone(),
                total: 0,
                points: Vec::new(),
            });
            e.points.push((s.t_s, g.used));
            e.total = g.total;
        }
    }
    by.into_values().collect()
}

/// Seconds a GPU has been silent, where it stopped reporting (its node or exporter down): its
/// last point is more than two sampling intervals before the newest point of any GPU.
pub fn stopped_for(last_t: f64, newest_t: f64, interval_s: f64) -> Option<f64> {
    let gap = newest_t - last_t;
    (interval_s > 0.0 && gap > 2.0 * interval_s + 1e-6).then_some(gap)
}

/// Does this CSV header name a host column (a cluster's recording)?
pub fn csv_has_host(text: &str) -> bool {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|h| h.split(',').any(|c| c.trim() == "host") && h.split(',').any(|c| c.trim() == "t_s"))
}

#[derive(Deserialize)]
struct RangeFile {
    source: Option<String>,
    series: Vec<Series>,
}

/// A recording's snapshots: `monitor --prometheus --range --json` output, or the Live tab's
/// CSV. Errors name the line (CSV) or what the JSON lacks.
pub fn read(text: &str) -> Result<Vec<Snapshot>, String> {
    let t = text.trim_start();
    if t.starts_with('{') {
        let f: RangeFile = serde_json::from_str(t).map_err(|e| {
            format!(
                "line {}: not a `vramscope monitor --prometheus --range … --json` recording ({e})",
                e.line()
            )
        })?;
        if f.source.as_deref().is_some_and(|s| s != "prometheus") {
            return Err("a recording's \"source\" must be \"prometheus\"".into());
        }
        let out = snapshots(&f.series);
        if out.is_empty() {
            return Err("the recording holds no points".into());
        }
        return Ok(out);
    }
    read_csv(text)
}

fn read_csv(text: &str) -> Result<Vec<Snapshot>, String> {
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let Some((_, header)) = lines.next() else { return Err("the recording is empty".into()) };
    let cols: Vec<&str> = header.split(',').map(str::trim).collect();
    let find = |name: &str| cols.iter().position(|c| *c == name);
    let (Some(ti), Some(gi), Some(ui), Some(ci)) =
        (find("t_s"), find("gpu"), find("used_bytes"), find("total_bytes"))
    else {
        return Err(
            "line 1: expected the header t_s,gpu,used_bytes,total_bytes[,host] (the Live tab's Record)"
                .into(),
        );
    };
    let hi = find("host");
    let mut out: Vec<Snapshot> = Vec::new();
    for (i, line) in lines {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let bad = |what: &str| format!("line {}: {what}", i + 1);
        let num = |k: usize, what: &str| -> Result<u64, String> {
            f.get(k).and_then(|v| v.parse().ok()).ok_or_else(|| bad(&format!("{what} is not a whole number")))
        };
        let t: f64 = f
            .get(ti)
            .and_then(|v| v.parse().ok())
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| bad("t_s is not a number"))?;
        let (used, total) = (num(ui, "used_bytes")?, num(ci, "total_bytes")?);
        if used > total {
            return Err(bad("used_bytes is above total_bytes"));
        }
        let index = u32::try_from(num(gi, "gpu")?).map_err(|_| bad("gpu is too large"))?;
        let host = hi.and_then(|h| f.get(h)).filter(|h| !h.is_empty()).map(|h| (*h).to_owned());
        let g = GpuSample {
            index,
            name: String::new(),
            total,
            used,
            free: total - used,
            util_pct: None,
            processes: Vec::new(),
            host,
        };
        match out.last_mut() {
            Some(s) if s.t_s == t => s.gpus.push(g),
            Some(s) if s.t_s > t => return Err(bad("t_s goes back in time")),
            _ => out.push(Snapshot { t_s: t, gpus: vec![g] }),
        }
    }
    if out.is_empty() {
        return Err("the recording holds no samples".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::History;

    #[test]
    fn a_range_becomes_snapshots_and_a_recording_reads_back() {
        let s = |h: &str, g: &str, base: u64| Series {
            host: h.into(),
            gpu: g.into(),
            name: "H100".into(),
            total: 80 << 30,
            points: (0..3).map(|k| (1000.0 + 15.0 * k as f64, base + k)).collect(),
        };
        let snaps = snapshots(&[s("a", "0", 10), s("a", "1", 20), s("b", "0", 30)]);
        assert_eq!(snaps.len(), 3);
        assert_eq!(snaps[2].t_s, 1030.0);
        let keys: Vec<(Option<&str>, u32, u64)> =
            snaps[2].gpus.iter().map(|g| (g.host.as_deref(), g.index, g.used)).collect();
        assert_eq!(keys, [(Some("a"), 0, 12), (Some("a"), 1, 22), (Some("b"), 0, 32)]);
        // the Live tab's CSV of a cluster keeps the host and opens again
        let mut h = History::new(10);
        for x in &snaps {
            h.push(x.clone());
        }
        let csv = h.to_csv();
        assert!(csv.starts_with("t_s,gpu,used_bytes,total_bytes,host\n1000.000,0,10,85899345920,a\n"));
        let back = read(&csv).unwrap();
        assert_eq!(back.len(), 3);
        assert_eq!(back[1].gpus[2].host.as_deref(), Some("b"));
        assert_eq!(back[1].gpus[2].used, 31);
        // monitor --range --json
        let json = r#"{"schema":1,"source":"prometheus","start":0,"end":30,"step_s":15,
            "series":[{"host":"n1","gpu":"3","name":"A100","total":100,"points":[[0,5],[15,6]]}]}"#;
        let r = read(json).unwrap();
        assert_eq!((r.len(), r[1].gpus[0].index, r[1].gpus[0].used), (2, 3, 6));
    }

    #[test]
    fn bad_recordings_are_named() {
        assert!(read("").unwrap_err().contains("empty"));
        assert!(read("a,b\n1,2").unwrap_err().starts_with("line 1: expected the header"));
        let e = read("t_s,gpu,used_bytes,total_bytes\n0,0,5,10\n1,0,x,10\n").unwrap_err();
        assert_eq!(e, "line 3: used_bytes is not a whole number");
        let e = read("t_s,gpu,used_bytes,total_bytes\n0,0,11,10\n").unwrap_err();
        assert!(e.contains("line 2") && e.contains("above"), "{e}");
        let e = read("t_s,gpu,used_bytes,total_bytes\n5,0,1,10\n1,0,1,10\n").unwrap_err();
        assert!(e.contains("back in time"), "{e}");
        assert!(read("{\"series\": 3}").unwrap_err().contains("not a `vramscope monitor"));
        assert!(read(r#"{"source":"nvml","series":[]}"#).unwrap_err().contains("source"));
    }
}
