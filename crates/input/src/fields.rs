//! Reading one TOML table with errors that name the field's path.
//!
//! The raw layer of a scenario is the `toml::Table` the file parses into;
//! [`Fields`] walks one table of it, converts each value into its validated
//! type and remembers which keys it took, so that [`Fields::finish`] can
//! reject anything it did not recognise. Every error names the path
//! (`limiter[2].rate`), the value as written, and what is accepted.

use std::collections::BTreeSet;

use toml::{Table, Value};

use crate::clock::{parse_duration, parse_rate, Nanos, Rate};
use crate::error::{quote, InputError};

/// The largest count, capacity, limit or cost a scenario may name.
pub(crate) const MAX_COUNT: u64 = 1_000_000_000_000;

pub struct Fields<'a> {
    path: String,
    table: &'a Table,
    /// Every key asked for, present or not: the accepted keys of this table.
    asked: BTreeSet<String>,
}

/// `path.key`, or just `key` at the top level.
pub fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

impl<'a> Fields<'a> {
    pub fn new(path: impl Into<String>, table: &'a Table) -> Self {
        Fields {
            path: path.into(),
            table,
            asked: BTreeSet::new(),
        }
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// The path of `key` inside this table.
    pub fn at(&self, key: &str) -> String {
        join(&self.path, key)
    }

    /// An error about `key` whose value is `value`.
    pub fn error(&self, key: &str, value: &Value, what: impl std::fmt::Display) -> InputError {
        InputError::new(format!("{}: {} — {}", self.at(key), show(value), what))
    }

    /// The raw value of `key`, without taking it.
    pub fn peek(&self, key: &str) -> Option<&'a Value> {
        self.table.get(key)
    }

    pub fn has(&self, key: &str) -> bool {
        self.table.contains_key(key)
    }

    fn take(&mut self, key: &str) -> Option<&'a Value> {
        self.asked.insert(key.to_string());
        self.table.get(key)
    }

    pub fn missing(&self, key: &str, what: &str) -> InputError {
        InputError::new(format!("{}: missing — {}", self.at(key), what))
    }

    pub fn opt_str(&mut self, key: &str) -> Result<Option<&'a str>, InputError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            // TOML reads an unquoted date-time as a value of its own.
            Some(v @ Value::Datetime(d)) => Err(self.error(
                key,
                v,
                format!("expected a string: write it in quotes, \"{d}\""),
            )),
            Some(v) => Err(self.error(key, v, "expected a string")),
        }
    }

    /// An array of strings.
    pub fn opt_str_list(&mut self, key: &str) -> Result<Option<Vec<&'a str>>, InputError> {
        let Some(v) = self.take(key) else {
            return Ok(None);
        };
        let items = match v {
            Value::Array(items) => items.iter().map(Value::as_str).collect::<Option<Vec<_>>>(),
            _ => None,
        };
        items
            .map(Some)
            .ok_or_else(|| self.error(key, v, "expected a list of names, e.g. [\"a\", \"b\"]"))
    }

    pub fn opt_bool(&mut self, key: &str) -> Result<Option<bool>, InputError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Boolean(b)) => Ok(Some(*b)),
            Some(v) => Err(self.error(key, v, "expected true or false")),
        }
    }

    /// `true`, `false`, or one of `words` (which the error lists too).
    pub fn opt_bool_or_word(
        &mut self,
        key: &str,
        words: &[&str],
    ) -> Result<Option<Result<bool, &'a str>>, InputError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Boolean(b)) => Ok(Some(Ok(*b))),
            Some(Value::String(s)) if words.contains(&s.as_str()) => Ok(Some(Err(s.as_str()))),
            Some(v) => {
                let words: Vec<String> = words.iter().map(|w| format!("\"{w}\"")).collect();
                Err(self.error(
                    key,
                    v,
                    format_args!("expected true, false or {}", words.join(", ")),
                ))
            }
        }
    }

    /// A whole number in `min..=MAX_COUNT`.
    pub fn opt_count(&mut self, key: &str, min: u64) -> Result<Option<u64>, InputError> {
        self.opt_count_max(key, min, MAX_COUNT)
    }

    /// A whole number in `min..=max` (`max` at most `MAX_COUNT`); a value
    /// outside says the range.
    pub fn opt_count_max(
        &mut self,
        key: &str,
        min: u64,
        max: u64,
    ) -> Result<Option<u64>, InputError> {
        let Some(v) = self.take(key) else {
            return Ok(None);
        };
        match v {
            Value::Integer(i) if *i >= min as i64 && *i as u64 <= max => Ok(Some(*i as u64)),
            Value::Integer(i) if *i >= min as i64 => {
                Err(self.error(key, v, format_args!("too large; at most {max}")))
            }
            // A number past TOML's integers (2^63 − 1) reaches here as
            // text: the range says what is accepted.
            _ => Err(self.error(
                key,
                v,
                format_args!("expected a whole number from {min} to {max}"),
            )),
        }
    }

    /// Any `u64` (seeds).
    pub fn opt_u64(&mut self, key: &str) -> Result<Option<u64>, InputError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Integer(i)) if *i >= 0 => Ok(Some(*i as u64)),
            Some(v) => Err(self.error(key, v, "expected a whole number ≥ 0")),
        }
    }

    /// A duration string such as `"250ms"`; zero only if `allow_zero`.
    pub fn opt_duration(
        &mut self,
        key: &str,
        allow_zero: bool,
    ) -> Result<Option<Nanos>, InputError> {
        let Some(v) = self.take(key) else {
            return Ok(None);
        };
        let Value::String(s) = v else {
            return Err(self.error(
                key,
                v,
                "expected a duration string with a unit, e.g. \"250ms\" or \"1.5s\"",
            ));
        };
        let d = parse_duration(s).map_err(|e| self.error(key, v, e))?;
        if d.0 == 0 && !allow_zero {
            return Err(self.error(key, v, "must be longer than zero, e.g. \"1s\""));
        }
        Ok(Some(d))
    }

    /// A rate: `"N/DURATION"` or a number per second.
    pub fn opt_rate(&mut self, key: &str) -> Result<Option<Rate>, InputError> {
        let Some(v) = self.take(key) else {
            return Ok(None);
        };
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Integer(i) => i.to_string(),
            // Rust prints the shortest decimal that reads back as this f64,
            // which is what the user wrote (2.5 → "2.5").
            Value::Float(f) if f.is_finite() => format!("{f}"),
            Value::Float(_) => {
                return Err(self.error(
                    key,
                    v,
                    "must be a finite positive rate, e.g. \"100/1s\" or 2.5",
                ))
            }
            _ => {
                return Err(self.error(
                    key,
                    v,
                    "expected a rate such as \"100/1s\" or a number per second",
                ))
            }
        };
        parse_rate(&text)
            .map(Some)
            .map_err(|e| self.error(key, v, e))
    }

    /// A non-negative decimal number (`1.5`, `2`, `"0.25"`) as an exact
    /// fraction `(num, den)`.
    pub fn opt_decimal(&mut self, key: &str) -> Result<Option<(u128, u128)>, InputError> {
        let Some(v) = self.take(key) else {
            return Ok(None);
        };
        let text = match v {
            Value::String(s) => s.trim().to_string(),
            Value::Integer(i) => i.to_string(),
            Value::Float(f) if f.is_finite() => format!("{f}"),
            _ => String::new(),
        };
        crate::clock::parse_decimal(&text).map(Some).map_err(|too_long| {
            let why = if too_long {
                "too many digits to hold exactly: expected at most 20 before the point and 18 after it"
            } else {
                "expected a finite non-negative number, e.g. 1.5"
            };
            self.error(key, v, why)
        })
    }

    /// A finite number in `[min, max]`, for parameters of random
    /// distributions (never of decisions).
    pub fn opt_float(&mut self, key: &str, min: f64, max: f64) -> Result<Option<f64>, InputError> {
        let Some(v) = self.take(key) else {
            return Ok(None);
        };
        let x = match v {
            Value::Integer(i) => *i as f64,
            Value::Float(f) => *f,
            _ => f64::NAN,
        };
        if x.is_finite() && (min..=max).contains(&x) {
            Ok(Some(x))
        } else {
            Err(self.error(
                key,
                v,
                format_args!("expected a number from {min} to {max}"),
            ))
        }
    }

    pub fn opt_table(&mut self, key: &str) -> Result<Option<&'a Table>, InputError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Table(t)) => Ok(Some(t)),
            Some(v) => Err(self.error(key, v, "expected a table")),
        }
    }

    /// An array of tables (`[[key]]`), each returned with its path.
    pub fn opt_tables(&mut self, key: &str) -> Result<Vec<(String, &'a Table)>, InputError> {
        let Some(v) = self.take(key) else {
            return Ok(Vec::new());
        };
        let Value::Array(items) = v else {
            return Err(self.error(key, v, format_args!("expected [[{key}]] tables")));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::Table(t) => Ok((format!("{}[{i}]", self.at(key)), t)),
                other => Err(InputError::new(format!(
                    "{}[{i}]: {} — expected a table",
                    self.at(key),
                    show(other)
                ))),
            })
            .collect()
    }

    /// Rejects any key that was not taken, naming the accepted ones.
    pub fn finish(&self) -> Result<(), InputError> {
        for (key, value) in self.table.iter() {
            if !self.asked.contains(key.as_str()) {
                let accepted: Vec<&str> = self.asked.iter().map(String::as_str).collect();
                return Err(InputError::new(format!(
                    "{}: unknown field, set to {} — accepted here: {}",
                    self.at(&quote(key)),
                    show(value),
                    accepted.join(", ")
                )));
            }
        }
        Ok(())
    }
}

/// A value as it would be written in TOML.
pub fn show(v: &Value) -> String {
    match v {
        Value::Table(_) => "{…}".to_string(),
        Value::Array(_) => "[…]".to_string(),
        Value::Datetime(d) => d.to_string(),
        other => quote(&other.to_string()),
    }
}

/// `"a", "b", "c"` from a name table.
pub fn names(table: &[(&str, &str)]) -> String {
    table
        .iter()
        .map(|(n, _)| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", ")
}
