//! Fitting a job to a GPU: the largest micro-batch, and what-if sweeps over one knob.

use crate::estimate::reserved::Reserved;
use crate::estimate::{Checkpointing, Estimate, Scenario, ScenarioError, estimate, estimate_reserved};

/// Largest batch searched.
pub const MAX_BATCH: u64 = 1 << 20;

/// What `vramscope estimate --gpu` decides for a scenario on a card: the estimate with the caching
/// allocator replayed over the step on that card (or, when the scenario's reserve is a flat
/// fraction — a calibration profile or `--reserve-frac` — the estimate with that reserve), and
/// whether the step fits: its total within the card and no request the allocator could not serve.
///
/// Everything that advises (plan, options, roadmap, the GUI's headline) decides "fits" with this
/// one function, so that each of its numbers is the one `estimate` prints for the same settings.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// The estimate (`total` is what `estimate` prints).
    pub estimate: Estimate,
    /// The allocator replay, when the allocator was replayed.
    pub replay: Option<Reserved>,
    /// The card's memory, bytes.
    pub capacity: u64,
    /// Does the step fit?
    pub fits: bool,
}

impl Verdict {
    /// Capacity minus total, bytes (negative: short by).
    pub fn headroom(&self) -> i64 {
        self.capacity as i64 - self.estimate.total as i64
    }
}

/// The [`Verdict`] of `sc` on a card of `capacity_bytes`.
pub fn verdict(sc: &Scenario, capacity_bytes: u64) -> Result<Verdict, ScenarioError> {
    if sc.overhead.flat_reserve {
        let e = estimate(sc)?;
        return Ok(Verdict {
            fits: e.total <= capacity_bytes,
            estimate: e,
            replay: None,
            capacity: capacity_bytes,
        });
    }
    let (e, r) = estimate_reserved(sc, Some(capacity_bytes))?;
    Ok(Verdict {
        fits: e.total <= capacity_bytes && r.ooms == 0,
        estimate: e,
        replay: Some(r),
        capacity: capacity_bytes,
    })
}

/// Does `sc` fit a card of `capacity_bytes` ([`verdict`]'s answer; an invalid scenario does not)?
pub fn fits(sc: &Scenario, capacity_bytes: u64) -> bool {
    if sc.overhead.flat_reserve {
        return verdict(sc, capacity_bytes).is_ok_and(|v| v.fits);
    }
    // the verdict's answer without its second replay (a step that does not fit is replayed
    // again for what it needs, which this answer does not use)
    crate::estimate::replay_fits(sc, capacity_bytes)
        .is_ok_and(|(e, r)| e.total <= capacity_bytes && r.ooms == 0)
}

/// Largest micro-batch that [`fits`] `capacity_bytes`, or `None` when even batch 1 does not.
///
/// The flat-reserve estimate (a few µs) finds a first guess; the allocator replay then decides,
/// galloping up or down from the guess and bisecting, so the answer is the replay's — the batch
/// `vramscope estimate` calls the largest that fits — at a handful of replays. Memory never
/// decreases with the batch (a tested property of the estimate); the replay's fragmentation near
/// the card can, so the answer is also checked downwards: every smaller batch fits.
pub fn max_batch(sc: &Scenario, capacity_bytes: u64) -> Option<u64> {
    largest(sc, capacity_bytes, Knob::Batch, MAX_BATCH)
}

/// The longest sequence that [`fits`] `capacity_bytes` at the scenario's micro-batch, up to the
/// model's context length (`max_position_embeddings`; 1,048,576 where the config has none), or
/// `None` when not even one token does. Found as [`max_batch`] finds the batch. A vision model's
/// is the largest square image side, in whole patches.
pub fn max_seq(sc: &Scenario, capacity_bytes: u64) -> Option<u64> {
    if sc.model.traced().is_some() {
        // a traced model's dims are its own: no sequence to search
        return None;
    }
    let x = largest(sc, capacity_bytes, Knob::Seq, seq_limit(sc))?;
    match (sc.model.patches(), sc.model.min_image_side()) {
        // whole patches, unless that falls under the smallest side the model runs (Swin-B's
        // 193 px: its sides from 193 to 223 are all runs of a 7×7 last stage)
        (Some(p), Some(min)) => Some(Some(x / p.patch * p.patch).filter(|&r| r >= min).unwrap_or(x.max(min))),
        _ => Some(x),
    }
}

/// The largest image side (pixels) the sequence knob of a vision model reaches.
pub const MAX_IMAGE_KNOB: u64 = 4096;

/// The longest sequence [`max_seq`] searches: the model's context length; a vision model's
/// largest image side ([`MAX_IMAGE_KNOB`]).
pub fn seq_limit(sc: &Scenario) -> u64 {
    if sc.model.patches().is_some() {
        return MAX_IMAGE_KNOB;
    }
    // a vision-language model's knob is its text, beside the images' tokens
    sc.model
        .transformer()
        .map(|t| t.max_position_embeddings)
        .filter(|&m| m > 0)
        .unwrap_or(1 << 20)
        .min(1 << 24)
        .saturating_sub(sc.image_tokens())
        .max(1)
}

/// The largest value of `knob` up to `max` at which the scenario [`fits`] and at every value below
/// (the replay's verdict), or `None` when it does not fit at 1.
fn largest(sc: &Scenario, capacity_bytes: u64, knob: Knob, max: u64) -> Option<u64> {
    let guess = largest_flat(sc, capacity_bytes, knob, max).unwrap_or(1);
    let mut s = sc.clone();
    let mut fits_at = |x: u64| {
        knob.apply(&mut s, x);
        fits(&s, capacity_bytes)
    };
    // lo fits, hi does not (hi may be max + 1)
    let (mut lo, mut hi);
    if fits_at(guess) {
        lo = guess;
        let mut step = 1;
        loop {
            let next = lo.saturating_add(step);
            if next > max {
                hi = max + 1;
                break;
            }
            if !fits_at(next) {
                hi = next;
                break;
            }
            lo = next;
            step *= 2;
        }
    } else {
        hi = guess;
        let mut step = 1;
        loop {
            if hi == 1 {
                return None;
            }
            let next = hi.saturating_sub(step).max(1);
            if fits_at(next) {
                lo = next;
                break;
            }
            hi = next;
            step *= 2;
        }
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits_at(mid) { lo = mid } else { hi = mid }
    }
    walk_down(sc, capacity_bytes, knob, lo.min(max))
}

/// Near the card the replay's fragmentation is not monotone (a value can fail where a larger one
/// fits, the allocator releasing its cache and retrying): the values under `from` (which fits)
/// are walked down until one fits without the allocator ever releasing its cache (it never came
/// near the card, nor will a smaller value). Micro-batches are walked one by one; sequence lengths
/// (thousands of values near the card) at gaps that double, 1, 2, 4, … tokens below. Where a value
/// on the way does not fit, the answer is below it: the largest value between the first that fits
/// under it and it, bisected, so the answer fits and one more does not (both replayed).
fn walk_down(sc: &Scenario, capacity_bytes: u64, knob: Knob, from: u64) -> Option<u64> {
    let mut s = sc.clone();
    // the lowest value seen not to fit, and the highest seen to fit under it
    let (mut bad, mut good): (Option<u64>, Option<u64>) = (None, None);
    let mut x = from;
    let mut gap = 1;
    while x > 1 {
        x = x.saturating_sub(gap).max(1);
        if knob == Knob::Seq {
            gap *= 2;
        }
        knob.apply(&mut s, x);
        match verdict(&s, capacity_bytes) {
            Ok(v) if v.fits => {
                if bad.is_some() && good.is_none() {
                    good = Some(x);
                }
                if v.replay.is_none_or(|r| r.alloc_retries == 0) {
                    break;
                }
            }
            _ => (bad, good) = (Some(x), None),
        }
    }
    let Some(mut hi) = bad else { return Some(from) };
    let mut lo = good?;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        knob.apply(&mut s, mid);
        if fits(&s, capacity_bytes) { lo = mid } else { hi = mid }
    }
    Some(lo)
}

/// Largest micro-batch whose flat-reserve `total` (peak + overhead, [`estimate`]) fits
/// `capacity_bytes`, or `None` when even batch 1 does not fit. Exact for that estimate: memory
/// never decreases with the batch size (a tested property), so an exponential then binary search
/// equals a scan from 1 upwards. [`max_batch`] starts from it.
pub fn max_batch_flat(sc: &Scenario, capacity_bytes: u64) -> Option<u64> {
    largest_flat(sc, capacity_bytes, Knob::Batch, MAX_BATCH)
}

fn largest_flat(sc: &Scenario, capacity_bytes: u64, knob: Knob, max: u64) -> Option<u64> {
    let mut s = sc.clone();
    let mut fits = |x: u64| {
        knob.apply(&mut s, x);
        estimate(&s).is_ok_and(|e| e.total <= capacity_bytes)
    };
    if !fits(1) {
        return None;
    }
    let mut lo = 1; // fits
    let mut hi = 2;
    while hi <= max && fits(hi) {
        lo = hi;
        hi *= 2;
    }
    if hi > max {
        hi = max + 1;
        if fits(max) {
            return Some(max);
        }
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
            // a vision model's sequence is its image's tokens: the knob is the image side
            Self::Seq => match sc.model.min_image_side() {
                Some(min) => {
                    let _ = sc.set_image(crate::model::pixels::ImageSize::square(v.max(min)));
                }
                // a vision-language model's: its text, beside the images' tokens
                None => sc.seq = v + sc.image_tokens(),
            },
            Self::Segments => sc.checkpointing = Checkpointing::Segments(v),
            Self::Gpus => sc.parallel.dp = v,
        }
    }

    /// Values a what-if curve samples for a scenario: log-spaced for batch and sequence (65
    /// points), every segment count up to the number of blocks, powers of two for GPUs.
    pub fn values(self, sc: &Scenario) -> Vec<u64> {
        self.values_n(sc, 64)
    }

    /// [`Knob::values`] with `steps + 1` log-spaced points for batch and sequence (the window
    /// draws 25: each an allocator replay, about a millisecond and a half on Llama-3.1-8B).
    pub fn values_n(self, sc: &Scenario, steps: u32) -> Vec<u64> {
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
            Self::Batch => log_spaced(1, 4096, steps),
            // a traced model has no sequence and no blocks to checkpoint: its dims are its own
            Self::Seq | Self::Segments if sc.model.traced().is_some() => Vec::new(),
            Self::Seq if let Some(p) = sc.model.patches() => {
                // image sides, whole patches, the scenario's own among them
                let min = sc.model.min_image_side().unwrap_or(p.patch);
                let mut v: Vec<u64> = log_spaced(min, MAX_IMAGE_KNOB.max(min), steps)
                    .into_iter()
                    .map(|x| ((x / p.patch).max(1) * p.patch).max(min))
                    .collect();
                v.extend(sc.image_size().map(|i| i.height.max(i.width)));
                v.sort_unstable();
                v.dedup();
                v
            }
            Self::Seq => {
                let max = sc
                    .model
                    .transformer()
                    .map(|t| if t.max_position_embeddings > 0 { t.max_position_embeddings } else { 131072 })
                    .unwrap_or(4096)
                    .saturating_sub(sc.image_tokens())
                    .max(1);
                log_spaced(16.min(max), max, steps)
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
    /// Peak plus overhead, bytes: what `vramscope estimate` prints for the scenario with the
    /// knob at `x` ([`printed`]).
    pub total: u64,
    /// The largest allocated bytes of each phase of the step.
    pub phases: crate::estimate::step::PhasePeaks,
    /// Saved activations at the end of the forward pass, bytes.
    pub activations: u64,
    /// Does it fit the card ([`verdict`])? `true` without a card.
    pub fits: bool,
}

impl SweepPoint {
    fn of(x: u64, e: &Estimate, fits: bool) -> Self {
        Self {
            x,
            peak: e.peak_allocated,
            total: e.total,
            phases: e.phase_peaks,
            activations: e.activations,
            fits,
        }
    }
}

/// The estimate `vramscope estimate` prints for `sc`, and whether it fits: on a card of
/// `capacity` bytes the [`verdict`]; without one the allocator replayed over the step on a card
/// without end (or the flat reserve, where the scenario asks for it), and "fits" is `true`.
pub fn printed(sc: &Scenario, capacity: Option<u64>) -> Result<(Estimate, bool), ScenarioError> {
    match capacity {
        Some(c) => verdict(sc, c).map(|v| (v.estimate, v.fits)),
        None if sc.overhead.flat_reserve => estimate(sc).map(|e| (e, true)),
        None => estimate_reserved(sc, None).map(|(e, _)| (e, true)),
    }
}

/// A what-if curve: [`printed`] at each of `values` of one knob (on a card of `capacity`
/// bytes, or none), skipping values the scenario rejects. Every point is the figure
/// `vramscope estimate` gives with the knob's flag at that value.
pub fn sweep(
    sc: &Scenario,
    knob: Knob,
    values: impl IntoIterator<Item = u64>,
    capacity: Option<u64>,
) -> Vec<SweepPoint> {
    let mut s = sc.clone();
    values
        .into_iter()
        .filter_map(|v| {
            knob.apply(&mut s, v);
            printed(&s, capacity).ok().map(|(e, fits)| SweepPoint::of(v, &e, fits))
        })
        .collect()
}

/// The flat-reserve estimate at each of `values` (a few µs a point: the allocator is not
/// replayed), for what only needs the shape of a curve, such as a search's first guess.
pub fn sweep_flat(sc: &Scenario, knob: Knob, values: impl IntoIterator<Item = u64>) -> Vec<SweepPoint> {
    let mut s = sc.clone();
    values
        .into_iter()
        .filter_map(|v| {
            knob.apply(&mut s, v);
            estimate(&s).ok().map(|e| SweepPoint::of(v, &e, true))
        })
        .collect()
}

/// The point of a curve at `x` as `vramscope estimate` gives it (the allocator replayed on a card
/// of `capacity_bytes`).
pub fn exact_point(sc: &Scenario, knob: Knob, x: u64, capacity_bytes: u64) -> Option<SweepPoint> {
    let mut s = sc.clone();
    knob.apply(&mut s, x);
    let v = verdict(&s, capacity_bytes).ok()?;
    Some(SweepPoint::of(x, &v.estimate, v.fits))
}

/// Puts `p` into a curve sorted by `x`, replacing a sampled point at the same value.
pub fn insert_point(curve: &mut Vec<SweepPoint>, p: SweepPoint) {
    match curve.binary_search_by_key(&p.x, |q| q.x) {
        Ok(i) => curve[i] = p,
        Err(i) => curve.insert(i, p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::preset::builtin;

    /// A job's total is the same on a card it does not fit as on one it fits without the
    /// allocator ever releasing its cache: what it needs, not where the replay ran out on the
    /// smaller card (once 75.2 GiB on an RTX 4090 and 78.5 GiB on an H100 for one job).
    #[test]
    fn a_job_that_does_not_fit_reports_what_it_needs() {
        let sc = Scenario::new(builtin("llama-3.1-8b").unwrap());
        let small = crate::gpu::find("rtx-4090").unwrap_or_else(|e| panic!("{e}"));
        let big = crate::gpu::find("rtx-pro-6000").unwrap_or_else(|e| panic!("{e}"));
        let no = verdict(&sc, small.capacity()).unwrap_or_else(|e| panic!("{e}"));
        let yes = verdict(&sc, big.capacity()).unwrap_or_else(|e| panic!("{e}"));
        assert!(!no.fits && yes.fits);
        assert!(yes.replay.as_ref().is_some_and(|r| r.alloc_retries == 0));
        assert_eq!(no.estimate.total, yes.estimate.total);
        assert!(no.replay.as_ref().is_some_and(|r| r.ooms > 0), "the card's own replay says it does not fit");
    }

    /// The longest sequence that fits: it fits, one token more does not.
    #[test]
    fn the_longest_sequence_fits_and_one_more_token_does_not() {
        let sc = Scenario::new(builtin("llama-3.2-1b").unwrap());
        let cap = crate::gpu::find("t4").unwrap_or_else(|e| panic!("{e}")).capacity();
        let n = max_seq(&sc, cap).unwrap_or_else(|| panic!("a 1B fits a T4 at some length"));
        let at = |seq: u64| fits(&Scenario { seq, ..sc.clone() }, cap);
        assert!(n < seq_limit(&sc) && at(n) && !at(n + 1), "{n}");
    }
}
