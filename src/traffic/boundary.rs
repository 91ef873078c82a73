//! Boundary: bursts that straddle window boundaries — the traffic that makes a
//! fixed window pass twice its limit.
//!
//! At every `every`-th boundary `b = k · window` (k ≥ 1), each client sends
//! `burst` requests at `b − before` and `burst` more at `b + after`. The first
//! burst lands at the end of one window and the second at the start of the
//! next, `before + after` apart: a fixed window counts them in different
//! windows and passes both, while anything that remembers the recent past
//! (sliding log, token bucket, GCRA) holds the pair to its limit.
//!
//! Defaults: `burst` = `[defaults] limit`, `window` = `[defaults] window`,
//! `before = "1ms"`, `after = "0s"`, `every = 1`, one client.

use serde_json::json;

use super::{cost_field, synthetic_clients, Arrival, Clients, ParseCtx, Stream, StreamCtx};
use crate::clock::Nanos;
use crate::error::InputError;
use crate::input::fields::Fields;

#[derive(Debug, Clone)]
pub struct Boundary {
    pub burst: u64,
    pub window: Nanos,
    pub before: Nanos,
    pub after: Nanos,
    pub every: u64,
    pub cost: u64,
    pub clients: Clients,
}

impl Boundary {
    pub fn parse(f: &mut Fields, ctx: &mut ParseCtx) -> Result<Self, InputError> {
        let count = f.opt_count("clients", 1)?.unwrap_or(1);
        let burst = match f.opt_count("burst", 1)? {
            Some(b) => b,
            None => {
                ctx.reads_default_limit = true;
                ctx.defaults.limit
            }
        };
        let window = f
            .opt_duration("window", false)?
            .unwrap_or(ctx.defaults.window);
        let before = f
            .opt_duration("before", false)?
            .unwrap_or(Nanos::from_millis(1).min(window));
        if before > window {
            return Err(InputError::new(format!(
                "{}: \"{before}\" — must be at most the window ({window})",
                f.at("before")
            )));
        }
        let after = f.opt_duration("after", true)?.unwrap_or(Nanos::ZERO);
        if after >= window {
            return Err(InputError::new(format!(
                "{}: \"{after}\" — must be shorter than the window ({window})",
                f.at("after")
            )));
        }
        let every = f.opt_count("every", 1)?.unwrap_or(1);
        // The next boundary's first burst must not come before this one's
        // second: before + after ≤ every · window.
        let spacing = (every as u128) * window.0 as u128;
        if before.0 as u128 + after.0 as u128 > spacing {
            return Err(InputError::new(format!(
                "{}: \"{after}\" — before ({before}) + after must be at most the time between bursted boundaries ({every} × {window}), or the bursts of one boundary would come after the next boundary's",
                f.at("after")
            )));
        }
        let cost = cost_field(f)?;
        let clients = synthetic_clients(f, ctx, count, "clients")?;
        Ok(Boundary {
            burst,
            window,
            before,
            after,
            every,
            cost,
            clients,
        })
    }

    pub fn streams(&self, _source: usize, ctx: StreamCtx) -> Vec<Box<dyn Stream>> {
        self.clients
            .iter()
            .map(|(client, ip)| {
                Box::new(BoundaryStream {
                    spec: self.clone_params(),
                    boundary: self.every,
                    sent: 0,
                    end: ctx.end,
                    client,
                    ip,
                }) as Box<dyn Stream>
            })
            .collect()
    }

    fn clone_params(&self) -> Params {
        Params {
            burst: self.burst,
            window: self.window.0,
            before: self.before.0,
            after: self.after.0,
            every: self.every,
            cost: self.cost,
        }
    }

    pub fn echo(&self) -> serde_json::Value {
        json!({
            "pattern": "boundary",
            "clients": self.clients.len(),
            "burst": self.burst,
            "window": self.window.to_string(),
            "before": self.before.to_string(),
            "after": self.after.to_string(),
            "every": self.every,
            "cost": self.cost,
        })
    }
}

#[derive(Debug, Clone, Copy)]
struct Params {
    burst: u64,
    window: u64,
    before: u64,
    after: u64,
    every: u64,
    cost: u64,
}

struct BoundaryStream {
    spec: Params,
    /// Index k of the current boundary `k · window`.
    boundary: u64,
    /// Requests sent around the current boundary, `0..2·burst`.
    sent: u64,
    end: Nanos,
    client: u32,
    ip: u32,
}

impl Stream for BoundaryStream {
    fn next(&mut self) -> anyhow::Result<Option<Arrival>> {
        let p = self.spec;
        if self.sent == 2 * p.burst {
            self.sent = 0;
            self.boundary += p.every;
        }
        let b = self.boundary.saturating_mul(p.window);
        let t = if self.sent < p.burst {
            b - p.before
        } else {
            b.saturating_add(p.after)
        };
        if t >= self.end.0 {
            return Ok(None);
        }
        self.sent += 1;
        Ok(Some(Arrival {
            time: Nanos(t),
            client: self.client,
            ip: self.ip,
            cost: p.cost,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_that_would_overlap_the_next_boundary_are_refused() {
        // Found by the fuzz suite: before = window with after > 0 sent the
        // next boundary's first burst before this one's second (time went
        // backwards; a debug build panicked).
        let parse = |before: &str, after: &str| {
            let table: toml::Table = format!("before = \"{before}\"\nafter = \"{after}\"")
                .parse()
                .unwrap();
            let mut f = Fields::new("traffic[0]", &table);
            let mut population = crate::input::Population::default();
            let mut ctx = ParseCtx {
                defaults: &crate::input::Defaults {
                    limit: 5,
                    window: Nanos::from_millis(100),
                },
                origin: &crate::input::Origin::File("b.toml".into()),
                population: &mut population,
                index: 0,
                default_prefix: "boundary-".to_string(),
                read_log: None,
                reads_default_limit: false,
            };
            Boundary::parse(&mut f, &mut ctx)
        };
        let err = parse("100ms", "1ns").unwrap_err();
        assert!(
            err.message().contains("traffic[0].after"),
            "{}",
            err.message()
        );
        assert!(parse("100ms", "0s").is_ok());
        assert!(parse("60ms", "40ms").is_ok());
        assert!(parse("60ms", "41ms").is_err());
    }

    #[test]
    fn bursts_straddle_each_boundary() {
        let b = Boundary {
            burst: 2,
            window: Nanos::from_secs(1),
            before: Nanos::from_millis(1),
            after: Nanos::ZERO,
            every: 1,
            cost: 1,
            clients: vec![(0, 0)].into(),
        };
        let ctx = StreamCtx {
            seed: 0,
            end: Nanos::from_millis(2500),
        };
        let mut s = b.streams(0, ctx).pop().unwrap();
        let mut t = Vec::new();
        while let Some(a) = s.next().unwrap() {
            t.push(a.time.0 / 1_000_000);
        }
        assert_eq!(t, [999, 999, 1000, 1000, 1999, 1999, 2000, 2000]);
    }
}
