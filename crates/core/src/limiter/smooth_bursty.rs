//! Smooth bursty: Guava's `RateLimiter.create(rate)` (SmoothBursty), asked
//! with `tryAcquire(cost)` and no timeout.
//!
//! **What it models.** A token balance `T` per key that may go negative — a
//! debt. It starts at 0 (`start = "empty"`, as Guava) or at `capacity`
//! (`"full"`) at the key's first request, refills at `rate` up to
//! `capacity`, and:
//!
//! ```text
//! T(t) = min(capacity, T(last) + rate · (t − last))
//! admit  ⇔  T(t) ≥ 0          then T −= cost      (any cost, even > capacity)
//! ```
//!
//! A refused request takes nothing. The difference from the textbook
//! [`super::token_bucket`] is who pays: the bucket admits a request as long
//! as no debt is outstanding, however much it costs, and makes the *next*
//! caller wait for it. One request of 100 passes a bucket of 10 at once;
//! the following ones are refused until the 100 have been earned back. With
//! unit costs and `start = "full"` it decides exactly as a token bucket of
//! `capacity + 1` (the balance plus the one unit of debt it may run into).
//!
//! **When to pick it.** To see what a JVM service built on Guava does, or
//! when an expensive request should go through now and be paid for by
//! later ones rather than be refused outright.
//!
//! **In the wild.** Guava's `RateLimiter` (preset `guava`). Guava's
//! `maxPermits` is `rate × maxBurstSeconds` (one second by default), given
//! here as `capacity`; its `storedPermits` and `nextFreeTicketMicros` are
//! `T` split into its positive and negative parts.
//!
//! **Retry-after.** A request is refused only while there is a debt, and
//! the debt is paid off at `rate`:
//!
//! ```text
//! retry_after = ⌈−T(t) / rate⌉
//! ```
//!
//! It is the smallest wait: with nothing arriving `T` only grows, at
//! `rate`, until it reaches `capacity ≥ 0`, so it first reaches 0 exactly
//! then, and whatever the cost, a request passes once `T ≥ 0`. It is at
//! least 1 ns because `T < 0`. Every refusal has a retry-after: no cost is
//! too large to pass.
//!
//! **Fresh-equivalent.** With `start = "full"`, once refilled to
//! `capacity`, as a token bucket: at `last + ⌈(capacity − T)/rate⌉`. With
//! `start = "empty"` never: a new key has nothing, a rested one has
//! `capacity`, and the two decide a burst differently for as long as the
//! key lives — so the key is charged [`state_bytes::SMOOTH_BURSTY`] (16
//! bytes) to the end of the run, and `redis/smooth_bursty.lua` sets no
//! expiry (docs/semantics.md §6).
//!
//! **Exactness.** With `rate = n/d` the balance is kept as `T · d` in
//! signed integers, so a refill over `Δ` ns adds `Δ · n`; only the
//! retry-after is rounded (up).
//!
//! [`state_bytes::SMOOTH_BURSTY`]: super::state_bytes::SMOOTH_BURSTY

use super::{redis_bytes, span, state_bytes, Decision, FixedLedger, Rule, Stored, UNBOUNDED};
use crate::clock::{div_ceil, Nanos, Rate};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub rate: Rate,
    pub capacity: u64,
    pub start: Start,
}

/// The balance a key starts with at its first request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Start {
    /// 0 tokens, as Guava's `RateLimiter.create`.
    #[default]
    Empty,
    /// `capacity` tokens, as a textbook bucket.
    Full,
}

impl Start {
    /// The accepted spellings, default first.
    pub const NAMES: &'static [&'static str] = &["empty", "full"];

    pub fn as_str(self) -> &'static str {
        match self {
            Start::Empty => "empty",
            Start::Full => "full",
        }
    }

    pub fn parse(s: &str) -> Option<Start> {
        match s {
            "empty" => Some(Start::Empty),
            "full" => Some(Start::Full),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct StoredPermits {
    /// Tokens × rate denominator; negative is debt.
    tokens: i128,
    last: Nanos,
}

/// Smooth bursty's rule.
pub struct SmoothBurstyRule {
    cfg: Config,
    /// Capacity × rate denominator.
    full: i128,
}

/// A smooth bursty limiter per key.
pub type SmoothBursty = Stored<SmoothBurstyRule>;

impl SmoothBursty {
    pub fn new(cfg: Config) -> Self {
        let full = cfg.capacity as i128 * cfg.rate.per_ns() as i128;
        Stored::of(
            SmoothBurstyRule { cfg, full },
            FixedLedger::new(state_bytes::SMOOTH_BURSTY, redis_bytes::HASH),
        )
    }
}

impl Rule for SmoothBurstyRule {
    type State = StoredPermits;

    fn fresh(&self, now: Nanos) -> StoredPermits {
        let tokens = match self.cfg.start {
            Start::Empty => 0,
            Start::Full => self.full,
        };
        StoredPermits { tokens, last: now }
    }

    #[inline(always)]
    fn decide(&self, b: &mut StoredPermits, now: Nanos, cost: u64) -> (Decision, Option<u64>) {
        let (n, d) = (self.cfg.rate.tokens(), self.cfg.rate.per_ns());
        let elapsed = (now.0 - b.last.0) as i128;
        b.tokens = self.full.min(b.tokens.saturating_add(elapsed * n as i128));
        b.last = now;
        if b.tokens >= 0 {
            b.tokens -= cost as i128 * d as i128;
            return (Decision::Admitted, None);
        }
        // The debt −T is paid off after −T / n ns (T is scaled by d).
        let debt = b.tokens.unsigned_abs();
        let retry_after = Some(span(div_ceil(debt, n)));
        (Decision::Rejected { retry_after }, None)
    }

    /// Fresh-equivalent, with `start = "full"`, once refilled to capacity,
    /// as a token bucket. With `start = "empty"` never: a fresh key has
    /// nothing, a rested one has capacity (so its script sets no expiry:
    /// docs/semantics.md §6).
    fn fresh_at(&self, b: &StoredPermits) -> Nanos {
        span(match self.cfg.start {
            Start::Empty => u128::MAX,
            Start::Full => {
                let missing = (self.full - b.tokens).unsigned_abs();
                b.last.0 as u128 + div_ceil(missing, self.cfg.rate.tokens())
            }
        })
    }

    /// Any cost while nothing is owed at `now`, else none
    /// (docs/semantics.md §11).
    fn remaining(&self, b: &StoredPermits, now: Nanos) -> u64 {
        let elapsed = now.0.saturating_sub(b.last.0) as i128;
        let n = self.cfg.rate.tokens() as i128;
        let tokens = self.full.min(b.tokens.saturating_add(elapsed * n));
        if tokens >= 0 {
            UNBOUNDED
        } else {
            0
        }
    }

    /// Refilled to capacity, whatever the start: with `start = "empty"` a
    /// key never is a fresh key's again, and a full one is the most it can
    /// be given (docs/semantics.md §11).
    fn reset_at(&self, b: &StoredPermits) -> Nanos {
        let missing = (self.full - b.tokens).unsigned_abs();
        span(b.last.0 as u128 + div_ceil(missing, self.cfg.rate.tokens()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::parse_rate;
    use crate::limiter::Limiter;

    const MS: u64 = 1_000_000;

    fn bursty(rate: &str, capacity: u64, start: Start) -> SmoothBursty {
        SmoothBursty::new(Config {
            rate: parse_rate(rate).unwrap(),
            capacity,
            start,
        })
    }

    #[test]
    fn an_empty_limiter_admits_the_first_request_and_makes_the_next_one_wait() {
        let mut sb = bursty("10/1s", 10, Start::Empty);
        assert_eq!(sb.decide(0, Nanos(0), 1), Decision::Admitted);
        assert_eq!(
            sb.decide(0, Nanos(0), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(100 * MS))
            }
        );
        assert!(!sb.decide(0, Nanos(100 * MS - 1), 1).passes());
        assert_eq!(sb.decide(0, Nanos(100 * MS), 1), Decision::Admitted);
    }

    #[test]
    fn one_huge_request_passes_and_the_next_caller_pays_for_it() {
        let mut sb = bursty("10/1s", 10, Start::Full);
        // 100 > capacity 10, but no debt is outstanding: admitted.
        assert_eq!(sb.decide(0, Nanos(0), 100), Decision::Admitted);
        // Stored permits 10 − 100 = −90: 9 s of refill before anyone passes.
        assert_eq!(
            sb.decide(0, Nanos(0), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(9_000 * MS))
            }
        );
        assert_eq!(
            sb.decide(0, Nanos(4_000 * MS), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(5_000 * MS))
            }
        );
        assert_eq!(sb.decide(0, Nanos(9_000 * MS), 1), Decision::Admitted);
    }

    #[test]
    fn a_quiet_key_saves_up_to_capacity_and_no_more() {
        let mut sb = bursty("10/1s", 3, Start::Empty);
        assert_eq!(sb.decide(0, Nanos(0), 1), Decision::Admitted);
        // After 10 s the balance is capped at 3: four unit requests pass
        // (3, 2, 1, 0 before each), the fifth finds a debt of 1.
        for _ in 0..4 {
            assert_eq!(sb.decide(0, Nanos(10_000 * MS), 1), Decision::Admitted);
        }
        assert_eq!(
            sb.decide(0, Nanos(10_000 * MS), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(100 * MS))
            }
        );
    }

    #[test]
    fn a_debt_that_is_not_a_whole_nanosecond_rounds_the_retry_up() {
        let mut sb = bursty("3/1s", 1, Start::Empty);
        assert_eq!(sb.decide(0, Nanos(0), 1), Decision::Admitted);
        assert_eq!(
            sb.decide(0, Nanos(0), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(333_333_334))
            }
        );
        assert!(!sb.decide(0, Nanos(333_333_333), 1).passes());
        assert_eq!(sb.decide(0, Nanos(333_333_334), 1), Decision::Admitted);
    }

    #[test]
    fn state_is_sixteen_bytes_per_key() {
        let mut sb = bursty("1/1s", 1, Start::Empty);
        sb.decide(0, Nanos(0), 1);
        sb.decide(1, Nanos(0), 1);
        let f = sb.footprint(Nanos(10));
        assert_eq!((f.keys, f.peak_bytes), (2, 16));
    }

    #[test]
    fn an_empty_start_is_never_fresh_again_and_a_full_one_is_once_refilled() {
        let mut empty = bursty("10/1s", 2, Start::Empty);
        empty.decide(0, Nanos(0), 1);
        assert_eq!(empty.fresh_at(0), Nanos(u64::MAX));
        let mut full = bursty("10/1s", 2, Start::Full);
        full.decide(0, Nanos(0), 1);
        // One of two missing: full again after 100ms.
        assert_eq!(full.fresh_at(0), Nanos(100 * MS));
    }
}
