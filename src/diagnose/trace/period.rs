//! The iterations of a usage curve, read from the curve alone (never from the card's size): the
//! baseline's trend is taken out, the period is where the curve's autocorrelation repeats, and an
//! iteration is a peak that rises half the curve's own swing within one period. The same curve on
//! a 24 GB or an 80 GB card, or shifted up by a constant, gives the same iterations.

/// Samples the period is looked for in (the middle of longer traces): with [`MAX_LAG`], about
/// 15 million multiply-adds a GPU at most, so the Live tab can redo it as samples arrive.
const WINDOW: usize = 8_192;
/// Longest period looked for, samples (3.4 minutes at `-lms 100`, 34 at `-l 1`).
const MAX_LAG: usize = 2_048;
/// The autocorrelation at the period: at least this, and this much above the dip before it.
const MIN_CORRELATION: f64 = 0.3;
const MIN_RISE: f64 = 0.2;
/// The least swing an iteration is counted on, bytes: a few of nvidia-smi's 1 MiB units (a
/// wobble of a few MiB is the driver's bookkeeping, not a step). The card's size plays no part.
const MIN_SWING: f64 = 8.0 * 1_048_576.0;

/// A curve's repeating step.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Steps {
    /// The period, samples (`None`: the curve does not repeat — a steady run, or noise).
    pub period: Option<usize>,
    /// Each iteration's (trough, peak) samples, in order.
    pub peaks: Vec<(usize, usize)>,
}

/// The iterations of `used` (bytes) at times `t` (seconds), the baseline growing by
/// `slope_per_s` bytes a second (taken out first, so a leak does not hide the period).
pub(super) fn steps(t: &[f64], used: &[f64], slope_per_s: f64) -> Steps {
    let n = used.len().min(t.len());
    let mut x: Vec<f64> = (0..n).map(|i| used[i] - slope_per_s * t[i]).collect();
    let mean = x.iter().sum::<f64>() / n.max(1) as f64;
    x.iter_mut().for_each(|v| *v -= mean);
    let Some(period) = period(&x) else { return Steps::default() };
    // the curve's own swing: the median over whole periods of each one's range
    let mut swings: Vec<f64> = x
        .chunks_exact(period)
        .map(|c| {
            let (lo, hi) =
                c.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
            hi - lo
        })
        .collect();
    let swing = super::median(&mut swings);
    if swing.is_nan() || swing < MIN_SWING {
        return Steps::default();
    }
    let half = (period / 2).max(1);
    let mut peaks = Vec::new();
    for i in 0..n {
        let (lo, hi) = (i.saturating_sub(half), (i + half).min(n - 1));
        // nearest neighbours first: most samples fail at once
        let top = x[i + 1..=hi].iter().all(|v| *v <= x[i]) && x[lo..i].iter().rev().all(|v| *v < x[i]);
        if !top {
            continue;
        }
        let from = i.saturating_sub(period);
        let trough = (from..=i).min_by(|a, b| x[*a].total_cmp(&x[*b])).unwrap_or(i);
        if x[i] - x[trough] >= 0.5 * swing {
            peaks.push((trough, i));
        }
    }
    Steps { period: Some(period), peaks }
}

/// The lag (samples) at which the mean-free curve `x` repeats: the first autocorrelation peak
/// past the first dip that comes within half of the highest one, when it is a real correlation (at least
/// 0.3, and 0.2 above the dip) and at least two periods fit in the curve.
fn period(x: &[f64]) -> Option<usize> {
    let start = x.len().saturating_sub(WINDOW) / 2;
    let w = &x[start..(start + WINDOW).min(x.len())];
    let max_lag = (w.len() / 2).min(MAX_LAG);
    if max_lag < 2 {
        return None;
    }
    // the normalised correlation of the curve with itself `k` samples later, over their overlap
    // (the overlap's energies from running sums of squares)
    let mut squares = Vec::with_capacity(w.len() + 1);
    squares.push(0.0);
    for v in w {
        squares.push(squares[squares.len() - 1] + v * v);
    }
    let total = squares[w.len()];
    let r: Vec<f64> = (0..=max_lag)
        .map(|k| {
            let dot: f64 = w[..w.len() - k].iter().zip(&w[k..]).map(|(p, q)| p * q).sum();
            let norm = (squares[w.len() - k] * (total - squares[k])).sqrt();
            if norm > 0.0 { dot / norm } else { 0.0 }
        })
        .collect();
    // the first dip, then the local maxima beyond it
    let dip = (1..max_lag).find(|&k| r[k] <= r[k + 1])?;
    let maxima: Vec<usize> = (dip + 1..max_lag).filter(|&k| r[k] > r[k - 1] && r[k] >= r[k + 1]).collect();
    // the first that comes within half of the highest: a period of a fractional number of
    // samples correlates at its nearest whole lag about half as well as at two periods (a
    // sawtooth shifted by δ of its period correlates 1 − 6δ(1 − δ))
    let best = maxima.iter().map(|&k| r[k]).fold(f64::NEG_INFINITY, f64::max);
    let k = *maxima.iter().find(|&&k| r[k] >= 0.5 * best)?;
    (r[k] >= MIN_CORRELATION && r[k] - r[dip] >= MIN_RISE && 2 * k <= x.len()).then_some(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sawtooth of `period` samples rising by `swing`, on a baseline growing `leak` a sample.
    fn saw(n: usize, period: usize, swing: f64, leak: f64) -> (Vec<f64>, Vec<f64>) {
        let t: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let used =
            (0..n).map(|i| 1e9 + leak * i as f64 + swing * (i % period) as f64 / period as f64).collect();
        (t, used)
    }

    #[test]
    fn a_sawtooth_gives_its_period_and_one_peak_a_period() {
        let (t, used) = saw(400, 40, 1e9, 1e6);
        let s = steps(&t, &used, 1e6);
        assert_eq!(s.period, Some(40));
        assert_eq!(s.peaks.len(), 10, "{s:?}");
        assert!(s.peaks.iter().all(|(_, p)| p % 40 == 39), "{s:?}");
    }

    #[test]
    fn a_steady_or_noisy_curve_has_no_iterations() {
        let t: Vec<f64> = (0..300).map(|i| i as f64).collect();
        assert_eq!(steps(&t, &vec![5e9; 300], 0.0), Steps::default());
        // loading, then flat with a MiB of random jitter
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let used: Vec<f64> = (0..300)
            .map(|i| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                if i < 5 { i as f64 * 4e9 } else { 20e9 + (seed % 16) as f64 * 1e5 }
            })
            .collect();
        assert_eq!(steps(&t, &used, 0.0), Steps::default());
        assert_eq!(steps(&t[..3], &used[..3], 0.0), Steps::default());
    }
}
