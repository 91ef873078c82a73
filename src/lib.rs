//! ratesim: an exact, deterministic simulator for rate-limiting algorithms.
//!
//! This crate is the top of the workspace (docs/architecture.md): the
//! commands. Below it, `ratesim-core` decides (time, limiters, traffic,
//! the engine, metrics; no I/O), `ratesim-input` reads (scenarios,
//! traces, access logs, gateway configs), `ratesim-report` writes and
//! draws, and `ratesim-rundir` is the run directory's model. Their
//! modules are re-exported here under their own names
//! ([`limiter`], [`scenario`], [`report`], …) for the integration tests
//! and the bench.
//!
//! Its own modules: [`run`] simulates a scenario into a run directory
//! (with [`staging`], all or nothing), [`estimate`] says beforehand how
//! much work and memory that is, [`diff`] compares two run directories,
//! [`merge`] joins a run's key partitions, [`sweep`], [`explain`], [`onboard`],
//! [`redis`] and [`progress`] serve the commands, [`app`] runs them and
//! [`cli`] defines them; `main.rs` parses the arguments and maps errors
//! to exit codes.

pub mod app;
pub mod cli;
pub mod diff;
pub mod estimate;
pub mod explain;
pub mod jobarray;
pub mod merge;
pub mod onboard;
pub mod progress;
pub mod redis;
pub mod run;
pub mod staging;
pub mod sweep;

pub use ratesim_core::{
    cache, calendar, clock, deploy, engine, limiter, metrics, partition, population, traffic,
};
pub use ratesim_input::{
    accesslog, builtin, error, export, import, overrides, scenario, InputError,
};
pub use ratesim_report as report;
pub use ratesim_rundir as rundir;
