//! The tracking table: for each key a tracking client read, the ids of the
//! clients that may cache it. Keyed by name only (not database), as Redis's is.
//! Kept in insertion order with removal by position, so that going over
//! `tracking-table-max-keys` evicts random keys in O(1) each.

use hashbrown::HashSet;
use indexmap::IndexMap;
use rand::Rng;
use smallvec::SmallVec;

/// Past this many readers of one key, their ids go to a hash set (a hot key
/// read by thousands of clients must not cost a linear scan per read).
const FEW: usize = 8;

/// The clients that read one key.
pub enum Ids {
    Few(SmallVec<[u64; 2]>),
    Many(HashSet<u64>),
}

impl Ids {
    /// Adds `id`; false if it was there.
    fn add(&mut self, id: u64) -> bool {
        match self {
            Ids::Few(v) if v.contains(&id) => false,
            Ids::Few(v) if v.len() < FEW => {
                v.push(id);
                true
            }
            Ids::Few(v) => {
                let mut set: HashSet<u64> = v.iter().copied().collect();
                set.insert(id);
                *self = Ids::Many(set);
                true
            }
            Ids::Many(s) => s.insert(id),
        }
    }

    fn len(&self) -> usize {
        match self {
            Ids::Few(v) => v.len(),
            Ids::Many(s) => s.len(),
        }
    }

    pub fn to_vec(&self) -> Vec<u64> {
        match self {
            Ids::Few(v) => v.to_vec(),
            Ids::Many(s) => s.iter().copied().collect(),
        }
    }
}

#[derive(Default)]
pub struct Table {
    keys: IndexMap<Box<[u8]>, Ids>,
    /// Ids summed over keys (INFO tracking_total_items).
    items: u64,
    /// Limit checks in a row that ended still over the limit: each one
    /// evicts 100 keys more than the last, as Redis's effort grows.
    pub rounds_over: u32,
}

impl Table {
    /// Client `id` may cache `key` from now on.
    pub fn remember(&mut self, key: &[u8], id: u64) {
        let added = match self.keys.get_mut(key) {
            Some(ids) => ids.add(id),
            None => {
                let mut ids = SmallVec::new();
                ids.push(id);
                self.keys.insert(key.into(), Ids::Few(ids));
                true
            }
        };
        if added {
            self.items += 1;
        }
    }

    /// Stops tracking `key`, returning who tracked it.
    pub fn take(&mut self, key: &[u8]) -> Option<Ids> {
        let ids = self.keys.swap_remove(key)?;
        self.items -= ids.len() as u64;
        Some(ids)
    }

    /// Stops tracking a random key, returning it and who tracked it.
    pub fn take_random(&mut self) -> Option<(Box<[u8]>, Ids)> {
        if self.keys.is_empty() {
            return None;
        }
        let i = rand::thread_rng().gen_range(0..self.keys.len());
        let (key, ids) = self.keys.swap_remove_index(i)?;
        self.items -= ids.len() as u64;
        Some((key, ids))
    }

    pub fn clear(&mut self) {
        self.keys = IndexMap::new();
        self.items = 0;
    }

    pub fn keys(&self) -> usize {
        self.keys.len()
    }

    pub fn items(&self) -> u64 {
        self.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_follow_adds_and_takes() {
        let mut t = Table::default();
        t.remember(b"a", 1);
        t.remember(b"a", 1);
        t.remember(b"a", 2);
        t.remember(b"b", 1);
        assert_eq!((t.keys(), t.items()), (2, 3));
        assert_eq!(t.take(b"a").unwrap().len(), 2);
        assert_eq!((t.keys(), t.items()), (1, 1));
        let (k, _) = t.take_random().unwrap();
        assert_eq!(&k[..], b"b");
        assert!(t.take_random().is_none());
        assert_eq!(t.items(), 0);
    }

    #[test]
    fn many_readers_of_one_key_are_a_set() {
        let mut t = Table::default();
        for round in 0..2 {
            for id in 0..100 {
                t.remember(b"hot", id);
            }
            assert_eq!(t.items(), 100, "round {round}");
        }
        assert!(matches!(t.take(b"hot"), Some(Ids::Many(s)) if s.len() == 100));
    }
}
