//! What a chart is drawn from: a run directory's `summary.json` and
//! `timeseries.csv`, loaded back.
//!
//! `ratesim run` writes those two files, then renders every chart from this
//! loader, exactly as `ratesim plot RUN_DIR` does later — so the two produce
//! byte-identical PNGs, and the charts can only show what the run directory
//! holds. The reader is tolerant: keys and columns it does not know are
//! ignored (new metrics come and go), and optional metrics such as `gave_up`
//! are `None` when absent — so a summary written before the client and
//! deployment metrics existed still loads, and the charts that need them
//! simply have nothing to show.

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use crate::error::InputError;
use crate::format::Decimal;
use crate::rundir::summary::{LimiterJson, PassRatioSpread, Summary};

/// One run, as its run directory records it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunData {
    /// The scenario's name (every chart's title starts with it).
    pub name: String,
    pub description: String,
    pub seed: u64,
    /// `[defaults]`' policy: `limit` per `window_ns` (each limiter is held
    /// to its own [`LimiterData::limit`]).
    pub limit: u64,
    pub window_ns: u64,
    pub duration_ns: u64,
    /// Width of one time-series bucket.
    pub resolution_ns: u64,
    /// Whether `timeseries.csv` has the per-key columns
    /// (`worst_key_in_window`, `overshoot`); run directories written
    /// before them load with zeros there and this false.
    pub per_key_series: bool,
    /// Clients in the scenario's population (0 in summaries without it).
    pub clients: u64,
    /// The backend's slowdown windows, with a `[backend]`.
    pub slowdowns: Vec<Outage>,
    pub limiters: Vec<LimiterData>,
}

/// One limiter's metrics and time series. Its index in
/// [`RunData::limiters`] picks its colour in every chart.
#[derive(Debug, Clone, PartialEq)]
pub struct LimiterData {
    pub name: String,
    pub algorithm: String,
    pub key_by: String,
    pub attempts: u64,
    pub admitted: u64,
    pub delayed: u64,
    pub rejected: u64,
    /// A chain member's attempts that the chain overruled (see
    /// `LimiterSummary::overruled`).
    pub overruled: u64,
    /// The chain a member belongs to; empty otherwise.
    pub chain: String,
    /// Requests that exhausted their retries (only when clients retry).
    pub gave_up: Option<u64>,
    pub peak_in_window: u64,
    /// The limit per `window_ns` that `peak_in_window` is held against: the
    /// limiter's own policy (docs/semantics.md §3); [`RunData::limit`] in a
    /// summary written before limiters had their own.
    pub limit: u64,
    pub peak_window_end_ns: Option<u64>,
    pub peak_key: Option<String>,
    pub delay_p50_ms: Option<f64>,
    pub delay_p99_ms: Option<f64>,
    pub delay_max_ms: Option<f64>,
    pub state_mean: f64,
    /// The mean bytes of all keys together (`state_bytes_total_mean`), as
    /// the summary writes it.
    pub state_total_mean: String,
    pub state_peak: u64,
    pub keys: u64,
    /// What clients experienced (absent from older summaries).
    pub clients: ClientMetrics,
    /// How the limiter was deployed and what that cost.
    pub deployment: DeploymentMetrics,
    /// One entry per `resolution_ns` bucket from t = 0.
    pub series: Vec<SeriesRow>,
}

/// A limiter's client metrics, from `summary.json`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientMetrics {
    /// First attempts: requests as the clients meant them.
    pub logical_requests: Option<u64>,
    /// Attempts per logical request, as `summary.json` printed it.
    pub retry_amplification: Option<f64>,
    /// The spread over clients of the share of their requests that passed.
    pub pass_ratio_spread: Option<Spread>,
    /// Jain's index of the clients' pass ratios (1 = all the same).
    pub fairness_jain: Option<f64>,
}

/// Five points of a distribution over clients, each in `[0, 1]`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spread {
    pub min: f64,
    pub p10: f64,
    pub p50: f64,
    pub p90: f64,
    pub max: f64,
}

impl From<PassRatioSpread> for Spread {
    fn from(s: PassRatioSpread) -> Spread {
        Spread {
            min: s.min.value(),
            p10: s.p10.value(),
            p50: s.p50.value(),
            p90: s.p90.value(),
            max: s.max.value(),
        }
    }
}

/// A limiter's deployment and its costs, from `summary.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct DeploymentMetrics {
    /// Gateway instances (1 in summaries that predate deployments).
    pub instances: u64,
    /// `local` or `global` (empty in summaries that predate deployments).
    pub scope: String,
    /// Passed cost beyond the limit per key per aligned window, summed over
    /// keys and windows, and the worst single key-window.
    pub overshoot: Option<u64>,
    pub overshoot_max: Option<u64>,
    /// What a decision waited on the store before the client heard it.
    pub added_latency_p50_ms: Option<f64>,
    pub added_latency_p99_ms: Option<f64>,
    pub store_ops_per_s: Option<f64>,
    /// Decisions taken because the store failed, by `on_store_failure`.
    pub unprotected_passes: u64,
    pub fault_rejections: u64,
    pub fallback_decisions: u64,
    /// Store outages, from the scenario echo
    /// (`scenario.limiters[i].deployment.outages`), in time order.
    pub outages: Vec<Outage>,
}

impl Default for DeploymentMetrics {
    fn default() -> Self {
        DeploymentMetrics {
            instances: 1,
            scope: String::new(),
            overshoot: None,
            overshoot_max: None,
            added_latency_p50_ms: None,
            added_latency_p99_ms: None,
            store_ops_per_s: None,
            unprotected_passes: 0,
            fault_rejections: 0,
            fallback_decisions: 0,
            outages: Vec::new(),
        }
    }
}

impl DeploymentMetrics {
    /// On several instances or behind a shared store: a deployment worth
    /// charting, as opposed to one process keeping its own state.
    pub fn is_deployed(&self) -> bool {
        self.instances > 1 || self.scope == "global"
    }
}

/// A store outage `[start, end)`, in ns from the start of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outage {
    pub start_ns: u64,
    pub end_ns: u64,
}

impl LimiterData {
    pub fn passed(&self) -> u64 {
        self.admitted + self.delayed
    }
}

impl RunData {
    /// Whether every limiter is held to one limit, and which: the charts
    /// then draw one limit line, else each limiter's own.
    pub fn shared_limit(&self) -> Option<u64> {
        let first = self.limiters.first().map_or(self.limit, |l| l.limit);
        self.limiters
            .iter()
            .all(|l| l.limit == first)
            .then_some(first)
    }

    /// The policy for a heading: `limit 10 per 1s`, or `limits 5–20 per
    /// 1s (each limiter's own)`.
    pub fn policy(&self) -> String {
        let limits: Vec<u64> = self.limiters.iter().map(|l| l.limit).collect();
        crate::format::policy(
            &limits,
            self.limit,
            &crate::format::duration(self.window_ns),
        )
    }
}

/// One row of `timeseries.csv`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeriesRow {
    pub start_ns: u64,
    pub attempts: u64,
    pub admitted: u64,
    pub delayed: u64,
    pub rejected: u64,
    /// Requests that passed in this bucket (a shaper's at their release).
    pub passed: u64,
    /// The most one key had passed within the policy window before any
    /// pass in this bucket (0 when nothing passed, or in an older file).
    pub worst_key_in_window: u64,
    /// Cost passed beyond the limit per key per aligned window, at the
    /// passes in this bucket, all keys together (0 in an older file).
    pub overshoot: u64,
    /// With a `[backend]`: the mean and the most latency (ns) of the
    /// requests that entered it in this bucket and were served…
    pub latency_mean_ns: Option<u64>,
    pub latency_max_ns: Option<u64>,
    /// …the most requests inside it at once…
    pub in_flight_max: Option<u64>,
    /// …an adaptive limiter's limit…
    pub concurrency_limit: Option<u64>,
    /// …and how many requests entering in the bucket it served.
    pub backend_served: Option<u64>,
}

/// The `timeseries.csv` columns the charts read (others are ignored)…
const SERIES_COLUMNS: [&str; 7] = [
    "limiter",
    "bucket_start_ns",
    "attempts",
    "admitted",
    "delayed",
    "rejected",
    "passed",
];

/// The longest a run's durations (and a series' time span) can be.
const MAX_NS: u64 = crate::clock::MAX_NANOS;
/// The most buckets a limiter's series can hold: twice the most a run may
/// plan (see [`crate::scenario::MAX_BUCKETS`]).
pub(crate) const MAX_SERIES: u64 = 2 * (crate::scenario::MAX_BUCKETS + 1);
/// The largest delay or latency a run can report: `u64::MAX` ns, in ms.
const MAX_MS: f64 = 2e13;
/// The largest other number (a mean, a ratio, a rate) a run can report.
const MAX_NUMBER: f64 = 1e20;
/// The most store outages a limiter's echo may list.
pub(crate) const MAX_OUTAGES: usize = 10_000;

/// `summary.json`'s times, checked before anything is computed from them.
fn check_times(f: &Summary) -> Result<(), InputError> {
    for (field, v) in [
        ("window_ns", f.window_ns),
        ("duration_ns", f.duration_ns),
        ("resolution_ns", f.resolution_ns),
    ] {
        if v > MAX_NS {
            return Err(InputError::new(format!(
                "{field}: {v} — longer than a run can be (at most {MAX_NS} ns)"
            )));
        }
    }
    let planned = f.duration_ns / f.resolution_ns + 1;
    if planned > crate::scenario::MAX_BUCKETS + 1 {
        return Err(InputError::new(format!(
            "resolution_ns: {} — gives {planned} buckets over duration_ns {}; a run writes at most {}",
            f.resolution_ns,
            f.duration_ns,
            crate::scenario::MAX_BUCKETS
        )));
    }
    if f.limit == 0 {
        return Err(InputError::new("limit: 0 — the policy's limit is positive"));
    }
    Ok(())
}

/// …and those they read when present (0 in files from before them).
const OPTIONAL_SERIES_COLUMNS: [&str; 2] = ["worst_key_in_window", "overshoot"];

/// …and a backend's, empty without one (and absent from older files).
const BACKEND_SERIES_COLUMNS: [&str; 5] = [
    "latency_mean_ms",
    "latency_max_ms",
    "in_flight_max",
    "concurrency_limit",
    "backend_served",
];

impl RunData {
    /// Loads `dir/summary.json` and `dir/timeseries.csv`. A directory that
    /// is not a run directory, or files that do not parse, are input errors
    /// naming the file.
    pub fn load(dir: &Path) -> Result<RunData, InputError> {
        let mut data = RunData::load_summary(dir)?;
        let series_path = dir.join(crate::rundir::TIMESERIES_CSV);
        let csv = fs::read(&series_path).map_err(|e| {
            InputError::new(format!(
                "{}: {e} — the charts need the run's time series",
                series_path.display()
            ))
        })?;
        data.read_series(&csv)
            .map_err(|e| e.within(series_path.display()))?;
        Ok(data)
    }

    /// [`RunData::load`] without the time series (every limiter's left
    /// empty): what `summary.md` reads, unless it captions a chart.
    pub fn load_summary(dir: &Path) -> Result<RunData, InputError> {
        let summary_path = dir.join(crate::rundir::SUMMARY_JSON);
        if !dir.is_dir() {
            return Err(InputError::new(format!(
                "{}: no such directory; give the run directory that `ratesim run` wrote (e.g. output/boundary)",
                dir.display()
            )));
        }
        let text = fs::read_to_string(&summary_path).map_err(|e| {
            InputError::new(format!(
                "{}: {e} — is this a ratesim run directory? `ratesim run` writes summary.json and timeseries.csv into it",
                summary_path.display()
            ))
        })?;
        RunData::from_summary_json(&text).map_err(|e| e.within(summary_path.display()))
    }

    /// Parses `summary.json` text (time series left empty).
    pub fn from_summary_json(text: &str) -> Result<RunData, InputError> {
        let f: Summary = serde_json::from_str(text)
            .map_err(|e| InputError::new(format!("not a ratesim summary: {e}")))?;
        if f.window_ns == 0 || f.resolution_ns == 0 {
            return Err(InputError::new(
                "window_ns and resolution_ns must be positive",
            ));
        }
        check_times(&f)?;
        let mut outages: HashMap<String, Vec<Outage>> = HashMap::new();
        for (i, l) in f.scenario.limiters.iter().enumerate() {
            let Some(d) = &l.deployment else { continue };
            let parsed = d
                .outages
                .iter()
                .flatten()
                .enumerate()
                .map(|(k, o)| {
                    let at = |field: &str, text: &str| {
                        crate::clock::parse_duration(text).map(|n| n.0).map_err(|e| {
                            InputError::new(format!(
                                "scenario.limiters[{i}].deployment.outages[{k}].{field}: {text:?} — {e}"
                            ))
                        })
                    };
                    Ok(Outage {
                        start_ns: at("start", &o.start)?,
                        end_ns: at("end", &o.end)?,
                    })
                })
                .collect::<Result<Vec<_>, InputError>>()?;
            outages.insert(l.name.clone(), parsed);
        }
        let slowdowns = f
            .scenario
            .rest
            .get("backend")
            .and_then(|b| b.get("slowdown"))
            .and_then(serde_json::Value::as_array)
            .map(|windows| {
                windows
                    .iter()
                    .take(MAX_OUTAGES)
                    .enumerate()
                    .map(|(k, w)| {
                        let at = |field: &str| {
                            let text = w
                                .get(field)
                                .and_then(serde_json::Value::as_str)
                                .unwrap_or("");
                            crate::clock::parse_duration(text)
                                .map(|n| n.0)
                                .map_err(|e| {
                                    InputError::new(format!(
                                        "scenario.backend.slowdown[{k}].{field}: {text:?} — {e}"
                                    ))
                                })
                        };
                        let start_ns = at("at")?;
                        Ok(Outage {
                            start_ns,
                            end_ns: start_ns.saturating_add(at("for")?),
                        })
                    })
                    .collect::<Result<Vec<_>, InputError>>()
            })
            .transpose()?
            .unwrap_or_default();
        let default_limit = f.limit;
        let clients = f
            .scenario
            .rest
            .get("clients")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        let data = RunData {
            clients,
            name: f.scenario.name,
            description: f.scenario.description,
            seed: f.seed,
            limit: f.limit,
            window_ns: f.window_ns,
            duration_ns: f.duration_ns,
            resolution_ns: f.resolution_ns,
            per_key_series: false,
            slowdowns,
            limiters: f
                .limiters
                .into_iter()
                .map(|l| {
                    let LimiterJson {
                        summary: s,
                        peak_window_end_ns,
                        peak_key,
                        client_pass_ratio_spread,
                        ..
                    } = l;
                    let f = |d: Option<Decimal>| d.map(|d| d.value());
                    LimiterData {
                        clients: ClientMetrics {
                            logical_requests: s.logical_requests,
                            retry_amplification: f(s.retry_amplification),
                            pass_ratio_spread: client_pass_ratio_spread.map(Spread::from),
                            fairness_jain: f(s.fairness_jain),
                        },
                        deployment: DeploymentMetrics {
                            instances: s.instances.unwrap_or(1),
                            scope: s.scope,
                            overshoot: s.overshoot,
                            overshoot_max: s.overshoot_max,
                            added_latency_p50_ms: f(s.added_latency_p50_ms),
                            added_latency_p99_ms: f(s.added_latency_p99_ms),
                            store_ops_per_s: f(s.store_ops_per_s),
                            unprotected_passes: s.unprotected_passes,
                            fault_rejections: s.fault_rejections,
                            fallback_decisions: s.fallback_decisions,
                            outages: outages.remove(&s.limiter).unwrap_or_default(),
                        },
                        name: s.limiter,
                        algorithm: s.algorithm,
                        key_by: s.key_by,
                        attempts: s.attempts,
                        admitted: s.admitted,
                        delayed: s.delayed,
                        rejected: s.rejected,
                        overruled: s.overruled,
                        chain: s.chain,
                        gave_up: s.gave_up,
                        peak_in_window: s.peak_in_window,
                        limit: match s.limit {
                            0 => default_limit,
                            own => own,
                        },
                        peak_window_end_ns,
                        peak_key,
                        delay_p50_ms: f(s.delay_p50_ms),
                        delay_p99_ms: f(s.delay_p99_ms),
                        delay_max_ms: f(s.delay_max_ms),
                        state_mean: s.state_bytes_per_key_mean.value(),
                        state_total_mean: s.state_bytes_total_mean.text().to_string(),
                        state_peak: s.state_bytes_per_key_peak,
                        keys: s.keys,
                        series: Vec::new(),
                    }
                })
                .collect(),
        };
        data.check_metrics()?;
        Ok(data)
    }

    /// Every metric a chart draws, checked like any input: counts that add
    /// up, fractions within 0…1, other numbers finite, non-negative and
    /// within what a run can produce. An error names the field.
    fn check_metrics(&self) -> Result<(), InputError> {
        for (i, l) in self.limiters.iter().enumerate() {
            let at = |field: &str| format!("limiters[{i}].{field}");
            let outcomes = l
                .admitted
                .checked_add(l.delayed)
                .and_then(|n| n.checked_add(l.rejected))
                .and_then(|n| n.checked_add(l.overruled));
            if outcomes != Some(l.attempts) {
                return Err(InputError::new(format!(
                    "{}: admitted {} + delayed {} + rejected {} + overruled {} is not attempts = {} — every attempt has one outcome",
                    at("attempts"),
                    l.admitted,
                    l.delayed,
                    l.rejected,
                    l.overruled,
                    l.attempts
                )));
            }
            if let Some(g) = l.gave_up.filter(|&g| g > l.rejected) {
                return Err(InputError::new(format!(
                    "{}: {g} — more than the {} rejected attempts",
                    at("gave_up"),
                    l.rejected
                )));
            }
            let c = &l.clients;
            let d = &l.deployment;
            let spread = c.pass_ratio_spread.unwrap_or_default();
            let numbers = [
                ("delay_p50_ms", l.delay_p50_ms, MAX_MS),
                ("delay_p99_ms", l.delay_p99_ms, MAX_MS),
                ("delay_max_ms", l.delay_max_ms, MAX_MS),
                ("state_bytes_per_key_mean", Some(l.state_mean), MAX_NUMBER),
                ("retry_amplification", c.retry_amplification, MAX_NUMBER),
                ("fairness_jain", c.fairness_jain, 1.0),
                ("client_pass_ratio_spread.min", Some(spread.min), 1.0),
                ("client_pass_ratio_spread.p10", Some(spread.p10), 1.0),
                ("client_pass_ratio_spread.p50", Some(spread.p50), 1.0),
                ("client_pass_ratio_spread.p90", Some(spread.p90), 1.0),
                ("client_pass_ratio_spread.max", Some(spread.max), 1.0),
                ("added_latency_p50_ms", d.added_latency_p50_ms, MAX_MS),
                ("added_latency_p99_ms", d.added_latency_p99_ms, MAX_MS),
                ("store_ops_per_s", d.store_ops_per_s, MAX_NUMBER),
            ];
            for (field, value, most) in numbers {
                let Some(v) = value else { continue };
                if !(0.0..=most).contains(&v) {
                    return Err(InputError::new(format!(
                        "{}: {v:?} — must be a number from 0 to {most:?}",
                        at(field)
                    )));
                }
            }
            if d.outages.len() > MAX_OUTAGES {
                return Err(InputError::new(format!(
                    "scenario.limiters: {} has {} store outages; at most {MAX_OUTAGES}",
                    l.name,
                    d.outages.len()
                )));
            }
            if let Some(o) = d.outages.iter().find(|o| o.start_ns > o.end_ns) {
                return Err(InputError::new(format!(
                    "scenario.limiters: {} has a store outage ending ({} ns) before it starts ({} ns)",
                    l.name, o.end_ns, o.start_ns
                )));
            }
        }
        Ok(())
    }

    /// The series, checked against the summary once read: each bucket's
    /// counts add up, and every limiter's buckets add up to its totals.
    fn check_series(&self) -> Result<(), InputError> {
        for l in &self.limiters {
            let mut attempts = 0u64;
            let mut passed = 0u64;
            let mut overshoot = 0u64;
            for b in &l.series {
                let sums = (|| {
                    attempts = attempts.checked_add(b.attempts)?;
                    passed = passed.checked_add(b.passed)?;
                    overshoot = overshoot.checked_add(b.overshoot)?;
                    b.admitted.checked_add(b.delayed)?.checked_add(b.rejected)
                })();
                let bad = |what: String| {
                    InputError::new(format!(
                        "limiter {:?}, bucket_start_ns {}: {what}",
                        l.name, b.start_ns
                    ))
                };
                if sums != Some(b.attempts) {
                    return Err(bad("admitted + delayed + rejected is not attempts".into()));
                }
                if b.worst_key_in_window > l.peak_in_window {
                    return Err(bad(format!(
                        "worst_key_in_window {} is above the limiter's peak_in_window {}",
                        b.worst_key_in_window, l.peak_in_window
                    )));
                }
            }
            // A chain member's overruled attempts have no bucket.
            let decided = l.attempts - l.overruled;
            if attempts != decided || passed != l.passed() {
                return Err(InputError::new(format!(
                    "limiter {:?}: the buckets add up to {attempts} attempts and {passed} passed; summary.json says {decided} (attempts − overruled) and {}",
                    l.name,
                    l.passed()
                )));
            }
            if let Some(total) = l.deployment.overshoot.filter(|&t| overshoot > t) {
                return Err(InputError::new(format!(
                    "limiter {:?}: the buckets' overshoot adds up to {overshoot}; summary.json says {total}",
                    l.name
                )));
            }
        }
        Ok(())
    }

    /// Fills every limiter's series from `timeseries.csv` bytes. Rows of a
    /// limiter the summary does not name are an error; so is a bucket that
    /// does not start at `index × resolution`.
    pub fn read_series(&mut self, csv: &[u8]) -> Result<(), InputError> {
        let mut rdr = csv::Reader::from_reader(csv);
        let headers = rdr
            .headers()
            .map_err(|e| InputError::new(format!("unreadable header: {e}")))?
            .clone();
        let mut col = [0usize; SERIES_COLUMNS.len()];
        for (c, name) in col.iter_mut().zip(SERIES_COLUMNS) {
            *c = headers.iter().position(|h| h == name).ok_or_else(|| {
                InputError::new(format!("line 1: no column {name:?} in the header"))
            })?;
        }
        let optional: Vec<Option<usize>> = OPTIONAL_SERIES_COLUMNS
            .iter()
            .map(|name| headers.iter().position(|h| h == *name))
            .collect();
        self.per_key_series = optional.iter().all(Option::is_some);
        let backend: Vec<Option<usize>> = BACKEND_SERIES_COLUMNS
            .iter()
            .map(|name| headers.iter().position(|h| h == *name))
            .collect();
        let index: HashMap<String, usize> = self
            .limiters
            .iter()
            .enumerate()
            .map(|(i, l)| (l.name.clone(), i))
            .collect();
        for l in &mut self.limiters {
            l.series.clear();
        }
        let mut record = csv::StringRecord::new();
        let mut line = 1u64;
        loop {
            match rdr.read_record(&mut record) {
                Ok(false) => break,
                Ok(true) => {}
                Err(e) => return Err(InputError::new(format!("line {}: {e}", line + 1))),
            }
            line += 1;
            let field = |k: usize| record.get(col[k]).unwrap_or("");
            let number = |k: usize| -> Result<u64, InputError> {
                field(k).parse().map_err(|_| {
                    InputError::new(format!(
                        "line {line}: {} = {:?} is not a whole number",
                        SERIES_COLUMNS[k],
                        field(k)
                    ))
                })
            };
            let extra = |k: usize| -> Result<u64, InputError> {
                let Some(c) = optional[k] else { return Ok(0) };
                let text = record.get(c).unwrap_or("");
                text.parse().map_err(|_| {
                    InputError::new(format!(
                        "line {line}: {} = {text:?} is not a whole number",
                        OPTIONAL_SERIES_COLUMNS[k]
                    ))
                })
            };
            // A backend's cell: empty is none; milliseconds (6 places) for
            // the latencies, a count for the rest.
            let cell = |k: usize| -> Result<Option<u64>, InputError> {
                let Some(c) = backend[k] else { return Ok(None) };
                let text = record.get(c).unwrap_or("");
                if text.is_empty() {
                    return Ok(None);
                }
                let value = if k < 2 {
                    text.parse::<f64>()
                        .ok()
                        .filter(|ms| ms.is_finite() && (0.0..=MAX_MS).contains(ms))
                        .map(|ms| (ms * 1e6).round() as u64)
                } else {
                    text.parse::<u64>().ok()
                };
                value.map(Some).ok_or_else(|| {
                    InputError::new(format!(
                        "line {line}: {} = {text:?} is not a number a run writes",
                        BACKEND_SERIES_COLUMNS[k]
                    ))
                })
            };
            let &i = index.get(field(0)).ok_or_else(|| {
                InputError::new(format!(
                    "line {line}: limiter {:?} is not in summary.json",
                    field(0)
                ))
            })?;
            let b = SeriesRow {
                start_ns: number(1)?,
                attempts: number(2)?,
                admitted: number(3)?,
                delayed: number(4)?,
                rejected: number(5)?,
                passed: number(6)?,
                worst_key_in_window: extra(0)?,
                overshoot: extra(1)?,
                latency_mean_ns: cell(0)?,
                latency_max_ns: cell(1)?,
                in_flight_max: cell(2)?,
                concurrency_limit: cell(3)?,
                backend_served: cell(4)?,
            };
            let series = &mut self.limiters[i].series;
            if series.len() as u64 >= MAX_SERIES {
                return Err(InputError::new(format!(
                    "line {line}: limiter {:?} has more than {MAX_SERIES} buckets, more than a run writes",
                    field(0)
                )));
            }
            let expected = series.len() as u64 * self.resolution_ns;
            if b.start_ns != expected {
                return Err(InputError::new(format!(
                    "line {line}: bucket_start_ns = {} where {expected} was expected (buckets of {} ns, in order)",
                    b.start_ns, self.resolution_ns
                )));
            }
            series.push(b);
        }
        self.check_series()
    }

    /// The end of the longest series (at least the run's duration).
    pub fn series_end_ns(&self) -> u64 {
        let buckets = self
            .limiters
            .iter()
            .map(|l| l.series.len() as u64)
            .max()
            .unwrap_or(0);
        (buckets * self.resolution_ns).max(self.duration_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUMMARY: &str = r#"{
      "ratesim_version": "0.1.0",
      "scenario": {"name": "t", "description": "d", "something_new": [1, 2]},
      "seed": 3, "limit": 10, "window_ns": 1000, "duration_ns": 2000,
      "resolution_ns": 500,
      "a_new_top_level_metric": 1.5,
      "limiters": [{
        "limiter": "fw", "algorithm": "fixed_window", "key_by": "client",
        "params": {"limit": 10}, "attempts": 30, "admitted": 20, "delayed": 0,
        "rejected": 10, "passed": 20, "peak_in_window": 20,
        "peak_window_end_ns": 1000, "peak_key": "c", "limit": 10,
        "delay_p50_ms": 0, "delay_p99_ms": 0, "delay_max_ms": null,
        "state_bytes_per_key_mean": 8, "state_bytes_per_key_peak": 8,
        "keys": 1, "retry_amplification": 1.0
      }]
    }"#;

    const SERIES: &str = "limiter,bucket_start_ns,bucket_end_ns,attempts,admitted,delayed,rejected,passed,passed_cost,new_column\n\
fw,0,500,10,10,0,0,10,10,x\n\
fw,500,1000,20,10,0,10,10,10,x\n";

    #[test]
    fn summary_json_with_unknown_keys_loads() {
        let mut d = RunData::from_summary_json(SUMMARY).unwrap();
        d.read_series(SERIES.as_bytes()).unwrap();
        let l = &d.limiters[0];
        assert_eq!((d.name.as_str(), d.limit, d.window_ns), ("t", 10, 1000));
        assert_eq!(l.gave_up, None);
        assert_eq!(l.delay_max_ms, None);
        assert_eq!(l.peak_window_end_ns, Some(1000));
        assert_eq!(l.series.len(), 2);
        assert_eq!(l.series[1].rejected, 10);
        assert_eq!(d.series_end_ns(), 2000);
    }

    #[test]
    fn the_per_key_columns_are_read_when_present_and_zero_in_older_files() {
        let mut d = RunData::from_summary_json(SUMMARY).unwrap();
        d.read_series(SERIES.as_bytes()).unwrap();
        assert!(!d.per_key_series, "SERIES predates the per-key columns");
        assert_eq!(d.limiters[0].series[1].worst_key_in_window, 0);
        let csv = "limiter,bucket_start_ns,attempts,admitted,delayed,rejected,passed,worst_key_in_window,overshoot\n\
fw,0,10,10,0,0,10,10,0\n\
fw,500,20,10,0,10,10,20,10\n";
        d.read_series(csv.as_bytes()).unwrap();
        assert!(d.per_key_series);
        let b = d.limiters[0].series[1];
        assert_eq!((b.worst_key_in_window, b.overshoot), (20, 10));
    }

    #[test]
    fn gave_up_is_read_when_present() {
        let text = SUMMARY.replace("\"keys\": 1,", "\"keys\": 1, \"gave_up\": 4,");
        let d = RunData::from_summary_json(&text).unwrap();
        assert_eq!(d.limiters[0].gave_up, Some(4));
    }

    #[test]
    fn a_series_row_of_an_unknown_limiter_names_its_line() {
        let mut d = RunData::from_summary_json(SUMMARY).unwrap();
        let csv = format!("{SERIES}other,0,500,1,1,0,0,1,1,x\n");
        let e = d.read_series(csv.as_bytes()).unwrap_err();
        assert!(e.message().contains("line 4"), "{e}");
    }

    #[test]
    fn a_summary_from_before_the_client_and_deployment_metrics_loads_with_defaults() {
        let d = RunData::from_summary_json(SUMMARY).unwrap();
        let l = &d.limiters[0];
        assert_eq!(l.clients.logical_requests, None);
        assert_eq!(l.clients.retry_amplification, Some(1.0));
        assert_eq!(l.clients.pass_ratio_spread, None);
        assert_eq!(l.deployment, DeploymentMetrics::default());
        assert_eq!(l.deployment.instances, 1);
        assert!(!l.deployment.is_deployed());
    }

    /// `SUMMARY` with the client and deployment metrics, and a scenario echo
    /// whose limiter `fw` has two store outages.
    fn deployed_summary() -> String {
        SUMMARY
            .replace(
                r#""something_new": [1, 2]"#,
                r#""limiters": [
                  {"name": "other", "deployment": {"instances": 1, "scope": "local"}},
                  {"name": "fw", "deployment": {"instances": 4, "scope": "global",
                    "outages": [{"start": "4s", "end": "6s"}, {"start": "7.5s", "end": "8s"}]}}
                ]"#,
            )
            .replace(
                r#""keys": 1,"#,
                r#""keys": 1, "logical_requests": 12, "instances": 4, "scope": "global",
                "client_pass_ratio_spread": {"min": 0.1, "p10": 0.2, "p50": 0.5, "p90": 0.9, "max": 1},
                "fairness_jain": 0.75, "overshoot": 7, "overshoot_max": 3,
                "added_latency_p50_ms": 1, "added_latency_p99_ms": 4.992,
                "store_ops_per_s": 806.55, "unprotected_passes": 5, "fault_rejections": 0,
                "fallback_decisions": 2,"#,
            )
    }

    #[test]
    fn client_and_deployment_metrics_are_read() {
        let d = RunData::from_summary_json(&deployed_summary()).unwrap();
        let l = &d.limiters[0];
        assert_eq!(l.clients.logical_requests, Some(12));
        assert_eq!(l.clients.fairness_jain, Some(0.75));
        let spread = l.clients.pass_ratio_spread.unwrap();
        assert_eq!((spread.min, spread.p50, spread.max), (0.1, 0.5, 1.0));
        let dep = &l.deployment;
        assert!(dep.is_deployed());
        assert_eq!((dep.instances, dep.scope.as_str()), (4, "global"));
        assert_eq!((dep.overshoot, dep.overshoot_max), (Some(7), Some(3)));
        assert_eq!(dep.added_latency_p99_ms, Some(4.992));
        assert_eq!(dep.store_ops_per_s, Some(806.55));
        assert_eq!(
            (
                dep.unprotected_passes,
                dep.fault_rejections,
                dep.fallback_decisions
            ),
            (5, 0, 2)
        );
    }

    #[test]
    fn outages_are_parsed_into_ns_and_matched_by_limiter_name() {
        let d = RunData::from_summary_json(&deployed_summary()).unwrap();
        assert_eq!(
            d.limiters[0].deployment.outages,
            [
                Outage {
                    start_ns: 4_000_000_000,
                    end_ns: 6_000_000_000
                },
                Outage {
                    start_ns: 7_500_000_000,
                    end_ns: 8_000_000_000
                }
            ]
        );
    }

    #[test]
    fn an_outage_that_does_not_parse_names_its_place() {
        let text = deployed_summary().replace(r#""end": "8s""#, r#""end": "8 parsecs""#);
        let e = RunData::from_summary_json(&text).unwrap_err();
        assert!(
            e.message()
                .contains("scenario.limiters[1].deployment.outages[1].end: \"8 parsecs\""),
            "{e}"
        );
    }

    #[test]
    fn a_missing_column_is_named() {
        let mut d = RunData::from_summary_json(SUMMARY).unwrap();
        let e = d
            .read_series(b"limiter,bucket_start_ns,attempts\n")
            .unwrap_err();
        assert!(e.message().contains("admitted"), "{e}");
    }
}

/// Run data for the charts' unit tests: small synthetic runs, and the
/// built-in boundary scenario run once per test process.
#[cfg(test)]
pub mod tests_support {
    use std::sync::OnceLock;

    use super::*;

    /// A limiter with the given name and peak and no traffic.
    pub fn limiter(name: &str, peak: u64) -> LimiterData {
        LimiterData {
            name: name.to_string(),
            algorithm: name.to_string(),
            key_by: "client".into(),
            attempts: 0,
            admitted: 0,
            delayed: 0,
            rejected: 0,
            overruled: 0,
            chain: String::new(),
            gave_up: None,
            peak_in_window: peak,
            limit: 10,
            peak_window_end_ns: None,
            peak_key: None,
            delay_p50_ms: None,
            delay_p99_ms: None,
            delay_max_ms: None,
            state_mean: 8.0,
            state_total_mean: "8".to_string(),
            state_peak: 8,
            keys: 1,
            clients: ClientMetrics::default(),
            deployment: DeploymentMetrics::default(),
            series: Vec::new(),
        }
    }

    /// A run of limiters `(name, peak)` under a policy of `limit` per 1s.
    pub fn run_data(limiters: &[(&str, u64)], limit: u64) -> RunData {
        RunData {
            clients: 3,
            name: "synthetic".into(),
            description: String::new(),
            seed: 0,
            limit,
            window_ns: 1_000_000_000,
            duration_ns: 10_000_000_000,
            resolution_ns: 100_000_000,
            per_key_series: true,
            slowdowns: Vec::new(),
            limiters: limiters
                .iter()
                .map(|&(n, p)| LimiterData {
                    limit,
                    ..limiter(n, p)
                })
                .collect(),
        }
    }

    /// The built-in `boundary` scenario's run, as the charts see it:
    /// `fixtures/boundary`, the `summary.json` and `timeseries.csv` of
    /// `ratesim run boundary` (an integration test holds them equal).
    pub fn boundary() -> RunData {
        static DATA: OnceLock<RunData> = OnceLock::new();
        DATA.get_or_init(|| {
            let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/boundary");
            RunData::load(std::path::Path::new(dir)).expect("the fixture loads")
        })
        .clone()
    }
}
