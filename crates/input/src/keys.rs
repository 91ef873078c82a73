//! Keys as a hash map's keys: found by their bytes with a fast hash
//! (foldhash), the short ones held in the table itself, so that a key
//! already seen costs a hash and a compare of bytes in place — no
//! allocation, no UTF-8 check, no second memory access.

use std::collections::HashMap;

/// Key bytes → id.
pub(crate) type KeyIds = HashMap<KeyBytes, u32, foldhash::fast::FixedState>;

/// A key's bytes, in place when short (addresses, most ids).
#[derive(Debug, Clone)]
pub(crate) enum KeyBytes {
    Short { len: u8, bytes: [u8; SHORT] },
    Long(Box<[u8]>),
}

/// The longest key held in place.
const SHORT: usize = 22;

impl KeyBytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            KeyBytes::Short { len, bytes } => &bytes[..*len as usize],
            KeyBytes::Long(b) => b,
        }
    }
}

impl From<&[u8]> for KeyBytes {
    fn from(b: &[u8]) -> KeyBytes {
        if b.len() <= SHORT {
            let mut bytes = [0; SHORT];
            bytes[..b.len()].copy_from_slice(b);
            KeyBytes::Short {
                len: b.len() as u8,
                bytes,
            }
        } else {
            KeyBytes::Long(b.into())
        }
    }
}

impl std::borrow::Borrow<[u8]> for KeyBytes {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

// As the bytes hash and compare, so that a map finds a key by its bytes.
impl std::hash::Hash for KeyBytes {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.as_slice().hash(h)
    }
}

// Two short keys compare as their fixed-size arrays (zeros past the
// end), without a call to compare bytes; a short key is never a long one.
impl PartialEq for KeyBytes {
    fn eq(&self, other: &KeyBytes) -> bool {
        match (self, other) {
            (KeyBytes::Short { len, bytes }, KeyBytes::Short { len: l, bytes: b }) => {
                len == l && bytes == b
            }
            (KeyBytes::Long(a), KeyBytes::Long(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for KeyBytes {}

/// Ids found by their keys' bytes, for the keys a recorded source names
/// (one lookup per line): open addressing with linear probing, at most
/// three quarters full, one 32-byte slot per key holding its hash, its id,
/// a second word for the caller, and the key's bytes when at most
/// [`INLINE`] long. So a lookup reads one cache line — which
/// [`IdTable::prefetch`] can ask for while earlier lines are handled — and
/// compares a longer key where the caller keeps it.
#[derive(Debug, Default)]
pub(crate) struct IdTable {
    slots: Vec<Slot>,
    len: usize,
    hasher: foldhash::fast::FixedState,
}

/// The longest key held in its slot.
const INLINE: usize = 15;

/// No id: an empty slot.
const EMPTY: u32 = u32::MAX;

/// One key's slot (see [`IdTable`]).
#[derive(Debug, Clone, Copy)]
#[repr(C, align(32))]
struct Slot {
    /// The key's bytes (zeros after them) and its length; a length of
    /// [`LONG`] for a key longer than [`INLINE`].
    bytes: [u8; INLINE + 1],
    hash: u64,
    id: u32,
    value: u32,
}

/// The length byte of a key kept by the caller.
const LONG: u8 = u8::MAX;

const EMPTY_SLOT: Slot = Slot {
    bytes: [0; INLINE + 1],
    hash: 0,
    id: EMPTY,
    value: 0,
};

/// A key's bytes and length as a slot holds them (`LONG` when too long).
fn inline(key: &[u8]) -> [u8; INLINE + 1] {
    let n = key.len();
    if n > INLINE {
        let mut b = [0; INLINE + 1];
        b[INLINE] = LONG;
        return b;
    }
    // The bytes as two little-endian words, read a word (or half, or a
    // quarter) at a time from each end — overlapping reads say the same
    // bytes twice, so or-ing them is exact — without a call to memcpy.
    let word = |at: usize| u64::from_le_bytes(key[at..at + 8].try_into().unwrap_or([0; 8]));
    let half = |at: usize| {
        u64::from(u32::from_le_bytes(
            key[at..at + 4].try_into().unwrap_or([0; 4]),
        ))
    };
    let (lo, hi) = match n {
        // The high word's bytes 8..n are the last word's top n − 8.
        9.. => (word(0), word(n - 8) >> (8 * (16 - n))),
        8 => (word(0), 0),
        4..=7 => (half(0) | half(n - 4) << (8 * (n - 4)), 0),
        _ => (key.iter().rev().fold(0, |w, &c| w << 8 | u64::from(c)), 0),
    };
    let mut b = [0; INLINE + 1];
    b[..8].copy_from_slice(&lo.to_le_bytes());
    b[8..].copy_from_slice(&(hi | (n as u64) << 56).to_le_bytes());
    b
}

impl IdTable {
    pub(crate) fn hash(&self, key: &[u8]) -> u64 {
        use std::hash::BuildHasher as _;
        self.hasher.hash_one(key)
    }

    /// Asks the CPU for the slot where the key of `hash` is looked up first.
    pub(crate) fn prefetch(&self, hash: u64) {
        if !self.slots.is_empty() {
            let i = hash as usize & (self.slots.len() - 1);
            ratesim_core::cache::prefetch_ref(&self.slots[i]);
        }
    }

    /// The slot of `key` (its `hash`), if it has one; a key longer than
    /// [`INLINE`] is compared with `long(id)`.
    #[inline(always)]
    pub(crate) fn find<'k>(
        &self,
        hash: u64,
        key: &[u8],
        long: impl Fn(u32) -> &'k [u8],
    ) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let (mask, probe) = (self.slots.len() - 1, inline(key));
        let mut i = hash as usize & mask;
        loop {
            let s = &self.slots[i];
            if s.id == EMPTY {
                return None;
            }
            if s.hash == hash && s.bytes == probe && (probe[INLINE] != LONG || long(s.id) == key) {
                return Some(i);
            }
            i = (i + 1) & mask;
        }
    }

    /// How many keys it holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The id and the second word of slot `i`.
    pub(crate) fn get(&self, i: usize) -> (u32, u32) {
        (self.slots[i].id, self.slots[i].value)
    }

    pub(crate) fn set_value(&mut self, i: usize, value: u32) {
        self.slots[i].value = value;
    }

    /// Adds `key` (not in the table; its `hash`) with `id` (not
    /// `u32::MAX`) and `value`: its slot, until the next insert.
    pub(crate) fn insert(&mut self, hash: u64, key: &[u8], id: u32, value: u32) -> usize {
        debug_assert_ne!(id, EMPTY);
        if 4 * (self.len + 1) > 3 * self.slots.len() {
            let old = std::mem::take(&mut self.slots);
            self.slots = vec![EMPTY_SLOT; (2 * old.len()).max(64)];
            for s in old.into_iter().filter(|s| s.id != EMPTY) {
                self.place(s);
            }
        }
        self.len += 1;
        self.place(Slot {
            bytes: inline(key),
            hash,
            id,
            value,
        })
    }

    /// Puts `slot` in the first empty slot from its hash's: its index.
    fn place(&mut self, slot: Slot) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = slot.hash as usize & mask;
        while self.slots[i].id != EMPTY {
            i = (i + 1) & mask;
        }
        self.slots[i] = slot;
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key's slot bytes: its bytes, zeros after them, its length last.
    #[test]
    fn a_key_inline_is_its_bytes_then_zeros_then_its_length() {
        for n in 0..=INLINE + 2 {
            let key: Vec<u8> = (0..n).map(|i| 0xa0 + i as u8).collect();
            let mut want = [0u8; INLINE + 1];
            if n <= INLINE {
                want[..n].copy_from_slice(&key);
                want[INLINE] = n as u8;
            } else {
                want[INLINE] = LONG;
            }
            assert_eq!(inline(&key), want, "{n}");
        }
    }

    #[test]
    fn short_and_long_keys_are_found_by_their_bytes() {
        let mut ids = KeyIds::default();
        let long = [b'k'; 40];
        for (i, k) in [&b""[..], b"10.0.0.1", &long[..22], &long[..23], &long]
            .iter()
            .enumerate()
        {
            ids.insert((*k).into(), i as u32);
        }
        assert_eq!(ids.get(&b"10.0.0.1"[..]), Some(&1));
        assert_eq!(ids.get(&long[..22]), Some(&2));
        assert_eq!(ids.get(&long[..23]), Some(&3));
        assert_eq!(ids.get(&long[..]), Some(&4));
        assert_eq!(ids.get(&b""[..]), Some(&0));
        assert_eq!(ids.get(&b"10.0.0.2"[..]), None);
    }

    #[test]
    fn an_id_table_finds_short_and_long_keys_as_it_grows() {
        let keys: Vec<Vec<u8>> = (0..5000u32)
            .map(|i| match i % 3 {
                0 => format!("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255).into_bytes(),
                1 => format!("a-long-api-key-of-client-{i}").into_bytes(),
                _ => i.to_string().into_bytes(),
            })
            .chain([Vec::new(), vec![b'x'; 15], vec![b'x'; 16], vec![0; 3]])
            .collect();
        let mut t = IdTable::default();
        let long = |id: u32| &keys[id as usize][..];
        for (id, k) in keys.iter().enumerate() {
            let h = t.hash(k);
            assert_eq!(t.find(h, k, long), None);
            let i = t.insert(h, k, id as u32, 7);
            assert_eq!(t.get(i), (id as u32, 7));
        }
        for (id, k) in keys.iter().enumerate() {
            let i = t.find(t.hash(k), k, long).expect("a key added is found");
            assert_eq!(t.get(i), (id as u32, 7));
            t.set_value(i, id as u32);
        }
        for (id, k) in keys.iter().enumerate() {
            let i = t.find(t.hash(k), k, long).expect("a key added is found");
            assert_eq!(t.get(i), (id as u32, id as u32));
        }
        for k in [
            &b"10.0.0.0x"[..],
            b"a-long-api-key-of-client-2",
            b"\0\0",
            b"xxxxxxxxxxxxxxxxx",
        ] {
            assert_eq!(t.find(t.hash(k), k, long), None, "{k:?}");
        }
        assert_eq!(size_of::<Slot>(), 32);
    }
}
