//! Eight bytes of a line at a time, in one `u64` (the first byte lowest),
//! or sixteen, compared at once ([`sixteen`]): a search for a byte among
//! few costs less this way than a call to memchr, or a step per byte.
//! (A recording's packed requests are read in words too, by [`at`],
//! their varints' ends found by [`HIGHS`]: see `crate::recording`.)

const ONES: u64 = 0x0101_0101_0101_0101;
/// Each byte's high bit.
pub(crate) const HIGHS: u64 = 0x8080_8080_8080_8080;

/// `b[i..i + 8]` as a word, if eight bytes are there.
#[inline(always)]
pub(crate) fn at(b: &[u8], i: usize) -> Option<u64> {
    b.get(i..i.wrapping_add(8))?
        .try_into()
        .ok()
        .map(u64::from_le_bytes)
}

/// A high bit for each byte of `w` below `n` (at most 0x80), and maybe
/// for bytes after one (a borrow only marks bytes above a marked one): the
/// lowest marked byte is the first below `n`, and a word with none below
/// `n` has no mark.
#[inline(always)]
pub(super) fn below(w: u64, n: u8) -> u64 {
    w.wrapping_sub(ONES * u64::from(n)) & !w & HIGHS
}

/// [`below`] for the bytes equal to `c`.
#[inline(always)]
pub(super) fn equal(w: u64, c: u8) -> u64 {
    below(w ^ (ONES * u64::from(c)), 1)
}

/// The index of the lowest marked byte of non-zero `marks`.
#[inline(always)]
pub(super) fn first(marks: u64) -> usize {
    (marks.trailing_zeros() / 8) as usize
}

/// The first `b` in `hay`. What is looked for is mostly near (a field's
/// end, a short line's newline): the first 64 bytes are read sixteen at
/// a time ([`sixteen`]), then eight in a word, which costs less than a
/// call to memchr; the rest by memchr.
pub(super) fn find(b: u8, hay: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < 64 {
        let Some(chunk) = hay[i..].first_chunk::<16>() else {
            break;
        };
        let found = sixteen(chunk, b);
        if found != 0 {
            return Some(i + found.trailing_zeros() as usize);
        }
        i += 16;
    }
    while i < 64 {
        let Some(w) = at(hay, i) else {
            break;
        };
        let marks = equal(w, b);
        if marks != 0 {
            return Some(i + first(marks));
        }
        i += 8;
    }
    match hay.len() - i {
        0..8 => hay[i..].iter().position(|&c| c == b).map(|j| i + j),
        _ => memchr::memchr(b, &hay[i..]).map(|j| i + j),
    }
}

/// The longest line [`places`] reads.
pub(super) const PLACED: usize = 64;

/// A bit for each place `b` is in `line` (bit `i`: `line[i]`), a line of
/// at most [`PLACED`] bytes: read sixteen bytes at a time, so that every
/// field of a short line whose fields end at `b` is then found with a
/// count of trailing zeros. (This, [`find`] reading sixteen bytes at a
/// time, and the short path inlined into the parsing loop, took the
/// thread that parses the nginx bench log from 1 073 to 985 instructions
/// a line, and the Envoy bench log's from 1 230 to 1 048; callgrind,
/// 10^6 lines each.)
#[inline(always)]
pub(super) fn places(line: &[u8], b: u8) -> u64 {
    debug_assert!(line.len() <= PLACED);
    let len = line.len();
    if len < 16 {
        // Copied into sixteen bytes: what follows the line is not looked
        // at (its bits are dropped).
        let mut chunk = [0u8; 16];
        chunk[..len].copy_from_slice(line);
        return u64::from(sixteen(&chunk, b)) & ((1 << len) - 1);
    }
    let mut out = 0;
    let mut at = 0;
    while let Some(chunk) = line[at..].first_chunk::<16>() {
        out |= u64::from(sixteen(chunk, b)) << at;
        at += 16;
    }
    // The last sixteen bytes, of which those before `at` were read.
    if let (true, Some(chunk)) = (at < len, line.last_chunk::<16>()) {
        out |= u64::from(sixteen(chunk, b)) >> (at + 16 - len) << at;
    }
    out
}

/// [`places`] of sixteen bytes.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn sixteen(chunk: &[u8; 16], b: u8) -> u16 {
    use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8};
    // SAFETY: the target has SSE2 (the `cfg` above; every x86-64 CPU
    // does), and the load reads the sixteen bytes of `chunk`, which it
    // may read unaligned.
    unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast());
        _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8))) as u16
    }
}

/// [`sixteen`] in two words (for targets without SSE2; tested beside
/// it on x86-64): a byte equal to `b` is zero after an exclusive or, and
/// its high bit is set by a test that, unlike [`below`], marks no other
/// byte; a multiplication gathers the eight high bits into one byte.
#[cfg(any(test, not(all(target_arch = "x86_64", target_feature = "sse2"))))]
fn sixteen_in_words(chunk: &[u8; 16], b: u8) -> u16 {
    const LOWS: u64 = !HIGHS;
    let mut found = 0u16;
    for half in 0..2 {
        let word = u64::from_le_bytes(std::array::from_fn(|i| chunk[8 * half + i]));
        let x = word ^ (ONES * u64::from(b));
        let zero = !(((x & LOWS) + LOWS) | x) & HIGHS;
        let bits = ((zero >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u16;
        found |= bits << (8 * half);
    }
    found
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
fn sixteen(chunk: &[u8; 16], b: u8) -> u16 {
    sixteen_in_words(chunk, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_byte_is_found_where_memchr_finds_it() {
        let mut x = 3u64;
        for len in 0..200usize {
            for _ in 0..20 {
                let hay: Vec<u8> = (0..len)
                    .map(|_| [b' ', b'a', 0x80, 0xff, 0, b'!'][crate::pick(&mut x, 6)])
                    .collect();
                for b in [b' ', 0x80, 0xff, 0, b'!', b'z'] {
                    assert_eq!(find(b, &hay), memchr::memchr(b, &hay), "{b} in {hay:?}");
                }
            }
        }
    }

    #[test]
    fn places_mark_every_place_of_the_byte() {
        let mut x = 5u64;
        // Bytes one apart too (' ' and '!', 0 and 1): a borrow from one
        // would mark the other in a test less exact.
        let alphabet = [b' ', b'!', b'"', b'a', 0, 1, 0x80, 0xff, b'0', b'\n'];
        for len in 0..=PLACED {
            for _ in 0..40 {
                let line: Vec<u8> = (0..len)
                    .map(|_| alphabet[crate::pick(&mut x, alphabet.len())])
                    .collect();
                for b in alphabet {
                    let want = line
                        .iter()
                        .enumerate()
                        .filter(|(_, &c)| c == b)
                        .fold(0u64, |m, (i, _)| m | 1 << i);
                    assert_eq!(places(&line, b), want, "{b:?} in {line:?}");
                    // The way without SSE2 says the same of sixteen bytes.
                    let mut chunk = [0u8; 16];
                    let m = len.min(16);
                    chunk[..m].copy_from_slice(&line[..m]);
                    assert_eq!(sixteen_in_words(&chunk, b), sixteen(&chunk, b));
                }
            }
        }
    }
}
