//! The dense key table's hash index: open addressing over 4-byte slots,
//! each holding a pair's position and, in the bits the position does not
//! need, a tag of the key's hash.
//!
//! Why not hashbrown's `HashTable<u32>`: there the control bytes (the tags)
//! and the positions are two arrays, so a lookup of a random key missed the
//! cache twice before reaching its pair: perf of GET on 1M random keys put
//! a quarter of the lookup on the control byte and a quarter on the
//! position. Here the tag and the position are one load, and a probe that
//! runs on reads the next slots of the same cache line (16 slots a line). A
//! slot is 4 bytes where hashbrown's bucket was 5.
//!
//! A table of 2^b slots keeps a position in the low b bits (positions are
//! below the number of keys, so below 2^b) and 32 - b bits of tag: 21 bits at
//! 2,048 slots, still 4 at 2^28 slots a shard. The hash is the key's
//! `key_hash`, whose lowest bits chose the shard (the same in every key of
//! a table): the home slot is taken from the bits above them, the tag from
//! the top ones. Removal leaves a tombstone
//! (linear probing cannot just empty a slot without breaking the probe runs
//! through it); a rebuild from the pairs clears them.

use super::SHARD_BITS;

/// Never a filled slot: positions stay below `MAX_LOAD` of the slots, so a
/// position field of all ones (or all ones less one) is never used.
const EMPTY: u32 = u32::MAX;
const TOMB: u32 = u32::MAX - 1;
/// The fewest slots of a table that holds anything (2 tag bits at least:
/// positions 0..=5 stay clear of the two markers' position fields).
const MIN_SLOTS: usize = 8;
/// The most slots: a position needs all but one bit of a slot.
const MAX_SLOTS: usize = 1 << 31;

/// Filled and dead slots at most 4/5 of all: a probe for an absent key
/// then reads about 13 slots on average at the fullest (under a cache line)
/// and 4 at the usual 0.6.
#[inline]
fn max_filled(slots: usize) -> usize {
    slots / 5 * 4 + (slots % 5) * 4 / 5
}

#[derive(Default)]
pub struct PositionIndex {
    /// A power of two of slots, or none.
    slots: Box<[u32]>,
    /// Bits of a slot that hold the position: log2 of the slot count.
    bits: u32,
    live: usize,
    dead: usize,
}

/// Where `insert_slot` found a key, or where a new one goes.
pub enum Probe {
    Found(u32),
    Vacant(usize),
}

impl PositionIndex {
    pub fn len(&self) -> usize {
        self.live
    }

    /// Keys held before the index is rebuilt larger.
    pub fn capacity(&self) -> usize {
        max_filled(self.slots.len())
    }

    pub fn allocation_size(&self) -> usize {
        self.slots.len() * std::mem::size_of::<u32>()
    }

    #[inline]
    fn tag(&self, hash: u64) -> u32 {
        // The high half of the hash: the home slot takes bits of the low half.
        ((hash >> 32) as u32) >> self.bits
    }

    /// The slot a probe for `hash` starts at, in a table of `mask + 1`.
    #[inline]
    fn home(hash: u64, mask: usize) -> usize {
        (hash >> SHARD_BITS) as usize & mask
    }

    #[inline]
    fn pos_mask(&self) -> u32 {
        ((1u64 << self.bits) - 1) as u32
    }

    /// The position of the key with `hash` for which `is_key` holds.
    /// An empty table answers before the probe's call (GET of a missing
    /// key in an empty database paid the probe's register saves).
    #[inline]
    pub fn find(&self, hash: u64, mut is_key: impl FnMut(u32) -> bool) -> Option<u32> {
        if self.live == 0 {
            return None;
        }
        self.probe(hash, &mut is_key)
    }

    #[inline(never)]
    fn probe(&self, hash: u64, is_key: &mut impl FnMut(u32) -> bool) -> Option<u32> {
        self.find_slot(hash, is_key)
            .map(|s| self.slots[s] & self.pos_mask())
    }

    #[inline]
    fn find_slot(&self, hash: u64, is_key: &mut impl FnMut(u32) -> bool) -> Option<usize> {
        if self.live == 0 {
            return None;
        }
        let mask = self.slots.len() - 1;
        let (tag, pos_mask) = (self.tag(hash), self.pos_mask());
        let mut i = Self::home(hash, mask);
        loop {
            let s = self.slots[i];
            if s == EMPTY {
                return None;
            }
            if s != TOMB && s >> self.bits == tag && is_key(s & pos_mask) {
                return Some(i);
            }
            i = (i + 1) & mask;
        }
    }

    /// Finds the key or the slot a new key goes to (the first tombstone of
    /// its run, else the empty slot that ends it), after making room for one
    /// more key: `rehash` gives the hash of the key at a position.
    pub fn insert_slot(
        &mut self,
        hash: u64,
        mut is_key: impl FnMut(u32) -> bool,
        rehash: impl Fn(u32) -> u64,
    ) -> Probe {
        if self.live + self.dead + 1 > max_filled(self.slots.len()) {
            self.rebuild(self.live + 1, rehash);
        }
        let mask = self.slots.len() - 1;
        let (tag, pos_mask) = (self.tag(hash), self.pos_mask());
        let mut i = Self::home(hash, mask);
        let mut tomb = None;
        loop {
            let s = self.slots[i];
            if s == EMPTY {
                return Probe::Vacant(tomb.unwrap_or(i));
            }
            if s == TOMB {
                tomb.get_or_insert(i);
            } else if s >> self.bits == tag && is_key(s & pos_mask) {
                return Probe::Found(s & pos_mask);
            }
            i = (i + 1) & mask;
        }
    }

    /// Fills the slot `insert_slot` returned as vacant.
    pub fn fill(&mut self, slot: usize, hash: u64, pos: u32) {
        if self.slots[slot] == TOMB {
            self.dead -= 1;
        }
        self.slots[slot] = self.tag(hash) << self.bits | pos;
        self.live += 1;
    }

    /// Removes the key, returning its position.
    pub fn remove(&mut self, hash: u64, mut is_key: impl FnMut(u32) -> bool) -> Option<u32> {
        let i = self.find_slot(hash, &mut is_key)?;
        let pos = self.slots[i] & self.pos_mask();
        // A slot before an empty one ends no run that reaches further.
        if self.slots[(i + 1) & (self.slots.len() - 1)] == EMPTY {
            self.slots[i] = EMPTY;
        } else {
            self.slots[i] = TOMB;
            self.dead += 1;
        }
        self.live -= 1;
        Some(pos)
    }

    /// Points the key with `hash` at position `from` to `to` (the pair moved).
    pub fn moved(&mut self, hash: u64, from: u32, to: u32) {
        let i = self
            .find_slot(hash, &mut |p| p == from)
            .expect("every pair has its position");
        self.slots[i] = self.tag(hash) << self.bits | to;
    }

    /// Rebuilds for `keys` keys (at least the ones held) from the hashes of
    /// positions 0..len, dropping the tombstones; empty when none.
    pub fn rebuild(&mut self, keys: usize, rehash: impl Fn(u32) -> u64) {
        let len = self.live;
        let keys = keys.max(len);
        if keys == 0 {
            *self = PositionIndex::default();
            return;
        }
        let mut n = MIN_SLOTS;
        while max_filled(n) < keys {
            n *= 2;
            assert!(n <= MAX_SLOTS, "a shard holds under 2^31 keys");
        }
        self.slots = vec![EMPTY; n].into_boxed_slice();
        self.bits = n.trailing_zeros();
        self.live = 0;
        self.dead = 0;
        let mask = n - 1;
        for pos in 0..len as u32 {
            let hash = rehash(pos);
            let mut i = Self::home(hash, mask);
            while self.slots[i] != EMPTY {
                i = (i + 1) & mask;
            }
            self.fill(i, hash, pos);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_limit_keeps_the_markers_clear_of_positions() {
        // The largest position is below max_filled(n) <= n - 2.
        for b in 3..=31 {
            let n = 1usize << b;
            assert!(max_filled(n) <= n - 2, "{n} slots");
        }
        assert_eq!(max_filled(8), 6);
        assert_eq!(max_filled(2048), 1638);
    }

    #[test]
    fn tombstones_are_reused_and_cleared_by_a_rebuild() {
        // Every key hashes to slot 0: one run, keys at slots 0..6.
        let hash = |k: u32| (k as u64) << 40;
        let mut ix = PositionIndex::default();
        ix.rebuild(12, hash);
        assert_eq!(ix.slots.len(), 16);
        for k in 0..6 {
            match ix.insert_slot(hash(k), |p| p == k, hash) {
                Probe::Vacant(s) => ix.fill(s, hash(k), k),
                Probe::Found(_) => panic!("{k} found before it was added"),
            }
        }
        assert_eq!(ix.remove(hash(2), |p| p == 2), Some(2));
        assert_eq!(ix.dead, 1, "a slot inside the run becomes a tombstone");
        assert_eq!(ix.find(hash(5), |p| p == 5), Some(5), "found past it");
        match ix.insert_slot(hash(2), |p| p == 2, hash) {
            Probe::Vacant(s) => {
                assert_eq!(s, 2, "the tombstone is reused");
                ix.fill(s, hash(2), 2);
            }
            Probe::Found(_) => panic!("removed key found"),
        }
        assert_eq!((ix.live, ix.dead), (6, 0));
        // The run's last slot is emptied, not marked.
        assert_eq!(ix.remove(hash(5), |p| p == 5), Some(5));
        assert_eq!((ix.live, ix.dead), (5, 0));
        // As the dense table does: key 4 (the last) moves into 3's place.
        assert_eq!(ix.remove(hash(3), |p| p == 3), Some(3));
        ix.moved(hash(4), 4, 3);
        assert_eq!(ix.dead, 1);
        let key_at = |p: u32| hash(if p == 3 { 4 } else { p });
        ix.rebuild(0, key_at);
        assert_eq!((ix.live, ix.dead, ix.slots.len()), (4, 0, 8));
        assert_eq!(ix.find(hash(4), |p| p == 3), Some(3));
        assert_eq!(ix.find(hash(3), |_| true), None);
    }
}
