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
    /// 1-field hash or a 5-member sorted set lives in its key's table entry,
    /// a 3-element list node in its node array: issue 42). Its `aux` word is
    /// the entry count, `COUNT_UNKNOWN` once past it (counted by a walk,
    /// as Redis's listpack past 65535).
    buf: PackBuf,
}

/// The encoded entries: inline while they fit (`INLINE` bytes), a heap
/// buffer beyond (exact growth up to 256 bytes, doubling past).
pub type PackBuf = super::smallbuf::SmallBuf;

const COUNT_UNKNOWN: u16 = u16::MAX;

/// Makes room for `more` bytes in `buf`, doubling no further than `limit`
/// (see [`PackBuf::reserve_within`]).
fn grow(buf: &mut PackBuf, more: usize, limit: usize) {
    buf.reserve_within(more, limit);
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
        match self.buf.aux() {
            COUNT_UNKNOWN => self.iter().count(),
            n => n as usize,
        }
    }

    fn set_entries(&mut self, n: usize) {
        self.buf.set_aux(u16::try_from(n).unwrap_or(COUNT_UNKNOWN));
    }

    /// Runs `change` (of the bytes), then adds `delta` to the count, taken
    /// before: a count past the word is a walk of the bytes as they are.
    fn recount(&mut self, delta: isize, change: impl FnOnce(&mut PackBuf)) {
        let n = self.entries();
        change(&mut self.buf);
        self.set_entries(n.checked_add_signed(delta).expect("count within the pack"));
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
    #[inline]
    pub(super) fn entry_at(&self, pos: usize) -> (&[u8], usize) {
        // The bytes once: each `self.buf[..]` would ask the buffer again
        // whether it is inline (smallbuf.rs), a branch per byte of a walk.
        let buf: &[u8] = &self.buf;
        if buf[pos] < 0x80 {
            // A length in one byte: entries up to 127 bytes, nearly all.
            let end = pos + 1 + buf[pos] as usize;
            return (&buf[pos + 1..end], end);
        }
        let (mut len, mut shift, mut at) = (0usize, 0, pos);
        loop {
            let b = buf[at];
            at += 1;
            len |= ((b & 0x7f) as usize) << shift;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        (&buf[at..at + len], at + len)
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
        }
    }

    /// The bytes an entry of `len` bytes takes.
    pub fn entry_bytes(len: usize) -> usize {
        varint_len(len) + len
    }

    pub fn push(&mut self, item: &[u8]) {
        self.push_within(item, usize::MAX);
    }

    /// Appends `item` to a pack that will hold at most `limit` bytes (a list
    /// node): its buffer grows by doubling but ends at `limit`.
    pub fn push_within(&mut self, item: &[u8], limit: usize) {
        self.recount(1, |buf| {
            grow(buf, Self::entry_bytes(item.len()), limit);
            put_varint(buf, item.len());
            buf.extend_from_slice(item);
        });
    }

    fn encoded(items: &[&[u8]]) -> PackBuf {
        let mut out = PackBuf::default();
        for it in items {
            put_varint(&mut out, it.len());
            out.extend_from_slice(it);
        }
        out
    }

    /// Inserts `items` as consecutive entries at byte `pos`.
    pub fn insert_at(&mut self, pos: usize, items: &[&[u8]]) {
        self.insert_within(pos, items, usize::MAX);
    }

    /// As [`Pack::insert_at`] into a pack that will hold at most `limit`
    /// bytes (see [`Pack::push_within`]).
    pub fn insert_within(&mut self, pos: usize, items: &[&[u8]], limit: usize) {
        let enc = Self::encoded(items);
        self.recount(items.len() as isize, |buf| {
            grow(buf, enc.len(), limit);
            buf.insert_from_slice(pos, &enc);
        });
    }

    /// Removes `count` entries starting at byte `pos`.
    pub fn remove_at(&mut self, pos: usize, count: usize) {
        let mut end = pos;
        for _ in 0..count {
            end = self.entry_at(end).1;
        }
        self.recount(-(count as isize), |buf| buf.drain(pos..end));
    }

    /// Replaces the entry at byte `pos` with `item`.
    pub fn replace_at(&mut self, pos: usize, item: &[u8]) {
        let (old, end) = self.entry_at(pos);
        if old.len() == item.len() {
            // The same length, so the same length prefix: the bytes in
            // place (HSETEX of a field's TTL, 6 bytes over 6, or of a value
            // as long as the one before), no move of what follows.
            let start = end - item.len();
            self.buf.bytes_mut()[start..end].copy_from_slice(item);
            return;
        }
        let mut enc = PackBuf::default();
        put_varint(&mut enc, item.len());
        enc.extend_from_slice(item);
        if enc.len() > end - pos {
            grow(&mut self.buf, enc.len() - (end - pos), usize::MAX);
        }
        self.buf.drain(pos..end);
        self.buf.insert_from_slice(pos, &enc);
    }

    /// Start of the pair whose first entry is `first`.
    pub fn find_pair(&self, first: &[u8]) -> Option<(usize, &[u8])> {
        let (pos, after) = self.find_group(first, 2)?;
        Some((pos, self.entry_at(after).0))
    }

    /// Start of the first group of `stride` consecutive entries (groups
    /// from the first entry: a hash's pairs, or its triplets with TTLs)
    /// whose first entry is `first`, and the position after that entry. One
    /// walk of the bytes that decodes only the lengths of the entries it
    /// does not compare.
    #[inline]
    pub fn find_group(&self, first: &[u8], stride: usize) -> Option<(usize, usize)> {
        let buf: &[u8] = &self.buf;
        let (mut pos, mut k) = (0, 0);
        while pos < buf.len() {
            let (len, at) = match buf[pos] {
                b if b < 0x80 => (b as usize, pos + 1),
                _ => {
                    let (e, end) = self.entry_at(pos);
                    (e.len(), end - e.len())
                }
            };
            if k == 0 && len == first.len() && buf[at..at + len] == *first {
                return Some((pos, at + len));
            }
            pos = at + len;
            k = if k + 1 == stride { 0 } else { k + 1 };
        }
        None
    }

    /// The entry starting at byte `pos`.
    pub fn entry(&self, pos: usize) -> &[u8] {
        self.entry_at(pos).0
    }

    /// Removes the last entry, which starts at byte `pos` (the caller knows
    /// where it starts: no walk).
    pub fn pop_last_at(&mut self, pos: usize) {
        debug_assert_eq!(self.entry_at(pos).1, self.buf.len());
        self.recount(-1, |buf| buf.truncate(pos));
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

    /// Bytes the buffer holds beyond its entries (0 while inline).
    pub fn room(&self) -> usize {
        if self.buf.spilled() {
            self.buf.capacity() - self.buf.len()
        } else {
            0
        }
    }

    /// The encoded entries, as one buffer (what a list node compresses).
    pub fn raw(&self) -> &[u8] {
        &self.buf
    }

    /// A pack of `entries` entries from the buffer [`Pack::raw`] gave.
    pub fn from_raw(buf: Vec<u8>, entries: usize) -> Pack {
        let mut p = Pack {
            buf: PackBuf::from_vec(buf),
        };
        p.set_entries(entries);
        p
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

    #[test]
    fn finds_groups_and_replaces_in_place() {
        // Triplets as a hash with field TTLs keeps them, one field long
        // enough for a two-byte length.
        let long = vec![b'f'; 200];
        let mut p = Pack::default();
        for (f, v) in [(&b"a"[..], &b"1"[..]), (&long, b"2"), (b"1", b"a")] {
            p.push(f);
            p.push(v);
            p.push(b"");
        }
        assert_eq!(p.find_group(b"a", 3), Some((0, 2)));
        let (at, after) = p.find_group(&long, 3).unwrap();
        assert_eq!((p.entry(at), p.next_pos(at)), (&long[..], after));
        // `1` is a value before it is a field: only the group's first counts.
        let (at, after) = p.find_group(b"1", 3).unwrap();
        assert_eq!((p.entry(after), p.next_pos(at)), (&b"a"[..], after));
        assert_eq!(p.find_group(b"2", 3), None);
        assert_eq!(p.find_group(b"", 3), None);
        // Same length in place, another length moves what follows.
        let vpos = p.next_pos(at);
        p.replace_at(vpos, b"b");
        p.replace_at(p.next_pos(vpos), b"123456");
        p.replace_at(p.next_pos(vpos), b"654321");
        let lv = p.find_group(&long, 3).unwrap().1;
        p.replace_at(lv, b"3");
        assert_eq!(
            p.iter().map(|(_, e)| e.to_vec()).collect::<Vec<_>>(),
            [
                &b"a"[..],
                b"1",
                b"",
                &long,
                b"3",
                b"",
                b"1",
                b"b",
                b"654321"
            ]
            .map(|e| e.to_vec())
        );
        assert_eq!(p.entries(), 9);
        let mut small = Pack::default();
        small.push(b"x");
        small.push(b"yy");
        small.replace_at(small.next_pos(0), b"zz");
        assert_eq!(
            (small.find_pair(b"x"), small.bytes()),
            (Some((0, &b"zz"[..])), 0)
        );
    }

    #[test]
    fn counts_past_65535_entries_by_walking() {
        // The count is the buffer's 16-bit aux word; a pack beyond it (a
        // raised hash-max-listpack-entries) counts by a walk, as Redis's
        // listpack does past 65535.
        let mut p = Pack::default();
        for i in 0..70_000u32 {
            p.push(&i.to_le_bytes()[..(i % 3) as usize]);
        }
        assert_eq!(p.entries(), 70_000);
        let (pos, _) = p.iter().nth(69_999).unwrap();
        p.pop_last_at(pos);
        p.remove_at(0, 4_000);
        assert_eq!(p.entries(), 65_999);
        assert_eq!(p.iter().count(), 65_999);
        p.remove_at(0, 1_000);
        assert_eq!(p.entries(), 64_999);
        p.push(b"x");
        assert_eq!(p.entries(), 65_000);
    }

    #[test]
    fn small_packs_stay_inline() {
        // `HSET h name alice` and a 5-member sorted set with small integer
        // scores fit the 21 bytes kept inline (issue 42).
        let mut p = Pack::default();
        for e in [&b"name"[..], b"alice"] {
            p.push(e);
        }
        assert_eq!((p.bytes(), p.entries()), (0, 2));
        let mut z = Pack::default();
        for m in [b"a", b"b", b"c", b"d", b"e"] {
            z.push(m);
            z.push(&[1]);
        }
        assert_eq!((z.end(), z.bytes()), (20, 0));
        z.push(b"f");
        z.push(&[1]);
        assert_eq!(z.bytes(), 32);
    }
}
