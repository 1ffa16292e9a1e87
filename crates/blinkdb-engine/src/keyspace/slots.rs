//! Redis Cluster hash slots: the slot of a key, and the per-slot key index
//! a shard keeps in cluster mode only (COUNTKEYSINSLOT, GETKEYSINSLOT and
//! resharding read it instead of walking the keyspace).

use super::shard::Key;
use crc::{Crc, CRC_16_XMODEM};
use hashbrown::HashSet;
use parking_lot::Mutex;

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

/// Database 0's keys by slot, shared by its shards: one locked set per
/// slot (taken inside a shard's lock, never the other way round). A slot's
/// keys live in one set, so the sets are large and dense: the cost is the
/// key stored a second time (inline up to 16 bytes) plus the set's slack.
pub struct SlotIndex(Box<[Mutex<HashSet<Key>>]>);

impl Default for SlotIndex {
    fn default() -> Self {
        SlotIndex((0..SLOTS).map(|_| Mutex::new(HashSet::new())).collect())
    }
}

impl SlotIndex {
    pub fn add(&self, key: &[u8]) {
        self.0[key_slot(key) as usize].lock().insert(key.into());
    }

    pub fn remove(&self, key: &[u8]) {
        self.0[key_slot(key) as usize].lock().remove(key);
    }

    pub fn count(&self, slot: u16) -> usize {
        self.0[slot as usize].lock().len()
    }

    /// Up to `max` keys of a slot.
    pub fn keys(&self, slot: u16, max: usize) -> Vec<Vec<u8>> {
        self.0[slot as usize]
            .lock()
            .iter()
            .take(max)
            .map(|k| k.to_vec())
            .collect()
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
        let ix = SlotIndex::default();
        ix.add(b"{a}1");
        ix.add(b"{a}2");
        ix.add(b"{a}2");
        let s = key_slot(b"a");
        assert_eq!(ix.count(s), 2);
        ix.remove(b"{a}1");
        ix.remove(b"{a}2");
        assert_eq!(ix.count(s), 0);
        assert!(ix.keys(s, 10).is_empty());
    }
}
