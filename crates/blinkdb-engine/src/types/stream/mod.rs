//! Streams: entries in a B-tree of packed nodes (`block`), keyed by each
//! node's first ID, as Redis's radix tree of listpacks; the stream's
//! counters (last ID, entries added, max deleted ID) and its consumer groups
//! (`group`). A node takes entries until `stream-node-max-entries` or
//! `stream-node-max-bytes`; older nodes are shrunk to fit when a new one
//! starts, so only the tail node carries spare capacity.

mod block;
mod group;
mod id;

pub use block::{Block, Fields};
pub use group::{Consumer, Group, Nack};
pub use id::{ParsedId, StreamId};

use std::collections::BTreeMap;

/// Bytes a node costs besides its buffer's capacity: its share of the
/// B-tree, whose 912-byte leaves of 11 (key, Block) slots hold 6-7 nodes of
/// a stream built by appends (a full leaf splits 6/5 and only the right one
/// fills), about 140 bytes, the levels above them, and malloc's header and
/// rounding of the buffer. 96 before counted the slots only: MEMORY USAGE
/// of a 1M-entry stream was 0.8 bytes an entry under used_memory (issue 42).
const NODE_OVERHEAD: usize = 160;

/// Node limits (`stream-node-max-bytes`, `stream-node-max-entries`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeLimits {
    pub max_bytes: usize,
    pub max_entries: usize,
}

impl Default for NodeLimits {
    fn default() -> Self {
        NodeLimits {
            max_bytes: 4096,
            max_entries: 100,
        }
    }
}

/// Why XADD refused an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddError {
    /// Not greater than the stream's last ID.
    NotGreater,
}

/// How XADD and XTRIM trim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trim {
    MaxLen(u64),
    MinId(StreamId),
}

#[derive(Clone, Default)]
pub struct StreamValue {
    blocks: BTreeMap<StreamId, Block>,
    length: u64,
    pub last_id: StreamId,
    /// First live entry (0-0 when empty), Redis's `first_id`.
    pub first_id: StreamId,
    pub max_deleted_id: StreamId,
    pub entries_added: u64,
    pub groups: BTreeMap<Box<[u8]>, Group>,
    /// Sum of the nodes' buffer capacities.
    block_bytes: usize,
}

impl std::fmt::Debug for StreamValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Stream({} entries)", self.length)
    }
}

impl PartialEq for StreamValue {
    fn eq(&self, other: &Self) -> bool {
        self.length == other.length
            && self.last_id == other.last_id
            && self.entries_added == other.entries_added
            && self.max_deleted_id == other.max_deleted_id
            && self.groups == other.groups
            && self
                .range(StreamId::MIN, StreamId::MAX, false)
                .map(|(id, f)| (id, f.collect::<Vec<_>>()))
                .eq(other
                    .range(StreamId::MIN, StreamId::MAX, false)
                    .map(|(id, f)| (id, f.collect::<Vec<_>>())))
    }
}

impl Eq for StreamValue {}

impl Drop for StreamValue {
    fn drop(&mut self) {
        if self.length as usize > super::LAZYFREE_THRESHOLD {
            super::free_later(std::mem::take(&mut self.blocks));
        }
    }
}

/// One entry read from a stream: its ID and field-value pairs.
pub type EntryRef<'a> = (StreamId, Fields<'a>);

impl StreamValue {
    pub fn len(&self) -> u64 {
        self.length
    }

    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    pub fn encoding(&self) -> &'static str {
        "stream"
    }

    /// The nodes in ID order, each with its key (its master ID): what an
    /// RDB file stores as one listpack each.
    pub fn node_list(&self) -> impl Iterator<Item = (StreamId, &Block)> + '_ {
        self.blocks.iter().map(|(k, b)| (*k, b))
    }

    /// Adds a node read from an RDB file after the last one. Its entries
    /// must follow the previous node's and not precede its key; a node with
    /// no live entry is dropped, as Redis drops one when its last entry goes.
    pub fn push_node(&mut self, master: StreamId, mut block: Block) -> Result<(), &'static str> {
        if let Some((_, prev)) = self.blocks.iter().next_back() {
            if master <= prev.last {
                return Err("stream node out of order");
            }
        }
        match block.slots(master).next() {
            Some(s) if s.id >= master => {}
            _ => return Err("stream node without entries or before its key"),
        }
        if block.live == 0 {
            return Ok(());
        }
        block.seal();
        self.length += block.live as u64;
        self.block_bytes += block.bytes();
        self.blocks.insert(master, block);
        Ok(())
    }

    /// Nodes in the tree (XINFO's radix-tree-keys).
    pub fn nodes(&self) -> usize {
        self.blocks.len()
    }

    /// Nodes of the B-tree holding the stream's nodes (XINFO's
    /// radix-tree-nodes, which counts Redis's radix tree nodes): leaves of
    /// up to 11 keys, and the levels above them.
    pub fn tree_nodes(&self) -> usize {
        let mut level = self.blocks.len().div_ceil(11).max(1);
        let mut total = level;
        while level > 1 {
            level = level.div_ceil(12);
            total += level;
        }
        total
    }

    pub fn bytes(&self) -> usize {
        let groups: usize = self.groups.values().map(|g| g.bytes()).sum();
        self.block_bytes + self.blocks.len() * NODE_OVERHEAD + groups + 64
    }

    /// The ID XADD gives an entry: `given` (a full ID, or `ms-*` with
    /// `seq_given` false), else the next after the last from clock `now`.
    pub fn next_id(&self, given: Option<ParsedId>, now_ms: u64) -> Result<StreamId, AddError> {
        let last = self.last_id;
        let id = match given {
            Some(p) if p.seq_given => p.id,
            Some(p) if p.id.ms == last.ms => {
                if last.seq == u64::MAX {
                    return Err(AddError::NotGreater);
                }
                StreamId::new(last.ms, last.seq + 1)
            }
            Some(p) => p.id,
            None if now_ms > last.ms => StreamId::new(now_ms, 0),
            // Past the last possible ID this wraps to 0-0 and fails below.
            None => last.next().unwrap_or(StreamId::MIN),
        };
        if id <= last {
            return Err(AddError::NotGreater);
        }
        Ok(id)
    }

    /// Appends entry `id` (from `next_id`) with `fields` (field, value, ...).
    pub fn append(&mut self, id: StreamId, fields: &[&[u8]], limits: NodeLimits) {
        debug_assert!(id > self.last_id && !fields.is_empty() && fields.len().is_multiple_of(2));
        // Redis's streamAppendItem: a new node when the tail's listpack plus
        // the entry's field and value bytes reaches stream-node-max-bytes
        // (0: 1 GB), or when it holds stream-node-max-entries entries.
        const LISTPACK_MAX: usize = 1 << 30;
        let max_bytes = match limits.max_bytes {
            0 => LISTPACK_MAX,
            n => n.min(LISTPACK_MAX),
        };
        let size: usize = fields.iter().map(|f| f.len()).sum();
        let mut tail = self.blocks.iter_mut().next_back();
        let fits = match &mut tail {
            Some((_, b)) => {
                b.redis_bytes() + size < max_bytes
                    && (limits.max_entries == 0
                        || ((b.live + b.deleted) as usize) < limits.max_entries)
            }
            None => false,
        };
        match tail {
            Some((&master, b)) if fits => {
                let before = b.bytes();
                b.push(master, id, fields);
                self.block_bytes = self.block_bytes + b.bytes() - before;
            }
            tail => {
                let (mut room, mut spare) = (0, None);
                if let Some((_, b)) = tail {
                    let before = b.bytes();
                    spare = b.seal_recycling();
                    self.block_bytes = self.block_bytes + b.bytes() - before;
                    // An eighth more: entries of a node differ by a byte or
                    // two (ID deltas, values' lengths), and a buffer short by
                    // one would double.
                    room = b.used() + b.used() / 8;
                }
                let b = match spare {
                    Some(buf) if buf.capacity() >= room => Block::in_buffer(buf, id, fields),
                    _ => Block::with_room(id, fields, room),
                };
                self.block_bytes += b.bytes();
                self.blocks.insert(id, b);
            }
        }
        self.length += 1;
        self.entries_added += 1;
        self.last_id = id;
        if self.length == 1 {
            self.first_id = id;
        }
    }

    /// Entries with IDs in `start..=end`, ascending or (`rev`) descending.
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
        rev: bool,
    ) -> Box<dyn Iterator<Item = EntryRef<'_>> + '_> {
        if start > end {
            return Box::new(std::iter::empty());
        }
        // The node holding `start` is the last one keyed at or before it.
        let from = self
            .blocks
            .range(..=start)
            .next_back()
            .map_or(start, |(k, _)| *k);
        let nodes = self.blocks.range(from..=end);
        fn live<'b>(
            (master, b): (&'b StreamId, &'b Block),
            start: StreamId,
            end: StreamId,
        ) -> impl Iterator<Item = EntryRef<'b>> + 'b {
            b.slots(*master)
                .filter(move |s| !s.deleted && s.id >= start && s.id <= end)
                .map(move |s| (s.id, b.fields(&s)))
        }
        if rev {
            Box::new(nodes.rev().flat_map(move |n| {
                let v: Vec<EntryRef<'_>> = live(n, start, end).collect();
                v.into_iter().rev()
            }))
        } else {
            Box::new(nodes.flat_map(move |n| live(n, start, end)))
        }
    }

    /// The entry `id`, if present and not deleted.
    pub fn get(&self, id: StreamId) -> Option<Fields<'_>> {
        self.range(id, id, false).next().map(|(_, f)| f)
    }

    pub fn contains(&self, id: StreamId) -> bool {
        self.get(id).is_some()
    }

    /// The last live ID (None when empty).
    pub fn last_live_id(&self) -> Option<StreamId> {
        // XREADGROUP asks on every call: no decoding of the last node's entries.
        self.blocks
            .iter()
            .rev()
            .find_map(|(master, b)| b.last_live(*master))
    }

    fn first_live_id(&self) -> Option<StreamId> {
        self.range(StreamId::MIN, StreamId::MAX, false)
            .next()
            .map(|(id, _)| id)
    }

    /// The first entry's ID, deleted or not (StreamId::MAX when there are
    /// no nodes): what Redis writes for an approximate MINID trim.
    pub fn first_id_with_tombstones(&self) -> StreamId {
        self.blocks
            .iter()
            .next()
            .and_then(|(m, b)| b.slots(*m).next())
            .map_or(StreamId::MAX, |s| s.id)
    }

    /// XDEL of one ID: true if it was there.
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some((&master, b)) = self.blocks.range_mut(..=id).next_back() else {
            return false;
        };
        // XSETID may let an ID come back after its deleted twin: the live one.
        let Some(slot) = b.slots(master).find(|s| s.id == id && !s.deleted) else {
            return false;
        };
        if !b.delete_at(slot.pos) {
            return false;
        }
        if b.live == 0 {
            let b = self.blocks.remove(&master).expect("found above");
            self.block_bytes -= b.bytes();
        }
        self.length -= 1;
        if id > self.max_deleted_id {
            self.max_deleted_id = id;
        }
        if self.length == 0 {
            self.first_id = StreamId::MIN;
        } else if id == self.first_id {
            self.first_id = self.first_live_id().unwrap_or(StreamId::MIN);
        }
        true
    }

    /// Trims from the oldest entries as Redis's streamTrim: whole nodes,
    /// then (unless `approx`) entries inside the first node left; at most
    /// `limit` entries when non-zero. Returns how many were removed.
    pub fn trim(&mut self, how: Trim, approx: bool, limit: u64) -> u64 {
        let mut deleted = 0u64;
        while let Some((&master, b)) = self.blocks.iter_mut().next() {
            if let Trim::MaxLen(n) = how {
                if self.length <= n {
                    break;
                }
            }
            let entries = b.live as u64;
            if limit != 0 && deleted + entries > limit {
                break;
            }
            let whole = match how {
                Trim::MaxLen(n) => self.length - entries >= n,
                Trim::MinId(min) => b.last < min,
            };
            if whole {
                let b = self.blocks.remove(&master).expect("first node");
                self.block_bytes -= b.bytes();
                self.length -= entries;
                deleted += entries;
                continue;
            }
            if approx {
                break;
            }
            let slots: Vec<_> = b.slots(master).collect();
            for s in slots {
                let stop = match how {
                    Trim::MaxLen(n) => self.length <= n,
                    Trim::MinId(min) => s.id >= min,
                };
                if stop {
                    break;
                }
                if b.delete_at(s.pos) {
                    self.length -= 1;
                    deleted += 1;
                }
            }
            break;
        }
        if self.length == 0 {
            self.first_id = StreamId::MIN;
        } else if deleted > 0 {
            self.first_id = self.first_live_id().unwrap_or(StreamId::MIN);
        }
        deleted
    }

    /// Whether `trim` with these arguments would remove anything (its first
    /// step decides it), so that a no-op XTRIM leaves the key untouched.
    pub fn would_trim(&self, how: Trim, approx: bool, limit: u64) -> bool {
        let Some((&master, b)) = self.blocks.iter().next() else {
            return false;
        };
        if let Trim::MaxLen(n) = how {
            if self.length <= n {
                return false;
            }
        }
        let entries = b.live as u64;
        if limit != 0 && entries > limit {
            return false;
        }
        let whole = match how {
            Trim::MaxLen(n) => self.length - entries >= n,
            Trim::MinId(min) => b.last < min,
        };
        if whole {
            return true;
        }
        if approx {
            return false;
        }
        match how {
            Trim::MaxLen(_) => true,
            Trim::MinId(min) => b
                .slots(master)
                .take_while(|s| s.id < min)
                .any(|s| !s.deleted),
        }
    }

    /// Whether a deleted entry may lie in `start..` (Redis's
    /// streamRangeHasTombstones): then entries-read counts cannot be kept.
    pub fn range_has_tombstones(&self, start: StreamId) -> bool {
        if self.length == 0 || self.max_deleted_id.is_zero() {
            return false;
        }
        if self.first_id > self.max_deleted_id {
            return false;
        }
        start <= self.max_deleted_id
    }

    /// Redis's streamEstimateDistanceFromFirstEverEntry: entries added up
    /// to `id`, if that can be known.
    pub fn estimate_distance(&self, id: StreamId) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if self.length == 0 && id <= self.last_id {
            return Some(self.entries_added);
        }
        match id.cmp(&self.last_id) {
            std::cmp::Ordering::Equal => return Some(self.entries_added),
            std::cmp::Ordering::Greater => return None,
            std::cmp::Ordering::Less => {}
        }
        if self.max_deleted_id.is_zero() || self.max_deleted_id < self.first_id {
            match id.cmp(&self.first_id) {
                std::cmp::Ordering::Less => return Some(self.entries_added - self.length),
                std::cmp::Ordering::Equal => return Some(self.entries_added - self.length + 1),
                std::cmp::Ordering::Greater => {}
            }
        }
        None
    }

    /// A group's lag (XINFO), None when it cannot be known; negative when
    /// ENTRIESREAD was set past the entries added, as Redis reports it.
    pub fn lag(&self, g: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        let lag = |read: u64| (self.entries_added as i64).wrapping_sub(read as i64);
        if let Some(read) = g.entries_read {
            if !self.range_has_tombstones(g.last_id) {
                return Some(lag(read));
            }
        }
        self.estimate_distance(g.last_id).map(lag)
    }

    /// Moves group `g`'s last-delivered ID to `id` (delivered now), keeping
    /// entries-read as Redis does.
    pub fn advance_group(&self, g: &mut Group, id: StreamId) {
        if id <= g.last_id {
            return;
        }
        match g.entries_read {
            Some(n) if !self.range_has_tombstones(id) => g.entries_read = Some(n + 1),
            _ if self.entries_added != 0 => g.entries_read = self.estimate_distance(id),
            _ => {}
        }
        g.last_id = id;
    }
}

/// The commands that rebuild `s` under `key`, as Redis's rewriteStreamObject
/// writes them: one XADD per entry (or XADD MAXLEN 0 of a dummy entry for an
/// empty stream), XSETID with the counters, then per group XGROUP CREATE
/// with ENTRIESREAD and, per consumer, XCLAIM ... JUSTID FORCE for each
/// pending entry or XGROUP CREATECONSUMER when it has none.
pub fn rewrite<F: FnMut(&[&[u8]])>(key: &[u8], s: &StreamValue, emit: &mut F) {
    if s.is_empty() {
        emit(&[b"XADD", key, b"MAXLEN", b"0", b"0-1", b"x", b"y"]);
    } else {
        for (id, fields) in s.range(StreamId::MIN, StreamId::MAX, false) {
            let id = id.to_bytes();
            let mut args: Vec<&[u8]> = vec![b"XADD", key, &id];
            for (f, v) in fields {
                args.push(f);
                args.push(v);
            }
            emit(&args);
        }
    }
    let last = s.last_id.to_bytes();
    let added = s.entries_added.to_string();
    let maxdel = s.max_deleted_id.to_bytes();
    emit(&[
        b"XSETID",
        key,
        &last,
        b"ENTRIESADDED",
        added.as_bytes(),
        b"MAXDELETEDID",
        &maxdel,
    ]);
    for (name, g) in &s.groups {
        let last = g.last_id.to_bytes();
        let read = g.entries_read.map_or(-1, |n| n as i64).to_string();
        emit(&[
            b"XGROUP",
            b"CREATE",
            key,
            name,
            &last,
            b"ENTRIESREAD",
            read.as_bytes(),
        ]);
        for (cname, c) in &g.consumers {
            if c.pel.is_empty() {
                emit(&[b"XGROUP", b"CREATECONSUMER", key, name, cname]);
                continue;
            }
            for id in &c.pel {
                let Some(nack) = g.pel.get(id) else { continue };
                let id = id.to_bytes();
                let time = nack.delivery_time.to_string();
                let count = nack.delivery_count.to_string();
                emit(&[
                    b"XCLAIM",
                    key,
                    name,
                    cname,
                    b"0",
                    &id,
                    b"TIME",
                    time.as_bytes(),
                    b"RETRYCOUNT",
                    count.as_bytes(),
                    b"JUSTID",
                    b"FORCE",
                ]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(s: &mut StreamValue, ms: u64, seq: u64, v: &str) {
        let id = StreamId::new(ms, seq);
        s.append(
            id,
            &[b"f", v.as_bytes()],
            NodeLimits {
                max_bytes: 4096,
                max_entries: 3,
            },
        );
    }

    fn ids(s: &StreamValue, rev: bool) -> Vec<u64> {
        s.range(StreamId::MIN, StreamId::MAX, rev)
            .map(|(id, _)| id.ms)
            .collect()
    }

    #[test]
    fn appends_ranges_deletes_and_trims_across_nodes() {
        let mut s = StreamValue::default();
        for i in 1..=10 {
            add(&mut s, i, 0, &i.to_string());
        }
        assert_eq!(s.nodes(), 4);
        assert_eq!(ids(&s, false), (1..=10).collect::<Vec<_>>());
        assert_eq!(ids(&s, true), (1..=10).rev().collect::<Vec<_>>());
        let mid: Vec<u64> = s
            .range(StreamId::new(3, 0), StreamId::new(7, 0), false)
            .map(|(id, _)| id.ms)
            .collect();
        assert_eq!(mid, [3, 4, 5, 6, 7]);
        assert!(s.delete(StreamId::new(1, 0)));
        assert!(!s.delete(StreamId::new(1, 0)));
        assert_eq!(s.first_id, StreamId::new(2, 0));
        assert_eq!(s.max_deleted_id, StreamId::new(1, 0));
        assert_eq!(s.trim(Trim::MaxLen(5), true, 0), 2);
        assert_eq!(s.len(), 7);
        assert_eq!(s.trim(Trim::MaxLen(5), false, 0), 2);
        assert_eq!(ids(&s, false), [6, 7, 8, 9, 10]);
        assert_eq!(s.trim(Trim::MinId(StreamId::new(9, 0)), false, 0), 3);
        assert_eq!(ids(&s, false), [9, 10]);
        let f: Vec<_> = s.get(StreamId::new(9, 0)).unwrap().collect();
        assert_eq!(f, [(&b"f"[..], &b"9"[..])]);
        assert_eq!(s.next_id(None, 5), Ok(StreamId::new(10, 1)));
        assert_eq!(s.next_id(None, 50), Ok(StreamId::new(50, 0)));
        let star = ParsedId {
            id: StreamId::new(10, 0),
            seq_given: false,
        };
        assert_eq!(s.next_id(Some(star), 0), Ok(StreamId::new(10, 1)));
        let old = ParsedId {
            id: StreamId::new(10, 0),
            seq_given: true,
        };
        assert_eq!(s.next_id(Some(old), 0), Err(AddError::NotGreater));
    }
}
