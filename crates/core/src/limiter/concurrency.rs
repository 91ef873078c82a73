//! Concurrency: a cap on each key's requests in flight.
//!
//! **What it models.** A per-client connection or request-slot limit, as
//! in nginx's `limit_conn`: a key's requests that have passed and not yet
//! been responded to are *in flight*, and
//!
//! ```text
//! admit  ⇔  in_flight(key) < max_in_flight;   then in_flight(key) += 1
//! when one of its passed requests is responded to: in_flight(key) −= 1
//! ```
//!
//! It counts requests, not cost. It knows no time: a slot frees when a
//! response arrives, which only the engine knows, so a refusal has no
//! retry-after.
//!
//! **When to pick it.** When what a client can hurt is the backend's
//! parallelism, not its request rate: slow requests cost more slots.

use super::Decision;

/// In-flight counts per key (keys are dense `u32`s).
#[derive(Debug, Clone)]
pub struct Concurrency {
    max_in_flight: u64,
    in_flight: Vec<u64>,
}

impl Concurrency {
    pub fn new(max_in_flight: u64) -> Concurrency {
        Concurrency {
            max_in_flight,
            in_flight: Vec::new(),
        }
    }

    /// `key`'s requests in flight.
    pub fn in_flight(&self, key: u32) -> u64 {
        self.in_flight.get(key as usize).copied().unwrap_or(0)
    }

    /// Whether a request of `key` would be admitted now.
    pub fn has_room(&self, key: u32) -> bool {
        self.in_flight(key) < self.max_in_flight
    }

    /// A request of `key` arrives: admitted (and counted) iff fewer than
    /// `max_in_flight` of the key's are in flight.
    pub fn decide(&mut self, key: u32) -> Decision {
        let k = key as usize;
        if k >= self.in_flight.len() {
            self.in_flight.resize(k + 1, 0);
        }
        if self.in_flight[k] < self.max_in_flight {
            self.in_flight[k] += 1;
            Decision::Admitted
        } else {
            Decision::Rejected { retry_after: None }
        }
    }

    /// A passed request of `key` was responded to. (Which moment that is
    /// for a request its client gave up on — the client's timeout, or the
    /// backend's response to it — is the caller's choice.)
    pub fn on_complete(&mut self, key: u32) {
        let slot = self.in_flight.get_mut(key as usize);
        debug_assert!(
            slot.as_deref().is_some_and(|&n| n > 0),
            "on_complete for key {key} with nothing in flight"
        );
        if let Some(n) = slot {
            *n = n.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NO: Decision = Decision::Rejected { retry_after: None };

    #[test]
    fn a_key_passes_max_in_flight_then_waits_for_a_response() {
        let mut c = Concurrency::new(2);
        assert_eq!(c.decide(7), Decision::Admitted);
        assert_eq!(c.decide(7), Decision::Admitted);
        assert_eq!(c.decide(7), NO);
        assert_eq!(c.in_flight(7), 2, "a refusal takes no slot");
        c.on_complete(7);
        assert_eq!(c.in_flight(7), 1);
        assert_eq!(c.decide(7), Decision::Admitted);
        assert_eq!(c.decide(7), NO);
    }

    #[test]
    fn keys_have_their_own_slots() {
        let mut c = Concurrency::new(1);
        assert_eq!(c.decide(0), Decision::Admitted);
        assert_eq!(c.decide(3), Decision::Admitted);
        assert_eq!(c.decide(0), NO);
        c.on_complete(3);
        assert_eq!((c.in_flight(0), c.in_flight(3)), (1, 0));
        assert_eq!(c.decide(3), Decision::Admitted);
    }

    #[test]
    fn a_max_of_zero_admits_nothing() {
        let mut c = Concurrency::new(0);
        assert_eq!(c.decide(0), NO);
    }
}
