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
use crate::traffic::poisson::{CompactClock, Poisson};
use crate::traffic::{Arrival, Pattern, Stream, StreamCtx};

/// How many arrivals ahead the generator asks for their streams' state.
const PREFETCH_AHEAD: usize = 8;

/// How many of a recording's arrivals are taken from its stream at once.
const RECORDED_BATCH: usize = 256;

/// A finished stream's pending arrival: never taken.
const NO_ARRIVAL: Arrival = Arrival {
    time: Nanos::ZERO,
    client: 0,
    ip: 0,
    cost: 0,
};

/// One first attempt, as every limiter that sees its source takes it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shared {
    pub arrival: Arrival,
    /// Its source's id (see [`Scenario::sources`]): its `[[traffic]]`'s
    /// own, or a part's of a split trace.
    pub source: u32,
    /// The request's index within its stream.
    pub request: u64,
    /// This arrival's push number among all arrivals.
    pub index: u64,
    /// Arrivals pushed once this one is taken (its stream's next included).
    pub pushed: u64,
}

/// How one `[[traffic]]`'s streams are held.
enum Gen<'a> {
    /// Boxed streams, each with its next arrival and how many it gave.
    Streams {
        streams: Vec<Box<dyn Stream>>,
        pending: Vec<Arrival>,
        requests: Vec<u64>,
    },
    /// A recording's one stream.
    Recorded(RecordingStream),
    /// Poisson clients, each an 8-byte clock (its next arrival time is its
    /// time on the queue, and it counts its draws): no generator buffer
    /// and no counter per client.
    Poisson {
        poisson: &'a Poisson,
        clocks: Vec<CompactClock>,
    },
}

/// An arrival of a recording and its part.
type InPart = (Arrival, u32);

/// A recording's one stream: its arrivals taken from the stream a batch
/// at a time, each with its part (see [`Stream::next_in_part`]), the next
/// (pending) one at `ahead[at]` and those after it at `ahead[at + 1..]`
/// (`ahead` is empty once the stream has ended), and how many it gave.
///
/// The pending arrival stays where the batch put it rather than being
/// copied out into a field of its own: read back at the next take, such a
/// copy was written and read again within a few instructions, which
/// stalled the load on the store. (On the nginx bench log, half of the
/// samples of the chunk's filling fell on that load.)
struct RecordingStream {
    stream: Box<dyn Stream>,
    ahead: Vec<InPart>,
    at: usize,
    requests: u64,
}

impl RecordingStream {
    /// A stream whose first arrival is `first`, if any.
    fn new(stream: Box<dyn Stream>, first: Option<InPart>) -> RecordingStream {
        let mut ahead = Vec::with_capacity(RECORDED_BATCH);
        ahead.extend(first);
        RecordingStream {
            stream,
            ahead,
            at: 0,
            requests: 0,
        }
    }

    /// Takes the pending arrival: it, its part, its index in the stream,
    /// and the stream's next (then pending), if any. There must be one:
    /// a stream is taken from only when its next is on the queue.
    #[inline(always)]
    fn take(&mut self) -> anyhow::Result<(Arrival, u32, u64, Option<InPart>)> {
        let (arrival, part) = self.ahead[self.at];
        self.at += 1;
        if self.at == self.ahead.len() {
            self.ahead.clear();
            self.at = 0;
            self.stream.fill_in_part(&mut self.ahead, RECORDED_BATCH)?;
        }
        let next = self.ahead.get(self.at).copied();
        let request = self.requests;
        self.requests += 1;
        Ok((arrival, part, request, next))
    }

    /// The pending arrival's time. There must be one, as for
    /// [`RecordingStream::take`].
    fn pending_time(&self) -> Nanos {
        self.ahead[self.at].0.time
    }
}

/// The merged streams of the sources some limiter sees.
pub(super) struct Arrivals<'a> {
    ctx: StreamCtx,
    /// Per `[[traffic]]` (`None`: no limiter sees it).
    gens: Vec<Option<Gen<'a>>>,
    /// Per `[[traffic]]`, the index of its first stream (a stream's is
    /// the last whose first is at most the stream's index).
    first: Vec<u32>,
    /// Per `[[traffic]]`, the id of its first source (its part 0).
    first_source: Vec<u32>,
    /// Payload: the stream.
    queue: Queue,
    /// The `[[traffic]]` whose recording is the only stream, if one is.
    lone_recording: Option<usize>,
}

impl<'a> Arrivals<'a> {
    /// The streams of every `[[traffic]]` whose flag in `seen` is set (in
    /// scenario order).
    pub(super) fn new(scenario: &'a Scenario, seen: &[bool]) -> anyhow::Result<Arrivals<'a>> {
        let ctx = StreamCtx {
            seed: scenario.seed,
            end: scenario.duration,
        };
        let mut queue = Queue::new();
        let (mut gens, mut first, mut streams_so_far) = (Vec::new(), Vec::new(), 0usize);
        for (src, traffic) in scenario.traffic.iter().enumerate() {
            first.push(streams_so_far as u32);
            if !seen[src] {
                gens.push(None);
                continue;
            }
            let base = streams_so_far;
            let gen = match &traffic.pattern {
                Pattern::Poisson(p) => {
                    let mut clocks = Vec::new();
                    let n = p.clients.len();
                    crate::cache::grow_with(&mut clocks, n, CompactClock::default);
                    for (i, clock) in clocks.iter_mut().enumerate() {
                        if let Some(t) = p.tick(src, i, Nanos::ZERO, clock, ctx) {
                            queue.push(t, (base + i) as u32);
                        }
                    }
                    streams_so_far += clocks.len();
                    Gen::Poisson { poisson: p, clocks }
                }
                Pattern::Trace(t) => {
                    let mut stream = t.open(ctx)?;
                    let next = stream.next_in_part()?;
                    if let Some((a, _)) = next {
                        queue.push(a.time, base as u32);
                    }
                    streams_so_far += 1;
                    Gen::Recorded(RecordingStream::new(stream, next))
                }
                pattern => {
                    let mut streams = pattern.streams(src, ctx)?;
                    let mut pending = Vec::with_capacity(streams.len());
                    for (i, stream) in streams.iter_mut().enumerate() {
                        let next = stream.next()?;
                        if let Some(a) = next {
                            queue.push(a.time, (base + i) as u32);
                        }
                        pending.push(next.unwrap_or(NO_ARRIVAL));
                    }
                    streams_so_far += streams.len();
                    let requests = vec![0; streams.len()];
                    Gen::Streams {
                        streams,
                        pending,
                        requests,
                    }
                }
            };
            gens.push(Some(gen));
        }
        let mut generated = gens.iter().enumerate().filter(|(_, g)| g.is_some());
        let lone_recording = match (generated.next(), generated.next()) {
            (Some((src, Some(Gen::Recorded(_)))), None) => Some(src),
            _ => None,
        };
        Ok(Arrivals {
            ctx,
            lone_recording,
            gens,
            first,
            first_source: scenario.first_sources(),
            queue,
        })
    }

    /// Arrivals pushed before any is taken.
    pub(super) fn pushed(&self) -> u64 {
        self.queue.pushed()
    }

    /// The `[[traffic]]` of stream `i`.
    fn traffic_of(&self, i: u32) -> u32 {
        (self.first.partition_point(|&f| f <= i) - 1) as u32
    }

    /// Asks for the state stream `i` will touch when its turn comes (see
    /// [`crate::cache`]): when its source is the first (then its index in
    /// the source is `i`) and Poisson, its clock and client.
    fn prefetch(&self, i: usize) {
        use crate::cache::prefetch;
        if let Some(Some(Gen::Poisson { poisson, clocks })) = self.gens.first() {
            prefetch(clocks, i);
            poisson.clients.prefetch(i);
        }
    }

    /// Replaces `out` with up to `max` next arrivals; empty at the end.
    pub(super) fn next_chunk(&mut self, out: &mut Vec<Shared>, max: usize) -> anyhow::Result<()> {
        out.clear();
        if let Some(src) = self.lone_recording {
            return self.next_recorded(src, out, max);
        }
        // A lone stream's next arrival, held here rather than pushed into
        // the empty queue and popped back at once (as the queue's one
        // event, it is written and read again within a few instructions,
        // which stalls the load on the store).
        let mut held: Option<(Nanos, u64, u32)> = None;
        while out.len() < max {
            if let Some(i) = self.queue.ahead(PREFETCH_AHEAD) {
                self.prefetch(i as usize);
            }
            let Some((time, index, i)) = held.take().or_else(|| self.queue.pop_numbered()) else {
                break;
            };
            let src = self.traffic_of(i);
            let j = (i - self.first[src as usize]) as usize;
            let gen = self.gens[src as usize]
                .as_mut()
                .expect("a queued stream's source is generated");
            let (arrival, part, request, next) = match gen {
                Gen::Streams {
                    streams,
                    pending,
                    requests,
                } => {
                    let arrival = pending[j];
                    let next = streams[j].next()?;
                    if let Some(n) = next {
                        pending[j] = n;
                    }
                    let request = requests[j];
                    requests[j] += 1;
                    (arrival, 0, request, next.map(|n| n.time))
                }
                Gen::Recorded(recorded) => {
                    let (arrival, part, request, next) = recorded.take()?;
                    (arrival, part, request, next.map(|(n, _)| n.time))
                }
                Gen::Poisson { poisson, clocks } => {
                    let (client, ip) = poisson.clients.get(j);
                    let arrival = Arrival {
                        time,
                        client,
                        ip,
                        cost: poisson.cost,
                    };
                    // The arrival taken came of the clock's latest draw.
                    let request = clocks[j].draws() - 1;
                    let next = poisson.tick(src as usize, j, time, &mut clocks[j], self.ctx);
                    (arrival, 0, request, next)
                }
            };
            if let Some(t) = next {
                debug_assert!(t >= arrival.time, "streams yield in time order");
                match self.queue.is_empty() {
                    true => held = Some((t, self.queue.take_seq(), i)),
                    false => self.queue.push(t, i),
                }
            }
            out.push(Shared {
                arrival,
                source: self.first_source[src as usize] + part,
                request,
                index,
                pushed: self.queue.pushed(),
            });
        }
        // (A stream's error above ends the run: what is held then
        // matters no more.)
        if let Some((t, seq, i)) = held {
            self.queue.restore(t, seq, i);
        }
        Ok(())
    }

    /// [`Arrivals::next_chunk`] when the only stream is `[[traffic]]`
    /// `src`'s recording: its arrivals in its order, numbered as the queue
    /// would number them (arrival `k` was pushed `k`-th, and its next is
    /// pushed once it is taken), without the queue's merge. The stream's
    /// next arrival stays on the queue between chunks, as the merge leaves
    /// it.
    fn next_recorded(
        &mut self,
        src: usize,
        out: &mut Vec<Shared>,
        max: usize,
    ) -> anyhow::Result<()> {
        let Some(Gen::Recorded(recorded)) = self.gens[src].as_mut() else {
            unreachable!("a lone recording's source is generated as one")
        };
        let first_source = self.first_source[src];
        let Some((_, mut index, i)) = self.queue.pop_numbered() else {
            return Ok(());
        };
        while out.len() < max {
            // The buffered arrivals whose next is buffered too, in one
            // copy: taking the `k`-th of them (`index + k`) pushes its
            // next, `index + k + 1`.
            let at = recorded.at;
            let n = (recorded.ahead.len().saturating_sub(at + 1)).min(max - out.len());
            if n > 0 {
                let seq = self.queue.take_seqs(n as u64);
                debug_assert_eq!(
                    index + 1,
                    seq,
                    "a lone stream's arrivals are numbered in turn"
                );
                debug_assert!(
                    recorded.ahead[at..=at + n]
                        .windows(2)
                        .all(|w| w[0].0.time <= w[1].0.time),
                    "streams yield in time order"
                );
                let requests = recorded.requests;
                let run = recorded.ahead[at..at + n].iter().zip(0..);
                out.extend(run.map(|(&(arrival, part), k)| Shared {
                    arrival,
                    source: first_source + part,
                    request: requests + k,
                    index: index + k,
                    pushed: index + k + 2,
                }));
                recorded.at += n;
                recorded.requests += n as u64;
                index += n as u64;
                continue;
            }
            // The buffer's last: its next is known once the buffer is
            // filled again.
            let (arrival, part, request, next) = recorded.take()?;
            let taken = next.map(|_| self.queue.take_seq());
            out.push(Shared {
                arrival,
                source: first_source + part,
                request,
                index,
                pushed: self.queue.pushed(),
            });
            let (Some(n), Some(seq)) = (next, taken) else {
                return Ok(());
            };
            // Pushed in turn: arrival k the k-th.
            debug_assert_eq!(
                index + 1,
                seq,
                "a lone stream's arrivals are numbered in turn"
            );
            debug_assert!(n.0.time >= arrival.time, "streams yield in time order");
            index = seq;
        }
        self.queue.restore(recorded.pending_time(), index, i);
        Ok(())
    }
}
