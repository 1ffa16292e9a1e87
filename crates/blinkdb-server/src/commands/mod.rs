//! The command table and dispatch: look up, check arity/auth/loading, run.

pub mod access;
pub mod args;
mod bitfield;
mod bitops;
mod bloom;
mod bpop;
pub mod collection;
mod command;
pub(crate) mod conn;
mod debug;
mod digest;
mod dump;
mod geo;
mod geohash;
mod hash;
mod hyperloglog;
mod keys;
pub mod latency;
mod lcs;
mod list;
pub mod migrate;
pub mod monitor;
pub mod multi;
mod object;
mod pqsort;
mod pubsub;
mod random;
mod scripting;
mod server;
mod set;
pub mod slowlog;
pub mod sort;
pub mod spec;
mod stream;
mod stream_group;
mod stream_info;
mod strings;
pub mod table;
pub mod tracking;
mod zrange;
mod zset;
mod zsetops;

use crate::client::Client;
use crate::protocol::{Args, Out};
use crate::state::Shared;
use args::ERR_WRONGTYPE;
use blinkdb_engine::Tx;

pub use table::{lookup, CommandSpec, COMMANDS};

/// What a handler sees: the server, the calling client, and its reply buffer.
pub struct Ctx<'a> {
    pub shared: &'a Shared,
    pub client: &'a mut Client,
    pub out: &'a mut Out,
}

pub type Handler = fn(&mut Ctx, &Args);

impl Ctx<'_> {
    pub fn db(&self) -> usize {
        self.client.db
    }

    /// Runs a write on one key of the current database, remembering the log
    /// position so the reply waits for it as the fsync policy requires.
    #[inline]
    pub fn write1<R>(&mut self, key: &[u8], f: impl FnOnce(&mut Tx, usize, &mut Out) -> R) -> R {
        let (db, id) = (self.client.db, self.client.id);
        let out = &mut *self.out;
        let (r, lsn) = self.shared.engine.write1(db, key, |tx| {
            tx.set_client(id);
            f(tx, db, out)
        });
        self.client.note_lsn(lsn);
        r
    }

    /// Runs a write over several keys (possibly in several databases).
    pub fn write<R>(
        &mut self,
        keys: &[(usize, &[u8])],
        f: impl FnOnce(&mut Tx, &mut Out) -> R,
    ) -> R {
        let (out, id) = (&mut *self.out, self.client.id);
        let (r, lsn) = self.shared.engine.write(keys, |tx| {
            tx.set_client(id);
            f(tx, out)
        });
        self.client.note_lsn(lsn);
        r
    }

    pub fn wrongtype(&mut self) {
        self.out.error(ERR_WRONGTYPE);
    }

    pub fn arity_error(&mut self, name: &str) {
        self.out.error(&format!(
            "ERR wrong number of arguments for '{name}' command"
        ));
    }

    pub fn syntax_error(&mut self) {
        self.out.error(args::ERR_SYNTAX);
    }
}

/// Redis's text for an unknown command: up to 128 bytes of the name and of
/// the arguments, each cut at its first NUL (Redis formats C strings).
pub fn unknown_command(args: &Args) -> Vec<u8> {
    fn c_str(b: &[u8], max: usize) -> &[u8] {
        let b = &b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())];
        &b[..b.len().min(max)]
    }
    let mut rest: Vec<u8> = Vec::new();
    for a in args.iter().skip(1) {
        if rest.len() >= 128 {
            break;
        }
        let room = 128 - rest.len();
        rest.push(b'\'');
        rest.extend_from_slice(c_str(a, room));
        rest.extend_from_slice(b"' ");
    }
    let mut msg = b"ERR unknown command '".to_vec();
    msg.extend_from_slice(c_str(args[0], 128));
    msg.extend_from_slice(b"', with args beginning with: ");
    msg.extend_from_slice(&rest);
    msg
}

/// Redis's addReplySubcommandSyntaxError: a subcommand's own argument count
/// check failed.
pub fn subcommand_syntax_error(ctx: &mut Ctx, args: &Args) {
    let sub = args.get(1).copied().unwrap_or_default();
    let mut msg = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
    msg.extend_from_slice(&sub[..sub.len().min(128)]);
    msg.extend_from_slice(b"'. Try ");
    msg.extend(args[0].to_ascii_uppercase());
    msg.extend_from_slice(b" HELP.");
    ctx.out.error_bytes(&msg);
}

/// Redis's reply to a container command with an unknown subcommand.
pub fn unknown_subcommand(ctx: &mut Ctx, args: &Args) {
    ctx.out.error_bytes(&unknown_subcommand_text(args));
}

fn unknown_subcommand_text(args: &Args) -> Vec<u8> {
    let sub = args.get(1).copied().unwrap_or_default();
    let mut msg = b"ERR unknown subcommand '".to_vec();
    msg.extend_from_slice(&sub[..sub.len().min(128)]);
    msg.extend_from_slice(b"'. Try ");
    msg.extend(args[0].to_ascii_uppercase());
    msg.extend_from_slice(b" HELP.");
    msg
}

/// Refuses a command before it runs: counted as rejected, and an open
/// transaction is marked failed.
fn reject(client: &mut Client, out: &mut Out, spec: &CommandSpec, msg: &str) {
    multi::flag_error(client);
    if let Some(i) = spec.index() {
        crate::cmdstats::record_rejected(i);
    }
    out.error(msg);
}

/// Whether any state that refuses writes, stale reads or memory is on.
fn refusal_possible(shared: &Shared, client: &mut Client) -> bool {
    if shared
        .replication
        .link
        .is_replica
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        return true;
    }
    let settings = client.settings(shared);
    settings.maxmemory > 0
        || settings.max_disk_size > 0
        || settings.min_replicas_to_write > 0
        || shared.disk_refusal(settings).is_some()
}

/// Runs one command, or queues it inside MULTI.
pub fn dispatch(shared: &Shared, client: &mut Client, out: &mut Out, args: &Args) {
    let spec = match table::resolve(args) {
        Some(Ok(spec)) => spec,
        Some(Err(_container)) => {
            multi::flag_error(client);
            out.error_bytes(&unknown_subcommand_text(args));
            return;
        }
        None => {
            multi::flag_error(client);
            out.error_bytes(&unknown_command(args));
            return;
        }
    };
    let index = spec.index();
    if let Some(i) = index {
        client.info.set_last_cmd(i);
    }
    let argv_mem = args.iter().map(|a| a.len()).sum();
    client.info.usage.set_argv(argv_mem);
    let argc = args.len() as i32;
    if (spec.arity > 0 && argc != spec.arity) || argc < -spec.arity {
        let msg = format!("ERR wrong number of arguments for '{}' command", spec.name);
        return reject(client, out, spec, &msg);
    }
    if let Some(option) = spec
        .protected_by()
        .filter(|o| !protected_allowed(shared, client, o))
    {
        // Redis's text names DEBUG or MODULE; PFDEBUG is gated here too
        // (Redis 7.0 does not gate it), under its own name.
        let msg = format!("ERR {} command not allowed. If the {option} option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.", spec.base_name().to_ascii_uppercase());
        return reject(client, out, spec, &msg);
    }
    if !client.authenticated && !spec.has(table::NO_AUTH) {
        return reject(client, out, spec, "NOAUTH Authentication required.");
    }
    if let Some(cluster) = &shared.cluster {
        // What our master sends runs as sent (Redis skips CLIENT_MASTER).
        let from_master = client.info.is_master();
        let routed = if from_master {
            None
        } else {
            crate::cluster::redirect::route(shared, cluster, client, spec, args)
        };
        if let Some(err) = routed {
            if spec.name == "exec" {
                multi::end(client);
                multi::unwatch_all(shared, client);
            }
            return reject(client, out, spec, &err);
        }
    }
    if client.multi.is_some() && spec.has(table::NO_MULTI) {
        return reject(
            client,
            out,
            spec,
            "ERR Command not allowed inside a transaction",
        );
    }
    if shared.engine.is_loading() && !spec.has(table::LOADING_OK) {
        return reject(
            client,
            out,
            spec,
            "LOADING BlinkDB is loading the dataset in memory",
        );
    }
    if client.monitor.is_some()
        && spec.flags & (table::READONLY | table::WRITE | table::MAY_REPLICATE) != 0
    {
        return reject(
            client,
            out,
            spec,
            "ERR Replica can't interact with the keyspace",
        );
    }
    let mut flags = multi::effective_flags(spec, client);
    // A script that declares flags is checked with them (Redis's
    // getCommandFlags); looked up only when some refusal could apply.
    if spec.has(table::NOSCRIPT)
        && crate::scripting::runs_script(args)
        && refusal_possible(shared, client)
    {
        flags = crate::scripting::command_flags(shared, flags, args);
    }
    // Redis's order: memory, persistence (PING too, but not our master's
    // keepalive), then the replica's refusals. Inside EXEC neither is checked
    // again (nor evicts): EXEC was admitted with its queue's flags, as Redis's
    // execCommand calls each command without processCommand's checks.
    let from_master = client.info.is_master();
    if client.in_exec {
        // Checked when EXEC itself was admitted.
    } else if flags & table::WRITE != 0 || (spec.name == "ping" && !from_master) {
        let settings = client.settings(shared);
        let denyoom = flags & (table::WRITE | table::DENYOOM) == table::WRITE | table::DENYOOM;
        if let Some(err) = shared.command_refusal(denyoom, settings, from_master) {
            if spec.name == "exec" {
                if let Some(i) = spec.index() {
                    crate::cmdstats::record_rejected(i);
                }
                let mut ctx = Ctx {
                    shared,
                    client,
                    out,
                };
                return multi::exec_abort(&mut ctx, &err);
            }
            return reject(client, out, spec, &err);
        }
    } else if client.settings(shared).maxmemory > 0 {
        // Redis's performEvictions runs before reads too.
        let settings = client.settings(shared);
        shared.oom_refusal(false, settings);
    }
    if client.tracking.is_some() && client.settings(shared).maxmemory > 0 {
        // Keys evicted before this command are invalidated before its reply.
        crate::pubsub::flush_mailbox(client, out);
    }
    if let Some(err) = crate::replication::replica::refusal(shared, client, flags) {
        return reject(client, out, spec, err);
    }
    if crate::pubsub::in_resp2_context(client) {
        if let Some(err) = crate::pubsub::context_refusal(client, spec.base_name(), args) {
            return reject(client, out, spec, &err);
        }
    }
    let mut ctx = Ctx {
        shared,
        client,
        out,
    };
    if ctx.client.multi.is_some() && !spec.has(table::TX_CONTROL) {
        multi::queue(&mut ctx, spec, args);
        return;
    }
    ctx.client.commands_processed += 1;
    ctx.out.errors_accounted = ctx.out.errors;
    let timer = crate::cmdstats::Timer::start();
    access::run(&mut ctx, spec, args);
    let nanos = timer.elapsed_nanos();
    if let Some(crate::client::Block::Waiting(w)) = &ctx.client.block {
        w.set_duration(nanos);
    }
    // Error replies it caused elsewhere (CLIENT UNBLOCK ERROR) fail it too,
    // as Redis's failed_calls follows the server's error count.
    let failed = ctx.out.errors > ctx.out.errors_accounted || ctx.out.foreign_errors > 0;
    ctx.out.errors_accounted = ctx.out.errors;
    ctx.out.foreign_errors = 0;
    if ctx.client.tracking.is_some() {
        tracking::after_command(&mut ctx, spec, args);
    }
    after_call(&mut ctx, spec, index, args, nanos, failed, false);
}

/// What Redis does after a command ran: statistics, the slow log, the
/// latency monitor and MONITOR's feed (`by_script`: a script ran it, and
/// MONITOR names it `lua`).
pub(crate) fn after_call(
    ctx: &mut Ctx,
    spec: &CommandSpec,
    index: Option<usize>,
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
    let blocked = ctx.client.block.is_some();
    if let Some(i) = index {
        crate::cmdstats::record_call(i, nanos, failed, histogram && !blocked);
    }
    let micros = nanos / 1000;
    if !blocked
        && slower_than >= 0
        && micros >= slower_than as u64
        && max_len > 0
        && !spec.has(table::SKIP_SLOWLOG)
    {
        let info = &ctx.client.info;
        ctx.shared.slowlog.push(info, spec, args, micros, max_len);
    }
    if threshold > 0 {
        let event = if spec.has(table::FAST) {
            "fast-command"
        } else {
            "command"
        };
        ctx.shared
            .latency
            .add_if_needed(event, nanos / 1_000_000, threshold);
    }
    if ctx.shared.monitors.active() && !spec.has(table::SKIP_MONITOR | table::ADMIN) {
        let from = (!by_script).then_some(&*ctx.client.info);
        monitor::feed(&ctx.shared.monitors, from, ctx.client.db, spec, args);
    }
}

/// `enable-debug-command` or `enable-module-command`: yes, or local for a
/// loopback or unix-socket client.
fn protected_allowed(shared: &Shared, client: &mut Client, option: &str) -> bool {
    let settings = client.settings(shared);
    let setting = if option == "enable-module-command" {
        settings.enable_module_command.clone()
    } else {
        settings.enable_debug_command.clone()
    };
    allows(&setting, client)
}

/// What `enable-debug-command` and `enable-protected-configs` say for this
/// client: yes, or local for a loopback or unix-socket client.
pub fn allows(setting: &str, client: &Client) -> bool {
    match setting {
        "yes" => true,
        "local" => client.info.peer.is_local(),
        _ => false,
    }
}

/// Whether CLIENT PAUSE holds this command back: every command under ALL,
/// those that may write under WRITE (EXEC when it would run one). A command
/// Redis rejects before that check (unknown, wrong arity) is not held.
pub fn paused(shared: &Shared, client: &Client, args: &Args) -> bool {
    let Some(Ok(spec)) = table::resolve(args) else {
        return false;
    };
    let argc = args.len() as i32;
    if (spec.arity > 0 && argc != spec.arity) || argc < -spec.arity {
        return false;
    }
    match shared.pause.mode() {
        crate::pause::ALL => true,
        crate::pause::WRITE => {
            let flags = match &client.multi {
                Some(tx) if spec.name == "exec" => spec.flags | tx.flags,
                _ => crate::scripting::command_flags(shared, spec.flags, args),
            };
            flags & (table::WRITE | table::MAY_REPLICATE) != 0
        }
        _ => false,
    }
}
