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

use super::chunk::{Chunk, Pair};
use super::positions::{PositionIndex, Probe};
use super::{key_hash, Entry, InlineBytes as Key};

/// Pairs per chunk (a power of two): 16 KB chunks. The last one grows by
/// doubling to a page (64 pairs), then a page at a time (chunk.rs: in a
/// slot of a mapped slab, so growing leaves no hole in the heap), so a shard's unused
/// room is under 4 KB: doubling to 256 left 20 bytes a key of room at 50,000
/// keys (195 a shard). With 64-pair chunks the chunk list was 4x longer, and
/// reading a chunk's header took a sixth of a random-key GET's lookup time
/// (perf, 1M keys).
const CHUNK_SHIFT: u32 = 8;
const CHUNK: usize = 1 << CHUNK_SHIFT;
const _: () = assert!(CHUNK == super::chunk::FULL);
/// The first room of a chunk after the first (1 KB, in malloc: a shard whose
/// count goes back and forth over a chunk's end allocates and frees this,
/// not a mapping).
const STEP: usize = CHUNK / 16;

/// The map's methods take the key's `key_hash` from the caller, which
/// computed it to pick the shard; those that may find the key at `hint`
/// take it as a closure, run only when they probe.
#[derive(Default)]
pub struct DenseMap {
    /// Positions into `chunks`, found by the key's hash.
    index: PositionIndex,
    /// Every chunk but the last holds `CHUNK` pairs.
    chunks: Vec<Chunk>,
    /// The position last found or stored through `&mut self`: a write looks
    /// its key up, then stores, changes or re-counts it (SET, INCR, LPUSH:
    /// two to four accesses), and each later access checks this position
    /// first: a key comparison instead of a hash and a probe. A guess,
    /// always checked against the key (a removal may have moved a pair).
    hint: u32,
}

#[inline]
fn at(chunks: &[Chunk], i: u32) -> &Pair {
    let i = i as usize;
    &chunks[i >> CHUNK_SHIFT].as_slice()[i & (CHUNK - 1)]
}

#[inline]
fn at_mut(chunks: &mut [Chunk], i: u32) -> &mut Pair {
    let i = i as usize;
    &mut chunks[i >> CHUNK_SHIFT].as_mut_slice()[i & (CHUNK - 1)]
}

/// `a == b`, comparing keys up to 32 bytes (nearly all) in 8-byte words
/// inline: the call to memcmp, and the registers the probe loop saved around
/// it, cost more than the comparison.
#[inline(always)]
fn same_key(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], i: usize| u64::from_ne_bytes(s[i..i + 8].try_into().unwrap());
    let half = |s: &[u8], i: usize| u32::from_ne_bytes(s[i..i + 4].try_into().unwrap());
    match n {
        // Overlapping windows cover every byte.
        0..4 => a == b,
        4..8 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        17..=32 => {
            word(a, 0) == word(b, 0)
                && word(a, 8) == word(b, 8)
                && word(a, n - 16) == word(b, n - 16)
                && word(a, n - 8) == word(b, n - 8)
        }
        _ => a == b,
    }
}

impl DenseMap {
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
        let pair = std::mem::size_of::<Pair>();
        self.index.allocation_size()
            + self.chunks.capacity() * std::mem::size_of::<Chunk>()
            + self
                .chunks
                .iter()
                .map(|c| c.capacity() * pair)
                .sum::<usize>()
    }

    #[inline]
    fn position(&self, key: &[u8], hash: u64) -> Option<u32> {
        let chunks = &self.chunks;
        self.index
            .find(hash, |i| same_key(at(chunks, i).0.as_slice(), key))
    }

    /// `hint`, if `key` is there.
    #[inline]
    fn hinted(&self, key: &[u8]) -> Option<u32> {
        let i = self.hint;
        let pair = self
            .chunks
            .get((i >> CHUNK_SHIFT) as usize)?
            .as_slice()
            .get(i as usize & (CHUNK - 1))?;
        same_key(pair.0.as_slice(), key).then_some(i)
    }

    #[inline]
    pub fn get(&self, key: &[u8], hash: u64) -> Option<&Entry> {
        self.position(key, hash).map(|i| &at(&self.chunks, i).1)
    }

    /// The position of `key`, kept as the hint for the next access.
    #[inline]
    pub fn locate(&mut self, key: &[u8], hash: impl FnOnce() -> u64) -> Option<u32> {
        if let Some(i) = self.hinted(key) {
            return Some(i);
        }
        let i = self.position(key, hash())?;
        self.hint = i;
        Some(i)
    }

    /// The entry at a position `locate` returned.
    #[inline]
    pub fn entry(&self, i: u32) -> &Entry {
        &at(&self.chunks, i).1
    }

    #[inline]
    pub fn entry_mut(&mut self, i: u32) -> &mut Entry {
        &mut at_mut(&mut self.chunks, i).1
    }

    #[inline]
    pub fn get_mut(&mut self, key: &[u8], hash: impl FnOnce() -> u64) -> Option<&mut Entry> {
        let i = self.locate(key, hash)?;
        Some(self.entry_mut(i))
    }

    pub fn contains_key(&self, key: &[u8], hash: u64) -> bool {
        self.position(key, hash).is_some()
    }

    /// Inserts `key` or replaces its entry (one probe of the index, none
    /// when the key is at the hint); returns the entry replaced.
    #[inline]
    pub fn insert(
        &mut self,
        key: &[u8],
        hash: impl FnOnce() -> u64,
        entry: Entry,
    ) -> Option<Entry> {
        if let Some(i) = self.hinted(key) {
            return Some(std::mem::replace(&mut at_mut(&mut self.chunks, i).1, entry));
        }
        self.insert_probed(key, hash(), entry)
    }

    fn insert_probed(&mut self, key: &[u8], hash: u64, entry: Entry) -> Option<Entry> {
        let pos = u32::try_from(self.index.len()).expect("a shard holds under 2^32 keys");
        let chunks = &mut self.chunks;
        match self.index.insert_slot(
            hash,
            |i| same_key(at(chunks, i).0.as_slice(), key),
            |i| key_hash(at(chunks, i).0.as_slice()),
        ) {
            Probe::Found(i) => {
                self.hint = i;
                Some(std::mem::replace(&mut at_mut(chunks, i).1, entry))
            }
            Probe::Vacant(slot) => {
                self.index.fill(slot, hash, pos);
                Self::push(chunks, (Key::from_slice(key), entry));
                self.hint = pos;
                None
            }
        }
    }

    fn push(chunks: &mut Vec<Chunk>, pair: Pair) {
        match chunks.last_mut() {
            // The chunk grows as `chunk::grown` says (in place, by pages,
            // past 64 pairs).
            Some(last) if last.len() < CHUNK => last.push(pair),
            _ => {
                // The first chunk starts small (most shards of a small
                // keyspace hold a few keys); later ones at a step.
                let cap = if chunks.is_empty() { 4 } else { STEP };
                let mut c = Chunk::with_capacity(cap);
                c.push(pair);
                chunks.push(c);
            }
        }
    }

    /// Removes `key`, moving the last pair into its place.
    pub fn remove(&mut self, key: &[u8], hash: u64) -> Option<Entry> {
        let chunks = &self.chunks;
        let i = self
            .index
            .remove(hash, |i| same_key(at(chunks, i).0.as_slice(), key))?;
        let last = self.index.len() as u32;
        if i != last {
            let moved = key_hash(at(&self.chunks, last).0.as_slice());
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
            let chunks = &self.chunks;
            self.index
                .rebuild(want, |i| key_hash(at(chunks, i).0.as_slice()));
        }
    }

    /// Shrinks the index to hold `min` keys and the last chunk to its pairs.
    pub fn shrink_to(&mut self, min: usize) {
        let chunks = &self.chunks;
        self.index
            .rebuild(min, |i| key_hash(at(chunks, i).0.as_slice()));
        if let Some(last) = self.chunks.last_mut() {
            last.shrink_to_fit();
        }
        self.chunks.shrink_to_fit();
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Key, &Entry)> {
        self.chunks
            .iter()
            .flat_map(Chunk::as_slice)
            .map(|(k, e)| (k, e))
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
                let h = key_hash(&k);
                assert_eq!(m.remove(&k, h).is_some(), reference.remove(&k).is_some());
            } else {
                let e = Entry::string(format!("{step}").as_bytes());
                let old = m.insert(&k, || key_hash(&k), e.clone());
                assert_eq!(old, reference.insert(k.clone(), e));
            }
            assert_eq!(m.len(), reference.len());
        }
        for (k, e) in &reference {
            assert_eq!(m.get(k, key_hash(k)), Some(e));
        }
        assert_eq!(m.iter().count(), reference.len());
        let full = m.chunks.len().saturating_sub(1);
        assert!(m.chunks[..full].iter().all(|c| c.len() == CHUNK));
        for k in reference.keys() {
            assert!(m.remove(k, key_hash(k)).is_some());
        }
        assert!(
            m.is_empty() && m.chunks.is_empty(),
            "emptied chunks are freed"
        );
    }

    #[test]
    fn same_key_is_equality_at_every_length() {
        let base: Vec<u8> = (0..48u8).map(|b| b.wrapping_mul(37)).collect();
        for n in 0..=base.len() {
            let a = &base[..n];
            // A copy elsewhere in memory: equal bytes, not the same address.
            let copy = a.to_vec();
            assert!(same_key(a, &copy), "{n} bytes");
            for i in 0..n {
                let mut b = a.to_vec();
                b[i] ^= 0x40;
                assert!(!same_key(a, &b), "{n} bytes, byte {i} differs");
            }
            if n > 0 {
                assert!(!same_key(a, &base[..n - 1]));
            }
        }
    }

    #[test]
    fn the_hint_is_checked_against_the_key() {
        let mut m = DenseMap::default();
        for i in 0..600 {
            let k = key(i);
            m.insert(&k, || key_hash(&k), Entry::string(&b"v"[..]));
        }
        // The hint is the last key stored; removing another key moves the
        // last pair (that key) into the hole.
        let last = key(599);
        assert_eq!(m.hinted(&last), Some(599));
        assert!(m.remove(&key(3), key_hash(&key(3))).is_some());
        assert_eq!(m.hinted(&last), None, "the pair moved");
        assert_eq!(m.locate(&last, || key_hash(&last)), Some(3));
        assert_eq!(m.hinted(&last), Some(3));
        // A stored key at the hint is replaced in place; another key is
        // not taken for it.
        let other = key(5);
        let none = || -> u64 { panic!("no probe when the hint holds the key") };
        assert!(m.insert(&last, none, Entry::string(&b"w"[..])).is_some());
        assert!(m
            .insert(&other, || key_hash(&other), Entry::string(&b"x"[..]))
            .is_some());
        assert_eq!(m.len(), 599);
        let value = |m: &DenseMap, k: &[u8]| {
            m.get(k, key_hash(k))
                .and_then(|e| e.value().as_str().map(<[u8]>::to_vec))
        };
        assert_eq!(value(&m, &last).as_deref(), Some(&b"w"[..]));
        assert_eq!(value(&m, &other).as_deref(), Some(&b"x"[..]));
        // The hint past the end once the pairs and chunks are gone.
        assert_eq!(m.hinted(&other), Some(5));
        for i in (0..600).filter(|&i| i != 5) {
            let k = key(i);
            m.remove(&k, key_hash(&k));
        }
        assert_eq!((m.len(), m.chunks.len()), (1, 1));
        assert_eq!(m.hinted(&other), None);
        assert!(m.get_mut(&other, || key_hash(&other)).is_some());
        assert_eq!(m.hinted(&other), Some(0));
    }

    #[test]
    fn a_key_costs_its_pair_and_a_few_bytes() {
        let mut m = DenseMap::default();
        for i in 0..1172 {
            let k = key(i);
            m.insert(&k, || key_hash(&k), Entry::string(&b"val12345"[..]));
        }
        let per_key = m.allocation_size() / m.len();
        // 64-byte pairs, 44 pairs of room (the last chunk grows by pages:
        // 2.4 bytes a key), a 4-byte slot at 0.57 (7 bytes a key;
        // hashbrown's 5-byte buckets made 73).
        assert!((64..=73).contains(&per_key), "{per_key} bytes per key");
        m.shrink_to(0);
        assert_eq!(
            m.get(&key(7), key_hash(&key(7)))
                .map(|e| e.value().as_str()),
            Some(Some(&b"val12345"[..]))
        );
        assert_eq!(m.nth(1171).is_some(), m.nth(1172).is_none());
    }
}
