//! How much work a scenario is, before it runs.
//!
//! A scenario can be valid and still take days: a periodic burst of 10^12
//! requests, a rate of `7/3ns`, a sliding log whose limit is a billion. The
//! estimate is arithmetic on the validated parameters only — it simulates
//! nothing — so `validate` can print it and `run` can refuse work beyond
//! [`BUDGET_DECISIONS`] (unless `--no-budget`) and warn of limiter state beyond
//! [`STATE_WARNING`] before anything is allocated.
//!
//! - **Attempts** are the expected first attempts of every source over the
//!   run (a trace's rows; `rate × duration` per client for random and
//!   steady sources; bursts × periods for bursty and boundary sources), and
//!   an upper bound with retries (every request retried up to its source's
//!   `max_attempts`).
//! - **Decisions** are attempts summed over the limiters that see each
//!   source: the simulator's work, one event each.
//! - **State** is the most memory the limiters' per-key state can take:
//!   keys × the bytes one key can hold in the simulator (a log entry or a
//!   waiting request is 16 bytes; a sliding log holds at most `limit`
//!   entries per key, a leaky bucket at most `queue` waiting requests).

use std::fmt;

use crate::clock::{Nanos, Rate};
use crate::deploy::Scope;
use crate::limiter::Algorithm;
use crate::scenario::{KeyBy, Scenario};
use crate::traffic::bursty::Form;
use crate::traffic::Pattern;

/// The most decisions `run` makes without `--no-budget`: at about 2 M
/// decisions per second per core this is roughly an hour and a half of
/// two cores.
pub const BUDGET_DECISIONS: u128 = 10_000_000_000;

/// Worst-case limiter state above which `validate` and `run` warn.
pub const STATE_WARNING: u128 = 1 << 30;

/// Bytes the simulator keeps per log entry or waiting request.
const ENTRY_BYTES: u128 = 16;

/// The work of one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Estimate {
    /// Expected first attempts over all sources.
    pub attempts: u128,
    /// At most this many attempts with every request retried to its limit.
    pub attempts_with_retries: u128,
    /// Expected decisions over all limiters (first attempts only).
    pub decisions: u128,
    /// The most bytes the limiters' per-key state can take at once.
    pub state_bytes: u128,
}

impl Estimate {
    pub fn of(s: &Scenario) -> Estimate {
        let end = s.duration;
        let per_source: Vec<u128> = s
            .traffic
            .iter()
            .map(|src| first_attempts(&src.pattern, end))
            .collect();
        let attempts = per_source.iter().fold(0u128, |a, &b| a.saturating_add(b));
        let attempts_with_retries = s
            .traffic
            .iter()
            .zip(&per_source)
            .map(|(src, &n)| n.saturating_mul(src.retry.max_attempts as u128))
            .fold(0u128, u128::saturating_add);
        let mut decisions = 0u128;
        let mut state_bytes = 0u128;
        for l in &s.limiters {
            let seen = l
                .traffic
                .iter()
                .map(|&i| per_source[i])
                .fold(0u128, u128::saturating_add);
            decisions = decisions.saturating_add(seen);
            let keys = match l.key_by {
                KeyBy::Client => s.population.clients() as u128,
                KeyBy::Ip => s.population.ips() as u128,
                KeyBy::Global => 1,
            };
            let copies = match l.deployment.scope {
                Scope::Local { share: false } => l.deployment.instances as u128,
                _ => 1,
            };
            state_bytes = state_bytes.saturating_add(state_bytes_of(
                &l.algorithm,
                keys.saturating_mul(copies),
                seen,
            ));
        }
        Estimate {
            attempts,
            attempts_with_retries,
            decisions,
            state_bytes,
        }
    }

    /// Why `run` should not start without `--no-budget`, if it should not.
    pub fn over_budget(&self) -> Option<String> {
        (self.decisions > BUDGET_DECISIONS).then(|| {
            format!(
                "this scenario is ≈{} decisions (≈{} attempts over its limiters), more than the {} \
                 a run makes without --no-budget; shorten duration, lower rates, bursts or clients, or pass --no-budget",
                count(self.decisions),
                count(self.attempts),
                count(BUDGET_DECISIONS)
            )
        })
    }

    /// A warning when the limiters' state could take more than
    /// [`STATE_WARNING`].
    pub fn state_warning(&self) -> Option<String> {
        (self.state_bytes > STATE_WARNING).then(|| {
            format!(
                "the limiters' state could take up to {} of memory (many keys, or a sliding log's \
                 limit or a leaky bucket's queue of that many entries per key)",
                bytes(self.state_bytes)
            )
        })
    }
}

impl fmt::Display for Estimate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "≈{} attempts", count(self.attempts))?;
        if self.attempts_with_retries > self.attempts {
            write!(
                f,
                " (at most {} with retries)",
                count(self.attempts_with_retries)
            )?;
        }
        write!(
            f,
            ", ≈{} decisions, limiter state at most {}",
            count(self.decisions),
            bytes(self.state_bytes)
        )
    }
}

/// Expected first attempts of one source over `[0, end)`.
fn first_attempts(p: &Pattern, end: Nanos) -> u128 {
    let clients = |n: usize| n as u128;
    match p {
        Pattern::Trace(t) => t.rows() as u128,
        Pattern::Steady(s) => clients(s.clients.len()).saturating_mul(over(s.rate, end) + 1),
        Pattern::Poisson(p) => clients(p.clients.len()).saturating_mul(over(p.rate, end)),
        Pattern::Boundary(b) => {
            let boundaries = end.0 as u128 / (b.window.0 as u128 * b.every as u128) + 1;
            clients(b.clients.len())
                .saturating_mul(2 * b.burst as u128)
                .saturating_mul(boundaries)
        }
        Pattern::Bursty(b) => {
            let each = match &b.form {
                Form::OnOff { rate, rate_off, .. } => {
                    over(*rate, end) + rate_off.map_or(0, |r| over(r, end)) + 1
                }
                Form::Periodic { burst, period, .. } => {
                    (*burst as u128).saturating_mul(end.0 as u128 / period.0 as u128 + 1)
                }
            };
            clients(b.clients.len()).saturating_mul(each)
        }
        Pattern::Nat(n) => {
            let fastest = n
                .heavy_rate
                .map_or(over(n.rate, end), |h| over(n.rate, end).max(over(h, end)));
            clients(n.users.len()).saturating_mul(fastest)
        }
        Pattern::Zipf(z) => over(z.rate, end),
        Pattern::Ramp(r) => {
            let fastest = r.steps.iter().map(|&s| over(s, end)).max().unwrap_or(0);
            clients(r.clients.len()).saturating_mul(fastest + 1)
        }
    }
}

/// Requests at `rate` over `end`.
fn over(rate: Rate, end: Nanos) -> u128 {
    rate.tokens().saturating_mul(end.0 as u128) / rate.per_ns()
}

/// The most bytes `keys` keys of `algorithm` can hold at once, given the
/// limiter sees `attempts` requests in all: fixed bytes per key, plus
/// entries (log entries, waiting requests) of which each key holds a
/// bounded number and all keys together at most one per attempt.
fn state_bytes_of(algorithm: &Algorithm, keys: u128, attempts: u128) -> u128 {
    use crate::limiter::state_bytes as b;
    let (fixed, entries_per_key) = match algorithm {
        Algorithm::TokenBucket(_) => (b::TOKEN_BUCKET, 0),
        Algorithm::IntervalBucket(_) => (b::INTERVAL_BUCKET, 0),
        Algorithm::Gcra(_) => (b::GCRA, 0),
        Algorithm::FixedWindow(_) => (b::FIXED_WINDOW, 0),
        Algorithm::SlidingCounter(_) => (b::SLIDING_COUNTER, 0),
        Algorithm::SlidingLog(c) if c.count_rejected => (0, u64::MAX),
        Algorithm::SlidingLog(c) => (0, c.limit),
        Algorithm::LeakyBucket(c) => (b::LEAKY_BUCKET, c.queue),
        Algorithm::SmoothBursty(_) => (b::SMOOTH_BURSTY, 0),
    };
    let entries = keys.saturating_mul(entries_per_key as u128).min(attempts);
    keys.saturating_mul(fixed as u128)
        .saturating_add(ENTRY_BYTES.saturating_mul(entries))
}

/// `12,345,678` → `1.2e7`; small counts as they are.
fn count(n: u128) -> String {
    if n < 1_000_000 {
        return n.to_string();
    }
    let digits = n.to_string();
    format!("{}.{}e{}", &digits[..1], &digits[1..2], digits.len() - 1)
}

fn bytes(n: u128) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n;
    let mut unit = 0;
    while value >= 10 * 1024 && unit + 1 < UNITS.len() {
        value /= 1024;
        unit += 1;
    }
    format!("{value} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(text: &str) -> Scenario {
        Scenario::parse(text, "t", crate::input::Origin::File("t.toml".into())).unwrap()
    }

    const HEAD: &str = "duration = \"10s\"\n[defaults]\nlimit = 5\nwindow = \"1s\"\n";

    #[test]
    fn a_steady_source_is_clients_times_rate_times_duration() {
        let s = scenario(&format!(
            "{HEAD}[[limiter]]\nalgorithm = \"gcra\"\n[[limiter]]\nalgorithm = \"token_bucket\"\n\
             [[traffic]]\npattern = \"poisson\"\nclients = 100\nrate = \"3/1s\"\n\
             [traffic.retry]\npolicy = \"immediate\"\nmax_attempts = 4\n"
        ));
        let e = Estimate::of(&s);
        assert_eq!(e.attempts, 3000);
        assert_eq!(e.attempts_with_retries, 12000);
        assert_eq!(e.decisions, 6000);
        assert_eq!(e.state_bytes, 100 * (8 + 16));
        // A sliding log holds at most `limit` entries per key.
        let log = scenario(&format!(
            "{HEAD}[[limiter]]\nalgorithm = \"sliding_log\"\n\
             [[traffic]]\npattern = \"poisson\"\nclients = 100\nrate = \"3/1s\"\n"
        ));
        assert_eq!(Estimate::of(&log).state_bytes, 16 * 100 * 5);
        assert!(e.over_budget().is_none());
    }

    #[test]
    fn a_trillion_request_burst_is_over_budget() {
        // Robustness issue 6: `burst = 1000000000000` passed validate and
        // would have run for days.
        let s = scenario(&format!(
            "{HEAD}[[limiter]]\nalgorithm = \"fixed_window\"\n\
             [[traffic]]\npattern = \"bursty\"\nform = \"periodic\"\nburst = 1000000000000\nperiod = \"1s\"\n"
        ));
        let e = Estimate::of(&s);
        assert_eq!(e.attempts, 11_000_000_000_000);
        let why = e.over_budget().unwrap();
        assert!(
            why.contains("1.1e13 decisions") && why.contains("--no-budget"),
            "{why}"
        );
    }

    #[test]
    fn a_huge_queue_is_reported_up_front() {
        // Robustness issue 10: a leaky bucket's waiting requests took 474 MB.
        let s = scenario(&format!(
            "{HEAD}[[limiter]]\nalgorithm = \"leaky_bucket\"\nqueue = 1000000000\n\
             [[traffic]]\npattern = \"steady\"\nclients = 1000\nrate = \"100000/1s\"\n"
        ));
        let e = Estimate::of(&s);
        // 10^9 requests in all, each of which could wait.
        assert_eq!(e.state_bytes, 1000 * 16 + 16 * 1_000_001_000);
        let w = e.state_warning().unwrap();
        assert!(w.contains("14 GiB"), "{w}");
    }

    #[test]
    fn counts_and_bytes_read_well() {
        assert_eq!(count(999_999), "999999");
        assert_eq!(count(12_345_678), "1.2e7");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(3 << 30), "3072 MiB");
        assert_eq!(bytes(30 << 30), "30 GiB");
    }
}
