//! A log's bytes, read a block at a time — on a thread of their own when
//! the process has a second one, so that reading the file (and inflating
//! a gzip log) goes on while the lines already read are parsed.
//!
//! The blocks are filled the same way on either thread: as many bytes as
//! the source gives, up to [`BLOCK`], until it ends or fails. So the bytes
//! handed out, and where a read error comes among them, are the same
//! whatever the number of threads.

use std::io::{self, Read};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::thread::JoinHandle;

/// The bytes of a block.
const BLOCK: usize = 1 << 18;

/// Blocks filled ahead of the one handed out, at most (on a thread).
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

    /// Fills the block from `r`, as much as it gives up to [`BLOCK`].
    fn fill(&mut self, r: &mut dyn Read) {
        (self.len, self.end) = (0, End::More);
        while self.len < BLOCK {
            match r.read(&mut self.bytes[self.len..]) {
                Ok(0) => {
                    self.end = End::Eof;
                    return;
                }
                Ok(n) => self.len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.end = End::Failed(e);
                    return;
                }
            }
        }
    }
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
    /// `r`'s bytes, read ahead on a thread of their own if `thread`.
    pub(super) fn new(r: Box<dyn Read + Send>, thread: bool) -> Blocks {
        let source = match thread {
            false => Source::Here(r),
            true => {
                let (to_reader, full) = mpsc::sync_channel(AHEAD);
                let (empty, back) = mpsc::channel();
                let thread = std::thread::spawn(move || fill_ahead(r, to_reader, back));
                Source::Thread {
                    full,
                    empty,
                    thread,
                }
            }
        };
        Blocks {
            source,
            block: Block::none(),
            at: 0,
        }
    }

    /// Takes the next block, the one handed out given back.
    fn next_block(&mut self) -> io::Result<()> {
        match &mut self.source {
            Source::Here(r) => {
                if self.block.bytes.is_empty() {
                    self.block = Block::new();
                }
                self.block.fill(&mut **r);
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
/// until their reader stops taking them.
fn fill_ahead(mut r: Box<dyn Read + Send>, full: SyncSender<Block>, empty: Receiver<Block>) {
    loop {
        let mut block = empty.try_recv().unwrap_or_else(|_| Block::new());
        block.fill(&mut *r);
        let last = !matches!(block.end, End::More);
        if full.send(block).is_err() || last {
            return;
        }
    }
}

impl Read for Blocks {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.at < self.block.len {
                let n = out.len().min(self.block.len - self.at);
                out[..n].copy_from_slice(&self.block.bytes[self.at..self.at + n]);
                self.at += n;
                return Ok(n);
            }
            match std::mem::replace(&mut self.block.end, End::Eof) {
                End::More => self.next_block()?,
                End::Eof => {
                    self.stop();
                    return Ok(0);
                }
                End::Failed(e) => {
                    self.stop();
                    return Err(e);
                }
            }
        }
    }
}

impl Blocks {
    /// Takes no more blocks; a reader's thread is waited for.
    fn stop(&mut self) {
        if let Source::Thread { full, thread, .. } =
            std::mem::replace(&mut self.source, Source::Done)
        {
            // The reader stops at its next block, which nothing takes.
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
        let mut blocks = Blocks::new(Box::new(source), thread);
        let (mut got, mut buf) = (Vec::new(), vec![0; size]);
        loop {
            match blocks.read(&mut buf) {
                Ok(0) => return (got, None),
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) => return (got, Some(e.to_string())),
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

    // Blocks given up before their source ends stop their reader: this
    // returns (a reader filling blocks of an endless source would not).
    #[test]
    fn blocks_dropped_early_stop_their_reader() {
        let mut blocks = Blocks::new(Box::new(io::repeat(b'x')), true);
        let mut buf = [0; 10];
        assert_eq!(blocks.read(&mut buf).unwrap(), 10);
        assert_eq!(buf, [b'x'; 10]);
        drop(blocks);
    }
}
