//! PNG charts of a run, for design documents and teaching.
//!
//! Every chart is one file here and follows one shape: a pure
//! `*_series(&RunData)` that computes what is drawn (unit-tested without
//! drawing), and a `draw_*()` that turns it into pixels and returns
//! `Result` — no plotters call is unwrapped. Charts read the run directory
//! through [`data::RunData`] and nothing else: they never re-run the
//! simulation, so `ratesim plot RUN_DIR` reproduces exactly what `ratesim run`
//! wrote.
//!
//! To add a chart: write `src/report/charts/<name>.rs` with a `CHART`
//! constant, and list it in [`CHARTS`].
//!
//! Every chart carries the scenario's name in its title, labelled axes with
//! units, a legend, and the same colour for a limiter in every chart of a
//! run ([`style::limiter_color`], by the limiter's index).

pub mod backend;
pub mod clients;
pub mod data;
pub mod delay;
pub mod deployment;
pub mod outcomes;
pub mod peak;
pub mod state;
pub mod style;
pub mod timeline;
pub mod zoom;

use std::path::Path;

use anyhow::Context;
use rayon::prelude::*;

pub use data::RunData;

/// One chart: the file it writes, its pixel size, what to read from it, and
/// how to render it. `render` returns `Ok(false)` when the chart has nothing
/// to show for this run (then no file is written).
pub struct Chart {
    pub file: &'static str,
    pub size: (u32, u32),
    /// One line for the README: what to read from it, in general.
    pub about: &'static str,
    /// What `summary.md` says under it: generated from the run's own data,
    /// so it mentions only what the run holds and quotes its numbers.
    pub caption: fn(&RunData) -> String,
    pub render: fn(&RunData, &Path) -> anyhow::Result<bool>,
}

/// Every chart `ratesim run` and `ratesim plot` write, in reading order.
pub const CHARTS: &[Chart] = &[
    timeline::CHART,
    peak::CHART,
    outcomes::CHART,
    clients::CHART,
    deployment::CHART,
    backend::CHART,
    state::CHART,
    delay::CHART,
];

/// The most limiters a chart draws: past that, panels and bars would be
/// too thin to read (and drawing would take ever longer). A run with more
/// draws the first ones and says so in every chart's title.
pub(crate) const MAX_CHARTED: usize = 20;

/// Renders every chart of `data` into `dir`, which should hold no chart
/// yet. A chart with nothing to show writes no file. Returns the charts
/// written, in [`CHARTS`] order.
pub(crate) fn render_all(data: &RunData, dir: &Path) -> anyhow::Result<Vec<&'static Chart>> {
    style::ensure_fonts()?;
    let shown = shown(data);
    let written: Vec<bool> = CHARTS
        .par_iter()
        .map(|chart| {
            let path = dir.join(chart.file);
            (chart.render)(&shown, &path).with_context(|| format!("cannot draw {}", path.display()))
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(CHARTS
        .iter()
        .zip(written)
        .filter(|(_, w)| *w)
        .map(|(c, _)| c)
        .collect())
}

/// `data` as the charts show it: at most [`MAX_CHARTED`] limiters (the
/// title says how many there were), every name cut to a length a chart
/// can hold, and every character the embedded font lacks drawn as `?`
/// (`summary.md` says which).
pub fn shown(data: &RunData) -> RunData {
    let mut d = data.clone();
    if d.limiters.len() > MAX_CHARTED {
        let all = d.limiters.len();
        d.limiters.truncate(MAX_CHARTED);
        d.name = format!(
            "{} (first {MAX_CHARTED} of {all} limiters)",
            cut(&d.name, 60)
        );
    } else {
        d.name = cut(&d.name, 60);
    }
    for l in &mut d.limiters {
        l.name = cut(&l.name, 40);
        l.algorithm = cut(&l.algorithm, 40);
        l.key_by = cut(&l.key_by, 20);
        l.peak_key = l.peak_key.as_deref().map(|k| cut(k, 40));
    }
    d
}

/// `s` cut to `n` characters, with `…` when it was longer, and drawable.
fn cut(s: &str, n: usize) -> String {
    let s = style::drawable(s);
    if s.chars().count() <= n {
        s
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

/// The chart registered as `file`.
pub fn chart(file: &str) -> Option<&'static Chart> {
    CHARTS.iter().find(|c| c.file == file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_chart_is_named_in_the_run_directory_contract() {
        for c in CHARTS {
            assert!(crate::rundir::RUN_CHARTS.contains(&c.file), "{}", c.file);
        }
    }

    #[test]
    fn the_charts_show_at_most_max_charted_limiters_and_say_so() {
        let names: Vec<String> = (0..30).map(|i| format!("l{i}")).collect();
        let limiters: Vec<(&str, u64)> = names.iter().map(|n| (n.as_str(), 1)).collect();
        let mut d = data::tests_support::run_data(&limiters, 1);
        d.limiters[0].name = "x".repeat(500);
        let s = shown(&d);
        assert_eq!(s.limiters.len(), MAX_CHARTED);
        assert!(s.name.contains("first 20 of 30 limiters"), "{}", s.name);
        assert_eq!(s.limiters[0].name.chars().count(), 40);
    }
}
