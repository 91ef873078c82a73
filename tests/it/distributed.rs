//! Deployments: the exactness equivalences of shared and local state, races
//! of read-then-write stores, and store outages.

use std::path::Path;

use proptest::prelude::*;
use ratesim::clock::Nanos;
use ratesim::scenario::Load as _;

use crate::engine_support::run;
use ratesim::engine::Attempt;
use ratesim::limiter::Decision;
use ratesim::scenario::{Origin, Scenario};

/// A scenario over `rows` (time_ns, client, ip, cost) written as a trace in
/// `dir`, with the given `[[limiter]]` tables.
fn trace_scenario(dir: &Path, rows: &[(u64, u8, u8, u64)], limiters: &str) -> Scenario {
    let mut csv = String::from("time_ns,client,ip,cost\n");
    for (t, c, ip, cost) in rows {
        csv.push_str(&format!("{t},c{c},10.0.0.{ip},{cost}\n"));
    }
    std::fs::write(dir.join("trace.csv"), csv).unwrap();
    let text = format!(
        "[defaults]\nlimit = 4\nwindow = \"1s\"\n{limiters}\n[[traffic]]\npattern = \"trace\"\npath = \"trace.csv\"\n"
    );
    let path = dir.join("scenario.toml");
    std::fs::write(&path, &text).unwrap();
    Scenario::parse(&text, "t", Origin::File(path)).unwrap()
}

const ALGORITHMS: &[&str] = &[
    "algorithm = \"token_bucket\"\ncapacity = 3\nrate = \"7/1s\"",
    "algorithm = \"gcra\"\nburst = 2\nrate = \"3/1s\"",
    "algorithm = \"interval_bucket\"\nmax_tokens = 3\ntokens_per_fill = 2\nfill_interval = \"250ms\"",
    "algorithm = \"leaky_bucket\"\nrate = \"10/1s\"\nqueue = 2\ndelay = 1",
    "algorithm = \"fixed_window\"\nlimit = 3\nwindow = \"1s\"\ncount_rejected = true",
    "algorithm = \"sliding_log\"\nlimit = 3\nwindow = \"500ms\"",
    "algorithm = \"sliding_counter\"\nlimit = 3\nwindow = \"1s\"",
];

fn trace() -> impl Strategy<Value = Vec<(u64, u8, u8, u64)>> {
    prop::collection::vec((0u64..400_000_000, 0u8..3, 0u8..2, 1u64..3), 1..40).prop_map(
        |mut rows| {
            // Arrival gaps, some zero, accumulated into sorted times.
            let mut t = 0;
            for r in rows.iter_mut() {
                t += if r.0 % 3 == 0 { 0 } else { r.0 / 8 };
                r.0 = t;
            }
            rows
        },
    )
}

fn decisions(log: &[Attempt]) -> Vec<(u64, u32, Decision)> {
    log.iter()
        .map(|a| (a.arrival.time.0, a.key, a.decision))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn one_instance_with_a_zero_latency_global_store_decides_as_the_plain_limiter(
        rows in trace(),
        algorithm in 0..ALGORITHMS.len(),
        atomic in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let a = ALGORITHMS[algorithm];
        let s = trace_scenario(dir.path(), &rows, &format!(
            "[[limiter]]\nname = \"plain\"\n{a}\n\
             [[limiter]]\nname = \"store\"\n{a}\ndeployment = {{ scope = \"global\", atomic = {atomic} }}\n"
        ));
        let (_, plain) = run(&s, 0);
        let (_, store) = run(&s, 1);
        prop_assert_eq!(decisions(&plain), decisions(&store));
    }

    #[test]
    fn round_robin_local_instances_decide_as_independent_limiters_on_every_nth_request(
        rows in trace(),
        algorithm in 0..ALGORITHMS.len(),
        n in 1u64..5,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let a = ALGORITHMS[algorithm];
        let s = trace_scenario(dir.path(), &rows, &format!(
            "[[limiter]]\n{a}\ndeployment = {{ instances = {n}, routing = \"round_robin\" }}\n"
        ));
        let (_, log) = run(&s, 0);
        let mut independent: Vec<_> = (0..n).map(|_| s.limiters[0].algorithm.build()).collect();
        for (j, a) in log.iter().enumerate() {
            let d = independent[j % n as usize].decide(a.key, a.arrival.time, a.arrival.cost);
            prop_assert_eq!(d, a.decision, "request {}", j);
        }
    }

    #[test]
    fn a_fixed_latency_atomic_store_decides_on_arrivals_shifted_by_the_one_way_latency(
        rows in trace(),
        algorithm in 0..ALGORITHMS.len(),
        rtt_us in 0u64..50_000,
        instances in 1u64..4,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let a = ALGORITHMS[algorithm];
        let s = trace_scenario(dir.path(), &rows, &format!(
            "[[limiter]]\n{a}\ndeployment = {{ scope = \"global\", instances = {instances}, store_latency = \"{rtt_us}us\" }}\n"
        ));
        let (store, log) = run(&s, 0);
        let mut plain = s.limiters[0].algorithm.build();
        let one_way = Nanos(rtt_us * 1000 / 2);
        for a in &log {
            let d = plain.decide(a.key, a.arrival.time + one_way, a.arrival.cost);
            prop_assert_eq!(d, a.decision);
        }
        let p50 = store.recorder.added_latency.percentile(500).unwrap();
        prop_assert_eq!(p50, Nanos(rtt_us * 1000));
    }
}

/// Four instances behind round robin, one request every 100µs from one
/// client, against a store holding 10 per second.
fn spaced_scenario(dir: &Path, atomic: bool, rtt: &str) -> Scenario {
    let rows: Vec<(u64, u8, u8, u64)> = (0..60).map(|i| (i * 100_000, 0, 0, 1)).collect();
    trace_scenario(
        dir,
        &rows,
        &format!(
            "[[limiter]]\nalgorithm = \"fixed_window\"\nlimit = 10\nwindow = \"1s\"\n\
             deployment = {{ scope = \"global\", instances = 4, atomic = {atomic}, store_latency = \"{rtt}\" }}\n"
        ),
    )
}

#[test]
fn read_then_write_over_admits_concurrent_requests_and_more_so_with_latency() {
    let dir = tempfile::tempdir().unwrap();
    let passed = |atomic, rtt| {
        let s = spaced_scenario(dir.path(), atomic, rtt);
        run(&s, 0).0.recorder.passed()
    };
    assert_eq!(
        passed(true, "2ms"),
        10,
        "an atomic store holds the limit exactly"
    );
    assert_eq!(passed(false, "20us"), 10, "no overlap, no race");
    let some = passed(false, "500us");
    let more = passed(false, "2ms");
    assert!(some > 10, "overlapping read-then-writes over-admit: {some}");
    assert!(more > some, "and more with latency: {more} > {some}");
}

#[test]
fn an_atomic_store_never_lets_a_key_exceed_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<(u64, u8, u8, u64)> = (0..400)
        .map(|i| (i * 7_000_000, (i % 3) as u8, 0, 1))
        .collect();
    let s = trace_scenario(
        dir.path(),
        &rows,
        "[[limiter]]\nalgorithm = \"sliding_log\"\ndeployment = { scope = \"global\", instances = 8, routing = \"random\", store_latency = { median = \"2ms\", p99 = \"20ms\" } }\n",
    );
    let (store, _) = run(&s, 0);
    assert!(store.recorder.peak_in_window <= 4);
    assert_eq!(store.recorder.overshoot, 0);
}

#[test]
fn naive_local_limits_let_instances_times_the_limit_through() {
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<(u64, u8, u8, u64)> = (0..100).map(|i| (i * 1_000_000, 0, 0, 1)).collect();
    let s = trace_scenario(
        dir.path(),
        &rows,
        "[[limiter]]\nname = \"local\"\nalgorithm = \"fixed_window\"\ndeployment = { instances = 4 }\n\
         [[limiter]]\nname = \"shared\"\nalgorithm = \"fixed_window\"\ndeployment = { instances = 4, share = true }\n",
    );
    let local = run(&s, 0).0.recorder;
    let shared = run(&s, 1).0.recorder;
    assert_eq!(local.passed(), 16, "4 instances × limit 4");
    assert_eq!(local.overshoot, 12);
    assert_eq!(shared.passed(), 4, "each instance holds a quarter");
    assert_eq!(shared.overshoot, 0);
}

/// Steady traffic for 10 s with a store outage from 3 s to 5 s.
fn outage_scenario(on_failure: &str) -> Scenario {
    let text = format!(
        r#"
duration = "10s"
[defaults]
limit = 20
window = "1s"
[[limiter]]
algorithm = "token_bucket"
[limiter.deployment]
scope = "global"
instances = 2
store_latency = "2ms"
timeout = "20ms"
outages = [{{ start = "3s", end = "5s" }}]
on_store_failure = "{on_failure}"
fallback = {{ capacity = 2, rate = "1/1s" }}
[[traffic]]
pattern = "steady"
clients = 3
rate = "10/1s"
"#
    );
    Scenario::parse(&text, "outage", Origin::File("outage.toml".into())).unwrap()
}

#[test]
fn during_an_outage_each_failure_mode_decides_as_it_says() {
    let in_outage =
        |a: &Attempt| (3_000_000_000..5_000_000_000).contains(&(a.arrival.time.0 + 1_000_000));
    let (open_run, open) = run(&outage_scenario("fail_open"), 0);
    let (closed_run, closed) = run(&outage_scenario("fail_closed"), 0);
    let (fallback_run, fallback) = run(&outage_scenario("local_fallback"), 0);

    assert!(open
        .iter()
        .filter(|a| in_outage(a))
        .all(|a| a.decision.passes()));
    assert!(closed
        .iter()
        .filter(|a| in_outage(a))
        .all(|a| !a.decision.passes()));
    assert_eq!(open_run.recorder.fault_open, 60, "2 s × 3 clients × 10/s");
    assert_eq!(closed_run.recorder.fault_closed, 60);
    assert_eq!(fallback_run.recorder.fault_fallback, 60);

    // Each instance's fallback holds a client to 2 at once plus 1/s: at most
    // 2 instances × 3 clients × (2 + 1 × 2 s) in the 2 s outage.
    let fallback_passes = fallback
        .iter()
        .filter(|a| in_outage(a) && a.decision.passes())
        .count();
    assert!(fallback_passes <= 2 * 3 * 4, "{fallback_passes}");
    assert!(fallback_passes > 0);

    // Outside the outage the store saw the same operations: same decisions.
    let outside = |log: &[Attempt]| -> Vec<(u64, u32, bool)> {
        log.iter()
            .filter(|a| !in_outage(a))
            .map(|a| (a.arrival.time.0, a.key, a.decision.passes()))
            .collect()
    };
    assert_eq!(outside(&open), outside(&closed));
    assert_eq!(outside(&open), outside(&fallback));
}

#[test]
fn failed_operations_add_the_timeout_to_the_latency() {
    let (closed, _) = run(&outage_scenario("fail_closed"), 0);
    let max = closed.recorder.added_latency.max().unwrap();
    assert_eq!(
        max,
        Nanos(2_000_000),
        "an outage answers at once, after the round trip"
    );
    let text = r#"
duration = "1s"
[defaults]
limit = 20
window = "1s"
[[limiter]]
algorithm = "token_bucket"
deployment = { scope = "global", store_latency = { median = "5ms", p99 = "100ms" }, timeout = "10ms" }
[[traffic]]
pattern = "steady"
rate = "200/1s"
"#;
    let s = Scenario::parse(text, "t", Origin::File("t.toml".into())).unwrap();
    let (slow, _) = run(&s, 0);
    assert_eq!(slow.recorder.added_latency.max(), Some(Nanos(10_000_000)));
    assert!(
        slow.recorder.fault_open > 0,
        "slow operations time out and fail open"
    );
}

#[test]
fn the_over_limit_cache_saves_store_calls() {
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<(u64, u8, u8, u64)> = (0..200).map(|i| (i * 2_000_000, 0, 0, 1)).collect();
    let s = trace_scenario(
        dir.path(),
        &rows,
        "[[limiter]]\nname = \"plain\"\nalgorithm = \"fixed_window\"\ndeployment = { scope = \"global\", store_latency = \"1ms\" }\n\
         [[limiter]]\nname = \"cached\"\nalgorithm = \"fixed_window\"\ndeployment = { scope = \"global\", store_latency = \"1ms\", cache_over_limit = true }\n",
    );
    let plain = run(&s, 0).0.recorder;
    let cached = run(&s, 1).0.recorder;
    assert_eq!(plain.store_ops, 200);
    assert!(cached.store_ops < 20, "{}", cached.store_ops);
    assert_eq!(plain.passed(), cached.passed());
    assert!(cached.cache_rejections > 180);
}

// Regression (review): the over-limit cache was consulted from the moment
// the store decided, before the instance could have heard the rejection.
#[test]
fn the_over_limit_cache_starts_when_the_rejection_is_heard() {
    let dir = tempfile::tempdir().unwrap();
    let rows = [(0, 0, 0, 1), (10_000_000, 0, 0, 1), (70_000_000, 0, 0, 1)];
    let s = trace_scenario(
        dir.path(),
        &rows,
        "[[limiter]]\nalgorithm = \"fixed_window\"\nlimit = 1\nwindow = \"1s\"\n\
         deployment = { scope = \"global\", store_latency = \"100ms\", cache_over_limit = true }\n",
    );
    let r = run(&s, 0).0.recorder;
    // The rejection of the 10ms attempt is heard at 110ms: the 70ms attempt
    // still goes to the store.
    assert_eq!((r.store_ops, r.cache_rejections), (3, 0));
}

// Regression (review): read-then-write decisions on copies counted the
// sliding log's expired entries again on every read, so the mean state
// exceeded the peak.
#[test]
fn read_then_write_sliding_log_state_stays_within_its_peak() {
    let text = r#"
duration = "20s"
[defaults]
limit = 10
window = "1s"
[[limiter]]
algorithm = "sliding_log"
deployment = { scope = "global", store_latency = "200ms", atomic = false }
[[traffic]]
pattern = "steady"
rate = "100/1s"
"#;
    let s = Scenario::parse(text, "t", Origin::File("t.toml".into())).unwrap();
    let f = run(&s, 0).0.footprint;
    let (num, den) = f.mean();
    assert!(
        num <= f.peak_bytes as u128 * den,
        "mean {} > peak {}",
        num / den,
        f.peak_bytes
    );
    assert!(num > 0);
}

// Regression (review): a store answer far past the end grew the time series
// to 10^10 buckets and aborted the run.
#[test]
fn a_store_answer_long_after_the_end_keeps_the_series_bounded() {
    let text = r#"
duration = "1s"
[defaults]
limit = 1
window = "1s"
[[limiter]]
algorithm = "token_bucket"
deployment = { scope = "global", store_latency = "1000000000s" }
[[traffic]]
pattern = "steady"
rate = "1/1s"
"#;
    let s = Scenario::parse(text, "t", Origin::File("t.toml".into())).unwrap();
    let r = run(&s, 0).0.recorder;
    assert!(r.series.len() <= 2 * 11);
    assert_eq!(r.series.iter().map(|b| b.passed).sum::<u64>(), r.passed());
}
