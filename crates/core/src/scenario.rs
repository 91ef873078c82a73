//! A validated scenario: what the engine runs, with every value already
//! checked and typed — [`Nanos`], [`Rate`], counts known to be positive —
//! so the engine never sees a string or an option it would have to check
//! again. Reading one from TOML is the input layer's job.

use std::path::{Path, PathBuf};

use crate::clock::{Nanos, Rate};
use crate::deploy::Deployment;
use crate::limiter::chain::ChainMode;
use crate::limiter::Algorithm;
use crate::population::Population;
use crate::traffic::retry::Retry;
use crate::traffic::Pattern;

/// The policy every limiter derives its defaults from, and that
/// `peak_in_window` is held against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Defaults {
    pub limit: u64,
    pub window: Nanos,
}

#[derive(Debug, Clone)]
pub struct OutputSpec {
    /// `[output] dir`, if given (the CLI's `--out` wins over it).
    pub dir: Option<PathBuf>,
    pub decisions: bool,
    /// `decisions = "headers"`: the decision log's RateLimit header
    /// columns too (docs/semantics.md §11).
    pub headers: bool,
    /// Time-series bucket width.
    pub resolution: Nanos,
}

/// The most time-series buckets an explicit `[output] resolution` may plan
/// over the run (`duration / resolution + 1`). A limiter's series holds at
/// most twice its planned buckets (the second half for passes after the
/// end: a shaper's releases, a store's late answers), so with
/// [`crate::metrics::SeriesBucket`]'s 80 bytes a series never takes more than
/// 16 MB, whatever the duration.
pub const MAX_BUCKETS: u64 = 100_000;

/// The most buckets the default resolution plans (`timeseries.csv` rows
/// per limiter, before late passes): `window / 10` when that fits, else
/// the smallest coarser 1-2-5 multiple of it that does. A series then takes
/// at most 1.6 MB however long the run.
pub const DEFAULT_BUCKETS: u64 = 10_000;

/// A validated scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub seed: u64,
    pub duration: Nanos,
    pub defaults: Defaults,
    /// Whether anything takes a value from `[defaults] limit`: a limiter's
    /// parameter or policy, a fallback's, or a traffic source's
    /// (docs/semantics.md §9: a sweep of it is refused when nothing does).
    pub reads_default_limit: bool,
    pub limiters: Vec<LimiterSpec>,
    pub traffic: Vec<Source>,
    pub output: OutputSpec,
    /// `[backend]`: the servers behind every limiter (docs/semantics.md
    /// §10); each limiter's run has its own, fed what that limiter passes.
    pub backend: Option<BackendSpec>,
    pub population: Population,
    /// The scenario file and every file it reads (traces, access logs):
    /// what a run directory may never hold (see the staging of a run directory). Empty
    /// for a built-in scenario, whose files are inside the binary.
    pub inputs: Vec<PathBuf>,
    /// `--keys K/N`: only the keys of that partition, by that field
    /// (docs/semantics.md §12); none for the whole run.
    pub partition: Option<Partition>,
}

/// Partition `k` (from 1) of `n` of a run's keys, the keys being those of
/// the field `by` (docs/semantics.md §12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    pub k: u64,
    pub n: u64,
    pub by: KeyBy,
}

/// One `[[traffic]]` source: what it sends and how its clients retry.
#[derive(Debug, Clone)]
pub struct Source {
    /// `name`, by default the pattern (with its index if several share it).
    pub name: String,
    pub pattern: Pattern,
    pub retry: Retry,
    /// The sources a trace splits into by `source = "FIELD"`
    /// (docs/semantics.md §3), named, in the order of their part numbers
    /// (see [`crate::traffic::Stream::next_in_part`]); empty when it is one
    /// source, named `name`.
    pub parts: Vec<String>,
}

impl Source {
    /// The names of the sources it is: its parts, else itself.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        let own = self.parts.is_empty().then_some(self.name.as_str());
        own.into_iter().chain(self.parts.iter().map(String::as_str))
    }

    /// How many sources it is (at least 1).
    pub fn count(&self) -> usize {
        self.parts.len().max(1)
    }
}

impl Scenario {
    /// Every source of the scenario, each with the index of the
    /// `[[traffic]]` it comes from: each `[[traffic]]` in order, a split
    /// trace as its parts. A source's position here is its id, which
    /// every arrival carries, and the order of `sources.csv`'s rows
    /// (docs/semantics.md §3).
    pub fn sources(&self) -> impl Iterator<Item = (usize, &str)> {
        self.traffic
            .iter()
            .enumerate()
            .flat_map(|(t, s)| s.names().map(move |n| (t, n)))
    }

    /// The names of [`Scenario::sources`], in order.
    pub fn source_names(&self) -> Vec<String> {
        self.sources().map(|(_, n)| n.to_string()).collect()
    }

    /// The id of each `[[traffic]]`'s first source (see
    /// [`Scenario::sources`]); its others follow it.
    pub fn first_sources(&self) -> Vec<u32> {
        let mut next = 0u32;
        self.traffic
            .iter()
            .map(|s| {
                let first = next;
                next += s.count() as u32;
                first
            })
            .collect()
    }

    /// The run directory when the CLI gives none: `[output] dir`, else
    /// `output/<name>`.
    pub fn default_out_dir(&self) -> PathBuf {
        self.output
            .dir
            .clone()
            .unwrap_or_else(|| Path::new("output").join(&self.name))
    }
}

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

#[derive(Debug, Clone)]
pub struct LimiterSpec {
    pub name: String,
    /// The named implementation it was given as (`implementation = "..."`).
    pub implementation: Option<&'static str>,
    pub key_by: KeyBy,
    pub algorithm: Algorithm,
    /// Indices of the `[[traffic]]` sources this limiter sees (all by default).
    pub traffic: Vec<usize>,
    /// Where its state lives: one instance, many, or a shared store.
    pub deployment: Deployment,
    /// The policy `peak_in_window` is held against (docs/semantics.md §3).
    pub policy: LimitPolicy,
    /// Whether any of its parameters (or its fallback's) came from
    /// `[defaults] limit`: a sweep of `defaults.limit` that no limiter
    /// reads is refused (docs/semantics.md §9).
    pub reads_default_limit: bool,
    /// Set when this entry is a `[[chain]]` (docs/semantics.md §13): its
    /// mode and members. A chain's `algorithm` is its first member's and
    /// is never built; [`LimiterSpec::algorithm_name`] is `"chain"`.
    pub chain: Option<ChainSpec>,
    /// For a chain's member: the index of its chain in
    /// [`Scenario::limiters`]. A member decides only inside its chain.
    pub member_of: Option<usize>,
}

impl LimiterSpec {
    /// The `q` and `w` of its RateLimit-Policy field (docs/semantics.md
    /// §11): a window algorithm's own `limit` and `window`; a quota's
    /// `limit` per its period (no `w` for a month, which has no one
    /// length); a cap on requests in flight or waiting, that cap, with no
    /// window; any other limiter's (a chain's too) policy limit per
    /// `[defaults] window`.
    pub fn header_policy(&self, defaults: &Defaults) -> (u64, Option<Nanos>) {
        use crate::limiter::quota::{self, Period};
        use crate::limiter::{fixed_window, sliding_counter, sliding_log};
        const DAY: u64 = 86_400 * crate::clock::NANOS_PER_SEC;
        match self.algorithm {
            _ if self.chain.is_some() => (self.policy.limit, Some(defaults.window)),
            Algorithm::FixedWindow(fixed_window::Config { limit, window, .. })
            | Algorithm::SlidingLog(sliding_log::Config { limit, window, .. })
            | Algorithm::SlidingCounter(sliding_counter::Config { limit, window, .. }) => {
                (limit, Some(window))
            }
            Algorithm::Quota(quota::Config { limit, period, .. }) => match period {
                Period::Day => (limit, Some(Nanos(DAY))),
                Period::Week => (limit, Some(Nanos(7 * DAY))),
                Period::Month => (limit, None),
            },
            Algorithm::Concurrency { max_in_flight } => (max_in_flight, None),
            Algorithm::QueueLength { max_queue } => (max_queue, None),
            Algorithm::Adaptive(_) => (self.policy.limit, None),
            _ => (self.policy.limit, Some(defaults.window)),
        }
    }
}

/// What makes a [`LimiterSpec`] a chain: how its members decide together,
/// and which they are (indices into [`Scenario::limiters`], in the order
/// they are asked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainSpec {
    pub mode: ChainMode,
    pub members: Vec<usize>,
}

impl LimiterSpec {
    /// `summary.csv`'s `algorithm`: the algorithm's name, or `"chain"`.
    pub fn algorithm_name(&self) -> &'static str {
        match self.chain {
            Some(_) => "chain",
            None => self.algorithm.name(),
        }
    }

    /// The entry of a chain `name` of `members` (indices into `limiters`,
    /// each validated, none in another chain): it sees every source a
    /// member sees, is keyed by each request's client, and its policy is
    /// the largest of its members' (docs/semantics.md §13: no key passes
    /// more than the loosest layer asked about it allows); it runs on its
    /// members' (local) deployment, which they share.
    pub fn chain(
        name: String,
        mode: ChainMode,
        members: Vec<usize>,
        limiters: &[LimiterSpec],
    ) -> LimiterSpec {
        let first = &limiters[members[0]];
        let mut traffic: Vec<usize> = members
            .iter()
            .flat_map(|&m| limiters[m].traffic.iter().copied())
            .collect();
        traffic.sort_unstable();
        traffic.dedup();
        let policy = members
            .iter()
            .map(|&m| limiters[m].policy)
            .max_by_key(|p| p.limit)
            .expect("a chain has members");
        LimiterSpec {
            name,
            implementation: None,
            key_by: KeyBy::Client,
            algorithm: first.algorithm,
            traffic,
            // Its members' deployment: each instance asks its own copies.
            deployment: first.deployment.clone(),
            policy,
            reads_default_limit: false,
            chain: Some(ChainSpec { mode, members }),
            member_of: None,
        }
    }
}

/// A limiter's policy: the most one key may pass per `[defaults] window`,
/// which `peak_in_window` (measured over that window) is held against
/// (docs/semantics.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitPolicy {
    /// Its own `limit`; or its own rate (`rate`, or an interval bucket's
    /// `tokens_per_fill` per `fill_interval`) × `[defaults] window`,
    /// rounded up to a whole count; else `[defaults] limit`.
    pub limit: u64,
    /// The field of its own that sets the policy (`limit`, `rate`,
    /// `tokens_per_fill`), or `None` when it is `[defaults]`'s.
    pub own: Option<&'static str>,
}

impl LimitPolicy {
    /// A policy of `rate` (its own, set by `field`), per `[defaults] window`:
    /// rounded up, the most a perfectly even stream at that rate passes
    /// within one window (`(s − W, s]` holds ⌈rate·W⌉ of its passes).
    pub fn of_rate(rate: Rate, d: &Defaults, field: &'static str) -> LimitPolicy {
        let per_window = crate::clock::div_ceil(rate.tokens() * d.window.0 as u128, rate.per_ns());
        LimitPolicy {
            limit: per_window.clamp(1, u64::MAX as u128) as u64,
            own: Some(field),
        }
    }

    /// A policy of its own `limit` per window.
    pub fn of_limit(limit: u64) -> LimitPolicy {
        LimitPolicy {
            limit,
            own: Some("limit"),
        }
    }
}

/// The time-series bucket width when `[output] resolution` is not given:
/// a tenth of the window, unless that would plan more than
/// [`DEFAULT_BUCKETS`] buckets over `duration`; then the smallest multiple
/// `m × window/10`, `m` in 1, 2, 5, 10, 20, 50, …, that plans at most that
/// many. So the series of a long run is coarser, never longer.
pub fn default_resolution(window: Nanos, duration: Nanos) -> Nanos {
    let base = (window.0 / 10).max(1) as u128;
    let fits = |r: u128| duration.0 as u128 / r < DEFAULT_BUCKETS as u128;
    let mut decade = 1u128;
    loop {
        for m in [1, 2, 5] {
            let r = base * m * decade;
            if fits(r) {
                return Nanos(r.min(u64::MAX as u128) as u64);
            }
        }
        decade *= 10;
    }
}

/// Buckets a series plans over `duration`: one per `resolution` from 0,
/// and one more for the instant `duration` itself.
pub fn planned_buckets(resolution: Nanos, duration: Nanos) -> u64 {
    duration.0 / resolution.0.max(1) + 1
}

/// How long a service takes, before any slowdown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Service {
    /// Exponential with this mean.
    Exp(Nanos),
    Const(Nanos),
    /// Uniform over `[low, high]`, in whole ns.
    Uniform(Nanos, Nanos),
    /// Log-normal with this median and `sigma` (of the underlying normal).
    LogNormal(Nanos, f64),
}

/// Service times × `num / den` for services that start in `[from, until)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slowdown {
    pub from: Nanos,
    pub until: Nanos,
    pub num: u64,
    pub den: u64,
}

/// `[backend]`, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendSpec {
    pub workers: u32,
    pub service: Service,
    /// Waiting room; `None`: unbounded.
    pub queue: Option<u64>,
    pub slowdowns: Vec<Slowdown>,
}
