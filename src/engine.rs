//! The discrete-event engine: one limiter, one run, no I/O.
//!
//! Every traffic stream contributes its next arrival to an event queue
//! ordered by `(time, sequence)`; the sequence number is given when an event
//! is created, so events at the same nanosecond come out first-in first-out
//! and every run is deterministic. The engine pops the earliest event, asks
//! the limiter, hands the decision to the [`Recorder`] and to an optional
//! [`DecisionSink`], and pulls that stream's next arrival. Memory holds one
//! pending event per stream plus per-key state — never the requests.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::clock::Nanos;
use crate::limiter::{Decision, Footprint};
use crate::metrics::Recorder;
use crate::scenario::{KeyBy, Scenario};
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
    );
    let ctx = StreamCtx {
        seed: scenario.seed,
        end: scenario.duration,
    };
    let mut streams: Vec<Box<dyn Stream>> = Vec::new();
    for (source, pattern) in scenario.traffic.iter().enumerate() {
        streams.extend(pattern.streams(source, ctx)?);
    }

    let mut queue = Queue::with_capacity(streams.len());
    let mut pending: Vec<Option<Arrival>> = vec![None; streams.len()];
    for (i, s) in streams.iter_mut().enumerate() {
        if let Some(a) = s.next()? {
            queue.push(a.time, i as u32);
            pending[i] = Some(a);
        }
    }

    let mut events = 0u64;
    while let Some((_, i)) = queue.pop() {
        let i = i as usize;
        let arrival = pending[i]
            .take()
            .expect("a queued stream has a pending arrival");
        let key = match spec.key_by {
            KeyBy::Client => arrival.client,
            KeyBy::Ip => arrival.ip,
            KeyBy::Global => 0,
        };
        let decision = limiter.decide(key, arrival.time, arrival.cost);
        recorder.record(key, arrival.time, arrival.cost, decision);
        if let Some(sink) = sink.as_deref_mut() {
            sink.record(&Attempt {
                arrival,
                key,
                attempt: 1,
                decision,
            })?;
        }
        if let Some(next) = streams[i].next()? {
            debug_assert!(next.time >= arrival.time, "streams yield in time order");
            queue.push(next.time, i as u32);
            pending[i] = Some(next);
        }
        events += 1;
        if events % PROGRESS_EVERY == 0 {
            progress(arrival.time, PROGRESS_EVERY);
        }
    }
    progress(scenario.duration, events % PROGRESS_EVERY);

    Ok(LimiterRun {
        footprint: limiter.footprint(scenario.duration),
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
