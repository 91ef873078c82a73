//! Throughput benchmark: `cargo bench` (or `cargo bench -- SCENARIO.toml`).
//!
//! Simulates `benches/bench.toml` — about 10^7 attempts over 10^5 keys —
//! through every limiter in turn, one core, no decision log, and prints
//! decisions per second per algorithm and the process's peak resident memory.
//! It first runs the same scenario for a tenth of the duration: the peak
//! memory after the full run should be close to the peak after the short one,
//! since memory grows with keys, never with attempts.

use std::time::Instant;

use ratesim::clock::Nanos;
use ratesim::engine;
use ratesim::scenario::Scenario;

fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn run(scenario: &Scenario) -> u64 {
    let mut total = 0;
    println!(
        "{:<18} {:>12} {:>10} {:>16}",
        "limiter", "attempts", "seconds", "decisions/s"
    );
    for (i, spec) in scenario.limiters.iter().enumerate() {
        let start = Instant::now();
        let run = engine::simulate(scenario, i, None, &|_, _| {}).expect("bench scenario runs");
        let secs = start.elapsed().as_secs_f64();
        let n = run.recorder.attempts;
        total += n;
        println!(
            "{:<18} {:>12} {:>10.2} {:>16.0}",
            spec.name,
            n,
            secs,
            n as f64 / secs
        );
    }
    total
}

fn main() {
    let path = std::env::args()
        .skip(1)
        .find(|a| a.ends_with(".toml"))
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/benches/bench.toml").to_string());
    let mut scenario = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let full = scenario.duration;

    scenario.duration = Nanos(full.0 / 10);
    println!(
        "== {} for {} (warm-up, a tenth of the attempts)",
        scenario.name, scenario.duration
    );
    run(&scenario);
    let short_peak = peak_rss_mib();

    scenario.duration = full;
    println!("\n== {} for {}", scenario.name, scenario.duration);
    let start = Instant::now();
    let total = run(&scenario);
    let secs = start.elapsed().as_secs_f64();
    println!(
        "\n{} decisions over {} keys in {:.2}s: {:.0} decisions/s on one core",
        total,
        scenario.population.clients(),
        secs,
        total as f64 / secs
    );
    if let (Some(a), Some(b)) = (short_peak, peak_rss_mib()) {
        println!("peak RSS: {a:.1} MiB after the short run, {b:.1} MiB after the full run");
    }
}
