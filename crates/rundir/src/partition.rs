//! What a key partition's run (`ratesim run --keys K/N`) writes beside the
//! run directory's own files, for `ratesim merge` to join the partitions
//! into the whole run's directory (docs/semantics.md §12):
//!
//! - `partition.json` ([`PartitionInfo`]): which partition, the run's
//!   shape (what the reports read of the scenario), and what of the
//!   partition only its own keys' names can say;
//! - `partition.bin`: every limiter's recorder (the counts, series and
//!   histograms, per id), as `ratesim_core::metrics::Recorder::save`
//!   writes it, each followed by its footprint;
//! - `partition-journal-I.bin`: limiter `I`'s run, event by event, in the
//!   order the whole run's events stand (`ratesim_core::partition::journal`).
//!
//! A merged directory holds none of them, as the whole run does not.

use serde::{Deserialize, Serialize};

use crate::invocation::KeyShare;
use ratesim_core::scenario::{KeyBy, Scenario};

pub const PARTITION_JSON: &str = "partition.json";
pub const PARTITION_BIN: &str = "partition.bin";

/// Limiter `i`'s journal.
pub fn partition_journal(i: usize) -> String {
    format!("partition-journal-{i}.bin")
}

/// Whether `name` is a limiter's journal.
pub fn is_partition_journal(name: &str) -> bool {
    name.strip_prefix("partition-journal-")
        .and_then(|r| r.strip_suffix(".bin"))
        .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
}

/// What the reports read of a scenario, beside the runs' results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    pub name: String,
    pub description: String,
    pub seed: u64,
    pub duration_ns: u64,
    pub limit: u64,
    pub window_ns: u64,
    pub resolution_ns: u64,
    pub limiters: Vec<LimiterShape>,
    /// Every source, in id order: its `[[traffic]]` and its name.
    pub sources: Vec<(usize, String)>,
}

/// What the reports read of one limiter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimiterShape {
    pub name: String,
    pub algorithm: String,
    /// Its policy's limit.
    pub limit: u64,
    pub key_by: String,
    pub member_of: Option<usize>,
    pub chain: bool,
    pub instances: u64,
    pub global: bool,
    /// The `[[traffic]]` it sees.
    pub traffic: Vec<usize>,
}

impl LimiterShape {
    pub fn key_by(&self) -> KeyBy {
        match self.key_by.as_str() {
            "client" => KeyBy::Client,
            "ip" => KeyBy::Ip,
            _ => KeyBy::Global,
        }
    }
}

impl Shape {
    pub fn of(scenario: &Scenario) -> Shape {
        Shape {
            name: scenario.name.clone(),
            description: scenario.description.clone(),
            seed: scenario.seed,
            duration_ns: scenario.duration.0,
            limit: scenario.defaults.limit,
            window_ns: scenario.defaults.window.0,
            resolution_ns: scenario.output.resolution.0,
            limiters: scenario
                .limiters
                .iter()
                .map(|l| LimiterShape {
                    name: l.name.clone(),
                    algorithm: l.algorithm_name().to_string(),
                    limit: l.policy.limit,
                    key_by: l.key_by.as_str().to_string(),
                    member_of: l.member_of,
                    chain: l.chain.is_some(),
                    instances: l.deployment.instances.into(),
                    global: l.deployment.is_global(),
                    traffic: l.traffic.clone(),
                })
                .collect(),
            sources: scenario
                .sources()
                .map(|(t, name)| (t, name.to_string()))
                .collect(),
        }
    }
}

/// One limiter's comparison with the gateway's verdicts in a partition:
/// its `(gateway, ratesim)` counts and its first disagreeing lines, each
/// with the number of the event that decided it in the limiter's journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgreementPart {
    pub limiter: String,
    pub counts: Vec<(String, String, u64)>,
    pub lines: Vec<(u64, Vec<String>)>,
}

/// `partition.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartitionInfo {
    pub keys: KeyShare,
    pub shape: Shape,
    /// The scenario as `summary.json` echoes it.
    pub echo: serde_json::Value,
    /// Whether the run wrote `decisions.csv` (with the header columns),
    /// charts and `report.html`.
    pub decisions: bool,
    pub headers: bool,
    pub plots: bool,
    pub html: bool,
    /// Per limiter: the name of the key of its peak in this partition.
    pub peak_keys: Vec<Option<String>>,
    /// Per limiter compared with the gateway (see [`AgreementPart`]).
    pub agreements: Vec<Option<AgreementPart>>,
}
