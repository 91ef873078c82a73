//! What one line of an access log says, whatever its format: the time,
//! the keys, the cost, the path and the gateway's verdict.

use std::borrow::Cow;

/// What the gateway did with a request, as its log says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    Passed,
    Delayed,
    Rejected,
}

impl Verdict {
    /// A verdict, or none, as the code a recording keeps (0 to 3).
    pub fn code(v: Option<Verdict>) -> u8 {
        match v {
            None => 0,
            Some(Verdict::Passed) => 1,
            Some(Verdict::Delayed) => 2,
            Some(Verdict::Rejected) => 3,
        }
    }

    /// Where a request of this verdict goes among requests of the same
    /// arrival (docs/semantics.md §8): passed (or no verdict), delayed,
    /// rejected.
    pub fn rank(v: Option<Verdict>) -> u8 {
        match v {
            None | Some(Verdict::Passed) => 0,
            Some(Verdict::Delayed) => 1,
            Some(Verdict::Rejected) => 2,
        }
    }

    /// The verdict of a [`Verdict::code`].
    pub fn of_code(code: u8) -> Option<Verdict> {
        match code {
            1 => Some(Verdict::Passed),
            2 => Some(Verdict::Delayed),
            3 => Some(Verdict::Rejected),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Passed => "passed",
            Verdict::Delayed => "delayed",
            Verdict::Rejected => "rejected",
        }
    }
}

/// A key field of a line: its value's bytes (UTF-8 is checked when a key
/// is first seen, not on every line), or, when it is empty, the field's
/// name. Whether a line without a key is a bad line or a request no
/// limiter counts depends on the format and on the line's location, so
/// the reorder pipeline decides, not the parser.
pub type Key<'l> = Result<Cow<'l, [u8]>, EmptyKey<'l>>;

/// The field of an empty key: says `$http_x_key is empty`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmptyKey<'l>(pub &'l str);

impl std::fmt::Display for EmptyKey<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} is empty", self.0)
    }
}

/// Whether a key field's value is empty: nginx logs an empty variable,
/// and Envoy an absent value, as `-`.
#[inline(always)]
pub(super) fn empty(value: &[u8]) -> bool {
    matches!(value, b"" | b"-")
}

/// What a plain reading reads of a usual line, whose every field read
/// is of its usual form (`NginxFormat::read_plain`,
/// `EnvoyFormat::read_plain`): what [`Parsed`] holds of a line that
/// is a request, where nothing is filtered, selected or split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plain<'l> {
    pub stamp: u64,
    pub duration: u64,
    pub verdict: Option<Verdict>,
    pub client: &'l [u8],
    /// The client's bytes themselves (the same slice) when the format
    /// has no address field of its own, as [`Parsed`] reads it.
    pub ip: &'l [u8],
}

impl<'l> Plain<'l> {
    /// The keys of a plain reading, from the client field's value and
    /// the address field's (none: the address is the client's own
    /// bytes): `None` if either is [`empty`].
    #[inline(always)]
    pub fn keys(client: &'l [u8], ip: Option<&'l [u8]>) -> Option<(&'l [u8], &'l [u8])> {
        let key = |s: &'l [u8]| (!empty(s)).then_some(s);
        let client = key(client)?;
        let ip = match ip {
            Some(ip) => key(ip)?,
            None => client,
        };
        Some((client, ip))
    }
}

/// Why a line is a bad line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineError {
    /// A field it reads is not UTF-8.
    NotUtf8,
    /// The message, without the line.
    Bad(String),
}

impl LineError {
    /// The bad line's message: a line that is not UTF-8 anywhere says so
    /// first, whatever else is wrong with it (a valid line of the format
    /// may hold other bytes only in fields ratesim does not read).
    pub fn message(self, line: &[u8]) -> String {
        match self {
            LineError::Bad(m) if std::str::from_utf8(line).is_ok() => m,
            _ => NOT_UTF8.to_string(),
        }
    }
}

impl From<String> for LineError {
    fn from(m: String) -> LineError {
        LineError::Bad(m)
    }
}

pub(super) const NOT_UTF8: &str = "is not valid UTF-8";

/// `bytes` as text, or the line is bad.
pub(super) fn utf8(bytes: &[u8]) -> Result<&str, LineError> {
    std::str::from_utf8(bytes).map_err(|_| LineError::NotUtf8)
}

/// Reads `line` by an nginx or Envoy format's `template` and `read` (the
/// format's reading of the matched fields' byte ranges); `values` is
/// scratch space. Where the first match does not read, the other ways the
/// line matches are read ([`super::template::Template::only_reading`],
/// docs/semantics.md §8: a field may hold the text that ends it).
pub(super) fn read_line<'l>(
    template: &super::template::Template,
    line: &'l [u8],
    values: &mut Vec<std::ops::Range<usize>>,
    read: impl Fn(&[std::ops::Range<usize>]) -> Result<Parsed<'l>, LineError>,
) -> Result<Parsed<'l>, LineError> {
    let first = match template.read_into(line, values) {
        Ok(()) => read(values),
        Err(e) => Err(e.into()),
    };
    first.or_else(
        |first| match template.only_reading(line, values, &mut |v| read(v).ok()) {
            Ok(Some(parsed)) => Ok(parsed),
            Ok(None) => Err(first),
            Err(super::template::Ambiguous) => Err(LineError::Bad(format!(
                "{}; a field holds the text that ends it, and the line reads more than one way",
                first.message(line)
            ))),
        },
    )
}

/// One line, parsed; values borrow from it where they can.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed<'l> {
    /// The logged time, ns since the Unix epoch.
    pub stamp: u64,
    /// The request's duration to subtract from `stamp` (0 when none).
    pub duration: u64,
    pub client: Key<'l>,
    pub ip: Option<Key<'l>>,
    pub cost: u64,
    pub verdict: Option<Verdict>,
    /// The request path (no query), when the format has one, as the
    /// gateway matches its routes (nginx: [`super::format::nginx_path`]);
    /// bytes, not necessarily UTF-8.
    pub path: Option<Cow<'l, [u8]>>,
    /// The value of the variable the source selects lines by (`only`,
    /// `except`), when it has one: UTF-8.
    pub selector: Option<&'l [u8]>,
    /// The value of the field a split source is split by (`source`,
    /// docs/semantics.md §3): empty when the line has none (nginx and
    /// Envoy log an empty value as `-`; a JSON line may lack the field or
    /// hold null). UTF-8 is checked when a value is first seen.
    pub source: Option<Cow<'l, [u8]>>,
}

#[cfg(test)]
impl Parsed<'_> {
    /// The client key of a line that has one.
    pub(super) fn client_key(&self) -> &str {
        std::str::from_utf8(self.client.as_deref().expect("a client key")).expect("UTF-8")
    }

    /// The address key of a line that has one.
    pub(super) fn ip_key(&self) -> Option<&str> {
        self.ip
            .as_ref()
            .map(|i| std::str::from_utf8(i.as_deref().expect("an address key")).expect("UTF-8"))
    }
}
