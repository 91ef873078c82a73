//! `ratesim diff A B`: two run directories compared limiter by limiter,
//! from their files alone.
//!
//! Limiters are matched by name. For each limiter in both, every column
//! of `summary.csv` whose cells differ is a row (limiter, column, A, B,
//! change); before them, every field of the scenario (`summary.json`'s
//! echo, the seed and the policy) that differs. Limiters in one run only
//! are listed after. With `--out DIR`, [`page`] writes `diff.html` there:
//! the same table and the two runs' charts side by side.

pub mod page;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::InputError;
use crate::rundir::summary::Summary;
use crate::rundir::{SUMMARY_CSV, SUMMARY_JSON};

/// What the scenario rows name as their limiter.
pub const SCENARIO: &str = "(scenario)";

/// One value that differs between the two runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The limiter, or [`SCENARIO`] for a scenario field.
    pub limiter: String,
    /// The `summary.csv` column, or the scenario field's path.
    pub column: String,
    pub a: String,
    pub b: String,
    /// `B − A` (and the ratio to A) when both are numbers, else empty.
    pub change: String,
}

/// Two run directories compared.
#[derive(Debug, Clone)]
pub struct Diff {
    pub a: PathBuf,
    pub b: PathBuf,
    /// The scenario fields that differ, then the limiters' columns.
    pub changes: Vec<Change>,
    /// Limiters in both runs, in A's order.
    pub matched: Vec<String>,
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
}

/// A run directory's summary, as the diff reads it.
struct Run {
    head: Vec<String>,
    rows: Vec<Vec<String>>,
    summary: Summary,
}

impl Run {
    fn load(dir: &Path) -> Result<Run, InputError> {
        if !dir.is_dir() {
            return Err(InputError::new(format!(
                "{}: no such directory; give two run directories that `ratesim run` wrote",
                dir.display()
            )));
        }
        let csv_path = dir.join(SUMMARY_CSV);
        let bad = |path: &Path, e: &dyn std::fmt::Display| {
            InputError::new(format!(
                "{}: {e} — is {} a ratesim run directory? `ratesim run` writes {SUMMARY_CSV} and {SUMMARY_JSON} into it",
                path.display(),
                dir.display()
            ))
        };
        let mut r = csv::Reader::from_path(&csv_path).map_err(|e| bad(&csv_path, &e))?;
        let head: Vec<String> = r
            .headers()
            .map_err(|e| bad(&csv_path, &e))?
            .iter()
            .map(str::to_string)
            .collect();
        if head.first().map(String::as_str) != Some("limiter") {
            return Err(bad(&csv_path, &"its first column is not `limiter`"));
        }
        let rows = r
            .records()
            .map(|rec| rec.map(|rec| rec.iter().map(str::to_string).collect()))
            .collect::<Result<Vec<Vec<String>>, _>>()
            .map_err(|e| bad(&csv_path, &e))?;
        let json_path = dir.join(SUMMARY_JSON);
        let text = std::fs::read_to_string(&json_path).map_err(|e| bad(&json_path, &e))?;
        let summary: Summary = serde_json::from_str(&text).map_err(|e| bad(&json_path, &e))?;
        Ok(Run {
            head,
            rows,
            summary,
        })
    }

    /// The row of `limiter`, as column → cell.
    fn row(&self, limiter: &str) -> Option<BTreeMap<&str, &str>> {
        let row = self
            .rows
            .iter()
            .find(|r| r.first().map(String::as_str) == Some(limiter))?;
        Some(
            self.head
                .iter()
                .zip(row)
                .map(|(h, c)| (h.as_str(), c.as_str()))
                .collect(),
        )
    }

    fn limiters(&self) -> Vec<String> {
        self.rows
            .iter()
            .filter_map(|r| r.first().cloned())
            .collect()
    }

    /// The scenario as compared: the echo, the seed and the policy, each
    /// leaf by its path, a limiter's by its name as `--set` names it
    /// (`limiter[api].rate`, not the echo's `limiters[0].params.rate`), so
    /// that limiters match by name here too.
    fn fields(&self) -> BTreeMap<String, String> {
        let s = &self.summary;
        let mut echo = serde_json::to_value(&s.scenario).unwrap_or(Value::Null);
        let limiters = match &mut echo {
            Value::Object(m) => m.remove("limiters"),
            _ => None,
        };
        let mut out = BTreeMap::new();
        flatten("", &echo, &mut out);
        for (i, l) in limiters
            .iter()
            .flat_map(|l| l.as_array())
            .flatten()
            .enumerate()
        {
            let name = l.get("name").and_then(Value::as_str);
            let mut l = l.clone();
            // The algorithm's own parameters read as `--set` writes them.
            if let Value::Object(m) = &mut l {
                if let Some(Value::Object(params)) = m.remove("params") {
                    m.extend(params);
                }
                m.remove("name");
            }
            let path = match name {
                Some(n) => format!("limiter[{n}]"),
                None => format!("limiter[{i}]"),
            };
            flatten(&path, &l, &mut out);
        }
        for (k, v) in [
            ("seed", s.seed),
            ("limit", s.limit),
            ("window_ns", s.window_ns),
            ("duration_ns", s.duration_ns),
            ("resolution_ns", s.resolution_ns),
        ] {
            out.insert(k.to_string(), v.to_string());
        }
        out
    }
}

/// Every leaf of `v` under `path`, as text.
fn flatten(path: &str, v: &Value, out: &mut BTreeMap<String, String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                flatten(&p, v, out);
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                flatten(&format!("{path}[{i}]"), v, out);
            }
        }
        Value::String(s) => {
            out.insert(path.to_string(), s.clone());
        }
        Value::Null => {
            out.insert(path.to_string(), String::new());
        }
        v => {
            out.insert(path.to_string(), v.to_string());
        }
    }
}

/// `B − A`, with the ratio to A when A is not 0, for two numbers; empty
/// otherwise.
pub fn change(a: &str, b: &str) -> String {
    let (Ok(x), Ok(y)) = (a.parse::<f64>(), b.parse::<f64>()) else {
        return String::new();
    };
    if !(x.is_finite() && y.is_finite()) {
        return String::new();
    }
    let d = y - x;
    let places = [a, b]
        .iter()
        .map(|s| s.split_once('.').map_or(0, |(_, f)| f.len()))
        .max()
        .unwrap_or(0);
    let delta = format!("{d:+.places$}");
    if x == 0.0 {
        delta
    } else {
        format!("{delta} ({:+.1}%)", d / x.abs() * 100.0)
    }
}

impl Diff {
    /// Compares the run directories `a` and `b`; either not being one is
    /// bad input naming it.
    pub fn of(a: &Path, b: &Path) -> Result<Diff, InputError> {
        let (ra, rb) = (Run::load(a)?, Run::load(b)?);
        let mut changes = Vec::new();
        let (fa, fb) = (ra.fields(), rb.fields());
        let mut paths: Vec<&String> = fa.keys().chain(fb.keys()).collect();
        paths.sort();
        paths.dedup();
        for p in paths {
            let (x, y) = (
                fa.get(p).map_or("", String::as_str),
                fb.get(p).map_or("", String::as_str),
            );
            if x != y {
                changes.push(Change {
                    limiter: SCENARIO.to_string(),
                    column: p.clone(),
                    a: x.to_string(),
                    b: y.to_string(),
                    change: change(x, y),
                });
            }
        }
        let mut columns: Vec<&String> = ra.head.iter().collect();
        columns.extend(rb.head.iter().filter(|h| !ra.head.contains(h)));
        let (la, lb) = (ra.limiters(), rb.limiters());
        let matched: Vec<String> = la.iter().filter(|l| lb.contains(l)).cloned().collect();
        for l in &matched {
            let (Some(x), Some(y)) = (ra.row(l), rb.row(l)) else {
                continue;
            };
            for c in &columns {
                let (cx, cy) = (
                    x.get(c.as_str()).copied().unwrap_or(""),
                    y.get(c.as_str()).copied().unwrap_or(""),
                );
                if cx != cy {
                    changes.push(Change {
                        limiter: l.clone(),
                        column: c.to_string(),
                        a: cx.to_string(),
                        b: cy.to_string(),
                        change: change(cx, cy),
                    });
                }
            }
        }
        Ok(Diff {
            a: a.to_path_buf(),
            b: b.to_path_buf(),
            only_a: la.iter().filter(|l| !lb.contains(l)).cloned().collect(),
            only_b: lb.iter().filter(|l| !la.contains(l)).cloned().collect(),
            matched,
            changes,
        })
    }

    /// The terminal's account: an aligned table, then the unmatched.
    pub fn render(&self) -> String {
        let mut s = format!(
            "A = {}\nB = {}\n{} limiter{} in both",
            self.a.display(),
            self.b.display(),
            self.matched.len(),
            if self.matched.len() == 1 { "" } else { "s" }
        );
        if self.changes.is_empty() {
            s.push_str("; no value of summary.csv or the scenario differs\n");
        } else {
            s.push_str(&format!(
                "; {} value{} differ:\n\n",
                self.changes.len(),
                if self.changes.len() == 1 { "" } else { "s" }
            ));
            let head = ["limiter", "column", "A", "B", "change"];
            let cells: Vec<[&str; 5]> = self
                .changes
                .iter()
                .map(|c| {
                    [
                        c.limiter.as_str(),
                        c.column.as_str(),
                        c.a.as_str(),
                        c.b.as_str(),
                        c.change.as_str(),
                    ]
                })
                .collect();
            let widths: Vec<usize> = (0..5)
                .map(|i| {
                    cells
                        .iter()
                        .map(|r| r[i].chars().count())
                        .chain([head[i].len()])
                        .max()
                        .unwrap_or(0)
                        .min(60)
                })
                .collect();
            for row in std::iter::once(head).chain(cells) {
                let mut line = String::new();
                for (i, c) in row.iter().enumerate() {
                    let _ = write!(line, "{c:<w$}  ", w = widths[i]);
                }
                s.push_str(line.trim_end());
                s.push('\n');
            }
        }
        for (which, names) in [("A", &self.only_a), ("B", &self.only_b)] {
            if !names.is_empty() {
                let _ = writeln!(s, "only in {which}: {}", names.join(", "));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn change_is_b_minus_a_with_its_ratio_and_empty_for_words() {
        assert_eq!(change("100", "200"), "+100 (+100.0%)");
        assert_eq!(change("0.5", "0.25"), "-0.25 (-50.0%)");
        assert_eq!(change("0", "3"), "+3");
        assert_eq!(change("client", "ip"), "");
        assert_eq!(change("", "3"), "");
    }

    #[test]
    fn a_limiters_fields_are_named_by_the_limiter() {
        let summary: Summary = serde_json::from_str(
            &std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/crates/report/fixtures/boundary/summary.json"
            ))
            .unwrap(),
        )
        .unwrap();
        let run = Run {
            head: Vec::new(),
            rows: Vec::new(),
            summary,
        };
        let fields = run.fields();
        assert_eq!(fields["limiter[token_bucket].capacity"], "100");
        assert_eq!(fields["limiter[token_bucket].rate"], "1/10ms");
        assert_eq!(fields["limiter[leaky_bucket].algorithm"], "leaky_bucket");
        assert!(fields.keys().all(|k| !k.starts_with("limiters")));
        assert!(!fields.contains_key("limiter[token_bucket].name"));
    }

    #[test]
    fn flatten_names_every_leaf_by_its_path() {
        let mut out = BTreeMap::new();
        flatten(
            "",
            &serde_json::json!({"a": {"b": [1, "x", null]}, "c": true}),
            &mut out,
        );
        let got: Vec<(&str, &str)> = out.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            got,
            [
                ("a.b[0]", "1"),
                ("a.b[1]", "x"),
                ("a.b[2]", ""),
                ("c", "true")
            ]
        );
    }
}
