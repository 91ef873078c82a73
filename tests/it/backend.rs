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
        // Finite and non-negative, but too long to hold exactly: said so.
        (
            "[backend]\nworkers = 4\nservice = \"exp(20ms)\"\n[[backend.slowdown]]\nat = \"1s\"\nfor = \"1s\"\nfactor = 1e20\n",
            &["backend.slowdown[0].factor", "too many digits", "at most 20 before the point"],
        ),
    ] {
        assert_bad_scenario(&format!("{SCENARIO}{table}"), &[], needles);
    }
}

/// Every limiter that reads the backend, and a global token bucket, over
/// 500 requests a second at a backend of 8 × exp(20 ms) (400 a second),
/// three times slower from 30 s to 40 s.
const FEEDBACK: &str = r#"name = "fb"
seed = 5
duration = "60s"

[defaults]
limit = 300
window = "1s"

[[limiter]]
name = "tb"
algorithm = "token_bucket"
key_by = "global"

[[limiter]]
name = "conc"
algorithm = "concurrency"
max_in_flight = 16
key_by = "global"

[[limiter]]
name = "per-client"
algorithm = "concurrency"
max_in_flight = 1

[[limiter]]
name = "queue"
algorithm = "queue_length"
max_queue = 20

[[limiter]]
name = "aimd"
algorithm = "aimd"
max_limit = 60

[[limiter]]
name = "gradient2"
algorithm = "gradient2"

[[limiter]]
name = "vegas"
algorithm = "vegas"

[[limiter]]
name = "envoy"
algorithm = "envoy_gradient"
interval = "60s"
concurrency_update_interval = "100ms"

[[traffic]]
pattern = "poisson"
clients = 100
rate = "5/1s"

[backend]
workers = 8
service = "exp(20ms)"

[[backend.slowdown]]
at = "30s"
for = "10s"
factor = 3
"#;

#[test]
fn the_feedback_limiters_hold_what_they_promise() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(tmp.path(), FEEDBACK);
    let row = |l: &str| summary_row(&out, l);
    // At most 16 in flight, so at most 16 inside the backend.
    assert_eq!(column(&row("conc"), "in_flight_peak"), 16);
    // Admitted only while fewer than 20 wait: 8 served and 20 waiting.
    assert!(column(&row("queue"), "in_flight_peak") <= 8 + 20);
    // An adaptive limit never passes its maximum.
    assert!(column(&row("aimd"), "in_flight_peak") <= 60);
    // One request per client at a time: never more inside than clients.
    assert!(column(&row("per-client"), "in_flight_peak") <= 100);
    // The global rate limit lets the queue grow through the slowdown;
    // the concurrency limit keeps the tail short.
    let p99 = |l: &str| number(&row(l), "latency_p99_ms");
    assert!(
        p99("tb") > 10.0 * p99("conc"),
        "tb {} conc {}",
        p99("tb"),
        p99("conc")
    );
    // None of them names a retry-after: nothing says when a slot frees.
    let decisions = read_text(&out.join("decisions.csv"));
    for line in decisions.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        if f[0] != "tb" && f[5] == "rejected" {
            assert_eq!(f[7], "", "{line}");
        }
    }
}

#[test]
fn feedback_limiters_decide_the_same_on_any_number_of_threads() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("fb.toml");
    fs::write(&path, FEEDBACK).unwrap();
    let mut outs = Vec::new();
    for threads in ["1", "2"] {
        let out = tmp.path().join(format!("t{threads}"));
        let ok = ratesim()
            .env("RAYON_NUM_THREADS", threads)
            .arg("run")
            .arg(&path)
            .args(["--decisions", "--quiet", "--no-plots", "--no-html", "--out"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(ok.status.success());
        outs.push(out);
    }
    for f in ["decisions.csv", "summary.csv", "timeseries.csv"] {
        assert_same_file(&outs[0].join(f), &outs[1].join(f));
    }
}

#[test]
fn a_feedback_limiter_is_refused_where_it_cannot_run() {
    let with = |limiter: &str, rest: &str| {
        SCENARIO.replace(
            "[[limiter]]\nname = \"lb\"\nalgorithm = \"leaky_bucket\"\n",
            &format!("[[limiter]]\nname = \"x\"\n{limiter}\n{rest}"),
        )
    };
    // No backend to read.
    assert_bad_scenario(
        &with("algorithm = \"concurrency\"\nmax_in_flight = 4", ""),
        &[],
        &["limiter[1].algorithm", "concurrency", "[backend]"],
    );
    // A shared store cannot count one instance's requests in flight.
    assert_bad_scenario(
        &with(
            "algorithm = \"aimd\"\n[limiter.deployment]\ninstances = 2\nscope = \"global\"",
            BACKEND,
        ),
        &[],
        &["limiter[1].algorithm", "aimd", "local"],
    );
    // An adaptive limit is the backend's, not a key's.
    assert_bad_scenario(
        &with("algorithm = \"vegas\"\nkey_by = \"client\"", BACKEND),
        &[],
        &["limiter[1].key_by", "vegas", "global"],
    );
    // Envoy's intervals have no default.
    assert_bad_scenario(
        &with(
            "algorithm = \"envoy_gradient\"\ninterval = \"60s\"",
            BACKEND,
        ),
        &[],
        &["concurrency_update_interval"],
    );
    // Under 1 ms Envoy's timer is 0 ms (it reads whole milliseconds): it
    // fires on every turn of its loop, no moment of a simulated clock.
    // (Such a run never ended.)
    assert_bad_scenario(
        &with(
            "algorithm = \"envoy_gradient\"\ninterval = \"60s\"\nconcurrency_update_interval = \"999us\"",
            BACKEND,
        ),
        &[],
        &["limiter[1].concurrency_update_interval", "\"999us\"", "at least 1ms"],
    );
    assert_bad_scenario(
        &with(
            "algorithm = \"envoy_gradient\"\ninterval = \"999us\"\nconcurrency_update_interval = \"1ms\"",
            BACKEND,
        ),
        &[],
        &["limiter[1].interval", "\"999us\"", "at least 1ms"],
    );
    assert_bad_scenario(
        &with("algorithm = \"concurrency\"", BACKEND),
        &[],
        &["max_in_flight"],
    );
    // No Redis script for them.
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.toml");
    fs::write(&path, with("algorithm = \"vegas\"", BACKEND)).unwrap();
    assert_input_error(
        ratesim()
            .args(["export", "redis"])
            .arg(&path)
            .args(["--limiter", "x"]),
        &["vegas", "no Redis script"],
    );
}

#[test]
fn a_daily_quota_resets_at_the_epochs_local_midnight() {
    // t = 0 is 18:00 in India (+05:30): the day ends 6 h in. Two a day.
    let scenario = r#"name = "q"
duration = "8h"

[defaults]
limit = 2
window = "1s"

[[limiter]]
algorithm = "quota"
period = "day"
epoch = "2026-03-02T18:00:00+05:30"

[[traffic]]
pattern = "trace"
path = "trace.csv"
"#;
    let trace = "time,client\n0,a\n3600,a\n7200,a\n21599.999999999,a\n21600,a\n21601,a\n21602,a\n";
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("trace.csv"), trace).unwrap();
    let out = run(tmp.path(), scenario);
    let outcomes = outcomes(&out);
    let h = 3_600_000_000_000u64;
    let want = [
        ("admitted", String::new()),
        ("admitted", String::new()),
        // Until the local midnight, 4 h away.
        ("rejected", (4 * h).to_string()),
        ("rejected", "1".to_string()),
        ("admitted", String::new()),
        ("admitted", String::new()),
        // The next day ends 24 h after the first.
        ("rejected", (24 * h - 2_000_000_000).to_string()),
    ];
    let got: Vec<(&str, &str)> = outcomes
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let want: Vec<(&str, &str)> = want.iter().map(|(a, b)| (*a, b.as_str())).collect();
    assert_eq!(got, want);
    // Unquoted, TOML reads the epoch as a date-time value: refused,
    // saying how to write it (it named TOML's inner table before).
    let unquoted = tmp.path().join("unquoted.toml");
    fs::write(
        &unquoted,
        scenario.replace("\"2026-03-02T18:00:00+05:30\"", "2026-03-02T18:00:00+05:30"),
    )
    .unwrap();
    let err = assert_input_error(
        ratesim().arg("validate").arg(&unquoted),
        &[
            "limiter[0].epoch: 2026-03-02T18:00:00+05:30 — expected a string: write it in quotes, \"2026-03-02T18:00:00+05:30\"",
        ],
    );
    assert!(!err.contains("toml_private"), "{err}");
}

/// Each decision's outcome and retry-after, from a run's `decisions.csv`.
fn outcomes(out: &Path) -> Vec<(String, String)> {
    read_text(&out.join("decisions.csv"))
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[5].to_string(), f[7].to_string())
        })
        .collect()
}

/// docs/semantics.md §10: over a replayed log, a quota's periods are the
/// log's own — `t = 0` is its first arrival's instant — in the calendar
/// of `epoch`'s offset.
#[test]
fn a_quota_over_a_log_counts_the_logs_own_days_and_months() {
    let quota = |period: &str, epoch: &str, log_format: &str, extra: &str| {
        format!(
            "name = \"q\"\n\n[defaults]\nlimit = 1\nwindow = \"1s\"\n\n[[limiter]]\nalgorithm = \"quota\"\n\
             period = \"{period}\"\n{epoch}\n[[traffic]]\npattern = \"trace\"\nformat = \"nginx\"\n\
             path = \"access.log\"\nlog_format = '{log_format}'\nclient = \"$remote_addr\"\n{extra}"
        )
    };
    let s = 1_000_000_000u64;
    let tmp = tempfile::tempdir().unwrap();
    // 23:59:58.5 UTC on 31 March 2026, then three lines around midnight.
    fs::write(
        tmp.path().join("access.log"),
        "1775001598.500 a\n1775001599.500 a\n1775001600.499 a\n1775001600.500 a\n",
    )
    .unwrap();
    for (period, next) in [("day", 86_400 * s), ("month", 30 * 86_400 * s)] {
        let out = run(tmp.path(), &quota(period, "", "$msec $remote_addr", ""));
        let want = [
            ("admitted", String::new()),
            // Half a second to midnight, the day's and the month's end.
            ("rejected", (s / 2).to_string()),
            // 00:00:00.499 on 1 April: a new day and a new month.
            ("admitted", String::new()),
            ("rejected", (next - s / 2).to_string()),
        ];
        let want: Vec<(String, String)> = want.into_iter().map(|(a, b)| (a.into(), b)).collect();
        assert_eq!(outcomes(&out), want, "{period}");
    }
    // $time_local carries its own offset: the instants are the log's, the
    // days are those of the epoch's offset (its date is not used).
    fs::write(
        tmp.path().join("access.log"),
        "a [31/Mar/2026:23:59:59 +0530]\na [01/Apr/2026:00:00:00 +0530]\na [01/Apr/2026:00:00:01 +0530]\n",
    )
    .unwrap();
    let local = "$remote_addr [$time_local]";
    let start = "subsecond = \"start\"\n";
    let india = run(
        tmp.path(),
        &quota("day", "epoch = \"2020-06-01T00:00:00+05:30\"", local, start),
    );
    let in_utc = run(tmp.path(), &quota("day", "", local, start));
    let pairs = |v: &[(&str, u64)]| -> Vec<(String, String)> {
        v.iter()
            .map(|&(o, r)| {
                (
                    o.to_string(),
                    if r == 0 { String::new() } else { r.to_string() },
                )
            })
            .collect()
    };
    assert_eq!(
        outcomes(&india),
        pairs(&[("admitted", 0), ("admitted", 0), ("rejected", 86_399 * s)])
    );
    // 23:59:59 in India is 18:29:59 UTC: one UTC day, whose end is 5 h
    // 30 min after the second line.
    assert_eq!(
        outcomes(&in_utc),
        pairs(&[
            ("admitted", 0),
            ("rejected", 19_800 * s),
            ("rejected", 19_799 * s)
        ])
    );
}

/// 20 closed-loop clients thinking exp(100 ms) between answers, one
/// server of exp(10 ms) behind an open limit: the machine-repairman queue.
const CLOSED: &str = r#"name = "closed"
seed = 3
duration = "600s"

[defaults]
limit = 1000000
window = "1s"

[[limiter]]
algorithm = "token_bucket"

[[traffic]]
pattern = "closed"
clients = 20
think = "exp(100ms)"

[backend]
workers = 1
service = "exp(10ms)"

[output]
resolution = "1s"
"#;

/// Requests served and their mean latency (s), from `timeseries.csv`.
fn served_and_mean_latency(out: &Path) -> (u64, f64) {
    let (head, rows) = csv_rows(&out.join("timeseries.csv"));
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let (n, mean) = (col("backend_served"), col("latency_mean_ms"));
    let (mut served, mut sum) = (0u64, 0f64);
    for r in rows {
        let k: u64 = r[n].parse().unwrap_or(0);
        if k > 0 {
            served += k;
            sum += r[mean].parse::<f64>().unwrap() * k as f64;
        }
    }
    (served, sum / served as f64 / 1000.0)
}

#[test]
fn closed_loop_clients_keep_littles_law() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(tmp.path(), CLOSED);
    let row = summary_row(&out, "token_bucket");
    // One request out per client: never more inside than clients.
    assert_eq!(column(&row, "in_flight_peak"), 20);
    // Little's law for the whole loop: N = X · (R + Z), X the throughput,
    // R the mean response time, Z the mean think time.
    let (served, r) = served_and_mean_latency(&out);
    let x = served as f64 / 600.0;
    let n = x * (r + 0.1);
    assert!((n / 20.0 - 1.0).abs() < 0.02, "X {x}/s, R {r} s: N = {n}");
    // 20 clients of 110 ms each would ask 182/s: the server's 100/s holds
    // them back, and it is busy all the time.
    assert!((x / 100.0 - 1.0).abs() < 0.02, "X {x}");
    assert!(number(&row, "utilisation") > 0.99);
}

#[test]
fn a_client_that_times_out_sends_again_and_its_request_is_served_all_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(
        tmp.path(),
        &CLOSED.replace(
            "think = \"exp(100ms)\"",
            "think = \"exp(100ms)\"\ntimeout = \"150ms\"",
        ),
    );
    let row = summary_row(&out, "token_bucket");
    let timeouts = column(&row, "timeouts");
    assert!(timeouts > 1000, "{timeouts}");
    // The abandoned requests are still inside when their clients send
    // again: more inside than clients, and their service is wasted.
    assert!(column(&row, "in_flight_peak") > 20);
    assert!(number(&row, "wasted_work_s") > 10.0);
    // Every request served within the run either came in time or did not.
    let (served, _) = served_and_mean_latency(&out);
    let good = (number(&row, "goodput_per_s") * 600.0).round() as u64;
    assert!(
        good + timeouts <= served && served - good - timeouts < 50,
        "{good} {timeouts} {served}"
    );
}

/// docs/semantics.md §10: a response its client stopped waiting for is a
/// drop to an adaptive limiter (Netflix's `onDropped`): an AIMD limit whose
/// every response comes after the client's timeout backs off to its
/// floor, where with a timeout the responses meet it grows.
#[test]
fn a_response_after_the_clients_timeout_is_a_drop_to_an_adaptive_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let limits = |timeout: &str| {
        let out = run(
            tmp.path(),
            &format!(
                r#"name = "timeouts"
duration = "2s"
[defaults]
limit = 100
window = "1s"
[[limiter]]
algorithm = "aimd"
min_limit = 1
initial_limit = 4
[[traffic]]
pattern = "closed"
clients = 10
think = "const(1ms)"
timeout = "{timeout}"
[backend]
workers = 1
service = "const(50ms)"
[output]
resolution = "100ms"
"#
            ),
        );
        let (head, rows) = csv_rows(&out.join("timeseries.csv"));
        let at = head.iter().position(|h| h == "concurrency_limit").unwrap();
        // (A bucket with no decision leaves the cell empty.)
        let limits: Vec<u64> = rows
            .iter()
            .filter(|r| !r[at].is_empty())
            .map(|r| r[at].parse().unwrap())
            .collect();
        (limits, column(&summary_row(&out, "aimd"), "timeouts"))
    };
    let (late, timeouts) = limits("10ms");
    assert!(timeouts > 10, "{timeouts}");
    assert!(late.iter().all(|&l| l <= 4), "{late:?}");
    assert_eq!(late.last(), Some(&1), "{late:?}");
    let (in_time, timeouts) = limits("1s");
    assert_eq!(timeouts, 0);
    assert!(in_time.iter().any(|&l| l > 4), "{in_time:?}");
}

#[test]
fn closed_loop_runs_are_the_same_on_any_number_of_threads() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = CLOSED.replace(
        "[[limiter]]\nalgorithm = \"token_bucket\"\n",
        "[[limiter]]\nalgorithm = \"token_bucket\"\n\n[[limiter]]\nalgorithm = \"aimd\"\n\n[[limiter]]\nalgorithm = \"concurrency\"\nmax_in_flight = 1\n",
    )
    .replace("duration = \"600s\"", "duration = \"30s\"");
    let path = tmp.path().join("c.toml");
    fs::write(&path, scenario).unwrap();
    let mut outs = Vec::new();
    for threads in ["1", "2"] {
        let out = tmp.path().join(format!("t{threads}"));
        let ok = ratesim()
            .env("RAYON_NUM_THREADS", threads)
            .arg("run")
            .arg(&path)
            .args(["--decisions", "--quiet", "--no-plots", "--no-html", "--out"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            ok.status.success(),
            "{}",
            String::from_utf8_lossy(&ok.stderr)
        );
        outs.push(out);
    }
    for f in ["decisions.csv", "summary.csv", "timeseries.csv"] {
        assert_same_file(&outs[0].join(f), &outs[1].join(f));
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// docs/semantics.md §10: a global concurrency limit never lets more
    /// than `max_in_flight` requests inside the backend, whatever the
    /// workers, service times, queue, load and retries.
    #[test]
    fn in_flight_peak_is_never_above_max_in_flight(
        max_in_flight in 1u64..24,
        workers in 1u64..12,
        service_ms in 1u64..80,
        exponential in proptest::bool::ANY,
        queue in proptest::option::of(0u64..30),
        clients in 1u64..60,
        rate in 1u64..40,
        retry in proptest::bool::ANY,
        seed in 0u64..1000,
    ) {
        let service = if exponential {
            format!("exp({service_ms}ms)")
        } else {
            format!("const({service_ms}ms)")
        };
        let queue = queue.map_or(String::new(), |q| format!("queue = {q}\n"));
        let retry = if retry {
            "retry = { policy = \"immediate\", max_attempts = 3 }\n"
        } else {
            ""
        };
        let scenario = format!(
            "name = \"peak\"\nseed = {seed}\nduration = \"5s\"\n\n\
             [defaults]\nlimit = 10\nwindow = \"1s\"\n\n\
             [[limiter]]\nname = \"conc\"\nalgorithm = \"concurrency\"\n\
             max_in_flight = {max_in_flight}\nkey_by = \"global\"\n\n\
             [[traffic]]\npattern = \"poisson\"\nclients = {clients}\nrate = \"{rate}/1s\"\n{retry}\n\
             [backend]\nworkers = {workers}\nservice = \"{service}\"\n{queue}"
        );
        let tmp = tempfile::tempdir().unwrap();
        let out = run(tmp.path(), &scenario);
        let row = summary_row(&out, "conc");
        let peak = column(&row, "in_flight_peak");
        proptest::prop_assert!(peak <= max_in_flight, "{peak} > {max_in_flight}\n{scenario}");
        let (head, rows) = csv_rows(&out.join("timeseries.csv"));
        let col = head.iter().position(|h| h == "in_flight_max").unwrap();
        for r in rows {
            let inside: u64 = r[col].parse().unwrap_or(0);
            proptest::prop_assert!(inside <= max_in_flight, "{inside} > {max_in_flight}");
        }
    }
}

// Regression: behind a shared store and with no backend, a closed-loop
// client sent its next request a think time after the store's moment
// (half a round trip after its attempt), although it hears a rejection,
// and its time to success says it heard the pass, a whole round trip
// after (README, "Deployments": the client hears it rtt after arriving).
#[test]
fn a_closed_loop_client_hears_a_pass_through_a_store_a_round_trip_after_sending() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(
        tmp.path(),
        r#"name = "closed_store"
duration = "500ms"
[defaults]
limit = 5
window = "1s"
[[limiter]]
name = "glob"
algorithm = "token_bucket"
capacity = 1
deployment = { scope = "global", store_latency = "10ms" }
[[traffic]]
pattern = "closed"
think = "const(100ms)"
prefix = "c"
"#,
    );
    let (_, rows) = csv_rows(&out.join("decisions.csv"));
    let sent: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r[1].as_str(), r[5].as_str()))
        .collect();
    // Each request a think time (100 ms) after the one before was heard,
    // 10 ms (the round trip) after it was sent, passed or rejected alike.
    assert_eq!(
        sent,
        [
            ("100000000", "admitted"),
            ("210000000", "rejected"),
            ("320000000", "admitted"),
            ("430000000", "rejected")
        ]
    );
    let summary = fs::read_to_string(out.join("summary.json")).unwrap();
    assert!(
        summary.contains("\"time_to_success_p50_ms\": 10"),
        "{summary}"
    );
}
