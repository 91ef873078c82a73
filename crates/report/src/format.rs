//! How the terminal and the headings write what is not a file's number
//! (those are [`Decimal`]s, in the run directory's model): a policy, a
//! duration in ms.

use crate::clock::{decimal_places, Nanos};
pub use crate::rundir::summary::{json_numbers, Decimal};

/// The policy the limiters are held to, for a heading: `limit 10 per 1s`
/// when they share one, else `limits 5–20 per 1s (each limiter's own)`
/// (docs/semantics.md §3). `limits` are the limiters' own, in any order;
/// `fallback` is `[defaults] limit`, used when there are none.
pub fn policy(limits: &[u64], fallback: u64, window: &str) -> String {
    let (lo, hi) = match (limits.iter().min(), limits.iter().max()) {
        (Some(&lo), Some(&hi)) => (lo, hi),
        _ => (fallback, fallback),
    };
    if lo == hi {
        format!("limit {lo} per {window}")
    } else {
        format!("limits {lo}–{hi} per {window} (each limiter's own)")
    }
}

/// A duration in ns as a short human string: `1s`, `250ms`, `1.5s`, `20us`.
pub fn duration(ns: u64) -> String {
    Nanos(ns).to_string()
}

/// Nanoseconds as milliseconds, exact to the nanosecond, as text.
pub fn ms(t: Nanos) -> String {
    Decimal::ms(t).text().to_string()
}

/// An optional duration in ms, empty when absent.
pub fn opt_ms(t: Option<Nanos>) -> String {
    t.map(ms).unwrap_or_default()
}

/// A duration for the terminal: `12.5ms`, `800us`, `0`, `-` when absent.
pub(crate) fn short_ms(d: Option<Nanos>) -> String {
    match d {
        None => "-".to_string(),
        Some(d) if d.0 >= 1_000_000 => {
            format!("{}ms", decimal_places(d.0 as u128, 1_000_000, 1))
        }
        Some(d) if d.0 > 0 => format!("{}us", decimal_places(d.0 as u128, 1_000, 1)),
        Some(_) => "0".to_string(),
    }
}
