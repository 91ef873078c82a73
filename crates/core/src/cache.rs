//! Hints to the hardware about the per-key tables, which nothing reads
//! back and no result depends on.
//!
//! - Software prefetch: the engine knows which keys its next arrivals will
//!   touch before it decides the current one, and asks the CPU to start
//!   bringing their state in, so that the cache misses of several
//!   decisions overlap instead of following one another.
//! - Huge pages: a table of 10^5 keys or more spans thousands of 4 KiB
//!   pages, more than the TLB holds, so nearly every key touched costs a
//!   page walk as well as a miss. On Linux the tables that grow with keys
//!   ask for transparent 2 MiB pages ([`grow_with`]); where the system
//!   gives them (`madvise` or `always` in
//!   `/sys/kernel/mm/transparent_hugepage/enabled`) a table costs a few TLB
//!   entries.

/// Asks the CPU to bring `slice[i]` (its first cache line) into its
/// cache; nothing if `i` is out of range or the target has no prefetch.
#[inline(always)]
pub(crate) fn prefetch<T>(slice: &[T], i: usize) {
    if let Some(x) = slice.get(i) {
        prefetch_ref(x);
    }
}

/// The cache line size of the CPUs this is tuned for.
const LINE: usize = 64;

/// Asks the CPU to bring all of `slice[i]` into its cache: every cache
/// line it touches (an element of 112 bytes may straddle three).
#[inline(always)]
pub(crate) fn prefetch_all<T>(slice: &[T], i: usize) {
    if let Some(x) = slice.get(i) {
        let first = (x as *const T).cast::<u8>();
        let lines = (first as usize % LINE + size_of::<T>()).div_ceil(LINE);
        for l in 0..lines {
            prefetch_ptr(first.wrapping_add(l * LINE));
        }
    }
}

/// Asks the CPU to bring the cache line holding `x` into its cache.
#[inline(always)]
pub fn prefetch_ref<T>(x: &T) {
    prefetch_ptr((x as *const T).cast::<u8>());
}

/// Asks the CPU to bring the cache line holding `p` into its cache. `p`
/// is never read: any address will do.
#[inline(always)]
fn prefetch_ptr(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing into the program and cannot fault,
    // whatever the address. (The intrinsic is safe to call on newer
    // toolchains, hence the allow.)
    #[allow(unused_unsafe)]
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// `v.resize_with(len, f)`, asking for huge pages (see [`huge_pages`])
/// for the room a reallocation adds: for the tables that grow with keys.
pub(crate) fn grow_with<T>(v: &mut Vec<T>, len: usize, f: impl FnMut() -> T) {
    let capacity = v.capacity();
    if len > capacity {
        v.reserve(len - v.len());
        huge_pages(v);
    }
    v.resize_with(len, f);
}

/// `Vec::with_capacity(n)`, asking for huge pages (see [`huge_pages`])
/// for the room: for a buffer that is filled and never moves.
pub(crate) fn with_capacity_huge<T>(n: usize) -> Vec<T> {
    let v = Vec::with_capacity(n);
    huge_pages(&v);
    v
}

/// Sets the C allocator (glibc; elsewhere a no-op) for tables that grow
/// with keys. Call it before any thread starts.
///
/// - One arena for every thread: a run's tables grow on the threads that
///   simulate it; with an arena per thread, what one thread freed stayed
///   resident in its arena while another asked the system for more.
/// - A fixed mmap threshold of 128 KiB: glibc otherwise raises it to the
///   size of each large block freed (up to 32 MiB), after which the
///   next, doubled, tables are allocated and freed inside the heap, whose
///   holes stay resident.
///
/// Measured, one token bucket at 10^6 Poisson clients: 175 → 158 MB peak
/// RSS for the first, 151 → 143 MB for the second (with the calendar's
/// block pool). The first costs no measurable time (speed.toml, one thread
/// and two); the second about 3 % of speed.toml's CPU time, the page
/// faults of the fresh mappings it makes.
pub fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::ffi::c_int;
        const M_MMAP_THRESHOLD: c_int = -3;
        const M_ARENA_MAX: c_int = -8;
        extern "C" {
            fn mallopt(param: c_int, value: c_int) -> c_int;
        }
        // SAFETY: `mallopt` only sets parameters of the C allocator; with
        // no other thread running yet nothing races it, and a refusal
        // (returned 0) leaves the default, which merely takes more memory.
        unsafe {
            mallopt(M_ARENA_MAX, 1);
            mallopt(M_MMAP_THRESHOLD, 128 << 10);
        }
    }
}

/// Asks the kernel to back `v`'s whole allocation with 2 MiB pages where
/// the system allows it (transparent huge pages in `madvise` mode): the
/// pages not yet touched get them when first written, so a table of
/// millions of keys costs a few TLB entries instead of thousands. Changes
/// nothing else; a table under 4 MiB is left alone.
fn huge_pages<T>(v: &Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        const MADV_HUGEPAGE: std::ffi::c_int = 14;
        extern "C" {
            fn madvise(
                addr: *mut std::ffi::c_void,
                len: usize,
                advice: std::ffi::c_int,
            ) -> std::ffi::c_int;
        }
        let bytes = v.capacity() * size_of::<T>();
        if bytes < 4 << 20 {
            return;
        }
        let start = (v.as_ptr() as usize).next_multiple_of(PAGE);
        let end = (v.as_ptr() as usize + bytes) / PAGE * PAGE;
        if end > start {
            // SAFETY: the range lies within `v`'s allocation, and the advice
            // changes how it is backed, never what it holds; a refusal is
            // ignored.
            unsafe {
                madvise(start as *mut std::ffi::c_void, end - start, MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growing_a_table_is_resizing_it_with_amortized_reallocations() {
        let mut v: Vec<u64> = Vec::new();
        let mut reallocations = 0;
        let mut n = 0u64;
        for len in 1..=(1 << 20) {
            let capacity = v.capacity();
            grow_with(&mut v, len, || {
                n += 1;
                n
            });
            reallocations += usize::from(v.capacity() != capacity);
        }
        assert!(v.iter().copied().eq(1..=(1 << 20)));
        // Doubling, as `push` does: about log2 of the length, not one per
        // key. (The tables past 4 MiB also asked for huge pages; what they
        // hold is the same.)
        assert!(reallocations <= 22, "{reallocations}");
        grow_with(&mut v, 3, || 0);
        assert_eq!(v, [1, 2, 3]);
    }
}
