//! An order-statistics B+tree of slot numbers: the order of a large sorted
//! set, with O(log n) rank, select, insert and remove, and O(log n + m)
//! ranges.
//!
//! Written here rather than taken from a crate: the keys are u32 slots of a
//! `Table` compared through that table (score, then member bytes), and no
//! ordered-map crate takes an outside comparator without copying each
//! member into the tree.
//!
//! Each slot is stored with its key (a sorted set's score), so that a search
//! compares keys held in the tree and reads the table only between equal
//! keys: a search of a 1M-member set then touches the few nodes on its path
//! instead of one random table slot per probe (those cache misses were most
//! of a ZRANGEBYSCORE's time).
//!
//! Every inner node keeps, per child, the number of elements under it (rank
//! and select) and the child's first slot and key (search). They are exact:
//! they are fixed on the way back up from every change, so a freed slot
//! number never lingers in the tree. Leaves hold up to `LEAF_MAX` (key, slot)
//! pairs (16 bytes each); a leaf split at its end (ascending loads, such as an
//! AOF replay) keeps the full half full, so sequential builds fill leaves
//! completely.
//!
//! A search on keys alone (a score bound) does not binary-search a node: it
//! tests every 16th leaf item (every 8th child of an inner node), then the
//! items of the one stride that holds the boundary. The loads of each round
//! are independent, so their cache misses overlap; a binary search of a
//! cold 2 KB leaf waited for about six misses in a row. Nodes are held in
//! their parent's `Child`, not boxed, so that each level costs one pointer
//! to its items. ZRANGEBYSCORE ... LIMIT 0 10 on a 1M-member set went from
//! ~6.7 to ~4.5 us of server CPU per call at c50 P16 (a loaded machine,
//! alternated A/B against the build before this change, 2026-11-27).

use smallvec::SmallVec;

const LEAF_MAX: usize = 128;
const INNER_MAX: usize = 64;

/// A slot and its key.
type Item = (f64, u32);

enum Node {
    Leaf(Vec<Item>),
    Inner(Vec<Child>),
}

struct Child {
    count: usize,
    first: u32,
    /// The key of `first`.
    key: f64,
    /// Held in place (not boxed): a search reaches the node's items with
    /// one pointer less to follow.
    node: Node,
}

impl Child {
    /// Takes the first slot and key of its node again.
    fn refresh_first(&mut self) {
        (self.key, self.first) = self.node.first();
    }
}

impl Clone for Node {
    /// Keeps each node's full capacity, so that a copy (copy-on-write of a
    /// shared set) does not regrow nodes by doubling past their maximum.
    fn clone(&self) -> Self {
        match self {
            Node::Leaf(v) => {
                let mut c = Vec::with_capacity(LEAF_MAX);
                c.extend_from_slice(v);
                Node::Leaf(c)
            }
            Node::Inner(children) => {
                let mut c = Vec::with_capacity(INNER_MAX);
                c.extend(children.iter().map(|ch| Child {
                    count: ch.count,
                    first: ch.first,
                    key: ch.key,
                    node: ch.node.clone(),
                }));
                Node::Inner(c)
            }
        }
    }
}

impl Node {
    fn first(&self) -> Item {
        match self {
            Node::Leaf(v) => v[0],
            Node::Inner(c) => (c[0].key, c[0].first),
        }
    }

    fn count(&self) -> usize {
        match self {
            Node::Leaf(v) => v.len(),
            Node::Inner(c) => c.iter().map(|ch| ch.count).sum(),
        }
    }

    fn child(node: Node) -> Child {
        let (key, first) = node.first();
        Child {
            count: node.count(),
            first,
            key,
            node,
        }
    }

    /// Inserts `slot` at `rank`; returns a new right sibling if this node split.
    fn insert(&mut self, rank: usize, slot: Item, nodes: &mut Nodes) -> Option<Node> {
        match self {
            Node::Leaf(v) => {
                if v.len() < LEAF_MAX {
                    v.insert(rank, slot);
                    return None;
                }
                // At an end: leave this leaf full and start a new one there.
                let mut right = Vec::with_capacity(LEAF_MAX);
                if rank == v.len() {
                    right.push(slot);
                } else if rank == 0 {
                    right.extend_from_slice(v);
                    v.clear();
                    v.push(slot);
                } else {
                    let at = v.len() / 2;
                    right.extend_from_slice(&v[at..]);
                    v.truncate(at);
                    if rank <= at {
                        v.insert(rank, slot);
                    } else {
                        right.insert(rank - at, slot);
                    }
                }
                nodes.leaves += 1;
                Some(Node::Leaf(right))
            }
            Node::Inner(children) => {
                let at_end = rank == children.iter().map(|ch| ch.count).sum::<usize>();
                let (i, within) = locate_insert(children, rank);
                let ch = &mut children[i];
                let split = ch.node.insert(within, slot, nodes);
                ch.count = ch.node.count_hint(ch.count + 1, split.as_ref());
                ch.refresh_first();
                if let Some(right) = split {
                    children.insert(i + 1, Node::child(right));
                }
                if children.len() <= INNER_MAX {
                    return None;
                }
                // As for leaves: a split at an end keeps the full side full.
                let at = if at_end {
                    children.len() - 1
                } else if rank == 0 {
                    1
                } else {
                    children.len() / 2
                };
                let mut right = Vec::with_capacity(INNER_MAX);
                right.extend(children.drain(at..));
                nodes.inners += 1;
                Some(Node::Inner(right))
            }
        }
    }

    /// The count of this node after an insert that may have split it.
    fn count_hint(&self, total: usize, split: Option<&Node>) -> usize {
        match split {
            None => total,
            Some(right) => total - right.count(),
        }
    }

    /// Removes and returns the slot at `rank`. The caller rebalances.
    fn remove(&mut self, rank: usize, nodes: &mut Nodes) -> u32 {
        match self {
            Node::Leaf(v) => v.remove(rank).1,
            Node::Inner(children) => {
                let (i, within) = locate(children, rank);
                let ch = &mut children[i];
                let slot = ch.node.remove(within, nodes);
                ch.count -= 1;
                if ch.count > 0 {
                    ch.refresh_first();
                }
                rebalance(children, i, nodes);
                slot
            }
        }
    }

    fn get(&self, mut rank: usize) -> u32 {
        let mut node = self;
        loop {
            match node {
                Node::Leaf(v) => return v[rank].1,
                Node::Inner(children) => {
                    let (i, within) = locate(children, rank);
                    rank = within;
                    node = &children[i].node;
                }
            }
        }
    }

    /// Sets the key of the slot at `rank`, which keeps its place.
    fn set_key(&mut self, rank: usize, key: f64) {
        match self {
            Node::Leaf(v) => v[rank].0 = key,
            Node::Inner(children) => {
                let (i, within) = locate(children, rank);
                let ch = &mut children[i];
                ch.node.set_key(within, key);
                ch.refresh_first();
            }
        }
    }

    fn remap(&mut self, map: &impl Fn(u32) -> u32) {
        match self {
            Node::Leaf(v) => v.iter_mut().for_each(|s| s.1 = map(s.1)),
            Node::Inner(c) => {
                for ch in c {
                    ch.first = map(ch.first);
                    ch.node.remap(map);
                }
            }
        }
    }
}

/// The partition point of `items` under `pred` (true for a prefix of them),
/// found by testing every `STRIDE`th item, then the items of the one stride
/// that holds the boundary. A binary search waits for one load per halving,
/// and in a large set each is a cache miss; here the loads of a round do not
/// depend on each other, so their misses overlap: two rounds of waiting
/// instead of seven for a full leaf. For predicates on keys alone (cheap to
/// call); a predicate that reads the table keeps to the binary search.
fn strided_partition<T, const STRIDE: usize>(items: &[T], pred: impl Fn(&T) -> bool) -> usize {
    let mut before = 0;
    for item in items.iter().step_by(STRIDE) {
        before += pred(item) as usize;
    }
    if before == 0 {
        return 0;
    }
    // pred holds at `base` and fails at `base + STRIDE` (or the end).
    let base = (before - 1) * STRIDE;
    let end = (base + STRIDE).min(items.len());
    let mut at = base + 1;
    for item in &items[base + 1..end] {
        at += pred(item) as usize;
    }
    at
}

/// Leaves are searched by strides of 16 items (256 bytes), inner nodes by
/// strides of 8 children.
const LEAF_STRIDE: usize = 16;
const INNER_STRIDE: usize = 8;

/// The child holding `rank` and the rank within it.
fn locate(children: &[Child], mut rank: usize) -> (usize, usize) {
    for (i, ch) in children.iter().enumerate() {
        if rank < ch.count {
            return (i, rank);
        }
        rank -= ch.count;
    }
    unreachable!("rank within the tree")
}

/// The child an element inserted at `rank` goes into: the end of the child
/// before a boundary, so that later children's first slots stay put.
fn locate_insert(children: &[Child], mut rank: usize) -> (usize, usize) {
    let last = children.len() - 1;
    for (i, ch) in children.iter().enumerate() {
        if rank <= ch.count || i == last {
            return (i, rank);
        }
        rank -= ch.count;
    }
    unreachable!("an inner node has children")
}

/// After a removal under `children[i]`: drops it if empty, or merges it with
/// or refills it from a neighbour when it fell under a quarter full.
fn rebalance(children: &mut Vec<Child>, i: usize, nodes: &mut Nodes) {
    if children[i].count == 0 {
        nodes.drop(&children.remove(i).node);
        return;
    }
    let (max, len) = match &children[i].node {
        Node::Leaf(v) => (LEAF_MAX, v.len()),
        Node::Inner(c) => (INNER_MAX, c.len()),
    };
    if len >= max / 4 || children.len() < 2 {
        return;
    }
    let (l, r) = if i + 1 < children.len() {
        (i, i + 1)
    } else {
        (i - 1, i)
    };
    let (left, right) = children.split_at_mut(r);
    let (a, b) = (&mut left[l], &mut right[0]);
    match (&mut a.node, &mut b.node) {
        (Node::Leaf(x), Node::Leaf(y)) => {
            if x.len() + y.len() <= max {
                x.extend_from_slice(y);
                y.clear();
            } else {
                let total = x.len() + y.len();
                let want = total / 2;
                if x.len() < want {
                    let take = want - x.len();
                    x.extend(y.drain(..take));
                } else {
                    let give = x.len() - want;
                    let tail: Vec<Item> = x.drain(x.len() - give..).collect();
                    y.splice(0..0, tail);
                }
            }
        }
        (Node::Inner(x), Node::Inner(y)) => {
            if x.len() + y.len() <= max {
                x.append(y);
            } else {
                let total = x.len() + y.len();
                let want = total / 2;
                if x.len() < want {
                    let take = want - x.len();
                    x.extend(y.drain(..take));
                } else {
                    let give = x.len() - want;
                    let tail: Vec<Child> = x.drain(x.len() - give..).collect();
                    y.splice(0..0, tail);
                }
            }
        }
        _ => unreachable!("siblings are at the same height"),
    }
    for ch in [&mut *a, &mut *b] {
        ch.count = ch.node.count();
        if ch.count > 0 {
            ch.refresh_first();
        }
    }
    if children[r].count == 0 {
        nodes.drop(&children.remove(r).node);
    }
}

/// How many nodes of each kind a tree has (its memory, in O(1)).
#[derive(Clone, Copy, Default)]
struct Nodes {
    leaves: usize,
    inners: usize,
}

impl Nodes {
    fn drop(&mut self, n: &Node) {
        match n {
            Node::Leaf(_) => self.leaves -= 1,
            Node::Inner(_) => self.inners -= 1,
        }
    }
}

/// The order of a large sorted set: slot numbers by rank.
#[derive(Clone)]
pub struct Ranked {
    root: Node,
    len: usize,
    nodes: Nodes,
}

impl Default for Ranked {
    fn default() -> Self {
        Ranked {
            root: Node::Leaf(Vec::with_capacity(LEAF_MAX)),
            len: 0,
            nodes: Nodes {
                leaves: 1,
                inners: 0,
            },
        }
    }
}

impl Ranked {
    /// A tree over `slots` (key, slot), already in order, with full leaves.
    pub fn from_sorted(slots: impl IntoIterator<Item = (f64, u32)>) -> Self {
        let mut level: Vec<Node> = Vec::new();
        let mut leaf = Vec::with_capacity(LEAF_MAX);
        let mut len = 0;
        for s in slots {
            leaf.push(s);
            len += 1;
            if leaf.len() == LEAF_MAX {
                level.push(Node::Leaf(std::mem::replace(
                    &mut leaf,
                    Vec::with_capacity(LEAF_MAX),
                )));
            }
        }
        if !leaf.is_empty() || level.is_empty() {
            level.push(Node::Leaf(leaf));
        }
        if len == 0 {
            return Ranked::default();
        }
        let mut nodes = Nodes {
            leaves: level.len(),
            inners: 0,
        };
        while level.len() > 1 {
            let mut up = Vec::new();
            let mut group = Vec::with_capacity(INNER_MAX);
            for n in level {
                group.push(Node::child(n));
                if group.len() == INNER_MAX {
                    up.push(Node::Inner(std::mem::replace(
                        &mut group,
                        Vec::with_capacity(INNER_MAX),
                    )));
                }
            }
            if !group.is_empty() {
                up.push(Node::Inner(group));
            }
            // A short last node may be below a quarter: even it out.
            if let [.., Node::Inner(_), Node::Inner(_)] = &up[..] {
                let n = up.len();
                let mut tail: Vec<Child> = up.drain(n - 2..).map(Node::child).collect();
                // Counted below, from what is left.
                let mut scratch = Nodes {
                    leaves: 0,
                    inners: 2,
                };
                rebalance(&mut tail, 1, &mut scratch);
                up.extend(tail.into_iter().map(|c| c.node));
            }
            nodes.inners += up.len();
            level = up;
        }
        Ranked {
            root: level.pop().expect("one root"),
            len,
            nodes,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Bytes held, counted in O(1) (each node's items are allocated at its
    /// full capacity; a node itself lives in its parent's `Child`).
    pub fn bytes(&self) -> usize {
        self.nodes.leaves * LEAF_MAX * std::mem::size_of::<Item>()
            + self.nodes.inners * INNER_MAX * std::mem::size_of::<Child>()
    }

    /// How many leading slots satisfy `pred` (of a key and its slot), which
    /// must hold for a prefix of the order and fail for the rest (e.g.
    /// "orders before x").
    pub fn partition_point(&self, pred: impl Fn(f64, u32) -> bool) -> usize {
        let mut rank = 0;
        let mut node = &self.root;
        loop {
            match node {
                Node::Leaf(v) => return rank + v.partition_point(|&(k, s)| pred(k, s)),
                Node::Inner(children) => {
                    // The last child whose first slot satisfies pred holds the
                    // boundary (the first child when none does).
                    let i = children[1..].partition_point(|ch| pred(ch.key, ch.first));
                    rank += children[..i].iter().map(|ch| ch.count).sum::<usize>();
                    node = &children[i].node;
                }
            }
        }
    }

    /// [`Ranked::partition_point`] of a predicate on keys alone, which
    /// holds for a prefix of the order (e.g. "key below x").
    pub fn partition_point_by_key(&self, pred: impl Fn(f64) -> bool) -> usize {
        let mut rank = 0;
        let mut node = &self.root;
        loop {
            match node {
                Node::Leaf(v) => {
                    return rank + strided_partition::<_, LEAF_STRIDE>(v, |&(k, _)| pred(k))
                }
                Node::Inner(children) => {
                    let i = strided_partition::<_, INNER_STRIDE>(&children[1..], |ch| pred(ch.key));
                    rank += children[..i].iter().map(|ch| ch.count).sum::<usize>();
                    node = &children[i].node;
                }
            }
        }
    }

    /// Slots in order from the first whose key fails `pred` (which holds for
    /// a prefix of the order) to the last; with `rev`, from the last whose
    /// key satisfies it down to the first slot. One descent, and no rank
    /// counted on the way (a range by score from its near bound).
    pub fn iter_from_key(&self, pred: impl Fn(f64) -> bool, rev: bool) -> Iter<'_> {
        let mut it = Iter {
            stack: SmallVec::new(),
            leaf: &[],
            pos: 0,
            rev,
            left: UNCOUNTED,
        };
        let mut node = &self.root;
        loop {
            match node {
                Node::Leaf(v) => {
                    it.leaf = v;
                    // Forward: the next index; backward: one past it. Either
                    // may be at an end of the leaf, and `next` moves on.
                    it.pos = strided_partition::<_, LEAF_STRIDE>(v, |&(k, _)| pred(k));
                    return it;
                }
                Node::Inner(children) => {
                    let i = strided_partition::<_, INNER_STRIDE>(&children[1..], |ch| pred(ch.key));
                    it.stack.push((children, i));
                    node = &children[i].node;
                }
            }
        }
    }

    /// The slot at `rank` (< len).
    pub fn get(&self, rank: usize) -> u32 {
        self.root.get(rank)
    }

    /// Inserts `slot` with its `key` at `rank`.
    pub fn insert_at(&mut self, rank: usize, key: f64, slot: u32) {
        debug_assert!(rank <= self.len);
        if let Some(right) = self.root.insert(rank, (key, slot), &mut self.nodes) {
            let left = std::mem::replace(&mut self.root, Node::Inner(Vec::new()));
            let mut children = Vec::with_capacity(INNER_MAX);
            children.push(Node::child(left));
            children.push(Node::child(right));
            self.root = Node::Inner(children);
            self.nodes.inners += 1;
        }
        self.len += 1;
    }

    /// Removes and returns the slot at `rank` (< len).
    pub fn remove_at(&mut self, rank: usize) -> u32 {
        let slot = self.root.remove(rank, &mut self.nodes);
        self.len -= 1;
        // A root with one child gives way to it.
        while let Node::Inner(children) = &mut self.root {
            if children.len() != 1 {
                break;
            }
            let only = children.pop().expect("one child");
            self.root = only.node;
            self.nodes.inners -= 1;
        }
        if self.len == 0 {
            *self = Ranked::default();
        }
        slot
    }

    /// Sets the key of the slot at `rank` (< len) to one that keeps it
    /// between its neighbours.
    pub fn set_key(&mut self, rank: usize, key: f64) {
        self.root.set_key(rank, key);
    }

    /// Renumbers every slot (after the table compacted its arena).
    pub fn remap(&mut self, map: impl Fn(u32) -> u32) {
        self.root.remap(&map);
    }

    /// Slots from `rank` on, in order (or, with `rev`, from `rank` down to 0).
    pub fn iter_from(&self, rank: usize, rev: bool) -> Iter<'_> {
        let mut it = Iter {
            stack: SmallVec::new(),
            leaf: &[],
            pos: 0,
            rev,
            left: 0,
        };
        if rank >= self.len {
            return it;
        }
        it.left = if rev { rank + 1 } else { self.len - rank };
        let mut node = &self.root;
        let mut r = rank;
        loop {
            match node {
                Node::Leaf(v) => {
                    it.leaf = v;
                    it.pos = if rev { r + 1 } else { r };
                    return it;
                }
                Node::Inner(children) => {
                    let (i, within) = locate(children, r);
                    it.stack.push((children, i));
                    r = within;
                    node = &children[i].node;
                }
            }
        }
    }
}

/// `Iter::left` of an iterator that runs to an end of the tree.
const UNCOUNTED: usize = usize::MAX;

/// Walks the leaves from a starting rank, forward or backward.
pub struct Iter<'a> {
    /// The path from the root: each inner node and the child taken (inline
    /// for up to 8 inner levels, ~2^40 slots).
    stack: SmallVec<[(&'a [Child], usize); 8]>,
    leaf: &'a [Item],
    /// Forward: the next index in `leaf`; backward: one past it.
    pos: usize,
    rev: bool,
    /// Slots still to come, or UNCOUNTED.
    left: usize,
}

impl Iter<'_> {
    fn took_one(&mut self) {
        if self.left != UNCOUNTED {
            self.left -= 1;
        }
    }
}

impl<'a> Iterator for Iter<'a> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        if self.left == 0 {
            return None;
        }
        loop {
            if self.rev && self.pos > 0 {
                self.pos -= 1;
                self.took_one();
                return Some(self.leaf[self.pos].1);
            }
            if !self.rev && self.pos < self.leaf.len() {
                self.pos += 1;
                self.took_one();
                return Some(self.leaf[self.pos - 1].1);
            }
            // Up to the nearest ancestor with a next child, then down its
            // nearest edge.
            loop {
                let top = self.stack.last_mut()?;
                let children: &'a [Child] = top.0;
                let more = if self.rev {
                    top.1 > 0
                } else {
                    top.1 + 1 < children.len()
                };
                if more {
                    if self.rev {
                        top.1 -= 1;
                    } else {
                        top.1 += 1;
                    }
                    let mut node: &'a Node = &children[top.1].node;
                    loop {
                        match node {
                            Node::Leaf(v) => {
                                self.leaf = v;
                                self.pos = if self.rev { v.len() } else { 0 };
                                break;
                            }
                            Node::Inner(c) => {
                                let j = if self.rev { c.len() - 1 } else { 0 };
                                self.stack.push((c, j));
                                node = &c[j].node;
                            }
                        }
                    }
                    break;
                }
                self.stack.pop();
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.left == UNCOUNTED {
            (0, None)
        } else {
            (self.left, Some(self.left))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn check(t: &Ranked, model: &[u32]) {
        assert_eq!(t.len(), model.len());
        assert_eq!(t.iter_from(0, false).collect::<Vec<_>>(), model);
        if !model.is_empty() {
            let mut rev: Vec<_> = t.iter_from(model.len() - 1, true).collect();
            rev.reverse();
            assert_eq!(rev, model);
        }
        for (r, &s) in model.iter().enumerate().step_by(7) {
            assert_eq!(t.get(r), s);
            assert_eq!(t.partition_point(|_, x| x < s), r);
            assert_eq!(t.partition_point(|k, _| k < s as f64), r);
            assert_eq!(t.partition_point_by_key(|k| k < s as f64), r);
            assert_eq!(t.partition_point_by_key(|k| k <= s as f64), r + 1);
            // From the boundary of a key, both ways (to the ends for some).
            let whole = r % 91 == 0;
            let n = if whole { model.len() } else { 300 };
            let up = t.iter_from_key(|k| k < s as f64, false).take(n);
            assert!(up.eq(model[r..].iter().take(n).copied()));
            let down = t.iter_from_key(|k| k <= s as f64, true).take(n);
            assert!(down.eq(model[..=r].iter().rev().take(n).copied()));
            // Between keys: past every slot below.
            let between = |k: f64| k < s as f64 + 0.5;
            assert_eq!(t.partition_point_by_key(between), r + 1);
            assert_eq!(
                t.iter_from_key(between, false).next(),
                model.get(r + 1).copied()
            );
            assert_eq!(t.iter_from_key(between, true).next(), Some(s));
        }
        // Keys past either end.
        assert_eq!(t.partition_point_by_key(|_| true), model.len());
        assert_eq!(t.iter_from_key(|_| true, false).next(), None);
        assert_eq!(t.iter_from_key(|_| false, true).next(), None);
        assert!(t.iter_from_key(|_| false, false).eq(model.iter().copied()));
        assert!(t
            .iter_from_key(|_| true, true)
            .eq(model.iter().rev().copied()));
        check_node(&t.root, true);
        check_keys(&t.root);
        let (mut leaves, mut inners) = (0, 0);
        count_nodes(&t.root, &mut leaves, &mut inners);
        assert_eq!((t.nodes.leaves, t.nodes.inners), (leaves, inners));
    }

    /// Every leaf's keys are its slots (the tests' keys).
    fn check_keys(n: &Node) {
        match n {
            Node::Leaf(v) => assert!(v.iter().all(|&(k, s)| k == s as f64)),
            Node::Inner(c) => c.iter().for_each(|ch| check_keys(&ch.node)),
        }
    }

    fn count_nodes(n: &Node, leaves: &mut usize, inners: &mut usize) {
        match n {
            Node::Leaf(_) => *leaves += 1,
            Node::Inner(c) => {
                *inners += 1;
                c.iter()
                    .for_each(|ch| count_nodes(&ch.node, leaves, inners));
            }
        }
    }

    fn check_node(n: &Node, root: bool) {
        if let Node::Inner(c) = n {
            assert!(root || c.len() >= 2);
            for ch in c {
                assert_eq!(ch.count, ch.node.count());
                assert!(ch.count > 0);
                assert_eq!((ch.key, ch.first), ch.node.first());
                check_node(&ch.node, false);
            }
        }
    }

    #[test]
    fn random_inserts_and_removes_match_a_sorted_vec() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut t = Ranked::default();
        let mut model: Vec<u32> = Vec::new();
        for round in 0..40_000u32 {
            if model.is_empty() || rng.gen_bool(0.6) {
                let s = rng.gen::<u32>() >> 8;
                if let Err(at) = model.binary_search(&s) {
                    model.insert(at, s);
                    let r = t.partition_point(|_, x| x < s);
                    assert_eq!(r, at);
                    t.insert_at(r, s as f64, s);
                }
            } else {
                let at = rng.gen_range(0..model.len());
                assert_eq!(t.remove_at(at), model.remove(at));
            }
            if round % 5000 == 0 {
                check(&t, &model);
            }
        }
        check(&t, &model);
        while !model.is_empty() {
            let at = rng.gen_range(0..model.len());
            assert_eq!(t.remove_at(at), model.remove(at));
        }
        check(&t, &model);
    }

    #[test]
    fn ascending_and_descending_loads_fill_leaves() {
        for desc in [false, true] {
            let mut t = Ranked::default();
            let n = 100_000u32;
            for i in 0..n {
                if desc {
                    t.insert_at(0, (n - 1 - i) as f64, n - 1 - i);
                } else {
                    t.insert_at(i as usize, i as f64, i);
                }
            }
            check(&t, &(0..n).collect::<Vec<_>>());
            // About 16 bytes per slot: leaves are full.
            assert!(t.bytes() < n as usize * 17, "{}", t.bytes());
        }
    }

    #[test]
    fn built_from_sorted_and_iterated_from_any_rank() {
        for n in [0u32, 1, 127, 128, 129, 8191, 8192, 8193, 20_000] {
            let model: Vec<u32> = (0..n).map(|i| i * 2).collect();
            let t = Ranked::from_sorted(model.iter().map(|&s| (s as f64, s)));
            check(&t, &model);
            if n > 10 {
                let from: Vec<_> = t.iter_from(5, false).take(3).collect();
                assert_eq!(from, [10, 12, 14]);
                let back: Vec<_> = t.iter_from(5, true).collect();
                assert_eq!(back, [10, 8, 6, 4, 2, 0]);
            }
            assert_eq!(t.iter_from(n as usize, false).count(), 0);
            let mut t = t;
            t.remap(|s| s + 1);
            for (r, s) in model.iter().enumerate() {
                t.set_key(r, (s + 1) as f64);
            }
            check(&t, &model.iter().map(|s| s + 1).collect::<Vec<_>>());
        }
    }
}
