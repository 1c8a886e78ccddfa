//! Measured snapshots laid over the predicted timeline: `torch.cuda.memory._dump_snapshot()`
//! pickles read on the "vramscope-snapshot" thread (a large trace takes seconds to parse; the
//! window keeps drawing), and the steady-state step of each aligned with the predicted step.
//! Runtime only (not persisted).

use crate::diagnose::memtrace::{MemTrace, TracePhase, decimate, read_trace};
use crate::estimate::Phase;
use crate::estimate::step::Timeline;
use std::ops::Range;
use std::sync::mpsc;

/// Snapshots shown at once (one, or two to compare).
pub const MAX_OVERLAYS: usize = 2;

/// Columns a measured step is decimated to for drawing.
const COLUMNS: usize = 900;

/// One loaded snapshot.
pub struct Overlay {
    /// File name.
    pub name: String,
    /// The replayed trace.
    pub trace: MemTrace,
    /// The events of the step drawn (the last complete one, else the whole trace).
    pub step: Range<usize>,
}

/// A snapshot being read.
struct Pending {
    name: String,
    bytes: u64,
    rx: mpsc::Receiver<Result<MemTrace, String>>,
}

/// The Timeline tab's measured overlays.
#[derive(Default)]
pub struct Snapshots {
    /// Loaded snapshots, oldest first.
    pub loaded: Vec<Overlay>,
    pending: Option<Pending>,
    /// The last problem, in plain words.
    pub problem: Option<String>,
}

impl Snapshots {
    /// Starts reading `path` on a background thread (the oldest overlay makes room).
    pub fn open(&mut self, path: &str) {
        let p = std::path::PathBuf::from(path.trim());
        let name = p.file_name().map_or_else(|| path.to_owned(), |n| n.to_string_lossy().into_owned());
        let bytes = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
        let (tx, rx) = mpsc::channel();
        let spawned = std::thread::Builder::new().name("vramscope-snapshot".into()).spawn(move || {
            let limit = crate::diagnose::snapshot::MAX_SNAPSHOT_BYTES as u64;
            let read = std::fs::File::open(&p).and_then(|f| {
                let mut buf = Vec::new();
                std::io::Read::read_to_end(&mut std::io::Read::take(f, limit + 1), &mut buf).map(|_| buf)
            });
            let result = match read {
                Err(e) => Err(format!("{}: {e}", p.display())),
                Ok(b) if b.len() as u64 > limit => {
                    Err(format!("{}: larger than {} MiB", p.display(), limit >> 20))
                }
                Ok(b) => read_trace(&b).map_err(|e| format!("{}: {e}", p.display())),
            };
            let _ = tx.send(result);
        });
        match spawned {
            Ok(_) => {
                self.problem = None;
                self.pending = Some(Pending { name, bytes, rx });
            }
            Err(e) => self.problem = Some(format!("could not start the reader thread: {e}")),
        }
    }

    /// Takes a finished read, if any; true while one is still running.
    pub fn poll(&mut self) -> bool {
        let Some(p) = &self.pending else { return false };
        match p.rx.try_recv() {
            Ok(Ok(trace)) => {
                if trace.is_empty() {
                    self.problem = Some(format!(
                        "{}: the snapshot has no allocation trace (record it with torch.cuda.memory._record_memory_history())",
                        p.name
                    ));
                } else {
                    let step = trace.steps.last().cloned().unwrap_or(0..trace.len());
                    if self.loaded.len() >= MAX_OVERLAYS {
                        self.loaded.remove(0);
                    }
                    self.loaded.push(Overlay { name: p.name.clone(), trace, step });
                }
                self.pending = None;
                false
            }
            Ok(Err(e)) => {
                self.problem = Some(e);
                self.pending = None;
                false
            }
            Err(mpsc::TryRecvError::Empty) => true,
            Err(mpsc::TryRecvError::Disconnected) => {
                self.problem = Some(format!("{}: the reader stopped", p.name));
                self.pending = None;
                false
            }
        }
    }

    /// "reading trace.pickle (39 MiB)…" while a read runs.
    pub fn pending_text(&self) -> Option<String> {
        self.pending
            .as_ref()
            .map(|p| format!("{} ({:.0} MiB)…", p.name, p.bytes as f64 / (1u64 << 20) as f64))
    }

    /// Forgets every overlay.
    pub fn clear(&mut self) {
        self.loaded.clear();
        self.problem = None;
    }
}

fn to_phase(p: TracePhase) -> Phase {
    match p {
        TracePhase::Forward => Phase::Forward,
        TracePhase::Backward => Phase::Backward,
        TracePhase::Optimizer => Phase::OptimizerStep,
    }
}

/// The measured step as (x, bytes) points on the predicted timeline's x axis (`starts`: where
/// each predicted event begins, one more at the end). With phase annotations each measured phase
/// is stretched over the predicted one; otherwise the step spans the whole predicted step.
pub fn aligned(o: &Overlay, tl: &Timeline, starts: &[f64]) -> Vec<[f64; 2]> {
    let end = starts.last().copied().unwrap_or(0.0);
    let mut pieces: Vec<(Range<usize>, f64, f64)> = Vec::new();
    let spans = tl.phase_spans();
    let inside: Vec<_> = o
        .trace
        .phases
        .iter()
        .filter(|s| s.events.start >= o.step.start && s.events.end <= o.step.end && !s.events.is_empty())
        .collect();
    for s in &inside {
        if let Some((_, r)) = spans.iter().find(|(p, _)| *p == to_phase(s.phase)) {
            pieces.push((s.events.clone(), starts[r.start], starts[r.end]));
        }
    }
    if pieces.is_empty() {
        pieces.push((o.step.clone(), 0.0, end));
    }
    let total: f64 = pieces.iter().map(|p| p.2 - p.1).sum::<f64>().max(1e-9);
    let mut out = Vec::new();
    for (r, x0, x1) in pieces {
        let vals = &o.trace.allocated[r.start.min(o.trace.len())..r.end.min(o.trace.len())];
        let cols = ((COLUMNS as f64 * (x1 - x0) / total).round() as usize).max(2);
        let d = decimate(vals, cols);
        let n = d.len().max(1) as f64;
        for (i, (lo, hi)) in d.iter().enumerate() {
            let x = x0 + (x1 - x0) * (i as f64 + 0.5) / n;
            // min and max of the column: spikes stay visible after decimation
            out.push([x, *lo as f64]);
            out.push([x, *hi as f64]);
        }
    }
    out
}

/// Measured peak of the drawn step per phase of the prediction (None where the trace has no
/// annotations for that phase).
pub fn phase_peaks(o: &Overlay) -> Vec<(Phase, u64)> {
    o.trace.phase_peaks().into_iter().map(|p| (to_phase(p.phase), p.bytes)).collect()
}

/// Peak of the drawn step.
pub fn step_peak(o: &Overlay) -> u64 {
    o.trace.peak_in(o.step.clone()).map_or(o.trace.peak.1, |p| p.1)
}
