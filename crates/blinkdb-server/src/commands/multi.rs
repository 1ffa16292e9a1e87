//! Transactions: MULTI, EXEC, DISCARD, WATCH and UNWATCH, with Redis 7.0's
//! replies. EXEC runs with every other connection held out (exec_gate.rs, taken
//! by the connection before it dispatches EXEC); its writes reach the AOF
//! wrapped in MULTI/EXEC when there is more than one, as Redis propagates them.

use super::table::{self, CommandSpec};
use super::Ctx;
use crate::exec::session::Client;
use crate::exec::Source;
use crate::protocol::{Args, Out};
use crate::server::state::Shared;
use blinkdb_engine::WatchFlag;
use std::sync::Arc;

pub const ERR_EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";

/// The commands queued since MULTI.
#[derive(Default)]
pub struct Transaction {
    /// Each command with its table entry (looked up when it was queued).
    queue: Vec<(&'static CommandSpec, Vec<Vec<u8>>)>,
    /// Union of the queued commands' flags (EXEC is refused as a write, or as
    /// denyoom, if any queued command is one).
    pub flags: u32,
    /// Union of the flags some queued command lacks: EXEC is refused as a
    /// command that does not run on stale data or while loading if any
    /// queued command is one (Redis's `cmd_inv_flags`).
    lacking: u32,
    /// A command was refused while queueing: EXEC must abort.
    errored: bool,
    bytes: usize,
}

impl Transaction {
    /// The queued command lines (cluster routing judges them at EXEC).
    pub fn queued(&self) -> &[(&'static CommandSpec, Vec<Vec<u8>>)] {
        &self.queue
    }
}

/// The keys this client WATCHes, and the flag their shards mark.
pub struct Watching {
    flag: Arc<WatchFlag>,
    /// A set: WATCH of many keys stays linear.
    keys: hashbrown::HashSet<(usize, Box<[u8]>)>,
    /// What `keys` and the engine's watcher entries hold (client memory).
    bytes: usize,
}

/// Per watched key besides its name: this set's entry and the engine's
/// reference to the flag.
const PER_WATCHED_KEY: usize =
    std::mem::size_of::<(usize, Box<[u8]>)>() + std::mem::size_of::<Arc<WatchFlag>>();

/// Marks the open transaction failed (a command was refused at queue time).
pub fn flag_error(client: &mut Client) {
    if let Some(tx) = client.multi.as_mut() {
        tx.errored = true;
    }
}

/// The flags a command is checked with before it runs: EXEC takes those of
/// what it will run.
pub fn effective_flags(spec: &CommandSpec, client: &Client) -> u32 {
    match &client.multi {
        Some(tx) if spec.has_prop(table::props::RUNS_QUEUE) => {
            (spec.flags | tx.flags) & !(tx.lacking & ALL_MUST_HAVE)
        }
        _ => spec.flags,
    }
}

/// Flags EXEC has only when every queued command has them.
const ALL_MUST_HAVE: u32 = table::STALE | table::LOADING_OK;

/// Queues a command inside MULTI. Returns false when the queue outgrew
/// `client-query-buffer-limit`: the connection is closed, as for a query buffer
/// that does.
pub fn queue(ctx: &mut Ctx, spec: &'static CommandSpec, args: &Args) -> bool {
    let limit = ctx.client.settings(ctx.shared).client_query_buffer_limit;
    let tx = ctx.client.multi.as_mut().expect("queue outside MULTI");
    tx.bytes += args.iter().map(|a| a.len() + 16).sum::<usize>();
    if tx.bytes > limit {
        tracing::warn!(
            "Closing client that reached max query buffer length in MULTI: id={} (queued {} bytes)",
            ctx.client.id,
            tx.bytes
        );
        ctx.client.close_after_reply = true;
        return false;
    }
    let flags = crate::scripting::command_flags(ctx.shared, spec, args);
    tx.flags |= flags;
    tx.lacking |= !flags;
    tx.queue
        .push((spec, args.iter().map(|a| a.to_vec()).collect()));
    let queued = (tx.queue.len(), tx.bytes);
    ctx.client.info.usage.set_multi(Some(queued));
    ctx.out.simple("QUEUED");
    true
}

pub fn multi(ctx: &mut Ctx, _args: &Args) {
    if ctx.client.multi.is_some() {
        return ctx.out.error("ERR MULTI calls can not be nested");
    }
    ctx.client.multi = Some(Transaction::default());
    ctx.client.info.usage.set_multi(Some((0, 0)));
    ctx.out.ok();
}

/// Ends MULTI (EXEC, DISCARD, RESET, a refused EXEC): the open transaction, if any.
pub fn end(client: &mut Client) -> Option<Transaction> {
    let tx = client.multi.take();
    if tx.is_some() {
        client.info.usage.set_multi(None);
    }
    tx
}

pub fn discard(ctx: &mut Ctx, _args: &Args) {
    if end(ctx.client).is_none() {
        return ctx.out.error("ERR DISCARD without MULTI");
    }
    unwatch_all(ctx.shared, ctx.client);
    ctx.out.ok();
}

/// EXEC refused before it runs (any admission check: a busy script, no memory, a
/// read-only replica...): the transaction is discarded and the reply says why, as
/// Redis's execCommandAbort does.
pub fn refuse_exec(shared: &Shared, client: &mut Client, out: &mut Out, reason: &str) {
    end(client);
    unwatch_all(shared, client);
    out.error(&format!(
        "EXECABORT Transaction discarded because of: {reason}"
    ));
}

pub fn exec(ctx: &mut Ctx, _args: &Args) {
    let Some(tx) = end(ctx.client) else {
        return ctx.out.error("ERR EXEC without MULTI");
    };
    if tx.errored {
        unwatch_all(ctx.shared, ctx.client);
        return ctx.out.error(ERR_EXECABORT);
    }
    let touched = watched_key_changed(ctx.shared, ctx.client);
    unwatch_all(ctx.shared, ctx.client);
    if touched {
        return ctx.out.null_array();
    }
    // As before the queue kept entries: a subcommand does not count (its
    // container has no write flag).
    let is_write = |spec: &CommandSpec| !spec.is_subcommand() && spec.has(table::WRITE);
    let writes = tx.queue.iter().filter(|(spec, _)| is_write(spec)).count();
    let wrap = writes > 1;
    // MULTI goes out just before the first write, in its database (after
    // any SELECT queued before it), as Redis propagates it: a replica's
    // stream then reads SELECT, MULTI, the write.
    let mut marked = !wrap;
    // Once EXEC's MULTI is out, a command's own wrapper is left out.
    let mut wrapped = None;
    ctx.out.array(tx.queue.len());
    let deny_blocking = std::mem::replace(&mut ctx.client.deny_blocking, true);
    ctx.client.in_exec = true;
    for (spec, cmd) in &tx.queue {
        if !marked && is_write(spec) {
            log_marker(ctx, b"MULTI");
            wrapped = Some(crate::exec::wrapper::Open::begin());
            marked = true;
        }
        let args: Args = cmd.iter().map(|a| &a[..]).collect();
        let found = Some(Ok(*spec));
        crate::exec::process(ctx.shared, ctx.client, ctx.out, &args, found, Source::Exec);
    }
    ctx.client.deny_blocking = deny_blocking;
    ctx.client.in_exec = false;
    if wrapped.take().is_some() {
        log_marker(ctx, b"EXEC");
    }
}

fn log_marker(ctx: &mut Ctx, name: &[u8]) {
    let (lsn, _) = ctx.shared.engine.log(ctx.client.db, &[name]);
    ctx.client.note_lsn(lsn);
}

pub fn watch(ctx: &mut Ctx, args: &Args) {
    if ctx.client.multi.is_some() {
        return ctx.out.error("ERR WATCH inside MULTI is not allowed");
    }
    let db = ctx.client.db;
    if ctx.client.watching.is_none() {
        let flag = Arc::new(WatchFlag::default());
        ctx.client.info.set_watch(Some(flag.clone()));
        ctx.client.watching = Some(Watching {
            flag,
            keys: hashbrown::HashSet::new(),
            bytes: 0,
        });
    }
    let watching = ctx.client.watching.as_mut().expect("made above");
    for key in &args[1..] {
        if watching.keys.insert((db, (*key).into())) {
            ctx.shared.engine.watch(db, key, &watching.flag);
            watching.bytes += PER_WATCHED_KEY + key.len();
        }
    }
    ctx.client.info.usage.set_watched(watching.bytes);
    ctx.out.ok();
}

pub fn unwatch(ctx: &mut Ctx, _args: &Args) {
    unwatch_all(ctx.shared, ctx.client);
    ctx.out.ok();
}

/// Drops every WATCH of the client (EXEC, DISCARD, UNWATCH, RESET, disconnect).
pub fn unwatch_all(shared: &Shared, client: &mut Client) {
    if let Some(w) = client.watching.take() {
        client.info.set_watch(None);
        client.info.usage.set_watched(0);
        for (db, key) in &w.keys {
            shared.engine.unwatch(*db, key, &w.flag);
        }
    }
}

/// Whether EXEC must fail: a watched key was changed, or has expired since
/// it was watched live.
fn watched_key_changed(shared: &Shared, client: &Client) -> bool {
    let Some(w) = &client.watching else {
        return false;
    };
    w.flag.is_dirty()
        || w.keys
            .iter()
            .any(|(db, key)| shared.engine.watched_key_expired(*db, key, &w.flag))
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("multi", 1, NOSCRIPT | LOADING_OK | STALE | FAST | ALLOW_BUSY | TX_CONTROL, NOKEYS, "transactions", "1.2.0", "Mark the start of a transaction block", multi;
        props: props::TX_OPEN,
        acl: acl::TRANSACTION,
        complexity: "O(1)"),
    cmd!("exec", 1, NOSCRIPT | LOADING_OK | STALE | SKIP_SLOWLOG | TX_CONTROL, NOKEYS, "transactions", "1.2.0", "Execute all commands issued after MULTI", exec;
        props: props::RUNS_QUEUE | props::TX_CLOSE,
        acl: acl::TRANSACTION,
        complexity: "Depends on commands in the transaction"),
    cmd!("discard", 1, NOSCRIPT | LOADING_OK | STALE | FAST | ALLOW_BUSY | TX_CONTROL, NOKEYS, "transactions", "2.0.0", "Discard all commands issued after MULTI", discard;
        props: props::TX_CLOSE,
        acl: acl::TRANSACTION,
        complexity: "O(N), when N is the number of queued commands"),
    cmd!("watch", -2, NOSCRIPT | LOADING_OK | STALE | FAST | ALLOW_BUSY | TX_CONTROL, ALLKEYS, "transactions", "2.2.0", "Watch the given keys to determine execution of the MULTI/EXEC block", watch;
        acl: acl::TRANSACTION,
        complexity: "O(1) for every key.",
        keys: "RO index:1 range:-1:1:0",
        args: "key:key*"),
    cmd!("unwatch", 1, NOSCRIPT | LOADING_OK | STALE | FAST | ALLOW_BUSY, NOKEYS, "transactions", "2.2.0", "Forget about all watched keys", unwatch;
        acl: acl::TRANSACTION,
        complexity: "O(1)"),
];
