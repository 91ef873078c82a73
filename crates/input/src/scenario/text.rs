//! A scenario before validation: its text, where it came from, and its
//! TOML table — the layer `--set` and `--vary` change (docs/semantics.md §7).
//!
//! `ratesim run S --set PATH=VALUE` reads S as text, parses the TOML table,
//! applies the overrides ([`crate::overrides::apply`]) and only then
//! validates, so an overridden value is checked exactly as if the file said
//! it, and `summary.json`'s scenario echo shows it. `ratesim sweep` keeps
//! one [`ScenarioFile`] and builds each point's scenario from a copy of its
//! table.

use std::path::Path;

use toml::Table;

use super::{Origin, Scenario};
use crate::builtin;
use crate::error::InputError;
use crate::overrides::{self, Override};
use crate::scenario::Load as _;

/// A scenario file (or built-in) as read, not yet validated.
#[derive(Debug, Clone)]
pub struct ScenarioFile {
    /// The TOML text exactly as read.
    pub text: String,
    /// The default name: the file's stem, or the built-in's name.
    pub stem: String,
    pub origin: Origin,
    /// How error messages name it: the argument, or `built-in NAME`.
    pub place: String,
}

/// Parses TOML text into a table, as a bad-input error when it is not TOML.
pub(crate) fn parse_toml(text: &str) -> Result<Table, InputError> {
    text.parse().map_err(|e: toml::de::Error| {
        let mut message = format!(
            "not valid TOML: {}",
            crate::error::quote_lines(e.to_string().trim_end())
        );
        if e.message().contains("number too large") {
            message.push_str(&too_large(text, e.span()));
        }
        InputError::new(message)
    })
}

/// What to say after TOML's "number too large to fit in target type": the
/// field, where the line names one, and what TOML's integers hold.
fn too_large(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    let field = span
        .and_then(|s| {
            let start = text[..s.start.min(text.len())]
                .rfind('\n')
                .map_or(0, |i| i + 1);
            let line = text[start..].lines().next()?;
            let (key, _) = line.split_once('=')?;
            let key = key.trim();
            (!key.is_empty()).then(|| format!("{key}: "))
        })
        .unwrap_or_default();
    format!(
        "\n{field}a TOML integer is at most {} — a count takes 1 to {}, a seed 0 to {}",
        i64::MAX,
        crate::fields::MAX_COUNT,
        i64::MAX
    )
}

impl ScenarioFile {
    /// The scenario file itself, for the rule that a run directory never
    /// holds its own input (see the staging of a run directory); none for a built-in.
    pub fn inputs(&self) -> Vec<std::path::PathBuf> {
        match &self.origin {
            Origin::File(path) => vec![path.clone()],
            Origin::Builtin(_) => Vec::new(),
        }
    }

    /// Reads the scenario named by `arg`: a path to a TOML file, or the name
    /// of a built-in scenario (as [`Scenario::load`]).
    pub fn read(arg: &str) -> Result<ScenarioFile, InputError> {
        let path = Path::new(arg);
        if path.is_file() {
            let text = std::fs::read_to_string(path)
                .map_err(|e| InputError::new(format!("{arg}: cannot be read: {e}")))?;
            let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
            return Ok(ScenarioFile {
                text,
                stem: stem.unwrap_or_else(|| "scenario".into()),
                origin: Origin::File(path.to_path_buf()),
                place: arg.to_string(),
            });
        }
        if let Some(b) = builtin::find(arg) {
            return Ok(ScenarioFile {
                text: b.toml.to_string(),
                stem: b.name.to_string(),
                origin: Origin::Builtin(b),
                place: format!("built-in {}", b.name),
            });
        }
        // Neither a file nor a built-in: `load` says so, listing the built-ins.
        match Scenario::load(arg) {
            Err(e) => Err(e),
            Ok(_) => Err(InputError::new(format!(
                "{arg}: appeared while being read; run again"
            ))),
        }
    }

    /// The scenario's TOML table.
    pub fn table(&self) -> Result<Table, InputError> {
        parse_toml(&self.text).map_err(|e| e.within(&self.place))
    }

    /// Validates `table` (this file's table, perhaps overridden).
    pub fn scenario(&self, table: &Table) -> Result<Scenario, InputError> {
        Scenario::parse_table(table, &self.stem, self.origin.clone())
            .map_err(|e| e.within(&self.place))
    }

    /// This file's table with `overrides` applied, validated.
    pub fn with(&self, overrides: &[Override]) -> Result<Scenario, InputError> {
        self.with_table(self.table()?, overrides)
    }

    /// `table` (this file's, perhaps already overridden) with `overrides`
    /// applied, validated. An error the overrides caused names the one
    /// that caused it, as typed (`--set nosuch=1: nosuch: unknown field …`,
    /// issue 23 item 7); an error `table` has without them names the file.
    pub fn with_table(&self, table: Table, overrides: &[Override]) -> Result<Scenario, InputError> {
        let mut changed = table.clone();
        let paths = overrides::apply(&mut changed, overrides)?;
        let parse = |t: &Table| Scenario::parse_table(t, &self.stem, self.origin.clone());
        let e = match parse(&changed) {
            Ok(s) => return Ok(s),
            Err(e) => e,
        };
        let blame =
            |o: &Override, e: &InputError| InputError::new(format!("{}: {}", o.arg, e.message()));
        // The last override of the field the message names…
        let names = |path: &str| {
            e.message()
                .strip_prefix(path)
                .is_some_and(|rest| rest.starts_with([':', '.', '[', ' ']))
        };
        if let Some((o, _)) = overrides.iter().zip(&paths).rev().find(|(_, p)| names(p)) {
            return Err(blame(o, &e));
        }
        // …else the first one without which the scenario is valid (an
        // error of the file itself stays the file's).
        let mut t = table;
        if parse(&t).is_ok() {
            for o in overrides {
                overrides::apply(&mut t, std::slice::from_ref(o))?;
                if let Err(e) = parse(&t) {
                    return Err(blame(o, &e));
                }
            }
        }
        Err(e.within(&self.place))
    }
}
