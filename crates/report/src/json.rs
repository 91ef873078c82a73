//! `summary.json`: the scenario as validated, the seed, the version and every
//! metric of every limiter — what `ratesim run --format json` prints too.

use std::io::Write;

use serde_json::{json, Value};

use super::format::json_numbers;
use super::Report;

pub fn summary(report: &Report) -> Value {
    let mut limiters =
        serde_json::to_value(report.limiters.iter().map(|l| &l.json).collect::<Vec<_>>())
            .expect("a summary serializes");
    json_numbers(&mut limiters);
    json!({
        "ratesim_version": report.version,
        "scenario": report.scenario,
        "seed": report.seed,
        "limit": report.limit,
        "window_ns": report.window.0,
        "duration_ns": report.duration.0,
        "resolution_ns": report.resolution.0,
        "limiters": limiters,
    })
}

pub fn to_string(report: &Report) -> String {
    let mut s = serde_json::to_string_pretty(&summary(report)).expect("JSON values serialize");
    s.push('\n');
    s
}

/// `summary.json`, the exporter.
pub fn write(report: &Report, out: &mut dyn Write) -> anyhow::Result<()> {
    out.write_all(to_string(report).as_bytes())?;
    Ok(())
}
