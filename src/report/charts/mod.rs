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
use std::path::{Path, PathBuf};

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

/// The most limiters a chart draws: past that, panels and bars would be
/// too thin to read (and drawing would take ever longer). A run with more
/// draws the first ones and says so in every chart's title.
pub const MAX_CHARTED: usize = 20;

/// Renders every chart of `data` into `dir`, which should hold no chart
/// yet. A chart with nothing to show writes no file. Returns the charts
/// written, in [`CHARTS`] order.
pub fn render_all(data: &RunData, dir: &Path) -> anyhow::Result<Vec<&'static Chart>> {
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

/// Loads the run directory `dir` and writes its charts (unless `plots` is
/// false) and `summary.md`. `ratesim run` calls this after writing the CSV
/// and JSON files; `ratesim plot` calls it alone.
///
/// Everything is drawn into a temporary directory beside `dir` first and
/// moved into place only once all of it succeeded: a failure (or a crash)
/// leaves `dir`'s existing charts and `summary.md` as they were. With
/// `plots`, a chart that has nothing to show this time has its old file
/// removed. Returns the run and the charts written.
pub fn render_dir(dir: &Path, plots: bool) -> anyhow::Result<(RunData, Vec<&'static Chart>)> {
    let data = RunData::load(dir)?;
    let stage = Stage::new(dir)?;
    let written = if plots {
        render_all(&data, stage.path())?
    } else {
        Vec::new()
    };
    let md = super::markdown::render(&data, dir, plots.then_some(&written[..]))?;
    let md_path = stage.path().join(super::markdown::FILE);
    fs::write(&md_path, md).with_context(|| format!("cannot write {}", md_path.display()))?;
    let mut files: Vec<&str> = written.iter().map(|c| c.file).collect();
    files.push(super::markdown::FILE);
    let stale: Vec<&str> = if plots {
        CHARTS
            .iter()
            .filter(|c| !written.iter().any(|w| w.file == c.file))
            .map(|c| c.file)
            .collect()
    } else {
        Vec::new()
    };
    stage.commit(dir, &files, &stale)?;
    Ok((data, written))
}

/// A temporary directory beside a run directory, removed when dropped.
struct Stage {
    path: PathBuf,
}

impl Stage {
    fn new(dir: &Path) -> anyhow::Result<Stage> {
        let abs = dir
            .canonicalize()
            .with_context(|| format!("cannot find {}", dir.display()))?;
        let (Some(parent), Some(name)) = (abs.parent(), abs.file_name()) else {
            anyhow::bail!("{}: charts need a run directory below /", dir.display());
        };
        let path = parent.join(format!(
            ".{}.charts-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir(&path)
            .with_context(|| format!("cannot create {} to draw in", path.display()))?;
        Ok(Stage { path })
    }

    fn path(&self) -> &Path {
        &self.path
    }

    /// Moves `files` from the stage into `dir` (replacing what is there),
    /// then removes `stale` files from `dir`.
    fn commit(self, dir: &Path, files: &[&str], stale: &[&str]) -> anyhow::Result<()> {
        for f in files {
            let (from, to) = (self.path.join(f), dir.join(f));
            fs::rename(&from, &to)
                .with_context(|| format!("cannot move {} into place", to.display()))?;
        }
        for f in stale {
            let path = dir.join(f);
            if path.exists() {
                fs::remove_file(&path)
                    .with_context(|| format!("cannot remove the stale {}", path.display()))?;
            }
        }
        Ok(())
    }
}

impl Drop for Stage {
    /// Whatever ends the drawing — done, an error, a panic unwinding —
    /// removes the temporary directory.
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// The chart registered as `file`.
pub fn chart(file: &str) -> Option<&'static Chart> {
    CHARTS.iter().find(|c| c.file == file)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Regression (robustness issue item 9): `plot` drew straight into the
    // run directory, so a failure half-way left half the charts redrawn.
    #[test]
    fn a_stage_dropped_before_its_commit_leaves_the_directory_as_it_was() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("timeline.png"), "old").unwrap();
        let stage = Stage::new(&dir).unwrap();
        let staged = stage.path().to_path_buf();
        fs::write(staged.join("timeline.png"), "new").unwrap();
        drop(stage);
        assert_eq!(fs::read_to_string(dir.join("timeline.png")).unwrap(), "old");
        assert!(!staged.exists(), "the stage is removed");

        let stage = Stage::new(&dir).unwrap();
        fs::write(stage.path().join("timeline.png"), "new").unwrap();
        fs::write(dir.join("delay.png"), "stale").unwrap();
        stage
            .commit(&dir, &["timeline.png"], &["delay.png", "peak.png"])
            .unwrap();
        assert_eq!(fs::read_to_string(dir.join("timeline.png")).unwrap(), "new");
        assert!(!dir.join("delay.png").exists());
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 1);
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
