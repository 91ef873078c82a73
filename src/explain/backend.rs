//! `ratesim explain protect-backend` — what a limit does for the backend
//! behind it, on the shipped `protect-backend` scenario (docs/semantics.md
//! §10).
//!
//! Reads the run's `summary.csv` (the backend's columns) and `sources.csv`
//! (who was rejected); every number in the text comes from them.

use std::collections::HashMap;
use std::fmt::Write as _;

use anyhow::{anyhow, Context as _};

use super::{wrap, Context, Topic};
use crate::rundir::summary::{LimiterSummary, SourceRow};
use crate::scenario::Load as _;
use crate::scenario::Scenario;

pub(crate) const TOPIC: Topic = Topic {
    name: "protect-backend",
    about: "a spike and a slowdown behind six limiters: which ones keep the backend's latency down, and whom they turn away for it",
    scenario,
    text: include_str!("../../scenarios/protect-backend.toml"),
    explain,
};

fn scenario() -> Result<Scenario, crate::InputError> {
    Scenario::load("protect-backend")
}

fn read<T: serde::de::DeserializeOwned>(
    dir: &std::path::Path,
    file: &str,
) -> anyhow::Result<Vec<T>> {
    let path = dir.join(file);
    let mut rdr =
        csv::Reader::from_path(&path).with_context(|| format!("cannot read {}", path.display()))?;
    rdr.deserialize::<T>()
        .map(|r| r.with_context(|| format!("{}", path.display())))
        .collect()
}

/// A decimal column as written, or `-`.
fn cell(d: &Option<crate::rundir::summary::Decimal>) -> String {
    d.as_ref().map_or("-".into(), |d| d.text().to_string())
}

/// A number of ms as people read it: whole above 10, else 2 places.
fn ms(d: &Option<crate::rundir::summary::Decimal>) -> String {
    match d.as_ref().map(|d| d.value()) {
        Some(v) if v >= 10.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.2}"),
        None => "-".into(),
    }
}

fn explain(ctx: &Context) -> anyhow::Result<String> {
    let s = ctx.scenario;
    let backend = s
        .backend
        .as_ref()
        .ok_or_else(|| anyhow!("the scenario has no [backend]"))?;
    let rows: Vec<LimiterSummary> = read(ctx.dir, crate::rundir::SUMMARY_CSV)?;
    let sources: Vec<SourceRow> = read(ctx.dir, crate::rundir::SOURCES_CSV)?;
    let by_source: HashMap<(&str, &str), &SourceRow> = sources
        .iter()
        .map(|r| ((r.limiter.as_str(), r.source.as_str()), r))
        .collect();
    let source_names: Vec<&str> = s.sources().map(|(_, n)| n).collect();
    let reads_backend = |name: &str| {
        s.limiters
            .iter()
            .any(|l| l.name == name && l.algorithm.needs_backend())
    };

    let mut out = String::new();
    let _ = writeln!(
        out,
        "A limit and the backend behind it — ratesim explain protect-backend\n"
    );
    let slow: Vec<String> = backend
        .slowdowns
        .iter()
        .map(|w| {
            format!(
                "{}× slower from {} to {}",
                crate::clock::decimal(w.num as u128, w.den as u128),
                super::at(w.from.0),
                super::at(w.until.0)
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "{}\n",
        wrap(
            &format!(
                "The backend: {} workers, each request served in {}{}{}. Each limiter has a backend of its own, fed what it passes, so their latencies compare side by side.",
                backend.workers,
                crate::scenario::backend::service_text(&backend.service),
                backend.queue.map_or(String::new(), |q| format!(", a waiting room of {q}")),
                if slow.is_empty() { String::new() } else { format!("; {}", slow.join(", ")) }
            ),
            76,
            0
        )
    );

    // The table.
    let mut header = vec![
        "limiter".to_string(),
        "p50 ms".into(),
        "p99 ms".into(),
        "inside".into(),
        "goodput/s".into(),
    ];
    header.extend(source_names.iter().map(|n| format!("{n} rejected")));
    let mut table = vec![header];
    for r in &rows {
        let mut row = vec![
            r.limiter.clone(),
            ms(&r.latency_p50_ms),
            ms(&r.latency_p99_ms),
            r.in_flight_peak.map_or("-".into(), |n| n.to_string()),
            cell(&r.goodput_per_s),
        ];
        for src in &source_names {
            row.push(match by_source.get(&(r.limiter.as_str(), *src)) {
                Some(x) => format!("{} of {}", x.rejected, x.attempts),
                None => "-".into(),
            });
        }
        table.push(row);
    }
    let _ = writeln!(
        out,
        "Latency (arrival to response), the most requests inside the backend at once, and who was rejected (summary.csv, sources.csv):\n"
    );
    out.push_str(&super::columns(&table));
    let _ = writeln!(out);

    // What it means.
    let p99 = |r: &LimiterSummary| {
        r.latency_p99_ms
            .as_ref()
            .map_or(f64::INFINITY, |d| d.value())
    };
    let (rate, reading): (Vec<&LimiterSummary>, Vec<&LimiterSummary>) =
        rows.iter().partition(|r| !reads_backend(&r.limiter));
    if let (Some(worst), Some(best)) = (
        rate.iter().max_by(|a, b| p99(a).total_cmp(&p99(b))),
        reading.iter().min_by(|a, b| p99(a).total_cmp(&p99(b))),
    ) {
        let _ = writeln!(
            out,
            "- {}",
            wrap(
                &format!(
                    "A rate limit counts requests, not the backend's capacity: when the backend slows down it keeps passing what it passed before, and the backlog grows — {} let up to {} requests inside and its p99 latency reach {} ms.",
                    worst.limiter,
                    worst.in_flight_peak.unwrap_or(0),
                    ms(&worst.latency_p99_ms)
                ),
                74,
                2
            )
        );
        let _ = writeln!(
            out,
            "- {}",
            wrap(
                &format!(
                    "A limit that reads the backend (in flight, its queue, or its response times) passes less when it slows: {} held at most {} inside and p99 latency to {} ms.",
                    best.limiter,
                    best.in_flight_peak.unwrap_or(0),
                    ms(&best.latency_p99_ms)
                ),
                74,
                2
            )
        );
    }
    // Whom each pays with: the source it rejects most of, as a share.
    let paid: Vec<String> = rows
        .iter()
        .map(|r| {
            let parts: Vec<String> = source_names
                .iter()
                .filter_map(|src| by_source.get(&(r.limiter.as_str(), *src)))
                .map(|x| {
                    let share = x.rejected_share.as_ref().map_or(0.0, |d| d.value());
                    format!("{:.1}% of {}", 100.0 * share, x.source)
                })
                .collect();
            format!("{} rejects {}", r.limiter, parts.join(" and "))
        })
        .collect();
    let _ = writeln!(
        out,
        "- {}",
        wrap(
            &format!(
                "What each one turns away for it (of each source's attempts): {}.",
                paid.join("; ")
            ),
            74,
            2
        )
    );
    let _ = writeln!(
        out,
        "\n{}",
        wrap(
            &format!(
                "backend.png in {} draws each backend's latency and the requests inside over time, the slowdown shaded.",
                ctx.dir.display()
            ),
            76,
            0
        )
    );
    Ok(out)
}
