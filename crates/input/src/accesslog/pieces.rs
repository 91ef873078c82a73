//! A log read in pieces, parsed side by side.
//!
//! A thread of its own, "log splitter", reads the log (inflated, if it is
//! gzip) into pieces of whole lines, about [`PIECE`] bytes each, and
//! deals them out in turn to the parsers, threads "log parser": piece `k`
//! to parser `k % n`. Each parser reads its pieces' lines as a
//! [`LineReader`] reads a log, into what each says ([`Said`]), with keys
//! of its own: its ids are numbered as *it* first meets the keys.
//!
//! The ordering thread takes the pieces back in turn and gives their
//! keys the log's ids ([`super::merge::Merge`]).
//!
//! Any error ends the read as failed: a bad line that is not skipped, a
//! line [`Lines`] refuses (one over the cap), a split's refusal, a read
//! error. The log is then read again on one thread, which gives the
//! error and its message with the line's number and text (which a piece
//! does not know).

use std::io::{self, Read};
use std::sync::mpsc::{Receiver, SyncSender};

use super::blocks::fill;
use super::lines::{unzipped, Lines};
use super::merge::{counts, NewKeys, Parsed, ParsedPiece};
use super::pipeline::{LineReader, Stop};
use super::said::Said;
use super::{LogKeys, TraceData, MAX_LINE_BYTES};

/// The bytes a piece is read into: room for four lines of the longest
/// length (tests read in smaller pieces, which a longer line grows).
pub(super) const PIECE: usize = super::lines::BUFFER;

/// The most parsers a log is read by: on nginx's combined format, putting
/// the lines in order takes the one ordering thread about a third of what
/// parsing them takes on one (perf, 75 % of samples against 25 %), so
/// more parsers than this would wait on it, each with a table of keys.
pub(super) const MOST_PARSERS: usize = 4;

/// The shortest mean length of a line (its newline included) of a log
/// read in pieces: one of shorter lines is read on one thread of its own.
/// On the 2-core reference machine (`validate`, medians of 7–9 rounds in
/// turn, 10^6 lines), pieces took, of what one thread took: nginx's
/// `$msec $arg_k $status $request_time` (31 bytes a line) 1.13, Envoy
/// (38) 1.10, JSON lines (54) 0.96 for 1.16 times the CPU, nginx's
/// `$remote_addr "$request" $status $request_time $msec` (69) 0.83,
/// nginx's combined format (157, benches/log-combined.toml) 0.83. Short
/// lines cost little to parse beside what putting them in order costs,
/// which one thread does either way, and pieces cost more in all: their
/// keys are interned twice, in their parser's ids and in the log's.
const LONG_LINE: usize = 64;

/// A log opened, and its first piece read (as much of it as there is).
pub(super) struct Opened {
    r: Box<dyn Read + Send>,
    buf: Vec<u8>,
    end: usize,
    gzip: bool,
}

impl Opened {
    /// The log, to be read in pieces of `piece` bytes (at most
    /// [`PIECE`]: its lines may be read on without them).
    pub(super) fn new(data: &TraceData, piece: usize) -> io::Result<Opened> {
        debug_assert!(piece <= PIECE);
        let mut buf = vec![0; piece];
        let (mut r, mut end, gzip) = data.open().and_then(|r| unzipped(r, &mut buf))?;
        let size = buf.len();
        fill(&mut *r, &mut buf, &mut end, size)?;
        Ok(Opened { r, buf, end, gzip })
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
    let Opened {
        mut r,
        mut buf,
        mut end,
        ..
    } = log;
    let (piece, mut k) = (buf.len(), 0);
    let mut eof = false;
    loop {
        let to = &parsers[k % parsers.len()];
        if !eof {
            let size = buf.len();
            let Ok(ended) = fill(&mut *r, &mut buf, &mut end, size) else {
                let _ = to.send(Piece::Failed);
                return;
            };
            eof = ended;
        }
        if stop.is_set() {
            return;
        }
        let cut = match memchr::memrchr(b'\n', &buf[..end]) {
            _ if eof => end,
            Some(i) => i + 1,
            // A line of more bytes than the cap before its newline.
            None if end > MAX_LINE_BYTES => {
                let _ = to.send(Piece::Failed);
                return;
            }
            None => {
                buf.resize(buf.len() * 2, 0);
                continue;
            }
        };
        let mut next = spare.try_recv().unwrap_or_default();
        next.resize(buf.len().max(piece), 0);
        next[..end - cut].copy_from_slice(&buf[cut..end]);
        buf.truncate(cut);
        if to.send(Piece::Lines(buf)).is_err() || eof {
            return;
        }
        (buf, end, k) = (next, end - cut, k + 1);
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
        let (first, valued) = (counts(keys), keys.valued);
        let mut said = back.try_recv().unwrap_or_default();
        said.clear();
        // Room for as many lines as the last piece had, and some: a batch
        // that grows line by line moves and faults in its pages again.
        said.reserve(last + last / 4);
        reader.swap_lines(Lines::over(bytes));
        loop {
            if stop.is_set() {
                return;
            }
            match reader.next_said(keys) {
                Ok(Some(s)) => said.push(s),
                Ok(None) => break,
                Err(()) => {
                    let _ = out.send(Parsed::Failed);
                    return;
                }
            }
        }
        let lines = reader.swap_lines(Lines::over(Vec::new()));
        last = said.len();
        let piece = ParsedPiece {
            said,
            lines: lines.read(),
            valued: keys.valued - valued,
            new: NewKeys::since(keys, first),
        };
        let _ = spare.try_send(lines.into_buffer());
        if out.send(Parsed::Piece(piece)).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
