//! Drawing a run directory: its charts, `summary.md` and `report.html`,
//! from its files alone — after `ratesim run` wrote them, or later for
//! `ratesim plot`.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::charts::{render_all, Chart, RunData, CHARTS};
use super::html;
use super::markdown;
use crate::error::InputError;

/// Loads the run directory `dir` and writes its charts (unless `plots` is
/// false), `summary.md`, and `report.html` (when `report`). `ratesim run`
/// calls this after writing the CSV and JSON files; `ratesim plot` calls
/// it alone.
///
/// Everything is drawn into a temporary directory beside `dir` first and
/// moved into place only once all of it succeeded: a failure (or a crash)
/// leaves `dir`'s existing charts and `summary.md` as they were. With
/// `plots`, a chart that has nothing to show this time has its old file
/// removed. Returns the run (its time series read only for charts, a
/// report, or the caption of a chart already in `dir`) and the charts
/// written.
pub fn render_dir(
    dir: &Path,
    plots: bool,
    report: bool,
) -> anyhow::Result<(RunData, Vec<&'static Chart>)> {
    // `summary.md` alone reads no time series unless it captions a chart
    // in `dir`: `run --no-plots --no-html` of the nginx bench log read
    // its 2 000 rows back for nothing: the run's last stretch, on one
    // core, took 7.46 ms under strace instead of 9.02 (medians of 15
    // rounds).
    let series = plots || report || CHARTS.iter().any(|c| dir.join(c.file).is_file());
    let data = match series {
        true => RunData::load(dir)?,
        false => RunData::load_summary(dir)?,
    };
    check_unmarked(dir)?;
    check_regular(dir)?;
    check_listed(dir)?;
    let stage = Stage::new(dir)?;
    let written = if plots {
        render_all(&data, stage.path())?
    } else {
        Vec::new()
    };
    let md = markdown::render(&data, dir, plots.then_some(&written[..]))?;
    let md_path = stage.path().join(markdown::FILE);
    fs::write(&md_path, md).with_context(|| format!("cannot write {}", md_path.display()))?;
    let mut files: Vec<&str> = written.iter().map(|c| c.file).collect();
    files.push(markdown::FILE);
    if report {
        // Each image as it will be once committed: just drawn, or already
        // in `dir` (a chart not redrawn, `ratesim explain`'s close-ups).
        let images = markdown::images(&data, dir, plots.then_some(&written[..]))?
            .into_iter()
            .map(|(file, about)| {
                let drawn = written.iter().any(|c| c.file == file);
                let path = if drawn { stage.path() } else { dir }.join(&file);
                let png = fs::read(&path)
                    .with_context(|| format!("cannot read {} for the report", path.display()))?;
                Ok(html::run::Image { file, about, png })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let page = html::run::render(&data, dir, &images);
        let path = stage.path().join(html::run::FILE);
        fs::write(&path, page).with_context(|| format!("cannot write {}", path.display()))?;
        files.push(html::run::FILE);
    }
    let stale: Vec<&str> = if plots {
        CHARTS
            .iter()
            .filter(|c| !written.iter().any(|w| w.file == c.file))
            .map(|c| c.file)
            .collect()
    } else {
        Vec::new()
    };
    // Again, now: a file may have been put there while this one drew.
    check_listed(dir)?;
    // The marker lists the new bytes beside the old before they move in,
    // and only the new once they are in (a kill between leaves either
    // ratesim's); a directory without a list has none to keep.
    let marker = dir.join(crate::rundir::MARKER);
    crate::rundir::marker::expect(dir, stage.path(), &files)
        .with_context(|| format!("cannot write {}", marker.display()))?;
    stage.commit(dir, &files, &stale)?;
    let drawn: Vec<&str> = files.iter().chain(&stale).copied().collect();
    crate::rundir::marker::restamp(dir, &drawn)
        .with_context(|| format!("cannot write {}", marker.display()))?;
    Ok((data, written))
}

/// In a directory that does not carry ratesim's marker (the staging of
/// a run directory writes it), refuses to draw over any file of the names
/// [`render_dir`] writes or removes — `summary.md`, `report.html` and the charts — since
/// it may be someone's own; a copy of a run's data alone may be drawn.
/// (`ratesim run` draws into its staging directory, which holds none yet.)
fn check_unmarked(dir: &Path) -> Result<(), InputError> {
    // A marker that is a link or a directory is none.
    if fs::symlink_metadata(dir.join(crate::rundir::MARKER)).is_ok_and(|m| m.is_file()) {
        return Ok(());
    }
    let mut taken: Vec<String> = fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| {
                    n == markdown::FILE
                        || n == html::run::FILE
                        || CHARTS.iter().any(|c| c.file == n)
                })
                .collect()
        })
        .unwrap_or_default();
    if taken.is_empty() {
        return Ok(());
    }
    taken.sort();
    Err(InputError::new(format!(
        "{}: not a ratesim run directory (no {} file), and it already holds {}; plot overwrites \
         those only in a directory `ratesim run` wrote — move them away, or plot a copy of the data",
        dir.display(),
        crate::rundir::MARKER,
        taken.join(", ")
    )))
}

/// In a directory carrying ratesim's marker, refuses to draw over any
/// file of the names [`render_dir`] writes or removes that the marker does
/// not list as ratesim wrote it: a `summary.md` of someone's saved into a
/// run directory, or one edited since (a staging directory, which `ratesim
/// run` draws into, holds none of them yet).
fn check_listed(dir: &Path) -> Result<(), InputError> {
    let marker_path = dir.join(crate::rundir::MARKER);
    let marker = match crate::rundir::marker::Marker::read(dir) {
        Ok(Some(m)) => m,
        // No marker (or a link): `check_unmarked`'s rule.
        Ok(None) => return Ok(()),
        Err(e) => {
            return Err(InputError::new(format!(
                "{}: cannot be read ({e}), so ratesim cannot tell its files from yours; \
                 ratesim never overwrites a file it did not write",
                marker_path.display()
            )))
        }
    };
    let mut theirs: Vec<&str> = drawn_names()
        .filter(|n| fs::symlink_metadata(dir.join(n)).is_ok() && !marker.wrote(dir, n))
        .collect();
    if theirs.is_empty() {
        return Ok(());
    }
    theirs.sort();
    let (one, names) = (theirs.len() == 1, theirs.join(", "));
    let why = if marker.lists_files() {
        format!(
            "{names} {} not written by ratesim, or {} changed since ({} lists the files ratesim \
             wrote, with their sizes and hashes)",
            if one { "was" } else { "were" },
            if one { "was" } else { "were" },
            crate::rundir::MARKER,
        )
    } else {
        format!(
            "its {} is an earlier ratesim's, which lists no files, so ratesim cannot tell {names} \
             from yours",
            crate::rundir::MARKER
        )
    };
    Err(InputError::new(format!(
        "{}: {why}; ratesim never overwrites a file it did not write — move {} away",
        dir.display(),
        if one { "it" } else { "them" },
    )))
}

/// The names [`render_dir`] writes or removes in a run directory.
fn drawn_names() -> impl Iterator<Item = &'static str> {
    [markdown::FILE, html::run::FILE]
        .into_iter()
        .chain(CHARTS.iter().map(|c| c.file))
}

/// Refuses to draw where a name [`render_dir`] writes or removes is
/// anything but a regular file — a link, a directory —, which ratesim
/// never makes: replacing it would delete what someone made (as
/// `ratesim run` refuses such a run directory).
fn check_regular(dir: &Path) -> Result<(), InputError> {
    let mut odd: Vec<String> = drawn_names()
        .filter(|n| fs::symlink_metadata(dir.join(n)).is_ok_and(|m| !m.is_file()))
        .map(str::to_string)
        .collect();
    if odd.is_empty() {
        return Ok(());
    }
    odd.sort();
    Err(InputError::new(format!(
        "{}: {} {} not a regular file (a link or a directory), which ratesim never writes; \
         plot replaces only the files it drew — move {} away",
        dir.display(),
        odd.join(", "),
        if odd.len() == 1 { "is" } else { "are" },
        if odd.len() == 1 { "it" } else { "them" },
    )))
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
        // One of this very name is an earlier drawing's of the same pid,
        // cut short: removed if it holds nothing but what is drawn.
        if fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            let ours = fs::read_dir(&path).is_ok_and(|entries| {
                entries.flatten().all(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    e.file_type().is_ok_and(|t| t.is_file()) && drawn_names().any(|n| n == name)
                })
            });
            if ours {
                for n in drawn_names() {
                    let _ = fs::remove_file(path.join(n));
                }
                let _ = fs::remove_dir(&path);
            }
        }
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
}
