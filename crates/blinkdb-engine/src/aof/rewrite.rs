//! Rewrite (BGREWRITEAOF) file mechanics. The caller streams a compact keyspace into a new
//! base; the switch is one atomic manifest replacement, so a crash at any step leaves
//! either the old set of files or the new one loadable.
//!
//! 1. `begin`: close the current incr file for appends (new incr file + manifest update).
//! 2. commands go to `temp-rewrite-<basename>.<seq>.base.aof`, in annotated batches.
//! 3. `finish`: fdatasync the base, rename it to `<basename>.<seq>.base.aof`, write the
//!    manifest naming it as base and the old base/incr files as history (temp, fsync,
//!    rename, fsync dir).
//! 4. `drop_history`: delete the history files, write the manifest without them.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::error::{AofError, Result};
use super::manifest::{base_name, rdb_base_name, FileKind, ManifestEntry};
use super::record::{encode_command, seal_batch};
use super::storage::{write_all_at, LogFile};
use super::types::{BlobRef, FileId};
use super::writer::Inner;

/// Bytes buffered before a base batch is written.
const BASE_BATCH: usize = 1 << 20;
/// Bytes of base written between two fdatasyncs (Redis: 4 MB).
const INCREMENTAL_SYNC: u64 = 4 << 20;

/// Name of the base a rewrite writes until it switches to it; `seq` is the next base's.
pub(crate) fn temp_base_name(basename: &str, seq: u64) -> String {
    format!("temp-rewrite-{}", base_name(basename, seq))
}

/// `temp_base_name` for an RDB-format base.
pub(crate) fn temp_rdb_base_name(basename: &str, seq: u64) -> String {
    format!("temp-rewrite-{}", rdb_base_name(basename, seq))
}

/// A base file being written by a rewrite.
pub struct RewriteBase {
    file: Arc<dyn LogFile>,
    temp_name: String,
    temp_path: std::path::PathBuf,
    /// An RDB-format base (`aof-use-rdb-preamble yes`): the caller writes the
    /// whole file at `temp_path` itself (`rdb::RdbFileWriter`, which fsyncs
    /// it) and hands over its size with `adopt_rdb`; `command` is refused.
    seq: u64,
    /// Incr files below this seq are covered by the new base.
    first_kept_incr: u64,
    blob_threshold: usize,
    /// `AofOptions::batch_checksums`.
    checksums: bool,
    buf: Vec<u8>,
    /// File offset of `buf[0]`.
    offset: u64,
    /// Bytes of the base known to be on disk.
    synced: u64,
    rdb: bool,
}

impl RewriteBase {
    /// Where the caller writes an RDB-format base (see `begin_rewrite_rdb`).
    pub fn temp_path(&self) -> &std::path::Path {
        &self.temp_path
    }

    /// Whether this base is RDB-format.
    pub fn is_rdb(&self) -> bool {
        self.rdb
    }

    /// The caller wrote and fsynced `len` bytes of RDB at `temp_path`.
    pub fn adopt_rdb(&mut self, len: u64) {
        debug_assert!(self.rdb && self.buf.is_empty());
        self.offset = len;
        self.synced = len;
    }

    /// A large value the caller wrote into the RDB base uncompressed: its
    /// payload's `len` bytes at `offset`, with xxh3-64 `checksum`. Readable
    /// once the switch succeeded.
    pub fn blob_ref(&self, offset: u64, len: u64, checksum: u64) -> BlobRef {
        BlobRef {
            file: FileId::base(self.seq),
            offset,
            len,
            checksum,
        }
    }

    /// Adds one command to the new base; returns refs (into the new base) for its large
    /// arguments. They become readable once `finish_rewrite` succeeded.
    pub fn command(&mut self, args: &[&[u8]]) -> Result<Vec<BlobRef>> {
        if self.rdb {
            return Err(AofError::Corrupt {
                file: self.temp_name.clone(),
                offset: self.offset,
                reason: "a command written into an RDB-format base".into(),
            });
        }
        let refs = encode_command(
            &mut self.buf,
            args,
            FileId::base(self.seq),
            self.offset,
            self.blob_threshold,
        );
        if self.buf.len() >= BASE_BATCH {
            self.flush()?;
        }
        Ok(refs)
    }

    /// Bytes written to the new base so far (including buffered ones).
    pub fn size(&self) -> u64 {
        self.offset + self.buf.len() as u64
    }

    /// Writes what is buffered and fdatasyncs the base. The engine calls it before it
    /// locks every shard for `finish_rewrite`, whose own call then finds nothing left to
    /// sync: the sync of a large base (hundreds of ms per GB here) happens while
    /// clients run.
    pub fn sync(&mut self) -> Result<()> {
        self.flush()?;
        self.sync_written()
    }

    /// fdatasync of the bytes written so far, unless they are all synced already.
    fn sync_written(&mut self) -> Result<()> {
        if self.synced == self.offset {
            return Ok(());
        }
        self.file
            .sync_data()
            .map_err(|e| AofError::io("fdatasync", &self.temp_name, e))?;
        self.synced = self.offset;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        if self.checksums {
            seal_batch(&mut self.buf, 0);
        }
        write_all_at(&*self.file, &self.buf, self.offset)
            .map_err(|(_, e)| AofError::io("write", &self.temp_name, e))?;
        self.offset += self.buf.len() as u64;
        self.buf.clear();
        // As Redis's `aof-rewrite-incremental-fsync yes`: sync every few MB, so that the
        // kernel never holds a large base's worth of dirty pages. Without it, writing a
        // 1 GB base made the kernel throttle every writer of the file system, the
        // connection thread's AOF write() included (stalls of 250-500 ms).
        if self.offset - self.synced >= INCREMENTAL_SYNC {
            self.sync_written()?;
        }
        Ok(())
    }
}

impl Inner {
    pub fn begin_rewrite(&self, rdb: bool) -> Result<RewriteBase> {
        if self.rewriting.swap(true, Ordering::AcqRel) {
            return Err(AofError::RewriteInProgress);
        }
        let result = self.start_base(rdb);
        if result.is_err() {
            self.rewriting.store(false, Ordering::Release);
            self.counters
                .rewrites_failed
                .fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    fn start_base(&self, rdb: bool) -> Result<RewriteBase> {
        let new_incr = self.rotate_incr()?;
        let seq = self.writer.lock().manifest.base_seq() + 1;
        let temp_name = if rdb {
            temp_rdb_base_name(&self.opts.basename, seq)
        } else {
            temp_base_name(&self.opts.basename, seq)
        };
        let path = self.path(&temp_name);
        let file = self
            .storage
            .create(&path)
            .map_err(|e| AofError::io("create", &path, e))?;
        Ok(RewriteBase {
            file,
            temp_name,
            temp_path: path,
            rdb,
            seq,
            first_kept_incr: new_incr,
            blob_threshold: self
                .blob_threshold
                .load(std::sync::atomic::Ordering::Relaxed),
            checksums: self.opts.batch_checksums,
            buf: Vec::new(),
            offset: 0,
            synced: 0,
        })
    }

    pub fn finish_rewrite(&self, mut base: RewriteBase) -> Result<()> {
        let result = self.switch_to_base(&mut base);
        self.rewriting.store(false, Ordering::Release);
        match &result {
            Ok(()) => self.counters.rewrites_ok.fetch_add(1, Ordering::Relaxed),
            Err(_) => self
                .counters
                .rewrites_failed
                .fetch_add(1, Ordering::Relaxed),
        };
        result
    }

    fn switch_to_base(&self, base: &mut RewriteBase) -> Result<()> {
        base.sync()?;
        let temp = self.path(&base.temp_name);
        let name = if base.rdb {
            rdb_base_name(&self.opts.basename, base.seq)
        } else {
            base_name(&self.opts.basename, base.seq)
        };
        let path = self.path(&name);
        self.storage
            .rename(&temp, &path)
            .map_err(|e| AofError::io("rename", &path, e))?;

        let mut w = self.writer.lock();
        let mut next = w.manifest.clone();
        let mut retired = Vec::new();
        if let Some(old) = next.base.take() {
            retired.push((FileId::base(old.seq), old.name.clone()));
            next.history.push(ManifestEntry {
                kind: FileKind::History,
                ..old
            });
        }
        let (old_incr, kept): (Vec<_>, Vec<_>) = next
            .incr
            .drain(..)
            .partition(|e| e.seq < base.first_kept_incr);
        next.incr = kept;
        for e in old_incr {
            retired.push((FileId::incr(e.seq), e.name.clone()));
            next.history.push(ManifestEntry {
                kind: FileKind::History,
                ..e
            });
        }
        next.base = Some(ManifestEntry {
            name,
            seq: base.seq,
            kind: FileKind::Base,
        });
        next.persist(&*self.storage, &self.opts.dir, &self.opts.basename)?;
        w.manifest = next;
        self.files
            .write()
            .insert(FileId::base(base.seq), base.file.clone());
        let base_size = base.offset;
        self.counters.base_size.store(base_size, Ordering::Relaxed);
        let mut total = base_size;
        for e in &w.manifest.incr {
            if let Some(f) = self.files.read().get(&FileId::incr(e.seq)) {
                total += f.size().unwrap_or(0);
            }
        }
        self.counters.total_size.store(total, Ordering::Relaxed);
        for (id, _) in &retired {
            self.files.write().remove(id);
        }
        Ok(())
    }

    /// Deletes the history files without holding the writer lock (unlinking a GB-sized
    /// log took 100-300 ms here, during which no AOF write could start), then drops
    /// their manifest entries under it. Failures are only logged: history entries are
    /// never loaded, and the next open retries.
    pub fn drop_history(&self) {
        let history = self.writer.lock().manifest.history.clone();
        if history.is_empty() {
            return;
        }
        for h in &history {
            let path = self.path(&h.name);
            if self.storage.exists(&path) {
                if let Err(e) = self.storage.remove(&path) {
                    tracing::warn!("Could not remove AOF history file {}: {e}", h.name);
                    return;
                }
            }
        }
        let mut w = self.writer.lock();
        let mut next = w.manifest.clone();
        next.history
            .retain(|e| !history.iter().any(|h| h.name == e.name));
        match next.persist(&*self.storage, &self.opts.dir, &self.opts.basename) {
            Ok(()) => w.manifest = next,
            Err(e) => tracing::warn!("Could not drop AOF history entries: {e}"),
        }
    }

    pub fn abort_rewrite(&self, base: RewriteBase) {
        let path = self.path(&base.temp_name);
        drop(base);
        if let Err(e) = self.storage.remove(&path) {
            tracing::warn!("Could not remove {}: {e}", path.display());
        }
        self.rewriting.store(false, Ordering::Release);
        self.counters
            .rewrites_failed
            .fetch_add(1, Ordering::Relaxed);
    }
}
