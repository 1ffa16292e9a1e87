//! CLIENT PAUSE: while a pause lasts, connections hold back the commands it
//! covers (every command, or those that may write) until it ends.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use tokio::sync::Notify;

pub const NONE: u8 = 0;
pub const WRITE: u8 = 1;
pub const ALL: u8 = 2;

#[derive(Default)]
pub struct Pause {
    /// NONE, WRITE or ALL (a pause past its end still reads as set).
    mode: AtomicU8,
    /// Unix milliseconds when it ends.
    end_ms: AtomicU64,
    /// Woken when a pause is lifted early (CLIENT UNPAUSE).
    lifted: Notify,
    lock: parking_lot::Mutex<()>,
    /// Connections holding a command back (INFO blocked_clients counts them,
    /// as Redis counts its postponed clients).
    held: AtomicUsize,
    /// FAILOVER's own write pause (Redis's PAUSE_DURING_FAILOVER): no end
    /// time, not lifted by CLIENT UNPAUSE, only by the failover's end.
    failover: AtomicBool,
}

/// One connection held by a pause, while it lives.
pub struct Held<'a>(&'a AtomicUsize);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Pause {
    /// The pause now in force (NONE once its time is over).
    pub fn mode(&self) -> u8 {
        let client = match self.mode.load(Ordering::Acquire) {
            NONE => NONE,
            m if blinkdb_engine::now_ms() < self.end_ms.load(Ordering::Acquire) => m,
            _ => NONE,
        };
        if client == NONE && self.failover.load(Ordering::Acquire) {
            return WRITE;
        }
        client
    }

    /// FAILOVER's write pause on or off (CLIENT PAUSE/UNPAUSE leave it).
    pub fn set_failover(&self, on: bool) {
        let _l = self.lock.lock();
        self.failover.store(on, Ordering::Release);
        if !on {
            self.lifted.notify_waiters();
        }
    }

    pub fn failover(&self) -> bool {
        self.failover.load(Ordering::Acquire)
    }

    /// Starts or extends a pause: the stricter mode and the later end win,
    /// as when Redis merges pauses.
    pub fn pause(&self, mode: u8, end_ms: u64) {
        let _l = self.lock.lock();
        if self.mode() == NONE {
            self.mode.store(mode, Ordering::Release);
            self.end_ms.store(end_ms, Ordering::Release);
        } else {
            self.mode.fetch_max(mode, Ordering::AcqRel);
            self.end_ms.fetch_max(end_ms, Ordering::AcqRel);
        }
    }

    /// When the pause in force ends (Unix ms; a past time if none).
    pub fn end_ms(&self) -> u64 {
        self.end_ms.load(Ordering::Acquire)
    }

    /// Counts a connection as held until the guard drops.
    pub fn hold(&self) -> Held<'_> {
        self.held.fetch_add(1, Ordering::Relaxed);
        Held(&self.held)
    }

    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// CLIENT UNPAUSE: lifts the client pause (not FAILOVER's).
    pub fn unpause(&self) {
        let _l = self.lock.lock();
        self.mode.store(NONE, Ordering::Release);
        self.lifted.notify_waiters();
    }

    /// Waits until the pause ends or is lifted (it may be extended meanwhile:
    /// callers check again).
    pub async fn wait(&self) {
        let lifted = self.lifted.notified();
        tokio::pin!(lifted);
        lifted.as_mut().enable();
        if self.mode() == NONE {
            return;
        }
        let left = self
            .end_ms
            .load(Ordering::Acquire)
            .saturating_sub(blinkdb_engine::now_ms());
        // Under FAILOVER's pause alone only its end (a notification) lifts
        // it; callers check again after a wake-up.
        let left = if left == 0 || self.mode.load(Ordering::Acquire) == NONE {
            3_600_000
        } else {
            left
        };
        tokio::select! {
            _ = lifted => {}
            _ = tokio::time::sleep(std::time::Duration::from_millis(left)) => {}
        }
    }
}
