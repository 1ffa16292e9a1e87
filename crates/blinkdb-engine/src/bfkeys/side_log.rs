//! Side logs: the values a filter counted as newly added, in order, because
//! neither a kernel map nor a Bloom file can give its items back and an AOF
//! rewrite must keep them (`<id:016x>.klog`: kernel values; `<id:016x>.ilog`:
//! xxh3-128 digests of a user filter's items, which are its probe hashes).
//!
//! Byte layout (little-endian):
//!
//! ```text
//! offset  size  field
//! 0       8     magic        b"BLINKKL\0"
//! 8       4     version      1
//! 12      4     value size   v: 16 (xxh3-128 digest) or a kernel filter's RAW width
//! 16      v*n   values       in the order they were added; a torn tail is cut
//! ```

use crate::bloom::BloomError;
use parking_lot::Mutex;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

const MAGIC: [u8; 8] = *b"BLINKKL\0";
const VERSION: u32 = 1;
const HEADER: u64 = 16;

/// A user filter's digest log.
pub(crate) fn item_log_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id:016x}.ilog"))
}

pub(crate) fn storage(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> BloomError {
    let path = path.display().to_string();
    move |e| BloomError::Storage(format!("{op} {path}: {e}"))
}

/// Logs up to this size are read at once when snapshotted (no descriptor held).
const SNAPSHOT_READ_NOW_BYTES: u64 = 64 * 1024;

/// The first `entries` values of a side log as they are now. A small log (or
/// one snapshotted with `hold_open` false) is read at once into one buffer; a
/// large one is read later in chunks through a handle opened now: the file is
/// append-only, and the handle keeps it readable even if the filter is deleted
/// (and its log unlinked) meanwhile.
pub struct ValuesSnapshot {
    source: SnapshotSource,
    path: PathBuf,
    value_size: usize,
    entries: u64,
}

enum SnapshotSource {
    File(File),
    Read(Vec<u8>),
}

impl ValuesSnapshot {
    pub(crate) fn open(
        path: &Path,
        value_size: usize,
        entries: u64,
        hold_open: bool,
    ) -> Result<ValuesSnapshot, BloomError> {
        use std::os::unix::fs::FileExt;
        let file = File::open(path).map_err(storage("open", path))?;
        let bytes = entries.saturating_mul(value_size as u64);
        let source = if hold_open && bytes > SNAPSHOT_READ_NOW_BYTES {
            SnapshotSource::File(file)
        } else {
            let len = usize::try_from(bytes)
                .map_err(|_| BloomError::Storage(format!("{}: too large", path.display())))?;
            let mut raw = vec![0u8; len];
            file.read_exact_at(&mut raw, HEADER)
                .map_err(storage("read", path))?;
            SnapshotSource::Read(raw)
        };
        Ok(ValuesSnapshot {
            source,
            path: path.to_path_buf(),
            value_size,
            entries,
        })
    }

    /// Whether this snapshot holds a file descriptor until it is written.
    pub fn holds_file(&self) -> bool {
        matches!(self.source, SnapshotSource::File(_))
    }

    /// Calls `f` with the values from number `from` on, in order, at most
    /// `per_call` at a time; stops at the first error.
    pub fn for_each_chunk(
        &self,
        from: u64,
        per_call: usize,
        mut f: impl FnMut(&[&[u8]]) -> Result<(), BloomError>,
    ) -> Result<(), BloomError> {
        use std::os::unix::fs::FileExt;
        let size = self.value_size.max(1);
        let mut buf = match self.source {
            SnapshotSource::File(_) => vec![0u8; per_call * size],
            SnapshotSource::Read(_) => Vec::new(),
        };
        let mut done = from;
        while done < self.entries {
            let n = (self.entries - done).min(per_call as u64) as usize;
            let chunk: &[u8] = match &self.source {
                SnapshotSource::File(file) => {
                    let chunk = &mut buf[..n * size];
                    file.read_exact_at(chunk, HEADER + done * size as u64)
                        .map_err(storage("read", &self.path))?;
                    chunk
                }
                SnapshotSource::Read(raw) => {
                    let at = done as usize * size;
                    &raw[at..at + n * size]
                }
            };
            let values: Vec<&[u8]> = chunk.chunks_exact(size).collect();
            f(&values)?;
            done += n as u64;
        }
        Ok(())
    }
}

/// Opens the side log for appending, writing its header if new and cutting a
/// torn last value; returns it and the number of whole values.
pub(crate) fn open_side_log(path: &Path, value_size: u32) -> Result<(File, u64), BloomError> {
    let mut file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .map_err(storage("open", path))?;
    let len = file.metadata().map_err(storage("fstat", path))?.len();
    if len < HEADER {
        file.set_len(0).map_err(storage("truncate", path))?;
        let mut header = Vec::with_capacity(HEADER as usize);
        header.extend_from_slice(&MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&value_size.to_le_bytes());
        file.write_all(&header).map_err(storage("write", path))?;
        return Ok((file, 0));
    }
    let mut header = [0u8; HEADER as usize];
    file.read_exact(&mut header)
        .map_err(storage("read", path))?;
    if header[..8] != MAGIC
        || header[8..12] != VERSION.to_le_bytes()
        || header[12..16] != value_size.to_le_bytes()
    {
        return Err(BloomError::Storage(format!(
            "side log {} has a bad header or another value size",
            path.display()
        )));
    }
    let entries = (len - HEADER) / value_size as u64;
    let whole = HEADER + entries * value_size as u64;
    if whole != len {
        tracing::warn!(path = %path.display(), "cutting a torn value off a kernel filter side log");
        file.set_len(whole).map_err(storage("truncate", path))?;
    }
    Ok((file, entries))
}

/// A user filter's digest log, and whether it holds items #1.. of the filter's
/// whole life (false after a gap: a filter restored by BF.LOADCHUNK, or bound by
/// a binding whose counted items it lacks).
///
/// Appends are buffered in memory and written at the periodic flush (or when
/// 64 KiB pile up), and a new filter's file is only created then: a `write()` per
/// added item and a file per BF.RESERVE would cost more than the add itself. A
/// digest lost from the buffer by a crash is still in the AOF, whose replay
/// appends what the log lacks.
pub(crate) struct ItemLog {
    path: PathBuf,
    inner: Mutex<ItemLogState>,
}

struct ItemLogState {
    /// None until the first write-out of a new log.
    file: Option<File>,
    /// Digests not written yet.
    pending: Vec<u8>,
    /// Digests in the file plus pending ones.
    entries: u64,
    complete: bool,
}

const DIGEST: u32 = 16;
const WRITE_OUT_BYTES: usize = 64 * 1024;

impl ItemLog {
    /// A new, empty log for a new filter (a stale file is replaced at the first write-out).
    pub(crate) fn create(dir: &Path, id: u64) -> Result<ItemLog, BloomError> {
        Ok(ItemLog {
            path: item_log_path(dir, id),
            inner: Mutex::new(ItemLogState {
                file: None,
                pending: Vec::new(),
                entries: 0,
                complete: true,
            }),
        })
    }

    /// The log at replay; `base` items were counted before the binding record.
    pub(crate) fn open(dir: &Path, id: u64, base: u64) -> Result<ItemLog, BloomError> {
        let path = item_log_path(dir, id);
        let (file, entries) = open_side_log(&path, DIGEST)?;
        Ok(ItemLog {
            path,
            inner: Mutex::new(ItemLogState {
                file: Some(file),
                pending: Vec::new(),
                entries,
                complete: entries >= base,
            }),
        })
    }

    /// A log that cannot be complete (BF.LOADCHUNK: the items are unknown).
    pub(crate) fn incomplete(dir: &Path, id: u64) -> Result<ItemLog, BloomError> {
        let log = ItemLog::create(dir, id)?;
        log.inner.lock().complete = false;
        Ok(log)
    }

    pub(crate) fn append(&self, digest: &[u8]) -> Result<(), BloomError> {
        let mut state = self.inner.lock();
        state.pending.extend_from_slice(digest);
        state.entries += 1;
        if state.pending.len() >= WRITE_OUT_BYTES {
            self.write_out(&mut state)?;
        }
        Ok(())
    }

    /// Replay of the filter's item number `n` (1-based): appended unless the
    /// log already has it; a gap makes the log incomplete.
    pub(crate) fn replayed(&self, n: u64, digest: &[u8]) -> Result<(), BloomError> {
        let entries = {
            let mut state = self.inner.lock();
            if n > state.entries + 1 {
                state.complete = false;
            }
            state.entries
        };
        if n == entries + 1 {
            self.append(digest)?;
        }
        Ok(())
    }

    pub(crate) fn is_complete(&self) -> bool {
        self.inner.lock().complete
    }

    /// Whether the log has a file (a log never written out has none to delete).
    pub(crate) fn on_disk(&self) -> bool {
        self.inner.lock().file.is_some()
    }

    /// The digests logged so far, written out (rebuild, AOF rewrite; see `ValuesSnapshot`).
    pub(crate) fn snapshot(&self, hold_open: bool) -> Result<Option<ValuesSnapshot>, BloomError> {
        let mut state = self.inner.lock();
        self.write_out(&mut state)?;
        if state.file.is_none() {
            return Ok(None);
        }
        ValuesSnapshot::open(&self.path, DIGEST as usize, state.entries, hold_open).map(Some)
    }

    /// Writes the buffered digests and fdatasyncs the file.
    pub(crate) fn sync(&self) -> Result<(), BloomError> {
        let mut state = self.inner.lock();
        self.write_out(&mut state)?;
        match &state.file {
            Some(file) => file.sync_data().map_err(storage("fsync", &self.path)),
            None => Ok(()),
        }
    }

    fn write_out(&self, state: &mut ItemLogState) -> Result<(), BloomError> {
        if state.file.is_none() {
            if state.pending.is_empty() {
                return Ok(());
            }
            let _ = std::fs::remove_file(&self.path);
            state.file = Some(open_side_log(&self.path, DIGEST)?.0);
        }
        if !state.pending.is_empty() {
            let file = state.file.as_mut().expect("opened above");
            file.write_all(&state.pending)
                .map_err(storage("append", &self.path))?;
            state.pending.clear();
        }
        Ok(())
    }

    /// COPY: the same items under filter `to`.
    pub(crate) fn copy_to(&self, dir: &Path, to: u64) -> Result<ItemLog, BloomError> {
        self.sync()?;
        let (on_disk, entries, complete) = {
            let state = self.inner.lock();
            (state.file.is_some(), state.entries, state.complete)
        };
        let copy = if on_disk {
            let path = item_log_path(dir, to);
            std::fs::copy(&self.path, &path).map_err(storage("copy to", &path))?;
            ItemLog::open(dir, to, entries)?
        } else {
            ItemLog::create(dir, to)?
        };
        copy.inner.lock().complete = complete;
        Ok(copy)
    }

    pub(crate) fn remove(dir: &Path, id: u64) -> Result<(), BloomError> {
        let path = item_log_path(dir, id);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(storage("remove", &path)(e)),
            _ => Ok(()),
        }
    }
}
