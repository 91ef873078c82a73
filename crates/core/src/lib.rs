//! ratesim's core: what a rate limiter decides, on a virtual clock.
//!
//! No I/O, no file format, no command line — only the exact arithmetic
//! every decision rests on (docs/architecture.md):
//!
//! - [`clock`]: integer nanoseconds and exact rational rates;
//! - [`calendar`]: the calendar queue of timed entries;
//! - [`cache`]: software prefetch and the allocator's tuning for the
//!   tables that grow with keys;
//! - [`limiter`]: the algorithms, one file each, as pure decisions
//!   (docs/semantics.md §5).

pub mod cache;
pub mod calendar;
pub mod clock;
pub mod limiter;
