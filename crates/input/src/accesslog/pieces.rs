//! A log read in pieces.
//!
//! Dealt ([`deal`]): one thread, "log parser", reads the log into pieces
//! of whole lines, about [`PIECE`] bytes each, and parses most of them,
//! leaving the ordering thread a piece to parse whenever it has room for
//! one ([`Here`]). A plain log is read so wherever two threads or more
//! may run, but for a log of long lines where more than two may.
//!
//! Parsed side by side ([`split`], [`parse`]): a thread of its own, "log
//! splitter", reads the log into pieces and deals them out in turn to the
//! parsers, threads "log parser": piece `k` to parser `k % n`.
//!
//! Each parser reads its pieces' lines as a [`LineReader`] reads a log,
//! into what each says ([`Said`]), with keys of its own: its ids are
//! numbered as *it* first meets the keys. The ordering thread takes the
//! pieces back in turn and gives their keys the log's ids
//! ([`super::merge::Merge`]).
//!
//! Any error ends the read as failed: a bad line that is not skipped, a
//! line [`Lines`] refuses (one over the cap), a split's refusal, a read
//! error. The log is then read again on one thread, which gives the
//! error and its message with the line's number and text (which a piece
//! does not know).

use std::io::{self, Read};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::Arc;

use crossbeam_utils::CachePadded;
use ratesim_core::handoff::Taker;

use super::blocks::fill;
use super::lines::{unzipped, Lines};
use super::merge::{counts, NewKeys, Parsed, ParsedPiece, Source, HERE};
use super::pipeline::{LineReader, Stop};
use super::said::{Said, FAILED};
use super::{LogKeys, TraceData, MAX_LINE_BYTES};

/// The bytes a piece is read into: room for one line of the longest
/// length and its ending, `\r\n` (tests read in smaller pieces, which a
/// longer line grows). About a quarter of the 256 KiB it was, so that
/// the pieces and parsed lines on their way between threads take fewer
/// fresh pages: on the nginx bench log, 6 300 page faults became 5 000
/// and peak RSS 21.8 MiB 18.6 (medians of five runs).
pub(super) const PIECE: usize = MAX_LINE_BYTES + 2;

/// A plain log's last bytes, as many as [`TAIL`] pieces hold, are read
/// in pieces [`TAIL`] times smaller: when the last piece is parsed, the
/// ordering thread still has the pieces queued for it to put in order,
/// alone, and the smaller they are, the sooner it is done. Eight pieces
/// are more than may wait for it in a dealt log ([`DEALT_AHEAD`], and
/// one parsed there). On the nginx bench log, the time from the last
/// parsing thread's exit to the deciding thread's start went from 7.1
/// to 4.4 ms, 0.631 (0.599–0.710) of it, medians of 21 rounds in turn
/// (benches/phase_times.py's "between"), the load and the decisions
/// taking as long as before (with pieces of 256 KiB, four times today's).
const TAIL: usize = 8;

/// The most parsers a log is read by: on nginx's combined format, putting
/// the lines in order takes the one ordering thread about a third of what
/// parsing them takes on one (perf, 75 % of samples against 25 %), so
/// more parsers than this would wait on it, each with a table of keys.
pub(super) const MOST_PARSERS: usize = 4;

/// The shortest mean length of a line (its newline included) of a log
/// read in pieces by several parsers, where more than two threads may
/// run; a log of shorter lines is dealt ([`deal`]). That choice is not
/// measured: this machine has two cores. What set this length, on the
/// 2-core reference machine before logs were dealt (`validate`, medians
/// of 7–9 rounds in turn, 10^6 lines): pieces took, of what one thread
/// took, nginx's `$msec $arg_k $status $request_time` (31 bytes a line)
/// 1.13, Envoy (38) 1.10, JSON lines (54) 0.96 for 1.16 times the CPU,
/// nginx's `$remote_addr "$request" $status $request_time $msec` (69)
/// 0.83, nginx's combined format (157, benches/log-combined.toml) 0.83.
/// Short lines cost little to parse beside what putting them in order
/// costs, which one thread does either way, and pieces cost more in all:
/// their keys are interned twice, in their parser's ids and in the log's.
const LONG_LINE: usize = 64;

/// A log opened, and its first piece read (as much of it as there is).
pub(super) struct Opened {
    r: Box<dyn Read + Send>,
    buf: Vec<u8>,
    end: usize,
    gzip: bool,
    /// The bytes of a plain log not yet read, by its length when it was
    /// opened (`None` for gzip).
    left: Option<u64>,
}

impl Opened {
    /// The log, to be read in pieces of `piece` bytes (at most
    /// [`PIECE`]: its lines may be read on without them).
    pub(super) fn new(data: &TraceData, piece: usize) -> io::Result<Opened> {
        debug_assert!(piece <= PIECE);
        let mut buf = vec![0; piece];
        let (r, bytes) = data.open_sized()?;
        let (mut r, mut end, gzip) = unzipped(r, &mut buf)?;
        let size = buf.len();
        fill(&mut *r, &mut buf, &mut end, size)?;
        let left = (!gzip).then(|| bytes.saturating_sub(end as u64));
        Ok(Opened {
            r,
            buf,
            end,
            gzip,
            left,
        })
    }

    /// Whether the log is worth reading in pieces: a plain log that fills
    /// a piece at least, whose first piece has a newline and its whole
    /// lines are [`LONG_LINE`] bytes long or longer on average. (A gzip
    /// log is inflated on a thread of its own already: nginx's combined
    /// format gzipped took 1.05 times as long in pieces, measured as for
    /// [`LONG_LINE`].)
    pub(super) fn worth_pieces(&self) -> bool {
        let read = &self.buf[..self.end];
        let whole = match memchr::memrchr(b'\n', read) {
            Some(last) => &read[..=last],
            None => read,
        };
        let lines = memchr::memchr_iter(b'\n', whole).count();
        !self.gzip && self.end == self.buf.len() && lines > 0 && whole.len() >= LONG_LINE * lines
    }

    /// Whether the log is gzip (inflated on a thread of its own).
    pub(super) fn is_gzip(&self) -> bool {
        self.gzip
    }

    /// Its lines, read on from here.
    pub(super) fn into_lines(self) -> Lines {
        Lines::resume(self.r, self.buf, self.end)
    }
}

/// A piece of the log for a parser.
pub(super) enum Piece {
    /// Whole lines (the last may lack its newline at the log's end).
    Lines(Vec<u8>),
    /// The log could not be read on, or holds a line over the cap.
    Failed,
}

/// A log's pieces of whole lines, read in turn (see [`Splitter::next`]).
struct Splitter {
    r: Box<dyn Read + Send>,
    buf: Vec<u8>,
    end: usize,
    /// The bytes of a piece.
    piece: usize,
    eof: bool,
    /// See [`Opened`]'s.
    left: Option<u64>,
}

impl Splitter {
    fn new(log: Opened) -> Splitter {
        let Opened {
            r, buf, end, left, ..
        } = log;
        let piece = buf.len();
        Splitter {
            r,
            buf,
            end,
            piece,
            eof: false,
            left,
        }
    }

    /// The next piece, in a buffer from `spare` if it has one: `None`
    /// after the last (the last piece is the one that reached the log's
    /// end), a failed piece where the log cannot be read on, or where a
    /// line is longer than the cap.
    fn next(&mut self, spare: &Receiver<Vec<u8>>) -> Option<Piece> {
        if self.buf.is_empty() {
            return None;
        }
        // Near the log's end, a smaller piece (see [`TAIL`]).
        let mut small = self.left.is_some_and(|l| l < (TAIL * self.piece) as u64);
        loop {
            if !self.eof {
                let size = match small {
                    true => (self.piece / TAIL).clamp(1, self.buf.len()),
                    false => self.buf.len(),
                };
                let before = self.end;
                let Ok(ended) = fill(&mut *self.r, &mut self.buf[..size], &mut self.end, size)
                else {
                    self.buf = Vec::new();
                    return Some(Piece::Failed);
                };
                self.eof = ended;
                let read = (self.end - before) as u64;
                self.left = self.left.map(|l| l.saturating_sub(read));
            }
            let cut = match memchr::memrchr(b'\n', &self.buf[..self.end]) {
                _ if self.eof => self.end,
                Some(i) => i + 1,
                // A line of more bytes than the cap before its newline.
                None if self.end > MAX_LINE_BYTES => {
                    self.buf = Vec::new();
                    return Some(Piece::Failed);
                }
                // A line longer than a small piece: read on as for a
                // whole one.
                None if small => {
                    small = false;
                    continue;
                }
                None => {
                    self.buf.resize(self.buf.len() * 2, 0);
                    continue;
                }
            };
            let mut next = match self.eof {
                // The last piece: no buffer after it.
                true => Vec::new(),
                false => {
                    let mut next = spare.try_recv().unwrap_or_default();
                    next.resize(self.buf.len().max(self.piece), 0);
                    next[..self.end - cut].copy_from_slice(&self.buf[cut..self.end]);
                    next
                }
            };
            std::mem::swap(&mut self.buf, &mut next);
            next.truncate(cut);
            self.end -= cut;
            return Some(Piece::Lines(next));
        }
    }
}

/// Reads `log` into pieces of whole lines, and hands piece `k` to
/// `parsers[k % n]`: a failed piece where it cannot be read on, or where
/// a line is longer than the cap. Takes buffers to fill from `spare` when
/// it has some. Stops at the next piece once `stop` is set, or once a
/// parser is gone.
pub(super) fn split(
    log: Opened,
    parsers: &[SyncSender<Piece>],
    spare: &Receiver<Vec<u8>>,
    stop: &Stop,
) {
    let mut splitter = Splitter::new(log);
    for to in parsers.iter().cycle() {
        let Some(piece) = splitter.next(spare) else {
            return;
        };
        if stop.is_set() {
            return;
        }
        let failed = matches!(piece, Piece::Failed);
        if to.send(piece).is_err() || failed {
            return;
        }
    }
}

/// A parser: reads the lines of each piece `pieces` gives with `reader`
/// (whose lines are none between pieces), its keys interned into `keys`,
/// and hands them on to `out`, into batches that `back` gives back (or
/// new ones); then [`Parsed::End`] once the pieces end, or
/// [`Parsed::Failed`] at the first error. Gives the pieces' buffers back
/// to `spare`. Stops at the next line once `stop` is set, or at its next
/// send once the receiver of `out` is gone.
pub(super) fn parse(
    reader: &mut LineReader,
    keys: &mut LogKeys,
    pieces: &Receiver<Piece>,
    out: &SyncSender<Parsed>,
    back: &Receiver<Vec<Said>>,
    spare: &SyncSender<Vec<u8>>,
    stop: &Stop,
) {
    let mut last = 0;
    loop {
        let bytes = match pieces.recv() {
            Ok(Piece::Lines(bytes)) => bytes,
            Ok(Piece::Failed) => {
                let _ = out.send(Parsed::Failed);
                return;
            }
            Err(_) => {
                let _ = out.send(Parsed::End);
                return;
            }
        };
        let said = back.try_recv().unwrap_or_default();
        let Some(piece) = parse_piece(reader, (keys, true), bytes, said, &mut last, spare, stop)
        else {
            let _ = out.send(Parsed::Failed);
            return;
        };
        if out.send(Parsed::Piece(piece)).is_err() {
            return;
        }
    }
}

/// The lines of the piece `bytes`, read with `reader` (whose lines are
/// none between pieces), its keys interned into `keys` (and named in the
/// piece's new keys if `named`), into `said` (emptied first); `last` is
/// how many lines said something in the last piece, and is set to this
/// one's. Gives the piece's buffer back to `spare`. `None` at an error, or
/// once `stop` is set.
pub(super) fn parse_piece(
    reader: &mut LineReader,
    (keys, named): (&mut LogKeys, bool),
    bytes: Vec<u8>,
    mut said: Vec<Said>,
    last: &mut usize,
    spare: &SyncSender<Vec<u8>>,
    stop: &Stop,
) -> Option<ParsedPiece> {
    let (first, valued) = (counts(keys), keys.valued);
    said.clear();
    // Room for as many lines as the last piece had, and some: a batch
    // that grows line by line moves and faults in its pages again.
    said.reserve(*last + *last / 4);
    reader.swap_lines(Lines::over(bytes));
    loop {
        if stop.is_set() {
            return None;
        }
        match reader.next_said(keys) {
            Ok(Some(s)) => said.push(s),
            Ok(None) => break,
            Err(()) => return None,
        }
    }
    let lines = reader.swap_lines(Lines::over(Vec::new()));
    *last = said.len();
    let piece = ParsedPiece {
        said,
        lines: lines.read(),
        valued: keys.valued - valued,
        new: match named {
            true => NewKeys::since(keys, first),
            false => NewKeys::default(),
        },
    };
    let _ = spare.try_send(lines.into_buffer());
    Some(piece)
}

/// How many pieces a dealing thread may have sent that the ordering
/// thread has not taken (see [`deal`]).
pub(super) const DEALT_AHEAD: usize = 4;

/// [`room`] leaves a piece to the ordering thread to parse while fewer
/// than this many pieces the dealing thread sent are not yet done with
/// there. With 1, the ordering thread parsed a piece only once it had
/// none left, which came once in the nginx bench log's 120 pieces (the
/// first, when none has been sent), and the log loaded in 1.035 and
/// 1.046 of the time one parsing thread took, as pieces cost more
/// (medians of two sets of 15 rounds in turn, earlier forms of this
/// code). With 2, 3 or 4 the ordering thread parsed about one piece of
/// the nginx log's in seven, and the log loaded in 0.936, 0.937 and 0.937
/// of that time (medians of 21 rounds; Envoy 0.835, 0.758 and 0.765,
/// JSON lines 0.737, 0.715 and 0.731 in 11).
pub(super) const RAW_BELOW: usize = 3;

/// Whether the dealing thread hands its piece number `k` on unparsed
/// while `queued` pieces are not yet done with on the ordering thread
/// (see [`deal`]).
pub(super) type Raw = dyn Fn(usize, usize) -> bool + Sync;

/// The pieces left to the ordering thread as it has room: while fewer
/// than [`RAW_BELOW`] wait for it there, or are being read.
pub(super) fn room(_: usize, queued: usize) -> bool {
    queued < RAW_BELOW
}

/// The one thread that reads a log beside the ordering thread, which
/// takes the pieces in turn (see [`Here`]): it reads the log into pieces
/// of whole lines, and parses each as [`parse`] does, keys interned into
/// `keys`, onto `out`, but hands on as it is ([`Parsed::Raw`]) a piece
/// that `raw` gives to the ordering thread, to parse there. It adds 1 to
/// `queued` for each piece it sends, and the ordering thread takes 1 off
/// once it is done with a piece. With [`room`], the two threads share
/// the parsing as the ordering thread has room for it, and the recording
/// is the same however they share it. Then [`Parsed::End`], or
/// [`Parsed::Failed`] at the first error. Takes buffers to fill from
/// `spares`, and gives the pieces it parses back to `spare`. Stops at
/// the next line once `stop` is set, or at its next send once the
/// receiver of `out` is gone.
#[allow(clippy::too_many_arguments)]
pub(super) fn deal(
    log: Opened,
    reader: &mut LineReader,
    keys: &mut LogKeys,
    out: &SyncSender<Parsed>,
    back: &Receiver<Vec<Said>>,
    (spare, spares): (&SyncSender<Vec<u8>>, &Receiver<Vec<u8>>),
    (queued, raw): (&AtomicUsize, &Raw),
    stop: &Stop,
) {
    let mut splitter = Splitter::new(log);
    let mut last = 0;
    for k in 0.. {
        let bytes = match splitter.next(spares) {
            Some(Piece::Lines(bytes)) => bytes,
            Some(Piece::Failed) => {
                let _ = out.send(Parsed::Failed);
                return;
            }
            None => {
                let _ = out.send(Parsed::End);
                return;
            }
        };
        let dealt = match raw(k, queued.load(Ordering::Acquire)) {
            true => Parsed::Raw(bytes),
            false => {
                let said = back.try_recv().unwrap_or_default();
                match parse_piece(reader, (keys, true), bytes, said, &mut last, spare, stop) {
                    Some(piece) => Parsed::Piece(piece),
                    None => {
                        let _ = out.send(Parsed::Failed);
                        return;
                    }
                }
            }
        };
        queued.fetch_add(1, Ordering::AcqRel);
        let sent = out.send(dealt);
        if sent.is_err() || stop.is_set() {
            return;
        }
    }
}

/// The ordering thread's end of [`deal`], and its own parser: parser 0
/// is the dealing thread, and the pieces parsed here are [`HERE`]'s.
pub(super) struct Here {
    dealt: Receiver<Parsed>,
    /// Batches read, sent back to the dealing thread…
    back: SyncSender<Vec<Said>>,
    /// …or kept for the pieces parsed here.
    batches: Vec<Vec<Said>>,
    /// Pieces' buffers parsed here, sent back to the dealing thread.
    spare: SyncSender<Vec<u8>>,
    /// The pieces sent and not yet done with (see [`deal`]), and whether
    /// this thread has taken one (from then on it holds one until it asks
    /// for the next).
    queued: Arc<CachePadded<AtomicUsize>>,
    holds: bool,
    taker: Taker,
    reader: LineReader,
    /// How many lines said something in the last piece parsed here.
    last: usize,
    /// Never set: this thread stops by itself.
    stop: Stop,
}

impl Here {
    /// The end of a dealing thread that sends its pieces to `dealt`, takes
    /// batches back from `back` and buffers from `spare`, and counts them
    /// in `queued`; pieces left to this thread are read with `reader`.
    pub(super) fn new(
        dealt: Receiver<Parsed>,
        (back, spare): (SyncSender<Vec<Said>>, SyncSender<Vec<u8>>),
        queued: Arc<CachePadded<AtomicUsize>>,
        reader: LineReader,
    ) -> Here {
        Here {
            dealt,
            back,
            batches: Vec::new(),
            spare,
            queued,
            holds: false,
            taker: Taker::default(),
            reader,
            last: 0,
            stop: Stop::default(),
        }
    }
}

impl Source for Here {
    fn next(&mut self, keys: &mut LogKeys) -> Result<Option<(usize, ParsedPiece)>, String> {
        if std::mem::replace(&mut self.holds, true) {
            self.queued.fetch_sub(1, Ordering::AcqRel);
        }
        match self.taker.recv(&self.dealt) {
            Ok(Parsed::Piece(piece)) => Ok(Some((0, piece))),
            Ok(Parsed::Raw(bytes)) => {
                let said = self.batches.pop().unwrap_or_default();
                let (reader, last, spare) = (&mut self.reader, &mut self.last, &self.spare);
                let piece =
                    parse_piece(reader, (keys, false), bytes, said, last, spare, &self.stop);
                Ok(Some((HERE, piece.ok_or_else(|| FAILED.to_string())?)))
            }
            Ok(Parsed::End) => Ok(None),
            Ok(Parsed::Failed) | Err(_) => Err(FAILED.to_string()),
        }
    }

    /// Back to the dealing thread, or kept for the pieces parsed here.
    fn give_back(&mut self, _: usize, read: Vec<Said>) {
        if let Err(TrySendError::Full(read)) = self.back.try_send(read) {
            if self.batches.len() < 2 {
                self.batches.push(read);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line of the longest length, `\r\n` after it, fits a piece as
    /// it is: the pieces stay [`PIECE`] bytes, and hold the log.
    #[test]
    fn a_line_of_the_longest_length_fits_a_piece() {
        let short = "1764547200.000 k1 200 0.000\n".repeat(3000);
        let long = format!("{}\r\n", "x".repeat(MAX_LINE_BYTES));
        let log = [&short[..100], &short[100..], &long, &short, &long, &short].concat();
        let data = TraceData::Embedded(Box::leak(log.clone().into_bytes().into_boxed_slice()));
        let mut splitter = Splitter::new(Opened::new(&data, PIECE).unwrap());
        let (spare, spares) = std::sync::mpsc::sync_channel(4);
        let mut read = Vec::new();
        while let Some(piece) = splitter.next(&spares) {
            // (None after the last piece.)
            assert!(
                [0, PIECE].contains(&splitter.buf.len()),
                "{}",
                splitter.buf.len()
            );
            let Piece::Lines(bytes) = piece else {
                panic!("a piece failed");
            };
            read.extend_from_slice(&bytes);
            let _ = spare.try_send(bytes);
        }
        assert_eq!(read, log.into_bytes());
    }

    #[test]
    fn a_plain_log_is_read_in_pieces_only_if_longer_than_one_of_long_lines() {
        let worth = |bytes: Vec<u8>| {
            let data = TraceData::Embedded(Box::leak(bytes.into_boxed_slice()));
            Opened::new(&data, 4 * LONG_LINE).unwrap().worth_pieces()
        };
        let long = |text: String| worth(text.into_bytes());
        // Pieces of four lines of `LONG_LINE` bytes.
        let lines = |len: usize, n: usize| format!("{}\n", "x".repeat(len - 1)).repeat(n);
        assert!(long(lines(LONG_LINE, 9)));
        assert!(!long(lines(LONG_LINE - 1, 9)));
        assert!(!long(lines(20, 100)));
        // A log that fits in one piece: nothing to share.
        assert!(!long(lines(LONG_LINE, 3)));
        // No newline in the first piece: one line over the cap, which
        // fails however it is read.
        assert!(!long("y".repeat(4 * LONG_LINE + 1)));
        // A gzip log: inflated on a thread of its own.
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(lines(LONG_LINE, 9).as_bytes()).unwrap();
        assert!(!worth(gz.finish().unwrap()));
    }
}
