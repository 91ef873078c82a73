//! ratesim's input layer: files in, validated values out.
//!
//! - [`scenario`]: TOML → a validated [`ratesim_core::scenario::Scenario`],
//!   each traffic pattern's table in [`scenario::traffic`], the echo for
//!   `summary.json` in [`scenario::echo`], `--set`/`--vary` in
//!   [`overrides`];
//! - [`fields`]: the TOML walker whose errors name the field's path, the
//!   value and what is accepted ([`InputError`]);
//! - [`origin`], [`trace_data`], [`builtin`]: where a scenario and the
//!   files it reads come from;
//! - [`recording`]: a recorded source's file read once per process, and
//!   [`keys`], how its keys are found;
//! - [`accesslog`]: recorded traffic — a CSV trace's sibling formats,
//!   nginx, Envoy and JSON-lines access logs — as one
//!   [`ratesim_core::traffic::Recorded`] source each, or several when
//!   [`split`] by a field's value;
//! - [`import`]: nginx and Envoy configurations → a scenario.

pub mod accesslog;
pub mod builtin;
pub mod export;
pub mod fields;
pub mod import;
pub mod keys;
pub mod origin;
pub mod overrides;
pub mod recording;
pub mod scenario;
pub mod split;
pub mod trace_data;

pub use origin::Origin;
pub use ratesim_core::error::{self, InputError};
pub use recording::RecordedKeys;
pub use trace_data::{regular_file, TraceData};

use ratesim_core::{clock, deploy, limiter, population, traffic};

/// A test's numbers, the same on every run: Knuth's MMIX linear
/// congruential step, `x` advanced.
#[cfg(test)]
pub(crate) fn lcg(x: &mut u64) {
    *x = x
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
}

/// A test's number below `n`, the same on every run: [`lcg`]'s next
/// step, its high bits modulo `n`.
#[cfg(test)]
pub(crate) fn pick(x: &mut u64, n: usize) -> usize {
    lcg(x);
    (*x >> 33) as usize % n
}
