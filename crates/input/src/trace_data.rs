//! Where a trace's CSV bytes live: a file beside the scenario, or bytes
//! shipped inside the binary with a built-in scenario.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

/// Where the CSV bytes live.
#[derive(Debug, Clone)]
pub enum TraceData {
    File(PathBuf),
    /// A trace shipped inside the binary with a built-in scenario.
    Embedded(&'static [u8]),
}

impl TraceData {
    pub(crate) fn open(&self) -> io::Result<Box<dyn Read + Send>> {
        self.open_sized().map(|(r, _)| r)
    }

    /// [`TraceData::open`], with the length in bytes of what was opened
    /// as it stood then: a hint only (a file may change as it is read).
    pub(crate) fn open_sized(&self) -> io::Result<(Box<dyn Read + Send>, u64)> {
        Ok(match self {
            TraceData::File(p) => {
                // Checked again here: the file may have been replaced since
                // the scenario loaded, and opening a FIFO would block.
                regular_file(p).map_err(io::Error::other)?;
                let file = File::open(p)?;
                let meta = file.metadata()?;
                if !meta.is_file() {
                    return Err(io::Error::other("is no longer a regular file"));
                }
                (
                    Box::new(BufReader::with_capacity(1 << 16, file)),
                    meta.len(),
                )
            }
            TraceData::Embedded(b) => (Box::new(*b), b.len() as u64),
        })
    }
}

/// What a recorded source's file is, to know it again within a process
/// (see [`crate::recording`]): a file's path, length and modification
/// time, and on Unix its device, inode and change time (a file rewritten
/// in place gets a new change time even if its modification time is set
/// back); shipped bytes by their place in the binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileId {
    File {
        path: PathBuf,
        len: u64,
        modified: Option<std::time::SystemTime>,
        /// Device, inode, change time (s, ns).
        unix: Option<(u64, u64, i64, i64)>,
    },
    Embedded(usize, usize),
}

impl TraceData {
    /// The file's identity now, if it can be known.
    pub fn identity(&self) -> Option<FileId> {
        Some(match self {
            TraceData::File(path) => {
                let meta = std::fs::metadata(path).ok()?;
                FileId::File {
                    path: path.clone(),
                    len: meta.len(),
                    modified: meta.modified().ok(),
                    unix: unix_identity(&meta),
                }
            }
            TraceData::Embedded(b) => FileId::Embedded(b.as_ptr() as usize, b.len()),
        })
    }
}

#[cfg(unix)]
fn unix_identity(meta: &std::fs::Metadata) -> Option<(u64, u64, i64, i64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino(), meta.ctime(), meta.ctime_nsec()))
}

#[cfg(not(unix))]
fn unix_identity(_: &std::fs::Metadata) -> Option<(u64, u64, i64, i64)> {
    None
}

/// `Ok` if `path` names a regular file (after following symlinks), else
/// what it is instead — `is a directory, not a file` — without opening it.
pub fn regular_file(path: &Path) -> Result<(), String> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(format!("no such file ({})", path.display()))
        }
        Err(e) => return Err(format!("cannot be read ({}): {e}", path.display())),
    };
    let t = meta.file_type();
    if t.is_file() {
        return Ok(());
    }
    let what = if t.is_dir() {
        "a directory"
    } else {
        special_file_kind(&t)
    };
    Err(format!(
        "is {what}, not a file ({}); give a CSV trace file",
        path.display()
    ))
}

#[cfg(unix)]
fn special_file_kind(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

#[cfg(not(unix))]
fn special_file_kind(_: &std::fs::FileType) -> &'static str {
    "not a regular file"
}

#[cfg(test)]
mod tests {
    use super::*;

    // Robustness issue, defect 5: a path that exists but is not a regular
    // file was reported as "no such file".
    #[cfg(unix)]
    #[test]
    fn a_path_that_is_not_a_regular_file_is_named_for_what_it_is() {
        let tmp = tempfile::tempdir().unwrap();
        let e = regular_file(tmp.path()).unwrap_err();
        assert!(e.starts_with("is a directory, not a file"), "{e}");
        let e = regular_file(Path::new("/dev/zero")).unwrap_err();
        assert!(e.starts_with("is a character device, not a file"), "{e}");
        let sock = tmp.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let e = regular_file(&sock).unwrap_err();
        assert!(e.starts_with("is a socket, not a file"), "{e}");
        let fifo = tmp.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let e = regular_file(&fifo).unwrap_err();
            assert!(e.starts_with("is a FIFO (named pipe), not a file"), "{e}");
            // Opening goes through the same check: it never blocks.
            let data = TraceData::File(fifo);
            assert!(data.open().is_err());
        }
        let e = regular_file(&tmp.path().join("nope")).unwrap_err();
        assert!(e.starts_with("no such file"), "{e}");
        let file = tmp.path().join("t.csv");
        std::fs::write(&file, "time_ns,client\n0,a\n").unwrap();
        assert_eq!(regular_file(&file), Ok(()));
    }
}
