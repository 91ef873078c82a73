//! `ratesim show NAME` and `ratesim init NAME [FILE]`: the built-in
//! scenarios as text to read and as files to edit.
//!
//! The shipped scenarios are embedded in the binary ([`crate::builtin`]), so
//! a user who installed ratesim has no `scenarios/` directory to open. `show`
//! prints a built-in's TOML byte for byte as shipped; `init` writes it to a
//! file, together with every file it names (the `trace` scenario's CSV),
//! placed so that its relative `path` resolves as it did: trace paths are
//! relative to the scenario file. `init` never replaces an existing file;
//! with `--force` it replaces a regular file only where that file holds
//! exactly what `init` writes (a built-in scenario or one of its shipped
//! files, unedited), so no flag overwrites a file a user wrote or edited.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::builtin::{self, Builtin};
use crate::error::{quoted, InputError};
use crate::scenario::Load as _;
use crate::scenario::Scenario;

/// The built-in scenario `name` (with or without `.toml`), or an error
/// listing the built-ins.
pub fn find(command: &str, name: &str) -> Result<&'static Builtin, InputError> {
    builtin::find(name).ok_or_else(|| {
        let names: Vec<&str> = builtin::SCENARIOS.iter().map(|b| b.name).collect();
        InputError::new(format!(
            "{command}: {} — no built-in scenario of that name; built-ins: {}",
            quoted(name),
            names.join(", ")
        ))
    })
}

/// What `init` writes: the scenario at `file` (default `NAME.toml`; inside
/// `file` when it is an existing directory or ends in `/`), then each
/// shipped file at its path relative to the scenario's directory.
pub fn plan(b: &'static Builtin, file: Option<&Path>) -> Vec<(PathBuf, &'static [u8])> {
    let own = format!("{}.toml", b.name);
    let scenario = match file {
        None => PathBuf::from(own),
        Some(f) if f.is_dir() || ends_in_separator(f) => f.join(own),
        Some(f) => f.to_path_buf(),
    };
    let base = scenario.parent().unwrap_or(Path::new("")).to_path_buf();
    let mut files = vec![(scenario, b.toml.as_bytes())];
    files.extend(b.files.iter().map(|(rel, data)| (base.join(rel), *data)));
    files
}

fn ends_in_separator(f: &Path) -> bool {
    let text = f.as_os_str().to_string_lossy();
    text.ends_with('/') || text.ends_with(std::path::MAIN_SEPARATOR)
}

/// Refuses to write over anything that exists — with `force`, over
/// anything but a regular file holding exactly what `init` writes. Checks
/// every target before any is written, so a refusal writes nothing.
pub(crate) fn check_targets(targets: &[(PathBuf, &[u8])], force: bool) -> Result<(), InputError> {
    let mut existing = Vec::new();
    let mut edited = Vec::new();
    for (path, _) in targets {
        let Ok(meta) = fs::symlink_metadata(path) else {
            continue;
        };
        let kind = meta.file_type();
        if !kind.is_file() {
            let what = if kind.is_dir() {
                "a directory"
            } else if kind.is_symlink() {
                "a symbolic link"
            } else {
                "not a regular file"
            };
            return Err(InputError::new(format!(
                "{}: exists and is {what}; init writes only regular files — name another FILE",
                path.display()
            )));
        }
        if !is_ratesims(path) {
            edited.push(path.display().to_string());
        }
        existing.push(path.display().to_string());
    }
    if existing.is_empty() || (force && edited.is_empty()) {
        return Ok(());
    }
    if force {
        return Err(InputError::new(format!(
            "{}: exists and is not a file ratesim init wrote (it differs from every built-in scenario and shipped file); \
             ratesim never overwrites a file it did not write — move it away, or name another FILE (ratesim init NAME FILE)",
            edited.join(", ")
        )));
    }
    let verb = if existing.len() == 1 {
        "exists"
    } else {
        "exist"
    };
    Err(InputError::new(format!(
        "{}: already {verb} — name another FILE (ratesim init NAME FILE); --force overwrites only a file that holds exactly what ratesim init writes",
        existing.join(", ")
    )))
}

/// Whether the file at `path` holds exactly one of the files `init`
/// writes: a built-in scenario's text or one of its shipped files.
fn is_ratesims(path: &Path) -> bool {
    let shipped = || {
        builtin::SCENARIOS
            .iter()
            .flat_map(|b| std::iter::once(b.toml.as_bytes()).chain(b.files.iter().map(|f| f.1)))
    };
    let largest = shipped().map(<[u8]>::len).max().unwrap_or(0) as u64;
    // A file larger than every shipped one is not one of them: unread.
    if fs::metadata(path).map_or(true, |m| m.len() > largest) {
        return false;
    }
    let Ok(bytes) = fs::read(path) else {
        return false;
    };
    shipped().any(|data| data == bytes.as_slice())
}

/// `ratesim show NAME`: the TOML on stdout exactly as shipped; a note on
/// stderr when the scenario reads other files, so stdout stays byte-exact
/// (`ratesim show trace > t.toml` is the shipped file).
pub fn show(name: &str) -> anyhow::Result<()> {
    let b = find("show", name)?;
    let mut out = io::stdout().lock();
    out.write_all(b.toml.as_bytes())?;
    out.flush()?;
    if !b.files.is_empty() {
        let names: Vec<&str> = b.files.iter().map(|(p, _)| *p).collect();
        let _ = writeln!(
            io::stderr(),
            "note: {name} also reads {files} (its path is relative to the scenario file), shipped inside ratesim; `ratesim init {name}` writes the scenario with {files} beside it",
            name = b.name,
            files = names.join(", "),
        );
    }
    Ok(())
}

/// `ratesim init NAME [FILE]`: writes the scenario and its files, then says
/// what was written and what to run next. Returns the paths written.
pub fn init(name: &str, file: Option<&Path>, force: bool) -> anyhow::Result<Vec<PathBuf>> {
    let b = find("init", name)?;
    let targets = plan(b, file);
    check_targets(&targets, force)?;
    for (path, data) in &targets {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)
                .with_context(|| format!("cannot create directory {}", dir.display()))?;
        }
        fs::write(path, data).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(targets.into_iter().map(|(p, _)| p).collect())
}

/// `init`, with its report on stdout.
pub(crate) fn init_command(name: &str, file: Option<&Path>, force: bool) -> anyhow::Result<()> {
    let written = init(name, file, force)?;
    let b = find("init", name)?;
    let out_dir = Scenario::load(b.name)
        .map(|s| s.default_out_dir())
        .unwrap_or_else(|_| Path::new("output").join(b.name));
    let mut out = io::stdout().lock();
    let scenario = &written[0];
    writeln!(
        out,
        "wrote {} (built-in scenario {})",
        scenario.display(),
        b.name
    )?;
    for path in &written[1..] {
        writeln!(
            out,
            "wrote {} (read by the scenario; its path is relative to the scenario file)",
            path.display()
        )?;
    }
    writeln!(
        out,
        "next: edit it, then run\n  ratesim run {}\n(results go to {} under the directory you run it from)",
        shell_word(&scenario.display().to_string()),
        out_dir.display()
    )?;
    out.flush()?;
    Ok(())
}

/// `s` as one shell word: as is when it holds only safe characters, else
/// in single quotes.
fn shell_word(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "._-/+,:@=%".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_name_lists_the_built_ins() {
        let e = find("show", "nope").unwrap_err();
        assert!(e.message().contains("boundary"), "{e}");
        assert!(e.message().contains("trace"), "{e}");
    }

    #[test]
    fn the_trace_lands_beside_the_scenario_whatever_its_name() {
        let b = builtin::find("trace").unwrap();
        let p = plan(b, Some(Path::new("exp/replay.toml")));
        let paths: Vec<&Path> = p.iter().map(|(p, _)| p.as_path()).collect();
        assert_eq!(
            paths,
            [
                Path::new("exp/replay.toml"),
                Path::new("exp/traces/sample.csv")
            ]
        );
        let p = plan(b, Some(Path::new("new/")));
        assert_eq!(p[0].0, Path::new("new/trace.toml"));
        assert_eq!(p[1].0, Path::new("new/traces/sample.csv"));
        let p = plan(b, None);
        assert_eq!(p[0].0, Path::new("trace.toml"));
        assert_eq!(p[1].0, Path::new("traces/sample.csv"));
    }

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(shell_word("a/b.toml"), "a/b.toml");
        assert_eq!(shell_word("my run.toml"), "'my run.toml'");
        assert_eq!(shell_word("it's.toml"), "'it'\\''s.toml'");
    }
}
