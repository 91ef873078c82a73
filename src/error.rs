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
