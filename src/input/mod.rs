//! The input vocabulary: what every part of a scenario file is parsed with.
//!
//! It sits below both the scenario schema and the traffic patterns, so each traffic pattern parses its own
//! table without importing the schema that lists it: [`fields::Fields`]
//! walks a TOML table with errors that name the field's path; [`Defaults`]
//! is the policy every limiter and pattern defaults from; [`Origin`] is
//! where a scenario came from (so a trace's path resolves against it) and
//! [`TraceData`] where a trace's bytes live; [`Population`] interns client
//! and address names to dense ids.
//!
//! It imports only [`crate::clock`], [`crate::error`] and
//! [`crate::builtin`].

pub mod fields;
mod trace_data;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::builtin;
use crate::clock::Nanos;
pub use trace_data::{regular_file, TraceData};

/// The policy every limiter derives its defaults from, and that
/// `peak_in_window` is held against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Defaults {
    pub limit: u64,
    pub window: Nanos,
}

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

/// Every client and address named in a scenario, interned to dense ids so
/// limiters index their per-key state without hashing.
#[derive(Debug, Clone, Default)]
pub struct Population {
    clients: Names,
    ips: Names,
}

/// Interned names, each stored once: the names end to end in one string,
/// found by a hash of the name (about 40 bytes a name, not the 150 of a
/// `Vec<String>` beside a `HashMap<String, u32>`).
#[derive(Debug, Clone, Default)]
struct Names {
    text: String,
    /// Where each name ends in `text`.
    ends: Vec<usize>,
    /// Hash of a name → the first name with that hash…
    by_hash: HashMap<u64, u32>,
    /// …and the rare later names whose hash an earlier name has.
    collided: HashMap<String, u32>,
}

impl Names {
    fn hash(name: &str) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::hash::DefaultHasher::new();
        name.hash(&mut h);
        h.finish()
    }

    fn name(&self, id: u32) -> &str {
        let i = id as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn intern(&mut self, name: &str) -> u32 {
        let h = Names::hash(name);
        let id = self.ends.len() as u32;
        match self.by_hash.get(&h) {
            Some(&first) if self.name(first) == name => return first,
            Some(_) => {
                if let Some(&other) = self.collided.get(name) {
                    return other;
                }
                self.collided.insert(name.to_string(), id);
            }
            None => {
                self.by_hash.insert(h, id);
            }
        }
        self.text.push_str(name);
        self.ends.push(self.text.len());
        id
    }
}

impl Population {
    pub fn client(&mut self, name: &str) -> u32 {
        self.clients.intern(name)
    }

    pub fn ip(&mut self, name: &str) -> u32 {
        self.ips.intern(name)
    }

    pub fn client_name(&self, id: u32) -> &str {
        self.clients.name(id)
    }

    pub fn ip_name(&self, id: u32) -> &str {
        self.ips.name(id)
    }

    pub fn clients(&self) -> usize {
        self.clients.len()
    }

    pub fn ips(&self) -> usize {
        self.ips.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_intern_to_dense_ids_and_back_even_when_hashes_collide() {
        let mut n = Names::default();
        assert_eq!((n.intern("a"), n.intern("bb"), n.intern("a")), (0, 1, 0));
        // Pretend "ccc" hashes like "a".
        n.by_hash.insert(Names::hash("ccc"), 0);
        assert_eq!((n.intern("ccc"), n.intern("ccc"), n.intern("a")), (2, 2, 0));
        assert_eq!([n.name(0), n.name(1), n.name(2)], ["a", "bb", "ccc"]);
        assert_eq!(n.len(), 3);
    }
}
