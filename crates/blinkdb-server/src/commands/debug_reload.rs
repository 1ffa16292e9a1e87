//! DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE], as redis-server 7.0's debug.c:
//! SAVE to `dir/dbfilename`, empty the dataset (keys and function
//! libraries), load the file back. Nothing is logged or propagated: the
//! dataset is the same before and after, as in Redis. The command runs alone
//! (the table's `alone_if`), so no other command sees it half-way.
//!
//! With the AOF on, the AOF still describes the dataset after a reload, but
//! it names the Bloom filters that were replaced (a filter's files go when
//! its value is dropped): a rewrite then puts the reloaded keyspace in a new
//! base, and the replaced values are dropped only after it. Large values the
//! log held stay there: a reloaded string equal to one (length and xxh3) is
//! pointed back at its place in the log instead of being kept in memory.

use super::args::eq_ic;
use super::Ctx;
use crate::persistence::rdb_file::{self, Dups};
use crate::protocol::Args;
use crate::server::dataset::Aside;
use blinkdb_engine::{BlobRef, Entry, Origin, Value};
use std::ops::ControlFlow;
use std::sync::atomic::Ordering;

/// The table's `alone_if`: RELOAD and LOADAOF replace the dataset, so no
/// other client's command may interleave (as Redis's single thread).
pub fn runs_alone(args: &[&[u8]]) -> bool {
    args.get(1)
        .is_some_and(|s| eq_ic(s, "reload") || eq_ic(s, "loadaof"))
}

pub fn reload(ctx: &mut Ctx, args: &Args) {
    let (mut flush, mut save, mut dups) = (true, true, Dups::Refuse);
    for opt in &args[2..] {
        if eq_ic(opt, "merge") {
            dups = Dups::Replace;
        } else if eq_ic(opt, "noflush") {
            flush = false;
        } else if eq_ic(opt, "nosave") {
            save = false;
        } else {
            return ctx
                .out
                .error("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.");
        }
    }
    let shared = ctx.shared;
    if save {
        // Redis's rdbSave runs beside a BGSAVE child; here they would share
        // the temp file, so the SAVE waits for the BGSAVE to end.
        while shared
            .persistence
            .rdb_save
            .in_progress
            .load(Ordering::Acquire)
        {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        if rdb_file::save(shared).is_err() {
            // Redis 7.0.15 answers its shared.err, a bare "-ERR".
            return ctx.out.error("ERR");
        }
    }
    let engine = &shared.engine;
    let in_log = large_values_in_log(engine);
    let taken = flush.then(|| Aside::take(shared));
    let settings = shared.settings();
    let loaded = while_loading(shared, || {
        blinkdb_engine::unlogged(|| {
            rdb_file::import_with(shared, &settings, &rdb_file::path(&settings), dups)
        })
    });
    if let Err(e) = loaded {
        tracing::warn!("DEBUG RELOAD: {e}");
        if let Some(aside) = taken {
            // Unlike Redis, which is left with what loaded (often nothing),
            // the dataset comes back: the AOF still holds it, and memory
            // stays what the AOF and the replicas hold.
            aside.put_back(shared);
        }
        return ctx.out.error("ERR Error trying to load the RDB dump");
    }
    let kept = back_into_log(engine, in_log);
    if kept > 0 {
        tracing::info!("DEBUG RELOAD: {kept} large values left in the log");
    }
    if let Some(aside) = taken {
        if let Err(e) = crate::persistence::rewrite_then_drop(&shared.arc(), aside.into_keys()) {
            if !e.contains("appendonly is off") {
                tracing::warn!("DEBUG RELOAD: the AOF rewrite did not start: {e}");
            }
        }
    }
    tracing::warn!("DB reloaded by DEBUG RELOAD");
    ctx.out.ok();
}

/// Runs a load with the server marked loading (INFO's loading fields).
fn while_loading<R>(shared: &crate::server::state::Shared, load: impl FnOnce() -> R) -> R {
    shared
        .persistence
        .loading
        .start_ms
        .store(shared.clock(), Ordering::Relaxed);
    shared.engine.set_loading(true);
    let r = load();
    shared.engine.set_loading(false);
    r
}

/// Calls `f` with every key of every database, until it breaks.
fn scan_all(
    engine: &blinkdb_engine::Engine,
    mut f: impl FnMut(usize, &[u8], &Entry) -> ControlFlow<()>,
) {
    for db in 0..engine.databases() {
        let mut cursor = 0;
        let mut stop = false;
        loop {
            cursor = engine.scan(db, cursor, 1024, |key, e| {
                stop = stop || f(db, key, e).is_break();
            });
            if stop {
                return;
            }
            if cursor == 0 {
                break;
            }
        }
    }
}

/// A key whose value was a large value in the log: its place there and its
/// entry's label (the segment it came from, cache mode's eviction unit).
type InLog = (usize, Vec<u8>, BlobRef, Origin);

/// Every key whose value is a large value in the log.
fn large_values_in_log(engine: &blinkdb_engine::Engine) -> Vec<InLog> {
    let mut found = Vec::new();
    if engine.log_handle().is_none() {
        return found;
    }
    scan_all(engine, |db, key, e| {
        if let Value::Blob(r, _) = e.value() {
            found.push((db, key.to_vec(), **r, e.origin()));
        }
        ControlFlow::Continue(())
    });
    found
}

/// Points each reloaded string equal to a large value the log held back at
/// its place in the log (its TTL and the rest of its entry kept). Returns
/// how many.
fn back_into_log(engine: &blinkdb_engine::Engine, in_log: Vec<InLog>) -> usize {
    let mut moved = 0;
    for (db, key, r, origin) in in_log {
        let (done, _) = engine.write1(db, &key, |tx| {
            let Some(e) = tx.get(db, &key) else {
                return false;
            };
            let same = matches!(e.value(), Value::Str(s, _)
                if s.len() as u64 == r.len && xxhash_rust::xxh3::xxh3_64(s) == r.checksum);
            if !same {
                return false;
            }
            let mut entry = Entry::new(Value::blob(r));
            entry.expire_at = e.expire_at;
            // The record holding the value is where it was before the
            // reload: the entry keeps that label (`insert` keeps a set one).
            entry.set_origin(origin);
            tx.insert(db, &key, entry);
            true
        });
        moved += usize::from(done);
    }
    moved
}

/// DEBUG LOADAOF: empties the dataset and replays the AOF's files into it,
/// as Redis's; nothing is logged or propagated. Where redis-server 7.0.15
/// exits (no AOF, a load that fails), this answers Redis 7.2's error and
/// keeps the dataset it had.
pub fn loadaof(ctx: &mut Ctx) {
    let shared = ctx.shared;
    let engine = &shared.engine;
    let refuse = |ctx: &mut Ctx, why: &str| {
        tracing::warn!("DEBUG LOADAOF: {why}");
        ctx.out
            .error("ERR Error loading the AOF, check server logs.")
    };
    if engine.log_handle().is_none() || !shared.settings().appendonly {
        return refuse(ctx, "appendonly is off (redis-server 7.0.15 exits here)");
    }
    let rewrite = &shared.persistence.rewrite;
    if rewrite.scheduled.swap(false, Ordering::AcqRel) {
        // CONFIG SET appendonly yes: the AOF holds the dataset once its
        // first rewrite is done (the cron would start it, after this).
        let _ = crate::persistence::start_rewrite(&shared.arc());
    }
    // DEBUG RELOAD's rewrite counts as pending before its thread claims
    // started_ms: without it, a LOADAOF right after could replay the files
    // while that rewrite switched them.
    while rewrite.started_ms.load(Ordering::Acquire) != 0
        || rewrite.pending.load(Ordering::Acquire) != 0
    {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    if !engine.logging() {
        return refuse(ctx, "the AOF is not written to (its rewrite failed)");
    }
    if holds_filters(engine) {
        // A filter's files go with its value, and the AOF may name them.
        return refuse(
            ctx,
            "the dataset holds Bloom filters, which LOADAOF does not reload",
        );
    }
    let aside = Aside::take(shared);
    let settings = shared.settings();
    let loaded = while_loading(shared, || crate::persistence::reload_aof(shared, &settings));
    match loaded {
        Ok(n) => {
            aside.discard(shared);
            tracing::warn!("Append Only File loaded by DEBUG LOADAOF: {n} keys");
            ctx.out.ok();
        }
        Err(e) => {
            // What loaded goes; the dataset of before comes back.
            aside.put_back(shared);
            refuse(ctx, &e)
        }
    }
}

fn holds_filters(engine: &blinkdb_engine::Engine) -> bool {
    let mut found = false;
    scan_all(engine, |_, _, e| {
        found = matches!(e.value(), Value::Bloom(..));
        if found {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    found
}
