//! `ratesim explain gcra` — GCRA is a token bucket in half the state.
//!
//! Runs a small built-in scenario (Poisson users, bursty users and a few
//! expensive requests) through a token bucket and a GCRA limiter with the
//! same burst and rate, re-simulates both recording every decision, and
//! shows that they agree on every attempt — outcome and retry-after — while
//! GCRA keeps 8 bytes per key to the token bucket's 16. Then says why: the
//! bucket's balance is a function of GCRA's one timestamp.

use std::fmt::Write as _;

use anyhow::anyhow;
use rayon::prelude::*;

use super::{wrap, Context, Topic};
use crate::engine::{self, Attempt, DecisionSink};
use crate::limiter::Decision;
use crate::report::charts::style;
use crate::scenario::echo::Params;
use crate::scenario::Load as _;
use crate::scenario::{Origin, Scenario};

pub(crate) const TOPIC: Topic = Topic {
    name: "gcra",
    about: "GCRA makes exactly a token bucket's decisions from one timestamp: half the state",
    scenario,
    text: SCENARIO,
    explain,
};

/// The walkthrough's scenario, shipped in this file.
pub const SCENARIO: &str = r#"
name = "gcra"
description = "A token bucket and GCRA with the same burst and rate, on Poisson users, bursty users and a few expensive requests"
seed = 11
duration = "30s"

[defaults]
limit = 10
window = "1s"

[[limiter]]
algorithm = "token_bucket"
capacity = 20

[[limiter]]
algorithm = "gcra"
burst = 20

[[traffic]]
pattern = "poisson"
clients = 100
rate = "11/1s"

[[traffic]]
pattern = "boundary"
clients = 5
burst = 15
prefix = "bursty-"

[[traffic]]
pattern = "steady"
clients = 10
rate = "3/1s"
cost = 4
prefix = "export-"
"#;

fn scenario() -> Result<Scenario, crate::InputError> {
    Scenario::parse(
        SCENARIO,
        "gcra",
        Origin::File(std::path::PathBuf::from("explain-gcra.toml")),
    )
}

/// Every decision of one limiter, in processing order.
#[derive(Default)]
struct Decisions(Vec<(u64, u32, Decision)>);

impl DecisionSink for Decisions {
    fn record(&mut self, a: &Attempt) -> anyhow::Result<()> {
        self.0.push((a.arrival.time.0, a.key, a.decision));
        Ok(())
    }
}

/// How two limiters' decision sequences compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparison {
    pub attempts: usize,
    pub same: usize,
    pub admitted: usize,
    pub rejected: usize,
    /// The first attempt where they differ: `(time ns, left, right)`.
    pub first_difference: Option<(u64, Decision, Decision)>,
}

/// Re-simulates limiters `a` and `b` of `scenario` and compares their
/// decisions attempt by attempt.
pub fn agreement(scenario: &Scenario, a: usize, b: usize) -> anyhow::Result<Comparison> {
    let runs = [a, b]
        .into_par_iter()
        .map(|i| -> anyhow::Result<Vec<(u64, u32, Decision)>> {
            let mut d = Decisions::default();
            engine::simulate(scenario, i, Some(&mut d), &|_, _| {})?;
            Ok(d.0)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let (x, y) = (&runs[0], &runs[1]);
    let mut g = Comparison {
        attempts: x.len().max(y.len()),
        same: 0,
        admitted: 0,
        rejected: 0,
        first_difference: None,
    };
    for (p, q) in x.iter().zip(y) {
        if p == q {
            g.same += 1;
            match p.2 {
                Decision::Rejected { .. } => g.rejected += 1,
                _ => g.admitted += 1,
            }
        } else if g.first_difference.is_none() {
            g.first_difference = Some((p.0, p.2, q.2));
        }
    }
    Ok(g)
}

fn explain(ctx: &Context) -> anyhow::Result<String> {
    let find = |alg: &str| {
        ctx.data
            .limiters
            .iter()
            .position(|l| l.algorithm == alg)
            .ok_or_else(|| anyhow!("the scenario has no {alg} limiter"))
    };
    let (tb, gcra) = (find("token_bucket")?, find("gcra")?);
    let g = agreement(ctx.scenario, tb, gcra)?;
    let d = ctx.data;
    let (l_tb, l_g) = (&d.limiters[tb], &d.limiters[gcra]);
    let params = |i: usize| ctx.scenario.limiters[i].algorithm.params();
    let p_tb = params(tb);
    let p_g = params(gcra);
    let field = |v: &serde_json::Value, k: &str| match v.get(k) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(x) => x.to_string(),
        None => "?".into(),
    };

    let mut s = String::new();
    let _ = writeln!(
        s,
        "GCRA is a token bucket in half the state — ratesim explain gcra\n"
    );
    let _ = writeln!(
        s,
        "{}\n",
        wrap(
            &format!(
                "Scenario {:?}: {}. The token bucket has capacity {} and refills at {}; GCRA has burst {} at a rate of {}. Both see the same {} attempts from {} keys.",
                d.name,
                d.description,
                field(&p_tb, "capacity"),
                super::per_window(&field(&p_tb, "rate"), d.window_ns),
                field(&p_g, "burst"),
                super::per_window(&field(&p_g, "rate"), d.window_ns),
                g.attempts,
                l_g.keys
            ),
            78,
            0
        )
    );
    let _ = writeln!(s, "Decisions, attempt by attempt");
    let verdict = if g.same == g.attempts {
        format!(
            "All {} decisions are identical — {} admitted, {} rejected — and so is the retry-after of every rejection.",
            g.attempts, g.admitted, g.rejected
        )
    } else {
        let first = g
            .first_difference
            .map(|(t, a, b)| {
                format!(
                    " The first difference is at {}: {a:?} vs {b:?}.",
                    super::at(t)
                )
            })
            .unwrap_or_default();
        format!(
            "{} of {} decisions are identical.{first} They should all be: this is a bug worth reporting.",
            g.same, g.attempts
        )
    };
    let _ = writeln!(s, "  {}\n", wrap(&verdict, 76, 2));
    let _ = writeln!(s, "State per key");
    let _ = writeln!(
        s,
        "  {}\n",
        wrap(
            &format!(
                "{}: {} bytes (a token balance and the time it was last updated). {}: {} bytes (one timestamp, the theoretical arrival time TAT). Both hold a key exactly as long — until the bucket is full again, i.e. TAT ≤ now — so over these {} keys and the whole run the mean is {} bytes per key against {}: {} bytes against {} in all.",
                l_tb.name,
                l_tb.state_peak,
                l_g.name,
                l_g.state_peak,
                l_g.keys,
                style::trim(l_tb.state_mean, 2),
                style::trim(l_g.state_mean, 2),
                l_tb.state_total_mean,
                l_g.state_total_mean
            ),
            76,
            2
        )
    );
    let _ = writeln!(s, "Why they agree");
    let _ = writeln!(
        s,
        "  {}\n",
        wrap(
            "TAT is the moment the bucket would be full again. With T = 1/rate, the bucket's balance at time t is burst − max(0, TAT − t)/T, so \"balance ≥ cost\" is the same test as GCRA's \"t ≥ TAT − τ + (cost − 1)·T\" with τ = (burst − 1)·T. Admitting a request of cost c moves TAT to max(TAT, t) + c·T, which is exactly spending c tokens. One number holds both the balance and the time.",
            76,
            2
        )
    );
    let _ = writeln!(
        s,
        "{}\n",
        wrap(
            &format!(
                "Where you meet it: the Rust governor crate and redis-cell (whose max_burst = b is burst b + 1). {} Choose a token bucket when you want a balance you can read.",
                in_redis(ctx.scenario, gcra)
            ),
            78,
            0
        )
    );
    let _ = writeln!(
        s,
        "{}",
        wrap(
            &format!(
                "Charts in {}: outcomes.png shows the two bars are the same, state.png the 2× in state; summary.md links them all.",
                ctx.dir.display()
            ),
            78,
            0
        )
    );
    Ok(s)
}

/// When GCRA's state is what you pay for, with the Redis scripts' measured
/// sizes (the README's Redis memory figures): GCRA's key is one integer
/// when its emission interval is whole microseconds, else as large as the
/// token bucket's hash.
fn in_redis(scenario: &Scenario, gcra: usize) -> String {
    use crate::limiter::redis_bytes::{GCRA, GCRA_IN_ALL, HASH, HASH_IN_ALL, VERSION};
    use crate::limiter::Algorithm;
    let Algorithm::Gcra(c) = scenario.limiters[gcra].algorithm else {
        return String::new();
    };
    let interval = c.rate.time_for(1);
    let bytes = c.redis_bytes();
    if bytes < HASH {
        format!(
            "Choose GCRA when state per key is what you pay for — millions of keys in Redis: ratesim's GCRA script keeps the TAT as one plain string, which Redis stores as an integer in {bytes} bytes (MEMORY USAGE, Redis {VERSION}) to the token bucket's {HASH}-byte hash whenever the emission interval is whole microseconds, as here ({interval}); with expiry and Redis' own tables, {GCRA_IN_ALL} bytes a key against {HASH_IN_ALL}, so a million keys take {} MB less for the same decisions.",
            HASH_IN_ALL - GCRA_IN_ALL
        )
    } else {
        format!(
            "Choose GCRA when state per key is what you pay for in a store that keeps one number. In Redis, ratesim's GCRA script keeps its TAT in {bytes} bytes — an integer of {GCRA} when the emission interval is whole microseconds, but here it is {interval}, so the TAT carries a fraction and takes as many bytes as the token bucket's {HASH}-byte hash."
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcra_and_the_token_bucket_agree_on_every_attempt_of_the_walkthrough() {
        let s = scenario().unwrap();
        let g = agreement(&s, 0, 1).unwrap();
        assert!(g.attempts > 10_000, "{g:?}");
        assert!(g.rejected > 0, "the scenario must reject something: {g:?}");
        assert_eq!(g.same, g.attempts, "{g:?}");
    }

    #[test]
    fn gcra_is_advised_for_millions_of_redis_keys_only_when_its_key_is_smaller() {
        let whole = scenario().unwrap();
        let text = in_redis(&whole, 1);
        assert!(
            text.contains("millions of keys in Redis")
                && text.contains("72 bytes")
                && text.contains("104-byte hash")
                && text.contains("(100ms)")
                && text.contains("32 MB less"),
            "{text}"
        );
        // 3 per second: T = 333.33… ms, and the TAT keeps a fraction.
        let fraction = Scenario::parse(
            &SCENARIO.replace("limit = 10", "limit = 3"),
            "gcra",
            Origin::File(std::path::PathBuf::from("explain-gcra.toml")),
        )
        .unwrap();
        let text = in_redis(&fraction, 1);
        assert!(
            !text.contains("millions") && text.contains("as many bytes as the token bucket's"),
            "{text}"
        );
    }
}
