//! Which algorithm, with which parameters: the one list of the algorithms.
//!
//! [`Algorithm`] names an algorithm of this folder with its validated
//! configuration, builds a fresh [`Limiter`] for it, and divides it among
//! instances; [`ALGORITHMS`] lists them all for
//! `ratesim list` and error messages. The scenario schema parses a
//! `[[limiter]]` table into one; the deployment divides it.

use super::feedback::{Adaptive, Feedback};
use super::{
    fixed_window, gcra, interval_bucket, leaky_bucket, quota, sliding_counter, sliding_log,
    smooth_bursty, token_bucket, Limiter,
};
use crate::clock::Rate;

/// A validated algorithm with its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    TokenBucket(token_bucket::Config),
    IntervalBucket(interval_bucket::Config),
    Gcra(gcra::Config),
    LeakyBucket(leaky_bucket::Config),
    FixedWindow(fixed_window::Config),
    SlidingLog(sliding_log::Config),
    SlidingCounter(sliding_counter::Config),
    SmoothBursty(smooth_bursty::Config),
    /// A budget per calendar period (docs/semantics.md §10).
    Quota(quota::Config),
    /// At most this many requests of a key in flight (needs a backend).
    Concurrency {
        max_in_flight: u64,
    },
    /// Admit while the backend's waiting room holds fewer than this.
    QueueLength {
        max_queue: u64,
    },
    /// An adaptive concurrency limit (global per instance).
    Adaptive(Adaptive),
}

/// Every algorithm name with a one-line description, for `ratesim list`.
pub const ALGORITHMS: &[(&str, &str)] = &[
    (
        "token_bucket",
        "continuous refill up to `capacity` at `rate` (Envoy local rate limit)",
    ),
    (
        "interval_bucket",
        "`tokens_per_fill` every `fill_interval` up to `max_tokens` (Envoy's timer bucket)",
    ),
    (
        "gcra",
        "one theoretical arrival time; decides as a token bucket of `burst` (governor, redis-cell)",
    ),
    (
        "leaky_bucket",
        "shaper: delays up to `queue` requests to `rate`, `delay` pass at once (nginx limit_req)",
    ),
    (
        "fixed_window",
        "counter per aligned `window`; 2x `limit` across a boundary (envoyproxy/ratelimit)",
    ),
    (
        "sliding_log",
        "exact log of the last `window`; 8 bytes per live entry (Redis sorted sets)",
    ),
    (
        "sliding_counter",
        "previous window weighted by its remaining share (Cloudflare)",
    ),
    (
        "smooth_bursty",
        "balance may go into debt: admits any cost while none is owed (Guava RateLimiter)",
    ),
    (
        "quota",
        "`limit` per calendar `period` (day, week from Monday, month) from `epoch`",
    ),
    (
        "concurrency",
        "at most `max_in_flight` requests per key passed and not yet answered (needs [backend])",
    ),
    (
        "queue_length",
        "admit while the backend's waiting room holds fewer than `max_queue` (needs [backend])",
    ),
    (
        "aimd",
        "adaptive concurrency: +1 while busy, x0.9 on a drop (Netflix AIMDLimit; needs [backend])",
    ),
    (
        "gradient2",
        "adaptive concurrency from short vs long RTT (Netflix Gradient2Limit; needs [backend])",
    ),
    (
        "vegas",
        "adaptive concurrency from the queue RTT implies (Netflix VegasLimit; needs [backend])",
    ),
    (
        "envoy_gradient",
        "adaptive concurrency from min RTT windows (Envoy's gradient controller; needs [backend])",
    ),
];

impl Algorithm {
    pub fn name(&self) -> &'static str {
        match self {
            Algorithm::TokenBucket(_) => "token_bucket",
            Algorithm::IntervalBucket(_) => "interval_bucket",
            Algorithm::Gcra(_) => "gcra",
            Algorithm::LeakyBucket(_) => "leaky_bucket",
            Algorithm::FixedWindow(_) => "fixed_window",
            Algorithm::SlidingLog(_) => "sliding_log",
            Algorithm::SlidingCounter(_) => "sliding_counter",
            Algorithm::SmoothBursty(_) => "smooth_bursty",
            Algorithm::Quota(_) => "quota",
            Algorithm::Concurrency { .. } => "concurrency",
            Algorithm::QueueLength { .. } => "queue_length",
            Algorithm::Adaptive(a) => a.name(),
        }
    }

    /// Whether it reads the backend (docs/semantics.md §10).
    pub fn needs_backend(&self) -> bool {
        matches!(
            self,
            Algorithm::Concurrency { .. } | Algorithm::QueueLength { .. } | Algorithm::Adaptive(_)
        )
    }

    /// [`Algorithm::build`], an adaptive limit's random draws from `rng`.
    pub fn build_seeded(&self, rng: impl FnOnce() -> rand_chacha::ChaCha8Rng) -> Box<dyn Limiter> {
        match *self {
            Algorithm::Adaptive(a) => Box::new(Feedback::adaptive(a, rng())),
            _ => self.build(),
        }
    }

    /// A fresh limiter with no state.
    pub fn build(&self) -> Box<dyn Limiter> {
        match *self {
            Algorithm::TokenBucket(c) => token_bucket::boxed(c),
            Algorithm::IntervalBucket(c) => Box::new(interval_bucket::IntervalBucket::new(c)),
            Algorithm::Gcra(c) => Box::new(gcra::Gcra::new(c)),
            Algorithm::LeakyBucket(c) => leaky_bucket::boxed(c),
            Algorithm::FixedWindow(c) => Box::new(fixed_window::FixedWindow::new(c)),
            Algorithm::SlidingLog(c) => Box::new(sliding_log::SlidingLog::new(c)),
            Algorithm::SlidingCounter(c) => Box::new(sliding_counter::SlidingCounter::new(c)),
            Algorithm::SmoothBursty(c) => Box::new(smooth_bursty::SmoothBursty::new(c)),
            Algorithm::Quota(c) => Box::new(quota::Quota::new(c)),
            Algorithm::Concurrency { max_in_flight } => {
                Box::new(Feedback::concurrency(max_in_flight))
            }
            Algorithm::QueueLength { max_queue } => Box::new(Feedback::queue_length(max_queue)),
            Algorithm::Adaptive(_) => {
                use rand::SeedableRng;
                self.build_seeded(|| rand_chacha::ChaCha8Rng::seed_from_u64(0))
            }
        }
    }

    /// This policy divided among `n` instances: rates exactly, counts
    /// rounded down (at least 1; a queue or delay may reach 0). `None` when
    /// a divided rate cannot be held exactly.
    pub fn divided(&self, n: u64) -> Option<Algorithm> {
        let count = |c: u64| (c / n).max(1);
        let rate = |r: Rate| Rate::new(r.tokens(), r.per_ns() * n as u128);
        Some(match *self {
            Algorithm::TokenBucket(c) => Algorithm::TokenBucket(token_bucket::Config {
                capacity: count(c.capacity),
                rate: rate(c.rate)?,
            }),
            Algorithm::Gcra(c) => Algorithm::Gcra(gcra::Config {
                burst: count(c.burst),
                rate: rate(c.rate)?,
            }),
            Algorithm::IntervalBucket(c) => Algorithm::IntervalBucket(interval_bucket::Config {
                max_tokens: count(c.max_tokens),
                tokens_per_fill: count(c.tokens_per_fill),
                fill_interval: c.fill_interval,
            }),
            Algorithm::LeakyBucket(c) => Algorithm::LeakyBucket(leaky_bucket::Config {
                rate: rate(c.rate)?,
                queue: c.queue / n,
                delay: c.delay / n,
                arithmetic: c.arithmetic,
            }),
            Algorithm::FixedWindow(c) => Algorithm::FixedWindow(fixed_window::Config {
                limit: count(c.limit),
                ..c
            }),
            Algorithm::SlidingLog(c) => Algorithm::SlidingLog(sliding_log::Config {
                limit: count(c.limit),
                ..c
            }),
            Algorithm::SlidingCounter(c) => Algorithm::SlidingCounter(sliding_counter::Config {
                limit: count(c.limit),
                ..c
            }),
            Algorithm::SmoothBursty(c) => Algorithm::SmoothBursty(smooth_bursty::Config {
                capacity: count(c.capacity),
                rate: rate(c.rate)?,
                ..c
            }),
            Algorithm::Quota(c) => Algorithm::Quota(quota::Config {
                limit: count(c.limit),
                ..c
            }),
            Algorithm::Concurrency { max_in_flight } => Algorithm::Concurrency {
                max_in_flight: count(max_in_flight),
            },
            Algorithm::QueueLength { max_queue } => Algorithm::QueueLength {
                max_queue: count(max_queue),
            },
            Algorithm::Adaptive(a) => Algorithm::Adaptive(a),
        })
    }
}
