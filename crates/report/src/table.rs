//! The terminal summary: one aligned row per limiter.
//!
//! Columns for client behaviour appear only when they say something: retry
//! columns when some attempt was a retry, fairness when several clients sent,
//! collateral when some limiter shares a key between clients (ip, global),
//! deployment columns when some limiter runs on several instances or a store.

use super::format::short_ms;
use super::{LimiterReport, Report};
use crate::clock::decimal_places;

/// A column: its header, whether it is text (left-aligned), and its cell.
type Column = (&'static str, bool, fn(&Report, &LimiterReport) -> String);

const BASE: &[Column] = &[
    ("limiter", true, |_, l| l.summary().limiter.clone()),
    ("algorithm", true, |_, l| l.summary().algorithm.clone()),
    ("key", true, |_, l| l.summary().key_by.clone()),
    ("admitted", false, |_, l| l.summary().admitted.to_string()),
    ("delayed", false, |_, l| l.summary().delayed.to_string()),
    ("rejected", false, |_, l| l.summary().rejected.to_string()),
    ("peak/limit", false, |r, l| {
        // Its own policy (docs/semantics.md §3); 0 only in a report that
        // predates per-limiter limits.
        let limit = match l.summary().limit {
            0 => r.limit,
            own => own,
        };
        format!("{}/{limit}", l.summary().peak_in_window)
    }),
    ("delay p99", false, |_, l| short_ms(l.delay_p99)),
    ("state B/key", false, |_, l| {
        let s = l.summary();
        if s.state_bytes_per_key_mean.text() == s.state_bytes_per_key_peak.to_string() {
            s.state_bytes_per_key_peak.to_string()
        } else {
            format!(
                "{} (peak {})",
                s.state_bytes_per_key_mean.text(),
                s.state_bytes_per_key_peak
            )
        }
    }),
    ("keys", false, |_, l| l.summary().keys.to_string()),
];

const RETRIES: &[Column] = &[
    ("attempts/req", false, |_, l| {
        l.summary()
            .retry_amplification
            .as_ref()
            .map_or(String::new(), |a| a.text().to_string())
    }),
    ("gave up", false, |_, l| {
        l.summary().gave_up.map_or(String::new(), |g| g.to_string())
    }),
    ("success p99", false, |_, l| short_ms(l.time_to_success_p99)),
];

/// For chains (docs/semantics.md §13): a member's attempts it would have
/// passed that another member's rejection overruled.
const CHAINS: &[Column] = &[("overruled", false, |_, l| {
    let s = l.summary();
    match s.chain.is_empty() {
        true => String::new(),
        false => s.overruled.to_string(),
    }
})];

const FAIRNESS: Column = ("fairness", false, |_, l| {
    l.fairness.map_or("-".into(), |f| format!("{f:.3}"))
});

const SHARED_KEYS: &[Column] = &[("collateral", false, |_, l| {
    l.collateral.map_or("-".into(), |(i, r)| {
        format!("{}%", decimal_places(i as u128 * 100, r as u128, 1))
    })
})];

const DEPLOYED: &[Column] = &[
    ("deployment", true, |_, l| {
        format!(
            "{}x {}",
            l.summary().instances.unwrap_or(1),
            l.summary().scope
        )
    }),
    ("latency p99", false, |_, l| short_ms(l.added_latency_p99)),
    ("store ops", false, |_, l| l.summary().store_ops.to_string()),
    ("fault: open/closed/fallback", false, |_, l| {
        let s = l.summary();
        format!(
            "{}/{}/{}",
            s.unprotected_passes, s.fault_rejections, s.fallback_decisions
        )
    }),
    ("overshoot", false, |_, l| {
        l.summary().overshoot.unwrap_or(0).to_string()
    }),
];

/// The table, the exporter.
pub fn write(report: &Report, out: &mut dyn std::io::Write) -> anyhow::Result<()> {
    out.write_all(render(report).as_bytes())?;
    Ok(())
}

pub fn render(report: &Report) -> String {
    let mut columns: Vec<&Column> = BASE.iter().collect();
    if report.limiters.iter().any(|l| {
        l.summary().chain.is_empty()
            && l.summary().attempts > l.summary().logical_requests.unwrap_or(0)
    }) {
        columns.extend(RETRIES);
    }
    if report
        .limiters
        .iter()
        .any(|l| !l.summary().chain.is_empty())
    {
        columns.extend(CHAINS);
    }
    if report.scenario.rest["clients"].as_u64().unwrap_or(0) > 1 {
        columns.push(&FAIRNESS);
    }
    if report
        .limiters
        .iter()
        .any(|l| l.summary().key_by != "client")
    {
        columns.extend(SHARED_KEYS);
    }
    if report
        .limiters
        .iter()
        .any(|l| l.summary().instances.unwrap_or(1) > 1 || l.summary().scope != "local")
    {
        columns.extend(DEPLOYED);
    }
    let header: Vec<String> = columns.iter().map(|c| c.0.to_string()).collect();
    let rows: Vec<Vec<String>> = report
        .limiters
        .iter()
        .map(|l| columns.iter().map(|c| (c.2)(report, l)).collect())
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = " ".repeat(widths[i] - cell.chars().count());
            if columns[i].1 {
                s.push_str(cell);
                if i + 1 < cells.len() {
                    s.push_str(&pad);
                }
            } else {
                s.push_str(&pad);
                s.push_str(cell);
            }
        }
        s.push('\n');
        s
    };
    let limits: Vec<u64> = report.limiters.iter().map(|l| l.summary().limit).collect();
    let chains = report
        .limiters
        .iter()
        .filter(|l| l.summary().algorithm == "chain")
        .count();
    let counted = match chains {
        0 => format!("{} limiters", report.limiters.len()),
        1 => format!("{} limiters and 1 chain", report.limiters.len() - 1),
        n => format!("{} limiters and {n} chains", report.limiters.len() - n),
    };
    let mut out = format!(
        "{} — {counted} over {}, {}, seed {}\n\n",
        report.name,
        report.duration,
        super::format::policy(&limits, report.limit, &report.window.to_string()),
        report.seed
    );
    out.push_str(&line(&header));
    for r in &rows {
        out.push_str(&line(r));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Nanos;

    // Regression (chart details issue item 6): a delay or latency of 0 was
    // printed `-`, as if there were none.
    #[test]
    fn zero_prints_zero_and_only_none_prints_a_dash() {
        assert_eq!(short_ms(Some(Nanos(0))), "0");
        assert_eq!(short_ms(None), "-");
        assert_eq!(short_ms(Some(Nanos(1_500_000))), "1.5ms");
        assert_eq!(short_ms(Some(Nanos(20_000))), "20us");
    }
}
