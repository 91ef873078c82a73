//! The event queue: a min-queue ordered by `(time, sequence)`.
//!
//! The sequence number is given when an event is pushed, so events at the
//! same nanosecond come out first-in first-out (DESIGN §1) and every run is
//! deterministic. Payloads are small integers the run loop interprets.
//! The events sit in a [`Calendar`]: a queue of 10^6 Poisson clients'
//! next arrivals costs O(1) per event, not a walk down a 20-level heap.

use crate::calendar::Calendar;
use crate::clock::Nanos;

/// A min-queue of `u32` payloads ordered by `(time, sequence)`.
pub(super) struct Queue {
    events: Calendar<(u64, u64, u32)>,
    seq: u64,
}

impl Queue {
    pub(super) fn new() -> Self {
        Queue {
            events: Calendar::new(),
            seq: 0,
        }
    }

    pub(super) fn push(&mut self, t: Nanos, payload: u32) {
        self.events.push((t.0, self.seq, payload));
        self.seq += 1;
    }

    pub(super) fn pop(&mut self) -> Option<(Nanos, u32)> {
        self.events.pop().map(|(t, _, p)| (Nanos(t), p))
    }

    /// The next event, its sequence number (its position among all
    /// pushes, from 0) and payload.
    pub(super) fn pop_numbered(&mut self) -> Option<(Nanos, u64, u32)> {
        self.events.pop().map(|(t, s, p)| (Nanos(t), s, p))
    }

    /// The next event's time and payload, left in the queue.
    pub(super) fn peek(&mut self) -> Option<(Nanos, u32)> {
        self.events.peek().map(|(t, _, p)| (Nanos(t), p))
    }

    /// The payload of an event likely to come `k` pops from now (see
    /// [`Calendar::ahead`]).
    pub(super) fn ahead(&self, k: usize) -> Option<u32> {
        self.events.ahead(k).map(|&(_, _, p)| p)
    }

    /// How many events were ever pushed.
    pub(super) fn pushed(&self) -> u64 {
        self.seq
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
}
