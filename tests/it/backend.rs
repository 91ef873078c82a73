//! `[backend]` end to end (docs/semantics.md §10): a backend changes no
//! decision, its columns match queueing theory, and bad tables are refused.

use std::fs;
use std::path::Path;

use crate::common::*;

/// A token bucket and a leaky bucket (a shaper: its passes enter later)
/// over Poisson clients, with an optional `[backend]` appended.
const SCENARIO: &str = r#"name = "be"
seed = 3
duration = "20s"

[defaults]
limit = 300
window = "1s"

[[limiter]]
name = "tb"
algorithm = "token_bucket"

[[limiter]]
name = "lb"
algorithm = "leaky_bucket"

[[traffic]]
pattern = "poisson"
clients = 100
rate = "4/1s"
"#;

const BACKEND: &str = r#"
[backend]
workers = 8
service = "exp(20ms)"
queue = 200

[[backend.slowdown]]
at = "10s"
for = "5s"
factor = 3
"#;

fn run(dir: &Path, scenario: &str) -> std::path::PathBuf {
    let path = dir.join(format!("s{}.toml", scenario.len()));
    fs::write(&path, scenario).unwrap();
    let out = dir.join(format!("out{}", scenario.len()));
    let done = ratesim()
        .arg("run")
        .arg(&path)
        .args(["--decisions", "--quiet", "--no-plots", "--no-html", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    out
}

fn text<'a>(row: &'a [(String, String)], name: &str) -> &'a str {
    &row.iter()
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .1
}

fn number(row: &[(String, String)], name: &str) -> f64 {
    text(row, name)
        .parse()
        .unwrap_or_else(|_| panic!("{name} = {:?}", text(row, name)))
}

#[test]
fn a_backend_changes_no_decision() {
    let tmp = tempfile::tempdir().unwrap();
    let without = run(tmp.path(), SCENARIO);
    let with = run(tmp.path(), &format!("{SCENARIO}{BACKEND}"));
    assert_same_file(&without.join("decisions.csv"), &with.join("decisions.csv"));
    for limiter in ["tb", "lb"] {
        let (a, b) = (summary_row(&without, limiter), summary_row(&with, limiter));
        for (k, v) in &a {
            if [
                "utilisation",
                "latency_p50_ms",
                "latency_p99_ms",
                "latency_p999_ms",
                "queue_wait_p99_ms",
                "in_flight_peak",
                "backend_dropped",
                "timeouts",
                "goodput_per_s",
                "wasted_work_s",
            ]
            .contains(&k.as_str())
            {
                assert_eq!(v, "", "{limiter} {k} without a backend");
                assert_ne!(text(&b, k), "", "{limiter} {k} with a backend");
            } else {
                assert_eq!(v, text(&b, k), "{limiter} {k}");
            }
        }
    }
}

#[test]
fn a_full_waiting_room_drops_and_caps_what_is_inside() {
    // 400 requests a second at 8 workers of 20 ms (400 a second), and
    // three times slower for 5 s: the room of 200 fills and drops.
    let tmp = tempfile::tempdir().unwrap();
    let out = run(tmp.path(), &format!("{SCENARIO}{BACKEND}"));
    for limiter in ["tb", "lb"] {
        let row = summary_row(&out, limiter);
        assert_eq!(column(&row, "in_flight_peak"), 8 + 200, "{limiter}");
        assert!(column(&row, "backend_dropped") > 0, "{limiter}");
        assert_eq!(
            column(&row, "timeouts"),
            0,
            "open-loop clients wait for ever"
        );
        assert_eq!(text(&row, "wasted_work_s"), "0");
        // Nearly saturated: busy nearly all the run.
        assert!(number(&row, "utilisation") > 0.95, "{limiter}");
        // Served = passed − dropped, each answered within the run but
        // those still inside at its end.
        let served =
            column(&row, "admitted") + column(&row, "delayed") - column(&row, "backend_dropped");
        let good = number(&row, "goodput_per_s") * 20.0;
        assert!(
            good <= served as f64 && good > served as f64 - 250.0,
            "{limiter}"
        );
    }
}

#[test]
fn one_exponential_server_behind_an_open_limit_is_m_m_1() {
    // Poisson arrivals at 50 a second, one server of exp(10 ms): the time
    // in the system is exponential with rate μ − λ = 50/s — median
    // ln 2 / 50 s = 13.86 ms, 99th percentile ln 100 / 50 s = 92.10 ms —
    // and the server is busy λ/μ = half the time.
    let scenario = r#"name = "mm1"
seed = 11
duration = "4000s"

[defaults]
limit = 1000000
window = "1s"

[[limiter]]
algorithm = "token_bucket"

[[traffic]]
pattern = "poisson"
clients = 1
rate = "50/1s"

[backend]
workers = 1
service = "exp(10ms)"
"#;
    let tmp = tempfile::tempdir().unwrap();
    let out = run(tmp.path(), scenario);
    let row = summary_row(&out, "token_bucket");
    assert_eq!(column(&row, "rejected"), 0);
    let close = |name: &str, want: f64, tolerance: f64| {
        let got = number(&row, name);
        assert!(
            (got / want - 1.0).abs() < tolerance,
            "{name} = {got}, queueing theory says {want}"
        );
    };
    close("latency_p50_ms", 13.863, 0.04);
    close("latency_p99_ms", 92.103, 0.05);
    close("utilisation", 0.5, 0.02);
    // Little's law: the mean number inside is λ·W = 50/s × 20 ms = 1; the
    // peak is far above it but finite.
    assert!((5..60).contains(&column(&row, "in_flight_peak")));
}

#[test]
fn a_bad_backend_is_refused_naming_the_field() {
    for (table, needles) in [
        ("[backend]\nservice = \"exp(20ms)\"\n", &["backend.workers"][..]),
        ("[backend]\nworkers = 4\nservice = \"gamma(2s)\"\n", &["backend.service", "gamma", "exp(MEAN)"]),
        ("[backend]\nworkers = 0\nservice = \"exp(20ms)\"\n", &["backend.workers"]),
        ("[backend]\nworkers = 4\nservice = \"exp(20ms)\"\nqueue = -1\n", &["backend.queue"]),
        (
            "[backend]\nworkers = 4\nservice = \"exp(20ms)\"\n[[backend.slowdown]]\nat = \"1s\"\nfactor = 2\n",
            &["backend.slowdown", "for"],
        ),
        ("[backend]\nworkers = 4\nservice = \"exp(20ms)\"\nthreads = 2\n", &["threads"]),
    ] {
        assert_bad_scenario(&format!("{SCENARIO}{table}"), &[], needles);
    }
}
