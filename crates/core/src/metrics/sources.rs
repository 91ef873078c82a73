//! Per source (docs/semantics.md §9): what one limiter did to each
//! `[[traffic]]` source's requests, and how many of the source's clients
//! it ever rejected. Two bits per client per source, not per request.

use crate::limiter::Decision;

/// One source's counts at one limiter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceCounts {
    pub attempts: u64,
    /// First attempts.
    pub logical: u64,
    pub admitted: u64,
    pub delayed: u64,
    pub rejected: u64,
    /// Cost of the attempts that passed.
    pub passed_cost: u64,
    /// Distinct clients with an attempt, and with a rejected one.
    pub clients: u64,
    pub clients_limited: u64,
    /// Bit per client id: seen, and rejected at least once.
    seen: Vec<u64>,
    limited: Vec<u64>,
}

/// Sets `id`'s bit; whether it was clear.
#[inline]
fn set(bits: &mut Vec<u64>, id: u32) -> bool {
    let (word, bit) = (id as usize / 64, 1u64 << (id % 64));
    if word >= bits.len() {
        grow(bits, word);
    }
    let clear = bits[word] & bit == 0;
    bits[word] |= bit;
    clear
}

#[cold]
fn grow(bits: &mut Vec<u64>, word: usize) {
    bits.resize(word + 1, 0);
}

impl SourceCounts {
    /// Counts for a population of `clients` (its bits made up front).
    pub fn new(clients: usize) -> SourceCounts {
        SourceCounts {
            seen: vec![0; clients.div_ceil(64)],
            limited: vec![0; clients.div_ceil(64)],
            ..SourceCounts::default()
        }
    }

    /// An attempt of `client` (`first`: its request's first), and the
    /// limiter's own decision on it (`None`: a chain member that was asked
    /// and overruled, see `Recorder::asked`).
    #[inline]
    pub fn attempt(&mut self, client: u32, first: bool, cost: u64, outcome: Option<Decision>) {
        self.attempts += 1;
        // Every request's first attempt reaches the limiter when any of its
        // attempts does (the sources a limiter sees decide, not the
        // attempt), so a client is seen at a first attempt.
        if first {
            self.logical += 1;
            self.clients += set(&mut self.seen, client) as u64;
        }
        match outcome {
            Some(Decision::Admitted) => {
                self.admitted += 1;
                self.passed_cost += cost;
            }
            Some(Decision::Delayed { .. }) => {
                self.delayed += 1;
                self.passed_cost += cost;
            }
            Some(Decision::Rejected { .. }) => {
                self.rejected += 1;
                self.clients_limited += set(&mut self.limited, client) as u64;
            }
            None => {}
        }
    }

    /// Drops the client bits once the run is over (the counts stay).
    pub fn finish(&mut self) {
        self.seen = Vec::new();
        self.limited = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Nanos;

    #[test]
    fn clients_count_once_and_limited_ones_once() {
        let mut s = SourceCounts::default();
        let rejected = Decision::Rejected { retry_after: None };
        s.attempt(3, true, 1, Some(Decision::Admitted));
        s.attempt(3, false, 1, Some(rejected));
        s.attempt(3, false, 1, Some(rejected));
        s.attempt(200, true, 2, Some(Decision::Delayed { delay: Nanos(5) }));
        s.attempt(200, true, 2, None);
        assert_eq!(
            (s.attempts, s.logical, s.admitted, s.delayed, s.rejected),
            (5, 3, 1, 1, 2)
        );
        assert_eq!((s.passed_cost, s.clients, s.clients_limited), (3, 2, 1));
    }
}
