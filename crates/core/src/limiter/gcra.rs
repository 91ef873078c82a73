//! GCRA, the generic cell rate algorithm: a token bucket in one timestamp.
//!
//! **What it models.** Instead of a balance, GCRA remembers each key's
//! *theoretical arrival time* (TAT): when the next request would be due had
//! everyone kept exactly to `rate`. With emission interval `T = 1/rate` and
//! tolerance `τ = (burst − 1)·T`, and TAT 0 for a new key:
//!
//! ```text
//! conforming  ⇔  t ≥ TAT − τ + (cost − 1)·T       (cost ≤ burst)
//! then          TAT = max(TAT, t) + cost·T
//! ```
//!
//! A request that does not conform changes nothing.
//!
//! **When to pick it.** Whenever a [`super::token_bucket`] would do and
//! state is precious: its decisions equal a token bucket's with
//! `capacity = burst` (`TAT − t` is the bucket's missing tokens times `T`),
//! and its state is one 8-byte timestamp instead of a balance and a
//! timestamp, updated with one compare-and-set.
//!
//! **In the wild.** The Rust `governor` crate (preset `governor`) and
//! redis-cell (preset `redis-cell`; its `max_burst = b` is `burst = b + 1`).
//!
//! **Retry-after.** The rule names the earliest conforming moment itself:
//!
//! ```text
//! retry_after = ⌈TAT − τ + (cost − 1)·T⌉ − t
//! ```
//!
//! It is the smallest wait: a refusal leaves the TAT as it was, so with
//! nothing arriving the condition `t' ≥ TAT − τ + (cost − 1)·T` first holds
//! at exactly that moment, rounded up to whole ns. It is at least 1 ns
//! because the request at `t` did not conform. A `cost` above `burst` never
//! conforms: no retry-after.
//!
//! **Fresh-equivalent.** Once `t ≥ TAT` — not `TAT − τ`. For any `TAT ≤ t`
//! a request conforms and leaves `TAT = t + cost·T`, exactly as on a new key
//! (TAT 0). At `TAT − τ ≤ t < TAT` one request of cost 1 conforms, but a
//! request of cost `burst` (or a burst of `burst` requests) does not, where
//! a new key passes it. The key is charged [`state_bytes::GCRA`] (8 bytes)
//! until then — the moment `redis/gcra.lua` expires its key at. In Redis
//! that key is one plain string, [`redis_bytes::GCRA`] (72 bytes: an
//! integer) when the emission interval is whole microseconds.
//!
//! **Exactness.** With `rate = n/d`, `T = d/n` ns; the TAT is kept
//! multiplied by `n`, so every quantity is an integer, and only the
//! retry-after is rounded (up).
//!
//! [`state_bytes::GCRA`]: super::state_bytes::GCRA
//! [`redis_bytes::GCRA`]: super::redis_bytes::GCRA

use super::{
    redis_bytes, span, state_bytes, wait_until_scaled, Decision, FixedLedger, Rule, Stored,
};
use crate::clock::{div_ceil, Nanos, Rate};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub burst: u64,
    pub rate: Rate,
}

/// GCRA's rule; a key's state is its TAT × rate numerator.
pub struct GcraRule {
    cfg: Config,
}

/// GCRA per key.
pub type Gcra = Stored<GcraRule>;

impl Config {
    /// The bytes `redis/gcra.lua` keeps per key: its TAT as a plain string,
    /// an integer ([`redis_bytes::GCRA`]) when the emission interval is
    /// whole microseconds (so is every TAT), else mostly `"u:f"`
    /// ([`redis_bytes::GCRA_FRACTION`], charged so throughout).
    pub fn redis_bytes(&self) -> u64 {
        if self.rate.per_ns() % (self.rate.tokens() * 1000) == 0 {
            redis_bytes::GCRA
        } else {
            redis_bytes::GCRA_FRACTION
        }
    }
}

impl Gcra {
    pub fn new(cfg: Config) -> Self {
        let ledger = if cfg.redis_bytes() == redis_bytes::GCRA {
            FixedLedger::new(state_bytes::GCRA, redis_bytes::GCRA)
        } else {
            FixedLedger::new(state_bytes::GCRA, redis_bytes::GCRA_FRACTION)
        };
        Stored::of(GcraRule { cfg }, ledger)
    }
}

impl Rule for GcraRule {
    type State = u128;

    fn fresh(&self, _now: Nanos) -> u128 {
        0
    }

    #[inline(always)]
    fn decide(&self, tat: &mut u128, now: Nanos, cost: u64) -> (Decision, Option<u64>) {
        let (n, d) = (self.cfg.rate.tokens(), self.cfg.rate.per_ns());
        if cost > self.cfg.burst {
            return (Decision::Rejected { retry_after: None }, None);
        }
        let t = now.0 as u128 * n;
        // Earliest conforming moment, scaled: TAT − τ + (cost − 1)·T.
        let earliest = tat.saturating_sub((self.cfg.burst - cost) as u128 * d);
        if t >= earliest {
            *tat = (*tat).max(t) + cost as u128 * d;
            return (Decision::Admitted, None);
        }
        let retry_after = Some(wait_until_scaled(now, earliest, n));
        (Decision::Rejected { retry_after }, None)
    }

    /// Fresh-equivalent once `t ≥ TAT` — not `TAT − τ`. A fresh key's TAT
    /// is 0, and for any `TAT ≤ t` a request conforms and leaves
    /// `TAT = t + cost·T` exactly as on a fresh key. At `TAT − τ ≤ t < TAT`
    /// one request of cost 1 conforms, but a request of cost `burst` (or a
    /// burst of `burst` requests) does not, while a fresh key passes it.
    fn fresh_at(&self, tat: &u128) -> Nanos {
        span(div_ceil(*tat, self.cfg.rate.tokens()))
    }

    /// `cost` conforms at `t` iff `TAT − t ≤ (burst − cost)·T`, so the
    /// largest is `burst − ⌈(TAT − t)/T⌉` (docs/semantics.md §11).
    fn remaining(&self, tat: &u128, now: Nanos) -> u64 {
        let (n, d) = (self.cfg.rate.tokens(), self.cfg.rate.per_ns());
        let ahead = div_ceil(tat.saturating_sub(now.0 as u128 * n), d);
        (self.cfg.burst as u128).saturating_sub(ahead) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::parse_rate;
    use crate::limiter::Limiter;

    fn gcra(burst: u64, rate: &str) -> Gcra {
        Gcra::new(Config {
            burst,
            rate: parse_rate(rate).unwrap(),
        })
    }

    #[test]
    fn gcra_admits_a_burst_then_one_per_emission_interval() {
        let mut g = gcra(3, "10/1s");
        for _ in 0..3 {
            assert_eq!(g.decide(0, Nanos(0), 1), Decision::Admitted);
        }
        assert_eq!(
            g.decide(0, Nanos(0), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(100_000_000))
            }
        );
        assert!(!g.decide(0, Nanos(99_999_999), 1).passes());
        assert_eq!(g.decide(0, Nanos(100_000_000), 1), Decision::Admitted);
        assert!(!g.decide(0, Nanos(150_000_000), 1).passes());
        assert_eq!(g.decide(0, Nanos(200_000_000), 1), Decision::Admitted);
    }

    #[test]
    fn gcra_cost_above_burst_never_conforms() {
        let mut g = gcra(3, "10/1s");
        assert_eq!(
            g.decide(0, Nanos(0), 4),
            Decision::Rejected { retry_after: None }
        );
        assert_eq!(g.decide(0, Nanos(0), 3), Decision::Admitted);
    }

    #[test]
    fn gcra_state_is_one_timestamp() {
        let mut g = gcra(3, "10/1s");
        g.decide(7, Nanos(0), 1);
        assert_eq!(g.footprint(Nanos(1)).peak_bytes, 8);
    }

    /// `redis/gcra.lua` keeps the TAT as one integer (72 bytes measured)
    /// when the emission interval is whole µs, else mostly as `"u:f"`
    /// (104, the size of the hash it replaced).
    #[test]
    fn gcra_in_redis_is_one_integer_when_its_emission_interval_is_whole_microseconds() {
        use crate::limiter::redis_bytes::{GCRA, GCRA_FRACTION, HASH};
        for (rate, bytes) in [
            ("10/1s", GCRA),
            ("20/1s", GCRA),
            ("5/1m", GCRA),
            ("3/1s", GCRA_FRACTION),
            ("1/1500ns", GCRA_FRACTION),
        ] {
            let mut g = gcra(3, rate);
            g.decide(0, Nanos(0), 1);
            assert_eq!(g.footprint(Nanos(1)).redis_peak_total, bytes, "{rate}");
        }
        const { assert!(GCRA < HASH, "GCRA's key is smaller than the token bucket's") };
    }

    #[test]
    fn gcra_state_counts_until_its_tat_not_until_tat_minus_tau() {
        let mut g = gcra(3, "10/1s");
        g.decide(0, Nanos(0), 1);
        // TAT = 100ms; TAT − τ = −100ms already passed, yet a burst of 3
        // at 99.999999ms is refused where a fresh key admits it.
        assert_eq!(g.fresh_at(0), Nanos(100_000_000));
        let mut probe = gcra(3, "10/1s");
        probe.decide(0, Nanos(0), 1);
        assert!(!probe.decide(0, Nanos(99_999_999), 3).passes());
        assert_eq!(probe.decide(0, Nanos(100_000_000), 3), Decision::Admitted);
        assert_eq!(g.footprint(Nanos(1_000_000_000)).byte_ns, 8 * 100_000_000);
    }

    #[test]
    fn a_costlier_request_waits_cost_minus_one_emission_intervals_longer() {
        let mut g = gcra(3, "10/1s");
        for _ in 0..3 {
            g.decide(0, Nanos(0), 1);
        }
        // TAT = 300ms, τ = 200ms: cost 2 conforms from 300 − 200 + 100 ms.
        assert_eq!(
            g.decide(0, Nanos(0), 2),
            Decision::Rejected {
                retry_after: Some(Nanos(200_000_000))
            }
        );
        assert!(!g.decide(0, Nanos(199_999_999), 2).passes());
        assert_eq!(g.decide(0, Nanos(200_000_000), 2), Decision::Admitted);
    }
}
