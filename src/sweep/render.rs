//! A sweep directory's charts, `recommendation.md`, `summary.md` and
//! `report.html`, drawn
//! from `sweep.csv` and `sweep.json` alone (so `sweep merge` draws them
//! byte for byte as the unsharded sweep does).
//!
//! One varied path: a line chart per deciding metric ([`LINE_METRICS`])
//! and per required metric, x = the varied value, one line per limiter.
//! Two or more: a heatmap per limiter over the first two paths, the later
//! ones fixed at their first value, of `--metric`, else of the first
//! requirement's metric, else `rejected_share`.

use std::fs;
use std::path::Path;

use anyhow::Context;
use rayon::prelude::*;

use super::heatmap;
use super::line;
use super::manifest::Manifest;
use super::recommend::{self, Choice, Criteria};
use super::recommended;
use super::table::{Metric, SweepTable};
use super::CSV;
use crate::report::charts::style;

pub(crate) const RECOMMENDATION: &str = crate::rundir::RECOMMENDATION_MD;
pub const SUMMARY: &str = crate::rundir::SUMMARY_MD;

/// The metrics that decide a limit, drawn as lines when one path varies.
pub(crate) const LINE_METRICS: &[(&str, &str)] = &[
    (
        "rejected_share",
        "the share of attempts rejected: rejected / attempts",
    ),
    (
        "collateral_share",
        "of the rejected attempts, the share that would have passed had their client had a key of its own",
    ),
    (
        "peak_over_limit",
        "the most one key got through in any window, over the limit: peak_in_window / limit; above 1 the policy was broken",
    ),
    (
        "delay_p99_ms",
        "the 99th percentile of delays, in ms (shapers only)",
    ),
    (
        "retry_amplification",
        "attempts per logical request: how much retries multiplied the load",
    ),
    (
        "state_bytes_per_key_mean",
        "the mean bytes of state per key, over keys and time",
    ),
];

/// What a whole sweep's directory gets beside its tables.
#[derive(Debug, Clone, Copy)]
pub struct Drawn {
    /// The PNG charts.
    pub plots: bool,
    /// `report.html`.
    pub html: bool,
}

/// The default metric of the heatmaps.
pub(crate) const DEFAULT_METRIC: &str = "rejected_share";

/// Draws everything into `dir`, which holds `sweep.csv` (the charts and
/// `report.html` as `drawn` asks); returns the recommendation text when
/// there is one.
pub fn render_dir(dir: &Path, m: &Manifest, drawn: Drawn) -> anyhow::Result<Option<String>> {
    let t = SweepTable::load(&dir.join(CSV), &m.rows)?;
    let criteria = if m.goal.is_empty() {
        None
    } else {
        Some(Criteria::parse(&m.goal, &t.columns)?)
    };
    let recommendation = criteria
        .as_ref()
        .map(|c| recommend::render(&t, &m.grid, c, &m.scenario));
    // docs/semantics.md §7: the scenario at the recommended points, or why not.
    let recommendation = match (recommendation, criteria.as_ref()) {
        (Some(mut text), Some(c)) => {
            match recommended::render(&t, m, c, dir) {
                Ok(toml) => {
                    fs::write(dir.join(recommended::FILE), toml)
                        .with_context(|| format!("cannot write {}", recommended::FILE))?;
                    let shipped = m.scenario_file.is_none()
                        && crate::builtin::find(&m.scenario).is_some_and(|b| !b.files.is_empty());
                    text.push_str(&if shipped {
                        format!(
                            "\n[{0}]({0}) is the scenario at these points. It reads trace files that ship inside ratesim: `ratesim init {1}` writes them; put {0} beside them and `ratesim run {0}`.\n",
                            recommended::FILE,
                            m.scenario
                        )
                    } else {
                        format!(
                            "\n[{0}]({0}) is the scenario at these points: `ratesim run {0}` runs it as is.\n",
                            recommended::FILE
                        )
                    });
                }
                Err(why) => {
                    text.push_str(&format!("\n{} is not written: {why}.\n", recommended::FILE))
                }
            }
            fs::write(dir.join(RECOMMENDATION), &text)
                .with_context(|| format!("cannot write {RECOMMENDATION}"))?;
            Some(text)
        }
        (r, _) => r,
    };
    let mut md = format!("# {} — ratesim sweep\n\n", m.scenario);
    md.push_str(&format!(
        "{} point{} × {} limiter{} ({} rows in `{CSV}`). Varied:\n\n",
        m.points,
        if m.points == 1 { "" } else { "s" },
        t.limiters().len(),
        if t.limiters().len() == 1 { "" } else { "s" },
        t.rows.len()
    ));
    for a in &m.grid.axes {
        md.push_str(&format!("- `{}`: {}\n", a.path, a.values.join(", ")));
    }
    if !m.set.is_empty() {
        md.push_str(&format!(
            "\nAt every point: {}\n",
            m.set
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    md.push('\n');
    if recommendation.is_some() {
        md.push_str(&format!(
            "The recommendation per limiter is in [{RECOMMENDATION}]({RECOMMENDATION}).\n\n"
        ));
    }

    if drawn.plots {
        style::ensure_fonts()?;
        let (charts, flat) = if m.grid.axes.len() == 1 {
            line_charts(&t, m, criteria.as_ref(), dir)?
        } else {
            (heatmaps(&t, m, criteria.as_ref(), dir)?, Vec::new())
        };
        for (file, caption) in charts {
            md.push_str(&format!("![{file}]({file})\n\n{caption}\n\n"));
        }
        if !flat.is_empty() {
            md.push_str(&format!(
                "Not drawn, being 0 at every point for every limiter: {}.\n\n",
                flat.join(", ")
            ));
        }
    }
    fs::write(dir.join(SUMMARY), &md).with_context(|| format!("cannot write {SUMMARY}"))?;
    if drawn.html {
        super::page::write(dir, m, &md, recommendation.as_deref())?;
    }
    Ok(recommendation)
}

/// Charts drawn: each file with its caption.
type Charts = Vec<(String, String)>;

/// The line charts, and the metrics not drawn (0 everywhere).
fn line_charts(
    t: &SweepTable,
    m: &Manifest,
    criteria: Option<&Criteria>,
    dir: &Path,
) -> anyhow::Result<(Charts, Vec<String>)> {
    // The deciding metrics, then every required metric not among them.
    let mut metrics: Vec<(Metric, String)> = LINE_METRICS
        .iter()
        .filter_map(|(name, about)| {
            Some((Metric::parse(name, &t.columns, "").ok()?, about.to_string()))
        })
        .collect();
    for q in criteria.map(|c| c.require.as_slice()).unwrap_or_default() {
        if !metrics.iter().any(|(m, _)| *m == q.metric) {
            metrics.push((q.metric.clone(), format!("required: {}", q.text)));
        }
    }
    let chosen = chosen_points(t, m, criteria);
    let mut series: Vec<line::Lines> = Vec::new();
    let mut flat: Vec<String> = Vec::new();
    for (metric, about) in &metrics {
        let thresholds = criteria
            .map(|c| c.require.as_slice())
            .unwrap_or_default()
            .iter()
            .filter(|q| q.metric == *metric)
            .map(|q| (q.bound, q.text.clone()))
            .collect();
        match line::line_series(t, &m.grid, metric, about, thresholds, &chosen) {
            Some(s) => series.push(s),
            None => flat.push(format!("`{}`", metric.name())),
        }
    }
    // Two metrics whose names make one file name (`x[a.b]`, `x[a_b]`):
    // the later gets `-2`, `-3`, …
    let mut files: Vec<String> = Vec::new();
    for s in &series {
        let base = crate::rundir::sweep_line_png(&s.metric);
        let mut file = base.clone();
        let mut k = 2;
        while files.contains(&file) {
            file = format!("{}-{k}.png", base.trim_end_matches(".png"));
            k += 1;
        }
        files.push(file);
    }
    let drawn: Vec<(String, String)> = series
        .par_iter()
        .zip(&files)
        .map(|(s, file)| {
            let file = file.clone();
            line::draw_line(&m.scenario, s, &dir.join(&file))
                .with_context(|| format!("cannot draw {file}"))?;
            Ok((file, line::caption(s)))
        })
        .collect::<anyhow::Result<_>>()?;
    Ok((drawn, flat))
}

/// Each limiter's recommended point, in `t.limiters()` order (none for a
/// chain's member, which is not recommended apart from its chain).
/// Nor for a limiter that no axis can change, which has nothing chosen.
fn chosen_points(t: &SweepTable, m: &Manifest, criteria: Option<&Criteria>) -> Vec<Option<usize>> {
    t.limiters()
        .iter()
        .map(|l| {
            let own = recommend::axes_of(t, &m.grid, l);
            match criteria.map(|c| recommend::choose(t, &c.own(&m.grid, &own).0, l)) {
                Some(Choice::Best(r)) if t.chain_of(l).is_none() && own.contains(&true) => {
                    Some(t.point_of[r])
                }
                _ => None,
            }
        })
        .collect()
}

fn heatmaps(
    t: &SweepTable,
    m: &Manifest,
    criteria: Option<&Criteria>,
    dir: &Path,
) -> anyhow::Result<Vec<(String, String)>> {
    // The decisive metric: `--metric`, else the first requirement's.
    let metric = match (&m.metric, criteria.and_then(|c| c.require.first())) {
        (Some(name), _) => Metric::parse(name, &t.columns, "--metric")?,
        (None, Some(q)) => q.metric.clone(),
        (None, None) => Metric::parse(DEFAULT_METRIC, &t.columns, "--metric")?,
    };
    let chosen = chosen_points(t, m, criteria);
    // Each row against the criteria as they bear on its own limiter.
    let own: Vec<(String, Criteria)> = match criteria {
        Some(c) => t
            .limiters()
            .into_iter()
            .map(|l| {
                let mine = c.own(&m.grid, &recommend::axes_of(t, &m.grid, &l)).0;
                (l, mine)
            })
            .collect(),
        None => Vec::new(),
    };
    let limiter = t.column("limiter");
    let meets = |r: usize| {
        let name = limiter.and_then(|i| t.rows[r].get(i));
        own.iter()
            .find(|(l, _)| Some(l) == name)
            .is_some_and(|(_, c)| recommend::qualifies(t, c, r))
    };
    let series = heatmap::heat_series(
        t,
        &m.grid,
        &metric,
        &chosen,
        criteria.map(|_| &meets as &dyn Fn(usize) -> bool),
    );
    series
        .par_iter()
        .enumerate()
        .map(|(i, s)| {
            let file = crate::rundir::sweep_heatmap_png(i);
            heatmap::draw_heatmap(&m.scenario, s, &dir.join(&file))
                .with_context(|| format!("cannot draw {file}"))?;
            Ok((file, heatmap::caption(s, &m.grid)))
        })
        .collect()
}
