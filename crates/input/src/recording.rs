//! A recorded source — a CSV trace, an access log — read once per process.
//!
//! Reading a log (parsing its lines, re-ordering them, interning its keys)
//! costs far more than replaying what it says, and one process replays a
//! file many times: a scenario is validated, then run, and a sweep builds
//! its scenario again for every point it checks and runs. So a file is
//! read once into a [`Recording`] — its requests in replay order, a few
//! bytes each, the names of its keys in the order the file first named
//! them, what reading it counted — which a [`Cache`] keeps for the rest of
//! the process, keyed by the file's identity (path, length, modification
//! time, and on Unix device, inode and change time) and every option that
//! changes what reading it gives. A scenario built again finds it, and
//! only gives the names to its own population, its clients and its
//! addresses each in the order the file named them: every id is the one
//! reading the file would give. A new population takes each list whole
//! (a copy of its text; [`Population::take_lists`]), one that names others
//! already interns them. A sweep builds its scenario once for each value
//! of each axis and twice for each point, and for a log of many keys
//! interning was most of that; so once a recording has been given to a
//! new population twice, it keeps that population and its ids, and a
//! scenario built again starts from them (a population's copy shares its
//! names until it names something new).
//!
//! A request is packed as a flags byte and what follows: the time since
//! the previous request, the client's id, and only what differs from the
//! usual — an address other than the client's name, a cost other than 1,
//! a source part, a verdict and a delay, a line other than the next one.
//! A request of the usual kind whose numbers are small packs them in
//! fixed fields, one word to read (see [`FIXED`]: 5 to 9 bytes); any
//! other, as varints. Memory: those bytes and the names, for as long as
//! the process runs (README, "Memory of a run").

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use crate::accesslog::word;
use crate::clock::Nanos;
use crate::keys::IdTable;
use crate::population::{DistinctNames, Population};
use crate::split::Split;
use crate::traffic::{Arrival, Stream};

/// One request of a recording, its keys as the recording's own ids (in
/// the order the file first named them; see [`Recording::ids`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Entry {
    /// Arrival, relative to the earliest.
    pub time: Nanos,
    pub client: u32,
    pub ip: u32,
    /// Its source's part number in a split recording (else 0).
    pub part: u32,
    pub cost: u64,
    /// The gateway's verdict, by its code (0: none; see
    /// `accesslog::Verdict::code`).
    pub verdict: u8,
    /// The gateway's delay of a delayed request.
    pub delay: u64,
    /// 1-based line number in the file.
    pub line: u64,
}

/// What reading an access log counted (all zero for a CSV trace).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// Bad lines skipped (`on_bad_line = "skip"`).
    pub skipped: u64,
    /// Lines that arrived before a line logged ahead of them: the ones the
    /// reorder window moved.
    pub reordered: u64,
    /// Lines outside `location`.
    pub filtered: u64,
    /// Lines inside it that `only`/`except` passed over.
    pub unselected: u64,
    /// Lines not counted because their key is empty (nginx does not
    /// account a request whose zone key is empty).
    pub empty_key: u64,
    /// Lines that carried the gateway's verdict.
    pub with_verdict: u64,
}

/// A file read once (see the module documentation).
#[derive(Debug)]
pub struct Recording {
    requests: Packed,
    /// Requests it replays.
    pub rows: u64,
    /// The latest arrival, relative to the earliest.
    pub last: Nanos,
    /// For an access log, whose times are calendar times: the instant of
    /// its earliest arrival (`t = 0`), in ns since 1970-01-01T00:00Z.
    pub start: Option<u64>,
    names: Names,
    /// The sources it splits into by `source`, if it does.
    pub split: Option<Split>,
    pub counts: Counts,
    /// Whether [`Recording::ids`] has given it to a new population…
    interned_new: AtomicBool,
    /// …and, from the second time, that population and its ids.
    kept: OnceLock<(Population, Arc<Ids>)>,
}

impl Recording {
    /// Gives the recording's clients and addresses to `population`, each
    /// in the order the file first named them: the ids reading the file
    /// into it gives (see [`Population::take_lists`] and
    /// [`Population::intern_lists`]).
    /// Into a new population, from the second time on, a copy of the
    /// population the first of those gave (see the module documentation).
    pub fn ids(&self, population: &mut Population) -> Arc<Ids> {
        if !population.is_new() || !self.interned_new.swap(true, Ordering::Relaxed) {
            return Arc::new(self.intern(population));
        }
        let (kept, ids) = self.kept.get_or_init(|| {
            let mut p = Population::default();
            let ids = Arc::new(self.intern(&mut p));
            (p, ids)
        });
        population.clone_from(kept);
        Arc::clone(ids)
    }

    fn intern(&self, population: &mut Population) -> Ids {
        let n = &self.names;
        let counts = (n.clients.len(), n.ips.len());
        // Into a new population, the names are taken over whole: each list
        // names each key once, so interning them in turn would give each
        // its own id.
        if population.take_lists(n.clients.distinct(), n.ips.distinct()) {
            return Ids {
                clients: Vec::new(),
                ips: Vec::new(),
                same: true,
                counts,
            };
        }
        let (clients, ips) = population.intern_lists(
            (0..n.clients.len()).map(|i| n.clients.get(i)),
            (0..n.ips.len()).map(|i| n.ips.get(i)),
        );
        let in_order = |ids: &[u32]| ids.iter().enumerate().all(|(i, &id)| id as usize == i);
        let same = in_order(&clients) && in_order(&ips);
        Ids {
            clients,
            ips,
            same,
            counts,
        }
    }

    /// The requests in replay order.
    pub fn replay(self: &Arc<Recording>) -> Replay {
        Replay {
            recording: Arc::clone(self),
            cursor: Cursor::default(),
        }
    }

    /// How many distinct clients and addresses it names.
    pub fn key_counts(&self) -> (usize, usize) {
        (self.names.clients.len(), self.names.ips.len())
    }

    /// The bytes it holds: its packed requests and its names (besides the
    /// population it may keep, which the scenarios built from it share).
    pub fn memory_bytes(&self) -> u64 {
        let n = &self.names;
        let names = n.clients.bytes() + n.ips.bytes();
        (self.requests.bytes() + names) as u64
    }
}

/// Each of a recording's names' id in one scenario's population.
#[derive(Debug)]
pub struct Ids {
    /// By the recording's ids (unless `same`).
    clients: Vec<u32>,
    ips: Vec<u32>,
    /// Whether each of them is the recording's own id (taken into a new
    /// population, which knew no names before: a scenario replaying one
    /// log), so that there is nothing to look up.
    same: bool,
    /// How many clients and addresses the recording names.
    counts: (usize, usize),
}

impl Ids {
    /// The population's ids of an entry's client and address.
    #[inline(always)]
    pub fn of(&self, e: &Entry) -> (u32, u32) {
        if self.same {
            debug_assert!((e.client as usize) < self.counts.0);
            debug_assert!((e.ip as usize) < self.counts.1);
            return (e.client, e.ip);
        }
        (self.clients[e.client as usize], self.ips[e.ip as usize])
    }
}

/// A recording's requests up to `end` as the engine takes them: a
/// trace's rows, a log's lines.
pub(crate) struct ReplayStream {
    replay: Replay,
    ids: Arc<Ids>,
    end: Nanos,
}

impl ReplayStream {
    pub(crate) fn new(replay: Replay, ids: Arc<Ids>, end: Nanos) -> ReplayStream {
        ReplayStream { replay, ids, end }
    }

    /// The next request's arrival and part, if it comes by the end.
    fn next_arrival(&mut self) -> Option<(Arrival, u32)> {
        let mut cursor = self.replay.cursor;
        let next = self.arrival_at(&mut cursor);
        self.replay.cursor = cursor;
        next
    }

    /// [`ReplayStream::next_arrival`] from `cursor`, which moves past it.
    #[inline(always)]
    fn arrival_at(&self, cursor: &mut Cursor) -> Option<(Arrival, u32)> {
        let e = cursor
            .next(&self.replay.recording.requests.chunks)
            .filter(|e| e.time <= self.end)?;
        let (client, ip) = self.ids.of(&e);
        let cost = e.cost;
        Some((
            Arrival {
                time: e.time,
                client,
                ip,
                cost,
            },
            e.part,
        ))
    }
}

impl Stream for ReplayStream {
    fn next(&mut self) -> anyhow::Result<Option<Arrival>> {
        Ok(self.next_arrival().map(|(a, _)| a))
    }

    fn next_in_part(&mut self) -> anyhow::Result<Option<(Arrival, u32)>> {
        Ok(self.next_arrival())
    }

    /// [`ReplayStream::next_arrival`] in a loop over a local copy of the
    /// cursor: a replay's chunks of arrivals decode all their requests but
    /// the first here. (585 → 550 instructions a decision on the thread
    /// that generated every chunk then, callgrind, the nginx bench log's
    /// first 2·10^5 lines.)
    fn fill_in_part(&mut self, out: &mut Vec<(Arrival, u32)>, max: usize) -> anyhow::Result<()> {
        let mut cursor = self.replay.cursor;
        while out.len() < max {
            let Some(next) = self.arrival_at(&mut cursor) else {
                break;
            };
            out.push(next);
        }
        self.replay.cursor = cursor;
        Ok(())
    }
}

/// A recording being read: its requests in replay order (its keys are
/// interned beside it, into [`RecordedKeys`]).
#[derive(Debug, Default)]
pub struct RecordingBuilder {
    requests: Packed,
    rows: u64,
    last: Nanos,
    /// Where every [`MARK_EVERY`]-th request starts, by chunk, if marked
    /// (for [`RecordingBuilder::merge`]).
    marks: Option<Vec<Vec<Mark>>>,
}

/// Every how many requests a marked builder notes where one starts.
const MARK_EVERY: u64 = 64;

/// Where a request starts in its chunk, and the time and line of the one
/// before it: a place to start reading from.
#[derive(Debug, Clone, Copy)]
struct Mark {
    at: usize,
    time: u64,
    line: u64,
}

impl RecordingBuilder {
    /// A builder that notes where every 64th request starts (24 bytes
    /// per 64 requests, while it is built), so that a merge finds where a
    /// late request goes without reading all those before it.
    pub fn marked() -> RecordingBuilder {
        RecordingBuilder {
            marks: Some(Vec::new()),
            ..RecordingBuilder::default()
        }
    }

    /// Adds the next request in replay order (times never decrease).
    pub fn push(&mut self, e: &Entry) {
        if self.rows % MARK_EVERY == 0 && self.marks.is_some() {
            self.mark();
        }
        self.requests.push(e);
        self.rows += 1;
        self.last = e.time;
    }

    /// Notes where the next request starts.
    #[cold]
    fn mark(&mut self) {
        let p = &mut self.requests;
        let (time, line) = (p.time, p.line);
        let at = p.chunk().len();
        if let Some(marks) = self.marks.as_mut() {
            marks.resize_with(p.chunks.len(), Vec::new);
            marks[p.chunks.len() - 1].push(Mark { at, time, line });
        }
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The latest time pushed.
    pub fn last(&self) -> Nanos {
        self.last
    }

    /// The requests pushed so far, each `later` later, and `late` (in
    /// replay order), merged: a request of `late` goes before the first
    /// pushed one that `before` says it goes before (an order that puts
    /// earlier times first). The requests are those pushing them all in
    /// that order gives; the chunks are this builder's own.
    ///
    /// A pushed request packs how it differs from the one before it, so
    /// one that still follows the same request is kept as it is: a chunk
    /// no late request goes into is kept whole, and in one that late
    /// requests go into, the requests between them are copied as they
    /// are, found from the nearest mark before (see
    /// [`RecordingBuilder::marked`]); only the request after a late one
    /// (and the first, if moved later) is packed again.
    pub fn merge(
        self,
        later: u64,
        late: &[Entry],
        before: impl Fn(&Entry, &Entry) -> bool,
    ) -> RecordingBuilder {
        let RecordingBuilder {
            requests: packed,
            rows,
            last,
            marks,
        } = self;
        let marks = marks.unwrap_or_default();
        let placed = late.len();
        let Packed {
            chunks,
            starts,
            time: end_time,
            line: end_line,
        } = packed;
        let mut out = Packed::default();
        let mut late = late.iter().peekable();
        // Whether the last request out is the pushed one before the next.
        let mut follows = later == 0;
        for (c, bytes) in chunks.into_iter().enumerate() {
            let (end, end_line) = starts.get(c + 1).copied().unwrap_or((end_time, end_line));
            let end = end.saturating_add(later);
            let mut into = late.clone().take_while(|l| l.time.0 <= end).count();
            out.starts.push((out.time, out.line));
            if into == 0 && follows {
                out.chunks.push(bytes);
                (out.time, out.line) = (end, end_line);
                continue;
            }
            let view = std::slice::from_ref(&bytes);
            let (time, line) = starts[c];
            let mut cursor = Cursor {
                chunk: 0,
                at: 0,
                time,
                line,
            };
            let marks = marks.get(c).map_or(&[][..], Vec::as_slice);
            let mut chunk = Vec::with_capacity(bytes.len() + (into + 1) * 2 * MOST);
            loop {
                let next_late = late.peek().map(|l| l.time.0).filter(|_| into > 0);
                if let (Some(t), true) = (next_late, follows) {
                    // The requests before the last mark before `t` all go
                    // before the late one.
                    let i = marks.partition_point(|m| m.time.saturating_add(later) < t);
                    if let Some(m) = marks[..i].last().filter(|m| m.at > cursor.at) {
                        chunk.extend_from_slice(&bytes[cursor.at..m.at]);
                        (cursor.at, cursor.time, cursor.line) = (m.at, m.time, m.line);
                        (out.time, out.line) = (m.time.saturating_add(later), m.line);
                    }
                }
                let start = cursor.at;
                let Some(e) = cursor.next(view) else {
                    // Late requests after the chunk's last (of its time)
                    // may go after requests of the next chunk too: they
                    // are placed there, or after the last chunk.
                    break;
                };
                let e = Entry {
                    time: Nanos(e.time.0.saturating_add(later)),
                    ..e
                };
                if next_late.is_some_and(|t| t <= e.time.0) {
                    while let Some(l) = late.next_if(|l| before(l, &e)) {
                        pack(&mut chunk, l, out.time, out.line);
                        (out.time, out.line, follows) = (l.time.0, l.line, false);
                        into -= 1;
                    }
                }
                match follows {
                    true => chunk.extend_from_slice(&bytes[start..cursor.at]),
                    false => pack(&mut chunk, &e, out.time, out.line),
                }
                (out.time, out.line, follows) = (e.time.0, e.line, true);
                if into == 0 {
                    // The rest of the chunk, as it is.
                    chunk.extend_from_slice(&bytes[cursor.at..]);
                    (out.time, out.line) = (end, end_line);
                    break;
                }
            }
            // The room left for late lines is given back.
            chunk.shrink_to_fit();
            out.chunks.push(chunk);
        }
        let tail: Vec<&Entry> = late.collect();
        let mut merged = RecordingBuilder {
            requests: out,
            rows: rows + (placed - tail.len()) as u64,
            // (No request pushed: none to move.)
            last: Nanos(if rows == 0 {
                0
            } else {
                last.0.saturating_add(later)
            }),
            marks: None,
        };
        for l in tail {
            merged.push(l);
        }
        merged
    }

    /// The recording, with the names of `keys`.
    pub fn finish(mut self, keys: RecordedKeys, split: Option<Split>, counts: Counts) -> Recording {
        if let Some(c) = self.requests.chunks.last_mut() {
            c.shrink_to_fit();
        }
        let names = keys.names;
        Recording {
            requests: self.requests,
            rows: self.rows,
            last: self.last,
            start: None,
            names,
            split,
            counts,
            interned_new: AtomicBool::new(false),
            kept: OnceLock::new(),
        }
    }
}

/// The clients and addresses a recorded source names, each with its id
/// in the recording (in order of first appearance), found by its bytes
/// (see [`IdTable`]); a source whose address is its client (no address
/// field) finds both ids at once.
///
/// An address's id is kept in the slot of the client of the same name,
/// if there was one when the address was first named, else in the
/// addresses' own table (and in that client's slot too once a request
/// names them as one). So a source whose address is its client keeps one
/// table, not two of the same keys; a look-up reads the addresses' table
/// first, then the client's slot.
#[derive(Debug, Default)]
pub struct RecordedKeys {
    /// A client's id, and the id of the address of the same name where
    /// its slot keeps it (else [`NONE`]).
    clients: IdTable,
    /// The addresses named before a client of the same name was.
    ips: IdTable,
    names: Names,
}

/// No id yet.
const NONE: u32 = u32::MAX;

impl RecordedKeys {
    /// A hint that `client` and `ip` (the same slice when the address
    /// field is the client field) are interned soon: the client's
    /// [`RecordedKeys::hash`].
    pub fn prefetch(&self, client: &[u8], ip: &[u8]) -> u64 {
        let hash = self.clients.hash(client);
        self.clients.prefetch(hash);
        if !std::ptr::eq(ip, client) {
            self.ips.prefetch(self.ips.hash(ip));
        }
        hash
    }

    /// A client's hash, as its look-up takes it.
    pub fn hash(&self, client: &[u8]) -> u64 {
        self.clients.hash(client)
    }

    /// The ids of `client` and `ip`, new ones (client first) the first
    /// time the source names them; an error if one is new and not UTF-8.
    pub fn intern(&mut self, client: &[u8], ip: &[u8]) -> Result<(u32, u32), std::str::Utf8Error> {
        self.intern_hashed(client, ip, self.hash(client))
    }

    /// [`RecordedKeys::intern`], given the client's [`RecordedKeys::hash`].
    pub fn intern_hashed(
        &mut self,
        client: &[u8],
        ip: &[u8],
        hash_client: u64,
    ) -> Result<(u32, u32), std::str::Utf8Error> {
        debug_assert_eq!(hash_client, self.hash(client));
        // The address field is the client field (not a field of its own).
        let same = std::ptr::eq(ip, client);
        let slot = self.client_slot(hash_client, client);
        let known = slot.map(|i| self.clients.get(i));
        if let Some(ids) = known.filter(|ids| same && ids.1 != NONE) {
            return Ok(ids);
        }
        let hash_ip = match same {
            true => hash_client,
            false => self.ips.hash(ip),
        };
        let known_ip = self.find_ip(hash_ip, ip).ok();
        // Both are checked before either is added.
        let client_text = match known {
            Some(_) => "",
            None => std::str::from_utf8(client)?,
        };
        let ip_text = match known_ip {
            Some(_) => "",
            None => std::str::from_utf8(ip)?,
        };
        let (ids, slot) = match slot {
            Some(i) => (self.clients.get(i), i),
            None => {
                let id = self.names.add(false, client_text);
                (
                    (id, NONE),
                    self.clients.insert(hash_client, client, id, NONE),
                )
            }
        };
        let ip_id = match known_ip {
            Some(id) => id,
            None => {
                let id = self.names.add(true, ip_text);
                // The slot of the client of the address's name: the
                // client's own when they are one field, else found again
                // (the client's insert may have moved it, or be it).
                let at = match same {
                    true => Some(slot),
                    false => self.client_slot(hash_ip, ip),
                };
                self.keep_ip(hash_ip, ip, id, at);
                id
            }
        };
        if same {
            // Also where the address was in the addresses' table: the
            // next request finds both ids in the client's slot.
            self.clients.set_value(slot, ip_id);
        }
        Ok((ids.0, ip_id))
    }

    /// The id of address `ip` (its `hash`, which the clients' table
    /// hashes it to as well); for a new address, `Err` with the slot of
    /// the client of its name if there is one (whose second word is
    /// [`NONE`] then).
    fn find_ip(&self, hash: u64, ip: &[u8]) -> Result<u32, Option<usize>> {
        let names = &self.names;
        if let Some(i) = self.ips.find(hash, ip, |id| names.ips.get_bytes(id)) {
            return Ok(self.ips.get(i).0);
        }
        match self
            .client_slot(hash, ip)
            .map(|i| (i, self.clients.get(i).1))
        {
            Some((i, NONE)) => Err(Some(i)),
            Some((_, id)) => Ok(id),
            None => Err(None),
        }
    }

    /// The clients' table's slot of client `name` (its `hash`), if it
    /// has one.
    #[inline(always)]
    fn client_slot(&self, hash: u64, name: &[u8]) -> Option<usize> {
        let names = &self.names;
        self.clients
            .find(hash, name, |id| names.clients.get_bytes(id))
    }

    /// Keeps new address `ip`'s `id` in `client`'s slot (that of the
    /// client of its name) if it has one, else in the addresses' table.
    fn keep_ip(&mut self, hash: u64, ip: &[u8], id: u32, client: Option<usize>) {
        match client {
            Some(i) => self.clients.set_value(i, id),
            None => {
                self.ips.insert(hash, ip, id, 0);
            }
        }
    }

    /// The id of client `name`, whose [`RecordedKeys::hash`] is `hash`: a
    /// new one the first time. (The client's address is not looked at.)
    pub fn intern_client(&mut self, name: &str, hash: u64) -> u32 {
        let bytes = name.as_bytes();
        match self.client_slot(hash, bytes) {
            Some(i) => self.clients.get(i).0,
            None => {
                let id = self.names.add(false, name);
                self.clients.insert(hash, bytes, id, NONE);
                id
            }
        }
    }

    /// The id of address `name`, whose [`RecordedKeys::hash`] is `hash`
    /// (the addresses' table hashes as the clients' does, which
    /// [`RecordedKeys::intern_hashed`] relies on too): a new one the first
    /// time.
    pub fn intern_ip(&mut self, name: &str, hash: u64) -> u32 {
        match self.find_ip(hash, name.as_bytes()) {
            Ok(id) => id,
            Err(client) => {
                let id = self.names.add(true, name);
                self.keep_ip(hash, name.as_bytes(), id, client);
                id
            }
        }
    }

    /// Asks for the slot where a client (`ip` false) or an address of
    /// `hash` is looked up first.
    pub fn prefetch_hashed(&self, ip: bool, hash: u64) {
        match ip {
            true => self.ips.prefetch(hash),
            false => self.clients.prefetch(hash),
        }
    }

    /// How many clients and addresses it names.
    pub fn counts(&self) -> (u32, u32) {
        let n = |l: &NameList| l.len() as u32;
        (n(&self.names.clients), n(&self.names.ips))
    }

    /// Client `id`'s name.
    pub fn client(&self, id: u32) -> &str {
        self.names.clients.get(id as usize)
    }

    /// Address `id`'s name.
    pub fn ip(&self, id: u32) -> &str {
        self.names.ips.get(id as usize)
    }
}

/// Names end to end in one string.
#[derive(Debug, Default)]
pub(crate) struct NameList {
    text: String,
    ends: Vec<usize>,
}

impl NameList {
    /// Adds a name; its index.
    pub(crate) fn push(&mut self, name: &str) -> u32 {
        self.text.push_str(name);
        self.ends.push(self.text.len());
        (self.ends.len() - 1) as u32
    }

    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Its names, each named once (as pushed, after a look-up).
    pub(crate) fn distinct(&self) -> DistinctNames<'_> {
        DistinctNames {
            text: &self.text,
            ends: &self.ends,
        }
    }

    /// Where name `i` lies in `text`.
    fn span(&self, i: usize) -> std::ops::Range<usize> {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        start..self.ends[i]
    }

    pub(crate) fn get(&self, i: usize) -> &str {
        &self.text[self.span(i)]
    }

    /// Name `id`'s bytes (no look at character boundaries: a key's
    /// look-up compares them once a line).
    fn get_bytes(&self, id: u32) -> &[u8] {
        &self.text.as_bytes()[self.span(id as usize)]
    }

    fn bytes(&self) -> usize {
        self.text.capacity() + self.ends.capacity() * size_of::<usize>()
    }
}

/// A recording's clients and addresses, each in the order they came in.
#[derive(Debug, Default)]
struct Names {
    clients: NameList,
    ips: NameList,
}

impl Names {
    /// Adds a name; its id among the clients (or addresses).
    fn add(&mut self, ip: bool, name: &str) -> u32 {
        match ip {
            true => self.ips.push(name),
            false => self.clients.push(name),
        }
    }
}

/// The packed requests, in chunks (so that a long file grows without
/// copying what was read).
#[derive(Debug, Default)]
struct Packed {
    chunks: Vec<Vec<u8>>,
    /// The time and line of the request before each chunk's first.
    starts: Vec<(u64, u64)>,
    time: u64,
    line: u64,
}

const CHUNK: usize = 1 << 20;
/// The most bytes one request takes: a flags byte and seven varints.
const MOST: usize = 1 + 7 * 10;

/// Flags: the verdict's code in the two low bits, then what follows.
const IP: u8 = 1 << 2;
const COST: u8 = 1 << 3;
const PART: u8 = 1 << 4;
const DELAY: u8 = 1 << 5;
const LINE: u8 = 1 << 6;
/// A request of the usual kind — its address its client, cost 1, no part,
/// no delay — whose time step and client fit 24 bits each and whose line
/// step (with [`LINE`]) fits 16: they follow in fixed fields, 2 or 3 bytes
/// each (the step 1 or 2), which the flags no such request uses give
/// ([`WIDE_TIME`], [`WIDE_CLIENT`], [`WIDE_STEP`]): at most eight bytes,
/// one word to read (see [`Cursor::next`]). A little more than varints
/// take (a step or client below 128 is one byte as a varint; 5.78 bytes
/// a request of the nginx bench log against 5.17), for decoding and
/// packing that do not branch on each number's length.
const FIXED: u8 = 1 << 7;
const WIDE_TIME: u8 = IP;
const WIDE_CLIENT: u8 = COST;
const WIDE_STEP: u8 = PART;

/// The widths in bytes of a [`FIXED`] request's time step, client and
/// line step, by its flags.
const fn widths(flags: u8) -> (u32, u32, u32) {
    const fn bit(flags: u8, f: u8) -> u32 {
        (flags & f != 0) as u32
    }
    (
        2 + bit(flags, WIDE_TIME),
        2 + bit(flags, WIDE_CLIENT),
        bit(flags, LINE) * (1 + bit(flags, WIDE_STEP)),
    )
}

/// The low `bytes` bytes of a word set (`bytes` at most 7).
const fn low(bytes: u32) -> u64 {
    (1 << (8 * bytes)) - 1
}

/// Where a [`FIXED`] request's fields lie in the word after its flags:
/// [`widths`] worked out once for each flags, so that a request is read
/// with a look-up instead of its widths' sums and shifts. (Packing works
/// them out: with the look-up there too, loading the nginx bench log took
/// 1.018 of the time before against 1.004 without, benches/phase_times.py,
/// 120 rounds, while the reading gained the same.)
#[derive(Debug, Clone, Copy)]
struct Layout {
    /// The bytes the fields take.
    len: u32,
    /// The client's first bit (the time step's is 0).
    client_at: u32,
    /// The line step's first bit.
    step_at: u32,
    /// The time step's mask.
    time_mask: u64,
    /// The client's mask, shifted down to bit 0.
    client_mask: u64,
    /// The line step's mask, shifted down to bit 0 (0 without a step).
    step_mask: u64,
    /// How far up the line step goes for its top bit to be the word's
    /// (0 without a step): its sign, extended back down.
    sign: u32,
}

impl Layout {
    /// The layout of a request with `flags` ([`FIXED`] set).
    #[inline(always)]
    fn of(flags: u8) -> Layout {
        LAYOUTS[usize::from(flags >> 2 & 31)]
    }

    const fn new(flags: u8) -> Layout {
        let (tw, cw, sw) = widths(flags);
        Layout {
            len: tw + cw + sw,
            client_at: 8 * tw,
            step_at: 8 * (tw + cw),
            time_mask: low(tw),
            client_mask: low(cw),
            step_mask: low(sw),
            sign: (64 - 8 * sw) & 63,
        }
    }
}

/// [`Layout::new`] of each flags with [`FIXED`] set, by the five bits
/// after the verdict's ([`WIDE_TIME`], [`WIDE_CLIENT`], [`WIDE_STEP`],
/// [`DELAY`], which a fixed request does not use, and [`LINE`]).
static LAYOUTS: [Layout; 32] = {
    let mut t = [Layout::new(FIXED); 32];
    let mut i = 0;
    while i < 32 {
        t[i] = Layout::new(FIXED | (i as u8) << 2);
        i += 1;
    }
    t
};

fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The varint at `b[*at..]`, which `*at` moves past. One of up to eight
/// bytes (a request's time step and client nearly always) is read from
/// one word without a loop: its last byte is the first whose high bit is
/// clear, and its 7-bit groups are drawn together in three steps.
#[inline(always)]
fn take(b: &[u8], at: &mut usize) -> u64 {
    if let Some(w) = word::at(b, *at) {
        let ends = !w & word::HIGHS;
        if ends != 0 {
            let bits = ends.trailing_zeros() + 1;
            *at += (bits / 8) as usize;
            let x = w & (u64::MAX >> (64 - bits)) & 0x7f7f_7f7f_7f7f_7f7f;
            let x = (x & 0x007f_007f_007f_007f) | ((x >> 1) & 0x3f80_3f80_3f80_3f80);
            let x = (x & 0x0000_3fff_0000_3fff) | ((x >> 2) & 0x0fff_c000_0fff_c000);
            return (x & 0x0fff_ffff) | ((x >> 4) & 0x00ff_ffff_f000_0000);
        }
    }
    take_bytes(b, at)
}

/// [`take`] a byte at a time: a varint of more than eight bytes, or one
/// at the end of its chunk.
fn take_bytes(b: &[u8], at: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let byte = b[*at];
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return v;
        }
        shift += 7;
    }
}

/// Packs `e` onto `out`, after a request at `time` on `line`.
fn pack(out: &mut Vec<u8>, e: &Entry, time: u64, line: u64) {
    // The line after the previous one's, or a zigzag step from it.
    let step = e.line.wrapping_sub(line).wrapping_sub(1) as i64;
    let dt = e.time.0 - time;
    let usual = e.ip == e.client && e.cost == 1 && e.part == 0 && e.delay == 0;
    if usual && dt < 1 << 24 && e.client < 1 << 24 && step == i64::from(step as i16) {
        let mut flags = FIXED | e.verdict & 3;
        let wide = |v: u64, f: u8| if v >> 16 != 0 { f } else { 0 };
        flags |= wide(dt, WIDE_TIME) | wide(e.client.into(), WIDE_CLIENT);
        if step != 0 {
            flags |= LINE
                | if step == i64::from(step as i8) {
                    0
                } else {
                    WIDE_STEP
                };
        }
        let (tw, cw, sw) = widths(flags);
        let w = dt | u64::from(e.client) << (8 * tw) | (step as u64 & low(sw)) << (8 * (tw + cw));
        // Eight bytes written, the fields' kept: no call to copy a few.
        out.push(flags);
        let end = out.len() + (tw + cw + sw) as usize;
        out.extend_from_slice(&w.to_le_bytes());
        out.truncate(end);
        return;
    }
    let at = out.len();
    out.push(0);
    let mut flags = e.verdict & 3;
    put(out, e.time.0 - time);
    put(out, e.client.into());
    if e.ip != e.client {
        flags |= IP;
        put(out, e.ip.into());
    }
    if e.cost != 1 {
        flags |= COST;
        put(out, e.cost);
    }
    if e.part != 0 {
        flags |= PART;
        put(out, e.part.into());
    }
    if e.delay != 0 {
        flags |= DELAY;
        put(out, e.delay);
    }
    if step != 0 {
        flags |= LINE;
        put(out, ((step << 1) ^ (step >> 63)) as u64);
    }
    out[at] = flags;
}

impl Packed {
    fn push(&mut self, e: &Entry) {
        let (time, line) = (self.time, self.line);
        pack(self.chunk(), e, time, line);
        (self.time, self.line) = (e.time.0, e.line);
    }

    /// The next chunk with room for a request.
    fn chunk(&mut self) -> &mut Vec<u8> {
        if self.chunks.last().is_none_or(|c| c.len() + MOST > CHUNK) {
            self.chunks.push(Vec::with_capacity(CHUNK));
            self.starts.push((self.time, self.line));
        }
        self.chunks.last_mut().expect("a chunk was pushed")
    }

    fn bytes(&self) -> usize {
        let starts = self.starts.capacity() * size_of::<(u64, u64)>();
        self.chunks.iter().map(Vec::capacity).sum::<usize>() + starts
    }
}

/// A place in packed requests, and the time and line of the request
/// before it: what decoding the next one needs.
#[derive(Debug, Default, Clone, Copy)]
struct Cursor {
    chunk: usize,
    at: usize,
    time: u64,
    line: u64,
}

impl Cursor {
    /// The request at the cursor, which moves past it.
    #[inline(always)]
    fn next(&mut self, chunks: &[Vec<u8>]) -> Option<Entry> {
        let mut b = chunks.get(self.chunk)?;
        if self.at == b.len() {
            self.chunk += 1;
            self.at = 0;
            b = chunks.get(self.chunk)?;
        }
        let at = &mut self.at;
        let flags = b[*at];
        *at += 1;
        if flags & FIXED != 0 {
            let l = Layout::of(flags);
            let n = l.len as usize;
            let w = match word::at(b, *at) {
                Some(w) => w,
                None => {
                    // Near the chunk's end: its bytes, zeros after.
                    let mut w = [0; 8];
                    w[..n].copy_from_slice(&b[*at..*at + n]);
                    u64::from_le_bytes(w)
                }
            };
            *at += n;
            self.time += w & l.time_mask;
            let client = (w >> l.client_at & l.client_mask) as u32;
            // The step's bytes, their sign extended (none: 0).
            let step = (((w >> l.step_at & l.step_mask) << l.sign) as i64 >> l.sign) as u64;
            self.line = self.line.wrapping_add(1).wrapping_add(step);
            return Some(Entry {
                time: Nanos(self.time),
                client,
                ip: client,
                part: 0,
                cost: 1,
                verdict: flags & 3,
                delay: 0,
                line: self.line,
            });
        }
        self.time += take(b, at);
        let client = take(b, at) as u32;
        let has = |f: u8| flags & f != 0;
        let ip = if has(IP) { take(b, at) as u32 } else { client };
        let cost = if has(COST) { take(b, at) } else { 1 };
        let part = if has(PART) { take(b, at) as u32 } else { 0 };
        let delay = if has(DELAY) { take(b, at) } else { 0 };
        let step = if has(LINE) {
            let z = take(b, at);
            ((z >> 1) as i64 ^ -((z & 1) as i64)) as u64
        } else {
            0
        };
        self.line = self.line.wrapping_add(1).wrapping_add(step);
        Some(Entry {
            time: Nanos(self.time),
            client,
            ip,
            part,
            cost,
            verdict: flags & 3,
            delay,
            line: self.line,
        })
    }
}

/// A recording's requests in replay order (see [`Recording::replay`]).
#[derive(Debug)]
pub struct Replay {
    recording: Arc<Recording>,
    cursor: Cursor,
}

impl Iterator for Replay {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        self.cursor.next(&self.recording.requests.chunks)
    }
}

/// Recordings kept for the rest of the process, by what identifies them
/// (`K`: a file's identity and the options of reading it).
pub(crate) struct Cache<K> {
    entries: Mutex<Vec<(K, Arc<Slot>)>>,
}

/// One recording, once read; locked while it is read, so that two threads
/// wanting it read it once.
type Slot = Mutex<Option<Arc<Recording>>>;

/// A lock, whether or not a thread panicked holding it (what it guards
/// is whole: a recording is stored only once read).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl<K: PartialEq> Cache<K> {
    pub(crate) const fn new() -> Cache<K> {
        Cache {
            entries: Mutex::new(Vec::new()),
        }
    }

    /// The recording of `key`, read by `read` the first time (a failure
    /// is not kept: the next caller reads again); `None` for a key reads
    /// without keeping it.
    pub(crate) fn get<E>(
        &self,
        key: Option<K>,
        read: impl FnOnce() -> Result<Recording, E>,
    ) -> Result<Arc<Recording>, E> {
        let Some(key) = key else {
            return read().map(Arc::new);
        };
        let slot = {
            let mut entries = lock(&self.entries);
            match entries.iter().find(|(k, _)| *k == key) {
                Some((_, slot)) => Arc::clone(slot),
                None => {
                    let slot = Arc::new(Slot::default());
                    entries.push((key, Arc::clone(&slot)));
                    slot
                }
            }
        };
        let mut slot = lock(&slot);
        if let Some(r) = &*slot {
            return Ok(Arc::clone(r));
        }
        let r = Arc::new(read()?);
        *slot = Some(Arc::clone(&r));
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_come_back_as_they_were_packed() {
        let mut b = RecordingBuilder::default();
        let mut x = 1u64;
        let mut entries = Vec::new();
        let mut time = 0u64;
        for i in 0..300_000u64 {
            crate::lcg(&mut x);
            let r = x >> 20;
            time += r % 3 * (r % 1_000_000_007);
            let e = Entry {
                time: Nanos(time),
                client: (r % 20_000) as u32,
                ip: if r % 5 == 0 {
                    (r % 77) as u32
                } else {
                    (r % 20_000) as u32
                },
                part: (r % 7 / 5) as u32,
                cost: if r % 11 == 0 { u64::MAX } else { 1 },
                verdict: (r % 4) as u8,
                delay: if r % 4 == 2 { r % 250_000_000 } else { 0 },
                line: if r % 13 == 0 { i / 2 } else { i + 1 },
            };
            b.push(&e);
            entries.push(e);
        }
        let rec = Arc::new(b.finish(RecordedKeys::default(), None, Counts::default()));
        assert_eq!(rec.rows, entries.len() as u64);
        assert!(rec.requests.chunks.len() > 1);
        assert!(rec.replay().eq(entries.iter().copied()));
    }

    // The usual request packed in its fixed fields, at the edges of each
    // width (time steps and clients of 16 and 24 bits, line steps of 8
    // and 16) and just past them, comes back as it was (at the end of its
    // bytes: the next test).
    #[test]
    fn the_usual_requests_come_back_at_the_edges_of_their_fixed_form() {
        let mut b = RecordingBuilder::default();
        let (mut x, mut time, mut line) = (5u64, 0u64, 0u64);
        let mut entries = Vec::new();
        let steps: [i64; 13] = [
            0, 1, -1, -2, 126, 127, -128, -129, 32_766, 32_767, -32_768, -32_769, 40_000,
        ];
        for i in 0..400_000u64 {
            crate::lcg(&mut x);
            let r = x >> 16;
            time += [
                0,
                1,
                r % 100_000,
                (1 << 16) - 1,
                1 << 16,
                (1 << 24) - 1,
                1 << 24,
            ][(r % 7) as usize];
            let step = steps[(r >> 8) as usize % steps.len()];
            line = (line as i64 + 1 + step).max(1) as u64;
            let clients = [
                0,
                r % 20_000,
                (1 << 16) - 1,
                1 << 16,
                (1 << 24) - 1,
                1 << 24,
            ];
            let client = clients[(r >> 16) as usize % clients.len()] as u32;
            let e = Entry {
                time: Nanos(time),
                client,
                ip: if i % 97 == 0 { 3 } else { client },
                part: 0,
                cost: if i % 89 == 0 { 2 } else { 1 },
                verdict: (r >> 24) as u8 % 4,
                delay: 0,
                line,
            };
            b.push(&e);
            entries.push(e);
        }
        let rec = Arc::new(b.finish(RecordedKeys::default(), None, Counts::default()));
        assert!(rec.requests.chunks.len() > 1);
        assert!(rec.replay().eq(entries.iter().copied()));
        // Most of them fixed (the rest past an edge, or not usual).
        let mut cursor = Cursor::default();
        let mut fixed = 0;
        while let Some(chunk) = rec.requests.chunks.get(cursor.chunk) {
            if cursor.at == chunk.len() {
                (cursor.chunk, cursor.at) = (cursor.chunk + 1, 0);
                continue;
            }
            fixed += usize::from(chunk[cursor.at] & FIXED != 0);
            cursor.next(&rec.requests.chunks);
        }
        assert!(
            fixed > entries.len() / 3,
            "{fixed} of {} fixed",
            entries.len()
        );
    }

    // The layout looked up for each flags of a fixed request is the one
    // its widths give, whatever the bits a fixed request does not use.
    #[test]
    fn a_fixed_request_is_laid_out_by_its_widths() {
        for flags in (0..=u8::MAX).filter(|f| f & FIXED != 0) {
            let (tw, cw, sw) = widths(flags);
            let l = Layout::of(flags);
            let masks = (l.time_mask, l.client_mask, l.step_mask);
            assert_eq!(l.len, tw + cw + sw, "{flags:#b}");
            assert_eq!(
                (l.client_at, l.step_at),
                (8 * tw, 8 * (tw + cw)),
                "{flags:#b}"
            );
            assert_eq!(masks, (low(tw), low(cw), low(sw)), "{flags:#b}");
            // A step's top bit goes to the word's (none: no shift).
            let sign = if sw == 0 { 0 } else { 64 - 8 * sw };
            assert_eq!(l.sign, sign, "{flags:#b}");
        }
    }

    // A fixed request alone, its bytes the last there are (fewer than a
    // word after its flags), in every width of each field.
    #[test]
    fn a_fixed_request_at_the_end_of_its_bytes_reads_as_packed() {
        for (dt, client, step) in [
            (5u64, 7u32, 0i64),
            (1 << 16, 7, 0),
            (5, 1 << 16, 0),
            (5, 7, -3),
            (5, 7, 300),
            ((1 << 24) - 1, (1 << 24) - 1, -32_768),
        ] {
            let (time, line) = (1_000u64, 10u64);
            let e = Entry {
                time: Nanos(time + dt),
                client,
                ip: client,
                cost: 1,
                verdict: 3,
                line: (line as i64 + 1 + step) as u64,
                ..Entry::default()
            };
            let mut out = Vec::new();
            pack(&mut out, &e, time, line);
            assert!(out[0] & FIXED != 0 && out.len() <= 9, "{out:?}");
            let mut cursor = Cursor {
                time,
                line,
                ..Cursor::default()
            };
            assert_eq!(cursor.next(&[out.clone()]), Some(e), "{out:?}");
            assert_eq!(cursor.at, out.len());
        }
    }

    // A varint of every length, at every place near the end of its bytes,
    // reads the same a word at a time as a byte at a time.
    #[test]
    fn a_varint_reads_the_same_a_word_at_a_time() {
        let mut x = 7u64;
        for len in 1..=10u32 {
            for _ in 0..2_000 {
                crate::lcg(&mut x);
                let v = match len {
                    1 => x % 0x80,
                    10 => x | 1 << 63,
                    _ => (x >> (64 - 7 * len)) | 1 << (7 * len - 7),
                };
                let mut out = vec![0xff; (x % 3) as usize];
                put(&mut out, v);
                let end = out.len();
                out.extend(std::iter::repeat_n(0xffu8, (x >> 40) as usize % 12));
                for cut in [end, out.len()] {
                    let b = &out[..cut];
                    let (mut fast, mut slow) = (end - len as usize, end - len as usize);
                    assert_eq!(take(b, &mut fast), v, "{v:#x} of {len} bytes");
                    assert_eq!(take_bytes(b, &mut slow), v);
                    assert_eq!((fast, slow), (end, end));
                }
            }
        }
    }

    // Merging late requests into a recording, its requests moved later,
    // gives what pushing them all in order gives: late requests alone, in
    // runs, at equal times across chunks, before and after every request.
    #[test]
    fn a_merge_gives_what_pushing_all_in_order_gives() {
        let mut x = 5u64;
        let mut time = 0u64;
        let all: Vec<Entry> = (0..500_000u64)
            .map(|i| {
                crate::lcg(&mut x);
                let r = x >> 20;
                // Long runs of equal times, across chunks' ends.
                let equal = (100_000..300_000).contains(&i) || i >= 400_000;
                time += if equal { 0 } else { r % 3 * (r % 1_000_003) };
                Entry {
                    time: Nanos(time),
                    client: (r % 900) as u32,
                    ip: (r % 1000) as u32,
                    cost: 1 + r % 2,
                    verdict: (r % 4) as u8,
                    line: i * 3 + r % 3,
                    ..Entry::default()
                }
            })
            .collect();
        type IsLate = fn(usize, u64) -> bool;
        let cases: [(&str, IsLate); 7] = [
            ("every 7th and the first", |i, _| i % 7 == 0),
            ("every 7th after the first", |i, _| i % 7 == 0 && i > 0),
            ("a few", |i, _| i % 99_991 == 5),
            ("every other", |i, _| i % 2 == 1),
            ("the last ones", |i, _| i >= 499_990),
            ("none", |_, _| false),
            ("at random", |_, r| r % 1000 < 3),
        ];
        // Cases whose recording has equal times across a chunk's end.
        let mut crossed = 0;
        for (case, is_late) in cases {
            let mut y = 9u64;
            let late_of: Vec<bool> = (0..all.len())
                .map(|i| {
                    crate::lcg(&mut y);
                    is_late(i, y >> 33)
                })
                .collect();
            let late: Vec<Entry> = (0..all.len())
                .filter(|&i| late_of[i])
                .map(|i| all[i])
                .collect();
            let pushed = (0..all.len()).filter(|&i| !late_of[i]).map(|i| all[i]);
            let later = pushed.clone().next().map_or(0, |e| e.time.0);
            let mut b = RecordingBuilder::marked();
            for e in pushed {
                b.push(&Entry {
                    time: Nanos(e.time.0 - later),
                    ..e
                });
            }
            let p = &b.requests;
            let across = (1..p.chunks.len()).any(|k| {
                let (time, line) = p.starts[k];
                let mut c = Cursor {
                    chunk: k,
                    at: 0,
                    time,
                    line,
                };
                c.next(&p.chunks).is_some_and(|e| e.time.0 == time)
            });
            assert!(p.chunks.len() > 1, "{case}");
            crossed += u32::from(across);
            let merged = b.merge(later, &late, |l, e| (l.time, l.line) < (e.time, e.line));
            assert_eq!(
                (merged.rows, merged.last),
                (all.len() as u64, all[all.len() - 1].time),
                "{case}"
            );
            let rec = Arc::new(merged.finish(RecordedKeys::default(), None, Counts::default()));
            assert!(rec.replay().eq(all.iter().copied()), "{case}");
        }
        assert!(crossed >= 4, "{crossed}");
    }

    #[test]
    fn names_go_into_a_population_in_the_order_the_file_named_them() {
        let mut keys = RecordedKeys::default();
        let line = b"alice 10.0.0.1 bob";
        let (alice, addr, bob) = (&line[..5], &line[6..14], &line[15..]);
        assert_eq!(keys.intern(alice, addr), Ok((0, 0)));
        assert_eq!(keys.intern(bob, bob), Ok((1, 1)));
        assert_eq!(keys.intern(alice, alice), Ok((0, 2)));
        assert_eq!(keys.intern(bob, bob), Ok((1, 1)));
        assert!(keys.intern(b"\xff", addr).is_err());
        let rec = RecordingBuilder::default().finish(keys, None, Counts::default());
        let mut population = Population::default();
        population.ip("alice");
        let ids = rec.ids(&mut population);
        // An address is another id in the population: looked up.
        assert!(!ids.same);
        let e = |client, ip| Entry {
            client,
            ip,
            ..Entry::default()
        };
        assert_eq!(ids.of(&e(0, 0)), (0, 1));
        assert_eq!(ids.of(&e(1, 1)), (1, 2));
        assert_eq!(ids.of(&e(0, 2)), (0, 0));
        assert_eq!(population.ip_name(2), "bob");
        // Into new populations: the same ids and names each time, the third
        // from the population the second kept; a population that names
        // something already is interned into, as before.
        let mut firsts = Vec::new();
        for _ in 0..3 {
            let mut p = Population::default();
            let ids = rec.ids(&mut p);
            // Every id the recording's own: nothing to look up.
            assert!(ids.same);
            let names: Vec<String> = (0..p.ips())
                .map(|i| p.ip_name(i as u32).to_string())
                .collect();
            firsts.push((ids.of(&e(1, 2)), p.clients(), names));
        }
        assert_eq!(
            firsts[0],
            (
                (1, 2),
                2,
                vec!["10.0.0.1".into(), "bob".into(), "alice".into()]
            )
        );
        assert!(firsts.iter().all(|f| *f == firsts[0]));
        assert!(rec.kept.get().is_some());
        let mut named = Population::default();
        named.client("bob");
        let ids = rec.ids(&mut named);
        assert!(!ids.same);
        assert_eq!(ids.of(&e(0, 0)), (1, 0));
        assert!(!named.is_new() && Population::default().is_new());
    }

    #[test]
    fn a_cache_reads_a_key_once_and_keeps_no_failure() {
        let cache: Cache<(u32, &str)> = Cache::new();
        let reads = std::cell::Cell::new(0);
        let read = |fail: bool| {
            reads.set(reads.get() + 1);
            match fail {
                true => Err("unreadable"),
                false => Ok(RecordingBuilder::default().finish(
                    RecordedKeys::default(),
                    None,
                    Counts::default(),
                )),
            }
        };
        assert_eq!(
            cache.get(Some((1, "a")), || read(true)).unwrap_err(),
            "unreadable"
        );
        let first = cache.get(Some((1, "a")), || read(false)).unwrap();
        let again = cache.get(Some((1, "a")), || read(false)).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(reads.get(), 2);
        let other = cache.get(Some((1, "b")), || read(false)).unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
        cache.get(None, || read(false)).unwrap();
        cache.get(None, || read(false)).unwrap();
        assert_eq!(reads.get(), 5);
    }

    /// A source whose address is its client fills one table, on a
    /// parser's keys (a request at a time) and on the log's (the merge's
    /// clients, then their addresses), and an address of another name
    /// goes to the addresses' table.
    #[test]
    fn an_address_named_as_its_client_takes_no_table_of_its_own() {
        let names: Vec<String> = (0..1000).map(|i| format!("k{i}")).collect();
        let (mut parser, mut log) = (RecordedKeys::default(), RecordedKeys::default());
        for (i, n) in names.iter().enumerate() {
            let n = n.as_bytes();
            assert_eq!(parser.intern(n, n), Ok((i as u32, i as u32)));
        }
        for n in &names {
            log.intern_client(n, log.hash(n.as_bytes()));
        }
        for (i, n) in names.iter().enumerate() {
            assert_eq!(log.intern_ip(n, log.hash(n.as_bytes())), i as u32);
        }
        assert_eq!((parser.ips.len(), log.ips.len()), (0, 0));
        assert_eq!((parser.clients.len(), log.clients.len()), (1000, 1000));
        assert_eq!(parser.intern(b"k1", b"10.0.0.1"), Ok((1, 1000)));
        assert_eq!(parser.ips.len(), 1);
    }

    /// What interning is: a client's id and an address's id, each new in
    /// order of first appearance, whichever table keeps the address, with
    /// nothing added when a new name is not UTF-8.
    #[derive(Debug, Clone)]
    enum Named {
        /// A request naming a client and an address (the same slice if
        /// `None`: the address field is the client field).
        Line(usize, Option<usize>),
        Client(usize),
        Ip(usize),
    }

    /// How many names a test of [`Named`] draws from: enough for the
    /// tables to grow and move their slots.
    const MANY: usize = 150;

    fn named() -> impl proptest::strategy::Strategy<Value = Named> {
        use proptest::prelude::*;
        let valid = (0..MANY).prop_filter("UTF-8", |&i| i != BAD);
        prop_oneof![
            6 => (0..MANY, proptest::option::of(0..MANY)).prop_map(|(c, i)| Named::Line(c, i)),
            1 => valid.clone().prop_map(Named::Client),
            1 => valid.prop_map(Named::Ip),
        ]
    }

    /// Short, long (kept outside the slot), not UTF-8, and then more.
    fn name(i: usize) -> Vec<u8> {
        let some: [&[u8]; 6] = [
            b"a",
            b"10.0.0.1",
            b"a-name-longer-than-a-slot-holds",
            b"",
            b"\xff",
            b"another-name-longer-than-a-slot",
        ];
        match some.get(i) {
            Some(n) => n.to_vec(),
            None => format!("k{i}").into_bytes(),
        }
    }

    /// The name that is not UTF-8.
    const BAD: usize = 4;

    proptest::proptest! {
        #[test]
        fn interning_gives_ids_in_order_of_first_appearance(
            ops in proptest::collection::vec(named(), 1..400)
        ) {
            use std::collections::HashMap;
            let mut keys = RecordedKeys::default();
            let (mut clients, mut ips) = (HashMap::new(), HashMap::new());
            for op in &ops {
                let new = |m: &HashMap<Vec<u8>, u32>, k: &[u8]| !m.contains_key(k);
                let id = |m: &mut HashMap<Vec<u8>, u32>, k: &[u8]| {
                    let n = m.len() as u32;
                    *m.entry(k.to_vec()).or_insert(n)
                };
                match *op {
                    Named::Line(c, i) => {
                        let client = name(c);
                        // Another slice, of the same bytes or not.
                        let other = name(i.unwrap_or(c));
                        let ip = match i {
                            None => &client[..],
                            Some(_) => &other[..],
                        };
                        let bad = |k: &[u8], m: &HashMap<Vec<u8>, u32>| {
                            new(m, k) && std::str::from_utf8(k).is_err()
                        };
                        let got = keys.intern(&client, ip);
                        if bad(&client, &clients) || bad(ip, &ips) {
                            proptest::prop_assert!(got.is_err(), "{op:?}");
                        } else {
                            let want = (id(&mut clients, &client), id(&mut ips, ip));
                            proptest::prop_assert_eq!(got, Ok(want), "{:?}", op);
                        }
                    }
                    Named::Client(c) => {
                        let n = name(c);
                        let got = keys.intern_client(std::str::from_utf8(&n).unwrap(), keys.hash(&n));
                        proptest::prop_assert_eq!(got, id(&mut clients, &n));
                    }
                    Named::Ip(c) => {
                        let n = name(c);
                        let got = keys.intern_ip(std::str::from_utf8(&n).unwrap(), keys.hash(&n));
                        proptest::prop_assert_eq!(got, id(&mut ips, &n));
                    }
                }
            }
            proptest::prop_assert_eq!(keys.counts(), (clients.len() as u32, ips.len() as u32));
            for (name, &id) in &clients {
                proptest::prop_assert_eq!(keys.client(id).as_bytes(), &name[..]);
            }
            for (name, &id) in &ips {
                proptest::prop_assert_eq!(keys.ip(id).as_bytes(), &name[..]);
            }
        }
    }
}
