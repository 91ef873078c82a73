//! Retry policies: how a client reacts to a 429.
//!
//! A rejected attempt is retried as a new attempt of the same logical request
//! (same client, attempt number + 1) at a time the policy picks, until
//! `max_attempts` attempts have been made; then the request is `gave_up`.
//! Delayed (shaped) requests never retry: they wait.
//!
//! | policy | wait before attempt n + 1 |
//! |---|---|
//! | `none` | never retries |
//! | `immediate` | 0: the retry is queued at the same nanosecond, behind what is already there |
//! | `fixed` | `delay` (+ uniform `[0, jitter]`) |
//! | `exponential` | `b = min(cap, base · factor^(n−1))`, then `jitter`: `none` → b, `full` → U[0, b], `equal` → b/2 + U[0, b/2], `decorrelated` → min(cap, U[base, 3 · previous wait]) |
//! | `retry_after` | the limiter's `retry_after`, rounded up to a multiple of `granularity` (HTTP `Retry-After` carries whole seconds), + U[0, jitter]; a request that can never pass gives up |
//!
//! Random draws come from a generator seeded by (scenario seed, source,
//! client, request, attempt): the same retry of the same request draws the
//! same number under every limiter, so limiters differ only by what they
//! decided.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::clock::{Nanos, MAX_NANOS, NANOS_PER_SEC};

/// The most attempts a policy may allow per logical request.
pub const MAX_ATTEMPTS: u64 = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    None,
    Full,
    Equal,
    Decorrelated,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryPolicy {
    None,
    Immediate,
    Fixed {
        delay: Nanos,
        jitter: Nanos,
    },
    Exponential {
        base: Nanos,
        /// `factor = num / den ≥ 1`.
        factor: (u64, u64),
        cap: Nanos,
        jitter: Jitter,
    },
    RetryAfter {
        granularity: Nanos,
        jitter: Nanos,
    },
    /// A client that reads the RateLimit header fields after every
    /// decision (docs/semantics.md §11): when `r = 0`, or `r ≤ F × q` with
    /// `slow_below = F = num/den`, it holds its next requests — new ones
    /// and retries — until `t` seconds have passed, then sends them in
    /// order (the engine keeps the hold). A rejected request is retried
    /// after `Retry-After` (whole seconds), or when the hold ends if that
    /// is later.
    RatelimitHeaders {
        slow_below: (u64, u64),
    },
}

impl RetryPolicy {
    /// Whether its clients read the RateLimit fields of every decision.
    pub fn reads_headers(&self) -> bool {
        matches!(self, RetryPolicy::RatelimitHeaders { .. })
    }
}

/// A policy and the bound on attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    pub policy: RetryPolicy,
    /// Attempts in all, the first included.
    pub max_attempts: u32,
}

impl Retry {
    pub const NONE: Retry = Retry {
        policy: RetryPolicy::None,
        max_attempts: 1,
    };

    /// When to retry after attempt `attempt` was rejected at `now` with
    /// `retry_after`, or `None` to give up. `previous` is the wait before
    /// this attempt (0 for the first), for decorrelated jitter.
    pub fn next_wait(
        &self,
        attempt: u32,
        retry_after: Option<Nanos>,
        previous: Nanos,
        draw: &mut impl FnMut() -> ChaCha8Rng,
    ) -> Option<Nanos> {
        if attempt >= self.max_attempts {
            return None;
        }
        let uniform = |draw: &mut dyn FnMut() -> ChaCha8Rng, lo: u64, hi: u64| -> u64 {
            if hi <= lo {
                lo
            } else {
                draw().random_range(lo..=hi)
            }
        };
        Some(match self.policy {
            RetryPolicy::None => return None,
            RetryPolicy::Immediate => Nanos::ZERO,
            RetryPolicy::Fixed { delay, jitter } => Nanos(delay.0 + uniform(draw, 0, jitter.0)),
            RetryPolicy::Exponential {
                base,
                factor,
                cap,
                jitter,
            } => {
                let backoff = backoff(base, factor, cap, attempt);
                Nanos(match jitter {
                    Jitter::None => backoff,
                    Jitter::Full => uniform(draw, 0, backoff),
                    Jitter::Equal => backoff / 2 + uniform(draw, 0, backoff - backoff / 2),
                    Jitter::Decorrelated => {
                        let hi = previous.0.max(base.0).saturating_mul(3).min(MAX_NANOS);
                        uniform(draw, base.0, hi).min(cap.0)
                    }
                })
            }
            RetryPolicy::RetryAfter {
                granularity,
                jitter,
            } => {
                let wait = retry_after?.0;
                let rounded = if granularity.0 == 0 {
                    wait
                } else {
                    wait.div_ceil(granularity.0).saturating_mul(granularity.0)
                };
                Nanos(rounded.saturating_add(uniform(draw, 0, jitter.0)))
            }
            // `Retry-After` in whole seconds; a hold may push it later.
            RetryPolicy::RatelimitHeaders { .. } => Nanos(
                retry_after?
                    .0
                    .div_ceil(NANOS_PER_SEC)
                    .saturating_mul(NANOS_PER_SEC),
            ),
        })
    }
}

/// `min(cap, ⌈base · factor^(attempt − 1)⌉)`: the power is kept as a
/// fraction and rounded up once. (Should the fraction outgrow 128 bits
/// before it reaches the cap — a factor such as 1.000001 over hundreds of
/// attempts — both of its terms drop their low 32 bits, which keeps the
/// value to about one part in 2^90.)
pub fn backoff(base: Nanos, factor: (u64, u64), cap: Nanos, attempt: u32) -> u64 {
    let cap = cap.0 as u128;
    let (f_num, f_den) = (factor.0 as u128, factor.1 as u128);
    let (mut num, mut den) = (base.0 as u128, 1u128);
    for _ in 1..attempt {
        if cap.checked_mul(den).is_some_and(|c| num >= c) {
            return cap as u64;
        }
        loop {
            match (num.checked_mul(f_num), den.checked_mul(f_den)) {
                (Some(n), Some(d)) => {
                    (num, den) = (n, d);
                    break;
                }
                _ => (num, den) = (num >> 32, (den >> 32).max(1)),
            }
        }
    }
    num.div_ceil(den).min(cap) as u64
}

/// The generator for the random part of one retry: a function of the
/// scenario seed, the source, the client, the request and the attempt.
pub fn retry_rng(seed: u64, source: u32, client: u32, request: u64, attempt: u32) -> ChaCha8Rng {
    event_rng(seed, source, client, request, attempt, *b"rtry")
}

/// A generator for one random choice about one attempt (`tag` names the
/// choice: a retry wait, a route, a round trip…), so that the same attempt
/// draws the same number wherever it is simulated.
pub(crate) fn event_rng(
    seed: u64,
    source: u32,
    client: u32,
    request: u64,
    attempt: u32,
    tag: [u8; 4],
) -> ChaCha8Rng {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..12].copy_from_slice(&source.to_le_bytes());
    key[12..16].copy_from_slice(&client.to_le_bytes());
    key[16..24].copy_from_slice(&request.to_le_bytes());
    key[24..28].copy_from_slice(&attempt.to_le_bytes());
    key[28..].copy_from_slice(&tag);
    ChaCha8Rng::from_seed(key)
}
