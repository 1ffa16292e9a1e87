//! Cache mode's file side: dropping the oldest whole segment (the base, else the oldest
//! incr file) with the same atomic manifest replacement a rewrite uses, then unlinking it.
//! Which keys go with it is the keyspace's business (`engine/src/evict.rs`).

use std::sync::atomic::Ordering;

use super::error::{AofError, Result};
use super::types::FileId;
use super::writer::Inner;
use super::Aof;

/// The file cache mode would drop next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OldestSegment {
    pub file: FileId,
    /// Keys whose value was created in an incr file below this seq (or, for the base, in
    /// it) cannot be rebuilt once `file` is gone. The base precedes every incr file, so
    /// dropping it cuts at the first incr seq; dropping incr `n` cuts at `n + 1`.
    pub cutoff_seq: u64,
    /// Bytes of the file on disk.
    pub bytes: u64,
}

impl Inner {
    fn file_size(&self, id: FileId) -> u64 {
        self.files
            .read()
            .get(&id)
            .and_then(|f| f.size().ok())
            .unwrap_or(0)
    }

    fn oldest(&self) -> Option<OldestSegment> {
        let w = self.writer.lock();
        let m = &w.manifest;
        let first_incr = m.incr.first()?;
        if let Some(b) = &m.base {
            let file = FileId::base(b.seq);
            return Some(OldestSegment {
                file,
                cutoff_seq: first_incr.seq,
                bytes: self.file_size(file),
            });
        }
        if m.incr.len() < 2 {
            return None;
        }
        let file = FileId::incr(first_incr.seq);
        Some(OldestSegment {
            file,
            cutoff_seq: first_incr.seq + 1,
            bytes: self.file_size(file),
        })
    }

    fn drop_segment(&self, victim: FileId) -> Result<u64> {
        if self.rewriting.load(Ordering::Acquire) {
            return Err(AofError::RewriteInProgress);
        }
        let mut w = self.writer.lock();
        let mut next = w.manifest.clone();
        let name = if victim.is_base() {
            match next.base.take() {
                Some(b) if b.seq == victim.seq() => b.name,
                _ => return Err(AofError::FileGone(victim.to_string())),
            }
        } else {
            // Never the file appends go to: a dropped segment must be closed.
            let droppable = next.incr.len() > 1
                && next.incr[0].seq == victim.seq()
                && victim.seq() != w.file_seq;
            if !droppable {
                return Err(AofError::FileGone(victim.to_string()));
            }
            next.incr.remove(0).name
        };
        next.persist(&*self.storage, &self.opts.dir, &self.opts.basename)?;
        w.manifest = next;
        drop(w);
        let size = self.file_size(victim);
        self.files.write().remove(&victim);
        let path = self.path(&name);
        if let Err(e) = self.storage.remove(&path) {
            // The manifest no longer names it, so it is never loaded; only disk is lost.
            tracing::warn!("Could not remove dropped AOF segment {name}: {e}");
        }
        let c = &self.counters;
        let _ = c
            .total_size
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                Some(t.saturating_sub(size))
            });
        if victim.is_base() {
            c.base_size.store(0, Ordering::Relaxed);
        }
        Ok(size)
    }
}

impl Aof {
    /// The incr file appends currently go to. Only grows; a record appended after this
    /// call lands in this file or a later one.
    pub fn append_seq(&self) -> u64 {
        self.inner.append_seq.load(Ordering::Acquire)
    }

    /// The segment cache mode would drop next: the base if there is one, else the oldest
    /// incr file. When the only incr file is the active one and holds records, it is
    /// rotated first so it can be dropped; an empty log has nothing to drop (None).
    pub fn oldest_segment(&self) -> Result<Option<OldestSegment>> {
        if let Some(s) = self.inner.oldest() {
            return Ok(Some(s));
        }
        let holds_records = {
            let a = self.inner.append.lock();
            a.end_lsn().offset() > 0
        };
        if !holds_records {
            return Ok(None);
        }
        self.inner.rotate_incr()?;
        Ok(self.inner.oldest())
    }

    /// Removes `victim` (as named by `oldest_segment`) from the manifest, atomically, then
    /// unlinks it. Returns its size. Blob refs into it stop working.
    pub fn drop_segment(&self, victim: FileId) -> Result<u64> {
        self.inner.drop_segment(victim)
    }
}
