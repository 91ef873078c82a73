//! GCRA, the generic cell rate algorithm: a token bucket in one timestamp.
//!
//! Instead of a balance, GCRA remembers the *theoretical arrival time* (TAT):
//! when the next request would be due if everyone had kept exactly to `rate`.
//! With emission interval `T = 1/rate` and tolerance `τ = (burst − 1)·T`:
//!
//! ```text
//! conforming  ⇔  t ≥ TAT − τ + (cost − 1)·T       (cost ≤ burst)
//! then          TAT = max(TAT, t) + cost·T
//! ```
//!
//! Its decisions equal a token bucket's with `capacity = burst`; the state is
//! one 8-byte timestamp instead of a balance and a timestamp, which is why
//! the Rust `governor` crate and redis-cell use it. (redis-cell's
//! `max_burst = b` is `burst = b + 1`.)
//!
//! Exactness: with `rate = n/d`, `T = d/n` ns; the TAT is kept multiplied by
//! `n`, so every quantity is an integer.

use super::{redis_bytes, span, state_bytes, wait_until_scaled, Decision, Ledger, Rule, Stored};
use crate::clock::{Nanos, Rate};

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

impl Gcra {
    pub fn new(cfg: Config) -> Self {
        Stored::of(
            GcraRule { cfg },
            Ledger::fixed::<{ state_bytes::GCRA }, { redis_bytes::HASH }>(),
        )
    }
}

impl Rule for GcraRule {
    type State = u128;

    fn fresh(&self, _now: Nanos) -> u128 {
        0
    }

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
        span(tat.div_ceil(self.cfg.rate.tokens()))
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
}
