//! Several limits on one request (docs/semantics.md §13): a chain asks its
//! members, in order, about the same request at the same instant, and
//! decides for all of them.
//!
//! - [`ChainMode::AllOrNothing`] (nginx: every `limit_req` of a location).
//!   Each member decides on a copy of its key's state
//!   ([`Limiter::decide_detached`]). The first that would reject rejects
//!   the chain: the members after it are not asked, and every copy is
//!   dropped, so **no member's state changes**. Otherwise every copy is
//!   written back — each member counts the request exactly as it would
//!   alone — and the request waits the largest of the members' delays.
//!   (nginx's `ngx_http_limit_req_handler` looks the earlier zones up
//!   without accounting and `ngx_http_limit_req_account` commits them only
//!   when all passed.)
//! - [`ChainMode::EachCounts`] (envoyproxy/ratelimit: every descriptor's
//!   counter is incremented). Every member decides and counts as it would
//!   alone; the chain rejects if any member rejected; a passed request
//!   waits the largest delay.
//!
//! A rejection's retry-after is the largest of the members' retry-afters
//! at that instant, a member that would pass counting 0 and one that never
//! passes making it never: each member's admissible moments form a ray
//! when nothing else arrives, so the chain's are their intersection, the
//! ray from the largest start. Each member is consulted in the state the
//! decision left it in: under `EachCounts` a member that rejected gives its
//! own retry-after; every other member is asked again on a copy, its
//! rejection not counted ([`Limiter::probe`]) — under `AllOrNothing` no
//! member counts a rejected request, and under `EachCounts` a member that
//! passed has counted it already.
//!
//! A member whose key is empty for a request is not asked (nginx skips a
//! zone whose key is empty); a request no member is asked about passes.

use super::{Decision, Headers, Limiter};
use crate::clock::Nanos;

/// How a chain's members decide together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainMode {
    /// nginx: a request one member rejects is counted by none.
    AllOrNothing,
    /// envoyproxy/ratelimit: every member counts every request.
    EachCounts,
}

impl ChainMode {
    /// The names a scenario gives the modes.
    pub const NAMES: &'static [&'static str] = &["all_or_nothing", "each_counts"];

    pub fn as_str(self) -> &'static str {
        match self {
            ChainMode::AllOrNothing => "all_or_nothing",
            ChainMode::EachCounts => "each_counts",
        }
    }

    pub fn parse(name: &str) -> Option<ChainMode> {
        match name {
            "all_or_nothing" => Some(ChainMode::AllOrNothing),
            "each_counts" => Some(ChainMode::EachCounts),
            _ => None,
        }
    }
}

/// What a chain decided about one request, and which member decided it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainDecision {
    pub decision: Decision,
    /// The member that rejected (the first in order), or that set the delay
    /// (the longest; the first of equal ones); `None` when the request
    /// passed at once.
    pub by: Option<usize>,
}

/// Limiters that decide each request together.
pub struct Chain {
    mode: ChainMode,
    members: Vec<Box<dyn Limiter>>,
    /// `(member, key, ticket)` of the copies an `AllOrNothing` decision
    /// holds until it commits or drops them; kept to reuse its memory.
    pending: Vec<(usize, u32, u32)>,
}

impl Chain {
    /// `members` in the order they are asked.
    pub fn new(mode: ChainMode, members: Vec<Box<dyn Limiter>>) -> Chain {
        let pending = Vec::with_capacity(members.len());
        Chain {
            mode,
            members,
            pending,
        }
    }

    pub fn mode(&self) -> ChainMode {
        self.mode
    }

    /// The members, in order (for their footprints).
    pub fn members_mut(&mut self) -> &mut [Box<dyn Limiter>] {
        &mut self.members
    }

    /// Decides a request of `cost` arriving at `now`. `keys[i]` is member
    /// `i`'s key for it, `None` when that key is empty (the member is not
    /// asked). `own[i]` receives member `i`'s own decision when it was
    /// asked, else `None`.
    pub fn decide(
        &mut self,
        keys: &[Option<u32>],
        now: Nanos,
        cost: u64,
        own: &mut [Option<Decision>],
    ) -> ChainDecision {
        debug_assert_eq!(keys.len(), self.members.len());
        debug_assert_eq!(own.len(), self.members.len());
        own.fill(None);
        let rejected_by = match self.mode {
            ChainMode::AllOrNothing => self.all_or_nothing(keys, now, cost, own),
            ChainMode::EachCounts => {
                for (i, member) in self.members.iter_mut().enumerate() {
                    if let Some(key) = keys[i] {
                        own[i] = Some(member.decide(key, now, cost));
                    }
                }
                own.iter().position(|d| d.is_some_and(|d| !d.passes()))
            }
        };
        match rejected_by {
            Some(by) => ChainDecision {
                decision: Decision::Rejected {
                    retry_after: self.retry_after(keys, now, cost, own),
                },
                by: Some(by),
            },
            None => longest_delay(own),
        }
    }

    /// The `AllOrNothing` asking: the member that rejected, if one did.
    fn all_or_nothing(
        &mut self,
        keys: &[Option<u32>],
        now: Nanos,
        cost: u64,
        own: &mut [Option<Decision>],
    ) -> Option<usize> {
        self.pending.clear();
        let mut rejected_by = None;
        for (i, member) in self.members.iter_mut().enumerate() {
            let Some(key) = keys[i] else { continue };
            let (decision, ticket) = member.decide_detached(key, now, cost);
            own[i] = Some(decision);
            self.pending.push((i, key, ticket));
            if !decision.passes() {
                rejected_by = Some(i);
                break;
            }
        }
        for &(i, key, ticket) in &self.pending {
            match rejected_by {
                None => self.members[i].write_back(key, ticket, now),
                Some(_) => self.members[i].discard(ticket),
            }
        }
        rejected_by
    }

    /// The chain's retry-after at `now`: the largest of the members'
    /// (those not asked consulted on copies), `None` if one never passes.
    fn retry_after(
        &mut self,
        keys: &[Option<u32>],
        now: Nanos,
        cost: u64,
        own: &[Option<Decision>],
    ) -> Option<Nanos> {
        let mut longest = Nanos::ZERO;
        let each_counts = self.mode == ChainMode::EachCounts;
        for (i, member) in self.members.iter_mut().enumerate() {
            let Some(key) = keys[i] else { continue };
            let decision = match own[i] {
                // Under `EachCounts` a member that rejected counted the
                // rejection as it would alone: its retry-after is its own.
                Some(d) if each_counts && !d.passes() => d,
                // Every other member is asked again, on a copy of its state
                // as the decision left it, the rejection not counted: under
                // `AllOrNothing` no member counts a rejected request, and
                // under `EachCounts` a member that passed has counted it.
                _ => member.probe(key, now, cost),
            };
            match decision {
                Decision::Rejected { retry_after: None } => return None,
                Decision::Rejected {
                    retry_after: Some(wait),
                } => longest = longest.max(wait),
                Decision::Admitted | Decision::Delayed { .. } => {}
            }
        }
        Some(longest)
    }
}

impl Chain {
    /// The header fields for a request whose member keys were `keys`, at
    /// `now`, after its decision: the smallest remaining and the latest
    /// reset of the members asked (docs/semantics.md §11).
    pub fn headers(&self, keys: &[Option<u32>], now: Nanos) -> Headers {
        self.members
            .iter()
            .zip(keys)
            .filter_map(|(member, key)| key.map(|k| member.headers(k, now)))
            .fold(Headers::OPEN, Headers::and)
    }
}

/// A passed request: it waits the longest of the members' delays.
fn longest_delay(own: &[Option<Decision>]) -> ChainDecision {
    let mut passed = ChainDecision {
        decision: Decision::Admitted,
        by: None,
    };
    for (i, d) in own.iter().enumerate() {
        if let Some(Decision::Delayed { delay }) = *d {
            let longer = match passed.decision {
                Decision::Delayed { delay: current } => delay > current,
                _ => true,
            };
            if longer {
                passed = ChainDecision {
                    decision: Decision::Delayed { delay },
                    by: Some(i),
                };
            }
        }
    }
    passed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{parse_rate, Rate};
    use crate::limiter::{
        fixed_window, leaky_bucket, sliding_counter, sliding_log, token_bucket, Algorithm,
    };

    fn rate(text: &str) -> Rate {
        parse_rate(text).unwrap()
    }

    fn bucket(capacity: u64, per: &str) -> Box<dyn Limiter> {
        Algorithm::TokenBucket(token_bucket::Config {
            capacity,
            rate: rate(per),
        })
        .build()
    }

    fn nginx(per: &str, queue: u64) -> Box<dyn Limiter> {
        Algorithm::LeakyBucket(leaky_bucket::Config {
            rate: rate(per),
            queue,
            delay: 0,
            arithmetic: leaky_bucket::Arithmetic::Exact,
        })
        .build()
    }

    const S: u64 = 1_000_000_000;
    const MS: u64 = 1_000_000;

    fn rejected(after: u64) -> Decision {
        Decision::Rejected {
            retry_after: Some(Nanos(after)),
        }
    }

    /// Decides one request at `t` ns on key 0 of every member.
    fn ask(c: &mut Chain, t: u64) -> (ChainDecision, Vec<Option<Decision>>) {
        let n = c.members.len();
        let mut own = vec![None; n];
        let d = c.decide(&vec![Some(0); n], Nanos(t), 1, &mut own);
        (d, own)
    }

    // Conformance vectors, computed by hand. Members: A a token bucket of
    // 2 refilled 1/s, B one of 1 refilled 1/s, both full at t = 0.

    #[test]
    fn all_or_nothing_a_rejection_by_the_second_member_leaves_the_first_untouched() {
        let mut c = Chain::new(
            ChainMode::AllOrNothing,
            vec![bucket(2, "1/1s"), bucket(1, "1/1s")],
        );
        // t=0: A 2→1, B 1→0: passes, both counted.
        assert_eq!(ask(&mut c, 0).0.decision, Decision::Admitted);
        // t=0: A would pass (1→0) but B is empty (next token at 1s): the
        // chain rejects, by B, and A keeps its token.
        let (d, own) = ask(&mut c, 0);
        assert_eq!((d.decision, d.by), (rejected(S), Some(1)));
        assert_eq!(own, vec![Some(Decision::Admitted), Some(rejected(S))]);
        // Again at t=0: A still holds its token, so it would pass again.
        let (d, own) = ask(&mut c, 0);
        assert_eq!(
            (d.decision, own[0]),
            (rejected(S), Some(Decision::Admitted))
        );
        // t=1s: A 1+1=2 → 1, B 0+1 → 0: passes.
        assert_eq!(ask(&mut c, S).0.decision, Decision::Admitted);
        // t=1s: A 1 → 0 would pass, B empty: rejected, A untouched...
        assert_eq!(ask(&mut c, S).0.by, Some(1));
        // ...so at t=2s A has 1+1 = 2 and passes twice alone would; the
        // chain passes once (B refills to 1).
        assert_eq!(ask(&mut c, 2 * S).0.decision, Decision::Admitted);
    }

    #[test]
    fn each_counts_every_member_counts_every_request() {
        let mut c = Chain::new(
            ChainMode::EachCounts,
            vec![bucket(2, "1/1s"), bucket(1, "1/1s")],
        );
        assert_eq!(ask(&mut c, 0).0.decision, Decision::Admitted);
        // t=0: A 1→0 passes, B empty rejects: the chain rejects, by B, and
        // A has counted the request.
        let (d, own) = ask(&mut c, 0);
        assert_eq!((d.decision, d.by), (rejected(S), Some(1)));
        assert_eq!(own, vec![Some(Decision::Admitted), Some(rejected(S))]);
        // t=0: now A is empty too: both reject; by the first, A.
        let (d, own) = ask(&mut c, 0);
        assert_eq!((d.decision, d.by), (rejected(S), Some(0)));
        assert_eq!(own, vec![Some(rejected(S)), Some(rejected(S))]);
    }

    #[test]
    fn each_counts_retry_after_sees_what_the_passing_members_counted() {
        // A: 1 token refilled 1 per 2 s; B: 2 tokens refilled 1 per 4 s.
        let mut c = Chain::new(
            ChainMode::EachCounts,
            vec![bucket(1, "1/2s"), bucket(2, "1/4s")],
        );
        // t=0: both pass (A 1→0, B 2→1).
        assert_eq!(ask(&mut c, 0).0.decision, Decision::Admitted);
        // t=1s: A holds 0.5 and rejects (a token in 1 s); B holds 1.25 and
        // counts the request (→ 0.25): rejected, by A.
        let (d, own) = ask(&mut c, S);
        assert_eq!(own, vec![Some(rejected(S)), Some(Decision::Admitted)]);
        // B, having counted it, has a whole token again only 3 s later
        // (0.75 at 1/4 s⁻¹): the retry-after is 3 s, not A's 1 s.
        assert_eq!((d.decision, d.by), (rejected(3 * S), Some(0)));
        // Exact: 1 ns earlier B still rejects; at 4 s both pass.
        let mut probe = c.members.iter_mut().map(|m| {
            let (d, t) = m.decide_detached(0, Nanos(4 * S - 1), 1);
            m.discard(t);
            d.passes()
        });
        assert_eq!((probe.next(), probe.next()), (Some(true), Some(false)));
        assert_eq!(ask(&mut c, 4 * S).0.decision, Decision::Admitted);
    }

    #[test]
    fn a_passed_request_waits_the_longest_delay() {
        // nginx-style shapers: A leaks 10/s, B 2/s, each with a queue of 5.
        let mut c = Chain::new(
            ChainMode::AllOrNothing,
            vec![nginx("10/1s", 5), nginx("2/1s", 5)],
        );
        assert_eq!(ask(&mut c, 0).0.decision, Decision::Admitted);
        // The second request at t=0 waits one drip of each: 100 ms in A,
        // 500 ms in B; the chain waits 500 ms, set by B.
        let (d, own) = ask(&mut c, 0);
        assert_eq!(
            own,
            vec![
                Some(Decision::Delayed {
                    delay: Nanos(100 * MS)
                }),
                Some(Decision::Delayed {
                    delay: Nanos(500 * MS)
                })
            ]
        );
        assert_eq!(
            (d.decision, d.by),
            (
                Decision::Delayed {
                    delay: Nanos(500 * MS)
                },
                Some(1)
            )
        );
    }

    #[test]
    fn the_retry_after_is_the_largest_members_and_asks_no_one_after_the_rejection() {
        // A: 1 token refilled 1/s; C: 1 token refilled 1 per 4 s.
        let mut c = Chain::new(
            ChainMode::AllOrNothing,
            vec![bucket(1, "1/1s"), bucket(1, "1/4s")],
        );
        assert_eq!(ask(&mut c, 0).0.decision, Decision::Admitted);
        // t=0: A rejects (retry 1 s); C is not asked, but it would reject
        // until 4 s: the chain's retry-after is 4 s.
        let (d, own) = ask(&mut c, 0);
        assert_eq!((d.decision, d.by), (rejected(4 * S), Some(0)));
        assert_eq!(own, vec![Some(rejected(S)), None]);
        // Exact: at 4 s − 1 ns C still rejects; at 4 s both pass.
        assert_eq!(ask(&mut c, 4 * S - 1).0.by, Some(1));
        assert_eq!(ask(&mut c, 4 * S).0.decision, Decision::Admitted);
    }

    #[test]
    fn a_member_that_never_passes_makes_the_retry_after_never() {
        // A request of cost 3 never fits a bucket of 2.
        let mut c = Chain::new(
            ChainMode::EachCounts,
            vec![bucket(5, "1/1s"), bucket(2, "1/1s")],
        );
        let mut own = vec![None; 2];
        let d = c.decide(&[Some(0), Some(0)], Nanos(0), 3, &mut own);
        assert_eq!(d.decision, Decision::Rejected { retry_after: None });
    }

    #[test]
    fn a_member_whose_key_is_empty_is_not_asked() {
        let mut c = Chain::new(
            ChainMode::AllOrNothing,
            vec![bucket(1, "1/1s"), bucket(1, "1/1s")],
        );
        let mut own = vec![None; 2];
        // Only B is asked, twice: it passes, then rejects.
        let d = c.decide(&[None, Some(0)], Nanos(0), 1, &mut own);
        assert_eq!(
            (d.decision, own.clone()),
            (Decision::Admitted, vec![None, Some(Decision::Admitted)])
        );
        let d = c.decide(&[None, Some(0)], Nanos(0), 1, &mut own);
        assert_eq!((d.decision, d.by), (rejected(S), Some(1)));
        // A was never asked: its token is there.
        let d = c.decide(&[Some(0), None], Nanos(0), 1, &mut own);
        assert_eq!(d.decision, Decision::Admitted);
        // No member asked: the request passes.
        let d = c.decide(&[None, None], Nanos(0), 1, &mut own);
        assert_eq!((d.decision, own), (Decision::Admitted, vec![None, None]));
    }

    #[test]
    fn all_or_nothing_does_not_count_a_rejection_even_for_a_counting_variant() {
        // A sliding log of 1 per second that logs rejected requests too.
        // Alone, the rejection at 0.5 s is logged and still in the window
        // at 1.2 s; in the chain nothing changes on a rejection
        // (docs/semantics.md §13), so only the pass at 0 was logged, and it
        // has left the window by 1.2 s.
        let log = Algorithm::SlidingLog(sliding_log::Config {
            limit: 1,
            window: Nanos(S),
            count_rejected: true,
            boundary: Default::default(),
        });
        let mut c = Chain::new(ChainMode::AllOrNothing, vec![log.build()]);
        let mut alone = log.build();
        assert_eq!(ask(&mut c, 0).0.decision, alone.decide(0, Nanos(0), 1));
        // At 0.5 s both reject; alone the rejection is logged first, so
        // the retry waits for it (1 s); the chain logged nothing, and the
        // request passes when the pass at 0 leaves the window: 0.5 s.
        assert_eq!(alone.decide(0, Nanos(S / 2), 1), rejected(S));
        assert_eq!(ask(&mut c, S / 2).0.decision, rejected(S / 2));
        // Exact: a nanosecond sooner it is still rejected.
        assert!(!c.members[0].probe(0, Nanos(S - 1), 1).passes());
        assert_eq!(c.members[0].probe(0, Nanos(S), 1), Decision::Admitted);
        let t = S + S / 5;
        assert_eq!(ask(&mut c, t).0.decision, Decision::Admitted);
        assert!(!alone.decide(0, Nanos(t), 1).passes());
    }

    /// Members for the property below: counting variants of the three
    /// window rules, a bucket, a log that does not count, a shaper.
    fn member(which: u8) -> Box<dyn Limiter> {
        let log = |limit, ms, count_rejected| {
            Algorithm::SlidingLog(sliding_log::Config {
                limit,
                window: Nanos(ms * MS),
                count_rejected,
                boundary: Default::default(),
            })
        };
        match which {
            0 => log(3, 1000, true),
            1 => Algorithm::SlidingCounter(sliding_counter::Config {
                limit: 3,
                window: Nanos(S),
                count_rejected: true,
                weight: Default::default(),
            }),
            2 => Algorithm::FixedWindow(fixed_window::Config {
                limit: 2,
                window: Nanos(500 * MS),
                count_rejected: true,
                align: Default::default(),
            }),
            3 => return bucket(2, "3/1s"),
            4 => log(4, 700, false),
            _ => return nginx("2/1s", 1),
        }
        .build()
    }

    proptest::proptest! {
        // docs/semantics.md §13: a chain's retry-after d is exact — after
        // the same requests, the same request passes at t + d, and not at
        // t + d − 1 ns — whichever members count rejected requests.
        #[test]
        fn a_chains_retry_after_is_exact(
            members in proptest::collection::vec(0u8..6, 1..4),
            each_counts in proptest::bool::ANY,
            requests in proptest::collection::vec((0u64..400, 1u64..4), 1..20),
        ) {
            let mode = if each_counts { ChainMode::EachCounts } else { ChainMode::AllOrNothing };
            let chain = || Chain::new(mode, members.iter().map(|&m| member(m)).collect());
            let keys = vec![Some(0); members.len()];
            let mut own = vec![None; members.len()];
            let mut t = 0;
            let times: Vec<u64> = requests.iter().map(|(gap, _)| { t += gap * MS; t }).collect();
            // The chain after the requests up to `i`, then one more at `at`.
            let mut after = |i: usize, at: u64| {
                let mut c = chain();
                for (j, &(_, cost)) in requests.iter().enumerate().take(i + 1) {
                    c.decide(&keys, Nanos(times[j]), cost, &mut own);
                }
                c.decide(&keys, Nanos(at), requests[i].1, &mut own).decision
            };
            let mut c = chain();
            let mut own_here = vec![None; members.len()];
            for (i, &(_, cost)) in requests.iter().enumerate() {
                let d = c.decide(&keys, Nanos(times[i]), cost, &mut own_here).decision;
                if let Decision::Rejected { retry_after: Some(wait) } = d {
                    proptest::prop_assert!(wait.0 >= 1);
                    proptest::prop_assert!(after(i, times[i] + wait.0).passes(), "{i}: {wait:?}");
                    if wait.0 > 1 {
                        proptest::prop_assert!(!after(i, times[i] + wait.0 - 1).passes(), "{i}: {wait:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn each_counts_asks_a_passing_counting_member_without_counting_again() {
        // A counts rejections: a sliding log of 4 per second; B: a window
        // of 2 per 250 ms. Requests of cost 2.
        let log = Algorithm::SlidingLog(sliding_log::Config {
            limit: 4,
            window: Nanos(S),
            count_rejected: true,
            boundary: Default::default(),
        });
        let window = Algorithm::FixedWindow(fixed_window::Config {
            limit: 2,
            window: Nanos(S / 4),
            count_rejected: false,
            align: Default::default(),
        });
        let mut c = Chain::new(ChainMode::EachCounts, vec![log.build(), window.build()]);
        let mut own = vec![None; 2];
        let at = |c: &mut Chain, t: u64, own: &mut Vec<Option<Decision>>| {
            c.decide(&[Some(0), Some(0)], Nanos(t), 2, own)
        };
        assert_eq!(at(&mut c, 0, &mut own).decision, Decision::Admitted);
        // At 0.1 s A logs the request (4 of 4), B's window is full: the
        // chain rejects, by B. A passes the same request again only when
        // the entry at 0 leaves, at 1 s: 0.9 s, not the 1 s a rejection
        // A counted first would take.
        let d = at(&mut c, S / 10, &mut own);
        assert_eq!((d.decision, d.by), (rejected(9 * S / 10), Some(1)));
        assert!(!c.members[0].probe(0, Nanos(S - 1), 2).passes());
        assert_eq!(at(&mut c, S, &mut own).decision, Decision::Admitted);
    }
}
