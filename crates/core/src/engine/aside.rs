//! A run alone with a thread to spare sets its recorder aside (see
//! [`super::drive`]): while the run decides one chunk of arrivals, the
//! thread that generates the next chunk makes the recorder's calls of the
//! chunk before.
//!
//! The run keeps those calls compactly. A decision on a first attempt as
//! it arrives — nearly every call of a replay — is kept as the arrival's
//! place in its chunk, its key and the decision (24 bytes): the rest is
//! read from the chunk, which the generating thread still holds when it
//! makes the calls. Any other call is kept as it is, with the number of
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

use super::arrivals::Shared;
use super::PREFETCH_AHEAD;
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

    fn clear(&mut self) {
        self.arrivals.clear();
        self.other.clear();
    }
}

/// A run's recorder set aside, and the calls it has still to make.
pub(super) struct Aside {
    recorder: Recorder,
    kept: Kept,
}

impl Aside {
    pub(super) fn new(recorder: Recorder) -> Aside {
        Aside {
            recorder,
            kept: Kept::default(),
        }
    }

    /// Makes the calls kept over `chunk`, then forgets them.
    pub(super) fn make_calls(&mut self, chunk: &[Shared]) {
        let (r, kept) = (&mut self.recorder, &self.kept);
        let mut other = kept.other.iter().peekable();
        for (j, d) in kept.arrivals.iter().enumerate() {
            while let Some(&(_, reached, call)) =
                other.next_if(|(before, ..)| *before as usize <= j)
            {
                r.advance(reached);
                r.apply(call);
            }
            if let Some(ahead) = kept.arrivals.get(j + PREFETCH_AHEAD) {
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
        self.kept.clear();
    }

    /// Takes the calls `kept` over the chunk just decided, giving back the
    /// ones it made.
    pub(super) fn take(&mut self, kept: &mut Kept) {
        debug_assert!(self.kept.arrivals.is_empty() && self.kept.other.is_empty());
        std::mem::swap(&mut self.kept, kept);
    }

    /// The recorder, once the calls kept over `chunk` are made.
    pub(super) fn into_recorder(mut self, chunk: &[Shared]) -> Recorder {
        self.make_calls(chunk);
        self.recorder
    }
}
