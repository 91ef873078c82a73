//! AIMD: additive increase, multiplicative decrease — a loss-based limit.
//!
//! **What it models.** Netflix concurrency-limits' `AIMDLimit`
//! (`concurrency-limits-core/src/main/java/com/netflix/concurrency/limits/limit/AIMDLimit.java`
//! at `78a74b9878d38c4c048b0304ce12a162ab7b7222`). Per response, with `L`
//! the current (integer) limit:
//!
//! ```text
//! dropped or rtt > timeout   →  L = (int) (L × backoff_ratio)
//! else in_flight × 2 ≥ L     →  L = L + 1
//! then                          L = min(max_limit, max(min_limit, L))
//! ```
//!
//! It ignores latency below the timeout entirely: it grows until requests
//! fail, then backs off by 10 %, like TCP Reno's window.
//!
//! **When to pick it.** When failures (timeouts, 503s from an overloaded
//! backend) are the only trustworthy overload signal.
//!
//! **Floating point.** Only the backoff: `(int) (currentLimit * backoffRatio)`
//! multiplies an `int` promoted to `double` by a `double` and truncates; the
//! same in `f64` here (see [`super`]).

use crate::clock::Nanos;

/// `AIMDLimit.Builder`'s fields and defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// `minLimit`, default 20.
    pub min_limit: u32,
    /// `initialLimit`, default 20.
    pub initial_limit: u32,
    /// `maxLimit`, default 200.
    pub max_limit: u32,
    /// `backoffRatio`, default 0.9; the builder accepts `[0.5, 1.0)`.
    pub backoff_ratio: f64,
    /// `timeout`, default 5 s (`DEFAULT_TIMEOUT`): a slower response counts
    /// as a drop.
    pub timeout: Nanos,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            min_limit: 20,
            initial_limit: 20,
            max_limit: 200,
            backoff_ratio: 0.9,
            timeout: Nanos::from_secs(5),
        }
    }
}

impl Config {
    pub fn min_limit(self, min_limit: u32) -> Self {
        Config { min_limit, ..self }
    }
    pub fn initial_limit(self, initial_limit: u32) -> Self {
        Config {
            initial_limit,
            ..self
        }
    }
    pub fn max_limit(self, max_limit: u32) -> Self {
        Config { max_limit, ..self }
    }
    /// `None` outside `[0.5, 1.0)`, where the builder's precondition throws.
    pub fn backoff_ratio(self, backoff_ratio: f64) -> Option<Self> {
        (0.5..1.0).contains(&backoff_ratio).then_some(Config {
            backoff_ratio,
            ..self
        })
    }
    /// `None` for zero, where the builder's precondition throws.
    pub fn timeout(self, timeout: Nanos) -> Option<Self> {
        (timeout > Nanos::ZERO).then_some(Config { timeout, ..self })
    }
}

/// One AIMD limit: its configuration and current limit.
#[derive(Debug, Clone)]
pub struct Aimd {
    cfg: Config,
    /// `AbstractLimit.limit`, starting at `initialLimit` unclamped (the
    /// builder only logs a warning when it lies outside `[min, max]`).
    limit: i32,
}

impl Aimd {
    pub fn new(cfg: Config) -> Aimd {
        Aimd {
            limit: cfg.initial_limit as i32,
            cfg,
        }
    }

    /// The current limit: admit iff in flight < this.
    pub fn limit(&self) -> u32 {
        self.limit.max(0) as u32
    }

    /// `AbstractLimit.onSample(startTime, rtt, inflight, didDrop)`: one
    /// response. `_now` (the start time) is unused by `AIMDLimit`.
    pub fn on_sample(&mut self, _now: Nanos, rtt: Nanos, in_flight: u32, dropped: bool) {
        let mut current = self.limit;
        // `didDrop || rtt > timeout` — both `long` nanoseconds.
        if dropped || rtt > self.cfg.timeout {
            // `(int) (currentLimit * backoffRatio)`.
            current = (current as f64 * self.cfg.backoff_ratio) as i32;
        } else if (in_flight as i32).wrapping_mul(2) >= current {
            // `inflight * 2 >= currentLimit`, in Java `int` arithmetic.
            current += 1;
        }
        // `Math.min(maxLimit, Math.max(minLimit, currentLimit))`.
        self.limit = (self.cfg.max_limit as i32).min((self.cfg.min_limit as i32).max(current));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Nanos {
        Nanos::from_millis(n)
    }

    #[test]
    fn the_defaults_are_aimd_limit_builders() {
        let d = Config::default();
        assert_eq!(
            (d.min_limit, d.initial_limit, d.max_limit),
            (20, 20, 200),
            "Builder: minLimit = 20, initialLimit = 20, maxLimit = 200"
        );
        assert_eq!(d.backoff_ratio, 0.9);
        assert_eq!(d.timeout, Nanos::from_secs(5), "DEFAULT_TIMEOUT");
        assert_eq!(Aimd::new(d).limit(), 20);
    }

    /// The conformance vector, each limit derived from `_update`.
    #[test]
    fn aimd_grows_by_one_when_busy_and_backs_off_by_a_tenth_on_a_drop() {
        let mut l = Aimd::new(Config::default().min_limit(5));
        let steps: [(u64, u32, bool, u32); 8] = [
            // inflight*2 = 20 ≥ 20 → 20 + 1 = 21.
            (10, 10, false, 21),
            // 2*10 = 20 < 21, no drop → unchanged 21.
            (10, 10, false, 21),
            // 2*11 = 22 ≥ 21 → 22.
            (10, 11, false, 22),
            // drop: (int)(22 * 0.9) = (int) 19.8 = 19.
            (10, 11, true, 19),
            // rtt 5 s is not > timeout 5 s; 2*10 = 20 ≥ 19 → 20.
            (5_000, 10, false, 20),
            // rtt 5.001 s > 5 s counts as a drop: (int)(20*0.9) = (int) 18.0 = 18.
            (5_001, 30, false, 18),
            // drop: (int)(18*0.9) = (int) 16.2 = 16.
            (10, 0, true, 16),
            // drop: (int)(16*0.9) = (int) 14.4 = 14.
            (10, 0, true, 14),
        ];
        for (i, (rtt, inflight, drop, want)) in steps.into_iter().enumerate() {
            l.on_sample(ms(i as u64), ms(rtt), inflight, drop);
            assert_eq!(l.limit(), want, "after sample {i}");
        }
    }

    #[test]
    fn aimd_never_goes_below_min_limit_nor_above_max_limit() {
        // Defaults: min 20. (int)(20 * 0.9) = 18 → max(20, 18) = 20.
        let mut l = Aimd::new(Config::default());
        l.on_sample(ms(0), ms(1), 0, true);
        assert_eq!(l.limit(), 20);
        // max 22: 20 → 21 → 22 → min(22, 23) = 22.
        let mut l = Aimd::new(Config::default().max_limit(22));
        for want in [21, 22, 22] {
            l.on_sample(ms(0), ms(1), 100, false);
            assert_eq!(l.limit(), want);
        }
    }

    #[test]
    fn aimd_clamps_an_initial_limit_outside_its_bounds_only_at_the_first_sample() {
        // The builder only warns; AbstractLimit starts at initialLimit = 500.
        let mut l = Aimd::new(Config::default().initial_limit(500));
        assert_eq!(l.limit(), 500);
        // 2*0 < 500: unchanged 500, then min(200, max(20, 500)) = 200.
        l.on_sample(ms(0), ms(1), 0, false);
        assert_eq!(l.limit(), 200);
    }

    #[test]
    fn aimd_a_backoff_ratio_of_half_halves_rounding_down() {
        let mut l = Aimd::new(
            Config::default()
                .min_limit(1)
                .initial_limit(21)
                .backoff_ratio(0.5)
                .unwrap(),
        );
        // (int)(21 * 0.5) = (int) 10.5 = 10; then 5; then (int) 2.5 = 2; then 1.
        for want in [10, 5, 2, 1, 1] {
            l.on_sample(ms(0), ms(1), 0, true);
            assert_eq!(l.limit(), want);
        }
        assert!(Config::default().backoff_ratio(1.0).is_none());
        assert!(Config::default().backoff_ratio(0.49).is_none());
        assert!(Config::default().timeout(Nanos::ZERO).is_none());
    }

    proptest::proptest! {
        /// After any sample the limit is within [min_limit, max_limit].
        #[test]
        fn aimd_stays_within_its_bounds(
            samples in proptest::collection::vec((0u64..10_000_000_000, 0u32..400, proptest::bool::ANY), 1..400),
        ) {
            let mut l = Aimd::new(Config::default());
            for (i, (rtt, inflight, drop)) in samples.into_iter().enumerate() {
                l.on_sample(Nanos(i as u64), Nanos(rtt), inflight, drop);
                proptest::prop_assert!((20..=200).contains(&l.limit()));
            }
        }
    }
}
