//! `report.html` of a run directory: what `summary.md` says — purpose,
//! policy, the summary, the notes, every chart with its caption — and
//! besides it every table the run directory holds, the scenario's text
//! and the command line, in one self-contained page (see [`super`]).
//!
//! Like `summary.md` it is written from the run directory's files alone,
//! so `ratesim plot` rewrites it byte for byte.

use std::fmt::Write as _;
use std::path::Path;

use super::{csv_section, escape, inline_markdown, page, png_img, read_csv, table};
use crate::charts::RunData;
use crate::markdown;
use crate::rundir::invocation::Invocation;
use crate::rundir::summary::Summary;
use crate::rundir::{
    AGREEMENT_CSV, DISAGREEMENTS_CSV, SOURCES_CSV, SUMMARY_CSV, SUMMARY_JSON, TOP_KEYS_CSV,
};

pub const FILE: &str = crate::rundir::REPORT_HTML;

/// One image of the page: its file name, what it shows (the caption
/// `summary.md` gives it), and its PNG bytes.
pub struct Image {
    pub file: String,
    pub about: Option<String>,
    pub png: Vec<u8>,
}

/// The page of the run directory `dir` whose data is `data`, with `images`
/// in their order.
pub fn render(data: &RunData, dir: &Path, images: &[Image]) -> String {
    let mut b = String::new();
    let _ = writeln!(b, "<h1>{} — ratesim results</h1>", escape(&data.name));
    let description = data.description.trim();
    if !description.is_empty() {
        let _ = writeln!(b, "<p id=\"purpose\">{}</p>", escape(description));
    }
    let (policy, range, rest) = markdown::policy(data);
    let _ = writeln!(
        b,
        "<p id=\"policy\">Policy: <strong>{}</strong>{} · {}</p>",
        escape(&policy),
        escape(&range),
        escape(&rest)
    );
    b.push_str(&summary_section(data, dir));
    b.push_str(&notes_section(dir));
    b.push_str(&csv_section(
        dir,
        SOURCES_CSV,
        "Sources",
        "Per limiter, each traffic source it sees",
        500,
    ));
    b.push_str(&csv_section(
        dir,
        TOP_KEYS_CSV,
        "Who would be limited",
        "Per limiter, the keys with the most rejected requests",
        200,
    ));
    b.push_str(&csv_section(
        dir,
        AGREEMENT_CSV,
        "Agreement with the gateway",
        "Each request's decision beside the gateway's own verdict in its log line, counted",
        500,
    ));
    b.push_str(&csv_section(
        dir,
        DISAGREEMENTS_CSV,
        "First disagreements",
        "The first log lines on which ratesim and the gateway disagree",
        100,
    ));
    b.push_str(&chains_section(dir));
    b.push_str(&charts_section(data, images));
    b.push_str(&scenario_section(dir));
    page(&format!("{} — ratesim results", data.name), &b)
}

/// `summary.md`'s table, then `summary.csv` as a table, every cell as the
/// file writes it.
fn summary_section(data: &RunData, dir: &Path) -> String {
    let (head, rows) = markdown::overview(data);
    let overview = table("overview", &head, &rows);
    let Some((head, rows)) = read_csv(&dir.join(SUMMARY_CSV)) else {
        return String::new();
    };
    let above: Vec<&str> = data
        .limiters
        .iter()
        .filter(|l| l.peak_in_window > l.limit)
        .map(|l| l.name.as_str())
        .collect();
    let above = if above.is_empty() {
        "none".to_string()
    } else {
        above.join(", ")
    };
    format!(
        "<section id=\"section-summary\">\n<h2>Summary</h2>\n{overview}<p><code>peak / limit</code>: \
         the most one key got through within any one window, against {}; above it: {}. Click a \
         column's header to sort a table.</p>\n<p>Every column of <code>{SUMMARY_CSV}</code>, as \
         written (docs/semantics.md §3):</p>\n{}</section>\n",
        if data.shared_limit().is_some() {
            "the policy's limit"
        } else {
            "that limiter's own policy: its own limit, or its own rate × the window, rounded up"
        },
        escape(&above),
        table("summary", &head, &rows)
    )
}

/// The access logs' notes of `summary.md`.
fn notes_section(dir: &Path) -> String {
    let notes = crate::notes::summary_notes(dir);
    let items: Vec<&str> = notes.lines().filter_map(|l| l.strip_prefix("- ")).collect();
    if items.is_empty() {
        return String::new();
    }
    let mut s = String::from("<section id=\"section-access-logs\">\n<h2>Access logs</h2>\n<ul>\n");
    for i in items {
        let _ = writeln!(s, "<li>{}</li>", inline_markdown(i));
    }
    s.push_str("</ul>\n</section>\n");
    s
}

fn charts_section(data: &RunData, images: &[Image]) -> String {
    if images.is_empty() {
        return String::new();
    }
    let mut s = String::from("<section id=\"section-charts\">\n<h2>Charts</h2>\n");
    if data.limiters.len() > crate::charts::MAX_CHARTED {
        let _ = writeln!(
            s,
            "<p>The charts show the first {} of the {} limiters; the summary above has them all.</p>",
            crate::charts::MAX_CHARTED,
            data.limiters.len()
        );
    }
    for image in images {
        let stem = image.file.trim_end_matches(".png");
        let _ = writeln!(
            s,
            "<figure id=\"chart-{}\">\n<h3>{}</h3>\n{}",
            escape(stem),
            escape(stem),
            png_img(&image.png, &format!("{} — {stem}", data.name))
        );
        if let Some(about) = &image.about {
            let _ = writeln!(
                s,
                "<figcaption>{}</figcaption>",
                escape(&markdown::sentence(about))
            );
        }
        s.push_str("</figure>\n");
    }
    s.push_str("</section>\n");
    s
}

/// Each chain of the run (docs/semantics.md §13): its row, then its
/// members' in the order they are asked, with what each was asked and
/// decided, from `summary.json`. Empty when the run has no chain.
fn chains_section(dir: &Path) -> String {
    let Some(summary) = std::fs::read_to_string(dir.join(SUMMARY_JSON))
        .ok()
        .and_then(|t| serde_json::from_str::<Summary>(&t).ok())
    else {
        return String::new();
    };
    let head: Vec<String> = [
        "chain",
        "mode",
        "limiter",
        "algorithm",
        "attempts",
        "admitted",
        "delayed",
        "rejected",
        "overruled",
    ]
    .map(str::to_string)
    .to_vec();
    let mut rows: Vec<Vec<String>> = Vec::new();
    let row_of = |chain: &str, mode: &str, s: &crate::rundir::summary::LimiterSummary| {
        vec![
            chain.to_string(),
            mode.to_string(),
            s.limiter.clone(),
            s.algorithm.clone(),
            s.attempts.to_string(),
            s.admitted.to_string(),
            s.delayed.to_string(),
            s.rejected.to_string(),
            s.overruled.to_string(),
        ]
    };
    for c in summary
        .limiters
        .iter()
        .filter(|l| l.summary.algorithm == "chain")
    {
        let name = &c.summary.limiter;
        let mode = c.params.get("mode").and_then(|m| m.as_str()).unwrap_or("");
        rows.push(row_of(name, mode, &c.summary));
        let members = c.params.get("limiters").and_then(|m| m.as_array());
        for m in members.into_iter().flatten().filter_map(|m| m.as_str()) {
            if let Some(l) = summary
                .limiters
                .iter()
                .find(|l| l.summary.limiter == m && l.summary.chain == *name)
            {
                rows.push(row_of(name, mode, &l.summary));
            }
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "<section id=\"section-chains\">\n<h2>Chains</h2>\n<p>Each chain asks its members in the \
         order listed and decides every request it is asked about; its row is what clients got \
         (docs/semantics.md §13). A member's <code>attempts</code> are the requests it was asked \
         about, <code>rejected</code> those it rejected, <code>admitted</code> and \
         <code>delayed</code> its own decisions on requests the chain passed, and \
         <code>overruled</code> those it would have passed that the chain rejected: attempts = \
         admitted + delayed + rejected + overruled.</p>\n{}</section>\n",
        table("chains", &head, &rows)
    )
}

/// The scenario's text and the command line from `run.json`, the version
/// from `summary.json`; a directory without `run.json` shows the scenario
/// as `summary.json` echoes it.
fn scenario_section(dir: &Path) -> String {
    let invocation = Invocation::read(dir);
    let summary: Option<Summary> = std::fs::read_to_string(dir.join(SUMMARY_JSON))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let mut s = String::from("<section id=\"section-scenario\">\n<h2>Scenario</h2>\n");
    match &invocation {
        Some(i) if !i.scenario_text.is_empty() => {
            s.push_str("<p>The scenario's text as read, before any <code>--set</code>.</p>\n");
            let _ = writeln!(
                s,
                "<pre id=\"scenario-text\">{}</pre>",
                escape(&i.scenario_text)
            );
        }
        _ => {
            if let Some(summary) = &summary {
                let echo = serde_json::to_string_pretty(&summary.scenario).unwrap_or_default();
                s.push_str(
                    "<p>The scenario as the run validated it (<code>summary.json</code>); the run \
                     directory holds no <code>run.json</code> with its text.</p>\n",
                );
                let _ = writeln!(s, "<pre id=\"scenario-text\">{}</pre>", escape(&echo));
            }
        }
    }
    let version = summary
        .as_ref()
        .map(|s| s.ratesim_version.as_str())
        .filter(|v| !v.is_empty())
        .or(invocation.as_ref().map(|i| i.ratesim_version.as_str()))
        .unwrap_or("unknown");
    let _ = write!(
        s,
        "<p class=\"meta\" id=\"provenance\">Written by ratesim {}",
        escape(version)
    );
    match &invocation {
        Some(i) => {
            let _ = write!(
                s,
                " · command: <code id=\"command\">{}</code>",
                escape(&i.command_line())
            );
        }
        None => s.push_str(" · the command line was not recorded"),
    }
    s.push_str("</p>\n</section>\n");
    s
}
