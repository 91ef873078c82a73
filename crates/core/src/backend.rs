//! The protected tier: what passes a limiter is served by a backend of
//! `workers` servers and a first-in, first-out waiting room
//! (docs/semantics.md §10).
//!
//! A request enters at the moment it passes (admitted, or delayed and
//! released). A free worker serves it at once; else it waits for the
//! earliest worker to free up, in order of entry; a waiting room that is
//! full drops it (it is answered at once and costs nothing). Its latency
//! is its limiter delay (from its arrival at the gateway to its pass) plus
//! its queue wait plus its service. Entries come in time order, so with
//! first-in, first-out service every request's start is known when it
//! enters: the least of the workers' free times, or its entry if later.
//!
//! Service times are drawn per request from a seeded stream of their own
//! (tag `serv`, keyed by the request's source, client, number and attempt),
//! so the same request takes as long under every limiter, and a backend
//! changes no decision of a limiter that does not read it.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rand::RngCore;
use rand_chacha::ChaCha8Rng;

use crate::clock::{Nanos, MAX_NANOS};
use crate::metrics::DelayHistogram;
pub use crate::scenario::{BackendSpec, Service, Slowdown};

/// Drawing a service time.
pub trait Draw {
    fn draw(&self, rng: &mut ChaCha8Rng) -> Nanos;
}

impl Draw for Service {
    /// A draw from `rng`. Floating point only through the pure-Rust
    /// `libm`, so a draw is the same on every machine.
    fn draw(&self, rng: &mut ChaCha8Rng) -> Nanos {
        let unit = |r: &mut ChaCha8Rng| ((r.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
        let round = |x: f64| Nanos(libm::round(x).clamp(0.0, MAX_NANOS as f64) as u64);
        match *self {
            Service::Const(d) => d,
            Service::Exp(mean) => round(-libm::log(unit(rng)) * mean.0 as f64),
            Service::Uniform(low, high) => {
                let span = (high.0 - low.0) as u128 + 1;
                Nanos(low.0 + ((rng.next_u64() as u128 * span) >> 64) as u64)
            }
            Service::LogNormal(median, sigma) => {
                let (u1, u2) = (unit(rng), unit(rng));
                let z =
                    libm::sqrt(-2.0 * libm::log(u1)) * libm::cos(2.0 * std::f64::consts::PI * u2);
                round(median.0 as f64 * libm::exp(sigma * z))
            }
        }
    }
}

/// `service` as `spec`'s slowdowns leave it for a start at `start`,
/// rounded to the nearest ns (half up).
fn slowed(spec: &BackendSpec, start: u64, service: Nanos) -> Nanos {
    match spec
        .slowdowns
        .iter()
        .find(|s| s.from.0 <= start && start < s.until.0)
    {
        None => service,
        Some(s) => {
            let x = (service.0 as u128 * s.num as u128 * 2 + s.den as u128) / (2 * s.den as u128);
            Nanos(u64::try_from(x).unwrap_or(MAX_NANOS).min(MAX_NANOS))
        }
    }
}

impl BackendStats {
    /// The bucket of time `t`; entries after the planned buckets (a
    /// shaper's late releases) extend the series up to twice its length,
    /// anything later counts in the last.
    fn bucket(&mut self, t: u64) -> &mut BackendBucket {
        let most = 2 * (crate::scenario::MAX_BUCKETS as usize + 1);
        let i = ((t / self.resolution) as usize).min(most - 1);
        if i >= self.series.len() {
            self.series.resize(i + 1, BackendBucket::default());
        }
        &mut self.series[i]
    }
}

impl Backend {
    /// An adaptive limiter's limit (over its instances) after a decision
    /// at `now`.
    pub fn note_limit(&mut self, now: Nanos, limit: u64) {
        self.stats.bucket(now.0).limit = Some(limit);
    }
}

/// What a request met in the backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// Served: its wait in the queue and its service.
    Done { wait: Nanos, service: Nanos },
    /// The waiting room was full.
    Dropped,
}

/// One limiter's backend over a run, and what it measured.
#[derive(Debug, Clone)]
pub struct Backend {
    spec: BackendSpec,
    end: u64,
    /// Each worker's free time.
    free: BinaryHeap<Reverse<u64>>,
    /// Start times of the requests waiting, earliest first.
    waiting: VecDeque<u64>,
    /// Response times of the requests in the backend (waiting or served).
    inside: BinaryHeap<Reverse<u64>>,
    pub stats: BackendStats,
}

/// What a backend measured over a run.
#[derive(Debug, Clone, Default)]
pub struct BackendStats {
    pub workers: u32,
    /// The run's length (ns).
    pub span: u64,
    /// Worker-ns spent serving within the run.
    pub busy: u128,
    /// From a request's arrival at the gateway to its response, for every
    /// request served.
    pub latency: DelayHistogram,
    /// Time in the waiting room, for every request served (0: none).
    pub wait: DelayHistogram,
    pub served: u64,
    pub dropped: u64,
    /// The most requests in the backend at once (waiting or served).
    pub in_flight_peak: u64,
    /// Responses within the run whose client still waited for them.
    pub good: u64,
    /// Clients that gave up before their response, and the service time
    /// spent on their requests (ns).
    pub timeouts: u64,
    pub wasted: u128,
    /// Per time-series bucket (of the run's resolution), by the moment
    /// requests entered.
    pub series: Vec<BackendBucket>,
    pub resolution: u64,
}

/// What the backend did with the requests that entered in one bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BackendBucket {
    pub served: u64,
    pub dropped: u64,
    /// Σ and most of the latencies of those served (ns).
    pub latency_sum: u128,
    pub latency_max: u64,
    /// The most requests inside right after an entry.
    pub in_flight_max: u64,
    /// An adaptive limiter's limit after its last decision in the bucket
    /// (summed over its instances).
    pub limit: Option<u64>,
}

impl Backend {
    /// An idle backend for a run of `duration`, its series in buckets of
    /// `resolution`.
    pub fn new(spec: &BackendSpec, duration: Nanos, resolution: Nanos) -> Backend {
        Backend {
            free: (0..spec.workers).map(|_| Reverse(0)).collect(),
            waiting: VecDeque::new(),
            inside: BinaryHeap::new(),
            stats: BackendStats {
                workers: spec.workers,
                span: duration.0,
                resolution: resolution.0.max(1),
                series: vec![
                    BackendBucket::default();
                    crate::scenario::planned_buckets(resolution, duration)
                        .min(crate::scenario::MAX_BUCKETS + 1) as usize
                ],
                ..BackendStats::default()
            },
            end: duration.0,
            spec: spec.clone(),
        }
    }

    /// Requests in the waiting room at `now` (entries come in time order).
    pub fn waiting_at(&mut self, now: Nanos) -> u64 {
        while self.waiting.front().is_some_and(|&s| s <= now.0) {
            self.waiting.pop_front();
        }
        self.waiting.len() as u64
    }

    /// A request that arrived at the gateway at `arrived` passes at `now`
    /// (entries in time order); its service drawn from `rng` if it is
    /// served; `timeout`: how long its client waits for the response.
    pub fn enter(
        &mut self,
        now: Nanos,
        arrived: Nanos,
        timeout: Option<Nanos>,
        rng: impl FnOnce() -> ChaCha8Rng,
    ) -> Served {
        let t = now.0;
        while self.inside.peek().is_some_and(|&Reverse(r)| r <= t) {
            self.inside.pop();
        }
        let Reverse(earliest) = *self.free.peek().expect("a backend has a worker");
        let start = earliest.max(t);
        if start > t {
            let waiting = self.waiting_at(now);
            if self.spec.queue.is_some_and(|q| waiting >= q) {
                self.stats.dropped += 1;
                self.stats.bucket(t).dropped += 1;
                return Served::Dropped;
            }
            self.waiting.push_back(start);
        }
        let service = slowed(&self.spec, start, self.spec.service.draw(&mut rng()));
        let done = start.saturating_add(service.0).min(MAX_NANOS);
        self.free.pop();
        self.free.push(Reverse(done));
        self.inside.push(Reverse(done));
        let s = &mut self.stats;
        s.in_flight_peak = s.in_flight_peak.max(self.inside.len() as u64);
        s.busy += (done.min(self.end) - start.min(self.end)) as u128;
        s.served += 1;
        let (wait, latency) = (start - t, done - arrived.0.min(done));
        s.wait.record(wait);
        s.latency.record(latency);
        let inside = self.inside.len() as u64;
        let b = s.bucket(t);
        b.served += 1;
        b.latency_sum += latency as u128;
        b.latency_max = b.latency_max.max(latency);
        b.in_flight_max = b.in_flight_max.max(inside);
        match timeout {
            Some(limit) if latency > limit.0 => {
                s.timeouts += 1;
                s.wasted += service.0 as u128;
            }
            _ if done <= self.end => s.good += 1,
            _ => {}
        }
        Served::Done {
            wait: Nanos(wait),
            service,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    const MS: u64 = 1_000_000;

    fn spec(workers: u32, service: Service, queue: Option<u64>) -> BackendSpec {
        BackendSpec {
            workers,
            service,
            queue,
            slowdowns: Vec::new(),
        }
    }

    impl Backend {
        /// A backend whose series has one bucket per second.
        fn new_for_test(spec: &BackendSpec, duration: Nanos) -> Backend {
            let resolution = Nanos((duration.0 / crate::scenario::MAX_BUCKETS).max(1_000_000_000));
            Backend::new(spec, duration, resolution)
        }
    }

    /// A service stream (constant services draw nothing from it).
    fn rng() -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(0)
    }

    #[test]
    fn one_worker_serves_in_order_and_a_full_room_drops() {
        let mut b = Backend::new_for_test(
            &spec(1, Service::Const(Nanos(10 * MS)), Some(1)),
            Nanos(100 * MS),
        );
        let at = |ms: u64| Nanos(ms * MS);
        assert_eq!(
            b.enter(at(0), at(0), None, rng),
            Served::Done {
                wait: Nanos(0),
                service: at(10)
            }
        );
        // Busy until 10: waits 8.
        assert_eq!(
            b.enter(at(2), at(2), None, rng),
            Served::Done {
                wait: at(8),
                service: at(10)
            }
        );
        // The room holds one (waiting until 10): dropped.
        assert_eq!(b.enter(at(3), at(3), None, rng), Served::Dropped);
        // At 10 the waiting one starts: the room is free again; this one
        // starts when it ends, at 20.
        assert_eq!(
            b.enter(at(10), at(10), None, rng),
            Served::Done {
                wait: at(10),
                service: at(10)
            }
        );
        let s = &b.stats;
        assert_eq!((s.served, s.dropped, s.in_flight_peak), (3, 1, 2));
        assert_eq!(s.busy, 30 * MS as u128);
        assert_eq!(s.latency.max(), Some(at(20)));
    }

    #[test]
    fn a_slowdown_stretches_the_services_that_start_in_it() {
        let mut s = spec(1, Service::Const(Nanos(10 * MS)), None);
        s.slowdowns.push(Slowdown {
            from: Nanos(5 * MS),
            until: Nanos(15 * MS),
            num: 3,
            den: 1,
        });
        let mut b = Backend::new_for_test(&s, Nanos(1000 * MS));
        let at = |ms: u64| Nanos(ms * MS);
        // Starts at 0: not slowed; the next starts at 10: slowed to 30.
        assert_eq!(
            b.enter(at(0), at(0), None, rng),
            Served::Done {
                wait: at(0),
                service: at(10)
            }
        );
        assert_eq!(
            b.enter(at(1), at(1), None, rng),
            Served::Done {
                wait: at(9),
                service: at(30)
            }
        );
        assert_eq!(
            b.enter(at(50), at(50), None, rng),
            Served::Done {
                wait: at(0),
                service: at(10)
            }
        );
    }

    #[test]
    fn latency_counts_from_the_arrival_and_late_responses_are_timeouts() {
        let mut b = Backend::new_for_test(
            &spec(1, Service::Const(Nanos(10 * MS)), None),
            Nanos(1000 * MS),
        );
        let at = |ms: u64| Nanos(ms * MS);
        // Arrived at 0, passed (after a limiter delay) at 5: latency 15.
        b.enter(at(5), at(0), Some(at(12)), rng);
        b.enter(at(5), at(5), Some(at(100)), rng);
        let s = &b.stats;
        assert_eq!(s.latency.max(), Some(at(20)));
        assert_eq!((s.timeouts, s.good), (1, 1));
        assert_eq!(s.wasted, 10 * MS as u128);
    }

    /// Poisson arrivals at `rate` per second for `n` requests through a
    /// backend of `workers` exp(`mean_ms`) servers.
    fn poisson(rate: f64, workers: u32, mean_ms: u64, n: u64) -> BackendStats {
        let mut arrivals = ChaCha8Rng::seed_from_u64(7);
        let mut b = Backend::new_for_test(
            &spec(workers, Service::Exp(Nanos(mean_ms * MS)), None),
            Nanos(u64::MAX / 4),
        );
        let mut t = 0f64;
        for i in 0..n {
            let u = ((arrivals.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
            t += -libm::log(u) / rate * 1e9;
            let now = Nanos(t as u64);
            b.enter(now, now, None, || ChaCha8Rng::seed_from_u64(i));
        }
        b.stats
    }

    fn ms(n: Option<Nanos>) -> f64 {
        n.unwrap().0 as f64 / 1e6
    }

    #[test]
    fn one_exponential_server_answers_as_queueing_theory_says() {
        // M/M/1, λ = 50/s, μ = 100/s: the time in the system is
        // exponential with rate μ − λ = 50/s, so its median is
        // ln 2 / 50 s = 13.86 ms and its 99th percentile ln 100 / 50 s =
        // 92.10 ms; the server is busy λ/μ = 50 % of the time.
        let s = poisson(50.0, 1, 10, 400_000);
        let (p50, p99) = (ms(s.latency.percentile(500)), ms(s.latency.percentile(990)));
        assert!((p50 / 13.863 - 1.0).abs() < 0.03, "p50 {p50}");
        assert!((p99 / 92.103 - 1.0).abs() < 0.04, "p99 {p99}");
    }

    #[test]
    fn four_exponential_servers_make_as_many_wait_as_erlang_c_says() {
        // M/M/4, λ = 300/s, μ = 100/s per server: offered load a = 3,
        // ρ = 3/4. Erlang C: P(wait) = (a^c/c!)·(1/(1−ρ)) / (Σ_{k<c} a^k/k!
        // + (a^c/c!)·(1/(1−ρ))) = 13.5 / (13 + 13.5) = 0.5094; the mean
        // wait is P(wait) / (cμ − λ) = 5.094 ms.
        let s = poisson(300.0, 4, 10, 400_000);
        let waited = 1.0 - s.wait.zeros() as f64 / s.served as f64;
        assert!((waited / 0.5094 - 1.0).abs() < 0.03, "P(wait) {waited}");
        // Given a wait, it is exponential with rate cμ − λ = 100/s: its
        // median is ln 2 / 100 s, so the unconditional wait's percentile
        // q is ln(P(wait) / (1 − q)) / 100 s: p99 = 39.3 ms.
        let p99 = ms(s.wait.percentile(990));
        assert!((p99 / 39.30 - 1.0).abs() < 0.04, "wait p99 {p99}");
    }

    #[test]
    fn the_same_request_takes_as_long_whatever_else_the_backend_serves() {
        let draw = |i| Service::Exp(Nanos(20 * MS)).draw(&mut ChaCha8Rng::seed_from_u64(i));
        assert_eq!(draw(3), draw(3));
        assert_ne!(draw(3), draw(4));
    }
}
