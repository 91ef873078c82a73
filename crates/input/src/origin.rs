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
/// the scenario is validated, looked up on every replay.
#[derive(Debug, Default)]
pub struct RecordedKeys {
    clients: HashMap<Box<str>, u32>,
    ips: HashMap<Box<str>, u32>,
}

impl RecordedKeys {
    /// The ids of `client` and `ip`, interned into `population` (client
    /// first) the first time this source names them.
    pub fn intern(&mut self, population: &mut Population, client: &str, ip: &str) -> (u32, u32) {
        let client = match self.clients.get(client) {
            Some(&id) => id,
            None => {
                let id = population.client(client);
                self.clients.insert(client.into(), id);
                id
            }
        };
        let ip = match self.ips.get(ip) {
            Some(&id) => id,
            None => {
                let id = population.ip(ip);
                self.ips.insert(ip.into(), id);
                id
            }
        };
        (client, ip)
    }

    /// The ids of `client` and `ip`, if this source named both.
    pub fn get(&self, client: &str, ip: &str) -> Option<(u32, u32)> {
        Some((*self.clients.get(client)?, *self.ips.get(ip)?))
    }

    /// How many distinct clients and addresses the source names.
    pub fn counts(&self) -> (usize, usize) {
        (self.clients.len(), self.ips.len())
    }
}
