//! Every shipped scenario opens with comments that teach, and those comments
//! quote the run's own numbers: "rejects about 43%", "passes 200", "dave is
//! rejected at 3.6s". This crate runs each scenario (and each experiment its
//! "What to change next" proposes) and checks every such claim against
//! `summary.csv`, `timeseries.csv` or `decisions.csv`, and checks that the
//! comment still says what is checked — so text and numbers change together.
//!
//! Written after shipped comments had drifted from their runs (the trace's
//! per-IP limiters never rejected dave; bursty's leaky bucket "rejected
//! little" at 43%; race said 30 requests a burst where the file sent 100).
//!
//! Not checked, on purpose: collateral shares and state bytes, whose
//! definitions are changing; the comments make no numeric claim about them.

// The helpers are shared with tests/cli.rs; this crate uses some of them.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::PathBuf;

use crate::common::*;

const SECOND: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

// ---------------------------------------------------------------------------
// Running scenarios
// ---------------------------------------------------------------------------

/// A finished run in a temporary directory.
struct Run {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
}

/// Runs `scenario` (a built-in name or a path) with `args` added, without
/// charts.
fn run(scenario: &str, args: &[&str]) -> Run {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    ratesim()
        .args(["run", scenario, "--no-plots", "--quiet", "--out"])
        .arg(&dir)
        .args(args)
        .assert()
        .success();
    assert_run_dir(&dir);
    Run { _tmp: tmp, dir }
}

/// Runs `scenarios/<name>.toml` with each `(from, to)` edit applied once, as
/// its "What to change next" tells a reader to. Every `from` must occur: the
/// edit the comment proposes is made to the file as shipped.
fn variant(name: &str, edits: &[(&str, &str)], args: &[&str]) -> Run {
    let mut text = read_text(&shipped(name));
    for (from, to) in edits {
        assert!(text.contains(from), "{name}.toml has no {from:?}");
        text = text.replacen(from, to, 1);
    }
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join(format!("{name}.toml"));
    fs::write(&file, text).unwrap();
    let dir = tmp.path().join("run");
    ratesim()
        .arg("run")
        .arg(&file)
        .args(["--no-plots", "--quiet", "--out"])
        .arg(&dir)
        .args(args)
        .assert()
        .success();
    assert_run_dir(&dir);
    Run { _tmp: tmp, dir }
}

fn shipped(name: &str) -> PathBuf {
    manifest_dir().join(format!("scenarios/{name}.toml"))
}

// ---------------------------------------------------------------------------
// What the comments say
// ---------------------------------------------------------------------------

/// Words separated by single spaces.
fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The opening comment of `scenarios/<name>.toml`, as one line of prose.
fn comment(name: &str) -> String {
    let text = read_text(&shipped(name));
    let lines: Vec<&str> = text
        .lines()
        .take_while(|l| l.starts_with('#') || l.trim().is_empty())
        .map(|l| l.trim_start_matches('#'))
        .collect();
    squash(&lines.join(" "))
}

/// Asserts the opening comment of `name` says each of `phrases` (compared
/// with whitespace squashed), so the claim a test checks is the one a reader
/// reads.
fn says(name: &str, phrases: &[&str]) {
    let c = comment(name);
    for p in phrases {
        assert!(
            c.contains(&squash(p)),
            "{name}.toml no longer says {p:?}; update this test with the text\n{c}"
        );
    }
}

// ---------------------------------------------------------------------------
// Reading results
// ---------------------------------------------------------------------------

/// `summary.csv`: limiter → column → value.
struct Summary(BTreeMap<String, HashMap<String, String>>);

impl Summary {
    fn of(run: &Run) -> Summary {
        let (head, rows) = csv_rows(&run.dir.join("summary.csv"));
        Summary(
            rows.into_iter()
                .map(|r| {
                    let row: HashMap<String, String> = head.iter().cloned().zip(r).collect();
                    (row["limiter"].clone(), row)
                })
                .collect(),
        )
    }

    fn text(&self, limiter: &str, col: &str) -> &str {
        let row = self
            .0
            .get(limiter)
            .unwrap_or_else(|| panic!("summary.csv has no row for {limiter}"));
        row.get(col)
            .unwrap_or_else(|| panic!("summary.csv has no column {col}"))
    }

    fn u(&self, limiter: &str, col: &str) -> u64 {
        let v = self.text(limiter, col);
        v.parse()
            .unwrap_or_else(|e| panic!("{limiter}.{col} = {v:?}: {e}"))
    }

    /// A decimal column; empty counts as 0.
    fn f(&self, limiter: &str, col: &str) -> f64 {
        let v = self.text(limiter, col);
        if v.is_empty() {
            return 0.0;
        }
        v.parse()
            .unwrap_or_else(|e| panic!("{limiter}.{col} = {v:?}: {e}"))
    }

    /// `col` as a share of the limiter's attempts.
    fn share(&self, limiter: &str, col: &str) -> f64 {
        self.u(limiter, col) as f64 / self.u(limiter, "attempts") as f64
    }

    fn limiters(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }
}

/// Asserts `lo <= x <= hi`, naming what `x` is.
#[track_caller]
fn within(what: &str, x: f64, lo: f64, hi: f64) {
    assert!(
        (lo..=hi).contains(&x),
        "{what} = {x}, expected within [{lo}, {hi}]"
    );
}

/// One row of `decisions.csv`.
#[derive(Debug, Clone)]
struct Decision {
    limiter: String,
    time_ns: u64,
    key: String,
    client: String,
    attempt: u32,
    outcome: String,
    delay_ns: u64,
    retry_after_ns: Option<u64>,
    /// A chain's member behind the decision (docs/semantics.md §13).
    by: String,
    /// The `[[traffic]]` source of the attempt.
    source: String,
}

impl Decision {
    fn passed(&self) -> bool {
        self.outcome != "rejected"
    }

    /// When it passed: its arrival, plus its delay.
    fn pass_time(&self) -> u64 {
        self.time_ns + self.delay_ns
    }
}

/// Calls `f` on every row of the run's `decisions.csv`, streaming (the NAT
/// scenario's log is half a million rows).
fn each_decision(run: &Run, mut f: impl FnMut(Decision)) {
    let path = run.dir.join("decisions.csv");
    let mut rdr = csv::Reader::from_path(&path)
        .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
    assert_eq!(
        rdr.headers().unwrap().iter().collect::<Vec<_>>().join(","),
        DECISIONS_HEADER
    );
    let mut rec = csv::StringRecord::new();
    while rdr.read_record(&mut rec).unwrap() {
        f(Decision {
            limiter: rec[0].to_string(),
            time_ns: rec[1].parse().unwrap(),
            key: rec[2].to_string(),
            client: rec[3].to_string(),
            attempt: rec[4].parse().unwrap(),
            outcome: rec[5].to_string(),
            delay_ns: rec[6].parse().unwrap(),
            retry_after_ns: (!rec[7].is_empty()).then(|| rec[7].parse().unwrap()),
            by: rec[8].to_string(),
            source: rec[9].to_string(),
        });
    }
}

/// Every row of the run's `decisions.csv`, for the small logs.
fn decisions(run: &Run) -> Vec<Decision> {
    let mut all = Vec::new();
    each_decision(run, |d| all.push(d));
    all
}

/// The rows of one limiter.
fn of<'a>(all: &'a [Decision], limiter: &str) -> Vec<&'a Decision> {
    let v: Vec<&Decision> = all.iter().filter(|d| d.limiter == limiter).collect();
    assert!(!v.is_empty(), "decisions.csv has no rows for {limiter}");
    v
}

/// One row of `timeseries.csv`.
struct Bucket {
    limiter: String,
    start_ns: u64,
    passed: u64,
    retries: u64,
    gave_up: u64,
}

fn timeseries(run: &Run) -> Vec<Bucket> {
    let (head, rows) = csv_rows(&run.dir.join("timeseries.csv"));
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let (l, s, p, r, g) = (
        col("limiter"),
        col("bucket_start_ns"),
        col("passed"),
        col("retries"),
        col("gave_up"),
    );
    rows.iter()
        .map(|row| Bucket {
            limiter: row[l].clone(),
            start_ns: row[s].parse().unwrap(),
            passed: row[p].parse().unwrap(),
            retries: row[r].parse().unwrap(),
            gave_up: row[g].parse().unwrap(),
        })
        .collect()
}

// ---------------------------------------------------------------------------
// boundary
// ---------------------------------------------------------------------------

#[test]
fn boundary_peaks_leaky_bucket_and_retries_are_as_its_comments_say() {
    says(
        "boundary",
        &[
            "one client sends 100 requests 1 ms before each one-second boundary and 100 more exactly at it (from 0.999s on; the run ends at the 10 s boundary)",
            "The fixed window reaches 200 — twice its limit, within 1 ms",
            "The sliding log never exceeds 100",
            "stays at 100 here",
            "hold the pair to 100: their capacity, plus the 0.1 token that refilled in the 1 ms between",
            "The interval bucket reaches 101: the second burst lands exactly on a fill tick and sees that token",
            "(delayed; delay_p50_ms 500, delay_p99_ms 990)",
            "it rejects 99 of those 100. Its peak is 100",
            "reads 100, 200, 300 at the bursts just before 3s, 4s and 5s and stays at 300 from then on",
            "makes 100 requests give up at each burst",
            "every rejected request comes back at the same instant one second later, on top of that second's fresh burst",
        ],
    );
    let r = run("boundary", &["--decisions"]);
    let s = Summary::of(&r);
    let limit = s.u("fixed_window", "limit");
    assert_eq!(limit, 100);
    assert_eq!(s.u("fixed_window", "peak_in_window"), 2 * limit);
    assert_eq!(s.u("sliding_log", "peak_in_window"), 100);
    assert_eq!(s.u("sliding_counter", "peak_in_window"), 100);
    assert_eq!(s.u("token_bucket", "peak_in_window"), 100);
    assert_eq!(s.u("gcra", "peak_in_window"), 100);
    assert_eq!(s.u("interval_bucket", "peak_in_window"), 101);
    assert_eq!(s.u("leaky_bucket", "peak_in_window"), 100);
    assert_eq!(s.f("leaky_bucket", "delay_p50_ms"), 500.0);
    assert_eq!(s.f("leaky_bucket", "delay_p99_ms"), 990.0);

    let all = decisions(&r);
    // The traffic: first attempts in bursts of 100 at k s − 1 ms (k = 1..10)
    // and at k s (k = 1..9).
    let mut bursts: BTreeMap<u64, u64> = BTreeMap::new();
    for d in of(&all, "fixed_window") {
        if d.attempt == 1 {
            *bursts.entry(d.time_ns).or_default() += 1;
        }
    }
    let mut expected: BTreeMap<u64, u64> = (1..=10).map(|k| (k * SECOND - MS, 100)).collect();
    expected.extend((1..=9).map(|k| (k * SECOND, 100)));
    assert_eq!(bursts, expected);

    // The fixed window's 200 are the two bursts around 1 s, 1 ms apart.
    let fw = of(&all, "fixed_window");
    let passed_at = |t: u64| fw.iter().filter(|d| d.time_ns == t && d.passed()).count();
    assert_eq!((passed_at(SECOND - MS), passed_at(SECOND)), (100, 100));

    // The interval bucket's 101st: the fill at 1s, seen by the second burst.
    let ib = of(&all, "interval_bucket");
    let ib_passed_at = |t: u64| ib.iter().filter(|d| d.time_ns == t && d.passed()).count();
    assert_eq!((ib_passed_at(SECOND - MS), ib_passed_at(SECOND)), (100, 1));

    // GCRA: the token bucket's decisions exactly.
    let key = |d: &&Decision| (d.time_ns, d.attempt, d.outcome.clone(), d.retry_after_ns);
    let tb: Vec<_> = of(&all, "token_bucket").iter().map(key).collect();
    let gcra: Vec<_> = of(&all, "gcra").iter().map(key).collect();
    assert_eq!(tb, gcra);

    // The leaky bucket queues the first burst and rejects 99 of the second.
    let lb = of(&all, "leaky_bucket");
    let count = |t: u64, outcome: &str| {
        lb.iter()
            .filter(|d| d.time_ns == t && d.attempt == 1 && d.outcome == outcome)
            .count()
    };
    assert_eq!(count(SECOND - MS, "rejected"), 0);
    assert_eq!(count(SECOND - MS, "delayed"), 99);
    assert_eq!(count(SECOND, "rejected"), 99);

    // Retries come back together one second later, on a fresh burst.
    for d in fw.iter().filter(|d| d.attempt > 1) {
        assert_eq!(d.time_ns % SECOND, SECOND - MS, "{d:?}");
    }
    let ts: Vec<Bucket> = timeseries(&r)
        .into_iter()
        .filter(|b| b.limiter == "fixed_window")
        .collect();
    let at = |t: u64| {
        ts.iter()
            .find(|b| b.start_ns <= t && t < b.start_ns + 100 * MS)
            .unwrap()
    };
    assert_eq!(at(3 * SECOND - MS).retries, 100);
    assert_eq!(at(4 * SECOND - MS).retries, 200);
    for k in 5..=10 {
        assert_eq!(at(k * SECOND - MS).retries, 300, "at {k}s - 1ms");
        assert_eq!(at(k * SECOND - MS).gave_up, 100, "at {k}s - 1ms");
    }
    let retries: u64 = ts.iter().map(|b| b.retries).sum();
    assert_eq!(retries, 100 + 200 + 300 * 6, "retries only at those bursts");
}

#[test]
fn boundary_experiments_do_what_its_comments_say() {
    says(
        "boundary",
        &[
            "delete `granularity` below: clients then wait exactly the retry_after the limiter computed, and the fixed window's rejected requests come back at the very boundary",
            "set `after = \"500ms\"`: the two bursts are still within one second but in different windows, so the fixed window still passes 200, while the token bucket, which refills 50 tokens in those 500 ms, now passes 150",
            "give the token bucket `capacity = 20` and see the burst cut to 20",
            "admitted falls from 1000 to 100. (On the fixed window it changes no decision",
        ],
    );
    let no_granularity = variant(
        "boundary",
        &[("granularity = \"1s\"\n", "")],
        &["--decisions"],
    );
    let second: Vec<Decision> = decisions(&no_granularity)
        .into_iter()
        .filter(|d| d.limiter == "fixed_window" && d.attempt == 2)
        .collect();
    assert!(!second.is_empty());
    for d in &second {
        assert_eq!(d.time_ns % SECOND, 0, "attempt 2 off the boundary: {d:?}");
    }

    let after = Summary::of(&variant(
        "boundary",
        &[("after = \"0s\"", "after = \"500ms\"")],
        &[],
    ));
    assert_eq!(after.u("fixed_window", "peak_in_window"), 200);
    assert_eq!(after.u("token_bucket", "peak_in_window"), 150);

    let cap = Summary::of(&variant(
        "boundary",
        &[(
            "algorithm = \"token_bucket\"\n",
            "algorithm = \"token_bucket\"\ncapacity = 20\n",
        )],
        &[],
    ));
    assert_eq!(cap.u("token_bucket", "peak_in_window"), 20);

    let base = Summary::of(&run("boundary", &[]));
    assert_eq!(base.u("sliding_log", "admitted"), 1000);
    let log = Summary::of(&variant(
        "boundary",
        &[(
            "algorithm = \"sliding_log\"\n",
            "algorithm = \"sliding_log\"\ncount_rejected = true\n",
        )],
        &[],
    ));
    assert_eq!(log.u("sliding_log", "admitted"), 100);
    let fixed = Summary::of(&variant(
        "boundary",
        &[(
            "algorithm = \"fixed_window\"\n",
            "algorithm = \"fixed_window\"\ncount_rejected = true\n",
        )],
        &[],
    ));
    for col in ["attempts", "admitted", "rejected", "peak_in_window"] {
        assert_eq!(
            fixed.u("fixed_window", col),
            base.u("fixed_window", col),
            "{col}"
        );
    }
}

#[test]
fn explain_boundary_says_what_its_run_shows() {
    let tmp = tempfile::tempdir().unwrap();
    let out = ratesim()
        .args(["explain", "boundary", "--out"])
        .arg(tmp.path().join("explain"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = squash(&String::from_utf8(out).unwrap());
    for phrase in [
        "In it, 200 requests passed: 100 at 0.999s",
        "and 100 at 1s. That is 2× the limit of 100.",
        "fixed_window 200 2× the limit",
        "sliding_log 100 within the limit",
        "token_bucket 100 within the limit",
        "only 0.1 token(s) refilled",
        "interval_bucket 101 1.01× the limit",
        "so 1 more passed at 1s",
        "queues up to 100 and rejects what does not fit, so the first burst waits its turn (p99 delay 990 ms) and fills the queue the second burst then finds full",
        "so the fixed window still passes 200, and the token bucket, which refills 50 tokens in those 500 ms, passes 150",
        "its burst shrinks to 20",
    ] {
        assert!(text.contains(phrase), "explain boundary no longer says {phrase:?}:\n{text}");
    }
    // The run behind those sentences: checked in the boundary tests above
    // (the leaky bucket's 99 rejections at 1s, after = "500ms" → 200 and
    // 150, capacity = 20 → 20).
}

#[test]
fn explain_gcra_reports_full_agreement_with_its_own_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("explain");
    let out = ratesim()
        .args(["explain", "gcra", "--out"])
        .arg(&dir)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = squash(&String::from_utf8(out).unwrap());
    let s = Summary::of(&Run {
        _tmp: tempfile::tempdir().unwrap(),
        dir,
    });
    let (attempts, admitted, rejected) = (
        s.u("token_bucket", "attempts"),
        s.u("token_bucket", "admitted"),
        s.u("token_bucket", "rejected"),
    );
    for col in ["attempts", "admitted", "rejected"] {
        assert_eq!(s.u("token_bucket", col), s.u("gcra", col), "{col}");
    }
    let claim = format!(
        "All {attempts} decisions are identical — {admitted} admitted, {rejected} rejected"
    );
    assert!(text.contains(&claim), "no {claim:?} in:\n{text}");
    assert!(!text.contains("bug worth reporting"), "{text}");
    // The state of all keys together, quoted from the summary as written.
    let in_all = format!(
        "{} bytes against {} in all",
        s.text("token_bucket", "state_bytes_total_mean"),
        s.text("gcra", "state_bytes_total_mean")
    );
    assert!(text.contains(&in_all), "no {in_all:?} in:\n{text}");
}

// ---------------------------------------------------------------------------
// bursty
// ---------------------------------------------------------------------------

#[test]
fn bursty_rejection_shares_peaks_and_smoothing_are_as_its_comments_say() {
    says(
        "bursty",
        &[
            "each client sends only about 6 per second",
            "rejects the least, about 30%",
            "cuts sooner and rejects about 54%",
            "it delays more than half of all requests, up to 2 s",
            "so it still rejects about 43% — fewer than the default token bucket and the windows, more than burst-40",
            "about 58% for the fixed window, 64% for the sliding log and the sliding counter",
            "The sliding log never passes more than 10 in any second (peak_in_window); the fixed window lets up to 20 through across a boundary, and the sliding counter, an estimate, up to 17",
            "never more than 23 in 100 ms here), spiky for the buckets and windows (37 to 51)",
        ],
    );
    let r = run("bursty", &[]);
    let s = Summary::of(&r);
    within(
        "requests per client per second",
        s.u("token_bucket", "attempts") as f64 / (50.0 * 60.0),
        5.5,
        6.5,
    );
    let rejected = |l: &str| s.share(l, "rejected");
    within(
        "burst-40 rejected",
        rejected("token_bucket-burst-40"),
        0.29,
        0.31,
    );
    within(
        "token_bucket rejected",
        rejected("token_bucket"),
        0.53,
        0.55,
    );
    within(
        "leaky_bucket rejected",
        rejected("leaky_bucket"),
        0.42,
        0.44,
    );
    within(
        "fixed_window rejected",
        rejected("fixed_window"),
        0.57,
        0.59,
    );
    within("sliding_log rejected", rejected("sliding_log"), 0.63, 0.65);
    within(
        "sliding_counter rejected",
        rejected("sliding_counter"),
        0.63,
        0.65,
    );
    for l in s.limiters() {
        if l != "token_bucket-burst-40" {
            assert!(rejected("token_bucket-burst-40") < rejected(&l), "{l}");
        }
    }
    let windows = ["fixed_window", "sliding_log", "sliding_counter"];
    for l in [
        "token_bucket",
        "fixed_window",
        "sliding_log",
        "sliding_counter",
    ] {
        assert!(rejected("leaky_bucket") < rejected(l), "{l}");
    }
    for w in windows {
        for other in ["token_bucket", "token_bucket-burst-40", "leaky_bucket"] {
            assert!(rejected(w) > rejected(other), "{w} vs {other}");
        }
    }
    assert!(s.share("leaky_bucket", "delayed") > 0.5);
    within(
        "leaky delay_p99_ms",
        s.f("leaky_bucket", "delay_p99_ms"),
        1900.0,
        2000.0,
    );
    within(
        "leaky delay_max_ms",
        s.f("leaky_bucket", "delay_max_ms"),
        1900.0,
        2000.0,
    );
    assert_eq!(s.u("sliding_log", "peak_in_window"), 10);
    assert_eq!(s.u("fixed_window", "peak_in_window"), 20);
    assert_eq!(s.u("sliding_counter", "peak_in_window"), 17);

    let ts = timeseries(&r);
    let max = |l: &str| {
        ts.iter()
            .filter(|b| b.limiter == l)
            .map(|b| b.passed)
            .max()
            .unwrap()
    };
    assert!(max("leaky_bucket") <= 23, "{}", max("leaky_bucket"));
    for l in s.limiters() {
        if l != "leaky_bucket" {
            within(
                &format!("{l}'s most passed in 100 ms"),
                max(&l) as f64,
                37.0,
                51.0,
            );
        }
    }
}

#[test]
fn bursty_experiments_run_and_the_leaky_delay_lets_bursts_start_at_once() {
    says(
        "bursty",
        &[
            "`form = \"periodic\"` with `burst = 40` and `period = \"10s\"` in place of `rate`, `on` and `off`",
            "raise the leaky bucket's `delay` (say to 10) to let the start of a burst through at once",
        ],
    );
    variant(
        "bursty",
        &[
            (
                "form = \"on_off\"",
                "form = \"periodic\"\nburst = 40\nperiod = \"10s\"",
            ),
            ("rate = \"30/1s\"", "#"),
            ("on = \"2s\"", "#"),
            ("off = \"8s\"", "#"),
        ],
        &[],
    );
    let base = Summary::of(&run("bursty", &[]));
    let delay = Summary::of(&variant(
        "bursty",
        &[("queue = 20\n", "queue = 20\ndelay = 10\n")],
        &[],
    ));
    assert!(
        delay.u("leaky_bucket", "admitted") > 10 * base.u("leaky_bucket", "admitted"),
        "admitted at once: {} vs {}",
        delay.u("leaky_bucket", "admitted"),
        base.u("leaky_bucket", "admitted")
    );
}

// ---------------------------------------------------------------------------
// poisson
// ---------------------------------------------------------------------------

/// The poisson picture its comments paint, for any seed.
fn assert_poisson_picture(s: &Summary) {
    let rejected = |l: &str| s.share(l, "rejected");
    within(
        "requests per user per second",
        s.u("token_bucket", "attempts") as f64 / (200.0 * 60.0),
        7.8,
        8.2,
    );
    assert_eq!(s.u("token_bucket-burst-30", "rejected"), 0);
    for l in s.limiters() {
        if l != "token_bucket-burst-30" {
            assert!(s.u(&l, "rejected") > 0, "{l} rejects nothing");
        }
    }
    within("sliding_log rejected", rejected("sliding_log"), 0.11, 0.13);
    within(
        "sliding_counter rejected",
        rejected("sliding_counter"),
        0.11,
        0.13,
    );
    assert!(rejected("sliding_counter") > rejected("sliding_log"));
    for l in ["token_bucket", "gcra", "leaky_bucket", "fixed_window"] {
        assert!(rejected("sliding_log") > rejected(l), "{l}");
    }
    within(
        "fixed_window rejected",
        rejected("fixed_window"),
        0.045,
        0.055,
    );
    assert!(rejected("token_bucket") < 0.005);
    assert!(rejected("gcra") < 0.005);
    assert_eq!(s.u("token_bucket", "peak_in_window"), 19);
    within(
        "leaky_bucket delayed",
        s.share("leaky_bucket", "delayed"),
        0.75,
        0.85,
    );
    for l in [
        "token_bucket",
        "gcra",
        "fixed_window",
        "sliding_log",
        "sliding_counter",
    ] {
        assert!(rejected("leaky_bucket") < rejected(l), "{l}");
    }
}

#[test]
fn poisson_orderings_hold_for_its_seed_and_others() {
    says(
        "poisson",
        &[
            "200 users each send on average 8 requests per second",
            "reject the most — about 12% each (the counter slightly more)",
            "rejects about 5%",
            "The token bucket and GCRA reject under 0.5%: a full bucket of 10 plus its refill lets up to 19 through in a second",
            "absorbs all of it: it rejects nothing",
            "it delays about 4 requests in 5 and rejects fewer than any other algorithm but burst-30",
            "change `seed` and confirm the picture does not depend on one lucky draw",
        ],
    );
    assert_poisson_picture(&Summary::of(&run("poisson", &[])));
    for seed in ["1", "2"] {
        assert_poisson_picture(&Summary::of(&run("poisson", &["--seed", seed])));
    }
}

#[test]
fn poisson_experiments_do_what_its_comments_say() {
    says(
        "poisson",
        &[
            "raise the traffic rate to \"10/1s\" (the mean now equals the limit: watch rejections jump)",
            "`key_by = \"global\"`, `capacity = 2000` and `rate = \"2000/1s\"` to see 200 users' bursts cancel out: it rejects nothing",
        ],
    );
    let base = Summary::of(&run("poisson", &[]));
    let ten = Summary::of(&variant(
        "poisson",
        &[("rate = \"8/1s\"", "rate = \"10/1s\"")],
        &[],
    ));
    for l in base.limiters() {
        assert!(
            ten.u(&l, "rejected") > 2 * base.u(&l, "rejected"),
            "{l}: {} at 10/s vs {} at 8/s",
            ten.u(&l, "rejected"),
            base.u(&l, "rejected")
        );
    }
    let global = Summary::of(&variant(
        "poisson",
        &[(
            "[[traffic]]",
            "[[limiter]]\nname = \"global\"\nalgorithm = \"token_bucket\"\nkey_by = \"global\"\ncapacity = 2000\nrate = \"2000/1s\"\n\n[[traffic]]",
        )],
        &[],
    ));
    assert_eq!(global.u("global", "rejected"), 0);
}

// ---------------------------------------------------------------------------
// steady
// ---------------------------------------------------------------------------

/// Passes of each (client, whole-second window), by pass time.
fn passes_per_window(rows: &[&Decision]) -> BTreeMap<(String, u64), u64> {
    let mut m = BTreeMap::new();
    for d in rows.iter().filter(|d| d.passed()) {
        *m.entry((d.client.clone(), d.pass_time() / SECOND))
            .or_default() += 1;
    }
    m
}

/// Each client's first rejection.
fn first_rejections(rows: &[&Decision]) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for d in rows.iter().filter(|d| !d.passed()) {
        m.entry(d.client.clone()).or_insert(d.time_ns);
    }
    m
}

#[test]
fn steady_settling_and_rejection_shares_are_as_its_comments_say() {
    says(
        "steady",
        &[
            "20 clients each send 11 requests per second",
            "Once settled, every algorithm but the sliding counter passes exactly 10 per second and rejects 1 request in 11",
            "the fixed window and the sliding log reject 1 in 11 from the first second on (600 of 6600); the fixed window always rejects the last request of each window",
            "so they pass everything for the first 9 s and reject 420 (6.4%)",
            "the leaky bucket rejects nothing for the first 5 s",
            "(delay_p99_ms 500: 5 requests ahead, drained at 10/s)",
            "It rejects 500 (7.6%)",
            "The sliding counter rejects about 18% (1180): it settles at 9 passes a second, one under the limit",
            "peak_in_window is 10 for the windows and the leaky bucket; 11 for the token bucket, GCRA and the interval bucket",
        ],
    );
    let r = run("steady", &["--decisions"]);
    let s = Summary::of(&r);
    let all = decisions(&r);
    for l in s.limiters() {
        assert_eq!(s.u(&l, "attempts"), 20 * 11 * 30, "{l}");
    }
    for (l, n) in [
        ("fixed_window", 600),
        ("sliding_log", 600),
        ("token_bucket", 420),
        ("gcra", 420),
        ("interval_bucket", 420),
        ("leaky_bucket", 500),
        ("sliding_counter", 1180),
    ] {
        assert_eq!(s.u(l, "rejected"), n, "{l}");
    }
    within(
        "sliding_counter rejected",
        s.share("sliding_counter", "rejected"),
        0.17,
        0.19,
    );
    assert_eq!(s.f("leaky_bucket", "delay_p99_ms"), 500.0);
    for (l, peak) in [
        ("fixed_window", 10),
        ("sliding_log", 10),
        ("sliding_counter", 10),
        ("leaky_bucket", 10),
        ("token_bucket", 11),
        ("gcra", 11),
        ("interval_bucket", 11),
    ] {
        assert_eq!(s.u(l, "peak_in_window"), peak, "{l}");
    }

    // When each starts rejecting, per client.
    for (l, from, to) in [
        ("fixed_window", 0, SECOND),
        ("sliding_log", 0, SECOND),
        ("token_bucket", 9 * SECOND, 10 * SECOND),
        ("gcra", 9 * SECOND, 10 * SECOND),
        ("interval_bucket", 9 * SECOND, 10 * SECOND),
        ("leaky_bucket", 5 * SECOND, 6 * SECOND),
    ] {
        let first = first_rejections(&of(&all, l));
        assert_eq!(first.len(), 20, "{l}");
        for (client, t) in first {
            assert!(
                (from..to).contains(&t),
                "{l}: {client} first rejected at {t} ns"
            );
        }
    }
    // Once settled: exactly 10 passes a second (9 for the sliding counter).
    for l in [
        "fixed_window",
        "sliding_log",
        "token_bucket",
        "gcra",
        "interval_bucket",
        "leaky_bucket",
    ] {
        for ((client, w), n) in passes_per_window(&of(&all, l)) {
            if (10..30).contains(&w) {
                assert_eq!(n, 10, "{l}: {client} in second {w}");
            }
        }
    }
    for ((client, w), n) in passes_per_window(&of(&all, "sliding_counter")) {
        if (1..30).contains(&w) {
            assert_eq!(n, 9, "sliding_counter: {client} in second {w}");
        }
    }
    // The fixed window: 11 arrivals a window, the last one rejected.
    let mut windows: BTreeMap<(String, u64), Vec<&str>> = BTreeMap::new();
    for d in of(&all, "fixed_window") {
        windows
            .entry((d.client.clone(), d.time_ns / SECOND))
            .or_default()
            .push(&d.outcome);
    }
    for (w, outcomes) in windows {
        assert_eq!(outcomes.len(), 11, "{w:?}");
        assert_eq!(outcomes[10], "rejected", "{w:?}");
        assert!(outcomes[..10].iter().all(|o| *o == "admitted"), "{w:?}");
    }
}

#[test]
fn steady_experiments_do_what_its_comments_say() {
    says(
        "steady",
        &[
            "set the traffic rate to \"9/1s\" (everything passes, every algorithm agrees)",
            "`key_by = \"global\"`, `capacity = 200` and `rate = \"200/1s\"`: once its capacity is spent, all its rejections fall on the two clients that come last at each shared instant",
        ],
    );
    let nine = Summary::of(&variant(
        "steady",
        &[("rate = \"11/1s\"", "rate = \"9/1s\"")],
        &[],
    ));
    for l in nine.limiters() {
        assert_eq!(nine.u(&l, "admitted"), nine.u(&l, "attempts"), "{l}");
    }

    let global = variant(
        "steady",
        &[
            ("phase = \"random\"", "phase = \"0s\""),
            (
                "[[traffic]]",
                "[[limiter]]\nname = \"global\"\nalgorithm = \"token_bucket\"\nkey_by = \"global\"\ncapacity = 200\nrate = \"200/1s\"\n\n[[traffic]]",
            ),
        ],
        &["--decisions"],
    );
    let all = decisions(&global);
    let rows = of(&all, "global");
    let rejected: BTreeSet<&str> = rows
        .iter()
        .filter(|d| !d.passed())
        .map(|d| d.client.as_str())
        .collect();
    assert_eq!(rejected.len(), 2, "{rejected:?}");
    // At every instant, the rejections are the last requests processed.
    let mut by_time: BTreeMap<u64, Vec<&Decision>> = BTreeMap::new();
    for d in &rows {
        by_time.entry(d.time_ns).or_default().push(d);
    }
    for (t, ds) in by_time {
        let first_rejected = ds.iter().position(|d| !d.passed()).unwrap_or(ds.len());
        assert!(
            ds[first_rejected..].iter().all(|d| !d.passed()),
            "at {t} ns a request passed after one was rejected"
        );
        assert_eq!(ds.len(), 20, "all 20 clients fire together at {t} ns");
    }
}

// ---------------------------------------------------------------------------
// trace
// ---------------------------------------------------------------------------

#[test]
fn trace_nat_neighbour_dave_is_rejected_by_ip_and_admitted_by_client() {
    says(
        "trace",
        &[
            "Dave polls every 0.7s — well within the limit — and carol fires 6 requests in 50 ms at 3.5s, just before dave's poll at 3.6s",
            "the per-ip limiters reject dave at 3.6s, right after carol's burst used up their shared address's budget",
            "The per-client limiters never reject him. Carol's own 6th request (at 3.55s) is rejected however she is keyed",
            "keys: 4 clients but 3 addresses",
        ],
    );
    let r = run("trace", &["--decisions"]);
    let s = Summary::of(&r);
    let all = decisions(&r);
    for l in s.limiters() {
        assert_eq!(s.u(&l, "attempts"), 42, "{l}");
        let by_ip = s.text(&l, "key_by") == "ip";
        assert_eq!(s.u(&l, "keys"), if by_ip { 3 } else { 4 }, "{l}");
    }
    // The traffic as told.
    let first = of(&all, "token_bucket-per-client");
    let times = |who: &str| -> Vec<u64> {
        first
            .iter()
            .filter(|d| d.client == who)
            .map(|d| d.time_ns)
            .collect()
    };
    assert_eq!(
        times("dave"),
        (0..7).map(|k| 100 * MS + k * 700 * MS).collect::<Vec<_>>()
    );
    assert_eq!(
        times("carol"),
        (0..6).map(|k| 3500 * MS + k * 10 * MS).collect::<Vec<_>>()
    );
    let keys: BTreeSet<&str> = of(&all, "token_bucket-per-ip")
        .iter()
        .filter(|d| d.client == "dave" || d.client == "carol")
        .map(|d| d.key.as_str())
        .collect();
    assert_eq!(keys, BTreeSet::from(["192.0.2.10"]), "one shared address");

    // The lesson: dave pays for carol by IP, never by client.
    let dave_rejected = |l: &str| -> Vec<u64> {
        of(&all, l)
            .iter()
            .filter(|d| d.client == "dave" && !d.passed())
            .map(|d| d.time_ns)
            .collect()
    };
    for l in s.limiters() {
        if s.text(&l, "key_by") == "ip" {
            assert_eq!(dave_rejected(&l), vec![3600 * MS], "{l}");
        } else {
            assert_eq!(dave_rejected(&l), Vec::<u64>::new(), "{l}");
            assert!(
                of(&all, &l)
                    .iter()
                    .filter(|d| d.client == "dave")
                    .all(|d| d.outcome == "admitted"),
                "{l} delays dave"
            );
        }
        // Carol's 6th request is rejected whichever way she is keyed.
        assert!(
            of(&all, &l)
                .iter()
                .any(|d| d.client == "carol" && d.time_ns == 3550 * MS && !d.passed()),
            "{l}"
        );
    }
    assert_eq!(s.text("token_bucket-per-ip", "key_by"), "ip");
    assert_eq!(s.text("sliding_log-per-ip", "key_by"), "ip");
}

#[test]
fn trace_alice_and_bob_are_treated_as_its_comments_say() {
    says(
        "trace",
        &[
            "alice bursts 8 requests at 0.5s and then polls every 0.4s, bob polls twice a second and once asks for an expensive export (cost = 4, at 3.5s)",
            "the per-client token bucket and sliding log pass 5 and reject 3; the leaky bucket (queue 3) passes 1 at once, delays 3 and rejects 4",
            "The sliding log also rejects her polls at 1s and 1.4s",
            "bob's export: the token bucket admits it, but the sliding log rejects it",
            "its retry_after_ns says it would pass 250 ms later",
        ],
    );
    let r = run("trace", &["--decisions"]);
    let all = decisions(&r);
    let outcomes = |l: &str, who: &str, t: u64| -> Vec<String> {
        let mut v: Vec<String> = of(&all, l)
            .iter()
            .filter(|d| d.client == who && d.time_ns == t)
            .map(|d| d.outcome.clone())
            .collect();
        v.sort();
        v
    };
    let n = |v: &[String], o: &str| v.iter().filter(|x| *x == o).count();
    for l in ["token_bucket-per-client", "sliding_log-per-client"] {
        let v = outcomes(l, "alice", 500 * MS);
        assert_eq!((n(&v, "admitted"), n(&v, "rejected")), (5, 3), "{l}");
    }
    let v = outcomes("leaky_bucket-per-client", "alice", 500 * MS);
    assert_eq!(
        (n(&v, "admitted"), n(&v, "delayed"), n(&v, "rejected")),
        (1, 3, 4)
    );
    let log_rejects_alice: Vec<u64> = of(&all, "sliding_log-per-client")
        .iter()
        .filter(|d| d.client == "alice" && !d.passed() && d.time_ns > 500 * MS)
        .map(|d| d.time_ns)
        .collect();
    assert_eq!(log_rejects_alice, vec![1000 * MS, 1400 * MS]);

    let export = |l: &str| -> Decision {
        (*of(&all, l)
            .into_iter()
            .find(|d| d.client == "bob" && d.time_ns == 3500 * MS)
            .unwrap())
        .clone()
    };
    for l in ["token_bucket-per-client", "token_bucket-per-ip"] {
        assert_eq!(export(l).outcome, "admitted", "{l}");
    }
    for l in ["sliding_log-per-client", "sliding_log-per-ip"] {
        let d = export(l);
        assert_eq!(d.outcome, "rejected", "{l}");
        assert_eq!(d.retry_after_ns, Some(250 * MS), "{l}");
    }
    // The export is the one request of cost 4 in the trace.
    let csv = read_text(&manifest_dir().join("scenarios/traces/sample.csv"));
    let costly: Vec<&str> = csv.lines().filter(|l| l.ends_with(",4")).collect();
    assert_eq!(costly, ["3.5,bob,198.51.100.2,4"]);
}

// ---------------------------------------------------------------------------
// nat
// ---------------------------------------------------------------------------

/// Who was rejected in a NAT run, heavy users told apart by what they sent.
struct NatRun {
    summary: Summary,
    heavy: BTreeSet<String>,
    light_users: usize,
    light_attempts: u64,
    heavy_attempts: u64,
    /// limiter → (light rejections, light users rejected at least once,
    /// heavy users rejected at least once)
    rejected: BTreeMap<String, (u64, usize, usize)>,
    /// limiter → the heavy users' share of its passes
    heavy_share: BTreeMap<String, f64>,
}

fn nat_run(r: &Run) -> NatRun {
    let summary = Summary::of(r);
    let reference = "token_bucket-by-client";
    let mut sent: HashMap<String, u64> = HashMap::new();
    let mut rejected: BTreeMap<String, HashMap<String, u64>> = BTreeMap::new();
    let mut passed: BTreeMap<String, HashMap<String, u64>> = BTreeMap::new();
    each_decision(r, |d| {
        if d.limiter == reference {
            *sent.entry(d.client.clone()).or_default() += 1;
        }
        let m = if d.passed() {
            &mut passed
        } else {
            &mut rejected
        };
        *m.entry(d.limiter).or_default().entry(d.client).or_default() += 1;
    });
    // A light user sends about 30 in the minute, a heavy one about 3000.
    let heavy: BTreeSet<String> = sent
        .iter()
        .filter(|(_, &n)| n > 600)
        .map(|(c, _)| c.clone())
        .collect();
    let light_users = sent.len() - heavy.len();
    let light_attempts = sent
        .iter()
        .filter(|(c, _)| !heavy.contains(*c))
        .map(|(_, n)| n)
        .sum();
    let heavy_attempts = sent
        .iter()
        .filter(|(c, _)| heavy.contains(*c))
        .map(|(_, n)| n)
        .sum();
    let mut out = BTreeMap::new();
    for l in summary.limiters() {
        let m = rejected.remove(&l).unwrap_or_default();
        let light: Vec<u64> = m
            .iter()
            .filter(|(c, _)| !heavy.contains(*c))
            .map(|(_, n)| *n)
            .collect();
        let heavy_n = m.keys().filter(|c| heavy.contains(*c)).count();
        out.insert(l, (light.iter().sum(), light.len(), heavy_n));
    }
    let heavy_share = passed
        .iter()
        .map(|(l, m)| {
            let total: u64 = m.values().sum();
            let h: u64 = m
                .iter()
                .filter(|(c, _)| heavy.contains(*c))
                .map(|(_, n)| n)
                .sum();
            (l.clone(), h as f64 / total as f64)
        })
        .collect();
    NatRun {
        summary,
        heavy,
        light_users,
        light_attempts,
        heavy_attempts,
        rejected: out,
        heavy_share,
    }
}

const NAT_BY_CLIENT: [&str; 2] = ["token_bucket-by-client", "sliding_log-by-client"];
const NAT_BY_IP: [&str; 2] = ["token_bucket-by-ip", "sliding_log-by-ip"];

#[test]
fn nat_only_heavy_users_are_rejected_by_client_and_most_light_users_by_ip() {
    says(
        "nat",
        &[
            "Most users send one request every 2 seconds; 1% are heavy and send 50 per second",
            "keys: 2000 clients vs 40 addresses",
            "near 1 when keyed by client — only the heavy users lose requests — and about 0.6 when keyed by IP",
            "keyed by client, only the 20 heavy users are ever rejected",
            "Keyed by IP, the limiters reject about three times as much, and most of the light users — about three in four",
        ],
    );
    let n = nat_run(&run("nat", &["--decisions"]));
    let s = &n.summary;
    assert_eq!(n.heavy.len(), 20);
    assert_eq!(n.light_users, 1980);
    within(
        "a light user's requests per second",
        n.light_attempts as f64 / 1980.0 / 60.0,
        0.45,
        0.55,
    );
    within(
        "a heavy user's requests per second",
        n.heavy_attempts as f64 / 20.0 / 60.0,
        47.5,
        52.5,
    );
    for (c, ip) in NAT_BY_CLIENT.iter().zip(NAT_BY_IP) {
        assert_eq!(s.u(c, "keys"), 2000);
        assert_eq!(s.u(ip, "keys"), 40);
        assert!(s.f(c, "fairness_jain") > 0.99, "{c}");
        within(
            &format!("{ip} fairness"),
            s.f(ip, "fairness_jain"),
            0.55,
            0.65,
        );
        assert_eq!(n.rejected[*c], (0, 0, 20), "{c}: only the heavy users");
        within(
            &format!("{ip} rejected / {c} rejected"),
            s.u(ip, "rejected") as f64 / s.u(c, "rejected") as f64,
            2.7,
            3.3,
        );
        let (_, light_users, _) = n.rejected[ip];
        within(
            &format!("{ip}: share of light users rejected"),
            light_users as f64 / 1980.0,
            0.7,
            0.8,
        );
    }
}

#[test]
fn nat_experiments_do_what_its_comments_say() {
    says(
        "nat",
        &[
            "`distribution = \"uniform\"` without `exponent`",
            "`heavy_share = 0` (no heavy users: keyed by client nothing is rejected, keyed by IP crowded addresses still are)",
            "`capacity = 300` and `rate = \"300/1s\"` on the token bucket, `limit = 300` on the sliding log) and watch the light users' rejections fall while the heavy users take a larger share of what passes",
        ],
    );
    variant(
        "nat",
        &[
            ("distribution = \"zipf\"", "distribution = \"uniform\""),
            ("exponent = 1.0", ""),
        ],
        &[],
    );
    let none = Summary::of(&variant(
        "nat",
        &[("heavy_share = 0.01", "heavy_share = 0")],
        &[],
    ));
    for (c, ip) in NAT_BY_CLIENT.iter().zip(NAT_BY_IP) {
        assert_eq!(none.u(c, "rejected"), 0, "{c}");
        assert!(none.u(ip, "rejected") > 0, "{ip}");
    }
    let base = nat_run(&run("nat", &["--decisions"]));
    let raised = nat_run(&variant(
        "nat",
        &[
            (
                "algorithm = \"token_bucket\"\nkey_by = \"ip\"\n",
                "algorithm = \"token_bucket\"\nkey_by = \"ip\"\ncapacity = 300\nrate = \"300/1s\"\n",
            ),
            (
                "algorithm = \"sliding_log\"\nkey_by = \"ip\"\n",
                "algorithm = \"sliding_log\"\nkey_by = \"ip\"\nlimit = 300\n",
            ),
        ],
        &["--decisions"],
    ));
    for ip in NAT_BY_IP {
        assert!(
            raised.rejected[ip].0 < base.rejected[ip].0,
            "{ip}: light rejections {} vs {}",
            raised.rejected[ip].0,
            base.rejected[ip].0
        );
        assert!(
            raised.heavy_share[ip] > base.heavy_share[ip],
            "{ip}: heavy share {} vs {}",
            raised.heavy_share[ip],
            base.heavy_share[ip]
        );
    }
}

// ---------------------------------------------------------------------------
// retry-storm
// ---------------------------------------------------------------------------

#[test]
fn retry_storm_amplification_and_give_ups_are_as_its_comments_say() {
    says(
        "retry-storm",
        &[
            "50 clients each fire a burst of 20 requests every 5 seconds",
            "Half of every burst is rejected at its first attempt",
            "immediate retries triple the load and every one of them fails",
            "The other two send almost as much (about 2.7 attempts per request), but some of their retries pass",
            "immediate clients give up on every rejected request (6000, half of all requests)",
            "fewer than 1 in 6 rejected requests give up (940)",
            "Honouring Retry-After exactly, 6 in 10 do (3582, 30% of all requests): the 10 rejected requests of a burst all wait the same 100 ms",
            "only one of them passes in each round",
            "(400 ms: four rounds of 100 ms, against about 1.2 s with exponential backoff)",
        ],
    );
    let r = run("retry-storm", &["--decisions"]);
    let s = Summary::of(&r);
    let all = decisions(&r);
    let (imm, exp, ra) = ("immediate", "exponential-full-jitter", "retry-after");
    for l in [imm, exp, ra] {
        assert_eq!(s.u(l, "logical_requests"), 50 * 20 * 12, "{l}");
        // First attempts: 10 of every burst of 20 pass, 10 are rejected.
        let mut bursts: BTreeMap<(String, u64), (u64, u64)> = BTreeMap::new();
        for d in of(&all, l).iter().filter(|d| d.attempt == 1) {
            let e = bursts.entry((d.client.clone(), d.time_ns)).or_default();
            if d.passed() {
                e.0 += 1
            } else {
                e.1 += 1
            }
        }
        assert_eq!(bursts.len(), 50 * 12, "{l}");
        assert!(bursts.values().all(|&b| b == (10, 10)), "{l}");
    }
    assert_eq!(s.f(imm, "retry_amplification"), 3.0);
    within(
        "exponential amplification",
        s.f(exp, "retry_amplification"),
        2.65,
        2.75,
    );
    within(
        "retry-after amplification",
        s.f(ra, "retry_amplification"),
        2.65,
        2.75,
    );
    assert!(of(&all, imm)
        .iter()
        .filter(|d| d.attempt > 1)
        .all(|d| !d.passed()));
    for l in [exp, ra] {
        assert!(
            of(&all, l).iter().any(|d| d.attempt > 1 && d.passed()),
            "{l}"
        );
    }
    assert_eq!(s.u(imm, "gave_up"), 6000);
    assert_eq!(s.u(exp, "gave_up"), 940);
    assert!(6 * s.u(exp, "gave_up") < 6000);
    assert_eq!(s.u(ra, "gave_up"), 3582);
    within(
        "retry-after gave up / rejected",
        3582.0 / 6000.0,
        0.58,
        0.62,
    );
    within(
        "retry-after gave up / requests",
        s.u(ra, "gave_up") as f64 / s.u(ra, "logical_requests") as f64,
        0.29,
        0.31,
    );
    // Retry-After: every rejection says 100 ms, and each round lets one
    // request of a client through.
    let rows = of(&all, ra);
    assert!(rows
        .iter()
        .filter(|d| !d.passed())
        .all(|d| d.retry_after_ns == Some(100 * MS)));
    let mut rounds: BTreeMap<(String, u64), u64> = BTreeMap::new();
    for d in rows.iter().filter(|d| d.attempt > 1) {
        *rounds.entry((d.client.clone(), d.time_ns)).or_default() += d.passed() as u64;
    }
    assert!(rounds.values().all(|&n| n <= 1));
    assert_eq!(s.f(ra, "time_to_success_p99_ms"), 400.0);
    within(
        "exponential success p99 ms",
        s.f(exp, "time_to_success_p99_ms"),
        1100.0,
        1300.0,
    );
}

#[test]
fn retry_storm_clients_that_read_the_ratelimit_fields_are_as_its_comments_say() {
    says(
        "retry-storm",
        &[
            "Half of every burst is rejected at its first attempt, unless its clients read the RateLimit fields (the last source)",
            "ratelimit_headers: read the RateLimit fields of every answer and, at r = 0, hold every request until t seconds have passed",
            "clients that read the RateLimit fields never hear a rejection",
            "The tenth request of a burst leaves r = 0, t = 1 (the bucket is full again in 1 s), so the client holds the other ten for that second and sends them when the bucket has refilled",
            "1 attempt per request, none rejected, none given up, success p99 1000 ms",
            "every second half waits a full second",
            "(The 90 requests still held when the run ends are never sent.)",
        ],
    );
    let r = run("retry-storm", &["--decisions=headers"]);
    let s = Summary::of(&r);
    let rh = "ratelimit-headers";
    let rows: Vec<Vec<String>> = csv_rows(&r.dir.join("decisions.csv"))
        .1
        .into_iter()
        .filter(|row| row[0] == rh)
        .collect();
    // columns: limiter,time_ns,key,client,attempt,outcome,…,ratelimit (11)
    assert!(rows.iter().all(|row| row[4] == "1" && row[5] == "admitted"));
    assert_eq!(s.u(rh, "rejected"), 0);
    assert_eq!(s.u(rh, "gave_up"), 0);
    assert_eq!(s.f(rh, "retry_amplification"), 1.0);
    assert_eq!(s.f(rh, "time_to_success_p99_ms"), 1000.0);
    // 12 bursts of 20 per client, less the 90 held past the end.
    assert_eq!(rows.len(), 50 * 20 * 12 - 90);
    assert_eq!(s.u(rh, "logical_requests"), 50 * 20 * 12 - 90);
    assert_eq!(s.u(rh, "pending_at_end"), 0);
    // Per client, the requests go out 10 at a time: each burst's first ten
    // at once, the tenth saying r = 0, t = 1, and the other ten 1 s later
    // (a burst the run cut leaves its first ten).
    let mut by_client: BTreeMap<String, BTreeMap<u64, Vec<String>>> = BTreeMap::new();
    for row in &rows {
        by_client
            .entry(row[3].clone())
            .or_default()
            .entry(row[1].parse().unwrap())
            .or_default()
            .push(row[11].clone());
    }
    assert_eq!(by_client.len(), 50);
    let mut cut = 0;
    for (client, times) in &by_client {
        let ts: Vec<u64> = times.keys().copied().collect();
        for (i, (&t, fields)) in times.iter().enumerate() {
            let expected: Vec<String> = (0..10)
                .rev()
                .map(|r| format!("\"{rh}\";r={r};t=1"))
                .collect();
            assert_eq!(fields, &expected, "{client} at {t}");
            if i % 2 == 1 {
                assert_eq!(t, ts[i - 1] + SECOND, "{client}");
            }
        }
        if ts.len() % 2 == 1 {
            cut += 1;
        }
    }
    assert_eq!(cut, 9);
}

#[test]
fn retry_storm_jitter_and_granularity_do_what_its_comments_say() {
    says(
        "retry-storm",
        &[
            "add `jitter = \"200ms\"` to the retry_after policy (the herd spreads out and half as many give up)",
            "`granularity = \"1s\"` (HTTP's whole seconds: each wait becomes a whole second, in which the bucket refills completely, and none gives up)",
        ],
    );
    let policy = "retry = { policy = \"retry_after\", max_attempts = 5 }";
    let jitter = Summary::of(&variant(
        "retry-storm",
        &[(
            policy,
            "retry = { policy = \"retry_after\", max_attempts = 5, jitter = \"200ms\" }",
        )],
        &[],
    ));
    within(
        "gave up with jitter / without",
        jitter.u("retry-after", "gave_up") as f64 / 3582.0,
        0.4,
        0.6,
    );
    let whole = Summary::of(&variant(
        "retry-storm",
        &[(
            policy,
            "retry = { policy = \"retry_after\", max_attempts = 5, granularity = \"1s\" }",
        )],
        &[],
    ));
    assert_eq!(whole.u("retry-after", "gave_up"), 0);
}

// ---------------------------------------------------------------------------
// many-keys
// ---------------------------------------------------------------------------

#[test]
fn many_keys_rate_and_key_count_are_as_its_comments_say() {
    says(
        "many-keys",
        &[
            "100 000 clients",
            "share 50 000 requests per second",
            "every one that ever sent: about 65 000 of the 100 000 in these 20 s, the same for every limiter",
        ],
    );
    // 10^6 attempts: the summary only, no decision log.
    let s = Summary::of(&run("many-keys", &[]));
    let keys = s.u("token_bucket", "keys");
    within("keys", keys as f64, 63_000.0, 67_000.0);
    for l in s.limiters() {
        assert_eq!(s.u(&l, "keys"), keys, "{l}");
        within(
            &format!("{l}: requests per second"),
            s.u(&l, "attempts") as f64 / 20.0,
            49_000.0,
            51_000.0,
        );
    }
}

#[test]
fn many_keys_state_is_cheapest_for_the_buckets_and_dearest_for_the_sliding_log() {
    says(
        "many-keys",
        &[
            "The average key sends fewer requests in all 20 s than its limit allows in one",
            "so every mean is far below the per-key peak — and the sliding log's is the highest",
            "the sliding log costs the most per key, and GCRA the least — exactly 72/104 of the token bucket's, since they decide alike and keep their key until it is fresh again",
        ],
    );
    let s = Summary::of(&run("many-keys", &[]));
    let column = |l: &str, c: &str| s.f(l, c);
    let per_key = s.u("token_bucket", "attempts") as f64 / s.u("token_bucket", "keys") as f64;
    within("attempts per key", per_key, 1.0, 20.0);
    for l in s.limiters() {
        let (mean, peak) = (
            column(&l, "state_bytes_per_key_mean"),
            column(&l, "state_bytes_per_key_peak"),
        );
        assert!(mean * 2.0 < peak, "{l}: mean {mean}, peak {peak}");
    }
    for c in ["state_bytes_per_key_mean", "state_bytes_redis_per_key_mean"] {
        let by = |pick: fn(f64, f64) -> bool| {
            s.limiters()
                .into_iter()
                .reduce(|a, b| {
                    if pick(column(&b, c), column(&a, c)) {
                        b
                    } else {
                        a
                    }
                })
                .unwrap()
        };
        assert_eq!(by(|a, b| a > b), "sliding_log", "{c}");
        if c == "state_bytes_redis_per_key_mean" {
            assert_eq!(by(|a, b| a < b), "gcra", "{c}");
            let ratio = column("gcra", c) / column("token_bucket", c);
            within("GCRA / token bucket in Redis", ratio, 0.69, 0.695);
            // The same keys alive at every moment: exactly 72 bytes to 104.
            let peak = |l: &str| s.u(l, "state_bytes_redis_total_peak");
            assert_eq!(peak("gcra") * 104, peak("token_bucket") * 72);
        }
    }
}

#[test]
fn many_keys_more_skew_means_fewer_hotter_keys() {
    says(
        "many-keys",
        &["`exponent = 1.3` (more skew: fewer, hotter keys)"],
    );
    // Two seconds of each are enough to see it.
    let short = ("duration = \"20s\"", "duration = \"2s\"");
    let base = Summary::of(&variant("many-keys", &[short], &[]));
    let skewed = Summary::of(&variant(
        "many-keys",
        &[short, ("exponent = 1.1", "exponent = 1.3")],
        &[],
    ));
    let l = "token_bucket";
    assert!(skewed.u(l, "keys") < base.u(l, "keys"));
    let per_key = |s: &Summary| s.u(l, "attempts") as f64 / s.u(l, "keys") as f64;
    assert!(per_key(&skewed) > per_key(&base));
}

// ---------------------------------------------------------------------------
// distributed
// ---------------------------------------------------------------------------

#[test]
fn distributed_local_passes_nearly_four_times_the_policy() {
    says(
        "distributed",
        &[
            "20 clients each send 40 requests per second",
            "the local deployment passes nearly 4× the policy (about 3.7 times what the global store passes: nearly all the clients send)",
            "each instance enforces a quarter of the policy (Envoy's cluster-wide share: capacity 10/4 → 2, rate 10/s / 4)",
            "local-shared holds the policy without a store (within 3% of the global store's admitted)",
            "global-atomic: one shared store updated by a server-side script, 1 ms median round trip, 5 ms p99",
            "the same store across a region, 10 ms median",
        ],
    );
    let r = run("distributed", &[]);
    let s = Summary::of(&r);
    let json: serde_json::Value =
        serde_json::from_slice(&read(&r.dir.join("summary.json"))).unwrap();
    let shared = json["scenario"]["limiters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "local-shared")
        .unwrap();
    let per_instance = &shared["deployment"]["instance_params"];
    assert_eq!(per_instance["capacity"], 2, "{shared}");
    assert_eq!(per_instance["rate"], "1/400ms", "{shared}");
    let attempts = s.u("local", "attempts");
    within(
        "requests per client per second",
        attempts as f64 / (20.0 * 20.0),
        38.0,
        42.0,
    );
    let global = s.u("global-atomic", "admitted") as f64;
    within(
        "local / global admitted",
        s.u("local", "admitted") as f64 / global,
        3.6,
        3.8,
    );
    // The policy: 10 per second for 20 s per client, plus a full bucket.
    within(
        "local / policy",
        s.u("local", "admitted") as f64 / (20.0 * (10.0 * 20.0 + 10.0)),
        3.5,
        4.0,
    );
    assert!(s.share("local", "admitted") > 0.95);
    within(
        "local-shared / global admitted",
        s.u("local-shared", "admitted") as f64 / global,
        0.97,
        1.03,
    );
    within(
        "global-atomic added p50 ms",
        s.f("global-atomic", "added_latency_p50_ms"),
        0.9,
        1.1,
    );
    within(
        "global-atomic added p99 ms",
        s.f("global-atomic", "added_latency_p99_ms"),
        4.5,
        5.5,
    );
    within(
        "global-atomic-slow added p50 ms",
        s.f("global-atomic-slow", "added_latency_p50_ms"),
        9.0,
        11.0,
    );
}

#[test]
fn distributed_experiments_do_what_its_comments_say() {
    says(
        "distributed",
        &[
            "with `routing = \"hash_client\"` one instance would see all of a client's traffic and hold it to a quarter",
            "lower the clients' `rate` to \"8/1s\", under the policy: the global store then rejects under 1%, but local-shared, whose instances each allow a burst of only 2, rejects about a fifth of the requests",
        ],
    );
    let share = "deployment = { share = true }";
    let hashed = Summary::of(&variant(
        "distributed",
        &[(
            share,
            "deployment = { share = true, routing = \"hash_client\" }",
        )],
        &[],
    ));
    within(
        "hash_client local-shared / global admitted",
        hashed.u("local-shared", "admitted") as f64 / hashed.u("global-atomic", "admitted") as f64,
        0.2,
        0.3,
    );
    let slow = Summary::of(&variant(
        "distributed",
        &[("rate = \"40/1s\"", "rate = \"8/1s\"")],
        &[],
    ));
    assert!(slow.share("global-atomic", "rejected") < 0.01);
    within(
        "local-shared rejected at 8/s",
        slow.share("local-shared", "rejected"),
        0.15,
        0.25,
    );
}

// ---------------------------------------------------------------------------
// outage
// ---------------------------------------------------------------------------

#[test]
fn outage_modes_decide_as_its_comments_say() {
    says(
        "outage",
        &[
            "50 users at 8 requests per second each",
            "one scraper at 200 per second",
            "once the four fresh buckets' first 5 are spent a client gets at most 4 × 5 = 20 per second through",
            "(1200: two seconds of everyone's traffic)",
            "all 800 of their requests in the outage",
            "held the scraper to 56 passes in the two seconds: 36 in the first, while the four fresh buckets drained, then 20",
            "Outside it, the three limiters decided identically",
        ],
    );
    let r = run("outage", &["--decisions"]);
    let s = Summary::of(&r);
    let all = decisions(&r);
    let outage = 4 * SECOND..6 * SECOND;
    for l in s.limiters() {
        assert_eq!(s.u(&l, "attempts"), 50 * 8 * 10 + 200 * 10, "{l}");
        assert_eq!(s.u(&l, "fault_decisions"), 1200, "{l}");
    }
    assert_eq!(s.u("fail_open", "unprotected_passes"), 1200);
    let scraper = |d: &Decision| d.client.starts_with("scraper");
    let count =
        |l: &str, f: &dyn Fn(&Decision) -> bool| of(&all, l).into_iter().filter(|d| f(d)).count();
    // fail_closed: every user request in the outage rejected, none outside.
    assert_eq!(
        count("fail_closed", &|d| !scraper(d)
            && outage.contains(&d.time_ns)
            && !d.passed()),
        800
    );
    assert_eq!(count("fail_closed", &|d| !scraper(d) && !d.passed()), 800);
    // local_fallback: every user served; the scraper 36 + 20.
    assert_eq!(count("local_fallback", &|d| !scraper(d) && !d.passed()), 0);
    let scraper_passes = |from: u64| {
        count("local_fallback", &|d| {
            scraper(d) && d.passed() && (from..from + SECOND).contains(&d.time_ns)
        })
    };
    assert_eq!(
        (scraper_passes(4 * SECOND), scraper_passes(5 * SECOND)),
        (36, 20)
    );
    // Outside the outage, identical decisions.
    let outside = |l: &str| -> Vec<(u64, String, u32, String)> {
        of(&all, l)
            .into_iter()
            .filter(|d| !outage.contains(&d.time_ns))
            .map(|d| (d.time_ns, d.client.clone(), d.attempt, d.outcome.clone()))
            .collect()
    };
    let open = outside("fail_open");
    assert_eq!(outside("fail_closed"), open);
    assert_eq!(outside("local_fallback"), open);
}

// ---------------------------------------------------------------------------
// race
// ---------------------------------------------------------------------------

#[test]
fn race_bursts_and_over_admission_are_as_its_comments_say() {
    says(
        "race",
        &[
            "20 clients each fire 100 requests in 10 ms (one every 100 µs) every 2 seconds",
            "the atomic store passes exactly 10 per client per window; so does read-then-write at 20 µs",
            "twice the limit passes (20 of each burst)",
            "the whole burst of 100 passes",
            "read-then-write costs two operations per decision",
        ],
    );
    let r = run("race", &["--decisions"]);
    let s = Summary::of(&r);
    let all = decisions(&r);
    let mut bursts: BTreeMap<(String, u64), Vec<u64>> = BTreeMap::new();
    for d in of(&all, "atomic-1ms") {
        // Bursts are 2 s apart: group by the period each starts in.
        bursts
            .entry((d.client.clone(), d.time_ns / (2 * SECOND)))
            .or_default()
            .push(d.time_ns);
    }
    assert_eq!(bursts.len(), 20 * 10);
    for (b, times) in &bursts {
        assert_eq!(times.len(), 100, "{b:?}");
        let span = times.iter().max().unwrap() - times.iter().min().unwrap();
        assert!(span < 10 * MS, "{b:?} spans {span} ns");
    }
    for (l, admitted, peak) in [
        ("atomic-1ms", 2000, 10),
        ("read-write-20us", 2000, 10),
        ("read-write-200us", 4000, 20),
        ("read-write-1ms", 20000, 100),
    ] {
        assert_eq!(s.u(l, "admitted"), admitted, "{l}");
        assert_eq!(s.u(l, "peak_in_window"), peak, "{l}");
        let ops = if l.starts_with("atomic") { 1 } else { 2 };
        assert_eq!(s.u(l, "store_ops"), ops * s.u(l, "attempts"), "{l}");
    }
}

#[test]
fn race_experiments_do_what_its_comments_say() {
    says(
        "race",
        &[
            "spread the bursts (`spread = \"1s\"`) and watch the race vanish when requests no longer overlap (all four limiters then decide alike)",
            "set `instances = 1`: one instance still races with itself when its requests are concurrent, and passes just as much",
        ],
    );
    let spread = Summary::of(&variant(
        "race",
        &[("spread = \"10ms\"", "spread = \"1s\"")],
        &[],
    ));
    for l in spread.limiters() {
        for col in ["admitted", "rejected"] {
            assert_eq!(spread.u(&l, col), spread.u("atomic-1ms", col), "{l} {col}");
        }
    }
    let one = Summary::of(&variant("race", &[("instances = 8", "instances = 1")], &[]));
    assert_eq!(one.u("read-write-200us", "admitted"), 4000);
    assert_eq!(one.u("read-write-1ms", "admitted"), 20000);
    assert_eq!(one.u("atomic-1ms", "admitted"), 2000);
}

#[test]
fn libraries_variants_decide_as_its_comments_say() {
    says(
        "libraries",
        &[
            "two hand-made traces (traces/libraries.csv, 73 requests of cost 1, and traces/libraries-whale.csv, 6 requests; a policy of 10 per second)",
            "edge bursts 10 requests at 0.999s and 10 at 1s, straddling the epoch boundary: the textbook fixed window passes all 20 within 1 ms",
            "opened edge's window at its first hit, 0.999s, so it passes 10",
            "late sends 1 request at 0.2s",
            "then 9 at 1.199s and 10 at 1.2s: now the first-hit window passes 19 within 1 ms and the epoch window 10",
            "tick sends 10 at 2s and 10 at exactly 3s",
            "rejects the second 10 that the textbook sliding log admits",
            "trickle sends 10 at 5.5s and 3 at 6.05s",
            "so one of the 3 passes where the exact counter passes none",
            "whale sends one request of cost 50 at 3s, then one of cost 1 at 3.1s, 3.5s, 4s, 5s and 8s: a token bucket of 10 can never pass the 50",
            "nothing passes again until 8s",
            "nginx's whole-millisecond arithmetic decides exactly as the exact shaper here",
            "peak_in_window per limiter (20 for fixed_window, 19 for python-limits-fixed)",
        ],
    );
    let r = run("libraries", &["--decisions"]);
    let s = Summary::of(&r);
    assert_eq!(s.u("fixed_window", "peak_in_window"), 20);
    assert_eq!(s.u("python-limits-fixed", "peak_in_window"), 19);
    assert_eq!(s.u("fixed_window", "attempts"), 79);
    assert_eq!(s.u("nginx", "attempts"), 73);
    let all = decisions(&r);
    // Passed of sent, for one limiter, client and instant (ms).
    let at = |limiter: &str, client: &str, ms: u64| {
        let v: Vec<_> = of(&all, limiter)
            .into_iter()
            .filter(|d| d.client == client && d.time_ns == ms * MS)
            .collect();
        (v.iter().filter(|d| d.passed()).count(), v.len())
    };
    assert_eq!(at("fixed_window", "edge", 999), (10, 10));
    assert_eq!(at("fixed_window", "edge", 1000), (10, 10));
    assert_eq!(at("python-limits-fixed", "edge", 1000), (0, 10));
    assert_eq!(at("python-limits-fixed", "late", 200), (1, 1));
    assert_eq!(at("python-limits-fixed", "late", 1199), (9, 9));
    assert_eq!(at("python-limits-fixed", "late", 1200), (10, 10));
    assert_eq!(
        at("fixed_window", "late", 1199).0 + at("fixed_window", "late", 1200).0,
        10
    );
    assert_eq!(at("sliding_log", "tick", 3000), (10, 10));
    assert_eq!(at("python-limits-moving", "tick", 3000), (0, 10));
    assert_eq!(at("sliding_counter", "trickle", 6050), (0, 3));
    assert_eq!(at("python-limits-sliding", "trickle", 6050), (1, 3));
    let whale = |limiter: &str| -> Vec<(u64, String)> {
        of(&all, limiter)
            .into_iter()
            .filter(|d| d.client == "whale")
            .map(|d| (d.time_ns / MS, d.outcome.clone()))
            .collect()
    };
    let bucket = whale("token_bucket");
    assert_eq!(bucket[0], (3000, "rejected".to_string()));
    assert!(of(&all, "token_bucket")
        .iter()
        .any(|d| d.client == "whale" && d.time_ns == 3 * SECOND && d.retry_after_ns.is_none()));
    let guava: Vec<(u64, &str)> = whale("guava")
        .iter()
        .map(|(t, o)| (*t, if o == "rejected" { "r" } else { "p" }))
        .collect();
    assert_eq!(
        guava,
        [
            (3000, "p"),
            (3100, "r"),
            (3500, "r"),
            (4000, "r"),
            (5000, "r"),
            (8000, "p")
        ]
    );
    let shaper = |l: &str| -> Vec<(u64, String, String, u64)> {
        of(&all, l)
            .into_iter()
            .map(|d| (d.time_ns, d.client.clone(), d.outcome.clone(), d.delay_ns))
            .collect()
    };
    assert_eq!(shaper("leaky_bucket"), shaper("nginx"));
}

// ---------------------------------------------------------------------------
// pick-a-limit
// ---------------------------------------------------------------------------

/// sweep.csv rows as (limiter, limit, burst) → column → value.
type Cells = BTreeMap<(String, u64, u64), HashMap<String, String>>;

/// `ratesim sweep pick-a-limit` with `extra` flags: its sweep.csv rows, and
/// recommendation.md.
fn pick_a_limit(extra: &[&str]) -> (Cells, String) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("sweep");
    ratesim()
        .args(["sweep", "pick-a-limit", "--quiet", "--no-plots", "--out"])
        .arg(&out)
        .args(extra)
        .assert()
        .success();
    let (head, rows) = csv_rows(&out.join("sweep.csv"));
    let cells = rows
        .into_iter()
        .map(|r| {
            let row: HashMap<String, String> = head.iter().cloned().zip(r).collect();
            let key = (
                row["limiter"].clone(),
                row["defaults.limit"].parse().unwrap(),
                row["limiter[0].capacity"].parse().unwrap(),
            );
            (key, row)
        })
        .collect();
    let recommendation = read_text(&out.join("recommendation.md"));
    (cells, recommendation)
}

/// The recommended (limit, burst) of `limiter` in recommendation.md; the
/// burst is `None` where the axis is another limiter's (the token
/// bucket's capacity for the sliding window), which the recommendation
/// does not name (docs/semantics.md §7).
fn recommended(md: &str, limiter: &str) -> (u64, Option<u64>) {
    let section = md
        .split(&format!("## {limiter}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("no section for {limiter}:\n{md}"));
    let line = section
        .lines()
        .find(|l| l.starts_with("**Recommended: "))
        .unwrap_or_else(|| panic!("no recommendation for {limiter}:\n{md}"));
    let value = |path: &str| -> Option<u64> {
        let rest = line.split(&format!("{path}=")).nth(1)?;
        rest.split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    };
    (
        value("defaults.limit").expect("the limit"),
        value("limiter[0].capacity"),
    )
}

#[test]
fn pick_a_limit_recommends_what_its_comments_say() {
    says(
        "pick-a-limit",
        &[
            "300 users loading pages (each page a burst of requests at 20 a second for 0.3 s on average, then 6 s of reading on average; they honour Retry-After) and 3 scrapers that send 60 a second each",
            "runs the limits 1, 2, 3, 4, 6, 8, 10, 15 and 20 per second against the token-bucket bursts (capacity) 10, 20, 30, 40 and 60",
            "at most 1% of the users are ever limited and the three scrapers together pass at most 30 a second (10 each)",
            "The token bucket is recommended at limit 2, burst 60: 2 of the 299 users who sent anything are ever limited (0.67%), and each scraper passes 179 requests in the minute — the burst once, then the limit — 2.98 a second",
            "at limit 2 a burst of 40 limits 22 of them",
            "The sliding window meets no point",
            "At limit 10 (the scrapers' 10 a second each) 263 of the 299 users are limited; even at 20, 85",
        ],
    );
    let (cells, md) = pick_a_limit(&[]);
    let limits = [1u64, 2, 3, 4, 6, 8, 10, 15, 20];
    let bursts = [10u64, 20, 30, 40, 60];
    assert_eq!(cells.len(), 2 * limits.len() * bursts.len());
    let get = |l: &str, limit: u64, burst: u64, col: &str| -> u64 {
        let v = &cells[&(l.to_string(), limit, burst)][col];
        v.parse().unwrap_or_else(|_| panic!("{col} = {v:?}"))
    };
    for &limit in &limits {
        for &burst in &bursts {
            // A steady scraper passes a full bucket once, then the refill
            // (its first request at 0 takes a token the refill has not
            // replaced by the minute's end); through the window, the limit
            // every second.
            assert_eq!(
                get("token_bucket", limit, burst, "passed[scrapers]"),
                3 * (burst + 60 * limit - 1),
                "limit {limit}, burst {burst}"
            );
            assert_eq!(
                get("sliding_window", limit, burst, "passed[scrapers]"),
                3 * 60 * limit
            );
            assert_eq!(get("token_bucket", limit, burst, "clients[users]"), 299);
        }
    }
    assert_eq!(get("token_bucket", 2, 60, "clients_limited[users]"), 2);
    assert_eq!(get("token_bucket", 2, 60, "passed[scrapers]"), 3 * 179);
    assert_eq!(get("token_bucket", 2, 40, "clients_limited[users]"), 22);
    assert_eq!(get("sliding_window", 10, 10, "clients_limited[users]"), 263);
    assert_eq!(get("sliding_window", 20, 10, "clients_limited[users]"), 85);
    // Every sliding-window point breaks a requirement: more than 1% of the
    // users (3 of 299), or the scrapers above 30 a second together.
    for &limit in &limits {
        let limited = get("sliding_window", limit, 10, "clients_limited[users]");
        assert!(limited * 100 > 299 || 3 * limit > 30, "limit {limit}");
    }
    assert_eq!(recommended(&md, "token_bucket"), (2, Some(60)));
    let window = md.split("## sliding_window\n").nth(1).unwrap();
    assert!(
        window.contains("**No point meets every requirement.**"),
        "{md}"
    );
    // recommendation.md says it per source, in these numbers.
    for line in [
        "- `users` (299 clients): 282.15/s pass, 0.94/s per client; 2 of 299 ever limited (0.67%); 0.09% of 16945 attempts rejected",
        "- `scrapers` (3 clients): 8.95/s pass, 2.98/s per client; 3 of 3 ever limited (100%); 95.03% of 10800 attempts rejected",
    ] {
        assert!(md.contains(line), "{line}\nnot in\n{md}");
    }
}

#[test]
fn pick_a_limit_changes_as_its_comments_say() {
    says(
        "pick-a-limit",
        &[
            "ratesim sweep pick-a-limit --set traffic[0].off=3s",
            "and the token bucket's recommendation rises to limit 4 (burst 60)",
        ],
    );
    let (_, md) = pick_a_limit(&["--set", "traffic[0].off=3s"]);
    assert_eq!(recommended(&md, "token_bucket"), (4, Some(60)));
}

// ---------------------------------------------------------------------------
// Every shipped scenario is covered here
// ---------------------------------------------------------------------------

#[test]
fn every_shipped_scenario_has_its_claims_checked_here() {
    // The first argument of every `says(...)` call in this file.
    let me = include_str!("scenario_claims.rs");
    let checked: BTreeSet<&str> = me
        .split("says(")
        .skip(1)
        .filter_map(|rest| rest.trim_start().strip_prefix('"'))
        .filter_map(|rest| rest.split('"').next())
        .collect();
    for name in SHIPPED {
        assert!(
            checked.contains(name),
            "no test here checks what scenarios/{name}.toml says"
        );
    }
}

// ---------------------------------------------------------------------------
// access-log
// ---------------------------------------------------------------------------

#[test]
fn access_log_victims_are_as_its_comments_say() {
    says(
        "access-log",
        &[
            "under nginx only the three exporters (10.0.9.x) are rejected; an ordinary client is at most delayed (by under 400 ms",
            "about 79% here",
            "burst=10 queues up to 10 requests per client and delays them to 5/s",
        ],
    );
    let r = run("access-log", &["--decisions"]);
    let all = decisions(&r);
    for d in of(&all, "nginx-api") {
        if d.outcome == "rejected" {
            assert!(d.key.starts_with("10.0.9."), "{d:?}");
        } else if d.key.starts_with("10.0.1.") {
            assert!(d.delay_ns < 400_000_000, "{d:?}");
        }
    }
    let envoy = of(&all, "envoy-local");
    assert!(envoy
        .iter()
        .any(|d| d.outcome == "rejected" && d.client.starts_with("10.0.1.")));
    let s = Summary::of(&r);
    assert!(s.u("nginx-api", "delayed") > 0 && s.u("nginx-api", "rejected") > 0);
    let top = read_text(&r.dir.join("top_keys.csv"));
    assert!(
        top.lines()
            .nth(1)
            .unwrap()
            .starts_with("nginx-api,1,10.0.9."),
        "{top}"
    );
    let collateral = s.text("envoy-local", "collateral_share");
    within(
        "envoy collateral",
        collateral.parse::<f64>().unwrap(),
        0.78,
        0.80,
    );
}

// ---------------------------------------------------------------------------
// plans
// ---------------------------------------------------------------------------

/// `sources.csv`: (limiter, source) → column → count.
fn sources(run: &Run) -> BTreeMap<(String, String), HashMap<String, String>> {
    let (head, rows) = csv_rows(&run.dir.join("sources.csv"));
    rows.into_iter()
        .map(|r| {
            let row: HashMap<String, String> = head.iter().cloned().zip(r).collect();
            ((row["limiter"].clone(), row["source"].clone()), row)
        })
        .collect()
}

#[test]
fn plans_layers_reject_whom_its_comments_say() {
    says(
        "plans",
        &[
            "The free layer rejects only the scrapers: 544 of their 901 requests, and none of the 80 ordinary free users' 1,219.",
            "The pro layer rejects nobody: its burst of 100 lets a batch of 60 through, 3,582 times it would have passed what the global cap then rejected.",
            "The global cap rejects everyone else: 3,443 of the batches' 3,985 attempts, and with them 67 requests of 44 of the 80 ordinary free users (55%) and 139 of all 10 pro users'",
            "a scraper's request the free layer rejects never reaches the global cap, which is asked about only 357 of their 901.",
        ],
    );
    let r = run("plans", &["--decisions"]);
    let src = sources(&r);
    let n = |l: &str, s: &str, c: &str| -> u64 {
        src[&(l.to_string(), s.to_string())][c].parse().unwrap()
    };
    // The free layer: the scrapers only.
    assert_eq!(
        [
            n("free", "free-scrapers", "rejected"),
            n("free", "free-scrapers", "attempts")
        ],
        [544, 901]
    );
    assert_eq!(
        [
            n("free", "free", "rejected"),
            n("free", "free", "attempts"),
            n("free", "free", "clients")
        ],
        [0, 1219, 80]
    );
    // The pro layer: nobody, and overruled 3,582 times.
    let s = Summary::of(&r);
    assert_eq!(s.u("pro", "rejected"), 0);
    assert_eq!(s.u("pro", "overruled"), 3582);
    // The global cap: the batches, and the others who come with them.
    assert_eq!(
        [
            n("global", "pro-batch", "rejected"),
            n("global", "pro-batch", "attempts")
        ],
        [3443, 3985]
    );
    assert_eq!(
        [
            n("global", "free", "rejected"),
            n("global", "free", "clients_limited")
        ],
        [67, 44]
    );
    assert_eq!(
        src[&("global".into(), "free".into())]["clients_limited_share"],
        "0.55"
    );
    assert_eq!(
        [
            n("global", "pro", "rejected"),
            n("global", "pro", "clients_limited"),
            n("global", "pro", "clients")
        ],
        [139, 10, 10]
    );
    // All or nothing: the global cap is asked only about what the free
    // layer passed of the scrapers' requests.
    assert_eq!(n("global", "free-scrapers", "attempts"), 357);
    assert_eq!(
        n("global", "free-scrapers", "attempts"),
        n("free", "free-scrapers", "attempts") - n("free", "free-scrapers", "rejected")
    );
    // The chain's rows are what the clients met: every rejection is one
    // layer's, named in the decision log's `by`.
    let all = decisions(&r);
    let chain = of(&all, "plans");
    assert_eq!(chain.len() as u64, s.u("plans", "attempts"));
    let by_global = chain
        .iter()
        .filter(|d| d.outcome == "rejected" && d.by == "global")
        .count() as u64;
    let by_free = chain
        .iter()
        .filter(|d| d.outcome == "rejected" && d.by == "free")
        .count() as u64;
    assert_eq!(by_global, s.u("global", "rejected"));
    assert_eq!(by_free, s.u("free", "rejected"));
    assert_eq!(by_global + by_free, s.u("plans", "rejected"));
    // The free layer rejects the scrapers' requests, and no one else's.
    assert!(chain
        .iter()
        .filter(|d| d.by == "free")
        .all(|d| d.source == "free-scrapers"));
}

#[test]
fn plans_sweep_recommends_the_global_cap_its_comments_say() {
    says(
        "plans",
        &["recommends a global cap of 200/1s with a burst of 200 (recommendation.md, under the chain `plans`): the least of the grid's rates at which the batches no longer crowd the free users out."],
    );
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("sweep");
    ratesim()
        .args(["sweep", "plans", "--quiet", "--no-plots", "--out"])
        .arg(&out)
        .assert()
        .success();
    let rec = read_text(&out.join("recommendation.md"));
    let chain = rec
        .split("\n## plans\n")
        .nth(1)
        .expect("the chain's section");
    assert!(
        chain
            .contains("**Recommended: limiter[global].rate=200/1s, limiter[global].capacity=200**"),
        "{rec}"
    );
    // Its members are recommended with it, not alone.
    assert!(
        rec.contains("## free\n\nA member of chain `plans`"),
        "{rec}"
    );
    // Every lower rate breaks a requirement at every burst.
    let (head, rows) = csv_rows(&out.join("sweep.csv"));
    let col = |name: &str| head.iter().position(|c| c == name).unwrap();
    for r in rows.iter().filter(|r| r[col("limiter")] == "plans") {
        let rate = &r[col("limiter[global].rate")];
        let free: f64 = r[col("clients_limited_share[free]")].parse().unwrap();
        let pro: f64 = r[col("rejected_share[pro]")].parse().unwrap();
        if rate == "100/1s" || rate == "150/1s" {
            assert!(free > 0.05 || pro > 0.01, "{r:?}");
        }
    }
}

// ---------------------------------------------------------------------------
// protect-backend
// ---------------------------------------------------------------------------

#[test]
fn protect_backend_is_as_its_comments_say() {
    says(
        "protect-backend",
        &[
            "a backend of 8 workers at exp(20 ms) — about 400 requests a second — serves 400 users (a request every 2 s each: 200 a second, half its capacity).",
            "A partner's batch job sends 4,000 requests evenly from 15 s to 25 s (400 a second: the load triples), and from 40 s to 50 s the backend serves three times slower",
            "The per-client bucket stops the batch job (3,976 of its 4,000 requests) and no user, but neither rate limit sees the slowdown: both let the backlog grow to 727 requests inside, and their p99 latency passes 3 s.",
            "The concurrency limit holds 16 in flight and p99 latency under 200 ms; the queue-length limit holds at most 32 inside (8 served, 24 waiting) and p99 under 350 ms; AIMD and Gradient2 find their limits from the responses and keep p99 under 1 s.",
            "about one user request in eight (12–13 %) for the concurrency and queue-length limits, against none for the per-client bucket.",
        ],
    );
    let r = run("protect-backend", &[]);
    let s = Summary::of(&r);
    let src = sources(&r);
    let n = |l: &str, source: &str, c: &str| -> u64 {
        src[&(l.to_string(), source.to_string())][c]
            .parse()
            .unwrap()
    };
    // The traffic: 4,000 batch requests; the users about 200 a second.
    assert_eq!(n("per-client", "batch", "attempts"), 4000);
    within(
        "users per second",
        n("per-client", "users", "attempts") as f64 / 60.0,
        190.0,
        210.0,
    );
    // The rate limits.
    assert_eq!(
        [
            n("per-client", "batch", "rejected"),
            n("per-client", "users", "rejected")
        ],
        [3976, 0]
    );
    for l in ["per-client", "global-rate"] {
        assert_eq!(s.u(l, "in_flight_peak"), 727, "{l}");
        assert!(s.f(l, "latency_p99_ms") > 3000.0, "{l}");
    }
    // The limits that read the backend.
    assert_eq!(s.u("concurrency", "in_flight_peak"), 16);
    assert!(s.f("concurrency", "latency_p99_ms") < 200.0);
    assert!(s.u("queue-length", "in_flight_peak") <= 32);
    assert!(s.f("queue-length", "latency_p99_ms") < 350.0);
    for l in ["aimd", "gradient2"] {
        assert!(s.f(l, "latency_p99_ms") < 1000.0, "{l}");
    }
    // What they pay: 12–13 % of the users' requests.
    for l in ["concurrency", "queue-length"] {
        let share = n(l, "users", "rejected") as f64 / n(l, "users", "attempts") as f64;
        within(&format!("{l}: users rejected"), share, 0.12, 0.13);
    }
}
