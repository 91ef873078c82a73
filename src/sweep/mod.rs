//! `ratesim sweep`: one scenario over a grid of values (docs/semantics.md §7).
//!
//! `--vary PATH=LIST` (repeatable; or `vary = [...]` in the scenario's
//! `[sweep]` table) gives an axis; the grid is their Cartesian product,
//! the last axis changing fastest ([`grid`]). Each point is the scenario's
//! TOML with `--set` and the point's values applied before validation,
//! exactly as `ratesim run S --set …` builds it, so a point's rows of
//! `sweep.csv` are byte for byte that run's `summary.csv` rows, each
//! followed by its `sources.csv` cells per source (`COLUMN[SOURCE]`,
//! docs/semantics.md §3). Points run in parallel (rayon, all cores; a
//! point's limiters share its arrivals, as a run's do), and their rows are
//! joined in point order: `sweep.csv` is the same for any number of
//! threads.
//!
//! The sweep directory is written all or nothing like a run directory
//! ([`crate::staging`]): `sweep.csv`, `sweep.json` ([`manifest`]), and for
//! an unsharded sweep the charts ([`line`], [`heatmap`]),
//! `recommendation.md` ([`recommend`]) and `summary.md` ([`render`]), all
//! drawn from `sweep.csv` and `sweep.json` alone — which is why `sweep
//! merge` ([`merge`]) of the shards of `--shard K/N` reproduces them
//! exactly.

pub mod grid;
pub mod heatmap;
pub mod line;
pub mod manifest;
pub mod merge;
pub mod page;
pub mod recommend;
pub mod recommended;
pub mod render;
pub mod table;

use std::io::{self, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::Context;
use rayon::prelude::*;
use serde::Deserialize;

use crate::cli::{SweepArgs, SweepCommand};
use crate::engine;
use crate::error::InputError;
use crate::estimate::{Estimate, BUDGET_DECISIONS};
use crate::overrides::{self, Override};
use crate::progress::PointProgress;
use crate::report::{self, Report};
use crate::scenario::echo::Echo as _;
use crate::scenario::text::ScenarioFile;
use crate::scenario::Scenario;
use crate::staging::Staging;
use grid::{Axis, Grid, Shard, MAX_POINTS};
use manifest::Manifest;
use recommend::{Criteria, Goal};

/// The sweep's table of results.
pub const CSV: &str = crate::rundir::SWEEP_CSV;

/// A scenario's `[sweep]` table.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepTable {
    #[serde(default)]
    vary: Vec<String>,
    #[serde(default)]
    require: Vec<String>,
    minimize: Option<String>,
    maximize: Option<String>,
    metric: Option<String>,
}

fn sweep_table(file: &ScenarioFile, table: &toml::Table) -> Result<SweepTable, InputError> {
    match table.get("sweep") {
        None => Ok(SweepTable::default()),
        Some(v) => v.clone().try_into().map_err(|e: toml::de::Error| {
            InputError::new(format!(
                "{}: sweep: {} — accepted: vary = [\"PATH=LIST\", ...], require = [\"COLUMN<=X\", ...], minimize, maximize, metric",
                file.place,
                e.message().trim()
            ))
        }),
    }
}

/// Everything a sweep needs, checked.
pub struct Plan {
    pub file: ScenarioFile,
    pub table: toml::Table,
    pub sets: Vec<Override>,
    pub grid: Grid,
    pub shard: Shard,
    pub goal: Goal,
    pub metric: Option<String>,
    /// The scenario's name (of the base point).
    pub name: String,
    /// Its sources' names ([`Scenario::source_names`]), for the
    /// `COLUMN[SOURCE]` columns.
    pub sources: Vec<String>,
}

/// `sweep.csv`'s columns after the summary's (docs/semantics.md §3): every
/// `sources.csv` column from `clients` on, per source, as `COLUMN[SOURCE]`.
pub fn source_columns(sources: &[String]) -> Vec<String> {
    sources
        .iter()
        .flat_map(|s| {
            crate::rundir::summary::SourceRow::SWEPT
                .iter()
                .map(move |c| format!("{c}[{s}]"))
        })
        .collect()
}

impl Plan {
    /// Point `i`'s overrides: `--set`, then the point's values.
    pub fn overrides(&self, i: usize) -> Vec<Override> {
        let mut o = self.sets.clone();
        o.extend(self.grid.overrides(i));
        o
    }

    /// Point `i`'s scenario.
    pub fn scenario(&self, i: usize) -> Result<Scenario, InputError> {
        self.file.with_table(self.table.clone(), &self.overrides(i))
    }

    /// The points this shard runs.
    pub fn points(&self) -> Vec<usize> {
        (0..self.grid.size() as usize)
            .filter(|&i| self.shard.has(i))
            .collect()
    }

    /// The columns of `sweep.csv`.
    pub fn columns(&self) -> Vec<String> {
        let mut c: Vec<String> = self.grid.axes.iter().map(|a| a.path.clone()).collect();
        c.extend(report::csv::summary_columns());
        c.extend(source_columns(&self.sources));
        c
    }

    /// The manifest of a sweep into the directory `out`.
    fn manifest(&self, rows: Vec<(usize, usize)>, out: &Path) -> Manifest {
        let scenario_file = match &self.file.origin {
            crate::scenario::Origin::File(p) => {
                match (manifest::absolute(p), manifest::absolute(out)) {
                    (Ok(file), Ok(dir)) => {
                        Some(manifest::relative(&dir, &file).display().to_string())
                    }
                    _ => None,
                }
            }
            crate::scenario::Origin::Builtin(_) => None,
        };
        Manifest {
            ratesim: env!("CARGO_PKG_VERSION").to_string(),
            scenario: self.name.clone(),
            scenario_hash: manifest::fingerprint(&self.file.text),
            scenario_text: self.file.text.clone(),
            scenario_file,
            set: self
                .sets
                .iter()
                .map(|o| format!("{}={}", o.path, o.value))
                .collect(),
            grid: self.grid.clone(),
            points: self.grid.size() as u64,
            shard: self.shard,
            goal: self.goal.clone(),
            metric: self.metric.clone(),
            rows,
        }
    }
}

/// Reads and checks everything the command line and `[sweep]` say, before
/// anything runs: any bad input is an error here, and nothing is written.
pub fn plan(args: &SweepArgs) -> Result<Plan, InputError> {
    let arg = args.scenario.as_deref().unwrap_or_default();
    let file = ScenarioFile::read(arg)?;
    let table = file.table()?;
    let spec = sweep_table(&file, &table)?;
    let sets = overrides::parse_all(&args.set, "--set")?;
    let base = file.with_table(table.clone(), &sets)?;

    let (vary, flag) = if args.vary.is_empty() {
        (&spec.vary, format!("{}: [sweep] vary", file.place))
    } else {
        (&args.vary, "--vary".to_string())
    };
    if vary.is_empty() {
        return Err(InputError::new(format!(
            "{arg}: nothing to vary — give --vary PATH=LIST (e.g. --vary defaults.limit=10,20,50), or vary = [...] in the scenario's [sweep] table"
        )));
    }
    let grid = parse_grid(vary, &flag)?;
    let shard = match &args.shard {
        Some(s) => {
            let ((k, n), from) = crate::jobarray::k_of_n_here("--shard", s)?;
            if let Some(from) = from.filter(|_| !args.quiet) {
                let _ = writeln!(io::stderr(), "shard {k}/{n} (from {from})");
            }
            Shard { k, n }
        }
        None => Shard::WHOLE,
    };
    let size = grid.size();
    if size > MAX_POINTS && !args.no_budget {
        let lens: Vec<String> = grid
            .axes
            .iter()
            .map(|a| a.values.len().to_string())
            .collect();
        return Err(InputError::new(format!(
            "{flag}: {} = {size} points, more than the {MAX_POINTS} a sweep runs without --no-budget; use fewer values or pass --no-budget",
            lens.join(" × ")
        )));
    }
    if size > usize::MAX as u128 / 2 {
        return Err(InputError::new(format!(
            "{flag}: {size} points is too many"
        )));
    }

    let (minimize, maximize) = if args.minimize.is_some() || args.maximize.is_some() {
        (args.minimize.clone(), args.maximize.clone())
    } else {
        (spec.minimize.clone(), spec.maximize.clone())
    };
    let goal = Goal {
        require: if args.require.is_empty() {
            spec.require.clone()
        } else {
            args.require.clone()
        },
        minimize,
        maximize,
    };
    let metric = args.metric.clone().or(spec.metric.clone());

    let plan = Plan {
        name: base.name.clone(),
        sources: base.source_names(),
        file,
        table,
        sets,
        grid,
        shard,
        goal,
        metric,
    };
    let columns = plan.columns();
    let from_table = |e: InputError, flag_given: bool| {
        if flag_given {
            e
        } else {
            e.within(format!("{arg}: the scenario's [sweep] table"))
        }
    };
    let goal_flags = !args.require.is_empty() || args.minimize.is_some() || args.maximize.is_some();
    Criteria::parse(&plan.goal, &columns).map_err(|e| from_table(e, goal_flags))?;
    if let Some(m) = &plan.metric {
        table::Metric::parse(m, &columns, "--metric")
            .map_err(|e| from_table(e, args.metric.is_some()))?;
    }
    check_axes(&plan.file, &plan.table, &plan.sets, &base, &plan.grid)?;
    Ok(plan)
}

/// The axes of `vary` (as given to `flag`), each path once.
fn parse_grid(vary: &[String], flag: &str) -> Result<Grid, InputError> {
    let axes: Vec<Axis> = vary
        .iter()
        .map(|v| Axis::parse(v, flag))
        .collect::<Result<_, _>>()?;
    for (k, a) in axes.iter().enumerate() {
        if axes[..k].iter().any(|b| b.path == a.path) {
            return Err(InputError::new(format!(
                "{}: this path is varied twice; give each path once",
                a.arg
            )));
        }
    }
    Ok(Grid { axes })
}

/// Checks each axis on the base scenario (`table` with `sets`, which is
/// `base`): every value alone must give a valid scenario — an error names
/// the argument and the value — two axes must not name one field
/// (`limiter[0].rate` and `limiter[api].rate`), and an axis must be read
/// by something: `defaults.limit` when every limiter sets its own policy
/// and nothing else takes it is refused, naming what to vary instead
/// (docs/semantics.md §9).
fn check_axes(
    file: &ScenarioFile,
    table: &toml::Table,
    sets: &[Override],
    base: &Scenario,
    grid: &Grid,
) -> Result<(), InputError> {
    let mut set_table = table.clone();
    overrides::apply(&mut set_table, sets)?;
    let mut fields: Vec<String> = Vec::new();
    for a in &grid.axes {
        let field = overrides::resolve(&set_table, &a.path)
            .map_err(|why| InputError::new(format!("{}: {why}", a.arg)))?;
        // A name labels rows (sweep.csv's, sources' columns, the
        // recommendation's) and decides nothing: varied, each point's rows
        // would be another limiter's or source's.
        if let Some((table, "name")) = field.split_once('.') {
            if ["limiter[", "traffic[", "chain["]
                .iter()
                .any(|t| table.starts_with(t))
            {
                return Err(InputError::new(format!(
                    "{}: {field} names what the sweep's rows and columns are of and decides nothing, so it cannot be varied; give it with --set, or vary a field that decides",
                    a.arg
                )));
            }
        }
        if let Some(k) = fields.iter().position(|f| *f == field) {
            return Err(InputError::new(format!(
                "{}: the same field as {} ({field}); give each field once",
                a.arg, grid.axes[k].arg
            )));
        }
        fields.push(field);
    }
    let mut reads_default_limit = base.reads_default_limit;
    for a in &grid.axes {
        for v in &a.values {
            let mut o = sets.to_vec();
            o.push(a.at(v));
            let s = file.with_table(table.clone(), &o)?;
            reads_default_limit |= s.reads_default_limit;
        }
    }
    if reads_default_limit {
        return Ok(());
    }
    let Some(k) = fields.iter().position(|f| f == "defaults.limit") else {
        return Ok(());
    };
    let instead: Vec<String> = base
        .limiters
        .iter()
        .filter(|l| l.chain.is_none())
        .filter_map(|l| Some(format!("limiter[{}].{}", l.name, l.policy.own?)))
        .collect();
    Err(InputError::new(format!(
        "{}: nothing reads [defaults] limit — every limiter sets its own policy, so every point would give the same results; vary {} instead",
        grid.axes[k].arg,
        instead.join(" or ")
    )))
}

/// What `validate` and `run` check of a scenario's `[sweep]` table, as
/// `ratesim sweep` does with no flags (issue 23 item 7): its keys, its
/// `vary` (each value valid on the scenario with `sets`, each axis read),
/// `require`, `minimize`, `maximize` and `metric` against the columns it
/// would have. What only a sweep run needs (something to vary, the point
/// budget) is not checked.
pub(crate) fn check_table(
    file: &ScenarioFile,
    sets: &[Override],
    base: &Scenario,
) -> Result<(), InputError> {
    let table = file.table()?;
    if !table.contains_key("sweep") {
        return Ok(());
    }
    let spec = sweep_table(file, &table)?;
    let grid = parse_grid(&spec.vary, &format!("{}: [sweep] vary", file.place))?;
    let mut columns: Vec<String> = grid.axes.iter().map(|a| a.path.clone()).collect();
    columns.extend(report::csv::summary_columns());
    columns.extend(source_columns(&base.source_names()));
    let within = |e: InputError| e.within(format!("{}: the scenario's [sweep] table", file.place));
    let goal = Goal {
        require: spec.require,
        minimize: spec.minimize,
        maximize: spec.maximize,
    };
    Criteria::parse(&goal, &columns).map_err(within)?;
    if let Some(m) = &spec.metric {
        table::Metric::parse(m, &columns, "metric").map_err(within)?;
    }
    check_axes(file, &table, sets, base, &grid)
}

/// What the points of a sweep take together: their decisions, the
/// largest point's memory besides its recordings, and the largest
/// recordings (read once per process and shared by the points).
struct PointsCost {
    decisions: u128,
    memory: u128,
    recordings: u128,
    /// Per point, what its arrivals are (see [`shared_arrivals`]).
    arrivals: Vec<(serde_json::Value, Vec<bool>)>,
}

/// Checks every point of this shard (in parallel): the first invalid point
/// in point order is bad input naming the point.
fn check_points(plan: &Plan, points: &[usize]) -> Result<PointsCost, InputError> {
    type Checked = (u128, u128, u128, (serde_json::Value, Vec<bool>));
    let checked: Vec<Result<Checked, InputError>> = points
        .par_iter()
        .map(|&i| {
            let s = plan.scenario(i).map_err(|e| {
                InputError::new(format!(
                    "point {i} ({}): {}",
                    plan.grid.describe(i),
                    e.message()
                ))
            })?;
            let names = s.source_names();
            if names != plan.sources {
                return Err(InputError::new(format!(
                    "point {i} ({}): its sources are {}, the scenario's {}; sweep.csv has one set of COLUMN[SOURCE] columns, so every point must have the same sources",
                    plan.grid.describe(i),
                    crate::error::quote(&names.join(", ")),
                    crate::error::quote(&plan.sources.join(", "))
                )));
            }
            let e = Estimate::of_run(&s, false);
            let recordings = e.memory.recordings;
            Ok((
                e.decisions,
                e.memory_bytes() - recordings,
                recordings,
                shared_arrivals(&s),
            ))
        })
        .collect();
    let mut cost = PointsCost {
        decisions: 0,
        memory: 0,
        recordings: 0,
        arrivals: Vec::with_capacity(points.len()),
    };
    for c in checked {
        let (decisions, memory, recordings, arrivals) = c?;
        cost.arrivals.push(arrivals);
        cost.decisions = cost.decisions.saturating_add(decisions);
        cost.memory = cost.memory.max(memory);
        cost.recordings = cost.recordings.max(recordings);
    }
    Ok(cost)
}

/// Points simulated together at most: each arrival is generated once for
/// all of their limiters.
const BATCH: usize = 8;

/// What must be equal for points to share their arrivals: the scenario
/// as echoed without its limiters and defaults (its traffic, seed,
/// duration, population), and the sources its limiters see.
fn shared_arrivals(s: &Scenario) -> (serde_json::Value, Vec<bool>) {
    let mut echo = s.echo();
    if let Some(o) = echo.as_object_mut() {
        o.remove("limiters");
        o.remove("defaults");
    }
    let seen = s
        .sources()
        .map(|(t, _)| s.limiters.iter().any(|l| l.traffic.contains(&t)))
        .collect();
    (echo, seen)
}

/// The points in runs of at most `batch` neighbours that share their
/// arrivals (`arrivals[j]`, point `points[j]`'s: see [`shared_arrivals`]),
/// each run simulated at once.
fn batches(
    points: &[usize],
    arrivals: &[(serde_json::Value, Vec<bool>)],
    batch: usize,
) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    for (j, &i) in points.iter().enumerate() {
        match out.last_mut() {
            Some(b) if b.len() < batch && j > 0 && arrivals[j] == arrivals[j - 1] => b.push(i),
            _ => out.push(vec![i]),
        }
    }
    out
}

/// Simulates the points of `batch` over one generation of their arrivals
/// (see [`batches`]): each point's `summary.csv` bytes (see
/// [`point_summary`]).
fn run_batch(plan: &Plan, batch: &[usize]) -> Vec<anyhow::Result<Vec<u8>>> {
    let scenarios: anyhow::Result<Vec<Scenario>> =
        batch.iter().map(|&i| Ok(plan.scenario(i)?)).collect();
    let ran = scenarios.and_then(|scenarios| {
        let refs: Vec<&Scenario> = scenarios.iter().collect();
        let runs = engine::simulate_shared(&refs, &|_, _, _| {})?;
        Ok((scenarios, runs))
    });
    match ran {
        Ok((scenarios, runs)) => batch
            .iter()
            .zip(scenarios)
            .zip(runs)
            .map(|((&i, s), runs)| point_summary(plan, i, &s, runs))
            .collect(),
        Err(e) => {
            let e = format!("{e:#}");
            batch.iter().map(|_| Err(anyhow::anyhow!("{e}"))).collect()
        }
    }
}

/// Point `i`'s `summary.csv` bytes, its scenario `s` simulated into
/// `runs`: each line followed by its limiter's cells per source
/// (`COLUMN[SOURCE]`, empty for a source the limiter does not see).
fn point_summary(
    plan: &Plan,
    i: usize,
    s: &Scenario,
    runs: Vec<engine::LimiterRun>,
) -> anyhow::Result<Vec<u8>> {
    let names = s.source_names();
    anyhow::ensure!(
        names == plan.sources,
        "point {i} ({}): its sources differ from the scenario's ({} here, {} there); a sweep keeps them",
        plan.grid.describe(i),
        names.join(", "),
        plan.sources.join(", ")
    );
    let report = Report::new(s, runs, s.echo());
    let mut summary = Vec::new();
    report::csv::summary(&report, &mut summary)?;
    let (head, rows) = records(&summary)?;
    let line = |range: Range<usize>, extra: &[String]| -> anyhow::Result<Vec<u8>> {
        let mut l = summary[range].to_vec();
        while l.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
            l.pop();
        }
        if !extra.is_empty() {
            let cells: Vec<&str> = extra.iter().map(String::as_str).collect();
            l.push(b',');
            l.extend_from_slice(&csv_fields(&cells)?);
        }
        l.push(b'\n');
        Ok(l)
    };
    let mut out = line(head, &source_columns(&plan.sources))?;
    let width = crate::rundir::summary::SourceRow::SWEPT.len();
    for (r, l) in rows.into_iter().zip(&report.limiters) {
        let mut cells = vec![String::new(); width * names.len()];
        for row in &l.sources {
            let k = names
                .iter()
                .position(|n| *n == row.source)
                .expect("a source of the scenario");
            cells[k * width..(k + 1) * width].clone_from_slice(&row.swept());
        }
        out.extend(line(r, &cells)?);
    }
    Ok(out)
}

/// The byte ranges of a CSV text's header and of each record after it,
/// each with its line ending.
pub fn records(csv_text: &[u8]) -> anyhow::Result<(Range<usize>, Vec<Range<usize>>)> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(csv_text);
    let mut starts = Vec::new();
    let mut rec = csv::ByteRecord::new();
    loop {
        let at = rdr.position().byte() as usize;
        if !rdr.read_byte_record(&mut rec)? {
            break;
        }
        starts.push(at);
    }
    starts.push(csv_text.len());
    anyhow::ensure!(starts.len() >= 2, "a CSV text without a header");
    let ranges: Vec<Range<usize>> = starts.windows(2).map(|w| w[0]..w[1]).collect();
    Ok((ranges[0].clone(), ranges[1..].to_vec()))
}

/// One CSV record of `fields`, without its line ending.
fn csv_fields(fields: &[&str]) -> anyhow::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(fields)?;
    let mut bytes = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;
    while bytes.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        bytes.pop();
    }
    Ok(bytes)
}

/// A point's `summary.csv` header, its `sweep.csv` rows, and how many.
type PointRows = (Vec<u8>, Vec<u8>, usize);

/// `sweep.csv`'s rows of point `i`: its values, then its `summary.csv` rows.
fn point_rows(grid: &Grid, i: usize, summary: &[u8]) -> anyhow::Result<PointRows> {
    let (head, rows) = records(summary)?;
    let prefix = csv_fields(&grid.values(i))?;
    let mut out = Vec::new();
    for r in &rows {
        out.extend_from_slice(&prefix);
        out.push(b',');
        out.extend_from_slice(&summary[r.clone()]);
    }
    Ok((summary[head].to_vec(), out, rows.len()))
}

/// `ratesim sweep …` and `ratesim sweep merge …`.
pub fn command(args: SweepArgs) -> anyhow::Result<()> {
    if let Some(SweepCommand::Merge(m)) = args.command {
        return merge::command(m);
    }
    let plan = plan(&args)?;
    let points = plan.points();
    let PointsCost {
        decisions,
        memory: largest_memory,
        recordings,
        arrivals,
    } = check_points(&plan, &points)?;
    if decisions > BUDGET_DECISIONS && !args.no_budget {
        return Err(InputError::new(format!(
            "this sweep is ≈{decisions} decisions over {} points, more than the {BUDGET_DECISIONS} ratesim makes without --no-budget; use fewer points, shard it (--shard K/N), or pass --no-budget",
            points.len()
        ))
        .into());
    }
    // Points run in parallel, one per thread: at most that many at once,
    // each at most the largest point's memory, beside the recorded files
    // they share.
    let at_once = largest_memory
        .saturating_mul(rayon::current_num_threads().min(points.len()) as u128)
        .saturating_add(recordings);
    if let Some(available) = crate::estimate::available_memory().filter(|_| !args.no_budget) {
        if at_once > available as u128 {
            return Err(InputError::new(format!(
                "this sweep runs {} points at once, up to ≈{} MiB of memory each{}, more than the {} MiB available; \
                 use fewer threads (RAYON_NUM_THREADS), smaller points, or pass --no-budget",
                rayon::current_num_threads().min(points.len()),
                crate::estimate::mib(largest_memory),
                match recordings {
                    0 => String::new(),
                    r => format!(" beside ≈{} MiB of recorded requests they share", crate::estimate::mib(r)),
                },
                crate::estimate::mib(available as u128)
            ))
            .into());
        }
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("output").join(format!("{}-sweep", plan.name)));
    let staging = Staging::new(&out, &plan.file.inputs())?;

    let bar = PointProgress::new(points.len(), args.quiet);
    // Neighbouring points that share their arrivals run together, as many
    // as memory allows beside the others running at once (checked above
    // for one point each).
    let batch = match crate::estimate::available_memory().filter(|_| !args.no_budget) {
        Some(available) => {
            let each = largest_memory
                .saturating_mul(rayon::current_num_threads().min(points.len()).max(1) as u128)
                .max(1);
            ((available as u128).saturating_sub(recordings) / each).clamp(1, BATCH as u128) as usize
        }
        None => BATCH,
    };
    let results: Vec<anyhow::Result<PointRows>> = batches(&points, &arrivals, batch)
        .par_iter()
        .flat_map_iter(|b| {
            let rows: Vec<anyhow::Result<PointRows>> = run_batch(&plan, b)
                .into_iter()
                .zip(b)
                .map(|(r, &i)| {
                    bar.point_done();
                    r.and_then(|summary| point_rows(&plan.grid, i, &summary))
                        .with_context(|| format!("point {i} ({})", plan.grid.describe(i)))
                })
                .collect();
            rows
        })
        .collect();
    bar.finish();

    let axes: Vec<&str> = plan.grid.axes.iter().map(|a| a.path.as_str()).collect();
    let mut csv_out = csv_fields(&axes)?;
    csv_out.push(b',');
    let mut header: Option<Vec<u8>> = None;
    let mut rows = Vec::new();
    let mut body = Vec::new();
    for (&i, r) in points.iter().zip(results) {
        let (head, bytes, n) = r?;
        if header.is_none() {
            header = Some(head);
        }
        body.extend_from_slice(&bytes);
        rows.push((i, n));
    }
    match header {
        Some(h) => csv_out.extend_from_slice(&h),
        // A shard with no points still has the header.
        None => {
            let mut cols = report::csv::summary_columns();
            cols.extend(source_columns(&plan.sources));
            let cols: Vec<&str> = cols.iter().map(String::as_str).collect();
            csv_out.extend_from_slice(&csv_fields(&cols)?);
            csv_out.push(b'\n');
        }
    }
    csv_out.extend_from_slice(&body);
    let manifest = plan.manifest(rows, &out);
    finish(
        staging,
        &out,
        &manifest,
        &csv_out,
        render::Drawn {
            plots: !args.no_plots,
            html: !args.no_html,
        },
        args.quiet,
    )
}

/// Writes `sweep.csv` and `sweep.json` into the staging directory, draws
/// (unless sharded) the charts, `recommendation.md` and `summary.md`,
/// moves it into place and prints what it wrote.
fn finish(
    staging: Staging,
    out: &Path,
    manifest: &Manifest,
    csv_text: &[u8],
    drawn: render::Drawn,
    quiet: bool,
) -> anyhow::Result<()> {
    std::fs::write(staging.path().join(CSV), csv_text)
        .with_context(|| format!("cannot write {CSV}"))?;
    manifest.write(staging.path())?;
    let recommendation = if manifest.shard.is_whole() {
        render::render_dir(staging.path(), manifest, drawn)?
    } else {
        None
    };
    staging.commit(&manifest.scenario)?;
    if quiet {
        return Ok(());
    }
    let mut stdout = io::stdout().lock();
    let rows: usize = manifest.rows.iter().map(|(_, n)| n).sum();
    if let Some(text) = recommendation {
        writeln!(stdout, "{text}")?;
    }
    writeln!(
        stdout,
        "{} point(s) of {}{}, {rows} row(s): results in {}",
        manifest.rows.len(),
        manifest.points,
        if manifest.shard.is_whole() {
            String::new()
        } else {
            format!(
                " (shard {}; join with `ratesim sweep merge`)",
                manifest.shard
            )
        },
        out.display()
    )?;
    stdout.flush()?;
    Ok(())
}
