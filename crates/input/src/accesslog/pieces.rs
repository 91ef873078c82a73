//! A log read in pieces, parsed side by side.
//!
//! A thread of its own, "log splitter", reads the log (inflated, if it is
//! gzip) into pieces of whole lines, about [`PIECE`] bytes each, and
//! deals them out in turn to the parsers, threads "log parser": piece `k`
//! to parser `k % n`. Each parser reads its pieces' lines as a
//! [`LineReader`] reads a log, into what each says ([`Said`]), with keys
//! of its own: its ids are numbered as *it* first meets the keys.
//!
//! The ordering thread takes the pieces back in turn, so their lines in
//! line order, and gives each key the id it has in the whole log
//! ([`Merge`]). A piece comes with the names of the keys new to its
//! parser, in the order of its ids: the order they first come in the
//! piece. Each is looked up by its name among the log's keys, and added
//! if it is new there too. The keys new to the log are new to the parser
//! too, and come after every key of the pieces before, so they are added
//! in the order reading the lines one by one adds them. From then on the
//! parser's id maps to the log's. So the keys get the ids one thread
//! reading the log gives them, line numbers are counted on, and the
//! recording is the same.
//!
//! Any error ends the read as failed: a bad line that is not skipped, a
//! line [`Lines`] refuses (one over the cap), a split's refusal, a read
//! error. The log is then read again on one thread,
//! which gives the error and its message with the line's number and text
//! (which a piece does not know).

use std::io::{self, Read};

use std::sync::mpsc::{Receiver, SyncSender};

use super::lines::{fill, unzipped, Lines};
use super::pipeline::{Kind, LineReader, Said, Stop, FAILED};
use super::{LogKeys, TraceData, MAX_LINE_BYTES};
use crate::recording::{NameList, RecordedKeys};

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
    /// lines are [`LONG_LINE`] bytes long or longer on average. (A gzip log is inflated on a
    /// thread of its own already: nginx's combined format gzipped took
    /// 1.05 times as long in pieces, measured as for [`LONG_LINE`].)
    pub(super) fn worth_pieces(&self) -> bool {
        let read = &self.buf[..self.end];
        let whole = match memchr::memrchr(b'\n', read) {
            Some(last) => &read[..=last],
            None => read,
        };
        let lines = memchr::memchr_iter(b'\n', whole).count();
        !self.gzip && self.end == self.buf.len() && lines > 0 && whole.len() >= LONG_LINE * lines
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

/// What a parser hands on for a piece.
pub(super) enum Parsed {
    Piece(ParsedPiece),
    /// No more pieces came.
    End,
    /// Reading stopped at an error, which reading here gives again.
    Failed,
}

/// A piece's lines as a parser read them.
pub(super) struct ParsedPiece {
    /// What each line that is not blank says: its line number within the
    /// piece, its keys as the parser's ids.
    said: Vec<Said>,
    /// The piece's lines, blank or not.
    lines: u64,
    /// Lines replayed with a value to split by.
    valued: u64,
    /// The keys the parser met first in this piece.
    new: NewKeys,
}

/// The clients, addresses and sources a parser met first in a piece: the
/// first one's ids, and their names in the order of their ids.
#[derive(Default)]
struct NewKeys {
    first: (u32, u32, u32),
    clients: NameList,
    ips: NameList,
    parts: Vec<String>,
}

/// How many clients, addresses and sources `keys` names.
fn counts(keys: &LogKeys) -> (u32, u32, u32) {
    let (clients, ips) = keys.keys.counts();
    let parts = keys.split.as_ref().map_or(1, |s| s.names().len() as u32);
    (clients, ips, parts)
}

impl NewKeys {
    /// The keys `keys` names from ids `first` on.
    fn since(keys: &LogKeys, first: (u32, u32, u32)) -> NewKeys {
        let (clients, ips, parts) = counts(keys);
        let mut new = NewKeys {
            first,
            ..NewKeys::default()
        };
        for id in first.0..clients {
            new.clients.push(keys.keys.client(id));
        }
        for id in first.1..ips {
            new.ips.push(keys.keys.ip(id));
        }
        if let Some(split) = &keys.split {
            new.parts = split.names()[first.2 as usize..parts as usize].to_vec();
        }
        new
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

/// A parser's ids as the whole log's.
struct Ids {
    clients: Vec<u32>,
    ips: Vec<u32>,
    parts: Vec<u32>,
}

/// The parsers' pieces taken back in turn, their keys given the log's ids
/// (see the module's documentation).
pub(super) struct Merge {
    parsed: Vec<Receiver<Parsed>>,
    /// Batches read, sent back to a parser to be filled again.
    back: Vec<SyncSender<Vec<Said>>>,
    /// The parser whose piece comes next.
    turn: usize,
    /// The parser of the piece taken last, and the lines before that
    /// piece.
    parser: usize,
    before: u64,
    /// Lines in the pieces taken, and of them, lines replayed with a
    /// value to split by.
    lines: u64,
    valued: u64,
    keys: LogKeys,
    ids: Vec<Ids>,
}

/// How many names ahead of the one interned the log's tables are asked
/// for the slot of (see [`intern_new`]).
const NAMES_AHEAD: usize = 8;

/// Interns `names` (clients, or addresses if `ip`) into `keys` in order,
/// and adds their ids to `ids`.
fn intern_new(keys: &mut RecordedKeys, names: &NameList, ip: bool, ids: &mut Vec<u32>) {
    let n = names.len();
    let mut hashes = [0u64; NAMES_AHEAD];
    let ask = |keys: &RecordedKeys, hashes: &mut [u64; NAMES_AHEAD], j: usize| {
        let hash = keys.hash(names.get(j).as_bytes());
        keys.prefetch_hashed(ip, hash);
        hashes[j % NAMES_AHEAD] = hash;
    };
    for j in 0..n.min(NAMES_AHEAD) {
        ask(keys, &mut hashes, j);
    }
    ids.reserve(n);
    for j in 0..n {
        let hash = hashes[j % NAMES_AHEAD];
        if j + NAMES_AHEAD < n {
            ask(keys, &mut hashes, j + NAMES_AHEAD);
        }
        ids.push(match ip {
            true => keys.intern_ip(names.get(j), hash),
            false => keys.intern_client(names.get(j), hash),
        });
    }
}

impl Merge {
    /// The pieces of the parsers that hand them on to `parsed` (and take
    /// batches back from `back`), the log's keys interned into `keys`,
    /// whose sources (if split) each parser's keys started with.
    pub(super) fn new(
        parsed: Vec<Receiver<Parsed>>,
        back: Vec<SyncSender<Vec<Said>>>,
        keys: LogKeys,
    ) -> Merge {
        debug_assert_eq!(keys.keys.counts(), (0, 0));
        let parts: Vec<u32> = (0..counts(&keys).2).collect();
        let ids = (0..parsed.len())
            .map(|_| Ids {
                clients: Vec::new(),
                ips: Vec::new(),
                parts: parts.clone(),
            })
            .collect();
        Merge {
            parsed,
            back,
            turn: 0,
            parser: 0,
            before: 0,
            lines: 0,
            valued: 0,
            keys,
            ids,
        }
    }

    /// Takes the next piece that says something into `batch` (the batch
    /// it held is sent back), its lines as their parser said them (see
    /// [`Merge::adopt`]), and gives the keys new to its parser the log's
    /// ids: `Ok(false)` at the log's end, an error ([`FAILED`]) where a
    /// parser failed, or where a source cannot be added (too many).
    pub(super) fn refill(&mut self, batch: &mut Vec<Said>) -> Result<bool, String> {
        loop {
            let w = self.turn;
            let piece = match self.parsed[w].recv() {
                Ok(Parsed::Piece(piece)) => piece,
                Ok(Parsed::End) => return Ok(false),
                Ok(Parsed::Failed) | Err(_) => return Err(FAILED.to_string()),
            };
            self.turn = (w + 1) % self.parsed.len();
            let read = std::mem::replace(batch, piece.said);
            if read.capacity() > 0 {
                let _ = self.back[w].try_send(read);
            }
            let (ids, new) = (&mut self.ids[w], &piece.new);
            let first = (ids.clients.len(), ids.ips.len(), ids.parts.len());
            debug_assert_eq!(
                first,
                (
                    new.first.0 as usize,
                    new.first.1 as usize,
                    new.first.2 as usize
                )
            );
            intern_new(&mut self.keys.keys, &new.clients, false, &mut ids.clients);
            intern_new(&mut self.keys.keys, &new.ips, true, &mut ids.ips);
            if let Some(split) = self.keys.split.as_mut() {
                for name in &new.parts {
                    ids.parts
                        .push(split.intern(name).map_err(|_| FAILED.to_string())?);
                }
            }
            (self.parser, self.before) = (w, self.lines);
            self.lines += piece.lines;
            self.valued += piece.valued;
            if !batch.is_empty() {
                return Ok(true);
            }
        }
    }

    /// A line of the piece taken last, its number in the log and its keys
    /// given the log's ids.
    #[inline(always)]
    pub(super) fn adopt(&mut self, mut said: Said) -> Result<Said, String> {
        said.line += self.before;
        let Kind::Request(c, i, p) = said.kind else {
            return Ok(said);
        };
        let ids = &self.ids[self.parser];
        let known = (
            ids.clients.get(c as usize),
            ids.ips.get(i as usize),
            ids.parts.get(p as usize),
        );
        // (Every id of a parser's has been given the log's.)
        let (Some(&c), Some(&i), Some(&p)) = known else {
            return Err(FAILED.to_string());
        };
        said.kind = Kind::Request(c, i, p);
        Ok(said)
    }

    /// The log's keys, once every piece is taken.
    pub(super) fn into_keys(self) -> LogKeys {
        LogKeys {
            valued: self.valued,
            ..self.keys
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
