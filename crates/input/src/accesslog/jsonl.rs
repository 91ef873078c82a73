//! JSON lines: one object per line, fields named in the scenario.
//!
//! `time` (default field `"time"`) is epoch seconds, ms, µs or ns
//! (`time_unit = "s" | "ms" | "us" | "ns"`, numbers read exactly from
//! their text, never through a float) or an RFC 3339 string
//! (`time_unit = "rfc3339"`; a string time is read so whatever the unit);
//! `client` (default `"client"`), optional `ip` and `cost` name top-level
//! fields. The time is the arrival: JSON lines carry no duration.
//!
//! A plain line — no escape, no control character in a string, nothing
//! nested deep — is read byte by byte ([`plain`]); any other goes to
//! serde_json, which reads it or refuses it with its own message.

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
/// escape), a number as written. `raw` is the value's JSON text, as
/// serde_json's `RawValue` holds it; `escapes`: whether it may hold an
/// escape (a plain line's strings hold none, see [`plain`]). Inlined:
/// out of line, its 24-byte result came back through memory.
#[inline(always)]
fn text(raw: &str, escapes: bool) -> Option<Cow<'_, str>> {
    if raw.starts_with('"') {
        // A raw string is valid JSON: without a backslash, its text is
        // what lies between the quotes.
        match raw.get(1..raw.len() - 1) {
            Some(inner) if !escapes || !inner.contains('\\') => Some(Cow::Borrowed(inner)),
            _ => serde_json::from_str::<String>(raw).ok().map(Cow::Owned),
        }
    } else if raw.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        Some(Cow::Borrowed(raw))
    } else {
        None
    }
}

/// The fields a line is read for: time, client, ip, cost, source.
const WANTED: usize = 5;

/// Each wanted field's value as JSON text, as serde_json's `RawValue`
/// holds it (a string with its quotes, a number as written, `true`,
/// `false`, `null`, an array or an object); a later duplicate wins.
type Raws<'l> = [Option<&'l str>; WANTED];

/// How deep [`plain`] follows arrays and objects inside a value.
const PLAIN_DEPTH: u32 = 16;

/// [`Raws`] of a plain line, read byte by byte: one JSON object, no
/// backslash and no control character in any string, values nested at
/// most [`PLAIN_DEPTH`] deep. `None` for any other line — an escape, a
/// line that is not JSON — which serde_json then reads, and refuses with
/// its own message if it must. A line this accepts is valid JSON, and
/// what it gives is what serde_json gives (the test
/// `a_plain_line_reads_as_serde_json_reads_it` checks that on random
/// lines, and that it reads each one serde_json reads that was built
/// plain and left unedited).
///
/// Each step below takes the position of what it reads and returns the
/// position after it (`None`: not plain JSON).
fn plain<'l>(line: &'l str, names: &[Option<&str>; WANTED]) -> Option<Raws<'l>> {
    let b = line.as_bytes();
    let mut values = [None; WANTED];
    let mut at = ws(b, 0);
    (b.get(at) == Some(&b'{')).then_some(())?;
    at = ws(b, at + 1);
    if b.get(at) == Some(&b'}') {
        at += 1;
    } else {
        loop {
            let key_end = string(b, at)?;
            let key = line.get(at + 1..key_end - 1)?;
            at = ws(b, key_end);
            (b.get(at) == Some(&b':')).then_some(())?;
            let start = ws(b, at + 1);
            // The usual values first, without a call.
            at = match *b.get(start)? {
                b'"' => string(b, start)?,
                b'-' | b'0'..=b'9' => number(b, start)?,
                _ => value(b, start, 0)?,
            };
            let raw = line.get(start..at)?;
            for (v, n) in values.iter_mut().zip(names) {
                // Byte by byte: a call to memcmp costs more than a key's
                // few bytes.
                let same = |n: &str| {
                    n.len() == key.len() && n.bytes().zip(key.bytes()).all(|(a, b)| a == b)
                };
                if n.is_some_and(same) {
                    *v = Some(raw);
                }
            }
            at = ws(b, at);
            match *b.get(at)? {
                b',' => at = ws(b, at + 1),
                b'}' => {
                    at += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    (ws(b, at) == b.len()).then_some(values)
}

/// JSON's whitespace: space, tab, line feed, carriage return.
#[inline(always)]
fn ws(b: &[u8], at: usize) -> usize {
    // Most JSON logs are written without it.
    if !matches!(b.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        return at;
    }
    let rest = b.get(at..).unwrap_or_default();
    at + rest
        .iter()
        .take_while(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        .count()
}

/// A string without escapes or control characters, quotes included.
#[inline(always)]
fn string(b: &[u8], at: usize) -> Option<usize> {
    (b.get(at) == Some(&b'"')).then_some(())?;
    let end = string_stop(b, at + 1)?;
    (b[end] == b'"').then_some(end + 1)
}

/// The first quote, backslash or control character at or after `i`:
/// eight bytes at a time while eight are left, then one at a time.
#[inline(always)]
fn string_stop(b: &[u8], mut i: usize) -> Option<usize> {
    use super::word::{at, below, equal, first};
    while let Some(w) = at(b, i) {
        let stop = equal(w, b'"') | equal(w, b'\\') | below(w, 0x20);
        if stop != 0 {
            return Some(i + first(stop));
        }
        i += 8;
    }
    let n = b
        .get(i..)?
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
    Some(i + n)
}

/// Digits, none or more.
#[inline(always)]
fn digits(b: &[u8], at: usize) -> usize {
    let rest = b.get(at..).unwrap_or_default();
    at + rest.iter().take_while(|c| c.is_ascii_digit()).count()
}

/// A JSON number: `-`? then `0` or a digit 1–9 and digits, then `.` and
/// digits, then `e` or `E`, a sign and digits (each part after the
/// integer optional). A leading zero followed by a digit stops after the
/// zero, and the line is refused where the digit stands.
#[inline(always)]
fn number(b: &[u8], mut at: usize) -> Option<usize> {
    if b.get(at) == Some(&b'-') {
        at += 1;
    }
    at = match *b.get(at)? {
        b'0' => at + 1,
        b'1'..=b'9' => digits(b, at + 1),
        _ => return None,
    };
    if b.get(at) == Some(&b'.') {
        at = Some(digits(b, at + 1)).filter(|&end| end > at + 1)?;
    }
    if let Some(b'e' | b'E') = b.get(at) {
        at += 1;
        if let Some(b'+' | b'-') = b.get(at) {
            at += 1;
        }
        at = Some(digits(b, at)).filter(|&end| end > at)?;
    }
    Some(at)
}

/// `word`, whole.
fn word(b: &[u8], at: usize, word: &[u8]) -> Option<usize> {
    let end = at + word.len();
    (b.get(at..end)? == word).then_some(end)
}

/// One value, nested `depth` deep.
fn value(b: &[u8], at: usize, depth: u32) -> Option<usize> {
    match *b.get(at)? {
        b'"' => string(b, at),
        b'-' | b'0'..=b'9' => number(b, at),
        b't' => word(b, at, b"true"),
        b'f' => word(b, at, b"false"),
        b'n' => word(b, at, b"null"),
        open @ (b'[' | b'{') if depth < PLAIN_DEPTH => {
            let close = open + 2; // `]` or `}`
            let mut at = ws(b, at + 1);
            if b.get(at) == Some(&close) {
                return Some(at + 1);
            }
            loop {
                if open == b'{' {
                    at = ws(b, string(b, at)?);
                    (b.get(at) == Some(&b':')).then_some(())?;
                    at = ws(b, at + 1);
                }
                at = ws(b, value(b, at, depth + 1)?);
                match *b.get(at)? {
                    b',' => at = ws(b, at + 1),
                    c if c == close => return Some(at + 1),
                    _ => return None,
                }
            }
        }
        _ => None,
    }
}

/// Reads a JSON object keeping only the values of the fields named in
/// `names` (a later duplicate wins, as in a map): every value is still
/// checked as JSON text, so a line that is not JSON is refused with
/// serde_json's message, but nothing else is kept or allocated (a value
/// only a `Value` would refuse, such as the number `1e400`, passes).
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

/// [`Raws`] of any line, by serde_json: the line's message if it is not
/// one JSON object.
fn by_serde<'l>(line: &'l str, wanted: &Wanted<'_>) -> Result<Raws<'l>, String> {
    let mut de = serde_json::Deserializer::from_str(line);
    let raws = wanted
        .deserialize(&mut de)
        .and_then(|raws| de.end().map(|()| raws))
        .map_err(|e| format!("is not a JSON object: {e}"))?;
    Ok(raws.map(|r| r.map(RawValue::get)))
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
        // A plain line's strings have no escape (see `text`).
        let (raws, escapes) = match plain(line, &wanted.names) {
            Some(raws) => (raws, false),
            None => (by_serde(line, &wanted)?, true),
        };
        let [time_raw, client_raw, ip_raw, cost_raw, source_raw] = raws;
        let field = |raw: Option<&'l str>, name: &str| -> Result<Option<Cow<'l, str>>, String> {
            match raw {
                None | Some("null") => Ok(None),
                Some(raw) => text(raw, escapes)
                    .map(Some)
                    .ok_or_else(|| format!("field {name:?} is not a string or a number")),
            }
        };
        let raw_time = field(time_raw, &self.time)?
            .ok_or_else(|| format!("has no time field {:?}", self.time))?;
        let quoted_time = time_raw.is_some_and(|r| r.starts_with('"'));
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
        let key = |raw: Option<&'l str>, name: &str| -> Result<Option<Cow<'l, str>>, String> {
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

    /// Random lines, most of them JSON objects, some cut or with a byte
    /// added or dropped: whatever [`plain`] reads, serde_json reads
    /// the same (the same raw value of every wanted field), and every
    /// line serde_json reads that has no escape, no control character in
    /// a string and nothing nested deeper than [`PLAIN_DEPTH`], `plain`
    /// reads too.
    #[test]
    fn a_plain_line_reads_as_serde_json_reads_it() {
        let mut x = 5u64;
        let mut next = move |n: usize| crate::pick(&mut x, n);
        // A wanted name left out, and one wanted twice.
        let wanted = Wanted {
            names: [Some("time"), Some("client"), Some("ip"), None, Some("time")],
        };
        let keys = ["time", "client", "ip", "cost", "x", "", "tim", "é"];
        // Values plain reads, and values it leaves to serde_json (an
        // escape, a control character, nesting past PLAIN_DEPTH).
        let deep_plain = format!("{}1{}", "{\"a\":[".repeat(8), "]}".repeat(8));
        let plain_values = [
            "\"k1\"",
            "\"\"",
            "\"a b\"",
            "\"é\"",
            "0",
            "-0",
            "12",
            "1.5",
            "1e5",
            "1E+5",
            "-1.5e-3",
            "1764547200.000",
            "true",
            "false",
            "null",
            "[]",
            "[1, \"a\", [null]]",
            "{}",
            "{\"a\":{\"b\":[1]}}",
            // As deep as plain reads.
            &deep_plain,
        ];
        // Not JSON.
        let bad_values = [
            "012",
            "1.",
            ".5",
            "1e",
            "-",
            "nul",
            "[1,]",
            "{\"a\":1,}",
            "'k'",
        ];
        let deep = format!("{}1{}", "[".repeat(20), "]".repeat(20));
        assert_eq!(PLAIN_DEPTH, 16);
        let serde_values = ["\"a\\\"b\"", "\"\\u0041\"", "\"a\tb\"", deep.as_str()];
        // One in 64 is not JSON's whitespace.
        let space = |r: usize| match r {
            0 => "\u{a0}",
            _ => ["", " ", "\t", "\r", "  ", "", ""][r % 7],
        };
        let bytes = "{}[]:,\" 0e.-\\t";
        let (mut plain_read, mut serde_only, mut refused) = (0, 0, 0);
        for _ in 0..40_000 {
            let mut escaped = false;
            let mut line = String::new();
            line += space(next(64));
            line.push('{');
            for k in 0..next(5) {
                if k > 0 {
                    line += space(next(64));
                    line.push(',');
                }
                line += space(next(64));
                line += &format!("\"{}\"", keys[next(keys.len())]);
                line += space(next(64));
                line.push(':');
                line += space(next(64));
                match next(16) {
                    0 | 1 => {
                        escaped = true;
                        line += serde_values[next(serde_values.len())];
                    }
                    2 => line += bad_values[next(bad_values.len())],
                    _ => line += plain_values[next(plain_values.len())],
                }
                line += space(next(64));
            }
            line.push('}');
            line += space(next(64));
            let mut chars: Vec<char> = line.chars().collect();
            let mutated = next(4) == 0;
            if mutated {
                let at = next(chars.len() + 1);
                match next(3) {
                    0 => chars.truncate(at),
                    1 => chars.insert(at, bytes.as_bytes()[next(bytes.len())] as char),
                    _ if at < chars.len() => drop(chars.remove(at)),
                    _ => {}
                }
            }
            let line: String = chars.into_iter().collect();
            let by_hand = plain(&line, &wanted.names);
            let serde = by_serde(&line, &wanted);
            if let Some(raws) = by_hand {
                assert_eq!(Ok(raws), serde, "{line:?}");
            }
            match (by_hand, &serde) {
                (Some(_), _) => plain_read += 1,
                (None, Ok(_)) => serde_only += 1,
                (None, Err(_)) => refused += 1,
            }
            if !escaped && !mutated && serde.is_ok() {
                assert!(by_hand.is_some(), "{line:?}");
            }
        }
        // Each way was taken many times.
        assert!(
            plain_read > 10_000 && serde_only > 1_000 && refused > 5_000,
            "{plain_read} {serde_only} {refused}"
        );
    }

    /// A string's end found eight bytes at a time is where a byte-by-byte
    /// search finds it: every length up to 40, the stop (a quote, a
    /// backslash, a control character) at every place or none, and bytes
    /// of every kind before it.
    #[test]
    fn a_string_ends_where_a_byte_by_byte_search_ends_it() {
        let fill = [
            b'a', b' ', 0x7f, 0x80, 0xc3, 0xa9, b'!', b'#', b'[', b']', 0x21,
        ];
        let stops = [b'"', b'\\', 0x00, 0x1f, b'\n'];
        let mut x = 9u64;
        for len in 0..40usize {
            for at in 0..=len {
                for stop in stops {
                    let mut b: Vec<u8> = (0..len)
                        .map(|_| fill[crate::pick(&mut x, fill.len())])
                        .collect();
                    if at < len {
                        b[at] = stop;
                    }
                    for from in 0..=len.min(3) {
                        let want = b[from..]
                            .iter()
                            .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
                            .map(|n| from + n);
                        assert_eq!(string_stop(&b, from), want, "{b:?} from {from}");
                    }
                }
            }
        }
    }
}
