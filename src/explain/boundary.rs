//! `ratesim explain boundary` — why a fixed window lets through twice its
//! limit.
//!
//! Runs the built-in `boundary` scenario (one client, 100 requests 1 ms
//! before each one-second boundary and 100 at it, against "100 per
//! second"), finds the fixed window's worst window from `summary.json`'s
//! `peak_window_end_ns`, re-simulates every limiter recording the time of
//! each pass, and explains with those numbers what each algorithm let
//! through in that window and why. Draws `boundary-zoom.png`, the close-up.

use std::fmt::Write as _;

use anyhow::{anyhow, Context as _};
use rayon::prelude::*;

use super::{at, per_window, wrap, Context, Topic};
use crate::clock::parse_rate;
use crate::engine::{self, Attempt, DecisionSink};
use crate::limiter::Decision;
use crate::report::charts::zoom::{self, Passes, ZoomSeries};
use crate::report::charts::{style, RunData};
use crate::scenario::echo::Params;
use crate::scenario::Load as _;
use crate::scenario::Scenario;

pub(crate) const TOPIC: Topic = Topic {
    name: "boundary",
    about: "why a fixed window lets through twice its limit, and what the others remember instead",
    scenario: || Scenario::load("boundary"),
    text: include_str!("../../scenarios/boundary.toml"),
    explain,
};

/// Which requests the close-up follows: those of the worst window's key.
#[derive(Debug, Clone, Copy)]
enum Follow {
    Client(u32),
    Ip(u32),
    All,
}

/// Collects the pass times of one limiter within `(from, to]`.
struct PassLog {
    follow: Follow,
    from: u64,
    to: u64,
    passes: Vec<(u64, u64)>,
}

impl DecisionSink for PassLog {
    fn record(&mut self, a: &Attempt) -> anyhow::Result<()> {
        let t = match a.decision {
            Decision::Admitted => a.arrival.time.0,
            Decision::Delayed { delay } => a.arrival.time.0 + delay.0,
            Decision::Rejected { .. } => return Ok(()),
        };
        let followed = match self.follow {
            Follow::Client(c) => a.arrival.client == c,
            Follow::Ip(ip) => a.arrival.ip == ip,
            Follow::All => true,
        };
        if followed && t > self.from && t <= self.to {
            self.passes.push((t, a.arrival.cost));
        }
        Ok(())
    }
}

/// The close-up, and every limiter's passes it was made from.
pub(crate) struct Closeup {
    pub zoom: ZoomSeries,
    pub passes: Vec<Passes>,
}

/// Finds the fixed window's worst window from the run and re-simulates
/// every limiter of `scenario` to get the exact pass times around it.
pub(crate) fn closeup(scenario: &Scenario, data: &RunData) -> anyhow::Result<Closeup> {
    let fixed = data
        .limiters
        .iter()
        .position(|l| l.algorithm == "fixed_window")
        .ok_or_else(|| anyhow!("the scenario has no fixed_window limiter to explain"))?;
    let fw = &data.limiters[fixed];
    let end = fw
        .peak_window_end_ns
        .ok_or_else(|| anyhow!("the fixed window passed nothing: there is no worst window"))?;
    let pop = &scenario.population;
    let key = fw.peak_key.as_deref().unwrap_or("*");
    let follow = match fw.key_by.as_str() {
        "client" => (0..pop.clients() as u32)
            .find(|&c| pop.client_name(c) == key)
            .map_or(Follow::All, Follow::Client),
        "ip" => (0..pop.ips() as u32)
            .find(|&c| pop.ip_name(c) == key)
            .map_or(Follow::All, Follow::Ip),
        _ => Follow::All,
    };
    let w = data.window_ns;
    let passes = (0..scenario.limiters.len())
        .into_par_iter()
        .map(|i| -> anyhow::Result<Passes> {
            let mut log = PassLog {
                follow,
                from: end.saturating_sub(3 * w),
                to: end + w,
                passes: Vec::new(),
            };
            engine::simulate(scenario, i, Some(&mut log), &|_, _| {})?;
            log.passes.sort_unstable();
            Ok(Passes {
                index: i,
                name: scenario.limiters[i].name.clone(),
                passes: log.passes,
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(Closeup {
        zoom: zoom::zoom_series(w, data.limit, end, fixed, &passes),
        passes,
    })
}

fn explain(ctx: &Context) -> anyhow::Result<String> {
    let c = closeup(ctx.scenario, ctx.data)?;
    let path = ctx.dir.join(zoom::FILE);
    zoom::draw_zoom(&ctx.data.name, &c.zoom, &path)
        .with_context(|| format!("cannot draw {}", path.display()))?;
    Ok(text(ctx, &c))
}

/// `times` in words: `at 0.999s`, or `between 0.2s and 0.9s`.
fn when(times: &[u64]) -> String {
    match (times.iter().min(), times.iter().max()) {
        (Some(a), Some(b)) if a == b => format!("at {}", at(*a)),
        (Some(a), Some(b)) => format!("between {} and {}", at(*a), at(*b)),
        _ => "never".into(),
    }
}

fn param(ctx: &Context, index: usize, name: &str) -> String {
    let v = ctx.scenario.limiters[index].algorithm.params();
    match v.get(name) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "?".into(),
    }
}

/// Why limiter `index` let `in_window` through, in one or two sentences.
fn why(ctx: &Context, c: &Closeup, index: usize, in_window: u64, gap: Option<u64>) -> String {
    let z = &c.zoom;
    let l = &ctx.data.limiters[index];
    let w = style::duration(z.window_ns);
    let b = at(z.boundary);
    match l.algorithm.as_str() {
        "fixed_window" => format!(
            "It counts per window [k·{w}, (k+1)·{w}) and resets the count at every boundary: at {b} it forgot what passed just before."
        ),
        "sliding_log" => format!(
            "It remembers the time of every pass for {w}, so at {b} the earlier passes still counted — exact, at 8 bytes per remembered request ({} bytes for this client at peak).",
            l.state_peak
        ),
        "sliding_counter" => format!(
            "It weighs the previous window's count by the share of it still inside the last {w}; just after {b} that is nearly all of it, so the reset does not open the gate."
        ),
        "token_bucket" | "gcra" => {
            let cap = if l.algorithm == "gcra" {
                param(ctx, index, "burst")
            } else {
                param(ctx, index, "capacity")
            };
            let rate = param(ctx, index, "rate");
            let refill = match (gap, parse_rate(&rate)) {
                (Some(g), Ok(r)) => format!(
                    ", and in the {} after it only {} token(s) refilled at {}",
                    style::duration(g),
                    style::trim(g as f64 * r.tokens() as f64 / r.per_ns() as f64, 3),
                    per_window(&rate, z.window_ns)
                ),
                _ => String::new(),
            };
            let same = if l.algorithm == "gcra" {
                " GCRA makes the token bucket's decisions from one timestamp (8 bytes, not 16)."
            } else {
                ""
            };
            format!("Its burst capacity is {cap}: the first burst spent it{refill}.{same}")
        }
        "interval_bucket" => {
            let (max, per, every) = (
                param(ctx, index, "max_tokens"),
                param(ctx, index, "tokens_per_fill"),
                param(ctx, index, "fill_interval"),
            );
            let extra = max
                .parse::<u64>()
                .ok()
                .filter(|&m| in_window > m)
                .map(|m| {
                    format!(
                        " A request arriving exactly on a fill tick sees the new token, so {} more passed at {b}.",
                        in_window - m
                    )
                })
                .unwrap_or_default();
            format!("A bucket of {max} tokens that gains {per} every {every}; the first burst spent it.{extra}")
        }
        "leaky_bucket" => {
            let rate = param(ctx, index, "rate");
            let spacing = parse_rate(&rate)
                .ok()
                .map(|r| style::duration(r.time_for(1).0))
                .unwrap_or_else(|| "?".into());
            format!(
                "A shaper: it lets one request through every {spacing}, queues up to {} and rejects what does not fit, so the first burst waits its turn (p99 delay {} ms) and fills the queue the second burst then finds full.",
                param(ctx, index, "queue"),
                style::millis(l.delay_p99_ms.unwrap_or(0.0))
            )
        }
        _ => String::new(),
    }
}

fn text(ctx: &Context, c: &Closeup) -> String {
    let z = &c.zoom;
    let d = ctx.data;
    let fixed = &z.lines[z.fixed];
    let fw_passes = &c.passes[z.fixed].passes;
    let inside = |t: u64| t > z.window_start() && t <= z.window_end;
    let before: Vec<u64> = fw_passes
        .iter()
        .filter(|p| inside(p.0) && p.0 < z.boundary)
        .map(|p| p.0)
        .collect();
    let after: Vec<u64> = fw_passes
        .iter()
        .filter(|p| inside(p.0) && p.0 >= z.boundary)
        .map(|p| p.0)
        .collect();
    let count = |ts: &[u64]| -> u64 {
        fw_passes
            .iter()
            .filter(|p| ts.contains(&p.0))
            .map(|p| p.1)
            .sum()
    };
    let gap = before.iter().max().map(|&t| z.boundary - t);
    let w = style::duration(d.window_ns);
    let key = d.limiters[z.fixed]
        .peak_key
        .clone()
        .unwrap_or_else(|| "*".into());

    let mut s = String::new();
    let _ = writeln!(s, "The boundary burst — ratesim explain boundary\n");
    let _ = writeln!(
        s,
        "{}\n",
        wrap(
            &format!(
                "Scenario {:?}: {}. The policy is {} requests per {w}, and all {} limiters enforce it.",
                d.name,
                d.description.trim_end_matches('.'),
                d.limit,
                d.limiters.len()
            ),
            78,
            0
        )
    );
    let _ = writeln!(s, "Where the worst window was");
    let _ = writeln!(
        s,
        "  {}\n",
        wrap(
            &format!(
                "The fixed window's worst {w} window for {key} is ({}, {}]: it opens just after {} and ends at {}. In it, {} requests passed: {} {} — just before the window boundary at {} — and {} {}. That is {}× the limit of {}.",
                at(z.window_start()),
                at(z.window_end),
                at(z.window_start()),
                at(z.window_end),
                fixed.in_window,
                count(&before),
                when(&before),
                at(z.boundary),
                count(&after),
                when(&after),
                style::trim(fixed.in_window as f64 / d.limit.max(1) as f64, 2),
                d.limit
            ),
            78,
            2
        )
    );
    let _ = writeln!(
        s,
        "What each algorithm let through in that window, against the limit of {}",
        d.limit
    );
    let width = z
        .lines
        .iter()
        .map(|l| l.name.chars().count())
        .max()
        .unwrap_or(0);
    for l in &z.lines {
        let verdict = if l.in_window > d.limit {
            format!(
                "{}× the limit",
                style::trim(l.in_window as f64 / d.limit as f64, 2)
            )
        } else {
            "within the limit".into()
        };
        let _ = writeln!(s, "  {:<width$}  {:>5}  {verdict}", l.name, l.in_window);
        let reason = why(ctx, c, l.index, l.in_window, gap);
        if !reason.is_empty() {
            let _ = writeln!(s, "      {}", wrap(&reason, 72, 6));
        }
    }
    let peaks: Vec<String> = d
        .limiters
        .iter()
        .map(|l| format!("{} {}", l.name, l.peak_in_window))
        .collect();
    let _ = writeln!(
        s,
        "\n{}\n",
        wrap(
            &format!(
                "Each limiter's own worst {w} window anywhere in the run (peak_in_window): {}.",
                peaks.join(", ")
            ),
            78,
            0
        )
    );
    let _ = writeln!(
        s,
        "{}\n",
        wrap(
            "Try next: `ratesim init boundary` writes this scenario to boundary.toml to edit. Move the second burst half a window later (after = \"500ms\" in its [[traffic]]): the bursts are still within one second but in different windows, so the fixed window still passes 200, and the token bucket, which refills 50 tokens in those 500 ms, passes 150. Give the token bucket capacity = 20 and its burst shrinks to 20. Then `ratesim run boundary.toml`.",
            78,
            0
        )
    );
    let _ = writeln!(
        s,
        "{}",
        wrap(
            &format!(
                "Charts in {}: {} (this close-up), peak.png (every limiter's worst window against the limit), timeline.png, and the rest, linked from summary.md.",
                ctx.dir.display(),
                zoom::FILE
            ),
            78,
            0
        )
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::parse_duration;
    use crate::report::charts::RunData;

    fn ns(text: &str) -> u64 {
        parse_duration(text).unwrap().0
    }

    #[test]
    fn the_zoom_window_is_the_one_holding_the_fixed_windows_2x_burst() {
        // `ratesim run boundary`'s data (tests/it/charts.rs holds it current).
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/crates/report/fixtures/boundary"
        );
        let data = RunData::load(std::path::Path::new(fixture)).unwrap();
        let scenario = Scenario::load("boundary").unwrap();
        let c = closeup(&scenario, &data).unwrap();
        let z = &c.zoom;
        assert_eq!(z.lines[z.fixed].name, "fixed_window");
        // The worst window ends at the boundary at 1s and holds both bursts.
        assert_eq!(z.window_end, ns("1s"));
        assert_eq!(z.boundary, ns("1s"));
        assert!(
            z.view.0 < ns("999ms") && z.view.1 > ns("1s"),
            "{:?}",
            z.view
        );
        assert_eq!(z.lines[z.fixed].in_window, 2 * data.limit);
        assert_eq!(
            z.lines[z.fixed].in_window,
            data.limiters[z.fixed].peak_in_window
        );
        let sliding_log = z.lines.iter().find(|l| l.name == "sliding_log").unwrap();
        assert!(sliding_log.in_window <= data.limit);
    }
}
