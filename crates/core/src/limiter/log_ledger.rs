//! The state-memory accounting of the sliding log, whose keys hold items
//! (its entries): the same result to the byte·ns as [`Ledger`]'s, without
//! taking each entry's expiry in time order.
//!
//! A log's key is alive exactly while it holds an entry: it is fresh from
//! its newest entry's expiry on, and a decision adds at most one entry and
//! drops none before its expiry. Its bytes are `size(n, high)` for its `n`
//! live entries, `high` the most since it was last fresh — affine in `n`
//! in each of two classes: `high` at most [`ZSET_LISTPACK_MAX_ENTRIES`]
//! ("small") or more ("large", a Redis skiplist; a key's class changes
//! only at a write — to small again only when it has died, or when a
//! read-then-write's write replaces its whole state). So the bytes
//! held at `t` are, per figure, a weight times the count alive at `t` of
//! each of four kinds of moment:
//! - each live entry's expiry, in its key's class (compact: 8 bytes; Redis:
//!   40 small, 117 large);
//! - each alive key's fresh moment, in its class (compact: none; Redis:
//!   80 small, 3 625 large).
//!
//! Each kind is a [`Deaths`] multiset that counts how many of its moments
//! have come by the present, as for [`FixedLedger`]. An entry or key that
//! changes class leaves one kind at that moment and enters the other; the
//! integral is the sum over all moments of `(end − start)`, kept as sums.
//! The totals can only rise at a write, when they are counted: first the
//! bound that moments of buckets passed gives, exactly only when that
//! bound could set a new peak.
//!
//! A key partition's journal needs the changes in time order: for it the
//! sliding log keeps the general [`Ledger`] (see `Books`).
//!
//! [`Ledger`]: super::Ledger
//! [`FixedLedger`]: super::fixed_ledger::FixedLedger
//! [`ZSET_LISTPACK_MAX_ENTRIES`]: super::redis_bytes::ZSET_LISTPACK_MAX_ENTRIES

use super::deaths::Deaths;
use super::redis_bytes as redis;
use super::state_bytes;
use super::{Bits, Footprint, Ledger};

/// Small or large (see the module documentation), as an index.
const SMALL: usize = 0;
const LARGE: usize = 1;

/// The bytes per live entry and per alive key, by class, compact and Redis.
const ENTRY_BYTES: [[u64; 2]; 2] = [
    [state_bytes::SLIDING_LOG_PER_ENTRY; 2],
    [
        redis::ZSET_LISTPACK_PER_ENTRY,
        redis::ZSET_SKIPLIST_PER_ENTRY,
    ],
];
const KEY_BYTES: [[u64; 2]; 2] = [
    [0; 2],
    [redis::ZSET_LISTPACK_BASE, redis::ZSET_SKIPLIST_BASE],
];

/// The class of a key that has held `high` entries at most.
fn class(high: u64) -> usize {
    usize::from(high > redis::ZSET_LISTPACK_MAX_ENTRIES)
}

/// The bytes under figure `f` (0 compact, 1 Redis) of `counts[kind][class]`
/// entries (kind 0) and keys (kind 1).
fn total(counts: &[[u64; 2]; 2], f: usize) -> u64 {
    (0..2)
        .map(|c| ENTRY_BYTES[f][c] * counts[0][c] + KEY_BYTES[f][c] * counts[1][c])
        .sum()
}

/// One kind of moment: the multiset, and the sums its integral needs.
#[derive(Debug, Clone, Default)]
struct Tally {
    moments: Deaths,
    /// Moments entered less those that left early (come or not).
    held: u64,
    /// Σ of the moments each entered, and Σ of the moments each that left
    /// early left (ns).
    entered: u128,
    left: u128,
}

impl Tally {
    /// One more, until `moment`, from `now`.
    fn enter(&mut self, moment: u64, now: u64) {
        self.moments.add(moment, now);
        self.held += 1;
        self.entered += u128::from(now);
    }

    /// The one until `moment` leaves at `at`.
    fn leave(&mut self, moment: u64, at: u64) {
        self.moments.remove(moment);
        self.held -= 1;
        self.left += u128::from(at);
    }

    /// The one until `old` is now until `new` (`now` is before both).
    fn shift(&mut self, old: u64, new: u64, now: u64) {
        if old != new {
            self.moments.remove(old);
            self.moments.add(new, now);
        }
    }

    /// At least as many as are alive at the present.
    fn bound(&self) -> u64 {
        self.held - self.moments.passed()
    }

    /// How many are alive at `now` (the present moved there).
    fn alive(&mut self, now: u64) -> u64 {
        self.held - self.moments.upto(now)
    }

    /// Σ over all of `(end − start)` (ns), each ending at its moment, when
    /// it left, or at `to`, whichever first; `to` is at least every moment
    /// any entered at. Empties the multiset.
    fn integral(&mut self, to: u64) -> u128 {
        let (dead, died) = self.moments.upto_with_sum(to);
        u128::from(self.held - dead) * u128::from(to) + died + self.left - self.entered
    }
}

/// See the module documentation.
#[derive(Debug, Clone, Default)]
pub struct LogLedger {
    now: u64,
    /// Which keys are counted alive (dead ones whose death is not taken
    /// yet among them), and which of those are large.
    alive: Bits,
    large: Bits,
    /// Entries' expiries and keys' fresh moments, by class.
    entries: [Tally; 2],
    keys: [Tally; 2],
    peak_key: [u64; 2],
    peak_total: [u64; 2],
}

impl LogLedger {
    pub fn new() -> LogLedger {
        LogLedger::default()
    }

    /// The general ledger of items under the same sizes — compact 8 bytes
    /// per live entry, Redis a sorted set ([`redis::zset`]) — for a key
    /// partition's journal, which needs the changes in time order.
    pub fn general() -> Ledger {
        Ledger::new(
            |entries, _| entries * state_bytes::SLIDING_LOG_PER_ENTRY,
            redis::zset,
        )
    }

    /// `key` is alive from now, in class `c`, until `fresh`.
    fn begin(&mut self, key: u32, c: usize, fresh: u64) {
        self.keys[c].enter(fresh, self.now);
        self.alive.set(key, true);
        self.large.set(key, c == LARGE);
    }

    /// `key`, alive in class `c` until `fresh`, leaves at `at`.
    fn end(&mut self, key: u32, c: usize, fresh: u64, at: u64) {
        self.keys[c].leave(fresh, at);
        self.alive.set(key, false);
        self.large.set(key, false);
    }

    /// Whether nothing is held and no moment stored (as before the first
    /// decision, when a journal may still be asked for).
    pub fn is_empty(&self) -> bool {
        self.entries
            .iter()
            .chain(&self.keys)
            .all(|t| t.moments.is_empty() && t.held == 0)
    }

    /// How many entries its multisets store (for tests of the memory held).
    #[cfg(test)]
    pub(super) fn stored(&self) -> usize {
        self.entries
            .iter()
            .chain(&self.keys)
            .map(|t| t.moments.stored())
            .sum()
    }

    /// Moves the ledger's clock to `now`.
    pub fn advance(&mut self, now: u64) {
        for tally in self.entries.iter_mut().chain(&mut self.keys) {
            tally.moments.advance(now);
        }
        self.now = self.now.max(now);
    }

    fn class_of(&self, key: u32) -> usize {
        usize::from(self.large.get(key))
    }

    /// Before a decision at the ledger's time on `key`: its fresh moment
    /// (`fresh()`, read from its state) if it is alive, else `None`. A key
    /// counted alive whose fresh moment has come died then (its entries
    /// before it): its death is taken now.
    pub fn alive_until(&mut self, key: u32, fresh: impl FnOnce() -> u64) -> Option<u64> {
        if !self.alive.get(key) {
            return None;
        }
        let fresh = fresh();
        if fresh <= self.now {
            self.end(key, self.class_of(key), fresh, fresh);
            return None;
        }
        Some(fresh)
    }

    /// After a decision at the ledger's time on `key` (alive before until
    /// `before`, as [`LogLedger::alive_until`] said): its state is fresh
    /// from `fresh` on and holds `count` live entries, `added` the expiry
    /// of one it added. `entries()` are the expiries of its live entries,
    /// asked only when the key turns large. A decision drops no entry
    /// before its expiry, so `fresh` is not before `before`.
    pub fn hold<I: Iterator<Item = u64>>(
        &mut self,
        key: u32,
        before: Option<u64>,
        fresh: u64,
        added: Option<u64>,
        count: u64,
        entries: impl FnOnce() -> I,
    ) {
        let now = self.now;
        match before {
            Some(before) => {
                debug_assert!(fresh >= before, "a decision dropped an entry early");
                let c = self.class_of(key);
                if let Some(e) = added {
                    self.entries[c].enter(e, now);
                }
                if c == SMALL && class(count) == LARGE {
                    for e in entries().filter(|&e| e > now) {
                        self.entries[SMALL].leave(e, now);
                        self.entries[LARGE].enter(e, now);
                    }
                    self.end(key, SMALL, before, now);
                    self.begin(key, LARGE, fresh);
                } else {
                    self.keys[c].shift(before, fresh, now);
                }
            }
            None if fresh <= now => return,
            None => {
                debug_assert_eq!(
                    count,
                    u64::from(added.is_some()),
                    "a new key holds its entry"
                );
                self.born(key, fresh, count, added.into_iter());
            }
        }
        if added.is_some() {
            self.grew(key, count);
        }
    }

    /// A write replaces `key`'s whole state at the ledger's time: the
    /// entries `old` of the state it had (alive until `before`, as
    /// [`LogLedger::alive_until`] said) leave now. (Then
    /// [`LogLedger::replace_in`].)
    pub fn replace_out(&mut self, key: u32, before: Option<u64>, old: impl Iterator<Item = u64>) {
        let Some(before) = before else {
            return;
        };
        let (now, c) = (self.now, self.class_of(key));
        for e in old.filter(|&e| e > now) {
            self.entries[c].leave(e, now);
        }
        self.end(key, c, before, now);
    }

    /// The state written by a replacement (after [`LogLedger::replace_out`]),
    /// fresh from `fresh` on, with entries expiring at `new`: held from now
    /// as a new key's.
    pub fn replace_in(&mut self, key: u32, fresh: u64, new: impl Iterator<Item = u64> + Clone) {
        let now = self.now;
        if fresh <= now {
            return;
        }
        let live = new.filter(|&e| e > now);
        let count = live.clone().count() as u64;
        self.born(key, fresh, count, live);
        self.grew(key, count);
    }

    /// `key`, dead before, is alive from now until `fresh`, holding the
    /// `count` live entries expiring at `live`.
    fn born(&mut self, key: u32, fresh: u64, count: u64, live: impl Iterator<Item = u64>) {
        let c = class(count);
        self.begin(key, c, fresh);
        for e in live {
            self.entries[c].enter(e, self.now);
        }
    }

    /// `key`, alive with `count` live entries, grew: the peaks follow.
    fn grew(&mut self, key: u32, count: u64) {
        let c = self.class_of(key);
        for f in 0..2 {
            let bytes = KEY_BYTES[f][c] + ENTRY_BYTES[f][c] * count;
            self.peak_key[f] = self.peak_key[f].max(bytes);
        }
        let bound = [
            self.entries.each_ref().map(Tally::bound),
            self.keys.each_ref().map(Tally::bound),
        ];
        if (0..2).all(|f| total(&bound, f) <= self.peak_total[f]) {
            return;
        }
        let now = self.now;
        let alive = [
            self.entries.each_mut().map(|t| t.alive(now)),
            self.keys.each_mut().map(|t| t.alive(now)),
        ];
        for f in 0..2 {
            self.peak_total[f] = self.peak_total[f].max(total(&alive, f));
        }
    }

    /// The footprint of `keys` keys from 0 to `end`, the ledger moved to
    /// `end` (nothing is held after it); closes the ledger.
    pub fn close(&mut self, keys: u64, end: u64) -> Footprint {
        self.advance(end);
        let to = self.now;
        let mut byte_ns = [0u128; 2];
        for c in 0..2 {
            let entries = self.entries[c].integral(to);
            let alive = self.keys[c].integral(to);
            for (f, sum) in byte_ns.iter_mut().enumerate() {
                *sum +=
                    u128::from(ENTRY_BYTES[f][c]) * entries + u128::from(KEY_BYTES[f][c]) * alive;
            }
        }
        Footprint {
            byte_ns: byte_ns[0],
            key_ns: keys as u128 * end as u128,
            peak_bytes: self.peak_key[0],
            peak_total: self.peak_total[0],
            redis_byte_ns: byte_ns[1],
            redis_peak_bytes: self.peak_key[1],
            redis_peak_total: self.peak_total[1],
            span: end,
            keys,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_weights_are_the_sliding_logs_sizes() {
        for high in 1..300u64 {
            for n in 1..=high {
                let c = class(high);
                let compact = KEY_BYTES[0][c] + ENTRY_BYTES[0][c] * n;
                let zset = KEY_BYTES[1][c] + ENTRY_BYTES[1][c] * n;
                assert_eq!(compact, n * state_bytes::SLIDING_LOG_PER_ENTRY);
                assert_eq!(zset, redis::zset(n, high), "{n} of {high}");
            }
        }
    }
}
