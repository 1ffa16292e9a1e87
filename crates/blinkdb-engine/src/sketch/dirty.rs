//! Which 4 KB pages of a structure's file body changed since its file last
//! got them (docs/sketch-file-format.md, "Checkpoints"). Every structure
//! with a file keeps one: a write marks the pages of the body bytes it
//! changed, and a checkpoint takes the marks and writes those pages only.
//!
//! The marks are relative to one file (`file`, its id): a checkpoint into
//! another file (a new one, or the structure is a copy, or moved to another
//! key) writes every page. Marks need `&mut` (a write holds the key's lock);
//! taking them needs only `&` (atomics), as the checkpoint reads the value
//! under the same lock.

use super::cells::PAGE;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// A part of a structure of at most this many pages (256 KB) is marked
/// changed whole, once per write, rather than each change's page: a mark
/// per count-min row or top-k bucket cost ~20 of a row's ~110 instructions,
/// and a checkpoint writes so few pages in one go.
pub const WHOLE_PART_PAGES: usize = 64;

/// No page from here on is marked (`from`'s "none").
const NONE: usize = usize::MAX;

pub struct Dirty {
    /// One bit per page marked since file `file` got it.
    bits: Vec<AtomicU64>,
    /// Every page from this one on is marked too: a part whose bytes move
    /// when it changes (a top-k's heap of variable-length slots).
    from: AtomicUsize,
    /// The file whose pages the unmarked pages equal (its id; 0: none, so
    /// the next checkpoint writes every page).
    file: AtomicU64,
}

impl Dirty {
    /// Tied to no file; room for `pages` marks without growing.
    pub fn new(pages: usize) -> Dirty {
        Dirty {
            bits: (0..pages.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            from: AtomicUsize::new(NONE),
            file: AtomicU64::new(0),
        }
    }

    /// Page `page` changed.
    #[inline]
    pub fn mark(&mut self, page: usize) {
        let w = page / 64;
        if w >= self.bits.len() {
            self.bits.resize_with(w + 1, || AtomicU64::new(0));
        }
        *self.bits[w].get_mut() |= 1 << (page % 64);
    }

    /// Body byte `at` changed.
    #[inline]
    pub fn mark_byte(&mut self, at: usize) {
        self.mark(at / PAGE);
    }

    /// Body bytes `at .. at + len` changed (`len` > 0).
    #[inline]
    pub fn mark_bytes(&mut self, at: usize, len: usize) {
        self.mark_pages(at / PAGE, (at + len - 1) / PAGE);
    }

    /// Pages `first ..= last` changed: a mask per word of marks, so that a
    /// small structure can mark all of a part once per write rather than
    /// each change's page.
    pub fn mark_pages(&mut self, first: usize, last: usize) {
        let (fw, lw) = (first / 64, last / 64);
        if lw >= self.bits.len() {
            self.bits.resize_with(lw + 1, || AtomicU64::new(0));
        }
        for w in fw..=lw {
            let lo = if w == fw { first % 64 } else { 0 };
            let hi = if w == lw { last % 64 } else { 63 };
            let mask = (u64::MAX >> (63 - hi)) & (u64::MAX << lo);
            // Read first: marking a part whole repeats on every write, and
            // between checkpoints the marks are nearly always there already.
            let bits = self.bits[w].get_mut();
            if *bits & mask != mask {
                *bits |= mask;
            }
        }
    }

    /// Every byte from `at` to the body's end changed (and the end may have
    /// moved).
    pub fn mark_from(&mut self, at: usize) {
        let f = self.from.get_mut();
        *f = (*f).min(at / PAGE);
    }

    /// Everything changed, or moved: the next checkpoint writes every page.
    pub fn mark_all(&mut self) {
        *self.file.get_mut() = 0;
    }

    /// The same through `&`: a checkpoint that could not write the pages it
    /// took writes every page the next time.
    pub fn forget(&self) {
        self.file.store(0, Ordering::Release);
    }

    /// The structure was just read from file `file`: its pages are that
    /// file's.
    pub fn bind(&self, file: u64) {
        self.take(file, 0);
    }

    /// The file the unmarked pages equal (0: none).
    pub fn file(&self) -> u64 {
        self.file.load(Ordering::Acquire)
    }

    /// Whether a checkpoint into file `file` would write any page.
    pub fn any(&self, file: u64) -> bool {
        self.file.load(Ordering::Acquire) != file
            || self.from.load(Ordering::Relaxed) != NONE
            || self.bits.iter().any(|w| w.load(Ordering::Relaxed) != 0)
    }

    /// The pages (of a file of `pages` pages) a checkpoint into file `file`
    /// must write, in order, and unmarks them: the marked ones if the
    /// unmarked pages are that file's, else all.
    pub fn take(&self, file: u64, pages: usize) -> Vec<usize> {
        let all = self.file.swap(file, Ordering::AcqRel) != file;
        let from = self.from.swap(NONE, Ordering::Relaxed);
        let mut out = Vec::new();
        if all {
            self.bits.iter().for_each(|w| w.store(0, Ordering::Relaxed));
            out.extend(0..pages);
            return out;
        }
        for (w, word) in self.bits.iter().enumerate() {
            let mut b = word.swap(0, Ordering::Relaxed);
            while b != 0 {
                let p = w * 64 + b.trailing_zeros() as usize;
                if p >= pages.min(from) {
                    break;
                }
                out.push(p);
                b &= b - 1;
            }
        }
        out.extend(from.min(pages)..pages);
        out
    }
}

impl Clone for Dirty {
    /// A copy's pages are no file's: written whole at its first checkpoint.
    fn clone(&self) -> Dirty {
        Dirty::new(self.bits.len() * 64)
    }
}

/// The marks are no part of a structure's value: two equal structures
/// compare equal whatever their files.
impl PartialEq for Dirty {
    fn eq(&self, _: &Dirty) -> bool {
        true
    }
}

impl Eq for Dirty {}

impl std::fmt::Debug for Dirty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Dirty(file {})", self.file.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_per_file_and_a_range_from_marks_to_the_end() {
        let mut d = Dirty::new(2);
        assert!(d.any(7));
        assert_eq!(d.take(7, 4), vec![0, 1, 2, 3], "a new file gets every page");
        assert!(!d.any(7));
        assert!(d.take(7, 4).is_empty());
        d.mark(1);
        d.mark_bytes(PAGE - 4, 8);
        assert_eq!(d.take(7, 4), vec![0, 1]);
        d.mark(200);
        d.mark(1);
        assert_eq!(
            d.take(7, 4),
            vec![1],
            "marks past the file's pages are dropped"
        );
        d.mark(0);
        d.mark(3);
        d.mark_from(2 * PAGE + 5);
        assert_eq!(d.take(7, 4), vec![0, 2, 3]);
        d.mark_byte(5);
        assert_eq!(d.take(8, 3), vec![0, 1, 2], "another file: all");
        let copy = d.clone();
        assert_eq!(copy.take(8, 2), vec![0, 1], "a copy is tied to no file");
        d.mark(1);
        d.forget();
        assert_eq!(d.take(8, 2), vec![0, 1]);
        d.mark(1);
        d.bind(9);
        assert!(!d.any(9));
        d.mark_all();
        assert_eq!(d.take(9, 2), vec![0, 1]);
    }

    #[test]
    fn mark_pages_equals_a_mark_per_page() {
        for (first, last) in [
            (0, 0),
            (3, 3),
            (0, 63),
            (63, 64),
            (5, 130),
            (64, 127),
            (70, 300),
        ] {
            let (mut a, mut b) = (Dirty::new(1), Dirty::new(1));
            a.bind(1);
            b.bind(1);
            a.mark_pages(first, last);
            (first..=last).for_each(|p| b.mark(p));
            assert_eq!(a.take(1, 400), b.take(1, 400), "{first}..={last}");
        }
    }
}
