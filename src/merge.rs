//! `ratesim merge DIR... --out DIR`: joins the key partitions of one run
//! (`ratesim run S --keys K/N`, K = 1..N) into the run directory of the
//! whole run (docs/semantics.md §12): every CSV and JSON byte for byte what
//! `ratesim run S` writes, the charts and pages drawn from them.
//!
//! Keys are independent, so most of a run sums: the counts, the series,
//! the histograms (which merge exactly), each client's and key's counts,
//! each source's. What is a matter of order — the decision log's rows at
//! one nanosecond, which of two equal peaks came first, how much state all
//! keys held together at each moment — comes from the partitions'
//! journals, read in the whole run's order
//! ([`crate::partition::journal::Merger`]).

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::clock::Nanos;
use crate::engine::LimiterRun;
use crate::error::{quoted, InputError};
use crate::limiter::Footprint;
use crate::metrics::Recorder;
use crate::partition::journal::{JournalReader, Merger, Source};
use crate::partition::wire::Take;
use crate::report::{self, Report};
use crate::rundir::invocation::Invocation;
use crate::rundir::partition::{
    partition_journal, AgreementPart, PartitionInfo, PARTITION_BIN, PARTITION_JSON,
};
use crate::staging::Staging;

/// One partition's run directory, read.
struct Part {
    dir: PathBuf,
    info: PartitionInfo,
    run: Invocation,
}

fn bad(msg: String) -> anyhow::Error {
    InputError::new(msg).into()
}

fn shown(dir: &Path) -> String {
    quoted(&dir.display().to_string())
}

impl Part {
    fn read(dir: &Path) -> anyhow::Result<Part> {
        let info_path = dir.join(PARTITION_JSON);
        let text = fs::read_to_string(&info_path).map_err(|_| {
            bad(format!(
                "{}: not a key partition's run directory (no {PARTITION_JSON}); merge takes the directories of `ratesim run S --keys K/N`",
                shown(dir)
            ))
        })?;
        let info: PartitionInfo = serde_json::from_str(&text).map_err(|e| {
            bad(format!(
                "{}: cannot be read ({e}); run that partition again",
                shown(&info_path)
            ))
        })?;
        let run_path = dir.join(crate::rundir::RUN_JSON);
        let run: Invocation = fs::read_to_string(&run_path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .ok_or_else(|| {
                bad(format!(
                    "{}: missing or unreadable; run that partition again",
                    shown(&run_path)
                ))
            })?;
        Ok(Part {
            dir: dir.to_path_buf(),
            info,
            run,
        })
    }
}

/// The command line without `--keys` and `--out` (and their values): the
/// same for every partition of one run.
fn command_without_keys_and_out(command: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip = false;
    for w in command {
        if std::mem::take(&mut skip) {
            continue;
        }
        if w == "--keys" || w == "--out" {
            skip = true;
            continue;
        }
        if w.starts_with("--keys=") || w.starts_with("--out=") {
            continue;
        }
        out.push(w.clone());
    }
    out
}

/// The whole run's command line: a partition's with `--keys` dropped and
/// `--out` (if it had one) set to `out`.
fn whole_command(command: &[String], out: &Path) -> Vec<String> {
    let mut words = Vec::new();
    let mut it = command.iter();
    while let Some(w) = it.next() {
        if w == "--keys" {
            it.next();
        } else if w.starts_with("--keys=") {
        } else if w == "--out" {
            words.push(w.clone());
            it.next();
            words.push(out.display().to_string());
        } else if w.starts_with("--out=") {
            words.push(format!("--out={}", out.display()));
        } else {
            words.push(w.clone());
        }
    }
    words
}

/// Checks that `parts` are the partitions 1..N of one run, each once, and
/// puts them in order of K.
fn check(mut parts: Vec<Part>) -> anyhow::Result<Vec<Part>> {
    let first = &parts[0];
    let n = first.info.keys.n;
    for p in &parts[1..] {
        let differs = |what: &str| {
            bad(format!(
                "{} and {} are partitions of different runs: their {what} differ",
                shown(&first.dir),
                shown(&p.dir)
            ))
        };
        if p.run.ratesim_version != first.run.ratesim_version {
            return Err(differs("ratesim versions"));
        }
        if p.run.scenario_text != first.run.scenario_text {
            return Err(differs("scenarios"));
        }
        if p.info.keys.seed != first.info.keys.seed {
            return Err(differs("seeds"));
        }
        if p.info.keys.n != n {
            return Err(differs("partition counts N"));
        }
        if p.info.keys.by != first.info.keys.by {
            return Err(differs("key fields"));
        }
        if command_without_keys_and_out(&p.run.command)
            != command_without_keys_and_out(&first.run.command)
        {
            return Err(differs("command lines (besides --keys and --out)"));
        }
        if p.info.shape != first.info.shape || p.info.echo != first.info.echo {
            return Err(differs("scenarios as run"));
        }
    }
    let mut by_k: BTreeMap<u64, Vec<&Path>> = BTreeMap::new();
    for p in &parts {
        by_k.entry(p.info.keys.k).or_default().push(&p.dir);
    }
    if let Some((k, dirs)) = by_k.iter().find(|(_, d)| d.len() > 1) {
        let dirs: Vec<String> = dirs.iter().map(|d| shown(d)).collect();
        return Err(bad(format!(
            "partition {k}/{n} is given twice: {}; give each partition once",
            dirs.join(" and ")
        )));
    }
    let missing: Vec<String> = (1..=n)
        .filter(|k| !by_k.contains_key(k))
        .map(|k| format!("{k}/{n}"))
        .collect();
    if !missing.is_empty() {
        return Err(bad(format!(
            "partition{} {} of this run {} missing: merge needs all {n}",
            if missing.len() > 1 { "s" } else { "" },
            missing.join(", "),
            if missing.len() > 1 { "are" } else { "is" },
        )));
    }
    parts.sort_by_key(|p| p.info.keys.k);
    Ok(parts)
}

/// Each limiter's recorder and footprint in a partition's `partition.bin`.
fn read_bin(dir: &Path, limiters: usize) -> anyhow::Result<Vec<(Recorder, Footprint)>> {
    let path = dir.join(PARTITION_BIN);
    let bytes = fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let what = path.display().to_string();
    let mut t = Take::new(&bytes, &what);
    let mut out = Vec::with_capacity(limiters);
    for _ in 0..limiters {
        let recorder = Recorder::load(&mut t)?;
        let footprint = Footprint {
            byte_ns: t.u128()?,
            key_ns: t.u128()?,
            peak_bytes: t.u64()?,
            peak_total: t.u64()?,
            redis_byte_ns: t.u128()?,
            redis_peak_bytes: t.u64()?,
            redis_peak_total: t.u64()?,
            span: t.u64()?,
            keys: t.u64()?,
        };
        out.push((recorder, footprint));
    }
    if !t.is_empty() {
        return Err(bad(format!(
            "{what}: holds more than its {limiters} limiters; run that partition again"
        )));
    }
    Ok(out)
}

/// A journal's file.
struct FileSource(BufReader<File>);

impl Source for FileSource {
    fn fill(&mut self, buf: &mut [u8]) -> Result<bool, InputError> {
        use std::io::Read;
        let mut got = 0;
        while got < buf.len() {
            match self.0.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(InputError::new(format!("cannot read a journal: {e}"))),
            }
        }
        match got {
            0 if !buf.is_empty() => Ok(false),
            n if n == buf.len() => Ok(true),
            _ => Err(InputError::new("a journal is cut short".to_string())),
        }
    }
}

/// A partition's `decisions.csv`, row by row (a row is its line, and the
/// lines after it while a quoted field is open).
struct Rows {
    inp: BufReader<File>,
    path: PathBuf,
    line: Vec<u8>,
}

impl Rows {
    fn open(dir: &Path) -> anyhow::Result<Rows> {
        let path = dir.join(crate::rundir::DECISIONS_CSV);
        let inp = BufReader::with_capacity(
            1 << 16,
            File::open(&path).with_context(|| format!("cannot read {}", path.display()))?,
        );
        let mut rows = Rows {
            inp,
            path,
            line: Vec::new(),
        };
        rows.next()?; // the header
        Ok(rows)
    }

    /// The next row, into `self.line`.
    fn next(&mut self) -> anyhow::Result<()> {
        self.line.clear();
        loop {
            let n = self.inp.read_until(b'\n', &mut self.line)?;
            if n == 0 {
                return Err(bad(format!(
                    "{}: has fewer rows than its journal says; run that partition again",
                    self.path.display()
                )));
            }
            if self.line.iter().filter(|&&b| b == b'"').count() % 2 == 0 {
                return Ok(());
            }
        }
    }
}

/// What a partition's event's place in the whole run is wanted for: the
/// peak of a limiter (by index), or a disagreeing line (by its index in
/// the partition's list).
#[derive(Debug, Clone, Copy)]
enum Want {
    Peak(usize),
    Line(usize),
}

/// A partition's candidate for a limiter's peak: its place in the whole
/// run's order (time, a release before a decision's own pass, the deciding
/// event's place), partition, value and `peak_at`.
struct Peak {
    order: (u64, u8, u64),
    part: usize,
    value: u64,
    at: (Nanos, u32),
}

/// Joins `dirs` into `out`; returns what it joined, in a sentence.
pub fn merge(dirs: &[PathBuf], out: &Path, plots: bool, html: bool) -> anyhow::Result<String> {
    let parts = dirs
        .iter()
        .map(|d| Part::read(d))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let parts = check(parts)?;
    let staging = Staging::new(out, dirs)?;
    let said = merge_into(&parts, staging.path(), out, plots, html)?;
    staging.commit(&parts[0].info.shape.name)?;
    Ok(said)
}

fn merge_into(
    parts: &[Part],
    dir: &Path,
    out: &Path,
    plots: bool,
    html: bool,
) -> anyhow::Result<String> {
    let info = &parts[0].info;
    let shape = &info.shape;
    let n = shape.limiters.len();
    // Every limiter's recorder and footprint, per partition.
    let bins: Vec<Vec<(Recorder, Footprint)>> = parts
        .iter()
        .map(|p| read_bin(&p.dir, n))
        .collect::<anyhow::Result<_>>()?;
    // The journals: each chain's or lone limiter's run, in the whole run's
    // order; the decision log's rows follow it.
    let mut decisions = match info.decisions {
        true => {
            let mut all = BufWriter::new(
                File::create(dir.join(crate::rundir::DECISIONS_CSV))
                    .context("cannot write decisions.csv")?,
            );
            report::csv::DecisionLog::header(&mut all, info.headers)?;
            let rows = parts
                .iter()
                .map(|p| Rows::open(&p.dir))
                .collect::<anyhow::Result<Vec<_>>>()?;
            Some((all, rows))
        }
        false => None,
    };
    // Per limiter: the place in the whole run of each partition's peak
    // pass, and of each disagreeing line.
    let mut peak_pos: Vec<Vec<Option<u64>>> = vec![vec![None; parts.len()]; n];
    let mut line_pos: HashMap<(usize, usize, u64), u64> = HashMap::new();
    let mut footprints: Vec<Footprint> = vec![Footprint::default(); n];
    let mut events = 0u64;
    for lane in (0..n).filter(|&i| shape.limiters[i].member_of.is_none()) {
        let readers = parts
            .iter()
            .map(|p| {
                let path = p.dir.join(partition_journal(lane));
                let f = File::open(&path).map_err(|_| {
                    bad(format!(
                        "{}: missing; run that partition again",
                        shown(&path)
                    ))
                })?;
                Ok(JournalReader::new(
                    FileSource(BufReader::with_capacity(1 << 16, f)),
                    path.display().to_string(),
                ))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        // The limiters of this run: itself, or its chain's members.
        let members: Vec<usize> = (0..n)
            .filter(|&i| i == lane || shape.limiters[i].member_of == Some(lane))
            .collect();
        // By (partition, event): what its place is wanted for.
        let mut wanted: HashMap<(usize, u64), Vec<Want>> = HashMap::new();
        for &i in &members {
            for (p, bin) in bins.iter().enumerate() {
                let r = &bin[i].0;
                if r.peak_at.is_some() {
                    wanted
                        .entry((p, r.peak_origin.1))
                        .or_default()
                        .push(Want::Peak(i));
                }
            }
        }
        for (p, part) in parts.iter().enumerate() {
            if let Some(Some(a)) = part.info.agreements.get(lane) {
                for (j, (event, _)) in a.lines.iter().enumerate() {
                    wanted.entry((p, *event)).or_default().push(Want::Line(j));
                }
            }
        }
        let mut merger = Merger::new(readers)?;
        while let Some(e) = merger.next_event()? {
            events += 1;
            if let Some(w) = wanted.get(&(e.part, e.n)) {
                for &want in w {
                    match want {
                        Want::Peak(i) => peak_pos[i][e.part] = Some(e.pos),
                        Want::Line(j) => {
                            line_pos.insert((lane, e.part, j as u64), e.pos);
                        }
                    }
                }
            }
            if let Some((all, rows)) = decisions.as_mut() {
                for _ in 0..e.rows {
                    let r = &mut rows[e.part];
                    r.next()?;
                    all.write_all(&r.line)?;
                }
            }
        }
        let (last, units) = merger.finish()?;
        for &i in &members {
            let mut f = Footprint {
                span: last,
                ..Footprint::default()
            };
            for ((limiter, _), u) in &units {
                if *limiter as usize == i {
                    f.byte_ns += u.integral[0];
                    f.redis_byte_ns += u.integral[1];
                    f.peak_total += u.peak[0];
                    f.redis_peak_total += u.peak[1];
                }
            }
            for bin in &bins {
                let theirs = &bin[i].1;
                f.peak_bytes = f.peak_bytes.max(theirs.peak_bytes);
                f.redis_peak_bytes = f.redis_peak_bytes.max(theirs.redis_peak_bytes);
                f.keys += theirs.keys;
            }
            f.key_ns = f.keys as u128 * last as u128;
            footprints[i] = f;
        }
        // A chain's own row: its members' state together.
        if shape.limiters[lane].chain {
            footprints[lane] = members
                .iter()
                .filter(|&&i| i != lane)
                .map(|&i| footprints[i])
                .reduce(Footprint::combine)
                .unwrap_or_default();
        }
    }
    if let Some((mut all, _)) = decisions {
        all.flush()?;
    }
    // The recorders, summed; each limiter's peak the first of the equal
    // largest in the whole run's order: by time, a release before a
    // decision's own pass at that moment, then by the deciding event.
    let mut peak_names: Vec<Option<String>> = vec![None; n];
    let mut runs = Vec::with_capacity(n);
    let mut bins: Vec<std::vec::IntoIter<(Recorder, Footprint)>> =
        bins.into_iter().map(|b| b.into_iter()).collect();
    for (i, footprint) in footprints.into_iter().enumerate() {
        let mut mine: Option<Recorder> = None;
        let mut best: Option<Peak> = None;
        for (p, bin) in bins.iter_mut().enumerate() {
            let (r, _) = bin.next().expect("a recorder per limiter");
            if let Some(at) = r.peak_at {
                let pos = peak_pos[i][p].ok_or_else(|| {
                    bad(format!(
                        "{}: a peak's event is not in the journal; run that partition again",
                        shown(&parts[p].dir)
                    ))
                })?;
                let order = (at.0 .0, (!r.peak_origin.0) as u8, pos);
                let better = best.as_ref().is_none_or(|b| {
                    r.peak_in_window > b.value || (r.peak_in_window == b.value && order < b.order)
                });
                if better {
                    best = Some(Peak {
                        order,
                        part: p,
                        value: r.peak_in_window,
                        at,
                    });
                }
            }
            match mine.as_mut() {
                None => mine = Some(r),
                Some(m) => m.absorb(&r)?,
            }
        }
        let mut r = mine.expect("at least one partition");
        if let Some(b) = best {
            r.peak_in_window = b.value;
            r.peak_at = Some(b.at);
            peak_names[i] = parts[b.part].info.peak_keys.get(i).cloned().flatten();
        }
        runs.push(LimiterRun {
            recorder: r,
            footprint,
            backend: None,
        });
    }
    let attempts: u64 = runs
        .iter()
        .enumerate()
        .filter(|(i, _)| shape.limiters[*i].member_of.is_none())
        .map(|(_, r)| r.recorder.attempts)
        .sum();
    let keys: u64 = runs.iter().map(|r| r.footprint.keys).max().unwrap_or(0);
    write_top_keys(parts, shape, dir)?;
    write_agreement(parts, n, &line_pos, dir)?;
    let key_name = |i: usize, _key: u32| peak_names[i].clone().unwrap_or_default();
    let report = Report::of_shape(shape, runs, info.echo.clone(), &key_name);
    for (name, export) in report::FILES {
        let mut f = BufWriter::new(
            File::create(dir.join(name)).with_context(|| format!("cannot write {name}"))?,
        );
        export(&report, &mut f).with_context(|| format!("cannot write {name}"))?;
        f.flush()?;
    }
    // run.json: the whole run's, as `ratesim run` without --keys writes it.
    let run = Invocation {
        command: whole_command(&parts[0].run.command, out),
        keys: None,
        ..parts[0].run.clone()
    };
    let mut text = serde_json::to_string_pretty(&run)?;
    text.push('\n');
    fs::write(dir.join(crate::rundir::RUN_JSON), text).context("cannot write run.json")?;
    report::render::render_dir(dir, info.plots && plots, info.html && html)?;
    let joined: Vec<String> = parts
        .iter()
        .map(|p| format!("{}/{} {}", p.info.keys.k, p.info.keys.n, p.dir.display()))
        .collect();
    Ok(format!(
        "merged {} partitions of {} (keys by {}, seed {}): {}; {events} events, {attempts} attempts, up to {keys} keys a limiter",
        parts.len(),
        quoted(&shape.name),
        info.keys.by,
        info.keys.seed,
        joined.join(", "),
    ))
}

/// `top_keys.csv`: each limiter's rows of every partition, ranked again
/// (the whole run's first hundred are among the partitions' first
/// hundreds).
fn write_top_keys(
    parts: &[Part],
    shape: &crate::rundir::partition::Shape,
    dir: &Path,
) -> anyhow::Result<()> {
    let all: Vec<report::top_keys::Row> = parts
        .iter()
        .flat_map(|p| report::top_keys::read(&p.dir))
        .collect();
    let mut rows = Vec::new();
    for l in &shape.limiters {
        let mut mine: Vec<report::top_keys::Row> = all
            .iter()
            .filter(|r| r.limiter == l.name)
            .cloned()
            .collect();
        mine.sort_by(|a, b| {
            (
                std::cmp::Reverse(a.rejected),
                std::cmp::Reverse(a.attempts),
                &a.key,
            )
                .cmp(&(
                    std::cmp::Reverse(b.rejected),
                    std::cmp::Reverse(b.attempts),
                    &b.key,
                ))
        });
        mine.truncate(report::top_keys::PER_LIMITER);
        for (rank, mut r) in mine.into_iter().enumerate() {
            r.rank = rank + 1;
            rows.push(r);
        }
    }
    report::top_keys::write(
        &rows,
        File::create(dir.join(report::top_keys::FILE)).context("cannot write top_keys.csv")?,
    )
}

/// `agreement.csv` and `disagreements.csv`: the counts summed, the first
/// disagreeing lines of the whole run (by their events' places in it).
fn write_agreement(
    parts: &[Part],
    n: usize,
    line_pos: &HashMap<(usize, usize, u64), u64>,
    dir: &Path,
) -> anyhow::Result<()> {
    let mut joined = Vec::new();
    for i in 0..n {
        let mine: Vec<(usize, &AgreementPart)> = parts
            .iter()
            .enumerate()
            .filter_map(|(p, part)| Some((p, part.info.agreements.get(i)?.as_ref()?)))
            .collect();
        let Some(&(_, first)) = mine.first() else {
            continue;
        };
        let mut counts: BTreeMap<(String, String), u64> = BTreeMap::new();
        let mut lines: Vec<(u64, Vec<String>)> = Vec::new();
        for &(p, a) in &mine {
            for (g, r, c) in &a.counts {
                *counts.entry((g.clone(), r.clone())).or_default() += c;
            }
            for (j, (_, fields)) in a.lines.iter().enumerate() {
                let pos = line_pos.get(&(i, p, j as u64)).copied().ok_or_else(|| {
                    bad(format!(
                        "{}: a disagreeing line's event is not in the journal; run that partition again",
                        shown(&parts[p].dir)
                    ))
                })?;
                lines.push((pos, fields.clone()));
            }
        }
        lines.sort_by_key(|(pos, _)| *pos);
        lines.truncate(crate::run::agreement::FIRST);
        joined.push(AgreementPart {
            limiter: first.limiter.clone(),
            counts: counts.into_iter().map(|((g, r), c)| (g, r, c)).collect(),
            lines,
        });
    }
    crate::run::agreement::write_parts(&joined, dir)
}

/// `ratesim merge`.
pub fn command(args: crate::cli::MergeArgs) -> anyhow::Result<()> {
    let said = merge(&args.dirs, &args.out, !args.no_plots, !args.no_html)?;
    if !args.quiet {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{said}");
        let _ = writeln!(err, "results in {}", args.out.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    #[test]
    fn the_whole_runs_command_drops_keys_and_takes_the_merges_out() {
        let c = words("ratesim run s.toml --keys 2/4 --seed 3 --out p2 --quiet");
        assert_eq!(
            whole_command(&c, Path::new("all")),
            words("ratesim run s.toml --seed 3 --out all --quiet")
        );
        let c = words("ratesim run s.toml --keys=auto --out=p2");
        assert_eq!(
            whole_command(&c, Path::new("all")),
            words("ratesim run s.toml --out=all")
        );
        assert_eq!(
            command_without_keys_and_out(&words("ratesim run s --keys 1/2 --out a --seed 1")),
            command_without_keys_and_out(&words("ratesim run s --out b --keys 2/2 --seed 1")),
        );
    }
}
