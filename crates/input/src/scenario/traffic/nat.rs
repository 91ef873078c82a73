//! The `nat` pattern's fields (see [`crate::traffic::nat`]), and its echo.

use serde_json::{json, Value};

use super::poisson::opt_poisson_rate;
use super::{cost_field, synthetic_clients, ParseCtx};
use crate::error::InputError;
use crate::fields::Fields;
use crate::traffic::nat::*;

pub fn parse(f: &mut Fields, ctx: &mut ParseCtx) -> Result<Nat, InputError> {
    let users = f
        .opt_count("users", 1)?
        .ok_or_else(|| f.missing("users", "how many users, e.g. 1000"))?;
    let ips = f
        .opt_count_max("ips", 1, super::MAX_CLIENTS)?
        .ok_or_else(|| f.missing("ips", "how many shared addresses, e.g. 20"))?;
    let rate = opt_poisson_rate(f, "rate")?
        .ok_or_else(|| f.missing("rate", "each user's mean rate, e.g. \"1/1s\""))?;
    let heavy_share = f.opt_decimal("heavy_share")?.unwrap_or((0, 1));
    if heavy_share.0 > heavy_share.1 {
        return Err(InputError::new(format!(
            "{}: {} — a share from 0 to 1, e.g. 0.01",
            f.at("heavy_share"),
            crate::clock::decimal(heavy_share.0, heavy_share.1)
        )));
    }
    let heavy_rate = opt_poisson_rate(f, "heavy_rate")?;
    if heavy_share.0 > 0 && heavy_rate.is_none() {
        return Err(f.missing("heavy_rate", "the heavy users' rate, e.g. \"50/1s\""));
    }
    let skew = match f.opt_str("distribution")? {
        None | Some("uniform") => None,
        Some("zipf") => Some(f.opt_float("exponent", 0.0, 10.0)?.unwrap_or(1.0)),
        Some(other) => {
            return Err(InputError::new(format!(
                "{}: {other_q} — accepted: \"uniform\", \"zipf\"",
                f.at("distribution"),
                other_q = crate::error::quoted(other)
            )))
        }
    };
    let cost = cost_field(f)?;
    let users = synthetic_clients(f, ctx, users, "users")?
        .iter()
        .map(|(client, _)| client)
        .collect();
    let ips = (0..ips).map(|j| ctx.population.ip(&address(j))).collect();
    Ok(Nat {
        rate,
        heavy_share,
        heavy_rate,
        skew,
        cost,
        users,
        ips,
    })
}

pub fn echo(p: &Nat) -> Value {
    json!({
        "pattern": "nat",
        "users": p.users.len(),
        "ips": p.ips.len(),
        "rate": p.rate.to_string(),
        "heavy_share": crate::clock::decimal(p.heavy_share.0, p.heavy_share.1),
        "heavy_rate": p.heavy_rate.map(|r| r.to_string()),
        "distribution": if p.skew.is_some() { "zipf" } else { "uniform" },
        "exponent": p.skew,
        "cost": p.cost,
    })
}

/// The name of address `j` of the shared pool: 100.64.0.0/10, then beyond.
fn address(j: u64) -> String {
    if j < 1 << 22 {
        format!("100.{}.{}.{}", 64 + (j >> 16), (j >> 8) & 255, j & 255)
    } else {
        format!("nat-address-{j}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_named_in_the_cgnat_range() {
        assert_eq!(address(0), "100.64.0.0");
        assert_eq!(address(257), "100.64.1.1");
        assert_eq!(address((1 << 22) - 1), "100.127.255.255");
    }
}
