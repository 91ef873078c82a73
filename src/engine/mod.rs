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
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | the run loop: streams, retries, decisions to the recorder |
//! | [`queue`] | the event queue, ordered by `(time, sequence)` |
//! | [`store`] | a deployment's protocol: routing, a shared store's round trips, faults and the over-limit cache |

mod queue;
mod store;

use std::collections::HashMap;

use crate::clock::Nanos;
use crate::deploy::{Deployment, Scope};
use crate::limiter::{Decision, Footprint, Limiter};
use crate::metrics::Recorder;
use crate::scenario::{KeyBy, Scenario};
use crate::traffic::retry::{event_rng, Retry};
use crate::traffic::{Arrival, Stream, StreamCtx};
use queue::Queue;
use store::Cached;

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
            Event::Failed { job, key, instance } => self.failed(now, job, key, instance),
            Event::Write { key, ticket } => {
                self.write(now, key, ticket);
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
        let instance = self.route(&job);
        if !self.dep.is_global() {
            let local = self.local_key(instance, key);
            let decision = self.limiters[instance as usize].decide(local, now, a.cost);
            return self.finish(job, key, now, Nanos::ZERO, decision);
        }
        self.send_to_store(now, job, key, instance)
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
                    self.recorder.pending_at_end()
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
