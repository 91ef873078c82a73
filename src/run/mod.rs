//! Simulate a scenario into a run directory: the library behind `ratesim
//! run`, the walkthroughs of [`crate::explain`], the benches and the tests.
//!
//! [`run_scenario`] writes every result file into a staging directory beside
//! the run directory and moves it into place only when all of them are
//! complete (see [`crate::staging`]), so a failed or interrupted run never
//! leaves a half-written result set. The charts and `summary.md` are drawn
//! inside that temporary directory from the files just written — the same
//! way `ratesim plot` draws them — so they are part of the same
//! all-or-nothing result set.

pub mod agreement;

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::Path;

use anyhow::Context;

use crate::clock::Nanos;
use crate::engine::{self, LimiterRun};
use crate::error::InputError;
use crate::estimate::Estimate;
use crate::partition::journal::Sink;
use crate::report::{self, Report};
use crate::scenario::echo::Echo as _;
use crate::scenario::Scenario;
use crate::staging::Staging;

/// What a run writes besides `summary.csv`, `summary.json` and
/// `timeseries.csv`. The default writes neither the decision log, nor
/// charts, nor `report.html`.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Write `decisions.csv`.
    pub decisions: bool,
    /// With the RateLimit header columns (docs/semantics.md §11).
    pub headers: bool,
    /// Draw the PNG charts (`summary.md` is written either way).
    pub plots: bool,
    /// Write `report.html`.
    pub html: bool,
    /// Run past the work budget of [`crate::estimate`].
    pub no_budget: bool,
    /// How the run was asked for, written as `run.json` (which
    /// `report.html` shows); none writes no `run.json`.
    pub invocation: Option<crate::rundir::invocation::Invocation>,
}

/// Simulates every limiter of `scenario` and writes the run directory `out`.
/// Refuses (as bad input) a scenario over the work budget of
/// [`crate::estimate`], or needing more memory than the machine has
/// available, unless `options.no_budget`; and a run directory that
/// holds files ratesim did not write or the run's own inputs (see
/// [`crate::staging`]), whatever the options.
///
/// `progress(limiter, time reached, events)` is called as each limiter's
/// simulation advances (see [`engine::simulate_all`]).
pub fn run_scenario(
    scenario: &Scenario,
    out: &Path,
    options: &RunOptions,
    progress: &(dyn Fn(usize, Nanos, u64) + Sync),
) -> anyhow::Result<Report> {
    if !options.no_budget {
        if let Some(why) = Estimate::of_run(scenario, options.decisions).refusal() {
            return Err(InputError::new(format!("{}: {why}", scenario.name)).into());
        }
    }
    let staging = Staging::new(out, &scenario.inputs)?;
    let report = simulate_into(scenario, staging.path(), options, progress)?;
    staging.commit(&scenario.name)?;
    Ok(report)
}

/// A journal's file.
struct FileSink(BufWriter<File>);

impl Sink for FileSink {
    fn put(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        Ok(self.0.write_all(bytes)?)
    }

    fn finish(&mut self) -> anyhow::Result<()> {
        Ok(self.0.flush()?)
    }
}

/// A key partition's own files (see [`crate::rundir::partition`]):
/// `partition.bin`, every limiter's recorder and footprint, and
/// `partition.json`. (The journals were written as the run went.)
fn write_partition(
    scenario: &Scenario,
    runs: &[LimiterRun],
    agrees: &[Option<agreement::AgreementSink>],
    options: &RunOptions,
    dir: &Path,
) -> anyhow::Result<()> {
    use crate::partition::wire::Put;
    use crate::rundir::partition::{PartitionInfo, Shape, PARTITION_BIN, PARTITION_JSON};
    let p = scenario.partition.expect("a key partition's run");
    let mut bin = Put::default();
    for run in runs {
        run.recorder.save(&mut bin);
        let f = &run.footprint;
        bin.u128(f.byte_ns);
        bin.u128(f.key_ns);
        bin.u64(f.peak_bytes);
        bin.u64(f.peak_total);
        bin.u128(f.redis_byte_ns);
        bin.u64(f.redis_peak_bytes);
        bin.u64(f.redis_peak_total);
        bin.u64(f.span);
        bin.u64(f.keys);
    }
    fs::write(dir.join(PARTITION_BIN), &bin.0).context("cannot write partition.bin")?;
    let info = PartitionInfo {
        keys: crate::rundir::invocation::KeyShare {
            k: p.k,
            n: p.n,
            by: p.by.as_str().to_string(),
            seed: scenario.seed,
        },
        shape: Shape::of(scenario),
        echo: scenario.echo(),
        decisions: options.decisions,
        headers: options.headers,
        plots: options.plots,
        html: options.html,
        peak_keys: runs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                r.recorder
                    .peak_at
                    .map(|(_, k)| report::key_name(scenario, i, k))
            })
            .collect(),
        agreements: agrees
            .iter()
            .map(|a| a.as_ref().map(|a| a.part(scenario)))
            .collect(),
    };
    let mut text = serde_json::to_string_pretty(&info)?;
    text.push('\n');
    fs::write(dir.join(PARTITION_JSON), text).context("cannot write partition.json")?;
    Ok(())
}

/// Simulates every limiter of `scenario` and writes every result file into
/// `dir` (an existing directory, usually a staging one), then draws the
/// charts and `summary.md` from the files just written.
pub(crate) fn simulate_into(
    scenario: &Scenario,
    dir: &Path,
    options: &RunOptions,
    progress: &(dyn Fn(usize, Nanos, u64) + Sync),
) -> anyhow::Result<Report> {
    let decisions = options.decisions;
    let part = |i: usize| dir.join(format!("decisions.part{i}.csv"));
    let n = scenario.limiters.len();
    // Agreement with the gateway's own verdicts, when a replayed access log
    // carries them (see [`agreement`]).
    let mut agrees: Vec<Option<agreement::AgreementSink>> = (0..n)
        .map(|i| agreement::AgreementSink::new(scenario, i))
        .collect::<anyhow::Result<_>>()?;
    let mut logs = Vec::new();
    if decisions {
        for i in 0..scenario.limiters.len() {
            let file = File::create(part(i)).context("cannot write the decision log")?;
            let log =
                report::csv::DecisionLog::of(BufWriter::with_capacity(1 << 16, file), scenario, i);
            logs.push(match options.headers {
                true => log.with_headers(report::csv::HeaderPolicy::of(scenario, i)),
                false => log,
            });
        }
    }
    let runs: Vec<LimiterRun> = {
        let mut logs = logs
            .iter_mut()
            .map(Some)
            .chain(std::iter::repeat_with(|| None));
        let mut tees: Vec<agreement::Tee> = agrees
            .iter_mut()
            .map(|a| {
                let log = logs
                    .next()
                    .flatten()
                    .map(|l| l as &mut (dyn engine::DecisionSink + Send));
                agreement::Tee(log, a.as_mut())
            })
            .collect();
        let sinks = tees
            .iter_mut()
            .map(|t| {
                t.is_used()
                    .then_some(t as &mut (dyn engine::DecisionSink + Send))
            })
            .collect();
        let journals = match scenario.partition {
            Some(_) => (0..n)
                .map(|i| {
                    let path = dir.join(crate::rundir::partition::partition_journal(i));
                    let out = BufWriter::with_capacity(
                        1 << 16,
                        File::create(path).context("cannot write the partition's journal")?,
                    );
                    Ok(Some(Box::new(FileSink(out)) as Box<dyn Sink>))
                })
                .collect::<anyhow::Result<_>>()?,
            None => Vec::new(),
        };
        engine::simulate_journaled(scenario, sinks, journals, progress)?
    };
    if scenario.partition.is_some() {
        write_partition(scenario, &runs, &agrees, options, dir)?;
    }
    for log in logs {
        log.finish()?.flush()?;
    }
    agreement::write(agrees, scenario, dir)?;
    report::top_keys::write(
        &report::top_keys::collect(scenario, &runs),
        File::create(dir.join(report::top_keys::FILE)).context("cannot write top_keys.csv")?,
    )?;

    let report = Report::new(scenario, runs, scenario.echo());
    let create = |name: &str| -> anyhow::Result<BufWriter<File>> {
        Ok(BufWriter::new(
            File::create(dir.join(name)).with_context(|| format!("cannot write {name}"))?,
        ))
    };
    for (name, export) in report::FILES {
        let mut out = create(name)?;
        export(&report, &mut out).with_context(|| format!("cannot write {name}"))?;
        out.flush()?;
    }
    if decisions {
        let mut all = create(crate::rundir::DECISIONS_CSV)?;
        report::csv::DecisionLog::header(&mut all, options.headers)?;
        for i in 0..scenario.limiters.len() {
            let mut f = File::open(part(i))?;
            io::copy(&mut f, &mut all)?;
            fs::remove_file(part(i))?;
        }
        all.flush()?;
    }
    if let Some(invocation) = &options.invocation {
        let mut text = serde_json::to_string_pretty(invocation)?;
        text.push('\n');
        fs::write(dir.join(crate::rundir::RUN_JSON), text).context("cannot write run.json")?;
    }
    // Drawn from the files just written, exactly as `ratesim plot` does.
    report::render::render_dir(dir, options.plots, options.html)?;
    Ok(report)
}
