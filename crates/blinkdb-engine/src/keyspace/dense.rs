//! A shard's key table: the (key, entry) pairs packed in a dense array and
//! a hash index of 4-byte positions into it (positions.rs).
//!
//! Why not a hash map of the pairs: its slots are the pairs, 64 bytes each,
//! and a table that doubles is 7/16 to 7/8 full, so a key cost 64 bytes over
//! a load of 0.44-0.87 (114 at 300,000 keys, load 0.57). Here the empty
//! slots cost 4 bytes and the pairs sit in chunks of at most 256 that are
//! filled before the next is made, so a key costs its 64 bytes plus about 9
//! (docs/design.md, "Memory per small key"). The price is one more memory
//! access per lookup (the slot, then the pair). Removal moves the last pair
//! into the hole (its position is updated), so the array stays dense and a
//! chunk is freed once emptied.

use super::positions::{PositionIndex, Probe};
use super::{Entry, InlineBytes as Key};
use hashbrown::DefaultHashBuilder;
use std::hash::BuildHasher;

/// Pairs per chunk (a power of two): 16 KB chunks. The last one grows by
/// doubling to `STEP` pairs, then by `STEP` (1 KB) at a time, so a shard's
/// unused room is under 1 KB: doubling to 256 left 20 bytes a key of room at
/// 50,000 keys (195 a shard). Growing copies at most 15 KB. With 64-pair
/// chunks the chunk list was 4x longer, and reading a chunk's header took a
/// sixth of a random-key GET's lookup time (perf, 1M keys).
const CHUNK_SHIFT: u32 = 8;
const CHUNK: usize = 1 << CHUNK_SHIFT;
const STEP: usize = CHUNK / 16;

#[derive(Default)]
pub struct DenseMap {
    /// Positions into `chunks`, found by the key's hash.
    index: PositionIndex,
    /// Every chunk but the last holds `CHUNK` pairs.
    chunks: Vec<Vec<(Key, Entry)>>,
    hasher: DefaultHashBuilder,
}

#[inline]
fn at(chunks: &[Vec<(Key, Entry)>], i: u32) -> &(Key, Entry) {
    let i = i as usize;
    &chunks[i >> CHUNK_SHIFT][i & (CHUNK - 1)]
}

#[inline]
fn at_mut(chunks: &mut [Vec<(Key, Entry)>], i: u32) -> &mut (Key, Entry) {
    let i = i as usize;
    &mut chunks[i >> CHUNK_SHIFT][i & (CHUNK - 1)]
}

impl DenseMap {
    #[inline]
    fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.len() == 0
    }

    /// Keys the index holds before it grows.
    pub fn capacity(&self) -> usize {
        self.index.capacity()
    }

    /// The heap bytes of the index and the chunks (their room included).
    pub fn allocation_size(&self) -> usize {
        let pair = std::mem::size_of::<(Key, Entry)>();
        self.index.allocation_size()
            + self.chunks.capacity() * std::mem::size_of::<Vec<(Key, Entry)>>()
            + self
                .chunks
                .iter()
                .map(|c| c.capacity() * pair)
                .sum::<usize>()
    }

    #[inline]
    fn position(&self, key: &[u8]) -> Option<u32> {
        let chunks = &self.chunks;
        self.index
            .find(self.hash(key), |i| at(chunks, i).0.as_slice() == key)
    }

    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<&Entry> {
        self.position(key).map(|i| &at(&self.chunks, i).1)
    }

    #[inline]
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let i = self.position(key)?;
        Some(&mut at_mut(&mut self.chunks, i).1)
    }

    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.position(key).is_some()
    }

    /// Inserts `key` or replaces its entry (one probe of the index); returns
    /// the entry replaced.
    pub fn insert(&mut self, key: &[u8], entry: Entry) -> Option<Entry> {
        let hash = self.hash(key);
        let pos = u32::try_from(self.index.len()).expect("a shard holds under 2^32 keys");
        let (chunks, hasher) = (&mut self.chunks, &self.hasher);
        match self.index.insert_slot(
            hash,
            |i| at(chunks, i).0.as_slice() == key,
            |i| hasher.hash_one(at(chunks, i).0.as_slice()),
        ) {
            Probe::Found(i) => Some(std::mem::replace(&mut at_mut(chunks, i).1, entry)),
            Probe::Vacant(slot) => {
                self.index.fill(slot, hash, pos);
                Self::push(chunks, (Key::from_slice(key), entry));
                None
            }
        }
    }

    fn push(chunks: &mut Vec<Vec<(Key, Entry)>>, pair: (Key, Entry)) {
        match chunks.last_mut() {
            Some(last) if last.len() < CHUNK => {
                if last.len() == last.capacity() {
                    let cap = last.capacity();
                    let want = if cap < STEP { cap * 2 } else { cap + STEP };
                    last.reserve_exact(want.min(CHUNK) - last.len());
                }
                last.push(pair);
            }
            _ => {
                // The first chunk starts small (most shards of a small
                // keyspace hold a few keys); later ones at a step.
                let cap = if chunks.is_empty() { 4 } else { STEP };
                let mut c = Vec::with_capacity(cap);
                c.push(pair);
                chunks.push(c);
            }
        }
    }

    /// Removes `key`, moving the last pair into its place.
    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let hash = self.hash(key);
        let chunks = &self.chunks;
        let i = self
            .index
            .remove(hash, |i| at(chunks, i).0.as_slice() == key)?;
        let last = self.index.len() as u32;
        if i != last {
            let moved = self.hash(at(&self.chunks, last).0.as_slice());
            self.index.moved(moved, last, i);
        }
        let tail = self.chunks.last_mut().expect("a pair was found");
        let mut pair = tail.pop().expect("chunks are never left empty");
        if tail.is_empty() {
            self.chunks.pop();
        }
        if i != last {
            std::mem::swap(at_mut(&mut self.chunks, i), &mut pair);
        }
        Some(pair.1)
    }

    pub fn reserve(&mut self, additional: usize) {
        let want = self.len() + additional;
        if want > self.index.capacity() {
            let (chunks, hasher) = (&self.chunks, &self.hasher);
            self.index
                .rebuild(want, |i| hasher.hash_one(at(chunks, i).0.as_slice()));
        }
    }

    /// Shrinks the index to hold `min` keys and the last chunk to its pairs.
    pub fn shrink_to(&mut self, min: usize) {
        let (chunks, hasher) = (&self.chunks, &self.hasher);
        self.index
            .rebuild(min, |i| hasher.hash_one(at(chunks, i).0.as_slice()));
        if let Some(last) = self.chunks.last_mut() {
            last.shrink_to_fit();
        }
        self.chunks.shrink_to_fit();
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Key, &Entry)> {
        self.chunks.iter().flatten().map(|(k, e)| (k, e))
    }

    pub fn keys(&self) -> impl Iterator<Item = &Key> {
        self.iter().map(|(k, _)| k)
    }

    /// The `n`-th pair in iteration order, in O(1) (RANDOMKEY).
    pub fn nth(&self, n: usize) -> Option<(&Key, &Entry)> {
        let n = u32::try_from(n)
            .ok()
            .filter(|&n| (n as usize) < self.len())?;
        let (k, e) = at(&self.chunks, n);
        Some((k, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: usize) -> Vec<u8> {
        format!("key:{i:08}").into_bytes()
    }

    #[test]
    fn follows_a_reference_map_through_inserts_and_removes() {
        let mut m = DenseMap::default();
        let mut reference = std::collections::HashMap::new();
        // A fixed pseudo-random walk: inserts, replaces and removes that
        // move pairs across chunk boundaries and empty chunks.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for step in 0..20_000usize {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = key((x % 700) as usize);
            if x.is_multiple_of(3) {
                assert_eq!(m.remove(&k).is_some(), reference.remove(&k).is_some());
            } else {
                let e = Entry::string(format!("{step}").as_bytes());
                let old = m.insert(&k, e.clone());
                assert_eq!(old, reference.insert(k.clone(), e));
            }
            assert_eq!(m.len(), reference.len());
        }
        for (k, e) in &reference {
            assert_eq!(m.get(k), Some(e));
        }
        assert_eq!(m.iter().count(), reference.len());
        let full = m.chunks.len().saturating_sub(1);
        assert!(m.chunks[..full].iter().all(|c| c.len() == CHUNK));
        for k in reference.keys() {
            assert!(m.remove(k).is_some());
        }
        assert!(
            m.is_empty() && m.chunks.is_empty(),
            "emptied chunks are freed"
        );
    }

    #[test]
    fn a_key_costs_its_pair_and_a_few_bytes() {
        let mut m = DenseMap::default();
        for i in 0..1172 {
            m.insert(&key(i), Entry::string(&b"val12345"[..]));
        }
        let per_key = m.allocation_size() / m.len();
        // 64-byte pairs, 12 pairs of room (under a byte a key), a 4-byte
        // slot at 0.57 (7 bytes a key; hashbrown's 5-byte buckets made 73).
        assert!((64..=72).contains(&per_key), "{per_key} bytes per key");
        m.shrink_to(0);
        assert_eq!(
            m.get(&key(7)).map(|e| e.value().as_str()),
            Some(Some(&b"val12345"[..]))
        );
        assert_eq!(m.nth(1171).is_some(), m.nth(1172).is_none());
    }
}
