//! Adaptive concurrency limits: a limit on requests in flight that the
//! limiter moves itself, from the round-trip times and drops it observes.
//!
//! **What they model.** A rate limit needs someone to choose the rate; an
//! adaptive limiter instead watches each response — its round-trip time, the
//! in-flight count when it started, whether it was dropped or timed out — and
//! raises its concurrency limit while latency stays near its baseline, lowers
//! it when latency grows or requests fail. The admit rule itself is one
//! integer comparison:
//!
//! ```text
//! admit  ⇔  in_flight < limit()
//! ```
//!
//! **The limiters.** Each file reproduces one real implementation sample by
//! sample, with its own defaults:
//!
//! | file | real code |
//! |---|---|
//! | [`aimd`] | Netflix concurrency-limits `AIMDLimit` |
//! | [`gradient2`] | Netflix concurrency-limits `Gradient2Limit` |
//! | [`vegas`] | Netflix concurrency-limits `VegasLimit` |
//! | [`envoy_gradient`] | Envoy's adaptive concurrency `GradientController` |
//! | [`latency_histogram`] | the libcircllhist histogram Envoy's controller reads percentiles from |
//!
//! The Netflix limits are read at commit
//! `78a74b9878d38c4c048b0304ce12a162ab7b7222` of `Netflix/concurrency-limits`
//! (`concurrency-limits-core/src/main/java/com/netflix/concurrency/limits/limit/`;
//! the `limit/` directory last changed in `414f64ddd2ad758145f3a8cdbcf1c95a89921062`).
//! Each is "unwrapped": the bare `Limit`, not inside a `WindowedLimit`, so
//! every response is one `onSample(startTime, rtt, inflight, didDrop)` of
//! `AbstractLimit`, which sets the limit to what `_update` returns.
//!
//! **Floating point, on purpose.** The rest of ratesim never lets a float
//! near a decision (docs/semantics.md §1). These limiters are the exception
//! because the real code computes its limit in floating point:
//! `Gradient2Limit` and `VegasLimit` keep their estimate as a
//! `double`, `AIMDLimit` multiplies by a `double` backoff ratio, Envoy's
//! gradient and burst headroom are C++ `double`s. Java's `double` and C++'s are
//! IEEE 754 binary64, so Rust's `f64` with the same operations in the same
//! order gives bit-identical results; each file follows its source line by
//! line, and the helpers below reproduce Java's `Math.min`/`Math.max` (which
//! propagate NaN, unlike Rust's `f64::min`). Conversions follow the sources:
//! Java's `(int) x` is Rust's `x as i32` (truncation toward zero, saturating,
//! NaN → 0). The limit that comes out — and so every admit decision — is
//! an integer.
//!
//! **Randomness.** `VegasLimit` jitters its probe interval and Envoy jitters
//! its minRTT window. Both draw from a [`Draw`] the caller passes in — in a
//! run, a seeded ChaCha8 stream of the limiter's own; in tests, a script.

pub mod aimd;
pub mod envoy_gradient;
pub mod gradient2;
pub mod latency_histogram;
pub mod vegas;

use crate::clock::Nanos;

/// Any one of the adaptive limits, behind one interface: what an engine
/// holds per instance.
#[derive(Debug, Clone)]
pub enum AdaptiveLimit {
    Aimd(aimd::Aimd),
    Gradient2(gradient2::Gradient2),
    Vegas(vegas::Vegas),
    EnvoyGradient(envoy_gradient::EnvoyGradient),
}

impl AdaptiveLimit {
    /// The current limit: admit iff in flight < this. Call
    /// [`Self::advance`] to the decision's time first.
    pub fn limit(&self) -> u32 {
        match self {
            AdaptiveLimit::Aimd(l) => l.limit(),
            AdaptiveLimit::Gradient2(l) => l.limit(),
            AdaptiveLimit::Vegas(l) => l.limit(),
            AdaptiveLimit::EnvoyGradient(l) => l.limit(),
        }
    }

    /// Brings a time-driven limit (Envoy's timers) to `now`; the Netflix
    /// limits change only on samples.
    pub fn advance(&mut self, now: Nanos) {
        if let AdaptiveLimit::EnvoyGradient(l) = self {
            l.advance(now);
        }
    }

    /// One response (see each limit's `on_sample`). A zero RTT given to
    /// Vegas is discarded, as the exception `VegasLimit` throws for it
    /// discards the sample.
    pub fn on_sample(
        &mut self,
        now: Nanos,
        rtt: Nanos,
        in_flight: u32,
        dropped: bool,
        rng: &mut impl Draw,
    ) {
        match self {
            AdaptiveLimit::Aimd(l) => l.on_sample(now, rtt, in_flight, dropped),
            AdaptiveLimit::Gradient2(l) => l.on_sample(now, rtt, in_flight, dropped),
            AdaptiveLimit::Vegas(l) => {
                let _ = l.on_sample(now, rtt, in_flight, dropped, rng);
            }
            AdaptiveLimit::EnvoyGradient(l) => l.on_sample(now, rtt, in_flight, dropped, rng),
        }
    }
}

/// A source of uniformly random 64-bit words: any `rand` generator, or a
/// scripted sequence in a test.
pub trait Draw {
    fn next_u64(&mut self) -> u64;

    /// A double uniform in `[0, 1)` from the top 53 bits of one word — how
    /// `java.util.concurrent.ThreadLocalRandom.nextDouble()` makes one from
    /// its `nextLong()`: `(nextLong() >>> 11) * 0x1.0p-53`.
    fn next_unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

impl<R: rand::RngCore> Draw for R {
    fn next_u64(&mut self) -> u64 {
        rand::RngCore::next_u64(self)
    }
}

/// Java's `Math.max(double, double)`: NaN if either is NaN, `+0.0` over
/// `-0.0`.
pub(crate) fn java_max(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        return a;
    }
    if a == 0.0 && b == 0.0 && a.is_sign_negative() {
        return b;
    }
    if a >= b {
        a
    } else {
        b
    }
}

/// Java's `Math.min(double, double)`: NaN if either is NaN, `-0.0` under
/// `+0.0`.
pub(crate) fn java_min(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        return a;
    }
    if a == 0.0 && b == 0.0 && b.is_sign_negative() {
        return b;
    }
    if a <= b {
        a
    } else {
        b
    }
}

/// `Log10RootIntFunction.create(0)`: `max(1, (int) Math.log10(t))`.
///
/// `Math.log10` is exact at powers of ten and within one ulp elsewhere, and
/// an `int` is never within an ulp of a power of ten without being one, so
/// `(int) Math.log10(t)` is the number of decimal digits of `t` minus one —
/// computed here in integers. (`t ≤ 0` gives `-∞` or NaN → at most 0 → 1;
/// Java would index its table out of bounds for a negative `t`, which no
/// limit reaches.)
pub fn log10_root(t: i32) -> i32 {
    let mut digits = 0;
    let mut v = t;
    while v >= 10 {
        v /= 10;
        digits += 1;
    }
    digits.max(1)
}

/// `SquareRootFunction`: `max(1, (int) Math.sqrt(t))`, computed exactly in
/// integers (a correctly rounded square root of an `int` never rounds up to
/// the next whole number).
pub fn square_root(t: i32) -> i32 {
    if t <= 0 {
        return 1;
    }
    let t = t as i64;
    let mut r = (t as f64).sqrt() as i64;
    while r * r > t {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= t {
        r += 1;
    }
    (r as i32).max(1)
}

#[cfg(test)]
pub(crate) mod script {
    use super::Draw;

    /// Words handed out in order: a test's "random" stream.
    pub struct Script(pub Vec<u64>);

    impl Draw for Script {
        fn next_u64(&mut self) -> u64 {
            assert!(!self.0.is_empty(), "the test's script ran out of draws");
            self.0.remove(0)
        }
    }

    /// The word whose [`Draw::next_unit_f64`] is `k / 2^53`.
    pub fn unit(k: u64) -> u64 {
        k << 11
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_interface_drives_every_adaptive_limit() {
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let envoy =
            envoy_gradient::Config::new(Nanos::from_secs(60), Nanos::from_millis(100)).unwrap();
        let mut limits = [
            AdaptiveLimit::Aimd(aimd::Aimd::new(aimd::Config::default())),
            AdaptiveLimit::Gradient2(gradient2::Gradient2::new(gradient2::Config::default())),
            AdaptiveLimit::Vegas(vegas::Vegas::new(vegas::Config::default(), &mut rng)),
            AdaptiveLimit::EnvoyGradient(envoy_gradient::EnvoyGradient::new(envoy, Nanos::ZERO)),
        ];
        // Initial limits: 20, 20, 20 and Envoy's min_concurrency 3.
        let initial: Vec<u32> = limits.iter().map(AdaptiveLimit::limit).collect();
        assert_eq!(initial, [20, 20, 20, 3]);
        for l in &mut limits {
            l.advance(Nanos::from_millis(1));
            // A drop: AIMD backs off to (int) (20 · 0.9) = 18 → min 20;
            // Vegas takes its first RTT as r₀; Gradient2 is app-limited.
            l.on_sample(
                Nanos::from_millis(1),
                Nanos::from_millis(1),
                0,
                true,
                &mut rng,
            );
            // A zero RTT is discarded by Vegas, taken by the others.
            l.on_sample(Nanos::from_millis(1), Nanos::ZERO, 0, false, &mut rng);
        }
        let after: Vec<u32> = limits.iter().map(AdaptiveLimit::limit).collect();
        assert_eq!(after, [20, 20, 20, 3]);
    }

    #[test]
    fn java_min_and_max_propagate_nan_where_rust_min_and_max_do_not() {
        assert!(java_max(0.5, f64::NAN).is_nan());
        assert!(java_max(f64::NAN, 0.5).is_nan());
        assert!(java_min(1.0, f64::NAN).is_nan());
        assert_eq!(0.5f64.max(f64::NAN), 0.5);
        assert!(java_max(-0.0, 0.0).is_sign_positive());
        assert!(java_min(0.0, -0.0).is_sign_negative());
        assert_eq!(java_max(3.0, 2.0), 3.0);
        assert_eq!(java_min(3.0, 2.0), 2.0);
    }

    #[test]
    fn log10_root_is_one_below_a_hundred_then_the_digit_count_less_one() {
        // Log10RootIntFunction's table: max(1, (int) Math.log10(i)).
        for (t, want) in [
            (0, 1),
            (1, 1),
            (9, 1),
            (10, 1),
            (99, 1),
            (100, 2),
            (999, 2),
            (1000, 3),
            (9999, 3),
            (10_000, 4),
            (i32::MAX, 9),
        ] {
            assert_eq!(log10_root(t), want, "log10_root({t})");
        }
    }

    #[test]
    fn square_root_is_the_integer_root_at_least_one() {
        for (t, want) in [(0, 1), (1, 1), (3, 1), (4, 2), (15, 3), (16, 4), (999, 31)] {
            assert_eq!(square_root(t), want, "square_root({t})");
        }
        assert_eq!(square_root(i32::MAX), 46_340);
    }

    #[test]
    fn a_seeded_chacha_stream_is_a_draw_and_repeats_itself() {
        use rand::SeedableRng;
        let mut a = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut b = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let (x, y) = (Draw::next_u64(&mut a), Draw::next_u64(&mut b));
        assert_eq!(x, y);
        let u = a.next_unit_f64();
        assert!((0.0..1.0).contains(&u));
    }

    #[test]
    fn a_unit_draw_is_the_top_53_bits_scaled_to_one() {
        let mut s = script::Script(vec![0, u64::MAX, script::unit(1 << 52)]);
        assert_eq!(s.next_unit_f64(), 0.0);
        assert_eq!(s.next_unit_f64(), 1.0 - f64::EPSILON / 2.0);
        assert_eq!(s.next_unit_f64(), 0.5);
    }
}
