//! Traffic: who sends what, when.
//!
//! A scenario's `[[traffic]]` sources each become one or more [`Stream`]s —
//! usually one per client — that yield [`Arrival`]s in time order. The engine
//! merges them once for every limiter of a run. Each client's random
//! numbers come from its own stream, seeded by `(scenario seed, source
//! index, client index)` with the portable ChaCha8 generator: every limiter
//! faces exactly the same arrivals, on any machine. (A Poisson client needs
//! no stream object: its [`poisson::CompactClock`] is a position in that
//! generator's stream, and its time that of its arrival on the queue.)
//!
//! | file | pattern |
//! |---|---|
//! | [`trace`] | replay a recorded CSV exactly |
//! | [`steady`] | each client at a fixed rate |
//! | [`poisson`] | each client with exponential gaps |
//! | [`boundary`] | bursts just before and just after each window boundary |
//! | [`bursty`] | on/off periods, or periodic bursts |
//! | [`nat`] | many users behind few addresses, some heavy |
//! | [`zipf`] | many keys, Zipf popularity |
//! | [`ramp`] | a rate that changes over the run |
//!
//! How clients react to a rejection is [`retry`], configured per source.

pub mod boundary;
pub mod bursty;
pub mod keystream;
pub mod nat;
pub mod poisson;
pub mod ramp;
pub mod retry;
pub mod steady;
pub mod trace;
pub mod zipf;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::clock::Nanos;
use crate::error::InputError;
use crate::input::fields::Fields;
use crate::input::{Defaults, IdList, Origin, Population};

/// One request reaching the limiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    pub time: Nanos,
    /// Interned client id (see [`Population`]).
    pub client: u32,
    /// Interned address id.
    pub ip: u32,
    pub cost: u64,
}

/// Arrivals of one client (or one trace) in non-decreasing time order.
pub trait Stream: Send {
    fn next(&mut self) -> anyhow::Result<Option<Arrival>>;
}

/// A validated `[[traffic]]` source.
#[derive(Debug, Clone)]
pub enum Pattern {
    Trace(trace::Trace),
    Steady(steady::Steady),
    Poisson(poisson::Poisson),
    Boundary(boundary::Boundary),
    Bursty(bursty::Bursty),
    Nat(nat::Nat),
    Zipf(zipf::Zipf),
    Ramp(ramp::Ramp),
}

/// Every pattern name with a one-line description, for `ratesim list`.
pub const PATTERNS: &[(&str, &str)] = &[
    ("trace", "replay a recorded CSV (time or time_ns, client, ip, cost) exactly, or an access log: format = \"nginx\", \"envoy\", \"jsonl\""),
    ("steady", "`clients` clients, each at a fixed `rate`, with a fixed, spread or random phase"),
    ("poisson", "`clients` clients, each with exponential gaps at `rate` (seeded)"),
    ("boundary", "`burst` requests just before and just after each window boundary"),
    ("bursty", "on/off periods (`on`, `off`, `rate`) or `periodic` bursts of `burst` every `period`"),
    ("nat", "`users` Poisson users behind `ips` addresses, uniform or Zipf, a `heavy_share` at `heavy_rate`"),
    ("zipf", "`keys` clients with Zipf popularity sharing a total `rate`"),
    ("ramp", "each client's rate stepping from `from` to `to` over the run"),
];

/// What a pattern needs while it is parsed.
pub struct ParseCtx<'a> {
    pub defaults: &'a Defaults,
    pub origin: &'a Origin,
    pub population: &'a mut Population,
    /// Position of this source among `[[traffic]]`.
    pub index: usize,
    /// Default prefix for synthetic client names.
    pub default_prefix: String,
    /// Reads a trace source whose `format` is not `"csv"` (an access log):
    /// given by the layer that knows the formats (the scenario parser
    /// passes [`crate::accesslog::AccessLog::read`]), so traffic never
    /// imports the access-log readers that build on it. `None` refuses
    /// every such source.
    pub read_log: Option<trace::ReadLog>,
    /// Set by a pattern that takes a parameter from `[defaults] limit`
    /// (a sweep of `defaults.limit` that nothing reads is refused).
    pub reads_default_limit: bool,
}

/// What a pattern needs to build its streams for one run.
#[derive(Debug, Clone, Copy)]
pub struct StreamCtx {
    pub seed: u64,
    /// Synthetic sources send strictly before `end`; traces up to and including it.
    pub end: Nanos,
}

impl Pattern {
    pub fn parse(name: &str, f: &mut Fields, ctx: &mut ParseCtx) -> Result<Pattern, InputError> {
        Ok(match name {
            "trace" => Pattern::Trace(trace::Trace::parse(f, ctx)?),
            "steady" => Pattern::Steady(steady::Steady::parse(f, ctx)?),
            "poisson" => Pattern::Poisson(poisson::Poisson::parse(f, ctx)?),
            "boundary" => Pattern::Boundary(boundary::Boundary::parse(f, ctx)?),
            "bursty" => Pattern::Bursty(bursty::Bursty::parse(f, ctx)?),
            "nat" => Pattern::Nat(nat::Nat::parse(f, ctx)?),
            "zipf" => Pattern::Zipf(zipf::Zipf::parse(f, ctx)?),
            "ramp" => Pattern::Ramp(ramp::Ramp::parse(f, ctx)?),
            _ => unreachable!("pattern names are checked against PATTERNS"),
        })
    }

    pub fn name(&self) -> &'static str {
        match self {
            Pattern::Trace(_) => "trace",
            Pattern::Steady(_) => "steady",
            Pattern::Poisson(_) => "poisson",
            Pattern::Boundary(_) => "boundary",
            Pattern::Bursty(_) => "bursty",
            Pattern::Nat(_) => "nat",
            Pattern::Zipf(_) => "zipf",
            Pattern::Ramp(_) => "ramp",
        }
    }

    /// The streams of this source for one run.
    pub fn streams(&self, source: usize, ctx: StreamCtx) -> anyhow::Result<Vec<Box<dyn Stream>>> {
        Ok(match self {
            Pattern::Trace(t) => vec![t.open(ctx)?],
            Pattern::Steady(s) => s.streams(source, ctx),
            Pattern::Poisson(p) => p.streams(source, ctx),
            Pattern::Boundary(b) => b.streams(source, ctx),
            Pattern::Bursty(b) => b.streams(source, ctx),
            Pattern::Nat(n) => n.streams(source, ctx),
            Pattern::Zipf(z) => z.streams(source, ctx),
            Pattern::Ramp(r) => r.streams(source, ctx),
        })
    }

    /// The last arrival time, if the source knows it (traces).
    pub fn last_time(&self) -> Option<Nanos> {
        match self {
            Pattern::Trace(t) => Some(t.last_time()),
            _ => None,
        }
    }

    /// Parameters for the scenario echo in `summary.json`.
    pub fn echo(&self) -> serde_json::Value {
        match self {
            Pattern::Trace(t) => t.echo(),
            Pattern::Steady(s) => s.echo(),
            Pattern::Poisson(p) => p.echo(),
            Pattern::Boundary(b) => b.echo(),
            Pattern::Bursty(b) => b.echo(),
            Pattern::Nat(n) => n.echo(),
            Pattern::Zipf(z) => z.echo(),
            Pattern::Ramp(r) => r.echo(),
        }
    }
}

/// The random stream of client `client` of source `source`: independent of
/// every other client's, and identical for every limiter.
pub fn client_rng(seed: u64, source: usize, client: u64) -> ChaCha8Rng {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(&(source as u64).to_le_bytes());
    key[16..24].copy_from_slice(&client.to_le_bytes());
    key[24..].copy_from_slice(b"ratesim\0");
    ChaCha8Rng::from_seed(key)
}

/// The clients of a synthetic source: client `i` is `clients.get(i)`,
/// sending from address `ips.get(i)` — as a rule two numbered runs of
/// ids, not a pair of ids per client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clients {
    clients: IdList,
    ips: IdList,
}

impl Clients {
    pub fn len(&self) -> usize {
        self.clients.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Client `i`'s `(client id, ip id)`, for `i < len`.
    pub fn get(&self, i: usize) -> (u32, u32) {
        (self.clients.get(i), self.ips.get(i))
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = (u32, u32)> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// A hint that client `i` is read soon (see [`crate::cache`]): its ids,
    /// where they are listed.
    pub fn prefetch(&self, i: usize) {
        for ids in [&self.clients, &self.ips] {
            if let IdList::Each(ids) = ids {
                crate::cache::prefetch(ids, i);
            }
        }
    }
}

/// Listed pairs `(client id, ip id)`.
impl From<Vec<(u32, u32)>> for Clients {
    fn from(pairs: Vec<(u32, u32)>) -> Self {
        let (clients, ips) = pairs.into_iter().unzip();
        Clients {
            clients: IdList::Each(clients),
            ips: IdList::Each(ips),
        }
    }
}

/// Names and interns `count` synthetic clients (`{prefix}{i}`); each sends
/// from an address named like itself.
pub fn synthetic_clients(
    f: &mut Fields,
    ctx: &mut ParseCtx,
    count: u64,
    field: &str,
) -> Result<Clients, InputError> {
    let prefix = f
        .opt_str("prefix")?
        .map(str::to_string)
        .unwrap_or_else(|| ctx.default_prefix.clone());
    if count > MAX_CLIENTS {
        return Err(InputError::new(format!(
            "{}: {count} — at most {MAX_CLIENTS} clients per source",
            f.at(field)
        )));
    }
    // Ids are 32-bit: the clients and addresses of all sources together
    // must fit. (`count` itself does: MAX_CLIENTS is below 2^32.)
    let known = ctx.population.clients().max(ctx.population.ips()) as u64;
    if known + count > u32::MAX as u64 {
        return Err(InputError::new(format!(
            "{}: {count} — a scenario has at most {} clients in all ({known} before this source)",
            f.at(field),
            u32::MAX
        )));
    }
    let clients = ctx.population.numbered_clients(&prefix, count as u32);
    let ips = ctx.population.numbered_ips(&prefix, count as u32);
    Ok(Clients { clients, ips })
}

/// Clients one synthetic source may have.
pub const MAX_CLIENTS: u64 = 10_000_000;

/// `cost` of every request of a synthetic source (default 1).
pub fn cost_field(f: &mut Fields) -> Result<u64, InputError> {
    Ok(f.opt_count("cost", 1)?.unwrap_or(1))
}
