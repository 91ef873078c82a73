//! Unsorted buckets of a ring — a calendar queue's, a reorder window's —
//! as chains of fixed-size blocks from one pool with a free list.
//!
//! A bucket taken gives its blocks back, so the pool holds the most blocks
//! the buckets ever held at once, and a bucket's turn allocates nothing.
//! Where vectors grown by doubling, one per bucket, held 40 % more than
//! their entries, a chain holds its entries and at most one part-filled
//! block of `BLOCK` entries (32 by default; a reorder window's larger
//! entries take 8 a block, so that a bucket of one costs 384 bytes, not
//! 1.5 KiB). The pool grows by segments, each twice the one before, that
//! never move: no block is copied and no page is faulted twice, and a
//! segment of 4 MiB or more asks for huge pages (see [`crate::cache`]),
//! so that a window of hundreds of thousands of entries costs a few page
//! faults, not one per 4 KiB.

/// No block.
const NONE: u32 = u32::MAX;

/// See the module documentation (`BLOCK`: entries in one block).
#[derive(Debug, Clone)]
pub struct Chains<T, const BLOCK: usize = 32> {
    /// Buckets (allocated at the first push).
    slots: usize,
    /// Per bucket.
    chains: Vec<Chain>,
    blocks: Pool<T, BLOCK>,
    /// The first free block, `NONE` if none.
    free: u32,
}

impl<T, const BLOCK: usize> Default for Chains<T, BLOCK> {
    /// No bucket: only a placeholder to move another into.
    fn default() -> Self {
        Chains::new(0)
    }
}

/// One bucket's blocks: the first, the last, and the bucket's entries.
#[derive(Debug, Clone, Copy)]
struct Chain {
    head: u32,
    tail: u32,
    len: u32,
}

const EMPTY: Chain = Chain {
    head: NONE,
    tail: NONE,
    len: 0,
};

#[derive(Debug, Clone)]
struct Block<T, const BLOCK: usize> {
    entries: [T; BLOCK],
    /// The next block of its chain, or of the free list.
    next: u32,
}

/// Blocks in the pool's first segment (a power of two); segment `k`
/// holds `FIRST << k`.
const FIRST: usize = 64;

/// The blocks, numbered from 0 across segments: segment `k` holds at
/// most `FIRST << k` (its length, never its capacity, says when it is
/// full: a clone's capacity is its length).
#[derive(Debug)]
struct Pool<T, const BLOCK: usize> {
    segments: Vec<Vec<Block<T, BLOCK>>>,
}

impl<T: Clone, const BLOCK: usize> Clone for Pool<T, BLOCK> {
    /// Each segment with its own room: a clone grows as the original.
    fn clone(&self) -> Self {
        let segments = self.segments.iter().enumerate().map(|(k, s)| {
            let mut copy = crate::cache::with_capacity_huge(FIRST << k);
            copy.extend_from_slice(s);
            copy
        });
        Pool {
            segments: segments.collect(),
        }
    }
}

/// Block `b`'s segment and its index there: segment `k` starts at block
/// `FIRST · (2^k − 1)`.
#[inline(always)]
fn locate(b: u32) -> (usize, usize) {
    let q = b as usize / FIRST + 1;
    let k = (usize::BITS - 1 - q.leading_zeros()) as usize;
    (k, b as usize - FIRST * ((1 << k) - 1))
}

impl<T, const BLOCK: usize> Pool<T, BLOCK> {
    /// Blocks in the pool: every segment but the last is full.
    fn len(&self) -> usize {
        match self.segments.len() {
            0 => 0,
            k => FIRST * ((1 << (k - 1)) - 1) + self.segments[k - 1].len(),
        }
    }

    #[inline(always)]
    fn get(&self, b: u32) -> &Block<T, BLOCK> {
        let (k, i) = locate(b);
        &self.segments[k][i]
    }

    #[inline(always)]
    fn get_mut(&mut self, b: u32) -> &mut Block<T, BLOCK> {
        let (k, i) = locate(b);
        &mut self.segments[k][i]
    }

    /// Adds a block; its number.
    fn push(&mut self, block: Block<T, BLOCK>) -> u32 {
        let n = self.len();
        let k = self.segments.len();
        if k == 0 || self.segments[k - 1].len() == FIRST << (k - 1) {
            self.segments
                .push(crate::cache::with_capacity_huge(FIRST << k));
        }
        self.segments.last_mut().expect("a segment").push(block);
        // The last number is `NONE`'s: never a block's.
        u32::try_from(n)
            .ok()
            .filter(|&b| b != NONE)
            .expect("under 2^32 − 1 blocks")
    }
}

impl<T, const BLOCK: usize> Chains<T, BLOCK> {
    /// `slots` empty buckets (nothing is allocated before a push).
    pub fn new(slots: usize) -> Self {
        Chains {
            slots,
            chains: Vec::new(),
            blocks: Pool {
                segments: Vec::new(),
            },
            free: NONE,
        }
    }

    /// How many buckets there are.
    pub fn slots(&self) -> usize {
        self.slots
    }
}

impl<T: Copy, const BLOCK: usize> Chains<T, BLOCK> {
    /// Entries in bucket `slot`.
    pub fn len(&self, slot: usize) -> usize {
        self.chains.get(slot).map_or(0, |c| c.len as usize)
    }

    /// Adds `entry` to bucket `slot`: inline while its last block has
    /// room, the common case.
    #[inline]
    pub fn push(&mut self, slot: usize, entry: T) {
        if let Some(c) = self.chains.get_mut(slot) {
            let at = c.len as usize % BLOCK;
            if c.len > 0 && at > 0 {
                c.len = c.len.checked_add(1).expect("under 2^32 entries a bucket");
                let tail = c.tail;
                self.blocks.get_mut(tail).entries[at] = entry;
                return;
            }
        }
        self.push_block(slot, entry);
    }

    /// [`Chains::push`] into a new block (the first push also makes the
    /// buckets).
    #[inline(never)]
    fn push_block(&mut self, slot: usize, entry: T) {
        if self.chains.is_empty() {
            self.chains = vec![EMPTY; self.slots];
        }
        let c = self.chains[slot];
        let b = self.block(entry);
        if c.len > 0 {
            self.blocks.get_mut(c.tail).next = b;
        } else {
            self.chains[slot].head = b;
        }
        self.chains[slot].tail = b;
        // A bucket of 2^32 entries would take 64 GiB of 16-byte entries
        // (and the pool's 32-bit block indices run out first): the count
        // is checked, never wrapped.
        self.chains[slot].len = c.len.checked_add(1).expect("under 2^32 entries a bucket");
    }

    /// A block whose first entry is `entry`: from the free list, else new.
    fn block(&mut self, entry: T) -> u32 {
        match self.free {
            NONE => self.blocks.push(Block {
                entries: [entry; BLOCK],
                next: NONE,
            }),
            b => {
                let block = self.blocks.get_mut(b);
                self.free = block.next;
                block.entries[0] = entry;
                block.next = NONE;
                b
            }
        }
    }

    /// The first entries of bucket `slot` (its first block's): for
    /// prefetching them before it is taken.
    pub fn first(&self, slot: usize) -> &[T] {
        match self.chains.get(slot) {
            Some(c) if c.len > 0 => &self.blocks.get(c.head).entries[..(c.len as usize).min(BLOCK)],
            _ => &[],
        }
    }

    /// Appends bucket `slot`'s entries to `out` and empties it, its blocks
    /// back on the free list.
    pub fn take(&mut self, slot: usize, out: &mut Vec<T>) {
        if let Some(c) = self.chains.get(slot) {
            out.reserve(c.len as usize);
        }
        self.take_with(slot, |entries| out.extend_from_slice(entries));
    }

    /// Hands bucket `slot`'s entries to `f` a block at a time, in order,
    /// and empties it, its blocks back on the free list.
    pub fn take_with(&mut self, slot: usize, mut f: impl FnMut(&[T])) {
        let Some(&c) = self.chains.get(slot) else {
            return;
        };
        let (mut b, mut left) = (c.head, c.len as usize);
        while left > 0 {
            let block = self.blocks.get_mut(b);
            let n = left.min(BLOCK);
            f(&block.entries[..n]);
            left -= n;
            let next = block.next;
            block.next = self.free;
            self.free = b;
            b = next;
        }
        self.chains[slot] = EMPTY;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_grows_as_the_original_does() {
        let mut c = Chains::<u32, 2>::new(3);
        for i in 0..5 {
            c.push(0, i);
        }
        // Three blocks of the first segment's 64: its clone's must keep
        // room for the rest, or a new block goes past the numbering.
        let mut d = c.clone();
        for i in 0..300 {
            c.push(1 + i as usize % 2, i);
            d.push(1 + i as usize % 2, i);
        }
        // Into the second segment: the count is every block's.
        for pool in [&c.blocks, &d.blocks] {
            assert_eq!(pool.segments.len(), 2);
            assert_eq!(pool.len(), pool.segments.iter().map(Vec::len).sum());
        }
        let (mut from_c, mut from_d) = (Vec::new(), Vec::new());
        for slot in 0..3 {
            c.take(slot, &mut from_c);
            d.take(slot, &mut from_d);
        }
        assert_eq!(from_c, from_d);
        assert_eq!(from_c.len(), 305);
    }

    #[test]
    fn blocks_are_numbered_across_segments_each_twice_the_last() {
        let mut want = Vec::new();
        for (k, size) in (0..6).map(|k| (k, FIRST << k)) {
            want.extend((0..size).map(|i| (k, i)));
        }
        let got: Vec<_> = (0..want.len() as u32).map(locate).collect();
        assert_eq!(got, want);
        // The last block number there is: segment 26 starts at 64 · (2^26 − 1).
        assert_eq!(locate(u32::MAX), (26, 63));
    }

    #[test]
    fn buckets_give_back_what_was_pushed_in_order_and_reuse_their_blocks() {
        let mut c = Chains::<u32>::new(3);
        assert_eq!(c.len(1), 0);
        assert!(c.first(1).is_empty());
        for i in 0..100u32 {
            c.push((i % 3) as usize, i);
        }
        assert_eq!(c.len(0), 34);
        assert_eq!(c.first(0), &(0..32).map(|i| 3 * i).collect::<Vec<_>>()[..]);
        let mut out = vec![7];
        c.take(0, &mut out);
        assert_eq!(
            out,
            [7].into_iter()
                .chain((0..34).map(|i| 3 * i))
                .collect::<Vec<_>>()
        );
        assert_eq!(c.len(0), 0);
        let blocks = c.blocks.len();
        // Bucket 0's two blocks are reused: the pool does not grow.
        for i in 0..64 {
            c.push(2, i);
        }
        assert_eq!(c.blocks.len(), blocks);
        out.clear();
        c.take(2, &mut out);
        let want: Vec<u32> = (0..33).map(|i| 3 * i + 2).chain(0..64).collect();
        assert_eq!(out, want);
    }
}
