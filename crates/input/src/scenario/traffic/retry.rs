//! The `retry` table's fields (see [`crate::traffic::retry`]), and its echo.

use serde_json::{json, Value};

use crate::clock::{Nanos, MAX_NANOS};
use crate::error::InputError;
use crate::fields::Fields;
use crate::traffic::retry::*;

/// Every policy with a one-line description, for `ratesim list`.
pub const POLICIES: &[(&str, &str)] = &[
    ("none", "a rejected request gives up at once (the default)"),
    ("immediate", "retry at once, up to `max_attempts`"),
    ("fixed", "retry after `delay` (+ U[0, `jitter`])"),
    (
        "exponential",
        "`base` x `factor`^n capped at `cap`; `jitter` none|full|equal|decorrelated",
    ),
    (
        "retry_after",
        "wait the limiter's retry_after rounded up to `granularity` (+ U[0, `jitter`])",
    ),
    (
        "ratelimit_headers",
        "read the RateLimit fields: at r = 0 (or r <= `slow_below` x q) hold every request until t s",
    ),
];

/// Parses a `[traffic.retry]` table.
pub fn parse(f: &mut Fields) -> Result<Retry, InputError> {
    let name = f.opt_str("policy")?.unwrap_or("none");
    let policy = match name {
        "none" => RetryPolicy::None,
        "immediate" => RetryPolicy::Immediate,
        "fixed" => RetryPolicy::Fixed {
            delay: f
                .opt_duration("delay", true)?
                .ok_or_else(|| f.missing("delay", "the wait before each retry, e.g. \"1s\""))?,
            jitter: f.opt_duration("jitter", true)?.unwrap_or(Nanos::ZERO),
        },
        "exponential" => {
            let base = f
                .opt_duration("base", false)?
                .ok_or_else(|| f.missing("base", "the first wait, e.g. \"100ms\""))?;
            let factor = parse_factor(f)?;
            let cap = f.opt_duration("cap", false)?.unwrap_or(Nanos(MAX_NANOS));
            if cap < base {
                return Err(InputError::new(format!(
                    "{}: \"{cap}\" — must be at least base ({base})",
                    f.at("cap")
                )));
            }
            let jitter = match f.opt_str("jitter")? {
                None | Some("none") => Jitter::None,
                Some("full") => Jitter::Full,
                Some("equal") => Jitter::Equal,
                Some("decorrelated") => Jitter::Decorrelated,
                Some(other) => {
                    return Err(InputError::new(format!(
                        "{}: {other_q} — accepted: \"none\", \"full\", \"equal\", \"decorrelated\"",
                        f.at("jitter"),
                        other_q = crate::error::quoted(other)
                    )))
                }
            };
            RetryPolicy::Exponential {
                base,
                factor,
                cap,
                jitter,
            }
        }
        "retry_after" => RetryPolicy::RetryAfter {
            granularity: f.opt_duration("granularity", true)?.unwrap_or(Nanos::ZERO),
            jitter: f.opt_duration("jitter", true)?.unwrap_or(Nanos::ZERO),
        },
        "ratelimit_headers" => RetryPolicy::RatelimitHeaders {
            slow_below: parse_fraction(f, "slow_below")?.unwrap_or((0, 1)),
        },
        other => {
            return Err(InputError::new(format!(
                "{}: {other_q} — unknown retry policy; accepted: {}",
                f.at("policy"),
                crate::fields::names(POLICIES),
                other_q = crate::error::quoted(other)
            )))
        }
    };
    let max_attempts = match (policy, f.opt_count("max_attempts", 1)?) {
        (RetryPolicy::None, Some(n)) if n > 1 => {
            return Err(InputError::new(format!(
                "{}: {n} — policy \"none\" makes one attempt; choose another policy to retry",
                f.at("max_attempts")
            )))
        }
        (RetryPolicy::None, _) => 1,
        (_, Some(n)) if n > MAX_ATTEMPTS => {
            return Err(InputError::new(format!(
                "{}: {n} — at most {MAX_ATTEMPTS}",
                f.at("max_attempts")
            )))
        }
        (_, Some(n)) => n as u32,
        (_, None) => 5,
    };
    f.finish()?;
    Ok(Retry {
        policy,
        max_attempts,
    })
}

pub fn echo(p: &Retry) -> Value {
    let mut v = match p.policy {
        RetryPolicy::None => json!({ "policy": "none" }),
        RetryPolicy::Immediate => json!({ "policy": "immediate" }),
        RetryPolicy::Fixed { delay, jitter } => json!({
            "policy": "fixed", "delay": delay.to_string(), "jitter": jitter.to_string(),
        }),
        RetryPolicy::Exponential {
            base,
            factor,
            cap,
            jitter,
        } => json!({
            "policy": "exponential",
            "base": base.to_string(),
            "factor": crate::clock::decimal(factor.0 as u128, factor.1 as u128),
            "cap": cap.to_string(),
            "jitter": format!("{jitter:?}").to_lowercase(),
        }),
        RetryPolicy::RetryAfter {
            granularity,
            jitter,
        } => json!({
            "policy": "retry_after",
            "granularity": granularity.to_string(),
            "jitter": jitter.to_string(),
        }),
        RetryPolicy::RatelimitHeaders {
            slow_below: (num, den),
        } => json!({
            "policy": "ratelimit_headers",
            "slow_below": format!("{num}/{den}"),
        }),
    };
    v["max_attempts"] = json!(p.max_attempts);
    v
}

/// A fraction from 0 to 1, exactly: `"1/10"`, or a decimal (`0.1`,
/// `"0.1"`), reduced.
fn parse_fraction(f: &mut Fields, key: &str) -> Result<Option<(u64, u64)>, InputError> {
    let bad = |f: &Fields, shown: String| {
        InputError::new(format!(
            "{}: {shown} — a fraction from 0 to 1, as a decimal or \"N/D\", e.g. 0.1 or \"1/10\"",
            f.at(key)
        ))
    };
    let (num, den) = match f.peek(key) {
        None => return Ok(None),
        Some(toml::Value::String(s)) if s.contains('/') => {
            let s = f.opt_str(key)?.unwrap_or_default();
            let (n, d) = s.split_once('/').unwrap_or_default();
            match (n.trim().parse::<u128>(), d.trim().parse::<u128>()) {
                (Ok(n), Ok(d)) if d > 0 => (n, d),
                _ => return Err(bad(f, crate::error::quoted(s))),
            }
        }
        Some(v) => {
            let shown = match v {
                toml::Value::String(s) => crate::error::quoted(s),
                v => v.to_string(),
            };
            match f.opt_decimal(key) {
                Ok(Some(d)) => d,
                _ => return Err(bad(f, shown)),
            }
        }
    };
    if num > den {
        return Err(bad(f, crate::clock::decimal(num, den)));
    }
    let g = crate::clock::gcd(num, den).max(1);
    // At most 1, reduced: the denominator fits whatever the input, since
    // a decimal's is a power of ten under 10^38 and reduces only down.
    let (num, den) = (num / g, den / g);
    match (u64::try_from(num), u64::try_from(den)) {
        (Ok(n), Ok(d)) => Ok(Some((n, d))),
        _ => Err(bad(f, crate::clock::decimal(num, den))),
    }
}

fn parse_factor(f: &mut Fields) -> Result<(u64, u64), InputError> {
    let Some((num, den)) = f.opt_decimal("factor")? else {
        return Ok((2, 1));
    };
    let g = crate::clock::gcd(num, den).max(1);
    let (num, den) = (num / g, den / g);
    if num < den || num > 1_000_000 {
        return Err(InputError::new(format!(
            "{}: {} — must be a number from 1 to 1000000, e.g. 2 or 1.5",
            f.at("factor"),
            crate::clock::decimal(num, den)
        )));
    }
    Ok((num as u64, den as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;

    fn parse(toml: &str) -> Result<Retry, InputError> {
        let t: toml::Table = toml.parse().unwrap();
        super::parse(&mut Fields::new("retry", &t))
    }

    fn waits(r: &Retry, retry_after: Option<Nanos>) -> Vec<Option<u64>> {
        let mut prev = Nanos::ZERO;
        (1..=r.max_attempts)
            .map(|attempt| {
                let w = r.next_wait(attempt, retry_after, prev, &mut || {
                    retry_rng(1, 0, 0, 0, attempt)
                });
                if let Some(w) = w {
                    prev = w;
                }
                w.map(|w| w.0)
            })
            .collect()
    }

    #[test]
    fn none_gives_up_after_the_first_attempt() {
        let r = parse("policy = \"none\"").unwrap();
        assert_eq!(waits(&r, Some(Nanos(5))), [None]);
        assert!(parse("policy = \"none\"\nmax_attempts = 3").is_err());
    }

    #[test]
    fn immediate_retries_at_once_until_max_attempts() {
        let r = parse("policy = \"immediate\"\nmax_attempts = 3").unwrap();
        assert_eq!(waits(&r, None), [Some(0), Some(0), None]);
    }

    #[test]
    fn fixed_waits_the_delay_and_max_attempts_ends_in_giving_up() {
        let r = parse("policy = \"fixed\"\ndelay = \"250ms\"\nmax_attempts = 4").unwrap();
        assert_eq!(
            waits(&r, None),
            [Some(250 * MS), Some(250 * MS), Some(250 * MS), None]
        );
    }

    #[test]
    fn exponential_doubles_up_to_the_cap() {
        let r = parse("policy = \"exponential\"\nbase = \"100ms\"\ncap = \"1s\"\nmax_attempts = 7")
            .unwrap();
        assert_eq!(
            waits(&r, None),
            [
                Some(100 * MS),
                Some(200 * MS),
                Some(400 * MS),
                Some(800 * MS),
                Some(S),
                Some(S),
                None
            ]
        );
        assert_eq!(backoff(Nanos(100), (3, 2), Nanos(1000), 3), 225);
        // 1.5^n rounded up once: 1, 2, 3, 4, 6 — not 1, 2, 3, 5, 8.
        let waits: Vec<u64> = (1..=5)
            .map(|n| backoff(Nanos(1), (3, 2), Nanos(1000), n))
            .collect();
        assert_eq!(waits, [1, 2, 3, 4, 6]);
        // 1000 × 1.000001^899 = 1000.9 → 1001, with the fraction rescaled.
        assert_eq!(
            backoff(
                Nanos(1000),
                (1_000_001, 1_000_000),
                Nanos(u64::MAX / 2),
                900
            ),
            1001
        );
    }

    #[test]
    fn exponential_jitter_stays_within_its_bounds() {
        for (jitter, lo, hi) in [
            ("full", 0, 400 * MS),
            ("equal", 200 * MS, 400 * MS),
            ("decorrelated", 100 * MS, 1000 * MS),
        ] {
            let r = parse(&format!(
                "policy = \"exponential\"\nbase = \"100ms\"\ncap = \"1s\"\njitter = \"{jitter}\"\nmax_attempts = 10"
            ))
            .unwrap();
            let mut seen = std::collections::BTreeSet::new();
            for request in 0..200 {
                let w = r
                    .next_wait(3, None, Nanos(150 * MS), &mut || {
                        retry_rng(9, 0, 0, request, 3)
                    })
                    .unwrap()
                    .0;
                assert!((lo..=hi).contains(&w), "{jitter}: {w}");
                seen.insert(w);
            }
            assert!(seen.len() > 100, "{jitter} spreads its waits");
        }
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        let r = parse("policy = \"retry_after\"\ngranularity = \"1s\"\nmax_attempts = 3").unwrap();
        assert_eq!(
            waits(&r, Some(Nanos(MS))),
            [Some(S), Some(S), None],
            "1ms becomes Retry-After: 1"
        );
        assert_eq!(waits(&r, Some(Nanos(S)))[0], Some(S));
        assert_eq!(waits(&r, Some(Nanos(S + 1)))[0], Some(2 * S));
        assert_eq!(waits(&r, None), [None, None, None], "never passes: give up");
        let exact = parse("policy = \"retry_after\"").unwrap();
        assert_eq!(waits(&exact, Some(Nanos(7)))[0], Some(7));
        assert_eq!(exact.max_attempts, 5);
    }

    #[test]
    fn ratelimit_headers_retries_after_whole_seconds_and_reads_fractions_exactly() {
        let r = parse("policy = \"ratelimit_headers\"\nmax_attempts = 3").unwrap();
        assert_eq!(
            r.policy,
            RetryPolicy::RatelimitHeaders { slow_below: (0, 1) }
        );
        assert_eq!(waits(&r, Some(Nanos(MS))), [Some(S), Some(S), None]);
        assert_eq!(waits(&r, Some(Nanos(S + 1)))[0], Some(2 * S));
        assert_eq!(waits(&r, None), [None, None, None], "never passes: give up");
        for (text, fraction) in [
            ("0.1", (1, 10)),
            ("\"0.25\"", (1, 4)),
            ("\"2/8\"", (1, 4)),
            ("1", (1, 1)),
            ("0", (0, 1)),
            ("\"1/3\"", (1, 3)),
        ] {
            let r = parse(&format!(
                "policy = \"ratelimit_headers\"\nslow_below = {text}"
            ))
            .unwrap();
            assert_eq!(
                r.policy,
                RetryPolicy::RatelimitHeaders {
                    slow_below: fraction
                },
                "{text}"
            );
        }
        let e = parse("policy = \"ratelimit_headers\"\nslow_below = 1.5").unwrap_err();
        assert!(
            e.message()
                .starts_with("retry.slow_below: 1.5 — a fraction from 0 to 1"),
            "{e}"
        );
        // Below zero or not a number: the same message, with the value.
        for (text, shown) in [("-0.1", "-0.1"), ("\"abc\"", "\"abc\"")] {
            let e = parse(&format!(
                "policy = \"ratelimit_headers\"\nslow_below = {text}"
            ))
            .unwrap_err();
            let want = format!("retry.slow_below: {shown} — a fraction from 0 to 1");
            assert!(e.message().starts_with(&want), "{e}");
        }
    }

    #[test]
    fn bad_policies_name_the_field() {
        let e = parse("policy = \"sometimes\"").unwrap_err();
        assert!(
            e.message().starts_with("retry.policy: \"sometimes\""),
            "{e}"
        );
        let e = parse("policy = \"fixed\"").unwrap_err();
        assert!(e.message().starts_with("retry.delay: missing"), "{e}");
        let e = parse("policy = \"exponential\"\nbase = \"1s\"\nfactor = 0.5").unwrap_err();
        assert!(e.message().starts_with("retry.factor"), "{e}");
        let e = parse("policy = \"fixed\"\ndelay = \"1s\"\nbase = \"1s\"").unwrap_err();
        assert!(e.message().starts_with("retry.base: unknown field"), "{e}");
    }
}
