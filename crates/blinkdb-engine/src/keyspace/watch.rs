//! WATCH: which clients watch which keys of a shard, and marking them dirty
//! when a key changes. It lives in the shard so that a writer, which already
//! holds the shard's lock, finds a key's watchers without another lock; a
//! shard nobody watches pays one `None` check per change.

use super::shard::Key;
use hashbrown::HashMap;
use smallvec::SmallVec;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

/// One client's WATCH state, shared with the shards of the keys it watches.
#[derive(Debug, Default)]
pub struct WatchFlag {
    dirty: AtomicBool,
}

impl WatchFlag {
    /// Whether a watched key changed since WATCH (EXEC must fail).
    pub fn is_dirty(&self) -> bool {
        self.dirty.load(Ordering::Acquire)
    }

    fn set_dirty(&self) {
        self.dirty.store(true, Ordering::Release);
    }
}

struct Watcher {
    /// Weak: a client that goes away without UNWATCH (a panic) leaves an entry
    /// that the next change of the key drops.
    flag: Weak<WatchFlag>,
    /// The key existed but had expired when WATCH ran: deleting it is then no
    /// change (Redis 7.0's `expired` mark on a watched key).
    expired_at_watch: bool,
}

#[derive(Default)]
pub struct Watchers {
    keys: HashMap<Key, SmallVec<[Watcher; 1]>>,
}

impl Watchers {
    /// The caller adds each (client, key) once (the client keeps a set).
    pub fn add(&mut self, key: &[u8], flag: &Arc<WatchFlag>, expired: bool) {
        self.keys
            .entry(Key::from_slice(key))
            .or_default()
            .push(Watcher {
                flag: Arc::downgrade(flag),
                expired_at_watch: expired,
            });
    }

    pub fn remove(&mut self, key: &[u8], flag: &Arc<WatchFlag>) {
        if let Some(list) = self.keys.get_mut(key) {
            list.retain(|w| w.flag.as_ptr() != Arc::as_ptr(flag) && w.flag.strong_count() > 0);
            if list.is_empty() {
                self.keys.remove(key);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Whether `flag` watches `key` and it was live when watched.
    pub fn watched_live(&self, key: &[u8], flag: &Arc<WatchFlag>) -> bool {
        self.keys.get(key).is_some_and(|l| {
            l.iter()
                .any(|w| w.flag.as_ptr() == Arc::as_ptr(flag) && !w.expired_at_watch)
        })
    }

    /// `key` changed; `exists` is whether it is in the shard now (live or not).
    pub fn touch(&mut self, key: &[u8], exists: bool) {
        let Some(list) = self.keys.get_mut(key) else {
            return;
        };
        list.retain(|w| w.flag.strong_count() > 0);
        for w in list.iter_mut() {
            if w.expired_at_watch && !exists {
                // An already expired key was deleted: logically no change.
                w.expired_at_watch = false;
                continue;
            }
            if let Some(flag) = w.flag.upgrade() {
                flag.set_dirty();
            }
        }
        if list.is_empty() {
            self.keys.remove(key);
        }
    }

    /// SWAPDB: the database's keys were replaced by another's. For each
    /// watched key, `here` says whether it was in this database (live or
    /// not) and `there` whether it is in the other and, if so, whether it
    /// had expired: as Redis 7.0's touchAllWatchedKeysInDb, swapping an
    /// expired key for no key, no key for an expired one, or one expired
    /// key for another is no change.
    pub fn touch_swapped(
        &mut self,
        here: impl Fn(&[u8]) -> bool,
        there: impl Fn(&[u8]) -> Option<bool>,
    ) {
        self.keys.retain(|key, list| {
            let (was, now) = (here(key), there(key));
            if !was && now.is_none() {
                return true;
            }
            list.retain(|w| w.flag.strong_count() > 0);
            for w in list.iter_mut() {
                if w.expired_at_watch {
                    match now {
                        // The expired key is gone: logically no change.
                        None => {
                            w.expired_at_watch = false;
                            continue;
                        }
                        // Replaced by another expired key.
                        Some(true) => continue,
                        Some(false) => {}
                    }
                } else if !was && now == Some(true) {
                    // No key replaced by an expired one.
                    w.expired_at_watch = true;
                    continue;
                }
                if let Some(flag) = w.flag.upgrade() {
                    flag.set_dirty();
                }
            }
            !list.is_empty()
        });
    }

    /// Every watched key for which `present` holds was removed (FLUSHDB).
    pub fn touch_present(&mut self, present: impl Fn(&[u8]) -> bool) {
        let keys: Vec<Key> = self.keys.keys().filter(|k| present(k)).cloned().collect();
        for k in keys {
            self.touch(&k, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touch_marks_watchers_dirty_and_spares_deleted_stale_keys() {
        let mut w = Watchers::default();
        let (live, stale) = (
            Arc::new(WatchFlag::default()),
            Arc::new(WatchFlag::default()),
        );
        w.add(b"k", &live, false);
        w.add(b"k", &stale, true);
        w.touch(b"k", false);
        assert!(live.is_dirty());
        assert!(!stale.is_dirty(), "deleting an expired key is no change");
        w.touch(b"k", true);
        assert!(stale.is_dirty(), "writing it afterwards is");
    }

    #[test]
    fn swapping_expired_keys_is_no_change() {
        let flags: Vec<Arc<WatchFlag>> = (0..5).map(|_| Arc::default()).collect();
        let mut w = Watchers::default();
        // (watched key, expired at WATCH, in this db, in the other db and expired)
        let cases: [(&[u8], bool, bool, Option<bool>); 5] = [
            (b"stale-for-none", true, true, None),
            (b"none-for-stale", false, false, Some(true)),
            (b"stale-for-stale", true, true, Some(true)),
            (b"stale-for-live", true, true, Some(false)),
            (b"live-for-none", false, true, None),
        ];
        for (i, (key, expired, ..)) in cases.iter().enumerate() {
            w.add(key, &flags[i], *expired);
        }
        let here = |k: &[u8]| cases.iter().any(|c| c.0 == k && c.2);
        let there = |k: &[u8]| cases.iter().find(|c| c.0 == k).and_then(|c| c.3);
        w.touch_swapped(here, there);
        let dirty: Vec<bool> = flags.iter().map(|f| f.is_dirty()).collect();
        assert_eq!(dirty, [false, false, false, true, true]);
        // The key that became an expired one is marked so: deleting it is no change.
        w.touch(b"none-for-stale", false);
        assert!(!flags[1].is_dirty());
    }

    #[test]
    fn dropped_clients_leave_nothing_behind() {
        let mut w = Watchers::default();
        let flag = Arc::new(WatchFlag::default());
        w.add(b"k", &flag, false);
        drop(flag);
        w.touch(b"k", true);
        assert!(w.is_empty());
    }
}
