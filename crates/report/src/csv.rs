//! CSV exports: `summary.csv` (one row per limiter, docs/semantics.md §3's
//! columns first), `timeseries.csv` (one row per limiter per bucket), and
//! the streaming decision log.

use std::io::Write;

use super::{LimiterReport, Report};
use crate::clock::NANOS_PER_SEC;
use crate::engine::{Attempt, DecisionSink};
use crate::format::Decimal;
use crate::limiter::{Decision, Headers};
use crate::population::Population;
use crate::rundir::summary::LimiterSummary;
use crate::rundir::{DECISION_COLUMNS, HEADER_COLUMNS, TIMESERIES_COLUMNS};
use crate::scenario::{KeyBy, Scenario};

/// `summary.csv`: one [`LimiterSummary`] per row, its
/// fields the columns (docs/semantics.md §3's first, in order).
pub fn summary(report: &Report, out: &mut dyn Write) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    for l in &report.limiters {
        w.serialize(l.summary())?;
    }
    w.flush()?;
    Ok(())
}

/// `sources.csv`: one [`SourceRow`](crate::rundir::summary::SourceRow)
/// per limiter and source it sees, in limiter then source order
/// (docs/semantics.md §3).
pub fn sources(report: &Report, out: &mut dyn Write) -> anyhow::Result<()> {
    use crate::rundir::summary::SourceRow;
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(out);
    w.write_record(["limiter", "source"].iter().chain(SourceRow::SWEPT))?;
    for row in report.limiters.iter().flat_map(|l| &l.sources) {
        w.serialize(row)?;
    }
    w.flush()?;
    Ok(())
}

/// The columns of `summary.csv`, in order: [`LimiterSummary`]'s fields.
pub fn summary_columns() -> Vec<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    // Serializing a row writes the header first; the struct is its only
    // source, so the two can never disagree.
    let header = w
        .serialize(LimiterSummary::default())
        .and_then(|()| w.into_inner().map_err(|e| e.into_error().into()));
    match header {
        Ok(bytes) => String::from_utf8_lossy(&bytes)
            .lines()
            .next()
            .unwrap_or_default()
            .split(',')
            .map(str::to_string)
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Every limiter's series over the same buckets (the longest series, so a
/// shaper's late releases are not cut off).
pub fn timeseries(report: &Report, out: &mut dyn Write) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(TIMESERIES_COLUMNS)?;
    let buckets = report
        .limiters
        .iter()
        .map(|l| l.series.len().max(l.backend_series.len()))
        .max()
        .unwrap_or(0);
    let res = report.resolution.0;
    // Field by field, numbers through one buffer: 3 430 instructions a
    // row, where a row of owned strings cost 7 350 (callgrind, the nginx
    // bench log's 2 000 rows).
    let mut buf = itoa::Buffer::new();
    for l in &report.limiters {
        for i in 0..buckets {
            let b = l.series.get(i).copied().unwrap_or_default();
            let start = i as u64 * res;
            w.write_field(&l.summary().limiter)?;
            for n in [
                start,
                start + res,
                b.attempts,
                b.admitted,
                b.delayed,
                b.rejected,
                b.passed,
                b.passed_cost,
                b.retries,
                b.gave_up,
                b.worst_key_in_window,
                b.overshoot,
            ] {
                number(&mut w, &mut buf, n)?;
            }
            match l.backend_series.is_empty() {
                true => {
                    for _ in 0..BACKEND_COLUMNS {
                        w.write_field("")?;
                    }
                }
                false => {
                    for cell in backend_cells(l, i) {
                        w.write_field(cell)?;
                    }
                }
            }
            // (No more fields: the row's end.)
            w.write_record(None::<&[u8]>)?;
        }
    }
    w.flush()?;
    Ok(())
}

/// How many of `timeseries.csv`'s columns are the backend's.
const BACKEND_COLUMNS: usize = 6;

/// The backend's columns of `timeseries.csv` for bucket `i` of `l`
/// (docs/semantics.md §10), where there is a backend; the latencies only
/// where a request entered and was served.
fn backend_cells(l: &LimiterReport, i: usize) -> [String; BACKEND_COLUMNS] {
    let b = l.backend_series.get(i).copied().unwrap_or_default();
    let ms = |ns: u128, n: u64| {
        Decimal::ratio(ns, n as u128 * 1_000_000, 6)
            .text()
            .to_string()
    };
    let served = b.served > 0;
    [
        b.served.to_string(),
        b.dropped.to_string(),
        if served {
            ms(b.latency_sum, b.served)
        } else {
            String::new()
        },
        if served {
            ms(b.latency_max as u128, 1)
        } else {
            String::new()
        },
        b.in_flight_max.to_string(),
        b.limit.map(|l| l.to_string()).unwrap_or_default(),
    ]
}

/// Streams one limiter's decisions as CSV rows (no header: the run writes
/// one header, then each limiter's rows in order).
pub struct DecisionLog<'a, W: Write> {
    w: csv::Writer<W>,
    limiter: &'a str,
    key_by: KeyBy,
    population: &'a Population,
    buf: itoa::Buffer,
    /// The client's and the key's names, when made into text.
    client_buf: String,
    key_buf: String,
    /// A chain's members, for the `by` column.
    members: Vec<&'a str>,
    /// The scenario's sources by id ([`Scenario::sources`]), for the
    /// `source` column.
    sources: Vec<&'a str>,
    /// With `--decisions=headers`: the RateLimit fields' policy.
    policy: Option<HeaderPolicy>,
}

/// What `decisions.csv`'s header columns say of one limiter
/// (docs/semantics.md §11): its policy limit `q` (also `r` when any cost
/// would pass), and its window when it is whole seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderPolicy {
    pub limit: u64,
    pub window_s: Option<u64>,
    /// `"NAME";q=LIMIT[;w=WINDOW]`, made once.
    policy: String,
}

impl HeaderPolicy {
    /// The policy of limiter `index` of `scenario`: a window algorithm's
    /// own `limit` per its own `window`; any other limiter's (a chain's
    /// too) policy limit per `[defaults] window`.
    pub fn of(scenario: &Scenario, index: usize) -> HeaderPolicy {
        let spec = &scenario.limiters[index];
        let (limit, window) = spec.header_policy(&scenario.defaults);
        let window_s = window
            .filter(|w| w.0 % NANOS_PER_SEC == 0)
            .map(|w| w.0 / NANOS_PER_SEC);
        let mut policy = format!("{};q={limit}", sf_string(&spec.name));
        if let Some(w) = window_s {
            policy.push_str(&format!(";w={w}"));
        }
        HeaderPolicy {
            limit,
            window_s,
            policy,
        }
    }

    /// `ratelimit`'s value: `"NAME";r=R;t=T`, an unbounded remaining
    /// written as the policy limit.
    pub fn ratelimit(&self, name: &str, h: &Headers) -> String {
        format!(
            "{};r={};t={}",
            sf_string(name),
            h.written_remaining(self.limit),
            h.reset_s()
        )
    }

    /// `ratelimit_policy`'s value.
    pub fn ratelimit_policy(&self) -> &str {
        &self.policy
    }
}

/// `s` as a structured-field string (RFC 9651 §3.3.3): in double quotes,
/// with `\` and `"` escaped.
fn sf_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

impl<'a, W: Write> DecisionLog<'a, W> {
    pub fn new(out: W, limiter: &'a str, key_by: KeyBy, population: &'a Population) -> Self {
        DecisionLog {
            w: csv::WriterBuilder::new()
                .has_headers(false)
                .from_writer(out),
            limiter,
            key_by,
            population,
            buf: itoa::Buffer::new(),
            client_buf: String::new(),
            key_buf: String::new(),
            members: Vec::new(),
            sources: Vec::new(),
            policy: None,
        }
    }

    /// Also writes the three RateLimit header columns (`--decisions=headers`).
    pub fn with_headers(mut self, policy: HeaderPolicy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// The log of limiter `index` of `scenario`: `source` names each
    /// attempt's source (its `[[traffic]]`, or the part of a split trace);
    /// a chain's names in `by` the member that rejected or set the delay.
    pub fn of(out: W, scenario: &'a Scenario, index: usize) -> Self {
        let spec = &scenario.limiters[index];
        let mut log = DecisionLog::new(out, &spec.name, spec.key_by, &scenario.population);
        log.sources = scenario.sources().map(|(_, name)| name).collect();
        if let Some(c) = &spec.chain {
            log.members = c
                .members
                .iter()
                .map(|&m| scenario.limiters[m].name.as_str())
                .collect();
        }
        log
    }

    /// `decisions.csv`'s header row, with the header columns when
    /// `headers`.
    pub fn header(out: W, headers: bool) -> csv::Result<()> {
        let mut w = csv::Writer::from_writer(out);
        let extra = if headers { HEADER_COLUMNS } else { &[] };
        w.write_record(DECISION_COLUMNS.iter().chain(extra))?;
        w.flush()?;
        Ok(())
    }

    pub fn finish(mut self) -> csv::Result<W> {
        self.w.flush()?;
        self.w.into_inner().map_err(|e| e.into_error().into())
    }
}

/// Writes `n` as the next field, through `buf`.
fn number<W: Write>(w: &mut csv::Writer<W>, buf: &mut itoa::Buffer, n: u64) -> csv::Result<()> {
    w.write_field(buf.format(n))
}

impl<W: Write> DecisionSink for DecisionLog<'_, W> {
    fn record(&mut self, a: &Attempt) -> anyhow::Result<()> {
        let client = self
            .population
            .client_name(a.arrival.client)
            .as_str(&mut self.client_buf);
        let key = match self.key_by {
            KeyBy::Client => client,
            KeyBy::Ip => self.population.ip_name(a.key).as_str(&mut self.key_buf),
            KeyBy::Global => "*",
        };
        self.w.write_field(self.limiter)?;
        number(&mut self.w, &mut self.buf, a.arrival.time.0)?;
        self.w.write_field(key)?;
        self.w.write_field(client)?;
        number(&mut self.w, &mut self.buf, a.attempt as u64)?;
        let (outcome, delay, retry) = match a.decision {
            Decision::Admitted => ("admitted", 0, None),
            Decision::Delayed { delay } => ("delayed", delay.0, None),
            Decision::Rejected { retry_after } => ("rejected", 0, retry_after.map(|r| r.0)),
        };
        self.w.write_field(outcome)?;
        number(&mut self.w, &mut self.buf, delay)?;
        match retry {
            Some(r) => number(&mut self.w, &mut self.buf, r)?,
            None => self.w.write_field("")?,
        }
        let by = a.by.and_then(|b| self.members.get(b as usize));
        self.w.write_field(by.copied().unwrap_or(""))?;
        let source = self.sources.get(a.source as usize);
        self.w.write_field(source.copied().unwrap_or(""))?;
        if let Some(policy) = &self.policy {
            // Whole seconds, rounded up (docs/semantics.md §11).
            match retry {
                Some(r) => number(&mut self.w, &mut self.buf, r.div_ceil(NANOS_PER_SEC))?,
                None => self.w.write_field("")?,
            }
            match &a.headers {
                Some(h) => self.w.write_field(policy.ratelimit(self.limiter, h))?,
                None => self.w.write_field("")?,
            }
            self.w.write_field(policy.ratelimit_policy())?;
        }
        self.w.write_record(None::<&[u8]>)?;
        Ok(())
    }

    fn wants_headers(&self) -> bool {
        self.policy.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_columns_are_the_designs() {
        // docs/semantics.md §3, and SourceRow's fields in that order.
        let design = "limiter,source,clients,attempts,logical_requests,admitted,delayed,rejected,passed,passed_per_s,clients_limited,clients_limited_share,rejected_share";
        let mut w = csv::Writer::from_writer(Vec::new());
        w.serialize(crate::rundir::summary::SourceRow::default())
            .unwrap();
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert_eq!(text.lines().next(), Some(design));
    }

    #[test]
    fn summary_columns_begin_with_the_designs() {
        let design = "limiter,algorithm,attempts,admitted,delayed,rejected,peak_in_window,limit,\
                      delay_p50_ms,delay_p99_ms,state_bytes_per_key_mean,state_bytes_per_key_peak,keys";
        let columns = summary_columns().join(",");
        assert!(columns.starts_with(design), "{columns}");
    }
}
