//! The pieces of a log parsed apart (see [`super::pieces`]), taken back
//! in order: what a parser hands on for a piece, where the pieces come
//! from ([`Source`]: parsers in turn, or a dealing thread that leaves
//! some pieces to the ordering thread), and the ordering thread's
//! [`Merge`].
//!
//! The ordering thread takes the pieces back in turn, so their lines in
//! line order, and gives each key the id it has in the whole log
//! ([`Merge`]). A parser's piece comes with the names of the keys new to
//! its parser, in the order of its ids: the order they first come in the
//! piece. Each is looked up by its name among the log's keys, and added
//! if it is new there too. The keys new to the log are new to the parser
//! too, and come after every key of the pieces before, so they are added
//! in the order reading the lines one by one adds them. From then on the
//! parser's id maps to the log's. A piece the ordering thread parses
//! itself ([`HERE`]'s) has its keys interned straight into the log's, as
//! reading the lines one by one would. So the keys get the ids one thread
//! reading the log gives them, line numbers are counted on, and the
//! recording is the same.

use std::sync::mpsc::{Receiver, SyncSender};

use super::said::{Kind, Said, FAILED};
use super::LogKeys;
use crate::recording::{NameList, RecordedKeys};

/// What a parser hands on for a piece.
pub(super) enum Parsed {
    Piece(ParsedPiece),
    /// A piece left to the ordering thread to parse (see
    /// [`super::pieces::deal`]).
    Raw(Vec<u8>),
    /// No more pieces came.
    End,
    /// Reading stopped at an error, which reading here gives again.
    Failed,
}

/// A piece's lines as a parser read them.
pub(super) struct ParsedPiece {
    /// What each line that is not blank says: its line number within the
    /// piece, its keys as the parser's ids.
    pub said: Vec<Said>,
    /// The piece's lines, blank or not.
    pub lines: u64,
    /// Lines replayed with a value to split by.
    pub valued: u64,
    /// The keys the parser met first in this piece.
    pub new: NewKeys,
}

/// The clients, addresses and sources a parser met first in a piece: the
/// first one's ids, and their names in the order of their ids.
#[derive(Default)]
pub(super) struct NewKeys {
    first: (u32, u32, u32),
    clients: NameList,
    ips: NameList,
    parts: Vec<String>,
}

/// How many clients, addresses and sources `keys` names.
pub(super) fn counts(keys: &LogKeys) -> (u32, u32, u32) {
    let (clients, ips) = keys.keys.counts();
    let parts = keys.split.as_ref().map_or(1, |s| s.names().len() as u32);
    (clients, ips, parts)
}

impl NewKeys {
    /// The keys `keys` names from ids `first` on.
    pub(super) fn since(keys: &LogKeys, first: (u32, u32, u32)) -> NewKeys {
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

/// A parser's ids as the whole log's.
struct Ids {
    clients: Vec<u32>,
    ips: Vec<u32>,
    parts: Vec<u32>,
}

/// The parsers' pieces taken back in turn, their keys given the log's ids
/// (see the module's documentation).
pub(super) struct Merge {
    source: Box<dyn Source>,
    /// Lines in the pieces taken, and of them, lines replayed with a
    /// value to split by.
    lines: u64,
    valued: u64,
    keys: LogKeys,
    ids: Vec<Ids>,
}

/// The parser of a piece parsed by the ordering thread itself, its keys
/// interned into the log's, which are its ids (see
/// [`super::pieces::Here`]).
pub(super) const HERE: usize = usize::MAX;

/// Where a merge's pieces come from.
pub(super) trait Source {
    /// Done with the piece taken last, the next piece and its parser;
    /// `Ok(None)` at the log's end. A piece this thread parses, its keys
    /// interned into the log's `keys` (every piece before it has been
    /// taken, so they get the ids reading the log on one thread gives),
    /// is [`HERE`]'s.
    fn next(&mut self, keys: &mut LogKeys) -> Result<Option<(usize, ParsedPiece)>, String>;

    /// A batch read, to be filled again; `w` is the parser of the piece
    /// just taken.
    fn give_back(&mut self, w: usize, read: Vec<Said>);
}

/// Piece `k` from parser `k % n`, each a thread of its own (see
/// [`super::pieces::parse`]).
struct Parsers {
    parsed: Vec<Receiver<Parsed>>,
    /// Batches read, sent back to a parser to be filled again.
    back: Vec<SyncSender<Vec<Said>>>,
    /// The parser whose piece comes next.
    turn: usize,
}

impl Source for Parsers {
    fn next(&mut self, _: &mut LogKeys) -> Result<Option<(usize, ParsedPiece)>, String> {
        let w = self.turn;
        let piece = match self.parsed[w].recv() {
            Ok(Parsed::Piece(piece)) => piece,
            Ok(Parsed::End) => return Ok(None),
            Ok(Parsed::Raw(_) | Parsed::Failed) | Err(_) => return Err(FAILED.to_string()),
        };
        self.turn = (w + 1) % self.parsed.len();
        Ok(Some((w, piece)))
    }

    fn give_back(&mut self, w: usize, read: Vec<Said>) {
        let _ = self.back[w].try_send(read);
    }
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
        let n = parsed.len();
        let source = Parsers {
            parsed,
            back,
            turn: 0,
        };
        Merge::from(Box::new(source), n, keys)
    }

    /// The pieces `source` gives, of `parsers` parsers besides [`HERE`],
    /// the log's keys interned into `keys`, whose sources (if split) each
    /// parser's keys started with.
    pub(super) fn from(source: Box<dyn Source>, parsers: usize, keys: LogKeys) -> Merge {
        debug_assert_eq!(keys.keys.counts(), (0, 0));
        let parts: Vec<u32> = (0..counts(&keys).2).collect();
        let ids = (0..parsers)
            .map(|_| Ids {
                clients: Vec::new(),
                ips: Vec::new(),
                parts: parts.clone(),
            })
            .collect();
        Merge {
            source,
            lines: 0,
            valued: 0,
            keys,
            ids,
        }
    }

    /// Takes the next piece that says something into `batch` (the batch
    /// it held is given back), its lines numbered in the log and their
    /// keys given the log's ids (see [`Merge::adopt`]), the keys new to its
    /// parser interned first: `Ok(false)` at the log's end, an error
    /// ([`FAILED`]) where a parser failed, or where a source cannot be
    /// added (too many).
    pub(super) fn refill(&mut self, batch: &mut Vec<Said>) -> Result<bool, String> {
        loop {
            let Some((w, piece)) = self.source.next(&mut self.keys)? else {
                return Ok(false);
            };
            let read = std::mem::replace(batch, piece.said);
            if read.capacity() > 0 {
                self.source.give_back(w, read);
            }
            let before = self.lines;
            self.lines += piece.lines;
            // (A piece parsed here counted its valued lines in the log's
            // keys too: `into_keys` keeps this count instead.)
            self.valued += piece.valued;
            if w != HERE {
                self.adopt_keys(w, &piece.new)?;
            }
            self.adopt(w, before, batch)?;
            if !batch.is_empty() {
                return Ok(true);
            }
        }
    }

    /// Gives the keys new to parser `w` in a piece the log's ids.
    fn adopt_keys(&mut self, w: usize, new: &NewKeys) -> Result<(), String> {
        let Some(ids) = self.ids.get_mut(w) else {
            return Err(FAILED.to_string());
        };
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
        Ok(())
    }

    /// The lines of a piece of parser `w`, after `before` lines: their
    /// numbers in the log, and their keys given the log's ids (a piece
    /// parsed [`HERE`] has them).
    fn adopt(&self, w: usize, before: u64, batch: &mut [Said]) -> Result<(), String> {
        if w == HERE {
            for said in batch {
                said.line += before;
            }
            return Ok(());
        }
        let Some(ids) = self.ids.get(w) else {
            return Err(FAILED.to_string());
        };
        for said in batch {
            said.line += before;
            if let Kind::Request(c, i, p) = said.kind {
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
            }
        }
        Ok(())
    }

    /// The log's keys, once every piece is taken.
    pub(super) fn into_keys(self) -> LogKeys {
        LogKeys {
            valued: self.valued,
            ..self.keys
        }
    }
}
