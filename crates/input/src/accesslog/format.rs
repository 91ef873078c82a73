//! The access-log formats ratesim reads and the options of a log source:
//! where a line belongs (`location`) and how whole-second stamps are
//! placed (`subsecond`). Reading a line is each format's own file
//! (`nginx`, `envoy`, `jsonl`), into what `parsed.rs` defines; this file
//! dispatches to them.

use std::ops::Range;

use super::parsed::Plain;
use super::{envoy, jsonl, nginx, LineError, Parsed};
use crate::clock::Nanos;

/// The longest line a log may have (bytes): as for CSV traces.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// A log format with its field choices.
/// Equal formats read a line alike (a recording is kept by them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Format {
    Nginx(nginx::NginxFormat),
    Envoy(envoy::EnvoyFormat),
    Jsonl(jsonl::JsonlFormat),
}

pub const FORMATS: &str = "\"csv\", \"nginx\", \"envoy\", \"jsonl\"";

impl Format {
    pub fn name(&self) -> &'static str {
        match self {
            Format::Nginx(_) => "nginx",
            Format::Envoy(_) => "envoy",
            Format::Jsonl(_) => "jsonl",
        }
    }

    /// Parses one line; `values` is scratch space for the fields' byte
    /// ranges, kept between lines so that a line allocates nothing.
    pub(super) fn parse<'l>(
        &'l self,
        line: &'l [u8],
        values: &mut Vec<Range<usize>>,
    ) -> Result<Parsed<'l>, LineError> {
        match self {
            Format::Nginx(f) => f.parse(line, values),
            Format::Envoy(f) => f.parse(line, values),
            Format::Jsonl(f) => f.parse(line),
        }
    }

    /// A line's client and address keys, as a look ahead (see
    /// [`nginx::NginxFormat::keys`]); `None` for a JSON line, whose parse costs
    /// more than the look-up it would hasten.
    #[inline(always)]
    pub(super) fn keys<'l>(
        &self,
        line: &'l [u8],
        values: &mut Vec<Range<usize>>,
    ) -> Option<(&'l [u8], Option<&'l [u8]>)> {
        match self {
            Format::Nginx(f) => f.keys(line, values),
            Format::Envoy(f) => f.keys(line, values),
            Format::Jsonl(_) => None,
        }
    }

    /// [`Format::parse`] of a line whose fields' ranges `values` are those
    /// [`Format::keys`] found.
    pub(super) fn parse_matched<'l>(
        &'l self,
        line: &'l [u8],
        values: &[Range<usize>],
    ) -> Result<Parsed<'l>, LineError> {
        match self {
            Format::Nginx(f) => f.parse_matched(line, values),
            Format::Envoy(f) => f.parse_matched(line, values),
            Format::Jsonl(f) => f.parse(line),
        }
    }

    /// Whether [`Format::read_plain`] reads its lines, with `location`
    /// set or not (see [`nginx::NginxFormat::plain`]); a JSON line never
    /// is, as it has its own fast reader.
    pub(super) fn plain(&self, location: bool) -> bool {
        match self {
            Format::Nginx(f) => f.plain(location),
            Format::Envoy(f) => f.plain(location),
            Format::Jsonl(_) => false,
        }
    }

    /// What a [`Format::plain`] format's usual line whose fields' ranges
    /// `values` are those [`Format::keys`] found says, as
    /// [`Format::parse_matched`] would (see
    /// [`nginx::NginxFormat::read_plain`]); `None` for any other line.
    #[inline(always)]
    pub(super) fn read_plain<'l>(
        &self,
        line: &'l [u8],
        values: &[Range<usize>],
    ) -> Option<Plain<'l>> {
        match self {
            Format::Nginx(f) => f.read_plain(line, values),
            Format::Envoy(f) => f.read_plain(line, values),
            Format::Jsonl(_) => None,
        }
    }

    /// Stamps have whole seconds only: `subsecond` is required.
    pub(super) fn coarse(&self) -> bool {
        matches!(self, Format::Nginx(f) if f.coarse())
    }

    /// The log can carry the gateway's verdict.
    pub fn has_verdict(&self) -> bool {
        match self {
            Format::Nginx(f) => f.has_verdict(),
            Format::Envoy(f) => f.has_verdict(),
            Format::Jsonl(_) => false,
        }
    }

    pub(super) fn has_path(&self) -> bool {
        match self {
            Format::Nginx(f) => f.has_path(),
            Format::Envoy(f) => f.has_path(),
            Format::Jsonl(_) => false,
        }
    }

    /// A line whose client key is empty is a request no limiter counts,
    /// not a bad line: nginx does not account a request whose zone key is
    /// empty (docs/semantics.md §8). Other formats: a bad line.
    pub(super) fn empty_key_is_unaccounted(&self) -> bool {
        matches!(self, Format::Nginx(_))
    }

    /// The field the client key is read from (`$http_x_client`, `user`).
    pub fn client_field(&self) -> &str {
        match self {
            Format::Nginx(f) => f.client_name(),
            Format::Envoy(f) => f.client_name(),
            Format::Jsonl(f) => &f.client,
        }
    }
}

/// How whole-second stamps are placed inside their second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subsecond {
    Start,
    Spread,
}

/// Which requests of the log a source replays: nginx's `location`
/// syntax, `"= /exact"` or a `"/prefix"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Exact(String),
    Prefix(String),
}

impl Location {
    pub fn parse(s: &str) -> Option<Location> {
        let s = s.trim();
        if let Some(p) = s.strip_prefix('=') {
            let p = p.trim();
            return p.starts_with('/').then(|| Location::Exact(p.to_string()));
        }
        s.starts_with('/').then(|| Location::Prefix(s.to_string()))
    }

    pub(super) fn matches(&self, path: &[u8]) -> bool {
        match self {
            Location::Exact(p) => path == p.as_bytes(),
            Location::Prefix(p) => path.starts_with(p.as_bytes()),
        }
    }

    pub fn shown(&self) -> String {
        match self {
            Location::Exact(p) => format!("= {p}"),
            Location::Prefix(p) => p.clone(),
        }
    }
}

/// The path nginx matches `location`s against, from a URI as the client
/// sent it (`$request_uri`, or `$request`'s second word): an absolute
/// URI's scheme and host dropped, the query (`?`) and fragment (`#`) cut,
/// `%XX` decoded, slashes merged and `.` and `..` segments resolved — as
/// ngx_http_parse_complex_uri does with `merge_slashes on`, nginx's
/// default. Empty when nginx refuses the URI (a `..` above the root, a
/// bad or NUL `%`-escape): it answers 400 before any limit, so the line
/// is in no location. Borrowed when there is nothing to do.
pub(super) fn nginx_path(uri: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    use std::borrow::Cow;
    let mut p = uri;
    for scheme in [&b"http://"[..], b"https://"] {
        if p.len() >= scheme.len() && p[..scheme.len()].eq_ignore_ascii_case(scheme) {
            let rest = &p[scheme.len()..];
            p = match rest.iter().position(|&b| matches!(b, b'/' | b'?' | b'#')) {
                Some(i) if rest[i] == b'/' => &rest[i..],
                _ => b"/",
            };
        }
    }
    let p = &p[..p
        .iter()
        .position(|&b| b == b'?' || b == b'#')
        .unwrap_or(p.len())];
    let plain = !p.contains(&b'%') && !p.windows(2).any(|w| w == b"//" || w == b"/.");
    if plain {
        return Cow::Borrowed(p);
    }
    // %XX decoded first: a decoded `/` or `.` then counts as one (nginx
    // goes back to the state the `%` interrupted).
    let mut decoded = Vec::with_capacity(p.len());
    let mut i = 0;
    while i < p.len() {
        if p[i] == b'%' {
            let hex = |b: Option<&u8>| b.and_then(|&b| (b as char).to_digit(16));
            match (hex(p.get(i + 1)), hex(p.get(i + 2))) {
                (Some(h), Some(l)) if h * 16 + l != 0 => decoded.push((h * 16 + l) as u8),
                _ => return Cow::Borrowed(b""),
            }
            i += 3;
        } else {
            decoded.push(p[i]);
            i += 1;
        }
    }
    if decoded.first() != Some(&b'/') {
        return Cow::Owned(decoded);
    }
    let mut segments: Vec<&[u8]> = Vec::new();
    let parts: Vec<&[u8]> = decoded[1..].split(|&b| b == b'/').collect();
    for (k, seg) in parts.iter().enumerate() {
        let last = k + 1 == parts.len();
        match *seg {
            b"" | b"." => {}
            b".." => {
                if segments.pop().is_none() {
                    return Cow::Borrowed(b"");
                }
            }
            s => segments.push(s),
        }
        // A path ending in `/`, `/.` or `/..` keeps its trailing slash.
        if last && matches!(*seg, b"" | b"." | b"..") && !segments.is_empty() {
            segments.push(b"");
        }
    }
    let mut out = Vec::with_capacity(decoded.len());
    for s in &segments {
        out.push(b'/');
        out.extend_from_slice(s);
    }
    if out.is_empty() {
        out.push(b'/');
    }
    Cow::Owned(out)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogOptions {
    pub reorder: Nanos,
    pub subsecond: Option<Subsecond>,
    pub skip_bad: bool,
    pub location: Option<Location>,
    pub select: Option<Select>,
}

/// The lines a source replays by one logged variable's value (`only` or
/// `except`): how an nginx `map` of exact strings sorts requests
/// (docs/semantics.md §13). As nginx's map, it compares ignoring ASCII
/// case; a value logged as `-` is the empty string (nginx logs an empty
/// variable as `-`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Select {
    pub variable: String,
    /// Lowercase.
    pub values: Vec<String>,
    /// `except`: the lines whose value is none of `values`.
    pub except: bool,
}

impl Select {
    pub fn matches(&self, logged: &[u8]) -> bool {
        let v = if logged == b"-" { b"" } else { logged };
        self.values
            .iter()
            .any(|x| x.as_bytes().eq_ignore_ascii_case(v))
            != self.except
    }

    pub fn shown(&self) -> String {
        let values: Vec<String> = self.values.iter().map(|v| format!("{v:?}")).collect();
        format!(
            "{} {} [{}]",
            self.variable,
            if self.except { "not in" } else { "in" },
            values.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::nginx_path;

    /// What nginx 1.22 matched locations against in the audit's requests
    /// (a real nginx's log), and the rules of ngx_http_parse_complex_uri.
    #[test]
    fn a_uri_as_sent_is_the_path_nginx_matches() {
        for (sent, path) in [
            ("/api/x?y=1", "/api/x"),
            ("/%61pi/", "/api/"),
            ("/x/../api/", "/api/"),
            ("//api//", "/api/"),
            ("http://t/api/abs", "/api/abs"),
            ("HTTPS://t:8443/api?q", "/api"),
            ("http://t", "/"),
            ("/api/../phantom", "/phantom"),
            ("/a/./b/.", "/a/b/"),
            ("/a/b/..", "/a/"),
            ("/a/%2e%2e/b", "/b"),
            ("/a%2fb", "/a/b"),
            ("/a/..b/...", "/a/..b/..."),
            ("/a#frag", "/a"),
            ("/%3F?q", "/?"),
            ("/", "/"),
            // nginx answers 400: in no location.
            ("/../etc", ""),
            ("/a/%zz", ""),
            ("/a%00", ""),
        ] {
            assert_eq!(
                nginx_path(sent.as_bytes()).as_ref(),
                path.as_bytes(),
                "{sent}"
            );
        }
        // Nothing to do: the line's own bytes.
        assert!(matches!(
            nginx_path(b"/api/v1/x"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
