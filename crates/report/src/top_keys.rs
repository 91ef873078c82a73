//! `top_keys.csv`: who would be limited. Per limiter, the keys with the
//! most rejected requests (ties: more attempts first, then by name), with
//! their attempts, outcomes and the most each passed in one policy window.
//!
//! Written once from the run's recorders; `summary.md` and the terminal
//! read it back from the run directory.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Write;
use std::path::Path;

use crate::engine::LimiterRun;
use crate::metrics::KeyCounts;
use crate::scenario::Scenario;

use crate::rundir::TOP_KEYS_COLUMNS;
pub use crate::rundir::TOP_KEYS_CSV as FILE;

/// Keys kept per limiter in the file.
pub const PER_LIMITER: usize = 100;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub limiter: String,
    pub rank: usize,
    pub key: String,
    pub attempts: u64,
    pub admitted: u64,
    pub delayed: u64,
    pub rejected: u64,
    pub peak_in_window: u64,
}

/// The top keys of every limiter of a run.
pub fn collect(scenario: &Scenario, runs: &[LimiterRun]) -> Vec<Row> {
    let mut rows = Vec::new();
    for (i, (spec, run)) in scenario.limiters.iter().zip(runs).enumerate() {
        let name = |id: usize| crate::key_name(scenario, i, id as u32);
        // Most rejected first, then most attempts, then by name. Only the
        // keys that rank with the first `PER_LIMITER` by counts alone
        // (ties included) need their names, each made once.
        let mut keys = contenders(|| run.recorder.keys(), PER_LIMITER);
        keys.sort_by_cached_key(|(id, k)| (counts(k), name(*id)));
        for (rank, (id, k)) in keys.into_iter().take(PER_LIMITER).enumerate() {
            rows.push(Row {
                limiter: spec.name.clone(),
                rank: rank + 1,
                key: name(id),
                attempts: k.attempts,
                admitted: k.admitted,
                delayed: k.delayed,
                rejected: k.rejected,
                peak_in_window: k.peak_in_window,
            });
        }
    }
    rows
}

/// How a key ranks by its counts alone: most rejected first, then most
/// attempts.
fn counts(k: &KeyCounts) -> (Reverse<u64>, Reverse<u64>) {
    (Reverse(k.rejected), Reverse(k.attempts))
}

/// The keys that rank with the first `n` by [`counts`], ties at the cut
/// included, in no order. Two passes over the keys, the first keeping the
/// best `n` counts in a heap, so that a run of millions of keys does not
/// list them all.
fn contenders<I>(keys: impl Fn() -> I, n: usize) -> Vec<(usize, KeyCounts)>
where
    I: Iterator<Item = (usize, KeyCounts)>,
{
    let mut best = BinaryHeap::with_capacity(n + 1);
    for (_, k) in keys() {
        let c = counts(&k);
        if best.len() < n || best.peek().is_some_and(|worst| c < *worst) {
            best.push(c);
            if best.len() > n {
                best.pop();
            }
        }
    }
    let cut = best.peek().copied().filter(|_| best.len() == n);
    keys()
        .filter(|(_, k)| cut.is_none_or(|cut| counts(k) <= cut))
        .collect()
}

pub fn write(rows: &[Row], out: impl Write) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(TOP_KEYS_COLUMNS)?;
    for r in rows {
        w.write_record([
            r.limiter.clone(),
            r.rank.to_string(),
            r.key.clone(),
            r.attempts.to_string(),
            r.admitted.to_string(),
            r.delayed.to_string(),
            r.rejected.to_string(),
            r.peak_in_window.to_string(),
        ])?;
    }
    w.flush()?;
    Ok(())
}

/// The rows of `dir/top_keys.csv`; none when the file is absent (a run
/// directory from before it existed).
pub fn read(dir: &Path) -> Vec<Row> {
    let Ok(mut r) = csv::Reader::from_path(dir.join(FILE)) else {
        return Vec::new();
    };
    r.records()
        .filter_map(Result::ok)
        .filter_map(|rec| {
            let n = |i: usize| rec.get(i)?.parse::<u64>().ok();
            Some(Row {
                limiter: rec.get(0)?.to_string(),
                rank: n(1)? as usize,
                key: rec.get(2)?.to_string(),
                attempts: n(3)?,
                admitted: n(4)?,
                delayed: n(5)?,
                rejected: n(6)?,
                peak_in_window: n(7)?,
            })
        })
        .collect()
}

/// The top `n` keys of each limiter that rejected anything, as a Markdown
/// table, or as aligned text for the terminal (there only for limiters
/// that rejected two keys or more).
pub fn render(rows: &[Row], n: usize, markdown: bool) -> String {
    // The terminal names keys only where there is a choice of whom to
    // blame: a limiter that rejected requests of two keys or more.
    let several = |limiter: &str| {
        markdown
            || rows
                .iter()
                .filter(|r| r.limiter == limiter && r.rejected > 0)
                .nth(1)
                .is_some()
    };
    let shown: Vec<&Row> = rows
        .iter()
        .filter(|r| r.rank <= n && r.rejected > 0 && several(&r.limiter))
        .collect();
    if shown.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    if markdown {
        out.push_str(&format!(
            "## Who would be limited\n\nThe top {n} keys of each limiter by rejected requests (all in `{FILE}`).\n\n| limiter | key | attempts | admitted | delayed | rejected | peak in window |\n|---|---|---:|---:|---:|---:|---:|\n"
        ));
        for r in shown {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} |\n",
                r.limiter,
                r.key.replace('|', "\\|"),
                r.attempts,
                r.admitted,
                r.delayed,
                r.rejected,
                r.peak_in_window
            ));
        }
        out.push('\n');
        return out;
    }
    let table: Vec<[String; 7]> = shown
        .iter()
        .map(|r| {
            [
                r.limiter.clone(),
                crate::error::quote(&r.key),
                r.attempts.to_string(),
                r.admitted.to_string(),
                r.delayed.to_string(),
                r.rejected.to_string(),
                r.peak_in_window.to_string(),
            ]
        })
        .collect();
    let head = [
        "limiter", "key", "attempts", "admitted", "delayed", "rejected", "peak",
    ];
    let widths: Vec<usize> = (0..7)
        .map(|i| {
            table
                .iter()
                .map(|r| r[i].chars().count())
                .chain([head[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    out.push_str(&format!(
        "\nwho would be limited (top {n} keys by rejected; all in {FILE}):\n"
    ));
    // Padded by hand: `format!`'s width takes at most 65535, and a key or a
    // limiter's name may be longer.
    let line = |cells: [&str; 7]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let pad = " ".repeat(widths[i].saturating_sub(c.chars().count()));
            if i < 2 {
                s.push_str(c);
                s.push_str(&pad);
            } else {
                s.push_str(&pad);
                s.push_str(c);
            }
            s.push_str("  ");
        }
        s.trim_end().to_string() + "\n"
    };
    out.push_str(&line(head));
    for r in &table {
        out.push_str(&line([&r[0], &r[1], &r[2], &r[3], &r[4], &r[5], &r[6]]));
    }
    out
}

/// `summary.md` with the sections read from the run directory's own
/// files — access-log notes, who would be limited, agreement with the
/// gateway — put before the charts.
pub(crate) fn with_sections(md: String, dir: &Path) -> String {
    let sections = format!(
        "{}{}{}",
        super::notes::summary_notes(dir),
        render(&read(dir), 5, true),
        super::agreement::render(dir, true)
    );
    if sections.is_empty() {
        return md;
    }
    match md.find("\n## Charts\n") {
        Some(i) => format!("{}\n{}{}", &md[..i], sections, &md[i + 1..]),
        None => format!("{md}\n{sections}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Regression: a limiter name of 65536 bytes panicked the terminal
    // table (`format!`'s width is at most 65535).
    #[test]
    fn a_name_longer_than_a_format_width_is_padded_all_the_same() {
        let row = |limiter: &str, key: &str| Row {
            limiter: limiter.to_string(),
            rank: 1,
            key: key.to_string(),
            attempts: 3,
            admitted: 1,
            delayed: 0,
            rejected: 2,
            peak_in_window: 1,
        };
        let long = "a".repeat(70_000);
        // The terminal names keys of a limiter that rejected two or more.
        let rows = [
            row(&long, "k1"),
            row(&long, "k2"),
            row("b", "k3"),
            row("b", "k4"),
        ];
        let text = render(&rows, 5, false);
        let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
        assert_eq!(lines.len(), 6, "title, head and four rows: {}", lines.len());
        assert!(lines[2].starts_with(&format!("{long}  k1 ")));
        // Columns line up: a short name's key starts where the long one's does.
        assert_eq!(lines[4].find("k3"), lines[2].find("k1"));
        assert!(lines[4].ends_with("  1"), "{}", lines[4]);
    }

    /// The keys ranking with the first `n`, ties included, the plain way:
    /// every key sorted.
    fn sorted_contenders(keys: &[(usize, KeyCounts)], n: usize) -> Vec<(usize, KeyCounts)> {
        let mut all = keys.to_vec();
        all.sort_by_key(|(id, k)| (counts(k), *id));
        match all.get(n.wrapping_sub(1)) {
            Some((_, last)) if n > 0 => {
                let cut = counts(last);
                all.retain(|(_, k)| counts(k) <= cut);
                all
            }
            _ => all,
        }
    }

    #[test]
    fn contenders_are_the_best_keys_with_every_tie_at_the_cut() {
        // Few distinct counts, spread over the ids, so ties at the cut are
        // the rule.
        for len in [0, 1, 5, 99, 100, 101, 150, 400] {
            for n in [1, 3, 100] {
                let keys: Vec<(usize, KeyCounts)> = (0..len)
                    .map(|id| {
                        let rejected = (id as u64 * 7) % 4;
                        let k = KeyCounts {
                            attempts: rejected + (id as u64 * 5 + id as u64 / 4) % 3,
                            rejected,
                            ..KeyCounts::default()
                        };
                        (id, k)
                    })
                    .collect();
                let mut got = contenders(|| keys.iter().copied(), n);
                got.sort_by_key(|(id, k)| (counts(k), *id));
                assert_eq!(got, sorted_contenders(&keys, n), "{len} keys, n = {n}");
                assert!(got.len() >= n.min(len));
            }
        }
    }
}
