//! Agreement with the gateway, read back from a run directory
//! (`agreement.csv`, `disagreements.csv`; docs/semantics.md §8): the
//! terminal's and `summary.md`'s account of it, and [`agrees`], the one
//! rule every count uses — the run's sink counts with it too.

use std::path::Path;

use crate::rundir::{AGREEMENT_CSV as FILE, DISAGREEMENTS_CSV as LINES_FILE};

/// Whether a gateway verdict and a ratesim outcome, as `agreement.csv`
/// names them, agree (docs/semantics.md §8): `passed`–`admitted`,
/// `delayed`–`delayed`, `rejected`–`rejected`, and `not_rejected` (a log
/// that cannot tell a delay from a pass) with `admitted` or `delayed`. A
/// line without a verdict (`none`) is not compared. The one rule behind
/// every count: the terminal's, `summary.md`'s and the disagreeing lines.
pub fn agrees(gateway: &str, ratesim: &str) -> bool {
    matches!(
        (gateway, ratesim),
        ("passed", "admitted")
            | ("delayed", "delayed")
            | ("rejected", "rejected")
            | ("not_rejected", "admitted" | "delayed")
    )
}

/// One limiter's comparison, read back from `agreement.csv`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgreementCounts {
    pub limiter: String,
    /// Lines whose verdict and outcome agree.
    pub agree: u64,
    /// Lines with a verdict: the `agreement.csv` rows but `none`.
    pub compared: u64,
    /// Lines without a verdict (`none`), not compared.
    pub without_verdict: u64,
    /// The first disagreeing lines, described.
    pub lines: Vec<String>,
}

/// Per limiter, the counts of `agreement.csv` by [`agrees`] and the first
/// disagreeing lines, read from a run directory.
pub fn read(dir: &Path) -> Vec<AgreementCounts> {
    let Ok(mut r) = csv::Reader::from_path(dir.join(FILE)) else {
        return Vec::new();
    };
    let mut out: Vec<AgreementCounts> = Vec::new();
    for rec in r.records().filter_map(Result::ok) {
        let (Some(l), Some(g), Some(s), Some(n)) = (rec.get(0), rec.get(1), rec.get(2), rec.get(3))
        else {
            continue;
        };
        let n: u64 = n.parse().unwrap_or(0);
        if out.last().is_none_or(|c| c.limiter != l) {
            out.push(AgreementCounts {
                limiter: l.to_string(),
                ..AgreementCounts::default()
            });
        }
        let e = out.last_mut().expect("just pushed");
        if g == "none" {
            e.without_verdict += n;
        } else {
            e.compared += n;
            e.agree += agrees(g, s) as u64 * n;
        }
    }
    if let Ok(mut r) = csv::Reader::from_path(dir.join(LINES_FILE)) {
        for rec in r.records().filter_map(Result::ok) {
            let get = |i| rec.get(i).unwrap_or("");
            if let Some(e) = out.iter_mut().find(|e| e.limiter == get(0)) {
                let ms = |ns: &str| ns.parse::<u64>().map(|n| n as f64 / 1e6).unwrap_or(0.0);
                let delay = |what: &str, ns: &str| {
                    if what == "delayed" {
                        format!(" {:.0} ms", ms(ns))
                    } else {
                        String::new()
                    }
                };
                e.lines.push(format!(
                    "line {} ({} at {:.3} s): gateway {}{}, ratesim {}{}",
                    get(1),
                    get(2),
                    ms(get(3)) / 1000.0,
                    get(4),
                    delay(get(4), get(6)),
                    get(5),
                    delay(get(5), get(7)),
                ));
            }
        }
    }
    out
}

/// The comparison as Markdown (`summary.md`) or text (the terminal), from
/// [`read`]: both give the same counts as `agreement.csv`.
pub fn render(dir: &Path, markdown: bool) -> String {
    let rows = read(dir);
    if rows.is_empty() {
        return String::new();
    }
    let unverdicted = |c: &AgreementCounts| {
        if c.without_verdict == 0 {
            String::new()
        } else {
            format!(
                "; {} line{} without a verdict not compared",
                c.without_verdict,
                if c.without_verdict == 1 { "" } else { "s" }
            )
        }
    };
    let mut s = String::new();
    if markdown {
        s.push_str("## Agreement with the gateway\n\nEach request's decision beside the gateway's own verdict in its log line (`agreement.csv`; the first disagreeing lines in `disagreements.csv`). A gateway verdict of `not_rejected` (a log with only `$status`) agrees with admitted and with delayed.\n\n| limiter | agree | of | first disagreeing lines |\n|---|---:|---:|---|\n");
        for c in &rows {
            let mut first = c
                .lines
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join("; ");
            first.push_str(&unverdicted(c));
            s.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                c.limiter,
                c.agree,
                c.compared,
                first.trim_start_matches("; ")
            ));
        }
        s.push('\n');
    } else {
        s.push_str("\nagreement with the gateway's verdicts (agreement.csv):\n");
        for c in &rows {
            s.push_str(&format!(
                "  {}: {} of {} agree{}\n",
                c.limiter,
                c.agree,
                c.compared,
                unverdicted(c)
            ));
            for line in c.lines.iter().take(3) {
                s.push_str(&format!("    {line}\n"));
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_rejected_agrees_with_admitted_and_delayed_and_none_is_not_compared() {
        assert!(agrees("not_rejected", "admitted") && agrees("not_rejected", "delayed"));
        assert!(!agrees("not_rejected", "rejected"));
        assert!(agrees("passed", "admitted") && !agrees("passed", "delayed"));
        assert!(!agrees("none", "admitted"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(FILE),
            "limiter,gateway,ratesim,requests\n\
             a,not_rejected,admitted,700\n\
             a,not_rejected,delayed,103\n\
             a,rejected,admitted,2\n\
             a,none,admitted,4\n\
             b,rejected,rejected,5\n",
        )
        .unwrap();
        let c = read(dir.path());
        assert_eq!(
            c.iter()
                .map(|c| (c.limiter.as_str(), c.agree, c.compared, c.without_verdict))
                .collect::<Vec<_>>(),
            vec![("a", 803, 805, 4), ("b", 5, 5, 0)]
        );
        let text = render(dir.path(), false);
        assert!(
            text.contains("a: 803 of 805 agree; 4 lines without a verdict not compared"),
            "{text}"
        );
        assert!(render(dir.path(), true).contains("| a | 803 | 805 |"));
    }
}
