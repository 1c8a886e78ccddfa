//! Step and phase boundaries of a trace.
//!
//! **From annotations.** With `_record_memory_history(..., global_record_annotations=True)`
//! (torch ≥ 2.5) the snapshot carries `external_annotations`: one dict per `record_function`
//! start or end, `{"name", "stage": "START"|"END", "device", "time_us"}`. Events are placed
//! among them by `time_us`. A name starting with `ProfilerStep#` (what `torch.profiler` and
//! `record_function("ProfilerStep#N")` record) marks a step; names containing `backward`,
//! `optimizer` / `Optimizer.` or `forward` (checked in that order, case-insensitive) mark phases;
//! an event's phase is the innermost open phase annotation. Without step markers, a step begins
//! at each start of a forward phase.
//!
//! **From the curve** (no usable annotations). A training step allocates activations in forward,
//! frees them in backward and returns, after the optimizer step, to the level it started from.
//! Let `lo` and `hi` be the minimum and maximum of allocated bytes over the second half of the
//! events (the settled steps), `low = lo + 10 % (hi − lo)` and `high = lo + 50 % (hi − lo)`.
//! The curve is cut into excursions above `low` separated by runs at or below it; an excursion
//! that reaches `high` is a step's body. A step runs from the first event of its body to the
//! first event of the next body; the last step ends at the last event and counts if the curve
//! came back to `low` after its body, or if it is at least 3/4 as long as the step before it (a
//! snapshot taken right after an optimizer step, gradients still live, cuts the last body). A body starts a step only if the low events before it
//! (since the previous body) reached down to within 10 % of the range of `lo`: one at event 0
//! (cut by the trace's start) or one rising from a warm-up level below the floor (the first step,
//! before the optimizer state exists) is not a step. Nothing is found when `hi − lo` is under 1 %
//! of `hi`.

use super::pickle::{Parsed, V};
use super::{PhaseSpan, TracePhase};
use std::ops::Range;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mark {
    Step,
    Phase(TracePhase),
    Other,
}

fn classify(name: &str) -> Mark {
    let l = name.to_ascii_lowercase();
    if l.starts_with("profilerstep") {
        Mark::Step
    } else if l.contains("backward") {
        Mark::Phase(TracePhase::Backward)
    } else if l.contains("optimizer") {
        Mark::Phase(TracePhase::Optimizer)
    } else if l.contains("forward") {
        Mark::Phase(TracePhase::Forward)
    } else {
        Mark::Other
    }
}

struct Ann<'a> {
    time: i64,
    name: &'a str,
    start: bool,
}

/// Steps and phase spans from `external_annotations`; None when there are none usable (no
/// annotations for this device, no times on the events, or no step or phase names).
pub(super) fn from_annotations(
    p: &Parsed<'_>,
    device: usize,
    times: &[i64],
) -> Option<(Vec<Range<usize>>, Vec<PhaseSpan>)> {
    let list = p.get(p.root, "external_annotations").or_else(|| p.get(p.root, "annotations"))?;
    let mut anns: Vec<Ann<'_>> = p
        .list(list)
        .iter()
        .filter(|a| p.get_u64(**a, "device").is_none_or(|d| d == device as u64))
        .filter_map(|a| {
            let stage = p.get_str(*a, "stage")?.to_ascii_uppercase();
            let start = match stage.as_str() {
                "START" | "BEGIN" => true,
                "END" => false,
                _ => return None,
            };
            let time = p.get(*a, "time_us").and_then(V::as_i64)?;
            Some(Ann { time, name: p.get_str(*a, "name")?, start })
        })
        .filter(|a| classify(a.name) != Mark::Other)
        .collect();
    if anns.is_empty() || times.iter().all(|t| *t == 0) {
        return None;
    }
    anns.sort_by_key(|a| a.time); // stable: START/END order at one instant kept
    let mut open: Vec<(&str, Mark)> = Vec::new();
    let mut step_starts: Vec<usize> = Vec::new();
    let mut steps: Vec<Range<usize>> = Vec::new();
    let mut phase_of: Vec<Option<TracePhase>> = Vec::with_capacity(times.len());
    let mut k = 0;
    for (i, t) in times.iter().enumerate() {
        while k < anns.len() && anns[k].time <= *t {
            let a = &anns[k];
            let mark = classify(a.name);
            if a.start {
                open.push((a.name, mark));
                if mark == Mark::Step {
                    step_starts.push(i);
                }
            } else if let Some(j) = open.iter().rposition(|o| o.0 == a.name) {
                open.remove(j);
                if mark == Mark::Step
                    && let Some(s) = step_starts.pop()
                {
                    steps.push(s..i);
                }
            }
            k += 1;
        }
        phase_of.push(open.iter().rev().find_map(|o| match o.1 {
            Mark::Phase(ph) => Some(ph),
            _ => None,
        }));
    }
    // annotations ending after the last event close at the end
    while k < anns.len() {
        let a = &anns[k];
        if !a.start
            && classify(a.name) == Mark::Step
            && open.iter().any(|o| o.0 == a.name)
            && let Some(s) = step_starts.pop()
        {
            steps.push(s..times.len());
        }
        k += 1;
    }
    let mut phases: Vec<PhaseSpan> = Vec::new();
    for (i, ph) in phase_of.iter().enumerate() {
        let Some(ph) = ph else { continue };
        match phases.last_mut() {
            Some(last) if last.phase == *ph && last.events.end == i => last.events.end = i + 1,
            _ => phases.push(PhaseSpan { phase: *ph, events: i..i + 1 }),
        }
    }
    if steps.is_empty() {
        // a step begins at each start of a forward phase
        let starts: Vec<usize> = phases
            .iter()
            .enumerate()
            .filter(|(j, s)| {
                s.phase == TracePhase::Forward && (*j == 0 || phases[*j - 1].phase != TracePhase::Forward)
            })
            .map(|(_, s)| s.events.start)
            .collect();
        for (j, s) in starts.iter().enumerate() {
            steps.push(*s..starts.get(j + 1).copied().unwrap_or(times.len()));
        }
    }
    steps.sort_by_key(|r| r.start);
    steps.retain(|r| !r.is_empty());
    if steps.is_empty() && phases.is_empty() {
        return None;
    }
    Some((steps, phases))
}

/// Steps from the repeating shape of the allocated curve (rule in the module docs).
pub(super) fn from_pattern(a: &[u64]) -> Vec<Range<usize>> {
    let n = a.len();
    if n < 4 {
        return Vec::new();
    }
    let tail = &a[n / 2..];
    let lo = tail.iter().copied().min().unwrap_or(0);
    let hi = tail.iter().copied().max().unwrap_or(0);
    let range = hi - lo;
    if range == 0 || range < hi / 100 {
        return Vec::new();
    }
    let low = lo + range / 10;
    let high = lo + range / 2;
    // bodies: (first event of an excursion above `low` that reaches `high`, returned to `low`
    // after it, lowest point of the low events since the previous body)
    let mut bodies: Vec<(usize, bool, Option<u64>)> = Vec::new();
    let mut start: Option<usize> = None;
    let mut reached = false;
    let mut run_min: Option<u64> = None;
    let mut floor_before: Option<u64> = None;
    for (i, v) in a.iter().enumerate() {
        if *v > low {
            if start.is_none() {
                start = Some(i);
                reached = false;
                floor_before = run_min;
            }
            reached |= *v >= high;
        } else {
            if let Some(s) = start.take()
                && reached
            {
                bodies.push((s, true, floor_before));
                run_min = None;
            }
            run_min = Some(run_min.map_or(*v, |m| m.min(*v)));
        }
    }
    if let Some(s) = start
        && reached
    {
        bodies.push((s, false, floor_before));
    }
    let mut steps = Vec::new();
    for (j, (s, closed, floor)) in bodies.iter().enumerate() {
        // a step starts from the settled floor: not at event 0, not from a warm-up level below it
        if !floor.is_some_and(|m| m + range / 10 >= lo) {
            continue;
        }
        match bodies.get(j + 1) {
            Some((next, _, _)) => steps.push(*s..*next),
            None if *closed => steps.push(*s..n),
            // cut by the snapshot (often right after the optimizer step, gradients still live)
            None => {
                if steps.last().is_some_and(|prev: &Range<usize>| 4 * (n - s) >= 3 * prev.len()) {
                    steps.push(*s..n);
                }
            }
        }
    }
    steps
}
