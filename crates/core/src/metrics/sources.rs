//! Per source (docs/semantics.md §3's `sources.csv`): what one limiter did
//! to each source's requests (a `[[traffic]]`, or a part of a trace split
//! by `source`), and how many of the source's clients it ever rejected.
//! Two bits per client in the span of client ids the source uses, not per
//! request: a generated source's clients are one run of ids, so the bits
//! cover that run only.

use crate::limiter::Decision;

/// A set of client ids, as bits over the span of ids it has held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Bits {
    /// The id of bit 0 of `words[0]` (a multiple of 64).
    base: u32,
    words: Vec<u64>,
}

impl Bits {
    /// Adds `id`; whether it was not there.
    #[inline]
    fn insert(&mut self, id: u32) -> bool {
        let at = (id as u64).wrapping_sub(self.base as u64) / 64;
        if id < self.base || at as usize >= self.words.len() {
            self.widen(id);
        }
        let (word, bit) = (
            (id - self.base) as usize / 64,
            1u64 << ((id - self.base) % 64),
        );
        let new = self.words[word] & bit == 0;
        self.words[word] |= bit;
        new
    }

    /// Makes room for `id`, below or above the span.
    #[cold]
    fn widen(&mut self, id: u32) {
        let first = id - id % 64;
        if self.words.is_empty() {
            self.base = first;
        } else if first < self.base {
            let more = ((self.base - first) / 64) as usize;
            self.words.splice(0..0, std::iter::repeat_n(0, more));
            self.base = first;
        }
        let word = ((id - self.base) / 64) as usize;
        if word >= self.words.len() {
            // Doubling keeps growth amortized; a source's clients arrive
            // in any order.
            let len = (word + 1).max(self.words.len() * 2);
            self.words.resize(len, 0);
        }
    }
}

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
    seen: Bits,
    limited: Bits,
}

impl SourceCounts {
    /// An attempt of `client` (`first`: its request's first), and the
    /// limiter's own decision on it (`None`: a chain member that was asked
    /// and overruled, see `Recorder::asked`). `member`: the limiter is a
    /// chain's member, which may be asked about a retry and not about its
    /// request's first attempt; any other limiter sees every request's
    /// first attempt, where its client is counted.
    #[inline]
    pub fn attempt(
        &mut self,
        client: u32,
        first: bool,
        member: bool,
        cost: u64,
        outcome: Option<Decision>,
    ) {
        self.attempts += 1;
        self.logical += first as u64;
        if first || member {
            self.clients += self.seen.insert(client) as u64;
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
                self.clients_limited += self.limited.insert(client) as u64;
            }
            None => {}
        }
    }

    /// Every count, in one order (what a key partition saves and sums).
    pub(crate) fn counts_mut(&mut self) -> [&mut u64; 8] {
        [
            &mut self.attempts,
            &mut self.logical,
            &mut self.admitted,
            &mut self.delayed,
            &mut self.rejected,
            &mut self.passed_cost,
            &mut self.clients,
            &mut self.clients_limited,
        ]
    }

    /// Drops the client bits once the run is over (the counts stay).
    pub fn finish(&mut self) {
        self.seen = Bits::default();
        self.limited = Bits::default();
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
        s.attempt(3, true, false, 1, Some(Decision::Admitted));
        s.attempt(3, false, false, 1, Some(rejected));
        s.attempt(3, false, false, 1, Some(rejected));
        s.attempt(
            200,
            true,
            true,
            2,
            Some(Decision::Delayed { delay: Nanos(5) }),
        );
        s.attempt(200, true, true, 2, None);
        // A retry alone makes a chain member's client seen (asked late).
        s.attempt(77, false, true, 1, Some(rejected));
        assert_eq!(
            (s.attempts, s.logical, s.admitted, s.delayed, s.rejected),
            (6, 3, 1, 1, 3)
        );
        assert_eq!((s.passed_cost, s.clients, s.clients_limited), (3, 3, 2));
        assert!(s.clients_limited <= s.clients);
    }

    #[test]
    fn bits_cover_the_span_of_ids_held_below_and_above() {
        let mut b = Bits::default();
        assert!(b.insert(1_000_000));
        assert_eq!((b.base, b.words.len()), (1_000_000, 1));
        assert!(b.insert(1_000_200));
        assert!(b.insert(999_000));
        assert!(b.base <= 999_000 && b.words.len() < 100);
        for id in [999_000, 1_000_000, 1_000_200] {
            assert!(!b.insert(id), "{id}");
        }
        assert!(b.insert(0) && !b.insert(0));
        assert_eq!(b.base, 0);
    }
}
