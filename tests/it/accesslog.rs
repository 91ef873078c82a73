//! End to end: access logs as traces (docs/semantics.md §8), `ratesim import`, the
//! top keys and the agreement with the gateway — on synthetic logs and on
//! the real-nginx fixture (`tests/fixtures/nginx/`).

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::Path;

use crate::common::*;
use ratesim::accesslog::{Request, Verdict};
use ratesim::clock::Nanos;
use ratesim::limiter::Decision;
use ratesim::scenario::echo::Params;
use ratesim::scenario::Load as _;
use ratesim::scenario::Scenario;
use ratesim::traffic::Pattern;

const EPOCH_MS: u64 = 1_796_085_720_000;

const LIMITERS: &str = r#"
[defaults]
limit = 10
window = "1s"

[[limiter]]
algorithm = "token_bucket"
capacity = 5

[[limiter]]
implementation = "nginx"
queue = 3
delay = 1

[[limiter]]
algorithm = "fixed_window"

[[limiter]]
algorithm = "sliding_log"
key_by = "global"
limit = 40
"#;

/// `(arrival ms from the first, client, duration ms)`: strictly increasing
/// arrivals (so no order is ambiguous), a few long requests whose lines
/// are written after later arrivals'.
fn requests() -> Vec<(u64, String, u64)> {
    let mut x = 12345u64;
    let mut t = 0u64;
    let mut out = Vec::new();
    for i in 0..600 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let client = ["a", "b", "c", "heavy", "heavy", "heavy"][(x >> 33) as usize % 6];
        let duration = if i % 17 == 0 { (x >> 40) % 900 } else { 0 };
        out.push((t, client.to_string(), duration));
        t += 1 + (x >> 50) % 60;
    }
    out
}

/// The requests in the order their lines are written (response time).
fn log_order(reqs: &[(u64, String, u64)]) -> Vec<&(u64, String, u64)> {
    let mut v: Vec<_> = reqs.iter().collect();
    v.sort_by_key(|(t, _, d)| t + d);
    v
}

fn run_decisions(dir: &Path, name: &str, traffic: &str) -> String {
    let toml = dir.join(format!("{name}.toml"));
    fs::write(
        &toml,
        format!("name = \"same\"\n{LIMITERS}\n[[traffic]]\n{traffic}"),
    )
    .unwrap();
    let out = dir.join(format!("out-{name}"));
    let o = ratesim()
        .args([
            "run",
            toml.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--decisions",
            "--no-plots",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    read_text(&out.join("decisions.csv"))
}

/// `ratesim run TOML --out OUT EXTRA… --no-plots --quiet`, which must
/// succeed.
fn run_quietly(toml: &Path, out: &Path, extra: &[&str]) {
    ratesim()
        .arg("run")
        .arg(toml)
        .arg("--out")
        .arg(out)
        .args(extra)
        .args(["--no-plots", "--quiet"])
        .assert()
        .success();
}

#[test]
fn the_same_requests_as_csv_nginx_envoy_and_json_lines_decide_identically() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let reqs = requests();
    let mut csv = String::from("time_ns,client\n");
    for (t, c, _) in &reqs {
        csv.push_str(&format!("{},{c}\n", t * 1_000_000));
    }
    fs::write(dir.join("t.csv"), csv).unwrap();
    let mut nginx = String::new();
    let mut envoy = String::new();
    let mut jsonl = String::new();
    for (t, c, d) in log_order(&reqs) {
        let end = EPOCH_MS + t + d;
        nginx.push_str(&format!(
            "{}.{:03} {}.{:03} 200 PASSED {c} \"GET /x HTTP/1.1\"\n",
            end / 1000,
            end % 1000,
            d / 1000,
            d % 1000
        ));
        let start = EPOCH_MS + t;
        // docs/semantics.md §8: Envoy's `%START_TIME%` is the request's
        // start, the arrival itself; the `%DURATION%` = d beside it is not
        // subtracted.
        let secs = start / 1000;
        envoy.push_str(&format!(
            "[2026-12-01T00:{:02}:{:02}.{:03}Z] {c} - {d}\n",
            42 + (secs - 1_796_085_720) / 60,
            (secs - 1_796_085_720) % 60,
            start % 1000
        ));
        jsonl.push_str(&format!(
            "{{\"ts\": {start}, \"user\": \"{c}\", \"path\": \"/x\"}}\n"
        ));
    }
    fs::write(dir.join("n.log"), nginx).unwrap();
    fs::write(dir.join("e.log"), envoy).unwrap();
    fs::write(dir.join("j.log"), jsonl).unwrap();
    let csv = run_decisions(dir, "csv", "pattern = \"trace\"\npath = \"t.csv\"\n");
    let nginx = run_decisions(
        dir,
        "nginx",
        "pattern = \"trace\"\nformat = \"nginx\"\npath = \"n.log\"\nlog_format = '$msec $request_time $status $limit_req_status $http_x_client \"$request\"'\nclient = \"$http_x_client\"\n",
    );
    let envoy = run_decisions(
        dir,
        "envoy",
        "pattern = \"trace\"\nformat = \"envoy\"\npath = \"e.log\"\nlog_format = \"[%START_TIME%] %REQ(X-CLIENT)% %RESPONSE_FLAGS% %DURATION%\\n\"\nclient = \"%REQ(X-CLIENT)%\"\n",
    );
    let jsonl = run_decisions(
        dir,
        "jsonl",
        "pattern = \"trace\"\nformat = \"jsonl\"\npath = \"j.log\"\ntime = \"ts\"\ntime_unit = \"ms\"\nclient = \"user\"\n",
    );
    assert!(csv.lines().count() > 2000);
    assert!(csv.contains(",rejected,") && csv.contains(",delayed,"));
    assert_eq!(nginx, csv, "nginx");
    assert_eq!(envoy, csv, "envoy");
    assert_eq!(jsonl, csv, "jsonl");

    // A gzip-compressed log replays as the plain one.
    let gz = fs::File::create(dir.join("n.log.gz")).unwrap();
    let mut enc = flate2::write::GzEncoder::new(gz, flate2::Compression::default());
    enc.write_all(&fs::read(dir.join("n.log")).unwrap())
        .unwrap();
    enc.finish().unwrap();
    let gz = run_decisions(
        dir,
        "gz",
        "pattern = \"trace\"\nformat = \"nginx\"\npath = \"n.log.gz\"\nlog_format = '$msec $request_time $status $limit_req_status $http_x_client \"$request\"'\nclient = \"$http_x_client\"\n",
    );
    assert_eq!(gz, csv, "gzip");
}

// A gzip log is inflated on a second thread when there is one (crates/
// input/src/accesslog/blocks.rs): on one thread or two, the same
// decisions, and for a log cut short the same error.
#[test]
fn a_gzip_log_reads_the_same_on_one_thread_or_two() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut log = String::new();
    for i in 0..200_000u64 {
        let t = EPOCH_MS + i / 20;
        log += &format!("{}.{:03} k{}\n", t / 1000, t % 1000, i * 7919 % 301);
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(log.as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    fs::write(dir.join("n.log.gz"), &gz).unwrap();
    fs::write(dir.join("cut.log.gz"), &gz[..gz.len() * 3 / 5]).unwrap();
    let scenario =
        |name: &str| log_scenario(dir, name, &format!("{name}.log.gz"), "$msec $http_x_k", "");
    let runs = runs_on_one_thread_and_two(dir, &scenario("n"));
    assert!(runs[0].0.lines().count() > 4 * 200_000);
    assert_eq!(runs[0], runs[1]);
    let errors = refusals_on_one_thread_and_two(&scenario("cut"));
    assert!(errors[0].contains(": cannot be read: "), "{}", errors[0]);
    assert_eq!(errors[0], errors[1]);
}

// A plain log's lines are read on a thread of their own when there is a
// second one (crates/input/src/accesslog/pipeline.rs): on one thread or
// two, the same decisions and counts for a log out of order with blank
// and bad lines skipped, and the same error for a bad line not skipped.
#[test]
fn a_plain_log_reads_the_same_on_one_thread_or_two() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let log = log_as_written(|_| String::new());
    fs::write(dir.join("n.log"), &log).unwrap();
    let format = "$msec $http_x_k $request_time";
    let skipping = log_scenario(dir, "skip", "n.log", format, "on_bad_line = \"skip\"\n");
    let runs = runs_on_one_thread_and_two(dir, &skipping);
    assert!(runs[0].0.lines().count() > 4 * 60_000);
    assert!(runs[0].1.contains("6 bad lines skipped"), "{}", runs[0].1);
    assert_eq!(runs[0], runs[1]);
    let errors = refusals_on_one_thread_and_two(&log_scenario(dir, "strict", "n.log", format, ""));
    assert!(errors[0].contains("line 4004: "), "{}", errors[0]);
    assert_eq!(errors[0], errors[1]);
}

// A plain log of long lines is read in pieces parsed side by side when
// there is a second thread (crates/input/src/accesslog/pieces.rs), its
// gzipped copy on one thread of its own: on one thread, two or three,
// the same decisions and counts with blank and bad lines skipped, and the
// same error for a bad line not skipped and for a line over the cap.
#[test]
fn a_log_of_long_lines_reads_the_same_in_pieces() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let log = log_as_written(|i| {
        format!(
            " \"GET /api/v1/items/{}?page={}&sort=name HTTP/1.1\"",
            i % 1000,
            i % 7
        )
    });
    // Long enough lines (crates/input/src/accesslog/pieces.rs LONG_LINE),
    // and many pieces of 256 KiB.
    assert!(log.len() > 60_000 * 70 && log.len() > 10 << 18);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(log.as_bytes()).unwrap();
    fs::write(dir.join("n.log.gz"), gz.finish().unwrap()).unwrap();
    let mut over = log.clone().into_bytes();
    let at = over.len() / 2
        + over[over.len() / 2..]
            .iter()
            .position(|&b| b == b'\n')
            .unwrap();
    over.splice(at..at, std::iter::repeat_n(b'x', 70_000));
    fs::write(dir.join("over.log"), over).unwrap();
    fs::write(dir.join("n.log"), &log).unwrap();
    let format = "$msec $http_x_k \"$request\" $request_time";
    let skip = "on_bad_line = \"skip\"\n";
    for name in ["n.log", "n.log.gz"] {
        let skipping = log_scenario(dir, "skip", name, format, skip);
        let runs = ["1", "2", "3"].map(|threads| run_on_threads(dir, &skipping, threads));
        assert!(runs[0].0.lines().count() > 4 * 60_000, "{name}");
        assert!(runs[0].1.contains("6 bad lines skipped"), "{}", runs[0].1);
        assert!(runs[1] == runs[0] && runs[2] == runs[0], "{name}");
    }
    let strict = log_scenario(dir, "strict", "n.log", format, "");
    let errors = refusals_on_one_thread_and_two(&strict);
    assert!(errors[0].contains("line 4004: "), "{}", errors[0]);
    assert_eq!(errors[0], errors[1]);
    let errors =
        refusals_on_one_thread_and_two(&log_scenario(dir, "over", "over.log", format, skip));
    assert!(
        errors[0].contains("longer than 65536 bytes"),
        "{}",
        errors[0]
    );
    assert_eq!(errors[0], errors[1]);
}

/// A log of 60 000 lines, `$msec $http_x_k`, then what `request` says of
/// line `i`, then ` $request_time`, written as requests end (a line's
/// arrival is up to 0.4 s before the line above it); a blank line after
/// line 18 and every 9 973 lines, and a bad line after line 4 002
/// likewise.
fn log_as_written(request: impl Fn(u64) -> String) -> String {
    let mut log = String::new();
    for i in 0..60_000u64 {
        let end = EPOCH_MS + i / 20;
        let took = i * 7 % 5 * 100;
        log += &format!(
            "{}.{:03} k{}{} {}.{:03}\n",
            end / 1000,
            end % 1000,
            i * 7919 % 301,
            request(i),
            took / 1000,
            took % 1000
        );
        match i % 9_973 {
            17 => log += "\n",
            4_001 => log += "not a line of this format\n",
            _ => {}
        }
    }
    log
}

/// `dir`/`name`.toml: one nginx log of `dir` replayed by `log_format`,
/// keyed by `$http_x_k`, with `more` in its `[[traffic]]`.
fn log_scenario(
    dir: &Path,
    name: &str,
    log: &str,
    log_format: &str,
    more: &str,
) -> std::path::PathBuf {
    let toml = dir.join(format!("{name}.toml"));
    fs::write(
        &toml,
        format!(
            "duration = \"20000s\"\n{LIMITERS}\n[[traffic]]\npattern = \"trace\"\nformat = \"nginx\"\npath = \"{log}\"\nlog_format = '{log_format}'\nclient = \"$http_x_k\"\n{more}"
        ),
    )
    .unwrap();
    toml
}

/// `ratesim` with `args` on `threads` threads (`RAYON_NUM_THREADS`).
fn on_threads(threads: &str, args: &[&std::ffi::OsStr]) -> std::process::Output {
    ratesim()
        .env("RAYON_NUM_THREADS", threads)
        .args(args)
        .output()
        .unwrap()
}

/// `toml` run on one thread and on two (into `dir`): each run's
/// decisions.csv and summary.md.
fn runs_on_one_thread_and_two(dir: &Path, toml: &Path) -> [(String, String); 2] {
    ["1", "2"].map(|threads| run_on_threads(dir, toml, threads))
}

/// `toml` run on `threads` threads (into `dir`): its decisions.csv and
/// summary.md.
fn run_on_threads(dir: &Path, toml: &Path, threads: &str) -> (String, String) {
    let out = dir.join(format!("out-{threads}"));
    let o = on_threads(
        threads,
        &[
            "run".as_ref(),
            toml.as_os_str(),
            "--out".as_ref(),
            out.as_os_str(),
            "--decisions".as_ref(),
            "--no-plots".as_ref(),
            "--no-html".as_ref(),
            "--quiet".as_ref(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (
        read_text(&out.join("decisions.csv")),
        read_text(&out.join("summary.md")),
    )
}

/// `validate` of a refused `toml` on one thread and on two: each one's
/// message (it exits 2).
fn refusals_on_one_thread_and_two(toml: &Path) -> [String; 2] {
    ["1", "2"].map(|threads| {
        let o = on_threads(threads, &["validate".as_ref(), toml.as_os_str()]);
        assert_eq!(o.status.code(), Some(2));
        String::from_utf8_lossy(&o.stderr).into_owned()
    })
}

fn scenario_with(dir: &Path, traffic: &str) -> std::path::PathBuf {
    let toml = dir.join("s.toml");
    fs::write(
        &toml,
        format!("{LIMITERS}\n[[traffic]]\npattern = \"trace\"\n{traffic}"),
    )
    .unwrap();
    toml
}

fn requests_of(toml: &Path) -> Vec<Request> {
    let s = Scenario::load(toml.to_str().unwrap()).unwrap();
    let Pattern::Trace(t) = &s.traffic[0].pattern else {
        panic!()
    };
    let mut r = ratesim::accesslog::AccessLog::of(&**t)
        .unwrap()
        .requests()
        .unwrap();
    let mut out = Vec::new();
    while let Some(x) = r.next_request().unwrap() {
        out.push(x);
    }
    out
}

#[test]
fn equal_arrivals_of_a_key_go_passed_then_delayed_shortest_first_then_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    // Five requests of one key arriving at 0.100; logged out of order.
    let log = "\
1796085720.000 0.000 200 PASSED a\n\
1796085720.100 0.000 429 REJECTED a\n\
1796085720.100 0.000 200 PASSED a\n\
1796085720.400 0.300 200 DELAYED a\n\
1796085720.300 0.200 200 DELAYED a\n\
1796085720.100 0.000 200 PASSED b\n";
    fs::write(tmp.path().join("a.log"), log).unwrap();
    let toml = scenario_with(
        tmp.path(),
        "format = \"nginx\"\npath = \"a.log\"\nlog_format = \"$msec $request_time $status $limit_req_status $http_x_client\"\nclient = \"$http_x_client\"\n",
    );
    let lines: Vec<u64> = requests_of(&toml).iter().map(|r| r.line).collect();
    // Passed (lines 3 and 6, in log order), delayed 200 ms (5) before
    // 300 ms (4), rejected (2).
    assert_eq!(lines, vec![1, 3, 6, 5, 4, 2]);
    let times: Vec<u64> = requests_of(&toml).iter().map(|r| r.time.0).collect();
    assert_eq!(
        times,
        vec![
            0,
            100_000_000,
            100_000_000,
            100_000_000,
            100_000_000,
            100_000_000
        ]
    );
}

#[test]
fn a_line_older_than_the_reorder_window_is_a_bad_line() {
    let tmp = tempfile::tempdir().unwrap();
    let log = "1796085720.000 0.000 a\n1796085790.000 0.000 a\n1796085790.500 61.000 b\n";
    fs::write(tmp.path().join("a.log"), log).unwrap();
    let fmt = "format = \"nginx\"\npath = \"a.log\"\nlog_format = \"$msec $request_time $http_x_client\"\nclient = \"$http_x_client\"\n";
    let toml = scenario_with(tmp.path(), fmt);
    assert_input_error(
        ratesim().args(["validate", toml.to_str().unwrap()]),
        &[
            "line 3: arrives 60.5s before line 2's",
            "reorder",
            "\"1796085790.500 61.000 b\"",
        ],
    );
    // A wider window takes it; skipping counts it.
    let toml = scenario_with(tmp.path(), &format!("{fmt}reorder = \"2m\"\n"));
    let r = requests_of(&toml);
    assert_eq!(r.iter().map(|r| r.line).collect::<Vec<_>>(), vec![1, 3, 2]);
    let toml = scenario_with(tmp.path(), &format!("{fmt}on_bad_line = \"skip\"\n"));
    assert_eq!(requests_of(&toml).len(), 2);
    let out = tmp.path().join("out");
    run_quietly(&toml, &out, &[]);
    assert!(read_text(&out.join("summary.json")).contains("\"bad_lines_skipped\": 1"));
    assert!(read_text(&out.join("summary.md")).contains("**1 bad lines skipped**"));
    // The summary says how many lines the window moved: with a 2-minute
    // window, line 3 (arriving 60.5 s before line 2's arrival) is one.
    let toml = scenario_with(tmp.path(), &format!("{fmt}reorder = \"2m\"\n"));
    let out = tmp.path().join("out2");
    run_quietly(&toml, &out, &[]);
    let summary = read_text(&out.join("summary.json"));
    assert!(summary.contains("\"lines_reordered\": 1"), "{summary}");
    let md = read_text(&out.join("summary.md"));
    assert!(md.contains("re-ordered within 2m (1 line moved)"), "{md}");
    // A window of zero is refused like any zero duration (README,
    // "Parameters: accepted ranges"), naming the field and the value;
    // "1ns" is the strictest accepted.
    let toml = scenario_with(tmp.path(), &format!("{fmt}reorder = \"0s\"\n"));
    assert_input_error(
        ratesim().args(["validate", toml.to_str().unwrap()]),
        &["reorder", "\"0s\"", "must be longer than zero"],
    );
}

#[test]
fn a_line_that_does_not_parse_names_its_number_and_quotes_80_characters() {
    let tmp = tempfile::tempdir().unwrap();
    let junk = "x".repeat(300);
    fs::write(
        tmp.path().join("a.log"),
        format!("1796085720.000 a\n{junk}\n"),
    )
    .unwrap();
    let toml = scenario_with(
        tmp.path(),
        "format = \"nginx\"\npath = \"a.log\"\nlog_format = \"$msec $http_x_client\"\nclient = \"$http_x_client\"\n",
    );
    let e = assert_input_error(
        ratesim().args(["validate", toml.to_str().unwrap()]),
        &["line 2: ", &format!("\"{}…\" (300 bytes)", "x".repeat(80))],
    );
    assert!(!e.contains(&"x".repeat(81)));
}

#[test]
fn whole_second_stamps_need_subsecond_and_spread_places_a_seconds_requests_evenly() {
    let tmp = tempfile::tempdir().unwrap();
    let log = "\
10.0.0.1 - - [01/Dec/2026:00:42:00 +0000] \"GET / HTTP/1.1\" 200 3 \"-\" \"c\"\n\
10.0.0.2 - - [01/Dec/2026:00:42:00 +0000] \"GET / HTTP/1.1\" 200 3 \"-\" \"c\"\n\
10.0.0.1 - - [01/Dec/2026:00:42:00 +0000] \"GET / HTTP/1.1\" 200 3 \"-\" \"c\"\n\
10.0.0.1 - - [01/Dec/2026:00:42:01 +0000] \"GET / HTTP/1.1\" 429 3 \"-\" \"c\"\n";
    fs::write(tmp.path().join("a.log"), log).unwrap();
    let toml = scenario_with(tmp.path(), "format = \"nginx\"\npath = \"a.log\"\n");
    assert_input_error(
        ratesim().args(["validate", toml.to_str().unwrap()]),
        &[
            "traffic[0].subsecond: missing",
            "$time_local has whole seconds only",
            "\"spread\"",
        ],
    );
    let toml = scenario_with(
        tmp.path(),
        "format = \"nginx\"\npath = \"a.log\"\nsubsecond = \"spread\"\n",
    );
    let t: Vec<u64> = requests_of(&toml).iter().map(|r| r.time.0).collect();
    assert_eq!(t, vec![0, 333_333_333, 666_666_666, 1_000_000_000]);
    let toml = scenario_with(
        tmp.path(),
        "format = \"nginx\"\npath = \"a.log\"\nsubsecond = \"start\"\n",
    );
    let t: Vec<u64> = requests_of(&toml).iter().map(|r| r.time.0).collect();
    assert_eq!(t, vec![0, 0, 0, 1_000_000_000]);
    let out = tmp.path().join("out");
    run_quietly(&toml, &out, &[]);
    assert!(read_text(&out.join("summary.md")).contains("subsecond start: whole-second stamps"));
}

#[test]
fn a_key_field_the_log_format_lacks_is_refused_naming_those_it_has() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("a.log"), "x\n").unwrap();
    let toml = scenario_with(
        tmp.path(),
        "format = \"nginx\"\npath = \"a.log\"\nsubsecond = \"start\"\nclient = \"$http_x_user\"\n",
    );
    assert_input_error(
        ratesim().args(["validate", toml.to_str().unwrap()]),
        &[
            "traffic[0].client",
            "\"$http_x_user\" is not in log_format",
            "$remote_addr, $remote_user, $time_local",
        ],
    );
    let toml = scenario_with(
        tmp.path(),
        "format = \"nginx\"\npath = \"a.log\"\ntime = \"$date_gmt\"\n",
    );
    assert_input_error(
        ratesim().args(["validate", toml.to_str().unwrap()]),
        &["traffic[0].time", "$msec, $time_iso8601, $time_local"],
    );
}

/// `log_format = "combined"` is nginx's predefined format by its name (as
/// leaving it out is); another name is refused, saying to give the text.
#[test]
fn combined_may_be_named_and_another_format_name_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(
        tmp.path().join("a.log"),
        "10.0.0.1 - - [01/Dec/2026:00:42:00 +0000] \"GET / HTTP/1.1\" 200 5 \"-\" \"ua\"\n",
    )
    .unwrap();
    let named = |name: &str| {
        scenario_with(
            tmp.path(),
            &format!("format = \"nginx\"\npath = \"a.log\"\nsubsecond = \"start\"\nlog_format = \"{name}\"\n"),
        )
    };
    let o = ratesim()
        .args(["validate", named("combined").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_input_error(
        ratesim().args(["validate", named("main").to_str().unwrap()]),
        &[
            "traffic[0].log_format",
            "give the format's text, as `log_format main '…'` in nginx.conf writes it",
        ],
    );
}

// ---------------------------------------------------------------- import

fn import(args: &[&str]) -> String {
    let o = ratesim().arg("import").args(args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn the_envoy_example_filter_imports_to_a_token_bucket_of_20_refilled_every_50ms() {
    let toml = import(&["tests/fixtures/envoy/local_ratelimit.yaml"]);
    assert!(toml.contains("# tests/fixtures/envoy/local_ratelimit.yaml:24: local_ratelimit http_local_rate_limiter token_bucket"), "{toml}");
    assert!(
        toml.contains(
            "implementation = \"envoy\"\ncapacity = 20\nrate = \"1/50ms\"\nkey_by = \"global\""
        ),
        "{toml}"
    );
    let s = Scenario::parse(&toml, "x", ratesim::scenario::Origin::File("x.toml".into())).unwrap();
    let params = s.limiters[0].algorithm.params();
    assert_eq!(s.limiters[0].algorithm.name(), "token_bucket");
    assert_eq!(params["capacity"], 20);
    assert_eq!(params["rate"], "1/50ms");
    let timer = import(&["tests/fixtures/envoy/local_ratelimit.yaml", "--envoy-timer"]);
    assert!(timer.contains("implementation = \"envoy-timer\"\nmax_tokens = 20\ntokens_per_fill = 1\nfill_interval = \"50ms\""), "{timer}");
    let rl = import(&["tests/fixtures/envoy/ratelimit.yaml"]);
    assert!(
        rl.contains("implementation = \"envoy-ratelimit\"\nlimit = 10\nwindow = \"1s\"\n"),
        "{rl}"
    );
    assert!(rl.contains("shadow_mode"), "{rl}");
}

#[test]
fn bad_configs_exit_2_naming_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("bad.conf");
    fs::write(
        &conf,
        "http {\n  limit_req_zone $binary_remote_addr zone=one:10m rate=5r/h;\n}\n",
    )
    .unwrap();
    assert_input_error(
        ratesim().args(["import", conf.to_str().unwrap()]),
        &["bad.conf:2: rate=\"5r/h\"", "rate=10r/s"],
    );
    fs::write(&conf, "http {\n  limit_req_zone $binary_remote_addr zone=one:10m rate=5r/s;\n  server {\n    limit_req burst=5;\n  }\n}\n").unwrap();
    assert_input_error(
        ratesim().args(["import", conf.to_str().unwrap()]),
        &["bad.conf:4:", "no zone=NAME"],
    );
    fs::write(&conf, "http {\n  limit_req_zone $binary_remote_addr zone=one:10m rate=5r/s;\n  limit_req zone=two;\n}\n").unwrap();
    assert_input_error(
        ratesim().args(["import", conf.to_str().unwrap()]),
        &["bad.conf:3:", "no limit_req_zone defines zone \"two\""],
    );
}

/// The fixture's config, imported with the fixture's log.
pub(crate) fn imported_fixture(dir: &Path) -> std::path::PathBuf {
    let toml = import(&["tests/fixtures/nginx/nginx.conf", "--trace", "access.log"]);
    assert!(
        toml.contains("# tests/fixtures/nginx/nginx.conf:43: limit_req zone=perclient;"),
        "{toml}"
    );
    assert!(toml.contains("client = \"$http_x_client\""), "{toml}");
    fs::copy(
        manifest_dir().join("tests/fixtures/nginx/access.log"),
        dir.join("access.log"),
    )
    .unwrap();
    let path = dir.join("imported.toml");
    fs::write(&path, toml).unwrap();
    path
}

#[test]
fn an_imported_nginx_config_decides_exactly_like_the_leaky_buckets_it_maps_to() {
    let tmp = tempfile::tempdir().unwrap();
    let imported = imported_fixture(tmp.path());
    let text = read_text(&imported);
    let hand = text.replace(
        "implementation = \"nginx\"",
        "algorithm = \"leaky_bucket\"\narithmetic = \"nginx\"",
    );
    let hand_path = imported.with_extension("hand.toml");
    fs::write(&hand_path, hand).unwrap();
    let run = |p: &Path, out: &str| {
        let out = tmp.path().join(out);
        run_quietly(p, &out, &["--decisions"]);
        out
    };
    let a = run(&imported, "imported");
    let b = run(&hand_path, "hand");
    assert_same_file(&a.join("decisions.csv"), &b.join("decisions.csv"));
    assert_same_file(&a.join("summary.csv"), &b.join("summary.csv"));
    // Hand-written limiters are not the gateway's preset: no agreement.
    assert!(a.join("agreement.csv").is_file() && !b.join("agreement.csv").exists());
    let top = read_text(&a.join("top_keys.csv"));
    assert!(top.starts_with("limiter,rank,key,attempts,admitted,delayed,rejected,peak_in_window\nplain-perclient,1,heavy,300,70,0,230,"), "{top}");
}

/// Per limiter `(agreeing, compared)` from `agreement.csv`.
fn agreement(dir: &Path) -> HashMap<String, (u64, u64)> {
    let (_, rows) = csv_rows(&dir.join("agreement.csv"));
    let mut out: HashMap<String, (u64, u64)> = HashMap::new();
    for r in rows {
        let n: u64 = r[3].parse().unwrap();
        // docs/semantics.md §8; `none` (no verdict) is not compared.
        let agree = matches!(
            (r[1].as_str(), r[2].as_str()),
            ("passed", "admitted")
                | ("delayed", "delayed")
                | ("rejected", "rejected")
                | ("not_rejected", "admitted" | "delayed")
        );
        let e = out.entry(r[0].clone()).or_default();
        e.0 += agree as u64 * n;
        e.1 += (r[1] != "none") as u64 * n;
    }
    out
}

#[test]
fn on_the_real_nginx_log_the_imported_config_agrees_with_nginx_but_for_millisecond_clock_noise() {
    let tmp = tempfile::tempdir().unwrap();
    let imported = imported_fixture(tmp.path());
    let out = tmp.path().join("run");
    let o = ratesim()
        .args([
            "run",
            imported.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--no-plots",
        ])
        .output()
        .unwrap();
    assert!(o.status.success());
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("plain-perclient: 728 of 750 agree"),
        "{stdout}"
    );
    // The same counts as the fixture's own independent check
    // (scripts/nginx-fixture-check.py, README "verdicts agree").
    let a = agreement(&out);
    assert_eq!(a["plain-perclient"], (728, 750));
    assert_eq!(a["slow-slow"], (51, 51));
    assert_eq!(a["nodelay-nodelay"], (746, 751));
    assert_eq!(a["delay-delay3"], (730, 746));
    assert!(read_text(&out.join("summary.md")).contains("## Agreement with the gateway"));
    // report.html holds both files, cell for cell.
    let page = read_text(&out.join("report.html"));
    for (file, id) in [
        ("agreement.csv", "agreement"),
        ("disagreements.csv", "disagreements"),
    ] {
        let (head, mut rows) = csv_rows(&out.join(file));
        rows.truncate(100);
        assert_eq!(crate::report::html_table(&page, id), (head, rows), "{file}");
    }

    // Every disagreement is millisecond clock noise: nginx's limiter reads
    // a different millisecond than its log prints (fixture README). Moving
    // arrivals by at most 1 ms, one disagreement at a time, makes every
    // verdict of every location agree.
    let s = Scenario::load(imported.to_str().unwrap()).unwrap();
    let mut moved_total = 0;
    for (i, spec) in s.limiters.iter().enumerate() {
        let Pattern::Trace(t) = &s.traffic[spec.traffic[0]].pattern else {
            panic!()
        };
        let mut r = ratesim::accesslog::AccessLog::of(&**t)
            .unwrap()
            .requests()
            .unwrap();
        let mut reqs = Vec::new();
        while let Some(x) = r.next_request().unwrap() {
            reqs.push(x);
        }
        let mut shift: HashMap<u64, i64> = HashMap::new();
        let first_disagreement = |shift: &HashMap<u64, i64>| -> Option<(usize, u64)> {
            let mut order: Vec<(u64, u8, u64, usize)> = reqs
                .iter()
                .enumerate()
                .map(|(k, q)| {
                    let t = (q.time.0 as i64 + shift.get(&q.line).copied().unwrap_or(0) * 1_000_000)
                        as u64;
                    let rank = match q.verdict {
                        Some(Verdict::Delayed) => 1,
                        Some(Verdict::Rejected) => 2,
                        _ => 0,
                    };
                    (t, rank, q.delay, k)
                })
                .collect();
            order.sort();
            let mut l = spec.algorithm.build();
            for (pos, &(t, _, _, k)) in order.iter().enumerate() {
                let q = &reqs[k];
                let d = l.decide(q.client, Nanos(t), q.cost);
                let ok = matches!(
                    (q.verdict, d),
                    (Some(Verdict::Passed), Decision::Admitted)
                        | (Some(Verdict::Delayed), Decision::Delayed { .. })
                        | (Some(Verdict::Rejected), Decision::Rejected { .. })
                );
                if !ok {
                    return Some((pos, q.line));
                }
            }
            None
        };
        let mut tries = 0;
        while let Some((pos, line)) = first_disagreement(&shift) {
            tries += 1;
            assert!(tries < 200, "limiter {i}: too many disagreements");
            // Candidates: this request, or the same key's request before it.
            let q = reqs.iter().find(|q| q.line == line).unwrap();
            let prev = reqs
                .iter()
                .filter(|p| p.client == q.client && p.time < q.time && !shift.contains_key(&p.line))
                .max_by_key(|p| p.time)
                .map(|p| p.line);
            let mut fixed = false;
            for cand in [Some(line), prev].into_iter().flatten() {
                if shift.contains_key(&cand) {
                    continue;
                }
                for d in [-1i64, 1] {
                    let mut s2 = shift.clone();
                    s2.insert(cand, d);
                    if first_disagreement(&s2).is_none_or(|(p2, _)| p2 > pos) {
                        shift = s2;
                        fixed = true;
                        break;
                    }
                }
                if fixed {
                    break;
                }
            }
            assert!(
                fixed,
                "{}: line {line} disagrees with nginx by more than 1 ms of clock",
                spec.name
            );
        }
        moved_total += shift.len();
    }
    // 22 + 5 + 16 disagreements, resolved by moving fewer requests still.
    eprintln!("requests moved by 1 ms: {moved_total}");
    assert!(moved_total <= 43, "{moved_total}");
}

// ------------------------------------------------ issue 23: two locations

/// Two locations as in issue 23: `/api/` per address at 20r/s burst=10
/// nodelay, `/key/` per `X-Api-Key` at 5r/s burst=5; `{status}` is the
/// config's `limit_req_status` line (or none), `{format}` its log format.
fn two_location_conf(status: &str, format: &str) -> String {
    format!(
        "http {{
    log_format main '{format}';
    access_log logs/access.log main;
    limit_req_zone $binary_remote_addr zone=perip:1m rate=20r/s;
    limit_req_zone $http_x_api_key zone=perkey:1m rate=5r/s;
    {status}
    server {{
        location /api/ {{ limit_req zone=perip burst=10 nodelay; }}
        location /key/ {{ limit_req zone=perkey burst=5; }}
    }}
}}
"
    )
}

const TWO_FORMAT: &str = "$msec $request_time $status $remote_addr $http_x_api_key \"$request\"";

/// A log of the two locations, as nginx decides it, with `rejected` as
/// the status of a rejection. `/api/`: 10.0.0.1 sends 15 requests at
/// once (11 pass on the burst, 4 rejected); 10.0.0.2 one every 100 ms
/// (all pass); none carries an API key. `/key/`: key k1 sends 10 at
/// once (1 passes, 5 are delayed 200..1000 ms, 4 rejected), five
/// requests without a key (nginx does not account them), and k2 one a
/// second (all pass). 53 lines: 35 `/api/`, 18 `/key/` (5 without a key).
fn two_location_log(rejected: u16) -> String {
    let mut lines: Vec<(u64, String)> = Vec::new();
    let mut line =
        |arrival_ms: u64, delay_ms: u64, status: u16, addr: &str, key: &str, path: &str| {
            let end = EPOCH_MS + arrival_ms + delay_ms;
            lines.push((
                end,
                format!(
                    "{}.{:03} {}.{:03} {status} {addr} {key} \"GET {path} HTTP/1.1\"",
                    end / 1000,
                    end % 1000,
                    delay_ms / 1000,
                    delay_ms % 1000
                ),
            ));
        };
    for i in 0..15 {
        let status = if i < 11 { 200 } else { rejected };
        line(0, 0, status, "10.0.0.1", "-", "/api/items");
    }
    for i in 0..20 {
        line(i * 100, 0, 200, "10.0.0.2", "-", "/api/search");
    }
    for i in 0..10u64 {
        let (delay, status) = match i {
            0 => (0, 200),
            1..=5 => (i * 200, 200),
            _ => (0, rejected),
        };
        line(1000, delay, status, "10.0.0.3", "k1", "/key/a");
    }
    for _ in 0..5 {
        line(1000, 0, 200, "10.0.0.4", "-", "/key/a");
    }
    for i in 0..3 {
        line(500 + i * 1000, 0, 200, "10.0.0.5", "k2", "/key/b");
    }
    // Written when each response was sent.
    lines.sort_by_key(|(end, _)| *end);
    lines.into_iter().map(|(_, l)| l + "\n").collect()
}

/// Imports `conf` with the log in `dir` and runs it: (scenario, stdout,
/// run directory).
fn import_and_run(
    dir: &Path,
    conf: &str,
    log: &str,
    extra: &[&str],
) -> (String, String, std::path::PathBuf) {
    fs::write(dir.join("nginx.conf"), conf).unwrap();
    fs::write(dir.join("access.log"), log).unwrap();
    let conf_path = dir.join("nginx.conf");
    let mut args = vec![conf_path.to_str().unwrap(), "--trace", "access.log"];
    args.extend_from_slice(extra);
    let toml = import(&args);
    let path = dir.join("replay.toml");
    fs::write(&path, &toml).unwrap();
    let out = dir.join("run");
    let o = ratesim()
        .args([
            "run",
            path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--no-plots",
        ])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}\n{toml}",
        String::from_utf8_lossy(&o.stderr)
    );
    (toml, String::from_utf8(o.stdout).unwrap(), out)
}

/// Per limiter `(agree, of)` as the terminal, summary.md and
/// agreement.csv give them; asserts the three are one count.
fn one_agreement_count(stdout: &str, out: &Path) -> HashMap<String, (u64, u64)> {
    let csv = agreement(out);
    let md = read_text(&out.join("summary.md"));
    for (limiter, (agree, of)) in &csv {
        assert!(
            stdout.contains(&format!("  {limiter}: {agree} of {of} agree")),
            "{limiter} {agree}/{of}: {stdout}"
        );
        assert!(
            md.contains(&format!("| {limiter} | {agree} | {of} |")),
            "{limiter} {agree}/{of}: {md}"
        );
    }
    csv
}

#[test]
fn two_locations_replay_each_through_its_own_zone_and_an_empty_key_counts_for_no_zone() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = two_location_conf("limit_req_status 429;", TWO_FORMAT);
    let (toml, stdout, out) = import_and_run(tmp.path(), &conf, &two_location_log(429), &[]);
    assert!(
        toml.contains("client = \"$http_x_api_key\"   # the zone's key\nlimit_req_status = 429"),
        "{toml}"
    );
    assert!(
        toml.contains("location = '/key/'") && toml.contains("location = '/api/'"),
        "{toml}"
    );
    // /api/ sees its 35 lines, keyless or not; /key/ its 13 with a key.
    assert_eq!(column(&summary_row(&out, "api-perip"), "attempts"), 35);
    assert_eq!(column(&summary_row(&out, "key-perkey"), "attempts"), 13);
    let row = summary_row(&out, "key-perkey");
    assert_eq!(
        (
            column(&row, "admitted"),
            column(&row, "delayed"),
            column(&row, "rejected")
        ),
        (4, 5, 4)
    );
    let json = read_text(&out.join("summary.json"));
    assert!(
        json.contains("\"bad_lines_skipped\": 0") && json.contains("\"lines_empty_key\": 5"),
        "{json}"
    );
    let md = read_text(&out.join("summary.md"));
    assert!(md.contains("5 lines with an empty `$http_x_api_key` not counted (nginx does not account a request whose zone key is empty)"), "{md}");
    assert!(
        md.contains("verdicts from `$status` (no `$limit_req_status`): 429 is rejected"),
        "{md}"
    );
    let a = one_agreement_count(&stdout, &out);
    assert_eq!(a["api-perip"], (35, 35));
    assert_eq!(a["key-perkey"], (13, 13));
    let rows = read_text(&out.join("agreement.csv"));
    assert!(
        rows.contains("key-perkey,not_rejected,delayed,5\n"),
        "{rows}"
    );
}

#[test]
fn without_limit_req_status_in_the_log_the_configured_status_is_the_rejection() {
    let tmp = tempfile::tempdir().unwrap();
    // nginx's default, 503: no limit_req_status line.
    let conf = two_location_conf("", TWO_FORMAT);
    let (toml, stdout, out) = import_and_run(tmp.path(), &conf, &two_location_log(503), &[]);
    assert!(toml.contains("limit_req_status = 503"), "{toml}");
    let a = one_agreement_count(&stdout, &out);
    assert_eq!((a["api-perip"], a["key-perkey"]), ((35, 35), (13, 13)));
    // The same log with 429s under the default 503: a 429 is no rejection,
    // so ratesim's 8 rejections disagree — and every report says so alike.
    let tmp = tempfile::tempdir().unwrap();
    let (_, stdout, out) = import_and_run(tmp.path(), &conf, &two_location_log(429), &[]);
    let a = one_agreement_count(&stdout, &out);
    assert_eq!((a["api-perip"], a["key-perkey"]), ((31, 35), (9, 13)));
    assert!(read_text(&out.join("agreement.csv")).contains("api-perip,not_rejected,rejected,4\n"));
}

#[test]
fn a_log_not_in_the_format_is_an_import_error_not_a_run_error() {
    // docs/semantics.md §8: import never writes a scenario run refuses. A
    // log in nginx's combined format, under a config whose access_log
    // writes another: the first line that is not blank (2) cannot be read.
    let tmp = tempfile::tempdir().unwrap();
    fs::write(
        tmp.path().join("nginx.conf"),
        "http {\n  log_format main '$msec $remote_addr $status $request_time';\n  \
         limit_req_zone $remote_addr zone=one:10m rate=5r/s;\n  \
         server {\n    access_log logs/access.log main;\n    \
         location / { limit_req zone=one burst=10; }\n  }\n}\n",
    )
    .unwrap();
    let line = "127.0.0.1 - - [01/Dec/2025:00:00:00 +0000] \"GET / HTTP/1.1\" 200 5 \"-\" \"curl\"";
    fs::write(tmp.path().join("access.log"), format!("\n{line}\n")).unwrap();
    let import_here = |extra: &[&str]| {
        let mut cmd = ratesim();
        cmd.current_dir(tmp.path())
            .args(["import", "nginx.conf", "--trace", "access.log"])
            .args(extra);
        cmd
    };
    assert_input_error(
        &mut import_here(&[]),
        &[
            "--trace \"access.log\" line 2: $msec \"127.0.0.1\" is not a non-negative decimal",
            line,
            "(log_format main, the configuration's access_log)",
            "--log-format",
        ],
    );
    // In its own format it imports, and the scenario written there runs.
    let o = import_here(&["--log-format", "combined"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    fs::write(tmp.path().join("replay.toml"), &o.stdout).unwrap();
    ratesim()
        .current_dir(tmp.path())
        .args(["run", "replay.toml", "--quiet", "--no-plots", "--no-html"])
        .args(["--out", "run"])
        .assert()
        .success();
}

/// A configuration writing two formats: a `--trace` log is read in the
/// format of the access_log whose file has its name.
#[test]
fn a_trace_is_read_in_the_format_of_the_access_log_of_its_name() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(
        tmp.path().join("nginx.conf"),
        "http {\n  log_format main '$msec $remote_addr $status $request_time';\n  \
         limit_req_zone $remote_addr zone=one:10m rate=5r/s;\n  \
         access_log /var/log/nginx/access.log main;\n  \
         server {\n    access_log /var/log/nginx/api.log;\n    \
         location / { limit_req zone=one burst=10; }\n  }\n}\n",
    )
    .unwrap();
    let line = "127.0.0.1 - - [01/Dec/2025:00:00:00 +0000] \"GET / HTTP/1.1\" 200 5 \"-\" \"curl\"";
    fs::write(tmp.path().join("api.log"), format!("{line}\n")).unwrap();
    fs::write(tmp.path().join("access.log"), format!("{line}\n")).unwrap();
    let import = |trace: &str| {
        ratesim()
            .current_dir(tmp.path())
            .args(["import", "nginx.conf", "--trace", trace])
            .output()
            .unwrap()
    };
    // api.log is /var/log/nginx/api.log's: nginx's combined.
    let o = import("api.log");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let scenario = String::from_utf8_lossy(&o.stdout);
    assert!(
        scenario.contains("of this log's name") && scenario.contains("$remote_user"),
        "{scenario}"
    );
    fs::write(tmp.path().join("replay.toml"), &o.stdout).unwrap();
    ratesim()
        .current_dir(tmp.path())
        .args(["run", "replay.toml", "--quiet", "--no-plots", "--no-html"])
        .args(["--out", "run"])
        .assert()
        .success();
    // access.log is main's, and this line is not in it: said, naming the
    // access_log it was matched to.
    assert_input_error(
        ratesim()
            .current_dir(tmp.path())
            .args(["import", "nginx.conf", "--trace", "access.log"]),
        &["(log_format main, that of the access_log at nginx.conf:4, whose file has the log's name)"],
    );
}

#[test]
fn a_zone_key_the_log_format_does_not_record_is_an_import_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("nginx.conf");
    let combined = two_location_conf("", TWO_FORMAT).replace(
        "access_log logs/access.log main;",
        "access_log logs/access.log combined;",
    );
    fs::write(&conf, &combined).unwrap();
    let c = conf.to_str().unwrap();
    assert_input_error(
        ratesim().args(["import", c, "--trace", "access.log"]),
        &[
            "nginx.conf:9: zone perkey's key $http_x_api_key is not in the log format (log_format combined",
            "add $http_x_api_key to the log_format",
            "--log-format",
            "$remote_addr, $remote_user, $time_local",
        ],
    );
    // No access_log: nginx's combined, the default.
    fs::write(
        &conf,
        combined.replace("access_log logs/access.log combined;", ""),
    )
    .unwrap();
    assert_input_error(
        ratesim().args(["import", c, "--trace", "access.log"]),
        &["$http_x_api_key is not in the log format (nginx's combined, the default"],
    );
    // Without --trace there is no log to check.
    import(&[c]);
    // --log-format: a name of the config, the format itself, or combined.
    let toml = import(&[c, "--trace", "access.log", "--log-format", "main"]);
    assert!(
        toml.contains(&format!("log_format = '{TWO_FORMAT}'   # --log-format")),
        "{toml}"
    );
    let toml = import(&[
        c,
        "--trace",
        "access.log",
        "--log-format",
        "$msec $remote_addr $http_x_api_key \"$request\"",
    ]);
    assert!(
        toml.contains(
            "log_format = '$msec $remote_addr $http_x_api_key \"$request\"'   # --log-format"
        ),
        "{toml}"
    );
    assert_input_error(
        ratesim().args([
            "import",
            c,
            "--trace",
            "access.log",
            "--log-format",
            "combined",
        ]),
        &["$http_x_api_key is not in the log format (--log-format \"combined\")"],
    );
    assert_input_error(
        ratesim().args(["import", c, "--trace", "access.log", "--log-format", "mian"]),
        &[
            "--log-format \"mian\": no log_format of that name",
            "combined, main",
        ],
    );
}

#[test]
fn a_log_without_a_request_path_sends_every_line_to_every_limiter_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let conf = "http {
    log_format nopath '$msec $arg_c $status $request_time $limit_req_status';
    access_log logs/access.log nopath;
    limit_req_zone $arg_c zone=perc:1m rate=10r/s;
    server {
        location = /v1 { limit_req zone=perc burst=2 nodelay; }
    }
}
";
    let mut log = String::new();
    for i in 0..5u64 {
        let verdict = if i < 3 {
            "200 0.000 PASSED"
        } else {
            "503 0.000 REJECTED"
        };
        log.push_str(&format!("1796085720.{:03} c1 {verdict}\n", i));
    }
    log.push_str("1796085721.000 c2 200 0.000 PASSED\n");
    fs::write(dir.join("nginx.conf"), conf).unwrap();
    fs::write(dir.join("access.log"), &log).unwrap();
    let o = ratesim()
        .args([
            "import",
            dir.join("nginx.conf").to_str().unwrap(),
            "--trace",
            "access.log",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("note: the log format has no request path ($request, $uri or $request_uri): every line of the log goes to every imported limiter, whatever its location (not applied: location = /v1"), "{stderr}");
    let toml = String::from_utf8(o.stdout).unwrap();
    assert!(
        toml.contains("# Note: the log format has no request path"),
        "{toml}"
    );
    assert!(!toml.contains("\nlocation ="), "{toml}");
    let (_, stdout, out) = import_and_run(dir, conf, &log, &[]);
    let md = read_text(&out.join("summary.md"));
    assert!(
        md.contains(
            "the log format has no request path: every line goes to every limiter that reads it"
        ),
        "{md}"
    );
    assert_eq!(column(&summary_row(&out, "v1-perc"), "attempts"), 6);
    assert_eq!(one_agreement_count(&stdout, &out)["v1-perc"], (6, 6));
}

/// The second real-nginx fixture (tests/fixtures/nginx-two-locations/,
/// `FIXTURE=two-locations scripts/nginx-fixture.sh`): issue 23's two
/// locations, a zone keyed on a header some requests lack, and a log
/// without `$limit_req_status`. Imported and run from an empty directory
/// as the README says.
#[test]
fn on_the_real_two_location_nginx_log_the_replay_agrees_and_counts_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let fixture = manifest_dir().join("tests/fixtures/nginx-two-locations");
    for f in ["nginx.conf", "access.log"] {
        fs::copy(fixture.join(f), dir.join(f)).unwrap();
    }
    let o = ratesim()
        .current_dir(dir)
        .args(["import", "nginx.conf", "--trace", "access.log"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    fs::write(dir.join("replay.toml"), &o.stdout).unwrap();
    let o = ratesim()
        .current_dir(dir)
        .args(["run", "replay.toml", "--out", "run", "--no-plots"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = dir.join("run");
    let a = one_agreement_count(&String::from_utf8(o.stdout).unwrap(), &out);
    // Every line of the log is in one of the two locations: /api/ has 348,
    // /key/ 115, of which 45 carry no X-Api-Key (not counted by perkey).
    assert_eq!(a["api-perip"].1, 348);
    assert_eq!(a["key-perkey"].1, 70);
    for (limiter, (agree, of)) in &a {
        assert!(agree * 100 >= of * 99, "{limiter}: {agree} of {of}");
    }
    let json = read_text(&out.join("summary.json"));
    assert!(json.contains("\"lines_empty_key\": 45"), "{json}");
    // It ran without on_bad_line = "skip": no line was a bad line.
    assert!(!read_text(&dir.join("replay.toml")).contains("on_bad_line"));
}

// ------------------------------------------------ issue 24: $server_name

/// nginx's documentation example: per address and per server in one
/// location, the server's zone keyed by `$server_name`.
const PER_SERVER_CONF: &str = "http {
    log_format main '$msec $request_time $status $remote_addr \"$request\"';
    access_log logs/access.log main;
    limit_req_zone $binary_remote_addr zone=perip:10m rate=1r/s;
    limit_req_zone $server_name zone=perserver:10m rate=10r/s;
    server {
        server_name example.com www.example.com;
        location / {
            limit_req zone=perip burst=5 nodelay;
            limit_req zone=perserver burst=10;
        }
    }
}
";

/// Three addresses' `each` requests each, all at one instant, logged as
/// `$msec $request_time $status $remote_addr "$request"`.
fn at_once(each: usize) -> String {
    let (s, ms) = (EPOCH_MS / 1000, EPOCH_MS % 1000);
    let mut log = String::new();
    for addr in ["10.0.0.1", "10.0.0.2", "10.0.0.3"] {
        for _ in 0..each {
            log.push_str(&format!(
                "{s}.{ms:03} 0.000 200 {addr} \"GET /x HTTP/1.1\"\n"
            ));
        }
    }
    log
}

#[test]
fn a_zone_keyed_by_server_name_is_one_key_for_the_server_block() {
    // Three addresses, eight requests each, all at once; a log without
    // $server_name, as nginx's usual formats are.
    let log = at_once(8);
    let tmp = tempfile::tempdir().unwrap();
    let (toml, _, out) = import_and_run(tmp.path(), PER_SERVER_CONF, &log, &[]);
    assert!(
        toml.contains("key $server_name: the server block's first server_name \"example.com\""),
        "{toml}"
    );
    assert!(toml.contains("key_by = \"global\""), "{toml}");
    // docs/semantics.md §13: the two zones of the location decide together.
    assert!(
        toml.contains("nginx.conf:9,10: nginx asks these zones of")
            && toml.contains(
                "[[chain]]\nname = 'location /'\nlimiters = ['all-perip', 'all-perserver']\nmode = \"all_or_nothing\""
            ),
        "{toml}"
    );
    // Both zones read the same lines: one source, keyed by address.
    assert_eq!(toml.matches("[[traffic]]").count(), 1, "{toml}");
    assert!(
        toml.contains("client = \"$remote_addr\"   # the zone's key"),
        "{toml}"
    );
    // The 24 requests at one instant, the addresses' eight in turn. Per
    // address 1 + burst 5 pass perip (nodelay); per server 1 passes and
    // 10 wait (burst 10, no nodelay). 10.0.0.1: 6 pass both, its 7th and
    // 8th are rejected by perip (perserver is not asked). 10.0.0.2: its
    // first 5 fill the server's queue, the rest are rejected by perserver
    // — and, rejected by the chain, not counted by perip. 10.0.0.3: all 8
    // rejected by perserver, so perip never holds state for it (2 keys).
    let perip = summary_row(&out, "all-perip");
    assert_eq!(
        ["attempts", "keys", "admitted", "rejected", "overruled"].map(|c| column(&perip, c)),
        [24, 2, 11, 2, 11]
    );
    let server = summary_row(&out, "all-perserver");
    assert_eq!(
        ["attempts", "keys", "admitted", "delayed", "rejected"].map(|c| column(&server, c)),
        [22, 1, 1, 10, 11]
    );
    let chain = summary_row(&out, "location /");
    assert_eq!(
        ["attempts", "admitted", "delayed", "rejected"].map(|c| column(&chain, c)),
        [24, 1, 10, 13]
    );
    // The per-server zone alone: the source's client only names requests.
    let alone = tmp.path().join("alone.conf");
    fs::write(
        &alone,
        PER_SERVER_CONF.replace("limit_req zone=perip burst=5 nodelay;", ""),
    )
    .unwrap();
    let toml = import(&[alone.to_str().unwrap(), "--trace", "access.log"]);
    assert!(
        toml.contains("client = \"$remote_addr\"   # each request's client (the zone has one key)"),
        "{toml}"
    );
    // A server block without server_name: $server_name is empty, and
    // nginx accounts no request in the zone.
    let conf = tmp.path().join("unnamed.conf");
    fs::write(
        &conf,
        PER_SERVER_CONF.replace("server_name example.com www.example.com;", ""),
    )
    .unwrap();
    let toml = import(&[conf.to_str().unwrap()]);
    assert_eq!(toml.matches("[[limiter]]\n").count(), 1, "{toml}");
    assert!(
        toml.contains("zone perserver is keyed by $server_name, and its server block names no server_name: the key is empty, so nginx accounts no request in this zone; not imported"),
        "{toml}"
    );
}

/// nginx keys a zone by its first argument as a complex value: one with
/// no variable is one key for every request, and an empty one is a key
/// nginx skips (ngx_http_limit_req_handler: `if (key.len == 0) continue`;
/// checked against nginx 1.22: `limit_req_zone "" …` never limited,
/// `limit_req_zone one …` was one bucket for all addresses).
#[test]
fn a_constant_zone_key_is_one_key_and_an_empty_one_is_no_zone() {
    let conf = |key: &str| {
        format!(
            "http {{\n  log_format main '$msec $request_time $status $remote_addr \"$request\"';\n  \
             access_log access.log main;\n  \
             limit_req_zone {key} zone=all:10m rate=1r/s;\n  \
             limit_req_zone $binary_remote_addr zone=perip:10m rate=1r/s;\n  \
             server {{\n    location / {{\n      limit_req zone=all burst=2 nodelay;\n      \
             limit_req zone=perip burst=10 nodelay;\n    }}\n  }}\n}}\n"
        )
    };
    // Three addresses, three requests each, all at once.
    let log = at_once(3);
    // A constant: one bucket for all nine (1 + burst 2 pass), whatever
    // the address; the per-address zone is asked only for what passed it.
    let tmp = tempfile::tempdir().unwrap();
    let (toml, _, out) = import_and_run(tmp.path(), &conf("one"), &log, &[]);
    assert!(
        toml.contains("nginx.conf:4): limit_req_zone one zone=all:10m rate=1r/s;")
            && toml.contains(
                "key \"one\": a constant, the same for every request: key_by = \"global\""
            ),
        "{toml}"
    );
    let all = summary_row(&out, "all-all");
    assert_eq!(
        ["attempts", "keys", "admitted", "rejected"].map(|c| column(&all, c)),
        [9, 1, 3, 6]
    );
    let chain = summary_row(&out, "location /");
    assert_eq!(
        ["attempts", "admitted", "rejected"].map(|c| column(&chain, c)),
        [9, 3, 6]
    );
    // Empty: nginx accounts nothing in the zone; the location is the
    // per-address zone alone, and every request passes it.
    let tmp = tempfile::tempdir().unwrap();
    let (toml, _, out) = import_and_run(tmp.path(), &conf("\"\""), &log, &[]);
    assert_eq!(toml.matches("[[limiter]]\n").count(), 1, "{toml}");
    assert!(
        toml.contains("limit_req zone=all burst=2 nodelay; — zone all is keyed by the empty string \"\": the key is empty, so nginx accounts no request in this zone; not imported"),
        "{toml}"
    );
    let perip = summary_row(&out, "all-perip");
    assert_eq!(
        ["attempts", "keys", "admitted", "rejected"].map(|c| column(&perip, c)),
        [9, 3, 9, 0]
    );
    // A config whose only zone is keyed by "": no limit to import, and
    // the error says why.
    let only = tmp.path().join("only.conf");
    fs::write(
        &only,
        conf("\"\"").replace("limit_req zone=perip burst=10 nodelay;", ""),
    )
    .unwrap();
    let o = ratesim()
        .args(["import", only.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(o.stdout.is_empty());
    assert!(
        err.contains("no rate limits found")
            && err.contains("read and left out:")
            && err.contains("zone all is keyed by the empty string"),
        "{err}"
    );
}

// Regression: a location the log has no line of (idle that day) made
// `run` refuse the scenario `import` wrote for the config, against
// "it never writes a scenario run refuses" (docs/semantics.md §8). It now
// replays no request, and validate and run say so.
#[test]
fn an_idle_location_replays_nothing_and_is_said() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(
        tmp.path().join("n.conf"),
        "http {\n    log_format main '$msec $request_time $status $remote_addr \"$request\"';\n    limit_req_zone $binary_remote_addr zone=z1:10m rate=5r/s;\n    server { access_log /x main;\n        location /api/ { limit_req zone=z1; }\n        location /admin/ { limit_req zone=z1; } } }\n",
    )
    .unwrap();
    fs::write(
        tmp.path().join("a.log"),
        "1796083200.100 0.000 200 10.0.0.1 \"GET /api/a HTTP/1.1\"\n1796083200.200 0.000 200 10.0.0.1 \"GET /api/b HTTP/1.1\"\n",
    )
    .unwrap();
    let o = ratesim()
        .current_dir(tmp.path())
        .args(["import", "n.conf", "--trace", "a.log"])
        .output()
        .unwrap();
    assert!(o.status.success());
    fs::write(tmp.path().join("s.toml"), &o.stdout).unwrap();
    let said = "warning: traffic \"admin\": no line of \"a.log\" is inside location \"/admin/\" (2 are outside it): its limiters see no request";
    let v = ratesim()
        .current_dir(tmp.path())
        .args(["validate", "s.toml"])
        .output()
        .unwrap();
    assert!(v.status.success());
    assert!(String::from_utf8_lossy(&v.stdout).contains(said));
    let r = ratesim()
        .current_dir(tmp.path())
        .args(["run", "s.toml", "--no-plots", "--out", "o"])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(String::from_utf8_lossy(&r.stderr).contains(said));
    let summary = read_text(&tmp.path().join("o/summary.csv"));
    let admin = summary
        .lines()
        .find(|l| l.starts_with("admin-z1,"))
        .expect("the idle location's limiter");
    assert!(
        admin.starts_with("admin-z1,leaky_bucket,0,0,0,0,0,"),
        "{admin}"
    );
    // Regression (found by an audit): with bad lines skipped, the idle
    // location was an error; it is idle still, and the skipped are counted.
    let s_toml = read_text(&tmp.path().join("s.toml"));
    fs::write(
        tmp.path().join("skip.toml"),
        s_toml.replace("path = 'a.log'", "on_bad_line = \"skip\"\npath = 'a.log'"),
    )
    .unwrap();
    fs::write(
        tmp.path().join("a.log"),
        "1796083200.100 0.000 200 10.0.0.1 \"GET /api/a HTTP/1.1\"\nnot a line\n1796083200.200 0.000 200 10.0.0.1 \"GET /api/b HTTP/1.1\"\n",
    )
    .unwrap();
    let v = ratesim()
        .current_dir(tmp.path())
        .args(["validate", "skip.toml"])
        .output()
        .unwrap();
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stderr));
    assert!(
        String::from_utf8_lossy(&v.stdout).contains("inside location \"/admin/\" (2 are outside it; 1 bad line was skipped, in locations not known)"),
        "{}",
        String::from_utf8_lossy(&v.stdout)
    );
    // Every line outside (a location of no line at all): still an error.
    fs::write(
        tmp.path().join("a.log"),
        "1796083200.100 0.000 200 10.0.0.1 \"GET /x HTTP/1.1\"\n",
    )
    .unwrap();
    assert_input_error(
        ratesim()
            .current_dir(tmp.path())
            .args(["validate", "s.toml"]),
        &["traffic[0].path: \"a.log\" has no line inside location \"/api/\", nor inside any other location of the scenario"],
    );
}
