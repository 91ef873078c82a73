//! Interval bucket: a token bucket refilled in steps by a timer.
//!
//! **What it models.** Each key's bucket starts full with `max_tokens`. At
//! every fill moment `t = k · fill_interval` (k ≥ 1, counted from the start
//! of the run and the same for every key) it gains `tokens_per_fill`, capped
//! at `max_tokens`; between fills nothing trickles in. A request at exactly
//! a fill moment sees that fill. A refused request takes nothing.
//!
//! ```text
//! tokens(t) = min(max_tokens, tokens + fills_since_last · tokens_per_fill)
//! admit  ⇔  tokens(t) ≥ cost          then tokens −= cost
//! ```
//!
//! **When to pick it.** To see what a timer-driven bucket does that a lazy
//! one ([`super::token_bucket`]) does not: the refill comes in lumps at
//! moments every client can learn, so retries pile up on the fill moments,
//! and a request just after a fill that emptied the bucket waits almost a
//! whole interval where the lazy bucket would have had a fraction ready.
//!
//! **In the wild.** Envoy's earlier local rate limiter, which refilled its
//! buckets from a timer (preset `envoy-timer`).
//!
//! **Retry-after.** A refused request at `t`, in fill period
//! `k = ⌊t / fill_interval⌋`, is short `cost − tokens`; each fill brings
//! `tokens_per_fill`, so it fits at the fill moment
//!
//! ```text
//! retry_after = (k + ⌈(cost − tokens)/tokens_per_fill⌉) · fill_interval − t
//! ```
//!
//! It is the smallest wait: with nothing arriving the balance changes only
//! at fill moments, and only upwards (the cap `max_tokens ≥ cost` never
//! stops it short of `cost`), so the first fill moment that brings enough
//! is the first moment the request fits. It is at least 1 ns because that
//! fill moment is after `k · fill_interval ≤ t`. No arithmetic is rounded:
//! fill moments are whole nanoseconds. A `cost` above `max_tokens` never
//! fits: no retry-after.
//!
//! **Fresh-equivalent.** At the first fill moment that brings the bucket
//! back to `max_tokens`: `(k_last + ⌈(max_tokens − tokens)/tokens_per_fill⌉)
//! · fill_interval`. A new key is full with its fills counted from its
//! first request, and a full bucket is the same. One nanosecond earlier a
//! request of `max_tokens` is refused. The key is charged
//! [`state_bytes::INTERVAL_BUCKET`] (8 bytes: the token count; the fills
//! come from one shared timer) until then.
//!
//! [`state_bytes::INTERVAL_BUCKET`]: super::state_bytes::INTERVAL_BUCKET

use super::{redis_bytes, span, state_bytes, Decision, FixedLedger, Rule, Stored};
use crate::clock::Nanos;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub max_tokens: u64,
    pub tokens_per_fill: u64,
    pub fill_interval: Nanos,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Fills {
    tokens: u64,
    /// Index k of the last fill moment applied.
    filled_at: u64,
}

/// The interval bucket's rule.
pub struct IntervalBucketRule {
    cfg: Config,
}

/// An interval bucket per key.
pub type IntervalBucket = Stored<IntervalBucketRule>;

impl IntervalBucket {
    pub fn new(cfg: Config) -> Self {
        Stored::of(
            IntervalBucketRule { cfg },
            FixedLedger::new(state_bytes::INTERVAL_BUCKET, redis_bytes::HASH),
        )
    }
}

impl Rule for IntervalBucketRule {
    type State = Fills;

    /// Full from the start of the run; a key first seen later is still full.
    fn fresh(&self, now: Nanos) -> Fills {
        Fills {
            tokens: self.cfg.max_tokens,
            filled_at: now.0 / self.cfg.fill_interval.0,
        }
    }

    #[inline(always)]
    fn decide(&self, b: &mut Fills, now: Nanos, cost: u64) -> (Decision, Option<u64>) {
        let cfg = self.cfg;
        let k = now.0 / cfg.fill_interval.0;
        let fills = (k - b.filled_at) as u128;
        b.tokens = (b.tokens as u128 + fills * cfg.tokens_per_fill as u128)
            .min(cfg.max_tokens as u128) as u64;
        b.filled_at = k;
        if cost > cfg.max_tokens {
            return (Decision::Rejected { retry_after: None }, None);
        }
        if b.tokens >= cost {
            b.tokens -= cost;
            return (Decision::Admitted, None);
        }
        let fills_needed = (cost - b.tokens).div_ceil(cfg.tokens_per_fill);
        let at = (k + fills_needed) as u128 * cfg.fill_interval.0 as u128;
        let retry_after = Some(span(at - now.0 as u128));
        (Decision::Rejected { retry_after }, None)
    }

    /// Fresh-equivalent at the first fill moment that brings it back to
    /// `max_tokens`: `(filled_at + ⌈(max − tokens)/per_fill⌉) · interval`. A
    /// fresh key is full with its fills counted from now; a full bucket is
    /// the same. One nanosecond before, a request of `max_tokens` is refused.
    fn fresh_at(&self, b: &Fills) -> Nanos {
        let cfg = self.cfg;
        let fills = (cfg.max_tokens - b.tokens).div_ceil(cfg.tokens_per_fill) as u128;
        span((b.filled_at as u128 + fills) * cfg.fill_interval.0 as u128)
    }

    /// The tokens held at `now`, with the fills due by then
    /// (docs/semantics.md §11).
    fn remaining(&self, b: &Fills, now: Nanos) -> u64 {
        let cfg = self.cfg;
        let fills = (now.0 / cfg.fill_interval.0).saturating_sub(b.filled_at) as u128;
        (b.tokens as u128 + fills * cfg.tokens_per_fill as u128).min(cfg.max_tokens as u128) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::Limiter;

    const MS: u64 = 1_000_000;

    fn bucket(max: u64, per_fill: u64, interval_ms: u64) -> IntervalBucket {
        IntervalBucket::new(Config {
            max_tokens: max,
            tokens_per_fill: per_fill,
            fill_interval: Nanos(interval_ms * MS),
        })
    }

    #[test]
    fn interval_bucket_sees_a_fill_at_exactly_the_fill_moment() {
        let mut b = bucket(2, 1, 250);
        assert_eq!(b.decide(0, Nanos(0), 2), Decision::Admitted);
        assert_eq!(
            b.decide(0, Nanos(250 * MS - 1), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(1))
            }
        );
        assert_eq!(b.decide(0, Nanos(250 * MS), 1), Decision::Admitted);
        assert!(!b.decide(0, Nanos(250 * MS), 1).passes());
    }

    #[test]
    fn nothing_trickles_in_between_fills() {
        let mut b = bucket(4, 2, 100);
        assert_eq!(b.decide(0, Nanos(0), 4), Decision::Admitted);
        assert_eq!(
            b.decide(0, Nanos(199 * MS), 3),
            Decision::Rejected {
                retry_after: Some(Nanos(MS))
            }
        );
        assert_eq!(b.decide(0, Nanos(200 * MS), 3), Decision::Admitted);
    }

    #[test]
    fn retry_after_counts_the_fills_still_needed() {
        let mut b = bucket(5, 2, 250);
        assert_eq!(b.decide(0, Nanos(0), 5), Decision::Admitted);
        // Needs 5 tokens = 3 fills: at 750ms.
        assert_eq!(
            b.decide(0, Nanos(10 * MS), 5),
            Decision::Rejected {
                retry_after: Some(Nanos(740 * MS))
            }
        );
        assert_eq!(
            b.decide(0, Nanos(0), 6),
            Decision::Rejected { retry_after: None }
        );
    }

    #[test]
    fn fills_are_capped() {
        let mut b = bucket(3, 2, 100);
        assert_eq!(b.decide(0, Nanos(0), 3), Decision::Admitted);
        assert_eq!(b.decide(0, Nanos(10_000 * MS), 3), Decision::Admitted);
        assert!(!b.decide(0, Nanos(10_000 * MS), 1).passes());
    }

    #[test]
    fn a_key_counts_until_the_fill_that_makes_it_full() {
        let mut b = bucket(2, 1, 250);
        b.decide(0, Nanos(10 * MS), 2);
        // Two fills needed: at 250ms and 500ms, not 260ms and 510ms.
        assert_eq!(b.fresh_at(0), Nanos(500 * MS));
        // The 250ms fill brought one, spent at 260ms: two fills again.
        b.decide(0, Nanos(260 * MS), 1);
        assert_eq!(b.fresh_at(0), Nanos(750 * MS));
        assert_eq!(b.footprint(Nanos(MS * 1000)).byte_ns, 8 * 740 * MS as u128);
    }

    #[test]
    fn a_nanosecond_before_it_is_fresh_a_request_of_max_tokens_is_refused() {
        let mut b = bucket(3, 2, 100);
        b.decide(0, Nanos(50 * MS), 3);
        // Three missing, two per fill: full at the second fill, 200ms.
        assert_eq!(b.fresh_at(0), Nanos(200 * MS));
        let mut early = bucket(3, 2, 100);
        early.decide(0, Nanos(50 * MS), 3);
        assert_eq!(
            early.decide(0, Nanos(200 * MS - 1), 3),
            Decision::Rejected {
                retry_after: Some(Nanos(1))
            }
        );
        assert_eq!(b.decide(0, Nanos(200 * MS), 3), Decision::Admitted);
    }
}
