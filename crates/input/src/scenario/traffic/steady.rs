//! The `steady` pattern's fields (see [`crate::traffic::steady`]), and its echo.

use serde_json::{json, Value};

use super::{cost_field, synthetic_clients, ParseCtx};
use crate::clock::Rate;
use crate::error::InputError;
use crate::fields::Fields;
use crate::traffic::steady::*;

/// `key` as the rate of a steady sender: at most one request per ns (the
/// clock's resolution), else refused naming the value and the largest rate.
pub(crate) fn opt_steady_rate(f: &mut Fields, key: &str) -> Result<Option<Rate>, InputError> {
    let Some(rate) = f.opt_rate(key)? else {
        return Ok(None);
    };
    if rate.tokens() > rate.per_ns() {
        let value = f.peek(key).expect("the rate was just read");
        return Err(f.error(
            key,
            value,
            format_args!(
                "one request every {}, finer than the clock's 1ns resolution: the largest accepted rate is 1/1ns (1000000000/1s)",
                super::poisson::gap_text(rate.per_ns(), rate.tokens())
            ),
        ));
    }
    Ok(Some(rate))
}

/// `phase`: a duration, `"spread"` (the default) or `"random"`.
pub(crate) fn parse_phase(f: &mut Fields) -> Result<Phase, InputError> {
    Ok(match f.opt_str("phase")? {
        None | Some("spread") => Phase::Spread,
        Some("random") => Phase::Random,
        Some(_) => Phase::Fixed(f.opt_duration("phase", true)?.expect("phase is present")),
    })
}

pub(crate) fn phase_text(phase: Phase) -> String {
    match phase {
        Phase::Fixed(p) => p.to_string(),
        Phase::Spread => "spread".to_string(),
        Phase::Random => "random".to_string(),
    }
}

pub fn parse(f: &mut Fields, ctx: &mut ParseCtx) -> Result<Steady, InputError> {
    let count = f
        .opt_count_max("clients", 1, super::MAX_CLIENTS)?
        .unwrap_or(1);
    let rate = opt_steady_rate(f, "rate")?
        .ok_or_else(|| f.missing("rate", "each client's rate, e.g. \"10/1s\""))?;
    let phase = parse_phase(f)?;
    let cost = cost_field(f)?;
    let clients = synthetic_clients(f, ctx, count, "clients")?;
    Ok(Steady {
        rate,
        phase,
        cost,
        clients,
    })
}

pub fn echo(p: &Steady) -> Value {
    json!({
        "pattern": "steady",
        "clients": p.clients.len(),
        "rate": p.rate.to_string(),
        "phase": phase_text(p.phase),
        "cost": p.cost,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Nanos;
    use crate::traffic::StreamCtx;

    /// `opt_steady_rate` on `rate = <value>` in `traffic[0]`.
    fn rate_of(value: &str) -> Result<Rate, String> {
        let table: toml::Table = format!("rate = {value}").parse().unwrap();
        let mut f = Fields::new("traffic[0]", &table);
        opt_steady_rate(&mut f, "rate")
            .map(Option::unwrap)
            .map_err(|e| e.message().to_string())
    }

    #[test]
    fn rates_above_one_per_nanosecond_are_refused() {
        let e = rate_of("\"7/3ns\"").unwrap_err();
        assert_eq!(
            e,
            "traffic[0].rate: \"7/3ns\" — one request every 0.428571429ns, finer than the clock's 1ns resolution: the largest accepted rate is 1/1ns (1000000000/1s)"
        );
        assert!(rate_of("1000000001").is_err());
        let s = Steady {
            rate: rate_of("\"1/1ns\"").unwrap(),
            phase: Phase::Fixed(Nanos(0)),
            cost: 1,
            clients: vec![(0, 0)].into(),
        };
        let ctx = StreamCtx {
            seed: 1,
            end: Nanos::from_millis(1),
        };
        let mut st = s.streams(0, ctx).pop().unwrap();
        let t: Vec<u64> = std::iter::from_fn(|| st.next().unwrap().map(|a| a.time.0)).collect();
        assert_eq!(t.len(), 1_000_000);
        assert!(t.iter().enumerate().all(|(i, &x)| x == i as u64));
    }
}
