//! Two traces side by side (e.g. before and after turning on activation checkpointing): their
//! peaks, and the difference of their allocated curves over one step, aligned at the step's start
//! and resampled to a common length.

use super::{MemTrace, TracePhase};
use serde::Serialize;
use std::ops::Range;

/// Where two aligned steps differ most.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Divergence {
    /// Sample index (0..samples).
    pub sample: usize,
    /// Event in the first trace.
    pub event_a: usize,
    /// Event in the second trace.
    pub event_b: usize,
    /// Allocated bytes there in the first trace.
    pub allocated_a: u64,
    /// Allocated bytes there in the second trace.
    pub allocated_b: u64,
    /// `allocated_b - allocated_a`.
    pub delta: i64,
    /// Phase there in the first trace, where known.
    pub phase_a: Option<TracePhase>,
    /// Phase there in the second trace, where known.
    pub phase_b: Option<TracePhase>,
    /// Top Python frame of that event in the first trace.
    pub frame_a: Option<String>,
    /// Top Python frame of that event in the second trace.
    pub frame_b: Option<String>,
}

/// Two traces compared.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TraceComparison {
    /// Peak allocated of the first trace.
    pub peak_a: u64,
    /// Peak allocated of the second trace.
    pub peak_b: u64,
    /// `peak_b - peak_a`.
    pub peak_delta: i64,
    /// Peak reserved of the first trace.
    pub peak_reserved_a: u64,
    /// Peak reserved of the second trace.
    pub peak_reserved_b: u64,
    /// The events of the first trace compared: its last complete step, else all events.
    pub step_a: Range<usize>,
    /// The events of the second trace compared.
    pub step_b: Range<usize>,
    /// Peak allocated within `step_a`.
    pub step_peak_a: u64,
    /// Peak allocated within `step_b`.
    pub step_peak_b: u64,
    /// Per sample: the second's allocated minus the first's (each the maximum over the sample's
    /// slice of its step).
    pub diff: Vec<i64>,
    /// The sample of the largest |difference|; None when a trace has no events.
    pub most_different: Option<Divergence>,
}

fn compared_range(t: &MemTrace) -> Range<usize> {
    t.steps.last().cloned().unwrap_or(0..t.len())
}

/// (event of the maximum, maximum) of each of `samples` equal slices of `range`.
fn resample(t: &MemTrace, range: &Range<usize>, samples: usize) -> Vec<(usize, u64)> {
    let len = range.len();
    if len == 0 {
        return Vec::new();
    }
    (0..samples)
        .map(|j| {
            let a = range.start + (len as u128 * j as u128 / samples as u128) as usize;
            let b = range.start + (len as u128 * (j as u128 + 1) / samples as u128) as usize;
            t.peak_in(a..b.max(a + 1)).unwrap_or((a, 0))
        })
        .collect()
}

fn signed(b: u64, a: u64) -> i64 {
    (i128::from(b) - i128::from(a)).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// Compares `a` and `b` over their last complete steps (whole traces when no steps were found),
/// resampled to `samples` points (at least 1).
pub fn compare(a: &MemTrace, b: &MemTrace, samples: usize) -> TraceComparison {
    let samples = samples.max(1);
    let (ra, rb) = (compared_range(a), compared_range(b));
    let (sa, sb) = (resample(a, &ra, samples), resample(b, &rb, samples));
    let diff: Vec<i64> = if sa.is_empty() || sb.is_empty() {
        Vec::new()
    } else {
        sa.iter().zip(&sb).map(|(x, y)| signed(y.1, x.1)).collect()
    };
    let most_different =
        diff.iter().enumerate().max_by_key(|(j, d)| (d.unsigned_abs(), std::cmp::Reverse(*j))).map(
            |(j, d)| {
                let ((ea, va), (eb, vb)) = (sa[j], sb[j]);
                Divergence {
                    sample: j,
                    event_a: ea,
                    event_b: eb,
                    allocated_a: va,
                    allocated_b: vb,
                    delta: *d,
                    phase_a: a.phase_at(ea),
                    phase_b: b.phase_at(eb),
                    frame_a: a.frame_at(ea).map(str::to_owned),
                    frame_b: b.frame_at(eb).map(str::to_owned),
                }
            },
        );
    TraceComparison {
        peak_a: a.peak.1,
        peak_b: b.peak.1,
        peak_delta: signed(b.peak.1, a.peak.1),
        peak_reserved_a: a.peak_reserved.1,
        peak_reserved_b: b.peak_reserved.1,
        step_peak_a: a.peak_in(ra.clone()).map_or(a.baseline_allocated, |p| p.1),
        step_peak_b: b.peak_in(rb.clone()).map_or(b.baseline_allocated, |p| p.1),
        step_a: ra,
        step_b: rb,
        diff,
        most_different,
    }
}
