//! Token bucket: a bucket of `capacity` tokens that refills continuously.
//!
//! **What it models.** Each key has a bucket that starts full. Tokens flow
//! in at `rate`, never beyond `capacity`; a request of `cost` passes iff the
//! bucket holds at least `cost` tokens, and takes them. A refused request
//! takes nothing.
//!
//! ```text
//! tokens(t) = min(capacity, tokens(last) + rate · (t − last))
//! admit  ⇔  tokens(t) ≥ cost          then tokens −= cost
//! ```
//!
//! **When to pick it.** When short bursts are fine but the long-run rate is
//! not: a client that was quiet may spend `capacity` at once, and is then
//! held to `rate`. Over any interval of length `Δ` it passes at most
//! `capacity + rate·Δ`.
//!
//! **In the wild.** Today's Envoy local rate limit refills lazily exactly
//! like this (preset `envoy`), and it is the textbook bucket. Go's
//! `golang.org/x/time/rate` is the same bucket (preset
//! `golang-x-time-rate`); at nanosecond timestamps it also admits a request
//! whose exact wait is at most 1 ns, because it truncates. [`super::gcra`]
//! decides exactly as this bucket with `capacity = burst`, in one timestamp.
//!
//! **Retry-after.** A refused request is short `need − tokens` (both scaled
//! by the rate's denominator, see below); tokens arrive at `rate`, so it
//! fits at `now + (need − tokens)/rate`, rounded up to the next whole
//! nanosecond:
//!
//! ```text
//! retry_after = ⌈(cost − tokens(t)) / rate⌉
//! ```
//!
//! It is the smallest wait: with nothing arriving, the balance only grows,
//! continuously and at `rate` until it reaches `capacity ≥ cost`, so the
//! first moment it holds `cost` is exactly that one, and a nanosecond
//! earlier it is still short. It is at least 1 ns because the request was
//! short by something. A `cost` above `capacity` never fits: no
//! retry-after.
//!
//! **Fresh-equivalent.** Once the bucket is full again, at
//! `last + ⌈(capacity − tokens)/rate⌉`: a full bucket's past is forgotten
//! (the refill is capped), so from then on every decision is a new key's.
//! One nanosecond earlier a request of `capacity` is refused where a new
//! key would admit it. The key is charged [`state_bytes::TOKEN_BUCKET`]
//! (16 bytes: balance and timestamp) until then.
//!
//! **Exactness.** With `rate = n / d` (n tokens per d ns) the balance is
//! kept as `tokens · d`, so a refill over `Δ` ns adds `Δ · n`, an integer.
//! Nothing is ever rounded except a `retry_after`, which rounds up to the
//! next whole nanosecond.
//!
//! [`state_bytes::TOKEN_BUCKET`]: super::state_bytes::TOKEN_BUCKET

use super::{
    redis_bytes, span, state_bytes, wait_until_scaled, Decision, FixedLedger, Rule, Stored,
};
use crate::clock::{div_ceil, Nanos, Rate};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub capacity: u64,
    pub rate: Rate,
}

/// How a bucket holds its balance, which never exceeds the configuration's
/// full balance (capacity × rate denominator): in one `u64` when that fits
/// one — a 16-byte state — else in two, the halves of a `u128` (24 bytes:
/// aligned to 8, not to a `u128`'s 16, which would pad it to 32). The
/// arithmetic is the same `u128` either way.
pub trait Balance: Copy + Default + Send + 'static {
    fn get(&self) -> u128;
    fn set(&mut self, balance: u128);
}

impl Balance for u64 {
    fn get(&self) -> u128 {
        u128::from(*self)
    }

    fn set(&mut self, balance: u128) {
        // Only configurations whose full balance fits a u64 hold it here.
        *self = u64::try_from(balance).expect("a balance is at most the full one");
    }
}

impl Balance for [u64; 2] {
    fn get(&self) -> u128 {
        u128::from(self[0]) | u128::from(self[1]) << 64
    }

    fn set(&mut self, balance: u128) {
        *self = [balance as u64, (balance >> 64) as u64];
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Tokens<B> {
    /// Tokens × rate denominator.
    balance: B,
    last: Nanos,
}

impl<B: Balance> Tokens<B> {
    fn balance(&self) -> u128 {
        self.balance.get()
    }

    fn set_balance(&mut self, balance: u128) {
        self.balance.set(balance);
    }
}

/// The token bucket's rule, its keys' balances held as `B`.
pub struct TokenBucketRule<B> {
    cfg: Config,
    /// Capacity × rate denominator.
    full: u128,
    balance: std::marker::PhantomData<B>,
}

/// A token bucket per key, its balances held as `B`.
pub type TokenBucket<B> = Stored<TokenBucketRule<B>>;

impl<B: Balance> TokenBucket<B> {
    fn with(cfg: Config) -> Self {
        let full = cfg.capacity as u128 * cfg.rate.per_ns();
        let rule = TokenBucketRule {
            cfg,
            full,
            balance: std::marker::PhantomData,
        };
        Stored::of(
            rule,
            FixedLedger::new(state_bytes::TOKEN_BUCKET, redis_bytes::HASH),
        )
    }
}

/// A token bucket per key: 16 bytes a key where the full balance fits a
/// `u64` (for a rate per second, any capacity up to 1.8 · 10^10), else 24.
pub fn boxed(cfg: Config) -> Box<dyn super::Limiter> {
    let full = cfg.capacity as u128 * cfg.rate.per_ns();
    match u64::try_from(full) {
        Ok(_) => Box::new(TokenBucket::<u64>::with(cfg)),
        Err(_) => Box::new(TokenBucket::<[u64; 2]>::with(cfg)),
    }
}

impl<B: Balance> Rule for TokenBucketRule<B> {
    type State = Tokens<B>;

    fn fresh(&self, now: Nanos) -> Tokens<B> {
        let mut b = Tokens {
            last: now,
            ..Tokens::default()
        };
        b.set_balance(self.full);
        b
    }

    #[inline(always)]
    fn decide(&self, b: &mut Tokens<B>, now: Nanos, cost: u64) -> (Decision, Option<u64>) {
        let (n, d) = (self.cfg.rate.tokens(), self.cfg.rate.per_ns());
        let elapsed = (now.0 - b.last.0) as u128;
        let balance = self.full.min(b.balance() + elapsed * n);
        b.set_balance(balance);
        b.last = now;
        if cost > self.cfg.capacity {
            return (Decision::Rejected { retry_after: None }, None);
        }
        let need = cost as u128 * d;
        if balance >= need {
            b.set_balance(balance - need);
            return (Decision::Admitted, None);
        }
        // Enough tokens at now + (need − balance) / n.
        let at = now.0 as u128 * n + (need - balance);
        let retry_after = Some(wait_until_scaled(now, at, n));
        (Decision::Rejected { retry_after }, None)
    }

    /// Fresh-equivalent once refilled to capacity: a fresh key is a full
    /// bucket, and a full bucket's past is forgotten (the refill is capped),
    /// so from `last + (full − balance)/rate` on, every decision is a fresh
    /// key's. One nanosecond before, a request of `capacity` is refused.
    fn fresh_at(&self, b: &Tokens<B>) -> Nanos {
        let missing = self.full - b.balance();
        span(b.last.0 as u128 + div_ceil(missing, self.cfg.rate.tokens()))
    }

    /// The whole tokens the bucket holds at `now`: `⌊tokens(now)⌋`, at most
    /// `capacity` (docs/semantics.md §11).
    fn remaining(&self, b: &Tokens<B>, now: Nanos) -> u64 {
        let (n, d) = (self.cfg.rate.tokens(), self.cfg.rate.per_ns());
        let elapsed = now.0.saturating_sub(b.last.0) as u128;
        let balance = self.full.min(b.balance() + elapsed * n);
        (balance / d) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::parse_rate;
    use crate::limiter::Limiter;

    #[test]
    fn a_bucket_is_16_bytes_where_its_balance_fits_a_u64_else_24() {
        assert_eq!(std::mem::size_of::<Tokens<u64>>(), 16);
        assert_eq!(std::mem::size_of::<Tokens<[u64; 2]>>(), 24);
        let mut b = Tokens::<[u64; 2]>::default();
        for v in [0, 1, u64::MAX as u128, 1 << 64, u128::MAX - 1, u128::MAX] {
            b.set_balance(v);
            assert_eq!(b.balance(), v);
        }
        let mut b = Tokens::<u64>::default();
        for v in [0, 1, u64::MAX as u128] {
            b.set_balance(v);
            assert_eq!(b.balance(), v);
        }
    }

    fn bucket(capacity: u64, rate: &str) -> Box<dyn Limiter> {
        boxed(Config {
            capacity,
            rate: parse_rate(rate).unwrap(),
        })
    }

    proptest::proptest! {
        /// A balance held in one u64 decides exactly as one held in two,
        /// up to a full balance of u64::MAX.
        #[test]
        fn both_balances_decide_alike(
            capacity in proptest::prop_oneof![1u64..10, 1u64..1_000_000, 18_000_000_000u64..18_446_744_074],
            tokens in 1u64..1000,
            per_ms in proptest::prop_oneof![1u64..10, 1u64..100_000],
            ops in proptest::collection::vec((0u32..4, 0u64..2_000_000_000, 1u64..20), 1..300),
        ) {
            let rate = parse_rate(&format!("{tokens}/{per_ms}ms")).unwrap();
            let cfg = Config { capacity, rate };
            proptest::prop_assume!(u64::try_from(capacity as u128 * rate.per_ns()).is_ok());
            let (mut narrow, mut wide) = (TokenBucket::<u64>::with(cfg), TokenBucket::<[u64; 2]>::with(cfg));
            let mut now = 0u64;
            for (key, dt, cost) in ops {
                now += dt;
                proptest::prop_assert_eq!(
                    narrow.decide(key, Nanos(now), cost),
                    wide.decide(key, Nanos(now), cost)
                );
                proptest::prop_assert_eq!(narrow.fresh_at(key), wide.fresh_at(key));
            }
            proptest::prop_assert_eq!(narrow.footprint(Nanos(now)), wide.footprint(Nanos(now)));
        }
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn a_full_bucket_admits_its_capacity_at_once_then_rejects() {
        let mut tb = bucket(5, "3/1s");
        for _ in 0..5 {
            assert_eq!(tb.decide(0, Nanos(0), 1), Decision::Admitted);
        }
        assert_eq!(
            tb.decide(0, Nanos(0), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(333_333_334))
            }
        );
    }

    #[test]
    fn a_token_arrives_at_a_third_of_a_second_and_not_a_nanosecond_before() {
        let mut tb = bucket(1, "3/1s");
        assert_eq!(tb.decide(0, Nanos(0), 1), Decision::Admitted);
        assert_eq!(
            tb.decide(0, Nanos(333_333_333), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(1))
            }
        );
        assert_eq!(tb.decide(0, Nanos(333_333_334), 1), Decision::Admitted);
    }

    #[test]
    fn refill_is_capped_at_capacity() {
        let mut tb = bucket(2, "10/1s");
        assert_eq!(tb.decide(0, Nanos(10_000 * MS), 2), Decision::Admitted);
        assert!(!tb.decide(0, Nanos(10_000 * MS), 1).passes());
    }

    #[test]
    fn cost_above_capacity_can_never_pass() {
        let mut tb = bucket(5, "3/1s");
        assert_eq!(
            tb.decide(0, Nanos(0), 6),
            Decision::Rejected { retry_after: None }
        );
        // The refusal did not take anything.
        assert_eq!(tb.decide(0, Nanos(0), 5), Decision::Admitted);
    }

    #[test]
    fn two_reads_before_either_write_both_spend_the_same_token() {
        let mut tb = bucket(1, "1/1s");
        let (a, ta) = tb.decide_detached(0, Nanos(0), 1);
        let (b, tb_ticket) = tb.decide_detached(0, Nanos(5), 1);
        assert_eq!((a, b), (Decision::Admitted, Decision::Admitted));
        tb.write_back(0, ta, Nanos(10));
        tb.write_back(0, tb_ticket, Nanos(12));
        // Last writer wins: the bucket is empty once, not twice over.
        assert_eq!(
            tb.decide(0, Nanos(20), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(1_000_000_000 - 15))
            }
        );
        assert_eq!(tb.footprint(Nanos(20)).keys, 1);
    }

    #[test]
    fn a_discarded_write_leaves_the_store_as_it_was() {
        let mut tb = bucket(1, "1/1s");
        let (_, t) = tb.decide_detached(0, Nanos(0), 1);
        tb.discard(t);
        assert_eq!(tb.footprint(Nanos(1)).keys, 0);
        assert_eq!(tb.decide(0, Nanos(1), 1), Decision::Admitted);
    }

    // Regression (review): a wait beyond 2^64 ns wrapped around to a small
    // number; it now saturates.
    #[test]
    fn a_wait_longer_than_u64_holds_saturates() {
        let mut tb = bucket(1_000_000_000_000, "1/1000000000s");
        assert_eq!(
            tb.decide(0, Nanos(0), 1_000_000_000_000),
            Decision::Admitted
        );
        assert_eq!(
            tb.decide(0, Nanos(1), 1_000_000_000_000),
            Decision::Rejected {
                retry_after: Some(Nanos(u64::MAX))
            }
        );
    }

    #[test]
    fn keys_have_independent_buckets() {
        let mut tb = bucket(1, "1/1s");
        assert_eq!(tb.decide(0, Nanos(0), 1), Decision::Admitted);
        assert_eq!(tb.decide(1, Nanos(0), 1), Decision::Admitted);
        assert!(!tb.decide(0, Nanos(0), 1).passes());
        assert_eq!(tb.footprint(Nanos(10)).keys, 2);
        assert_eq!(tb.footprint(Nanos(10)).peak_bytes, 16);
    }

    #[test]
    fn a_key_counts_until_its_bucket_is_full_again() {
        let mut tb = bucket(5, "3/1s");
        tb.decide(0, Nanos(0), 1);
        // One token missing: back at capacity after 1/3 s, rounded up.
        assert_eq!(tb.fresh_at(0), Nanos(333_333_334));
        let f = tb.footprint(Nanos(2_000_000_000));
        assert_eq!(f.byte_ns, 16 * 333_333_334);
        assert_eq!((f.peak_bytes, f.peak_total), (16, 16));
        assert_eq!(f.redis_peak_total, crate::limiter::redis_bytes::HASH);
    }

    #[test]
    fn a_nanosecond_before_it_is_fresh_a_request_of_capacity_is_refused() {
        let mut tb = bucket(5, "3/1s");
        tb.decide(0, Nanos(0), 2);
        // Two tokens missing: full again at ⌈2/3 s⌉.
        assert_eq!(tb.fresh_at(0), Nanos(666_666_667));
        let mut early = bucket(5, "3/1s");
        early.decide(0, Nanos(0), 2);
        assert!(!early.decide(0, Nanos(666_666_666), 5).passes());
        assert_eq!(tb.decide(0, Nanos(666_666_667), 5), Decision::Admitted);
    }
}
