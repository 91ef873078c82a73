//! Taking the next batch from the thread that makes it, staying awake for
//! a moment before sleeping.
//!
//! A replay runs as pipelines of two threads: a log's parser hands
//! batches of lines to the thread that puts them in order, and a run's
//! own thread hands chunks of arrivals to the thread that decides them
//! (and waits for them back, decided, when all are out). The thread
//! that takes the batches is often the faster one there (the ordering
//! thread, the deciding thread), so it keeps catching up and waiting for
//! the next batch — for tens of microseconds at a time. (The deciding
//! thread, rather than wait, generates the next chunk itself when it
//! can: see `engine/relay.rs`.) A taker asleep on the
//! channel costs its maker a wake-up at every batch (a system call, and
//! the sleeping CPU's time to come back), paid on the thread that the
//! pipeline waits on.
//!
//! So a [`Taker`] first looks for the next batch again and again for up to
//! [`AWAKE`], giving its core to any other thread that wants it between
//! looks, and only then sleeps. On the 2-core reference machine, with
//! takers awake at every wait, a replay of the nginx bench log took
//! 0.132 s wall instead of 0.139 (medians of 21 rounds in turn), its
//! reading about 4.5 ms shorter and its deciding about 2.7 ms (medians
//! of seven runs each); as a [`Taker`] is now (below), 0.134 against
//! 0.138 (11 rounds). The price is CPU time, the takers' moments awake:
//! 0.246 CPU-s instead of 0.220 in both. Batches four times larger
//! instead (fewer wake-ups, takers that sleep) took 0.142 s against
//! 0.141 (15 rounds).
//!
//! The log's reader keeps its ordering thread asleep at each wait where a
//! third thread works beside the two (a gzip log's inflating; a log read
//! in pieces, whose parsers outnumber the cores): awake, it would take
//! time from that thread. A sweep whose points cannot share their
//! arrivals runs each point alone on one of rayon's threads, each with a
//! deciding thread of its own: four threads on two cores. There each
//! taker yields its core between looks, and one whose waits grow long
//! sleeps at once: six points of one token bucket over 10^5 Poisson
//! clients at six rates took 4.99 s wall and 9.35 CPU-s against 5.04 and
//! 9.48 with takers that sleep (medians of seven rounds in turn).

use std::sync::mpsc::{Receiver, RecvError, TryRecvError};
use std::time::{Duration, Instant};

/// How long a [`Taker`] stays awake for a batch before it sleeps: longer
/// than a taker's usual wait in the pipelines above (a batch of 4 096
/// lines takes the parser about 330 µs, of which the ordering thread
/// waits about a quarter).
pub const AWAKE: Duration = Duration::from_micros(200);

/// A thread that takes values from a channel, and how long it waited for
/// them lately: a taker whose waits are longer than [`AWAKE`] sleeps at
/// once, since it would stay awake for nothing and then sleep anyway (a
/// JSON-lines log's ordering thread, whose parser is slower: a replay of
/// the JSON-lines bench log took 0.327 CPU-s with it awake at every
/// wait, 0.277 as it is, and 0.278 with no taker ever awake; 0.190,
/// 0.189 and 0.197 s wall, medians of 11 rounds in turn).
#[derive(Debug, Default)]
pub struct Taker {
    /// A running mean of its waits, each weighing a quarter.
    waited: Duration,
}

impl Taker {
    /// `rx`'s next value, as [`Receiver::recv`] gives it: looked for
    /// awake for up to [`AWAKE`] (yielding between looks) while this
    /// taker's waits are short, then waited for asleep. An error once
    /// every sender is gone and nothing is left to take.
    pub fn recv<T>(&mut self, rx: &Receiver<T>) -> Result<T, RecvError> {
        let start = Instant::now();
        let until = start + AWAKE;
        let awake = self.awake();
        loop {
            match rx.try_recv() {
                Ok(v) => {
                    self.note(start.elapsed());
                    return Ok(v);
                }
                Err(TryRecvError::Disconnected) => return Err(RecvError),
                Err(TryRecvError::Empty) => {}
            }
            if !awake || Instant::now() >= until {
                let v = rx.recv();
                self.note(start.elapsed());
                return v;
            }
            std::thread::yield_now();
        }
    }

    /// Whether its waits lately were short: [`Taker::recv`] would look
    /// for the next value awake before sleeping.
    pub(crate) fn awake(&self) -> bool {
        self.waited < AWAKE
    }

    /// Counts in a wait for a value taken otherwise than by
    /// [`Taker::recv`].
    pub(crate) fn note(&mut self, wait: Duration) {
        self.waited = (self.waited * 3 + wait) / 4;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::{channel, sync_channel};

    #[test]
    fn takes_what_is_there_then_what_comes_while_awake_or_asleep() {
        let (tx, rx) = sync_channel(4);
        let mut taker = Taker::default();
        tx.send(1).unwrap();
        tx.send(2).unwrap();
        assert_eq!(taker.recv(&rx), Ok(1));
        assert_eq!(taker.recv(&rx), Ok(2));
        std::thread::scope(|s| {
            s.spawn(|| {
                // Sent while the taker is likely still awake…
                tx.send(3).unwrap();
                // …and well after it has gone to sleep.
                std::thread::sleep(AWAKE * 20);
                tx.send(4).unwrap();
            });
            assert_eq!(taker.recv(&rx), Ok(3));
            assert_eq!(taker.recv(&rx), Ok(4));
        });
    }

    #[test]
    fn a_taker_that_waits_long_sleeps_at_once_until_its_waits_are_short() {
        let (tx, rx) = channel();
        let mut taker = Taker::default();
        assert!(taker.waited < AWAKE, "a new taker stays awake");
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(AWAKE * 20);
                tx.send(0).unwrap();
            });
            assert_eq!(taker.recv(&rx), Ok(0));
        });
        // A quarter of a wait of nearly 20 AWAKE (less however late this
        // thread began to wait): AWAKE or more, with room to spare.
        assert!(taker.waited >= AWAKE, "{:?}", taker.waited);
        // Values already there: next to no wait, and the mean falls by
        // about a quarter each time, until the taker stays awake again
        // (within 100 values, however long this thread is held up now
        // and then).
        for k in 1.. {
            tx.send(k).unwrap();
            assert_eq!(taker.recv(&rx), Ok(k));
            if taker.waited < AWAKE {
                break;
            }
            assert!(k < 100, "still {:?} after {k} values", taker.waited);
        }
    }

    #[test]
    fn what_is_left_is_taken_after_the_senders_are_gone_then_an_error() {
        let (tx, rx) = channel();
        tx.send("left").unwrap();
        drop(tx);
        let mut taker = Taker::default();
        assert_eq!(taker.recv(&rx), Ok("left"));
        assert_eq!(taker.recv(&rx), Err(RecvError));
    }

    #[test]
    fn a_sender_gone_while_the_taker_sleeps_wakes_it_with_an_error() {
        let (tx, rx) = sync_channel::<u8>(1);
        std::thread::scope(|s| {
            s.spawn(move || {
                std::thread::sleep(AWAKE * 20);
                drop(tx);
            });
            assert_eq!(Taker::default().recv(&rx), Err(RecvError));
        });
    }
}
