//! ratesim's integration tests: one test crate (one link step), a module
//! per area. `common` holds the helpers for tests of the binary,
//! `engine_support` those for tests that run the engine in process.

mod accesslog;
mod backend;
mod chains;
mod charts;
mod cli;
mod clients;
mod common;
mod conformance;
mod distributed;
mod engine;
mod engine_support;
mod export;
mod fuzz;
mod headers;
mod onboard;
mod partition;
mod properties;
mod readme;
mod redis_scripts;
mod report;
mod robust;
mod robust_traffic;
mod scenario_claims;
mod sources;
mod sweep;
mod variants;
