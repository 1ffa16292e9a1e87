//! One node of a stream: entries laid end to end in one buffer, their IDs
//! delta-encoded against the node's first ID (its key in the stream's
//! B-tree), as Redis's listpack nodes are. The first entry's field names are
//! the node's master fields; an entry with the same names stores only its
//! values.
//!
//! ```text
//! buf:    [master field count varint] ([len varint][name])*   then entries:
//! entry:  [head u8] [d varint if head's d is 31] [seq varint if NEW_MS] body
//! head:   bit 0 DELETED, bit 1 SAME_FIELDS, bit 2 NEW_MS, bits 3-7 d (0-30;
//!         31: d follows as a varint)
//!         each ID is a delta against the entry before it (the node's key
//!         for the first): without NEW_MS the ms is the same and d is the
//!         seq's step; with it d is the ms's step and the seq follows whole
//! body:   SAME_FIELDS: ([len varint][value])* one per master field
//!         else:        [field count varint] ([len][field] [len][value])*
//! ```
//!
//! An XADD with an auto ID in the same millisecond as the entry before
//! takes one byte of ID, two in a new millisecond (issue 42: against the
//! node's key it took a flag byte and two varints, the seq often two bytes
//! at 1,000 entries a millisecond). Entries are only read in order, so
//! every ID is known when the next is decoded.
//!
//! A deleted entry keeps its bytes with the DELETED flag set (XDEL and
//! trimming inside a node), as Redis does; a node whose entries are all
//! deleted is dropped.

use super::id::StreamId;
use crate::rdb::listpack::{entry_len, int_entry_len};

const DELETED: u8 = 1;
const SAME_FIELDS: u8 = 2;
const NEW_MS: u8 = 4;
/// The head's d that says the step follows as a varint.
const D_FOLLOWS: u64 = 31;
/// The most room a node is given before its first entry.
const MAX_ROOM: usize = 8192;

#[derive(Clone, Default)]
pub struct Block {
    buf: Vec<u8>,
    /// Where the entries start (after the master fields).
    entries_at: u32,
    pub live: u32,
    pub deleted: u32,
    /// The last ID appended (deleted or not).
    pub last: StreamId,
    /// Where the entry `last` starts (0: no entry yet; entries follow the
    /// master fields' count, so none starts at 0).
    last_pos: u32,
    /// Bytes the node's Redis listpack holds besides its header, terminator
    /// and live/deleted counts (stream-node-max-bytes is measured on it).
    lp_rest: usize,
}

pub fn varint_len(mut n: u64) -> usize {
    let mut len = 1;
    while n >= 0x80 {
        len += 1;
        n >>= 7;
    }
    len
}

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn get_varint(buf: &[u8], at: &mut usize) -> u64 {
    let (mut n, mut shift) = (0u64, 0);
    loop {
        let b = buf[*at];
        *at += 1;
        n |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return n;
        }
        shift += 7;
    }
}

fn get_bytes<'a>(buf: &'a [u8], at: &mut usize) -> &'a [u8] {
    let len = get_varint(buf, at) as usize;
    let s = &buf[*at..*at + len];
    *at += len;
    s
}

/// Listpack bytes of a master entry after its counts: field count, names, 0.
fn master_lp_len<'a>(names: impl Iterator<Item = &'a [u8]>) -> usize {
    let mut n = 0;
    let mut len = int_entry_len(0);
    for name in names {
        n += 1;
        len += entry_len(name);
    }
    len + int_entry_len(n)
}

/// Listpack bytes of one entry as streamAppendItem writes it.
fn entry_lp_len(master: StreamId, id: StreamId, fields: &[&[u8]], same: bool) -> usize {
    let n = fields.len() / 2;
    let mut len = int_entry_len(0)
        + int_entry_len(id.ms.wrapping_sub(master.ms) as i64)
        + int_entry_len(id.seq.wrapping_sub(master.seq) as i64);
    for (i, f) in fields.iter().enumerate() {
        if !same || i % 2 == 1 {
            len += entry_len(f);
        }
    }
    let lp_count = if same { n + 3 } else { 2 * n + 4 };
    if !same {
        len += int_entry_len(n as i64);
    }
    len + int_entry_len(lp_count as i64)
}

/// One decoded entry: where it starts, its ID, whether it is deleted, and
/// where its body starts.
#[derive(Clone, Copy)]
pub struct Slot {
    pub pos: usize,
    pub id: StreamId,
    pub deleted: bool,
    /// The entry's field names are the node's master fields.
    pub same: bool,
    body: usize,
    pub end: usize,
}

/// The field-value pairs of one entry.
#[derive(Clone)]
pub struct Fields<'a> {
    buf: &'a [u8],
    master: usize,
    body: usize,
    left: usize,
    same: bool,
}

impl<'a> Fields<'a> {
    pub fn len(&self) -> usize {
        self.left
    }

    pub fn is_empty(&self) -> bool {
        self.left == 0
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        if self.same {
            let f = get_bytes(self.buf, &mut self.master);
            let v = get_bytes(self.buf, &mut self.body);
            Some((f, v))
        } else {
            let f = get_bytes(self.buf, &mut self.body);
            let v = get_bytes(self.buf, &mut self.body);
            Some((f, v))
        }
    }
}

impl Block {
    /// A node whose first entry is `id` with `fields` (its master fields).
    pub fn new(id: StreamId, fields: &[&[u8]]) -> Block {
        Block::with_room(id, fields, 64)
    }

    /// As [`Block::new`], with room for `room` bytes (at most `MAX_ROOM`:
    /// past the default node limits one node's size says little of the
    /// next one's).
    pub fn with_room(id: StreamId, fields: &[&[u8]], room: usize) -> Block {
        Block::in_buffer(Vec::with_capacity(room.clamp(64, MAX_ROOM)), id, fields)
    }

    /// As [`Block::new`], written into `buf` (emptied): the buffer the node
    /// before it was built in, given back by [`Block::seal_recycling`].
    pub fn in_buffer(mut buf: Vec<u8>, id: StreamId, fields: &[&[u8]]) -> Block {
        buf.clear();
        put_varint(&mut buf, (fields.len() / 2) as u64);
        for f in fields.iter().step_by(2) {
            put_varint(&mut buf, f.len() as u64);
            buf.extend_from_slice(f);
        }
        let entries_at = buf.len() as u32;
        let mut b = Block {
            buf,
            entries_at,
            live: 0,
            deleted: 0,
            last: id,
            last_pos: 0,
            lp_rest: master_lp_len(fields.iter().step_by(2).copied()),
        };
        b.push(id, id, fields);
        b
    }

    /// Heap bytes held, as malloc rounds them (a sealed node's exact block
    /// takes its 8-byte header and up to 15 bytes of granule too).
    pub fn bytes(&self) -> usize {
        crate::types::malloc_chunk(self.buf.capacity())
    }

    /// Returns the capacity past the end (a node no longer appended to).
    pub fn seal(&mut self) {
        self.buf.shrink_to_fit();
    }

    /// Seals a node that XADD filled: its entries move to a block of their
    /// exact size and the buffer it grew in comes back (emptied) for the
    /// next node. Shrinking the buffer in place instead left its freed tail
    /// behind every node, a hole of the room the next node was given to
    /// grow in that later nodes' larger blocks never fill: 1-1.4 bytes of
    /// RSS an entry over used_memory at 1M entries of 100 a node (issue
    /// 42). One buffer per stream carries the room, at a copy of each node
    /// once. A buffer larger than `MAX_ROOM` (node limits raised) shrinks in
    /// place as before: no copy of a large node, no large spare kept.
    pub fn seal_recycling(&mut self) -> Option<Vec<u8>> {
        if self.buf.capacity() > MAX_ROOM {
            self.seal();
            return None;
        }
        let exact = self.buf.as_slice().to_vec();
        let mut spent = std::mem::replace(&mut self.buf, exact);
        spent.clear();
        Some(spent)
    }

    /// Bytes of the node's buffer in use.
    pub fn used(&self) -> usize {
        self.buf.len()
    }

    /// An empty node whose master fields are `names` (a node read from an
    /// RDB file, whose master entry is given apart from its entries).
    pub fn with_master(names: &[&[u8]], first: StreamId) -> Block {
        let mut buf = Vec::with_capacity(64);
        put_varint(&mut buf, names.len() as u64);
        for f in names {
            put_varint(&mut buf, f.len() as u64);
            buf.extend_from_slice(f);
        }
        Block {
            entries_at: buf.len() as u32,
            buf,
            live: 0,
            deleted: 0,
            last: first,
            last_pos: 0,
            lp_rest: master_lp_len(names.iter().copied()),
        }
    }

    /// The master field names (the first entry's names when built by XADD).
    pub fn master_fields(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let mut at = 0;
        let n = get_varint(&self.buf, &mut at);
        (0..n).map(move |_| get_bytes(&self.buf, &mut at))
    }

    fn same_fields(&self, fields: &[&[u8]]) -> bool {
        let mut at = 0;
        let n = get_varint(&self.buf, &mut at) as usize;
        n * 2 == fields.len()
            && self
                .master_fields()
                .zip(fields.iter().step_by(2))
                .all(|(a, b)| a == *b)
    }

    /// Appends a deleted entry (a tombstone of a node read from RDB).
    pub fn push_deleted(&mut self, master: StreamId, id: StreamId, fields: &[&[u8]]) {
        let pos = self.buf.len();
        self.push(master, id, fields);
        self.delete_at(pos);
    }

    /// Appends entry `id` (greater than `last`); `master` is the node's key.
    pub fn push(&mut self, master: StreamId, id: StreamId, fields: &[&[u8]]) {
        let same = self.same_fields(fields);
        let prev = if self.live + self.deleted == 0 {
            master
        } else {
            self.last
        };
        let new_ms = id.ms != prev.ms;
        let d = if new_ms {
            id.ms - prev.ms
        } else {
            id.seq - prev.seq
        };
        let mut need = 1;
        if d >= D_FOLLOWS {
            need += varint_len(d);
        }
        if new_ms {
            need += varint_len(id.seq);
        }
        for (i, f) in fields.iter().enumerate() {
            if !same || i % 2 == 1 {
                need += varint_len(f.len() as u64) + f.len();
            }
        }
        if !same {
            need += varint_len((fields.len() / 2) as u64);
        }
        self.lp_rest += entry_lp_len(master, id, fields, same);
        self.buf.reserve(need);
        self.last_pos = self.buf.len() as u32;
        let flags = if same { SAME_FIELDS } else { 0 } | if new_ms { NEW_MS } else { 0 };
        self.buf.push(flags | (d.min(D_FOLLOWS) as u8) << 3);
        if d >= D_FOLLOWS {
            put_varint(&mut self.buf, d);
        }
        if new_ms {
            put_varint(&mut self.buf, id.seq);
        }
        if !same {
            put_varint(&mut self.buf, (fields.len() / 2) as u64);
        }
        for (i, f) in fields.iter().enumerate() {
            if !same || i % 2 == 1 {
                put_varint(&mut self.buf, f.len() as u64);
                self.buf.extend_from_slice(f);
            }
        }
        self.live += 1;
        self.last = id;
    }

    /// The size of this node as Redis's listpack (lpBytes), which
    /// stream-node-max-bytes bounds.
    pub fn redis_bytes(&self) -> usize {
        7 + int_entry_len(self.live as i64) + int_entry_len(self.deleted as i64) + self.lp_rest
    }

    /// The entry at byte `pos`, whose predecessor's ID is `prev` (the
    /// node's key for the first entry).
    fn slot(&self, prev: StreamId, pos: usize) -> Slot {
        let buf = &self.buf;
        let flags = buf[pos];
        let mut at = pos + 1;
        let mut d = (flags >> 3) as u64;
        if d == D_FOLLOWS {
            d = get_varint(buf, &mut at);
        }
        let id = if flags & NEW_MS != 0 {
            StreamId::new(prev.ms + d, get_varint(buf, &mut at))
        } else {
            StreamId::new(prev.ms, prev.seq + d)
        };
        let same = flags & SAME_FIELDS != 0;
        let body = at;
        // Skip the body.
        let count = if same {
            let mut m = 0;
            get_varint(buf, &mut m) as usize
        } else {
            get_varint(buf, &mut at) as usize * 2
        };
        for _ in 0..count {
            let len = get_varint(buf, &mut at) as usize;
            at += len;
        }
        Slot {
            pos,
            id,
            deleted: flags & DELETED != 0,
            same,
            body,
            end: at,
        }
    }

    pub fn fields(&self, slot: &Slot) -> Fields<'_> {
        let mut master = 0;
        let n = get_varint(&self.buf, &mut master) as usize;
        if slot.same {
            Fields {
                buf: &self.buf,
                master,
                body: slot.body,
                left: n,
                same: true,
            }
        } else {
            let mut body = slot.body;
            let n = get_varint(&self.buf, &mut body) as usize;
            Fields {
                buf: &self.buf,
                master: body,
                body,
                left: n,
                same: false,
            }
        }
    }

    /// The ID of the last entry that is not deleted (None: all are), found
    /// without decoding the node when its last entry is live, the usual case.
    pub fn last_live(&self, master: StreamId) -> Option<StreamId> {
        if self.last_pos != 0 && self.buf[self.last_pos as usize] & DELETED == 0 {
            return Some(self.last);
        }
        self.slots(master)
            .filter(|s| !s.deleted)
            .last()
            .map(|s| s.id)
    }

    /// Every entry, deleted ones included, in ID order.
    pub fn slots(&self, master: StreamId) -> impl Iterator<Item = Slot> + '_ {
        let mut pos = self.entries_at as usize;
        let mut prev = master;
        std::iter::from_fn(move || {
            if pos >= self.buf.len() {
                return None;
            }
            let s = self.slot(prev, pos);
            pos = s.end;
            prev = s.id;
            Some(s)
        })
    }

    /// Marks the entry at `pos` deleted; false if it already was.
    pub fn delete_at(&mut self, pos: usize) -> bool {
        if self.buf[pos] & DELETED != 0 {
            return false;
        }
        self.buf[pos] |= DELETED;
        self.live -= 1;
        self.deleted += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_with_shared_and_own_fields() {
        let m = StreamId::new(100, 5);
        let mut b = Block::new(m, &[b"a", b"1", b"b", b"2"]);
        b.push(m, StreamId::new(100, 9), &[b"a", b"3", b"b", b"4"]);
        b.push(m, StreamId::new(300, 0), &[b"x", b"5"]);
        let slots: Vec<Slot> = b.slots(m).collect();
        let ids: Vec<StreamId> = slots.iter().map(|s| s.id).collect();
        assert_eq!(ids, [m, StreamId::new(100, 9), StreamId::new(300, 0)]);
        let f: Vec<_> = b.fields(&slots[1]).collect();
        assert_eq!(f, [(&b"a"[..], &b"3"[..]), (&b"b"[..], &b"4"[..])]);
        let f: Vec<_> = b.fields(&slots[2]).collect();
        assert_eq!(f, [(&b"x"[..], &b"5"[..])]);
        assert!(b.delete_at(slots[1].pos));
        assert!(!b.delete_at(slots[1].pos));
        assert!(b.slots(m).nth(1).unwrap().deleted);
        assert_eq!((b.live, b.deleted), (2, 1));
    }

    #[test]
    fn last_live_skips_deleted_tail_entries() {
        let m = StreamId::new(7, 0);
        let mut b = Block::new(m, &[b"a", b"1"]);
        for seq in 1..4 {
            b.push(m, StreamId::new(7, seq), &[b"a", b"1"]);
        }
        assert_eq!(b.last_live(m), Some(StreamId::new(7, 3)));
        let slots: Vec<Slot> = b.slots(m).collect();
        b.delete_at(slots[3].pos);
        b.delete_at(slots[2].pos);
        assert_eq!(b.last_live(m), Some(StreamId::new(7, 1)));
        b.delete_at(slots[1].pos);
        b.delete_at(slots[0].pos);
        assert_eq!(b.last_live(m), None);
        let mut loaded = Block::with_master(&[b"a"], m);
        assert_eq!(loaded.last_live(m), None);
        loaded.push_deleted(m, m, &[b"a", b"1"]);
        assert_eq!(loaded.last_live(m), None);
        loaded.push(m, StreamId::new(7, 1), &[b"a", b"2"]);
        assert_eq!(loaded.last_live(m), Some(StreamId::new(7, 1)));
    }

    #[test]
    fn ids_round_trip_with_steps_of_every_width() {
        // Steps under 31 sit in the head byte, longer ones follow it; a new
        // millisecond carries its seq whole (0 and u64::MAX alike).
        let m = StreamId::new(5, 3);
        let ids = [
            m,
            StreamId::new(5, 4),
            StreamId::new(5, 34),
            StreamId::new(5, 35),
            StreamId::new(5, 1 << 40),
            StreamId::new(6, 0),
            StreamId::new(36, u64::MAX),
            StreamId::new(37, 7),
            StreamId::new(1 << 50, 0),
            StreamId::new(u64::MAX, u64::MAX - 1),
            StreamId::new(u64::MAX, u64::MAX),
        ];
        let mut b = Block::new(m, &[b"f", b"v"]);
        for (i, id) in ids.iter().enumerate().skip(1) {
            if i % 3 == 0 {
                b.push(m, *id, &[b"g", b"w"]);
            } else {
                b.push(m, *id, &[b"f", b"v"]);
            }
        }
        let got: Vec<StreamId> = b.slots(m).map(|s| s.id).collect();
        assert_eq!(got, ids);
        let slots: Vec<Slot> = b.slots(m).collect();
        assert!(b.delete_at(slots[4].pos));
        let got: Vec<(StreamId, bool)> = b.slots(m).map(|s| (s.id, s.deleted)).collect();
        assert_eq!(got[4], (ids[4], true));
        assert_eq!(got.iter().filter(|s| s.1).count(), 1);
        assert_eq!(
            b.fields(&slots[3]).collect::<Vec<_>>(),
            [(&b"g"[..], &b"w"[..])]
        );
        assert_eq!(b.last_live(m), Some(StreamId::new(u64::MAX, u64::MAX)));
        // One byte of ID for the next seq in the same millisecond, two in
        // the next millisecond (plus the head's flags, value length, value).
        let mut c = Block::new(m, &[b"f", b"v"]);
        let at = c.used();
        c.push(m, StreamId::new(5, 4), &[b"f", b"v"]);
        assert_eq!(c.used() - at, 3);
        c.push(m, StreamId::new(6, 0), &[b"f", b"v"]);
        assert_eq!(c.used() - at, 7);
    }

    #[test]
    fn a_sealed_node_is_exact_and_gives_its_buffer_back() {
        let m = StreamId::new(1, 0);
        let mut b = Block::with_room(m, &[b"f", b"v"], 4096);
        for seq in 1..50 {
            b.push(m, StreamId::new(1, seq), &[b"f", b"v"]);
        }
        let used = b.used();
        let spare = b
            .seal_recycling()
            .expect("a buffer under MAX_ROOM comes back");
        assert!(spare.is_empty() && spare.capacity() >= 4096);
        assert_eq!(b.buf.capacity(), used);
        assert_eq!(b.bytes(), crate::types::malloc_chunk(used));
        assert_eq!(b.slots(m).count(), 50);
        let next = Block::in_buffer(spare, StreamId::new(2, 0), &[b"f", b"v"]);
        assert!(next.bytes() >= 4096);
        assert_eq!(next.slots(StreamId::new(2, 0)).count(), 1);
        let mut big = Block::with_room(m, &[b"f", b"v"], 64);
        for seq in 1..5000 {
            big.push(m, StreamId::new(1, seq), &[b"f", b"v"]);
        }
        assert!(big.seal_recycling().is_none());
        assert_eq!(big.buf.capacity(), big.used());
        assert_eq!(big.bytes(), crate::types::malloc_chunk(big.used()));
    }
}
