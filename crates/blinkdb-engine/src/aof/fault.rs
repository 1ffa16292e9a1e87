//! A [`Storage`] that wraps the real file system and fails on demand: disk-full writes that
//! land only part of their bytes, and "crash at step N" where the N-th mutating operation and
//! every one after it fail. Used by the crash and ENOSPC tests; public so integration tests
//! (and the server's tests) can use it.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::storage::{LogFile, OsStorage, Storage};

#[derive(Default)]
struct FaultState {
    /// Mutating operations performed so far.
    ops: AtomicU64,
    /// Fail the op with this ordinal and everything after it (u64::MAX = never).
    crash_at_op: AtomicU64,
    crashed: AtomicBool,
    /// Bytes that still fit before writes fail with ENOSPC (u64::MAX = unlimited).
    free_bytes: AtomicU64,
    syncs: AtomicU64,
}

/// Fault-injecting storage. Cheap to clone; clones share one fault state.
#[derive(Clone)]
pub struct FaultStorage {
    state: Arc<FaultState>,
}

impl Default for FaultStorage {
    fn default() -> Self {
        Self::new()
    }
}

impl FaultStorage {
    pub fn new() -> Self {
        let state = FaultState::default();
        state.crash_at_op.store(u64::MAX, Ordering::SeqCst);
        state.free_bytes.store(u64::MAX, Ordering::SeqCst);
        FaultStorage {
            state: Arc::new(state),
        }
    }
    /// Simulates a crash: mutating op number `n` (0-based, counted from now) and all later
    /// ones fail with EIO.
    pub fn crash_after(&self, n: u64) {
        let now = self.state.ops.load(Ordering::SeqCst);
        self.state.crash_at_op.store(now + n, Ordering::SeqCst);
    }
    /// Whether the simulated crash point was reached.
    pub fn crashed(&self) -> bool {
        self.state.crashed.load(Ordering::SeqCst)
    }
    /// Mutating operations performed so far.
    pub fn ops(&self) -> u64 {
        self.state.ops.load(Ordering::SeqCst)
    }
    /// Disk nearly full: `Some(n)` lets `n` more bytes be written (a write crossing the
    /// limit is short, the next one fails with ENOSPC, as with write(2)); `None` frees it.
    pub fn set_disk_full(&self, free_bytes: Option<u64>) {
        self.state
            .free_bytes
            .store(free_bytes.unwrap_or(u64::MAX), Ordering::SeqCst);
    }
    pub fn sync_count(&self) -> u64 {
        self.state.syncs.load(Ordering::SeqCst)
    }

    fn step(&self) -> io::Result<()> {
        let n = self.state.ops.fetch_add(1, Ordering::SeqCst);
        if n >= self.state.crash_at_op.load(Ordering::SeqCst) {
            self.state.crashed.store(true, Ordering::SeqCst);
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        Ok(())
    }
}

struct FaultFile {
    inner: Arc<dyn LogFile>,
    storage: FaultStorage,
}

impl LogFile for FaultFile {
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        self.storage.step()?;
        let free = self.storage.state.free_bytes.load(Ordering::SeqCst);
        if free == u64::MAX {
            return self.inner.write_at(buf, offset);
        }
        let fits = (free.min(buf.len() as u64)) as usize;
        if fits == 0 {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        let n = self.inner.write_at(&buf[..fits], offset)?;
        self.storage
            .state
            .free_bytes
            .fetch_sub(n as u64, Ordering::SeqCst);
        Ok(n)
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.inner.read_at(buf, offset)
    }
    fn read_cached_uninit<'a>(
        &self,
        buf: &'a mut [std::mem::MaybeUninit<u8>],
        offset: u64,
    ) -> io::Result<&'a mut [u8]> {
        self.inner.read_cached_uninit(buf, offset)
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.storage.step()?;
        self.inner.set_len(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.storage.step()?;
        self.storage.state.syncs.fetch_add(1, Ordering::SeqCst);
        self.inner.sync_data()
    }
    fn size(&self) -> io::Result<u64> {
        self.inner.size()
    }
}

impl FaultStorage {
    fn wrap(&self, inner: Arc<dyn LogFile>) -> Arc<dyn LogFile> {
        Arc::new(FaultFile {
            inner,
            storage: self.clone(),
        })
    }
}

impl Storage for FaultStorage {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.step()?;
        OsStorage.create_dir_all(dir)
    }
    fn open(&self, path: &Path) -> io::Result<Arc<dyn LogFile>> {
        self.step()?;
        Ok(self.wrap(OsStorage.open(path)?))
    }
    fn create(&self, path: &Path) -> io::Result<Arc<dyn LogFile>> {
        self.step()?;
        Ok(self.wrap(OsStorage.create(path)?))
    }
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn LogFile>> {
        Ok(self.wrap(OsStorage.open_read(path)?))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.step()?;
        OsStorage.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.step()?;
        OsStorage.remove(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.step()?;
        OsStorage.sync_dir(dir)
    }
    fn exists(&self, path: &Path) -> bool {
        OsStorage.exists(path)
    }
}
