//! WAITAOF numlocal numreplicas timeout (Redis 7.2): blocks until this server's AOF
//! fsync'd everything the client wrote (numlocal 1) and `numreplicas` replicas reported
//! (REPLCONF ACK ... FACK) their AOF fsync'd the stream up to now, then answers both
//! counts, as Redis 8.0 does.
//!
//! What it can honestly promise: the local count is 1 only once an fdatasync covers the
//! highest log position the client's writes reached (its own, not the others' since);
//! replicas count by the stream offset at the call, the whole stream as WAIT takes it
//! (Redis takes the client's last write offset, never later than that). Like Redis it asks
//! for no fsync itself: under `everysec` the next periodic one answers, under `no` only
//! the timeout (or a sync for another reason: a policy change, a rewrite's switch).

use std::sync::atomic::Ordering;

use blinkdb_engine::Lsn;

use crate::commands::args::parse_i64;
use crate::commands::Ctx;
use crate::exec::blocking::TimeoutReply;
use crate::protocol::{Args, Out};
use crate::server::state::Shared;

const AOF_OFF: &str = "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.";

pub fn waitaof(ctx: &mut Ctx, args: &Args) {
    let numlocal = match parse_i64(args[1]) {
        None => return ctx.out.error("ERR value is not an integer or out of range"),
        Some(n) if !(0..=1).contains(&n) => {
            return ctx
                .out
                .error("ERR value is out of range, value must between 0 and 1")
        }
        Some(n) => n,
    };
    let numreplicas = match parse_i64(args[2]) {
        Some(n) if n >= 0 => n,
        _ => return ctx.out.error("ERR value is out of range, must be positive"),
    };
    let end = match crate::commands::conn::timeout_ms(args[3]) {
        Ok(end) => end,
        Err(e) => return ctx.out.error(e),
    };
    let repl = &ctx.shared.replication;
    if repl.link.is_replica.load(Ordering::Acquire) {
        return ctx.out.error("ERR WAITAOF cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated.");
    }
    let log = local_log(ctx.shared);
    if numlocal == 1 && log.is_none() {
        return ctx.out.error(AOF_OFF);
    }
    // Everything this client logged, including this batch's writes not yet written out.
    let lsn = ctx.client.woff_lsn.max(ctx.client.pending_lsn);
    let local = log.as_ref().is_some_and(|l| l.aof.synced_lsn().0 >= lsn);
    let (offset, replicas) = {
        let b = repl.feed.lock();
        (b.offset, b.aof_acked(b.offset))
    };
    if (replicas as i64 >= numreplicas && i64::from(local) >= numlocal) || ctx.client.deny_blocking
    {
        ctx.out.array(2);
        ctx.out.int(i64::from(local));
        return ctx.out.int(replicas as i64);
    }
    let reply = TimeoutReply::AofAcks {
        offset,
        lsn,
        local: numlocal == 1,
    };
    let waiter = ctx
        .shared
        .exec
        .blocking
        .block_for_acks(ctx.client, args, end, reply);
    let id = ctx.client.id;
    let local_pending = numlocal == 1 && !local;
    let ended = repl.feed.add_aof_wait(
        id,
        offset,
        numreplicas as usize,
        numlocal == 1,
        local_pending,
    );
    if let (true, Some(log)) = (local_pending, log) {
        // Watches the local fsync until it covers `lsn` or the wait ends otherwise.
        let shared = ctx.shared.arc();
        drop(tokio::spawn(async move {
            tokio::select! {
                synced = log.aof.synced_past(Lsn(lsn)) => {
                    if synced.is_ok() && shared.replication.feed.local_synced(id) {
                        shared.exec.blocking.wake_wait(&shared, id);
                    }
                }
                _ = ended.notified() => {}
            }
        }));
    }
    ctx.client.block = Some(crate::exec::session::Block::Waiting(waiter));
}

/// CONFIG SET appendonly no answers the WAITAOFs blocked with numlocal 1 at
/// once, with the error a new one gets (Redis 8.0 checks them on every event
/// loop turn), rather than at their timeout.
pub const APPENDONLY_ON_SET: crate::config::OnSet<Shared> = crate::config::OnSet {
    options: &["appendonly"],
    stage: crate::config::Stage::AfterCommit,
    apply: |shared, settings, _| {
        if !settings.appendonly {
            for id in shared.replication.feed.end_local_aof_waits() {
                shared.exec.blocking.wake_wait(shared, id);
            }
        }
        Ok(())
    },
};

/// The AOF when `appendonly` is on (the log may outlive it: cache mode, a switch off).
fn local_log(shared: &Shared) -> Option<std::sync::Arc<blinkdb_engine::Log>> {
    let on = shared.settings().appendonly;
    shared.engine.log_handle().filter(|_| on).cloned()
}

/// The reply of a WAITAOF whose wait ended (enough acknowledgements, or its timeout).
pub fn reply(shared: &Shared, out: &mut Out, offset: u64, lsn: u64, local: bool) {
    let log = local_log(shared);
    if local && log.is_none() {
        return out.error(AOF_OFF);
    }
    let synced = log.is_some_and(|l| l.aof.synced_lsn().0 >= lsn);
    let replicas = shared.replication.feed.lock().aof_acked(offset);
    out.array(2);
    out.int(i64::from(synced));
    out.int(replicas as i64);
}
