//! ratesim's core: what rate limiters decide, on a virtual clock.
//!
//! No I/O, no file format, no command line — the exact arithmetic every
//! decision rests on and the run that applies it (docs/architecture.md):
//!
//! - [`clock`]: integer nanoseconds and exact rational rates;
//! - [`calendar`]: the calendar queue of timed entries;
//! - [`chains`]: unsorted buckets as chains of blocks from one pool (the
//!   calendar's ring, a reorder window's);
//! - [`cache`]: software prefetch and the allocator's tuning for the
//!   tables that grow with keys;
//! - [`limiter`]: the algorithms, one file each, as pure decisions
//!   (docs/semantics.md §5);
//! - [`population`]: client and address names interned to dense ids;
//! - [`traffic`]: arrival streams, one file per pattern, and retries;
//! - [`deploy`]: instances, routing and a shared store;
//! - [`backend`]: the servers and waiting room behind the limiter;
//! - [`scenario`]: a validated scenario, as the engine runs it;
//! - [`metrics`]: what a run measures, per limiter;
//! - [`partition`]: a run split into runs of disjoint keys;
//! - [`engine`]: the event queue and the run loop;
//! - [`handoff`]: how a pipeline's thread waits for its next batch;
//! - [`error`]: [`error::InputError`], the error a user can fix (exit
//!   status 2), and how a message quotes the user's values.

pub mod backend;
pub mod cache;
pub mod calendar;
pub mod chains;
pub mod clock;
pub mod deploy;
pub mod engine;
pub mod error;
pub mod handoff;
pub mod limiter;
pub mod metrics;
pub mod partition;
pub mod population;
pub mod scenario;
pub mod traffic;
