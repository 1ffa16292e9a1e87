//! One chunk of a shard's key table (dense.rs): an array of (key, entry)
//! pairs whose storage depends on its capacity.
//!
//! Why not a `Vec`: the last chunk of every shard grows, and glibc's realloc
//! of a block hemmed in by other blocks copies it and frees the old one. With
//! 256 shards growing side by side those freed 1-15 KB blocks stayed as holes
//! in the heap that only a smaller chunk could reuse: at 1M keys 3.9 MB free
//! in 622 blocks of the worker arena, 8-16 KB most of them (`MEMORY
//! MALLOC-STATS`), 4 bytes a key of RSS over `used_memory`. So a chunk whose
//! capacity is a whole number of pages under a full chunk is mapped on its
//! own (mmap) and grows a page at a time by mremap, which moves page tables
//! rather than bytes and leaves no hole; a full chunk is copied once into a
//! malloc block of exactly 16 KB (the heap then only sees blocks of that size
//! and the index's, which doubles, so a freed index block fits chunks); a
//! chunk under a page (a shard of a few keys) stays in malloc. Full chunks
//! are not left mapped: one mapping each would pass the kernel's
//! `vm.max_map_count` (65,530) at some 16M keys, while growing tails are at
//! most one per shard (4,096 for 16 databases).
//!
//! Mapped bytes are not seen by the counting global allocator, so they are
//! counted here (`mapped_bytes`) and added to `used_memory`.

use std::alloc::{handle_alloc_error, Layout};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::{Entry, InlineBytes as Key};

pub type Pair = (Key, Entry);

const PAIR: usize = std::mem::size_of::<Pair>();

static MAPPED: AtomicUsize = AtomicUsize::new(0);

/// Bytes the key tables hold in their own mappings (part of `used_memory`).
pub fn mapped_bytes() -> usize {
    MAPPED.load(Ordering::Relaxed)
}

/// Pairs per page, or 0 when a page does not hold a whole number of pairs.
fn page_pairs() -> usize {
    static PAGE: OnceLock<usize> = OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: sysconf reads a constant of the system.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        match usize::try_from(page) {
            Ok(p) if p > 0 && p.is_multiple_of(PAIR) => p / PAIR,
            _ => 0,
        }
    })
}

/// Whether a chunk of `cap` pairs (under `full`, a full chunk's) is mapped.
fn is_mapped(cap: usize, full: usize) -> bool {
    let p = page_pairs();
    p != 0 && cap != 0 && cap < full && cap.is_multiple_of(p)
}

/// The capacity after `cap` when a chunk of at most `full` pairs is full:
/// doubling under a page, then a page at a time.
pub fn grown(cap: usize, full: usize) -> usize {
    let p = page_pairs();
    let next = if p == 0 || cap < p { cap * 2 } else { cap + p };
    next.clamp(1, full)
}

/// The capacity to shrink a chunk of `len` pairs to: whole pages while
/// mapped, else its pairs.
fn fitted(len: usize, full: usize) -> usize {
    let p = page_pairs();
    if p != 0 && len >= p && len < full {
        len.div_ceil(p) * p
    } else {
        len
    }
}

pub struct Chunk {
    ptr: NonNull<Pair>,
    len: u32,
    cap: u32,
    /// The pairs of a full chunk; a constant of the table, kept per chunk
    /// so the rule of storage needs no parameter (room in the padding).
    full: u32,
}

// SAFETY: a chunk owns its pairs as a Vec would; `Pair` is Send and Sync.
unsafe impl Send for Chunk {}
unsafe impl Sync for Chunk {}
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Pair>();
};

impl Chunk {
    pub fn with_capacity(cap: usize, full: usize) -> Chunk {
        let mut c = Chunk {
            ptr: NonNull::dangling(),
            len: 0,
            cap: 0,
            full: u32::try_from(full).expect("a chunk holds under 2^32 pairs"),
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
            self.resize(grown(self.cap as usize, self.full as usize));
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

    /// Gives back the room beyond the pairs (whole pages while mapped).
    pub fn shrink_to_fit(&mut self) {
        let want = fitted(self.len as usize, self.full as usize);
        if want != self.cap as usize {
            self.resize(want);
        }
    }

    /// Moves the pairs into storage for `cap` pairs (`cap >= len`).
    fn resize(&mut self, cap: usize) {
        let old = self.cap as usize;
        let full = self.full as usize;
        debug_assert!(cap >= self.len as usize && cap <= full);
        let cap32 = u32::try_from(cap).expect("a chunk holds under 2^32 pairs");
        let (from_map, to_map) = (is_mapped(old, full), is_mapped(cap, full));
        let new = if old != 0 && from_map && to_map {
            // SAFETY: `ptr` is a mapping of `old` pairs made here.
            unsafe { remap(self.ptr, old, cap) }
        } else if old != 0 && cap != 0 && !from_map && !to_map {
            // SAFETY: `ptr` came from the global allocator with this
            // layout; the pairs move bitwise, as a Vec's do.
            let p = unsafe {
                std::alloc::realloc(self.ptr.as_ptr().cast(), layout(old), layout_size(cap))
            };
            NonNull::new(p.cast()).unwrap_or_else(|| handle_alloc_error(layout(cap)))
        } else {
            let new = if cap == 0 {
                NonNull::dangling()
            } else {
                storage(cap, to_map)
            };
            if old != 0 {
                // SAFETY: both hold at least `len` pairs and do not overlap;
                // the old storage is released without dropping its pairs.
                unsafe {
                    std::ptr::copy_nonoverlapping(self.ptr.as_ptr(), new.as_ptr(), self.len());
                    release(self.ptr, old, from_map);
                }
            }
            new
        };
        self.ptr = new;
        self.cap = cap32;
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        // SAFETY: the first `len` pairs are initialised and dropped once;
        // the storage is then released as it was made.
        unsafe {
            std::ptr::drop_in_place(self.as_mut_slice());
            if self.cap != 0 {
                release(
                    self.ptr,
                    self.cap as usize,
                    is_mapped(self.cap as usize, self.full as usize),
                );
            }
        }
    }
}

fn layout_size(cap: usize) -> usize {
    cap * PAIR
}

fn layout(cap: usize) -> Layout {
    Layout::array::<Pair>(cap).expect("a chunk's size fits a Layout")
}

/// New storage for `cap > 0` pairs.
fn storage(cap: usize, mapped: bool) -> NonNull<Pair> {
    if !mapped {
        // SAFETY: the layout's size is not zero.
        let p = unsafe { std::alloc::alloc(layout(cap)) };
        return NonNull::new(p.cast()).unwrap_or_else(|| handle_alloc_error(layout(cap)));
    }
    let bytes = layout_size(cap);
    // SAFETY: a new private anonymous mapping; no existing memory is named.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        handle_alloc_error(layout(cap));
    }
    MAPPED.fetch_add(bytes, Ordering::Relaxed);
    // SAFETY: mmap succeeded, so `p` is a page-aligned, non-null address.
    unsafe { NonNull::new_unchecked(p.cast()) }
}

/// Grows or shrinks a mapping of `old` pairs to `cap` pairs.
///
/// # Safety
/// `ptr` must be a mapping of `old` pairs made by `storage`.
unsafe fn remap(ptr: NonNull<Pair>, old: usize, cap: usize) -> NonNull<Pair> {
    let (from, to) = (layout_size(old), layout_size(cap));
    let p = libc::mremap(ptr.as_ptr().cast(), from, to, libc::MREMAP_MAYMOVE);
    if p == libc::MAP_FAILED {
        handle_alloc_error(layout(cap));
    }
    if to >= from {
        MAPPED.fetch_add(to - from, Ordering::Relaxed);
    } else {
        MAPPED.fetch_sub(from - to, Ordering::Relaxed);
    }
    NonNull::new_unchecked(p.cast())
}

/// Releases storage of `cap > 0` pairs without dropping what it holds.
///
/// # Safety
/// `ptr` must be storage of `cap` pairs made by `storage` with `mapped`
/// (or grown to `cap` by `remap` or realloc).
unsafe fn release(ptr: NonNull<Pair>, cap: usize, mapped: bool) {
    if mapped {
        let bytes = layout_size(cap);
        libc::munmap(ptr.as_ptr().cast(), bytes);
        MAPPED.fetch_sub(bytes, Ordering::Relaxed);
    } else {
        std::alloc::dealloc(ptr.as_ptr().cast(), layout(cap));
    }
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
    fn grows_by_pages_keeps_its_pairs_and_ends_in_the_heap() {
        let p = page_pairs();
        assert_eq!(p, 4096 / PAIR, "tests run with 4 KB pages");
        let full = 256;
        let mut c = Chunk::with_capacity(16, full);
        let mut caps = vec![c.capacity()];
        for i in 0..full {
            c.push(pair(i));
            if *caps.last().unwrap() != c.capacity() {
                caps.push(c.capacity());
            }
            if is_mapped(c.capacity(), full) {
                assert_eq!(c.capacity() % p, 0);
            }
        }
        assert_eq!(caps, [16, 32, 64, 128, 192, 256]);
        assert!(
            !is_mapped(c.capacity(), full),
            "a full chunk lives in malloc"
        );
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
        assert!(is_mapped(c.capacity(), full));
        while c.len() > 10 {
            c.pop();
        }
        c.shrink_to_fit();
        assert_eq!(c.capacity(), 10);
        assert_eq!(c.as_slice()[9].0.as_slice(), b"key:00000009");
        c.push(pair(10));
        assert_eq!(c.as_slice().len(), 11);
    }

    #[test]
    fn a_mapping_is_counted_while_it_lives() {
        // Other tests map and unmap at the same time: the counter holds at
        // least this chunk's page while it lives.
        let c = {
            let mut c = Chunk::with_capacity(page_pairs(), 256);
            c.push(pair(1));
            c
        };
        assert!(is_mapped(c.capacity(), 256));
        assert!(mapped_bytes() >= 4096);
        drop(c);
    }
}
