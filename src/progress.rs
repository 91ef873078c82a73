//! The progress bar: the one place `indicatif` appears.
//!
//! The engine reports progress through a small callback (simulated time
//! reached, events since the last call); limiters run in parallel, so each
//! one's progress lands in its own atomic and the bar shows the sum:
//! simulated time done out of (limiters × duration), simulated events per
//! wall-clock second, and an ETA. The bar appears only once a run has
//! taken about a second — short runs print nothing — and never with
//! `--quiet`. When stderr is not a terminal (a pipe, a CI log, `nohup`)
//! a long run prints a plain line every [`LINE_EVERY`] instead, so it is
//! never silent for minutes; short runs print nothing there either.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::clock::Nanos;

/// How long a run goes before its bar appears.
pub(crate) const SHOW_AFTER: Duration = Duration::from_secs(1);

/// How often a run whose stderr is not a terminal prints a progress line.
pub(crate) const LINE_EVERY: Duration = Duration::from_secs(5);

/// Positions on the bar (the bar counts in ten-thousandths of the run).
const STEPS: u64 = 10_000;

/// How progress shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Nothing (`--quiet`, tests).
    Hidden,
    /// A bar redrawn in place (stderr is a terminal).
    Bar,
    /// A line every [`LINE_EVERY`] (stderr is a pipe or a file).
    Lines,
}

/// How progress shows for these settings.
pub fn mode(quiet: bool, stderr_is_terminal: bool) -> Mode {
    match (quiet, stderr_is_terminal) {
        (true, _) => Mode::Hidden,
        (false, true) => Mode::Bar,
        (false, false) => Mode::Lines,
    }
}

/// Progress of one run of several limiters.
pub(crate) struct Progress {
    bar: ProgressBar,
    mode: Mode,
    /// Milliseconds after `start` at which the next line is due.
    next_line_ms: AtomicU64,
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
            mode(quiet, std::io::stderr().is_terminal()),
        )
    }

    /// A bar that is never drawn.
    #[cfg(test)]
    pub fn hidden(limiters: usize, duration: Nanos) -> Progress {
        Progress::with(limiters, duration, Mode::Hidden)
    }

    fn with(limiters: usize, duration: Nanos, mode: Mode) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(STEPS), ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {percent:>3}% {msg} · ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Progress {
            bar,
            mode,
            next_line_ms: AtomicU64::new(LINE_EVERY.as_millis() as u64),
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
        match self.mode {
            Mode::Hidden => {}
            Mode::Bar => self.draw_bar(events),
            Mode::Lines => self.print_line(events),
        }
    }

    /// One line on stderr, when one is due (from any thread; one wins).
    fn print_line(&self, events: u64) {
        let elapsed = self.start.elapsed();
        let ms = elapsed.as_millis() as u64;
        let due = self.next_line_ms.load(Ordering::Relaxed);
        if ms < due
            || self
                .next_line_ms
                .compare_exchange(
                    due,
                    ms + LINE_EVERY.as_millis() as u64,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_err()
        {
            return;
        }
        let _ = writeln!(std::io::stderr(), "ratesim: {}", self.line(events, elapsed));
    }

    /// `42% · 12.0s of 30.0s simulated · 1.2M events/s · ETA 8s`.
    pub fn line(&self, events: u64, elapsed: Duration) -> String {
        let (done, total) = self.done();
        let fraction = done as f64 / total.max(1) as f64;
        let eta = if fraction > 0.0 {
            format!(
                "{:.0}s",
                elapsed.as_secs_f64() * (1.0 - fraction) / fraction
            )
        } else {
            "unknown".to_string()
        };
        format!(
            "{:.0}% · {} of {} simulated · {} events/s · ETA {eta}",
            fraction * 100.0,
            seconds(done),
            seconds(total),
            rate(events as f64 / elapsed.as_secs_f64().max(1e-9))
        )
    }

    fn draw_bar(&self, events: u64) {
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
    #[cfg(test)]
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

/// Progress of a sweep: points done out of the points to run, with an
/// ETA. A bar on a terminal, a line every [`LINE_EVERY`] otherwise,
/// nothing with `--quiet`.
pub(crate) struct PointProgress {
    bar: ProgressBar,
    mode: Mode,
    next_line_ms: AtomicU64,
    start: Instant,
    done: AtomicU64,
    total: u64,
}

impl PointProgress {
    pub fn new(total: usize, quiet: bool) -> PointProgress {
        let mode = mode(quiet, std::io::stderr().is_terminal());
        let target = if mode == Mode::Bar {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(total as u64), target);
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} points · ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        if mode == Mode::Bar {
            bar.enable_steady_tick(Duration::from_millis(200));
        }
        PointProgress {
            bar,
            mode,
            next_line_ms: AtomicU64::new(LINE_EVERY.as_millis() as u64),
            start: Instant::now(),
            done: AtomicU64::new(0),
            total: total as u64,
        }
    }

    /// One more point finished (from any thread).
    pub fn point_done(&self) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        match self.mode {
            Mode::Hidden => {}
            Mode::Bar => self.bar.inc(1),
            Mode::Lines => {
                let elapsed = self.start.elapsed();
                let ms = elapsed.as_millis() as u64;
                let due = self.next_line_ms.load(Ordering::Relaxed);
                if ms >= due
                    && self
                        .next_line_ms
                        .compare_exchange(
                            due,
                            ms + LINE_EVERY.as_millis() as u64,
                            Ordering::Relaxed,
                            Ordering::Relaxed,
                        )
                        .is_ok()
                {
                    let _ = writeln!(
                        std::io::stderr(),
                        "ratesim: {}",
                        point_line(done, self.total, elapsed)
                    );
                }
            }
        }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Drop for PointProgress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// `42 of 100 points · ETA 8s`.
pub(crate) fn point_line(done: u64, total: u64, elapsed: Duration) -> String {
    let eta = if done > 0 {
        let left = total.saturating_sub(done) as f64;
        format!("{:.0}s", elapsed.as_secs_f64() / done as f64 * left)
    } else {
        "unknown".to_string()
    };
    format!("{done} of {total} points · ETA {eta}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_line_counts_points_and_estimates_the_rest() {
        assert_eq!(
            point_line(25, 100, Duration::from_secs(10)),
            "25 of 100 points · ETA 30s"
        );
    }

    #[test]
    fn a_bar_on_a_terminal_lines_on_a_pipe_nothing_when_quiet() {
        // Robustness issue 6: a long run with stderr not a terminal showed
        // no progress at all.
        assert_eq!(mode(true, true), Mode::Hidden);
        assert_eq!(mode(true, false), Mode::Hidden);
        assert_eq!(mode(false, true), Mode::Bar);
        assert_eq!(mode(false, false), Mode::Lines);
    }

    #[test]
    fn a_progress_line_says_how_far_how_fast_and_how_long() {
        let p = Progress::hidden(2, Nanos::from_secs(30));
        p.report(0, Nanos::from_secs(30), 600);
        p.report(1, Nanos::from_secs(6), 600);
        let line = p.line(1200, Duration::from_secs(12));
        assert_eq!(
            line,
            "60% · 36.0s of 60.0s simulated · 100 events/s · ETA 8s"
        );
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
