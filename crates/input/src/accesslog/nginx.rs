//! nginx access logs: the `log_format` the server wrote with.
//!
//! The format string is the one in `nginx.conf` (default: nginx's own
//! `combined`). Its variables are fields; ratesim reads these and skips
//! over any other:
//!
//! | variable | read as |
//! |---|---|
//! | `$msec` | the time the line was written, seconds with ms |
//! | `$time_iso8601`, `$time_local` | the same, whole seconds (needs `subsecond`) |
//! | `$request_time` | the request's duration (s with ms): arrival = time − duration |
//! | `$limit_req_status` | nginx's verdict: PASSED, DELAYED, REJECTED (and `_DRY_RUN`) |
//! | `$status` | the verdict when `$limit_req_status` is absent: the configured `limit_req_status` (default 503) = rejected, any other = not rejected |
//! | `$request`, `$uri`, `$request_uri` | the path, for `location` |
//! | any (`$remote_addr`, `$http_x_client`, `$arg_user`, …) | a key, named by `client` / `ip` |

use std::borrow::Cow;
use std::ops::Range;

use super::parsed::{empty, utf8, EmptyKey, Key, LineError, Plain};
use super::template::{Seg, Template};
use super::{time, Parsed, Verdict, NS};
use crate::error::quoted;

/// nginx's predefined `combined` format.
pub(crate) const COMBINED: &str = "$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent \"$http_referer\" \"$http_user_agent\"";

/// nginx's default `limit_req_status`: the status of a rejected request.
pub(crate) const DEFAULT_LIMIT_REQ_STATUS: u16 = 503;

/// Time variables ratesim reads, best first.
pub(crate) const TIME_VARS: &[&str] = &["$msec", "$time_iso8601", "$time_local"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TimeKind {
    Msec,
    Iso,
    Local,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NginxFormat {
    pub template: Template,
    time: (usize, TimeKind),
    pub time_var: String,
    duration: Option<usize>,
    status: Option<usize>,
    limit_req_status: Option<usize>,
    /// The status nginx answers a rejection with (`limit_req_status`):
    /// without `$limit_req_status`, `$status` equal to it is a rejection.
    pub rejected_status: u16,
    client: usize,
    ip: Option<usize>,
    /// The field the request path is read from, and which variable it is.
    path: Option<(usize, PathVar)>,
    /// The field lines are selected by (`only`, `except`).
    select: Option<usize>,
    /// The field a split source is split by (`source`).
    source: Option<usize>,
}

/// Splits an nginx format string into literals and `$variables`
/// (`$name` or `${name}`).
pub(crate) fn compile(format: &str) -> Result<Template, String> {
    let mut pieces = Vec::new();
    let mut lit = String::new();
    let mut chars = format.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        if c != '$' {
            lit.push(c);
            continue;
        }
        let braced = chars.peek().map(|(_, c)| *c) == Some('{');
        if braced {
            chars.next();
        }
        let mut name = String::new();
        while let Some(&(_, c)) = chars.peek() {
            if c.is_ascii_alphanumeric() || c == '_' {
                name.push(c);
                chars.next();
            } else {
                break;
            }
        }
        if braced && chars.next().map(|(_, c)| c) != Some('}') {
            return Err(format!("${{{name} has no closing brace"));
        }
        if name.is_empty() {
            lit.push('$');
            continue;
        }
        pieces.push(Ok(std::mem::take(&mut lit)));
        pieces.push(Err(format!("${name}")));
    }
    pieces.push(Ok(lit));
    Template::new(pieces)
}

/// The variable an nginx log gives the request path in, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PathVar {
    /// `$uri`: nginx's own, decoded and normalised.
    Uri,
    /// `$request_uri`: the URI as sent.
    RequestUri,
    /// `$request`: the request line, the URI as sent its second word.
    Request,
}

impl NginxFormat {
    /// `log_format`, and the variables named for the time, the client and
    /// the address (`None`: the defaults).
    pub fn new(
        log_format: &str,
        time: Option<&str>,
        client: Option<&str>,
        ip: Option<&str>,
    ) -> Result<NginxFormat, (&'static str, String)> {
        let template = compile(log_format).map_err(|e| {
            let name = !log_format.contains('$') && !log_format.contains(char::is_whitespace);
            match name {
                // A format's name (`main`) where its text belongs.
                true => (
                    "log_format",
                    format!("{e}: give the format's text, as `log_format {log_format} '…'` in nginx.conf writes it (only \"combined\", nginx's own, may be named)"),
                ),
                false => ("log_format", e),
            }
        })?;
        let vars = || template.names.join(", ");
        let time_var = match time {
            Some(t) => {
                if !TIME_VARS.contains(&t) {
                    return Err((
                        "time",
                        format!(
                            "{} is not a time ratesim can read; it reads {}",
                            crate::error::quoted(t),
                            TIME_VARS.join(", ")
                        ),
                    ));
                }
                t.to_string()
            }
            None => TIME_VARS
                .iter()
                .find(|v| template.field(v).is_some())
                .ok_or_else(|| {
                    (
                        "log_format",
                        format!(
                            "has no time ratesim can read; it reads {} (the format has {})",
                            TIME_VARS.join(", "),
                            vars()
                        ),
                    )
                })?
                .to_string(),
        };
        let time_idx = template.field(&time_var).ok_or_else(|| {
            (
                "time",
                format!("{time_var} is not in log_format, which has {}", vars()),
            )
        })?;
        let kind = match time_var.as_str() {
            "$msec" => TimeKind::Msec,
            "$time_iso8601" => TimeKind::Iso,
            _ => TimeKind::Local,
        };
        let key = |role: &'static str, name: &str| {
            if !name.starts_with('$') {
                return Err((
                    role,
                    format!(
                        "{} — name an nginx variable of log_format, e.g. \"$remote_addr\"; it has {}",
                        crate::error::quoted(name),
                        vars()
                    ),
                ));
            }
            template.field(name).ok_or_else(|| {
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
        let default_ip = [
            "$remote_addr",
            "$binary_remote_addr",
            "$http_x_forwarded_for",
        ]
        .into_iter()
        .find(|v| template.field(v).is_some());
        let ip = match ip.or(default_ip) {
            Some(name) => Some(key("ip", name)?),
            None => None,
        };
        let client = match client.or(default_ip) {
            Some(name) => key("client", name)?,
            None => {
                return Err((
                    "client",
                    format!(
                        "missing — log_format has no $remote_addr; name the key, e.g. client = \"$http_x_client\" (it has {})",
                        vars()
                    ),
                ))
            }
        };
        let path = [
            ("$uri", PathVar::Uri),
            ("$request_uri", PathVar::RequestUri),
            ("$request", PathVar::Request),
        ]
        .into_iter()
        .find_map(|(v, var)| template.field(v).map(|i| (i, var)));
        Ok(NginxFormat {
            time: (time_idx, kind),
            time_var,
            duration: template.field("$request_time"),
            status: template.field("$status"),
            limit_req_status: template.field("$limit_req_status"),
            rejected_status: DEFAULT_LIMIT_REQ_STATUS,
            client,
            ip,
            path,
            select: None,
            source: None,
            template,
        })
    }

    /// Selects lines by the variable `name` (`only`, `except`); an error
    /// names the variables the format has.
    pub fn select_by(&mut self, name: &str) -> Result<(), String> {
        self.select = Some(self.variable(name)?);
        Ok(())
    }

    /// Splits the source by the variable `name`'s value (`source`); an
    /// error names the variables the format has.
    pub fn split_by(&mut self, name: &str) -> Result<(), String> {
        self.source = Some(self.variable(name)?);
        Ok(())
    }

    /// The field of the variable `name`.
    fn variable(&self, name: &str) -> Result<usize, String> {
        self.template.field(name).ok_or_else(|| {
            format!(
                "{} is not in log_format, which has {}",
                crate::error::quoted(name),
                self.template.names.join(", ")
            )
        })
    }

    /// The time field has whole seconds only.
    pub fn coarse(&self) -> bool {
        self.time.1 != TimeKind::Msec
    }

    pub fn has_verdict(&self) -> bool {
        self.limit_req_status.is_some() || self.status.is_some()
    }

    pub fn has_path(&self) -> bool {
        self.path.is_some()
    }

    /// The verdict comes from `$status` alone (no `$limit_req_status`).
    pub fn verdict_from_status(&self) -> bool {
        self.limit_req_status.is_none() && self.status.is_some()
    }

    /// The variable the client key is read from.
    pub fn client_name(&self) -> &str {
        &self.template.names[self.client]
    }

    /// The variable the address is read from, if the format has one.
    pub fn ip_name(&self) -> Option<&str> {
        self.ip.map(|i| self.template.names[i].as_str())
    }

    pub fn literals(&self) -> impl Iterator<Item = &str> {
        self.template.segs.iter().filter_map(|s| match s {
            Seg::Lit(l) => Some(l.as_str()),
            Seg::Field(_) => None,
        })
    }

    /// The client and address fields of a line that matches the format,
    /// as they are (an empty one as logged): a look ahead for their
    /// table slots, which [`NginxFormat::parse`] then reads.
    #[inline(always)]
    pub fn keys<'l>(
        &self,
        line: &'l [u8],
        values: &mut Vec<Range<usize>>,
    ) -> Option<(&'l [u8], Option<&'l [u8]>)> {
        self.template.match_fields(line, values)?;
        let v = |i: usize| &line[values[i].clone()];
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

    /// [`NginxFormat::parse`] of a line whose fields' ranges `values` are
    /// those [`NginxFormat::keys`] found.
    pub fn parse_matched<'l>(
        &'l self,
        line: &'l [u8],
        values: &[Range<usize>],
    ) -> Result<Parsed<'l>, LineError> {
        let v = |i: usize| &line[values[i].clone()];
        let name = |i: usize| self.template.names[i].as_str();
        let raw = v(self.time.0);
        let stamp = match self.stamp_fast(raw) {
            Some(t) => t,
            None => {
                let raw = utf8(raw)?;
                match self.time.1 {
                    TimeKind::Msec => time::epoch(raw, NS),
                    TimeKind::Iso => time::rfc3339(raw).map(|(t, _)| t),
                    TimeKind::Local => time::time_local(raw),
                }
                .map_err(|e| format!("{} {} {e}", name(self.time.0), quoted(raw)))?
            }
        };
        let duration = match self.duration {
            Some(i) if v(i) != b"-" => match time::epoch_fast(v(i), NS) {
                Some(d) => d,
                None => {
                    let raw = utf8(v(i))?;
                    time::epoch(raw, NS).map_err(|e| format!("{} {} {e}", name(i), quoted(raw)))?
                }
            },
            _ => 0,
        };
        let verdict = match (self.limit_req_status, self.status) {
            (Some(i), _) => match v(i) {
                b"PASSED" => Some(Verdict::Passed),
                b"DELAYED" | b"DELAYED_DRY_RUN" => Some(Verdict::Delayed),
                b"REJECTED" | b"REJECTED_DRY_RUN" => Some(Verdict::Rejected),
                b"-" | b"" => None,
                other => {
                    return Err(format!(
                        "$limit_req_status {} — expected PASSED, DELAYED, REJECTED, DELAYED_DRY_RUN, REJECTED_DRY_RUN or -",
                        quoted(utf8(other)?)
                    )
                    .into())
                }
            },
            (None, Some(i)) => match self.status_verdict(v(i)) {
                Some(verdict) => Some(verdict),
                None => {
                    return Err(format!(
                        "$status {} — expected a 3-digit HTTP status",
                        quoted(utf8(v(i))?)
                    )
                    .into())
                }
            },
            (None, None) => None,
        };
        let key = |i: usize| -> Key<'l> {
            match v(i) {
                s if empty(s) => Err(EmptyKey(name(i))),
                s => Ok(Cow::Borrowed(s)),
            }
        };
        // docs/semantics.md §8: the path nginx matches locations against —
        // $uri as logged (nginx's own), a URI as sent as nginx reads it.
        let path = self.path.map(|(i, var)| match var {
            PathVar::Uri => Cow::Borrowed(v(i).split(|&b| b == b'?').next().unwrap_or_default()),
            PathVar::RequestUri => super::format::nginx_path(v(i)),
            PathVar::Request => {
                super::format::nginx_path(v(i).split(|&b| b == b' ').nth(1).unwrap_or_default())
            }
        });
        let selector = match self.select {
            Some(i) => Some(utf8(v(i))?.as_bytes()),
            None => None,
        };
        Ok(Parsed {
            stamp,
            duration,
            client: key(self.client),
            ip: self.ip.map(key),
            cost: 1,
            verdict,
            path,
            selector,
            // nginx logs an empty variable as `-`.
            source: self
                .source
                .map(|i| Cow::Borrowed(if v(i) == b"-" { &b""[..] } else { v(i) })),
        })
    }
}

impl NginxFormat {
    /// The time field's stamp, read by the fast reader of its form, if
    /// that reads it (a stamp it does not read is read more slowly).
    #[inline(always)]
    fn stamp_fast(&self, raw: &[u8]) -> Option<u64> {
        match self.time.1 {
            TimeKind::Msec => time::epoch_fast(raw, NS),
            TimeKind::Iso => time::rfc3339_fast(raw).map(|(t, _)| t),
            TimeKind::Local => time::time_local_fast(raw),
        }
    }

    /// The verdict of `$status` (without `$limit_req_status`), if it is
    /// three digits. docs/semantics.md §8: the configured
    /// limit_req_status is a rejection; any other status is not (a pass
    /// or a delay).
    #[inline(always)]
    fn status_verdict(&self, raw: &[u8]) -> Option<Verdict> {
        let [a, b, c] = *raw else {
            return None;
        };
        if !(a.is_ascii_digit() && b.is_ascii_digit() && c.is_ascii_digit()) {
            return None;
        }
        let status = [a, b, c]
            .iter()
            .fold(0u16, |n, &d| n * 10 + u16::from(d - b'0'));
        Some(match status == self.rejected_status {
            true => Verdict::Rejected,
            false => Verdict::Passed,
        })
    }

    /// Whether [`NginxFormat::read_plain`] reads its lines: it has no
    /// `$limit_req_status`, no field lines are selected or split by, and
    /// no path field when `location` is set (whose path would be read).
    pub fn plain(&self, location: bool) -> bool {
        self.limit_req_status.is_none()
            && self.select.is_none()
            && self.source.is_none()
            && !(location && self.path.is_some())
    }

    /// What [`NginxFormat::parse_matched`] reads of a line of a
    /// [`NginxFormat::plain`] format whose fields' ranges are `values`,
    /// read without the cases no usual line has: `None` unless the time
    /// and the duration (or `-`) are of the forms their fast readers
    /// read, the status is three digits, and neither key is empty. Where
    /// it gives something, `parse_matched` gives the same; a line it
    /// gives nothing for is read by `parse_matched`, bad lines included.
    #[inline(always)]
    pub fn read_plain<'l>(&self, line: &'l [u8], values: &[Range<usize>]) -> Option<Plain<'l>> {
        let v = |i: usize| &line[values[i].clone()];
        let stamp = self.stamp_fast(v(self.time.0))?;
        let duration = match self.duration {
            Some(i) if v(i) != b"-" => time::epoch_fast(v(i), NS)?,
            _ => 0,
        };
        let verdict = match self.status {
            Some(i) => Some(self.status_verdict(v(i))?),
            None => None,
        };
        let (client, ip) = Plain::keys(v(self.client), self.ip.map(v))?;
        Some(Plain {
            stamp,
            duration,
            verdict,
            client,
            ip,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl NginxFormat {
        /// [`NginxFormat::parse`] of a line given as text.
        fn parse_str<'l>(&'l self, line: &'l str) -> Result<Parsed<'l>, LineError> {
            self.parse(line.as_bytes(), &mut Vec::new())
        }
    }

    #[test]
    fn the_combined_format_reads_address_and_local_time() {
        let f = NginxFormat::new(COMBINED, None, None, None).unwrap();
        assert!(f.coarse());
        let p = f
            .parse_str(r#"10.0.0.1 - - [01/Dec/2026:00:42:00 +0000] "GET /a?x=1 HTTP/1.1" 429 3 "-" "curl/8""#)
            .unwrap();
        assert_eq!(p.client_key(), "10.0.0.1");
        assert_eq!(p.stamp, 1_796_085_720_000_000_000);
        // nginx's default limit_req_status is 503: a 429 is not a rejection.
        assert_eq!(p.verdict, Some(Verdict::Passed));
        assert_eq!(p.path.as_deref(), Some(&b"/a"[..]));
    }

    // Lines nginx 1.22 wrote (`combined`) for a client sending the
    // Basic user `a [b`, and `x] "y [01/Dec/2026` (nginx escapes the
    // quote): $remote_user holds the " [" that ends it.
    #[test]
    fn a_remote_user_holding_the_bracket_that_ends_it_is_read_as_nginx_wrote_it() {
        let f = NginxFormat::new(COMBINED, None, None, None).unwrap();
        for (line, path) in [
            (
                r#"127.0.0.1 - a [b [03/Dec/2026:15:05:02 +0000] "GET /one HTTP/1.1" 200 3 "-" "curl/7.88.1""#,
                "/one",
            ),
            (
                r#"127.0.0.1 - x] \x22y [01/Dec/2026 [03/Dec/2026:15:05:02 +0000] "GET /two HTTP/1.1" 503 3 "-" "curl/7.88.1""#,
                "/two",
            ),
        ] {
            let p = f.parse_str(line).unwrap();
            assert_eq!(p.client_key(), "127.0.0.1");
            assert_eq!(p.stamp, 1_796_310_302_000_000_000, "{line}");
            assert_eq!(p.path.as_deref(), Some(path.as_bytes()));
        }
        // A time that no way reads is the first match's error, as before.
        let bad = r#"127.0.0.1 - a [b [03/Foo/2026:15:05:02 +0000] "GET / HTTP/1.1" 200 3 "-" "c""#;
        let e = f.parse_str(bad).unwrap_err().message(bad.as_bytes());
        assert!(e.starts_with("$time_local \"b [03/Foo/2026"), "{e}");
        // Two ways that read differently: said, not guessed.
        let f = NginxFormat::new(
            "$msec $http_x_key $http_y $status",
            None,
            Some("$http_x_key"),
            None,
        )
        .unwrap();
        let two = "1796085720.000 a b c 200";
        let e = f.parse_str(two).unwrap_err().message(two.as_bytes());
        assert!(e.ends_with("the line reads more than one way"), "{e}");
    }

    #[test]
    fn without_limit_req_status_only_the_configured_status_is_a_rejection() {
        let line = |status: &str| format!("1796085720.000 {status} k \"GET /a HTTP/1.1\"");
        let mut f = NginxFormat::new(
            "$msec $status $http_x_k \"$request\"",
            None,
            Some("$http_x_k"),
            None,
        )
        .unwrap();
        assert!(f.verdict_from_status());
        let verdict = |f: &NginxFormat, s: &str| f.parse_str(&line(s)).unwrap().verdict;
        assert_eq!(verdict(&f, "503"), Some(Verdict::Rejected));
        assert_eq!(verdict(&f, "429"), Some(Verdict::Passed));
        f.rejected_status = 429;
        assert_eq!(verdict(&f, "429"), Some(Verdict::Rejected));
        assert_eq!(verdict(&f, "503"), Some(Verdict::Passed));
        assert_eq!(verdict(&f, "200"), Some(Verdict::Passed));
        assert!(
            matches!(f.parse_str(&line("2x0")).unwrap_err(), LineError::Bad(m) if m.contains("3-digit"))
        );
    }

    #[test]
    fn an_empty_key_is_no_parse_error_but_says_which_variable_is_empty() {
        let f = NginxFormat::new(
            "$msec $http_x_k \"$request\"",
            None,
            Some("$http_x_k"),
            None,
        )
        .unwrap();
        let p = f.parse_str("1796085720.000 - \"GET /a HTTP/1.1\"").unwrap();
        assert_eq!(p.client.unwrap_err().to_string(), "$http_x_k is empty");
        assert_eq!(p.path.as_deref(), Some(&b"/a"[..]));
    }

    #[test]
    fn msec_request_time_and_limit_req_status_are_read() {
        let f = NginxFormat::new(
            "$msec $request_time $status $limit_req_status $http_x_client \"$request\"",
            None,
            Some("$http_x_client"),
            None,
        )
        .unwrap();
        let p = f
            .parse_str(r#"1796085720.339 0.100 200 DELAYED heavy "GET /delay?seq=9 HTTP/1.1""#)
            .unwrap();
        assert_eq!(
            (p.stamp, p.duration),
            (1_796_085_720_339_000_000, 100_000_000)
        );
        assert_eq!(p.verdict, Some(Verdict::Delayed));
        assert_eq!(p.client_key(), "heavy");
    }

    #[test]
    fn a_key_or_time_it_cannot_read_names_what_it_can() {
        let e = NginxFormat::new(COMBINED, None, Some("$http_x_client"), None).unwrap_err();
        assert_eq!(e.0, "client");
        assert!(e.1.contains("$remote_addr, $remote_user"), "{}", e.1);
        let e = NginxFormat::new(COMBINED, Some("$time_unix"), None, None).unwrap_err();
        assert!(e.1.contains("$msec, $time_iso8601, $time_local"), "{}", e.1);
        let e = NginxFormat::new("$remote_addr $status", None, None, None).unwrap_err();
        assert!(e.1.contains("no time"), "{}", e.1);
    }
}
