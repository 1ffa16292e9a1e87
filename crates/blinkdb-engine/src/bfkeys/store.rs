//! Where key-owned filters live: `<data_dir>/bloom/`, filter ids, the set of open
//! filters (for the periodic flush) and kernel availability.

use super::record::Binding;
use super::value::{BackendSpec, BloomValue, Cell, KeyFilterSpec};
use crate::bloom::RedisBloomChain;
use crate::bloom::{BloomError, BloomLimits};
use crate::filter::LogPosition;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

#[derive(Default, Debug)]
pub struct BloomStoreStats {
    /// Filters (user files or kernel pins) rebuilt from the log at replay.
    pub rebuilds: AtomicU64,
    /// Lines that failed their checksum when filter files were reopened.
    pub corrupt_lines_at_open: AtomicU64,
}

pub struct BloomStore {
    dir: PathBuf,
    pin_root: PathBuf,
    next_id: AtomicU64,
    ids_scanned: OnceLock<()>,
    pub(crate) live: Mutex<HashMap<u64, Weak<Cell>>>,
    closing: AtomicBool,
    /// `dir` was created (or found) once: BF.RESERVE need not mkdir every time.
    dir_ready: AtomicBool,
    kernel: OnceLock<Result<(), String>>,
    pub stats: BloomStoreStats,
}

impl std::fmt::Debug for BloomStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BloomStore")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl BloomStore {
    /// Filters go to `<data_dir>/bloom`, kernel pins under `pin_root`.
    pub fn new(data_dir: &Path, pin_root: &Path) -> BloomStore {
        BloomStore {
            dir: data_dir.join("bloom"),
            pin_root: pin_root.to_path_buf(),
            next_id: AtomicU64::new(1),
            ids_scanned: OnceLock::new(),
            live: Mutex::new(HashMap::new()),
            closing: AtomicBool::new(false),
            dir_ready: AtomicBool::new(false),
            kernel: OnceLock::new(),
            stats: BloomStoreStats::default(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn pin_root(&self) -> &Path {
        &self.pin_root
    }

    /// Whether kernel filters can be made, probed once; the error is the reason.
    pub fn kernel_available(&self) -> Result<(), String> {
        self.kernel
            .get_or_init(|| crate::kernel::probe(&self.pin_root).map_err(|e| e.to_string()))
            .clone()
    }

    fn ensure_dir(&self) -> Result<(), BloomError> {
        if self.dir_ready.load(Ordering::Acquire) {
            return Ok(());
        }
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| BloomError::Storage(format!("create {}: {e}", self.dir.display())))?;
        self.dir_ready.store(true, Ordering::Release);
        Ok(())
    }

    /// A fresh filter id: above every id found on disk and every id bound so far.
    pub(crate) fn allocate_id(&self) -> u64 {
        self.ids_scanned.get_or_init(|| {
            let highest = std::fs::read_dir(&self.dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name();
                    u64::from_str_radix(name.to_str()?.get(..16)?, 16).ok()
                })
                .max()
                .unwrap_or(0);
            self.next_id.fetch_max(highest + 1, Ordering::AcqRel);
        });
        self.next_id.fetch_add(1, Ordering::AcqRel)
    }

    /// Creates a new, empty filter for a key (BF.RESERVE, BF.ADD on a missing key).
    pub fn create(
        self: &Arc<Self>,
        db: usize,
        key: &[u8],
        spec: KeyFilterSpec,
        limits: &BloomLimits,
    ) -> Result<BloomValue, BloomError> {
        spec.validate()?;
        if let BackendSpec::Kernel { .. } = spec.backend {
            self.kernel_available().map_err(BloomError::Kernel)?;
        }
        self.ensure_dir()?;
        let id = self.allocate_id();
        let pin = match spec.backend {
            BackendSpec::User => None,
            BackendSpec::Kernel { .. } => Some((db as u32, crate::kernel::pin_file_name(key))),
        };
        let binding = Binding {
            id,
            base: 0,
            spec,
            pin,
        };
        let cell = Cell::open(self.clone(), &binding, true, limits)?;
        Ok(self.register(cell))
    }

    /// Replays a binding record: reopens filter `binding.id`, or rebuilds it empty
    /// when its files (or pin) are gone or unusable.
    pub fn bind(
        self: &Arc<Self>,
        binding: &Binding,
        limits: &BloomLimits,
    ) -> Result<BloomValue, BloomError> {
        self.next_id.fetch_max(binding.id + 1, Ordering::AcqRel);
        if let Some(live) = self.live.lock().get(&binding.id).and_then(Weak::upgrade) {
            return Ok(BloomValue(live));
        }
        self.ensure_dir()?;
        let cell = Cell::open(self.clone(), binding, false, limits)?;
        Ok(self.register(cell))
    }

    /// BF.LOADCHUNK's header step: a new filter from a dump header (live), or the
    /// reopened filter `id` (replay; rebuilt from the header if unusable).
    pub fn load_header(
        self: &Arc<Self>,
        id: Option<u64>,
        data: &[u8],
        limits: &BloomLimits,
    ) -> Result<BloomValue, BloomError> {
        self.ensure_dir()?;
        let cell = match id {
            None => Cell::from_header(self.clone(), self.allocate_id(), data, limits, true)?,
            Some(id) => {
                self.next_id.fetch_max(id + 1, Ordering::AcqRel);
                if let Some(live) = self.live.lock().get(&id).and_then(Weak::upgrade) {
                    return Ok(BloomValue(live));
                }
                Cell::from_header(self.clone(), id, data, limits, false)?
            }
        };
        Ok(self.register(cell))
    }

    /// A new filter rebuilt from a whole SCANDUMP (an RDB file's `blinkdb-bf`
    /// field): the header, then every data chunk at its cursor. The chunks
    /// must fill the header's lines exactly (checked by the field's decoder),
    /// so the files it sizes are backed by bytes the file really held.
    pub fn load_dump(
        self: &Arc<Self>,
        header: &[u8],
        chunks: &[(i64, Vec<u8>)],
    ) -> Result<BloomValue, BloomError> {
        let unlimited = BloomLimits {
            max_memory: u64::MAX,
        };
        let filter = self.load_header(None, header, &unlimited)?;
        for (cursor, data) in chunks {
            filter.load_chunk(*cursor, data, false)?;
        }
        Ok(filter)
    }

    /// A filter imported from RedisBloom (RESTORE, an RDB file), kept with its
    /// own bit arrays and hash scheme.
    pub fn import(self: &Arc<Self>, chain: RedisBloomChain) -> BloomValue {
        let id = self.allocate_id();
        self.register(Cell::imported(self.clone(), id, chain))
    }

    fn register(&self, cell: Cell) -> BloomValue {
        let cell = Arc::new(cell);
        self.live.lock().insert(cell.id, Arc::downgrade(&cell));
        BloomValue(cell)
    }

    /// Makes every filter's adds durable (msync / fsync), recording `checkpoint`.
    /// Returns the first error, after trying every filter.
    pub fn flush_all(&self, checkpoint: LogPosition) -> Result<(), BloomError> {
        let cells: Vec<Arc<Cell>> = self
            .live
            .lock()
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        let mut first = Ok(());
        for cell in cells {
            if let Err(e) = BloomValue(cell).flush(checkpoint) {
                tracing::warn!("bloom filter flush failed: {e}");
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }

    /// Once the log is replayed: opens every kernel filter's pin at its key's
    /// final place, rebuilding missing ones from their side logs, and reports
    /// the user filters rebuilt because their files were unusable (only those
    /// still there: the log may delete a filter after binding it). Returns the
    /// first error, after trying every filter (a failed one answers errors).
    pub fn attach_all(&self) -> Result<(), BloomError> {
        let cells: Vec<Arc<Cell>> = self
            .live
            .lock()
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        let mut first = Ok(());
        for cell in cells {
            match BloomValue(cell).attach() {
                Ok(true) => {
                    self.stats.rebuilds.fetch_add(1, Ordering::Relaxed);
                }
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!("kernel filter could not be attached after loading: {e}");
                    if first.is_ok() {
                        first = Err(e);
                    }
                }
            }
        }
        first
    }

    /// Deletes the files of filters no key holds (named by a 16-hex-digit id
    /// that is not live). Called once the log is replayed after loading an
    /// RDB-format base: the base rebuilt each filter into new files (its exact
    /// dump), so the previous run's files are bound by nothing; without this,
    /// every restart would leave a copy of every filter behind. Returns the
    /// number of files removed.
    pub fn remove_unbound_files(&self) -> usize {
        let live: std::collections::HashSet<u64> = self
            .live
            .lock()
            .iter()
            .filter(|(_, w)| w.strong_count() > 0)
            .map(|(id, _)| *id)
            .collect();
        let mut removed = 0;
        for entry in std::fs::read_dir(&self.dir).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let Some(id) = name
                .to_str()
                .and_then(|n| n.get(..16))
                .and_then(|h| u64::from_str_radix(h, 16).ok())
            else {
                continue;
            };
            if live.contains(&id) {
                continue;
            }
            match std::fs::remove_file(entry.path()) {
                Ok(()) => removed += 1,
                Err(e) => tracing::warn!(
                    "could not remove an unbound filter file {}: {e}",
                    entry.path().display()
                ),
            }
        }
        removed
    }

    /// Flushes and stops deleting files when values are dropped (process exit).
    pub fn close(&self) {
        let _ = self.flush_all(LogPosition::default());
        self.closing.store(true, Ordering::Release);
    }

    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// Number of filters currently open.
    pub fn open_filters(&self) -> usize {
        self.live.lock().len()
    }
}
