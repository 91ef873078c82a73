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
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Passed => "passed",
            Verdict::Delayed => "delayed",
            Verdict::Rejected => "rejected",
        }
    }
}

/// A key field of a line: its value, or why it has none (`"$http_x_key is
/// empty"`). Whether a line without a key is a bad line or a request no
/// limiter counts depends on the format and on the line's location, so
/// the reorder pipeline decides, not the parser.
pub type Key<'l> = Result<Cow<'l, str>, String>;

/// One line, parsed; strings borrow from it where they can.
#[derive(Debug, Clone)]
pub struct Parsed<'l> {
    /// The logged time, ns since the Unix epoch.
    pub stamp: u64,
    /// The request's duration to subtract from `stamp` (0 when none).
    pub duration: u64,
    pub client: Key<'l>,
    pub ip: Option<Key<'l>>,
    pub cost: u64,
    pub verdict: Option<Verdict>,
    /// The request path (no query), when the format has one.
    pub path: Option<&'l str>,
    /// The value of the variable the source selects lines by (`only`,
    /// `except`), when it has one.
    pub selector: Option<&'l str>,
    /// The value of the field a split source is split by (`source`,
    /// docs/semantics.md §3): empty when the line has none (nginx and
    /// Envoy log an empty value as `-`; a JSON line may lack the field or
    /// hold null).
    pub source: Option<Cow<'l, str>>,
}

#[cfg(test)]
impl Parsed<'_> {
    /// The client key of a line that has one.
    pub(super) fn client_key(&self) -> &str {
        self.client.as_deref().expect("a client key")
    }

    /// The address key of a line that has one.
    pub(super) fn ip_key(&self) -> Option<&str> {
        self.ip
            .as_ref()
            .map(|i| i.as_deref().expect("an address key"))
    }
}
