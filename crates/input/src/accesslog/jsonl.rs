//! JSON lines: one object per line, fields named in the scenario.
//!
//! `time` (default field `"time"`) is epoch seconds, ms, µs or ns
//! (`time_unit = "s" | "ms" | "us" | "ns"`, numbers read exactly from
//! their text, never through a float) or an RFC 3339 string
//! (`time_unit = "rfc3339"`; a string time is read so whatever the unit);
//! `client` (default `"client"`), optional `ip` and `cost` name top-level
//! fields. The time is the arrival: JSON lines carry no duration.

use std::borrow::Cow;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::parsed::{utf8, LineError};
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

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonlFormat {
    pub time: String,
    pub unit: Unit,
    pub client: String,
    pub ip: Option<String>,
    pub cost: Option<String>,
    /// The field a split source is split by (`source`).
    pub source: Option<String>,
}

/// A field's value as text: a string unquoted (borrowed when it has no
/// escape), a number as written.
fn text<'l>(raw: &'l RawValue) -> Option<Cow<'l, str>> {
    let s = raw.get();
    if s.starts_with('"') {
        // A raw string is valid JSON: without a backslash, its text is
        // what lies between the quotes.
        match s.get(1..s.len() - 1) {
            Some(inner) if !inner.contains('\\') => Some(Cow::Borrowed(inner)),
            _ => serde_json::from_str::<String>(s).ok().map(Cow::Owned),
        }
    } else if s.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        Some(Cow::Borrowed(s))
    } else {
        None
    }
}

/// The fields a line is read for: time, client, ip, cost, source.
const WANTED: usize = 5;

/// Reads a JSON object keeping only the values of the fields named in
/// `names` (a later duplicate wins, as in a map): every value is still
/// checked as JSON, so a line is refused for what a whole map would be,
/// with the same message, but nothing else is kept or allocated.
struct Wanted<'f> {
    names: [Option<&'f str>; WANTED],
}

/// One key, as the set of wanted fields it names.
struct WantedKey<'a, 'f>(&'a Wanted<'f>);

impl<'de> DeserializeSeed<'de> for WantedKey<'_, '_> {
    type Value = u8;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u8, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for WantedKey<'_, '_> {
    type Value = u8;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<u8, E> {
        Ok(self
            .0
            .names
            .iter()
            .enumerate()
            .filter(|(_, n)| **n == Some(key))
            .fold(0u8, |set, (i, _)| set | 1 << i))
    }
}

impl<'de> DeserializeSeed<'de> for &Wanted<'_> {
    type Value = [Option<&'de RawValue>; WANTED];

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for &Wanted<'_> {
    type Value = [Option<&'de RawValue>; WANTED];

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        // What a map's visitor says, so the messages stay the same.
        f.write_str("a map")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut values = [None; WANTED];
        while let Some(set) = map.next_key_seed(WantedKey(self))? {
            let value: &'de RawValue = map.next_value()?;
            for (i, v) in values.iter_mut().enumerate() {
                if set & (1 << i) != 0 {
                    *v = Some(value);
                }
            }
        }
        Ok(values)
    }
}

/// A text as bytes, borrowed or owned as it was.
fn bytes(s: Cow<'_, str>) -> Cow<'_, [u8]> {
    match s {
        Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
        Cow::Owned(s) => Cow::Owned(s.into_bytes()),
    }
}

impl JsonlFormat {
    pub fn parse<'l>(&self, line: &'l [u8]) -> Result<Parsed<'l>, LineError> {
        let line = utf8(line)?;
        let wanted = Wanted {
            names: [
                Some(self.time.as_str()),
                Some(self.client.as_str()),
                self.ip.as_deref(),
                self.cost.as_deref(),
                self.source.as_deref(),
            ],
        };
        let mut de = serde_json::Deserializer::from_str(line);
        let raws = (&wanted)
            .deserialize(&mut de)
            .and_then(|raws| de.end().map(|()| raws))
            .map_err(|e| format!("is not a JSON object: {e}"))?;
        let [time_raw, client_raw, ip_raw, cost_raw, source_raw] = raws;
        let field =
            |raw: Option<&'l RawValue>, name: &str| -> Result<Option<Cow<'l, str>>, String> {
                match raw {
                    None => Ok(None),
                    Some(raw) if raw.get() == "null" => Ok(None),
                    Some(raw) => text(raw)
                        .map(Some)
                        .ok_or_else(|| format!("field {name:?} is not a string or a number")),
                }
            };
        let raw_time = field(time_raw, &self.time)?
            .ok_or_else(|| format!("has no time field {:?}", self.time))?;
        let quoted_time = time_raw.is_some_and(|r| r.get().starts_with('"'));
        let rfc3339 = self.unit == Unit::Rfc3339 || (quoted_time && raw_time.contains('T'));
        let fast = match rfc3339 {
            true => time::rfc3339_fast(raw_time.as_bytes()).map(|(t, _)| t),
            false => time::epoch_fast(raw_time.as_bytes(), self.unit.ns()),
        };
        let stamp = match fast {
            Some(t) => t,
            None => if rfc3339 {
                time::rfc3339(&raw_time).map(|(t, _)| t)
            } else {
                time::epoch(&raw_time, self.unit.ns())
            }
            .map_err(|e| format!("time {} {e}", crate::error::quoted(&raw_time)))?,
        };
        let key = |raw: Option<&'l RawValue>, name: &str| -> Result<Option<Cow<'l, str>>, String> {
            match field(raw, name)? {
                Some(s) if s.is_empty() => Err(format!("field {name:?} is empty")),
                other => Ok(other),
            }
        };
        let client = key(client_raw, &self.client)?
            .ok_or_else(|| format!("has no client field {:?}", self.client))?;
        let ip = match &self.ip {
            Some(n) => key(ip_raw, n)?,
            None => None,
        };
        let cost = match self
            .cost
            .as_deref()
            .map(|n| field(cost_raw, n))
            .transpose()?
            .flatten()
        {
            None => 1,
            Some(c) => match c.parse::<u64>() {
                Ok(c) if (1..=crate::fields::MAX_COUNT).contains(&c) => c,
                _ => {
                    return Err(format!(
                        "cost {} — expected a positive whole number",
                        crate::error::quoted(&c)
                    )
                    .into())
                }
            },
        };
        // A line without the field (or with null) has an empty value.
        let source = match &self.source {
            Some(n) => Some(bytes(field(source_raw, n)?.unwrap_or_default())),
            None => None,
        };
        Ok(Parsed {
            stamp,
            duration: 0,
            client: Ok(bytes(client)),
            ip: ip.map(|ip| Ok(bytes(ip))),
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
                br#"{"ts": 1796085720.123456789, "user": "a\"b", "addr": "10.0.0.1", "weight": 3}"#,
            )
            .unwrap();
        assert_eq!(p.stamp, 1_796_085_720_123_456_789);
        assert_eq!(
            (p.client_key(), p.ip_key(), p.cost),
            ("a\"b", Some("10.0.0.1"), 3)
        );
        let p = fmt(Unit::Ns)
            .parse(br#"{"ts": 1796085720123456789, "user": 42}"#)
            .unwrap();
        assert_eq!(
            (p.stamp, p.client_key(), p.cost),
            (1_796_085_720_123_456_789, "42", 1)
        );
    }

    #[test]
    fn rfc3339_strings_and_bad_lines() {
        let p = fmt(Unit::Rfc3339)
            .parse(br#"{"ts": "2026-12-01T00:42:00.239Z", "user": "a"}"#)
            .unwrap();
        assert_eq!(p.stamp, 1_796_085_720_239_000_000);
        assert!(fmt(Unit::S)
            .parse(br#"{"user": "a"}"#)
            .unwrap_err()
            .message(b"")
            .contains("no time"));
        assert!(fmt(Unit::S)
            .parse(br#"{"ts": 1, "user": ""}"#)
            .unwrap_err()
            .message(b"")
            .contains("empty"));
        assert!(fmt(Unit::S).parse(b"not json").is_err());
        assert!(fmt(Unit::S).parse(br#"{"ts": 1e9, "user": "a"}"#).is_err());
    }
}
