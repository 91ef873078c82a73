//! `ratesim export`: a scenario's limiters back as the configuration of the
//! gateway or store that runs them (docs/semantics.md §8) — the reverse of
//! [`crate::import`], so that importing an export gives back limiters that
//! decide the same.
//!
//! | file | target | limiters |
//! |---|---|---|
//! | [`nginx`] | `limit_req_zone` / `limit_req` | `leaky_bucket`, and chains of them |
//! | [`envoy`] | `envoy.filters.http.local_ratelimit` | `token_bucket`, `interval_bucket` with `key_by = "global"` |
//! | [`redis`] | the `EVALSHA` call of a script of `redis/` (docs/semantics.md §6) | one limiter of an algorithm with a script |
//! | [`nginx_lua`] | an nginx Lua fragment calling that script, with the RateLimit fields (docs/semantics.md §11) | the same |
//!
//! A limiter the target cannot run exactly is an error naming it and why;
//! nothing is written then.

pub mod envoy;
pub mod nginx;
pub mod nginx_lua;
pub mod redis;

use crate::error::{quoted, InputError};
use crate::scenario::Scenario;

/// The name of `variable` if it is one nginx variable (`$name`: letters,
/// digits and `_`, not starting with a digit), the only key an export
/// writes, and the only one an import of it reads back.
pub(crate) fn nginx_variable(variable: &str) -> Option<&str> {
    variable.strip_prefix('$').filter(|v| {
        !v.is_empty()
            && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !v.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// Every `--limiter NAME` names a limiter (or chain) of `s`.
fn check_names(s: &Scenario, names: &[String]) -> Result<(), InputError> {
    for n in names {
        if !s.limiters.iter().any(|l| &l.name == n) {
            let known: Vec<&str> = s.limiters.iter().map(|l| l.name.as_str()).collect();
            return Err(InputError::new(format!(
                "--limiter {}: no limiter of {} has this name; names: {}",
                quoted(n),
                s.name,
                known.join(", ")
            )));
        }
    }
    Ok(())
}
