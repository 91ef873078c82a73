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
//! equal to the source's `limit_req_status` (default 503) = rejected and
//! any other `not_rejected`; Envoy's `RL` response flag, else status 429.
//! [`agrees`] is the one rule every count uses.
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
    let log = AccessLog::of(&**t)?;
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
}

/// Whether a gateway verdict and a ratesim outcome, as `agreement.csv`
/// names them, agree (docs/semantics.md §8): `passed`–`admitted`,
/// `delayed`–`delayed`, `rejected`–`rejected`, and `not_rejected` (a log
/// that cannot tell a delay from a pass) with `admitted` or `delayed`. A
/// line without a verdict (`none`) is not compared. The one rule behind
/// every count: the terminal's, `summary.md`'s and the disagreeing lines.
pub fn agrees(gateway: &str, ratesim: &str) -> bool {
    matches!(
        (gateway, ratesim),
        ("passed", "admitted")
            | ("delayed", "delayed")
            | ("rejected", "rejected")
            | ("not_rejected", "admitted" | "delayed")
    )
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
        if gateway != "none" && !agrees(gateway, ratesim) && self.lines.len() < FIRST {
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

/// One limiter's comparison, read back from `agreement.csv`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    pub limiter: String,
    /// Lines whose verdict and outcome agree.
    pub agree: u64,
    /// Lines with a verdict: the `agreement.csv` rows but `none`.
    pub compared: u64,
    /// Lines without a verdict (`none`), not compared.
    pub without_verdict: u64,
    /// The first disagreeing lines, described.
    pub lines: Vec<String>,
}

/// Per limiter, the counts of `agreement.csv` by [`agrees`] and the first
/// disagreeing lines, read from a run directory.
pub fn read(dir: &Path) -> Vec<Counts> {
    let Ok(mut r) = csv::Reader::from_path(dir.join(FILE)) else {
        return Vec::new();
    };
    let mut out: Vec<Counts> = Vec::new();
    for rec in r.records().filter_map(Result::ok) {
        let (Some(l), Some(g), Some(s), Some(n)) = (rec.get(0), rec.get(1), rec.get(2), rec.get(3))
        else {
            continue;
        };
        let n: u64 = n.parse().unwrap_or(0);
        if out.last().is_none_or(|c| c.limiter != l) {
            out.push(Counts {
                limiter: l.to_string(),
                ..Counts::default()
            });
        }
        let e = out.last_mut().expect("just pushed");
        if g == "none" {
            e.without_verdict += n;
        } else {
            e.compared += n;
            e.agree += agrees(g, s) as u64 * n;
        }
    }
    if let Ok(mut r) = csv::Reader::from_path(dir.join(LINES_FILE)) {
        for rec in r.records().filter_map(Result::ok) {
            let get = |i| rec.get(i).unwrap_or("");
            if let Some(e) = out.iter_mut().find(|e| e.limiter == get(0)) {
                let ms = |ns: &str| ns.parse::<u64>().map(|n| n as f64 / 1e6).unwrap_or(0.0);
                let delay = |what: &str, ns: &str| {
                    if what == "delayed" {
                        format!(" {:.0} ms", ms(ns))
                    } else {
                        String::new()
                    }
                };
                e.lines.push(format!(
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

/// The comparison as Markdown (`summary.md`) or text (the terminal), from
/// [`read`]: both give the same counts as `agreement.csv`.
pub fn render(dir: &Path, markdown: bool) -> String {
    let rows = read(dir);
    if rows.is_empty() {
        return String::new();
    }
    let unverdicted = |c: &Counts| {
        if c.without_verdict == 0 {
            String::new()
        } else {
            format!(
                "; {} line{} without a verdict not compared",
                c.without_verdict,
                if c.without_verdict == 1 { "" } else { "s" }
            )
        }
    };
    let mut s = String::new();
    if markdown {
        s.push_str("## Agreement with the gateway\n\nEach request's decision beside the gateway's own verdict in its log line (`agreement.csv`; the first disagreeing lines in `disagreements.csv`). A gateway verdict of `not_rejected` (a log with only `$status`) agrees with admitted and with delayed.\n\n| limiter | agree | of | first disagreeing lines |\n|---|---:|---:|---|\n");
        for c in &rows {
            let mut first = c
                .lines
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join("; ");
            first.push_str(&unverdicted(c));
            s.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                c.limiter,
                c.agree,
                c.compared,
                first.trim_start_matches("; ")
            ));
        }
        s.push('\n');
    } else {
        s.push_str("\nagreement with the gateway's verdicts (agreement.csv):\n");
        for c in &rows {
            s.push_str(&format!(
                "  {}: {} of {} agree{}\n",
                c.limiter,
                c.agree,
                c.compared,
                unverdicted(c)
            ));
            for line in c.lines.iter().take(3) {
                s.push_str(&format!("    {line}\n"));
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_rejected_agrees_with_admitted_and_delayed_and_none_is_not_compared() {
        assert!(agrees("not_rejected", "admitted") && agrees("not_rejected", "delayed"));
        assert!(!agrees("not_rejected", "rejected"));
        assert!(agrees("passed", "admitted") && !agrees("passed", "delayed"));
        assert!(!agrees("none", "admitted"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(FILE),
            "limiter,gateway,ratesim,requests\n\
             a,not_rejected,admitted,700\n\
             a,not_rejected,delayed,103\n\
             a,rejected,admitted,2\n\
             a,none,admitted,4\n\
             b,rejected,rejected,5\n",
        )
        .unwrap();
        let c = read(dir.path());
        assert_eq!(
            c.iter()
                .map(|c| (c.limiter.as_str(), c.agree, c.compared, c.without_verdict))
                .collect::<Vec<_>>(),
            vec![("a", 803, 805, 4), ("b", 5, 5, 0)]
        );
        let text = render(dir.path(), false);
        assert!(
            text.contains("a: 803 of 805 agree; 4 lines without a verdict not compared"),
            "{text}"
        );
        assert!(render(dir.path(), true).contains("| a | 803 | 805 |"));
    }
}
