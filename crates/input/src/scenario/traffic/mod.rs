//! `[[traffic]]` tables → validated traffic patterns, and back to JSON.
//!
//! Each pattern of [`crate::traffic`] has a file here that reads its table
//! (every error names the field's path, the value and what is accepted)
//! and echoes it for `summary.json`; the streams themselves live with the
//! pattern, in the core.

pub mod boundary;
pub mod bursty;
pub mod closed;
pub mod nat;
pub mod poisson;
pub mod ramp;
pub mod retry;
pub mod steady;
pub mod trace;
pub mod zipf;

use serde_json::Value;

use crate::error::InputError;
use crate::fields::Fields;
use crate::population::Population;
use crate::scenario::Defaults;
use crate::traffic::{Clients, Pattern};
use crate::Origin;

/// Every pattern name with a one-line description, for `ratesim list`.
pub const PATTERNS: &[(&str, &str)] = &[
    ("trace", "replay a recorded CSV (time or time_ns, client, ip, cost) exactly, or an access log: format = \"nginx\", \"envoy\", \"jsonl\"; source = \"FIELD\" splits it into one source per value"),
    ("steady", "`clients` clients, each at a fixed `rate`, with a fixed, spread or random phase"),
    ("poisson", "`clients` clients, each with exponential gaps at `rate` (seeded)"),
    ("boundary", "`burst` requests just before and just after each window boundary"),
    ("bursty", "on/off periods (`on`, `off`, `rate`) or `periodic` bursts of `burst` every `period`"),
    ("nat", "`users` Poisson users behind `ips` addresses, uniform or Zipf, a `heavy_share` at `heavy_rate`"),
    ("zipf", "`keys` clients with Zipf popularity sharing a total `rate`"),
    ("ramp", "each client's rate stepping from `from` to `to` over the run"),
    ("closed", "`clients` clients, each with one request out at a time: `think` between an answer and the next request, `timeout`"),
];

/// What a pattern needs while it is parsed.
pub struct ParseCtx<'a> {
    pub defaults: &'a Defaults,
    pub origin: &'a Origin,
    pub population: &'a mut Population,
    /// Position of this source among `[[traffic]]`.
    pub index: usize,
    /// Its name: a trace split by `source` names the source of an empty
    /// value so.
    pub name: &'a str,
    /// Default prefix for synthetic client names.
    pub default_prefix: String,
    /// Set by a pattern that takes a parameter from `[defaults] limit`
    /// (a sweep of `defaults.limit` that nothing reads is refused).
    pub reads_default_limit: bool,
}

/// The table of pattern `name` (one of [`PATTERNS`]).
pub fn parse(name: &str, f: &mut Fields, ctx: &mut ParseCtx) -> Result<Pattern, InputError> {
    Ok(match name {
        "trace" => Pattern::Trace(trace::parse(f, ctx)?),
        "steady" => Pattern::Steady(steady::parse(f, ctx)?),
        "poisson" => Pattern::Poisson(poisson::parse(f, ctx)?),
        "boundary" => Pattern::Boundary(boundary::parse(f, ctx)?),
        "bursty" => Pattern::Bursty(bursty::parse(f, ctx)?),
        "nat" => Pattern::Nat(nat::parse(f, ctx)?),
        "zipf" => Pattern::Zipf(zipf::parse(f, ctx)?),
        "ramp" => Pattern::Ramp(ramp::parse(f, ctx)?),
        "closed" => Pattern::Closed(closed::parse(f, ctx)?),
        _ => unreachable!("pattern names are checked against PATTERNS"),
    })
}

/// A pattern's parameters, for the scenario echo in `summary.json`.
pub fn echo(pattern: &Pattern) -> Value {
    match pattern {
        Pattern::Trace(t) => trace::echo(&**t),
        Pattern::Steady(s) => steady::echo(s),
        Pattern::Poisson(p) => poisson::echo(p),
        Pattern::Boundary(b) => boundary::echo(b),
        Pattern::Bursty(b) => bursty::echo(b),
        Pattern::Nat(n) => nat::echo(n),
        Pattern::Zipf(z) => zipf::echo(z),
        Pattern::Ramp(r) => ramp::echo(r),
        Pattern::Closed(c) => closed::echo(c),
    }
}

/// Names and interns `count` synthetic clients (`{prefix}{i}`); each sends
/// from an address named like itself.
pub(crate) fn synthetic_clients(
    f: &mut Fields,
    ctx: &mut ParseCtx,
    count: u64,
    field: &str,
) -> Result<Clients, InputError> {
    let prefix = f
        .opt_str("prefix")?
        .map(str::to_string)
        .unwrap_or_else(|| ctx.default_prefix.clone());
    if count > MAX_CLIENTS {
        return Err(InputError::new(format!(
            "{}: {count} — at most {MAX_CLIENTS} clients per source",
            f.at(field)
        )));
    }
    // Ids are 32-bit: the clients and addresses of all sources together
    // must fit. (`count` itself does: MAX_CLIENTS is below 2^32.)
    let known = ctx.population.clients().max(ctx.population.ips()) as u64;
    if known + count > u32::MAX as u64 {
        return Err(InputError::new(format!(
            "{}: {count} — a scenario has at most {} clients in all ({known} before this source)",
            f.at(field),
            u32::MAX
        )));
    }
    let clients = ctx.population.numbered_clients(&prefix, count as u32);
    let ips = ctx.population.numbered_ips(&prefix, count as u32);
    Ok(Clients::new(clients, ips))
}

/// Clients one synthetic source may have.
pub(crate) const MAX_CLIENTS: u64 = 10_000_000;

/// `cost` of every request of a synthetic source (default 1).
pub(crate) fn cost_field(f: &mut Fields) -> Result<u64, InputError> {
    Ok(f.opt_count("cost", 1)?.unwrap_or(1))
}
