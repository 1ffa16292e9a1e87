//! A fixed-size structure's 32-bit counters (a count-min sketch's), either on
//! the heap or mapped from the structure's file (`sketch/file.rs`), with the
//! 4 KB pages changed since the last checkpoint wrote them there.
//!
//! A mapping is private (copy-on-write): a restart binds the file without
//! reading it, and a change touches only the page it lands in. The file is
//! written only by a checkpoint, under the key's lock, so it always holds the
//! counters exactly as of one log position (the log replays the rest), which
//! shared writable mappings could not give: the kernel may write a page back
//! at any time, and an increment replayed onto a page that already has it
//! would count twice.

use super::dirty::{Dirty, WHOLE_PART_PAGES};

/// The unit of dirtiness, checksums and file writes.
pub const PAGE: usize = 4096;
const PER_PAGE: usize = PAGE / 4;

enum Store {
    Heap(Vec<u32>),
    /// A private mapping of the file's counter pages; `len` counters.
    Mapped {
        map: memmap2::MmapMut,
        len: usize,
    },
}

pub struct Cells {
    store: Store,
    /// The pages changed since the file last got them.
    dirty: Dirty,
}

pub fn pages_for(len: usize) -> usize {
    len.div_ceil(PER_PAGE)
}

impl Cells {
    /// `len` zeroed counters on the heap (allocated lazily by the kernel).
    pub fn zeroed(len: usize) -> Cells {
        Cells::from_vec(vec![0; len])
    }

    pub fn from_vec(v: Vec<u32>) -> Cells {
        let pages = pages_for(v.len());
        Cells {
            store: Store::Heap(v),
            dirty: Dirty::new(pages),
        }
    }

    /// Counters mapped from file `file` (its data region, `len` counters, at
    /// least `pages_for(len) * PAGE` bytes), all pages clean.
    pub fn mapped(map: memmap2::MmapMut, len: usize, file: u64) -> Cells {
        assert!(map.len() >= len * 4, "mapping shorter than its counters");
        assert_eq!(map.as_ptr() as usize % 4, 0);
        let dirty = Dirty::new(pages_for(len));
        dirty.bind(file);
        Cells {
            store: Store::Mapped { map, len },
            dirty,
        }
    }

    #[inline]
    pub fn as_slice(&self) -> &[u32] {
        match &self.store {
            Store::Heap(v) => v,
            // SAFETY: the mapping is page-aligned, at least `len * 4` bytes
            // (checked in `mapped`), and lives as long as `self`.
            Store::Mapped { map, len } => unsafe {
                std::slice::from_raw_parts(map.as_ptr() as *const u32, *len)
            },
        }
    }

    fn as_mut_slice(&mut self) -> &mut [u32] {
        match &mut self.store {
            Store::Heap(v) => v,
            // SAFETY: as in `as_slice`; `&mut self` makes the access unique.
            Store::Mapped { map, len } => unsafe {
                std::slice::from_raw_parts_mut(map.as_mut_ptr() as *mut u32, *len)
            },
        }
    }

    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn get(&self, at: usize) -> u32 {
        self.as_slice()[at]
    }

    #[inline]
    pub fn set(&mut self, at: usize, v: u32) {
        self.as_mut_slice()[at] = v;
        self.dirty.mark(at / PER_PAGE);
    }

    /// Whether a write should mark every page at once ([`all_mut`]) rather
    /// than each counter's ([`WHOLE_PART_PAGES`]).
    ///
    /// [`all_mut`]: Self::all_mut
    pub fn small(&self) -> bool {
        self.pages() <= WHOLE_PART_PAGES
    }

    /// Every counter, to change freely: all pages are marked changed.
    pub fn all_mut(&mut self) -> &mut [u32] {
        let pages = self.pages();
        if pages > 0 {
            self.dirty.mark_pages(0, pages - 1);
        }
        self.as_mut_slice()
    }

    /// Bytes of memory the counters take (heap, or the mapping's length).
    pub fn bytes(&self) -> usize {
        match &self.store {
            Store::Heap(v) => v.capacity() * 4,
            Store::Mapped { map, .. } => map.len(),
        }
    }

    pub fn is_mapped(&self) -> bool {
        matches!(self.store, Store::Mapped { .. })
    }

    pub fn pages(&self) -> usize {
        pages_for(self.len())
    }

    /// Page `p`'s bytes as the file holds them: the last page zero-padded.
    pub fn page_bytes(&self, p: usize, buf: &mut [u8; PAGE]) {
        let s = self.as_slice();
        let end = ((p + 1) * PER_PAGE).min(s.len());
        let cells = &s[p * PER_PAGE..end];
        for (i, c) in cells.iter().enumerate() {
            buf[i * 4..i * 4 + 4].copy_from_slice(&c.to_le_bytes());
        }
        buf[cells.len() * 4..].fill(0);
    }

    /// The pages changed since the file last got them.
    pub fn dirty(&self) -> &Dirty {
        &self.dirty
    }
}

impl Clone for Cells {
    /// A heap copy, every page dirty and tied to no file: a copy made for
    /// another key (or by a change while a snapshot shares the value) gets
    /// its own file whole at its first checkpoint.
    fn clone(&self) -> Cells {
        Cells::from_vec(self.as_slice().to_vec())
    }
}

impl PartialEq for Cells {
    fn eq(&self, other: &Cells) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Cells {}

impl std::fmt::Debug for Cells {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Cells({} counters, mapped: {})",
            self.len(),
            self.is_mapped()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirty_pages_are_the_changed_ones_and_all_for_another_file() {
        let mut c = Cells::zeroed(3 * PER_PAGE + 5);
        let pages = c.pages();
        assert_eq!(
            c.dirty().take(7, pages),
            vec![0, 1, 2, 3],
            "a new file gets every page"
        );
        assert!(c.dirty().take(7, pages).is_empty());
        c.set(PER_PAGE + 1, 9);
        c.set(3 * PER_PAGE + 4, 1);
        assert_eq!(c.dirty().take(7, pages), vec![1, 3]);
        assert_eq!(
            c.dirty().take(8, pages),
            vec![0, 1, 2, 3],
            "another file: all"
        );
        let copy = c.clone();
        assert_eq!(
            copy.dirty().take(8, pages),
            vec![0, 1, 2, 3],
            "a copy is tied to no file"
        );
        let mut buf = [1u8; PAGE];
        c.page_bytes(3, &mut buf);
        assert_eq!(&buf[16..20], &1u32.to_le_bytes());
        assert!(
            buf[20..].iter().all(|b| *b == 0),
            "the last page is zero-padded"
        );
    }
}
