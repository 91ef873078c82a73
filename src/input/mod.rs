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
    clients: Vec<String>,
    client_ids: HashMap<String, u32>,
    ips: Vec<String>,
    ip_ids: HashMap<String, u32>,
}

fn intern(names: &mut Vec<String>, ids: &mut HashMap<String, u32>, name: &str) -> u32 {
    if let Some(&id) = ids.get(name) {
        return id;
    }
    let id = names.len() as u32;
    names.push(name.to_string());
    ids.insert(name.to_string(), id);
    id
}

impl Population {
    pub fn client(&mut self, name: &str) -> u32 {
        intern(&mut self.clients, &mut self.client_ids, name)
    }

    pub fn ip(&mut self, name: &str) -> u32 {
        intern(&mut self.ips, &mut self.ip_ids, name)
    }

    pub fn client_name(&self, id: u32) -> &str {
        &self.clients[id as usize]
    }

    pub fn ip_name(&self, id: u32) -> &str {
        &self.ips[id as usize]
    }

    pub fn clients(&self) -> usize {
        self.clients.len()
    }

    pub fn ips(&self) -> usize {
        self.ips.len()
    }
}
