//! Queue length: refuse when the backend's waiting room is already long.
//!
//! **What it models.** Load shedding on queue depth — a server that
//! returns 503 once `max_queue` requests are waiting for a worker:
//!
//! ```text
//! admit  ⇔  waiting < max_queue
//! ```
//!
//! where `waiting` is the backend queue's length at the moment of the
//! request (not counting those being served). It is global, not per key,
//! and keeps no state of its own: the engine hands it the queue length.
//! A refusal has no retry-after (the queue drains when workers free, which
//! only the engine knows).
//!
//! **When to pick it.** To bound queueing delay directly: with `w` workers
//! and mean service time `s`, a request admitted behind `max_queue` others
//! waits about `max_queue · s / w`.

use super::Decision;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueLength {
    pub max_queue: u64,
}

impl QueueLength {
    pub fn new(max_queue: u64) -> QueueLength {
        QueueLength { max_queue }
    }

    /// A request arrives while `waiting` requests are in the backend queue.
    pub fn decide(&self, waiting: u64) -> Decision {
        if waiting < self.max_queue {
            Decision::Admitted
        } else {
            Decision::Rejected { retry_after: None }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_while_fewer_than_max_queue_are_waiting() {
        let q = QueueLength::new(3);
        for (waiting, passes) in [(0, true), (2, true), (3, false), (10, false)] {
            assert_eq!(q.decide(waiting).passes(), passes, "waiting {waiting}");
        }
        assert_eq!(q.decide(3), Decision::Rejected { retry_after: None });
    }

    #[test]
    fn a_max_queue_of_zero_refuses_everything() {
        // waiting < 0 never holds: every request is refused.
        assert!(!QueueLength::new(0).decide(0).passes());
    }
}
