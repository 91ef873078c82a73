//! Trace: replay a recorded CSV exactly.
//!
//! Header row required. Columns: `time` (seconds as a decimal, parsed exactly
//! to ns, e.g. `12.000000001`) or `time_ns` (integer); `client`; optional
//! `ip` (default: the client); optional `cost` (positive integer, default 1).
//! Rows must be in non-decreasing time order; ties are replayed in file order.
//!
//! The file is read once when the scenario loads — every row is validated,
//! and clients and addresses are interned — and streamed again for each
//! limiter, so memory grows with distinct clients, never with rows.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use csv::ByteRecord;
use serde_json::json;

use super::{Arrival, ParseCtx, Stream, StreamCtx};
use crate::clock::{parse_seconds, Nanos, MAX_NANOS};
use crate::error::InputError;
use crate::scenario::fields::{Fields, MAX_COUNT};
use crate::scenario::Population;

/// Where the CSV bytes live.
#[derive(Debug, Clone)]
pub enum TraceData {
    File(PathBuf),
    /// A trace shipped inside the binary with a built-in scenario.
    Embedded(&'static [u8]),
}

impl TraceData {
    fn open(&self) -> std::io::Result<Box<dyn Read + Send>> {
        Ok(match self {
            TraceData::File(p) => Box::new(BufReader::with_capacity(1 << 16, File::open(p)?)),
            TraceData::Embedded(b) => Box::new(*b),
        })
    }
}

#[derive(Debug, Clone)]
pub struct Trace {
    /// The path as the scenario wrote it, for messages.
    pub shown: String,
    pub data: TraceData,
    columns: Columns,
    ids: Arc<Ids>,
    last: Nanos,
    rows: u64,
}

#[derive(Debug, Default)]
struct Ids {
    clients: HashMap<Box<str>, u32>,
    ips: HashMap<Box<str>, u32>,
}

/// Column positions found in the header.
#[derive(Debug, Clone, Copy)]
struct Columns {
    time: usize,
    /// `time` is in decimal seconds (else integer `time_ns`).
    seconds: bool,
    client: usize,
    ip: Option<usize>,
    cost: Option<usize>,
}

/// One parsed row; strings borrow from the record.
struct Row<'r> {
    time: Nanos,
    client: &'r str,
    ip: &'r str,
    cost: u64,
}

const ACCEPTED_COLUMNS: &str = "time (seconds) or time_ns, client, ip (optional), cost (optional)";

fn reader(r: Box<dyn Read + Send>) -> csv::Reader<Box<dyn Read + Send>> {
    csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .from_reader(r)
}

impl Columns {
    fn from_header(header: &ByteRecord) -> Result<Columns, String> {
        let (mut time, mut time_ns, mut client, mut ip, mut cost) = (None, None, None, None, None);
        for (i, name) in header.iter().enumerate() {
            let name = String::from_utf8_lossy(name);
            let slot = match name.as_ref() {
                "time" => &mut time,
                "time_ns" => &mut time_ns,
                "client" => &mut client,
                "ip" => &mut ip,
                "cost" => &mut cost,
                other => {
                    return Err(format!(
                        "line 1: unknown column \"{other}\" — accepted: {ACCEPTED_COLUMNS}"
                    ))
                }
            };
            if slot.replace(i).is_some() {
                return Err(format!("line 1: column \"{name}\" appears twice"));
            }
        }
        let (time, seconds) = match (time, time_ns) {
            (Some(t), None) => (t, true),
            (None, Some(t)) => (t, false),
            (Some(_), Some(_)) => {
                return Err("line 1: has both time and time_ns — give one of them".into())
            }
            (None, None) => {
                return Err(format!(
                    "line 1: no time or time_ns column — the header must name {ACCEPTED_COLUMNS}"
                ))
            }
        };
        let client = client.ok_or_else(|| {
            format!("line 1: no client column — the header must name {ACCEPTED_COLUMNS}")
        })?;
        Ok(Columns {
            time,
            seconds,
            client,
            ip,
            cost,
        })
    }

    /// Parses one record; an error message lacks the line, which the
    /// caller adds.
    fn row<'r>(&self, rec: &'r ByteRecord) -> Result<Row<'r>, String> {
        let field = |i: usize, name: &str| -> Result<&'r str, String> {
            std::str::from_utf8(&rec[i]).map_err(|_| format!("{name} is not UTF-8"))
        };
        let raw_time = field(self.time, "time")?;
        let time = if self.seconds {
            parse_seconds(raw_time).map_err(|e| {
                format!("time \"{raw_time}\" {e}; expected seconds as a decimal, e.g. 12.000000001")
            })?
        } else {
            match raw_time.parse::<u64>() {
                Ok(ns) if ns <= MAX_NANOS => Nanos(ns),
                _ => {
                    return Err(format!(
                        "time_ns \"{raw_time}\" — expected whole nanoseconds from 0 to {MAX_NANOS}"
                    ))
                }
            }
        };
        let client = field(self.client, "client")?;
        if client.is_empty() {
            return Err("client is empty".to_string());
        }
        let ip = match self.ip {
            Some(i) if !rec[i].is_empty() => field(i, "ip")?,
            _ => client,
        };
        let cost = match self.cost {
            Some(i) if !rec[i].is_empty() => {
                let raw = field(i, "cost")?;
                match raw.parse::<u64>() {
                    Ok(c) if (1..=MAX_COUNT).contains(&c) => c,
                    _ => {
                        return Err(format!(
                            "cost \"{raw}\" — expected a positive whole number up to {MAX_COUNT}"
                        ))
                    }
                }
            }
            _ => 1,
        };
        Ok(Row {
            time,
            client,
            ip,
            cost,
        })
    }
}

impl Trace {
    pub fn parse(f: &mut Fields, ctx: &mut ParseCtx) -> Result<Self, InputError> {
        let path = f
            .opt_str("path")?
            .ok_or_else(|| f.missing("path", "the trace CSV, relative to the scenario file"))?;
        let data = ctx
            .origin
            .resolve(path)
            .map_err(|e| InputError::new(format!("{}: \"{path}\" — {e}", f.at("path"))))?;
        let mut trace = Trace {
            shown: path.to_string(),
            data,
            columns: Columns {
                time: 0,
                seconds: false,
                client: 0,
                ip: None,
                cost: None,
            },
            ids: Arc::default(),
            last: Nanos::ZERO,
            rows: 0,
        };
        trace
            .scan(ctx.population)
            .map_err(|e| InputError::new(format!("{}: {path} {e}", f.at("path"))))?;
        Ok(trace)
    }

    /// Reads the whole file once: validates every row, interns every client
    /// and address, and finds the last time.
    fn scan(&mut self, population: &mut Population) -> Result<(), String> {
        let r = self
            .data
            .open()
            .map_err(|e| format!("cannot be read: {e}"))?;
        let mut rdr = reader(r);
        let header = rdr
            .byte_headers()
            .map_err(|e| format!("line 1: {e}"))?
            .clone();
        self.columns = Columns::from_header(&header)?;
        let mut ids = Ids::default();
        let mut rec = ByteRecord::new();
        let mut last = Nanos::ZERO;
        let mut rows = 0u64;
        loop {
            match rdr.read_byte_record(&mut rec) {
                Ok(false) => break,
                Ok(true) => {}
                Err(e) => return Err(self.at_line(e.position(), &csv_error(&e))),
            }
            let row = match self.columns.row(&rec) {
                Ok(row) => row,
                Err(e) => return Err(self.at_line(rec.position(), &e)),
            };
            if row.time < last {
                return Err(self.at_line(
                    rec.position(),
                    &format!(
                        "time goes backwards ({} after {}); rows must be in non-decreasing time order",
                        row.time, last
                    ),
                ));
            }
            last = row.time;
            rows += 1;
            if !ids.clients.contains_key(row.client) {
                ids.clients
                    .insert(row.client.into(), population.client(row.client));
            }
            if !ids.ips.contains_key(row.ip) {
                ids.ips.insert(row.ip.into(), population.ip(row.ip));
            }
        }
        if rows == 0 {
            return Err("has a header but no rows".to_string());
        }
        self.ids = Arc::new(ids);
        self.last = last;
        self.rows = rows;
        Ok(())
    }

    /// `line N: message`, N counted from the file itself: the csv crate's
    /// own line numbers are one short in files with CRLF line endings.
    fn at_line(&self, pos: Option<&csv::Position>, message: &str) -> String {
        let line = pos.and_then(|p| self.line_at(p.byte()).ok());
        match line {
            Some(n) => format!("line {n}: {message}"),
            None => message.to_string(),
        }
    }

    /// The 1-based line of the record the csv crate places at `byte` (read
    /// again; errors only). With CRLF endings the crate places a record at
    /// the `\n` that ends the line before it, so that byte counts too.
    fn line_at(&self, byte: u64) -> std::io::Result<u64> {
        let mut r = self.data.open()?.take(byte + 1);
        let mut buf = [0u8; 1 << 14];
        let mut newlines = 0u64;
        loop {
            let n = r.read(&mut buf)?;
            if n == 0 {
                return Ok(newlines + 1);
            }
            newlines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
        }
    }

    pub fn last_time(&self) -> Nanos {
        self.last
    }

    /// Data rows in the trace.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    pub fn open(&self, ctx: StreamCtx) -> anyhow::Result<TraceStream> {
        let r = self
            .data
            .open()
            .with_context(|| format!("cannot read trace {}", self.shown))?;
        let mut rdr = reader(r);
        rdr.byte_headers()?;
        Ok(TraceStream {
            rdr,
            rec: ByteRecord::new(),
            columns: self.columns,
            ids: Arc::clone(&self.ids),
            end: ctx.end,
            shown: self.shown.clone(),
        })
    }

    pub fn echo(&self) -> serde_json::Value {
        json!({ "pattern": "trace", "path": self.shown, "rows": self.rows })
    }
}

fn csv_error(e: &csv::Error) -> String {
    match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("has {len} fields, the header has {expected_len}"),
        csv::ErrorKind::Utf8 { .. } => "is not valid UTF-8".to_string(),
        _ => e.to_string(),
    }
}

pub struct TraceStream {
    rdr: csv::Reader<Box<dyn Read + Send>>,
    rec: ByteRecord,
    columns: Columns,
    ids: Arc<Ids>,
    end: Nanos,
    shown: String,
}

impl Stream for TraceStream {
    fn next(&mut self) -> anyhow::Result<Option<Arrival>> {
        // Every row was validated when the scenario loaded.
        let changed = || anyhow::anyhow!("trace {} changed since it was loaded", self.shown);
        if !self
            .rdr
            .read_byte_record(&mut self.rec)
            .map_err(|_| changed())?
        {
            return Ok(None);
        }
        let row = self.columns.row(&self.rec).map_err(|_| changed())?;
        if row.time > self.end {
            return Ok(None);
        }
        Ok(Some(Arrival {
            time: row.time,
            client: *self.ids.clients.get(row.client).ok_or_else(changed)?,
            ip: *self.ids.ips.get(row.ip).ok_or_else(changed)?,
            cost: row.cost,
        }))
    }
}
