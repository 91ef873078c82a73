//! The `ramp` pattern's fields (see [`crate::traffic::ramp`]), and its echo.

use serde_json::{json, Value};

use super::steady::opt_steady_rate;
use super::{cost_field, synthetic_clients, ParseCtx};
use crate::clock::Rate;
use crate::error::InputError;
use crate::fields::Fields;
use crate::traffic::ramp::*;

pub fn parse(f: &mut Fields, ctx: &mut ParseCtx) -> Result<Ramp, InputError> {
    let count = f
        .opt_count_max("clients", 1, super::MAX_CLIENTS)?
        .unwrap_or(1);
    let from = opt_steady_rate(f, "from")?
        .ok_or_else(|| f.missing("from", "each client's starting rate, e.g. \"1/1s\""))?;
    let to = opt_steady_rate(f, "to")?
        .ok_or_else(|| f.missing("to", "each client's final rate, e.g. \"50/1s\""))?;
    let n = f.opt_count("steps", 1)?.unwrap_or(20);
    if n == 1 {
        // One step would be steady traffic at `from`, with `to` silently
        // ignored: refused rather than given a meaning the file does not say.
        // `from` as written (a string or a number per second).
        let written = f
            .peek("from")
            .map(crate::fields::show)
            .unwrap_or_else(|| format!("\"{from}\""));
        return Err(InputError::new(format!(
            "{}: 1 — a ramp of one step is just steady traffic at `from` and never reaches `to`; use pattern = \"steady\" with rate = {written}, or steps of 2 or more (default 20)",
            f.at("steps")
        )));
    }
    if n > MAX_STEPS {
        return Err(InputError::new(format!(
            "{}: {n} — at most {MAX_STEPS}",
            f.at("steps")
        )));
    }
    let steps = (0..n)
        .map(|j| step_rate(from, to, j, n))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| {
            InputError::new(format!(
                "{}: the step rates between {from} and {to} cannot be held exactly; use rounder rates",
                f.path()
            ))
        })?;
    let cost = cost_field(f)?;
    let clients = synthetic_clients(f, ctx, count, "clients")?;
    Ok(Ramp {
        from,
        to,
        steps,
        cost,
        clients,
    })
}

pub fn echo(p: &Ramp) -> Value {
    json!({
        "pattern": "ramp",
        "clients": p.clients.len(),
        "from": p.from.to_string(),
        "to": p.to.to_string(),
        "steps": p.steps.len(),
        "cost": p.cost,
    })
}

/// `from + (to − from) · j / (n − 1)` exactly (`from` when `n` is 1), or
/// `None` if out of range.
fn step_rate(from: Rate, to: Rate, j: u64, n: u64) -> Option<Rate> {
    if n == 1 {
        return Some(from);
    }
    let (a, b, c, d) = (from.tokens(), from.per_ns(), to.tokens(), to.per_ns());
    let (j, m) = (j as u128, (n - 1) as u128);
    // (a/b)(m − j)/m + (c/d)·j/m = (a·d·(m − j) + c·b·j) / (b·d·m)
    let num = a
        .checked_mul(d)?
        .checked_mul(m - j)?
        .checked_add(c.checked_mul(b)?.checked_mul(j)?)?;
    let den = b.checked_mul(d)?.checked_mul(m)?;
    Rate::new(num, den)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{parse_rate, Nanos};
    use crate::traffic::StreamCtx;

    #[test]
    fn step_rates_interpolate_exactly() {
        let (from, to) = (parse_rate("1/1s").unwrap(), parse_rate("4/1s").unwrap());
        let r: Vec<String> = (0..4)
            .map(|j| step_rate(from, to, j, 4).unwrap().to_string())
            .collect();
        assert_eq!(r, ["1/1s", "1/500ms", "3/1s", "1/250ms"]);
        let third = step_rate(from, parse_rate("2/1s").unwrap(), 1, 4).unwrap();
        assert_eq!((third.tokens(), third.per_ns()), (1, 750_000_000));
    }

    #[test]
    fn each_step_sends_at_its_own_rate() {
        let ramp = Ramp {
            from: parse_rate("1/1s").unwrap(),
            to: parse_rate("4/1s").unwrap(),
            steps: (0..4)
                .map(|j| {
                    step_rate(
                        parse_rate("1/1s").unwrap(),
                        parse_rate("4/1s").unwrap(),
                        j,
                        4,
                    )
                    .unwrap()
                })
                .collect(),
            cost: 1,
            clients: vec![(0, 0)].into(),
        };
        let ctx = StreamCtx {
            seed: 0,
            end: Nanos::from_secs(40),
        };
        let mut s = ramp.streams(0, ctx).pop().unwrap();
        let mut per_step = [0u32; 4];
        while let Some(a) = s.next().unwrap() {
            per_step[(a.time.0 / 10_000_000_000) as usize] += 1;
        }
        assert_eq!(per_step, [10, 20, 30, 40]);
    }
}
