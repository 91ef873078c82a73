//! End-to-end tests of the traffic defects of the robustness issue: trace
//! paths that are not regular files (5), traces without a size limit (11),
//! and errors that quoted a whole line of whatever file a trace path named.

#[allow(dead_code)]
mod common;

use std::fs;
use std::path::Path;
use std::time::Duration;

use common::*;

/// `ratesim validate` on `scenario` written into `dir`, with a time limit:
/// none of these inputs may make it wait or loop.
fn validate(dir: &Path, scenario: &str) -> assert_cmd::Command {
    fs::write(dir.join("scenario.toml"), scenario).unwrap();
    let mut cmd = ratesim();
    cmd.arg("validate")
        .arg(dir.join("scenario.toml"))
        .timeout(Duration::from_secs(60));
    cmd
}

/// `TRACE_BASE` reading `path` instead of `trace.csv`.
fn trace_at(path: &str) -> String {
    TRACE_BASE.replace("path = \"trace.csv\"", &format!("path = \"{path}\""))
}

// ---------------------------------------------------------------------------
// Defect 5: a trace path that exists but is not a regular file
// ---------------------------------------------------------------------------

// Defect 5: a directory was reported as "no such file".
#[test]
fn a_trace_path_naming_a_directory_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    fs::create_dir(tmp.path().join("traces")).unwrap();
    assert_input_error(
        &mut validate(tmp.path(), &trace_at("traces")),
        &[
            "traffic[0].path",
            "\"traces\"",
            "is a directory, not a file",
        ],
    );
}

// Defect 5: /dev/zero was reported as "no such file"; it must be refused
// by its type, never read (it never ends).
#[cfg(unix)]
#[test]
fn a_trace_path_naming_a_character_device_is_refused_without_reading_it() {
    let tmp = tempfile::tempdir().unwrap();
    let stderr = assert_input_error(
        &mut validate(tmp.path(), &trace_at("/dev/zero")),
        &["traffic[0].path", "\"/dev/zero\"", "is a character device"],
    );
    assert!(!stderr.contains("no such file"), "{stderr}");
}

// Defect 5: opening a FIFO blocks until a writer comes; the type is checked
// before opening, so this returns at once instead of hanging.
#[cfg(unix)]
#[test]
fn a_trace_path_naming_a_fifo_is_refused_without_blocking() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("trace.csv");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("skipped: mkfifo is not available");
        return;
    }
    assert_input_error(
        &mut validate(tmp.path(), TRACE_BASE),
        &["traffic[0].path", "\"trace.csv\"", "is a FIFO"],
    );
}

// Defect 5: a socket was reported as "no such file".
#[cfg(unix)]
#[test]
fn a_trace_path_naming_a_socket_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let _listener = std::os::unix::net::UnixListener::bind(tmp.path().join("trace.csv")).unwrap();
    assert_input_error(
        &mut validate(tmp.path(), TRACE_BASE),
        &["traffic[0].path", "is a socket, not a file"],
    );
}

// ---------------------------------------------------------------------------
// Defect 11: traces without a size limit
// ---------------------------------------------------------------------------

// Defect 11: a file with no newline (a sparse gigabyte of zeros took 4 GB
// of memory) was buffered whole. Lines are capped at 64 KiB; here an 8 MiB
// line fails at once, naming its line.
#[test]
fn a_trace_line_longer_than_64_kib_is_refused_naming_the_line() {
    let mut csv = String::from("time_ns,client\n0,a\n1,");
    csv.push_str(&"a".repeat(8 << 20));
    csv.push_str("\n2,a\n");
    let stderr = assert_bad_trace(&csv, &["traffic[0].path", "line 3", "65536 bytes"]);
    assert!(stderr.len() < 1_000, "{} bytes of error", stderr.len());
    let zeros = "\0".repeat(8 << 20);
    assert_bad_trace(&zeros, &["line 1", "longer than 65536 bytes"]);
}

// Defect 11: validation streams the file; a trace of many rows and few keys
// loads and runs. (Memory, by hand: `truncate -s 1G big.csv`, name it in a
// trace scenario, and `/usr/bin/time -v ratesim validate s.toml` — under
// 10 MB and an error at line 1, against 4 GB before.)
#[test]
fn a_long_trace_of_few_keys_validates_and_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let mut csv = String::from("time_ns,client\n");
    for i in 0..100_000u64 {
        csv.push_str(&format!("{},k{}\n", i * 1_000, i % 4));
    }
    fs::write(tmp.path().join("trace.csv"), csv).unwrap();
    validate(tmp.path(), TRACE_BASE).assert().success();
    let out = tmp.path().join("out");
    ratesim()
        .arg("run")
        .arg(tmp.path().join("scenario.toml"))
        .args(["--quiet", "--out"])
        .arg(&out)
        .assert()
        .success();
    let row = summary_row(&out, "sliding_log");
    assert_eq!(column(&row, "attempts"), 100_000);
    assert_eq!(column(&row, "keys"), 4);
}

// ---------------------------------------------------------------------------
// Errors quote at most 80 characters of a value
// ---------------------------------------------------------------------------

// Robustness issue: a trace path can name any file (/etc/shadow) and its
// first line was quoted whole in the error. Now a value is cut at 80
// characters, with its length.
#[test]
fn a_trace_error_never_quotes_a_whole_line() {
    let secret = format!("root:{}:19000:0:99999:7:::", "x".repeat(300));
    let stderr = assert_bad_trace(
        &format!("{secret}\n"),
        &["line 1", "unknown column \"root:", "…\" (324 bytes)"],
    );
    assert!(!stderr.contains(&secret), "{stderr}");
    let stderr = assert_bad_trace(
        &format!("time_ns,client\n0,a\n{},a\n", "9".repeat(500)),
        &["line 3", "time_ns \"9999", "…\" (500 bytes)"],
    );
    assert!(!stderr.contains(&"9".repeat(81)), "{stderr}");
}
