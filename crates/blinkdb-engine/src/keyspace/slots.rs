//! Redis Cluster hash slots: the slot of a key, and the per-slot key index
//! a shard keeps in cluster mode only (COUNTKEYSINSLOT, GETKEYSINSLOT and
//! resharding read it instead of walking the keyspace).

use super::shard::Key;
use crc::{Crc, CRC_16_XMODEM};
use hashbrown::HashSet;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

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
///
/// Built on first use (`Engine::built_slot_index`): until a node is asked
/// for the keys of a slot (COUNTKEYSINSLOT, GETKEYSINSLOT, SETSLOT NODE, a
/// slot lost to another node), `add` and `remove` return at once, so a
/// cluster node that never reshards pays neither the second copy of every
/// key nor its upkeep on every new key (about 7% of a node's CPU under
/// redis-benchmark's SETs of new keys, docs/cluster.md).
pub struct SlotIndex {
    sets: Box<[Mutex<HashSet<Key>>]>,
    /// Writers keep the sets up to date (set before the build's walk).
    recording: AtomicBool,
    /// The sets hold every key: queries may read them.
    built: AtomicBool,
    /// Held by the one build.
    building: Mutex<()>,
}

impl Default for SlotIndex {
    fn default() -> Self {
        SlotIndex {
            sets: (0..SLOTS).map(|_| Mutex::new(HashSet::new())).collect(),
            recording: AtomicBool::new(false),
            built: AtomicBool::new(false),
            building: Mutex::new(()),
        }
    }
}

impl SlotIndex {
    /// Called under the key's shard lock.
    #[inline]
    pub fn add(&self, key: &[u8]) {
        if self.recording.load(Ordering::Acquire) {
            self.sets[key_slot(key) as usize].lock().insert(key.into());
        }
    }

    /// Called under the key's shard lock.
    #[inline]
    pub fn remove(&self, key: &[u8]) {
        if self.recording.load(Ordering::Acquire) {
            self.sets[key_slot(key) as usize].lock().remove(key);
        }
    }

    pub fn is_built(&self) -> bool {
        self.built.load(Ordering::Acquire)
    }

    /// Builds the index once: writers start recording, then `walk` adds the
    /// keys already there, taking each shard's lock in turn (a writer either
    /// ran before the walk reached its shard, so the walk sees its change, or
    /// after, and recorded it itself; adds are idempotent).
    pub fn build(&self, walk: impl FnOnce(&SlotIndex)) {
        let _one = self.building.lock();
        if self.is_built() {
            return;
        }
        self.recording.store(true, Ordering::SeqCst);
        walk(self);
        self.built.store(true, Ordering::Release);
    }

    pub fn count(&self, slot: u16) -> usize {
        self.sets[slot as usize].lock().len()
    }

    /// Up to `max` keys of a slot.
    pub fn keys(&self, slot: u16, max: usize) -> Vec<Vec<u8>> {
        self.sets[slot as usize]
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
        ix.add(b"{a}0");
        assert_eq!(
            ix.count(key_slot(b"a")),
            0,
            "not recording before the build"
        );
        ix.build(|_| {});
        assert!(ix.is_built());
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
