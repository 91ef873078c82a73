//! The log-linear histogram Envoy's gradient controller keeps its latency
//! samples in, and the quantile it reads back.
//!
//! **What it models.** `libcircllhist` (`openhistogram/libcircllhist`,
//! `src/circllhist.c` at tag `py-0.3.2`, commit
//! `ea660e250875f5de8ed4cc2934c84040bfbfd86d` — the `libcircllhist`
//! version 0.3.2 that Envoy's `REPOSITORY_LOCATIONS_SPEC` pins; older
//! Envoys pinned commit `63a16dd6f2fc7bc841bb17ff92be8318df60e2e1` of
//! 2019-02, which interpolated linearly within a bin instead):
//! `hist_insert`,
//! `hist_sample_count`, `hist_clear` and `hist_approx_quantile`. A sample
//! lands in a bin of two significant decimal digits — `[val/10 · 10^exp,
//! (val+1)/10 · 10^exp)` with `val` in 10..=99 — so the controller never sees
//! the exact latencies: its minRTT and sample RTT are quantiles *estimated
//! from bins*, and the estimate is biased. Fifty samples of exactly 1000 µs
//! have a median of 1049 µs.
//!
//! **The quantile** (Hyndman–Fan type 1 within a bin): with `N` samples in
//! all, `qn = N · q`; walk the bins in ascending order to the first whose
//! cumulative count reaches `qn`; within it (`n` samples, `lower` below it)
//! the `k`-th of `n` uniform order statistics sits at
//!
//! ```text
//! left + k / (n + 1) · width,   k = ⌈qn − lower⌉  (k = 1 when qn = lower)
//! ```
//!
//! A zero sample has a bin of its own, of width 0, whose quantile is 0.
//!
//! **Exactness.** Envoy inserts whole microseconds (≥ 0). `hist_insert`
//! finds the bin with `floor(log10(d))` and `floor(d / 10^exp · 10 + 1e-13)`;
//! for an integer below 10^13 that is exactly "the number of digits less
//! one" and "the first two digits" (a test checks this against the float
//! formula), so bins are found in integers here. The quantile is the C
//! code's `double` arithmetic, operation by operation, in `f64`.

use std::collections::BTreeMap;

/// A bin, ordered as `hist_bucket_cmp` orders non-negative bins: the zero
/// bin first, then by exponent, then by the two digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Bin {
    Zero,
    Digits { exp: u8, val: u8 },
}

impl Bin {
    /// `double_to_hist_bucket(v)` for a whole number `v`.
    fn of(v: u64) -> Bin {
        if v == 0 {
            return Bin::Zero;
        }
        let digits = v.ilog10() + 1;
        let val = if digits == 1 {
            v * 10
        } else {
            v / 10u64.pow(digits - 2)
        };
        Bin::Digits {
            exp: (digits - 1) as u8,
            val: val as u8,
        }
    }

    /// `hist_bucket_left` and `hist_bucket_to_double_bin_width`:
    /// `(val / 10.0) · 10^exp` and `10^exp / 10.0`, with `power_of_ten[]`'s
    /// exact powers.
    fn left_and_width(self) -> (f64, f64) {
        match self {
            Bin::Zero => (0.0, 0.0),
            Bin::Digits { exp, val } => {
                let p = 10u64.pow(exp as u32) as f64;
                ((val as f64 / 10.0) * p, p / 10.0)
            }
        }
    }
}

/// Samples in bins, as `histogram_t` holds them.
#[derive(Debug, Clone, Default)]
pub struct LatencyHistogram {
    bins: BTreeMap<Bin, u64>,
}

impl LatencyHistogram {
    /// `hist_insert(h, v, 1)`.
    pub fn insert(&mut self, v: u64) {
        let c = self.bins.entry(Bin::of(v)).or_insert(0);
        *c = c.saturating_add(1);
    }

    /// `hist_sample_count`.
    pub fn sample_count(&self) -> u64 {
        self.bins.values().fold(0u64, |a, &c| a.saturating_add(c))
    }

    /// `hist_clear`.
    pub fn clear(&mut self) {
        self.bins.clear();
    }

    /// `hist_approx_quantile` for one `q` in `[0, 1]`; NaN when empty.
    pub fn quantile(&self, q: f64) -> f64 {
        // `total_cnt += (double) count` over the bins.
        let mut total = 0.0f64;
        for &c in self.bins.values() {
            total += c as f64;
        }
        if total == 0.0 {
            return f64::NAN;
        }
        let qn = total * q;
        let bins: Vec<(Bin, u64)> = self.bins.iter().map(|(&b, &c)| (b, c)).collect();
        // TRACK_VARS on the first bin, then advance while `upper < qn`.
        let (mut lower, mut upper) = (0.0f64, bins[0].1 as f64);
        let mut i = 0;
        while i < bins.len() - 1 && upper < qn {
            i += 1;
            lower = upper;
            upper = lower + bins[i].1 as f64;
        }
        let (left, width) = bins[i].0.left_and_width();
        if width == 0.0 {
            return left;
        }
        // `(double) k / (n + 1) * bucket_width`, `n + 1` a uint64_t.
        let n_plus_1 = bins[i].1.wrapping_add(1) as f64;
        if qn == lower {
            left + 1.0 / n_plus_1 * width
        } else {
            let k = (qn - lower).ceil();
            left + k / n_plus_1 * width
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `double_to_hist_bucket` as the C code computes it, in floats.
    fn bin_by_floats(v: u64) -> Bin {
        let d = v as f64;
        let exp = d.log10().floor() as i32;
        let mut val = (d / 10f64.powi(exp) * 10.0 + 1e-13).floor() as i32;
        let mut exp = exp;
        if val == 100 {
            val /= 10;
            exp += 1;
        }
        Bin::Digits {
            exp: exp as u8,
            val: val as u8,
        }
    }

    #[test]
    fn bins_in_integers_are_the_c_codes_float_bins() {
        let mut v = 1u64;
        while v < 200_000 {
            assert_eq!(Bin::of(v), bin_by_floats(v), "{v}");
            v += 1;
        }
        for e in 5..13 {
            let p = 10u64.pow(e);
            for v in [
                p - 1,
                p,
                p + 1,
                2 * p - 1,
                3 * p + 7,
                99 * p / 10,
                10 * p - 1,
            ] {
                assert_eq!(Bin::of(v), bin_by_floats(v), "{v}");
            }
        }
        assert_eq!(Bin::of(7), Bin::Digits { exp: 0, val: 70 });
        assert_eq!(Bin::of(12_345), Bin::Digits { exp: 4, val: 12 });
    }

    #[test]
    fn a_bin_spans_its_two_leading_digits() {
        // 12 345 µs: [12 000, 13 000).
        assert_eq!(Bin::of(12_345).left_and_width(), (12_000.0, 1000.0));
        // 7 µs: [7.0, 7.1).
        assert_eq!(Bin::of(7).left_and_width(), (7.0, 0.1));
    }

    #[test]
    fn the_median_of_three_bins_is_placed_inside_the_middle_one() {
        // 100, 200, 300 µs: N = 3, qn = 1.5; the first bin (upper 1) is
        // passed, the second (lower 1, upper 2) reached. k = ⌈0.5⌉ = 1,
        // n = 1: 200 + 1/2 · 10 = 205.
        let mut h = LatencyHistogram::default();
        for v in [300, 100, 200] {
            h.insert(v);
        }
        assert_eq!(h.quantile(0.5), 205.0);
        assert_eq!(h.sample_count(), 3);
    }

    #[test]
    fn fifty_equal_samples_have_a_median_above_their_value() {
        // qn = 25, one bin [1000, 1100) of n = 50: 1000 + 25/51 · 100.
        let mut h = LatencyHistogram::default();
        for _ in 0..50 {
            h.insert(1000);
        }
        assert_eq!(h.quantile(0.5), 1000.0 + 25.0 / 51.0 * 100.0);
        assert_eq!(h.quantile(0.5) as i32, 1049);
        // q = 0: qn = lower = 0 → k = 1: 1000 + 1/51 · 100.
        assert_eq!(h.quantile(0.0), 1000.0 + 1.0 / 51.0 * 100.0);
        // q = 1: k = 50.
        assert_eq!(h.quantile(1.0), 1000.0 + 50.0 / 51.0 * 100.0);
    }

    #[test]
    fn zero_samples_have_a_zero_width_bin_below_all_others() {
        let mut h = LatencyHistogram::default();
        h.insert(0);
        h.insert(0);
        h.insert(5);
        // qn = 1.5 ≤ 2 in the zero bin: its left, 0.
        assert_eq!(h.quantile(0.5), 0.0);
        // qn = 2.7: into [5.0, 5.1), k = ⌈0.7⌉ = 1, n = 1: 5 + 0.05.
        assert_eq!(h.quantile(0.9), 5.0 + 1.0 / 2.0 * 0.1);
        h.clear();
        assert_eq!(h.sample_count(), 0);
        assert!(h.quantile(0.5).is_nan());
    }
}
