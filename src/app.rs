//! The application layer: what each command does, with its terminal I/O.
//!
//! Only the commands live here; simulating a scenario into a run directory
//! is the library's [`crate::run`], which the walkthroughs, the benches
//! and the tests call too.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

use crate::builtin;
use crate::cli::{
    Cli, Command, DiffArgs, ExplainArgs, ExportCommand, ExportRedisArgs, OutputFormat, RunArgs,
};
use crate::error::InputError;
use crate::estimate::Estimate;
use crate::explain;
use crate::limiter::ALGORITHMS;
use crate::overrides::Override;
use crate::progress::Progress;
use crate::report;
use crate::report::agreement;
use crate::run::{run_scenario, RunOptions};
use crate::rundir::invocation::{Invocation, KeyShare};
use crate::scenario::text::ScenarioFile;
use crate::scenario::traffic::retry::POLICIES;
use crate::scenario::traffic::PATTERNS;
use crate::scenario::Load as _;
use crate::scenario::{Scenario, IMPLEMENTATIONS};

pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Run(args) => {
            let force = (args.force, args.quiet);
            run_command(args).inspect(|()| note_retired_force(force))
        }
        Command::Sweep(args) => {
            let force = match &args.command {
                Some(crate::cli::SweepCommand::Merge(m)) => (m.force, m.quiet),
                None => (args.force, args.quiet),
            };
            crate::sweep::command(args).inspect(|()| note_retired_force(force))
        }
        Command::Merge(args) => crate::merge::command(args),
        Command::Validate { scenario } => {
            let s = load(&scenario, &[])?;
            let estimate = Estimate::of(&s);
            let mut out = io::stdout().lock();
            let chains = s.limiters.iter().filter(|l| l.chain.is_some()).count();
            writeln!(
                out,
                "{}: ok — {} limiter(s){}, {} traffic source(s), {} over {} client(s)\nwork: {estimate}",
                s.name,
                s.limiters.len() - chains,
                match chains {
                    0 => String::new(),
                    1 => " and 1 chain".to_string(),
                    n => format!(" and {n} chains"),
                },
                s.traffic.len(),
                s.duration,
                s.population.clients()
            )?;
            if let Some(why) = estimate.refusal() {
                writeln!(out, "note: `ratesim run` will refuse it: {why}")?;
            }
            if let Some(warning) = estimate.state_warning() {
                writeln!(out, "warning: {warning}")?;
            }
            for warning in idle_locations(&s) {
                writeln!(out, "warning: {warning}")?;
            }
            Ok(())
        }
        Command::List => list(),
        Command::Plot { run_dir, quiet } => plot(&run_dir, quiet),
        Command::Explain(args) => explain_command(args),
        Command::Show { name } => crate::onboard::show(&name),
        Command::Diff(args) => diff(args),
        Command::Export(ExportCommand::Redis(args)) => export_redis(args),
        Command::Export(ExportCommand::Nginx(args)) => {
            let s = load(&args.scenario, &[])?;
            let text = crate::export::nginx::config(&s, &args.limiter, args.key.as_deref())?;
            io::stdout().lock().write_all(text.as_bytes())?;
            Ok(())
        }
        Command::Export(ExportCommand::NginxLua(args)) => {
            let s = load(&args.scenario, &[])?;
            let options = crate::export::nginx_lua::Options {
                redis: &args.redis,
                key: args.key.as_deref(),
            };
            let script = |algorithm: &str| {
                crate::redis::script(algorithm).map(|s| crate::export::nginx_lua::Script {
                    text: s.text,
                    sha: s.sha(),
                })
            };
            let text = crate::export::nginx_lua::fragment(&s, &args.limiter, &options, &script)?;
            io::stdout().lock().write_all(text.as_bytes())?;
            Ok(())
        }
        Command::Export(ExportCommand::Envoy(args)) => {
            let s = load(&args.scenario, &[])?;
            let text = crate::export::envoy::config(&s, &args.limiter)?;
            io::stdout().lock().write_all(text.as_bytes())?;
            Ok(())
        }
        Command::Init(args) => {
            crate::onboard::init_command(&args.name, args.file.as_deref(), args.force)
        }
        Command::Import(args) => {
            let options = crate::import::ImportOptions {
                trace: args.trace,
                envoy_timer: args.envoy_timer,
                log_format: args.log_format,
            };
            let imported = crate::import::import(&args.files, &options)?;
            for n in &imported.notes {
                let _ = writeln!(io::stderr(), "note: {n}");
            }
            let mut out = io::stdout().lock();
            out.write_all(imported.scenario.as_bytes())?;
            out.flush()?;
            Ok(())
        }
    }
}

/// The scenario `arg` with `sets` applied, and its `[sweep]` table checked
/// as `ratesim sweep` would (what `run` and `validate` read).
fn load(arg: &str, sets: &[Override]) -> Result<Scenario, InputError> {
    Ok(load_file(arg, sets)?.1)
}

/// [`load`], with the scenario's file as read.
fn load_file(arg: &str, sets: &[Override]) -> Result<(ScenarioFile, Scenario), InputError> {
    let file = ScenarioFile::read(arg)?;
    let scenario = file.with(sets)?;
    crate::sweep::check_table(&file, sets, &scenario)?;
    Ok((file, scenario))
}

/// The access-log sources of `s` whose `location` none of the log's lines
/// are in: a location idle that day, whose limiters see no request (said,
/// since a location mistyped looks the same).
fn idle_locations(s: &Scenario) -> Vec<String> {
    s.traffic
        .iter()
        .filter_map(|t| {
            let log = crate::accesslog::AccessLog::of_pattern(&t.pattern)?;
            let location = log.options.location.as_ref()?;
            (log.rows() == 0).then(|| {
                let skipped = match log.counts().skipped {
                    0 => String::new(),
                    n => format!(
                        "; {n} bad line{} skipped, in locations not known",
                        if n == 1 { " was" } else { "s were" }
                    ),
                };
                format!(
                    "traffic {}: no line of {} is inside location {} ({} are outside it{skipped}): its limiters see no request",
                    crate::error::quoted(&t.name),
                    crate::error::quoted(&log.shown),
                    crate::error::quoted(&location.shown()),
                    log.counts().filtered
                )
            })
        })
        .collect()
}

/// `--force` of `run`, `sweep` and `sweep merge`, kept so older scripts
/// parse: it replaces nothing, and says so on stderr once the command has
/// succeeded (unless `--quiet`; an error is the first thing said).
fn note_retired_force((force, quiet): (bool, bool)) {
    if force && !quiet {
        let _ = writeln!(
            io::stderr(),
            "note: --force does nothing any more: an output directory is replaced only when it holds nothing but ratesim's own files, whatever the flags (--no-budget lifts the work budget)"
        );
    }
}

fn run_command(args: RunArgs) -> anyhow::Result<()> {
    let sets = crate::overrides::parse_all(&args.set, "--set")?;
    let (file, mut scenario) = load_file(&args.scenario, &sets)?;
    if !args.quiet && !scenario.reads_default_limit {
        if let Some(o) = sets.iter().find(|o| o.path == "defaults.limit") {
            let _ = writeln!(
                io::stderr(),
                "warning: {}: nothing reads [defaults] limit — every limiter sets its own policy, so it changes no result",
                o.arg
            );
        }
    }
    if let Some(seed) = args.seed {
        scenario.seed = seed;
    }
    if let Some(text) = &args.keys {
        let ((k, n), from) = crate::jobarray::k_of_n_here("--keys", text)?;
        let part = crate::partition::KeyPartition { k, n };
        part.apply(&mut scenario)?;
        if !args.quiet {
            let _ = writeln!(
                io::stderr(),
                "keys {k}/{n}{}: the {} keys whose FNV-1a hash mod {n} is {}",
                from.map(|f| format!(" (from {f})")).unwrap_or_default(),
                scenario.partition.map_or("", |p| p.by.as_str()),
                k - 1
            );
        }
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| scenario.default_out_dir());
    let options = RunOptions {
        decisions: args.decisions.is_some() || scenario.output.decisions,
        headers: args.decisions == Some(crate::cli::DecisionsMode::Headers)
            || scenario.output.headers,
        plots: !args.no_plots,
        html: !args.no_html,
        no_budget: args.no_budget,
        invocation: Some(Invocation {
            keys: scenario.partition.map(|p| KeyShare {
                k: p.k,
                n: p.n,
                by: p.by.as_str().to_string(),
                seed: scenario.seed,
            }),
            ..Invocation::of_process(file.text)
        }),
    };
    if !args.quiet {
        let estimate = Estimate::of_run(&scenario, options.decisions);
        // A run about to be refused says why in its error, not twice.
        let refused = !options.no_budget && estimate.refusal().is_some();
        if let Some(warning) = estimate.state_warning().filter(|_| !refused) {
            let _ = writeln!(io::stderr(), "warning: {warning}");
        }
        for warning in idle_locations(&scenario) {
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
        OutputFormat::Json => report::json::write(&report, &mut stdout)?,
        OutputFormat::Table => {
            report::table::write(&report, &mut stdout)?;
            let top = report::top_keys::read(&out);
            stdout.write_all(report::top_keys::render(&top, 5, false).as_bytes())?;
            stdout.write_all(agreement::render(&out, false).as_bytes())?;
            writeln!(stdout, "\nresults in {}", out.display())?;
        }
    }
    stdout.flush()?;
    Ok(())
}

/// `ratesim plot RUN_DIR`: redraws the charts, `summary.md` and
/// `report.html` from the run directory's files, without simulating
/// anything.
fn plot(dir: &Path, quiet: bool) -> anyhow::Result<()> {
    let (data, written) = report::render::render_dir(dir, true, true)?;
    if !quiet {
        let mut out = io::stdout().lock();
        let names: Vec<&str> = written.iter().map(|c| c.file).collect();
        writeln!(
            out,
            "{} charts in {}: {}, {} and {}",
            data.name,
            dir.display(),
            names.join(", "),
            report::markdown::FILE,
            report::html::run::FILE
        )?;
    }
    Ok(())
}

/// `ratesim diff A B [--out DIR]`: the comparison on stdout, and with
/// `--out` as `DIR/diff.html`, written as a run directory is (all or
/// nothing, never over a file ratesim did not write, nor over A or B).
fn diff(args: DiffArgs) -> anyhow::Result<()> {
    let d = crate::diff::Diff::of(&args.a, &args.b)?;
    if let Some(out) = &args.out {
        let staging = crate::staging::Staging::new(out, &[args.a.clone(), args.b.clone()])?;
        let path = staging.path().join(crate::diff::page::FILE);
        fs::write(&path, crate::diff::page::render(&d))
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        staging.commit("diff")?;
    }
    let mut out = io::stdout().lock();
    out.write_all(d.render().as_bytes())?;
    if let Some(dir) = &args.out {
        writeln!(out, "\n{} in {}", crate::diff::page::FILE, dir.display())?;
    }
    out.flush()?;
    Ok(())
}

/// `ratesim export redis --all DIR`: every script into `DIR` as
/// `ALGORITHM.lua`. A file there of a script's name is replaced only when
/// it holds exactly that script (so nothing changes); anything else there
/// — a user's script, an edited or older copy, a link — is refused, all
/// of them checked before any file is written: no file ratesim did not
/// write is ever overwritten.
fn export_all(dir: &Path) -> anyhow::Result<()> {
    let scripts = crate::redis::SCRIPTS;
    let path_of = |s: &crate::redis::Script| dir.join(format!("{}.lua", s.algorithm));
    let mut refused = Vec::new();
    for s in scripts {
        let path = path_of(s);
        match fs::symlink_metadata(&path) {
            Err(_) => {}
            Ok(m) if m.is_file() && fs::read(&path).is_ok_and(|b| b == s.text.as_bytes()) => {}
            Ok(_) => refused.push(crate::error::quoted(&path.display().to_string())),
        }
    }
    if !refused.is_empty() {
        return Err(InputError::new(format!(
            "--all {}: {} already {} and {} not the script ratesim writes; ratesim never \
             overwrites a file it did not write — move {} away, or name another directory",
            dir.display(),
            refused.join(", "),
            if refused.len() == 1 {
                "exists"
            } else {
                "exist"
            },
            if refused.len() == 1 { "is" } else { "are" },
            if refused.len() == 1 { "it" } else { "them" },
        ))
        .into());
    }
    fs::create_dir_all(dir)
        .map_err(|e| InputError::new(format!("--all {}: cannot be created: {e}", dir.display())))?;
    for s in scripts {
        let path = path_of(s);
        if path.exists() {
            // Checked above: it holds this very script.
            continue;
        }
        let tmp = dir.join(format!(".{}.lua.tmp-{}", s.algorithm, std::process::id()));
        // A file of the temporary's name is someone's: never written over.
        let written = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .and_then(|mut f| f.write_all(s.text.as_bytes()));
        let moved = written.and_then(|()| match fs::symlink_metadata(&path) {
            // Appeared since the check: left as it is.
            Ok(_) => Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "appeared while ratesim was writing; it is left as it is",
            )),
            Err(_) => fs::rename(&tmp, &path),
        });
        moved.map_err(|e| {
            let _ = fs::remove_file(&tmp);
            InputError::new(format!("--all {}: cannot be written: {e}", path.display()))
        })?;
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
        return export_all(&dir);
    }
    let target = args.target.unwrap_or_default();
    let text = match args.limiter {
        Some(limiter) => {
            let s = load(&target, &[])?;
            let call = crate::export::redis::call(&s, &limiter)?;
            let script = crate::redis::script(call.algorithm).ok_or_else(|| {
                InputError::new(format!(
                    "limiter {}: {} has no script; scripts: {}",
                    crate::error::quoted(&limiter),
                    call.algorithm,
                    known()
                ))
            })?;
            call.render(&script.sha())
        }
        None => match crate::redis::script(&target) {
            Some(script) => script.text.to_string(),
            None => return Err(not_a_script(&target, &known()).into()),
        },
    };
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Why `export redis TARGET` (no --limiter) prints nothing: TARGET is a
/// scenario, which needs --limiter NAME, or no algorithm with a script.
fn not_a_script(target: &str, known: &str) -> InputError {
    let quoted = crate::error::quoted(target);
    if Path::new(target).is_file() || builtin::find(target).is_some() {
        let names = match load(target, &[]) {
            Ok(s) => {
                let names: Vec<&str> = s.limiters.iter().map(|l| l.name.as_str()).collect();
                format!(" (its limiters: {})", names.join(", "))
            }
            Err(_) => String::new(),
        };
        return InputError::new(format!(
            "export redis {quoted}: a scenario — add --limiter NAME to print that limiter's EVALSHA call{names}; without --limiter, name an algorithm: {known}"
        ));
    }
    InputError::new(format!(
        "export redis: {quoted} — no script for that algorithm; scripts: {known}"
    ))
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
