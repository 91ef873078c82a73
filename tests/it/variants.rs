//! End to end: the variants of docs/semantics.md §5 and the named implementations —
//! how a scenario names them, what `ratesim list` and the run directory show,
//! and the bad input that is refused (exit 2, naming the field path, the
//! value and what is accepted, writing nothing).

use std::fs;

use crate::common::*;

/// `BASE` with a second limiter whose table is `lines`: errors name `limiter[1]`.
fn with_second_limiter(lines: &str) -> String {
    BASE.replace(
        "[[traffic]]",
        &format!("[[limiter]]\nname = \"second\"\n{lines}\n\n[[traffic]]"),
    )
}

/// Runs `scenario` into a tempdir and returns the run directory's
/// `summary.json` and `summary.csv`.
fn run(scenario: &str) -> (serde_json::Value, String) {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("s.toml"), scenario).unwrap();
    let out = tmp.path().join("out");
    ratesim()
        .arg("run")
        .arg(tmp.path().join("s.toml"))
        .arg("--quiet")
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let json = serde_json::from_str(&read_text(&out.join("summary.json"))).unwrap();
    (json, read_text(&out.join("summary.csv")))
}

// ---------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------

#[test]
fn a_knob_on_the_wrong_algorithm_is_named_with_the_algorithm_it_belongs_to() {
    let text = with_second_limiter("algorithm = \"token_bucket\"\nalign = \"first_hit\"");
    assert_bad_scenario(
        &text,
        &[],
        &[
            "limiter[1].align",
            "\"first_hit\"",
            "knob of fixed_window, not of token_bucket",
            "capacity, rate",
        ],
    );
    for (algorithm, knob, value) in [
        ("sliding_counter", "boundary", "inclusive"),
        ("sliding_log", "weight", "floor"),
        ("gcra", "arithmetic", "nginx"),
        ("token_bucket", "start", "full"),
    ] {
        let text = with_second_limiter(&format!(
            "algorithm = \"{algorithm}\"\n{knob} = \"{value}\""
        ));
        assert_bad_scenario(
            &text,
            &[],
            &[
                &format!("limiter[1].{knob}"),
                &format!("not of {algorithm}"),
            ],
        );
    }
}

#[test]
fn an_unknown_knob_value_lists_the_accepted_ones() {
    for (algorithm, knob, accepted) in [
        ("fixed_window", "align", "\"epoch\", \"first_hit\""),
        ("sliding_log", "boundary", "\"exclusive\", \"inclusive\""),
        ("sliding_counter", "weight", "\"exact\", \"floor\""),
        ("leaky_bucket", "arithmetic", "\"exact\", \"nginx\""),
        ("smooth_bursty", "start", "\"empty\", \"full\""),
    ] {
        let text = with_second_limiter(&format!(
            "algorithm = \"{algorithm}\"\n{knob} = \"midnight\""
        ));
        assert_bad_scenario(
            &text,
            &[],
            &[&format!("limiter[1].{knob}"), "\"midnight\"", accepted],
        );
    }
    let text = with_second_limiter("algorithm = \"fixed_window\"\nalign = 1");
    assert_bad_scenario(&text, &[], &["limiter[1].align", "1", "\"first_hit\""]);
}

#[test]
fn a_smooth_bursty_limiter_of_capacity_zero_is_rejected() {
    let text = with_second_limiter("algorithm = \"smooth_bursty\"\ncapacity = 0");
    assert_bad_scenario(&text, &[], &["limiter[1].capacity", "0", "from 1 to"]);
}

#[test]
fn an_unknown_implementation_lists_the_known_ones() {
    let text = with_second_limiter("implementation = \"nginx-plus\"");
    assert_bad_scenario(
        &text,
        &[],
        &[
            "limiter[1].implementation",
            "\"nginx-plus\"",
            "unknown implementation",
            "\"python-limits-fixed\"",
            "\"redis-cell\"",
            "\"golang-x-time-rate\"",
        ],
    );
}

#[test]
fn an_implementation_with_another_algorithm_is_rejected() {
    let text = with_second_limiter("implementation = \"guava\"\nalgorithm = \"token_bucket\"");
    assert_bad_scenario(
        &text,
        &[],
        &[
            "limiter[1].algorithm",
            "\"token_bucket\"",
            "\"guava\" is a smooth_bursty",
        ],
    );
}

#[test]
fn a_limiter_with_neither_algorithm_nor_implementation_names_both() {
    let text = with_second_limiter("capacity = 3");
    assert_bad_scenario(
        &text,
        &[],
        &[
            "limiter[1].algorithm: missing",
            "implementation",
            "\"guava\"",
        ],
    );
}

#[test]
fn max_burst_belongs_to_redis_cell_alone_and_not_beside_burst() {
    let text = with_second_limiter("algorithm = \"gcra\"\nmax_burst = 4");
    assert_bad_scenario(
        &text,
        &[],
        &[
            "limiter[1].max_burst",
            "4",
            "redis-cell",
            "burst = max_burst + 1",
        ],
    );
    let text = with_second_limiter("implementation = \"redis-cell\"\nmax_burst = 4\nburst = 5");
    assert_bad_scenario(&text, &[], &["limiter[1].max_burst", "not both"]);
}

#[test]
fn nginx_arithmetic_refuses_a_rate_below_one_thousandth_per_second() {
    let text = with_second_limiter("implementation = \"nginx\"\nrate = \"1/2000s\"");
    assert_bad_scenario(
        &text,
        &[],
        &["limiter[1].rate", "\"1/2000s\"", "thousandths"],
    );
}

// ---------------------------------------------------------------------------
// What the user sees
// ---------------------------------------------------------------------------

#[test]
fn list_shows_every_implementation_and_what_it_maps_to() {
    let out = ratesim().arg("list").assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    for needle in [
        "smooth_bursty",
        "python-limits-fixed",
        "fixed_window, align = \"first_hit\", count_rejected = true",
        "python-limits-moving",
        "sliding_log, boundary = \"inclusive\"",
        "python-limits-sliding",
        "sliding_counter, weight = \"floor\"",
        "redis-incr-expire",
        "guava",
        "governor",
        "redis-cell",
        "envoy-timer",
        "envoy-ratelimit",
        "fixed_window, count_rejected = true",
        "leaky_bucket, arithmetic = \"nginx\"",
        "golang-x-time-rate",
    ] {
        assert!(
            text.contains(needle),
            "list does not show {needle:?}:\n{text}"
        );
    }
}

#[test]
fn an_implementation_names_the_limiter_and_is_echoed_with_its_knobs() {
    let text = with_second_limiter("implementation = \"redis-incr-expire\"")
        .replace("name = \"second\"\n", "");
    let (json, csv) = run(&text);
    let limiter = &json["scenario"]["limiters"][1];
    assert_eq!(limiter["name"], "redis-incr-expire");
    assert_eq!(limiter["implementation"], "redis-incr-expire");
    assert_eq!(limiter["algorithm"], "fixed_window");
    assert_eq!(limiter["params"]["align"], "first_hit");
    assert_eq!(limiter["params"]["count_rejected"], true);
    assert!(csv.contains("\nredis-incr-expire,fixed_window,"), "{csv}");
    // A textbook limiter shows no knob and no implementation.
    let plain = &json["scenario"]["limiters"][0];
    assert!(plain.get("implementation").is_none(), "{plain}");
}

#[test]
fn fields_written_beside_an_implementation_override_what_it_implies() {
    let text = with_second_limiter(
        "implementation = \"python-limits-fixed\"\ncount_rejected = false\nlimit = 3",
    );
    let (json, _) = run(&text);
    let params = &json["scenario"]["limiters"][1]["params"];
    assert_eq!(params["align"], "first_hit");
    assert_eq!(params["count_rejected"], false);
    assert_eq!(params["limit"], 3);
}

#[test]
fn redis_cell_max_burst_is_burst_plus_one() {
    let (json, _) = run(&with_second_limiter(
        "implementation = \"redis-cell\"\nmax_burst = 4",
    ));
    assert_eq!(json["scenario"]["limiters"][1]["params"]["burst"], 5);
}

#[test]
fn smooth_bursty_runs_in_every_deployment() {
    // Local shares (divided policies), a read-then-write store (detached
    // copies written back) and a fallback that inherits the implementation.
    let text = r#"name = "d"
duration = "3s"

[defaults]
limit = 10
window = "1s"

[deployment]
instances = 2

[[limiter]]
implementation = "guava"
name = "shared"
deployment = { share = true }

[[limiter]]
implementation = "guava"
name = "racy"
deployment = { scope = "global", atomic = false, store_latency = "2ms" }

[[limiter]]
implementation = "nginx"
name = "fallback"
deployment = { scope = "global", outages = [{ start = "1s", end = "2s" }], on_store_failure = "local_fallback", fallback = { queue = 1 } }

[[traffic]]
pattern = "steady"
rate = "30/1s"
"#;
    let (json, csv) = run(text);
    let limiters = &json["scenario"]["limiters"];
    assert_eq!(limiters[0]["deployment"]["instance_params"]["capacity"], 5);
    assert_eq!(
        limiters[0]["deployment"]["instance_params"]["rate"],
        "1/200ms"
    );
    let fallback = &limiters[2]["deployment"]["fallback"];
    assert_eq!(fallback["algorithm"], "leaky_bucket");
    assert_eq!(fallback["params"]["arithmetic"], "nginx");
    assert_eq!(fallback["params"]["queue"], 1);
    for name in ["shared", "racy", "fallback"] {
        let row = csv
            .lines()
            .find(|l| l.starts_with(&format!("{name},")))
            .unwrap();
        assert!(row.contains(",90,"), "{name} saw 90 attempts: {row}");
    }
}
