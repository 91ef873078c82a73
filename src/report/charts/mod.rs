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

use std::fs;
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
    state::CHART,
    delay::CHART,
];

/// Renders every chart of `data` into `dir`. A chart with nothing to show
/// writes no file (and removes one left by an earlier rendering). Returns
/// the charts written, in [`CHARTS`] order.
pub fn render_all(data: &RunData, dir: &Path) -> anyhow::Result<Vec<&'static Chart>> {
    style::ensure_fonts()?;
    let written: Vec<bool> = CHARTS
        .par_iter()
        .map(|chart| {
            let path = dir.join(chart.file);
            let wrote = (chart.render)(data, &path)
                .with_context(|| format!("cannot draw {}", path.display()))?;
            if !wrote && path.exists() {
                fs::remove_file(&path)
                    .with_context(|| format!("cannot remove the stale {}", path.display()))?;
            }
            Ok(wrote)
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(CHARTS
        .iter()
        .zip(written)
        .filter(|(_, w)| *w)
        .map(|(c, _)| c)
        .collect())
}

/// Loads the run directory `dir` and writes its charts (unless `plots` is
/// false) and `summary.md`. `ratesim run` calls this after writing the CSV
/// and JSON files; `ratesim plot` calls it alone.
/// Returns the run and the charts written.
pub fn render_dir(dir: &Path, plots: bool) -> anyhow::Result<(RunData, Vec<&'static Chart>)> {
    let data = RunData::load(dir)?;
    let written = if plots {
        render_all(&data, dir)?
    } else {
        Vec::new()
    };
    let md = super::markdown::render(&data, dir)?;
    let path = dir.join(super::markdown::FILE);
    fs::write(&path, md).with_context(|| format!("cannot write {}", path.display()))?;
    Ok((data, written))
}

/// The chart registered as `file`.
pub fn chart(file: &str) -> Option<&'static Chart> {
    CHARTS.iter().find(|c| c.file == file)
}
