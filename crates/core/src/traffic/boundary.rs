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

use super::{Arrival, Clients, Stream, StreamCtx};
use crate::clock::Nanos;

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
