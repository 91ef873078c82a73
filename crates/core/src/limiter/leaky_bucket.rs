//! Leaky bucket as a shaper (nginx `limit_req`): requests leave at `rate`,
//! early ones wait in a queue, and a full queue rejects.
//!
//! **What it models.** An outlet per key that lets one request's `cost`
//! through every `cost/rate`. Each key has `next_free`, the moment the
//! outlet is free again (0 at first). A request at `t` gets the slot
//! `release = max(t, next_free)`:
//!
//! ```text
//! release = t                         → admitted
//! waiting ≥ queue                     → rejected   (waiting = accepted requests whose slot is > t)
//! otherwise accepted, passes at       max(t, release − delay/rate)
//!                                       (admitted if that is t, else delayed)
//! every accepted request:             next_free = release + cost/rate
//! ```
//!
//! A rejected request changes nothing. `queue = 0` is a pure policer
//! (nothing waits); `delay` lets the first `delay` queued requests through
//! at once, like nginx's `delay=`, and `delay = queue` is nginx's
//! `nodelay`. A request that is let through at once still holds its place
//! in the queue until its slot.
//!
//! **When to pick it.** When the upstream wants a smooth flow more than it
//! wants low latency: a shaper trades rejections for waiting, and is the
//! only limiter here that delays rather than refuses.
//!
//! **In the wild.** nginx `limit_req` at nanosecond instead of millisecond
//! resolution (`burst` = `queue`, `delay=` = `delay`, `nodelay` =
//! `delay = queue`). With `arithmetic = "nginx"` the same policy is decided
//! in nginx's own integers — whole milliseconds and thousandths of a request
//! — by [`nginx::LimitReq`] (preset `nginx`); [`boxed`] builds whichever
//! the config asks for.
//!
//! **Retry-after.** A refused request found the outlet busy and `queue`
//! requests waiting (never more: a request is accepted only while fewer
//! wait). A waiting request stops waiting at its slot, so the same request
//! is accepted once the oldest waiting slot `s₀` has come; with no queue at
//! all, once the outlet is free:
//!
//! ```text
//! retry_after = ⌈s₀⌉ − t          (queue ≥ 1)
//! retry_after = ⌈next_free⌉ − t   (queue = 0)
//! ```
//!
//! It is the smallest wait: with nothing arriving the number waiting only
//! drops, one at each slot, oldest first, and `next_free` lies after every
//! slot, so nothing earlier frees a place. It is at least 1 ns because `s₀`
//! (or `next_free`) is after `t`. A retry is *accepted*, admitted or
//! delayed; every refusal has a retry-after, since no cost is too large to
//! be queued.
//!
//! **Fresh-equivalent.** Once `next_free ≤ t`: every waiting slot is before
//! `next_free`, so none waits then, and a request is released at its
//! arrival as on a new key. While `next_free > t` a policer refuses what a
//! new key admits, and a queue takes one request fewer. The key is charged
//! [`state_bytes::LEAKY_BUCKET`] (16 bytes: nginx's excess and last-update
//! time) until then, the moment `redis/leaky_bucket.lua` sets its `PEXPIRE`
//! to.
//!
//! **Exactness.** With `rate = n/d` every time is kept multiplied by `n`,
//! so `cost/rate = cost·d` is an integer; a delay or retry-after is rounded
//! up to whole ns.
//!
//! [`state_bytes::LEAKY_BUCKET`]: super::state_bytes::LEAKY_BUCKET

pub mod nginx;

use std::collections::VecDeque;

use super::{
    redis_bytes, span, state_bytes, wait_until_scaled, Decision, FixedLedger, Limiter, Rule,
    Stored, UNBOUNDED,
};
use crate::clock::{div_ceil, Nanos, Rate};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub rate: Rate,
    pub queue: u64,
    pub delay: u64,
    pub arithmetic: Arithmetic,
}

/// Which numbers the rule is computed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Arithmetic {
    /// Exact rationals at nanosecond resolution (docs/semantics.md §2.4).
    #[default]
    Exact,
    /// nginx's integers: whole ms, thousandths of a request (docs/semantics.md §5).
    Nginx,
}

impl Arithmetic {
    /// The accepted spellings, default first.
    pub const NAMES: &'static [&'static str] = &["exact", "nginx"];

    pub fn as_str(self) -> &'static str {
        match self {
            Arithmetic::Exact => "exact",
            Arithmetic::Nginx => "nginx",
        }
    }

    pub fn parse(s: &str) -> Option<Arithmetic> {
        match s {
            "exact" => Some(Arithmetic::Exact),
            "nginx" => Some(Arithmetic::Nginx),
            _ => None,
        }
    }
}

/// A fresh limiter for `cfg`, in the arithmetic it names.
pub fn boxed(cfg: Config) -> Box<dyn Limiter> {
    match cfg.arithmetic {
        Arithmetic::Exact => Box::new(LeakyBucket::new(cfg)),
        Arithmetic::Nginx => Box::new(nginx::LimitReq::new(cfg)),
    }
}

#[derive(Debug, Clone, Default)]
pub struct Outlet {
    /// `next_free × n`.
    next_free: u128,
    /// Accepted requests still waiting (as of the last decision), never
    /// more than `queue`, and their cost while they all have the same.
    /// Each waiting slot is the one before it plus the cost (× d) of the
    /// request given that one, and `next_free` the last plus its
    /// request's cost: so with one cost the slots are
    /// `next_free − j · cost · d` for `j = 1..=waiting`, and need not be
    /// kept.
    waiting: u64,
    cost: u64,
    /// The waiting slots (× n), oldest first, while requests of different
    /// costs wait together (else none: no allocation per key). Boxed: 8
    /// bytes in every key's state instead of a deque's 32.
    #[allow(clippy::box_collection)]
    mixed: Option<Box<VecDeque<u128>>>,
}

impl Outlet {
    /// How many accepted requests still wait at `t` (× n): those whose
    /// slot is after `t`.
    fn waiting_at(&self, t: u128, d: u128) -> u64 {
        if self.next_free <= t {
            // Every waiting slot is before `next_free`.
            return 0;
        }
        match &self.mixed {
            Some(slots) => (slots.len() - slots.partition_point(|&s| s <= t)) as u64,
            None if self.waiting == 0 => 0,
            // Requests of cost 0 all wait for `next_free` itself.
            None if self.cost == 0 => self.waiting,
            None => {
                // Slot j is after t iff j < (next_free − t) / step.
                let step = self.cost as u128 * d;
                let after = div_ceil(self.next_free - t, step) - 1;
                self.waiting.min(u64::try_from(after).unwrap_or(u64::MAX))
            }
        }
    }

    /// Forgets the waiting slots that have come: `waiting` are left.
    fn keep(&mut self, waiting: u64) {
        if waiting == 0 {
            self.mixed = None;
        } else if let Some(slots) = &mut self.mixed {
            let gone = slots.len() - waiting as usize;
            slots.drain(..gone);
        }
        self.waiting = waiting;
    }

    /// Slot `m` (0: the oldest) of the `waiting` still waiting.
    fn slot(&self, m: u64, d: u128) -> u128 {
        match &self.mixed {
            Some(slots) => slots[m as usize],
            None => self.next_free - (self.waiting - m) as u128 * self.cost as u128 * d,
        }
    }

    /// A request of `cost` waits for the slot `next_free` (before
    /// `next_free` moves on by its cost).
    fn wait(&mut self, cost: u64, d: u128) {
        if self.mixed.is_none() && (self.waiting == 0 || self.cost == cost) {
            self.cost = cost;
        } else {
            let slots = self.mixed.get_or_insert_with(|| {
                let step = self.cost as u128 * d;
                let slots = (1..=self.waiting).rev();
                Box::new(slots.map(|j| self.next_free - j as u128 * step).collect())
            });
            slots.push_back(self.next_free);
        }
        self.waiting += 1;
    }
}

/// The exact shaper's rule.
pub struct LeakyBucketRule {
    cfg: Config,
}

/// The exact shaper per key.
pub type LeakyBucket = Stored<LeakyBucketRule>;

impl LeakyBucket {
    /// The exact shaper (whatever `cfg.arithmetic` says; see [`boxed`]).
    pub fn new(cfg: Config) -> Self {
        Stored::of(
            LeakyBucketRule { cfg },
            FixedLedger::new(state_bytes::LEAKY_BUCKET, redis_bytes::LEAKY_HASH),
        )
    }
}

impl Rule for LeakyBucketRule {
    type State = Outlet;

    fn fresh(&self, _now: Nanos) -> Outlet {
        Outlet::default()
    }

    #[inline(always)]
    fn decide(&self, o: &mut Outlet, now: Nanos, cost: u64) -> (Decision, Option<u64>) {
        let (n, d) = (self.cfg.rate.tokens(), self.cfg.rate.per_ns());
        let queue = self.cfg.queue;
        let t = now.0 as u128 * n;
        let waiting = o.waiting_at(t, d);
        o.keep(waiting);
        let release = t.max(o.next_free);
        if release == t {
            o.next_free = release + cost as u128 * d;
            return (Decision::Admitted, None);
        }
        if waiting >= queue {
            // Accepted once the (waiting − queue + 1)-th waiting slot passes;
            // with no queue at all, only once the outlet is free.
            let at = if queue == 0 {
                o.next_free
            } else {
                o.slot(waiting - queue, d)
            };
            let retry_after = Some(wait_until_scaled(now, at, n));
            return (Decision::Rejected { retry_after }, None);
        }
        let passes = t.max(release.saturating_sub(self.cfg.delay as u128 * d));
        // `release` is `next_free`: the outlet is busy at `t`.
        o.wait(cost, d);
        o.next_free = release + cost as u128 * d;
        let decision = if passes == t {
            Decision::Admitted
        } else {
            Decision::Delayed {
                delay: span(div_ceil(passes - t, n)),
            }
        };
        (decision, None)
    }

    /// Fresh-equivalent once `next_free ≤ t`: every waiting slot is before
    /// `next_free`, so none waits then, and a request is released at its
    /// arrival as on a fresh key. While `next_free > t` a policer refuses
    /// what a fresh key admits, and a queue takes one request fewer.
    fn fresh_at(&self, o: &Outlet) -> Nanos {
        span(div_ceil(o.next_free, self.cfg.rate.tokens()))
    }

    /// The cost never decides whether a request waits: any is admitted if
    /// the outlet is free at `now`, or if a place in the queue is free and
    /// its slot is within `delay` of `now`; else none (docs/semantics.md
    /// §11).
    fn remaining(&self, o: &Outlet, now: Nanos) -> u64 {
        let (n, d) = (self.cfg.rate.tokens(), self.cfg.rate.per_ns());
        let t = now.0 as u128 * n;
        if o.next_free <= t {
            return UNBOUNDED;
        }
        let waiting = o.waiting_at(t, d);
        let at_once = o.next_free.saturating_sub(self.cfg.delay as u128 * d) <= t;
        if waiting < self.cfg.queue && at_once {
            UNBOUNDED
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::parse_rate;

    const MS: u64 = 1_000_000;

    fn shaper(rate: &str, queue: u64, delay: u64) -> LeakyBucket {
        LeakyBucket::new(Config {
            rate: parse_rate(rate).unwrap(),
            queue,
            delay,
            arithmetic: Arithmetic::Exact,
        })
    }

    fn delays_of_seven_at_once(lb: &mut LeakyBucket) -> Vec<Option<u64>> {
        (0..7)
            .map(|_| match lb.decide(0, Nanos(0), 1) {
                Decision::Admitted => Some(0),
                Decision::Delayed { delay } => Some(delay.0 / MS),
                Decision::Rejected { .. } => None,
            })
            .collect()
    }

    #[test]
    fn nginx_example_queues_five_and_rejects_the_seventh() {
        let mut lb = shaper("10/1s", 5, 0);
        assert_eq!(
            delays_of_seven_at_once(&mut lb),
            [
                Some(0),
                Some(100),
                Some(200),
                Some(300),
                Some(400),
                Some(500),
                None
            ]
        );
    }

    #[test]
    fn nginx_example_with_delay_two_lets_three_through_at_once() {
        let mut lb = shaper("10/1s", 5, 2);
        assert_eq!(
            delays_of_seven_at_once(&mut lb),
            [
                Some(0),
                Some(0),
                Some(0),
                Some(100),
                Some(200),
                Some(300),
                None
            ]
        );
    }

    #[test]
    fn a_full_queue_rejects_until_its_oldest_waiting_request_leaves() {
        let mut lb = shaper("10/1s", 2, 0);
        lb.decide(0, Nanos(0), 1); // slot 0
        lb.decide(0, Nanos(0), 1); // slot 100ms
        lb.decide(0, Nanos(0), 1); // slot 200ms
        assert_eq!(
            lb.decide(0, Nanos(30 * MS), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(70 * MS))
            }
        );
        assert_eq!(
            lb.decide(0, Nanos(100 * MS), 1),
            Decision::Delayed {
                delay: Nanos(200 * MS)
            }
        );
    }

    #[test]
    fn with_no_queue_it_polices_at_the_rate() {
        let mut lb = shaper("7/1s", 0, 0);
        assert_eq!(lb.decide(0, Nanos(0), 1), Decision::Admitted);
        assert_eq!(
            lb.decide(0, Nanos(0), 1),
            Decision::Rejected {
                retry_after: Some(Nanos(142_857_143))
            }
        );
        assert!(!lb.decide(0, Nanos(142_857_142), 1).passes());
        assert_eq!(lb.decide(0, Nanos(142_857_143), 1), Decision::Admitted);
    }

    #[test]
    fn delay_equal_to_queue_passes_everything_accepted_at_once() {
        let mut lb = shaper("10/1s", 3, 3);
        for _ in 0..4 {
            assert_eq!(lb.decide(0, Nanos(0), 1), Decision::Admitted);
        }
        assert!(!lb.decide(0, Nanos(0), 1).passes());
    }

    #[test]
    fn a_costly_request_holds_the_outlet_for_longer() {
        let mut lb = shaper("10/1s", 5, 0);
        assert_eq!(lb.decide(0, Nanos(0), 3), Decision::Admitted);
        assert_eq!(
            lb.decide(0, Nanos(0), 1),
            Decision::Delayed {
                delay: Nanos(300 * MS)
            }
        );
    }

    #[test]
    fn a_key_counts_until_its_outlet_is_free() {
        let mut lb = shaper("10/1s", 2, 0);
        lb.decide(0, Nanos(0), 1);
        lb.decide(0, Nanos(0), 1);
        // Slots 0 and 100ms: the outlet is free at 200ms.
        assert_eq!(lb.fresh_at(0), Nanos(200 * MS));
        assert_eq!(
            lb.footprint(Nanos(1000 * MS)).byte_ns,
            16 * 200 * MS as u128
        );
    }

    #[test]
    fn requests_of_one_cost_wait_with_no_slots_kept_and_of_several_with_them() {
        let rule = LeakyBucketRule {
            cfg: Config {
                rate: parse_rate("10/1s").unwrap(),
                queue: 3,
                delay: 0,
                arithmetic: Arithmetic::Exact,
            },
        };
        let (n, d) = (rule.cfg.rate.tokens(), rule.cfg.rate.per_ns());
        let decide = |o: &mut Outlet, ms: u64, cost: u64| rule.decide(o, Nanos(ms * MS), cost).0;
        let delayed = |ms: u64| Decision::Delayed {
            delay: Nanos(ms * MS),
        };
        let retry = |ms: u64| Decision::Rejected {
            retry_after: Some(Nanos(ms * MS)),
        };
        // The deque is boxed: a key's state stays 48 bytes.
        assert_eq!(size_of::<Outlet>(), 48);
        let mut o = Outlet::default();
        // Slots 0 (admitted), 100, 200 and 300 ms: three wait, of one cost.
        for _ in 0..4 {
            assert!(decide(&mut o, 0, 1).passes());
        }
        assert!(o.mixed.is_none());
        assert_eq!(o.waiting_at(150 * MS as u128 * n, d), 2);
        // Full: accepted once the oldest waiting slot (100 ms) has come.
        assert_eq!(decide(&mut o, 50, 2), retry(50));
        // At 150 ms two wait (200, 300 ms); one of cost 2 takes 400 ms and
        // the outlet until 600 ms: now the slots are kept.
        assert_eq!(decide(&mut o, 150, 2), delayed(250));
        assert_eq!(o.mixed.as_deref().map(VecDeque::len), Some(3));
        assert_eq!(decide(&mut o, 150, 1), retry(50));
        // At 250 ms the slots of 300 and 400 ms wait; the next takes 600.
        assert_eq!(decide(&mut o, 250, 1), delayed(350));
        assert_eq!(decide(&mut o, 250, 1), retry(50));
        // Once none waits the slots are dropped, and one cost is kept again.
        assert_eq!(decide(&mut o, 700, 1), Decision::Admitted);
        assert!(o.mixed.is_none());
        assert_eq!(decide(&mut o, 700, 1), delayed(100));
        assert!(o.mixed.is_none());
        // Requests of cost 0 (the engine never sends one; the rule takes
        // it) wait for the slot they are given and hold the outlet no
        // longer: all three wait for 900 ms, the queue full after them.
        let mut o = Outlet::default();
        assert_eq!(decide(&mut o, 0, 9), Decision::Admitted);
        for _ in 0..3 {
            assert_eq!(decide(&mut o, 0, 0), delayed(900));
        }
        assert_eq!(decide(&mut o, 100, 0), retry(800));
        assert_eq!(decide(&mut o, 900, 1), Decision::Admitted);
    }

    #[test]
    fn a_full_queue_accepts_the_retry_at_the_oldest_slot_and_not_before() {
        let mut lb = shaper("10/1s", 2, 0);
        for _ in 0..3 {
            lb.decide(0, Nanos(0), 1); // slots 0, 100ms, 200ms
        }
        assert_eq!(
            lb.decide(0, Nanos(30 * MS), 5),
            Decision::Rejected {
                retry_after: Some(Nanos(70 * MS))
            }
        );
        assert!(!lb.decide(0, Nanos(100 * MS - 1), 5).passes());
        // Accepted whatever its cost: no cost is too large to be queued.
        assert_eq!(
            lb.decide(0, Nanos(100 * MS), 5),
            Decision::Delayed {
                delay: Nanos(200 * MS)
            }
        );
    }
}
