//! A kernel-backed BF.* filter: a pinned bloom map plus a side log
//! (`<id:016x>.klog`, see `side_log.rs`) of every value pushed into it, because
//! the kernel cannot enumerate a bloom map and a missing pin must be rebuilt.

use super::side_log::{open_side_log, storage, ValuesSnapshot};
use crate::bloom::BloomError;
use crate::kernel::{FilterSpec, KernelFilter, KernelFilterInfo, OpenOutcome, PinLocation};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Side-log values read per chunk when a map is refilled.
const REFILL_CHUNK: usize = 1024;

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
        let rebuilt = outcome == OpenOutcome::Created && self.entries > 0;
        // A reopened map holds everything the last run added; values replayed
        // from the AOF into the side log are pushed again (idempotent) in case
        // the map missed them.
        let from = if rebuilt { 0 } else { self.detached_from };
        self.snapshot(true)?
            .for_each_chunk(from, REFILL_CHUNK, |values| {
                Ok(values.iter().try_for_each(|v| filter.insert_value(v))?)
            })?;
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

    /// Every value stored so far (refill, AOF rewrite; see `ValuesSnapshot`).
    pub(crate) fn snapshot(&self, hold_open: bool) -> Result<ValuesSnapshot, BloomError> {
        ValuesSnapshot::open(&self.path, self.value_size(), self.entries, hold_open)
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
