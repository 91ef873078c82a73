//! How much work and memory a scenario is, before it runs.
//!
//! A scenario can be valid and still take days, or more memory than the
//! machine has: a periodic burst of 10^12 requests, a rate of `7/3ns`, a
//! sliding log whose limit is a billion, 10^7 clients through seven
//! limiters. The estimate is arithmetic on the validated parameters only —
//! it simulates nothing — so `validate` can print it and `run` can refuse
//! work beyond [`BUDGET_DECISIONS`] or memory beyond what the machine has
//! (unless `--no-budget`), and warn of memory beyond [`MEMORY_WARNING`],
//! before anything is allocated.
//!
//! - **Attempts** are the expected first attempts of every source over
//!   `[0, duration)`, each pattern at its own mean rate, in integers: a
//!   steady client's `⌊(duration − 1 ns − phase) · rate⌋ + 1` sends; a
//!   Poisson client's `rate × duration`; an on/off client's
//!   `(rate · on + rate_off · off) / (on + off) × duration` (it starts on
//!   with the odds `on / (on + off)` and draws exponential periods, so it
//!   is at that long-run mix from the first instant); a periodic burst's
//!   sends before the end, round by round; each boundary's two bursts that
//!   fall before the end; each ramp step at its own rate over its own span;
//!   a NAT's heavy users at `heavy_rate` and the rest at `rate`; a trace's
//!   rows up to `duration` (at its mean rate when `duration` cuts it).
//!   With retries, an upper bound: every request retried up to its
//!   source's `max_attempts`.
//! - **Decisions** are attempts summed over the limiters that see each
//!   source: the simulator's work, one event each.
//! - **State** is the most memory the limiters' per-key state can take in
//!   a compact store: keys × the bytes of [`crate::limiter::state_bytes`]
//!   (a log entry or a waiting request 16 bytes; a sliding log holds at
//!   most `limit` entries per key, a leaky bucket at most `queue` waiting
//!   requests).
//! - **Memory** is the whole run's peak resident memory in the simulator
//!   (see [`Memory`]): the process, the arrivals' generators, every
//!   limiter's per-key tables, the entries that grow with a limiter's
//!   parameters, and buffers.

use std::fmt;

mod memory;

use memory::*;
pub use memory::{available_memory, Memory};

use crate::clock::{Nanos, Rate};
use crate::deploy::Scope;
use crate::limiter::Algorithm;
use crate::scenario::Scenario;
use crate::scenario::Service;
use crate::traffic::bursty::Form;
use crate::traffic::steady::Phase;
use crate::traffic::Pattern;

/// The most decisions `run` makes without `--no-budget`: at about 2 M
/// decisions per second per core this is roughly an hour and a half of
/// two cores.
pub(crate) const BUDGET_DECISIONS: u128 = 10_000_000_000;

/// Whole-run memory above which `validate` and `run` warn.
pub(crate) const MEMORY_WARNING: u128 = 1 << 30;

/// Bytes the simulator keeps per log entry or waiting request, in the
/// compact figure of [`Estimate::state_bytes`].
const ENTRY_BYTES: u128 = 16;

/// The work and memory of one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Estimate {
    /// Expected first attempts over all sources.
    pub attempts: u128,
    /// At most this many attempts with every request retried to its limit.
    pub attempts_with_retries: u128,
    /// Expected decisions over all limiters (first attempts only).
    pub decisions: u128,
    /// The most bytes the limiters' per-key state can take at once, in a
    /// compact store.
    pub state_bytes: u128,
    /// The whole run's peak memory in the simulator, by part.
    pub memory: Memory,
}

impl Estimate {
    /// The estimate of `s`, with the decision log's buffers if the
    /// scenario asks for the log (`[output] decisions`).
    pub fn of(s: &Scenario) -> Estimate {
        Estimate::of_run(s, s.output.decisions)
    }

    /// The estimate of `s` run with the decision log written or not
    /// (`--decisions` turns it on whatever the scenario says).
    pub fn of_run(s: &Scenario, decision_log: bool) -> Estimate {
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
        let mut memory = Memory {
            process: PROCESS_BYTES,
            ..Memory::default()
        };
        let mut seen_by_any = vec![false; s.traffic.len()];
        for (index, l) in s.limiters.iter().enumerate() {
            let seen = l
                .traffic
                .iter()
                .map(|&i| per_source[i])
                .fold(0u128, u128::saturating_add);
            decisions = decisions.saturating_add(seen);
            for &i in &l.traffic {
                seen_by_any[i] = true;
            }
            limiter_memory(s, index, l, seen, &mut memory);
            if l.chain.is_some() {
                // Its members hold the state.
                continue;
            }
            let keys = key_rows(s, l.key_by);
            let (copies, algorithm) = match l.deployment.scope {
                Scope::Local { .. } => (
                    l.deployment.instances as u128,
                    l.deployment.instance_algorithm(&l.algorithm),
                ),
                Scope::Global { .. } => (1, l.algorithm),
            };
            state_bytes = state_bytes.saturating_add(state_bytes_of(
                &algorithm,
                keys.saturating_mul(copies),
                seen,
            ));
        }
        let chunk = 2 * CHUNK_ARRIVALS.min(attempts) * SHARED_ARRIVAL;
        memory.process = memory.process.saturating_add(chunk);
        // Each stream's generator, and its next arrival on one queue.
        let mut events = 0u128;
        for (src, _) in s.traffic.iter().zip(&seen_by_any).filter(|(_, &on)| on) {
            memory.arrivals = memory.arrivals.saturating_add(arrival_bytes(&src.pattern));
            if let Pattern::Trace(t) = &src.pattern {
                memory.recordings = memory.recordings.saturating_add(t.memory_bytes().into());
            }
            events = events.saturating_add(streams(&src.pattern));
        }
        memory.arrivals = memory.arrivals.saturating_add(calendar(events, 16));
        memory.arrivals = memory
            .arrivals
            .saturating_add(interned_names(s).saturating_mul(NAME_BYTES));
        if decision_log {
            memory.decision_log = s.limiters.len() as u128 * DECISION_LOG_BYTES;
        }
        Estimate {
            attempts,
            attempts_with_retries,
            decisions,
            state_bytes,
            memory,
        }
    }

    /// The whole run's peak memory, in bytes (see [`Memory`]).
    pub fn memory_bytes(&self) -> u128 {
        self.memory.total()
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

    /// Why `run` should not start without `--no-budget` on a machine with
    /// `available` bytes of memory, if it should not: the run would take
    /// more.
    pub fn over_memory(&self, available: u64) -> Option<String> {
        let need = self.memory_bytes();
        (need > available as u128).then(|| {
            format!(
                "this run would take ≈{} MiB of memory ({}), more than the {} MiB available; \
                 lower clients, keys, limiters, instances, a sliding log's limit or a leaky \
                 bucket's queue, or pass --no-budget",
                mib(need),
                self.memory.largest(),
                mib(available as u128)
            )
        })
    }

    /// Why `run` refuses to start on this machine without `--no-budget`, if
    /// it does: over the work budget, or more memory than is available.
    pub fn refusal(&self) -> Option<String> {
        self.over_budget()
            .or_else(|| available_memory().and_then(|a| self.over_memory(a)))
    }

    /// A warning when the whole run could take more than
    /// [`MEMORY_WARNING`], naming what makes it large.
    pub fn state_warning(&self) -> Option<String> {
        let need = self.memory_bytes();
        (need > MEMORY_WARNING).then(|| {
            format!(
                "the run could take ≈{} MiB of memory ({})",
                mib(need),
                self.memory.largest()
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
            ", ≈{} decisions, limiter state at most {}, memory: ≈{} MiB",
            count(self.decisions),
            bytes(self.state_bytes),
            mib(self.memory_bytes())
        )
    }
}

// ---------------------------------------------------------------------------
// Attempts
// ---------------------------------------------------------------------------

/// Expected first attempts of one source over `[0, end)` (a trace's rows
/// up to and including `end`).
fn first_attempts(p: &Pattern, end: Nanos) -> u128 {
    let e = end.0 as u128;
    let n = |c: usize| c as u128;
    match p {
        Pattern::Trace(t) => {
            let (rows, last) = (t.rows() as u128, t.last_time().0 as u128);
            // Rows after `end` are not replayed: the trace at its mean rate.
            match e >= last {
                true => rows,
                false => mul_div(rows, e + 1, last + 1),
            }
        }
        Pattern::Steady(s) => match s.phase {
            Phase::Fixed(p) => n(s.clients.len()).saturating_mul(steady_sends(s.rate, e, p.0)),
            // Client i's phase is i/(n·rate): Σ_i ⌊(e − 1)·rate − i/n⌋ + 1
            // = ⌊n·(e − 1)·rate⌋ + 1 (Hermite's identity), exactly; a
            // random phase has the same mean.
            Phase::Spread | Phase::Random => sends_of_clients(s.rate, e, n(s.clients.len())),
        },
        Pattern::Poisson(p) => over(p.rate, e, n(p.clients.len())),
        Pattern::Zipf(z) => over(z.rate, e, 1),
        Pattern::Nat(nat) => {
            // Exactly round(heavy_share · users) heavy users (traffic/nat.rs).
            let users = n(nat.users.len());
            let (num, den) = nat.heavy_share;
            let heavy = (users * num * 2 + den) / (den * 2);
            let heavy_sent = nat.heavy_rate.map_or(0, |r| over(r, e, heavy));
            heavy_sent.saturating_add(over(nat.rate, e, users - heavy.min(users)))
        }
        Pattern::Boundary(b) => {
            // Boundaries k·S, k ≥ 1, S = every · window: the first burst
            // at k·S − before, the second at k·S + after, each sent if
            // before the end.
            let spacing = (b.every as u128).saturating_mul(b.window.0 as u128);
            let (before, after) = (b.before.0 as u128, b.after.0 as u128);
            let first = (e + before - 1) / spacing;
            let second = match e > after {
                true => (e - after - 1) / spacing,
                false => 0,
            };
            n(b.clients.len())
                .saturating_mul(b.burst as u128)
                .saturating_mul(first + second)
        }
        Pattern::Bursty(b) => match b.form {
            Form::OnOff {
                rate,
                rate_off,
                on,
                off,
            } => {
                // Long-run shares of time on and off, from the first
                // instant (traffic/bursty.rs starts on with these odds).
                let (on, off) = (on.0 as u128, off.0 as u128);
                let clients = n(b.clients.len());
                share(rate, e, clients, on, on + off)
                    .saturating_add(rate_off.map_or(0, |r| share(r, e, clients, off, on + off)))
            }
            Form::Periodic {
                burst,
                period,
                spread,
                phase,
            } => {
                let (burst, period, spread) = (burst as u128, period.0 as u128, spread.0 as u128);
                let clients = n(b.clients.len());
                match phase {
                    Phase::Fixed(p) => clients.saturating_mul(periodic_sends(
                        p.0 as u128,
                        burst,
                        period,
                        spread,
                        e,
                    )),
                    // Client i starts at ⌈i · period / n⌉: summed exactly
                    // for up to EXACT_CLIENTS clients, else at the mean.
                    Phase::Spread if clients <= EXACT_CLIENTS => (0..clients)
                        .map(|i| {
                            let start = (i * period).div_ceil(clients);
                            periodic_sends(start, burst, period, spread, e)
                        })
                        .fold(0, u128::saturating_add),
                    Phase::Spread | Phase::Random => {
                        periodic_mean(clients, burst, period, spread, e)
                    }
                }
            }
        },
        Pattern::Closed(c) => {
            // At most one request per think time per client (responses
            // only make it fewer): the mean think time, in ns.
            let think = match c.think {
                Service::Exp(m) | Service::Const(m) => m.0 as f64,
                Service::Uniform(low, high) => (low.0 as f64 + high.0 as f64) / 2.0,
                Service::LogNormal(median, sigma) => median.0 as f64 * (sigma * sigma / 2.0).exp(),
            };
            let per_client = (e as f64 / think.max(1.0)).ceil() as u128;
            n(c.clients.len()).saturating_mul(per_client)
        }
        Pattern::Ramp(r) => {
            // Step j spans [⌈e·j/s⌉, ⌈e·(j+1)/s⌉) at its own rate; its
            // clients are spread as a steady source's.
            let s = r.steps.len() as u128;
            let clients = n(r.clients.len());
            r.steps
                .iter()
                .enumerate()
                .map(|(j, &rate)| {
                    let j = j as u128;
                    let span = (e * (j + 1)).div_ceil(s) - (e * j).div_ceil(s);
                    sends_of_clients(rate, span, clients)
                })
                .fold(0, u128::saturating_add)
        }
    }
}

/// Up to this many clients, a periodic source's spread phases are summed
/// one by one.
const EXACT_CLIENTS: u128 = 4096;

/// Requests of `n` clients at `rate` each over `e` ns.
fn over(rate: Rate, e: u128, n: u128) -> u128 {
    n.saturating_mul(rate.tokens()).saturating_mul(e) / rate.per_ns()
}

/// Requests of `n` clients at `rate` each for `part / whole` of `e` ns:
/// `⌊n · rate · e · part / whole⌋`, exactly while it fits.
fn share(rate: Rate, e: u128, n: u128, part: u128, whole: u128) -> u128 {
    let sent = n.saturating_mul(rate.tokens()).saturating_mul(e);
    // ⌊⌊x / whole⌋ / per⌋ = ⌊x / (whole · per)⌋.
    mul_div(sent, part, whole) / rate.per_ns()
}

/// `⌊a · b / c⌋`, saturated: exact while it fits, for `b` and `c` below
/// 2^64 (past that, at most `b` too high).
pub(super) fn mul_div(a: u128, b: u128, c: u128) -> u128 {
    let (q, r) = (a / c, a % c);
    // r < c: r · b / c < b, and r · b fits when b and c are below 2^64.
    q.saturating_mul(b)
        .saturating_add(r.checked_mul(b).map_or(b, |x| x / c))
}

/// Sends of one steady client at `rate` from `phase` ns over `[0, e)`:
/// the k-th at `⌈phase + k / rate⌉`, sent while before `e`.
fn steady_sends(rate: Rate, e: u128, phase: u64) -> u128 {
    let phase = phase as u128;
    if e == 0 || phase > e - 1 {
        return 0;
    }
    mul_div(e - 1 - phase, rate.tokens(), rate.per_ns()).saturating_add(1)
}

/// Sends of `n` steady clients at `rate` over `[0, e)`, client i from
/// phase `i / (n · rate)`: `⌊n · (e − 1) · rate⌋ + 1`.
fn sends_of_clients(rate: Rate, e: u128, n: u128) -> u128 {
    if e == 0 || n == 0 {
        return 0;
    }
    mul_div((e - 1).saturating_mul(n), rate.tokens(), rate.per_ns()).saturating_add(1)
}

/// Sends of one periodic client starting at `start`: `burst` every
/// `period`, request j of a round `⌈j · spread / burst⌉` after its start,
/// while before `e`.
fn periodic_sends(start: u128, burst: u128, period: u128, spread: u128, e: u128) -> u128 {
    if start >= e {
        return 0;
    }
    // Rounds that start before the end; all but the last are whole.
    let rounds = (e - 1 - start) / period + 1;
    let left = e - (start + (rounds - 1) * period);
    let last = match spread {
        0 => burst,
        _ => (((left - 1).saturating_mul(burst)) / spread)
            .saturating_add(1)
            .min(burst),
    };
    (rounds - 1).saturating_mul(burst).saturating_add(last)
}

/// Expected sends of `n` periodic clients with uniformly spread starts:
/// request j of a round, `o_j` into it, is sent `(e − o_j) / period`
/// times on average, summed over the burst (the offsets taken as even
/// over `[0, spread]`).
fn periodic_mean(n: u128, burst: u128, period: u128, spread: u128, e: u128) -> u128 {
    let per_client_ns = if e >= spread {
        burst.saturating_mul(e) - burst.saturating_mul(spread) / 2
    } else {
        mul_div(burst.saturating_mul(e), e, 2 * spread)
    };
    mul_div(per_client_ns, n, period)
}

// ---------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------

/// The most bytes `keys` keys of `algorithm` can hold at once in a
/// compact store, given the limiter sees `attempts` requests in all:
/// fixed bytes per key, plus entries (log entries, waiting requests) of
/// which each key holds a bounded number and all keys together at most one
/// per attempt.
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
        Algorithm::Quota(_) => (b::QUOTA, 0),
        Algorithm::Concurrency { .. } => (crate::limiter::feedback::CONCURRENCY_BYTES, 0),
        Algorithm::QueueLength { .. } => (0, 0),
        Algorithm::Adaptive(_) => (crate::limiter::feedback::ADAPTIVE_BYTES, 0),
    };
    let entries = keys.saturating_mul(entries_per_key as u128).min(attempts);
    keys.saturating_mul(fixed as u128)
        .saturating_add(ENTRY_BYTES.saturating_mul(entries))
}

// ---------------------------------------------------------------------------
// Text
// ---------------------------------------------------------------------------

/// `12,345,678` → `1.2e7`; small counts as they are.
pub(super) fn count(n: u128) -> String {
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

/// Whole MiB, rounded to the nearest.
pub(crate) fn mib(n: u128) -> u128 {
    n.saturating_add(1 << 19) >> 20
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Load as _;

    fn scenario(text: &str) -> Scenario {
        Scenario::parse(text, "t", ratesim_input::Origin::File("t.toml".into())).unwrap()
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

    /// The first attempts of one source of `traffic` over `duration`.
    fn attempts(duration: &str, traffic: &str) -> u128 {
        let s = scenario(&format!(
            "duration = \"{duration}\"\n[defaults]\nlimit = 5\nwindow = \"1s\"\n\
             [[limiter]]\nalgorithm = \"token_bucket\"\n[[traffic]]\n{traffic}\n"
        ));
        Estimate::of(&s).attempts
    }

    #[test]
    fn each_pattern_is_counted_at_its_own_mean_rate() {
        // Steady, spread: the k-th send of client i at ⌈(i/n + k)/rate⌉,
        // sent while before 10 s: 3 clients at 2/s send 20 each.
        let steady = "pattern = \"steady\"\nclients = 3\nrate = \"2/1s\"";
        assert_eq!(attempts("10s", steady), 60);
        // A fixed phase of 9.5 s leaves one send (at 9.5 s); of 10 s, none.
        assert_eq!(attempts("10s", &format!("{steady}\nphase = \"9.5s\"")), 3);
        assert_eq!(attempts("10s", &format!("{steady}\nphase = \"10s\"")), 0);
        // Poisson and Zipf: rate × duration.
        assert_eq!(
            attempts("10s", "pattern = \"poisson\"\nclients = 7\nrate = \"3/1s\""),
            210
        );
        assert_eq!(
            attempts("10s", "pattern = \"zipf\"\nkeys = 100\nrate = \"50/1s\""),
            500
        );
        // On 1 s, off 3 s: a quarter of the time at 100/s, and rate_off the
        // rest.
        let on_off =
            "pattern = \"bursty\"\nclients = 10\nrate = \"100/1s\"\non = \"1s\"\noff = \"3s\"";
        assert_eq!(attempts("100s", on_off), 10 * 2500);
        assert_eq!(
            attempts("100s", &format!("{on_off}\nrate_off = \"4/1s\"")),
            10 * (2500 + 300)
        );
        // Periodic, one client from 0: rounds at 0, 3, 6, 9 s; the last
        // one cut at 10 s: of 4 requests over 2 s (at 9, 9.5, 10, 10.5 s)
        // two are sent.
        let periodic = "pattern = \"bursty\"\nform = \"periodic\"\nburst = 4\nperiod = \"3s\"\nspread = \"2s\"";
        assert_eq!(attempts("10s", periodic), 3 * 4 + 2);
        // Two clients spread: the second starts at 1.5 s, its rounds at
        // 1.5, 4.5 and 7.5 s whole (the last request at 9 s).
        assert_eq!(
            attempts("10s", &format!("{periodic}\nclients = 2")),
            14 + 3 * 4
        );
        // Boundary every 2 windows of 1 s: boundaries 2, 4, 6, 8, 10 s;
        // the first burst (1 ms before) of all five, the second (at the
        // boundary) of four.
        assert_eq!(
            attempts(
                "10s",
                "pattern = \"boundary\"\nburst = 3\nevery = 2\nclients = 2"
            ),
            2 * 3 * (5 + 4)
        );
        // Ramp from 1/s to 4/s in 4 steps of 10 s: 10 + 20 + 30 + 40 per
        // client (traffic/ramp.rs's own test).
        assert_eq!(
            attempts(
                "40s",
                "pattern = \"ramp\"\nfrom = \"1/1s\"\nto = \"4/1s\"\nsteps = 4\nclients = 3"
            ),
            3 * 100
        );
        // NAT: 1 % of 300 users (3) at 50/s, the rest at 1/2s.
        assert_eq!(
            attempts(
                "10s",
                "pattern = \"nat\"\nusers = 300\nips = 10\nrate = \"1/2s\"\nheavy_share = 0.01\nheavy_rate = \"50/1s\""
            ),
            3 * 500 + 297 * 5
        );
    }

    #[test]
    fn on_off_sources_from_1_to_100_percent_duty_are_estimated_at_their_runs() {
        // Issue 21: an on/off source was estimated as if always on — 100
        // times its requests at 1 % duty. 1000 clients at 1/s while on,
        // periods averaging 20 s in all, over 200 s; "100 %" is off for a
        // mean of 1 µs.
        for (on, off, duty) in [
            ("200ms", "19800ms", 1),
            ("2s", "18s", 10),
            ("10s", "10s", 50),
            ("20s", "1us", 100),
        ] {
            let s = scenario(&format!(
                "duration = \"200s\"\nseed = 3\n[defaults]\nlimit = 5\nwindow = \"1s\"\n\
                 [[limiter]]\nalgorithm = \"token_bucket\"\n[[traffic]]\npattern = \"bursty\"\n\
                 clients = 1000\nrate = \"1/1s\"\non = \"{on}\"\noff = \"{off}\"\n"
            ));
            let estimated = Estimate::of(&s).attempts;
            assert_eq!(estimated, (2000 * duty).min(199_999), "{duty} %");
            let run = crate::engine::simulate(&s, 0, None, &|_, _| {}).unwrap();
            let measured = run.recorder.logical as u128;
            // Within 10 % (the requirement is 2×).
            assert!(
                10 * estimated.abs_diff(measured) <= measured,
                "{duty} % duty: estimated {estimated}, measured {measured}"
            );
        }
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
        // Rounds at 0, 1, …, 9 s.
        assert_eq!(e.attempts, 10_000_000_000_000);
        let why = e.over_budget().unwrap();
        assert!(
            why.contains("1.0e13 decisions") && why.contains("--no-budget"),
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
        assert_eq!(e.state_bytes, 1000 * 16 + 16 * 1_000_000_000);
        // In the simulator each waits in its key's deque (16 bytes) and
        // as a release in the recorder's queue (32): at 5 per second
        // nearly none leaves. Besides, each key's window of passes is
        // crowded: up to twice the policy limit of 5 passes, 16 bytes each.
        assert_eq!(e.memory.entries, 48 * 1_000_000_000 + 1000 * 10 * 16);
        let w = e.state_warning().unwrap();
        assert!(
            w.starts_with("the run could take ≈45")
                && w.contains("mostly limiter[0]'s waiting requests"),
            "{w}"
        );
    }

    #[test]
    fn the_memory_of_a_run_adds_its_parts() {
        // One token bucket (capacity 5 at 5/s: a 16-byte state) over 1000
        // Poisson clients at 1/s for 10 s: 10^4 arrivals.
        let s = scenario(&format!(
            "{HEAD}[[limiter]]\nalgorithm = \"token_bucket\"\n\
             [[traffic]]\npattern = \"poisson\"\nclients = 1000\nrate = \"1/1s\"\n"
        ));
        let e = Estimate::of(&s);
        // A queue of 1000 16-byte entries keeps a part-filled block of 32
        // in each of up to 1024 buckets: (1000 + 1000 · 32) · 16.
        let queue = 33_000 * 16;
        assert_eq!(
            e.memory,
            Memory {
                // The process, and two chunks of 10^4 arrivals of 56 bytes.
                process: (6 << 20) + 2 * 10_000 * 56,
                // An 8-byte clock a client, and its event on the queue.
                arrivals: queue + 1000 * 8,
                // A 64-byte recorder slot, a 16-byte state, two bits and a
                // fresh event (in a queue as above) per key — a fixed-size
                // state has no ledger mark (no rule has one) —; and the source's two bit
                // sets over its 1000 clients (sources.csv), 16 words each,
                // at most doubled.
                keys: 1000 * 64 + 1000 * 16 + 1000 / 4 + queue + 16 * 8 * 2 * 2,
                key_rows: 1000,
                // One pass a key per window: no window is crowded.
                entries: 0,
                largest_entries: (0, 0, ""),
                // 101 time-series buckets of 80 bytes.
                limiters: (64 << 10) + 101 * 80,
                decision_log: 0,
                recordings: 0,
            }
        );
        assert_eq!(e.memory_bytes(), 8_629_834);
        assert!(e.to_string().ends_with(", memory: ≈8 MiB"), "{e}");
        assert!(e.state_warning().is_none());
        // The decision log adds a 68 KiB buffer a limiter.
        let logged = Estimate::of_run(&s, true);
        assert_eq!(logged.memory_bytes(), 8_629_834 + 69_632);
        // Refused on a machine with less memory available than that.
        assert!(e.over_memory(9 << 20).is_none());
        let why = e.over_memory(4 << 20).unwrap();
        assert!(
            why.starts_with(
                "this run would take ≈8 MiB of memory (≈1 MiB of it for per-key tables"
            ) && why.contains("more than the 4 MiB available")
                && why.ends_with("or pass --no-budget"),
            "{why}"
        );
    }

    #[test]
    fn a_client_that_reads_the_fields_may_hold_every_request() {
        let plain = format!(
            "{HEAD}[[limiter]]\nalgorithm = \"token_bucket\"\n\
             [[traffic]]\npattern = \"poisson\"\nclients = 1000\nrate = \"1/1s\"\n"
        );
        let reading = |retry: &str| {
            let text = format!("{plain}retry = {{ policy = \"ratelimit_headers\"{retry} }}\n");
            Estimate::of(&scenario(&text)).memory
        };
        let plain = Estimate::of(&scenario(&plain)).memory;
        // Its 10^4 requests: 8 bytes each when it never retries…
        let once = reading(", max_attempts = 1");
        assert_eq!(once.entries, plain.entries + 10_000 * 8);
        assert_eq!(once.largest_entries, (80_000, 0, memory::HELD_REQUESTS));
        // …18 when a held request may be a retry (the policy retries a
        // rejection: up to 5 attempts), besides a retry waiting per client.
        let retrying = reading("");
        let retries = 1000 * memory::WAITING_RETRY;
        assert_eq!(retrying.entries, plain.entries + retries + 10_000 * 18);
        assert_eq!(
            retrying.largest_entries,
            (180_000, 0, memory::HELD_REQUESTS)
        );
    }

    #[test]
    fn instances_shadows_and_many_keys_multiply_the_tables() {
        // Four local instances each keep every key; a limiter keyed by ip
        // keeps a per-client shadow besides its keys.
        let s = scenario(&format!(
            "{HEAD}[[limiter]]\nalgorithm = \"gcra\"\ndeployment = {{ instances = 4 }}\n\
             [[limiter]]\nname = \"by-ip\"\nalgorithm = \"gcra\"\nkey_by = \"ip\"\n\
             [[traffic]]\npattern = \"nat\"\nusers = 100\nips = 10\nrate = \"1/1s\"\n"
        ));
        // Ip ids: the users' numbered run (100), then the 10 addresses.
        assert_eq!(Estimate::of(&s).memory.key_rows, 4 * 100 + 110 + 100);
        // 10^7 clients: about 1.2 GB, above the warning.
        let big = scenario(&format!(
            "{HEAD}[[limiter]]\nalgorithm = \"token_bucket\"\n\
             [[traffic]]\npattern = \"poisson\"\nclients = 10000000\nrate = \"1/1s\"\n"
        ));
        let e = Estimate::of(&big);
        assert_eq!(mib(e.memory_bytes()), 1160);
        let w = e.state_warning().unwrap();
        assert!(
            w.starts_with(
                "the run could take ≈1160 MiB of memory (≈923 MiB of it for per-key tables"
            ) && w.contains("each of 1.0e7 keys"),
            "{w}"
        );
    }

    #[test]
    fn the_largest_accepted_values_saturate_instead_of_overflowing() {
        // 10^18 ns, 10^7 clients per source at the largest rates, counts of
        // 10^12: the products pass u128, and nothing may overflow (a debug
        // build would panic).
        let s = scenario(
            "duration = \"1000000000s\"\n[defaults]\nlimit = 1000000000000\nwindow = \"1ns\"\n\
             [output]\nresolution = \"1000000s\"\n\
             [[limiter]]\nalgorithm = \"sliding_log\"\ncount_rejected = true\nwindow = \"1000000000s\"\n\
             [[limiter]]\nalgorithm = \"leaky_bucket\"\nqueue = 1000000000000\nrate = \"1/1000000000s\"\n\
             deployment = { instances = 10000 }\n\
             [[traffic]]\npattern = \"steady\"\nclients = 10000000\nrate = \"1/1ns\"\n\
             [[traffic]]\npattern = \"bursty\"\nform = \"periodic\"\nclients = 10000000\n\
             burst = 1000000000000\nperiod = \"1ns\"\n\
             [[traffic]]\npattern = \"boundary\"\nclients = 10000000\nburst = 1000000000000\n\
             [traffic.retry]\npolicy = \"immediate\"\nmax_attempts = 1000\n",
        );
        let e = Estimate::of(&s);
        assert!(e.over_budget().is_some());
        assert!(e.state_warning().is_some());
        assert!(e.over_memory(u64::MAX).is_some());
        assert!(e.to_string().contains("memory: ≈"), "{e}");
    }

    #[test]
    fn available_memory_is_read_from_meminfo() {
        let meminfo = "MemTotal:       24576000 kB\nMemFree:        20000000 kB\n\
                       MemAvailable:   22528000 kB\nBuffers:          100 kB\n";
        assert_eq!(mem_available(meminfo), Some(22_528_000 * 1024));
        assert_eq!(mem_available("MemTotal: 1 kB\n"), None);
        assert_eq!(mem_available("MemAvailable: lots kB\n"), None);
        // On Linux this machine's own figure is there.
        #[cfg(target_os = "linux")]
        assert!(available_memory().is_some_and(|b| b > 0));
    }

    #[test]
    fn counts_and_bytes_read_well() {
        assert_eq!(count(999_999), "999999");
        assert_eq!(count(12_345_678), "1.2e7");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(3 << 30), "3072 MiB");
        assert_eq!(bytes(30 << 30), "30 GiB");
        assert_eq!(mib((3 << 20) + (1 << 19)), 4);
        assert_eq!(mib((3 << 20) + (1 << 19) - 1), 3);
    }
}
