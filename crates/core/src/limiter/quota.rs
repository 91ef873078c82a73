//! Quota: a budget of cost per calendar day, week or month.
//!
//! **What it models.** The "10 000 calls a month" of an API plan. Each key
//! may pass `limit` cost per calendar [`Period`] — days, weeks from Monday,
//! Gregorian months — in the wall-clock time of the run's `epoch` (see
//! [`period`]; over a replayed log, the scenario sets `epoch` to the log's
//! first arrival, in the offset it was given: docs/semantics.md §10). With
//! `used` the cost the key passed in the period
//! containing `now`:
//!
//! ```text
//! admit  ⇔  used + cost ≤ limit;   then used += cost
//! ```
//!
//! and the count starts again from 0 at the next period's start. Unlike a
//! [`super::fixed_window`], the windows are not equal: a month is 28 to 31
//! days, and its boundaries are calendar midnights, not multiples of a
//! duration since `t = 0`.
//!
//! **Retry-after.** The time to the next period's start: the count is only
//! ever reset there, so with nothing else arriving the request passes at
//! exactly that moment and not a nanosecond before. A `cost` above `limit`
//! never passes: no retry-after.
//!
//! **Fresh-equivalent.** A key with nothing used is a fresh key; one with
//! anything used becomes one at its period's end.

pub mod period;

use super::{redis_bytes, state_bytes, Decision, FixedLedger, Rule, Stored};
use crate::clock::Nanos;
pub use period::{Epoch, Period, Span};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Cost allowed per period.
    pub limit: u64,
    pub period: Period,
    /// The calendar instant of `t = 0`.
    pub epoch: Epoch,
}

/// One key's quota: the period it last counted in and the cost passed then.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Used {
    /// The end of the period `used` counts in (run ns; 0 before any request).
    period_end: i128,
    used: u64,
}

impl Used {
    pub fn used(&self) -> u64 {
        self.used
    }
}

/// The quota rule.
pub struct QuotaRule {
    cfg: Config,
}

impl QuotaRule {
    pub fn new(cfg: Config) -> QuotaRule {
        QuotaRule { cfg }
    }
}

/// The quota limiter: [`QuotaRule`] over every key's [`Used`].
pub type Quota = Stored<QuotaRule>;

impl Quota {
    pub fn new(cfg: Config) -> Quota {
        Stored::of(
            QuotaRule::new(cfg),
            FixedLedger::new(state_bytes::QUOTA, redis_bytes::HASH),
        )
    }
}

impl Rule for QuotaRule {
    type State = Used;

    fn fresh(&self, now: Nanos) -> Used {
        Used {
            period_end: self.cfg.epoch.span(self.cfg.period, now).next,
            used: 0,
        }
    }

    #[inline(always)]
    fn decide(&self, state: &mut Used, now: Nanos, cost: u64) -> (Decision, Option<u64>) {
        let span = self.cfg.epoch.span(self.cfg.period, now);
        if state.period_end != span.next {
            // A new period: nothing used in it yet.
            *state = Used {
                period_end: span.next,
                used: 0,
            };
        }
        if cost > self.cfg.limit {
            return (Decision::Rejected { retry_after: None }, None);
        }
        if state.used + cost <= self.cfg.limit {
            state.used += cost;
            (Decision::Admitted, None)
        } else {
            let retry_after = Some(span.until_next(now));
            (Decision::Rejected { retry_after }, None)
        }
    }

    fn fresh_at(&self, state: &Used) -> Nanos {
        if state.used == 0 {
            Nanos::ZERO
        } else {
            Nanos(state.period_end.clamp(0, u64::MAX as i128) as u64)
        }
    }

    /// `limit` less what the period `now` falls in has used
    /// (docs/semantics.md §11).
    fn remaining(&self, state: &Used, now: Nanos) -> u64 {
        let span = self.cfg.epoch.span(self.cfg.period, now);
        match state.period_end == span.next {
            true => self.cfg.limit.saturating_sub(state.used),
            false => self.cfg.limit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: u64 = 3_600_000_000_000;
    const DAY: u64 = 24 * H;

    fn rule(limit: u64, period: Period, epoch: &str) -> QuotaRule {
        QuotaRule::new(Config {
            limit,
            period,
            epoch: Epoch::parse(epoch).unwrap(),
        })
    }

    fn rejected(after: u64) -> Decision {
        Decision::Rejected {
            retry_after: Some(Nanos(after)),
        }
    }

    #[test]
    fn a_daily_quota_admits_its_limit_then_waits_for_midnight() {
        // Epoch 2026-01-01 18:00 UTC: the day ends 6 h after t = 0.
        let r = rule(3, Period::Day, "2026-01-01T18:00:00Z");
        let mut s = r.fresh(Nanos::ZERO);
        let steps = [
            // (t, cost, decision, used after)
            (0, 1, Decision::Admitted, 1),
            (H, 2, Decision::Admitted, 3),
            // 3 + 1 > 3: wait until midnight, 6 h − 2 h = 4 h.
            (2 * H, 1, rejected(4 * H), 3),
            // The last nanosecond of the day: 1 ns to wait.
            (6 * H - 1, 1, rejected(1), 3),
            // Midnight: a new day, the count starts again.
            (6 * H, 2, Decision::Admitted, 2),
            (6 * H + 1, 2, rejected(DAY - 1), 2),
            (6 * H + 2, 1, Decision::Admitted, 3),
        ];
        for (i, (t, cost, want, used)) in steps.into_iter().enumerate() {
            let (d, _) = r.decide(&mut s, Nanos(t), cost);
            assert_eq!(d, want, "step {i}");
            assert_eq!(s.used(), used, "step {i}");
        }
    }

    #[test]
    fn a_cost_above_the_limit_never_passes() {
        let r = rule(3, Period::Day, "2026-01-01T00:00:00Z");
        let mut s = r.fresh(Nanos::ZERO);
        assert_eq!(
            r.decide(&mut s, Nanos::ZERO, 4).0,
            Decision::Rejected { retry_after: None }
        );
        assert_eq!(s.used(), 0);
        assert_eq!(r.decide(&mut s, Nanos::ZERO, 3).0, Decision::Admitted);
    }

    #[test]
    fn a_monthly_quota_resets_on_the_first_of_each_month() {
        // From 2028-02-28 (leap year): February ends 2 days on, March 31
        // days after that.
        let r = rule(1, Period::Month, "2028-02-28T00:00:00Z");
        let mut s = r.fresh(Nanos::ZERO);
        assert_eq!(r.decide(&mut s, Nanos::ZERO, 1).0, Decision::Admitted);
        assert_eq!(r.decide(&mut s, Nanos(DAY), 1).0, rejected(DAY));
        assert_eq!(r.fresh_at(&s), Nanos(2 * DAY));
        assert_eq!(r.decide(&mut s, Nanos(2 * DAY), 1).0, Decision::Admitted);
        assert_eq!(
            r.decide(&mut s, Nanos(2 * DAY + 1), 1).0,
            rejected(31 * DAY - 1)
        );
    }

    #[test]
    fn a_weekly_quota_resets_on_monday() {
        // 2026-01-01 is a Thursday; the next Monday is 4 days on.
        let r = rule(2, Period::Week, "2026-01-01T00:00:00Z");
        let mut s = r.fresh(Nanos::ZERO);
        assert_eq!(r.decide(&mut s, Nanos::ZERO, 2).0, Decision::Admitted);
        assert_eq!(r.decide(&mut s, Nanos(3 * DAY), 1).0, rejected(DAY));
        assert_eq!(r.decide(&mut s, Nanos(4 * DAY), 2).0, Decision::Admitted);
        assert_eq!(r.decide(&mut s, Nanos(10 * DAY), 1).0, rejected(DAY));
    }

    #[test]
    fn a_key_unused_for_a_period_starts_from_zero() {
        let r = rule(2, Period::Day, "2026-01-01T00:00:00Z");
        let mut s = r.fresh(Nanos::ZERO);
        assert_eq!(r.fresh_at(&s), Nanos::ZERO, "nothing used: fresh");
        r.decide(&mut s, Nanos(H), 2);
        // Days later: a later period, whatever lay between.
        assert_eq!(
            r.decide(&mut s, Nanos(5 * DAY + H), 2).0,
            Decision::Admitted
        );
        assert_eq!(r.fresh_at(&s), Nanos(6 * DAY));
    }
}
