//! Appending and the group write: appends copy RESP bytes into an in-memory batch under a
//! short mutex; whoever then holds the file lock seals every pending batch (adding its
//! `#BK` annotation) and writes them all, so concurrent committers share one write().

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::error::{AofError, Result};
use super::manifest::{incr_name, FileKind, Manifest, ManifestEntry};
use super::options::{AofOptions, FsyncPolicy};
use super::record::{encode_command, seal_batch};
use super::storage::{write_all_at, LogFile, Storage};
use super::types::{BlobRef, FileId, Lsn};

/// A sealed run of bytes destined for one incr file at one offset. Empty `bytes` marks a
/// forced rotation to `file_seq` (used by rewrite).
pub(crate) struct SealedBatch {
    pub file_seq: u64,
    pub offset: u64,
    pub bytes: Vec<u8>,
    pub end_lsn: Lsn,
}

/// State behind the short append mutex.
pub(crate) struct AppendState {
    pub loaded: bool,
    /// Incr file the open batch belongs to.
    pub file_seq: u64,
    /// File offset of `open[0]`.
    pub open_start: u64,
    pub open: Vec<u8>,
    pub sealed: VecDeque<SealedBatch>,
    /// `AofOptions::batch_checksums`.
    pub checksums: bool,
}

impl AppendState {
    fn end(&self) -> u64 {
        self.open_start + self.open.len() as u64
    }
    pub fn end_lsn(&self) -> Lsn {
        Lsn::new(self.file_seq, self.end())
    }
    pub fn seal(&mut self) {
        if self.open.is_empty() {
            return;
        }
        if self.checksums {
            seal_batch(&mut self.open, 0);
        }
        let bytes = std::mem::take(&mut self.open);
        let offset = self.open_start;
        self.open_start += bytes.len() as u64;
        self.sealed.push_back(SealedBatch {
            file_seq: self.file_seq,
            offset,
            bytes,
            end_lsn: Lsn::new(self.file_seq, self.open_start),
        });
    }
    /// Closes the current incr file for appends; later records go to the next seq.
    pub fn rotate(&mut self) -> u64 {
        self.seal();
        self.file_seq += 1;
        self.open_start = 0;
        self.sealed.push_back(SealedBatch {
            file_seq: self.file_seq,
            offset: 0,
            bytes: Vec::new(),
            end_lsn: Lsn::new(self.file_seq, 0),
        });
        self.file_seq
    }
}

/// Builds the records of one [`super::Aof::append`] call.
pub struct RecordWriter<'a> {
    state: &'a mut AppendState,
    blob_threshold: usize,
}

impl RecordWriter<'_> {
    /// Sequence number of the incr file these records go to (a new file
    /// starts with no SELECT in force, so callers re-select after a change).
    pub fn file_seq(&self) -> u64 {
        self.state.file_seq
    }

    /// Appends one command (RESP array of bulk strings). Returns where each argument of at
    /// least `blob_threshold` bytes will lie on disk, in argument order.
    pub fn command(&mut self, args: &[&[u8]]) -> Vec<BlobRef> {
        let base = self.state.open_start;
        let file = FileId::incr(self.state.file_seq);
        encode_command(&mut self.state.open, args, file, base, self.blob_threshold)
    }
}

/// State behind the file lock.
pub(crate) struct WriterState {
    pub manifest: Manifest,
    pub file_seq: u64,
    pub file: Option<Arc<dyn LogFile>>,
    pub written_end: u64,
    /// Batches taken from the append state but not yet written (kept across failures).
    pub queue: VecDeque<SealedBatch>,
    /// Files rotated away whose last bytes still await an fdatasync.
    pub unsynced_old: Vec<Arc<dyn LogFile>>,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub writes: AtomicU64,
    pub fsyncs: AtomicU64,
    pub rotations: AtomicU64,
    pub rewrites_ok: AtomicU64,
    pub rewrites_failed: AtomicU64,
    pub base_size: AtomicU64,
    /// Bytes in all live base and incr files.
    pub total_size: AtomicU64,
}

pub(crate) struct Inner {
    pub opts: AofOptions,
    /// `opts.segment_size` and `opts.blob_threshold` as they are now: CONFIG
    /// SET changes them for the next incr file and the next write.
    pub segment_size: AtomicU64,
    pub blob_threshold: AtomicUsize,
    /// The fsync policy now (`FsyncPolicy::to_u8`): CONFIG SET appendfsync changes it.
    pub fsync: AtomicU8,
    pub storage: Arc<dyn Storage>,
    pub append: Mutex<AppendState>,
    pub writer: Mutex<WriterState>,
    pub written_lsn: AtomicU64,
    pub synced_lsn: AtomicU64,
    /// Set while the last write()/rotation failed; cleared by the next success.
    pub write_error: Mutex<Option<String>>,
    pub write_failing: AtomicBool,
    pub files: RwLock<HashMap<FileId, Arc<dyn LogFile>>>,
    pub counters: Counters,
    pub rewriting: AtomicBool,
    /// The incr file appends go to (mirrors `AppendState::file_seq`, readable without
    /// the append lock; it only grows).
    pub append_seq: AtomicU64,
}

impl Inner {
    pub fn fsync(&self) -> FsyncPolicy {
        FsyncPolicy::from_u8(self.fsync.load(Ordering::Acquire))
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.opts.dir.join(name)
    }

    pub fn append<R>(&self, build: impl FnOnce(&mut RecordWriter) -> R) -> Result<(Lsn, R)> {
        let mut a = self.append.lock();
        if !a.loaded {
            return Err(AofError::NotLoaded);
        }
        if a.end() >= self.segment_size.load(Ordering::Relaxed) {
            let seq = a.rotate();
            self.append_seq.store(seq, Ordering::Release);
        }
        let mut w = RecordWriter {
            state: &mut a,
            blob_threshold: self.blob_threshold.load(Ordering::Relaxed),
        };
        let r = build(&mut w);
        Ok((a.end_lsn(), r))
    }

    pub fn check_write_status(&self) -> Result<()> {
        if !self.write_failing.load(Ordering::Acquire) {
            return Ok(());
        }
        match self.write_error.lock().clone() {
            Some(reason) => Err(AofError::WriteFailed { reason }),
            None => Ok(()),
        }
    }

    /// Closes the current incr file for appends (appends go to a new one)
    /// and writes out everything appended before; returns the new file's seq.
    /// A rewrite's base starts there; cache mode can then drop the old file.
    pub(super) fn rotate_incr(&self) -> Result<u64> {
        let seq = {
            let mut a = self.append.lock();
            if !a.loaded {
                return Err(AofError::NotLoaded);
            }
            let seq = a.rotate();
            self.append_seq.store(seq, Ordering::Release);
            seq
        };
        self.commit(Lsn::new(seq, 0))?;
        Ok(seq)
    }

    /// Makes sure every byte up to `lsn` has been write()n.
    pub fn commit(&self, lsn: Lsn) -> Result<()> {
        if lsn.0 <= self.written_lsn.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut w = self.writer.lock();
        if lsn.0 <= self.written_lsn.load(Ordering::Acquire) {
            return Ok(());
        }
        {
            let mut a = self.append.lock();
            a.seal();
            w.queue.extend(a.sealed.drain(..));
        }
        match self.write_queue(&mut w) {
            Ok(()) => {
                if self.write_failing.swap(false, Ordering::AcqRel) {
                    tracing::warn!("AOF write error looks solved, BlinkDB can write again.");
                    *self.write_error.lock() = None;
                }
                Ok(())
            }
            Err(e) => {
                let reason = match &e {
                    AofError::Io { source, .. } => strerror(source),
                    other => other.to_string(),
                };
                tracing::warn!("Error writing to the AOF file: {e}");
                *self.write_error.lock() = Some(reason.clone());
                self.write_failing.store(true, Ordering::Release);
                Err(AofError::WriteFailed { reason })
            }
        }
    }

    fn write_queue(&self, w: &mut WriterState) -> Result<()> {
        while let Some(batch) = w.queue.front() {
            if batch.file_seq != w.file_seq {
                let seq = batch.file_seq;
                self.rotate_file(w, seq)?;
            }
            let batch = w.queue.front().expect("queue head checked above");
            if !batch.bytes.is_empty() {
                debug_assert_eq!(batch.offset, w.written_end);
                let file = w.file.clone().expect("writer file open after load");
                if let Err((landed, e)) = write_all_at(&*file, &batch.bytes, batch.offset) {
                    if landed > 0 {
                        // Remove the torn bytes now; a retry rewrites them at the same
                        // offset anyway, so a failing truncate is only logged.
                        if let Err(te) = file.set_len(batch.offset) {
                            tracing::warn!("Could not remove short write from the AOF: {te}");
                        }
                    }
                    let path = self.path(&incr_name(&self.opts.basename, w.file_seq));
                    return Err(AofError::io("write", path, e));
                }
                self.counters.writes.fetch_add(1, Ordering::Relaxed);
                self.counters
                    .total_size
                    .fetch_add(batch.bytes.len() as u64, Ordering::Relaxed);
                w.written_end = batch.offset + batch.bytes.len() as u64;
            }
            let end = batch.end_lsn;
            w.queue.pop_front();
            self.written_lsn.fetch_max(end.0, Ordering::AcqRel);
        }
        Ok(())
    }

    /// Starts incr file `seq` and records it in the manifest; nothing changes on failure.
    fn rotate_file(&self, w: &mut WriterState, seq: u64) -> Result<()> {
        let name = incr_name(&self.opts.basename, seq);
        let path = self.path(&name);
        let file = self
            .storage
            .create(&path)
            .map_err(|e| AofError::io("create", &path, e))?;
        let mut next = w.manifest.clone();
        next.incr.push(ManifestEntry {
            name,
            seq,
            kind: FileKind::Incr,
        });
        next.persist(&*self.storage, &self.opts.dir, &self.opts.basename)?;
        w.manifest = next;
        if let Some(old) = w.file.replace(file.clone()) {
            if self.fsync() != FsyncPolicy::No {
                w.unsynced_old.push(old);
            }
        }
        w.file_seq = seq;
        w.written_end = 0;
        self.files.write().insert(FileId::incr(seq), file);
        self.counters.rotations.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Writes everything appended so far, then fdatasyncs every file holding unsynced bytes.
    pub fn sync_now(&self) -> Result<()> {
        let target = self.append.lock().end_lsn();
        self.commit(target)?;
        let (file, old, written) = {
            let mut w = self.writer.lock();
            let written = self.written_lsn.load(Ordering::Acquire);
            (w.file.clone(), std::mem::take(&mut w.unsynced_old), written)
        };
        if written <= self.synced_lsn.load(Ordering::Acquire) {
            return Ok(());
        }
        let sync = |f: &Arc<dyn LogFile>| {
            f.sync_data().map_err(|e| AofError::SyncFailed {
                reason: strerror(&e),
            })
        };
        for (i, f) in old.iter().enumerate() {
            if let Err(e) = sync(f) {
                self.writer
                    .lock()
                    .unsynced_old
                    .extend(old[i..].iter().cloned());
                return Err(e);
            }
            self.counters.fsyncs.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(f) = file {
            sync(&f)?;
            self.counters.fsyncs.fetch_add(1, Ordering::Relaxed);
        }
        self.synced_lsn.fetch_max(written, Ordering::AcqRel);
        Ok(())
    }
}

/// The strerror(3)-style text Redis puts in its MISCONF reply ("No space left on device").
pub(crate) fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
