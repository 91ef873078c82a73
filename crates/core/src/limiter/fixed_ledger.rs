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
//! - the peak can only rise when a key is born, and is then the keys
//!   counted alive less those of them dead by then.
//!
//! A key counted alive whose fresh moment has come died then: its death is
//! taken when it is next written ([`FixedLedger::alive_until`]), or at the
//! close. Until then its fresh moment stays in a multiset of the alive
//! keys' fresh moments ([`Deaths`]) that counts exactly how many have
//! come by the present, for a birth that may set a new peak and for the
//! close — without reading any key's state: a decision costs a bit and an
//! entry or two in a ring of buckets.
//!
//! A key partition's journal needs every death as a change in time order,
//! at its moment: for it the keys are queued instead, `(moment, key)` in a
//! calendar queue, each entry checked against the key's state when taken
//! (a key written since may live on, and is queued again at its new fresh
//! moment). Every alive key has a queued entry no later than its fresh
//! moment (a birth queues one, and a decision that brings the fresh moment
//! earlier queues another), so a key whose state is found fresh died at
//! its fresh moment; entries of one moment are taken in any order
//! (`Calendar::ties_in_any_order`: the counts and the journal's changes
//! carry no key).

use super::deaths::Deaths;
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

/// How the ledger finds the deaths (see the module documentation).
#[derive(Debug, Clone)]
enum Order {
    /// The alive keys' fresh moments, counted.
    Counted(Deaths),
    /// `(moment, key)`: a key to look at then, for a journal.
    Queued(Calendar<(u64, u32)>),
}

/// See the module documentation.
#[derive(Debug, Clone)]
pub struct FixedLedger {
    /// A key's bytes while alive: compact and Redis.
    sizes: [u64; 2],
    lives: Lives,
    order: Order,
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
            order: Order::Counted(Deaths::default()),
            now: 0,
            peak_alive: 0,
            log: ChangeLog::default(),
        }
    }

    /// Keeps every birth and death from now on, for
    /// [`FixedLedger::changes`]: asked before the first decision, it
    /// queues the keys from then on.
    pub fn keep_changes(&mut self) {
        if let Order::Counted(deaths) = &self.order {
            assert!(
                deaths.is_empty(),
                "a ledger keeps its changes from its first decision"
            );
            // Entries of one moment are taken in any order: what taking
            // them counts does not depend on it.
            self.order = Order::Queued(Calendar::ties_in_any_order());
        }
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

    /// Moves the ledger's clock to `now`. Queued for a journal, it takes
    /// every death due by then, in time order, reading keys' fresh moments
    /// with `fresh_at`; `prefetch(key)` is asked for the key of the entry
    /// a few ahead.
    pub fn advance(&mut self, now: Nanos, fresh_at: impl Fn(u32) -> u64, prefetch: impl Fn(u32)) {
        match &mut self.order {
            Order::Counted(deaths) => deaths.advance(now.0),
            Order::Queued(_) => self.take_due_in_order(now.0, &fresh_at, &prefetch),
        }
        self.now = self.now.max(now.0);
    }

    /// Takes every queued entry due by `now`, in time order.
    fn take_due_in_order(
        &mut self,
        now: u64,
        fresh_at: impl Fn(u32) -> u64,
        prefetch: impl Fn(u32),
    ) {
        self.log.advancing = true;
        while let Order::Queued(queue) = &mut self.order {
            let Some((t, key)) = queue.peek_due(now) else {
                break;
            };
            queue.pop();
            if let Some(&(_, next)) = queue.ahead(PREFETCH_AHEAD) {
                prefetch(next);
            }
            if !self.lives.keys.get(key) {
                continue;
            }
            let fresh = fresh_at(key);
            if fresh > t {
                // Written since: it lives on.
                queue.push((fresh, key));
            } else {
                // Every alive key has an entry no later than its fresh
                // moment, and the entries come in order.
                debug_assert_eq!(fresh, t, "key {key} found dead after its fresh moment");
                self.die(key, t, t);
            }
        }
        self.log.advancing = false;
    }

    /// `key`, alive with fresh moment `fresh`, dies at `at`.
    fn die(&mut self, key: u32, fresh: u64, at: u64) {
        self.lives.end(key, at);
        self.log.note(at, self.sizes, [0; 2]);
        if let Order::Counted(deaths) = &mut self.order {
            deaths.remove(fresh);
        }
    }

    /// Before a decision at the ledger's time on `key`: its fresh moment
    /// (`fresh()`, read from its state) if it is alive, else `None`. A key
    /// counted alive whose fresh moment has come died then: it is taken
    /// now (see the module documentation).
    pub fn alive_until(&mut self, key: u32, fresh: impl FnOnce() -> u64) -> Option<u64> {
        if !self.is_alive(key) {
            return None;
        }
        let fresh = fresh();
        if fresh <= self.now {
            self.die(key, fresh, fresh);
            return None;
        }
        Some(fresh)
    }

    /// After a decision at the ledger's time wrote `key`: its state is
    /// fresh-equivalent from `fresh_at` on; `before` is when it was before
    /// the decision, for a key that was alive
    /// ([`FixedLedger::alive_until`]). A birth that may set a new peak
    /// first counts the deaths due by then (queued: takes them, in order,
    /// reading other keys' fresh moments with `fresh_of`). (Then
    /// [`FixedLedger::compact`].)
    pub fn hold(
        &mut self,
        key: u32,
        before: Option<u64>,
        fresh_at: Nanos,
        fresh_of: impl Fn(u32) -> u64,
    ) {
        let (now, fresh) = (self.now, fresh_at.0);
        match before {
            Some(before) if fresh <= now => self.die(key, before, now),
            None if fresh <= now => {}
            Some(before) => match &mut self.order {
                Order::Counted(deaths) => {
                    if fresh != before {
                        deaths.remove(before);
                        deaths.add(fresh, now);
                    }
                }
                Order::Queued(queue) => {
                    if fresh < before {
                        queue.push((fresh, key));
                    }
                }
            },
            None => {
                // Counted alive are also the keys dead by now whose deaths
                // are not taken yet: the count is exact without them.
                // (None: the birth cannot set a new peak.)
                let dead = match &mut self.order {
                    _ if self.lives.alive < self.peak_alive => None,
                    Order::Counted(deaths) => match self.lives.alive - deaths.passed() {
                        alive if alive < self.peak_alive => None,
                        _ => Some(deaths.upto(now)),
                    },
                    Order::Queued(_) => {
                        self.take_due_in_order(now, &fresh_of, |_| {});
                        Some(0)
                    }
                };
                self.lives.begin(key, now);
                if let Some(dead) = dead {
                    self.peak_alive = self.peak_alive.max(self.lives.alive - dead);
                }
                self.log.note(now, [0; 2], self.sizes);
                match &mut self.order {
                    Order::Counted(deaths) => deaths.add(fresh, now),
                    Order::Queued(queue) => queue.push((fresh, key)),
                }
            }
        }
    }

    /// Queued: drops the entries that no longer apply (keys dead, and all
    /// but one entry no later than its fresh moment per alive key) once
    /// they outnumber the alive keys, so memory follows keys, not requests.
    /// `fresh_at` reads a key's fresh moment from its state. (Counted, the
    /// multiset keeps itself small.)
    pub fn compact(&mut self, fresh_at: impl Fn(u32) -> u64) {
        let Order::Queued(queue) = &mut self.order else {
            return;
        };
        if (queue.len() as u64) <= 64 + 2 * self.lives.alive {
            return;
        }
        let alive = &self.lives.keys;
        let mut kept = Bits::default();
        queue.retain(|&(t, key)| {
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
        // (then `key_ns` counts to it, as the deaths taken so far do).
        let to = end.0.max(self.now);
        let (dead, died) = match &mut self.order {
            Order::Counted(deaths) => deaths.upto_with_sum(to),
            Order::Queued(_) => {
                self.take_due_in_order(to, &fresh_at, |_| {});
                (0, 0)
            }
        };
        let Lives {
            alive,
            born,
            died: taken,
            ..
        } = self.lives;
        let key_ns = (alive - dead) as u128 * self.now as u128 + taken + died - born;
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
    /// falls in the first bucket (of 2^20 ns); at 2^14 and more they cross
    /// buckets. The fixed ledger counts the same whether it counts its
    /// keys' deaths or queues them (for a journal): checked here, and the
    /// first returned.
    fn scaled(writes: &Writes, end: u64, scale: u64) -> (Footprint, Footprint) {
        let [counted, queued] = [false, true].map(|queue| {
            let mut fixed = FixedLedger::new(16, 104);
            if queue {
                fixed.keep_changes();
            }
            let mut fresh = [0u64; 8];
            let mut now = 0;
            for &(dt, key, fresh_in) in writes {
                now += dt * scale;
                fixed.advance(Nanos(now), |k| fresh[k as usize], |_| {});
                let before = fixed.alive_until(key, || fresh[key as usize]);
                fresh[key as usize] = now + fresh_in * scale;
                fixed.hold(key, before, Nanos(fresh[key as usize]), |k| {
                    fresh[k as usize]
                });
                fixed.compact(|k| fresh[k as usize]);
            }
            fixed.close(8, Nanos(now + end * scale), |k| fresh[k as usize])
        });
        assert_eq!(counted, queued, "counted and queued deaths");
        let mut general = Ledger::new(|_, _| 16, |_, _| 104);
        let mut now = 0;
        for &(dt, key, fresh_in) in writes {
            now += dt * scale;
            general.advance(Nanos(now));
            general.hold(key, Nanos(now + fresh_in * scale), []);
        }
        (counted, general.close(8, Nanos(now + end * scale)))
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
        // buckets of 2^20 ns): it waits in the far heap, and comes into
        // the ring, then passes, as the clock moves on.
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

    /// `(now, key, its fresh moment)` writes through a counted, a queued
    /// and a general ledger, closed at `end`.
    fn three_ways(writes: &[(u64, u32, u64)], end: u64) -> [Footprint; 3] {
        let keys = writes.iter().map(|w| w.1).max().unwrap_or(0) as usize + 1;
        let [counted, queued] = [false, true].map(|queue| {
            let mut fixed = FixedLedger::new(16, 104);
            if queue {
                fixed.keep_changes();
            }
            let mut fresh = vec![0u64; keys];
            for &(now, key, f) in writes {
                fixed.advance(Nanos(now), |k| fresh[k as usize], |_| {});
                let before = fixed.alive_until(key, || fresh[key as usize]);
                fresh[key as usize] = f;
                fixed.hold(key, before, Nanos(f), |k| fresh[k as usize]);
                fixed.compact(|k| fresh[k as usize]);
            }
            fixed.close(keys as u64, Nanos(end), |k| fresh[k as usize])
        });
        let mut general = Ledger::new(|_, _| 16, |_, _| 104);
        for &(now, key, f) in writes {
            general.advance(Nanos(now));
            general.hold(key, Nanos(f), []);
        }
        [counted, queued, general.close(keys as u64, Nanos(end))]
    }

    // Regression (found in review): after a retune widened the buckets,
    // deaths taken among moments already passed left them counted in
    // `passed`, and a birth that set a new peak skipped it (16 · 8000
    // where 16 · 8001 were held).
    #[test]
    fn a_peak_after_the_buckets_widen_is_counted() {
        let mut w = Vec::new();
        // 10 keys alive at once, each fresh 3 ms later.
        for k in 0..10u32 {
            w.push((k as u64, k, k as u64 + 3_000_000));
        }
        // At 5 ms (their moments passed, their deaths not taken), 8000
        // keys fresh 10 s ahead: the buckets widen to 2^26 ns.
        for i in 0..8000u32 {
            let now = 5_000_000 + i as u64;
            w.push((now, 100 + i, now + 10_000_000_000));
        }
        // Keys 0..10 written again, fresh at once: their deaths are taken.
        for k in 0..10u32 {
            w.push((6_000_000, k, 0));
        }
        // One more birth: 8001 alive at once.
        w.push((6_000_001, 9000, 6_000_001 + 10_000_000_000));
        let [counted, queued, general] = three_ways(&w, 7_000_000);
        assert_eq!(general.peak_total, 16 * 8001);
        assert_eq!(queued, general, "queued");
        assert_eq!(counted, general, "counted");
    }

    // Regression (found in review): the same, where more had passed than
    // were counted alive (a subtraction that overflowed in a debug build).
    #[test]
    fn more_passed_than_alive_after_the_buckets_widen() {
        let mut w = Vec::new();
        // 6000 keys one after the other, each alive 1 ns.
        for k in 0..6000u32 {
            let now = 2 * k as u64;
            w.push((now, k, now + 1));
        }
        // At 5 ms, 4500 keys fresh 10 s ahead: the buckets widen.
        for i in 0..4500u32 {
            let now = 5_000_000 + i as u64;
            w.push((now, 10_000 + i, now + 10_000_000_000));
        }
        // They die by a write; then one of the 6000 expired keys is written.
        for i in 0..4500u32 {
            w.push((6_000_000, 10_000 + i, 0));
        }
        w.push((6_000_000, 0, 0));
        // A birth.
        w.push((6_000_001, 20_000, 6_000_002));
        let [counted, queued, general] = three_ways(&w, 7_000_000);
        assert_eq!(queued, general, "queued");
        assert_eq!(counted, general, "counted");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]

        /// Thousands of keys in phases of time steps and lifetimes from
        /// 0 ns to 2^36 ns (with fresh moments at once, at the end of
        /// time and at the write's own moment), so that the buckets retune
        /// both ways: counted, queued and general agree, closed before
        /// the ledger's time too.
        #[test]
        fn many_keys_in_phases_count_as_the_general_ledger(
            phases in proptest::collection::vec((0u32..6, 0u32..6, 1u32..4000, 1u32..8000), 1..8),
            seed in 0u64..u64::MAX,
            end_back in 0u64..(1 << 30),
        ) {
            let scales = [0u64, 1, 1 << 10, 1 << 20, 1 << 30, 1 << 36];
            // xorshift64: the writes of a case from its seed.
            let mut x = seed | 1;
            let mut rnd = move || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            let mut w = Vec::new();
            let mut now = 0u64;
            for (dts, fs, n, keys) in phases {
                for _ in 0..n {
                    now += rnd() % (scales[dts as usize] + 1);
                    let key = (rnd() % keys as u64) as u32;
                    let f = match rnd() % 16 {
                        0 => 0,
                        1 => u64::MAX,
                        2 => now,
                        _ => now.saturating_add(rnd() % (scales[fs as usize] + 1)),
                    };
                    w.push((now, key, f));
                }
            }
            let [counted, queued, general] = three_ways(&w, now.saturating_sub(end_back));
            proptest::prop_assert_eq!(queued, general);
            proptest::prop_assert_eq!(counted, general);
        }
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

        /// And so it is when the writes cross the buckets, most of them
        /// passing with their deaths counted, never read.
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
