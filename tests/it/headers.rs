//! `--decisions=headers` (docs/semantics.md §11): the RateLimit header
//! columns of `decisions.csv`, against values derived by hand.

use std::fs;

use crate::common::{assert_bad_scenario, csv_rows, ratesim, read_text, DECISIONS_HEADER};

/// One client sends cost-1 requests at 0, 0, 0, 0, 1.5 s, 3 s and 4.5 s.
const TRACE: &str =
    "time_ns,client\n0,a\n0,a\n0,a\n0,a\n1500000000,a\n3000000000,a\n4500000000,a\n";

/// Every algorithm on a policy of 3 per 3 s: rates 1/s, queues and
/// capacities 3; a nodelay shaper; a chain of a bucket and a log.
const SCENARIO: &str = r#"name = "h"
duration = "6s"

[defaults]
limit = 3
window = "3s"

[[limiter]]
name = "tb"
algorithm = "token_bucket"

[[limiter]]
name = "gcra"
algorithm = "gcra"

[[limiter]]
name = "iv"
algorithm = "interval_bucket"

[[limiter]]
name = "lb"
algorithm = "leaky_bucket"

[[limiter]]
name = "lb-nodelay"
algorithm = "leaky_bucket"
delay = 3

[[limiter]]
name = "fw"
algorithm = "fixed_window"

[[limiter]]
name = "sl"
algorithm = "sliding_log"

[[limiter]]
name = "sc"
algorithm = "sliding_counter"

[[limiter]]
name = "guava"
implementation = "guava"

[[limiter]]
name = "tb2"
algorithm = "token_bucket"

[[limiter]]
name = "sl2"
algorithm = "sliding_log"

[[chain]]
name = "both"
limiters = ["tb2", "sl2"]
mode = "all_or_nothing"

[[traffic]]
pattern = "trace"
path = "trace.csv"
"#;

/// Runs `scenario` on [`TRACE`] with `args`; returns `decisions.csv`.
fn run(scenario: &str, args: &[&str]) -> String {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("s.toml"), scenario).unwrap();
    fs::write(tmp.path().join("trace.csv"), TRACE).unwrap();
    let out = ratesim()
        .arg("run")
        .arg(tmp.path().join("s.toml"))
        .args(["--no-plots", "--quiet", "--out"])
        .arg(tmp.path().join("out"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    read_text(&tmp.path().join("out").join("decisions.csv"))
}

/// `limiter`'s rows as `outcome retry_after_s r t`, and its one policy.
fn rows(csv: &str, limiter: &str) -> (Vec<String>, String) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("d.csv");
    fs::write(&path, csv).unwrap();
    let (head, rows) = csv_rows(&path);
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let (outcome, retry, rl, policy) = (
        col("outcome"),
        col("retry_after_s"),
        col("ratelimit"),
        col("ratelimit_policy"),
    );
    let mine: Vec<&Vec<String>> = rows.iter().filter(|r| r[0] == limiter).collect();
    let prefix = format!("\"{limiter}\";");
    let shown = mine
        .iter()
        .map(|r| {
            let fields = r[rl]
                .strip_prefix(&prefix)
                .unwrap_or_else(|| panic!("{}", r[rl]));
            let fields = fields.replace(';', " ").replace("r=", "").replace("t=", "");
            format!("{} {} {fields}", r[outcome], r[retry]).replace("  ", " ")
        })
        .collect();
    let policies: std::collections::BTreeSet<String> =
        mine.iter().map(|r| r[policy].clone()).collect();
    assert_eq!(policies.len(), 1, "{policies:?}");
    (shown, policies.into_iter().next().unwrap())
}

fn expect(csv: &str, limiter: &str, expected: &[&str]) {
    let (shown, policy) = rows(csv, limiter);
    assert_eq!(shown, expected, "{limiter}");
    assert_eq!(policy, format!("\"{limiter}\";q=3;w=3"), "{limiter}");
}

#[test]
fn header_columns_follow_each_algorithm_by_hand() {
    let csv = run(SCENARIO, &["--decisions=headers"]);
    assert_eq!(
        csv.lines().next().unwrap(),
        format!("{DECISIONS_HEADER},retry_after_s,ratelimit,ratelimit_policy")
    );
    // The fields hold double quotes: each is quoted, its quotes doubled.
    let first = csv.lines().nth(1).unwrap();
    assert!(
        first.ends_with(r#",,"""tb"";r=2;t=1","""tb"";q=3;w=3""#),
        "{first}"
    );

    // Token bucket, capacity 3 at 1/s. Three at 0 leave 2, 1, 0 tokens,
    // full again at 1 s, 2 s, 3 s. The fourth is 1 token short: 1 s. At
    // 1.5 s it holds 1.5, leaves 0.5, full at 1.5 + 2.5 s (t = ⌈2.5⌉ = 3).
    // At 3 s: 0.5 + 1.5 = 2, leaves 1, full at 5 s. At 4.5 s: 1 + 1.5 =
    // 2.5, leaves 1.5, full at 6 s.
    let bucket = [
        "admitted 2 1",
        "admitted 1 2",
        "admitted 0 3",
        "rejected 1 0 3",
        "admitted 0 3",
        "admitted 1 2",
        "admitted 1 2",
    ];
    expect(&csv, "tb", &bucket);
    // GCRA, burst 3, T = 1 s: TAT 1, 2, 3 s, r = 3 − ⌈(TAT − t)/T⌉; the
    // fourth conforms at TAT − τ = 3 − 2 = 1 s. At 1.5 s TAT = 4 (r = 3 −
    // ⌈2.5⌉ = 0, t = 3); at 3 s TAT = 5 (r = 1, t = 2); at 4.5 s TAT = 6
    // (r = 3 − ⌈1.5⌉ = 1, t = 2). The token bucket's, as §2 says.
    expect(&csv, "gcra", &bucket);
    // Interval bucket, 1 token each whole second, 3 at most: 2, 1, 0 left
    // (full at the fills of 1, 2, 3 s); the fourth waits for the fill at
    // 1 s. At 1.5 s one fill: 1, leaves 0, full at the fill of 4 s (2.5 s
    // on: t = 3). At 3 s two more: 2, leaves 1, full at 5 s. At 4.5 s
    // the fill of 4 s: 2, leaves 1, full at 6 s (1.5 s on: t = 2).
    expect(
        &csv,
        "iv",
        &[
            "admitted 2 1",
            "admitted 1 2",
            "admitted 0 3",
            "rejected 1 0 3",
            "admitted 0 3",
            "admitted 1 2",
            "admitted 1 2",
        ],
    );
    // Leaky bucket, 1/s, queue 3, no delay: the first passes (next free
    // 1 s); each later one waits for its slot, so nothing would pass at
    // once: r = 0 throughout, t = until the outlet is free (1, 2, 3, 4 s;
    // at 1.5 s slot 4 s, free at 5 s: t = ⌈3.5⌉ = 4; at 3 s free at 6 s;
    // at 4.5 s free at 7 s: t = ⌈2.5⌉ = 3).
    expect(
        &csv,
        "lb",
        &[
            "admitted 0 1",
            "delayed 0 2",
            "delayed 0 3",
            "delayed 0 4",
            "delayed 0 4",
            "delayed 0 3",
            "delayed 0 3",
        ],
    );
    // With delay = 3 (nodelay) every queued request passes at once, of any
    // cost — written r = q = 3 — while a place in the queue is free: not
    // after the fourth (slots 1, 2, 3 s wait), nor at 1.5 s (slots 2, 3,
    // 4 s wait); at 3 s only 4 and 5 s wait, at 4.5 s 5 and 6 s.
    expect(
        &csv,
        "lb-nodelay",
        &[
            "admitted 3 1",
            "admitted 3 2",
            "admitted 3 3",
            "admitted 0 4",
            "admitted 0 4",
            "admitted 3 3",
            "admitted 3 3",
        ],
    );
    // Fixed window of 3 s: 2, 1, 0 left, reset at 3 s; the fourth and the
    // one at 1.5 s retry at 3 s (⌈1.5⌉ = 2 s on). At 3 s a new window: 2
    // left, reset at 6 s; at 4.5 s 1 left, 1.5 s to go.
    expect(
        &csv,
        "fw",
        &[
            "admitted 2 3",
            "admitted 1 3",
            "admitted 0 3",
            "rejected 3 0 3",
            "rejected 2 0 2",
            "admitted 2 3",
            "admitted 1 2",
        ],
    );
    // Sliding log of 3 s: the entries at 0 expire at 3 s (retries then);
    // at 3 s one live entry, at 4.5 s two, the last expiring at 7.5 s.
    expect(
        &csv,
        "sl",
        &[
            "admitted 2 3",
            "admitted 1 3",
            "admitted 0 3",
            "rejected 3 0 3",
            "rejected 2 0 2",
            "admitted 2 3",
            "admitted 1 3",
        ],
    );
    // Sliding counter of 3 s: c = 1, 2, 3 with p = 0: r = 3 − c; the count
    // weighs until the next window ends, 6 s. The fourth fits where
    // 3·(W − e) ≤ 2·W, e = 1 s into the next window: at 4 s (⌈4 − 1.5⌉ =
    // 3 at 1.5 s, t = ⌈4.5⌉ = 5). At 3 s, e = 0: p·(W − e) = 9 > 6,
    // rejected until e = 1 s; r = 3 − 0 − ⌈9/3⌉ = 0, p weighs until 6 s.
    // At 4.5 s, e = 1.5 s: 4.5 ≤ 6, admitted, c = 1, r = 3 − 1 − ⌈4.5/3⌉
    // = 0, c weighs until 9 s (t = ⌈4.5⌉ = 5).
    expect(
        &csv,
        "sc",
        &[
            "admitted 2 6",
            "admitted 1 6",
            "admitted 0 6",
            "rejected 4 0 6",
            "rejected 3 0 5",
            "rejected 1 0 3",
            "admitted 0 5",
        ],
    );
    // Guava, empty start, 1/s, capacity 3: the first passes into debt −1
    // (full again at 4 s); the next three owe 1 s. At 1.5 s: 0.5, passes,
    // −0.5 (full at 5 s: t = ⌈3.5⌉ = 4). At 3 s: 1, passes, 0 — nothing
    // owed, any cost passes (r = q = 3), full at 6 s. At 4.5 s: 1.5,
    // passes, 0.5, full at 7 s (t = ⌈2.5⌉ = 3).
    expect(
        &csv,
        "guava",
        &[
            "admitted 0 4",
            "rejected 1 0 4",
            "rejected 1 0 4",
            "rejected 1 0 4",
            "admitted 0 4",
            "admitted 3 3",
            "admitted 3 3",
        ],
    );
    // The chain: r = the smaller, t = the later of its bucket's and its
    // log's. The fourth: the bucket rejects (retry 1 s), the log would
    // retry at 3 s: 3. At 1.5 s the log rejects (1.5 s) and nothing
    // counts: the bucket holds 1.5 (r 1, full at 3 s), the log r 0 until
    // 3 s: r = 0, t = ⌈1.5⌉ = 2. At 3 s: bucket 3 → 2 (full at 4 s), log
    // 1 live (r 2, 6 s): r 2, t 3. At 4.5 s: bucket 3 → 2 (full at 5.5 s),
    // log 2 live (r 1, 7.5 s): r 1, t 3.
    expect(
        &csv,
        "both",
        &[
            "admitted 2 3",
            "admitted 1 3",
            "admitted 0 3",
            "rejected 3 0 3",
            "rejected 2 0 2",
            "admitted 2 3",
            "admitted 1 3",
        ],
    );
}

#[test]
fn the_scenario_can_ask_for_the_header_columns() {
    let scenario = SCENARIO.replace(
        "[[traffic]]",
        "[output]\ndecisions = \"headers\"\n\n[[traffic]]",
    );
    let from_file = run(&scenario, &[]);
    assert_eq!(from_file, run(SCENARIO, &["--decisions=headers"]));
}

#[test]
fn plain_decisions_have_no_header_columns() {
    let csv = run(SCENARIO, &["--decisions"]);
    assert_eq!(csv.lines().next().unwrap(), DECISIONS_HEADER);
    assert!(!csv.contains("q=3"));
}

#[test]
fn a_window_of_no_whole_seconds_leaves_w_out() {
    let scenario = SCENARIO
        .replace("window = \"3s\"", "window = \"1500ms\"")
        .replace("duration = \"6s\"", "duration = \"5s\"");
    let csv = run(&scenario, &["--decisions=headers"]);
    let second = csv.lines().nth(1).unwrap();
    assert!(second.ends_with(r#","""tb"";q=3""#), "{second}");
}

#[test]
fn a_decisions_word_it_does_not_know_is_named() {
    let scenario = SCENARIO.replace(
        "[[traffic]]",
        "[output]\ndecisions = \"yes\"\n\n[[traffic]]",
    );
    assert_bad_scenario(
        &scenario,
        &[("trace.csv", TRACE)],
        &["output.decisions", "\"yes\"", "true, false or \"headers\""],
    );
}

/// `toml` run on `trace` (`time_ns,client` rows); `decisions.csv`'s
/// rows as `client time_ns attempt outcome`.
fn client_rows(toml: &str, trace: &str) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("s.toml"), toml).unwrap();
    fs::write(tmp.path().join("trace.csv"), trace).unwrap();
    let out = ratesim()
        .arg("run")
        .arg(tmp.path().join("s.toml"))
        .args(["--decisions", "--no-plots", "--quiet", "--out"])
        .arg(tmp.path().join("out"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_, rows) = csv_rows(&tmp.path().join("out").join("decisions.csv"));
    rows.iter()
        .map(|r| format!("{} {} {} {}", r[3], r[1], r[4], r[5]))
        .collect()
}

/// One token bucket of 3 at 1/s (a policy of 3 per 3 s) whose clients
/// read the RateLimit fields with `retry`.
fn reading(limiter: &str, retry: &str) -> String {
    format!(
        "name = \"r\"\nduration = \"6s\"\n\n[defaults]\nlimit = 3\nwindow = \"3s\"\n\n[[limiter]]\n{limiter}\n\n[[traffic]]\npattern = \"trace\"\npath = \"trace.csv\"\nretry = {{ {retry} }}\n"
    )
}

const S: u64 = 1_000_000_000;

#[test]
fn a_client_that_reads_r_0_holds_its_requests_until_t() {
    let toml = reading(
        "name = \"tb\"\nalgorithm = \"token_bucket\"",
        "policy = \"ratelimit_headers\"",
    );
    // The third request at 0 leaves r = 0, t = 3 (full at 3 s): the client
    // holds the fourth (0) and the fifth (1.5 s) until 3 s and sends them
    // then, in order, before the sixth (3 s), which leaves r = 0, t = 3
    // again: the seventh (4.5 s) waits until 6 s. Nothing is rejected.
    let s3 = 3 * S;
    let s6 = 6 * S;
    assert_eq!(
        client_rows(&toml, TRACE),
        [
            "a 0 1 admitted".to_string(),
            "a 0 1 admitted".into(),
            "a 0 1 admitted".into(),
            format!("a {s3} 1 admitted"),
            format!("a {s3} 1 admitted"),
            format!("a {s3} 1 admitted"),
            format!("a {s6} 1 admitted"),
        ]
    );
}

#[test]
fn a_request_held_past_the_end_is_never_sent() {
    let toml = reading(
        "name = \"tb\"\nalgorithm = \"token_bucket\"",
        "policy = \"ratelimit_headers\"",
    )
    .replace("duration = \"6s\"", "duration = \"5s\"");
    // The seventh request (4.5 s) is held until 6 s, after the run: it is
    // not sent, and no logical request (it never left the client).
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("s.toml"), &toml).unwrap();
    fs::write(tmp.path().join("trace.csv"), TRACE).unwrap();
    let out = tmp.path().join("out");
    ratesim()
        .arg("run")
        .arg(tmp.path().join("s.toml"))
        .args(["--decisions", "--no-plots", "--quiet", "--out"])
        .arg(&out)
        .assert()
        .success();
    let (_, rows) = csv_rows(&out.join("decisions.csv"));
    assert_eq!(rows.len(), 6);
    let (head, rows) = csv_rows(&out.join("sources.csv"));
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    assert_eq!(rows[0][col("logical_requests")], "6");
    assert_eq!(rows[0][col("passed")], "6");
}

#[test]
fn slow_below_holds_while_r_is_at_most_that_share_of_q() {
    for slow_below in ["0.5", "\"1/2\"", "\"0.5\""] {
        let toml = reading(
            "name = \"tb\"\nalgorithm = \"token_bucket\"",
            &format!("policy = \"ratelimit_headers\", slow_below = {slow_below}"),
        );
        // r ≤ 1.5: the second request at 0 leaves r = 1, t = 2: held
        // until 2 s, when the bucket is full again; the fourth there leaves
        // r = 1, t = 2: the fifth (held to 2 s) and sixth wait until 4 s;
        // the sixth leaves r = 1 again, the seventh waits until 6 s.
        let (s2, s4, s6) = (2 * S, 4 * S, 6 * S);
        assert_eq!(
            client_rows(&toml, TRACE),
            [
                "a 0 1 admitted".to_string(),
                "a 0 1 admitted".into(),
                format!("a {s2} 1 admitted"),
                format!("a {s2} 1 admitted"),
                format!("a {s4} 1 admitted"),
                format!("a {s4} 1 admitted"),
                format!("a {s6} 1 admitted"),
            ],
            "{slow_below}"
        );
    }
}

#[test]
fn a_rejected_request_of_a_reading_client_retries_when_its_hold_ends() {
    let toml = reading(
        "name = \"fw\"\nalgorithm = \"fixed_window\"\nkey_by = \"global\"",
        "policy = \"ratelimit_headers\", max_attempts = 3",
    );
    // One window of 3 for everyone. `a` spends it at 0 (r = 0, t = 3) and
    // holds its fourth (1 s) until 3 s; `b` has read nothing, is rejected
    // at 1 s (Retry-After 2 s, r = 0, t = 2) and retries at 3 s, after
    // `a`'s held request.
    let trace = "time_ns,client\n0,a\n0,a\n0,a\n1000000000,a\n1000000000,b\n";
    let s3 = 3 * S;
    assert_eq!(
        client_rows(&toml, trace),
        [
            "a 0 1 admitted".to_string(),
            "a 0 1 admitted".into(),
            "a 0 1 admitted".into(),
            format!("b {S} 1 rejected"),
            format!("a {s3} 1 admitted"),
            format!("b {s3} 2 admitted"),
        ]
    );
}

#[test]
fn held_requests_go_out_in_the_order_they_came_due() {
    let toml = reading(
        "name = \"fw\"\nalgorithm = \"fixed_window\"\nkey_by = \"global\"",
        "policy = \"ratelimit_headers\", max_attempts = 3",
    );
    // `b` spends the window of 3 at 0. `a` is rejected at 1 s (Retry-After
    // 2 s, r = 0, t = 2): it holds its next request (2 s) until 3 s, when
    // its retry comes due too. The request held since 2 s goes first.
    let trace = "time_ns,client\n0,b\n0,b\n0,b\n1000000000,a\n2000000000,a\n";
    let s3 = 3 * S;
    assert_eq!(
        client_rows(&toml, trace),
        [
            "b 0 1 admitted".to_string(),
            "b 0 1 admitted".into(),
            "b 0 1 admitted".into(),
            format!("a {S} 1 rejected"),
            format!("a {s3} 1 admitted"),
            format!("a {s3} 2 admitted"),
        ]
    );
}

// Regression: a held request was queued again at every hold that did not
// let it out, so a backlog that outlasted many holds cost its length in
// events at each hold (a steady 10 000/s through a bucket of 5/s took 2.9
// CPU-s for 80 s against 0.17 for 20 s). Now a client's held requests wait
// in its own queue: one event a hold, one a request it sends.
#[test]
fn a_backlog_held_across_many_holds_costs_an_event_per_hold_and_per_send() {
    use std::sync::atomic::{AtomicU64, Ordering};

    use ratesim::engine::simulate;
    use ratesim::scenario::{Load, Scenario};

    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.toml");
    fs::write(
        &path,
        "duration = \"40s\"\n[defaults]\nlimit = 5\nwindow = \"1s\"\n\
         [[limiter]]\nalgorithm = \"token_bucket\"\n\
         [[traffic]]\npattern = \"steady\"\nrate = \"1000/1s\"\n\
         retry = { policy = \"ratelimit_headers\" }\n",
    )
    .unwrap();
    let scenario = Scenario::load(path.to_str().unwrap()).unwrap();
    let events = AtomicU64::new(0);
    let run = simulate(&scenario, 0, None, &|_, n| {
        events.fetch_add(n, Ordering::Relaxed);
    })
    .unwrap();
    let attempts = run.recorder.attempts;
    // Every request sent passes (the client never sends past r = 0): 5 at
    // once, then 5 as each hold of a second ends.
    assert_eq!((attempts, run.recorder.rejected), (5 * 40, 0));
    // 40 000 arrivals (held or not), and a release for each request sent
    // from the hold (195; a release that finds the hold still on moves to
    // its end): 40 195, where queueing every held request again at every
    // hold took some 800 000 (a backlog of up to 40 000, once a second).
    let events = events.into_inner();
    assert!(
        events == 40_000 + attempts - 5,
        "{events} events for {attempts} attempts"
    );
}

#[test]
fn slow_below_outside_0_to_1_is_named() {
    for (value, shown) in [
        ("2", "2"),
        ("\"3/2\"", "1.5"),
        ("\"1/0\"", "\"1/0\""),
        ("\"x/2\"", "\"x/2\""),
    ] {
        let toml = reading(
            "algorithm = \"token_bucket\"",
            &format!("policy = \"ratelimit_headers\", slow_below = {value}"),
        );
        assert_bad_scenario(
            &toml,
            &[("trace.csv", TRACE)],
            &[
                "traffic[0].retry.slow_below",
                shown,
                "a fraction from 0 to 1",
            ],
        );
    }
}
