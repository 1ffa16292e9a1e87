//! Eviction from the server's side: when the limits are passed, when to
//! evict (before a write, as Redis's performEvictions before a command, and
//! the server cron) and when a write is refused. The engine decides what an eviction drops: whole log
//! segments in cache mode (allkeys-fifo), sampled keys under Redis's
//! policies (evict_sampled.rs).

use crate::config::Settings;
use crate::memory::Host;
use blinkdb_engine::EvictStep;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub const OOM_MEMORY: &str = "OOM command not allowed when used memory > 'maxmemory'.";
pub const OOM_DISK: &str = "OOM command not allowed when the AOF directory > 'max-disk-size'.";

/// Segments one cron tick drops at most, so a tick stays short.
const CRON_STEPS: usize = 16;
/// Segments a write may drop before it runs.
const WRITE_STEPS: usize = 64;
/// How long a cron tick may go on evicting keys that commands left over
/// (Redis goes on in an event-loop timer, evictionTimeProc, between
/// commands; the cron runs every 100 ms, so half of that).
const CRON_TIME: Duration = Duration::from_millis(50);

#[derive(Default)]
pub struct EvictionState {
    /// One evicting thread at a time; others wait, then see the new sizes.
    running: Mutex<()>,
    /// Since when (us on `since_start`'s clock, 0: not over) eviction could
    /// not bring memory under the limit, and the earlier such spells' total:
    /// INFO's current_/total_eviction_exceeded_time, as Redis measures them.
    exceeded_since_us: AtomicU64,
    exceeded_total_us: AtomicU64,
}

/// Microseconds on a clock of the process's own (never 0).
fn since_start() -> u64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_micros() as u64 + 1
}

impl EvictionState {
    /// Notes whether eviction left memory over the limit (Redis's
    /// EVICT_RUNNING/EVICT_FAIL) or under it (EVICT_OK).
    fn note(&self, over: bool) {
        let since = self.exceeded_since_us.load(Ordering::Relaxed);
        if over && since == 0 {
            let _ = self.exceeded_since_us.compare_exchange(
                0,
                since_start(),
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        } else if !over && since != 0 {
            let ended = self.exceeded_since_us.swap(0, Ordering::Relaxed);
            if ended != 0 {
                self.exceeded_total_us
                    .fetch_add(since_start().saturating_sub(ended), Ordering::Relaxed);
            }
        }
    }

    /// (current, total) milliseconds over the limit; the total includes the
    /// current spell, as Redis's INFO.
    pub fn exceeded_ms(&self) -> (u64, u64) {
        let since = self.exceeded_since_us.load(Ordering::Relaxed);
        let current = if since == 0 {
            0
        } else {
            since_start().saturating_sub(since)
        };
        let total = self.exceeded_total_us.load(Ordering::Relaxed) + current;
        (current / 1000, total / 1000)
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&self) {
        self.exceeded_since_us.store(0, Ordering::Relaxed);
        self.exceeded_total_us.store(0, Ordering::Relaxed);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Limit {
    Memory,
    Disk,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Under,
    /// Still over, but out of time (or a rewrite is switching files): the
    /// command runs and the cron goes on, as Redis's EVICT_RUNNING.
    Deferred,
    NothingLeft(Limit),
}

/// Which limit is passed, if any. Memory is Redis's: used_memory less the
/// replicas' output beyond the backlog and the AOF buffer
/// (`mem_not_counted_for_evict`), so that evicting cannot be what keeps it
/// from shrinking.
fn over(h: &impl Host, s: &Settings) -> Option<Limit> {
    if memory_excess(h, s) > 0 {
        return Some(Limit::Memory);
    }
    if s.max_disk_size > 0 {
        if let Some(log) = h.engine().log_handle() {
            if log.aof.current_size() > s.max_disk_size {
                return Some(Limit::Disk);
            }
        }
    }
    None
}

/// How far the memory maxmemory counts is over it (0: not over, or no limit).
fn memory_excess(h: &impl Host, s: &Settings) -> u64 {
    if s.maxmemory == 0 {
        return 0;
    }
    crate::memory::used_memory(h)
        .saturating_sub(crate::memory::not_counted(h))
        .saturating_sub(s.maxmemory)
}

/// Whether the policy evicts anything.
fn evicts(s: &Settings) -> bool {
    s.evict_fifo || s.evict_sampled.is_some()
}

/// How long one command may evict (Redis's evictionTimeLimitUs): 50 us a
/// step up to tenacity 10, then 15% more a step; None (no limit) at 100.
pub fn time_limit(tenacity: u32) -> Option<Duration> {
    match tenacity {
        0..=10 => Some(Duration::from_micros(50 * tenacity as u64)),
        11..=99 => Some(Duration::from_micros(
            (500.0 * 1.15f64.powi(tenacity as i32 - 10)) as u64,
        )),
        _ => None,
    }
}

fn evict_until_under(
    h: &impl Host,
    s: &Settings,
    max_steps: usize,
    time: Option<Duration>,
) -> Outcome {
    let _one = h.eviction().running.lock();
    if let Some(policy) = s.evict_sampled {
        return evict_keys(h, s, policy, time);
    }
    for _ in 0..max_steps {
        let Some(limit) = over(h, s) else {
            return Outcome::Under;
        };
        match h.engine().evict_oldest_segment() {
            Ok(EvictStep::Dropped(e)) => {
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
    match over(h, s) {
        None => Outcome::Under,
        Some(_) => Outcome::Deferred,
    }
}

/// Evicts keys one at a time under a sampled policy, as Redis's
/// performEvictions: the excess is measured once, then keys go until the
/// entries dropped add up to it (or memory is found under the limit), and
/// every 16 keys the time spent is checked against `time`. What dropping a
/// key queues (tracking invalidations to clients, the DEL for the AOF and
/// replicas) is not set against it: that memory is freed once sent, and
/// counting it would evict for it, the invalidations of those keys then
/// evicting more, until the keyspace is empty. The next check measures
/// again. Only memory shrinks this way: the AOF directory shrinks at the
/// next rewrite.
fn evict_keys(
    h: &impl Host,
    s: &Settings,
    policy: blinkdb_engine::EvictionPolicy,
    time: Option<Duration>,
) -> Outcome {
    let started = Instant::now();
    let mut sampler = None;
    let mut keys = 0u64;
    let mut freed = 0u64;
    let to_free = memory_excess(h, s);
    loop {
        match over(h, s) {
            None => return Outcome::Under,
            Some(Limit::Disk) => return Outcome::NothingLeft(Limit::Disk),
            Some(Limit::Memory) if freed >= to_free => return Outcome::Under,
            Some(Limit::Memory) => {}
        }
        let sampler = sampler.get_or_insert_with(|| h.engine().eviction_sampler());
        let Some(bytes) = h
            .engine()
            .evict_sampled(sampler, policy, s.maxmemory_samples)
        else {
            return Outcome::NothingLeft(Limit::Memory);
        };
        freed += bytes;
        keys += 1;
        if keys.is_multiple_of(16) && time.is_some_and(|t| started.elapsed() > t) {
            return Outcome::Deferred;
        }
    }
}

/// The server cron's part: evict while over, as Redis's evictionTimeProc
/// goes on with what commands left.
pub fn cron(h: &impl Host) {
    let s = h.settings();
    if over(h, &s).is_none() {
        h.eviction().note(false);
        return;
    }
    if !evicts(&s) {
        return;
    }
    // Not inside a transaction (a command's own eviction runs under the
    // gate its connection holds already).
    h.between_commands(&mut || {
        let outcome = evict_until_under(h, &s, CRON_STEPS, Some(CRON_TIME));
        h.eviction().note(outcome != Outcome::Under);
    });
}

/// Evicts while over a limit, then the error a command that may add data
/// (`denyoom`) gets, if any: under an evicting policy only once nothing is
/// left to evict (out of time, the command runs and the cron goes on).
pub fn refusal(h: &impl Host, s: &Settings) -> Option<&'static str> {
    let Some(limit) = over(h, s) else {
        h.eviction().note(false);
        return None;
    };
    let limit = if evicts(s) {
        let time = time_limit(s.maxmemory_eviction_tenacity);
        let outcome = evict_until_under(h, s, WRITE_STEPS, time);
        h.eviction().note(outcome != Outcome::Under);
        match outcome {
            Outcome::Under | Outcome::Deferred => return None,
            Outcome::NothingLeft(l) => l,
        }
    } else {
        h.eviction().note(true);
        limit
    };
    Some(match limit {
        Limit::Memory => OOM_MEMORY,
        Limit::Disk => OOM_DISK,
    })
}
