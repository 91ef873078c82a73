//! Throughput benchmark: `cargo bench` (or `cargo bench --bench throughput
//! -- SCENARIO.toml`).
//!
//! Simulates `benches/bench.toml` — about 10^7 attempts over 10^5 keys —
//! through every limiter, no decision log, first on one thread and then on
//! every core, and prints decisions per CPU-second (the process's user +
//! system time, so a machine shared with other work still gives a fair
//! number) and per wall-second, and the process's peak resident memory. It
//! first runs the same scenario for a tenth of the duration: the peak memory
//! after the full run should be close to the peak after the short one,
//! since memory grows with keys, never with attempts.

use std::time::Instant;

use ratesim::clock::Nanos;
use ratesim::engine;
use ratesim::scenario::Load as _;
use ratesim::scenario::Scenario;

mod process;
use process::{cpu_seconds, peak_rss_mib};

/// Simulates every limiter of `scenario` on `threads` threads; returns the
/// decisions made.
fn run(scenario: &Scenario, threads: usize, verbose: bool) -> u64 {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool");
    let (cpu, wall) = (cpu_seconds(), Instant::now());
    let runs = pool
        .install(|| engine::simulate_all(scenario, Vec::new(), &|_, _, _| {}))
        .expect("bench scenario runs");
    let (cpu, wall) = (cpu_seconds() - cpu, wall.elapsed().as_secs_f64());
    let total: u64 = runs.iter().map(|r| r.recorder.attempts).sum();
    if verbose {
        for (spec, r) in scenario.limiters.iter().zip(&runs) {
            println!("  {:<18} {:>12} decisions", spec.name, r.recorder.attempts);
        }
    }
    println!(
        "{threads} thread(s): {total} decisions over {} keys in {cpu:.2} CPU-s ({wall:.2} s wall): {:.2} M decisions per CPU-second, {:.2} M per wall-second",
        scenario.population.clients(),
        total as f64 / cpu / 1e6,
        total as f64 / wall / 1e6,
    );
    total
}

fn main() {
    // As the binary does (see src/main.rs).
    ratesim::cache::tune_malloc();
    let path = std::env::args()
        .skip(1)
        .find(|a| a.ends_with(".toml"))
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/benches/bench.toml").to_string());
    let mut scenario = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let full = scenario.duration;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());

    scenario.duration = Nanos(full.0 / 10);
    println!(
        "== {} for {} (warm-up, a tenth of the attempts)",
        scenario.name, scenario.duration
    );
    run(&scenario, 1, false);
    let short_peak = peak_rss_mib();

    scenario.duration = full;
    println!("\n== {} for {}", scenario.name, scenario.duration);
    run(&scenario, 1, true);
    let full_peak = peak_rss_mib();
    run(&scenario, cores, false);
    if let (Some(a), Some(b)) = (short_peak, full_peak) {
        println!(
            "peak RSS (one thread): {a:.1} MiB after the short run, {b:.1} MiB after the full run"
        );
    }
}
