//! Reports read results; they never re-run anything.
//!
//! [`Report`] is everything a run produced, built once from the engine's
//! per-limiter results. Each exporter takes a `&Report` and writes one
//! format: [`csv`] (`summary.csv`, `timeseries.csv`, the decision log),
//! [`json`] (`summary.json`), [`table`] (the terminal). [`markdown`]
//! (`summary.md`), [`html`] (`report.html`) and [`charts`] (the PNGs)
//! read the written run directory back, so `ratesim plot` can redraw them
//! from it alone; [`render`] draws them into a run directory.

pub mod agreement;
pub mod charts;
pub mod csv;
pub mod format;
pub mod html;
pub mod json;
pub mod markdown;
pub mod notes;
pub mod render;
pub mod table;
pub mod top_keys;

use ratesim_core::{clock, engine, error, limiter, metrics, population, scenario};
use ratesim_rundir as rundir;

use crate::clock::{Nanos, NANOS_PER_SEC};
use crate::engine::LimiterRun;
use crate::metrics::SeriesBucket;
use crate::rundir::partition::Shape;
use crate::rundir::summary::{
    LimiterJson, LimiterSummary, PassRatioSpread, ScenarioEcho, SourceRow,
};
use crate::scenario::Scenario;
use format::Decimal;
use ratesim_core::backend::{BackendBucket, BackendStats};

/// One limiter's results: its summary as the files write it, and the
/// exact values the terminal rounds its own way.
#[derive(Debug, Clone)]
pub struct LimiterReport {
    /// `summary.csv`'s row and `summary.json`'s entry.
    pub json: LimiterJson,
    pub delay_p99: Option<Nanos>,
    pub time_to_success_p99: Option<Nanos>,
    pub added_latency_p99: Option<Nanos>,
    /// Jain's fairness index of client pass ratios.
    pub fairness: Option<f64>,
    /// Rejected attempts that would have passed had their client had a key
    /// of its own, of all rejected: `(collateral, rejected)`.
    pub collateral: Option<(u64, u64)>,
    pub series: Vec<SeriesBucket>,
    /// Its backend's series, with a `[backend]` (empty otherwise).
    pub backend_series: Vec<BackendBucket>,
    /// `sources.csv`'s rows: one per source it sees, in scenario order.
    pub sources: Vec<SourceRow>,
}

impl LimiterReport {
    pub fn summary(&self) -> &LimiterSummary {
        &self.json.summary
    }
}

/// What every exporter is: a report in, its bytes out to the writer it is
/// given (as hyperfine's `export/`).
pub type Export = fn(&Report, &mut dyn std::io::Write) -> anyhow::Result<()>;

/// The files a run directory gets from its report, in the order written.
pub const FILES: &[(&str, Export)] = &[
    (rundir::SUMMARY_CSV, csv::summary),
    (rundir::SOURCES_CSV, csv::sources),
    (rundir::TIMESERIES_CSV, csv::timeseries),
    (rundir::SUMMARY_JSON, json::write),
];

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
    pub scenario: ScenarioEcho,
    pub limiters: Vec<LimiterReport>,
}

impl Report {
    /// The report of `scenario`'s `runs` (one per limiter, in order), with
    /// the scenario as `summary.json` echoes it: `echo`, whose
    /// `limiters[i].params` are each limiter's resolved parameters.
    pub fn new(scenario: &Scenario, runs: Vec<LimiterRun>, echo: serde_json::Value) -> Report {
        let key_name = |i: usize, key: u32| key_name(scenario, i, key);
        Report::of_shape(&Shape::of(scenario), runs, echo, &key_name)
    }

    /// [`Report::new`] from what the reports read of the scenario
    /// (`shape`) and the name of each limiter's keys: `key_name(limiter,
    /// key id)` — what `ratesim merge` has of a scenario.
    pub fn of_shape(
        shape: &Shape,
        runs: Vec<LimiterRun>,
        echo: serde_json::Value,
        key_name: &dyn Fn(usize, u32) -> String,
    ) -> Report {
        let scenario = shape;
        let duration = Nanos(shape.duration_ns);
        let echo: ScenarioEcho =
            serde_json::from_value(echo).expect("a scenario's echo has its name and limiters");
        let limiters = scenario
            .limiters
            .iter()
            .zip(runs)
            .enumerate()
            .map(|(i, (spec, run))| {
                let r = run.recorder;
                let key_name = |key: u32| key_name(i, key);
                let ms = |t: Option<Nanos>| t.map(Decimal::ms);
                let fp = &run.footprint;
                let summary = LimiterSummary {
                    limiter: spec.name.clone(),
                    algorithm: spec.algorithm.clone(),
                    attempts: r.attempts,
                    admitted: r.admitted,
                    delayed: r.delayed,
                    rejected: r.rejected,
                    peak_in_window: r.peak_in_window,
                    limit: spec.limit,
                    delay_p50_ms: ms(r.delays.percentile(500)),
                    delay_p99_ms: ms(r.delays.percentile(990)),
                    state_bytes_per_key_mean: Decimal::mean(fp.mean()),
                    state_bytes_per_key_peak: fp.peak_bytes,
                    keys: fp.keys,
                    key_by: spec.key_by.clone(),
                    passed: r.admitted + r.delayed,
                    delay_max_ms: ms(r.delays.max()),
                    logical_requests: Some(r.logical),
                    retry_amplification: (r.logical > 0)
                        .then(|| Decimal::ratio(r.attempts as u128, r.logical as u128, 4)),
                    gave_up: Some(r.gave_up),
                    pending_at_end: r.pending_at_end,
                    time_to_success_p50_ms: ms(r.time_to_success.percentile(500)),
                    time_to_success_p99_ms: ms(r.time_to_success.percentile(990)),
                    client_pass_ratio_min: r
                        .clients()
                        .filter(|c| c.logical > 0)
                        .map(|c| (c.passed, c.logical))
                        .min_by(|a, b| {
                            (a.0 as u128 * b.1 as u128).cmp(&(b.0 as u128 * a.1 as u128))
                        })
                        .map(Decimal::share),
                    fairness_jain: r.fairness().map(Decimal::fixed4),
                    collateral_share: r.collateral().map(Decimal::share),
                    instances: Some(spec.instances),
                    scope: if spec.global { "global" } else { "local" }.to_string(),
                    added_latency_p50_ms: ms(r.added_latency.percentile(500)),
                    added_latency_p99_ms: ms(r.added_latency.percentile(990)),
                    store_ops: r.store_ops,
                    store_ops_per_s: Decimal::per_second(r.store_ops, duration),
                    fault_decisions: r.fault_open + r.fault_closed + r.fault_fallback,
                    unprotected_passes: r.fault_open,
                    fault_rejections: r.fault_closed,
                    fallback_decisions: r.fault_fallback,
                    cache_rejections: r.cache_rejections,
                    overshoot: Some(r.overshoot),
                    overshoot_max: Some(r.overshoot_max),
                    collateral_rejections: r.collateral().map(|(c, _)| c),
                    collateral_cost_share: r.collateral_cost().map(Decimal::share),
                    state_bytes_total_mean: Decimal::mean(fp.total_mean()),
                    state_bytes_total_peak: fp.peak_total,
                    state_bytes_redis_per_key_mean: Decimal::mean(fp.redis_mean()),
                    state_bytes_redis_total_peak: fp.redis_peak_total,
                    within_limit_rejected_share: r
                        .within_limit_rejected(spec.limit, duration)
                        .map(|(part, whole)| Decimal::ratio(part as u128, whole as u128, 6)),
                    chain: spec
                        .member_of
                        .map(|c| scenario.limiters[c].name.clone())
                        .unwrap_or_default(),
                    overruled: r.overruled,
                    clients_limited_share: {
                        let (limited, all) = r
                            .clients()
                            .filter(|c| c.logical > 0)
                            .fold((0u64, 0u64), |(l, a), c| {
                                (l + (c.rejected > 0) as u64, a + 1)
                            });
                        (all > 0).then(|| Decimal::share((limited, all)))
                    },
                    ..backend_columns(run.backend.as_ref(), duration)
                };
                // A member does not answer the clients (its chain does):
                // the clients' figures are the chain's row's. Neither a
                // member nor a chain has a per-client shadow to tell a
                // collateral rejection by; a chain's key (the client) is
                // no member's policy key, so its overshoot and within-limit
                // share would measure nothing.
                let summary = match (spec.member_of, spec.chain) {
                    (None, false) => summary,
                    (None, true) => LimiterSummary {
                        collateral_share: None,
                        collateral_rejections: None,
                        collateral_cost_share: None,
                        overshoot: None,
                        overshoot_max: None,
                        within_limit_rejected_share: None,
                        ..summary
                    },
                    (Some(_), _) => LimiterSummary {
                        clients_limited_share: None,
                        collateral_share: None,
                        collateral_rejections: None,
                        collateral_cost_share: None,
                        logical_requests: None,
                        retry_amplification: None,
                        gave_up: None,
                        time_to_success_p50_ms: None,
                        time_to_success_p99_ms: None,
                        client_pass_ratio_min: None,
                        fairness_jain: None,
                        within_limit_rejected_share: None,
                        ..summary
                    },
                };
                let peak_at = r.peak_at.map(|(t, k)| (t, key_name(k)));
                // The sources of the [[traffic]] it sees, in id order.
                let sources = scenario
                    .sources
                    .iter()
                    .enumerate()
                    .filter(|(_, (t, _))| spec.traffic.contains(t))
                    .map(|(s, (_, name))| {
                        let c = r.sources.get(s).cloned().unwrap_or_default();
                        let passed = c.admitted + c.delayed;
                        SourceRow {
                            limiter: spec.name.clone(),
                            source: name.to_string(),
                            clients: c.clients,
                            attempts: c.attempts,
                            logical_requests: c.logical,
                            admitted: c.admitted,
                            delayed: c.delayed,
                            rejected: c.rejected,
                            passed,
                            passed_per_s: Decimal::per_second(c.passed_cost, duration),
                            clients_limited: c.clients_limited,
                            clients_limited_share: (c.clients > 0)
                                .then(|| Decimal::share((c.clients_limited, c.clients))),
                            rejected_share: (c.attempts > 0)
                                .then(|| Decimal::share((c.rejected, c.attempts))),
                        }
                    })
                    .collect();
                LimiterReport {
                    json: LimiterJson {
                        summary,
                        params: echo.limiters[i].rest["params"].clone(),
                        peak_window_end_ns: peak_at.as_ref().map(|(t, _)| t.0),
                        peak_key: peak_at.map(|(_, k)| k),
                        client_pass_ratio_spread: r.pass_ratio_spread().map(|q| {
                            let [min, p10, p50, p90, max] =
                                q.map(|(p, n)| Decimal::share((p, n.max(1))));
                            PassRatioSpread {
                                max,
                                min,
                                p10,
                                p50,
                                p90,
                            }
                        }),
                    },
                    delay_p99: r.delays.percentile(990),
                    time_to_success_p99: r.time_to_success.percentile(990),
                    added_latency_p99: r.added_latency.percentile(990),
                    fairness: r.fairness(),
                    // See the summary's: no shadow for a chain or a member.
                    collateral: r
                        .collateral()
                        .filter(|_| !spec.chain && spec.member_of.is_none()),
                    series: r.series,
                    backend_series: run.backend.map(|b| b.series).unwrap_or_default(),
                    sources,
                }
            })
            .collect();
        Report {
            name: scenario.name.clone(),
            description: scenario.description.clone(),
            seed: scenario.seed,
            version: env!("CARGO_PKG_VERSION"),
            duration,
            limit: scenario.limit,
            window: Nanos(scenario.window_ns),
            resolution: Nanos(scenario.resolution_ns),
            scenario: echo,
            limiters,
        }
    }
}

/// The text of key `key` of limiter `i` of `scenario`: its client's name,
/// its address, or `*` for a global key.
pub fn key_name(scenario: &Scenario, i: usize, key: u32) -> String {
    match scenario.limiters[i].key_by {
        crate::scenario::KeyBy::Client => scenario.population.client_name(key).to_string(),
        crate::scenario::KeyBy::Ip => scenario.population.ip_name(key).to_string(),
        crate::scenario::KeyBy::Global => "*".to_string(),
    }
}

/// The `[backend]` columns of a limiter's row (docs/semantics.md §10);
/// every other column at its default.
fn backend_columns(b: Option<&BackendStats>, duration: Nanos) -> LimiterSummary {
    let Some(b) = b else {
        return LimiterSummary::default();
    };
    let ms = |t: Option<Nanos>| t.map(Decimal::ms);
    let capacity = b.workers as u128 * b.span as u128;
    LimiterSummary {
        utilisation: (capacity > 0).then(|| Decimal::ratio(b.busy, capacity, 4)),
        latency_p50_ms: ms(b.latency.percentile(500)),
        latency_p99_ms: ms(b.latency.percentile(990)),
        latency_p999_ms: ms(b.latency.percentile(999)),
        queue_wait_p99_ms: ms(b.wait.percentile(990)),
        in_flight_peak: Some(b.in_flight_peak),
        backend_dropped: Some(b.dropped),
        timeouts: Some(b.timeouts),
        goodput_per_s: Decimal::per_second(b.good, duration),
        wasted_work_s: Some(Decimal::ratio(b.wasted, NANOS_PER_SEC as u128, 6)),
        ..LimiterSummary::default()
    }
}
