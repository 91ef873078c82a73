//! The delay histogram: exact percentiles of the delays that passed, in
//! memory bounded by [`DelayHistogram::MAX_VALUES`] distinct values.

use crate::clock::Nanos;

/// Delay distribution of passed requests (admitted ones count as 0).
///
/// Exact while it holds at most [`DelayHistogram::MAX_VALUES`] distinct
/// values; past that it halves its resolution (drops a low bit of every
/// value) as often as needed, so memory stays bounded and the reported
/// percentile is at most `2^shift − 1` ns below the true one.
///
/// Delays are gathered unsorted and merged into the sorted counts
/// [`DelayHistogram::BATCH`] at a time. What it holds depends only on the
/// values recorded, not on when they are merged: a value `v` is held as
/// `v >> shift`, a halving turns that into `v >> (shift + 1)`, and the
/// final shift is the least that leaves at most `MAX_VALUES` distinct
/// values of everything recorded (each merge takes the least shift, at
/// least the last, that does so for what it has seen; that of everything
/// recorded qualifies at every merge, and is reached at the last).
#[derive(Debug, Clone, Default)]
pub struct DelayHistogram {
    pub(super) zeros: u64,
    /// `(value >> shift, how many)`, by value.
    pub(super) values: Vec<(u64, u64)>,
    /// Non-zero delays (ns) recorded since the last merge.
    pub(super) pending: Vec<u64>,
    pub(super) shift: u32,
    pub(super) count: u64,
}

impl DelayHistogram {
    pub const MAX_VALUES: usize = 4096;
    /// Delays gathered before they are merged.
    pub const BATCH: usize = 4096;

    /// How many values recorded were 0.
    pub fn zeros(&self) -> u64 {
        self.zeros
    }

    pub fn record(&mut self, ns: u64) {
        self.count += 1;
        if ns == 0 {
            self.zeros += 1;
            return;
        }
        self.pending.push(ns);
        if self.pending.len() >= Self::BATCH {
            self.merge();
        }
    }

    /// Merges the pending delays into the counts, then halves the
    /// resolution while more than [`DelayHistogram::MAX_VALUES`] values
    /// are distinct.
    pub(super) fn merge(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let shift = self.shift;
        let mut pending = std::mem::take(&mut self.pending);
        pending.iter_mut().for_each(|v| *v >>= shift);
        pending.sort_unstable();
        let mut merged = Vec::with_capacity(self.values.len() + pending.len());
        let mut old = self.values.iter().copied().peekable();
        let mut new = pending.iter().copied().peekable();
        loop {
            let next = match (old.peek(), new.peek()) {
                (Some(&(v, n)), Some(&w)) if v <= w => {
                    old.next();
                    (v, n)
                }
                (_, Some(&w)) => {
                    new.next();
                    (w, 1)
                }
                (Some(&e), None) => {
                    old.next();
                    e
                }
                (None, None) => break,
            };
            add(&mut merged, next);
        }
        pending.clear();
        self.pending = pending;
        self.values = merged;
        self.halve();
    }

    /// Halves the resolution while more than [`DelayHistogram::MAX_VALUES`]
    /// values are distinct.
    fn halve(&mut self) {
        let mut merged = std::mem::take(&mut self.values);
        while merged.len() > Self::MAX_VALUES {
            self.shift += 1;
            let halved = merged.len();
            let mut out = 0;
            for i in 0..halved {
                let (v, n) = merged[i];
                let v = v >> 1;
                if out > 0 && merged[out - 1].0 == v {
                    merged[out - 1].1 += n;
                } else {
                    merged[out] = (v, n);
                    out += 1;
                }
            }
            merged.truncate(out);
        }
        self.values = merged;
    }

    /// Adds every value of `other` (a key partition's histogram of the
    /// same run): the result holds exactly what one histogram recording
    /// both histograms' values holds, as what it holds depends only on the
    /// values (see the type's documentation) — each side's values at the
    /// larger shift, then halved as often as the sum needs.
    pub fn absorb(&mut self, other: &DelayHistogram) {
        self.merge();
        let other = other.merged();
        let shift = self.shift.max(other.shift);
        let at = |values: &[(u64, u64)], from: u32| {
            let mut out = Vec::with_capacity(values.len());
            for &(v, n) in values {
                add(&mut out, (v >> (shift - from), n));
            }
            out
        };
        let (a, b) = (at(&self.values, self.shift), at(&other.values, other.shift));
        let mut merged = Vec::with_capacity(a.len() + b.len());
        let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(&x), Some(&y)) if x.0 <= y.0 => a.next(),
                (_, Some(_)) => b.next(),
                (Some(_), None) => a.next(),
                (None, None) => break,
            };
            add(&mut merged, next.expect("peeked"));
        }
        self.values = merged;
        self.shift = shift;
        self.zeros += other.zeros;
        self.count += other.count;
        self.halve();
    }

    /// This histogram with every delay merged (a copy if any is pending).
    pub(super) fn merged(&self) -> std::borrow::Cow<'_, DelayHistogram> {
        if self.pending.is_empty() {
            std::borrow::Cow::Borrowed(self)
        } else {
            let mut h = self.clone();
            h.merge();
            std::borrow::Cow::Owned(h)
        }
    }

    /// Nearest-rank percentile (`per_mille` of 1000), in ns; `None` if empty.
    pub fn percentile(&self, per_mille: u64) -> Option<Nanos> {
        if self.count == 0 {
            return None;
        }
        let rank = (per_mille as u128 * self.count as u128)
            .div_ceil(1000)
            .max(1) as u64;
        if rank <= self.zeros {
            return Some(Nanos::ZERO);
        }
        let h = self.merged();
        let mut seen = h.zeros;
        for &(v, n) in &h.values {
            seen += n;
            if seen >= rank {
                return Some(Nanos(v << h.shift));
            }
        }
        unreachable!("rank ≤ count")
    }

    pub fn max(&self) -> Option<Nanos> {
        if self.count == 0 {
            return None;
        }
        let h = self.merged();
        Some(Nanos(h.values.last().map_or(0, |&(v, _)| v << h.shift)))
    }
}

/// Appends `(v, n)` to counts sorted by value, adding to the last if it
/// has the same value.
pub(super) fn add(counts: &mut Vec<(u64, u64)>, (v, n): (u64, u64)) {
    match counts.last_mut() {
        Some(last) if last.0 == v => last.1 += n,
        _ => counts.push((v, n)),
    }
}
