//! A scalable Bloom filter: a chain of `BloomFile`s in a caller-chosen directory,
//! named by a caller-chosen u64 id, with RedisBloom 2.8 add/exists/info semantics.

use super::config::{BloomConfig, BloomLimits};
use super::error::BloomError;
use super::meta::{ChainMeta, LinkMeta, CHAIN_MAGIC, MAX_LINKS};
use super::redisbloom::{
    debug_link_line, item_hash as redisbloom_pair, LinkShape, CHAIN_STRUCT_BYTES, LINK_STRUCT_BYTES,
};
use crate::filter::{BloomFile, ItemHash, LogPosition, OpenOutcome, RebuildReason, PREFETCH_AHEAD};
use std::io::Write;
use std::path::{Path, PathBuf};

/// One sub-filter and the number of items it may take.
#[derive(Debug)]
pub(crate) struct Link {
    pub(crate) capacity: u64,
    pub(crate) file: BloomFile,
}

/// An item's hashes for one chain: the xxh3-128 that blocked sub-filters probe
/// with, and RedisBloom's MurmurHash64A pair that flat ones probe with (computed
/// only when the chain has a flat sub-filter; `None` also for a logged item
/// whose pair was not kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeHash {
    pub hash: ItemHash,
    pub pair: Option<(u64, u64)>,
}

impl ProbeHash {
    /// A logged item: its digest and, when the log kept it, its pair. A pair of
    /// (0, 0) is what a version-3 item log wrote once it stopped computing pairs.
    pub fn logged(digest: [u8; 16], pair: Option<(u64, u64)>) -> ProbeHash {
        ProbeHash {
            hash: ItemHash::from_digest(digest),
            pair: pair.filter(|&p| p != (0, 0)),
        }
    }
}

impl Link {
    fn is_flat(&self) -> bool {
        self.file.geometry().is_flat()
    }

    #[inline]
    fn contains(&self, hash: &ProbeHash) -> bool {
        if !self.is_flat() {
            return self.file.contains_hash(hash.hash);
        }
        // No pair: the chain did not compute one, which it always does when it
        // has a flat sub-filter; "present" is the answer that cannot be wrong.
        hash.pair.is_none_or(|pair| self.file.contains_pair(pair))
    }

    /// Sets the item's bits and counts it once (also when no bit was new).
    fn insert(&mut self, hash: &ProbeHash) {
        let counted = match (self.is_flat(), hash.pair) {
            (false, _) => self.file.insert_hash_exclusive(hash.hash),
            (true, Some(pair)) => self.file.insert_pair_exclusive(pair),
            (true, None) => {
                // A logged item without its pair (an old log): its bits are
                // unknown, so all of them, rather than a false negative.
                tracing::warn!(path = %self.file.path().display(),
                    "flat Bloom sub-filter rebuilt from an item without its RedisBloom pair: saturated");
                self.file.saturate();
                false
            }
        };
        if !counted {
            self.file.set_item_count(self.file.item_count() + 1);
        }
    }
}

/// A RedisBloom-compatible scalable Bloom filter backed by one file per sub-filter
/// (`<id:016x>.<index>.bloom`) and a metadata file (`<id:016x>.chain`).
///
/// Not internally synchronised for writes: the caller holds the key's lock
/// (`&mut self` to add, `&self` to query).
#[derive(Debug)]
pub struct ScalableBloom {
    pub(crate) dir: PathBuf,
    pub(crate) id: u64,
    pub(crate) config: BloomConfig,
    pub(crate) links: Vec<Link>,
    /// The chain file and every sub-filter file exist (false for a deferred chain
    /// until [`ScalableBloom::materialize`]).
    pub(crate) on_disk: bool,
}

/// BF.INFO figures, in RedisBloom's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BloomInfo {
    /// Sum of sub-filter capacities.
    pub capacity: u64,
    /// BF.INFO Size: what RedisBloom's BFMemUsage gives for the same sub-filters
    /// (`sizeof` its chain and link structs plus each link's bit array, sized
    /// by its bloom_init for the link's capacity and error).
    pub size: u64,
    /// Bytes the filter really takes (its files' headers, bits and line
    /// checksums; MEMORY USAGE counts these).
    pub own_bytes: u64,
    /// Number of sub-filters.
    pub filters: u64,
    /// Items added (each counted once, when it was not already reported present).
    pub items: u64,
    /// `None` for NONSCALING filters (RedisBloom replies nil).
    pub expansion: Option<u64>,
}

/// Why a chain cannot be reopened and must be rebuilt from the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChainRebuildReason {
    MetadataMissing,
    MetadataCorrupt,
    SubFilter { index: u32, reason: RebuildReason },
}

/// Result of [`ScalableBloom::open`].
#[derive(Debug)]
pub enum ChainOpen {
    Ready {
        filter: ScalableBloom,
        /// Lines of all sub-filters set to all ones at open.
        corrupt_lines: u64,
        /// Earliest checkpoint of the sub-filters: replay the log from here.
        checkpoint: LogPosition,
    },
    Rebuild(ChainRebuildReason),
}

pub(crate) fn chain_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id:016x}.chain"))
}

pub(crate) fn link_path(dir: &Path, id: u64, index: usize) -> PathBuf {
    dir.join(format!("{id:016x}.{index}.bloom"))
}

impl ScalableBloom {
    /// BF.RESERVE: validates `config`, checks `limits`, then creates the files.
    /// `ItemExists` when filter `id` already exists in `dir`.
    pub fn create(
        dir: &Path,
        id: u64,
        config: BloomConfig,
        limits: &BloomLimits,
    ) -> Result<Self, BloomError> {
        let meta = Self::first_link(config, limits)?;
        if chain_path(dir, id).exists() {
            return Err(BloomError::ItemExists);
        }
        Self::create_from_meta(dir, id, &meta)
    }

    /// `create`, but the filter stays in anonymous memory and no file is touched until
    /// [`ScalableBloom::materialize`] (the periodic flush). For callers whose log can
    /// rebuild the filter if the process dies first (key-owned filters: the AOF holds
    /// the binding and every new item). A filter dropped before then never costs a
    /// file create, mmap, rename or unlink. Nothing is checked on disk either (a
    /// `stat` was 5% of a BF.RESERVE + DEL cycle): `id` is fresh from
    /// `BloomStore::allocate_id`, which skips every id found on disk, or its old
    /// files were just deleted.
    pub fn create_deferred(
        dir: &Path,
        id: u64,
        config: BloomConfig,
        limits: &BloomLimits,
    ) -> Result<Self, BloomError> {
        let meta = Self::first_link(config, limits)?;
        let link = &meta.links[0];
        let file = BloomFile::create_in_memory(&link_path(dir, id, 0), link.geometry)?;
        Ok(ScalableBloom {
            dir: dir.to_path_buf(),
            id,
            config,
            links: vec![Link {
                capacity: link.capacity,
                file,
            }],
            on_disk: false,
        })
    }

    fn first_link(config: BloomConfig, limits: &BloomLimits) -> Result<ChainMeta, BloomError> {
        config.validate()?;
        let (capacity, geometry) = config.sub_filter_geometry(0, 0, limits, true)?;
        Ok(ChainMeta {
            config,
            links: vec![LinkMeta {
                capacity,
                geometry,
                items: 0,
            }],
        })
    }

    /// False while a deferred chain has not been written yet.
    pub fn is_on_disk(&self) -> bool {
        self.on_disk
    }

    /// True when some file of this chain may exist (what DEL must remove).
    pub fn has_files(&self) -> bool {
        self.on_disk || self.links.iter().any(|l| l.file.is_on_disk())
    }

    /// Writes a deferred chain's sub-filter files, then its chain file (the order
    /// `grow` keeps: a chain file never names a missing sub-filter). No-op when on disk.
    pub fn materialize(&mut self) -> Result<(), BloomError> {
        if self.on_disk {
            return Ok(());
        }
        for link in &mut self.links {
            link.file.materialize()?;
        }
        self.write_meta()?;
        self.on_disk = true;
        Ok(())
    }

    pub(crate) fn create_from_meta(
        dir: &Path,
        id: u64,
        meta: &ChainMeta,
    ) -> Result<Self, BloomError> {
        let mut links = Vec::with_capacity(meta.links.len());
        for (index, link) in meta.links.iter().enumerate() {
            let file = BloomFile::create(&link_path(dir, id, index), link.geometry)?;
            file.set_item_count(link.items);
            links.push(Link {
                capacity: link.capacity,
                file,
            });
        }
        let filter = ScalableBloom {
            dir: dir.to_path_buf(),
            id,
            config: meta.config,
            links,
            on_disk: true,
        };
        filter.write_meta()?;
        Ok(filter)
    }

    /// Reopens filter `id`, verifying every sub-filter file.
    pub fn open(dir: &Path, id: u64) -> Result<ChainOpen, BloomError> {
        let path = chain_path(dir, id);
        let raw = match std::fs::read(&path) {
            Ok(raw) => raw,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(ChainOpen::Rebuild(ChainRebuildReason::MetadataMissing))
            }
            Err(e) => return Err(BloomError::io("read", &path)(e)),
        };
        let Some(meta) = ChainMeta::decode(&raw, CHAIN_MAGIC) else {
            return Ok(ChainOpen::Rebuild(ChainRebuildReason::MetadataCorrupt));
        };
        let mut links = Vec::with_capacity(meta.links.len());
        let mut corrupt_lines = 0;
        let mut checkpoint: Option<LogPosition> = None;
        for (index, link) in meta.links.iter().enumerate() {
            match BloomFile::open(&link_path(dir, id, index), link.geometry)? {
                OpenOutcome::Ready(file, report) => {
                    corrupt_lines += report.corrupt_lines;
                    let earliest = checkpoint.map_or(report.checkpoint, |c| {
                        std::cmp::min_by_key(c, report.checkpoint, |p| (p.file, p.offset))
                    });
                    checkpoint = Some(earliest);
                    links.push(Link {
                        capacity: link.capacity,
                        file,
                    });
                }
                OpenOutcome::Rebuild(reason) => {
                    return Ok(ChainOpen::Rebuild(ChainRebuildReason::SubFilter {
                        index: index as u32,
                        reason,
                    }))
                }
            }
        }
        Ok(ChainOpen::Ready {
            filter: ScalableBloom {
                dir: dir.to_path_buf(),
                id,
                config: meta.config,
                links,
                on_disk: true,
            },
            corrupt_lines,
            checkpoint: checkpoint.unwrap_or_default(),
        })
    }

    /// Removes every file of filter `id`; missing files are not an error.
    pub fn delete(dir: &Path, id: u64) -> Result<(), BloomError> {
        let remove = |path: PathBuf| match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(BloomError::io("remove", &path)(e))
            }
            _ => Ok(()),
        };
        // The metadata goes first so a crash midway leaves no chain that names gone files.
        remove(chain_path(dir, id))?;
        let mut index = 0;
        while link_path(dir, id, index).exists() {
            remove(link_path(dir, id, index))?;
            index += 1;
        }
        Ok(())
    }

    /// The chain's shape; item counts only when asked (SCANDUMP carries them,
    /// the chain file does not: each filter file keeps its own).
    pub(super) fn meta(&self, with_counts: bool) -> ChainMeta {
        ChainMeta {
            config: self.config,
            links: self
                .links
                .iter()
                .map(|l| LinkMeta {
                    capacity: l.capacity,
                    geometry: l.file.geometry(),
                    items: if with_counts { l.file.item_count() } else { 0 },
                })
                .collect(),
        }
    }

    /// Atomic replace: temp file, rename. Not fsynced: the AOF, not this
    /// file, is the record of the filter; a chain file lost or torn by a
    /// crash fails its checksum at open and the filter is rebuilt from the
    /// log. Syncing here cost three fsyncs per BF.RESERVE.
    fn write_meta(&self) -> Result<(), BloomError> {
        let path = chain_path(&self.dir, self.id);
        let tmp = path.with_extension("chain.tmp");
        let mut file = std::fs::File::create(&tmp).map_err(BloomError::io("create", &tmp))?;
        file.write_all(&self.meta(false).encode(CHAIN_MAGIC))
            .map_err(BloomError::io("write", &tmp))?;
        std::fs::rename(&tmp, &path).map_err(BloomError::io("rename", &path))?;
        Ok(())
    }

    /// The configuration the filter was created with.
    pub fn config(&self) -> BloomConfig {
        self.config
    }

    /// Whether adds need RedisBloom's pair: the first sub-filter is flat (flat
    /// ones are always a prefix of the chain).
    pub fn needs_pair(&self) -> bool {
        self.links[0].is_flat()
    }

    /// Every sub-filter is flat: every answer is the one RedisBloom's chain with
    /// the same items gives (an add answered "present" is present there too).
    pub fn answers_as_redisbloom(&self) -> bool {
        self.links.last().is_some_and(Link::is_flat)
    }

    /// The hashes this chain probes `item` with.
    #[inline]
    pub fn probe_hash(&self, item: &[u8]) -> ProbeHash {
        ProbeHash {
            hash: ItemHash::of(item),
            pair: self.needs_pair().then(|| redisbloom_pair(item)),
        }
    }

    /// The hashes a lookup needs: only the pair when every sub-filter is flat
    /// (the xxh3 digest is for blocked sub-filters and the item log).
    fn lookup_hash(&self, item: &[u8]) -> ProbeHash {
        if self.answers_as_redisbloom() {
            return ProbeHash {
                hash: ItemHash::from_digest([0; 16]),
                pair: Some(redisbloom_pair(item)),
            };
        }
        self.probe_hash(item)
    }

    /// BF.EXISTS.
    pub fn exists(&self, item: &[u8]) -> bool {
        let hash = self.lookup_hash(item);
        self.links.iter().any(|l| l.contains(&hash))
    }

    /// BF.MEXISTS. Each blocked sub-filter tests the whole batch with
    /// prefetching, so the cache misses of the items overlap; flat ones are
    /// small enough to be in cache.
    pub fn mexists<'a>(&self, items: impl IntoIterator<Item = &'a [u8]>) -> Vec<bool> {
        if !self.needs_pair() {
            // All blocked: the batch as one array of xxh3 hashes, nothing else.
            let hashes: Vec<ItemHash> = items.into_iter().map(ItemHash::of).collect();
            let mut found = vec![false; hashes.len()];
            for link in &self.links {
                link.file.contains_hashes(&hashes, &mut found);
            }
            return found;
        }
        let hashes: Vec<ProbeHash> = items.into_iter().map(|i| self.lookup_hash(i)).collect();
        let mut found = vec![false; hashes.len()];
        let mut blocked: Option<Vec<ItemHash>> = None;
        for link in &self.links {
            if link.is_flat() {
                for (hash, found) in hashes.iter().zip(found.iter_mut()) {
                    *found = *found || link.contains(hash);
                }
            } else {
                let xxh = blocked.get_or_insert_with(|| hashes.iter().map(|h| h.hash).collect());
                link.file.contains_hashes(xxh, &mut found);
            }
        }
        found
    }

    /// BF.ADD: `Ok(true)` if newly added, `Ok(false)` if (probably) present.
    /// Grows the chain when the last sub-filter is full, within `limits`.
    pub fn add(&mut self, item: &[u8], limits: &BloomLimits) -> Result<bool, BloomError> {
        self.add_hash(self.probe_hash(item), limits)
    }

    /// [`add`](Self::add) of an item hashed by [`probe_hash`](Self::probe_hash).
    pub fn add_hash(&mut self, hash: ProbeHash, limits: &BloomLimits) -> Result<bool, BloomError> {
        if self.links.iter().any(|l| l.contains(&hash)) {
            return Ok(false);
        }
        let last = self.links.last().expect("a chain has at least one link");
        if last.file.item_count() >= last.capacity {
            if self.config.nonscaling {
                return Err(BloomError::NonScalingFull);
            }
            self.grow(limits)?;
        }
        // Counted even if every probed bit was already set, as RedisBloom does.
        self.links
            .last_mut()
            .expect("a chain has at least one link")
            .insert(&hash);
        Ok(true)
    }

    /// Re-applies an add that the log says was new when it happened: the item goes
    /// where the live add put it (the first sub-filter not yet full, growing the chain
    /// as the live add did) and counts once even if its bits are already set.
    pub fn replay_add(&mut self, item: &[u8], limits: &BloomLimits) -> Result<(), BloomError> {
        self.replay_add_hash(self.probe_hash(item), limits)
    }

    /// [`replay_add`](Self::replay_add) of an item known by its hashes (side logs).
    pub fn replay_add_hash(
        &mut self,
        hash: ProbeHash,
        limits: &BloomLimits,
    ) -> Result<(), BloomError> {
        let slot = self
            .links
            .iter()
            .position(|l| l.file.item_count() < l.capacity);
        let index = match slot {
            Some(index) => index,
            None if self.config.nonscaling => self.links.len() - 1,
            None => {
                self.grow(limits)?;
                self.links.len() - 1
            }
        };
        self.links[index].insert(&hash);
        Ok(())
    }

    /// Copies every file of filter `from` to filter `to` in the same directory
    /// (COPY of a key); the source should be flushed first.
    pub fn copy_files(&self, to: u64) -> Result<ScalableBloom, BloomError> {
        if chain_path(&self.dir, to).exists() {
            return Err(BloomError::ItemExists);
        }
        if !self.on_disk {
            return self.copy_from_memory(to);
        }
        self.flush(LogPosition::default())?;
        for index in 0..self.links.len() {
            let (src, dst) = (
                link_path(&self.dir, self.id, index),
                link_path(&self.dir, to, index),
            );
            std::fs::copy(&src, &dst).map_err(BloomError::io("copy", &dst))?;
        }
        let src = chain_path(&self.dir, self.id);
        let dst = chain_path(&self.dir, to);
        std::fs::copy(&src, &dst).map_err(BloomError::io("copy", &dst))?;
        match Self::open(&self.dir, to)? {
            ChainOpen::Ready { filter, .. } => Ok(filter),
            ChainOpen::Rebuild(reason) => Err(BloomError::Storage(format!(
                "copied filter {to:016x} does not reopen: {reason:?}"
            ))),
        }
    }

    /// `copy_files` of a deferred chain: the copy's bits come from memory, and its
    /// files are written at once (its binding record counts the copied items as
    /// already in, so the log could not rebuild them).
    fn copy_from_memory(&self, to: u64) -> Result<ScalableBloom, BloomError> {
        let mut links = Vec::with_capacity(self.links.len());
        for (index, link) in self.links.iter().enumerate() {
            let geometry = link.file.geometry();
            let mut file = BloomFile::create_in_memory(&link_path(&self.dir, to, index), geometry)?;
            let written = file.write_lines(0, &link.file.read_lines(0, geometry.lines));
            debug_assert!(written, "lines of the same geometry always fit");
            file.set_item_count(link.file.item_count());
            links.push(Link {
                capacity: link.capacity,
                file,
            });
        }
        let mut copy = ScalableBloom {
            dir: self.dir.clone(),
            id: to,
            config: self.config,
            links,
            on_disk: false,
        };
        // flush writes the item counts into the headers, as the on-disk path's
        // flush of the source does before copying.
        if let Err(e) = copy
            .materialize()
            .and_then(|()| copy.flush(LogPosition::default()))
        {
            let _ = Self::delete(&self.dir, to);
            return Err(e);
        }
        Ok(copy)
    }

    /// The id the files are named by.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// BF.MADD / BF.INSERT items: one result per item, stopping after the first
    /// error as RedisBloom does (its reply array ends with that error). Items are
    /// added one by one in order (a repeat within the batch reports false), while
    /// the lines of items further on are prefetched so their cache misses overlap.
    pub fn madd<'a>(
        &mut self,
        items: impl IntoIterator<Item = &'a [u8]>,
        limits: &BloomLimits,
    ) -> Vec<Result<bool, BloomError>> {
        let hashes: Vec<ProbeHash> = items.into_iter().map(|i| self.probe_hash(i)).collect();
        self.madd_hashes(&hashes, limits)
    }

    /// [`madd`](Self::madd) of items hashed by [`probe_hash`](Self::probe_hash).
    pub fn madd_hashes(
        &mut self,
        hashes: &[ProbeHash],
        limits: &BloomLimits,
    ) -> Vec<Result<bool, BloomError>> {
        let prefetch = |links: &[Link], hash: &ProbeHash| {
            links
                .iter()
                .filter(|link| !link.is_flat())
                .for_each(|link| link.file.prefetch(hash.hash));
        };
        for hash in hashes.iter().take(PREFETCH_AHEAD) {
            prefetch(&self.links, hash);
        }
        let mut out = Vec::with_capacity(hashes.len());
        for (i, hash) in hashes.iter().enumerate() {
            if let Some(ahead) = hashes.get(i + PREFETCH_AHEAD) {
                prefetch(&self.links, ahead);
            }
            let result = self.add_hash(*hash, limits);
            let stop = result.is_err();
            out.push(result);
            if stop {
                break;
            }
        }
        out
    }

    fn grow(&mut self, limits: &BloomLimits) -> Result<(), BloomError> {
        let index = self.links.len() as u32;
        if index >= MAX_LINKS {
            return Err(BloomError::TooLarge);
        }
        let used = self.size_bytes();
        let flat_allowed = self.answers_as_redisbloom();
        let (capacity, geometry) =
            self.config
                .sub_filter_geometry(index, used, limits, flat_allowed)?;
        let path = link_path(&self.dir, self.id, index as usize);
        if !self.on_disk {
            let file = BloomFile::create_in_memory(&path, geometry)?;
            self.links.push(Link { capacity, file });
            return Ok(());
        }
        let file = BloomFile::create(&path, geometry)?;
        self.links.push(Link { capacity, file });
        if let Err(e) = self.write_meta() {
            self.links.pop();
            return Err(e);
        }
        Ok(())
    }

    fn size_bytes(&self) -> u64 {
        saturating_sum(self.links.iter().map(|l| l.file.size_bytes()))
    }

    /// Items counted per sub-filter, first to last.
    pub fn link_items(&self) -> Vec<u64> {
        self.links.iter().map(|l| l.file.item_count()).collect()
    }

    /// Sub-filter `index` as RedisBloom would have made it (capacity, error and
    /// bloom_init's shape). `None` only for budgets RedisBloom refuses, which
    /// no sub-filter that exists has.
    fn redisbloom_shape(&self, index: usize) -> Option<(u64, f64, LinkShape)> {
        let link = &self.links[index];
        let error = self.config.sub_filter_error(index as u32);
        Some((link.capacity, error, LinkShape::of(link.capacity, error)?))
    }

    /// BF.INFO Size as RedisBloom computes it (BFMemUsage) for these sub-filters.
    pub fn redisbloom_size(&self) -> u64 {
        let links = (0..self.links.len()).map(|i| {
            let bytes = self.redisbloom_shape(i).map_or(0, |(_, _, s)| s.bytes);
            LINK_STRUCT_BYTES.saturating_add(bytes)
        });
        CHAIN_STRUCT_BYTES.saturating_add(saturating_sum(links))
    }

    /// BF.DEBUG: RedisBloom's lines for these sub-filters (`size:` the items,
    /// then per sub-filter the bytes, bits and hashes RedisBloom's link of the
    /// same capacity and error has, and the items counted into it).
    pub fn debug_lines(&self) -> Vec<String> {
        let mut lines = vec![format!("size:{}", self.card())];
        for (index, link) in self.links.iter().enumerate() {
            let (capacity, error, shape) = self.redisbloom_shape(index).unwrap_or((
                link.capacity,
                0.0,
                LinkShape {
                    bytes: 0,
                    hashes: 0,
                },
            ));
            lines.push(debug_link_line(
                shape,
                shape.bits(),
                64,
                capacity,
                link.file.item_count(),
                error,
            ));
        }
        lines
    }

    /// BF.CARD.
    pub fn card(&self) -> u64 {
        saturating_sum(self.links.iter().map(|l| l.file.item_count()))
    }

    /// BF.INFO.
    pub fn info(&self) -> BloomInfo {
        BloomInfo {
            capacity: saturating_sum(self.links.iter().map(|l| l.capacity)),
            size: self.redisbloom_size(),
            own_bytes: self.size_bytes(),
            filters: self.links.len() as u64,
            items: self.card(),
            expansion: (!self.config.nonscaling).then_some(self.config.expansion),
        }
    }

    /// Makes every add so far durable and records `checkpoint` in every sub-filter.
    /// A deferred chain must be [`ScalableBloom::materialize`]d first.
    pub fn flush(&self, checkpoint: LogPosition) -> Result<(), BloomError> {
        for link in &self.links {
            link.file.flush(checkpoint)?;
        }
        Ok(())
    }
}

/// Counts read from files may be anything: a damaged header must not
/// overflow a total (the fuzz target bloom_file found one).
fn saturating_sum(values: impl Iterator<Item = u64>) -> u64 {
    values.fold(0, u64::saturating_add)
}
