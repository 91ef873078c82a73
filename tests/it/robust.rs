//! End-to-end tests of what fuzzing and fault injection found: someone's
//! files at `--out`, an unwritable stderr, signals, huge values in
//! messages, runs too large to finish, and memory reported up front. Each
//! test cites the numbered defect of the robustness issue it guards.

use std::fs;
use std::path::Path;
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

// ---------------------------------------------------------------------------
// 1. --out never deletes what ratesim did not write
// ---------------------------------------------------------------------------

#[test]
fn a_project_with_a_summary_json_is_not_replaced() {
    // Defect 1: `--out proj` deleted proj/src/main.rs because proj held a
    // file named summary.json.
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path().join("proj");
    fs::create_dir_all(proj.join("src")).unwrap();
    fs::write(proj.join("summary.json"), "{}").unwrap();
    fs::write(proj.join("src/main.rs"), "fn main(){}").unwrap();
    assert_input_error(
        ratesim().args(["run", "boundary", "--out"]).arg(&proj),
        &[
            "output directory",
            "not a ratesim run directory",
            "whatever the flags",
        ],
    );
    assert_eq!(read_text(&proj.join("src/main.rs")), "fn main(){}");
    assert_eq!(
        entries(tmp.path()),
        ["proj".to_string()].into(),
        "no staging directory left"
    );
}

#[test]
fn a_file_added_to_a_run_directory_is_kept_even_with_force() {
    // Defect 1: files a user added to a real run directory were deleted
    // silently.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let run = |extra: &[&str]| {
        let mut cmd = ratesim();
        cmd.args(["run", "trace", "--quiet", "--out"])
            .arg(&out)
            .args(extra);
        cmd
    };
    run(&[]).assert().success();
    assert!(out.join(".ratesim-run").is_file());
    assert!(read_text(&out.join(".ratesim-run")).contains("scenario = trace"));
    // Rerunning over its own results is fine…
    run(&[]).assert().success();
    // …but not over a note the user left there.
    fs::write(out.join("notes.md"), "my analysis\n").unwrap();
    assert_input_error(&mut run(&[]), &["\"notes.md\"", "did not write"]);
    assert_eq!(read_text(&out.join("notes.md")), "my analysis\n");
    // Issue 21: --force used to replace the directory, note and all.
    assert_input_error(
        &mut run(&["--force"]),
        &["\"notes.md\"", "did not write", "whatever the flags"],
    );
    assert_eq!(read_text(&out.join("notes.md")), "my analysis\n");
    fs::remove_file(out.join("notes.md")).unwrap();
    run(&["--force"]).assert().success();
    assert_run_dir(&out);
    // It is kept for older scripts, and says that it does nothing (but
    // not under --quiet, which prints nothing).
    let said = ratesim()
        .args(["run", "trace", "--force", "--no-plots", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(said.status.success());
    let stderr = String::from_utf8_lossy(&said.stderr);
    assert!(
        stderr.contains("note: --force does nothing any more"),
        "{stderr}"
    );
    let quiet = run(&["--force"]).output().unwrap();
    assert!(quiet.status.success() && quiet.stderr.is_empty() && quiet.stdout.is_empty());
}

fn ratesim_in(dir: &Path) -> assert_cmd::Command {
    let mut cmd = ratesim();
    cmd.current_dir(dir);
    cmd
}

/// Every file below `dir` with its bytes, for comparing a tree before and
/// after.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let path = e.path();
            if e.file_type().unwrap().is_dir() {
                files.push((
                    format!("{}/", path.strip_prefix(dir).unwrap().display()),
                    Vec::new(),
                ));
                stack.push(path);
            } else {
                files.push((
                    path.strip_prefix(dir).unwrap().display().to_string(),
                    read(&path),
                ));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn force_leaves_a_project_directory_byte_for_byte() {
    // Issue 21: `ratesim run base.toml --out . --force` in a project
    // directory deleted base.toml (the scenario being run) and src/main.rs.
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path();
    fs::create_dir_all(proj.join("src")).unwrap();
    fs::write(proj.join("src/main.rs"), "fn main() {}\n").unwrap();
    fs::write(proj.join("Cargo.toml"), "[package]\nname = \"p\"\n").unwrap();
    fs::copy(
        manifest_dir().join("scenarios/steady.toml"),
        proj.join("base.toml"),
    )
    .unwrap();
    let before = tree(proj);
    let whole = proj.canonicalize().unwrap();
    for (out, needle) in [
        (
            Path::new("."),
            "output directory .: holds \"base.toml\", which this run reads",
        ),
        (Path::new("src"), "whatever the flags"),
        (whole.as_path(), "which this run reads"),
    ] {
        assert_input_error(
            ratesim_in(proj)
                .args(["run", "base.toml", "--force", "--no-budget", "--out"])
                .arg(out),
            &[needle],
        );
        assert_eq!(
            tree(proj),
            before,
            "--out {} --force changed the project",
            out.display()
        );
    }
    // The directory holding the scenario is refused by name, even when it
    // holds nothing else that is foreign.
    let only = tmp.path().join("only");
    fs::create_dir(&only).unwrap();
    fs::copy(
        manifest_dir().join("scenarios/steady.toml"),
        only.join("summary.csv"),
    )
    .unwrap();
    fs::write(only.join(".ratesim-run"), "ratesim run directory\n").unwrap();
    let err = assert_input_error(
        ratesim_in(&only)
            .args(["run", "summary.csv", "--force", "--out"])
            .arg(only.canonicalize().unwrap()),
        &["summary.csv", "which this run reads"],
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(only.join("summary.csv").is_file());
}

// Audit of the contract: a file of the user's named like one ratesim
// writes — a recommended.toml edited by hand in a sweep directory, a
// decisions.csv dropped into a run directory, a summary.md of their own —
// was deleted by the next run to that directory, --force or not: the
// marker said the directory was ratesim's, and the name said the file was.
#[test]
fn a_users_file_named_like_ratesims_is_kept_even_with_force() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = tmp.path().join("sweep");
    let sweep_cmd = |extra: &[&str]| {
        let mut cmd = ratesim();
        cmd.args([
            "sweep",
            "steady",
            "--vary",
            "defaults.limit=5,10",
            "--quiet",
        ])
        .args(extra)
        .arg("--out")
        .arg(&sweep);
        cmd
    };
    sweep_cmd(&[]).assert().success();
    // Its own results it replaces.
    sweep_cmd(&[]).assert().success();
    assert!(!sweep.join("recommended.toml").exists());
    fs::write(sweep.join("recommended.toml"), "# mine\n").unwrap();
    let edited = format!("{}# my note\n", read_text(&sweep.join("sweep.csv")));
    fs::write(sweep.join("sweep.csv"), &edited).unwrap();
    for extra in [&[][..], &["--force"]] {
        assert_input_error(
            &mut sweep_cmd(extra),
            &[
                "\"recommended.toml\", \"sweep.csv\"",
                "or that changed since",
                "whatever the flags",
            ],
        );
        assert_eq!(read_text(&sweep.join("recommended.toml")), "# mine\n");
        assert_eq!(read_text(&sweep.join("sweep.csv")), edited);
    }

    let run = tmp.path().join("run");
    let run_cmd = |extra: &[&str]| {
        let mut cmd = ratesim();
        cmd.args(["run", "trace", "--quiet", "--no-plots", "--out"])
            .arg(&run)
            .args(extra);
        cmd
    };
    run_cmd(&[]).assert().success();
    assert!(!run.join("decisions.csv").exists());
    fs::write(run.join("decisions.csv"), "my own decisions\n").unwrap();
    assert_input_error(
        &mut run_cmd(&["--force", "--decisions"]),
        &["\"decisions.csv\"", "did not write", "whatever the flags"],
    );
    assert_eq!(read_text(&run.join("decisions.csv")), "my own decisions\n");
    // plot redraws only what ratesim drew: not a summary.md of the user's.
    fs::remove_file(run.join("decisions.csv")).unwrap();
    fs::write(run.join("summary.md"), "my notes\n").unwrap();
    assert_input_error(
        ratesim().args(["plot", "--quiet"]).arg(&run),
        &["summary.md was not written by ratesim"],
    );
    assert_eq!(read_text(&run.join("summary.md")), "my notes\n");
    // Once the user's file is gone, plot and run go on as before, and
    // what plot drew is ratesim's to replace.
    fs::remove_file(run.join("summary.md")).unwrap();
    ratesim()
        .args(["plot", "--quiet"])
        .arg(&run)
        .assert()
        .success();
    assert!(run.join("timeline.png").is_file());
    run_cmd(&[]).assert().success();
    assert_run_dir(&run);
}

// Review of the marker's first form: plot drew over a summary.md of the
// user's when the marker was a link to one, or could not be read; and a
// marker's temporary copy left by a kill was called the user's.
#[cfg(unix)]
#[test]
fn plot_never_draws_over_a_users_file_whatever_the_marker() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    ratesim()
        .args(["run", "steady", "--quiet", "--no-plots", "--out"])
        .arg(&run)
        .assert()
        .success();
    let marker = run.join(".ratesim-run");
    let text = read_text(&marker);
    fs::write(run.join("summary.md"), "my notes\n").unwrap();
    // A link in the marker's place is no marker.
    fs::rename(&marker, tmp.path().join("marker")).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("marker"), &marker).unwrap();
    assert_input_error(
        ratesim().args(["plot", "--quiet"]).arg(&run),
        &["not a ratesim run directory", "summary.md"],
    );
    // A marker that is not text cannot be read.
    fs::remove_file(&marker).unwrap();
    fs::write(&marker, [text.as_bytes(), b"\xff\n"].concat()).unwrap();
    assert_input_error(
        ratesim().args(["plot", "--quiet"]).arg(&run),
        &[".ratesim-run: cannot be read"],
    );
    // An earlier ratesim's marker lists no files: said so.
    fs::write(&marker, "ratesim 0.1.0 run directory\nscenario = steady\n").unwrap();
    assert_input_error(
        ratesim().args(["plot", "--quiet"]).arg(&run),
        &["an earlier ratesim's, which lists no files", "summary.md"],
    );
    assert_eq!(read_text(&run.join("summary.md")), "my notes\n");
    // With its own marker back and the note moved away, plot draws, and a
    // leftover of a killed marker update is ratesim's to replace.
    fs::write(&marker, &text).unwrap();
    fs::remove_file(run.join("summary.md")).unwrap();
    ratesim()
        .args(["plot", "--quiet"])
        .arg(&run)
        .assert()
        .success();
    fs::write(run.join(".ratesim-run.tmp-4194305000"), &text).unwrap();
    ratesim()
        .args(["run", "steady", "--quiet", "--out"])
        .arg(&run)
        .assert()
        .success();
    assert!(!run.join(".ratesim-run.tmp-4194305000").exists());
    assert_run_dir(&run);
}

#[test]
fn force_leaves_a_home_like_directory_byte_for_byte() {
    // Issue 21: pointed at a directory laid out like a home directory,
    // `--force` deleted .ssh/id_rsa, Documents/ and notes.txt.
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    fs::create_dir_all(home.join(".ssh")).unwrap();
    fs::create_dir_all(home.join("Documents/taxes")).unwrap();
    fs::write(home.join(".ssh/id_rsa"), "-----BEGIN KEY-----\n").unwrap();
    fs::write(home.join("Documents/taxes/2026.pdf"), [0u8, 1, 2, 255]).unwrap();
    fs::write(home.join("notes.txt"), "remember\n").unwrap();
    fs::write(home.join("summary.csv"), "mine,not,ratesim's\n").unwrap();
    let before = tree(&home);
    for cmd in [
        vec!["run", "boundary", "--force", "--quiet", "--out"],
        vec![
            "sweep",
            "steady",
            "--vary",
            "defaults.limit=5,10",
            "--force",
            "--quiet",
            "--out",
        ],
    ] {
        assert_input_error(ratesim().args(&cmd).arg(&home), &["whatever the flags"]);
        assert_eq!(tree(&home), before, "{cmd:?} changed the home directory");
    }
    // plot writes charts and summary.md by name: in a directory without the
    // marker, never over a file of those names (here a run's data copied
    // beside the user's own summary.md and timeline.png).
    let run = tmp.path().join("run");
    ratesim()
        .args(["run", "boundary", "--quiet", "--no-plots", "--out"])
        .arg(&run)
        .assert()
        .success();
    for f in [
        "summary.csv",
        "summary.json",
        "timeseries.csv",
        "top_keys.csv",
    ] {
        if run.join(f).exists() {
            fs::copy(run.join(f), home.join(f)).unwrap();
        }
    }
    fs::remove_dir_all(&run).unwrap();
    fs::write(home.join("summary.md"), "my summary\n").unwrap();
    fs::write(home.join("timeline.png"), "my picture").unwrap();
    let before = tree(&home);
    assert_input_error(
        ratesim().arg("plot").arg(&home),
        &["not a ratesim run directory", "summary.md, timeline.png"],
    );
    assert_eq!(tree(&home), before);
    assert_eq!(
        entries(tmp.path()),
        ["home".to_string()].into(),
        "nothing left beside it"
    );
}

#[test]
fn plot_keeps_a_run_directory_replaceable() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    ratesim()
        .args(["run", "boundary", "--quiet", "--no-plots", "--out"])
        .arg(&out)
        .assert()
        .success();
    ratesim()
        .arg("plot")
        .arg(&out)
        .arg("--quiet")
        .assert()
        .success();
    ratesim()
        .args(["run", "boundary", "--quiet", "--out"])
        .arg(&out)
        .assert()
        .success();
}

// Regression: `plot` replaced a link named like one of its files (which
// `run` refuses to touch) with a regular file.
#[cfg(unix)]
#[test]
fn plot_refuses_a_link_in_place_of_a_file_it_draws_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    ratesim()
        .args(["run", "boundary", "--quiet", "--no-plots", "--out"])
        .arg(&out)
        .assert()
        .success();
    let elsewhere = tmp.path().join("notes.md");
    fs::write(&elsewhere, "mine").unwrap();
    fs::remove_file(out.join("summary.md")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, out.join("summary.md")).unwrap();
    let names = || {
        let mut v: Vec<_> = fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        v.sort();
        v
    };
    let before = names();
    let err = assert_input_error(
        ratesim().arg("plot").arg(&out),
        &["summary.md", "not a regular file"],
    );
    assert!(err.contains("move it away"), "{err}");
    assert!(fs::symlink_metadata(out.join("summary.md"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read_to_string(&elsewhere).unwrap(), "mine");
    assert_eq!(before, names(), "no chart drawn, nothing removed");
}

// ---------------------------------------------------------------------------
// 2. an unwritable stderr is no panic
// ---------------------------------------------------------------------------

#[test]
fn bad_input_exits_2_even_when_stderr_is_full() {
    // Defect 2: `ratesim validate nonexistent.toml 2>/dev/full` exited 101.
    if !Path::new("/dev/full").exists() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    for args in [
        vec!["validate", "nonexistent.toml"],
        vec!["run", "nonexistent", "--out", "x"],
    ] {
        let full = fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let status = StdCommand::new(env!("CARGO_BIN_EXE_ratesim"))
            .current_dir(tmp.path())
            .args(&args)
            .stderr(full)
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(2), "{args:?}");
    }
}

// ---------------------------------------------------------------------------
// 3. signals remove the staging directory
// ---------------------------------------------------------------------------

/// A scenario that runs for minutes: 10^5 Poisson clients for an hour.
const LONG: &str = r#"name = "long"
duration = "1h"
[defaults]
limit = 5
window = "1s"
[[limiter]]
algorithm = "token_bucket"
[[traffic]]
pattern = "poisson"
clients = 100000
rate = "1/1s"
"#;

fn staging_dirs(dir: &Path) -> Vec<String> {
    entries(dir)
        .into_iter()
        .filter(|e| e.starts_with(".out."))
        .collect()
}

/// Starts a long run into `<tmp>/out` and waits for its staging directory.
fn start_long_run(tmp: &Path) -> std::process::Child {
    fs::write(tmp.join("long.toml"), LONG).unwrap();
    let child = StdCommand::new(env!("CARGO_BIN_EXE_ratesim"))
        .current_dir(tmp)
        .args(["run", "long.toml", "--out", "out", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while staging_dirs(tmp).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no staging directory"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

fn kill(child: &std::process::Child, signal: &str) {
    let ok = StdCommand::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{signal}");
}

#[test]
fn a_signalled_run_removes_its_staging_and_exits_128_plus_the_signal() {
    // Defect 3: a run killed by SIGINT, SIGTERM or SIGHUP left a 100+ MB
    // hidden staging folder beside the output.
    if !Path::new("/proc/self").exists() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // An earlier result at --out stays intact.
    ratesim()
        .current_dir(tmp.path())
        .args(["run", "boundary", "--quiet", "--out", "out"])
        .assert()
        .success();
    let before = read(&tmp.path().join("out/summary.csv"));
    for (signal, code) in [("INT", 130), ("TERM", 143), ("HUP", 129)] {
        let mut child = start_long_run(tmp.path());
        kill(&child, signal);
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(code), "SIG{signal}");
        assert!(
            staging_dirs(tmp.path()).is_empty(),
            "SIG{signal} left staging"
        );
        assert_eq!(read(&tmp.path().join("out/summary.csv")), before);
    }
}

#[test]
fn the_next_run_removes_what_a_sigkill_left() {
    // Defect 3: after a SIGKILL, later runs never removed the staging folder.
    if !Path::new("/proc/self").exists() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut child = start_long_run(tmp.path());
    kill(&child, "KILL");
    child.wait().unwrap();
    assert_eq!(staging_dirs(tmp.path()).len(), 1);
    ratesim()
        .current_dir(tmp.path())
        .args(["run", "boundary", "--quiet", "--out", "out"])
        .assert()
        .success();
    assert!(staging_dirs(tmp.path()).is_empty());
    assert_run_dir(&tmp.path().join("out"));
}

// ---------------------------------------------------------------------------
// 6. work estimate, budget, progress on a pipe
// ---------------------------------------------------------------------------

#[test]
fn run_refuses_a_run_larger_than_the_machines_memory_without_no_budget() {
    // Issue 21: validate counted only the limiters' state, and nothing
    // stopped a run that could not fit. Eight token buckets over 8 × 10^7
    // Poisson clients hold ≈60 GB of per-key tables, more than any machine
    // this runs on has available, though the run makes few decisions.
    let tmp = tempfile::tempdir().unwrap();
    let mut text = "duration = \"1s\"\n[defaults]\nlimit = 5\nwindow = \"1s\"\n".to_string();
    for i in 0..8 {
        text += &format!("[[limiter]]\nname = \"tb{i}\"\nalgorithm = \"token_bucket\"\n");
    }
    for i in 0..8 {
        text += &format!(
            "[[traffic]]\nname = \"p{i}\"\npattern = \"poisson\"\nclients = 10000000\nrate = \"1/1h\"\n"
        );
    }
    let scenario = tmp.path().join("wide.toml");
    fs::write(&scenario, text).unwrap();
    let out = ratesim().arg("validate").arg(&scenario).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("memory: ≈60895 MiB"), "{text}");
    assert!(
        text.contains("will refuse it") && text.contains("MiB available"),
        "{text}"
    );
    assert!(
        text.contains("warning: the run could take ≈60895 MiB"),
        "{text}"
    );
    let run_dir = tmp.path().join("out");
    assert_input_error(
        ratesim()
            .arg("run")
            .arg(&scenario)
            .arg("--out")
            .arg(&run_dir),
        &["≈60895 MiB of memory", "MiB available", "--no-budget"],
    );
    assert_no_output(&run_dir);
    // A sweep of it too, before any point runs.
    assert_input_error(
        ratesim()
            .arg("sweep")
            .arg(&scenario)
            .args(["--vary", "defaults.limit=5,6", "--quiet", "--out"])
            .arg(&run_dir),
        &["≈60895 MiB of memory each", "MiB available", "--no-budget"],
    );
    assert_no_output(&run_dir);
}

#[test]
fn validate_prints_the_work_and_run_refuses_a_run_of_days_without_no_budget() {
    // Defect 6: `burst = 1000000000000` on a periodic bursty source passed
    // validate and ran for days.
    let tmp = tempfile::tempdir().unwrap();
    let scenario = tmp.path().join("huge.toml");
    fs::write(
        &scenario,
        base_replacing(
            "pattern = \"steady\"\nrate = \"5/1s\"",
            "pattern = \"bursty\"\nform = \"periodic\"\nburst = 1000000000000\nperiod = \"1s\"",
        ),
    )
    .unwrap();
    let out = ratesim().arg("validate").arg(&scenario).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("work: ≈2.0e12 attempts"), "{text}");
    assert!(text.contains("will refuse it"), "{text}");
    let run_dir = tmp.path().join("out");
    assert_input_error(
        ratesim()
            .arg("run")
            .arg(&scenario)
            .arg("--out")
            .arg(&run_dir),
        &["2.0e12 decisions", "1.0e10", "--no-budget"],
    );
    assert_no_output(&run_dir);
    // Within the budget, validate says nothing of refusing.
    let out = ratesim().args(["validate", "boundary"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("work: ≈1900 attempts"), "{text}");
    assert!(!text.contains("refuse"), "{text}");
}

#[test]
fn a_long_run_on_a_pipe_prints_progress_lines() {
    // Defect 6: with stderr not a terminal a long run showed no progress.
    use std::io::{BufRead, BufReader};
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("long.toml"), LONG).unwrap();
    let mut child = StdCommand::new(env!("CARGO_BIN_EXE_ratesim"))
        .current_dir(tmp.path())
        .args(["run", "long.toml", "--out", "out"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        line.starts_with("ratesim: ")
            && line.contains("of 3600s simulated · ")
            && line.contains("ETA"),
        "{line:?}"
    );
}

// ---------------------------------------------------------------------------
// 10. memory that grows with a limiter's parameters is reported up front
// ---------------------------------------------------------------------------

#[test]
fn a_leaky_bucket_with_a_huge_queue_is_reported_before_it_runs() {
    // Defect 10: a leaky bucket's waiting requests took 474 MB, found only
    // by swapping.
    let tmp = tempfile::tempdir().unwrap();
    let scenario = tmp.path().join("queue.toml");
    fs::write(
        &scenario,
        base_replacing(
            "algorithm = \"token_bucket\"",
            "algorithm = \"leaky_bucket\"\nqueue = 1000000000",
        )
        .replace("rate = \"5/1s\"", "clients = 1000\nrate = \"500000/1s\""),
    )
    .unwrap();
    let out = ratesim().arg("validate").arg(&scenario).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    // 10^9 requests wait, 48 bytes each in the simulator (issue 21: the
    // warning is about the whole run's memory).
    assert!(
        text.contains("warning: the run could take ≈4578")
            && text.contains("mostly limiter[0]'s waiting requests"),
        "{text}"
    );
}

// ---------------------------------------------------------------------------
// 4. a huge value is quoted, not echoed
// ---------------------------------------------------------------------------

#[test]
fn a_huge_value_is_quoted_with_its_length() {
    // Defect 4: a 300 MB field printed a 300 MB message.
    let huge = "x".repeat(1_000_000);
    for (from, to) in [
        (
            "algorithm = \"token_bucket\"",
            format!("algorithm = \"{huge}\""),
        ),
        ("window = \"1s\"", format!("window = \"{huge}\"")),
        ("[defaults]", format!("{huge} = 1\n[defaults]")),
        ("[defaults]", format!("junk = \"{huge}\n[defaults]")),
    ] {
        let scenario = base_replacing(from, &to);
        let stderr = assert_bad_scenario(&scenario, &[], &["…", "bytes)"]);
        assert!(stderr.len() < 2_000, "{} bytes of message", stderr.len());
    }
}
