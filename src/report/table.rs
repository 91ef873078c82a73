//! The terminal summary: one aligned row per limiter.
//!
//! Columns for client behaviour appear only when they say something: retry
//! columns when some attempt was a retry, fairness when several clients sent,
//! collateral when some limiter shares a key between clients (ip, global),
//! deployment columns when some limiter runs on several instances or a store.

use super::{LimiterReport, Report};
use crate::clock::{decimal_places, Nanos};

/// A column: its header, whether it is text (left-aligned), and its cell.
type Column = (&'static str, bool, fn(&Report, &LimiterReport) -> String);

/// A duration for a cell: `0` when it is zero, `-` only when there is
/// none (nothing passed, nothing measured).
fn short_ms(d: Option<Nanos>) -> String {
    match d {
        Some(d) if d.0 >= 1_000_000 => {
            format!("{}ms", decimal_places(d.0 as u128, 1_000_000, 1))
        }
        Some(d) if d.0 > 0 => format!("{}us", decimal_places(d.0 as u128, 1_000, 1)),
        Some(_) => "0".to_string(),
        None => "-".to_string(),
    }
}

const BASE: &[Column] = &[
    ("limiter", true, |_, l| l.name.clone()),
    ("algorithm", true, |_, l| l.algorithm.to_string()),
    ("key", true, |_, l| l.key_by.to_string()),
    ("admitted", false, |_, l| l.admitted.to_string()),
    ("delayed", false, |_, l| l.delayed.to_string()),
    ("rejected", false, |_, l| l.rejected.to_string()),
    ("peak/limit", false, |r, l| {
        format!("{}/{}", l.peak_in_window, r.limit)
    }),
    ("delay p99", false, |_, l| short_ms(l.delay_p99)),
    ("state B/key", false, |_, l| {
        if l.state_mean_text() == l.state_peak.to_string() {
            l.state_peak.to_string()
        } else {
            format!("{} (peak {})", l.state_mean_text(), l.state_peak)
        }
    }),
    ("keys", false, |_, l| l.keys.to_string()),
];

const RETRIES: &[Column] = &[
    ("attempts/req", false, |_, l| l.amplification_text()),
    ("gave up", false, |_, l| l.gave_up.to_string()),
    ("success p99", false, |_, l| short_ms(l.time_to_success_p99)),
];

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
        format!("{}x {}", l.instances, l.scope)
    }),
    ("latency p99", false, |_, l| short_ms(l.added_latency_p99)),
    ("store ops", false, |_, l| l.store_ops.to_string()),
    ("fault: open/closed/fallback", false, |_, l| {
        format!("{}/{}/{}", l.fault_open, l.fault_closed, l.fault_fallback)
    }),
    ("overshoot", false, |_, l| l.overshoot.to_string()),
];

pub fn render(report: &Report) -> String {
    let mut columns: Vec<&Column> = BASE.iter().collect();
    if report.limiters.iter().any(|l| l.attempts > l.logical) {
        columns.extend(RETRIES);
    }
    if report.scenario["clients"].as_u64().unwrap_or(0) > 1 {
        columns.push(&FAIRNESS);
    }
    if report.limiters.iter().any(|l| l.key_by != "client") {
        columns.extend(SHARED_KEYS);
    }
    if report
        .limiters
        .iter()
        .any(|l| l.instances > 1 || l.scope != "local")
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
    let mut out = format!(
        "{} — {} limiters over {}, limit {} per {}, seed {}\n\n",
        report.name,
        report.limiters.len(),
        report.duration,
        report.limit,
        report.window,
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
