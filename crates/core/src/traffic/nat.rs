//! NAT: many users behind few addresses — a carrier-grade NAT, an office, a
//! mobile network.
//!
//! `users` users are spread over `ips` addresses (named in the CGNAT range
//! 100.64.0.0/10), uniformly or skewed (`distribution = "zipf"` with
//! `exponent`: a few addresses carry most users). Each user sends as a
//! Poisson process at its own `rate`; a `heavy_share` of the users (exactly
//! that share, rounded, drawn at random) send at `heavy_rate` instead (each
//! at most 1,000,000/s, see [`super::poisson`]).
//! Every request carries both its user (`client`) and its address (`ip`), so
//! a limiter keyed by `client` and one keyed by `ip` can be compared on
//! identical traffic: with IP keying, light
//! users who share an address with a heavy one are rejected for their
//! neighbour's traffic — the `collateral` column counts those rejections.

use rand::Rng;

use super::poisson::PoissonStream;
use super::zipf::ZipfTable;
use super::{client_rng, Stream, StreamCtx};
use crate::clock::Rate;

#[derive(Debug, Clone)]
pub struct Nat {
    pub rate: Rate,
    /// `(num, den)`: the share of heavy users.
    pub heavy_share: (u128, u128),
    pub heavy_rate: Option<Rate>,
    /// `None` for a uniform spread, else the Zipf exponent.
    pub skew: Option<f64>,
    pub cost: u64,
    /// Client ids of the users.
    pub users: Vec<u32>,
    /// Ip ids of the addresses.
    pub ips: Vec<u32>,
}

impl Nat {
    pub fn streams(&self, source: usize, ctx: StreamCtx) -> Vec<Box<dyn Stream>> {
        let table = self.skew.map(|s| ZipfTable::new(self.ips.len(), s));
        let heavy = self.heavy_users(source, ctx.seed);
        self.users
            .iter()
            .enumerate()
            .map(|(i, &client)| {
                // The user's own stream decides its address and weight first,
                // then its arrivals.
                let mut rng = client_rng(ctx.seed, source, i as u64);
                let j = match &table {
                    Some(t) => t.sample(&mut rng),
                    None => rng.random_range(0..self.ips.len()),
                };
                let rate = match (heavy[i], self.heavy_rate) {
                    (true, Some(r)) => r,
                    _ => self.rate,
                };
                let ip = self.ips[j];
                Box::new(PoissonStream::new(
                    rng, rate, ctx.end, client, ip, self.cost,
                )) as Box<dyn Stream>
            })
            .collect()
    }

    /// Exactly `round(heavy_share · users)` heavy users, drawn without
    /// replacement from the source's own seeded stream.
    fn heavy_users(&self, source: usize, seed: u64) -> Vec<bool> {
        let n = self.users.len();
        let (num, den) = self.heavy_share;
        let count = ((n as u128 * num * 2 + den) / (den * 2)) as usize;
        let mut order: Vec<usize> = (0..n).collect();
        let mut rng = client_rng(seed, source, u64::MAX);
        let mut heavy = vec![false; n];
        for k in 0..count.min(n) {
            let j = rng.random_range(k..n);
            order.swap(k, j);
            heavy[order[k]] = true;
        }
        heavy
    }
}
