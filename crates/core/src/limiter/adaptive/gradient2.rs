//! Gradient2: the limit follows the ratio of a long-term to the current RTT.
//!
//! **What it models.** Netflix concurrency-limits' `Gradient2Limit`
//! (`concurrency-limits-core/src/main/java/com/netflix/concurrency/limits/limit/Gradient2Limit.java`,
//! with `limit/measurement/ExpAvgMeasurement.java`, at
//! `78a74b9878d38c4c048b0304ce12a162ab7b7222`). It keeps an estimate `E`
//! (a `double`) and a long-term RTT `R` — an average of the first 10
//! samples, then an exponential average over `long_window` samples. Per
//! response with round-trip time `r` and `q = queue_size((int) E)`:
//!
//! ```text
//! R = long_rtt.add(r);   if R / r > 2  then  R = R × 0.95
//! in_flight < E / 2   →  E unchanged (app-limited: no growth)
//! gradient = max(0.5, min(1.0, rtt_tolerance × R / r))
//! E = E × (1 − smoothing) + (E × gradient + q) × smoothing
//! E = max(min_limit, min(max_concurrency, E));   limit = (int) E
//! ```
//!
//! The "short RTT" is the sample's own RTT: the builder's `shortWindow`
//! and `driftMultiplier` are deprecated and do nothing, and only the long
//! window is an average.
//!
//! While the current RTT stays within `rtt_tolerance` (1.5×) of the
//! long-term one the gradient is 1 and the limit creeps up by
//! `q × smoothing` per sample; above it the limit shrinks, at most to half
//! in one step.
//!
//! **When to pick it.** When latency rises before anything fails — a queue
//! building in front of a backend — and you want the limit to react to it.
//!
//! **Floating point.** The estimate, the long RTT and every step above are
//! Java `double`s, reproduced in `f64` in the same order (see [`super`]):
//! `tolerance * longRtt / shortRtt` is `(tolerance × R) / r`, and the
//! exponential average's factor is `2.0 / (long_window + 1)`.
//!
//! **Edge the real code has.** A first sample with a zero RTT makes
//! `R / r = 0 / 0 = NaN`, the gradient NaN (Java's `Math.max`/`min`
//! propagate it), so `E` becomes NaN for good and `(int) NaN = 0`: the limit
//! is 0 from then on. Reproduced, not repaired.

use super::{java_max, java_min, log10_root, square_root};
use crate::clock::Nanos;

/// The `queueSize` function of the builder: how far the limit may grow
/// beyond `E × gradient`, as a function of `(int) E`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueSize {
    /// `queueSize(int)`: always this many (default 4).
    Fixed(i32),
    /// `queueSizeFunction(SquareRootFunction.create(baseline))`:
    /// `max(baseline, max(1, (int) sqrt(E)))`.
    SquareRoot { baseline: i32 },
    /// `queueSizeFunction(Log10RootIntFunction.create(baseline))`:
    /// `baseline + max(1, (int) log10(E))`.
    Log10Root { baseline: i32 },
}

impl QueueSize {
    fn apply(self, limit: i32) -> i32 {
        match self {
            QueueSize::Fixed(n) => n,
            QueueSize::SquareRoot { baseline } => baseline.max(square_root(limit)),
            QueueSize::Log10Root { baseline } => log10_root(limit).wrapping_add(baseline),
        }
    }
}

/// `Gradient2Limit.Builder`'s fields and defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// `initialLimit`, default 20.
    pub initial_limit: u32,
    /// `minLimit`, default 20.
    pub min_limit: u32,
    /// `maxConcurrency`, default 200.
    pub max_concurrency: u32,
    /// `smoothing`, default 0.2.
    pub smoothing: f64,
    /// `queueSize`, default the constant 4.
    pub queue_size: QueueSize,
    /// `longWindow`, default 600 samples.
    pub long_window: u32,
    /// `rttTolerance`, default 1.5; the builder requires ≥ 1.0.
    pub rtt_tolerance: f64,
}

/// `new ExpAvgMeasurement(longWindow, 10)`: the first 10 samples are
/// averaged plainly.
const WARMUP_WINDOW: u32 = 10;

impl Default for Config {
    fn default() -> Self {
        Config {
            initial_limit: 20,
            min_limit: 20,
            max_concurrency: 200,
            smoothing: 0.2,
            queue_size: QueueSize::Fixed(4),
            long_window: 600,
            rtt_tolerance: 1.5,
        }
    }
}

impl Config {
    pub fn initial_limit(self, initial_limit: u32) -> Self {
        Config {
            initial_limit,
            ..self
        }
    }
    pub fn min_limit(self, min_limit: u32) -> Self {
        Config { min_limit, ..self }
    }
    pub fn max_concurrency(self, max_concurrency: u32) -> Self {
        Config {
            max_concurrency,
            ..self
        }
    }
    pub fn smoothing(self, smoothing: f64) -> Self {
        Config { smoothing, ..self }
    }
    pub fn queue_size(self, queue_size: QueueSize) -> Self {
        Config { queue_size, ..self }
    }
    pub fn long_window(self, long_window: u32) -> Self {
        Config {
            long_window,
            ..self
        }
    }
    /// `None` below 1.0, where the builder's precondition throws.
    pub fn rtt_tolerance(self, rtt_tolerance: f64) -> Option<Self> {
        (rtt_tolerance >= 1.0).then_some(Config {
            rtt_tolerance,
            ..self
        })
    }
}

/// `ExpAvgMeasurement`: a plain mean of the first `WARMUP_WINDOW` samples,
/// then `value × (1 − f) + sample × f` with `f = 2 / (window + 1)`.
#[derive(Debug, Clone)]
struct ExpAvg {
    value: f64,
    sum: f64,
    count: u32,
    window: u32,
}

impl ExpAvg {
    fn add(&mut self, sample: f64) -> f64 {
        if self.count < WARMUP_WINDOW {
            self.count += 1;
            self.sum += sample;
            self.value = self.sum / self.count as f64;
        } else {
            // `factor(n) = 2.0 / (n + 1)`, `n + 1` in `int`.
            let factor = 2.0 / (self.window as i32).wrapping_add(1) as f64;
            self.value = self.value * (1.0 - factor) + sample * factor;
        }
        self.value
    }
}

/// One Gradient2 limit.
#[derive(Debug, Clone)]
pub struct Gradient2 {
    cfg: Config,
    estimated_limit: f64,
    long_rtt: ExpAvg,
    /// `AbstractLimit.limit`: `initialLimit`, then `(int) E` after each sample.
    limit: i32,
}

impl Gradient2 {
    pub fn new(cfg: Config) -> Gradient2 {
        Gradient2 {
            estimated_limit: cfg.initial_limit as f64,
            long_rtt: ExpAvg {
                value: 0.0,
                sum: 0.0,
                count: 0,
                window: cfg.long_window,
            },
            limit: cfg.initial_limit as i32,
            cfg,
        }
    }

    /// The current limit: admit iff in flight < this.
    pub fn limit(&self) -> u32 {
        self.limit.max(0) as u32
    }

    /// The `double` estimate behind the limit.
    pub fn estimated_limit(&self) -> f64 {
        self.estimated_limit
    }

    /// The long-term RTT in ns, as a `double` (`getRttNoLoad` before its
    /// conversion to a `long`).
    pub fn long_rtt(&self) -> f64 {
        self.long_rtt.value
    }

    /// `AbstractLimit.onSample(startTime, rtt, inflight, didDrop)`:
    /// `Gradient2Limit._update` ignores the start time and the drop flag.
    pub fn on_sample(&mut self, _now: Nanos, rtt: Nanos, in_flight: u32, _dropped: bool) {
        self.limit = self.update(rtt, in_flight);
    }

    fn update(&mut self, rtt: Nanos, in_flight: u32) -> i32 {
        let estimated = self.estimated_limit;
        let queue_size = self.cfg.queue_size.apply(estimated as i32) as f64;

        // `shortRtt = (double) rtt`; `longRtt = this.longRtt.add(rtt)`, the
        // `long` sample widened by `Number.doubleValue()`.
        let short_rtt = rtt.as_u64() as i64 as f64;
        let long_rtt = self.long_rtt.add(short_rtt);

        // The long RTT is cut by 5 % when it is over twice the short one
        // (`update(current -> current * 0.95)`: `value` only, not `sum`).
        if long_rtt / short_rtt > 2.0 {
            self.long_rtt.value *= 0.95;
        }

        // `inflight < estimatedLimit / 2`: the `int` widened to `double`.
        if ((in_flight as i32) as f64) < estimated / 2.0 {
            return estimated as i32;
        }

        let gradient = java_max(
            0.5,
            java_min(1.0, self.cfg.rtt_tolerance * long_rtt / short_rtt),
        );
        let mut new_limit = estimated * gradient + queue_size;
        new_limit = estimated * (1.0 - self.cfg.smoothing) + new_limit * self.cfg.smoothing;
        new_limit = java_max(
            self.cfg.min_limit as i32 as f64,
            java_min(self.cfg.max_concurrency as i32 as f64, new_limit),
        );
        self.estimated_limit = new_limit;
        new_limit as i32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Nanos {
        Nanos::from_millis(n)
    }

    #[test]
    fn the_defaults_are_gradient2_limit_builders() {
        let d = Config::default();
        assert_eq!(
            (d.initial_limit, d.min_limit, d.max_concurrency),
            (20, 20, 200)
        );
        assert_eq!(d.smoothing, 0.2);
        assert_eq!(
            d.queue_size,
            QueueSize::Fixed(4),
            "queueSize = concurrency -> 4"
        );
        assert_eq!(d.long_window, 600);
        assert_eq!(d.rtt_tolerance, 1.5);
        let g = Gradient2::new(d);
        assert_eq!((g.limit(), g.estimated_limit()), (20, 20.0));
        assert!(Config::default().rtt_tolerance(0.99).is_none());
    }

    /// The conformance vector: each step derived from `_update`.
    #[test]
    fn gradient2_grows_by_a_fifth_of_the_queue_size_and_shrinks_on_slow_rtts() {
        let mut g = Gradient2::new(Config::default());
        // (rtt ms, inflight, E after, limit after, long RTT after)
        let steps: [(u64, u32, f64, u32, f64); 6] = [
            // R = 10ms (warm-up mean of one). 20 < 20/2? no.
            // gradient = max(0.5, min(1, 1.5·10/10)) = 1.
            // E = 20·0.8 + (20·1 + 4)·0.2 = 16 + 4.8 = 20.8 → limit 20.
            (10, 20, 20.8, 20, 1e7),
            // R = mean(10, 10) = 10ms; gradient 1.
            // E = 20.8·0.8 + (20.8 + 4)·0.2 = 21.6 → 21.
            (10, 20, 21.6, 21, 1e7),
            // R = 10ms; 5 < 21.6/2 = 10.8: app-limited, E stays 21.6.
            (10, 5, 21.6, 21, 1e7),
            // R = mean(10,10,10,30) = 15ms; 15/30 is not > 2.
            // gradient = max(0.5, min(1, 1.5·15/30 = 0.75)) = 0.75.
            // E = 21.6·0.8 + (21.6·0.75 + 4)·0.2 = 17.28 + 4.04 = 21.32 → 21.
            (30, 20, 21.32, 21, 1.5e7),
            // R = (10+10+10+30+40)/5 = 20ms; gradient = 1.5·20/40 = 0.75.
            // E = 21.32·0.8 + (21.32·0.75 + 4)·0.2 = 21.054000000000002 (f64).
            (40, 30, 21.054000000000002, 21, 2e7),
            // R = (100 + 5)/6 = 17.5ms; 17.5/5 = 3.5 > 2 → R = 17.5·0.95 =
            // 16.625ms. The gradient uses the R before the cut: min(1,
            // 1.5·17.5/5) = 1. E = 21.054…·0.8 + (21.054… + 4)·0.2 = 21.854000000000003.
            (5, 30, 21.854000000000003, 21, 16_625_000.0),
        ];
        for (i, (rtt, inflight, e, limit, long)) in steps.into_iter().enumerate() {
            g.on_sample(ms(i as u64), ms(rtt), inflight, false);
            assert_eq!(g.estimated_limit(), e, "E after sample {i}");
            assert_eq!(g.limit(), limit, "limit after sample {i}");
            assert_eq!(g.long_rtt(), long, "long RTT after sample {i}");
        }
    }

    #[test]
    fn gradient2_forgets_a_long_rtt_cut_made_during_warm_up() {
        let mut g = Gradient2::new(Config::default());
        g.on_sample(ms(0), ms(100), 0, false);
        assert_eq!(g.long_rtt(), 1e8);
        // mean(100, 10) = 55ms; 55/10 > 2 → 55·0.95 = 52.25ms.
        g.on_sample(ms(1), ms(10), 0, false);
        assert_eq!(g.long_rtt(), 52_250_000.0);
        // Warm-up recomputes sum / count = 120/3 = 40ms (the cut is not in
        // `sum`); 40/10 > 2 → 38ms.
        g.on_sample(ms(2), ms(10), 0, false);
        assert_eq!(g.long_rtt(), 38_000_000.0);
    }

    #[test]
    fn gradient2_long_rtt_turns_exponential_after_ten_samples() {
        let mut g = Gradient2::new(Config::default());
        for i in 0..10 {
            g.on_sample(ms(i), ms(10), 0, false);
        }
        assert_eq!(g.long_rtt(), 1e7, "sum 100ms / 10");
        // f = 2/601. R = 10ms·(1 − f) + 16.01ms·f = 10ms + 6.01ms·2/601 =
        // 10.02ms, and in f64 exactly 10020000.0.
        g.on_sample(ms(10), Nanos(16_010_000), 0, false);
        assert_eq!(g.long_rtt(), 10_020_000.0);
    }

    #[test]
    fn gradient2_cuts_the_long_rtt_by_five_percent_while_it_is_over_twice_the_short() {
        let mut g = Gradient2::new(Config::default());
        for i in 0..10 {
            g.on_sample(ms(i), ms(100), 0, false);
        }
        // After the warm-up, f = 2/601: R = 100ms·(1 − f) + 10ms·f =
        // 99 700 499.168… ns; R / 10ms > 2 → R · 0.95 = 94 715 474.209… ns.
        g.on_sample(ms(10), ms(10), 0, false);
        assert_eq!(g.long_rtt(), 94_715_474.20965059);
        // The cut value is the base of the next average (after warm-up
        // `update` sets the value the average continues from):
        // 94 715 474.2…·(1 − f) + 10ms·f = 94 433 559.15…, still > 2 × 10ms
        // → · 0.95.
        g.on_sample(ms(11), ms(10), 0, false);
        assert_eq!(g.long_rtt(), 89_711_881.19634221);
    }

    proptest::proptest! {
        /// With RTTs of at least 1 ns the limit never leaves
        /// [min_limit, max_concurrency].
        #[test]
        fn gradient2_stays_within_its_bounds(
            samples in proptest::collection::vec((1u64..2_000_000_000, 0u32..400), 1..400),
        ) {
            let mut g = Gradient2::new(Config::default());
            for (i, (rtt, inflight)) in samples.into_iter().enumerate() {
                g.on_sample(Nanos(i as u64), Nanos(rtt), inflight, false);
                proptest::prop_assert!((20..=200).contains(&g.limit()));
            }
        }
    }

    #[test]
    fn gradient2_shrinks_at_most_by_half_a_step() {
        let mut g = Gradient2::new(Config::default());
        for i in 0..11 {
            g.on_sample(ms(i), ms(10), 20, false);
        }
        // A slow sample after the warm-up: R = 10ms·(1 − 2/601) +
        // 1000ms·2/601 ≈ 13.29ms, 1.5·R/1000ms ≈ 0.02 < 0.5 → gradient 0.5:
        // E' = E·0.8 + (E·0.5 + 4)·0.2.
        let e = g.estimated_limit();
        g.on_sample(ms(11), ms(1000), 100, false);
        assert_eq!(g.estimated_limit(), e * 0.8 + (e * 0.5 + 4.0) * 0.2);
    }

    #[test]
    fn gradient2_clamps_to_min_limit_and_max_concurrency() {
        // max 21: 20.8, then 21.6 → min(21, 21.6) = 21.
        let mut g = Gradient2::new(Config::default().max_concurrency(21));
        g.on_sample(ms(0), ms(10), 20, false);
        g.on_sample(ms(1), ms(10), 20, false);
        assert_eq!((g.estimated_limit(), g.limit()), (21.0, 21));
        // min 20: 0 < 20/2, app-limited (R = 10ms). Then R = mean(10, 1000)
        // = 505ms, 505/1000 < 2, gradient = max(0.5, 1.5·505/1000 = 0.7575);
        // E = 20·0.8 + (20·0.7575 + 4)·0.2 = 19.83 → max(20, 19.83) = 20.
        let mut g = Gradient2::new(Config::default());
        g.on_sample(ms(0), ms(10), 0, false);
        g.on_sample(ms(1), ms(1000), 20, false);
        assert_eq!((g.estimated_limit(), g.limit()), (20.0, 20));
    }

    #[test]
    fn gradient2_queue_size_may_be_a_function_of_the_limit() {
        // SquareRootFunction.create(4) at (int) E = 100: max(4, 10) = 10.
        // E = 100·0.8 + (100·1 + 10)·0.2 = 80 + 22 = 102.
        let cfg = Config::default()
            .initial_limit(100)
            .queue_size(QueueSize::SquareRoot { baseline: 4 });
        let mut g = Gradient2::new(cfg);
        g.on_sample(ms(0), ms(10), 100, false);
        assert_eq!((g.estimated_limit(), g.limit()), (102.0, 102));
        // Log10RootIntFunction.create(0) at 100: 2. E = 80 + 20.4 = 100.4.
        let cfg = Config::default()
            .initial_limit(100)
            .queue_size(QueueSize::Log10Root { baseline: 0 });
        let mut g = Gradient2::new(cfg);
        g.on_sample(ms(0), ms(10), 100, false);
        assert_eq!(g.estimated_limit(), 100.0 * 0.8 + (100.0 + 2.0) * 0.2);
        assert_eq!(g.limit(), 100);
    }

    #[test]
    fn gradient2_a_zero_rtt_first_sample_drives_the_limit_to_zero_for_good() {
        // R = 0, R / r = 0/0 = NaN; gradient = max(0.5, min(1, NaN)) = NaN
        // in Java; E = NaN; max(20, min(200, NaN)) = NaN; (int) NaN = 0.
        let mut g = Gradient2::new(Config::default());
        g.on_sample(ms(0), Nanos::ZERO, 20, false);
        assert!(g.estimated_limit().is_nan());
        assert_eq!(g.limit(), 0);
        // NaN / 2 compares false, the update runs, and stays NaN.
        g.on_sample(ms(1), ms(10), 20, false);
        assert_eq!(g.limit(), 0);
    }
}
