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

#[cfg(test)]
mod tests {
    use super::*;

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
}
