//! Where a scenario came from — a file (its relative paths resolve
//! against it) or a built-in — and the keys a recorded source names.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::builtin;
use crate::population::Population;
use crate::trace_data::{regular_file, TraceData};

/// Where a scenario came from: relative paths in it resolve against this.
#[derive(Debug, Clone)]
pub enum Origin {
    File(PathBuf),
    Builtin(&'static builtin::Builtin),
}

impl Origin {
    /// The trace named `rel` in this scenario.
    pub fn resolve(&self, rel: &str) -> Result<TraceData, String> {
        match self {
            Origin::File(path) => {
                let base = path.parent().unwrap_or(Path::new(""));
                let full = base.join(rel);
                regular_file(&full)?;
                Ok(TraceData::File(full))
            }
            Origin::Builtin(b) => builtin::file(b, rel)
                .map(TraceData::Embedded)
                .ok_or_else(|| format!("built-in scenario {} ships no such file", b.name)),
        }
    }

    pub fn shown(&self) -> String {
        match self {
            Origin::File(p) => p.display().to_string(),
            Origin::Builtin(b) => format!("built-in scenario {}", b.name),
        }
    }
}

/// The clients and addresses a recorded source (a CSV trace, an access
/// log) names, each with its id in the [`Population`]: interned once when
/// the scenario is validated, looked up on every replay. Keys are found by
/// their bytes with a fast hash (foldhash), so a key already seen costs a
/// hash and a compare, no allocation and no UTF-8 check; a source whose
/// address is its client (no address field) finds both ids at once.
#[derive(Debug, Default)]
pub struct RecordedKeys {
    /// Client → its id, and the id of the address of the same name once
    /// a request gave it as both (else [`NONE`]).
    clients: HashMap<KeyBytes, (u32, u32), foldhash::fast::FixedState>,
    ips: KeyIds,
}

/// No id yet.
const NONE: u32 = u32::MAX;

/// Key bytes → id.
pub(crate) type KeyIds = HashMap<KeyBytes, u32, foldhash::fast::FixedState>;

/// A key's bytes, in place when short (addresses, most ids), so that a
/// lookup compares them without reaching into another allocation.
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

impl PartialEq for KeyBytes {
    fn eq(&self, other: &KeyBytes) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for KeyBytes {}

impl RecordedKeys {
    /// The ids of `client` and `ip`, interned into `population` (client
    /// first) the first time this source names them; an error if one is
    /// new and not UTF-8.
    pub fn intern(
        &mut self,
        population: &mut Population,
        client: &[u8],
        ip: &[u8],
    ) -> Result<(u32, u32), std::str::Utf8Error> {
        let ids = match self.clients.get(client) {
            Some(&ids) => ids,
            None => {
                let id = population.client(std::str::from_utf8(client)?);
                self.clients.insert(client.into(), (id, NONE));
                (id, NONE)
            }
        };
        // The address field is the client field (it is not a field of its own).
        let same = std::ptr::eq(ip, client);
        if same && ids.1 != NONE {
            return Ok(ids);
        }
        let ip_id = match self.ips.get(ip) {
            Some(&id) => id,
            None => {
                let id = population.ip(std::str::from_utf8(ip)?);
                self.ips.insert(ip.into(), id);
                id
            }
        };
        if same {
            if let Some(ids) = self.clients.get_mut(client) {
                ids.1 = ip_id;
            }
        }
        Ok((ids.0, ip_id))
    }

    /// The ids of `client` and `ip`, if this source named both.
    pub fn get(&self, client: &[u8], ip: &[u8]) -> Option<(u32, u32)> {
        let &(client_id, same) = self.clients.get(client)?;
        if same != NONE && std::ptr::eq(ip, client) {
            return Some((client_id, same));
        }
        Some((client_id, *self.ips.get(ip)?))
    }

    /// How many distinct clients and addresses the source names.
    pub fn counts(&self) -> (usize, usize) {
        (self.clients.len(), self.ips.len())
    }
}
