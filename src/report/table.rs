//! The terminal summary: one aligned row per limiter.

use super::Report;
use crate::clock::decimal_places;

pub fn render(report: &Report) -> String {
    let header = [
        "limiter",
        "algorithm",
        "key",
        "admitted",
        "delayed",
        "rejected",
        "peak/limit",
        "delay p99",
        "state B/key",
        "keys",
    ];
    let rows: Vec<[String; 10]> = report
        .limiters
        .iter()
        .map(|l| {
            [
                l.name.clone(),
                l.algorithm.to_string(),
                l.key_by.to_string(),
                l.admitted.to_string(),
                l.delayed.to_string(),
                l.rejected.to_string(),
                format!("{}/{}", l.peak_in_window, report.limit),
                match l.delay_p99 {
                    Some(d) if d.0 > 0 => {
                        format!("{}ms", decimal_places(d.0 as u128, 1_000_000, 1))
                    }
                    _ => "-".to_string(),
                },
                if l.state_mean_text() == l.state_peak.to_string() {
                    l.state_peak.to_string()
                } else {
                    format!("{} (peak {})", l.state_mean_text(), l.state_peak)
                },
                l.keys.to_string(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    // Text columns align left, numbers right.
    let left = |i: usize| i < 3;
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = w - cell.chars().count();
            if left(i) {
                s.push_str(cell);
                if i + 1 < cells.len() {
                    s.push_str(&" ".repeat(pad));
                }
            } else {
                s.push_str(&" ".repeat(pad));
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
    out.push_str(&line(&header.map(String::from)));
    for r in &rows {
        out.push_str(&line(r));
    }
    out
}
