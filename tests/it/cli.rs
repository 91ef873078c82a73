//! End-to-end tests of the `ratesim` binary: the shipped scenarios, the run
//! directory, determinism, bad input (exit 2, nothing written), `validate`,
//! `list`, `--format json`, `--quiet`, help, a closed stdout, and the
//! conformance vectors.

use std::fs;
use std::process::Stdio;

use crate::common::*;
use predicates::prelude::*;

// ---------------------------------------------------------------------------
// 1. Shipped scenarios
// ---------------------------------------------------------------------------

#[test]
fn every_shipped_scenario_runs_by_name_and_by_path() {
    let tmp = tempfile::tempdir().unwrap();
    for name in SHIPPED {
        let by_name = tmp.path().join(format!("{name}-by-name"));
        let by_path = tmp.path().join(format!("{name}-by-path"));
        ratesim()
            .args(["run", name, "--quiet", "--out"])
            .arg(&by_name)
            .assert()
            .success();
        ratesim()
            .args(["run", &format!("scenarios/{name}.toml"), "--quiet", "--out"])
            .arg(&by_path)
            .assert()
            .success();
        for dir in [&by_name, &by_path] {
            assert_run_dir(dir);
            let head = header(&dir.join("summary.csv"));
            assert!(
                head.starts_with(SUMMARY_HEADER),
                "{}: summary.csv header is {head:?}",
                dir.display()
            );
        }
        // The built-in is the shipped file verbatim: same results either way.
        for f in RUN_FILES {
            assert_same_file(&by_name.join(f), &by_path.join(f));
        }
    }
}

// ---------------------------------------------------------------------------
// 2. The boundary burst
// ---------------------------------------------------------------------------

#[test]
fn boundary_fixed_window_passes_twice_its_limit_and_sliding_log_does_not() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("boundary");
    ratesim()
        .args(["run", "boundary", "--quiet", "--out"])
        .arg(&out)
        .assert()
        .success();
    let fixed = summary_row(&out, "fixed_window");
    assert_eq!(column(&fixed, "peak_in_window"), 200, "{fixed:?}");
    assert_eq!(column(&fixed, "limit"), 100, "{fixed:?}");
    let log = summary_row(&out, "sliding_log");
    assert!(column(&log, "peak_in_window") <= 100, "{log:?}");
    assert_eq!(column(&log, "limit"), 100, "{log:?}");
}

// Issue 23 item 5 (docs/semantics.md §3): every limiter was held to
// `[defaults] limit`, so an imported 5r/s zone showed `peak/limit 5/20`.
#[test]
fn each_limiter_is_held_to_its_own_policy_in_every_output() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = tmp.path().join("own.toml");
    std::fs::write(
        &scenario,
        r#"name = "own"
duration = "3s"
[defaults]
limit = 20
window = "1s"
[[limiter]]
name = "api"
implementation = "nginx"
rate = "20/1s"
queue = 10
[[limiter]]
name = "key"
implementation = "nginx"
rate = "5/1s"
queue = 5
[[limiter]]
name = "window"
algorithm = "sliding_log"
limit = 8
[[limiter]]
name = "slow"
algorithm = "gcra"
rate = "5/2s"
[[limiter]]
name = "timer"
algorithm = "interval_bucket"
tokens_per_fill = 3
fill_interval = "250ms"
[[limiter]]
name = "bucket"
algorithm = "token_bucket"
capacity = 40
[[traffic]]
pattern = "steady"
rate = "30/1s"
"#,
    )
    .unwrap();
    let out = tmp.path().join("out");
    let run = ratesim()
        .arg("run")
        .arg(&scenario)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let terminal = String::from_utf8(run.get_output().stdout.clone()).unwrap();
    // Its own limit, its own rate × [defaults] window (5/2s is 2.5 per
    // second: rounded up, 3), else [defaults] limit.
    let want = [
        ("api", 20),
        ("key", 5),
        ("window", 8),
        ("slow", 3),
        ("timer", 12),
        ("bucket", 20),
    ];
    let json: serde_json::Value =
        serde_json::from_str(&read_text(&out.join("summary.json"))).unwrap();
    for (i, (name, limit)) in want.iter().enumerate() {
        let row = summary_row(&out, name);
        assert_eq!(column(&row, "limit"), *limit, "{name}: {row:?}");
        assert_eq!(json["limiters"][i]["limit"], *limit, "{name}");
        let peak = column(&row, "peak_in_window");
        let cell = format!("{peak}/{limit}");
        let line = terminal
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} in {terminal}"));
        assert!(line.contains(&cell), "{name}: {cell} in {line}");
        let md = read_text(&out.join("summary.md"));
        assert!(md.contains(&format!("{peak} / {limit}")), "{name}: {md}");
    }
    assert!(
        terminal.contains("limits 3–20 per 1s (each limiter's own)"),
        "{terminal}"
    );
    assert!(read_text(&out.join("summary.md")).contains("each limiter's own limit per 1s** (3–20)"));
}

// ---------------------------------------------------------------------------
// 3. Determinism
// ---------------------------------------------------------------------------

#[test]
fn same_seed_twice_gives_byte_identical_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["poisson", "boundary", "bursty", "nat", "retry-storm"] {
        let a = tmp.path().join(format!("{name}-a"));
        let b = tmp.path().join(format!("{name}-b"));
        for dir in [&a, &b] {
            ratesim()
                .args([
                    "run",
                    name,
                    "--seed",
                    "11",
                    "--decisions",
                    "--quiet",
                    "--out",
                ])
                .arg(dir)
                .assert()
                .success();
        }
        for f in [
            "summary.csv",
            "summary.json",
            "timeseries.csv",
            "decisions.csv",
        ] {
            assert_same_file(&a.join(f), &b.join(f));
        }
    }
}

#[test]
fn a_different_seed_changes_poisson_output() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |seed: &str| {
        let out = tmp.path().join(format!("poisson-{seed}"));
        ratesim()
            .args(["run", "poisson", "--seed", seed, "--quiet", "--out"])
            .arg(&out)
            .assert()
            .success();
        out
    };
    let (a, b) = (run("1"), run("2"));
    // Not only the echoed seed in summary.json: the traffic itself changes.
    for f in ["summary.csv", "timeseries.csv"] {
        assert_ne!(
            read(&a.join(f)),
            read(&b.join(f)),
            "{f} is the same for seeds 1 and 2"
        );
    }
}

#[test]
fn a_seed_is_what_a_scenario_file_can_hold() {
    // A scenario's `seed` is a TOML integer: at most 2^63 - 1. --seed
    // takes the same range, so a run can be written down as a scenario.
    let tmp = tempfile::tempdir().unwrap();
    let max = i64::MAX.to_string();
    ratesim()
        .args([
            "run",
            "poisson",
            "--seed",
            &max,
            "--quiet",
            "--no-plots",
            "--out",
        ])
        .arg(tmp.path().join("max"))
        .assert()
        .success();
    let out = ratesim()
        .args([
            "run",
            "poisson",
            "--seed",
            "9223372036854775808",
            "--quiet",
            "--out",
        ])
        .arg(tmp.path().join("over"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with("error: ")
            && stderr.contains("--seed")
            && stderr.contains("9223372036854775808")
            && stderr.contains("0..=9223372036854775807"),
        "{stderr}"
    );
    assert!(!tmp.path().join("over").exists());
}

// ---------------------------------------------------------------------------
// 4. decisions.csv
// ---------------------------------------------------------------------------

#[test]
fn decisions_flag_writes_decisions_csv_with_the_documented_header() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("trace");
    ratesim()
        .args(["run", "trace", "--decisions", "--quiet", "--out"])
        .arg(&out)
        .assert()
        .success();
    assert_run_dir(&out);
    let decisions = out.join("decisions.csv");
    assert_eq!(header(&decisions), DECISIONS_HEADER);
    // One row per attempt per limiter.
    let (_, summary) = csv_rows(&out.join("summary.csv"));
    let attempts: u64 = summary.iter().map(|r| r[2].parse::<u64>().unwrap()).sum();
    let (_, rows) = csv_rows(&decisions);
    assert_eq!(rows.len() as u64, attempts);
    for r in &rows {
        assert!(
            ["admitted", "delayed", "rejected"].contains(&r[5].as_str()),
            "bad outcome in {r:?}"
        );
    }
}

#[test]
fn without_decisions_flag_there_is_no_decisions_csv() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("trace");
    ratesim()
        .args(["run", "trace", "--quiet", "--out"])
        .arg(&out)
        .assert()
        .success();
    assert_run_dir(&out);
    assert!(!out.join("decisions.csv").exists());
    let stray: Vec<String> = entries(&out)
        .into_iter()
        .filter(|e| e.starts_with("decisions"))
        .collect();
    assert!(
        stray.is_empty(),
        "decision files without --decisions: {stray:?}"
    );
}

// ---------------------------------------------------------------------------
// 5. Bad input: exit 2, a message naming the problem, nothing written
// ---------------------------------------------------------------------------

#[test]
fn the_base_scenario_of_the_bad_input_tests_is_valid() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("scenario.toml"), BASE).unwrap();
    fs::write(tmp.path().join("trace.toml"), TRACE_BASE).unwrap();
    fs::write(tmp.path().join("trace.csv"), "time_ns,client\n0,a\n5,a\n").unwrap();
    for s in ["scenario.toml", "trace.toml"] {
        let out = tmp.path().join(format!("{s}.out"));
        ratesim()
            .arg("run")
            .arg(tmp.path().join(s))
            .arg("--quiet")
            .arg("--out")
            .arg(&out)
            .assert()
            .success();
        assert_run_dir(&out);
    }
}

#[test]
fn malformed_toml_is_rejected() {
    let text = base_replacing("name = \"t\"", "name = \"t");
    assert_bad_scenario(&text, &[], &["not valid TOML", "line 1"]);
}

#[test]
fn unknown_top_level_field_is_rejected() {
    let text = format!("colour = \"red\"\n{BASE}");
    assert_bad_scenario(
        &text,
        &[],
        &["colour: unknown field, set to \"red\" — accepted here: "],
    );
}

#[test]
fn unknown_limiter_field_is_rejected() {
    let text = base_with_limiter_line("queue = 5");
    assert_bad_scenario(
        &text,
        &[],
        &["limiter[0].queue: unknown field, set to 5 — accepted here: "],
    );
}

// Audit: a number past TOML's integers was TOML's bare "number too large
// to fit in target type", naming neither the field nor what is accepted.
#[test]
fn an_integer_past_tomls_names_the_field_and_the_ranges() {
    let text = base_with_limiter_line("capacity = 99999999999999999999");
    assert_bad_scenario(
        &text,
        &[],
        &[
            "not valid TOML",
            "capacity = 99999999999999999999",
            "capacity: a TOML integer is at most 9223372036854775807 — a count takes 1 to 1000000000000",
        ],
    );
}

#[test]
fn unknown_algorithm_is_rejected() {
    let text = base_replacing("\"token_bucket\"", "\"magic_bucket\"");
    assert_bad_scenario(
        &text,
        &[],
        &[
            "limiter[0].algorithm",
            "\"magic_bucket\"",
            "unknown algorithm",
        ],
    );
}

#[test]
fn zero_rate_is_rejected() {
    let text = base_with_limiter_line("rate = \"0/1s\"");
    assert_bad_scenario(&text, &[], &["limiter[0].rate", "\"0/1s\"", "positive"]);
}

#[test]
fn negative_rate_is_rejected() {
    let text = base_with_limiter_line("rate = \"-5/1s\"");
    assert_bad_scenario(&text, &[], &["limiter[0].rate", "\"-5/1s\"", "positive"]);
}

#[test]
fn nan_rate_is_rejected() {
    let text = base_with_limiter_line("rate = nan");
    assert_bad_scenario(&text, &[], &["limiter[0].rate: nan", "finite"]);
}

#[test]
fn huge_rate_is_rejected() {
    let text = base_with_limiter_line("rate = \"1000000000000000/1ns\"");
    assert_bad_scenario(
        &text,
        &[],
        &["limiter[0].rate", "\"1000000000000000/1ns\"", "too large"],
    );
}

// Regression: a count past 10^12 was said to be too large for 10^12,
// although the field's own limit is lower.
#[test]
fn too_many_instances_or_clients_name_the_fields_own_limit() {
    let text = base_with_limiter_line("deployment = { instances = 1000000000001 }");
    assert_bad_scenario(
        &text,
        &[],
        &[
            "limiter[0].deployment.instances",
            "1000000000001",
            "at most 10000",
        ],
    );
    let text = base_replacing(
        "rate = \"5/1s\"",
        "rate = \"5/1s\"\nclients = 1000000000001",
    );
    assert_bad_scenario(
        &text,
        &[],
        &["traffic[0].clients", "1000000000001", "at most 10000000\n"],
    );
    // Past TOML's integers a number is text (as `--set` reads it): the
    // message gives the field's range.
    let text = base_with_limiter_line("deployment = { instances = \"99999999999999999999\" }");
    assert_bad_scenario(
        &text,
        &[],
        &[
            "limiter[0].deployment.instances",
            "expected a whole number from 1 to 10000\n",
        ],
    );
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.toml");
    fs::write(&path, BASE).unwrap();
    assert_input_error(
        ratesim()
            .arg("run")
            .arg(&path)
            .args(["--set", "defaults.limit=18446744073709551615", "--out"])
            .arg(tmp.path().join("out")),
        &[
            "defaults.limit",
            "\"18446744073709551615\"",
            "expected a whole number from 1 to 1000000000000",
        ],
    );
}

#[test]
fn malformed_duration_is_rejected() {
    let text = base_replacing("duration = \"2s\"", "duration = \"10 parsecs\"");
    assert_bad_scenario(&text, &[], &["duration", "\"10 parsecs\""]);
}

#[test]
fn duplicate_limiter_names_are_rejected() {
    let text = format!("{BASE}\n[[limiter]]\nalgorithm = \"token_bucket\"\n");
    assert_bad_scenario(
        &text,
        &[],
        &["limiter[1].name", "\"token_bucket\"", "unique"],
    );
}

#[test]
fn missing_trace_file_is_rejected() {
    assert_bad_scenario(
        TRACE_BASE,
        &[],
        &["traffic[0].path", "\"trace.csv\"", "no such file"],
    );
}

#[test]
fn unsorted_trace_is_rejected_naming_the_line() {
    assert_bad_trace(
        "time_ns,client\n0,a\n5,a\n3,a\n7,a\n",
        &["traffic[0].path", "line 4", "backwards"],
    );
}

#[test]
fn unsorted_trace_with_seconds_column_is_rejected_naming_the_line() {
    assert_bad_trace(
        "time,client\n0.1,a\n0.2,a\n0.3,a\n0.25,a\n",
        &["line 5", "backwards"],
    );
}

#[test]
fn trace_row_with_non_numeric_time_is_rejected_naming_the_line() {
    assert_bad_trace(
        "time_ns,client\n0,a\nabc,a\n",
        &["traffic[0].path", "line 3", "\"abc\""],
    );
}

#[test]
fn trace_row_with_wrong_field_count_is_rejected_naming_the_line() {
    assert_bad_trace(
        "time_ns,client\n0,a\n1,a,extra\n2,a\n",
        &["traffic[0].path", "line 3", "3 fields"],
    );
}

// Regression: a quote left open read the rest of the file as one client
// name, and the run went on without the rows it swallowed.
#[test]
fn trace_with_a_quote_never_closed_is_rejected_naming_the_line() {
    assert_bad_trace(
        "time,client\n0.1,\"ab\n0.2,c\n",
        &[
            "traffic[0].path",
            "line 2",
            "client runs across lines",
            "never closed",
        ],
    );
}

// The seconds of a trace take no unit: the message does not ask for one.
#[test]
fn trace_time_with_a_unit_is_rejected_as_not_a_plain_decimal() {
    let e = assert_bad_trace(
        "time,client\n0.1s,a\n",
        &[
            "line 2",
            "\"0.1s\" is not a plain decimal",
            "seconds as a decimal",
        ],
    );
    assert!(!e.contains("with a unit"), "{e}");
}

#[test]
fn trace_errors_name_the_right_line_with_crlf_line_endings() {
    // The same unsorted trace as above, saved with Windows line endings:
    // the offending row is still on line 4.
    assert_bad_trace(
        "time_ns,client\r\n0,a\r\n5,a\r\n3,a\r\n7,a\r\n",
        &["line 4", "backwards"],
    );
    assert_bad_trace(
        "time_ns,client\r\n0,a\r\n1,a\r\nabc,a\r\n",
        &["line 4", "\"abc\""],
    );
}

#[test]
fn unknown_trace_column_is_rejected() {
    assert_bad_trace(
        "time_ns,client,colour\n0,a,red\n",
        &["traffic[0].path", "line 1", "unknown column \"colour\""],
    );
}

#[test]
fn unwritable_output_directory_is_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let afile = tmp.path().join("afile");
    fs::write(&afile, "not a directory\n").unwrap();
    let out = afile.join("out");
    assert_input_error(
        ratesim().args(["run", "boundary", "--out"]).arg(&out),
        &["output directory", &out.display().to_string()],
    );
    assert!(afile.is_file(), "afile was replaced");
    assert_eq!(read_text(&afile), "not a directory\n");
    assert_no_output(&out);
    assert_eq!(entries(tmp.path()), ["afile".to_string()].into());
}

#[test]
fn zero_limit_in_defaults_is_rejected() {
    let text = base_replacing("limit = 10", "limit = 0");
    assert_bad_scenario(&text, &[], &["defaults.limit: 0", "from 1 to"]);
}

#[test]
fn missing_defaults_is_rejected() {
    let text = base_replacing("[defaults]\nlimit = 10\nwindow = \"1s\"\n", "");
    assert_bad_scenario(&text, &[], &["defaults: missing"]);
}

#[test]
fn unknown_pattern_is_rejected() {
    let text = base_replacing("pattern = \"steady\"", "pattern = \"tidal\"");
    assert_bad_scenario(
        &text,
        &[],
        &["traffic[0].pattern", "\"tidal\"", "unknown pattern"],
    );
}

#[test]
fn scenario_that_is_neither_a_file_nor_a_builtin_is_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    assert_input_error(
        ratesim()
            .args(["run", "no-such-scenario", "--out"])
            .arg(&out),
        &["no-such-scenario", "no built-in scenario", "boundary"],
    );
    assert_no_output(&out);
    // A directory is not a scenario file either.
    let dir = tmp.path().join("adir");
    fs::create_dir(&dir).unwrap();
    assert_input_error(
        ratesim().arg("run").arg(&dir).arg("--out").arg(&out),
        &["adir", "not a file"],
    );
    assert_no_output(&out);
    assert_eq!(entries(tmp.path()), ["adir".to_string()].into());
}

// ---------------------------------------------------------------------------
// 6. validate
// ---------------------------------------------------------------------------

#[test]
fn validate_accepts_every_shipped_scenario() {
    for name in SHIPPED {
        for arg in [name.to_string(), format!("scenarios/{name}.toml")] {
            ratesim()
                .args(["validate", &arg])
                .assert()
                .success()
                .stdout(predicate::str::contains("ok"))
                .stderr(predicate::str::is_empty());
        }
    }
}

#[test]
fn validate_rejects_a_bad_scenario_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let text = base_with_limiter_line("rate = \"0/1s\"");
    fs::write(tmp.path().join("bad.toml"), text).unwrap();
    let before = entries(tmp.path());
    let mut cmd = ratesim();
    cmd.current_dir(tmp.path()).args(["validate", "bad.toml"]);
    assert_input_error(&mut cmd, &["bad.toml", "limiter[0].rate", "\"0/1s\""]);
    cmd.assert().code(2).stdout(predicate::str::is_empty());
    assert_eq!(entries(tmp.path()), before);
}

#[test]
fn the_work_estimate_is_within_twice_each_shipped_scenarios_logical_requests() {
    // Issue 21: the estimate ignored duty cycles and skew — bursty was
    // estimated at 5 times its logical requests, nat at 50 times. Each
    // scenario runs through the library (no files). A scenario of more
    // than 10^6 decisions is cut short to about that many, estimate and
    // run alike: many-keys (5 × 10^6, 13 s of a debug build) runs 4 s of
    // its 20.
    use ratesim::engine;
    use ratesim::estimate::Estimate;
    use ratesim::scenario::{Load as _, Scenario};
    // Every file of scenarios/, so a scenario added later is held to it too.
    let mut paths: Vec<_> = fs::read_dir(manifest_dir().join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    assert!(paths.len() >= SHIPPED.len());
    for path in paths {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let mut s = Scenario::load(path.to_str().unwrap()).unwrap();
        let full = Estimate::of(&s).decisions;
        if full > 1_000_000 {
            s.duration = ratesim::clock::Nanos((s.duration.0 as u128 * 1_000_000 / full) as u64);
        }
        let estimated = Estimate::of(&s).decisions;
        let runs = engine::simulate_all(&s, Vec::new(), &|_, _, _| {}).unwrap();
        // First attempts, summed over the limiters that see them (a
        // chain's member: those it was asked about).
        let measured: u128 = runs
            .iter()
            .flat_map(|r| &r.recorder.sources)
            .map(|s| s.logical as u128)
            .sum();
        assert!(
            estimated <= 2 * measured && measured <= 2 * estimated,
            "{name}: estimated {estimated} first attempts over its limiters, measured {measured}"
        );
    }
}

// ---------------------------------------------------------------------------
// 7. list
// ---------------------------------------------------------------------------

#[test]
fn list_prints_builtins_algorithms_and_patterns() {
    let out = ratesim()
        .arg("list")
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let names = SHIPPED.iter().copied().chain([
        "token_bucket",
        "interval_bucket",
        "gcra",
        "leaky_bucket",
        "fixed_window",
        "sliding_log",
        "sliding_counter",
    ]);
    for name in names {
        assert!(
            stdout
                .lines()
                .any(|l| l.split_whitespace().next() == Some(name)),
            "`ratesim list` has no line for {name}:\n{stdout}"
        );
    }
    // The four pattern names (trace, steady, poisson and boundary are also
    // built-in names, so each must appear at least twice: once per section;
    // boundary is also a walkthrough topic).
    for pattern in ["trace", "steady", "poisson", "boundary"] {
        let lines = stdout
            .lines()
            .filter(|l| l.split_whitespace().next() == Some(pattern))
            .count();
        assert!(
            lines >= 2,
            "{pattern} is not listed as scenario and pattern:\n{stdout}"
        );
    }
}

// ---------------------------------------------------------------------------
// 8. --format json and --quiet
// ---------------------------------------------------------------------------

#[test]
fn format_json_prints_one_entry_per_limiter() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["boundary", "trace"] {
        let out = tmp.path().join(name);
        let output = ratesim()
            .args(["run", name, "--format", "json", "--out"])
            .arg(&out)
            .assert()
            .success()
            .get_output()
            .clone();
        let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}",
                String::from_utf8_lossy(&output.stdout)
            )
        });
        let limiters = json["limiters"].as_array().expect("a limiters array");
        let (_, rows) = csv_rows(&out.join("summary.csv"));
        assert_eq!(limiters.len(), rows.len());
        let expected = read_text(&manifest_dir().join(format!("scenarios/{name}.toml")))
            .lines()
            .filter(|l| l.trim() == "[[limiter]]")
            .count();
        assert_eq!(limiters.len(), expected);
        // What it prints is what it wrote.
        let written: serde_json::Value =
            serde_json::from_slice(&read(&out.join("summary.json"))).unwrap();
        assert_eq!(json, written);
    }
}

#[test]
fn quiet_prints_nothing_on_stdout() {
    let tmp = tempfile::tempdir().unwrap();
    for format in ["table", "json"] {
        let out = tmp.path().join(format);
        ratesim()
            .args(["run", "boundary", "--quiet", "--format", format, "--out"])
            .arg(&out)
            .assert()
            .success()
            .stdout(predicate::str::is_empty())
            .stderr(predicate::str::is_empty());
        assert_run_dir(&out);
    }
}

// ---------------------------------------------------------------------------
// 9. help
// ---------------------------------------------------------------------------

fn assert_help_shows_examples(sub: &str) {
    ratesim()
        .args([sub, "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Examples"));
}

#[test]
fn run_help_shows_examples() {
    assert_help_shows_examples("run");
}

#[test]
fn validate_help_shows_examples() {
    assert_help_shows_examples("validate");
}

#[test]
fn list_help_shows_examples() {
    assert_help_shows_examples("list");
}

#[test]
fn merge_help_shows_examples() {
    assert_help_shows_examples("merge");
}

/// The README: "Every command has `--help` with examples" — every one,
/// and every subcommand, as the binary prints it.
#[test]
fn every_command_and_subcommand_has_help_with_examples() {
    use clap::CommandFactory;
    fn paths(cmd: &clap::Command, prefix: &[String], out: &mut Vec<Vec<String>>) {
        for sub in cmd.get_subcommands() {
            if sub.get_name() == "help" {
                continue;
            }
            let mut path = prefix.to_vec();
            path.push(sub.get_name().to_string());
            paths(sub, &path, out);
            out.push(path);
        }
    }
    let mut all = Vec::new();
    paths(&ratesim::cli::Cli::command(), &[], &mut all);
    assert!(all.len() >= 15, "{all:?}");
    for path in all {
        let out = ratesim().args(&path).arg("--help").output().unwrap();
        assert!(out.status.success(), "{path:?}");
        let help = String::from_utf8(out.stdout).unwrap();
        assert!(
            help.contains("Examples:"),
            "{path:?} --help has no examples"
        );
    }
}

// ---------------------------------------------------------------------------
// 10. a closed stdout
// ---------------------------------------------------------------------------

#[test]
fn closing_stdout_early_is_not_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("boundary");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ratesim"))
        .args(["run", "boundary", "--out"])
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr:\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_run_dir(&out);
}

// ---------------------------------------------------------------------------
// 11. someone else's directory
// ---------------------------------------------------------------------------

#[test]
fn existing_non_run_directory_is_not_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("mine");
    fs::create_dir(&out).unwrap();
    fs::write(out.join("keep.txt"), "precious\n").unwrap();
    assert_input_error(
        ratesim().args(["run", "boundary", "--out"]).arg(&out),
        &["output directory", "not a ratesim run directory"],
    );
    assert_eq!(entries(&out), ["keep.txt".to_string()].into());
    assert_eq!(read_text(&out.join("keep.txt")), "precious\n");
    assert_eq!(entries(tmp.path()), ["mine".to_string()].into());
}

#[test]
fn an_earlier_run_directory_is_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    ratesim()
        .args(["run", "trace", "--decisions", "--quiet", "--out"])
        .arg(&out)
        .assert()
        .success();
    assert!(out.join("decisions.csv").is_file());
    ratesim()
        .args(["run", "boundary", "--quiet", "--out"])
        .arg(&out)
        .assert()
        .success();
    assert_run_dir(&out);
    // The old run is gone entirely, not merged with the new one.
    assert!(!out.join("decisions.csv").exists());
    assert!(read_text(&out.join("summary.csv")).contains("\nfixed_window,"));
    assert_eq!(entries(tmp.path()), ["run".to_string()].into());
}

// ---------------------------------------------------------------------------
// 12. conformance
// ---------------------------------------------------------------------------

#[test]
fn conformance_decisions_match_the_expected_log_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("conformance");
    ratesim()
        .args([
            "run",
            "tests/conformance/scenario.toml",
            "--decisions",
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .assert()
        .success();
    assert_same_file(
        &out.join("decisions.csv"),
        &manifest_dir().join("tests/conformance/expected_decisions.csv"),
    );
}

/// BASE with a deployment table on its limiter.
fn deployed(deployment: &str) -> String {
    base_replacing(
        "algorithm = \"token_bucket\"\n",
        &format!("algorithm = \"token_bucket\"\n[limiter.deployment]\n{deployment}\n"),
    )
}

#[test]
fn zero_instances_are_rejected() {
    assert_bad_scenario(
        &deployed("instances = 0"),
        &[],
        &["limiter[0].deployment.instances: 0", "from 1 to 10000"],
    );
}

#[test]
fn negative_store_latency_is_rejected() {
    assert_bad_scenario(
        &deployed("scope = \"global\"\nstore_latency = \"-1ms\""),
        &[],
        &["limiter[0].deployment.store_latency: \"-1ms\""],
    );
}

#[test]
fn inverted_outages_are_rejected() {
    assert_bad_scenario(
        &deployed("scope = \"global\"\noutages = [{ start = \"5s\", end = \"3s\" }]"),
        &[],
        &[
            "limiter[0].deployment.outages[0].end: \"3s\"",
            "after start",
        ],
    );
}

#[test]
fn overlapping_outages_are_rejected() {
    assert_bad_scenario(
        &deployed(
            "scope = \"global\"\noutages = [{ start = \"1s\", end = \"3s\" }, { start = \"2s\", end = \"4s\" }]",
        ),
        &[],
        &["limiter[0].deployment.outages[1].start: \"2s\"", "overlap"],
    );
}

#[test]
fn a_fallback_without_a_limit_is_rejected() {
    assert_bad_scenario(
        &deployed("scope = \"global\"\non_store_failure = \"local_fallback\""),
        &[],
        &[
            "limiter[0].deployment.fallback: missing",
            "fallback = { limit",
        ],
    );
}

#[test]
fn unknown_deployment_fields_and_values_are_rejected() {
    assert_bad_scenario(
        &deployed("replicas = 3"),
        &[],
        &["limiter[0].deployment.replicas: unknown field", "instances"],
    );
    assert_bad_scenario(
        &deployed("routing = \"sticky\""),
        &[],
        &["limiter[0].deployment.routing: \"sticky\"", "round_robin"],
    );
    assert_bad_scenario(
        &deployed("scope = \"global\"\nstore_latency = { median = \"5ms\", p99 = \"1ms\" }"),
        &[],
        &["store_latency.p99: \"1ms\"", "at least the median"],
    );
}
