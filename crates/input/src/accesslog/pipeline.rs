//! The reorder pipeline: a log's lines, read one at a time ([`Lines`]),
//! parsed, and handed on in arrival order within the `reorder` window
//! ([`Window`], docs/semantics.md §8), with whole-second stamps placed by
//! `subsecond`. It holds the lines inside the window (or inside a
//! shorter hold, with the few lines later than that kept aside: see
//! [`Pipeline::holding`]), never the whole log, and allocates nothing per
//! line once its buffers have grown.
//!
//! Its two halves are apart: a [`LineReader`] reads lines, parses them
//! and interns their keys, in line order, into what each says ([`Said`]);
//! the [`Pipeline`] puts those in order. The reader runs here, or on a
//! thread of its own that hands them on in batches
//! ([`LineReader::feed`], [`Pipeline::fed`]), or on others that read the
//! log in pieces, here too for the pieces a dealing thread leaves it
//! ([`super::pieces`], [`Pipeline::merged`]): each way the keys get the
//! same ids, and the order the same requests.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::Arc;

use crossbeam_utils::CachePadded;

use super::lines::Lines;
use super::merge::Merge;
use super::parsed::NOT_UTF8;
use super::said::{Kind, Said, FAILED};
use super::window::{OrderKey, Pending, Window};
use super::{EmptyKey, Format, LogKeys, LogOptions, Request, Subsecond, Verdict, NS};
use crate::clock::{Nanos, MAX_NANOS};
use crate::error::quoted;

/// A line of a whole-second stamp waiting for its second to be complete
/// (`subsecond = "spread"`).
#[derive(Debug, Clone, Copy)]
struct InSecond {
    duration: u64,
    p: Pending,
}

/// Why a request's keys have no ids.
pub(super) enum InternError {
    /// A key is not UTF-8: the line is a bad line.
    NotUtf8,
    /// The message, without the line: the log cannot be replayed.
    Refused(String),
}

/// A request's keys as ids.
pub(super) trait Interner {
    /// Its client's, its address's and its source's part number (from the
    /// bytes of the client, the address and the `source` field's value,
    /// empty when there is none); `hint` is what [`Interner::prefetch`]
    /// returned for these keys, if it was asked.
    fn intern(
        &mut self,
        client: &[u8],
        ip: &[u8],
        source: &[u8],
        hint: Option<u64>,
    ) -> Result<(u32, u32, u32), InternError>;

    /// A hint that `client` and `ip` are interned soon; what it returns
    /// (the client's hash, say) is handed to that [`Interner::intern`].
    fn prefetch(&self, _client: &[u8], _ip: &[u8]) -> Option<u64> {
        None
    }
}

impl<F> Interner for F
where
    F: FnMut(&[u8], &[u8], &[u8]) -> Result<(u32, u32, u32), InternError>,
{
    fn intern(
        &mut self,
        c: &[u8],
        i: &[u8],
        s: &[u8],
        _: Option<u64>,
    ) -> Result<(u32, u32, u32), InternError> {
        self(c, i, s)
    }
}

/// How many lines ahead of the one parsed a log of a template format
/// (nginx, Envoy) is parsed for its keys, whose table slots are asked for
/// then: the cache misses of several lines' look-ups overlap.
const LOOK_AHEAD: usize = 16;
const _: () = assert!(LOOK_AHEAD <= super::lines::AHEAD_MAX);

/// The lines looked at ahead (see [`LOOK_AHEAD`]), in line order: a
/// ring of each one's fields' ranges, if it matched the format, which its
/// parse then starts from, and what the interner's prefetch of its keys
/// returned.
struct Ahead {
    ranges: Vec<Vec<Range<usize>>>,
    matched: [bool; LOOK_AHEAD],
    hints: [Option<u64>; LOOK_AHEAD],
    first: usize,
    len: usize,
}

impl Ahead {
    fn new() -> Ahead {
        Ahead {
            ranges: vec![Vec::new(); LOOK_AHEAD],
            matched: [false; LOOK_AHEAD],
            hints: [None; LOOK_AHEAD],
            first: 0,
            len: 0,
        }
    }

    /// The slot of the next line looked at (fewer than [`LOOK_AHEAD`]
    /// are).
    fn push(&mut self) -> usize {
        debug_assert!(self.len < LOOK_AHEAD);
        self.len += 1;
        (self.first + self.len - 1) % LOOK_AHEAD
    }

    /// The first line's slot, taken off the ring, if that line matched.
    fn pop(&mut self) -> Option<usize> {
        let slot = self.first;
        self.first = (self.first + 1) % LOOK_AHEAD;
        self.len -= 1;
        self.matched[slot].then_some(slot)
    }
}

/// While holding less than `reorder`, `hold` doubles whenever the late
/// lines are this many or more and as many as the lines held (see
/// [`Pipeline::holding`]).
const LATE_FEW: u64 = 64;

/// Lines → requests in replay order.
pub(super) struct Pipeline {
    reading: Reading,
    order: Order,
}

/// Where a pipeline's lines are read: here, or on a thread of its own
/// (see [`LineReader::feed`]), which hands what they say on in batches.
/// (One per read: its size does not matter, and a boxed reader cost
/// 30 instructions a line more, callgrind.)
#[allow(clippy::large_enum_variant)]
enum Reading {
    Here(LineReader),
    Fed {
        feed: Feed,
        batch: Vec<Said>,
        at: usize,
    },
    /// The threads told to stop (see [`Pipeline::stop`]).
    Stopped,
}

/// Where batches of what lines say come from.
enum Feed {
    /// One thread that reads the lines.
    Thread {
        batches: Receiver<Batch>,
        /// Batches read, sent back to be filled again.
        back: SyncSender<Vec<Said>>,
    },
    /// Pieces of the log, parsed side by side or dealt out by one thread
    /// and some parsed here (see [`super::pieces`]).
    Pieces(Box<Merge>),
}

impl Feed {
    /// The next batch into `batch` (the one read is given back):
    /// `Ok(false)` at the log's end, [`FAILED`] at an error.
    fn refill(&mut self, batch: &mut Vec<Said>) -> Result<bool, String> {
        match self {
            Feed::Thread { batches, back } => {
                let mut read = std::mem::take(batch);
                read.clear();
                if read.capacity() > 0 {
                    let _ = back.try_send(read);
                }
                match batches.recv() {
                    Ok(Batch::Said(next)) => *batch = next,
                    Ok(Batch::End) => return Ok(false),
                    Ok(Batch::Failed) | Err(_) => return Err(FAILED.to_string()),
                }
                Ok(true)
            }
            Feed::Pieces(merge) => merge.refill(batch),
        }
    }
}

/// A log's lines read: each line's parse, its keys as ids (from the
/// interner), where its location and `only`/`except` put it.
pub(super) struct LineReader {
    lines: Lines,
    format: Arc<Format>,
    options: LogOptions,
    /// The fields' byte ranges of the line being parsed…
    values: Vec<Range<usize>>,
    /// …and of the lines looked at ahead (`None`: none are, a JSON log).
    ahead: Option<Ahead>,
    /// Whether a line the look ahead matched is read by [`read_plain`]
    /// first (an nginx or Envoy log whose options filter nothing: see
    /// [`Format::plain`]).
    plain: bool,
}

/// Why a line says nothing to replay.
pub(super) enum Unsaid<'l> {
    /// A bad line: why, without the line.
    Bad(Why<'l>),
    /// The log cannot be replayed: the message, without the line.
    Refused(String),
}

/// Why a line is bad, written out only for an error (a skipped line's
/// costs no text).
pub(super) enum Why<'l> {
    Parse(String),
    EmptyKey(EmptyKey<'l>),
    NotUtf8,
}

impl std::fmt::Display for Why<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Why::Parse(m) => f.write_str(m),
            Why::EmptyKey(e) => e.fmt(f),
            Why::NotUtf8 => f.write_str(NOT_UTF8),
        }
    }
}

/// A reading thread's message (see [`LineReader::feed`]).
pub(super) enum Batch {
    Said(Vec<Said>),
    /// The log's end: every line was handed on.
    End,
    /// Reading stopped at an error, which reading here gives again.
    Failed,
}

/// A reading thread's stop flag (see [`LineReader::feed`]), alone on
/// its cache lines: the thread reads it at every line, and sharing a
/// line with what the ordering thread writes (its stack) cost that line's
/// trips between the cores: `validate` of the nginx bench log took 0.119
/// s (median of 11, both cores) instead of 0.093.
#[derive(Default)]
pub(super) struct Stop(CachePadded<AtomicBool>);

impl Stop {
    pub(super) fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub(super) fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// How many lines a reading thread hands on at once (a few under test,
/// so that a test's log is many batches)…
const BATCH: usize = if cfg!(test) { 5 } else { 4096 };
/// …and how many full batches wait for this one (the thread may fill
/// one more meanwhile, and wait to send another).
pub(super) const BATCHES_AHEAD: usize = 4;

/// The parsed requests on their way to replay order.
struct Order {
    options: LogOptions,
    window: Window,
    seconds: BTreeMap<u64, Vec<InSecond>>,
    /// Seconds below this are complete (spread).
    done_below: u64,
    max_second: u64,
    latest: Option<(u64, u64)>,
    /// A request is handed on once it arrives more than this before the
    /// latest arrival: `reorder`, or less (see [`Pipeline::holding`]).
    hold: u64,
    /// …and the hold it started with.
    hold_at_first: u64,
    /// The order's key of the last request handed on (or passed over, a
    /// ghost)… (Only the key: the whole request was copied from the one
    /// just copied out of the window, a load across two of that copy's
    /// stores, which waits for them: 15 % of the samples of the loop
    /// reading the nginx bench log, perf.)
    last_out: Option<OrderKey>,
    /// …and the requests read after it that go before it (only while
    /// holding less than `reorder`).
    late: Vec<Pending>,
    /// Whether a request arrived too long after the first to be replayed.
    too_far: bool,
    /// Requests pushed (late or not) and handed on.
    pushed: u64,
    popped: u64,
    /// Times the hold doubled (each rebuilds the window).
    widened: u32,
    base: Option<u64>,
    eof: bool,
    skipped: u64,
    reordered: u64,
    /// Lines outside `location`…
    filtered: u64,
    /// …lines `only`/`except` passed over…
    unselected: u64,
    /// …and lines not counted because their key is empty (nginx).
    empty_key: u64,
}

/// A line of whitespace only (as `str::trim` sees it).
pub(super) fn blank(line: &[u8]) -> bool {
    // `char::is_whitespace` in ASCII: \t \n \v \f \r and the space.
    let ws = |b: &u8| matches!(b, b'\t'..=b'\r' | b' ');
    match line.first() {
        None => true,
        Some(b) if !ws(b) && b.is_ascii() => false,
        _ => line.iter().all(ws) || std::str::from_utf8(line).is_ok_and(|t| t.trim().is_empty()),
    }
}

impl Order {
    /// A bad line: the error, or (skipping) a count.
    /// (`why` is written out only for the error: skipping costs no text.)
    fn bad(&mut self, line: u64, why: impl std::fmt::Display, text: &[u8]) -> Result<(), String> {
        if self.options.skip_bad {
            self.skipped += 1;
            return Ok(());
        }
        let shown = if text.is_empty() {
            String::new()
        } else {
            format!(": {}", quoted(&String::from_utf8_lossy(text)))
        };
        Err(format!(
            "line {line}: {why}{shown} (on_bad_line = \"skip\" skips bad lines)"
        ))
    }

    /// Puts a request with its final arrival into the reorder window.
    /// Inlined, with the window's push, their rare paths out of line. As
    /// calls, the two were compiled to take the request by reference, and
    /// read it in 16-byte words just after the caller wrote it field by
    /// field: a load from several stores, which waits for them (perf: 14 %
    /// of `Window::push`'s samples on that load, on the nginx bench log).
    #[inline(always)]
    fn push(&mut self, p: Pending, text: &[u8]) -> Result<(), String> {
        let reorder = self.options.reorder.0;
        if let Some((latest, at)) = self.latest {
            if p.arrival.saturating_add(reorder) < latest {
                let window = self.options.reorder;
                return self.bad(
                    p.line,
                    format_args!(
                        "arrives {} before line {at}'s, more than the reorder window ({window}); raise `reorder`",
                        Nanos(latest - p.arrival),
                    ),
                    text,
                );
            }
        }
        match self.latest {
            Some((l, _)) if p.arrival < l => self.reordered += 1,
            _ => {}
        }
        if self.latest.is_none_or(|(l, _)| p.arrival > l) {
            self.latest = Some((p.arrival, p.line));
        }
        self.pushed += 1;
        if self.last_out.is_some_and(|l| p.order_key() < l) {
            self.push_late(p);
            return Ok(());
        }
        self.window.push(p);
        Ok(())
    }

    /// Keeps a request aside that goes before one already handed on.
    #[inline(never)]
    fn push_late(&mut self, p: Pending) {
        let reorder = self.options.reorder.0;
        self.late.push(p);
        // Late lines (a slow request now and then) are cheaper to keep
        // aside than a longer hold, until they are as many as the lines
        // held: then the log is more out of order than `hold`, and
        // holding twice as long costs no more than they do.
        let late = self.late.len() as u64;
        let held = self.pushed - late - self.popped;
        if late >= LATE_FEW.max(held) && self.hold < reorder {
            self.hold = reorder.min(self.hold.saturating_mul(2).max(1));
            self.window.widen(self.hold);
            self.widened += 1;
        }
    }

    /// Seconds that no later line can belong to (spread), all at the end.
    fn finish_seconds(&mut self, all: bool) -> Result<(), String> {
        let window = self.options.reorder.0.div_ceil(NS);
        while let Some((&s, _)) = self.seconds.first_key_value() {
            if !all && s.saturating_add(window) >= self.max_second {
                break;
            }
            let lines = self.seconds.remove(&s).unwrap_or_default();
            let k = lines.len() as u64;
            self.done_below = s + 1;
            for (i, mut l) in lines.into_iter().enumerate() {
                let stamp = s * NS + (i as u64 * NS) / k;
                if l.duration > stamp {
                    self.bad(
                        l.p.line,
                        "its duration is longer than its time since 1970",
                        b"",
                    )?;
                    continue;
                }
                l.p.arrival = stamp - l.duration;
                self.push(l.p, b"")?;
            }
        }
        Ok(())
    }

    /// Places a parsed line's request by its stamp and duration.
    #[inline(always)]
    fn place(
        &mut self,
        mut p: Pending,
        stamp: u64,
        duration: u64,
        text: &[u8],
    ) -> Result<(), String> {
        let line_no = p.line;
        match self.options.subsecond {
            Some(mode) => {
                let s = stamp / NS;
                if mode == Subsecond::Start {
                    if duration > s * NS {
                        return self.bad(
                            line_no,
                            "its duration is longer than its time since 1970",
                            text,
                        );
                    }
                    p.arrival = s * NS - duration;
                    return self.push(p, text);
                }
                if s < self.done_below {
                    let window = self.options.reorder;
                    return self.bad(
                        line_no,
                        format_args!(
                            "its second comes more than the reorder window ({window}) after later seconds; raise `reorder`",
                        ),
                        text,
                    );
                }
                self.seconds
                    .entry(s)
                    .or_default()
                    .push(InSecond { duration, p });
                self.max_second = self.max_second.max(s);
                self.finish_seconds(false)
            }
            None => {
                if duration > stamp {
                    return self.bad(
                        line_no,
                        "its duration is longer than its time since 1970",
                        text,
                    );
                }
                p.arrival = stamp - duration;
                self.push(p, text)
            }
        }
    }
}

impl Order {
    /// Puts a line that says something (see [`Said`]) on its way; `text`
    /// is the line, for an error's message (empty from a reading thread,
    /// whose errors are read here again).
    #[inline(always)]
    fn apply(&mut self, said: Said, text: &[u8]) -> Result<(), String> {
        let keys = match said.kind {
            Kind::Request(client, ip, part) => Some((client, ip, part)),
            Kind::Filtered => {
                self.filtered += 1;
                None
            }
            Kind::Unselected => {
                self.unselected += 1;
                None
            }
            Kind::EmptyKey => {
                self.empty_key += 1;
                None
            }
            Kind::Bad => return self.bad(said.line, "", text),
        };
        let (client, ip, part) = keys.unwrap_or((0, 0, 0));
        let delay = match said.verdict {
            Some(Verdict::Delayed) => said.duration,
            _ => 0,
        };
        let p = Pending {
            arrival: 0,
            rank: Verdict::rank(said.verdict),
            delay,
            line: said.line,
            ghost: keys.is_none(),
            client,
            ip,
            part,
            cost: said.cost,
            verdict: said.verdict,
        };
        self.place(p, said.stamp, said.duration, text)
    }
}

impl LineReader {
    pub(super) fn new(lines: Lines, format: &Arc<Format>, options: &LogOptions) -> LineReader {
        LineReader {
            lines,
            format: Arc::clone(format),
            options: options.clone(),
            values: Vec::new(),
            ahead: match **format {
                Format::Nginx(_) | Format::Envoy(_) => Some(Ahead::new()),
                Format::Jsonl(_) => None,
            },
            plain: format.plain(options.location.is_some()) && options.select.is_none(),
        }
    }

    /// The same reader, reading with [`read_plain`] first or not.
    #[cfg(test)]
    fn with_plain(mut self, plain: bool) -> LineReader {
        self.plain = plain;
        self
    }

    /// The next line: its number, its bytes and what it says (`None`: it
    /// is blank); `None` at the log's end; `Err` for a line [`Lines`]
    /// refuses.
    #[allow(clippy::type_complexity)]
    #[inline(always)]
    fn next<I: Interner + ?Sized>(
        &mut self,
        intern: &mut I,
    ) -> Result<Option<(u64, &[u8], Option<Result<Said, Unsaid<'_>>>)>, String> {
        if let Some(ahead) = self.ahead.as_mut() {
            while ahead.len < LOOK_AHEAD {
                let Some(line) = self.lines.look_ahead() else {
                    break;
                };
                let slot = ahead.push();
                let keys = self.format.keys(line, &mut ahead.ranges[slot]);
                ahead.matched[slot] = keys.is_some();
                ahead.hints[slot] = match keys {
                    Some((client, ip)) => intern.prefetch(client, ip.unwrap_or(client)),
                    None => None,
                };
            }
        }
        let Some((line_no, bytes)) = self.lines.next()? else {
            return Ok(None);
        };
        let (matched, hint) = match self.ahead.as_mut() {
            Some(ahead) if ahead.len > 0 => match ahead.pop() {
                Some(slot) => (Some(&ahead.ranges[slot][..]), ahead.hints[slot]),
                None => (None, None),
            },
            _ => (None, None),
        };
        if blank(bytes) {
            return Ok(Some((line_no, bytes, None)));
        }
        if let (true, Some(values)) = (self.plain, matched) {
            if let Some(said) = read_plain(&self.format, (line_no, bytes), values, hint, intern) {
                return Ok(Some((line_no, bytes, Some(Ok(said)))));
            }
        }
        let said = read_line(
            &self.format,
            &self.options,
            (line_no, bytes),
            &mut self.values,
            (matched, hint),
            intern,
        );
        Ok(Some((line_no, bytes, Some(said))))
    }

    /// What the next line that is not blank says, for its ordering;
    /// `Ok(None)` at the log's end; `Err` at an error (of a line, or of a
    /// bad line that is not skipped), which reading here gives again.
    #[inline(always)]
    pub(super) fn next_said<I: Interner + ?Sized>(
        &mut self,
        intern: &mut I,
    ) -> Result<Option<Said>, ()> {
        let skip = self.options.skip_bad;
        loop {
            return match self.next(intern) {
                Ok(Some((_, _, None))) => continue,
                Ok(Some((_, _, Some(Ok(said))))) => Ok(Some(said)),
                Ok(Some((line, _, Some(Err(Unsaid::Bad(_)))))) if skip => Ok(Some(Said {
                    line,
                    stamp: 0,
                    duration: 0,
                    cost: 0,
                    verdict: None,
                    kind: Kind::Bad,
                })),
                Ok(None) => Ok(None),
                Ok(Some((_, _, Some(Err(_))))) | Err(_) => Err(()),
            };
        }
    }

    /// Its lines, and the lines it reads from now on instead.
    pub(super) fn swap_lines(&mut self, lines: Lines) -> Lines {
        debug_assert!(self.ahead.as_ref().is_none_or(|a| a.len == 0));
        std::mem::replace(&mut self.lines, lines)
    }

    /// Reads every line, handing what each says on to `batches` (through
    /// batches that `back` gives back, or new ones), then [`Batch::End`];
    /// or, at the first error (of a line, or of a bad line that is not
    /// skipped), [`Batch::Failed`]. Stops at the next line once `stop` is
    /// set, or at its next send once the receiver of `batches` is gone.
    pub(super) fn feed<I: Interner + ?Sized>(
        mut self,
        intern: &mut I,
        batches: &SyncSender<Batch>,
        back: &Receiver<Vec<Said>>,
        stop: &Stop,
    ) {
        let mut batch = Vec::with_capacity(BATCH);
        while !stop.is_set() {
            let said = match self.next_said(intern) {
                Ok(Some(said)) => said,
                Ok(None) => {
                    if !batch.is_empty() && batches.send(Batch::Said(batch)).is_err() {
                        return;
                    }
                    let _ = batches.send(Batch::End);
                    return;
                }
                Err(()) => break,
            };
            batch.push(said);
            if batch.len() == BATCH {
                let full = std::mem::replace(&mut batch, back.try_recv().unwrap_or_default());
                if batches.send(Batch::Said(full)).is_err() {
                    return;
                }
                batch.reserve(BATCH);
            }
        }
        let _ = batches.send(Batch::Failed);
    }
}

/// What a line of a plain format says (see [`Format::read_plain`]),
/// given its fields' ranges
/// and its keys' prefetch `hint`: `None` where `read_plain` reads nothing
/// or the keys are not interned, and then [`read_line`] reads the line.
/// Where it says something, `read_line` says the same: a plain format
/// filters and selects nothing, so a line it reads is a request.
#[inline(always)]
fn read_plain<I: Interner + ?Sized>(
    format: &Format,
    (line, bytes): (u64, &[u8]),
    values: &[Range<usize>],
    hint: Option<u64>,
    intern: &mut I,
) -> Option<Said> {
    let p = format.read_plain(bytes, values)?;
    // (An error interns nothing: `read_line` meets it again.)
    let (client, ip, part) = intern.intern(p.client, p.ip, b"", hint).ok()?;
    Some(Said {
        line,
        stamp: p.stamp,
        duration: p.duration,
        cost: 1,
        verdict: p.verdict,
        kind: Kind::Request(client, ip, part),
    })
}

/// What a line that is not blank says (`values` is scratch space), or why
/// it says nothing: `matched` is its fields' ranges if they were found
/// ahead (see [`Ahead`]), `hint` what the interner's prefetch of its keys
/// returned.
#[inline(always)]
fn read_line<'l, I: Interner + ?Sized>(
    format: &'l Format,
    options: &LogOptions,
    (line, bytes): (u64, &'l [u8]),
    values: &mut Vec<Range<usize>>,
    (matched, mut hint): (Option<&[Range<usize>]>, Option<u64>),
    intern: &mut I,
) -> Result<Said, Unsaid<'l>> {
    let mut parsed = match matched {
        Some(values) => format.parse_matched(bytes, values),
        None => format.parse(bytes, values),
    };
    if matched.is_some() && parsed.is_err() {
        // The look ahead matched the line one way; its parse reads
        // every way it matches.
        parsed = format.parse(bytes, values);
        hint = None;
    }
    let parsed = match parsed {
        Err(e) => return Err(Unsaid::Bad(Why::Parse(e.message(bytes)))),
        Ok(ref p) => p,
    };
    let other_location = match (&options.location, &parsed.path) {
        (Some(loc), Some(path)) => !loc.matches(path),
        _ => false,
    };
    let unselected = !other_location
        && options
            .select
            .as_ref()
            .is_some_and(|s| !s.matches(parsed.selector.unwrap_or_default()));
    let kind = if other_location {
        Kind::Filtered
    } else if unselected {
        Kind::Unselected
    } else {
        match (&parsed.client, &parsed.ip) {
            (Err(_), _) if format.empty_key_is_unaccounted() => Kind::EmptyKey,
            (Err(e), _) | (Ok(_), Some(Err(e))) => return Err(Unsaid::Bad(Why::EmptyKey(*e))),
            (Ok(client), ip) => {
                let ip = match ip {
                    Some(Ok(ip)) => ip,
                    _ => client,
                };
                let source = parsed.source.as_deref().unwrap_or_default();
                match intern.intern(client, ip, source, hint) {
                    Ok((client, ip, part)) => Kind::Request(client, ip, part),
                    Err(InternError::NotUtf8) => return Err(Unsaid::Bad(Why::NotUtf8)),
                    Err(InternError::Refused(e)) => return Err(Unsaid::Refused(e)),
                }
            }
        }
    };
    Ok(Said {
        line,
        stamp: parsed.stamp,
        duration: parsed.duration,
        cost: parsed.cost,
        verdict: parsed.verdict,
        kind,
    })
}

impl Pipeline {
    #[cfg(test)]
    pub(super) fn new(lines: Lines, format: &Arc<Format>, options: &LogOptions) -> Pipeline {
        Pipeline::here(LineReader::new(lines, format, options), options)
    }

    /// A pipeline whose lines `reader` reads here.
    pub(super) fn here(reader: LineReader, options: &LogOptions) -> Pipeline {
        Pipeline::reading(Reading::Here(reader), options)
    }

    /// A pipeline whose lines are read on a thread of their own, which
    /// sends what they say to `batches` (see [`LineReader::feed`]) and
    /// takes the batches read back from `back` (a gzip log's: a third
    /// thread inflates it, so this one sleeps at each wait).
    pub(super) fn fed(
        batches: Receiver<Batch>,
        back: SyncSender<Vec<Said>>,
        options: &LogOptions,
    ) -> Pipeline {
        let fed = Reading::Fed {
            feed: Feed::Thread { batches, back },
            batch: Vec::new(),
            at: 0,
        };
        Pipeline::reading(fed, options)
    }

    /// A pipeline whose lines are read in pieces, parsed side by side
    /// (see [`super::pieces`]).
    pub(super) fn merged(merge: Merge, options: &LogOptions) -> Pipeline {
        let fed = Reading::Fed {
            feed: Feed::Pieces(Box::new(merge)),
            batch: Vec::new(),
            at: 0,
        };
        Pipeline::reading(fed, options)
    }

    /// The log's keys, from pieces parsed side by side; the threads are
    /// told to stop, as by [`Pipeline::stop`].
    pub(super) fn take_keys(&mut self) -> Option<LogKeys> {
        match std::mem::replace(&mut self.reading, Reading::Stopped) {
            Reading::Fed {
                feed: Feed::Pieces(merge),
                ..
            } => Some(merge.into_keys()),
            _ => None,
        }
    }

    fn reading(reading: Reading, options: &LogOptions) -> Pipeline {
        Pipeline {
            reading,
            order: Order {
                options: options.clone(),
                window: Window::new(options.reorder.0),
                seconds: BTreeMap::new(),
                done_below: 0,
                max_second: 0,
                latest: None,
                hold: options.reorder.0,
                hold_at_first: options.reorder.0,
                last_out: None,
                late: Vec::new(),
                too_far: false,
                pushed: 0,
                popped: 0,
                widened: 0,
                base: None,
                eof: false,
                skipped: 0,
                reordered: 0,
                filtered: 0,
                unselected: 0,
                empty_key: 0,
            },
        }
    }

    /// Tells a reading thread to stop (its sends fail from now on).
    pub(super) fn stop(&mut self) {
        self.reading = Reading::Stopped;
    }

    /// Hands a request on once it arrives more than `hold` (if less than
    /// `reorder`) before the latest arrival, instead of `reorder`: what a
    /// log needs whose lines are at most `hold` out of order, which then
    /// holds that much of the log instead of `reorder`'s worth. A line that
    /// goes before one already handed on (a request slower than `hold`)
    /// is kept aside, in [`Pipeline::take_late`]; whenever the late lines
    /// are as many as the lines held (and at least [`LATE_FEW`]), `hold`
    /// doubles, up to `reorder`, so a log more out of order than `hold`
    /// soon gets a hold that suits it. Which lines are bad lines does not
    /// change: that rule stays on `reorder`.
    pub(super) fn holding(mut self, hold: u64) -> Pipeline {
        self.order.hold = hold.min(self.order.options.reorder.0);
        self.order.hold_at_first = self.order.hold;
        self.order.window = Window::new(self.order.hold);
        self
    }

    /// The lines that went before one already handed on (see
    /// [`Pipeline::holding`]), in replay order; ghosts among them set the
    /// time base too.
    pub(super) fn take_late(&mut self) -> Vec<Pending> {
        let mut late = std::mem::take(&mut self.order.late);
        late.sort_unstable();
        late
    }

    /// Whether an error [`Pipeline::next`] gave is the one holding all of
    /// `reorder` gives. Holding all of it, every request handed on is
    /// handed on here too, no later, or kept aside as late, and the same
    /// lines are bad: so it is, unless holding less a request was too long
    /// after the first (holding all, a bad line read later might come
    /// first), or a late line moved the time base back so far that,
    /// holding all, a request handed on before the error might have been
    /// too long after the first.
    pub(super) fn error_is_exact(&self) -> bool {
        let order = &self.order;
        if order.hold_at_first == order.options.reorder.0 {
            return true;
        }
        let earliest = order.late.iter().map(|l| l.arrival).chain(order.base).min();
        !order.too_far
            && (order.late.is_empty()
                || order
                    .latest
                    .zip(earliest)
                    .is_none_or(|((latest, _), e)| latest - e <= MAX_NANOS))
    }

    /// Bad lines skipped (`on_bad_line = "skip"`).
    pub(super) fn skipped(&self) -> u64 {
        self.order.skipped
    }

    /// Lines the reorder window moved.
    pub(super) fn reordered(&self) -> u64 {
        self.order.reordered
    }

    /// Lines outside `location`.
    pub(super) fn filtered(&self) -> u64 {
        self.order.filtered
    }

    /// Lines `only`/`except` passed over.
    pub(super) fn unselected(&self) -> u64 {
        self.order.unselected
    }

    /// Lines not counted because their key is empty (nginx).
    pub(super) fn empty_key(&self) -> u64 {
        self.order.empty_key
    }

    /// Reads the next line that is not blank into the order (at the
    /// log's end, finishes it).
    fn read_one<I: Interner + ?Sized>(&mut self, intern: &mut I) -> Result<(), String> {
        let order = &mut self.order;
        let said = match &mut self.reading {
            Reading::Here(reader) => match reader.next(intern)? {
                Some((_, _, None)) => return Ok(()),
                Some((_, bytes, Some(Ok(said)))) => return order.apply(said, bytes),
                Some((line, bytes, Some(Err(Unsaid::Bad(why))))) => {
                    return order.bad(line, why, bytes)
                }
                Some((line, _, Some(Err(Unsaid::Refused(e))))) => {
                    return Err(format!("line {line}: {e}"))
                }
                None => None,
            },
            Reading::Fed { feed, batch, at } => {
                if *at == batch.len() {
                    *at = 0;
                    if !feed.refill(batch)? {
                        batch.clear();
                    }
                }
                let said = batch.get(*at).copied();
                *at += 1;
                said
            }
            Reading::Stopped => return Err(FAILED.to_string()),
        };
        match said {
            Some(said) => order.apply(said, b""),
            None => {
                order.eof = true;
                order.finish_seconds(true)
            }
        }
    }

    /// The instant of the earliest arrival, once a line has been handed
    /// on (or passed over: a line outside `location` sets it too).
    pub(super) fn start(&self) -> Option<u64> {
        self.order.base
    }

    pub(super) fn next<I: Interner + ?Sized>(
        &mut self,
        intern: &mut I,
    ) -> Result<Option<Request>, String> {
        loop {
            let (eof, latest, hold) = (self.order.eof, self.order.latest, self.order.hold);
            let due =
                |arrival: u64| eof || latest.is_some_and(|(l, _)| arrival.saturating_add(hold) < l);
            if let Some(top) = self.order.window.peek(due) {
                self.order.window.pop();
                self.order.last_out = Some(top.order_key());
                self.order.popped += 1;
                let base = *self.order.base.get_or_insert(top.arrival);
                if top.ghost {
                    continue;
                }
                let rel = top.arrival - base;
                if rel > MAX_NANOS {
                    self.order.too_far = true;
                    return Err(format!(
                        "line {}: arrives more than {} after the first request",
                        top.line,
                        Nanos(MAX_NANOS)
                    ));
                }
                return Ok(Some(top.request(Nanos(rel))));
            }
            if eof {
                return Ok(None);
            }
            self.read_one(intern)?;
        }
    }
}

impl Pending {
    /// Its request, arriving at `time` after the time base.
    pub(super) fn request(&self, time: Nanos) -> Request {
        Request {
            time,
            client: self.client,
            ip: self.ip,
            part: self.part,
            cost: self.cost,
            verdict: self.verdict,
            delay: self.delay,
            line: self.line,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{envoy, nginx, Location};
    use super::*;
    use proptest::prelude::*;

    fn run(format: Format, location: &str, log: &str) -> (Result<Vec<u64>, String>, Pipeline) {
        run_bytes(format, location, log.as_bytes())
    }

    fn run_bytes(
        format: Format,
        location: &str,
        log: &[u8],
    ) -> (Result<Vec<u64>, String>, Pipeline) {
        let lines = Lines::new(Box::new(std::io::Cursor::new(log.to_vec()))).unwrap();
        let options = LogOptions {
            reorder: Nanos(60 * NS),
            subsecond: None,
            skip_bad: false,
            location: Location::parse(location),
            select: None,
        };
        let mut p = Pipeline::new(lines, &Arc::new(format), &options);
        let mut intern = |c: &[u8], _: &[u8], _: &[u8]| match std::str::from_utf8(c) {
            Ok(_) => Ok((0, 0, 0)),
            Err(_) => Err(InternError::NotUtf8),
        };
        let mut out = Vec::new();
        let r = loop {
            match p.next(&mut intern) {
                Ok(Some(r)) => out.push(r.line),
                Ok(None) => break Ok(out),
                Err(e) => break Err(e),
            }
        };
        (r, p)
    }

    /// Ids by first appearance, with a hint from its prefetch (the
    /// client's bytes, summed with their positions) that each intern
    /// checks against the client it is handed: a hint for other bytes
    /// than the key interned fails the test.
    #[derive(Default)]
    struct Checking {
        ids: std::collections::HashMap<Vec<u8>, u32>,
        hinted: u64,
    }

    fn hint_of(client: &[u8]) -> u64 {
        (client
            .iter()
            .zip(1..)
            .map(|(&b, i)| u64::from(b) * i)
            .sum::<u64>()
            << 8)
            | client.len() as u64
    }

    impl Interner for Checking {
        fn intern(
            &mut self,
            c: &[u8],
            i: &[u8],
            _: &[u8],
            hint: Option<u64>,
        ) -> Result<(u32, u32, u32), InternError> {
            if let Some(h) = hint {
                assert_eq!(h, hint_of(c), "a hint for other bytes than {c:?}");
                self.hinted += 1;
            }
            let n = self.ids.len() as u32;
            let c = *self.ids.entry(c.to_vec()).or_insert(n);
            let n = self.ids.len() as u32;
            Ok((c, *self.ids.entry(i.to_vec()).or_insert(n), 0))
        }

        fn prefetch(&self, client: &[u8], _: &[u8]) -> Option<u64> {
            Some(hint_of(client))
        }
    }

    /// Every request of `log` (skipping bad lines) as the pipeline hands
    /// it out, and the counts, with lines looked at ahead or not.
    fn requests(log: &[u8], look_ahead: bool) -> (Vec<String>, [u64; 4]) {
        let format = nginx::NginxFormat::new(
            "$msec $http_x_k $remote_addr \"$request\" $status",
            None,
            Some("$http_x_k"),
            Some("$remote_addr"),
        )
        .unwrap();
        let lines = Lines::new(Box::new(std::io::Cursor::new(log.to_vec()))).unwrap();
        let options = LogOptions {
            reorder: Nanos(2 * NS),
            subsecond: None,
            skip_bad: true,
            location: Location::parse("/a"),
            select: None,
        };
        let mut p = Pipeline::new(lines, &Arc::new(Format::Nginx(format)), &options);
        if let (false, Reading::Here(reader)) = (look_ahead, &mut p.reading) {
            reader.ahead = None;
        }
        let mut intern = Checking::default();
        let mut out = Vec::new();
        while let Some(r) = p.next(&mut intern).unwrap() {
            out.push(format!("{r:?}"));
        }
        // Most lines' keys were hashed once, when looked at ahead.
        assert_eq!(intern.hinted > out.len() as u64 / 2, look_ahead);
        let counts = [p.skipped(), p.reordered(), p.filtered(), p.empty_key()];
        (out, counts)
    }

    // A line looked at ahead whose first match does not read is read the
    // other ways it matches, as a line read alone is (docs/semantics.md
    // §8): nginx logged these for the Basic users `a [b` and `x] "y [1`.
    #[test]
    fn a_line_looked_at_ahead_is_read_the_way_it_reads() {
        let format = || {
            let f = nginx::NginxFormat::new(nginx::COMBINED, None, Some("$remote_user"), None);
            Format::Nginx(f.unwrap())
        };
        let log = concat!(
            "127.0.0.1 - a [b [03/Dec/2026:15:05:02 +0000] \"GET /one HTTP/1.1\" 200 3 \"-\" \"c\"\n",
            "127.0.0.1 - u [03/Dec/2026:15:05:03 +0000] \"GET /two HTTP/1.1\" 200 3 \"-\" \"c\"\n",
            "127.0.0.1 - x] \\x22y [1 [03/Dec/2026:15:05:04 +0000] \"GET /three HTTP/1.1\" 200 3 \"-\" \"c\"\n",
        );
        let mut options = LogOptions {
            reorder: Nanos(60 * NS),
            subsecond: Some(Subsecond::Start),
            skip_bad: false,
            location: None,
            select: None,
        };
        for skip_bad in [false, true] {
            options.skip_bad = skip_bad;
            let lines =
                Lines::new(Box::new(std::io::Cursor::new(log.as_bytes().to_vec()))).unwrap();
            let mut p = Pipeline::new(lines, &Arc::new(format()), &options);
            // The client key is `$remote_user`, whose first match does
            // not read in lines 1 and 3: their hints must not be used.
            let mut intern = Checking::default();
            let mut times = Vec::new();
            while let Some(r) = p.next(&mut intern).unwrap() {
                times.push((r.line, r.time.0));
            }
            assert_eq!(times, [(1, 0), (2, NS), (3, 2 * NS)]);
            assert_eq!(p.skipped(), 0);
        }
    }

    // The lines looked at ahead (their keys asked for, their fields'
    // ranges kept for their parse) change nothing a log gives: bad, blank,
    // long and out-of-order lines, across the line buffer's refills.
    #[test]
    fn lines_looked_at_ahead_give_what_lines_read_one_by_one_give() {
        let mut log = Vec::new();
        let mut x = 7u64;
        for i in 0..40_000u64 {
            crate::lcg(&mut x);
            let r = x >> 33;
            let t = 1_796_085_720_000 + i * 3 - r % 1500;
            let line = match r % 50 {
                0 => "garbage".to_string(),
                1 => String::new(),
                2 => format!(
                    "{}.{:03} - 10.0.0.{} \"GET /a HTTP/1.1\" 200",
                    t / 1000,
                    t % 1000,
                    r % 9
                ),
                3 => format!(
                    "{}.{:03} k{} 10.0.0.1 \"GET /b HTTP/1.1\" 503",
                    t / 1000,
                    t % 1000,
                    r % 7
                ),
                4 => format!(
                    "{}.{:03} k{} 10.0.0.1 \"GET /a{} HTTP/1.1\" 503",
                    t / 1000,
                    t % 1000,
                    r % 7,
                    "x".repeat(20_000)
                ),
                _ => format!(
                    "{}.{:03} k{} 10.0.{}.{} \"GET /a HTTP/1.1\" {}",
                    t / 1000,
                    t % 1000,
                    r % 300,
                    r % 3,
                    r % 11,
                    if r % 4 == 0 { 503 } else { 200 }
                ),
            };
            log.extend_from_slice(line.as_bytes());
            log.extend_from_slice(if r % 3 == 0 { b"\r\n" } else { b"\n" });
        }
        let (with, counts) = requests(&log, true);
        assert!(
            with.len() > 30_000 && counts.iter().all(|&c| c > 0),
            "{counts:?}"
        );
        assert_eq!((with, counts), requests(&log, false));
    }

    // A timeout storm: after a line handed on, 20 000 lines of requests
    // that arrived before it, 2 s ago. All are late, whatever the hold;
    // the hold doubles up to `reorder` once each (an earlier version
    // rebuilt the window at every late line after that, 1500 times
    // slower than holding all of `reorder`).
    #[test]
    fn a_storm_of_late_lines_doubles_the_hold_once_each_up_to_reorder() {
        let f = nginx::NginxFormat::new(
            "$msec $request_time $http_x_k",
            None,
            Some("$http_x_k"),
            None,
        )
        .unwrap();
        let t = 1_796_085_720_000u64;
        let mut log = format!("{}.000 0.000 k1\n{}.010 1.110 k2\n", t / 1000, t / 1000);
        for i in 0..20_000u64 {
            let end = t + 20 + i / 10;
            log += &format!(
                "{}.{:03} {:.3} k{}\n",
                end / 1000,
                end % 1000,
                (end - (t - 2000)) as f64 / 1000.0,
                i % 50
            );
        }
        let lines = Lines::new(Box::new(std::io::Cursor::new(log.into_bytes()))).unwrap();
        let options = LogOptions {
            reorder: Nanos(60 * NS),
            subsecond: None,
            skip_bad: false,
            location: None,
            select: None,
        };
        let mut p = Pipeline::new(lines, &Arc::new(Format::Nginx(f)), &options).holding(NS);
        let mut intern = |_: &[u8], _: &[u8], _: &[u8]| Ok((0, 0, 0));
        let mut out = Vec::new();
        while let Some(r) = p.next(&mut intern).unwrap() {
            out.push(r.line);
        }
        assert_eq!(out, [2, 1]);
        assert_eq!(p.take_late().len(), 20_000);
        // 1 s doubled six times is 64 s: the sixth stops at 60 s.
        assert_eq!((p.order.hold, p.order.widened), (60 * NS, 6));
    }

    // issue 23: line 1, an /api/ request without the header, failed the
    // /key/ zone as "$http_x_api_key is empty".
    #[test]
    fn other_locations_and_empty_nginx_keys_are_no_bad_lines_and_not_replayed() {
        let f = nginx::NginxFormat::new(
            "$msec $http_x_api_key \"$request\"",
            None,
            Some("$http_x_api_key"),
            None,
        )
        .unwrap();
        let log = "\
1796085720.000 - \"GET /api/a HTTP/1.1\"\n\
1796085720.001 k1 \"GET /key/a HTTP/1.1\"\n\
1796085720.002 - \"GET /key/b HTTP/1.1\"\n\
1796085720.003 k2 \"GET /api/b HTTP/1.1\"\n\
1796085720.004 k1 \"GET /key/c HTTP/1.1\"\n";
        let (r, p) = run(Format::Nginx(f), "/key/", log);
        assert_eq!(r.unwrap(), vec![2, 5]);
        assert_eq!((p.filtered(), p.empty_key(), p.skipped()), (2, 1, 0));
    }

    #[test]
    fn an_empty_envoy_key_is_a_bad_line_in_its_location_only() {
        let f = envoy::EnvoyFormat::new(
            "%START_TIME% %REQ(X-K)% %REQ(:PATH)%",
            None,
            Some("%REQ(X-K)%"),
            None,
        )
        .unwrap();
        let log = "\
2026-12-01T00:42:00.000Z - /api/a\n\
2026-12-01T00:42:00.001Z k1 /key/a\n\
2026-12-01T00:42:00.002Z - /key/b\n";
        let (r, p) = run(Format::Envoy(f), "/key/", log);
        assert!(r.unwrap_err().contains("line 3: %REQ(X-K)% is empty"));
        assert_eq!(p.filtered(), 1);
    }

    // Only the fields read are checked for UTF-8: other bytes in a field
    // ratesim skips are no reason to refuse a line nginx wrote.
    #[test]
    fn a_line_is_refused_for_bytes_that_are_not_utf8_only_in_a_field_it_reads() {
        let f = || {
            Format::Nginx(
                nginx::NginxFormat::new(
                    "$msec $http_x_k \"$http_user_agent\" \"$request\"",
                    None,
                    Some("$http_x_k"),
                    None,
                )
                .unwrap(),
            )
        };
        let (r, _) = run_bytes(
            f(),
            "/",
            b"1796085720.000 k1 \"\xff\" \"GET /a HTTP/1.1\"\n",
        );
        assert_eq!(r.unwrap(), vec![1]);
        // The path is matched as bytes, as nginx matches it (an audit found
        // a request nginx passed refused for a raw byte in its URI).
        let (r, _) = run_bytes(
            f(),
            "/",
            b"1796085720.000 k1 \"-\" \"GET /\xff HTTP/1.1\"\n",
        );
        assert_eq!(r.unwrap(), vec![1]);
        for bad in [
            &b"1796085720.000 k\xff \"-\" \"GET /a HTTP/1.1\"\n"[..],
            // Another error in a line that is not UTF-8: it says so first.
            b"x1796085720.000 k1 \"\xff\" \"GET /a HTTP/1.1\"\n",
        ] {
            let (r, _) = run_bytes(f(), "/", bad);
            let e = r.unwrap_err();
            assert!(e.starts_with("line 1: is not valid UTF-8: \""), "{e}");
        }
    }

    /// A field of a line the plain reading test writes: each kind's usual
    /// values and others, some of which the plain reading leaves to the
    /// generic one.
    fn field(kind: usize, pick: usize) -> &'static [u8] {
        let values: &[&[u8]] = match kind {
            // $msec: the usual form, other forms, and values not times.
            0 => &[
                b"1796085720.123",
                b"1796085720.000",
                b"1796085720",
                b"1796085720.1",
                b"1796085720.1234",
                b"x",
                b"-",
                b"",
            ],
            // $time_iso8601, and a month that does not exist.
            1 => &[
                b"2026-12-01T00:42:00+00:00",
                b"2026-12-01T00:42:00+01:30",
                b"2026-12-01T00:42:00Z",
                b"2026-13-01T00:42:00+00:00",
                b"-",
            ],
            // A key: empty ones, one not UTF-8, one holding the separator.
            2 => &[
                b"k1",
                b"k2",
                b"k3",
                b"-",
                b"",
                b"k\xff",
                b"k 1",
                b"\xc3\xa9",
            ],
            // $status.
            3 => &[b"200", b"503", b"429", b"2x0", b"20", b"2000", b"-"],
            // $request_time.
            4 => &[
                b"0.250", b"0.000", b"0.001", b"1", b"-", b"x", b"0.0001", b"12.5",
            ],
            // $remote_addr.
            5 => &[b"10.0.0.1", b"10.0.0.2", b"-", b""],
            // Envoy's %START_TIME%: the usual form, others, and not a time.
            6 => &[
                b"2026-12-01T00:42:00.239Z",
                b"2026-12-01T00:42:01.000Z",
                b"2026-12-01T00:42:00Z",
                b"2026-12-01T00:42:00.2391Z",
                b"2026-12-01T00:42:00.239+01:00",
                b"-",
            ],
            // An address with its port (%DOWNSTREAM_REMOTE_ADDRESS%).
            7 => &[
                b"10.0.0.1:5678",
                b"10.0.0.1:80",
                b"10.0.0.2",
                b"[::1]:80",
                b":80",
                b"-",
                b"",
            ],
            // %RESPONSE_FLAGS%.
            8 => &[b"-", b"RL", b"UH,RL", b"UH", b"RLX"],
            // %RESPONSE_CODE%, then %DURATION%.
            9 => &[b"200", b"429", b"0", b"-"],
            _ => &[b"0", b"12", b"-"],
        };
        values[pick % values.len()]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        // A log read with the plain reading first (`read_plain`) says
        // what it says read the generic way alone, line by line (a
        // request's time, duration, verdict and ids; a line to pass over;
        // the first error), and names the same keys in the same order:
        // for formats it reads (nginx's and Envoy's, with an address field
        // or not, an address with its port, a path field with no
        // location, whole-second stamps), usual lines and
        // lines it leaves to the generic reading (times, durations and
        // statuses of other forms, empty keys, keys not UTF-8 or holding
        // a space, fields missing or added, blank lines).
        #[test]
        fn the_plain_reading_says_what_the_generic_reading_says(
            which in 0usize..7,
            lines in prop::collection::vec((prop::collection::vec(0usize..8, 6), 0u8..8), 1..120),
            skip_bad in any::<bool>(),
        ) {
            // (format, the kind of each of its fields, client, address)
            let (text, kinds, client, ip): (&str, &[usize], &str, Option<&str>) = match which {
                0 => ("$msec $http_x_k $status $request_time", &[0, 2, 3, 4], "$http_x_k", None),
                1 => ("$msec $http_x_k $remote_addr $status $request_time", &[0, 2, 5, 3, 4], "$http_x_k", Some("$remote_addr")),
                2 => ("$time_iso8601 $http_x_k $request_time \"$request\"", &[1, 2, 4], "$http_x_k", None),
                3 => ("$msec $remote_addr $status", &[0, 5, 3], "$remote_addr", Some("$remote_addr")),
                4 => ("%START_TIME% %REQ(X-K)% %RESPONSE_CODE% %DURATION%", &[6, 2, 9, 10], "%REQ(X-K)%", None),
                5 => ("%START_TIME% %DOWNSTREAM_REMOTE_ADDRESS% %RESPONSE_FLAGS% %REQ(X-K)%", &[6, 7, 8, 2], "%REQ(X-K)%", Some("%DOWNSTREAM_REMOTE_ADDRESS%")),
                // (No address named: Envoy's is the client's own field.)
                _ => ("%START_TIME% %DOWNSTREAM_REMOTE_ADDRESS% %RESPONSE_CODE%", &[6, 7, 9], "%DOWNSTREAM_REMOTE_ADDRESS%", None),
            };
            let format = Arc::new(match which {
                0..=3 => Format::Nginx(nginx::NginxFormat::new(text, None, Some(client), ip).unwrap()),
                _ => Format::Envoy(envoy::EnvoyFormat::new(text, None, Some(client), ip).unwrap()),
            });
            let mut log = Vec::new();
            for (picks, shape) in &lines {
                let mut fields: Vec<&[u8]> = kinds.iter().zip(picks).map(|(&k, &p)| field(k, p)).collect();
                if which == 2 {
                    fields.push(b"GET /a HTTP/1.1");
                }
                match shape {
                    0 => fields.pop().map(|_| ()).unwrap_or(()),
                    1 => fields.push(b"extra"),
                    _ => {}
                }
                let mut line = Vec::new();
                for (i, f) in fields.iter().enumerate() {
                    if i > 0 {
                        line.push(b' ');
                    }
                    let quoted = which == 2 && i == fields.len() - 1 && *shape > 1;
                    if quoted {
                        line.push(b'"');
                    }
                    line.extend_from_slice(f);
                    if quoted {
                        line.push(b'"');
                    }
                }
                if *shape == 2 {
                    line.clear();
                }
                log.extend_from_slice(&line);
                log.push(b'\n');
            }
            let options = LogOptions {
                reorder: Nanos(60 * NS),
                subsecond: None,
                skip_bad,
                location: None,
                select: None,
            };
            let plain = match &*format {
                Format::Nginx(f) => f.plain(false),
                Format::Envoy(f) => f.plain(false),
                Format::Jsonl(_) => false,
            };
            prop_assert!(plain);
            let read = |plain: bool| {
                let lines = Lines::new(Box::new(std::io::Cursor::new(log.clone()))).unwrap();
                let mut reader = LineReader::new(lines, &format, &options).with_plain(plain);
                let mut keys = super::super::LogKeys::new(None);
                let mut said = Vec::new();
                loop {
                    match reader.next_said(&mut keys) {
                        Ok(Some(s)) => said.push(Ok(s)),
                        Ok(None) => break,
                        Err(()) => {
                            said.push(Err(()));
                            break;
                        }
                    }
                }
                let (clients, ips) = keys.keys.counts();
                let names: Vec<String> = (0..clients)
                    .map(|i| keys.keys.client(i).to_string())
                    .chain((0..ips).map(|i| keys.keys.ip(i).to_string()))
                    .collect();
                (said, names)
            };
            let (plain, generic) = (read(true), read(false));
            prop_assert_eq!(&plain, &generic);
        }
    }

    // A reader reads plainly the formats whose options filter nothing,
    // and not where a location filters by the path, lines are selected,
    // a source is split or the gateway's verdict is read from
    // `$limit_req_status`, nor JSON lines.
    #[test]
    fn a_reader_reads_plainly_only_where_nothing_is_filtered() {
        let options = |location: Option<&str>, select: bool| LogOptions {
            reorder: Nanos(60 * NS),
            subsecond: None,
            skip_bad: false,
            location: location.and_then(Location::parse),
            select: select.then(|| super::super::Select {
                variable: "$http_x_plan".into(),
                values: vec!["free".into()],
                except: false,
            }),
        };
        let nginx = |text: &str, split: bool| {
            let mut f = nginx::NginxFormat::new(text, None, Some("$http_x_k"), None).unwrap();
            if split {
                f.split_by("$http_x_plan").unwrap();
            }
            Arc::new(Format::Nginx(f))
        };
        let key = Some("%REQ(X-K)%");
        let envoy =
            envoy::EnvoyFormat::new("%START_TIME% %REQ(X-K)% %REQ(:PATH)%", None, key, None);
        let envoy = Arc::new(Format::Envoy(envoy.unwrap()));
        let plain = |format: &Arc<Format>, options: &LogOptions| {
            LineReader::new(Lines::over(Vec::new()), format, options).plain
        };
        let path = nginx("$msec $http_x_k $http_x_plan \"$request\"", false);
        assert!(plain(&path, &options(None, false)));
        assert!(!plain(&path, &options(Some("/a"), false)));
        assert!(!plain(&path, &options(None, true)));
        assert!(!plain(
            &nginx("$msec $http_x_k $http_x_plan \"$request\"", true),
            &options(None, false)
        ));
        // A location, and no path to filter by: nothing is filtered.
        assert!(plain(
            &nginx("$msec $http_x_k $http_x_plan", false),
            &options(Some("/a"), false)
        ));
        assert!(!plain(
            &nginx("$msec $http_x_k $limit_req_status", false),
            &options(None, false)
        ));
        assert!(plain(&envoy, &options(None, false)));
        assert!(!plain(&envoy, &options(Some("/a"), false)));
        let jsonl = Arc::new(Format::Jsonl(super::super::jsonl::JsonlFormat {
            time: "ts".into(),
            unit: super::super::jsonl::Unit::Ms,
            client: "user".into(),
            ip: None,
            cost: None,
            source: None,
        }));
        assert!(!plain(&jsonl, &options(None, false)));
    }

    // The plain reading reads the usual line, so the proptest above
    // compares it with something: a request's time, duration, verdict and
    // keys.
    #[test]
    fn the_plain_reading_reads_the_usual_line() {
        let f = nginx::NginxFormat::new(
            "$msec $http_x_k $status $request_time",
            None,
            Some("$http_x_k"),
            None,
        )
        .unwrap();
        let line = b"1796085720.123 k1 503 0.250";
        let mut values = Vec::new();
        f.template.match_fields(line, &mut values).unwrap();
        let p = f.read_plain(line, &values).unwrap();
        assert_eq!(
            (p.stamp, p.duration, p.verdict, p.client),
            (
                1_796_085_720_123_000_000,
                250_000_000,
                Some(Verdict::Rejected),
                &b"k1"[..]
            )
        );
        // The address is the client's own bytes, as the generic reading
        // hands it on (the interner tells the two apart by that).
        assert!(std::ptr::eq(p.ip, p.client));
        for line in [
            &b"1796085720.123 - 503 0.250"[..],
            b"1796085720.123 k1 5x3 0.250",
            b"1796085720.123 k1 503 x",
        ] {
            f.template.match_fields(line, &mut values).unwrap();
            assert_eq!(f.read_plain(line, &values), None);
        }
    }
}
