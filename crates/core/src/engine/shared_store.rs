//! A deployment's protocol around the limiter: which instance an attempt
//! reaches (routing), what a shared store costs (round trips, the write of
//! a read-then-write), what happens when it fails (timeouts, outages,
//! random failures and the instance's failure mode) and the instance's
//! memory of the store's rejections (`cache_over_limit`).
//!
//! A local deployment decides at the instance and never reaches this file
//! past [`Run::route`] and [`Run::local_key`]. A global one sends each attempt to
//! the store: the operation reaches it half a round trip later
//! ([`Event::Store`]), or the instance gives up ([`Event::Failed`]) and
//! decides by its failure mode. Every random choice (a route, a round trip,
//! a failure) is drawn from the attempt's own generator, tagged by what it
//! decides, so it is the same for every limiter that sees the attempt.

use rand::Rng;

use super::{Event, Job, Run};
use crate::clock::Nanos;
use crate::deploy::{fnv1a_name, OnFailure, Routing, Scope};
use crate::limiter::Decision;
use crate::metrics::Call;

/// An instance's memory of a store rejection.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Cached {
    /// When the instance heard it.
    heard: u64,
    /// Rejected locally until then.
    until: u64,
    /// The store said the request can never pass (no retry-after).
    never: bool,
}

impl Run<'_, '_> {
    /// `key` as instance `instance`'s state knows it.
    #[inline(always)]
    pub(super) fn local_key(&mut self, instance: u32, key: u32) -> u32 {
        super::local_key(&mut self.local_ids, instance, key)
    }

    /// The instance `job`'s attempt reaches.
    #[inline(always)]
    pub(super) fn route(&mut self, job: &Job) -> u32 {
        if self.dep.instances == 1 {
            self.routed += 1;
            return 0;
        }
        self.route_among(job)
    }

    /// [`Run::route`] among several instances.
    #[inline(never)]
    fn route_among(&mut self, job: &Job) -> u32 {
        let a = job.arrival;
        let n = self.dep.instances as u64;
        let instance = match self.dep.routing {
            _ if n == 1 => 0,
            Routing::RoundRobin => self.routed % n,
            Routing::Random => self.rng(job, *b"rout")().random_range(0..n),
            Routing::HashClient => fnv1a_name(self.scenario.population.client_name(a.client)) % n,
            Routing::HashIp => fnv1a_name(self.scenario.population.ip_name(a.ip)) % n,
        } as u32;
        self.routed += 1;
        instance
    }

    /// Instance `instance` of a global deployment takes an attempt for
    /// `key`: it rejects it from its cache, or sends it to the store.
    pub(super) fn send_to_store(
        &mut self,
        now: Nanos,
        job: Job,
        key: u32,
        instance: u32,
    ) -> anyhow::Result<()> {
        if self.dep.cache_over_limit {
            let local = self.local_key(instance, key);
            let c = self.cache[instance as usize]
                .get(local as usize)
                .copied()
                .unwrap_or_default();
            if c.heard <= now.0 && now.0 < c.until {
                self.record(Call::CacheRejection);
                let decision = Decision::Rejected {
                    retry_after: (!c.never).then(|| Nanos(c.until - now.0)),
                };
                return self.finish(job, key, now, Nanos::ZERO, decision);
            }
        }
        let rtt = self.dep.round_trip(&mut self.rng(&job, *b"rtt0"));
        let reach = now + Nanos(rtt.0 / 2);
        self.record(Call::StoreOp);
        let failed =
            self.dep.in_outage(reach) || self.dep.random_failure(&mut self.rng(&job, *b"fal0"));
        let timed_out = self.dep.timeout.is_some_and(|t| rtt > t);
        if failed || timed_out {
            let wait = rtt.min(self.dep.timeout.unwrap_or(rtt));
            self.at(now, now + wait, Event::Failed { job, key, instance })?;
        }
        if !failed {
            let late = timed_out;
            let store = Event::Store {
                job,
                key,
                instance,
                rtt,
                late,
            };
            self.at(now, reach, store)?;
        }
        Ok(())
    }

    /// A store operation reaches the store.
    pub(super) fn at_store(
        &mut self,
        now: Nanos,
        job: Job,
        key: u32,
        instance: u32,
        rtt: Nanos,
        late: bool,
    ) -> anyhow::Result<()> {
        let cost = job.arrival.cost;
        let decision = match self.dep.scope {
            Scope::Global { atomic: false } => {
                let (decision, ticket) = self.limiters[0].decide_detached(key, now, cost);
                if self.wants_headers {
                    self.headers = Some(self.limiters[0].detached_headers(key, ticket, now));
                }
                // The instance writes back once the read's answer is in — if
                // it is still waiting for it.
                let write_rtt = self.dep.round_trip(&mut self.rng(&job, *b"rtt1"));
                let reach = job.arrival.time + rtt + Nanos(write_rtt.0 / 2);
                if !late {
                    self.record(Call::StoreOp);
                }
                if late
                    || self.dep.in_outage(reach)
                    || self.dep.random_failure(&mut self.rng(&job, *b"fal1"))
                {
                    self.limiters[0].discard(ticket);
                } else {
                    self.at(now, reach, Event::Write { key, ticket })?;
                }
                decision
            }
            _ => {
                let decision = self.limiters[0].decide(key, now, cost);
                if self.wants_headers {
                    self.headers = Some(self.limiters[0].headers(key, now));
                }
                decision
            }
        };
        if late {
            self.headers = None;
            return Ok(());
        }
        if self.dep.cache_over_limit {
            if let Decision::Rejected { retry_after } = decision {
                // The instance learns of the rejection when the answer is
                // back, and keeps it until the retry-after has passed (to
                // the end of the policy window if the request can never pass).
                let window = self.scenario.defaults.window.0;
                let entry = Cached {
                    heard: (job.arrival.time + rtt).0,
                    until: match retry_after {
                        Some(r) => now.0.saturating_add(r.0),
                        None => (now.0 / window + 1) * window,
                    },
                    never: retry_after.is_none(),
                };
                let local = self.local_key(instance, key) as usize;
                let cache = &mut self.cache[instance as usize];
                if cache.len() <= local {
                    cache.resize(local + 1, Cached::default());
                }
                cache[local] = entry;
            }
        }
        self.finish(job, key, now, rtt, decision)
    }

    /// The instance gives up on the store and decides by its failure mode.
    pub(super) fn failed(
        &mut self,
        now: Nanos,
        job: Job,
        key: u32,
        instance: u32,
    ) -> anyhow::Result<()> {
        let cost = job.arrival.cost;
        let decision = match self.dep.on_failure {
            OnFailure::FailOpen => {
                self.record(Call::FaultOpen);
                Decision::Admitted
            }
            OnFailure::FailClosed => {
                self.record(Call::FaultClosed);
                // Not the limiter's decision: no key of its own
                // would have helped the client.
                let decision = Decision::Rejected { retry_after: None };
                let latency = now - job.arrival.time;
                return self.finish_with(job, key, now, latency, decision, false);
            }
            OnFailure::LocalFallback => {
                self.record(Call::FaultFallback);
                let local = self.local_key(instance, key);
                let fallback = &mut self.fallbacks[instance as usize];
                let decision = fallback.decide(local, now, cost);
                if self.wants_headers {
                    self.headers = Some(fallback.headers(local, now));
                }
                decision
            }
        };
        self.finish(job, key, now, now - job.arrival.time, decision)
    }

    /// A read-then-write's write reaches the store.
    pub(super) fn write(&mut self, now: Nanos, key: u32, ticket: u32) {
        self.limiters[0].write_back(key, ticket, now);
    }
}
