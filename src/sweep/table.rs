//! `sweep.csv` read back: what the recommendation, the charts and
//! `summary.md` are computed from (never from the simulation itself), so
//! `sweep merge` reproduces them exactly.
//!
//! A metric is a column of `sweep.csv` (a varied path, or a column of
//! `summary.csv`) or one of [`DERIVED`]. Cells are decimal text; an empty
//! cell (nothing to measure: no rejections, nothing delayed; a source the
//! limiter does not see) reads as 0. A source's share
//! (`clients_limited_share[S]`, `rejected_share[S]`) is the exact quotient
//! of its counts, not its rounded text.

use std::path::Path;

use anyhow::Context;

use crate::error::{quoted, InputError};

/// Metrics computed from a row's columns.
pub(crate) const DERIVED: &[(&str, &str)] = &[
    ("rejected_share", "rejected / attempts"),
    ("passed_share", "(admitted + delayed) / attempts"),
    ("peak_over_limit", "peak_in_window / limit"),
];

/// The rows of `sweep.csv`.
#[derive(Debug, Clone)]
pub struct SweepTable {
    pub columns: Vec<String>,
    /// Every row, in point order then limiter order.
    pub rows: Vec<Vec<String>>,
    /// The point each row belongs to.
    pub point_of: Vec<usize>,
}

impl SweepTable {
    /// Reads `sweep.csv` at `path`; `points` gives each point's index and
    /// its number of rows, in file order (from the manifest).
    pub fn load(path: &Path, points: &[(usize, usize)]) -> anyhow::Result<SweepTable> {
        let mut rdr = csv::Reader::from_path(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let columns = rdr.headers()?.iter().map(str::to_string).collect();
        let rows: Vec<Vec<String>> = rdr
            .records()
            .map(|r| r.map(|r| r.iter().map(str::to_string).collect()))
            .collect::<Result<_, _>>()
            .with_context(|| format!("cannot read {}", path.display()))?;
        let point_of: Vec<usize> = points
            .iter()
            .flat_map(|&(p, n)| std::iter::repeat_n(p, n))
            .collect();
        anyhow::ensure!(
            point_of.len() == rows.len(),
            "{}: {} rows, but its sweep.json lists {}",
            path.display(),
            rows.len(),
            point_of.len()
        );
        Ok(SweepTable {
            columns,
            rows,
            point_of,
        })
    }

    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// The limiter names, in their first row's order.
    pub fn limiters(&self) -> Vec<String> {
        let Some(c) = self.column("limiter") else {
            return Vec::new();
        };
        let mut names: Vec<String> = Vec::new();
        for r in &self.rows {
            if !names.contains(&r[c]) {
                names.push(r[c].clone());
            }
        }
        names
    }

    /// Limiter `name`'s `algorithm` cell.
    pub fn algorithm_of(&self, name: &str) -> Option<String> {
        let (l, a) = (self.column("limiter")?, self.column("algorithm")?);
        self.rows
            .iter()
            .find(|r| r[l] == name)
            .map(|r| r[a].clone())
    }

    /// The chain limiter `name` is a member of (docs/semantics.md §13), from
    /// its rows' `chain` column.
    pub fn chain_of(&self, name: &str) -> Option<String> {
        let (l, c) = (self.column("limiter")?, self.column("chain")?);
        self.rows
            .iter()
            .find(|r| r[l] == name && !r[c].is_empty())
            .map(|r| r[c].clone())
    }

    /// The rows of limiter `name`, as (point, row index).
    pub fn rows_of(&self, name: &str) -> Vec<(usize, usize)> {
        let Some(c) = self.column("limiter") else {
            return Vec::new();
        };
        (0..self.rows.len())
            .filter(|&r| self.rows[r][c] == name)
            .map(|r| (self.point_of[r], r))
            .collect()
    }
}

/// A column or derived metric, checked against the table's columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Metric {
    Column(String),
    Derived(&'static str),
}

impl Metric {
    /// `name` as a metric of a sweep whose `sweep.csv` has `columns`; `flag`
    /// names where it was given, for the error.
    pub fn parse(name: &str, columns: &[String], flag: &str) -> Result<Metric, InputError> {
        if let Some((d, _)) = DERIVED.iter().find(|(d, _)| *d == name) {
            return Ok(Metric::Derived(d));
        }
        if columns.iter().any(|c| c == name) {
            return Ok(Metric::Column(name.to_string()));
        }
        let derived: Vec<&str> = DERIVED.iter().map(|(d, _)| *d).collect();
        Err(InputError::new(format!(
            "{flag} {}: no such column — columns: {}; derived: {}",
            quoted(name),
            columns.join(", "),
            derived.join(", ")
        )))
    }

    pub fn name(&self) -> &str {
        match self {
            Metric::Column(c) => c,
            Metric::Derived(d) => d,
        }
    }

    /// The metric's value in row `r` of `t`, `None` when a cell is not a
    /// number. An empty cell reads as 0.
    pub fn value(&self, t: &SweepTable, r: usize) -> Option<f64> {
        let cell = |name: &str| -> Option<f64> {
            let v = t.rows[r].get(t.column(name)?)?;
            number(v)
        };
        match self {
            Metric::Column(c) => match exact_share(c) {
                // A source's share, exact from its counts rather than its
                // 4-decimal text: 3 of 299 clients is more than 0.01.
                Some((part, whole)) if t.column(&part).is_some() && t.column(&whole).is_some() => {
                    Some(ratio(cell(&part)?, cell(&whole)?))
                }
                _ => cell(c),
            },
            Metric::Derived("rejected_share") => Some(ratio(cell("rejected")?, cell("attempts")?)),
            Metric::Derived("passed_share") => Some(ratio(
                cell("admitted")? + cell("delayed")?,
                cell("attempts")?,
            )),
            Metric::Derived("peak_over_limit") => {
                Some(ratio(cell("peak_in_window")?, cell("limit")?))
            }
            Metric::Derived(_) => None,
        }
    }

    /// The metric's text in row `r`: the cell as written (a source's share
    /// as the exact quotient it is compared as, to 6 decimals), or a
    /// derived value to 4 decimals.
    pub fn text(&self, t: &SweepTable, r: usize) -> String {
        match self {
            // A source's share as compared: exact, to 6 decimals.
            Metric::Column(c) if exact_share(c).is_some() => {
                self.value(t, r).map(|v| trim(v, 6)).unwrap_or_default()
            }
            Metric::Column(c) => t
                .column(c)
                .and_then(|i| t.rows[r].get(i))
                .cloned()
                .unwrap_or_default(),
            Metric::Derived(_) => self.value(t, r).map(|v| trim(v, 4)).unwrap_or_default(),
        }
    }
}

/// The counts a `sources.csv` share column of `sweep.csv` is the quotient
/// of (docs/semantics.md §9): `clients_limited_share[S]` is
/// `clients_limited[S] / clients[S]`, `rejected_share[S]` is
/// `rejected[S] / attempts[S]`.
fn exact_share(column: &str) -> Option<(String, String)> {
    let (name, rest) = column.split_once('[')?;
    let source = rest.strip_suffix(']')?;
    let (part, whole) = match name {
        "clients_limited_share" => ("clients_limited", "clients"),
        "rejected_share" => ("rejected", "attempts"),
        _ => return None,
    };
    Some((format!("{part}[{source}]"), format!("{whole}[{source}]")))
}

fn ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        0.0
    } else {
        a / b
    }
}

/// A cell as a number: empty is 0; a duration (`250ms`, `2s`) is its
/// seconds and a rate (`5/1s`, `1/100ms`) its requests per second, so
/// that values written in different units compare as they are (`2s` >
/// `500ms`, `2/50ms` > `4/1s`). Anything else with a unit reads its
/// leading number.
pub fn number(v: &str) -> Option<f64> {
    let v = v.trim();
    if v.is_empty() {
        return Some(0.0);
    }
    if let Ok(x) = v.parse::<f64>() {
        return x.is_finite().then_some(x);
    }
    if let Some(q) = quantity(v) {
        return Some(q);
    }
    let cut = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(v.len());
    v[..cut].parse::<f64>().ok().filter(|x| x.is_finite())
}

/// A duration (`500ms`) as its seconds, a rate (`5/1s`) as its requests
/// per second; `None` for anything else.
pub fn quantity(v: &str) -> Option<f64> {
    if let Ok(d) = crate::clock::parse_duration(v) {
        return Some(d.0 as f64 / 1e9);
    }
    let r = crate::clock::parse_rate(v)
        .ok()
        .filter(|_| v.contains('/'))?;
    Some(r.tokens() as f64 * 1e9 / r.per_ns() as f64)
}

/// `v` with at most `places` decimals, trailing zeros removed.
pub fn trim(v: f64, places: usize) -> String {
    let s = format!("{v:.places$}");
    if s.contains('.') {
        let s = s.trim_end_matches('0').trim_end_matches('.');
        if s == "-0" {
            "0".into()
        } else {
            s.to_string()
        }
    } else {
        s
    }
}
