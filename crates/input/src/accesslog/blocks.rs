//! A gzip log's inflated bytes, a block at a time — filled on a thread of
//! their own (one more than rayon's) when rayon has more than one, so
//! that the inflating goes on while the lines already inflated are parsed.
//!
//! The blocks are filled the same way on either thread: as many bytes as
//! the source gives, up to [`BLOCK`], until it ends or fails. So the bytes
//! handed out, and where a read error comes among them, are the same
//! whatever the number of threads.

use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The bytes of a block.
const BLOCK: usize = 1 << 18;

/// Full blocks ahead of the one handed out, at most (on a thread): one
/// waiting in the channel, one waiting to go in.
const AHEAD: usize = 2;

/// A block: its bytes, and what stopped its filling if it is not full.
struct Block {
    bytes: Box<[u8]>,
    len: usize,
    end: End,
}

enum End {
    /// Full: more may follow.
    More,
    /// The source has ended.
    Eof,
    /// The source failed after the block's bytes.
    Failed(io::Error),
    /// The source failed before: the error's kind and message, which a
    /// read after the error gives again.
    FailedBefore(io::ErrorKind, String),
}

impl Block {
    fn new() -> Block {
        Block {
            bytes: vec![0; BLOCK].into_boxed_slice(),
            len: 0,
            end: End::More,
        }
    }

    /// A block with no room, which allocates nothing: none taken yet.
    fn none() -> Block {
        Block {
            bytes: Box::default(),
            len: 0,
            end: End::More,
        }
    }

    /// Fills the block from `r`, as much as it gives up to [`BLOCK`],
    /// unless `stop` is set as it begins (nothing takes the block then).
    fn fill(&mut self, r: &mut dyn Read, stop: &AtomicBool) {
        debug_assert_eq!(self.bytes.len(), BLOCK);
        (self.len, self.end) = (0, End::More);
        if stop.load(Ordering::Relaxed) {
            return;
        }
        self.end = match fill(r, &mut self.bytes, &mut self.len, BLOCK) {
            Ok(false) => End::More,
            Ok(true) => End::Eof,
            Err(e) => End::Failed(e),
        };
    }
}

/// Reads from `r` into `buf[*end..]` until `buf` holds `least` bytes or
/// `r` ends (each read as much as `r` gives, up to `buf`'s end); whether
/// `r` ended.
pub(super) fn fill(
    r: &mut dyn Read,
    buf: &mut [u8],
    end: &mut usize,
    least: usize,
) -> io::Result<bool> {
    while *end < least {
        match r.read(&mut buf[*end..]) {
            Ok(0) => return Ok(true),
            Ok(n) => *end += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(false)
}

/// Where the blocks are filled.
enum Source {
    /// Here, when a block is asked for.
    Here(Box<dyn Read + Send>),
    /// On a thread, ahead: full blocks come on `full`, and go back on
    /// `empty` to be filled again.
    Thread {
        full: Receiver<Block>,
        empty: Sender<Block>,
        /// Set when no more blocks are taken: the reader stops filling.
        stop: Arc<AtomicBool>,
        thread: JoinHandle<()>,
    },
    /// Nothing more: the source ended or failed.
    Done,
}

/// A source's bytes, read a block at a time (see the module
/// documentation).
pub(super) struct Blocks {
    source: Source,
    block: Block,
    /// The bytes of `block` handed out.
    at: usize,
}

impl Blocks {
    /// `r`'s bytes, read ahead on a thread of their own if `thread`; an
    /// error if that thread cannot be started.
    pub(super) fn new(r: Box<dyn Read + Send>, thread: bool) -> io::Result<Blocks> {
        let source = match thread {
            false => Source::Here(r),
            true => {
                let (to_reader, full) = mpsc::sync_channel(AHEAD - 1);
                let (empty, back) = mpsc::channel();
                let stop = Arc::new(AtomicBool::new(false));
                let stopped = Arc::clone(&stop);
                let thread = std::thread::Builder::new()
                    .name("log reader".to_string())
                    .spawn(move || fill_ahead(r, to_reader, back, &stopped))?;
                Source::Thread {
                    full,
                    empty,
                    stop,
                    thread,
                }
            }
        };
        Ok(Blocks {
            source,
            block: Block::none(),
            at: 0,
        })
    }

    /// Takes the next block, the one handed out given back.
    fn next_block(&mut self) -> io::Result<()> {
        match &mut self.source {
            Source::Here(r) => {
                if self.block.bytes.is_empty() {
                    self.block = Block::new();
                }
                self.block.fill(&mut **r, &AtomicBool::new(false));
            }
            Source::Thread { full, empty, .. } => {
                let used = std::mem::replace(&mut self.block, Block::none());
                if !used.bytes.is_empty() {
                    // (The reader has stopped if it cannot take it back.)
                    let _ = empty.send(used);
                }
                self.block = full
                    .recv()
                    .map_err(|_| io::Error::other("the log's reader stopped"))?;
            }
            Source::Done => self.block.len = 0,
        }
        self.at = 0;
        Ok(())
    }
}

/// The reader's thread: fills blocks until the source ends or fails, or
/// until their reader stops taking them (`stop`).
fn fill_ahead(
    mut r: Box<dyn Read + Send>,
    full: SyncSender<Block>,
    empty: Receiver<Block>,
    stop: &AtomicBool,
) {
    loop {
        let mut block = empty.try_recv().unwrap_or_else(|_| Block::new());
        block.fill(&mut *r, stop);
        let last = !matches!(block.end, End::More);
        if full.send(block).is_err() || last {
            return;
        }
    }
}

impl Read for Blocks {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            if self.at < self.block.len {
                let n = out.len().min(self.block.len - self.at);
                out[..n].copy_from_slice(&self.block.bytes[self.at..self.at + n]);
                self.at += n;
                return Ok(n);
            }
            match std::mem::replace(&mut self.block.end, End::Eof) {
                // (The next block has its own end.)
                End::More => self.next_block()?,
                End::Eof => {
                    self.stop();
                    return Ok(0);
                }
                End::Failed(e) => {
                    self.block.end = End::FailedBefore(e.kind(), e.to_string());
                    self.stop();
                    return Err(e);
                }
                End::FailedBefore(kind, message) => {
                    let e = io::Error::new(kind, message.as_str());
                    self.block.end = End::FailedBefore(kind, message);
                    return Err(e);
                }
            }
        }
    }
}

impl Blocks {
    /// Takes no more blocks; a reader's thread is waited for.
    fn stop(&mut self) {
        if let Source::Thread {
            full, stop, thread, ..
        } = std::mem::replace(&mut self.source, Source::Done)
        {
            // The reader stops at its next read, or its next block, which
            // nothing takes.
            stop.store(true, Ordering::Relaxed);
            drop(full);
            // (A panic there is the reader's bug; its blocks have ended.)
            let _ = thread.join();
        }
    }
}

impl Drop for Blocks {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source that gives pieces of 1 to 99 999 bytes of `0, 1, 2, …`
    /// (mod 251), then fails once it has given `fail_after` bytes, if it
    /// is set, and ends after `len`.
    struct Pieces {
        given: usize,
        len: usize,
        fail_after: Option<usize>,
        x: u64,
    }

    impl Read for Pieces {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.fail_after.is_some_and(|f| self.given >= f) {
                return Err(io::Error::other(format!("failed at {}", self.given)));
            }
            let piece = 1 + crate::pick(&mut self.x, 99_999);
            let n = out.len().min(piece).min(self.len - self.given);
            for (i, b) in out[..n].iter_mut().enumerate() {
                *b = ((self.given + i) % 251) as u8;
            }
            self.given += n;
            Ok(n)
        }
    }

    /// What `Blocks` hands out of a source, read `size` bytes at a time:
    /// its bytes and the error that ended them, if one did.
    fn read_all(
        len: usize,
        fail_after: Option<usize>,
        thread: bool,
        size: usize,
    ) -> (Vec<u8>, Option<String>) {
        let source = Pieces {
            given: 0,
            len,
            fail_after,
            x: 3,
        };
        let mut blocks = Blocks::new(Box::new(source), thread).unwrap();
        let (mut got, mut buf) = (Vec::new(), vec![0; size]);
        loop {
            match blocks.read(&mut buf) {
                Ok(0) => return (got, None),
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) => {
                    // A read after the error gives it again.
                    let again = blocks.read(&mut buf).map_err(|e| e.to_string());
                    assert_eq!(again, Err(e.to_string()));
                    return (got, Some(e.to_string()));
                }
            }
        }
    }

    // The bytes, and where an error comes among them, are the same read
    // here or on a thread, whatever the reads' sizes.
    #[test]
    fn blocks_read_here_or_on_a_thread_give_the_same_bytes_and_error() {
        for (len, fail_after) in [
            (0, None),
            (1, None),
            (BLOCK, None),
            (3 * BLOCK + 17, None),
            (10 * BLOCK, Some(0)),
            (10 * BLOCK, Some(BLOCK)),
            (10 * BLOCK, Some(2 * BLOCK + 5)),
        ] {
            let here = read_all(len, fail_after, false, 65_536);
            // Every byte the source gave comes before its error.
            let n = here.0.len();
            match fail_after {
                None => assert_eq!(n, len),
                Some(f) => assert!(f <= n && n < f + 100_000, "{f} {n}"),
            }
            assert!(here
                .0
                .iter()
                .enumerate()
                .all(|(i, &b)| b == (i % 251) as u8));
            assert_eq!(here.1, fail_after.map(|_| format!("failed at {n}")));
            for size in [1, 4096, 300_000] {
                let there = read_all(len, fail_after, true, size);
                assert_eq!(there, here, "{len} {fail_after:?} {size}");
            }
        }
    }

    /// An endless source of `x`, which says when it is dropped.
    struct Endless(mpsc::Sender<()>);

    impl Read for Endless {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = out.len().min(1000);
            out[..n].fill(b'x');
            Ok(n)
        }
    }

    impl Drop for Endless {
        fn drop(&mut self) {
            // Slowly: a drop of the blocks that did not wait for the
            // reader would return before this.
            std::thread::sleep(std::time::Duration::from_millis(50));
            let _ = self.0.send(());
        }
    }

    // Blocks given up before their source ends stop their reader, which
    // drops the source, before their drop returns.
    #[test]
    fn blocks_dropped_early_stop_their_reader() {
        let (dropped, source_gone) = mpsc::channel();
        let mut blocks = Blocks::new(Box::new(Endless(dropped)), true).unwrap();
        let mut buf = [0; 10];
        assert_eq!(blocks.read(&mut buf).unwrap(), 10);
        assert_eq!(buf, [b'x'; 10]);
        assert_eq!(blocks.read(&mut []).unwrap(), 0);
        // Dropped on a thread of its own: a reader that did not stop
        // fails the test instead of hanging it.
        let (done, drop_returned) = mpsc::channel();
        std::thread::spawn(move || {
            drop(blocks);
            done.send(()).unwrap();
        });
        let wait = std::time::Duration::from_secs(30);
        assert_eq!(drop_returned.recv_timeout(wait), Ok(()));
        assert_eq!(
            source_gone.try_recv(),
            Ok(()),
            "dropped when the drop returned"
        );
    }
}
