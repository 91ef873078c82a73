//! Reports read results; they never re-run anything.
//!
//! [`Report`] is everything a run produced, built once from the engine's
//! per-limiter results. Each exporter takes a `&Report` and writes one
//! format: [`csv`] (`summary.csv`, `timeseries.csv`, the decision log),
//! [`json`] (`summary.json`), [`table`] (the terminal). [`markdown`]
//! (`summary.md`) and [`charts`] (the PNGs) read the written run directory
//! back, so `ratesim plot` can redraw them from it alone.

pub mod charts;
pub mod csv;
pub mod json;
pub mod markdown;
pub mod table;
pub mod top_keys;

use crate::clock::{decimal_places, Nanos};
use crate::engine::LimiterRun;
use crate::metrics::Bucket;
use crate::scenario::Scenario;

/// One limiter's results.
#[derive(Debug, Clone)]
pub struct LimiterReport {
    pub name: String,
    pub algorithm: &'static str,
    pub key_by: &'static str,
    pub params: serde_json::Value,
    pub attempts: u64,
    pub admitted: u64,
    pub delayed: u64,
    pub rejected: u64,
    pub peak_in_window: u64,
    /// End of the worst window and the key it belongs to.
    pub peak_at: Option<(Nanos, String)>,
    pub delay_p50: Option<Nanos>,
    pub delay_p99: Option<Nanos>,
    pub delay_max: Option<Nanos>,
    /// Mean state bytes per key (over every key seen and the whole run) as
    /// an exact fraction. A key counts only while its state differs from a
    /// fresh key's.
    pub state_mean: (u128, u128),
    /// The most bytes one key held.
    pub state_peak: u64,
    /// Mean and peak bytes of all keys together.
    pub state_total_mean: (u128, u128),
    pub state_total_peak: u64,
    /// Mean bytes per key and peak total under the measured Redis figures.
    pub redis_mean: (u128, u128),
    pub redis_total_peak: u64,
    pub keys: u64,
    pub series: Vec<Bucket>,
    /// Logical requests (first attempts).
    pub logical: u64,
    pub gave_up: u64,
    pub pending_at_end: u64,
    pub time_to_success_p50: Option<Nanos>,
    pub time_to_success_p99: Option<Nanos>,
    /// The lowest client pass ratio, exact: `(passed, logical)`.
    pub pass_ratio_min: Option<(u64, u64)>,
    /// Client pass ratios: min, p10, p50, p90, max, as exact fractions.
    pub pass_ratio_spread: Option<[(u64, u64); 5]>,
    /// Jain's fairness index of client pass ratios.
    pub fairness: Option<f64>,
    /// Rejected attempts that would have passed had their client had a key
    /// of its own, of all rejected: `(collateral, rejected)`.
    pub collateral: Option<(u64, u64)>,
    /// The same weighted by cost.
    pub collateral_cost: Option<(u64, u64)>,
    /// `instances` and `scope` of the deployment (1, "local" when plain).
    pub instances: u32,
    pub scope: &'static str,
    pub added_latency_p50: Option<Nanos>,
    pub added_latency_p99: Option<Nanos>,
    pub store_ops: u64,
    /// Decisions taken because the store failed: passed unprotected
    /// (fail_open), rejected (fail_closed), decided by the fallback.
    pub fault_open: u64,
    pub fault_closed: u64,
    pub fault_fallback: u64,
    pub cache_rejections: u64,
    /// Passed cost beyond the limit per key per aligned window, summed, and
    /// the worst key-window.
    pub overshoot: u64,
    pub overshoot_max: u64,
}

impl LimiterReport {
    pub fn passed(&self) -> u64 {
        self.admitted + self.delayed
    }

    /// Attempts per logical request, 4 decimals.
    pub fn amplification_text(&self) -> String {
        if self.logical == 0 {
            return String::new();
        }
        decimal_places(self.attempts as u128, self.logical as u128, 4)
    }

    pub fn pass_ratio_min_text(&self) -> String {
        self.pass_ratio_min
            .map(|(p, l)| decimal_places(p as u128, l as u128, 4))
            .unwrap_or_default()
    }

    pub fn fairness_text(&self) -> String {
        self.fairness.map(|f| format!("{f:.4}")).unwrap_or_default()
    }

    pub fn collateral_text(&self) -> String {
        share_text(self.collateral)
    }

    pub fn collateral_cost_text(&self) -> String {
        share_text(self.collateral_cost)
    }

    /// Store operations per second of simulated time, 2 decimals.
    pub fn store_ops_per_s_text(&self, duration: Nanos) -> String {
        if duration.0 == 0 {
            return String::new();
        }
        decimal_places(
            self.store_ops as u128 * crate::clock::NANOS_PER_SEC as u128,
            duration.0 as u128,
            2,
        )
    }

    pub fn fault_decisions(&self) -> u64 {
        self.fault_open + self.fault_closed + self.fault_fallback
    }

    /// Mean state bytes per key, rounded to 2 decimals.
    pub fn state_mean_text(&self) -> String {
        decimal_places(self.state_mean.0, self.state_mean.1.max(1), 2)
    }

    /// Mean state bytes of all keys together, rounded to 2 decimals.
    pub fn state_total_mean_text(&self) -> String {
        let (n, d) = self.state_total_mean;
        decimal_places(n, d.max(1), 2)
    }

    /// Mean state bytes per key under the Redis figures, 2 decimals.
    pub fn redis_mean_text(&self) -> String {
        decimal_places(self.redis_mean.0, self.redis_mean.1.max(1), 2)
    }
}

/// Everything a run produced.
#[derive(Debug, Clone)]
pub struct Report {
    pub name: String,
    pub description: String,
    pub seed: u64,
    pub version: &'static str,
    pub duration: Nanos,
    pub limit: u64,
    pub window: Nanos,
    pub resolution: Nanos,
    /// The validated scenario, echoed into `summary.json`.
    pub scenario: serde_json::Value,
    pub limiters: Vec<LimiterReport>,
}

impl Report {
    pub fn new(scenario: &Scenario, runs: Vec<LimiterRun>) -> Report {
        let limiters = scenario
            .limiters
            .iter()
            .zip(runs)
            .map(|(spec, run)| {
                let r = run.recorder;
                let key_name = |key: u32| match spec.key_by {
                    crate::scenario::KeyBy::Client => {
                        scenario.population.client_name(key).to_string()
                    }
                    crate::scenario::KeyBy::Ip => scenario.population.ip_name(key).to_string(),
                    crate::scenario::KeyBy::Global => "*".to_string(),
                };
                LimiterReport {
                    name: spec.name.clone(),
                    algorithm: spec.algorithm.name(),
                    key_by: spec.key_by.as_str(),
                    params: spec.algorithm.params(),
                    attempts: r.attempts,
                    admitted: r.admitted,
                    delayed: r.delayed,
                    rejected: r.rejected,
                    peak_in_window: r.peak_in_window,
                    peak_at: r.peak_at.map(|(t, k)| (t, key_name(k))),
                    delay_p50: r.delays.percentile(500),
                    delay_p99: r.delays.percentile(990),
                    delay_max: r.delays.max(),
                    state_mean: run.footprint.mean(),
                    state_peak: run.footprint.peak_bytes,
                    state_total_mean: run.footprint.total_mean(),
                    state_total_peak: run.footprint.peak_total,
                    redis_mean: run.footprint.redis_mean(),
                    redis_total_peak: run.footprint.redis_peak_total,
                    keys: run.footprint.keys,
                    logical: r.logical,
                    gave_up: r.gave_up,
                    pending_at_end: r.pending_at_end,
                    time_to_success_p50: r.time_to_success.percentile(500),
                    time_to_success_p99: r.time_to_success.percentile(990),
                    pass_ratio_min: r
                        .clients
                        .iter()
                        .filter(|c| c.logical > 0)
                        .map(|c| (c.passed, c.logical))
                        .min_by(|a, b| {
                            (a.0 as u128 * b.1 as u128).cmp(&(b.0 as u128 * a.1 as u128))
                        }),
                    pass_ratio_spread: r.pass_ratio_spread(),
                    fairness: r.fairness(),
                    collateral: r.collateral(),
                    collateral_cost: r.collateral_cost(),
                    instances: spec.deployment.instances,
                    scope: if spec.deployment.is_global() {
                        "global"
                    } else {
                        "local"
                    },
                    added_latency_p50: r.added_latency.percentile(500),
                    added_latency_p99: r.added_latency.percentile(990),
                    store_ops: r.store_ops,
                    fault_open: r.fault_open,
                    fault_closed: r.fault_closed,
                    fault_fallback: r.fault_fallback,
                    cache_rejections: r.cache_rejections,
                    overshoot: r.overshoot,
                    overshoot_max: r.overshoot_max,
                    series: r.series,
                }
            })
            .collect();
        Report {
            name: scenario.name.clone(),
            description: scenario.description.clone(),
            seed: scenario.seed,
            version: env!("CARGO_PKG_VERSION"),
            duration: scenario.duration,
            limit: scenario.defaults.limit,
            window: scenario.defaults.window,
            resolution: scenario.output.resolution,
            scenario: scenario.echo(),
            limiters,
        }
    }
}

/// Nanoseconds as milliseconds, exact to the nanosecond (`100`, `0.000001`).
/// `part / whole` to 4 decimals; empty when there is no whole.
fn share_text(share: Option<(u64, u64)>) -> String {
    share
        .map(|(part, whole)| decimal_places(part as u128, whole as u128, 4))
        .unwrap_or_default()
}

pub fn ms(t: Nanos) -> String {
    decimal_places(t.0 as u128, 1_000_000, 6)
}

/// An optional duration in ms, empty when absent.
pub fn opt_ms(t: Option<Nanos>) -> String {
    t.map(ms).unwrap_or_default()
}
