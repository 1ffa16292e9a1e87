//! The full encoding shared by hashes, sets and sorted sets: elements in a
//! slot arena, found through a hash table of slot numbers.
//!
//! Why not a `HashMap<member, value>`: its slots hold whole elements, and the
//! table keeps up to twice the slots it needs, so a 1M-member set of 48-byte
//! elements would pay ~100 bytes per member. Here the table holds 4-byte slot
//! numbers and the arena grows by doubling only its element vector, which
//! keeps a member of a large set at about half of what Redis's dict costs.
//!
//! Slots never move while in use: a freed slot goes on a free list and is
//! reused. That makes a slot number a stable SCAN cursor: a member present
//! during a whole scan is always returned, as Redis guarantees.

use hashbrown::hash_table::{Entry as TableEntry, HashTable};
use hashbrown::DefaultHashBuilder;
use std::hash::BuildHasher;

/// What an arena slot holds: an element identified by its member bytes.
pub trait Element: Clone {
    /// What a free slot holds (no heap).
    fn vacant() -> Self;
    fn member(&self) -> &[u8];
    /// Heap bytes the element owns beyond its own size (memory accounting).
    fn heap(&self) -> usize;
}

#[derive(Clone)]
pub struct Table<E: Element> {
    slots: Vec<E>,
    /// One bit per slot: in use (an `Option` per slot would cost 8 bytes).
    used: Vec<u64>,
    free: Vec<u32>,
    index: HashTable<u32>,
    hasher: DefaultHashBuilder,
    heap: usize,
}

impl<E: Element> Default for Table<E> {
    fn default() -> Self {
        Table {
            slots: Vec::new(),
            used: Vec::new(),
            free: Vec::new(),
            index: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
            heap: 0,
        }
    }
}

impl<E: Element + Send + Sync + 'static> super::shared::Members for Table<E> {
    fn members(&self) -> usize {
        self.len()
    }
}

impl<E: Element> Table<E> {
    pub fn with_capacity(n: usize) -> Self {
        Table {
            slots: Vec::with_capacity(n),
            used: Vec::with_capacity(n.div_ceil(64)),
            index: HashTable::with_capacity(n),
            ..Self::default()
        }
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Bytes held as they count in RSS (MEMORY USAGE, cache mode's measure):
    /// the arrays by `array_bytes` (a large slot array's room past its last
    /// slot is never written), the index whole (its control bytes are all
    /// written when it is made, its buckets at random), the members' heap.
    pub fn bytes(&self) -> usize {
        use super::{array_bytes, malloc_chunk};
        array_bytes(
            self.slots.len(),
            self.slots.capacity(),
            std::mem::size_of::<E>(),
        ) + array_bytes(self.used.len(), self.used.capacity(), 8)
            + malloc_chunk(self.index.allocation_size())
            + array_bytes(self.free.len(), self.free.capacity(), 4)
            + self.heap
    }

    fn hash(&self, member: &[u8]) -> u64 {
        self.hasher.hash_one(member)
    }

    fn slot_of(&self, member: &[u8]) -> Option<u32> {
        let h = self.hash(member);
        let slots = &self.slots;
        self.index
            .find(h, |&i| slot_member(slots, i) == member)
            .copied()
    }

    pub fn get(&self, member: &[u8]) -> Option<&E> {
        self.slot_of(member).map(|i| &self.slots[i as usize])
    }

    /// The element to change in place; its member must stay the same.
    pub fn get_mut(&mut self, member: &[u8]) -> Option<&mut E> {
        let i = self.slot_of(member)?;
        Some(&mut self.slots[i as usize])
    }

    pub fn contains(&self, member: &[u8]) -> bool {
        self.slot_of(member).is_some()
    }

    /// Inserts `e`, returning the element it replaced (same member).
    pub fn insert(&mut self, e: E) -> Option<E> {
        self.insert_slot(e).1
    }

    /// Inserts `e`: its slot, and the element it replaced (same member).
    pub fn insert_slot(&mut self, e: E) -> (u32, Option<E>) {
        let h = self.hash(e.member());
        let slots = &self.slots;
        let hasher = &self.hasher;
        let found = self.index.entry(
            h,
            |&i| slot_member(slots, i) == e.member(),
            |&i| hasher.hash_one(slot_member(slots, i)),
        );
        match found {
            TableEntry::Occupied(o) => {
                let i = *o.get();
                let slot = &mut self.slots[i as usize];
                self.heap += e.heap();
                let old = std::mem::replace(slot, e);
                self.heap -= old.heap();
                (i, Some(old))
            }
            TableEntry::Vacant(v) => {
                self.heap += e.heap();
                let i = match self.free.pop() {
                    Some(i) => {
                        self.slots[i as usize] = e;
                        i
                    }
                    None => {
                        let i = u32::try_from(self.slots.len())
                            .expect("a collection holds fewer than 2^32 members");
                        self.slots.push(e);
                        if self.used.len() * 64 < self.slots.len() {
                            self.used.push(0);
                        }
                        i
                    }
                };
                self.used[i as usize / 64] |= 1 << (i % 64);
                v.insert(i);
                (i, None)
            }
        }
    }

    pub fn remove(&mut self, member: &[u8]) -> Option<E> {
        let (_, old) = self.take(member)?;
        if self.is_sparse() {
            self.compact();
        }
        Some(old)
    }

    /// Removes `member` without compacting: its former slot and element.
    /// A caller that keeps slot numbers elsewhere compacts with
    /// `compact_map` when `is_sparse`.
    pub fn take(&mut self, member: &[u8]) -> Option<(u32, E)> {
        let h = self.hash(member);
        let slots = &self.slots;
        let found = self
            .index
            .find_entry(h, |&i| slot_member(slots, i) == member)
            .ok()?;
        let (i, _) = found.remove();
        let old = std::mem::replace(&mut self.slots[i as usize], E::vacant());
        self.used[i as usize / 64] &= !(1 << (i % 64));
        self.heap -= old.heap();
        self.free.push(i);
        Some((i, old))
    }

    /// Most slots are free: time to compact.
    pub fn is_sparse(&self) -> bool {
        self.slots.len() > 64 && self.len() < self.slots.len() / 8
    }

    /// The slot holding `member`.
    pub fn find(&self, member: &[u8]) -> Option<u32> {
        self.slot_of(member)
    }

    /// The element in slot `i`, which must be in use.
    pub fn at(&self, i: u32) -> &E {
        debug_assert!(self.is_used(i as usize));
        &self.slots[i as usize]
    }

    /// The element in slot `i` to change in place; its member must stay the
    /// same.
    pub fn at_mut(&mut self, i: u32) -> &mut E {
        debug_assert!(self.is_used(i as usize));
        &mut self.slots[i as usize]
    }

    /// Compacts and returns where each old slot went (`u32::MAX`: free).
    pub fn compact_map(&mut self) -> Vec<u32> {
        let mut map = vec![u32::MAX; self.slots.len()];
        let mut next = 0;
        for (i, m) in map.iter_mut().enumerate() {
            if self.is_used(i) {
                *m = next;
                next += 1;
            }
        }
        self.compact();
        map
    }

    /// Drops free slots after most members left (SCAN cursors taken before
    /// may then repeat or miss members, as after a Redis dict resize). Used
    /// slots keep their order.
    fn compact(&mut self) {
        let mut fresh = Table::with_capacity(self.len());
        let old = std::mem::take(self);
        for (i, e) in old.slots.into_iter().enumerate() {
            if old.used[i / 64] & (1 << (i % 64)) != 0 {
                fresh.insert(e);
            }
        }
        *self = fresh;
    }

    fn is_used(&self, i: usize) -> bool {
        self.used[i / 64] & (1 << (i % 64)) != 0
    }

    pub fn iter(&self) -> impl Iterator<Item = &E> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(i, _)| self.is_used(*i))
            .map(|(_, e)| e)
    }

    /// Elements from slot `cursor` on until about `count` were visited;
    /// returns them and the next cursor (0 when the end was reached).
    pub fn scan(&self, cursor: u64, count: usize) -> (Vec<&E>, u64) {
        let mut out = Vec::new();
        let mut i = cursor as usize;
        let mut visited = 0;
        while i < self.slots.len() && visited < count.max(1) {
            if self.is_used(i) {
                out.push(&self.slots[i]);
                visited += 1;
            }
            i += 1;
        }
        let next = if i >= self.slots.len() { 0 } else { i as u64 };
        (out, next)
    }

    /// A uniformly random element (None when empty).
    pub fn random(&self, rng: &mut impl rand::Rng) -> Option<&E> {
        if self.is_empty() {
            return None;
        }
        // At least one slot in 8 is used (`remove` compacts below that).
        loop {
            let i = rng.gen_range(0..self.slots.len());
            if self.is_used(i) {
                return Some(&self.slots[i]);
            }
        }
    }
}

fn slot_member<E: Element>(slots: &[E], i: u32) -> &[u8] {
    slots[i as usize].member()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct M(Vec<u8>);
    impl Element for M {
        fn vacant() -> Self {
            M(Vec::new())
        }
        fn member(&self) -> &[u8] {
            &self.0
        }
        fn heap(&self) -> usize {
            self.0.len()
        }
    }

    #[test]
    fn insert_find_remove_and_reuse() {
        let mut t = Table::default();
        for i in 0..1000u32 {
            assert!(t.insert(M(i.to_be_bytes().to_vec())).is_none());
        }
        assert_eq!(t.len(), 1000);
        assert!(t.insert(M(5u32.to_be_bytes().to_vec())).is_some());
        for i in (0..1000u32).step_by(2) {
            assert!(t.remove(&i.to_be_bytes()).is_some());
        }
        assert_eq!(t.len(), 500);
        assert!(!t.contains(&4u32.to_be_bytes()));
        assert!(t.contains(&5u32.to_be_bytes()));
        t.insert(M(b"new".to_vec()));
        assert_eq!(t.iter().count(), 501);
    }

    #[test]
    fn scan_returns_members_present_throughout() {
        let mut t = Table::default();
        for i in 0..500u32 {
            t.insert(M(i.to_be_bytes().to_vec()));
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut step = 0u32;
        loop {
            let (batch, next) = t.scan(cursor, 10);
            seen.extend(batch.into_iter().map(|e| e.0.clone()));
            // Churn between calls: members 1000.. come and go.
            t.insert(M((1000 + step).to_be_bytes().to_vec()));
            if step > 3 {
                t.remove(&(1000 + step - 3).to_be_bytes());
            }
            step += 1;
            if next == 0 {
                break;
            }
            cursor = next;
        }
        for i in 0..500u32 {
            assert!(seen.contains(i.to_be_bytes().as_slice()));
        }
    }

    #[test]
    fn compacts_after_mass_removal() {
        let mut t = Table::default();
        for i in 0..10_000u32 {
            t.insert(M(i.to_be_bytes().to_vec()));
        }
        for i in 0..9_990u32 {
            t.remove(&i.to_be_bytes());
        }
        assert_eq!(t.len(), 10);
        assert!(t.slots.len() < 100);
        let mut rng = rand::thread_rng();
        assert!(t.random(&mut rng).is_some());
    }
}
