//! The open-loop arrivals of a run, generated once for every limiter.
//!
//! Every limiter of a scenario faces the same first attempts: the streams
//! of the sources it sees, merged by `(time, sequence)` exactly as a
//! limiter's own event queue would merge them. They are generated here
//! once, in chunks, and each limiter's run consumes every chunk in turn
//! (see [`super::simulate_all`]); only what differs per limiter — retries,
//! store round trips — waits on the limiter's own small queue.
//!
//! The order is the one a single queue holding both gives. A stream's next
//! arrival is pushed when its previous one is taken, before that attempt is
//! decided, and the first arrivals of all streams are pushed first, in
//! stream order: so among arrivals the order depends on the arrivals alone,
//! and each [`Shared`] carries its push number (`index`) and the number of
//! arrivals pushed once it is taken (`pushed`). A limiter's own event
//! pushed after `k` arrival pushes comes before an arrival at the same
//! time iff the arrival was pushed later: `index ≥ k`.

use super::queue::Queue;
use crate::clock::Nanos;
use crate::scenario::Scenario;
use crate::traffic::{Arrival, Stream, StreamCtx};

/// One first attempt, as every limiter that sees its source takes it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shared {
    pub arrival: Arrival,
    pub source: u32,
    /// The request's index within its stream.
    pub request: u64,
    /// This arrival's push number among all arrivals.
    pub index: u64,
    /// Arrivals pushed once this one is taken (its stream's next included).
    pub pushed: u64,
}

/// The merged streams of the sources some limiter sees.
pub(super) struct Arrivals {
    streams: Vec<Box<dyn Stream>>,
    source: Vec<u32>,
    /// Each stream's next arrival (the queue's payload names the stream).
    pending: Vec<Arrival>,
    requests: Vec<u64>,
    queue: Queue,
}

impl Arrivals {
    /// The streams of every source in `sources` (in source order).
    pub(super) fn new(scenario: &Scenario, sources: &[bool]) -> anyhow::Result<Arrivals> {
        let ctx = StreamCtx {
            seed: scenario.seed,
            end: scenario.duration,
        };
        let mut streams: Vec<Box<dyn Stream>> = Vec::new();
        let mut source = Vec::new();
        for (i, traffic) in scenario.traffic.iter().enumerate() {
            if sources[i] {
                let s = traffic.pattern.streams(i, ctx)?;
                source.extend(std::iter::repeat_n(i as u32, s.len()));
                streams.extend(s);
            }
        }
        let n = streams.len();
        let mut queue = Queue::with_capacity(n);
        let mut pending = Vec::with_capacity(n);
        for (i, stream) in streams.iter_mut().enumerate() {
            let next = stream.next()?;
            if let Some(a) = next {
                queue.push(a.time, i as u32);
            }
            pending.push(next.unwrap_or(Arrival {
                time: Nanos::ZERO,
                client: 0,
                ip: 0,
                cost: 0,
            }));
        }
        Ok(Arrivals {
            streams,
            source,
            pending,
            requests: vec![0; n],
            queue,
        })
    }

    /// Arrivals pushed before any is taken.
    pub(super) fn pushed(&self) -> u64 {
        self.queue.pushed()
    }

    /// Replaces `out` with up to `max` next arrivals; empty at the end.
    pub(super) fn next_chunk(&mut self, out: &mut Vec<Shared>, max: usize) -> anyhow::Result<()> {
        out.clear();
        while out.len() < max {
            let Some((_, index, i)) = self.queue.pop_numbered() else {
                break;
            };
            let i = i as usize;
            let arrival = self.pending[i];
            let request = self.requests[i];
            self.requests[i] += 1;
            if let Some(next) = self.streams[i].next()? {
                debug_assert!(next.time >= arrival.time, "streams yield in time order");
                self.pending[i] = next;
                self.queue.push(next.time, i as u32);
            }
            out.push(Shared {
                arrival,
                source: self.source[i],
                request,
                index,
                pushed: self.queue.pushed(),
            });
        }
        Ok(())
    }
}
