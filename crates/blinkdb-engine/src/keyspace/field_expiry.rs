//! Hash-field expiration in a shard (issue 43): the index of hashes with
//! field TTLs by their earliest one, and the active cycle's pass over it.
//!
//! The index is kept loosely, so that no path that drops or replaces a key
//! has to know of it: an item is added when a hash gains an earlier TTL
//! (insert, or a change in place through `Shard::modify`), never removed
//! there. The cycle checks every item it pops against the key's hash as it
//! is now: a key gone or without TTLs drops the item, one whose earliest
//! TTL moved later goes back under that time (the index is a set, so
//! duplicates of a key meet there and merge).

use super::entry::{Entry, Value};
use super::key_hash;
use super::shard::{Key, Shard};
use crate::types::Member;

/// A lower bound of the earliest field TTL of `entry`'s hash, 0 exactly
/// when it has none (or is no hash): exact after a walk (`expire_due`).
#[inline]
pub(super) fn min_field_expire(entry: &Entry) -> u64 {
    match entry.value() {
        Value::Hash(h, _) if h.has_ttls() => h.min_expire(),
        _ => 0,
    }
}

/// Fields one pass removed from one hash.
pub struct ExpiredFields {
    pub key: Key,
    pub fields: Vec<Member>,
    /// The last field went, and the key with it.
    pub key_removed: bool,
}

impl Shard {
    /// Files `key` under its hash's earliest TTL when that moved earlier.
    #[inline]
    pub(super) fn index_field_ttls(&mut self, key: &[u8], old_min: u64, new_min: u64) {
        if new_min != 0 && (old_min == 0 || new_min < old_min) {
            self.hexpires.insert((new_min, Key::from(key)));
            self.note_expiring();
        }
    }

    /// Removes the fields expired before `now` from up to `max` hashes
    /// whose earliest TTL is due, deleting a hash its last field left.
    pub fn expire_fields_due(&mut self, now: u64, max: usize) -> Vec<ExpiredFields> {
        let mut out = Vec::new();
        while out.len() < max {
            match self.hexpires.first() {
                Some((at, _)) if *at < now => {}
                _ => break,
            }
            let (_, key) = self.hexpires.pop_first().expect("first exists");
            let hash = key_hash(&key);
            let Some(e) = self.map.get_mut(&key, || hash) else {
                continue;
            };
            let min = min_field_expire(e);
            if min == 0 {
                continue;
            }
            if min >= now {
                self.hexpires.insert((min, key));
                continue;
            }
            let before = e.accounted_bytes(&key);
            let Value::Hash(h, _) = e.value_mut() else {
                unreachable!("min_field_expire saw a hash")
            };
            let fields = h.expire_due(now, usize::MAX);
            let (empty, next) = (h.is_empty(), h.min_expire());
            self.bytes = self.bytes - before + e.accounted_bytes(&key);
            if fields.is_empty() {
                // The bound was stale (the earliest TTL went or moved later
                // since): nothing expired, so nothing to tell WATCH, the
                // log or the events. The walk made it exact; file it again.
                if next != 0 {
                    self.hexpires.insert((next, key));
                } else {
                    self.field_ttl_keys -= 1;
                }
                continue;
            }
            if empty {
                // Counted out here: remove_hashed sees no TTL left.
                self.field_ttl_keys -= 1;
                self.remove_hashed(&key, hash);
            } else {
                self.touched(&key, true);
                if next != 0 {
                    self.hexpires.insert((next, key.clone()));
                } else {
                    self.field_ttl_keys -= 1;
                }
            }
            out.push(ExpiredFields {
                key,
                fields,
                key_removed: empty,
            });
        }
        out
    }
}
