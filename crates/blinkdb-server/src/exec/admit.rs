//! "May this command run here?", answered in one place for every way a
//! command reaches the server: a client, a command EXEC runs, our master's
//! stream, a script's redis.call, the AOF being loaded. The checks follow
//! Redis 7.0's processCommand (server.c) in its order, with the texts
//! BlinkDB replied before they were gathered here:
//!
//! busy script (a client's first check: the connection holds no gate),
//! unknown command, arity, protected commands, authentication (the slot the
//! ACL check takes), cluster redirection, MULTI-only refusals, loading,
//! MONITOR, script flags, memory (with the read path's eviction), persistence
//! errors (MISCONF), min-replicas and read-only replica, the subscribed
//! context, then MULTI queueing. CLIENT PAUSE holds a request before it is
//! taken off the input (`paused`), so it is asked first by the connection.
//! A script's calls answer to the checks Redis's scriptCall makes (unknown,
//! arity, noscript, read-only script, write refusals); the AOF's to the
//! table and arity only.

use crate::commands::table::{self, props, CommandSpec};
use crate::commands::{multi, unknown_command, unknown_subcommand_text};
use crate::exec::session::Client;
use crate::protocol::{Args, Out};
use crate::server::acl::{self, check::Denied};
use crate::server::state::Shared;
use std::borrow::Cow;
use std::sync::atomic::Ordering;

/// Where a command comes from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Source {
    /// A client's request; `busy`: a script is past its busy threshold.
    Client { busy: bool },
    /// A command EXEC runs from its queue.
    Exec,
    /// What our master sends (the master client's stream).
    Master,
    /// A script's redis.call: `read_only` (EVAL_RO, a no-writes script),
    /// `first_write` (no write yet: the write refusals apply), `allow_oom`.
    Script {
        read_only: bool,
        first_write: bool,
        allow_oom: bool,
    },
    /// A command read back from the AOF.
    Aof,
}

/// What admission decided.
pub enum Verdict {
    /// Run it now.
    Run(&'static CommandSpec),
    /// Inside MULTI: queue it.
    Queue(&'static CommandSpec),
    /// Refused; the reply is written (counted as Redis counts it).
    Refused,
    /// A record the AOF cannot be loaded with (the reason).
    Invalid(String),
}

/// Whether `argc` arguments (the name included) fit the command's arity:
/// n means exactly n, -n at least n.
#[inline]
pub fn arity_ok(spec: &CommandSpec, argc: usize) -> bool {
    let argc = argc as i32;
    if spec.arity > 0 {
        argc == spec.arity
    } else {
        argc >= -spec.arity
    }
}

/// Admits a request that was looked up (`found`), from `source`, writing
/// the refusal to `out` when there is one.
pub fn admit(
    shared: &Shared,
    client: &mut Client,
    out: &mut Out,
    args: &Args,
    found: super::Lookup,
    source: Source,
) -> Verdict {
    match source {
        Source::Aof => return replay_verdict(found, args),
        Source::Script { .. } => return script_verdict(shared, client, out, args, found, source),
        Source::Client { .. } | Source::Exec | Source::Master => {}
    }
    if let Source::Client { busy: true } = source {
        // Past a script's busy threshold, only ALLOW_BUSY commands run.
        match found {
            Some(Ok(spec)) if spec.has(table::ALLOW_BUSY) => {}
            Some(Ok(spec)) => {
                reject(shared, client, out, spec, shared.scripting.busy_error());
                return Verdict::Refused;
            }
            _ => {
                multi::flag_error(client);
                out.error(shared.scripting.busy_error());
                return Verdict::Refused;
            }
        }
    }
    let spec = match found {
        Some(Ok(spec)) => spec,
        Some(Err(_container)) => {
            multi::flag_error(client);
            out.error_bytes(&unknown_subcommand_text(args));
            return Verdict::Refused;
        }
        None => {
            multi::flag_error(client);
            out.error_bytes(&unknown_command(args));
            return Verdict::Refused;
        }
    };
    if let Some(i) = spec.index() {
        client.info.set_last_cmd(i);
    }
    let argv_mem = args.iter().map(|a| a.len()).sum();
    client.info.usage.set_argv(argv_mem);
    match refusal(shared, client, out, spec, args) {
        None if client.multi.is_some() && !spec.has(table::TX_CONTROL) => Verdict::Queue(spec),
        None => Verdict::Run(spec),
        Some(Refusal::Rejected(msg)) => {
            reject(shared, client, out, spec, &msg);
            Verdict::Refused
        }
        Some(Refusal::Exec(msg)) => {
            out.error(&msg);
            Verdict::Refused
        }
        Some(Refusal::Redirected(msg)) => {
            if let Some(i) = spec.index() {
                crate::exec::stats::record_rejected(i);
            }
            multi::flag_error(client);
            out.error(&msg);
            Verdict::Refused
        }
    }
}

/// Why a known command may not run.
enum Refusal {
    /// Counted as one of its rejected calls; an open transaction fails.
    Rejected(Cow<'static, str>),
    /// Served by another cluster node (MOVED, ASK...): an EXEC has already
    /// discarded its transaction, and the redirection is not an EXECABORT.
    Redirected(String),
    /// Refused by the ACL inside EXEC: a plain error in EXEC's replies.
    Exec(String),
}

/// Refuses a command before it runs, as Redis's rejectCommand: counted as
/// a rejected call, an open transaction is marked failed, and a refused
/// EXEC discards its transaction and answers EXECABORT with the reason
/// (without the ERR of a reason that has no code of its own).
fn reject(shared: &Shared, client: &mut Client, out: &mut Out, spec: &CommandSpec, msg: &str) {
    multi::flag_error(client);
    if let Some(i) = spec.index() {
        crate::exec::stats::record_rejected(i);
    }
    if spec.has_prop(props::RUNS_QUEUE) {
        let reason = msg.strip_prefix("ERR ").unwrap_or(msg);
        multi::refuse_exec(shared, client, out, reason);
    } else {
        out.error(msg);
    }
}

/// The checks after the lookup, in Redis's order.
fn refusal(
    shared: &Shared,
    client: &mut Client,
    out: &mut Out,
    spec: &'static CommandSpec,
    args: &Args,
) -> Option<Refusal> {
    let rejected = |m: Cow<'static, str>| Some(Refusal::Rejected(m));
    if !arity_ok(spec, args.len()) {
        let msg = format!("ERR wrong number of arguments for '{}' command", spec.name);
        return rejected(msg.into());
    }
    if let Some(option) = spec
        .protected_by()
        .filter(|o| !protected_allowed(shared, client, o))
    {
        // Redis's text names DEBUG or MODULE; PFDEBUG is gated here too
        // (Redis 7.0 does not gate it), under its own name.
        let msg = format!("ERR {} command not allowed. If the {option} option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.", spec.base_name().to_ascii_uppercase());
        return rejected(msg.into());
    }
    if !authorized(shared, client, spec) {
        return rejected("NOAUTH Authentication required.".into());
    }
    if client.multi.is_some() && spec.has(table::NO_MULTI) {
        return rejected("ERR Command not allowed inside a transaction".into());
    }
    let from_master = client.info.is_master();
    if !from_master {
        if let Err(denied) = acl_check(shared, client, spec, args) {
            let context = if client.multi.is_some() || client.in_exec {
                acl::log::Context::Multi
            } else {
                acl::log::Context::Toplevel
            };
            log_denied(shared, client, spec, args, denied, context);
            if client.in_exec {
                // Rules changed since the command was queued: its reply in
                // EXEC's array is the error, the others still run.
                return Some(Refusal::Exec(exec_time_reason(denied)));
            }
            return rejected(denied_text(spec, denied).into());
        }
    }
    if let Some(cluster) = &shared.cluster {
        // What our master sends runs as sent (Redis skips CLIENT_MASTER).
        if !from_master {
            if let Some(err) = crate::cluster::redirect::route(shared, cluster, client, spec, args)
            {
                if spec.has_prop(props::RUNS_QUEUE) {
                    multi::end(client);
                    multi::unwatch_all(shared, client);
                }
                return Some(Refusal::Redirected(err));
            }
        }
    }
    let mut flags = multi::effective_flags(spec, client);
    if shared.engine.is_loading() && flags & table::LOADING_OK == 0 {
        return rejected("LOADING BlinkDB is loading the dataset in memory".into());
    }
    if client.monitor.is_some()
        && spec.flags & (table::READONLY | table::WRITE | table::MAY_REPLICATE) != 0
    {
        return rejected("ERR Replica can't interact with the keyspace".into());
    }
    // A script that declares flags is checked with them (Redis's
    // getCommandFlags); looked up only when some refusal could apply.
    if spec.has_prop(props::RUNS_SCRIPT) && refusal_possible(shared, client) {
        flags = crate::scripting::command_flags(shared, spec, args);
    }
    // Redis's order: memory, persistence (PING too, but not our master's
    // keepalive), then the replica's refusals. Inside EXEC neither is checked
    // again (nor evicts): EXEC was admitted with its queue's flags, as Redis's
    // execCommand calls each command without processCommand's checks.
    if client.in_exec {
        // Checked when EXEC itself was admitted.
    } else if flags & table::WRITE != 0 || (spec.has_prop(props::MISCONF_CHECKED) && !from_master) {
        let settings = client.settings(shared);
        let denyoom = flags & (table::WRITE | table::DENYOOM) == table::WRITE | table::DENYOOM;
        if let Some(err) = shared.command_refusal(denyoom, settings, from_master) {
            return rejected(err.into());
        }
    } else if client.settings(shared).maxmemory > 0 {
        // Redis's performEvictions runs before reads too.
        let settings = client.settings(shared);
        shared.oom_refusal(false, settings);
    }
    if client.tracking.is_some() && client.settings(shared).maxmemory > 0 {
        // Keys evicted before this command are invalidated before its reply.
        crate::pubsub::flush_mailbox(&client.info, out);
    }
    // Not inside EXEC either: a REPLICAOF earlier in the transaction does
    // not refuse the writes after it (Redis's execCommand checks only ACLs).
    if !client.in_exec {
        if let Some(err) = crate::replication::replica::refusal(shared, client, flags) {
            return rejected(err.into());
        }
    }
    if client.in_resp2_subscribed() {
        if let Some(err) = subscribed_context_refusal(spec) {
            return rejected(err.into());
        }
    }
    None
}

/// Whether the client may run the command: no authentication is required
/// of it (see `Client::auth_required`), or the command needs none. The ACL
/// check (user permissions on the command, its keys and channels) is
/// `acl_check`'s.
#[inline]
fn authorized(shared: &Shared, client: &Client, spec: &CommandSpec) -> bool {
    client.authenticated || spec.has(table::NO_AUTH) || !client.auth_required(shared)
}

/// The ACL check: the client's user (taken again if the rules changed)
/// against the command, its keys and channels. Most users may run
/// anything, and pay one atomic load and a flag test, inlined here (as a
/// call, saving registers took more than the test: 26 instructions).
#[inline]
fn acl_check(
    shared: &Shared,
    client: &mut Client,
    spec: &'static CommandSpec,
    args: &Args,
) -> Result<(), Denied> {
    if shared.acl.version() == client.acl_version && client.user.unrestricted {
        return Ok(());
    }
    acl_check_rules(shared, client, spec, args)
}

#[inline(never)]
fn acl_check_rules(
    shared: &Shared,
    client: &mut Client,
    spec: &'static CommandSpec,
    args: &Args,
) -> Result<(), Denied> {
    crate::commands::acl::current_user(shared, client);
    if client.user.unrestricted {
        return Ok(());
    }
    acl::check::check(&client.user, spec, args)
}

/// Logs a refusal in ACL LOG (with the command, key or channel refused).
fn log_denied(
    shared: &Shared,
    client: &Client,
    spec: &CommandSpec,
    args: &Args,
    denied: Denied,
    context: acl::log::Context,
) {
    let (reason, object) = match denied {
        Denied::Command => (acl::log::Reason::Command, spec.name.as_bytes()),
        Denied::Key(i) => (acl::log::Reason::Key, args[i]),
        Denied::Channel(i) => (acl::log::Reason::Channel, args[i]),
    };
    let user = client.user.name.clone();
    crate::commands::acl::add_log_entry(shared, client, reason, context, object, &user);
}

fn denied_text(spec: &CommandSpec, denied: Denied) -> String {
    match denied {
        Denied::Command => format!(
            "NOPERM this user has no permissions to run the '{}' command",
            spec.name
        ),
        Denied::Key(_) => {
            "NOPERM this user has no permissions to access one of the keys used as arguments".into()
        }
        Denied::Channel(_) => {
            "NOPERM this user has no permissions to access one of the channels used as arguments"
                .into()
        }
    }
}

fn exec_time_reason(denied: Denied) -> String {
    let reason = match denied {
        Denied::Command => "no permission to execute the command or subcommand",
        Denied::Key(_) => "no permission to touch the specified keys",
        Denied::Channel(_) => "no permission to access one of the channels used as arguments",
    };
    format!("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {reason}")
}

/// Whether any state that refuses writes, stale reads or memory is on.
fn refusal_possible(shared: &Shared, client: &mut Client) -> bool {
    if shared.replication.link.is_replica.load(Ordering::Relaxed) {
        return true;
    }
    let settings = client.settings(shared);
    settings.maxmemory > 0
        || settings.max_disk_size > 0
        || settings.min_replicas_to_write > 0
        || shared.disk_refusal(settings).is_some()
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
    crate::commands::allows(&setting, client)
}

/// A command a script calls, checked as Redis's scriptCall does; a refusal
/// is an error reply counted in errorstats and, once the command is known,
/// as one of its rejected calls.
fn script_verdict(
    shared: &Shared,
    client: &mut Client,
    out: &mut Out,
    args: &Args,
    found: super::Lookup,
    source: Source,
) -> Verdict {
    let Source::Script {
        read_only,
        first_write,
        allow_oom,
    } = source
    else {
        unreachable!("called for a script's calls");
    };
    // A container's subcommand is the command (its flags and arity apply).
    let Some(Ok(spec)) = found else {
        out.error("ERR Unknown Redis command called from script");
        return Verdict::Refused;
    };
    // Not rejectCommand: a script's refusal is a plain error reply.
    let refuse = |out: &mut Out, m: &str| {
        if let Some(i) = spec.index() {
            crate::exec::stats::record_rejected(i);
        }
        out.error(m);
        Verdict::Refused
    };
    if !arity_ok(spec, args.len()) {
        return refuse(
            out,
            "ERR Wrong number of args calling Redis command from script",
        );
    }
    if spec.has(table::NOSCRIPT) {
        return refuse(out, "ERR This Redis command is not allowed from script");
    }
    if let Err(denied) = acl_check(shared, client, spec, args) {
        log_denied(shared, client, spec, args, denied, acl::log::Context::Lua);
        let why = match denied {
            Denied::Command => "can't run this command or subcommand",
            Denied::Key(_) => {
                "can't access at least one of the keys mentioned in the command arguments"
            }
            Denied::Channel(_) => "can't publish to the channel mentioned in the command",
        };
        return refuse(out, &format!("ERR The user executing the script {why}"));
    }
    // May-replicate commands (PUBLISH...) count as writes here, as in Redis.
    if read_only && (spec.has(table::WRITE) || spec.has(table::MAY_REPLICATE)) {
        return refuse(
            out,
            "ERR Write commands are not allowed from read-only scripts.",
        );
    }
    if spec.has(table::WRITE) && first_write {
        let settings = client.settings(shared);
        let denyoom = spec.has(table::DENYOOM) && !allow_oom;
        if let Some(refusal) = shared.write_refusal(denyoom, settings) {
            return refuse(out, &refusal);
        }
        let write = table::WRITE | table::STALE;
        if let Some(refusal) = crate::replication::replica::refusal(shared, client, write) {
            return refuse(out, refusal);
        }
    }
    Verdict::Run(spec)
}

/// A command read back from the AOF: known (internal records included:
/// filter bindings exist only in the log), and of the right arity. Redis
/// does not check arity here (a short record crashes it); BlinkDB refuses
/// the file, as handlers index their arguments on the word of the arity
/// check.
fn replay_verdict(found: super::Lookup, args: &Args) -> Verdict {
    // A container's subcommand (FUNCTION LOAD) is the command; with an
    // unknown one the container's handler says so.
    let spec = match found {
        Some(Ok(spec)) | Some(Err(spec)) => Some(spec),
        None => args.first().and_then(|name| table::lookup_internal(name)),
    };
    let Some(spec) = spec else {
        return Verdict::Invalid(format!(
            "Unknown command '{}' reading the append only file",
            String::from_utf8_lossy(args.first().copied().unwrap_or_default())
        ));
    };
    if !arity_ok(spec, args.len()) {
        return Verdict::Invalid(format!(
            "Wrong number of arguments for '{}' reading the append only file",
            spec.name
        ));
    }
    Verdict::Run(spec)
}

/// Whether CLIENT PAUSE holds this request back: every command under ALL,
/// those that may write under WRITE (EXEC when it would run one). A command
/// refused before that check (unknown, wrong arity) is not held.
pub fn paused(shared: &Shared, client: &Client, found: super::Lookup, args: &Args) -> bool {
    let Some(Ok(spec)) = found else {
        return false;
    };
    if !arity_ok(spec, args.len()) {
        return false;
    }
    match shared.exec.pause.mode() {
        crate::exec::pause::ALL => true,
        crate::exec::pause::WRITE => {
            let flags = match &client.multi {
                Some(tx) if spec.has_prop(props::RUNS_QUEUE) => spec.flags | tx.flags,
                _ => crate::scripting::command_flags(shared, spec, args),
            };
            flags & (table::WRITE | table::MAY_REPLICATE) != 0
        }
        _ => false,
    }
}

/// The error for a command refused in the RESP2 subscribed context (the
/// entry's `SUBSCRIBED_OK` allows it); a subcommand is named in full
/// (`config|get`), as Redis names it.
fn subscribed_context_refusal(spec: &CommandSpec) -> Option<String> {
    if spec.has_prop(props::SUBSCRIBED_OK) {
        return None;
    }
    Some(format!(
        "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
        spec.name
    ))
}
