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
//! | [`Recorded`] | replay a recording (a CSV trace, an access log), read by the input layer |
//! | [`steady`] | each client at a fixed rate |
//! | [`poisson`] | each client with exponential gaps |
//! | [`boundary`] | bursts just before and just after each window boundary |
//! | [`bursty`] | on/off periods, or periodic bursts |
//! | [`nat`] | many users behind few addresses, some heavy |
//! | [`zipf`] | many keys, Zipf popularity |
//! | [`ramp`] | a rate that changes over the run |
//! | [`closed`] | a closed loop: one request out per client, think time between |
//!
//! How clients react to a rejection is [`retry`], configured per source.

pub mod boundary;
pub mod bursty;
pub mod closed;
pub mod keystream;
pub mod nat;
pub mod poisson;
pub mod ramp;
pub mod retry;
pub mod steady;
pub mod zipf;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::clock::Nanos;
use std::sync::Arc;

use crate::population::IdList;

/// One request reaching the limiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    pub time: Nanos,
    /// Interned client id (see [`crate::population::Population`]).
    pub client: u32,
    /// Interned address id.
    pub ip: u32,
    pub cost: u64,
}

/// Arrivals of one client (or one trace) in non-decreasing time order.
pub trait Stream: Send {
    fn next(&mut self) -> anyhow::Result<Option<Arrival>>;

    /// The next arrival and the part of its `[[traffic]]` that sent it:
    /// a trace split by `source = "FIELD"` is one source per part
    /// (docs/semantics.md §3), numbered as [`crate::scenario::Source::parts`]
    /// names them. Every other stream is one part, 0.
    fn next_in_part(&mut self) -> anyhow::Result<Option<(Arrival, u32)>> {
        Ok(self.next()?.map(|a| (a, 0)))
    }

    /// The next arrivals with their parts, as [`Stream::next_in_part`]
    /// gives them, appended to `out` until it holds `max` or the stream
    /// ends (then fewer; none at its end). A recording's stream decodes
    /// them in one loop.
    fn fill_in_part(&mut self, out: &mut Vec<(Arrival, u32)>, max: usize) -> anyhow::Result<()> {
        while out.len() < max {
            match self.next_in_part()? {
                Some(a) => out.push(a),
                None => break,
            }
        }
        Ok(())
    }
}

/// A validated `[[traffic]]` source.
#[derive(Debug, Clone)]
pub enum Pattern {
    Trace(Arc<dyn Recorded>),
    Steady(steady::Steady),
    Poisson(poisson::Poisson),
    Boundary(boundary::Boundary),
    Bursty(bursty::Bursty),
    Nat(nat::Nat),
    Zipf(zipf::Zipf),
    Ramp(ramp::Ramp),
    /// Made per limiter's run, from its answers (see [`closed`]).
    Closed(closed::Closed),
}

/// A recorded source — a CSV trace, an access log — that the input layer
/// read and validated: the engine sees only its arrivals.
pub trait Recorded: std::fmt::Debug + Send + Sync {
    /// The latest arrival, relative to the earliest.
    fn last_time(&self) -> Nanos;
    /// Requests it replays.
    fn rows(&self) -> u64;
    /// Its arrivals, in replay order.
    fn open(&self, ctx: StreamCtx) -> anyhow::Result<Box<dyn Stream>>;
    /// The bytes it holds to replay from, shared by every run of the
    /// process that replays it.
    fn memory_bytes(&self) -> u64 {
        0
    }
    /// For the layer that made it, to see it as what it is.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// What a pattern needs to build its streams for one run.
#[derive(Debug, Clone, Copy)]
pub struct StreamCtx {
    pub seed: u64,
    /// Synthetic sources send strictly before `end`; traces up to and including it.
    pub end: Nanos,
}

impl Pattern {
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
            Pattern::Closed(_) => "closed",
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
            // Each run makes its own (the engine).
            Pattern::Closed(_) => Vec::new(),
        })
    }

    /// The last arrival time, if the source knows it (traces).
    pub fn last_time(&self) -> Option<Nanos> {
        match self {
            Pattern::Trace(t) => Some(t.last_time()),
            _ => None,
        }
    }
}

/// The random stream of client `client` of source `source`: independent of
/// every other client's, and identical for every limiter.
pub(crate) fn client_rng(seed: u64, source: usize, client: u64) -> ChaCha8Rng {
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

impl Clients {
    /// Client `i` is `clients.get(i)`, sending from `ips.get(i)`.
    pub fn new(clients: IdList, ips: IdList) -> Clients {
        Clients { clients, ips }
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
