//! Cache mode (`maxmemory-policy allkeys-fifo`): drop the oldest whole log
//! segment and every key whose value cannot be rebuilt without it, as
//! BlobCache does. The rule that keeps a restart exact is in
//! docs/cache-mode.md; in short, every entry carries the oldest segment its
//! value depends on, entries below the cut go, and each of them that a later
//! record mentions gets a logged DEL so replay ends with it gone too.

use crate::engine::Engine;
use crate::keyspace::SHARDS;
use crate::notify::EVICTED;
use std::sync::atomic::Ordering;

/// What one eviction step dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Eviction {
    /// The file removed from the log (e.g. `incr#3`, `base#1`).
    pub file: String,
    /// Its size on disk.
    pub file_bytes: u64,
    /// Keys removed from the keyspace.
    pub keys: u64,
    /// DEL records logged for evicted keys that later records mention.
    pub dels_logged: u64,
}

/// The outcome of one eviction step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvictStep {
    Dropped(Eviction),
    /// A rewrite (or another eviction) is switching files: try again later.
    Deferred,
    /// No log, or nothing but an empty active file: nothing can be evicted.
    NothingLeft,
}

impl Engine {
    /// Drops the oldest segment (see `Aof::oldest_segment`) and the keys
    /// that depend on it.
    pub fn evict_oldest_segment(&self) -> Result<EvictStep, String> {
        let Some(log) = self.log_handle().cloned() else {
            return Ok(EvictStep::NothingLeft);
        };
        let Some(_exclusive) = self.maintenance.try_lock() else {
            return Ok(EvictStep::Deferred);
        };
        if self.rewrite_in_progress() {
            return Ok(EvictStep::Deferred);
        }
        let Some(victim) = log.aof.oldest_segment().map_err(|e| e.to_string())? else {
            return Ok(EvictStep::NothingLeft);
        };
        let mut evicted = Vec::new();
        let mut dels = 0u64;
        {
            // With every shard locked no command is between changing an
            // entry and logging it, so labels and the log agree.
            let mut all = self.lock_all();
            let interest = self.interest();
            for (i, shard) in all.iter_mut().enumerate() {
                let db = i / SHARDS;
                let gone = shard.evict_where(|e| e.origin().seg() < victim.cutoff_seq);
                for (key, entry) in &gone {
                    if entry.origin().touched() {
                        self.log(db, &[b"DEL", key]);
                        dels += 1;
                    }
                    self.emit(interest, EVICTED, "evicted", db, key);
                    self.signal_modified(interest, key, 0);
                }
                evicted.extend(gone);
            }
        }
        // The DELs must be durable before the segment leaves the manifest: a
        // crash in between then replays the old file and the DELs, which
        // still ends with the keys gone.
        if dels > 0 {
            log.aof.flush_all().map_err(|e| e.to_string())?;
        }
        let keys = evicted.len() as u64;
        self.stats.evicted_keys.fetch_add(keys, Ordering::Relaxed);
        let file_bytes = log
            .aof
            .drop_segment(victim.file)
            .map_err(|e| e.to_string())?;
        // Filters delete their files and pins when their last handle drops,
        // as DEL does; do that outside the shard locks.
        drop(evicted);
        Ok(EvictStep::Dropped(Eviction {
            file: victim.file.to_string(),
            file_bytes,
            keys,
            dels_logged: dels,
        }))
    }
}
