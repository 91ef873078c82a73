//! ratesim: an exact, deterministic simulator for rate-limiting algorithms.
//!
//! The library holds everything; the `ratesim` binary only parses arguments
//! and maps errors to exit codes. Data flows one way:
//! [`scenario`] (TOML → validated `Scenario`) → [`traffic`] (arrival streams)
//! → [`engine`] (event queue, one limiter per run, no I/O) → [`limiter`]
//! (pure decisions) and [`metrics`] (streaming counters) → [`report`]
//! (CSV, JSON, terminal, Markdown, PNG charts). [`app`] ties them together
//! with the file system; [`progress`] is the progress bar at the edge, and
//! [`explain`] the guided walkthroughs; [`onboard`] writes the built-in
//! scenarios out to edit.

pub mod accesslog;
pub mod app;
pub mod builtin;
pub mod cli;
pub mod clock;
pub mod deploy;
pub mod engine;
pub mod error;
pub mod estimate;
pub mod explain;
pub mod import;
pub mod limiter;
pub mod metrics;
pub mod onboard;
pub mod overrides;
pub mod progress;
pub mod redis;
pub mod report;
pub mod scenario;
pub mod staging;
pub mod traffic;

pub use error::InputError;
