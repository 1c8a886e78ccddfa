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
//! repeating shape of the allocated curve (the rule is documented in `steps.rs`).

pub mod compare;
pub(crate) mod pickle;
mod replay;
mod steps;
pub mod synth;
#[cfg(test)]
mod tests;

use crate::diagnose::snapshot::{PickleError, SnapshotReport};
use serde::Serialize;
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

impl TracePhase {
    /// Name for display.
    pub const fn label(self) -> &'static str {
        match self {
            Self::Forward => "forward",
            Self::Backward => "backward",
            Self::Optimizer => "optimizer step",
        }
    }
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
    Ok(replay::trace_from(&pickle::parse(bytes)?, None))
}

/// Reads one device's trace (`device_traces[device]`; empty if there is no such device).
pub fn read_trace_device(bytes: &[u8], device: usize) -> Result<MemTrace, PickleError> {
    Ok(replay::trace_from(&pickle::parse(bytes)?, Some(device)))
}

/// Reads the fragmentation view and the busiest device's trace in one parse.
pub fn read_snapshot_and_trace(bytes: &[u8]) -> Result<(SnapshotReport, MemTrace), PickleError> {
    let p = pickle::parse(bytes)?;
    Ok((crate::diagnose::snapshot::report_from(&p), replay::trace_from(&p, None)))
}
