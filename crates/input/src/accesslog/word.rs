//! Eight bytes of a line at a time, in one `u64` (the first byte lowest):
//! a search for a byte among few costs less this way than a call to
//! memchr, or a step per byte.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// `b[i..i + 8]` as a word, if eight bytes are there.
#[inline(always)]
pub(super) fn at(b: &[u8], i: usize) -> Option<u64> {
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
