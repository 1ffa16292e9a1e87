//! AOF rewrite without a pause proportional to the data.
//!
//! Redis forks to get a snapshot; BlinkDB snapshots shard by shard instead:
//!
//! 1. With every shard locked (a pause of a few thousand lock operations,
//!    independent of data size), the log rotates to a fresh incr file and a
//!    rewrite epoch starts. Everything logged before is in the old files.
//! 2. The rewrite thread then copies each shard into the new base exactly once.
//!    A writer about to change a key whose shard is not copied yet first keeps
//!    the key's current value for the base and marks the key, which the shard's
//!    copy then leaves out ("copy before write", per key: copying whole shards
//!    put most of a rewrite on the connection thread). So the base holds every
//!    key as it was at the rotation, and the new incr files hold exactly the
//!    writes after it: replaying base + new incr files is exact.
//! 3. The base is fdatasynced (it was synced every 4 MB as it grew). Then, with
//!    every shard locked again, the manifest switches to the new base and
//!    entries whose large values were copied into the base are pointed at their
//!    new location. The old files are deleted after the locks are released.

use crate::aof::{BlobRef, RewriteBase};
use crate::engine::Engine;
use crate::keyspace::{Entry, Shard, Value, SHARDS};
use std::sync::atomic::Ordering;

/// Where a snapshot goes: the AOF rewrite's new base (commands), or an RDB
/// file (BGSAVE). Both take the same shard pass and copy-before-write.
pub(crate) enum Sink {
    Aof(RewriteBase),
    /// An RDB file; with a base, it is the AOF rewrite's RDB-format base
    /// (`aof-use-rdb-preamble yes`), written in place at the base's temp path.
    Rdb(crate::rdb::RdbFileWriter, Option<RewriteBase>),
}

/// The failure that sends an RDB-base rewrite back to a RESP base: a
/// kernel-backed filter's map cannot be read into an RDB file (it would be
/// written saturated), while a RESP base re-binds it to its pin.
/// Creates an RDB-format AOF base in place at the path given, with its AUX
/// fields and function libraries (see `Engine::rewrite_aof_rdb`).
pub type StartRdbBase<'a> =
    &'a dyn Fn(&std::path::Path) -> Result<crate::rdb::RdbFileWriter, String>;

const KERNEL_FILTER_IN_RDB_BASE: &str = "a kernel-backed Bloom filter cannot go into an RDB base";

/// The error of a BGSAVE that FLUSHALL aborted (`Engine::abort_bgsave`).
pub const BGSAVE_ABORTED: &str = "aborted by FLUSHALL";

pub(crate) struct RewriteState {
    epoch: u64,
    sink: Sink,
    /// Database the base's last SELECT chose.
    selected: Option<usize>,
    /// Large values copied into the base: (db, key, old ref, new ref).
    moved: Vec<(usize, crate::keyspace::InlineBytes, BlobRef, BlobRef)>,
    /// Large values seen in a shard snapshot but not yet copied: (db, key,
    /// ref, expiry). The rewrite thread copies them after the shard pass, with
    /// no shard lock held, so neither readers nor the writer that triggered a
    /// snapshot wait for megabytes of disk reads. The old files stay until the
    /// rewrite finishes (it holds the maintenance lock), so the refs stay valid.
    /// The last field is the key's access clock (RDB files may record it).
    blobs: Vec<(usize, crate::keyspace::InlineBytes, BlobRef, u64, u32)>,
    /// Filter keys seen in a shard snapshot, written after the shard pass for
    /// the same reason: a filter's logged values can be millions of digests.
    filters: Vec<(
        usize,
        crate::keyspace::InlineBytes,
        crate::bfkeys::FilterRewrite,
        Option<String>,
    )>,
    /// Collections seen in a shard snapshot or kept by a writer, written after
    /// the shard pass: cloning one shares it (a writer that changes it next
    /// copies it), so no shard lock is held while its members are written.
    collections: Vec<(usize, crate::keyspace::InlineBytes, Value, u64)>,
    /// How many of `filters` hold an open side log.
    held_logs: usize,
    /// First error writing the base; the rewrite is abandoned if set.
    failed: Option<String>,
    /// A BGSAVE's, which FLUSHALL may abort (`Engine::abort_bgsave`).
    abortable: bool,
    /// Keys written to the base.
    pub keys: u64,
}

/// Counters from a finished rewrite.
#[derive(Debug, Clone, Copy)]
pub struct RewriteReport {
    pub keys: u64,
    pub base_bytes: u64,
}

/// `SET key value [PXAT at]`: how the base records a string.
fn set_args<'a>(key: &'a [u8], value: &'a [u8], at: Option<&'a str>) -> Vec<&'a [u8]> {
    let mut args: Vec<&[u8]> = vec![b"SET", key, value];
    if let Some(at) = at {
        args.push(b"PXAT");
        args.push(at.as_bytes());
    }
    args
}

/// Side logs a rewrite may keep open between the shard pass and the base write.
const MAX_HELD_LOGS: usize = 256;

static EPOCHS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A key's value as a writer found it before its first change during a rewrite:
/// (db, key, value or large value's location, expiry or 0, and for a string
/// its access clock; a collection's value carries its own).
pub(crate) enum Preimage {
    Str(
        usize,
        crate::keyspace::InlineBytes,
        crate::keyspace::InlineBytes,
        u64,
        u32,
    ),
    Blob(usize, crate::keyspace::InlineBytes, BlobRef, u64, u32),
    /// Shares the collection (see `RewriteState::collections`).
    Collection(usize, crate::keyspace::InlineBytes, Value, u64),
}

/// A hash, set or sorted set in its compact encoding (listpack, intset),
/// whose bytes live in its entry.
fn is_compact(value: &Value) -> bool {
    use crate::types::{HashValue, SetValue, ZSetValue};
    match value {
        Value::Hash(h, _) => matches!(h, HashValue::Pack(_) | HashValue::PackEx(..)),
        Value::Set(s, _) => matches!(s, SetValue::Ints(_)),
        Value::ZSet(z, _) => matches!(z, ZSetValue::Pack(_)),
        _ => false,
    }
}

/// `PXAT`'s argument for an expiry (0: none).
fn expiry_arg(at: u64) -> Option<String> {
    (at != 0).then(|| at.to_string())
}

impl RewriteState {
    /// A pass of `epoch` writing to `sink`, nothing copied yet.
    fn new(epoch: u64, sink: Sink) -> Self {
        RewriteState {
            epoch,
            sink,
            selected: None,
            moved: Vec::new(),
            blobs: Vec::new(),
            filters: Vec::new(),
            collections: Vec::new(),
            held_logs: 0,
            failed: None,
            abortable: false,
            keys: 0,
        }
    }

    /// Copies one live entry into the base: a string now; a large value or a
    /// filter's values are set aside for after the shard pass.
    fn copy_entry(
        &mut self,
        db: usize,
        key: &crate::keyspace::InlineBytes,
        entry: &Entry,
        now: u64,
    ) {
        if entry.is_expired(now) {
            return;
        }
        let at = expiry_arg(entry.expire_at);
        match entry.value() {
            // An RDB file holds the filter as RedisBloom's value, written after
            // the shard pass like a collection (its bits only ever gain ones,
            // so a later add cannot take an item away from the file).
            Value::Bloom(filter, _)
                if filter.is_kernel() && matches!(self.sink, Sink::Rdb(_, Some(_))) =>
            {
                self.failed = Some(KERNEL_FILTER_IN_RDB_BASE.into());
            }
            Value::Bloom(..) if matches!(self.sink, Sink::Rdb(..)) => {
                self.collections
                    .push((db, key.clone(), entry.value().clone(), entry.expire_at));
            }
            Value::Bloom(filter, _) => {
                // A filter is re-bound to its files, never copied bit by bit;
                // its logged values are read after the shard pass.
                // At most MAX_HELD_LOGS large logs wait with an open descriptor;
                // past that they are read now, so a keyspace of many filters
                // cannot run the process out of descriptors.
                let hold_open = self.held_logs < MAX_HELD_LOGS;
                match crate::bfkeys::rewrite_snapshot(key, filter, hold_open) {
                    Ok(snapshot) => {
                        self.held_logs += usize::from(snapshot.holds_file());
                        self.filters.push((db, key.clone(), snapshot, at))
                    }
                    Err(e) => self.failed = Some(format!("filter {e}")),
                }
            }
            Value::Str(value, _) => {
                self.put_string(db, key, value, entry.expire_at, entry.clock().get())
            }
            Value::Blob(r, _) => {
                self.blobs
                    .push((db, key.clone(), **r, entry.expire_at, entry.clock().get()))
            }
            // A compact hash, set or sorted set is written now, as a string is:
            // its bytes are in the entry, at most the `*-max-listpack-*` limits.
            // Set aside, each took a copy and a slot of `collections` until the
            // pass ended: 186 bytes a 5-field hash held by a save of 300,000 of
            // them (more than the key), in an arena glibc did not give back
            // after it (docs/design.md, "Memory per small key").
            v if is_compact(v) => self.put_collection(db, key, v, entry.expire_at, None),
            Value::Hash(..)
            | Value::Set(..)
            | Value::ZSet(..)
            | Value::List(..)
            | Value::Stream(..)
            | Value::Sketch(..) => {
                self.collections
                    .push((db, key.clone(), entry.value().clone(), entry.expire_at));
            }
        }
        self.keys += 1;
    }

    /// A collection into the base: an RDB key, or its rewrite records and
    /// PEXPIREAT.
    fn put_collection(
        &mut self,
        db: usize,
        key: &[u8],
        value: &Value,
        at: u64,
        log: Option<&crate::persist::Log>,
    ) {
        if matches!(self.sink, Sink::Rdb(..)) {
            self.put_rdb(db, key, value, at, log);
            return;
        }
        crate::types::rewrite_records(key, value, |record| {
            self.emit(db, record);
        });
        if let Some(at) = expiry_arg(at) {
            self.emit(db, &[b"PEXPIREAT", key, at.as_bytes()]);
        }
    }

    /// Moves a writer's queued copy into the base, as `copy_entry` would have.
    fn take_preimage(&mut self, p: Preimage) {
        match p {
            Preimage::Str(db, key, value, at, clock) => {
                self.put_string(db, &key, &value, at, clock)
            }
            Preimage::Blob(db, key, r, at, clock) => self.blobs.push((db, key, r, at, clock)),
            Preimage::Collection(db, key, value, at) if is_compact(&value) => {
                self.put_collection(db, &key, &value, at, None)
            }
            Preimage::Collection(db, key, value, at) => self.collections.push((db, key, value, at)),
        }
        self.keys += 1;
    }

    /// A string held in memory: SET into the base, or a key of the RDB file.
    fn put_string(
        &mut self,
        db: usize,
        key: &[u8],
        value: &crate::keyspace::InlineBytes,
        at: u64,
        clock: u32,
    ) {
        if matches!(self.sink, Sink::Rdb(..)) {
            let value = Value::Str(value.clone(), crate::keyspace::Meta::unset());
            value.clock().set(clock);
            self.put_rdb(db, key, &value, at, None);
        } else {
            let at = expiry_arg(at);
            self.emit(db, &set_args(key, value, at.as_deref()));
        }
    }

    /// One key into the RDB file, after a SELECTDB when its database changes
    /// (writers' copies arrive from any database).
    fn put_rdb(
        &mut self,
        db: usize,
        key: &[u8],
        value: &Value,
        at: u64,
        log: Option<&crate::persist::Log>,
    ) {
        let Sink::Rdb(file, _) = &mut self.sink else {
            return;
        };
        if self.failed.is_some() {
            return;
        }
        let mut result = Ok(());
        if self.selected != Some(db) {
            result = file.select(db);
            self.selected = Some(db);
        }
        let mut blob = |r: &BlobRef| match log {
            Some(log) => log
                .read_blob(r)
                .map_err(|e| crate::rdb::RdbError::Io(e.to_string())),
            None => Err(crate::rdb::RdbError::Io("large value without a log".into())),
        };
        if let Err(e) = result.and_then(|_| file.key(key, value, at, &mut blob)) {
            self.failed = Some(e.to_string());
        }
    }

    /// A large value into the AOF's RDB base, uncompressed, so that the
    /// entry can point at its bytes there after the switch (as a RESP base's
    /// SET record holds them): no second copy on disk, none in memory.
    fn put_rdb_blob(
        &mut self,
        db: usize,
        key: crate::keyspace::InlineBytes,
        old: BlobRef,
        at: u64,
        clock: u32,
        log: Option<&crate::persist::Log>,
    ) {
        if self.failed.is_some() {
            return;
        }
        let Some(log) = log else {
            self.failed = Some("AOF is disabled".into());
            return;
        };
        let value = match log.read_blob(&old) {
            Ok(v) => v,
            Err(e) => {
                self.failed = Some(format!("reading a large value for the rewrite: {e}"));
                return;
            }
        };
        let Sink::Rdb(file, Some(base)) = &mut self.sink else {
            return;
        };
        let mut result = Ok(());
        if self.selected != Some(db) {
            result = file.select(db);
            self.selected = Some(db);
        }
        match result.and_then(|_| file.key_raw_string(&key, &value, at, clock)) {
            Ok(offset) => {
                let new = base.blob_ref(offset, old.len, old.checksum);
                self.moved.push((db, key, old, new));
            }
            Err(e) => self.failed = Some(e.to_string()),
        }
    }

    fn emit(&mut self, db: usize, args: &[&[u8]]) -> Vec<BlobRef> {
        if self.failed.is_some() {
            return Vec::new();
        }
        let Sink::Aof(base) = &mut self.sink else {
            return Vec::new();
        };
        if self.selected != Some(db) {
            if let Err(e) = base.command(&[b"SELECT", db.to_string().as_bytes()]) {
                self.failed = Some(e.to_string());
                return Vec::new();
            }
            self.selected = Some(db);
        }
        match base.command(args) {
            Ok(refs) => refs,
            Err(e) => {
                self.failed = Some(e.to_string());
                Vec::new()
            }
        }
    }
}

impl Engine {
    /// Copies `shard` into the running rewrite's base unless it is there, leaving
    /// out the keys a writer already copied (`preimage_before_write`), then moves
    /// the writers' queued copies into the base.
    pub(crate) fn snapshot_before_write(&self, db: usize, shard: &mut Shard, epoch: u64) {
        if shard.snapshot_epoch == epoch {
            return;
        }
        let mut guard = self.rewrite.lock();
        let Some(state) = guard.as_mut().filter(|s| s.epoch == epoch) else {
            return;
        };
        let now = crate::clock::now_ms();
        let done = shard.take_preimaged(epoch);
        for (key, entry) in shard.iter() {
            if !done.contains(&key[..]) {
                state.copy_entry(db, key, entry, now);
            }
        }
        shard.snapshot_epoch = epoch;
        let queued = std::mem::take(&mut *self.rewrite_preimages.lock());
        for p in queued {
            state.take_preimage(p);
        }
    }

    /// Before a write command first changes `key` during a rewrite whose shard pass
    /// has not reached its shard yet, keeps the key's current value for the new base
    /// and marks the key, so that the shard's own copy later leaves it out. A string
    /// or a large value's location is queued (a copy of the value, under a short
    /// lock of its own), so the writer never waits for the rewrite thread, which
    /// holds the rewrite state while it copies a whole shard; a filter, rare, is
    /// copied under that state's lock as the shard pass does. Before, the first
    /// writer to touch a shard copied all of it: with random keys that put most of
    /// a rewrite on the connection thread (SET of 1 KB values during the rewrites
    /// that their own growth set off fell from ~100k/s to ~50k/s).
    pub(crate) fn preimage_before_write(
        &self,
        db: usize,
        shard: &mut Shard,
        key: &[u8],
        epoch: u64,
    ) {
        if shard.snapshot_epoch == epoch || !shard.mark_preimaged(key, epoch) {
            return;
        }
        let Some(entry) = shard.get_any(key) else {
            return;
        };
        let now = crate::clock::now_ms();
        if entry.is_expired(now) {
            return;
        }
        let key = crate::keyspace::InlineBytes::from_slice(key);
        let at = entry.expire_at;
        let queued = match entry.value() {
            Value::Str(value, _) => Preimage::Str(db, key, value.clone(), at, entry.clock().get()),
            Value::Blob(r, _) => Preimage::Blob(db, key, **r, at, entry.clock().get()),
            Value::Hash(..)
            | Value::Set(..)
            | Value::ZSet(..)
            | Value::List(..)
            | Value::Stream(..)
            | Value::Sketch(..) => Preimage::Collection(db, key, entry.value().clone(), at),
            Value::Bloom(..) => {
                let mut guard = self.rewrite.lock();
                if let Some(state) = guard.as_mut().filter(|s| s.epoch == epoch) {
                    state.copy_entry(db, &key, entry, now);
                }
                return;
            }
        };
        self.rewrite_preimages.lock().push(queued);
    }

    /// Writes the large values and filter values the shard pass set aside.
    /// Every shard is snapshotted by now, so no writer touches the rewrite state.
    fn write_deferred(&self, log: Option<&crate::persist::Log>) {
        let mut guard = self.rewrite.lock();
        let Some(state) = guard.as_mut() else {
            return;
        };
        if let Sink::Rdb(_, base) = &state.sink {
            let into_base = base.is_some();
            for (db, key, r, at, clock) in std::mem::take(&mut state.blobs) {
                if into_base {
                    state.put_rdb_blob(db, key, r, at, clock, log);
                    continue;
                }
                let value = Value::blob(r);
                value.clock().set(clock);
                state.put_rdb(db, &key, &value, at, log);
            }
            for (db, key, value, at) in std::mem::take(&mut state.collections) {
                state.put_collection(db, &key, &value, at, log);
            }
            return;
        }
        let Some(log) = log else {
            state.failed = Some("AOF is disabled".into());
            return;
        };
        for (db, key, old, at, _clock) in std::mem::take(&mut state.blobs) {
            if state.failed.is_some() {
                return;
            }
            let at = expiry_arg(at);
            let value = match log.read_blob(&old) {
                Ok(v) => v,
                Err(e) => {
                    state.failed = Some(format!("reading a large value for the rewrite: {e}"));
                    return;
                }
            };
            let refs = state.emit(db, &set_args(&key, &value, at.as_deref()));
            if let Some(new) = refs.last() {
                state.moved.push((db, key, old, *new));
            }
        }
        for (db, key, value, at) in std::mem::take(&mut state.collections) {
            state.put_collection(db, &key, &value, at, Some(log));
            if state.failed.is_some() {
                return;
            }
        }
        for (db, key, filter, at) in std::mem::take(&mut state.filters) {
            if state.failed.is_some() {
                return;
            }
            if let Err(e) = filter.write(&key, |record| {
                state.emit(db, record);
            }) {
                state.failed = Some(format!("reading a filter's values for the rewrite: {e}"));
                return;
            }
            if let Some(at) = &at {
                state.emit(db, &[b"PEXPIREAT", &key, at.as_bytes()]);
            }
        }
    }

    pub(crate) fn lock_all(&self) -> Vec<parking_lot::RwLockWriteGuard<'_, Shard>> {
        (0..self.databases())
            .flat_map(|d| self.db(d).shards().iter().map(|s| s.write()))
            .collect()
    }

    /// Rewrites the AOF into a compact base (BGREWRITEAOF). Blocking; run it
    /// on a background thread. Clients keep reading and writing meanwhile.
    pub fn rewrite_aof(&self) -> Result<RewriteReport, String> {
        self.rewrite_aof_with(None)
    }

    /// `rewrite_aof` with an RDB-format base (`aof-use-rdb-preamble yes`):
    /// `start` creates the file in place at the path it is given, with its
    /// AUX fields and function libraries. A keyspace holding a kernel-backed
    /// filter is rewritten with a RESP base instead (logged): the filter's
    /// map cannot be read into an RDB file.
    pub fn rewrite_aof_rdb(&self, start: StartRdbBase<'_>) -> Result<RewriteReport, String> {
        match self.rewrite_aof_with(Some(start)) {
            Err(e) if e == KERNEL_FILTER_IN_RDB_BASE => {
                tracing::warn!("AOF rewrite: {e}; this rewrite writes a RESP base");
                self.rewrite_aof_with(None)
            }
            other => other,
        }
    }

    fn rewrite_aof_with(&self, rdb: Option<StartRdbBase<'_>>) -> Result<RewriteReport, String> {
        let log = self.log_handle().ok_or("AOF is disabled")?.clone();
        let _exclusive = self.maintenance.lock();
        let epoch = EPOCHS.fetch_add(1, Ordering::Relaxed);
        {
            let _all = self.lock_all();
            let sink = match rdb {
                None => {
                    let mut base = log.aof.begin_rewrite().map_err(|e| e.to_string())?;
                    if let Some(preamble) = self.rewrite_preamble.get() {
                        for record in preamble() {
                            let args: Vec<&[u8]> = record.iter().map(|a| &a[..]).collect();
                            if let Err(e) = base.command(&args) {
                                log.aof.abort_rewrite(base);
                                return Err(e.to_string());
                            }
                        }
                    }
                    Sink::Aof(base)
                }
                Some(start) => {
                    let base = log.aof.begin_rewrite_rdb().map_err(|e| e.to_string())?;
                    let mut file = match start(base.temp_path()) {
                        Ok(f) => f,
                        Err(e) => {
                            log.aof.abort_rewrite(base);
                            return Err(e);
                        }
                    };
                    file.save_clocks(self.access.save_mode(crate::clock::now_ms()));
                    Sink::Rdb(file, Some(base))
                }
            };
            // Each shard's copy empties the queue, so it is empty between rewrites; a
            // leftover would put another rewrite's values into this base.
            let mut leftover = self.rewrite_preimages.lock();
            debug_assert!(leftover.is_empty(), "preimages left from a rewrite");
            leftover.clear();
            drop(leftover);
            *self.rewrite.lock() = Some(RewriteState::new(epoch, sink));
            self.rewrite_epoch.store(epoch, Ordering::Release);
            // Logging paused by CONFIG SET appendonly no resumes here, with
            // every shard held: what was not logged is in this base, what
            // follows goes to the new incr file.
            self.log_paused.store(false, Ordering::Release);
        }
        self.snapshot_all_shards(epoch);
        self.write_deferred(Some(&log));
        // Every shard is copied: writers no longer reach the state. The base
        // is finished and synced here, while clients run.
        let state = self.rewrite.lock().take().ok_or("rewrite state vanished");
        let state = match state {
            Ok(s) => s,
            Err(e) => {
                self.rewrite_epoch.store(0, Ordering::Release);
                return Err(e.into());
            }
        };
        let RewriteState {
            sink,
            mut failed,
            moved,
            keys,
            ..
        } = state;
        let base = match sink {
            Sink::Aof(mut base) => {
                if failed.is_none() {
                    if let Err(e) = base.sync() {
                        failed = Some(e.to_string());
                    }
                }
                base
            }
            Sink::Rdb(file, Some(mut base)) => {
                if failed.is_some() {
                    file.abort();
                } else {
                    match file.finish() {
                        Ok(bytes) => base.adopt_rdb(bytes),
                        Err(e) => failed = Some(e.to_string()),
                    }
                }
                base
            }
            Sink::Rdb(file, None) => {
                file.abort();
                self.rewrite_epoch.store(0, Ordering::Release);
                return Err("rewrite state of another kind".into());
            }
        };
        let mut all = self.lock_all();
        self.rewrite_epoch.store(0, Ordering::Release);
        let base_bytes = base.size();
        if let Some(e) = failed {
            drop(all);
            log.aof.abort_rewrite(base);
            return Err(e);
        }
        log.aof
            .switch_to_new_base(base)
            .map_err(|e| e.to_string())?;
        for (db, key, old, new) in moved {
            let index = crate::keyspace::Db::shard_index(&key);
            all[db * SHARDS + index].swap_blob(&key, &old, new);
        }
        drop(all);
        log.aof.drop_history();
        if let Err(e) = self.rebuild_existence_filter() {
            tracing::warn!("Rebuilding the key-existence filter after the rewrite failed: {e}");
        }
        Ok(RewriteReport { keys, base_bytes })
    }

    /// The shard pass of rewrite `epoch` (AOF rewrite or BGSAVE): every
    /// shard, in turn under its write lock, copied as it is now.
    fn snapshot_all_shards(&self, epoch: u64) {
        self.snapshot_all_shards_paced(epoch, &|| {});
    }

    /// The shard pass, calling `pace` between shards (no lock held then).
    /// `rdb-key-save-delay` is taken here, for the keys copied so far, with
    /// no lock held: Redis's forked child sleeps while the server goes on,
    /// and so do writers here (a shard's writers wait for nobody's sleep).
    fn snapshot_all_shards_paced(&self, epoch: u64, pace: &dyn Fn()) {
        use crate::debug_delay::{pause, KEY_SAVE_DELAY};
        let mut delayed = 0;
        for db in 0..self.databases() {
            for s in 0..SHARDS {
                let mut shard = self.db(db).shard(s).write();
                self.snapshot_before_write(db, &mut shard, epoch);
                drop(shard);
                if KEY_SAVE_DELAY.load(Ordering::Relaxed) != 0 {
                    let copied = self.rewrite.lock().as_ref().map_or(0, |st| st.keys);
                    pause(&KEY_SAVE_DELAY, copied.saturating_sub(delayed));
                    delayed = delayed.max(copied);
                }
                if self
                    .rewrite
                    .lock()
                    .as_ref()
                    .is_some_and(|st| st.abortable && st.failed.as_deref() == Some(BGSAVE_ABORTED))
                {
                    return;
                }
                pace();
            }
        }
    }

    /// BGSAVE without fork: `file` (started with its AUX fields and function
    /// libraries) gets every key as it was when this call began, through the
    /// rewrite's shard pass and copy-before-write; writers go on meanwhile.
    /// Exclusive with an AOF rewrite (one waits for the other). Blocking: run
    /// it on a background thread. Returns the number of keys written.
    /// FLUSHALL may abort it (`abort_bgsave`): it then ends with
    /// `Err(BGSAVE_ABORTED)` and its temporary file is removed.
    /// `ticket` is `bgsave_ticket()` taken when the BGSAVE was accepted: a
    /// FLUSHALL after that aborts it even if this call has not begun yet;
    /// `None` (BGSAVE SCHEDULE behind a rewrite) takes it when the save begins.
    pub fn save_rdb(
        &self,
        file: crate::rdb::RdbFileWriter,
        ticket: Option<u64>,
    ) -> Result<u64, String> {
        self.save_rdb_inner(file, || (), |()| {}, &|| {}, Some(ticket))
    }

    /// What a BGSAVE accepted now passes to `save_rdb`.
    pub fn bgsave_ticket(&self) -> u64 {
        self.bgsave_aborts.load(Ordering::Acquire)
    }

    /// Aborts the BGSAVE under way, if any (not a full sync's save nor an AOF
    /// rewrite), as Redis's FLUSHALL kills its RDB child: the file would hold
    /// the keys just flushed. The save stops at its next shard. Returns
    /// whether one was aborted.
    pub fn abort_bgsave(&self) -> bool {
        let mut guard = self.rewrite.lock();
        self.bgsave_aborts.fetch_add(1, Ordering::AcqRel);
        match guard.as_mut() {
            Some(st) if st.abortable && st.failed.is_none() => {
                st.failed = Some(BGSAVE_ABORTED.into());
                true
            }
            _ => false,
        }
    }

    /// `save_rdb`, for a full sync: `hold` runs first (after any AOF
    /// rewrite is over) and takes what must keep other writers out before
    /// the shard locks are taken (the server's transaction gate); then, with
    /// every shard locked at the snapshot's point in time, `at` gets it back
    /// (to note the replication offset the file is consistent with).
    pub fn save_rdb_at<G>(
        &self,
        file: crate::rdb::RdbFileWriter,
        hold: impl FnOnce() -> G,
        at: impl FnOnce(G),
    ) -> Result<u64, String> {
        self.save_rdb_paced(file, hold, at, &|| {})
    }

    /// `save_rdb_at` whose shard pass calls `pace` after each shard, with
    /// no lock held: a sink that must not grow without bound (a diskless
    /// sync's queue to slow replicas) waits there, never while a shard, and
    /// so its writers, is held. Its writers meanwhile copy what they change
    /// first (copy-before-write), as during any save.
    pub fn save_rdb_paced<G>(
        &self,
        file: crate::rdb::RdbFileWriter,
        hold: impl FnOnce() -> G,
        at: impl FnOnce(G),
        pace: &dyn Fn(),
    ) -> Result<u64, String> {
        self.save_rdb_inner(file, hold, at, pace, None)
    }

    fn save_rdb_inner<G>(
        &self,
        mut file: crate::rdb::RdbFileWriter,
        hold: impl FnOnce() -> G,
        at: impl FnOnce(G),
        pace: &dyn Fn(),
        abortable: Option<Option<u64>>,
    ) -> Result<u64, String> {
        let _exclusive = self.maintenance.lock();
        let ticket = abortable.map(|t| t.unwrap_or_else(|| self.bgsave_ticket()));
        file.save_clocks(self.access.save_mode(crate::clock::now_ms()));
        let epoch = EPOCHS.fetch_add(1, Ordering::Relaxed);
        let held = hold();
        {
            let _all = self.lock_all();
            at(held);
            let mut leftover = self.rewrite_preimages.lock();
            leftover.clear();
            drop(leftover);
            let mut state = RewriteState::new(epoch, Sink::Rdb(file, None));
            state.abortable = abortable.is_some();
            let mut guard = self.rewrite.lock();
            if ticket.is_some_and(|t| t != self.bgsave_aborts.load(Ordering::Acquire)) {
                state.failed = Some(BGSAVE_ABORTED.into());
            }
            *guard = Some(state);
            drop(guard);
            self.rewrite_epoch.store(epoch, Ordering::Release);
        }
        self.snapshot_all_shards_paced(epoch, pace);
        self.write_deferred(self.log_handle().map(|l| &**l));
        let all = self.lock_all();
        self.rewrite_epoch.store(0, Ordering::Release);
        let state = self.rewrite.lock().take().ok_or("save state vanished")?;
        drop(all);
        let Sink::Rdb(file, None) = state.sink else {
            return Err("save state of another kind".into());
        };
        if let Some(e) = state.failed {
            file.abort();
            return Err(e);
        }
        file.finish().map_err(|e| e.to_string())?;
        Ok(state.keys)
    }

    pub fn rewrite_in_progress(&self) -> bool {
        self.rewrite_epoch.load(Ordering::Acquire) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineOptions;
    use crate::rdb::RdbFileWriter;

    fn engine_with_a_key(dir: &std::path::Path) -> Engine {
        let e = Engine::new(EngineOptions {
            data_dir: dir.to_path_buf(),
            ..EngineOptions::default()
        });
        e.write1(0, b"k", |tx| {
            tx.insert(0, b"k", Entry::new(Value::str(&b"v"[..])))
        });
        e
    }

    /// A FLUSHALL between BGSAVE's reply and its thread's start aborts the
    /// save, as FLUSHALL kills Redis's already-forked child; one before the
    /// BGSAVE was accepted does not.
    #[test]
    fn a_flush_after_the_ticket_aborts_a_save_not_yet_begun() {
        let dir = tempfile::tempdir().unwrap();
        let e = engine_with_a_key(dir.path());
        let path = dir.path().join("temp.rdb");
        let ticket = e.bgsave_ticket();
        assert!(!e.abort_bgsave(), "no save under way to abort");
        let file = RdbFileWriter::create(&path, &[], true, true).unwrap();
        assert_eq!(
            e.save_rdb(file, Some(ticket)),
            Err(BGSAVE_ABORTED.to_string())
        );

        let ticket = e.bgsave_ticket();
        let file = RdbFileWriter::create(&path, &[], true, true).unwrap();
        assert_eq!(e.save_rdb(file, Some(ticket)), Ok(1));
        // A scheduled save takes its ticket when it begins.
        e.abort_bgsave();
        let file = RdbFileWriter::create(&path, &[], true, true).unwrap();
        assert_eq!(e.save_rdb(file, None), Ok(1));
    }
}
