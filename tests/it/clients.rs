//! Clients that react: retries, NAT-shared addresses and the metrics that
//! show what clients experienced, through the library on small scenarios.

use crate::engine_support::{run, scenario};
use ratesim::engine::{Attempt, LimiterRun};
use ratesim::limiter::Decision;
use ratesim::scenario::Load as _;
use ratesim::scenario::{Origin, Scenario};

const S: u64 = 1_000_000_000;

fn boundary_with_retry(retry: &str) -> Scenario {
    scenario(&format!(
        r#"
duration = "5s"
[defaults]
limit = 10
window = "1s"
[[limiter]]
algorithm = "fixed_window"
[[traffic]]
pattern = "boundary"
burst = 10
before = "1ms"
after = "500ms"
retry = {{ {retry} }}
"#
    ))
}

#[test]
fn retry_after_clients_of_a_fixed_window_come_back_at_the_boundary() {
    let s = boundary_with_retry(r#"policy = "retry_after", max_attempts = 3"#);
    let (_, log) = run(&s, 0);
    let retries: Vec<&Attempt> = log.iter().filter(|a| a.attempt > 1).collect();
    assert!(!retries.is_empty());
    // The after-burst at k.5 fills the window [k, k+1); the before-burst at
    // k.999 is rejected and told to come back when that window ends.
    for a in &retries {
        assert_eq!(a.arrival.time.0 % S, 0, "retry at {:?}", a.arrival.time);
    }
}

#[test]
fn jitter_spreads_the_retries_after_the_boundary() {
    let s = boundary_with_retry(r#"policy = "retry_after", jitter = "300ms", max_attempts = 3"#);
    let (_, log) = run(&s, 0);
    let offsets: std::collections::BTreeSet<u64> = log
        .iter()
        .filter(|a| a.attempt > 1)
        .map(|a| a.arrival.time.0 % S)
        .collect();
    assert!(offsets.len() > 5, "{} distinct offsets", offsets.len());
    assert!(offsets.iter().all(|&o| o <= 300_000_000));
}

#[test]
fn whole_second_retry_after_brings_rejected_clients_back_one_second_later() {
    let s = boundary_with_retry(r#"policy = "retry_after", granularity = "1s", max_attempts = 2"#);
    let (run, log) = run(&s, 0);
    for (i, a) in log.iter().enumerate().filter(|(_, a)| a.attempt == 2) {
        // Its first attempt was rejected exactly one second earlier.
        let first = log[..i]
            .iter()
            .rev()
            .find(|b| b.attempt == 1 && b.arrival.time.0 + S == a.arrival.time.0);
        assert!(first.is_some_and(|b| !b.decision.passes()));
    }
    assert!(run.recorder.gave_up > 0, "max_attempts ends in giving up");
}

#[test]
fn every_logical_request_passes_gives_up_or_is_still_pending() {
    for retry in [
        r#"policy = "none""#,
        r#"policy = "immediate", max_attempts = 4"#,
        r#"policy = "fixed", delay = "700ms", max_attempts = 3"#,
        r#"policy = "exponential", base = "50ms", jitter = "full", max_attempts = 6"#,
        r#"policy = "exponential", base = "50ms", cap = "2s", jitter = "decorrelated", max_attempts = 6"#,
        r#"policy = "retry_after", granularity = "1s", max_attempts = 5"#,
    ] {
        let s = boundary_with_retry(retry);
        let (run, log) = run(&s, 0);
        let r = &run.recorder;
        assert_eq!(
            r.logical,
            r.passed() + r.gave_up + r.pending_at_end,
            "conservation with {retry}"
        );
        assert_eq!(r.attempts as usize, log.len());
        assert_eq!(
            r.logical as usize,
            log.iter().filter(|a| a.attempt == 1).count()
        );
    }
}

// Regression (review): a give-up was counted in the bucket where the client
// heard the rejection (300ms later, from a store), not where its last
// attempt arrived.
#[test]
fn a_give_up_counts_in_the_bucket_of_its_last_attempt() {
    let s = scenario(
        r#"
duration = "5s"
[defaults]
limit = 10
window = "1s"
[[limiter]]
algorithm = "fixed_window"
deployment = { scope = "global", store_latency = "300ms" }
[[traffic]]
pattern = "boundary"
burst = 10
after = "500ms"
"#,
    );
    let (run, log) = run(&s, 0);
    let mut expected = vec![0u64; run.recorder.series.len()];
    for a in log.iter().filter(|a| !a.decision.passes()) {
        expected[(a.arrival.time.0 / s.output.resolution.0) as usize] += 1;
    }
    let counted: Vec<u64> = run.recorder.series.iter().map(|b| b.gave_up).collect();
    assert!(expected.iter().sum::<u64>() > 0);
    assert_eq!(counted, expected);
}

#[test]
fn pending_retries_at_the_end_are_counted_not_dropped() {
    let s = boundary_with_retry(r#"policy = "fixed", delay = "10s", max_attempts = 2"#);
    let (run, _) = run(&s, 0);
    assert!(run.recorder.pending_at_end > 0);
    assert_eq!(run.recorder.gave_up, 0);
}

#[test]
fn shaped_requests_wait_instead_of_retrying() {
    let s = scenario(
        r#"
duration = "2s"
[defaults]
limit = 10
window = "1s"
[[limiter]]
algorithm = "leaky_bucket"
queue = 100
[[traffic]]
pattern = "boundary"
burst = 20
retry = { policy = "immediate", max_attempts = 5 }
"#,
    );
    let (run, log) = run(&s, 0);
    assert!(log.iter().all(|a| a.attempt == 1));
    assert!(run.recorder.delayed > 0);
}

const NAT: &str = r#"
seed = 4
duration = "30s"
[defaults]
limit = 20
window = "1s"
[[limiter]]
name = "by-client"
algorithm = "sliding_log"
key_by = "client"
[[limiter]]
name = "by-ip"
algorithm = "sliding_log"
key_by = "ip"
[[traffic]]
pattern = "nat"
users = 300
ips = 10
rate = "1/1s"
heavy_share = 0.02
heavy_rate = "40/1s"
"#;

#[test]
fn keying_by_ip_is_less_fair_and_causes_collateral_rejections() {
    let s = scenario(NAT);
    let (by_client, a) = run(&s, 0);
    let (by_ip, b) = run(&s, 1);
    // Identical traffic: the same first attempts under both.
    let firsts = |log: &[Attempt]| -> Vec<(u64, u32, u32)> {
        log.iter()
            .filter(|x| x.attempt == 1)
            .map(|x| (x.arrival.time.0, x.arrival.client, x.arrival.ip))
            .collect()
    };
    assert_eq!(firsts(&a), firsts(&b));
    let fair_client = by_client.recorder.fairness().unwrap();
    let fair_ip = by_ip.recorder.fairness().unwrap();
    assert!(fair_ip < fair_client, "{fair_ip} < {fair_client}");
    let collateral = |r: &LimiterRun| r.recorder.collateral().map_or(0, |(c, _)| c);
    assert_eq!(collateral(&by_client), 0, "0 by definition for client keys");
    assert!(collateral(&by_ip) > 0);
}

/// Carol (cost 1 each) and dave share 192.0.2.10; the policy is 3 per
/// second per key. Carol sends 4 at 0.0–0.3 s, dave 1 at 0.5 s and carol
/// 1 more at 1.5 s.
const NEIGHBOURS: &str = "time,client,ip,cost\n\
    0.0,carol,192.0.2.10,1\n0.1,carol,192.0.2.10,1\n0.2,carol,192.0.2.10,1\n\
    0.3,carol,192.0.2.10,2\n0.5,dave,192.0.2.10,2\n1.5,carol,192.0.2.10,1\n";

fn neighbours(algorithm: &str) -> Scenario {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.csv");
    std::fs::write(&trace, NEIGHBOURS).unwrap();
    let text = format!(
        "duration = \"2s\"\n[defaults]\nlimit = 3\nwindow = \"1s\"\n\
         [[limiter]]\nalgorithm = \"{algorithm}\"\nkey_by = \"ip\"\n\
         [[limiter]]\nalgorithm = \"{algorithm}\"\nname = \"c\"\nkey_by = \"client\"\n\
         [[traffic]]\npattern = \"trace\"\npath = \"t.csv\"\n"
    );
    let s = Scenario::parse(&text, "n", Origin::File(dir.path().join("n.toml"))).unwrap();
    // The trace is read at run time: keep the directory.
    std::mem::forget(dir);
    s
}

#[test]
fn a_rejection_is_collateral_only_if_the_client_alone_would_have_passed() {
    // Truthful-outputs issue 2: collateral once counted a client's own
    // bursts whenever its average rate was under the limit.
    for algorithm in ["fixed_window", "sliding_log", "token_bucket", "gcra"] {
        let s = neighbours(algorithm);
        let (by_ip, log) = run(&s, 0);
        let rejected: Vec<(u64, u32)> = log
            .iter()
            .filter(|a| !a.decision.passes())
            .map(|a| (a.arrival.time.0, a.arrival.cost as u32))
            .collect();
        // Carol's cost-2 request at 0.3 s is her own doing (she alone had
        // sent 3 in the window); dave's at 0.5 s is collateral: alone he
        // would have passed.
        assert_eq!(
            rejected,
            [(300_000_000, 2), (500_000_000, 2)],
            "{algorithm}"
        );
        assert_eq!(by_ip.recorder.collateral(), Some((1, 2)), "{algorithm}");
        assert_eq!(
            by_ip.recorder.collateral_cost(),
            Some((2, 4)),
            "{algorithm}"
        );
        let (by_client, _) = run(&s, 1);
        assert_eq!(by_client.recorder.collateral(), Some((0, 1)), "{algorithm}");
    }
}

#[test]
fn nat_users_send_at_their_rate_and_share_addresses() {
    let s = scenario(NAT);
    let (run, log) = run(&s, 0);
    let users = 300.0;
    let heavy = 6.0; // exactly 2% of 300
    let expected = ((users - heavy) * 1.0 + heavy * 40.0) * 30.0;
    let n = run.recorder.logical as f64;
    // Poisson counts: sd ≈ √16000 ≈ 127; allow 4 sd.
    assert!((n - expected).abs() < 510.0, "{n} vs {expected}");
    let ips: std::collections::BTreeSet<u32> = log.iter().map(|a| a.arrival.ip).collect();
    assert!(ips.len() <= 10 && ips.len() >= 8);
}

#[test]
fn a_source_named_in_a_limiter_is_all_it_sees() {
    let s = scenario(
        r#"
duration = "1s"
[defaults]
limit = 10
window = "1s"
[[limiter]]
name = "a-only"
algorithm = "token_bucket"
traffic = ["a"]
[[limiter]]
name = "both"
algorithm = "token_bucket"
[[traffic]]
name = "a"
pattern = "steady"
rate = "5/1s"
prefix = "a-"
[[traffic]]
name = "b"
pattern = "steady"
rate = "7/1s"
prefix = "b-"
"#,
    );
    assert_eq!(run(&s, 0).0.recorder.attempts, 5);
    assert_eq!(run(&s, 1).0.recorder.attempts, 12);
    let bad = Scenario::parse(
        &NAT.replace("key_by = \"ip\"", "key_by = \"ip\"\ntraffic = [\"nope\"]"),
        "t",
        Origin::File("t.toml".into()),
    )
    .unwrap_err();
    assert!(
        bad.message().starts_with("limiter[1].traffic: \"nope\""),
        "{bad}"
    );
}

#[test]
fn time_to_success_measures_from_the_first_attempt() {
    // Rejected at k.999, back at (k+1).099 in a fresh window.
    let s = boundary_with_retry(r#"policy = "fixed", delay = "100ms", max_attempts = 2"#);
    let (run, log) = run(&s, 0);
    let passed_on_retry = log
        .iter()
        .filter(|a| a.attempt == 2 && a.decision == Decision::Admitted)
        .count();
    assert!(passed_on_retry > 0);
    assert_eq!(
        run.recorder.time_to_success.max().unwrap().0,
        100_000_000,
        "a retry 100ms later that passes took 100ms"
    );
}
