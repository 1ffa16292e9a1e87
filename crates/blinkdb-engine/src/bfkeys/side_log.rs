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

/// The first `entries` values of a side log.
pub(crate) fn read_values(
    path: &Path,
    value_size: usize,
    entries: u64,
) -> Result<Vec<Vec<u8>>, BloomError> {
    let mut raw = Vec::new();
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut raw))
        .map_err(storage("read", path))?;
    Ok(raw
        .get(HEADER as usize..)
        .unwrap_or_default()
        .chunks_exact(value_size)
        .take(entries as usize)
        .map(<[u8]>::to_vec)
        .collect())
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
pub(crate) struct ItemLog {
    file: File,
    path: PathBuf,
    entries: u64,
    complete: bool,
}

const DIGEST: u32 = 16;

impl ItemLog {
    /// A new, empty log for a new filter (a stale one is replaced).
    pub(crate) fn create(dir: &Path, id: u64) -> Result<ItemLog, BloomError> {
        let path = item_log_path(dir, id);
        let _ = std::fs::remove_file(&path);
        let (file, entries) = open_side_log(&path, DIGEST)?;
        Ok(ItemLog {
            file,
            path,
            entries,
            complete: true,
        })
    }

    /// The log at replay; `base` items were counted before the binding record.
    pub(crate) fn open(dir: &Path, id: u64, base: u64) -> Result<ItemLog, BloomError> {
        let path = item_log_path(dir, id);
        let (file, entries) = open_side_log(&path, DIGEST)?;
        Ok(ItemLog {
            file,
            path,
            entries,
            complete: entries >= base,
        })
    }

    /// A log that cannot be complete (BF.LOADCHUNK: the items are unknown).
    pub(crate) fn incomplete(dir: &Path, id: u64) -> Result<ItemLog, BloomError> {
        let mut log = ItemLog::create(dir, id)?;
        log.complete = false;
        Ok(log)
    }

    pub(crate) fn append(&mut self, digest: &[u8]) -> Result<(), BloomError> {
        self.file
            .write_all(digest)
            .map_err(storage("append", &self.path))?;
        self.entries += 1;
        Ok(())
    }

    /// Replay of the filter's item number `n` (1-based): appended unless the
    /// log already has it; a gap makes the log incomplete.
    pub(crate) fn replayed(&mut self, n: u64, digest: &[u8]) -> Result<(), BloomError> {
        if n == self.entries + 1 {
            self.append(digest)
        } else {
            if n > self.entries + 1 {
                self.complete = false;
            }
            Ok(())
        }
    }

    pub(crate) fn is_complete(&self) -> bool {
        self.complete
    }

    pub(crate) fn values(&self) -> Result<Vec<Vec<u8>>, BloomError> {
        read_values(&self.path, DIGEST as usize, self.entries)
    }

    pub(crate) fn sync(&self) -> Result<(), BloomError> {
        self.file.sync_data().map_err(storage("fsync", &self.path))
    }

    /// COPY: the same items under filter `to`.
    pub(crate) fn copy_to(&self, dir: &Path, to: u64) -> Result<ItemLog, BloomError> {
        self.sync()?;
        let path = item_log_path(dir, to);
        std::fs::copy(&self.path, &path).map_err(storage("copy to", &path))?;
        let mut copy = ItemLog::open(dir, to, self.entries)?;
        copy.complete = self.complete;
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
