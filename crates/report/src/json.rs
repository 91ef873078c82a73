//! `summary.json`: the scenario as validated, the seed, the version and every
//! metric of every limiter — what `ratesim run --format json` prints too.
//! Its model is [`crate::rundir::summary::Summary`].

use std::io::Write;

use super::Report;
use crate::rundir::summary::Summary;

/// The report as `summary.json` models it.
pub fn summary(report: &Report) -> Summary {
    Summary {
        ratesim_version: report.version.to_string(),
        scenario: report.scenario.clone(),
        seed: report.seed,
        limit: report.limit,
        window_ns: report.window.0,
        duration_ns: report.duration.0,
        resolution_ns: report.resolution.0,
        limiters: report.limiters.iter().map(|l| l.json.clone()).collect(),
    }
}

pub fn to_string(report: &Report) -> String {
    let mut s =
        serde_json::to_string_pretty(&summary(report).to_json()).expect("JSON values serialize");
    s.push('\n');
    s
}

/// `summary.json`, the exporter.
pub fn write(report: &Report, out: &mut dyn Write) -> anyhow::Result<()> {
    out.write_all(to_string(report).as_bytes())?;
    Ok(())
}
