//! The key-existence filter: one Bloom file over every key ever stored, so that a
//! read of an absent key is answered without the shard lock or a hash-map probe.
//!
//! Keys are inserted on every `Tx::insert` and never removed (DEL leaves its bits):
//! stale bits only cost a lookup. A rebuild (size change at start, AOF rewrite)
//! refills a new file from the keyspace and swaps it in. The file lives at
//! `<dir>/existence.bloom` in the `filter` format; replay re-inserts every key,
//! so an unusable file is simply recreated empty before the load.

use crate::filter::{BloomFile, FilterStats, Geometry, OpenOutcome};
use parking_lot::{Mutex, RwLock};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Hashes per key: the best k for ~10 bits per key in a 480-bit line.
const HASHES: u32 = 7;

pub struct ExistenceFilter {
    path: PathBuf,
    file: RwLock<BloomFile>,
    negatives: AtomicU64,
    // Keys inserted while a rebuild fills its new file; replayed into it before the swap.
    rebuilding: AtomicBool,
    pending: Mutex<Vec<Box<[u8]>>>,
}

/// Figures for INFO.
#[derive(Debug, Clone, Copy)]
pub struct ExistenceStats {
    pub filter: FilterStats,
    pub negative_lookups: u64,
}

fn geometry(size_bytes: u64) -> Result<Geometry, crate::filter::FilterError> {
    Geometry::new((size_bytes / 64).saturating_sub(1).max(1), HASHES)
}

impl ExistenceFilter {
    /// Opens `<dir>/existence.bloom` with `size_bytes`, recreating it when it is
    /// missing, of another size, or too corrupt.
    pub fn open(
        dir: &Path,
        size_bytes: u64,
    ) -> Result<ExistenceFilter, crate::filter::FilterError> {
        let _ = std::fs::create_dir_all(dir);
        let path = dir.join("existence.bloom");
        let geometry = geometry(size_bytes)?;
        let file = match BloomFile::open(&path, geometry)? {
            OpenOutcome::Ready(file, _) => file,
            OpenOutcome::Rebuild(reason) => {
                tracing::info!(?reason, "existence filter recreated; the load refills it");
                BloomFile::create(&path, geometry)?
            }
        };
        Ok(ExistenceFilter {
            path,
            file: RwLock::new(file),
            negatives: AtomicU64::new(0),
            rebuilding: AtomicBool::new(false),
            pending: Mutex::new(Vec::new()),
        })
    }

    /// False: the key is certainly absent (counted as a negative lookup).
    #[inline]
    pub fn may_contain(&self, key: &[u8]) -> bool {
        let present = self.file.read().contains(key);
        if !present {
            self.negatives.fetch_add(1, Ordering::Relaxed);
        }
        present
    }

    #[inline]
    pub fn insert(&self, key: &[u8]) {
        let file = self.file.read();
        file.insert(key);
        if self.rebuilding.load(Ordering::Acquire) {
            self.pending.lock().push(key.into());
        }
    }

    /// Builds a fresh file from `keys` (a walk of the keyspace) and swaps it in;
    /// keys inserted during the walk are added to it before the swap.
    pub fn rebuild(
        &self,
        keys: impl FnOnce(&mut dyn FnMut(&[u8])),
    ) -> Result<(), crate::filter::FilterError> {
        let geometry = self.file.read().geometry();
        let tmp = self.path.with_extension("bloom.tmp");
        let mut fresh = BloomFile::create(&tmp, geometry)?;
        self.rebuilding.store(true, Ordering::Release);
        keys(&mut |k| {
            fresh.insert_exclusive(k);
        });
        let mut current = self.file.write();
        self.rebuilding.store(false, Ordering::Release);
        for k in self.pending.lock().drain(..) {
            fresh.insert_exclusive(&k);
        }
        fresh.flush(Default::default())?;
        std::fs::rename(&tmp, &self.path).map_err(|e| crate::filter::FilterError::Io {
            path: self.path.clone(),
            op: "rename",
            source: e,
        })?;
        *current = fresh;
        Ok(())
    }

    pub fn flush(&self) -> Result<(), crate::filter::FilterError> {
        self.file.read().flush(Default::default())
    }

    pub fn stats(&self) -> ExistenceStats {
        ExistenceStats {
            filter: self.file.read().stats(),
            negative_lookups: self.negatives.load(Ordering::Relaxed),
        }
    }
}
