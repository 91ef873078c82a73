//! The engine takes the same decisions on any number of threads, and a
//! limiter alone the same as beside the others.

use ratesim::clock::Nanos;
use ratesim::engine::{simulate, simulate_all, Attempt, DecisionSink};
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
