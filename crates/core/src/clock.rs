//! Virtual time and exact rates.
//!
//! The simulator never reads a wall clock and never lets floating point near a
//! decision. Time is [`Nanos`], an integer count of nanoseconds since the start
//! of the run. A [`Rate`] is an exact rational `tokens / per_ns`: `"3/1s"` is
//! 3 tokens every 1 000 000 000 ns, with no rounding however long the run.
//! Limiters do their arithmetic in `u128`, scaled by the rate's denominator.

use std::fmt;
use std::ops::{Add, Sub};

/// Nanoseconds in one second.
pub const NANOS_PER_SEC: u64 = 1_000_000_000;

/// The largest duration a scenario may name: 10^18 ns, about 31.7 years.
/// Keeping every time below this leaves `u128` products far from overflow.
pub const MAX_NANOS: u64 = 1_000_000_000_000_000_000;

/// The largest numerator and denominator a rate may have after reduction.
pub(crate) const MAX_RATE_TOKENS: u64 = 1_000_000_000_000;

/// A point on (or span of) the virtual clock, in whole nanoseconds.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Nanos(pub u64);

impl Nanos {
    pub const ZERO: Nanos = Nanos(0);

    pub const fn from_secs(s: u64) -> Nanos {
        Nanos(s * NANOS_PER_SEC)
    }

    pub const fn from_millis(ms: u64) -> Nanos {
        Nanos(ms * 1_000_000)
    }

    pub const fn as_u64(self) -> u64 {
        self.0
    }

    pub fn saturating_sub(self, other: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(other.0))
    }
}

impl Add for Nanos {
    type Output = Nanos;
    fn add(self, rhs: Nanos) -> Nanos {
        Nanos(self.0 + rhs.0)
    }
}

impl Sub for Nanos {
    type Output = Nanos;
    fn sub(self, rhs: Nanos) -> Nanos {
        Nanos(self.0 - rhs.0)
    }
}

/// Prints an exact, human form that [`parse_duration`] reads back:
/// `2h`, `1m`, `4.75s`, `250ms`, `1.5ms`, `10us`, `7ns`.
impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        const HOUR: u64 = 3_600 * NANOS_PER_SEC;
        const MINUTE: u64 = 60 * NANOS_PER_SEC;
        let (value, unit) = match n {
            0 => return f.write_str("0s"),
            _ if n % HOUR == 0 => return write!(f, "{}h", n / HOUR),
            _ if n % MINUTE == 0 => return write!(f, "{}m", n / MINUTE),
            _ if n >= NANOS_PER_SEC => (decimal(n as u128, NANOS_PER_SEC as u128), "s"),
            _ if n >= 1_000_000 => (decimal(n as u128, 1_000_000), "ms"),
            _ if n >= 1_000 => (decimal(n as u128, 1_000), "us"),
            _ => (n.to_string(), "ns"),
        };
        write!(f, "{value}{unit}")
    }
}

impl fmt::Debug for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// `num / den` as an exact decimal string if it terminates within 9 places,
/// otherwise rounded half-up at 9 places; trailing zeros trimmed.
pub fn decimal(num: u128, den: u128) -> String {
    decimal_places(num, den, 9)
}

/// `num / den` rounded half-up to at most `places` decimals, trailing zeros trimmed.
pub fn decimal_places(num: u128, den: u128, places: u32) -> String {
    let scale = 10u128.pow(places);
    let scaled = (num * scale + den / 2) / den;
    let whole = scaled / scale;
    let frac = scaled % scale;
    if frac == 0 {
        return whole.to_string();
    }
    let frac = format!("{:0width$}", frac, width = places as usize);
    format!("{}.{}", whole, frac.trim_end_matches('0'))
}

/// An exact rate: `tokens` every `per` nanoseconds, stored reduced.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rate {
    tokens: u64,
    per_ns: u64,
}

impl Rate {
    /// `tokens` per `per_ns` nanoseconds, reduced to lowest terms.
    /// Returns `None` when either part is zero or the reduced rate is out of range.
    pub fn new(tokens: u128, per_ns: u128) -> Option<Rate> {
        if tokens == 0 || per_ns == 0 {
            return None;
        }
        let g = gcd(tokens, per_ns);
        let (t, p) = (tokens / g, per_ns / g);
        if t > MAX_RATE_TOKENS as u128 || p > MAX_NANOS as u128 {
            return None;
        }
        Some(Rate {
            tokens: t as u64,
            per_ns: p as u64,
        })
    }

    /// `count` per `window`: the rate a `[defaults] limit` per `window` implies.
    pub fn per(count: u64, window: Nanos) -> Option<Rate> {
        Rate::new(count as u128, window.0 as u128)
    }

    /// Numerator: tokens added every [`Rate::per_ns`] nanoseconds.
    pub fn tokens(self) -> u128 {
        self.tokens as u128
    }

    /// Denominator, in nanoseconds.
    pub fn per_ns(self) -> u128 {
        self.per_ns as u128
    }

    /// The time `count` tokens take to accrue, rounded up to whole ns.
    pub fn time_for(self, count: u64) -> Nanos {
        Nanos(div_ceil(count as u128 * self.per_ns(), self.tokens()) as u64)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.tokens, Nanos(self.per_ns))
    }
}

impl fmt::Debug for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

pub fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `ceil(a / b)` for `b > 0`: `a` itself when `b` is 1, with no
/// division; else by a 64-bit division when both fit one, as a key's
/// scaled balance and rate nearly always do (a 128-bit division is a
/// library call several times as slow), else by a 128-bit one. The same
/// quotient every way. (The token bucket's, GCRA's and the leaky
/// bucket's `fresh_at` divide by a rate's count at every decision, and a
/// rate whose count divides its period has count 1 in lowest terms:
/// 5/1s is 1/200ms. A division by 1 costs the divider's latency all the
/// same.)
#[inline]
pub fn div_ceil(a: u128, b: u128) -> u128 {
    if b == 1 {
        return a;
    }
    match (u64::try_from(a), u64::try_from(b)) {
        (Ok(a), Ok(b)) => u128::from(a.div_ceil(b)),
        _ => a.div_ceil(b),
    }
}

/// Why a duration, rate or decimal string was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("expected a number with a unit (ns, us, ms, s, m, h), e.g. \"250ms\" or \"1.5s\"")]
    DurationSyntax,
    #[error("is not a whole number of nanoseconds")]
    FractionalNanos,
    #[error("is longer than the largest accepted duration (1000000000s)")]
    DurationTooLong,
    #[error("expected \"N/DURATION\" such as \"100/1s\" or \"1/50ms\", or a number per second such as 100 or 2.5")]
    RateSyntax,
    #[error("must be positive, e.g. \"100/1s\"")]
    RateNotPositive,
    #[error("is too large or too fine (at most 10^12 per the period, periods up to 10^18 ns)")]
    RateOutOfRange,
}

/// A non-negative decimal `12.000000001` as an exact fraction `(num, 10^k)`:
/// `Err(true)` when it is well-formed but too long to hold exactly,
/// `Err(false)` when it is not a decimal.
pub fn parse_decimal(s: &str) -> Result<(u128, u128), bool> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let all_digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !all_digits(int) || !all_digits(frac) {
        return Err(false);
    }
    let int = int.trim_start_matches('0');
    let frac = frac.trim_end_matches('0');
    if frac.len() > 18 || int.len() > 20 {
        return Err(true);
    }
    let den = 10u128.pow(frac.len() as u32);
    let int_v: u128 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| true)?
    };
    let frac_v: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse().map_err(|_| true)?
    };
    Ok((int_v * den + frac_v, den))
}

/// [`parse_decimal`] with the error to give for each way it can fail.
fn decimal_or(
    s: &str,
    syntax: ParseError,
    too_long: ParseError,
) -> Result<(u128, u128), ParseError> {
    parse_decimal(s).map_err(|long| if long { too_long } else { syntax })
}

/// Parses `"250ms"`, `"1.5s"`, `"2m"`, `"1h"`, `"10us"`, `"100ns"` exactly.
/// Zero is accepted here; callers that need a positive span check it.
pub fn parse_duration(s: &str) -> Result<Nanos, ParseError> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or(ParseError::DurationSyntax)?;
    let (number, unit) = s.split_at(split);
    let unit_ns: u128 = match unit.trim() {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return Err(ParseError::DurationSyntax),
    };
    let (num, den) = decimal_or(
        number,
        ParseError::DurationSyntax,
        ParseError::DurationTooLong,
    )?;
    let total = num
        .checked_mul(unit_ns)
        .ok_or(ParseError::DurationTooLong)?;
    if total % den != 0 {
        return Err(ParseError::FractionalNanos);
    }
    let ns = total / den;
    if ns > MAX_NANOS as u128 {
        return Err(ParseError::DurationTooLong);
    }
    Ok(Nanos(ns as u64))
}

/// Parses seconds written as a decimal (`"12.000000001"`) exactly into ns.
pub fn parse_seconds(s: &str) -> Result<Nanos, ParseError> {
    let (num, den) = decimal_or(
        s.trim(),
        ParseError::DurationSyntax,
        ParseError::DurationTooLong,
    )?;
    let total = num
        .checked_mul(NANOS_PER_SEC as u128)
        .ok_or(ParseError::DurationTooLong)?;
    if total % den != 0 {
        return Err(ParseError::FractionalNanos);
    }
    let ns = total / den;
    if ns > MAX_NANOS as u128 {
        return Err(ParseError::DurationTooLong);
    }
    Ok(Nanos(ns as u64))
}

/// Parses `"N/DURATION"` (N a positive decimal) or a bare decimal per second.
pub fn parse_rate(s: &str) -> Result<Rate, ParseError> {
    let s = s.trim();
    let (count, period) = match s.split_once('/') {
        Some((c, p)) => (
            c.trim(),
            parse_duration(p).map_err(|_| ParseError::RateSyntax)?,
        ),
        None => (s, Nanos(NANOS_PER_SEC)),
    };
    if count.starts_with('-') {
        return Err(ParseError::RateNotPositive);
    }
    let (num, den) = decimal_or(count, ParseError::RateSyntax, ParseError::RateOutOfRange)?;
    if num == 0 || period.0 == 0 {
        return Err(ParseError::RateNotPositive);
    }
    // num/den tokens per period ns  =  num tokens per (period * den) ns.
    let per = (period.0 as u128)
        .checked_mul(den)
        .ok_or(ParseError::RateOutOfRange)?;
    Rate::new(num, per).ok_or(ParseError::RateOutOfRange)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn div_ceil_is_the_128_bit_quotient_on_either_side_of_64_bits() {
        let edges = [
            1u128,
            2,
            3,
            7,
            1_000_000_000,
            u64::MAX as u128 - 1,
            u64::MAX as u128,
            1 << 64,
            (1 << 64) + 1,
            u128::MAX / 3,
            u128::MAX,
        ];
        for a in std::iter::once(0).chain(edges) {
            for b in edges {
                assert_eq!(div_ceil(a, b), a.div_ceil(b), "{a} / {b}");
            }
        }
    }

    #[test]
    fn durations_parse_exactly_in_every_unit() {
        assert_eq!(parse_duration("250ms"), Ok(Nanos(250_000_000)));
        assert_eq!(parse_duration("1.5s"), Ok(Nanos(1_500_000_000)));
        assert_eq!(parse_duration("2m"), Ok(Nanos(120_000_000_000)));
        assert_eq!(parse_duration("1h"), Ok(Nanos(3_600_000_000_000)));
        assert_eq!(parse_duration("10us"), Ok(Nanos(10_000)));
        assert_eq!(parse_duration("100ns"), Ok(Nanos(100)));
        assert_eq!(parse_duration("0.000000001s"), Ok(Nanos(1)));
        assert_eq!(parse_duration("0s"), Ok(Nanos(0)));
    }

    #[test]
    fn malformed_or_inexact_durations_are_errors() {
        assert_eq!(parse_duration("1.5ns"), Err(ParseError::FractionalNanos));
        assert_eq!(
            parse_duration("0.0000000001s"),
            Err(ParseError::FractionalNanos)
        );
        for bad in ["", "5", "s", "1.2.3s", "-1s", "1 parsec", "1e3s", ".s"] {
            assert_eq!(
                parse_duration(bad),
                Err(ParseError::DurationSyntax),
                "{bad}"
            );
        }
        assert_eq!(
            parse_duration("99999999999h"),
            Err(ParseError::DurationTooLong)
        );
    }

    #[test]
    fn rates_are_exact_reduced_rationals() {
        let r = parse_rate("3/1s").unwrap();
        assert_eq!((r.tokens(), r.per_ns()), (3, 1_000_000_000));
        let r = parse_rate("100/1s").unwrap();
        assert_eq!((r.tokens(), r.per_ns()), (1, 10_000_000));
        let r = parse_rate("1/50ms").unwrap();
        assert_eq!((r.tokens(), r.per_ns()), (1, 50_000_000));
        let r = parse_rate("2.5").unwrap();
        assert_eq!((r.tokens(), r.per_ns()), (1, 400_000_000));
        let r = parse_rate("5/1m").unwrap();
        assert_eq!((r.tokens(), r.per_ns()), (1, 12_000_000_000));
    }

    #[test]
    fn zero_negative_and_malformed_rates_are_errors() {
        assert_eq!(parse_rate("0/1s"), Err(ParseError::RateNotPositive));
        assert_eq!(parse_rate("5/0s"), Err(ParseError::RateNotPositive));
        assert_eq!(parse_rate("-3/1s"), Err(ParseError::RateNotPositive));
        assert_eq!(parse_rate("abc"), Err(ParseError::RateSyntax));
        assert_eq!(parse_rate("3/fortnight"), Err(ParseError::RateSyntax));
        assert_eq!(
            parse_rate("1000000000000000/1ns"),
            Err(ParseError::RateOutOfRange)
        );
        assert_eq!(
            parse_rate("1000000000000000000000000000000"),
            Err(ParseError::RateOutOfRange)
        );
        assert_eq!(
            parse_rate("0.0000000000000000000001"),
            Err(ParseError::RateOutOfRange)
        );
        assert_eq!(parse_rate("5/10 parsecs"), Err(ParseError::RateSyntax));
    }

    #[test]
    fn time_for_rounds_up_to_the_next_nanosecond() {
        let r = parse_rate("3/1s").unwrap();
        assert_eq!(r.time_for(1), Nanos(333_333_334));
        assert_eq!(r.time_for(3), Nanos(1_000_000_000));
    }

    #[test]
    fn nanos_display_uses_the_largest_exact_unit() {
        assert_eq!(Nanos(1_500_000_000).to_string(), "1.5s");
        assert_eq!(Nanos(4_750_000_000).to_string(), "4.75s");
        assert_eq!(Nanos(1_000_000_001).to_string(), "1.000000001s");
        assert_eq!(Nanos(60_000_000_000).to_string(), "1m");
        assert_eq!(Nanos(90_000_000_000).to_string(), "90s");
        assert_eq!(Nanos(1_500_000).to_string(), "1.5ms");
        assert_eq!(Nanos(7).to_string(), "7ns");
        for n in [
            1,
            999,
            1_001,
            123_456_789,
            3_600_000_000_001,
            7_200_000_000_000,
        ] {
            assert_eq!(parse_duration(&Nanos(n).to_string()), Ok(Nanos(n)));
        }
        assert_eq!(decimal(1, 3), "0.333333333");
        assert_eq!(decimal_places(100_000_000, 1_000_000, 3), "100");
    }

    #[test]
    fn seconds_parse_exactly() {
        assert_eq!(parse_seconds("12.000000001"), Ok(Nanos(12_000_000_001)));
        assert_eq!(parse_seconds("0"), Ok(Nanos(0)));
        assert!(parse_seconds("1.0000000001").is_err());
    }
}
