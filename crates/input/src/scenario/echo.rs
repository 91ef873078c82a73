//! The validated scenario echoed back as JSON, for `summary.json`, the
//! terminal and `explain`: kept out of the algorithms, traffic patterns
//! and deployments, which know nothing of any output format.

use serde_json::{json, Value};

use crate::clock::Nanos;
use crate::deploy::{Deployment, Latency, OnFailure, Scope};
use crate::limiter::Algorithm;
use crate::scenario::traffic;
use crate::scenario::Scenario;

/// The parameters an algorithm was resolved to.
pub trait Params {
    /// The resolved parameters, for `summary.json` and the terminal. A
    /// variant knob of docs/semantics.md §5 appears only when it is not the
    /// default, so a textbook limiter reads as it always did.
    fn params(&self) -> Value;
}

impl Params for Algorithm {
    fn params(&self) -> Value {
        let window_params = |limit: u64, window: Nanos, count_rejected: bool| {
            json!({
                "limit": limit, "window": window.to_string(), "count_rejected": count_rejected,
            })
        };
        let mut v = match *self {
            Algorithm::TokenBucket(c) => {
                json!({ "capacity": c.capacity, "rate": c.rate.to_string() })
            }
            Algorithm::IntervalBucket(c) => json!({
                "max_tokens": c.max_tokens,
                "tokens_per_fill": c.tokens_per_fill,
                "fill_interval": c.fill_interval.to_string(),
            }),
            Algorithm::Gcra(c) => json!({ "burst": c.burst, "rate": c.rate.to_string() }),
            Algorithm::LeakyBucket(c) => json!({
                "rate": c.rate.to_string(), "queue": c.queue, "delay": c.delay,
            }),
            Algorithm::FixedWindow(c) => window_params(c.limit, c.window, c.count_rejected),
            Algorithm::SlidingLog(c) => window_params(c.limit, c.window, c.count_rejected),
            Algorithm::SlidingCounter(c) => window_params(c.limit, c.window, c.count_rejected),
            Algorithm::SmoothBursty(c) => json!({
                "rate": c.rate.to_string(), "capacity": c.capacity, "start": c.start.as_str(),
            }),
            Algorithm::Quota(c) => json!({
                "limit": c.limit, "period": c.period.as_str(), "epoch": c.epoch.to_string(),
            }),
            Algorithm::Concurrency { max_in_flight } => json!({ "max_in_flight": max_in_flight }),
            Algorithm::QueueLength { max_queue } => json!({ "max_queue": max_queue }),
            Algorithm::Adaptive(a) => adaptive_params(&a),
        };
        let knob = match *self {
            Algorithm::FixedWindow(c) if c.align != Default::default() => {
                Some(("align", c.align.as_str()))
            }
            Algorithm::SlidingLog(c) if c.boundary != Default::default() => {
                Some(("boundary", c.boundary.as_str()))
            }
            Algorithm::SlidingCounter(c) if c.weight != Default::default() => {
                Some(("weight", c.weight.as_str()))
            }
            Algorithm::LeakyBucket(c) if c.arithmetic != Default::default() => {
                Some(("arithmetic", c.arithmetic.as_str()))
            }
            _ => None,
        };
        if let Some((field, value)) = knob {
            v[field] = json!(value);
        }
        v
    }
}

/// An adaptive limit's parameters, by the real code's names.
fn adaptive_params(a: &crate::limiter::feedback::Adaptive) -> Value {
    use crate::limiter::feedback::Adaptive;
    match *a {
        Adaptive::Aimd(c) => json!({
            "min_limit": c.min_limit, "initial_limit": c.initial_limit, "max_limit": c.max_limit,
            "backoff_ratio": c.backoff_ratio, "timeout": c.timeout.to_string(),
        }),
        Adaptive::Gradient2(c) => json!({
            "initial_limit": c.initial_limit, "min_limit": c.min_limit,
            "max_concurrency": c.max_concurrency, "smoothing": c.smoothing,
            "long_window": c.long_window, "rtt_tolerance": c.rtt_tolerance,
        }),
        Adaptive::Vegas(c) => json!({
            "initial_limit": c.initial_limit, "max_concurrency": c.max_concurrency,
            "smoothing": c.smoothing, "probe_multiplier": c.probe_multiplier,
        }),
        Adaptive::EnvoyGradient(c) => json!({
            "interval": c.interval.to_string(), "request_count": c.request_count,
            "jitter": c.jitter, "min_concurrency": c.min_concurrency, "buffer": c.buffer,
            "concurrency_update_interval": c.concurrency_update_interval.to_string(),
            "max_concurrency_limit": c.max_concurrency_limit,
            "sample_aggregate_percentile": c.sample_aggregate_percentile,
        }),
    }
}

/// A validated part of a scenario, as `summary.json` echoes it.
pub trait Echo {
    fn echo(&self) -> Value;
}

impl Echo for Deployment {
    fn echo(&self) -> Value {
        let mut v = json!({
            "instances": self.instances,
            "routing": super::deployment::routing_name(self.routing),
        });
        match self.scope {
            Scope::Local { share } => {
                v["scope"] = json!("local");
                v["share"] = json!(share);
                if let Some(a) = &self.shared {
                    v["instance_params"] = a.params();
                }
            }
            Scope::Global { atomic } => {
                v["scope"] = json!("global");
                v["atomic"] = json!(atomic);
                v["store_latency"] = match self.latency {
                    Latency::Fixed(d) => json!(d.to_string()),
                    Latency::LogNormal { median, p99 } => {
                        json!({ "median": median.to_string(), "p99": p99.to_string() })
                    }
                };
                v["timeout"] = json!(self.timeout.map(|t| t.to_string()));
                v["failure_rate"] = json!(crate::clock::decimal(
                    self.failure_rate.0 as u128,
                    self.failure_rate.1 as u128
                ));
                v["outages"] = self
                    .outages
                    .iter()
                    .map(|(s, e)| json!({ "start": s.to_string(), "end": e.to_string() }))
                    .collect();
                v["on_store_failure"] = json!(match self.on_failure {
                    OnFailure::FailOpen => "fail_open",
                    OnFailure::FailClosed => "fail_closed",
                    OnFailure::LocalFallback => "local_fallback",
                });
                v["fallback"] = match &self.fallback {
                    Some(a) => json!({ "algorithm": a.name(), "params": a.params() }),
                    None => Value::Null,
                };
                v["cache_over_limit"] = json!(self.cache_over_limit);
            }
        }
        v
    }
}

impl Echo for Scenario {
    /// The scenario as validated, for `summary.json`.
    fn echo(&self) -> Value {
        let mut v = json!({
            "name": self.name,
            "description": self.description,
            "seed": self.seed,
            "duration": self.duration.to_string(),
            "duration_ns": self.duration.0,
            "clients": self.population.clients(),
            "ips": self.population.ips(),
            "defaults": {
                "limit": self.defaults.limit,
                "window": self.defaults.window.to_string(),
                "window_ns": self.defaults.window.0,
            },
            "limiters": self.limiters.iter().map(|l| {
                if let Some(c) = &l.chain {
                    let members: Vec<&str> =
                        c.members.iter().map(|&m| self.limiters[m].name.as_str()).collect();
                    return json!({
                        "name": l.name,
                        "algorithm": l.algorithm_name(),
                        "key_by": l.key_by.as_str(),
                        "params": { "mode": c.mode.as_str(), "limiters": members },
                        "traffic": l.traffic.iter().map(|&i| self.traffic[i].name.clone()).collect::<Vec<_>>(),
                    });
                }
                let mut v = json!({
                    "name": l.name,
                    "algorithm": l.algorithm.name(),
                    "key_by": l.key_by.as_str(),
                    "params": l.algorithm.params(),
                    "traffic": l.traffic.iter().map(|&i| self.traffic[i].name.clone()).collect::<Vec<_>>(),
                    "deployment": l.deployment.echo(),
                });
                if let Some(i) = l.implementation {
                    v["implementation"] = json!(i);
                }
                if let Some(c) = l.member_of {
                    v["chain"] = json!(self.limiters[c].name);
                }
                v
            }).collect::<Vec<_>>(),
            "traffic": self.traffic.iter().map(|s| {
                let mut v = traffic::echo(&s.pattern);
                v["name"] = json!(s.name);
                v["retry"] = traffic::retry::echo(&s.retry);
                v
            }).collect::<Vec<_>>(),
            "output": {
                "resolution": self.output.resolution.to_string(),
                "resolution_ns": self.output.resolution.0,
            },
        });
        if let Some(b) = &self.backend {
            v["backend"] = backend_echo(b);
        }
        v
    }
}

/// `[backend]` as validated (docs/semantics.md §10).
fn backend_echo(b: &ratesim_core::backend::BackendSpec) -> Value {
    let service = crate::scenario::backend::service_text(&b.service);
    json!({
        "workers": b.workers,
        "service": service,
        "queue": b.queue,
        "slowdown": b.slowdowns.iter().map(|s| json!({
            "at": s.from.to_string(),
            "for": Nanos(s.until.0 - s.from.0).to_string(),
            "factor": crate::clock::decimal_places(s.num as u128, s.den as u128, 6),
        })).collect::<Vec<_>>(),
    })
}
