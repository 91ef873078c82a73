//! JSON lines: one object per line, fields named in the scenario.
//!
//! `time` (default field `"time"`) is epoch seconds, ms, µs or ns
//! (`time_unit = "s" | "ms" | "us" | "ns"`, numbers read exactly from
//! their text, never through a float) or an RFC 3339 string
//! (`time_unit = "rfc3339"`; a string time is read so whatever the unit);
//! `client` (default `"client"`), optional `ip` and `cost` name top-level
//! fields. The time is the arrival: JSON lines carry no duration.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::value::RawValue;

use super::{time, Parsed};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    S,
    Ms,
    Us,
    Ns,
    Rfc3339,
}

pub const UNITS: &str = "\"s\", \"ms\", \"us\", \"ns\", \"rfc3339\"";

impl Unit {
    pub fn parse(s: &str) -> Option<Unit> {
        Some(match s {
            "s" => Unit::S,
            "ms" => Unit::Ms,
            "us" => Unit::Us,
            "ns" => Unit::Ns,
            "rfc3339" => Unit::Rfc3339,
            _ => return None,
        })
    }

    fn ns(self) -> u64 {
        match self {
            Unit::S | Unit::Rfc3339 => 1_000_000_000,
            Unit::Ms => 1_000_000,
            Unit::Us => 1_000,
            Unit::Ns => 1,
        }
    }
}

#[derive(Debug, Clone)]
pub struct JsonlFormat {
    pub time: String,
    pub unit: Unit,
    pub client: String,
    pub ip: Option<String>,
    pub cost: Option<String>,
    /// The field a split source is split by (`source`).
    pub source: Option<String>,
}

/// A field's value as text: a string unquoted, a number as written.
fn text<'l>(raw: &'l RawValue) -> Option<Cow<'l, str>> {
    let s = raw.get();
    if s.starts_with('"') {
        serde_json::from_str::<Cow<'l, str>>(s).ok()
    } else if s.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        Some(Cow::Borrowed(s))
    } else {
        None
    }
}

impl JsonlFormat {
    pub fn parse<'l>(&self, line: &'l str) -> Result<Parsed<'l>, String> {
        let map: HashMap<Cow<'l, str>, &'l RawValue> =
            serde_json::from_str(line).map_err(|e| format!("is not a JSON object: {e}"))?;
        let field = |name: &str| -> Result<Option<Cow<'l, str>>, String> {
            match map.get(name) {
                None => Ok(None),
                Some(raw) if raw.get() == "null" => Ok(None),
                Some(raw) => text(raw)
                    .map(Some)
                    .ok_or_else(|| format!("field {name:?} is not a string or a number")),
            }
        };
        let raw_time =
            field(&self.time)?.ok_or_else(|| format!("has no time field {:?}", self.time))?;
        let quoted_time = map
            .get(self.time.as_str())
            .is_some_and(|r| r.get().starts_with('"'));
        let stamp = if self.unit == Unit::Rfc3339 || (quoted_time && raw_time.contains('T')) {
            time::rfc3339(&raw_time).map(|(t, _)| t)
        } else {
            time::epoch(&raw_time, self.unit.ns())
        }
        .map_err(|e| format!("time {} {e}", crate::error::quoted(&raw_time)))?;
        let key = |name: &str| -> Result<Option<Cow<'l, str>>, String> {
            match field(name)? {
                Some(s) if s.is_empty() => Err(format!("field {name:?} is empty")),
                other => Ok(other),
            }
        };
        let client =
            key(&self.client)?.ok_or_else(|| format!("has no client field {:?}", self.client))?;
        let ip = match &self.ip {
            Some(n) => key(n)?,
            None => None,
        };
        let cost = match self.cost.as_deref().map(field).transpose()?.flatten() {
            None => 1,
            Some(c) => match c.parse::<u64>() {
                Ok(c) if (1..=crate::fields::MAX_COUNT).contains(&c) => c,
                _ => {
                    return Err(format!(
                        "cost {} — expected a positive whole number",
                        crate::error::quoted(&c)
                    ))
                }
            },
        };
        // A line without the field (or with null) has an empty value.
        let source = match &self.source {
            Some(n) => Some(field(n)?.unwrap_or_default()),
            None => None,
        };
        Ok(Parsed {
            stamp,
            duration: 0,
            client: Ok(client),
            ip: ip.map(Ok),
            cost,
            verdict: None,
            path: None,
            selector: None,
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(unit: Unit) -> JsonlFormat {
        JsonlFormat {
            time: "ts".into(),
            unit,
            client: "user".into(),
            ip: Some("addr".into()),
            cost: Some("weight".into()),
            source: None,
        }
    }

    #[test]
    fn numbers_are_read_exactly_from_their_text() {
        let p = fmt(Unit::S)
            .parse(
                r#"{"ts": 1796085720.123456789, "user": "a\"b", "addr": "10.0.0.1", "weight": 3}"#,
            )
            .unwrap();
        assert_eq!(p.stamp, 1_796_085_720_123_456_789);
        assert_eq!(
            (p.client_key(), p.ip_key(), p.cost),
            ("a\"b", Some("10.0.0.1"), 3)
        );
        let p = fmt(Unit::Ns)
            .parse(r#"{"ts": 1796085720123456789, "user": 42}"#)
            .unwrap();
        assert_eq!(
            (p.stamp, p.client_key(), p.cost),
            (1_796_085_720_123_456_789, "42", 1)
        );
    }

    #[test]
    fn rfc3339_strings_and_bad_lines() {
        let p = fmt(Unit::Rfc3339)
            .parse(r#"{"ts": "2026-12-01T00:42:00.239Z", "user": "a"}"#)
            .unwrap();
        assert_eq!(p.stamp, 1_796_085_720_239_000_000);
        assert!(fmt(Unit::S)
            .parse(r#"{"user": "a"}"#)
            .unwrap_err()
            .contains("no time"));
        assert!(fmt(Unit::S)
            .parse(r#"{"ts": 1, "user": ""}"#)
            .unwrap_err()
            .contains("empty"));
        assert!(fmt(Unit::S).parse("not json").is_err());
        assert!(fmt(Unit::S).parse(r#"{"ts": 1e9, "user": "a"}"#).is_err());
    }
}
