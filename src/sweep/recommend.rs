//! The recommendation: per limiter, the best point of the grid that meets
//! every requirement.
//!
//! `--require COLUMN<=X` / `COLUMN>=X` (repeatable) filter the points;
//! `--minimize COLUMN` or `--maximize COLUMN` order what is left, ties
//! going to the first point in sweep order (without either, the first
//! qualifying point wins). Columns are those of `sweep.csv` — the varied
//! paths included, so `--minimize defaults.limit` picks the smallest
//! limit — or a derived metric of [`super::table::DERIVED`]. For the
//! chosen point the report shows its numbers and, for each neighbour on
//! the grid, which requirement it broke; when no point qualifies, which
//! requirement came closest.

use serde::{Deserialize, Serialize};

use super::grid::Grid;
use super::table::{trim, Metric, SweepTable};
use crate::error::{quoted, InputError};

/// The recommendation flags, as given (kept in the manifest).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Goal {
    pub require: Vec<String>,
    pub minimize: Option<String>,
    pub maximize: Option<String>,
}

impl Goal {
    /// As the flags were written: `--require 'a<=1' --minimize b`, or
    /// `none`.
    pub fn shown(&self) -> String {
        let mut flags: Vec<String> = self
            .require
            .iter()
            .map(|r| format!("--require '{r}'"))
            .collect();
        flags.extend(self.minimize.iter().map(|m| format!("--minimize {m}")));
        flags.extend(self.maximize.iter().map(|m| format!("--maximize {m}")));
        match flags.is_empty() {
            true => "none".into(),
            false => flags.join(" "),
        }
    }

    /// Whether there is anything to recommend.
    pub fn is_empty(&self) -> bool {
        self.require.is_empty() && self.minimize.is_none() && self.maximize.is_none()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    AtMost,
    AtLeast,
}

/// One `COLUMN<=X` or `COLUMN>=X`.
#[derive(Debug, Clone, PartialEq)]
pub struct Requirement {
    pub metric: Metric,
    pub op: Op,
    pub bound: f64,
    /// As written, for messages.
    pub text: String,
}

impl Requirement {
    pub fn parse(text: &str, columns: &[String]) -> Result<Requirement, InputError> {
        let bad = |why: &str| InputError::new(format!("--require {}: {why}", quoted(text)));
        // The operator after the column: a source's name may hold `<=`
        // (`rejected_share[p<=q]<=0.5`).
        let from = text.rfind(']').map_or(0, |i| i + 1);
        let at = |op: &str| text[from..].find(op).map(|i| from + i);
        let (name, op, bound) = if let Some(i) = at("<=") {
            (&text[..i], Op::AtMost, &text[i + 2..])
        } else if let Some(i) = at(">=") {
            (&text[..i], Op::AtLeast, &text[i + 2..])
        } else {
            return Err(bad(
                "expected COLUMN<=X or COLUMN>=X, e.g. rejected_share<=0.001",
            ));
        };
        let metric = Metric::parse(name.trim(), columns, "--require")?;
        // A number, or a duration (its seconds) or a rate (per second),
        // read as the cells are.
        let written = bound.trim();
        let bound: f64 = written
            .parse()
            .ok()
            .or_else(|| super::table::quantity(written))
            .filter(|b: &f64| b.is_finite())
            .ok_or_else(|| {
                bad("X is not a number, a duration (500ms: its seconds) or a rate (5/1s: per second), e.g. rejected_share<=0.001")
            })?;
        let sign = if op == Op::AtMost { "<=" } else { ">=" };
        let shown = match written.parse::<f64>() {
            Ok(_) => bound.trim(),
            Err(_) => written.to_string(),
        };
        Ok(Requirement {
            text: format!("{}{sign}{shown}", metric.name()),
            metric,
            op,
            bound,
        })
    }

    pub fn met(&self, v: f64) -> bool {
        match self.op {
            Op::AtMost => v <= self.bound,
            Op::AtLeast => v >= self.bound,
        }
    }

    /// How far `v` is from meeting it, relative to the bound (0 if met).
    pub fn shortfall(&self, v: f64) -> f64 {
        let gap = match self.op {
            Op::AtMost => v - self.bound,
            Op::AtLeast => self.bound - v,
        };
        gap.max(0.0) / self.bound.abs().max(1e-12)
    }
}

trait Trim {
    fn trim(self) -> String;
}

impl Trim for f64 {
    fn trim(self) -> String {
        trim(self, 6)
    }
}

/// The goal checked against a sweep's columns.
#[derive(Debug, Clone)]
pub struct Criteria {
    pub require: Vec<Requirement>,
    /// The objective and whether larger is better.
    pub objective: Option<(Metric, bool)>,
}

impl Criteria {
    pub fn parse(goal: &Goal, columns: &[String]) -> Result<Criteria, InputError> {
        let require = goal
            .require
            .iter()
            .map(|r| Requirement::parse(r, columns))
            .collect::<Result<_, _>>()?;
        let objective = match (&goal.minimize, &goal.maximize) {
            (Some(_), Some(_)) => {
                return Err(InputError::new(
                    "--minimize and --maximize: give one of them",
                ))
            }
            (Some(c), None) => Some((Metric::parse(c, columns, "--minimize")?, false)),
            (None, Some(c)) => Some((Metric::parse(c, columns, "--maximize")?, true)),
            (None, None) => None,
        };
        Ok(Criteria { require, objective })
    }

    /// The criteria as they bear on a limiter whose rows only the axes
    /// `own` can change ([`axes_of`]): a requirement or the objective on
    /// another axis's column — another limiter's field — is left out,
    /// since every value of it gives this limiter the same rows
    /// (docs/semantics.md §7). Returns them, and the names left out.
    pub fn own(&self, grid: &Grid, own: &[bool]) -> (Criteria, Vec<String>) {
        let foreign = |m: &Metric| {
            grid.axes
                .iter()
                .zip(own)
                .any(|(a, &mine)| !mine && a.path == m.name())
        };
        let mut left_out: Vec<String> = Vec::new();
        let mut note = |m: &Metric| {
            if !left_out.iter().any(|n| n == m.name()) {
                left_out.push(m.name().to_string());
            }
        };
        let require = self
            .require
            .iter()
            .filter(|q| match foreign(&q.metric) {
                true => {
                    note(&q.metric);
                    false
                }
                false => true,
            })
            .cloned()
            .collect();
        let objective = match &self.objective {
            Some((m, _)) if foreign(m) => {
                note(m);
                None
            }
            o => o.clone(),
        };
        (Criteria { require, objective }, left_out)
    }

    fn describe(&self) -> String {
        let req = if self.require.is_empty() {
            "none".to_string()
        } else {
            self.require
                .iter()
                .map(|r| format!("`{}`", r.text))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let obj = match &self.objective {
            Some((m, true)) => format!("the most `{}`", m.name()),
            Some((m, false)) => format!("the least `{}`", m.name()),
            None => "the first qualifying point in sweep order".to_string(),
        };
        format!("Requirements: {req}. Among the points that meet them all: {obj} (ties: the first in sweep order).")
    }
}

/// What was chosen for one limiter.
#[derive(Debug, Clone, PartialEq)]
pub enum Choice {
    /// The row index of the chosen point.
    Best(usize),
    /// No point qualifies: the row closest to qualifying.
    None { closest: usize },
    /// The limiter has no rows.
    Empty,
}

/// The choice for limiter `name`: a pure function of the table.
pub fn choose(t: &SweepTable, c: &Criteria, name: &str) -> Choice {
    let rows = t.rows_of(name);
    let mut best: Option<(usize, f64)> = None;
    for &(_, r) in &rows {
        if !qualifies(t, c, r) {
            continue;
        }
        let score = match &c.objective {
            None => {
                best = Some((r, 0.0));
                break;
            }
            Some((m, larger)) => match m.value(t, r) {
                Some(v) if *larger => -v,
                Some(v) => v,
                None => continue,
            },
        };
        if best.is_none_or(|(_, s)| score < s) {
            best = Some((r, score));
        }
    }
    if let Some((r, _)) = best {
        return Choice::Best(r);
    }
    let mut closest: Option<(usize, (usize, f64))> = None;
    for &(_, r) in &rows {
        let broken = broken(t, c, r);
        let key = (
            broken.len(),
            broken.iter().map(|(q, v)| q.shortfall(*v)).sum::<f64>(),
        );
        if closest.is_none_or(|(_, k)| key.0 < k.0 || (key.0 == k.0 && key.1 < k.1)) {
            closest = Some((r, key));
        }
    }
    match closest {
        Some((r, _)) => Choice::None { closest: r },
        None => Choice::Empty,
    }
}

/// Whether row `r` meets every requirement.
pub(crate) fn qualifies(t: &SweepTable, c: &Criteria, r: usize) -> bool {
    c.require
        .iter()
        .all(|q| q.metric.value(t, r).is_some_and(|v| q.met(v)))
}

/// The requirements row `r` breaks, with its values (a cell that is not a
/// number breaks its requirement, read as NaN).
fn broken<'c>(t: &SweepTable, c: &'c Criteria, r: usize) -> Vec<(&'c Requirement, f64)> {
    c.require
        .iter()
        .filter_map(|q| match q.metric.value(t, r) {
            Some(v) if q.met(v) => None,
            Some(v) => Some((q, v)),
            None => Some((q, f64::INFINITY)),
        })
        .collect()
}

/// `recommendation.md`: the criteria, then per limiter the chosen point,
/// its numbers and its neighbours. Returns the text.
pub fn render(t: &SweepTable, grid: &Grid, c: &Criteria, scenario: &str) -> String {
    let mut out = format!("# Recommendation — {scenario}\n\n{}\n", c.describe());
    for name in t.limiters() {
        out.push_str(&format!("\n## {name}\n\n"));
        // A chain's member answers no client: its chain is recommended.
        if let Some(chain) = t.chain_of(&name) {
            out.push_str(&format!(
                "A member of chain `{chain}`, which decides every request it is asked about: see `{chain}`'s recommendation (this row counts what the member was asked and its own decisions).\n"
            ));
            continue;
        }
        // docs/semantics.md §7: only the axes that can change this limiter.
        let own = axes_of(t, grid, &name);
        if !own.contains(&true) {
            out.push_str(&format!(
                "No axis of the grid is {name}'s or shared: every point gives it the same rows, so there is nothing to choose for it (its numbers are in sweep.csv).\n"
            ));
            continue;
        }
        let at = |r: usize| grid.describe_only(t.point_of[r], &own);
        let (c, left_out) = &c.own(grid, &own);
        if !left_out.is_empty() {
            let names: Vec<String> = left_out.iter().map(|n| format!("`{n}`")).collect();
            out.push_str(&format!(
                "{} {} another limiter's field, which cannot change {name}'s rows: left out of its choice.\n\n",
                names.join(", "),
                if names.len() == 1 { "is" } else { "are" },
            ));
        }
        match choose(t, c, &name) {
            Choice::Empty => out.push_str("No rows.\n"),
            Choice::Best(r) => {
                out.push_str(&format!(
                    "**Recommended: {}** (point {}).\n\n",
                    at(r),
                    t.point_of[r]
                ));
                out.push_str(&numbers(t, c, r));
                out.push_str(&per_source(t, r));
                let rows = t.rows_of(&name);
                let neighbours: Vec<usize> = grid
                    .neighbours_along(t.point_of[r], &own)
                    .into_iter()
                    .filter_map(|p| rows.iter().find(|(q, _)| *q == p).map(|&(_, n)| n))
                    .collect();
                if !neighbours.is_empty() {
                    out.push_str("\nIts neighbours on the grid:\n\n");
                }
                for n in neighbours {
                    let broken = broken(t, c, n);
                    let why = if broken.is_empty() {
                        match &c.objective {
                            Some((m, _)) if m.value(t, n) == m.value(t, r) => format!(
                                "meets every requirement, and `{}` is {} here too, but comes later in sweep order",
                                m.name(),
                                m.text(t, n)
                            ),
                            Some((m, larger)) => format!(
                                "meets every requirement, but `{}` is {} ({} here)",
                                m.name(),
                                m.text(t, n),
                                if *larger { "not more" } else { "not less" }
                            ),
                            None => "meets every requirement, but comes later in sweep order"
                                .to_string(),
                        }
                    } else {
                        format!(
                            "breaks {}",
                            broken
                                .iter()
                                .map(|(q, v)| format!(
                                    "`{}` ({} = {})",
                                    q.text,
                                    q.metric.name(),
                                    v.trim()
                                ))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    };
                    out.push_str(&format!("- {}: {why}\n", at(n)));
                }
            }
            Choice::None { closest } => {
                out.push_str("**No point meets every requirement.**\n\n");
                let broken = broken(t, c, closest);
                out.push_str(&format!(
                    "Closest: {} (point {}), which breaks {}.\n",
                    at(closest),
                    t.point_of[closest],
                    broken
                        .iter()
                        .map(|(q, v)| format!("`{}` ({} = {})", q.text, q.metric.name(), v.trim()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
                out.push_str(&per_source(t, closest));
                out.push_str("\nThe best each requirement reaches anywhere on the grid:\n\n");
                for q in &c.require {
                    let rows = t.rows_of(&name);
                    let best = rows
                        .iter()
                        .filter_map(|&(_, r)| q.metric.value(t, r).map(|v| (r, v)))
                        .fold(None::<(usize, f64)>, |b, (r, v)| match b {
                            Some((_, bv)) if q.shortfall(bv) <= q.shortfall(v) => b,
                            _ => Some((r, v)),
                        });
                    if let Some((r, v)) = best {
                        let verdict = if q.met(v) { "met" } else { "not met" };
                        out.push_str(&format!(
                            "- `{}`: {verdict}; best {} at {}\n",
                            q.text,
                            v.trim(),
                            at(r)
                        ));
                    }
                }
            }
        }
    }
    out
}

/// Which of the grid's axes can change limiter `name`'s rows (docs/semantics.md §7):
/// every axis but another limiter's own field (`limiter[OTHER]…`,
/// `chain[OTHER]…`). A chain's axes are its own and its members'.
pub fn axes_of(t: &SweepTable, grid: &Grid, name: &str) -> Vec<bool> {
    let limiters = t.limiters();
    let chains: Vec<&String> = limiters
        .iter()
        .filter(|l| t.algorithm_of(l).as_deref() == Some("chain"))
        .collect();
    let mine: Vec<&String> = limiters
        .iter()
        .filter(|l| *l == name || t.chain_of(l).as_deref() == Some(name))
        .collect();
    grid.axes
        .iter()
        .map(|a| {
            let Some((array, rest)) = a.path.split_once('[') else {
                return true;
            };
            let Some(index) = rest.split_once(']').map(|(i, _)| i) else {
                return true;
            };
            let named = |list: &[&String]| -> Option<String> {
                match index.parse::<usize>() {
                    Ok(i) => list.get(i).map(|s| s.to_string()),
                    Err(_) => Some(index.to_string()),
                }
            };
            match array {
                "limiter" => {
                    // limiter[i] counts the scenario's [[limiter]] tables,
                    // which come before its chains in the rows.
                    let plain: Vec<&String> = limiters
                        .iter()
                        .filter(|l| t.algorithm_of(l).as_deref() != Some("chain"))
                        .collect();
                    named(&plain).is_none_or(|n| mine.iter().any(|m| **m == n))
                }
                "chain" => named(&chains).is_none_or(|n| n == name),
                _ => true,
            }
        })
        .collect()
}

/// The sources of a sweep, from its `clients[SOURCE]` columns, in order.
pub fn sources(t: &SweepTable) -> Vec<String> {
    t.columns
        .iter()
        .filter_map(|c| c.strip_prefix("clients[")?.strip_suffix(']'))
        .map(str::to_string)
        .collect()
}

/// What row `r` means for every source, in plain numbers (docs/semantics.md
/// §9): what passes, per second and per client, and how many of its
/// clients were ever limited — each figure a `COLUMN[SOURCE]` cell of the
/// row, or a quotient of two. Empty when the sweep has no source columns.
fn per_source(t: &SweepTable, r: usize) -> String {
    let names = sources(t);
    if names.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nWhat it means for each source:\n\n");
    for s in &names {
        let cell = |c: &str| -> Option<&str> {
            let i = t.column(&format!("{c}[{s}]"))?;
            t.rows[r].get(i).map(String::as_str)
        };
        let num = |c: &str| cell(c).and_then(|v| v.parse::<f64>().ok());
        let (Some(clients), Some(per_s), Some(limited), Some(attempts)) = (
            num("clients"),
            num("passed_per_s"),
            num("clients_limited"),
            num("attempts"),
        ) else {
            out.push_str(&format!("- `{s}`: not seen by this limiter\n"));
            continue;
        };
        let each = if clients > 1.0 {
            format!(", {}/s per client", trim(per_s / clients, 2))
        } else {
            String::new()
        };
        let rejected = num("rejected").unwrap_or(0.0);
        out.push_str(&format!(
            "- `{s}` ({} client{}): {}/s pass{each}; {} of {} ever limited ({}%); {}% of {} attempts rejected\n",
            trim(clients, 0),
            if clients == 1.0 { "" } else { "s" },
            trim(per_s, 2),
            trim(limited, 0),
            trim(clients, 0),
            trim(percent(limited, clients), 2),
            trim(percent(rejected, attempts), 2),
            trim(attempts, 0),
        ));
    }
    out
}

fn percent(part: f64, whole: f64) -> f64 {
    if whole == 0.0 {
        0.0
    } else {
        100.0 * part / whole
    }
}

/// The chosen point's numbers: every requirement, the objective, and the
/// outcome counts.
fn numbers(t: &SweepTable, c: &Criteria, r: usize) -> String {
    let mut shown: Vec<Metric> = Vec::new();
    let mut lines = String::from("| metric | value | requirement |\n|---|---|---|\n");
    for q in &c.require {
        let v = q.metric.text(t, r);
        lines.push_str(&format!("| {} | {} | {} |\n", q.metric.name(), v, q.text));
        shown.push(q.metric.clone());
    }
    if let Some((m, larger)) = &c.objective {
        if !shown.contains(m) {
            lines.push_str(&format!(
                "| {} | {} | {} |\n",
                m.name(),
                m.text(t, r),
                if *larger { "maximized" } else { "minimized" }
            ));
            shown.push(m.clone());
        }
    }
    for name in ["attempts", "rejected", "peak_in_window", "limit"] {
        let m = Metric::Column(name.into());
        if t.column(name).is_some() && !shown.contains(&m) {
            lines.push_str(&format!("| {name} | {} | |\n", m.text(t, r)));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_operator_is_the_one_after_the_column() {
        let columns = vec![
            "rejected_share[p<=q]".to_string(),
            "rejected_share[a>=b]".to_string(),
        ];
        let q = Requirement::parse("rejected_share[p<=q]<=0.5", &columns).unwrap();
        assert_eq!(q.metric, Metric::Column("rejected_share[p<=q]".into()));
        assert_eq!((q.op, q.bound), (Op::AtMost, 0.5));
        let q = Requirement::parse("rejected_share[a>=b]>=0.25", &columns).unwrap();
        assert_eq!(q.metric, Metric::Column("rejected_share[a>=b]".into()));
        assert_eq!((q.op, q.bound), (Op::AtLeast, 0.25));
        assert!(Requirement::parse("rejected_share[p<=q]", &columns).is_err());
    }

    // Regression (found by an audit): rates and durations compared by
    // their leading number, so 2/50ms (40/s) met `rate<=5` and 2s was
    // less than 500ms.
    #[test]
    fn rates_and_durations_compare_by_what_they_are() {
        use super::super::table::number;
        assert_eq!(number("2/50ms"), Some(40.0));
        assert_eq!(number("1/100ms"), Some(10.0));
        assert_eq!(number("4/1s"), Some(4.0));
        assert_eq!(number("500ms"), Some(0.5));
        assert_eq!(number("2s"), Some(2.0));
        assert_eq!(number("1m"), Some(60.0));
        assert_eq!(number("0.25"), Some(0.25));
        assert_eq!(number(""), Some(0.0));
        let columns = vec![
            "limiter[tb].rate".to_string(),
            "defaults.window".to_string(),
        ];
        let q = Requirement::parse("limiter[tb].rate<=5", &columns).unwrap();
        assert!(q.met(number("4/1s").unwrap()) && !q.met(number("2/50ms").unwrap()));
        // A bound in the cells' own units, shown as written.
        let q = Requirement::parse("defaults.window<=500ms", &columns).unwrap();
        assert_eq!((q.bound, q.text.as_str()), (0.5, "defaults.window<=500ms"));
        assert!(q.met(number("250ms").unwrap()) && !q.met(number("1s").unwrap()));
        let q = Requirement::parse("limiter[tb].rate>=30/1m", &columns).unwrap();
        assert_eq!(q.bound, 0.5);
        assert!(Requirement::parse("defaults.window<=soon", &columns).is_err());
    }
}
