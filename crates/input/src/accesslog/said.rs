//! What a line of a log says, for its ordering ([`Said`]): the few
//! words a thread that reads lines hands on to the thread that puts them
//! in order (see [`super::pipeline`] and [`super::pieces`]).

use super::Verdict;

/// What a line that is not blank says, for its ordering: a few words,
/// which a thread that reads lines hands on (see
/// [`super::pipeline::LineReader::feed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Said {
    pub line: u64,
    pub stamp: u64,
    pub duration: u64,
    pub cost: u64,
    pub verdict: Option<Verdict>,
    pub kind: Kind,
}

/// What a line is to the replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A request, its client's, address's and source part's ids.
    Request(u32, u32, u32),
    /// A line outside `location`…
    Filtered,
    /// …or one `only`/`except` passed over…
    Unselected,
    /// …or one whose key is empty (nginx): ghosts (see
    /// [`super::window::Pending`]).
    EmptyKey,
    /// A bad line, skipped (`on_bad_line = "skip"`).
    Bad,
}

/// The error of a pipeline whose reading thread failed (or was stopped):
/// the caller reads the log again here, which gives the error itself.
pub(super) const FAILED: &str = "the reading thread stopped";
