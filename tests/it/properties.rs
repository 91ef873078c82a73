//! Property tests of the limiters' decision rules (docs/semantics.md §1–2) and of
//! the variants real libraries use (§5).
//!
//! Random traces — sorted `(time_ns, key, cost)` triples over a few seconds,
//! with many equal and nanosecond-adjacent times and arrivals snapped to window
//! and fill boundaries — are fed to random small configurations of every
//! algorithm. The properties are exact: every bound is checked in integers.

use proptest::prelude::*;
use ratesim::clock::{parse_duration, parse_rate, Nanos, Rate};
use ratesim::limiter::chain::{Chain, ChainMode};
use ratesim::limiter::{
    fixed_window, gcra, interval_bucket, leaky_bucket, sliding_counter, sliding_log, smooth_bursty,
    token_bucket, Decision, Limiter,
};

// ---------------------------------------------------------------------------
// Traces
// ---------------------------------------------------------------------------

/// One attempt: arrival time, key, cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ev {
    t: u64,
    key: u32,
    cost: u64,
}

/// How the next arrival follows the previous one.
#[derive(Debug, Clone, Copy)]
enum Gap {
    /// `gap` ns later (0 = the same nanosecond).
    Plus(u64),
    /// At the next multiple of `period` strictly after the previous arrival,
    /// shifted by `offset` ns (−1, 0 or +1) but never before it.
    Snap { period: u64, offset: i64 },
}

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;

/// Boundaries worth landing on: windows, fill intervals and emission intervals
/// of the configurations below (1/3 s and 1/7 s are not whole nanoseconds).
const SNAP_PERIODS: &[u64] = &[
    10 * MS,
    50 * MS,
    100 * MS,
    250 * MS,
    333_333_333,
    142_857_143,
    SEC,
];

fn gap() -> impl Strategy<Value = Gap> {
    prop_oneof![
        4 => Just(Gap::Plus(0)),
        2 => (1u64..=3).prop_map(Gap::Plus),
        2 => (1u64..=50 * MS).prop_map(Gap::Plus),
        2 => (1u64..=400 * MS).prop_map(Gap::Plus),
        2 => (prop::sample::select(SNAP_PERIODS), -1i64..=1)
            .prop_map(|(period, offset)| Gap::Snap { period, offset }),
    ]
}

/// A sorted trace of up to `max_len` attempts on keys 0..3 with costs
/// 1..=`max_cost`.
fn trace(max_len: usize, max_cost: u64) -> impl Strategy<Value = Vec<Ev>> {
    prop::collection::vec((gap(), 0u32..3, 1..=max_cost), 0..=max_len).prop_map(|steps| {
        let mut t = 0u64;
        steps
            .into_iter()
            .map(|(g, key, cost)| {
                t = match g {
                    Gap::Plus(d) => t + d,
                    Gap::Snap { period, offset } => {
                        let next = (t / period + 1) * period;
                        t.max(next.saturating_add_signed(offset))
                    }
                };
                Ev { t, key, cost }
            })
            .collect()
    })
}

// ---------------------------------------------------------------------------
// Configurations
// ---------------------------------------------------------------------------

const RATES: &[&str] = &["3/1s", "7/1s", "10/1s", "100/1s", "1/50ms"];
const WINDOWS: &[&str] = &["1s", "250ms", "100ms", "333333333ns"];
const FILL_INTERVALS: &[&str] = &["50ms", "100ms", "250ms", "1s", "333333333ns"];

fn rate() -> impl Strategy<Value = Rate> {
    prop::sample::select(RATES).prop_map(|r| parse_rate(r).unwrap())
}

fn window() -> impl Strategy<Value = Nanos> {
    prop::sample::select(WINDOWS).prop_map(|w| parse_duration(w).unwrap())
}

/// A limiter configuration of any of the eight algorithms.
#[derive(Debug, Clone, Copy)]
enum Algo {
    TokenBucket(token_bucket::Config),
    Gcra(gcra::Config),
    Interval(interval_bucket::Config),
    Leaky(leaky_bucket::Config),
    Fixed(fixed_window::Config),
    Log(sliding_log::Config),
    Counter(sliding_counter::Config),
    Bursty(smooth_bursty::Config),
}

impl Algo {
    fn build(&self) -> Box<dyn Limiter> {
        match *self {
            Algo::TokenBucket(c) => token_bucket::boxed(c),
            Algo::Gcra(c) => Box::new(gcra::Gcra::new(c)),
            Algo::Interval(c) => Box::new(interval_bucket::IntervalBucket::new(c)),
            Algo::Leaky(c) => leaky_bucket::boxed(c),
            Algo::Fixed(c) => Box::new(fixed_window::FixedWindow::new(c)),
            Algo::Log(c) => Box::new(sliding_log::SlidingLog::new(c)),
            Algo::Counter(c) => Box::new(sliding_counter::SlidingCounter::new(c)),
            Algo::Bursty(c) => Box::new(smooth_bursty::SmoothBursty::new(c)),
        }
    }

    /// The largest cost that can ever pass; `None` if any cost eventually can
    /// (the shaper queues whatever it is given).
    fn max_cost(&self) -> Option<u64> {
        match *self {
            Algo::TokenBucket(c) => Some(c.capacity),
            Algo::Gcra(c) => Some(c.burst),
            Algo::Interval(c) => Some(c.max_tokens),
            Algo::Leaky(_) => None,
            Algo::Fixed(c) => Some(c.limit),
            Algo::Log(c) => Some(c.limit),
            Algo::Counter(c) => Some(c.limit),
            // Admits any cost while no debt is outstanding.
            Algo::Bursty(_) => None,
        }
    }
}

fn token_bucket_cfg() -> impl Strategy<Value = token_bucket::Config> {
    (1u64..=5, rate()).prop_map(|(capacity, rate)| token_bucket::Config { capacity, rate })
}

fn gcra_cfg() -> impl Strategy<Value = gcra::Config> {
    (1u64..=5, rate()).prop_map(|(burst, rate)| gcra::Config { burst, rate })
}

fn interval_cfg() -> impl Strategy<Value = interval_bucket::Config> {
    (1u64..=5, 1u64..=3, prop::sample::select(FILL_INTERVALS)).prop_map(|(max, per, i)| {
        interval_bucket::Config {
            max_tokens: max,
            tokens_per_fill: per,
            fill_interval: parse_duration(i).unwrap(),
        }
    })
}

/// Shapers with `0 ≤ delay ≤ queue` (nginx's `delay=` up to `nodelay`).
fn leaky_cfg() -> impl Strategy<Value = leaky_bucket::Config> {
    (rate(), 0u64..=4)
        .prop_flat_map(|(rate, queue)| (Just(rate), Just(queue), 0..=queue))
        .prop_map(|(rate, queue, delay)| leaky_bucket::Config {
            rate,
            queue,
            delay,
            arithmetic: leaky_bucket::Arithmetic::Exact,
        })
}

/// The same shapers computed in nginx's integers.
fn nginx_cfg() -> impl Strategy<Value = leaky_bucket::Config> {
    leaky_cfg().prop_map(|c| leaky_bucket::Config {
        arithmetic: leaky_bucket::Arithmetic::Nginx,
        ..c
    })
}

fn fixed_cfg(count_rejected: bool) -> impl Strategy<Value = fixed_window::Config> {
    aligned_cfg(count_rejected, fixed_window::Align::Epoch)
}

fn aligned_cfg(
    count_rejected: bool,
    align: fixed_window::Align,
) -> impl Strategy<Value = fixed_window::Config> {
    (1u64..=6, window()).prop_map(move |(limit, window)| fixed_window::Config {
        limit,
        window,
        count_rejected,
        align,
    })
}

fn first_hit_cfg() -> impl Strategy<Value = fixed_window::Config> {
    any::<bool>().prop_flat_map(|cr| aligned_cfg(cr, fixed_window::Align::FirstHit))
}

fn log_cfg(count_rejected: bool) -> impl Strategy<Value = sliding_log::Config> {
    bounded_log_cfg(count_rejected, sliding_log::BoundaryRule::Exclusive)
}

fn bounded_log_cfg(
    count_rejected: bool,
    boundary: sliding_log::BoundaryRule,
) -> impl Strategy<Value = sliding_log::Config> {
    (1u64..=6, window()).prop_map(move |(limit, window)| sliding_log::Config {
        limit,
        window,
        count_rejected,
        boundary,
    })
}

fn counter_cfg(count_rejected: bool) -> impl Strategy<Value = sliding_counter::Config> {
    weighted_counter_cfg(count_rejected, sliding_counter::Weight::Exact)
}

fn weighted_counter_cfg(
    count_rejected: bool,
    weight: sliding_counter::Weight,
) -> impl Strategy<Value = sliding_counter::Config> {
    (1u64..=6, window()).prop_map(move |(limit, window)| sliding_counter::Config {
        limit,
        window,
        count_rejected,
        weight,
    })
}

fn align() -> impl Strategy<Value = fixed_window::Align> {
    prop_oneof![
        Just(fixed_window::Align::Epoch),
        Just(fixed_window::Align::FirstHit)
    ]
}

fn boundary() -> impl Strategy<Value = sliding_log::BoundaryRule> {
    prop_oneof![
        Just(sliding_log::BoundaryRule::Exclusive),
        Just(sliding_log::BoundaryRule::Inclusive)
    ]
}

fn weight() -> impl Strategy<Value = sliding_counter::Weight> {
    prop_oneof![
        Just(sliding_counter::Weight::Exact),
        Just(sliding_counter::Weight::Floor)
    ]
}

fn bursty_cfg() -> impl Strategy<Value = smooth_bursty::Config> {
    (
        rate(),
        1u64..=5,
        prop_oneof![
            Just(smooth_bursty::Start::Empty),
            Just(smooth_bursty::Start::Full)
        ],
    )
        .prop_map(|(rate, capacity, start)| smooth_bursty::Config {
            rate,
            capacity,
            start,
        })
}

/// Any fixed window, sliding log or sliding counter, with or without
/// `count_rejected`, in any of its variants.
fn any_window_variant() -> impl Strategy<Value = Algo> {
    prop_oneof![
        (any::<bool>(), align())
            .prop_flat_map(|(cr, a)| aligned_cfg(cr, a))
            .prop_map(Algo::Fixed),
        (any::<bool>(), boundary())
            .prop_flat_map(|(cr, b)| bounded_log_cfg(cr, b))
            .prop_map(Algo::Log),
        (any::<bool>(), weight())
            .prop_flat_map(|(cr, w)| weighted_counter_cfg(cr, w))
            .prop_map(Algo::Counter),
    ]
}

/// Any algorithm, including the `count_rejected` variants and every knob
/// of docs/semantics.md §5.
fn any_algo() -> impl Strategy<Value = Algo> {
    prop_oneof![
        token_bucket_cfg().prop_map(Algo::TokenBucket),
        gcra_cfg().prop_map(Algo::Gcra),
        interval_cfg().prop_map(Algo::Interval),
        leaky_cfg().prop_map(Algo::Leaky),
        nginx_cfg().prop_map(Algo::Leaky),
        any_window_variant(),
        any_window_variant(),
        bursty_cfg().prop_map(Algo::Bursty),
    ]
}

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

fn run(limiter: &mut dyn Limiter, trace: &[Ev]) -> Vec<Decision> {
    trace
        .iter()
        .map(|e| limiter.decide(e.key, Nanos(e.t), e.cost))
        .collect()
}

fn decisions(algo: &Algo, trace: &[Ev]) -> Vec<Decision> {
    run(algo.build().as_mut(), trace)
}

/// `(pass time, cost)` of every attempt on `key` that passed, in trace order.
/// A delayed attempt passes at arrival + delay.
fn passes_of(trace: &[Ev], ds: &[Decision], key: u32) -> Vec<(u64, u64)> {
    trace
        .iter()
        .zip(ds)
        .filter(|(e, _)| e.key == key)
        .filter_map(|(e, d)| match *d {
            Decision::Admitted => Some((e.t, e.cost)),
            Decision::Delayed { delay } => Some((e.t + delay.0, e.cost)),
            Decision::Rejected { .. } => None,
        })
        .collect()
}

/// Total cost passed at times in `[lo, hi]`.
fn cost_in(passes: &[(u64, u64)], lo: u64, hi: u64) -> u64 {
    passes
        .iter()
        .filter(|&&(t, _)| lo <= t && t <= hi)
        .map(|&(_, c)| c)
        .sum()
}

/// The largest cost passed within a half-open `(s − w, s]`, and one `s`
/// attaining it (the maximum is attained at some pass time).
fn peak_in_sliding_window(passes: &[(u64, u64)], w: u64) -> (u64, u64) {
    passes
        .iter()
        .map(|&(s, _)| (cost_in(passes, (s + 1).saturating_sub(w), s), s))
        .max()
        .unwrap_or((0, 0))
}

// ---------------------------------------------------------------------------
// 1. GCRA ≡ token bucket
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn gcra_decides_exactly_as_a_token_bucket_with_capacity_equal_to_burst(
        cfg in gcra_cfg(),
        trace in trace(60, 4),
    ) {
        let g = decisions(&Algo::Gcra(cfg), &trace);
        let tb = decisions(
            &Algo::TokenBucket(token_bucket::Config { capacity: cfg.burst, rate: cfg.rate }),
            &trace,
        );
        for (i, (a, b)) in g.iter().zip(&tb).enumerate() {
            prop_assert_eq!(a, b, "attempt {} {:?}", i, trace[i]);
        }
    }
}

// ---------------------------------------------------------------------------
// 2. Bounds on what passes, per key
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn a_token_bucket_never_passes_more_than_capacity_plus_rate_times_the_interval(
        cfg in token_bucket_cfg(),
        trace in trace(60, 3),
    ) {
        let ds = decisions(&Algo::TokenBucket(cfg), &trace);
        let (n, d) = (cfg.rate.tokens(), cfg.rate.per_ns());
        for key in 0..3 {
            let p = passes_of(&trace, &ds, key);
            for &(a, _) in &p {
                for &(b, _) in p.iter().filter(|&&(b, _)| b >= a) {
                    // cost ≤ capacity + (n/d)·(b − a), multiplied by d.
                    let cost = cost_in(&p, a, b) as u128;
                    prop_assert!(
                        cost * d <= cfg.capacity as u128 * d + n * (b - a) as u128,
                        "key {} passed {} in [{}, {}]", key, cost, a, b
                    );
                }
            }
        }
    }

    #[test]
    fn a_sliding_log_never_passes_more_than_its_limit_in_any_window(
        cfg in any::<bool>().prop_flat_map(log_cfg),
        trace in trace(60, 3),
    ) {
        let ds = decisions(&Algo::Log(cfg), &trace);
        for key in 0..3 {
            let p = passes_of(&trace, &ds, key);
            let (peak, s) = peak_in_sliding_window(&p, cfg.window.0);
            prop_assert!(peak <= cfg.limit, "key {} passed {} in (s − W, s], s = {}", key, peak, s);
        }
    }

    #[test]
    fn a_fixed_window_passes_at_most_its_limit_per_aligned_window_and_twice_it_in_any_window(
        cfg in any::<bool>().prop_flat_map(fixed_cfg),
        trace in trace(60, 3),
    ) {
        let ds = decisions(&Algo::Fixed(cfg), &trace);
        let w = cfg.window.0;
        for key in 0..3 {
            let p = passes_of(&trace, &ds, key);
            for &(t, _) in &p {
                let k = t / w;
                let aligned = cost_in(&p, k * w, (k + 1) * w - 1);
                prop_assert!(aligned <= cfg.limit, "key {} passed {} in window {}", key, aligned, k);
            }
            let (peak, s) = peak_in_sliding_window(&p, w);
            prop_assert!(peak <= 2 * cfg.limit, "key {} passed {} in (s − W, s], s = {}", key, peak, s);
        }
    }

    #[test]
    fn a_sliding_counter_passes_at_most_its_limit_per_aligned_window(
        cfg in any::<bool>().prop_flat_map(counter_cfg),
        trace in trace(60, 3),
    ) {
        let ds = decisions(&Algo::Counter(cfg), &trace);
        let w = cfg.window.0;
        for key in 0..3 {
            let p = passes_of(&trace, &ds, key);
            for &(t, _) in &p {
                let k = t / w;
                let aligned = cost_in(&p, k * w, (k + 1) * w - 1);
                prop_assert!(aligned <= cfg.limit, "key {} passed {} in window {}", key, aligned, k);
            }
        }
    }

    #[test]
    fn an_interval_bucket_passes_at_most_max_tokens_plus_the_fills_in_between(
        cfg in interval_cfg(),
        trace in trace(60, 3),
    ) {
        let ds = decisions(&Algo::Interval(cfg), &trace);
        let i = cfg.fill_interval.0;
        for key in 0..3 {
            let p = passes_of(&trace, &ds, key);
            for &(a, _) in &p {
                for &(b, _) in p.iter().filter(|&&(b, _)| b >= a) {
                    // Fill moments k·I (k ≥ 1) in (a, b].
                    let fills = b / i - a / i;
                    let bound = cfg.max_tokens + cfg.tokens_per_fill * fills;
                    let cost = cost_in(&p, a, b);
                    prop_assert!(cost <= bound, "key {} passed {} in [{}, {}], bound {}", key, cost, a, b, bound);
                }
            }
        }
    }

    /// With `T = 1/rate` and `D = delay`: accepted slots are spaced by at least
    /// the previous cost·T, and each passes no earlier than `slot − D·T`. So
    /// the requests passing within `(s − W, s]` have slots within
    /// `(s − W, s + D·T]`, and all but the last of them sum to less than
    /// `rate·W + D`. For cost-1 requests that is at most
    /// `delay + 1 + ceil(rate·W) ≤ queue + 1 + ceil(rate·W)`.
    #[test]
    fn a_leaky_bucket_releases_at_most_queue_plus_one_plus_rate_times_any_window(
        cfg in leaky_cfg(),
        w in prop::sample::select(&[10 * MS, 100 * MS, 250 * MS, SEC, 3 * SEC][..]),
        trace in trace(60, 3),
    ) {
        let ds = decisions(&Algo::Leaky(cfg), &trace);
        let (n, d) = (cfg.rate.tokens(), cfg.rate.per_ns());
        for key in 0..3 {
            let p = passes_of(&trace, &ds, key);
            // Pass times of accepted requests never go backwards.
            prop_assert!(p.windows(2).all(|x| x[0].0 <= x[1].0), "key {} passes {:?}", key, p);
            for (j, &(s, _)) in p.iter().enumerate() {
                // The window (s − W, s] ending at the j-th pass, taking every
                // pass at s (the last of them is the latest slot).
                let last = p.iter().rposition(|&(t, _)| t == s).unwrap();
                if last != j {
                    continue;
                }
                let lo = (s + 1).saturating_sub(w);
                let total = cost_in(&p, lo, s) as u128;
                let last_cost = p[last].1 as u128;
                prop_assert!(
                    (total - last_cost) * d < n * w as u128 + cfg.delay as u128 * d,
                    "key {} passed {} (last cost {}) in ({}, {}]", key, total, last_cost, s as i128 - w as i128, s
                );
                // The coarser bound as usually stated, in cost units.
                let rate_w = (n * w as u128).div_ceil(d);
                prop_assert!(total <= cfg.queue as u128 + last_cost + rate_w);
            }
        }
    }

    #[test]
    fn a_leaky_bucket_without_delay_releases_each_key_at_most_at_its_rate(
        rate in rate(),
        queue in 0u64..=4,
        trace in trace(60, 3),
    ) {
        let cfg = leaky_bucket::Config { rate, queue, delay: 0, arithmetic: leaky_bucket::Arithmetic::Exact };
        let ds = decisions(&Algo::Leaky(cfg), &trace);
        let (n, d) = (rate.tokens(), rate.per_ns());
        for key in 0..3 {
            let p = passes_of(&trace, &ds, key);
            for x in p.windows(2) {
                let ((r0, c0), (r1, _)) = (x[0], x[1]);
                prop_assert!(r1 >= r0, "key {}: release {} after {}", key, r1, r0);
                // Exact slots are ≥ c0/rate apart; releases are the slots
                // rounded up to whole ns, so they are ≥ ⌊c0/rate⌋ apart (and
                // exactly c0/rate when that is whole): (r1 − r0 + 1)·n > c0·d.
                prop_assert!(
                    (r1 - r0 + 1) as u128 * n > c0 as u128 * d,
                    "key {}: releases {} and {} closer than {} / {}", key, r0, r1, c0, rate
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------
// 2b. The rules of docs/semantics.md §2, restated and checked per attempt
// ---------------------------------------------------------------------------

/// The three window algorithms, with and without `count_rejected`.
fn window_algo() -> impl Strategy<Value = Algo> {
    prop_oneof![
        any::<bool>().prop_flat_map(fixed_cfg).prop_map(Algo::Fixed),
        any::<bool>().prop_flat_map(log_cfg).prop_map(Algo::Log),
        any::<bool>()
            .prop_flat_map(counter_cfg)
            .prop_map(Algo::Counter),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Each attempt is admitted iff the rule holds over the cost counted so
    /// far for its key: the admitted cost, or with `count_rejected` the cost
    /// of every earlier attempt (a counted rejection counts like an admission).
    ///
    /// The variants of docs/semantics.md §5 restated too: a first-hit window is the one
    /// the key's earlier attempts opened (`[s, s + W)`, a new one at `t` once
    /// `t ≥ s + W`); an inclusive log counts entries with `t' ≥ t − W`; a
    /// floored counter admits iff `⌊p·(W − e)/W⌋ + c + cost ≤ limit`.
    #[test]
    fn window_limiters_admit_exactly_when_the_counted_cost_leaves_room(
        algo in prop_oneof![window_algo(), any_window_variant()],
        trace in trace(60, 3),
    ) {
        let ds = decisions(&algo, &trace);
        let (limit, w, count_rejected) = match algo {
            Algo::Fixed(c) => (c.limit, c.window.0, c.count_rejected),
            Algo::Log(c) => (c.limit, c.window.0, c.count_rejected),
            Algo::Counter(c) => (c.limit, c.window.0, c.count_rejected),
            _ => unreachable!(),
        };
        // First-hit window start per key, as the attempts so far opened them.
        let mut opened: [Option<u64>; 3] = [None; 3];
        for (i, e) in trace.iter().enumerate() {
            let counted = |keep: &dyn Fn(u64) -> bool| -> u64 {
                trace[..i]
                    .iter()
                    .zip(&ds)
                    .filter(|(x, d)| x.key == e.key && (count_rejected || d.passes()) && keep(x.t))
                    .map(|(x, _)| x.cost)
                    .sum()
            };
            let k = e.t / w;
            let admit = match algo {
                Algo::Fixed(c) if c.align == fixed_window::Align::FirstHit => {
                    let slot = &mut opened[e.key as usize];
                    let s = match *slot {
                        Some(s) if e.t < s + w => s,
                        _ => e.t,
                    };
                    *slot = Some(s);
                    counted(&|t| t >= s) + e.cost <= limit
                }
                Algo::Fixed(_) => counted(&|t| t / w == k) + e.cost <= limit,
                Algo::Log(c) if c.boundary == sliding_log::BoundaryRule::Inclusive => {
                    counted(&|t| t + w >= e.t) + e.cost <= limit
                }
                Algo::Log(_) => counted(&|t| t + w > e.t) + e.cost <= limit,
                Algo::Counter(cfg) => {
                    let offset = (e.t - k * w) as u128;
                    let p = counted(&|t| t / w + 1 == k) as u128;
                    let c = counted(&|t| t / w == k) as u128;
                    let w = w as u128;
                    match cfg.weight {
                        sliding_counter::Weight::Exact => {
                            p * (w - offset) + (c + e.cost as u128) * w <= limit as u128 * w
                        }
                        sliding_counter::Weight::Floor => {
                            p * (w - offset) / w + c + e.cost as u128 <= limit as u128
                        }
                    }
                }
                _ => unreachable!(),
            };
            prop_assert!(
                !matches!(ds[i], Decision::Delayed { .. }),
                "attempt {} {:?} delayed by a window limiter", i, e
            );
            prop_assert_eq!(ds[i].passes(), admit, "attempt {} {:?}: {:?}", i, e, ds[i]);
        }
    }

    /// The shaper's rule, replayed exactly in the test (times × rate
    /// numerator): slot = max(t, next_free); admitted if slot = t; rejected
    /// iff `waiting ≥ queue` otherwise; an accepted request passes at
    /// max(t, slot − delay/rate), rounded up to whole ns.
    #[test]
    fn a_leaky_bucket_accepts_and_releases_each_request_exactly_by_its_slot(
        cfg in leaky_cfg(),
        trace in trace(60, 3),
    ) {
        let ds = decisions(&Algo::Leaky(cfg), &trace);
        let (n, d) = (cfg.rate.tokens(), cfg.rate.per_ns());
        for key in 0..3 {
            let mut next_free = 0u128;
            let mut slots: Vec<u128> = Vec::new();
            for (e, dec) in trace.iter().zip(&ds).filter(|(e, _)| e.key == key) {
                let t = e.t as u128 * n;
                let slot = t.max(next_free);
                let waiting = slots.iter().filter(|&&s| s > t).count() as u64;
                let accepted = slot == t || waiting < cfg.queue;
                prop_assert_eq!(dec.passes(), accepted, "{:?}: {:?} (waiting {})", e, dec, waiting);
                if !accepted {
                    continue;
                }
                let passes = t.max(slot.saturating_sub(cfg.delay as u128 * d));
                let delay = (passes - t).div_ceil(n) as u64;
                let expected = if delay == 0 {
                    Decision::Admitted
                } else {
                    Decision::Delayed { delay: Nanos(delay) }
                };
                prop_assert_eq!(*dec, expected, "{:?}", e);
                slots.push(slot);
                next_free = slot + e.cost as u128 * d;
            }
        }
    }
}

// ---------------------------------------------------------------------------
// 2c. The variants of docs/semantics.md §5
// ---------------------------------------------------------------------------

/// `trace` plus, for every key and every window `k` in which the key has an
/// attempt, an attempt of cost 1 at exactly `k·W` ahead of the key's others
/// there: every key then hits at each window start of every window it is
/// active in.
fn hitting_every_window_start(trace: &[Ev], w: u64) -> Vec<Ev> {
    let mut starts: Vec<(u64, u32)> = trace.iter().map(|e| (e.t / w * w, e.key)).collect();
    starts.sort_unstable();
    starts.dedup();
    let mut out: Vec<(u64, u8, Ev)> = starts
        .into_iter()
        .map(|(t, key)| (t, 0, Ev { t, key, cost: 1 }))
        .chain(trace.iter().map(|e| (e.t, 1, *e)))
        .collect();
    // Stable: original attempts keep their order among equal times.
    out.sort_by_key(|&(t, first, _)| (t, first));
    out.into_iter().map(|(_, _, e)| e).collect()
}

/// `trace` without any attempt exactly `w` after an attempt kept before it.
fn no_two_exactly_apart(trace: &[Ev], w: u64) -> Vec<Ev> {
    let mut kept: Vec<Ev> = Vec::new();
    for e in trace {
        if !kept.iter().any(|k| k.t + w == e.t) {
            kept.push(*e);
        }
    }
    kept
}

/// A trace whose arrivals are whole milliseconds.
fn whole_ms_trace(max_len: usize) -> impl Strategy<Value = Vec<Ev>> {
    prop::collection::vec(
        (
            prop_oneof![3 => Just(0u64), 2 => 1u64..=3, 2 => 1u64..=400, 1 => 90u64..=110],
            0u32..3,
        ),
        0..=max_len,
    )
    .prop_map(|steps| {
        let mut ms = 0u64;
        steps
            .into_iter()
            .map(|(gap, key)| {
                ms += gap;
                Ev {
                    t: ms * MS,
                    key,
                    cost: 1,
                }
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(768))]

    #[test]
    fn first_hit_windows_decide_as_epoch_windows_when_every_key_hits_each_window_start(
        cfg in any::<bool>().prop_flat_map(fixed_cfg),
        trace in trace(50, 3),
    ) {
        let trace = hitting_every_window_start(&trace, cfg.window.0);
        let epoch = decisions(&Algo::Fixed(cfg), &trace);
        let first_hit = decisions(
            &Algo::Fixed(fixed_window::Config { align: fixed_window::Align::FirstHit, ..cfg }),
            &trace,
        );
        prop_assert_eq!(epoch, first_hit);
    }

    #[test]
    fn a_first_hit_window_passes_at_most_twice_its_limit_in_any_window(
        cfg in first_hit_cfg(),
        trace in trace(60, 3),
    ) {
        let ds = decisions(&Algo::Fixed(cfg), &trace);
        for key in 0..3 {
            let p = passes_of(&trace, &ds, key);
            let (peak, s) = peak_in_sliding_window(&p, cfg.window.0);
            prop_assert!(peak <= 2 * cfg.limit, "key {} passed {} in (s − W, s], s = {}", key, peak, s);
        }
    }

    /// With `start = "full"` the balance `T` of a smooth bursty limiter is
    /// a token bucket's balance minus one: admitting iff `T ≥ 0` is holding
    /// one token, and the cap `capacity` on `T` is `capacity + 1` on tokens.
    /// (With `start = "empty"` it is the same bucket holding 1 token at first.)
    #[test]
    fn smooth_bursty_started_full_with_unit_costs_decides_as_a_token_bucket_of_capacity_plus_one(
        cfg in bursty_cfg(),
        trace in trace(60, 1),
    ) {
        let cfg = smooth_bursty::Config { start: smooth_bursty::Start::Full, ..cfg };
        let bursty = decisions(&Algo::Bursty(cfg), &trace);
        let bucket = decisions(
            &Algo::TokenBucket(token_bucket::Config { capacity: cfg.capacity + 1, rate: cfg.rate }),
            &trace,
        );
        for (i, (a, b)) in bursty.iter().zip(&bucket).enumerate() {
            prop_assert_eq!(a, b, "attempt {} {:?}", i, trace[i]);
        }
    }

    #[test]
    fn smooth_bursty_admits_whenever_no_debt_is_outstanding_whatever_the_cost(
        cfg in bursty_cfg(),
        trace in trace(40, 12),
    ) {
        // Replayed in the test: T·d in integers.
        let ds = decisions(&Algo::Bursty(cfg), &trace);
        let (n, d) = (cfg.rate.tokens() as i128, cfg.rate.per_ns() as i128);
        let full = cfg.capacity as i128 * d;
        let mut state: [Option<(i128, u64)>; 3] = [None; 3];
        for (e, dec) in trace.iter().zip(&ds) {
            let start = if cfg.start == smooth_bursty::Start::Full { full } else { 0 };
            let (t0, last) = state[e.key as usize].unwrap_or((start, e.t));
            let t = full.min(t0 + (e.t - last) as i128 * n);
            let expected = if t >= 0 {
                Decision::Admitted
            } else {
                Decision::Rejected { retry_after: Some(Nanos(((-t) as u128).div_ceil(n as u128) as u64)) }
            };
            prop_assert_eq!(*dec, expected, "{:?}", e);
            let after = if t >= 0 { t - e.cost as i128 * d } else { t };
            state[e.key as usize] = Some((after, e.t));
        }
    }

    #[test]
    fn an_inclusive_log_decides_as_an_exclusive_one_when_no_two_arrivals_are_exactly_a_window_apart(
        cfg in any::<bool>().prop_flat_map(log_cfg),
        trace in trace(60, 3),
    ) {
        let trace = no_two_exactly_apart(&trace, cfg.window.0);
        let exclusive = decisions(&Algo::Log(cfg), &trace);
        let inclusive = decisions(
            &Algo::Log(sliding_log::Config { boundary: sliding_log::BoundaryRule::Inclusive, ..cfg }),
            &trace,
        );
        for (i, (x, y)) in exclusive.iter().zip(&inclusive).enumerate() {
            prop_assert_eq!(x.passes(), y.passes(), "attempt {} {:?}", i, trace[i]);
            // The same entry must expire: one nanosecond later.
            if let (
                Decision::Rejected { retry_after: Some(a) },
                Decision::Rejected { retry_after: Some(b) },
            ) = (x, y) {
                prop_assert_eq!(a.0 + 1, b.0, "attempt {} {:?}", i, trace[i]);
            }
        }
    }

    #[test]
    fn an_inclusive_log_never_passes_more_than_its_limit_in_any_closed_window(
        cfg in any::<bool>().prop_flat_map(|cr| bounded_log_cfg(cr, sliding_log::BoundaryRule::Inclusive)),
        trace in trace(60, 3),
    ) {
        let ds = decisions(&Algo::Log(cfg), &trace);
        for key in 0..3 {
            let p = passes_of(&trace, &ds, key);
            // [s − W, s] is (s − W − 1 ns, s].
            let (peak, s) = peak_in_sliding_window(&p, cfg.window.0 + 1);
            prop_assert!(peak <= cfg.limit, "key {} passed {} in [s − W, s], s = {}", key, peak, s);
        }
    }

    #[test]
    fn a_floored_counter_admits_everything_the_exact_one_does_and_never_more_than_its_limit_per_window(
        cfg in counter_cfg(false),
        trace in trace(60, 3),
    ) {
        let floor = sliding_counter::Config { weight: sliding_counter::Weight::Floor, ..cfg };
        let ds = decisions(&Algo::Counter(floor), &trace);
        let w = cfg.window.0;
        for key in 0..3 {
            let p = passes_of(&trace, &ds, key);
            for &(t, _) in &p {
                let k = t / w;
                let aligned = cost_in(&p, k * w, (k + 1) * w - 1);
                prop_assert!(aligned <= cfg.limit, "key {} passed {} in window {}", key, aligned, k);
            }
        }
        // On its own trace the floored rule admits whatever the exact one
        // would, given the same counts (⌊x⌋ ≤ x).
        let exact = decisions(&Algo::Counter(cfg), &trace);
        if let Some(i) = exact.iter().zip(&ds).position(|(x, y)| x.passes() != y.passes()) {
            prop_assert!(ds[i].passes(), "attempt {} {:?}: floor rejects what exact admits", i, trace[i]);
        }
    }

    /// docs/semantics.md §5 says nginx's integers change only the delays.
    /// Exactly: on whole-ms arrivals at `R` r/s (R whole, so `r = 1000·R`
    /// and the leak `⌊r·ms/1000⌋ = R·ms` loses nothing) with cost 1, the
    /// same requests pass; each nginx wait is the exact wait truncated to whole
    /// ms; a rejection retries at the exact retry moment rounded up to a
    /// whole ms. So the outcomes differ exactly where the exact wait is
    /// shorter than 1 ms — never when R divides 1000.
    #[test]
    fn nginx_arithmetic_truncates_the_exact_delays_to_whole_ms_on_whole_ms_traces(
        r in prop::sample::select(&[1u64, 2, 3, 4, 5, 7, 8, 10, 25, 30, 100, 128][..]),
        queue in 0u64..=4,
        delay_frac in 0u64..=4,
        trace in whole_ms_trace(60),
    ) {
        let exact_cfg = leaky_bucket::Config {
            rate: parse_rate(&format!("{r}/1s")).unwrap(),
            queue,
            delay: delay_frac.min(queue),
            arithmetic: leaky_bucket::Arithmetic::Exact,
        };
        let nginx_cfg = leaky_bucket::Config { arithmetic: leaky_bucket::Arithmetic::Nginx, ..exact_cfg };
        let exact = decisions(&Algo::Leaky(exact_cfg), &trace);
        let nginx = decisions(&Algo::Leaky(nginx_cfg), &trace);
        for (i, (x, y)) in exact.iter().zip(&nginx).enumerate() {
            let e = trace[i];
            match (*x, *y) {
                (Decision::Rejected { retry_after: Some(a) }, Decision::Rejected { retry_after: Some(b) }) => {
                    let at = (e.t + a.0).div_ceil(MS) * MS;
                    prop_assert_eq!(e.t + b.0, at, "attempt {} {:?}: retry {:?} vs exact {:?}", i, e, b, a);
                }
                (Decision::Rejected { .. }, _) | (_, Decision::Rejected { .. }) => {
                    prop_assert!(false, "attempt {} {:?}: exact {:?}, nginx {:?}", i, e, x, y);
                }
                _ => {
                    let ns = |d: Decision| match d {
                        Decision::Delayed { delay } => delay.0,
                        _ => 0,
                    };
                    prop_assert_eq!(ns(*y), ns(*x) / MS * MS, "attempt {} {:?}: exact {:?}, nginx {:?}", i, e, x, y);
                    if 1000 % r == 0 {
                        prop_assert_eq!(x, y, "attempt {} {:?}", i, e);
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// 3. Retry-after is exact
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1536))]

    #[test]
    fn every_retry_after_is_the_smallest_wait_after_which_the_same_request_passes(
        algo in any_algo(),
        trace in trace(40, 4),
    ) {
        let ds = decisions(&algo, &trace);
        for (i, (e, d)) in trace.iter().zip(&ds).enumerate() {
            let Decision::Rejected { retry_after } = *d else { continue };
            let never = algo.max_cost().is_some_and(|max| e.cost > max);
            let Some(wait) = retry_after else {
                prop_assert!(never, "attempt {} {:?}: retry_after None for a cost that fits", i, e);
                continue;
            };
            prop_assert!(!never, "attempt {} {:?}: retry_after {:?} for a cost that never fits", i, e, wait);
            prop_assert!(wait.0 >= 1, "attempt {} {:?}: retry_after 0", i, e);
            // Replay up to and including the rejected attempt (so a counted
            // rejection is counted), then the same request `wait` later.
            let retry = |at: u64| {
                let mut l = algo.build();
                run(l.as_mut(), &trace[..=i]);
                l.decide(e.key, Nanos(at), e.cost)
            };
            let on_time = retry(e.t + wait.0);
            prop_assert!(
                on_time.passes(),
                "attempt {} {:?} rejected with retry_after {}, but at +{} got {:?}",
                i, e, wait.0, wait.0, on_time
            );
            if wait.0 > 1 {
                let early = retry(e.t + wait.0 - 1);
                prop_assert!(
                    !early.passes(),
                    "attempt {} {:?} rejected with retry_after {}, but at +{} got {:?}",
                    i, e, wait.0, wait.0 - 1, early
                );
            }
        }
    }

    #[test]
    fn a_request_that_can_never_fit_is_always_rejected_without_a_retry_after(
        algo in any_algo(),
        trace in trace(30, 8),
    ) {
        let ds = decisions(&algo, &trace);
        if let Some(max) = algo.max_cost() {
            for (e, d) in trace.iter().zip(&ds).filter(|(e, _)| e.cost > max) {
                prop_assert_eq!(*d, Decision::Rejected { retry_after: None }, "{:?}", e);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// 5 and 6. Determinism and independent keys
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_same_trace_fed_twice_to_fresh_limiters_gives_identical_decisions(
        algo in any_algo(),
        trace in trace(60, 4),
    ) {
        prop_assert_eq!(decisions(&algo, &trace), decisions(&algo, &trace));
    }

    #[test]
    fn other_keys_traffic_never_changes_a_keys_decisions(
        algo in any_algo(),
        trace in trace(60, 4),
    ) {
        let together = decisions(&algo, &trace);
        for key in 0..3 {
            let alone: Vec<Ev> = trace.iter().copied().filter(|e| e.key == key).collect();
            let mine: Vec<Decision> = trace
                .iter()
                .zip(&together)
                .filter(|(e, _)| e.key == key)
                .map(|(_, d)| *d)
                .collect();
            prop_assert_eq!(decisions(&algo, &alone), mine, "key {}", key);
        }
    }
}

// ---------------------------------------------------------------------------
// 7. State accounting: a key counts exactly while it differs from a fresh one
// ---------------------------------------------------------------------------

impl Algo {
    /// Requests, as (ns after the probe moment, cost), that a key decides
    /// differently from a fresh key whenever its state is not
    /// fresh-equivalent: one of the largest cost for the counters and
    /// buckets; `queue + 1` of cost 1 for the shaper (a fresh key accepts
    /// them all); `capacity + 1` of cost 1 for a smooth bursty bucket
    /// started full (a fresh one admits them all). A first-hit window also
    /// gets a request just before the window a fresh key would open ends: an
    /// open window with count 0 admits like a fresh key but ends sooner.
    fn probe(&self) -> Vec<(u64, u64)> {
        match *self {
            Algo::Leaky(c) => vec![(0, 1); c.queue as usize + 1],
            Algo::Bursty(c) => vec![(0, 1); c.capacity as usize + 1],
            Algo::Fixed(c) if c.align == fixed_window::Align::FirstHit => {
                vec![(0, c.limit), (c.window.0 - 1, 1)]
            }
            _ => vec![(0, self.max_cost().unwrap_or(1))],
        }
    }

    /// Whether a key may be declared alive for good although some instant
    /// finds it equivalent to a fresh one: a smooth bursty bucket started
    /// empty never returns to its fresh state for good (docs/semantics.md
    /// §6: its script sets no expiry), though a probe may find no difference while
    /// it holds less than one token.
    fn held_for_good(&self) -> bool {
        matches!(self, Algo::Bursty(c) if c.start == smooth_bursty::Start::Empty)
    }

    /// Whether `cost` is a request this algorithm's fresh-key rule speaks
    /// of: nginx has no request cost, and its key is fresh-equivalent for
    /// requests of cost 1 only (the first request of a key passes whatever
    /// it costs).
    fn costs_one_only(&self) -> bool {
        matches!(self, Algo::Leaky(c) if c.arithmetic == leaky_bucket::Arithmetic::Nginx)
    }

    /// Compact bytes of a key while alive, for the algorithms whose state
    /// has a fixed size.
    fn fixed_bytes(&self) -> Option<u64> {
        use ratesim::limiter::state_bytes as b;
        match *self {
            Algo::TokenBucket(_) => Some(b::TOKEN_BUCKET),
            Algo::Gcra(_) => Some(b::GCRA),
            Algo::Interval(_) => Some(b::INTERVAL_BUCKET),
            Algo::Leaky(_) => Some(b::LEAKY_BUCKET),
            Algo::Fixed(_) => Some(b::FIXED_WINDOW),
            Algo::Counter(_) => Some(b::SLIDING_COUNTER),
            Algo::Bursty(_) => Some(b::SMOOTH_BURSTY),
            Algo::Log(_) => None,
        }
    }
}

/// The decisions `key` gets for `rest` after `prefix` was decided.
fn after(algo: &Algo, prefix: &[Ev], rest: &[Ev]) -> Vec<Decision> {
    let mut l = algo.build();
    run(l.as_mut(), prefix);
    run(l.as_mut(), rest)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    // The accounting may only drop a key when a store could: from the
    // moment it declares a key fresh-equivalent, the key decides every
    // later request of its own exactly as a key never seen would.
    #[test]
    fn a_key_declared_fresh_decides_everything_after_as_a_new_key(
        algo in any_algo(),
        trace in trace(40, 4),
    ) {
        let mut trace = trace;
        if algo.costs_one_only() {
            trace.iter_mut().for_each(|e| e.cost = 1);
        }
        let mut l = algo.build();
        for (i, e) in trace.iter().enumerate() {
            if l.fresh_at(e.key) <= Nanos(e.t) {
                let rest: Vec<Ev> = trace[i..].iter().copied().filter(|r| r.key == e.key).collect();
                prop_assert_eq!(
                    after(&algo, &trace[..i], &rest),
                    after(&algo, &[], &rest),
                    "key {} declared fresh at {} (request {})", e.key, e.t, i
                );
            }
            l.decide(e.key, Nanos(e.t), e.cost);
        }
    }

    // And it drops it no later than that: while a key is declared alive,
    // some request at that very instant is decided differently from a
    // fresh key's (so the state bytes are not overstated either).
    #[test]
    fn a_key_declared_alive_decides_some_request_differently_from_a_new_key(
        algo in any_algo(),
        trace in trace(40, 4),
    ) {
        prop_assume!(!algo.held_for_good());
        let mut trace = trace;
        if algo.costs_one_only() {
            trace.iter_mut().for_each(|e| e.cost = 1);
        }
        let mut l = algo.build();
        // A first-hit window opened by a request is, at that very instant,
        // the window a fresh key would open: probe it 1 ns later.
        let after_by = match algo {
            Algo::Fixed(c) if c.align == fixed_window::Align::FirstHit => 1,
            _ => 0,
        };
        for (i, e) in trace.iter().enumerate() {
            l.decide(e.key, Nanos(e.t), e.cost);
            // Probe just after this decision and just before the declared
            // fresh moment.
            let fresh = l.fresh_at(e.key).0;
            for t in [e.t + after_by, fresh.saturating_sub(1).max(e.t)] {
                if fresh <= t {
                    continue;
                }
                let probe: Vec<Ev> = algo
                    .probe()
                    .into_iter()
                    .map(|(dt, cost)| Ev { t: t + dt, key: e.key, cost })
                    .collect();
                prop_assert_ne!(
                    after(&algo, &trace[..=i], &probe),
                    after(&algo, &[], &probe),
                    "key {} alive until {} but fresh-equivalent at {}", e.key, fresh, t
                );
            }
        }
    }

    // The ledger's integral and peak against a direct count: a fixed-size
    // key is held from each decision to the earlier of its declared fresh
    // moment and its next decision; the sliding log holds 8 bytes per
    // logged entry for one window.
    #[test]
    fn state_bytes_integrate_exactly_what_each_key_holds(
        algo in any_algo(),
        trace in trace(40, 4),
        tail in 0u64..3 * SEC,
    ) {
        let end = trace.last().map_or(0, |e| e.t) + tail;
        let mut l = algo.build();
        let mut fresh: Vec<Option<u64>> = vec![None; 3];
        let (mut byte_ns, mut peak_total) = (0u128, 0u64);
        let mut logged: Vec<(u64, u32)> = Vec::new();
        for (i, e) in trace.iter().enumerate() {
            let d = l.decide(e.key, Nanos(e.t), e.cost);
            let f = l.fresh_at(e.key).0;
            if let Some(bytes) = algo.fixed_bytes() {
                let next = trace[i + 1..].iter().find(|r| r.key == e.key).map_or(end, |r| r.t);
                byte_ns += bytes as u128 * f.min(next).saturating_sub(e.t) as u128;
                fresh[e.key as usize] = Some(f);
                let alive = fresh.iter().flatten().filter(|&&f| f > e.t).count() as u64;
                peak_total = peak_total.max(alive * bytes);
            } else if let Algo::Log(c) = algo {
                if d.passes() || c.count_rejected {
                    logged.push((e.t, e.key));
                }
                let life = c.window.0 + (c.boundary == sliding_log::BoundaryRule::Inclusive) as u64;
                let live = logged.iter().filter(|&&(s, _)| s + life > e.t).count() as u64;
                peak_total = peak_total.max(live * 8);
            }
        }
        if let Algo::Log(c) = algo {
            // An inclusive entry lives one nanosecond longer.
            let life = c.window.0 + (c.boundary == sliding_log::BoundaryRule::Inclusive) as u64;
            byte_ns = logged.iter().map(|&(s, _)| 8 * (s + life).min(end).saturating_sub(s) as u128).sum();
        }
        let fp = l.footprint(Nanos(end));
        prop_assert_eq!(fp.byte_ns, byte_ns);
        prop_assert_eq!(fp.peak_total, peak_total);
        prop_assert!(fp.peak_bytes <= fp.peak_total);
        let (n, d) = fp.mean();
        prop_assert!(n <= fp.peak_bytes as u128 * d);
    }
}

// ---------------------------------------------------------------------------
// 4. Rates stay exact over a long run
// ---------------------------------------------------------------------------

/// The bucket is emptied at 0 (capacity 2, two requests), so at the k-th
/// moment `⌈k/3 s⌉` it holds `3·t/10^9 − (k − 1)` tokens: at least 1, and
/// below the cap, so no refill is ever lost to capping and the k-th token
/// arrives exactly at `k/3 s` however long the run (10^6 tokens ≈ 3.9 days).
///
/// Capacity 1 would not do: a bucket that is already full when a request
/// arrives at `⌈k/3 s⌉` drops the fraction of a nanosecond's refill beyond
/// the cap (docs/semantics.md §2.1: tokens never flow in beyond
/// `capacity`), so its next token comes at `⌈k/3 s⌉ + 1/3 s`, which is
/// later than `⌈(k+1)/3 s⌉` two times in three.
#[test]
fn a_three_per_second_bucket_admits_a_million_requests_at_exact_token_moments_and_not_a_nanosecond_before(
) {
    let cfg = token_bucket::Config {
        capacity: 2,
        rate: parse_rate("3/1s").unwrap(),
    };
    let mut exact = token_bucket::boxed(cfg);
    let mut probed = token_bucket::boxed(cfg);
    for l in [&mut exact, &mut probed] {
        assert_eq!(l.decide(0, Nanos(0), 2), Decision::Admitted);
        assert!(!l.decide(0, Nanos(0), 1).passes());
    }
    for k in 1..=1_000_000u64 {
        // The k-th token since the bucket was emptied is due at k/3 s.
        let at = (k * SEC).div_ceil(3);
        assert_eq!(
            exact.decide(0, Nanos(at), 1),
            Decision::Admitted,
            "request {k} at {at} ns"
        );
        if k % 1000 == 0 {
            assert_eq!(
                probed.decide(0, Nanos(at - 1), 1),
                Decision::Rejected {
                    retry_after: Some(Nanos(1))
                },
                "request {k} 1 ns early at {} ns",
                at - 1
            );
        }
        assert_eq!(
            probed.decide(0, Nanos(at), 1),
            Decision::Admitted,
            "request {k} at {at} ns after a rejected probe"
        );
    }
}

/// The capped case, pinned down: a full capacity-1 bucket at 3/s admits at
/// 0 and ⌈1/3 s⌉, then rejects ⌈2/3 s⌉ by exactly the lost 2/3 ns, rounded up.
#[test]
fn a_full_bucket_loses_refill_beyond_its_capacity_even_a_fraction_of_a_nanosecond() {
    let mut tb = token_bucket::boxed(token_bucket::Config {
        capacity: 1,
        rate: parse_rate("3/1s").unwrap(),
    });
    assert_eq!(tb.decide(0, Nanos(0), 1), Decision::Admitted);
    assert_eq!(tb.decide(0, Nanos(333_333_334), 1), Decision::Admitted);
    assert_eq!(
        tb.decide(0, Nanos(666_666_667), 1),
        Decision::Rejected {
            retry_after: Some(Nanos(1))
        }
    );
    assert_eq!(tb.decide(0, Nanos(666_666_668), 1), Decision::Admitted);
}

// ---------------------------------------------------------------------------
// 4. Chains: several limits on one request (docs/semantics.md §13)
// ---------------------------------------------------------------------------

impl Algo {
    /// Whether it counts a rejected request (a `count_rejected` window).
    fn counts_rejections(&self) -> bool {
        match *self {
            Algo::Fixed(c) => c.count_rejected,
            Algo::Log(c) => c.count_rejected,
            Algo::Counter(c) => c.count_rejected,
            _ => false,
        }
    }

    /// Whether a rejection can change its state: it counts rejections, or
    /// a rejected request opens a first-hit window.
    fn rejections_change_state(&self) -> bool {
        self.counts_rejections()
            || matches!(*self, Algo::Fixed(c) if c.align == fixed_window::Align::FirstHit)
    }
}

/// Member `m`'s key for `e`: the first member keys by the trace's key, the
/// second by a coarser one (keys 0 and 1 share), so their states differ.
fn member_key(m: usize, e: &Ev) -> u32 {
    if m == 0 {
        e.key
    } else {
        e.key / 2
    }
}

/// Feeds `trace` to `chain`: the chain's decisions and each member's own.
fn run_chain(
    chain: &mut Chain,
    members: usize,
    trace: &[Ev],
) -> Vec<(Decision, Vec<Option<Decision>>)> {
    let mut own = vec![None; members];
    trace
        .iter()
        .map(|e| {
            let keys: Vec<Option<u32>> = (0..members).map(|m| Some(member_key(m, e))).collect();
            let d = chain.decide(&keys, Nanos(e.t), e.cost, &mut own);
            (d.decision, own.clone())
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// An `all_or_nothing` chain of one member decides exactly like that
    /// member alone — for every algorithm whose rejections change nothing
    /// (a chain's rejection never changes its members' state; a counting
    /// window, or a first-hit window a rejected request opens, differs).
    #[test]
    fn an_all_or_nothing_chain_of_one_member_decides_like_the_member_alone(
        algo in any_algo().prop_filter("rejections change state", |a| !a.rejections_change_state()),
        trace in trace(60, 4),
    ) {
        let mut chain = Chain::new(ChainMode::AllOrNothing, vec![algo.build()]);
        let mut own = [None];
        let alone = decisions(&algo, &trace);
        for (e, expected) in trace.iter().zip(alone) {
            let d = chain.decide(&[Some(e.key)], Nanos(e.t), e.cost, &mut own);
            prop_assert_eq!(d.decision, expected, "{:?}", e);
            prop_assert_eq!(own[0], Some(expected));
        }
    }

    /// In an `each_counts` chain every member decides exactly as it would
    /// alone, fed every request; the chain rejects iff one of them does,
    /// and a passed request waits the longest delay.
    #[test]
    fn each_counts_members_decide_exactly_like_the_members_alone(
        a in any_algo(),
        b in any_algo(),
        trace in trace(60, 4),
    ) {
        let mut chain = Chain::new(ChainMode::EachCounts, vec![a.build(), b.build()]);
        let (mut la, mut lb) = (a.build(), b.build());
        for (e, (chain_d, own)) in trace.iter().zip(run_chain(&mut chain, 2, &trace)) {
            let da = la.decide(member_key(0, e), Nanos(e.t), e.cost);
            let db = lb.decide(member_key(1, e), Nanos(e.t), e.cost);
            prop_assert_eq!(&own, &vec![Some(da), Some(db)], "{:?}", e);
            prop_assert_eq!(chain_d.passes(), da.passes() && db.passes());
            let delay = |d: Decision| match d {
                Decision::Delayed { delay } => delay.0,
                _ => 0,
            };
            if chain_d.passes() {
                prop_assert_eq!(delay(chain_d), delay(da).max(delay(db)));
            }
        }
    }

    /// An `all_or_nothing` chain passes iff every member would; a passed
    /// request is counted by every member exactly as alone, a rejected one
    /// by none: each member's state follows only the requests the chain
    /// passed.
    #[test]
    fn all_or_nothing_members_count_exactly_the_requests_the_chain_passed(
        a in any_algo(),
        b in any_algo(),
        trace in trace(60, 4),
    ) {
        let mut chain = Chain::new(ChainMode::AllOrNothing, vec![a.build(), b.build()]);
        let results = run_chain(&mut chain, 2, &trace);
        // Each member alone, fed only what the chain passed, and asked
        // (on a twin that keeps nothing) about every request.
        let (mut la, mut lb) = (a.build(), b.build());
        for (e, (chain_d, own)) in trace.iter().zip(results) {
            let (ka, kb) = (member_key(0, e), member_key(1, e));
            let (da, ta) = la.decide_detached(ka, Nanos(e.t), e.cost);
            let (db, tb) = lb.decide_detached(kb, Nanos(e.t), e.cost);
            prop_assert_eq!(own[0], Some(da), "{:?}", e);
            if da.passes() {
                prop_assert_eq!(own[1], Some(db), "{:?}", e);
            } else {
                prop_assert_eq!(own[1], None, "{:?}: asked after a rejection", e);
            }
            prop_assert_eq!(chain_d.passes(), da.passes() && db.passes());
            if chain_d.passes() {
                la.write_back(ka, ta, Nanos(e.t));
                lb.write_back(kb, tb, Nanos(e.t));
            } else {
                la.discard(ta);
                lb.discard(tb);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(384))]

    /// A chain's retry-after is exact: the same request passes that long
    /// after the rejection and not a nanosecond sooner (`all_or_nothing`,
    /// where a rejection changes nothing, so each member's admissible
    /// moments form a ray). Members that count rejections are left out: a
    /// member's retry-after counts the rejection it reports, which the
    /// chain does not count, so it is an upper bound there.
    #[test]
    fn an_all_or_nothing_chains_retry_after_is_the_smallest_wait_that_passes(
        a in any_algo().prop_filter("counts rejections", |a| !a.counts_rejections()),
        b in any_algo().prop_filter("counts rejections", |a| !a.counts_rejections()),
        trace in trace(25, 4),
    ) {
        let chain_of = || Chain::new(ChainMode::AllOrNothing, vec![a.build(), b.build()]);
        let results = run_chain(&mut chain_of(), 2, &trace);
        let mut checked = 0;
        for (i, (e, (d, _))) in trace.iter().zip(&results).enumerate() {
            let Decision::Rejected { retry_after: Some(wait) } = *d else { continue };
            if checked == 3 {
                break;
            }
            checked += 1;
            let retry = |at: u64| {
                let mut c = chain_of();
                run_chain(&mut c, 2, &trace[..=i]);
                let mut own = [None, None];
                let keys = [Some(member_key(0, e)), Some(member_key(1, e))];
                c.decide(&keys, Nanos(at), e.cost, &mut own).decision
            };
            let on_time = retry(e.t + wait.0);
            prop_assert!(on_time.passes(), "attempt {} {:?}: retry_after {}, then {:?}", i, e, wait.0, on_time);
            if wait.0 > 1 {
                let early = retry(e.t + wait.0 - 1);
                prop_assert!(!early.passes(), "attempt {} {:?}: retry_after {}, but 1 ns sooner {:?}", i, e, wait.0, early);
            }
        }
    }
}
