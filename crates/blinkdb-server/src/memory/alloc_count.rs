//! `used_memory` as Redis counts it (zmalloc): the bytes the process has
//! allocated, kept by a global allocator that wraps the system one.
//!
//! Each thread adds its allocations and frees to a thread-local delta and
//! folds it into one global atomic only once it passes `BATCH` either way,
//! so the hot path (a GET/SET allocates and frees a few small buffers whose
//! sum hovers near zero) touches no shared cache line. A reader therefore
//! misses at most `BATCH` bytes per other thread; the reading thread adds its
//! own delta. A thread's remainder is folded when it exits.
//!
//! Sizes are counted as glibc's malloc rounds them (an 8-byte header, 16-byte
//! granules, 32 bytes at least), the heap the process really holds, as Redis
//! counts jemalloc's size classes rather than the sizes asked for.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, Ordering};

/// How far a thread's delta may drift before it is folded into `TOTAL`.
const BATCH: i64 = 16 * 1024;

static TOTAL: AtomicI64 = AtomicI64::new(0);

/// A thread's not yet folded delta; folded when the thread exits.
struct Local(Cell<i64>);

impl Drop for Local {
    fn drop(&mut self) {
        TOTAL.fetch_add(self.0.replace(0), Ordering::Relaxed);
    }
}

thread_local! {
    static LOCAL: Local = const { Local(Cell::new(0)) };
}

/// The heap glibc's malloc takes for `size` bytes (its request2size).
#[inline]
fn chunk(size: usize) -> i64 {
    (((size + 8 + 15) & !15).max(32)) as i64
}

#[inline]
fn note(delta: i64) {
    // Once the thread's slot is gone (during its exit), count directly.
    if LOCAL
        .try_with(|l| {
            let v = l.0.get() + delta;
            if v >= BATCH || v <= -BATCH {
                TOTAL.fetch_add(v, Ordering::Relaxed);
                l.0.set(0);
            } else {
                l.0.set(v);
            }
        })
        .is_err()
    {
        TOTAL.fetch_add(delta, Ordering::Relaxed);
    }
}

/// Bytes allocated through Rust's allocator (INFO `used_memory`), within
/// `BATCH` per other thread.
pub fn allocated() -> u64 {
    let own = LOCAL.try_with(|l| l.0.get()).unwrap_or(0);
    (TOTAL.load(Ordering::Relaxed) + own).max(0) as u64
}

/// The system allocator, counted.
pub struct Counting;

// SAFETY: every call is forwarded unchanged to `System`; the counting only
// touches a thread-local cell and an atomic, and never allocates.
unsafe impl GlobalAlloc for Counting {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            note(chunk(layout.size()));
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            note(chunk(layout.size()));
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        note(-chunk(layout.size()));
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            note(chunk(new_size) - chunk(layout.size()));
        }
        p
    }
}

/// Returns free heap pages to the system (MEMORY PURGE, the cron after
/// evictions, the end of a BGSAVE or an AOF rewrite): glibc keeps freed
/// memory in its arenas otherwise.
pub fn purge() {
    // SAFETY: malloc_trim only walks glibc's own arenas.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_round_as_glibc() {
        assert_eq!(chunk(0), 32);
        assert_eq!(chunk(24), 32);
        assert_eq!(chunk(25), 48);
        assert_eq!(chunk(1024), 1040);
    }

    #[test]
    fn deltas_fold_past_the_batch_and_at_exit() {
        // Only this test calls `note` (the test binary keeps the system
        // allocator), so TOTAL moves by exactly what it notes.
        let before = TOTAL.load(Ordering::Relaxed);
        std::thread::spawn(|| {
            note(BATCH - 1);
            assert_eq!(LOCAL.with(|l| l.0.get()), BATCH - 1);
            note(1);
            assert_eq!(LOCAL.with(|l| l.0.get()), 0);
            note(100);
        })
        .join()
        .unwrap();
        assert_eq!(TOTAL.load(Ordering::Relaxed) - before, BATCH + 100);
    }
}
