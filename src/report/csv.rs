//! CSV exports: `summary.csv` (one row per limiter, DESIGN §3's columns
//! first), `timeseries.csv` (one row per limiter per bucket), and the
//! streaming decision log.

use std::io::Write;

use super::{opt_ms, Report};
use crate::engine::{Attempt, DecisionSink};
use crate::limiter::Decision;
use crate::scenario::{KeyBy, Population};

/// DESIGN §3's columns, in order, then ratesim's additions.
pub const SUMMARY_COLUMNS: &[&str] = &[
    "limiter",
    "algorithm",
    "attempts",
    "admitted",
    "delayed",
    "rejected",
    "peak_in_window",
    "limit",
    "delay_p50_ms",
    "delay_p99_ms",
    "state_bytes_per_key_mean",
    "state_bytes_per_key_peak",
    "keys",
    "key_by",
    "passed",
    "delay_max_ms",
    "logical_requests",
    "retry_amplification",
    "gave_up",
    "pending_at_end",
    "time_to_success_p50_ms",
    "time_to_success_p99_ms",
    "client_pass_ratio_min",
    "fairness_jain",
    "collateral_share",
    "instances",
    "scope",
    "added_latency_p50_ms",
    "added_latency_p99_ms",
    "store_ops",
    "store_ops_per_s",
    "fault_decisions",
    "unprotected_passes",
    "fault_rejections",
    "fallback_decisions",
    "cache_rejections",
    "overshoot",
    "overshoot_max",
    "collateral_rejections",
    "collateral_cost_share",
    "state_bytes_total_mean",
    "state_bytes_total_peak",
    "state_bytes_redis_per_key_mean",
    "state_bytes_redis_total_peak",
];

pub fn summary(report: &Report, out: impl Write) -> csv::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(SUMMARY_COLUMNS)?;
    for l in &report.limiters {
        w.write_record([
            l.name.clone(),
            l.algorithm.to_string(),
            l.attempts.to_string(),
            l.admitted.to_string(),
            l.delayed.to_string(),
            l.rejected.to_string(),
            l.peak_in_window.to_string(),
            report.limit.to_string(),
            opt_ms(l.delay_p50),
            opt_ms(l.delay_p99),
            l.state_mean_text(),
            l.state_peak.to_string(),
            l.keys.to_string(),
            l.key_by.to_string(),
            l.passed().to_string(),
            opt_ms(l.delay_max),
            l.logical.to_string(),
            l.amplification_text(),
            l.gave_up.to_string(),
            l.pending_at_end.to_string(),
            opt_ms(l.time_to_success_p50),
            opt_ms(l.time_to_success_p99),
            l.pass_ratio_min_text(),
            l.fairness_text(),
            l.collateral_text(),
            l.instances.to_string(),
            l.scope.to_string(),
            opt_ms(l.added_latency_p50),
            opt_ms(l.added_latency_p99),
            l.store_ops.to_string(),
            l.store_ops_per_s_text(report.duration),
            l.fault_decisions().to_string(),
            l.fault_open.to_string(),
            l.fault_closed.to_string(),
            l.fault_fallback.to_string(),
            l.cache_rejections.to_string(),
            l.overshoot.to_string(),
            l.overshoot_max.to_string(),
            l.collateral.map_or(String::new(), |(c, _)| c.to_string()),
            l.collateral_cost_text(),
            l.state_total_mean_text(),
            l.state_total_peak.to_string(),
            l.redis_mean_text(),
            l.redis_total_peak.to_string(),
        ])?;
    }
    w.flush()?;
    Ok(())
}

pub const TIMESERIES_COLUMNS: &[&str] = &[
    "limiter",
    "bucket_start_ns",
    "bucket_end_ns",
    "attempts",
    "admitted",
    "delayed",
    "rejected",
    "passed",
    "passed_cost",
    "retries",
    "gave_up",
    "worst_key_in_window",
    "overshoot",
];

/// Every limiter's series over the same buckets (the longest series, so a
/// shaper's late releases are not cut off).
pub fn timeseries(report: &Report, out: impl Write) -> csv::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(TIMESERIES_COLUMNS)?;
    let buckets = report
        .limiters
        .iter()
        .map(|l| l.series.len())
        .max()
        .unwrap_or(0);
    let res = report.resolution.0;
    for l in &report.limiters {
        for i in 0..buckets {
            let b = l.series.get(i).copied().unwrap_or_default();
            let start = i as u64 * res;
            w.write_record([
                l.name.clone(),
                start.to_string(),
                (start + res).to_string(),
                b.attempts.to_string(),
                b.admitted.to_string(),
                b.delayed.to_string(),
                b.rejected.to_string(),
                b.passed.to_string(),
                b.passed_cost.to_string(),
                b.retries.to_string(),
                b.gave_up.to_string(),
                b.worst_key_in_window.to_string(),
                b.overshoot.to_string(),
            ])?;
        }
    }
    w.flush()?;
    Ok(())
}

pub const DECISION_COLUMNS: &[&str] = &[
    "limiter",
    "time_ns",
    "key",
    "client",
    "attempt",
    "outcome",
    "delay_ns",
    "retry_after_ns",
];

/// Streams one limiter's decisions as CSV rows (no header: the run writes
/// one header, then each limiter's rows in order).
pub struct DecisionLog<'a, W: Write> {
    w: csv::Writer<W>,
    limiter: &'a str,
    key_by: KeyBy,
    population: &'a Population,
    buf: String,
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
            buf: String::new(),
        }
    }

    pub fn header(out: W) -> csv::Result<()> {
        let mut w = csv::Writer::from_writer(out);
        w.write_record(DECISION_COLUMNS)?;
        w.flush()?;
        Ok(())
    }

    fn number(&mut self, n: u64) -> csv::Result<()> {
        use std::fmt::Write as _;
        self.buf.clear();
        let _ = write!(self.buf, "{n}");
        self.w.write_field(&self.buf)
    }

    pub fn finish(mut self) -> csv::Result<W> {
        self.w.flush()?;
        self.w.into_inner().map_err(|e| e.into_error().into())
    }
}

impl<W: Write> DecisionSink for DecisionLog<'_, W> {
    fn record(&mut self, a: &Attempt) -> anyhow::Result<()> {
        let client = self.population.client_name(a.arrival.client);
        let key = match self.key_by {
            KeyBy::Client => client,
            KeyBy::Ip => self.population.ip_name(a.key),
            KeyBy::Global => "*",
        };
        self.w.write_field(self.limiter)?;
        self.number(a.arrival.time.0)?;
        self.w.write_field(key)?;
        self.w.write_field(client)?;
        self.number(a.attempt as u64)?;
        let (outcome, delay, retry) = match a.decision {
            Decision::Admitted => ("admitted", 0, None),
            Decision::Delayed { delay } => ("delayed", delay.0, None),
            Decision::Rejected { retry_after } => ("rejected", 0, retry_after.map(|r| r.0)),
        };
        self.w.write_field(outcome)?;
        self.number(delay)?;
        match retry {
            Some(r) => self.number(r)?,
            None => self.w.write_field("")?,
        }
        self.w.write_record(None::<&[u8]>)?;
        Ok(())
    }
}
