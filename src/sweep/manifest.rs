//! `sweep.json`: what a sweep directory holds — the scenario (its name, its
//! text and a hash of it, and where its file was), the `--set` overrides, the grid, the shard, the
//! recommendation flags, and which points `sweep.csv` has rows for. `sweep
//! merge` checks shards against each other with it; the charts,
//! `recommendation.md` and `summary.md` are drawn from it and `sweep.csv`
//! alone.

use std::path::{Component, Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::grid::{Grid, Shard};
use super::recommend::Goal;
use crate::error::InputError;

pub const FILE: &str = crate::rundir::SWEEP_JSON;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The ratesim version that wrote it.
    pub ratesim: String,
    /// The scenario's name.
    pub scenario: String,
    /// FNV-1a (64-bit) of the scenario's TOML text, in hex.
    pub scenario_hash: String,
    /// The scenario's TOML text, for `recommended.toml`.
    #[serde(default)]
    pub scenario_text: String,
    /// The scenario file's path from the sweep directory (`../s.toml`), so
    /// that `recommended.toml` finds its traces; none for a built-in. A
    /// relative path keeps `sweep.json` the same wherever the two are, as
    /// long as they lie the same way to each other.
    #[serde(default)]
    pub scenario_file: Option<String>,
    /// `--set PATH=VALUE` applied at every point, in order.
    pub set: Vec<String>,
    pub grid: Grid,
    /// Points in the whole grid.
    pub points: u64,
    pub shard: Shard,
    pub goal: Goal,
    /// `--metric`, if given.
    pub metric: Option<String>,
    /// The points `sweep.csv` holds, in its order, each with its number of
    /// rows (one per limiter).
    pub rows: Vec<(usize, usize)>,
}

impl Manifest {
    pub fn write(&self, dir: &Path) -> anyhow::Result<()> {
        let mut text = serde_json::to_string_pretty(self)?;
        text.push('\n');
        std::fs::write(dir.join(FILE), text).with_context(|| format!("cannot write {FILE}"))
    }

    /// Reads `dir/sweep.json`; a missing or foreign file is bad input.
    pub fn read(dir: &Path) -> anyhow::Result<Manifest> {
        let path = dir.join(FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            InputError::new(format!(
                "{}: not a sweep directory ({FILE}: {e})",
                dir.display()
            ))
        })?;
        serde_json::from_str(&text).map_err(|e| {
            InputError::new(format!(
                "{}: {FILE} is not one ratesim sweep wrote: {e}",
                dir.display()
            ))
            .into()
        })
    }

    /// Why `self` and `other` are not shards of one sweep, if they are not.
    pub fn mismatch(&self, other: &Manifest) -> Option<String> {
        let flags = |goal: &super::recommend::Goal, metric: &Option<String>| match metric {
            Some(m) => format!("{} --metric {m}", goal.shown()),
            None => goal.shown(),
        };
        let differ = |what: &str, a: String, b: String| Some(format!("{what} differ ({a} vs {b})"));
        if self.scenario != other.scenario || self.scenario_hash != other.scenario_hash {
            return differ(
                "their scenarios",
                format!("{} {}", self.scenario, self.scenario_hash),
                format!("{} {}", other.scenario, other.scenario_hash),
            );
        }
        if self.set != other.set {
            let show = |set: &[String]| match set.is_empty() {
                true => "none".to_string(),
                false => set
                    .iter()
                    .map(|s| format!("--set {s}"))
                    .collect::<Vec<_>>()
                    .join(" "),
            };
            return differ("their --set overrides", show(&self.set), show(&other.set));
        }
        if self.grid != other.grid || self.points != other.points {
            let show = |g: &Grid| {
                g.axes
                    .iter()
                    .map(|a| a.shown())
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            return differ("their grids", show(&self.grid), show(&other.grid));
        }
        if self.shard.n != other.shard.n {
            return differ(
                "their shard counts",
                self.shard.to_string(),
                other.shard.to_string(),
            );
        }
        if self.goal != other.goal || self.metric != other.metric {
            return differ(
                "their --require/--minimize/--maximize/--metric",
                flags(&self.goal, &self.metric),
                flags(&other.goal, &other.metric),
            );
        }
        if self.ratesim != other.ratesim {
            return differ(
                "their ratesim versions",
                self.ratesim.clone(),
                other.ratesim.clone(),
            );
        }
        None
    }
}

/// `path` as an absolute path without `.` or `..`: canonical when it
/// exists, else its parent's canonical path and its name (a sweep
/// directory not made yet).
pub(crate) fn absolute(path: &Path) -> std::io::Result<PathBuf> {
    if let Ok(p) = std::fs::canonicalize(path) {
        return Ok(p);
    }
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "a path without a name")
    })?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    Ok(std::fs::canonicalize(parent)?.join(name))
}

/// The path of `to` from the directory `from`, both absolute and
/// canonical: `../a/s.toml` from `/x/out` to `/x/a/s.toml`.
pub(crate) fn relative(from: &Path, to: &Path) -> PathBuf {
    let (f, t): (Vec<Component>, Vec<Component>) =
        (from.components().collect(), to.components().collect());
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..f.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c);
    }
    out
}

/// FNV-1a, 64-bit, in hex: a stable fingerprint of a scenario's text.
pub(crate) fn fingerprint(text: &str) -> String {
    format!("{:016x}", crate::deploy::fnv1a(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_climb_to_the_common_directory() {
        let r = |a: &str, b: &str| relative(Path::new(a), Path::new(b));
        assert_eq!(r("/x/out", "/x/a/s.toml"), PathBuf::from("../a/s.toml"));
        assert_eq!(r("/x", "/x/s.toml"), PathBuf::from("s.toml"));
        assert_eq!(r("/x/y/z", "/s.toml"), PathBuf::from("../../../s.toml"));
    }

    #[test]
    fn the_fingerprint_is_fnv1a() {
        assert_eq!(fingerprint(""), "cbf29ce484222325");
        assert_eq!(fingerprint("a"), "af63dc4c8601ec8c");
    }
}
