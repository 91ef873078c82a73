//! Envoy's adaptive concurrency gradient controller: a limit recomputed
//! once per window from the ratio of a measured minRTT to the window's RTT.
//!
//! **What it models.** `GradientController` of Envoy's adaptive
//! concurrency filter (`envoyproxy/envoy`,
//! `source/extensions/filters/http/adaptive_concurrency/controller/gradient_controller.cc`
//! at `c35f67fb14e41582c2530dcdad417f2516113d0f`, `gradient_controller.h`
//! at `6e06b0df8f7543ff7ed6f9f8203a547086511eee`, defaults from
//! `api/envoy/extensions/filters/http/adaptive_concurrency/v3/adaptive_concurrency.proto`
//! at `ab02e201511895ecf51293b38805d3120069cedd`). Unlike the Netflix
//! limits it works in windows of time, driven by two timers:
//!
//! - **minRTT window.** The limit is pinned to `min_concurrency` (its
//!   previous value saved) and samples are collected until
//!   `request_count` responses — of requests *sent* since the window
//!   opened — have arrived; their `sample_aggregate_percentile` becomes the
//!   minRTT and the saved limit is restored. The next window opens
//!   `interval + random() % ⌈interval · jitter⌉` ms later, or at once when
//!   five sample windows in a row have left the limit at `min_concurrency`.
//! - **sample windows,** every `concurrency_update_interval` outside a
//!   minRTT window: the percentile of the window's samples is the sample
//!   RTT and
//!
//! ```text
//! gradient  = max(0.5, min(2.0, minRTT · (1 + buffer) / sampleRTT))
//! limit'    = L · gradient
//! L         = max(min_concurrency, min(max_concurrency_limit, (u32) (limit' + √limit')))
//! ```
//!
//! Latencies are whole microseconds (truncated) in a log-linear histogram
//! ([`super::latency_histogram`]): the percentiles are libcircllhist's
//! estimates, not order statistics, exactly as Envoy sees them.
//!
//! **When to pick it.** To see what an Envoy sidecar in front of the
//! backend would do: it needs no limit chosen, but it periodically
//! throttles everyone to `min_concurrency` to re-measure.
//!
//! **Time.** Timers are deadlines on the virtual clock. [`advance`] fires
//! every timer due at or before `now` in deadline order (a timer that
//! fires re-arms from its own deadline); [`on_sample`] advances first, so a
//! timer due at the very nanosecond of a response fires before the response
//! is recorded. When both timers are due at the same instant the minRTT
//! timer fires first (it is the one armed first in `updateMinRTT`; Envoy's
//! event loop leaves such ties unspecified).
//!
//! **Samples.** The filter records a sample for every response it encodes,
//! whatever its status — a timeout's 504 or a backend's 503 included — and
//! cancels only on a stream reset: the `dropped` flag is not used. The
//! request's start is `now − rtt`; a request started before the current
//! minRTT window opened is ignored (`rq_send_time < min_rtt_epoch_`).
//!
//! **Floating point.** The percentages, the gradient, `limit'` and its
//! square root are C++ `double`s, reproduced in `f64` in the same order
//! (see [`super`]); C++'s `std::min`/`std::max` keep their first argument
//! on NaN, so a NaN gradient becomes 2.0. The conversion to `uint32_t`
//! truncates (saturating here, where C++ has undefined behaviour).
//!
//! **Not modelled.** Runtime overrides of the parameters; the stats.
//!
//! [`advance`]: EnvoyGradient::advance
//! [`on_sample`]: EnvoyGradient::on_sample

use super::latency_histogram::LatencyHistogram;
use super::Draw;
use crate::clock::Nanos;

const NS_PER_MS: u64 = 1_000_000;

/// `GradientControllerConfig`, flattened, with the proto's names and the
/// controller's defaults. Percentages are percent (`25.0` is 25 %).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// `min_rtt_calc_params.interval`: required (≥ 1 ms), no default;
    /// used in whole milliseconds (`durationToMilliseconds` truncates).
    pub interval: Nanos,
    /// `min_rtt_calc_params.request_count`, default 50.
    pub request_count: u32,
    /// `min_rtt_calc_params.jitter`, default 15 %.
    pub jitter: f64,
    /// `min_rtt_calc_params.min_concurrency`, default 3.
    pub min_concurrency: u32,
    /// `min_rtt_calc_params.buffer`, default 25 %.
    pub buffer: f64,
    /// `concurrency_limit_params.concurrency_update_interval`: required,
    /// no default; whole milliseconds, at least 1.
    pub concurrency_update_interval: Nanos,
    /// `concurrency_limit_params.max_concurrency_limit`, default 1000.
    pub max_concurrency_limit: u32,
    /// `sample_aggregate_percentile`, default 50 %.
    pub sample_aggregate_percentile: f64,
}

impl Config {
    /// The two durations the proto requires; everything else defaulted.
    /// `None` for `interval` under 1 ms, which the proto's validation
    /// refuses, and for an update interval under 1 ms: the proto takes any
    /// above 0, but the controller reads it in whole milliseconds, and a
    /// timer of 0 ms fires again on every turn of Envoy's event loop —
    /// no moment on a simulated clock.
    pub fn new(interval: Nanos, concurrency_update_interval: Nanos) -> Option<Config> {
        if interval.as_u64() < NS_PER_MS || concurrency_update_interval.as_u64() < NS_PER_MS {
            return None;
        }
        Some(Config {
            interval,
            request_count: 50,
            jitter: 15.0,
            min_concurrency: 3,
            buffer: 25.0,
            concurrency_update_interval,
            max_concurrency_limit: 1000,
            sample_aggregate_percentile: 50.0,
        })
    }
    /// `None` for 0 (the proto requires `gt: 0`).
    pub fn request_count(self, request_count: u32) -> Option<Self> {
        (request_count > 0).then_some(Config {
            request_count,
            ..self
        })
    }
    pub fn jitter(self, jitter: f64) -> Self {
        Config { jitter, ..self }
    }
    /// `None` for 0 (the proto requires `gt: 0`).
    pub fn min_concurrency(self, min_concurrency: u32) -> Option<Self> {
        (min_concurrency > 0).then_some(Config {
            min_concurrency,
            ..self
        })
    }
    pub fn buffer(self, buffer: f64) -> Self {
        Config { buffer, ..self }
    }
    /// `None` for 0 (the proto requires `gt: 0`).
    pub fn max_concurrency_limit(self, max_concurrency_limit: u32) -> Option<Self> {
        (max_concurrency_limit > 0).then_some(Config {
            max_concurrency_limit,
            ..self
        })
    }
    pub fn sample_aggregate_percentile(self, sample_aggregate_percentile: f64) -> Self {
        Config {
            sample_aggregate_percentile,
            ..self
        }
    }

    fn interval_ms(&self) -> u64 {
        self.interval.as_u64() / NS_PER_MS
    }

    fn sample_interval(&self) -> Nanos {
        Nanos(self.concurrency_update_interval.as_u64() / NS_PER_MS * NS_PER_MS)
    }
}

/// `std::min(a, b)`: `(b < a) ? b : a`.
fn cpp_min(a: f64, b: f64) -> f64 {
    if b < a {
        b
    } else {
        a
    }
}

/// `std::max(a, b)`: `(a < b) ? b : a`.
fn cpp_max(a: f64, b: f64) -> f64 {
    if a < b {
        b
    } else {
        a
    }
}

/// `std::max(0.0, std::min(val, 100.0)) / 100.0`.
fn fraction(percent: f64) -> f64 {
    cpp_max(0.0, cpp_min(percent, 100.0)) / 100.0
}

/// One gradient controller.
#[derive(Debug, Clone)]
pub struct EnvoyGradient {
    cfg: Config,
    concurrency_limit: u32,
    /// The limit saved on entering a minRTT window; non-zero exactly while
    /// in one (`inMinRTTSamplingWindow()`).
    deferred_limit_value: u32,
    /// `min_rtt_` and `sample_rtt_`, nanoseconds (whole microseconds).
    min_rtt: i64,
    sample_rtt: i64,
    hist: LatencyHistogram,
    consecutive_min_concurrency_set: u32,
    min_rtt_epoch: Nanos,
    min_rtt_calc_timer: Option<Nanos>,
    sample_reset_timer: Option<Nanos>,
}

impl EnvoyGradient {
    /// The constructor: the limit starts at `min_concurrency`, a minRTT
    /// window opens at `now`, and the sample timer is armed.
    pub fn new(cfg: Config, now: Nanos) -> EnvoyGradient {
        let mut c = EnvoyGradient {
            concurrency_limit: cfg.min_concurrency,
            deferred_limit_value: 0,
            min_rtt: 0,
            sample_rtt: 0,
            hist: LatencyHistogram::default(),
            consecutive_min_concurrency_set: 0,
            min_rtt_epoch: now,
            min_rtt_calc_timer: None,
            sample_reset_timer: None,
            cfg,
        };
        c.enter_min_rtt_sampling_window(now);
        c.sample_reset_timer = Some(now + cfg.sample_interval());
        c
    }

    /// The current limit: admit iff in flight < this (`forwardingDecision`).
    /// Call [`Self::advance`] to `now` first.
    pub fn limit(&self) -> u32 {
        self.concurrency_limit
    }

    /// Whether a minRTT window is open.
    pub fn in_min_rtt_sampling_window(&self) -> bool {
        self.deferred_limit_value > 0
    }

    /// The minRTT in ns (0 before the first measurement).
    pub fn min_rtt(&self) -> Nanos {
        Nanos(self.min_rtt as u64)
    }

    /// The last sample window's RTT in ns.
    pub fn sample_rtt(&self) -> Nanos {
        Nanos(self.sample_rtt as u64)
    }

    /// When the next minRTT window is due to open, if armed.
    pub fn next_min_rtt_window(&self) -> Option<Nanos> {
        self.min_rtt_calc_timer
    }

    /// When the sample timer next fires, if armed.
    pub fn next_sample_reset(&self) -> Option<Nanos> {
        self.sample_reset_timer
    }

    /// Fires every timer due at or before `now`, each at its own deadline.
    pub fn advance(&mut self, now: Nanos) {
        loop {
            let min_rtt_due = self.min_rtt_calc_timer.filter(|&t| t <= now);
            let reset_due = self.sample_reset_timer.filter(|&t| t <= now);
            match (min_rtt_due, reset_due) {
                (Some(m), Some(r)) if m <= r => self.fire_min_rtt_calc_timer(m),
                (Some(m), None) => self.fire_min_rtt_calc_timer(m),
                (_, Some(r)) => self.fire_sample_reset_timer(r),
                (None, None) => return,
            }
        }
    }

    /// One response at `now` that took `rtt` (`recordLatencySample` with
    /// `rq_send_time = now − rtt`). `in_flight` and `dropped` are not used;
    /// `rng` is drawn from once when this sample completes a minRTT window
    /// (for the jitter), never otherwise.
    pub fn on_sample(
        &mut self,
        now: Nanos,
        rtt: Nanos,
        _in_flight: u32,
        _dropped: bool,
        rng: &mut impl Draw,
    ) {
        self.advance(now);
        let sent = now.saturating_sub(rtt);
        if sent < self.min_rtt_epoch {
            return;
        }
        // `duration_cast<microseconds>(now - rq_send_time)`: truncation.
        self.hist.insert(rtt.as_u64() / 1000);
        self.update_min_rtt(now, rng);
    }

    fn fire_min_rtt_calc_timer(&mut self, at: Nanos) {
        self.min_rtt_calc_timer = None;
        self.enter_min_rtt_sampling_window(at);
    }

    fn fire_sample_reset_timer(&mut self, at: Nanos) {
        self.sample_reset_timer = None;
        if self.in_min_rtt_sampling_window() {
            // Not re-armed: `updateMinRTT` arms it when the window closes.
            return;
        }
        self.reset_sample_window(at);
        self.sample_reset_timer = Some(at + self.cfg.sample_interval());
    }

    fn enter_min_rtt_sampling_window(&mut self, now: Nanos) {
        if self.in_min_rtt_sampling_window() {
            return;
        }
        self.deferred_limit_value = self.concurrency_limit;
        self.update_concurrency_limit(self.cfg.min_concurrency, now);
        self.hist.clear();
        self.min_rtt_epoch = now;
    }

    fn update_min_rtt(&mut self, now: Nanos, rng: &mut impl Draw) {
        if !self.in_min_rtt_sampling_window()
            || self.hist.sample_count() < self.cfg.request_count as u64
        {
            return;
        }
        self.min_rtt = self.process_latency_samples_and_clear();
        self.update_concurrency_limit(self.deferred_limit_value, now);
        self.deferred_limit_value = 0;
        let jittered_ms = self.apply_jitter(self.cfg.interval_ms(), rng);
        self.min_rtt_calc_timer = Some(now + Nanos(jittered_ms.saturating_mul(NS_PER_MS)));
        self.sample_reset_timer = Some(now + self.cfg.sample_interval());
    }

    /// `applyJitter`: `interval + random() % ⌈interval · jitter⌉` ms, or the
    /// interval itself (and no draw) at 0 % jitter.
    fn apply_jitter(&self, interval_ms: u64, rng: &mut impl Draw) -> u64 {
        let jitter = fraction(self.cfg.jitter);
        if jitter == 0.0 {
            return interval_ms;
        }
        // `const uint32_t jitter_range_ms = std::ceil(interval.count() * jitter_pct)`.
        let range = (interval_ms as i64 as f64 * jitter).ceil() as u32;
        let draw = rng.next_u64();
        if range == 0 {
            // `% 0` is undefined in C++; unreachable for interval ≥ 1 ms and
            // jitter > 0, kept total here.
            return interval_ms;
        }
        interval_ms.wrapping_add(draw % range as u64)
    }

    fn reset_sample_window(&mut self, now: Nanos) {
        if self.hist.sample_count() == 0 {
            return;
        }
        self.sample_rtt = self.process_latency_samples_and_clear();
        let new_limit = self.calculate_new_limit();
        self.update_concurrency_limit(new_limit, now);
    }

    /// The percentile in whole µs (`static_cast<int>`), as nanoseconds.
    fn process_latency_samples_and_clear(&mut self) -> i64 {
        let q = self
            .hist
            .quantile(fraction(self.cfg.sample_aggregate_percentile));
        self.hist.clear();
        (q as i32 as i64) * 1000
    }

    fn calculate_new_limit(&self) -> u32 {
        let min_rtt = self.min_rtt as f64;
        let buffered_min_rtt = min_rtt + min_rtt * fraction(self.cfg.buffer);
        let raw_gradient = buffered_min_rtt / self.sample_rtt as f64;
        let gradient = cpp_max(0.5, cpp_min(2.0, raw_gradient));
        let limit = self.concurrency_limit as f64 * gradient;
        let burst_headroom = limit.sqrt();
        let new_limit = (limit + burst_headroom) as u32;
        self.cfg
            .min_concurrency
            .max(self.cfg.max_concurrency_limit.min(new_limit))
    }

    fn update_concurrency_limit(&mut self, new_limit: u32, now: Nanos) {
        let old_limit = self.concurrency_limit;
        self.concurrency_limit = new_limit;
        let min = self.cfg.min_concurrency;
        if !self.in_min_rtt_sampling_window() && old_limit == min && new_limit == min {
            self.consecutive_min_concurrency_set += 1;
        } else {
            self.consecutive_min_concurrency_set = 0;
        }
        if self.consecutive_min_concurrency_set >= 5 {
            // `min_rtt_calc_timer_->enableTimer(0ms)`: re-armed to now.
            self.min_rtt_calc_timer = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::script::Script;
    use super::*;

    fn ms(n: u64) -> Nanos {
        Nanos::from_millis(n)
    }

    /// minRTT interval 1 s, sample windows of 100 ms, 5 samples per minRTT.
    fn cfg() -> Config {
        Config::new(ms(1000), ms(100))
            .unwrap()
            .request_count(5)
            .unwrap()
    }

    fn none() -> Script {
        Script(vec![])
    }

    /// Opens at 0, measures a minRTT of 10.5 ms from five 10 ms samples at
    /// 10..=50 ms (see `the_conformance_vector`), drawing `draw` for the
    /// jitter.
    fn measured(cfg: Config, draw: u64) -> EnvoyGradient {
        let mut c = EnvoyGradient::new(cfg, Nanos::ZERO);
        let mut rng = Script(vec![draw]);
        for t in [10, 20, 30, 40, 50] {
            c.on_sample(ms(t), ms(10), 0, false, &mut rng);
        }
        assert!(!c.in_min_rtt_sampling_window());
        c
    }

    #[test]
    fn the_defaults_are_the_protos() {
        let d = Config::new(ms(60_000), ms(100)).unwrap();
        assert_eq!(d.request_count, 50, "request_count: defaults to 50");
        assert_eq!(d.jitter, 15.0, "jitter: defaults to 15%");
        assert_eq!(d.min_concurrency, 3, "min_concurrency: defaults to 3");
        assert_eq!(d.buffer, 25.0, "buffer: defaults to 25%");
        assert_eq!(d.max_concurrency_limit, 1000, "defaults to 1000");
        assert_eq!(d.sample_aggregate_percentile, 50.0, "defaults to p50");
        // interval ≥ 1 ms and a positive update interval are required.
        assert!(Config::new(Nanos(999_999), ms(100)).is_none());
        assert!(Config::new(ms(1), Nanos::ZERO).is_none());
        assert!(d.request_count(0).is_none());
        assert!(d.min_concurrency(0).is_none());
        assert!(d.max_concurrency_limit(0).is_none());
        // The constructor: limit = min_concurrency, a minRTT window open,
        // the sample timer armed one update interval on.
        let c = EnvoyGradient::new(d, ms(7));
        assert_eq!(c.limit(), 3);
        assert!(c.in_min_rtt_sampling_window());
        assert_eq!(c.next_sample_reset(), Some(ms(107)));
        assert_eq!(c.next_min_rtt_window(), None);
    }

    #[test]
    fn durations_count_in_whole_milliseconds() {
        // durationToMilliseconds truncates: 100.9 ms → 100 ms.
        let cfg = Config::new(Nanos(1_000_900_000), Nanos(100_900_000)).unwrap();
        let c = EnvoyGradient::new(cfg, Nanos::ZERO);
        assert_eq!(c.next_sample_reset(), Some(ms(100)));
    }

    /// The conformance vector: a minRTT window, then sample windows, each
    /// value derived from `gradient_controller.cc` and `circllhist.c`.
    #[test]
    fn the_conformance_vector() {
        let mut c = EnvoyGradient::new(cfg(), Nanos::ZERO);
        let mut rng = Script(vec![1007]);
        // minRTT window from 0: four samples are not yet `request_count`.
        for t in [10, 20, 30, 40] {
            c.on_sample(ms(t), ms(10), 0, false, &mut rng);
            assert_eq!(c.limit(), 3);
        }
        // The fifth: 5 × 10 000 µs in bin [10 000, 11 000); qn = 2.5, k = 3,
        // n = 5: 10 000 + 3/6 · 1000 = 10 500 µs. The saved limit (3) is
        // restored; the next window opens at 50 + 1000 + 1007 % ⌈1000 ·
        // 0.15⌉ = 50 + 1000 + 107 ms; the sample timer re-arms to 150 ms.
        c.on_sample(ms(50), ms(10), 0, false, &mut rng);
        assert_eq!(c.min_rtt(), Nanos(10_500_000));
        assert!(!c.in_min_rtt_sampling_window());
        assert_eq!(c.limit(), 3);
        assert_eq!(c.next_min_rtt_window(), Some(ms(1157)));
        assert_eq!(c.next_sample_reset(), Some(ms(150)));

        // (window end, sample RTTs in ms, sample RTT µs, limit after)
        let windows: [(u64, &[u64], u64, u32); 5] = [
            // 4 × 10 ms: qn = 2, k = 2: 10 000 + 2/5 · 1000 = 10 400 µs.
            // gradient = 13 125 000 / 10 400 000 = 1.2620…; 3 · 1.2620… =
            // 3.786; + √3.786 = 1.946 → (u32) 5.73 = 5.
            (150, &[10, 10, 10, 10], 10_400, 5),
            // 5 · 1.2620… = 6.310 + 2.512 = 8.82 → 8.
            (250, &[10, 10, 10, 10], 10_400, 8),
            // 2 × 30 ms: qn = 1, k = 1, n = 2: 30 000 + 1000/3 → 30 333 µs.
            // 13.125 / 30.333 = 0.433 → clamped to 0.5: 8 · 0.5 = 4 + 2 = 6.
            (350, &[30, 30], 30_333, 6),
            // No samples: resetSampleWindow returns, the limit stays.
            (450, &[], 30_333, 6),
            // 1 × 5 ms: [5000, 5100), k = 1, n = 1: 5050 µs. 13.125 / 5.05
            // = 2.599 → clamped to 2.0: 6 · 2 = 12 + √12 = 15.46 → 15.
            (550, &[5], 5_050, 15),
        ];
        for (end, rtts, sample_us, limit) in windows {
            for (i, &rtt) in rtts.iter().enumerate() {
                c.on_sample(ms(end - 90 + 10 * i as u64), ms(rtt), 0, false, &mut rng);
            }
            c.advance(ms(end));
            assert_eq!(c.sample_rtt(), Nanos(sample_us * 1000), "window to {end}");
            assert_eq!(c.limit(), limit, "window to {end}");
            assert_eq!(c.next_sample_reset(), Some(ms(end + 100)));
        }

        // At 1157 ms a new minRTT window: 15 saved, the limit pinned to 3.
        c.advance(ms(1157));
        assert!(c.in_min_rtt_sampling_window());
        assert_eq!(c.limit(), 3);
        // A response to a request sent at 1150 < 1157 is not a sample; one
        // sent at 1157 is.
        c.on_sample(ms(1160), ms(10), 0, false, &mut rng);
        c.on_sample(ms(1160), ms(3), 0, false, &mut rng);
        // The sample timer, still running from the sample windows (1150 →
        // 1250), fires inside the minRTT window and is not re-armed.
        assert_eq!(c.next_sample_reset(), Some(ms(1250)));
        c.advance(ms(1250));
        assert_eq!(c.next_sample_reset(), None);
        assert_eq!(c.limit(), 3);
        let mut rng = Script(vec![0]);
        for t in [1260, 1270, 1280, 1290] {
            c.on_sample(ms(t), ms(4), 0, false, &mut rng);
        }
        // Five samples: 3000, 4000 × 4 µs. qn = 2.5: [3000, 3100) holds 1,
        // [4000, 4100) holds 4; k = ⌈1.5⌉ = 2: 4000 + 2/5 · 100 = 4040 µs.
        assert_eq!(c.min_rtt(), Nanos(4_040_000));
        assert_eq!(c.limit(), 15, "the saved limit is restored");
        assert_eq!(c.next_min_rtt_window(), Some(ms(2290)), "jitter 0 % 150");
        assert_eq!(c.next_sample_reset(), Some(ms(1390)));
    }

    #[test]
    fn five_sample_windows_at_min_concurrency_reopen_the_minrtt_window_at_once() {
        let mut c = measured(cfg(), 0);
        // Each window: 2 × 40 ms → 40 333 µs; gradient 0.5: 3 · 0.5 = 1.5 +
        // 1.22 = 2.72 → 2 → max(3, 2) = 3. Old 3 and new 3 at the minimum,
        // outside a minRTT window: the count goes 1, 2, 3, 4, 5.
        for end in [150, 250, 350, 450] {
            c.on_sample(ms(end - 50), ms(40), 0, false, &mut none());
            c.on_sample(ms(end - 40), ms(40), 0, false, &mut none());
            c.advance(ms(end));
            assert_eq!(c.limit(), 3);
            assert!(!c.in_min_rtt_sampling_window());
            assert_eq!(c.next_min_rtt_window(), Some(ms(1050)));
        }
        c.on_sample(ms(500), ms(40), 0, false, &mut none());
        c.on_sample(ms(510), ms(40), 0, false, &mut none());
        // The fifth: enableTimer(0) — the window opens at 550 itself.
        c.advance(ms(550));
        assert!(c.in_min_rtt_sampling_window());
        assert_eq!(c.next_min_rtt_window(), None);
        assert_eq!(c.limit(), 3);
    }

    #[test]
    fn jitter_adds_a_draw_modulo_the_jitter_range_and_none_at_zero() {
        // ⌈1000 · 0.15⌉ = 150: a draw of 149 adds 149 ms, 150 adds none.
        assert_eq!(measured(cfg(), 149).next_min_rtt_window(), Some(ms(1199)));
        assert_eq!(measured(cfg(), 150).next_min_rtt_window(), Some(ms(1050)));
        // 0 %: no draw at all (the script is empty) and exactly the interval.
        let mut c = EnvoyGradient::new(cfg().jitter(0.0), Nanos::ZERO);
        for t in [10, 20, 30, 40, 50] {
            c.on_sample(ms(t), ms(10), 0, false, &mut none());
        }
        assert_eq!(c.next_min_rtt_window(), Some(ms(1050)));
        // 1 % of 1000 ms: range 10; a draw of 1234 adds 4.
        assert_eq!(
            measured(cfg().jitter(1.0), 1234).next_min_rtt_window(),
            Some(ms(1054))
        );
    }

    #[test]
    fn the_limit_is_clamped_to_max_concurrency_limit() {
        let mut c = measured(cfg().max_concurrency_limit(7).unwrap(), 0);
        for end in [150, 250] {
            for i in 0..4 {
                c.on_sample(ms(end - 90 + 10 * i), ms(10), 0, false, &mut none());
            }
            c.advance(ms(end));
        }
        // 3 → 5 → 8 unclamped (see the conformance vector); min(7, 8) = 7.
        assert_eq!(c.limit(), 7);
    }

    #[test]
    fn the_percentile_picks_the_sample_rtt() {
        // The minRTT is a p90 too: qn = 4.5 in one bin of 5, k = 5:
        // 10 000 + 5/6 · 1000 → 10 833 µs.
        let mut c = measured(cfg().sample_aggregate_percentile(90.0), 0);
        assert_eq!(c.min_rtt(), Nanos(10_833_000));
        // p90 of 5 × 10 ms and 5 × 12 ms: qn = 9, the [12 000, 13 000) bin
        // (lower 5), k = 4, n = 5: 12 000 + 4/6 · 1000 = 12 666 µs.
        for i in 0..5 {
            c.on_sample(ms(60 + i), ms(10), 0, false, &mut none());
            c.on_sample(ms(70 + i), ms(12), 0, false, &mut none());
        }
        c.advance(ms(150));
        assert_eq!(c.sample_rtt(), Nanos(12_666_000));
        // Percentages are clamped to [0, 100]: 250 % is p100.
        assert_eq!(fraction(250.0), 1.0);
        assert_eq!(fraction(-5.0), 0.0);
        assert_eq!(fraction(f64::NAN), 0.0);
    }

    #[test]
    fn a_zero_sample_rtt_makes_an_infinite_gradient_clamped_to_two() {
        // Sub-microsecond responses are 0 µs: quantile 0, sample RTT 0;
        // 13 125 000 / 0 = ∞ → min(2.0, ∞) = 2: 3 · 2 = 6 + √6 → 8.
        let mut c = measured(cfg(), 0);
        c.on_sample(ms(60), Nanos(999), 0, false, &mut none());
        c.advance(ms(150));
        assert_eq!(c.sample_rtt(), Nanos::ZERO);
        assert_eq!(c.limit(), 8);
        assert_eq!(cpp_max(0.5, cpp_min(2.0, f64::NAN)), 2.0);
    }

    proptest::proptest! {
        /// Whatever the responses, the limit stays within
        /// [min_concurrency, max_concurrency_limit], and the same seed gives
        /// the same limits.
        #[test]
        fn envoy_gradient_stays_within_its_bounds_and_repeats_with_its_seed(
            seed in 0u64..1000,
            samples in proptest::collection::vec((0u64..50_000_000, 0u64..300_000_000), 1..400),
        ) {
            use rand::SeedableRng;
            let run = || {
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
                let cfg = cfg().max_concurrency_limit(40).unwrap();
                let mut c = EnvoyGradient::new(cfg, Nanos::ZERO);
                let (mut now, mut limits) = (0u64, Vec::new());
                for &(dt, rtt) in &samples {
                    now += dt;
                    c.on_sample(Nanos(now), Nanos(rtt), 0, false, &mut rng);
                    limits.push(c.limit());
                }
                limits
            };
            let limits = run();
            proptest::prop_assert!(limits.iter().all(|l| (3..=40).contains(l)));
            proptest::prop_assert_eq!(limits, run());
        }
    }
}
