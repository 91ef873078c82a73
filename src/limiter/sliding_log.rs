//! Sliding log: remember every request of the last window, exactly.
//!
//! **What it models.** Each key keeps a log of `(time, cost)`. An entry is
//! live at `t` iff `time > t − W`, so an entry made at `s` expires at
//! `s + W`.
//!
//! ```text
//! admit  ⇔  live cost + cost ≤ limit        then append (t, cost)
//! ```
//!
//! No interval `(s − W, s]` ever passes more than `limit`: the sliding log
//! is the exact answer to "at most N per W". With `count_rejected = true`
//! rejected attempts are logged too, so a client that keeps retrying keeps
//! itself out.
//!
//! **When to pick it.** When the limit must hold over every window, not
//! just aligned ones, and the memory is affordable: it pays one timestamp
//! per request in the window, which the `state_bytes_per_key` columns make
//! visible next to the counters. [`super::sliding_counter`] approximates it
//! in two counters.
//!
//! **In the wild.** The common Redis sorted-set limiter, which `ZADD`s
//! before it counts (`count_rejected = true`); Python `limits`'
//! `MovingWindowRateLimiter` with `boundary = "inclusive"` below (preset
//! `python-limits-moving`).
//!
//! **Retry-after.** The live cost must drop by
//! `excess = live + cost − limit` (with `count_rejected`, `live` already
//! includes the refused attempt, logged first). Entries expire oldest
//! first, so the request fits once the oldest entries whose costs add up to
//! `excess` have gone — when the last of them, made at `s_j`, expires:
//!
//! ```text
//! retry_after = s_j + W − t
//! ```
//!
//! It is the smallest wait: with nothing arriving the live cost drops only
//! when entries expire, in order of their times; a nanosecond before
//! `s_j + W` entry `j` is still live and the oldest entries still add up to
//! less than `excess`. It is at least 1 ns because entry `j` is live at
//! `t`. No arithmetic is rounded. A `cost` above `limit` never fits: no
//! retry-after.
//!
//! **Fresh-equivalent.** Once every entry has expired, at `s + W` for its
//! newest entry `s`: an empty log is a new key's, and while any entry is
//! live a request of `limit` is refused. The key is charged
//! [`state_bytes::SLIDING_LOG_PER_ENTRY`] (8 bytes) per live entry, each an
//! item of the ledger that expires at its own `s + W`, and nothing per key
//! — the moment `redis/sliding_log.lua` sets its `PEXPIRE` to.
//!
//! ## `boundary = "inclusive"` (Python `limits` MovingWindow)
//!
//! Python `limits` keeps an entry alive while `entry ≥ t − W`: an entry made
//! at `s` is still live at exactly `s + W` and expires at `s + W + 1 ns`.
//!
//! ```text
//! live at t  ⇔  s ≥ t − W            retry_after = s_j + W + 1 − t
//! ```
//!
//! That is the textbook rule with a window one nanosecond longer, which is
//! how it is built — in its decisions, its retry-after and its memory alike:
//! decisions differ from `exclusive` only when two arrivals are exactly `W`
//! apart.
//!
//! [`state_bytes::SLIDING_LOG_PER_ENTRY`]: super::state_bytes::SLIDING_LOG_PER_ENTRY

use std::collections::VecDeque;

use super::{redis_bytes, state_bytes, Decision, Ledger, Rule, Stored};
use crate::clock::Nanos;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub limit: u64,
    pub window: Nanos,
    pub count_rejected: bool,
    pub boundary: Boundary,
}

/// Whether an entry exactly one window old is still live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Boundary {
    /// Live iff `s > t − W` (DESIGN §2).
    #[default]
    Exclusive,
    /// Live iff `s ≥ t − W` (DESIGN §5, Python `limits`).
    Inclusive,
}

impl Boundary {
    /// The accepted spellings, default first.
    pub const NAMES: &'static [&'static str] = &["exclusive", "inclusive"];

    pub fn as_str(self) -> &'static str {
        match self {
            Boundary::Exclusive => "exclusive",
            Boundary::Inclusive => "inclusive",
        }
    }

    pub fn parse(s: &str) -> Option<Boundary> {
        match s {
            "exclusive" => Some(Boundary::Exclusive),
            "inclusive" => Some(Boundary::Inclusive),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Log {
    /// `(time, cumulative cost up to and including this entry)`, oldest first.
    entries: VecDeque<(u64, u64)>,
    /// Cumulative cost of everything already expired.
    expired: u64,
    /// Cumulative cost of everything ever logged.
    total: u64,
}

/// The sliding log's rule.
pub struct SlidingLogRule {
    cfg: Config,
}

/// A sliding log per key.
pub type SlidingLog = Stored<SlidingLogRule>;

impl SlidingLog {
    pub fn new(cfg: Config) -> Self {
        // `s ≥ t − W` is `s > t − (W + 1 ns)`: an inclusive log is an
        // exclusive one whose entries live one nanosecond longer — in its
        // decisions, its retry-after and its memory alike. Everything below
        // reads the window only through this `cfg`.
        let cfg = match cfg.boundary {
            Boundary::Exclusive => cfg,
            Boundary::Inclusive => Config {
                window: Nanos(cfg.window.0 + 1),
                boundary: Boundary::Exclusive,
                ..cfg
            },
        };
        Stored::of(
            SlidingLogRule { cfg },
            // Compact: 8 bytes per live entry. Redis: a sorted set, one
            // member per entry (`ZREMRANGEBYSCORE` prunes, `PEXPIRE` drops
            // the key with its last entry).
            Ledger::new(
                |entries, _| entries * state_bytes::SLIDING_LOG_PER_ENTRY,
                redis_bytes::zset,
            ),
        )
    }
}

impl Rule for SlidingLogRule {
    type State = Log;

    fn fresh(&self, _now: Nanos) -> Log {
        Log::default()
    }

    fn decide(&self, log: &mut Log, now: Nanos, cost: u64) -> (Decision, Option<u64>) {
        let w = self.cfg.window.0;
        let before = log.total;
        while let Some(&(s, cum)) = log.entries.front() {
            if s + w > now.0 {
                break;
            }
            log.entries.pop_front();
            log.expired = cum;
        }
        let live = log.total - log.expired;
        let admit = live + cost <= self.cfg.limit;
        if admit || self.cfg.count_rejected {
            log.total += cost;
            log.entries.push_back((now.0, log.total));
        }
        // The entry just logged, an item until it expires.
        let added = (log.total != before).then_some(now.0 + w);
        if admit {
            return (Decision::Admitted, added);
        }
        if cost > self.cfg.limit {
            return (Decision::Rejected { retry_after: None }, added);
        }
        // Passes once the live cost, plus this cost, fits: the oldest entries
        // must expire until their cost adds up to `excess`.
        let excess = (log.total - log.expired) + cost - self.cfg.limit;
        let j = log
            .entries
            .partition_point(|&(_, cum)| cum - log.expired < excess);
        let (s, _) = log.entries[j];
        let retry_after = Some(Nanos(s + w - now.0));
        (Decision::Rejected { retry_after }, added)
    }

    /// Fresh-equivalent once every entry has expired, at `s + W` for its
    /// newest entry `s`: an empty log is a fresh key's, and while any entry
    /// is live a request of `limit` is refused. Each entry is an item that
    /// expires at its own `s + W`.
    fn fresh_at(&self, log: &Log) -> Nanos {
        Nanos(
            log.entries
                .back()
                .map_or(0, |&(s, _)| s + self.cfg.window.0),
        )
    }

    fn items(&self, log: &Log) -> impl Iterator<Item = u64> {
        let w = self.cfg.window.0;
        log.entries.iter().map(move |&(s, _)| s + w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::Limiter;

    const MS: u64 = 1_000_000;

    fn log(limit: u64, count_rejected: bool) -> SlidingLog {
        bounded(limit, count_rejected, Boundary::Exclusive)
    }

    fn bounded(limit: u64, count_rejected: bool, boundary: Boundary) -> SlidingLog {
        SlidingLog::new(Config {
            limit,
            window: Nanos(1000 * MS),
            count_rejected,
            boundary,
        })
    }

    #[test]
    fn the_log_remembers_across_a_boundary() {
        let mut sl = log(10, false);
        let mut passed = 0;
        for t in [999, 1000] {
            for _ in 0..10 {
                passed += sl.decide(0, Nanos(t * MS), 1).passes() as u32;
            }
        }
        assert_eq!(passed, 10);
    }

    #[test]
    fn an_entry_expires_exactly_one_window_after_it_was_made() {
        let mut sl = log(2, false);
        assert_eq!(sl.decide(0, Nanos(100 * MS), 1), Decision::Admitted);
        assert_eq!(sl.decide(0, Nanos(300 * MS), 1), Decision::Admitted);
        assert_eq!(
            sl.decide(0, Nanos(500 * MS), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(600 * MS))
            }
        );
        assert!(!sl.decide(0, Nanos(1100 * MS - 1), 1).passes());
        assert_eq!(sl.decide(0, Nanos(1100 * MS), 1), Decision::Admitted);
    }

    #[test]
    fn retry_after_waits_for_enough_cost_to_expire() {
        let mut sl = log(5, false);
        assert_eq!(sl.decide(0, Nanos(0), 2), Decision::Admitted);
        assert_eq!(sl.decide(0, Nanos(100 * MS), 2), Decision::Admitted);
        assert_eq!(sl.decide(0, Nanos(200 * MS), 1), Decision::Admitted);
        // Cost 4 needs 4 free: the first two entries (cost 2 + 2) must expire.
        assert_eq!(
            sl.decide(0, Nanos(300 * MS), 4),
            Decision::Rejected {
                retry_after: Some(Nanos(800 * MS))
            }
        );
        assert_eq!(
            sl.decide(0, Nanos(300 * MS), 6),
            Decision::Rejected { retry_after: None }
        );
    }

    #[test]
    fn counting_rejections_logs_the_rejected_attempt_first() {
        let mut sl = log(1, true);
        assert_eq!(sl.decide(0, Nanos(0), 1), Decision::Admitted);
        // Logged at 500ms, so the retry must wait for it to expire too.
        assert_eq!(
            sl.decide(0, Nanos(500 * MS), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(1000 * MS))
            }
        );
    }

    #[test]
    fn state_is_eight_bytes_per_live_entry() {
        let mut sl = log(3, false);
        for _ in 0..3 {
            sl.decide(0, Nanos(0), 1);
        }
        // Three entries live for the whole 1s window, then none: over 2s the
        // mean is 3 × 8 bytes × 1s / 2s = 12 bytes.
        let f = sl.footprint(Nanos(2000 * MS));
        assert_eq!(f.peak_bytes, 24);
        assert_eq!(f.mean(), (24 * 1000 * MS as u128, 2000 * MS as u128));
    }

    #[test]
    fn a_key_counts_until_its_newest_entry_expires() {
        let mut sl = log(5, false);
        sl.decide(0, Nanos(100 * MS), 1);
        sl.decide(0, Nanos(300 * MS), 1);
        assert_eq!(sl.fresh_at(0), Nanos(1300 * MS));
        let f = sl.footprint(Nanos(5000 * MS));
        assert_eq!(f.byte_ns, 2 * 8 * 1000 * MS as u128);
        assert_eq!(f.peak_total, 16);
        // Redis: a listpack sorted set of 1, then 2, then 1 entries.
        use crate::limiter::redis_bytes::zset;
        let redis = zset(1, 1) as u128 * 200 * MS as u128
            + zset(2, 2) as u128 * 800 * MS as u128
            + zset(1, 2) as u128 * 200 * MS as u128;
        assert_eq!(f.redis_byte_ns, redis);
        assert_eq!(f.redis_peak_total, zset(2, 2));
    }

    #[test]
    fn an_inclusive_entry_is_still_live_exactly_one_window_later() {
        let mut sl = bounded(1, false, Boundary::Inclusive);
        assert_eq!(sl.decide(0, Nanos(100 * MS), 1), Decision::Admitted);
        assert_eq!(
            sl.decide(0, Nanos(1100 * MS), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(1))
            }
        );
        assert_eq!(sl.decide(0, Nanos(1100 * MS + 1), 1), Decision::Admitted);
    }

    #[test]
    fn inclusive_retry_after_waits_one_nanosecond_past_the_window() {
        let mut sl = bounded(2, false, Boundary::Inclusive);
        assert_eq!(sl.decide(0, Nanos(0), 1), Decision::Admitted);
        assert_eq!(sl.decide(0, Nanos(300 * MS), 1), Decision::Admitted);
        assert_eq!(
            sl.decide(0, Nanos(500 * MS), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(500 * MS + 1))
            }
        );
        // The exclusive log lets the same request in at exactly 1s.
        let mut ex = log(2, false);
        ex.decide(0, Nanos(0), 1);
        ex.decide(0, Nanos(300 * MS), 1);
        assert_eq!(
            ex.decide(0, Nanos(500 * MS), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(500 * MS))
            }
        );
    }

    #[test]
    fn an_inclusive_entry_is_held_one_nanosecond_longer() {
        let mut sl = bounded(1, false, Boundary::Inclusive);
        sl.decide(0, Nanos(0), 1);
        let f = sl.footprint(Nanos(2000 * MS));
        assert_eq!(f.byte_ns, 8 * (1000 * MS as u128 + 1));
    }
}
