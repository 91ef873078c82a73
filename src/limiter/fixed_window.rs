//! Fixed window: one counter per aligned window `[k·W, (k+1)·W)`.
//!
//! ```text
//! admit  ⇔  count + cost ≤ limit          then count += cost
//! ```
//!
//! The counter resets at every window start, and nothing remembers the window
//! before. That is why a client sending `limit` requests just before a boundary
//! and `limit` just after passes `2 × limit` within a few milliseconds — the
//! boundary burst that `ratesim run boundary` shows. Pick it for its cheap,
//! shardable state (one counter in a key that names the window), knowing this.
//!
//! With `count_rejected = true` rejected attempts count too, as with
//! envoyproxy/ratelimit's Redis `INCRBY`-then-compare: a client that keeps
//! hammering stays locked out until the window ends.

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
struct Counter {
    window: u64,
    count: u64,
}

pub struct FixedWindow {
    cfg: Config,
    keys: Keyed<Counter>,
    ledger: Ledger,
}

impl FixedWindow {
    pub fn new(cfg: Config) -> Self {
        FixedWindow {
            cfg,
            keys: Keyed::default(),
            ledger: Ledger::fixed::<{ state_bytes::FIXED_WINDOW }, { redis_bytes::STRING_INT }>(),
        }
    }

    /// Fresh-equivalent when its window ends, `(k + 1)·W` — or at once if
    /// its count is 0 (a fresh key is count 0 in the current window). Before
    /// that, a request of `limit` is refused.
    fn rehold(&mut self, key: u32) {
        let Some(c) = self.keys.get(key) else { return };
        let at = if c.count == 0 {
            0
        } else {
            (c.window as u128 + 1) * self.cfg.window.0 as u128
        };
        self.ledger.hold(key, span(at), []);
    }

    fn decide_inner(&mut self, key: u32, now: Nanos, cost: u64) -> Decision {
        let cfg = self.cfg;
        let k = now.0 / cfg.window.0;
        let c = self.keys.entry(key, || Counter {
            window: k,
            count: 0,
        });
        if c.window != k {
            *c = Counter {
                window: k,
                count: 0,
            };
        }
        if c.count + cost <= cfg.limit {
            c.count += cost;
            return Decision::Admitted;
        }
        if cfg.count_rejected {
            c.count += cost;
        }
        let retry_after = (cost <= cfg.limit).then(|| Nanos((k + 1) * cfg.window.0 - now.0));
        Decision::Rejected { retry_after }
    }
}

impl Limiter for FixedWindow {
    fn decide(&mut self, key: u32, now: Nanos, cost: u64) -> Decision {
        self.ledger.advance(now);
        let decision = self.decide_inner(key, now, cost);
        self.rehold(key);
        decision
    }

    detachable!(keys);

    fn footprint(&self, end: Nanos) -> Footprint {
        self.ledger.footprint(self.keys.keys(), end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn window(limit: u64, count_rejected: bool) -> FixedWindow {
        FixedWindow::new(Config {
            limit,
            window: Nanos(1000 * MS),
            count_rejected,
        })
    }

    #[test]
    fn fixed_window_admits_twice_the_limit_across_a_boundary() {
        let mut fw = window(10, false);
        let mut passed = 0;
        for _ in 0..10 {
            passed += fw.decide(0, Nanos(999 * MS), 1).passes() as u32;
        }
        for _ in 0..10 {
            passed += fw.decide(0, Nanos(1000 * MS), 1).passes() as u32;
        }
        assert_eq!(passed, 20, "20 passes within 1ms under a limit of 10/s");
    }

    #[test]
    fn a_rejection_retries_at_the_next_window_start() {
        let mut fw = window(1, false);
        assert_eq!(fw.decide(0, Nanos(250 * MS), 1), Decision::Admitted);
        assert_eq!(
            fw.decide(0, Nanos(250 * MS), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(750 * MS))
            }
        );
        assert_eq!(
            fw.decide(0, Nanos(0), 2),
            Decision::Rejected { retry_after: None }
        );
    }

    #[test]
    fn counting_rejections_locks_a_hammering_client_out() {
        let mut plain = window(3, false);
        let mut counting = window(3, true);
        for fw in [&mut plain, &mut counting] {
            assert_eq!(fw.decide(0, Nanos(0), 2), Decision::Admitted);
            assert!(!fw.decide(0, Nanos(0), 2).passes());
        }
        // The rejected 2 counted: even cost 1 no longer fits.
        assert_eq!(plain.decide(0, Nanos(MS), 1), Decision::Admitted);
        assert!(!counting.decide(0, Nanos(MS), 1).passes());
        assert_eq!(counting.decide(0, Nanos(1000 * MS), 3), Decision::Admitted);
    }

    #[test]
    fn a_key_counts_until_its_window_ends_and_not_at_all_with_count_zero() {
        let mut fw = window(1, false);
        fw.decide(0, Nanos(250 * MS), 1);
        assert_eq!(fw.fresh_at(0), Nanos(1000 * MS));
        // Cost above the limit, not counted: the key stays fresh.
        fw.decide(1, Nanos(250 * MS), 2);
        assert_eq!(fw.fresh_at(1), Nanos(0));
        let f = fw.footprint(Nanos(3000 * MS));
        assert_eq!((f.byte_ns, f.keys), (8 * 750 * MS as u128, 2));
    }
}
