//! One key's filter: its backend, its replay counters, and what DEL/FLUSH do to it.

use super::kernel_backed::KernelBloom;
use super::record::{Binding, VALUES_COMMAND};
use super::side_log::{ItemLog, LoggedItem, LoggedPairs, ValuesSnapshot};
use super::store::BloomStore;
use crate::bloom::{
    debug_link_line, dump_header_items, BloomConfig, BloomError, BloomInfo, BloomLimits, ChainOpen,
    ChainRebuildReason, LinkShape, ProbeHash, RedisBloomChain, ScalableBloom,
};
use crate::filter::LogPosition;
use crate::kernel::{FilterSpec, KernelFilterInfo, PinLocation};
use parking_lot::{RwLock, RwLockUpgradableReadGuard};
use std::sync::Arc;

/// Which store holds a filter's bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendSpec {
    /// Memory-mapped checksummed files under `<dir>/bloom/`, scalable.
    User,
    /// A pinned kernel bloom map; `raw_width` stores items as they are.
    Kernel { raw_width: Option<u32> },
}

/// What a filter was created with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeyFilterSpec {
    pub config: BloomConfig,
    pub backend: BackendSpec,
}

impl KeyFilterSpec {
    pub fn validate(&self) -> Result<(), BloomError> {
        self.config.validate()?;
        if let BackendSpec::Kernel { raw_width } = self.backend {
            if !self.config.nonscaling {
                return Err(BloomError::BadBackend(
                    "kernel-backed filters are always NONSCALING",
                ));
            }
            if self.config.capacity > u32::MAX as u64 {
                return Err(BloomError::BadBackend(
                    "kernel-backed filter capacity must be at most 4294967295",
                ));
            }
            self.kernel_spec(raw_width).validate()?;
        }
        Ok(())
    }

    fn kernel_spec(&self, raw_width: Option<u32>) -> FilterSpec {
        let capacity = self.config.capacity.min(u32::MAX as u64) as u32;
        match raw_width {
            Some(width) => FilterSpec::raw(capacity, self.config.error_rate, width),
            None => FilterSpec::digest(capacity, self.config.error_rate),
        }
    }
}

/// BF.INFO figures plus the kernel map's facts for kernel filters.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyFilterInfo {
    pub bloom: BloomInfo,
    pub kernel: Option<KernelFilterInfo>,
}

enum Backend {
    User(ScalableBloom),
    Kernel(Box<KernelBloom>),
    /// A filter imported from RedisBloom (RESTORE, dump.rdb): its bit arrays
    /// and hash scheme as they were, in memory; the AOF holds it (a rewrite
    /// writes it as a RESTORE record), no file.
    RedisBloom(Box<RedisBloomChain>),
    Gone,
}

struct State {
    backend: Backend,
    /// Replay: logged new items seen so far for this filter.
    replay_seen: u64,
    /// Replay: items the reopened files/pin already held.
    durable_items: u64,
    /// User filters: the digests of their items, which an AOF rewrite keeps.
    items: Option<ItemLog>,
    /// Replay: the filter was reopened (not rebuilt), so LOADCHUNK data is already in.
    reopened: bool,
    /// Replay: why the files could not be reopened. Reported only if the filter
    /// is still there when the log ends: a filter the log deletes later (DEL,
    /// FLUSHALL, SET over it) had its files removed on purpose, and its rebuild
    /// is no loss worth a warning.
    unusable: Option<Unusable>,
}

#[derive(Debug, Clone, Copy)]
struct Unusable {
    reason: ChainRebuildReason,
    /// Opened by a BF.LOADCHUNK header record rather than a binding.
    loaded: bool,
}

pub(crate) struct Cell {
    pub(crate) id: u64,
    spec: KeyFilterSpec,
    store: Arc<BloomStore>,
    state: RwLock<State>,
}

impl Cell {
    pub(crate) fn open(
        store: Arc<BloomStore>,
        binding: &Binding,
        fresh: bool,
        limits: &BloomLimits,
    ) -> Result<Cell, BloomError> {
        let dir = store.dir().to_path_buf();
        let id = binding.id;
        let mut items = None;
        let mut unusable = None;
        let (backend, durable_items, reopened) = match binding.spec.backend {
            BackendSpec::User => {
                let reopened = if fresh {
                    None
                } else {
                    match ScalableBloom::open(&dir, id)? {
                        ChainOpen::Ready {
                            filter,
                            corrupt_lines,
                            ..
                        } => {
                            store
                                .stats
                                .corrupt_lines_at_open
                                .fetch_add(corrupt_lines, std::sync::atomic::Ordering::Relaxed);
                            Some(filter)
                        }
                        ChainOpen::Rebuild(reason) => {
                            unusable = Some(Unusable {
                                reason,
                                loaded: false,
                            });
                            None
                        }
                    }
                };
                let log = if fresh {
                    ItemLog::create(&dir, id)?
                } else {
                    ItemLog::open(&dir, id, binding.base)?
                };
                let opened = match reopened {
                    Some(filter) => {
                        let card = filter.card();
                        (Backend::User(filter), card, true)
                    }
                    None => {
                        if !fresh {
                            ScalableBloom::delete(&dir, id)?;
                        }
                        // Files come at the next flush: the logs rebuild it until then.
                        let mut filter =
                            ScalableBloom::create_deferred(&dir, id, binding.spec.config, limits)?;
                        // A rebuild starts from the item log; the AOF replays the rest.
                        let mut logged = 0u64;
                        let digests = if fresh { None } else { log.snapshot(true)? };
                        if let Some(digests) = digests {
                            digests.for_each_chunk(0, VALUES_PER_RECORD, |chunk| {
                                logged += chunk.len() as u64;
                                chunk.iter().try_for_each(|entry| {
                                    let logged = LoggedItem::decode(entry)
                                        .expect("item log entries are 16 or 32 bytes");
                                    filter
                                        .replay_add_hash(
                                            ProbeHash::logged(logged.digest, logged.pair),
                                            limits,
                                        )
                                        .map(drop)
                                })
                            })?;
                        }
                        (Backend::User(filter), logged, false)
                    }
                };
                items = Some(log);
                opened
            }
            BackendSpec::Kernel { raw_width } => {
                store.kernel_available().map_err(BloomError::Kernel)?;
                let (db, name) = binding.pin.clone().ok_or(BloomError::BadBackend(
                    "kernel filter binding without a pin",
                ))?;
                let location = PinLocation::new(store.pin_root(), db, name)?;
                let spec = binding.spec.kernel_spec(raw_width);
                let kernel = KernelBloom::open(&dir, id, &location, &spec, fresh)?;
                let entries = kernel.entries();
                (Backend::Kernel(Box::new(kernel)), entries, !fresh)
            }
        };
        Ok(Cell {
            id,
            spec: binding.spec,
            store,
            state: RwLock::new(State {
                backend,
                replay_seen: binding.base,
                durable_items,
                items,
                reopened,
                unusable,
            }),
        })
    }

    pub(crate) fn imported(store: Arc<BloomStore>, id: u64, chain: RedisBloomChain) -> Cell {
        let first = &chain.links[0];
        let nonscaling = chain.nonscaling();
        let config = BloomConfig {
            // The rate BF.RESERVE was given: the first link has half of it.
            error_rate: if nonscaling {
                first.error
            } else {
                (first.error * 2.0).min(0.5)
            },
            capacity: first.entries,
            expansion: chain.growth.max(1) as u64,
            nonscaling,
        };
        Cell {
            id,
            spec: KeyFilterSpec {
                config,
                backend: BackendSpec::User,
            },
            store,
            state: RwLock::new(State {
                backend: Backend::RedisBloom(Box::new(chain)),
                replay_seen: 0,
                durable_items: 0,
                items: None,
                reopened: false,
                unusable: None,
            }),
        }
    }

    pub(crate) fn from_header(
        store: Arc<BloomStore>,
        id: u64,
        data: &[u8],
        limits: &BloomLimits,
        fresh: bool,
    ) -> Result<Cell, BloomError> {
        let dir = store.dir().to_path_buf();
        let header_items = dump_header_items(data).ok_or(BloomError::BadData)?;
        let mut found = None;
        let mut unusable = None;
        if !fresh {
            match ScalableBloom::open(&dir, id)? {
                ChainOpen::Ready { filter, .. } => found = Some(filter),
                ChainOpen::Rebuild(reason) => {
                    unusable = Some(Unusable {
                        reason,
                        loaded: true,
                    })
                }
            }
        }
        let (filter, durable_items, reopened) = match found {
            Some(filter) => {
                let card = filter.card();
                (filter, card, true)
            }
            None => {
                ScalableBloom::delete(&dir, id)?;
                (
                    ScalableBloom::load_header(&dir, id, data, limits)?,
                    0,
                    false,
                )
            }
        };
        Ok(Cell {
            id,
            spec: KeyFilterSpec {
                config: filter.config(),
                backend: BackendSpec::User,
            },
            store,
            state: RwLock::new(State {
                backend: Backend::User(filter),
                replay_seen: header_items,
                durable_items,
                items: Some(ItemLog::incomplete(&dir, id)?),
                reopened,
                unusable,
            }),
        })
    }
}

impl Drop for Cell {
    fn drop(&mut self) {
        {
            let mut live = self.store.live.lock();
            if live.get(&self.id).is_some_and(|w| w.strong_count() == 0) {
                live.remove(&self.id);
            }
        }
        if self.store.is_closing() {
            return;
        }
        let backend = std::mem::replace(&mut self.state.get_mut().backend, Backend::Gone);
        let result = match backend {
            Backend::User(filter) => {
                let has_files = filter.has_files();
                drop(filter);
                // A filter that never reached its files has nothing on disk to delete.
                let log_on_disk = self
                    .state
                    .get_mut()
                    .items
                    .as_ref()
                    .is_some_and(|log| log.on_disk());
                let files = if has_files {
                    ScalableBloom::delete(self.store.dir(), self.id)
                } else {
                    Ok(())
                };
                if has_files || log_on_disk {
                    files.and(ItemLog::remove(self.store.dir(), self.id))
                } else {
                    files
                }
            }
            Backend::Kernel(kernel) => kernel.delete(),
            Backend::RedisBloom(_) | Backend::Gone => Ok(()),
        };
        if let Err(e) = result {
            tracing::warn!(id = self.id, "could not delete a dropped bloom filter: {e}");
        }
    }
}

/// A key's Bloom filter. Clones share the filter (the keyspace moves values, it
/// never clones them, except COPY which uses [`BloomValue::duplicate`]); when the
/// last clone is dropped (DEL, FLUSH, overwrite, expiry) its files are deleted and
/// a kernel map is unpinned, unless the store is closing.
#[derive(Clone)]
pub struct BloomValue(pub(crate) Arc<Cell>);

impl PartialEq for BloomValue {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
impl Eq for BloomValue {}

impl std::fmt::Debug for BloomValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BloomValue")
            .field("id", &self.0.id)
            .field("spec", &self.0.spec)
            .finish()
    }
}

impl BloomValue {
    pub fn id(&self) -> u64 {
        self.0.id
    }

    pub fn spec(&self) -> KeyFilterSpec {
        self.0.spec
    }

    pub fn is_kernel(&self) -> bool {
        matches!(self.0.spec.backend, BackendSpec::Kernel { .. })
    }

    /// A filter imported from RedisBloom (kept in RedisBloom's layout).
    /// A user filter whose every sub-filter is in RedisBloom's layout and
    /// whose item log holds every item with its pair: its RedisBloom export
    /// is exact. MIGRATE sends that rather than BlinkDB's native dump, which
    /// carries no item log (the copy would then export saturated).
    pub fn exports_exactly(&self) -> bool {
        let state = self.0.state.read();
        match (&state.backend, &state.items) {
            (Backend::User(f), Some(log)) => {
                f.answers_as_redisbloom()
                    && matches!(log.pairs(f.card()), Ok(LoggedPairs::Complete(_)))
            }
            _ => false,
        }
    }

    pub fn is_imported(&self) -> bool {
        matches!(self.0.state.read().backend, Backend::RedisBloom(_))
    }

    /// BF.ADD: Ok(true) when newly added.
    pub fn add(&self, item: &[u8], limits: &BloomLimits) -> Result<bool, BloomError> {
        let state = &mut *self.0.state.write();
        match &mut state.backend {
            Backend::User(f) => {
                let hash = f.probe_hash(item);
                let added = f.add_hash(hash, limits)?;
                if let Some(log) = &state.items {
                    if added {
                        log.append_item(item, &hash)?;
                    } else if !f.answers_as_redisbloom() {
                        log.swallowed()?;
                    }
                }
                Ok(added)
            }
            Backend::Kernel(k) => k.add(item, true),
            Backend::RedisBloom(c) => c.add(item, limits),
            Backend::Gone => Err(BloomError::NotFound),
        }
    }

    /// BF.MADD / BF.INSERT: one result per item, stopping after the first error.
    pub fn madd<'a>(
        &self,
        items: impl IntoIterator<Item = &'a [u8]>,
        limits: &BloomLimits,
    ) -> Vec<Result<bool, BloomError>> {
        // One lock for the whole batch; the user backend hashes and prefetches it.
        let state = &mut *self.0.state.write();
        match &mut state.backend {
            Backend::User(f) => {
                let items: Vec<&[u8]> = items.into_iter().collect();
                let hashes: Vec<ProbeHash> = items.iter().map(|i| f.probe_hash(i)).collect();
                let results = f.madd_hashes(&hashes, limits);
                // Read after the batch: a chain that grew a blocked sub-filter
                // in it may have met a false positive of BlinkDB's own bits.
                let exact = f.answers_as_redisbloom();
                if let Some(log) = &state.items {
                    for ((item, hash), result) in items.iter().zip(&hashes).zip(&results) {
                        let logged = match result {
                            Ok(true) => log.append_item(item, hash),
                            Ok(false) if exact => Ok(()),
                            Ok(false) => log.swallowed(),
                            Err(_) => Ok(()),
                        };
                        if let Err(e) = logged {
                            return vec![Err(e)];
                        }
                    }
                }
                results
            }
            Backend::Kernel(k) => {
                let mut out = Vec::new();
                for item in items {
                    let r = k.add(item, true);
                    let stop = r.is_err();
                    out.push(r);
                    if stop {
                        break;
                    }
                }
                out
            }
            Backend::RedisBloom(c) => {
                let mut out = Vec::new();
                for item in items {
                    let r = c.add(item, limits);
                    let stop = r.is_err();
                    out.push(r);
                    if stop {
                        break;
                    }
                }
                out
            }
            Backend::Gone => vec![Err(BloomError::NotFound)],
        }
    }

    /// Replays logged new items (see the module docs for the counting rule).
    pub fn replay_items<'a>(
        &self,
        items: impl IntoIterator<Item = &'a [u8]>,
        limits: &BloomLimits,
    ) -> Result<(), BloomError> {
        let state = &mut *self.0.state.write();
        for item in items {
            state.replay_seen += 1;
            if let Some(log) = &state.items {
                log.replayed(state.replay_seen, &LoggedItem::of(item))?;
            }
            if state.replay_seen <= state.durable_items {
                continue;
            }
            match &mut state.backend {
                Backend::User(f) => f.replay_add(item, limits)?,
                Backend::Kernel(k) => k.force_add(item)?,
                Backend::RedisBloom(c) => {
                    c.add(item, limits)?;
                }
                Backend::Gone => return Err(BloomError::NotFound),
            }
        }
        Ok(())
    }

    /// Replays stored values written by an AOF rewrite: kernel values, or a
    /// user filter's item-log entries (16-byte digests, or 32 bytes: digest
    /// and RedisBloom pair).
    pub fn replay_values<'a>(
        &self,
        values: impl IntoIterator<Item = &'a [u8]>,
        limits: &BloomLimits,
    ) -> Result<(), BloomError> {
        let state = &mut *self.0.state.write();
        for value in values {
            state.replay_seen += 1;
            let logged = match &state.backend {
                Backend::User(_) => Some(LoggedItem::decode(value).ok_or(
                    BloomError::BadBackend(
                        "a user filter's stored values are 16-byte digests or 32-byte digest-and-pair entries",
                    ),
                )?),
                _ => None,
            };
            if let (Some(log), Some(logged)) = (&state.items, &logged) {
                log.replayed(state.replay_seen, logged)?;
            }
            if state.replay_seen <= state.durable_items {
                continue;
            }
            match &mut state.backend {
                Backend::Kernel(k) => k.force_value(value)?,
                Backend::User(f) => {
                    let logged = logged.expect("decoded above");
                    f.replay_add_hash(ProbeHash::logged(logged.digest, logged.pair), limits)?
                }
                Backend::RedisBloom(_) => {
                    return Err(BloomError::BadBackend(
                        "stored values for an imported RedisBloom filter",
                    ))
                }
                Backend::Gone => return Err(BloomError::NotFound),
            }
        }
        Ok(())
    }

    /// BF.EXISTS.
    pub fn exists(&self, item: &[u8]) -> Result<bool, BloomError> {
        match &self.0.state.read().backend {
            Backend::User(f) => Ok(f.exists(item)),
            Backend::Kernel(k) => k.exists(item),
            Backend::RedisBloom(c) => Ok(c.contains(item)),
            Backend::Gone => Err(BloomError::NotFound),
        }
    }

    /// BF.MEXISTS: one answer per item, under one lock (the user backend tests the
    /// batch with prefetching).
    pub fn mexists<'a>(
        &self,
        items: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<Vec<bool>, BloomError> {
        match &self.0.state.read().backend {
            Backend::User(f) => Ok(f.mexists(items)),
            Backend::Kernel(k) => items.into_iter().map(|item| k.exists(item)).collect(),
            Backend::RedisBloom(c) => Ok(items.into_iter().map(|item| c.contains(item)).collect()),
            Backend::Gone => Err(BloomError::NotFound),
        }
    }

    /// BF.CARD.
    pub fn card(&self) -> u64 {
        match &self.0.state.read().backend {
            Backend::User(f) => f.card(),
            Backend::Kernel(k) => k.entries(),
            Backend::RedisBloom(c) => c.size,
            Backend::Gone => 0,
        }
    }

    /// BF.INFO.
    pub fn info(&self) -> KeyFilterInfo {
        match &self.0.state.read().backend {
            Backend::User(f) => KeyFilterInfo {
                bloom: f.info(),
                kernel: None,
            },
            Backend::Kernel(k) => KeyFilterInfo {
                bloom: BloomInfo {
                    capacity: self.0.spec.config.capacity,
                    size: k.size_bytes(),
                    own_bytes: k.size_bytes(),
                    filters: 1,
                    items: k.entries(),
                    expansion: None,
                },
                kernel: Some(k.info()),
            },
            Backend::RedisBloom(c) => KeyFilterInfo {
                bloom: BloomInfo {
                    capacity: c.capacity(),
                    size: c.size_bytes(),
                    own_bytes: c.size_bytes(),
                    filters: c.links.len() as u64,
                    items: c.size,
                    expansion: (!c.nonscaling()).then_some(c.growth as u64),
                },
                kernel: None,
            },
            Backend::Gone => KeyFilterInfo {
                bloom: BloomInfo {
                    capacity: 0,
                    size: 0,
                    own_bytes: 0,
                    filters: 0,
                    items: 0,
                    expansion: None,
                },
                kernel: None,
            },
        }
    }

    /// Bytes of the filter's files (or kernel bit array).
    pub fn size_bytes(&self) -> usize {
        self.info().bloom.own_bytes as usize
    }

    /// BF.DEBUG's lines, RedisBloom's format. A kernel filter is one
    /// NONSCALING link of its capacity and error, as RedisBloom's would be.
    pub fn debug_lines(&self) -> Vec<String> {
        match &self.0.state.read().backend {
            Backend::User(f) => f.debug_lines(),
            Backend::RedisBloom(c) => c.debug_lines(),
            Backend::Kernel(k) => {
                let config = self.0.spec.config;
                let shape =
                    LinkShape::of(config.capacity, config.error_rate).unwrap_or(LinkShape {
                        bytes: 0,
                        hashes: 0,
                    });
                vec![
                    format!("size:{}", k.entries()),
                    debug_link_line(
                        shape,
                        shape.bits(),
                        64,
                        config.capacity,
                        k.entries(),
                        config.error_rate,
                    ),
                ]
            }
            Backend::Gone => Vec::new(),
        }
    }

    /// BF.SCANDUMP step.
    pub fn scandump(&self, cursor: i64) -> Result<(i64, Vec<u8>), BloomError> {
        match &self.0.state.read().backend {
            Backend::User(f) => Ok(f.scandump(cursor)),
            Backend::Kernel(_) => Err(BloomError::KernelNoDump),
            Backend::RedisBloom(c) => Ok(c.scandump(cursor)),
            Backend::Gone => Err(BloomError::NotFound),
        }
    }

    /// BF.LOADCHUNK data step. While replaying into a reopened filter the data is
    /// already in its file, and writing it again could clear later adds: skipped.
    pub fn load_chunk(&self, cursor: i64, data: &[u8], replaying: bool) -> Result<(), BloomError> {
        let mut state = self.0.state.write();
        if replaying && state.reopened {
            return Ok(());
        }
        match &mut state.backend {
            Backend::User(f) => f.load_chunk(cursor, data),
            Backend::Kernel(_) => Err(BloomError::KernelNoDump),
            Backend::RedisBloom(c) => c.load_chunk(cursor, data),
            Backend::Gone => Err(BloomError::NotFound),
        }
    }

    /// Makes adds so far durable: msync + checkpoint, or fsync of the side log.
    /// A deferred user filter is written to its files first (under the write lock:
    /// its memory moves to the file mapping).
    pub fn flush(&self, checkpoint: LogPosition) -> Result<(), BloomError> {
        let state = self.0.state.upgradable_read();
        // The item log first, so a flushed count never exceeds its entries.
        if let Some(log) = &state.items {
            log.sync()?;
        }
        if matches!(&state.backend, Backend::User(f) if !f.is_on_disk()) {
            let mut state = RwLockUpgradableReadGuard::upgrade(state);
            let Backend::User(f) = &mut state.backend else {
                unreachable!("checked above under the same lock")
            };
            f.materialize()?;
            return f.flush(checkpoint);
        }
        match &state.backend {
            Backend::User(f) => f.flush(checkpoint),
            Backend::Kernel(k) => k.sync(),
            Backend::RedisBloom(_) | Backend::Gone => Ok(()),
        }
    }

    /// COPY: an independent filter with the same bits under a new id (user
    /// backend only; a kernel map cannot be copied without its items' order of
    /// pins, so COPY answers an error for kernel filters).
    pub fn duplicate(&self) -> Result<(BloomValue, Binding), BloomError> {
        let store = self.0.store.clone();
        let state = self.0.state.read();
        let f = match &state.backend {
            Backend::User(f) => f,
            Backend::RedisBloom(_) => {
                return Err(BloomError::BadBackend(
                    "COPY of a Bloom filter imported from RedisBloom is not supported",
                ))
            }
            _ => {
                return Err(BloomError::BadBackend(
                    "COPY of a kernel-backed Bloom filter is not supported",
                ))
            }
        };
        let id = store.allocate_id();
        let copy = f.copy_files(id)?;
        let items = match &state.items {
            Some(log) => Some(log.copy_to(store.dir(), id)?),
            None => None,
        };
        let binding = Binding {
            id,
            base: copy.card(),
            spec: self.0.spec,
            pin: None,
        };
        let cell = Cell {
            id,
            spec: self.0.spec,
            store: store.clone(),
            state: RwLock::new(State {
                backend: Backend::User(copy),
                replay_seen: 0,
                durable_items: 0,
                items,
                reopened: false,
                unusable: None,
            }),
        };
        let cell = Arc::new(cell);
        store.live.lock().insert(id, Arc::downgrade(&cell));
        Ok((BloomValue(cell), binding))
    }

    /// The filter as RedisBloom's `MBbloom--` value. An imported filter is
    /// itself. BlinkDB's own filters export as RedisBloom links of their
    /// configuration and sizes (`RedisBloomChain::shaped`), each link's bits
    /// set by exactly the items that went into the source link, with
    /// RedisBloom's rule, from the RedisBloom pairs a user filter's item log
    /// keeps. Without them (a kernel filter, an incomplete or pre-pair item
    /// log, or a filter that answered "present" to an add) the export is
    /// saturated: every bit set, no false negative but every probe positive
    /// (logged; docs/rdb-format.md).
    pub fn to_redisbloom(&self) -> Result<RedisBloomChain, BloomError> {
        let unlimited = BloomLimits {
            max_memory: u64::MAX,
        };
        let state = self.0.state.read();
        let (config, link_items, items) = match &state.backend {
            Backend::RedisBloom(c) => return Ok((**c).clone()),
            Backend::User(f) => {
                let items = match &state.items {
                    Some(log) => log.pairs(f.card()).unwrap_or_else(|e| {
                        tracing::warn!(id = self.0.id, "item log unreadable for an export: {e}");
                        LoggedPairs::Missing("its item log could not be read")
                    }),
                    None => LoggedPairs::Missing("it has no item log"),
                };
                (f.config(), f.link_items(), items)
            }
            // A digest filter's side log holds xxh3 digests, not items; a
            // RAW one holds its items, but not those an add found "present"
            // (a false positive of the kernel's bits), whose RedisBloom bits
            // would then be missing.
            Backend::Kernel(k) => (
                self.0.spec.config,
                vec![k.entries()],
                LoggedPairs::Missing(
                    "a kernel filter's side log lacks its items (digests) or those an add found present",
                ),
            ),
            Backend::Gone => return Err(BloomError::NotFound),
        };
        let mut chain = RedisBloomChain::shaped(&config, &link_items, &unlimited)?;
        // Link i holds the source's items from the sum of the counts before it.
        let ends: Vec<u64> = link_items
            .iter()
            .scan(0u64, |end, items| {
                *end += items;
                Some(*end)
            })
            .collect();
        let mut n = 0u64;
        let mut link = 0usize;
        let mut set = |chain: &mut RedisBloomChain, pair| {
            while link + 1 < ends.len() && n >= ends[link] {
                link += 1;
            }
            chain.set_item(link, pair);
            n += 1;
        };
        let why = match items {
            LoggedPairs::Complete(None) => None,
            LoggedPairs::Complete(Some(snapshot)) => snapshot
                .for_each_chunk(0, EXPORT_CHUNK, |entries| {
                    for entry in entries {
                        let pair = LoggedItem::decode(entry)
                            .and_then(|l| l.pair)
                            .ok_or(BloomError::BadBackend("an item log entry without its pair"))?;
                        set(&mut chain, pair);
                    }
                    Ok(())
                })
                .err()
                .map(|e| {
                    tracing::warn!(id = self.0.id, "item log unreadable for an export: {e}");
                    "its item log could not be read"
                }),
            LoggedPairs::Missing(why) => Some(why),
        };
        if let Some(why) = why {
            tracing::warn!(
                id = self.0.id,
                "Bloom filter exported to RedisBloom's format saturated (every bit set): {why}"
            );
            chain.saturate();
        }
        Ok(chain)
    }

    /// The binding record naming this filter, with `base` items already counted.
    pub fn binding(&self, base: u64) -> Binding {
        let pin = match &self.0.state.read().backend {
            Backend::Kernel(k) => Some(k.pin()),
            _ => None,
        };
        Binding {
            id: self.0.id,
            base,
            spec: self.0.spec,
            pin,
        }
    }

    /// RENAME/MOVE: the filter now belongs to `key` in `db`. A kernel filter's
    /// pin moves to that key's path (same map); user files are named by id.
    pub fn relocate(&self, db: usize, key: &[u8]) -> Result<(), BloomError> {
        let mut state = self.0.state.write();
        let Backend::Kernel(k) = &mut state.backend else {
            return Ok(());
        };
        let to = PinLocation::for_key(self.0.store.pin_root(), db as u32, key);
        k.relocate(to)
    }

    /// After replay: opens a kernel filter's pin where its key ended up
    /// (rebuilding it from the side log if gone). Returns whether it was rebuilt.
    /// Also reports a user filter whose files could not be reopened, now that
    /// it is known to have survived the log.
    pub(crate) fn attach(&self) -> Result<bool, BloomError> {
        let state = &mut *self.0.state.write();
        if let Some(Unusable { reason, loaded }) = state.unusable.take() {
            let what = if loaded {
                "loaded bloom filter unusable; rebuilt from the log"
            } else {
                "bloom filter files unusable; rebuilt from the log"
            };
            tracing::warn!(id = self.0.id, ?reason, "{what}");
            return Ok(true);
        }
        match &mut state.backend {
            Backend::Kernel(k) => k.attach(),
            _ => Ok(false),
        }
    }
}

/// Item-log entries read at a time by a RedisBloom export.
const EXPORT_CHUNK: usize = 4096;

/// Kernel values per `BLINKDB.BFVALUES` record written by a rewrite.
const VALUES_PER_RECORD: usize = 1024;

/// What an AOF rewrite writes for one filter key, without filter bits: user
/// filters are flushed and bound with their current count; kernel filters (and
/// user filters with a complete item log) are bound from zero and followed by
/// every stored value. Taken under the shard lock; with `hold_open`, a large
/// side log is read later by [`write`](Self::write), so the lock is not held
/// for a read proportional to the filter's item count.
pub struct FilterRewrite {
    binding: Vec<Vec<u8>>,
    values: Option<ValuesSnapshot>,
}

pub fn rewrite_snapshot(
    key: &[u8],
    v: &BloomValue,
    hold_open: bool,
) -> Result<FilterRewrite, BloomError> {
    if let Err(e) = v.flush(LogPosition::default()) {
        tracing::warn!(id = v.id(), "flush before rewrite failed: {e}");
    }
    let bound = v.binding(0);
    let state = v.0.state.read();
    let (binding, values) = match &state.backend {
        Backend::RedisBloom(c) => {
            // No binding: the filter is its RDB value, which redis-server (with
            // RedisBloom) replays as well.
            let payload = crate::rdb::bloom_payload(c);
            let record = vec![b"RESTORE".to_vec(), key.to_vec(), b"0".to_vec(), payload];
            return Ok(FilterRewrite {
                binding: record,
                values: None,
            });
        }
        Backend::Kernel(k) => (bound, Some(k.snapshot(hold_open)?)),
        Backend::User(f) => {
            let items = match &state.items {
                Some(log) if log.is_complete() => log.snapshot(hold_open).unwrap_or_else(|e| {
                    tracing::warn!(id = v.id(), "item log unreadable at rewrite: {e}");
                    None
                }),
                _ => None,
            };
            match items {
                Some(values) => (bound, Some(values)),
                // No item list (BF.LOADCHUNK, or files from before item logs):
                // the files alone carry the items bound so far.
                None => (
                    Binding {
                        base: f.card(),
                        ..bound
                    },
                    None,
                ),
            }
        }
        Backend::Gone => {
            return Ok(FilterRewrite {
                binding: Vec::new(),
                values: None,
            })
        }
    };
    Ok(FilterRewrite {
        binding: binding.encode(key),
        values,
    })
}

impl FilterRewrite {
    /// Whether a file descriptor stays open until [`write`](Self::write).
    pub fn holds_file(&self) -> bool {
        self.values.as_ref().is_some_and(ValuesSnapshot::holds_file)
    }

    /// Emits the binding record, then the values `VALUES_PER_RECORD` a record.
    pub fn write(&self, key: &[u8], mut emit: impl FnMut(&[&[u8]])) -> Result<(), BloomError> {
        if self.binding.is_empty() {
            return Ok(());
        }
        let binding: Vec<&[u8]> = self.binding.iter().map(|a| &a[..]).collect();
        emit(&binding);
        let Some(values) = &self.values else {
            return Ok(());
        };
        let command = VALUES_COMMAND.to_ascii_uppercase();
        values.for_each_chunk(0, VALUES_PER_RECORD, |chunk| {
            let mut record: Vec<&[u8]> = Vec::with_capacity(chunk.len() + 2);
            record.push(command.as_bytes());
            record.push(key);
            record.extend_from_slice(chunk);
            emit(&record);
            Ok(())
        })
    }
}
