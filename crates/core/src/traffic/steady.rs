//! Steady: `clients` clients, each sending at exactly `rate`.
//!
//! Client `i` sends at `phase_i + k / rate` for k = 0, 1, 2, … (rounded up to
//! whole ns, with no drift: the k-th send is computed from k, not from the
//! previous send). `phase` is a duration (every client the same), `"spread"`
//! (client i at `i / (clients · rate)`, so the sources together are evenly
//! spaced — the default), or `"random"` (uniform in one interval, seeded).
//! A client sends at most one request per ns, the clock's resolution:
//! `rate` is at most `"1/1ns"`.
//!
//! Use it as the baseline: under steady load below the limit every algorithm
//! should admit everything, and just above it they differ only in how they
//! spread the rejections.

use rand::Rng;

use super::{client_rng, Arrival, Clients, Stream, StreamCtx};
use crate::clock::{Nanos, Rate};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Fixed(Nanos),
    Spread,
    Random,
}

#[derive(Debug, Clone)]
pub struct Steady {
    pub rate: Rate,
    pub phase: Phase,
    pub cost: u64,
    /// `(client, ip)` ids of each client.
    pub clients: Clients,
}

impl Steady {
    pub fn streams(&self, source: usize, ctx: StreamCtx) -> Vec<Box<dyn Stream>> {
        let n = self.clients.len() as u128;
        let (tokens, per) = (self.rate.tokens(), self.rate.per_ns());
        self.clients
            .iter()
            .enumerate()
            .map(|(i, (client, ip))| {
                // The phase as a fraction `offset / (parts · tokens)` ns.
                let (offset, parts) = match self.phase {
                    Phase::Fixed(p) => (p.0 as u128 * tokens, 1),
                    // i/(n·rate) = i·per/(n·tokens) ns.
                    Phase::Spread => (i as u128 * per, n),
                    Phase::Random => {
                        let mut rng = client_rng(ctx.seed, source, i as u64);
                        (rng.random_range(0..per), 1)
                    }
                };
                Box::new(SteadyStream {
                    offset,
                    parts,
                    tokens,
                    per,
                    k: 0,
                    end: ctx.end,
                    client,
                    ip,
                    cost: self.cost,
                }) as Box<dyn Stream>
            })
            .collect()
    }
}

struct SteadyStream {
    /// The phase is `offset / (parts · tokens)` ns, exactly.
    offset: u128,
    parts: u128,
    tokens: u128,
    per: u128,
    k: u128,
    end: Nanos,
    client: u32,
    ip: u32,
    cost: u64,
}

/// The k-th send of a client sending steadily at `tokens / per` (per ns)
/// from a phase of `offset / (parts · tokens)` ns: `phase + k / rate`, as
/// `(offset + parts·k·per) / (parts·tokens)` rounded up to whole ns. Computed
/// from k, never from the previous send, so there is no drift.
pub(crate) fn nth_send(offset: u128, parts: u128, k: u128, tokens: u128, per: u128) -> u128 {
    (offset + parts * k * per).div_ceil(parts * tokens)
}

impl Stream for SteadyStream {
    fn next(&mut self) -> anyhow::Result<Option<Arrival>> {
        let t = nth_send(self.offset, self.parts, self.k, self.tokens, self.per);
        if t >= self.end.0 as u128 {
            return Ok(None);
        }
        self.k += 1;
        Ok(Some(Arrival {
            time: Nanos(t as u64),
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

    fn times(s: &Steady, end_ms: u64) -> Vec<Vec<u64>> {
        let ctx = StreamCtx {
            seed: 1,
            end: Nanos::from_millis(end_ms),
        };
        s.streams(0, ctx)
            .into_iter()
            .map(|mut st| {
                let mut v = Vec::new();
                while let Some(a) = st.next().unwrap() {
                    v.push(a.time.0);
                }
                v
            })
            .collect()
    }

    // Robustness issue, defect 7: sub-nanosecond steady rates (`"7/3ns"`)
    // were accepted and sent several requests per ns; now the largest rate
    // is one request per ns, the clock's resolution.

    #[test]
    fn three_per_second_lands_on_exact_thirds_without_drift() {
        let s = Steady {
            rate: parse_rate("3/1s").unwrap(),
            phase: Phase::Fixed(Nanos(0)),
            cost: 1,
            clients: vec![(0, 0)].into(),
        };
        let t = &times(&s, 100_000_000)[0];
        assert_eq!(t.len(), 300_000);
        assert_eq!(&t[..4], &[0, 333_333_334, 666_666_667, 1_000_000_000]);
        assert_eq!(t[299_999], 99_999_666_666_667);
    }

    #[test]
    fn spread_phases_interleave_clients_evenly() {
        let s = Steady {
            rate: parse_rate("1/1s").unwrap(),
            phase: Phase::Spread,
            cost: 1,
            clients: vec![(0, 0), (1, 1), (2, 2), (3, 3)].into(),
        };
        let t = times(&s, 1000);
        let firsts: Vec<u64> = t.iter().map(|v| v[0]).collect();
        assert_eq!(firsts, [0, 250_000_000, 500_000_000, 750_000_000]);
        // Thirds of a second round up, as every computed time does.
        let three = Steady {
            clients: vec![(0, 0), (1, 1), (2, 2)].into(),
            ..s
        };
        let firsts: Vec<u64> = times(&three, 1000).iter().map(|v| v[0]).collect();
        assert_eq!(firsts, [0, 333_333_334, 666_666_667]);
    }

    #[test]
    fn random_phases_are_seeded_and_within_one_interval() {
        let s = Steady {
            rate: parse_rate("10/1s").unwrap(),
            phase: Phase::Random,
            cost: 1,
            clients: (0..50).map(|i| (i, i)).collect::<Vec<_>>().into(),
        };
        let a = times(&s, 1000);
        assert_eq!(a, times(&s, 1000));
        assert!(a.iter().all(|v| v[0] < 100_000_000 && v.len() == 10));
        assert!(a.iter().any(|v| v[0] != a[0][0]));
    }
}
