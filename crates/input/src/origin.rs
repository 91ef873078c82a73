//! Where a scenario came from — a file (its relative paths resolve
//! against it) or a built-in.

use std::path::{Path, PathBuf};

use crate::builtin;
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
