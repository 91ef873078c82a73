//! Every client and address a scenario names, interned to dense ids:
//! limiters and metrics index their per-key state by id, without hashing,
//! and a name is made into text only when it is written out.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// Every client and address named in a scenario, interned to dense ids so
/// limiters index their per-key state without hashing. A copy shares the
/// names until one of the two names something new.
#[derive(Debug, Clone, Default)]
pub struct Population {
    clients: Arc<Names>,
    ips: Arc<Names>,
}

/// Names, each stored once: runs of ids, each either interned names —
/// end to end in one string, found by a hash of the name (about 40 bytes a
/// name, not the 150 of a `Vec<String>` beside a `HashMap<String, u32>`) —
/// or a numbered run `prefix0, prefix1, …`, which stores nothing per name
/// (a synthetic source's 10^6 clients cost a few bytes, not 40 MB).
#[derive(Debug, Clone, Default)]
struct Names {
    text: String,
    /// Where each interned name ends in `text`.
    ends: Vec<usize>,
    /// The interned names by hash, made when a name is first interned or
    /// found by its text: names taken over whole
    /// ([`Names::take_distinct`]) are not hashed until then (a replay of
    /// one log never asks).
    index: OnceLock<Index>,
    /// The runs, in id order.
    runs: Vec<Run>,
    len: u32,
}

/// Where a [`Names`]' interned names are found by their hash.
#[derive(Debug, Clone, Default)]
struct Index {
    /// Hash of an interned name → the first name's id with that hash…
    by_hash: HashMap<u64, u32, std::hash::BuildHasherDefault<Prehashed>>,
    /// …and the rare later names whose hash an earlier name has.
    collided: HashMap<String, u32>,
}

impl Index {
    /// Adds interned name `name`, of hash `h`, with id `id`, unless it has
    /// one already (returned); `name_of` gives an id's name.
    fn add<'n>(
        &mut self,
        name: &str,
        h: u64,
        id: u32,
        name_of: impl Fn(u32) -> Name<'n>,
    ) -> Option<u32> {
        match self.by_hash.get(&h) {
            Some(&first) if name_of(first) == name => Some(first),
            Some(_) => match self.collided.get(name) {
                Some(&other) => Some(other),
                None => {
                    self.collided.insert(name.to_string(), id);
                    None
                }
            },
            None => {
                self.by_hash.insert(h, id);
                None
            }
        }
    }
}

/// Names end to end in one string, each different from the others: name
/// `i` ends at `ends[i]` of `text`. What [`Population::take_lists`] takes
/// over whole.
#[derive(Debug, Clone, Copy)]
pub struct DistinctNames<'a> {
    pub text: &'a str,
    pub ends: &'a [usize],
}

/// Ids from `first` on: interned names from `interned` on, or the names
/// `prefix0`, `prefix1`, … of a numbered run.
#[derive(Debug, Clone)]
struct Run {
    first: u32,
    numbered: Option<(String, u32)>,
    /// The first interned name's index in `ends` (for an interned run).
    interned: usize,
}

/// One name, as [`Population::client_name`] gives it: stored text, or a
/// prefix and a number made into text on demand.
#[derive(Debug, Clone, Copy)]
pub enum Name<'a> {
    Text(&'a str),
    Numbered(&'a str, u32),
}

impl<'a> Name<'a> {
    /// The name as text: in place, or written into `buf` (no allocation
    /// once `buf` has grown to a name's length).
    pub fn as_str<'b>(&self, buf: &'b mut String) -> &'b str
    where
        'a: 'b,
    {
        match *self {
            Name::Text(t) => t,
            Name::Numbered(prefix, n) => {
                use std::fmt::Write;
                buf.clear();
                let _ = write!(buf, "{prefix}{n}");
                buf
            }
        }
    }
}

impl Name<'_> {
    /// Hands the name's bytes to `f`, in order, in one or more pieces
    /// (without making it into a `String`).
    pub fn bytes(&self, mut f: impl FnMut(&[u8])) {
        match *self {
            Name::Text(t) => f(t.as_bytes()),
            Name::Numbered(prefix, n) => {
                f(prefix.as_bytes());
                let mut digits = [0u8; 10];
                let mut i = digits.len();
                let mut n = n;
                loop {
                    i -= 1;
                    digits[i] = b'0' + (n % 10) as u8;
                    n /= 10;
                    if n == 0 {
                        break;
                    }
                }
                f(&digits[i..]);
            }
        }
    }
}

impl std::fmt::Display for Name<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Name::Text(t) => f.write_str(t),
            Name::Numbered(prefix, n) => write!(f, "{prefix}{n}"),
        }
    }
}

impl PartialEq<str> for Name<'_> {
    fn eq(&self, other: &str) -> bool {
        match *self {
            Name::Text(t) => t == other,
            Name::Numbered(prefix, n) => other
                .strip_prefix(prefix)
                .and_then(number)
                .is_some_and(|m| m == n as u64),
        }
    }
}

impl PartialEq<&str> for Name<'_> {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

/// `s` as a number written the way `format!("{n}")` writes it (no sign,
/// no leading zero), if it is one.
fn number(s: &str) -> Option<u64> {
    let canonical =
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'));
    canonical.then(|| s.parse().ok()).flatten()
}

/// The hasher of `Index::by_hash`, whose keys are hashes already: a
/// folded multiply spreads each key over the bits the table reads.
#[derive(Debug, Clone, Copy, Default)]
struct Prehashed(u64);

impl std::hash::Hasher for Prehashed {
    fn finish(&self) -> u64 {
        let p = u128::from(self.0) * 0x9E37_79B9_7F4A_7C15;
        p as u64 ^ (p >> 64) as u64
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// Interned name number `i` of names `text` ending at `ends`.
fn interned<'a>(text: &'a str, ends: &[usize], i: usize) -> &'a str {
    let start = if i == 0 { 0 } else { ends[i - 1] };
    &text[start..ends[i]]
}

/// [`Names::name`], from its parts: the name of `id`.
fn name_of<'a>(runs: &'a [Run], text: &'a str, ends: &[usize], id: u32) -> Name<'a> {
    let r = &runs[runs.partition_point(|r| r.first <= id) - 1];
    match &r.numbered {
        Some((prefix, _)) => Name::Numbered(prefix, id - r.first),
        None => Name::Text(interned(text, ends, r.interned + (id - r.first) as usize)),
    }
}

impl Names {
    /// FNV-1a 64 of the name: a name is a key of the user's, not an
    /// attacker's, and this is the hash of every name of a replayed log.
    fn hash(name: &str) -> u64 {
        fnv1a(name)
    }

    /// Interned name number `i` (its place in `ends`).
    fn interned(&self, i: usize) -> &str {
        interned(&self.text, &self.ends, i)
    }

    fn name(&self, id: u32) -> Name<'_> {
        name_of(&self.runs, &self.text, &self.ends, id)
    }

    fn len(&self) -> usize {
        self.len as usize
    }

    /// The id of `name` in a numbered run, if it is one of theirs.
    fn in_numbered(&self, name: &str) -> Option<u32> {
        self.runs.iter().find_map(|r| {
            let (prefix, count) = r.numbered.as_ref()?;
            let n = number(name.strip_prefix(prefix.as_str())?)?;
            (n < *count as u64).then(|| r.first + n as u32)
        })
    }

    /// The id of `name`, if it has one.
    fn find(&self, name: &str) -> Option<u32> {
        if let Some(id) = self.in_numbered(name) {
            return Some(id);
        }
        let index = self.index.get_or_init(|| self.make_index());
        match index.by_hash.get(&Names::hash(name)) {
            Some(&first) if self.name(first) == name => Some(first),
            Some(_) => index.collided.get(name).copied(),
            None => None,
        }
    }

    fn intern(&mut self, name: &str) -> u32 {
        if let Some(id) = self.in_numbered(name) {
            return id;
        }
        let h = Names::hash(name);
        let id = self.len;
        let (index, (runs, text, ends)) = self.index_and_parts();
        if let Some(id) = index.add(name, h, id, |first| name_of(runs, text, ends, first)) {
            return id;
        }
        if self.runs.last().is_none_or(|r| r.numbered.is_some()) {
            self.runs.push(Run {
                first: id,
                numbered: None,
                interned: self.ends.len(),
            });
        }
        self.text.push_str(name);
        self.ends.push(self.text.len());
        self.len += 1;
        id
    }

    /// The index, made if it was not.
    fn index_mut(&mut self) -> &mut Index {
        self.index_and_parts().0
    }

    /// [`Names::index_mut`], beside the parts [`name_of`] reads (the runs,
    /// the text and the ends), to look names up while adding to it.
    fn index_and_parts(&mut self) -> (&mut Index, (&[Run], &str, &[usize])) {
        if self.index.get().is_none() {
            let _ = self.index.set(self.make_index());
        }
        let Names {
            text,
            ends,
            runs,
            index,
            ..
        } = self;
        (index.get_mut().expect("made above"), (runs, text, ends))
    }

    /// The index of every interned name: each added in id order, as
    /// interning them one by one added them.
    fn make_index(&self) -> Index {
        let mut index = Index::default();
        index.by_hash.reserve(self.ends.len());
        for (k, r) in self.runs.iter().enumerate() {
            if r.numbered.is_some() {
                continue;
            }
            let end = self.runs.get(k + 1).map_or(self.len, |next| next.first);
            for (j, id) in (r.first..end).enumerate() {
                let name = self.interned(r.interned + j);
                let known = index.add(name, Names::hash(name), id, |first| self.name(first));
                debug_assert!(known.is_none(), "{name:?} interned twice");
            }
        }
        index
    }

    /// Takes over `names` whole, the first names of a [`Names`] that has
    /// none: the ids interning each in turn gives (0, 1, …), since they
    /// differ. Not hashed until a name is interned or found by its text.
    fn take_distinct(&mut self, names: DistinctNames<'_>) {
        debug_assert!(self.runs.is_empty() && self.len == 0);
        debug_assert_eq!(names.ends.last().copied().unwrap_or(0), names.text.len());
        #[cfg(debug_assertions)]
        {
            let mut seen = std::collections::HashSet::new();
            for i in 0..names.ends.len() {
                let name = interned(names.text, names.ends, i);
                assert!(seen.insert(name), "{name:?} named twice");
            }
        }
        let count = u32::try_from(names.ends.len()).expect("under 2^32 names");
        if count == 0 {
            return;
        }
        self.text = names.text.to_string();
        self.ends = names.ends.to_vec();
        self.runs.push(Run {
            first: 0,
            numbered: None,
            interned: 0,
        });
        self.len = count;
        self.index = OnceLock::new();
    }

    /// Ids for the `count` new names `prefix0 … prefix{count-1}`, the
    /// first returned: exactly the ids interning them one by one would
    /// give. `None` if any of them might already have an id (the caller
    /// interns them one by one).
    #[cfg(test)]
    fn numbered(&mut self, prefix: &str, count: u32) -> Option<u32> {
        self.can_number(prefix, count)
            .then(|| self.add_run(prefix, count))
    }

    /// Adds the run [`Names::can_number`] allows, its first id returned.
    fn add_run(&mut self, prefix: &str, count: u32) -> u32 {
        let first = self.len;
        self.runs.push(Run {
            first,
            numbered: Some((prefix.to_string(), count)),
            interned: 0,
        });
        self.len += count;
        first
    }

    /// Whether the run `prefix0 … prefix{count-1}` can be added: none of
    /// its names might have an id yet, and the ids fit.
    fn can_number(&self, prefix: &str, count: u32) -> bool {
        let clash = self.runs.iter().any(|r| {
            r.numbered
                .as_ref()
                .is_some_and(|(p, _)| p.starts_with(prefix) || prefix.starts_with(p.as_str()))
        }) || (0..self.ends.len()).any(|i| {
            self.interned(i)
                .strip_prefix(prefix)
                .and_then(number)
                .is_some_and(|n| n < count as u64)
        });
        let fits = self.len.checked_add(count).is_some();
        !clash && fits && count > 0
    }
}

impl Population {
    pub fn client(&mut self, name: &str) -> u32 {
        intern(&mut self.clients, name)
    }

    /// The ids of `clients` and of `ips`, interned in order: what
    /// interning each client and each address one by one gives, in any
    /// order between the two (a client's id and an address's never depend
    /// on each other). With two threads or more (rayon's count) and two
    /// long lists, the addresses are interned on a thread of their own
    /// meanwhile: a plain thread, not a rayon task, because this may run
    /// on a rayon worker inside a lock (a recording's kept population),
    /// where waiting on a join could take up a task that waits for that
    /// lock.
    pub fn intern_lists<'a>(
        &mut self,
        clients: impl ExactSizeIterator<Item = &'a str> + Clone,
        ips: impl ExactSizeIterator<Item = &'a str> + Clone + Send,
    ) -> (Vec<u32>, Vec<u32>) {
        let (names, ip_names) = (&mut self.clients, &mut self.ips);
        let long = clients.len().min(ips.len()) >= SIDE_BY_SIDE;
        if long && rayon::current_num_threads() > 1 {
            let side_by_side = std::thread::scope(|s| {
                let (ip_names, list) = (&mut *ip_names, ips.clone());
                let thread = std::thread::Builder::new()
                    .name("address names".to_string())
                    .spawn_scoped(s, move || intern_all(ip_names, list))
                    .ok()?;
                let clients = intern_all(&mut *names, clients.clone());
                match thread.join() {
                    Ok(ips) => Some((clients, ips)),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            });
            // (`None`: no thread could be started, and nothing was
            // interned.)
            if let Some(ids) = side_by_side {
                return ids;
            }
        }
        (intern_all(names, clients), intern_all(ip_names, ips))
    }

    pub fn ip(&mut self, name: &str) -> u32 {
        intern(&mut self.ips, name)
    }

    /// Takes over `clients` and `ips` whole as its names, if it is new
    /// ([`Population::is_new`]): the ids interning them in turn gives, 0,
    /// 1, … in each list, as the names in a list differ. Whether it did
    /// (a population that is not new interns them instead, with
    /// [`Population::intern_lists`]).
    pub fn take_lists(&mut self, clients: DistinctNames<'_>, ips: DistinctNames<'_>) -> bool {
        if !self.is_new() {
            return false;
        }
        Arc::make_mut(&mut self.clients).take_distinct(clients);
        Arc::make_mut(&mut self.ips).take_distinct(ips);
        true
    }

    /// Client ids for the names `prefix0 … prefix{count-1}`, as interning
    /// each would give them, but stored as one numbered run when none of
    /// them is known yet.
    pub fn numbered_clients(&mut self, prefix: &str, count: u32) -> IdList {
        numbered(&mut self.clients, prefix, count)
    }

    /// [`Population::numbered_clients`] for addresses.
    pub fn numbered_ips(&mut self, prefix: &str, count: u32) -> IdList {
        numbered(&mut self.ips, prefix, count)
    }

    pub fn client_name(&self, id: u32) -> Name<'_> {
        self.clients.name(id)
    }

    pub fn ip_name(&self, id: u32) -> Name<'_> {
        self.ips.name(id)
    }

    pub fn clients(&self) -> usize {
        self.clients.len()
    }

    /// Whether nothing has been named in it yet: what interning into it
    /// gives is then the same every time.
    pub fn is_new(&self) -> bool {
        self.clients.runs.is_empty() && self.ips.runs.is_empty()
    }

    pub fn ips(&self) -> usize {
        self.ips.len()
    }
}

/// The ids of the names `{prefix}0`, `{prefix}1`, … in order: one run of
/// consecutive ids (the rule), or each one's, interned one by one (when
/// some of those names might have ids already).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdList {
    Run { first: u32, count: u32 },
    Each(Vec<u32>),
}

impl IdList {
    pub fn len(&self) -> usize {
        match self {
            IdList::Run { count, .. } => *count as usize,
            IdList::Each(ids) => ids.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`th id, for `i < len` (past it, a panic, as for a slice).
    pub fn get(&self, i: usize) -> u32 {
        match self {
            IdList::Run { first, count } => {
                assert!(i < *count as usize, "id {i} of a run of {count}");
                first + i as u32
            }
            IdList::Each(ids) => ids[i],
        }
    }
}

/// How long two lists [`Population::intern_lists`] interns side by side
/// are, at least (a few names under test). Starting and joining a thread
/// took about 40 µs, interning a name into new names 30–40 ns (measured
/// on 2026-12-05, 1 000 to 20 000 names): a thread costs about what a
/// thousand names do, and at 4 096 a list it saves over three times that.
const SIDE_BY_SIDE: usize = if cfg!(test) { 1 } else { 4096 };

/// The ids of `list`'s names in `names`, as interning each one by one
/// gives. Names not shared with a copy are taken out of their `Arc`
/// meanwhile (onto this thread's stack, away from the other list's, which
/// may be interned on another thread), and sized for the list first if
/// they hold none yet.
fn intern_all<'a>(
    names: &mut Arc<Names>,
    list: impl ExactSizeIterator<Item = &'a str>,
) -> Vec<u32> {
    let Some(own) = Arc::get_mut(names) else {
        return list.map(|name| intern(names, name)).collect();
    };
    let mut local = std::mem::take(own);
    if local.len == 0 {
        local.index_mut().by_hash.reserve(list.len());
        local.ends.reserve(list.len());
    }
    let ids = list.map(|name| local.intern(name)).collect();
    *own = local;
    ids
}

/// `name`'s id in `names`, interning it if need be: names shared with a
/// copy are copied only for a name they do not know.
fn intern(names: &mut Arc<Names>, name: &str) -> u32 {
    if let Some(own) = Arc::get_mut(names) {
        return own.intern(name);
    }
    match names.find(name) {
        Some(id) => id,
        None => Arc::make_mut(names).intern(name),
    }
}

/// [`Population::numbered_clients`] in `names`, copied (if shared) only
/// to add the run or a name they do not know.
fn numbered(names: &mut Arc<Names>, prefix: &str, count: u32) -> IdList {
    if names.can_number(prefix, count) {
        let first = Arc::make_mut(names).add_run(prefix, count);
        return IdList::Run { first, count };
    }
    IdList::Each(
        (0..count)
            .map(|i| intern(names, &format!("{prefix}{i}")))
            .collect(),
    )
}

/// FNV-1a: a stable hash of a name, the same on every machine and run.
pub fn fnv1a(name: &str) -> u64 {
    let mut h = Fnv1a::default();
    h.update(name.as_bytes());
    h.0
}

/// [`fnv1a`] of `name` given in pieces (see [`Name::bytes`]).
pub(crate) fn fnv1a_name(name: Name<'_>) -> u64 {
    let mut h = Fnv1a::default();
    name.bytes(|b| h.update(b));
    h.0
}

/// FNV-1a's state, fed bytes in pieces.
struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a {
    fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::*;

    /// A name of a few prefixes, maybe numbered: collisions between runs
    /// and interned names are likely.
    fn a_name() -> impl Strategy<Value = String> {
        (
            prop::sample::select(vec!["c", "c1", "ip-", ""]),
            0..30u32,
            any::<bool>(),
        )
            .prop_map(|(p, n, zero)| {
                if zero {
                    format!("{p}0{n}")
                } else {
                    format!("{p}{n}")
                }
            })
    }

    proptest! {
        #[test]
        fn numbered_runs_give_the_ids_and_names_interning_gives(
            ops in prop::collection::vec(
                prop_oneof![
                    a_name().prop_map(|n| (n, None)),
                    (prop::sample::select(vec!["c", "c1", "ip-", ""]), 0..25u32)
                        .prop_map(|(p, k)| (p.to_string(), Some(k))),
                ],
                0..40,
            )
        ) {
            // `runs` is always shared with the copy made after each step,
            // as a scenario's names are with a kept population's.
            let (mut runs, mut one_by_one) = (Arc::new(Names::default()), Names::default());
            let mut _copy = Arc::clone(&runs);
            for (name, count) in ops {
                match count {
                    None => prop_assert_eq!(intern(&mut runs, &name), one_by_one.intern(&name)),
                    Some(k) => {
                        let ids = numbered(&mut runs, &name, k);
                        let a: Vec<u32> = (0..ids.len()).map(|i| ids.get(i)).collect();
                        let b: Vec<u32> =
                            (0..k).map(|i| one_by_one.intern(&format!("{name}{i}"))).collect();
                        prop_assert_eq!(a, b);
                    }
                }
                prop_assert_eq!(runs.len(), one_by_one.len());
                _copy = Arc::clone(&runs);
            }
            for id in 0..runs.len() as u32 {
                let (a, b) = (runs.name(id), one_by_one.name(id));
                prop_assert_eq!(a.to_string(), b.to_string());
                prop_assert!(a == b.to_string().as_str());
                let mut bytes = Vec::new();
                a.bytes(|b| bytes.extend_from_slice(b));
                prop_assert_eq!(bytes, b.to_string().into_bytes());
                let mut buf = String::new();
                prop_assert_eq!(a.as_str(&mut buf), b.to_string());
            }
        }
    }

    proptest! {
        // Interning two lists side by side gives the ids interning each
        // name one by one gives, into a population new or not, shared
        // with a copy or not, with numbered runs and names in both lists.
        #[test]
        fn lists_interned_side_by_side_get_the_ids_one_by_one_gives(
            before in prop::collection::vec((a_name(), any::<bool>()), 0..20),
            run in prop::option::of(0..20u32),
            clients in prop::collection::vec(a_name(), 0..60),
            ips in prop::collection::vec(a_name(), 0..60),
            shared in any::<bool>(),
        ) {
            let mut p = Population::default();
            for (name, ip) in &before {
                if *ip { p.ip(name); } else { p.client(name); }
            }
            if let Some(k) = run {
                p.numbered_clients("c", k);
            }
            let mut one_by_one = p.clone();
            let _copy = shared.then(|| p.clone());
            let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
            let (c, i) = pool.install(|| {
                p.intern_lists(clients.iter().map(String::as_str), ips.iter().map(String::as_str))
            });
            let c1: Vec<u32> = clients.iter().map(|n| one_by_one.client(n)).collect();
            let i1: Vec<u32> = ips.iter().map(|n| one_by_one.ip(n)).collect();
            prop_assert_eq!((c, i), (c1, i1));
            prop_assert_eq!((p.clients(), p.ips()), (one_by_one.clients(), one_by_one.ips()));
            for id in 0..p.clients() as u32 {
                prop_assert_eq!(p.client_name(id).to_string(), one_by_one.client_name(id).to_string());
            }
            for id in 0..p.ips() as u32 {
                prop_assert_eq!(p.ip_name(id).to_string(), one_by_one.ip_name(id).to_string());
            }
        }
    }

    proptest! {
        // Lists taken over whole into a new population give what
        // interning each name one by one gives: the same ids and names,
        // and the same ids for the names found or interned after them
        // (which make the index of the names taken), in a copy or not.
        #[test]
        fn lists_taken_over_whole_are_as_if_interned_one_by_one(
            clients in prop::collection::vec(a_name(), 0..60),
            ips in prop::collection::vec(a_name(), 0..60),
            after in prop::collection::vec(
                (a_name(), any::<bool>(), prop::option::of(0..20u32), any::<bool>()),
                0..30,
            ),
            copy in any::<bool>(),
        ) {
            let distinct = |names: &[String]| {
                let mut seen = std::collections::HashSet::new();
                let names: Vec<String> =
                    names.iter().filter(|n| seen.insert(n.as_str())).cloned().collect();
                let ends = names
                    .iter()
                    .scan(0, |end, n| {
                        *end += n.len();
                        Some(*end)
                    })
                    .collect::<Vec<usize>>();
                (names.concat(), ends, names)
            };
            let (c_text, c_ends, c_names) = distinct(&clients);
            let (i_text, i_ends, i_names) = distinct(&ips);
            let mut p = Population::default();
            let took = p.take_lists(
                DistinctNames { text: &c_text, ends: &c_ends },
                DistinctNames { text: &i_text, ends: &i_ends },
            );
            prop_assert!(took);
            let mut one_by_one = Population::default();
            let c1: Vec<u32> = c_names.iter().map(|n| one_by_one.client(n)).collect();
            let i1: Vec<u32> = i_names.iter().map(|n| one_by_one.ip(n)).collect();
            prop_assert_eq!(c1, (0..c_names.len() as u32).collect::<Vec<_>>());
            prop_assert_eq!(i1, (0..i_names.len() as u32).collect::<Vec<_>>());
            let mut p = if copy { p.clone() } else { p };
            prop_assert_eq!((p.clients(), p.ips()), (one_by_one.clients(), one_by_one.ips()));
            // Then names found, interned (found first or not, so that
            // either makes the index) and numbered runs, in turn.
            for (name, ip, run, find_first) in &after {
                if let Some(k) = run {
                    let (a, b) = match ip {
                        true => (p.numbered_ips(name, *k), one_by_one.numbered_ips(name, *k)),
                        false => (p.numbered_clients(name, *k), one_by_one.numbered_clients(name, *k)),
                    };
                    prop_assert_eq!(a, b);
                    continue;
                }
                if *find_first {
                    let (names, by_one) = match ip {
                        true => (&p.ips, &one_by_one.ips),
                        false => (&p.clients, &one_by_one.clients),
                    };
                    prop_assert_eq!(names.find(name), by_one.find(name));
                }
                let ids = match ip {
                    true => (p.ip(name), one_by_one.ip(name)),
                    false => (p.client(name), one_by_one.client(name)),
                };
                prop_assert_eq!(ids.0, ids.1);
            }
            for id in 0..p.clients() as u32 {
                prop_assert_eq!(p.client_name(id).to_string(), one_by_one.client_name(id).to_string());
            }
            for id in 0..p.ips() as u32 {
                prop_assert_eq!(p.ip_name(id).to_string(), one_by_one.ip_name(id).to_string());
            }
            // Taken only into a population that is new.
            let was_new = p.is_new();
            let took = p.take_lists(
                DistinctNames { text: "x", ends: &[1] },
                DistinctNames { text: "", ends: &[] },
            );
            prop_assert_eq!(took, was_new);
            if took {
                prop_assert_eq!((p.clients(), p.client_name(0).to_string()), (1, "x".to_string()));
            }
        }
    }

    #[test]
    fn a_copy_shares_the_names_until_it_names_another() {
        let mut a = Population::default();
        assert_eq!((a.client("alice"), a.ip("10.0.0.1")), (0, 0));
        let mut b = a.clone();
        assert!(Arc::ptr_eq(&a.clients, &b.clients));
        assert_eq!(b.client("alice"), 0, "a known name changes nothing");
        assert!(Arc::ptr_eq(&a.clients, &b.clients));
        assert_eq!(b.client("bob"), 1);
        assert!(!Arc::ptr_eq(&a.clients, &b.clients));
        assert!(Arc::ptr_eq(&a.ips, &b.ips));
        assert_eq!((a.clients(), b.clients()), (1, 2));
        assert_eq!(a.client("carol"), 1, "the first is its own");
        assert_eq!(b.client_name(1), "bob");
        // Numbered names it knows already (k0 and k1, interned one by
        // one) are found without a copy; a new run copies.
        let mut c = Population::default();
        c.client("k0");
        c.client("k1");
        let mut d = c.clone();
        assert!(matches!(d.numbered_clients("k", 2), IdList::Each(ids) if ids == [0, 1]));
        assert!(Arc::ptr_eq(&c.clients, &d.clients));
        assert!(matches!(
            d.numbered_clients("n", 3),
            IdList::Run { first: 2, count: 3 }
        ));
        assert!(!Arc::ptr_eq(&c.clients, &d.clients));
        assert_eq!((c.clients(), d.clients()), (2, 5));
    }

    #[test]
    fn a_numbered_run_stores_no_name_and_knows_its_own() {
        let mut n = Names::default();
        assert_eq!(n.intern("x"), 0);
        assert_eq!(n.numbered("client-", 1_000_000), Some(1));
        assert_eq!(n.text.len(), 1);
        assert_eq!(n.intern("client-999999"), 1_000_000);
        assert_eq!(
            n.intern("client-01"),
            1_000_001,
            "not how a number is written"
        );
        assert_eq!(n.name(42).to_string(), "client-41");
        assert!(n.name(42) == "client-41" && n.name(42) != "client-041");
        // A run that might name what a run or a name already names is not
        // made (its names are interned one by one).
        assert_eq!(n.numbered("client-9", 3), None);
        assert_eq!(n.intern("x5"), 1_000_002);
        assert_eq!(n.numbered("x", 10), None);
        assert_eq!(n.numbered("x", 5), Some(1_000_003), "x0 … x4 are new");
        assert_eq!(n.numbered("y", 0), None);
    }

    #[test]
    fn names_intern_to_dense_ids_and_back_even_when_hashes_collide() {
        let mut n = Names::default();
        assert_eq!((n.intern("a"), n.intern("bb"), n.intern("a")), (0, 1, 0));
        // Pretend "ccc" hashes like "a".
        n.index_mut().by_hash.insert(Names::hash("ccc"), 0);
        assert_eq!((n.intern("ccc"), n.intern("ccc"), n.intern("a")), (2, 2, 0));
        let names: Vec<String> = (0..3).map(|i| n.name(i).to_string()).collect();
        assert_eq!(names, ["a", "bb", "ccc"]);
        assert_eq!(n.len(), 3);
        // Found alike, shared: the colliding name without a copy.
        assert_eq!(
            (n.find("ccc"), n.find("a"), n.find("dddd")),
            (Some(2), Some(0), None)
        );
        let mut shared = Arc::new(n);
        let copy = Arc::clone(&shared);
        assert_eq!(intern(&mut shared, "ccc"), 2);
        assert!(Arc::ptr_eq(&shared, &copy));
    }
}
