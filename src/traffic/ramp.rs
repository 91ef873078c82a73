//! Ramp: a rate that climbs (or falls) over the run, for finding where each
//! algorithm starts to reject.
//!
//! The run is cut into `steps` equal parts (default 20, at least 2: one
//! step would be `steady` at `from`); in part j each of
//! the `clients` clients sends steadily at
//! `from + (to − from) · j / (steps − 1)`, exactly (the step rates are
//! rationals too), with clients spread evenly over each interval. With many
//! steps it is a linear ramp; with few, a staircase. `from` and `to` are at
//! most `"1/1ns"`, as for `steady`. Read `timeseries.csv`:
//! the bucket where `rejected` first rises is where the limit bites.

use serde_json::json;

use super::steady::{nth_send, opt_steady_rate};
use super::{cost_field, synthetic_clients, Arrival, Clients, ParseCtx, Stream, StreamCtx};
use crate::clock::{Nanos, Rate};
use crate::error::InputError;
use crate::input::fields::Fields;

#[derive(Debug, Clone)]
pub struct Ramp {
    pub from: Rate,
    pub to: Rate,
    /// The rate of each step.
    pub steps: Vec<Rate>,
    pub cost: u64,
    pub clients: Clients,
}

/// Steps a ramp may have.
pub const MAX_STEPS: u64 = 10_000;

impl Ramp {
    pub fn parse(f: &mut Fields, ctx: &mut ParseCtx) -> Result<Self, InputError> {
        let count = f.opt_count("clients", 1)?.unwrap_or(1);
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
                .map(crate::input::fields::show)
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

    pub fn streams(&self, _source: usize, ctx: StreamCtx) -> Vec<Box<dyn Stream>> {
        let n = self.clients.len() as u128;
        self.clients
            .iter()
            .enumerate()
            .map(|(i, (client, ip))| {
                Box::new(RampStream {
                    steps: self.steps.clone(),
                    step: 0,
                    k: 0,
                    share: (i as u128, n),
                    end: ctx.end,
                    client,
                    ip,
                    cost: self.cost,
                }) as Box<dyn Stream>
            })
            .collect()
    }

    pub fn echo(&self) -> serde_json::Value {
        json!({
            "pattern": "ramp",
            "clients": self.clients.len(),
            "from": self.from.to_string(),
            "to": self.to.to_string(),
            "steps": self.steps.len(),
            "cost": self.cost,
        })
    }
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

struct RampStream {
    steps: Vec<Rate>,
    step: usize,
    /// Requests sent in the current step.
    k: u128,
    /// This client's place among the clients: `(i, n)`.
    share: (u128, u128),
    end: Nanos,
    client: u32,
    ip: u32,
    cost: u64,
}

impl RampStream {
    fn bounds(&self, step: usize) -> (u128, u128) {
        let (s, e) = (self.steps.len() as u128, self.end.0 as u128);
        // Step boundaries j·end/steps, rounded up like every computed time.
        (
            (e * step as u128).div_ceil(s),
            (e * (step as u128 + 1)).div_ceil(s),
        )
    }
}

impl Stream for RampStream {
    fn next(&mut self) -> anyhow::Result<Option<Arrival>> {
        while self.step < self.steps.len() {
            let (start, stop) = self.bounds(self.step);
            let r = self.steps[self.step];
            let (i, n) = self.share;
            // Client i of n is offset by i/n of an interval within the step.
            let t = start + nth_send(i * r.per_ns(), n, self.k, r.tokens(), r.per_ns());
            if t < stop {
                self.k += 1;
                return Ok(Some(Arrival {
                    time: Nanos(t as u64),
                    client: self.client,
                    ip: self.ip,
                    cost: self.cost,
                }));
            }
            self.step += 1;
            self.k = 0;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::parse_rate;

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
