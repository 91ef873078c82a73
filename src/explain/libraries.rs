//! `ratesim explain libraries` — what real libraries change in the
//! textbook rules, on the shipped `libraries` scenario.
//!
//! Re-simulates each textbook limiter and its library variant
//! (docs/semantics.md §5), recording every decision, and reads off the
//! moments the scenario's clients were built to meet: a first-hit window's
//! boundary burst (at another moment than the epoch window's), an entry
//! exactly one window old, a floored weight, Guava's debt, and nginx's whole
//! milliseconds. Every number in the text comes from those decisions.

use std::fmt::Write as _;

use anyhow::anyhow;

use super::{at, wrap, Context, Topic};
use crate::engine::{self, Attempt, DecisionSink};
use crate::limiter::Decision;
use crate::scenario::Load as _;
use crate::scenario::Scenario;

pub(crate) const TOPIC: Topic = Topic {
    name: "libraries",
    about: "what Python limits, Redis INCR+EXPIRE, Guava and nginx change in the textbook rules",
    scenario,
    text: include_str!("../../scenarios/libraries.toml"),
    explain,
};

fn scenario() -> Result<Scenario, crate::InputError> {
    Scenario::load("libraries")
}

/// One decision: time (ns), client name, cost, outcome.
type Row = (u64, String, u64, Decision);

struct Recorder<'a> {
    scenario: &'a Scenario,
    rows: Vec<Row>,
}

impl DecisionSink for Recorder<'_> {
    fn record(&mut self, a: &Attempt) -> anyhow::Result<()> {
        let client = self.scenario.population.client_name(a.arrival.client);
        self.rows.push((
            a.arrival.time.0,
            client.to_string(),
            a.arrival.cost,
            a.decision,
        ));
        Ok(())
    }
}

/// Every decision of the limiter called `name`, in processing order.
fn decisions(scenario: &Scenario, name: &str) -> anyhow::Result<Vec<Row>> {
    let i = scenario
        .limiters
        .iter()
        .position(|l| l.name == name)
        .ok_or_else(|| anyhow!("the scenario has no limiter named {name:?}"))?;
    let mut r = Recorder {
        scenario,
        rows: Vec::new(),
    };
    engine::simulate(scenario, i, Some(&mut r), &|_, _| {})?;
    Ok(r.rows)
}

/// The most cost `client` passed within any `(s − W, s]`, and the first `s`
/// attaining it.
fn peak(rows: &[Row], client: &str, w: u64) -> (u64, u64) {
    let passes: Vec<(u64, u64)> = rows
        .iter()
        .filter(|r| r.1 == client && r.3.passes())
        .map(|r| (r.0, r.2))
        .collect();
    let mut best = (0, 0);
    for &(s, _) in &passes {
        let sum = passes
            .iter()
            .filter(|&&(t, _)| t + w > s && t <= s)
            .map(|&(_, c)| c)
            .sum();
        if sum > best.0 {
            best = (sum, s);
        }
    }
    best
}

/// How many of `client`'s attempts at exactly `t` passed, of how many.
fn passed_at(rows: &[Row], client: &str, t: u64) -> (usize, usize) {
    let mine: Vec<&Row> = rows.iter().filter(|r| r.1 == client && r.0 == t).collect();
    (mine.iter().filter(|r| r.3.passes()).count(), mine.len())
}

/// The numbers the walkthrough quotes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Findings {
    /// `(peak, at)` of edge and late under the epoch and first-hit windows.
    pub edge_epoch: (u64, u64),
    pub edge_first_hit: (u64, u64),
    pub late_epoch: (u64, u64),
    pub late_first_hit: (u64, u64),
    /// tick's second burst (at 3s): passed of sent, exclusive and inclusive.
    pub tick_exclusive: (usize, usize),
    pub tick_inclusive: (usize, usize),
    /// trickle at 6.05s, exact and floored weight; the floored counter's
    /// peak in any window.
    pub trickle_exact: (usize, usize),
    pub trickle_floor: (usize, usize),
    pub trickle_floor_peak: u64,
    /// whale's big request: its cost, the token bucket's and Guava's decisions.
    pub whale_cost: u64,
    pub whale_bucket: Decision,
    pub whale_guava: Decision,
    /// Guava: whale's unit requests refused after the big one, and when the
    /// next one passed.
    pub whale_refused_after: usize,
    pub whale_next_pass: Option<u64>,
    /// Decisions the exact shaper and nginx's arithmetic agree on, of all.
    pub nginx_same: usize,
    pub nginx_total: usize,
}

const SEC: u64 = 1_000_000_000;

pub(crate) fn findings(s: &Scenario) -> anyhow::Result<Findings> {
    let w = s.defaults.window.0;
    let get = |name: &str| decisions(s, name);
    let (fixed, first_hit) = (get("fixed_window")?, get("python-limits-fixed")?);
    let (log, moving) = (get("sliding_log")?, get("python-limits-moving")?);
    let (counter, floor) = (get("sliding_counter")?, get("python-limits-sliding")?);
    let (bucket, guava) = (get("token_bucket")?, get("guava")?);
    let (leaky, nginx) = (get("leaky_bucket")?, get("nginx")?);
    let big = |rows: &[Row]| {
        rows.iter()
            .filter(|r| r.1 == "whale")
            .max_by_key(|r| r.2)
            .cloned()
            .ok_or_else(|| anyhow!("the scenario has no whale"))
    };
    let (whale_at, _, whale_cost, whale_bucket) = big(&bucket)?;
    let whale_guava = big(&guava)?.3;
    let after: Vec<&Row> = guava
        .iter()
        .filter(|r| r.1 == "whale" && r.0 > whale_at)
        .collect();
    let whale_refused_after = after.iter().take_while(|r| !r.3.passes()).count();
    let whale_next_pass = after.iter().find(|r| r.3.passes()).map(|r| r.0);
    let floor_peak = ["edge", "late", "tick", "trickle", "whale"]
        .iter()
        .map(|c| peak(&floor, c, w).0)
        .max()
        .unwrap_or(0);
    Ok(Findings {
        edge_epoch: peak(&fixed, "edge", w),
        edge_first_hit: peak(&first_hit, "edge", w),
        late_epoch: peak(&fixed, "late", w),
        late_first_hit: peak(&first_hit, "late", w),
        tick_exclusive: passed_at(&log, "tick", 3 * SEC),
        tick_inclusive: passed_at(&moving, "tick", 3 * SEC),
        trickle_exact: passed_at(&counter, "trickle", 6_050_000_000),
        trickle_floor: passed_at(&floor, "trickle", 6_050_000_000),
        trickle_floor_peak: floor_peak,
        whale_cost,
        whale_bucket,
        whale_guava,
        whale_refused_after,
        whale_next_pass,
        nginx_same: leaky.iter().zip(&nginx).filter(|(a, b)| a == b).count(),
        nginx_total: leaky.len().max(nginx.len()),
    })
}

fn outcome(d: Decision) -> String {
    match d {
        Decision::Admitted => "admits it".into(),
        Decision::Delayed { delay } => format!("delays it by {delay}"),
        Decision::Rejected { retry_after: None } => {
            "rejects it for good (no retry-after: it can never fit)".into()
        }
        Decision::Rejected {
            retry_after: Some(r),
        } => format!("rejects it, retry after {r}"),
    }
}

fn explain(ctx: &Context) -> anyhow::Result<String> {
    let f = findings(ctx.scenario)?;
    let limit = ctx.scenario.defaults.limit;
    let window = ctx.scenario.defaults.window;
    let mut s = String::new();
    let mut para = |title: &str, text: String| {
        let _ = writeln!(s, "{title}");
        let _ = writeln!(s, "  {}\n", wrap(&text, 76, 2));
    };
    para(
        "What real libraries change — ratesim explain libraries",
        format!(
            "Scenario \"libraries\": {} per {window}, the same hand-made traffic through each textbook rule and the variant a real library runs (docs/semantics.md §5). Every number below is from this run.",
            limit
        ),
    );
    para(
        "Fixed windows: epoch vs first hit (Python limits, Redis INCR + EXPIRE)",
        format!(
            "edge straddles the epoch boundary at 1s: the textbook window passes {} of its requests in one window ending {}, the first-hit window {} — edge's window opened at its first hit, 0.999s. late's first request at 0.2s opened its first-hit window [0.2s, 1.2s); its bursts at 1.199s and 1.2s straddle that boundary instead: the first-hit window passes {} in one window ending {}, the epoch window {}. Either way a key can pass about 2 × {limit} in well under {window}; first-hit windows only move the moment to where each key's own window ends.",
            f.edge_epoch.0, at(f.edge_epoch.1), f.edge_first_hit.0,
            f.late_first_hit.0, at(f.late_first_hit.1), f.late_epoch.0
        ),
    );
    para(
        "Sliding log: an entry exactly one window old (Python limits MovingWindow)",
        format!(
            "tick sends {} at 2s and {} at exactly 3s. The textbook log has let the 2s entries expire at 3s and passes {}; Python limits keeps an entry while it is ≥ t − W, still counts them, and passes {}. Only arrivals exactly W apart see the difference.",
            f.tick_exclusive.1, f.tick_exclusive.1, f.tick_exclusive.0, f.tick_inclusive.0
        ),
    );
    para(
        "Sliding counter: the floored weight (Python limits SlidingWindowCounter)",
        format!(
            "trickle sends 10 at 5.5s and {} at 6.05s, when the previous window weighs 10 × 0.95 = 9.5. The exact estimate passes {} of them; Python limits floors 9.5 to 9 and passes {}, so trickle gets {} through within one window under a limit of {limit}.",
            f.trickle_floor.1, f.trickle_exact.0, f.trickle_floor.0, f.trickle_floor_peak
        ),
    );
    let next = f
        .whale_next_pass
        .map_or("never again in this run".to_string(), at);
    para(
        "Guava's debt (RateLimiter, SmoothBursty)",
        format!(
            "whale asks for {} at once, 5 × the bucket. The token bucket {}; Guava {}: no debt was outstanding, so it passes, and the balance goes {} into debt. whale's next {} requests are refused while the debt is paid off at the refill rate; the next to pass is at {next}.",
            f.whale_cost,
            outcome(f.whale_bucket),
            outcome(f.whale_guava),
            f.whale_cost,
            f.whale_refused_after
        ),
    );
    para(
        "nginx's whole milliseconds (limit_req)",
        format!(
            "The exact shaper and nginx's integer arithmetic agree on {} of {} decisions here: every arrival is a whole millisecond and 10 r/s divides 1000 r/s, so nginx's leak loses nothing and no exact delay is shorter than 1 ms. At 3 r/s nginx would admit at once what the exact rule holds for a fraction of a millisecond, and at 30 r/m its leak rounds down.",
            f.nginx_same, f.nginx_total
        ),
    );
    let _ = writeln!(
        s,
        "{}",
        wrap(
            &format!(
                "Results and charts in {}; name a library in your own scenario with implementation = \"…\" (ratesim list shows them all).",
                ctx.dir.display()
            ),
            78,
            0
        )
    );
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Nanos;

    // Every number the walkthrough quotes, and the claims its sentences
    // make about them.
    #[test]
    fn the_walkthrough_quotes_these_numbers() {
        let f = findings(&scenario().unwrap()).unwrap();
        assert_eq!(f.edge_epoch, (20, SEC));
        assert_eq!(f.edge_first_hit.0, 10);
        assert_eq!(f.late_first_hit, (19, 1_200_000_000));
        assert_eq!(f.late_epoch.0, 10);
        assert_eq!((f.tick_exclusive, f.tick_inclusive), ((10, 10), (0, 10)));
        assert_eq!((f.trickle_exact, f.trickle_floor), ((0, 3), (1, 3)));
        assert_eq!(f.trickle_floor_peak, 11);
        assert_eq!(f.whale_cost, 50);
        assert_eq!(f.whale_bucket, Decision::Rejected { retry_after: None });
        assert_eq!(f.whale_guava, Decision::Admitted);
        assert_eq!(f.whale_refused_after, 4);
        assert_eq!(f.whale_next_pass, Some(8 * SEC));
        assert_eq!((f.nginx_same, f.nginx_total), (73, 73));
        // "5 × the bucket" and "10 × 0.95 = 9.5" hold for the shipped policy.
        let s = scenario().unwrap();
        assert_eq!(s.defaults.limit * 5, f.whale_cost);
        assert_eq!(s.defaults.window, Nanos(SEC));
    }

    // The trace facts the text states: who sends how many, when.
    #[test]
    fn the_walkthrough_describes_the_shipped_trace() {
        let s = scenario().unwrap();
        let rows = decisions(&s, "fixed_window").unwrap();
        let sent = |client: &str, t: u64| passed_at(&rows, client, t).1;
        assert_eq!(sent("edge", 999_000_000), 10);
        assert_eq!(sent("edge", SEC), 10);
        assert_eq!(sent("late", 200_000_000), 1);
        assert_eq!(sent("late", 1_199_000_000), 9);
        assert_eq!(sent("late", 1_200_000_000), 10);
        assert_eq!(sent("tick", 2 * SEC), 10);
        assert_eq!(sent("trickle", 5_500_000_000), 10);
        let first = |client: &str| rows.iter().find(|r| r.1 == client).unwrap().0;
        assert_eq!((first("edge"), first("late")), (999_000_000, 200_000_000));
    }
}
