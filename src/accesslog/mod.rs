//! Access logs as traces: replay what a gateway (nginx, Envoy) or an
//! application (JSON lines) logged, by the rules of docs/semantics.md §8.
//!
//! A `[[traffic]]` source with `pattern = "trace"` takes `format = "csv"`
//! (the default, [`crate::traffic::trace`]), `"nginx"`, `"envoy"` or
//! `"jsonl"`. Each line becomes one request:
//!
//! - **Arrival.** A gateway writes a line when it responds. When the line
//!   carries the request's duration (nginx `$request_time`), the arrival is
//!   the logged time minus the duration, so a request the gateway delayed
//!   sits where it arrived. (Envoy's `%START_TIME%` is the start already.)
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
//! - **Bad lines** are errors naming the line and quoting its first 80
//!   characters, or, with `on_bad_line = "skip"`, counted and skipped.
//! - **gzip** logs are read as they are (by their magic bytes).
//!
//! Memory: one entry per distinct key, plus the lines inside the reorder
//! window (and, with `spread`, the seconds inside it): never the whole log.

pub mod agreement;
pub mod envoy;
pub mod jsonl;
pub mod nginx;
pub mod template;
pub mod time;

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::io::{self, BufRead, BufReader, Read};
use std::sync::Arc;

use serde_json::json;

use crate::clock::{Nanos, MAX_NANOS};
use crate::error::{quoted, InputError};
use crate::input::fields::Fields;
use crate::input::Population;
use crate::input::TraceData;
use crate::traffic::{Arrival, Stream, StreamCtx};

const NS: u64 = 1_000_000_000;

/// The longest line a log may have (bytes): as for CSV traces.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

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

/// One line, parsed; strings borrow from it where they can.
#[derive(Debug, Clone)]
pub struct Parsed<'l> {
    /// The logged time, ns since the Unix epoch.
    pub stamp: u64,
    /// The request's duration to subtract from `stamp` (0 when none).
    pub duration: u64,
    pub client: Cow<'l, str>,
    pub ip: Option<Cow<'l, str>>,
    pub cost: u64,
    pub verdict: Option<Verdict>,
    /// The request path (no query), when the format has one.
    pub path: Option<&'l str>,
}

/// A log format with its field choices.
#[derive(Debug, Clone)]
pub enum Format {
    Nginx(nginx::Format),
    Envoy(envoy::Format),
    Jsonl(jsonl::Format),
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

    fn parse<'l>(&self, line: &'l str) -> Result<Parsed<'l>, String> {
        match self {
            Format::Nginx(f) => f.parse(line),
            Format::Envoy(f) => f.parse(line),
            Format::Jsonl(f) => f.parse(line),
        }
    }

    /// Stamps have whole seconds only: `subsecond` is required.
    fn coarse(&self) -> bool {
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

    fn has_path(&self) -> bool {
        match self {
            Format::Nginx(f) => f.has_path(),
            Format::Envoy(f) => f.has_path(),
            Format::Jsonl(_) => false,
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

    fn matches(&self, path: &str) -> bool {
        match self {
            Location::Exact(p) => path == p,
            Location::Prefix(p) => path.starts_with(p.as_str()),
        }
    }

    fn shown(&self) -> String {
        match self {
            Location::Exact(p) => format!("= {p}"),
            Location::Prefix(p) => p.clone(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Options {
    pub reorder: Nanos,
    pub subsecond: Option<Subsecond>,
    pub skip_bad: bool,
    pub location: Option<Location>,
}

#[derive(Debug, Default)]
struct Ids {
    clients: HashMap<Box<str>, u32>,
    ips: HashMap<Box<str>, u32>,
}

/// A validated access-log source.
#[derive(Debug, Clone)]
pub struct AccessLog {
    pub shown: String,
    data: TraceData,
    pub format: Arc<Format>,
    pub options: Options,
    ids: Arc<Ids>,
    last: Nanos,
    rows: u64,
    /// Bad lines skipped (`on_bad_line = "skip"`).
    pub skipped: u64,
    /// Lines that arrived before a line logged ahead of them: the ones the
    /// reorder window moved.
    pub reordered: u64,
    /// Lines outside `location`.
    pub filtered: u64,
    /// Lines that carried the gateway's verdict.
    pub with_verdict: u64,
}

/// One request of the log, in replay order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Arrival, relative to the earliest.
    pub time: Nanos,
    pub client: u32,
    pub ip: u32,
    pub cost: u64,
    pub verdict: Option<Verdict>,
    /// The gateway's delay (its logged duration) of a delayed request.
    pub delay: u64,
    /// 1-based line number in the log.
    pub line: u64,
}

impl AccessLog {
    /// Parses the access-log fields of a `[[traffic]]` trace source whose
    /// `format` is `format`, and reads the log once (validating every line
    /// and interning every key).
    pub fn parse(
        f: &mut Fields,
        format: &str,
        shown: &str,
        data: TraceData,
        population: &mut Population,
    ) -> Result<AccessLog, InputError> {
        let err = |f: &Fields, key: &str, e: String| InputError::new(format!("{}: {e}", f.at(key)));
        let time = f.opt_str("time")?;
        let client = f.opt_str("client")?;
        let ip = f.opt_str("ip")?;
        let fmt = match format {
            "nginx" | "envoy" => {
                let log_format = f.opt_str("log_format")?;
                let built = if format == "nginx" {
                    nginx::Format::new(log_format.unwrap_or(nginx::COMBINED), time, client, ip)
                        .map(Format::Nginx)
                } else {
                    envoy::Format::new(log_format.unwrap_or(envoy::DEFAULT), time, client, ip)
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
                Format::Jsonl(jsonl::Format {
                    time: time.unwrap_or("time").to_string(),
                    unit,
                    client: client.unwrap_or("client").to_string(),
                    ip: ip.map(str::to_string),
                    cost: Some(f.opt_str("cost")?.unwrap_or("cost").to_string()),
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
        let reorder = f.opt_duration("reorder", true)?.unwrap_or(Nanos(60 * NS));
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
        let mut log = AccessLog {
            shown: shown.to_string(),
            data,
            format: Arc::new(fmt),
            options: Options {
                reorder,
                subsecond,
                skip_bad,
                location,
            },
            ids: Arc::default(),
            last: Nanos::ZERO,
            rows: 0,
            skipped: 0,
            reordered: 0,
            filtered: 0,
            with_verdict: 0,
        };
        log.scan(population)
            .map_err(|e| InputError::new(format!("{}: {} {e}", f.at("path"), quoted(shown))))?;
        Ok(log)
    }

    fn open_lines(&self) -> io::Result<Lines> {
        Lines::new(self.data.open()?)
    }

    fn scan(&mut self, population: &mut Population) -> Result<(), String> {
        let lines = self
            .open_lines()
            .map_err(|e| format!("cannot be read: {e}"))?;
        let mut ids = Ids::default();
        let mut p = Pipeline::new(lines, &self.format, &self.options);
        let (mut rows, mut last, mut verdicts) = (0u64, Nanos::ZERO, 0u64);
        let mut intern = |c: &str, i: &str| {
            let client = match ids.clients.get(c) {
                Some(&id) => id,
                None => {
                    let id = population.client(c);
                    ids.clients.insert(c.into(), id);
                    id
                }
            };
            let ip = match ids.ips.get(i) {
                Some(&id) => id,
                None => {
                    let id = population.ip(i);
                    ids.ips.insert(i.into(), id);
                    id
                }
            };
            Some((client, ip))
        };
        while let Some(r) = p.next(&mut intern)? {
            rows += 1;
            last = r.time;
            verdicts += r.verdict.is_some() as u64;
        }
        if rows == 0 {
            return Err(if p.filtered > 0 {
                format!(
                    "has no line inside location {:?}",
                    self.options
                        .location
                        .as_ref()
                        .map(Location::shown)
                        .unwrap_or_default()
                )
            } else {
                "has no requests".to_string()
            });
        }
        self.ids = Arc::new(ids);
        self.rows = rows;
        self.last = last;
        self.skipped = p.skipped;
        self.reordered = p.reordered;
        self.filtered = p.filtered;
        self.with_verdict = verdicts;
        Ok(())
    }

    pub fn last_time(&self) -> Nanos {
        self.last
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The requests in replay order, with their verdicts and lines.
    pub fn requests(&self) -> anyhow::Result<Requests> {
        let lines = self
            .open_lines()
            .map_err(|e| anyhow::anyhow!("cannot read trace {}: {e}", self.shown))?;
        Ok(Requests {
            pipeline: Pipeline::new(lines, &self.format, &self.options),
            ids: Arc::clone(&self.ids),
            shown: self.shown.clone(),
        })
    }

    pub fn open(&self, ctx: StreamCtx) -> anyhow::Result<Box<dyn Stream>> {
        Ok(Box::new(LogStream {
            requests: self.requests()?,
            end: ctx.end,
        }))
    }

    /// For `summary.json`: what was read and how.
    pub fn echo(&self) -> serde_json::Value {
        let mut v = json!({
            "pattern": "trace",
            "path": self.shown,
            "format": self.format.name(),
            "rows": self.rows,
            "reorder": self.options.reorder.to_string(),
            "bad_lines_skipped": self.skipped,
            "lines_reordered": self.reordered,
            "lines_with_verdict": self.with_verdict,
        });
        match &*self.format {
            Format::Nginx(n) => {
                v["time"] = json!(n.time_var);
                v["log_format"] = json!(n.template.names);
            }
            Format::Envoy(e) => v["log_format"] = json!(e.template.names),
            Format::Jsonl(j) => v["time"] = json!(j.time),
        }
        if let Some(s) = self.options.subsecond {
            v["subsecond"] = json!(match s {
                Subsecond::Start =>
                    "start: whole-second stamps, each second's requests at its start",
                Subsecond::Spread =>
                    "spread: whole-second stamps, a second's k requests evenly inside it",
            });
        }
        if let Some(l) = &self.options.location {
            v["location"] = json!(l.shown());
            v["lines_outside_location"] = json!(self.filtered);
        }
        v
    }
}

/// For `summary.md`: how each access log was read (whole-second stamps
/// placed by `subsecond`, bad lines skipped), from `summary.json`.
pub fn summary_notes(dir: &std::path::Path) -> String {
    let Ok(text) = std::fs::read_to_string(dir.join(crate::rundir::SUMMARY_JSON)) else {
        return String::new();
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return String::new();
    };
    let mut out = String::new();
    let sources = v["scenario"]["traffic"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for t in sources.iter().filter(|t| t.get("format").is_some()) {
        let s = |k: &str| t[k].as_str().unwrap_or_default().to_string();
        out.push_str(&format!(
            "- `{}`: {} log `{}`, {} requests",
            s("name"),
            s("format"),
            s("path"),
            t["rows"]
        ));
        if let Some(l) = t["location"].as_str() {
            out.push_str(&format!(" in location `{l}`"));
        }
        out.push_str(&format!(", re-ordered within {}", s("reorder")));
        if let Some(n) = t["lines_reordered"].as_u64() {
            let plural = if n == 1 { "" } else { "s" };
            out.push_str(&format!(" ({n} line{plural} moved)"));
        }
        if let Some(sub) = t["subsecond"].as_str() {
            out.push_str(&format!("; subsecond {sub}"));
        }
        match t["bad_lines_skipped"].as_u64() {
            Some(0) | None => {}
            Some(n) => out.push_str(&format!("; **{n} bad lines skipped**")),
        }
        out.push_str(".\n");
    }
    if out.is_empty() {
        return out;
    }
    format!("## Access logs\n\n{out}\n")
}

/// The requests of a log in replay order (see [`AccessLog::requests`]).
pub struct Requests {
    pipeline: Pipeline,
    ids: Arc<Ids>,
    shown: String,
}

impl Requests {
    pub fn next_request(&mut self) -> anyhow::Result<Option<Request>> {
        let ids = &self.ids;
        let mut lookup = |c: &str, i: &str| Some((*ids.clients.get(c)?, *ids.ips.get(i)?));
        self.pipeline
            .next(&mut lookup)
            .map_err(|_| anyhow::anyhow!("trace {} changed since it was loaded", self.shown))
    }
}

struct LogStream {
    requests: Requests,
    end: Nanos,
}

impl Stream for LogStream {
    fn next(&mut self) -> anyhow::Result<Option<Arrival>> {
        Ok(match self.requests.next_request()? {
            Some(r) if r.time <= self.end => Some(Arrival {
                time: r.time,
                client: r.client,
                ip: r.ip,
                cost: r.cost,
            }),
            _ => None,
        })
    }
}

/// Lines of a (possibly gzip-compressed) log, each at most
/// [`MAX_LINE_BYTES`].
struct Lines {
    r: Box<dyn BufRead + Send>,
    line: u64,
    buf: Vec<u8>,
}

impl Lines {
    fn new(r: Box<dyn Read + Send>) -> io::Result<Lines> {
        let mut b = BufReader::with_capacity(1 << 16, r);
        let gz = b.fill_buf()?.starts_with(&[0x1f, 0x8b]);
        let r: Box<dyn BufRead + Send> = if gz {
            Box::new(BufReader::with_capacity(
                1 << 16,
                flate2::read::MultiGzDecoder::new(b),
            ))
        } else {
            Box::new(b)
        };
        Ok(Lines {
            r,
            line: 0,
            buf: Vec::new(),
        })
    }

    /// The next line without its ending; `Err` for a read error or a line
    /// over the cap.
    fn next(&mut self) -> Result<Option<&[u8]>, String> {
        self.buf.clear();
        self.line += 1;
        loop {
            let avail = self
                .r
                .fill_buf()
                .map_err(|e| format!("line {}: cannot be read: {e}", self.line))?;
            if avail.is_empty() {
                if self.buf.is_empty() {
                    return Ok(None);
                }
                break;
            }
            let (take, done) = match avail.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (avail.len(), false),
            };
            self.buf.extend_from_slice(&avail[..take]);
            self.r.consume(take);
            if self.buf.len() > MAX_LINE_BYTES + 1 {
                return Err(format!(
                    "line {}: longer than {MAX_LINE_BYTES} bytes, the longest line a log may have",
                    self.line
                ));
            }
            if done {
                break;
            }
        }
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        Ok(Some(&self.buf))
    }
}

/// A request waiting in the reorder window, ordered by arrival, then the
/// verdict rule, then log order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Pending {
    arrival: u64,
    rank: u8,
    delay: u64,
    seq: u64,
    /// A line outside `location`: it sets the time base (the whole log's
    /// earliest arrival, shared by every source reading the log) and is
    /// not replayed.
    ghost: bool,
    client: u32,
    ip: u32,
    cost: u64,
    verdict: Option<Verdict>,
    line: u64,
}

/// A line of a whole-second stamp waiting for its second to be complete
/// (`subsecond = "spread"`).
#[derive(Debug, Clone, Copy)]
struct InSecond {
    duration: u64,
    p: Pending,
}

/// Names a request's client and address by their ids (`None`: unknown).
type Intern<'a> = &'a mut dyn FnMut(&str, &str) -> Option<(u32, u32)>;

/// Lines → requests in replay order.
struct Pipeline {
    lines: Lines,
    format: Arc<Format>,
    options: Options,
    heap: BinaryHeap<Reverse<Pending>>,
    seconds: BTreeMap<u64, Vec<InSecond>>,
    /// Seconds below this are complete (spread).
    done_below: u64,
    max_second: u64,
    latest: Option<(u64, u64)>,
    base: Option<u64>,
    seq: u64,
    eof: bool,
    skipped: u64,
    reordered: u64,
    filtered: u64,
}

impl Pipeline {
    fn new(lines: Lines, format: &Arc<Format>, options: &Options) -> Pipeline {
        Pipeline {
            lines,
            format: Arc::clone(format),
            options: options.clone(),
            heap: BinaryHeap::new(),
            seconds: BTreeMap::new(),
            done_below: 0,
            max_second: 0,
            latest: None,
            base: None,
            seq: 0,
            eof: false,
            skipped: 0,
            reordered: 0,
            filtered: 0,
        }
    }

    /// A bad line: the error, or (skipping) a count.
    fn bad(&mut self, line: u64, why: &str, text: &str) -> Result<(), String> {
        if self.options.skip_bad {
            self.skipped += 1;
            return Ok(());
        }
        let shown = if text.is_empty() {
            String::new()
        } else {
            format!(": {}", quoted(text))
        };
        Err(format!(
            "line {line}: {why}{shown} (on_bad_line = \"skip\" skips bad lines)"
        ))
    }

    /// Puts a request with its final arrival into the reorder window.
    fn push(&mut self, p: Pending, text: &str) -> Result<(), String> {
        let reorder = self.options.reorder.0;
        if let Some((latest, at)) = self.latest {
            if p.arrival.saturating_add(reorder) < latest {
                return self.bad(
                    p.line,
                    &format!(
                        "arrives {} before line {at}'s, more than the reorder window ({}); raise `reorder`",
                        Nanos(latest - p.arrival),
                        self.options.reorder
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
        self.heap.push(Reverse(p));
        Ok(())
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
                        "",
                    )?;
                    continue;
                }
                l.p.arrival = stamp - l.duration;
                self.push(l.p, "")?;
            }
        }
        Ok(())
    }

    /// Reads one line into the window.
    fn read_one(&mut self, intern: Intern) -> Result<(), String> {
        let format = Arc::clone(&self.format);
        let bytes = match self.lines.next()? {
            None => {
                self.eof = true;
                return self.finish_seconds(true);
            }
            Some(b) => b.to_vec(),
        };
        let line_no = self.lines.line;
        let Ok(text) = std::str::from_utf8(&bytes) else {
            return self.bad(
                line_no,
                "is not valid UTF-8",
                &String::from_utf8_lossy(&bytes),
            );
        };
        if text.trim().is_empty() {
            return Ok(());
        }
        let parsed = match format.parse(text) {
            Ok(p) => p,
            Err(e) => return self.bad(line_no, &e, text),
        };
        let ghost = match (&self.options.location, parsed.path) {
            (Some(loc), Some(path)) => !loc.matches(path),
            _ => false,
        };
        let (client, ip) = if ghost {
            self.filtered += 1;
            (0, 0)
        } else {
            let ip = parsed.ip.as_deref().unwrap_or(&parsed.client);
            let Some(ids) = intern(&parsed.client, ip) else {
                return Err(format!("line {line_no}: changed since it was read"));
            };
            ids
        };
        let (rank, delay) = match parsed.verdict {
            None | Some(Verdict::Passed) => (0, 0),
            Some(Verdict::Delayed) => (1, parsed.duration),
            Some(Verdict::Rejected) => (2, 0),
        };
        let mut p = Pending {
            arrival: 0,
            rank,
            delay,
            seq: self.seq,
            ghost,
            client,
            ip,
            cost: parsed.cost,
            verdict: parsed.verdict,
            line: line_no,
        };
        self.seq += 1;
        match self.options.subsecond {
            Some(mode) => {
                let s = parsed.stamp / NS;
                if mode == Subsecond::Start {
                    if parsed.duration > s * NS {
                        return self.bad(
                            line_no,
                            "its duration is longer than its time since 1970",
                            text,
                        );
                    }
                    p.arrival = s * NS - parsed.duration;
                    return self.push(p, text);
                }
                if s < self.done_below {
                    return self.bad(
                        line_no,
                        &format!(
                            "its second comes more than the reorder window ({}) after later seconds; raise `reorder`",
                            self.options.reorder
                        ),
                        text,
                    );
                }
                self.seconds.entry(s).or_default().push(InSecond {
                    duration: parsed.duration,
                    p,
                });
                self.max_second = self.max_second.max(s);
                self.finish_seconds(false)
            }
            None => {
                if parsed.duration > parsed.stamp {
                    return self.bad(
                        line_no,
                        "its duration is longer than its time since 1970",
                        text,
                    );
                }
                p.arrival = parsed.stamp - parsed.duration;
                self.push(p, text)
            }
        }
    }

    fn next(&mut self, intern: Intern) -> Result<Option<Request>, String> {
        loop {
            if let Some(&Reverse(top)) = self.heap.peek() {
                let ready = self.eof
                    || self.latest.is_some_and(|(l, _)| {
                        top.arrival.saturating_add(self.options.reorder.0) < l
                    });
                if ready {
                    self.heap.pop();
                    let base = *self.base.get_or_insert(top.arrival);
                    if top.ghost {
                        continue;
                    }
                    let rel = top.arrival - base;
                    if rel > MAX_NANOS {
                        return Err(format!(
                            "line {}: arrives more than {} after the first request",
                            top.line,
                            Nanos(MAX_NANOS)
                        ));
                    }
                    return Ok(Some(Request {
                        time: Nanos(rel),
                        client: top.client,
                        ip: top.ip,
                        cost: top.cost,
                        verdict: top.verdict,
                        delay: top.delay,
                        line: top.line,
                    }));
                }
            }
            if self.eof {
                return Ok(None);
            }
            self.read_one(intern)?;
        }
    }
}
