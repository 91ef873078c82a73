//! The discrete-event engine: one limiter, one run, no I/O.
//!
//! Every traffic stream contributes its next arrival to an event queue
//! ordered by `(time, sequence)`; the sequence number is given when an event
//! is created, so events at the same nanosecond come out first-in first-out
//! and every run is deterministic. The engine pops the earliest event, asks
//! the limiter, hands the decision to the [`Recorder`] and to an optional
//! [`DecisionSink`], and then either pulls that stream's next arrival or —
//! for a rejected attempt whose client retries — schedules the retry as a new
//! event. Memory holds one pending event per stream and per retry in flight,
//! plus per-key state: never the requests.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use rand::Rng;

use crate::clock::Nanos;
use crate::deploy::{fnv1a, Deployment, OnFailure, Routing, Scope};
use crate::limiter::{Decision, Footprint, Limiter};
use crate::metrics::Recorder;
use crate::scenario::{KeyBy, Scenario};
use crate::traffic::retry::{event_rng, Retry};
use crate::traffic::{Arrival, Stream, StreamCtx};

/// One attempt and what the limiter decided, as the decision log records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    pub arrival: Arrival,
    /// The id the limiter keyed on (client id, ip id, or 0 for global).
    pub key: u32,
    /// 1 for a first attempt.
    pub attempt: u32,
    pub decision: Decision,
}

/// Receives every decision in processing order (the decision log).
pub trait DecisionSink {
    fn record(&mut self, attempt: &Attempt) -> anyhow::Result<()>;
}

/// What one limiter's run produced.
#[derive(Debug, Clone)]
pub struct LimiterRun {
    pub recorder: Recorder,
    pub footprint: Footprint,
}

/// How often (in events) progress is reported.
pub const PROGRESS_EVERY: u64 = 1 << 16;

/// One logical request on its way: its current attempt and its history.
#[derive(Debug, Clone, Copy)]
struct Job {
    /// The current attempt; `arrival.time` is when it reaches an instance.
    arrival: Arrival,
    source: u32,
    /// The request's index within its stream.
    request: u64,
    first: Nanos,
    attempt: u32,
    /// The wait before this attempt (for decorrelated jitter).
    last_wait: Nanos,
}

/// Something that happens at a moment of the run.
#[derive(Debug, Clone, Copy)]
enum Event {
    /// An attempt reaches a gateway instance.
    Arrive(Job),
    /// An attempt's store operation (the whole decision, or the read of a
    /// read-then-write) reaches the store. `late`: the instance has already
    /// given up on it; the store applies it all the same.
    Store {
        job: Job,
        key: u32,
        instance: u32,
        rtt: Nanos,
        late: bool,
    },
    /// The instance gives up on the store and decides by its failure mode.
    Failed { job: Job, key: u32, instance: u32 },
    /// A read-then-write's write reaches the store.
    Write { key: u32, ticket: u32 },
}

/// Simulates limiter `index` of `scenario` from start to end.
///
/// `progress` is called every [`PROGRESS_EVERY`] events with the simulated
/// time reached and the events processed since the last call.
pub fn simulate(
    scenario: &Scenario,
    index: usize,
    sink: Option<&mut dyn DecisionSink>,
    progress: &(dyn Fn(Nanos, u64) + Sync),
) -> anyhow::Result<LimiterRun> {
    let spec = &scenario.limiters[index];
    let end = scenario.duration;
    let ctx = StreamCtx {
        seed: scenario.seed,
        end,
    };
    let mut streams: Vec<Box<dyn Stream>> = Vec::new();
    let mut stream_source: Vec<u32> = Vec::new();
    let mut retries: Vec<Retry> = Vec::new();
    for (source, traffic) in scenario.traffic.iter().enumerate() {
        retries.push(traffic.retry);
        if spec.traffic.contains(&source) {
            let s = traffic.pattern.streams(source, ctx)?;
            stream_source.extend(std::iter::repeat_n(source as u32, s.len()));
            streams.extend(s);
        }
    }
    let mut run = Run {
        scenario,
        dep: &spec.deployment,
        key_by: spec.key_by,
        limiters: match spec.deployment.scope {
            Scope::Local { .. } => (0..spec.deployment.instances)
                .map(|_| spec.deployment.instance_algorithm(&spec.algorithm).build())
                .collect(),
            Scope::Global { .. } => vec![spec.algorithm.build()],
        },
        fallbacks: match (&spec.deployment.fallback, spec.deployment.is_global()) {
            (Some(f), true) => (0..spec.deployment.instances).map(|_| f.build()).collect(),
            _ => Vec::new(),
        },
        shadow: (spec.key_by != KeyBy::Client).then(|| spec.algorithm.build()),
        cache: vec![Vec::new(); spec.deployment.instances as usize],
        local_ids: vec![HashMap::new(); spec.deployment.instances as usize],
        routed: 0,
        recorder: Recorder::new(
            scenario.defaults.window,
            scenario.defaults.limit,
            scenario.output.resolution,
            end,
            scenario.population.clients(),
        ),
        sink,
        retries,
        queue: Queue::with_capacity(streams.len()),
        events: Vec::new(),
        first_slot: streams.len() as u32,
        free: Vec::new(),
    };

    // Slot i < streams.len() holds stream i's next arrival; other events
    // take the slots after, reused through `free`.
    let n_streams = streams.len();
    // Queue payloads below `n_streams` name a stream whose next arrival
    // waits in `pending` (kept small: it is the hot path); the others name
    // `events[payload − n_streams]`.
    let mut pending: Vec<Arrival> = Vec::with_capacity(n_streams);
    let mut requests = vec![0u64; n_streams];
    for (i, stream) in streams.iter_mut().enumerate() {
        let next = stream.next()?;
        if let Some(a) = next {
            run.queue.push(a.time, i as u32);
        }
        pending.push(next.unwrap_or(Arrival {
            time: Nanos::ZERO,
            client: 0,
            ip: 0,
            cost: 0,
        }));
    }

    let mut count = 0u64;
    // The last moment anything happened: store answers and a shaper's
    // releases may come after `duration`, and state is held until then.
    let mut last = end;
    while let Some((now, payload)) = run.queue.pop() {
        let i = payload as usize;
        let event = if i < n_streams {
            let arrival = pending[i];
            let job = Job {
                arrival,
                source: stream_source[i],
                request: requests[i],
                first: arrival.time,
                attempt: 1,
                last_wait: Nanos::ZERO,
            };
            requests[i] += 1;
            if let Some(next) = streams[i].next()? {
                debug_assert!(next.time >= arrival.time, "streams yield in time order");
                pending[i] = next;
                run.queue.push(next.time, i as u32);
            }
            Event::Arrive(job)
        } else {
            let slot = i - n_streams;
            run.free.push(slot as u32);
            run.events[slot]
                .take()
                .expect("a queued slot holds an event")
        };
        run.recorder.advance(now);
        run.handle(now, event)?;
        last = last.max(now);
        count += 1;
        if count % PROGRESS_EVERY == 0 {
            progress(now, PROGRESS_EVERY);
        }
    }
    progress(end, count % PROGRESS_EVERY);
    run.recorder.finish();

    let footprint = run
        .limiters
        .iter()
        .map(|l| l.footprint(last))
        .reduce(Footprint::combine)
        .unwrap_or_default();
    Ok(LimiterRun {
        footprint,
        recorder: run.recorder,
    })
}

/// An instance's memory of a store rejection.
#[derive(Debug, Clone, Copy, Default)]
struct Cached {
    /// When the instance heard it.
    heard: u64,
    /// Rejected locally until then.
    until: u64,
    /// The store said the request can never pass (no retry-after).
    never: bool,
}

/// The state of one limiter's run.
struct Run<'a, 's> {
    scenario: &'a Scenario,
    dep: &'a Deployment,
    key_by: KeyBy,
    /// One per instance (local scope), or the store's one (global scope).
    limiters: Vec<Box<dyn Limiter>>,
    /// Each instance's fallback limiter (`local_fallback`).
    fallbacks: Vec<Box<dyn Limiter>>,
    /// For a limiter that shares keys between clients (`ip`, `global`): a
    /// copy of the algorithm keyed by client, fed every attempt at the
    /// moment the limiter decides it. A rejection it would have passed is
    /// collateral: the client paid for someone else's traffic.
    shadow: Option<Box<dyn Limiter>>,
    /// Per instance, per key: rejected locally until this time (ns).
    cache: Vec<Vec<Cached>>,
    /// Per instance (when there are several): the instance's own dense ids
    /// for the keys it has seen, so its state grows with its keys, not with
    /// every key of the run.
    local_ids: Vec<HashMap<u32, u32>>,
    /// Attempts routed so far (round robin).
    routed: u64,
    recorder: Recorder,
    sink: Option<&'s mut dyn DecisionSink>,
    retries: Vec<Retry>,
    queue: Queue,
    /// Events other than streams' next arrivals, by slot; queued as
    /// `first_slot + slot`.
    events: Vec<Option<Event>>,
    first_slot: u32,
    free: Vec<u32>,
}

impl Run<'_, '_> {
    /// `key` as instance `instance`'s state knows it.
    fn local_key(&mut self, instance: u32, key: u32) -> u32 {
        if self.dep.instances == 1 {
            return key;
        }
        let ids = &mut self.local_ids[instance as usize];
        let next = ids.len() as u32;
        *ids.entry(key).or_insert(next)
    }

    fn schedule(&mut self, at: Nanos, event: Event) {
        let slot = match self.free.pop() {
            Some(s) => s as usize,
            None => {
                self.events.push(None);
                self.events.len() - 1
            }
        };
        self.events[slot] = Some(event);
        self.queue.push(at, self.first_slot + slot as u32);
    }

    fn rng(&self, job: &Job, tag: [u8; 4]) -> impl FnMut() -> rand_chacha::ChaCha8Rng {
        let (seed, j) = (self.scenario.seed, *job);
        move || event_rng(seed, j.source, j.arrival.client, j.request, j.attempt, tag)
    }

    fn handle(&mut self, now: Nanos, event: Event) -> anyhow::Result<()> {
        match event {
            Event::Arrive(job) => self.arrive(now, job),
            Event::Store {
                job,
                key,
                instance,
                rtt,
                late,
            } => self.at_store(now, job, key, instance, rtt, late),
            Event::Failed { job, key, instance } => {
                let cost = job.arrival.cost;
                let decision = match self.dep.on_failure {
                    OnFailure::FailOpen => {
                        self.recorder.fault_open += 1;
                        Decision::Admitted
                    }
                    OnFailure::FailClosed => {
                        self.recorder.fault_closed += 1;
                        // Not the limiter's decision: no key of its own
                        // would have helped the client.
                        let decision = Decision::Rejected { retry_after: None };
                        let latency = now - job.arrival.time;
                        return self.finish_with(job, key, now, latency, decision, false);
                    }
                    OnFailure::LocalFallback => {
                        self.recorder.fault_fallback += 1;
                        let local = self.local_key(instance, key);
                        self.fallbacks[instance as usize].decide(local, now, cost)
                    }
                };
                self.finish(job, key, now, now - job.arrival.time, decision)
            }
            Event::Write { key, ticket } => {
                self.limiters[0].write_back(key, ticket, now);
                Ok(())
            }
        }
    }

    /// An attempt reaches an instance.
    fn arrive(&mut self, now: Nanos, job: Job) -> anyhow::Result<()> {
        let a = job.arrival;
        let key = match self.key_by {
            KeyBy::Client => a.client,
            KeyBy::Ip => a.ip,
            KeyBy::Global => 0,
        };
        let n = self.dep.instances as u64;
        let instance = match self.dep.routing {
            _ if n == 1 => 0,
            Routing::RoundRobin => self.routed % n,
            Routing::Random => self.rng(&job, *b"rout")().random_range(0..n),
            Routing::HashClient => fnv1a(self.scenario.population.client_name(a.client)) % n,
            Routing::HashIp => fnv1a(self.scenario.population.ip_name(a.ip)) % n,
        } as u32;
        self.routed += 1;
        if !self.dep.is_global() {
            let local = self.local_key(instance, key);
            let decision = self.limiters[instance as usize].decide(local, now, a.cost);
            return self.finish(job, key, now, Nanos::ZERO, decision);
        }
        if self.dep.cache_over_limit {
            let local = self.local_key(instance, key);
            let c = self.cache[instance as usize]
                .get(local as usize)
                .copied()
                .unwrap_or_default();
            if c.heard <= now.0 && now.0 < c.until {
                self.recorder.cache_rejections += 1;
                let decision = Decision::Rejected {
                    retry_after: (!c.never).then(|| Nanos(c.until - now.0)),
                };
                return self.finish(job, key, now, Nanos::ZERO, decision);
            }
        }
        let rtt = self.dep.round_trip(&mut self.rng(&job, *b"rtt0"));
        let reach = now + Nanos(rtt.0 / 2);
        self.recorder.store_ops += 1;
        let failed =
            self.dep.in_outage(reach) || self.dep.random_failure(&mut self.rng(&job, *b"fal0"));
        let timed_out = self.dep.timeout.is_some_and(|t| rtt > t);
        if failed || timed_out {
            let wait = rtt.min(self.dep.timeout.unwrap_or(rtt));
            self.at(now, now + wait, Event::Failed { job, key, instance })?;
        }
        if !failed {
            let late = timed_out;
            let store = Event::Store {
                job,
                key,
                instance,
                rtt,
                late,
            };
            self.at(now, reach, store)?;
        }
        Ok(())
    }

    /// Handles `event` at `at`: now if that is the present (a zero
    /// latency takes no time, so nothing else may come between), else on
    /// the queue.
    fn at(&mut self, now: Nanos, at: Nanos, event: Event) -> anyhow::Result<()> {
        if at == now {
            self.handle(now, event)
        } else {
            self.schedule(at, event);
            Ok(())
        }
    }

    /// A store operation reaches the store.
    fn at_store(
        &mut self,
        now: Nanos,
        job: Job,
        key: u32,
        instance: u32,
        rtt: Nanos,
        late: bool,
    ) -> anyhow::Result<()> {
        let cost = job.arrival.cost;
        let decision = match self.dep.scope {
            Scope::Global { atomic: false } => {
                let (decision, ticket) = self.limiters[0].decide_detached(key, now, cost);
                // The instance writes back once the read's answer is in — if
                // it is still waiting for it.
                let write_rtt = self.dep.round_trip(&mut self.rng(&job, *b"rtt1"));
                let reach = job.arrival.time + rtt + Nanos(write_rtt.0 / 2);
                if !late {
                    self.recorder.store_ops += 1;
                }
                if late
                    || self.dep.in_outage(reach)
                    || self.dep.random_failure(&mut self.rng(&job, *b"fal1"))
                {
                    self.limiters[0].discard(ticket);
                } else {
                    self.at(now, reach, Event::Write { key, ticket })?;
                }
                decision
            }
            _ => self.limiters[0].decide(key, now, cost),
        };
        if late {
            return Ok(());
        }
        if self.dep.cache_over_limit {
            if let Decision::Rejected { retry_after } = decision {
                // The instance learns of the rejection when the answer is
                // back, and keeps it until the retry-after has passed (to
                // the end of the policy window if the request can never pass).
                let window = self.scenario.defaults.window.0;
                let entry = Cached {
                    heard: (job.arrival.time + rtt).0,
                    until: match retry_after {
                        Some(r) => now.0.saturating_add(r.0),
                        None => (now.0 / window + 1) * window,
                    },
                    never: retry_after.is_none(),
                };
                let local = self.local_key(instance, key) as usize;
                let cache = &mut self.cache[instance as usize];
                if cache.len() <= local {
                    cache.resize(local + 1, Cached::default());
                }
                cache[local] = entry;
            }
        }
        self.finish(job, key, now, rtt, decision)
    }

    /// Records a decision, logs it, and schedules a retry if the client
    /// makes one. `decided_at` is where the limiter is; the client hears
    /// the decision `latency` after the attempt arrived.
    fn finish(
        &mut self,
        job: Job,
        key: u32,
        decided_at: Nanos,
        latency: Nanos,
        decision: Decision,
    ) -> anyhow::Result<()> {
        self.finish_with(job, key, decided_at, latency, decision, true)
    }

    /// [`Run::finish`]; `by_limiter` is false for a decision the limiter
    /// did not take (a store failure under `fail_closed`), which is never
    /// collateral.
    fn finish_with(
        &mut self,
        job: Job,
        key: u32,
        decided_at: Nanos,
        latency: Nanos,
        decision: Decision,
        by_limiter: bool,
    ) -> anyhow::Result<()> {
        let a = job.arrival;
        if let Some(shadow) = self.shadow.as_mut() {
            // The shadow sees every attempt of the client, once.
            let own_key_passes = shadow.decide(a.client, decided_at, a.cost).passes();
            if by_limiter && own_key_passes && !decision.passes() {
                self.recorder.collateral_rejection(a.cost);
            }
        }
        self.recorder.attempt(
            key,
            a.client,
            a.time,
            decided_at,
            latency,
            job.first,
            job.attempt,
            a.cost,
            decision,
        );
        if let Some(sink) = self.sink.as_deref_mut() {
            sink.record(&Attempt {
                arrival: a,
                key,
                attempt: job.attempt,
                decision,
            })?;
        }
        if let Decision::Rejected { retry_after } = decision {
            let heard = a.time + latency;
            let retry = &self.retries[job.source as usize];
            let wait = retry.next_wait(
                job.attempt,
                retry_after,
                job.last_wait,
                &mut self.rng(&job, *b"rtry"),
            );
            match wait {
                None => self.recorder.gave_up(a.client, a.time),
                Some(w) if heard.0.saturating_add(w.0) > self.scenario.duration.0 => {
                    self.recorder.pending_at_end += 1
                }
                Some(w) => {
                    let at = heard + w;
                    let next = Job {
                        arrival: Arrival { time: at, ..a },
                        attempt: job.attempt + 1,
                        last_wait: w,
                        ..job
                    };
                    self.schedule(at, Event::Arrive(next));
                }
            }
        }
        Ok(())
    }
}

/// A min-queue of events ordered by `(time, sequence)`.
struct Queue {
    heap: BinaryHeap<Reverse<(u64, u64, u32)>>,
    seq: u64,
}

impl Queue {
    fn with_capacity(n: usize) -> Self {
        Queue {
            heap: BinaryHeap::with_capacity(n),
            seq: 0,
        }
    }

    fn push(&mut self, t: Nanos, payload: u32) {
        self.heap.push(Reverse((t.0, self.seq, payload)));
        self.seq += 1;
    }

    fn pop(&mut self) -> Option<(Nanos, u32)> {
        self.heap.pop().map(|Reverse((t, _, p))| (Nanos(t), p))
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
