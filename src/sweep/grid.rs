//! The grid of a sweep: one axis per `--vary PATH=LIST`, their Cartesian
//! product in order (the last axis changes fastest), and shards of it.
//!
//! Point `i` has coordinates `c` with `i = ((c0·n1 + c1)·n2 + c2)…`, the
//! mixed-radix number whose last digit is the last axis. Its neighbours
//! are the points one step away along exactly one axis.

use serde::{Deserialize, Serialize};

use crate::error::{quoted, InputError};
use crate::overrides::{self, Override};

/// The most points a sweep runs without `--no-budget`.
pub(crate) const MAX_POINTS: u128 = 10_000;

/// One varied field and its values, as written.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Axis {
    pub path: String,
    pub values: Vec<String>,
    /// The argument as typed (`--vary defaults.limit=10..=50:10`), for
    /// messages; not kept in `sweep.json`.
    #[serde(skip)]
    pub arg: String,
}

/// Two axes are the same when they vary the same path over the same
/// values, however they were typed.
impl PartialEq for Axis {
    fn eq(&self, other: &Axis) -> bool {
        self.path == other.path && self.values == other.values
    }
}

impl Eq for Axis {}

impl Axis {
    /// Parses `PATH=LIST` as given to `flag`.
    pub fn parse(text: &str, flag: &str) -> Result<Axis, InputError> {
        let o = Override::parse(text, flag)?;
        if o.value.is_empty() {
            return Err(InputError::new(format!(
                "{flag} {}: an empty list; give values, e.g. {}=10,20,50 or {}=10..=100:10",
                quoted(text),
                o.path,
                o.path
            )));
        }
        let values = overrides::values(&o.value, &format!("{flag} {}", o.path))?;
        Ok(Axis {
            path: o.path,
            values,
            arg: o.arg,
        })
    }

    /// The flag as a user would write it again (for messages about a
    /// grid read back from `sweep.json`, which does not keep `arg`).
    pub fn shown(&self) -> String {
        let list = self.values.join(",");
        let list = if list.chars().count() > 40 {
            format!("{}…", list.chars().take(39).collect::<String>())
        } else {
            list
        };
        format!("--vary {}={list}", self.path)
    }

    /// Its value `v` as an override, named in messages as the argument
    /// and the value (`--vary defaults.limit=0..=10:5: value "0"`).
    pub fn at(&self, v: &str) -> Override {
        Override {
            path: self.path.clone(),
            value: v.to_string(),
            arg: format!("{}: value {}", self.arg, quoted(v)),
        }
    }
}

/// The axes of a sweep, in `--vary` order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Grid {
    pub axes: Vec<Axis>,
}

impl Grid {
    /// How many points: the product of the axes' lengths (saturating).
    pub fn size(&self) -> u128 {
        self.axes
            .iter()
            .fold(1u128, |n, a| n.saturating_mul(a.values.len() as u128))
    }

    /// The coordinates of point `i`, one value index per axis.
    pub fn coords(&self, mut i: usize) -> Vec<usize> {
        let mut c = vec![0; self.axes.len()];
        for (k, axis) in self.axes.iter().enumerate().rev() {
            let n = axis.values.len().max(1);
            c[k] = i % n;
            i /= n;
        }
        c
    }

    /// The index of the point at `coords`.
    pub fn index(&self, coords: &[usize]) -> usize {
        self.axes
            .iter()
            .zip(coords)
            .fold(0, |i, (a, &c)| i * a.values.len() + c)
    }

    /// Point `i`'s values, one per axis.
    pub fn values(&self, i: usize) -> Vec<&str> {
        self.coords(i)
            .iter()
            .zip(&self.axes)
            .map(|(&c, a)| a.values[c].as_str())
            .collect()
    }

    /// Point `i` as overrides, in axis order.
    pub fn overrides(&self, i: usize) -> Vec<Override> {
        self.axes
            .iter()
            .zip(self.values(i))
            .map(|(a, v)| a.at(v))
            .collect()
    }

    /// `defaults.limit=20, limiter[0].capacity=30`.
    pub fn describe(&self, i: usize) -> String {
        self.axes
            .iter()
            .zip(self.values(i))
            .map(|(a, v)| format!("{}={v}", a.path))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Point `i` as `path=value` of the axes `shown` marks (all when it is
    /// empty).
    pub fn describe_only(&self, i: usize, shown: &[bool]) -> String {
        self.axes
            .iter()
            .zip(self.values(i))
            .enumerate()
            .filter(|(k, _)| shown.get(*k).copied().unwrap_or(true))
            .map(|(_, (a, v))| format!("{}={v}", a.path))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The points one step away from `i` along exactly one axis, in point
    /// order.
    pub fn neighbours(&self, i: usize) -> Vec<usize> {
        self.neighbours_along(i, &[])
    }

    /// [`Grid::neighbours`] along the axes `along` marks (all when empty).
    pub fn neighbours_along(&self, i: usize, along: &[bool]) -> Vec<usize> {
        let c = self.coords(i);
        let mut out = Vec::new();
        for k in 0..self.axes.len() {
            if !along.get(k).copied().unwrap_or(true) {
                continue;
            }
            for d in [-1i64, 1] {
                let v = c[k] as i64 + d;
                if v < 0 || v >= self.axes[k].values.len() as i64 {
                    continue;
                }
                let mut n = c.clone();
                n[k] = v as usize;
                out.push(self.index(&n));
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// `--shard K/N`: this run's share of the points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub k: u64,
    pub n: u64,
}

impl Shard {
    pub const WHOLE: Shard = Shard { k: 1, n: 1 };

    pub fn parse(text: &str) -> Result<Shard, InputError> {
        let (k, n) = crate::partition::parse_k_of_n("--shard", text)?;
        Ok(Shard { k, n })
    }

    /// Whether point `i` is this shard's.
    pub fn has(&self, i: usize) -> bool {
        i as u64 % self.n == self.k - 1
    }

    pub fn is_whole(&self) -> bool {
        self.n == 1
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(lens: &[usize]) -> Grid {
        Grid {
            axes: lens
                .iter()
                .enumerate()
                .map(|(k, &n)| Axis {
                    path: format!("a{k}"),
                    values: (0..n).map(|v| v.to_string()).collect(),
                    arg: format!("--vary a{k}=…"),
                })
                .collect(),
        }
    }

    #[test]
    fn the_last_axis_changes_fastest() {
        let g = grid(&[2, 3]);
        assert_eq!(g.size(), 6);
        let all: Vec<Vec<usize>> = (0..6).map(|i| g.coords(i)).collect();
        assert_eq!(
            all,
            [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]].map(|c| c.to_vec())
        );
        for i in 0..6 {
            assert_eq!(g.index(&g.coords(i)), i);
        }
        assert_eq!(g.describe(4), "a0=1, a1=1");
    }

    #[test]
    fn neighbours_are_one_step_along_one_axis() {
        let g = grid(&[3, 3]);
        assert_eq!(g.neighbours(4), [1, 3, 5, 7]);
        assert_eq!(g.neighbours(0), [1, 3]);
        assert_eq!(grid(&[1]).neighbours(0), Vec::<usize>::new());
    }

    #[test]
    fn shards_split_the_points_round_robin() {
        let s = Shard::parse("2/3").unwrap();
        let mine: Vec<usize> = (0..8).filter(|&i| s.has(i)).collect();
        assert_eq!(mine, [1, 4, 7]);
        for bad in ["0/3", "4/3", "1/0", "1", "a/b", "1/3/4", ""] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_empty_list_is_refused_naming_the_flag() {
        let e = Axis::parse("defaults.limit=", "--vary").unwrap_err();
        assert!(e.message().contains("--vary") && e.message().contains("empty"));
        let a = Axis::parse("defaults.limit=10..=30:10", "--vary").unwrap();
        assert_eq!(a.values, ["10", "20", "30"]);
    }
}
