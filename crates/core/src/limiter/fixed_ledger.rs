//! The state-memory accounting of the rules whose state per key is a fixed
//! size (every rule but the one that holds items: the sliding log, whose
//! bytes follow its entries).
//!
//! It counts what [`Ledger`](super::Ledger) counts — a key is charged its
//! bytes from the decision that makes its state differ from a fresh key's
//! to the moment it is fresh-equivalent again — with the same result to
//! the byte·ns, but it keeps nothing per key beyond a bit: a key's fresh
//! moment is read from its own state (`Rule::fresh_at`), which the
//! decision has just touched, instead of from a table of its own.
//!
//! With every key the same size, the bytes held at `t` are that size times
//! the keys alive at `t`, so:
//! - the integral is `Σ (end of a life − its start)`, kept as the sum of
//!   the moments keys died minus the sum of the moments they were born;
//! - the peak can only rise when a key is born, after every death due by
//!   then has been taken.
//!
//! Deaths are found through a calendar queue of `(moment, key)`, each
//! entry checked against the key's state when it is taken: a key written
//! since may live on, and is queued again at its new fresh moment. Every
//! alive key has a queued entry no later than its fresh moment (a birth
//! queues one, and a decision that brings the fresh moment earlier queues
//! another), so a key whose state is found fresh died at its fresh moment,
//! whichever of its entries finds it and whenever. The buckets that have
//! passed are therefore taken whole, in any order; the present's bucket
//! is taken in time order only when that matters (a birth that may set a
//! new peak, the close, a key partition's journal), and its entries of
//! one moment in any order (`Calendar::ties_in_any_order`: the counts and
//! the journal's changes carry no key); and a key still
//! counted alive whose fresh moment has come is taken when it is next
//! written ([`FixedLedger::alive_until`]).

use super::{Bits, Change, ChangeLog, Footprint};
use crate::calendar::Calendar;
use crate::clock::Nanos;

/// How many entries ahead the ledger asks for their keys' states.
const PREFETCH_AHEAD: usize = 8;

/// Which keys are alive, how many, and the sums of their lives' moments.
#[derive(Debug, Clone, Default)]
struct Lives {
    keys: Bits,
    alive: u64,
    /// Σ birth moments and Σ death moments (ns).
    born: u128,
    died: u128,
}

impl Lives {
    fn begin(&mut self, key: u32, at: u64) {
        self.keys.set(key, true);
        self.alive += 1;
        self.born += at as u128;
    }

    fn end(&mut self, key: u32, at: u64) {
        self.keys.set(key, false);
        self.alive -= 1;
        self.died += at as u128;
    }
}

/// See the module documentation.
#[derive(Debug, Clone)]
pub struct FixedLedger {
    /// A key's bytes while alive: compact and Redis.
    sizes: [u64; 2],
    lives: Lives,
    /// `(moment, key)`: a key to look at then (see the module docs).
    queue: Calendar<(u64, u32)>,
    /// The keys [`FixedLedger::advance`] finds written since their entry
    /// was queued, queued again once it has taken their bucket (a buffer
    /// kept from call to call).
    later: Vec<(u64, u32)>,
    now: u64,
    peak_alive: u64,
    /// Every birth and death, for a key partition's journal
    /// ([`FixedLedger::keep_changes`]).
    log: ChangeLog,
}

impl FixedLedger {
    /// A ledger whose keys cost `compact` and `redis` bytes while alive.
    pub fn new(compact: u64, redis: u64) -> FixedLedger {
        FixedLedger {
            sizes: [compact, redis],
            lives: Lives::default(),
            // Entries of one moment are taken in any order: what taking
            // them counts does not depend on it.
            queue: Calendar::ties_in_any_order(),
            later: Vec::new(),
            now: 0,
            peak_alive: 0,
            log: ChangeLog::default(),
        }
    }

    /// Keeps every birth and death from now on, for
    /// [`FixedLedger::changes`].
    pub fn keep_changes(&mut self) {
        self.log.keep();
    }

    /// The changes kept since the last call, if they are kept.
    pub fn changes(&mut self) -> Option<&mut Vec<Change>> {
        self.log.changes()
    }

    /// Whether `key` is alive (its state differs from a fresh key's) as the
    /// ledger last saw it.
    fn is_alive(&self, key: u32) -> bool {
        self.lives.keys.get(key)
    }

    /// Moves the ledger's clock to `now`, taking the keys whose fresh
    /// moment (`fresh_at(key)`, read from its state) has come by then;
    /// `prefetch(key)` is asked for the key of the entry a few ahead.
    ///
    /// The entries of the calendar's buckets before `now`'s are taken
    /// whole and unsorted: a key found fresh by then died at its fresh
    /// moment, whatever order its death is found in. Those of `now`'s own
    /// bucket wait until they are needed in order: when a birth may set a
    /// new peak, at the close, or for a key partition's journal, whose
    /// changes are in time order (then every due entry is taken in order).
    /// So a key counted alive may have died by `now`:
    /// [`FixedLedger::alive_until`] asks its state.
    pub fn advance(&mut self, now: Nanos, fresh_at: impl Fn(u32) -> u64, prefetch: impl Fn(u32)) {
        if self.log.is_kept() {
            self.take_due_in_order(now.0, &fresh_at, &prefetch);
        } else {
            self.take_passed_buckets(now.0, &fresh_at, &prefetch);
        }
        self.now = self.now.max(now.0);
    }

    /// Takes the entries of the buckets before `now`'s, in any order (a
    /// block of entries at a time: a key is asked for a few entries ahead).
    fn take_passed_buckets(
        &mut self,
        now: u64,
        fresh_at: impl Fn(u32) -> u64,
        prefetch: impl Fn(u32),
    ) {
        let FixedLedger {
            queue,
            later,
            lives,
            ..
        } = self;
        queue.drain_before(now, |entries| {
            for (i, &(_, key)) in entries.iter().enumerate() {
                if let Some(&(_, next)) = entries.get(i + PREFETCH_AHEAD) {
                    prefetch(next);
                }
                if !lives.keys.get(key) {
                    continue;
                }
                let fresh = fresh_at(key);
                if fresh <= now {
                    // `die`, but for the journal's changes, which are not
                    // kept on this way.
                    lives.end(key, fresh);
                } else {
                    // Written since: it lives on.
                    later.push((fresh, key));
                }
            }
        });
        for e in later.drain(..) {
            queue.push(e);
        }
    }

    /// Takes every entry due by `now`, in time order.
    fn take_due_in_order(
        &mut self,
        now: u64,
        fresh_at: impl Fn(u32) -> u64,
        prefetch: impl Fn(u32),
    ) {
        self.log.advancing = true;
        while let Some((t, key)) = self.queue.peek_due(now) {
            self.queue.pop();
            if let Some(&(_, next)) = self.queue.ahead(PREFETCH_AHEAD) {
                prefetch(next);
            }
            if !self.is_alive(key) {
                continue;
            }
            let fresh = fresh_at(key);
            if fresh > t {
                // Written since: it lives on.
                self.queue.push((fresh, key));
            } else {
                // Every alive key has an entry no later than its fresh
                // moment, and the entries come in order.
                debug_assert_eq!(fresh, t, "key {key} found dead after its fresh moment");
                self.die(key, t);
            }
        }
        self.log.advancing = false;
    }

    fn die(&mut self, key: u32, at: u64) {
        self.lives.end(key, at);
        self.log.note(at, self.sizes, [0; 2]);
    }

    /// Before a decision at the ledger's time on `key`: its fresh moment
    /// (`fresh()`, read from its state) if it is alive, else `None`. A key
    /// counted alive whose fresh moment has come died then: it is taken
    /// now (see [`FixedLedger::advance`]).
    pub fn alive_until(&mut self, key: u32, fresh: impl FnOnce() -> u64) -> Option<u64> {
        if !self.is_alive(key) {
            return None;
        }
        let fresh = fresh();
        if fresh <= self.now {
            self.die(key, fresh);
            return None;
        }
        Some(fresh)
    }

    /// After a decision at the ledger's time wrote `key`: its state is
    /// fresh-equivalent from `fresh_at` on; `before` is when it was before
    /// the decision, for a key that was alive
    /// ([`FixedLedger::alive_until`]). A birth that may set a new peak
    /// first takes every death due by then, in order, reading other keys'
    /// fresh moments with `fresh_of`. (Then [`FixedLedger::compact`].)
    pub fn hold(
        &mut self,
        key: u32,
        before: Option<u64>,
        fresh_at: Nanos,
        fresh_of: impl Fn(u32) -> u64,
    ) {
        let (now, fresh) = (self.now, fresh_at.0);
        match before {
            Some(_) if fresh <= now => self.die(key, now),
            None if fresh <= now => {}
            Some(before) => {
                if fresh < before {
                    self.queue.push((fresh, key));
                }
            }
            None => {
                if self.lives.alive >= self.peak_alive {
                    // Counted alive are also the keys whose deaths in
                    // `now`'s bucket wait: the count is exact once they
                    // are taken.
                    self.take_due_in_order(now, &fresh_of, |_| {});
                }
                self.lives.begin(key, now);
                self.peak_alive = self.peak_alive.max(self.lives.alive);
                self.log.note(now, [0; 2], self.sizes);
                self.queue.push((fresh, key));
            }
        }
    }

    /// Drops the entries that no longer apply (keys dead, and all but one
    /// entry no later than its fresh moment per alive key) once they
    /// outnumber the alive keys, so memory follows keys, not requests.
    /// `fresh_at` reads a key's fresh moment from its state.
    pub fn compact(&mut self, fresh_at: impl Fn(u32) -> u64) {
        if (self.queue.len() as u64) <= 64 + 2 * self.lives.alive {
            return;
        }
        let alive = &self.lives.keys;
        let mut kept = Bits::default();
        self.queue.retain(|&(t, key)| {
            let keep = alive.get(key) && !kept.get(key) && t <= fresh_at(key);
            if keep {
                kept.set(key, true);
            }
            keep
        });
    }

    /// The footprint of `keys` keys from 0 to `end`, the ledger moved to
    /// `end` (nothing is held after it).
    pub fn close(&mut self, keys: u64, end: Nanos, fresh_at: impl Fn(u32) -> u64) -> Footprint {
        self.advance(end, &fresh_at, |_| {});
        // Every death due by the ledger's time, which may be after `end`
        // (then `key_ns` counts to it, as the entries taken so far do).
        self.take_due_in_order(end.0.max(self.now), &fresh_at, |_| {});
        let Lives {
            alive, born, died, ..
        } = self.lives;
        let key_ns = alive as u128 * self.now as u128 + died - born;
        let ever = u64::from(self.peak_alive > 0);
        let [compact, redis] = self.sizes;
        Footprint {
            byte_ns: compact as u128 * key_ns,
            key_ns: keys as u128 * end.0 as u128,
            peak_bytes: compact * ever,
            peak_total: compact * self.peak_alive,
            redis_byte_ns: redis as u128 * key_ns,
            redis_peak_bytes: redis * ever,
            redis_peak_total: redis * self.peak_alive,
            span: end.0,
            keys,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::Ledger;

    /// A run of writes: each `(dt, key, fresh_in)` moves the clock on by
    /// `dt`, then writes `key` with its state fresh `fresh_in` after the
    /// write (0: at once, as a rejection of a fresh key leaves it).
    type Writes = Vec<(u64, u32, u64)>;

    /// The footprint by [`FixedLedger`] and by the general [`Ledger`] of
    /// one run of writes: the general one keeps each key's fresh moment
    /// itself, the fixed one reads it from `fresh` (the keys' "states").
    fn both(writes: &Writes, end: u64) -> (Footprint, Footprint) {
        scaled(writes, end, 1)
    }

    /// [`both`] with every time multiplied by `scale`: at 1 every write
    /// falls in the calendar's first bucket (of 2^20 ns), taken in order;
    /// at 2^14 and more they cross buckets, whose entries are taken whole.
    fn scaled(writes: &Writes, end: u64, scale: u64) -> (Footprint, Footprint) {
        let mut fixed = FixedLedger::new(16, 104);
        let mut general = Ledger::new(|_, _| 16, |_, _| 104);
        let mut fresh = [0u64; 8];
        let mut now = 0;
        for &(dt, key, fresh_in) in writes {
            let fresh_in = fresh_in * scale;
            now += dt * scale;
            fixed.advance(Nanos(now), |k| fresh[k as usize], |_| {});
            general.advance(Nanos(now));
            let before = fixed.alive_until(key, || fresh[key as usize]);
            fresh[key as usize] = now + fresh_in;
            fixed.hold(key, before, Nanos(now + fresh_in), |k| fresh[k as usize]);
            fixed.compact(|k| fresh[k as usize]);
            general.hold(key, Nanos(now + fresh_in), []);
        }
        let end = Nanos(now + end * scale);
        (
            fixed.close(8, end, |k| fresh[k as usize]),
            general.close(8, end),
        )
    }

    #[test]
    fn a_key_counts_from_its_write_to_its_fresh_moment() {
        // Key 0 alive [10, 40) (extended at 20), key 1 [20, 25): 2 at once.
        let (fixed, general) = both(&vec![(10, 0, 20), (10, 0, 20), (0, 1, 5)], 100);
        assert_eq!(fixed, general);
        assert_eq!(fixed.byte_ns, 16 * (30 + 5));
        assert_eq!(fixed.redis_byte_ns, 104 * (30 + 5));
        assert_eq!((fixed.peak_bytes, fixed.peak_total), (16, 32));
    }

    #[test]
    fn a_write_that_brings_the_fresh_moment_earlier_ends_the_key_there() {
        // Fresh at 100, then (at 10) at 30: alive [0, 30); key 1 born at 50
        // finds it gone.
        let (fixed, general) = both(&vec![(0, 0, 100), (10, 0, 20), (40, 1, 10)], 20);
        assert_eq!(fixed, general);
        assert_eq!(fixed.byte_ns, 16 * (30 + 10));
        assert_eq!(fixed.peak_total, 16);
    }

    #[test]
    fn a_far_entry_is_taken_with_its_bucket_mid_run() {
        // Key 0's first fresh moment lies past the ring's horizon (1024
        // buckets of 2^20 ns): it waits in the far heap, and is drained
        // with the buckets when the clock passes it.
        let (fixed, general) = scaled(
            &vec![(0, 0, 1500), (0, 1, 10), (2000, 2, 5), (0, 0, 3)],
            10,
            1 << 20,
        );
        assert_eq!(fixed, general);
        assert_eq!(fixed.peak_total, 32);
    }

    #[test]
    fn a_footprint_before_the_last_write_counts_its_deaths_up_to_it() {
        // Key 0 alive [0, 18), key 1 [0, 100) (written again at 20): the
        // footprint to 15 counts the lives taken by the ledger's time, 20.
        let mut fixed = FixedLedger::new(16, 104);
        let mut general = Ledger::new(|_, _| 16, |_, _| 104);
        let mut fresh = [0u64; 2];
        for (now, key, until) in [(0, 0, 18), (0, 1, 50), (20, 1, 100)] {
            fixed.advance(Nanos(now), |k| fresh[k as usize], |_| {});
            general.advance(Nanos(now));
            let before = fixed.alive_until(key, || fresh[key as usize]);
            fresh[key as usize] = until;
            fixed.hold(key, before, Nanos(until), |k| fresh[k as usize]);
            general.hold(key, Nanos(until), []);
        }
        let fixed = fixed.close(2, Nanos(15), |k| fresh[k as usize]);
        assert_eq!(fixed, general.close(2, Nanos(15)));
        assert_eq!(fixed.byte_ns, 16 * (18 + 20));
    }

    #[test]
    fn a_key_fresh_at_once_is_never_charged() {
        let (fixed, general) = both(&vec![(5, 0, 0), (5, 1, 0)], 10);
        assert_eq!(fixed, general);
        assert_eq!(
            (fixed.byte_ns, fixed.peak_bytes, fixed.peak_total),
            (0, 0, 0)
        );
    }

    proptest::proptest! {
        /// The fixed ledger is the general one for keys of one size: to
        /// the byte·ns and the peaks, whatever the writes.
        #[test]
        fn the_fixed_ledger_counts_as_the_general_one(
            writes in proptest::collection::vec((0u64..50, 0u32..8, 0u64..200), 0..300),
            end in 0u64..300,
        ) {
            let (fixed, general) = both(&writes, end);
            proptest::prop_assert_eq!(fixed, general);
        }

        /// And so it is when the writes cross the calendar's buckets, whose
        /// entries are taken whole and unsorted, a key's death found late.
        #[test]
        fn the_fixed_ledger_counts_as_the_general_one_across_buckets(
            writes in proptest::collection::vec((0u64..50, 0u32..8, 0u64..200), 0..300),
            end in 0u64..300,
            shift in 14u32..24,
        ) {
            let (fixed, general) = scaled(&writes, end, 1 << shift);
            proptest::prop_assert_eq!(fixed, general);
        }
    }
}
