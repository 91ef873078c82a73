//! The event queue: a min-queue ordered by `(time, sequence)`.
//!
//! The sequence number is given when an event is pushed, so events at the
//! same nanosecond come out first-in first-out (docs/semantics.md §1) and
//! every run is deterministic. Payloads are small integers the run loop
//! interprets.
//! The events sit in a [`Calendar`]: a queue of 10^6 Poisson clients'
//! next arrivals costs O(1) per event, not a walk down a 20-level heap. A
//! queue of one event keeps it aside, out of the calendar.

use crate::calendar::Calendar;
use crate::clock::Nanos;

/// A min-queue of `u32` payloads ordered by `(time, sequence)`.
pub(super) struct Queue {
    events: Events,
    /// The queue's one event while its calendar holds none — a lone
    /// stream's next arrival (a replayed log: each is pushed as the one
    /// before is taken), a run's one pending retry — taken and replaced
    /// without the calendar's work.
    solo: Option<(Nanos, u64, u32)>,
    seq: u64,
    /// Sequence numbers below this are packed ([`PACKED_SEQ`]; less in
    /// tests, to reach the widening).
    packed_below: u64,
}

/// The queued events: 16 bytes each while the sequence numbers fit in 32
/// bits, beside the payload in one `u64` — ordering by that word is
/// ordering by sequence, as the sequence numbers differ — and 24 bytes each
/// from the 2^32nd push on (the queue is rebuilt once, in order).
enum Events {
    Packed(Calendar<(u64, u64)>),
    Wide(Calendar<(u64, u64, u32)>),
}

/// Sequence numbers below this are packed.
const PACKED_SEQ: u64 = 1 << 32;

impl Queue {
    pub(super) fn new() -> Self {
        Queue {
            events: Events::Packed(Calendar::new()),
            solo: None,
            seq: 0,
            packed_below: PACKED_SEQ,
        }
    }

    pub(super) fn push(&mut self, t: Nanos, payload: u32) {
        if self.seq == self.packed_below {
            self.widen();
        }
        let seq = self.seq;
        self.seq += 1;
        if self.calendar_is_empty() {
            match self.solo.take() {
                None => {
                    self.solo = Some((t, seq, payload));
                    return;
                }
                Some((t0, s0, p0)) => self.push_calendar(t0, s0, p0),
            }
        }
        self.push_calendar(t, seq, payload);
    }

    fn calendar_is_empty(&self) -> bool {
        match &self.events {
            Events::Packed(c) => c.is_empty(),
            Events::Wide(c) => c.is_empty(),
        }
    }

    fn push_calendar(&mut self, t: Nanos, seq: u64, payload: u32) {
        match &mut self.events {
            Events::Packed(c) => c.push((t.0, seq << 32 | u64::from(payload))),
            Events::Wide(c) => c.push((t.0, seq, payload)),
        }
    }

    fn widen(&mut self) {
        if let Events::Packed(c) = &mut self.events {
            let mut wide = Calendar::new();
            while let Some((t, word)) = c.pop() {
                wide.push((t, word >> 32, word as u32));
            }
            self.events = Events::Wide(wide);
        }
    }

    pub(super) fn pop(&mut self) -> Option<(Nanos, u32)> {
        self.pop_numbered().map(|(t, _, p)| (t, p))
    }

    /// The next event, its sequence number (its position among all
    /// pushes, from 0) and payload.
    pub(super) fn pop_numbered(&mut self) -> Option<(Nanos, u64, u32)> {
        if let Some(solo) = self.solo.take() {
            return Some(solo);
        }
        match &mut self.events {
            Events::Packed(c) => c.pop().map(|(t, w)| (Nanos(t), w >> 32, w as u32)),
            Events::Wide(c) => c.pop().map(|(t, s, p)| (Nanos(t), s, p)),
        }
    }

    /// The next event's time and payload, left in the queue.
    pub(super) fn peek(&mut self) -> Option<(Nanos, u32)> {
        if let Some((t, _, p)) = self.solo {
            return Some((t, p));
        }
        match &mut self.events {
            Events::Packed(c) => c.peek().map(|(t, w)| (Nanos(t), w as u32)),
            Events::Wide(c) => c.peek().map(|(t, _, p)| (Nanos(t), p)),
        }
    }

    /// The payload of an event likely to come `k` pops from now (see
    /// [`Calendar::ahead`]).
    pub(super) fn ahead(&self, k: usize) -> Option<u32> {
        if let Some((_, _, p)) = self.solo {
            return (k == 0).then_some(p);
        }
        match &self.events {
            Events::Packed(c) => c.ahead(k).map(|&(_, w)| w as u32),
            Events::Wide(c) => c.ahead(k).map(|&(_, _, p)| p),
        }
    }

    /// How many events were ever pushed.
    pub(super) fn pushed(&self) -> u64 {
        self.seq
    }

    /// No event is queued.
    pub(super) fn is_empty(&self) -> bool {
        self.solo.is_none() && self.calendar_is_empty()
    }

    /// The sequence number a push would give an event now, for an event
    /// the caller holds instead of pushing it into an empty queue: it pops
    /// the event itself before anything else is pushed or popped, or hands
    /// it back with [`Queue::restore`]. Either way the queue pops what
    /// pushing it would have given.
    pub(super) fn take_seq(&mut self) -> u64 {
        debug_assert!(self.is_empty());
        if self.seq == self.packed_below {
            self.widen();
        }
        self.seq += 1;
        self.seq - 1
    }

    /// [`Queue::take_seq`] `n` times: the first of the `n` sequence
    /// numbers taken.
    pub(super) fn take_seqs(&mut self, n: u64) -> u64 {
        debug_assert!(self.is_empty());
        let first = self.seq;
        if (first..first + n).contains(&self.packed_below) {
            self.widen();
        }
        self.seq += n;
        first
    }

    /// An event numbered by [`Queue::take_seq`], queued as its push would
    /// have queued it (the queue has stayed empty).
    pub(super) fn restore(&mut self, t: Nanos, seq: u64, payload: u32) {
        debug_assert!(self.is_empty() && seq + 1 == self.seq);
        self.solo = Some((t, seq, payload));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_times_come_out_in_creation_order() {
        let mut q = Queue::new();
        q.push(Nanos(5), 0);
        q.push(Nanos(3), 1);
        q.push(Nanos(5), 2);
        q.push(Nanos(3), 3);
        let order: Vec<u32> = std::iter::from_fn(|| q.pop().map(|(_, p)| p)).collect();
        assert_eq!(order, [1, 3, 0, 2]);
    }

    proptest::proptest! {
        /// Packed, widened part way through, or wide: the queue pops what
        /// a heap of `(time, sequence, payload)` pops, numbers and all.
        #[test]
        fn packed_and_widened_queues_pop_as_a_heap(
            packed_below in 0u64..80,
            ops in proptest::collection::vec((0u8..4, 0u64..50, proptest::prelude::any::<u32>()), 0..200),
        ) {
            let mut q = Queue { packed_below, ..Queue::new() };
            let mut heap = std::collections::BinaryHeap::new();
            let (mut seq, mut now) = (0u64, 0u64);
            for (op, dt, payload) in ops {
                if op == 0 {
                    let want = heap.pop().map(|std::cmp::Reverse((t, s, p))| (Nanos(t), s, p));
                    proptest::prop_assert_eq!(q.pop_numbered(), want);
                    if let Some((t, _, _)) = want {
                        now = t.0;
                    }
                } else if op == 1 && q.is_empty() {
                    // Held instead of pushed into the empty queue, then
                    // handed back: as if pushed.
                    let s = q.take_seq();
                    proptest::prop_assert_eq!(s, seq);
                    q.restore(Nanos(now + dt), s, payload);
                    heap.push(std::cmp::Reverse((now + dt, seq, payload)));
                    seq += 1;
                } else if op == 2 && q.is_empty() {
                    // Several held and taken at once (as a lone stream's
                    // run of arrivals), the last handed back.
                    let n = dt % 4 + 1;
                    proptest::prop_assert_eq!(q.take_seqs(n), seq);
                    seq += n;
                    q.restore(Nanos(now + dt), seq - 1, payload);
                    heap.push(std::cmp::Reverse((now + dt, seq - 1, payload)));
                } else {
                    q.push(Nanos(now + dt), payload);
                    heap.push(std::cmp::Reverse((now + dt, seq, payload)));
                    seq += 1;
                }
                let head = heap.peek().map(|r| (Nanos(r.0 .0), r.0 .2));
                proptest::prop_assert_eq!(q.peek(), head);
                proptest::prop_assert_eq!(q.pushed(), seq);
                proptest::prop_assert_eq!(q.is_empty(), heap.is_empty());
                proptest::prop_assert_eq!(matches!(q.events, Events::Wide(_)), seq > packed_below);
            }
        }
    }
}
