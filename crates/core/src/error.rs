//! Errors the user can fix: bad scenario files, bad traces, bad paths.
//!
//! Anything that is an [`InputError`] ends the process with status 2 and a
//! message naming what to fix and where; everything else is status 1.

use std::fmt;

/// A problem with the user's input. Its message already names the field or
/// line, the value, and what is accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError(String);

impl InputError {
    pub fn new(message: impl Into<String>) -> Self {
        InputError(message.into())
    }

    /// The same error, prefixed with where it was found (a file name).
    pub fn within(self, place: impl fmt::Display) -> Self {
        InputError(format!("{place}: {}", self.0))
    }

    pub fn message(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InputError {}

/// The most characters of a user's value an error message quotes.
pub(crate) const QUOTE_CHARS: usize = 80;

/// `s` as an error message quotes it: whole when it is short, else its
/// first [`QUOTE_CHARS`] characters, an ellipsis and its length, so a
/// 300 MB field never becomes a 300 MB message.
pub fn quote(s: &str) -> String {
    match s.char_indices().nth(QUOTE_CHARS) {
        None => s.to_string(),
        Some((end, _)) => format!("{}… ({} bytes)", &s[..end], s.len()),
    }
}

/// `s` in double quotes for an error message: whole if it is at most
/// [`QUOTE_CHARS`] characters, else its first [`QUOTE_CHARS`] followed by
/// `…` and its total length, `"abcdef…" (300000000 bytes)`. Control
/// characters are escaped, so a binary file cannot drive the terminal.
pub fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    let mut chars = s.chars();
    for c in chars.by_ref().take(QUOTE_CHARS) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if chars.next().is_some() {
        out.push_str(&format!("…\" ({} bytes)", s.len()));
    } else {
        out.push('"');
    }
    out
}

/// Every line of `text` quoted as [`quote`] does (for messages of other
/// crates that echo the input, such as a TOML parser's).
pub fn quote_lines(text: &str) -> String {
    text.lines().map(quote).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_are_quoted_whole() {
        assert_eq!(quote("100/1s"), "100/1s");
        assert_eq!(quote(&"é".repeat(80)), "é".repeat(80));
        assert_eq!(quoted("trace.csv"), "\"trace.csv\"");
        assert_eq!(quoted(""), "\"\"");
        assert_eq!(quoted(&"é".repeat(80)), format!("\"{}\"", "é".repeat(80)));
    }

    #[test]
    fn long_values_are_cut_at_80_characters_with_their_length() {
        // Robustness issue 4: a 300 MB field printed a 300 MB message.
        let long = "x".repeat(1_000_000);
        let q = quote(&long);
        assert_eq!(q, format!("{}… (1000000 bytes)", "x".repeat(80)));
        // Cut on a character boundary.
        let q = quote(&"é".repeat(100));
        assert!(q.starts_with(&"é".repeat(80)));
        assert!(q.ends_with("… (200 bytes)"));
    }

    #[test]
    fn quoted_puts_the_length_outside_the_quotes() {
        assert_eq!(quoted("ip"), "\"ip\"");
        assert_eq!(
            quoted(&"z".repeat(81)),
            format!("\"{}…\" (81 bytes)", "z".repeat(80))
        );
    }

    #[test]
    fn every_line_of_a_long_message_is_cut() {
        let text = format!("line 1\n{}\n  ^", "y".repeat(500));
        let q = quote_lines(&text);
        assert_eq!(q.lines().count(), 3);
        assert!(q.lines().all(|l| l.chars().count() < 100));
    }

    #[test]
    fn quoted_cuts_long_values_by_characters() {
        let long = "a".repeat(300);
        assert_eq!(
            quoted(&long),
            format!("\"{}…\" (300 bytes)", "a".repeat(80))
        );
        // Characters, not bytes: a multi-byte character is never split.
        let wide = "é".repeat(81);
        assert_eq!(
            quoted(&wide),
            format!("\"{}…\" (162 bytes)", "é".repeat(80))
        );
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(quoted("a\u{1b}[31mb\n"), "\"a\\u{1b}[31mb\\n\"");
    }
}
