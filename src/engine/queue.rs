//! The event queue: a min-queue ordered by `(time, sequence)`.
//!
//! The sequence number is given when an event is pushed, so events at the
//! same nanosecond come out first-in first-out (DESIGN §1) and every run is
//! deterministic. Payloads are small integers the run loop interprets.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::clock::Nanos;

/// A min-queue of `u32` payloads ordered by `(time, sequence)`.
pub(super) struct Queue {
    heap: BinaryHeap<Reverse<(u64, u64, u32)>>,
    seq: u64,
}

impl Queue {
    pub(super) fn with_capacity(n: usize) -> Self {
        Queue {
            heap: BinaryHeap::with_capacity(n),
            seq: 0,
        }
    }

    /// Makes room for `n` more events.
    pub(super) fn reserve(&mut self, n: usize) {
        self.heap.reserve_exact(n);
    }

    pub(super) fn push(&mut self, t: Nanos, payload: u32) {
        self.heap.push(Reverse((t.0, self.seq, payload)));
        self.seq += 1;
    }

    pub(super) fn pop(&mut self) -> Option<(Nanos, u32)> {
        self.heap.pop().map(|Reverse((t, _, p))| (Nanos(t), p))
    }

    /// The next event, its sequence number (its position among all
    /// pushes, from 0) and payload.
    pub(super) fn pop_numbered(&mut self) -> Option<(Nanos, u64, u32)> {
        self.heap.pop().map(|Reverse((t, s, p))| (Nanos(t), s, p))
    }

    /// The next event's time and payload, left in the queue.
    pub(super) fn peek(&self) -> Option<(Nanos, u32)> {
        self.heap.peek().map(|&Reverse((t, _, p))| (Nanos(t), p))
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
        let mut q = Queue::with_capacity(4);
        q.push(Nanos(5), 0);
        q.push(Nanos(3), 1);
        q.push(Nanos(5), 2);
        q.push(Nanos(3), 3);
        let order: Vec<u32> = std::iter::from_fn(|| q.pop().map(|(_, p)| p)).collect();
        assert_eq!(order, [1, 3, 0, 2]);
    }
}
