//! The one fsync thread. Under `always` it runs whenever a waiter asks, and every waiter
//! that arrived while an fdatasync was running is covered by the next one (group commit).
//! Under `everysec` it writes and syncs once a second, off the request path.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex, MutexGuard};
use tokio::sync::watch;

use super::error::{AofError, Result};
use super::options::FsyncPolicy;
use super::types::Lsn;
use super::writer::Inner;

/// What waiters observe after each sync attempt.
#[derive(Debug, Clone, Default)]
pub(crate) struct SyncState {
    pub synced: u64,
    /// Counts finished sync attempts, so a waiter only trusts failures that came after it.
    pub attempt: u64,
    pub failed: Option<Failure>,
}

/// Why a write or sync attempt failed, in a form that can be handed to every waiter
/// (AofError is not Clone), so each gets the `MISCONF` text a direct commit would have given.
#[derive(Debug, Clone)]
pub enum Failure {
    Write(String),
    Sync(String),
    Closed,
}

impl Failure {
    pub fn of_ref(e: &AofError) -> Failure {
        match e {
            AofError::WriteFailed { reason } => Failure::Write(reason.clone()),
            AofError::SyncFailed { reason } => Failure::Sync(reason.clone()),
            AofError::Closed => Failure::Closed,
            other => Failure::Sync(other.to_string()),
        }
    }

    pub fn into_error(self) -> AofError {
        match self {
            Failure::Write(reason) => AofError::WriteFailed { reason },
            Failure::Sync(reason) => AofError::SyncFailed { reason },
            Failure::Closed => AofError::Closed,
        }
    }
}

#[derive(Default)]
struct Request {
    wanted: u64,
    shutdown: bool,
    /// Set by a change of policy: the thread syncs once and follows the new one.
    policy_changed: bool,
}

pub(crate) struct Syncer {
    request: Mutex<Request>,
    wake: Condvar,
    published: watch::Sender<SyncState>,
    /// Held around each write+fdatasync: syncs never overlap.
    syncing: Mutex<()>,
}

impl Syncer {
    pub fn new() -> Arc<Self> {
        Arc::new(Syncer {
            request: Mutex::new(Request::default()),
            wake: Condvar::new(),
            published: watch::channel(SyncState::default()).0,
            syncing: Mutex::new(()),
        })
    }

    /// Starts the thread, whatever the policy: CONFIG SET appendfsync may change it later.
    pub fn spawn(self: &Arc<Self>, inner: Arc<Inner>) -> Option<JoinHandle<()>> {
        let me = self.clone();
        let handle = std::thread::Builder::new()
            .name("aof-fsync".into())
            .spawn(move || me.run(&inner))
            .expect("spawn aof-fsync thread");
        Some(handle)
    }

    /// Wakes the thread to sync once and follow the policy now in `Inner`.
    pub fn policy_changed(&self) {
        self.request.lock().policy_changed = true;
        self.wake.notify_all();
    }

    fn run(&self, inner: &Inner) {
        loop {
            let policy;
            {
                let mut req = self.request.lock();
                loop {
                    if req.shutdown {
                        return;
                    }
                    if std::mem::take(&mut req.policy_changed) {
                        // Whatever the new policy, one sync now: waiters of `always`
                        // are answered, and bytes of a `no` period reach the disk.
                        policy = None;
                        break;
                    }
                    match inner.fsync() {
                        FsyncPolicy::Always => {
                            if req.wanted > inner.synced_lsn.load(Ordering::Acquire) {
                                policy = Some(FsyncPolicy::Always);
                                break;
                            }
                            self.wake.wait(&mut req);
                        }
                        FsyncPolicy::EverySec => {
                            let timed_out = self
                                .wake
                                .wait_for(&mut req, Duration::from_secs(1))
                                .timed_out();
                            if timed_out && inner.fsync() == FsyncPolicy::EverySec {
                                policy = Some(FsyncPolicy::EverySec);
                                break;
                            }
                        }
                        FsyncPolicy::No => self.wake.wait(&mut req),
                    }
                }
            }
            let failed = self.sync_and_publish(inner, self.syncing.lock()).is_err();
            if failed && policy == Some(FsyncPolicy::Always) {
                // Avoid a hot loop while the disk keeps failing.
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    /// One write+fdatasync of everything appended so far, then published to every
    /// waiter. It publishes only after letting go of `syncing`: a thread that found the
    /// lock taken waits for the next publication, which must therefore come after.
    fn sync_and_publish(&self, inner: &Inner, guard: MutexGuard<'_, ()>) -> Result<()> {
        let result = inner.sync_now();
        drop(guard);
        let synced = inner.synced_lsn.load(Ordering::Acquire);
        let failed = match &result {
            Ok(()) => None,
            Err(e) => {
                tracing::warn!("AOF fsync failed: {e}");
                Some(Failure::of_ref(e))
            }
        };
        self.published.send_modify(|s| {
            s.synced = s.synced.max(synced);
            s.attempt += 1;
            s.failed = failed;
        });
        result
    }

    /// Under `always`: makes `lsn` durable with a write+fdatasync on the calling thread,
    /// as Redis does before it replies. A connection thread calls this once for all the
    /// replies it has ready, so one fdatasync serves them all. Syncs never overlap: while
    /// another thread syncs, this one waits (asynchronously) for it to finish, since that
    /// sync may already cover `lsn`, and syncs itself only if it did not.
    pub async fn sync_inline(&self, inner: &Inner, lsn: Lsn) -> Result<()> {
        loop {
            if inner.synced_lsn.load(Ordering::Acquire) >= lsn.0 {
                return Ok(());
            }
            let mut rx = self.published.subscribe();
            let seen = rx.borrow().attempt;
            if let Some(guard) = self.syncing.try_lock() {
                let result = self.sync_and_publish(inner, guard);
                if result.is_err() {
                    // The sync thread retries (with a pause), so that the bytes land
                    // once the disk is back even if no other write comes.
                    let mut req = self.request.lock();
                    req.wanted = req.wanted.max(lsn.0);
                    self.wake.notify_one();
                }
                return result;
            }
            rx.wait_for(|s| s.attempt > seen)
                .await
                .map_err(|_| AofError::Closed)?;
        }
    }

    pub async fn wait_synced(&self, inner: &Inner, lsn: Lsn) -> Result<()> {
        if inner.synced_lsn.load(Ordering::Acquire) >= lsn.0 {
            return Ok(());
        }
        let mut rx = self.published.subscribe();
        let first_attempt = rx.borrow().attempt;
        {
            let mut req = self.request.lock();
            if req.shutdown {
                return Err(AofError::Closed);
            }
            req.wanted = req.wanted.max(lsn.0);
            self.wake.notify_one();
        }
        let state = rx
            .wait_for(|s| s.synced >= lsn.0 || (s.failed.is_some() && s.attempt > first_attempt))
            .await
            .map_err(|_| AofError::Closed)?
            .clone();
        if state.synced >= lsn.0 {
            return Ok(());
        }
        Err(state.failed.map_or(AofError::Closed, Failure::into_error))
    }

    /// Resolves once an fdatasync that some other path ran (the `everysec` tick, an
    /// `always` flush, a policy change) covers `lsn`; asks for none itself, so under
    /// `appendfsync no` it waits until one happens (Redis's WAITAOF does the same).
    pub async fn synced_past(&self, inner: &Inner, lsn: Lsn) -> Result<()> {
        let mut rx = self.published.subscribe();
        if inner.synced_lsn.load(Ordering::Acquire) >= lsn.0 {
            return Ok(());
        }
        rx.wait_for(|s| s.synced >= lsn.0 || matches!(s.failed, Some(Failure::Closed)))
            .await
            .map_err(|_| AofError::Closed)
            .and_then(|s| {
                if s.synced >= lsn.0 {
                    Ok(())
                } else {
                    Err(AofError::Closed)
                }
            })
    }

    pub fn shutdown(&self) {
        self.request.lock().shutdown = true;
        self.wake.notify_all();
        self.published.send_modify(|s| {
            s.attempt += 1;
            s.failed = Some(Failure::Closed);
        });
    }
}
