//! Where the keys' states live, apart from the rules that decide on them.
//!
//! The separation is `governor`'s: its GCRA is a pure function from a key's
//! old state to a decision and a new state, and a `StateStore` keeps the
//! states. Here a [`Rule`] decides on one key's state, handed to it, and
//! [`Stored`] keeps every key's state in a [`Keyed`] table, charges it to
//! the [`Ledger`], and makes the pair a [`Limiter`] — including the
//! read-then-write of an instance that reads a shared store, decides on its
//! copy and writes it back later, which no rule needs to know about.

use super::fixed_ledger::FixedLedger;
use super::log_ledger::LogLedger;
use super::{Bits, Decision, Footprint, Headers, Ledger, Limiter};
use crate::clock::Nanos;

/// One algorithm's decision rule for one key: its parameters, and what it
/// does to a key's state.
pub trait Rule: Send {
    /// One key's state. (`Default` only fills the slots of keys not seen
    /// yet; no decision reads it.)
    type State: Clone + Send + Default;

    /// A key's state before its first request, which arrives at `now`.
    fn fresh(&self, now: Nanos) -> Self::State;

    /// Decides a request of `cost` arriving at `now` on `state`, leaving it
    /// as the decision left it; with the expiry of the item (log entry,
    /// window count) the decision added to it, if any.
    fn decide(&self, state: &mut Self::State, now: Nanos, cost: u64) -> (Decision, Option<u64>);

    /// [`Rule::decide`] for a request whose rejection is not counted, as a
    /// chain's retry-after asks it (docs/semantics.md §13): a rule that
    /// counts rejected requests (`count_rejected`) decides as one that
    /// does not, so its retry-after is the first moment the request
    /// passes on the state as it is.
    fn decide_uncounted(&self, state: &mut Self::State, now: Nanos, cost: u64) -> Decision {
        self.decide(state, now, cost).0
    }

    /// From when `state` is equivalent to a fresh key's if nothing else
    /// arrives: every request from then on is decided as for a key never
    /// seen (the ledger counts the key until then).
    fn fresh_at(&self, state: &Self::State) -> Nanos;

    /// The largest cost a request arriving at `now` would be
    /// [`Decision::Admitted`] (passing at once) with on `state`, nothing
    /// else arriving first: the RateLimit header's `r` (docs/semantics.md
    /// §11). 0 when none would be; [`UNBOUNDED`] when every cost would be
    /// (a shaper with its outlet free, a balance not in debt).
    fn remaining(&self, state: &Self::State, now: Nanos) -> u64;

    /// When `state` is reset, the RateLimit header's `t` (docs/semantics.md
    /// §11): the moment it is fresh-equivalent ([`Rule::fresh_at`]), for
    /// every rule whose keys ever are.
    fn reset_at(&self, state: &Self::State) -> Nanos {
        self.fresh_at(state)
    }

    /// The items `state` holds (log entries, window counts), by the moment
    /// each expires; none for a rule whose state is a fixed size.
    fn items(&self, _state: &Self::State) -> impl Iterator<Item = u64> + Clone {
        std::iter::empty()
    }

    /// How many items `state` holds ([`Rule::items`]' count); right after
    /// a decision on it, all are live.
    fn item_count(&self, state: &Self::State) -> u64 {
        self.items(state).count() as u64
    }
}

/// What [`Rule::remaining`] says when any cost would be admitted.
pub const UNBOUNDED: u64 = u64::MAX;

/// A [`Rule`] with every key's state and the ledger of what they hold: a
/// [`Limiter`].
pub struct Stored<R: Rule> {
    rule: R,
    keys: Keyed<R::State>,
    books: Books,
}

/// The accounting of a [`Stored`]'s state memory: a [`FixedLedger`]
/// (which reads each key's fresh moment from its state) for rules whose
/// keys are all one size; a [`LogLedger`] for the sliding log, whose keys
/// hold entries — or, for a key partition's journal, which needs the
/// changes in time order, the general [`Ledger`] of items under the same
/// sizes ([`LogLedger::general`]). (One per limiter, so the variants'
/// sizes do not matter.)
#[allow(clippy::large_enum_variant)]
pub enum Books {
    Items(Ledger),
    Fixed(FixedLedger),
    Log(LogLedger),
}

impl From<Ledger> for Books {
    fn from(ledger: Ledger) -> Books {
        Books::Items(ledger)
    }
}

impl From<FixedLedger> for Books {
    fn from(ledger: FixedLedger) -> Books {
        Books::Fixed(ledger)
    }
}

/// When `key`'s stored state is fresh-equivalent (0 for a key with none).
fn fresh_of<R: Rule>(rule: &R, keys: &Keyed<R::State>, key: u32) -> u64 {
    keys.get(key).map_or(0, |state| rule.fresh_at(state).0)
}

impl<R: Rule> Stored<R> {
    /// `rule` with no key yet, its keys charged in `books`.
    pub fn of(rule: R, books: impl Into<Books>) -> Self {
        Stored {
            rule,
            keys: Keyed::default(),
            books: books.into(),
        }
    }

    /// The rule, with its parameters.
    pub fn rule(&self) -> &R {
        &self.rule
    }

    /// What the RateLimit header fields say of `state` at `now`.
    fn headers_of(&self, state: &R::State, now: Nanos) -> Headers {
        Headers {
            remaining: self.rule.remaining(state, now),
            reset: Nanos(self.rule.reset_at(state).0.saturating_sub(now.0)),
        }
    }

    /// Its accounting.
    #[cfg(test)]
    pub(super) fn books(&self) -> &Books {
        &self.books
    }

    /// `key`'s stored state, if it has one.
    #[cfg(test)]
    pub(super) fn state(&self, key: u32) -> Option<&R::State> {
        self.keys.get(key)
    }
}

impl<R: Rule> Limiter for Stored<R> {
    fn decide(&mut self, key: u32, now: Nanos, cost: u64) -> Decision {
        let rule = &self.rule;
        match &mut self.books {
            Books::Items(ledger) => {
                ledger.advance(now);
                let state = self.keys.entry(key, || rule.fresh(now));
                let (decision, added) = rule.decide(state, now, cost);
                ledger.hold(key, rule.fresh_at(state), added);
                decision
            }
            Books::Fixed(ledger) => {
                let keys = &self.keys;
                ledger.advance(
                    now,
                    |k| fresh_of(rule, keys, k),
                    |k| crate::cache::prefetch_all(&keys.states, k as usize),
                );
                let before = ledger.alive_until(key, || fresh_of(rule, keys, key));
                let state = self.keys.entry(key, || rule.fresh(now));
                let (decision, _) = rule.decide(state, now, cost);
                let fresh = rule.fresh_at(state);
                let keys = &self.keys;
                ledger.hold(key, before, fresh, |k| fresh_of(rule, keys, k));
                ledger.compact(|k| fresh_of(rule, keys, k));
                decision
            }
            Books::Log(ledger) => {
                ledger.advance(now.0);
                let keys = &self.keys;
                let before = ledger.alive_until(key, || fresh_of(rule, keys, key));
                let state = self.keys.entry(key, || rule.fresh(now));
                let (decision, added) = rule.decide(state, now, cost);
                let state = &*state;
                let (fresh, count) = (rule.fresh_at(state).0, rule.item_count(state));
                ledger.hold(key, before, fresh, added, count, || rule.items(state));
                decision
            }
        }
    }

    fn footprint(&self, end: Nanos) -> Footprint {
        match &self.books {
            Books::Items(ledger) => ledger.footprint(self.keys.keys(), end),
            Books::Fixed(ledger) => {
                let (rule, keys) = (&self.rule, &self.keys);
                ledger
                    .clone()
                    .close(keys.keys(), end, |k| fresh_of(rule, keys, k))
            }
            Books::Log(ledger) => ledger.clone().close(self.keys.keys(), end.0),
        }
    }

    fn close(&mut self, end: Nanos) -> Footprint {
        let (rule, keys) = (&self.rule, &self.keys);
        match &mut self.books {
            Books::Items(ledger) => ledger.close(keys.keys(), end),
            Books::Fixed(ledger) => ledger.close(keys.keys(), end, |k| fresh_of(rule, keys, k)),
            Books::Log(ledger) => ledger.close(keys.keys(), end.0),
        }
    }

    fn keep_changes(&mut self) {
        if let Books::Log(ledger) = &self.books {
            assert!(
                ledger.is_empty(),
                "a ledger keeps its changes from its first decision"
            );
            self.books = Books::Items(LogLedger::general());
        }
        match &mut self.books {
            Books::Items(ledger) => ledger.keep_changes(),
            Books::Fixed(ledger) => ledger.keep_changes(),
            Books::Log(..) => unreachable!("replaced above"),
        }
    }

    fn changes(&mut self) -> Option<&mut Vec<super::Change>> {
        match &mut self.books {
            Books::Items(ledger) => ledger.changes(),
            Books::Fixed(ledger) => ledger.changes(),
            // Kept only by the general ledger (`keep_changes`).
            Books::Log(..) => None,
        }
    }

    fn expire_to(&mut self, now: Nanos) {
        let (rule, keys) = (&self.rule, &self.keys);
        match &mut self.books {
            Books::Items(ledger) => ledger.advance(now),
            Books::Fixed(ledger) => ledger.advance(now, |k| fresh_of(rule, keys, k), |_| {}),
            Books::Log(ledger) => ledger.advance(now.0),
        }
    }

    fn fresh_at(&self, key: u32) -> Nanos {
        match &self.books {
            Books::Items(ledger) => ledger.fresh_at(key),
            Books::Fixed(_) | Books::Log(..) => Nanos(fresh_of(&self.rule, &self.keys, key)),
        }
    }

    fn decide_detached(&mut self, key: u32, now: Nanos, cost: u64) -> (Decision, u32) {
        // A decision on a copy writes nothing the store holds.
        let saved = self.keys.save(key);
        let rule = &self.rule;
        let state = self.keys.entry(key, || rule.fresh(now));
        let (decision, _) = rule.decide(state, now, cost);
        (decision, self.keys.detach(key, saved))
    }

    fn probe(&mut self, key: u32, now: Nanos, cost: u64) -> Decision {
        let saved = self.keys.save(key);
        let rule = &self.rule;
        let state = self.keys.entry(key, || rule.fresh(now));
        let decision = rule.decide_uncounted(state, now, cost);
        let ticket = self.keys.detach(key, saved);
        self.discard(ticket);
        decision
    }

    fn write_back(&mut self, key: u32, ticket: u32, now: Nanos) {
        // The stored state is replaced at `now`: what it held leaves the
        // store then, and what the written copy holds is held from then.
        let rule = &self.rule;
        match &mut self.books {
            Books::Items(ledger) => {
                self.keys.attach(key, ticket);
                ledger.advance(now);
                if let Some(state) = self.keys.get(key) {
                    ledger.replace(key, rule.fresh_at(state), rule.items(state));
                }
            }
            Books::Fixed(ledger) => {
                // The deaths due by `now` are read from the states before
                // the write.
                let keys = &self.keys;
                ledger.advance(now, |k| fresh_of(rule, keys, k), |_| {});
                let before = ledger.alive_until(key, || fresh_of(rule, keys, key));
                self.keys.attach(key, ticket);
                if let Some(state) = self.keys.get(key) {
                    let keys = &self.keys;
                    ledger.hold(key, before, rule.fresh_at(state), |k| {
                        fresh_of(rule, keys, k)
                    });
                    ledger.compact(|k| fresh_of(rule, keys, k));
                }
            }
            Books::Log(ledger) => {
                ledger.advance(now.0);
                let keys = &self.keys;
                let before = ledger.alive_until(key, || fresh_of(rule, keys, key));
                // As the general ledger's `replace`: the stored state's
                // entries leave now (read before the write replaces them),
                // the written one's are held from now.
                if let Some(state) = self.keys.get(key) {
                    ledger.replace_out(key, before, rule.items(state));
                }
                self.keys.attach(key, ticket);
                if let Some(state) = self.keys.get(key) {
                    ledger.replace_in(key, rule.fresh_at(state).0, rule.items(state));
                }
            }
        }
    }

    fn discard(&mut self, ticket: u32) {
        self.keys.discard(ticket);
    }

    fn headers(&self, key: u32, now: Nanos) -> Headers {
        match self.keys.get(key) {
            Some(state) => self.headers_of(state, now),
            // A key never seen is fresh: nothing to reset.
            None => Headers {
                remaining: self.rule.remaining(&self.rule.fresh(now), now),
                reset: Nanos::ZERO,
            },
        }
    }

    fn detached_headers(&self, key: u32, ticket: u32, now: Nanos) -> Headers {
        match self.keys.detached(ticket) {
            Some(state) => self.headers_of(state, now),
            None => self.headers(key, now),
        }
    }

    fn prefetch(&self, key: u32) {
        crate::cache::prefetch_all(&self.keys.states, key as usize);
        if let Books::Items(ledger) = &self.books {
            ledger.prefetch(key);
        }
    }
}

/// Per-key state in a dense table indexed by key id: no hashing and no
/// allocation per request once a key has been seen. Which keys have a
/// state is one bit each, beside the states: an `Option` per key would
/// cost a state's alignment (16 bytes for a `u128`) more.
#[derive(Debug, Clone)]
pub struct Keyed<S> {
    pub(super) states: Vec<S>,
    /// Which keys have a state.
    present: Bits,
    keys: u64,
    /// Copies taken out by read-then-write decisions, by ticket.
    detached: Vec<Option<S>>,
    free: Vec<u32>,
}

impl<S> Default for Keyed<S> {
    fn default() -> Self {
        Keyed {
            states: Vec::new(),
            present: Bits::default(),
            keys: 0,
            detached: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<S: Clone + Default> Keyed<S> {
    fn has(&self, key: u32) -> bool {
        self.present.get(key)
    }

    /// Marks `key` present or absent, with room for its state.
    fn set(&mut self, key: u32, present: bool) {
        let k = key as usize;
        if k >= self.states.len() {
            crate::cache::grow_with(&mut self.states, k + 1, S::default);
        }
        self.present.set(key, present);
    }

    /// A copy of `key`'s state, if it has one.
    pub fn save(&self, key: u32) -> Option<S> {
        self.get(key).cloned()
    }

    /// Takes the state a decision just left for `key`, puts `saved` back in
    /// its place, and keeps the taken state under a new ticket.
    pub fn detach(&mut self, key: u32, saved: Option<S>) -> u32 {
        let computed = self
            .has(key)
            .then(|| std::mem::take(&mut self.states[key as usize]));
        match saved {
            Some(state) => self.states[key as usize] = state,
            None => {
                // The decision created the key; the store never saw it.
                self.keys -= 1;
                self.set(key, false);
            }
        }
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

    /// `key`'s state becomes the copy under `ticket`.
    pub fn attach(&mut self, key: u32, ticket: u32) {
        let computed = self.detached[ticket as usize].take();
        self.free.push(ticket);
        if let Some(state) = computed {
            if !self.has(key) {
                self.keys += 1;
                self.set(key, true);
            }
            self.states[key as usize] = state;
        }
    }

    /// The copy kept under `ticket`, if it holds one.
    pub fn detached(&self, ticket: u32) -> Option<&S> {
        self.detached.get(ticket as usize).and_then(Option::as_ref)
    }

    /// `key`'s stored state, if it has one.
    pub fn get(&self, key: u32) -> Option<&S> {
        self.has(key).then(|| &self.states[key as usize])
    }

    pub fn discard(&mut self, ticket: u32) {
        self.detached[ticket as usize] = None;
        self.free.push(ticket);
    }

    /// The state for `key`, created by `init` on its first request.
    pub fn entry(&mut self, key: u32, init: impl FnOnce() -> S) -> &mut S {
        if !self.has(key) {
            self.keys += 1;
            self.set(key, true);
            self.states[key as usize] = init();
        }
        &mut self.states[key as usize]
    }

    pub fn keys(&self) -> u64 {
        self.keys
    }

    pub fn iter(&self) -> impl Iterator<Item = &S> {
        (0..self.states.len() as u32).filter_map(|k| self.get(k))
    }
}
