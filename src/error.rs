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

/// Characters of a value an error message quotes before it cuts it short.
pub const QUOTE_CHARS: usize = 80;

/// `s` in double quotes for an error message: whole if it is at most
/// [`QUOTE_CHARS`] characters, else its first [`QUOTE_CHARS`] followed by
/// `…` and its total length, `"abcdef…" (300000000 bytes)`. Control
/// characters are escaped, so a binary file cannot drive the terminal.
pub fn quote(s: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_are_quoted_whole() {
        assert_eq!(quote("trace.csv"), "\"trace.csv\"");
        assert_eq!(quote(""), "\"\"");
        assert_eq!(quote(&"é".repeat(80)), format!("\"{}\"", "é".repeat(80)));
    }

    #[test]
    fn long_values_are_cut_at_80_characters_with_their_length() {
        let long = "a".repeat(300);
        assert_eq!(quote(&long), format!("\"{}…\" (300 bytes)", "a".repeat(80)));
        // Characters, not bytes: a multi-byte character is never split.
        let wide = "é".repeat(81);
        assert_eq!(quote(&wide), format!("\"{}…\" (162 bytes)", "é".repeat(80)));
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(quote("a\u{1b}[31mb\n"), "\"a\\u{1b}[31mb\\n\"");
    }
}
