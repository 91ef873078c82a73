//! The conformance vectors of DESIGN.md (copied from `shared/conformance/`):
//! thirteen limiter configurations on one hand-checkable trace, and the exact
//! decision log a correct implementation writes.

use std::path::Path;

use ratesim::engine;
use ratesim::report::csv::DecisionLog;
use ratesim::scenario::Scenario;

fn conformance_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance"))
}

#[test]
fn decision_log_matches_the_conformance_vectors_row_for_row() {
    let dir = conformance_dir();
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
