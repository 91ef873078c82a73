//! Sliding counter: estimate the sliding window from two fixed-window counts.
//!
//! **What it models.** Windows are aligned as in the
//! [`super::fixed_window`]. At `t = k·W + e`, `p` is the count of window
//! `k − 1` and `c` the count of window `k`. The previous window is assumed
//! to have been spread evenly, so the part of it still inside the sliding
//! window `(t − W, t]` is weighted by `(W − e)/W`:
//!
//! ```text
//! admit  ⇔  p·(W − e) + (c + cost)·W ≤ limit·W        then c += cost
//! ```
//!
//! (exact integers: no division, no rounding). With
//! `count_rejected = true` rejected cost adds to `c` too.
//!
//! **When to pick it.** When the [`super::sliding_log`] is too big and the
//! fixed window's boundary burst too much: two counters per key give a
//! close approximation of the log at a fraction of its memory. It is an
//! estimate: when the previous window's requests came late in it, they
//! weigh less than they should, and some window `(t − W, t]` can pass more
//! than `limit`.
//!
//! **In the wild.** Cloudflare's estimator; Python `limits`'
//! `SlidingWindowCounterRateLimiter` with `weight = "floor"` below (preset
//! `python-limits-sliding`).
//!
//! **Retry-after.** The rule solved for the offset. Later in this window,
//! `p·(W − e') ≤ limit·W − (c + cost)·W` first holds at
//!
//! ```text
//! e' = W − ⌊(limit − c − cost)·W / p⌋               retry_after = k·W + e' − t
//! ```
//!
//! if that is before the window ends; otherwise in the next window, where
//! this window's count becomes `p` and `c` is 0 — at its offset from the
//! same formula, or at the start of window `k + 2`, where neither weighs.
//! It is the smallest wait: with nothing arriving `c` stays, and the
//! weight `p·(W − e)` only falls as `e` grows, so the first offset that
//! fits is the first moment; `e'` is a whole ns, so nothing is rounded. It
//! is at least 1 ns because the request did not fit at `e`. With
//! `count_rejected` the refused cost is counted first. A `cost` above
//! `limit` never fits: no retry-after.
//!
//! **Fresh-equivalent.** Once neither count weighs: window `k`'s count
//! weighs through window `k + 1` (as `p`, by `W − e ≥ 1`), so a key whose
//! current count is non-zero is fresh-equivalent at `(k + 2)·W`, one with
//! only a previous count at `(k + 1)·W` — with `floor` weights earlier,
//! once the floored weight is 0. Before that a request of `limit` is
//! refused. The key is charged [`state_bytes::SLIDING_COUNTER`] (12 bytes:
//! window index, both counts) until then, and under the Redis figure one
//! hash: one size while either count weighs, so the fixed-size ledger
//! reads the moment from the counts ([`Rule::fresh_at`]).
//!
//! ## `weight = "floor"` (Python `limits` SlidingWindowCounter)
//!
//! Python `limits` rounds the weighted previous count down before adding:
//!
//! ```text
//! admit  ⇔  ⌊p·(W − e)/W⌋ + c + cost ≤ limit
//! ```
//!
//! so it admits a little more than the exact estimate (less than one
//! request's worth of the previous window's share). Since
//! `⌊x⌋ ≤ room ⇔ x < room + 1`, the floor rule is the exact one with the
//! budget `room·W` for the weighted previous count widened to
//! `(room + 1)·W − 1`; the retry-after solves that for `e` the same way.
//!
//! [`state_bytes::SLIDING_COUNTER`]: super::state_bytes::SLIDING_COUNTER

use super::{redis_bytes, span, state_bytes, Decision, FixedLedger, Rule, Stored};
use crate::clock::Nanos;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub limit: u64,
    pub window: Nanos,
    pub count_rejected: bool,
    pub weight: Weight,
}

/// How the previous window's weighted count enters the sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Weight {
    /// `p·(W − e)/W` exactly (docs/semantics.md §2.7).
    #[default]
    Exact,
    /// `⌊p·(W − e)/W⌋` (docs/semantics.md §5, Python `limits`).
    Floor,
}

impl Weight {
    /// The accepted spellings, default first.
    pub const NAMES: &'static [&'static str] = &["exact", "floor"];

    pub fn as_str(self) -> &'static str {
        match self {
            Weight::Exact => "exact",
            Weight::Floor => "floor",
        }
    }

    pub fn parse(s: &str) -> Option<Weight> {
        match s {
            "exact" => Some(Weight::Exact),
            "floor" => Some(Weight::Floor),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct WindowCounts {
    window: u64,
    previous: u64,
    current: u64,
}

/// The sliding counter's rule.
pub struct SlidingCounterRule {
    cfg: Config,
}

/// A sliding counter per key.
pub type SlidingCounter = Stored<SlidingCounterRule>;

impl SlidingCounter {
    pub fn new(cfg: Config) -> Self {
        Stored::of(
            SlidingCounterRule { cfg },
            // A key's state is one size while either count weighs (in
            // Redis, the script's one hash of `k`, `p`, `c`), and it is
            // fresh-equivalent once neither does: the counts are not
            // items whose number changes the bytes.
            FixedLedger::new(state_bytes::SLIDING_COUNTER, redis_bytes::HASH),
        )
    }
}

impl SlidingCounterRule {
    /// The most the weighted previous count `p·(W − e)` may be for `cost`
    /// to fit on top of a current count `c`; `None` if it never fits.
    fn budget(cfg: &Config, c: u64, cost: u64) -> Option<u128> {
        let (limit, w) = (cfg.limit as u128, cfg.window.0 as u128);
        let room = limit.checked_sub(c as u128 + cost as u128)?;
        Some(match cfg.weight {
            // p·(W − e) + (c + cost)·W ≤ limit·W.
            Weight::Exact => room * w,
            // ⌊p·(W − e)/W⌋ ≤ room  ⇔  p·(W − e) < (room + 1)·W.
            Weight::Floor => (room + 1) * w - 1,
        })
    }

    /// The smallest offset `e` into a window whose previous count is `p` and
    /// current count `c` at which `cost` fits, if any before the window ends.
    fn earliest_offset(&self, p: u64, c: u64, cost: u64) -> Option<u64> {
        let w = self.cfg.window.0 as u128;
        let budget = Self::budget(&self.cfg, c, cost)?;
        if p == 0 {
            return Some(0);
        }
        // p·(W − e) ≤ budget  ⇔  e ≥ W − budget/p.
        let e = w.saturating_sub(budget / p as u128);
        (e < w).then_some(e as u64)
    }
}

impl Rule for SlidingCounterRule {
    type State = WindowCounts;

    fn fresh(&self, now: Nanos) -> WindowCounts {
        WindowCounts {
            window: now.0 / self.cfg.window.0,
            previous: 0,
            current: 0,
        }
    }

    fn decide_uncounted(&self, s: &mut WindowCounts, now: Nanos, cost: u64) -> Decision {
        let cfg = Config {
            count_rejected: false,
            ..self.cfg
        };
        SlidingCounterRule { cfg }.decide(s, now, cost).0
    }

    #[inline(always)]
    fn decide(&self, s: &mut WindowCounts, now: Nanos, cost: u64) -> (Decision, Option<u64>) {
        (self.count(s, now, cost), None)
    }

    /// When `c` is fresh-equivalent (see the module docs): when the later
    /// of its counts stops weighing (0 if both are zero).
    fn fresh_at(&self, c: &WindowCounts) -> Nanos {
        let w = self.cfg.window.0 as u128;
        let k = c.window as u128;
        // A count n of window j weighs in window j + 1 until the offset
        // from which it no longer can: exact, its end; floor, once
        // ⌊n·(W − e)/W⌋ = 0, i.e. e ≥ W − ⌊(W − 1)/n⌋. The current
        // count stops after the previous one.
        let stops = |j: u128, n: u64| match self.cfg.weight {
            Weight::Exact => span((j + 2) * w),
            Weight::Floor => span((j + 1) * w + w - (w - 1) / n as u128),
        };
        if c.current > 0 {
            stops(k, c.current)
        } else if c.previous > 0 && k > 0 {
            stops(k - 1, c.previous)
        } else {
            Nanos(0)
        }
    }

    /// `limit − c − ⌈p·(W − e)/W⌉` (exact) or `limit − c − ⌊p·(W − e)/W⌋`
    /// (floor), 0 if less, with the counts as the window `now` falls in
    /// sees them (docs/semantics.md §11).
    fn remaining(&self, s: &WindowCounts, now: Nanos) -> u64 {
        let w = self.cfg.window.0;
        let k = now.0 / w;
        let e = now.0 - k * w;
        let (p, c) = match s.window {
            j if j == k => (s.previous, s.current),
            j if j + 1 == k => (s.current, 0),
            _ => (0, 0),
        };
        let weighed = p as u128 * (w - e) as u128;
        let weight = match self.cfg.weight {
            Weight::Exact => weighed.div_ceil(w as u128),
            Weight::Floor => weighed / w as u128,
        };
        (self.cfg.limit as u128).saturating_sub(c as u128 + weight) as u64
    }
}

impl SlidingCounterRule {
    /// The rule itself: decides and counts.
    fn count(&self, s: &mut WindowCounts, now: Nanos, cost: u64) -> Decision {
        let cfg = self.cfg;
        let w = cfg.window.0;
        let k = now.0 / w;
        let e = now.0 - k * w;
        if s.window != k {
            s.previous = if s.window + 1 == k { s.current } else { 0 };
            s.current = 0;
            s.window = k;
        }
        let fits = Self::budget(&cfg, s.current, cost)
            .is_some_and(|budget| s.previous as u128 * (w - e) as u128 <= budget);
        if fits {
            s.current += cost;
            return Decision::Admitted;
        }
        if cfg.count_rejected {
            s.current += cost;
        }
        if cost > cfg.limit {
            return Decision::Rejected { retry_after: None };
        }
        let WindowCounts {
            previous, current, ..
        } = *s;
        // Later in this window, or else in the next one, where this window's
        // count becomes the previous one.
        let at = match self.earliest_offset(previous, current, cost) {
            Some(e2) if e2 > e => k * w + e2,
            _ => {
                let e2 = self.earliest_offset(current, 0, cost).unwrap_or(w);
                (k + 1) * w + e2
            }
        };
        Decision::Rejected {
            retry_after: Some(Nanos(at - now.0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::Limiter;

    const MS: u64 = 1_000_000;

    fn counter(limit: u64, count_rejected: bool) -> SlidingCounter {
        weighted(limit, count_rejected, Weight::Exact)
    }

    fn weighted(limit: u64, count_rejected: bool, weight: Weight) -> SlidingCounter {
        SlidingCounter::new(Config {
            limit,
            window: Nanos(1000 * MS),
            count_rejected,
            weight,
        })
    }

    #[test]
    fn the_previous_window_weighs_in_by_its_remaining_share() {
        let mut sc = counter(10, false);
        for _ in 0..10 {
            assert_eq!(sc.decide(0, Nanos(500 * MS), 1), Decision::Admitted);
        }
        // At 1.0s the previous 10 weigh fully: nothing fits until 10% of the
        // window has passed, i.e. until 1.1s.
        assert_eq!(
            sc.decide(0, Nanos(1000 * MS), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(100 * MS))
            }
        );
        assert_eq!(sc.decide(0, Nanos(1100 * MS), 1), Decision::Admitted);
        // 10·0.8 + 2 = 10 at 1.2s: a second one fits exactly then.
        assert!(!sc.decide(0, Nanos(1200 * MS - 1), 1).passes());
        assert_eq!(sc.decide(0, Nanos(1200 * MS), 1), Decision::Admitted);
    }

    #[test]
    fn a_full_current_window_retries_in_the_next_one() {
        let mut sc = counter(4, false);
        for _ in 0..4 {
            sc.decide(0, Nanos(0), 1);
        }
        // Next window: previous = 4, needs 4·(W − e) + W ≤ 4W ⇒ e ≥ W/4.
        assert_eq!(
            sc.decide(0, Nanos(600 * MS), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(650 * MS))
            }
        );
    }

    #[test]
    fn a_request_of_the_whole_limit_waits_for_an_empty_previous_window() {
        let mut sc = counter(4, false);
        sc.decide(0, Nanos(0), 1);
        assert_eq!(
            sc.decide(0, Nanos(0), 4),
            Decision::Rejected {
                retry_after: Some(Nanos(2000 * MS))
            }
        );
        assert_eq!(
            sc.decide(0, Nanos(0), 5),
            Decision::Rejected { retry_after: None }
        );
    }

    #[test]
    fn counting_rejections_pushes_the_retry_later() {
        let mut plain = counter(2, false);
        let mut counting = counter(2, true);
        for sc in [&mut plain, &mut counting] {
            sc.decide(0, Nanos(0), 2);
        }
        // plain: previous 2 ⇒ 2·(W−e) + W ≤ 2W ⇒ e ≥ W/2.
        assert_eq!(
            plain.decide(0, Nanos(0), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(1500 * MS))
            }
        );
        // counting: previous 3 ⇒ 3·(W−e) + W ≤ 2W ⇒ e ≥ 2W/3, rounded up.
        assert_eq!(
            counting.decide(0, Nanos(0), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(1_666_666_667))
            }
        );
    }

    #[test]
    fn a_key_counts_while_either_window_count_weighs() {
        let mut sc = counter(4, false);
        sc.decide(0, Nanos(500 * MS), 1);
        // Window 0's count weighs through window 1.
        assert_eq!(sc.fresh_at(0), Nanos(2000 * MS));
        let f = sc.footprint(Nanos(5000 * MS));
        assert_eq!(f.byte_ns, 12 * 1500 * MS as u128);
        // Redis: the script's one hash, until neither count weighs.
        let hash = crate::limiter::redis_bytes::HASH as u128;
        assert_eq!(f.redis_byte_ns, hash * 1500 * MS as u128);
        sc.decide(0, Nanos(1500 * MS), 1);
        assert_eq!(sc.fresh_at(0), Nanos(3000 * MS));
        assert_eq!(sc.footprint(Nanos(5000 * MS)).redis_peak_total, hash as u64);
    }

    #[test]
    fn a_floored_weight_admits_while_the_fraction_is_still_there() {
        let mut exact = counter(10, false);
        let mut floor = weighted(10, false, Weight::Floor);
        for sc in [&mut exact, &mut floor] {
            for _ in 0..10 {
                assert_eq!(sc.decide(0, Nanos(500 * MS), 1), Decision::Admitted);
            }
        }
        // At 1.05s the previous 10 weigh 9.5: exact 9.5 + 1 > 10 rejects
        // until 1.1s, floor ⌊9.5⌋ + 1 = 10 admits.
        assert_eq!(
            exact.decide(0, Nanos(1050 * MS), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(50 * MS))
            }
        );
        assert_eq!(floor.decide(0, Nanos(1050 * MS), 1), Decision::Admitted);
    }

    #[test]
    fn a_floored_weight_retries_once_the_weight_drops_below_the_next_integer() {
        let mut sc = weighted(10, false, Weight::Floor);
        for _ in 0..10 {
            sc.decide(0, Nanos(0), 1);
        }
        // At 1s the previous 10 weigh 10: ⌊10·(W − e)/W⌋ ≤ 9 needs
        // 10·(W − e) < 10·W, i.e. e ≥ 1 ns.
        assert_eq!(
            sc.decide(0, Nanos(1000 * MS), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(1))
            }
        );
        assert_eq!(sc.decide(0, Nanos(1000 * MS + 1), 1), Decision::Admitted);
        // Now c = 1: ⌊10·(W − e)/W⌋ ≤ 8 needs 10·(W − e) < 9·W, e > W/10.
        assert_eq!(
            sc.decide(0, Nanos(1050 * MS), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(50 * MS + 1))
            }
        );
        assert!(!sc.decide(0, Nanos(1100 * MS), 1).passes());
        assert_eq!(sc.decide(0, Nanos(1100 * MS + 1), 1), Decision::Admitted);
    }

    #[test]
    fn a_floored_weight_of_a_small_previous_count_never_holds_a_request_back() {
        let mut sc = weighted(3, false, Weight::Floor);
        sc.decide(0, Nanos(900 * MS), 1);
        // p = 1 weighs less than 1 at every e > 0, and floors to 0.
        for _ in 0..3 {
            assert_eq!(sc.decide(0, Nanos(1000 * MS + 1), 1), Decision::Admitted);
        }
    }

    #[test]
    fn a_floored_count_stops_weighing_once_it_floors_to_zero() {
        let mut sc = weighted(3, false, Weight::Floor);
        sc.decide(0, Nanos(500 * MS), 1);
        // ⌊1·(W − e)/W⌋ is 1 at e = 0 and 0 from e = 1 ns on.
        assert_eq!(sc.fresh_at(0), Nanos(1000 * MS + 1));
        let mut early = weighted(3, false, Weight::Floor);
        early.decide(0, Nanos(500 * MS), 1);
        assert!(!early.decide(0, Nanos(1000 * MS), 3).passes());
        assert_eq!(sc.decide(0, Nanos(1000 * MS + 1), 3), Decision::Admitted);
    }

    #[test]
    fn a_floored_count_that_grows_is_held_in_redis_until_it_stops_weighing() {
        let mut sc = weighted(10, false, Weight::Floor);
        // One request would stop weighing at 1 s + 1 ns; ten make the
        // count weigh until ⌊10·(W − e)/W⌋ = 0, from e = W − ⌊(W − 1)/10⌋.
        for _ in 0..10 {
            sc.decide(0, Nanos(500 * MS), 1);
        }
        let w = 1000 * MS;
        let fresh = w + w - (w - 1) / 10;
        assert_eq!(sc.fresh_at(0), Nanos(fresh));
        // Both figures hold one key from 0.5 s until then: the Redis hash
        // does not leave earlier, when the first request alone would have
        // stopped weighing.
        let f = sc.footprint(Nanos(5000 * MS));
        let life = (fresh - 500 * MS) as u128;
        assert_eq!(f.byte_ns, 12 * life);
        let hash = crate::limiter::redis_bytes::HASH as u128;
        assert_eq!(f.redis_byte_ns, hash * life);
    }
}
