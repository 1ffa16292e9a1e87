//! Eviction from the server's side: when the limits are passed, when to
//! evict (server cron, and before a write that may add data) and when a
//! write is refused. The engine decides what an eviction drops: whole log
//! segments in cache mode (allkeys-fifo), sampled keys under Redis's
//! policies (evict_sampled.rs).

use crate::config::Settings;
use crate::state::Shared;
use blinkdb_engine::evict::EvictStep;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

pub const OOM_MEMORY: &str = "OOM command not allowed when used memory > 'maxmemory'.";
pub const OOM_DISK: &str = "OOM command not allowed when the AOF directory > 'max-disk-size'.";

/// Segments one cron tick drops at most, so a tick stays short.
const CRON_STEPS: usize = 16;
/// Segments a write may drop before it runs.
const WRITE_STEPS: usize = 64;
/// Keys one cron tick, or one write, evicts at most under a sampled policy
/// (Redis bounds its loop by time, `maxmemory-eviction-tenacity`).
const KEY_STEPS: usize = 10_000;

#[derive(Default)]
pub struct EvictionState {
    /// The keyspace's accounted bytes, refreshed by the cron and after each
    /// eviction step (summing 4096 shards per write would cost too much).
    pub dataset_bytes: AtomicU64,
    /// One evicting thread at a time; others wait, then see the new sizes.
    running: Mutex<()>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Limit {
    Memory,
    Disk,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Under,
    /// A rewrite is switching files; eviction resumes after it.
    Deferred,
    NothingLeft(Limit),
}

/// Which limit is passed, if any. When evicting, memory is the keyspace's
/// own count (RSS does not shrink reliably after frees); under noeviction
/// it is RSS, as before cache mode existed.
fn over(shared: &Shared, s: &Settings) -> Option<Limit> {
    if s.maxmemory > 0 {
        let used = if evicts(s) {
            shared.eviction.dataset_bytes.load(Ordering::Relaxed)
        } else {
            shared.used_memory.load(Ordering::Relaxed)
        };
        if used > s.maxmemory {
            return Some(Limit::Memory);
        }
    }
    if s.max_disk_size > 0 {
        if let Some(log) = shared.engine.log_handle() {
            if log.aof.current_size() > s.max_disk_size {
                return Some(Limit::Disk);
            }
        }
    }
    None
}

/// Whether the policy evicts anything.
fn evicts(s: &Settings) -> bool {
    s.evict_fifo || s.evict_sampled.is_some()
}

fn evict_until_under(shared: &Shared, s: &Settings, max_steps: usize) -> Outcome {
    let _one = shared.eviction.running.lock();
    if let Some(policy) = s.evict_sampled {
        return evict_keys(shared, s, policy, KEY_STEPS);
    }
    for _ in 0..max_steps {
        let Some(limit) = over(shared, s) else {
            return Outcome::Under;
        };
        match shared.engine.evict_oldest_segment() {
            Ok(EvictStep::Dropped(e)) => {
                shared
                    .eviction
                    .dataset_bytes
                    .store(shared.engine.dataset_bytes(), Ordering::Relaxed);
                tracing::debug!(
                    "Evicted AOF segment {} ({} bytes): {} keys, {} DEL records",
                    e.file,
                    e.file_bytes,
                    e.keys,
                    e.dels_logged
                );
            }
            Ok(EvictStep::Deferred) => return Outcome::Deferred,
            Ok(EvictStep::NothingLeft) => return Outcome::NothingLeft(limit),
            Err(e) => {
                tracing::warn!("Cache-mode eviction failed: {e}");
                return Outcome::NothingLeft(limit);
            }
        }
    }
    match over(shared, s) {
        None => Outcome::Under,
        Some(_) => Outcome::Deferred,
    }
}

/// Evicts keys one at a time under a sampled policy until under the
/// limit. Only memory shrinks this way: the AOF directory shrinks at the
/// next rewrite.
fn evict_keys(
    shared: &Shared,
    s: &Settings,
    policy: blinkdb_engine::evict_sampled::Policy,
    max_keys: usize,
) -> Outcome {
    let mut sampler = None;
    for _ in 0..max_keys {
        match over(shared, s) {
            None => return Outcome::Under,
            Some(Limit::Disk) => return Outcome::NothingLeft(Limit::Disk),
            Some(Limit::Memory) => {}
        }
        let sampler = sampler.get_or_insert_with(|| shared.engine.eviction_sampler());
        match shared
            .engine
            .evict_sampled(sampler, policy, s.maxmemory_samples)
        {
            Some(freed) => {
                let _ = shared.eviction.dataset_bytes.fetch_update(
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                    |b| Some(b.saturating_sub(freed)),
                );
            }
            None => return Outcome::NothingLeft(Limit::Memory),
        }
    }
    match over(shared, s) {
        None => Outcome::Under,
        Some(_) => Outcome::Deferred,
    }
}

/// The server cron's part: refresh the memory count and evict while over.
pub fn cron(shared: &Shared) {
    let s = shared.settings();
    if !evicts(&s) {
        return;
    }
    if s.maxmemory > 0 {
        shared
            .eviction
            .dataset_bytes
            .store(shared.engine.dataset_bytes(), Ordering::Relaxed);
    }
    if over(shared, &s).is_some() {
        // Not inside a transaction (a command's own eviction runs under the
        // gate its connection holds already).
        if let Some(_gate) = shared.gate.shared_unless(&shared.scripting.busy) {
            evict_until_under(shared, &s, CRON_STEPS);
        }
    }
}

/// The error a write that may add data (`denyoom`) gets, if any: under
/// allkeys-fifo only once nothing is left to evict.
pub fn refusal(shared: &Shared, s: &Settings) -> Option<&'static str> {
    let limit = over(shared, s)?;
    let limit = if evicts(s) {
        match evict_until_under(shared, s, WRITE_STEPS) {
            Outcome::Under | Outcome::Deferred => return None,
            Outcome::NothingLeft(l) => l,
        }
    } else {
        limit
    };
    Some(match limit {
        Limit::Memory => OOM_MEMORY,
        Limit::Disk => OOM_DISK,
    })
}
