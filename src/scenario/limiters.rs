//! `[[limiter]]` tables → validated limiter specifications.
//!
//! Each algorithm's parameters default from `[defaults]` (`limit` and
//! `window`) as DESIGN §2 lists them; a parameter the algorithm does not take
//! is an unknown field.

use serde_json::json;

use super::fields::Fields;
use super::Defaults;
use crate::clock::{Nanos, Rate};
use crate::error::InputError;
use crate::limiter::{
    fixed_window, gcra, interval_bucket, leaky_bucket, sliding_counter, sliding_log, token_bucket,
    Limiter,
};

/// What a limiter keys its state on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyBy {
    Client,
    Ip,
    Global,
}

impl KeyBy {
    pub fn as_str(self) -> &'static str {
        match self {
            KeyBy::Client => "client",
            KeyBy::Ip => "ip",
            KeyBy::Global => "global",
        }
    }
}

/// A validated algorithm with its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    TokenBucket(token_bucket::Config),
    IntervalBucket(interval_bucket::Config),
    Gcra(gcra::Config),
    LeakyBucket(leaky_bucket::Config),
    FixedWindow(fixed_window::Config),
    SlidingLog(sliding_log::Config),
    SlidingCounter(sliding_counter::Config),
}

/// Every algorithm name with a one-line description, for `ratesim list`.
pub const ALGORITHMS: &[(&str, &str)] = &[
    (
        "token_bucket",
        "continuous refill up to `capacity` at `rate` (Envoy local rate limit)",
    ),
    (
        "interval_bucket",
        "`tokens_per_fill` every `fill_interval` up to `max_tokens` (Envoy's timer bucket)",
    ),
    (
        "gcra",
        "one theoretical arrival time; decides as a token bucket of `burst` (governor, redis-cell)",
    ),
    (
        "leaky_bucket",
        "shaper: delays up to `queue` requests to `rate`, `delay` pass at once (nginx limit_req)",
    ),
    (
        "fixed_window",
        "counter per aligned `window`; 2x `limit` across a boundary (envoyproxy/ratelimit)",
    ),
    (
        "sliding_log",
        "exact log of the last `window`; 8 bytes per live entry (Redis sorted sets)",
    ),
    (
        "sliding_counter",
        "previous window weighted by its remaining share (Cloudflare)",
    ),
];

impl Algorithm {
    pub fn name(&self) -> &'static str {
        match self {
            Algorithm::TokenBucket(_) => "token_bucket",
            Algorithm::IntervalBucket(_) => "interval_bucket",
            Algorithm::Gcra(_) => "gcra",
            Algorithm::LeakyBucket(_) => "leaky_bucket",
            Algorithm::FixedWindow(_) => "fixed_window",
            Algorithm::SlidingLog(_) => "sliding_log",
            Algorithm::SlidingCounter(_) => "sliding_counter",
        }
    }

    /// A fresh limiter with no state.
    pub fn build(&self) -> Box<dyn Limiter> {
        match *self {
            Algorithm::TokenBucket(c) => Box::new(token_bucket::TokenBucket::new(c)),
            Algorithm::IntervalBucket(c) => Box::new(interval_bucket::IntervalBucket::new(c)),
            Algorithm::Gcra(c) => Box::new(gcra::Gcra::new(c)),
            Algorithm::LeakyBucket(c) => Box::new(leaky_bucket::LeakyBucket::new(c)),
            Algorithm::FixedWindow(c) => Box::new(fixed_window::FixedWindow::new(c)),
            Algorithm::SlidingLog(c) => Box::new(sliding_log::SlidingLog::new(c)),
            Algorithm::SlidingCounter(c) => Box::new(sliding_counter::SlidingCounter::new(c)),
        }
    }

    /// This policy divided among `n` instances: rates exactly, counts
    /// rounded down (at least 1; a queue or delay may reach 0). `None` when
    /// a divided rate cannot be held exactly.
    pub fn divided(&self, n: u64) -> Option<Algorithm> {
        let count = |c: u64| (c / n).max(1);
        let rate = |r: Rate| Rate::new(r.tokens(), r.per_ns() * n as u128);
        Some(match *self {
            Algorithm::TokenBucket(c) => Algorithm::TokenBucket(token_bucket::Config {
                capacity: count(c.capacity),
                rate: rate(c.rate)?,
            }),
            Algorithm::Gcra(c) => Algorithm::Gcra(gcra::Config {
                burst: count(c.burst),
                rate: rate(c.rate)?,
            }),
            Algorithm::IntervalBucket(c) => Algorithm::IntervalBucket(interval_bucket::Config {
                max_tokens: count(c.max_tokens),
                tokens_per_fill: count(c.tokens_per_fill),
                fill_interval: c.fill_interval,
            }),
            Algorithm::LeakyBucket(c) => Algorithm::LeakyBucket(leaky_bucket::Config {
                rate: rate(c.rate)?,
                queue: c.queue / n,
                delay: c.delay / n,
            }),
            Algorithm::FixedWindow(c) => Algorithm::FixedWindow(fixed_window::Config {
                limit: count(c.limit),
                ..c
            }),
            Algorithm::SlidingLog(c) => Algorithm::SlidingLog(sliding_log::Config {
                limit: count(c.limit),
                ..c
            }),
            Algorithm::SlidingCounter(c) => Algorithm::SlidingCounter(sliding_counter::Config {
                limit: count(c.limit),
                ..c
            }),
        })
    }

    /// The resolved parameters, for `summary.json` and the terminal.
    pub fn params(&self) -> serde_json::Value {
        match *self {
            Algorithm::TokenBucket(c) => {
                json!({ "capacity": c.capacity, "rate": c.rate.to_string() })
            }
            Algorithm::IntervalBucket(c) => json!({
                "max_tokens": c.max_tokens,
                "tokens_per_fill": c.tokens_per_fill,
                "fill_interval": c.fill_interval.to_string(),
            }),
            Algorithm::Gcra(c) => json!({ "burst": c.burst, "rate": c.rate.to_string() }),
            Algorithm::LeakyBucket(c) => json!({
                "rate": c.rate.to_string(), "queue": c.queue, "delay": c.delay,
            }),
            Algorithm::FixedWindow(fixed_window::Config {
                limit,
                window,
                count_rejected,
            })
            | Algorithm::SlidingLog(sliding_log::Config {
                limit,
                window,
                count_rejected,
            })
            | Algorithm::SlidingCounter(sliding_counter::Config {
                limit,
                window,
                count_rejected,
            }) => json!({
                "limit": limit, "window": window.to_string(), "count_rejected": count_rejected,
            }),
        }
    }
}

#[derive(Debug, Clone)]
pub struct LimiterSpec {
    pub name: String,
    pub key_by: KeyBy,
    pub algorithm: Algorithm,
    /// Indices of the `[[traffic]]` sources this limiter sees (all by default).
    pub traffic: Vec<usize>,
    /// Where its state lives: one instance, many, or a shared store.
    pub deployment: crate::deploy::Deployment,
}

pub fn parse(f: &mut Fields, d: &Defaults) -> Result<LimiterSpec, InputError> {
    let algorithm_name = f
        .opt_str("algorithm")?
        .ok_or_else(|| f.missing("algorithm", &format!("one of {}", names(ALGORITHMS))))?;
    let name = match f.opt_str("name")? {
        Some("") => {
            return Err(InputError::new(format!(
                "{}: \"\" — a name must not be empty",
                f.at("name")
            )))
        }
        Some(n) if n.contains([',', '"', '\n', '\r']) => {
            return Err(InputError::new(format!(
                "{}: {} — a name may not contain commas, quotes or line breaks",
                f.at("name"),
                crate::error::quote(&format!("{n:?}"))
            )))
        }
        Some(n) => n.to_string(),
        None => algorithm_name.to_string(),
    };
    let key_by = match f.opt_str("key_by")? {
        None | Some("client") => KeyBy::Client,
        Some("ip") => KeyBy::Ip,
        Some("global") => KeyBy::Global,
        Some(other) => {
            return Err(InputError::new(format!(
                "{}: {other_q} — accepted: \"client\", \"ip\", \"global\"",
                f.at("key_by"),
                other_q = crate::error::quoted(other)
            )))
        }
    };
    let default_rate = || Rate::per(d.limit, d.window).expect("defaults are validated");
    let count_rejected =
        |f: &mut Fields| Ok::<_, InputError>(f.opt_bool("count_rejected")?.unwrap_or(false));
    let algorithm = match algorithm_name {
        "token_bucket" => Algorithm::TokenBucket(token_bucket::Config {
            capacity: f.opt_count("capacity", 1)?.unwrap_or(d.limit),
            rate: f.opt_rate("rate")?.unwrap_or_else(default_rate),
        }),
        "gcra" => Algorithm::Gcra(gcra::Config {
            burst: f.opt_count("burst", 1)?.unwrap_or(d.limit),
            rate: f.opt_rate("rate")?.unwrap_or_else(default_rate),
        }),
        "interval_bucket" => Algorithm::IntervalBucket(interval_bucket(f, d)?),
        "leaky_bucket" => Algorithm::LeakyBucket(leaky_bucket::Config {
            rate: f.opt_rate("rate")?.unwrap_or_else(default_rate),
            queue: f.opt_count("queue", 0)?.unwrap_or(d.limit),
            delay: f.opt_count("delay", 0)?.unwrap_or(0),
        }),
        "fixed_window" => Algorithm::FixedWindow(fixed_window::Config {
            limit: f.opt_count("limit", 1)?.unwrap_or(d.limit),
            window: f.opt_duration("window", false)?.unwrap_or(d.window),
            count_rejected: count_rejected(f)?,
        }),
        "sliding_log" => Algorithm::SlidingLog(sliding_log::Config {
            limit: f.opt_count("limit", 1)?.unwrap_or(d.limit),
            window: f.opt_duration("window", false)?.unwrap_or(d.window),
            count_rejected: count_rejected(f)?,
        }),
        "sliding_counter" => Algorithm::SlidingCounter(sliding_counter::Config {
            limit: f.opt_count("limit", 1)?.unwrap_or(d.limit),
            window: f.opt_duration("window", false)?.unwrap_or(d.window),
            count_rejected: count_rejected(f)?,
        }),
        other => {
            return Err(InputError::new(format!(
                "{}: {other_q} — unknown algorithm; accepted: {}",
                f.at("algorithm"),
                names(ALGORITHMS),
                other_q = crate::error::quoted(other)
            )))
        }
    };
    Ok(LimiterSpec {
        name,
        key_by,
        algorithm,
        traffic: Vec::new(),
        deployment: crate::deploy::Deployment::default(),
    })
}

/// Envoy-style fills: both `tokens_per_fill` and `fill_interval`, or
/// neither when `window / limit` is a whole number of ns (then one token
/// every `window / limit`).
fn interval_bucket(f: &mut Fields, d: &Defaults) -> Result<interval_bucket::Config, InputError> {
    let max_tokens = f.opt_count("max_tokens", 1)?.unwrap_or(d.limit);
    let per_fill = f.opt_count("tokens_per_fill", 1)?;
    let interval = f.opt_duration("fill_interval", false)?;
    let (tokens_per_fill, fill_interval) = match (per_fill, interval) {
        (Some(p), Some(i)) => (p, i),
        (None, None) if d.window.0 % d.limit == 0 => (1, Nanos(d.window.0 / d.limit)),
        (None, None) => {
            return Err(InputError::new(format!(
                "{}: give tokens_per_fill and fill_interval — [defaults] window / limit ({} / {}) is not a whole number of ns",
                f.path(),
                d.window,
                d.limit
            )))
        }
        (Some(_), None) => return Err(f.missing("fill_interval", "give it together with tokens_per_fill, e.g. \"250ms\"")),
        (None, Some(_)) => return Err(f.missing("tokens_per_fill", "give it together with fill_interval, e.g. 25")),
    };
    Ok(interval_bucket::Config {
        max_tokens,
        tokens_per_fill,
        fill_interval,
    })
}

/// `"a", "b", "c"` from a name table.
pub fn names(table: &[(&str, &str)]) -> String {
    table
        .iter()
        .map(|(n, _)| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", ")
}
