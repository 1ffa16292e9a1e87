//! Runs an admitted command and does what Redis's call() does around it:
//! the per-command statistics and error counts, the slow log, the latency
//! monitor, MONITOR's feed, and client-side tracking. Propagation to the
//! AOF and replicas, and keyspace events, happen in the engine as the
//! handler writes (each write is logged with the transaction that makes it).

use crate::commands::table::{self, CommandSpec};
use crate::commands::{access, monitor, tracking, Ctx};
use crate::protocol::Args;

/// Runs a command a client (or EXEC, or our master) sent.
pub fn call(ctx: &mut Ctx, spec: &'static CommandSpec, args: &Args) {
    ctx.client.commands_processed += 1;
    ctx.out.errors_accounted = ctx.out.errors;
    let timer = crate::exec::stats::Timer::start();
    access::run(ctx, spec, args);
    let nanos = timer.elapsed_nanos();
    if let Some(crate::exec::session::Block::Waiting(w)) = &ctx.client.block {
        w.set_duration(nanos);
    }
    // Error replies it caused elsewhere (CLIENT UNBLOCK ERROR) fail it too,
    // as Redis's failed_calls follows the server's error count.
    let failed = ctx.out.errors > ctx.out.errors_accounted || ctx.out.foreign_errors > 0;
    ctx.out.errors_accounted = ctx.out.errors;
    ctx.out.foreign_errors = 0;
    if ctx.client.tracking.is_some() {
        tracking::after_command(ctx, spec, args);
    }
    if let Some(run) = ctx.client.script.as_mut() {
        // The script paused past its busy threshold: its call counts now (as a
        // blocked command's), its time, failure and slow log entry when it ends.
        run.paused_call = Some(PausedCall {
            spec,
            args: args.iter().map(|a| a.to_vec()).collect(),
            nanos,
            timer: crate::exec::stats::Timer::start(),
        });
    }
    after_call(ctx, spec, args, nanos, failed, false);
}

/// An EVAL or FCALL whose script paused: what its end still has to count.
pub struct PausedCall {
    spec: &'static CommandSpec,
    args: Vec<Vec<u8>>,
    /// Its time until the pause (already counted).
    nanos: u64,
    timer: crate::exec::stats::Timer,
}

/// A paused script has ended: the rest of its time, its failure, its
/// latency sample and slow log entry (Redis counts them when call() returns,
/// at the script's end).
pub fn count_resumed(
    shared: &crate::server::state::Shared,
    client: &mut crate::exec::session::Client,
    paused: PausedCall,
    failed: bool,
) {
    let settings = client.settings(shared);
    let (histogram, slower_than, max_len, threshold) = (
        settings.latency_tracking,
        settings.slowlog_log_slower_than,
        settings.slowlog_max_len,
        settings.latency_monitor_threshold_ms,
    );
    let more = paused.timer.elapsed_nanos();
    let total = paused.nanos + more;
    if let Some(i) = paused.spec.index() {
        crate::exec::stats::record_resumed(i, more, total, failed, histogram);
    }
    let micros = total / 1000;
    if slower_than >= 0
        && micros >= slower_than as u64
        && max_len > 0
        && !paused.spec.has(table::SKIP_SLOWLOG)
    {
        let args: Args = paused.args.iter().map(Vec::as_slice).collect();
        shared
            .diagnostics
            .slowlog
            .push(&client.info, paused.spec, &args, micros, max_len);
    }
    shared
        .diagnostics
        .latency
        .add_if_needed("command", total / 1_000_000, threshold);
}

/// Runs a command a script called (into the script's own reply buffer);
/// `logged`: its writes reach the AOF and replicas (redis.set_repl). A
/// script's calls never block. Returns the time it took.
pub fn call_in_script(ctx: &mut Ctx, spec: &'static CommandSpec, args: &Args, logged: bool) -> u64 {
    ctx.client.commands_processed += 1;
    // A script never blocks: BLMPOP and the like answer at once, as in Redis.
    let deny_blocking = std::mem::replace(&mut ctx.client.deny_blocking, true);
    let timer = crate::exec::stats::Timer::start();
    if logged {
        access::run_in_script(ctx, spec, args);
    } else {
        // redis.set_repl without REPL_AOF: applied, not logged.
        blinkdb_engine::unlogged(|| access::run_in_script(ctx, spec, args));
    }
    let nanos = timer.elapsed_nanos();
    ctx.client.deny_blocking = deny_blocking;
    // Counted as Redis counts a script's calls: INFO commandstats, the slow
    // log, latency and MONITOR (as `lua`).
    let failed = ctx.out.errors > 0;
    after_call(ctx, spec, args, nanos, failed, true);
    nanos
}

/// What Redis does after a command ran: statistics, the slow log, the
/// latency monitor and MONITOR's feed (`by_script`: a script ran it, and
/// MONITOR names it `lua`).
pub fn after_call(
    ctx: &mut Ctx,
    spec: &CommandSpec,
    args: &Args,
    nanos: u64,
    failed: bool,
    by_script: bool,
) {
    let settings = ctx.client.settings(ctx.shared);
    let (histogram, slower_than, max_len, threshold) = (
        settings.latency_tracking,
        settings.slowlog_log_slower_than,
        settings.slowlog_max_len,
        settings.latency_monitor_threshold_ms,
    );
    // A command that blocked gets its latency sample and slow log entry
    // when it is served or unblocked (blocking::count_unblocked), as in Redis.
    let blocked = ctx.client.block.is_some() || ctx.client.script.is_some();
    if let Some(i) = spec.index() {
        crate::exec::stats::record_call(i, nanos, failed, histogram && !blocked);
    }
    let micros = nanos / 1000;
    if !blocked
        && slower_than >= 0
        && micros >= slower_than as u64
        && max_len > 0
        && !spec.has(table::SKIP_SLOWLOG)
    {
        let info = &ctx.client.info;
        ctx.shared
            .diagnostics
            .slowlog
            .push(info, spec, args, micros, max_len);
    }
    // A paused script's sample is taken at its end (count_resumed).
    if threshold > 0 && ctx.client.script.is_none() {
        let event = if spec.has(table::FAST) {
            "fast-command"
        } else {
            "command"
        };
        ctx.shared
            .diagnostics
            .latency
            .add_if_needed(event, nanos / 1_000_000, threshold);
    }
    if ctx.shared.diagnostics.monitors.active() && !spec.has(table::SKIP_MONITOR | table::ADMIN) {
        let from = (!by_script).then_some(&*ctx.client.info);
        monitor::feed(
            &ctx.shared.diagnostics.monitors,
            from,
            ctx.client.db,
            spec,
            args,
        );
    }
}
