//! Access logs as traces: replay what a gateway (nginx, Envoy) or an
//! application (JSON lines) logged, by the rules of docs/semantics.md §8.
//!
//! A `[[traffic]]` source with `pattern = "trace"` takes `format = "csv"`
//! (the default, [`crate::scenario::traffic::trace`]), `"nginx"`, `"envoy"` or
//! `"jsonl"`. Each line becomes one request:
//!
//! - **Arrival.** nginx writes a line when it responds. When the line
//!   carries the request's duration (`$request_time`), the arrival is the
//!   logged time minus the duration, so a request nginx delayed sits where
//!   it arrived. Envoy's `%START_TIME%` is the start already: the arrival,
//!   with `%DURATION%` not subtracted.
//!   Arrivals are made relative to the earliest one, which is the first
//!   line's unless the log begins with a delayed request.
//! - **Order.** Lines are re-ordered by arrival within `reorder` (default
//!   60 s); a line arriving more than that before the latest arrival seen
//!   is a bad line. Equal arrivals keep log order, except when the log
//!   carries the gateway's verdict: then passed, then delayed (shortest
//!   delay first), then rejected — the order the gateway must have decided
//!   them in.
//! - **Whole-second stamps** (`$time_local`, `$time_iso8601`) need
//!   `subsecond = "start"` (every request of a second at its start) or
//!   `"spread"` (a second's k requests at `i/k` of it, in log order).
//! - **Locations and empty keys.** A line of another `location` is not
//!   replayed and is no bad line; nor is an nginx line whose key is empty,
//!   since nginx does not account it. Both still set the time base.
//! - **Bad lines** are errors naming the line and quoting its first 80
//!   characters, or, with `on_bad_line = "skip"`, counted and skipped. A
//!   line is read as bytes: only the fields ratesim reads must be UTF-8.
//! - **gzip** logs are read as they are (by their magic bytes).
//!
//! - **Sources.** `source = "FIELD"` (an nginx variable, an Envoy command,
//!   a JSON field) splits the log into one source per distinct value, as
//!   [`crate::split`] says (docs/semantics.md §3); `-` is an empty value.
//!
//! The log is read once per process ([`crate::recording`]): validation
//! reads it into a recording, which every run, every limiter's agreement
//! and every sweep point then replays. Memory: while reading, one entry per
//! distinct key (and source value), the lines of the last second or of
//! the reorder window if shorter (more, up to the window's, when the log
//! is further out of order than that) and the few lines later than that,
//! merged in at the end (and, with `spread`, the seconds inside the
//! window); then the recording, about
//! 5–6 bytes a line, for as long as the process runs (and a chunk of it
//! more while late lines are merged in).

mod blocks;
pub mod envoy;
mod format;
pub mod jsonl;
mod lines;
mod merge;
pub mod nginx;
mod parsed;
mod pieces;
mod pipeline;
mod said;
pub mod template;
pub mod time;
mod window;
pub(crate) mod word;

pub use format::{Format, Location, LogOptions, Select, Subsecond, FORMATS, MAX_LINE_BYTES};
use lines::Lines;
pub use parsed::{EmptyKey, Key, LineError, Parsed, Verdict};
use pipeline::{InternError, Interner, LineReader, Pipeline};
use window::Pending;

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use crossbeam_utils::CachePadded;
use ratesim_rundir::AccessLogSource;

use crate::clock::{Nanos, MAX_NANOS};
use crate::error::{quoted, InputError};
use crate::fields::Fields;
use crate::population::Population;
use crate::recording::{
    Cache, Counts, Entry, Ids, Recording, RecordingBuilder, Replay, ReplayStream,
};
use crate::split::Split;
use crate::trace_data::FileId;
use crate::traffic::{Recorded, Stream, StreamCtx};
use crate::{RecordedKeys, TraceData};

/// Nanoseconds in a second.
const NS: u64 = 1_000_000_000;

/// A validated access-log source.
#[derive(Debug, Clone)]
pub struct AccessLog {
    pub shown: String,
    pub data: TraceData,
    pub format: Arc<Format>,
    pub options: LogOptions,
    /// The log as read (once per process, see [`crate::recording`]).
    recording: Arc<Recording>,
    /// Its keys' ids in this scenario's population.
    ids: Arc<Ids>,
}

/// What identifies a log's recording: the file, and everything that
/// changes what reading it gives.
#[derive(Debug, PartialEq)]
struct LogKey {
    file: FileId,
    format: Format,
    options: LogOptions,
    /// The field it splits by and the `[[traffic]]`'s own name.
    split: Option<(String, String)>,
}

/// The logs this process has read.
static LOGS: Cache<LogKey> = Cache::new();

/// One request of the log, in replay order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Arrival, relative to the earliest.
    pub time: Nanos,
    pub client: u32,
    pub ip: u32,
    /// Its source's part number in a split log (else 0).
    pub part: u32,
    pub cost: u64,
    pub verdict: Option<Verdict>,
    /// The gateway's delay (its logged duration) of a delayed request.
    pub delay: u64,
    /// 1-based line number in the log.
    pub line: u64,
}

impl Request {
    /// As a recording keeps it.
    fn entry(&self) -> Entry {
        Entry {
            time: self.time,
            client: self.client,
            ip: self.ip,
            part: self.part,
            cost: self.cost,
            verdict: Verdict::code(self.verdict),
            delay: self.delay,
            line: self.line,
        }
    }
}

impl AccessLog {
    /// Parses the access-log fields of a `[[traffic]]` trace source whose
    /// `format` is `format`, and reads the log once (validating every line
    /// and interning every key), split into sources by `split`'s field if
    /// given.
    pub fn parse(
        f: &mut Fields,
        format: &str,
        shown: &str,
        data: TraceData,
        population: &mut Population,
        split: Option<Split>,
    ) -> Result<AccessLog, InputError> {
        let err = |f: &Fields, key: &str, e: String| InputError::new(format!("{}: {e}", f.at(key)));
        let time = f.opt_str("time")?;
        let client = f.opt_str("client")?;
        let ip = f.opt_str("ip")?;
        let mut fmt = match format {
            "nginx" | "envoy" => {
                // nginx's one predefined format may be given by its name.
                let log_format = f
                    .opt_str("log_format")?
                    .filter(|l| !(format == "nginx" && *l == "combined"));
                let built = if format == "nginx" {
                    nginx::NginxFormat::new(log_format.unwrap_or(nginx::COMBINED), time, client, ip)
                        .map(Format::Nginx)
                } else {
                    envoy::EnvoyFormat::new(log_format.unwrap_or(envoy::DEFAULT), time, client, ip)
                        .map(Format::Envoy)
                };
                built.map_err(|(key, e)| err(f, key, e))?
            }
            "jsonl" => {
                let unit = match f.opt_str("time_unit")? {
                    None => jsonl::Unit::S,
                    Some(u) => jsonl::Unit::parse(u).ok_or_else(|| {
                        err(
                            f,
                            "time_unit",
                            format!("{} — accepted: {}", quoted(u), jsonl::UNITS),
                        )
                    })?,
                };
                Format::Jsonl(jsonl::JsonlFormat {
                    time: time.unwrap_or("time").to_string(),
                    unit,
                    client: client.unwrap_or("client").to_string(),
                    ip: ip.map(str::to_string),
                    cost: Some(f.opt_str("cost")?.unwrap_or("cost").to_string()),
                    source: None,
                })
            }
            other => {
                return Err(err(
                    f,
                    "format",
                    format!("{} — accepted: {FORMATS}", quoted(other)),
                ))
            }
        };
        // docs/semantics.md §8: without $limit_req_status, the status nginx
        // answers a rejection with (its `limit_req_status`, default 503).
        if let Some(v) = f.peek("limit_req_status").cloned() {
            let status = f.opt_u64("limit_req_status")?;
            match (&mut fmt, status) {
                (Format::Nginx(n), Some(s @ 400..=599)) => n.rejected_status = s as u16,
                (Format::Nginx(_), _) => {
                    return Err(f.error(
                        "limit_req_status",
                        &v,
                        "expected the status of nginx's limit_req_status, 400 to 599 (default 503)",
                    ))
                }
                _ => {
                    return Err(f.error(
                        "limit_req_status",
                        &v,
                        "applies to nginx logs only (the status nginx answers a rejection with)",
                    ))
                }
            }
        }
        let reorder = f.opt_duration("reorder", false)?.unwrap_or(Nanos(60 * NS));
        let subsecond = match f.opt_str("subsecond")? {
            None => None,
            Some("start") => Some(Subsecond::Start),
            Some("spread") => Some(Subsecond::Spread),
            Some(other) => {
                return Err(err(
                    f,
                    "subsecond",
                    format!("{} — accepted: \"start\", \"spread\"", quoted(other)),
                ))
            }
        };
        let coarse_field = match &fmt {
            Format::Nginx(n) => n.time_var.clone(),
            _ => String::new(),
        };
        match (fmt.coarse(), subsecond) {
            (true, None) => {
                return Err(f.missing(
                    "subsecond",
                    &format!(
                        "the time {coarse_field} has whole seconds only; say where a second's requests go: \"start\" (all at its start) or \"spread\" (evenly inside it)"
                    ),
                ))
            }
            (false, Some(_)) if !matches!(&fmt, Format::Jsonl(j) if j.unit == jsonl::Unit::S) => {
                return Err(err(
                    f,
                    "subsecond",
                    "applies to whole-second time stamps only ($time_local, $time_iso8601, jsonl seconds); this log's times are finer".into(),
                ))
            }
            _ => {}
        }
        let skip_bad = match f.opt_str("on_bad_line")? {
            None | Some("error") => false,
            Some("skip") => true,
            Some(other) => {
                return Err(err(
                    f,
                    "on_bad_line",
                    format!("{} — accepted: \"error\", \"skip\"", quoted(other)),
                ))
            }
        };
        let location = match f.opt_str("location")? {
            None => None,
            Some(l) => {
                let loc = Location::parse(l).ok_or_else(|| {
                    err(
                        f,
                        "location",
                        format!(
                            "{} — expected \"= /exact/path\" or a \"/prefix\"",
                            quoted(l)
                        ),
                    )
                })?;
                if !fmt.has_path() {
                    return Err(err(f, "location", "the log format has no request path ($request, $uri, %REQ(:PATH)%) to match".into()));
                }
                Some(loc)
            }
        };
        let select = parse_select(f, &mut fmt)?;
        if let Some(split) = &split {
            let by = split.field.as_str();
            match &mut fmt {
                Format::Nginx(n) => n.split_by(by),
                Format::Envoy(e) => e.split_by(by),
                Format::Jsonl(j) => {
                    j.source = Some(by.to_string());
                    Ok(())
                }
            }
            .map_err(|e| err(f, "source", e))?;
        }
        let options = LogOptions {
            reorder,
            subsecond,
            skip_bad,
            location,
            select,
        };
        let key = data.identity().map(|file| LogKey {
            file,
            format: fmt.clone(),
            options: options.clone(),
            split: split
                .as_ref()
                .map(|s| (s.field.clone(), s.own().to_string())),
        });
        let format = Arc::new(fmt);
        let recording = LOGS
            .get(key, || read(&data, &format, &options, split))
            .map_err(|(key, e)| InputError::new(format!("{}: {} {e}", f.at(key), quoted(shown))))?;
        Ok(AccessLog {
            shown: shown.to_string(),
            data,
            format,
            options,
            ids: recording.ids(population),
            recording,
        })
    }

    /// What reading the log counted.
    pub fn counts(&self) -> &Counts {
        &self.recording.counts
    }

    pub fn last_time(&self) -> Nanos {
        self.recording.last
    }

    /// The instant of its earliest arrival, `t = 0` (ns since
    /// 1970-01-01T00:00Z), if it has a line.
    pub fn start(&self) -> Option<u64> {
        self.recording.start
    }

    pub fn rows(&self) -> u64 {
        self.recording.rows
    }

    /// The requests in replay order, with their verdicts and lines.
    pub fn requests(&self) -> anyhow::Result<Requests> {
        Ok(Requests {
            replay: self.recording.replay(),
            ids: Arc::clone(&self.ids),
        })
    }

    pub fn open(&self, ctx: StreamCtx) -> anyhow::Result<Box<dyn Stream>> {
        Ok(Box::new(ReplayStream::new(
            self.recording.replay(),
            Arc::clone(&self.ids),
            ctx.end,
        )))
    }

    /// For `summary.json`: what was read and how.
    pub fn echo(&self) -> serde_json::Value {
        let (time, log_format) = match &*self.format {
            Format::Nginx(n) => (Some(n.time_var.clone()), Some(n.template.names.clone())),
            Format::Envoy(e) => (None, Some(e.template.names.clone())),
            Format::Jsonl(j) => (Some(j.time.clone()), None),
        };
        let echo = AccessLogSource {
            name: String::new(),
            pattern: "trace".into(),
            path: self.shown.clone(),
            format: self.format.name().into(),
            rows: self.recording.rows,
            reorder: self.options.reorder.to_string(),
            bad_lines_skipped: self.counts().skipped,
            lines_reordered: self.counts().reordered,
            lines_with_verdict: self.counts().with_verdict,
            time,
            log_format,
            subsecond: self.options.subsecond.map(|s| {
                match s {
                    Subsecond::Start => {
                        "start: whole-second stamps, each second's requests at its start"
                    }
                    Subsecond::Spread => {
                        "spread: whole-second stamps, a second's k requests evenly inside it"
                    }
                }
                .to_string()
            }),
            location: self.options.location.as_ref().map(Location::shown),
            lines_outside_location: self
                .options
                .location
                .as_ref()
                .map(|_| self.counts().filtered),
            key: Some(self.format.client_field().to_string()),
            lines_empty_key: self.counts().empty_key,
            no_request_path: matches!(&*self.format, Format::Nginx(_) | Format::Envoy(_))
                && !self.format.has_path(),
            rejected_status: match &*self.format {
                Format::Nginx(n) if n.verdict_from_status() => Some(n.rejected_status),
                _ => None,
            },
            select: self.options.select.as_ref().map(Select::shown),
            lines_not_selected: self
                .options
                .select
                .as_ref()
                .map(|_| self.counts().unselected),
            source: self.split().map(|s| s.field.clone()),
            sources: self.split().map(|s| s.names().len() as u64),
        };
        // An object of plain fields: it always serializes.
        serde_json::to_value(echo).unwrap_or_default()
    }

    /// The access log a trace source replays, if it replays one.
    pub fn of(trace: &dyn Recorded) -> Option<&AccessLog> {
        trace.as_any().downcast_ref()
    }

    /// The access log a `[[traffic]]`'s pattern replays, if it is a trace
    /// of one.
    pub fn of_pattern(pattern: &crate::traffic::Pattern) -> Option<&AccessLog> {
        match pattern {
            crate::traffic::Pattern::Trace(t) => AccessLog::of(t.as_ref()),
            _ => None,
        }
    }

    /// How it splits into sources by `source`, if it does.
    pub fn split(&self) -> Option<&Split> {
        self.recording.split.as_ref()
    }

    /// The bytes its recording holds (shared by every scenario of the
    /// process that reads the log alike).
    pub fn memory_bytes(&self) -> u64 {
        self.recording.memory_bytes()
    }
}

impl Recorded for AccessLog {
    fn last_time(&self) -> Nanos {
        self.recording.last
    }

    fn rows(&self) -> u64 {
        self.recording.rows
    }

    fn memory_bytes(&self) -> u64 {
        self.recording.memory_bytes()
    }

    fn open(&self, ctx: StreamCtx) -> anyhow::Result<Box<dyn Stream>> {
        AccessLog::open(self, ctx)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The requests of a log in replay order (see [`AccessLog::requests`]).
pub struct Requests {
    replay: Replay,
    ids: Arc<Ids>,
}

impl Requests {
    pub fn next_request(&mut self) -> anyhow::Result<Option<Request>> {
        Ok(self.replay.next().map(|e| {
            let (client, ip) = self.ids.of(&e);
            Request {
                time: e.time,
                client,
                ip,
                part: e.part,
                cost: e.cost,
                verdict: Verdict::of_code(e.verdict),
                delay: e.delay,
                line: e.line,
            }
        }))
    }
}

/// How much of the log reading holds for re-ordering at first, when
/// `reorder` is longer (see [`read`]).
const HOLD: u64 = NS;

/// Reads the log at `data` once into a recording; an error names the
/// field of the `[[traffic]]` to fix (`path`, or `source` for the field it
/// splits by).
///
/// Holding `reorder`'s worth of lines for re-ordering (a minute of a busy
/// log is hundreds of thousands) costs memory and time, and most logs are
/// out of order by far less. So the log is read holding [`HOLD`], more
/// once a line comes later than that (see [`Pipeline::holding`]); the
/// few such lines are merged into the recording at the end, in the order
/// holding all of `reorder` gives. The recording is the same as holding
/// all of it gives, and so is an error: in the rare case where holding
/// less may differ (see [`Pipeline::error_is_exact`], or a late line
/// moving the time base so far that a request becomes too late to
/// replay), the log is read again holding all of `reorder`.
fn read(
    data: &TraceData,
    format: &Arc<Format>,
    options: &LogOptions,
    split: Option<Split>,
) -> Result<Recording, (&'static str, String)> {
    read_first_holding(data, format, options, split, HOLD)
}

/// [`read`], holding `hold` at first.
fn read_first_holding(
    data: &TraceData,
    format: &Arc<Format>,
    options: &LogOptions,
    split: Option<Split>,
    hold: u64,
) -> Result<Recording, (&'static str, String)> {
    let exact = |(_, key, e)| (key, e);
    match read_holding(data, format, options, split.clone(), hold) {
        Err((false, ..)) => read_holding(data, format, options, split, options.reorder.0),
        read => read,
    }
    .map_err(exact)
}

/// [`read`], holding `hold` of the log at first; an error says whether
/// it is the one holding all of `reorder` gives.
///
/// With two threads or more (rayon's count, as everywhere), the log's
/// lines are read and parsed on other threads while they are put in
/// replay order and recorded on this one: with more than two, a plain
/// log of long lines in pieces parsed side by side, one parser a thread
/// up to [`pieces::MOST_PARSERS`] (see [`pieces`]); a gzip log on one
/// thread of its own, which reads, parses and interns its lines in line
/// order as here; any other by one thread that deals it out in pieces,
/// parsing most and leaving this one a piece to parse whenever it has
/// room ([`pieces::deal`]: on the 2-core reference machine, the nginx
/// bench log loaded in 0.94 of the time one thread of its own took,
/// Envoy's in 0.76, the JSON lines' in 0.72, and nginx's combined format
/// in 0.82 of the time pieces of two parsers took; medians of 11–21
/// rounds in turn). Each way the keys get the ids reading here gives
/// them, and the recording is the same. Where that meets an error, the
/// log is read again on this thread alone, which gives the error and its
/// message (with the line's text, which the reading threads do not hand
/// on); errors end a read, so this costs a second read only of a log
/// that is refused.
fn read_holding(
    data: &TraceData,
    format: &Arc<Format>,
    options: &LogOptions,
    split: Option<Split>,
    hold: u64,
) -> Result<Recording, Failure> {
    if rayon::current_num_threads() > 1 {
        if let Ok(log) = pieces::Opened::new(data, pieces::PIECE) {
            let read = Read::new(format, options, split.clone(), hold);
            let threaded = match (log.is_gzip(), log.worth_pieces()) {
                // A gzip log keeps a third thread busy, inflating it:
                // the thread that orders its lines sleeps at each wait,
                // leaving it the core (nginx's combined format gzipped
                // took 0.232 s with that thread awake, against 0.228
                // before, medians of 21 rounds).
                (true, _) => {
                    let lines = LineReader::new(log.into_lines(), format, options);
                    read.on_thread(lines)
                }
                (false, true) if rayon::current_num_threads() > 2 => {
                    let parsers = rayon::current_num_threads().min(pieces::MOST_PARSERS);
                    read.in_pieces(log, parsers)
                }
                (false, _) => read.dealt(log, &pieces::room),
            };
            if let Some(recording) = threaded {
                return recording;
            }
        }
    }
    let (read, lines) = Read::start(data, format, options, split, hold)?;
    read.here(lines)
}

/// Why a read failed: whether it is the error holding all of `reorder`
/// gives, the field to blame and the message.
type Failure = (bool, &'static str, String);

/// A read of a log under way ([`read_holding`]): its keys and its
/// recording so far.
struct Read<'a> {
    format: &'a Arc<Format>,
    options: &'a LogOptions,
    hold: u64,
    /// Read at every line, and written at each new key, by the thread
    /// that reads the lines, if one does, while this one writes the
    /// recording: on cache lines of its own (beside the recording's,
    /// `validate` of the nginx bench log took 0.108 s wall, median of 7
    /// rounds both cores, against 0.087).
    keys: CachePadded<LogKeys>,
    recording: RecordingBuilder,
}

impl<'a> Read<'a> {
    /// The log opened, and its lines' reader.
    fn start(
        data: &TraceData,
        format: &'a Arc<Format>,
        options: &'a LogOptions,
        split: Option<Split>,
        hold: u64,
    ) -> Result<(Read<'a>, LineReader), Failure> {
        let lines = data
            .open()
            .and_then(Lines::new)
            .map_err(|e| (true, "path", format!("cannot be read: {e}")))?;
        let read = Read::new(format, options, split, hold);
        Ok((read, LineReader::new(lines, format, options)))
    }

    /// A read of a log, none of it read yet.
    fn new(
        format: &'a Arc<Format>,
        options: &'a LogOptions,
        split: Option<Split>,
        hold: u64,
    ) -> Read<'a> {
        Read {
            format,
            options,
            hold,
            keys: CachePadded::new(LogKeys::new(split)),
            // Marked for a merge, if lines may come late.
            recording: match hold < options.reorder.0 {
                true => RecordingBuilder::marked(),
                false => RecordingBuilder::default(),
            },
        }
    }

    /// The log read on this thread alone.
    fn here(mut self, lines: LineReader) -> Result<Recording, Failure> {
        let mut p = Pipeline::here(lines, self.options).holding(self.hold);
        let read = drain(&mut p, &mut *self.keys, &mut self.recording);
        self.finish(p, read)
    }

    /// The log's lines read on a thread of their own (see
    /// [`read_holding`]); `None` where either thread met an error, or the
    /// thread could not be started.
    fn on_thread(mut self, lines: LineReader) -> Option<Result<Recording, Failure>> {
        let stop = pipeline::Stop::default();
        let (read, p) = std::thread::scope(|s| {
            let (send, batches) = std::sync::mpsc::sync_channel(pipeline::BATCHES_AHEAD);
            let (back, taken) = std::sync::mpsc::sync_channel(pipeline::BATCHES_AHEAD + 2);
            let (keys, stopped) = (&mut *self.keys, &stop);
            let thread = std::thread::Builder::new()
                .name("log parser".to_string())
                .spawn_scoped(s, move || lines.feed(keys, &send, &taken, stopped))
                .ok()?;
            let mut p = Pipeline::fed(batches, back, self.options).holding(self.hold);
            // (The keys are interned on the reading thread.)
            let read = drain_interned(&mut p, &mut self.recording);
            stop.set();
            p.stop();
            thread.join().ok()?;
            read.is_ok().then_some((read, p))
        })?;
        Some(self.finish(p, read))
    }

    /// The log read in pieces, parsed side by side by `n` threads (see
    /// [`pieces`]); `None` where any thread met an error, or could not be
    /// started.
    fn in_pieces(mut self, log: pieces::Opened, n: usize) -> Option<Result<Recording, Failure>> {
        use std::sync::mpsc::sync_channel;
        let stop = pipeline::Stop::default();
        // The log's keys, which the merge interns; each parser has its own.
        let keys = LogKeys::new(self.keys.split.clone());
        let (read, p) = std::thread::scope(|s| {
            let stop = &stop;
            let (spare, spares) = sync_channel(2 * n + 2);
            let (mut to_parsers, mut parsed, mut backs) = (Vec::new(), Vec::new(), Vec::new());
            let mut threads = Vec::new();
            for _ in 0..n {
                let (to, pieces) = sync_channel(1);
                // A parser fills one batch while two wait for the merge.
                let (out, from) = sync_channel(2);
                let (back, taken) = sync_channel(2);
                let mut reader =
                    LineReader::new(Lines::over(Vec::new()), self.format, self.options);
                let mut keys = LogKeys::new(self.keys.split.clone());
                let spare = spare.clone();
                let parser = move || {
                    pieces::parse(&mut reader, &mut keys, &pieces, &out, &taken, &spare, stop)
                };
                let thread = std::thread::Builder::new()
                    .name("log parser".to_string())
                    .spawn_scoped(s, parser);
                to_parsers.push(to);
                parsed.push(from);
                backs.push(back);
                threads.push(thread);
            }
            drop(spare);
            let splitter = move || pieces::split(log, &to_parsers, &spares, stop);
            let splitter = std::thread::Builder::new()
                .name("log splitter".to_string())
                .spawn_scoped(s, splitter);
            threads.push(splitter);
            let started = threads.iter().all(|t| t.is_ok());
            let mut p = Pipeline::merged(merge::Merge::new(parsed, backs, keys), self.options)
                .holding(self.hold);
            let read = match started {
                // (The keys are interned by the merge.)
                true => drain_interned(&mut p, &mut self.recording),
                false => Err(said::FAILED.to_string()),
            };
            stop.set();
            let keys = p.take_keys();
            // Every thread joined, even after one that panicked (`all`
            // would stop there).
            let joins: Vec<bool> = threads
                .into_iter()
                .flatten()
                .map(|t| t.join().is_ok())
                .collect();
            let joined = joins.iter().all(|&ok| ok);
            (read.is_ok() && joined).then_some((read, p, keys?))
        })
        .map(|(read, p, keys)| {
            *self.keys = keys;
            (read, p)
        })?;
        Some(self.finish(p, read))
    }

    /// The log read in pieces by one thread of its own, which parses
    /// those it does not leave this one to parse (`raw`: see
    /// [`pieces::deal`]); `None` where either thread met an error, or the
    /// thread could not be started.
    fn dealt(
        mut self,
        log: pieces::Opened,
        raw: &pieces::Raw,
    ) -> Option<Result<Recording, Failure>> {
        use std::sync::mpsc::sync_channel;
        let stop = pipeline::Stop::default();
        let new_keys = || LogKeys::new(self.keys.split.clone());
        let new_reader = || LineReader::new(Lines::over(Vec::new()), self.format, self.options);
        // The log's keys, which the merge interns; the dealing thread has
        // its own.
        let log_keys = new_keys();
        let (read, p) = std::thread::scope(|s| {
            let stop = &stop;
            // Room for every buffer and batch under way: those sent, the
            // one held here, and the one being filled.
            let (spare, spares) = sync_channel(pieces::DEALT_AHEAD + 2);
            let (out, dealt) = sync_channel(pieces::DEALT_AHEAD);
            let (back, taken) = sync_channel(pieces::DEALT_AHEAD + 2);
            let queued = Arc::new(CachePadded::new(AtomicUsize::new(0)));
            let (mut reader, mut keys) = (new_reader(), new_keys());
            let (queue, to_spare) = (Arc::clone(&queued), spare.clone());
            let dealer = move || {
                let spares = (&spare, &spares);
                let queue = (&**queue, raw);
                pieces::deal(
                    log,
                    &mut reader,
                    &mut keys,
                    &out,
                    &taken,
                    spares,
                    queue,
                    stop,
                )
            };
            let thread = std::thread::Builder::new()
                .name("log parser".to_string())
                .spawn_scoped(s, dealer)
                .ok()?;
            let here = pieces::Here::new(dealt, (back, to_spare), queued, new_reader());
            let mut p = Pipeline::merged(
                merge::Merge::from(Box::new(here), 1, log_keys),
                self.options,
            )
            .holding(self.hold);
            // (The keys are interned by the merge.)
            let read = drain_interned(&mut p, &mut self.recording);
            stop.set();
            let keys = p.take_keys();
            let joined = thread.join().is_ok();
            (read.is_ok() && joined).then_some((read, p, keys?))
        })
        .map(|(read, p, keys)| {
            *self.keys = keys;
            (read, p)
        })?;
        Some(self.finish(p, read))
    }

    /// The recording `p` read (`read`: how many requests carried a
    /// verdict), or why there is none.
    fn finish(self, mut p: Pipeline, read: Result<u64, String>) -> Result<Recording, Failure> {
        let Read {
            format,
            options,
            keys,
            mut recording,
            ..
        } = self;
        let mut verdicts = match read {
            Ok(verdicts) => verdicts,
            Err(e) if keys.split_failed => return Err((p.error_is_exact(), "source", e)),
            Err(e) => return Err((p.error_is_exact(), "path", e)),
        };
        let late = p.take_late();
        let mut start = p.start();
        if let (Some(first), Some(base)) = (late.first(), start) {
            // Late lines (see `Pipeline::holding`), merged in; the earliest
            // arrival of all, a ghost's too, is the time base.
            let earliest = base.min(first.arrival);
            let entry = |l: &Pending| l.request(Nanos(l.arrival - earliest)).entry();
            let replayed: Vec<Entry> = late.iter().filter(|l| !l.ghost).map(entry).collect();
            verdicts += replayed.iter().filter(|e| e.verdict != 0).count() as u64;
            let order = |e: &Entry| {
                let rank = Verdict::rank(Verdict::of_code(e.verdict));
                (e.time, rank, e.delay, e.line)
            };
            // (Late ghosts that arrive after the base change nothing.)
            if earliest < base || !replayed.is_empty() {
                recording = recording.merge(base - earliest, &replayed, |l, e| order(l) < order(e));
            }
            if recording.last().0 > MAX_NANOS {
                return Err((false, "path", String::new()));
            }
            start = Some(earliest);
        }
        let LogKeys {
            keys,
            split,
            valued,
            ..
        } = keys.into_inner();
        // A JSON line may lack any field, so a misnamed one passes every
        // line; the variables of nginx and Envoy formats were checked.
        if let (Some(split), 0, Format::Jsonl(_)) = (&split, valued, &**format) {
            return Err((
                true,
                "source",
                format!(
                    "has no line with a value of {} to split by — is it the field's name?",
                    quoted(&split.field)
                ),
            ));
        }
        let path = |e: String| (true, "path", e);
        // A location none of the log's lines went to is a location that had no
        // traffic that day (its limiters see no request; `run` says so), as an
        // import of a config with an idle location gives: not an error. Bad
        // lines skipped (`on_bad_line = "skip"`) do not change that — which
        // location a line that could not be read was in is not known — and the
        // warning counts them.
        let idle_location = options.location.is_some()
            && p.filtered() > 0
            && p.unselected() == 0
            && p.empty_key() == 0;
        if recording.rows() == 0 && !idle_location {
            let inside = match &options.location {
                Some(l) if p.filtered() > 0 => format!(" inside location {:?}", l.shown()),
                _ => String::new(),
            };
            return Err(path(if p.unselected() > 0 {
                format!(
                    "has no line{inside} whose {} ({} lines are not)",
                    options
                        .select
                        .as_ref()
                        .map(Select::shown)
                        .unwrap_or_default(),
                    p.unselected()
                )
            } else if p.empty_key() > 0 {
                format!(
                    "has no line{inside} whose {} is set ({} lines have it empty)",
                    format.client_field(),
                    p.empty_key()
                )
            } else if p.filtered() > 0 {
                format!("has no line{inside}")
            } else {
                "has no requests".to_string()
            }));
        }
        let counts = Counts {
            skipped: p.skipped(),
            reordered: p.reordered(),
            filtered: p.filtered(),
            unselected: p.unselected(),
            empty_key: p.empty_key(),
            with_verdict: verdicts,
        };
        let mut recording = recording.finish(keys, split, counts);
        recording.start = start;
        Ok(recording)
    }
}

/// Takes `p`'s requests into `recording`, interning their keys with
/// `intern` (if `p` reads its lines here); how many carried a verdict.
fn drain<I: Interner + ?Sized>(
    p: &mut Pipeline,
    intern: &mut I,
    recording: &mut RecordingBuilder,
) -> Result<u64, String> {
    let mut verdicts = 0;
    while let Some(r) = p.next(intern)? {
        verdicts += r.verdict.is_some() as u64;
        recording.push(&r.entry());
    }
    Ok(verdicts)
}

/// [`drain`] of a pipeline whose keys are interned where its lines are
/// read (another thread, or its merge), not here.
fn drain_interned(p: &mut Pipeline, recording: &mut RecordingBuilder) -> Result<u64, String> {
    drain(
        p,
        &mut |_: &[u8], _: &[u8], _: &[u8]| Ok((0, 0, 0)),
        recording,
    )
}

/// The first line of the log at `path` that is not blank, and its number
/// (`None` for a log of blank lines only): what `import --trace` reads
/// with the log's format before it writes a scenario that replays it.
pub(crate) fn first_line(path: &std::path::Path) -> Result<Option<(u64, Vec<u8>)>, String> {
    let mut lines = TraceData::File(path.to_path_buf())
        .open()
        .and_then(Lines::new)
        .map_err(|e| e.to_string())?;
    while let Some((n, line)) = lines.next()? {
        if !pipeline::blank(line) {
            return Ok(Some((n, line.to_vec())));
        }
    }
    Ok(None)
}

/// A log's keys as its lines are read: its clients and addresses, and
/// the sources it splits into.
struct LogKeys {
    keys: RecordedKeys,
    split: Option<Split>,
    /// Whether a failure is the split's (too many values)…
    split_failed: bool,
    /// …and how many replayed lines had a value to split by.
    valued: u64,
}

impl LogKeys {
    fn new(split: Option<Split>) -> LogKeys {
        LogKeys {
            keys: RecordedKeys::default(),
            split,
            split_failed: false,
            valued: 0,
        }
    }
}

impl Interner for LogKeys {
    #[inline(always)]
    fn intern(
        &mut self,
        c: &[u8],
        i: &[u8],
        s: &[u8],
        hint: Option<u64>,
    ) -> Result<(u32, u32, u32), InternError> {
        let not_utf8 = |_| InternError::NotUtf8;
        // Every key is checked before any is interned: a line that is not
        // UTF-8 adds none.
        let known = match self.split.as_ref() {
            Some(split) => split.get(s),
            None => Some(0),
        };
        if known.is_none() {
            std::str::from_utf8(s).map_err(not_utf8)?;
        }
        let hash = hint.unwrap_or_else(|| self.keys.hash(c));
        let (client, ip) = self.keys.intern_hashed(c, i, hash).map_err(not_utf8)?;
        let part = match (known, self.split.as_mut()) {
            (Some(part), _) => part,
            (None, None) => 0,
            (None, Some(split)) => {
                let s = std::str::from_utf8(s).map_err(not_utf8)?;
                split.intern(s).map_err(|e| {
                    self.split_failed = true;
                    InternError::Refused(e)
                })?
            }
        };
        self.valued += (self.split.is_some() && !s.is_empty()) as u64;
        Ok((client, ip, part))
    }

    fn prefetch(&self, client: &[u8], ip: &[u8]) -> Option<u64> {
        Some(self.keys.prefetch(client, ip))
    }
}

/// `only = { "$var" = [values] }` or `except = { ... }` (nginx logs only):
/// the lines a source replays by one variable's value.
fn parse_select(f: &mut Fields, fmt: &mut Format) -> Result<Option<Select>, InputError> {
    let only = f.peek("only").cloned();
    let except = f.peek("except").cloned();
    let (key, value, except) = match (only, except) {
        (None, None) => return Ok(None),
        (Some(o), None) => ("only", o, false),
        (None, Some(e)) => ("except", e, true),
        (Some(_), Some(e)) => {
            return Err(f.error("except", &e, "give only or except, not both"));
        }
    };
    let table = f.opt_table(key)?.expect("peeked");
    let expected = "expected one nginx variable of log_format and its values, e.g. { \"$http_x_plan\" = [\"free\"] }";
    let [(variable, values)] = table.iter().collect::<Vec<_>>()[..] else {
        return Err(f.error(key, &value, expected));
    };
    let values: Option<Vec<String>> = match values {
        toml::Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().map(str::to_ascii_lowercase))
            .collect(),
        _ => None,
    };
    let Some(values) = values.filter(|v| !v.is_empty()) else {
        return Err(f.error(key, &value, expected));
    };
    match fmt {
        Format::Nginx(n) => n
            .select_by(variable)
            .map_err(|e| InputError::new(format!("{}: {e}", f.at(key))))?,
        _ => {
            return Err(f.error(
                key,
                &value,
                "applies to nginx logs only (it picks lines as an nginx map does)",
            ))
        }
    }
    Ok(Some(Select {
        variable: variable.clone(),
        values,
        except,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A recording's requests, rows, last arrival, time base, counts,
    /// key counts and sources, to compare…
    type Compared = (
        Vec<Entry>,
        u64,
        Nanos,
        Option<u64>,
        Counts,
        (usize, usize),
        Vec<String>,
    );

    /// …and what a read gives.
    type Read = Result<Compared, (&'static str, String)>;

    /// `log` read holding `hold` at first (all of `reorder`: `None`).
    fn read_log(
        log: &[u8],
        format: &Arc<Format>,
        options: &LogOptions,
        split: bool,
        hold: Option<u64>,
    ) -> Read {
        let data = TraceData::Embedded(Box::leak(log.to_vec().into_boxed_slice()));
        let split = split.then(|| Split::new("$http_x_src", "web"));
        let r = match hold {
            Some(hold) => read_first_holding(&data, format, options, split, hold),
            None => read_holding(&data, format, options, split, options.reorder.0).map_err(
                |(exact, key, e)| {
                    assert!(exact, "{e}");
                    (key, e)
                },
            ),
        }?;
        Ok(compared(r))
    }

    fn compared(r: Recording) -> Compared {
        let r = Arc::new(r);
        (
            r.replay().collect(),
            r.rows,
            r.last,
            r.start,
            r.counts,
            r.key_counts(),
            r.split
                .as_ref()
                .map(|s| s.names().to_vec())
                .unwrap_or_default(),
        )
    }

    fn nginx(whole_seconds: bool, split: bool) -> Arc<Format> {
        let time = if whole_seconds {
            "$time_iso8601"
        } else {
            "$msec"
        };
        let mut f = nginx::NginxFormat::new(
            &format!("{time} $request_time $http_x_k $remote_addr \"$request\" $limit_req_status $http_x_src"),
            None,
            Some("$http_x_k"),
            Some("$remote_addr"),
        )
        .unwrap();
        if split {
            f.split_by("$http_x_src").unwrap();
        }
        Arc::new(Format::Nginx(f))
    }

    /// A line logged at `end_ms` (ms since 1970) of a request that took
    /// `took_ms`.
    fn line(whole_seconds: bool, end_ms: u64, took_ms: u64, rest: &str) -> String {
        let time = if whole_seconds {
            let s = end_ms / 1000;
            let (days, s) = (s / 86_400, s % 86_400);
            // 2026-11-30 is day 20 787 since 1970.
            let day = days.checked_sub(20_787).expect("a day from 2026-11-30");
            format!(
                "2026-{}T{:02}:{:02}:{:02}+00:00",
                if day == 0 {
                    "11-30".into()
                } else {
                    format!("12-{day:02}")
                },
                s / 3600,
                s / 60 % 60,
                s % 60
            )
        } else {
            format!("{}.{:03}", end_ms / 1000, end_ms % 1000)
        };
        format!("{time} {}.{:03} {rest}\n", took_ms / 1000, took_ms % 1000)
    }

    fn options(reorder: u64, subsecond: Option<Subsecond>, skip_bad: bool) -> LogOptions {
        LogOptions {
            reorder: Nanos(reorder),
            subsecond,
            skip_bad,
            location: Location::parse("/a"),
            select: None,
        }
    }

    // A request slower than the hold: its line comes after lines of
    // requests that arrived after it had been handed on. It is merged in
    // where holding all of `reorder` puts it (before a delayed request of
    // the same arrival), and the earliest arrival, a ghost's (another
    // location's), is the time base.
    #[test]
    fn a_line_later_than_the_hold_is_merged_in_where_the_window_puts_it() {
        let t = 1_796_085_720_000;
        let mut log = String::new();
        log += &line(false, t, 0, "k1 10.0.0.1 \"GET /a HTTP/1.1\" PASSED -");
        log += &line(
            false,
            t + 700,
            200,
            "k2 10.0.0.1 \"GET /a HTTP/1.1\" DELAYED -",
        );
        log += &line(
            false,
            t + 3000,
            0,
            "k3 10.0.0.2 \"GET /a HTTP/1.1\" REJECTED -",
        );
        // Arrived at t - 1 s (another location: a ghost) and at t + 500.
        log += &line(
            false,
            t + 4000,
            5000,
            "k4 10.0.0.2 \"GET /b HTTP/1.1\" PASSED -",
        );
        log += &line(
            false,
            t + 4000,
            3500,
            "k4 10.0.0.2 \"GET /a HTTP/1.1\" PASSED -",
        );
        let format = nginx(false, false);
        let options = options(60 * NS, None, false);
        let exact = read_log(log.as_bytes(), &format, &options, false, None).unwrap();
        let ms = 1_000_000;
        let got: Vec<(u64, u64, u8, u64)> = exact
            .0
            .iter()
            .map(|e| (e.line, e.time.0, e.verdict, e.delay))
            .collect();
        assert_eq!(
            got,
            [
                (1, 1000 * ms, 1, 0),
                (5, 1500 * ms, 1, 0),
                (2, 1500 * ms, 2, 200 * ms),
                (3, 4000 * ms, 3, 0)
            ]
        );
        assert_eq!(exact.3, Some((t - 1000) * ms));
        let counts = exact.4;
        assert_eq!(
            (counts.with_verdict, counts.reordered, counts.filtered),
            (4, 2, 1)
        );
        // Holding 1 s, lines 1 and 2 are handed on before lines 4 and 5
        // are read.
        let lines = Lines::new(Box::new(std::io::Cursor::new(log.clone().into_bytes()))).unwrap();
        let mut p = Pipeline::new(lines, &format, &options).holding(NS);
        let mut keys = |_: &[u8], _: &[u8], _: &[u8]| Ok((0, 0, 0));
        let mut out = Vec::new();
        while let Some(r) = p.next(&mut keys).unwrap() {
            out.push(r.line);
        }
        assert_eq!(out, [1, 2, 3]);
        let late: Vec<u64> = p.take_late().iter().map(|l| l.line).collect();
        assert_eq!(late, [4, 5]);
        for hold in [0, 1, NS, 2 * NS] {
            let held = read_log(log.as_bytes(), &format, &options, false, Some(hold));
            assert_eq!(held, Ok(exact.clone()), "{hold}");
        }
    }

    // A log with no line in its location, where a late ghost moves the
    // time base back: no request, and the base the earliest arrival.
    #[test]
    fn a_late_ghost_of_an_idle_location_moves_only_the_time_base() {
        let t = 1_796_085_720_000;
        let b = |end: u64, took: u64| line(false, end, took, "k1 10.0.0.1 \"GET /b HTTP/1.1\" - -");
        let log = b(t + 10_000, 0) + &b(t + 11_500, 0) + &b(t + 12_000, 5_000);
        let format = nginx(false, false);
        let options = options(60 * NS, None, false);
        let exact = read_log(log.as_bytes(), &format, &options, false, None).unwrap();
        assert_eq!(
            (exact.1, exact.2, exact.3),
            (0, Nanos(0), Some((t + 7_000) * 1_000_000))
        );
        assert_eq!(exact.4.filtered, 3);
        assert_eq!(
            read_log(log.as_bytes(), &format, &options, false, Some(NS)),
            Ok(exact)
        );
    }

    // Errors holding less that might not be the ones holding all of
    // `reorder` gives: the log is read again, holding all of it.
    #[test]
    fn errors_holding_less_that_may_differ_read_the_log_again() {
        let year = 365 * 86_400_000;
        let t = 1_796_085_720_000;
        let a = |end: u64, took: u64| line(false, end, took, "k1 10.0.0.1 \"GET /a HTTP/1.1\" - -");
        let format = nginx(false, false);
        let options = options(100 * year * 1_000_000, None, false);
        let read = |log: &str, hold| read_log(log.as_bytes(), &format, &options, false, hold);
        // A late line 37 years before the first: holding all of `reorder`,
        // it is the time base, and line 1 too late.
        let log = a(t, 0) + &a(t + 2000, 0) + &a(t + 3000, t + 3000 - 20 * year);
        let e = read(&log, None).unwrap_err().1;
        assert!(e.starts_with("line 1: arrives more than"), "{e}");
        assert_eq!(read(&log, Some(NS)), Err(("path", e)));
        // Holding less, line 2 is handed on too late after line 1; holding
        // all, nothing is handed on before line 4, a bad line.
        let log = a(20 * year, 0) + &a(t, 0) + &a(t + 2000, 0) + "garbage\n";
        let e = read(&log, None).unwrap_err().1;
        assert!(e.starts_with("line 4: "), "{e}");
        assert_eq!(read(&log, Some(NS)), Err(("path", e)));
    }

    /// Reads `log` on a thread of its own, in pieces parsed side by side
    /// (three parsers, and dealt: the ordering thread parsing no piece,
    /// every other one, as it has room, and every one; pieces of a line
    /// or so, and of ten) and here, and asserts they agree (see the
    /// property test below): the same recording or error, or the threads
    /// say they met an error and reading here gives one; and
    /// `read_holding` on two threads gives what reading here gives. What
    /// reading here gave.
    fn same_both_ways(
        log: &[u8],
        format: &Arc<Format>,
        options: &LogOptions,
        split: Option<Split>,
        hold: u64,
    ) -> Result<Compared, Failure> {
        let data = TraceData::Embedded(Box::leak(log.to_vec().into_boxed_slice()));
        let start = || super::Read::start(&data, format, options, split.clone(), hold);
        let here = start()
            .and_then(|(read, lines)| read.here(lines))
            .map(compared);
        match start().map(|(read, lines)| read.on_thread(lines)) {
            Ok(Some(there)) => assert_eq!(there.map(compared), here),
            Ok(None) => assert!(
                here.is_err(),
                "the thread failed where reading here did not"
            ),
            Err(e) => assert_eq!(Err(e), here),
        }
        let ways: [&dyn Fn(super::Read, pieces::Opened) -> _; 5] = [
            &|read, log| read.in_pieces(log, 3),
            &|read, log| read.dealt(log, &|_, _| false),
            &|read, log| read.dealt(log, &|k, _| k % 2 == 1),
            &|read, log| read.dealt(log, &pieces::room),
            &|read, log| read.dealt(log, &|_, _| true),
        ];
        for (way, piece) in ways.iter().flat_map(|w| [(w, 64), (w, 700)]) {
            let read = super::Read::new(format, options, split.clone(), hold);
            match pieces::Opened::new(&data, piece).map(|log| way(read, log)) {
                Ok(Some(pieces)) => assert_eq!(pieces.map(compared), here),
                Ok(None) => assert!(
                    here.is_err(),
                    "the pieces failed where reading here did not"
                ),
                Err(e) => panic!("an embedded log opens: {e}"),
            }
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let held = pool.install(|| read_holding(&data, format, options, split.clone(), hold));
        assert_eq!(held.map(compared), here);
        here
    }

    // Beside the property test: a log of blank lines only, one that
    // ends with a full batch, a split past its most sources, lines over
    // the cap, keys that are not UTF-8, Envoy and JSON lines.
    #[test]
    fn a_log_read_on_a_thread_of_its_own_in_every_shape_gives_what_one_thread_gives() {
        let t = 1_796_085_720_000;
        let a = |i: u64| {
            line(
                false,
                t + i,
                i % 7,
                &format!("k{} 10.0.0.1 \"GET /a HTTP/1.1\" - s{}", i % 5, i % 3),
            )
        };
        let nginx_plain = nginx(false, false);
        let strict = options(60 * NS, None, false);
        let skipping = options(60 * NS, None, true);
        // Blank lines only: no requests, both ways.
        let e = same_both_ways(b"\n \n\t\n", &nginx_plain, &strict, None, NS).unwrap_err();
        assert!(e.2.contains("has no requests"), "{e:?}");
        // Three full batches of five lines, and one line more.
        for n in [15, 16] {
            let log: String = (0..n).map(a).collect();
            let r = same_both_ways(log.as_bytes(), &nginx_plain, &strict, None, NS).unwrap();
            assert_eq!(r.1, n);
        }
        // A split into more sources than a trace may have: the thread
        // fails, reading here gives the split's error.
        let many: String = (0..=crate::split::MAX_PARTS as u64)
            .map(|i| {
                line(
                    false,
                    t + i,
                    0,
                    &format!("k1 10.0.0.1 \"GET /a HTTP/1.1\" - v{i}"),
                )
            })
            .collect();
        let split = Some(Split::new("$http_x_src", "web"));
        let e =
            same_both_ways(many.as_bytes(), &nginx(false, true), &strict, split, NS).unwrap_err();
        assert_eq!((e.1, &e.2[..14]), ("source", "line 1001: $ht"));
        // A line over the cap, a key that is not UTF-8.
        let mut long = (0..40).map(a).collect::<String>().into_bytes();
        long.extend(vec![b'x'; MAX_LINE_BYTES + 1]);
        long.push(b'\n');
        let e = same_both_ways(&long, &nginx_plain, &skipping, None, NS).unwrap_err();
        assert!(e.2.starts_with("line 41: longer than"), "{e:?}");
        let mut bad = (0..40).map(a).collect::<String>().into_bytes();
        bad.extend(a(40).replace("k0", "k\u{1}").into_bytes());
        let at = bad.iter().rposition(|&b| b == 1).unwrap();
        bad[at] = 0xff;
        bad.extend((41..60).map(a).collect::<String>().into_bytes());
        let e = same_both_ways(&bad, &nginx_plain, &strict, None, NS).unwrap_err();
        assert!(e.2.starts_with("line 41: is not valid UTF-8"), "{e:?}");
        let r = same_both_ways(&bad, &nginx_plain, &skipping, None, NS).unwrap();
        assert_eq!((r.1, r.4.skipped), (59, 1));
        // Envoy, its empty keys bad lines; JSON lines.
        let envoy = Arc::new(Format::Envoy(
            envoy::EnvoyFormat::new(
                "%START_TIME% %REQ(X-K)% %REQ(:PATH)%",
                None,
                Some("%REQ(X-K)%"),
                None,
            )
            .unwrap(),
        ));
        let log: String = (0..23)
            .map(|i| {
                format!(
                    "2026-12-01T00:42:{:02}.{:03}Z {} /a\n",
                    i / 10,
                    i * 37 % 1000,
                    if i % 6 == 5 {
                        "-".into()
                    } else {
                        format!("k{}", i % 4)
                    }
                )
            })
            .collect();
        let r = same_both_ways(log.as_bytes(), &envoy, &skipping, None, NS).unwrap();
        assert_eq!((r.1, r.4.skipped), (20, 3));
        let jsonl = Arc::new(Format::Jsonl(jsonl::JsonlFormat {
            time: "ts".into(),
            unit: jsonl::Unit::Ms,
            client: "user".into(),
            ip: None,
            cost: Some("weight".into()),
            source: None,
        }));
        let log: String = (0..23)
            .map(|i| {
                format!(
                    "{{\"ts\": {}, \"user\": \"u{}\", \"weight\": {}}}\n",
                    t + i * 3 % 11,
                    i % 4,
                    1 + i % 2
                )
            })
            .collect();
        let r = same_both_ways(log.as_bytes(), &jsonl, &strict, None, NS).unwrap();
        assert_eq!(r.1, 23);
    }

    /// One line: its time, its duration and its request, or a bad line.
    #[derive(Debug, Clone)]
    enum Spec {
        Request {
            step_ms: u64,
            took_ms: u64,
            key: u8,
            other_location: bool,
            verdict: u8,
            src: u8,
        },
        Garbage,
        Blank,
    }

    /// The log `specs` write (whole-second stamps if `whole_seconds`).
    fn log_of(specs: &[Spec], whole_seconds: bool) -> String {
        let mut log = String::new();
        let mut end = 1_796_085_720_000u64;
        for s in specs {
            match *s {
                Spec::Request {
                    step_ms,
                    took_ms,
                    key,
                    other_location,
                    verdict,
                    src,
                } => {
                    end += step_ms;
                    let key = match key {
                        0 => "-".to_string(),
                        _ => format!("k{key}"),
                    };
                    let path = if other_location { "/b" } else { "/a" };
                    let verdict = ["-", "PASSED", "DELAYED", "REJECTED"][verdict as usize];
                    let src = ["-", "s1", "s2"][src as usize];
                    let rest = format!(
                        "{key} 10.0.0.{} \"GET {path} HTTP/1.1\" {verdict} {src}",
                        took_ms % 3
                    );
                    log += &line(whole_seconds, end, took_ms, &rest);
                }
                Spec::Garbage => log += "garbage\n",
                Spec::Blank => log += "\n",
            }
        }
        log
    }

    fn spec() -> impl Strategy<Value = Spec> {
        prop_oneof![
            20 => (0u64..400, prop_oneof![8 => 0u64..300, 2 => 0u64..5_000, 1 => 0u64..90_000], 0u8..12, prop::bool::weighted(0.1), 0u8..4, 0u8..3)
                .prop_map(|(step_ms, took_ms, key, other_location, verdict, src)| Spec::Request { step_ms, took_ms, key, other_location, verdict, src }),
            1 => Just(Spec::Garbage),
            1 => Just(Spec::Blank),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        // Holding less than `reorder` at first gives what holding all of
        // it gives: the same recording (requests, their order and times,
        // the time base, the counts, the keys, the sources) or the same
        // error, for logs with bad lines, ghosts (another location, an
        // empty key), verdicts, whole-second stamps and lines later than
        // any hold.
        #[test]
        fn holding_less_gives_what_holding_all_of_reorder_gives(
            specs in prop::collection::vec(spec(), 1..300),
            reorder_ms in prop_oneof![Just(0u64), Just(700), Just(3_000), Just(60_000)],
            hold_ms in prop_oneof![Just(0u64), Just(1), Just(100), Just(1_000)],
            whole in 0u8..3,
            skip_bad in any::<bool>(),
            split in any::<bool>(),
        ) {
            let subsecond = [None, Some(Subsecond::Start), Some(Subsecond::Spread)][whole as usize];
            let whole_seconds = subsecond.is_some();
            let log = log_of(&specs, whole_seconds);
            let format = nginx(whole_seconds, split);
            let options = options(reorder_ms * 1_000_000, subsecond, skip_bad);
            let exact = read_log(log.as_bytes(), &format, &options, split, None);
            prop_assert_eq!(read_log(log.as_bytes(), &format, &options, split, Some(hold_ms * 1_000_000)), exact);
        }

        // Lines read on a thread of their own (in batches of a few lines,
        // under test) give what reading them here gives: the same
        // recording, or the same error; where the thread meets an error
        // (a bad line not skipped, a line out of the reorder window), it
        // says so, reading here gives one, and `read_holding` gives it.
        // (Half the logs whose bad lines are not skipped have none.)
        #[test]
        fn lines_read_on_a_thread_of_their_own_give_what_reading_here_gives(
            specs in prop::collection::vec(spec(), 1..300),
            reorder_ms in prop_oneof![Just(0u64), Just(700), Just(60_000)],
            hold_ms in prop_oneof![Just(0u64), Just(100), Just(60_000)],
            whole in 0u8..3,
            skip_bad in any::<bool>(),
            clean in any::<bool>(),
            split in any::<bool>(),
        ) {
            let subsecond = [None, Some(Subsecond::Start), Some(Subsecond::Spread)][whole as usize];
            let specs: Vec<Spec> = specs
                .into_iter()
                .filter(|s| skip_bad || !clean || !matches!(s, Spec::Garbage))
                .collect();
            let log = log_of(&specs, subsecond.is_some());
            let format = nginx(subsecond.is_some(), split);
            let options = options(reorder_ms * 1_000_000, subsecond, skip_bad);
            let split = split.then(|| Split::new("$http_x_src", "web"));
            let _ = same_both_ways(log.as_bytes(), &format, &options, split, hold_ms * 1_000_000);
        }
    }
}
