//! The compact encoding of small hashes and sorted sets, BlinkDB's listpack:
//! entries laid end to end in one buffer, each a LEB128 length then its bytes.
//!
//! ```text
//! [len varint][bytes] [len varint][bytes] ...
//! ```
//!
//! A hash stores field, value, field, value...; a sorted set stores member,
//! score (8 bytes, f64 little-endian), in (score, member) order. Operations
//! are linear scans, bounded by the `*-max-listpack-entries` limits (128 by
//! default), as Redis's listpack is.

#[derive(Clone, Default, PartialEq, Eq, Debug)]
pub struct Pack {
    /// Inline up to `INLINE` bytes, inside the value that holds the pack (a
    /// 1-field hash, a 5-integer set, a 3-element list), so that most small
    /// collections are one allocation: their `Arc`'s (issue 42).
    buf: PackBuf,
    /// Entries (not pairs).
    n: u32,
}

/// Bytes a pack keeps without a heap buffer of its own.
pub const INLINE: usize = 16;

/// The encoded entries: inline while they fit (`INLINE` bytes), a heap
/// buffer beyond.
pub type PackBuf = smallvec::SmallVec<[u8; INLINE]>;

/// Up to this many bytes a buffer grows to the size it needs, as Redis's
/// listpack does (glibc rounds to 16 anyway); beyond, by doubling, so that a
/// list node filled one push at a time to 8 KB is not copied per push.
const EXACT_GROWTH_UP_TO: usize = 256;

/// Makes room for `more` bytes in `buf`.
fn grow(buf: &mut PackBuf, more: usize) {
    let need = buf.len() + more;
    if need > buf.capacity() {
        if need <= EXACT_GROWTH_UP_TO {
            buf.reserve_exact(more);
        } else {
            buf.reserve(more);
        }
    }
}

fn varint_len(n: usize) -> usize {
    let mut len = 1;
    let mut v = n >> 7;
    while v != 0 {
        len += 1;
        v >>= 7;
    }
    len
}

fn put_varint(out: &mut PackBuf, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

impl Pack {
    pub fn entries(&self) -> usize {
        self.n as usize
    }

    /// Heap bytes of the buffer as malloc rounds them (0 while inline).
    pub fn bytes(&self) -> usize {
        if self.buf.spilled() {
            super::malloc_chunk(self.buf.capacity())
        } else {
            0
        }
    }

    /// The entry starting at byte `pos`: (its bytes, the position after it).
    fn entry_at(&self, pos: usize) -> (&[u8], usize) {
        let (mut len, mut shift, mut at) = (0usize, 0, pos);
        loop {
            let b = self.buf[at];
            at += 1;
            len |= ((b & 0x7f) as usize) << shift;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        (&self.buf[at..at + len], at + len)
    }

    /// Every entry with its start position.
    pub fn iter(&self) -> PackIter<'_> {
        PackIter { pack: self, pos: 0 }
    }

    /// Consecutive pairs of entries with the start position of each pair.
    pub fn pairs(&self) -> impl Iterator<Item = (usize, &[u8], &[u8])> + '_ {
        let mut it = self.iter();
        std::iter::from_fn(move || {
            let (pos, a) = it.next()?;
            let (_, b) = it.next()?;
            Some((pos, a, b))
        })
    }

    /// An empty pack with room for `bytes` of encoded entries.
    pub fn with_capacity(bytes: usize) -> Self {
        Pack {
            buf: PackBuf::with_capacity(bytes),
            n: 0,
        }
    }

    /// The bytes an entry of `len` bytes takes.
    pub fn entry_bytes(len: usize) -> usize {
        varint_len(len) + len
    }

    pub fn push(&mut self, item: &[u8]) {
        grow(&mut self.buf, Self::entry_bytes(item.len()));
        put_varint(&mut self.buf, item.len());
        self.buf.extend_from_slice(item);
        self.n += 1;
    }

    fn encoded(items: &[&[u8]]) -> PackBuf {
        let mut out = PackBuf::new();
        for it in items {
            put_varint(&mut out, it.len());
            out.extend_from_slice(it);
        }
        out
    }

    /// Inserts `items` as consecutive entries at byte `pos`.
    pub fn insert_at(&mut self, pos: usize, items: &[&[u8]]) {
        let enc = Self::encoded(items);
        grow(&mut self.buf, enc.len());
        self.buf.insert_from_slice(pos, &enc);
        self.n += items.len() as u32;
    }

    /// Removes `count` entries starting at byte `pos`.
    pub fn remove_at(&mut self, pos: usize, count: usize) {
        let mut end = pos;
        for _ in 0..count {
            end = self.entry_at(end).1;
        }
        self.buf.drain(pos..end);
        self.n -= count as u32;
    }

    /// Replaces the entry at byte `pos` with `item`.
    pub fn replace_at(&mut self, pos: usize, item: &[u8]) {
        let end = self.entry_at(pos).1;
        let mut enc = PackBuf::new();
        put_varint(&mut enc, item.len());
        enc.extend_from_slice(item);
        if enc.len() > end - pos {
            grow(&mut self.buf, enc.len() - (end - pos));
        }
        self.buf.drain(pos..end);
        self.buf.insert_from_slice(pos, &enc);
    }

    /// Start of the pair whose first entry is `first`.
    pub fn find_pair(&self, first: &[u8]) -> Option<(usize, &[u8])> {
        self.pairs()
            .find(|(_, a, _)| *a == first)
            .map(|(pos, _, b)| (pos, b))
    }

    /// The entry starting at byte `pos`.
    pub fn entry(&self, pos: usize) -> &[u8] {
        self.entry_at(pos).0
    }

    /// Removes the last entry, which starts at byte `pos` (the caller knows
    /// where it starts: no walk).
    pub fn pop_last_at(&mut self, pos: usize) {
        debug_assert_eq!(self.entry_at(pos).1, self.buf.len());
        self.buf.truncate(pos);
        self.n -= 1;
    }

    /// Position after the entry starting at `pos`.
    pub fn next_pos(&self, pos: usize) -> usize {
        self.entry_at(pos).1
    }

    pub fn end(&self) -> usize {
        self.buf.len()
    }

    pub fn shrink(&mut self) {
        self.buf.shrink_to_fit();
    }

    /// The encoded entries, as one buffer (what a list node compresses).
    pub fn raw(&self) -> &[u8] {
        &self.buf
    }

    /// A pack of `entries` entries from the buffer [`Pack::raw`] gave.
    pub fn from_raw(buf: Vec<u8>, entries: usize) -> Pack {
        Pack {
            buf: PackBuf::from_vec(buf),
            n: entries as u32,
        }
    }
}

pub struct PackIter<'a> {
    pack: &'a Pack,
    pos: usize,
}

impl<'a> Iterator for PackIter<'a> {
    type Item = (usize, &'a [u8]);
    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.pack.buf.len() {
            return None;
        }
        let start = self.pos;
        let (item, next) = self.pack.entry_at(start);
        self.pos = next;
        Some((start, item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_insert_replace_remove() {
        let mut p = Pack::default();
        let long = vec![7u8; 300];
        p.push(b"a");
        p.push(b"1");
        p.push(&long);
        p.push(b"2");
        assert_eq!(p.entries(), 4);
        let (pos, v) = p.find_pair(&long).unwrap();
        assert_eq!(v, b"2");
        let vpos = p.next_pos(pos);
        p.replace_at(vpos, b"two");
        assert_eq!(p.find_pair(&long).unwrap().1, b"two");
        p.insert_at(0, &[b"z", b""]);
        assert_eq!(
            p.pairs().map(|(_, a, _)| a.to_vec()).collect::<Vec<_>>(),
            [b"z".to_vec(), b"a".to_vec(), long.clone()]
        );
        let (pos, _) = p.find_pair(b"a").unwrap();
        p.remove_at(pos, 2);
        assert_eq!(p.entries(), 4);
        assert!(p.find_pair(b"a").is_none());
        assert_eq!(p.find_pair(b"z").unwrap().1, b"");
    }
}
