//! Streaming metrics for one limiter: counters, a time series, delay
//! percentiles and `peak_in_window` — all in memory that grows with keys and
//! time buckets, never with the number of requests.
//!
//! The [`Recorder`] (here) counts each attempt and pass as it happens;
//! `window.rs` holds each id's slot with its window of passes, `series.rs`
//! the time-series buckets, `histogram.rs` the delay percentiles, and
//! `stats.rs` what is derived from the counts when the run ends (per key,
//! per client, fairness, collateral rejections).

use crate::calendar::Calendar;
use crate::clock::Nanos;
use crate::limiter::Decision;

mod calls;
mod histogram;
mod saved;
mod series;
mod sources;
mod stats;
mod window;

pub use calls::{Call, Decided};
pub use histogram::DelayHistogram;
pub use series::SeriesBucket;
pub use sources::SourceCounts;
pub use stats::{ClientCounts, KeyCounts};
use window::*;

/// How many releases ahead the recorder asks for their keys' slots.
const PREFETCH_AHEAD: usize = 8;

/// Everything measured about one limiter over a run.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    window: u64,
    /// The start of the aligned policy window of the latest pass.
    aligned: Aligned,
    limit: u64,
    resolution: u64,
    max_buckets: usize,
    /// The series bucket last found, `(its start, its index)`: most times
    /// asked for fall in it, found without a division.
    last_bucket: (u64, usize),
    /// Clients in the population (ids past it are keys only).
    clients: usize,
    /// Passes still in the future (a shaper's releases), released into the
    /// per-key windows in time order by [`Recorder::advance`].
    future: Calendar<(u64, u64, u32, u64)>,
    future_seq: u64,
    pub attempts: u64,
    pub admitted: u64,
    pub delayed: u64,
    pub rejected: u64,
    /// A chain member's attempts that it would have passed and the chain
    /// rejected ([`Recorder::asked`]).
    pub overruled: u64,
    pub series: Vec<SeriesBucket>,
    pub delays: DelayHistogram,
    /// Per id: the client's counts (for the client of that id) and the
    /// window of passes (for the key of that id), side by side so that a
    /// client keyed by itself costs one cache line, not two.
    ids: Vec<PerId>,
    /// What does not fit an id's slot: counts past 32 bits, peaks of
    /// `u32::MAX` or more, and the windows of keys with more passes in
    /// them than a slot holds.
    wide: Wide,
    spills: Spills,
    /// Largest total cost passed for one key within any `(s − W, s]`.
    pub peak_in_window: u64,
    /// Where that peak ended (`s`) and its key.
    pub peak_at: Option<(Nanos, u32)>,
    /// First attempts: one per logical request.
    pub logical: u64,
    /// Logical requests whose client stopped retrying.
    pub gave_up: u64,
    /// Logical requests whose next retry falls after the end of the run.
    pub pending_at_end: u64,
    /// From a request's first attempt to the moment it passes.
    pub time_to_success: DelayHistogram,
    /// Passed cost beyond the policy limit, per key per aligned policy
    /// window, summed over keys and windows…
    pub overshoot: u64,
    /// …and the most in one key's window.
    pub overshoot_max: u64,
    /// The wait every decision added before the client heard it (a store
    /// round trip, or the time to give up on the store).
    pub added_latency: DelayHistogram,
    /// Operations sent to a shared store (reads and writes).
    pub store_ops: u64,
    /// Decisions taken because the store failed, by how.
    pub fault_open: u64,
    pub fault_closed: u64,
    pub fault_fallback: u64,
    /// Rejections an instance made from its over-limit cache.
    pub cache_rejections: u64,
    /// Cost of all rejected attempts…
    rejected_cost: u64,
    /// …and of those that passed: what the one source's counts take at
    /// the close (see [`Recorder::counts_one_source`]; not saved, as a
    /// recorder is saved closed).
    passed_cost: u64,
    /// Rejected attempts that would have passed had the client had a key of
    /// its own, and their cost (see [`Recorder::collateral`]).
    collateral: u64,
    collateral_cost: u64,
    /// Per source, by id (see [`crate::scenario::Scenario::sources`] and
    /// [`Recorder::with_sources`]).
    pub sources: Vec<SourceCounts>,
    /// A chain member's recorder ([`Recorder::for_member`]).
    member: bool,
    /// For a key partition's journal (docs/semantics.md §12): the number
    /// of the run's event being handled, set by the engine…
    pub event: u64,
    /// …the event that decided each pass still in the future, by its
    /// sequence number, while [`Recorder::track_origins`]…
    origins: Option<std::collections::HashMap<u64, u64>>,
    /// …and of the pass that set `peak_at`: whether it was released (a
    /// delayed pass), and the event that decided it.
    pub peak_origin: (bool, u64),
}

impl Recorder {
    /// `window` and `limit` are the policy's (`peak_in_window` uses the
    /// window); `resolution` is the bucket width; `duration` sizes the
    /// series up front; `clients` sizes the per-client table.
    ///
    /// The series plans `duration / resolution + 1` buckets, at most
    /// [`MAX_BUCKETS`](crate::scenario::MAX_BUCKETS) + 1 (scenario
    /// validation keeps it there; this holds for any caller), and never
    /// grows past twice that: its memory is bounded whatever the duration.
    pub fn new(
        window: Nanos,
        limit: u64,
        resolution: Nanos,
        duration: Nanos,
        clients: usize,
    ) -> Self {
        let buckets = crate::scenario::planned_buckets(resolution, duration)
            .min(crate::scenario::MAX_BUCKETS + 1) as usize;
        Recorder {
            window: window.0,
            limit,
            max_buckets: 2 * buckets,
            resolution: resolution.0.max(1),
            series: vec![SeriesBucket::default(); buckets],
            ids: {
                let mut ids = Vec::new();
                crate::cache::grow_with(&mut ids, clients, PerId::default);
                ids
            },
            clients,
            ..Recorder::default()
        }
    }

    /// Counts per source too, for a scenario of `n` sources.
    pub fn with_sources(mut self, n: usize) -> Self {
        self.sources = vec![SourceCounts::default(); n];
        self
    }

    /// Remembers which event decided each pass (see `peak_origin`).
    pub fn track_origins(&mut self) {
        self.origins.get_or_insert_with(Default::default);
    }

    /// The recorder of a chain's member, which may be asked about a retry
    /// and not about its request's first attempt.
    pub fn for_member(mut self) -> Self {
        self.member = true;
        self
    }

    /// An attempt of `source`'s `client` and this limiter's own decision on
    /// it (`None`: asked and overruled), for the per-source counts. A
    /// run of one source, not a chain's member, takes them from its own
    /// counts at the close instead (see [`Recorder::counts_one_source`]).
    #[inline]
    pub fn source(
        &mut self,
        source: u32,
        client: u32,
        first: bool,
        cost: u64,
        outcome: Option<Decision>,
    ) {
        if self.counts_one_source() {
            return;
        }
        if let Some(s) = self.sources.get_mut(source as usize) {
            s.attempt(client, first, self.member, cost, outcome);
        }
    }

    /// Whether the recorder's one source's counts are its own, read when
    /// it closes ([`Recorder::one_source`]) rather than counted with each
    /// attempt: a run of one source, whose recorder is not a chain
    /// member's. Each attempt such a recorder is told of comes with its
    /// [`Recorder::attempt`] (both from [`Recorder::decided`]), which
    /// counts all that the source's counts would.
    #[inline(always)]
    fn counts_one_source(&self) -> bool {
        self.sources.len() == 1 && !self.member
    }

    /// The counts of a recorder's one source (see
    /// [`Recorder::counts_one_source`]), from its own: its attempts,
    /// first attempts, outcomes and passed cost, and its clients with a
    /// first attempt and with a rejected one, read from every id's slot
    /// (a slot only a key's holds no client's counts). Read when it
    /// closes, once: a recorder loaded or merged closed is not closed
    /// again (its passed cost is not saved).
    fn one_source(&self) -> SourceCounts {
        let mut s = SourceCounts::default();
        (s.attempts, s.logical) = (self.attempts, self.logical);
        (s.admitted, s.delayed, s.rejected) = (self.admitted, self.delayed, self.rejected);
        s.passed_cost = self.passed_cost;
        for (id, slot) in self.ids.iter().enumerate() {
            let c = |field: usize| self.wide.count(id as u32, field, slot.counts[field]);
            s.clients += u64::from(c(LOGICAL) > 0);
            s.clients_limited += u64::from(c(CLIENT_REJECTED) > 0);
        }
        s
    }

    /// A hint that an attempt of `client` keyed on `key` is recorded soon
    /// (see [`crate::cache`]).
    pub fn prefetch(&self, key: u32, client: u32) {
        use crate::cache::prefetch_all;
        prefetch_all(&self.ids, client as usize);
        if key != client {
            prefetch_all(&self.ids, key as usize);
        }
    }

    /// Attempt number `attempt` of a request first sent at `first`, from
    /// `client`, keyed on `key`, arriving at `now`, decided `decided_at`
    /// (where the limiter is: the instance, or the store) and heard by the
    /// client `latency` after it arrived.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn attempt(
        &mut self,
        key: u32,
        client: u32,
        now: Nanos,
        decided_at: Nanos,
        latency: Nanos,
        first: Nanos,
        attempt: u32,
        cost: u64,
        decision: Decision,
    ) {
        self.added_latency.record(latency.0);
        let outcome = match decision.passes() {
            true => CLIENT_PASSED,
            false => CLIENT_REJECTED,
        };
        // One look-up of the client's slot for both counts.
        let both = [LOGICAL, outcome];
        if attempt == 1 {
            self.logical += 1;
            self.bump(client, &both);
        } else {
            self.bump(client, &both[1..]);
        }
        if attempt > 1 {
            self.bucket(now.0).retries += 1;
        }
        self.count(now, decided_at, key, cost, decision);
        if let Decision::Admitted | Decision::Delayed { .. } = decision {
            let delay = match decision {
                Decision::Delayed { delay } => delay.0,
                _ => 0,
            };
            let heard = now.0.saturating_add(latency.0).saturating_add(delay);
            self.time_to_success.record(heard - first.0);
        }
    }

    /// A logical request whose next retry falls after the end of the run.
    pub fn pending_at_end(&mut self) {
        self.pending_at_end += 1;
    }

    /// An operation sent to a shared store (a read or a write).
    pub fn store_op(&mut self) {
        self.store_ops += 1;
    }

    /// A rejection an instance made from its over-limit cache.
    pub fn cache_rejection(&mut self) {
        self.cache_rejections += 1;
    }

    /// A decision taken because the store failed: passed unchecked
    /// (`fail_open`)…
    pub fn fault_open(&mut self) {
        self.fault_open += 1;
    }

    /// …rejected (`fail_closed`)…
    pub fn fault_closed(&mut self) {
        self.fault_closed += 1;
    }

    /// …or decided by the instance's own fallback limiter.
    pub fn fault_fallback(&mut self) {
        self.fault_fallback += 1;
    }

    /// `client` gives up on a request whose last attempt arrived at `now`.
    pub fn gave_up(&mut self, _client: u32, now: Nanos) {
        self.gave_up += 1;
        self.bucket(now.0).gave_up += 1;
    }

    /// Counts one attempt arriving and decided at `now` and, if it passes,
    /// its pass.
    pub fn record(&mut self, key: u32, now: Nanos, cost: u64, decision: Decision) {
        self.count(now, now, key, cost, decision);
    }

    /// A chain member's own `decision` on an attempt at `now` that the
    /// chain passed `after` it (the largest of its members' delays): the
    /// member's outcome and delay are its own, and the pass counts when the
    /// request really passed (docs/semantics.md §13).
    pub fn record_passed_after(
        &mut self,
        key: u32,
        now: Nanos,
        cost: u64,
        decision: Decision,
        after: Nanos,
    ) {
        self.count_passing_at(
            now,
            now,
            key,
            cost,
            decision,
            Some(now.0.saturating_add(after.0)),
        );
    }

    /// Counts an attempt a chain's member was asked about at `now` and
    /// would have passed, but that the chain rejected (docs/semantics.md
    /// §13): an attempt of the member's, none of its outcomes. The time
    /// series, whose buckets each add up, counts only the member's own
    /// outcomes.
    pub fn asked(&mut self) {
        self.attempts += 1;
        self.overruled += 1;
    }

    /// Releases every pass due by `now` into the per-key windows, in time
    /// order. The engine calls it before each event; passes decided at the
    /// current moment go straight in.
    #[inline]
    pub fn advance(&mut self, now: Nanos) {
        // Nothing to release (no shaper, or none of its passes waits): the
        // common case, asked at every event, inline.
        if !self.future.is_empty() {
            self.release_due(now);
        }
    }

    /// [`Recorder::advance`] with passes waiting.
    #[inline(never)]
    fn release_due(&mut self, now: Nanos) {
        while let Some((t, seq, key, cost)) = self.future.peek_due(now.0) {
            self.future.pop();
            // Each release asks for the slot of the one eight behind it.
            if let Some(&(_, _, next, _)) = self.future.ahead(PREFETCH_AHEAD) {
                crate::cache::prefetch_all(&self.ids, next as usize);
            }
            let decided = self.origins.as_mut().and_then(|o| o.remove(&seq));
            self.pass(key, t, cost, (true, decided.unwrap_or(0)));
        }
    }

    /// Releases every pass still pending (the end of the run), and merges
    /// the histograms' pending values once, for the report's several reads.
    pub fn finish(&mut self) {
        self.advance(Nanos(u64::MAX));
        if self.counts_one_source() {
            self.sources[0] = self.one_source();
        }
        for s in &mut self.sources {
            s.finish();
        }
        for h in [
            &mut self.delays,
            &mut self.time_to_success,
            &mut self.added_latency,
        ] {
            h.merge();
        }
    }

    #[inline(always)]
    fn count(&mut self, now: Nanos, decided_at: Nanos, key: u32, cost: u64, decision: Decision) {
        self.count_passing_at(now, decided_at, key, cost, decision, None);
    }

    /// [`Recorder::count`], the pass at `passes_at` if given (else when the
    /// decision says).
    #[inline(always)]
    fn count_passing_at(
        &mut self,
        now: Nanos,
        decided_at: Nanos,
        key: u32,
        cost: u64,
        decision: Decision,
        passes_at: Option<u64>,
    ) {
        self.attempts += 1;
        let outcome = match decision {
            Decision::Admitted => ADMITTED,
            Decision::Delayed { .. } => DELAYED,
            Decision::Rejected { .. } => KEY_REJECTED,
        };
        self.bump(key, &[outcome]);
        let b = self.bucket(now.0);
        b.attempts += 1;
        let pass_at = match decision {
            Decision::Admitted => {
                b.admitted += 1;
                self.admitted += 1;
                self.passed_cost += cost;
                self.delays.record(0);
                decided_at.0
            }
            Decision::Delayed { delay } => {
                b.delayed += 1;
                self.delayed += 1;
                self.passed_cost += cost;
                self.delays.record(delay.0);
                decided_at.0.saturating_add(delay.0)
            }
            Decision::Rejected { .. } => {
                b.rejected += 1;
                self.rejected += 1;
                self.rejected_cost += cost;
                return;
            }
        };
        let pass_at = passes_at.unwrap_or(pass_at);
        let b = self.bucket(pass_at);
        b.passed += 1;
        b.passed_cost += cost;
        if pass_at > decided_at.0 {
            if let Some(o) = &mut self.origins {
                o.insert(self.future_seq, self.event);
            }
            self.future.push((pass_at, self.future_seq, key, cost));
            self.future_seq += 1;
        } else {
            self.pass(key, pass_at, cost, (false, self.event));
        }
    }

    /// Adds one to each count of `fields` in `id`'s slot (created if need
    /// be).
    fn bump(&mut self, id: u32, fields: &[usize]) {
        let counts = &mut PerId::of(&mut self.ids, id).counts;
        for &field in fields {
            let n = &mut counts[field];
            *n = n.wrapping_add(1);
            if *n == 0 {
                self.wide.carry(id, field);
            }
        }
    }

    /// A pass of `cost` for `key` at `t`. Passes are released in time order
    /// (see [`Recorder::advance`]), so a queue of the last window's passes
    /// gives the exact peak, and its passes in `t`'s aligned window the
    /// overshoot. `origin`: whether it is a release, and the event that
    /// decided it.
    #[inline(always)]
    fn pass(&mut self, key: u32, t: u64, cost: u64, origin: (bool, u64)) {
        let limit = self.limit;
        let slot = PerId::of(&mut self.ids, key);
        let (aligned, sum) = match slot.window.pass_alone(t, cost, self.window) {
            true => (0, cost),
            false => {
                let start = self.aligned.start_of(t, self.window);
                slot.window
                    .pass(&mut self.spills, t, cost, self.window, start)
            }
        };
        let over_before = aligned.saturating_sub(limit);
        let over = aligned.saturating_add(cost).saturating_sub(limit);
        let overshoot = over - over_before;
        self.overshoot = self.overshoot.saturating_add(overshoot);
        self.overshoot_max = self.overshoot_max.max(over);
        let peak = &mut slot.counts[PEAK];
        if sum > *peak as u64 {
            *peak = u32::try_from(sum).unwrap_or(u32::MAX);
            if *peak == u32::MAX {
                self.wide.peak(key, sum);
            }
        }
        if sum > self.peak_in_window {
            self.peak_in_window = sum;
            self.peak_at = Some((Nanos(t), key));
            self.peak_origin = origin;
        }
        let b = self.bucket(t);
        b.worst_key_in_window = b.worst_key_in_window.max(sum);
        b.overshoot += overshoot;
    }

    /// A rejected attempt of `cost` that a per-client copy of the same
    /// limiter, fed only its client's traffic, would have let pass.
    pub fn collateral_rejection(&mut self, cost: u64) {
        self.collateral += 1;
        self.collateral_cost += cost;
    }
}
#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn an_id_slot_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<PerId>(), 64);
        assert_eq!(std::mem::align_of::<PerId>(), 64);
    }

    // A run of one source takes its source's counts from its own at the
    // close: the same counts as one counted with each attempt, over
    // random attempts in time order (first ones and retries, of clients
    // keyed by themselves or not, admitted, delayed or rejected, of any
    // cost), clients inside the population and past it. A chain
    // member's recorder of one source, and a recorder of two sources,
    // still count each attempt: the same counts as theirs.
    #[test]
    fn one_source_counts_at_the_close_what_it_counts_with_each_attempt() {
        let mut x = 11u64;
        // A number below `n` (an LCG's high bits).
        let mut next = move |n: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        let mut member_saw_more = 0;
        for round in 0..20 {
            let new = || Recorder::new(Nanos(1000 * MS), 3, Nanos(100 * MS), Nanos(5000 * MS), 40);
            let mut one = new().with_sources(1);
            let mut member = new().with_sources(1).for_member();
            let mut two = new().with_sources(2);
            let (mut each, mut each_member) = (SourceCounts::default(), SourceCounts::default());
            let mut each_of_two = vec![SourceCounts::default(); 2];
            let mut time = Nanos::ZERO;
            for _ in 0..next(400) {
                let client = next(60) as u32;
                let key = match next(3) {
                    0 => next(60) as u32,
                    _ => client,
                };
                let decision = match next(3) {
                    0 => Decision::Admitted,
                    1 => Decision::Delayed {
                        delay: Nanos(next(900) * MS),
                    },
                    _ => Decision::Rejected { retry_after: None },
                };
                time = Nanos(time.0 + next(15) * MS);
                let d = Decided {
                    source: 0,
                    client,
                    key,
                    attempt: 1 + (next(4) == 0) as u32 * (1 + next(3) as u32),
                    time,
                    decided_at: time,
                    latency: Nanos::ZERO,
                    first: time,
                    cost: 1 + next(3),
                    decision,
                };
                let first = d.attempt == 1;
                each.attempt(client, first, false, d.cost, Some(decision));
                each_member.attempt(client, first, true, d.cost, Some(decision));
                one.decided(d);
                member.decided(d);
                let source = next(2) as u32;
                each_of_two[source as usize].attempt(client, first, false, d.cost, Some(decision));
                two.decided(Decided { source, ..d });
            }
            for r in [&mut one, &mut member, &mut two] {
                r.finish();
            }
            for s in [&mut each, &mut each_member]
                .into_iter()
                .chain(&mut each_of_two)
            {
                s.finish();
            }
            assert_eq!(one.sources, [each.clone()], "round {round}");
            assert_eq!(member.sources, [each_member.clone()], "round {round}");
            assert_eq!(two.sources, each_of_two, "round {round}");
            // Retries alone make a member's client seen: it sees as many
            // clients as the first attempts do, and in some rounds more.
            assert!(each_member.clients >= each.clients);
            member_saw_more += usize::from(each_member.clients > each.clients);
            assert!(one.sources[0].clients > 0 || one.attempts == 0);
        }
        assert!(member_saw_more > 0);
    }

    #[test]
    fn peak_counts_passes_in_half_open_windows() {
        let mut r = Recorder::new(Nanos(1000 * MS), 10, Nanos(100 * MS), Nanos(3000 * MS), 0);
        for t in [0, 500, 999, 1000] {
            r.record(0, Nanos(t * MS), 1, Decision::Admitted);
        }
        // (0, 1000] holds 500, 999, 1000: the pass at 0 has left.
        assert_eq!(r.peak_in_window, 3);
        r.record(1, Nanos(1000 * MS), 5, Decision::Admitted);
        assert_eq!(r.peak_in_window, 5, "keys are separate, costs weigh");
        r.record(
            0,
            Nanos(1000 * MS),
            9,
            Decision::Rejected { retry_after: None },
        );
        assert_eq!(r.peak_in_window, 5, "rejections do not pass");
    }

    #[test]
    fn delayed_requests_count_where_they_pass() {
        let mut r = Recorder::new(Nanos(1000 * MS), 10, Nanos(100 * MS), Nanos(1000 * MS), 0);
        r.record(
            0,
            Nanos(50 * MS),
            1,
            Decision::Delayed {
                delay: Nanos(1000 * MS),
            },
        );
        r.finish();
        assert_eq!(r.peak_in_window, 1);
        assert_eq!(r.series[0].delayed, 1);
        assert_eq!(r.series[0].passed, 0);
        assert_eq!(r.series[10].passed, 1);
        assert_eq!(r.series.iter().map(|b| b.passed).sum::<u64>(), r.passed());
    }

    #[test]
    fn retries_time_to_success_and_client_shares_are_counted() {
        let mut r = Recorder::new(Nanos(1000 * MS), 10, Nanos(100 * MS), Nanos(2000 * MS), 2);
        let rejected = Decision::Rejected {
            retry_after: Some(Nanos(MS)),
        };
        // Client 0: one request, rejected once, passes on the retry 300ms later.
        let z = Nanos(0);
        let at = |t: u64| Nanos(t * MS);
        r.attempt(0, 0, z, z, z, z, 1, 1, rejected);
        r.attempt(0, 0, at(300), at(300), z, z, 2, 1, Decision::Admitted);
        // Client 1: two requests, one passes, one rejected and given up.
        r.attempt(1, 1, z, z, z, z, 1, 1, Decision::Admitted);
        r.attempt(1, 1, z, z, z, z, 1, 1, rejected);
        r.gave_up(1, Nanos(0));
        assert_eq!((r.logical, r.attempts, r.gave_up), (3, 4, 1));
        assert_eq!(r.series[3].retries, 1);
        assert_eq!(r.time_to_success.percentile(1000), Some(Nanos(300 * MS)));
        assert_eq!(
            r.pass_ratio_spread(),
            Some([(1, 2), (1, 2), (1, 2), (1, 1), (1, 1)])
        );
        // (1.5)² / (2 · 1.25) = 0.9
        assert!((r.fairness().unwrap() - 0.9).abs() < 1e-12);
        // Collateral is what the engine says it is; by itself none.
        assert_eq!(r.collateral(), Some((0, 2)));
        // Over 2s at a limit of 1/s both clients (1 and 2 requests) stayed
        // within it: 2 of their 4 attempts were rejected; over 1s only
        // client 0 did: 1 of its 2.
        assert_eq!(r.within_limit_rejected(1, Nanos(2000 * MS)), Some((2, 4)));
        assert_eq!(r.within_limit_rejected(1, Nanos(1000 * MS)), Some((1, 2)));
        assert_eq!(r.within_limit_rejected(0, Nanos(1000 * MS)), None);
    }

    #[test]
    fn overshoot_counts_passes_beyond_the_limit_per_key_per_aligned_window() {
        let mut r = Recorder::new(Nanos(1000 * MS), 2, Nanos(100 * MS), Nanos(3000 * MS), 0);
        for t in [0, 100, 200, 300] {
            r.record(0, Nanos(t * MS), 1, Decision::Admitted);
        }
        r.record(1, Nanos(500 * MS), 3, Decision::Admitted);
        r.record(0, Nanos(1000 * MS), 1, Decision::Admitted);
        // Key 0: 4 in window 0 (2 over), 1 in window 1; key 1: 3 (1 over).
        assert_eq!((r.overshoot, r.overshoot_max), (3, 2));
    }

    // Regression (truthful-outputs issue item 3): the series held only
    // all-keys counts, so timeline.png could not show what the policy
    // limits — one key's passes per window.
    #[test]
    fn each_bucket_holds_its_worst_keys_window_and_its_overshoot() {
        let mut r = Recorder::new(Nanos(1000 * MS), 2, Nanos(100 * MS), Nanos(3000 * MS), 0);
        // Key 0 passes at 0, 50, 150 and 1050ms; key 1 three at 120ms.
        for t in [0, 50] {
            r.record(0, Nanos(t * MS), 1, Decision::Admitted);
        }
        r.record(1, Nanos(120 * MS), 3, Decision::Admitted);
        r.record(0, Nanos(150 * MS), 1, Decision::Admitted);
        r.record(0, Nanos(1050 * MS), 1, Decision::Admitted);
        let worst: Vec<u64> = r.series[..11]
            .iter()
            .map(|b| b.worst_key_in_window)
            .collect();
        // (−0.95s, 0.05s] holds 2 for key 0; at 120ms key 1 has 3; at
        // 1.05s key 0's window (0.05s, 1.05s] holds 150ms and 1.05s.
        assert_eq!(worst, [2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        let over: Vec<u64> = r.series[..11].iter().map(|b| b.overshoot).collect();
        assert_eq!(over, [0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(over.iter().sum::<u64>(), r.overshoot);
    }

    // Regression (tests/it/fuzz.rs, a leaky bucket with cost 10^12 at 2/s):
    // passes at the saturated end of time overflowed `s + W`.
    #[test]
    fn passes_at_the_end_of_time_stay_in_each_others_window() {
        let mut r = Recorder::new(Nanos(1000 * MS), 10, Nanos(100 * MS), Nanos(1000 * MS), 0);
        for _ in 0..3 {
            r.record(0, Nanos(u64::MAX), 1, Decision::Admitted);
        }
        assert_eq!(r.peak_in_window, 3);
    }

    #[test]
    fn future_passes_are_released_in_time_order() {
        let mut r = Recorder::new(Nanos(1000 * MS), 10, Nanos(100 * MS), Nanos(3000 * MS), 0);
        let delayed = |ms| Decision::Delayed {
            delay: Nanos(ms * MS),
        };
        r.record(0, Nanos(0), 1, delayed(900));
        r.advance(Nanos(100 * MS));
        r.record(0, Nanos(100 * MS), 1, Decision::Admitted);
        r.advance(Nanos(1500 * MS));
        r.record(0, Nanos(1500 * MS), 1, Decision::Admitted);
        r.finish();
        // Passes at 100, 900 and 1500ms: (500, 1500] holds two.
        assert_eq!(r.peak_in_window, 2);
    }

    // Regression (robustness issue item 8): the series was sized
    // duration / resolution + 1 up front, whatever that came to.
    #[test]
    fn a_series_stays_bounded_whatever_the_duration() {
        let cap = 2 * (crate::scenario::MAX_BUCKETS as usize + 1);
        let mut r = Recorder::new(Nanos(1000 * MS), 10, Nanos(1), Nanos(u64::MAX / 2), 0);
        assert!(r.series.len() <= cap / 2);
        r.record(0, Nanos(u64::MAX - 1), 1, Decision::Admitted);
        assert!(r.series.len() <= cap && r.series.capacity() <= cap);
        assert_eq!(r.series.iter().map(|b| b.passed).sum::<u64>(), 1);
    }

    /// The window as it was before it moved into a 64-byte slot: a deque
    /// of every pass in the window, their sum, and a counter per aligned
    /// window. [`Window`] must return what it returns, pass by pass. (The
    /// sum is a `u128` reported saturated; the old `u64` saturated and then
    /// wrapped as passes left — see the regression test below.)
    #[derive(Default)]
    struct ModelWindow {
        passes: VecDeque<(u64, u64)>,
        sum: u128,
        aligned: u64,
        in_aligned: u64,
    }

    impl ModelWindow {
        fn pass(&mut self, t: u64, cost: u64, w: u64) -> (u64, u64) {
            let k = t / w;
            if self.aligned != k {
                (self.aligned, self.in_aligned) = (k, 0);
            }
            let before = self.in_aligned;
            self.in_aligned = self.in_aligned.saturating_add(cost);
            let left = |s: u64| s.checked_add(w).is_some_and(|end| end <= t);
            while let Some(&(s, c)) = self.passes.front() {
                if !left(s) {
                    break;
                }
                self.passes.pop_front();
                self.sum -= u128::from(c);
            }
            self.passes.push_back((t, cost));
            self.sum += u128::from(cost);
            (before, u64::try_from(self.sum).unwrap_or(u64::MAX))
        }
    }

    impl Window {
        /// [`Window::pass`], the aligned window's start computed.
        fn pass_aligning(&mut self, spills: &mut Spills, t: u64, cost: u64, w: u64) -> (u64, u64) {
            self.pass(spills, t, cost, w, t - t % w)
        }

        /// The recorder's step ([`Window::pass_alone`] first) if `short`,
        /// else [`Window::pass_aligning`] alone.
        fn pass_either(
            &mut self,
            spills: &mut Spills,
            t: u64,
            cost: u64,
            w: u64,
            short: bool,
        ) -> (u64, u64) {
            match short && self.pass_alone(t, cost, w) {
                true => (0, cost),
                false => self.pass_aligning(spills, t, cost, w),
            }
        }
    }

    proptest::proptest! {
        /// The remembered start is the division's, whatever order the
        /// times come in (forward, back, across windows, at the ends of
        /// time).
        #[test]
        fn an_aligned_start_is_the_divisions(
            w in proptest::prop_oneof![1u64..4, 1u64..(1 << 40), 1u64..=u64::MAX],
            times in proptest::collection::vec(
                proptest::prop_oneof![0u64..10, proptest::prelude::any::<u64>(), (u64::MAX - 10)..=u64::MAX], 1..50),
        ) {
            let mut aligned = Aligned::default();
            for t in times {
                proptest::prop_assert_eq!(aligned.start_of(t, w), t - t % w, "t = {}", t);
            }
        }
    }

    #[test]
    fn passes_stay_in_place_until_they_outgrow_it() {
        let (mut w, mut spills) = (Window::default(), Spills::default());
        let s = 1_000 * MS;
        // Five unit passes within a window fit; the sixth spills them…
        for t in 0..5 {
            assert_eq!(w.pass_aligning(&mut spills, t * MS, 1, s), (t, t + 1));
        }
        assert_eq!(w.spill, 0);
        assert_eq!(w.pass_aligning(&mut spills, 5 * MS, 1, s), (5, 6));
        assert_eq!((w.spill, spills.all.len()), (1, 1));
        // …until the window empties: back in place, the spill free.
        assert_eq!(w.pass_aligning(&mut spills, 2 * s, 2, s), (0, 2));
        assert_eq!((w.spill, w.len, spills.free.as_slice()), (0, 2, &[0][..]));
        // A cost the slot cannot hold, and a pass 2^32 ns or more after
        // the oldest held, spill too; the freed window is reused.
        assert_eq!(w.pass_aligning(&mut spills, 2 * s, 4, s), (2, 6));
        assert_eq!((w.spill, spills.all.len()), (1, 1));
        let far = u32::MAX as u64 + 1;
        let (mut w, mut spills) = (Window::default(), Spills::default());
        w.pass_aligning(&mut spills, 7, 1, 2 * far);
        assert_eq!(w.pass_aligning(&mut spills, 7 + far, 1, 2 * far), (1, 2));
        assert_eq!(w.spill, 1);
        // Passes that far apart stay in place once the older have left.
        let (mut w, mut spills) = (Window::default(), Spills::default());
        w.pass_aligning(&mut spills, 7, 1, far);
        w.pass_aligning(&mut spills, 7 + far / 2, 1, far);
        assert_eq!(w.pass_aligning(&mut spills, 8 + far, 1, far), (0, 2));
        assert_eq!((w.spill, w.time(0), w.time(1)), (0, 7 + far / 2, 8 + far));
    }

    // Regression (found in review): a key's window summing past u64::MAX
    // saturated, then lost each pass's cost as it left — 0 here, where 5
    // is still in the window. The sum is exact now, reported saturated.
    #[test]
    fn a_window_past_u64_max_stays_exact_as_passes_leave() {
        let (mut w, mut spills) = (Window::default(), Spills::default());
        assert_eq!(w.pass_aligning(&mut spills, 0, u64::MAX, 10), (0, u64::MAX));
        assert_eq!(w.pass_aligning(&mut spills, 1, 5, 10), (u64::MAX, u64::MAX));
        assert_eq!(w.pass_aligning(&mut spills, 10, 0, 10), (0, 5));
        assert_eq!(w.pass_aligning(&mut spills, 20, 1, 10), (0, 1));
        // Two passes at one moment whose costs sum past u64::MAX keep an
        // entry each (found by the proptest below).
        let (mut w, mut spills) = (Window::default(), Spills::default());
        let half = 1 << 63;
        assert_eq!(w.pass_aligning(&mut spills, 0, half, 3), (0, half));
        assert_eq!(w.pass_aligning(&mut spills, 0, half, 3), (half, u64::MAX));
        assert_eq!(w.pass_aligning(&mut spills, 2, 0, 3), (u64::MAX, u64::MAX));
        assert_eq!(w.pass_aligning(&mut spills, 3, 0, 3), (0, 0));
    }

    #[test]
    fn counts_past_32_bits_carry_exactly() {
        let mut r = Recorder::new(Nanos(1000 * MS), 10, Nanos(100 * MS), Nanos(3000 * MS), 1);
        r.record(0, Nanos(0), 1, Decision::Admitted);
        r.ids[0].counts[ADMITTED] = u32::MAX - 1;
        for t in 1..=3 {
            r.record(0, Nanos(t * 400 * MS), 1, Decision::Admitted);
        }
        let (_, k) = r.keys().next().expect("key 0");
        assert_eq!(k.admitted, (1 << 32) + 1);
        assert_eq!(k.attempts, (1 << 32) + 1);
        // A peak of u32::MAX or more is kept whole beside the slot.
        let big = 3 << 32;
        r.record(1, Nanos(0), big, Decision::Admitted);
        r.record(1, Nanos(MS), 5, Decision::Admitted);
        let peaks: Vec<u64> = r.keys().map(|(_, k)| k.peak_in_window).collect();
        assert_eq!(peaks, [3, big + 5]);
        assert_eq!(r.peak_in_window, big + 5);
    }

    proptest::proptest! {
        /// Whatever the gaps, costs and window, a key's window returns what
        /// the plain deque model returns, and holds its passes in place
        /// exactly when they fit there: at most five units, less than
        /// 2^32 ns apart. Each case takes the recorder's step or the
        /// general one (`short`).
        #[test]
        fn a_window_is_the_deque_model(
            w in proptest::prop_oneof![1u64..5, 1u64..1_000_000_000, 1u64..(1 << 40)],
            passes in proptest::collection::vec(
                (proptest::prop_oneof![0u64..3, 0u64..1_000_000_000, 0u64..(1 << 34)],
                 proptest::prop_oneof![0u64..4, 1u64..9, 1u64..(1 << 33), (u64::MAX / 4)..=u64::MAX]),
                1..200,
            ),
            short in proptest::prelude::any::<bool>(),
        ) {
            let (mut window, mut spills) = (Window::default(), Spills::default());
            let mut model = ModelWindow::default();
            let mut t = 0u64;
            for (gap, cost) in passes {
                t += gap;
                proptest::prop_assert_eq!(
                    window.pass_either(&mut spills, t, cost, w, short),
                    model.pass(t, cost, w)
                );
                // (A pass of cost 0 takes no room in place.)
                let mut held = model.passes.iter().filter(|p| p.1 > 0);
                let fits = model.sum <= INLINE_PASSES as u128
                    && held.next().zip(held.next_back())
                        .is_none_or(|(f, b)| b.0 - f.0 <= u32::MAX as u64);
                if window.spill == 0 {
                    proptest::prop_assert!(fits);
                    proptest::prop_assert_eq!(u128::from(window.len), model.sum);
                }
            }
            // A spilled window is in use by one key at most.
            proptest::prop_assert!(spills.free.len() + (window.spill != 0) as usize == spills.all.len());
        }

        /// The end of time: passes saturated at `u64::MAX` stay in each
        /// other's window whatever the window.
        #[test]
        fn passes_at_the_end_of_time_are_the_model(
            w in 1u64..(1 << 40), costs in proptest::collection::vec(0u64..4, 1..12),
            short in proptest::prelude::any::<bool>(),
        ) {
            let (mut window, mut spills) = (Window::default(), Spills::default());
            let mut model = ModelWindow::default();
            for (i, cost) in costs.into_iter().enumerate() {
                let t = u64::MAX - 3 + (i as u64).min(3);
                proptest::prop_assert_eq!(
                    window.pass_either(&mut spills, t, cost, w, short),
                    model.pass(t, cost, w)
                );
            }
        }
    }

    #[test]
    fn percentiles_are_exact_nearest_rank() {
        let mut h = DelayHistogram::default();
        for v in [0, 0, 0, 100, 200, 300, 400, 500] {
            h.record(v * MS);
        }
        assert_eq!(h.percentile(500), Some(Nanos(100 * MS)));
        assert_eq!(h.percentile(990), Some(Nanos(500 * MS)));
        assert_eq!(h.percentile(375), Some(Nanos(0)));
        assert_eq!(h.max(), Some(Nanos(500 * MS)));
        assert_eq!(DelayHistogram::default().percentile(500), None);
    }

    /// The histogram as it was first written: a `BTreeMap` halved after
    /// any record that leaves too many distinct values.
    #[derive(Default)]
    struct ModelHistogram {
        zeros: u64,
        values: std::collections::BTreeMap<u64, u64>,
        shift: u32,
    }

    impl ModelHistogram {
        fn record(&mut self, ns: u64) {
            if ns == 0 {
                self.zeros += 1;
                return;
            }
            *self.values.entry(ns >> self.shift).or_default() += 1;
            while self.values.len() > DelayHistogram::MAX_VALUES {
                self.shift += 1;
                for (v, n) in std::mem::take(&mut self.values) {
                    *self.values.entry(v >> 1).or_default() += n;
                }
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]

        /// Merged in batches, the histogram holds exactly what one halved
        /// record by record holds, and reports the same percentiles.
        #[test]
        fn batched_delays_are_the_record_by_record_histogram(
            delays in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::strategy::Just(0u64),
                    1u64..100,
                    1u64..10_000_000,
                    proptest::prelude::any::<u64>(),
                ],
                0..20_000,
            )
        ) {
            let (mut h, mut model) = (DelayHistogram::default(), ModelHistogram::default());
            for (i, &d) in delays.iter().enumerate() {
                h.record(d);
                model.record(d);
                if i % 5_000 == 0 {
                    proptest::prop_assert_eq!(h.percentile(500), h.merged().percentile(500));
                }
            }
            let merged = h.merged();
            proptest::prop_assert_eq!(merged.shift, model.shift);
            proptest::prop_assert_eq!(merged.zeros, model.zeros);
            proptest::prop_assert_eq!(&merged.values, &model.values.into_iter().collect::<Vec<_>>());
            for per_mille in [1, 250, 500, 900, 990, 999, 1000] {
                let rank = (per_mille * delays.len() as u64).div_ceil(1000).max(1) as usize;
                let mut sorted = delays.clone();
                sorted.sort_unstable();
                let exact = sorted.get(rank - 1).copied();
                let got = h.percentile(per_mille).map(|n| n.0);
                proptest::prop_assert_eq!(got.is_some(), exact.is_some());
                if let (Some(got), Some(exact)) = (got, exact) {
                    // At most 2^shift − 1 below the true value, never above.
                    proptest::prop_assert!(got <= exact && exact - got < 1u64 << merged.shift);
                }
            }
        }
    }

    #[test]
    fn a_histogram_of_many_values_stays_bounded_and_close() {
        let mut h = DelayHistogram::default();
        for v in 1..=100_000u64 {
            h.record(v * 1000 + 7);
        }
        assert!(h.values.len() <= DelayHistogram::MAX_VALUES);
        let p50 = h.percentile(500).unwrap().0;
        let exact = 50_000 * 1000 + 7;
        assert!(
            p50 <= exact && exact - p50 < 1 << h.shift,
            "{p50} vs {exact}"
        );
    }
}
