//! Helpers shared by the end-to-end tests in `tests/cli.rs`.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// The built-in scenarios, each also shipped as `scenarios/<name>.toml`.
pub const SHIPPED: [&str; 16] = [
    "boundary",
    "steady",
    "poisson",
    "trace",
    "bursty",
    "nat",
    "retry-storm",
    "many-keys",
    "distributed",
    "outage",
    "race",
    "libraries",
    "pick-a-limit",
    "access-log",
    "plans",
    "protect-backend",
];

/// docs/semantics.md §3: the columns `summary.csv` starts with, named exactly.
pub const SUMMARY_HEADER: &str = "limiter,algorithm,attempts,admitted,delayed,rejected,peak_in_window,limit,delay_p50_ms,delay_p99_ms,state_bytes_per_key_mean,state_bytes_per_key_peak,keys";

/// docs/semantics.md §3: the header of `decisions.csv`.
pub const DECISIONS_HEADER: &str =
    "limiter,time_ns,key,client,attempt,outcome,delay_ns,retry_after_ns,by,source";

/// The files every run directory holds.
pub const RUN_FILES: [&str; 3] = ["summary.csv", "summary.json", "timeseries.csv"];

/// A valid scenario the bad-input tests break one thing at a time.
pub const BASE: &str = r#"name = "t"
duration = "2s"

[defaults]
limit = 10
window = "1s"

[[limiter]]
algorithm = "token_bucket"

[[traffic]]
pattern = "steady"
rate = "5/1s"
"#;

/// A valid trace scenario reading `trace.csv` beside it.
pub const TRACE_BASE: &str = r#"name = "tr"

[defaults]
limit = 10
window = "1s"

[[limiter]]
algorithm = "sliding_log"

[[traffic]]
pattern = "trace"
path = "trace.csv"
"#;

/// The crate root: relative scenario paths resolve against it.
pub fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `ratesim`, run from the crate root.
pub fn ratesim() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ratesim"));
    cmd.current_dir(manifest_dir());
    cmd
}

/// `BASE` with `line` added to its `[[limiter]]` table.
pub fn base_with_limiter_line(line: &str) -> String {
    let limiter = "algorithm = \"token_bucket\"\n";
    assert!(BASE.contains(limiter));
    BASE.replacen(limiter, &format!("{limiter}{line}\n"), 1)
}

/// `BASE` with `from` replaced by `to` (which must occur).
pub fn base_replacing(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "BASE has no {from:?}");
    BASE.replacen(from, to, 1)
}

/// Reads a file, naming it if that fails.
pub fn read(path: &Path) -> Vec<u8> {
    fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

pub fn read_text(path: &Path) -> String {
    String::from_utf8(read(path)).unwrap_or_else(|e| panic!("{} is not UTF-8: {e}", path.display()))
}

/// The first line of a text file.
pub fn header(path: &Path) -> String {
    read_text(path).lines().next().unwrap_or("").to_string()
}

/// Names of the entries of `dir`.
pub fn entries(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Asserts two files are byte-identical, reporting the first difference
/// (never the whole contents: decision logs run to tens of megabytes).
pub fn assert_same_file(a: &Path, b: &Path) {
    let (x, y) = (read(a), read(b));
    if x == y {
        return;
    }
    let at = x
        .iter()
        .zip(&y)
        .position(|(p, q)| p != q)
        .unwrap_or(x.len().min(y.len()));
    let line = x[..at].iter().filter(|&&c| c == b'\n').count() + 1;
    let around = |v: &[u8]| {
        let s = at.saturating_sub(80);
        String::from_utf8_lossy(&v[s..(at + 80).min(v.len())]).into_owned()
    };
    panic!(
        "{} and {} differ: sizes {} and {}, first difference at byte {at} (line {line})\n--- {}\n{}\n--- {}\n{}",
        a.display(),
        b.display(),
        x.len(),
        y.len(),
        a.display(),
        around(&x),
        b.display(),
        around(&y)
    );
}

/// The rows of a CSV file as (header, records).
pub fn csv_rows(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut rdr = csv::Reader::from_path(path)
        .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
    let head = rdr.headers().unwrap().iter().map(str::to_string).collect();
    let rows = rdr
        .records()
        .map(|r| r.unwrap().iter().map(str::to_string).collect())
        .collect();
    (head, rows)
}

/// The `summary.csv` row of `limiter`, as column name → value.
pub fn summary_row(run_dir: &Path, limiter: &str) -> Vec<(String, String)> {
    let (head, rows) = csv_rows(&run_dir.join("summary.csv"));
    let row = rows
        .into_iter()
        .find(|r| r[0] == limiter)
        .unwrap_or_else(|| panic!("summary.csv has no row for {limiter}"));
    head.into_iter().zip(row).collect()
}

/// One column of a summary row, as a number.
pub fn column(row: &[(String, String)], name: &str) -> u64 {
    let (_, v) = row
        .iter()
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("no column {name} in {row:?}"));
    v.parse()
        .unwrap_or_else(|e| panic!("column {name} = {v:?} is not a whole number: {e}"))
}

/// Asserts a finished run directory holds the three result files.
pub fn assert_run_dir(dir: &Path) {
    assert!(dir.is_dir(), "no run directory {}", dir.display());
    for f in RUN_FILES {
        assert!(dir.join(f).is_file(), "{} has no {f}", dir.display());
    }
}

/// Asserts a command failed on bad input: exit 2, `error: ` on stderr with
/// every one of `needles`, and no panic. Returns stderr.
pub fn assert_input_error(cmd: &mut Command, needles: &[&str]) -> String {
    let out = cmd.output().expect("ratesim runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(2),
        "expected exit status 2; stderr:\n{stderr}"
    );
    assert!(
        stderr.starts_with("error: "),
        "stderr does not start with `error: `:\n{stderr}"
    );
    for n in needles {
        assert!(
            stderr.contains(n),
            "stderr does not mention {n:?}:\n{stderr}"
        );
    }
    assert!(!stderr.contains("panicked"), "ratesim panicked:\n{stderr}");
    stderr
}

/// Asserts no run directory `out` and no staging directory for it
/// (`.NAME.tmp-*`, `.NAME.old`) was left behind.
pub fn assert_no_output(out: &Path) {
    assert!(!out.exists(), "{} was created", out.display());
    let name = out.file_name().unwrap().to_string_lossy().into_owned();
    let parent = out.parent().unwrap();
    if parent.is_dir() {
        let stray: Vec<String> = entries(parent)
            .into_iter()
            .filter(|e| e.starts_with(&format!(".{name}.")))
            .collect();
        assert!(
            stray.is_empty(),
            "stray staging entries in {}: {stray:?}",
            parent.display()
        );
    }
}

/// Writes `scenario.toml` (and any `files`) into a fresh tempdir, runs it
/// with `--out <tmp>/out`, and asserts it is rejected as bad input naming
/// every one of `needles`, writing nothing. Returns stderr.
pub fn assert_bad_scenario(scenario: &str, files: &[(&str, &str)], needles: &[&str]) -> String {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("scenario.toml"), scenario).unwrap();
    for (name, text) in files {
        fs::write(tmp.path().join(name), text).unwrap();
    }
    let before = entries(tmp.path());
    let out = tmp.path().join("out");
    let stderr = assert_input_error(
        ratesim()
            .arg("run")
            .arg(tmp.path().join("scenario.toml"))
            .arg("--out")
            .arg(&out),
        needles,
    );
    assert_no_output(&out);
    assert_eq!(
        entries(tmp.path()),
        before,
        "the failed run wrote into its directory"
    );
    stderr
}

/// `TRACE_BASE` with `trace.csv` holding `csv`, rejected naming `needles`.
pub fn assert_bad_trace(csv: &str, needles: &[&str]) -> String {
    assert_bad_scenario(TRACE_BASE, &[("trace.csv", csv)], needles)
}
