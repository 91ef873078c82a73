//! The limiters that read the backend instead of a rate
//! (docs/semantics.md §10): a cap on requests in flight per key, a cap on
//! the backend's waiting room, and the adaptive concurrency limits of
//! Netflix's concurrency-limits and Envoy.
//!
//! The engine tells them what they cannot see from arrivals alone: before
//! each decision, the backend's waiting room ([`Limiter::observe`]); at
//! each response to a request they passed, its sample
//! ([`Limiter::respond`]). A request is in flight from its pass to its
//! response (a dropped one is answered at its pass). None of them delays,
//! and a rejection names no retry-after: nothing says when a slot frees.

use super::adaptive::{aimd, envoy_gradient, gradient2, vegas, AdaptiveLimit, Draw};
use super::concurrency::Concurrency;
use super::queue_length::QueueLength;
use super::{Bits, Decision, Footprint, Headers, Limiter, Sample, UNBOUNDED};
use crate::clock::Nanos;

/// Which adaptive limit, with its parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Adaptive {
    Aimd(aimd::Config),
    Gradient2(gradient2::Config),
    Vegas(vegas::Config),
    EnvoyGradient(envoy_gradient::Config),
}

// Parameters are validated finite: equality is reflexive.
impl Eq for Adaptive {}

impl Adaptive {
    pub fn name(&self) -> &'static str {
        match self {
            Adaptive::Aimd(_) => "aimd",
            Adaptive::Gradient2(_) => "gradient2",
            Adaptive::Vegas(_) => "vegas",
            Adaptive::EnvoyGradient(_) => "envoy_gradient",
        }
    }
}

/// Bytes of state: a counter per key in flight; an adaptive limit's own
/// figures (limit, estimates) once, for the one global key.
pub const CONCURRENCY_BYTES: u64 = 8;
pub const ADAPTIVE_BYTES: u64 = 16;

/// One limiter of this module, as the engine runs it.
pub struct Feedback {
    kind: Kind,
    /// Keys with a request in flight, and the state-byte integral over
    /// them (each charged [`CONCURRENCY_BYTES`] while it has one).
    live: u64,
    peak_live: u64,
    since: u64,
    key_ns: u128,
    keys: u64,
    seen: Bits,
}

// One per limiter instance: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
enum Kind {
    Concurrency(Concurrency),
    QueueLength(QueueLength, u64),
    Adaptive {
        limit: AdaptiveLimit,
        in_flight: u64,
        rng: rand_chacha::ChaCha8Rng,
    },
}

/// A random source for the adaptive limits' draws.
struct Words<'a>(&'a mut rand_chacha::ChaCha8Rng);

impl Draw for Words<'_> {
    fn next_u64(&mut self) -> u64 {
        rand::RngCore::next_u64(self.0)
    }
}

impl Feedback {
    pub fn concurrency(max_in_flight: u64) -> Feedback {
        Feedback::of(Kind::Concurrency(Concurrency::new(max_in_flight)))
    }

    pub fn queue_length(max_queue: u64) -> Feedback {
        Feedback::of(Kind::QueueLength(QueueLength::new(max_queue), 0))
    }

    /// An adaptive limit whose random draws (Vegas' probes, Envoy's
    /// jitter) come from `rng`.
    pub fn adaptive(a: Adaptive, mut rng: rand_chacha::ChaCha8Rng) -> Feedback {
        let limit = match a {
            Adaptive::Aimd(c) => AdaptiveLimit::Aimd(aimd::Aimd::new(c)),
            Adaptive::Gradient2(c) => AdaptiveLimit::Gradient2(gradient2::Gradient2::new(c)),
            Adaptive::Vegas(c) => AdaptiveLimit::Vegas(vegas::Vegas::new(c, &mut Words(&mut rng))),
            Adaptive::EnvoyGradient(c) => {
                AdaptiveLimit::EnvoyGradient(envoy_gradient::EnvoyGradient::new(c, Nanos::ZERO))
            }
        };
        Feedback::of(Kind::Adaptive {
            limit,
            in_flight: 0,
            rng,
        })
    }

    fn of(kind: Kind) -> Feedback {
        Feedback {
            kind,
            live: 0,
            peak_live: 0,
            since: 0,
            key_ns: 0,
            keys: 0,
            seen: Bits::default(),
        }
    }

    fn integrate(&mut self, now: Nanos) {
        if now.0 > self.since {
            self.key_ns += self.live as u128 * (now.0 - self.since) as u128;
            self.since = now.0;
        }
    }

    fn bytes(&self) -> u64 {
        match self.kind {
            Kind::Concurrency(_) => CONCURRENCY_BYTES,
            Kind::QueueLength(..) => 0,
            Kind::Adaptive { .. } => ADAPTIVE_BYTES,
        }
    }
}

impl Limiter for Feedback {
    fn decide(&mut self, key: u32, now: Nanos, _cost: u64) -> Decision {
        self.integrate(now);
        match &mut self.kind {
            Kind::Concurrency(c) => {
                let before = c.in_flight(key);
                if !self.seen.get(key) {
                    self.seen.set(key, true);
                    self.keys += 1;
                }
                let d = c.decide(key);
                if before == 0 && c.in_flight(key) == 1 {
                    self.live += 1;
                    self.peak_live = self.peak_live.max(self.live);
                }
                d
            }
            Kind::QueueLength(q, waiting) => {
                self.keys = 1;
                q.decide(*waiting)
            }
            Kind::Adaptive {
                limit, in_flight, ..
            } => {
                self.keys = 1;
                if self.live == 0 {
                    self.live = 1;
                    self.peak_live = 1;
                }
                limit.advance(now);
                if *in_flight < limit.limit() as u64 {
                    *in_flight += 1;
                    Decision::Admitted
                } else {
                    Decision::Rejected { retry_after: None }
                }
            }
        }
    }

    fn feedback(&self) -> bool {
        true
    }

    fn observe(&mut self, now: Nanos, waiting: u64) {
        match &mut self.kind {
            Kind::QueueLength(_, w) => *w = waiting,
            Kind::Adaptive { limit, .. } => limit.advance(now),
            Kind::Concurrency(_) => {}
        }
    }

    fn in_flight(&self, key: u32) -> u64 {
        match &self.kind {
            Kind::Concurrency(c) => c.in_flight(key),
            Kind::QueueLength(..) => 0,
            Kind::Adaptive { in_flight, .. } => *in_flight,
        }
    }

    fn respond(&mut self, key: u32, now: Nanos, sample: Sample) {
        self.integrate(now);
        match &mut self.kind {
            Kind::Concurrency(c) => {
                c.on_complete(key);
                if c.in_flight(key) == 0 {
                    self.live -= 1;
                }
            }
            Kind::QueueLength(..) => {}
            Kind::Adaptive {
                limit,
                in_flight,
                rng,
            } => {
                *in_flight = in_flight.saturating_sub(1);
                limit.advance(now);
                let started = u32::try_from(sample.in_flight).unwrap_or(u32::MAX);
                limit.on_sample(now, sample.rtt, started, sample.dropped, &mut Words(rng));
            }
        }
    }

    fn current_limit(&self) -> Option<u64> {
        match &self.kind {
            Kind::Adaptive { limit, .. } => Some(limit.limit() as u64),
            _ => None,
        }
    }

    fn footprint(&self, end: Nanos) -> Footprint {
        let mut key_ns = self.key_ns;
        if end.0 > self.since {
            key_ns += self.live as u128 * (end.0 - self.since) as u128;
        }
        let bytes = self.bytes();
        Footprint {
            byte_ns: bytes as u128 * key_ns,
            key_ns: self.keys as u128 * end.0 as u128,
            peak_bytes: if self.peak_live > 0 { bytes } else { 0 },
            peak_total: bytes * self.peak_live,
            redis_byte_ns: 0,
            redis_peak_bytes: 0,
            redis_peak_total: 0,
            span: end.0,
            keys: self.keys,
        }
    }

    fn fresh_at(&self, key: u32) -> Nanos {
        // In flight: not fresh until a response no one can foresee.
        match self.in_flight(key) {
            0 => Nanos::ZERO,
            _ => Nanos(u64::MAX),
        }
    }

    fn decide_detached(&mut self, _key: u32, _now: Nanos, _cost: u64) -> (Decision, u32) {
        unreachable!(
            "feedback limiters run with local state only (checked when the scenario is read)"
        )
    }

    fn write_back(&mut self, _key: u32, _ticket: u32, _now: Nanos) {
        unreachable!("feedback limiters run with local state only")
    }

    fn discard(&mut self, _ticket: u32) {}

    /// Any cost while a request would pass (the cost is not counted), else
    /// none; no reset a clock can tell, as only responses free a slot:
    /// `t = 0` (docs/semantics.md §11).
    fn headers(&self, key: u32, _now: Nanos) -> Headers {
        let room = match &self.kind {
            Kind::Concurrency(c) => c.has_room(key),
            Kind::QueueLength(q, waiting) => q.decide(*waiting).passes(),
            Kind::Adaptive {
                limit, in_flight, ..
            } => *in_flight < limit.limit() as u64,
        };
        Headers {
            remaining: if room { UNBOUNDED } else { 0 },
            reset: Nanos::ZERO,
        }
    }

    fn detached_headers(&self, key: u32, _ticket: u32, now: Nanos) -> Headers {
        self.headers(key, now)
    }
}
