//! The ranges of the numeric flags. A value outside its range is clap's one-line usage error
//! (exit 2) naming the flag and the range: `invalid value '1000000' for '--dp <DP>': 1000000 is
//! not in 1..=131072`. Each range is what the quantity can mean, with room; the scenario's own
//! checks (heads against --tp, the model's positions against --seq, …) come after.

use clap::builder::{RangedI64ValueParser, RangedU64ValueParser};

/// GPUs in one job: the largest clusters built have about 2^17 (131,072) GPUs.
pub const MAX_GPUS: u64 = 1 << 17;
/// One parallel degree other than data parallelism (tensor, pipeline, context, expert).
pub const MAX_DEGREE: u64 = 4096;
/// Tokens or sequences in one step or request (the scenario's own limit, 2^24).
pub const MAX_TOKENS: u64 = 1 << 24;
/// A memory amount given in MiB for one overhead term (context, workspace, NCCL, CUDA graphs):
/// 64 GiB, more than any one term takes on any card.
pub const MAX_TERM_MIB: u64 = 1 << 16;

/// An unsigned flag in `lo..=hi`.
pub fn int(lo: u64, hi: u64) -> RangedU64ValueParser<u64> {
    RangedU64ValueParser::new().range(lo..=hi)
}

/// A `usize` flag in `lo..=hi`.
pub fn count(lo: u64, hi: u64) -> RangedU64ValueParser<usize> {
    RangedU64ValueParser::new().range(lo..=hi)
}

/// A `u32` flag in `lo..=hi`.
pub fn int32(lo: u32, hi: u32) -> RangedI64ValueParser<u32> {
    RangedI64ValueParser::new().range(i64::from(lo)..=i64::from(hi))
}

/// A `u8` flag in `lo..=hi`.
pub fn int8(lo: u8, hi: u8) -> RangedI64ValueParser<u8> {
    RangedI64ValueParser::new().range(i64::from(lo)..=i64::from(hi))
}

/// Whether an end of a real interval is included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// `[` or `]`.
    Closed,
    /// `(` or `)`.
    Open,
}

/// A real flag in an interval, written in the error as `[0, 1)`, `(0, 1]`.
pub fn real(
    lo: f64,
    lo_end: End,
    hi: f64,
    hi_end: End,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let v: f64 = s.trim().parse().map_err(|_| format!("\"{s}\" is not a number"))?;
        let above = if lo_end == End::Closed { v >= lo } else { v > lo };
        let below = if hi_end == End::Closed { v <= hi } else { v < hi };
        if v.is_finite() && above && below {
            Ok(v)
        } else {
            let open = if lo_end == End::Closed { '[' } else { '(' };
            let close = if hi_end == End::Closed { ']' } else { ')' };
            Err(format!("{s} is not in {open}{lo}, {hi}{close}"))
        }
    }
}

/// A share in `[0, 1)`: a discount, a dropout probability, headroom.
pub fn share() -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    real(0.0, End::Closed, 1.0, End::Open)
}

/// A fraction in `(0, 1]`: a utilisation.
pub fn fraction() -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    real(0.0, End::Open, 1.0, End::Closed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_ranges_name_their_interval() {
        let f = fraction();
        assert_eq!(f("0.9"), Ok(0.9));
        assert_eq!(f("1"), Ok(1.0));
        assert_eq!(f("0"), Err("0 is not in (0, 1]".to_owned()));
        assert_eq!(f("1.01"), Err("1.01 is not in (0, 1]".to_owned()));
        assert!(f("NaN").is_err() && f("inf").is_err());
        assert_eq!(f("x"), Err("\"x\" is not a number".to_owned()));
        let s = share();
        assert_eq!(s("0"), Ok(0.0));
        assert_eq!(s("1"), Err("1 is not in [0, 1)".to_owned()));
    }
}
