//! Fitting a job to a GPU: the largest micro-batch, and what-if sweeps over one knob.

use crate::estimate::{Checkpointing, Scenario, estimate};

/// Largest batch searched.
pub const MAX_BATCH: u64 = 1 << 20;

/// Largest micro-batch whose `total` (peak + overhead) fits `capacity_bytes`, or `None` when even
/// batch 1 does not fit. Exact: memory never decreases with the batch size (a tested property), so
/// an exponential then binary search equals a scan from 1 upwards.
pub fn max_batch(sc: &Scenario, capacity_bytes: u64) -> Option<u64> {
    let fits = |b: u64| {
        let mut s = sc.clone();
        s.batch = b;
        estimate(&s).is_ok_and(|e| e.total <= capacity_bytes)
    };
    if !fits(1) {
        return None;
    }
    let mut lo = 1; // fits
    let mut hi = 2;
    while hi <= MAX_BATCH && fits(hi) {
        lo = hi;
        hi *= 2;
    }
    if hi > MAX_BATCH {
        return Some(lo);
    }
    // lo fits, hi does not
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

/// Which knob a sweep moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Knob {
    /// Micro-batch size.
    Batch,
    /// Sequence length.
    Seq,
    /// `checkpoint_sequential` segment count.
    Segments,
}

/// `(value, total bytes)` over `values`, skipping values the scenario rejects.
pub fn sweep(sc: &Scenario, knob: Knob, values: impl IntoIterator<Item = u64>) -> Vec<(u64, u64)> {
    let mut s = sc.clone();
    values
        .into_iter()
        .filter_map(|v| {
            match knob {
                Knob::Batch => s.batch = v,
                Knob::Seq => s.seq = v,
                Knob::Segments => s.checkpointing = Checkpointing::Segments(v),
            }
            estimate(&s).ok().map(|e| (v, e.peak_allocated))
        })
        .collect()
}
