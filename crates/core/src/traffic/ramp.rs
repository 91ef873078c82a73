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

use super::steady::nth_send;
use super::{Arrival, Clients, Stream, StreamCtx};
use crate::clock::{Nanos, Rate};

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
