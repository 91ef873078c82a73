//! A fuzz suite: structurally valid but extreme scenarios and traces.
//!
//! Scenario files are generated field by field from pools of the values
//! that break programs — zero, one, the largest accepted, one past it,
//! negative and overflowing numbers, non-finite floats, empty strings,
//! unicode, sub-nanosecond durations, duplicated names — and traces with
//! times that go backwards, overflow or are malformed, odd client names and
//! costs. For each one:
//!
//! - loading never panics; a rejection is a message that names a field path
//!   or a trace line, and quotes no more than a short piece of a value;
//! - an accepted scenario small enough to run here (see `SMALL`) runs; a run
//!   either succeeds, with `summary.csv` and `summary.json` that parse, or
//!   fails as bad input with nothing written;
//! - through the binary: exit 0 or 2, never anything else; on 2 nothing is
//!   written.
//!
//! Quick by default (a few seconds in `cargo test`); run it longer with
//! `PROPTEST_CASES=100000 cargo test --release --test fuzz`.

use std::fs;
use std::path::Path;

use proptest::prelude::*;
use ratesim::estimate::Estimate;
use ratesim::run::{run_scenario, RunOptions};
use ratesim::scenario::Load as _;
use ratesim::scenario::Scenario;
use ratesim::InputError;

/// Accepted scenarios with at most this many decisions are run.
const SMALL: u128 = 20_000;

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

// ---------------------------------------------------------------------------
// Value pools: mostly ordinary, often extreme but valid, sometimes invalid
// ---------------------------------------------------------------------------

/// `ordinary` 30 in 40, `extreme` 8 in 40, `invalid` 2 in 40.
fn pool(
    ordinary: Vec<&'static str>,
    extreme: Vec<&'static str>,
    invalid: Vec<&'static str>,
) -> BoxedStrategy<String> {
    prop_oneof![
        30 => prop::sample::select(ordinary),
        8 => prop::sample::select(extreme),
        2 => prop::sample::select(invalid),
    ]
    .prop_map(str::to_string)
    .boxed()
}

fn count() -> BoxedStrategy<String> {
    pool(
        vec!["1", "2", "3", "5", "10", "20"],
        vec!["1", "1000000000000", "4294967297"],
        vec![
            "0",
            "-1",
            "1000000000001",
            "9223372036854775807",
            "2.5",
            "nan",
            "\"5\"",
            "true",
        ],
    )
}

fn duration() -> BoxedStrategy<String> {
    pool(
        vec!["\"1s\"", "\"250ms\"", "\"100ms\"", "\"2s\"", "\"3s\""],
        vec!["\"1ns\"", "\"1.000000001s\"", "\"10us\"", "\"1m\""],
        vec![
            "\"0s\"",
            "\"1.5ns\"",
            "\"\"",
            "\"1\"",
            "\"-1s\"",
            "\"1e3s\"",
            "\"½s\"",
            "\"0.0000000001s\"",
            "\"1 s\"",
            "\"🙂\"",
            "5",
            "inf",
            "\"999999999h\"",
        ],
    )
}

fn rate() -> BoxedStrategy<String> {
    pool(
        vec![
            "\"5/1s\"",
            "\"1/100ms\"",
            "\"20/1s\"",
            "\"3/1s\"",
            "\"1/2s\"",
            "2.5",
            "100",
        ],
        vec![
            "\"1/1ns\"",
            "\"7/3ns\"",
            "\"1000000000000/1ns\"",
            "\"1/999999999h\"",
            "1e300",
        ],
        vec![
            "\"0/1s\"",
            "\"1/0s\"",
            "\"abc\"",
            "\"18446744073709551616/1s\"",
            "\"5/\"",
            "\"-3/1s\"",
            "\"3/fortnight\"",
            "\"\"",
            "-inf",
            "nan",
            "0",
            "-0.0",
        ],
    )
}

fn name() -> BoxedStrategy<String> {
    pool(
        vec!["\"a\"", "\"b\"", "\"x\"", "\"x\""],
        vec![
            "\"名前\"",
            "\"🙂🙂\"",
            "\" \"",
            "\"a-very-long-name-a-very-long-name-a-very-long-name\"",
        ],
        vec!["\"\"", "\"a,b\"", "\"quo\\\"te\"", "\"line\\nbreak\"", "7"],
    )
}

fn boolean() -> BoxedStrategy<String> {
    pool(vec!["true", "false"], vec!["true"], vec!["1", "\"yes\""])
}

fn choice(ordinary: Vec<&'static str>, invalid: Vec<&'static str>) -> BoxedStrategy<String> {
    prop_oneof![
        38 => prop::sample::select(ordinary),
        2 => prop::sample::select(invalid),
    ]
    .prop_map(|s| format!("\"{s}\""))
    .boxed()
}

/// `key = value` lines: each optional one present 1 time in 3, a field of
/// another table 1 time in 200.
fn fields(
    required: Vec<(&'static str, BoxedStrategy<String>)>,
    optional: Vec<(&'static str, BoxedStrategy<String>)>,
) -> BoxedStrategy<String> {
    let mut parts: Vec<BoxedStrategy<String>> = required
        .into_iter()
        .map(|(key, value)| value.prop_map(move |v| format!("{key} = {v}\n")).boxed())
        .collect();
    parts.extend(optional.into_iter().map(|(key, value)| {
        prop::option::weighted(0.33, value)
            .prop_map(move |v| v.map(|v| format!("{key} = {v}\n")).unwrap_or_default())
            .boxed()
    }));
    parts.push(
        prop::option::weighted(0.005, Just("stray = 1\n".to_string()))
            .prop_map(Option::unwrap_or_default)
            .boxed(),
    );
    parts.prop_map(|p| p.concat()).boxed()
}

fn limiter() -> BoxedStrategy<String> {
    let common = || {
        vec![
            ("name", name()),
            (
                "key_by",
                choice(vec!["client", "ip", "global"], vec!["nobody"]),
            ),
        ]
    };
    let with = |algorithm: &'static str, extra: Vec<(&'static str, BoxedStrategy<String>)>| {
        let mut optional = common();
        optional.extend(extra);
        fields(vec![], optional)
            .prop_map(move |f| format!("[[limiter]]\nalgorithm = \"{algorithm}\"\n{f}"))
            .boxed()
    };
    let with_all = |algorithm: &'static str,
                    required: Vec<(&'static str, BoxedStrategy<String>)>| {
        fields(required, common())
            .prop_map(move |f| format!("[[limiter]]\nalgorithm = \"{algorithm}\"\n{f}"))
            .boxed()
    };
    let window = || {
        vec![
            ("limit", count()),
            ("window", duration()),
            ("count_rejected", boolean()),
        ]
    };
    let deployment = prop::option::weighted(
        0.1,
        fields(
            vec![],
            vec![
                ("instances", count()),
                ("scope", choice(vec!["local", "global"], vec!["cloud"])),
                (
                    "routing",
                    choice(
                        vec!["round_robin", "random", "hash_client", "hash_ip"],
                        vec!["dns"],
                    ),
                ),
                ("store_latency", duration()),
                ("timeout", duration()),
                (
                    "on_store_failure",
                    choice(vec!["fail_open", "fail_closed"], vec!["shrug"]),
                ),
            ],
        ),
    );
    let algorithm = prop_oneof![
        9 => with("token_bucket", vec![("capacity", count()), ("rate", rate())]),
        9 => with_all(
            "interval_bucket",
            vec![("max_tokens", count()), ("tokens_per_fill", count()), ("fill_interval", duration())],
        ),
        9 => with("gcra", vec![("burst", count()), ("rate", rate())]),
        9 => with("leaky_bucket", vec![("rate", rate()), ("queue", count()), ("delay", count())]),
        9 => with("fixed_window", window()),
        9 => with("sliding_log", window()),
        9 => with("sliding_counter", window()),
        1 => Just("[[limiter]]\nalgorithm = \"nope\"\n".to_string()).boxed(),
    ];
    (algorithm, deployment)
        .prop_map(|(a, d)| match d {
            Some(d) => format!("{a}[limiter.deployment]\n{d}"),
            None => a,
        })
        .boxed()
}

fn traffic() -> BoxedStrategy<String> {
    let with = |pattern: &'static str,
                required: Vec<(&'static str, BoxedStrategy<String>)>,
                extra: Vec<(&'static str, BoxedStrategy<String>)>| {
        let mut optional = vec![("name", name()), ("cost", count())];
        optional.extend(extra);
        fields(required, optional)
            .prop_map(move |f| format!("[[traffic]]\npattern = \"{pattern}\"\n{f}"))
            .boxed()
    };
    let pattern = prop_oneof![
        9 => with("steady", vec![("rate", rate())], vec![("clients", count()), ("prefix", name())]),
        9 => with("poisson", vec![("rate", rate())], vec![("clients", count())]),
        9 => with(
            "boundary",
            vec![],
            vec![
                ("clients", count()), ("burst", count()), ("window", duration()),
                ("before", duration()), ("after", duration()), ("every", count()),
            ],
        ),
        9 => with(
            "bursty",
            vec![("form", choice(vec!["on_off"], vec!["square"])), ("rate", rate()), ("on", duration()), ("off", duration())],
            vec![("clients", count()), ("rate_off", rate())],
        ),
        9 => with(
            "bursty",
            vec![("form", choice(vec!["periodic"], vec!["square"])), ("burst", count()), ("period", duration())],
            vec![("clients", count()), ("spread", duration())],
        ),
        9 => with(
            "nat",
            vec![("rate", rate()), ("users", count()), ("ips", count())],
            vec![
                ("heavy_share", pool(vec!["0.1", "0"], vec!["1", "\"0.25\""], vec!["1.5", "-0.1"])),
                ("heavy_rate", rate()),
            ],
        ),
        9 => with(
            "zipf",
            vec![("rate", rate()), ("keys", count())],
            vec![("exponent", pool(vec!["1.1", "0.8"], vec!["0", "10"], vec!["11", "nan"]))],
        ),
        9 => with("ramp", vec![("from", rate()), ("to", rate())], vec![("clients", count()), ("steps", count())]),
        12 => with("trace", vec![("path", choice(vec!["trace.csv"], vec!["missing.csv", ".", ""]))], vec![]),
        1 => Just("[[traffic]]\npattern = \"warp\"\n".to_string()).boxed(),
    ];
    let retry = prop::option::weighted(
        0.2,
        fields(
            vec![],
            vec![
                (
                    "policy",
                    choice(vec!["none", "immediate", "retry_after"], vec!["sometimes"]),
                ),
                ("max_attempts", count()),
            ],
        ),
    );
    (pattern, retry)
        .prop_map(|(p, r)| match r {
            Some(r) => format!("{p}[traffic.retry]\n{r}"),
            None => p,
        })
        .boxed()
}

fn scenario() -> impl Strategy<Value = String> {
    let top = fields(vec![], vec![("name", name()), ("seed", count())]);
    let run_length = prop::option::weighted(0.9, duration())
        .prop_map(|d| d.map(|d| format!("duration = {d}\n")).unwrap_or_default());
    let defaults = fields(vec![("limit", count()), ("window", duration())], vec![]);
    (
        (top, run_length),
        defaults,
        prop::collection::vec(limiter(), 1..4),
        prop::collection::vec(traffic(), 1..3),
        prop::option::weighted(0.01, prop::sample::select(vec!["[[", "x = \"unterminated"])),
    )
        .prop_map(|((top, duration), defaults, limiters, traffic, junk)| {
            format!(
                "{top}{duration}{}\n[defaults]\n{defaults}{}{}",
                junk.unwrap_or(""),
                limiters.concat(),
                traffic.concat()
            )
        })
}

fn trace_csv() -> impl Strategy<Value = String> {
    let header = prop_oneof![
        12 => Just("time,client,ip,cost"),
        1 => prop::sample::select(vec!["time,client", "time,client,colour", "time,time_ns,client", "", "client,time"]),
    ];
    let time = prop_oneof![
        40 => (0u64..5_000).prop_map(|ms| format!("{}.{:03}", ms / 1000, ms % 1000)),
        1 => prop::sample::select(vec![
            "-1", "abc", "", "1e3", "18446744073709551616", "0.0000000001", "999999999999999999",
            "1.5", "0",
        ])
        .prop_map(str::to_string),
    ];
    let row = (
        time,
        prop::sample::select(vec![
            "a",
            "b",
            "c",
            "a",
            "b",
            "名前",
            "🙂",
            "\"q,uoted\"",
            "",
        ]),
        prop::sample::select(vec!["10.0.0.1", "10.0.0.1", "10.0.0.2", "", "::1"]),
        prop_oneof![
            40 => prop::sample::select(vec!["1", "2", "1", "1000000000000"]),
            1 => prop::sample::select(vec!["0", "-1", "x", "1000000000001"]),
        ],
    )
        .prop_map(|(t, c, ip, cost)| format!("{t},{c},{ip},{cost}"));
    (header, prop::collection::vec(row, 0..30)).prop_map(|(h, mut rows)| {
        // Mostly in time order, as traces are; a disordered one now and then.
        if rows.len() % 7 != 3 {
            rows.sort_by_key(|r| {
                let t = r.split(',').next().unwrap_or("");
                (t.len(), t.to_string())
            });
        }
        format!("{h}\n{}\n", rows.join("\n"))
    })
}

// ---------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------

/// A rejection names where: a field path, a trace line, or the file.
fn assert_names_a_place(message: &str) {
    const PLACES: &[&str] = &[
        "defaults",
        "limiter[",
        "traffic[",
        "duration",
        "name",
        "seed",
        "line ",
        "not valid TOML",
        "output",
        "deployment",
        "scenario.toml",
        "unknown field",
    ];
    assert!(
        PLACES.iter().any(|p| message.contains(p)),
        "names no field or line: {message}"
    );
    assert!(message.len() < 4_000, "{} bytes of message", message.len());
}

fn write_case(dir: &Path, scenario: &str, trace: &str) -> std::path::PathBuf {
    let path = dir.join("scenario.toml");
    fs::write(&path, scenario).unwrap();
    fs::write(dir.join("trace.csv"), trace).unwrap();
    path
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(200)))]

    #[test]
    fn extreme_scenarios_load_run_or_are_rejected_cleanly(
        scenario in scenario(),
        trace in trace_csv(),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let path = write_case(tmp.path(), &scenario, &trace);
        let loaded = Scenario::load(path.to_str().unwrap());
        let s = match loaded {
            Err(e) => {
                assert_names_a_place(e.message());
                return Ok(());
            }
            Ok(s) => s,
        };
        let estimate = Estimate::of(&s);
        prop_assume!(estimate.decisions <= SMALL && estimate.attempts_with_retries <= 4 * SMALL);
        let out = tmp.path().join("out");
        let options = RunOptions { decisions: true, ..RunOptions::default() };
        match run_scenario(&s, &out, &options, &|_, _, _| {}) {
            Ok(_) => {
                let mut summary = csv::Reader::from_path(out.join("summary.csv")).unwrap();
                prop_assert_eq!(summary.records().count(), s.limiters.len());
                let json: serde_json::Value =
                    serde_json::from_slice(&fs::read(out.join("summary.json")).unwrap()).unwrap();
                prop_assert!(json.get("limiters").is_some());
                let mut log = csv::Reader::from_path(out.join("decisions.csv")).unwrap();
                prop_assert!(log.records().all(|r| r.is_ok()));
            }
            Err(e) => {
                let input = e.chain().find_map(|c| c.downcast_ref::<InputError>());
                prop_assert!(input.is_some(), "a run failed without bad input: {e:#}");
                assert_names_a_place(&format!("{e:#}"));
                prop_assert!(!out.exists(), "a failed run wrote {}", out.display());
            }
        }
    }

}

proptest! {
    // Each case starts a process: fewer of them.
    #![proptest_config(ProptestConfig::with_cases(cases(200) / 8))]

    #[test]
    fn the_binary_exits_0_or_2_and_writes_nothing_on_2(
        scenario in scenario(),
        trace in trace_csv(),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let path = write_case(tmp.path(), &scenario, &trace);
        if let Ok(s) = Scenario::load(path.to_str().unwrap()) {
            let e = Estimate::of(&s);
            prop_assume!(e.decisions <= SMALL && e.attempts_with_retries <= 4 * SMALL);
        }
        let out = tmp.path().join("out");
        let result = std::process::Command::new(env!("CARGO_BIN_EXE_ratesim"))
            .arg("run")
            .arg(&path)
            .args(["--quiet", "--no-plots", "--out"])
            .arg(&out)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&result.stderr);
        match result.status.code() {
            Some(0) => prop_assert!(out.join("summary.csv").is_file()),
            Some(2) => {
                prop_assert!(stderr.starts_with("error: "), "{stderr}");
                prop_assert!(!out.exists());
                let left: Vec<_> = fs::read_dir(tmp.path()).unwrap().flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with(".out"))
                    .collect();
                prop_assert!(left.is_empty(), "staging left: {left:?}");
            }
            other => prop_assert!(false, "exit {other:?}: {stderr}"),
        }
    }
}
