//! nginx `limit_req` in nginx's own integers (`leaky_bucket.arithmetic =
//! "nginx"`).
//!
//! **What it models.** nginx keeps, per key, `excess` in thousandths of a
//! request and `last` in whole milliseconds, and its rate `r` in
//! thousandths of a request per second (`10r/s` → 10000, `30r/m` → 500).
//! At `t`, with `m = ⌊t / 1 ms⌋`:
//!
//! ```text
//! first request of a key:  excess = 0, last = m                     → admitted
//! later:  ms = m − last
//!         e  = max(0, excess − ⌊r·ms/1000⌋ + 1000·cost)
//!         e > 1000·queue   → rejected (state unchanged)
//!         else excess = e, last = m if ms ≠ 0,
//!              waits ⌊(e − 1000·delay)·1000 / r⌋ ms if e > 1000·delay
//!              (delayed if that is > 0, else admitted)
//! ```
//!
//! This is the exact shaper of [`super`] with its backlog counted in
//! thousandths and its clock in ms: `excess` is 1000 × (the requests ahead
//! of the one just accepted). On whole-ms arrivals at a whole number of
//! requests per second, with cost 1, it accepts and rejects exactly the
//! requests the exact rule does, and each wait is the exact wait truncated
//! to whole ms — so a request the exact rule holds back for less than 1 ms
//! is admitted at once (at rates that divide 1000 r/s no exact wait is
//! shorter than 1 ms, and the outcomes are the same too). At rates like
//! `30r/m` the leak `⌊r·ms/1000⌋` drops fractions of a thousandth and the
//! two drift apart.
//!
//! **When to pick it.** To reproduce what a real nginx does, down to its
//! whole-ms delays and its rounding at slow rates; the exact shaper is the
//! policy, this is the implementation.
//!
//! **In the wild.** nginx `limit_req` (preset `nginx`), checked against a
//! real nginx 1.22 (`tests/fixtures/nginx`).
//!
//! **Retry-after.** The smallest `d ≥ 1` ns at which this rule would
//! accept. A refusal changes nothing, and the rule reads the time only as
//! `ms = m − last`, through a leak `⌊r·ms/1000⌋` that grows with it; the
//! request is accepted once that leak reaches
//! `need = excess + 1000·cost − 1000·queue`, i.e. from the first whole ms
//!
//! ```text
//! m' = last + ⌈1000·need / r⌉         retry_after = m'·1 ms − t
//! ```
//!
//! and not a nanosecond before, since every instant before `m'·1 ms` has a
//! smaller `m`. It is at least 1 ns because `m' > m` (the request at `m`
//! was refused). Every refusal has a retry-after: the leak eventually
//! covers any cost.
//!
//! **Fresh-equivalent.** For requests of cost 1 (nginx has no cost), once
//! the leak covers the excess and one more request: from
//! `last + ⌈1000·(excess + 1000)/r⌉` ms, `e = 0`, the state a new key's
//! first request leaves, and the request passes at once. (A costlier
//! request would still find the key different: the first request of a key
//! passes whatever its cost.) The key is charged
//! [`state_bytes::LEAKY_BUCKET`] (16 bytes: `excess` and `last`) until
//! then.
//!
//! [`state_bytes::LEAKY_BUCKET`]: crate::limiter::state_bytes::LEAKY_BUCKET

use super::Config;
use crate::clock::{Nanos, NANOS_PER_SEC};
use crate::limiter::{
    redis_bytes, span, state_bytes, Decision, FixedLedger, Rule, Stored, UNBOUNDED,
};

const MS: u64 = 1_000_000;

/// nginx's per-key node.
#[derive(Debug, Clone, Copy)]
pub struct Node {
    /// Thousandths of a request.
    excess: u128,
    /// Whole ms.
    last: u64,
}

/// nginx's `limit_req` rule; a key's state is its node, `None` until its
/// first request (nginx finds no node and makes one).
pub(crate) struct LimitReqRule {
    cfg: Config,
    /// Thousandths of a request per second.
    r: u128,
}

/// nginx's `limit_req` per key.
pub(crate) type LimitReq = Stored<LimitReqRule>;

/// nginx's rate for `cfg`: `⌊1000 · rate · 1 s⌋` thousandths per second; 0
/// when the rate is below one thousandth per second (which the scenario
/// parser refuses).
pub fn thousandths_per_sec(cfg: &Config) -> u128 {
    1000 * cfg.rate.tokens() * NANOS_PER_SEC as u128 / cfg.rate.per_ns()
}

impl LimitReq {
    pub fn new(cfg: Config) -> Self {
        Stored::of(
            LimitReqRule {
                cfg,
                // At least 1, so a rate the parser would refuse cannot divide by 0.
                r: thousandths_per_sec(&cfg).max(1),
            },
            FixedLedger::new(state_bytes::LEAKY_BUCKET, redis_bytes::LEAKY_HASH),
        )
    }
}

impl Rule for LimitReqRule {
    type State = Option<Node>;

    fn fresh(&self, _now: Nanos) -> Option<Node> {
        None
    }

    #[inline(always)]
    fn decide(&self, node: &mut Option<Node>, now: Nanos, cost: u64) -> (Decision, Option<u64>) {
        let (r, queue, delay) = (self.r, self.cfg.queue as u128, self.cfg.delay as u128);
        let m = now.0 / MS;
        let Some(node) = node else {
            *node = Some(Node { excess: 0, last: m });
            return (Decision::Admitted, None);
        };
        let ms = (m - node.last) as u128;
        let e = (node.excess + 1000 * cost as u128).saturating_sub(r * ms / 1000);
        if e > 1000 * queue {
            // Accepted once ⌊r·ms'/1000⌋ ≥ need, i.e. ms' ≥ ⌈1000·need / r⌉.
            let need = node.excess + 1000 * cost as u128 - 1000 * queue;
            let at_ms = node.last as u128 + (1000 * need).div_ceil(r);
            let retry_after = Some(span(at_ms * MS as u128 - now.0 as u128));
            return (Decision::Rejected { retry_after }, None);
        }
        node.excess = e;
        if ms != 0 {
            node.last = m;
        }
        let wait_ms = e.saturating_sub(1000 * delay) * 1000 / r;
        let decision = if wait_ms == 0 {
            Decision::Admitted
        } else {
            Decision::Delayed {
                delay: span(wait_ms * MS as u128),
            }
        };
        (decision, None)
    }

    /// Fresh-equivalent, for requests of cost 1 (nginx has no cost), once
    /// the leak covers the excess and one more request: from
    /// `last + ⌈1000·(excess + 1000)/r⌉` ms, `e = 0`, the state a fresh
    /// key's first request leaves, and the request passes at once. (A
    /// costlier request would still find the key different: the first
    /// request of a key passes whatever its cost.)
    fn fresh_at(&self, node: &Option<Node>) -> Nanos {
        let Some(node) = node else {
            return Nanos(0);
        };
        let ms = node.last as u128 + (1000 * (node.excess + 1000)).div_ceil(self.r);
        span(ms * MS as u128)
    }

    /// Admitted iff `e ≤ 1000·queue` and the wait `⌊(e − 1000·delay)·1000
    /// / r⌋` is 0, i.e. `e ≤ A = min(1000·queue, 1000·delay + ⌊(r − 1)/1000⌋)`;
    /// with `e = excess + 1000·cost − leak` that is `cost ≤ ⌊(A + leak −
    /// excess)/1000⌋`. A key's first request passes whatever its cost
    /// (docs/semantics.md §11).
    fn remaining(&self, node: &Option<Node>, now: Nanos) -> u64 {
        let Some(node) = node else {
            return UNBOUNDED;
        };
        let (r, queue, delay) = (self.r, self.cfg.queue as u128, self.cfg.delay as u128);
        let ms = (now.0 / MS).saturating_sub(node.last) as u128;
        let leak = r * ms / 1000;
        let most = (1000 * queue).min(1000 * delay + (r - 1) / 1000);
        ((most + leak).saturating_sub(node.excess) / 1000).min(UNBOUNDED as u128) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::super::Arithmetic;
    use super::*;
    use crate::clock::parse_rate;
    use crate::limiter::Limiter;

    fn limit_req(rate: &str, queue: u64, delay: u64) -> LimitReq {
        LimitReq::new(Config {
            rate: parse_rate(rate).unwrap(),
            queue,
            delay,
            arithmetic: Arithmetic::Nginx,
        })
    }

    fn ms(n: u64) -> Nanos {
        Nanos(n * MS)
    }

    #[test]
    fn nginx_rates_are_thousandths_of_a_request_per_second() {
        assert_eq!(limit_req("10/1s", 0, 0).rule().r, 10_000);
        assert_eq!(limit_req("30/1m", 0, 0).rule().r, 500);
        assert_eq!(limit_req("1/1m", 0, 0).rule().r, 16);
    }

    #[test]
    fn nginx_example_queues_five_and_rejects_the_seventh() {
        let mut lr = limit_req("10/1s", 5, 0);
        let got: Vec<Decision> = (0..7).map(|_| lr.decide(0, ms(0), 1)).collect();
        assert_eq!(got[0], Decision::Admitted);
        for (i, d) in got[1..6].iter().enumerate() {
            assert_eq!(
                *d,
                Decision::Delayed {
                    delay: ms(100 * (i as u64 + 1))
                }
            );
        }
        // excess 5000; accepted once ⌊10000·ms/1000⌋ ≥ 1000, at 100 ms.
        assert_eq!(
            got[6],
            Decision::Rejected {
                retry_after: Some(ms(100))
            }
        );
    }

    #[test]
    fn a_wait_shorter_than_a_millisecond_is_no_wait_at_all() {
        // 3 r/s: the exact shaper holds a request at 333 ms for 1/3 ms.
        let mut lr = limit_req("3/1s", 5, 0);
        assert_eq!(lr.decide(0, ms(0), 1), Decision::Admitted);
        // e = max(0, 0 − ⌊3000·333/1000⌋ + 1000) = 1: ⌊1·1000/3000⌋ = 0 ms.
        assert_eq!(lr.decide(0, ms(333), 1), Decision::Admitted);
        // e = 1 + 1000: ⌊1001/3⌋ = 333 ms (exactly: 333⅔ ms).
        assert_eq!(
            lr.decide(0, ms(333), 1),
            Decision::Delayed { delay: ms(333) }
        );
    }

    #[test]
    fn time_inside_a_millisecond_does_not_count() {
        let mut lr = limit_req("10/1s", 0, 0);
        assert_eq!(lr.decide(0, Nanos(MS - 1), 1), Decision::Admitted);
        // m = 99 at 99.999999 ms: 990 of the 1000 thousandths needed leaked.
        assert_eq!(
            lr.decide(0, Nanos(100 * MS - 1), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(1))
            }
        );
        assert_eq!(lr.decide(0, ms(100), 1), Decision::Admitted);
    }

    #[test]
    fn at_thirty_per_minute_a_request_leaks_in_two_seconds_of_whole_milliseconds() {
        // r = 500: ⌊500·ms/1000⌋ reaches 1000 at ms = 2000.
        let mut lr = limit_req("30/1m", 1, 0);
        assert_eq!(lr.decide(0, ms(0), 1), Decision::Admitted);
        assert_eq!(
            lr.decide(0, ms(0), 1),
            Decision::Delayed { delay: ms(2000) }
        );
        assert_eq!(
            lr.decide(0, ms(1), 1),
            Decision::Rejected {
                retry_after: Some(ms(1999))
            }
        );
    }

    #[test]
    fn at_thirty_per_minute_half_a_thousandth_is_lost_when_last_moves_by_one_ms() {
        let mut lr = limit_req("30/1m", 2, 0);
        assert_eq!(lr.decide(0, ms(0), 1), Decision::Admitted);
        // ⌊500·1/1000⌋ = 0 leaked, yet last moves to 1 ms: e = 1000 waits
        // 2000 ms, where the exact shaper's slot is 2000 ms, 1999 ms away.
        assert_eq!(
            lr.decide(0, ms(1), 1),
            Decision::Delayed { delay: ms(2000) }
        );
    }

    #[test]
    fn requests_within_one_millisecond_leak_nothing_between_them() {
        let mut lr = limit_req("1/1s", 2, 2);
        assert_eq!(lr.decide(0, Nanos(500), 1), Decision::Admitted);
        assert_eq!(lr.decide(0, Nanos(900), 1), Decision::Admitted);
        assert_eq!(lr.decide(0, Nanos(999_999), 1), Decision::Admitted);
        // excess 2000 at last = 0; at 1 ms one thousandth has leaked, and the
        // retry waits for the 1000 needed, counted from last = 0.
        assert_eq!(
            lr.decide(0, ms(1), 1),
            Decision::Rejected {
                retry_after: Some(ms(0) + ms(1000) - ms(1))
            }
        );
    }

    #[test]
    fn a_key_is_fresh_once_the_leak_covers_its_excess_and_one_more_request() {
        let mut lr = limit_req("10/1s", 2, 0);
        lr.decide(0, ms(0), 1);
        lr.decide(0, ms(0), 1);
        // excess 1000 at last = 0: ⌈1000·2000/10000⌉ = 200 ms.
        assert_eq!(lr.fresh_at(0), ms(200));
        assert_eq!(lr.decide(0, ms(200), 1), Decision::Admitted);
        // e = 0 and last = 200: what a new key's first request leaves.
        assert_eq!(lr.fresh_at(0), ms(300));
    }

    #[test]
    fn no_cost_is_refused_for_good() {
        let mut lr = limit_req("10/1s", 0, 0);
        assert_eq!(lr.decide(0, ms(0), 1), Decision::Admitted);
        // need = 1000·10: the leak covers it after 1000 ms.
        assert_eq!(
            lr.decide(0, ms(0), 10),
            Decision::Rejected {
                retry_after: Some(ms(1000))
            }
        );
        assert!(!lr.decide(0, ms(1000) - Nanos(1), 10).passes());
        assert_eq!(lr.decide(0, ms(1000), 10), Decision::Admitted);
    }
}
