//! The `closed` pattern's fields (see [`crate::traffic::closed`]), and its echo.

use serde_json::{json, Value};

use super::{cost_field, synthetic_clients, ParseCtx};
use crate::error::InputError;
use crate::fields::Fields;
use crate::scenario::backend::{service, service_text, SERVICES};
use crate::traffic::closed::Closed;

pub fn parse(f: &mut Fields, ctx: &mut ParseCtx) -> Result<Closed, InputError> {
    let count = f
        .opt_count_max("clients", 1, super::MAX_CLIENTS)?
        .unwrap_or(1);
    let text = f.opt_str("think")?.ok_or_else(|| {
        f.missing(
            "think",
            &format!("the time between an answer and the next request: {SERVICES}"),
        )
    })?;
    let think = service(text)
        .map_err(|what| InputError::new(format!("{}: \"{text}\" — {what}", f.at("think"))))?;
    let timeout = f.opt_duration("timeout", false)?;
    let cost = cost_field(f)?;
    let clients = synthetic_clients(f, ctx, count, "clients")?;
    Ok(Closed {
        think,
        timeout,
        cost,
        clients,
    })
}

pub fn echo(c: &Closed) -> Value {
    json!({
        "pattern": "closed",
        "clients": c.clients.len(),
        "think": service_text(&c.think),
        "timeout": c.timeout.map(|t| t.to_string()),
        "cost": c.cost,
    })
}
