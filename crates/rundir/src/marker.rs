//! The marker [`MARKER`](crate::MARKER): what makes a directory a ratesim
//! run or sweep directory, and the list of the files ratesim wrote into it.
//!
//! A file's name says nothing about who wrote it: a `recommended.toml` or a
//! `report.html` saved into an earlier run directory is someone's. So the
//! marker lists every file ratesim wrote there, with its size and the
//! XXH3-128 hash of its bytes, and a file is ratesim's — one a later run may
//! replace — only if it is listed and still holds exactly those bytes. A
//! file added, replaced or changed since is not, whatever its name; a copy
//! of the directory is still ratesim's. The list depends on the files'
//! bytes alone, so a run's marker is byte for byte the same wherever and
//! whenever the run's files are.
//!
//! ```text
//! ratesim 0.1.0 run directory
//! scenario = steady
//! files = 2
//! 4 9a4dea864648af82823c8c03e6dd2202 summary.csv
//! 90211 <the XXH3-128 of timeline.png's bytes, 32 hex digits> timeline.png
//! ```
//!
//! A marker without the `files` line (written by an earlier ratesim, or a
//! staging directory's while a run writes it) lists nothing.

use std::fs;
use std::io::{self, Read};
use std::path::Path;

use crate::{is_own_file, MARKER};

/// A directory's marker, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// The lines before the list (version, scenario).
    head: String,
    /// The files ratesim wrote, or `None` for a marker that lists none.
    files: Option<Vec<Written>>,
    /// Whether its text was `head` exactly, byte for byte.
    exact: bool,
}

/// A file as ratesim left it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Written {
    name: String,
    stamp: Stamp,
}

/// A file's size in bytes and the XXH3-128 hash of its bytes, in hex
/// (canonical, high half first, as `xxhsum -H2` prints it). A hash made
/// to tell files apart fast, not to withstand a forger: it reads at the
/// speed of the disk, where SHA-1 took 1.1 s for a 0.5 GB decisions.csv.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    len: u64,
    hash: String,
}

impl Stamp {
    /// `path`'s stamp, if it is a regular file (not a link to one) of
    /// `len` bytes when `len` is given — a file of another size is not
    /// read.
    fn of(path: &Path, len: Option<u64>) -> Option<Stamp> {
        let meta = fs::symlink_metadata(path).ok()?;
        if !meta.file_type().is_file() || len.is_some_and(|l| l != meta.len()) {
            return None;
        }
        let mut file = fs::File::open(path).ok()?;
        let mut hash = xxhash_rust::xxh3::Xxh3::new();
        let mut buf = vec![0u8; 1 << 16];
        let mut read = 0u64;
        loop {
            match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    hash.update(&buf[..n]);
                    read += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return None,
            }
        }
        Some(Stamp {
            len: read,
            hash: format!("{:032x}", hash.digest128()),
        })
    }
}

impl Marker {
    /// `dir`'s marker: `Ok(None)` where it has none (or it is not a regular
    /// file).
    pub fn read(dir: &Path) -> io::Result<Option<Marker>> {
        let path = dir.join(MARKER);
        if !fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_file()) {
            return Ok(None);
        }
        Ok(Some(Marker::parse(&fs::read_to_string(path)?)))
    }

    /// This marker's text, if it is its head alone (no list of files),
    /// byte for byte (a staging directory's marker, say).
    pub fn only_head(&self) -> Option<&str> {
        self.exact.then_some(self.head.as_str())
    }

    fn parse(text: &str) -> Marker {
        let mut head = String::new();
        let mut lines = text.lines();
        let mut files = None;
        for line in lines.by_ref() {
            if line.starts_with("files = ") {
                files = Some(Vec::new());
                break;
            }
            head.push_str(line);
            head.push('\n');
        }
        if let Some(list) = files.as_mut() {
            for line in lines {
                let mut parts = line.splitn(3, ' ');
                let (Some(len), Some(hash), Some(name)) =
                    (parts.next(), parts.next(), parts.next())
                else {
                    continue;
                };
                let Ok(len) = len.parse() else {
                    continue;
                };
                list.push(Written {
                    name: name.to_string(),
                    stamp: Stamp {
                        len,
                        hash: hash.to_string(),
                    },
                });
            }
        }
        let exact = head == text;
        Marker { head, files, exact }
    }

    fn text(&self) -> String {
        let mut s = self.head.clone();
        if let Some(files) = &self.files {
            s.push_str(&format!("files = {}\n", files.len()));
            for f in files {
                s.push_str(&format!("{} {} {}\n", f.stamp.len, f.stamp.hash, f.name));
            }
        }
        s
    }

    /// Whether this marker lists the files ratesim wrote (one of an earlier
    /// ratesim, or of a staging directory, does not).
    pub fn lists_files(&self) -> bool {
        self.files.is_some()
    }

    /// Whether `name` in `dir` is a file ratesim wrote and nobody changed
    /// since: listed, and its size and bytes the listed ones.
    pub fn wrote(&self, dir: &Path, name: &str) -> bool {
        let Some(files) = &self.files else {
            return false;
        };
        // A name may be listed twice while `plot` moves new files in
        // ([`expect`]): either bytes are ratesim's.
        files
            .iter()
            .filter(|f| f.name == name)
            .any(|f| Stamp::of(&dir.join(name), Some(f.stamp.len)).as_ref() == Some(&f.stamp))
    }
}

/// Whether `name` in `dir` is a marker's temporary copy that a killed
/// [`expect`] or [`restamp`] left behind (`.ratesim-run.tmp-N`, a regular
/// file that reads as a marker).
pub fn is_leftover(dir: &Path, name: &str) -> bool {
    let is_tmp = name
        .strip_prefix(MARKER)
        .and_then(|n| n.strip_prefix(".tmp-"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    let path = dir.join(name);
    is_tmp
        && fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_file())
        && fs::read(&path).is_ok_and(|b| b.starts_with(b"ratesim "))
}

/// Writes `dir`'s marker: `head` (the lines saying what it is) and every
/// regular file in `dir` whose name is one ratesim writes
/// ([`is_own_file`]) — called once everything is written into it.
pub fn write(dir: &Path, head: &str) -> io::Result<()> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == MARKER || !is_own_file(&name) {
            continue;
        }
        if let Some(stamp) = Stamp::of(&entry.path(), None) {
            files.push(Written { name, stamp });
        }
    }
    files.sort_by(|a, b| a.name.cmp(&b.name));
    let marker = Marker {
        head: head.to_string(),
        files: Some(files),
        exact: false,
    };
    fs::write(dir.join(MARKER), marker.text())
}

/// Before ratesim moves the files `names` from `staged` into `dir`
/// (the charts `plot` redraws): lists their new bytes beside the old, so
/// that whatever a kill leaves between the two — old files or new — is
/// ratesim's. [`restamp`] settles the list once they are in place. A
/// marker that lists no files is left as it is.
pub fn expect(dir: &Path, staged: &Path, names: &[&str]) -> io::Result<()> {
    edit(dir, |files| {
        for name in names {
            if let Some(stamp) = Stamp::of(&staged.join(name), None) {
                files.push(Written {
                    name: name.to_string(),
                    stamp,
                });
            }
        }
    })
}

/// After ratesim wrote or removed `names` in `dir` (the charts `plot`
/// redraws, `explain`'s close-up): lists each as it now is, or drops it
/// where it is gone. A marker that lists no files is left as it is.
pub fn restamp(dir: &Path, names: &[&str]) -> io::Result<()> {
    edit(dir, |files| {
        for name in names {
            files.retain(|f| f.name != *name);
            if let Some(stamp) = Stamp::of(&dir.join(name), None) {
                files.push(Written {
                    name: name.to_string(),
                    stamp,
                });
            }
        }
    })
}

/// Rewrites `dir`'s list of files by `change`, if it has one.
fn edit(dir: &Path, change: impl FnOnce(&mut Vec<Written>)) -> io::Result<()> {
    let Some(mut marker) = Marker::read(dir)? else {
        return Ok(());
    };
    let Some(files) = marker.files.as_mut() else {
        return Ok(());
    };
    change(files);
    files.sort_by(|a, b| a.name.cmp(&b.name));
    // Written beside and moved into place, so a marker is never
    // half-written; the copy is made new (never through a link or over a
    // file of that name, whoever's), under the first free number.
    let pid = std::process::id();
    for n in 0u32..1000 {
        let tmp = dir.join(format!("{MARKER}.tmp-{pid}{n:03}"));
        match fs::File::options().write(true).create_new(true).open(&tmp) {
            Ok(mut file) => {
                use std::io::Write as _;
                let written = file.write_all(marker.text().as_bytes());
                drop(file);
                if let Err(e) = written.and_then(|()| fs::rename(&tmp, dir.join(MARKER))) {
                    let _ = fs::remove_file(&tmp);
                    return Err(e);
                }
                return Ok(());
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("{MARKER}.tmp-{pid}000 to …999 all exist"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_file_is_ratesims_until_it_changes() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        fs::write(dir.join("summary.csv"), "a,b\n").unwrap();
        fs::write(dir.join("notes.txt"), "mine").unwrap();
        write(dir, "ratesim 0.1.0 run directory\nscenario = demo\n").unwrap();
        let text = fs::read_to_string(dir.join(MARKER)).unwrap();
        assert!(text.starts_with("ratesim 0.1.0 run directory\nscenario = demo\nfiles = 1\n4 "));
        assert!(text.ends_with(" summary.csv\n"), "{text}");
        let m = Marker::read(dir).unwrap().unwrap();
        assert!(m.lists_files());
        assert!(m.wrote(dir, "summary.csv"));
        // Not a name ratesim writes: never listed.
        assert!(!m.wrote(dir, "notes.txt"));
        // Listed but absent, or present but not listed.
        fs::write(dir.join("summary.md"), "mine").unwrap();
        assert!(!m.wrote(dir, "summary.md"));
        // Changed since: a size of its own.
        fs::write(dir.join("summary.csv"), "a,b,c\n").unwrap();
        assert!(!m.wrote(dir, "summary.csv"));
        // Written again by ratesim and restamped: its again.
        restamp(dir, &["summary.csv", "timeline.png"]).unwrap();
        let m = Marker::read(dir).unwrap().unwrap();
        assert!(m.wrote(dir, "summary.csv"));
        assert!(!m.wrote(dir, "timeline.png"));
        // While new bytes are moved in, old and new are both ratesim's;
        // once settled, only the new.
        let staged = tempfile::tempdir().unwrap();
        fs::write(staged.path().join("summary.csv"), "new,bytes\n").unwrap();
        expect(dir, staged.path(), &["summary.csv"]).unwrap();
        let m = Marker::read(dir).unwrap().unwrap();
        assert!(m.wrote(dir, "summary.csv"));
        fs::copy(staged.path().join("summary.csv"), dir.join("summary.csv")).unwrap();
        assert!(m.wrote(dir, "summary.csv"));
        fs::write(dir.join("summary.csv"), "a,b,c\n").unwrap();
        restamp(dir, &["summary.csv"]).unwrap();
        let m = Marker::read(dir).unwrap().unwrap();
        assert_eq!(m.files.as_ref().unwrap().len(), 1);
        // No temporary copy is left.
        let names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.contains(".tmp-")), "{names:?}");
        assert!(m
            .text()
            .starts_with("ratesim 0.1.0 run directory\nscenario = demo\n"));
    }

    #[test]
    fn the_same_size_with_other_bytes_is_another_file() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        let path = dir.join("recommended.toml");
        fs::write(&path, "1234").unwrap();
        write(dir, "ratesim 0.1.0 sweep directory\n").unwrap();
        let text = fs::read_to_string(dir.join(MARKER)).unwrap();
        // XXH3-128("1234") as the reference C library gives it
        // (libxxhash 0.8.1's XXH3_128bits), high half first.
        assert!(
            text.ends_with("files = 1\n4 9a4dea864648af82823c8c03e6dd2202 recommended.toml\n"),
            "{text}"
        );
        let m = Marker::read(dir).unwrap().unwrap();
        assert!(m.wrote(dir, "recommended.toml"));
        fs::write(&path, "1235").unwrap();
        assert!(!m.wrote(dir, "recommended.toml"));
        // The same bytes again, whenever written, are what ratesim wrote.
        fs::write(&path, "1234").unwrap();
        assert!(m.wrote(dir, "recommended.toml"));
    }

    #[cfg(unix)]
    #[test]
    fn a_link_at_the_temporary_name_is_not_written_through() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let precious = outside.path().join("precious.txt");
        fs::write(&precious, "mine").unwrap();
        let dir = d.path();
        write(dir, "ratesim 0.1.0 run directory\n").unwrap();
        let pid = std::process::id();
        std::os::unix::fs::symlink(&precious, dir.join(format!("{MARKER}.tmp-{pid}000"))).unwrap();
        fs::write(dir.join("summary.csv"), "x").unwrap();
        restamp(dir, &["summary.csv"]).unwrap();
        assert_eq!(fs::read_to_string(&precious).unwrap(), "mine");
        assert!(Marker::read(dir)
            .unwrap()
            .unwrap()
            .wrote(dir, "summary.csv"));
        // A leftover is a regular file that reads as a marker.
        assert!(!is_leftover(dir, &format!("{MARKER}.tmp-{pid}000")));
        fs::write(
            dir.join(format!("{MARKER}.tmp-12")),
            "ratesim 0.1.0 run directory\n",
        )
        .unwrap();
        assert!(is_leftover(dir, &format!("{MARKER}.tmp-12")));
        fs::write(dir.join(format!("{MARKER}.tmp-13")), "mine").unwrap();
        assert!(!is_leftover(dir, &format!("{MARKER}.tmp-13")));
        fs::create_dir(dir.join(format!("{MARKER}.tmp-14"))).unwrap();
        assert!(!is_leftover(dir, &format!("{MARKER}.tmp-14")));
        // A marker with a list is not one of a head alone, the same head or not.
        let listed = Marker::read(dir).unwrap().unwrap();
        assert_eq!(listed.only_head(), None);
    }

    #[test]
    fn a_marker_without_a_list_lists_nothing() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        fs::write(dir.join(MARKER), "ratesim run directory\n").unwrap();
        fs::write(dir.join("summary.csv"), "x").unwrap();
        let m = Marker::read(dir).unwrap().unwrap();
        assert!(!m.lists_files());
        assert!(!m.wrote(dir, "summary.csv"));
        assert_eq!(m.only_head(), Some("ratesim run directory\n"));
        restamp(dir, &["summary.csv"]).unwrap();
        assert_eq!(
            fs::read_to_string(dir.join(MARKER)).unwrap(),
            "ratesim run directory\n"
        );
        assert_eq!(Marker::read(&dir.join("none")).unwrap(), None);
        // Byte for byte: without its last newline, or with CRLF, it is not.
        for text in ["ratesim run directory", "ratesim run directory\r\n"] {
            fs::write(dir.join(MARKER), text).unwrap();
            let m = Marker::read(dir).unwrap().unwrap();
            assert_eq!(m.only_head(), None, "{text:?}");
        }
    }
}
