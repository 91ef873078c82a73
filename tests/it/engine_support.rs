//! Running one limiter of a scenario through the library and keeping its
//! decision log in memory, for the test crates that check engine behaviour.

use ratesim::engine::{self, Attempt, DecisionSink, LimiterRun};
use ratesim::scenario::{Load as _, Origin, Scenario};

pub struct Collect(pub Vec<Attempt>);

impl DecisionSink for Collect {
    fn record(&mut self, a: &Attempt) -> anyhow::Result<()> {
        self.0.push(*a);
        Ok(())
    }
}

/// Limiter `limiter` of `s`: its results and every decision, in order.
pub fn run(s: &Scenario, limiter: usize) -> (LimiterRun, Vec<Attempt>) {
    let mut sink = Collect(Vec::new());
    let run = engine::simulate(s, limiter, Some(&mut sink), &|_, _| {}).unwrap();
    (run, sink.0)
}

/// The scenario a file `test.toml` holding `text` gives.
pub fn scenario(text: &str) -> Scenario {
    Scenario::parse(text, "test", Origin::File("test.toml".into())).unwrap()
}
