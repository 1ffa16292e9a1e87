//! The log layer: Redis 7's multi-part append-only file, which is also BlinkDB's segment
//! storage for large values. See `docs/aof-format.md` for the byte layout, the recovery
//! rules and the rewrite protocol.
//!
//! Typical use by the server:
//!
//! ```no_run
//! # use blinkdb_engine::{Aof, AofOptions, AofResult as Result};
//! # async fn demo() -> Result<()> {
//! let aof = Aof::open(AofOptions::new("/data/appendonlydir"))?;
//! aof.load(|cmd| { /* apply cmd.args to the keyspace */ Ok(()) }, |_progress| {})?;
//! aof.write_status()?; // refuse writes (MISCONF) while the disk is failing
//! let (lsn, blobs) = aof.append(|w| w.command(&[b"SET", b"k", b"v"]))?;
//! aof.commit(lsn)?; // before replying (everysec / no)
//! aof.wait_synced(lsn).await?; // additionally, under appendfsync always
//! # let _ = blobs; Ok(()) }
//! ```

mod error;
mod evict;
pub mod fault;
mod load;
mod manifest;
mod options;
mod rdb_base;
mod record;
mod rewrite;
mod scan;
mod storage;
mod sync;
mod types;
mod writer;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::checksum::xxh3_64_large;
use bytes::Bytes;
use parking_lot::{Mutex, RwLock};

pub use error::{AofError, Result};
pub use load::{Arg, LoadProgress, LoadStats, LoadedCommand, RdbBase};
pub use manifest::{FileKind, Manifest, ManifestEntry};
pub use options::{AofOptions, FsyncPolicy};
pub use rewrite::RewriteBase;
pub use storage::{LogFile, OsStorage, Storage};
pub use sync::Failure;
pub use types::{BlobRef, FileId, Lsn};
pub use writer::RecordWriter;

use manifest::{incr_name, manifest_name};
use storage::read_full_at;
use sync::Syncer;
use writer::{AppendState, Counters, Inner, WriterState};

/// Sizes and counters, for INFO persistence and auto-aof-rewrite-percentage.
#[derive(Debug, Clone)]
pub struct AofStats {
    /// Bytes in all live base and incr files (Redis `aof_current_size`).
    pub current_size: u64,
    /// Base size after the last load or rewrite (Redis `aof_base_size`).
    pub base_size: u64,
    /// `None` while writes succeed, else the error text (Redis `aof_last_write_status:err`).
    pub last_write_error: Option<String>,
    pub rewrite_in_progress: bool,
    pub rewrites_ok: u64,
    pub rewrites_failed: u64,
    /// write() calls that flushed at least one batch.
    pub writes: u64,
    pub fsyncs: u64,
    pub rotations: u64,
    pub appended_lsn: Lsn,
    pub written_lsn: Lsn,
    pub synced_lsn: Lsn,
    /// The incr file currently appended to.
    pub current_incr_seq: u64,
}

/// An open AOF directory.
pub struct Aof {
    inner: Arc<Inner>,
    syncer: Arc<Syncer>,
    sync_thread: Option<JoinHandle<()>>,
}

impl Aof {
    /// Opens (creating if absent) `opts.dir` and its manifest on the real file system.
    pub fn open(opts: AofOptions) -> Result<Aof> {
        Self::open_with(opts, Arc::new(OsStorage))
    }

    /// Opens with an explicit storage backend (tests inject faults this way).
    pub fn open_with(opts: AofOptions, storage: Arc<dyn Storage>) -> Result<Aof> {
        assert!(
            opts.segment_size < 1 << (types::LSN_OFFSET_BITS - 1),
            "segment_size must leave room in the Lsn offset bits"
        );
        let dir = opts.dir.clone();
        storage
            .create_dir_all(&dir)
            .map_err(|e| AofError::io("mkdir", &dir, e))?;
        let mpath = dir.join(manifest_name(&opts.basename));
        let mut manifest = if storage.exists(&mpath) {
            let f = storage
                .open_read(&mpath)
                .map_err(|e| AofError::io("open", &mpath, e))?;
            let len = f.size().map_err(|e| AofError::io("fstat", &mpath, e))?;
            let mut text = vec![0; len as usize];
            let got =
                read_full_at(&*f, &mut text, 0).map_err(|e| AofError::io("read", &mpath, e))?;
            text.truncate(got);
            Manifest::parse(&text, &mpath)?
        } else {
            Manifest::default()
        };
        for e in manifest.base.iter().chain(&manifest.incr) {
            let p = dir.join(&e.name);
            if !storage.exists(&p) {
                return Err(AofError::Corrupt {
                    file: e.name.clone(),
                    offset: 0,
                    reason: "listed in the manifest but missing".into(),
                });
            }
        }
        // A rewrite cut short by a stop or a crash left its partial base under the name
        // the next rewrite would use: never loaded, so it only takes disk space.
        for stale in [
            rewrite::temp_base_name(&opts.basename, manifest.base_seq() + 1),
            rewrite::temp_rdb_base_name(&opts.basename, manifest.base_seq() + 1),
        ] {
            let stale = dir.join(stale);
            if !storage.exists(&stale) {
                continue;
            }
            match storage.remove(&stale) {
                Ok(()) => {
                    tracing::info!("Removed an unfinished rewrite's base {}", stale.display())
                }
                Err(e) => tracing::warn!("Could not remove {}: {e}", stale.display()),
            }
        }
        if manifest.incr.is_empty() {
            let seq = 1;
            let name = incr_name(&opts.basename, seq);
            let p = dir.join(&name);
            storage
                .create(&p)
                .map_err(|e| AofError::io("create", &p, e))?;
            manifest.incr.push(ManifestEntry {
                name,
                seq,
                kind: FileKind::Incr,
            });
            manifest.persist(&*storage, &dir, &opts.basename)?;
        }
        let last = manifest.incr.last().expect("an incr file exists").clone();
        let lpath = dir.join(&last.name);
        let file = storage
            .open(&lpath)
            .map_err(|e| AofError::io("open", &lpath, e))?;
        let len = file.size().map_err(|e| AofError::io("fstat", &lpath, e))?;
        let mut files: HashMap<FileId, Arc<dyn LogFile>> = HashMap::new();
        files.insert(FileId::incr(last.seq), file.clone());
        let inner = Arc::new(Inner {
            storage,
            append: Mutex::new(AppendState {
                loaded: false,
                file_seq: last.seq,
                open_start: len,
                open: Vec::new(),
                sealed: VecDeque::new(),
                checksums: opts.batch_checksums,
            }),
            writer: Mutex::new(WriterState {
                manifest: manifest.clone(),
                file_seq: last.seq,
                file: Some(file),
                written_end: len,
                queue: VecDeque::new(),
                unsynced_old: Vec::new(),
            }),
            written_lsn: AtomicU64::new(Lsn::new(last.seq, len).0),
            synced_lsn: AtomicU64::new(Lsn::new(last.seq, len).0),
            write_error: Mutex::new(None),
            write_failing: AtomicBool::new(false),
            files: RwLock::new(files),
            counters: Counters::default(),
            rewriting: AtomicBool::new(false),
            append_seq: AtomicU64::new(last.seq),
            fsync: AtomicU8::new(opts.fsync.to_u8()),
            segment_size: AtomicU64::new(opts.segment_size),
            blob_threshold: std::sync::atomic::AtomicUsize::new(opts.blob_threshold),
            opts,
        });
        inner.drop_history();
        let syncer = Syncer::new();
        let sync_thread = syncer.spawn(inner.clone());
        Ok(Aof {
            inner,
            syncer,
            sync_thread,
        })
    }

    /// Replays the base then the incr files in manifest order, handing each command to
    /// `on_command` (see the recovery rules in docs/aof-format.md). Must be called once,
    /// before the first `append`.
    pub fn load(
        &self,
        on_command: impl FnMut(LoadedCommand) -> Result<()>,
        on_progress: impl FnMut(LoadProgress),
    ) -> Result<LoadStats> {
        self.inner.load(on_command, None, on_progress)
    }

    /// `load`, with an RDB-format base handed to `on_rdb_base` whole (the
    /// server's batched RDB loader) instead of replayed as RESTORE commands;
    /// it returns the number of keys it loaded. The incr files follow as in
    /// `load`. On an error nothing more is read.
    pub fn load_with_rdb_base(
        &self,
        on_command: impl FnMut(LoadedCommand) -> Result<()>,
        on_rdb_base: &mut dyn FnMut(RdbBase) -> Result<u64>,
        on_progress: impl FnMut(LoadProgress),
    ) -> Result<LoadStats> {
        self.inner.load(on_command, Some(on_rdb_base), on_progress)
    }

    /// Appends the records built by `build` to the in-memory batch (a short mutex; no I/O)
    /// and returns the stream position just after them, plus whatever `build` returned.
    pub fn append<R>(&self, build: impl FnOnce(&mut RecordWriter) -> R) -> Result<(Lsn, R)> {
        self.inner.append(build)
    }

    /// Makes sure every byte up to `lsn` was write()n. Whoever holds the file lock writes
    /// every pending batch, so concurrent committers share one write().
    pub fn commit(&self, lsn: Lsn) -> Result<()> {
        self.inner.commit(lsn)
    }

    /// Under `appendfsync always`, resolves once an fdatasync covering `lsn` finished (one
    /// sync thread; all waiters share each sync). Under `everysec`/`no` it only commits.
    pub async fn wait_synced(&self, lsn: Lsn) -> Result<()> {
        if self.inner.fsync() != FsyncPolicy::Always {
            return self.commit(lsn);
        }
        self.syncer.wait_synced(&self.inner, lsn).await
    }

    /// Makes `lsn` as durable as the fsync policy asks, on the calling thread: under
    /// `always` a write+fdatasync (while another thread is syncing, it first waits for
    /// that sync, which may cover `lsn`), otherwise a write(). A connection thread calls
    /// it once for all the replies it has ready, like Redis before it sends them.
    pub async fn flush_inline(&self, lsn: Lsn) -> Result<()> {
        if self.inner.fsync() != FsyncPolicy::Always {
            return self.commit(lsn);
        }
        self.syncer.sync_inline(&self.inner, lsn).await
    }

    /// Err while the AOF cannot write (disk full, EIO): the server should refuse write
    /// commands with this error's text, like Redis's `-MISCONF` reply.
    pub fn write_status(&self) -> Result<()> {
        self.inner.check_write_status()
    }

    /// Reads a blob's bytes with pread on a cached fd. If they are still only in memory,
    /// commits first. With `verify`, checks the xxh3 recorded in the ref.
    pub fn read_blob(&self, r: &BlobRef, verify: bool) -> Result<Bytes> {
        self.blob_source(r, verify)?.read().map(Bytes::from)
    }

    /// A large value's open file, to read it later and elsewhere (a GET's reply reads
    /// it on a blocking thread). Holding the source keeps the file open, so a rewrite
    /// or an eviction that drops the file meanwhile does not matter.
    pub fn blob_source(&self, r: &BlobRef, verify: bool) -> Result<BlobSource> {
        Ok(BlobSource {
            file: self.blob_file(r)?,
            blob: *r,
            verify,
        })
    }

    /// The open file holding `r`, after making sure its bytes were written to it.
    fn blob_file(&self, r: &BlobRef) -> Result<Arc<dyn LogFile>> {
        if !r.file.is_base() {
            let end = Lsn::new(r.file.seq(), r.offset + r.len);
            if end.0 > self.inner.written_lsn.load(Ordering::Acquire) {
                self.commit(end)?;
            }
        }
        self.inner
            .files
            .read()
            .get(&r.file)
            .cloned()
            .ok_or_else(|| AofError::FileGone(r.file.to_string()))
    }

    /// Writes everything appended so far and, unless `appendfsync no`,
    /// fdatasyncs it (graceful shutdown, SHUTDOWN).
    pub fn flush_all(&self) -> Result<()> {
        match self.inner.fsync() {
            FsyncPolicy::No => {
                let end = self.inner.append.lock().end_lsn();
                self.inner.commit(end)
            }
            _ => self.inner.sync_now(),
        }
    }

    /// The log position every byte before which was fdatasync'd (0 before the first sync).
    pub fn synced_lsn(&self) -> Lsn {
        Lsn(self.inner.synced_lsn.load(Ordering::Acquire))
    }

    /// Resolves once a sync run for another reason covers `lsn` (WAITAOF's local copy);
    /// Err once the log is closed.
    pub async fn synced_past(&self, lsn: Lsn) -> Result<()> {
        self.syncer.synced_past(&self.inner, lsn).await
    }

    /// The stream position just after the last record appended (written
    /// or not): a record appended later has a larger one.
    pub fn end_lsn(&self) -> Lsn {
        self.inner.append.lock().end_lsn()
    }

    /// Bytes in all live base and incr files (written bytes; cheap: one atomic load).
    pub fn current_size(&self) -> u64 {
        self.inner.counters.total_size.load(Ordering::Relaxed)
    }

    /// The fsync policy this log runs with now.
    pub fn fsync_policy(&self) -> FsyncPolicy {
        self.inner.fsync()
    }

    /// CONFIG SET segment-size: the incr file rotates at the new size from
    /// the next write on (a file already past it rotates then). Held below
    /// what a log position can address, as at open.
    pub fn set_segment_size(&self, bytes: u64) {
        let max = (1u64 << (types::LSN_OFFSET_BITS - 1)) - 1;
        self.inner
            .segment_size
            .store(bytes.min(max), Ordering::Relaxed);
    }

    /// CONFIG SET blob-threshold: arguments written from now on are kept in
    /// the log (not in memory) from this size; values already written stay
    /// where they are.
    pub fn set_blob_threshold(&self, bytes: usize) {
        self.inner
            .blob_threshold
            .store(bytes.max(1), Ordering::Relaxed);
    }

    /// The size from which arguments written now are kept in the log.
    pub fn blob_threshold(&self) -> usize {
        self.inner.blob_threshold.load(Ordering::Relaxed)
    }

    /// Changes the fsync policy while the log runs (CONFIG SET appendfsync). The sync
    /// thread syncs once at the change, so a waiter of `always` is never left waiting
    /// under `no`. Leaving `no`, the incr files rotated out meanwhile, never synced, are
    /// queued for the next sync.
    pub fn set_fsync_policy(&self, policy: FsyncPolicy) {
        let old = FsyncPolicy::from_u8(self.inner.fsync.swap(policy.to_u8(), Ordering::AcqRel));
        if old == policy {
            return;
        }
        if old == FsyncPolicy::No {
            let mut w = self.inner.writer.lock();
            let current = w.file_seq;
            let rotated: Vec<_> = self
                .inner
                .files
                .read()
                .iter()
                .filter(|(id, _)| !id.is_base() && id.seq() < current)
                .map(|(_, f)| f.clone())
                .collect();
            w.unsynced_old.extend(rotated);
        }
        self.syncer.policy_changed();
    }

    /// Starts a rewrite: appends move to a fresh incr file; stream the compact keyspace
    /// into the returned base, then call `finish_rewrite` (or `abort_rewrite`).
    pub fn begin_rewrite(&self) -> Result<RewriteBase> {
        self.inner.begin_rewrite(false)
    }

    /// `begin_rewrite` for an RDB-format base (`aof-use-rdb-preamble yes`):
    /// the caller writes the whole RDB file at `RewriteBase::temp_path`,
    /// fsyncs it, calls `adopt_rdb`, then `switch_to_new_base` renames it to
    /// `<basename>.<seq>.base.rdb` and switches the manifest as for a RESP base.
    pub fn begin_rewrite_rdb(&self) -> Result<RewriteBase> {
        self.inner.begin_rewrite(true)
    }

    /// fdatasyncs the base, switches the manifest atomically, then deletes the old files.
    /// BlobRefs into the old files stop working once this returns Ok.
    pub fn finish_rewrite(&self, base: RewriteBase) -> Result<()> {
        self.inner.finish_rewrite(base)?;
        self.inner.drop_history();
        Ok(())
    }

    /// `finish_rewrite` without deleting the old files: the engine switches with every
    /// shard locked, then calls `drop_history` after unlocking, because the file system
    /// can take a long time to free a large log.
    pub fn switch_to_new_base(&self, base: RewriteBase) -> Result<()> {
        self.inner.finish_rewrite(base)
    }

    /// Deletes the files a finished rewrite retired (see `switch_to_new_base`), with no
    /// lock held while they are unlinked; failures are logged and retried at the next open.
    pub fn drop_history(&self) {
        self.inner.drop_history()
    }

    /// Drops a rewrite's unfinished base; the extra incr file it opened stays in use.
    pub fn abort_rewrite(&self, base: RewriteBase) {
        self.inner.abort_rewrite(base)
    }

    /// The current manifest.
    pub fn manifest(&self) -> Manifest {
        self.inner.writer.lock().manifest.clone()
    }

    pub fn stats(&self) -> AofStats {
        let i = &self.inner;
        let c = &i.counters;
        let (appended, seq) = {
            let a = i.append.lock();
            (a.end_lsn(), a.file_seq)
        };
        AofStats {
            current_size: c.total_size.load(Ordering::Relaxed),
            base_size: c.base_size.load(Ordering::Relaxed),
            last_write_error: i.write_error.lock().clone(),
            rewrite_in_progress: i.rewriting.load(Ordering::Relaxed),
            rewrites_ok: c.rewrites_ok.load(Ordering::Relaxed),
            rewrites_failed: c.rewrites_failed.load(Ordering::Relaxed),
            writes: c.writes.load(Ordering::Relaxed),
            fsyncs: c.fsyncs.load(Ordering::Relaxed),
            rotations: c.rotations.load(Ordering::Relaxed),
            appended_lsn: appended,
            written_lsn: Lsn(i.written_lsn.load(Ordering::Relaxed)),
            synced_lsn: Lsn(i.synced_lsn.load(Ordering::Relaxed)),
            current_incr_seq: seq,
        }
    }

    /// Writes and (unless `appendfsync no`) syncs everything appended, then stops the
    /// sync thread. Dropping does the same but can only log errors.
    pub fn close(mut self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<()> {
        self.syncer.shutdown();
        if let Some(t) = self.sync_thread.take() {
            let _ = t.join();
        }
        if !self.inner.append.lock().loaded {
            return Ok(());
        }
        match self.inner.fsync() {
            FsyncPolicy::No => {
                let end = self.inner.append.lock().end_lsn();
                self.inner.commit(end)
            }
            _ => self.inner.sync_now(),
        }
    }
}

impl Drop for Aof {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            tracing::warn!("AOF close: {e}");
        }
    }
}

/// Err unless `bytes` are all of `r` and (with `verify`) have its xxh3.
fn check_blob(r: &BlobRef, verify: bool, bytes: &[u8]) -> Result<()> {
    if bytes.len() as u64 != r.len || (verify && xxh3_64_large(bytes) != r.checksum) {
        return Err(AofError::BlobChecksum {
            file: r.file.to_string(),
            offset: r.offset,
            len: r.len,
        });
    }
    Ok(())
}

/// A large value in an open log file (see [`Aof::blob_source`]).
pub struct BlobSource {
    file: Arc<dyn LogFile>,
    blob: BlobRef,
    verify: bool,
}

impl BlobSource {
    /// Length of the value in bytes.
    pub fn len(&self) -> u64 {
        self.blob.len
    }

    pub fn is_empty(&self) -> bool {
        self.blob.len == 0
    }

    /// Reads the value with pread and checks it (unless `verify-blobs-on-read no`).
    pub fn read(&self) -> Result<Vec<u8>> {
        let len = self.blob.len as usize;
        let mut buf = Vec::with_capacity(len);
        let filled = storage::read_full_at_uninit(
            &*self.file,
            &mut buf.spare_capacity_mut()[..len],
            self.blob.offset,
        )
        .map_err(|e| AofError::io("pread", self.blob.file.to_string(), e))?;
        check_blob(&self.blob, self.verify, filled)?;
        // SAFETY: read_full_at_uninit initialised the `len` bytes it returned (checked
        // to be all of them just above).
        unsafe { buf.set_len(len) };
        Ok(buf)
    }

    /// The value (read and checked here) if the page cache holds all of it; None if
    /// reading it would wait for the disk.
    pub fn read_cached(&self) -> Option<Result<Vec<u8>>> {
        let len = self.blob.len as usize;
        let mut buf = Vec::with_capacity(len);
        let filled = match self
            .file
            .read_cached_uninit(&mut buf.spare_capacity_mut()[..len], self.blob.offset)
        {
            Ok(filled) if filled.len() == len => filled,
            // Partly cached: read it all where waiting is fine.
            Ok(_) => return None,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return None,
            Err(e) => return Some(Err(AofError::io("pread", self.blob.file.to_string(), e))),
        };
        if let Err(e) = check_blob(&self.blob, self.verify, filled) {
            return Some(Err(e));
        }
        // SAFETY: preadv2 initialised all `len` bytes (checked above).
        unsafe { buf.set_len(len) };
        Some(Ok(buf))
    }
}
