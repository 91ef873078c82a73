//! `ratesim export envoy S`: a scenario's token buckets back as Envoy's
//! `envoy.filters.http.local_ratelimit` filter (docs/semantics.md §8) —
//! the reverse of [`crate::import::envoy`], so that importing an export
//! gives back limiters that decide the same.
//!
//! | ratesim | Envoy `local_ratelimit` |
//! |---|---|
//! | `token_bucket` (`implementation = "envoy"`) | the filter, read back by `ratesim import` |
//! | `interval_bucket` (`"envoy-timer"`) | the filter, read back by `ratesim import --envoy-timer` |
//! | `capacity` / `max_tokens` | `token_bucket.max_tokens` (a uint32) |
//! | token bucket `rate` = n per d | `tokens_per_fill` per `fill_interval`: the smallest exact pair whose interval is a whole number of ms, at least 50 ms (`100/1s` → 5 per 50 ms, `20/1s` → 1 per 50 ms, `3/1s` → 3 per 1 s, `5/1m` → 1 per 12 s) |
//! | interval bucket `tokens_per_fill`, `fill_interval` | the same two, as they are: the timer's steps are the decisions |
//! | `key_by = "global"` | the filter's one bucket, for every request through it |
//! | the limiter's name | `stat_prefix`, and the name of the listener shown around it |
//! | — | `filter_enabled` and `filter_enforced` at 100% (Envoy's default, 0%, limits nothing) |
//!
//! Each limiter gets a listener of its own (ports from 10000), shaped as
//! `ratesim import` reads it: limiters of a scenario are alternatives on
//! the same traffic, and two filters in one listener would not be — a
//! request the first passes takes its token even when the second rejects
//! it. A limiter Envoy cannot run exactly — another algorithm, a key per
//! client or address, an interval that is no whole number of ms or under
//! 50 ms, a count above a uint32, several instances or a shared store, a
//! chain — is an error naming it and why.

use std::fmt::Write as _;

use crate::clock::{decimal, Nanos};
use crate::error::{quoted, InputError};
use crate::limiter::{interval_bucket, token_bucket, Algorithm};
use crate::scenario::{KeyBy, LimiterSpec, Scenario};

/// Envoy's least `fill_interval` (its local rate limiter refuses less).
const MIN_FILL: Nanos = Nanos(50_000_000);
const MS: u128 = 1_000_000;
/// The first listener's port.
const PORT: u32 = 10_000;

/// One filter's `token_bucket`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Bucket {
    max_tokens: u64,
    tokens_per_fill: u64,
    /// Whole milliseconds.
    fill_interval: Nanos,
}

/// The Envoy configuration of `names` (every token and interval bucket
/// when empty).
pub fn config(s: &Scenario, names: &[String]) -> Result<String, InputError> {
    super::check_names(s, names)?;
    let mut chosen: Vec<&LimiterSpec> = Vec::new();
    // Limiters left out of an export of all: said in its header.
    let mut left_out: Vec<String> = Vec::new();
    for l in &s.limiters {
        let named = names.contains(&l.name);
        let bucket = matches!(
            l.algorithm,
            Algorithm::TokenBucket(_) | Algorithm::IntervalBucket(_)
        );
        if let Some(c) = &l.chain {
            let of_ours = c.members.iter().any(|&m| {
                matches!(
                    s.limiters[m].algorithm,
                    Algorithm::TokenBucket(_) | Algorithm::IntervalBucket(_)
                )
            });
            if named || (names.is_empty() && of_ours) {
                return Err(InputError::new(format!(
                    "chain {}: its members decide together (docs/semantics.md §13), and Envoy's local_ratelimit filters in one listener do neither chain mode: a request an earlier filter passed takes its token even when a later one rejects it",
                    quoted(&l.name)
                )));
            }
            if names.is_empty() {
                left_out.push(format!("{} (chain)", quoted(&l.name)));
            }
            continue;
        }
        if let Some(c) = l.member_of {
            if named {
                return Err(InputError::new(format!(
                    "limiter {}: decides only inside chain {}, which Envoy cannot run",
                    quoted(&l.name),
                    quoted(&s.limiters[c].name)
                )));
            }
            continue;
        }
        if named || (names.is_empty() && bucket) {
            chosen.push(l);
        } else if names.is_empty() {
            left_out.push(format!("{} ({})", quoted(&l.name), l.algorithm.name()));
        }
    }
    if chosen.is_empty() {
        return Err(InputError::new(format!(
            "{}: no token_bucket or interval_bucket limiter to export (Envoy's local_ratelimit is a token bucket)",
            s.name
        )));
    }
    let buckets: Vec<Bucket> = chosen.iter().map(|l| bucket(l)).collect::<Result<_, _>>()?;
    let timer = |l: &LimiterSpec| matches!(l.algorithm, Algorithm::IntervalBucket(_));
    if let Some(other) = chosen.iter().find(|l| timer(l) != timer(chosen[0])) {
        return Err(InputError::new(format!(
            "limiters {} ({}) and {} ({}): one Envoy refills all its buckets one way, and `ratesim import` reads a file as one or the other (--envoy-timer); export them apart with --limiter NAME",
            quoted(&chosen[0].name),
            chosen[0].algorithm.name(),
            quoted(&other.name),
            other.algorithm.name()
        )));
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Exported by `ratesim export envoy` from scenario {}.",
        quoted(&s.name)
    );
    if !left_out.is_empty() {
        let _ = writeln!(
            out,
            "# Not exported (Envoy's local_ratelimit is a token bucket): {}.",
            left_out.join(", ")
        );
    }
    let back = if timer(chosen[0]) {
        "# interval_bucket: Envoy's earlier timer refill, which `ratesim import\n# --envoy-timer` reads back (implementation = \"envoy-timer\")."
    } else {
        "# token_bucket: today's Envoy refills lazily, as ratesim's token bucket,\n# which `ratesim import` reads back (implementation = \"envoy\")."
    };
    let _ = writeln!(
        out,
        "# One listener per limiter, its local_ratelimit filter before the router:\n# move the filter into the http_filters of the listener it protects. Its\n# bucket is one per Envoy instance, for every request through the filter.\n{back}\nstatic_resources:\n  listeners:"
    );
    for (i, (l, b)) in chosen.iter().zip(&buckets).enumerate() {
        let name = yaml_str(&l.name);
        let _ = writeln!(
            out,
            "  # limiter {}: {}",
            quoted(&l.name),
            match l.algorithm {
                Algorithm::TokenBucket(c) => format!(
                    "token_bucket, capacity {}, rate {} = {} per {}",
                    c.capacity, c.rate, b.tokens_per_fill, b.fill_interval
                ),
                _ => format!(
                    "interval_bucket, {} every {} up to {}",
                    b.tokens_per_fill, b.fill_interval, b.max_tokens
                ),
            }
        );
        let _ = write!(
            out,
            "  - name: {name}
    address:
      socket_address: {{ address: 0.0.0.0, port_value: {port} }}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          \"@type\": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: ingress_http
          http_filters:
          - name: envoy.filters.http.local_ratelimit
            typed_config:
              \"@type\": type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit
              stat_prefix: {name}
              token_bucket:
                max_tokens: {max}
                tokens_per_fill: {per_fill}
                fill_interval: {interval}
              filter_enabled:
                runtime_key: local_rate_limit_enabled
                default_value:
                  numerator: 100
                  denominator: HUNDRED
              filter_enforced:
                runtime_key: local_rate_limit_enforced
                default_value:
                  numerator: 100
                  denominator: HUNDRED
          - name: envoy.filters.http.router
            typed_config:
              \"@type\": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
",
            port = PORT + i as u32,
            max = b.max_tokens,
            per_fill = b.tokens_per_fill,
            interval = format_args!("{}s", decimal(b.fill_interval.0 as u128, 1_000_000_000)),
        );
    }
    Ok(out)
}

/// The filter's bucket for limiter `l`, or why Envoy cannot run it.
fn bucket(l: &LimiterSpec) -> Result<Bucket, InputError> {
    let bad = |why: String| InputError::new(format!("limiter {}: {why}", quoted(&l.name)));
    let b = match l.algorithm {
        Algorithm::TokenBucket(c) => token_bucket(c).ok_or_else(|| {
            bad(format!(
                "rate {} needs more than 4294967295 tokens_per_fill (Envoy's uint32) to be exact with a fill_interval of whole milliseconds",
                c.rate
            ))
        })?,
        Algorithm::IntervalBucket(c) => interval_bucket(c).map_err(bad)?,
        other => {
            return Err(bad(format!(
                "{} — Envoy's local_ratelimit is a token bucket (token_bucket, or interval_bucket for Envoy's timer refill)",
                other.name()
            )))
        }
    };
    if !l.deployment.is_plain() {
        return Err(bad(format!(
            "deployed on {} instances or a shared store; Envoy's local_ratelimit keeps one bucket in each Envoy — export the limiter one instance runs",
            l.deployment.instances
        )));
    }
    if l.key_by != KeyBy::Global {
        return Err(bad(format!(
            "key_by = \"{}\" — Envoy's local_ratelimit has one bucket for every request through the filter, which `ratesim import` reads as key_by = \"global\"; a bucket per {} is no local_ratelimit filter",
            l.key_by.as_str(),
            l.key_by.as_str()
        )));
    }
    if b.max_tokens > u32::MAX as u64 {
        return Err(bad(format!(
            "capacity {} is above Envoy's max_tokens, a uint32 (at most 4294967295)",
            b.max_tokens
        )));
    }
    Ok(b)
}

/// A lazy token bucket: the rate as the smallest exact `tokens_per_fill`
/// per whole-ms `fill_interval` of at least 50 ms; `None` when
/// `tokens_per_fill` would be above a uint32.
fn token_bucket(c: token_bucket::Config) -> Option<Bucket> {
    let (n, d) = (c.rate.tokens(), c.rate.per_ns());
    // tokens_per_fill / fill_interval = n / d in lowest terms, so the pair
    // is (m·n, m·d) for a whole m; m·d whole ms needs m a multiple of m0.
    let m0 = MS / crate::clock::gcd(d, MS);
    let steps = (MIN_FILL.0 as u128).div_ceil(m0 * d).max(1);
    let m = m0 * steps;
    let per_fill = m * n;
    if per_fill > u32::MAX as u128 || m * d > u64::MAX as u128 {
        return None;
    }
    Some(Bucket {
        max_tokens: c.capacity,
        tokens_per_fill: per_fill as u64,
        fill_interval: Nanos((m * d) as u64),
    })
}

/// A timer-refilled bucket as it is, when Envoy's timer can run it.
fn interval_bucket(c: interval_bucket::Config) -> Result<Bucket, String> {
    let f = c.fill_interval;
    if f.0 as u128 % MS != 0 {
        return Err(format!(
            "fill_interval {f} is no whole number of milliseconds, which is all Envoy's fill_interval holds"
        ));
    }
    if f < MIN_FILL {
        return Err(format!(
            "fill_interval {f} is under 50ms, the least Envoy's local_ratelimit takes"
        ));
    }
    if c.tokens_per_fill > u32::MAX as u64 {
        return Err(format!(
            "tokens_per_fill {} is above Envoy's uint32 (at most 4294967295)",
            c.tokens_per_fill
        ));
    }
    Ok(Bucket {
        max_tokens: c.max_tokens,
        tokens_per_fill: c.tokens_per_fill,
        fill_interval: f,
    })
}

/// A YAML scalar: as it is when plain, else double-quoted.
fn yaml_str(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && !s.starts_with(['-', '.']);
    if plain {
        s.to_string()
    } else {
        serde_json::Value::String(s.to_string()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Rate;

    fn per_fill(count: u128, per_ns: u128) -> (u64, String) {
        let b = token_bucket(token_bucket::Config {
            capacity: 1,
            rate: Rate::new(count, per_ns).unwrap(),
        })
        .unwrap();
        (b.tokens_per_fill, b.fill_interval.to_string())
    }

    #[test]
    fn a_rate_becomes_the_smallest_exact_fill_of_whole_milliseconds_from_50ms() {
        let s = 1_000_000_000;
        assert_eq!(per_fill(100, s), (5, "50ms".into()));
        assert_eq!(per_fill(20, s), (1, "50ms".into()));
        assert_eq!(per_fill(3, s), (3, "1s".into()));
        assert_eq!(per_fill(5, 60 * s), (1, "12s".into()));
        assert_eq!(per_fill(1, 1_500_000), (34, "51ms".into()));
        assert_eq!(per_fill(1, 333), (1_000_000, "333ms".into()));
        // 5·10^9 per second: 2.5·10^8 per 50 ms still fits a uint32…
        assert_eq!(per_fill(5_000_000_000, s), (250_000_000, "50ms".into()));
        // …10^11 per second does not.
        let too_fast = token_bucket::Config {
            capacity: 1,
            rate: Rate::new(100_000_000_000, s).unwrap(),
        };
        assert_eq!(token_bucket(too_fast), None);
    }

    #[test]
    fn an_interval_bucket_is_kept_as_it_is_or_refused() {
        let c = |ms_x1000: u64| interval_bucket::Config {
            max_tokens: 10,
            tokens_per_fill: 2,
            fill_interval: Nanos(ms_x1000 * 1_000),
        };
        assert_eq!(
            interval_bucket(c(50_000)).map(|b| b.fill_interval),
            Ok(Nanos(50_000_000))
        );
        assert!(interval_bucket(c(49_000))
            .unwrap_err()
            .contains("under 50ms"));
        assert!(interval_bucket(c(60_500))
            .unwrap_err()
            .contains("no whole number of milliseconds"));
    }

    #[test]
    fn a_name_yaml_would_misread_is_quoted() {
        assert_eq!(yaml_str("api-v1.local"), "api-v1.local");
        assert_eq!(yaml_str("a: b"), "\"a: b\"");
        assert_eq!(yaml_str("-x"), "\"-x\"");
        assert_eq!(yaml_str("#1"), "\"#1\"");
    }
}
