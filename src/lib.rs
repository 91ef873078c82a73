//! ratesim: an exact, deterministic simulator for rate-limiting algorithms.
//!
//! The workspace's crates below this one: `ratesim-core` ([`clock`],
//! [`calendar`], [`cache`], [`limiter`]: virtual time, exact rates and the
//! algorithms, no I/O) and `ratesim-rundir` ([`rundir`]: the run
//! directory's files). This library holds the rest; the `ratesim` binary
//! only parses arguments and maps errors to exit codes. Its layers, each
//! importing only from those before it (`.ci/layers` checks it):
//!
//! 1. [`error`], [`builtin`]: input errors, the shipped scenario files.
//! 2. [`input`]: the input vocabulary (the field walker, `Defaults`,
//!    `Origin`, `Population`, trace data).
//! 3. [`limiter`] (pure decisions, and the list of algorithms) and
//!    [`traffic`] (arrival streams, each pattern parsing its own table).
//! 4. [`scenario`] (TOML → validated `Scenario`), [`deploy`], [`metrics`],
//!    [`estimate`].
//! 5. [`engine`]: the event queue and the run loop, no I/O.
//! 6. [`report`]: the summary model, the exporters (CSV, JSON, terminal)
//!    and, read back from a run directory, Markdown and the PNG charts;
//!    [`staging`] the all-or-nothing run directory.
//! 7. [`run`]: simulate a scenario into a run directory.
//! 8. [`explain`] (walkthroughs), [`onboard`], [`progress`], and [`app`]
//!    with [`cli`]: the commands.

pub mod accesslog;
pub mod app;
pub mod builtin;
pub mod cli;
pub mod deploy;
pub mod engine;
pub mod error;
pub mod estimate;
pub mod explain;
pub mod import;
pub mod input;
pub mod metrics;
pub mod onboard;
pub mod overrides;
pub mod progress;
pub mod redis;
pub mod report;
pub mod run;
pub mod scenario;
pub mod staging;
pub mod sweep;
pub mod traffic;

pub use error::InputError;
pub use ratesim_core::{cache, calendar, clock, limiter};
pub use ratesim_rundir as rundir;
