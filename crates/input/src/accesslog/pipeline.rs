//! The reorder pipeline: a log's lines, read one at a time, parsed, and
//! handed on in arrival order within the `reorder` window
//! (docs/semantics.md §8), with whole-second stamps placed by `subsecond`.
//! It holds the lines inside the window, never the whole log.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::io::{self, BufRead, BufReader, Read};
use std::sync::Arc;

use super::{Format, LogOptions, Request, Subsecond, Verdict, MAX_LINE_BYTES, NS};
use crate::clock::{Nanos, MAX_NANOS};
use crate::error::quoted;

/// Lines of a (possibly gzip-compressed) log, each at most
/// [`MAX_LINE_BYTES`].
pub(super) struct Lines {
    r: Box<dyn BufRead + Send>,
    line: u64,
    buf: Vec<u8>,
}

impl Lines {
    pub(super) fn new(r: Box<dyn Read + Send>) -> io::Result<Lines> {
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
    pub(super) fn next(&mut self) -> Result<Option<&[u8]>, String> {
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
    /// A line outside `location`, or one whose key is empty (nginx): it
    /// sets the time base (the whole log's earliest arrival, shared by
    /// every source reading the log) and is not replayed.
    ghost: bool,
    client: u32,
    ip: u32,
    /// Its source's part number, when the source is split (else 0).
    part: u32,
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

/// A request's keys as ids: its client's, its address's and its source's
/// part number (from the client, the address and the `source` field's
/// value, "" when there is none); an error says why not, without the line.
pub(super) type Intern<'a> = &'a mut dyn FnMut(&str, &str, &str) -> Result<(u32, u32, u32), String>;

/// Lines → requests in replay order.
pub(super) struct Pipeline {
    lines: Lines,
    format: Arc<Format>,
    options: LogOptions,
    heap: BinaryHeap<Reverse<Pending>>,
    seconds: BTreeMap<u64, Vec<InSecond>>,
    /// Seconds below this are complete (spread).
    done_below: u64,
    max_second: u64,
    latest: Option<(u64, u64)>,
    base: Option<u64>,
    seq: u64,
    eof: bool,
    pub(super) skipped: u64,
    pub(super) reordered: u64,
    pub(super) filtered: u64,
    /// Lines `only`/`except` passed over.
    pub(super) unselected: u64,
    /// Lines not counted because their key is empty (nginx).
    pub(super) empty_key: u64,
}

impl Pipeline {
    pub(super) fn new(lines: Lines, format: &Arc<Format>, options: &LogOptions) -> Pipeline {
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
            unselected: 0,
            empty_key: 0,
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
        // docs/semantics.md §8: a line of another location is no bad line,
        // whatever its keys; it is not replayed (a ghost: it only sets the
        // time base). Then a line whose key is empty is, for nginx, a
        // request the zone does not account: a ghost too.
        let other_location = match (&self.options.location, parsed.path) {
            (Some(loc), Some(path)) => !loc.matches(path),
            _ => false,
        };
        let unselected = !other_location
            && self
                .options
                .select
                .as_ref()
                .is_some_and(|s| !s.matches(parsed.selector.unwrap_or("")));
        let keys = if other_location {
            self.filtered += 1;
            None
        } else if unselected {
            self.unselected += 1;
            None
        } else {
            match (&parsed.client, &parsed.ip) {
                (Err(_), _) if format.empty_key_is_unaccounted() => {
                    self.empty_key += 1;
                    None
                }
                (Err(e), _) | (Ok(_), Some(Err(e))) => return self.bad(line_no, e, text),
                (Ok(client), ip) => {
                    let ip = match ip {
                        Some(Ok(ip)) => ip,
                        _ => client,
                    };
                    let source = parsed.source.as_deref().unwrap_or("");
                    match intern(client, ip, source) {
                        Ok(ids) => Some(ids),
                        Err(e) => return Err(format!("line {line_no}: {e}")),
                    }
                }
            }
        };
        let ghost = keys.is_none();
        let (client, ip, part) = keys.unwrap_or((0, 0, 0));
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
            part,
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

    pub(super) fn next(&mut self, intern: Intern) -> Result<Option<Request>, String> {
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
                        part: top.part,
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

#[cfg(test)]
mod tests {
    use super::super::{envoy, nginx, Location};
    use super::*;

    fn run(format: Format, location: &str, log: &str) -> (Result<Vec<u64>, String>, Pipeline) {
        let lines = Lines::new(Box::new(io::Cursor::new(log.as_bytes().to_vec()))).unwrap();
        let options = LogOptions {
            reorder: Nanos(60 * NS),
            subsecond: None,
            skip_bad: false,
            location: Location::parse(location),
            select: None,
        };
        let mut p = Pipeline::new(lines, &Arc::new(format), &options);
        let mut intern = |_: &str, _: &str, _: &str| Ok((0, 0, 0));
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
        assert_eq!((p.filtered, p.empty_key, p.skipped), (2, 1, 0));
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
        assert_eq!(p.filtered, 1);
    }
}
