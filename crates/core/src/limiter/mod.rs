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
//! Each file is one algorithm's [`Rule`]: what it does to one key's state,
//! and its module documentation says what it models, when to pick it, who
//! runs it, how its retry-after is computed and when a key is
//! fresh-equivalent. Where the states live is [`Stored`]'s business, once
//! for all of them.
//!
//! Real libraries differ from these textbook rules in small, exact ways;
//! each difference is a knob on the limiter's `Config`, off by default:
//! `fixed_window::Align::FirstHit` (Redis `INCR` + `EXPIRE`, Python
//! `limits`), `sliding_log::BoundaryRule::Inclusive` and
//! `sliding_counter::Weight::Floor` (Python `limits`), and
//! `leaky_bucket::Arithmetic::Nginx` (nginx's whole ms).
//!
//! All arithmetic is integer: rates are exact rationals (see
//! [`crate::clock::Rate`]) and quantities are scaled by the rate's denominator
//! in `u128`, so a bucket refilling at 3 per second holds exactly 1 token after
//! 333 333 333⅓ ns — and not before.

pub mod adaptive;
pub mod algorithm;
pub mod chain;
pub mod concurrency;
mod deaths;
pub mod feedback;
pub mod fixed_ledger;
pub mod fixed_window;
pub mod gcra;
#[cfg(test)]
mod headers_props;
pub mod interval_bucket;
pub mod leaky_bucket;
pub mod log_ledger;
pub mod queue_length;
pub mod quota;
pub mod sliding_counter;
pub mod sliding_log;
pub mod smooth_bursty;
mod store;
pub mod token_bucket;

use crate::calendar::Calendar;
use crate::clock::Nanos;
pub use algorithm::{Algorithm, ALGORITHMS};
pub use fixed_ledger::FixedLedger;
pub use store::{Books, Keyed, Rule, Stored, UNBOUNDED};

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

/// What the draft-ietf-httpapi-ratelimit-headers fields would say of one
/// key right after a decision (docs/semantics.md §11).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Headers {
    /// `r`: the largest cost admitted (passing at once) at that instant, 0
    /// when none is, [`UNBOUNDED`] when any is.
    pub remaining: u64,
    /// Until the key's state is a fresh key's (`t` is this in whole
    /// seconds, rounded up); `u64::MAX` ns when it never is.
    pub reset: Nanos,
}

impl Headers {
    /// A key with nothing to say: every cost admitted, nothing to reset
    /// (what a chain with no member asked reports).
    pub const OPEN: Headers = Headers {
        remaining: UNBOUNDED,
        reset: Nanos(0),
    };

    /// Both limits at once (a chain's members): the smaller remaining,
    /// the later reset (docs/semantics.md §11).
    pub fn and(self, other: Headers) -> Headers {
        Headers {
            remaining: self.remaining.min(other.remaining),
            reset: self.reset.max(other.reset),
        }
    }

    /// `r` as the field writes it for a policy limit of `q`: an unbounded
    /// remaining is written as `q` (docs/semantics.md §11).
    pub fn written_remaining(&self, q: u64) -> u64 {
        if self.remaining == UNBOUNDED {
            q
        } else {
            self.remaining
        }
    }

    /// `t`: the reset in whole seconds, rounded up.
    pub fn reset_s(&self) -> u64 {
        self.reset.0.div_ceil(crate::clock::NANOS_PER_SEC)
    }
}

/// State bytes per key of a compact production implementation, defined here
/// and nowhere else (the README's algorithm table lists the same numbers).
///
/// A key is charged these bytes only while its state differs from a fresh
/// key's (see [`Ledger`]): once it is equivalent to a key never seen, a
/// store may drop it — the moment the Redis scripts' `PEXPIRE` names.
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
    /// One timestamp (8) per live log entry, and nothing per key.
    pub const SLIDING_LOG_PER_ENTRY: u64 = 8;
    /// Window index (4), previous count (4), current count (4).
    pub const SLIDING_COUNTER: u64 = 12;
    /// Guava's stored permits (8) and next-free-ticket time (8).
    pub const SMOOTH_BURSTY: u64 = 16;
    /// A quota's period (8) and the cost used in it (8).
    pub const QUOTA: u64 = 16;
}

/// State bytes per key in a real Redis, as the shipped scripts of `redis/`
/// keep it: measured, not assumed.
///
/// Redis 7.0.15 (jemalloc 5.3.0, Debian 12), `MEMORY USAGE key SAMPLES 0`
/// on a key named `ratesim:client-000042` (21 bytes) with 16-digit
/// microsecond timestamps — the value, the key's name, its robj and dict
/// entry; not the expires-dict entry a `PEXPIRE` adds nor the hash table's
/// bucket arrays (INFO `used_memory` over a million such keys says 56
/// bytes per key more in all: [`HASH_IN_ALL`], [`GCRA_IN_ALL`]; these
/// figures are a floor). `scripts/redis-memory.sh` runs each script and
/// reproduces them.
pub mod redis_bytes {

    /// The Redis the figures below were measured on.
    pub const VERSION: &str = "7.0.15";
    /// A small hash of two or three integer fields — what the token bucket
    /// (`b`, `l`), fixed window (`s`, `c`), sliding counter (`k`, `p`,
    /// `c`) and smooth bursty (`t`, `l`) scripts keep; also the interval
    /// bucket, which has no script.
    pub const HASH: u64 = 104;
    /// GCRA's key: a plain string holding its TAT, which Redis keeps as an
    /// integer when the TAT is a whole microsecond — always, when the
    /// emission interval is (see [`GCRA_FRACTION`] otherwise).
    pub const GCRA: u64 = 72;
    /// GCRA's key when its TAT has a fraction of a microsecond (`"u:f"`,
    /// an embedded string): as many bytes as the hash it replaced.
    pub const GCRA_FRACTION: u64 = 104;
    /// In all, per key — `INFO used_memory` over a million keys, each with
    /// its expiry — for a [`HASH`] key (and a [`GCRA_FRACTION`] one) and
    /// for a [`GCRA`] key.
    pub const HASH_IN_ALL: u64 = 160;
    pub const GCRA_IN_ALL: u64 = 128;
    /// The leaky bucket script's hash (`n` and the waiting slots `q`) with
    /// nothing waiting; each waiting request adds some 30 bytes more, which
    /// the figure leaves out.
    pub const LEAKY_HASH: u64 = 120;
    /// Sorted sets up to this many entries are one listpack
    /// (`zset-max-listpack-entries`); one more and Redis converts the key
    /// to a skiplist and dict, and does not convert back while it lives.
    pub const ZSET_LISTPACK_MAX_ENTRIES: u64 = 128;
    /// Listpack sorted set: `80 + 40·n` bytes for `n` entries, each member
    /// `"<time_us>-<seq>"` (23 bytes) scored by its time (within 8 bytes of
    /// every measurement from 1 to 128 entries).
    pub const ZSET_LISTPACK_BASE: u64 = 80;
    pub const ZSET_LISTPACK_PER_ENTRY: u64 = 40;
    /// Skiplist sorted set: `3625 + 117·n` bytes (least squares over 129 to
    /// 1000 entries; the dict's doublings make the true curve a staircase
    /// around this line: 18 136 bytes at 129 entries, 118 048 at 1000).
    pub const ZSET_SKIPLIST_BASE: u64 = 3625;
    pub const ZSET_SKIPLIST_PER_ENTRY: u64 = 117;

    /// A sorted set holding `entries` entries, whose largest size since it
    /// was created is `high` (which decides its encoding).
    pub fn zset(entries: u64, high: u64) -> u64 {
        if high > ZSET_LISTPACK_MAX_ENTRIES {
            ZSET_SKIPLIST_BASE + ZSET_SKIPLIST_PER_ENTRY * entries
        } else {
            ZSET_LISTPACK_BASE + ZSET_LISTPACK_PER_ENTRY * entries
        }
    }
}

/// How much memory a limiter's state took over a run, exactly, under the
/// compact figures ([`state_bytes`]) and the Redis ones ([`redis_bytes`]).
///
/// Every key is charged only while its state differs from a fresh key's.
/// `byte_ns / key_ns` is the mean bytes per key over **every key seen and
/// the whole run** (multiply by a key population to size a store);
/// `byte_ns / span` is the mean total.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Footprint {
    /// Integral over the run of the bytes held, summed over keys (byte·ns).
    pub byte_ns: u128,
    /// Keys seen × the run's span (key·ns): the per-key mean's denominator.
    pub key_ns: u128,
    /// The most bytes one key held at any moment.
    pub peak_bytes: u64,
    /// The most bytes all keys held together at any moment. (Summed over
    /// the instances of a local deployment: an upper bound there.)
    pub peak_total: u64,
    /// The same three under the Redis figures.
    pub redis_byte_ns: u128,
    pub redis_peak_bytes: u64,
    pub redis_peak_total: u64,
    /// The run's span the means are taken over (ns), from 0 to its end.
    pub span: u64,
    /// Distinct keys seen.
    pub keys: u64,
}

impl Footprint {
    /// Mean bytes per key as an exact fraction `(num, den)`: over every key
    /// seen and the whole run. A run of zero length reports its peak.
    pub fn mean(&self) -> (u128, u128) {
        if self.key_ns == 0 {
            (self.peak_bytes as u128, 1)
        } else {
            (self.byte_ns, self.key_ns)
        }
    }

    /// [`Footprint::mean`] under the Redis figures.
    pub fn redis_mean(&self) -> (u128, u128) {
        if self.key_ns == 0 {
            (self.redis_peak_bytes as u128, 1)
        } else {
            (self.redis_byte_ns, self.key_ns)
        }
    }

    /// Mean bytes of all keys together over the run, exact.
    pub fn total_mean(&self) -> (u128, u128) {
        if self.span == 0 {
            (self.peak_total as u128, 1)
        } else {
            (self.byte_ns, self.span as u128)
        }
    }

    /// The footprint of several instances' stores: integrals and keys add,
    /// the per-key peak is the largest, the total peaks add (an upper bound
    /// on the instant all of them were fullest).
    pub fn combine(self, other: Footprint) -> Footprint {
        Footprint {
            byte_ns: self.byte_ns + other.byte_ns,
            key_ns: self.key_ns + other.key_ns,
            peak_bytes: self.peak_bytes.max(other.peak_bytes),
            peak_total: self.peak_total + other.peak_total,
            redis_byte_ns: self.redis_byte_ns + other.redis_byte_ns,
            redis_peak_bytes: self.redis_peak_bytes.max(other.redis_peak_bytes),
            redis_peak_total: self.redis_peak_total + other.redis_peak_total,
            span: self.span.max(other.span),
            keys: self.keys + other.keys,
        }
    }
}

/// The bytes of one key's state under one figure, given the items it holds
/// now (log entries, window counters) and the most it has held since it last
/// was fresh.
pub(crate) type Size = fn(items: u64, high: u64) -> u64;

/// One key's place in the [`Ledger`]: 16 bytes. (Whether it is alive is
/// a bit beside it; its items, for the rules that have any, are in
/// [`Items`]; its bytes follow from them.)
#[derive(Debug, Clone, Copy)]
struct Mark {
    /// The state is fresh-equivalent from this moment on.
    fresh_at: u64,
    /// When this key's one pending fresh event fires (`u64::MAX`: none);
    /// always after the ledger's time.
    scheduled: u64,
}

impl Default for Mark {
    fn default() -> Self {
        Mark {
            fresh_at: 0,
            scheduled: u64::MAX,
        }
    }
}

/// The items one key holds now, the most it has held since it was last
/// fresh, and how many times its items were dropped at once (an expiry
/// queued before that no longer applies).
#[derive(Debug, Clone, Copy, Default)]
struct Items {
    now: u64,
    high: u64,
    generation: u32,
}

/// One bit per key, all clear until set: a key's bit is bit `k % 64` of
/// word `k / 64`.
#[derive(Debug, Clone, Default)]
struct Bits(Vec<u64>);

impl Bits {
    fn get(&self, key: u32) -> bool {
        let k = key as usize;
        self.0.get(k / 64).is_some_and(|w| w >> (k % 64) & 1 == 1)
    }

    fn set(&mut self, key: u32, on: bool) {
        let k = key as usize;
        if k / 64 >= self.0.len() {
            if !on {
                return;
            }
            self.0.resize(k / 64 + 1, 0);
        }
        let bit = 1u64 << (k % 64);
        if on {
            self.0[k / 64] |= bit;
        } else {
            self.0[k / 64] &= !bit;
        }
    }
}

/// How many expiries ahead the ledger asks for their keys' marks.
const PREFETCH_AHEAD: usize = 8;

/// A moment a key's pending fresh event fires: `(time, key)`, 16 bytes.
type FreshExpiry = (u64, u32);

/// A moment one item expires: `(time, key, generation)`, 16 bytes.
type ItemExpiry = (u64, u32, u32);

/// The state-memory accounting shared by every limiter: which keys a store
/// must hold at each moment, and what they cost.
///
/// The rule, the same for all algorithms: **a key counts while its state
/// differs from a fresh key's** — from the decision that makes it differ to
/// the moment it becomes equivalent to a key never seen again (every later
/// request would be decided as for a new key). That is when a production
/// store can drop it, and the moment the Redis scripts' `PEXPIRE` names
/// (docs/semantics.md §6). Each limiter tells the ledger, after every
/// decision that writes a key, when that key becomes fresh-equivalent if
/// nothing else arrives, and which items (log entries, window counters) it
/// gained with their expiry; the ledger expires them in time order and
/// integrates the bytes exactly, in byte·ns. Decisions never read it.
#[derive(Debug, Clone)]
pub struct Ledger {
    sizes: [Size; 2],
    marks: Vec<Mark>,
    /// Which keys are alive (counted).
    alive_keys: Bits,
    /// Per key, for a ledger whose keys gain items (none past the last
    /// key that ever held one: those hold none).
    held: Vec<Items>,
    /// Fresh events and item expiries, each in its own calendar queue of
    /// compact entries; [`Ledger::advance`] merges them in the order of
    /// `(time, key, generation, is_item)` (a fresh event's generation
    /// counting as 0).
    fresh_queue: Calendar<FreshExpiry>,
    item_queue: Calendar<ItemExpiry>,
    now: u64,
    alive: u64,
    items: u64,
    total: [u64; 2],
    byte_ns: [u128; 2],
    peak_key: [u64; 2],
    peak_total: [u64; 2],
    /// Every change of the bytes held, for a key partition's journal
    /// ([`Ledger::keep_changes`]).
    log: ChangeLog,
}

/// A change of the bytes one ledger holds, compact and Redis: at a
/// decision (`timed` false: at the event that decided), or when a key or an
/// item expired at `at` (`timed`). A key partition's journal carries them,
/// so that the partitions' totals can be summed moment by moment
/// (docs/semantics.md §12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    pub at: u64,
    pub timed: bool,
    pub bytes: [i64; 2],
}

/// The changes a ledger keeps when asked ([`ChangeLog::keep`]), and
/// whether it is inside its `advance`, where a change is an expiry
/// (timed).
#[derive(Debug, Clone, Default)]
pub(crate) struct ChangeLog {
    kept: Option<Vec<Change>>,
    pub(crate) advancing: bool,
}

impl ChangeLog {
    /// Keeps every change from now on.
    pub(crate) fn keep(&mut self) {
        self.kept.get_or_insert_with(Vec::new);
    }

    /// The changes kept since the caller last emptied them, if kept.
    pub(crate) fn changes(&mut self) -> Option<&mut Vec<Change>> {
        self.kept.as_mut()
    }

    /// The bytes held went from `old` to `new` at `at`.
    pub(crate) fn note(&mut self, at: u64, old: [u64; 2], new: [u64; 2]) {
        if let Some(c) = &mut self.kept {
            if old != new {
                c.push(Change {
                    at,
                    timed: self.advancing,
                    bytes: [0, 1].map(|f| new[f] as i64 - old[f] as i64),
                });
            }
        }
    }
}

impl Ledger {
    /// A ledger whose keys cost `compact(items, high)` and `redis(items,
    /// high)` bytes while alive.
    pub fn new(compact: Size, redis: Size) -> Ledger {
        Ledger {
            sizes: [compact, redis],
            marks: Vec::new(),
            alive_keys: Bits::default(),
            held: Vec::new(),
            fresh_queue: Calendar::new(),
            item_queue: Calendar::new(),
            now: 0,
            alive: 0,
            items: 0,
            total: [0; 2],
            byte_ns: [0; 2],
            peak_key: [0; 2],
            peak_total: [0; 2],
            log: ChangeLog::default(),
        }
    }

    /// Keeps every change of the bytes held from now on, for
    /// [`Ledger::changes`].
    pub fn keep_changes(&mut self) {
        self.log.keep();
    }

    /// The changes kept since the last call, if they are kept.
    pub fn changes(&mut self) -> Option<&mut Vec<Change>> {
        self.log.changes()
    }

    fn integrate_to(&mut self, t: u64) {
        if t <= self.now {
            return;
        }
        let dt = (t - self.now) as u128;
        for f in 0..2 {
            self.byte_ns[f] += self.total[f] as u128 * dt;
        }
        self.now = t;
    }

    /// Moves the ledger's clock to `now`, expiring in order everything that
    /// expires at or before it.
    ///
    /// Each expiry taken asks for the key of the one [`PREFETCH_AHEAD`]
    /// places behind it in its queue, so every expiry's key is on its way
    /// by the time it is taken, however many one call takes.
    pub fn advance(&mut self, now: Nanos) {
        self.log.advancing = true;
        loop {
            // The heads due by `now`, and of them the earlier by `(time,
            // key, generation, is_item)`: at the same time and key a fresh
            // event (generation 0, not an item) comes first.
            let fresh = self.fresh_queue.peek_due(now.0);
            let item = self.item_queue.peek_due(now.0);
            let take_fresh = match (fresh, item) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((tf, kf)), Some((ti, ki, _))) => (tf, kf) <= (ti, ki),
            };
            if take_fresh {
                let (t, key) = fresh.unwrap_or_default();
                self.fresh_queue.pop();
                if let Some(&(_, next)) = self.fresh_queue.ahead(PREFETCH_AHEAD) {
                    self.prefetch(next);
                }
                self.integrate_to(t);
                let m = self.marks[key as usize];
                if m.scheduled == t {
                    if self.is_alive(key) && m.fresh_at > t {
                        // Written again since: the key lives on.
                        self.marks[key as usize].scheduled = m.fresh_at;
                        self.fresh_queue.push((m.fresh_at, key));
                    } else {
                        self.marks[key as usize].scheduled = u64::MAX;
                        self.forget(key);
                    }
                }
            } else {
                let (t, key, generation) = item.unwrap_or_default();
                self.item_queue.pop();
                if let Some(&(_, next, _)) = self.item_queue.ahead(PREFETCH_AHEAD) {
                    self.prefetch(next);
                }
                self.integrate_to(t);
                if self.is_alive(key) && self.items_of(key).generation == generation {
                    let old = self.bytes(key);
                    self.held[key as usize].now -= 1;
                    self.items -= 1;
                    self.resize(key, old);
                }
            }
        }
        self.log.advancing = false;
        self.integrate_to(now.0);
    }

    /// `key`'s items now and at most since it was last fresh.
    fn items_of(&self, key: u32) -> Items {
        self.held.get(key as usize).copied().unwrap_or_default()
    }

    fn is_alive(&self, key: u32) -> bool {
        self.alive_keys.get(key)
    }

    fn set_alive(&mut self, key: u32, alive: bool) {
        self.alive_keys.set(key, alive);
    }

    /// The bytes `key` holds now (none unless alive).
    fn bytes(&self, key: u32) -> [u64; 2] {
        if !self.is_alive(key) {
            return [0; 2];
        }
        let Items { now, high, .. } = self.items_of(key);
        self.sizes.map(|size| size(now, high))
    }

    /// `key` is fresh-equivalent now: it holds nothing.
    fn forget(&mut self, key: u32) {
        if !self.is_alive(key) {
            return;
        }
        let old = self.bytes(key);
        self.alive -= 1;
        self.items -= self.items_of(key).now;
        for (total, old) in self.total.iter_mut().zip(old) {
            *total -= old;
        }
        self.log.note(self.now, old, [0; 2]);
        if let Some(held) = self.held.get_mut(key as usize) {
            *held = Items {
                now: 0,
                high: 0,
                generation: held.generation.wrapping_add(1),
            };
        }
        self.set_alive(key, false);
        // A pending fresh event stays scheduled: a later write of this key
        // reuses it (see `hold`), so rewriting a key does not pile them up.
        let m = &mut self.marks[key as usize];
        m.fresh_at = m.fresh_at.min(self.now);
    }

    /// `key`'s bytes changed from `old`: the totals and peaks follow.
    fn resize(&mut self, key: u32, old: [u64; 2]) {
        let new = self.bytes(key);
        self.log.note(self.now, old, new);
        for f in 0..2 {
            self.total[f] = self.total[f] - old[f] + new[f];
            self.peak_key[f] = self.peak_key[f].max(new[f]);
            self.peak_total[f] = self.peak_total[f].max(self.total[f]);
        }
    }

    /// After a decision at the ledger's time wrote `key`: its state is
    /// fresh-equivalent from `fresh_at` on (if nothing else arrives), and it
    /// gained `items`, given by their expiry times.
    pub fn hold(&mut self, key: u32, fresh_at: Nanos, items: impl IntoIterator<Item = u64>) {
        let i = key as usize;
        if i >= self.marks.len() {
            crate::cache::grow_with(&mut self.marks, i + 1, Mark::default);
        }
        if fresh_at.0 <= self.now {
            self.forget(key);
            self.marks[i].fresh_at = fresh_at.0;
            return;
        }
        let now = self.now;
        let old = self.bytes(key);
        if !self.is_alive(key) {
            self.set_alive(key, true);
            self.alive += 1;
        }
        let m = &mut self.marks[i];
        m.fresh_at = fresh_at.0;
        if fresh_at.0 < m.scheduled {
            m.scheduled = fresh_at.0;
            self.fresh_queue.push((fresh_at.0, key));
        }
        let generation = self.items_of(key).generation;
        for at in items {
            if at > now {
                if i >= self.held.len() {
                    crate::cache::grow_with(&mut self.held, i + 1, Items::default);
                }
                let held = &mut self.held[i];
                held.now += 1;
                held.high = held.high.max(held.now);
                self.items += 1;
                self.item_queue.push((at, key, generation));
            }
        }
        self.resize(key, old);
        self.compact_expiries();
    }

    /// A write replaced `key`'s whole state at the ledger's time: what it
    /// held goes, and the new state is held as by [`Ledger::hold`].
    pub fn replace(&mut self, key: u32, fresh_at: Nanos, items: impl IntoIterator<Item = u64>) {
        if (key as usize) < self.marks.len() {
            self.forget(key);
        }
        self.hold(key, fresh_at, items);
    }

    /// A hint that `key` is held soon (see [`crate::cache`]): its mark and,
    /// for a ledger of items, its items.
    pub fn prefetch(&self, key: u32) {
        crate::cache::prefetch_all(&self.marks, key as usize);
        crate::cache::prefetch(&self.held, key as usize);
    }

    /// From when `key`'s state is declared equivalent to a fresh key's (0
    /// for a key never written).
    pub fn fresh_at(&self, key: u32) -> Nanos {
        Nanos(self.marks.get(key as usize).map_or(0, |m| m.fresh_at))
    }

    /// Drops expiries that no longer apply once they outnumber the live
    /// ones, so memory follows keys and live items, not requests.
    fn compact_expiries(&mut self) {
        let live = self.alive + self.items;
        if (self.queued() as u64) <= 64 + 2 * live {
            return;
        }
        let (marks, alive, held) = (&self.marks, &self.alive_keys, &self.held);
        self.item_queue.retain(|&(_, key, g)| {
            alive.get(key) && held.get(key as usize).is_some_and(|h| h.generation == g)
        });
        self.fresh_queue
            .retain(|&(t, key)| marks[key as usize].scheduled == t);
    }

    /// Expiries queued, live or not.
    fn queued(&self) -> usize {
        self.fresh_queue.len() + self.item_queue.len()
    }

    /// The footprint of `keys` keys from 0 to `end`.
    pub fn footprint(&self, keys: u64, end: Nanos) -> Footprint {
        self.clone().close(keys, end)
    }

    /// [`Ledger::footprint`] without a copy: the ledger is moved to `end`
    /// (the end of the run: nothing is held after it).
    pub fn close(&mut self, keys: u64, end: Nanos) -> Footprint {
        self.advance(end);
        Footprint {
            byte_ns: self.byte_ns[0],
            key_ns: keys as u128 * end.0 as u128,
            peak_bytes: self.peak_key[0],
            peak_total: self.peak_total[0],
            redis_byte_ns: self.byte_ns[1],
            redis_peak_bytes: self.peak_key[1],
            redis_peak_total: self.peak_total[1],
            span: end.0,
            keys,
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

    /// [`Limiter::footprint`] at the end of the run, after which nothing
    /// is decided: without copying the accounting.
    fn close(&mut self, end: Nanos) -> Footprint {
        self.footprint(end)
    }

    /// Keeps every change of the bytes its keys hold from now on, for a
    /// key partition's journal ([`Limiter::changes`]).
    fn keep_changes(&mut self) {}

    /// The changes kept since the caller last emptied them; `None` when
    /// none are kept (or it keeps no state).
    fn changes(&mut self) -> Option<&mut Vec<Change>> {
        None
    }

    /// Takes every expiry due by `now` (as a decision at `now` would
    /// first), so that kept changes are timely; after [`Limiter::close`],
    /// with the end of time, every expiry still to come, so that a journal
    /// holds the whole of each key's life (another partition's run may end
    /// later). Decides nothing.
    fn expire_to(&mut self, _now: Nanos) {}

    /// From when the accounting declares `key`'s stored state equivalent to
    /// a fresh key's (if nothing else arrives): from then on every request
    /// for `key` is decided exactly as for a key never seen. 0 for a key
    /// never written.
    fn fresh_at(&self, key: u32) -> Nanos;

    /// Read-then-write, the read: decides on a copy of `key`'s state at
    /// `now`, leaving the stored state as it was. The copy, as this decision
    /// left it, is kept under the returned ticket for [`Limiter::write_back`]
    /// or [`Limiter::discard`]. This is what an instance that reads a shared
    /// store, decides locally and writes back does — and why two instances
    /// reading the same state both admit.
    fn decide_detached(&mut self, key: u32, now: Nanos, cost: u64) -> (Decision, u32);

    /// How a request of `cost` at `now` would be decided on `key`'s state,
    /// a rejection not counted (a `count_rejected` rule decides as one
    /// that does not); nothing changes. A chain's retry-after asks its
    /// members this (docs/semantics.md §13).
    fn probe(&mut self, key: u32, now: Nanos, cost: u64) -> Decision {
        let (decision, ticket) = self.decide_detached(key, now, cost);
        self.discard(ticket);
        decision
    }

    /// Read-then-write, the write: `key`'s state becomes the copy kept under
    /// `ticket`, whatever happened to it since (last writer wins).
    fn write_back(&mut self, key: u32, ticket: u32, now: Nanos);

    /// Forgets the copy under `ticket` (its write was lost).
    fn discard(&mut self, ticket: u32);

    /// The RateLimit header fields for `key` at `now`, as its stored state
    /// is (a fresh key's when it has none): call it right after deciding.
    fn headers(&self, key: u32, now: Nanos) -> Headers;

    /// [`Limiter::headers`] of the copy kept under `ticket` by
    /// [`Limiter::decide_detached`] (what the instance that decided on it
    /// would send).
    fn detached_headers(&self, key: u32, ticket: u32, now: Nanos) -> Headers;

    /// A hint that `key` is decided soon: start bringing its state into
    /// the cache (see [`crate::cache`]). Changes nothing.
    fn prefetch(&self, _key: u32) {}

    /// Whether it reads the backend ([`feedback`]): the engine then calls
    /// [`Limiter::observe`] before each decision and [`Limiter::respond`]
    /// at each response to a request it passed.
    fn feedback(&self) -> bool {
        false
    }

    /// Before a decision at `now`: the backend's waiting room holds
    /// `waiting` requests.
    fn observe(&mut self, _now: Nanos, _waiting: u64) {}

    /// Requests in flight for `key` (passed, not yet answered), for a
    /// feedback limiter.
    fn in_flight(&self, _key: u32) -> u64 {
        0
    }

    /// At `now`, the response to a request this limiter passed for `key`.
    fn respond(&mut self, _key: u32, _now: Nanos, _sample: Sample) {}

    /// An adaptive limiter's current limit.
    fn current_limit(&self) -> Option<u64> {
        None
    }
}

/// What a response tells a feedback limiter: the request's round trip
/// through the backend (queue wait + service; 0 if dropped), the requests
/// in flight when it passed (itself included, as Netflix's limiters count
/// it), and whether it failed: the backend dropped it, or its client had
/// stopped waiting for it (timed out), which Netflix's limiters hear as a
/// drop (`onDropped`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub rtt: Nanos,
    pub in_flight: u64,
    pub dropped: bool,
}

/// The smallest `d ≥ 1` ns such that `now + d ≥ at`, where `at` is a time
/// scaled by `scale` (`at_scaled / scale` ns, rounded up).
pub(crate) fn wait_until_scaled(now: Nanos, at_scaled: u128, scale: u128) -> Nanos {
    let at = crate::clock::div_ceil(at_scaled, scale);
    span(at.saturating_sub(now.0 as u128).max(1))
}

/// A span in ns that may exceed what `u64` holds (a wait of more than 584
/// years, from extreme but accepted parameters): it saturates at
/// `u64::MAX` instead of wrapping.
pub(crate) fn span(ns: u128) -> Nanos {
    Nanos(u64::try_from(ns).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger() -> Ledger {
        Ledger::new(|items, _| 10 + items, |items, high| 100 * high + items)
    }

    #[test]
    fn a_key_costs_the_ledger_sixteen_bytes() {
        // The README's performance section says so.
        assert_eq!(std::mem::size_of::<Mark>(), 16);
    }

    #[test]
    fn keys_count_from_the_write_to_the_declared_fresh_moment() {
        let mut l = ledger();
        l.advance(Nanos(10));
        l.hold(0, Nanos(30), []);
        l.advance(Nanos(20));
        l.hold(1, Nanos(25), []);
        // 0 alive over [10, 30), 1 over [20, 25): 10 bytes each.
        let f = l.footprint(2, Nanos(100));
        assert_eq!(f.byte_ns, 10 * 20 + 10 * 5);
        assert_eq!((f.peak_bytes, f.peak_total), (10, 20));
        assert_eq!(f.key_ns, 200);
        assert_eq!(l.fresh_at(0), Nanos(30));
    }

    #[test]
    fn a_key_written_again_before_it_is_fresh_lives_on() {
        let mut l = ledger();
        l.hold(0, Nanos(10), []);
        l.advance(Nanos(5));
        l.hold(0, Nanos(40), []);
        l.advance(Nanos(50));
        assert_eq!(l.footprint(1, Nanos(50)).byte_ns, 10 * 40);
        // A write that declares it fresh at once ends it there.
        l.hold(0, Nanos(60), []);
        l.advance(Nanos(55));
        l.hold(0, Nanos(55), []);
        assert_eq!(l.footprint(1, Nanos(100)).byte_ns, 10 * 45);
    }

    #[test]
    fn items_expire_one_by_one_and_a_replacement_drops_them_all() {
        let mut l = ledger();
        l.hold(0, Nanos(30), [10, 30]);
        // [0,10): 2 items, [10,30): 1 item.
        let f = l.footprint(1, Nanos(100));
        assert_eq!(f.byte_ns, 12 * 10 + 11 * 20);
        assert_eq!(f.redis_byte_ns, 202 * 10 + 201 * 20);
        l.advance(Nanos(5));
        l.replace(0, Nanos(8), [8]);
        let f = l.footprint(1, Nanos(100));
        assert_eq!(f.byte_ns, 12 * 5 + 11 * 3);
        // The replaced key's most items since it was fresh restart at 1.
        assert_eq!(f.redis_byte_ns, 202 * 5 + 101 * 3);
    }

    #[test]
    fn stale_expiries_do_not_pile_up() {
        let mut l = ledger();
        for t in 0..10_000u64 {
            l.advance(Nanos(t));
            l.hold((t % 3) as u32, Nanos(t + 1_000 - t % 500), [t + 100]);
            l.replace(3, Nanos(t + 1_000 - t % 700), []);
        }
        assert!(
            l.queued() <= 64 + 2 * (4 + 100 + 1) + 2,
            "{} {} {}",
            l.queued(),
            l.alive,
            l.items
        );
    }
}
