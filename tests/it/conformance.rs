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
    DecisionLog::header(&mut log).unwrap();
    for (i, spec) in scenario.limiters.iter().enumerate() {
        let mut sink = DecisionLog::new(&mut log, &spec.name, spec.key_by, &scenario.population);
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
