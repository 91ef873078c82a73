//! ratesim: an exact, deterministic simulator for rate-limiting algorithms.
//!
//! The workspace's crates below this one: `ratesim-core` (virtual time,
//! exact rates, the limiters, traffic streams, deployments, the validated
//! [`scenario`] model, metrics and the engine — no I/O, no file format)
//! and `ratesim-rundir` ([`rundir`]: the run directory's files). This
//! library holds the rest, re-exporting the core's modules under their
//! own names; the `ratesim` binary only parses arguments and maps errors
//! to exit codes. Its layers, each importing only from those before it
//! (`.ci/layers` checks it):
//!
//! 1. [`error`], [`builtin`]: input errors, the shipped scenario files.
//! 2. [`input`]: the field walker, `Origin`, trace data.
//! 3. [`scenario`] (TOML → validated `Scenario`, each traffic pattern's
//!    table in `scenario::traffic`, the echo for `summary.json`),
//!    [`accesslog`], [`estimate`].
//! 4. [`report`]: the summary model, the exporters (CSV, JSON, terminal)
//!    and, read back from a run directory, Markdown and the PNG charts;
//!    [`staging`] the all-or-nothing run directory.
//! 5. [`run`]: simulate a scenario into a run directory.
//! 6. [`explain`] (walkthroughs), [`onboard`], [`progress`], and [`app`]
//!    with [`cli`]: the commands.

pub mod app;
pub mod cli;
pub mod estimate;
pub mod explain;
pub mod onboard;
pub mod progress;
pub mod redis;
pub mod run;
pub mod staging;
pub mod sweep;

pub use ratesim_core::{
    cache, calendar, clock, deploy, engine, limiter, metrics, population, traffic,
};
pub use ratesim_input::{accesslog, builtin, error, import, overrides, scenario, InputError};
pub use ratesim_report as report;
pub use ratesim_rundir as rundir;
