//! `ratesim export redis S --limiter NAME`: one limiter as the `EVALSHA`
//! call of its Redis script (docs/semantics.md §6), so that a gateway
//! calling it decides as `ratesim run` does.
//!
//! | ratesim | `EVALSHA sha 1 KEY now_us cost limit window_us [extra ...]` |
//! |---|---|
//! | `token_bucket`, `gcra`, `leaky_bucket`, `smooth_bursty`: `rate` = n per d ns | `limit / window_us` in lowest terms, `n·1000/g` per `d/g` µs (`100/1s` → `1 10000`, `3/1s` → `3 1000000`, `2/3us` → `2 3`) |
//! | `fixed_window`, `sliding_log`, `sliding_counter`: `limit`, `window` | `limit`, and the window in µs (it must be whole) |
//! | `capacity`, `burst`, `queue`, `delay` | the extras, in the order of §6 |
//! | `count_rejected`, `align`, `boundary`, `weight`, `start` | `0`/`1` and the script's words |
//! | `key_by` | what `KEY` names: a client, an address, or one key for all |
//! | `scope = "global"`, `atomic = true` | the call itself: one atomic step at the store |
//!
//! Refused, naming the limiter and why: an algorithm with no script
//! (`interval_bucket`; the leaky bucket's nginx arithmetic), a window of no
//! whole microseconds, parameters outside the script's exact range (for a
//! request of cost 1 at any `now_us` below 2^52, a Unix clock in µs until
//! 2112), a limiter whose state lives in several instances or behind a
//! read-then-write store, and a chain or a member of one.

use std::fmt::Write as _;

use crate::clock::{gcd, Nanos, Rate};
use crate::deploy::Scope;
use crate::error::{quoted, InputError};
use crate::limiter::leaky_bucket::Arithmetic;
use crate::limiter::Algorithm;
use crate::scenario::{KeyBy, Scenario};

/// 2^53 − 1: the largest integer every script's arithmetic holds exactly.
const MAX: u128 = (1 << 53) - 1;
/// The `now_us` the export vouches for: below 2^52 µs (the year 2112).
const NOW: u128 = (1 << 52) - 1;

/// One limiter's call: the script and the arguments after `cost`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub limiter: String,
    pub scenario: String,
    /// The script's algorithm (`redis/<algorithm>.lua`).
    pub algorithm: &'static str,
    pub limit: u64,
    pub window_us: u64,
    pub extras: Vec<String>,
    pub key_by: KeyBy,
    /// Behind the scenario's shared store (`scope = "global"`).
    pub shared: bool,
}

impl Call {
    /// The call's text, after the script's `sha`: comment lines, then the
    /// one `EVALSHA` line with `{KEY}`, `{now_us}` and `{cost}` to fill in.
    pub fn render(&self, sha: &str) -> String {
        let key = match self.key_by {
            KeyBy::Client => "one key per client",
            KeyBy::Ip => "one key per client address",
            KeyBy::Global => "one key for every request",
        };
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# Limiter {} of scenario {}: the script redis/{a}.lua.\n# Loaded as it is, `ratesim export redis {a} | redis-cli -x SCRIPT LOAD`\n# returns the sha below (\"$(...)\" drops its last newline, and changes it).",
            quoted(&self.limiter),
            quoted(&self.scenario),
            a = self.algorithm,
        );
        let _ = writeln!(
            s,
            "# Fill in {{KEY}} ({key}), {{now_us}} (the caller's clock in whole µs)\n# and {{cost}} (1 for a plain request). Exact for cost 1 and now_us < 2^52."
        );
        if self.shared {
            let _ = writeln!(
                s,
                "# The scenario's shared store: what the gateway does when the call fails is its own."
            );
        }
        let _ = write!(
            s,
            "EVALSHA {sha} 1 {{KEY}} {{now_us}} {{cost}} {} {}",
            self.limit, self.window_us
        );
        for e in &self.extras {
            let _ = write!(s, " {e}");
        }
        s.push('\n');
        s
    }
}

/// The call of limiter `name` of `s`, or why no script runs it exactly.
pub fn call(s: &Scenario, name: &str) -> Result<Call, InputError> {
    super::check_names(s, &[name.to_string()])?;
    let i = s
        .limiters
        .iter()
        .position(|l| l.name == name)
        .expect("check_names found it");
    let l = &s.limiters[i];
    let bad = |why: String| InputError::new(format!("limiter {}: {why}", quoted(&l.name)));
    if l.chain.is_some() {
        return Err(InputError::new(format!(
            "chain {}: its members decide together (docs/semantics.md §13); a script decides one limiter's key",
            quoted(&l.name)
        )));
    }
    if let Some(c) = l.member_of {
        return Err(bad(format!(
            "decides only inside chain {}; a script decides one limiter's key",
            quoted(&s.limiters[c].name)
        )));
    }
    let shared = match l.deployment.scope {
        Scope::Global { atomic: true } => true,
        Scope::Global { atomic: false } => {
            return Err(bad(
                "its shared store is read-then-write (atomic = false), where a script decides in one atomic step — set atomic = true to simulate the script".into(),
            ))
        }
        Scope::Local { .. } if l.deployment.instances > 1 => {
            return Err(bad(format!(
                "deployed on {} instances, each with its own state, where a script keeps one state in Redis for all — set scope = \"global\" to simulate the script",
                l.deployment.instances
            )))
        }
        Scope::Local { .. } => false,
    };
    let (algorithm, limit, window_us, extras) = arguments(&l.algorithm).map_err(bad)?;
    Ok(Call {
        limiter: l.name.clone(),
        scenario: s.name.clone(),
        algorithm,
        limit,
        window_us,
        extras,
        key_by: l.key_by,
        shared,
    })
}

/// A script's name, `limit`, `window_us` and extras.
pub(super) type Arguments = (&'static str, u64, u64, Vec<String>);

/// The script, `limit`, `window_us` and extras of `alg`, checked
/// against the script's exact range; else why not (`ratesim export
/// nginx-lua` asks this of a `local_fallback`'s limiter too).
pub(super) fn arguments(alg: &Algorithm) -> Result<Arguments, String> {
    let flag = |b: bool| if b { "1" } else { "0" }.to_string();
    let (algorithm, (limit, window), extras): (&'static str, (u128, u128), Vec<u64>) =
        match *alg {
            Algorithm::TokenBucket(c) => ("token_bucket", per_us(c.rate), vec![c.capacity]),
            Algorithm::Gcra(c) => ("gcra", per_us(c.rate), vec![c.burst]),
            Algorithm::LeakyBucket(c) if c.arithmetic == Arithmetic::Nginx => {
                return Err(
                    "leaky_bucket with nginx's arithmetic (implementation = \"nginx\") — the leaky_bucket script is ratesim's exact shaper, and no script computes in nginx's whole milliseconds".into(),
                )
            }
            Algorithm::LeakyBucket(c) => {
                ("leaky_bucket", per_us(c.rate), vec![c.queue, c.delay])
            }
            Algorithm::SmoothBursty(c) => ("smooth_bursty", per_us(c.rate), vec![c.capacity]),
            Algorithm::FixedWindow(c) => ("fixed_window", (c.limit as u128, us(c.window)?), vec![]),
            Algorithm::SlidingLog(c) => ("sliding_log", (c.limit as u128, us(c.window)?), vec![]),
            Algorithm::SlidingCounter(c) => {
                ("sliding_counter", (c.limit as u128, us(c.window)?), vec![])
            }
            Algorithm::IntervalBucket(_) => {
                return Err(
                    "interval_bucket — no Redis script runs it (docs/semantics.md §6): its fills come at moments every key shares".into(),
                )
            }
            Algorithm::Quota(_) => {
                return Err("quota — no Redis script runs it yet (docs/semantics.md §6)".into())
            }
            a if a.needs_backend() => {
                return Err(format!(
                    "{} — no Redis script runs it: it reads the backend's responses, which only the gateway sees (docs/semantics.md §10)",
                    a.name()
                ))
            }
            _ => unreachable!("every algorithm is matched above"),
        };
    // Each argument within its own range, then jointly within the
    // script's exact range for a request of cost 1 (the headers' formulas).
    let within = |what: &str, value: u128, max: u128| -> Result<(), String> {
        if value > max {
            Err(format!(
                "{what} = {value} is outside the {algorithm} script's exact range (at most {max}; its header says why)"
            ))
        } else {
            Ok(())
        }
    };
    within("limit", limit, MAX)?;
    within("window_us", window, MAX)?;
    for &e in &extras {
        within("the extra argument", e as u128, MAX)?;
    }
    let cost = 1u128;
    match algorithm {
        "token_bucket" | "smooth_bursty" => within(
            "(capacity + cost) * window_us + limit",
            (extras[0] as u128 + cost) * window + limit,
            MAX,
        )?,
        "gcra" => {
            within(
                "burst * window_us + limit",
                extras[0] as u128 * window + limit,
                MAX,
            )?;
            within(
                "now_us + burst * window_us / limit, for now_us below 2^52,",
                NOW + extras[0] as u128 * window / limit,
                MAX,
            )?;
        }
        "leaky_bucket" => {
            let span = (extras[0] as u128 + 1) * cost * window;
            within("(queue + 1) * cost * window_us + limit", span + limit, MAX)?;
            within(
                "now_us + (queue + 1) * cost * window_us / limit, for now_us below 2^52,",
                NOW + span / limit,
                MAX,
            )?;
            within(
                "delay * window_us + limit",
                extras[1] as u128 * window + limit,
                MAX,
            )?;
        }
        "fixed_window" => within(
            "now_us + window_us, for now_us below 2^52,",
            NOW + window,
            MAX,
        )?,
        "sliding_log" => within(
            "now_us + window_us + 1, for now_us below 2^52,",
            NOW + window + 1,
            MAX,
        )?,
        "sliding_counter" => {
            within("limit", limit, (1 << 52) - 1)?;
            within("window_us", window, (1 << 52) - 1)?;
            within("(limit + 1) * window_us", (limit + 1) * window, MAX)?;
            within(
                "now_us + 2 * window_us, for now_us below 2^52,",
                NOW + 2 * window,
                MAX,
            )?;
        }
        _ => {}
    }
    let mut words: Vec<String> = extras.iter().map(u64::to_string).collect();
    // The knobs as the scenario spells them, which are the scripts' words.
    match *alg {
        Algorithm::FixedWindow(c) => {
            words.extend([flag(c.count_rejected), c.align.as_str().into()]);
        }
        Algorithm::SlidingLog(c) => {
            words.extend([flag(c.count_rejected), c.boundary.as_str().into()]);
        }
        Algorithm::SlidingCounter(c) => {
            words.extend([flag(c.count_rejected), c.weight.as_str().into()]);
        }
        Algorithm::SmoothBursty(c) => words.push(c.start.as_str().into()),
        _ => {}
    }
    Ok((algorithm, limit as u64, window as u64, words))
}

/// A rate as `limit` per `window_us`, in lowest terms: n per d ns is
/// n·1000 per d µs.
fn per_us(rate: Rate) -> (u128, u128) {
    let (n, d) = (rate.tokens() * 1000, rate.per_ns());
    let g = gcd(n, d);
    (n / g, d / g)
}

/// A window in whole microseconds.
fn us(window: Nanos) -> Result<u128, String> {
    if window.0 % 1000 == 0 {
        Ok(window.0 as u128 / 1000)
    } else {
        Err(format!(
            "window {window} is no whole number of microseconds, which is all the script's window_us holds"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_is_limit_per_window_us_in_lowest_terms() {
        let r = |n, d| per_us(Rate::new(n, d).unwrap());
        assert_eq!(r(100, 1_000_000_000), (1, 10_000));
        assert_eq!(r(3, 1_000_000_000), (3, 1_000_000));
        assert_eq!(r(5, 60_000_000_000), (1, 12_000_000));
        assert_eq!(r(2, 3_000), (2, 3));
        // Faster than one per µs, and at a nanosecond's grain.
        assert_eq!(r(1, 333), (1000, 333));
    }

    #[test]
    fn a_window_is_whole_microseconds_or_refused() {
        assert_eq!(us(Nanos(1_000_000_000)), Ok(1_000_000));
        assert!(us(Nanos(1_500)).unwrap_err().contains("1.5us"));
    }
}
