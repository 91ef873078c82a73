//! The application layer: what each command does, with its I/O.
//!
//! `run` writes every result file into a staging directory beside the run
//! directory and moves it into place only when all of them are complete
//! (see [`crate::staging`]), so a failed or interrupted run never leaves a
//! half-written result set. The charts and `summary.md` are drawn inside that temporary directory
//! from the files just written — the same way `ratesim plot` draws them —
//! so they are part of the same all-or-nothing result set.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::Path;

use anyhow::Context;
use rayon::prelude::*;

use crate::accesslog::agreement;
use crate::builtin;
use crate::cli::{Cli, Command, ExplainArgs, ExportCommand, ExportRedisArgs, Format, RunArgs};
use crate::clock::Nanos;
use crate::engine::{self, LimiterRun};
use crate::error::InputError;
use crate::estimate::Estimate;
use crate::explain;
use crate::progress::Progress;
use crate::report::{self, Report};
use crate::scenario::{Scenario, ALGORITHMS, IMPLEMENTATIONS};
use crate::staging::Staging;
use crate::traffic::retry::POLICIES;
use crate::traffic::PATTERNS;

pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Run(args) => run_command(args),
        Command::Validate { scenario } => {
            let s = Scenario::load(&scenario)?;
            let estimate = Estimate::of(&s);
            let mut out = io::stdout().lock();
            writeln!(
                out,
                "{}: ok — {} limiter(s), {} traffic source(s), {} over {} client(s)\nwork: {estimate}",
                s.name,
                s.limiters.len(),
                s.traffic.len(),
                s.duration,
                s.population.clients()
            )?;
            if let Some(why) = estimate.over_budget() {
                writeln!(out, "note: `ratesim run` will refuse it: {why}")?;
            }
            if let Some(warning) = estimate.state_warning() {
                writeln!(out, "warning: {warning}")?;
            }
            Ok(())
        }
        Command::List => list(),
        Command::Plot { run_dir, quiet } => plot(&run_dir, quiet),
        Command::Explain(args) => explain_command(args),
        Command::Show { name } => crate::onboard::show(&name),
        Command::Export(ExportCommand::Redis(args)) => export_redis(args),
        Command::Init(args) => {
            crate::onboard::init_command(&args.name, args.file.as_deref(), args.force)
        }
        Command::Import(args) => {
            let options = crate::import::Options {
                trace: args.trace,
                envoy_timer: args.envoy_timer,
            };
            let text = crate::import::import(&args.files, &options)?;
            let mut out = io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
            Ok(())
        }
    }
}

/// What a run writes besides `summary.csv`, `summary.json` and
/// `timeseries.csv`. The default writes neither the decision log nor charts.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOptions {
    /// Write `decisions.csv`.
    pub decisions: bool,
    /// Draw the PNG charts (`summary.md` is written either way).
    pub plots: bool,
    /// Replace the run directory even if it holds files ratesim did not
    /// write (see [`crate::staging`]).
    pub force: bool,
}

fn run_command(args: RunArgs) -> anyhow::Result<()> {
    let mut scenario = Scenario::load(&args.scenario)?;
    if let Some(seed) = args.seed {
        scenario.seed = seed;
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| scenario.default_out_dir());
    let options = RunOptions {
        decisions: args.decisions || scenario.output.decisions,
        plots: !args.no_plots,
        force: args.force,
    };
    if !args.quiet {
        if let Some(warning) = Estimate::of(&scenario).state_warning() {
            let _ = writeln!(io::stderr(), "warning: {warning}");
        }
    }
    let bar = Progress::new(scenario.limiters.len(), scenario.duration, args.quiet);
    let report = run_scenario(&scenario, &out, &options, &|i, t, n| bar.report(i, t, n));
    bar.finish();
    let report = report?;
    if args.quiet {
        return Ok(());
    }
    let mut stdout = io::stdout().lock();
    match args.format {
        Format::Json => stdout.write_all(report::json::to_string(&report).as_bytes())?,
        Format::Table => {
            stdout.write_all(report::table::render(&report).as_bytes())?;
            let top = report::top_keys::read(&out);
            stdout.write_all(report::top_keys::render(&top, 5, false).as_bytes())?;
            stdout.write_all(agreement::render(&out, false).as_bytes())?;
            writeln!(stdout, "\nresults in {}", out.display())?;
        }
    }
    stdout.flush()?;
    Ok(())
}

/// Simulates every limiter of `scenario` and writes the run directory `out`.
/// Refuses (as bad input) a scenario over the work budget of
/// [`crate::estimate`] unless `options.force`.
///
/// `progress(limiter, time reached, events)` is called as each limiter's
/// simulation advances (limiters run in parallel).
pub fn run_scenario(
    scenario: &Scenario,
    out: &Path,
    options: &RunOptions,
    progress: &(dyn Fn(usize, Nanos, u64) + Sync),
) -> anyhow::Result<Report> {
    if !options.force {
        if let Some(why) = Estimate::of(scenario).over_budget() {
            return Err(InputError::new(format!("{}: {why}", scenario.name)).into());
        }
    }
    let staging = Staging::new(out, options.force)?;
    let report = simulate_into(scenario, staging.path(), options, progress)?;
    staging.commit(&scenario.name)?;
    Ok(report)
}

fn simulate_into(
    scenario: &Scenario,
    dir: &Path,
    options: &RunOptions,
    progress: &(dyn Fn(usize, Nanos, u64) + Sync),
) -> anyhow::Result<Report> {
    let decisions = options.decisions;
    let part = |i: usize| dir.join(format!("decisions.part{i}.csv"));
    let agreements = agreement::Slots::default();
    let runs: Vec<LimiterRun> = (0..scenario.limiters.len())
        .into_par_iter()
        .map(|i| -> anyhow::Result<LimiterRun> {
            let progress = |t: Nanos, events: u64| progress(i, t, events);
            let mut agree = agreement::Agreement::new(scenario, i)?;
            if !decisions {
                let sink = agree.as_mut().map(|a| a as &mut dyn engine::DecisionSink);
                let run = engine::simulate(scenario, i, sink, &progress)?;
                agreements.put(i, agree);
                return Ok(run);
            }
            let spec = &scenario.limiters[i];
            let file = File::create(part(i)).context("cannot write the decision log")?;
            let mut log = report::csv::DecisionLog::new(
                BufWriter::with_capacity(1 << 16, file),
                &spec.name,
                spec.key_by,
                &scenario.population,
            );
            let run = engine::simulate(
                scenario,
                i,
                Some(&mut agreement::Tee(&mut log, agree.as_mut())),
                &progress,
            )?;
            log.finish()?.flush()?;
            agreements.put(i, agree);
            Ok(run)
        })
        .collect::<anyhow::Result<_>>()?;
    agreements.write(scenario, dir)?;
    report::top_keys::write(
        &report::top_keys::collect(scenario, &runs),
        File::create(dir.join(report::top_keys::FILE)).context("cannot write top_keys.csv")?,
    )?;

    let report = Report::new(scenario, runs);
    let create = |name: &str| -> anyhow::Result<BufWriter<File>> {
        Ok(BufWriter::new(
            File::create(dir.join(name)).with_context(|| format!("cannot write {name}"))?,
        ))
    };
    report::csv::summary(&report, create("summary.csv")?)?;
    report::csv::timeseries(&report, create("timeseries.csv")?)?;
    let mut json = create("summary.json")?;
    json.write_all(report::json::to_string(&report).as_bytes())?;
    json.flush()?;
    if decisions {
        let mut all = create("decisions.csv")?;
        report::csv::DecisionLog::header(&mut all)?;
        for i in 0..scenario.limiters.len() {
            let mut f = File::open(part(i))?;
            io::copy(&mut f, &mut all)?;
            fs::remove_file(part(i))?;
        }
        all.flush()?;
    }
    // Drawn from the files just written, exactly as `ratesim plot` does.
    report::charts::render_dir(dir, options.plots)?;
    Ok(report)
}

/// `ratesim plot RUN_DIR`: redraws the charts and `summary.md` from the
/// run directory's files, without simulating anything.
fn plot(dir: &Path, quiet: bool) -> anyhow::Result<()> {
    let (data, written) = report::charts::render_dir(dir, true)?;
    if !quiet {
        let mut out = io::stdout().lock();
        let names: Vec<&str> = written.iter().map(|c| c.file).collect();
        writeln!(
            out,
            "{} charts in {}: {}, and {}",
            data.name,
            dir.display(),
            names.join(", "),
            report::markdown::FILE
        )?;
    }
    Ok(())
}

/// `ratesim explain TOPIC`: runs the topic's scenario and prints the
/// walkthrough.
fn explain_command(args: ExplainArgs) -> anyhow::Result<()> {
    let text = explain::run(&args.topic, args.out.as_deref())?;
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// `ratesim export redis`: one script on stdout, or every script into a
/// directory (each file written whole, then renamed into place).
fn export_redis(args: ExportRedisArgs) -> anyhow::Result<()> {
    let known = || {
        crate::redis::SCRIPTS
            .iter()
            .map(|s| s.algorithm)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(dir) = args.all {
        fs::create_dir_all(&dir).map_err(|e| {
            InputError::new(format!("--all {}: cannot be created: {e}", dir.display()))
        })?;
        for s in crate::redis::SCRIPTS {
            let path = dir.join(format!("{}.lua", s.algorithm));
            let tmp = dir.join(format!(".{}.lua.tmp-{}", s.algorithm, std::process::id()));
            fs::write(&tmp, s.text)
                .and_then(|()| fs::rename(&tmp, &path))
                .map_err(|e| {
                    let _ = fs::remove_file(&tmp);
                    InputError::new(format!("--all {}: cannot be written: {e}", path.display()))
                })?;
        }
        return Ok(());
    }
    let name = args.algorithm.unwrap_or_default();
    let script = crate::redis::script(&name).ok_or_else(|| {
        InputError::new(format!(
            "export redis: {} — no script for that algorithm; scripts: {}",
            crate::error::quoted(&name),
            known()
        ))
    })?;
    let mut out = io::stdout().lock();
    out.write_all(script.text.as_bytes())?;
    out.flush()?;
    Ok(())
}

fn list() -> anyhow::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "Built-in scenarios (ratesim run NAME):")?;
    for b in builtin::SCENARIOS {
        let description = Scenario::load(b.name)
            .map(|s| s.description)
            .unwrap_or_default();
        writeln!(out, "  {:<16} {}", b.name, first_sentence(&description))?;
    }
    writeln!(
        out,
        "  (ratesim show NAME prints one; ratesim init NAME writes it to a file to edit)"
    )?;
    writeln!(out, "\nAlgorithms ([[limiter]] algorithm = …):")?;
    for (name, what) in ALGORITHMS {
        writeln!(out, "  {name:<16} {what}")?;
    }
    writeln!(
        out,
        "\nImplementations ([[limiter]] implementation = …; fields written beside it override):"
    )?;
    for i in IMPLEMENTATIONS {
        writeln!(out, "  {:<22} {}", i.name, i.maps_to())?;
        writeln!(out, "  {:<22} {}", "", i.about)?;
    }
    writeln!(out, "\nTraffic patterns ([[traffic]] pattern = …):")?;
    for (name, what) in PATTERNS {
        writeln!(out, "  {name:<16} {what}")?;
    }
    writeln!(out, "\nRetry policies ([traffic.retry] policy = …):")?;
    for (name, what) in POLICIES {
        writeln!(out, "  {name:<16} {what}")?;
    }
    writeln!(
        out,
        "\nkey_by (every limiter): \"client\" (default), \"ip\", \"global\""
    )?;
    writeln!(out, "\nWalkthroughs (ratesim explain TOPIC):")?;
    for t in explain::TOPICS {
        writeln!(out, "  {:<16} {}", t.name, t.about)?;
    }
    Ok(())
}

fn first_sentence(s: &str) -> &str {
    s.lines().next().unwrap_or("").trim()
}
