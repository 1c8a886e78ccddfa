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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Knob {
    /// Micro-batch size.
    Batch,
    /// Sequence length.
    Seq,
    /// `checkpoint_sequential` segment count.
    Segments,
    /// Data-parallel GPU count (with the scenario's ZeRO stage).
    Gpus,
}

impl Knob {
    /// All knobs.
    pub const ALL: [Self; 4] = [Self::Batch, Self::Seq, Self::Segments, Self::Gpus];

    /// Sets this knob on a scenario.
    pub fn apply(self, sc: &mut Scenario, v: u64) {
        match self {
            Self::Batch => sc.batch = v,
            Self::Seq => sc.seq = v,
            Self::Segments => sc.checkpointing = Checkpointing::Segments(v),
            Self::Gpus => sc.parallel.dp = v,
        }
    }

    /// Values a what-if curve samples for a scenario: log-spaced for batch and sequence, every
    /// segment count up to the number of blocks, powers of two for GPUs.
    pub fn values(self, sc: &Scenario) -> Vec<u64> {
        let log_spaced = |lo: u64, hi: u64, n: u32| {
            let mut v: Vec<u64> = (0..=n)
                .map(|i| {
                    let f = (lo as f64).ln() + (hi as f64 / lo as f64).ln() * f64::from(i) / f64::from(n);
                    f.exp().round() as u64
                })
                .collect();
            v.dedup();
            v
        };
        match self {
            Self::Batch => log_spaced(1, 4096, 64),
            Self::Seq => {
                let max = sc
                    .model
                    .transformer()
                    .map(|t| if t.max_position_embeddings > 0 { t.max_position_embeddings } else { 131072 })
                    .unwrap_or(4096);
                log_spaced(16.min(max), max, 64)
            }
            Self::Segments => (1..=sc.model.transformer().map_or(1, |t| t.num_layers)).collect(),
            Self::Gpus => (0..=10).map(|i| 1u64 << i).collect(),
        }
    }
}

/// One point of a what-if curve.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SweepPoint {
    /// Knob value.
    pub x: u64,
    /// Peak allocated, bytes.
    pub peak: u64,
    /// Peak plus overhead, bytes (compare with the GPU's capacity).
    pub total: u64,
    /// The largest allocated bytes of each phase of the step.
    pub phases: crate::estimate::step::PhasePeaks,
    /// Saved activations at the end of the forward pass, bytes.
    pub activations: u64,
}

/// Estimates over `values` of one knob, skipping values the scenario rejects.
pub fn sweep(sc: &Scenario, knob: Knob, values: impl IntoIterator<Item = u64>) -> Vec<SweepPoint> {
    let mut s = sc.clone();
    values
        .into_iter()
        .filter_map(|v| {
            knob.apply(&mut s, v);
            estimate(&s).ok().map(|e| SweepPoint {
                x: v,
                peak: e.peak_allocated,
                total: e.total,
                phases: e.phase_peaks,
                activations: e.activations,
            })
        })
        .collect()
}
