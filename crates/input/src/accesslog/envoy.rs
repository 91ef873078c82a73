//! Envoy access logs: the `text_format` the listener wrote with (default:
//! Envoy's default format).
//!
//! | command | read as |
//! |---|---|
//! | `%START_TIME%` | when the request started (ms): the arrival itself (docs/semantics.md §8) |
//! | `%DURATION%` | not read: `%START_TIME%` is already the start, so nothing is subtracted |
//! | `%RESPONSE_FLAGS%` | Envoy's verdict: `RL` (rate limited) = rejected |
//! | `%RESPONSE_CODE%` | the verdict when there are no flags: 429 = rejected |
//! | `%REQ(:PATH)%`, `%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%` | the path, for `location` |
//! | `%DOWNSTREAM_REMOTE_ADDRESS%` (port dropped), `%REQ(X-…)%`, any other | a key, named by `client` / `ip` |

use std::borrow::Cow;
use std::ops::Range;

use super::parsed::{empty, utf8, EmptyKey, Key, LineError, Plain};
use super::template::Template;
use super::{time, Parsed, Verdict};
use crate::error::quoted;

/// Envoy's default access-log format (without its final newline).
pub(crate) const DEFAULT: &str = "[%START_TIME%] \"%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%\" %RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION% %RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% \"%REQ(X-FORWARDED-FOR)%\" \"%REQ(USER-AGENT)%\" \"%REQ(X-REQUEST-ID)%\" \"%REQ(:AUTHORITY)%\" \"%UPSTREAM_HOST%\"";

const ADDRESSES: &[&str] = &[
    "%DOWNSTREAM_REMOTE_ADDRESS%",
    "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%",
    "%DOWNSTREAM_DIRECT_REMOTE_ADDRESS%",
    "%DOWNSTREAM_DIRECT_REMOTE_ADDRESS_WITHOUT_PORT%",
    "%REQ(X-FORWARDED-FOR)%",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvoyFormat {
    pub template: Template,
    time: usize,
    status: Option<usize>,
    flags: Option<usize>,
    client: usize,
    ip: Option<usize>,
    path: Option<usize>,
    /// The field a split source is split by (`source`).
    source: Option<usize>,
    /// Per field, whether its value is an address whose port a key
    /// leaves out (see [`EnvoyFormat::key_value`]).
    strip: Box<[bool]>,
}

/// A command's canonical text: header names upper-cased, so
/// `%REQ(x-client)%` and `%REQ(X-CLIENT)%` are one field.
fn canonical(cmd: &str) -> String {
    cmd.to_ascii_uppercase()
}

/// Splits an Envoy format string into literals and `%COMMAND%` fields
/// (`%%` is a literal `%`). A final newline is dropped.
pub(crate) fn compile(format: &str) -> Result<Template, String> {
    let format = format.strip_suffix('\n').unwrap_or(format);
    let format = format.strip_suffix("\\n").unwrap_or(format);
    let mut pieces = Vec::new();
    let mut rest = format;
    let mut lit = String::new();
    while let Some(i) = rest.find('%') {
        lit.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(r) = after.strip_prefix('%') {
            lit.push('%');
            rest = r;
            continue;
        }
        let end = after
            .find('%')
            .ok_or_else(|| format!("% at {:?} is not closed", crate::error::quote(&rest[i..])))?;
        let cmd = &after[..end];
        if cmd.is_empty() || !cmd.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) {
            return Err(format!("%{cmd}% is not an Envoy command"));
        }
        pieces.push(Ok(std::mem::take(&mut lit)));
        pieces.push(Err(format!("%{}%", canonical(cmd))));
        rest = &after[end + 1..];
    }
    lit.push_str(rest);
    pieces.push(Ok(lit));
    Template::new(pieces)
}

impl EnvoyFormat {
    pub fn new(
        log_format: &str,
        time: Option<&str>,
        client: Option<&str>,
        ip: Option<&str>,
    ) -> Result<EnvoyFormat, (&'static str, String)> {
        let template = compile(log_format).map_err(|e| ("log_format", e))?;
        let vars = || template.names.join(", ");
        if let Some(t) = time {
            if canonical(t) != "%START_TIME%" {
                return Err((
                    "time",
                    format!(
                        "{} is not a time ratesim can read; it reads %START_TIME% (default format, ms)",
                        crate::error::quoted(t)
                    ),
                ));
            }
        }
        let time = template.field("%START_TIME%").ok_or_else(|| {
            (
                "log_format",
                format!(
                    "has no %START_TIME%, the time ratesim reads (the format has {})",
                    vars()
                ),
            )
        })?;
        if let Some(custom) = template
            .names
            .iter()
            .find(|n| n.starts_with("%START_TIME("))
        {
            return Err((
                "log_format",
                format!("{custom}: ratesim reads %START_TIME% in Envoy's default form only (2026-12-01T00:42:00.239Z)"),
            ));
        }
        let key = |role: &'static str, name: &str| {
            let c = canonical(name);
            template.field(&c).ok_or_else(|| {
                (
                    role,
                    format!(
                        "{} is not in log_format, which has {}",
                        crate::error::quoted(name),
                        vars()
                    ),
                )
            })
        };
        let default_ip = ADDRESSES
            .iter()
            .copied()
            .find(|a| template.field(a).is_some());
        let ip = match ip.or(default_ip) {
            Some(n) => Some(key("ip", n)?),
            None => None,
        };
        let client = match client.or(default_ip) {
            Some(n) => key("client", n)?,
            None => {
                return Err((
                    "client",
                    format!(
                        "missing — log_format has no client address; name the key, e.g. client = \"%REQ(X-CLIENT)%\" (it has {})",
                        vars()
                    ),
                ))
            }
        };
        let path = ["%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%", "%REQ(:PATH)%"]
            .iter()
            .find_map(|p| template.field(p));
        let strip = template
            .names
            .iter()
            .map(|name| name.starts_with("%DOWNSTREAM_") && !name.ends_with("WITHOUT_PORT%"))
            .collect();
        Ok(EnvoyFormat {
            time,
            status: template.field("%RESPONSE_CODE%"),
            flags: template.field("%RESPONSE_FLAGS%"),
            client,
            ip,
            path,
            source: None,
            strip,
            template,
        })
    }

    /// Splits the source by the command `name`'s value (`source`); an
    /// error names the commands the format has.
    pub fn split_by(&mut self, name: &str) -> Result<(), String> {
        let i = self.template.field(&canonical(name)).ok_or_else(|| {
            format!(
                "{} is not in log_format, which has {}",
                crate::error::quoted(name),
                self.template.names.join(", ")
            )
        })?;
        self.source = Some(i);
        Ok(())
    }

    pub fn has_verdict(&self) -> bool {
        self.flags.is_some() || self.status.is_some()
    }

    pub fn has_path(&self) -> bool {
        self.path.is_some()
    }

    /// The command the client key is read from.
    pub fn client_name(&self) -> &str {
        &self.template.names[self.client]
    }

    /// Field `i`'s value as a key: an address without its port.
    #[inline(always)]
    fn key_value<'l>(&self, i: usize, raw: &'l [u8]) -> &'l [u8] {
        match self.strip[i] {
            true => strip_port(raw),
            false => raw,
        }
    }

    /// The client and address keys of a line that matches the format (an
    /// empty one as logged): a look ahead for their table slots, which
    /// [`EnvoyFormat::parse`] then reads.
    pub fn keys<'l>(
        &self,
        line: &'l [u8],
        values: &mut Vec<Range<usize>>,
    ) -> Option<(&'l [u8], Option<&'l [u8]>)> {
        self.template.match_fields(line, values)?;
        let v = |i: usize| self.key_value(i, &line[values[i].clone()]);
        Some((v(self.client), self.ip.map(v)))
    }

    /// Reads one line; `values` is scratch space for the fields' byte
    /// ranges. Only the fields read are checked for UTF-8.
    pub fn parse<'l>(
        &'l self,
        line: &'l [u8],
        values: &mut Vec<Range<usize>>,
    ) -> Result<Parsed<'l>, LineError> {
        super::parsed::read_line(&self.template, line, values, |v| {
            self.parse_matched(line, v)
        })
    }

    /// [`EnvoyFormat::parse`] of a line whose fields' ranges `values` are
    /// those [`EnvoyFormat::keys`] found.
    pub fn parse_matched<'l>(
        &'l self,
        line: &'l [u8],
        values: &[Range<usize>],
    ) -> Result<Parsed<'l>, LineError> {
        let v = |i: usize| &line[values[i].clone()];
        let name = |i: usize| self.template.names[i].as_str();
        let raw = v(self.time);
        let stamp = match time::rfc3339_fast(raw) {
            Some((t, _)) => t,
            None => {
                let raw = utf8(raw)?;
                time::rfc3339(raw)
                    .map_err(|e| format!("%START_TIME% {} {e}", quoted(raw)))?
                    .0
            }
        };
        let verdict = self.verdict(line, values);
        let key = |i: usize| -> Key<'l> {
            match self.key_value(i, v(i)) {
                s if empty(s) => Err(EmptyKey(name(i))),
                s => Ok(Cow::Borrowed(s)),
            }
        };
        // Envoy matches routes on the path as sent (normalize_path and
        // merge_slashes are off by default).
        let path = self
            .path
            .map(|i| Cow::Borrowed(v(i).split(|&b| b == b'?').next().unwrap_or_default()));
        // docs/semantics.md §8: `%START_TIME%` is the request's start, so it
        // is the arrival; `%DURATION%` is not subtracted.
        Ok(Parsed {
            stamp,
            duration: 0,
            client: key(self.client),
            ip: self.ip.map(key),
            cost: 1,
            verdict,
            path,
            selector: None,
            // Envoy logs an absent value as `-`.
            source: self
                .source
                .map(|i| Cow::Borrowed(if v(i) == b"-" { &b""[..] } else { v(i) })),
        })
    }
}

impl EnvoyFormat {
    /// The verdict a line's `%RESPONSE_FLAGS%` (`RL`: rate limited) or,
    /// without them, its `%RESPONSE_CODE%` (429) says, if it has either.
    #[inline(always)]
    fn verdict(&self, line: &[u8], values: &[Range<usize>]) -> Option<Verdict> {
        let v = |i: usize| &line[values[i].clone()];
        let rejected = match (self.flags, self.status) {
            (Some(i), _) => v(i).split(|&b| b == b',').any(|f| f == b"RL"),
            (None, Some(i)) => v(i) == b"429",
            (None, None) => return None,
        };
        Some(match rejected {
            true => Verdict::Rejected,
            false => Verdict::Passed,
        })
    }

    /// Whether [`EnvoyFormat::read_plain`] reads its lines: no field the
    /// source is split by, and no path field when `location` is set
    /// (whose path would be read).
    pub fn plain(&self, location: bool) -> bool {
        self.source.is_none() && !(location && self.path.is_some())
    }

    /// What [`EnvoyFormat::parse_matched`] reads of a line of a
    /// [`EnvoyFormat::plain`] format whose fields' ranges are `values`,
    /// read without the cases no usual line has: `None` unless the
    /// `%START_TIME%` is of the form its fast reader reads and neither
    /// key is empty. Where it gives something, `parse_matched` gives the
    /// same; a line it gives nothing for is read by `parse_matched`.
    #[inline(always)]
    pub fn read_plain<'l>(&self, line: &'l [u8], values: &[Range<usize>]) -> Option<Plain<'l>> {
        let v = |i: usize| &line[values[i].clone()];
        let (stamp, _) = time::rfc3339_fast(v(self.time))?;
        let key = |i: usize| self.key_value(i, v(i));
        let (client, ip) = Plain::keys(key(self.client), self.ip.map(key))?;
        Some(Plain {
            stamp,
            // docs/semantics.md §8: `%DURATION%` is not subtracted.
            duration: 0,
            verdict: self.verdict(line, values),
            client,
            ip,
        })
    }
}

/// `10.0.0.1:5678` → `10.0.0.1`; `[::1]:80` → `[::1]`.
fn strip_port(s: &[u8]) -> &[u8] {
    match memchr::memrchr(b':', s) {
        Some(i)
            if s[i + 1..].iter().all(u8::is_ascii_digit)
                && (s.starts_with(b"[") || memchr::memchr(b':', &s[..i]).is_none()) =>
        {
            &s[..i]
        }
        _ => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl EnvoyFormat {
        /// [`EnvoyFormat::parse`] of a line given as text.
        fn parse_str<'l>(&'l self, line: &'l str) -> Result<Parsed<'l>, LineError> {
            self.parse(line.as_bytes(), &mut Vec::new())
        }
    }

    #[test]
    fn the_default_format_reads_start_time_flags_and_forwarded_for() {
        let f = EnvoyFormat::new(DEFAULT, None, None, None).unwrap();
        let line = r#"[2026-12-01T00:42:00.239Z] "GET /api?x=1 HTTP/1.1" 429 RL 0 18 0 - "10.0.0.7" "curl/8" "id-1" "svc" "-""#;
        let p = f.parse_str(line).unwrap();
        assert_eq!(p.stamp, 1_796_085_720_239_000_000);
        assert_eq!(p.verdict, Some(Verdict::Rejected));
        assert_eq!(p.client_key(), "10.0.0.7");
        assert_eq!(p.path.as_deref(), Some(&b"/api"[..]));
        let ok = line.replace("429 RL", "200 -");
        assert_eq!(f.parse_str(&ok).unwrap().verdict, Some(Verdict::Passed));
    }

    // docs/semantics.md §8: %START_TIME% is the request's start,
    // so a 250 ms %DURATION% leaves the arrival where it is.
    #[test]
    fn the_arrival_is_start_time_and_duration_is_not_subtracted() {
        let f = EnvoyFormat::new(DEFAULT, None, None, None).unwrap();
        let p = f
            .parse_str(r#"[2026-12-01T00:42:00.239Z] "GET /api HTTP/1.1" 200 - 0 18 250 - "10.0.0.7" "curl/8" "id-1" "svc" "-""#)
            .unwrap();
        assert_eq!((p.stamp, p.duration), (1_796_085_720_239_000_000, 0));
    }

    #[test]
    fn a_downstream_address_loses_its_port() {
        assert_eq!(strip_port(b"10.0.0.1:5678"), b"10.0.0.1");
        assert_eq!(strip_port(b"[::1]:80"), b"[::1]");
        assert_eq!(strip_port(b"::1"), b"::1");
        let f = EnvoyFormat::new(
            "%START_TIME% %DOWNSTREAM_REMOTE_ADDRESS% %REQ(x-client)%",
            None,
            Some("%REQ(X-CLIENT)%"),
            None,
        )
        .unwrap();
        let p = f
            .parse_str("2026-12-01T00:42:00.239Z 10.0.0.1:5678 alice")
            .unwrap();
        assert_eq!((p.client_key(), p.ip_key()), ("alice", Some("10.0.0.1")));
    }
}
