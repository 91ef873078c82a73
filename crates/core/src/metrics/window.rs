//! One id's slot of the recorder: its client's and its key's counts and
//! its key's window of passes, in one 64-byte cache line ([`PerId`]); the
//! carries of counts past 2^32 ([`Wide`]); and the windows that outgrow
//! the slot ([`Spills`]). `peak_in_window` is computed here
//! (docs/semantics.md §3).

use std::collections::{BTreeMap, VecDeque};

/// The counts in an id's slot: its client's logical requests, passes and
/// rejected attempts…
pub(super) const LOGICAL: usize = 0;
pub(super) const CLIENT_PASSED: usize = 1;
pub(super) const CLIENT_REJECTED: usize = 2;
/// …its key's admitted, delayed and rejected attempts…
pub(super) const ADMITTED: usize = 3;
pub(super) const DELAYED: usize = 4;
pub(super) const KEY_REJECTED: usize = 5;
/// …and the most its key passed within one policy window.
pub(super) const PEAK: usize = 6;

/// One id's slot: its client's counts, its key's counts and window of
/// passes — 64 bytes on a 64-byte boundary, one cache line, so that
/// recording an attempt of a client keyed by itself costs one miss.
/// Counts keep their low 32 bits here and their carries in [`Wide`]; the
/// peak is here up to `u32::MAX`, and from there in [`Wide`] too.
#[derive(Debug, Clone, Default)]
#[repr(align(64))]
pub(super) struct PerId {
    pub(super) counts: [u32; 7],
    pub(super) window: Window,
}

impl PerId {
    /// Slot `id` of `ids`, created (with those before it) if need be.
    pub(super) fn of(ids: &mut Vec<PerId>, id: u32) -> &mut PerId {
        let i = id as usize;
        if i >= ids.len() {
            crate::cache::grow_with(ids, i + 1, PerId::default);
        }
        &mut ids[i]
    }
}

/// What of an id's counts does not fit its slot: touched once per 2^32
/// counts, or by a key whose window held `u32::MAX` or more.
#[derive(Debug, Clone, Default)]
pub(super) struct Wide {
    /// How many times count `field` of an id wrapped past `u32::MAX`.
    pub(super) carries: BTreeMap<(u32, usize), u64>,
    /// Peaks of `u32::MAX` or more, by id.
    pub(super) peaks: BTreeMap<u32, u64>,
}

impl Wide {
    #[cold]
    pub(super) fn carry(&mut self, id: u32, field: usize) {
        *self.carries.entry((id, field)).or_default() += 1;
    }

    /// Count `field` of `id`, whose low 32 bits are `low`.
    pub(super) fn count(&self, id: u32, field: usize, low: u32) -> u64 {
        let carries = match self.carries.is_empty() {
            true => 0,
            false => self.carries.get(&(id, field)).copied().unwrap_or(0),
        };
        carries << 32 | low as u64
    }

    #[cold]
    pub(super) fn peak(&mut self, id: u32, sum: u64) {
        let peak = self.peaks.entry(id).or_default();
        *peak = (*peak).max(sum);
    }
}

/// How many passes of cost 1 a key's slot holds (a pass of cost `c` takes
/// `c` of them).
pub(super) const INLINE_PASSES: usize = 5;

/// A key's passes within the policy window of its latest, in time order.
///
/// In its slot, a run of unit passes as 32-bit offsets from `base` (a pass
/// of cost `c` is `c` of them at one time, so the cost they sum to is
/// their number, and the cost in an aligned window is a count from the
/// back). More, or passes too far apart for the offsets, go to a
/// [`Spilled`] window of [`Spills`], which the key holds until its window
/// empties: memory follows the passes in windows, not the requests.
#[derive(Debug, Clone, Default)]
pub(super) struct Window {
    /// The time the offsets count from (at most the oldest's), as its low
    /// and high halves: aligned to 4, the slot stays at 64 bytes.
    pub(super) base: [u32; 2],
    pub(super) offsets: [u32; INLINE_PASSES],
    pub(super) len: u8,
    /// 0 while the passes are in place, else one more than the index of
    /// the key's spilled window.
    pub(super) spill: u32,
}

impl Window {
    pub(super) fn base(&self) -> u64 {
        self.base[0] as u64 | (self.base[1] as u64) << 32
    }

    pub(super) fn time(&self, j: usize) -> u64 {
        self.base() + self.offsets[j] as u64
    }

    /// Records a pass of `cost` at `t` as [`Window::pass`] does, if the key
    /// has no spilled window, every pass it holds has left the policy
    /// window (of `w` ns) of a pass at `t`, and the pass fits in place
    /// (a cost of at most five): the window then holds it alone, which
    /// comes to `(0, cost)` in a few steps — most passes of a quiet key.
    /// Whether it did.
    #[inline(always)]
    pub(super) fn pass_alone(&mut self, t: u64, cost: u64, w: u64) -> bool {
        let len = self.len as usize;
        let alone = self.spill == 0
            && (len == 0 || left(self.time(len - 1), w, t))
            && cost <= INLINE_PASSES as u64;
        if alone {
            // (Offsets past the new length are never read.)
            self.base = [t as u32, (t >> 32) as u32];
            self.offsets = [0; INLINE_PASSES];
            self.len = cost as u8;
        }
        alone
    }

    /// Records a pass of `cost` at `t`, no earlier than the key's last, in
    /// policy windows of `w` ns; `start` is `t − t mod w`. Returns the cost
    /// the key passed before it in `t`'s aligned window `[start, t]`, and
    /// the cost it passed in `(t − w, t]` with this one.
    pub(super) fn pass(
        &mut self,
        spills: &mut Spills,
        t: u64,
        cost: u64,
        w: u64,
        start: u64,
    ) -> (u64, u64) {
        let left = |s: u64| left(s, w, t);
        if self.spill != 0 {
            let i = self.spill as usize - 1;
            if !spills.all[i].forget(left) {
                return spills.all[i].add(t, cost, start);
            }
            // The window emptied: the key's passes go back in place.
            spills.release(i);
            self.spill = 0;
        }
        let len = self.len as usize;
        let gone = match len > 0 && left(self.time(len - 1)) {
            // Everything has left.
            true => len,
            false => (0..len).take_while(|&j| left(self.time(j))).count(),
        };
        if gone > 0 {
            // `copy_within(gone..len, 0)`, in a loop of fixed length: a
            // call to memmove for a few words costs more than they do.
            let old = self.offsets;
            for j in 0..INLINE_PASSES {
                if j + gone < len {
                    self.offsets[j] = old[j + gone];
                }
            }
            self.len -= gone as u8;
        }
        let len = self.len as usize;
        // Every pass in `t`'s aligned window is in `(t − w, t]`: `t` is
        // less than its end, one window after its start.
        let aligned = (0..len).rev().take_while(|&j| self.time(j) >= start);
        let aligned = aligned.count() as u64;
        if cost <= (INLINE_PASSES - len) as u64 {
            if let Some(off) = self.offset(t) {
                let end = len + cost as usize;
                self.offsets[len..end].fill(off);
                self.len = end as u8;
                return (aligned, end as u64);
            }
        }
        let i = spills.take();
        let s = &mut spills.all[i];
        for j in 0..len {
            let tj = self.time(j);
            match s.passes.back_mut() {
                Some(last) if last.0 == tj => last.1 += 1,
                _ => s.passes.push_back((tj, 1)),
            }
        }
        (s.sum, s.aligned, s.in_aligned) = (len as u128, start, aligned);
        self.spill = u32::try_from(i + 1).expect("fewer spilled windows than u32 keys");
        self.len = 0;
        s.add(t, cost, start)
    }

    /// `t`'s offset from `base`, counting from the earliest pass's time
    /// instead if need be; `None` if it does not fit even then.
    pub(super) fn offset(&mut self, t: u64) -> Option<u32> {
        let len = self.len as usize;
        if len == 0 {
            self.base = [t as u32, (t >> 32) as u32];
        }
        if let Some(off) = t
            .checked_sub(self.base())
            .and_then(|d| u32::try_from(d).ok())
        {
            return Some(off);
        }
        // Count from the earliest pass held (the first: they are in time
        // order).
        let first = self.time(0);
        let off = u32::try_from(t.checked_sub(first)?).ok()?;
        let shift = self.offsets[0];
        for o in &mut self.offsets[..len] {
            *o -= shift;
        }
        self.base = [first as u32, (first >> 32) as u32];
        Some(off)
    }
}

/// Whether a pass at `s` has left the policy window (of `w` ns) of a
/// pass at `t`. (A pass at the end of time, from a shaper's saturated
/// release, is in the window of every pass after it: `s + w` does not
/// wrap.)
#[inline(always)]
fn left(s: u64, w: u64, t: u64) -> bool {
    s.checked_add(w).is_some_and(|end| end <= t)
}

/// A key's window of passes that did not fit its slot: `(time, cost)` in
/// time order, their sum, and the cost passed in the aligned window of
/// the latest (which starts at `aligned`). The sum is a `u128`, exact
/// whatever the costs; it is reported saturated at `u64::MAX`.
#[derive(Debug, Clone, Default)]
pub(super) struct Spilled {
    pub(super) passes: VecDeque<(u64, u64)>,
    pub(super) sum: u128,
    pub(super) aligned: u64,
    pub(super) in_aligned: u64,
}

impl Spilled {
    /// Forgets the passes that have `left` the window; whether none is
    /// left.
    pub(super) fn forget(&mut self, left: impl Fn(u64) -> bool) -> bool {
        if self.sum > 0 && self.passes.back().is_some_and(|&(s, _)| left(s)) {
            // Everything has left: forget it without reading it.
            self.passes.clear();
            self.sum = 0;
        }
        while let Some(&(s, c)) = self.passes.front() {
            if !left(s) {
                break;
            }
            self.passes.pop_front();
            self.sum -= u128::from(c);
        }
        self.passes.is_empty()
    }

    /// [`Window::pass`], once the passes that left are forgotten.
    pub(super) fn add(&mut self, t: u64, cost: u64, start: u64) -> (u64, u64) {
        if self.aligned != start {
            (self.aligned, self.in_aligned) = (start, 0);
        }
        let before = self.in_aligned;
        self.in_aligned = self.in_aligned.saturating_add(cost);
        // Passes at one time share an entry while their cost fits it.
        let merged = match self.passes.back_mut() {
            Some(last) if self.sum > 0 && last.0 == t => {
                last.1.checked_add(cost).map(|c| last.1 = c)
            }
            _ => None,
        };
        if merged.is_none() {
            self.passes.push_back((t, cost));
        }
        self.sum += u128::from(cost);
        (before, u64::try_from(self.sum).unwrap_or(u64::MAX))
    }
}

/// The start of the aligned policy window `[s, s + w)` a time is in,
/// remembered: a run's passes come one aligned window after another, so
/// the start is mostly found by two comparisons instead of a 64-bit
/// division at every pass.
#[derive(Debug, Clone, Default)]
pub(super) struct Aligned {
    start: u64,
}

impl Aligned {
    /// `t − t mod w`, for the one `w` the recorder's windows are.
    #[inline]
    pub(super) fn start_of(&mut self, t: u64, w: u64) -> u64 {
        if t < self.start || t - self.start >= w {
            self.start = t - t % w;
        }
        self.start
    }
}

/// The spilled windows of a recorder's keys, and which are free.
#[derive(Debug, Clone, Default)]
pub(super) struct Spills {
    pub(super) all: Vec<Spilled>,
    pub(super) free: Vec<u32>,
}

impl Spills {
    /// An empty spilled window's index.
    pub(super) fn take(&mut self) -> usize {
        match self.free.pop() {
            Some(i) => i as usize,
            None => {
                self.all.push(Spilled::default());
                self.all.len() - 1
            }
        }
    }

    /// Frees spilled window `i` (emptied) for another key; it keeps a
    /// small deque, not a large one.
    pub(super) fn release(&mut self, i: usize) {
        let q = &mut self.all[i].passes;
        q.clear();
        if q.capacity() > 4 * INLINE_PASSES {
            q.shrink_to(4 * INLINE_PASSES);
        }
        self.free.push(i as u32);
    }
}
