//! The engine takes the same decisions on any number of threads, and a
//! limiter alone the same as beside the others.

use crate::engine_support::scenario;
use ratesim::clock::Nanos;
use ratesim::engine::{simulate, simulate_all, simulate_at_once, Attempt, DecisionSink};
use ratesim::scenario::{Load, Scenario};

/// Every decision of every limiter, in order.
#[derive(Default)]
struct Log(Vec<Attempt>);

impl DecisionSink for Log {
    fn record(&mut self, attempt: &Attempt) -> anyhow::Result<()> {
        self.0.push(*attempt);
        Ok(())
    }
}

fn decisions(scenario: &Scenario, threads: usize) -> Vec<Vec<Attempt>> {
    let mut logs: Vec<Log> = scenario.limiters.iter().map(|_| Log::default()).collect();
    let sinks = logs
        .iter_mut()
        .map(|l| Some(l as &mut (dyn DecisionSink + Send)))
        .collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| simulate_all(scenario, sinks, &|_, _, _| {}))
        .unwrap();
    logs.into_iter().map(|l| l.0).collect()
}

#[test]
fn every_thread_count_and_a_limiter_alone_take_the_same_decisions() {
    // Retries interleave with the shared arrivals at equal times here.
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/retry-storm.toml");
    let mut scenario = Scenario::load(path).unwrap();
    scenario.duration = Nanos(scenario.duration.0.min(3_000_000_000));
    let one = decisions(&scenario, 1);
    assert!(one.iter().all(|d| !d.is_empty()));
    assert_eq!(one, decisions(&scenario, 3));
    for (i, expected) in one.iter().enumerate() {
        let mut alone = Log::default();
        simulate(&scenario, i, Some(&mut alone), &|_, _| {}).unwrap();
        assert_eq!(&alone.0, expected, "limiter {i}");
    }
}

#[test]
fn a_recording_alone_meets_its_retries_in_the_order_one_queue_gives() {
    // A trace is its run's only stream. The second request is rejected and
    // retried 1 s later, at 1 s, when the fourth request arrives. One queue
    // holding both numbers the retry after the third request (read when
    // the second was taken) and before the fourth (read when the third
    // was): at the same time, the retry goes first and takes the new
    // window's one pass.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("trace.csv"),
        "time,client\n0,a\n0,a\n0.5,b\n1,a\n",
    )
    .unwrap();
    let path = dir.path().join("tie.toml");
    std::fs::write(
        &path,
        r#"
name = "tie"
duration = "3s"
[defaults]
limit = 1
window = "1s"
[[limiter]]
algorithm = "fixed_window"
[[traffic]]
pattern = "trace"
path = "trace.csv"
retry = { policy = "fixed", delay = "1s", max_attempts = 2 }
"#,
    )
    .unwrap();
    let scenario = Scenario::load(path.to_str().unwrap()).unwrap();
    let seen = |d: &Attempt| {
        (
            d.arrival.time.0 / 500_000_000,
            d.attempt,
            d.decision.passes(),
        )
    };
    let expected = vec![
        (0, 1, true),
        (0, 1, false),
        (1, 1, true),
        (2, 2, true),
        (2, 1, false),
        (4, 2, true),
    ];
    for threads in [1, 2] {
        let got: Vec<_> = decisions(&scenario, threads)[0].iter().map(seen).collect();
        assert_eq!(got, expected, "{threads} thread(s)");
    }
}

#[test]
fn a_recording_alone_is_numbered_as_when_merged_with_another_source() {
    // A recording that is its run's only stream is taken in runs, without
    // the queue's merge (more rows than a batch and a chunk of them here).
    // Beside a second, silent trace, the queue merges them. Its rows come
    // 500 at a time each second, and the last of each second's retry meets
    // the next second's first row, where the order depends on how the
    // arrivals were numbered: both ways must number them alike.
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from("time,client\n");
    for i in 0..17_000u64 {
        csv += &format!("{},c{}\n", i / 500, i % 7);
    }
    std::fs::write(dir.path().join("trace.csv"), csv).unwrap();
    std::fs::write(dir.path().join("late.csv"), "time,client\n60,z\n").unwrap();
    let load = |more: &str| {
        let path = dir.path().join("s.toml");
        std::fs::write(
            &path,
            format!(
                r#"
name = "runs"
duration = "40s"
[defaults]
limit = 50
window = "1s"
[[limiter]]
algorithm = "fixed_window"
[[traffic]]
pattern = "trace"
path = "trace.csv"
retry = {{ policy = "fixed", delay = "1s", max_attempts = 3 }}
{more}"#
            ),
        )
        .unwrap();
        Scenario::load(path.to_str().unwrap()).unwrap()
    };
    let (alone, merged) = (
        load(""),
        load("[[traffic]]\npattern = \"trace\"\npath = \"late.csv\"\n"),
    );
    let seen = |d: &Attempt| (d.arrival.time, d.arrival.client, d.attempt, d.decision);
    // On one thread chunks of 2^14 arrivals, on two (the recorder set
    // aside) of 2^12: either way a chunk ends inside a batch.
    for threads in [1, 2] {
        let alone = decisions(&alone, threads).remove(0);
        let merged = decisions(&merged, threads).remove(0);
        let retried = alone.iter().filter(|d| d.attempt > 1).count();
        assert!(retried > 1000, "{retried} retries");
        assert_eq!(alone.len(), merged.len());
        assert!(
            alone.iter().map(seen).eq(merged.iter().map(seen)),
            "{threads} thread(s)"
        );
    }
}

/// What a limiter's run counted, as a key partition writes it, and its
/// footprint and backend's figures.
fn counted(run: &ratesim::engine::LimiterRun) -> (Vec<u8>, String) {
    let mut saved = ratesim::partition::wire::Put::default();
    run.recorder.save(&mut saved);
    (saved.0, format!("{:?} {:?}", run.footprint, run.backend))
}

/// A decision log that fails at its `n`-th decision.
struct FailsAt(usize);

impl DecisionSink for FailsAt {
    fn record(&mut self, _: &Attempt) -> anyhow::Result<()> {
        self.0 -= 1;
        anyhow::ensure!(self.0 > 0, "the decision log is full");
        Ok(())
    }
}

/// A token bucket at 5 per second over `clients` Poisson clients at 10 per
/// second each for `duration`, their `retry`.
fn busy_bucket(duration: &str, clients: u32, retry: &str) -> Scenario {
    scenario(&format!(
        r#"
name = "busy"
duration = "{duration}"
[defaults]
limit = 5
window = "1s"
[[limiter]]
algorithm = "token_bucket"
capacity = 10
[[traffic]]
pattern = "poisson"
clients = {clients}
rate = "10/1s"
{retry}
"#
    ))
}

#[test]
fn a_limiter_alone_that_fails_to_log_a_decision_ends_with_the_error() {
    // On two threads a run alone decides on a thread of its own, chunks
    // ahead of the thread that makes its recorder's calls: its error ends
    // the run there too, at the first chunk, a middle one and the last.
    let busy = busy_bucket("6s", 1000, "");
    // A run that hangs instead fails the whole test binary, in time.
    let (done, watch) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let waited = watch.recv_timeout(std::time::Duration::from_secs(300));
        if waited == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
            eprintln!("a run that failed to log a decision hangs");
            std::process::abort();
        }
    });
    let mut all = Log::default();
    simulate(&busy, 0, Some(&mut all), &|_, _| {}).unwrap();
    let n = all.0.len();
    assert!(n > 50_000, "{n} decisions: several chunks");
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        for at in [1, n / 2, n] {
            let mut log = FailsAt(at);
            let run = pool.install(|| simulate(&busy, 0, Some(&mut log), &|_, _| {}));
            let err = run.err().map(|e| e.to_string());
            assert_eq!(
                err.as_deref(),
                Some("the decision log is full"),
                "{threads} threads, at {at}"
            );
        }
    }
    drop(done);
}

#[test]
fn a_limiter_counts_the_same_with_its_recorder_set_aside() {
    // A run may set its recorder aside and make the calls it kept later.
    // Alone on two threads, it decides on a thread of its own while its
    // own thread makes the calls (either generates the chunks of
    // arrivals). Alone on one thread, or side by side with the scenario's
    // other limiters, a plain run (see `Run::is_plain`) decides a chunk,
    // then makes the calls kept over it. Each counts as the run that makes
    // every call at once. Every shipped scenario (retries, a shaper's
    // releases, shared stores and their failures, collateral rejections, a
    // backend, clients that read RateLimit headers, chains, a log), and
    // plain runs.
    use ratesim::estimate::Estimate;
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 16);
    let pool = |threads| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    };
    let (one, two) = (pool(1), pool(2));
    // And a shaper whose delayed passes come due between bursts, when a
    // retry passes at once: with no arrival between them, the retry's pass
    // must still come after them.
    let shaped = scenario(
        r#"
name = "shaped"
duration = "20s"
[defaults]
limit = 5
window = "1s"
[[limiter]]
algorithm = "leaky_bucket"
queue = 6
delay = 2
[[traffic]]
pattern = "bursty"
form = "periodic"
clients = 3
burst = 12
period = "2s"
retry = { policy = "exponential", base = "1100ms", factor = 1, cap = "2s", max_attempts = 3 }
"#,
    );
    // And closed-loop clients behind a shaper and a backend: a client's
    // next request can be sent before the moment the run has reached (the
    // backend lets a pass in at its own time), so the run's events do not
    // always come in time order.
    let closed = scenario(
        r#"
name = "closed"
seed = 4
duration = "20s"
[defaults]
limit = 20
window = "1s"
[[limiter]]
algorithm = "leaky_bucket"
queue = 10
delay = 3
[[traffic]]
pattern = "closed"
clients = 30
think = "exp(20ms)"
[backend]
workers = 2
service = "exp(30ms)"
"#,
    );
    // And plain runs (their first attempts only decided and kept, see
    // `Run::is_plain`), their clients giving up at a rejection: without a
    // retry, and with one of a single attempt.
    let plain = [
        busy_bucket("20s", 100, ""),
        busy_bucket(
            "20s",
            100,
            r#"retry = { policy = "fixed", delay = "1s", max_attempts = 1 }"#,
        ),
    ];
    assert!(plain.iter().all(|s| ratesim::engine::plain_alone(s, 0)));
    let retrying = busy_bucket("1s", 1, r#"retry = { policy = "immediate" }"#);
    assert!(!ratesim::engine::plain_alone(&retrying, 0));
    let scenarios = paths
        .iter()
        .map(|path| {
            (
                format!("{path:?}"),
                Scenario::load(path.to_str().unwrap()).unwrap(),
            )
        })
        .chain([
            ("shaped".to_string(), shaped),
            ("closed".to_string(), closed),
        ])
        .chain(plain.map(|s| ("a plain run".to_string(), s)));
    for (path, mut s) in scenarios {
        // At most about 100 000 decisions a limiter: the larger scenarios
        // take more than two chunks of arrivals side by side (so a
        // chunk's calls kept are made after another's).
        let (full, most) = (
            Estimate::of(&s).decisions,
            100_000 * s.limiters.len() as u128,
        );
        if full > most {
            s.duration = Nanos((s.duration.0 as u128 * most / full) as u64);
        }
        let side_by_side = one.install(|| simulate_all(&s, Vec::new(), &|_, _, _| {}).unwrap());
        assert_eq!(side_by_side.len(), s.limiters.len());
        for (i, side) in side_by_side.into_iter().enumerate() {
            let at_once = simulate_at_once(&s, i).unwrap();
            assert!(at_once.recorder.attempts > 0, "{path} limiter {i}");
            let alone = || simulate(&s, i, None, &|_, _| {}).unwrap();
            for (run, how) in [
                (one.install(alone), "alone on one thread"),
                (two.install(alone), "alone on two threads"),
                (side, "side by side"),
            ] {
                let same = counted(&at_once) == counted(&run);
                assert!(same, "{path} limiter {i}: other counts {how}");
            }
        }
    }
}
