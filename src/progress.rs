//! The progress bar: the one place `indicatif` appears.
//!
//! The engine reports progress through a small callback (simulated time
//! reached, events since the last call); limiters run in parallel, so each
//! one's progress lands in its own atomic and the bar shows the sum:
//! simulated time done out of (limiters × duration), simulated events per
//! wall-clock second, and an ETA. The bar appears only once a run has
//! taken about a second — short runs print nothing — and never with
//! `--quiet` or when stderr is not a terminal, so pipes and CI logs stay
//! clean.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::clock::Nanos;

/// How long a run goes before its bar appears.
pub const SHOW_AFTER: Duration = Duration::from_secs(1);

/// Positions on the bar (the bar counts in ten-thousandths of the run).
const STEPS: u64 = 10_000;

/// Whether a bar may be drawn at all.
pub fn enabled(quiet: bool, stderr_is_terminal: bool) -> bool {
    !quiet && stderr_is_terminal
}

/// Progress of one run of several limiters.
pub struct Progress {
    bar: ProgressBar,
    enabled: bool,
    shown: AtomicBool,
    start: Instant,
    /// Simulated time each limiter has reached, in ns.
    reached: Vec<AtomicU64>,
    events: AtomicU64,
    duration: u64,
}

impl Progress {
    /// A bar for `limiters` limiters each simulating `duration`; drawn on
    /// stderr only if it is a terminal and `quiet` is false.
    pub fn new(limiters: usize, duration: Nanos, quiet: bool) -> Progress {
        Progress::with(
            limiters,
            duration,
            enabled(quiet, std::io::stderr().is_terminal()),
        )
    }

    /// A bar that is never drawn.
    pub fn hidden(limiters: usize, duration: Nanos) -> Progress {
        Progress::with(limiters, duration, false)
    }

    fn with(limiters: usize, duration: Nanos, enabled: bool) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(STEPS), ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {percent:>3}% {msg} · ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Progress {
            bar,
            enabled,
            shown: AtomicBool::new(false),
            start: Instant::now(),
            reached: (0..limiters).map(|_| AtomicU64::new(0)).collect(),
            events: AtomicU64::new(0),
            duration: duration.0,
        }
    }

    /// The engine's callback for limiter `index`: it reached simulated time
    /// `now` after `events` more events.
    pub fn report(&self, index: usize, now: Nanos, events: u64) {
        if let Some(r) = self.reached.get(index) {
            r.fetch_max(now.0.min(self.duration), Ordering::Relaxed);
        }
        let events = self.events.fetch_add(events, Ordering::Relaxed) + events;
        if !self.enabled {
            return;
        }
        let elapsed = self.start.elapsed();
        if elapsed < SHOW_AFTER {
            return;
        }
        if !self.shown.swap(true, Ordering::Relaxed) {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            self.bar.enable_steady_tick(Duration::from_millis(200));
        }
        let (done, total) = self.done();
        self.bar
            .set_position((done as u128 * STEPS as u128 / total.max(1) as u128) as u64);
        let writing = if done >= total {
            " · writing results and charts"
        } else {
            ""
        };
        self.bar.set_message(format!(
            "{} of {} simulated · {} events/s{writing}",
            seconds(done),
            seconds(total),
            rate(events as f64 / elapsed.as_secs_f64())
        ));
    }

    /// Simulated time done and in all, over every limiter.
    pub fn done(&self) -> (u64, u64) {
        let done = self
            .reached
            .iter()
            .map(|r| r.load(Ordering::Relaxed))
            .fold(0u64, u64::saturating_add);
        let total = self.duration.saturating_mul(self.reached.len() as u64);
        (done, total)
    }

    /// Events reported so far.
    pub fn events(&self) -> u64 {
        self.events.load(Ordering::Relaxed)
    }

    /// Removes the bar (if it was ever drawn) before anything else prints.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

fn seconds(ns: u64) -> String {
    let s = ns as f64 / 1e9;
    if s >= 100.0 {
        format!("{s:.0}s")
    } else {
        format!("{s:.1}s")
    }
}

fn rate(per_sec: f64) -> String {
    if per_sec >= 1e6 {
        format!("{:.1}M", per_sec / 1e6)
    } else if per_sec >= 1e3 {
        format!("{:.0}k", per_sec / 1e3)
    } else {
        format!("{per_sec:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_bar_when_quiet_or_when_stderr_is_not_a_terminal() {
        assert!(!enabled(true, true));
        assert!(!enabled(false, false));
        assert!(!enabled(true, false));
        assert!(enabled(false, true));
    }

    #[test]
    fn parallel_limiters_add_up_to_the_whole_run() {
        let p = Progress::hidden(3, Nanos(100));
        std::thread::scope(|s| {
            for i in 0..3 {
                let p = &p;
                s.spawn(move || {
                    p.report(i, Nanos(40), 10);
                    p.report(i, Nanos(100), 5);
                });
            }
        });
        assert_eq!(p.done(), (300, 300));
        assert_eq!(p.events(), 45);
    }

    #[test]
    fn a_shaper_releasing_past_the_end_counts_as_done() {
        let p = Progress::hidden(1, Nanos(100));
        p.report(0, Nanos(250), 1);
        assert_eq!(p.done(), (100, 100));
    }
}
