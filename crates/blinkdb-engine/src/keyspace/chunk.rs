//! One chunk of a shard's key table (dense.rs): an array of (key, entry)
//! pairs whose storage depends on its capacity.
//!
//! Why not a `Vec`: the last chunk of every shard grows, and glibc's realloc
//! of a block hemmed in by other blocks copies it and frees the old one. With
//! 256 shards growing side by side those freed 1-15 KB blocks stayed as holes
//! in the heap that only a smaller chunk could reuse: at 1M keys 3.9 MB free
//! in 622 blocks of the worker arena, 8-16 KB most of them (`MEMORY
//! MALLOC-STATS`), 4 bytes a key of RSS over `used_memory`. So a chunk of a
//! page of pairs or more takes a 16 KB slot of its own in a mapped slab and
//! grows there a page at a time: the slot's pages are only touched (made
//! resident) as pairs are written, so growing copies nothing, makes no system
//! call and leaves no hole, and a full chunk stays where it grew. A chunk
//! under a page (a shard's first keys, a new chunk's first 32 pairs) stays in
//! malloc. A freed slot's pages go back to the system (madvise) and the slot
//! to a free list. The slabs are 2 MB mappings (128 slots), so a mapping per
//! chunk does not exhaust the kernel's `vm.max_map_count`.
//!
//! Slab bytes are not seen by the counting global allocator, so they are
//! counted here (`mapped_bytes`, the pages in use) and added to `used_memory`.

use std::alloc::{handle_alloc_error, Layout};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use super::{Entry, InlineBytes as Key};

pub type Pair = (Key, Entry);

const PAIR: usize = std::mem::size_of::<Pair>();

/// Pairs in a full chunk (dense.rs's `CHUNK`).
pub const FULL: usize = 256;
const SLOT: usize = FULL * PAIR;
/// Slots per slab (2 MB).
const SLOTS_PER_SLAB: usize = 128;

static MAPPED: AtomicUsize = AtomicUsize::new(0);

/// Bytes of the key tables' slab pages in use (part of `used_memory`).
pub fn mapped_bytes() -> usize {
    MAPPED.load(Ordering::Relaxed)
}

/// Pairs per page, or 0 when slots cannot be split in whole pages of pairs
/// (then every chunk lives in malloc).
fn page_pairs() -> usize {
    static PAGE: OnceLock<usize> = OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: sysconf reads a constant of the system.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        match usize::try_from(page) {
            Ok(p) if p > 0 && p.is_multiple_of(PAIR) && SLOT.is_multiple_of(p) => p / PAIR,
            _ => 0,
        }
    })
}

/// Whether a chunk of `cap` pairs lives in a slab slot.
fn in_slot(cap: usize) -> bool {
    let p = page_pairs();
    p != 0 && cap >= p
}

/// The capacity after `cap`: doubling under a page, then a page at a time.
pub fn grown(cap: usize) -> usize {
    let p = page_pairs();
    let next = if p == 0 || cap < p { cap * 2 } else { cap + p };
    next.clamp(1, FULL)
}

/// The capacity to shrink a chunk of `len` pairs to: whole pages in a slot,
/// else its pairs.
fn fitted(len: usize) -> usize {
    let p = page_pairs();
    if p != 0 && len >= p {
        len.div_ceil(p) * p
    } else {
        len
    }
}

pub struct Chunk {
    ptr: NonNull<Pair>,
    len: u32,
    cap: u32,
}

// SAFETY: a chunk owns its pairs as a Vec would; `Pair` is Send and Sync.
unsafe impl Send for Chunk {}
unsafe impl Sync for Chunk {}
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Pair>();
};

impl Chunk {
    pub fn with_capacity(cap: usize) -> Chunk {
        let mut c = Chunk {
            ptr: NonNull::dangling(),
            len: 0,
            cap: 0,
        };
        c.resize(cap);
        c
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn capacity(&self) -> usize {
        self.cap as usize
    }

    #[inline]
    pub fn as_slice(&self) -> &[Pair] {
        // SAFETY: the first `len` pairs are initialised.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len as usize) }
    }

    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [Pair] {
        // SAFETY: as `as_slice`, and `&mut self` is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len as usize) }
    }

    /// Appends a pair, growing as `grown` says when there is no room.
    pub fn push(&mut self, pair: Pair) {
        if self.len == self.cap {
            self.resize(grown(self.cap as usize));
        }
        assert!(
            self.len < self.cap,
            "a chunk never holds more than a full one"
        );
        // SAFETY: `len < cap`: the slot is allocated and uninitialised.
        unsafe { self.ptr.as_ptr().add(self.len as usize).write(pair) };
        self.len += 1;
    }

    pub fn pop(&mut self) -> Option<Pair> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        // SAFETY: the slot was initialised and is now outside `len`.
        Some(unsafe { self.ptr.as_ptr().add(self.len as usize).read() })
    }

    /// Gives back the room beyond the pairs (whole pages in a slot).
    pub fn shrink_to_fit(&mut self) {
        let want = fitted(self.len as usize);
        if want != self.cap as usize {
            self.resize(want);
        }
    }

    /// Moves the pairs into storage for `cap` pairs (`len <= cap <= FULL`).
    fn resize(&mut self, cap: usize) {
        let old = self.cap as usize;
        assert!(cap >= self.len as usize && cap <= FULL);
        let (from_slot, to_slot) = (in_slot(old), in_slot(cap));
        let new = if from_slot && to_slot {
            // The same slot: pages past `cap` go back, pages up to it count.
            if cap < old {
                // SAFETY: the pages past `cap` hold no pair.
                unsafe { discard(self.ptr.as_ptr().add(cap).cast(), (old - cap) * PAIR) };
                MAPPED.fetch_sub((old - cap) * PAIR, Ordering::Relaxed);
            } else {
                MAPPED.fetch_add((cap - old) * PAIR, Ordering::Relaxed);
            }
            self.ptr
        } else if old != 0 && cap != 0 && !from_slot && !to_slot {
            // SAFETY: `ptr` came from the global allocator with this
            // layout; the pairs move bitwise, as a Vec's do.
            let p =
                unsafe { std::alloc::realloc(self.ptr.as_ptr().cast(), layout(old), cap * PAIR) };
            NonNull::new(p.cast()).unwrap_or_else(|| handle_alloc_error(layout(cap)))
        } else {
            let new = if cap == 0 {
                NonNull::dangling()
            } else if to_slot {
                MAPPED.fetch_add(cap * PAIR, Ordering::Relaxed);
                take_slot()
            } else {
                // SAFETY: the layout's size is not zero.
                let p = unsafe { std::alloc::alloc(layout(cap)) };
                NonNull::new(p.cast()).unwrap_or_else(|| handle_alloc_error(layout(cap)))
            };
            if old != 0 {
                // SAFETY: both hold at least `len` pairs and do not overlap;
                // the old storage is released without dropping its pairs.
                unsafe {
                    std::ptr::copy_nonoverlapping(self.ptr.as_ptr(), new.as_ptr(), self.len());
                    release(self.ptr, old);
                }
            }
            new
        };
        self.ptr = new;
        self.cap = cap as u32;
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        // SAFETY: the first `len` pairs are initialised and dropped once;
        // the storage is then released as it was made.
        unsafe {
            std::ptr::drop_in_place(self.as_mut_slice());
            if self.cap != 0 {
                release(self.ptr, self.cap as usize);
            }
        }
    }
}

fn layout(cap: usize) -> Layout {
    Layout::array::<Pair>(cap).expect("a chunk's size fits a Layout")
}

/// Releases storage of `cap > 0` pairs without dropping what it holds.
///
/// # Safety
/// `ptr` must be the storage `resize` made for `cap` pairs.
unsafe fn release(ptr: NonNull<Pair>, cap: usize) {
    if in_slot(cap) {
        MAPPED.fetch_sub(cap * PAIR, Ordering::Relaxed);
        give_slot(ptr);
    } else {
        std::alloc::dealloc(ptr.as_ptr().cast(), layout(cap));
    }
}

/// Free slots, as addresses (slabs are never unmapped; a free slot holds no
/// resident page).
static FREE: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// A slot of `SLOT` bytes whose pages are not resident.
fn take_slot() -> NonNull<Pair> {
    let mut free = FREE.lock().unwrap_or_else(|e| e.into_inner());
    if free.is_empty() {
        let bytes = SLOT * SLOTS_PER_SLAB;
        // SAFETY: a new private anonymous mapping; no existing memory is
        // named. Huge pages are refused so that a first touch makes one 4 KB
        // page resident, not 2 MB.
        let base = unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            );
            if p == libc::MAP_FAILED {
                drop(free);
                handle_alloc_error(layout(FULL));
            }
            libc::madvise(p, bytes, libc::MADV_NOHUGEPAGE);
            p as usize
        };
        free.extend((0..SLOTS_PER_SLAB).rev().map(|i| base + i * SLOT));
    }
    let addr = free.pop().expect("a slab was just added");
    // SAFETY: slab addresses are page-aligned and not null.
    unsafe { NonNull::new_unchecked(addr as *mut Pair) }
}

/// Returns a slot's pages to the system and the slot to the free list.
///
/// # Safety
/// `ptr` must be a slot from `take_slot` that holds no live pair.
unsafe fn give_slot(ptr: NonNull<Pair>) {
    discard(ptr.as_ptr().cast(), SLOT);
    FREE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(ptr.as_ptr() as usize);
}

/// Drops the pages of `[p, p + bytes)` (whole pages inside a slot): they
/// read as zeros and are not resident until written again.
///
/// # Safety
/// The range must lie in a slab and hold nothing live.
unsafe fn discard(p: *mut u8, bytes: usize) {
    libc::madvise(p.cast(), bytes, libc::MADV_DONTNEED);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(i: usize) -> Pair {
        (
            Key::from_slice(format!("key:{i:08}").as_bytes()),
            Entry::string(format!("{i}").as_bytes()),
        )
    }

    #[test]
    fn grows_by_pages_in_a_slot_and_keeps_its_pairs() {
        let p = page_pairs();
        assert_eq!(p, 4096 / PAIR, "tests run with 4 KB pages");
        let mut c = Chunk::with_capacity(16);
        let mut caps = vec![c.capacity()];
        let slot = |c: &Chunk| c.as_slice().as_ptr();
        let mut first_in_slot = None;
        for i in 0..FULL {
            c.push(pair(i));
            if *caps.last().unwrap() != c.capacity() {
                caps.push(c.capacity());
            }
            if in_slot(c.capacity()) {
                // Growing in a slot never moves the pairs.
                assert_eq!(*first_in_slot.get_or_insert(slot(&c)), slot(&c));
            }
        }
        assert_eq!(caps, [16, 32, 64, 128, 192, 256]);
        assert!(in_slot(c.capacity()), "a full chunk stays in its slot");
        for (i, (k, e)) in c.as_slice().iter().enumerate() {
            assert_eq!(k.as_slice(), format!("key:{i:08}").as_bytes());
            assert_eq!(e.value().as_str(), Some(format!("{i}").as_bytes()));
        }
        // Popping down, then shrinking: back to whole pages, then to malloc.
        while c.len() > 100 {
            c.pop();
        }
        c.shrink_to_fit();
        assert_eq!(c.capacity(), 128);
        assert_eq!(c.as_slice()[99].0.as_slice(), b"key:00000099");
        c.push(pair(100));
        c.push(pair(101));
        assert_eq!(c.as_slice()[101].0.as_slice(), b"key:00000101");
        while c.len() > 10 {
            c.pop();
        }
        c.shrink_to_fit();
        assert_eq!(c.capacity(), 10);
        assert!(!in_slot(c.capacity()));
        assert_eq!(c.as_slice()[9].0.as_slice(), b"key:00000009");
        c.push(pair(10));
        assert_eq!(c.as_slice().len(), 11);
    }

    #[test]
    fn a_freed_slot_is_reused_and_reads_as_new() {
        let mut c = Chunk::with_capacity(page_pairs());
        c.push(pair(1));
        assert!(mapped_bytes() >= 4096, "the chunk's page counts");
        drop(c);
        // Other tests take slots at the same time: take a few and write
        // each whole, which a slot with a page still mapped elsewhere would
        // not survive unnoticed.
        let chunks: Vec<Chunk> = (0..4)
            .map(|n| {
                let mut c = Chunk::with_capacity(page_pairs());
                for i in 0..FULL {
                    c.push(pair(n * FULL + i));
                }
                c
            })
            .collect();
        for (n, c) in chunks.iter().enumerate() {
            assert_eq!(c.len(), FULL);
            let last = format!("key:{:08}", n * FULL + FULL - 1);
            assert_eq!(c.as_slice()[FULL - 1].0.as_slice(), last.as_bytes());
        }
    }
}
