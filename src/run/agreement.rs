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
//! It applies to a limiter (or a chain of them, docs/semantics.md §13)
//! whose sources are all access logs of its gateway, from one instance,
//! without retries: then the engine decides each log's requests one by one
//! in replay order, and the sink pairs the n-th decision on a source with
//! the n-th request of its own reading of that source.

use std::collections::BTreeMap;
use std::path::Path;

use crate::accesslog::{AccessLog, Format, Requests, Verdict};
use crate::engine::{Attempt, DecisionSink};
use crate::limiter::Decision;
pub use crate::report::agreement::agrees;
use crate::rundir::partition::AgreementPart;
use crate::scenario::{KeyBy, Scenario};
use crate::traffic::retry::Retry;

use crate::rundir::{
    AGREEMENT_COLUMNS, AGREEMENT_CSV as FILE, DISAGREEMENTS_COLUMNS,
    DISAGREEMENTS_CSV as LINES_FILE,
};

/// Disagreeing lines kept per limiter.
pub const FIRST: usize = 10;

fn outcome(d: Decision) -> &'static str {
    match d {
        Decision::Admitted => "admitted",
        Decision::Delayed { .. } => "delayed",
        Decision::Rejected { .. } => "rejected",
    }
}

/// A disagreeing line: its number, client, time, the gateway's verdict,
/// ratesim's, and their delays.
type Line = (u64, u32, u64, &'static str, &'static str, u64, u64);

/// One limiter's comparison, filled as the run goes.
pub struct AgreementSink {
    limiter: String,
    /// Per `[[traffic]]` of the scenario: its requests, if the limiter
    /// reads it (a log split into sources by `source` is read whole).
    requests: Vec<Option<Requests>>,
    /// The log tells delays apart from passes (nginx `$limit_req_status`).
    delays: bool,
    counts: BTreeMap<(&'static str, &'static str), u64>,
    /// Each with the number of the event that decided it (a key
    /// partition's journal's).
    lines: Vec<(Line, u64)>,
    /// In a key partition's run: the field it keys by, and per id of it
    /// whether the partition holds it; the other lines are not its.
    keeps: Option<(KeyBy, Vec<bool>)>,
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

/// The access logs limiter `index` is compared against, by source: every
/// source it reads must be a log of its gateway with verdicts (a chain's
/// gateway is its members'), with no retries, on one instance.
pub(crate) fn logs_of(scenario: &Scenario, index: usize) -> Option<Vec<(usize, &AccessLog)>> {
    let spec = &scenario.limiters[index];
    let implementations: Vec<Option<&str>> = match &spec.chain {
        Some(c) => c
            .members
            .iter()
            .map(|&m| scenario.limiters[m].implementation)
            .collect(),
        None => vec![spec.implementation],
    };
    if spec.member_of.is_some()
        || spec.traffic.is_empty()
        || spec.deployment.instances != 1
        || spec.deployment.is_global()
    {
        return None;
    }
    spec.traffic
        .iter()
        .map(|&source| {
            let src = &scenario.traffic[source];
            let log = AccessLog::of_pattern(&src.pattern)?;
            let same = implementations
                .iter()
                .all(|&i| same_gateway(i, &log.format));
            (src.retry == Retry::NONE && log.counts().with_verdict > 0 && same)
                .then_some((source, log))
        })
        .collect()
}

impl AgreementSink {
    pub fn new(scenario: &Scenario, index: usize) -> anyhow::Result<Option<AgreementSink>> {
        let Some(logs) = logs_of(scenario, index) else {
            return Ok(None);
        };
        // Delays are told apart only if every log tells them.
        let delays = logs.iter().all(|(_, log)| match &*log.format {
            Format::Nginx(n) => n.template.field("$limit_req_status").is_some(),
            _ => false,
        });
        let mut requests: Vec<Option<Requests>> =
            (0..scenario.traffic.len()).map(|_| None).collect();
        for (source, log) in logs {
            requests[source] = Some(log.requests()?);
        }
        Ok(Some(AgreementSink {
            limiter: scenario.limiters[index].name.clone(),
            requests,
            delays,
            counts: BTreeMap::new(),
            lines: Vec::new(),
            keeps: scenario
                .partition
                .map(|p| (p.by, crate::partition::members(&p, &scenario.population))),
        }))
    }
}

impl DecisionSink for AgreementSink {
    fn record(&mut self, a: &Attempt) -> anyhow::Result<()> {
        if a.attempt != 1 {
            return Ok(());
        }
        let requests = self.requests[a.traffic as usize]
            .as_mut()
            .expect("a decision on a source the limiter reads");
        let r = loop {
            let Some(r) = requests.next_request()? else {
                anyhow::bail!(
                    "agreement for {}: more decisions than log lines",
                    self.limiter
                );
            };
            let kept = match &self.keeps {
                None => true,
                Some((KeyBy::Ip, keep)) => keep[r.ip as usize],
                Some((_, keep)) => keep[r.client as usize],
            };
            if kept {
                break r;
            }
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
            self.lines.push((
                (r.line, r.client, r.time.0, gateway, ratesim, r.delay, delay),
                a.event,
            ));
        }
        Ok(())
    }
}

/// Passes decisions to two sinks (the decision log and an agreement).
pub(crate) struct Tee<'a>(
    pub Option<&'a mut (dyn DecisionSink + Send)>,
    pub Option<&'a mut AgreementSink>,
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

    fn wants_headers(&self) -> bool {
        self.0.as_ref().is_some_and(|s| s.wants_headers())
    }
}

/// Writes `agreement.csv` and `disagreements.csv` into `dir` from each
/// limiter's comparison, in limiter order, when any limiter was compared.
pub fn write(
    agreements: Vec<Option<AgreementSink>>,
    scenario: &Scenario,
    dir: &Path,
) -> anyhow::Result<()> {
    let parts: Vec<AgreementPart> = agreements
        .iter()
        .flatten()
        .map(|a| a.part(scenario))
        .collect();
    write_parts(&parts, dir)
}

/// [`write`] from each compared limiter's counts and lines (a run's, or
/// the partitions' joined by `ratesim merge`): nothing when none was.
pub fn write_parts(parts: &[AgreementPart], dir: &Path) -> anyhow::Result<()> {
    if parts.is_empty() {
        return Ok(());
    }
    let mut w = csv::Writer::from_path(dir.join(FILE))?;
    w.write_record(AGREEMENT_COLUMNS)?;
    for a in parts {
        for (g, r, n) in &a.counts {
            w.write_record([a.limiter.as_str(), g, r, &n.to_string()])?;
        }
    }
    w.flush()?;
    let mut w = csv::Writer::from_path(dir.join(LINES_FILE))?;
    w.write_record(DISAGREEMENTS_COLUMNS)?;
    for a in parts {
        for (_, fields) in &a.lines {
            w.write_record(fields)?;
        }
    }
    w.flush()?;
    Ok(())
}

impl AgreementSink {
    /// `disagreements.csv`'s rows of this limiter, each with the event
    /// that decided it.
    fn line_rows(&self, scenario: &Scenario) -> Vec<(Vec<String>, u64)> {
        self.lines
            .iter()
            .map(|&((line, client, t, g, r, gd, rd), event)| {
                let fields = vec![
                    self.limiter.clone(),
                    line.to_string(),
                    scenario.population.client_name(client).to_string(),
                    t.to_string(),
                    g.to_string(),
                    r.to_string(),
                    gd.to_string(),
                    rd.to_string(),
                ];
                (fields, event)
            })
            .collect()
    }

    /// What a key partition writes of this comparison for `ratesim merge`.
    pub fn part(&self, scenario: &Scenario) -> AgreementPart {
        AgreementPart {
            limiter: self.limiter.clone(),
            counts: self
                .counts
                .iter()
                .map(|(&(g, r), &n)| (g.to_string(), r.to_string(), n))
                .collect(),
            lines: self
                .line_rows(scenario)
                .into_iter()
                .map(|(fields, event)| (event, fields))
                .collect(),
        }
    }
}
