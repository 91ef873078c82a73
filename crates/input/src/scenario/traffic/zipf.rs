//! The `zipf` pattern's fields (see [`crate::traffic::zipf`]), and its echo.

use serde_json::{json, Value};

use super::poisson::opt_poisson_rate;
use super::{cost_field, synthetic_clients, ParseCtx};
use crate::error::InputError;
use crate::fields::Fields;
use crate::traffic::zipf::*;

pub fn parse(f: &mut Fields, ctx: &mut ParseCtx) -> Result<Zipf, InputError> {
    let keys = f
        .opt_count("keys", 1)?
        .ok_or_else(|| f.missing("keys", "how many distinct clients, e.g. 100000"))?;
    let rate = opt_poisson_rate(f, "rate")?
        .ok_or_else(|| f.missing("rate", "the total rate over all keys, e.g. \"10000/1s\""))?;
    let exponent = f.opt_float("exponent", 0.0, 10.0)?.unwrap_or(1.0);
    let cost = cost_field(f)?;
    let clients = synthetic_clients(f, ctx, keys, "keys")?;
    Ok(Zipf {
        rate,
        exponent,
        cost,
        clients,
    })
}

pub fn echo(p: &Zipf) -> Value {
    json!({
        "pattern": "zipf",
        "keys": p.clients.len(),
        "rate": p.rate.to_string(),
        "exponent": p.exponent,
        "cost": p.cost,
    })
}
