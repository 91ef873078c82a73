//! The reorder window's requests, in buckets of arrival time: a push is an
//! append to its bucket, and a bucket is sorted once, when its earliest
//! possible arrival is due — O(1) per request in the common case instead
//! of a heap's O(log n) cache misses, in exactly a heap's order.
//!
//! A request is due when it arrives more than the window's hold before
//! the latest arrival seen: `reorder` (docs/semantics.md §8), or less
//! (see `Pipeline::holding`). A line that goes before a request already
//! handed out is never pushed: it is a bad line, or a late line the
//! pipeline keeps aside. So once the earliest bucket may hold a due
//! request, it becomes `first`, sorted, and is handed out from its front;
//! a later push into it or into an earlier bucket (which, holding all of
//! `reorder`, cannot come) goes into `first` in its place, after every
//! request handed out and before the rest.
//!
//! A bucket's width is the window's hold over `WINDOW` (rounded up
//! to a power of two), so a window's requests spread over thousands of
//! buckets and a sort stays small. The next `RING` buckets sit in a
//! ring, with a bit each saying whether it holds anything, so that
//! finding the next one skips 64 empty buckets a step; a bucket past the
//! ring (after a gap in the log) waits in `far` until the ring reaches it.
//! The ring's buckets are chains of blocks from one pool
//! ([`ratesim_core::chains`]): a window of a busy log's minute holds
//! hundreds of thousands of requests, in a few huge pages instead of a
//! vector each.

use std::collections::BTreeMap;

use ratesim_core::chains::Chains;

use super::Verdict;

/// A request waiting in the reorder window, ordered by arrival, then the
/// verdict rule (`rank`, `delay`), then log order (`line`). Lines are
/// unique, so the order never reaches the fields after `line`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Pending {
    pub arrival: u64,
    /// 0 passed (or no verdict), 1 delayed, 2 rejected.
    pub rank: u8,
    /// The gateway's delay of a delayed request (else 0).
    pub delay: u64,
    /// 1-based line number in the log.
    pub line: u64,
    /// A line outside `location`, or one whose key is empty (nginx): it
    /// sets the time base (the whole log's earliest arrival, shared by
    /// every source reading the log) and is not replayed.
    pub ghost: bool,
    pub client: u32,
    pub ip: u32,
    /// Its source's part number, when the source is split (else 0).
    pub part: u32,
    pub cost: u64,
    pub verdict: Option<Verdict>,
}

/// The fields that decide two requests' order (see [`Pending::order_key`]).
pub(super) type OrderKey = (u64, u8, u64, u64);

impl Pending {
    /// The fields that decide its order: arrival, rank, delay and line,
    /// the order's first fields. The fields after `line` never decide it
    /// between two requests of one log, whose lines differ: for those,
    /// `a.order_key() < b.order_key()` exactly when `a < b`.
    #[inline(always)]
    pub(super) fn order_key(&self) -> OrderKey {
        (self.arrival, self.rank, self.delay, self.line)
    }
}

/// Sorts a bucket, whose requests come nearly in order (a log is written
/// as requests end, and they arrive a duration earlier): by insertion,
/// which costs a step per request and one per request passed over, up
/// to a bucket of 64; a larger one, by `sort_unstable`. Requests are
/// distinct (their lines are), so the order is the same either way.
fn sort_nearly_sorted(v: &mut [Pending]) {
    if v.len() > 64 {
        v.sort_unstable();
        return;
    }
    for i in 1..v.len() {
        let p = v[i];
        let mut j = i;
        while j > 0 && p < v[j - 1] {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = p;
    }
}

/// Buckets a reorder window spans, at most (a power of two).
const WINDOW: u64 = 1 << 14;

/// Buckets in the ring: four windows' worth.
const RING: u64 = 4 * WINDOW;

/// Requests in one block of a ring bucket: 384 bytes, so that a log
/// sparse enough to leave one request a bucket costs little more than the
/// requests (a busy one fills several blocks a bucket).
const BLOCK: usize = 8;

/// The window (see the module documentation).
pub(super) struct Window {
    /// Bucket width: `2^shift` ns; a request's bucket is `arrival >> shift`.
    shift: u32,
    /// Buckets `base .. base + RING`, bucket `b` at `b % RING`, unsorted,
    /// in blocks of [`BLOCK`].
    ring: Chains<Pending, BLOCK>,
    /// A bit per ring bucket: it holds a request.
    occupied: Box<[u64]>,
    /// Ring buckets holding a request.
    in_ring: usize,
    base: u64,
    /// Every ring bucket before this one is empty (`base ≤ scan`).
    scan: u64,
    /// Buckets from `base + RING` on.
    far: BTreeMap<u64, Vec<Pending>>,
    /// The bucket before `base` being handed out: its number, its
    /// requests sorted, and how many of them were handed out.
    first: Option<(u64, Vec<Pending>, usize)>,
    /// Emptied buckets' allocations, for new far and sorted buckets.
    spare: Vec<Vec<Pending>>,
}

impl Window {
    /// A window for a hold of `hold` ns.
    pub(super) fn new(hold: u64) -> Window {
        Window {
            shift: (hold / WINDOW)
                .max(1)
                .checked_next_power_of_two()
                .map_or(63, u64::trailing_zeros),
            ring: Chains::new(RING as usize),
            occupied: vec![0; (RING / 64) as usize].into_boxed_slice(),
            in_ring: 0,
            base: 0,
            scan: 0,
            far: BTreeMap::new(),
            first: None,
            spare: Vec::new(),
        }
    }

    /// Adds `p`. Inlined, its rare path ([`Window::push_aside`]) out of
    /// line (see `Order::push`).
    #[inline(always)]
    pub(super) fn push(&mut self, p: Pending) {
        let b = p.arrival >> self.shift;
        if b < self.base || b >= self.base + RING {
            return self.push_aside(p, b);
        }
        let i = (b % RING) as usize;
        if self.ring.len(i) == 0 {
            self.occupied[i / 64] |= 1 << (i % 64);
            self.in_ring += 1;
            self.scan = self.scan.min(b);
        }
        self.ring.push(i, p);
    }

    /// [`Window::push`] of a request to bucket `b`, outside the ring.
    #[inline(never)]
    fn push_aside(&mut self, p: Pending, b: u64) {
        if b < self.base {
            // The bucket being handed out (no earlier one can get a
            // request: see the module documentation), now or again.
            match &mut self.first {
                Some((_, sorted, taken)) => {
                    let at = *taken + sorted[*taken..].partition_point(|q| *q < p);
                    sorted.insert(at, p);
                }
                None => self.first = Some((b, vec![p], 0)),
            }
            return;
        }
        let spare = &mut self.spare;
        self.far
            .entry(b)
            .or_insert_with(|| spare.pop().unwrap_or_default())
            .push(p);
    }

    /// The earliest ring bucket holding a request, if any.
    fn next_occupied(&mut self) -> Option<u64> {
        if self.in_ring == 0 {
            return None;
        }
        let mut b = self.scan.max(self.base);
        loop {
            let i = (b % RING) as usize;
            let word = self.occupied[i / 64] >> (i % 64);
            if word != 0 {
                b += u64::from(word.trailing_zeros());
                self.scan = b;
                return Some(b);
            }
            b += 64 - (i % 64) as u64;
        }
    }

    /// Moves the far buckets the ring now reaches into it.
    fn reach(&mut self) {
        while let Some(entry) = self.far.first_entry() {
            if *entry.key() >= self.base + RING {
                break;
            }
            let (b, mut v) = entry.remove_entry();
            let i = (b % RING) as usize;
            debug_assert_eq!(self.ring.len(i), 0);
            for &p in &v {
                self.ring.push(i, p);
            }
            v.clear();
            self.spare.push(v);
            self.occupied[i / 64] |= 1 << (i % 64);
            self.in_ring += 1;
            self.scan = self.scan.min(b);
        }
    }

    /// The earliest request, if it is due: `due(arrival)`, which holds
    /// for every arrival before one for which it holds.
    pub(super) fn peek(&mut self, due: impl Fn(u64) -> bool) -> Option<Pending> {
        loop {
            if let Some((_, sorted, taken)) = &self.first {
                if let Some(&p) = sorted.get(*taken) {
                    return due(p.arrival).then_some(p);
                }
                let (_, mut emptied, _) = self.first.take().expect("matched");
                emptied.clear();
                self.spare.push(emptied);
            }
            let Some(b) = self.next_occupied() else {
                // Only far buckets, after a gap: the ring moves to them,
                // starting a window before the first (where requests
                // logged after it may still arrive).
                let &b = self.far.keys().next()?;
                self.base = self.base.max(b.saturating_sub(WINDOW + 1));
                self.scan = self.base;
                self.reach();
                continue;
            };
            // The bucket's earliest possible arrival.
            if !due(b << self.shift) {
                return None;
            }
            let i = (b % RING) as usize;
            let mut sorted = self.spare.pop().unwrap_or_default();
            self.ring.take(i, &mut sorted);
            self.occupied[i / 64] &= !(1 << (i % 64));
            self.in_ring -= 1;
            sort_nearly_sorted(&mut sorted);
            self.first = Some((b, sorted, 0));
            (self.base, self.scan) = (b + 1, b + 1);
            self.reach();
            // The window's lines were pushed long ago and left the cache:
            // the next bucket's are asked for while this one is handed out.
            if let Some(next) = self.next_occupied() {
                self.ring
                    .first((next % RING) as usize)
                    .iter()
                    .take(8)
                    .for_each(ratesim_core::cache::prefetch_ref);
            }
        }
    }

    /// Holds the same requests in buckets that suit a longer hold (a
    /// window made for a shorter one hands them out in order too, but
    /// spreads them over too many buckets).
    pub(super) fn widen(&mut self, hold: u64) {
        let mut wide = Window::new(hold);
        while let Some(p) = self.peek(|_| true) {
            self.pop();
            wide.push(p);
        }
        *self = wide;
    }

    /// Removes the request [`Window::peek`] gave.
    pub(super) fn pop(&mut self) {
        if let Some((_, _, taken)) = &mut self.first {
            *taken += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_key_orders_two_requests_of_different_lines_as_they_order() {
        // Few values each, so that arrival, rank and delay tie often, and
        // the fields after `line` (which the key leaves out) differ.
        let mut x = 11u64;
        let mut any = |line: u64| {
            let mut draw = |n: usize| crate::pick(&mut x, n);
            Pending {
                arrival: draw(3) as u64,
                rank: draw(3) as u8,
                delay: draw(2) as u64,
                line,
                ghost: draw(2) == 1,
                client: draw(3) as u32,
                ip: draw(3) as u32,
                part: draw(2) as u32,
                cost: 1 + draw(2) as u64,
                verdict: [None, Some(Verdict::Passed), Some(Verdict::Rejected)][draw(3)],
            }
        };
        let mut ties = 0;
        for i in 0..100_000u64 {
            // Either one first, by its line.
            let (a, b) = match i % 2 {
                0 => (any(2 * i), any(2 * i + 1)),
                _ => (any(2 * i + 1), any(2 * i)),
            };
            let (ka, kb) = (a.order_key(), b.order_key());
            ties += ((ka.0, ka.1, ka.2) == (kb.0, kb.1, kb.2)) as u32;
            assert_eq!(ka.cmp(&kb), a.cmp(&b), "{a:?} {b:?}");
        }
        // The line decided some.
        assert!(ties > 1_000, "{ties}");
    }

    fn at(arrival: u64, line: u64) -> Pending {
        Pending {
            arrival,
            rank: 0,
            delay: 0,
            line,
            ghost: false,
            client: 0,
            ip: 0,
            part: 0,
            cost: 1,
            verdict: None,
        }
    }

    /// Pushes `arrivals` in order and takes what is due after each, as
    /// the pipeline does, then everything: the arrivals taken, in order.
    fn replay(reorder: u64, arrivals: &[u64]) -> Vec<(u64, u64)> {
        let mut w = Window::new(reorder);
        let mut latest = None::<u64>;
        let mut out = Vec::new();
        let mut take = |w: &mut Window, latest: Option<u64>, eof: bool| {
            while let Some(p) =
                w.peek(|a| eof || latest.is_some_and(|l| a.saturating_add(reorder) < l))
            {
                w.pop();
                out.push((p.arrival, p.line));
            }
        };
        for (line, &a) in arrivals.iter().enumerate() {
            // A line older than the window is a bad line: not pushed.
            if latest.is_some_and(|l| a.saturating_add(reorder) < l) {
                continue;
            }
            w.push(at(a, line as u64));
            latest = latest.max(Some(a));
            take(&mut w, latest, false);
        }
        take(&mut w, latest, true);
        out
    }

    /// What a heap gives: the accepted requests sorted.
    fn sorted(reorder: u64, arrivals: &[u64]) -> Vec<(u64, u64)> {
        let mut latest = None::<u64>;
        let mut kept: Vec<(u64, u64)> = Vec::new();
        for (line, &a) in arrivals.iter().enumerate() {
            if latest.is_some_and(|l| a.saturating_add(reorder) < l) {
                continue;
            }
            kept.push((a, line as u64));
            latest = latest.max(Some(a));
        }
        kept.sort();
        kept
    }

    // Handing requests on after a shorter hold than the bad-line rule's,
    // with the requests that go before one handed on kept aside, and the
    // window widened as the hold doubles: what is handed on, and what is
    // kept aside, are each in order and together every request.
    #[test]
    fn a_shorter_hold_hands_on_in_order_and_keeps_late_requests_aside() {
        let s = 1_000_000_000u64;
        let mut x = 11u64;
        let arrivals: Vec<u64> = (0..100_000u64)
            .map(|i| {
                crate::lcg(&mut x);
                let slow = if (x >> 40) % 100 == 0 { 20 * s } else { 0 };
                (1_000 * s + i * 1_000_000).saturating_sub((x >> 33) % (s / 2) + slow)
            })
            .collect();
        let mut hold = s / 100;
        let mut w = Window::new(hold);
        let (mut latest, mut last_out) = (0, None::<Pending>);
        let (mut out, mut late) = (Vec::new(), Vec::new());
        for (line, &a) in arrivals.iter().enumerate() {
            let p = at(a, line as u64);
            latest = latest.max(a);
            if last_out.is_some_and(|l| p < l) {
                late.push(p);
                if late.len() % 200 == 0 {
                    hold *= 2;
                    w.widen(hold);
                }
            } else {
                w.push(p);
            }
            while let Some(p) = w.peek(|a| a + hold < latest) {
                w.pop();
                out.push(p);
                last_out = Some(p);
            }
        }
        while let Some(p) = w.peek(|_| true) {
            w.pop();
            out.push(p);
        }
        assert!(out.windows(2).all(|w| w[0] < w[1]));
        assert!(late.len() > 1000 && hold > s, "{} {hold}", late.len());
        out.extend(late);
        out.sort_unstable();
        let mut all: Vec<Pending> = (0..arrivals.len())
            .map(|i| at(arrivals[i], i as u64))
            .collect();
        all.sort_unstable();
        assert_eq!(out, all);
    }

    #[test]
    fn requests_come_out_in_arrival_then_log_order_across_gaps_and_late_lines() {
        let s = 1_000_000_000u64;
        let reorder = 60 * s;
        let mut arrivals = Vec::new();
        let mut x = 7u64;
        for i in 0..200_000u64 {
            // A pseudo-random delay of up to 70 s (some lines too late),
            // equal arrivals, and two gaps far past the ring.
            crate::lcg(&mut x);
            let t = i * 3_000_000
                + if i > 120_000 { 1_000_000 * s } else { 0 }
                + if i > 150_000 { 10_000_000 * s } else { 0 };
            arrivals.push((t + 70 * s).saturating_sub((x >> 33) % (70 * s)) / 1000 * 1000);
        }
        assert_eq!(replay(reorder, &arrivals), sorted(reorder, &arrivals));
        for reorder in [0, 1, 999, s / 10] {
            let few = &arrivals[..5000];
            assert_eq!(replay(reorder, few), sorted(reorder, few), "{reorder}");
        }
        // Buckets (of 2^22 ns at a 60 s window) of a few requests, of tens
        // and of hundreds, nearly in order and not.
        for (spacing, spread) in [
            (1_000_000, 5_000_000),
            (100_000, 2_000_000),
            (10_000, 50 * s),
        ] {
            let dense: Vec<u64> = (0..40_000u64)
                .map(|i| {
                    crate::lcg(&mut x);
                    (i * spacing + spread).saturating_sub((x >> 33) % spread) / 1000 * 1000
                })
                .collect();
            assert_eq!(
                replay(reorder, &dense),
                sorted(reorder, &dense),
                "{spacing}"
            );
        }
    }
}
