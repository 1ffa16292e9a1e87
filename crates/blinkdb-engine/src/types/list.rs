//! Lists: a deque of `Pack` nodes, as Redis's quicklist of listpacks, each
//! filled up to `list-max-listpack-size` (entries when positive, 4-64 KB
//! when -1..-5; -2, 8 KB, by default). Pushes and pops at either end touch
//! one node; an index walks node counts. Nodes are never compressed
//! (`list-compress-depth` 0).

use super::pack::Pack;
use std::collections::VecDeque;

/// Bytes a node of a positive fill may still reach (Redis's SIZE_SAFETY_LIMIT).
const SAFETY_BYTES: usize = 8192;

#[derive(Clone, Default)]
pub struct ListValue {
    nodes: VecDeque<Pack>,
    len: usize,
    /// The fill of the last push, for rebuilds.
    fill: i64,
    /// Sum of node buffer capacities (memory accounting).
    bytes: usize,
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
            self.fill
        }
    }

    pub fn bytes(&self) -> usize {
        self.bytes + self.nodes.capacity() * std::mem::size_of::<Pack>()
    }

    fn recount(&mut self) {
        self.bytes = self.nodes.iter().map(|n| n.bytes()).sum();
    }

    /// Whether `item` may join `node` under `fill` (list-max-listpack-size).
    fn fits(node: &Pack, item: &[u8], fill: i64) -> bool {
        let bytes = node.end() + item.len() + 5;
        if fill > 0 {
            return (node.entries() as i64) < fill && bytes <= SAFETY_BYTES;
        }
        let level = fill.unsigned_abs().clamp(1, 5) as u32;
        bytes <= 4096 << (level - 1)
    }

    pub fn push_back(&mut self, item: &[u8], fill: i64) {
        self.fill = fill;
        match self.nodes.back_mut() {
            Some(n) if Self::fits(n, item, fill) => {
                let before = n.bytes();
                n.push(item);
                self.bytes = self.bytes + n.bytes() - before;
            }
            _ => {
                let mut n = Pack::default();
                n.push(item);
                self.bytes += n.bytes();
                self.nodes.push_back(n);
            }
        }
        self.len += 1;
    }

    pub fn push_front(&mut self, item: &[u8], fill: i64) {
        self.fill = fill;
        match self.nodes.front_mut() {
            Some(n) if Self::fits(n, item, fill) => {
                let before = n.bytes();
                n.insert_at(0, &[item]);
                self.bytes = self.bytes + n.bytes() - before;
            }
            _ => {
                let mut n = Pack::default();
                n.push(item);
                self.bytes += n.bytes();
                self.nodes.push_front(n);
            }
        }
        self.len += 1;
    }

    pub fn pop_front(&mut self) -> Option<Vec<u8>> {
        let node = self.nodes.front_mut()?;
        let item = node.iter().next().map(|(_, e)| e.to_vec())?;
        let before = node.bytes();
        node.remove_at(0, 1);
        self.bytes = self.bytes + node.bytes() - before;
        if node.entries() == 0 {
            self.bytes -= node.bytes();
            self.nodes.pop_front();
        }
        self.len -= 1;
        Some(item)
    }

    pub fn pop_back(&mut self) -> Option<Vec<u8>> {
        let node = self.nodes.back_mut()?;
        let (pos, item) = node.iter().last().map(|(p, e)| (p, e.to_vec()))?;
        let before = node.bytes();
        node.remove_at(pos, 1);
        self.bytes = self.bytes + node.bytes() - before;
        if node.entries() == 0 {
            self.bytes -= node.bytes();
            self.nodes.pop_back();
        }
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

    pub fn get(&self, index: usize) -> Option<&[u8]> {
        let (n, i) = self.locate(index)?;
        self.nodes[n].iter().nth(i).map(|(_, e)| e)
    }

    /// Replaces element `index`; false if out of range.
    pub fn set(&mut self, index: usize, item: &[u8]) -> bool {
        let Some((n, i)) = self.locate(index) else {
            return false;
        };
        let node = &mut self.nodes[n];
        let pos = node.iter().nth(i).map(|(p, _)| p).expect("located");
        node.replace_at(pos, item);
        self.recount();
        true
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &[u8]> + '_ {
        self.nodes.iter().flat_map(|n| {
            // A node's entries, collected so that the whole is double-ended.
            n.iter().map(|(_, e)| e).collect::<Vec<_>>()
        })
    }

    /// Elements `start..=end` (in range, start <= end).
    pub fn range(&self, start: usize, end: usize) -> impl Iterator<Item = &[u8]> + '_ {
        let (first, skip) = self.locate(start).unwrap_or((self.nodes.len(), 0));
        self.nodes
            .iter()
            .skip(first)
            .flat_map(|n| n.iter().map(|(_, e)| e))
            .skip(skip)
            .take(end + 1 - start)
    }

    /// Rebuilds from `items` (LTRIM, LREM, LINSERT: operations that touch
    /// the middle).
    fn rebuild<'a>(&mut self, items: impl Iterator<Item = &'a [u8]>) {
        let mut fresh = ListValue::default();
        for it in items {
            fresh.push_back(it, self.fill);
        }
        fresh.fill = self.fill;
        std::mem::swap(self, &mut fresh);
    }

    /// Keeps elements `start..=end` only (empty when start > end).
    pub fn trim(&mut self, start: usize, end: usize) {
        if start > end || start >= self.len {
            self.rebuild(std::iter::empty());
            return;
        }
        let end = end.min(self.len - 1);
        // Whole nodes off both ends first, then rebuild the rest.
        let kept: Vec<Vec<u8>> = self.range(start, end).map(|e| e.to_vec()).collect();
        self.rebuild(kept.iter().map(|v| &v[..]));
    }

    /// LREM: removes up to `count` elements equal to `item` (from the head
    /// when count > 0, from the tail when < 0, all when 0); returns how many.
    pub fn remove(&mut self, count: i64, item: &[u8]) -> usize {
        let all: Vec<Vec<u8>> = self.iter().map(|e| e.to_vec()).collect();
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
            if all[i] == item {
                drop[i] = true;
                removed += 1;
            }
        }
        if removed > 0 {
            self.rebuild(
                all.iter()
                    .zip(&drop)
                    .filter(|(_, d)| !**d)
                    .map(|(e, _)| &e[..]),
            );
        }
        removed
    }

    /// LINSERT: puts `item` before or after the first `pivot`; false if no
    /// element equals it.
    pub fn insert(&mut self, before: bool, pivot: &[u8], item: &[u8]) -> bool {
        let Some(at) = self.iter().position(|e| e == pivot) else {
            return false;
        };
        let at = if before { at } else { at + 1 };
        let all: Vec<Vec<u8>> = self.iter().map(|e| e.to_vec()).collect();
        let items = all[..at]
            .iter()
            .map(|e| &e[..])
            .chain(std::iter::once(item))
            .chain(all[at..].iter().map(|e| &e[..]));
        let items: Vec<&[u8]> = items.collect();
        self.rebuild(items.into_iter());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushes_pops_and_indexes_across_nodes() {
        let mut l = ListValue::default();
        for i in 0..5000 {
            l.push_back(format!("v{i}").as_bytes(), -2);
            l.push_front(format!("w{i}").as_bytes(), -2);
        }
        assert_eq!(l.len(), 10_000);
        assert!(l.nodes.len() > 2);
        assert_eq!(l.get(0), Some(&b"w4999"[..]));
        assert_eq!(l.get(9_999), Some(&b"v4999"[..]));
        assert_eq!(l.get(5_000), Some(&b"v0"[..]));
        assert!(l.set(5_000, b"x"));
        assert_eq!(l.get(5_000), Some(&b"x"[..]));
        let r: Vec<_> = l.range(4_999, 5_001).map(|e| e.to_vec()).collect();
        assert_eq!(r, [b"w0".to_vec(), b"x".to_vec(), b"v1".to_vec()]);
        assert_eq!(l.pop_front(), Some(b"w4999".to_vec()));
        assert_eq!(l.pop_back(), Some(b"v4999".to_vec()));
        l.trim(1, 3);
        assert_eq!(l.len(), 3);
        assert_eq!(l.iter().next(), Some(&b"w4997"[..]));
        assert!(l.insert(true, b"w4996", b"n"));
        assert_eq!(l.get(1), Some(&b"n"[..]));
        l.push_back(b"n", -2);
        assert_eq!(l.remove(-1, b"n"), 1);
        assert_eq!(l.len(), 4);
        assert_eq!(l.iter().next_back(), Some(&b"w4995"[..]));
    }
}
