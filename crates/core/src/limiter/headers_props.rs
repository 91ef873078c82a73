//! The RateLimit header fields agree with the decisions
//! (docs/semantics.md §11), for every rule and variant: after any sequence
//! of requests, a request of cost `r` at that instant is admitted (passes
//! at once) and one of `r + 1` is not; and `t` is the key's fresh moment.

use proptest::prelude::*;

use super::{
    fixed_window, gcra, interval_bucket, leaky_bucket, quota, sliding_counter, sliding_log,
    smooth_bursty, token_bucket, Algorithm, Decision, Limiter, UNBOUNDED,
};
use crate::clock::{parse_rate, Nanos};

/// A cost above anything the sequences below send, for "any cost".
const HUGE: u64 = 1_000_000;

/// Requests `(key, gap in ns, cost)`, close enough to fill the limits.
fn ops() -> impl Strategy<Value = Vec<(u32, u64, u64)>> {
    proptest::collection::vec(
        (
            0u32..3,
            prop_oneof![Just(0u64), 0u64..3_000_000, 0u64..400_000_000],
            1u64..6,
        ),
        1..120,
    )
}

/// Runs `ops` on `alg` and checks the fields of every key after each
/// decision and at a later instant; `most` is the largest cost the rule can
/// ever admit (`None`: any).
fn check(alg: Algorithm, most: Option<u64>, ops: &[(u32, u64, u64)], fresh_is_reset: bool) {
    let mut l = alg.build();
    let mut now = 0u64;
    for &(key, gap, cost) in ops {
        now += gap;
        l.decide(key, Nanos(now), cost);
        for k in 0..3 {
            for at in [now, now + gap / 2] {
                agree(&mut *l, k, Nanos(at), most, fresh_is_reset);
            }
        }
    }
}

fn admitted(l: &mut dyn Limiter, key: u32, now: Nanos, cost: u64) -> bool {
    let (d, ticket) = l.decide_detached(key, now, cost);
    l.discard(ticket);
    d == Decision::Admitted
}

fn agree(l: &mut dyn Limiter, key: u32, now: Nanos, most: Option<u64>, fresh_is_reset: bool) {
    let h = l.headers(key, now);
    let r = h.remaining;
    if r == UNBOUNDED {
        assert!(
            most.is_none_or(|m| m == UNBOUNDED),
            "{key} at {now:?}: unbounded"
        );
        assert!(admitted(l, key, now, 1), "{key} at {now:?}: 1 of any");
        assert!(admitted(l, key, now, HUGE), "{key} at {now:?}: {HUGE}");
    } else {
        if r > 0 {
            assert!(
                admitted(l, key, now, r),
                "{key} at {now:?}: r = {r} refused"
            );
        }
        if most.is_none_or(|m| r < m) {
            assert!(
                !admitted(l, key, now, r + 1),
                "{key} at {now:?}: r + 1 = {} admitted",
                r + 1
            );
        }
    }
    if fresh_is_reset {
        let fresh = l.fresh_at(key);
        assert_eq!(
            h.reset,
            Nanos(fresh.0.saturating_sub(now.0)),
            "{key} at {now:?}"
        );
    }
}

fn rate(r: &str) -> crate::clock::Rate {
    parse_rate(r).expect("a rate")
}

const RATES: [&str; 4] = ["3/1s", "10/1s", "1/300ms", "7/2s"];

proptest! {
    #[test]
    fn token_bucket_fields_agree(capacity in 1u64..12, r in 0usize..4, ops in ops()) {
        let cfg = token_bucket::Config { capacity, rate: rate(RATES[r]) };
        check(Algorithm::TokenBucket(cfg), Some(capacity), &ops, true);
    }

    #[test]
    fn interval_bucket_fields_agree(
        max_tokens in 1u64..12, per_fill in 1u64..4, ms in 1u64..500, ops in ops(),
    ) {
        let cfg = interval_bucket::Config {
            max_tokens,
            tokens_per_fill: per_fill,
            fill_interval: Nanos(ms * 1_000_000),
        };
        check(Algorithm::IntervalBucket(cfg), Some(max_tokens), &ops, true);
    }

    #[test]
    fn gcra_fields_agree(burst in 1u64..12, r in 0usize..4, ops in ops()) {
        let cfg = gcra::Config { burst, rate: rate(RATES[r]) };
        check(Algorithm::Gcra(cfg), Some(burst), &ops, true);
    }

    #[test]
    fn leaky_bucket_fields_agree(
        queue in 0u64..6, delay in 0u64..6, r in 0usize..4, nginx in any::<bool>(), ops in ops(),
    ) {
        let cfg = leaky_bucket::Config {
            rate: rate(RATES[r]),
            queue,
            delay: delay.min(queue),
            arithmetic: if nginx {
                leaky_bucket::Arithmetic::Nginx
            } else {
                leaky_bucket::Arithmetic::Exact
            },
        };
        // A shaper admits any cost or none; nginx's fresh moment holds
        // for cost 1 only, and these requests cost more.
        check(Algorithm::LeakyBucket(cfg), if nginx { Some(UNBOUNDED) } else { None }, &ops, !nginx);
    }

    #[test]
    fn fixed_window_fields_agree(
        limit in 1u64..12, ms in 1u64..900, count_rejected in any::<bool>(), first_hit in any::<bool>(),
        ops in ops(),
    ) {
        let cfg = fixed_window::Config {
            limit,
            window: Nanos(ms * 1_000_000),
            count_rejected,
            align: if first_hit { fixed_window::Align::FirstHit } else { fixed_window::Align::Epoch },
        };
        check(Algorithm::FixedWindow(cfg), Some(limit), &ops, true);
    }

    #[test]
    fn sliding_log_fields_agree(
        limit in 1u64..12, ms in 1u64..900, count_rejected in any::<bool>(), inclusive in any::<bool>(),
        ops in ops(),
    ) {
        let cfg = sliding_log::Config {
            limit,
            window: Nanos(ms * 1_000_000),
            count_rejected,
            boundary: if inclusive {
                sliding_log::BoundaryRule::Inclusive
            } else {
                sliding_log::BoundaryRule::Exclusive
            },
        };
        check(Algorithm::SlidingLog(cfg), Some(limit), &ops, true);
    }

    #[test]
    fn sliding_counter_fields_agree(
        limit in 1u64..12, ms in 1u64..900, count_rejected in any::<bool>(), floor in any::<bool>(),
        ops in ops(),
    ) {
        let cfg = sliding_counter::Config {
            limit,
            window: Nanos(ms * 1_000_000),
            count_rejected,
            weight: if floor { sliding_counter::Weight::Floor } else { sliding_counter::Weight::Exact },
        };
        check(Algorithm::SlidingCounter(cfg), Some(limit), &ops, true);
    }

    #[test]
    fn quota_fields_agree(limit in 1u64..12, secs_before_midnight in 1u64..20, ops in ops()) {
        // A daily quota whose day ends a few seconds into the run, so
        // the sequences cross it.
        let epoch = format!("2026-01-01T23:59:{:02}Z", 60 - secs_before_midnight);
        let cfg = quota::Config {
            limit,
            period: quota::Period::Day,
            epoch: quota::Epoch::parse(&epoch).expect("an epoch"),
        };
        check(Algorithm::Quota(cfg), Some(limit), &ops, true);
    }

    #[test]
    fn smooth_bursty_fields_agree(
        capacity in 1u64..12, r in 0usize..4, full in any::<bool>(), ops in ops(),
    ) {
        let cfg = smooth_bursty::Config {
            rate: rate(RATES[r]),
            capacity,
            start: if full { smooth_bursty::Start::Full } else { smooth_bursty::Start::Empty },
        };
        // With `start = "empty"` the reset is the refill, not the (never)
        // fresh moment.
        check(Algorithm::SmoothBursty(cfg), None, &ops, full);
    }
}

#[test]
fn a_read_then_write_copy_has_its_own_fields_until_written_back() {
    // Token bucket of 3 at 3/1s: a copy that admitted one holds 2 tokens
    // (full again in 1/3 s), while the store still holds 3 — a fresh key.
    let cfg = token_bucket::Config {
        capacity: 3,
        rate: rate("3/1s"),
    };
    let mut l = Algorithm::TokenBucket(cfg).build();
    let (d, ticket) = l.decide_detached(7, Nanos(0), 1);
    assert_eq!(d, Decision::Admitted);
    let copy = l.detached_headers(7, ticket, Nanos(0));
    assert_eq!((copy.remaining, copy.reset), (2, Nanos(333_333_334)));
    assert_eq!(copy.reset_s(), 1);
    let stored = l.headers(7, Nanos(0));
    assert_eq!((stored.remaining, stored.reset), (3, Nanos(0)));
    l.write_back(7, ticket, Nanos(0));
    assert_eq!(l.headers(7, Nanos(0)), copy);
}
