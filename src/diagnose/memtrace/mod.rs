//! Allocation traces in PyTorch memory snapshots (`device_traces` of
//! `torch.cuda.memory._snapshot()`, recorded after `torch.cuda.memory._record_memory_history()`),
//! replayed the way PyTorch's memory_viz does:
//!
//! - `alloc` and `free_completed` are matched by address; a free's bytes are those of its alloc.
//! - A `free_completed` with no earlier `alloc`, and a block still `active_allocated` in
//!   `segments` whose address has no outstanding `alloc`, were allocated before the trace began:
//!   their bytes are the baseline present from the first event on.
//! - Reserved bytes move with `segment_alloc`/`segment_map` (+) and `segment_free`/`segment_unmap`
//!   (−); the segments present at snapshot time fix the level at the end, and so the baseline.
//!
//! The x axis is the event index: one event per entry that changes allocated or reserved bytes
//! (`free_requested`, `snapshot` and `oom` are not events; OOMs are listed beside). Steps and
//! phases come from `external_annotations` when the snapshot has them, else steps from the
//! repeating shape of the allocated curve (see [`steps`]).

pub mod compare;
pub(crate) mod pickle;
mod steps;
pub mod synth;
#[cfg(test)]
mod tests;

use crate::diagnose::snapshot::{PickleError, SnapshotReport};
use pickle::{Action, Parsed, V};
use serde::Serialize;
use std::collections::HashMap;
use std::ops::Range;

pub use compare::{Divergence, TraceComparison, compare};

/// A training phase, from annotations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TracePhase {
    /// Forward pass.
    Forward,
    /// Backward pass.
    Backward,
    /// Optimizer step (and zero_grad).
    Optimizer,
}

/// What an event did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A block was allocated.
    Alloc,
    /// A block's free completed.
    Free,
    /// The cache grew (`segment_alloc` or `segment_map`).
    SegmentAlloc,
    /// The cache shrank (`segment_free` or `segment_unmap`).
    SegmentFree,
}

/// A run of events in one phase.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PhaseSpan {
    /// Phase.
    pub phase: TracePhase,
    /// Event indices.
    pub events: Range<usize>,
}

/// Where the step boundaries came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepSource {
    /// No steps found.
    #[default]
    None,
    /// `record_function` annotations in the snapshot.
    Annotations,
    /// The repeating shape of the allocated curve.
    Pattern,
}

/// An out-of-memory entry of the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TraceOom {
    /// Events before it (it happened after event `event - 1`).
    pub event: usize,
    /// Bytes requested.
    pub requested: u64,
    /// Bytes CUDA reported free.
    pub device_free: u64,
}

/// One device's trace, replayed. Plain data (`Send`), cheap to [`decimate`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemTrace {
    /// Device index (the one with the most trace entries unless asked).
    pub device: usize,
    /// Trace entries of that device.
    pub entries: usize,
    /// Allocated bytes after each event.
    pub allocated: Vec<u64>,
    /// Reserved bytes after each event.
    pub reserved: Vec<u64>,
    /// What each event did.
    pub kind: Vec<EventKind>,
    /// Allocated bytes before the first event (blocks from before the trace).
    pub baseline_allocated: u64,
    /// Reserved bytes before the first event.
    pub baseline_reserved: u64,
    /// Highest allocated: (event, bytes); (0, baseline) without events.
    pub peak: (usize, u64),
    /// Highest reserved: (event, bytes).
    pub peak_reserved: (usize, u64),
    /// Out-of-memory entries.
    pub ooms: Vec<TraceOom>,
    /// Complete steps, as event ranges.
    pub steps: Vec<Range<usize>>,
    /// Where `steps` came from.
    pub step_source: StepSource,
    /// Phase runs (only from annotations), in order.
    pub phases: Vec<PhaseSpan>,
    /// Per event: index into `frame_names` of its top Python frame, `u32::MAX` if none.
    pub frame: Vec<u32>,
    /// Distinct top-frame texts, `file.py:line:function`.
    pub frame_names: Vec<String>,
    /// Frees whose alloc came before the trace.
    pub unmatched_frees: usize,
    /// Blocks live at snapshot time with no alloc in the trace.
    pub live_before_trace: usize,
}

/// A step and its peak.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StepPeak {
    /// Event range.
    pub events: Range<usize>,
    /// Event of the peak.
    pub event: usize,
    /// Peak allocated bytes.
    pub bytes: u64,
}

/// A phase's peak over all its spans.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PhasePeak {
    /// Phase.
    pub phase: TracePhase,
    /// Event of the peak.
    pub event: usize,
    /// Peak allocated bytes.
    pub bytes: u64,
}

/// What the CLI prints of a trace (no per-event arrays).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceSummary {
    /// Device.
    pub device: usize,
    /// Trace entries.
    pub entries: usize,
    /// Events (entries that change allocated or reserved bytes).
    pub events: usize,
    /// Allocated before the first event.
    pub baseline_allocated: u64,
    /// Peak allocated.
    pub peak_allocated: u64,
    /// Its event.
    pub peak_event: usize,
    /// Its phase, where known.
    pub peak_phase: Option<TracePhase>,
    /// Its top Python frame, where recorded.
    pub peak_frame: Option<String>,
    /// Peak reserved.
    pub peak_reserved: u64,
    /// Where steps came from.
    pub step_source: StepSource,
    /// Steps with their peaks.
    pub steps: Vec<StepPeak>,
    /// Per-phase peaks (annotated snapshots).
    pub phase_peaks: Vec<PhasePeak>,
    /// OOM entries.
    pub ooms: Vec<TraceOom>,
    /// Frees with no alloc in the trace.
    pub unmatched_frees: usize,
    /// Live blocks with no alloc in the trace.
    pub live_before_trace: usize,
}

impl MemTrace {
    /// Events.
    pub fn len(&self) -> usize {
        self.allocated.len()
    }
    /// No events.
    pub fn is_empty(&self) -> bool {
        self.allocated.is_empty()
    }
    /// The phase of an event, where annotations said.
    pub fn phase_at(&self, event: usize) -> Option<TracePhase> {
        let i = self.phases.partition_point(|s| s.events.end <= event);
        self.phases.get(i).filter(|s| s.events.contains(&event)).map(|s| s.phase)
    }
    /// The top Python frame of an event's stack, where recorded.
    pub fn frame_at(&self, event: usize) -> Option<&str> {
        self.frame.get(event).and_then(|f| self.frame_names.get(*f as usize)).map(String::as_str)
    }
    /// Highest allocated in `events`: (event, bytes).
    pub fn peak_in(&self, events: Range<usize>) -> Option<(usize, u64)> {
        let start = events.start;
        let s = self.allocated.get(events)?;
        // first maximum
        s.iter().enumerate().fold(None, |best: Option<(usize, u64)>, (i, v)| match best {
            Some((_, b)) if b >= *v => best,
            _ => Some((start + i, *v)),
        })
    }
    /// Each step's peak.
    pub fn step_peaks(&self) -> Vec<StepPeak> {
        self.steps
            .iter()
            .filter_map(|r| {
                let (event, bytes) = self.peak_in(r.clone())?;
                Some(StepPeak { events: r.clone(), event, bytes })
            })
            .collect()
    }
    /// Each phase's peak over its spans, in Forward, Backward, Optimizer order.
    pub fn phase_peaks(&self) -> Vec<PhasePeak> {
        [TracePhase::Forward, TracePhase::Backward, TracePhase::Optimizer]
            .into_iter()
            .filter_map(|phase| {
                let (event, bytes) = self
                    .phases
                    .iter()
                    .filter(|s| s.phase == phase)
                    .filter_map(|s| self.peak_in(s.events.clone()))
                    .fold(None, |best: Option<(usize, u64)>, p| match best {
                        Some(b) if b.1 >= p.1 => Some(b),
                        _ => Some(p),
                    })?;
                Some(PhasePeak { phase, event, bytes })
            })
            .collect()
    }
    /// The printable summary.
    pub fn summary(&self) -> TraceSummary {
        TraceSummary {
            device: self.device,
            entries: self.entries,
            events: self.len(),
            baseline_allocated: self.baseline_allocated,
            peak_allocated: self.peak.1,
            peak_event: self.peak.0,
            peak_phase: self.phase_at(self.peak.0),
            peak_frame: self.frame_at(self.peak.0).map(str::to_owned),
            peak_reserved: self.peak_reserved.1,
            step_source: self.step_source,
            steps: self.step_peaks(),
            phase_peaks: self.phase_peaks(),
            ooms: self.ooms.clone(),
            unmatched_frees: self.unmatched_frees,
            live_before_trace: self.live_before_trace,
        }
    }
}

/// Min and max of each of `columns` equal slices of `values` (fewer when there are fewer values):
/// what a plot needs to draw millions of events in a few thousand pixels without losing spikes.
/// One pass, O(n).
pub fn decimate(values: &[u64], columns: usize) -> Vec<(u64, u64)> {
    let n = values.len();
    let cols = columns.min(n);
    let mut out = Vec::with_capacity(cols);
    for c in 0..cols {
        // u128: n * c cannot overflow
        let a = (n as u128 * c as u128 / cols as u128) as usize;
        let b = (n as u128 * (c as u128 + 1) / cols as u128) as usize;
        let s = &values[a..b.max(a + 1).min(n)];
        let (mut lo, mut hi) = (u64::MAX, 0);
        for v in s {
            lo = lo.min(*v);
            hi = hi.max(*v);
        }
        out.push((lo, hi));
    }
    out
}

/// Reads the busiest device's trace from a snapshot pickle.
pub fn read_trace(bytes: &[u8]) -> Result<MemTrace, PickleError> {
    Ok(trace_from(&pickle::parse(bytes)?, None))
}

/// Reads one device's trace (`device_traces[device]`; empty if there is no such device).
pub fn read_trace_device(bytes: &[u8], device: usize) -> Result<MemTrace, PickleError> {
    Ok(trace_from(&pickle::parse(bytes)?, Some(device)))
}

/// Reads the fragmentation view and the busiest device's trace in one parse.
pub fn read_snapshot_and_trace(bytes: &[u8]) -> Result<(SnapshotReport, MemTrace), PickleError> {
    let p = pickle::parse(bytes)?;
    Ok((crate::diagnose::snapshot::report_from(&p), trace_from(&p, None)))
}

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
