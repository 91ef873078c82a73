//! The `poisson` pattern's fields (see [`crate::traffic::poisson`]), and its echo.

use serde_json::{json, Value};

use super::{cost_field, synthetic_clients, ParseCtx};
use crate::clock::{decimal, Nanos, Rate};
use crate::error::InputError;
use crate::fields::Fields;
use crate::traffic::poisson::*;

/// `key` as the mean rate of one Poisson generator: refused, naming the
/// value and the largest accepted rate, when its mean gap is below
/// [`MIN_MEAN_GAP_NS`].
pub(crate) fn opt_poisson_rate(f: &mut Fields, key: &str) -> Result<Option<Rate>, InputError> {
    let Some(rate) = f.opt_rate(key)? else {
        return Ok(None);
    };
    // Mean gap = per_ns / tokens ns, compared exactly.
    if rate.per_ns() < MIN_MEAN_GAP_NS * rate.tokens() {
        let value = f.peek(key).expect("the rate was just read");
        return Err(f.error(
            key,
            value,
            format_args!(
                "a mean gap of {}; Poisson gaps are drawn in whole nanoseconds, so the mean gap must be at least {}: the largest accepted rate is {MAX_POISSON_RATE} (1/1us)",
                gap_text(rate.per_ns(), rate.tokens()),
                Nanos(MIN_MEAN_GAP_NS as u64)
            ),
        ));
    }
    Ok(Some(rate))
}

pub fn parse(f: &mut Fields, ctx: &mut ParseCtx) -> Result<Poisson, InputError> {
    let count = f
        .opt_count_max("clients", 1, super::MAX_CLIENTS)?
        .unwrap_or(1);
    let rate = opt_poisson_rate(f, "rate")?
        .ok_or_else(|| f.missing("rate", "each client's mean rate, e.g. \"10/1s\""))?;
    let cost = cost_field(f)?;
    let clients = synthetic_clients(f, ctx, count, "clients")?;
    Ok(Poisson {
        rate,
        cost,
        clients,
    })
}

pub fn echo(p: &Poisson) -> Value {
    json!({
        "pattern": "poisson",
        "clients": p.clients.len(),
        "rate": p.rate.to_string(),
        "cost": p.cost,
    })
}

/// `per / tokens` ns, for messages.
pub(crate) fn gap_text(per: u128, tokens: u128) -> String {
    match decimal(per, tokens).as_str() {
        "0" => "less than 0.000000001ns".to_string(),
        d => format!("{d}ns"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `opt_poisson_rate` on `rate = <value>` in `traffic[0]`.
    fn rate_of(value: &str) -> Result<Rate, String> {
        let table: toml::Table = format!("rate = {value}").parse().unwrap();
        let mut f = Fields::new("traffic[0]", &table);
        opt_poisson_rate(&mut f, "rate")
            .map(Option::unwrap)
            .map_err(|e| e.message().to_string())
    }

    #[test]
    fn rates_with_a_mean_gap_below_one_microsecond_are_refused() {
        for (value, gap) in [
            ("\"10000000000/1s\"", "0.1ns"),
            ("1e11", "0.01ns"),
            ("\"1000001/1s\"", "999.999000001ns"),
            ("\"7/3ns\"", "0.428571429ns"),
            ("\"1000000000000/1ns\"", "less than 0.000000001ns"),
        ] {
            let e = rate_of(value).unwrap_err();
            assert!(e.starts_with("traffic[0].rate: "), "{e}");
            assert!(e.contains(&format!("a mean gap of {gap};")), "{e}");
            assert!(e.contains("the largest accepted rate is 1000000/1s"), "{e}");
        }
        for ok in ["\"1000000/1s\"", "\"1/1us\"", "1000000", "0.001"] {
            assert!(rate_of(ok).is_ok(), "{ok}");
        }
    }
}
