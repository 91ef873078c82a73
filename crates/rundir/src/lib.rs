//! The run directory's contract: the name of every file ratesim writes into
//! a run or a sweep directory, in one place.
//!
//! Writers name their files from here, readers (`plot`, `sweep merge`, the
//! charts, `summary.md`, the terminal) find them here, and
//! the staging of a run directory takes this list as the files that are ratesim's own —
//! so a file added to a run directory is added once, here, and staging never
//! calls it foreign. The columns and JSON of each file are described in
//! `docs/semantics.md` §3; [`summary`] is the one model of
//! `summary.json` and `summary.csv`, and the CSV headers are below.

use serde::{Deserialize, Serialize};

pub mod invocation;
pub mod marker;
pub mod partition;
pub mod summary;

/// The file that makes a directory a ratesim run or sweep directory (its
/// version and the scenario's name).
pub const MARKER: &str = ".ratesim-run";

/// One row per limiter: the columns of `docs/semantics.md` §3.
pub const SUMMARY_CSV: &str = "summary.csv";
/// The scenario as validated and every limiter's metrics.
pub const SUMMARY_JSON: &str = "summary.json";
/// Per limiter and time bucket: attempts, outcomes, peaks.
pub const TIMESERIES_CSV: &str = "timeseries.csv";
/// One row per attempt per limiter (`--decisions`).
pub const DECISIONS_CSV: &str = "decisions.csv";
/// The keys that were limited most, per limiter.
pub const TOP_KEYS_CSV: &str = "top_keys.csv";
/// Agreement with a replayed gateway's own verdicts, per limiter.
pub const AGREEMENT_CSV: &str = "agreement.csv";
/// The first lines on which ratesim and the gateway disagree.
pub const DISAGREEMENTS_CSV: &str = "disagreements.csv";
/// The report to read: the table, the charts, the notes.
pub const SUMMARY_MD: &str = "summary.md";
/// The same report as one self-contained page to share: every table, every
/// chart inline, the scenario text and the command line.
pub const REPORT_HTML: &str = "report.html";
/// How the run was asked for: the command line and the scenario's text
/// ([`invocation::Invocation`]).
pub const RUN_JSON: &str = "run.json";

/// The charts of a run directory, drawn from its files.
pub const TIMELINE_PNG: &str = "timeline.png";
pub const PEAK_PNG: &str = "peak.png";
pub const OUTCOMES_PNG: &str = "outcomes.png";
pub const STATE_PNG: &str = "state.png";
pub const DELAY_PNG: &str = "delay.png";
pub const CLIENTS_PNG: &str = "clients.png";
pub const DEPLOYMENT_PNG: &str = "deployment.png";
pub const BACKEND_PNG: &str = "backend.png";
/// The close-up of one window boundary (`ratesim explain boundary`).
pub const BOUNDARY_ZOOM_PNG: &str = "boundary-zoom.png";

/// A sweep directory's table: one row per point and limiter.
pub const SWEEP_CSV: &str = "sweep.csv";
/// A sweep's grid, flags and shard: what `sweep merge` checks.
pub const SWEEP_JSON: &str = "sweep.json";
/// The recommended point per limiter, with its neighbours.
pub const RECOMMENDATION_MD: &str = "recommendation.md";
/// A sweep's scenario at each limiter's recommended point.
pub const RECOMMENDED_TOML: &str = "recommended.toml";

/// `ratesim diff A B --out DIR`: the two runs compared, in one page.
pub const DIFF_HTML: &str = "diff.html";

/// One row per limiter and source it sees (docs/semantics.md §3).
pub const SOURCES_CSV: &str = "sources.csv";

/// Every file a run directory may hold besides its charts.
pub const RUN_FILES: &[&str] = &[
    MARKER,
    SUMMARY_CSV,
    SOURCES_CSV,
    SUMMARY_JSON,
    TIMESERIES_CSV,
    DECISIONS_CSV,
    TOP_KEYS_CSV,
    AGREEMENT_CSV,
    DISAGREEMENTS_CSV,
    SUMMARY_MD,
    REPORT_HTML,
    RUN_JSON,
];

/// Every chart of a run directory.
pub const RUN_CHARTS: &[&str] = &[
    TIMELINE_PNG,
    PEAK_PNG,
    OUTCOMES_PNG,
    STATE_PNG,
    DELAY_PNG,
    CLIENTS_PNG,
    DEPLOYMENT_PNG,
    BACKEND_PNG,
    BOUNDARY_ZOOM_PNG,
];

/// Every file a sweep directory may hold besides its marker, `summary.md`
/// and its charts.
pub(crate) const SWEEP_FILES: &[&str] =
    &[SWEEP_CSV, SWEEP_JSON, RECOMMENDATION_MD, RECOMMENDED_TOML];

/// A sweep's line chart of one metric.
/// A per-source metric `COLUMN[SOURCE]` is `sweep-COLUMN-SOURCE.png`, and
/// any character of the source's name other than a letter, a digit, `_`
/// or `-` is `_`.
pub fn sweep_line_png(metric: &str) -> String {
    let name: String = match metric.split_once('[') {
        Some((column, rest)) => format!("{column}-{}", rest.trim_end_matches(']')),
        None => metric.to_string(),
    }
    .chars()
    .map(|c| {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            c
        } else {
            '_'
        }
    })
    .collect();
    format!("sweep-{name}.png")
}

/// A sweep's heatmap of limiter `i`.
pub fn sweep_heatmap_png(i: usize) -> String {
    format!("sweep-heatmap-{i}.png")
}

/// An access-log source as `summary.json` records it (an entry of
/// `scenario.traffic` that has a `format`): written by the source's echo,
/// read back by `summary.md`'s notes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessLogSource {
    /// The source's name (added by the scenario's echo around this one).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    pub pattern: String,
    pub path: String,
    pub format: String,
    pub rows: u64,
    /// The reorder window, as a duration.
    pub reorder: String,
    #[serde(default)]
    pub bad_lines_skipped: u64,
    #[serde(default)]
    pub lines_reordered: u64,
    #[serde(default)]
    pub lines_with_verdict: u64,
    /// The time variable of an nginx format, the time field of JSON lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// The fields of an nginx or Envoy format, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_format: Option<Vec<String>>,
    /// How whole-second stamps were placed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subsecond: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines_outside_location: Option<u64>,
    /// The field the client key is read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Lines not counted because their key is empty (nginx).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lines_empty_key: u64,
    /// An nginx or Envoy format without a request path: every line goes to
    /// every limiter reading the source, whatever its location.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_request_path: bool,
    /// Without `$limit_req_status`: the `$status` read as a rejection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected_status: Option<u16>,
    /// The lines replayed by one variable's value (`only`/`except`, as an
    /// nginx `map` picks them), and how many other lines were passed over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub select: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines_not_selected: Option<u64>,
    /// The field a split source is split by (`source`), and into how many
    /// sources (docs/semantics.md §3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sources: Option<u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// `timeseries.csv`'s header.
pub const TIMESERIES_COLUMNS: &[&str] = &[
    "limiter",
    "bucket_start_ns",
    "bucket_end_ns",
    "attempts",
    "admitted",
    "delayed",
    "rejected",
    "passed",
    "passed_cost",
    "retries",
    "gave_up",
    "worst_key_in_window",
    "overshoot",
    "backend_served",
    "backend_dropped",
    "latency_mean_ms",
    "latency_max_ms",
    "in_flight_max",
    "concurrency_limit",
];

/// `decisions.csv`'s header.
pub const DECISION_COLUMNS: &[&str] = &[
    "limiter",
    "time_ns",
    "key",
    "client",
    "attempt",
    "outcome",
    "delay_ns",
    "retry_after_ns",
    "by",
    "source",
];

/// The columns `decisions.csv` gains after [`DECISION_COLUMNS`] with
/// `--decisions=headers` (docs/semantics.md §11).
pub const HEADER_COLUMNS: &[&str] = &["retry_after_s", "ratelimit", "ratelimit_policy"];

/// `top_keys.csv`'s header.
pub const TOP_KEYS_COLUMNS: &[&str] = &[
    "limiter",
    "rank",
    "key",
    "attempts",
    "admitted",
    "delayed",
    "rejected",
    "peak_in_window",
];

/// `agreement.csv`'s header.
pub const AGREEMENT_COLUMNS: &[&str] = &["limiter", "gateway", "ratesim", "requests"];

/// `disagreements.csv`'s header.
pub const DISAGREEMENTS_COLUMNS: &[&str] = &[
    "limiter",
    "line",
    "client",
    "time_ns",
    "gateway",
    "ratesim",
    "gateway_delay_ns",
    "ratesim_delay_ns",
];

/// Whether `name` is a file ratesim writes into a run or sweep directory.
pub fn is_own_file(name: &str) -> bool {
    RUN_FILES.contains(&name)
        || [partition::PARTITION_JSON, partition::PARTITION_BIN].contains(&name)
        || partition::is_partition_journal(name)
        || RUN_CHARTS.contains(&name)
        || SWEEP_FILES.contains(&name)
        || name == DIFF_HTML
        || (name.starts_with("sweep-") && name.ends_with(".png"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_file_is_ratesims_and_nothing_else_is() {
        for f in RUN_FILES
            .iter()
            .chain(RUN_CHARTS)
            .chain(SWEEP_FILES)
            .chain([&DIFF_HTML])
        {
            assert!(is_own_file(f), "{f}");
        }
        assert!(is_own_file(&sweep_line_png("rejected_share")));
        assert!(is_own_file(&sweep_heatmap_png(3)));
        for f in [
            "partition.json",
            "partition.bin",
            &partition::partition_journal(12),
        ] {
            assert!(is_own_file(f), "{f}");
        }
        for f in [
            "notes.txt",
            "main.rs",
            "summary.csv.bak",
            "chart.png",
            ".ssh",
            "partition-journal-.bin",
            "partition-journal-1.bin.bak",
            "partition-journal-x.bin",
        ] {
            assert!(!is_own_file(f), "{f}");
        }
    }
}
