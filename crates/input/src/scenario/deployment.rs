//! `[deployment]` and `[[limiter]] deployment = { … }` → a validated
//! [`Deployment`].
//!
//! The top-level table is the default for every limiter; a limiter's own
//! table overrides it key by key. Store parameters (`store_latency`,
//! `atomic`, `timeout`, `failure_rate`, `outages`, `on_store_failure`,
//! `fallback`, `cache_over_limit`) only act when the scope is `"global"`,
//! and `share` only when it is `"local"`.

use toml::{Table, Value};

use super::limiters;
use super::Defaults;
use super::LimiterSpec;
use crate::clock::Nanos;
use crate::deploy::{Deployment, Latency, OnFailure, Routing, Scope};
use crate::error::InputError;
use crate::fields::Fields;

/// The most instances a deployment may have.
pub(crate) const MAX_INSTANCES: u64 = 10_000;

/// The top-level table merged with a limiter's: the limiter's keys win.
pub fn merge(top: Option<&Table>, own: Option<&Table>) -> Table {
    let mut t = top.cloned().unwrap_or_default();
    if let Some(own) = own {
        for (k, v) in own {
            t.insert(k.clone(), v.clone());
        }
    }
    t
}

/// Parses a (merged) deployment table for `limiter`; a fallback that takes
/// a parameter from `[defaults] limit` sets `limiter.reads_default_limit`.
pub fn parse(
    f: &mut Fields,
    limiter: &mut LimiterSpec,
    defaults: &Defaults,
) -> Result<Deployment, InputError> {
    let mut d = Deployment::default();
    if let Some(n) = f.opt_count_max("instances", 1, MAX_INSTANCES)? {
        d.instances = n as u32;
    }
    d.routing = match f.opt_str("routing")? {
        None | Some("round_robin") => Routing::RoundRobin,
        Some("random") => Routing::Random,
        Some("hash_client") => Routing::HashClient,
        Some("hash_ip") => Routing::HashIp,
        Some(other) => {
            return Err(InputError::new(format!(
            "{}: {other_q} — accepted: \"round_robin\", \"random\", \"hash_client\", \"hash_ip\"",
            f.at("routing"), other_q = crate::error::quoted(other))))
        }
    };
    let share = f.opt_bool("share")?.unwrap_or(false);
    let atomic = f.opt_bool("atomic")?.unwrap_or(true);
    d.scope = match f.opt_str("scope")? {
        None | Some("local") => Scope::Local { share },
        Some("global") => Scope::Global { atomic },
        Some(other) => {
            return Err(InputError::new(format!(
                "{}: {other_q} — accepted: \"local\", \"global\"",
                f.at("scope"),
                other_q = crate::error::quoted(other)
            )))
        }
    };
    d.latency = parse_latency(f)?;
    d.timeout = f.opt_duration("timeout", false)?;
    if let Some((num, den)) = f.opt_decimal("failure_rate")? {
        if num > den {
            return Err(InputError::new(format!(
                "{}: {} — a probability from 0 to 1, e.g. 0.01",
                f.at("failure_rate"),
                crate::clock::decimal(num, den)
            )));
        }
        let g = crate::clock::gcd(num, den).max(1);
        let (num, den) = (num / g, den / g);
        if den > u64::MAX as u128 {
            return Err(InputError::new(format!(
                "{}: too many decimals",
                f.at("failure_rate")
            )));
        }
        d.failure_rate = (num as u64, den as u64);
    }
    d.outages = parse_outages(f)?;
    d.on_failure = match f.opt_str("on_store_failure")? {
        None | Some("fail_open") => OnFailure::FailOpen,
        Some("fail_closed") => OnFailure::FailClosed,
        Some("local_fallback") => OnFailure::LocalFallback,
        Some(other) => {
            return Err(InputError::new(format!(
                "{}: {other_q} — accepted: \"fail_open\", \"fail_closed\", \"local_fallback\"",
                f.at("on_store_failure"),
                other_q = crate::error::quoted(other)
            )))
        }
    };
    d.fallback = match f.opt_table("fallback")? {
        Some(t) => {
            let fallback = parse_fallback(&f.at("fallback"), t, limiter, defaults)?;
            limiter.reads_default_limit |= fallback.reads_default_limit;
            Some(fallback.algorithm)
        }
        None => None,
    };
    if d.on_failure == OnFailure::LocalFallback && d.fallback.is_none() {
        return Err(f.missing(
            "fallback",
            "local_fallback needs the instances' own limit, e.g. fallback = { limit = 25 }",
        ));
    }
    d.cache_over_limit = f.opt_bool("cache_over_limit")?.unwrap_or(false);
    f.finish()?;
    if share && d.instances > 1 {
        d.shared = Some(
            limiter
                .algorithm
                .divided(d.instances as u64)
                .ok_or_else(|| {
                    InputError::new(format!(
                        "{}: true — the limiter's rate divided by {} instances cannot be held exactly",
                        f.at("share"),
                        d.instances
                    ))
                })?,
        );
    }
    Ok(d)
}

fn parse_latency(f: &mut Fields) -> Result<Latency, InputError> {
    if let Some(Value::Table(_)) = f.peek("store_latency") {
        let t = f.opt_table("store_latency")?.expect("checked");
        let mut g = Fields::new(f.at("store_latency"), t);
        let median = g
            .opt_duration("median", false)?
            .ok_or_else(|| g.missing("median", "the median round trip, e.g. \"1ms\""))?;
        let p99 = g
            .opt_duration("p99", false)?
            .ok_or_else(|| g.missing("p99", "the 99th-percentile round trip, e.g. \"5ms\""))?;
        g.finish()?;
        if p99 < median {
            return Err(InputError::new(format!(
                "{}: \"{p99}\" — must be at least the median ({median})",
                g.at("p99")
            )));
        }
        return Ok(if p99 == median {
            Latency::Fixed(median)
        } else {
            Latency::LogNormal { median, p99 }
        });
    }
    Ok(Latency::Fixed(
        f.opt_duration("store_latency", true)?
            .unwrap_or(Nanos::ZERO),
    ))
}

fn parse_outages(f: &mut Fields) -> Result<Vec<(Nanos, Nanos)>, InputError> {
    let mut outages = Vec::new();
    for (path, t) in f.opt_tables("outages")? {
        let mut g = Fields::new(path, t);
        let start = g
            .opt_duration("start", true)?
            .ok_or_else(|| g.missing("start", "when the outage starts, e.g. \"3s\""))?;
        let end = g
            .opt_duration("end", false)?
            .ok_or_else(|| g.missing("end", "when the outage ends, e.g. \"5s\""))?;
        g.finish()?;
        if end <= start {
            return Err(InputError::new(format!(
                "{}: \"{end}\" — must be after start ({start})",
                g.at("end")
            )));
        }
        if let Some(&(_, prev_end)) = outages.last() {
            if start < prev_end {
                return Err(InputError::new(format!(
                    "{}: \"{start}\" — outages must be in order and must not overlap (the previous one ends at {prev_end})",
                    g.at("start")
                )));
            }
        }
        outages.push((start, end));
    }
    Ok(outages)
}

/// A fallback limiter: a limiter table without `name` or `key_by` (it keys as
/// its limiter does), whose `algorithm` defaults to its limiter's.
fn parse_fallback(
    path: &str,
    t: &Table,
    limiter: &LimiterSpec,
    defaults: &Defaults,
) -> Result<LimiterSpec, InputError> {
    for key in ["name", "key_by", "traffic", "deployment"] {
        if t.contains_key(key) {
            return Err(InputError::new(format!(
                "{path}.{key}: not accepted — the fallback keys and routes as its limiter does"
            )));
        }
    }
    let mut t = t.clone();
    if !t.contains_key("algorithm") && !t.contains_key("implementation") {
        // The limiter's own implementation if it named one (its knobs
        // included), else its algorithm.
        let (key, value) = match limiter.implementation {
            Some(i) => ("implementation", i),
            None => ("algorithm", limiter.algorithm.name()),
        };
        t.insert(key.to_string(), Value::String(value.to_string()));
    }
    let mut f = Fields::new(path, &t);
    let spec = limiters::parse(&mut f, defaults)?;
    f.finish()?;
    Ok(spec)
}

/// A routing as a scenario names it.
pub fn routing_name(r: Routing) -> &'static str {
    match r {
        Routing::RoundRobin => "round_robin",
        Routing::Random => "random",
        Routing::HashClient => "hash_client",
        Routing::HashIp => "hash_ip",
    }
}
