//! The memory-mapped Bloom file: concurrent adds, lock-free reads, checksummed lines.
//!
//! Crash consistency: bits only go 0→1. A writer sets a line's bits and then rewrites
//! the line's checksum while holding that line's stripe lock, so every line is either
//! consistent or (mid-update, or torn by power loss) fails its checksum. A failing line
//! is set to all ones at open: a superset of every bit it could have held, so a kill -9
//! with a line in flight never loses a bit. `flush` msyncs the lines before it records the
//! checkpoint, so all adds made before the flush call are durable before the checkpoint is.

use super::error::FilterError;
use super::geometry::Geometry;
use super::layout::{
    checksum60, Header, HEADER_BYTES, LINE_BITS, LINE_BIT_BYTES, LINE_BYTES, LINE_WORDS64,
};
use super::memory::FilterMemory;
use super::probe::ItemHash;
use memmap2::MmapOptions;
use parking_lot::Mutex;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Share of lines that may fail their checksum before the file must be rebuilt.
pub const MAX_CORRUPT_FRACTION: f64 = 0.05;
/// Upper bound on stripe locks; enough that 2-64 writer threads rarely collide.
const MAX_STRIPES: u64 = 1024;
/// Largest in-memory filter kept on the heap rather than in an anonymous mapping (a
/// page: a mapping rounds up to one anyway). Larger heap filters, freed when they move
/// to their file, left the allocator's heap fragmented: +10 MB of RSS after the bloom
/// benchmark's 832 filters, which anonymous mappings give back to the system.
const HEAP_MAX: usize = 4096;

/// How far ahead batch calls prefetch: enough misses in flight to cover DRAM latency
/// (a core tracks ~10-16 outstanding lines), few enough to stay in L1. On the 2-core
/// Intel VM, 64 MiB filter: 32 and 48 ahead ~12.5 ns/item, 24 ~13.5, 16 ~16, 8 ~23
/// (an earlier AMD VM had preferred 16).
pub const PREFETCH_AHEAD: usize = 32;
/// The u64 word holding bits 448..480 (low half) and the line checksum (high half).
const SUM_WORD: usize = LINE_WORDS64 - 1;
/// Low half of `SUM_WORD`: its filter bits.
const SUM_WORD_BITS: u64 = u32::MAX as u64;
/// One line as eight native-endian u64 words.
type Line = [u64; LINE_WORDS64];

/// Whether the in-line probes can use AVX2 here (std caches the CPUID answer).
#[cfg(target_arch = "x86_64")]
#[inline]
pub(super) fn has_avx2() -> bool {
    std::is_x86_feature_detected!("avx2")
}

/// An opaque log position supplied by the caller: "complete up to here".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LogPosition {
    pub file: u64,
    pub offset: u64,
}

/// Why `open` cannot reuse a file and the caller must rebuild it from the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RebuildReason {
    Missing,
    HeaderCorrupt,
    GeometryChanged { found: Geometry },
    LengthMismatch { found: u64 },
    TooManyCorruptLines { corrupt: u64, lines: u64 },
}

/// What `open` found in a usable file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenReport {
    /// Lines whose checksum failed; they are now all ones.
    pub corrupt_lines: u64,
    /// Replay the log from here.
    pub checkpoint: LogPosition,
}

/// Result of [`BloomFile::open`].
#[derive(Debug)]
pub enum OpenOutcome {
    Ready(BloomFile, OpenReport),
    Rebuild(RebuildReason),
}

/// Point-in-time figures; `fill_ratio` and `estimated_fp` scan every line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FilterStats {
    pub size_bytes: u64,
    pub set_bits: u64,
    pub fill_ratio: f64,
    /// Mean over lines of (line fill)^k: the chance a random absent item passes.
    pub estimated_fp: f64,
    pub corrupt_lines_at_open: u64,
    pub item_count: u64,
}

/// A Bloom filter in a memory-mapped file of checksummed 64-byte lines.
///
/// `insert`/`contains` take `&self` and may run from any number of threads
/// (the global key-existence filter); `insert_exclusive` skips the stripe lock for
/// callers that already hold the filter exclusively (per-key filters).
pub struct BloomFile {
    path: PathBuf,
    map: FilterMemory,
    geometry: Geometry,
    stripes: Box<[Mutex<()>]>,
    items: AtomicU64,
    checkpoint: Mutex<LogPosition>,
    corrupt_at_open: u64,
    /// `None` while the filter lives in anonymous memory (see [`BloomFile::create_in_memory`]).
    file: Option<File>,
}

impl std::fmt::Debug for BloomFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BloomFile")
            .field("path", &self.path)
            .field("geometry", &self.geometry)
            .finish_non_exhaustive()
    }
}

impl BloomFile {
    /// Creates (or truncates) `path` as an empty filter with checkpoint (0, 0).
    pub fn create(path: &Path, geometry: Geometry) -> Result<BloomFile, FilterError> {
        let geometry = Geometry::checked(geometry.lines, geometry.hashes, geometry.flat_bits)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(FilterError::io(path, "create"))?;
        file.set_len(geometry.file_len())
            .map_err(FilterError::io(path, "set_len"))?;
        let filter = BloomFile::map(path, file, geometry, LogPosition::default(), 0, 0)?;
        // No msync here: the periodic flush persists it, and a file lost
        // before that is rebuilt from the log.
        filter.init_empty()?;
        Ok(filter)
    }

    /// An empty filter in anonymous memory that will live at `path` once
    /// [`BloomFile::materialize`] writes it. Until then it costs no file system work
    /// (a BF.RESERVE + DEL pair creates and unlinks nothing), and `flush` refuses it.
    pub fn create_in_memory(path: &Path, geometry: Geometry) -> Result<BloomFile, FilterError> {
        let geometry = Geometry::checked(geometry.lines, geometry.hashes, geometry.flat_bits)?;
        let len = geometry.file_len() as usize;
        let map = if len <= HEAP_MAX {
            FilterMemory::heap(len).ok_or_else(|| {
                FilterError::io(path, "allocate")(std::io::Error::from(
                    std::io::ErrorKind::OutOfMemory,
                ))
            })?
        } else {
            let map = MmapOptions::new()
                .len(len)
                .map_anon()
                .map_err(FilterError::io(path, "mmap anonymous"))?;
            FilterMemory::Mapped(map.into())
        };
        let filter = BloomFile::from_map(path, map, None, geometry, LogPosition::default(), 0);
        filter.init_empty()?;
        Ok(filter)
    }

    /// False while the filter is only in memory.
    pub fn is_on_disk(&self) -> bool {
        self.file.is_some()
    }

    /// Writes an in-memory filter to its path and moves it onto a shared mapping of
    /// that file (no-op when already on disk). Needs `&mut self`: nothing may read or
    /// write the old mapping while it is swapped. Not synced: `flush` does that.
    pub fn materialize(&mut self) -> Result<(), FilterError> {
        if self.file.is_some() {
            return Ok(());
        }
        let path = self.path.clone();
        let written = (|| {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&path)
                .map_err(FilterError::io(&path, "create"))?;
            // SAFETY: the anonymous mapping is file_len() bytes and `&mut self`
            // excludes every other access to it while this slice lives.
            let bytes = unsafe {
                std::slice::from_raw_parts(self.map.as_ptr(), self.geometry.file_len() as usize)
            };
            std::io::Write::write_all(&mut file, bytes).map_err(FilterError::io(&path, "write"))?;
            let map = MmapOptions::new()
                .len(self.geometry.file_len() as usize)
                .map_raw(&file)
                .map_err(FilterError::io(&path, "mmap"))?;
            Ok((file, map))
        })();
        match written {
            Ok((file, map)) => {
                self.map = FilterMemory::Mapped(map);
                self.file = Some(file);
                Ok(())
            }
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                Err(e)
            }
        }
    }

    /// Every line empty with its checksum, header with checkpoint (0, 0).
    fn init_empty(&self) -> Result<(), FilterError> {
        let empty = with_checksum([0; LINE_WORDS64]);
        for line in 0..self.geometry.lines {
            store_line(self.words(line), &empty);
        }
        self.write_header(LogPosition::default(), 0)
    }

    /// Maps `path`, verifies every line, and reports whether it is usable with
    /// `geometry`. Corrupt lines become all ones and are logged.
    pub fn open(path: &Path, geometry: Geometry) -> Result<OpenOutcome, FilterError> {
        let file = match OpenOptions::new().read(true).write(true).open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(OpenOutcome::Rebuild(RebuildReason::Missing))
            }
            Err(e) => return Err(FilterError::io(path, "open")(e)),
        };
        let len = file
            .metadata()
            .map_err(FilterError::io(path, "fstat"))?
            .len();
        let mut raw_header = [0u8; LINE_BYTES];
        if len < HEADER_BYTES {
            return Ok(OpenOutcome::Rebuild(RebuildReason::HeaderCorrupt));
        }
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut raw_header, 0)
            .map_err(FilterError::io(path, "pread header"))?;
        let Some(header) = Header::decode(&raw_header) else {
            return Ok(OpenOutcome::Rebuild(RebuildReason::HeaderCorrupt));
        };
        let Ok(found) = Geometry::checked(header.lines, header.hashes, header.flat_bits as u64)
        else {
            return Ok(OpenOutcome::Rebuild(RebuildReason::HeaderCorrupt));
        };
        if found != geometry {
            return Ok(OpenOutcome::Rebuild(RebuildReason::GeometryChanged {
                found,
            }));
        }
        if len != geometry.file_len() {
            return Ok(OpenOutcome::Rebuild(RebuildReason::LengthMismatch {
                found: len,
            }));
        }
        let checkpoint = LogPosition {
            file: header.checkpoint_file,
            offset: header.checkpoint_offset,
        };
        let mut filter = BloomFile::map(path, file, geometry, checkpoint, header.item_count, 0)?;
        let corrupt = filter.repair_corrupt_lines();
        filter.corrupt_at_open = corrupt;
        if corrupt > 0 {
            tracing::warn!(path = %path.display(), corrupt, lines = geometry.lines,
                "bloom file lines failed their checksum and were set to all ones");
        }
        if corrupt as f64 > geometry.lines as f64 * MAX_CORRUPT_FRACTION {
            return Ok(OpenOutcome::Rebuild(RebuildReason::TooManyCorruptLines {
                corrupt,
                lines: geometry.lines,
            }));
        }
        Ok(OpenOutcome::Ready(
            filter,
            OpenReport {
                corrupt_lines: corrupt,
                checkpoint,
            },
        ))
    }

    fn map(
        path: &Path,
        file: File,
        geometry: Geometry,
        checkpoint: LogPosition,
        items: u64,
        corrupt_at_open: u64,
    ) -> Result<BloomFile, FilterError> {
        let map = MmapOptions::new()
            .len(geometry.file_len() as usize)
            .map_raw(&file)
            .map_err(FilterError::io(path, "mmap"))?;
        let mut filter = BloomFile::from_map(
            path,
            FilterMemory::Mapped(map),
            Some(file),
            geometry,
            checkpoint,
            items,
        );
        filter.corrupt_at_open = corrupt_at_open;
        Ok(filter)
    }

    fn from_map(
        path: &Path,
        map: FilterMemory,
        file: Option<File>,
        geometry: Geometry,
        checkpoint: LogPosition,
        items: u64,
    ) -> BloomFile {
        let stripes = geometry.lines.next_power_of_two().min(MAX_STRIPES);
        BloomFile {
            path: path.to_path_buf(),
            map,
            geometry,
            stripes: (0..stripes).map(|_| Mutex::new(())).collect(),
            items: AtomicU64::new(items),
            checkpoint: Mutex::new(checkpoint),
            corrupt_at_open: 0,
            file,
        }
    }

    /// The 8 little-endian u64 words of one line (checksum in the high half of word 7).
    #[inline]
    fn words(&self, line: u64) -> &[AtomicU64; LINE_WORDS64] {
        debug_assert!(line < self.geometry.lines);
        let offset = HEADER_BYTES as usize + line as usize * LINE_BYTES;
        // SAFETY: the mapping is file_len() bytes, page aligned, lives as long as self,
        // and line < lines keeps the 64-byte, 64-aligned range inside it. Every access
        // to line bytes goes through these atomics.
        unsafe { &*(self.map.as_mut_ptr().add(offset) as *const [AtomicU64; LINE_WORDS64]) }
    }

    fn repair_corrupt_lines(&mut self) -> u64 {
        let mut corrupt = 0;
        let full = with_checksum([u64::MAX; LINE_WORDS64]);
        for line in 0..self.geometry.lines {
            let words = self.words(line);
            let found = load_line(words);
            if with_checksum(found) != found {
                store_line(words, &full);
                corrupt += 1;
            }
        }
        corrupt
    }

    #[cfg(test)]
    pub(super) fn store_line_for_test(&self, line: u64, bits: &Line) {
        store_line(self.words(line), &with_checksum(*bits));
    }

    #[cfg(test)]
    pub(super) fn words_for_test(&self, hash: ItemHash) -> &[AtomicU64; LINE_WORDS64] {
        self.words(hash.line(self.geometry.lines))
    }

    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// File (and mapping) size in bytes.
    pub fn size_bytes(&self) -> u64 {
        self.geometry.file_len()
    }

    /// Items newly added since creation (persisted by `flush`).
    pub fn item_count(&self) -> u64 {
        self.items.load(Ordering::Relaxed)
    }

    /// Overwrites the item count (used when restoring a dump).
    pub fn set_item_count(&self, items: u64) {
        self.items.store(items, Ordering::Relaxed);
    }

    /// Checkpoint recorded by the last `flush` (or found at open).
    pub fn checkpoint(&self) -> LogPosition {
        *self.checkpoint.lock()
    }

    /// Lines found corrupt (and set to all ones) when this file was opened.
    pub fn corrupt_lines_at_open(&self) -> u64 {
        self.corrupt_at_open
    }

    /// Lock-free membership test; false means definitely absent.
    #[inline]
    pub fn contains(&self, item: &[u8]) -> bool {
        self.contains_hash(ItemHash::of(item))
    }

    /// `contains` for an already computed hash.
    #[inline]
    pub fn contains_hash(&self, hash: ItemHash) -> bool {
        Self::covers(
            self.words(hash.line(self.geometry.lines)),
            hash,
            self.geometry.hashes,
        )
    }

    /// Hints the CPU to start loading the line `hash` probes, so a later
    /// `contains_hash`/`insert_hash` on it does not wait for memory.
    #[inline]
    pub fn prefetch(&self, hash: ItemHash) {
        crate::prefetch::line(self.words(hash.line(self.geometry.lines)).as_ptr());
    }

    /// Batch membership test: sets `found[i]` when item i may be present and leaves
    /// entries that are already true unprobed (so a chain can test link after link).
    /// Prefetches lines ahead, so the cache misses of a batch overlap.
    pub fn contains_hashes(&self, hashes: &[ItemHash], found: &mut [bool]) {
        assert_eq!(hashes.len(), found.len(), "one result slot per hash");
        #[cfg(target_arch = "x86_64")]
        if has_avx2() {
            // SAFETY: AVX2 was just detected.
            return unsafe { self.contains_hashes_avx2(hashes, found) };
        }
        self.contains_hashes_with(hashes, found, Self::covers_scalar);
    }

    /// [`contains_hashes`](Self::contains_hashes) compiled for AVX2, so the vector
    /// probe is inlined into the loop instead of called per item.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn contains_hashes_avx2(&self, hashes: &[ItemHash], found: &mut [bool]) {
        self.contains_hashes_with(hashes, found, |words, hash, k| {
            // SAFETY: this function only runs where AVX2 is available.
            unsafe { super::probe::covers_avx2(words, hash.seed(), k) }
        });
    }

    /// The batch loop, generic over the probe so that each instruction set gets its own
    /// copy with the probe inlined.
    #[inline(always)]
    pub(super) fn contains_hashes_with(
        &self,
        hashes: &[ItemHash],
        found: &mut [bool],
        covers: impl Fn(&[AtomicU64; LINE_WORDS64], ItemHash, u32) -> bool,
    ) {
        for (hash, _) in hashes
            .iter()
            .zip(found.iter())
            .take(PREFETCH_AHEAD)
            .filter(|(_, f)| !**f)
        {
            self.prefetch(*hash);
        }
        for i in 0..hashes.len() {
            if let Some(false) = found.get(i + PREFETCH_AHEAD) {
                self.prefetch(hashes[i + PREFETCH_AHEAD]);
            }
            if !found[i] {
                let hash = hashes[i];
                found[i] = covers(
                    self.words(hash.line(self.geometry.lines)),
                    hash,
                    self.geometry.hashes,
                );
            }
        }
    }

    /// `contains` for a batch of items; one result per item.
    pub fn contains_many<T: AsRef<[u8]>>(&self, items: &[T]) -> Vec<bool> {
        let hashes: Vec<ItemHash> = items.iter().map(|i| ItemHash::of(i.as_ref())).collect();
        let mut found = vec![false; hashes.len()];
        self.contains_hashes(&hashes, &mut found);
        found
    }

    /// Adds an item from any thread; true if at least one bit was newly set.
    #[inline]
    pub fn insert(&self, item: &[u8]) -> bool {
        self.insert_hash(ItemHash::of(item))
    }

    /// `insert` for an already computed hash.
    #[inline]
    pub fn insert_hash(&self, hash: ItemHash) -> bool {
        let line = hash.line(self.geometry.lines);
        let words = self.words(line);
        if Self::covers(words, hash, self.geometry.hashes) {
            return false;
        }
        let stripe = &self.stripes[(line & (self.stripes.len() as u64 - 1)) as usize];
        let _guard = stripe.lock();
        let changed = Self::set_bits(words, hash, self.geometry.hashes);
        if changed {
            self.items.fetch_add(1, Ordering::Relaxed);
        }
        changed
    }

    /// `insert` for a batch from any thread; `added[i]` is true if item i set a new bit.
    /// Prefetches lines ahead, so the cache misses of a batch overlap.
    pub fn insert_hashes(&self, hashes: &[ItemHash], added: &mut [bool]) {
        assert_eq!(hashes.len(), added.len(), "one result slot per hash");
        hashes
            .iter()
            .take(PREFETCH_AHEAD)
            .for_each(|h| self.prefetch(*h));
        for (i, slot) in added.iter_mut().enumerate() {
            if let Some(ahead) = hashes.get(i + PREFETCH_AHEAD) {
                self.prefetch(*ahead);
            }
            *slot = self.insert_hash(hashes[i]);
        }
    }

    /// `insert` for a batch of items; one result per item.
    pub fn insert_many<T: AsRef<[u8]>>(&self, items: &[T]) -> Vec<bool> {
        let hashes: Vec<ItemHash> = items.iter().map(|i| ItemHash::of(i.as_ref())).collect();
        let mut added = vec![false; hashes.len()];
        self.insert_hashes(&hashes, &mut added);
        added
    }

    /// Adds an item when the caller holds the filter exclusively (no stripe lock).
    #[inline]
    pub fn insert_exclusive(&mut self, item: &[u8]) -> bool {
        self.insert_hash_exclusive(ItemHash::of(item))
    }

    /// `insert_exclusive` for an already computed hash.
    #[inline]
    pub fn insert_hash_exclusive(&mut self, hash: ItemHash) -> bool {
        let words = self.words(hash.line(self.geometry.lines));
        // Checking first keeps a repeat add from dirtying the page.
        let changed = !Self::covers(words, hash, self.geometry.hashes)
            && Self::set_bits(words, hash, self.geometry.hashes);
        if changed {
            *self.items.get_mut() += 1;
        }
        changed
    }

    /// `insert_exclusive` for a batch; `added[i]` is true if item i set a new bit.
    pub fn insert_hashes_exclusive(&mut self, hashes: &[ItemHash], added: &mut [bool]) {
        assert_eq!(hashes.len(), added.len(), "one result slot per hash");
        hashes
            .iter()
            .take(PREFETCH_AHEAD)
            .for_each(|h| self.prefetch(*h));
        for (i, slot) in added.iter_mut().enumerate() {
            if let Some(ahead) = hashes.get(i + PREFETCH_AHEAD) {
                self.prefetch(*ahead);
            }
            *slot = self.insert_hash_exclusive(hashes[i]);
        }
    }

    /// `insert_exclusive` for a batch of items; one result per item.
    pub fn insert_many_exclusive<T: AsRef<[u8]>>(&mut self, items: &[T]) -> Vec<bool> {
        let hashes: Vec<ItemHash> = items.iter().map(|i| ItemHash::of(i.as_ref())).collect();
        let mut added = vec![false; hashes.len()];
        self.insert_hashes_exclusive(&hashes, &mut added);
        added
    }

    /// True when every probed bit is already set (lock-free), with the AVX2 probe where
    /// the CPU has it (single items; batches choose once per batch).
    #[inline]
    fn covers(words: &[AtomicU64; LINE_WORDS64], hash: ItemHash, hashes: u32) -> bool {
        #[cfg(target_arch = "x86_64")]
        if has_avx2() {
            // SAFETY: AVX2 was just detected.
            return unsafe { super::probe::covers_avx2(words, hash.seed(), hashes) };
        }
        Self::covers_scalar(words, hash, hashes)
    }

    /// [`covers`](Self::covers) without vector instructions. Tests bits where they lie
    /// instead of building masks: loads only, no per-probe select over 8 words.
    #[inline]
    pub(super) fn covers_scalar(
        words: &[AtomicU64; LINE_WORDS64],
        hash: ItemHash,
        hashes: u32,
    ) -> bool {
        let mut all = 1;
        for bit in hash.probe_bits(hashes) {
            // bit < 480, so `& 7` only drops the bounds check.
            let word = u64::from_le(words[(bit >> 6) as usize & 7].load(Ordering::Relaxed));
            all &= word >> (bit & 63);
        }
        all & 1 == 1
    }

    /// Sets the probed bits and rewrites the line checksum; false if no bit was new.
    /// The caller excludes other writers of this line (stripe lock or `&mut self`), so
    /// load+store cannot lose a concurrent writer's bits, and readers only ever see
    /// words gaining bits. The checksum store comes after every bit store.
    /// Bits are set in place, word by word: building masks first costs more (a select
    /// over 8 words per probe, or stalled store-to-load forwarding on a stack array).
    #[inline]
    fn set_bits(words: &[AtomicU64; LINE_WORDS64], hash: ItemHash, hashes: u32) -> bool {
        let mut gained = 0;
        for bit in hash.probe_bits(hashes) {
            // bit < 480, so `& 7` only drops the bounds check.
            let word = &words[(bit >> 6) as usize & 7];
            let old = u64::from_le(word.load(Ordering::Relaxed));
            let one = 1u64 << (bit & 63);
            gained |= one & !old;
            word.store((old | one).to_le(), Ordering::Relaxed);
        }
        if gained == 0 {
            return false;
        }
        let line = with_checksum(load_line(words));
        words[SUM_WORD].store(line[SUM_WORD].to_le(), Ordering::Release);
        true
    }

    /// Flat layout: is every bit RedisBloom's link probes for `pair` set? Probe i
    /// tests bit `(a + i·b) mod flat_bits` (wrapping u64 arithmetic, as its
    /// `bloom_check_add_compat`), which is bit `x % 480` of line `x / 480`.
    #[inline]
    pub fn contains_pair(&self, (a, b): (u64, u64)) -> bool {
        debug_assert!(self.geometry.is_flat());
        let bits = self.geometry.flat_bits;
        (0..self.geometry.hashes as u64).all(|i| {
            let (line, bit) = flat_position(a.wrapping_add(i.wrapping_mul(b)) % bits);
            let word =
                u64::from_le(self.words(line)[(bit >> 6) as usize & 7].load(Ordering::Relaxed));
            word >> (bit & 63) & 1 == 1
        })
    }

    /// Flat layout: sets the probed bits of `pair` (caller holds the filter
    /// exclusively), then rewrites the checksum of every line that gained a bit
    /// (after all bit stores, so a crash in between leaves lines that fail their
    /// checksum and become all ones). True, and the item counted, if a bit was new.
    pub fn insert_pair_exclusive(&mut self, (a, b): (u64, u64)) -> bool {
        debug_assert!(self.geometry.is_flat());
        let bits = self.geometry.flat_bits;
        // Lines that gained a bit; k <= MAX_HASHES probes touch at most k lines.
        let mut touched = [0u64; super::geometry::MAX_HASHES as usize];
        let mut count = 0;
        for i in 0..self.geometry.hashes as u64 {
            let (line, bit) = flat_position(a.wrapping_add(i.wrapping_mul(b)) % bits);
            let word = &self.words(line)[(bit >> 6) as usize & 7];
            let old = u64::from_le(word.load(Ordering::Relaxed));
            let one = 1u64 << (bit & 63);
            if old & one == 0 {
                word.store((old | one).to_le(), Ordering::Relaxed);
                if !touched[..count].contains(&line) {
                    touched[count] = line;
                    count += 1;
                }
            }
        }
        for &line in &touched[..count] {
            let words = self.words(line);
            let sum = with_checksum(load_line(words))[SUM_WORD];
            words[SUM_WORD].store(sum.to_le(), Ordering::Release);
        }
        if count > 0 {
            *self.items.get_mut() += 1;
        }
        count > 0
    }

    /// Sets every bit (all ones, valid checksums): for an item that must be
    /// present but whose probe positions are unknown (a flat sub-filter rebuilt
    /// from a log entry without RedisBloom's pair). No false negative, at the
    /// price of answering "present" to everything.
    pub fn saturate(&mut self) {
        let full = with_checksum([u64::MAX; LINE_WORDS64]);
        for line in 0..self.geometry.lines {
            store_line(self.words(line), &full);
        }
    }

    /// Makes every add made before this call durable, then records `checkpoint`
    /// in the header. Adds and reads proceed while the lines are msynced.
    /// An in-memory filter must be [`BloomFile::materialize`]d first.
    pub fn flush(&self, checkpoint: LogPosition) -> Result<(), FilterError> {
        if self.file.is_none() {
            return Err(FilterError::io(&self.path, "flush")(std::io::Error::other(
                "filter is in memory only: materialize it first",
            )));
        }
        let items = self.item_count();
        let lines_len = self.geometry.lines as usize * LINE_BYTES;
        self.map
            .flush_range(HEADER_BYTES as usize, lines_len)
            .map_err(FilterError::io(&self.path, "msync lines"))?;
        let mut current = self.checkpoint.lock();
        self.write_header(checkpoint, items)?;
        self.map
            .flush_range(0, HEADER_BYTES as usize)
            .map_err(FilterError::io(&self.path, "msync header"))?;
        *current = checkpoint;
        Ok(())
    }

    fn write_header(&self, checkpoint: LogPosition, items: u64) -> Result<(), FilterError> {
        let header = Header {
            hashes: self.geometry.hashes,
            lines: self.geometry.lines,
            // Geometry::flat bounds it by MAX_FLAT_BITS < 2^32.
            flat_bits: self.geometry.flat_bits as u32,
            checkpoint_file: checkpoint.file,
            checkpoint_offset: checkpoint.offset,
            item_count: items,
        }
        .encode();
        // SAFETY: the header region is the first 64 bytes of the mapping; only this
        // function writes it, and callers serialise it (create, or the checkpoint lock).
        unsafe {
            std::ptr::copy_nonoverlapping(header.as_ptr(), self.map.as_mut_ptr(), LINE_BYTES)
        };
        Ok(())
    }

    /// Copies of lines `first..first+count` (64 bytes each, checksums included).
    pub fn read_lines(&self, first: u64, count: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(count as usize * LINE_BYTES);
        for line in first..first + count {
            for word in self.words(line) {
                out.extend_from_slice(&word.load(Ordering::Relaxed).to_ne_bytes());
            }
        }
        out
    }

    /// True when `bytes` is whole lines that each pass their checksum.
    pub fn lines_are_valid(bytes: &[u8]) -> bool {
        bytes.len().is_multiple_of(LINE_BYTES)
            && bytes.chunks_exact(LINE_BYTES).all(|line| {
                checksum60(&line[..LINE_BIT_BYTES]).to_le_bytes() == line[LINE_BIT_BYTES..]
            })
    }

    /// Overwrites lines from `first` with `bytes`, which must satisfy
    /// [`BloomFile::lines_are_valid`] and fit (checked again here; false = untouched).
    pub fn write_lines(&mut self, first: u64, bytes: &[u8]) -> bool {
        let count = (bytes.len() / LINE_BYTES) as u64;
        if !Self::lines_are_valid(bytes)
            || first
                .checked_add(count)
                .is_none_or(|end| end > self.geometry.lines)
        {
            return false;
        }
        for (i, line) in bytes.chunks_exact(LINE_BYTES).enumerate() {
            let words = self.words(first + i as u64);
            for (word, chunk) in words.iter().zip(line.chunks_exact(8)) {
                word.store(
                    u64::from_ne_bytes(chunk.try_into().unwrap()),
                    Ordering::Relaxed,
                );
            }
        }
        true
    }

    /// Scans every line for fill figures.
    pub fn stats(&self) -> FilterStats {
        let mut set_bits = 0u64;
        let mut fp_sum = 0.0;
        for line in 0..self.geometry.lines {
            let mut bits = load_line(self.words(line));
            bits[SUM_WORD] &= SUM_WORD_BITS;
            let ones: u32 = bits.iter().map(|w| w.count_ones()).sum();
            set_bits += ones as u64;
            fp_sum += (ones as f64 / LINE_BITS as f64).powi(self.geometry.hashes as i32);
        }
        let fill_ratio = (set_bits as f64 / self.geometry.bits() as f64).min(1.0);
        let estimated_fp = if self.geometry.is_flat() {
            // Probes spread over the whole array, not one line.
            fill_ratio.powi(self.geometry.hashes as i32)
        } else {
            fp_sum / self.geometry.lines as f64
        };
        FilterStats {
            size_bytes: self.size_bytes(),
            set_bits,
            fill_ratio,
            estimated_fp,
            corrupt_lines_at_open: self.corrupt_at_open,
            item_count: self.item_count(),
        }
    }
}

/// Line and bit inside it of flat bit `x` (480 bits a line, checksums skipped).
#[inline]
fn flat_position(x: u64) -> (u64, u64) {
    (x / LINE_BITS as u64, x % LINE_BITS as u64)
}

/// The line's words in native order.
#[inline]
fn load_line(words: &[AtomicU64; LINE_WORDS64]) -> Line {
    std::array::from_fn(|i| u64::from_le(words[i].load(Ordering::Relaxed)))
}

/// Stores all words of a line; only for callers that exclude every other access to
/// it (create, repair at open).
fn store_line(words: &[AtomicU64; LINE_WORDS64], line: &Line) {
    for (word, value) in words.iter().zip(line) {
        word.store(value.to_le(), Ordering::Relaxed);
    }
}

/// `line` with the high half of its last word replaced by the checksum of its bits.
#[inline]
fn with_checksum(mut line: Line) -> Line {
    let mut bytes = [0u8; LINE_BYTES];
    for (chunk, word) in bytes.chunks_exact_mut(8).zip(&line) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    let sum = checksum60(&bytes[..LINE_BIT_BYTES]);
    line[SUM_WORD] = (line[SUM_WORD] & SUM_WORD_BITS) | (sum as u64) << 32;
    line
}
