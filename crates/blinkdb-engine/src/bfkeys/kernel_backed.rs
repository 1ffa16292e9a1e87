//! A kernel-backed BF.* filter: a pinned bloom map plus a side log of every value
//! pushed into it, because the kernel cannot enumerate a bloom map and a missing
//! pin must be rebuilt.
//!
//! Side log `<id:016x>.klog` byte layout (little-endian):
//!
//! ```text
//! offset  size  field
//! 0       8     magic        b"BLINKKL\0"
//! 8       4     version      1
//! 12      4     value size   v: 16 (xxh3-128 digest) or the RAW width
//! 16      v*n   values       in the order they were added; a torn tail is cut
//! ```

use crate::bloom::BloomError;
use crate::kernel::{FilterSpec, KernelFilter, KernelFilterInfo, OpenOutcome, PinLocation};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

const MAGIC: [u8; 8] = *b"BLINKKL\0";
const VERSION: u32 = 1;
const HEADER: u64 = 16;

pub(crate) fn side_log_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id:016x}.klog"))
}

pub(crate) struct KernelBloom {
    /// `None` while the log replays: the pin is opened once loading is over,
    /// at the place the key ended up, so a RENAME in the log neither rebuilds
    /// the map nor moves pins that belong to other filters.
    filter: Option<KernelFilter>,
    location: PinLocation,
    spec: FilterSpec,
    log: File,
    path: PathBuf,
    entries: u64,
    /// Side-log values from this index on were appended while detached.
    detached_from: u64,
    capacity: u64,
}

fn storage(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> BloomError {
    let path = path.display().to_string();
    move |e| BloomError::Storage(format!("{op} {path}: {e}"))
}

impl KernelBloom {
    /// A new filter (`fresh`: the side log is started and the map created and
    /// pinned now, replacing any stale pin), or, at replay, the filter's side
    /// log only: [`attach`](Self::attach) opens the pin when loading is over.
    pub(crate) fn open(
        dir: &Path,
        id: u64,
        location: &PinLocation,
        spec: &FilterSpec,
        fresh: bool,
    ) -> Result<KernelBloom, BloomError> {
        let path = side_log_path(dir, id);
        if fresh {
            let _ = std::fs::remove_file(&path);
            if let Ok(Some(stale)) = KernelFilter::open(location, spec) {
                tracing::warn!(pin = %location.path().display(), "removing a stale kernel filter pin");
                stale.delete()?;
            } else if location.path().exists() {
                std::fs::remove_file(location.path())
                    .map_err(storage("unlink stale pin", &location.path()))?;
            }
        }
        let (log, entries) = open_side_log(&path, spec.format.value_size())?;
        let mut bloom = KernelBloom {
            filter: None,
            location: location.clone(),
            spec: *spec,
            log,
            path,
            entries,
            detached_from: entries,
            capacity: spec.capacity as u64,
        };
        if fresh {
            bloom.attach()?;
        }
        Ok(bloom)
    }

    /// Opens the pin at the filter's current place, or creates it and refills
    /// it from the side log when it is gone. Returns whether it was rebuilt.
    pub(crate) fn attach(&mut self) -> Result<bool, BloomError> {
        if self.filter.is_some() {
            return Ok(false);
        }
        let (filter, outcome) = KernelFilter::open_or_create(&self.location, &self.spec)?;
        let values = self.values()?;
        let rebuilt = outcome == OpenOutcome::Created && self.entries > 0;
        // A reopened map holds everything the last run added; values replayed
        // from the AOF into the side log are pushed again (idempotent) in case
        // the map missed them.
        let from = if rebuilt { 0 } else { self.detached_from };
        for value in values.iter().skip(from as usize) {
            filter.insert_value(value)?;
        }
        if rebuilt {
            tracing::warn!(pin = %self.location.path().display(), entries = self.entries,
                "kernel filter pin was missing; rebuilt from its side log");
        }
        self.filter = Some(filter);
        Ok(rebuilt)
    }

    fn attached(&self) -> Result<&KernelFilter, BloomError> {
        self.filter.as_ref().ok_or(BloomError::Kernel(format!(
            "kernel filter at {} is not attached",
            self.location.path().display()
        )))
    }

    /// RENAME/MOVE of the owning key: the pin follows the key.
    pub(crate) fn relocate(&mut self, to: PinLocation) -> Result<(), BloomError> {
        if let Some(filter) = &mut self.filter {
            filter.move_pin(&to)?;
        }
        self.location = to;
        Ok(())
    }

    /// BF.ADD semantics: Ok(true) when newly added (and then logged).
    pub(crate) fn add(&mut self, item: &[u8], nonscaling_full: bool) -> Result<bool, BloomError> {
        let filter = self.attached()?;
        if filter.contains(item)? {
            return Ok(false);
        }
        if nonscaling_full && self.entries >= self.capacity {
            return Err(BloomError::NonScalingFull);
        }
        let value = filter.encode_value(item)?;
        filter.insert_value(&value)?;
        self.append(&value)?;
        Ok(true)
    }

    /// Re-applies a logged new item without asking whether it is present.
    pub(crate) fn force_add(&mut self, item: &[u8]) -> Result<(), BloomError> {
        let value = self.spec.encode_value(item)?;
        self.force_value(&value)
    }

    pub(crate) fn force_value(&mut self, value: &[u8]) -> Result<(), BloomError> {
        if value.len() != self.value_size() {
            return Err(BloomError::BadBackend(
                "stored value size differs from the kernel filter's",
            ));
        }
        if let Some(filter) = &self.filter {
            filter.insert_value(value)?;
        }
        self.append(value)
    }

    fn append(&mut self, value: &[u8]) -> Result<(), BloomError> {
        self.log
            .write_all(value)
            .map_err(storage("append", &self.path))?;
        self.entries += 1;
        Ok(())
    }

    pub(crate) fn exists(&self, item: &[u8]) -> Result<bool, BloomError> {
        Ok(self.attached()?.contains(item)?)
    }

    pub(crate) fn entries(&self) -> u64 {
        self.entries
    }

    /// The map's facts; while detached (only during replay) those the spec gives.
    pub(crate) fn info(&self) -> KernelFilterInfo {
        match &self.filter {
            Some(filter) => filter.info().clone(),
            None => KernelFilterInfo {
                map_id: 0,
                pin_path: self.location.path(),
                hash_count: self.spec.hash_count(),
                max_entries: self.spec.capacity,
                value_size: self.spec.format.value_size(),
                format: self.spec.format,
            },
        }
    }

    /// The pin's db and file name.
    pub(crate) fn pin(&self) -> (u32, String) {
        (self.location.db(), self.location.name().to_string())
    }

    /// Bytes of the kernel's bit array: max_entries·k·7/5 bits rounded up to a
    /// power of two (kernel/bpf/bloom_filter.c), at least one long.
    pub(crate) fn size_bytes(&self) -> u64 {
        let bits = (self.spec.capacity as u64 * self.spec.hash_count() as u64 * 7 / 5)
            .max(64)
            .next_power_of_two()
            .min(1 << 32);
        bits / 8
    }

    /// Every stored value, in order.
    pub(crate) fn values(&self) -> Result<Vec<Vec<u8>>, BloomError> {
        let size = self.value_size();
        let mut raw = Vec::new();
        File::open(&self.path)
            .and_then(|mut f| f.read_to_end(&mut raw))
            .map_err(storage("read", &self.path))?;
        Ok(raw
            .get(HEADER as usize..)
            .unwrap_or_default()
            .chunks_exact(size)
            .take(self.entries as usize)
            .map(<[u8]>::to_vec)
            .collect())
    }

    pub(crate) fn value_size(&self) -> usize {
        self.spec.format.value_size() as usize
    }

    pub(crate) fn sync(&self) -> Result<(), BloomError> {
        self.log.sync_data().map_err(storage("fsync", &self.path))
    }

    /// Unpins the map and removes the side log. A filter dropped while still
    /// detached (deleted later in the replayed log) leaves pins alone: the run
    /// that logged the delete unpinned it, and another filter may own the path now.
    pub(crate) fn delete(self) -> Result<(), BloomError> {
        let path = self.path.clone();
        if let Some(filter) = self.filter {
            filter.delete()?;
        }
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(storage("remove", &path)(e)),
            _ => Ok(()),
        }
    }
}

/// Opens the side log for appending, writing its header if new and cutting a
/// torn last value; returns it and the number of whole values.
fn open_side_log(path: &Path, value_size: u32) -> Result<(File, u64), BloomError> {
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
