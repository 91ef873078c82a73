//! `recommended.toml`: the scenario with each limiter at its recommended
//! point, runnable as is (docs/semantics.md §7).
//!
//! Built from `sweep.json` alone (the scenario's text, `--set`, the grid)
//! and the choices made over `sweep.csv`, so `sweep merge` writes the same
//! file. The scenario's table, with `--set` applied, takes:
//!
//! - each limiter's (or chain's) own axes at its recommended point;
//! - each shared axis (`defaults.*`, `traffic[…]`, `duration`, …) at the
//!   first recommended limiter's value;
//! - then, for every `[[limiter]]` that would not decide as at its own
//!   point (a shared `defaults.*` value another limiter was recommended,
//!   or one a limiter with no recommendation must not take), its resolved
//!   parameters written into its own table, so it no longer reads
//!   `[defaults]`.
//!
//! Shared axes other than `defaults.*` cannot differ per limiter: when the
//! recommended limiters disagree on one, the header says so. The `[sweep]`
//! table is left out (`ratesim run` would check its grid against limiters
//! that no longer read `[defaults]`), and a trace's relative `path` is
//! made relative to the sweep directory, where this file lies.

use std::collections::btree_map::{BTreeMap, Entry};
use std::path::Path;

use serde_json::Value as Json;
use toml::{Table, Value};

use super::manifest::Manifest;
use super::recommend::{self, Choice, Criteria};
use super::table::SweepTable;
use crate::builtin;
use crate::overrides::{self, Override};
use crate::scenario::echo::Params as _;
use crate::scenario::text::ScenarioFile;
use crate::scenario::{Origin, Scenario};

pub(crate) const FILE: &str = crate::rundir::RECOMMENDED_TOML;

/// Where a limiter's recommendation comes from.
struct Pick {
    name: String,
    /// The recommended point, when there is one.
    point: Option<usize>,
    /// Which axes are its own or shared (`recommend::axes_of`).
    own: Vec<bool>,
}

/// The text of `recommended.toml`, or why it cannot be written.
pub fn render(t: &SweepTable, m: &Manifest, c: &Criteria, dir: &Path) -> Result<String, String> {
    if m.scenario_text.is_empty() {
        return Err(format!(
            "this sweep's {} does not hold the scenario's text (written by an older ratesim)",
            super::manifest::FILE
        ));
    }
    let file = scenario_file(m, dir)?;
    let sets = overrides::parse_all(&m.set, "--set").map_err(|e| e.message().to_string())?;
    let mut table = file.table().map_err(|e| e.message().to_string())?;
    overrides::apply(&mut table, &sets).map_err(|e| e.message().to_string())?;
    let grid = &m.grid;

    // Each limiter and chain that answers clients, with its point.
    let picks: Vec<Pick> = t
        .limiters()
        .into_iter()
        .filter(|l| t.chain_of(l).is_none())
        .map(|l| {
            let own = recommend::axes_of(t, grid, &l);
            let point = match recommend::choose(t, &c.own(grid, &own).0, &l) {
                Choice::Best(r) if own.contains(&true) => Some(t.point_of[r]),
                _ => None,
            };
            Pick {
                name: l,
                point,
                own,
            }
        })
        .collect();

    if picks.iter().all(|p| p.point.is_none()) {
        return Err("no limiter has a recommended point".into());
    }

    // The value each axis takes, and what the header must say.
    let mut header: Vec<String> = Vec::new();
    let mut set: Vec<Override> = Vec::new();
    for (k, axis) in grid.axes.iter().enumerate() {
        let shared = picks.iter().all(|p| p.own[k]);
        let values: Vec<(&str, &str)> = picks
            .iter()
            .filter(|p| p.own[k])
            .filter_map(|p| Some((p.name.as_str(), grid.values(p.point?)[k])))
            .collect();
        let Some(&(_, first)) = values.first() else {
            continue;
        };
        set.push(axis.at(first));
        let differ = values.iter().any(|(_, v)| *v != first);
        // What else the header says of an axis whose values differ: a
        // shared one other than defaults.* (pinned per limiter) is the
        // first's; defaults.window is too, and, by docs/semantics.md §3,
        // peak_in_window, limit and overshoot are held against it, which a
        // limiter cannot carry for itself.
        let more = match axis.path.as_str() {
            "defaults.window" => Some(" Each limiter decides as at its point, but peak_in_window, limit and overshoot are measured over this file's window, so those columns differ from sweep.csv's for the others."),
            p if shared && !p.starts_with("defaults.") => Some(""),
            _ => None,
        };
        if let Some(more) = more.filter(|_| differ) {
            let listed: Vec<String> = values.iter().map(|(n, v)| format!("{n}: {v}")).collect();
            header.push(format!(
                "# {} differs between the recommendations ({}): this file has {first}, the first's.{more}",
                axis.path,
                listed.join(", "),
            ));
        }
    }
    overrides::apply(&mut table, &set).map_err(|e| e.message().to_string())?;

    // What every [[limiter]] must decide as: at its own (or its chain's)
    // point, else as in the scenario — each point's scenario read once.
    let mut at: BTreeMap<Option<usize>, Scenario> = BTreeMap::new();
    let written = file.scenario(&table).map_err(|e| e.message().to_string())?;
    let mut wants: Vec<(String, Json)> = Vec::new();
    for l in written.limiters.iter().filter(|l| l.chain.is_none()) {
        let governs = |p: &&Pick| {
            p.name == l.name
                || l.member_of
                    .is_some_and(|c| written.limiters[c].name == p.name)
        };
        let point = picks.iter().find(governs).and_then(|p| p.point);
        let scenario = match at.entry(point) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let mut o = sets.clone();
                if let Some(p) = point {
                    o.extend(grid.overrides(p));
                }
                let base = file.table().map_err(|e| e.message().to_string())?;
                e.insert(
                    file.with_table(base, &o)
                        .map_err(|e| e.message().to_string())?,
                )
            }
        };
        let want = scenario
            .limiters
            .iter()
            .find(|x| x.name == l.name)
            .ok_or_else(|| format!("limiter {} is not in every point", l.name))?
            .algorithm
            .params();
        wants.push((l.name.clone(), want));
    }
    let mut pinned: Vec<String> = Vec::new();
    let plain = written.limiters.iter().filter(|l| l.chain.is_none());
    for (i, (l, (_, want))) in plain.zip(&wants).enumerate() {
        if l.algorithm.params() != *want {
            pin(&mut table, i, want)?;
            pinned.push(l.name.clone());
        }
    }
    if !pinned.is_empty() {
        header.push(format!(
            "# {} {} [defaults]: {} parameters are written out.",
            pinned.join(", "),
            if pinned.len() == 1 {
                "no longer reads"
            } else {
                "no longer read"
            },
            if pinned.len() == 1 { "its" } else { "their" },
        ));
    }

    // A file that runs as is, checked: every limiter decides as at its point.
    table.remove("sweep");
    trace_paths_from(&mut table, m.scenario_file.as_deref());
    // Read as `dir/recommended.toml`, whose trace paths are from `dir`.
    let mut itself = file.clone();
    if let Origin::File(_) = itself.origin {
        itself.origin = Origin::File(dir.join(FILE));
    }
    let check = itself
        .scenario(&table)
        .map_err(|e| e.message().to_string())?;
    let plain = check.limiters.iter().filter(|l| l.chain.is_none());
    for (l, (name, want)) in plain.zip(&wants) {
        if l.name != *name || l.algorithm.params() != *want {
            return Err(format!(
                "limiter {name} cannot be written at its recommended point"
            ));
        }
    }

    let mut out = format!(
        "# recommended.toml — {} with each limiter at its recommended point\n# (ratesim sweep; see recommendation.md). Run it: ratesim run recommended.toml\n#\n",
        m.scenario
    );
    for p in &picks {
        out.push_str(&match p.point {
            Some(i) => format!(
                "# {}: {} (point {i})\n",
                p.name,
                grid.describe_only(i, &p.own)
            ),
            None => format!("# {}: nothing recommended; as in the scenario\n", p.name),
        });
    }
    for h in &header {
        out.push_str(h);
        out.push('\n');
    }
    out.push_str("# The [sweep] table is left out.\n");
    if let Origin::Builtin(b) = &file.origin {
        if !b.files.is_empty() {
            out.push_str(&format!(
                "# Its trace files ship inside ratesim: `ratesim init {}` writes them; put this file beside them.\n",
                b.name
            ));
        }
    }
    out.push('\n');
    out.push_str(&toml::to_string(&table).map_err(|e| e.to_string())?);
    Ok(out)
}

/// The scenario a manifest was swept from: its text, read from where it
/// lies from the sweep directory `dir` (a file, for trace paths; else the
/// built-in of its name).
fn scenario_file(m: &Manifest, dir: &Path) -> Result<ScenarioFile, String> {
    let origin = match &m.scenario_file {
        Some(rel) => Origin::File(dir.join(rel)),
        None => Origin::Builtin(
            builtin::find(&m.scenario)
                .ok_or_else(|| format!("no built-in scenario {}", m.scenario))?,
        ),
    };
    Ok(ScenarioFile {
        text: m.scenario_text.clone(),
        stem: m.scenario.clone(),
        place: m.scenario.clone(),
        origin,
    })
}

/// The fields of a `[[limiter]]` table that are not the algorithm's
/// parameters (README "Limiters").
const KEPT: &[&str] = &[
    "name",
    "algorithm",
    "implementation",
    "key_by",
    "traffic",
    "deployment",
];

/// Writes `params` (a limiter's resolved parameters) into the `i`-th
/// `[[limiter]]` table, in place of the parameters it gave.
fn pin(table: &mut Table, i: usize, params: &Json) -> Result<(), String> {
    let entry = table
        .get_mut("limiter")
        .and_then(Value::as_array_mut)
        .and_then(|a| a.get_mut(i))
        .and_then(Value::as_table_mut)
        .ok_or_else(|| format!("no [[limiter]] table {i}"))?;
    let Json::Object(fields) = params else {
        return Err("parameters that are not a table".into());
    };
    // Every parameter the table gave (an implementation's own names, such
    // as redis-cell's max_burst, among them) gives way to the resolved ones.
    entry.retain(|k, _| KEPT.contains(&k));
    for (k, v) in fields {
        let v = match v {
            Json::Bool(b) => Value::Boolean(*b),
            Json::String(s) => Value::String(s.clone()),
            Json::Number(n) => Value::Integer(
                n.as_i64()
                    .ok_or_else(|| format!("{k} = {n} is no integer"))?,
            ),
            other => return Err(format!("{k} = {other} cannot be written")),
        };
        entry.insert(k.clone(), v);
    }
    Ok(())
}

/// Makes every relative `[[traffic]]` `path` relative to the sweep
/// directory instead of the scenario file (`rel`, the scenario's path from
/// there), since a trace's path is read from the file that names it.
fn trace_paths_from(table: &mut Table, rel: Option<&str>) {
    let Some(base) = rel.and_then(|r| Path::new(r).parent()) else {
        return;
    };
    let Some(traffic) = table.get_mut("traffic").and_then(Value::as_array_mut) else {
        return;
    };
    for t in traffic.iter_mut().filter_map(Value::as_table_mut) {
        if let Some(Value::String(p)) = t.get("path") {
            if Path::new(p).is_relative() {
                let from_dir = base.join(p).display().to_string();
                t.insert("path".into(), Value::String(from_dir));
            }
        }
    }
}
