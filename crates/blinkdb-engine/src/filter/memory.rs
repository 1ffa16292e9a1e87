//! Where a filter's bytes live: a mapping (of its file, or anonymous before the file
//! exists), or, for a small filter before its file exists, 64-byte-aligned heap memory.
//! The heap case exists because a small filter that is created and dropped between two
//! flushes (BF.RESERVE + DEL) then costs a malloc and a free instead of mmap, a page
//! fault and munmap: three of the eleven system calls of such a pair, measured with
//! strace.

use super::layout::LINE_BYTES;
use memmap2::MmapRaw;
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;

pub(crate) enum FilterMemory {
    Mapped(MmapRaw),
    Heap(HeapLines),
}

impl FilterMemory {
    /// Zeroed heap memory of `len` bytes (a multiple of 64), 64-byte aligned.
    pub fn heap(len: usize) -> Option<FilterMemory> {
        HeapLines::zeroed(len).map(FilterMemory::Heap)
    }

    pub fn as_ptr(&self) -> *const u8 {
        self.as_mut_ptr()
    }

    /// Writable even through `&self`: every access to a filter's lines goes through
    /// atomics or is serialised by the filter (as with the mapping).
    pub fn as_mut_ptr(&self) -> *mut u8 {
        match self {
            FilterMemory::Mapped(map) => map.as_mut_ptr(),
            FilterMemory::Heap(heap) => heap.ptr.as_ptr(),
        }
    }

    pub fn flush_range(&self, offset: usize, len: usize) -> std::io::Result<()> {
        match self {
            FilterMemory::Mapped(map) => map.flush_range(offset, len),
            FilterMemory::Heap(_) => Err(std::io::Error::other("filter is in memory only")),
        }
    }
}

pub(crate) struct HeapLines {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: HeapLines owns its allocation like a Box<[u8]>; concurrent access to the
// bytes is governed by the filter that holds it, exactly as for a shared mapping.
unsafe impl Send for HeapLines {}
unsafe impl Sync for HeapLines {}

impl HeapLines {
    fn zeroed(len: usize) -> Option<HeapLines> {
        if len == 0 {
            return None;
        }
        let layout = Layout::from_size_align(len, LINE_BYTES).ok()?;
        // SAFETY: the layout has a non-zero size.
        let ptr = NonNull::new(unsafe { alloc_zeroed(layout) })?;
        Some(HeapLines { ptr, layout })
    }
}

impl Drop for HeapLines {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with this layout, freed once.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::FilterMemory;

    #[test]
    fn heap_memory_is_zeroed_aligned_and_refuses_flush() {
        let m = FilterMemory::heap(64 * 5).unwrap();
        assert_eq!(m.as_ptr() as usize % 64, 0);
        // SAFETY: 320 bytes were allocated.
        let bytes = unsafe { std::slice::from_raw_parts(m.as_ptr(), 64 * 5) };
        assert!(bytes.iter().all(|&b| b == 0));
        assert!(m.flush_range(0, 64).is_err());
        assert!(FilterMemory::heap(0).is_none());
    }
}
