//! Time stamps of access logs, parsed exactly into nanoseconds since the
//! Unix epoch (no floating point, as every time in ratesim).
//!
//! | form | example | resolution |
//! |---|---|---|
//! | epoch decimal ([`epoch`]) | `1796085720.239` (nginx `$msec`) | as written |
//! | RFC 3339 / ISO 8601 ([`rfc3339`]) | `2026-12-01T00:42:00.239Z` (Envoy `%START_TIME%`), `2026-12-01T00:42:00+00:00` (nginx `$time_iso8601`) | as written |
//! | nginx `$time_local` ([`time_local`]) | `01/Dec/2026:00:42:00 +0000` | 1 s |
//!
//! Each form has a fast reader of a line's bytes for its plain spelling
//! ([`epoch_fast`], [`rfc3339_fast`], [`time_local_fast`]): no allocation,
//! no wide division. It gives `None` for anything else, which the reader
//! of the text then reads or names the error of, so both agree on every
//! value.

use std::cell::Cell;

const NS: u64 = 1_000_000_000;

/// Decimal `value` in units of `unit_ns` (1 for ns, 10^9 for seconds),
/// exactly: `1796085720.239` seconds is 1796085720239000000 ns. A fraction
/// finer than a nanosecond is an error.
pub fn epoch(value: &str, unit_ns: u64) -> Result<u64, String> {
    let (num, den) = crate::clock::parse_decimal(value.trim()).map_err(|_| {
        "is not a non-negative decimal number (no exponent), e.g. 1796085720.239".to_string()
    })?;
    let total = num
        .checked_mul(unit_ns as u128)
        .ok_or("is too large for a time stamp")?;
    if total % den != 0 {
        return Err("is finer than a nanosecond".into());
    }
    u64::try_from(total / den).map_err(|_| "is too large for a time stamp".into())
}

/// Days from 1970-01-01 to `y-m-d` (proleptic Gregorian; Howard
/// Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        4 | 6 | 9 | 11 => 30,
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

/// Nanoseconds since the epoch of a civil time with an offset from UTC
/// in seconds (east positive).
#[allow(clippy::too_many_arguments)]
fn civil(
    y: i64,
    mo: u32,
    d: u32,
    h: u32,
    mi: u32,
    s: u32,
    frac_ns: u64,
    offset: i64,
) -> Result<u64, String> {
    let minute = minute_of(y, mo, d, h, mi).ok_or_else(invalid)?;
    at_second(minute, s, frac_ns, offset)
}

fn invalid() -> String {
    "is not a valid date and time".into()
}

/// Seconds since the epoch of the start of a civil minute (before any
/// offset from UTC), if it is a valid date and time.
fn minute_of(y: i64, mo: u32, d: u32, h: u32, mi: u32) -> Option<i64> {
    if !(1..=12).contains(&mo) || d == 0 || d > days_in_month(y, mo) || h > 23 || mi > 59 {
        return None;
    }
    Some(days_from_civil(y, mo, d) * 86_400 + i64::from(h * 3600 + mi * 60))
}

/// Nanoseconds since the epoch of second `s` (60: a leap second) and
/// `frac_ns` of the minute starting `minute` s after the epoch, read at
/// `offset` s east of UTC.
fn at_second(minute: i64, s: u32, frac_ns: u64, offset: i64) -> Result<u64, String> {
    if s > 60 {
        return Err(invalid());
    }
    let secs = minute + i64::from(s) - offset;
    if secs < 0 {
        return Err("is before 1970".into());
    }
    (secs as u64)
        .checked_mul(NS)
        .and_then(|n| n.checked_add(frac_ns))
        .ok_or_else(|| "is too far in the future".into())
}

/// The minute the fast reader of a form read last, on this thread: the
/// first 17 bytes of its stamp, which name the minute (`2026-12-01T00:42`
/// and the `:` after, `01/Dec/2026:00:42`), and the minute's
/// [`minute_of`]. A log's lines mostly fall in the minute of the line
/// before, whose date is then a comparison of two words and a byte.
#[derive(Clone, Copy)]
struct Minute {
    key: (u128, u8),
    secs: i64,
}

thread_local! {
    static RFC3339_MINUTE: Cell<Minute> = const { Cell::new(Minute::NONE) };
    static LOCAL_MINUTE: Cell<Minute> = const { Cell::new(Minute::NONE) };
}

impl Minute {
    /// No stamp's: a stamp's first bytes are not all zero.
    const NONE: Minute = Minute {
        key: (0, 0),
        secs: 0,
    };

    /// The minute of stamp `b` (at least 17 bytes), from `cache` if it
    /// holds that minute's, else `of()` (then kept, if valid).
    #[inline(always)]
    fn of(
        cache: &'static std::thread::LocalKey<Cell<Minute>>,
        b: &[u8],
        of: impl FnOnce() -> Option<i64>,
    ) -> Option<i64> {
        let first: [u8; 16] = b.get(..16)?.try_into().ok()?;
        let key = (u128::from_le_bytes(first), *b.get(16)?);
        cache.with(|c| {
            let m = c.get();
            if m.key == key {
                return Some(m.secs);
            }
            let secs = of()?;
            c.set(Minute { key, secs });
            Some(secs)
        })
    }
}

fn num(s: &str) -> Result<u32, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("has {s:?} where digits belong"));
    }
    s.parse().map_err(|_| "has a number out of range".into())
}

/// `±HH:MM`, `±HHMM` or `Z` → seconds east of UTC.
fn offset(s: &str) -> Result<i64, String> {
    if s == "Z" || s == "z" {
        return Ok(0);
    }
    let sign = match s.as_bytes().first() {
        Some(b'+') => 1,
        Some(b'-') => -1,
        _ => return Err("has no time zone (Z or ±HH:MM)".into()),
    };
    let rest = s[1..].replace(':', "");
    if rest.len() != 4 {
        return Err("has a time zone that is not ±HH:MM".into());
    }
    let h = num(&rest[..2])? as i64;
    let m = num(&rest[2..])? as i64;
    Ok(sign * (h * 3600 + m * 60))
}

/// RFC 3339 / ISO 8601 with a zone: `2026-12-01T00:42:00.239Z`,
/// `2026-12-01T00:42:00+00:00`. Returns `(ns since epoch, whole seconds
/// only)`.
pub(crate) fn rfc3339(s: &str) -> Result<(u64, bool), String> {
    let s = s.trim();
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return Err("is not an RFC 3339 time, e.g. 2026-12-01T00:42:00.239Z".into());
    }
    if !s.is_char_boundary(19) || b[13] != b':' || b[16] != b':' {
        return Err("is not an RFC 3339 time, e.g. 2026-12-01T00:42:00.239Z".into());
    }
    let y = num(&s[0..4])? as i64;
    let (mo, d, h, mi, sec) = (
        num(&s[5..7])?,
        num(&s[8..10])?,
        num(&s[11..13])?,
        num(&s[14..16])?,
        num(&s[17..19])?,
    );
    let mut rest = &s[19..];
    let mut frac_ns = 0u64;
    let mut whole = true;
    if let Some(r) = rest.strip_prefix('.') {
        let digits = r.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 9 {
            return Err("has a fraction of a second of 1 to 9 digits only".into());
        }
        frac_ns = num(&r[..digits])? as u64 * 10u64.pow(9 - digits as u32);
        whole = false;
        rest = &r[digits..];
    }
    Ok((civil(y, mo, d, h, mi, sec, frac_ns, offset(rest)?)?, whole))
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// nginx `$time_local`: `01/Dec/2026:00:42:00 +0000` (whole seconds).
pub fn time_local(s: &str) -> Result<u64, String> {
    let bad = || "is not an nginx $time_local, e.g. 01/Dec/2026:00:42:00 +0000".to_string();
    let s = s.trim();
    let (stamp, zone) = s.split_once(' ').ok_or_else(bad)?;
    let b = stamp.as_bytes();
    if b.len() != 20 || b[2] != b'/' || b[6] != b'/' || b[11] != b':' || !stamp.is_ascii() {
        return Err(bad());
    }
    let mo = MONTHS
        .iter()
        .position(|m| *m == &stamp[3..6])
        .ok_or_else(bad)? as u32
        + 1;
    civil(
        num(&stamp[7..11])? as i64,
        mo,
        num(&stamp[0..2])?,
        num(&stamp[12..14])?,
        num(&stamp[15..17])?,
        num(&stamp[18..20])?,
        0,
        offset(zone)?,
    )
}

/// The digits `b` as a number, if all are ASCII digits (at most 19, so
/// that it fits).
fn digits(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 19 {
        return None;
    }
    b.iter().try_fold(0u64, |n, &c| {
        c.is_ascii_digit().then(|| n * 10 + u64::from(c - b'0'))
    })
}

/// Powers of ten up to a second in ns.
const POW10: [u64; 10] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];

/// [`epoch`] of the plain form `DIGITS[.DIGITS]`, read in place; `None` for
/// any other form, for an error, or for a unit coarser than a second.
/// Inlined where it is called: nginx's `$msec` and `$request_time`
/// (seconds, a point and three digits of milliseconds) are read there
/// without a call ([`millis`]; a call each cost the thread parsing the
/// nginx bench log 26 instructions a line, callgrind), any other form by
/// [`epoch_digits`].
#[inline(always)]
pub fn epoch_fast(b: &[u8], unit_ns: u64) -> Option<u64> {
    match unit_ns == NS {
        true => millis(b).or_else(|| epoch_digits(b, unit_ns)),
        false => epoch_digits(b, unit_ns),
    }
}

/// [`epoch_fast`] of a form [`millis`] does not read.
fn epoch_digits(b: &[u8], unit_ns: u64) -> Option<u64> {
    // At most 19 integer digits (they fit a u64), 9 fraction digits and
    // zeros after them; a longer number is left to `epoch`.
    if unit_ns > NS || b.is_empty() || b.len() > 40 {
        return None;
    }
    let i = b
        .iter()
        .position(|c| !c.is_ascii_digit())
        .unwrap_or(b.len());
    let int = whole(&b[..i])?;
    let (mut frac, mut frac_digits) = (0u64, 0usize);
    if i < b.len() {
        if b[i] != b'.' || b.len() == 1 {
            return None;
        }
        for &c in &b[i + 1..] {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                return None;
            }
            if frac_digits < 9 {
                frac = frac * 10 + u64::from(d);
                frac_digits += 1;
            } else if d != 0 {
                return None;
            }
        }
    }
    // frac < 10^9 and unit_ns <= 10^9: no overflow.
    let scaled = if unit_ns == NS {
        frac * POW10[9 - frac_digits]
    } else {
        let den = POW10[frac_digits];
        if (frac * unit_ns) % den != 0 {
            return None;
        }
        frac * unit_ns / den
    };
    int.checked_mul(unit_ns)?.checked_add(scaled)
}

/// `b` of the form `DIGITS.ddd` (seconds, a point, three digits of
/// milliseconds: nginx's `$msec` and `$request_time`) in nanoseconds;
/// `None` for any other form, or if it does not fit (which [`epoch_fast`]
/// then reads its slower way, to the same end).
///
/// The last eight bytes (`'0'`s before a shorter `b`) are the last four
/// digits of the seconds, the point and the milliseconds: without the
/// point, they are seven digits, read in one word. The digits before
/// them, at most eight, are read in another (`$msec` has ten in all,
/// `$request_time` mostly one). [`epoch_fast`]'s path for this form:
/// when it replaced [`whole`] and [`three`] there, the thread parsing
/// 2·10^5 lines of the nginx bench log went from 1 319 to 1 260
/// instructions a line (callgrind, `validate`).
#[inline(always)]
fn millis(b: &[u8]) -> Option<u64> {
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    let n = b.len();
    if !(5..=16).contains(&n) || b[n - 4] != b'.' {
        return None;
    }
    if let [s, _, x, y, z] = *b {
        // `d.ddd`, the usual `$request_time` (under ten seconds), byte by
        // byte: fewer steps than the words below.
        let d = [s, x, y, z].map(|c| u64::from(c.wrapping_sub(b'0')));
        return match d.iter().all(|&d| d <= 9) {
            true => Some((d[0] * 1_000 + d[1] * 100 + d[2] * 10 + d[3]) * 1_000_000),
            false => None,
        };
    }
    let four = |at: usize| {
        Some(u64::from(u32::from_le_bytes(
            b.get(at..at + 4)?.try_into().ok()?,
        )))
    };
    let tail = match super::word::at(b, n.wrapping_sub(8)) {
        Some(last) => last,
        None => {
            // The point and the milliseconds, after the seconds' digits
            // (the first bytes, shifted up) and '0's.
            let out = 8 * (8 - n as u32);
            let first = (four(0)? << out) | (ZEROS & ((1u64 << out) - 1));
            (first & 0xFFFF_FFFF) | (four(n - 4)? << 32)
        }
    };
    // The point dropped: the four digits before it moved up a byte, a
    // '0' in front.
    let low = 0x30 | ((tail & 0xFFFF_FFFF) << 8) | (tail & 0xFFFF_FF00_0000_0000);
    if !eight_digits(low) {
        return None;
    }
    let head = n.saturating_sub(8);
    let high = match head {
        0 => 0,
        _ => {
            // `b`'s first eight bytes, those after the head shifted out and
            // '0's shifted in before it.
            let first = super::word::at(b, 0)?;
            let out = 8 * (8 - head as u32);
            let w = (first << out) | (ZEROS & ((1u64 << out) - 1));
            if !eight_digits(w) {
                return None;
            }
            eight_value(w)
        }
    };
    // `high` ten-thousands of seconds and `eight_value(low)` milliseconds.
    high.checked_mul(10_000 * NS)?
        .checked_add(eight_value(low) * 1_000_000)
}

/// The number the digits of `b` write (0 for none), if `b` is digits
/// only and at most 19 of them (they fit a u64).
fn whole(b: &[u8]) -> Option<u64> {
    if b.len() > 19 {
        return None;
    }
    let (eights, rest) = b.split_at(b.len() / 8 * 8);
    let mut n = 0u64;
    for w in eights.chunks_exact(8) {
        let w = u64::from_le_bytes(w.try_into().ok()?);
        if !eight_digits(w) {
            return None;
        }
        n = n * 100_000_000 + eight_value(w);
    }
    for &c in rest {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u64::from(c - b'0');
    }
    Some(n)
}

/// Whether the eight bytes of `w` (the first in its low byte) are all
/// ASCII digits: each byte's high nibble is 3, and adding 6 leaves it 3.
fn eight_digits(w: u64) -> bool {
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    let sixes = w.wrapping_add(0x0606_0606_0606_0606);
    (w & HIGH) | ((sixes & HIGH) >> 4) == 0x3333_3333_3333_3333
}

/// The number the eight digits of `w` write (the first, the most
/// significant, in its low byte): pairs, then fours, then the eight, by
/// three multiplications in place of eight.
fn eight_value(w: u64) -> u64 {
    let d = w - 0x3030_3030_3030_3030;
    // Each byte pair's low byte: its two digits as a number (< 100).
    let pairs = d.wrapping_mul(10).wrapping_add(d >> 8);
    const LOW_OF_FOURS: u64 = 0x0000_00FF_0000_00FF;
    let hundreds = (pairs & LOW_OF_FOURS).wrapping_mul(100 + (1_000_000 << 32));
    let ones = ((pairs >> 16) & LOW_OF_FOURS).wrapping_mul(1 + (10_000 << 32));
    hundreds.wrapping_add(ones) >> 32
}

/// Three digits, `b` whole, as a number.
#[inline(always)]
fn three(b: &[u8]) -> Option<u64> {
    match *b {
        [x, y, z] if x.is_ascii_digit() && y.is_ascii_digit() && z.is_ascii_digit() => {
            Some(u64::from(x - b'0') * 100 + u64::from(y - b'0') * 10 + u64::from(z - b'0'))
        }
        _ => None,
    }
}

/// The two digits at `b[i..i + 2]` as a number.
fn two(b: &[u8], i: usize) -> Option<u32> {
    let (x, y) = (b[i], b[i + 1]);
    (x.is_ascii_digit() && y.is_ascii_digit())
        .then(|| u32::from(x - b'0') * 10 + u32::from(y - b'0'))
}

/// `Z`, `±HH:MM` or `±HHMM` → seconds east of UTC.
fn offset_fast(b: &[u8]) -> Option<i64> {
    let sign = match b {
        b"Z" | b"z" => return Some(0),
        [b'+', ..] => 1,
        [b'-', ..] => -1,
        _ => return None,
    };
    let (h, m) = match b.len() {
        6 if b[3] == b':' => (two(b, 1)?, two(b, 4)?),
        5 => (two(b, 1)?, two(b, 3)?),
        _ => return None,
    };
    Some(sign * (i64::from(h) * 3600 + i64::from(m) * 60))
}

/// [`rfc3339`] of the plain form `2026-12-01T00:42:00[.239](Z|±HH:MM)`.
pub fn rfc3339_fast(b: &[u8]) -> Option<(u64, bool)> {
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let minute = Minute::of(&RFC3339_MINUTE, b, || {
        let y = two(b, 0)? * 100 + two(b, 2)?;
        minute_of(
            i64::from(y),
            two(b, 5)?,
            two(b, 8)?,
            two(b, 11)?,
            two(b, 14)?,
        )
    })?;
    let sec = two(b, 17)?;
    let mut rest = &b[19..];
    // Envoy's `%START_TIME%`: milliseconds and `Z`, read in one step.
    if let [b'.', ms @ .., b'Z'] = rest {
        if let Some(ms) = three(ms) {
            let t = at_second(minute, sec, ms * 1_000_000, 0).ok()?;
            return Some((t, false));
        }
    }
    let (mut frac_ns, mut whole) = (0u64, true);
    if let [b'.', r @ ..] = rest {
        let n = r.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 || n > 9 {
            return None;
        }
        frac_ns = digits(&r[..n])? * 10u64.pow(9 - n as u32);
        whole = false;
        rest = &r[n..];
    }
    let t = at_second(minute, sec, frac_ns, offset_fast(rest)?).ok()?;
    Some((t, whole))
}

/// [`time_local`] of the plain form `01/Dec/2026:00:42:00 +0000`.
pub fn time_local_fast(b: &[u8]) -> Option<u64> {
    if b.len() < 22
        || b[2] != b'/'
        || b[6] != b'/'
        || b[11] != b':'
        || b[14] != b':'
        || b[17] != b':'
        || b[20] != b' '
    {
        return None;
    }
    let minute = Minute::of(&LOCAL_MINUTE, b, || {
        let mo = MONTHS.iter().position(|m| m.as_bytes() == &b[3..6])? as u32 + 1;
        let y = two(b, 7)? * 100 + two(b, 9)?;
        minute_of(i64::from(y), mo, two(b, 0)?, two(b, 12)?, two(b, 15)?)
    })?;
    at_second(minute, two(b, 18)?, 0, offset_fast(&b[21..])?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_decimals_are_exact() {
        assert_eq!(epoch("1796085720.239", NS), Ok(1_796_085_720_239_000_000));
        assert_eq!(
            epoch("1796085720239", 1_000_000),
            Ok(1_796_085_720_239_000_000)
        );
        assert_eq!(epoch("0.000000001", NS), Ok(1));
        assert!(epoch("0.0000000001", NS).is_err());
        assert!(epoch("1e9", NS).is_err());
        assert!(epoch("-1", NS).is_err());
    }

    #[test]
    fn the_three_forms_of_one_instant_agree() {
        let t = 1_796_085_720_000_000_000;
        assert_eq!(time_local("01/Dec/2026:00:42:00 +0000"), Ok(t));
        assert_eq!(time_local("01/Dec/2026:01:42:00 +0100"), Ok(t));
        assert_eq!(rfc3339("2026-12-01T00:42:00+00:00"), Ok((t, true)));
        assert_eq!(
            rfc3339("2026-12-01T00:42:00.239Z"),
            Ok((t + 239_000_000, false))
        );
        assert_eq!(
            rfc3339("2026-11-30T19:42:00.5-05:00"),
            Ok((t + 500_000_000, false))
        );
        assert_eq!(rfc3339("1970-01-01T00:00:00Z"), Ok((0, true)));
    }

    #[test]
    fn impossible_dates_are_refused() {
        assert!(rfc3339("2026-02-29T00:00:00Z").is_err());
        assert!(rfc3339("2024-02-29T00:00:00Z").is_ok());
        assert!(time_local("31/Apr/2026:00:00:00 +0000").is_err());
        assert!(time_local("01/Foo/2026:00:00:00 +0000").is_err());
        assert!(rfc3339("1969-12-31T23:59:59Z").is_err());
        assert!(rfc3339("2026-12-01T00:42:00").is_err());
    }

    /// Strings near each form: a few characters of each kind a stamp has,
    /// in random order and length, and the forms themselves edited.
    fn near(seed: u64, forms: &[&str], alphabet: &[u8]) -> Vec<String> {
        let mut x = seed;
        let mut next = move |n: usize| crate::pick(&mut x, n);
        let mut out = Vec::new();
        for _ in 0..20_000 {
            let mut s: Vec<u8> = forms[next(forms.len())].as_bytes().to_vec();
            for _ in 0..next(3) {
                let at = next(s.len() + 1);
                match next(3) {
                    0 if at < s.len() => s[at] = alphabet[next(alphabet.len())],
                    1 if at < s.len() => {
                        s.remove(at);
                    }
                    _ => s.insert(at, alphabet[next(alphabet.len())]),
                }
            }
            out.extend(String::from_utf8(s).ok());
        }
        out
    }

    /// Eight digits read at once are the number they write, and any
    /// other eight bytes are not taken for digits.
    #[test]
    fn eight_digits_at_once_are_the_digits_one_by_one() {
        let mut x = 7u64;
        for n in 0..200_000u64 {
            crate::lcg(&mut x);
            let w = match n % 3 {
                // Digits only.
                0 => (0..8).fold(0u64, |w, k| {
                    w | ((b'0' + ((x >> (5 * k)) % 10) as u8) as u64) << (8 * k)
                }),
                // Digits and a byte near them.
                1 => {
                    let k = (x >> 40) % 8;
                    let near = [b'/', b':', b'.', 0x30 + 0x80, 0x3a, 0x2f, 0xff, 0]
                        [((x >> 50) % 8) as usize];
                    let w = u64::from_le_bytes(*b"12345678");
                    (w & !(0xff << (8 * k))) | (u64::from(near) << (8 * k))
                }
                _ => x,
            };
            let bytes = w.to_le_bytes();
            let digits = bytes.iter().all(u8::is_ascii_digit);
            assert_eq!(eight_digits(w), digits, "{bytes:?}");
            if digits {
                let one_by_one = bytes.iter().fold(0, |v, c| v * 10 + u64::from(c - b'0'));
                assert_eq!(eight_value(w), one_by_one, "{bytes:?}");
            }
        }
        assert_eq!(eight_value(u64::from_le_bytes(*b"99999999")), 99_999_999);
        assert_eq!(eight_value(u64::from_le_bytes(*b"00000001")), 1);
        assert_eq!(eight_value(u64::from_le_bytes(*b"10000000")), 10_000_000);
    }

    // The fast readers are a shortcut: whatever they read, the readers of
    // the text read the same; the plain forms they all read.
    #[test]
    fn the_fast_readers_agree_with_the_readers_of_the_text() {
        let forms = [
            "1796085720.239",
            "0.000",
            "1796085720",
            "0.012",
            "00012.5000000000",
            "18446744073.709551615",
            // `DIGITS.ddd` of every length [`millis`] reads, and longer.
            "1.234",
            "12.345",
            "123.456",
            "1234.567",
            "12345.678",
            "123456.789",
            "1234567.890",
            "12345678.901",
            "123456789.012",
            "12345678901.234",
            "000001234567.890",
            "0000001234567.890",
            "00018446744073.709",
        ];
        for s in near(1, &forms, b"0123456789. -e") {
            for unit in [1, 1_000, 1_000_000, NS] {
                if let Some(t) = epoch_fast(s.as_bytes(), unit) {
                    assert_eq!(epoch(&s, unit), Ok(t), "{s:?} {unit}");
                }
            }
        }
        assert_eq!(
            epoch_fast(b"1796085720.239", NS),
            Some(1_796_085_720_239_000_000)
        );
        assert!(forms.iter().all(|f| epoch_fast(f.as_bytes(), NS).is_some()));
        let ms: Vec<&str> = (forms.iter().copied())
            .filter(|f| f.len() <= 16 && f.as_bytes()[f.len() - 4] == b'.')
            .collect();
        assert_eq!(ms.len(), 14);
        for f in ms {
            assert_eq!(millis(f.as_bytes()), epoch(f, NS).ok(), "{f}");
        }
        // `d.ddd`, read byte by byte.
        assert_eq!(millis(b"9.999"), Some(9_999_000_000));
        assert_eq!(millis(b"0.0a0"), None);
        assert_eq!(millis(b"/.000"), None);
        assert_eq!(millis(b"99999999999.999"), None);
        assert_eq!(millis(b"123456789012.345"), None);
        // Seconds and three digits of milliseconds, as nginx logs them.
        assert_eq!(epoch_fast(b"0.012", NS), Some(12_000_000));
        assert_eq!(epoch_fast(b".012", NS), Some(12_000_000));
        assert_eq!(epoch(".012", NS), Ok(12_000_000));
        assert_eq!(
            epoch_fast(b"18446744073.709", NS),
            Some(18_446_744_073_709_000_000)
        );
        assert_eq!(epoch_fast(b"18446744074.000", NS), None);
        assert_eq!(epoch_fast(b"99999999999999999999.000", NS), None);
        assert_eq!(epoch_fast(b"1764547200.0x0", NS), None);
        let forms = [
            "2026-12-01T00:42:00.239Z",
            "2026-12-01T00:42:00+00:00",
            "2024-02-29t23:59:60.123456789-0530",
            "1970-01-01 00:00:00Z",
        ];
        for s in near(2, &forms, b"0123456789-:.TtZz +") {
            if let Some(t) = rfc3339_fast(s.as_bytes()) {
                assert_eq!(rfc3339(&s), Ok(t), "{s:?}");
            }
        }
        assert!(forms.iter().all(|f| rfc3339_fast(f.as_bytes()).is_some()));
        let forms = [
            "01/Dec/2026:00:42:00 +0000",
            "29/Feb/2024:23:59:59 -0130",
            "31/Apr/2026:00:00:00 +0000",
        ];
        for s in near(3, &forms, b"0123456789/:+- DecFebApr") {
            if let Some(t) = time_local_fast(s.as_bytes()) {
                assert_eq!(time_local(&s), Ok(t), "{s:?}");
            }
        }
        assert!(forms[..2]
            .iter()
            .all(|f| time_local_fast(f.as_bytes()).is_some()));
    }

    /// Stamps of instants a few ms to a day apart, across minutes, days, a
    /// leap day and years, in several offsets (UTC as `Z` half the time,
    /// as Envoy writes it): the fast readers, which keep the last minute
    /// they read, read each as its instant and as the readers of the text
    /// do.
    #[test]
    fn the_minute_kept_is_the_minute_read() {
        // Howard Hinnant's civil_from_days: days since 1970-01-01 → date.
        fn date(z: i64) -> (i64, u32, u32) {
            let z = z + 719_468;
            let era = z.div_euclid(146_097);
            let doe = z - era * 146_097;
            let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
            let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
            let mp = (5 * doy + 2) / 153;
            let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
            let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
            (yoe + era * 400 + i64::from(m <= 2), m, d)
        }
        let mut x = 17u64;
        let mut next = move |n: u64| crate::pick(&mut x, n as usize) as u64;
        // 2023-12-31T23:58:00Z, in ms.
        let mut ms: i64 = 1_704_067_080_000;
        let (mut hits, mut minutes) = (0, std::collections::BTreeSet::new());
        for _ in 0..200_000 {
            ms += match next(100) {
                // Less than a day: no day is passed over.
                0 => next(86_400_000) as i64,
                1..=4 => next(120_000) as i64,
                _ => next(400) as i64,
            };
            let offset_min: i64 = [0, 330, -90, 60][next(4) as usize];
            let local = ms / 1000 + offset_min * 60;
            let (y, mo, d) = date(local.div_euclid(86_400));
            let sod = local.rem_euclid(86_400);
            let (h, mi, sec) = (sod / 3600, sod / 60 % 60, sod % 60);
            let sign = if offset_min < 0 { '-' } else { '+' };
            let numeric = format!(
                "{sign}{:02}:{:02}",
                offset_min.abs() / 60,
                offset_min.abs() % 60
            );
            // UTC as `Z` half the time (Envoy's form), else as an offset.
            let zone = match (offset_min, next(2)) {
                (0, 0) => "Z".to_string(),
                _ => numeric.clone(),
            };
            let iso = format!(
                "{y}-{mo:02}-{d:02}T{h:02}:{mi:02}:{sec:02}.{:03}{zone}",
                ms % 1000
            );
            let want = ms as u64 * 1_000_000;
            assert_eq!(rfc3339_fast(iso.as_bytes()), Some((want, false)), "{iso}");
            assert_eq!(rfc3339(&iso), Ok((want, false)), "{iso}");
            let name = MONTHS[mo as usize - 1];
            let clf = format!(
                "{d:02}/{name}/{y}:{h:02}:{mi:02}:{sec:02} {}",
                numeric.replace(':', "")
            );
            let want = (ms / 1000) as u64 * NS;
            assert_eq!(time_local_fast(clf.as_bytes()), Some(want), "{clf}");
            assert_eq!(time_local(&clf), Ok(want), "{clf}");
            hits += u64::from(!minutes.insert((y, mo, d, h, mi)));
        }
        // Mostly the minute of the stamp before; many minutes, and a
        // leap day, passed.
        assert!(
            hits > 150_000 && minutes.len() > 1_000,
            "{hits} {}",
            minutes.len()
        );
        assert!(minutes
            .iter()
            .any(|&(y, mo, d, ..)| (y, mo, d) == (2024, 2, 29)));
    }
}
