//! `[[limiter]]` tables → validated limiter specifications.
//!
//! Each algorithm's parameters default from `[defaults]` (`limit` and
//! `window`) as docs/semantics.md §2 lists them; a parameter the algorithm
//! does not take is an unknown field.

use crate::clock::{Nanos, Rate};
use crate::error::InputError;
use crate::fields::{names, Fields};
use crate::limiter::adaptive::{aimd, envoy_gradient, gradient2, vegas};
use crate::limiter::feedback::Adaptive;
use crate::limiter::{
    fixed_window, gcra, interval_bucket, leaky_bucket, sliding_counter, sliding_log, smooth_bursty,
    token_bucket,
};
use crate::limiter::{quota, Algorithm, ALGORITHMS};
use crate::scenario::{Defaults, KeyBy, LimitPolicy, LimiterSpec};

/// The fields each algorithm takes besides `name`, `key_by`, `traffic`,
/// `deployment` and `implementation`, for error messages.
const PARAMS: &[(&str, &str)] = &[
    ("token_bucket", "capacity, rate"),
    (
        "interval_bucket",
        "max_tokens, tokens_per_fill, fill_interval",
    ),
    ("gcra", "burst, rate"),
    ("leaky_bucket", "rate, queue, delay, arithmetic"),
    ("fixed_window", "limit, window, count_rejected, align"),
    ("sliding_log", "limit, window, count_rejected, boundary"),
    ("sliding_counter", "limit, window, count_rejected, weight"),
    ("smooth_bursty", "rate, capacity, start"),
    ("quota", "limit, period, epoch"),
    ("concurrency", "max_in_flight"),
    ("queue_length", "max_queue"),
    ("aimd", "min_limit, initial_limit, max_limit, backoff_ratio, timeout"),
    ("gradient2", "initial_limit, min_limit, max_concurrency, smoothing, long_window, rtt_tolerance"),
    ("vegas", "initial_limit, max_concurrency, smoothing, probe_multiplier"),
    (
        "envoy_gradient",
        "interval, concurrency_update_interval, request_count, jitter, min_concurrency, buffer, max_concurrency_limit, sample_aggregate_percentile",
    ),
];

/// The variant knobs of docs/semantics.md §5 and the algorithm each belongs to.
const KNOBS: &[(&str, &str)] = &[
    ("align", "fixed_window"),
    ("boundary", "sliding_log"),
    ("weight", "sliding_counter"),
    ("arithmetic", "leaky_bucket"),
    ("start", "smooth_bursty"),
];

/// A named implementation (`implementation = "..."`): the algorithm and
/// knob values that reproduce a real library (docs/semantics.md §5).
/// Fields written in the table override what it implies.
#[derive(Debug)]
pub struct Implementation {
    pub name: &'static str,
    pub algorithm: &'static str,
    /// `(field, value as TOML writes it)` it implies.
    pub implies: &'static [(&'static str, &'static str)],
    /// What it is, for `ratesim list`.
    pub about: &'static str,
}

impl Implementation {
    /// The value this preset implies for `field`, as TOML writes it.
    fn implied(&self, field: &str) -> Option<&'static str> {
        self.implies
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, v)| *v)
    }

    /// `fixed_window, align = "first_hit", count_rejected = true`.
    pub fn maps_to(&self) -> String {
        let mut out = self.algorithm.to_string();
        for (field, value) in self.implies {
            out.push_str(&format!(", {field} = {value}"));
        }
        out
    }
}

pub const IMPLEMENTATIONS: &[Implementation] = &[
    Implementation {
        name: "python-limits-fixed",
        algorithm: "fixed_window",
        implies: &[("align", "\"first_hit\""), ("count_rejected", "true")],
        about: "Python limits FixedWindowRateLimiter",
    },
    Implementation {
        name: "python-limits-moving",
        algorithm: "sliding_log",
        implies: &[("boundary", "\"inclusive\"")],
        about: "Python limits MovingWindowRateLimiter",
    },
    Implementation {
        name: "python-limits-sliding",
        algorithm: "sliding_counter",
        implies: &[("weight", "\"floor\"")],
        about: "Python limits SlidingWindowCounterRateLimiter",
    },
    Implementation {
        name: "redis-incr-expire",
        algorithm: "fixed_window",
        implies: &[("align", "\"first_hit\""), ("count_rejected", "true")],
        about: "Redis INCR, with EXPIRE set on the first increment",
    },
    Implementation {
        name: "guava",
        algorithm: "smooth_bursty",
        implies: &[],
        about: "Guava RateLimiter.create(rate), tryAcquire(cost)",
    },
    Implementation {
        name: "governor",
        algorithm: "gcra",
        implies: &[],
        about: "the Rust governor crate",
    },
    Implementation {
        name: "redis-cell",
        algorithm: "gcra",
        implies: &[],
        about: "redis-cell CL.THROTTLE; takes max_burst (= burst − 1)",
    },
    Implementation {
        name: "envoy",
        algorithm: "token_bucket",
        implies: &[],
        about: "Envoy local rate limit (lazy refill)",
    },
    Implementation {
        name: "envoy-timer",
        algorithm: "interval_bucket",
        implies: &[],
        about: "Envoy's earlier timer-refilled token bucket",
    },
    Implementation {
        name: "envoy-ratelimit",
        algorithm: "fixed_window",
        implies: &[("count_rejected", "true")],
        about: "envoyproxy/ratelimit's Redis counter",
    },
    Implementation {
        name: "nginx",
        algorithm: "leaky_bucket",
        implies: &[("arithmetic", "\"nginx\"")],
        about: "nginx limit_req (queue = burst, delay = delay=, nodelay = delay equal to queue)",
    },
    Implementation {
        name: "golang-x-time-rate",
        algorithm: "token_bucket",
        implies: &[],
        about: "Go golang.org/x/time/rate Limiter.AllowN (exact at whole-µs timestamps)",
    },
];

/// The implementation called `name`.
pub fn implementation(name: &str) -> Option<&'static Implementation> {
    IMPLEMENTATIONS.iter().find(|i| i.name == name)
}

pub fn parse(f: &mut Fields, d: &Defaults) -> Result<LimiterSpec, InputError> {
    let preset = match f.opt_str("implementation")? {
        None => None,
        Some(n) => Some(implementation(n).ok_or_else(|| {
            InputError::new(format!(
                "{}: {} — unknown implementation; accepted: {}",
                f.at("implementation"),
                crate::error::quoted(n),
                implementation_names()
            ))
        })?),
    };
    let algorithm_name = match (f.opt_str("algorithm")?, preset) {
        (Some(a), Some(p)) if a != p.algorithm => {
            return Err(InputError::new(format!(
                "{}: {} — implementation \"{}\" is a {}; leave algorithm out (or write \"{}\")",
                f.at("algorithm"),
                crate::error::quoted(a),
                p.name,
                p.algorithm,
                p.algorithm
            )))
        }
        (Some(a), _) => a,
        (None, Some(p)) => p.algorithm,
        (None, None) => {
            return Err(f.missing(
                "algorithm",
                &format!(
                    "one of {}; or name a library with implementation = one of {}",
                    names(ALGORITHMS),
                    implementation_names()
                ),
            ))
        }
    };
    check_knobs(f, algorithm_name)?;
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
        None => preset.map_or(algorithm_name, |p| p.name).to_string(),
    };
    let key_by_written = f.has("key_by");
    let key_by = match f.opt_str("key_by")? {
        None if matches!(
            algorithm_name,
            "queue_length" | "aimd" | "gradient2" | "vegas" | "envoy_gradient"
        ) =>
        {
            KeyBy::Global
        }
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
    // Whether it states a policy of its own (docs/semantics.md §3).
    let (own_rate, own_limit, own_fills) =
        (f.has("rate"), f.has("limit"), f.has("tokens_per_fill"));
    // Every parameter that falls back to `[defaults] limit` says so.
    let read = std::cell::Cell::new(false);
    let dl = || {
        read.set(true);
        d.limit
    };
    let default_rate = || Rate::per(dl(), d.window).expect("defaults are validated");
    let count_rejected = |f: &mut Fields| {
        let implied = preset.and_then(|p| p.implied("count_rejected")) == Some("true");
        Ok::<_, InputError>(f.opt_bool("count_rejected")?.unwrap_or(implied))
    };
    let algorithm = match algorithm_name {
        "token_bucket" => Algorithm::TokenBucket(token_bucket::Config {
            capacity: f.opt_count("capacity", 1)?.unwrap_or_else(dl),
            rate: f.opt_rate("rate")?.unwrap_or_else(default_rate),
        }),
        "gcra" => Algorithm::Gcra(gcra::Config {
            burst: gcra_burst(f, preset)?.unwrap_or_else(dl),
            rate: f.opt_rate("rate")?.unwrap_or_else(default_rate),
        }),
        "interval_bucket" => Algorithm::IntervalBucket(interval_bucket(f, d, &read)?),
        "leaky_bucket" => Algorithm::LeakyBucket(leaky_bucket(f, d, preset, &read)?),
        "fixed_window" => Algorithm::FixedWindow(fixed_window::Config {
            limit: f.opt_count("limit", 1)?.unwrap_or_else(dl),
            window: f.opt_duration("window", false)?.unwrap_or(d.window),
            count_rejected: count_rejected(f)?,
            align: knob(
                f,
                preset,
                "align",
                fixed_window::Align::NAMES,
                fixed_window::Align::parse,
            )?,
        }),
        "sliding_log" => Algorithm::SlidingLog(sliding_log::Config {
            limit: f.opt_count("limit", 1)?.unwrap_or_else(dl),
            window: f.opt_duration("window", false)?.unwrap_or(d.window),
            count_rejected: count_rejected(f)?,
            boundary: knob(
                f,
                preset,
                "boundary",
                sliding_log::BoundaryRule::NAMES,
                sliding_log::BoundaryRule::parse,
            )?,
        }),
        "sliding_counter" => Algorithm::SlidingCounter(sliding_counter::Config {
            limit: f.opt_count("limit", 1)?.unwrap_or_else(dl),
            window: f.opt_duration("window", false)?.unwrap_or(d.window),
            count_rejected: count_rejected(f)?,
            weight: knob(
                f,
                preset,
                "weight",
                sliding_counter::Weight::NAMES,
                sliding_counter::Weight::parse,
            )?,
        }),
        "smooth_bursty" => Algorithm::SmoothBursty(smooth_bursty::Config {
            rate: f.opt_rate("rate")?.unwrap_or_else(default_rate),
            capacity: f.opt_count("capacity", 1)?.unwrap_or_else(dl),
            start: knob(
                f,
                preset,
                "start",
                smooth_bursty::Start::NAMES,
                smooth_bursty::Start::parse,
            )?,
        }),
        "quota" => Algorithm::Quota(quota(f, &dl)?),
        "concurrency" => Algorithm::Concurrency {
            max_in_flight: f.opt_count("max_in_flight", 1)?.ok_or_else(|| {
                f.missing(
                    "max_in_flight",
                    "the most requests per key in flight, e.g. 8",
                )
            })?,
        },
        "queue_length" => Algorithm::QueueLength {
            max_queue: f.opt_count("max_queue", 0)?.ok_or_else(|| {
                f.missing(
                    "max_queue",
                    "the most requests waiting in the backend, e.g. 50",
                )
            })?,
        },
        "aimd" | "gradient2" | "vegas" | "envoy_gradient" => {
            Algorithm::Adaptive(adaptive(f, algorithm_name)?)
        }
        other => {
            return Err(InputError::new(format!(
                "{}: {other_q} — unknown algorithm; accepted: {}",
                f.at("algorithm"),
                names(ALGORITHMS),
                other_q = crate::error::quoted(other)
            )))
        }
    };
    if matches!(
        algorithm,
        Algorithm::QueueLength { .. } | Algorithm::Adaptive(_)
    ) && key_by_written
        && key_by != KeyBy::Global
    {
        return Err(InputError::new(format!(
            "{}: \"{}\" — {algorithm_name} limits the whole backend, not a key: leave key_by out (or write \"global\")",
            f.at("key_by"),
            key_by.as_str()
        )));
    }
    let policy = match &algorithm {
        Algorithm::TokenBucket(token_bucket::Config { rate, .. })
        | Algorithm::Gcra(gcra::Config { rate, .. })
        | Algorithm::LeakyBucket(leaky_bucket::Config { rate, .. })
        | Algorithm::SmoothBursty(smooth_bursty::Config { rate, .. })
            if own_rate =>
        {
            LimitPolicy::of_rate(*rate, d, "rate")
        }
        Algorithm::IntervalBucket(c) if own_fills => {
            let rate = Rate::new(c.tokens_per_fill as u128, c.fill_interval.0 as u128)
                .expect("fills are validated positive");
            LimitPolicy::of_rate(rate, d, "tokens_per_fill")
        }
        Algorithm::FixedWindow(fixed_window::Config { limit, .. })
        | Algorithm::SlidingLog(sliding_log::Config { limit, .. })
        | Algorithm::SlidingCounter(sliding_counter::Config { limit, .. })
            if own_limit =>
        {
            LimitPolicy::of_limit(*limit)
        }
        _ => LimitPolicy {
            limit: dl(),
            own: None,
        },
    };
    Ok(LimiterSpec {
        name,
        implementation: preset.map(|p| p.name),
        key_by,
        algorithm,
        traffic: Vec::new(),
        deployment: crate::deploy::Deployment::default(),
        policy,
        reads_default_limit: read.get(),
        chain: None,
        member_of: None,
    })
}

/// A quota's fields (docs/semantics.md §10).
fn quota(f: &mut Fields, dl: &dyn Fn() -> u64) -> Result<quota::Config, InputError> {
    let limit = f.opt_count("limit", 1)?.unwrap_or_else(dl);
    let period = match f.opt_str("period")? {
        None => return Err(f.missing("period", "\"day\", \"week\" (from Monday) or \"month\"")),
        Some(p) => quota::Period::parse(p).ok_or_else(|| {
            InputError::new(format!(
                "{}: {} — accepted: \"day\", \"week\", \"month\"",
                f.at("period"),
                crate::error::quoted(p)
            ))
        })?,
    };
    let epoch = match f.opt_str("epoch")? {
        None => quota::Epoch::default(),
        Some(e) => quota::Epoch::parse(e).map_err(|why| {
            InputError::new(format!(
                "{}: {} — {why}; expected a calendar instant like \"2026-01-01T00:00:00Z\" or \"2026-01-01T00:00:00+05:30\"",
                f.at("epoch"),
                crate::error::quoted(e)
            ))
        })?,
    };
    Ok(quota::Config {
        limit,
        period,
        epoch,
    })
}

/// An adaptive limit's fields: each of the real code's parameters, its
/// default where the real code has one (docs/semantics.md §10).
fn adaptive(f: &mut Fields, name: &str) -> Result<Adaptive, InputError> {
    let count32 = |f: &mut Fields, key: &str, min: u64| -> Result<Option<u32>, InputError> {
        match f.opt_count(key, min)? {
            None => Ok(None),
            Some(n) => u32::try_from(n)
                .map(Some)
                .map_err(|_| InputError::new(format!("{}: {n} — at most {}", f.at(key), u32::MAX))),
        }
    };
    let bad = |f: &Fields, key: &str, what: &str| InputError::new(format!("{}: {what}", f.at(key)));
    Ok(match name {
        "aimd" => {
            let d = aimd::Config::default();
            let mut c = aimd::Config {
                min_limit: count32(f, "min_limit", 1)?.unwrap_or(d.min_limit),
                initial_limit: count32(f, "initial_limit", 1)?.unwrap_or(d.initial_limit),
                max_limit: count32(f, "max_limit", 1)?.unwrap_or(d.max_limit),
                ..d
            };
            if let Some(r) = f.opt_float("backoff_ratio", 0.5, 1.0)? {
                c = c
                    .backoff_ratio(r)
                    .ok_or_else(|| bad(f, "backoff_ratio", "must be at least 0.5 and below 1"))?;
            }
            if let Some(t) = f.opt_duration("timeout", false)? {
                c = c.timeout(t).expect("a positive timeout");
            }
            Adaptive::Aimd(c)
        }
        "gradient2" => {
            let d = gradient2::Config::default();
            Adaptive::Gradient2(gradient2::Config {
                initial_limit: count32(f, "initial_limit", 1)?.unwrap_or(d.initial_limit),
                min_limit: count32(f, "min_limit", 1)?.unwrap_or(d.min_limit),
                max_concurrency: count32(f, "max_concurrency", 1)?.unwrap_or(d.max_concurrency),
                smoothing: f.opt_float("smoothing", 0.0, 1.0)?.unwrap_or(d.smoothing),
                long_window: count32(f, "long_window", 1)?.unwrap_or(d.long_window),
                rtt_tolerance: f
                    .opt_float("rtt_tolerance", 1.0, 1e6)?
                    .unwrap_or(d.rtt_tolerance),
                ..d
            })
        }
        "vegas" => {
            let d = vegas::Config::default();
            Adaptive::Vegas(vegas::Config {
                initial_limit: count32(f, "initial_limit", 1)?.unwrap_or(d.initial_limit),
                max_concurrency: count32(f, "max_concurrency", 1)?.unwrap_or(d.max_concurrency),
                smoothing: f.opt_float("smoothing", 0.0, 1.0)?.unwrap_or(d.smoothing),
                probe_multiplier: count32(f, "probe_multiplier", 1)?.unwrap_or(d.probe_multiplier),
                ..d
            })
        }
        _ => {
            let interval = f.opt_duration("interval", false)?.ok_or_else(|| {
                f.missing(
                    "interval",
                    "the min-RTT recalculation interval (Envoy has no default), e.g. \"60s\"",
                )
            })?;
            let update = f
                .opt_duration("concurrency_update_interval", false)?
                .ok_or_else(|| {
                    f.missing(
                        "concurrency_update_interval",
                        "how often the limit is recomputed (Envoy has no default), e.g. \"100ms\"",
                    )
                })?;
            let d = envoy_gradient::Config::new(interval, update).ok_or_else(|| {
                let (key, why) = if interval < Nanos(1_000_000) {
                    ("interval", "expected at least 1ms")
                } else {
                    (
                        "concurrency_update_interval",
                        "expected at least 1ms: Envoy reads it in whole milliseconds, and a timer of 0 ms fires on every turn of its event loop, at no moment a simulation can place",
                    )
                };
                match f.peek(key) {
                    Some(v) => f.error(key, v, why),
                    None => bad(f, key, why),
                }
            })?;
            Adaptive::EnvoyGradient(envoy_gradient::Config {
                request_count: count32(f, "request_count", 1)?.unwrap_or(d.request_count),
                jitter: f.opt_float("jitter", 0.0, 100.0)?.unwrap_or(d.jitter),
                min_concurrency: count32(f, "min_concurrency", 1)?.unwrap_or(d.min_concurrency),
                buffer: f.opt_float("buffer", 0.0, 100.0)?.unwrap_or(d.buffer),
                max_concurrency_limit: count32(f, "max_concurrency_limit", 1)?
                    .unwrap_or(d.max_concurrency_limit),
                sample_aggregate_percentile: f
                    .opt_float("sample_aggregate_percentile", 0.0, 100.0)?
                    .unwrap_or(d.sample_aggregate_percentile),
                ..d
            })
        }
    })
}

/// A variant knob: the string written, else what the implementation
/// implies, else the default; anything else is an error naming the
/// accepted values.
fn knob<T: Default>(
    f: &mut Fields,
    preset: Option<&Implementation>,
    field: &str,
    accepted: &[&str],
    parse: fn(&str) -> Option<T>,
) -> Result<T, InputError> {
    let accepted_list = || {
        accepted
            .iter()
            .map(|a| format!("\"{a}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some(value) = f.opt_str(field).map_err(|_| {
        InputError::new(format!(
            "{}: {} — expected one of {}",
            f.at(field),
            f.peek(field).map(crate::fields::show).unwrap_or_default(),
            accepted_list()
        ))
    })?
    else {
        let implied = preset.and_then(|p| p.implied(field));
        // An implied value is one of ours, in quotes.
        return Ok(implied
            .and_then(|v| parse(v.trim_matches('"')))
            .unwrap_or_default());
    };
    parse(value).ok_or_else(|| {
        InputError::new(format!(
            "{}: {} — accepted: {}",
            f.at(field),
            crate::error::quoted(value),
            accepted_list()
        ))
    })
}

/// A knob written on an algorithm it does not belong to is named as such.
fn check_knobs(f: &Fields, algorithm: &str) -> Result<(), InputError> {
    for &(field, owner) in KNOBS {
        if owner == algorithm {
            continue;
        }
        if let Some(v) = f.peek(field) {
            let takes = PARAMS
                .iter()
                .find(|(a, _)| *a == algorithm)
                .map_or("", |(_, p)| *p);
            return Err(f.error(
                field,
                v,
                format_args!(
                    "`{field}` is a knob of {owner}, not of {algorithm}; {algorithm} takes: {takes}"
                ),
            ));
        }
    }
    Ok(())
}

/// `burst`, or under redis-cell its own `max_burst = b` (burst `b + 1`).
fn gcra_burst(f: &mut Fields, preset: Option<&Implementation>) -> Result<Option<u64>, InputError> {
    let redis_cell = preset.is_some_and(|p| p.name == "redis-cell");
    if !redis_cell {
        if let Some(v) = f.peek("max_burst") {
            return Err(f.error(
                "max_burst",
                v,
                "max_burst is redis-cell's name: write implementation = \"redis-cell\", or burst = max_burst + 1",
            ));
        }
        return f.opt_count("burst", 1);
    }
    let burst = f.opt_count("burst", 1)?;
    let max_burst = f.opt_count("max_burst", 0)?;
    match (burst, max_burst) {
        (Some(_), Some(_)) => Err(f.error(
            "max_burst",
            f.peek("max_burst").expect("it was just read"),
            "give max_burst or burst (= max_burst + 1), not both",
        )),
        (_, Some(b)) => Ok(Some(b + 1)),
        (b, None) => Ok(b),
    }
}

fn leaky_bucket(
    f: &mut Fields,
    d: &Defaults,
    preset: Option<&Implementation>,
    read: &std::cell::Cell<bool>,
) -> Result<leaky_bucket::Config, InputError> {
    let rate_written = f.peek("rate");
    let dl = || {
        read.set(true);
        d.limit
    };
    let cfg = leaky_bucket::Config {
        rate: f
            .opt_rate("rate")?
            .unwrap_or_else(|| Rate::per(dl(), d.window).expect("defaults are validated")),
        queue: f.opt_count("queue", 0)?.unwrap_or_else(dl),
        delay: f.opt_count("delay", 0)?.unwrap_or(0),
        arithmetic: knob(
            f,
            preset,
            "arithmetic",
            leaky_bucket::Arithmetic::NAMES,
            leaky_bucket::Arithmetic::parse,
        )?,
    };
    if cfg.arithmetic == leaky_bucket::Arithmetic::Nginx
        && leaky_bucket::nginx::thousandths_per_sec(&cfg) == 0
    {
        let what = "with arithmetic = \"nginx\" the rate must be at least 1 per 1000s (nginx counts thousandths of a request per second), e.g. \"1/1m\"";
        return Err(match rate_written {
            Some(v) => f.error("rate", v, what),
            None => InputError::new(format!(
                "{}: {} per {} (from [defaults]) — {what}",
                f.at("rate"),
                d.limit,
                d.window
            )),
        });
    }
    Ok(cfg)
}

/// `"a", "b", …` of every implementation name.
pub(crate) fn implementation_names() -> String {
    IMPLEMENTATIONS
        .iter()
        .map(|i| format!("\"{}\"", i.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Envoy-style fills: both `tokens_per_fill` and `fill_interval`, or
/// neither when `window / limit` is a whole number of ns (then one token
/// every `window / limit`).
fn interval_bucket(
    f: &mut Fields,
    d: &Defaults,
    read: &std::cell::Cell<bool>,
) -> Result<interval_bucket::Config, InputError> {
    let max_tokens = f.opt_count("max_tokens", 1)?.unwrap_or_else(|| {
        read.set(true);
        d.limit
    });
    let per_fill = f.opt_count("tokens_per_fill", 1)?;
    let interval = f.opt_duration("fill_interval", false)?;
    if per_fill.is_none() {
        read.set(true);
    }
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
