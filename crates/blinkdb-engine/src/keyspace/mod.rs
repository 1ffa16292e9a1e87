//! The in-memory index: entries, shards and the per-database shard array.

pub mod access;
mod entry;
mod shard;
pub mod slots;
mod watch;

pub use entry::{Entry, Meta, Origin, Value};

/// A byte string stored inline up to 16 bytes (24 bytes in all), on the heap
/// beyond. Most keys and small values fit, which saves an allocation and,
/// on every lookup, the cache miss of following a pointer to it.
pub type InlineBytes = smallvec::SmallVec<[u8; 16]>;
pub use shard::{ExpiringShards, Shard};
pub use watch::WatchFlag;

use parking_lot::RwLock;

/// Shards per database. A power of two; SCAN walks one shard per cursor step,
/// so this also bounds how many steps a full SCAN takes.
pub const SHARDS: usize = 256;

/// One numbered database (`SELECT n`): a fixed array of locked shards.
pub struct Db {
    shards: Box<[RwLock<Shard>]>,
    expiring: std::sync::Arc<ExpiringShards>,
}

impl Default for Db {
    fn default() -> Self {
        let expiring = std::sync::Arc::new(ExpiringShards::default());
        Db {
            shards: (0..SHARDS)
                .map(|i| RwLock::new(Shard::in_db(expiring.clone(), i)))
                .collect(),
            expiring,
        }
    }
}

impl Db {
    /// Which shard holds `key`.
    #[inline]
    pub fn shard_index(key: &[u8]) -> usize {
        (xxhash_rust::xxh3::xxh3_64(key) as usize) & (SHARDS - 1)
    }

    #[inline]
    pub fn shard(&self, index: usize) -> &RwLock<Shard> {
        &self.shards[index]
    }

    pub fn shards(&self) -> &[RwLock<Shard>] {
        &self.shards
    }

    /// The shards that may hold keys with a TTL.
    pub fn expiring(&self) -> &ExpiringShards {
        &self.expiring
    }

    /// Number of keys, counting expired keys not yet reclaimed (as Redis does).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.read().len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.shards.iter().all(|s| s.read().len() == 0)
    }

    /// Number of keys with a time to live.
    pub fn expires_len(&self) -> usize {
        self.shards.iter().map(|s| s.read().expires_len()).sum()
    }
}
