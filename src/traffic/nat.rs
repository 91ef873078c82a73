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
use serde_json::json;

use super::poisson::{opt_poisson_rate, PoissonStream};
use super::zipf::ZipfTable;
use super::{client_rng, cost_field, synthetic_clients, ParseCtx, Stream, StreamCtx};
use crate::clock::Rate;
use crate::error::InputError;
use crate::input::fields::Fields;

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

/// The name of address `j` of the shared pool: 100.64.0.0/10, then beyond.
fn address(j: u64) -> String {
    if j < 1 << 22 {
        format!("100.{}.{}.{}", 64 + (j >> 16), (j >> 8) & 255, j & 255)
    } else {
        format!("nat-address-{j}")
    }
}

impl Nat {
    pub fn parse(f: &mut Fields, ctx: &mut ParseCtx) -> Result<Self, InputError> {
        let users = f
            .opt_count("users", 1)?
            .ok_or_else(|| f.missing("users", "how many users, e.g. 1000"))?;
        let ips = f
            .opt_count("ips", 1)?
            .ok_or_else(|| f.missing("ips", "how many shared addresses, e.g. 20"))?;
        if ips > super::MAX_CLIENTS {
            return Err(InputError::new(format!(
                "{}: {ips} — at most {} addresses",
                f.at("ips"),
                super::MAX_CLIENTS
            )));
        }
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

    pub fn echo(&self) -> serde_json::Value {
        json!({
            "pattern": "nat",
            "users": self.users.len(),
            "ips": self.ips.len(),
            "rate": self.rate.to_string(),
            "heavy_share": crate::clock::decimal(self.heavy_share.0, self.heavy_share.1),
            "heavy_rate": self.heavy_rate.map(|r| r.to_string()),
            "distribution": if self.skew.is_some() { "zipf" } else { "uniform" },
            "exponent": self.skew,
            "cost": self.cost,
        })
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
