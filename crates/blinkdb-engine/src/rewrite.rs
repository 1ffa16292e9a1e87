//! AOF rewrite without a pause proportional to the data.
//!
//! Redis forks to get a snapshot; BlinkDB snapshots shard by shard instead:
//!
//! 1. With every shard locked (a pause of a few thousand lock operations,
//!    independent of data size), the log rotates to a fresh incr file and a
//!    rewrite epoch starts. Everything logged before is in the old files.
//! 2. Each shard is then copied into the new base exactly once, either by
//!    the rewrite thread or, if a writer gets there first, by that writer
//!    before its change ("copy before write"). So the base holds every
//!    shard as it was at the rotation, and the new incr files hold exactly
//!    the writes after it: replaying base + new incr files is exact.
//! 3. With every shard locked again, the manifest switches to the new base
//!    and entries whose large values were copied into the base are pointed
//!    at their new location before the old files are deleted.

use crate::aof::{BlobRef, RewriteBase};
use crate::engine::Engine;
use crate::keyspace::{Shard, Value, SHARDS};
use std::sync::atomic::Ordering;

pub(crate) struct RewriteState {
    epoch: u64,
    base: RewriteBase,
    /// Database the base's last SELECT chose.
    selected: Option<usize>,
    /// Large values copied into the base: (db, key, old ref, new ref).
    moved: Vec<(usize, crate::keyspace::InlineBytes, BlobRef, BlobRef)>,
    /// Large values seen in a shard snapshot but not yet copied: (db, key,
    /// ref, expiry). The rewrite thread copies them after the shard pass, with
    /// no shard lock held, so neither readers nor the writer that triggered a
    /// snapshot wait for megabytes of disk reads. The old files stay until the
    /// rewrite finishes (it holds the maintenance lock), so the refs stay valid.
    blobs: Vec<(usize, crate::keyspace::InlineBytes, BlobRef, Option<String>)>,
    /// Filter keys seen in a shard snapshot, written after the shard pass for
    /// the same reason: a filter's logged values can be millions of digests.
    filters: Vec<(
        usize,
        crate::keyspace::InlineBytes,
        crate::bfkeys::FilterRewrite,
        Option<String>,
    )>,
    /// How many of `filters` hold an open side log.
    held_logs: usize,
    /// First error writing the base; the rewrite is abandoned if set.
    failed: Option<String>,
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

impl RewriteState {
    fn emit(&mut self, db: usize, args: &[&[u8]]) -> Vec<BlobRef> {
        if self.failed.is_some() {
            return Vec::new();
        }
        if self.selected != Some(db) {
            if let Err(e) = self.base.command(&[b"SELECT", db.to_string().as_bytes()]) {
                self.failed = Some(e.to_string());
                return Vec::new();
            }
            self.selected = Some(db);
        }
        match self.base.command(args) {
            Ok(refs) => refs,
            Err(e) => {
                self.failed = Some(e.to_string());
                Vec::new()
            }
        }
    }
}

impl Engine {
    /// Copies `shard` into the running rewrite's base unless it is there.
    pub(crate) fn snapshot_before_write(&self, db: usize, shard: &mut Shard, epoch: u64) {
        if shard.snapshot_epoch == epoch {
            return;
        }
        let mut guard = self.rewrite.lock();
        let Some(state) = guard.as_mut().filter(|s| s.epoch == epoch) else {
            return;
        };
        let now = crate::clock::now_ms();
        for (key, entry) in shard.iter() {
            if entry.is_expired(now) {
                continue;
            }
            let at = (entry.expire_at != 0).then(|| entry.expire_at.to_string());
            if let Value::Bloom(filter, _) = entry.value() {
                // A filter is re-bound to its files, never copied bit by bit;
                // its logged values are read after the shard pass.
                // At most MAX_HELD_LOGS large logs wait with an open descriptor;
                // past that they are read now, so a keyspace of many filters
                // cannot run the process out of descriptors.
                let hold_open = state.held_logs < MAX_HELD_LOGS;
                match crate::bfkeys::rewrite_snapshot(key, filter, hold_open) {
                    Ok(snapshot) => {
                        state.held_logs += usize::from(snapshot.holds_file());
                        state.filters.push((db, key.clone(), snapshot, at))
                    }
                    Err(e) => state.failed = Some(format!("filter {e}")),
                }
                state.keys += 1;
                continue;
            }
            match entry.value() {
                Value::Str(value, _) => {
                    state.emit(db, &set_args(key, value, at.as_deref()));
                }
                Value::Blob(r, _) => state.blobs.push((db, key.clone(), **r, at)),
                Value::Bloom(..) => unreachable!("handled above"),
            }
            state.keys += 1;
        }
        shard.snapshot_epoch = epoch;
    }

    /// Writes the large values and filter values the shard pass set aside.
    /// Every shard is snapshotted by now, so no writer touches the rewrite state.
    fn write_deferred(&self, log: &crate::persist::Log) {
        let mut guard = self.rewrite.lock();
        let Some(state) = guard.as_mut() else {
            return;
        };
        for (db, key, old, at) in std::mem::take(&mut state.blobs) {
            if state.failed.is_some() {
                return;
            }
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
        let log = self.log_handle().ok_or("AOF is disabled")?.clone();
        let _exclusive = self.maintenance.lock();
        let epoch = EPOCHS.fetch_add(1, Ordering::Relaxed);
        {
            let _all = self.lock_all();
            let base = log.aof.begin_rewrite().map_err(|e| e.to_string())?;
            *self.rewrite.lock() = Some(RewriteState {
                epoch,
                base,
                selected: None,
                moved: Vec::new(),
                blobs: Vec::new(),
                filters: Vec::new(),
                held_logs: 0,
                failed: None,
                keys: 0,
            });
            self.rewrite_epoch.store(epoch, Ordering::Release);
        }
        for db in 0..self.databases() {
            for s in 0..SHARDS {
                let mut shard = self.db(db).shard(s).write();
                self.snapshot_before_write(db, &mut shard, epoch);
            }
        }
        self.write_deferred(&log);
        let mut all = self.lock_all();
        self.rewrite_epoch.store(0, Ordering::Release);
        let state = self.rewrite.lock().take().ok_or("rewrite state vanished")?;
        let base_bytes = state.base.size();
        if let Some(e) = state.failed {
            log.aof.abort_rewrite(state.base);
            return Err(e);
        }
        log.aof
            .finish_rewrite(state.base)
            .map_err(|e| e.to_string())?;
        for (db, key, old, new) in state.moved {
            let index = crate::keyspace::Db::shard_index(&key);
            all[db * SHARDS + index].swap_blob(&key, &old, new);
        }
        drop(all);
        if let Err(e) = self.rebuild_existence_filter() {
            tracing::warn!("Rebuilding the key-existence filter after the rewrite failed: {e}");
        }
        Ok(RewriteReport {
            keys: state.keys,
            base_bytes,
        })
    }

    pub fn rewrite_in_progress(&self) -> bool {
        self.rewrite_epoch.load(Ordering::Acquire) != 0
    }
}
