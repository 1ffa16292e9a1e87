//! Redis Cluster hash slots: the slot of a key, and the per-slot key index
//! a shard keeps in cluster mode only (COUNTKEYSINSLOT, GETKEYSINSLOT and
//! resharding read it instead of walking the keyspace).

use super::shard::Key;
use crc::{Crc, CRC_16_XMODEM};
use hashbrown::{HashMap, HashSet};

pub const SLOTS: usize = 16384;

const CRC16: Crc<u16> = Crc::<u16>::new(&CRC_16_XMODEM);

/// The slot of a key (CRC16/XMODEM mod 16384): a non-empty `{...}` section
/// (the first `{` and the first `}` after it) is hashed instead of the key.
pub fn key_slot(key: &[u8]) -> u16 {
    let hashed = match key.iter().position(|&c| c == b'{') {
        Some(s) => match key[s + 1..].iter().position(|&c| c == b'}') {
            Some(len) if len > 0 => &key[s + 1..s + 1 + len],
            _ => key,
        },
        None => key,
    };
    CRC16.checksum(hashed) & 0x3FFF
}

/// One shard's keys by slot. Each key is stored a second time (inline up
/// to 16 bytes), which is the memory this index costs per key.
#[derive(Default)]
pub struct SlotIndex(HashMap<u16, HashSet<Key>>);

impl SlotIndex {
    pub fn add(&mut self, key: &[u8]) {
        self.0.entry(key_slot(key)).or_default().insert(key.into());
    }

    pub fn remove(&mut self, key: &[u8]) {
        let slot = key_slot(key);
        if let Some(set) = self.0.get_mut(&slot) {
            set.remove(key);
            if set.is_empty() {
                self.0.remove(&slot);
            }
        }
    }

    pub fn count(&self, slot: u16) -> usize {
        self.0.get(&slot).map_or(0, |s| s.len())
    }

    pub fn keys(&self, slot: u16) -> impl Iterator<Item = &Key> {
        self.0.get(&slot).into_iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_and_tags() {
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"foo{}{bar}"), key_slot(b"foo{}{bar}"));
        assert_eq!(key_slot(b"{}x"), key_slot(b"{}x"));
    }

    #[test]
    fn index_counts_and_forgets() {
        let mut ix = SlotIndex::default();
        ix.add(b"{a}1");
        ix.add(b"{a}2");
        ix.add(b"{a}2");
        let s = key_slot(b"a");
        assert_eq!(ix.count(s), 2);
        ix.remove(b"{a}1");
        ix.remove(b"{a}2");
        assert_eq!(ix.count(s), 0);
        assert!(ix.0.is_empty());
    }
}
