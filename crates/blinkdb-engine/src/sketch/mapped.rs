//! A structure's large fixed array (a cuckoo sub-filter's slots, a top-k's
//! buckets), on the heap or in the private mapping of its sketch file, so
//! that a restart binds a large filter or top-k without reading or copying
//! it, as a count-min sketch's counters are (`cells.rs`, whose comment says
//! why the mapping is private and why the file stays exactly one
//! checkpoint's state). Several arrays may share one mapping (a filter's
//! sub-filters), each owning its own range of it.

use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::Arc;

pub struct FileArray<T: Copy> {
    store: Store<T>,
}

enum Store<T> {
    Heap(Vec<T>),
    /// `len` elements at `ptr`, inside `_map`, which keeps them mapped.
    Mapped {
        _map: Arc<memmap2::MmapMut>,
        ptr: NonNull<T>,
        len: usize,
    },
}

// SAFETY: a `FileArray` owns its elements as a `Vec` would: a mapped one is
// the only value that reaches its range of the mapping (`mapped`'s contract),
// so sending or sharing it is as safe as for a `Vec<T>`.
unsafe impl<T: Copy + Send> Send for FileArray<T> {}
unsafe impl<T: Copy + Sync> Sync for FileArray<T> {}

impl<T: Copy> FileArray<T> {
    pub fn from_vec(v: Vec<T>) -> Self {
        FileArray {
            store: Store::Heap(v),
        }
    }

    /// `len` elements of `map` from byte `at`; None when they would pass the
    /// mapping's end or `at` is not aligned for `T`.
    ///
    /// # Safety
    /// No other live value reads or writes those bytes of `map` (the arrays
    /// sharing one mapping have disjoint ranges), and the bytes are a valid
    /// `T` whatever they hold (plain integers).
    pub unsafe fn mapped(map: &Arc<memmap2::MmapMut>, at: usize, len: usize) -> Option<Self> {
        let bytes = len.checked_mul(std::mem::size_of::<T>())?;
        if at.checked_add(bytes)? > map.len() {
            return None;
        }
        let base = map.as_ptr() as *mut u8;
        // SAFETY: `at` is within the mapping (checked above).
        let ptr = unsafe { base.add(at) } as *mut T;
        if !(ptr as usize).is_multiple_of(std::mem::align_of::<T>()) {
            return None;
        }
        Some(FileArray {
            store: Store::Mapped {
                _map: map.clone(),
                ptr: NonNull::new(ptr)?,
                len,
            },
        })
    }

    /// Bytes of memory it takes (heap capacity, or the mapped range).
    pub fn bytes(&self) -> usize {
        match &self.store {
            Store::Heap(v) => v.capacity() * std::mem::size_of::<T>(),
            Store::Mapped { len, .. } => len * std::mem::size_of::<T>(),
        }
    }

    pub fn is_mapped(&self) -> bool {
        matches!(self.store, Store::Mapped { .. })
    }
}

impl<T: Copy> Deref for FileArray<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        match &self.store {
            Store::Heap(v) => v,
            // SAFETY: `len` elements inside the mapping, aligned (checked in
            // `mapped`), alive as long as `_map`, reached only through `self`.
            Store::Mapped { ptr, len, .. } => unsafe {
                std::slice::from_raw_parts(ptr.as_ptr(), *len)
            },
        }
    }
}

impl<T: Copy> DerefMut for FileArray<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.store {
            Store::Heap(v) => v,
            // SAFETY: as in `deref`; `&mut self` makes the access unique (no
            // other value reaches this range: `mapped`'s contract). The
            // mapping is private and writable: a write copies the page.
            Store::Mapped { ptr, len, .. } => unsafe {
                std::slice::from_raw_parts_mut(ptr.as_ptr(), *len)
            },
        }
    }
}

impl<T: Copy> Clone for FileArray<T> {
    /// A heap copy.
    fn clone(&self) -> Self {
        FileArray::from_vec(self.to_vec())
    }
}

impl<T: Copy + PartialEq> PartialEq for FileArray<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: Copy + Eq> Eq for FileArray<T> {}

impl<T: Copy + std::fmt::Debug> std::fmt::Debug for FileArray<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "FileArray({} elements, mapped: {})",
            self.len(),
            self.is_mapped()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_arrays_share_a_private_mapping_in_their_own_ranges() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, (0..=255u8).cycle().take(8192).collect::<Vec<_>>()).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: a private mapping of a file nothing else writes.
        let map = Arc::new(unsafe { memmap2::MmapOptions::new().map_copy(&file) }.unwrap());
        // SAFETY: disjoint ranges; u8 and u32 take any bytes.
        let (mut a, b) = unsafe {
            (
                FileArray::<u8>::mapped(&map, 1, 10).unwrap(),
                FileArray::<u32>::mapped(&map, 4096, 4).unwrap(),
            )
        };
        assert!(
            unsafe { FileArray::<u32>::mapped(&map, 2, 1) }.is_none(),
            "misaligned"
        );
        assert!(
            unsafe { FileArray::<u8>::mapped(&map, 8000, 193) }.is_none(),
            "past the end"
        );
        assert_eq!(a[0], 1);
        assert_eq!(b[0], u32::from_le_bytes([0, 1, 2, 3]));
        a[0] = 77;
        let copy = a.clone();
        assert!(!copy.is_mapped());
        assert_eq!(copy, a);
        drop(map);
        assert_eq!(a[0], 77, "the arrays keep the mapping");
        assert_eq!(
            std::fs::read(&path).unwrap()[1],
            1,
            "private: the file is not written"
        );
    }
}
