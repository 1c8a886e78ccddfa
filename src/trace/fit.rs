//! A traced quantity (one dimension of one tensor) as a function of the named dims, fitted on
//! the trace's grid: multilinear in the dims it depends on (`b`, `h·w`, `(h/8)·(w/8)` are; `h²`
//! is not), exact in integers, checked at every traced point beyond the two it was fitted on.
//!
//! The fit is multilinear interpolation between each dim's first two traced values (the
//! "corners"): `f(x) = Σ_corners f(c) · Π_d L_d(x_d)` with `L` the linear Lagrange basis of
//! the dim's two values. A dimension the quantity does not depend on drops out, so a constant
//! costs nothing to evaluate and most depend on one dim.

use serde::{Deserialize, Serialize};

/// One fitted quantity.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Formula {
    /// The dims it depends on (indices into the trace's dims), at most [`MAX_DEPS`].
    pub deps: Vec<u8>,
    /// Its value at each corner of those dims: bit `i` of the index picks the second traced
    /// value of `deps[i]` (a constant has one corner).
    pub corners: Vec<i64>,
}

/// The most dims one quantity may depend on (2^6 corners).
pub const MAX_DEPS: usize = 6;

/// A quantity that is not a whole number at the dims asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotWhole;

impl Formula {
    /// A constant.
    pub fn constant(v: i64) -> Self {
        Self { deps: Vec::new(), corners: vec![v] }
    }

    /// Fits the quantity from its values at the corners of every dim (`at(mask)`: bit `d` of
    /// `mask` picks the second value of dim `d`; dims with one traced value never set theirs).
    pub fn fit(dims: usize, varies: &[bool], at: &impl Fn(usize) -> i64) -> Self {
        let base = at(0);
        // a dim is a dependency when changing it alone, from some corner, changes the value
        let mut deps: Vec<u8> = Vec::new();
        for d in 0..dims.min(u8::MAX as usize) {
            if !varies.get(d).copied().unwrap_or(false) {
                continue;
            }
            let bit = 1usize << d;
            let all = (0..1usize << dims).filter(|m| m & bit == 0 && only_varied(*m, varies));
            if all.into_iter().any(|m| at(m) != at(m | bit)) {
                deps.push(d as u8);
            }
        }
        if deps.is_empty() {
            return Self::constant(base);
        }
        let corners = (0..1usize << deps.len())
            .map(|k| {
                let mask =
                    deps.iter().enumerate().filter(|(i, _)| k >> i & 1 == 1).map(|(_, &d)| 1 << d).sum();
                at(mask)
            })
            .collect();
        Self { deps, corners }
    }

    /// The value at `x` (one value per dim; `lo`/`hi` are each dim's first two traced values).
    /// Not whole (or out of range, or malformed) is an error, never a panic.
    pub fn eval(&self, x: &[u64], lo: &[u64], hi: &[u64]) -> Result<i64, NotWhole> {
        if self.deps.is_empty() {
            return self.corners.first().copied().ok_or(NotWhole);
        }
        if self.deps.len() > MAX_DEPS || self.corners.len() != 1 << self.deps.len() {
            return Err(NotWhole);
        }
        if let ([d], [c0, c1]) = (self.deps.as_slice(), self.corners.as_slice()) {
            // one dim, the common case: c0 + (c1 − c0)·(x − lo)/(hi − lo)
            let d = *d as usize;
            let (Some(&xd), Some(&l), Some(&h)) = (x.get(d), lo.get(d), hi.get(d)) else {
                return Err(NotWhole);
            };
            // in i64 (a 128-bit division is a library call): dims and sides are far below 2^31
            let as_i64 = |v: u64| i64::try_from(v).map_err(|_| NotWhole);
            let (xd, l, h) = (as_i64(xd)?, as_i64(l)?, as_i64(h)?);
            let step = c1.checked_sub(*c0).ok_or(NotWhole)?;
            let num = step.checked_mul(xd - l).ok_or(NotWhole)?;
            if h == l || num % (h - l) != 0 {
                return Err(NotWhole);
            }
            return c0.checked_add(num / (h - l)).ok_or(NotWhole);
        }
        let pick = |d: u8| -> Option<(i128, i128, i128)> {
            let d = d as usize;
            Some((i128::from(*x.get(d)?), i128::from(*lo.get(d)?), i128::from(*hi.get(d)?)))
        };
        let mut den: i128 = 1;
        for &d in &self.deps {
            let (_, l, h) = pick(d).ok_or(NotWhole)?;
            den = den.checked_mul(h - l).ok_or(NotWhole)?;
        }
        let mut num: i128 = 0;
        for (k, &c) in self.corners.iter().enumerate() {
            let mut term = i128::from(c);
            for (i, &d) in self.deps.iter().enumerate() {
                let (xd, l, h) = pick(d).ok_or(NotWhole)?;
                let w = if k >> i & 1 == 1 { xd - l } else { h - xd };
                term = term.checked_mul(w).ok_or(NotWhole)?;
            }
            num = num.checked_add(term).ok_or(NotWhole)?;
        }
        if den == 0 || num % den != 0 {
            return Err(NotWhole);
        }
        i64::try_from(num / den).map_err(|_| NotWhole)
    }
}

/// A corner mask sets only dims that vary.
fn only_varied(mask: usize, varies: &[bool]) -> bool {
    (0..usize::BITS as usize).all(|d| mask >> d & 1 == 0 || varies.get(d).copied().unwrap_or(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fits `f` over dims traced at `lo`/`hi` (all varying).
    fn fitted(f: impl Fn(&[u64]) -> i64, lo: &[u64], hi: &[u64]) -> Formula {
        let n = lo.len();
        let at = |m: usize| {
            let x: Vec<u64> = (0..n).map(|d| if m >> d & 1 == 1 { hi[d] } else { lo[d] }).collect();
            f(&x)
        };
        Formula::fit(n, &vec![true; n], &at)
    }

    #[test]
    fn a_product_of_dims_and_a_stride_are_exact_away_from_the_traced_points() {
        let (lo, hi) = ([1, 64, 64], [2, 96, 128]);
        // (b, c, h/8 · w/8) flattened: multilinear in b, h, w
        let f = fitted(|x| (x[0] * 320 * (x[1] / 8) * (x[2] / 8)) as i64, &lo, &hi);
        assert_eq!(f.deps, [0, 1, 2]);
        assert_eq!(f.eval(&[4, 256, 192], &lo, &hi), Ok(4 * 320 * 32 * 24));
        // a stride-2 convolution's output side, exact on even sides, not whole on odd ones
        let g = fitted(|x| (x[1] / 2) as i64, &lo, &hi);
        assert_eq!(g.deps, [1]);
        assert_eq!(g.eval(&[7, 200, 5], &lo, &hi), Ok(100));
        assert_eq!(g.eval(&[7, 201, 5], &lo, &hi), Err(NotWhole));
        // a constant depends on nothing
        let c = fitted(|_| 768, &lo, &hi);
        assert!(c.deps.is_empty());
        assert_eq!(c.eval(&[9, 9, 9], &lo, &hi), Ok(768));
    }

    #[test]
    fn a_square_is_not_multilinear_and_a_third_point_shows_it() {
        let (lo, hi) = ([64], [96]);
        let f = fitted(|x| (x[0] * x[0]) as i64, &lo, &hi);
        // exact at the two points it was fitted on, wrong at a third
        assert_eq!(f.eval(&[64], &lo, &hi), Ok(4096));
        assert_eq!(f.eval(&[96], &lo, &hi), Ok(9216));
        assert_ne!(f.eval(&[128], &lo, &hi), Ok(128 * 128));
    }

    #[test]
    fn a_dim_traced_once_never_enters() {
        let at = |m: usize| if m & 2 == 2 { 99 } else { 5 };
        let f = Formula::fit(2, &[true, false], &at);
        assert!(f.deps.is_empty());
        assert_eq!(f.eval(&[3, 3], &[1, 1], &[2, 1]), Ok(5));
    }
}
