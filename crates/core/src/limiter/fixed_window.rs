//! Fixed window: one counter per key and aligned window `[k·W, (k+1)·W)`.
//!
//! **What it models.** Time is cut into windows of length `W` from t = 0;
//! each key counts the cost admitted in the current window.
//!
//! ```text
//! admit  ⇔  count + cost ≤ limit          then count += cost
//! ```
//!
//! The counter resets at every window start, and nothing remembers the
//! window before. That is why a client sending `limit` requests just before
//! a boundary and `limit` just after passes `2 × limit` within a few
//! milliseconds — the boundary burst that `ratesim run boundary` shows.
//!
//! With `count_rejected = true` rejected attempts count too, as with an
//! `INCRBY`-then-compare counter: a client that keeps hammering stays
//! locked out until the window ends.
//!
//! **When to pick it.** For its cheap, shardable state — one counter in a
//! key that names the window — knowing about the boundary burst.
//!
//! **In the wild.** envoyproxy/ratelimit's Redis counter (with
//! `count_rejected`, preset `envoy-ratelimit`); with `align = "first_hit"`
//! below, Redis `INCR` + `EXPIRE` (preset `redis-incr-expire`) and Python
//! `limits`' `FixedWindowRateLimiter` (preset `python-limits-fixed`).
//!
//! **Retry-after.** The next window start:
//!
//! ```text
//! retry_after = (k + 1)·W − t         (first_hit: s + W − t)
//! ```
//!
//! It is the smallest wait: with nothing arriving the count of the current
//! window never drops (a counted rejection only raises it), so nothing
//! fits before the window ends; at its end the count is 0 and any
//! `cost ≤ limit` fits. It is at least 1 ns because the window ends after
//! `t`. With `count_rejected` the refused attempt is counted first, which
//! changes nothing here. A `cost` above `limit` never fits: no retry-after.
//!
//! **Fresh-equivalent.** When its window ends, at `(k + 1)·W` — or at once
//! if its count is 0, since a new key is count 0 in the current window (a
//! refused request that is not counted leaves a new key as new). Before
//! that, a request of `limit` is refused. The key is charged
//! [`state_bytes::FIXED_WINDOW`] (8 bytes: window index and count) until
//! then.
//!
//! ## `align = "first_hit"` (Redis `INCR` + `EXPIRE`, Python `limits`)
//!
//! The textbook windows are aligned to the epoch: every key's windows start
//! at `k·W`. A counter kept in Redis with `INCR key` and `EXPIRE key W` set
//! on the first increment — and Python `limits`' `FixedWindowRateLimiter` —
//! instead start a key's window at its first hit:
//!
//! ```text
//! no window, or t ≥ s + W   →  open [t, t + W) with count 0 (whatever the outcome)
//! admit  ⇔  count + cost ≤ limit          then count += cost
//! retry_after = s + W − t                 (cost ≤ limit)
//! ```
//!
//! Each key then has its own boundaries, so the boundary burst of
//! `2 × limit` in well under `W` still happens, only at moments that depend
//! on when the key first spoke rather than at `k·W`. Both libraries
//! increment before they compare, so they are used with
//! `count_rejected = true`. A first-hit key is fresh-equivalent only at
//! `s + W`, even with count 0: its open window decides where the next
//! request's window ends, and a new key's would end later.
//!
//! [`state_bytes::FIXED_WINDOW`]: super::state_bytes::FIXED_WINDOW

use super::{redis_bytes, span, state_bytes, Decision, FixedLedger, Rule, Stored};
use crate::clock::Nanos;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub limit: u64,
    pub window: Nanos,
    pub count_rejected: bool,
    pub align: Align,
}

/// Where a key's windows start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Align {
    /// At every `k·W` from t = 0, the same for every key (docs/semantics.md §2.5).
    #[default]
    Epoch,
    /// At the key's first request, then at the first request at or after
    /// the end of its window (docs/semantics.md §5).
    FirstHit,
}

impl Align {
    /// The accepted spellings, default first.
    pub const NAMES: &'static [&'static str] = &["epoch", "first_hit"];

    pub fn as_str(self) -> &'static str {
        match self {
            Align::Epoch => "epoch",
            Align::FirstHit => "first_hit",
        }
    }

    pub fn parse(s: &str) -> Option<Align> {
        match s {
            "epoch" => Some(Align::Epoch),
            "first_hit" => Some(Align::FirstHit),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Counter {
    /// The window this count belongs to: its index `k` (epoch alignment) or
    /// its start time in ns (first-hit alignment).
    window: u64,
    count: u64,
}

/// The fixed window's rule.
pub struct FixedWindowRule {
    cfg: Config,
}

/// A fixed window counter per key.
pub type FixedWindow = Stored<FixedWindowRule>;

impl FixedWindow {
    pub fn new(cfg: Config) -> Self {
        Stored::of(
            FixedWindowRule { cfg },
            FixedLedger::new(state_bytes::FIXED_WINDOW, redis_bytes::HASH),
        )
    }
}

impl FixedWindowRule {
    /// The window `now` falls in, given the key's current window (`None`
    /// for a new key).
    fn current(&self, window: Option<u64>, now: Nanos) -> u64 {
        let w = self.cfg.window.0;
        match self.cfg.align {
            Align::Epoch => now.0 / w,
            Align::FirstHit => match window {
                Some(s) if now.0 < s + w => s,
                _ => now.0,
            },
        }
    }

    /// When `window` ends.
    fn end(&self, window: u64) -> u64 {
        let w = self.cfg.window.0;
        match self.cfg.align {
            Align::Epoch => (window + 1) * w,
            Align::FirstHit => window + w,
        }
    }
}

impl Rule for FixedWindowRule {
    type State = Counter;

    fn fresh(&self, now: Nanos) -> Counter {
        Counter {
            window: self.current(None, now),
            count: 0,
        }
    }

    fn decide_uncounted(&self, c: &mut Counter, now: Nanos, cost: u64) -> Decision {
        let cfg = Config {
            count_rejected: false,
            ..self.cfg
        };
        FixedWindowRule { cfg }.decide(c, now, cost).0
    }

    #[inline(always)]
    fn decide(&self, c: &mut Counter, now: Nanos, cost: u64) -> (Decision, Option<u64>) {
        let cfg = self.cfg;
        let k = self.current(Some(c.window), now);
        if c.window != k {
            *c = Counter {
                window: k,
                count: 0,
            };
        }
        if c.count + cost <= cfg.limit {
            c.count += cost;
            return (Decision::Admitted, None);
        }
        if cfg.count_rejected {
            c.count += cost;
        }
        let retry_after = (cost <= cfg.limit).then(|| Nanos(self.end(k) - now.0));
        (Decision::Rejected { retry_after }, None)
    }

    /// Fresh-equivalent when its window ends: `(k + 1)·W` — or at once if
    /// its count is 0 (a fresh key is count 0 in the current window) — or,
    /// for `first_hit`, `s + W`. Before that, a request of `limit` is
    /// refused (or, for a first-hit window with count 0, would end earlier
    /// than a fresh key's).
    fn fresh_at(&self, c: &Counter) -> Nanos {
        let w = self.cfg.window.0 as u128;
        span(match self.cfg.align {
            Align::Epoch if c.count == 0 => 0,
            Align::Epoch => (c.window as u128 + 1) * w,
            // `window` holds the window's start, and an open window decides
            // the next request's boundaries even with count 0: it is fresh
            // only when it ends, at s + W.
            Align::FirstHit => c.window as u128 + w,
        })
    }

    /// `limit` less the count of the window `now` falls in (0 once over,
    /// as a `count_rejected` count may be) (docs/semantics.md §11).
    fn remaining(&self, c: &Counter, now: Nanos) -> u64 {
        let count = if self.current(Some(c.window), now) == c.window {
            c.count
        } else {
            0
        };
        self.cfg.limit.saturating_sub(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::Limiter;

    const MS: u64 = 1_000_000;

    fn window(limit: u64, count_rejected: bool) -> FixedWindow {
        aligned(limit, count_rejected, Align::Epoch)
    }

    fn aligned(limit: u64, count_rejected: bool, align: Align) -> FixedWindow {
        FixedWindow::new(Config {
            limit,
            window: Nanos(1000 * MS),
            count_rejected,
            align,
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

    #[test]
    fn a_first_hit_window_starts_at_the_keys_first_request_not_at_zero() {
        let mut fw = aligned(2, false, Align::FirstHit);
        assert_eq!(fw.decide(0, Nanos(700 * MS), 1), Decision::Admitted);
        assert_eq!(fw.decide(0, Nanos(1000 * MS), 1), Decision::Admitted);
        // Still the window [0.7s, 1.7s): the epoch boundary at 1s reset nothing.
        assert_eq!(
            fw.decide(0, Nanos(1200 * MS), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(500 * MS))
            }
        );
        assert!(!fw.decide(0, Nanos(1700 * MS - 1), 1).passes());
        // At exactly s + W a new window opens at the arrival.
        assert_eq!(fw.decide(0, Nanos(1700 * MS), 1), Decision::Admitted);
        assert_eq!(fw.decide(0, Nanos(2500 * MS), 1), Decision::Admitted);
        assert_eq!(
            fw.decide(0, Nanos(2600 * MS), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(100 * MS))
            }
        );
        assert_eq!(fw.decide(0, Nanos(2700 * MS), 1), Decision::Admitted);
    }

    #[test]
    fn a_first_hit_window_opens_late_after_a_quiet_spell() {
        let mut fw = aligned(1, false, Align::FirstHit);
        assert_eq!(fw.decide(0, Nanos(0), 1), Decision::Admitted);
        // The window [0, 1s) ended long ago; the next one starts at 5.3s.
        assert_eq!(fw.decide(0, Nanos(5300 * MS), 1), Decision::Admitted);
        assert_eq!(
            fw.decide(0, Nanos(6000 * MS), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(300 * MS))
            }
        );
    }

    #[test]
    fn a_rejected_first_hit_still_opens_the_window() {
        let mut fw = aligned(2, true, Align::FirstHit);
        // Too costly ever to pass, yet it opens [0.5s, 1.5s) and, counted, fills it.
        assert_eq!(
            fw.decide(0, Nanos(500 * MS), 3),
            Decision::Rejected { retry_after: None }
        );
        assert_eq!(
            fw.decide(0, Nanos(600 * MS), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(900 * MS))
            }
        );
        assert_eq!(fw.decide(0, Nanos(1500 * MS), 2), Decision::Admitted);
    }

    #[test]
    fn first_hit_keys_have_their_own_boundaries() {
        let mut fw = aligned(1, false, Align::FirstHit);
        assert_eq!(fw.decide(0, Nanos(100 * MS), 1), Decision::Admitted);
        assert_eq!(fw.decide(1, Nanos(900 * MS), 1), Decision::Admitted);
        assert_eq!(fw.decide(0, Nanos(1100 * MS), 1), Decision::Admitted);
        assert_eq!(
            fw.decide(1, Nanos(1100 * MS), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(800 * MS))
            }
        );
    }

    #[test]
    fn a_counted_rejection_still_retries_at_the_window_start_and_not_before() {
        let mut fw = window(2, true);
        assert_eq!(fw.decide(0, Nanos(100 * MS), 2), Decision::Admitted);
        assert_eq!(
            fw.decide(0, Nanos(300 * MS), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(700 * MS))
            }
        );
        assert!(!fw.decide(0, Nanos(1000 * MS - 1), 1).passes());
        assert_eq!(fw.decide(0, Nanos(1000 * MS), 2), Decision::Admitted);
    }
}
