//! Scenario files: TOML in, a validated [`Scenario`] out.
//!
//! Two layers: the file parses into a `toml::Table` (the raw layer), then
//! [`Fields`] walks it into typed values — [`Nanos`], [`Rate`], counts that
//! are known to be positive — so the engine never sees a string or an option
//! it would have to check again. Every error names the field's path, the value
//! and what is accepted.

pub mod backend;
pub mod chains;
pub mod deployment;
pub mod echo;
pub mod limiters;
pub mod text;
pub mod traffic;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::builtin;
use crate::clock::{Nanos, Rate};
use crate::error::InputError;
pub use crate::fields::Fields;
use crate::limiter::Algorithm;
use crate::population::Population;
use crate::traffic::retry::Retry;
use crate::traffic::Pattern;
pub use crate::Origin;
pub use limiters::IMPLEMENTATIONS;
pub use ratesim_core::scenario::*;
use traffic::{ParseCtx, PATTERNS};

/// Reading a [`Scenario`]: from a file or a built-in's name, from TOML text
/// or from a table (after `--set` overrides).
pub trait Load: Sized {
    /// Loads the scenario named by `arg`: a path to a TOML file, or the name
    /// of a built-in scenario.
    fn load(arg: &str) -> Result<Self, InputError>;
    /// Parses and validates scenario text. `stem` is the default name.
    fn parse(text: &str, stem: &str, origin: Origin) -> Result<Self, InputError>;
    /// Validates a scenario's TOML table (after any `--set` overrides,
    /// see [`text`]). `stem` is the default name.
    fn parse_table(table: &toml::Table, stem: &str, origin: Origin) -> Result<Self, InputError>;
}

impl Load for Scenario {
    fn load(arg: &str) -> Result<Scenario, InputError> {
        let path = Path::new(arg);
        if path.is_file() {
            let text = std::fs::read_to_string(path)
                .map_err(|e| InputError::new(format!("{arg}: cannot be read: {e}")))?;
            let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
            return Scenario::parse(
                &text,
                stem.as_deref().unwrap_or("scenario"),
                Origin::File(path.to_path_buf()),
            )
            .map_err(|e| e.within(arg));
        }
        if let Some(b) = builtin::find(arg) {
            return Scenario::parse(b.toml, b.name, Origin::Builtin(b))
                .map_err(|e| e.within(format!("built-in {}", b.name)));
        }
        let builtins: Vec<&str> = builtin::SCENARIOS.iter().map(|b| b.name).collect();
        Err(InputError::new(if path.exists() {
            format!("{arg}: is not a file — give a scenario .toml file")
        } else {
            format!(
                "{arg}: no such file, and no built-in scenario of that name — built-ins: {}",
                builtins.join(", ")
            )
        }))
    }

    fn parse(text: &str, stem: &str, origin: Origin) -> Result<Scenario, InputError> {
        Scenario::parse_table(&text::parse_toml(text)?, stem, origin)
    }

    fn parse_table(
        table: &toml::Table,
        stem: &str,
        origin: Origin,
    ) -> Result<Scenario, InputError> {
        let mut top = Fields::new("", table);
        // `[sweep]` is read by `ratesim sweep`, and checked for `run` and
        // `validate`, by crate::sweep; the scenario itself ignores it.
        top.opt_table("sweep")?;
        let name = top.opt_str("name")?.unwrap_or(stem).to_string();
        let description = top.opt_str("description")?.unwrap_or("").to_string();
        let seed = top.opt_u64("seed")?.unwrap_or(0);
        let duration = top.opt_duration("duration", false)?;

        let defaults_table = top.opt_table("defaults")?.ok_or_else(|| {
            top.missing(
                "defaults",
                "a [defaults] table with limit and window, e.g. limit = 100, window = \"1s\"",
            )
        })?;
        let defaults = parse_defaults(&mut Fields::new("defaults", defaults_table))?;

        let top_deployment = top.opt_table("deployment")?;
        let limiter_tables = top.opt_tables("limiter")?;
        if limiter_tables.is_empty() {
            return Err(top.missing("limiter", "at least one [[limiter]] table"));
        }
        let mut limiters = Vec::new();
        let mut wanted_traffic = Vec::new();
        let mut seen = HashSet::new();
        let mut limiter_paths = Vec::new();
        for (path, t) in limiter_tables {
            limiter_paths.push(path.clone());
            let mut f = Fields::new(path, t);
            let mut spec = limiters::parse(&mut f, &defaults)?;
            wanted_traffic.push((f.at("traffic"), f.opt_str_list("traffic")?));
            let own = f.opt_table("deployment")?;
            if own.is_some() || top_deployment.is_some() {
                let merged = deployment::merge(top_deployment, own);
                let where_ = if own.is_some() {
                    f.at("deployment")
                } else {
                    "deployment".to_string()
                };
                spec.deployment =
                    deployment::parse(&mut Fields::new(where_, &merged), &mut spec, &defaults)?;
            }
            f.finish()?;
            if !seen.insert(spec.name.clone()) {
                return Err(InputError::new(format!(
                    "{}.name: {} — another limiter already has this name; names must be unique (give each a `name`)",
                    f.path(),
                    crate::error::quoted(&spec.name)
                )));
            }
            limiters.push(spec);
        }

        let traffic_tables = top.opt_tables("traffic")?;
        if traffic_tables.is_empty() {
            return Err(top.missing("traffic", "at least one [[traffic]] table"));
        }
        let mut population = Population::default();
        let mut traffic = Vec::new();
        let mut reads_default_limit = limiters.iter().any(|l| l.reads_default_limit);
        let mut pattern_counts: HashMap<&str, usize> = HashMap::new();
        for (_, t) in &traffic_tables {
            if let Some(toml::Value::String(p)) = t.get("pattern") {
                *pattern_counts.entry(p.as_str()).or_default() += 1;
            }
        }
        for (index, (path, t)) in traffic_tables.iter().enumerate() {
            let mut f = Fields::new(path.clone(), t);
            let pattern = f.opt_str("pattern")?.ok_or_else(|| {
                f.missing(
                    "pattern",
                    &format!("one of {}", crate::fields::names(PATTERNS)),
                )
            })?;
            let source_name = match f.opt_str("name")? {
                Some(n) => n.to_string(),
                None if pattern_counts.get(pattern) == Some(&1) => pattern.to_string(),
                None => format!("{pattern}{index}"),
            };
            if traffic.iter().any(|s: &Source| s.name == source_name) {
                return Err(InputError::new(format!(
                    "{}: {source_name_q} — another [[traffic]] already has this name",
                    f.at("name"),
                    source_name_q = crate::error::quoted(&source_name)
                )));
            }
            if !PATTERNS.iter().any(|(n, _)| *n == pattern) {
                return Err(InputError::new(format!(
                    "{}: {pattern_q} — unknown pattern; accepted: {}",
                    f.at("pattern"),
                    crate::fields::names(PATTERNS),
                    pattern_q = crate::error::quoted(pattern)
                )));
            }
            let default_prefix = if pattern_counts.get(pattern) == Some(&1) {
                format!("{pattern}-")
            } else {
                format!("{pattern}{index}-")
            };
            let mut ctx = ParseCtx {
                defaults: &defaults,
                origin: &origin,
                population: &mut population,
                index,
                name: &source_name,
                default_prefix,
                reads_default_limit: false,
            };
            let pattern = traffic::parse(pattern, &mut f, &mut ctx)?;
            reads_default_limit |= ctx.reads_default_limit;
            let retry = match f.opt_table("retry")? {
                Some(t) => traffic::retry::parse(&mut Fields::new(f.at("retry"), t))?,
                None => Retry::NONE,
            };
            f.finish()?;
            let parts = match &pattern {
                Pattern::Trace(t) => traffic::trace::split(&**t)
                    .map(|s| s.names().to_vec())
                    .unwrap_or_default(),
                _ => Vec::new(),
            };
            traffic.push(Source {
                name: source_name,
                pattern,
                retry,
                parts,
            });
        }
        check_source_names(&traffic)?;
        check_some_location_replays(&traffic)?;

        for (spec, (path, wanted)) in limiters.iter_mut().zip(wanted_traffic) {
            spec.traffic = match wanted {
                None => (0..traffic.len()).collect(),
                Some(names) => names
                    .iter()
                    .map(|n| {
                        traffic.iter().position(|s| s.name == *n).ok_or_else(|| {
                            let known: Vec<&str> =
                                traffic.iter().map(|s| s.name.as_str()).collect();
                            InputError::new(format!(
                                "{path}: {n_q} — no [[traffic]] has this name; names: {}",
                                known.join(", "),
                                n_q = crate::error::quoted(n)
                            ))
                        })
                    })
                    .collect::<Result<_, _>>()?,
            };
        }

        chains::parse_all(top.opt_tables("chain")?, &mut limiters)?;
        anchor_quotas(&mut limiters, &traffic);

        let duration = match duration {
            Some(d) => d,
            None => traffic
                .iter()
                .map(|s| s.pattern.last_time())
                .collect::<Option<Vec<_>>>()
                .and_then(|v| v.into_iter().max())
                .ok_or_else(|| {
                    top.missing("duration", "how long to simulate, e.g. \"10s\" (only an all-trace scenario may leave it out)")
                })?,
        };

        let output = match top.opt_table("output")? {
            Some(t) => {
                let mut f = Fields::new("output", t);
                let o = parse_output(&mut f, &defaults, duration)?;
                f.finish()?;
                o
            }
            None => default_output(&defaults, duration),
        };
        check_buckets(&output, duration, "output.resolution")?;
        let backend = match top.opt_table("backend")? {
            Some(t) => Some(backend::parse(&mut Fields::new("backend", t))?),
            None => None,
        };
        backend::check_limiters(&limiters, &limiter_paths, backend.is_some())?;
        top.finish()?;

        let mut inputs = Vec::new();
        if let Origin::File(path) = &origin {
            inputs.push(path.clone());
        }
        for source in &traffic {
            if let Pattern::Trace(t) = &source.pattern {
                if let Some(path) = traffic::trace::file(&**t) {
                    inputs.push(path.to_path_buf());
                }
            }
        }

        Ok(Scenario {
            name,
            description,
            seed,
            duration,
            defaults,
            reads_default_limit,
            limiters,
            traffic,
            output,
            backend,
            population,
            inputs,
            partition: None,
        })
    }
}

/// A quota's periods follow a replayed log's own times (docs/semantics.md
/// §10): `t = 0` is the instant of the first log the limiter reads, its
/// earliest arrival, and `epoch` gives only the offset whose calendar the
/// days, weeks and months are.
fn anchor_quotas(limiters: &mut [LimiterSpec], traffic: &[Source]) {
    for spec in limiters {
        let start = spec.traffic.iter().find_map(|&i| {
            crate::accesslog::AccessLog::of_pattern(&traffic[i].pattern).and_then(|l| l.start())
        });
        let Some(start) = start else { continue };
        let d = &mut spec.deployment;
        let algorithms = [
            Some(&mut spec.algorithm),
            d.fallback.as_mut(),
            d.shared.as_mut(),
        ];
        for a in algorithms.into_iter().flatten() {
            if let Algorithm::Quota(q) = a {
                q.epoch = q.epoch.at(start);
            }
        }
    }
}

/// A location of an access log none of whose lines is in it is idle, and
/// replays nothing (docs/semantics.md §8) — but not every one: when the
/// scenario's access-log sources by location replay nothing at all, the
/// first is an input error.
fn check_some_location_replays(traffic: &[Source]) -> Result<(), InputError> {
    let located: Vec<(usize, &crate::accesslog::AccessLog)> = traffic
        .iter()
        .enumerate()
        .filter_map(|(i, t)| {
            crate::accesslog::AccessLog::of_pattern(&t.pattern)
                .filter(|l| l.options.location.is_some())
                .map(|l| (i, l))
        })
        .collect();
    match located.first() {
        Some(&(i, log)) if located.iter().all(|(_, l)| l.rows() == 0) => {
            Err(InputError::new(format!(
                "traffic[{i}].path: {} has no line inside location {}, nor inside any other location of the scenario",
                crate::error::quoted(&log.shown),
                crate::error::quoted(
                    &log.options.location.as_ref().map(|l| l.shown()).unwrap_or_default()
                )
            )))
        }
        _ => Ok(()),
    }
}

/// Every source's name is unique across the scenario (docs/semantics.md
/// §3): a split trace's sources are named by its field's values, which
/// must meet no other `[[traffic]]`'s name nor another split's value.
fn check_source_names(traffic: &[Source]) -> Result<(), InputError> {
    let q = crate::error::quoted;
    let mut parts: HashMap<&str, usize> = HashMap::new();
    for (t, s) in traffic.iter().enumerate() {
        let Some(field) = split_by(s) else {
            continue;
        };
        for name in &s.parts {
            let named = traffic
                .iter()
                .position(|other| other.name == *name)
                .filter(|&o| o != t);
            if let Some(o) = named {
                return Err(InputError::new(format!(
                    "traffic[{t}].source: {} gives a source named {}, the name of traffic[{o}] — source names must be unique across the scenario; give traffic[{o}] another `name`",
                    q(field),
                    q(name)
                )));
            }
            if let Some(&o) = parts.get(name.as_str()).filter(|&&o| o != t) {
                return Err(InputError::new(format!(
                    "traffic[{t}].source: {} gives a source named {}, as traffic[{o}].source ({}) does — source names must be unique across the scenario; split one of them by another field",
                    q(field),
                    q(name),
                    q(split_by(&traffic[o]).unwrap_or_default())
                )));
            }
            parts.insert(name, t);
        }
    }
    Ok(())
}

/// The field a `[[traffic]]` splits into sources by, if it does.
fn split_by(s: &Source) -> Option<&str> {
    match &s.pattern {
        Pattern::Trace(t) => traffic::trace::split(&**t).map(|s| s.field.as_str()),
        _ => None,
    }
}

fn parse_defaults(f: &mut Fields) -> Result<Defaults, InputError> {
    let limit = f
        .opt_count("limit", 1)?
        .ok_or_else(|| f.missing("limit", "the policy's limit per window, e.g. 100"))?;
    let window = f
        .opt_duration("window", false)?
        .ok_or_else(|| f.missing("window", "the policy's window, e.g. \"1s\""))?;
    if Rate::per(limit, window).is_none() {
        return Err(InputError::new(format!(
            "defaults: limit {limit} per window {window} is not a rate ratesim can represent exactly"
        )));
    }
    f.finish()?;
    Ok(Defaults { limit, window })
}

fn default_output(d: &Defaults, duration: Nanos) -> OutputSpec {
    OutputSpec {
        dir: None,
        decisions: false,
        headers: false,
        resolution: default_resolution(d.window, duration),
    }
}

fn parse_output(f: &mut Fields, d: &Defaults, duration: Nanos) -> Result<OutputSpec, InputError> {
    let dir = f.opt_str("dir")?.map(PathBuf::from);
    // `true`, or `"headers"` for the RateLimit columns (docs/semantics.md §11).
    let (decisions, headers) = match f.opt_bool_or_word("decisions", &["headers"])? {
        None => (false, false),
        Some(Ok(on)) => (on, false),
        Some(Err(_)) => (true, true),
    };
    let resolution = f
        .opt_duration("resolution", false)?
        .unwrap_or(default_resolution(d.window, duration));
    Ok(OutputSpec {
        dir,
        decisions,
        headers,
        resolution,
    })
}

fn check_buckets(o: &OutputSpec, duration: Nanos, path: &str) -> Result<(), InputError> {
    let buckets = planned_buckets(o.resolution, duration);
    if buckets > MAX_BUCKETS {
        return Err(InputError::new(format!(
            "{path}: \"{}\" — gives {buckets} time-series buckets over {}; at most {MAX_BUCKETS} (choose a coarser resolution)",
            o.resolution, duration
        )));
    }
    Ok(())
}
