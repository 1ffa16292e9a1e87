//! The in-memory index: entries, shards and the per-database shard array.

pub mod access;
mod chunk;
mod dense;
mod entry;
mod expires;
mod field_expiry;
mod positions;
mod shard;
pub mod slots;
mod watch;

pub use chunk::mapped_bytes as table_mapped_bytes;
pub use entry::{Entry, Meta, Origin, Value};
pub use field_expiry::ExpiredFields;

/// A byte string stored inline up to 16 bytes (24 bytes in all), on the heap
/// beyond. Most keys and small values fit, which saves an allocation and,
/// on every lookup, the cache miss of following a pointer to it.
pub type InlineBytes = smallvec::SmallVec<[u8; 16]>;
pub use shard::{DbBits, Shard, ShardBits};
pub use watch::WatchFlag;

use parking_lot::RwLock;

/// Shards per database. A power of two; SCAN walks one shard per cursor step,
/// so this also bounds how many steps a full SCAN takes.
pub const SHARDS: usize = 1 << SHARD_BITS;
/// The bits of a key's hash that pick its shard: the lowest ones.
pub const SHARD_BITS: u32 = 8;

/// A key's hash, computed once per access: its low `SHARD_BITS` pick the
/// shard, the others place the key in the shard's table (positions.rs).
/// Hashing once for both saved a second hash function's run per lookup (a
/// GET hashed its key twice, a SET four times). Seeded at random per
/// process, so that nobody can choose keys that collide in a table.
#[inline]
pub fn key_hash(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(key, *KEY_SEED)
}

static KEY_SEED: std::sync::LazyLock<u64> = std::sync::LazyLock::new(|| {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64)
});

/// One numbered database (`SELECT n`): a fixed array of locked shards.
pub struct Db {
    shards: Box<[RwLock<Shard>]>,
    bits: std::sync::Arc<DbBits>,
}

impl Default for Db {
    fn default() -> Self {
        let bits = std::sync::Arc::new(DbBits::default());
        Db {
            shards: (0..SHARDS)
                .map(|i| RwLock::new(Shard::in_db(bits.clone(), i)))
                .collect(),
            bits,
        }
    }
}

/// A database's index and its memory (MEMORY STATS `db.N`).
#[derive(Debug, Default, Clone, Copy)]
pub struct DbOverhead {
    pub keys: usize,
    pub expires: usize,
    pub main_bytes: usize,
    pub expires_bytes: usize,
}

impl Db {
    /// Which shard holds `key`.
    #[inline]
    pub fn shard_index(key: &[u8]) -> usize {
        Self::shard_of(key_hash(key))
    }

    /// Which shard holds the key whose `key_hash` is `hash`.
    #[inline]
    pub fn shard_of(hash: u64) -> usize {
        (hash as usize) & (SHARDS - 1)
    }

    #[inline]
    pub fn shard(&self, index: usize) -> &RwLock<Shard> {
        &self.shards[index]
    }

    pub fn shards(&self) -> &[RwLock<Shard>] {
        &self.shards
    }

    /// The shards that may hold keys with a TTL.
    pub fn expiring(&self) -> &ShardBits {
        &self.bits.expiring
    }

    /// The shards whose index of hashes with field TTLs may hold items.
    pub fn field_expiring(&self) -> &ShardBits {
        &self.bits.field_expiring
    }

    /// The shards holding keys (their locks only: an empty shard is skipped
    /// without touching its lock).
    pub fn occupied_shards(&self) -> impl Iterator<Item = &RwLock<Shard>> {
        self.bits.occupied.raised().map(|i| &self.shards[i])
    }

    /// Number of keys, counting expired keys not yet reclaimed (as Redis does).
    pub fn len(&self) -> usize {
        self.occupied_shards().map(|s| s.read().len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.occupied_shards().all(|s| s.read().len() == 0)
    }

    /// Keys, keys with a TTL, and the index's memory for each (see
    /// `Shard::table_bytes`), summed over the shards holding keys.
    pub fn overhead(&self) -> DbOverhead {
        self.occupied_shards()
            .fold(DbOverhead::default(), |mut o, s| {
                let s = s.read();
                let (main, expires) = s.table_bytes();
                o.keys += s.len();
                o.expires += s.expires_len();
                o.main_bytes += main;
                o.expires_bytes += expires;
                o
            })
    }

    /// Hashes with at least one field TTL (INFO keyspace's `subexpiry`).
    pub fn field_ttl_keys(&self) -> usize {
        self.occupied_shards()
            .map(|s| s.read().field_ttl_keys())
            .sum()
    }

    /// Keys with a TTL, and their mean time to live in ms at `now` (0 with none,
    /// or when they are all due): INFO keyspace's `expires` and `avg_ttl`.
    pub fn expires_and_avg_ttl(&self, now: u64) -> (usize, u64) {
        let (n, sum) = self.occupied_shards().fold((0usize, 0u128), |(n, sum), s| {
            let s = s.read();
            (n + s.expires_len(), sum + s.expires_sum_ms())
        });
        let mean = if n == 0 { 0 } else { (sum / n as u128) as u64 };
        (n, mean.saturating_sub(now))
    }
}
