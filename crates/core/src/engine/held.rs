//! The requests one client holds while it reads `r = 0` (docs/semantics.md
//! §11), in the order it sends them, packed: a client far above its limit
//! holds a backlog that grows for as long as it keeps sending, so each held
//! request is kept in a few bytes — its differences from the one before it
//! — not as a 56-byte [`Job`].
//!
//! A request's arrival time is not kept: it is sent when the hold ends,
//! and arrives then. Its client is the queue's.

use std::collections::VecDeque;

use super::Job;
use crate::clock::Nanos;
use crate::traffic::Arrival;

/// Flags of a packed request: which fields differ from what most held
/// requests carry (the source and address of the request before, cost 1,
/// a first attempt).
const OTHER_SOURCE: u8 = 1;
const OTHER_IP: u8 = 2;
const COST: u8 = 4;
const RETRY: u8 = 8;

/// The fields a request's packing is told against: the request before it.
#[derive(Debug, Clone, Copy, Default)]
struct Last {
    source: u32,
    ip: u32,
    request: u64,
    first: u64,
}

impl Last {
    fn of(job: &Job) -> Last {
        Last {
            source: job.source,
            ip: job.arrival.ip,
            request: job.request,
            first: job.first.0,
        }
    }
}

/// One client's held requests, first out first.
#[derive(Debug)]
pub(super) struct Held {
    client: u32,
    bytes: VecDeque<u8>,
    len: usize,
    /// The last request pushed (what the next is packed against)…
    back: Last,
    /// …and the last one taken (what the first is unpacked against).
    front: Last,
}

fn put(out: &mut VecDeque<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push_back(v as u8 | 0x80);
        v >>= 7;
    }
    out.push_back(v as u8);
}

fn take(bytes: &mut VecDeque<u8>) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let b = bytes.pop_front().expect("a packed request is whole");
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

/// A difference of two `u64`s, as a small number either way (zigzag).
fn signed(now: u64, before: u64) -> u64 {
    let d = now.wrapping_sub(before) as i64;
    ((d << 1) ^ (d >> 63)) as u64
}

fn unsigned(before: u64, z: u64) -> u64 {
    let d = ((z >> 1) as i64) ^ -((z & 1) as i64);
    before.wrapping_add(d as u64)
}

impl Held {
    /// A queue of `client`'s held requests, empty.
    pub(super) fn new(client: u32) -> Held {
        Held {
            client,
            bytes: VecDeque::new(),
            len: 0,
            back: Last::default(),
            front: Last::default(),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds `job` (of this queue's client) at the back.
    pub(super) fn push(&mut self, job: &Job) {
        debug_assert_eq!(job.arrival.client, self.client);
        let out = &mut self.bytes;
        let flag = |differs: bool, flag: u8| if differs { flag } else { 0 };
        let flags = flag(job.source != self.back.source, OTHER_SOURCE)
            | flag(job.arrival.ip != self.back.ip, OTHER_IP)
            | flag(job.arrival.cost != 1, COST)
            | flag(job.attempt != 1 || job.last_wait != Nanos::ZERO, RETRY);
        out.push_back(flags);
        put(out, signed(job.first.0, self.back.first));
        put(out, signed(job.request, self.back.request));
        if flags & OTHER_SOURCE != 0 {
            put(out, u64::from(job.source));
        }
        if flags & OTHER_IP != 0 {
            put(out, u64::from(job.arrival.ip));
        }
        if flags & COST != 0 {
            put(out, job.arrival.cost);
        }
        if flags & RETRY != 0 {
            put(out, u64::from(job.attempt));
            put(out, job.last_wait.0);
        }
        self.back = Last::of(job);
        self.len += 1;
    }

    /// Takes the first request, to arrive at `now`.
    pub(super) fn pop(&mut self, now: Nanos) -> Option<Job> {
        if self.len == 0 {
            return None;
        }
        let bytes = &mut self.bytes;
        let last = self.front;
        let flags = bytes.pop_front().expect("a packed request is whole");
        let first = unsigned(last.first, take(bytes));
        let request = unsigned(last.request, take(bytes));
        let source = match flags & OTHER_SOURCE {
            0 => last.source,
            _ => take(bytes) as u32,
        };
        let ip = match flags & OTHER_IP {
            0 => last.ip,
            _ => take(bytes) as u32,
        };
        let cost = match flags & COST {
            0 => 1,
            _ => take(bytes),
        };
        let (attempt, last_wait) = match flags & RETRY {
            0 => (1, Nanos::ZERO),
            _ => (take(bytes) as u32, Nanos(take(bytes))),
        };
        let job = Job {
            arrival: Arrival {
                time: now,
                client: self.client,
                ip,
                cost,
            },
            source,
            request,
            first: Nanos(first),
            attempt,
            last_wait,
        };
        self.front = Last::of(&job);
        self.len -= 1;
        if self.len == 0 {
            // What a drained queue held goes back: a backlog's bytes are
            // not kept for the next.
            self.bytes = VecDeque::new();
        }
        Some(job)
    }

    /// Every request left, first out first (the run ends before it sends
    /// them).
    pub(super) fn drain(mut self, now: Nanos) -> impl Iterator<Item = Job> {
        std::iter::from_fn(move || self.pop(now))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn job(client: u32, f: (u32, u32, u64, u64, u64, u32, u64)) -> Job {
        let (source, ip, cost, request, first, attempt, last_wait) = f;
        Job {
            arrival: Arrival {
                time: Nanos(first),
                client,
                ip,
                cost,
            },
            source,
            request,
            first: Nanos(first),
            attempt,
            last_wait: Nanos(last_wait),
        }
    }

    #[test]
    fn a_first_attempt_like_the_one_before_takes_a_few_bytes() {
        let mut held = Held::new(7);
        for i in 0..1000u64 {
            held.push(&job(7, (0, 7, 1, i, 1_000_000 + i * 100_000, 1, 0)));
        }
        // A flag byte, 100 µs in three bytes, the next request in one (and
        // the first one's address, which no request before it gave).
        assert_eq!(held.bytes.len(), 1000 * 5 + 1);
        assert_eq!(held.pop(Nanos(9)).unwrap().first, Nanos(1_000_000));
    }

    proptest! {
        #[test]
        fn requests_come_out_as_they_went_in_whatever_their_fields(
            fields in proptest::collection::vec(
                (
                    prop_oneof![Just(0u32), any::<u32>()],
                    prop_oneof![Just(3u32), any::<u32>()],
                    prop_oneof![Just(1u64), any::<u64>()],
                    any::<u64>(),
                    any::<u64>(),
                    prop_oneof![Just(1u32), any::<u32>()],
                    prop_oneof![Just(0u64), any::<u64>()],
                ),
                0..40,
            ),
            take_between in 0usize..40,
        ) {
            let mut held = Held::new(3);
            let mut out = Vec::new();
            for (i, &f) in fields.iter().enumerate() {
                held.push(&job(3, f));
                if i == take_between {
                    out.extend(held.pop(Nanos(5)));
                }
            }
            out.extend(held.drain(Nanos(5)));
            prop_assert_eq!(out.len(), fields.len());
            for (got, &f) in out.iter().zip(&fields) {
                let want = Job { arrival: Arrival { time: Nanos(5), ..job(3, f).arrival }, ..job(3, f) };
                prop_assert_eq!(format!("{got:?}"), format!("{want:?}"));
            }
        }
    }
}
