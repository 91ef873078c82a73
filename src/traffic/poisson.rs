//! Poisson: `clients` independent clients, each with exponentially
//! distributed gaps at mean `rate` — memoryless arrivals, the usual model of
//! many independent users.
//!
//! Gaps are drawn by inversion, `gap = −ln(U) / rate`, from each client's own
//! seeded ChaCha8 stream; `ln` comes from the pure-Rust `libm` so the draws
//! are bit-identical on every platform. Times are rounded to whole ns and
//! accumulated as integers.
//!
//! Use it to see how each algorithm treats natural clumping: at a mean rate
//! just under the limit, Poisson traffic still has windows above it.

use rand::Rng;
use serde_json::json;

use super::{client_rng, cost_field, synthetic_clients, Arrival, ParseCtx, Stream, StreamCtx};
use crate::clock::{Nanos, Rate};
use crate::error::InputError;
use crate::scenario::fields::Fields;

#[derive(Debug, Clone)]
pub struct Poisson {
    pub rate: Rate,
    pub cost: u64,
    pub clients: Vec<(u32, u32)>,
}

impl Poisson {
    pub fn parse(f: &mut Fields, ctx: &mut ParseCtx) -> Result<Self, InputError> {
        let count = f.opt_count("clients", 1)?.unwrap_or(1);
        let rate = f
            .opt_rate("rate")?
            .ok_or_else(|| f.missing("rate", "each client's mean rate, e.g. \"10/1s\""))?;
        let cost = cost_field(f)?;
        let clients = synthetic_clients(f, ctx, count, "clients")?;
        Ok(Poisson {
            rate,
            cost,
            clients,
        })
    }

    pub fn streams(&self, source: usize, ctx: StreamCtx) -> Vec<Box<dyn Stream>> {
        self.clients
            .iter()
            .enumerate()
            .map(|(i, &(client, ip))| {
                let rng = client_rng(ctx.seed, source, i as u64);
                Box::new(PoissonStream::new(
                    rng, self.rate, ctx.end, client, ip, self.cost,
                )) as Box<dyn Stream>
            })
            .collect()
    }

    pub fn echo(&self) -> serde_json::Value {
        json!({
            "pattern": "poisson",
            "clients": self.clients.len(),
            "rate": self.rate.to_string(),
            "cost": self.cost,
        })
    }
}

/// An exponential gap with the given mean, in whole ns.
pub fn exponential_gap(rng: &mut impl Rng, mean_ns: f64) -> u64 {
    // U in (0, 1]: 53 random bits, never 0, so ln(U) is finite.
    let u = ((rng.random::<u64>() >> 11) + 1) as f64 / (1u64 << 53) as f64;
    let gap = -libm::log(u) * mean_ns;
    libm::round(gap) as u64
}

/// The times of a Poisson process at `rate`, from 0 until `end`.
pub(crate) struct PoissonClock {
    /// Also the stream's generator for any other draw, after each gap.
    pub(crate) rng: rand_chacha::ChaCha8Rng,
    mean_gap_ns: f64,
    now: u64,
    end: Nanos,
}

impl PoissonClock {
    pub(crate) fn new(rng: rand_chacha::ChaCha8Rng, rate: Rate, end: Nanos) -> Self {
        PoissonClock {
            rng,
            mean_gap_ns: rate.per_ns() as f64 / rate.tokens() as f64,
            now: 0,
            end,
        }
    }

    /// The next arrival time, or `None` once it reaches `end`.
    pub(crate) fn tick(&mut self) -> Option<Nanos> {
        self.now = self
            .now
            .saturating_add(exponential_gap(&mut self.rng, self.mean_gap_ns));
        (self.now < self.end.0).then_some(Nanos(self.now))
    }
}

/// One client's Poisson arrivals at `rate` until `end`.
pub(crate) struct PoissonStream {
    clock: PoissonClock,
    client: u32,
    ip: u32,
    cost: u64,
}

impl PoissonStream {
    pub(crate) fn new(
        rng: rand_chacha::ChaCha8Rng,
        rate: Rate,
        end: Nanos,
        client: u32,
        ip: u32,
        cost: u64,
    ) -> Self {
        PoissonStream {
            clock: PoissonClock::new(rng, rate, end),
            client,
            ip,
            cost,
        }
    }
}

impl Stream for PoissonStream {
    fn next(&mut self) -> anyhow::Result<Option<Arrival>> {
        Ok(self.clock.tick().map(|time| Arrival {
            time,
            client: self.client,
            ip: self.ip,
            cost: self.cost,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::parse_rate;

    #[test]
    fn poisson_arrivals_have_the_mean_rate_and_exponential_gaps() {
        let p = Poisson {
            rate: parse_rate("100/1s").unwrap(),
            cost: 1,
            clients: vec![(0, 0)],
        };
        let ctx = StreamCtx {
            seed: 42,
            end: Nanos::from_secs(1000),
        };
        let mut s = p.streams(0, ctx).pop().unwrap();
        let mut gaps = Vec::new();
        let mut last = 0;
        while let Some(a) = s.next().unwrap() {
            gaps.push((a.time.0 - last) as f64 / 1e6);
            last = a.time.0;
        }
        // 100 000 expected; a Poisson count has sd ≈ 316, so ±1.5% is ~5 sd.
        let n = gaps.len() as f64;
        assert!((n - 100_000.0).abs() < 1_500.0, "{n} arrivals");
        // Exponential: mean = sd = 10ms, and P(gap > mean) = e^-1.
        let mean = gaps.iter().sum::<f64>() / n;
        let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n).sqrt();
        assert!((mean - 10.0).abs() < 0.2, "mean gap {mean}ms");
        assert!((sd - 10.0).abs() < 0.3, "sd {sd}ms");
        let above = gaps.iter().filter(|&&g| g > 10.0).count() as f64 / n;
        assert!(
            (above - (-1.0f64).exp()).abs() < 0.01,
            "P(gap > mean) = {above}"
        );
    }

    #[test]
    fn each_client_has_its_own_reproducible_stream() {
        let p = Poisson {
            rate: parse_rate("10/1s").unwrap(),
            cost: 1,
            clients: vec![(0, 0), (1, 1)],
        };
        let ctx = StreamCtx {
            seed: 7,
            end: Nanos::from_secs(10),
        };
        let first = |ctx| -> Vec<u64> {
            p.streams(0, ctx)
                .iter_mut()
                .map(|s| s.next().unwrap().unwrap().time.0)
                .collect()
        };
        let a = first(ctx);
        assert_eq!(a, first(ctx));
        assert_ne!(a[0], a[1]);
        assert_ne!(a, first(StreamCtx { seed: 8, ..ctx }));
    }
}
