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
use std::collections::BinaryHeap;

use crate::clock::Nanos;
use crate::limiter::{Decision, Footprint};
use crate::metrics::Recorder;
use crate::scenario::{KeyBy, Scenario};
use crate::traffic::retry::{retry_rng, Retry};
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
    arrival: Arrival,
    source: u32,
    /// The request's index within its stream.
    request: u64,
    first: Nanos,
    attempt: u32,
    /// The wait before this attempt (for decorrelated jitter).
    last_wait: Nanos,
}

/// Simulates limiter `index` of `scenario` from start to end.
///
/// `progress` is called every [`PROGRESS_EVERY`] events with the simulated
/// time reached and the events processed since the last call.
pub fn simulate(
    scenario: &Scenario,
    index: usize,
    mut sink: Option<&mut dyn DecisionSink>,
    progress: &(dyn Fn(Nanos, u64) + Sync),
) -> anyhow::Result<LimiterRun> {
    let spec = &scenario.limiters[index];
    let mut limiter = spec.algorithm.build();
    let mut recorder = Recorder::new(
        scenario.defaults.window,
        scenario.output.resolution,
        scenario.duration,
        scenario.population.clients(),
    );
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
            stream_source.extend(std::iter::repeat(source as u32).take(s.len()));
            streams.extend(s);
        }
    }

    // Slot i < streams.len() holds stream i's next arrival; retries in
    // flight take the slots after, reused through `free`.
    let n_streams = streams.len();
    let mut queue = Queue::with_capacity(n_streams);
    let mut jobs: Vec<Option<Job>> = vec![None; n_streams];
    let mut requests = vec![0u64; n_streams];
    let mut free: Vec<u32> = Vec::new();
    let mut pull = |i: usize,
                    stream: &mut Box<dyn Stream>,
                    jobs: &mut Vec<Option<Job>>,
                    queue: &mut Queue|
     -> anyhow::Result<()> {
        if let Some(arrival) = stream.next()? {
            jobs[i] = Some(Job {
                arrival,
                source: stream_source[i],
                request: requests[i],
                first: arrival.time,
                attempt: 1,
                last_wait: Nanos::ZERO,
            });
            requests[i] += 1;
            queue.push(arrival.time, i as u32);
        }
        Ok(())
    };
    for (i, stream) in streams.iter_mut().enumerate() {
        pull(i, stream, &mut jobs, &mut queue)?;
    }

    let mut events = 0u64;
    while let Some((now, slot)) = queue.pop() {
        let slot = slot as usize;
        let job = jobs[slot].take().expect("a queued slot holds a job");
        let a = job.arrival;
        let key = match spec.key_by {
            KeyBy::Client => a.client,
            KeyBy::Ip => a.ip,
            KeyBy::Global => 0,
        };
        let decision = limiter.decide(key, now, a.cost);
        recorder.attempt(key, a.client, now, job.first, job.attempt, a.cost, decision);
        if let Some(sink) = sink.as_deref_mut() {
            sink.record(&Attempt {
                arrival: Arrival { time: now, ..a },
                key,
                attempt: job.attempt,
                decision,
            })?;
        }
        if let Decision::Rejected { retry_after } = decision {
            let retry = &retries[job.source as usize];
            let wait = retry.next_wait(job.attempt, retry_after, job.last_wait, &mut || {
                retry_rng(
                    scenario.seed,
                    job.source,
                    a.client,
                    job.request,
                    job.attempt,
                )
            });
            match wait {
                None => recorder.gave_up(a.client, now),
                Some(w) if now.0.saturating_add(w.0) > end.0 => recorder.pending_at_end += 1,
                Some(w) => {
                    let at = Nanos(now.0 + w.0);
                    let next = Job {
                        attempt: job.attempt + 1,
                        last_wait: w,
                        ..job
                    };
                    let s = match free.pop() {
                        Some(s) => s as usize,
                        None => {
                            jobs.push(None);
                            jobs.len() - 1
                        }
                    };
                    jobs[s] = Some(next);
                    queue.push(at, s as u32);
                }
            }
        }
        if slot < n_streams {
            pull(slot, &mut streams[slot], &mut jobs, &mut queue)?;
        } else {
            free.push(slot as u32);
        }
        events += 1;
        if events % PROGRESS_EVERY == 0 {
            progress(now, PROGRESS_EVERY);
        }
    }
    progress(end, events % PROGRESS_EVERY);

    Ok(LimiterRun {
        footprint: limiter.footprint(end),
        recorder,
    })
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
