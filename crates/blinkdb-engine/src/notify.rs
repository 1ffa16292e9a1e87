//! What the keyspace tells the outside about its changes: Redis's keyspace
//! event classes (`notify-keyspace-events`) and the "key modified" signal that
//! client-side caching invalidates on. The engine knows which key changed and
//! whether it was created, expired or evicted; the command knows the event's
//! name (`set`, `incrby`...). Both report through the [`Observer`] the server
//! installs, and only for what someone wants ([`Engine::set_interest`]): with
//! nothing wanted, a write pays one relaxed load when it starts and a register
//! test per change.
//!
//! Calls happen with the key's shard locked, so the events of one key reach
//! the observer in the order of its changes, as Redis's single thread emits them.

use crate::engine::Engine;
use std::sync::atomic::Ordering;
use std::sync::Arc;

// Event classes, with Redis's bit values (server.h NOTIFY_*).
/// `K`: publish on `__keyspace@<db>__:<key>`.
pub const KEYSPACE: u32 = 1 << 0;
/// `E`: publish on `__keyevent@<db>__:<event>`.
pub const KEYEVENT: u32 = 1 << 1;
/// `g`: DEL, EXPIRE, RENAME... (type-independent commands).
pub const GENERIC: u32 = 1 << 2;
/// `$`: string commands.
pub const STRING: u32 = 1 << 3;
/// `l`, `s`, `h`, `z`: list, set, hash and sorted-set commands.
pub const LIST: u32 = 1 << 4;
pub const SET: u32 = 1 << 5;
pub const HASH: u32 = 1 << 6;
pub const ZSET: u32 = 1 << 7;
/// `x`: a key expired.
pub const EXPIRED: u32 = 1 << 8;
/// `e`: a key was evicted.
pub const EVICTED: u32 = 1 << 9;
/// `t`: stream commands.
pub const STREAM: u32 = 1 << 10;
/// `m`: a read found no key (not part of `A`).
pub const KEY_MISS: u32 = 1 << 11;
/// `d`: module types (BlinkDB's Bloom filters).
pub const MODULE: u32 = 1 << 13;
/// `n`: a key was created (not part of `A`).
pub const NEW: u32 = 1 << 14;
/// `A`: every class but `m` and `n`.
pub const ALL: u32 =
    GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;
/// Not a Redis class: some client tracks keys (client-side caching), so
/// changes must be reported through [`Observer::modified`].
pub const TRACKING: u32 = 1 << 31;

/// Receives what the keyspace reports. Implementations must not touch the
/// keyspace: they run with shard locks held.
pub trait Observer: Send + Sync {
    /// A keyspace event of `class` named `event` on `key` of `db`.
    fn event(&self, class: u32, event: &'static str, db: usize, key: &[u8]);
    /// `key` changed (in any database); `by` is the client whose command
    /// changed it, 0 for expiry and eviction.
    fn modified(&self, key: &[u8], by: u64);
    /// Databases were emptied (FLUSHDB, FLUSHALL) by client `by`.
    fn flushed(&self, by: u64);
}

impl Engine {
    /// Installs the observer (once; later calls are ignored).
    pub fn set_observer(&self, observer: Arc<dyn Observer>) {
        let _ = self.observer.set(observer);
    }

    /// What is reported from now on: event classes (only those wanted) plus
    /// [`TRACKING`]. 0 turns every report off.
    pub fn set_interest(&self, mask: u32) {
        self.interest.store(mask, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn interest(&self) -> u32 {
        self.interest.load(Ordering::Relaxed)
    }

    /// Reports an event if its class is wanted in `interest`.
    #[inline]
    pub(crate) fn emit(
        &self,
        interest: u32,
        class: u32,
        event: &'static str,
        db: usize,
        key: &[u8],
    ) {
        if interest & class != 0 {
            if let Some(o) = self.observer.get() {
                o.event(class, event, db, key);
            }
        }
    }

    /// Reports a changed key if some client tracks keys.
    #[inline]
    pub(crate) fn signal_modified(&self, interest: u32, key: &[u8], by: u64) {
        if interest & TRACKING != 0 {
            if let Some(o) = self.observer.get() {
                o.modified(key, by);
            }
        }
    }

    /// A key removed because its time came: `expired` and its invalidation.
    pub(crate) fn report_expired(&self, interest: u32, db: usize, key: &[u8]) {
        self.emit(interest, EXPIRED, "expired", db, key);
        self.signal_modified(interest, key, 0);
    }

    pub(crate) fn report_flush(&self, by: u64) {
        if self.interest() & TRACKING != 0 {
            if let Some(o) = self.observer.get() {
                o.flushed(by);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineOptions;
    use crate::keyspace::Entry;
    use parking_lot::Mutex;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<String>>);

    impl Observer for Recorder {
        fn event(&self, _class: u32, event: &'static str, db: usize, key: &[u8]) {
            let key = String::from_utf8_lossy(key);
            self.0.lock().push(format!("{event}@{db}:{key}"));
        }
        fn modified(&self, key: &[u8], by: u64) {
            let key = String::from_utf8_lossy(key);
            self.0.lock().push(format!("changed:{key} by {by}"));
        }
        fn flushed(&self, by: u64) {
            self.0.lock().push(format!("flushed by {by}"));
        }
    }

    fn engine() -> (Engine, Arc<Recorder>) {
        let e = Engine::new(EngineOptions::default());
        let r = Arc::new(Recorder::default());
        e.set_observer(r.clone());
        (e, r)
    }

    fn take(r: &Recorder) -> Vec<String> {
        std::mem::take(&mut *r.0.lock())
    }

    #[test]
    fn nothing_is_reported_without_interest() {
        let (e, r) = engine();
        e.write1(0, b"k", |tx| {
            tx.insert(0, b"k", Entry::string(&b"v"[..]));
            tx.notify(STRING, "set", 0, b"k");
        });
        e.read(0, b"missing", |_| ());
        e.flush(None, &[b"FLUSHALL"], false, 1);
        assert!(take(&r).is_empty());
    }

    #[test]
    fn changes_are_reported_in_order() {
        let (e, r) = engine();
        e.set_interest(ALL | NEW | KEY_MISS | TRACKING);
        e.write1(0, b"k", |tx| {
            tx.set_client(7);
            tx.insert(0, b"k", Entry::string(&b"v"[..]));
            tx.notify(STRING, "set", 0, b"k");
            tx.insert(0, b"k", Entry::string(&b"w"[..]));
        });
        assert_eq!(
            take(&r),
            ["new@0:k", "changed:k by 7", "set@0:k", "changed:k by 7"]
        );
        // An expired entry written over: expired, then new.
        e.write1(0, b"x", |tx| {
            let mut old = Entry::string(&b"v"[..]);
            old.expire_at = 1;
            tx.insert(0, b"x", old);
        });
        take(&r);
        e.write1(0, b"x", |tx| tx.insert(0, b"x", Entry::string(&b"v"[..])));
        assert_eq!(
            take(&r),
            ["expired@0:x", "changed:x by 0", "new@0:x", "changed:x by 0"]
        );
        e.read(0, b"nope", |_| ());
        e.flush(Some(0), &[b"FLUSHDB"], false, 3);
        assert_eq!(take(&r), ["keymiss@0:nope", "flushed by 3"]);
    }

    #[test]
    fn active_field_expiry_goes_by_time_across_shards() {
        use crate::keyspace::{Db, Value};
        use crate::types::{HashValue, Limits};
        let (e, r) = engine();
        // Two hashes in different shards, the one in the later shard due
        // first: the merge takes it first (a walk of the shards would not).
        let keys: Vec<String> = (0..64).map(|i| format!("h{i}")).collect();
        let shard = |k: &String| Db::shard_index(k.as_bytes());
        let a = keys.iter().min_by_key(|k| shard(k)).unwrap();
        let b = keys.iter().max_by_key(|k| shard(k)).unwrap();
        assert!(shard(a) < shard(b));
        for (key, at) in [(a, 20), (b, 10)] {
            let mut h = HashValue::default();
            h.set(b"f", b"v", &Limits::default());
            h.set(b"g", b"v", &Limits::default());
            h.set_expire(b"f", at);
            e.write1(0, key.as_bytes(), |tx| {
                tx.insert(0, key.as_bytes(), Entry::new(Value::hash(h)))
            });
        }
        e.set_interest(HASH);
        assert_eq!(e.active_expire_fields(1000), 2);
        assert_eq!(
            take(&r),
            [format!("hexpired@0:{b}"), format!("hexpired@0:{a}")]
        );
        assert_eq!(e.active_expire_fields(1000), 0, "nothing left due");
    }

    #[test]
    fn a_stale_field_bound_expires_nothing_and_tells_nothing() {
        use crate::keyspace::Value;
        use crate::types::{HashValue, Limits};
        let (e, r) = engine();
        let far = crate::clock::now_ms() + 3_600_000;
        let mut h = HashValue::default();
        h.set(b"f", b"v", &Limits::default());
        h.set(b"g", b"v", &Limits::default());
        h.set_expire(b"f", 10);
        h.set_expire(b"g", far);
        e.write1(0, b"h", |tx| tx.insert(0, b"h", Entry::new(Value::hash(h))));
        // f's TTL moves later: the hash's kept bound, and its item in the
        // shard's index, still say 10, past.
        e.write1(0, b"h", |tx| {
            tx.update(0, b"h", |en| match en.value_mut() {
                Value::Hash(h, _) => assert!(h.set_expire(b"f", far + 1)),
                _ => unreachable!(),
            })
        });
        e.set_interest(HASH);
        // The cycle walks the hash, finds nothing due: no event, no
        // HDEL, nothing counted (it used to report the hash as expired).
        assert_eq!(e.active_expire_fields(1000), 0);
        assert!(take(&r).is_empty());
        assert_eq!(e.active_expire_fields(1000), 0);
        assert!(take(&r).is_empty());
    }

    #[test]
    fn active_expiry_reports_each_key() {
        let (e, r) = engine();
        e.write1(0, b"gone", |tx| {
            let mut en = Entry::string(&b"v"[..]);
            en.expire_at = 1;
            tx.insert(0, b"gone", en);
        });
        e.set_interest(EXPIRED);
        e.active_expire(crate::keyspace::SHARDS * 16, 100);
        assert_eq!(take(&r), ["expired@0:gone"]);
    }
}
