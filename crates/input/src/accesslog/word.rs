//! Eight bytes of a line at a time, in one `u64` (the first byte lowest):
//! a search for a byte among few costs less this way than a call to
//! memchr, or a step per byte. (A recording's packed requests are read
//! in words too, by [`at`], their varints' ends found by [`HIGHS`]: see
//! `crate::recording`.)

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
/// end, a short line's newline): the first 64 bytes are read eight at a
/// time in a word, which costs less than a call to memchr; the rest by
/// memchr.
pub(super) fn find(b: u8, hay: &[u8]) -> Option<usize> {
    let mut i = 0;
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
}
