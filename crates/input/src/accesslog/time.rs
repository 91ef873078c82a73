//! Time stamps of access logs, parsed exactly into nanoseconds since the
//! Unix epoch (no floating point, as every time in ratesim).
//!
//! | form | example | resolution |
//! |---|---|---|
//! | epoch decimal ([`epoch`]) | `1796085720.239` (nginx `$msec`) | as written |
//! | RFC 3339 / ISO 8601 ([`rfc3339`]) | `2026-12-01T00:42:00.239Z` (Envoy `%START_TIME%`), `2026-12-01T00:42:00+00:00` (nginx `$time_iso8601`) | as written |
//! | nginx `$time_local` ([`time_local`]) | `01/Dec/2026:00:42:00 +0000` | 1 s |

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
    if !(1..=12).contains(&mo) || d == 0 || d > days_in_month(y, mo) || h > 23 || mi > 59 || s > 60
    {
        return Err("is not a valid date and time".into());
    }
    let secs = days_from_civil(y, mo, d) * 86_400 + (h * 3600 + mi * 60 + s) as i64 - offset;
    if secs < 0 {
        return Err("is before 1970".into());
    }
    (secs as u64)
        .checked_mul(NS)
        .and_then(|n| n.checked_add(frac_ns))
        .ok_or_else(|| "is too far in the future".into())
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
}
