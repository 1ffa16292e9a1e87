//! Keyspace notifications (`notify-keyspace-events`) and the engine's observer.
//!
//! The engine reports events and changed keys (blinkdb_engine::event) with
//! the key's shard locked; this publishes the events as Redis does, on
//! `__keyspace@<db>__:<key>` (message: the event) and `__keyevent@<db>__:<event>`
//! (message: the key), through the same registry as PUBLISH, and hands changed
//! keys to client-side caching (`tracking`). With `notify-keyspace-events` empty
//! and nobody tracking, the engine reports nothing (its interest mask is 0).

use super::registry::Registry;
use crate::config::limits::ClassLimit;
use crate::tracking::Tracking;
use blinkdb_engine::event::*;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

pub use crate::config::events::{format_flags, letters, parse_flags, ERR_FLAGS};

/// The engine's observer: publishes keyspace events and feeds tracking.
pub struct Notifier {
    registry: Arc<Registry>,
    pub tracking: Tracking,
    /// `notify-keyspace-events`.
    flags: AtomicU32,
    /// The pubsub class's output limit, which events count against as PUBLISH's do.
    limit: Mutex<ClassLimit>,
}

thread_local! {
    /// The channel name being built (reused: no allocation per event once warm).
    static CHANNEL: RefCell<Vec<u8>> = RefCell::new(Vec::with_capacity(64));
}

impl Notifier {
    pub fn new(registry: Arc<Registry>) -> Self {
        Notifier {
            registry,
            tracking: Tracking::default(),
            flags: AtomicU32::new(0),
            limit: Mutex::new(ClassLimit::default()),
        }
    }

    pub fn configure(&self, flags: u32, pubsub_limit: ClassLimit) {
        *self.limit.lock() = pubsub_limit;
        self.flags.store(flags, Ordering::Relaxed);
    }

    /// What the engine should report: the event classes that would be
    /// published (none without K or E), and changed keys while anyone tracks.
    pub fn interest(&self) -> u32 {
        let flags = self.flags.load(Ordering::Relaxed);
        let mut mask = if flags & (KEYSPACE | KEYEVENT) != 0 {
            flags & !(KEYSPACE | KEYEVENT)
        } else {
            0
        };
        if self.tracking.count() > 0 {
            mask |= TRACKING;
        }
        mask
    }
}

fn channel(buf: &mut Vec<u8>, kind: &[u8], db: usize, name: &[u8]) {
    buf.clear();
    buf.extend_from_slice(kind);
    buf.extend_from_slice(itoa::Buffer::new().format(db).as_bytes());
    buf.extend_from_slice(b"__:");
    buf.extend_from_slice(name);
}

impl Observer for Notifier {
    fn event(&self, class: u32, event: &'static str, db: usize, key: &[u8]) {
        let flags = self.flags.load(Ordering::Relaxed);
        if flags & class == 0 {
            return;
        }
        let limit = *self.limit.lock();
        let now = blinkdb_engine::now_ms();
        CHANNEL.with(|buf| {
            let mut buf = buf.borrow_mut();
            if flags & KEYSPACE != 0 {
                channel(&mut buf, b"__keyspace@", db, key);
                self.registry
                    .publish(&buf, event.as_bytes(), false, &limit, now);
            }
            if flags & KEYEVENT != 0 {
                channel(&mut buf, b"__keyevent@", db, event.as_bytes());
                self.registry.publish(&buf, key, false, &limit, now);
            }
        });
    }

    fn modified(&self, key: &[u8], by: u64) {
        self.tracking.invalidate(key, by);
    }

    fn flushed(&self, _by: u64) {
        self.tracking.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_get_renders_as_redis() {
        for (set, shown) in [
            ("gKE", "gKE"),
            ("$lshzxeKE", "$lshzxeKE"),
            ("KA", "AK"),
            ("EA", "AE"),
            ("AKEmn", "AKEm"),
            ("Ed", "dE"),
            ("nE", "nE"),
            ("", ""),
            ("KEg$lshzxetd", "AKE"),
        ] {
            assert_eq!(format_flags(parse_flags(set).unwrap()), shown, "{set}");
        }
        assert_eq!(parse_flags("Kq"), None);
        let all_new = parse_flags("AKEn").unwrap();
        assert_eq!(parse_flags(&letters(all_new)), Some(all_new), "n kept");
    }
}
