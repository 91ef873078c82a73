//! How every number of a run is written: one file, so `summary.csv`,
//! `summary.json` and the terminal agree on every digit.
//!
//! Counts are integers. Everything else is a [`Decimal`]: an exact fraction
//! rounded half-up to a fixed number of places, trailing zeros trimmed
//! (milliseconds to 6 places — exact to the nanosecond —, shares and
//! ratios to 4, bytes and rates to 2). `summary.csv` writes the decimal as
//! printed; `summary.json` writes it as the JSON number that text parses
//! to ([`json_numbers`]), and `null` where the CSV cell is empty.

use serde::de::{self, Deserializer, Visitor};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::clock::{decimal_places, Nanos, NANOS_PER_SEC};

/// A decimal number as printed: `0.5`, `1201.078272`, `1.0000`.
#[derive(Debug, Clone, PartialEq)]
pub struct Decimal(String);

/// The tag a [`Decimal`] carries through serde's data model, so the JSON
/// writer can tell it from a string. CSV writes the text inside it.
const TAG: &str = "$ratesim::decimal";

impl Decimal {
    /// `num / den` rounded half-up to at most `places` decimals.
    pub fn ratio(num: u128, den: u128, places: u32) -> Decimal {
        Decimal(decimal_places(num, den, places))
    }

    /// Nanoseconds as milliseconds, exact to the nanosecond (`100`,
    /// `0.000001`).
    pub fn ms(t: Nanos) -> Decimal {
        Decimal::ratio(t.0 as u128, 1_000_000, 6)
    }

    /// `part / whole`, 4 decimals.
    pub fn share((part, whole): (u64, u64)) -> Decimal {
        Decimal::ratio(part as u128, whole as u128, 4)
    }

    /// A mean kept as an exact fraction (`0/0` is 0), 2 decimals.
    pub fn mean((num, den): (u128, u128)) -> Decimal {
        Decimal::ratio(num, den.max(1), 2)
    }

    /// `count` per second of `duration`, 2 decimals; `None` for an empty
    /// duration.
    pub fn per_second(count: u64, duration: Nanos) -> Option<Decimal> {
        (duration.0 > 0)
            .then(|| Decimal::ratio(count as u128 * NANOS_PER_SEC as u128, duration.0 as u128, 2))
    }

    /// A float to exactly 4 places (`1.0000`), for what is not an exact
    /// fraction (Jain's fairness index).
    pub fn fixed4(x: f64) -> Decimal {
        Decimal(format!("{x:.4}"))
    }

    pub fn text(&self) -> &str {
        &self.0
    }

    /// The number, for charts and checks.
    pub fn value(&self) -> f64 {
        self.0.parse().unwrap_or(f64::NAN)
    }
}

impl Default for Decimal {
    fn default() -> Self {
        Decimal("0".to_string())
    }
}

impl Serialize for Decimal {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_variant("Decimal", 0, TAG, &self.0)
    }
}

/// Read back from `summary.json`, where it is a number.
impl<'de> Deserialize<'de> for Decimal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Decimal, D::Error> {
        struct Number;
        impl Visitor<'_> for Number {
            type Value = Decimal;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Decimal, E> {
                Ok(Decimal(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Decimal, E> {
                Ok(Decimal(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Decimal, E> {
                Ok(Decimal(v.to_string()))
            }
        }
        d.deserialize_any(Number)
    }
}

/// Turns every [`Decimal`] in `v` (as `serde_json::to_value` leaves it)
/// into the JSON number its text parses to.
pub fn json_numbers(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if map.len() == 1 {
                if let Some(Value::String(text)) = map.get(TAG) {
                    *v = serde_json::from_str(text).unwrap_or(Value::String(text.clone()));
                    return;
                }
            }
            map.values_mut().for_each(json_numbers);
        }
        Value::Array(items) => items.iter_mut().for_each(json_numbers),
        _ => {}
    }
}

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

/// Nanoseconds as milliseconds, exact to the nanosecond, as text.
pub fn ms(t: Nanos) -> String {
    Decimal::ms(t).0
}

/// An optional duration in ms, empty when absent.
pub fn opt_ms(t: Option<Nanos>) -> String {
    t.map(ms).unwrap_or_default()
}

/// A duration for the terminal: `12.5ms`, `800us`, `0`, `-` when absent.
pub fn short_ms(d: Option<Nanos>) -> String {
    match d {
        None => "-".to_string(),
        Some(d) if d.0 >= 1_000_000 => {
            format!("{}ms", decimal_places(d.0 as u128, 1_000_000, 1))
        }
        Some(d) if d.0 > 0 => format!("{}us", decimal_places(d.0 as u128, 1_000, 1)),
        Some(_) => "0".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decimal_is_text_in_csv_and_the_number_it_parses_to_in_json() {
        let mut v = serde_json::to_value([
            Decimal::fixed4(1.0),
            Decimal::ms(Nanos(1)),
            Decimal::share((1, 3)),
        ])
        .unwrap();
        json_numbers(&mut v);
        assert_eq!(v.to_string(), "[1.0,1e-6,0.3333]");
        let mut w = csv::Writer::from_writer(vec![]);
        w.serialize((Decimal::fixed4(1.0), Decimal::ms(Nanos(1))))
            .unwrap();
        assert_eq!(w.into_inner().unwrap(), b"1.0000,0.000001\n");
    }
}
