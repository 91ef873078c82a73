//! A run alone with a thread to spare, relayed over two threads (see
//! [`super::aside`]): chunks of arrivals are generated, decided on a
//! thread of their own, then handed back for what follows the decisions
//! (the recorder's calls), each in the order the chunks were generated.
//!
//! Either thread generates. The thread that calls [`relay`] generates
//! whenever no decided chunk waits for it; the deciding thread, when no
//! chunk waits to be decided, looks for a spare one to generate into
//! rather than wait (again and again for [`AWAKE`], then every [`AWAKE`]
//! while its waits are short, every [`ASLEEP`] while they are long).
//! Whichever has less to do takes more of the generating, so neither
//! waits for the other for long, whichever is slower: the deciding (on a
//! machine running slowly, where its loads miss) or the recording (on
//! one running at its usual speed). On the nginx bench log, at its usual
//! speed, the deciding thread waited about 16 % of the deciding phase
//! for a chunk when only the other thread generated (`perf record`,
//! samples in the waiting functions).
//!
//! The order holds because chunks are generated only under one lock, and
//! the thread that calls [`relay`] sends each chunk it generates to the
//! deciding thread before letting go of it. So when the deciding thread
//! holds the lock and finds no chunk sent, it has taken and decided
//! every chunk generated before: the one it generates is next.

use std::sync::mpsc::{self, RecvTimeoutError, TryRecvError};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::handoff::{Taker, AWAKE};

/// How long an idle deciding thread whose waits are long sleeps before
/// it looks for a spare chunk again (see [`relay`]): ten times [`AWAKE`],
/// few wake-ups where its cores are shared with other runs' threads.
const ASLEEP: Duration = Duration::from_millis(2);

/// A chunk and what deciding it kept.
type Batch<T, K> = (Vec<T>, K);

/// What both threads generate from: the generator, the chunks spare
/// (those given back after their calls come through `given_back`), and
/// whether the arrivals have ended (or failed).
struct Source<T, K, G> {
    generate: G,
    spare: Vec<Batch<T, K>>,
    given_back: mpsc::Receiver<Batch<T, K>>,
    ended: bool,
}

impl<T, K, G: FnMut(&mut Vec<T>) -> anyhow::Result<()>> Source<T, K, G> {
    /// The next chunk, generated into a spare one: `None` if none is
    /// spare or the arrivals have ended (then for good).
    fn next(&mut self) -> anyhow::Result<Option<Batch<T, K>>> {
        if self.ended {
            return Ok(None);
        }
        let Some((mut chunk, kept)) = self.spare.pop().or_else(|| self.given_back.try_recv().ok())
        else {
            return Ok(None);
        };
        chunk.clear();
        // Ended unless it gives a chunk: a generator that fails, or
        // panics half-way, is never called again.
        self.ended = true;
        let generated = (self.generate)(&mut chunk);
        if generated.is_err() || chunk.is_empty() {
            self.spare.push((chunk, kept));
            return generated.map(|()| None);
        }
        self.ended = false;
        Ok(Some((chunk, kept)))
    }
}

/// Locks `source`, whatever a panicking thread left in it (its generator
/// ended, see [`Source::next`]): that panic is the relay's outcome.
fn lock<S>(source: &Mutex<S>) -> MutexGuard<'_, S> {
    source
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What the deciding thread found when no chunk waited for it.
enum Own<T, K> {
    /// A chunk it generated itself, or one sent since it last looked.
    Batch(Batch<T, K>),
    /// The arrivals' end: every chunk has been sent or decided.
    Ended,
    /// Nothing to generate now (no chunk spare, or the lock held by the
    /// other thread): the next chunk is to be waited for.
    Wait,
}

/// The deciding thread's chunk when none waits in `chunks`: one sent
/// there since it last looked, or one it generates itself.
fn generate_own<T, K, G>(
    source: &Mutex<Source<T, K, G>>,
    chunks: &mpsc::Receiver<Batch<T, K>>,
) -> anyhow::Result<Own<T, K>>
where
    G: FnMut(&mut Vec<T>) -> anyhow::Result<()>,
{
    let mut source = match source.try_lock() {
        Ok(source) => source,
        Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        // The other thread holds it: generating, to send what it
        // generates, or finding nothing to generate either.
        Err(TryLockError::WouldBlock) => return Ok(Own::Wait),
    };
    // Looked at again under the lock: a chunk sent before it was taken.
    if let Ok(batch) = chunks.try_recv() {
        return Ok(Own::Batch(batch));
    }
    Ok(match source.next()? {
        Some(batch) => Own::Batch(batch),
        None if source.ended => Own::Ended,
        None => Own::Wait,
    })
}

/// Relays chunks over two threads until `generate` gives an empty one:
/// `decide` on a thread of its own, "run decider", then `call` on this
/// one, each chunk in the order generated (see the module
/// documentation). `generate` fills an empty chunk, on either thread;
/// `decide` takes a chunk and a spare `K` and gives back what it kept;
/// `call` makes what was kept over the chunk, leaving `K` spare again.
/// Up to `in_flight` chunks (at least one), made by `make` once the
/// deciding thread has started, are under way at once. Stops at the first
/// error: the deciding thread's comes first, met on an earlier chunk than
/// the one that could not be generated after it.
pub(super) fn relay<T, K, G, D, C>(
    in_flight: usize,
    make: impl FnMut() -> Batch<T, K>,
    generate: G,
    mut decide: D,
    call: C,
) -> anyhow::Result<()>
where
    T: Send,
    K: Send,
    G: FnMut(&mut Vec<T>) -> anyhow::Result<()> + Send,
    D: FnMut(&[T], K) -> anyhow::Result<K> + Send,
    C: FnMut(&[T], &mut K),
{
    assert!(in_flight > 0, "a relay with no chunk to relay");
    let (to_decide, chunks) = mpsc::sync_channel::<Batch<T, K>>(in_flight);
    let (to_call, decided) = mpsc::channel::<Batch<T, K>>();
    let (give_back, given_back) = mpsc::channel::<Batch<T, K>>();
    let source = Mutex::new(Source {
        generate,
        spare: Vec::with_capacity(in_flight),
        given_back,
        ended: false,
    });
    let shared = &source;
    let (generated, ran) = std::thread::scope(|s| -> anyhow::Result<_> {
        // The decider owns its ends of the channels: once it stops (at
        // its end, an error or a panic) this thread's `recv` returns.
        let decider = std::thread::Builder::new()
            .name("run decider".into())
            .spawn_scoped(s, move || -> anyhow::Result<()> {
                let mut taker = Taker::default();
                // Since when it has found neither a chunk to decide nor
                // one to generate.
                let mut idle: Option<Instant> = None;
                loop {
                    let (chunk, spare) = match chunks.try_recv() {
                        Ok(batch) => batch,
                        Err(TryRecvError::Disconnected) => break,
                        Err(TryRecvError::Empty) => match generate_own(shared, &chunks)? {
                            Own::Batch(batch) => batch,
                            Own::Ended => break,
                            // A chunk given back may be generated into
                            // soon, but the other thread, busy with its
                            // calls, wakes this one only with a chunk to
                            // decide. So it looks again: awake for AWAKE,
                            // as a taker does, while its waits are short,
                            // then asleep but for AWAKE at a time; while
                            // they are long (its cores shared with other
                            // runs' threads), asleep for ASLEEP at a time.
                            Own::Wait => {
                                let since = *idle.get_or_insert_with(Instant::now);
                                let taken = if !taker.awake() {
                                    chunks.recv_timeout(ASLEEP)
                                } else if since.elapsed() < AWAKE {
                                    std::thread::yield_now();
                                    continue;
                                } else {
                                    chunks.recv_timeout(AWAKE)
                                };
                                match taken {
                                    Ok(batch) => batch,
                                    Err(RecvTimeoutError::Timeout) => continue,
                                    Err(RecvTimeoutError::Disconnected) => break,
                                }
                            }
                        },
                    };
                    taker.note(idle.take().map_or(Duration::ZERO, |since| since.elapsed()));
                    let kept = decide(&chunk, spare)?;
                    if to_call.send((chunk, kept)).is_err() {
                        break;
                    }
                }
                Ok(())
            })
            .context("cannot start a thread to decide on")?;
        let generated =
            generate_and_call(shared, in_flight, make, call, to_decide, decided, give_back);
        let ran = decider
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        Ok((generated, ran))
    })?;
    ran?;
    generated
}

/// [`relay`]'s side on its caller's thread: makes the chunks, then
/// generates from `source` and sends to `to_decide` whenever no chunk
/// comes back `decided`, and makes `call` over each that does, then gives
/// it back. Stops quietly if the decider stops (its outcome is the
/// relay's). If it cannot generate, it stops sending and waits for the
/// decider to stop, so that the decider's error on an earlier chunk is
/// met and comes first.
fn generate_and_call<T, K, G, C>(
    source: &Mutex<Source<T, K, G>>,
    in_flight: usize,
    make: impl FnMut() -> Batch<T, K>,
    mut call: C,
    to_decide: mpsc::SyncSender<Batch<T, K>>,
    decided: mpsc::Receiver<Batch<T, K>>,
    give_back: mpsc::Sender<Batch<T, K>>,
) -> anyhow::Result<()>
where
    G: FnMut(&mut Vec<T>) -> anyhow::Result<()>,
    C: FnMut(&[T], &mut K),
{
    lock(source)
        .spare
        .extend(std::iter::repeat_with(make).take(in_flight));
    let mut to_decide = Some(to_decide);
    let mut taker = Taker::default();
    let mut called = |(chunk, mut kept): Batch<T, K>| {
        call(&chunk, &mut kept);
        // The receiver lives as long as `source`.
        let _ = give_back.send((chunk, kept));
    };
    loop {
        if let Some(sender) = &to_decide {
            match decided.try_recv() {
                Ok(batch) => {
                    called(batch);
                    continue;
                }
                Err(TryRecvError::Disconnected) => return Ok(()),
                Err(TryRecvError::Empty) => {}
            }
            // Taken even while the decider holds it (for at most one
            // chunk's generating): found taken, this thread could not tell
            // a decider generating, which sends a chunk decided soon, from
            // one that looked and found nothing spare, and then waits for a
            // chunk.
            let mut generating = lock(source);
            let next = match generating.next() {
                Ok(next) => next,
                Err(e) => {
                    drop((generating, to_decide));
                    // The decider decides what it was sent, then stops.
                    while decided.recv().is_ok() {}
                    return Err(e);
                }
            };
            match next {
                // Sent under the lock (see the module documentation); never
                // blocks, as no more chunks than the channel holds are ever
                // in flight.
                Some(batch) => {
                    if sender.send(batch).is_err() {
                        return Ok(());
                    }
                    continue;
                }
                None if generating.ended => to_decide = None,
                // None spare: every chunk is in flight, none given back
                // (only this thread gives them back), so one comes back
                // decided.
                None => {}
            }
        }
        // Nothing to generate now, or ever again: the next chunk decided
        // is, until the decider has stopped.
        match taker.recv(&decided) {
            Ok(batch) => called(batch),
            Err(_) => return Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    /// How long each step takes on a chunk, beyond its work: spent
    /// awake, as the steps of a run are (less than [`AWAKE`] when slow).
    #[derive(Clone, Copy, Debug)]
    struct Pace {
        generate: Duration,
        decide: Duration,
        call: Duration,
    }

    /// What a relay of `chunks` chunks of three numbers each saw: the
    /// first numbers of the chunks decided and called, in order, and how
    /// many times each thread called the generator (the deciding
    /// thread's, the caller's), the call that ends the chunks included.
    struct Seen {
        result: anyhow::Result<()>,
        decided: Vec<u64>,
        called: Vec<u64>,
        by_decider: usize,
        by_caller: usize,
    }

    /// Relays chunks of 0, 1, 2, then 3, 4, 5… up to `chunks` of them;
    /// generating fails at chunk `fail_generate` and deciding at chunk
    /// `fail_decide`, if given.
    fn relayed(
        chunks: u64,
        pace: Pace,
        fail_generate: Option<u64>,
        fail_decide: Option<u64>,
    ) -> Seen {
        let (by_decider, by_caller) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let mut next = 0u64;
        let mut decided = Vec::new();
        let mut called = Vec::new();
        let result = relay(
            4,
            || (Vec::new(), 0u64),
            |out: &mut Vec<u64>| {
                assert!(out.is_empty());
                match std::thread::current().name() {
                    Some("run decider") => by_decider.fetch_add(1, Relaxed),
                    _ => by_caller.fetch_add(1, Relaxed),
                };
                spin(pace.generate);
                let n = next / 3;
                anyhow::ensure!(Some(n) != fail_generate, "cannot generate chunk {n}");
                if n < chunks {
                    out.extend(next..next + 3);
                    next += 3;
                }
                Ok(())
            },
            |chunk: &[u64], spare: u64| {
                assert_eq!(spare, 0, "a chunk's kept value is spare once called");
                assert_eq!(chunk.len(), 3);
                spin(pace.decide);
                let n = chunk[0] / 3;
                anyhow::ensure!(Some(n) != fail_decide, "cannot decide chunk {n}");
                decided.push(chunk[0]);
                Ok(chunk[0] + 1)
            },
            |chunk: &[u64], kept: &mut u64| {
                assert_eq!(*kept, chunk[0] + 1, "kept over another chunk");
                spin(pace.call);
                called.push(chunk[0]);
                *kept = 0;
            },
        );
        Seen {
            result,
            decided,
            called,
            by_decider: by_decider.into_inner(),
            by_caller: by_caller.into_inner(),
        }
    }

    fn spin(d: Duration) {
        let start = Instant::now();
        while start.elapsed() < d {
            std::hint::spin_loop();
        }
    }

    fn firsts(chunks: u64) -> Vec<u64> {
        (0..chunks).map(|n| 3 * n).collect()
    }

    const SLOW: Duration = Duration::from_micros(50);
    const NONE: Duration = Duration::ZERO;

    #[test]
    fn each_chunk_is_decided_then_called_once_in_the_order_generated() {
        let paces = [
            Pace {
                generate: NONE,
                decide: NONE,
                call: NONE,
            },
            // The caller slower…
            Pace {
                generate: NONE,
                decide: NONE,
                call: SLOW,
            },
            // …the decider slower…
            Pace {
                generate: NONE,
                decide: SLOW,
                call: NONE,
            },
            // …generating slow.
            Pace {
                generate: SLOW,
                decide: NONE,
                call: NONE,
            },
        ];
        for pace in paces {
            for chunks in [0, 1, 5, 40, 5_000] {
                let seen = relayed(chunks, pace, None, None);
                assert!(seen.result.is_ok(), "{pace:?}, {chunks} chunks");
                assert_eq!(seen.decided, firsts(chunks), "{pace:?}");
                assert_eq!(seen.called, firsts(chunks), "{pace:?}");
                // Every chunk, then the empty one that ends them.
                let generated = seen.by_decider + seen.by_caller;
                assert_eq!(generated as u64, chunks + 1, "{pace:?}");
            }
        }
    }

    /// Waits until `done` holds, for 10 s at most: whether it did.
    fn until(done: impl Fn() -> bool) -> bool {
        let start = Instant::now();
        while !done() {
            if start.elapsed() > Duration::from_secs(10) {
                return false;
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        true
    }

    /// Relays 40 chunks of one number each (0, 1, 2…), with `decide` and
    /// `call` first waiting (see [`until`]) on what the relay has done so far:
    /// the chunks generated, each by the decider or not, and how many
    /// decisions have begun. Gives the chunks generated and whether every
    /// wait ended.
    fn relayed_waiting(
        decide_waits: impl Fn(u64, &[bool], usize) -> bool + Send + Sync,
        call_waits: impl Fn(u64, &[bool], usize) -> bool,
    ) -> (Vec<bool>, bool) {
        let by_decider = Mutex::new(Vec::new());
        let begun = AtomicUsize::new(0);
        let ended = std::sync::atomic::AtomicBool::new(true);
        let waited = |n: u64, waits: &dyn Fn(u64, &[bool], usize) -> bool| {
            let ok = until(|| waits(n, &lock(&by_decider), begun.load(Relaxed)));
            ended.fetch_and(ok, Relaxed);
        };
        let mut next = 0u64;
        let result = relay(
            4,
            || (Vec::new(), 0u64),
            |out: &mut Vec<u64>| {
                if next < 40 {
                    let decider = std::thread::current().name() == Some("run decider");
                    lock(&by_decider).push(decider);
                    out.push(next);
                    next += 1;
                }
                Ok(())
            },
            |chunk: &[u64], _| {
                begun.fetch_add(1, Relaxed);
                waited(chunk[0], &decide_waits);
                Ok(chunk[0])
            },
            |chunk: &[u64], kept: &mut u64| {
                assert_eq!(*kept, chunk[0]);
                waited(chunk[0], &call_waits);
            },
        );
        assert!(result.is_ok());
        let by_decider = by_decider.into_inner().unwrap();
        assert_eq!(by_decider.len(), 40);
        (by_decider, ended.into_inner())
    }

    #[test]
    fn the_decider_generates_while_the_other_thread_is_busy_calling() {
        // The calls of chunk 0 wait until chunk 2's deciding has begun,
        // then long enough for the decider, idle, to fall asleep: chunk 1
        // has come back decided by then, so its calls come next, and they
        // wait until chunk 4 has been generated. Only the decider can
        // generate it then, into chunk 0, given back.
        let (by_decider, ended) = relayed_waiting(
            |_, _, _| true,
            |n, generated, begun| match n {
                0 if begun >= 3 => {
                    std::thread::sleep(AWAKE * 10);
                    true
                }
                0 => false,
                1 => generated.len() > 4,
                _ => true,
            },
        );
        assert!(
            ended,
            "chunk 4 was not generated while chunk 1's calls waited"
        );
        assert!(by_decider[4], "chunk 4 was generated by the caller");
    }

    #[test]
    fn the_other_thread_generates_while_the_decider_is_busy_deciding() {
        // Chunk 0's deciding waits until chunk 3 has been generated: only
        // the other thread can generate chunks 1 to 3 then.
        let (by_decider, ended) = relayed_waiting(
            |n, generated, _| n != 0 || generated.len() > 3,
            |_, _, _| true,
        );
        assert!(ended, "chunk 3 was not generated while chunk 0 was decided");
        assert_eq!(by_decider[1..4], [false; 3], "generated by the decider");
    }

    #[test]
    fn the_deciders_error_comes_before_a_later_chunks_generating_error() {
        let pace = Pace {
            generate: NONE,
            decide: SLOW,
            call: NONE,
        };
        // Deciding chunk 10 fails; generating chunk 12 would, and comes
        // first in time, as the other thread runs ahead of the decider.
        let seen = relayed(40, pace, Some(12), Some(10));
        let error = seen.result.unwrap_err().to_string();
        assert_eq!(error, "cannot decide chunk 10");
        assert_eq!(seen.decided, firsts(10));
        assert!(seen.called.len() <= 10);
        assert_eq!(seen.called, firsts(seen.called.len() as u64));

        // A generating error alone ends the relay after the chunks before
        // it are decided, in order.
        for pace in [
            pace,
            Pace {
                generate: NONE,
                decide: NONE,
                call: SLOW,
            },
        ] {
            let seen = relayed(40, pace, Some(20), None);
            let error = seen.result.unwrap_err().to_string();
            assert_eq!(error, "cannot generate chunk 20", "{pace:?}");
            assert_eq!(seen.decided, firsts(20), "{pace:?}");
            assert_eq!(seen.called, firsts(seen.called.len() as u64), "{pace:?}");
        }
    }
}
