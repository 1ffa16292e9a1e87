//! One shard: a hash map of keys plus an ordered index of expiry times.

use super::dense::DenseMap;
use super::expires::Expires;
use super::slots::SlotIndex;
use super::watch::{WatchFlag, Watchers};
use super::{key_hash, Entry};
use std::sync::Arc;

/// Keys are binary-safe byte strings; short ones live inside the table slot.
pub type Key = super::InlineBytes;

#[derive(Default)]
pub struct Shard {
    /// The rewrite epoch whose snapshot already holds this shard.
    pub snapshot_epoch: u64,
    /// Keys a writer already copied into rewrite `preimage_epoch`'s base before
    /// changing them, ahead of the shard's own copy (which skips them).
    preimage_epoch: u64,
    preimaged: hashbrown::HashSet<Key>,
    pub(super) map: DenseMap,
    // Ordered by time so the active expiry cycle pops due keys in O(log n)
    // instead of sampling; keys with a TTL are stored twice, a known cost.
    expires: Expires,
    /// Hashes with field TTLs by (earliest field TTL, key), for the active
    /// cycle (`field_expiry.rs`). Items may be stale (the key deleted, its
    /// earliest TTL moved later): the cycle checks each it pops.
    pub(super) hexpires: Expires,
    /// Hashes with at least one field TTL, exactly (INFO keyspace's
    /// `subexpiry`): kept by every path that adds, changes or drops an
    /// entry, as `bytes` is.
    pub(super) field_ttl_keys: usize,
    /// Sum of `Entry::accounted_bytes` over the map (cache mode's memory measure).
    pub(super) bytes: usize,
    /// Clients watching keys of this shard (WATCH); None while nobody does.
    watchers: Option<Box<Watchers>>,
    /// Keys by cluster slot, kept in cluster mode only (db 0's shards
    /// share it).
    slots: Option<Arc<SlotIndex>>,
    /// This shard's bits in its database's sets (None for a detached copy).
    bits: Option<(Arc<DbBits>, usize)>,
}

/// One bit per shard of a database, read without the shards' locks. Walking
/// 4096 shard locks (16 databases of 256) is a cache miss each: 10 times a
/// second it was over 1% of a busy cluster node's CPU, and it made INFO cost
/// 4x Redis's. Two sets per database (`DbBits`):
/// - `expiring`, the shards that may hold keys with a TTL, which the active
///   expiry cycle visits. Raised by the shard under its write lock when it
///   gains an expiry; cleared by the cycle under the shard's read lock once
///   its expiries are gone, so no writer can slip between.
/// - `occupied`, the shards that hold keys, which DBSIZE, INFO keyspace and
///   INFO memory visit. Raised and cleared by the shard under its write lock
///   as its map stops or starts being empty.
#[derive(Default)]
pub struct ShardBits([std::sync::atomic::AtomicU64; super::SHARDS / 64]);

#[derive(Default)]
pub struct DbBits {
    pub expiring: ShardBits,
    pub occupied: ShardBits,
    /// The shards whose index of hashes with field TTLs may hold items,
    /// which the field cycle merges (`Engine::active_expire_fields`): raised
    /// under the shard's write lock as an item goes in, cleared by the cycle
    /// under its read lock once the index is empty.
    pub field_expiring: ShardBits,
}

impl ShardBits {
    pub fn may_hold(&self, shard: usize) -> bool {
        self.0[shard / 64].load(std::sync::atomic::Ordering::Acquire) & (1 << (shard % 64)) != 0
    }

    /// The shards whose bits are up, in order.
    pub fn raised(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(w, word)| {
            let mut bits = word.load(std::sync::atomic::Ordering::Acquire);
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let b = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    w * 64 + b
                })
            })
        })
    }

    /// The first shard in `from..to` whose bit is up, a word of 64 shards
    /// at a time.
    pub fn next_raised(&self, from: usize, to: usize) -> Option<usize> {
        let mut i = from;
        while i < to {
            let word = self.0[i / 64].load(std::sync::atomic::Ordering::Acquire) >> (i % 64);
            if word != 0 {
                let s = i + word.trailing_zeros() as usize;
                return (s < to).then_some(s);
            }
            i = (i / 64 + 1) * 64;
        }
        None
    }

    fn raise(&self, shard: usize) {
        let word = &self.0[shard / 64];
        let bit = 1 << (shard % 64);
        // Read first: keys with TTLs keep coming to a shard whose bit is up,
        // and a load leaves the cache line shared.
        if word.load(std::sync::atomic::Ordering::Relaxed) & bit == 0 {
            word.fetch_or(bit, std::sync::atomic::Ordering::Release);
        }
    }

    /// Clears `shard`'s bit: under its lock, once what the set tracks is gone.
    pub fn clear(&self, shard: usize) {
        self.0[shard / 64].fetch_and(!(1 << (shard % 64)), std::sync::atomic::Ordering::Release);
    }
}

impl Shard {
    /// Shard `index` of the database whose bits are `bits`.
    pub fn in_db(bits: Arc<DbBits>, index: usize) -> Self {
        Shard {
            bits: Some((bits, index)),
            ..Shard::default()
        }
    }

    /// Raises this shard's TTL bit if it holds keys with a TTL, and its
    /// field-TTL bit if its index of hashes with field TTLs has items.
    pub(super) fn note_expiring(&self) {
        if let Some((bits, i)) = &self.bits {
            if !self.expires.is_empty() {
                bits.expiring.raise(*i);
            }
            if !self.hexpires.is_empty() {
                bits.field_expiring.raise(*i);
            }
        }
    }

    /// The time of the first item of the index of hashes with field TTLs
    /// (an item may be stale: its hash gone or due later).
    pub fn first_field_due(&self) -> Option<u64> {
        self.hexpires.first().map(|(at, _)| *at)
    }

    /// Sets this shard's occupied bit to whether it holds keys.
    fn note_occupied(&self) {
        if let Some((bits, i)) = &self.bits {
            if self.map.is_empty() {
                bits.occupied.clear(*i);
            } else {
                bits.occupied.raise(*i);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn expires_len(&self) -> usize {
        self.expires.len()
    }

    /// Items in the index of hashes with field TTLs (stale ones included).
    pub fn field_expires_len(&self) -> usize {
        self.hexpires.len()
    }

    /// Hashes with at least one field TTL (expired or not).
    pub fn field_ttl_keys(&self) -> usize {
        self.field_ttl_keys
    }

    /// The sum of the keys' expiry times in ms (with `expires_len`, their mean).
    pub fn expires_sum_ms(&self) -> u128 {
        self.expires.sum_ms
    }

    /// Memory the entries account for (see `Entry::accounted_bytes`).
    pub fn accounted_bytes(&self) -> usize {
        self.bytes
    }

    /// The key table's bytes per key (MEMORY USAGE's share of it).
    pub fn slot_share(&self) -> usize {
        self.map.allocation_size() / self.map.len().max(1)
    }

    /// The index's own memory, as MEMORY STATS's `overhead.hashtable.*`:
    /// the key table (slots holding short keys inline and the entries, plus
    /// a control byte each), and the expiry index (keyspace/expires.rs).
    pub fn table_bytes(&self) -> (usize, usize) {
        (
            self.map.allocation_size(),
            self.expires.bytes() + self.hexpires.bytes(),
        )
    }

    /// The entry for `key` if present and not expired at `now`.
    #[inline]
    pub fn get(&self, key: &[u8], now: u64) -> Option<&Entry> {
        self.map
            .get(key, key_hash(key))
            .filter(|e| !e.is_expired(now))
    }

    /// The entry for `key` whether or not it has expired.
    #[inline]
    pub fn get_any(&self, key: &[u8]) -> Option<&Entry> {
        self.get_hashed(key, key_hash(key))
    }

    /// `get_any` of a key whose `key_hash` the caller has.
    #[inline]
    pub fn get_hashed(&self, key: &[u8], hash: u64) -> Option<&Entry> {
        self.map.get(key, hash)
    }

    /// The entry for `key` (`hash` its `key_hash`) whether or not it has
    /// expired, its position kept as the hint for the write that follows.
    #[inline]
    pub fn get_for_write(&mut self, key: &[u8], hash: u64) -> Option<&Entry> {
        let i = self.map.locate(key, || hash)?;
        Some(self.map.entry(i))
    }

    /// Like `get`, but removes an expired entry it finds (lazy expiry).
    /// Returns the entry and whether a key expired. `hash` is the key's
    /// `key_hash`. The key's position stays the map's hint, so the write's
    /// next access to it does not probe again.
    pub fn get_mut(&mut self, key: &[u8], hash: u64, now: u64) -> (Option<&mut Entry>, bool) {
        let Some(i) = self.map.locate(key, || hash) else {
            return (None, false);
        };
        // Every key with a TTL is in `expires`.
        if !self.expires.is_empty() && self.map.entry(i).is_expired(now) {
            self.remove_hashed(key, hash);
            return (None, true);
        }
        let entry = self.map.entry_mut(i);
        debug_assert!(entry.expire_at == 0 || !self.expires.is_empty());
        (Some(entry), false)
    }

    /// Runs `f` on the bytes of the in-memory string at `key` (expired or
    /// not), in place, keeping the memory count right if its length changes.
    /// None: no such key, or not an in-memory string.
    pub fn with_str_mut<R>(
        &mut self,
        key: &[u8],
        f: impl FnOnce(&mut super::InlineBytes) -> R,
    ) -> Option<R> {
        let entry = self.map.get_mut(key, || key_hash(key))?;
        let before = entry.accounted_bytes(key);
        let r = f(entry.str_mut()?);
        self.bytes = self.bytes - before + entry.accounted_bytes(key);
        Some(r)
    }

    /// Makes room for `additional` more keys without growing the table
    /// step by step (an RDB load knows each shard's count before inserting).
    pub fn reserve(&mut self, additional: usize) {
        self.map.reserve(additional);
    }

    /// Inserts or replaces; returns the previous entry (expired or not).
    pub fn insert(&mut self, key: &[u8], entry: Entry) -> Option<Entry> {
        self.insert_signaled(key, key_hash(key), entry, true)
    }

    /// `insert` of a key whose `key_hash` is `hash`, telling WATCH of the
    /// change only if `signal`.
    pub fn insert_signaled(
        &mut self,
        key: &[u8],
        hash: u64,
        entry: Entry,
        signal: bool,
    ) -> Option<Entry> {
        let at = entry.expire_at;
        self.bytes += entry.accounted_bytes(key);
        let min = super::field_expiry::min_field_expire(&entry);
        self.field_ttl_keys += usize::from(min != 0);
        self.index_field_ttls(key, 0, min);
        // One probe of the table (a get_mut then an insert took two: a
        // fifth of an RDB load's inserting thread), none after a lookup.
        let old = self.map.insert(key, || hash, entry);
        if old.is_none() {
            if let Some(ix) = &self.slots {
                ix.add(key);
            }
            if let Some((bits, i)) = &self.bits {
                bits.occupied.raise(*i);
            }
        }
        if signal {
            self.touched(key, true);
        }
        let old_at = old.as_ref().map_or(0, |e| e.expire_at);
        if let Some(o) = &old {
            self.bytes -= o.accounted_bytes(key);
            self.field_ttl_keys -= usize::from(super::field_expiry::min_field_expire(o) != 0);
        }
        if old_at != at {
            if old_at != 0 {
                self.expires.remove(&(old_at, Key::from(key)));
            }
            if at != 0 {
                self.expires.insert((at, key.into()));
                self.note_expiring();
            }
        }
        old
    }

    /// Runs `f` on `key`'s entry and re-counts its memory after. `f` may
    /// change the value in place but not the expiry (`set_expire` does).
    pub fn modify<R>(&mut self, key: &[u8], f: impl FnOnce(&mut Entry) -> R) -> Option<R> {
        let e = self.map.get_mut(key, || key_hash(key))?;
        let before = e.accounted_bytes(key);
        let at = e.expire_at;
        let old_min = super::field_expiry::min_field_expire(e);
        let r = f(e);
        debug_assert_eq!(at, e.expire_at, "modify changed an expiry");
        self.bytes = self.bytes - before + e.accounted_bytes(key);
        let new_min = super::field_expiry::min_field_expire(e);
        self.field_ttl_keys =
            self.field_ttl_keys + usize::from(new_min != 0) - usize::from(old_min != 0);
        self.index_field_ttls(key, old_min, new_min);
        Some(r)
    }

    /// Removes `key` whatever its expiry state.
    pub fn remove_any(&mut self, key: &[u8]) -> Option<Entry> {
        self.remove_hashed(key, key_hash(key))
    }

    /// `remove_any` of a key whose `key_hash` is `hash`.
    pub fn remove_hashed(&mut self, key: &[u8], hash: u64) -> Option<Entry> {
        let old = self.map.remove(key, hash)?;
        if let Some(ix) = &self.slots {
            ix.remove(key);
        }
        if self.map.is_empty() {
            self.note_occupied();
        }
        self.shrink_if_sparse();
        self.touched(key, false);
        self.bytes -= old.accounted_bytes(key);
        self.field_ttl_keys -= usize::from(super::field_expiry::min_field_expire(&old) != 0);
        if old.expire_at != 0 {
            self.expires.remove(&(old.expire_at, Key::from(key)));
        }
        Some(old)
    }

    /// Changes the expiry of an existing key (0 clears it).
    pub fn set_expire(&mut self, key: &[u8], at: u64) -> bool {
        let Some(entry) = self.map.get_mut(key, || key_hash(key)) else {
            return false;
        };
        self.bytes -= entry.accounted_bytes(key);
        let old_at = std::mem::replace(&mut entry.expire_at, at);
        self.bytes += entry.accounted_bytes(key);
        self.touched(key, true);
        if old_at != at {
            if old_at != 0 {
                self.expires.remove(&(old_at, Key::from(key)));
            }
            if at != 0 {
                self.expires.insert((at, key.into()));
                self.note_expiring();
            }
        }
        true
    }

    /// Removes up to `max` keys whose time has come. Returns the keys removed.
    pub fn expire_due(&mut self, now: u64, max: usize) -> Vec<Key> {
        let mut removed = Vec::new();
        while removed.len() < max {
            let Some((at, _)) = self.expires.first() else {
                break;
            };
            if *at > now {
                break;
            }
            let (_, key) = self.expires.pop_first().expect("first exists");
            if let Some(old) = self.map.remove(&key, key_hash(&key)) {
                if let Some(ix) = &self.slots {
                    ix.remove(&key);
                }
                self.bytes -= old.accounted_bytes(&key);
                self.field_ttl_keys -=
                    usize::from(super::field_expiry::min_field_expire(&old) != 0);
                self.touched(&key, false);
            }
            removed.push(key);
        }
        if !removed.is_empty() {
            self.note_occupied();
            self.shrink_if_sparse();
        }
        removed
    }

    /// Gives the key table's memory back once it is at most 1/8 full, as
    /// Redis resizes a dict under 10% fill: keys and values held inline free
    /// nothing by themselves, so without this deleting (or evicting) them
    /// left used_memory where it was. Shrinks to twice the keys, so that a
    /// table refilling does not shrink and grow in turn.
    fn shrink_if_sparse(&mut self) {
        let cap = self.map.capacity();
        if cap > 0 && self.map.len() <= cap / 8 {
            self.map.shrink_to(self.map.len() * 2);
        }
    }

    /// Records that `key`'s value as of rewrite `epoch`'s start has been taken care
    /// of; false if it already was.
    pub fn mark_preimaged(&mut self, key: &[u8], epoch: u64) -> bool {
        if self.preimage_epoch != epoch {
            self.preimaged.clear();
            self.preimage_epoch = epoch;
        }
        if self.preimaged.contains(key) {
            return false;
        }
        self.preimaged.insert(Key::from_slice(key))
    }

    /// The keys marked for rewrite `epoch` (empty for any other), handed over once:
    /// the shard's own copy skips them.
    pub fn take_preimaged(&mut self, epoch: u64) -> hashbrown::HashSet<Key> {
        let marked = std::mem::take(&mut self.preimaged);
        if self.preimage_epoch == epoch {
            marked
        } else {
            hashbrown::HashSet::new()
        }
    }

    pub fn clear(&mut self) {
        self.touch_all();
        self.unindex_all();
        self.map = DenseMap::default();
        self.expires = Expires::default();
        self.hexpires = Expires::default();
        self.field_ttl_keys = 0;
        self.bytes = 0;
        self.note_occupied();
    }

    /// Removes every entry `evict` picks, returning them with their keys.
    pub fn evict_where(&mut self, mut evict: impl FnMut(&Entry) -> bool) -> Vec<(Key, Entry)> {
        let victims: Vec<Key> = self
            .map
            .iter()
            .filter(|(_, e)| evict(e))
            .map(|(k, _)| k.clone())
            .collect();
        victims
            .into_iter()
            .filter_map(|k| {
                let e = self.remove_any(&k)?;
                Some((k, e))
            })
            .collect()
    }

    /// Points `key` at a blob's new location if it still holds `old`.
    pub fn swap_blob(&mut self, key: &[u8], old: &crate::aof::BlobRef, new: crate::aof::BlobRef) {
        if let Some(e) = self.map.get_mut(key, || key_hash(key)) {
            if matches!(e.value(), crate::keyspace::Value::Blob(r, _) if **r == *old) {
                // Same bytes elsewhere: the label stays.
                e.set_value(crate::keyspace::Value::blob(new));
            }
        }
    }

    /// Moves the entries out (lazy FLUSHALL frees them elsewhere), touching
    /// their watchers; the rewrite snapshot mark and the watchers stay.
    pub fn take_entries(&mut self) -> Shard {
        self.touch_all();
        self.unindex_all();
        let taken = Shard {
            map: std::mem::take(&mut self.map),
            expires: std::mem::take(&mut self.expires),
            hexpires: std::mem::take(&mut self.hexpires),
            field_ttl_keys: std::mem::take(&mut self.field_ttl_keys),
            bytes: std::mem::take(&mut self.bytes),
            preimaged: std::mem::take(&mut self.preimaged),
            ..Shard::default()
        };
        self.note_occupied();
        taken
    }

    /// Puts back entries `take_entries` moved out, returning those held
    /// now; watchers see both sides' keys as changed, the slot index
    /// follows the keys.
    pub fn put_entries(&mut self, saved: Shard) -> Shard {
        let current = self.take_entries();
        self.map = saved.map;
        self.expires = saved.expires;
        self.hexpires = saved.hexpires;
        self.field_ttl_keys = saved.field_ttl_keys;
        self.note_expiring();
        self.note_occupied();
        self.bytes = saved.bytes;
        if let Some(ix) = &self.slots {
            self.map.keys().for_each(|k| ix.add(k));
        }
        self.touch_all();
        current
    }

    /// Swaps the entries with another database's same shard (SWAPDB): watchers
    /// stay with their database and see both sides' keys as changed, except
    /// where an expired key meets no key or another expired key (`now`).
    pub fn swap_entries(&mut self, other: &mut Shard, now: u64) {
        fn touch_either(a: &mut Shard, theirs: &DenseMap, now: u64) {
            if let Some(w) = a.watchers.as_mut() {
                let mine = &a.map;
                w.touch_swapped(
                    |k| mine.contains_key(k, key_hash(k)),
                    |k| theirs.get(k, key_hash(k)).map(|e| e.is_expired(now)),
                );
            }
        }
        touch_either(self, &other.map, now);
        touch_either(other, &self.map, now);
        // The slot index (db 0 only) follows the keys.
        for (a, b) in [(&*self, &*other), (&*other, &*self)] {
            if let Some(ix) = &a.slots {
                a.map.keys().for_each(|k| ix.remove(k));
                b.map.keys().for_each(|k| ix.add(k));
            }
        }
        std::mem::swap(&mut self.map, &mut other.map);
        std::mem::swap(&mut self.expires, &mut other.expires);
        std::mem::swap(&mut self.hexpires, &mut other.hexpires);
        std::mem::swap(&mut self.field_ttl_keys, &mut other.field_ttl_keys);
        std::mem::swap(&mut self.bytes, &mut other.bytes);
        self.note_expiring();
        other.note_expiring();
        self.note_occupied();
        other.note_occupied();
    }

    /// Keeps keys by cluster slot in `ix` (cluster mode) once it records
    /// (`SlotIndex::build`).
    pub fn enable_slot_index(&mut self, ix: Arc<SlotIndex>) {
        self.slots = Some(ix);
    }

    /// Adds this shard's keys to its slot index (the index's build).
    pub fn index_slots(&self) {
        if let Some(ix) = &self.slots {
            for k in self.map.keys() {
                ix.add(k);
            }
        }
    }

    fn unindex_all(&mut self) {
        if let Some(ix) = &self.slots {
            for k in self.map.keys() {
                ix.remove(k);
            }
        }
    }

    /// db 0's slot index, in cluster mode.
    pub fn slot_index(&self) -> Option<&Arc<SlotIndex>> {
        self.slots.as_ref()
    }

    fn touch_all(&mut self) {
        if let Some(w) = self.watchers.as_mut() {
            let map = &self.map;
            w.touch_present(|k| map.contains_key(k, key_hash(k)));
        }
    }

    #[inline]
    pub(super) fn touched(&mut self, key: &[u8], exists: bool) {
        if let Some(w) = self.watchers.as_mut() {
            w.touch(key, exists);
            if w.is_empty() {
                self.watchers = None;
            }
        }
    }

    /// A value changed in place (not through insert/remove).
    pub fn touch(&mut self, key: &[u8]) {
        if self.watchers.is_some() {
            let exists = self.map.locate(key, || key_hash(key)).is_some();
            self.touched(key, exists);
        }
    }

    /// WATCH `key` for `flag` (marking whether it was already expired).
    pub fn watch(&mut self, key: &[u8], flag: &Arc<WatchFlag>, now: u64) {
        let expired = self.get_any(key).is_some_and(|e| e.is_expired(now));
        self.watchers
            .get_or_insert_with(Default::default)
            .add(key, flag, expired);
    }

    pub fn unwatch(&mut self, key: &[u8], flag: &Arc<WatchFlag>) {
        if let Some(w) = self.watchers.as_mut() {
            w.remove(key, flag);
            if w.is_empty() {
                self.watchers = None;
            }
        }
    }

    /// Whether a key `flag` watched while live has expired since (EXEC fails
    /// then, even if nothing deleted it yet: Redis 7.0's rule).
    pub fn watched_key_expired(&self, key: &[u8], flag: &Arc<WatchFlag>, now: u64) -> bool {
        self.watchers
            .as_ref()
            .is_some_and(|w| w.watched_live(key, flag))
            && self.get_any(key).is_some_and(|e| e.is_expired(now))
    }

    /// Keys with a time to live, nearest expiry first.
    pub fn expiring_keys(&self) -> impl Iterator<Item = &Key> {
        self.expires.iter().map(|(_, k)| k)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Key, &Entry)> {
        self.map.iter()
    }

    /// The `n`-th entry in iteration order (RANDOMKEY).
    pub fn nth(&self, n: usize) -> Option<(&Key, &Entry)> {
        self.map.nth(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_index_follows_entries() {
        let mut s = Shard::default();
        let mut e = Entry::string(&b"v"[..]);
        e.expire_at = 100;
        s.insert(b"a", e.clone());
        assert_eq!(s.expires_len(), 1);
        e.expire_at = 200;
        s.insert(b"a", e);
        assert_eq!(s.expires_len(), 1);
        assert!(s.get(b"a", 150).is_some());
        assert!(s.get(b"a", 200).is_none());
        assert!(s.get(b"a", 0).is_some(), "now=0 never expires");
        assert_eq!(s.expire_due(250, 10).len(), 1);
        assert_eq!(s.len(), 0);
        assert_eq!(s.expires_len(), 0);
    }

    #[test]
    fn set_expire_and_lazy_removal() {
        let mut s = Shard::default();
        s.insert(b"k", Entry::string(&b"v"[..]));
        assert!(s.set_expire(b"k", 10));
        assert_eq!(s.expires_len(), 1);
        let (e, expired) = s.get_mut(b"k", key_hash(b"k"), 11);
        assert!(e.is_none() && expired);
        assert_eq!(s.len(), 0);
        assert_eq!(s.expires_len(), 0);
    }

    #[test]
    fn expiring_bit_rises_with_every_way_in() {
        let db = Arc::new(DbBits::default());
        let bits = &db.expiring;
        let mut s = Shard::in_db(db.clone(), 70);
        s.insert(b"k", Entry::string(&b"v"[..]));
        assert!(!bits.may_hold(70), "no TTL yet");
        assert!(s.set_expire(b"k", 10));
        assert!(bits.may_hold(70) && !bits.may_hold(6) && !bits.may_hold(71));
        bits.clear(70);
        let mut e = Entry::string(&b"v"[..]);
        e.expire_at = 100;
        s.insert(b"a", e);
        assert!(bits.may_hold(70), "insert with a TTL");
        // SWAPDB: the shard receiving the expiries raises its own bit.
        let other_db = Arc::new(DbBits::default());
        let other_bits = &other_db.expiring;
        let mut other = Shard::in_db(other_db.clone(), 3);
        s.swap_entries(&mut other, 0);
        assert!(other_bits.may_hold(3));
        // Entries put back after a failed load.
        let saved = other.take_entries();
        other_bits.clear(3);
        other.put_entries(saved);
        assert!(other_bits.may_hold(3));
    }

    #[test]
    fn next_raised_finds_the_first_bit_up_in_a_range() {
        let bits = ShardBits::default();
        assert_eq!(bits.next_raised(0, super::super::SHARDS), None);
        for s in [3, 63, 64, 200, 255] {
            bits.raise(s);
        }
        assert_eq!(bits.next_raised(0, 256), Some(3));
        assert_eq!(bits.next_raised(3, 256), Some(3));
        assert_eq!(bits.next_raised(4, 256), Some(63));
        assert_eq!(bits.next_raised(64, 256), Some(64));
        assert_eq!(bits.next_raised(65, 200), None, "the end is excluded");
        assert_eq!(bits.next_raised(65, 201), Some(200));
        assert_eq!(bits.next_raised(201, 256), Some(255));
        assert_eq!(bits.next_raised(10, 10), None);
    }

    #[test]
    fn occupied_bit_follows_every_way_in_and_out() {
        let db = Arc::new(DbBits::default());
        let bits = &db.occupied;
        let mut s = Shard::in_db(db.clone(), 130);
        assert_eq!(bits.raised().count(), 0);
        s.insert(b"k", Entry::string(&b"v"[..]));
        s.insert(b"j", Entry::string(&b"v"[..]));
        assert_eq!(bits.raised().collect::<Vec<_>>(), vec![130]);
        s.remove_any(b"k");
        assert!(bits.may_hold(130), "one key left");
        s.remove_any(b"j");
        assert!(!bits.may_hold(130));
        let mut e = Entry::string(&b"v"[..]);
        e.expire_at = 10;
        s.insert(b"t", e);
        assert!(bits.may_hold(130));
        assert_eq!(s.expire_due(11, 10).len(), 1);
        assert!(!bits.may_hold(130), "expired away");
        s.insert(b"k", Entry::string(&b"v"[..]));
        let saved = s.take_entries();
        assert!(!bits.may_hold(130));
        s.put_entries(saved);
        assert!(bits.may_hold(130));
        let other_db = Arc::new(DbBits::default());
        let mut other = Shard::in_db(other_db.clone(), 5);
        s.swap_entries(&mut other, 0);
        assert!(!bits.may_hold(130) && other_db.occupied.may_hold(5));
        other.clear();
        assert!(!other_db.occupied.may_hold(5));
    }

    #[test]
    fn expiry_sum_follows_ttl_changes() {
        let mut s = Shard::default();
        let with_ttl = |at| {
            let mut e = Entry::string(&b"v"[..]);
            e.expire_at = at;
            e
        };
        s.insert(b"a", with_ttl(1000));
        s.insert(b"b", with_ttl(3000));
        assert_eq!((s.expires_len(), s.expires_sum_ms()), (2, 4000));
        s.insert(b"a", with_ttl(2000)); // replaced
        assert!(s.set_expire(b"b", 5000));
        assert_eq!(s.expires_sum_ms(), 7000);
        assert!(s.set_expire(b"b", 0)); // PERSIST
        assert_eq!((s.expires_len(), s.expires_sum_ms()), (1, 2000));
        s.remove_any(b"a");
        assert_eq!(s.expires_sum_ms(), 0);
        s.insert(b"c", with_ttl(50));
        assert_eq!(s.expire_due(60, 10).len(), 1);
        assert_eq!((s.expires_len(), s.expires_sum_ms()), (0, 0));
    }
}
