//! The conformance vectors of docs/semantics.md §2: thirteen limiter
//! configurations on one hand-checkable trace, and the exact decision log a
//! correct implementation writes. `conformance/variants/` holds the same for
//! the variants of docs/semantics.md §5 and the named implementations, each
//! row worked out by hand in its README.md.

use std::path::{Path, PathBuf};

use ratesim::engine;
use ratesim::report::csv::DecisionLog;
use ratesim::scenario::Load as _;
use ratesim::scenario::Scenario;

fn conformance_dir() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance")).to_path_buf()
}

/// Runs `dir/scenario.toml` and compares its decision log with
/// `dir/expected_decisions.csv`, row for row.
fn check_vectors(dir: &Path) {
    let scenario = Scenario::load(dir.join("scenario.toml").to_str().unwrap()).unwrap();
    let mut log = Vec::new();
    DecisionLog::header(&mut log, false).unwrap();
    for i in 0..scenario.limiters.len() {
        let mut sink = DecisionLog::of(&mut log, &scenario, i);
        engine::simulate(&scenario, i, Some(&mut sink), &|_, _| {}).unwrap();
        sink.finish().unwrap();
    }
    let expected = std::fs::read_to_string(dir.join("expected_decisions.csv")).unwrap();
    let actual = String::from_utf8(log).unwrap();
    for (n, (a, e)) in actual.lines().zip(expected.lines()).enumerate() {
        assert_eq!(a, e, "row {} of expected_decisions.csv", n + 1);
    }
    assert_eq!(actual.lines().count(), expected.lines().count());
}

#[test]
fn decision_log_matches_the_conformance_vectors_row_for_row() {
    check_vectors(&conformance_dir());
}

#[test]
fn decision_log_matches_the_variant_vectors_row_for_row() {
    check_vectors(&conformance_dir().join("variants"));
}

#[test]
fn decision_log_matches_the_chain_vectors_row_for_row() {
    check_vectors(&conformance_dir().join("chains"));
}

/// The members' rows of the chain vectors (tests/conformance/chains/README.md):
/// asked, own decisions on requests the chain passed, own rejections, and
/// the attempts the chain overruled.
#[test]
fn chain_members_count_as_the_chain_vectors_say() {
    let dir = conformance_dir().join("chains");
    let scenario = Scenario::load(dir.join("scenario.toml").to_str().unwrap()).unwrap();
    let runs = engine::simulate_all(&scenario, Vec::new(), &|_, _, _| {}).unwrap();
    let expected: &[(&str, [u64; 5])] = &[
        ("aon_fw", [8, 6, 0, 1, 1]),
        ("aon_log", [7, 6, 0, 1, 0]),
        ("each_fw", [8, 5, 0, 2, 1]),
        ("each_log", [8, 5, 0, 2, 1]),
        ("lb_slow", [8, 2, 3, 0, 3]),
        ("lb_fast", [8, 2, 3, 3, 0]),
    ];
    let at = |name: &str| {
        scenario
            .limiters
            .iter()
            .position(|l| l.name == name)
            .unwrap()
    };
    for (name, counts) in expected {
        let r = &runs[at(name)].recorder;
        assert_eq!(
            [r.attempts, r.admitted, r.delayed, r.rejected, r.overruled],
            *counts,
            "{name}"
        );
    }
    // A member's passes count when the request passed — after the chain's
    // delay, not its own (lb_fast's own 150 ms at t=100 ms is the chain's
    // 900 ms): each shaper member's passes fall in the chain's buckets.
    let passed = |name: &str| -> Vec<u64> {
        runs[at(name)]
            .recorder
            .series
            .iter()
            .map(|b| b.passed)
            .collect()
    };
    assert_eq!(passed("lb_slow"), passed("shaper"));
    assert_eq!(passed("lb_fast"), passed("shaper"));
}
