//! Writing a run directory all or nothing, and never over someone's files.
//!
//! Every result file is written into a hidden staging directory beside the
//! target (`.NAME.tmp-PID`) and moved into place only when all of them are
//! complete, so a failed or interrupted run never leaves a half-written
//! result set and an earlier result at the target stays intact until the
//! new one is whole.
//!
//! - **Whose directory.** ratesim marks each run directory with a
//!   [`MARKER`] file (its version, the scenario's name, and every file it
//!   wrote there with its size and the XXH3-128 hash of its bytes,
//!   [`crate::rundir::marker`]). An existing target is replaced only if it
//!   is empty, or if it carries the marker and holds nothing but the files
//!   the marker lists, as they were written; anything else — a file of
//!   yours, even one named like ratesim's — is refused (exit 2, nothing
//!   touched), whatever the flags: no flag deletes or overwrites a file
//!   ratesim did not write. The check is made again just before the
//!   replacement (a file added while the run was simulating is found
//!   then), and the earlier result is removed file by file — only the
//!   listed files, then the empty directory — so even a file that appears
//!   between the check and the removal is left where it was.
//! - **Never over its own input.** A target that is, or holds, the
//!   scenario file or a file the scenario reads (a trace, an access log)
//!   is refused: `--out .` beside the scenario, or any ancestor of it.
//! - **Signals.** On SIGINT, SIGTERM or SIGHUP the staging directories of
//!   this process are removed and it exits 130, 143 or 129.
//! - **SIGKILL.** Nothing can clean up after it, so the next run to the
//!   same target removes staging directories whose process no longer
//!   exists (and puts back an earlier result caught mid-replacement) —
//!   only a directory that carries the marker (a staging directory is
//!   marked when it is made) or is empty, and in it only the files
//!   ratesim writes (a staging directory's by their names, as its marker
//!   lists none until the commit): a directory of someone's that merely
//!   has such a name is left as it is.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};

use anyhow::Context;

use crate::error::InputError;

use crate::rundir::is_own_file;
use crate::rundir::marker::{self, Marker};
pub use crate::rundir::MARKER;

/// The staging directories of this process, removed on a signal. Held
/// while a staging directory is moved into place, so a signal never
/// interrupts a replacement half-way.
static ACTIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static HANDLERS: Once = Once::new();

/// A temporary directory that becomes the directory `target` on
/// [`Staging::commit`]; dropped uncommitted, it is removed.
pub(crate) struct Staging {
    target: PathBuf,
    tmp: PathBuf,
    old: PathBuf,
}

impl Staging {
    /// Checks that `target` may be written (see the module docs) and holds
    /// none of `inputs` (the files the run reads), removes stale staging
    /// directories of dead processes beside it, and creates this run's
    /// staging directory.
    pub fn new(target: &Path, inputs: &[PathBuf]) -> anyhow::Result<Staging> {
        let bad =
            |why: String| InputError::new(format!("output directory {}: {why}", target.display()));
        // First, as it is the weightier reason: `--out .` beside the
        // scenario holds it.
        check_not_over_inputs(target, inputs).map_err(bad)?;
        let name = target
            .file_name()
            .filter(|n| *n != "." && *n != "..")
            .ok_or_else(|| bad("names no directory; give a path such as output/run1".into()))?
            .to_string_lossy()
            .into_owned();
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        remove_stale(&parent, &name, target);
        check_replaceable(target).map_err(bad)?;
        fs::create_dir_all(&parent).map_err(|e| bad(format!("cannot be created: {e}")))?;
        install_handlers();
        let pid = std::process::id();
        let tmp = parent.join(format!(".{name}.tmp-{pid}"));
        let old = parent.join(format!(".{name}.old-{pid}"));
        // A directory of this very name is an earlier process's of the
        // same pid: removed only if it is ratesim's (see `remove_ours`).
        remove_ours(&tmp, true);
        {
            // Made and listed under the lock: a signal between the two
            // would otherwise leave a directory no handler knows of.
            let mut active = lock();
            fs::create_dir(&tmp).map_err(|e| {
                bad(format!(
                    "cannot be written: {} cannot be made: {e}",
                    crate::error::quoted(&tmp.display().to_string())
                ))
            })?;
            active.push(tmp.clone());
        }
        // Marked from the start, so that a staging directory left by a
        // SIGKILL is known as ratesim's; `commit` writes the final marker.
        if let Err(e) = fs::write(tmp.join(MARKER), STAGING_MARK) {
            let _ = fs::remove_dir_all(&tmp);
            lock().retain(|p| *p != tmp);
            return Err(bad(format!("cannot be written: {e}")).into());
        }
        Ok(Staging {
            target: target.to_path_buf(),
            tmp,
            old,
        })
    }

    /// Where to write the results.
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// Marks the staged directory as a run of `scenario` and moves it into
    /// place, replacing the earlier target.
    pub fn commit(self, scenario: &str) -> anyhow::Result<()> {
        let head = format!(
            "ratesim {} run directory\nscenario = {}\n",
            env!("CARGO_PKG_VERSION"),
            scenario.escape_debug()
        );
        marker::write(&self.tmp, &head).with_context(|| format!("cannot write {MARKER}"))?;
        let mut active = lock();
        // Again, now: the user may have put a file there while the run was
        // simulating. Dropping `self` removes the staged results.
        check_replaceable(&self.target).map_err(|why| {
            InputError::new(format!("output directory {}: {why}", self.target.display()))
        })?;
        let had_old = self.target.exists();
        if had_old {
            if self.old.exists() {
                let _ = remove_own(&self.old, false);
            }
            fs::rename(&self.target, &self.old)
                .with_context(|| format!("cannot replace {}", self.target.display()))?;
        }
        if let Err(e) = fs::rename(&self.tmp, &self.target) {
            if had_old {
                let _ = fs::rename(&self.old, &self.target);
            }
            return Err(e)
                .with_context(|| format!("cannot move results into {}", self.target.display()));
        }
        active.retain(|p| *p != self.tmp);
        drop(active);
        if had_old {
            remove_own(&self.old, false)?;
        }
        Ok(())
    }
}

impl Drop for Staging {
    /// Whatever ends the run early — an error, or a panic unwinding —
    /// removes the half-written results. After `commit` there is nothing
    /// left here to remove.
    fn drop(&mut self) {
        let mut active = lock();
        active.retain(|p| *p != self.tmp);
        let _ = fs::remove_dir_all(&self.tmp);
    }
}

fn lock() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    // A panic while holding the list leaves it usable: it is only paths.
    ACTIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why `target` may not be replaced, if it may not.
fn check_replaceable(target: &Path) -> Result<(), String> {
    let meta = match fs::symlink_metadata(target) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot be read: {e}")),
        Ok(m) => m,
    };
    if meta.file_type().is_symlink() {
        // Moving results into place would replace the link itself.
        return Err(
            "is a symbolic link; ratesim writes a run directory in place of a real \
                    directory only — give the path it points to, or choose another --out"
                .into(),
        );
    }
    if !meta.is_dir() {
        return Err("exists and is not a directory; choose another --out".into());
    }
    let marker = Marker::read(target).map_err(|e| format!("cannot be read: {e}"))?;
    let entries = fs::read_dir(target).map_err(|e| format!("cannot be read: {e}"))?;
    let mut foreign = Vec::new();
    let mut all = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot be read: {e}"))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let own = match &marker {
            Some(m) => {
                name == MARKER || m.wrote(target, &name) || marker::is_leftover(target, &name)
            }
            None => false,
        };
        if !own {
            foreign.push(name.clone());
        }
        all.push(name);
    }
    if foreign.is_empty() {
        return Ok(());
    }
    let some = if foreign.len() == 1 { "it" } else { "them" };
    // At most three names, sorted, and how many more.
    let named = |mut names: Vec<String>| {
        names.sort();
        let shown: Vec<String> = names
            .iter()
            .take(3)
            .map(|n| crate::error::quoted(n))
            .collect();
        let more = names.len().saturating_sub(3);
        format!(
            "{}{}",
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        )
    };
    let never = "ratesim never deletes or overwrites a file it did not write, whatever the flags";
    let marker_is_odd = fs::symlink_metadata(target.join(MARKER)).is_ok();
    Err(match &marker {
        // Without the marker nothing in it is ratesim's, whatever its name.
        None => format!(
            "exists and is not a ratesim run directory ({}): it holds {}; {never}: choose \
             another --out (a new or empty directory, or an earlier run's), or move those files away",
            if marker_is_odd {
                format!("its {MARKER} is not a regular file")
            } else {
                format!("no {MARKER} file")
            },
            named(all)
        ),
        Some(m) if !m.lists_files() => format!(
            "carries the {MARKER} marker of an earlier ratesim, which did not list the files \
             it wrote, so they cannot be told from yours: it holds {}; {never}: delete the \
             directory yourself if nothing in it is yours, or choose another --out",
            named(foreign)
        ),
        // A name ratesim writes is not enough: the marker lists each file
        // with its size and hash (docs/semantics.md §3).
        Some(_) => format!(
            "is a ratesim run directory but also holds {} that ratesim did not write \
             (or that changed since ratesim wrote {some}); {never}: choose another --out \
             (a new or empty directory, or an earlier run's), or move {some} away",
            named(foreign)
        ),
    })
}

/// Why `target` may not be written because it is, or holds, one of
/// `inputs`, if so. Only an existing target can hold anything.
fn check_not_over_inputs(target: &Path, inputs: &[PathBuf]) -> Result<(), String> {
    let Ok(target) = target.canonicalize() else {
        return Ok(());
    };
    for input in inputs {
        let Ok(full) = input.canonicalize() else {
            continue;
        };
        if full.starts_with(&target) {
            return Err(format!(
                "{} {}, which this run reads; choose another --out",
                if full == target { "is" } else { "holds" },
                crate::error::quoted(&input.display().to_string())
            ));
        }
    }
    Ok(())
}

/// Removes a replaced run directory (or a staging directory left behind):
/// the files its marker lists as ratesim wrote them — in a staging
/// directory (`staged`: a `.NAME.tmp-PID`) whose marker is a staging
/// directory's, which lists none yet, the files of the names ratesim
/// writes and the decision log's parts of a run cut short — then the
/// marker, then the directory if that left it empty. Anything else is
/// kept, and the directory with it, named in the error. A replaced result
/// is never `staged`: nothing in it is taken by its name alone.
fn remove_own(dir: &Path, staged: bool) -> anyhow::Result<()> {
    let marker = Marker::read(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    let staging = staged
        && marker
            .as_ref()
            .and_then(Marker::only_head)
            .is_some_and(is_staging_mark);
    let entries = fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    let mut marked = false;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_file = entry.file_type().map(|t| t.is_file()).unwrap_or(false);
        marked |= name == MARKER && is_file;
        let own = match &marker {
            Some(m) if m.lists_files() => m.wrote(dir, &name) || marker::is_leftover(dir, &name),
            Some(_) if staging => is_file && (is_own_file(&name) || is_decision_part(&name)),
            _ => false,
        };
        if own && name != MARKER {
            fs::remove_file(entry.path())
                .with_context(|| format!("cannot remove {}", entry.path().display()))?;
        }
    }
    if marked && fs::read_dir(dir).is_ok_and(|d| d.count() == 1) {
        let _ = fs::remove_file(dir.join(MARKER));
    }
    fs::remove_dir(dir).with_context(|| {
        format!(
            "the earlier results were replaced, but {} also held files ratesim did not write; they are kept there",
            dir.display()
        )
    })
}

fn is_empty_dir(p: &Path) -> bool {
    fs::read_dir(p)
        .map(|mut d| d.next().is_none())
        .unwrap_or(false)
}

/// What a staging directory's marker says until the run is committed.
const STAGING_MARK: &str = concat!(
    "ratesim ",
    env!("CARGO_PKG_VERSION"),
    " staging directory (not yet a run directory)\n"
);

/// Whether `text` is the marker of a staging directory, written by this
/// ratesim or by another version (`ratesim VERSION staging directory …`):
/// a run of an earlier version killed by SIGKILL left one too, and only
/// its files of the names a run writes are removed.
fn is_staging_mark(text: &str) -> bool {
    let (head, tail) = STAGING_MARK.split_at("ratesim ".len());
    let tail = &tail[env!("CARGO_PKG_VERSION").len()..];
    text.strip_prefix(head)
        .and_then(|t| t.strip_suffix(tail))
        .is_some_and(|version| !version.is_empty() && !version.contains(char::is_whitespace))
}

/// Whether `dir` is a directory ratesim made beside a target: a directory
/// (not a link to one) that carries the marker, or is empty.
fn is_ours(dir: &Path) -> bool {
    let is_dir = fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir());
    let marked = fs::symlink_metadata(dir.join(MARKER)).is_ok_and(|m| m.is_file());
    is_dir && (marked || is_empty_dir(dir))
}

/// Removes `dir` as [`remove_own`] does, if [`is_ours`].
fn remove_ours(dir: &Path, staged: bool) {
    if is_ours(dir) {
        // Best effort: what stays is taken by a later run.
        let _ = remove_own(dir, staged);
    }
}

/// `decisions.partN.csv`: a limiter's decision log while a run writes it
/// (joined into `decisions.csv` before the commit).
fn is_decision_part(name: &str) -> bool {
    name.strip_prefix("decisions.part")
        .and_then(|n| n.strip_suffix(".csv"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Removes `.NAME.tmp-PID` and `.NAME.old-PID` beside `target` left by
/// processes that no longer exist (a SIGKILL, a power cut), if they are
/// ratesim's ([`remove_ours`]). An `old-PID` directory is an earlier
/// result caught between its two renames: it is put back if the target
/// is missing.
fn remove_stale(parent: &Path, name: &str, target: &Path) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    let tmp_prefix = format!(".{name}.tmp-");
    let old_prefix = format!(".{name}.old-");
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let (pid, is_old) = if let Some(p) = file.strip_prefix(&tmp_prefix) {
            (p, false)
        } else if let Some(p) = file.strip_prefix(&old_prefix) {
            (p, true)
        } else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        if pid == std::process::id() || process_alive(pid) {
            continue;
        }
        let path = entry.path();
        if !is_ours(&path) {
            // Someone's directory that only has such a name.
            continue;
        }
        if is_old {
            // An earlier result, checked to be ratesim's before it moved.
            if target.exists() || fs::rename(&path, target).is_err() {
                remove_ours(&path, false);
            }
            continue;
        }
        remove_ours(&path, true);
    }
}

/// Whether process `pid` exists. Where that cannot be known (no `/proc`),
/// every process is taken to be alive, so nothing is removed.
fn process_alive(pid: u32) -> bool {
    if !Path::new("/proc/self").exists() {
        return true;
    }
    Path::new(&format!("/proc/{pid}")).exists()
}

/// On SIGINT, SIGTERM or SIGHUP: remove this process's staging directories
/// and exit 128 + the signal's number (130, 143, 129).
fn install_handlers() {
    HANDLERS.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            // Without handlers a signal ends the run as it always did; the
            // next run removes what it left.
            return;
        };
        std::thread::spawn(move || {
            if let Some(signal) = signals.forever().next() {
                let active = lock();
                for dir in active.iter() {
                    remove_while_written(dir);
                }
                // Exit holding the lock: no commit may start after this.
                std::process::exit(128 + signal);
            }
        });
    });
}

/// Removes `dir` although other threads may still be writing into it:
/// a file made while the tree is removed fails the last step, which is
/// tried again, for up to a second.
fn remove_while_written(dir: &Path) {
    for _ in 0..200 {
        match fs::remove_dir_all(dir) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                std::thread::sleep(std::time::Duration::from_millis(5))
            }
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(files: &[&str]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for f in files {
            fs::write(d.path().join(f), "x").unwrap();
        }
        d
    }

    #[test]
    fn a_missing_or_empty_target_may_be_written() {
        let d = tempfile::tempdir().unwrap();
        assert!(check_replaceable(&d.path().join("new")).is_ok());
        assert!(check_replaceable(d.path()).is_ok());
    }

    #[test]
    fn a_directory_with_summary_json_but_no_marker_is_refused() {
        // Robustness issue 1: `--out proj` deleted proj/src/main.rs because
        // proj held a summary.json.
        let d = dir_with(&["summary.json", "main.rs"]);
        let why = check_replaceable(d.path()).unwrap_err();
        assert!(why.contains("no .ratesim-run"), "{why}");
        assert!(!why.contains("--force"), "no flag replaces it: {why}");
        // It names what the directory holds.
        assert!(
            why.contains("it holds \"main.rs\", \"summary.json\";"),
            "{why}"
        );
        let d = dir_with(&["a", "b", "c", "d", "e"]);
        let why = check_replaceable(d.path()).unwrap_err();
        assert!(
            why.contains("it holds \"a\", \"b\", \"c\" and 2 more;"),
            "{why}"
        );
    }

    /// A directory of `files` whose marker lists them as ratesim's.
    fn run_dir_with(files: &[&str]) -> tempfile::TempDir {
        let d = dir_with(files);
        marker::write(d.path(), "ratesim run directory\n").unwrap();
        d
    }

    #[test]
    fn a_run_directory_with_a_users_file_is_refused_naming_the_file() {
        let d = run_dir_with(&["summary.csv", "timeline.png"]);
        fs::write(d.path().join("notes.txt"), "mine").unwrap();
        let why = check_replaceable(d.path()).unwrap_err();
        assert!(why.contains("\"notes.txt\""), "{why}");
        assert!(!why.contains("timeline.png"), "{why}");
        let clean = run_dir_with(&["summary.csv", "timeline.png", "summary.md"]);
        assert!(check_replaceable(clean.path()).is_ok());
    }

    // Audit: a recommended.toml of the user's, saved into an earlier sweep
    // directory, was deleted by the next sweep to it — its name is one
    // ratesim writes.
    #[test]
    fn a_users_file_with_a_name_ratesim_writes_is_refused() {
        let d = run_dir_with(&["summary.csv"]);
        fs::write(d.path().join("recommended.toml"), "mine").unwrap();
        let why = check_replaceable(d.path()).unwrap_err();
        assert!(why.contains("\"recommended.toml\""), "{why}");
        assert!(!why.contains("summary.csv"), "{why}");
        // One of ratesim's, changed since it was written, is the user's.
        fs::remove_file(d.path().join("recommended.toml")).unwrap();
        assert!(check_replaceable(d.path()).is_ok());
        fs::write(d.path().join("summary.csv"), "my edit").unwrap();
        let why = check_replaceable(d.path()).unwrap_err();
        assert!(
            why.contains("\"summary.csv\"") && why.contains("changed since"),
            "{why}"
        );
        assert!(remove_own(d.path(), false).is_err());
        assert_eq!(
            fs::read_to_string(d.path().join("summary.csv")).unwrap(),
            "my edit"
        );
    }

    #[test]
    fn a_marker_that_lists_no_files_replaces_nothing() {
        let d = dir_with(&[MARKER, "summary.csv"]);
        let why = check_replaceable(d.path()).unwrap_err();
        assert!(
            why.contains("earlier ratesim") && why.contains("\"summary.csv\""),
            "{why}"
        );
        // The marker alone is nothing to lose.
        let d = dir_with(&[MARKER]);
        assert!(check_replaceable(d.path()).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn a_link_to_a_directory_is_refused_as_a_link() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real");
        fs::create_dir(&real).unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let e = check_replaceable(&link).unwrap_err();
        assert!(e.starts_with("is a symbolic link"), "{e}");
        assert!(check_replaceable(&real).is_ok());
    }

    #[test]
    fn a_file_is_never_replaced() {
        let d = dir_with(&["out"]);
        assert!(check_replaceable(&d.path().join("out")).is_err());
    }

    #[test]
    fn a_target_holding_an_input_is_refused() {
        // Issue 21: `run base.toml --out . --force` deleted base.toml.
        let d = dir_with(&["base.toml"]);
        fs::create_dir(d.path().join("traces")).unwrap();
        fs::write(d.path().join("traces/t.csv"), "time,client\n").unwrap();
        let inputs = [d.path().join("base.toml"), d.path().join("traces/t.csv")];
        let why = check_not_over_inputs(d.path(), &inputs).unwrap_err();
        assert!(why.contains("base.toml") && why.contains("reads"), "{why}");
        let why = check_not_over_inputs(&d.path().join("traces"), &inputs).unwrap_err();
        assert!(why.contains("t.csv"), "{why}");
        // A directory this run reads (`sweep merge a b --out a`) is it.
        let why = check_not_over_inputs(&d.path().join("traces"), &[d.path().join("traces")])
            .unwrap_err();
        assert!(why.starts_with("is \""), "{why}");
        assert!(check_not_over_inputs(&d.path().join("out"), &inputs).is_ok());
    }

    #[test]
    fn a_file_added_during_the_run_stops_the_replacement_and_is_kept() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("run");
        let s = Staging::new(&target, &[]).unwrap();
        s.commit("demo").unwrap();
        let s = Staging::new(&target, &[]).unwrap();
        let staged = s.path().to_path_buf();
        fs::write(target.join("notes.txt"), "mine").unwrap();
        let err = format!("{:#}", s.commit("demo").unwrap_err());
        assert!(err.contains("notes.txt"), "{err}");
        assert_eq!(
            fs::read_to_string(target.join("notes.txt")).unwrap(),
            "mine"
        );
        assert!(!staged.exists(), "the staged results are removed");
    }

    #[test]
    fn removing_an_earlier_result_keeps_anything_foreign() {
        let d = run_dir_with(&["summary.csv", "notes.txt"]);
        assert!(remove_own(d.path(), false).is_err());
        assert!(d.path().join("notes.txt").exists());
        assert!(!d.path().join("summary.csv").exists());
    }

    #[test]
    fn stale_staging_of_dead_processes_is_removed_and_live_ones_kept() {
        let d = tempfile::tempdir().unwrap();
        // No process has pid 4194305 (above Linux's pid_max).
        let dead = d.path().join(".run.tmp-4194305");
        let live = d.path().join(format!(".run.tmp-{}", std::process::id()));
        let other = d.path().join(".other.tmp-4194305");
        for p in [&dead, &live, &other] {
            fs::create_dir(p).unwrap();
            fs::write(p.join(MARKER), STAGING_MARK).unwrap();
            fs::write(p.join("summary.csv"), "partial").unwrap();
        }
        fs::write(dead.join("decisions.part0.csv"), "partial").unwrap();
        remove_stale(d.path(), "run", &d.path().join("run"));
        if Path::new("/proc/self").exists() {
            assert!(!dead.exists());
        }
        assert!(live.exists() && other.exists());
    }

    #[test]
    fn stale_staging_of_another_version_is_removed_and_other_marks_kept() {
        let d = tempfile::tempdir().unwrap();
        let marks = [
            (
                "4194305",
                "ratesim 0.0.9 staging directory (not yet a run directory)\n",
                true,
            ),
            (
                "4194306",
                "ratesim 9.1.0-rc.1 staging directory (not yet a run directory)\n",
                true,
            ),
            (
                "4194307",
                "ratesim  staging directory (not yet a run directory)\n",
                false,
            ),
            (
                "4194308",
                "ratesim 0.0.9 staging directory (not yet a run directory)\nx\n",
                false,
            ),
            (
                "4194309",
                "ratesim 0.0 9 staging directory (not yet a run directory)\n",
                false,
            ),
            (
                "4194310",
                "ratesim 0.0.9 staging directory (not yet a run directory)",
                false,
            ),
        ];
        for (pid, mark, _) in marks {
            let p = d.path().join(format!(".run.tmp-{pid}"));
            fs::create_dir(&p).unwrap();
            fs::write(p.join(MARKER), mark).unwrap();
            fs::write(p.join("summary.csv"), "partial").unwrap();
            fs::write(p.join("decisions.part0.csv"), "partial").unwrap();
        }
        remove_stale(d.path(), "run", &d.path().join("run"));
        if !Path::new("/proc/self").exists() {
            return;
        }
        for (pid, mark, removed) in marks {
            let p = d.path().join(format!(".run.tmp-{pid}"));
            assert_eq!(!p.exists(), removed, "{mark:?}");
            if !removed {
                assert_eq!(
                    fs::read_to_string(p.join("summary.csv")).unwrap(),
                    "partial"
                );
            }
        }
    }

    #[test]
    fn a_replaced_result_with_a_staging_marker_keeps_its_files() {
        // Only a `.NAME.tmp-PID` is taken by its files' names: a replaced
        // result (or a `.NAME.old-PID`) marked as staging keeps them.
        let d = dir_with(&["summary.csv", "decisions.part0.csv"]);
        fs::write(d.path().join(MARKER), STAGING_MARK).unwrap();
        assert!(remove_own(d.path(), false).is_err());
        assert!(d.path().join("summary.csv").exists());
        assert!(d.path().join("decisions.part0.csv").exists());
        assert!(remove_own(d.path(), true).is_ok());
        assert!(!d.path().exists());
    }

    // Regression: a directory of the user's named like a staging directory
    // of a dead process was removed whole, with everything in it.
    #[test]
    fn a_users_directory_named_like_stale_staging_is_kept_whole() {
        let d = tempfile::tempdir().unwrap();
        let theirs = d.path().join(".run.tmp-4194305");
        fs::create_dir_all(theirs.join("sub/deeper")).unwrap();
        fs::write(theirs.join("sub/deeper/thesis.tex"), "precious").unwrap();
        fs::write(theirs.join("summary.csv"), "theirs").unwrap();
        let old = d.path().join(".run.old-4194305");
        fs::create_dir(&old).unwrap();
        fs::write(old.join("summary.csv"), "theirs too").unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join(MARKER), "x").unwrap();
        fs::write(outside.path().join("summary.csv"), "outside").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(outside.path(), d.path().join(".run.tmp-4194306")).unwrap();
        let target = d.path().join("run");
        remove_stale(d.path(), "run", &target);
        let s = Staging::new(&target, &[]).unwrap();
        drop(s);
        assert_eq!(
            fs::read_to_string(theirs.join("sub/deeper/thesis.tex")).unwrap(),
            "precious"
        );
        assert_eq!(
            fs::read_to_string(theirs.join("summary.csv")).unwrap(),
            "theirs"
        );
        assert_eq!(
            fs::read_to_string(old.join("summary.csv")).unwrap(),
            "theirs too"
        );
        assert!(
            !target.exists(),
            "an unmarked directory is not put back as a result"
        );
        assert_eq!(
            fs::read_to_string(outside.path().join("summary.csv")).unwrap(),
            "outside"
        );
        assert!(outside.path().join(MARKER).exists());
    }

    #[test]
    fn a_staging_directory_is_marked_from_the_start() {
        let d = tempfile::tempdir().unwrap();
        let s = Staging::new(&d.path().join("run"), &[]).unwrap();
        assert_eq!(
            fs::read_to_string(s.path().join(MARKER)).unwrap(),
            STAGING_MARK
        );
    }

    #[test]
    fn a_decision_logs_part_is_named_by_its_number_only() {
        assert!(is_decision_part("decisions.part0.csv"));
        assert!(is_decision_part("decisions.part12.csv"));
        for name in [
            "decisions.part.csv",
            "decisions.partx.csv",
            "decisions.part1.csv.bak",
        ] {
            assert!(!is_decision_part(name), "{name}");
        }
    }

    #[test]
    fn an_earlier_result_caught_mid_replacement_is_put_back() {
        let d = tempfile::tempdir().unwrap();
        let old = d.path().join(".run.old-4194305");
        fs::create_dir(&old).unwrap();
        fs::write(old.join(MARKER), "ratesim run directory\n").unwrap();
        fs::write(old.join("summary.csv"), "earlier").unwrap();
        let target = d.path().join("run");
        remove_stale(d.path(), "run", &target);
        if Path::new("/proc/self").exists() {
            assert_eq!(
                fs::read_to_string(target.join("summary.csv")).unwrap(),
                "earlier"
            );
        }
    }

    #[test]
    fn commit_replaces_the_earlier_run_and_marks_it() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("run");
        for round in ["first", "second"] {
            let s = Staging::new(&target, &[]).unwrap();
            fs::write(s.path().join("summary.csv"), round).unwrap();
            s.commit("demo").unwrap();
        }
        assert_eq!(
            fs::read_to_string(target.join("summary.csv")).unwrap(),
            "second"
        );
        let marker = fs::read_to_string(target.join(MARKER)).unwrap();
        assert!(marker.contains("scenario = demo"), "{marker}");
        let left: Vec<_> = fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "nothing but the run directory is left");
    }

    #[test]
    fn a_dropped_staging_directory_is_removed() {
        let d = tempfile::tempdir().unwrap();
        let s = Staging::new(&d.path().join("run"), &[]).unwrap();
        let tmp = s.path().to_path_buf();
        assert!(tmp.is_dir());
        drop(s);
        assert!(!tmp.exists());
        assert!(lock().iter().all(|p| *p != tmp));
    }
}
