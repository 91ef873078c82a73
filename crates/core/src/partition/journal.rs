//! A key partition's journal, and the merge of the partitions' journals
//! into the whole run's order (docs/semantics.md §12).
//!
//! What one run's files hold that a partition's cannot give by summing is
//! a matter of order: which of two keys' events at the same nanosecond
//! came first (the decision log's rows, the peak's tie), and how much
//! state all keys held together at each moment (`state_bytes_total_peak`).
//! So each limiter's run in a partition writes, for every event it
//! handles, a record of where the event stands in the whole run's order
//! and what it changed:
//!
//! - a first attempt of the shared arrivals: its push number, the same in
//!   every partition (every partition generates every arrival);
//! - an event the run created (a retry, a store's answer): the arrivals
//!   pushed before it was created, the event that created it and how many
//!   that event had created before it. Events at one nanosecond come in
//!   the order they were created (docs/semantics.md §1), and an event is
//!   created while the run handles its creator, so two partitions' events
//!   created after the same arrivals are in the order of their creators,
//!   whose places in the whole run are known by the time they are
//!   compared (a creator comes first in its own partition);
//! - the decision log rows it wrote, how many events it created;
//! - each change of the bytes a ledger holds: at the event (a key born,
//!   or dying at a decision), or timed (a key or an item expiring then).
//!
//! [`Merger`] reads the N journals of one limiter and yields their events
//! in the whole run's order, summing every ledger's bytes moment by moment
//! as the whole run's ledger does: its peak and its integral.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::wire::{Put, Take};
use crate::error::InputError;
use crate::limiter::Change;

/// Where an event stands in the whole run's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A first attempt of the shared arrivals: its push number.
    Arrival(u64),
    /// An event the run created: the arrival pushes made before it was
    /// created, the event that created it (by its number in this run's
    /// journal; `None`: created before the first event), and how many that
    /// event had created before it.
    Own {
        pushed: u64,
        creator: Option<u64>,
        sub: u32,
    },
}

impl Default for Origin {
    fn default() -> Self {
        Origin::Arrival(0)
    }
}

/// One ledger's change, and whose ledger: a limiter of the scenario (by
/// index) on one instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnitChange {
    pub limiter: u32,
    pub instance: u32,
    pub change: Change,
}

/// One event of a journal, or its closing record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    /// When it was handled; for the closing record, the run's last moment.
    pub t: u64,
    pub origin: Origin,
    /// Decision log rows it wrote.
    pub rows: u64,
    /// Events it created.
    pub created: u32,
    pub changes: Vec<UnitChange>,
    /// The closing record: every change in it is timed (the expiries
    /// after the last event).
    pub end: bool,
}

const OWN: u8 = 1;
const ROWS: u8 = 2;
const CREATED: u8 = 4;
const CHANGES: u8 = 8;
const END: u8 = 16;
const CREATOR: u8 = 32;

/// Where a journal's bytes go (a file, in the binary: the core does no
/// I/O).
pub trait Sink: Send {
    fn put(&mut self, bytes: &[u8]) -> anyhow::Result<()>;
    /// After the last bytes.
    fn finish(&mut self) -> anyhow::Result<()>;
}

/// A journal's bytes, in order (a file, in the binary).
pub trait Source {
    /// Fills `buf` with the next bytes: `false` when the journal ended
    /// before the first of them, an error when it ended among them.
    fn fill(&mut self, buf: &mut [u8]) -> Result<bool, InputError>;
}

/// Writes a journal, record by record (each one its length, then it).
pub struct JournalWriter {
    out: Box<dyn Sink>,
    buf: Put,
    body: Put,
    last_t: u64,
    last_index: u64,
    /// Records written: the next one's number.
    pub n: u64,
    error: Option<anyhow::Error>,
}

impl JournalWriter {
    pub fn new(out: Box<dyn Sink>) -> JournalWriter {
        JournalWriter {
            out,
            buf: Put::default(),
            body: Put::default(),
            last_t: 0,
            last_index: 0,
            n: 0,
            error: None,
        }
    }

    /// Appends `r`.
    pub fn write(&mut self, r: &Record) {
        let b = &mut self.body;
        b.0.clear();
        let own = matches!(r.origin, Origin::Own { .. });
        let creator = matches!(
            r.origin,
            Origin::Own {
                creator: Some(_),
                ..
            }
        );
        let flags = [
            (own, OWN),
            (r.rows > 0, ROWS),
            (r.created > 0, CREATED),
            (!r.changes.is_empty(), CHANGES),
            (r.end, END),
            (creator, CREATOR),
        ]
        .into_iter()
        .filter(|&(on, _)| on)
        .fold(0, |f, (_, bit)| f | bit);
        b.0.push(flags);
        b.i64(r.t.wrapping_sub(self.last_t) as i64);
        self.last_t = r.t;
        match r.origin {
            // Push numbers grow nearly with time: each from the last.
            Origin::Arrival(index) => {
                b.i64(index.wrapping_sub(self.last_index) as i64);
                self.last_index = index;
            }
            Origin::Own {
                pushed,
                creator,
                sub,
            } => {
                b.u64(pushed);
                if let Some(c) = creator {
                    b.u64(self.n - c);
                }
                b.u64(sub.into());
            }
        }
        if r.rows > 0 {
            b.u64(r.rows);
        }
        if r.created > 0 {
            b.u64(r.created.into());
        }
        if !r.changes.is_empty() {
            b.u64(r.changes.len() as u64);
            for c in &r.changes {
                b.u64(c.limiter.into());
                b.u64(c.instance.into());
                b.bool(c.change.timed);
                if c.change.timed {
                    b.i64(c.change.at.wrapping_sub(r.t) as i64);
                }
                b.i64(c.change.bytes[0]);
                b.i64(c.change.bytes[1]);
            }
        }
        self.buf.u64(b.0.len() as u64);
        self.buf.0.extend_from_slice(&b.0);
        self.n += 1;
        if self.buf.0.len() >= 1 << 16 {
            self.flush_buf();
        }
    }

    fn flush_buf(&mut self) {
        if self.error.is_none() {
            if let Err(e) = self.out.put(&self.buf.0) {
                self.error = Some(e);
            }
        }
        self.buf.0.clear();
    }

    /// Writes what is left; the first write error, if any.
    pub fn finish(mut self) -> anyhow::Result<()> {
        self.flush_buf();
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.finish()
    }
}

/// Reads a journal back.
pub struct JournalReader<R> {
    inp: R,
    body: Vec<u8>,
    last_t: u64,
    last_index: u64,
    /// Records read: the next one's number.
    pub n: u64,
    what: String,
}

impl<R: Source> JournalReader<R> {
    /// `what` names it in errors (its path).
    pub fn new(inp: R, what: String) -> JournalReader<R> {
        JournalReader {
            inp,
            body: Vec::new(),
            last_t: 0,
            last_index: 0,
            n: 0,
            what,
        }
    }

    fn damaged(&self) -> InputError {
        InputError::new(format!(
            "{}: damaged or cut short at record {}; run the partition again",
            self.what, self.n
        ))
    }

    /// The next record into `r`; `false` at the end of the journal.
    pub fn next(&mut self, r: &mut Record) -> Result<bool, InputError> {
        // The record's length, a varint.
        let mut len = 0u64;
        let mut shift = 0;
        loop {
            let mut b = [0u8];
            match self.inp.fill(&mut b) {
                Ok(false) if shift == 0 => return Ok(false),
                Ok(true) => {}
                _ => return Err(self.damaged()),
            }
            len |= u64::from(b[0] & 0x7f) << shift;
            if b[0] & 0x80 == 0 {
                break;
            }
            shift += 7;
            if shift >= 64 {
                return Err(self.damaged());
            }
        }
        self.body.resize(len as usize, 0);
        if !matches!(self.inp.fill(&mut self.body), Ok(true)) && len > 0 {
            return Err(self.damaged());
        }
        let mut t = Take::new(&self.body, &self.what);
        let flags = t.byte()?;
        r.t = self.last_t.wrapping_add(t.i64()? as u64);
        self.last_t = r.t;
        r.origin = if flags & OWN == 0 {
            self.last_index = self.last_index.wrapping_add(t.i64()? as u64);
            Origin::Arrival(self.last_index)
        } else {
            let pushed = t.u64()?;
            let creator = match flags & CREATOR {
                0 => None,
                _ => Some(self.n.checked_sub(t.u64()?).ok_or_else(|| self.damaged())?),
            };
            Origin::Own {
                pushed,
                creator,
                sub: t.u32()?,
            }
        };
        r.rows = if flags & ROWS != 0 { t.u64()? } else { 0 };
        r.created = if flags & CREATED != 0 { t.u32()? } else { 0 };
        r.changes.clear();
        if flags & CHANGES != 0 {
            for _ in 0..t.usize()? {
                let limiter = t.u32()?;
                let instance = t.u32()?;
                let timed = t.bool()?;
                let at = match timed {
                    true => r.t.wrapping_add(t.i64()? as u64),
                    false => r.t,
                };
                let bytes = [t.i64()?, t.i64()?];
                r.changes.push(UnitChange {
                    limiter,
                    instance,
                    change: Change { at, timed, bytes },
                });
            }
        }
        r.end = flags & END != 0;
        if !t.is_empty() {
            return Err(self.damaged());
        }
        self.n += 1;
        Ok(true)
    }
}

/// One ledger's bytes over the whole run, summed over the partitions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnitTotals {
    /// Bytes held now, compact and Redis.
    pub total: [i128; 2],
    /// The most held at any moment.
    pub peak: [u64; 2],
    /// ∫ bytes dt (byte·ns) up to `last`.
    pub integral: [u128; 2],
    pub last: u64,
}

impl UnitTotals {
    fn apply(&mut self, at: u64, bytes: [i64; 2]) {
        let dt = at.saturating_sub(self.last) as u128;
        for (f, &bytes) in bytes.iter().enumerate() {
            self.integral[f] += self.total[f].max(0) as u128 * dt;
            self.total[f] += i128::from(bytes);
            self.peak[f] = self.peak[f].max(self.total[f].clamp(0, u64::MAX as i128) as u64);
        }
        self.last = self.last.max(at);
    }
}

struct Part<R> {
    reader: JournalReader<R>,
    head: Record,
    /// The head's number in its journal, and its creator's place in the
    /// whole run (0 for none, else one more than it).
    head_n: u64,
    head_creator: u64,
    ended: bool,
    last: u64,
    /// Events that created events not read yet: their place in the whole
    /// run, and how many are still to be read.
    creators: HashMap<u64, (u64, u32)>,
}

/// An event of the whole run, as [`Merger::next_event`] yields it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Merged {
    /// The partition (its index among the merged) and the event's number
    /// in that partition's journal…
    pub part: usize,
    pub n: u64,
    /// …its place in the whole run's order, and the decision log rows it
    /// wrote.
    pub pos: u64,
    pub rows: u64,
}

/// A timed change on its way: its moment, the order it was read in, its
/// ledger (an index of `Merger::units`) and its bytes.
type Timed = (u64, u64, usize, [i64; 2]);

/// A ledger (limiter, instance) and its totals.
pub type Unit = ((u32, u32), UnitTotals);

/// The partitions' journals of one limiter's run, read in the whole run's
/// order (see the module documentation).
pub struct Merger<R> {
    parts: Vec<Part<R>>,
    pos: u64,
    seq: u64,
    timed: BinaryHeap<Reverse<Timed>>,
    units: Vec<Unit>,
    unit_of: HashMap<(u32, u32), usize>,
}

impl<R: Source> Merger<R> {
    pub fn new(readers: Vec<JournalReader<R>>) -> Result<Merger<R>, InputError> {
        let mut m = Merger {
            parts: readers
                .into_iter()
                .map(|reader| Part {
                    reader,
                    head: Record::default(),
                    head_n: 0,
                    head_creator: 0,
                    ended: false,
                    last: 0,
                    creators: HashMap::new(),
                })
                .collect(),
            pos: 0,
            seq: 0,
            timed: BinaryHeap::new(),
            units: Vec::new(),
            unit_of: HashMap::new(),
        };
        for p in 0..m.parts.len() {
            m.read_head(p)?;
        }
        Ok(m)
    }

    fn unit(&mut self, limiter: u32, instance: u32) -> usize {
        let n = self.units.len();
        let i = *self.unit_of.entry((limiter, instance)).or_insert(n);
        if i == n {
            self.units
                .push(((limiter, instance), UnitTotals::default()));
        }
        i
    }

    /// Reads partition `p`'s next record into its head: its timed changes
    /// go on the queue of changes to apply at their moment.
    fn read_head(&mut self, p: usize) -> Result<(), InputError> {
        let part = &mut self.parts[p];
        let mut head = std::mem::take(&mut part.head);
        let n = part.reader.n;
        if !part.reader.next(&mut head)? {
            let what = part.reader.what.clone();
            return Err(InputError::new(format!(
                "{what}: it ends without its closing record: the partition's run did not finish; run it again"
            )));
        }
        part.head_n = n;
        part.head_creator = 0;
        if let Origin::Own {
            creator: Some(c), ..
        } = head.origin
        {
            let Some(entry) = part.creators.get_mut(&c) else {
                return Err(part.reader.damaged());
            };
            part.head_creator = entry.0 + 1;
            entry.1 -= 1;
            if entry.1 == 0 {
                part.creators.remove(&c);
            }
        }
        if head.end {
            part.ended = true;
            part.last = head.t;
        }
        for c in &head.changes {
            if c.change.timed {
                let u = self.unit(c.limiter, c.instance);
                self.timed
                    .push(Reverse((c.change.at, self.seq, u, c.change.bytes)));
                self.seq += 1;
            }
        }
        self.parts[p].head = head;
        Ok(())
    }

    /// The order of partition `p`'s head in the whole run.
    fn key(&self, p: usize) -> (u64, u64, u8, u64, u32) {
        let part = &self.parts[p];
        match part.head.origin {
            Origin::Arrival(index) => (part.head.t, index, 1, 0, 0),
            Origin::Own { pushed, sub, .. } => (part.head.t, pushed, 0, part.head_creator, sub),
        }
    }

    /// Applies every timed change due by `t`, in time order.
    fn expire(&mut self, t: u64) {
        while let Some(&Reverse((at, _, u, bytes))) = self.timed.peek() {
            if at > t {
                break;
            }
            self.timed.pop();
            self.units[u].1.apply(at, bytes);
        }
    }

    /// The whole run's next event, its changes applied; `None` when every
    /// partition's journal is done.
    pub fn next_event(&mut self) -> Result<Option<Merged>, InputError> {
        let best = (0..self.parts.len())
            .filter(|&p| !self.parts[p].ended)
            .min_by_key(|&p| (self.key(p), p));
        let Some(p) = best else {
            return Ok(None);
        };
        let pos = self.pos;
        self.pos += 1;
        let t = self.parts[p].head.t;
        self.expire(t);
        let head = std::mem::take(&mut self.parts[p].head);
        for c in head.changes.iter().filter(|c| !c.change.timed) {
            let u = self.unit(c.limiter, c.instance);
            self.units[u].1.apply(t, c.change.bytes);
        }
        let n = self.parts[p].head_n;
        if head.created > 0 {
            self.parts[p].creators.insert(n, (pos, head.created));
        }
        let merged = Merged {
            part: p,
            n,
            pos,
            rows: head.rows,
        };
        self.parts[p].head = head;
        self.read_head(p)?;
        Ok(Some(merged))
    }

    /// After the last event: the whole run's last moment (the latest of
    /// the partitions'), and each ledger's totals up to it.
    pub fn finish(mut self) -> Result<(u64, Vec<Unit>), InputError> {
        if let Some(p) = self.parts.iter().position(|p| !p.ended) {
            return Err(InputError::new(format!(
                "{}: events are left unread",
                self.parts[p].reader.what
            )));
        }
        let last = self.parts.iter().map(|p| p.last).max().unwrap_or(0);
        self.expire(last);
        for (_, u) in &mut self.units {
            u.apply(last, [0, 0]);
        }
        Ok((last, self.units))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(limiter: u32, at: u64, timed: bool, b: i64) -> UnitChange {
        UnitChange {
            limiter,
            instance: 0,
            change: Change {
                at,
                timed,
                bytes: [b, 2 * b],
            },
        }
    }

    /// Bytes from a slice.
    struct Bytes<'a>(&'a [u8]);

    impl Source for Bytes<'_> {
        fn fill(&mut self, buf: &mut [u8]) -> Result<bool, InputError> {
            if self.0.is_empty() {
                return Ok(false);
            }
            if self.0.len() < buf.len() {
                return Err(InputError::new("cut short".to_string()));
            }
            let (head, rest) = self.0.split_at(buf.len());
            buf.copy_from_slice(head);
            self.0 = rest;
            Ok(true)
        }
    }

    fn reader<'a>(bytes: &'a [u8], what: &str) -> JournalReader<Bytes<'a>> {
        JournalReader::new(Bytes(bytes), what.to_string())
    }

    fn journal(records: &[Record]) -> Vec<u8> {
        let buf = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
        impl Sink for Shared {
            fn put(&mut self, b: &[u8]) -> anyhow::Result<()> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(())
            }
            fn finish(&mut self) -> anyhow::Result<()> {
                Ok(())
            }
        }
        let mut w = JournalWriter::new(Box::new(Shared(buf.clone())));
        for r in records {
            w.write(r);
        }
        w.finish().unwrap();
        let out = buf.lock().unwrap().clone();
        out
    }

    #[test]
    fn records_read_back() {
        let records = vec![
            Record {
                t: 5,
                origin: Origin::Arrival(3),
                rows: 1,
                created: 2,
                changes: vec![change(0, 5, false, 16)],
                end: false,
            },
            Record {
                t: 9,
                origin: Origin::Own {
                    pushed: 4,
                    creator: Some(0),
                    sub: 1,
                },
                ..Record::default()
            },
            Record {
                t: 20,
                origin: Origin::Own {
                    pushed: 0,
                    creator: None,
                    sub: 0,
                },
                changes: vec![change(1, 12, true, -16)],
                end: true,
                ..Record::default()
            },
        ];
        let bytes = journal(&records);
        let mut r = reader(&bytes, "j");
        let mut got = Record::default();
        for want in &records {
            assert!(r.next(&mut got).unwrap());
            assert_eq!(&got, want);
        }
        assert!(!r.next(&mut got).unwrap());
        // Cut short anywhere: an error, never a panic.
        for n in 1..bytes.len() {
            let mut r = reader(&bytes[..n], "j");
            let mut got = Record::default();
            let all = (0..3).try_for_each(|_| r.next(&mut got).map(|_| ()));
            assert!(all.is_err() || r.n < 3, "{n}");
        }
    }

    fn ev(t: u64, origin: Origin, rows: u64, created: u32, changes: Vec<UnitChange>) -> Record {
        Record {
            t,
            origin,
            rows,
            created,
            changes,
            end: false,
        }
    }

    fn end(t: u64, changes: Vec<UnitChange>) -> Record {
        Record {
            t,
            changes,
            end: true,
            ..Record::default()
        }
    }

    /// Two partitions: arrivals by push number; a retry at the same moment
    /// as another partition's retry, both created after the same pushes,
    /// comes after it when its creator came after; an arrival pushed after
    /// a retry was created comes after it. The bytes sum moment by moment.
    #[test]
    fn events_come_in_the_whole_runs_order_and_bytes_sum() {
        let own = |pushed, creator, sub| Origin::Own {
            pushed,
            creator: Some(creator),
            sub,
        };
        // A: arrival #0 at 1 (creates a retry at 10), key born (+16),
        //    the key dies at 4 (timed, seen at its next event).
        // B: arrival #1 at 2 (creates a retry at 10), born (+16).
        // Both retries: pushed 2. A's creator came first.
        let a = journal(&[
            ev(1, Origin::Arrival(0), 1, 1, vec![change(0, 1, false, 16)]),
            ev(
                10,
                own(2, 0, 0),
                1,
                0,
                vec![change(0, 4, true, -16), change(0, 10, false, 16)],
            ),
            end(10, vec![change(0, 30, true, -16)]),
        ]);
        let b = journal(&[
            ev(2, Origin::Arrival(1), 1, 1, vec![change(0, 2, false, 16)]),
            ev(10, own(2, 0, 0), 1, 0, vec![]),
            // An arrival at 10 pushed as #2: after both retries (created
            // after two pushes, (10, 2) ≤ (10, 2)).
            ev(10, Origin::Arrival(2), 1, 0, vec![change(0, 10, false, 16)]),
            end(12, vec![change(0, 20, true, -32)]),
        ]);
        let readers = vec![reader(&a, "a"), reader(&b, "b")];
        let mut m = Merger::new(readers).unwrap();
        let mut order = Vec::new();
        while let Some(e) = m.next_event().unwrap() {
            order.push((e.part, e.n, e.pos));
        }
        assert_eq!(
            order,
            [(0, 0, 0), (1, 0, 1), (0, 1, 2), (1, 1, 3), (1, 2, 4)]
        );
        let (last, units) = m.finish().unwrap();
        assert_eq!(last, 12);
        let u = units[0].1;
        // Held: 16 from 1, 32 from 2, 16 from 4, 32 from 10 (A's
        // retry), 48 at 10 (B's arrival) to 12.
        assert_eq!(u.peak, [48, 96]);
        assert_eq!(u.integral[0], 16 + 32 * 2 + 16 * 6 + 48 * 2);
        assert_eq!(u.total[0], 48);
    }

    #[test]
    fn a_journal_without_its_closing_record_is_refused() {
        let a = journal(&[ev(1, Origin::Arrival(0), 0, 0, vec![])]);
        let mut m = Merger::new(vec![reader(&a, "a.bin")]).unwrap();
        let e = m.next_event().expect_err("no closing record");
        assert!(e.to_string().contains("a.bin"), "{e}");
    }
}
