//! `run.json`: how a run was asked for — the command line and the
//! scenario's text as read — so that `report.html` can show them when it
//! is redrawn from the run directory alone (`ratesim plot`).

use serde::{Deserialize, Serialize};

/// What `ratesim run` was given. Nothing here varies between two runs of
/// the same command (no time, no host), so a run directory stays byte for
/// byte the same.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Invocation {
    /// The version that ran.
    pub ratesim_version: String,
    /// The command line, `ratesim` first (not the path of the binary).
    pub command: Vec<String>,
    /// The scenario's TOML exactly as read, before any `--set`; empty when
    /// the scenario was built in code (`ratesim explain`).
    #[serde(default)]
    pub scenario_text: String,
    /// The key partition the run simulated (`run --keys K/N`); absent for
    /// a whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<KeyShare>,
}

/// Partition `k` of `n` of a run's keys, by the field `by` (`client` or
/// `ip`), under the seed `seed` (docs/semantics.md §12): what joining the
/// partitions of one run checks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyShare {
    pub k: u64,
    pub n: u64,
    pub by: String,
    pub seed: u64,
}

impl Invocation {
    /// This process's command line, its first word replaced by `ratesim`.
    pub fn of_process(scenario_text: String) -> Invocation {
        let command = std::iter::once("ratesim".to_string())
            .chain(std::env::args().skip(1))
            .collect();
        Invocation {
            ratesim_version: env!("CARGO_PKG_VERSION").to_string(),
            command,
            scenario_text,
            keys: None,
        }
    }

    /// The command line as one line a shell reads back the same: a word
    /// with anything but letters, digits and `-_./=:,@%+` single-quoted.
    pub fn command_line(&self) -> String {
        self.command
            .iter()
            .map(|w| shell_word(w))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Reads `dir/run.json`; `None` when it is absent or unreadable (a run
    /// directory from before it, or one written by `ratesim explain`).
    pub fn read(dir: &std::path::Path) -> Option<Invocation> {
        let text = std::fs::read_to_string(dir.join(crate::RUN_JSON)).ok()?;
        serde_json::from_str(&text).ok()
    }
}

fn shell_word(w: &str) -> String {
    let plain = !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c));
    if plain {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_quotes_only_the_words_a_shell_would_split() {
        let i = Invocation {
            ratesim_version: "0".into(),
            command: vec![
                "ratesim".into(),
                "run".into(),
                "boundary".into(),
                "--set".into(),
                "limiter[api].rate=10/1s".into(),
                "it's".into(),
            ],
            scenario_text: String::new(),
            keys: None,
        };
        assert_eq!(
            i.command_line(),
            r"ratesim run boundary --set 'limiter[api].rate=10/1s' 'it'\''s'"
        );
    }
}
