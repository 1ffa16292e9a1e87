//! How a replica restarted (kill -9 included) knows where it is in its
//! master's stream, so that it can PSYNC on instead of syncing in full.
//!
//! Redis keeps `repl-id`/`repl-offset` in its RDB's aux fields; BlinkDB
//! persists through its AOF, whose records are its own (not the master's
//! stream bytes), so the offset cannot be recounted from it. Instead the
//! link writes `dir/replica-checkpoint` once a second while streaming, at a
//! point where every applied command is in the AOF and fsynced:
//!
//! ```text
//! <replid> <offset> <AOF base file name or -> <AOF bytes (base + incr files)>
//! ```
//!
//! At start, after the AOF is loaded, the checkpoint is used only if the AOF
//! is exactly what it was then (same base file, same size): then the data
//! is the master's stream up to `offset`, and the link asks `PSYNC replid
//! offset+1`. Any other AOF (writes applied after the checkpoint survived,
//! a rewrite, local writes on a writable replica) means a full sync.

use crate::server::state::Shared;
use std::path::PathBuf;

const FILE: &str = "replica-checkpoint";

fn path(shared: &Shared) -> PathBuf {
    shared.settings().dir.join(FILE)
}

/// The AOF as the checkpoint names it: base file and total size.
fn aof_signature(shared: &Shared) -> Option<(String, u64)> {
    let log = shared.engine.log_handle()?;
    let base = log
        .aof
        .manifest()
        .base
        .map_or_else(|| "-".to_string(), |b| b.name);
    Some((base, log.aof.current_size()))
}

/// Writes the checkpoint for `replid`/`offset` (the AOF synced first);
/// nothing without an AOF.
pub fn save(shared: &Shared, replid: &str, offset: u64) {
    let Some(log) = shared.engine.log_handle() else {
        return;
    };
    if let Err(e) = log.aof.flush_all() {
        tracing::warn!("Replica checkpoint: syncing the AOF failed: {e}");
        return;
    }
    let Some((base, size)) = aof_signature(shared) else {
        return;
    };
    let text = format!("{replid} {offset} {base} {size}\n");
    let target = path(shared);
    let tmp = target.with_extension("tmp");
    let written = std::fs::write(&tmp, text.as_bytes())
        .and_then(|()| std::fs::File::open(&tmp)?.sync_all())
        .and_then(|()| std::fs::rename(&tmp, &target));
    if let Err(e) = written {
        tracing::warn!("Writing {}: {e}", target.display());
    }
}

/// Forgets the checkpoint (a promoted replica's data is its own).
pub fn remove(shared: &Shared) {
    let _ = std::fs::remove_file(path(shared));
}

/// The replication id and offset to PSYNC with after a restart, if the
/// checkpoint matches the AOF just loaded.
pub fn load(shared: &Shared) -> Option<(String, u64)> {
    let text = std::fs::read_to_string(path(shared)).ok()?;
    let mut w = text.split_whitespace();
    let replid = w.next()?.to_string();
    let offset: u64 = w.next()?.parse().ok()?;
    let base = w.next()?;
    let size: u64 = w.next()?.parse().ok()?;
    let (now_base, now_size) = aof_signature(shared)?;
    if replid.len() != 40 || base != now_base || size != now_size {
        tracing::info!(
            "Replica checkpoint {replid}:{offset} does not match the AOF loaded (base {now_base}, {now_size} bytes; checkpoint: {base}, {size}): a full sync follows"
        );
        return None;
    }
    tracing::info!("Replica checkpoint matches the AOF: resuming replication at {replid}:{offset}");
    Some((replid, offset))
}
