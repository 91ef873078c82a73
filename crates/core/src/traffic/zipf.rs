//! Zipf: many keys with Zipf-distributed popularity — a few heavy hitters
//! and a long tail.
//!
//! One aggregate Poisson stream at `rate` in total (at most 1,000,000/s, see
//! [`super::poisson`]); each request's client is
//! drawn with `P(rank r) ∝ 1 / (r + 1)^exponent` over `keys` clients named
//! `<prefix><rank>` (rank 0 is the most popular). Use it for state-size and
//! high-cardinality studies: the keys column and the state bytes per key tell
//! a sliding log (memory per request) apart from the counters (memory per
//! key), and the tail shows how many keys a limiter holds for almost nothing.

use rand::Rng;

use super::poisson::PoissonClock;
use super::{client_rng, Arrival, Clients, Stream, StreamCtx};
use crate::clock::Rate;

#[derive(Debug, Clone)]
pub struct Zipf {
    pub rate: Rate,
    pub exponent: f64,
    pub cost: u64,
    pub clients: Clients,
}

impl Zipf {
    pub fn streams(&self, source: usize, ctx: StreamCtx) -> Vec<Box<dyn Stream>> {
        vec![Box::new(ZipfStream {
            clock: PoissonClock::new(client_rng(ctx.seed, source, 0), self.rate, ctx.end),
            table: ZipfTable::new(self.clients.len(), self.exponent),
            clients: self.clients.clone(),
            cost: self.cost,
        })]
    }
}

/// Inverse-CDF sampling of a Zipf distribution over `0..n`; weights use the
/// pure-Rust `libm::pow`, so draws are identical on every platform.
#[derive(Debug, Clone)]
pub(crate) struct ZipfTable {
    cdf: Vec<f64>,
}

impl ZipfTable {
    pub fn new(n: usize, exponent: f64) -> Self {
        let mut total = 0.0;
        let cdf = (0..n)
            .map(|r| {
                total += 1.0 / libm::pow((r + 1) as f64, exponent);
                total
            })
            .collect();
        ZipfTable { cdf }
    }

    pub fn sample(&self, rng: &mut impl Rng) -> usize {
        let total = *self.cdf.last().expect("at least one rank");
        let u = rng.random::<f64>() * total;
        self.cdf
            .partition_point(|&c| c <= u)
            .min(self.cdf.len() - 1)
    }
}

struct ZipfStream {
    clock: PoissonClock,
    table: ZipfTable,
    clients: Clients,
    cost: u64,
}

impl Stream for ZipfStream {
    fn next(&mut self) -> anyhow::Result<Option<Arrival>> {
        let Some(time) = self.clock.tick() else {
            return Ok(None);
        };
        let (client, ip) = self.clients.get(self.table.sample(&mut self.clock.rng));
        Ok(Some(Arrival {
            time,
            client,
            ip,
            cost: self.cost,
        }))
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Nanos;

    #[test]
    fn zipf_ranks_are_drawn_in_proportion_to_their_weight() {
        let table = ZipfTable::new(1000, 1.0);
        let mut rng = client_rng(3, 0, 0);
        let mut counts = vec![0u32; 1000];
        let n = 200_000;
        for _ in 0..n {
            counts[table.sample(&mut rng)] += 1;
        }
        // H(1000) ≈ 7.4855: P(rank 0) ≈ 0.1336, P(rank 1) ≈ 0.0668.
        let p0 = counts[0] as f64 / n as f64;
        let p1 = counts[1] as f64 / n as f64;
        assert!((p0 - 0.1336).abs() < 0.003, "{p0}");
        assert!((p1 - 0.0668).abs() < 0.003, "{p1}");
        assert!(counts[999] < counts[0] / 100);
        assert!(
            counts.iter().filter(|&&c| c > 0).count() > 900,
            "a long tail"
        );
    }

    #[test]
    fn zipf_traffic_has_its_total_rate() {
        let z = Zipf {
            rate: crate::clock::parse_rate("1000/1s").unwrap(),
            exponent: 1.0,
            cost: 1,
            clients: (0..100).map(|i| (i, i)).collect::<Vec<_>>().into(),
        };
        let ctx = StreamCtx {
            seed: 1,
            end: Nanos::from_secs(100),
        };
        let mut s = z.streams(0, ctx).pop().unwrap();
        let mut n = 0u32;
        while s.next().unwrap().is_some() {
            n += 1;
        }
        // 100 000 expected, sd ≈ 316: ±1.5% is about 5 sd.
        assert!((98_500..101_500).contains(&n), "{n}");
    }

    #[test]
    fn exponent_zero_is_uniform() {
        let table = ZipfTable::new(4, 0.0);
        let mut rng = client_rng(3, 0, 0);
        let mut counts = [0u32; 4];
        for _ in 0..40_000 {
            counts[table.sample(&mut rng)] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_400..10_600).contains(&c)),
            "{counts:?}"
        );
    }
}
