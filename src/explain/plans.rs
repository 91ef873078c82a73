//! `ratesim explain plans` — several limits on one request: which layer
//! rejects whom, on the shipped `plans` scenario (docs/semantics.md §13).
//!
//! Reads the run's `sources.csv`: the chain's row per source (what the
//! clients met) and each member's (what that layer was asked and rejected).
//! Every number in the text comes from those rows.

use std::collections::HashMap;
use std::fmt::Write as _;

use anyhow::{anyhow, Context as _};

use super::{wrap, Context, Topic};
use crate::rundir::summary::SourceRow;
use crate::scenario::Load as _;
use crate::scenario::Scenario;

pub(crate) const TOPIC: Topic = Topic {
    name: "plans",
    about: "a free plan, a pro plan and a global cap on one request: which layer rejects whom",
    scenario,
    text: include_str!("../../scenarios/plans.toml"),
    explain,
};

fn scenario() -> Result<Scenario, crate::InputError> {
    Scenario::load("plans")
}

/// `sources.csv`'s rows, by (limiter, source), as the run directory's
/// model reads them.
type Rows = HashMap<(String, String), SourceRow>;

fn read_sources(dir: &std::path::Path) -> anyhow::Result<Rows> {
    let path = dir.join(crate::rundir::SOURCES_CSV);
    let mut rdr =
        csv::Reader::from_path(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut rows = Rows::new();
    for r in rdr.deserialize::<SourceRow>() {
        let r = r.with_context(|| format!("{}", path.display()))?;
        rows.insert((r.limiter.clone(), r.source.clone()), r);
    }
    Ok(rows)
}

/// `n` with thousands separated by commas, as the scenario's comment writes it.
fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn explain(ctx: &Context) -> anyhow::Result<String> {
    let s = ctx.scenario;
    let (chain_index, spec) = s
        .limiters
        .iter()
        .enumerate()
        .find_map(|(i, l)| l.chain.as_ref().map(|c| (i, c)))
        .ok_or_else(|| anyhow!("the scenario has no chain"))?;
    let chain = &s.limiters[chain_index].name;
    let rows = read_sources(ctx.dir)?;
    let empty = SourceRow::default();
    let get = |l: &str, src: &str| -> &SourceRow {
        rows.get(&(l.to_string(), src.to_string()))
            .unwrap_or(&empty)
    };
    let members: Vec<&str> = spec
        .members
        .iter()
        .map(|&m| s.limiters[m].name.as_str())
        .collect();
    // Each source with its [[traffic]], which the members see or not.
    let sources: Vec<(usize, &str)> = s.sources().collect();
    let sees = |m: usize, traffic: usize| s.limiters[spec.members[m]].traffic.contains(&traffic);

    let mut out = String::new();
    let _ = writeln!(
        out,
        "Several limits on one request: which layer rejects whom — ratesim explain plans\n"
    );
    let _ = writeln!(
        out,
        "{}\n",
        wrap(
            &format!(
                "Chain {chain:?} asks {} about every request, in that order, {}. A layer whose key is empty for a request (here: a plan's layer and the other plan's requests) is not asked.",
                members.join(", then "),
                match spec.mode {
                    crate::limiter::chain::ChainMode::AllOrNothing => "all or nothing, as nginx asks the limit_req zones of a location: the first layer that would reject rejects the request, the layers after it are not asked, and no layer counts it",
                    crate::limiter::chain::ChainMode::EachCounts => "each counting, as envoyproxy/ratelimit does: every layer counts the request, and it is rejected if any layer rejects it",
                }
            ),
            76,
            0
        )
    );

    // The table: per source, requests, rejected by each layer, passed.
    let mut header = vec!["source".to_string(), "attempts".into()];
    header.extend(members.iter().map(|m| format!("by {m}")));
    header.push("passed".into());
    let mut table: Vec<Vec<String>> = vec![header];
    for &(k, src) in &sources {
        let mut row = vec![src.to_string(), count(get(chain, src).attempts)];
        for (m, name) in members.iter().enumerate() {
            row.push(if sees(m, k) {
                count(get(name, src).rejected)
            } else {
                "-".into()
            });
        }
        row.push(count(get(chain, src).passed));
        table.push(row);
    }
    let _ = writeln!(
        out,
        "Who was rejected, and by which layer (sources.csv; attempts count retries; - : not asked):\n"
    );
    out.push_str(&super::columns(&table));
    let _ = writeln!(out);

    // Per layer: whom it rejects.
    for (m, name) in members.iter().enumerate() {
        let hit: Vec<String> = sources
            .iter()
            .filter(|&&(k, src)| sees(m, k) && get(name, src).rejected > 0)
            .map(|&(_, src)| {
                format!(
                    "{src}: {} of {} attempts ({} of {} clients)",
                    count(get(name, src).rejected),
                    count(get(chain, src).attempts),
                    get(name, src).clients_limited,
                    get(chain, src).clients
                )
            })
            .collect();
        let overruled: u64 = sources
            .iter()
            .map(|&(_, src)| {
                get(name, src).attempts
                    - get(name, src).admitted
                    - get(name, src).delayed
                    - get(name, src).rejected
            })
            .sum();
        let text = if hit.is_empty() {
            format!("{name} rejects nobody; {} times it would have passed a request another layer then rejected.", count(overruled))
        } else {
            format!("{name} rejects requests of {}.", hit.join("; "))
        };
        let _ = writeln!(out, "- {}", wrap(&text, 74, 2));
    }

    // Per source: limited by its own plan's layer, or by one they share?
    let mut by_shared: Vec<String> = Vec::new();
    let mut shared_layers: Vec<&str> = Vec::new();
    for &(k, src) in &sources {
        let limited = get(chain, src).clients_limited;
        let own: Vec<usize> = (0..members.len())
            .filter(|&m| sees(m, k) && s.limiters[spec.members[m]].traffic.len() < s.traffic.len())
            .collect();
        if limited == 0 || own.is_empty() || own.iter().any(|&m| get(members[m], src).rejected > 0)
        {
            continue;
        }
        by_shared.push(format!(
            "{limited} of the {} {src} clients ({} rejected none)",
            get(chain, src).clients,
            own.iter()
                .map(|&m| members[m])
                .collect::<Vec<_>>()
                .join(", ")
        ));
        for m in (0..members.len()).filter(|&m| sees(m, k) && !own.contains(&m)) {
            if get(members[m], src).rejected > 0 && !shared_layers.contains(&members[m]) {
                shared_layers.push(members[m]);
            }
        }
    }
    if !by_shared.is_empty() {
        let _ = writeln!(
            out,
            "- {}",
            wrap(
                &format!(
                    "Limited by a layer every source shares, not by their own plan's: {} — by {}.",
                    by_shared.join(", "),
                    shared_layers.join(" and ")
                ),
                74,
                2
            )
        );
    }
    for layer in &shared_layers {
        let total: u64 = sources
            .iter()
            .map(|&(_, src)| get(layer, src).rejected)
            .sum();
        if let Some(&(_, top)) = sources
            .iter()
            .max_by_key(|&&(_, src)| get(layer, src).rejected)
        {
            let _ = writeln!(
                out,
                "- {}",
                wrap(
                    &format!(
                        "Most of {layer}'s rejections are {top}'s: {} of {}.",
                        count(get(layer, top).rejected),
                        count(total)
                    ),
                    74,
                    2
                )
            );
        }
    }

    // All or nothing: what a layer after a rejecting one never sees.
    if spec.mode == crate::limiter::chain::ChainMode::AllOrNothing {
        'pairs: for &(k, src) in &sources {
            for i in 0..members.len() {
                let rejected = get(members[i], src).rejected;
                if !sees(i, k) || rejected == 0 {
                    continue;
                }
                if let Some(j) = (i + 1..members.len()).find(|&j| sees(j, k)) {
                    let _ = writeln!(
                        out,
                        "- {}",
                        wrap(
                            &format!(
                                "All or nothing: {} was asked about only {} of the {} attempts of {src} — the {} that {} rejected were counted by no layer.",
                                members[j],
                                count(get(members[j], src).attempts),
                                count(get(chain, src).attempts),
                                count(rejected),
                                members[i]
                            ),
                            74,
                            2
                        )
                    );
                    break 'pairs;
                }
            }
        }
    }
    let _ = writeln!(
        out,
        "\n{}",
        wrap(
            "Next: ratesim sweep plans varies the global cap and recommends the least rate that limits at most 5% of the free users and rejects at most 1% of the pro users' attempts (its [sweep] table).",
            76,
            0
        )
    );
    let _ = writeln!(out, "\nResults and charts: {}", ctx.dir.display());
    Ok(out)
}
