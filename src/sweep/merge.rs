//! `ratesim sweep merge DIR... --out DIR`: the shards of one sweep joined
//! into the unsharded result, byte for byte.
//!
//! Every shard carries `sweep.json` ([`super::manifest`]); shards are
//! joined only when they agree on the scenario text, `--set`, the grid,
//! the shard count and the recommendation flags, and when every shard
//! `1/N … N/N` is given exactly once. Their rows are put back in point
//! order, and the charts, `recommendation.md` and `summary.md` are drawn
//! from the joined `sweep.csv` exactly as an unsharded sweep draws them.

use std::collections::BTreeMap;
use std::io::Write as _;

use super::grid::Shard;
use super::manifest::Manifest;
use super::{records, CSV};
use crate::cli::SweepMergeArgs;
use crate::error::InputError;
use crate::staging::Staging;

pub fn command(args: SweepMergeArgs) -> anyhow::Result<()> {
    let mut shards: Vec<(Manifest, Vec<u8>)> = Vec::new();
    for dir in &args.dirs {
        let m = Manifest::read(dir)?;
        let path = dir.join(CSV);
        let text = std::fs::read(&path)
            .map_err(|e| InputError::new(format!("{}: cannot be read: {e}", path.display())))?;
        shards.push((m, text));
    }
    let first = &shards[0].0;
    for (k, (m, _)) in shards.iter().enumerate().skip(1) {
        if let Some(why) = first.mismatch(m) {
            return Err(InputError::new(format!(
                "{} and {} are not shards of one sweep: {why}",
                args.dirs[0].display(),
                args.dirs[k].display()
            ))
            .into());
        }
    }
    let n = first.shard.n;
    let mut seen: BTreeMap<u64, usize> = BTreeMap::new();
    for (k, (m, _)) in shards.iter().enumerate() {
        if let Some(j) = seen.insert(m.shard.k, k) {
            return Err(InputError::new(format!(
                "{} and {} are both shard {}",
                args.dirs[j].display(),
                args.dirs[k].display(),
                m.shard
            ))
            .into());
        }
    }
    let missing: Vec<String> = (1..=n)
        .filter(|k| !seen.contains_key(k))
        .map(|k| format!("{k}/{n}"))
        .collect();
    if !missing.is_empty() {
        return Err(InputError::new(format!(
            "shard(s) {} missing: give every shard of the sweep once",
            missing.join(", ")
        ))
        .into());
    }

    let mut header: Option<Vec<u8>> = None;
    let mut by_point: BTreeMap<usize, (usize, Vec<u8>)> = BTreeMap::new();
    for (dir, (m, text)) in args.dirs.iter().zip(&shards) {
        let bad = |why: String| InputError::new(format!("{}: {why}", dir.join(CSV).display()));
        let (head, rows) = records(text).map_err(|e| bad(format!("not a sweep.csv: {e}")))?;
        let head = text[head].to_vec();
        match &header {
            None => header = Some(head),
            Some(h) if *h != head => {
                return Err(bad("its header differs from the other shards'".into()).into())
            }
            Some(_) => {}
        }
        let held: usize = m.rows.iter().map(|(_, r)| r).sum();
        if held != rows.len() {
            return Err(bad(format!(
                "{} rows, but its sweep.json lists {held}",
                rows.len()
            ))
            .into());
        }
        let mut next = rows.iter();
        for &(point, count) in &m.rows {
            if !m.shard.has(point) || point as u64 >= m.points {
                return Err(bad(format!(
                    "holds point {point}, which is not shard {}'s",
                    m.shard
                ))
                .into());
            }
            let mut bytes = Vec::new();
            for r in next.by_ref().take(count) {
                bytes.extend_from_slice(&text[r.clone()]);
            }
            by_point.insert(point, (count, bytes));
        }
    }
    if by_point.len() as u64 != first.points {
        return Err(InputError::new(format!(
            "the shards hold {} of the sweep's {} points",
            by_point.len(),
            first.points
        ))
        .into());
    }
    let mut csv_text = header.unwrap_or_default();
    let mut rows = Vec::new();
    for (point, (count, bytes)) in by_point {
        csv_text.extend_from_slice(&bytes);
        rows.push((point, count));
    }
    let mut manifest = first.clone();
    manifest.shard = Shard::WHOLE;
    manifest.rows = rows;
    // The scenario, as the first shard found it, from the merged directory.
    manifest.scenario_file = first.scenario_file.as_ref().and_then(|rel| {
        let file = super::manifest::absolute(&args.dirs[0].join(rel)).ok()?;
        let dir = super::manifest::absolute(&args.out).ok()?;
        Some(super::manifest::relative(&dir, &file).display().to_string())
    });
    let staging = Staging::new(&args.out, &args.dirs)?;
    if !args.quiet {
        let mut joined: Vec<(u64, String)> = shards
            .iter()
            .zip(&args.dirs)
            .map(|((m, _), d)| (m.shard.k, d.display().to_string()))
            .collect();
        joined.sort();
        let list: Vec<String> = joined.iter().map(|(k, d)| format!("{k}/{n} {d}")).collect();
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "joined {n} shard(s) of {}: {}",
            first.scenario,
            list.join(", ")
        )?;
    }
    super::finish(
        staging,
        &args.out,
        &manifest,
        &csv_text,
        super::render::Drawn {
            plots: !args.no_plots,
            html: !args.no_html,
        },
        args.quiet,
    )
}
