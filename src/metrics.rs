//! Streaming metrics for one limiter: counters, a time series, delay
//! percentiles and `peak_in_window` — all in memory that grows with keys and
//! time buckets, never with the number of requests.

use std::collections::VecDeque;

use crate::calendar::Calendar;
use crate::clock::Nanos;
use crate::limiter::Decision;

/// How many releases ahead the recorder asks for their keys' slots.
const PREFETCH_AHEAD: usize = 8;

/// Counts in one time-series bucket. Attempts and outcomes count at arrival;
/// `passed` counts at the moment a request passes (a delayed request in the
/// bucket where it is released).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bucket {
    pub attempts: u64,
    pub admitted: u64,
    pub delayed: u64,
    pub rejected: u64,
    pub passed: u64,
    pub passed_cost: u64,
    /// Attempts after the first (retries), at arrival.
    pub retries: u64,
    /// Logical requests given up, at their last rejection.
    pub gave_up: u64,
    /// The most any one key had passed within `(t − W, t]` (W the policy
    /// window), over every pass at a time `t` in this bucket: the policy's
    /// own measure, per key, over time. 0 when nothing passed here.
    pub worst_key_in_window: u64,
    /// Passed cost beyond the limit, per key per aligned policy window,
    /// counted at the passes in this bucket (summed over keys): the series
    /// sums to `overshoot`.
    pub overshoot: u64,
}

/// Everything measured about one limiter over a run.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    window: u64,
    limit: u64,
    resolution: u64,
    max_buckets: usize,
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
    pub series: Vec<Bucket>,
    pub delays: DelayHistogram,
    /// Per id: the client's counts (for the client of that id) and the
    /// window of passes (for the key of that id), side by side so that a
    /// client keyed by itself costs one cache line, not two.
    ids: Vec<PerId>,
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
    /// Cost of all rejected attempts.
    rejected_cost: u64,
    /// Rejected attempts that would have passed had the client had a key of
    /// its own, and their cost (see [`Recorder::collateral`]).
    collateral: u64,
    collateral_cost: u64,
}

/// One key's attempts and outcomes, and the most it passed in one policy
/// window (`top_keys.csv`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyCounts {
    pub attempts: u64,
    pub admitted: u64,
    pub delayed: u64,
    pub rejected: u64,
    pub peak_in_window: u64,
}

/// A key's outcomes and peak as a slot keeps them (its attempts are their
/// sum).
#[derive(Debug, Clone, Copy, Default)]
struct KeyTally {
    admitted: u64,
    delayed: u64,
    rejected: u64,
    peak_in_window: u64,
}

/// One client's logical requests, passes and rejected attempts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientCounts {
    pub logical: u64,
    pub passed: u64,
    pub rejected: u64,
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
            series: vec![Bucket::default(); buckets],
            ids: {
                let mut ids = Vec::new();
                crate::cache::grow_with(&mut ids, clients, PerId::default);
                ids
            },
            clients,
            ..Recorder::default()
        }
    }

    /// What each client of the population asked for and got, in client
    /// order.
    pub fn clients(&self) -> impl Iterator<Item = &ClientCounts> {
        self.ids[..self.clients.min(self.ids.len())]
            .iter()
            .map(|p| &p.client)
    }

    /// The bucket of time `t`. The series grows past `duration` to hold
    /// late passes (a shaper's releases, a store's answers), up to twice its
    /// planned length; anything later counts in the last bucket.
    fn bucket(&mut self, t: u64) -> &mut Bucket {
        let i = ((t / self.resolution) as usize).min(self.max_buckets.max(1) - 1);
        if i >= self.series.len() {
            self.series.resize(i + 1, Bucket::default());
        }
        &mut self.series[i]
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
        let c = &mut PerId::of(&mut self.ids, client).client;
        if attempt == 1 {
            self.logical += 1;
            c.logical += 1;
        }
        if decision.passes() {
            c.passed += 1;
        } else {
            c.rejected += 1;
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

    /// Releases every pass due by `now` into the per-key windows, in time
    /// order. The engine calls it before each event; passes decided at the
    /// current moment go straight in.
    pub fn advance(&mut self, now: Nanos) {
        while let Some((t, _, key, cost)) = self.future.peek_due(now.0) {
            self.future.pop();
            // Each release asks for the slot of the one eight behind it.
            if let Some(&(_, _, next, _)) = self.future.ahead(PREFETCH_AHEAD) {
                crate::cache::prefetch_all(&self.ids, next as usize);
            }
            self.pass(key, t, cost);
        }
    }

    /// Releases every pass still pending (the end of the run), and merges
    /// the histograms' pending values once, for the report's several reads.
    pub fn finish(&mut self) {
        self.advance(Nanos(u64::MAX));
        for h in [
            &mut self.delays,
            &mut self.time_to_success,
            &mut self.added_latency,
        ] {
            h.merge();
        }
    }

    fn count(&mut self, now: Nanos, decided_at: Nanos, key: u32, cost: u64, decision: Decision) {
        self.attempts += 1;
        let kc = &mut PerId::of(&mut self.ids, key).key;
        match decision {
            Decision::Admitted => kc.admitted += 1,
            Decision::Delayed { .. } => kc.delayed += 1,
            Decision::Rejected { .. } => kc.rejected += 1,
        }
        let b = self.bucket(now.0);
        b.attempts += 1;
        let pass_at = match decision {
            Decision::Admitted => {
                b.admitted += 1;
                self.admitted += 1;
                self.delays.record(0);
                decided_at.0
            }
            Decision::Delayed { delay } => {
                b.delayed += 1;
                self.delayed += 1;
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
        let b = self.bucket(pass_at);
        b.passed += 1;
        b.passed_cost += cost;
        if pass_at > decided_at.0 {
            self.future.push((pass_at, self.future_seq, key, cost));
            self.future_seq += 1;
        } else {
            self.pass(key, pass_at, cost);
        }
    }

    /// A pass of `cost` for `key` at `t`. Passes are released in time order
    /// (see [`Recorder::advance`]), so a queue of the last window's passes
    /// gives the exact peak, and one counter per key the overshoot.
    fn pass(&mut self, key: u32, t: u64, cost: u64) {
        let (window, limit) = (self.window, self.limit);
        let w = &mut PerId::of(&mut self.ids, key).window;
        let k = t / window;
        if w.aligned != k {
            w.aligned = k;
            w.in_aligned = 0;
        }
        let over_before = w.in_aligned.saturating_sub(limit);
        w.in_aligned = w.in_aligned.saturating_add(cost);
        let over = w.in_aligned.saturating_sub(limit);
        let overshoot = over - over_before;
        self.overshoot = self.overshoot.saturating_add(overshoot);
        self.overshoot_max = self.overshoot_max.max(over);
        // A window that holds anything holds its latest pass last.
        let last = w.passes.back().map_or(0, |(s, _)| s);
        // (A pass at the end of time, from a shaper's saturated release, is
        // in the window of every pass after it: `s + W` does not wrap.)
        let left = |s: u64| s.checked_add(window).is_some_and(|end| end <= t);
        if w.sum > 0 && left(last) {
            // Everything in the queue has left the window: forget it without
            // reading it (the common case for a quiet key).
            w.passes.clear();
            w.sum = 0;
        }
        while let Some((s, c)) = w.passes.front() {
            if !left(s) {
                break;
            }
            w.passes.pop_front();
            w.sum -= c;
        }
        if w.sum > 0 && last == t {
            w.passes.add_to_back(cost);
        } else {
            w.passes.push_back((t, cost));
        }
        w.sum = w.sum.saturating_add(cost);
        let sum = w.sum;
        let kc = &mut self.ids[key as usize].key;
        kc.peak_in_window = kc.peak_in_window.max(sum);
        if sum > self.peak_in_window {
            self.peak_in_window = sum;
            self.peak_at = Some((Nanos(t), key));
        }
        let b = self.bucket(t);
        b.worst_key_in_window = b.worst_key_in_window.max(sum);
        b.overshoot += overshoot;
    }

    /// Every key that had an attempt, by id, with its counts.
    pub fn keys(&self) -> impl Iterator<Item = (usize, KeyCounts)> + '_ {
        self.ids.iter().enumerate().filter_map(|(id, slot)| {
            let k = slot.key;
            let attempts = k.admitted + k.delayed + k.rejected;
            (attempts > 0).then_some((
                id,
                KeyCounts {
                    attempts,
                    admitted: k.admitted,
                    delayed: k.delayed,
                    rejected: k.rejected,
                    peak_in_window: k.peak_in_window,
                },
            ))
        })
    }

    pub fn passed(&self) -> u64 {
        self.admitted + self.delayed
    }

    /// Jain's fairness index of the clients' pass ratios (passed / logical
    /// requests) over clients that sent anything: `(Σx)² / (n·Σx²)`, 1 when
    /// every client got the same share, `1/n` when one got everything.
    /// `None` when no client sent anything or none passed.
    pub fn fairness(&self) -> Option<f64> {
        let ratios = self.pass_ratios();
        let n = ratios.len() as f64;
        let sum: f64 = ratios.iter().sum();
        let squares: f64 = ratios.iter().map(|x| x * x).sum();
        (n > 0.0 && squares > 0.0).then(|| sum * sum / (n * squares))
    }

    /// Each sending client's share of its logical requests that passed, in
    /// client order.
    pub fn pass_ratios(&self) -> Vec<f64> {
        self.clients()
            .filter(|c| c.logical > 0)
            .map(|c| c.passed as f64 / c.logical as f64)
            .collect()
    }

    /// The spread of the clients' pass ratios: min, p10, p50, p90 and max
    /// (nearest rank), each an exact fraction `(passed, logical)`.
    pub fn pass_ratio_spread(&self) -> Option<[(u64, u64); 5]> {
        let mut ratios: Vec<(u64, u64)> = self
            .clients()
            .filter(|c| c.logical > 0)
            .map(|c| (c.passed, c.logical))
            .collect();
        if ratios.is_empty() {
            return None;
        }
        ratios.sort_by(|a, b| (a.0 as u128 * b.1 as u128).cmp(&(b.0 as u128 * a.1 as u128)));
        let n = ratios.len() as u64;
        let rank = |per_mille: u64| {
            let r = (per_mille * n).div_ceil(1000).max(1);
            ratios[(r - 1) as usize]
        };
        Some([
            ratios[0],
            rank(100),
            rank(500),
            rank(900),
            ratios[n as usize - 1],
        ])
    }

    /// A rejected attempt of `cost` that a per-client copy of the same
    /// limiter, fed only its client's traffic, would have let pass.
    pub fn collateral_rejection(&mut self, cost: u64) {
        self.collateral += 1;
        self.collateral_cost += cost;
    }

    /// Collateral rejections of all rejected attempts, counted as
    /// attempts: `(collateral, rejected)`, `None` without rejections.
    pub fn collateral(&self) -> Option<(u64, u64)> {
        (self.rejected > 0).then_some((self.collateral, self.rejected))
    }

    /// The same weighted by cost: `(collateral cost, rejected cost)`.
    pub fn collateral_cost(&self) -> Option<(u64, u64)> {
        (self.rejected > 0).then_some((self.collateral_cost, self.rejected_cost))
    }

    /// Of the attempts of the clients whose offered rate over the run was
    /// within the policy — `logical · window ≤ limit · duration` — how many
    /// were rejected: `(rejected, attempts)`; `None` when no such client
    /// sent anything. What well-behaved clients pay for a limit.
    pub fn within_limit_rejected(&self, limit: u64, duration: Nanos) -> Option<(u64, u64)> {
        let (mut rejected, mut attempts) = (0u64, 0u64);
        for c in self.clients() {
            let within =
                c.logical as u128 * self.window as u128 <= limit as u128 * duration.0 as u128;
            if within && c.logical > 0 {
                rejected += c.rejected;
                attempts += c.rejected + c.passed;
            }
        }
        (attempts > 0).then_some((rejected, attempts))
    }
}

/// One id's slot: its client's counts, its key's counts and window of
/// passes — 128 bytes on a 128-byte boundary, the pair of cache lines a
/// CPU fetches together, so that recording an attempt costs one miss.
#[derive(Debug, Clone, Default)]
#[repr(align(128))]
struct PerId {
    client: ClientCounts,
    key: KeyTally,
    window: PassWindow,
}

impl PerId {
    /// Slot `id` of `ids`, created (with those before it) if need be.
    fn of(ids: &mut Vec<PerId>, id: u32) -> &mut PerId {
        let i = id as usize;
        if i >= ids.len() {
            crate::cache::grow_with(ids, i + 1, PerId::default);
        }
        &mut ids[i]
    }
}

#[derive(Debug, Clone, Default)]
struct PassWindow {
    /// The passes within the window of the latest, oldest first.
    passes: Passes,
    sum: u64,
    /// The aligned policy window of the latest pass, and its passed cost.
    aligned: u64,
    in_aligned: u64,
}

/// How many passes a key keeps in place before it moves them to the heap
/// (six keep the slot within 128 bytes).
const INLINE_PASSES: usize = 6;

/// A queue of `(time, cost)` passes, in the order of their times: up to
/// [`INLINE_PASSES`] in place — a ring of 32-bit offsets from `base` and
/// 8-bit costs — and more, or a pass that does not fit those widths, in a
/// heap-allocated deque held until the key's window empties (so memory
/// follows the passes in windows, not the requests). The passes of one
/// window of up to 4.29 s always fit the offsets; a longer window's fit
/// while they are less than that apart.
#[derive(Debug, Clone, Default)]
struct Passes {
    /// The time the inline offsets count from (at most the oldest's).
    base: u64,
    offsets: [u32; INLINE_PASSES],
    costs: [u8; INLINE_PASSES],
    head: u8,
    len: u8,
    // Boxed: 8 bytes in every key's slot instead of a deque's 32, for the
    // few keys that ever need it.
    #[allow(clippy::box_collection)]
    spill: Option<Box<VecDeque<(u64, u64)>>>,
}

impl Passes {
    fn slot(&self, j: usize) -> usize {
        (self.head as usize + j) % INLINE_PASSES
    }

    fn at(&self, j: usize) -> (u64, u64) {
        let i = self.slot(j);
        (self.base + self.offsets[i] as u64, self.costs[i] as u64)
    }

    fn front(&self) -> Option<(u64, u64)> {
        match &self.spill {
            Some(q) => q.front().copied(),
            None => (self.len > 0).then(|| self.at(0)),
        }
    }

    fn back(&self) -> Option<(u64, u64)> {
        match &self.spill {
            Some(q) => q.back().copied(),
            None => (self.len > 0).then(|| self.at(self.len as usize - 1)),
        }
    }

    fn pop_front(&mut self) {
        match &mut self.spill {
            Some(q) => {
                q.pop_front();
            }
            None if self.len > 0 => {
                self.head = self.slot(1) as u8;
                self.len -= 1;
            }
            None => {}
        }
    }

    /// Adds `cost` to the latest pass (there is one).
    fn add_to_back(&mut self, cost: u64) {
        let (t, c) = self.back().expect("a pass is queued");
        if self.spill.is_none() {
            if let Ok(sum) = u8::try_from(c + cost) {
                let i = self.slot(self.len as usize - 1);
                self.costs[i] = sum;
                return;
            }
            self.spill_all();
        }
        let q = self.spill.as_mut().expect("spilled");
        q.back_mut().expect("a pass is queued").1 = c + cost;
        debug_assert_eq!(self.back().map(|b| b.0), Some(t));
    }

    /// Moves the inline passes to a deque.
    fn spill_all(&mut self) {
        let mut q = VecDeque::with_capacity(2 * INLINE_PASSES);
        q.extend((0..self.len as usize).map(|j| self.at(j)));
        (self.head, self.len) = (0, 0);
        self.spill = Some(Box::new(q));
    }

    /// `t`'s offset from `base`, counting from the earliest pass's time
    /// instead if need be; `None` if it does not fit even then.
    fn offset(&mut self, t: u64) -> Option<u32> {
        if self.len == 0 {
            self.base = t;
        }
        if let Some(off) = t.checked_sub(self.base).and_then(|d| u32::try_from(d).ok()) {
            return Some(off);
        }
        // Count from the earliest pass held (the oldest, as passes come
        // in time order; the least offset whatever the order).
        let live = (0..self.len as usize).map(|j| self.offsets[self.slot(j)]);
        let shift = live.min().unwrap_or(0);
        let least = self.base + shift as u64;
        let off = u32::try_from(t.checked_sub(least)?).ok()?;
        for j in 0..self.len as usize {
            let i = self.slot(j);
            self.offsets[i] -= shift;
        }
        self.base = least;
        Some(off)
    }

    fn push_back(&mut self, (t, cost): (u64, u64)) {
        if self.spill.is_none() {
            if (self.len as usize) < INLINE_PASSES {
                if let (Ok(c), Some(off)) = (u8::try_from(cost), self.offset(t)) {
                    let i = self.slot(self.len as usize);
                    (self.offsets[i], self.costs[i]) = (off, c);
                    self.len += 1;
                    return;
                }
            }
            self.spill_all();
        }
        self.spill.as_mut().expect("spilled").push_back((t, cost));
    }

    /// Empties the queue; a key back to few passes gives its heap back.
    fn clear(&mut self) {
        self.spill = None;
        (self.head, self.len) = (0, 0);
    }
}

/// Delay distribution of passed requests (admitted ones count as 0).
///
/// Exact while it holds at most [`DelayHistogram::MAX_VALUES`] distinct
/// values; past that it halves its resolution (drops a low bit of every
/// value) as often as needed, so memory stays bounded and the reported
/// percentile is at most `2^shift − 1` ns below the true one.
///
/// Delays are gathered unsorted and merged into the sorted counts
/// [`DelayHistogram::BATCH`] at a time. What it holds depends only on the
/// values recorded, not on when they are merged: a value `v` is held as
/// `v >> shift`, a halving turns that into `v >> (shift + 1)`, and the
/// final shift is the least that leaves at most `MAX_VALUES` distinct
/// values of everything recorded (each merge takes the least shift, at
/// least the last, that does so for what it has seen; that of everything
/// recorded qualifies at every merge, and is reached at the last).
#[derive(Debug, Clone, Default)]
pub struct DelayHistogram {
    zeros: u64,
    /// `(value >> shift, how many)`, by value.
    values: Vec<(u64, u64)>,
    /// Non-zero delays (ns) recorded since the last merge.
    pending: Vec<u64>,
    shift: u32,
    count: u64,
}

impl DelayHistogram {
    pub const MAX_VALUES: usize = 4096;
    /// Delays gathered before they are merged.
    pub const BATCH: usize = 4096;

    pub fn record(&mut self, ns: u64) {
        self.count += 1;
        if ns == 0 {
            self.zeros += 1;
            return;
        }
        self.pending.push(ns);
        if self.pending.len() >= Self::BATCH {
            self.merge();
        }
    }

    /// Merges the pending delays into the counts, then halves the
    /// resolution while more than [`DelayHistogram::MAX_VALUES`] values
    /// are distinct.
    fn merge(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let shift = self.shift;
        let mut pending = std::mem::take(&mut self.pending);
        pending.iter_mut().for_each(|v| *v >>= shift);
        pending.sort_unstable();
        let mut merged = Vec::with_capacity(self.values.len() + pending.len());
        let mut old = self.values.iter().copied().peekable();
        let mut new = pending.iter().copied().peekable();
        loop {
            let next = match (old.peek(), new.peek()) {
                (Some(&(v, n)), Some(&w)) if v <= w => {
                    old.next();
                    (v, n)
                }
                (_, Some(&w)) => {
                    new.next();
                    (w, 1)
                }
                (Some(&e), None) => {
                    old.next();
                    e
                }
                (None, None) => break,
            };
            add(&mut merged, next);
        }
        pending.clear();
        self.pending = pending;
        while merged.len() > Self::MAX_VALUES {
            self.shift += 1;
            let halved = merged.len();
            let mut out = 0;
            for i in 0..halved {
                let (v, n) = merged[i];
                let v = v >> 1;
                if out > 0 && merged[out - 1].0 == v {
                    merged[out - 1].1 += n;
                } else {
                    merged[out] = (v, n);
                    out += 1;
                }
            }
            merged.truncate(out);
        }
        self.values = merged;
    }

    /// This histogram with every delay merged (a copy if any is pending).
    fn merged(&self) -> std::borrow::Cow<'_, DelayHistogram> {
        if self.pending.is_empty() {
            std::borrow::Cow::Borrowed(self)
        } else {
            let mut h = self.clone();
            h.merge();
            std::borrow::Cow::Owned(h)
        }
    }

    /// Nearest-rank percentile (`per_mille` of 1000), in ns; `None` if empty.
    pub fn percentile(&self, per_mille: u64) -> Option<Nanos> {
        if self.count == 0 {
            return None;
        }
        let rank = (per_mille as u128 * self.count as u128)
            .div_ceil(1000)
            .max(1) as u64;
        if rank <= self.zeros {
            return Some(Nanos::ZERO);
        }
        let h = self.merged();
        let mut seen = h.zeros;
        for &(v, n) in &h.values {
            seen += n;
            if seen >= rank {
                return Some(Nanos(v << h.shift));
            }
        }
        unreachable!("rank ≤ count")
    }

    pub fn max(&self) -> Option<Nanos> {
        if self.count == 0 {
            return None;
        }
        let h = self.merged();
        Some(Nanos(h.values.last().map_or(0, |&(v, _)| v << h.shift)))
    }
}

/// Appends `(v, n)` to counts sorted by value, adding to the last if it
/// has the same value.
fn add(counts: &mut Vec<(u64, u64)>, (v, n): (u64, u64)) {
    match counts.last_mut() {
        Some(last) if last.0 == v => last.1 += n,
        _ => counts.push((v, n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn an_id_slot_is_one_pair_of_cache_lines() {
        assert_eq!(std::mem::size_of::<PerId>(), 128);
        assert_eq!(std::mem::align_of::<PerId>(), 128);
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
        assert_eq!(r.pass_ratios(), [1.0, 0.5]);
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

    // Regression (tests/fuzz.rs, a leaky bucket with cost 10^12 at 2/s):
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

    #[test]
    fn passes_queue_in_place_then_on_the_heap_in_order() {
        let mut p = Passes::default();
        let mut model = VecDeque::new();
        let big = u32::MAX as u64 + 1;
        for (i, cost) in [1, 2, 3, 4, 5, big, 1, 1].into_iter().enumerate() {
            p.push_back((i as u64, cost));
            model.push_back((i as u64, cost));
            if i % 3 == 2 {
                p.pop_front();
                model.pop_front();
            }
            p.add_to_back(1);
            model.back_mut().unwrap().1 += 1;
            assert_eq!(
                (p.front(), p.back()),
                (model.front().copied(), model.back().copied())
            );
        }
        p.clear();
        assert_eq!((p.front(), p.spill.is_none()), (None, true));
        p.push_back((9, u8::MAX as u64));
        p.add_to_back(1);
        assert_eq!(p.back(), Some((9, 256)));
        // Passes more than 2^32 ns apart stay in place once the older have
        // gone, counted from the oldest left.
        p.clear();
        p.push_back((10, 1));
        p.push_back((10 + big / 2, 1));
        p.pop_front();
        p.push_back((10 + big + 5, 1));
        assert!(p.spill.is_none());
        assert_eq!(
            (p.front(), p.back()),
            (Some((10 + big / 2, 1)), Some((15 + big, 1)))
        );
    }

    #[test]
    fn passes_out_of_time_order_are_kept_exactly() {
        // The engine releases passes in time order; were one ever out of
        // it, the queue still holds what a deque would (a rebase counts
        // from the least time held, not the oldest's).
        let big = u32::MAX as u64;
        let mut p = Passes::default();
        let mut model = VecDeque::new();
        for (op, t) in [
            (1, 100),
            (1, 200),
            (0, 0),
            (1, 150),
            (1, 100 + big + 10),
            (1, 120),
        ] {
            if op == 0 {
                p.pop_front();
                model.pop_front();
            } else {
                p.push_back((t, 1));
                model.push_back((t, 1));
            }
            assert_eq!(
                (p.front(), p.back()),
                (model.front().copied(), model.back().copied())
            );
        }
        while let Some(e) = model.pop_front() {
            assert_eq!(p.front(), Some(e));
            p.pop_front();
        }
        assert_eq!(p.front(), None);
    }

    proptest::proptest! {
        /// Whatever the times, gaps and costs, the queue holds exactly what
        /// a plain deque holds, and it holds them in place only when they
        /// fit there: at most six, less than 2^32 ns apart, costs below 256.
        #[test]
        fn passes_are_a_deque(ops in proptest::collection::vec(
            (0u8..4, proptest::prop_oneof![0u64..3, 0u64..1_000_000_000, 0u64..(1 << 34)],
             proptest::prop_oneof![1u64..4, 1u64..300, 1u64..(1 << 33)]),
            1..200,
        )) {
            let (mut p, mut model) = (Passes::default(), VecDeque::<(u64, u64)>::new());
            let mut t = 0u64;
            for (op, gap, cost) in ops {
                t += gap;
                match op {
                    0 => {
                        p.pop_front();
                        model.pop_front();
                    }
                    1 if !model.is_empty() => {
                        p.add_to_back(cost);
                        model.back_mut().expect("non-empty").1 += cost;
                    }
                    2 if model.len() > 8 => {
                        p.clear();
                        model.clear();
                    }
                    _ => {
                        p.push_back((t, cost));
                        model.push_back((t, cost));
                    }
                }
                proptest::prop_assert_eq!(
                    (p.front(), p.back()),
                    (model.front().copied(), model.back().copied())
                );
                let fits = model.len() <= INLINE_PASSES
                    && model.iter().all(|&(_, c)| c <= u8::MAX as u64)
                    && model.back().zip(model.front())
                        .is_none_or(|(b, f)| b.0 - f.0 <= u32::MAX as u64);
                if p.spill.is_none() {
                    proptest::prop_assert!(fits);
                }
            }
            // Drained, it reads the same as the deque to the end.
            while let Some(f) = model.pop_front() {
                proptest::prop_assert_eq!(p.front(), Some(f));
                p.pop_front();
            }
            proptest::prop_assert_eq!(p.front(), None);
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
