//! Rate-limiting algorithms as pure state machines.
//!
//! Every algorithm here answers one question: *a request of `cost` arrives for
//! `key` at `now` — does it pass now, pass later, or not at all?* It is handed
//! the time; it never reads a clock, knows nothing of traffic or output, and
//! keeps independent state per key. A refusal is a value
//! ([`Decision::Rejected`]) carrying the exact `retry_after`: the smallest
//! `d ≥ 1` ns after which the same request, with nothing else arriving, would
//! pass.
//!
//! | file | algorithm | found in the wild |
//! |---|---|---|
//! | [`token_bucket`] | continuous refill, capped | Envoy local rate limit, the textbook bucket |
//! | [`interval_bucket`] | refill in steps on a timer | Envoy's earlier timer bucket |
//! | [`gcra`] | one theoretical arrival time | `governor`, redis-cell |
//! | [`leaky_bucket`] | shaper: queue and delay | nginx `limit_req` |
//! | [`fixed_window`] | counter per aligned window | envoyproxy/ratelimit on Redis |
//! | [`sliding_log`] | log of recent requests | Redis sorted-set limiters |
//! | [`sliding_counter`] | weighted previous + current window | Cloudflare |
//! | [`smooth_bursty`] | balance that may go into debt | Guava `RateLimiter` |
//!
//! Real libraries differ from these textbook rules in small, exact ways;
//! each difference is a knob on the limiter's `Config`, off by default:
//! `fixed_window::Align::FirstHit` (Redis `INCR` + `EXPIRE`, Python
//! `limits`), `sliding_log::Boundary::Inclusive` and
//! `sliding_counter::Weight::Floor` (Python `limits`), and
//! `leaky_bucket::Arithmetic::Nginx` (nginx's whole ms).
//!
//! All arithmetic is integer: rates are exact rationals (see
//! [`crate::clock::Rate`]) and quantities are scaled by the rate's denominator
//! in `u128`, so a bucket refilling at 3 per second holds exactly 1 token after
//! 333 333 333⅓ ns — and not before.

pub mod fixed_window;
pub mod gcra;
pub mod interval_bucket;
pub mod leaky_bucket;
pub mod sliding_counter;
pub mod sliding_log;
pub mod smooth_bursty;
pub mod token_bucket;

use crate::clock::Nanos;

/// What happened to one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Passes now.
    Admitted,
    /// Passes later, `delay` after its arrival (only a shaper delays).
    Delayed { delay: Nanos },
    /// Does not pass. `retry_after` is the smallest wait after which the same
    /// request would pass if nothing else arrived; `None` means never (its
    /// cost exceeds what the limiter can ever hold).
    Rejected { retry_after: Option<Nanos> },
}

impl Decision {
    pub fn passes(self) -> bool {
        !matches!(self, Decision::Rejected { .. })
    }
}

/// State bytes per key of a compact production implementation, defined here
/// and nowhere else (the README's algorithm table lists the same numbers).
pub mod state_bytes {
    /// Balance (8) and last-refill timestamp (8).
    pub const TOKEN_BUCKET: u64 = 16;
    /// Token count (8); fills come from one shared timer, not per-key state.
    pub const INTERVAL_BUCKET: u64 = 8;
    /// The theoretical arrival time (8), nothing else.
    pub const GCRA: u64 = 8;
    /// nginx `limit_req`: excess (8) and last-update time (8).
    pub const LEAKY_BUCKET: u64 = 16;
    /// Window index (4) and counter (4).
    pub const FIXED_WINDOW: u64 = 8;
    /// One timestamp (8) per live log entry.
    pub const SLIDING_LOG_PER_ENTRY: u64 = 8;
    /// Window index (4), previous count (4), current count (4).
    pub const SLIDING_COUNTER: u64 = 12;
    /// Guava's stored permits (8) and next-free-ticket time (8).
    pub const SMOOTH_BURSTY: u64 = 16;
}

/// How much memory a limiter's state took over a run, exactly.
///
/// `byte_ns / key_ns` is the mean state bytes per key over keys and time: each
/// key counts from its first request to the end of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Footprint {
    /// Integral over the run of the bytes held, summed over keys (byte·ns).
    pub byte_ns: u128,
    /// Integral over the run of the number of keys held (key·ns).
    pub key_ns: u128,
    /// The most bytes one key held at any moment.
    pub peak_bytes: u64,
    /// Distinct keys seen.
    pub keys: u64,
}

impl Footprint {
    /// Mean bytes per key as an exact fraction `(num, den)`; a run whose keys
    /// all appeared at its very end reports its peak.
    pub fn mean(&self) -> (u128, u128) {
        if self.key_ns == 0 {
            (self.peak_bytes as u128, 1)
        } else {
            (self.byte_ns, self.key_ns)
        }
    }
}

/// One rate-limiting algorithm with independent state per key.
pub trait Limiter: Send {
    /// Decides an attempt of `cost` for `key` arriving at `now`. Calls come in
    /// non-decreasing `now` order.
    fn decide(&mut self, key: u32, now: Nanos, cost: u64) -> Decision;

    /// The state memory this limiter held from the start until `end`.
    fn footprint(&self, end: Nanos) -> Footprint;

    /// Read-then-write, the read: decides on a copy of `key`'s state at
    /// `now`, leaving the stored state as it was. The copy, as this decision
    /// left it, is kept under the returned ticket for [`Limiter::write_back`]
    /// or [`Limiter::discard`]. This is what an instance that reads a shared
    /// store, decides locally and writes back does — and why two instances
    /// reading the same state both admit.
    fn decide_detached(&mut self, key: u32, now: Nanos, cost: u64) -> (Decision, u32);

    /// Read-then-write, the write: `key`'s state becomes the copy kept under
    /// `ticket`, whatever happened to it since (last writer wins).
    fn write_back(&mut self, key: u32, ticket: u32, now: Nanos);

    /// Forgets the copy under `ticket` (its write was lost).
    fn discard(&mut self, ticket: u32);
}

/// Implements the read-then-write methods of [`Limiter`] for a limiter whose
/// per-key state lives in the [`Keyed`] field `$keys`.
macro_rules! detachable {
    ($keys:ident) => {
        fn decide_detached(
            &mut self,
            key: u32,
            now: $crate::clock::Nanos,
            cost: u64,
        ) -> ($crate::limiter::Decision, u32) {
            let saved = self.$keys.save(key);
            let decision = self.decide(key, now, cost);
            (decision, self.$keys.detach(key, saved, now))
        }

        fn write_back(&mut self, key: u32, ticket: u32, now: $crate::clock::Nanos) {
            self.$keys.attach(key, ticket, now);
        }

        fn discard(&mut self, ticket: u32) {
            self.$keys.discard(ticket);
        }
    };
}
pub(crate) use detachable;

/// Per-key state in a dense table indexed by key id: no hashing and no
/// allocation per request once a key has been seen.
#[derive(Debug, Clone)]
pub struct Keyed<S> {
    states: Vec<Option<S>>,
    keys: u64,
    first_seen_sum: u128,
    /// Copies taken out by read-then-write decisions, by ticket.
    detached: Vec<Option<S>>,
    free: Vec<u32>,
}

impl<S> Default for Keyed<S> {
    fn default() -> Self {
        Keyed {
            states: Vec::new(),
            keys: 0,
            first_seen_sum: 0,
            detached: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<S: Clone> Keyed<S> {
    /// A copy of `key`'s state, if it has one.
    pub fn save(&self, key: u32) -> Option<S> {
        self.states.get(key as usize).cloned().flatten()
    }

    /// Takes the state a decision at `now` just left for `key`, puts `saved`
    /// back in its place, and keeps the taken state under a new ticket.
    pub fn detach(&mut self, key: u32, saved: Option<S>, now: Nanos) -> u32 {
        let slot = &mut self.states[key as usize];
        let computed = slot.take();
        if saved.is_none() {
            // The decision created the key; the store never saw it.
            self.keys -= 1;
            self.first_seen_sum -= now.0 as u128;
        }
        *slot = saved;
        match self.free.pop() {
            Some(t) => {
                self.detached[t as usize] = computed;
                t
            }
            None => {
                self.detached.push(computed);
                (self.detached.len() - 1) as u32
            }
        }
    }

    /// `key`'s state becomes the copy under `ticket` (written at `now`).
    pub fn attach(&mut self, key: u32, ticket: u32, now: Nanos) {
        let computed = self.detached[ticket as usize].take();
        self.free.push(ticket);
        let i = key as usize;
        if i >= self.states.len() {
            self.states.resize_with(i + 1, || None);
        }
        if self.states[i].is_none() && computed.is_some() {
            self.keys += 1;
            self.first_seen_sum += now.0 as u128;
        }
        if computed.is_some() {
            self.states[i] = computed;
        }
    }

    /// The copy kept under `ticket`, if it holds one.
    pub fn detached(&self, ticket: u32) -> Option<&S> {
        self.detached.get(ticket as usize).and_then(Option::as_ref)
    }

    /// `key`'s stored state, if it has one.
    pub fn get(&self, key: u32) -> Option<&S> {
        self.states.get(key as usize).and_then(Option::as_ref)
    }

    pub fn discard(&mut self, ticket: u32) {
        self.detached[ticket as usize] = None;
        self.free.push(ticket);
    }
}

impl<S> Keyed<S> {
    /// The state for `key`, created by `init` on its first request at `now`.
    pub fn entry(&mut self, key: u32, now: Nanos, init: impl FnOnce() -> S) -> &mut S {
        let i = key as usize;
        if i >= self.states.len() {
            self.states.resize_with(i + 1, || None);
        }
        let slot = &mut self.states[i];
        if slot.is_none() {
            self.keys += 1;
            self.first_seen_sum += now.0 as u128;
        }
        slot.get_or_insert_with(init)
    }

    pub fn keys(&self) -> u64 {
        self.keys
    }

    /// Σ over keys of the time from first request to `end` (key·ns).
    pub fn key_ns(&self, end: Nanos) -> u128 {
        (self.keys as u128 * end.0 as u128).saturating_sub(self.first_seen_sum)
    }

    pub fn iter(&self) -> impl Iterator<Item = &S> {
        self.states.iter().flatten()
    }

    /// Footprint of state that is `bytes` per key for the key's whole life.
    pub fn fixed_footprint(&self, bytes: u64, end: Nanos) -> Footprint {
        let key_ns = self.key_ns(end);
        Footprint {
            byte_ns: key_ns * bytes as u128,
            key_ns,
            peak_bytes: if self.keys > 0 { bytes } else { 0 },
            keys: self.keys,
        }
    }
}

/// The smallest `d ≥ 1` ns such that `now + d ≥ at`, where `at` is a time
/// scaled by `scale` (`at_scaled / scale` ns, rounded up).
pub(crate) fn wait_until_scaled(now: Nanos, at_scaled: u128, scale: u128) -> Nanos {
    let at = at_scaled.div_ceil(scale);
    span(at.saturating_sub(now.0 as u128).max(1))
}

/// A span in ns that may exceed what `u64` holds (a wait of more than 584
/// years, from extreme but accepted parameters): it saturates at
/// `u64::MAX` instead of wrapping.
pub(crate) fn span(ns: u128) -> Nanos {
    Nanos(u64::try_from(ns).unwrap_or(u64::MAX))
}
