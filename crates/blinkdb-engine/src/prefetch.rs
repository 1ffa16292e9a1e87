//! A hint to start loading a cache line, so that batches of random probes
//! (Bloom lines, cuckoo buckets) overlap their cache misses instead of
//! waiting for each in turn.

/// Starts loading the line holding `p` into every cache level. Only a hint:
/// it never faults, whatever `p` is, and does nothing off x86-64.
#[inline(always)]
pub(crate) fn line<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch reads nothing into the program and never faults.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
