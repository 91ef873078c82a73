//! Vegas: the limit follows the queue its RTT reveals, like TCP Vegas.
//!
//! **What it models.** Netflix concurrency-limits' `VegasLimit`
//! (`concurrency-limits-core/src/main/java/com/netflix/concurrency/limits/limit/VegasLimit.java`
//! and `limit/functions/Log10RootIntFunction.java`, at
//! `78a74b9878d38c4c048b0304ce12a162ab7b7222`). It keeps an estimate `E`
//! (a `double`) and a no-load RTT `r₀`, the smallest RTT seen since the last
//! probe. Per response with round-trip time `r`, writing `lg(x)` for
//! `max(1, (int) log10(x))`:
//!
//! ```text
//! every ≈ jitter × probe_multiplier × E samples (jitter ∈ [0.5, 1)):  r₀ = r  (probe)
//! r₀ = 0 or r < r₀  →  r₀ = r
//! otherwise  queue = ⌈E × (1 − r₀ / r)⌉  and
//!   dropped                    →  E' = E − lg(E)
//!   in_flight × 2 < E          →  unchanged (app-limited)
//!   queue ≤ lg(E)              →  E' = E + 6·lg(E)    (beta)
//!   queue < 3·lg(E)  (alpha)   →  E' = E + lg(E)
//!   queue > 6·lg(E)  (beta)    →  E' = E − lg(E)
//!   else                       →  unchanged
//!   E = (1 − smoothing)·E + smoothing · max(1, min(max_concurrency, E'))
//! limit = (int) E
//! ```
//!
//! The probe forgets the no-load RTT now and then so a baseline that has
//! truly grown (a slower backend) is learnt again.
//!
//! **When to pick it.** Like [`super::gradient2`], when latency is the
//! overload signal, with a baseline taken from the minimum RTT rather than
//! an average.
//!
//! **Floating point.** `E` is a Java `double`; the queue size
//! `(int) Math.ceil(E × (1 − (double) r₀ / r))`, the probe test
//! `jitter × multiplier × E ≤ count` and the updates are reproduced in `f64`
//! in the same order (see [`super`]). The `lg` thresholds are integers.
//!
//! **Randomness.** The real code draws the probe jitter from
//! `ThreadLocalRandom.current().nextDouble(0.5, 1)` — once when built and
//! again at every probe. Here it is drawn from the [`Draw`] passed in, with
//! `nextDouble(origin, bound)`'s arithmetic: `u × (bound − origin) + origin`,
//! and `Math.nextDown(bound)` if that rounds up to `bound`.

use super::{java_max, java_min, log10_root, Draw};
use crate::clock::Nanos;

/// One of Vegas' thresholds as a function of `(int) E`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threshold {
    /// `multiplier × Log10RootIntFunction(E)` — the defaults: alpha 3,
    /// beta 6, threshold 1.
    Log10Root { multiplier: i32 },
    /// `alpha(int)` / `beta(int)`: a constant.
    Fixed(i32),
}

impl Threshold {
    fn apply(self, limit: i32) -> i32 {
        match self {
            Threshold::Log10Root { multiplier } => multiplier.wrapping_mul(log10_root(limit)),
            Threshold::Fixed(n) => n,
        }
    }
}

/// `VegasLimit.Builder`'s fields and defaults. The increase and decrease
/// functions are the defaults, `E ± Log10RootIntFunction((int) E)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// `initialLimit`, default 20.
    pub initial_limit: u32,
    /// `maxConcurrency`, default 1000.
    pub max_concurrency: u32,
    /// `smoothing`, default 1.0 (no smoothing).
    pub smoothing: f64,
    /// `alphaFunc`, default `3 × lg(E)`.
    pub alpha: Threshold,
    /// `betaFunc`, default `6 × lg(E)`.
    pub beta: Threshold,
    /// `thresholdFunc`, default `lg(E)`.
    pub threshold: Threshold,
    /// `probeMultiplier`, default 30.
    pub probe_multiplier: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            initial_limit: 20,
            max_concurrency: 1000,
            smoothing: 1.0,
            alpha: Threshold::Log10Root { multiplier: 3 },
            beta: Threshold::Log10Root { multiplier: 6 },
            threshold: Threshold::Log10Root { multiplier: 1 },
            probe_multiplier: 30,
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
    pub fn max_concurrency(self, max_concurrency: u32) -> Self {
        Config {
            max_concurrency,
            ..self
        }
    }
    pub fn smoothing(self, smoothing: f64) -> Self {
        Config { smoothing, ..self }
    }
    pub fn alpha(self, alpha: Threshold) -> Self {
        Config { alpha, ..self }
    }
    pub fn beta(self, beta: Threshold) -> Self {
        Config { beta, ..self }
    }
    pub fn threshold(self, threshold: Threshold) -> Self {
        Config { threshold, ..self }
    }
    pub fn probe_multiplier(self, probe_multiplier: u32) -> Self {
        Config {
            probe_multiplier,
            ..self
        }
    }
}

/// A sample with a zero RTT: `VegasLimit._update` throws
/// `IllegalArgumentException("rtt must be >0 …")`, so the sample changes
/// nothing (not even the probe count).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("rtt must be >0 but got 0")]
pub struct ZeroRtt;

/// One Vegas limit.
#[derive(Debug, Clone)]
pub struct Vegas {
    cfg: Config,
    estimated_limit: f64,
    /// `rtt_noload` in ns; 0 until the first sample.
    rtt_noload: u64,
    probe_count: i32,
    probe_jitter: f64,
    /// `AbstractLimit.limit`.
    limit: i32,
}

/// `ThreadLocalRandom.nextDouble(0.5, 1)`.
fn probe_jitter(rng: &mut impl Draw) -> f64 {
    let (origin, bound) = (0.5f64, 1.0f64);
    let r = rng.next_unit_f64() * (bound - origin) + origin;
    if r >= bound {
        // `Math.nextDown(1.0)`.
        f64::from_bits(bound.to_bits() - 1)
    } else {
        r
    }
}

impl Vegas {
    /// Builds the limit, drawing its first probe jitter as the constructor's
    /// `resetProbeJitter()` does.
    pub fn new(cfg: Config, rng: &mut impl Draw) -> Vegas {
        Vegas {
            estimated_limit: cfg.initial_limit as f64,
            rtt_noload: 0,
            probe_count: 0,
            probe_jitter: probe_jitter(rng),
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

    /// The no-load RTT (0 before the first sample).
    pub fn rtt_noload(&self) -> Nanos {
        Nanos(self.rtt_noload)
    }

    /// The current probe jitter, in `[0.5, 1)`.
    pub fn probe_jitter(&self) -> f64 {
        self.probe_jitter
    }

    /// `AbstractLimit.onSample(startTime, rtt, inflight, didDrop)`; `rng`
    /// is drawn from only when this sample is a probe.
    pub fn on_sample(
        &mut self,
        _now: Nanos,
        rtt: Nanos,
        in_flight: u32,
        dropped: bool,
        rng: &mut impl Draw,
    ) -> Result<(), ZeroRtt> {
        let rtt = rtt.as_u64();
        if rtt == 0 {
            return Err(ZeroRtt);
        }
        self.limit = self.update(rtt, in_flight, dropped, rng);
        Ok(())
    }

    fn should_probe(&self) -> bool {
        // `probeJitter * probeMultiplier * estimatedLimit <= probeCount`.
        self.probe_jitter * (self.cfg.probe_multiplier as i32) as f64 * self.estimated_limit
            <= self.probe_count as f64
    }

    fn update(&mut self, rtt: u64, in_flight: u32, dropped: bool, rng: &mut impl Draw) -> i32 {
        self.probe_count = self.probe_count.wrapping_add(1);
        if self.should_probe() {
            self.probe_jitter = probe_jitter(rng);
            self.probe_count = 0;
            self.rtt_noload = rtt;
            return self.estimated_limit as i32;
        }
        if self.rtt_noload == 0 || rtt < self.rtt_noload {
            self.rtt_noload = rtt;
            return self.estimated_limit as i32;
        }
        self.update_estimated_limit(rtt, self.rtt_noload, in_flight, dropped)
    }

    fn update_estimated_limit(
        &mut self,
        rtt: u64,
        rtt_noload: u64,
        in_flight: u32,
        dropped: bool,
    ) -> i32 {
        let estimated = self.estimated_limit;
        let lg = log10_root(estimated as i32) as f64;
        // `(int) Math.ceil(estimatedLimit * (1 - (double) rtt_noload / rtt))`.
        let queue_size =
            (estimated * (1.0 - rtt_noload as i64 as f64 / rtt as i64 as f64)).ceil() as i32;

        let new_limit = if dropped {
            estimated - lg
        } else if (((in_flight as i32).wrapping_mul(2)) as f64) < estimated {
            return estimated as i32;
        } else {
            let alpha = self.cfg.alpha.apply(estimated as i32);
            let beta = self.cfg.beta.apply(estimated as i32);
            let threshold = self.cfg.threshold.apply(estimated as i32);
            if queue_size <= threshold {
                estimated + beta as f64
            } else if queue_size < alpha {
                estimated + lg
            } else if queue_size > beta {
                estimated - lg
            } else {
                return estimated as i32;
            }
        };

        let new_limit = java_max(
            1.0,
            java_min(self.cfg.max_concurrency as i32 as f64, new_limit),
        );
        let new_limit = (1.0 - self.cfg.smoothing) * estimated + self.cfg.smoothing * new_limit;
        self.estimated_limit = new_limit;
        new_limit as i32
    }
}

#[cfg(test)]
mod tests {
    use super::super::script::{unit, Script};
    use super::*;

    fn ms(n: u64) -> Nanos {
        Nanos::from_millis(n)
    }

    fn us(n: u64) -> Nanos {
        Nanos(n * 1000)
    }

    /// A jitter of exactly 0.5 (u = 0), and nothing more to draw.
    fn half() -> Script {
        Script(vec![unit(0)])
    }

    #[test]
    fn the_defaults_are_vegas_limit_builders() {
        let d = Config::default();
        assert_eq!((d.initial_limit, d.max_concurrency), (20, 1000));
        assert_eq!(d.smoothing, 1.0);
        assert_eq!(d.alpha, Threshold::Log10Root { multiplier: 3 });
        assert_eq!(d.beta, Threshold::Log10Root { multiplier: 6 });
        assert_eq!(d.threshold, Threshold::Log10Root { multiplier: 1 });
        assert_eq!(d.probe_multiplier, 30);
        let v = Vegas::new(d, &mut half());
        assert_eq!(
            (v.limit(), v.estimated_limit(), v.probe_jitter()),
            (20, 20.0, 0.5)
        );
    }

    /// The conformance vector, each limit derived from `_update` and
    /// `updateEstimatedLimit`. At E in [20, 99], lg(E) = 1: threshold 1,
    /// alpha 3, beta 6. Jitter 0.5 puts the probe at sample 0.5·30·E ≥ 300.
    #[test]
    fn vegas_adds_beta_with_no_queue_and_steps_by_one_around_alpha_and_beta() {
        let mut rng = half();
        let mut v = Vegas::new(Config::default(), &mut rng);
        // (rtt, inflight, dropped, limit after, E after, r₀ after)
        let steps: [(Nanos, u32, bool, u32, f64, Nanos); 8] = [
            // r₀ = 0: the first RTT becomes r₀; E unchanged.
            (ms(10), 10, false, 20, 20.0, ms(10)),
            // queue = ⌈20·(1 − 10/10)⌉ = 0; 2·10 = 20 < 20? no;
            // 0 ≤ threshold 1 → E + beta = 26; (1−1)·20 + 1·26 = 26.
            (ms(10), 10, false, 26, 26.0, ms(10)),
            // queue = ⌈26·(1 − 10/20)⌉ = 13 > beta 6 → 26 − 1 = 25.
            (ms(20), 13, false, 25, 25.0, ms(10)),
            // queue = ⌈25·(1 − 10/12)⌉ = ⌈4.1666…⌉ = 5: not ≤ 1, not < 3,
            // not > 6 → the sweet spot, unchanged.
            (ms(12), 20, false, 25, 25.0, ms(10)),
            // queue = ⌈25·(1 − 10/10.5)⌉ = ⌈1.19…⌉ = 2 < alpha 3 → 25 + 1.
            (us(10_500), 20, false, 26, 26.0, ms(10)),
            // a drop: 26 − lg(26) = 25, whatever the queue.
            (ms(10), 0, true, 25, 25.0, ms(10)),
            // 2·5 = 10 < 25: app-limited, unchanged though queue = 0.
            (ms(10), 5, false, 25, 25.0, ms(10)),
            // 5ms < r₀: a new no-load RTT, E unchanged.
            (ms(5), 20, false, 25, 25.0, ms(5)),
        ];
        for (i, (rtt, inflight, drop, limit, e, r0)) in steps.into_iter().enumerate() {
            v.on_sample(ms(i as u64), rtt, inflight, drop, &mut rng)
                .unwrap();
            assert_eq!(v.limit(), limit, "limit after sample {i}");
            assert_eq!(v.estimated_limit(), e, "E after sample {i}");
            assert_eq!(v.rtt_noload(), r0, "r₀ after sample {i}");
        }
    }

    #[test]
    fn vegas_thresholds_grow_with_the_limits_digits() {
        // E = 100: lg = 2, threshold 2, alpha 6, beta 12. queue 0 → 112.
        let mut v = Vegas::new(Config::default().initial_limit(100), &mut half());
        v.on_sample(ms(0), ms(10), 50, false, &mut half()).unwrap();
        v.on_sample(ms(1), ms(10), 50, false, &mut half()).unwrap();
        assert_eq!(v.estimated_limit(), 112.0);
        // queue = ⌈112·(1 − 10/10.2)⌉ = ⌈2.196…⌉ = 3 → not ≤ 2, < 6: + 2.
        v.on_sample(ms(2), us(10_200), 56, false, &mut half())
            .unwrap();
        assert_eq!(v.estimated_limit(), 114.0);
        // Fixed alpha and beta (builder.alpha(int), beta(int)): queue 3
        // ≤ threshold 2? no; < alpha 2? no; > beta 2 → 114 − 2 = 112.
        let cfg = Config::default()
            .initial_limit(114)
            .alpha(Threshold::Fixed(2))
            .beta(Threshold::Fixed(2));
        let mut v = Vegas::new(cfg, &mut half());
        v.on_sample(ms(0), ms(10), 57, false, &mut half()).unwrap();
        v.on_sample(ms(1), us(10_200), 57, false, &mut half())
            .unwrap();
        assert_eq!(v.estimated_limit(), 112.0);
    }

    #[test]
    fn vegas_probes_its_no_load_rtt_after_jitter_times_multiplier_times_limit_samples() {
        // probe_multiplier 1, jitter 0.5, E 20: probe when count ≥ 10.
        let cfg = Config::default().probe_multiplier(1);
        let mut rng = Script(vec![unit(0), unit(1 << 52)]);
        let mut v = Vegas::new(cfg, &mut rng);
        v.on_sample(ms(0), ms(10), 0, false, &mut rng).unwrap(); // r₀ = 10ms
        for i in 2..10 {
            v.on_sample(ms(i), ms(50), 0, false, &mut rng).unwrap(); // app-limited
            assert_eq!(v.rtt_noload(), ms(10));
        }
        // Sample 10: 0.5·1·20 = 10 ≤ 10 → probe: r₀ = 50ms, count = 0, and a
        // new jitter 2^52/2^53·0.5 + 0.5 = 0.75.
        v.on_sample(ms(10), ms(50), 0, false, &mut rng).unwrap();
        assert_eq!(v.rtt_noload(), ms(50));
        assert_eq!(v.probe_jitter(), 0.75);
        assert_eq!(v.limit(), 20);
        assert!(rng.0.is_empty());
    }

    #[test]
    fn vegas_jitter_that_rounds_up_to_one_is_the_double_just_below() {
        // u = 1 − 2^-53: u·0.5 + 0.5 = 1 − 2^-54 rounds (to even) to 1.0 →
        // Math.nextDown(1.0).
        let v = Vegas::new(Config::default(), &mut Script(vec![u64::MAX]));
        assert_eq!(v.probe_jitter(), 1.0 - f64::EPSILON / 2.0);
    }

    #[test]
    fn vegas_smoothing_and_the_clamps() {
        // smoothing 0.5: E' = 26 → (1 − 0.5)·20 + 0.5·26 = 23.
        let mut v = Vegas::new(Config::default().smoothing(0.5), &mut half());
        v.on_sample(ms(0), ms(10), 10, false, &mut half()).unwrap();
        v.on_sample(ms(1), ms(10), 10, false, &mut half()).unwrap();
        assert_eq!(v.estimated_limit(), 23.0);
        // max 22: min(22, 26) = 22.
        let mut v = Vegas::new(Config::default().max_concurrency(22), &mut half());
        v.on_sample(ms(0), ms(10), 10, false, &mut half()).unwrap();
        v.on_sample(ms(1), ms(10), 10, false, &mut half()).unwrap();
        assert_eq!(v.limit(), 22);
        // At 1 a drop gives 1 − 1 = 0 → max(1, 0) = 1.
        let mut v = Vegas::new(Config::default().initial_limit(1), &mut half());
        v.on_sample(ms(0), ms(10), 0, false, &mut half()).unwrap();
        v.on_sample(ms(1), ms(10), 0, true, &mut half()).unwrap();
        assert_eq!((v.estimated_limit(), v.limit()), (1.0, 1));
    }

    #[test]
    fn vegas_refuses_a_zero_rtt_and_changes_nothing() {
        let mut v = Vegas::new(Config::default().probe_multiplier(1), &mut half());
        assert_eq!(
            v.on_sample(ms(0), Nanos::ZERO, 0, true, &mut half()),
            Err(ZeroRtt)
        );
        assert_eq!(v.rtt_noload(), Nanos::ZERO);
        assert_eq!(v.probe_count, 0);
        assert_eq!(v.limit(), 20);
    }

    proptest::proptest! {
        /// With a seeded stream for the probes, the limit stays within
        /// [1, max_concurrency], and the same seed gives the same limits.
        #[test]
        fn vegas_stays_within_its_bounds_and_repeats_with_its_seed(
            seed in 0u64..1000,
            samples in proptest::collection::vec((1u64..2_000_000_000, 0u32..2000, proptest::bool::ANY), 1..400),
        ) {
            use rand::SeedableRng;
            let run = || {
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
                let mut v = Vegas::new(Config::default().probe_multiplier(1), &mut rng);
                let mut limits = Vec::new();
                for (i, &(rtt, inflight, drop)) in samples.iter().enumerate() {
                    v.on_sample(Nanos(i as u64), Nanos(rtt), inflight, drop, &mut rng).unwrap();
                    limits.push(v.limit());
                }
                limits
            };
            let limits = run();
            proptest::prop_assert!(limits.iter().all(|l| (1..=1000).contains(l)));
            proptest::prop_assert_eq!(limits, run());
        }
    }
}
