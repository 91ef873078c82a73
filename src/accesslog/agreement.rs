//! Agreement with the gateway (docs/semantics.md §8): when a limiter came
//! from the gateway's own configuration (`implementation = "nginx"`
//! replaying an nginx log; `"envoy"`, `"envoy-timer"` or
//! `"envoy-ratelimit"` replaying an Envoy log) and the log carries the
//! gateway's verdicts, every decision is set beside the verdict of the same
//! line.
//!
//! `agreement.csv` counts `(gateway, ratesim)` pairs per limiter (gateway
//! `passed`, `delayed`, `rejected`; `not_rejected` when the log has only a
//! status, which cannot tell a delay from a pass; `none` for a line
//! without a verdict);
//! `disagreements.csv` names the first [`FIRST`] lines where they differ.
//! Gateway verdicts: nginx `$limit_req_status` (PASSED, DELAYED,
//! REJECTED, `_DRY_RUN` as the verdict it would have been), else `$status`
//! 429/503 = rejected; Envoy's `RL` response flag, else status 429.
//!
//! It applies to a limiter that reads exactly one access-log source, from
//! one instance, without retries: then the engine decides the log's
//! requests one by one in replay order, and the sink pairs the n-th
//! decision with the n-th request of its own reading of the log.

use std::collections::BTreeMap;
use std::path::Path;

use super::{AccessLog, Format, Requests, Verdict};
use crate::engine::{Attempt, DecisionSink};
use crate::limiter::Decision;
use crate::scenario::Scenario;
use crate::traffic::retry::Retry;
use crate::traffic::Pattern;

pub const FILE: &str = crate::rundir::AGREEMENT_CSV;
pub const LINES_FILE: &str = crate::rundir::DISAGREEMENTS_CSV;
pub const HEADER: &str = "limiter,gateway,ratesim,requests";
pub const LINES_HEADER: &str =
    "limiter,line,client,time_ns,gateway,ratesim,gateway_delay_ns,ratesim_delay_ns";

/// Disagreeing lines kept per limiter.
pub const FIRST: usize = 10;

fn outcome(d: Decision) -> &'static str {
    match d {
        Decision::Admitted => "admitted",
        Decision::Delayed { .. } => "delayed",
        Decision::Rejected { .. } => "rejected",
    }
}

/// One limiter's comparison, filled as the run goes.
pub struct Agreement {
    limiter: String,
    requests: Requests,
    /// The log tells delays apart from passes (nginx `$limit_req_status`).
    delays: bool,
    counts: BTreeMap<(&'static str, &'static str), u64>,
    lines: Vec<(u64, u32, u64, &'static str, &'static str, u64, u64)>,
}

/// The gateway a preset stands for, and whether a log of `format` is its.
fn same_gateway(implementation: Option<&str>, format: &Format) -> bool {
    matches!(
        (implementation, format),
        (Some("nginx"), Format::Nginx(_))
            | (
                Some("envoy" | "envoy-timer" | "envoy-ratelimit"),
                Format::Envoy(_)
            )
    )
}

/// The access log limiter `index` is compared against, if any.
pub fn log_of(scenario: &Scenario, index: usize) -> Option<&AccessLog> {
    let spec = &scenario.limiters[index];
    let [source] = spec.traffic.as_slice() else {
        return None;
    };
    let src = &scenario.traffic[*source];
    let Pattern::Trace(t) = &src.pattern else {
        return None;
    };
    let log = AccessLog::of(t)?;
    let plain =
        src.retry == Retry::NONE && spec.deployment.instances == 1 && !spec.deployment.is_global();
    (plain && log.with_verdict > 0 && same_gateway(spec.implementation, &log.format)).then_some(log)
}

impl Agreement {
    pub fn new(scenario: &Scenario, index: usize) -> anyhow::Result<Option<Agreement>> {
        let Some(log) = log_of(scenario, index) else {
            return Ok(None);
        };
        let delays = match &*log.format {
            Format::Nginx(n) => n.template.field("$limit_req_status").is_some(),
            _ => false,
        };
        Ok(Some(Agreement {
            limiter: scenario.limiters[index].name.clone(),
            requests: log.requests()?,
            delays,
            counts: BTreeMap::new(),
            lines: Vec::new(),
        }))
    }

    fn agrees(&self, gateway: Option<Verdict>, ratesim: Decision) -> bool {
        match (gateway, ratesim) {
            (None, _) => true,
            (Some(Verdict::Rejected), Decision::Rejected { .. }) => true,
            (Some(Verdict::Passed), Decision::Admitted) => true,
            (Some(Verdict::Delayed), Decision::Delayed { .. }) => true,
            (Some(Verdict::Passed), Decision::Delayed { .. }) => !self.delays,
            _ => false,
        }
    }
}

impl DecisionSink for Agreement {
    fn record(&mut self, a: &Attempt) -> anyhow::Result<()> {
        if a.attempt != 1 {
            return Ok(());
        }
        let Some(r) = self.requests.next_request()? else {
            anyhow::bail!(
                "agreement for {}: more decisions than log lines",
                self.limiter
            );
        };
        if r.time != a.arrival.time || r.client != a.arrival.client {
            anyhow::bail!(
                "agreement for {}: line {} is out of step with the run",
                self.limiter,
                r.line
            );
        }
        let gateway = match r.verdict {
            None => "none",
            // A status says rejected or not; not whether it was delayed.
            Some(Verdict::Passed) if !self.delays => "not_rejected",
            Some(v) => v.as_str(),
        };
        let ratesim = outcome(a.decision);
        *self.counts.entry((gateway, ratesim)).or_default() += 1;
        if !self.agrees(r.verdict, a.decision) && self.lines.len() < FIRST {
            let delay = match a.decision {
                Decision::Delayed { delay } => delay.0,
                _ => 0,
            };
            self.lines
                .push((r.line, r.client, r.time.0, gateway, ratesim, r.delay, delay));
        }
        Ok(())
    }
}

/// Passes decisions to two sinks (the decision log and an agreement).
pub struct Tee<'a>(
    pub Option<&'a mut (dyn DecisionSink + Send)>,
    pub Option<&'a mut Agreement>,
);

impl Tee<'_> {
    /// Whether it passes decisions anywhere.
    pub fn is_used(&self) -> bool {
        self.0.is_some() || self.1.is_some()
    }
}

impl DecisionSink for Tee<'_> {
    fn record(&mut self, a: &Attempt) -> anyhow::Result<()> {
        if let Some(s) = self.0.as_mut() {
            s.record(a)?;
        }
        if let Some(b) = self.1.as_mut() {
            b.record(a)?;
        }
        Ok(())
    }
}

/// Writes `agreement.csv` and `disagreements.csv` into `dir` from each
/// limiter's comparison, in limiter order, when any limiter was compared.
pub fn write(
    agreements: Vec<Option<Agreement>>,
    scenario: &Scenario,
    dir: &Path,
) -> anyhow::Result<()> {
    let all: Vec<Agreement> = agreements.into_iter().flatten().collect();
    if all.is_empty() {
        return Ok(());
    }
    let mut w = csv::Writer::from_path(dir.join(FILE))?;
    w.write_record(HEADER.split(','))?;
    for a in &all {
        for ((g, r), n) in &a.counts {
            w.write_record([a.limiter.as_str(), g, r, &n.to_string()])?;
        }
    }
    w.flush()?;
    let mut w = csv::Writer::from_path(dir.join(LINES_FILE))?;
    w.write_record(LINES_HEADER.split(','))?;
    for a in &all {
        for &(line, client, t, g, r, gd, rd) in &a.lines {
            w.write_record([
                a.limiter.clone(),
                line.to_string(),
                scenario.population.client_name(client).to_string(),
                t.to_string(),
                g.to_string(),
                r.to_string(),
                gd.to_string(),
                rd.to_string(),
            ])?;
        }
    }
    w.flush()?;
    Ok(())
}

/// Per limiter: `(agreeing, compared)` and the first disagreeing lines,
/// read from a run directory.
pub fn read(dir: &Path) -> Vec<(String, u64, u64, Vec<String>)> {
    let Ok(mut r) = csv::Reader::from_path(dir.join(FILE)) else {
        return Vec::new();
    };
    let mut out: Vec<(String, u64, u64, Vec<String>)> = Vec::new();
    for rec in r.records().filter_map(Result::ok) {
        let (Some(l), Some(g), Some(s), Some(n)) = (rec.get(0), rec.get(1), rec.get(2), rec.get(3))
        else {
            continue;
        };
        let n: u64 = n.parse().unwrap_or(0);
        if out.last().is_none_or(|(name, ..)| name != l) {
            out.push((l.to_string(), 0, 0, Vec::new()));
        }
        let e = out.last_mut().expect("just pushed");
        let agree = matches!(
            (g, s),
            ("none", _)
                | ("passed", "admitted")
                | ("delayed", "delayed")
                | ("rejected", "rejected")
        );
        e.2 += n;
        e.1 += agree as u64 * n;
    }
    if let Ok(mut r) = csv::Reader::from_path(dir.join(LINES_FILE)) {
        for rec in r.records().filter_map(Result::ok) {
            let get = |i| rec.get(i).unwrap_or("");
            if let Some(e) = out.iter_mut().find(|e| e.0 == get(0)) {
                let ms = |ns: &str| ns.parse::<u64>().map(|n| n as f64 / 1e6).unwrap_or(0.0);
                let delay = |what: &str, ns: &str| {
                    if what == "delayed" {
                        format!(" {:.0} ms", ms(ns))
                    } else {
                        String::new()
                    }
                };
                e.3.push(format!(
                    "line {} ({} at {:.3} s): gateway {}{}, ratesim {}{}",
                    get(1),
                    get(2),
                    ms(get(3)) / 1000.0,
                    get(4),
                    delay(get(4), get(6)),
                    get(5),
                    delay(get(5), get(7)),
                ));
            }
        }
    }
    out
}

/// The comparison as Markdown (`summary.md`) or text (the terminal).
pub fn render(dir: &Path, markdown: bool) -> String {
    let rows = read(dir);
    if rows.is_empty() {
        return String::new();
    }
    let mut s = String::new();
    if markdown {
        s.push_str("## Agreement with the gateway\n\nEach request's decision beside the gateway's own verdict in its log line (`agreement.csv`; the first disagreeing lines in `disagreements.csv`).\n\n| limiter | agree | of | first disagreeing lines |\n|---|---:|---:|---|\n");
        for (l, a, n, lines) in &rows {
            s.push_str(&format!(
                "| {l} | {a} | {n} | {} |\n",
                lines.iter().take(3).cloned().collect::<Vec<_>>().join("; ")
            ));
        }
        s.push('\n');
    } else {
        s.push_str("\nagreement with the gateway's verdicts (agreement.csv):\n");
        for (l, a, n, lines) in &rows {
            s.push_str(&format!("  {l}: {a} of {n} agree\n"));
            for line in lines.iter().take(3) {
                s.push_str(&format!("    {line}\n"));
            }
        }
    }
    s
}
