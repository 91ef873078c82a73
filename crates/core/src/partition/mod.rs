//! Key partitions: one run split into N runs of disjoint keys
//! (docs/semantics.md §12).
//!
//! A limiter keeps state per key and no key's decisions depend on another
//! key's, so the keys can be simulated apart: partition K of N takes the
//! arrivals whose key text hashes, by FNV-1a 64, to K − 1 modulo N, and
//! drops the others after they were generated — every stream draws what it
//! always draws, so the arrivals a partition keeps are exactly the whole
//! run's.
//!
//! ```text
//! keep(arrival)  ⇔  fnv1a(key text) mod N = K − 1
//! ```
//!
//! The key is one text for the whole scenario: every limiter must key by
//! the same field (all `client`, or all `ip`), so that a client's attempts
//! (its retries, its per-client counts) are all in one partition. What
//! couples keys cannot be split: a `global` key, a `[backend]` every key
//! shares, a limiter that reads the backend, round-robin routing over
//! several instances (an attempt's instance depends on every attempt
//! before it). [`KeyPartition::check`] refuses those, naming why.

pub mod journal;
pub mod wire;

use crate::deploy::{fnv1a_name, Routing};
use crate::error::InputError;
use crate::population::Population;
use crate::scenario::{KeyBy, Partition, Scenario};

/// Partition `k` (from 1) of `n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyPartition {
    pub k: u64,
    pub n: u64,
}

/// `K/N` of `flag` (`--keys`, `--shard`): K from 1 to N.
pub fn parse_k_of_n(flag: &str, text: &str) -> Result<(u64, u64), InputError> {
    let bad = |why: &str| InputError::new(format!("{flag} {}: {why}", crate::error::quoted(text)));
    let (k, n) = text
        .split_once('/')
        .ok_or_else(|| bad("expected K/N, e.g. 2/8 (the second of eight shards)"))?;
    let k: u64 = k
        .trim()
        .parse()
        .map_err(|_| bad("K is not a whole number; expected K/N, e.g. 2/8"))?;
    let n: u64 = n
        .trim()
        .parse()
        .map_err(|_| bad("N is not a whole number; expected K/N, e.g. 2/8"))?;
    if n == 0 || k == 0 || k > n {
        return Err(bad(
            "K must be from 1 to N, and N at least 1, e.g. 1/4 to 4/4",
        ));
    }
    Ok((k, n))
}

impl KeyPartition {
    /// `--keys K/N`.
    pub fn parse(text: &str) -> Result<KeyPartition, InputError> {
        let (k, n) = parse_k_of_n("--keys", text)?;
        Ok(KeyPartition { k, n })
    }

    /// The key field `scenario` is partitioned by, or why it cannot be.
    pub fn check(&self, scenario: &Scenario) -> Result<KeyBy, InputError> {
        let refuse = |why: String| {
            Err(InputError::new(format!(
                "--keys {}/{}: {why}; run it whole (without --keys)",
                self.k, self.n
            )))
        };
        if scenario.backend.is_some() {
            return refuse(
                "the scenario has a [backend], which every key's passes share, so its keys are not independent".into(),
            );
        }
        if let Some(t) = scenario
            .traffic
            .iter()
            .find(|t| matches!(t.pattern, crate::traffic::Pattern::Closed(_)))
        {
            return refuse(format!(
                "traffic {} is closed-loop: its clients send as each limiter answers them, so its arrivals are each limiter's run's own, not one stream a partition can take its keys from",
                crate::error::quoted(&t.name)
            ));
        }
        let mut by: Option<(KeyBy, &str)> = None;
        for l in &scenario.limiters {
            let name = crate::error::quoted(&l.name);
            if l.chain.is_some() {
                // A chain keys as its members do.
                continue;
            }
            if l.key_by == KeyBy::Global {
                return refuse(format!(
                    "limiter {name} is keyed \"global\": one key for every request cannot be partitioned"
                ));
            }
            if l.algorithm.needs_backend() {
                return refuse(format!("limiter {name} reads the backend every key shares"));
            }
            let d = &l.deployment;
            if d.instances > 1 && d.routing == Routing::RoundRobin {
                return refuse(format!(
                    "limiter {name} routes round robin over {} instances: an attempt's instance depends on every other key's attempts (route by hash_client, hash_ip or random)",
                    d.instances
                ));
            }
            match by {
                Some((b, first)) if b != l.key_by => {
                    return refuse(format!(
                        "limiter {} is keyed by {} and limiter {name} by {}: a partition holds the keys of one field, so every limiter must key by the same one",
                        crate::error::quoted(first),
                        b.as_str(),
                        l.key_by.as_str()
                    ));
                }
                Some(_) => {}
                None => by = Some((l.key_by, l.name.as_str())),
            }
        }
        match by {
            Some((b, _)) => Ok(b),
            None => refuse("the scenario has no limiter".into()),
        }
    }

    /// Checks `scenario` (see [`KeyPartition::check`]) and makes it this
    /// partition of itself.
    pub fn apply(self, scenario: &mut Scenario) -> Result<(), InputError> {
        let by = self.check(scenario)?;
        scenario.partition = Some(Partition {
            k: self.k,
            n: self.n,
            by,
        });
        Ok(())
    }
}

/// Per id of the field `p.by` (client or address id of `population`),
/// whether its key is in partition `p`.
pub fn members(p: &Partition, population: &Population) -> Vec<bool> {
    let keep = |name| fnv1a_name(name) % p.n == p.k - 1;
    match p.by {
        KeyBy::Ip => (0..population.ips() as u32)
            .map(|id| keep(population.ip_name(id)))
            .collect(),
        _ => (0..population.clients() as u32)
            .map(|id| keep(population.client_name(id)))
            .collect(),
    }
}
