//! Deployments: where a limiter's state lives when a service runs on many
//! gateway instances.
//!
//! A limiter kept in each process's memory limits each process, not the
//! service: behind a load balancer with N instances a local limit of 100/s
//! lets up to N × 100/s through. Sharing the state in a store fixes that, at
//! the price of a round trip per decision, races when the update is not
//! atomic, and a choice when the store fails. The rules ratesim applies:
//!
//! - **Routing** picks the instance of every attempt (retries are routed
//!   again): `round_robin` (the n-th attempt the limiter sees goes to
//!   instance n mod N), `random` (seeded per attempt), `hash_client`,
//!   `hash_ip` (FNV-1a of the name, mod N).
//! - **`scope = "local"`**: each instance decides alone with its own state, at
//!   the arrival time, with no added latency. `share = true` divides the
//!   policy among the instances (rates exactly, counts rounded down, at least 1).
//! - **`scope = "global"`**: one store. Each operation takes a round trip
//!   `rtt` (fixed, or log-normal from a median and a p99): it reaches the
//!   store `⌊rtt/2⌋` after it was sent and its answer is back `rtt` after.
//!   The store decides in the order operations reach it.
//!   `atomic = true` is one operation per attempt (a server-side script):
//!   the decision is the store limiter's at the moment the request reaches
//!   it. `atomic = false` is read-then-write: the read reaches the store, the
//!   instance decides on the state it read, and sends the state it computed
//!   back as a second operation, sent when the read's answer arrives; the
//!   last write wins, so concurrent readers over-admit.
//! - **Faults.** An operation fails if it would reach the store during an
//!   outage `[start, end)`, if a seeded draw falls under `failure_rate`, or if
//!   its round trip exceeds `timeout` (the store still applies an operation
//!   that was only slow). The instance learns of a failure at `timeout` after
//!   sending (or after the round trip, without a timeout) and then decides by
//!   `on_store_failure`: `fail_open` admits, `fail_closed` rejects (no
//!   retry-after), `local_fallback` asks the instance's own fallback limiter.
//!   A failed write is lost.
//! - **Over-limit cache** (`cache_over_limit`, as envoyproxy/ratelimit does):
//!   after the store rejects a key, that instance rejects the key itself,
//!   without a store call, until the store's `retry_after` has passed.
//!
//! A decision taken at the store passes at the store's moment (plus a
//! shaper's delay); the client sees it `rtt` after it sent the request —
//! that is the added latency.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::clock::{Nanos, MAX_NANOS};
use crate::limiter::Algorithm;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routing {
    RoundRobin,
    Random,
    HashClient,
    HashIp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Local { share: bool },
    Global { atomic: bool },
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Latency {
    Fixed(Nanos),
    /// Log-normal round trips with this median and 99th percentile.
    LogNormal {
        median: Nanos,
        p99: Nanos,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFailure {
    FailOpen,
    FailClosed,
    LocalFallback,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Deployment {
    pub instances: u32,
    pub routing: Routing,
    pub scope: Scope,
    pub latency: Latency,
    pub timeout: Option<Nanos>,
    /// Per-operation failure probability `num / den`.
    pub failure_rate: (u64, u64),
    /// Sorted, non-overlapping `[start, end)`.
    pub outages: Vec<(Nanos, Nanos)>,
    pub on_failure: OnFailure,
    /// The per-instance limiter of `local_fallback`.
    pub fallback: Option<Algorithm>,
    pub cache_over_limit: bool,
    /// With `share`, each instance's part of the policy.
    pub shared: Option<Algorithm>,
}

impl Default for Deployment {
    fn default() -> Self {
        Deployment {
            instances: 1,
            routing: Routing::RoundRobin,
            scope: Scope::Local { share: false },
            latency: Latency::Fixed(Nanos::ZERO),
            timeout: None,
            failure_rate: (0, 1),
            outages: Vec::new(),
            on_failure: OnFailure::FailOpen,
            fallback: None,
            cache_over_limit: false,
            shared: None,
        }
    }
}

/// z of the standard normal's 99th percentile.
const Z99: f64 = 2.326_347_874_040_840_8;

impl Deployment {
    /// One instance keeping its own state: the plain limiter.
    pub fn is_plain(&self) -> bool {
        self.instances == 1 && matches!(self.scope, Scope::Local { .. })
    }

    /// What each instance of a local deployment runs.
    pub fn instance_algorithm(&self, limiter: &Algorithm) -> Algorithm {
        self.shared.unwrap_or(*limiter)
    }

    pub fn is_global(&self) -> bool {
        matches!(self.scope, Scope::Global { .. })
    }

    /// A round trip, drawn from `rng` when it is random.
    pub fn round_trip(&self, rng: &mut impl FnMut() -> ChaCha8Rng) -> Nanos {
        match self.latency {
            Latency::Fixed(d) => d,
            Latency::LogNormal { median, p99 } => {
                let mut r = rng();
                // Box–Muller with the pure-Rust libm: identical everywhere.
                let u1 = ((r.random::<u64>() >> 11) + 1) as f64 / (1u64 << 53) as f64;
                let u2 = (r.random::<u64>() >> 11) as f64 / (1u64 << 53) as f64;
                let z =
                    libm::sqrt(-2.0 * libm::log(u1)) * libm::cos(2.0 * std::f64::consts::PI * u2);
                let m = median.0 as f64;
                let sigma = libm::log(p99.0 as f64 / m) / Z99;
                let x = m * libm::exp(sigma * z);
                Nanos(libm::round(x).clamp(0.0, MAX_NANOS as f64) as u64)
            }
        }
    }

    /// Whether an operation reaching the store at `t` finds it down.
    pub fn in_outage(&self, t: Nanos) -> bool {
        self.outages.iter().any(|&(s, e)| s <= t && t < e)
    }

    /// Whether a seeded draw fails this operation.
    pub fn random_failure(&self, rng: &mut impl FnMut() -> ChaCha8Rng) -> bool {
        let (num, den) = self.failure_rate;
        num > 0 && rng().random_range(0..den) < num
    }
}

/// FNV-1a, the stable hash of a name that hash routing reads (it lives
/// with the names).
pub use crate::population::fnv1a;
pub(crate) use crate::population::fnv1a_name;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::retry::event_rng;

    #[test]
    fn log_normal_round_trips_have_the_stated_median_and_p99() {
        let d = Deployment {
            latency: Latency::LogNormal {
                median: Nanos(1_000_000),
                p99: Nanos(5_000_000),
            },
            ..Deployment::default()
        };
        let mut rtts: Vec<u64> = (0..20_000u64)
            .map(|i| d.round_trip(&mut || event_rng(1, 0, 0, i, 1, *b"rtt0")).0)
            .collect();
        rtts.sort_unstable();
        let median = rtts[10_000] as f64;
        let p99 = rtts[19_800] as f64;
        assert!((median / 1e6 - 1.0).abs() < 0.05, "median {median}");
        assert!((p99 / 5e6 - 1.0).abs() < 0.1, "p99 {p99}");
    }

    #[test]
    fn outages_are_half_open() {
        let d = Deployment {
            outages: vec![(Nanos(10), Nanos(20))],
            ..Deployment::default()
        };
        assert!(!d.in_outage(Nanos(9)));
        assert!(d.in_outage(Nanos(10)));
        assert!(d.in_outage(Nanos(19)));
        assert!(!d.in_outage(Nanos(20)));
    }

    #[test]
    fn fnv1a_is_the_reference_hash() {
        assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
    }
}
