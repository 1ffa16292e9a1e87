//! Lists: a deque of `Pack` nodes, as Redis's quicklist of listpacks, each
//! filled up to `list-max-listpack-size` (entries when positive, 4-64 KB
//! when -1..-5; -2, 8 KB, by default). Pushes and pops at either end touch
//! one node; an index walks node counts.
//!
//! With `list-compress-depth` N > 0, every node more than N nodes from both
//! ends is kept LZF-compressed, as quicklist.c does: a node is compressed
//! when it has at least [`MIN_COMPRESS_BYTES`] and LZF saves more than
//! [`MIN_COMPRESS_IMPROVE`] bytes, else it stays raw. The end nodes, where
//! pushes and pops land, are always raw; a read of an inner node
//! decompresses a copy, and a write (LSET) decompresses the node, changes
//! it and compresses it again. Whenever the node count changes at an end,
//! only the nodes crossing the depth boundary change form.
//!
//! An element of at least the shape's `packed_threshold` bytes (1 GB unless
//! DEBUG QUICKLIST-PACKED-THRESHOLD lowers it) is a plain node of its own,
//! as Redis 7.0's quicklist keeps it: its bytes as they are, never shared
//! with another element, compressed like a pack when deep enough. An
//! element keeps its node kind until it leaves the list (LTRIM, LREM and
//! LINSERT keep it; LSET and the pushes decide by the size then), and a
//! dump writes plain nodes as quicklist 2's PLAIN container.

use super::pack::Pack;
use crate::rdb::lzf;
use std::borrow::Cow;

/// Bytes a node of a positive fill may still reach (Redis's SIZE_SAFETY_LIMIT).
const SAFETY_BYTES: usize = 8192;
/// Smaller nodes are never compressed (quicklist.c's MIN_COMPRESS_BYTES).
pub const MIN_COMPRESS_BYTES: usize = 48;
/// Compression must save more than this many bytes (MIN_COMPRESS_IMPROVE).
pub const MIN_COMPRESS_IMPROVE: usize = 8;

/// A node's bytes compressed as quicklist.c's __quicklistCompressNode
/// compresses them (lzf_compress into a buffer of the node's size, kept only
/// when at least [`MIN_COMPRESS_BYTES`] and saving more than
/// [`MIN_COMPRESS_IMPROVE`]); None when the node stays raw. The RDB writer
/// asks the same question of the listpacks it writes.
pub fn compress_node(raw: &[u8]) -> Option<Vec<u8>> {
    if raw.len() < MIN_COMPRESS_BYTES {
        return None;
    }
    let packed = lzf::compress(raw, raw.len())?;
    (packed.len() + MIN_COMPRESS_IMPROVE < raw.len()).then_some(packed)
}

/// How a list lays out its nodes: `list-max-listpack-size`,
/// `list-compress-depth`, and the size from which an element is a plain
/// node (DEBUG QUICKLIST-PACKED-THRESHOLD).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListShape {
    pub fill: i64,
    pub depth: usize,
    pub packed_threshold: usize,
}

/// quicklist.c's packed_threshold when not set: 1 GB.
pub const DEFAULT_PACKED_THRESHOLD: usize = 1 << 30;

/// The packed threshold DEBUG QUICKLIST-PACKED-THRESHOLD `size` sets, as
/// quicklistisSetPackedThreshold takes it: 0 restores the default, more
/// than 1 MB short of 4 GB is refused (None).
pub fn packed_threshold(size: u64) -> Option<usize> {
    match size {
        0 => Some(DEFAULT_PACKED_THRESHOLD),
        s if s > (1u64 << 32) - (1 << 20) => None,
        s => usize::try_from(s).ok(),
    }
}

impl ListShape {
    /// Whether `item` goes in a plain node of its own.
    pub fn is_large(&self, item: &[u8]) -> bool {
        item.len() >= self.packed_threshold
    }
}

impl Default for ListShape {
    /// Redis's defaults: 8 KB nodes, none compressed, plain from 1 GB.
    fn default() -> Self {
        ListShape {
            fill: -2,
            depth: 0,
            packed_threshold: DEFAULT_PACKED_THRESHOLD,
        }
    }
}

/// One node: a pack, or its LZF form; or a plain node (one element as
/// is, quicklist.c's QUICKLIST_NODE_CONTAINER_PLAIN), or its LZF form.
#[derive(Clone)]
enum Node {
    Raw(Pack),
    Lzf {
        packed: Box<[u8]>,
        raw_len: usize,
        entries: usize,
    },
    Plain(Box<[u8]>),
    PlainLzf {
        packed: Box<[u8]>,
        raw_len: usize,
    },
}

impl Node {
    fn entries(&self) -> usize {
        match self {
            Node::Raw(p) => p.entries(),
            Node::Lzf { entries, .. } => *entries,
            Node::Plain(_) | Node::PlainLzf { .. } => 1,
        }
    }

    /// Heap bytes held.
    fn bytes(&self) -> usize {
        match self {
            Node::Raw(p) => p.bytes(),
            Node::Plain(e) => super::malloc_chunk(e.len()),
            Node::Lzf { packed, .. } | Node::PlainLzf { packed, .. } => {
                super::malloc_chunk(packed.len())
            }
        }
    }

    /// Bytes uncompressed.
    fn raw_len(&self) -> usize {
        match self {
            Node::Raw(p) => p.end(),
            Node::Plain(e) => e.len(),
            Node::Lzf { raw_len, .. } | Node::PlainLzf { raw_len, .. } => *raw_len,
        }
    }

    fn is_compressed(&self) -> bool {
        matches!(self, Node::Lzf { .. } | Node::PlainLzf { .. })
    }

    fn is_plain(&self) -> bool {
        matches!(self, Node::Plain(_) | Node::PlainLzf { .. })
    }

    /// The bytes of a compressed node.
    fn unpack(packed: &[u8], raw_len: usize) -> Vec<u8> {
        lzf::decompress(packed, raw_len as u64).expect("a list node's own LZF decompresses")
    }

    /// The pack of a packed node, decompressed into a copy when compressed.
    fn pack(&self) -> Cow<'_, Pack> {
        match self {
            Node::Raw(p) => Cow::Borrowed(p),
            Node::Lzf {
                packed,
                raw_len,
                entries,
            } => Cow::Owned(Pack::from_raw(Self::unpack(packed, *raw_len), *entries)),
            Node::Plain(_) | Node::PlainLzf { .. } => unreachable!("a plain node has no pack"),
        }
    }

    /// The element of a plain node, decompressed into a copy when compressed.
    fn plain(&self) -> Cow<'_, [u8]> {
        match self {
            Node::Plain(e) => Cow::Borrowed(e),
            Node::PlainLzf { packed, raw_len } => Cow::Owned(Self::unpack(packed, *raw_len)),
            Node::Raw(_) | Node::Lzf { .. } => unreachable!("a packed node is no plain element"),
        }
    }

    /// The pack of a packed node, decompressing the node in place first.
    fn raw_mut(&mut self) -> &mut Pack {
        self.decompress();
        match self {
            Node::Raw(p) => p,
            _ => unreachable!("decompressed above, and only packed nodes are changed in place"),
        }
    }

    fn decompress(&mut self) {
        match self {
            Node::Lzf { .. } => *self = Node::Raw(self.pack().into_owned()),
            Node::PlainLzf { packed, raw_len } => {
                *self = Node::Plain(Self::unpack(packed, *raw_len).into_boxed_slice())
            }
            Node::Raw(_) | Node::Plain(_) => {}
        }
    }

    /// Compresses the node if LZF pays (see [`compress_node`]).
    fn compress(&mut self) {
        match self {
            Node::Raw(p) => {
                if let Some(packed) = compress_node(p.raw()) {
                    *self = Node::Lzf {
                        packed: packed.into_boxed_slice(),
                        raw_len: p.end(),
                        entries: p.entries(),
                    };
                }
            }
            Node::Plain(e) => {
                if let Some(packed) = compress_node(e) {
                    *self = Node::PlainLzf {
                        packed: packed.into_boxed_slice(),
                        raw_len: e.len(),
                    };
                }
            }
            Node::Lzf { .. } | Node::PlainLzf { .. } => {}
        }
    }

    /// The node's elements in order, borrowed from a raw node without
    /// collecting them (LRANGE 0 99 of an 8 KB node reads 100, not all), or
    /// copied out of a compressed one.
    fn forward(&self) -> NodeItems<'_> {
        match self {
            Node::Raw(p) => NodeItems::Raw(p.iter()),
            _ => NodeItems::Copied(self.items().into_iter()),
        }
    }

    /// The node's elements, collected so that a list's iterator is
    /// double-ended: borrowed from a raw node, copied out of a compressed one.
    fn items(&self) -> Vec<Cow<'_, [u8]>> {
        match self {
            Node::Raw(p) => p.iter().map(|(_, e)| Cow::Borrowed(e)).collect(),
            Node::Lzf { .. } => self
                .pack()
                .iter()
                .map(|(_, e)| Cow::Owned(e.to_vec()))
                .collect(),
            Node::Plain(_) | Node::PlainLzf { .. } => vec![self.plain()],
        }
    }
}

/// A node's elements in order (see [`Node::forward`]).
enum NodeItems<'a> {
    Raw(super::pack::PackIter<'a>),
    Copied(std::vec::IntoIter<Cow<'a, [u8]>>),
}

impl<'a> Iterator for NodeItems<'a> {
    type Item = Cow<'a, [u8]>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            NodeItems::Raw(it) => it.next().map(|(_, e)| Cow::Borrowed(e)),
            NodeItems::Copied(it) => it.next(),
        }
    }
}

/// Kept to 56 bytes, so that a small list's `Arc` is one 80-byte malloc
/// chunk (issue 42): nodes in a `Vec` (a node added at the front moves the
/// others, 40 bytes each, once per 8 KB of elements), the shape as i32, the
/// tail index boxed.
#[derive(Clone, Default)]
pub struct ListValue {
    nodes: Vec<Node>,
    len: usize,
    /// The fill of the last push, for rebuilds (list-max-listpack-size is
    /// an int in Redis's config).
    fill: i32,
    /// The compress depth of the last push: nodes further than this from
    /// both ends are compressed (0: none).
    depth: u32,
    /// Sum of node heap bytes, compressed ones at their compressed size
    /// (memory accounting).
    bytes: usize,
    /// Start offsets of the last node's entries, so that a pop at the back
    /// finds the last entry without walking the node (a Pack has no
    /// back-lengths). Built by the first `pop_back` that needs it, kept by
    /// pushes and pops at either end of that node, cleared (empty) when the
    /// last node changes otherwise; a list only pushed to never has one.
    tail: Tail,
}

/// The tail index (`ListValue::tail`): absent (no heap at all) until a pop
/// at the back builds it.
/// Boxed on purpose: 8 bytes in every list instead of a Vec's 24.
#[allow(clippy::box_collection)]
#[derive(Clone, Default)]
struct Tail(Option<Box<Vec<u32>>>);

impl std::ops::Deref for Tail {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        self.0.as_deref().map_or(&[], |v| &v[..])
    }
}

impl Tail {
    fn vec(&mut self) -> &mut Vec<u32> {
        self.0.get_or_insert_with(Default::default)
    }
    fn clear(&mut self) {
        self.0 = None;
    }
    fn push(&mut self, at: u32) {
        self.vec().push(at);
    }
    fn insert(&mut self, i: usize, at: u32) {
        self.vec().insert(i, at);
    }
    fn remove(&mut self, i: usize) -> u32 {
        self.vec().remove(i)
    }
    fn pop(&mut self) -> Option<u32> {
        self.0.as_mut()?.pop()
    }
    fn extend(&mut self, it: impl Iterator<Item = u32>) {
        self.vec().extend(it);
    }
    fn iter_mut(&mut self) -> std::slice::IterMut<'_, u32> {
        match &mut self.0 {
            Some(v) => v.iter_mut(),
            None => [].iter_mut(),
        }
    }
}

impl std::fmt::Debug for ListValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "List({} elements)", self.len)
    }
}

impl PartialEq for ListValue {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl Eq for ListValue {}

impl Drop for ListValue {
    fn drop(&mut self) {
        if self.len > super::LAZYFREE_THRESHOLD {
            super::free_later(std::mem::take(&mut self.nodes));
        }
    }
}

impl ListValue {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn encoding(&self) -> &'static str {
        "quicklist"
    }

    /// `list-max-listpack-size` as of the last push (-2, Redis's default,
    /// before any).
    pub fn fill(&self) -> i64 {
        if self.fill == 0 {
            -2
        } else {
            self.fill as i64
        }
    }

    /// `list-compress-depth` as of the last push.
    pub fn depth(&self) -> usize {
        self.depth as usize
    }

    /// Heap bytes as they count in RSS: the nodes' buffers, the node array
    /// and the tail index as malloc rounds them (`array_bytes`).
    pub fn bytes(&self) -> usize {
        use super::{array_bytes, malloc_chunk};
        let tail = self.tail.0.as_ref().map_or(0, |t| {
            malloc_chunk(std::mem::size_of::<Vec<u32>>()) + array_bytes(t.len(), t.capacity(), 4)
        });
        self.bytes
            + tail
            + array_bytes(
                self.nodes.len(),
                self.nodes.capacity(),
                std::mem::size_of::<Node>(),
            )
    }

    /// Nodes (DEBUG OBJECT's ql_nodes).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Nodes kept compressed.
    pub fn compressed_nodes(&self) -> usize {
        self.nodes.iter().filter(|n| n.is_compressed()).count()
    }

    /// Bytes of all nodes uncompressed (DEBUG OBJECT's ql_uncompressed_size).
    pub fn uncompressed_bytes(&self) -> usize {
        self.nodes.iter().map(Node::raw_len).sum()
    }

    /// Whether node `i` lies deeper than the compress depth from both ends.
    fn inner(&self, i: usize) -> bool {
        let d = self.depth as usize;
        d > 0 && i >= d && i + d < self.nodes.len()
    }

    /// Puts node `i` in the form its place asks for.
    fn settle(&mut self, i: usize) {
        if i >= self.nodes.len() {
            return;
        }
        let inner = self.inner(i);
        let node = &mut self.nodes[i];
        let before = node.bytes();
        if inner {
            node.compress();
        } else {
            node.decompress();
        }
        self.bytes = self.bytes - before + self.nodes[i].bytes();
    }

    /// After the node count changed at an end: the nodes that crossed the
    /// depth boundary, at most two at each end, change form.
    fn settle_ends(&mut self) {
        if self.depth == 0 {
            return;
        }
        let n = self.nodes.len();
        let d = self.depth as usize;
        for i in [Some(d - 1), Some(d), n.checked_sub(d + 1), n.checked_sub(d)]
            .into_iter()
            .flatten()
        {
            self.settle(i);
        }
    }

    /// Takes the shape of a push; a new depth recompresses every node.
    fn reshape(&mut self, shape: ListShape) {
        self.fill = shape.fill.clamp(i32::MIN as i64, i32::MAX as i64) as i32;
        let depth = shape.depth.min(u32::MAX as usize) as u32;
        if depth != self.depth {
            self.depth = depth;
            for i in 0..self.nodes.len() {
                self.settle(i);
            }
        }
    }

    /// Whether `item` may join `node` under `fill` (list-max-listpack-size):
    /// never a plain node (nor a large item, which the caller puts in one).
    fn fits(node: &Node, item: &[u8], fill: i64) -> bool {
        if node.is_plain() {
            return false;
        }
        let bytes = node.raw_len() + item.len() + 5;
        if fill > 0 {
            return (node.entries() as i64) < fill && bytes <= SAFETY_BYTES;
        }
        bytes <= Self::node_limit(fill)
    }

    /// The most bytes a node that [`ListValue::fits`] admitted can hold
    /// under `fill`: its buffer grows no further (see `push_within`).
    fn node_limit(fill: i64) -> usize {
        if fill > 0 {
            return SAFETY_BYTES;
        }
        let level = fill.unsigned_abs().clamp(1, 5) as u32;
        4096 << (level - 1)
    }

    /// Node `i` takes no more entries at its end (a new node starts beside
    /// it): it gives back its room when that is more than an eighth of what
    /// it uses. Under a byte fill the room is under one element (the buffer
    /// grew to the node limit); under an entry fill a doubling may have left
    /// up to half the buffer empty. Below an eighth the copy is not worth it.
    fn seal(&mut self, i: usize) {
        if let Some(Node::Raw(p)) = self.nodes.get(i) {
            if p.room() > p.end() / 8 {
                self.with_node(i, Pack::shrink);
            }
        }
    }

    /// Runs `f` on the raw pack of node `i`, keeping the byte count.
    fn with_node<R>(&mut self, i: usize, f: impl FnOnce(&mut Pack) -> R) -> R {
        let node = &mut self.nodes[i];
        let before = node.bytes();
        let r = f(node.raw_mut());
        self.bytes = self.bytes - before + self.nodes[i].bytes();
        r
    }

    fn push_node(&mut self, item: &[u8], front: bool) {
        let mut p = Pack::default();
        p.push(item);
        self.add_node(Node::Raw(p), front);
    }

    fn add_node(&mut self, node: Node, front: bool) {
        self.bytes += node.bytes();
        // Most lists are one node: Vec's first growth would make room for
        // four (160 bytes where 40 are used).
        if self.nodes.capacity() == 0 {
            self.nodes.reserve_exact(1);
        }
        if front {
            self.nodes.insert(0, node);
        } else {
            self.nodes.push(node);
        }
        self.settle_ends();
    }

    /// Appends `item` as a plain node whatever its size (an RDB's PLAIN
    /// container, or a list rebuilt around its plain elements), under
    /// `shape`'s fill and depth.
    pub fn push_plain_back(&mut self, item: &[u8], shape: ListShape) {
        self.reshape(shape);
        self.tail.clear();
        self.add_node(Node::Plain(item.into()), false);
        self.len += 1;
    }

    pub fn push_back(&mut self, item: &[u8], shape: ListShape) {
        self.reshape(shape);
        if shape.is_large(item) {
            return self.push_plain_back(item, shape);
        }
        match self.nodes.last() {
            Some(n) if Self::fits(n, item, shape.fill) => {
                let last = self.nodes.len() - 1;
                let limit = Self::node_limit(shape.fill);
                let pos = self.with_node(last, |p| {
                    let pos = p.end();
                    p.push_within(item, limit);
                    pos
                });
                if !self.tail.is_empty() {
                    self.tail.push(pos as u32);
                }
            }
            _ => {
                self.tail.clear();
                self.seal(self.nodes.len().wrapping_sub(1));
                self.push_node(item, false);
            }
        }
        self.len += 1;
    }

    pub fn push_front(&mut self, item: &[u8], shape: ListShape) {
        self.reshape(shape);
        if shape.is_large(item) {
            // The last node stays as it was, and so its tail index.
            self.add_node(Node::Plain(item.into()), true);
            self.len += 1;
            return;
        }
        match self.nodes.first() {
            Some(n) if Self::fits(n, item, shape.fill) => {
                let limit = Self::node_limit(shape.fill);
                let added = self.with_node(0, |p| {
                    p.insert_within(0, &[item], limit);
                    p.next_pos(0)
                });
                if self.nodes.len() == 1 && !self.tail.is_empty() {
                    // The last node is this one: its offsets move up.
                    for at in self.tail.iter_mut() {
                        *at += added as u32;
                    }
                    self.tail.insert(0, 0);
                }
            }
            _ => {
                self.seal(0);
                self.push_node(item, true);
            }
        }
        self.len += 1;
    }

    /// Drops node `i` when it has no entries left.
    fn drop_if_empty(&mut self, i: usize) {
        if self.nodes[i].entries() == 0 {
            if i + 1 == self.nodes.len() {
                self.tail.clear();
            }
            self.bytes -= self.nodes[i].bytes();
            self.nodes.remove(i);
            self.settle_ends();
        }
    }

    /// Removes plain node `i`, giving its element back.
    fn take_plain(&mut self, i: usize) -> Vec<u8> {
        if i + 1 == self.nodes.len() {
            self.tail.clear();
        }
        self.bytes -= self.nodes[i].bytes();
        let item = match self.nodes.remove(i) {
            Node::Plain(e) => e.into_vec(),
            node => node.plain().into_owned(),
        };
        self.settle_ends();
        self.len -= 1;
        item
    }

    pub fn pop_front(&mut self) -> Option<Vec<u8>> {
        if self.nodes.first()?.is_plain() {
            return Some(self.take_plain(0));
        }
        let (item, removed) = self.with_node(0, |p| {
            let item = p.iter().next().map(|(_, e)| e.to_vec())?;
            let removed = p.next_pos(0);
            p.remove_at(0, 1);
            Some((item, removed))
        })?;
        if self.nodes.len() == 1 && !self.tail.is_empty() {
            // The last node is this one: its offsets move down.
            self.tail.remove(0);
            for at in self.tail.iter_mut() {
                *at -= removed as u32;
            }
        }
        self.drop_if_empty(0);
        self.len -= 1;
        Some(item)
    }

    pub fn pop_back(&mut self) -> Option<Vec<u8>> {
        let last = self.nodes.len().checked_sub(1)?;
        if self.nodes[last].is_plain() {
            return Some(self.take_plain(last));
        }
        if self.tail.is_empty() {
            if let Node::Raw(p) = &self.nodes[last] {
                self.tail.extend(p.iter().map(|(pos, _)| pos as u32));
            }
        }
        let pos = self.tail.pop()? as usize;
        let item = self.with_node(last, |p| {
            let item = p.entry(pos).to_vec();
            p.pop_last_at(pos);
            item
        });
        self.drop_if_empty(last);
        self.len -= 1;
        Some(item)
    }

    /// The node holding element `index` and the index within it.
    fn locate(&self, mut index: usize) -> Option<(usize, usize)> {
        if index >= self.len {
            return None;
        }
        if index > self.len / 2 {
            // Walk from the tail.
            let mut from_end = self.len - 1 - index;
            for (i, n) in self.nodes.iter().enumerate().rev() {
                if from_end < n.entries() {
                    return Some((i, n.entries() - 1 - from_end));
                }
                from_end -= n.entries();
            }
            return None;
        }
        for (i, n) in self.nodes.iter().enumerate() {
            if index < n.entries() {
                return Some((i, index));
            }
            index -= n.entries();
        }
        None
    }

    /// Element `index`: borrowed from a raw node, copied out of a
    /// compressed one.
    pub fn get(&self, index: usize) -> Option<Cow<'_, [u8]>> {
        let (n, i) = self.locate(index)?;
        match &self.nodes[n] {
            Node::Raw(p) => p.iter().nth(i).map(|(_, e)| Cow::Borrowed(e)),
            node if node.is_plain() => Some(node.plain()),
            node => node
                .pack()
                .iter()
                .nth(i)
                .map(|(_, e)| Cow::Owned(e.to_vec())),
        }
    }

    /// Replaces element `index` (a plain node when `shape` says the item
    /// is large); false if out of range. A compressed node is
    /// decompressed, changed and compressed again.
    pub fn set(&mut self, index: usize, item: &[u8], shape: ListShape) -> bool {
        let Some((n, i)) = self.locate(index) else {
            return false;
        };
        if n + 1 == self.nodes.len() {
            self.tail.clear();
        }
        match (self.nodes[n].is_plain(), shape.is_large(item)) {
            (false, false) => {
                self.with_node(n, |p| {
                    let pos = p.iter().nth(i).map(|(p, _)| p).expect("located");
                    p.replace_at(pos, item);
                });
                self.settle(n);
            }
            (true, true) => {
                self.bytes -= self.nodes[n].bytes();
                self.nodes[n] = Node::Plain(item.into());
                self.bytes += self.nodes[n].bytes();
                self.settle(n);
            }
            // As quicklistReplaceEntry: the item goes after the plain node
            // (at the head of the next node when it has room, else in a
            // node of its own), and the plain node goes.
            (true, false) => {
                let fill = self.fill();
                match self.nodes.get(n + 1) {
                    Some(next) if Self::fits(next, item, fill) => {
                        if n + 2 == self.nodes.len() {
                            self.tail.clear();
                        }
                        self.with_node(n + 1, |p| p.insert_at(0, &[item]));
                        self.bytes -= self.nodes.remove(n).bytes();
                        self.settle_around(n, n + 1);
                    }
                    _ => {
                        let mut p = Pack::default();
                        p.push(item);
                        self.bytes -= self.nodes[n].bytes();
                        self.nodes[n] = Node::Raw(p);
                        self.bytes += self.nodes[n].bytes();
                        self.settle(n);
                    }
                }
            }
            // A large item in a packed node splits it: the elements before
            // it, its plain node, the elements after it (the empty parts
            // dropped), as quicklist.c's insert-then-delete leaves them.
            (false, true) => {
                let items: Vec<Vec<u8>> = self.nodes[n]
                    .items()
                    .into_iter()
                    .map(Cow::into_owned)
                    .collect();
                let pack = |part: &[Vec<u8>]| {
                    let mut p = Pack::default();
                    for e in part {
                        p.push(e);
                    }
                    Node::Raw(p)
                };
                let mut parts = Vec::with_capacity(3);
                if i > 0 {
                    parts.push(pack(&items[..i]));
                }
                parts.push(Node::Plain(item.into()));
                if i + 1 < items.len() {
                    parts.push(pack(&items[i + 1..]));
                }
                let added = parts.len();
                self.bytes += parts.iter().map(Node::bytes).sum::<usize>();
                let old = self.nodes.splice(n..n + 1, parts);
                self.bytes -= old.map(|o| o.bytes()).sum::<usize>();
                self.settle_around(n, n + added);
            }
        }
        true
    }

    /// After nodes `from..to` replaced others in the middle: those nodes,
    /// and the ones near either end that crossed the depth boundary, take
    /// the form their place asks for.
    fn settle_around(&mut self, from: usize, to: usize) {
        if self.depth == 0 {
            return;
        }
        let (n, d) = (self.nodes.len(), self.depth as usize);
        let mut at: Vec<usize> = (0..n.min(d + 3))
            .chain(from..to.min(n))
            .chain(n.saturating_sub(d + 3)..n)
            .collect();
        at.sort_unstable();
        at.dedup();
        for i in at {
            self.settle(i);
        }
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Cow<'_, [u8]>> + '_ {
        self.nodes.iter().flat_map(Node::items)
    }

    /// The elements, each with whether it is a plain node (the RDB writer's
    /// and the rebuilds' view).
    pub fn iter_marked(&self) -> impl Iterator<Item = (Cow<'_, [u8]>, bool)> + '_ {
        self.range_marked(0, self.len.saturating_sub(1))
    }

    /// Elements `start..=end` (in range, start <= end).
    pub fn range(&self, start: usize, end: usize) -> impl Iterator<Item = Cow<'_, [u8]>> + '_ {
        self.range_marked(start, end).map(|(e, _)| e)
    }

    /// Elements `start..=end`, each with whether it is a plain node.
    fn range_marked(
        &self,
        start: usize,
        end: usize,
    ) -> impl Iterator<Item = (Cow<'_, [u8]>, bool)> + '_ {
        let (first, skip) = self.locate(start).unwrap_or((self.nodes.len(), 0));
        self.nodes
            .iter()
            .skip(first)
            .flat_map(|n| {
                let plain = n.is_plain();
                n.forward().map(move |e| (e, plain))
            })
            .skip(skip)
            .take((end + 1).saturating_sub(start))
    }

    /// Rebuilds from `items`, each with whether it is a plain node (LTRIM,
    /// LREM, LINSERT: operations that touch the middle). An element keeps
    /// its kind: a packed one is packed again whatever its size.
    fn rebuild<'a>(&mut self, items: impl Iterator<Item = (&'a [u8], bool)>) {
        let shape = ListShape {
            fill: self.fill(),
            depth: self.depth as usize,
            packed_threshold: usize::MAX,
        };
        let mut fresh = ListValue::default();
        fresh.fill = self.fill;
        fresh.depth = self.depth;
        for (it, plain) in items {
            if plain {
                fresh.push_plain_back(it, shape);
            } else {
                fresh.push_back(it, shape);
            }
        }
        std::mem::swap(self, &mut fresh);
    }

    /// Keeps elements `start..=end` only (empty when start > end).
    pub fn trim(&mut self, start: usize, end: usize) {
        if start > end || start >= self.len {
            self.rebuild(std::iter::empty());
            return;
        }
        let end = end.min(self.len - 1);
        let kept: Vec<(Vec<u8>, bool)> = self
            .range_marked(start, end)
            .map(|(e, plain)| (e.into_owned(), plain))
            .collect();
        self.rebuild(kept.iter().map(|(v, plain)| (&v[..], *plain)));
    }

    /// LREM: removes up to `count` elements equal to `item` (from the head
    /// when count > 0, from the tail when < 0, all when 0); returns how many.
    pub fn remove(&mut self, count: i64, item: &[u8]) -> usize {
        let all: Vec<(Vec<u8>, bool)> = self
            .iter_marked()
            .map(|(e, plain)| (e.into_owned(), plain))
            .collect();
        let limit = if count == 0 {
            usize::MAX
        } else {
            count.unsigned_abs() as usize
        };
        let mut drop = vec![false; all.len()];
        let mut removed = 0;
        let order: Box<dyn Iterator<Item = usize>> = if count < 0 {
            Box::new((0..all.len()).rev())
        } else {
            Box::new(0..all.len())
        };
        for i in order {
            if removed == limit {
                break;
            }
            if all[i].0 == item {
                drop[i] = true;
                removed += 1;
            }
        }
        if removed > 0 {
            self.rebuild(
                all.iter()
                    .zip(&drop)
                    .filter(|(_, d)| !**d)
                    .map(|((e, plain), _)| (&e[..], *plain)),
            );
        }
        removed
    }

    /// LINSERT: puts `item` before or after the first `pivot` (a plain node
    /// when `shape` says it is large); false if no element equals it.
    pub fn insert(&mut self, before: bool, pivot: &[u8], item: &[u8], shape: ListShape) -> bool {
        let Some(at) = self.iter().position(|e| *e == *pivot) else {
            return false;
        };
        let at = if before { at } else { at + 1 };
        let all: Vec<(Vec<u8>, bool)> = self
            .iter_marked()
            .map(|(e, plain)| (e.into_owned(), plain))
            .collect();
        fn marked((e, plain): &(Vec<u8>, bool)) -> (&[u8], bool) {
            (&e[..], *plain)
        }
        let items: Vec<(&[u8], bool)> = all[..at]
            .iter()
            .map(marked)
            .chain(std::iter::once((item, shape.is_large(item))))
            .chain(all[at..].iter().map(marked))
            .collect();
        self.rebuild(items.into_iter());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    fn shape(fill: i64, depth: usize) -> ListShape {
        ListShape {
            fill,
            depth,
            ..ListShape::default()
        }
    }

    #[test]
    fn pushes_pops_and_indexes_across_nodes() {
        let mut l = ListValue::default();
        for i in 0..5000 {
            l.push_back(format!("v{i}").as_bytes(), ListShape::default());
            l.push_front(format!("w{i}").as_bytes(), ListShape::default());
        }
        assert_eq!(l.len(), 10_000);
        assert!(l.nodes.len() > 2);
        assert_eq!(l.get(0).as_deref(), Some(&b"w4999"[..]));
        assert_eq!(l.get(9_999).as_deref(), Some(&b"v4999"[..]));
        assert_eq!(l.get(5_000).as_deref(), Some(&b"v0"[..]));
        assert!(l.set(5_000, b"x", ListShape::default()));
        assert_eq!(l.get(5_000).as_deref(), Some(&b"x"[..]));
        let r: Vec<_> = l.range(4_999, 5_001).map(Cow::into_owned).collect();
        assert_eq!(r, [b"w0".to_vec(), b"x".to_vec(), b"v1".to_vec()]);
        assert_eq!(l.pop_front(), Some(b"w4999".to_vec()));
        assert_eq!(l.pop_back(), Some(b"v4999".to_vec()));
        l.trim(1, 3);
        assert_eq!(l.len(), 3);
        assert_eq!(l.iter().next().as_deref(), Some(&b"w4997"[..]));
        assert!(l.insert(true, b"w4996", b"n", ListShape::default()));
        assert_eq!(l.get(1).as_deref(), Some(&b"n"[..]));
        l.push_back(b"n", ListShape::default());
        assert_eq!(l.remove(-1, b"n"), 1);
        assert_eq!(l.len(), 4);
        assert_eq!(l.iter().next_back().as_deref(), Some(&b"w4995"[..]));
    }

    /// The list's elements, checked against a plain model, and its nodes
    /// against the depth rule: raw within `depth` of an end, compressed
    /// inside when LZF pays.
    fn check(l: &ListValue, model: &VecDeque<Vec<u8>>) {
        assert_eq!(l.len(), model.len());
        assert!(l.iter().map(Cow::into_owned).eq(model.iter().cloned()));
        assert!(l
            .iter()
            .rev()
            .map(Cow::into_owned)
            .eq(model.iter().rev().cloned()));
        for (i, n) in l.nodes.iter().enumerate() {
            let raw = if n.is_plain() {
                n.plain().into_owned()
            } else {
                n.pack().raw().to_vec()
            };
            let pays = compress_node(&raw).is_some();
            assert_eq!(
                n.is_compressed(),
                l.inner(i) && pays,
                "node {i} of {}",
                l.nodes.len()
            );
        }
        let counted: usize = l.nodes.iter().map(Node::bytes).sum();
        assert_eq!(l.bytes, counted);
        check_tail(l);
    }

    /// A built tail index holds the last node's entry offsets.
    fn check_tail(l: &ListValue) {
        if !l.tail.is_empty() {
            let last = l.nodes.last().expect("an index has a node").pack();
            let offsets: Vec<u32> = last.iter().map(|(p, _)| p as u32).collect();
            assert_eq!(*l.tail, offsets[..]);
        }
    }

    #[test]
    fn the_tail_index_follows_every_change() {
        for fill in [3, 5, -2] {
            let shape = shape(fill, 0);
            let mut l = ListValue::default();
            let mut model = VecDeque::new();
            let mut x = 12345u32;
            for step in 0..3000u32 {
                x = x.wrapping_mul(1103515245).wrapping_add(12345);
                let e = format!("{step}-{}", "z".repeat((x >> 8) as usize % 40)).into_bytes();
                match (x >> 20) % 8 {
                    0 | 1 => {
                        l.push_back(&e, shape);
                        model.push_back(e);
                    }
                    2 | 3 => {
                        l.push_front(&e, shape);
                        model.push_front(e);
                    }
                    4 | 5 => assert_eq!(l.pop_back(), model.pop_back()),
                    6 => assert_eq!(l.pop_front(), model.pop_front()),
                    _ => {
                        if !model.is_empty() {
                            let i = (x as usize >> 3) % model.len();
                            assert!(l.set(i, b"set", shape));
                            model[i] = b"set".to_vec();
                        }
                    }
                }
                check_tail(&l);
                assert_eq!(l.len(), model.len());
            }
            check(&l, &model);
        }
    }

    #[test]
    fn inner_nodes_are_compressed_and_read_back() {
        for depth in [1, 2, 3] {
            let shape = shape(4, depth);
            let mut l = ListValue::default();
            let mut model = VecDeque::new();
            for i in 0..200u32 {
                // Compressible elements, with some short and incompressible ones.
                let e = if i % 7 == 0 {
                    i.to_be_bytes().to_vec()
                } else {
                    format!("{i:05}-").repeat(12).into_bytes()
                };
                if i % 3 == 0 {
                    l.push_front(&e, shape);
                    model.push_front(e);
                } else {
                    l.push_back(&e, shape);
                    model.push_back(e);
                }
                check(&l, &model);
            }
            assert!(l.compressed_nodes() > 0);
            assert!(l.bytes < l.uncompressed_bytes());
            for i in (0..model.len()).step_by(13) {
                assert_eq!(l.get(i).as_deref(), Some(&model[i][..]));
                let r: Vec<_> = l.range(i, (i + 9).min(model.len() - 1)).collect();
                assert_eq!(r[0], model[i]);
            }
            // LSET of an inner node: decompressed, changed, compressed again.
            assert!(l.set(100, b"changed", shape));
            model[100] = b"changed".to_vec();
            check(&l, &model);
            while model.len() > 3 {
                assert_eq!(l.pop_back(), model.pop_back());
                assert_eq!(l.pop_front(), model.pop_front());
                check(&l, &model);
            }
            assert_eq!(l.remove(0, &model[1].clone()), 1);
            model.remove(1);
            check(&l, &model);
        }
    }

    #[test]
    fn a_new_depth_reshapes_every_node() {
        let mut l = ListValue::default();
        let e = vec![b'x'; 100];
        for _ in 0..10 {
            l.push_back(&e, shape(2, 0));
        }
        assert_eq!(l.compressed_nodes(), 0);
        l.push_back(&e, shape(2, 1));
        assert_eq!(l.compressed_nodes(), l.node_count() - 2);
        let mut model: VecDeque<Vec<u8>> = std::iter::repeat_n(e.clone(), 11).collect();
        check(&l, &model);
        l.push_back(&e, shape(2, 0));
        model.push_back(e);
        assert_eq!(l.compressed_nodes(), 0);
        check(&l, &model);
        // Rebuilds (LTRIM, LINSERT) keep the depth.
        l.push_back(b"y", shape(2, 2));
        model.push_back(b"y".to_vec());
        assert!(l.insert(true, b"y", b"z", ListShape::default()));
        model.insert(model.len() - 1, b"z".to_vec());
        check(&l, &model);
        // 10 elements, 5 nodes: the middle one is deeper than 2.
        l.trim(1, 10);
        let model: VecDeque<Vec<u8>> = model.into_iter().skip(1).take(10).collect();
        check(&l, &model);
        assert!(l.compressed_nodes() > 0);
    }

    /// Elements of 12 bytes and more are plain nodes: each operation keeps
    /// the elements (and their kinds) as a model says, with compression.
    #[test]
    fn plain_nodes_follow_every_change() {
        for (fill, depth) in [(-2, 0), (3, 0), (2, 1), (-1, 2)] {
            let shape = ListShape {
                fill,
                depth,
                packed_threshold: 12,
            };
            let mut l = ListValue::default();
            let mut model: VecDeque<(Vec<u8>, bool)> = VecDeque::new();
            let mut x = 777u32;
            for step in 0..4000u32 {
                x = x.wrapping_mul(1103515245).wrapping_add(12345);
                // Short (packed) and long (plain, compressible) elements.
                let e = if (x >> 9).is_multiple_of(3) {
                    format!("{}-{step}", "p".repeat(12 + (x >> 12) as usize % 60)).into_bytes()
                } else {
                    format!("{}", step % 1000).into_bytes()
                };
                let large = e.len() >= 12;
                match (x >> 20) % 11 {
                    0 | 1 => {
                        l.push_back(&e, shape);
                        model.push_back((e, large));
                    }
                    2 | 3 => {
                        l.push_front(&e, shape);
                        model.push_front((e, large));
                    }
                    4 => assert_eq!(l.pop_back(), model.pop_back().map(|m| m.0)),
                    5 => assert_eq!(l.pop_front(), model.pop_front().map(|m| m.0)),
                    6 | 7 if !model.is_empty() => {
                        let i = (x as usize >> 3) % model.len();
                        assert!(l.set(i, &e, shape));
                        model[i] = (e, large);
                    }
                    8 if !model.is_empty() => {
                        let i = (x as usize >> 3) % model.len();
                        let pivot = model[i].0.clone();
                        let at = model.iter().position(|m| m.0 == pivot).unwrap();
                        let before = x & 1 == 0;
                        assert!(l.insert(before, &pivot, &e, shape));
                        model.insert(if before { at } else { at + 1 }, (e, large));
                    }
                    9 if model.len() > 40 => {
                        let (a, b) = (1, model.len() - 3);
                        l.trim(a, b);
                        model = model.into_iter().skip(a).take(b + 1 - a).collect();
                    }
                    10 if !model.is_empty() => {
                        let item = model[(x as usize >> 3) % model.len()].0.clone();
                        let count = [-1i64, 0, 2][(x as usize >> 5) % 3];
                        let mut want = model.clone();
                        let mut left = if count == 0 {
                            usize::MAX
                        } else {
                            count.unsigned_abs() as usize
                        };
                        let idx: Vec<usize> = if count < 0 {
                            (0..want.len()).rev().collect()
                        } else {
                            (0..want.len()).collect()
                        };
                        let mut gone = vec![false; want.len()];
                        for i in idx {
                            if left > 0 && want[i].0 == item {
                                gone[i] = true;
                                left -= 1;
                            }
                        }
                        let n = gone.iter().filter(|g| **g).count();
                        want = want
                            .into_iter()
                            .zip(gone)
                            .filter(|(_, g)| !g)
                            .map(|(m, _)| m)
                            .collect();
                        assert_eq!(l.remove(count, &item), n);
                        model = want;
                    }
                    _ => {}
                }
                assert_eq!(l.len(), model.len());
                assert!(l
                    .iter_marked()
                    .map(|(e, p)| (e.into_owned(), p))
                    .eq(model.iter().cloned()));
                for n in &l.nodes {
                    assert!(!n.is_plain() || n.entries() == 1);
                }
                check_tail(&l);
            }
            let elements: VecDeque<Vec<u8>> = model.iter().map(|m| m.0.clone()).collect();
            check(&l, &elements);
            assert!(l.node_count() >= model.iter().filter(|m| m.1).count());
            if depth > 0 {
                assert!(l.compressed_nodes() > 0, "fill {fill} depth {depth}");
            }
        }
    }

    #[test]
    fn lset_splits_a_packed_node_around_a_large_item() {
        let shape = ListShape {
            fill: -2,
            depth: 0,
            packed_threshold: 5,
        };
        let mut l = ListValue::default();
        for e in ["aa", "bb", "cc", "dd", "ee"] {
            l.push_back(e.as_bytes(), shape);
        }
        assert_eq!(l.node_count(), 1);
        // The middle: packed, plain, packed.
        assert!(l.set(2, b"eeeeeeeeee", shape));
        assert_eq!(l.node_count(), 3);
        let kinds: Vec<bool> = l.iter_marked().map(|(_, p)| p).collect();
        assert_eq!(kinds, [false, false, true, false, false]);
        // At an end of a node: no empty node left.
        assert!(l.set(0, b"xxxxxxx", shape));
        assert_eq!(l.node_count(), 4);
        // Plain to small: it joins the next node's head, the plain node goes.
        assert!(l.set(0, b"a", shape));
        assert_eq!(l.node_count(), 3);
        assert_eq!(l.get(0).as_deref(), Some(&b"a"[..]));
        assert_eq!(l.get(1).as_deref(), Some(&b"bb"[..]));
        // Plain to large stays one node.
        assert!(l.set(2, b"ffffffffff", shape));
        assert_eq!(l.node_count(), 3);
        assert_eq!(l.pop_front(), Some(b"a".to_vec()));
        assert_eq!(l.pop_back(), Some(b"ee".to_vec()));
        assert_eq!(l.pop_back(), Some(b"dd".to_vec()));
        assert_eq!(l.pop_back(), Some(b"ffffffffff".to_vec()));
        assert_eq!(l.pop_back(), Some(b"bb".to_vec()));
        assert!(l.is_empty());
        assert_eq!(l.bytes, 0);
    }

    /// The plain kinds fit in a node's 40 bytes, and a list stays 56
    /// (issue 42's sizes).
    #[test]
    fn plain_nodes_keep_the_sizes() {
        assert_eq!(std::mem::size_of::<Node>(), 40);
        assert_eq!(std::mem::size_of::<ListValue>(), 56);
    }

    #[test]
    fn the_packed_threshold_rule_is_quicklists() {
        assert_eq!(packed_threshold(0), Some(DEFAULT_PACKED_THRESHOLD));
        assert_eq!(packed_threshold(1), Some(1));
        assert_eq!(
            packed_threshold((1 << 32) - (1 << 20)),
            Some((1 << 32) - (1 << 20))
        );
        assert_eq!(packed_threshold((1 << 32) - (1 << 20) + 1), None);
        let s = ListShape::default();
        assert!(!s.is_large(&[b'x'; 1000]));
    }

    #[test]
    fn nodes_hold_little_more_than_they_use() {
        // Issue 42: doubling from an exact 4,080 bytes went to 16,320 for
        // the last elements of an 8 KB node, twice the room used.
        for (fill, front) in [
            (-2, false),
            (-2, true),
            (-1, false),
            (128, false),
            (128, true),
        ] {
            let shape = ListShape {
                fill,
                depth: 0,
                ..Default::default()
            };
            let mut l = ListValue::default();
            for i in 0..100_000 {
                let e = format!("m:{i}");
                if front {
                    l.push_front(e.as_bytes(), shape);
                } else {
                    l.push_back(e.as_bytes(), shape);
                }
            }
            let limit = super::super::malloc_chunk(ListValue::node_limit(fill));
            let ends = [0, l.nodes.len() - 1];
            for (i, n) in l.nodes.iter().enumerate() {
                assert!(n.bytes() <= limit, "fill {fill} node {i}: {}", n.bytes());
                if !ends.contains(&i) {
                    // Sealed: at most an eighth of room, and malloc's rounding.
                    assert!(
                        n.bytes() <= n.raw_len() * 9 / 8 + 24,
                        "fill {fill} node {i}"
                    );
                }
            }
            let used = l.uncompressed_bytes();
            assert!(
                l.bytes < used + used / 8 + 4 * limit,
                "fill {fill}: {}",
                l.bytes
            );
        }
    }

    #[test]
    fn the_compression_rule_is_quicklists() {
        assert!(compress_node(&[b'a'; 47]).is_none());
        assert!(compress_node(&[b'a'; 48]).is_some());
        let noise: Vec<u8> = (0..200u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 7) as u8)
            .collect();
        assert!(compress_node(&noise).is_none());
    }
}
