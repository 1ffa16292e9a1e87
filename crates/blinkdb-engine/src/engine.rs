//! The engine: numbered databases, atomic multi-key transactions, and the
//! hook through which every write reaches the log.

use crate::aof::BlobRef;
use crate::bfkeys::BloomStore;
use crate::clock::now_ms;
use crate::existence::ExistenceFilter;
use crate::filter::LogPosition;
use crate::keyspace::access::{self, AccessPolicy};
use crate::keyspace::{key_hash, Db, Entry, Origin, Shard, Value, SHARDS};
use crate::notify::{Observer, KEY_MISS, NEW};
use crate::persist::Log;
use crate::rewrite::RewriteState;
use parking_lot::{Mutex, RwLockWriteGuard};
use smallvec::SmallVec;
use std::borrow::Cow;
use std::cell::Cell;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

thread_local! {
    /// Set while a script's `redis.set_repl` leaves its writes out of the AOF.
    static UNLOGGED: Cell<bool> = const { Cell::new(false) };
}

/// Every shard's entries, moved out of the keyspace by `take_dataset`.
pub struct TakenDataset(Vec<Shard>);

impl TakenDataset {
    pub fn keys(&self) -> u64 {
        self.0.iter().map(|s| s.len() as u64).sum()
    }
}

/// Runs `f` with the writes it makes on this thread kept out of the log
/// (a script after `redis.set_repl(redis.REPL_NONE)`): they apply in memory
/// only, and a restart does not bring them back, as with Redis.
pub fn unlogged<R>(f: impl FnOnce() -> R) -> R {
    let was = UNLOGGED.with(|u| u.replace(true));
    let r = f();
    UNLOGGED.with(|u| u.set(was));
    r
}

#[derive(Debug, Clone)]
pub struct EngineOptions {
    pub databases: usize,
    /// The server's `dir`: Bloom filter files go to `<data_dir>/bloom/`.
    pub data_dir: PathBuf,
    /// `bpf-pin-root`: where kernel filters are pinned.
    pub bpf_pin_root: PathBuf,
    /// `existence-filter-size` in bytes; 0 disables the key-existence filter.
    pub existence_filter_size: u64,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            databases: 16,
            data_dir: PathBuf::from("./data"),
            bpf_pin_root: PathBuf::from(crate::kernel::DEFAULT_PIN_ROOT),
            existence_filter_size: 0,
        }
    }
}

#[derive(Default)]
pub struct EngineStats {
    pub expired_keys: AtomicU64,
    /// Hash fields removed on their TTL (INFO's `expired_subkeys`).
    pub expired_subkeys: AtomicU64,
    pub evicted_keys: AtomicU64,
    /// Records written for changes (INFO's rdb_changes_since_last_save
    /// counts from this; Redis counts changed elements, BlinkDB commands).
    pub changes: AtomicU64,
}

/// Where the replication stream taps the writes: every record the AOF gets
/// (and the same records with the AOF off), called under the shard locks of
/// the write it records, so its order agrees with every shard's order.
pub trait WriteFeed: Send + Sync {
    fn feed(&self, db: usize, args: &[&[u8]]);
}

pub struct Engine {
    dbs: Box<[Db]>,
    log: OnceLock<Arc<Log>>,
    /// CONFIG SET appendonly no: writes are no longer logged (the log stays
    /// open, since the large values already in it are read from there),
    /// until an AOF rewrite turns it on again (`rewrite.rs`).
    pub(crate) log_paused: AtomicBool,
    /// The replication stream's tap (set once by the server).
    feed: OnceLock<Arc<dyn WriteFeed>>,
    /// The log being replayed, before `log` is installed: replayed commands
    /// that read a large value (APPEND, PFADD...) read it from here.
    replay_log: OnceLock<Arc<Log>>,
    loading: AtomicBool,
    expire_cursor: Mutex<usize>,
    pub stats: EngineStats,
    /// The rewrite in progress, if any (see rewrite.rs).
    pub(crate) rewrite: Mutex<Option<RewriteState>>,
    /// FLUSHALLs so far that aborted BGSAVEs (`abort_bgsave`), changed under
    /// `rewrite`'s lock: a BGSAVE accepted before one but whose thread had
    /// not yet begun its pass sees the count move and ends aborted.
    pub(crate) bgsave_aborts: AtomicU64,
    /// Non-zero while a rewrite snapshots shards: writers copy a key into the
    /// new base before their first change to it, unless its shard is copied.
    pub(crate) rewrite_epoch: AtomicU64,
    /// Writers' copies of keys they are about to change, for the rewrite thread
    /// to put into the base (see `preimage_before_write`).
    pub(crate) rewrite_preimages: Mutex<Vec<crate::rewrite::Preimage>>,
    /// Records an AOF rewrite puts at the start of the new base, for state
    /// the server keeps outside the keyspace (Functions libraries).
    pub(crate) rewrite_preamble: OnceLock<RewritePreamble>,
    /// Filters owned by BF.* keys.
    pub blooms: Arc<BloomStore>,
    /// Count-min sketches' files (sketch_files.rs).
    pub sketch_files: crate::sketch_files::SketchFiles,
    pub existence: Option<ExistenceFilter>,
    /// The file being replayed while loading (an incr seq, 0 for the base):
    /// the segment label of entries created before the log is installed.
    replay_seg: AtomicU64,
    /// Held by a rewrite for its whole run and by a cache-mode eviction, so
    /// that neither sees the other's half-switched files.
    pub(crate) maintenance: Mutex<()>,
    /// Where keyspace events and changed keys are reported (notify.rs).
    pub(crate) observer: OnceLock<Arc<dyn Observer>>,
    /// What the observer wants reported (notify.rs); 0: nothing.
    pub(crate) interest: AtomicU32,
    /// Clients blocked on keys (BLPOP...), counted by the server: while there
    /// are any, writes note the keys they make ready (ready.rs).
    pub blocked: AtomicUsize,
    /// Until this time (Unix ms) an expired key read by a command reads as
    /// absent but stays, as during Redis's CLIENT PAUSE: expiring it would
    /// be a write.
    expiry_held_until: AtomicU64,
    /// A replica's keyspace: keys expire only by its master's DEL; reads
    /// hide logically expired keys without deleting them (as Redis's).
    replica: AtomicBool,
    /// What the keys' access clocks hold, LRU time or LFU counter
    /// (keyspace/access.rs), as `maxmemory-policy` says.
    pub access: AccessPolicy,
}

/// Locks held for one command: every shard it touches, taken in a fixed
/// order so that concurrent multi-key commands cannot deadlock.
pub struct Tx<'a> {
    engine: &'a Engine,
    guards: SmallVec<[(usize, usize, RwLockWriteGuard<'a, Shard>); 2]>,
    now: u64,
    lsn: u64,
    expired: u64,
    /// The running rewrite's epoch when the locks were taken (0: none).
    rewrite_epoch: u64,
    /// Segments of the first and the last record this transaction logged
    /// (u64::MAX: none yet); fresh values are labeled from them.
    first_seg: u64,
    last_seg: u64,
    /// Whether this transaction changed the keyspace or logged: from then on
    /// a panic would leave its command half-applied (see `Drop for Tx`).
    mutated: bool,
    /// The observer's interest when the locks were taken (notify.rs).
    interest: u32,
    /// The client running the command (0: none), for NOLOOP tracking.
    client: u64,
    /// Changes made now are not signalled to WATCH and tracking (`unsignaled`).
    quiet: bool,
}

/// Gives the commands that rebuild state kept outside the keyspace; called
/// by an AOF rewrite once every write is held out, right as the new base
/// starts (so a change logged after the rewrite began is not in it).
pub type RewritePreamble = Box<dyn Fn() -> Vec<Vec<Vec<u8>>> + Send + Sync>;

impl Engine {
    /// Sets the rewrite preamble (once; later calls are ignored).
    pub fn set_rewrite_preamble(&self, f: RewritePreamble) {
        let _ = self.rewrite_preamble.set(f);
    }

    pub fn new(opts: EngineOptions) -> Self {
        Engine {
            dbs: (0..opts.databases.max(1)).map(|_| Db::default()).collect(),
            log: OnceLock::new(),
            log_paused: AtomicBool::new(false),
            feed: OnceLock::new(),
            replay_log: OnceLock::new(),
            loading: AtomicBool::new(false),
            expire_cursor: Mutex::new(0),
            stats: EngineStats::default(),
            rewrite: Mutex::new(None),
            rewrite_epoch: AtomicU64::new(0),
            rewrite_preimages: Mutex::new(Vec::new()),
            rewrite_preamble: OnceLock::new(),
            blooms: Arc::new(BloomStore::new(&opts.data_dir, &opts.bpf_pin_root)),
            sketch_files: crate::sketch_files::SketchFiles::new(&opts.data_dir),
            existence: (opts.existence_filter_size > 0)
                .then(|| ExistenceFilter::open(&opts.data_dir, opts.existence_filter_size))
                .and_then(|r| {
                    r.inspect_err(|e| tracing::warn!("existence filter disabled: {e}"))
                        .ok()
                }),
            replay_seg: AtomicU64::new(0),
            maintenance: Mutex::new(()),
            bgsave_aborts: AtomicU64::new(0),
            observer: OnceLock::new(),
            interest: AtomicU32::new(0),
            blocked: AtomicUsize::new(0),
            expiry_held_until: AtomicU64::new(0),
            replica: AtomicBool::new(false),
            access: AccessPolicy::default(),
        }
    }

    /// Refills the existence filter from the keyspace (AOF rewrite), dropping
    /// the bits of deleted keys.
    pub fn rebuild_existence_filter(&self) -> Result<(), crate::filter::FilterError> {
        let Some(filter) = &self.existence else {
            return Ok(());
        };
        filter.rebuild(|insert| {
            for db in self.dbs.iter() {
                for shard in db.shards() {
                    for (k, _) in shard.read().iter() {
                        insert(k);
                    }
                }
            }
        })
    }

    /// Makes every Bloom filter's adds durable and records `checkpoint` in its
    /// files; call every second and at shutdown.
    pub fn flush_filters(&self, checkpoint: LogPosition) -> Result<(), crate::bloom::BloomError> {
        self.blooms.flush_all(checkpoint)
    }

    pub fn databases(&self) -> usize {
        self.dbs.len()
    }

    pub fn db(&self, index: usize) -> &Db {
        &self.dbs[index]
    }

    /// Installs the replication stream's tap (once; later calls are ignored).
    pub fn set_feed(&self, feed: Arc<dyn WriteFeed>) {
        let _ = self.feed.set(feed);
    }

    /// A key found expired and removed: replicas get its DEL, as Redis's
    /// propagateDeletion sends it (a replica never expires keys itself).
    #[inline]
    pub(crate) fn feed_expired(&self, db: usize, key: &[u8]) {
        if let Some(feed) = self.feed.get() {
            feed.feed(db, &[b"DEL", key]);
        }
    }

    /// A command for the replicas only, not the AOF (PUBLISH, as Redis's
    /// forceCommandPropagation with PROPAGATE_REPL).
    pub fn feed_replicas(&self, db: usize, args: &[&[u8]]) {
        if UNLOGGED.with(Cell::get) {
            return;
        }
        if let Some(feed) = self.feed.get() {
            feed.feed(db, args);
        }
    }

    /// Installs the log once loading is over; writes before that (replayed
    /// ones) are not logged again.
    pub fn set_log(&self, log: Arc<Log>) {
        let _ = self.log.set(log);
    }

    /// Lets the commands replayed from `log` read the large values it holds
    /// (nothing they write is logged until `set_log`).
    pub fn set_replay_log(&self, log: Arc<Log>) {
        let _ = self.replay_log.set(log);
    }

    /// The log large values are read from: the live one, or the one loading.
    fn blob_log(&self) -> Option<&Arc<Log>> {
        self.log.get().or_else(|| self.replay_log.get())
    }

    pub fn log_handle(&self) -> Option<&Arc<Log>> {
        self.log.get()
    }

    /// Whether writes are logged: a log is installed and not paused.
    pub fn logging(&self) -> bool {
        self.log.get().is_some() && !self.log_paused.load(Ordering::Acquire)
    }

    /// Stops or resumes logging writes (CONFIG SET appendonly). Resuming
    /// is the AOF rewrite's: its base holds what was not logged meanwhile.
    pub fn pause_logging(&self, paused: bool) {
        self.log_paused.store(paused, Ordering::Release);
    }

    /// Tells the engine which file the records replayed next come from, so
    /// entries get that file's segment label.
    pub fn set_replay_file(&self, file: crate::aof::FileId) {
        let seg = if file.is_base() { 0 } else { file.seq() };
        self.replay_seg.store(seg, Ordering::Release);
    }

    /// The segment a record logged from now on lands in, or a later one.
    fn current_seg(&self) -> u64 {
        match self.log.get() {
            Some(log) => log.aof.append_seq(),
            None => self.replay_seg.load(Ordering::Acquire),
        }
    }

    /// A large value's bytes, read back from the log.
    pub fn read_blob(&self, r: &BlobRef) -> Result<bytes::Bytes, String> {
        let log = self.blob_log().ok_or("large value without a log")?;
        log.read_blob(r).map_err(|e| e.to_string())
    }

    /// The bytes of a string value, reading a blob back from the log.
    pub fn string_bytes<'v>(&self, v: &'v Value) -> Result<Cow<'v, [u8]>, String> {
        match v {
            Value::Str(s, _) => Ok(Cow::Borrowed(s)),
            Value::Blob(r, _) => {
                let log = self.blob_log().ok_or("large value without a log")?;
                log.read_blob(r)
                    .map(|b| Cow::Owned(b.to_vec()))
                    .map_err(|e| {
                        tracing::error!("Reading a large value failed: {e}");
                        format!("ERR reading a large value from the log failed: {e}")
                    })
            }
            _ => Err("WRONGTYPE Operation against a key holding the wrong kind of value".into()),
        }
    }

    /// The open file of a large value, found outside any shard lock; the reply
    /// reads the value from it. `Ok(None)`: its file was dropped meanwhile (a
    /// rewrite or an eviction finished between the lookup and this); look the key
    /// up again.
    pub fn blob_source(&self, r: &BlobRef) -> Result<Option<crate::aof::BlobSource>, String> {
        let log = self.blob_log().ok_or("large value without a log")?;
        match log.blob_source(r) {
            Ok(src) => Ok(Some(src)),
            Err(crate::aof::AofError::FileGone(_)) => Ok(None),
            Err(e) => Err(blob_read_error(&e)),
        }
    }

    /// While loading, nothing expires (keys are kept until the load ends, as
    /// in Redis, so replayed commands see the state they saw originally).
    pub fn set_loading(&self, loading: bool) {
        self.loading.store(loading, Ordering::Release);
    }

    pub fn is_loading(&self) -> bool {
        self.loading.load(Ordering::Acquire)
    }

    /// The clock used for expiry decisions (0 while loading: never expire).
    #[inline]
    pub fn now(&self) -> u64 {
        if self.is_loading() {
            0
        } else {
            now_ms()
        }
    }

    /// Reads one key under a shared lock. An expired key reads as absent
    /// and is deleted on the way (lazy expiry, as Redis does on access); a
    /// miss is reported as a `keymiss` event.
    #[inline]
    pub fn read<R>(&self, db: usize, key: &[u8], f: impl FnOnce(Option<&Entry>) -> R) -> R {
        self.read_key(db, key, true, f)
    }

    /// `read` without the `keymiss` event and leaving the access clock as
    /// it is (MEMORY USAGE, DEBUG OBJECT: Redis's dictFind or LOOKUP_NONOTIFY
    /// with LOOKUP_NOTOUCH lookups).
    pub fn peek<R>(&self, db: usize, key: &[u8], f: impl FnOnce(Option<&Entry>) -> R) -> R {
        access::without_touch(|| self.read_key(db, key, false, f))
    }

    /// The key table's bytes per key in `key`'s shard (MEMORY USAGE).
    pub fn slot_share(&self, db: usize, key: &[u8]) -> usize {
        self.dbs[db].shard(Db::shard_index(key)).read().slot_share()
    }

    /// Runs `f` on the live entry at `key` under a shared lock, touching its
    /// access clock as a write's lookup does. None, with nothing done, if the
    /// key is absent or expired: for a write command that often finds nothing
    /// to change (PFADD of elements a sketch already holds), which then falls
    /// back to `write`, where expiry is handled, reported and propagated.
    /// No `keymiss` event: Redis's lookupKeyWrite sends none.
    #[inline]
    pub fn read_live<R>(&self, db: usize, key: &[u8], f: impl FnOnce(&Entry) -> R) -> Option<R> {
        let now = self.now();
        let hash = key_hash(key);
        let shard = self.dbs[db].shard(Db::shard_of(hash)).read();
        let entry = shard.get_hashed(key, hash).filter(|e| !e.is_expired(now))?;
        self.accessed(entry, now);
        Some(f(entry))
    }

    /// Holds lazy expiry on reads until `until_ms` (0: from now on, expired
    /// keys read are deleted again).
    pub fn hold_expiry_until(&self, until_ms: u64) {
        self.expiry_held_until.store(until_ms, Ordering::Relaxed);
    }

    /// Replica mode: no active expiry, and reads hide expired keys without
    /// deleting them (the master's DEL removes them).
    pub fn set_replica(&self, on: bool) {
        self.replica.store(on, Ordering::Release);
    }

    /// The clock by which a command removes a hash field it finds past its
    /// TTL (Redis 8.0's lazy field expiry): 0 where none is removed, on a
    /// replica (its master's HDELs do), while loading, and while expiry is
    /// held (CLIENT PAUSE WRITE), as for keys read.
    pub fn lazy_expiry_now(&self) -> u64 {
        let now = self.now();
        if self.replica.load(Ordering::Relaxed)
            || now < self.expiry_held_until.load(Ordering::Relaxed)
        {
            0
        } else {
            now
        }
    }

    pub fn is_replica(&self) -> bool {
        self.replica.load(Ordering::Acquire)
    }

    /// Updates `entry`'s access clock for a lookup by a command (Redis's
    /// lookupKey), unless lookups run under `access::without_touch`.
    /// `now` is the command's clock, 0 while loading.
    #[inline]
    pub(crate) fn accessed(&self, entry: &Entry, now: u64) {
        if access::touching() {
            let now = if now != 0 { now } else { now_ms() };
            self.access.touch(entry.clock(), now);
        }
    }

    #[inline]
    fn read_key<R>(
        &self,
        db: usize,
        key: &[u8],
        report_miss: bool,
        f: impl FnOnce(Option<&Entry>) -> R,
    ) -> R {
        if let Some(filter) = &self.existence {
            if !filter.may_contain(key) {
                if report_miss {
                    self.emit(self.interest(), KEY_MISS, "keymiss", db, key);
                }
                return f(None);
            }
        }
        let now = self.now();
        let hash = key_hash(key);
        let lock = self.dbs[db].shard(Db::shard_of(hash));
        {
            let shard = lock.read();
            match shard.get_hashed(key, hash) {
                Some(e) if e.is_expired(now) => {
                    if now < self.expiry_held_until.load(Ordering::Relaxed)
                        || self.replica.load(Ordering::Relaxed)
                    {
                        drop(shard);
                        if report_miss {
                            self.emit(self.interest(), KEY_MISS, "keymiss", db, key);
                        }
                        return f(None);
                    }
                }
                None => {
                    drop(shard);
                    if report_miss {
                        self.emit(self.interest(), KEY_MISS, "keymiss", db, key);
                    }
                    return f(None);
                }
                Some(e) => {
                    self.accessed(e, now);
                    return f(Some(e));
                }
            }
        }
        let mut shard = lock.write();
        let interest = self.interest();
        let (entry, expired) = shard.get_mut(key, hash, now);
        if expired {
            self.stats.expired_keys.fetch_add(1, Ordering::Relaxed);
            self.report_expired(interest, db, key);
            self.feed_expired(db, key);
        } else if let Some(e) = entry {
            // Written again between the two locks.
            self.accessed(e, now);
            return f(Some(&*e));
        }
        if report_miss {
            self.emit(interest, KEY_MISS, "keymiss", db, key);
        }
        f(None)
    }

    /// Runs `f` with exclusive access to the shards of all `keys`, atomically.
    /// Returns `f`'s result and the log position of the last write it logged
    /// (0 if none).
    #[inline]
    pub fn write<R>(&self, keys: &[(usize, &[u8])], f: impl FnOnce(&mut Tx) -> R) -> (R, u64) {
        let mut order: SmallVec<[(usize, usize); 4]> = keys
            .iter()
            .map(|(db, k)| (*db, Db::shard_index(k)))
            .collect();
        order.sort_unstable();
        order.dedup();
        let guards: SmallVec<[_; 2]> = order
            .into_iter()
            .map(|(db, s)| (db, s, self.dbs[db].shard(s).write()))
            .collect();
        let mut tx = Tx {
            engine: self,
            guards,
            now: self.now(),
            lsn: 0,
            expired: 0,
            rewrite_epoch: self.rewrite_epoch.load(Ordering::Acquire),
            first_seg: u64::MAX,
            last_seg: u64::MAX,
            mutated: false,
            interest: self.interest(),
            client: 0,
            quiet: false,
        };
        let r = f(&mut tx);
        if tx.expired > 0 {
            self.stats
                .expired_keys
                .fetch_add(tx.expired, Ordering::Relaxed);
        }
        (r, tx.lsn)
    }

    /// `write` for a single key.
    #[inline]
    pub fn write1<R>(&self, db: usize, key: &[u8], f: impl FnOnce(&mut Tx) -> R) -> (R, u64) {
        self.write(&[(db, key)], f)
    }

    /// Logs a command; returns its position (0 without a log) and where
    /// its large arguments lie.
    pub fn log(&self, db: usize, args: &[&[u8]]) -> (u64, Vec<BlobRef>) {
        if UNLOGGED.with(Cell::get) {
            return (0, Vec::new());
        }
        if let Some(feed) = self.feed.get() {
            feed.feed(db, args);
        }
        let Some(log) = self
            .log
            .get()
            .filter(|_| !self.log_paused.load(Ordering::Acquire))
        else {
            return (0, Vec::new());
        };
        match log.append(db, args) {
            Ok((lsn, refs)) => (lsn.0, refs),
            Err(e) => {
                // The write stays applied in memory; the log reports its
                // failure through write_status, which refuses later writes.
                tracing::error!("Appending to the AOF failed: {e}");
                (0, Vec::new())
            }
        }
    }

    /// Sizes `db`'s tables for `keys` more keys spread over its shards (an
    /// RDB's RESIZEDB hint), so that loading them grows no table step by step.
    pub fn reserve_keys(&self, db: usize, keys: usize) {
        let each = keys / SHARDS + keys / SHARDS / 8;
        if each == 0 {
            return;
        }
        for shard in self.dbs[db].shards() {
            shard.write().reserve(each);
        }
    }

    /// Removes every key of `db` (all dbs when None), atomically, logging
    /// `cmd`. With `lazy`, the memory is released on a background thread.
    /// `by` is the client that asked (tracking's flush invalidation).
    pub fn flush(&self, db: Option<usize>, cmd: &[&[u8]], lazy: bool, by: u64) -> u64 {
        let dbs: Vec<usize> = match db {
            Some(d) => vec![d],
            None => (0..self.dbs.len()).collect(),
        };
        let mut guards: Vec<_> = dbs
            .iter()
            .flat_map(|d| self.dbs[*d].shards().iter().map(move |s| (*d, s.write())))
            .collect();
        let epoch = self.rewrite_epoch.load(Ordering::Acquire);
        if epoch != 0 {
            for (d, g) in guards.iter_mut() {
                self.snapshot_before_write(*d, g, epoch);
            }
        }
        let mut old: Vec<Shard> = Vec::new();
        // Redis's dirty counter (rdb_changes_since_last_save) counts the keys removed.
        let removed: usize = guards.iter().map(|(_, g)| g.len()).sum();
        self.stats
            .changes
            .fetch_add(removed as u64, Ordering::Relaxed);
        for (_, g) in guards.iter_mut() {
            if lazy {
                old.push(g.take_entries());
            } else {
                g.clear();
            }
        }
        let (lsn, _) = self.log(db.unwrap_or(0), cmd);
        self.report_flush(by);
        drop(guards);
        if !old.is_empty() {
            let keys = old.iter().map(|s| s.len() as u64).sum();
            crate::types::free_later_objects(old, keys);
        }
        lsn
    }

    /// SWAPDB: exchanges the contents of two databases atomically, logging
    /// `cmd`. Watchers stay with their database number.
    pub fn swap_dbs(&self, a: usize, b: usize, cmd: &[&[u8]]) -> u64 {
        if a == b {
            let (lsn, _) = self.log(a, cmd);
            return lsn;
        }
        let (lo, hi) = (a.min(b), a.max(b));
        let mut guards: Vec<_> = [lo, hi]
            .iter()
            .flat_map(|d| self.dbs[*d].shards().iter().map(move |s| (*d, s.write())))
            .collect();
        let epoch = self.rewrite_epoch.load(Ordering::Acquire);
        if epoch != 0 {
            for (d, g) in guards.iter_mut() {
                self.snapshot_before_write(*d, g, epoch);
            }
        }
        let now = self.now();
        let (first, second) = guards.split_at_mut(SHARDS);
        for (x, y) in first.iter_mut().zip(second.iter_mut()) {
            x.1.swap_entries(&mut y.1, now);
        }
        let (lsn, _) = self.log(a, cmd);
        lsn
    }

    /// Moves every database's keys out, leaving the keyspace empty (a
    /// replica's swapdb full sync loads into it): `restore_dataset` puts
    /// them back if that load fails, `drop_dataset` frees them (on a
    /// background thread) once it succeeded. Nothing is logged: the AOF
    /// still holds the keys taken, until the load's rewrite.
    pub fn take_dataset(&self) -> TakenDataset {
        let mut guards = self.write_all_shards();
        let shards = guards.iter_mut().map(|(_, g)| g.take_entries()).collect();
        self.report_flush(0);
        TakenDataset(shards)
    }

    /// Puts back what `take_dataset` took, in place of what the keyspace
    /// holds now (freed on a background thread).
    pub fn restore_dataset(&self, taken: TakenDataset) {
        let mut guards = self.write_all_shards();
        let mut partial = Vec::with_capacity(guards.len());
        for ((_, g), saved) in guards.iter_mut().zip(taken.0) {
            partial.push(g.put_entries(saved));
        }
        self.report_flush(0);
        drop(guards);
        self.drop_dataset(TakenDataset(partial));
    }

    /// Every shard of every database write-locked, each first copied into a
    /// running rewrite's base, as before any write.
    fn write_all_shards(&self) -> Vec<(usize, RwLockWriteGuard<'_, Shard>)> {
        let mut guards: Vec<_> = (0..self.dbs.len())
            .flat_map(|d| self.dbs[d].shards().iter().map(move |s| (d, s.write())))
            .collect();
        let epoch = self.rewrite_epoch.load(Ordering::Acquire);
        if epoch != 0 {
            for (d, g) in guards.iter_mut() {
                self.snapshot_before_write(*d, g, epoch);
            }
        }
        guards
    }

    /// Frees what `take_dataset` took, on a background thread.
    pub fn drop_dataset(&self, taken: TakenDataset) {
        let keys = taken.keys();
        crate::types::free_later_objects(taken.0, keys);
    }

    /// WATCH: `flag` becomes dirty when `key` of `db` changes.
    pub fn watch(&self, db: usize, key: &[u8], flag: &Arc<crate::keyspace::WatchFlag>) {
        let now = self.now();
        self.dbs[db]
            .shard(Db::shard_index(key))
            .write()
            .watch(key, flag, now);
    }

    pub fn unwatch(&self, db: usize, key: &[u8], flag: &Arc<crate::keyspace::WatchFlag>) {
        self.dbs[db]
            .shard(Db::shard_index(key))
            .write()
            .unwatch(key, flag);
    }

    /// Whether `key`, live when `flag` watched it, has expired since.
    pub fn watched_key_expired(
        &self,
        db: usize,
        key: &[u8],
        flag: &Arc<crate::keyspace::WatchFlag>,
    ) -> bool {
        let now = self.now();
        self.dbs[db]
            .shard(Db::shard_index(key))
            .read()
            .watched_key_expired(key, flag, now)
    }

    /// One step of SCAN: visits whole shards starting at `cursor` until at
    /// least `count` entries were visited. Returns the next cursor (0: done).
    /// Whole-shard steps give Redis's guarantee: a key present for the whole
    /// scan is returned.
    pub fn scan(
        &self,
        db: usize,
        cursor: u64,
        count: usize,
        mut visit: impl FnMut(&[u8], &Entry),
    ) -> u64 {
        let now = self.now();
        let mut shard = cursor as usize;
        let mut seen = 0;
        while shard < SHARDS {
            let s = self.dbs[db].shard(shard).read();
            let mut expired = Vec::new();
            for (k, e) in s.iter() {
                if !e.is_expired(now) {
                    visit(k, e);
                } else {
                    expired.push(Box::<[u8]>::from(&k[..]));
                }
            }
            seen += s.len();
            drop(s);
            // Each expired key met is deleted, as scanGenericCommand's
            // expireIfNeeded does (replicas get one DEL each).
            for k in expired {
                self.expire_if_due(db, &k);
            }
            shard += 1;
            if seen >= count {
                break;
            }
        }
        if shard >= SHARDS {
            0
        } else {
            shard as u64
        }
    }

    /// Cluster mode: db 0 can tell its keys by hash slot; the index is built
    /// when first asked (`SlotIndex`).
    pub fn enable_slot_index(&self) {
        let ix = Arc::new(crate::keyspace::slots::SlotIndex::default());
        for s in self.dbs[0].shards() {
            s.write().enable_slot_index(ix.clone());
        }
    }

    /// db 0's slot index, built (walking db 0 once) if this is its first use.
    fn slot_index(&self) -> Option<Arc<crate::keyspace::slots::SlotIndex>> {
        let ix = self.dbs[0].shard(0).read().slot_index().cloned()?;
        if !ix.is_built() {
            ix.build(|_| {
                for s in self.dbs[0].shards() {
                    s.read().index_slots();
                }
            });
        }
        Some(ix)
    }

    /// Keys of db 0 in a cluster slot, expired ones not yet reclaimed
    /// included, as Redis counts them (None: no slot index).
    pub fn count_keys_in_slot(&self, slot: u16) -> Option<usize> {
        Some(self.slot_index()?.count(slot))
    }

    /// Up to `max` keys of db 0 in a cluster slot (None: no slot index).
    pub fn keys_in_slot(&self, slot: u16, max: usize) -> Option<Vec<Vec<u8>>> {
        Some(self.slot_index()?.keys(slot, max))
    }

    /// A random live key of `db`.
    pub fn random_key(&self, db: usize) -> Option<Box<[u8]>> {
        use rand::Rng;
        let now = self.now();
        let mut rng = rand::thread_rng();
        let start = rng.gen_range(0..SHARDS);
        for attempt in 0..SHARDS * 2 {
            let s = self.dbs[db].shard((start + attempt) % SHARDS).read();
            if s.is_empty() {
                continue;
            }
            let mut expired = Vec::new();
            for _ in 0..8 {
                if let Some((k, e)) = s.nth(rng.gen_range(0..s.len())) {
                    if !e.is_expired(now) {
                        return Some(k[..].into());
                    }
                    expired.push(Box::<[u8]>::from(&k[..]));
                }
            }
            drop(s);
            // An expired key picked is deleted, as dbRandomKey's
            // expireIfNeeded does, and the search goes on.
            for k in expired {
                self.expire_if_due(db, &k);
            }
        }
        None
    }

    /// Deletes `key` if it is past its TTL (reported and sent to replicas
    /// as a read's lazy expiry does; nothing on a replica or while expiry
    /// is held).
    fn expire_if_due(&self, db: usize, key: &[u8]) {
        self.read_key(db, key, false, |_| ());
    }

    /// How many shards `active_expire`'s cursor walks through (every
    /// database's).
    pub fn expire_positions(&self) -> usize {
        self.dbs.len() * SHARDS
    }

    /// Reclaims expired keys, visiting at most `max_shards` shards; called
    /// periodically so that expired keys do not pile up. Returns keys removed.
    /// Removes keys past their TTL from up to `max_shards` shards (at most
    /// `per_shard` each), in deadline order: returns the keys removed and the
    /// keys with a TTL it looked at (those, and per shard the first not due).
    pub fn active_expire(&self, max_shards: usize, per_shard: usize) -> (usize, usize) {
        if self.is_loading() || self.is_replica() {
            return (0, 0);
        }
        let total = self.dbs.len() * SHARDS;
        let mut cursor = self.expire_cursor.lock();
        let now = now_ms();
        let (mut removed, mut looked) = (0, 0);
        let mut left = max_shards.min(total);
        while left > 0 {
            let (db, from) = (*cursor / SHARDS, *cursor % SHARDS);
            // The next shard that may hold a TTL, within `left` shards and
            // this database, found a word of bits at a time: testing the
            // 4,096 shards' bits one by one took ~140,000 instructions a
            // cycle with no TTL anywhere.
            let span = left.min(SHARDS - from);
            let expiring = self.dbs[db].expiring();
            let next = expiring.next_raised(from, from + span);
            let end = next.map_or(from + span, |s| s + 1);
            left -= end - from;
            *cursor = (db * SHARDS + end) % total;
            let Some(shard) = next else {
                continue;
            };
            let lock = self.dbs[db].shard(shard);
            {
                let read = lock.read();
                if read.expires_len() == 0 {
                    expiring.clear(shard);
                    continue;
                }
            }
            let mut guard = lock.write();
            let gone = guard.expire_due(now, per_shard);
            looked += gone.len() + usize::from(gone.len() < per_shard && guard.expires_len() > 0);
            for key in &gone {
                self.feed_expired(db, key);
            }
            let interest = self.interest();
            if interest != 0 {
                for key in &gone {
                    self.report_expired(interest, db, key);
                }
            }
            removed += gone.len();
            drop(guard);
        }
        self.stats
            .expired_keys
            .fetch_add(removed as u64, Ordering::Relaxed);
        (removed, looked)
    }

    /// Removes the expired fields of due hashes, database by database, in
    /// the order of their earliest field TTLs across the shards (a merge of
    /// the shards' indexes), until at least `max` fields went: Redis 8.0
    /// keeps one index per database and expires in its order, so its HDELs
    /// come in that order. Returns the fields removed. Each hash is handled
    /// under its shard's write lock; no lock is held between two.
    pub fn active_expire_fields(&self, max: usize) -> usize {
        use std::cmp::Reverse;
        if self.is_loading() || self.is_replica() {
            return 0;
        }
        let now = now_ms();
        let mut removed = 0;
        for (db, d) in self.dbs.iter().enumerate() {
            let bits = d.field_expiring();
            let mut heads = std::collections::BinaryHeap::new();
            for i in bits.raised() {
                let shard = d.shard(i).read();
                match shard.first_field_due() {
                    None => bits.clear(i),
                    Some(at) if at < now => heads.push(Reverse((at, i))),
                    Some(_) => {}
                }
            }
            while removed < max {
                let Some(Reverse((_, i))) = heads.pop() else {
                    break;
                };
                let mut shard = d.shard(i).write();
                // Fed under the shard's lock, as every write is.
                let fields = shard.expire_fields_due(now, 1);
                removed += fields.iter().map(|x| x.fields.len()).sum::<usize>();
                self.report_expired_fields(db, &fields);
                if let Some(at) = shard.first_field_due().filter(|at| *at < now) {
                    heads.push(Reverse((at, i)));
                }
            }
            if removed >= max {
                break;
            }
        }
        // No client's reply waits for these records: written out here, as
        // Redis writes its AOF buffer after the cycle (errors surface through
        // the log's write status, as for any write).
        if removed > 0 && self.logging() {
            if let Some(log) = self.log.get() {
                let _ = log.aof.commit(log.aof.end_lsn());
            }
        }
        removed
    }

    /// What the active cycle's removal of hash fields tells the rest (as
    /// Redis 8.0 does): an `HDEL key field` per field, each a record of its
    /// own (8.0 propagates each in an execution unit of its own), to the AOF
    /// and replicas, the `hexpired` event per hash, `del` for a hash its last
    /// field left.
    fn report_expired_fields(&self, db: usize, expired: &[crate::keyspace::ExpiredFields]) {
        if expired.is_empty() {
            return;
        }
        let mut count = 0;
        for x in expired {
            count += x.fields.len();
            for f in &x.fields {
                self.log(db, &[b"HDEL", &x.key, f]);
            }
        }
        self.stats
            .expired_subkeys
            .fetch_add(count as u64, Ordering::Relaxed);
        let interest = self.interest();
        if interest != 0 {
            for x in expired {
                self.emit(interest, crate::event::HASH, "hexpired", db, &x.key);
                self.signal_modified(interest, &x.key, 0);
                if x.key_removed {
                    self.emit(interest, crate::event::GENERIC, "del", db, &x.key);
                }
            }
        }
    }
}

impl Drop for Engine {
    /// Dropping the keyspace must not delete filter files: flush and detach first.
    fn drop(&mut self) {
        self.blooms.close();
        if let Some(filter) = &self.existence {
            let _ = filter.flush();
        }
    }
}

/// A command that panics before its first change leaves nothing behind: its
/// locks are released (parking_lot locks do not poison) and only its
/// connection is closed. One that panics after a change may have applied part
/// of it, with or without its log record; serving that state would break
/// atomicity, so the process aborts and a restart rebuilds the keyspace from
/// the log, which holds only whole records (docs/design.md, "Panics").
impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if self.mutated && std::thread::panicking() {
            tracing::error!(
                "BUG: a write command panicked after changing the keyspace; aborting so that \
                 a restart reloads a consistent dataset from the AOF"
            );
            eprintln!("BUG: a write command panicked midway; aborting (see the log)");
            std::process::abort();
        }
    }
}

impl<'a> Tx<'a> {
    /// A sketch at `key` changed: its file gets it at the next
    /// checkpoint (sketch_files.rs).
    pub fn sketch_changed(&self, db: usize, key: &[u8]) {
        self.engine.sketch_files.touch(db, key);
    }

    /// Index of the guard holding `key`, and the key's `key_hash` (which
    /// picked its shard) for the shard's table.
    #[inline]
    fn guard_of(&self, db: usize, key: &[u8]) -> (usize, u64) {
        let hash = key_hash(key);
        let s = Db::shard_of(hash);
        // The guards are sorted (the lock order): a command over 100k keys
        // holds every shard, and a linear search made it quadratic.
        let i = self
            .guards
            .binary_search_by(|(d, i, _)| (*d, *i).cmp(&(db, s)))
            .expect("key was not locked by this transaction");
        (i, hash)
    }

    #[inline]
    fn guard_index(&self, db: usize, key: &[u8]) -> usize {
        self.guard_of(db, key).0
    }

    /// `guard_of`, for a change to the key: during a rewrite, the key's
    /// current value goes to the new base first.
    #[inline]
    fn changing(&mut self, db: usize, key: &[u8]) -> (usize, u64) {
        let (i, hash) = self.guard_of(db, key);
        if self.rewrite_epoch != 0 {
            self.engine
                .preimage_before_write(db, &mut self.guards[i].2, key, self.rewrite_epoch);
        }
        (i, hash)
    }

    /// The shard of `key`, for a change to it, and the key's hash.
    #[inline]
    fn shard(&mut self, db: usize, key: &[u8]) -> (&mut Shard, u64) {
        let (i, hash) = self.changing(db, key);
        (&mut self.guards[i].2, hash)
    }

    /// The command's clock (0 while loading).
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Names the client whose command this is (NOLOOP tracking skips it).
    pub fn set_client(&mut self, id: u64) {
        self.client = id;
    }

    /// Counts `n` hash fields a command removed on their TTL (INFO's
    /// `expired_subkeys` counts those of the active cycle too).
    pub fn count_expired_subkeys(&self, n: usize) {
        self.engine
            .stats
            .expired_subkeys
            .fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Reports the keyspace event `event` of `class` on `key` (Redis's
    /// notifyKeyspaceEvent), if anyone wants that class.
    #[inline]
    pub fn notify(&self, class: u32, event: &'static str, db: usize, key: &[u8]) {
        self.engine.emit(self.interest, class, event, db, key);
    }

    /// A change to `key` for tracking's invalidation.
    #[inline]
    fn changed(&self, key: &[u8]) {
        if !self.quiet {
            self.engine.signal_modified(self.interest, key, self.client);
        }
    }

    /// Runs `f` with its changes hidden from WATCH and client tracking, for
    /// the few writes Redis makes without signalling the key (BITFIELD
    /// creating or padding a string while every write of it failed).
    pub fn unsignaled<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        self.quiet = true;
        let r = f(self);
        self.quiet = false;
        r
    }

    /// The live entry for `key`; an expired one is removed here.
    pub fn get(&mut self, db: usize, key: &[u8]) -> Option<&Entry> {
        self.lookup(db, key, None).map(|e| &*e)
    }

    /// The live entry, to change in place.
    pub fn get_mut(&mut self, db: usize, key: &[u8]) -> Option<&mut Entry> {
        let found = self.touch_for_change(db, key);
        self.lookup(db, key, Some(found))
    }

    /// What every change in place reports first (WATCH, tracking); returns
    /// `guard_of` the key.
    fn touch_for_change(&mut self, db: usize, key: &[u8]) -> (usize, u64) {
        self.mutated = true;
        let (i, hash) = self.guard_of(db, key);
        if !self.quiet {
            self.guards[i].2.touch(key);
        }
        self.changed(key);
        (i, hash)
    }

    /// The live entry for `key`, whose guard and hash (`guard_of`) are
    /// `found` if the caller has them.
    fn lookup(&mut self, db: usize, key: &[u8], found: Option<(usize, u64)>) -> Option<&mut Entry> {
        if let Some(filter) = &self.engine.existence {
            if !filter.may_contain(key) {
                return None;
            }
        }
        let (i, hash) = found.unwrap_or_else(|| self.guard_of(db, key));
        if self.rewrite_epoch != 0 {
            self.engine
                .preimage_before_write(db, &mut self.guards[i].2, key, self.rewrite_epoch);
        }
        let (entry, expired) = self.guards[i].2.get_mut(key, hash, self.now);
        if expired {
            self.expired += 1;
            self.engine.report_expired(self.interest, db, key);
            self.engine.feed_expired(db, key);
        }
        // A write command that looks at a key may log a record that needs
        // it (BF.ADD, APPEND...): assume it does (see docs/cache-mode.md).
        let mut entry = entry;
        if let Some(e) = entry.as_deref_mut() {
            e.origin_mut().mark_touched();
            self.engine.accessed(e, self.now);
        }
        entry
    }

    /// Changes the live entry of `key` in place (a collection's members)
    /// through `f`, which may not change its expiry; its memory is counted
    /// again after. None if the key is absent.
    pub fn update<R>(
        &mut self,
        db: usize,
        key: &[u8],
        f: impl FnOnce(&mut Entry) -> R,
    ) -> Option<R> {
        let found = self.touch_for_change(db, key);
        self.lookup(db, key, Some(found))?;
        // The lookup left the key's position as the table's hint: no probe.
        self.guards[found.0].2.modify(key, f)
    }

    /// `get` and `update` in one lookup, for a command that looks at the
    /// value before it changes it (a sketch's type): `f` returns None to
    /// leave the entry as it was, and only a change (Some) is reported to
    /// WATCH and tracking. None if the key is absent or `f` changed nothing.
    pub fn update_if<R>(
        &mut self,
        db: usize,
        key: &[u8],
        f: impl FnOnce(&mut Entry) -> Option<R>,
    ) -> Option<R> {
        let found = self.guard_of(db, key);
        self.lookup(db, key, Some(found))?;
        // The lookup left the key's position as the table's hint: no probe.
        let r = self.guards[found.0].2.modify(key, f)??;
        self.mutated = true;
        if !self.quiet {
            self.guards[found.0].2.touch(key);
        }
        self.changed(key);
        Some(r)
    }

    /// Runs `f` on the bytes of the live in-memory string at `key`, in place
    /// (None: absent, expired, or not an in-memory string). Nothing is
    /// reported: a command that changed the bytes calls `modified`, so one
    /// that only looked (PFADD adding nothing new) wakes no watcher.
    pub fn with_str_mut<R>(
        &mut self,
        db: usize,
        key: &[u8],
        f: impl FnOnce(&mut Vec<u8>) -> R,
    ) -> Option<R> {
        self.with_inline_str_mut(db, key, |s| {
            // A spilled SmallVec becomes a Vec and back without copying.
            let mut bytes = std::mem::take(s).into_vec();
            let r = f(&mut bytes);
            *s = crate::keyspace::InlineBytes::from_vec(bytes);
            r
        })
    }

    /// `with_str_mut` on the string as stored: a short one stays inline
    /// (INCR rewrites its digits without an allocation).
    pub fn with_inline_str_mut<R>(
        &mut self,
        db: usize,
        key: &[u8],
        f: impl FnOnce(&mut crate::keyspace::InlineBytes) -> R,
    ) -> Option<R> {
        let found = self.guard_of(db, key);
        self.lookup(db, key, Some(found))?;
        self.mutated = true;
        self.guards[found.0].2.with_str_mut(key, f)
    }

    /// A value changed through interior mutability (a Bloom filter's bits):
    /// tells its watchers, as a change through `insert` would.
    pub fn modified(&mut self, db: usize, key: &[u8]) {
        self.mutated = true;
        let i = self.guard_index(db, key);
        self.guards[i].2.touch(key);
        self.changed(key);
    }

    pub fn exists(&mut self, db: usize, key: &[u8]) -> bool {
        self.get(db, key).is_some()
    }

    /// Stores `entry`, returning the previous live entry. An unlabeled entry
    /// is taken to derive from the key's previous value if there is one
    /// (APPEND, INCR...), else to be created by a record of this command;
    /// a labeled one (moved by RENAME, copied by COPY) keeps its label.
    /// Either way a later eviction must log a DEL for it, unless the log is
    /// off (replay), where the label of a fresh value is exact.
    pub fn insert(&mut self, db: usize, key: &[u8], mut entry: Entry) -> Option<Entry> {
        if entry.origin().is_set() {
            entry.origin_mut().mark_touched();
        } else {
            let now = self.now;
            let (shard, hash) = self.shard(db, key);
            let previous = shard
                .get_for_write(key, hash)
                .filter(|e| !e.is_expired(now))
                .map(|e| e.origin())
                .filter(|o| o.is_set());
            entry.set_origin(match previous {
                Some(mut o) => {
                    o.mark_touched();
                    o
                }
                None => Origin::new(self.fresh_seg(), self.logging()),
            });
        }
        self.insert_labeled(db, key, entry)
    }

    /// Stores a value created entirely by the record this transaction
    /// logged last (SET, MSET): its label is exactly that record's segment.
    pub fn insert_after_log(&mut self, db: usize, key: &[u8], mut entry: Entry) -> Option<Entry> {
        entry.set_origin(if self.last_seg != u64::MAX {
            Origin::new(self.last_seg, false)
        } else {
            Origin::new(self.fresh_seg(), self.logging())
        });
        self.insert_labeled(db, key, entry)
    }

    /// Sets the access clock of `entry`, about to be stored at `key`, as
    /// Redis's createObject and dbOverwrite do: the current time under LRU;
    /// under LFU the counter of the live value it replaces, else the one it
    /// carries (moved by RENAME, MOVE...), else LFU_INIT_VAL now.
    fn stamp(&mut self, db: usize, key: &[u8], entry: &Entry) {
        let ms = if self.now != 0 { self.now } else { now_ms() };
        let policy = &self.engine.access;
        let clock = if policy.is_lfu() {
            let now = self.now;
            let (shard, hash) = self.shard(db, key);
            let replaced = shard
                .get_for_write(key, hash)
                .filter(|e| !e.is_expired(now))
                .map(|e| e.clock().get());
            match replaced.or(Some(entry.clock().get()).filter(|&c| c != 0)) {
                Some(c) => c,
                None => policy.fresh(ms),
            }
        } else {
            policy.fresh(ms)
        };
        entry.clock().set(clock);
    }

    /// Sets `key`'s access clock from an idle time in seconds (under LRU)
    /// or a frequency (under LFU), as RESTORE's IDLETIME and FREQ and an
    /// RDB's idle and frequency records do (Redis's objectSetLRUOrLFU).
    /// Does nothing for the other policy's figure, or an absent key.
    pub fn set_access(&mut self, db: usize, key: &[u8], idle_secs: Option<u64>, freq: Option<u8>) {
        let now = self.now;
        let ms = if now != 0 { now } else { now_ms() };
        let policy = &self.engine.access;
        let value = match (policy.is_lfu(), idle_secs, freq) {
            (true, _, Some(f)) => policy.lfu_value(f, ms),
            (false, Some(idle), _) => access::lru_for_idle(idle, ms),
            _ => return,
        };
        let i = self.guard_index(db, key);
        if let Some(e) = self.guards[i].2.get(key, now) {
            e.clock().set(value);
        }
    }

    /// A segment no later than that of any record this transaction logged
    /// or will log.
    fn fresh_seg(&self) -> u64 {
        self.first_seg.min(self.engine.current_seg())
    }

    /// Stores `entry`; a key that was absent (or expired) is reported `new`,
    /// after `expired` for the expired one, as Redis's lookup then dbAdd do.
    fn insert_labeled(&mut self, db: usize, key: &[u8], entry: Entry) -> Option<Entry> {
        self.mutated = true;
        let now = self.now;
        self.stamp(db, key, &entry);
        if let Some(filter) = &self.engine.existence {
            filter.insert(key);
        }
        let signal = !self.quiet;
        // A key that a waiting client's type now holds: created, or replaced
        // by another type (RENAME over a string), as Redis's dbAdd signals it.
        let wakes = (entry.value().wakes_blocked()
            && self.engine.blocked.load(Ordering::Relaxed) > 0)
            .then(|| std::mem::discriminant(entry.value()));
        let (shard, hash) = self.shard(db, key);
        let old = shard.insert_signaled(key, hash, entry, signal);
        let live = if self.interest != 0 {
            self.report_insert(db, key, old)
        } else {
            match old {
                Some(e) if e.is_expired(now) => {
                    self.expired += 1;
                    self.engine.feed_expired(db, key);
                    None
                }
                old => old,
            }
        };
        if let Some(kind) = wakes {
            if live
                .as_ref()
                .is_none_or(|e| std::mem::discriminant(e.value()) != kind)
            {
                crate::ready::signal(db, key);
            }
        }
        // A stream overwritten (by any value) ends its XREADGROUP waits or
        // hands them the new stream, as Redis's dbOverwrite signals it.
        if matches!(live.as_ref().map(|e| e.value()), Some(Value::Stream(..))) {
            self.signal_ready(db, key);
        }
        live
    }

    /// Notes `key` as ready for clients blocked on it (a stream that grew),
    /// if any client is blocked.
    pub fn signal_ready(&self, db: usize, key: &[u8]) {
        if self.engine.blocked.load(Ordering::Relaxed) > 0 {
            crate::ready::signal(db, key);
        }
    }

    /// `insert_labeled`'s reports, out of its way when nothing is wanted.
    #[cold]
    fn report_insert(&mut self, db: usize, key: &[u8], old: Option<Entry>) -> Option<Entry> {
        let live = match old {
            Some(e) if e.is_expired(self.now) => {
                self.expired += 1;
                self.engine.report_expired(self.interest, db, key);
                self.engine.feed_expired(db, key);
                None
            }
            old => old,
        };
        if live.is_none() {
            self.notify(NEW, "new", db, key);
        }
        self.changed(key);
        live
    }

    /// Makes room in the shard of `key` (held by this transaction) for
    /// `additional` more keys: a batch of inserts into one shard (an RDB
    /// load) then grows its table once.
    pub fn reserve(&mut self, db: usize, key: &[u8], additional: usize) {
        let i = self.guard_index(db, key);
        self.guards[i].2.reserve(additional);
    }

    /// Removes `key`, returning the live entry that was there.
    pub fn remove(&mut self, db: usize, key: &[u8]) -> Option<Entry> {
        self.mutated = true;
        let now = self.now;
        let (shard, hash) = self.shard(db, key);
        let old = shard.remove_hashed(key, hash)?;
        if old.is_expired(now) {
            self.expired += 1;
            self.engine.report_expired(self.interest, db, key);
            self.engine.feed_expired(db, key);
            return None;
        }
        self.changed(key);
        // XREADGROUP waits on a deleted stream end (Redis's dbGenericDelete).
        if matches!(old.value(), Value::Stream(..)) {
            self.signal_ready(db, key);
        }
        Some(old)
    }

    /// Sets (or with 0 clears) the expiry of a live key.
    pub fn set_expire(&mut self, db: usize, key: &[u8], at: u64) -> bool {
        if self.get(db, key).is_none() {
            return false;
        }
        self.mutated = true;
        self.changed(key);
        self.shard(db, key).0.set_expire(key, at)
    }

    /// Logs the effect of this command; the record is ordered with the
    /// write because the shard locks are still held. Returns, for each
    /// argument, where it lies in the log if it is large enough to be kept
    /// there instead of in memory (empty when no argument is).
    pub fn log(&mut self, db: usize, args: &[&[u8]]) -> Vec<Option<BlobRef>> {
        self.mutated = true;
        self.engine.stats.changes.fetch_add(1, Ordering::Relaxed);
        let (lsn, refs) = self.engine.log(db, args);
        self.lsn = self.lsn.max(lsn);
        let seg = if lsn != 0 {
            crate::aof::Lsn(lsn).incr_seq()
        } else {
            self.engine.current_seg()
        };
        self.first_seg = self.first_seg.min(seg);
        self.last_seg = seg;
        if refs.is_empty() {
            return Vec::new();
        }
        // The arguments the log kept are exactly those at least as long as
        // the shortest it kept (it keeps every argument past the threshold
        // in force when it wrote them, which CONFIG SET may change since).
        let threshold = refs.iter().map(|r| r.len).min().unwrap_or(u64::MAX) as usize;
        let mut refs = refs.into_iter();
        args.iter()
            .map(|a| {
                if a.len() >= threshold {
                    refs.next()
                } else {
                    None
                }
            })
            .collect()
    }

    /// Whether the engine has a log at all (writes become durable records).
    pub fn logging(&self) -> bool {
        self.engine.log.get().is_some()
    }
}

/// The error reply for a large value that could not be read (and logs it).
pub fn blob_read_error(e: &dyn std::fmt::Display) -> String {
    tracing::error!("Reading a large value failed: {e}");
    format!("ERR reading a large value from the log failed: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_key_write_is_atomic_and_ordered() {
        let e = Engine::new(EngineOptions::default());
        let (n, _) = e.write(&[(0, b"a"), (0, b"b"), (0, b"a")], |tx| {
            tx.insert(0, b"a", Entry::string(&b"1"[..]));
            tx.insert(0, b"b", Entry::string(&b"2"[..]));
            2
        });
        assert_eq!(n, 2);
        assert!(e.read(0, b"b", |v| v.is_some()));
        assert_eq!(e.db(0).len(), 2);
    }

    #[test]
    fn scan_visits_every_key_once() {
        let e = Engine::new(EngineOptions::default());
        for i in 0..5000u32 {
            let k = i.to_string();
            e.write1(0, k.as_bytes(), |tx| {
                tx.insert(0, k.as_bytes(), Entry::string(&b"v"[..]))
            });
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        loop {
            cursor = e.scan(0, cursor, 10, |k, _| assert!(seen.insert(k.to_vec())));
            if cursor == 0 {
                break;
            }
        }
        assert_eq!(seen.len(), 5000);
    }

    #[test]
    fn existence_filter_answers_misses_and_survives_rebuild() {
        let dir = tempfile::tempdir().unwrap();
        let e = Engine::new(EngineOptions {
            data_dir: dir.path().to_path_buf(),
            existence_filter_size: 1 << 20,
            ..EngineOptions::default()
        });
        for i in 0..10_000u32 {
            let k = format!("key:{i}");
            e.write1(0, k.as_bytes(), |tx| {
                tx.insert(0, k.as_bytes(), Entry::string(&b"v"[..]))
            });
        }
        let filter = e.existence.as_ref().unwrap();
        let misses = (0..10_000u32)
            .filter(|i| !e.read(0, format!("absent:{i}").as_bytes(), |v| v.is_some()))
            .count();
        assert_eq!(misses, 10_000);
        let negatives = filter.stats().negative_lookups;
        assert!(
            negatives > 9_500,
            "most misses skip the keyspace: {negatives}"
        );
        e.write1(0, b"key:0", |tx| tx.remove(0, b"key:0"));
        e.rebuild_existence_filter().unwrap();
        for i in 1..10_000u32 {
            assert!(
                e.read(0, format!("key:{i}").as_bytes(), |v| v.is_some()),
                "key:{i} lost"
            );
        }
        let (hit, ..) = e.write1(0, b"key:5", |tx| tx.get(0, b"key:5").is_some());
        assert!(hit);
    }

    #[test]
    fn panic_before_any_change_leaves_the_engine_usable() {
        let e = Engine::new(EngineOptions::default());
        e.write1(0, b"a", |tx| tx.insert(0, b"a", Entry::string(&b"1"[..])));
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            e.write(&[(0, b"a"), (0, b"b")], |tx| {
                assert!(tx.get(0, b"a").is_some());
                panic!("a bug found while computing the reply");
            })
        }));
        assert!(r.is_err());
        // The locks were released and nothing changed.
        e.write1(0, b"b", |tx| tx.insert(0, b"b", Entry::string(&b"2"[..])));
        assert_eq!(e.db(0).len(), 2);
    }

    #[test]
    fn panic_after_a_change_aborts_the_process() {
        const CHILD: &str = "BLINKDB_TEST_PANIC_CHILD";
        if std::env::var_os(CHILD).is_some() {
            let e = Engine::new(EngineOptions::default());
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                e.write(&[(0, b"a"), (0, b"b")], |tx| {
                    tx.insert(0, b"a", Entry::string(&b"1"[..]));
                    panic!("midway: b not written");
                })
            }));
            // Reached only if the half-applied write was allowed to stand.
            std::process::exit(0);
        }
        use std::os::unix::process::ExitStatusExt;
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "engine::tests::panic_after_a_change_aborts_the_process",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .output()
            .unwrap();
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGABRT),
            "child: {:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    fn active_expire_reclaims() {
        let e = Engine::new(EngineOptions::default());
        e.write1(0, b"k", |tx| {
            let mut en = Entry::string(&b"v"[..]);
            en.expire_at = 1;
            tx.insert(0, b"k", en);
        });
        assert_eq!(e.db(0).len(), 1);
        e.active_expire(SHARDS * 16, 100);
        assert_eq!(e.db(0).len(), 0);
        assert_eq!(e.stats.expired_keys.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn active_expire_visits_max_shards_in_turn() {
        let e = Engine::new(EngineOptions::default());
        let keys: Vec<(usize, Vec<u8>)> = (0..400)
            .map(|i| (i % 3 * 5, format!("k{i}").into_bytes()))
            .collect();
        for (db, k) in &keys {
            e.write1(*db, k, |tx| {
                let mut en = Entry::string(&b"v"[..]);
                en.expire_at = 1;
                tx.insert(*db, k, en);
            });
        }
        let in_first = |n: usize| {
            keys.iter()
                .filter(|(db, k)| db * SHARDS + Db::shard_index(k) < n)
                .count()
        };
        // 100 shards a call: db 0's first 100, then its next 100.
        assert_eq!(e.active_expire(100, 1000).0, in_first(100));
        assert_eq!(e.active_expire(100, 1000).0, in_first(200) - in_first(100));
        let total = e.expire_positions();
        let mut removed = in_first(200);
        for _ in 0..total / 100 {
            removed += e.active_expire(100, 1000).0;
        }
        assert_eq!(removed, keys.len(), "every shard visited once");
        assert!([0, 5, 10].iter().all(|&db| e.db(db).is_empty()));
    }
}
