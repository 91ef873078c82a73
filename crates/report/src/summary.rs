//! One limiter's summary: the one model of a `summary.csv` row and of a
//! `summary.json` limiter, written by [`super::csv`] and [`super::json`]
//! and read back by the charts and `ratesim plot`.
//!
//! Adding a metric means adding one field here (and its value where
//! [`super::Report::new`] fills it in): its name is the CSV column and the
//! JSON key, its place is the column's, and its type says how it is
//! written ([`Decimal`] for anything not a count). The first columns are
//! docs/semantics.md §3's, in its order. A field written by runs since a given
//! release has `#[serde(default)]` (or is an `Option`), so a summary
//! written before it still loads.

use serde::{Deserialize, Serialize};

use super::format::Decimal;

/// One row of `summary.csv`; with [`LimiterJson`]'s extras, one limiter
/// of `summary.json`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LimiterSummary {
    pub limiter: String,
    pub algorithm: String,
    pub attempts: u64,
    pub admitted: u64,
    pub delayed: u64,
    pub rejected: u64,
    pub peak_in_window: u64,
    /// The policy's limit per window, which `peak_in_window` is held against.
    #[serde(default)]
    pub limit: u64,
    #[serde(default)]
    pub delay_p50_ms: Option<Decimal>,
    #[serde(default)]
    pub delay_p99_ms: Option<Decimal>,
    /// Mean state bytes per key, over every key seen and the whole run; a
    /// key counts only while its state differs from a fresh key's.
    #[serde(default)]
    pub state_bytes_per_key_mean: Decimal,
    /// The most bytes one key held.
    #[serde(default)]
    pub state_bytes_per_key_peak: u64,
    #[serde(default)]
    pub keys: u64,
    #[serde(default)]
    pub key_by: String,
    #[serde(default)]
    pub passed: u64,
    #[serde(default)]
    pub delay_max_ms: Option<Decimal>,
    /// First attempts: requests as the clients meant them.
    #[serde(default)]
    pub logical_requests: Option<u64>,
    /// Attempts per logical request.
    #[serde(default)]
    pub retry_amplification: Option<Decimal>,
    /// Requests that exhausted their retries.
    #[serde(default)]
    pub gave_up: Option<u64>,
    #[serde(default)]
    pub pending_at_end: u64,
    #[serde(default)]
    pub time_to_success_p50_ms: Option<Decimal>,
    #[serde(default)]
    pub time_to_success_p99_ms: Option<Decimal>,
    /// The lowest share of a client's requests that passed.
    #[serde(default)]
    pub client_pass_ratio_min: Option<Decimal>,
    /// Jain's index of the clients' pass ratios (1 = all the same).
    #[serde(default)]
    pub fairness_jain: Option<Decimal>,
    /// Rejections that would have passed had the client had a key of its
    /// own, of all rejections.
    #[serde(default)]
    pub collateral_share: Option<Decimal>,
    /// Gateway instances (1 in summaries that predate deployments).
    #[serde(default)]
    pub instances: Option<u64>,
    /// `local` or `global` (empty in summaries that predate deployments).
    #[serde(default)]
    pub scope: String,
    /// What a decision waited on the store before the client heard it.
    #[serde(default)]
    pub added_latency_p50_ms: Option<Decimal>,
    #[serde(default)]
    pub added_latency_p99_ms: Option<Decimal>,
    #[serde(default)]
    pub store_ops: u64,
    #[serde(default)]
    pub store_ops_per_s: Option<Decimal>,
    /// Decisions taken because the store failed, all policies together…
    #[serde(default)]
    pub fault_decisions: u64,
    /// …passed unprotected (`fail_open`), rejected (`fail_closed`), or
    /// decided by the fallback.
    #[serde(default)]
    pub unprotected_passes: u64,
    #[serde(default)]
    pub fault_rejections: u64,
    #[serde(default)]
    pub fallback_decisions: u64,
    #[serde(default)]
    pub cache_rejections: u64,
    /// Passed cost beyond the limit per key per aligned window, summed over
    /// keys and windows, and the worst single key-window.
    #[serde(default)]
    pub overshoot: Option<u64>,
    #[serde(default)]
    pub overshoot_max: Option<u64>,
    #[serde(default)]
    pub collateral_rejections: Option<u64>,
    /// [`Self::collateral_share`] weighted by cost.
    #[serde(default)]
    pub collateral_cost_share: Option<Decimal>,
    /// Mean and peak bytes of all keys together.
    #[serde(default)]
    pub state_bytes_total_mean: Decimal,
    #[serde(default)]
    pub state_bytes_total_peak: u64,
    /// Mean bytes per key and peak total under the measured Redis figures.
    #[serde(default)]
    pub state_bytes_redis_per_key_mean: Decimal,
    #[serde(default)]
    pub state_bytes_redis_total_peak: u64,
    /// Of the attempts of clients whose own offered rate over the run was
    /// within the policy, the share rejected (6 decimals): what
    /// well-behaved clients pay for a limit.
    #[serde(default)]
    pub within_limit_rejected_share: Option<Decimal>,
}

/// One limiter of `summary.json`: the summary row and what does not fit a
/// CSV cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimiterJson {
    #[serde(flatten)]
    pub summary: LimiterSummary,
    /// The resolved parameters.
    #[serde(default)]
    pub params: serde_json::Value,
    /// End of the worst window, and the key it belongs to.
    #[serde(default)]
    pub peak_window_end_ns: Option<u64>,
    #[serde(default)]
    pub peak_key: Option<String>,
    /// The spread over clients of the share of their requests that passed.
    #[serde(default)]
    pub client_pass_ratio_spread: Option<PassRatioSpread>,
}

/// Five points of a distribution over clients, each in `[0, 1]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassRatioSpread {
    pub max: Decimal,
    pub min: Decimal,
    pub p10: Decimal,
    pub p50: Decimal,
    pub p90: Decimal,
}
