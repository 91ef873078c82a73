//! `summary.json` and `summary.csv`: the one model of a run's summary,
//! written by the report's exporters and read back by the charts,
//! `summary.md` and `ratesim plot`.
//!
//! How every number is written is one type, so `summary.csv`,
//! `summary.json` and the terminal agree on every digit. Counts are
//! integers. Everything else is a [`Decimal`]: an exact fraction rounded
//! half-up to a fixed number of places, trailing zeros trimmed
//! (milliseconds to 6 places — exact to the nanosecond —, shares and
//! ratios to 4, bytes and rates to 2). `summary.csv` writes the decimal as
//! printed; `summary.json` writes it as the JSON number that text parses
//! to ([`json_numbers`]), and `null` where the CSV cell is empty.
//!
//! Adding a metric means adding one field here (and its value where
//! the report fills it in): its name is the CSV column and the
//! JSON key, its place is the column's, and its type says how it is
//! written ([`Decimal`] for anything not a count). The first columns are
//! docs/semantics.md §3's, in its order. A field written by runs since a given
//! release has `#[serde(default)]` (or is an `Option`), so a summary
//! written before it still loads.

use serde::de::{self, Deserializer, Visitor};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use ratesim_core::clock::{decimal_places, Nanos, NANOS_PER_SEC};

/// `summary.json`: the scenario as validated, the seed, the version and
/// every metric of every limiter — what `ratesim run --format json`
/// prints too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The version that wrote it (absent in the oldest files).
    #[serde(default)]
    pub ratesim_version: String,
    pub scenario: ScenarioEcho,
    #[serde(default)]
    pub seed: u64,
    /// `[defaults] limit` and `window`.
    pub limit: u64,
    pub window_ns: u64,
    pub duration_ns: u64,
    /// The time series' bucket width.
    pub resolution_ns: u64,
    pub limiters: Vec<LimiterJson>,
}

impl Summary {
    /// The JSON `summary.json` holds: every [`Decimal`] as the number it
    /// prints (see [`json_numbers`]).
    pub fn to_json(&self) -> Value {
        let mut v = serde_json::to_value(self).expect("a summary serializes");
        json_numbers(&mut v);
        v
    }
}

/// The scenario as the run validated it (the input layer's echo): what
/// the readers of a run directory use of it is typed, the rest kept as
/// written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioEcho {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub limiters: Vec<LimiterEcho>,
    /// Every `[[traffic]]` source; the access logs are the ones with a
    /// `format` ([`AccessLogSource`](crate::AccessLogSource)).
    #[serde(default)]
    pub traffic: Vec<Value>,
    /// Everything else the echo holds (seed, duration, defaults, output…).
    #[serde(flatten)]
    pub rest: serde_json::Map<String, Value>,
}

impl ScenarioEcho {
    /// The access-log sources, in order.
    pub fn access_logs(&self) -> Vec<crate::AccessLogSource> {
        self.traffic
            .iter()
            .filter(|t| t.get("format").is_some())
            .filter_map(|t| serde_json::from_value(t.clone()).ok())
            .collect()
    }
}

/// A limiter as the scenario echo describes it: its name and deployment
/// typed (the charts draw its store's outages), the rest as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimiterEcho {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment: Option<DeploymentEcho>,
    #[serde(flatten)]
    pub rest: serde_json::Map<String, Value>,
}

/// A deployment as echoed: its store's outages typed, the rest as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeploymentEcho {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outages: Option<Vec<OutageEcho>>,
    #[serde(flatten)]
    pub rest: serde_json::Map<String, Value>,
}

/// One store outage, its bounds as durations (`"2s"`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutageEcho {
    pub start: String,
    pub end: String,
}

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
    /// For a chain's member: the chain (docs/semantics.md §13); empty
    /// otherwise.
    #[serde(default)]
    pub chain: String,
    /// For a chain's member: attempts it was asked about and would have
    /// passed, which the chain rejected (another member rejected them).
    /// `attempts = admitted + delayed + rejected + overruled`.
    #[serde(default)]
    pub overruled: u64,
    /// Of the clients with a request, the share with at least one rejected
    /// attempt (4 decimals; docs/semantics.md §3): how many people the limit ever
    /// turned away.
    #[serde(default)]
    pub clients_limited_share: Option<Decimal>,
    /// With a `[backend]` (docs/semantics.md §10; empty otherwise): the
    /// share of the workers' time spent serving within the run (4
    /// decimals)…
    #[serde(default)]
    pub utilisation: Option<Decimal>,
    /// …the latency of the requests served, from arrival at the gateway to
    /// response (limiter delay + queue wait + service)…
    #[serde(default)]
    pub latency_p50_ms: Option<Decimal>,
    #[serde(default)]
    pub latency_p99_ms: Option<Decimal>,
    #[serde(default)]
    pub latency_p999_ms: Option<Decimal>,
    /// …their wait in the backend's queue…
    #[serde(default)]
    pub queue_wait_p99_ms: Option<Decimal>,
    /// …the most requests in the backend at once (waiting or served)…
    #[serde(default)]
    pub in_flight_peak: Option<u64>,
    /// …passes the full waiting room turned away…
    #[serde(default)]
    pub backend_dropped: Option<u64>,
    /// …responses their client no longer waited for…
    #[serde(default)]
    pub timeouts: Option<u64>,
    /// …responses within the run that their client still waited for, per
    /// second…
    #[serde(default)]
    pub goodput_per_s: Option<Decimal>,
    /// …and the service time (s) spent on requests whose client had given
    /// up (6 decimals).
    #[serde(default)]
    pub wasted_work_s: Option<Decimal>,
}

/// One row of `sources.csv` (docs/semantics.md §3): what one limiter did
/// to one source's requests. Its fields from `clients` on are also
/// `sweep.csv`'s `COLUMN[SOURCE]` columns.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SourceRow {
    pub limiter: String,
    pub source: String,
    /// Distinct clients of the source with an attempt at this limiter.
    pub clients: u64,
    pub attempts: u64,
    pub logical_requests: u64,
    pub admitted: u64,
    pub delayed: u64,
    pub rejected: u64,
    /// `admitted + delayed`.
    pub passed: u64,
    /// Passed cost per second of the run.
    pub passed_per_s: Option<Decimal>,
    /// Clients with at least one rejected attempt, and their share of
    /// `clients`.
    pub clients_limited: u64,
    pub clients_limited_share: Option<Decimal>,
    /// `rejected / attempts`.
    pub rejected_share: Option<Decimal>,
}

impl SourceRow {
    /// The columns `sweep.csv` repeats per source, in order.
    pub const SWEPT: &'static [&'static str] = &[
        "clients",
        "attempts",
        "logical_requests",
        "admitted",
        "delayed",
        "rejected",
        "passed",
        "passed_per_s",
        "clients_limited",
        "clients_limited_share",
        "rejected_share",
    ];

    /// The cells of [`Self::SWEPT`], as `sources.csv` writes them.
    pub fn swept(&self) -> Vec<String> {
        let d = |v: &Option<Decimal>| v.as_ref().map_or(String::new(), |d| d.text().to_string());
        vec![
            self.clients.to_string(),
            self.attempts.to_string(),
            self.logical_requests.to_string(),
            self.admitted.to_string(),
            self.delayed.to_string(),
            self.rejected.to_string(),
            self.passed.to_string(),
            d(&self.passed_per_s),
            self.clients_limited.to_string(),
            d(&self.clients_limited_share),
            d(&self.rejected_share),
        ]
    }
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

/// A decimal number as printed: `0.5`, `1201.078272`, `1.0000`.
#[derive(Debug, Clone, PartialEq)]
pub struct Decimal(String);

/// The tag a [`Decimal`] carries through serde's data model, so the JSON
/// writer can tell it from a string. CSV writes the text inside it.
const TAG: &str = "$ratesim::decimal";

impl Decimal {
    /// `num / den` rounded half-up to at most `places` decimals.
    pub fn ratio(num: u128, den: u128, places: u32) -> Decimal {
        Decimal(decimal_places(num, den, places))
    }

    /// Nanoseconds as milliseconds, exact to the nanosecond (`100`,
    /// `0.000001`).
    pub fn ms(t: Nanos) -> Decimal {
        Decimal::ratio(t.0 as u128, 1_000_000, 6)
    }

    /// `part / whole`, 4 decimals.
    pub fn share((part, whole): (u64, u64)) -> Decimal {
        Decimal::ratio(part as u128, whole as u128, 4)
    }

    /// A mean kept as an exact fraction (`0/0` is 0), 2 decimals.
    pub fn mean((num, den): (u128, u128)) -> Decimal {
        Decimal::ratio(num, den.max(1), 2)
    }

    /// `count` per second of `duration`, 2 decimals; `None` for an empty
    /// duration.
    pub fn per_second(count: u64, duration: Nanos) -> Option<Decimal> {
        (duration.0 > 0)
            .then(|| Decimal::ratio(count as u128 * NANOS_PER_SEC as u128, duration.0 as u128, 2))
    }

    /// A float to exactly 4 places (`1.0000`), for what is not an exact
    /// fraction (Jain's fairness index).
    pub fn fixed4(x: f64) -> Decimal {
        Decimal(format!("{x:.4}"))
    }

    pub fn text(&self) -> &str {
        &self.0
    }

    /// The number, for charts and checks.
    pub fn value(&self) -> f64 {
        self.0.parse().unwrap_or(f64::NAN)
    }
}

impl Default for Decimal {
    fn default() -> Self {
        Decimal("0".to_string())
    }
}

impl Serialize for Decimal {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_variant("Decimal", 0, TAG, &self.0)
    }
}

/// Read back from `summary.json`, where it is a number.
impl<'de> Deserialize<'de> for Decimal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Decimal, D::Error> {
        struct Number;
        impl Visitor<'_> for Number {
            type Value = Decimal;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Decimal, E> {
                Ok(Decimal(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Decimal, E> {
                Ok(Decimal(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Decimal, E> {
                Ok(Decimal(v.to_string()))
            }
        }
        d.deserialize_any(Number)
    }
}

/// Turns every [`Decimal`] in `v` (as `serde_json::to_value` leaves it)
/// into the JSON number its text parses to.
pub fn json_numbers(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if map.len() == 1 {
                if let Some(Value::String(text)) = map.get(TAG) {
                    *v = serde_json::from_str(text).unwrap_or(Value::String(text.clone()));
                    return;
                }
            }
            map.values_mut().for_each(json_numbers);
        }
        Value::Array(items) => items.iter_mut().for_each(json_numbers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decimal_is_text_in_csv_and_the_number_it_parses_to_in_json() {
        let mut v = serde_json::to_value([
            Decimal::fixed4(1.0),
            Decimal::ms(Nanos(1)),
            Decimal::share((1, 3)),
        ])
        .unwrap();
        json_numbers(&mut v);
        assert_eq!(v.to_string(), "[1.0,1e-6,0.3333]");
        let mut w = csv::Writer::from_writer(vec![]);
        w.serialize((Decimal::fixed4(1.0), Decimal::ms(Nanos(1))))
            .unwrap();
        assert_eq!(w.into_inner().unwrap(), b"1.0000,0.000001\n");
    }
}
