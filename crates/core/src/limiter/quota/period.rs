//! Calendar periods for [`super`]: the day, week or month containing an
//! instant of the run, in the wall-clock time of the run's epoch.
//!
//! **What it computes.** The run's clock counts nanoseconds from `t = 0`;
//! the scenario's `epoch` names the calendar instant of `t = 0` with a fixed
//! UTC offset, `"2026-01-01T00:00:00Z"` or `"2026-01-01T05:30:00+05:30"`.
//! Periods are that offset's local days, weeks (starting Monday 00:00) and
//! Gregorian months (leap years: divisible by 4, except centuries not
//! divisible by 400). For an instant `t`:
//!
//! ```text
//! local(t)  = the epoch's wall clock + t
//! start(t)  = the local midnight / Monday midnight / 1st-of-month midnight ≤ local(t), as a t
//! next(t)   = the following one, as a t
//! ```
//!
//! Everything is integer nanoseconds; `start` may be negative (the period
//! containing `t = 0` began before the run). A fixed offset has no daylight
//! saving time, so every day is exactly 24 h.
//!
//! **Dates.** Days are counted from 1970-01-01 with the usual
//! days-from-civil arithmetic: shift the year to start in March, so that
//! February's length only matters at the end of a 400-year era of 146 097
//! days, and months from March have the fixed pattern of 153 days per five.

use crate::clock::Nanos;

const NS_PER_SEC: i128 = 1_000_000_000;
const NS_PER_DAY: i128 = 86_400 * NS_PER_SEC;

/// Days from 1970-01-01 to `y-m-d` (proleptic Gregorian).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    // The year counted from March: January and February belong to the
    // year before.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let year_of_era = y.rem_euclid(400); // 0..=399
    let month_from_march = (m as i64 + 9) % 12; // March 0 .. February 11
    let day_of_year = (153 * month_from_march + 2) / 5 + d as i64 - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    // 719 468 days from 0000-03-01 to 1970-01-01.
    era * 146_097 + day_of_era - 719_468
}

/// The date `days` after 1970-01-01: `(year, month, day)`.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let d = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let m = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    } as u32;
    let y = year_of_era + era * 400 + if m <= 2 { 1 } else { 0 };
    (y, m, d)
}

pub fn is_leap_year(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

pub fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if is_leap_year(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A quota's period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    Day,
    /// Monday 00:00 to the next Monday 00:00.
    Week,
    /// The 1st 00:00 to the next month's 1st 00:00.
    Month,
}

impl Period {
    pub fn as_str(self) -> &'static str {
        match self {
            Period::Day => "day",
            Period::Week => "week",
            Period::Month => "month",
        }
    }

    /// `"day"`, `"week"` or `"month"`.
    pub fn parse(s: &str) -> Option<Period> {
        match s {
            "day" => Some(Period::Day),
            "week" => Some(Period::Week),
            "month" => Some(Period::Month),
            _ => None,
        }
    }
}

/// The calendar instant of `t = 0`: its wall clock in its own offset, and
/// the offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Epoch {
    /// The wall clock at `t = 0`, in ns from 1970-01-01T00:00 *local*.
    local_ns: i128,
    /// Seconds east of UTC (`+05:30` is 19 800).
    offset_secs: i32,
}

impl std::fmt::Display for Epoch {
    /// As written in a scenario: `2026-01-01T00:00:00Z`,
    /// `2026-01-01T00:00:00.5+05:30`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const DAY: i128 = 86_400 * 1_000_000_000;
        let (days, ns) = (self.local_ns.div_euclid(DAY), self.local_ns.rem_euclid(DAY));
        let (y, m, d) = civil_from_days(days as i64);
        let secs = ns / 1_000_000_000;
        write!(
            f,
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        )?;
        let frac = ns % 1_000_000_000;
        if frac > 0 {
            write!(f, ".{}", format!("{frac:09}").trim_end_matches('0'))?;
        }
        match self.offset_secs {
            0 => write!(f, "Z"),
            o => write!(
                f,
                "{}{:02}:{:02}",
                if o < 0 { '-' } else { '+' },
                o.abs() / 3600,
                o.abs() / 60 % 60
            ),
        }
    }
}

/// The default `epoch`: midnight UTC, 1 January 2026.
pub const DEFAULT_EPOCH: &str = "2026-01-01T00:00:00Z";

/// What is wrong with an `epoch` string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EpochError {
    #[error("epoch {0:?}: expected YYYY-MM-DDTHH:MM:SS followed by Z or an offset like +05:30, e.g. \"2026-01-01T00:00:00Z\"")]
    Shape(String),
    #[error("epoch {text:?}: {what} — e.g. \"2026-01-01T00:00:00Z\"")]
    Range { text: String, what: String },
}

/// Reads `n` ASCII digits at `*at`.
fn digits(b: &[u8], at: &mut usize, n: usize) -> Option<u32> {
    let s = b.get(*at..*at + n)?;
    if !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    *at += n;
    Some(s.iter().fold(0, |v, c| v * 10 + (c - b'0') as u32))
}

/// The byte `c` at `at` (a letter in either case: RFC 3339 allows `t`
/// and `z`), stepped over.
fn expect(b: &[u8], at: &mut usize, c: u8) -> Option<()> {
    b.get(*at)
        .is_some_and(|x| x.eq_ignore_ascii_case(&c))
        .then(|| *at += 1)
}

impl Epoch {
    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, the fraction up
    /// to nine digits.
    pub fn parse(text: &str) -> Result<Epoch, EpochError> {
        let shape = || EpochError::Shape(text.to_string());
        let range = |what: String| EpochError::Range {
            text: text.to_string(),
            what,
        };
        let b = text.as_bytes();
        let mut at = 0;
        let mut field = |n: usize, sep: Option<u8>| -> Result<u32, EpochError> {
            let v = digits(b, &mut at, n).ok_or_else(shape)?;
            if let Some(c) = sep {
                expect(b, &mut at, c).ok_or_else(shape)?;
            }
            Ok(v)
        };
        let year = field(4, Some(b'-'))? as i64;
        let month = field(2, Some(b'-'))?;
        let day = field(2, Some(b'T'))?;
        let hour = field(2, Some(b':'))?;
        let minute = field(2, Some(b':'))?;
        let second = field(2, None)?;
        let mut fraction_ns = 0i128;
        if b.get(at) == Some(&b'.') {
            at += 1;
            let start = at;
            while b.get(at).is_some_and(u8::is_ascii_digit) {
                at += 1;
            }
            let f = &b[start..at];
            if f.is_empty() || f.len() > 9 {
                return Err(range(
                    "the fraction of a second must have 1 to 9 digits".into(),
                ));
            }
            let mut v = f.iter().fold(0i128, |v, c| v * 10 + (c - b'0') as i128);
            for _ in f.len()..9 {
                v *= 10;
            }
            fraction_ns = v;
        }
        let offset_secs = match b.get(at) {
            Some(b'Z') | Some(b'z') => {
                at += 1;
                0
            }
            Some(&sign @ (b'+' | b'-')) => {
                at += 1;
                let h = digits(b, &mut at, 2).ok_or_else(shape)?;
                expect(b, &mut at, b':').ok_or_else(shape)?;
                let m = digits(b, &mut at, 2).ok_or_else(shape)?;
                if h > 23 || m > 59 {
                    return Err(range(format!(
                        "offset {h:02}:{m:02} is no offset: hours 00 to 23, minutes 00 to 59"
                    )));
                }
                let s = (h * 3600 + m * 60) as i32;
                if sign == b'-' {
                    -s
                } else {
                    s
                }
            }
            _ => return Err(shape()),
        };
        if at != b.len() {
            return Err(shape());
        }
        if !(1..=12).contains(&month) {
            return Err(range(format!("month {month} is not 01 to 12")));
        }
        let last = days_in_month(year, month);
        if day < 1 || day > last {
            return Err(range(format!(
                "day {day} is not in {year:04}-{month:02}, which has {last} days"
            )));
        }
        if hour > 23 || minute > 59 || second > 59 {
            return Err(range(format!(
                "{hour:02}:{minute:02}:{second:02} is not a time of day"
            )));
        }
        let days = days_from_civil(year, month, day) as i128;
        let secs = days * 86_400 + (hour * 3600 + minute * 60 + second) as i128;
        Ok(Epoch {
            local_ns: secs * NS_PER_SEC + fraction_ns,
            offset_secs,
        })
    }

    /// Seconds east of UTC.
    pub fn offset_secs(&self) -> i32 {
        self.offset_secs
    }

    /// `t = 0` as ns since 1970-01-01T00:00:00Z.
    pub fn unix_ns(&self) -> i128 {
        self.local_ns - self.offset_secs as i128 * NS_PER_SEC
    }

    /// The same offset, with `t = 0` at `utc_ns` (ns since
    /// 1970-01-01T00:00Z): a replayed log's first arrival, whose own time
    /// the periods then follow (docs/semantics.md §10).
    pub fn at(self, utc_ns: u64) -> Epoch {
        Epoch {
            local_ns: i128::from(utc_ns) + i128::from(self.offset_secs) * NS_PER_SEC,
            offset_secs: self.offset_secs,
        }
    }

    /// The period containing instant `t`, as run times.
    pub fn span(&self, period: Period, t: Nanos) -> Span {
        let local = self.local_ns + t.as_u64() as i128;
        let day = local.div_euclid(NS_PER_DAY) as i64;
        let (start_day, next_day) = match period {
            Period::Day => (day, day + 1),
            Period::Week => {
                // 1970-01-01 was a Thursday: Monday is 0 at day + 3.
                let monday = day - (day + 3).rem_euclid(7);
                (monday, monday + 7)
            }
            Period::Month => {
                let (y, m, _) = civil_from_days(day);
                let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
                (days_from_civil(y, m, 1), days_from_civil(ny, nm, 1))
            }
        };
        let to_run = |d: i64| d as i128 * NS_PER_DAY - self.local_ns;
        Span {
            start: to_run(start_day),
            next: to_run(next_day),
        }
    }
}

impl Default for Epoch {
    fn default() -> Self {
        // DEFAULT_EPOCH, 2026-01-01T00:00:00Z: 20 454 days after 1970-01-01.
        Epoch {
            local_ns: 20_454 * NS_PER_DAY,
            offset_secs: 0,
        }
    }
}

/// One period, in run time (ns from `t = 0`): `[start, next)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// The period's first instant; negative when it began before the run.
    pub start: i128,
    /// The next period's first instant (always after the `t` asked about).
    pub next: i128,
}

impl Span {
    /// `next − now`, whole ns, for a `now` inside the span.
    pub fn until_next(&self, now: Nanos) -> Nanos {
        let d = self.next - now.as_u64() as i128;
        Nanos(d.clamp(0, u64::MAX as i128) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_epoch_prints_as_written() {
        for text in [
            "2026-01-01T00:00:00Z",
            "2028-02-29T23:59:59.5+05:30",
            "1999-12-31T12:00:00-08:00",
        ] {
            assert_eq!(Epoch::parse(text).unwrap().to_string(), text);
        }
    }

    const H: i128 = 3600 * NS_PER_SEC;
    const DAY: i128 = 24 * H;

    fn at(ns: i128) -> Nanos {
        Nanos(ns as u64)
    }

    #[test]
    fn civil_dates_round_trip_through_day_counts() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2026, 1, 1), 20_454);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        for d in -800_000..800_000i64 {
            let (y, m, dd) = civil_from_days(d);
            assert_eq!(days_from_civil(y, m, dd), d);
            assert!(dd >= 1 && dd <= days_in_month(y, m));
        }
        assert_eq!(Epoch::default(), Epoch::parse(DEFAULT_EPOCH).unwrap());
    }

    #[test]
    fn year_2000_is_leap_and_2100_is_not() {
        assert!(is_leap_year(2000) && is_leap_year(2028) && is_leap_year(2400));
        assert!(!is_leap_year(2100) && !is_leap_year(1900) && !is_leap_year(2026));
        // Through the calendar itself: the day after Feb 28.
        assert_eq!(
            civil_from_days(days_from_civil(2000, 2, 28) + 1),
            (2000, 2, 29)
        );
        assert_eq!(
            civil_from_days(days_from_civil(2100, 2, 28) + 1),
            (2100, 3, 1)
        );
        // A month period in February 2100 is 28 days, in 2000 it is 29.
        for (year, days) in [(2100, 28), (2000, 29)] {
            let e = Epoch::parse(&format!("{year}-02-10T00:00:00Z")).unwrap();
            let s = e.span(Period::Month, Nanos::ZERO);
            assert_eq!((s.start, s.next), (-9 * DAY, (days - 9) * DAY), "{year}");
        }
    }

    #[test]
    fn a_leap_february_rolls_28_to_29_to_march_1() {
        let e = Epoch::parse("2028-02-28T00:00:00Z").unwrap();
        // Feb 28 is one day; Feb 29 the next.
        assert_eq!(
            e.span(Period::Day, Nanos::ZERO),
            Span {
                start: 0,
                next: DAY
            }
        );
        let feb29 = e.span(Period::Day, at(DAY + 5 * H));
        assert_eq!((feb29.start, feb29.next), (DAY, 2 * DAY));
        // The month: Feb 1 (27 days before) to March 1 (2 days on). The
        // last nanosecond of Feb 29 is still February; March 1 00:00 is not.
        let m = e.span(Period::Month, Nanos::ZERO);
        assert_eq!((m.start, m.next), (-27 * DAY, 2 * DAY));
        assert_eq!(e.span(Period::Month, at(2 * DAY - 1)), m);
        let march = e.span(Period::Month, at(2 * DAY));
        assert_eq!((march.start, march.next), (2 * DAY, 33 * DAY));
    }

    #[test]
    fn a_utc_midnight_with_a_plus_0530_epoch_is_in_a_day_that_began_at_1830_utc() {
        // t = 0 is 2026-01-01T00:00:00Z, 05:30 local: the local day began at
        // local midnight = 2025-12-31T18:30Z, 5 h 30 before t = 0, and ends
        // 18 h 30 after it.
        let e = Epoch::parse("2026-01-01T05:30:00+05:30").unwrap();
        assert_eq!(e.unix_ns(), 20_454 * DAY);
        assert_eq!(e.offset_secs(), 19_800);
        let d = e.span(Period::Day, Nanos::ZERO);
        assert_eq!((d.start, d.next), (-(5 * H + H / 2), 18 * H + H / 2));
        assert_eq!(d.until_next(Nanos::ZERO), at(18 * H + H / 2));
        // The same instant in UTC days: [0, 24 h).
        let utc = Epoch::parse("2026-01-01T00:00:00Z").unwrap();
        assert_eq!(utc.unix_ns(), e.unix_ns());
        assert_eq!(
            utc.span(Period::Day, Nanos::ZERO),
            Span {
                start: 0,
                next: DAY
            }
        );
        // A negative offset: 2026-01-01T00:00:00-08:00 is local midnight.
        let pst = Epoch::parse("2026-01-01T00:00:00-08:00").unwrap();
        assert_eq!(pst.unix_ns(), 20_454 * DAY + 8 * H);
        assert_eq!(
            pst.span(Period::Day, at(DAY - 1)),
            Span {
                start: 0,
                next: DAY
            }
        );
    }

    #[test]
    fn weeks_start_on_monday_midnight() {
        // 2026-01-01 is a Thursday: its week began Monday 2025-12-29,
        // 3 days before, and the next begins Monday 2026-01-05.
        let e = Epoch::default();
        let w = e.span(Period::Week, Nanos::ZERO);
        assert_eq!((w.start, w.next), (-3 * DAY, 4 * DAY));
        // Sunday 23:59:59.999999999 is still that week; Monday 00:00 is the next.
        assert_eq!(e.span(Period::Week, at(4 * DAY - 1)), w);
        let next = e.span(Period::Week, at(4 * DAY));
        assert_eq!((next.start, next.next), (4 * DAY, 11 * DAY));
        // An epoch on a Monday afternoon: the week began that morning.
        let mon = Epoch::parse("2026-01-05T15:00:00Z").unwrap();
        let w = mon.span(Period::Week, Nanos::ZERO);
        assert_eq!((w.start, w.next), (-15 * H, 7 * DAY - 15 * H));
    }

    #[test]
    fn month_lengths_through_2026() {
        let e = Epoch::default();
        let mut t = 0i128;
        for want in [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] {
            let m = e.span(Period::Month, at(t));
            assert_eq!(m.start, t);
            assert_eq!(m.next - m.start, want * DAY);
            t = m.next;
        }
        assert_eq!(t, 365 * DAY);
        assert_eq!(civil_from_days(20_454 + 365), (2027, 1, 1));
    }

    #[test]
    fn fractional_seconds_and_bad_epochs() {
        let e = Epoch::parse("2026-01-01T23:59:59.5Z").unwrap();
        assert_eq!(e.span(Period::Day, Nanos::ZERO).next, NS_PER_SEC / 2);
        // RFC 3339's letters in either case.
        assert_eq!(Epoch::parse("2026-01-01t23:59:59.5z"), Ok(e));
        for bad in [
            "2026-01-01",
            "2026-01-01T00:00:00",
            "2026-01-01 00:00:00Z",
            "2026-1-01T00:00:00Z",
            "2026-01-01T00:00:00+0530",
            "2026-01-01T00:00:00Zjunk",
        ] {
            assert!(
                matches!(Epoch::parse(bad), Err(EpochError::Shape(_))),
                "{bad}"
            );
        }
        for bad in [
            "2026-13-01T00:00:00Z",
            "2026-02-29T00:00:00Z",
            "2100-02-29T00:00:00Z",
            "2026-01-01T24:00:00Z",
            "2026-01-01T00:00:60Z",
            "2026-01-01T00:00:00+24:00",
            "2026-01-01T00:00:00.1234567891Z",
        ] {
            assert!(
                matches!(Epoch::parse(bad), Err(EpochError::Range { .. })),
                "{bad}"
            );
        }
        assert!(Epoch::parse("2028-02-29T00:00:00Z").is_ok());
        let msg = Epoch::parse("2026-02-30T00:00:00Z")
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("day 30 is not in 2026-02, which has 28 days"),
            "{msg}"
        );
    }
}
