//! A sweep directory's `report.html`: `summary.md`'s account of what
//! varied, `recommendation.md` (each limiter's point, its neighbours and
//! what it means per source), every heatmap or line chart with its
//! caption (`summary.md`'s), and `sweep.csv` as a sortable table, in one self-contained page drawn
//! from the directory's files alone (see `ratesim_report::html`).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;

use super::manifest::Manifest;
use crate::report::html::{self, escape};

pub const FILE: &str = crate::rundir::REPORT_HTML;

/// The most rows of `sweep.csv` the page shows (the file has them all).
const MAX_ROWS: usize = 5000;

/// Writes `dir/report.html` from `summary` (the text of `summary.md`),
/// `recommendation` (of `recommendation.md`, when there is one) and the
/// directory's charts and `sweep.csv`.
pub fn write(
    dir: &Path,
    m: &Manifest,
    summary: &str,
    recommendation: Option<&str>,
) -> anyhow::Result<()> {
    let mut b = format!("<h1>{} — ratesim sweep</h1>\n", escape(&m.scenario));
    // summary.md's own title is the page's; the recommendation comes
    // before the charts, in place of the line that points to its file.
    let body = summary.split_once('\n').map_or("", |(_, rest)| rest);
    let (intro, charts) = match body.find("\n![") {
        Some(i) => body.split_at(i + 1),
        None => (body, ""),
    };
    let intro: String = intro
        .lines()
        .filter(|l| !l.starts_with("The recommendation per limiter is in "))
        .map(|l| format!("{l}\n"))
        .collect();
    b.push_str(&html::markdown::to_html(&intro, dir));
    if let Some(text) = recommendation {
        b.push_str("<section id=\"section-recommendation\">\n");
        b.push_str(&html::markdown::to_html(text, dir));
        b.push_str("</section>\n");
    }
    if !charts.is_empty() {
        b.push_str("<section id=\"section-charts\">\n<h2>Charts</h2>\n");
        b.push_str(&html::markdown::to_html(charts, dir));
        b.push_str("</section>\n");
    }
    b.push_str(&html::csv_section(
        dir,
        crate::rundir::SWEEP_CSV,
        "Sweep table",
        "One row per point and limiter: the varied values, then the columns of summary.csv",
        MAX_ROWS,
    ));
    b.push_str("<section id=\"section-scenario\">\n<h2>Scenario</h2>\n");
    if !m.scenario_text.is_empty() {
        let _ = writeln!(
            b,
            "<pre id=\"scenario-text\">{}</pre>",
            escape(&m.scenario_text)
        );
    }
    let _ = writeln!(
        b,
        "<p class=\"meta\" id=\"provenance\">Written by ratesim {}</p>\n</section>",
        escape(&m.ratesim)
    );
    let page = html::page(&format!("{} — ratesim sweep", m.scenario), &b);
    std::fs::write(dir.join(FILE), page).with_context(|| format!("cannot write {FILE}"))
}
