//! A run alone with a thread to spare sets its recorder aside (see
//! [`drive`]): a thread of its own decides chunk after chunk of arrivals,
//! keeping its calls to the recorder, while the run's own thread makes
//! the calls kept over each chunk decided. Either thread generates the
//! chunks, whichever would otherwise wait ([`relay`]). Up to
//! [`IN_FLIGHT`] chunks are under way, so neither thread waits on the
//! other for long.
//!
//! A plain run (see `Run::is_plain`) that has no thread to spare, or runs
//! side by side with others, sets its recorder aside too: it decides a
//! chunk, then makes the calls kept over it ([`Aside::make_calls`]), on
//! the same thread — two tight loops, each with less to hold in the
//! caches than one that does both.
//!
//! The run keeps those calls compactly. A decision on a first attempt as
//! it arrives — nearly every call of a replay — is kept as the arrival's
//! place in its chunk, its key and the decision (24 bytes): the rest is
//! read from the chunk, which comes back to the run's own thread with
//! the calls. Any other call is kept as it is, with the number of
//! decisions kept before it. The recorder gets the same calls in the same
//! order as if the run had made them at once, so it counts the same.
//!
//! Each call is kept with the moment of the run's latest event when it was
//! made, and made after releasing the passes due by then, as
//! [`Recorder::advance`] at each of the run's events would have: released
//! at the next call instead of at every event, the same passes are
//! released in the same order, as nothing else touches the recorder in
//! between and the events come in time order (a run with closed-loop
//! clients, whose events may not, makes its calls at once).

use super::arrivals::{Arrivals, Shared};
use super::relay::relay;
use super::{Run, PREFETCH_AHEAD};
use crate::clock::Nanos;
use crate::limiter::Decision;
use crate::metrics::{Call, Decided, Recorder};

/// A decision on the first attempt of a chunk's arrival, as it arrived.
#[derive(Debug, Clone, Copy)]
struct OnArrival {
    /// Its place in the chunk.
    index: u32,
    key: u32,
    /// The decision: see [`OnArrival::decision`].
    value: u64,
    tag: u8,
    /// Whether its client gave up on its request then.
    gave_up: bool,
}

impl OnArrival {
    fn decision(&self) -> Decision {
        match self.tag {
            0 => Decision::Admitted,
            1 => Decision::Delayed {
                delay: Nanos(self.value),
            },
            2 => Decision::Rejected { retry_after: None },
            _ => Decision::Rejected {
                retry_after: Some(Nanos(self.value)),
            },
        }
    }
}

/// A run's recorder calls over one chunk, kept (see the module
/// documentation).
#[derive(Debug, Default)]
pub(super) struct Kept {
    arrivals: Vec<OnArrival>,
    /// Every other call: how many decisions in `arrivals` came before it,
    /// the moment of the run's latest event when it was made, the call.
    other: Vec<(u32, Nanos, Call)>,
}

impl Kept {
    pub(super) fn with_capacity(n: usize) -> Kept {
        Kept {
            arrivals: Vec::with_capacity(n),
            other: Vec::new(),
        }
    }

    /// The decision on the first attempt of the arrival at `index` of the
    /// chunk, keyed on `key`, taken at its arrival with no latency.
    #[inline(always)]
    pub(super) fn on_arrival(&mut self, index: u32, key: u32, decision: Decision) {
        let (tag, value) = match decision {
            Decision::Admitted => (0, 0),
            Decision::Delayed { delay } => (1, delay.0),
            Decision::Rejected { retry_after: None } => (2, 0),
            Decision::Rejected {
                retry_after: Some(w),
            } => (3, w.0),
        };
        self.arrivals.push(OnArrival {
            index,
            key,
            value,
            tag,
            gave_up: false,
        });
    }

    /// The client of the decision kept last, on an arrival, gave up on its
    /// request.
    pub(super) fn gave_up(&mut self) {
        if let Some(last) = self.arrivals.last_mut() {
            last.gave_up = true;
        }
    }

    /// Any other call, made during the run's event at `reached`.
    #[inline(always)]
    pub(super) fn call(&mut self, reached: Nanos, call: Call) {
        self.other.push((self.arrivals.len() as u32, reached, call));
    }

    pub(super) fn clear(&mut self) {
        self.arrivals.clear();
        self.other.clear();
    }
}

/// A run's recorder, set aside.
pub(super) struct Aside {
    recorder: Recorder,
}

impl Aside {
    pub(super) fn new(recorder: Recorder) -> Aside {
        Aside { recorder }
    }

    /// Makes the calls `kept` over `chunk`, leaving `kept` empty.
    pub(super) fn make_calls(&mut self, chunk: &[Shared], kept: &mut Kept) {
        let r = &mut self.recorder;
        let mut other = kept.other.iter().peekable();
        for (j, d) in kept.arrivals.iter().enumerate() {
            while let Some(&(_, reached, call)) =
                other.next_if(|(before, ..)| *before as usize <= j)
            {
                r.advance(reached);
                r.apply(call);
            }
            if let Some(ahead) = kept.arrivals.get(j + RECORD_AHEAD) {
                r.prefetch(ahead.key, chunk[ahead.index as usize].arrival.client);
            }
            let s = &chunk[d.index as usize];
            let a = s.arrival;
            r.advance(a.time);
            r.decided(Decided {
                source: s.source,
                client: a.client,
                key: d.key,
                attempt: 1,
                time: a.time,
                decided_at: a.time,
                latency: Nanos::ZERO,
                first: a.time,
                cost: a.cost,
                decision: d.decision(),
            });
            if d.gave_up {
                r.apply(Call::GaveUp {
                    client: a.client,
                    time: a.time,
                });
            }
        }
        for &(_, reached, call) in other {
            r.advance(reached);
            r.apply(call);
        }
        kept.clear();
    }

    /// The recorder, every call made.
    pub(super) fn into_recorder(self) -> Recorder {
        self.recorder
    }
}

/// How many decisions ahead [`Aside::make_calls`] asks for the recorder's
/// slots: twice as far as a run asks for its limiter's state
/// ([`PREFETCH_AHEAD`]), its loop doing less per decision. On
/// benches/speed.toml, one thread, 21 rounds in turn, 16 took 0.969
/// (0.954–0.990) of the time 8 took, and 32 took 1.005 of 16's.
const RECORD_AHEAD: usize = 2 * PREFETCH_AHEAD;

/// How many chunks of arrivals a run set aside has at most in flight:
/// generated and not yet decided, or decided and their calls not yet
/// made.
const IN_FLIGHT: usize = 8;

/// How many arrivals a chunk of a run set aside holds. Smaller than a
/// chunk of runs side by side: the first chunk is generated alone, and
/// [`IN_FLIGHT`] of them stay in the caches. On the nginx bench log
/// (benches/log.toml, medians of 15 rounds in turn of the time from the
/// first arrival to the last decision), with one thread generating, 8
/// chunks of 2^12 took 46.8 ms, 4 of 2^14 49.3 and 16 of 2^11 47.6; with
/// either generating, 16 of 2^11 and 4 of 2^13 took 1.004 and 0.972 of
/// 8 of 2^12's deciding phase (21 rounds by phase, both ranges spanning
/// 1).
const CHUNK: usize = 1 << 12;

/// Drives `run`, its recorder set aside in `aside`, over `arrivals` to
/// their end, then gives the recorder back: a thread of its own, "run
/// decider", decides chunk after chunk, keeping its calls, while this
/// thread makes the calls kept over each chunk decided, in the chunks'
/// order; either thread generates the chunks ([`relay`]).
pub(super) fn drive(
    run: &mut Run,
    mut aside: Aside,
    arrivals: &mut Arrivals,
    progress: &(dyn Fn(usize, Nanos, u64) + Sync),
) -> anyhow::Result<()> {
    relay(
        IN_FLIGHT,
        || (Vec::with_capacity(CHUNK), Kept::with_capacity(CHUNK)),
        |chunk| arrivals.next_chunk(chunk, CHUNK),
        |chunk, spare| run.consume_aside(chunk, spare, progress),
        |chunk, kept| aside.make_calls(chunk, kept),
    )?;
    run.take_back(aside);
    Ok(())
}
