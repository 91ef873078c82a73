//! Sliding counter: estimate the sliding window from two fixed-window counts
//! (Cloudflare's approach).
//!
//! Windows are aligned as in the fixed window. At `t = k·W + e`, `p` is the
//! count of window `k − 1` and `c` the count of window `k`. The previous
//! window is assumed to have been spread evenly, so the part of it still
//! inside the sliding window `(t − W, t]` is weighted by `(W − e)/W`:
//!
//! ```text
//! admit  ⇔  p·(W − e) + (c + cost)·W ≤ limit·W        then c += cost
//! ```
//!
//! (exact integers: no division, no rounding). Two counters per key give a
//! close approximation of the sliding log at a fraction of its memory; pick
//! it when the log is too big and the fixed window's boundary burst too
//! much. With `count_rejected = true` rejected cost adds to `c` too.

use super::{
    detachable, redis_bytes, span, state_bytes, Decision, Footprint, Keyed, Ledger, Limiter,
};
use crate::clock::Nanos;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub limit: u64,
    pub window: Nanos,
    pub count_rejected: bool,
}

#[derive(Debug, Clone, Copy)]
struct Counts {
    window: u64,
    previous: u64,
    current: u64,
}

pub struct SlidingCounter {
    cfg: Config,
    keys: Keyed<Counts>,
    ledger: Ledger,
}

impl SlidingCounter {
    pub fn new(cfg: Config) -> Self {
        SlidingCounter {
            cfg,
            keys: Keyed::default(),
            // In Redis, one counter key per window (`key:k`), each expiring
            // once it no longer weighs: the items.
            ledger: Ledger::new(
                |_, _| state_bytes::SLIDING_COUNTER,
                |windows, _| windows * redis_bytes::STRING_INT,
            ),
        }
    }

    /// Fresh-equivalent once neither count weighs: window `k`'s count
    /// weighs through window `k + 1` (as `p`, by `W − e ≥ 1`), so a key
    /// whose current count is non-zero is fresh-equivalent at `(k + 2)·W`,
    /// one with only a previous count at `(k + 1)·W`. Before that a request
    /// of `limit` is refused. Each non-zero window count is an item that
    /// expires at the same moment.
    fn windows(&self, c: &Counts) -> (Nanos, [Option<u64>; 2]) {
        let w = self.cfg.window.0 as u128;
        let k = c.window as u128;
        let end = |j: u128| span(j * w).0;
        let current = (c.current > 0).then(|| end(k + 2));
        let previous = (c.previous > 0 && k > 0).then(|| end(k + 1));
        (
            Nanos(current.or(previous).unwrap_or(0)),
            [previous, current],
        )
    }

    fn rehold(&mut self, key: u32) {
        let Some(c) = self.keys.get(key) else { return };
        let (at, items) = self.windows(c);
        self.ledger.replace(key, at, items.into_iter().flatten());
    }

    /// The smallest offset `e` into a window whose previous count is `p` and
    /// current count `c` at which `cost` fits, if any before the window ends.
    fn earliest_offset(&self, p: u64, c: u64, cost: u64) -> Option<u64> {
        let (limit, w) = (self.cfg.limit as u128, self.cfg.window.0 as u128);
        let room = limit.checked_sub(c as u128 + cost as u128)?;
        if p == 0 {
            return Some(0);
        }
        // p·(W − e) ≤ room·W  ⇔  e ≥ W − room·W/p.
        let e = w.saturating_sub(room * w / p as u128);
        (e < w).then_some(e as u64)
    }
}

impl Limiter for SlidingCounter {
    fn decide(&mut self, key: u32, now: Nanos, cost: u64) -> Decision {
        self.ledger.advance(now);
        let before = self.keys.get(key).map(|c| (c.window, c.current));
        let decision = self.decide_inner(key, now, cost);
        let Some(c) = self.keys.get(key) else {
            return decision;
        };
        let (at, [_, current]) = self.windows(c);
        // The current window's counter is new if it was zero before.
        let opened = !matches!(before, Some((w, n)) if w == c.window && n > 0);
        self.ledger.hold(key, at, current.filter(|_| opened));
        decision
    }

    detachable!(keys);

    fn footprint(&self, end: Nanos) -> Footprint {
        self.ledger.footprint(self.keys.keys(), end)
    }
}

impl SlidingCounter {
    fn decide_inner(&mut self, key: u32, now: Nanos, cost: u64) -> Decision {
        let cfg = self.cfg;
        let w = cfg.window.0;
        let k = now.0 / w;
        let e = now.0 - k * w;
        let s = self.keys.entry(key, || Counts {
            window: k,
            previous: 0,
            current: 0,
        });
        if s.window != k {
            s.previous = if s.window + 1 == k { s.current } else { 0 };
            s.current = 0;
            s.window = k;
        }
        let (p, c) = (s.previous as u128, s.current as u128);
        let weighted = p * (w - e) as u128 + (c + cost as u128) * w as u128;
        if weighted <= cfg.limit as u128 * w as u128 {
            s.current += cost;
            return Decision::Admitted;
        }
        if cfg.count_rejected {
            s.current += cost;
        }
        if cost > cfg.limit {
            return Decision::Rejected { retry_after: None };
        }
        let Counts {
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

    const MS: u64 = 1_000_000;

    fn counter(limit: u64, count_rejected: bool) -> SlidingCounter {
        SlidingCounter::new(Config {
            limit,
            window: Nanos(1000 * MS),
            count_rejected,
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
        // Redis: one counter key for window 0, until it stops weighing.
        let one = crate::limiter::redis_bytes::STRING_INT as u128;
        assert_eq!(f.redis_byte_ns, one * 1500 * MS as u128);
        sc.decide(0, Nanos(1500 * MS), 1);
        assert_eq!(sc.fresh_at(0), Nanos(3000 * MS));
        assert_eq!(
            sc.footprint(Nanos(5000 * MS)).redis_peak_total,
            2 * one as u64
        );
    }
}
