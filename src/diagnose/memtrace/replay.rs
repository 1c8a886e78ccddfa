//! The replay of one device's trace entries into allocated and reserved bytes per event (the
//! rules are in the parent module's docs).

use super::pickle::{Action, Parsed, V};
use super::{EventKind, MemTrace, StepSource, TraceOom, steps};
use std::collections::HashMap;

/// A hasher for block addresses (multiples of 512): a multiply-xorshift, much cheaper than SipHash.
#[derive(Default, Clone, Copy)]
struct AddrHasher(u64);

impl std::hash::Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        let h = self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^ (h >> 29)
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8 | u64::from(*b)).wrapping_mul(31);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 ^= v;
    }
}

type AddrMap<T> = HashMap<u64, T, std::hash::BuildHasherDefault<AddrHasher>>;

/// The top Python frame of a `frames` list: the innermost `.py` frame outside torch itself, else
/// the innermost `.py` frame.
fn top_frame(p: &Parsed<'_>, frames: V) -> Option<String> {
    let py: Vec<V> = p
        .list(frames)
        .iter()
        .copied()
        .filter(|f| p.get_str(*f, "filename").is_some_and(|n| n.ends_with(".py")))
        .collect();
    let f = py
        .iter()
        .find(|f| p.get_str(**f, "filename").is_some_and(|n| !n.contains("/torch/")))
        .or(py.first())?;
    let file = p.get_str(*f, "filename").unwrap_or("?");
    let file = file.rsplit('/').next().unwrap_or(file);
    Some(format!("{file}:{}:{}", p.get_u64(*f, "line").unwrap_or(0), p.get_str(*f, "name").unwrap_or("?")))
}

pub(crate) fn trace_from(p: &Parsed<'_>, device: Option<usize>) -> MemTrace {
    let traces = p.get(p.root, "device_traces").map(|v| p.list(v)).unwrap_or_default();
    let device = device.unwrap_or_else(|| {
        // the busiest device; the first on ties
        (0..traces.len()).rev().max_by_key(|d| p.list(traces[*d]).len()).unwrap_or(0)
    });
    let entries = traces.get(device).map(|v| p.list(*v)).unwrap_or_default();
    let mut t = MemTrace { device, entries: entries.len(), ..MemTrace::default() };
    let mut live: AddrMap<u64> = AddrMap::default();
    let mut times: Vec<i64> = Vec::with_capacity(entries.len());
    let mut frame_of_list: HashMap<u32, u32> = HashMap::new();
    let mut frame_index: HashMap<String, u32> = HashMap::new();
    // running values relative to the (not yet known) baselines, in wrapping u64 arithmetic
    let (mut alloc_rel, mut res_rel) = (0u64, 0u64);
    let (mut baseline, mut res_min) = (0u64, 0i128);
    t.allocated.reserve(entries.len());
    t.reserved.reserve(entries.len());
    for e in entries.iter().filter_map(|v| p.entry(*v)) {
        let kind = match e.action {
            Action::Alloc => {
                live.insert(e.addr, e.size);
                alloc_rel = alloc_rel.wrapping_add(e.size);
                EventKind::Alloc
            }
            Action::FreeCompleted => {
                let size = live.remove(&e.addr).unwrap_or_else(|| {
                    t.unmatched_frees += 1;
                    baseline = baseline.saturating_add(e.size);
                    e.size
                });
                alloc_rel = alloc_rel.wrapping_sub(size);
                EventKind::Free
            }
            Action::SegmentAlloc | Action::SegmentMap => {
                res_rel = res_rel.wrapping_add(e.size);
                EventKind::SegmentAlloc
            }
            Action::SegmentFree | Action::SegmentUnmap => {
                res_rel = res_rel.wrapping_sub(e.size);
                res_min = res_min.min(i128::from(res_rel as i64));
                EventKind::SegmentFree
            }
            Action::Oom => {
                t.ooms.push(TraceOom { event: t.len(), requested: e.size, device_free: e.device_free });
                continue;
            }
            Action::FreeRequested | Action::Snapshot | Action::Other => continue,
        };
        let frame = match e.frames {
            Some(V::List(id)) => {
                *frame_of_list.entry(id).or_insert_with(|| match top_frame(p, V::List(id)) {
                    Some(name) => {
                        let next = t.frame_names.len() as u32;
                        *frame_index.entry(name.clone()).or_insert_with(|| {
                            t.frame_names.push(name);
                            next
                        })
                    }
                    None => u32::MAX,
                })
            }
            _ => u32::MAX,
        };
        t.kind.push(kind);
        t.allocated.push(alloc_rel);
        t.reserved.push(res_rel);
        t.frame.push(frame);
        times.push(e.time_us);
    }
    // blocks still live at snapshot time with no alloc in the trace: from before it
    let mut reserved_end: u64 = 0;
    for s in p.get(p.root, "segments").map(|v| p.list(v)).unwrap_or_default() {
        if p.get_u64(*s, "device").unwrap_or(0) != device as u64 {
            continue;
        }
        reserved_end = reserved_end.saturating_add(p.get_u64(*s, "total_size").unwrap_or(0));
        let mut addr = p.get_u64(*s, "address").unwrap_or(0);
        for b in p.get(*s, "blocks").map(|v| p.list(v)).unwrap_or_default() {
            let size = p.get_u64(*b, "size").unwrap_or(0);
            let here = p.get_u64(*b, "address").unwrap_or(addr);
            if p.get_str(*b, "state") == Some("active_allocated") && !live.contains_key(&here) {
                t.live_before_trace += 1;
                baseline = baseline.saturating_add(p.get_u64(*b, "requested_size").unwrap_or(size));
            }
            addr = here.saturating_add(size);
        }
    }
    t.baseline_allocated = baseline;
    // reserved: the end level is what the segments hold; never below zero on the way
    let net = i128::from(res_rel as i64);
    t.baseline_reserved =
        (i128::from(reserved_end) - net).max(-res_min).clamp(0, i128::from(u64::MAX)) as u64;
    for v in &mut t.allocated {
        *v = v.wrapping_add(t.baseline_allocated);
    }
    for v in &mut t.reserved {
        *v = v.wrapping_add(t.baseline_reserved);
    }
    t.peak = t.peak_in(0..t.len()).unwrap_or((0, t.baseline_allocated));
    t.peak_reserved = t.reserved.iter().enumerate().fold((0, t.baseline_reserved), |best, (i, v)| {
        if *v > best.1 || (i == 0 && *v >= best.1) { (i, *v) } else { best }
    });
    if let Some((steps, phases)) = steps::from_annotations(p, device, &times) {
        t.steps = steps;
        t.phases = phases;
        t.step_source = StepSource::Annotations;
    } else {
        t.steps = steps::from_pattern(&t.allocated);
        if !t.steps.is_empty() {
            t.step_source = StepSource::Pattern;
        }
    }
    t
}
