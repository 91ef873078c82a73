//! Software prefetch: the engine knows which keys its next arrivals will
//! touch before it decides the current one, and asks the CPU to start
//! bringing their state in, so that the cache misses of several decisions
//! overlap instead of following one another. A hint only: nothing is read
//! and no result depends on it.

/// Asks the CPU to bring `slice[i]` (its first cache line) into its
/// cache; nothing if `i` is out of range or the target has no prefetch.
#[inline(always)]
pub fn prefetch<T>(slice: &[T], i: usize) {
    if let Some(x) = slice.get(i) {
        prefetch_ref(x);
    }
}

/// The cache line size of the CPUs this is tuned for.
const LINE: usize = 64;

/// Asks the CPU to bring all of `slice[i]` into its cache: every cache
/// line it touches (an element of 112 bytes may straddle three).
#[inline(always)]
pub fn prefetch_all<T>(slice: &[T], i: usize) {
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
