//! SLOWLOG: the commands that ran for at least `slowlog-log-slower-than`
//! microseconds, newest first, as Redis keeps them.

use super::args::parse_i64;
use super::table::CommandSpec;
use super::Ctx;
use crate::client::ClientInfo;
use crate::protocol::Args;
use parking_lot::Mutex;
use std::collections::VecDeque;

/// Arguments kept per entry (the last one then says how many more there were).
const MAX_ARGS: usize = 32;
/// Bytes kept per argument.
const MAX_ARG_BYTES: usize = 128;

struct Entry {
    id: u64,
    time_secs: u64,
    micros: u64,
    args: Vec<Vec<u8>>,
    peer: String,
    name: String,
}

#[derive(Default)]
pub struct SlowLog {
    inner: Mutex<Log>,
}

#[derive(Default)]
struct Log {
    next_id: u64,
    /// Newest first.
    entries: VecDeque<Entry>,
}

impl SlowLog {
    /// Logs a command that took `micros`, trimmed and redacted as Redis does.
    pub fn push(
        &self,
        info: &ClientInfo,
        spec: &CommandSpec,
        args: &Args,
        micros: u64,
        max_len: usize,
    ) {
        let hide = super::monitor::redacted(spec, args);
        let kept = args.len().min(MAX_ARGS);
        let mut logged = Vec::with_capacity(kept);
        for (j, arg) in args.iter().take(kept).enumerate() {
            if kept != args.len() && j == kept - 1 {
                let more = args.len() - kept + 1;
                logged.push(format!("... ({more} more arguments)").into_bytes());
            } else if hide[j] {
                logged.push(b"(redacted)".to_vec());
            } else if arg.len() > MAX_ARG_BYTES {
                let mut a = arg[..MAX_ARG_BYTES].to_vec();
                let more = arg.len() - MAX_ARG_BYTES;
                a.extend_from_slice(format!("... ({more} more bytes)").as_bytes());
                logged.push(a);
            } else {
                logged.push(arg.to_vec());
            }
        }
        let mut log = self.inner.lock();
        let id = log.next_id;
        log.next_id += 1;
        log.entries.push_front(Entry {
            id,
            time_secs: blinkdb_engine::now_ms() / 1000,
            micros,
            args: logged,
            peer: info.addr.clone(),
            name: info.name(),
        });
        log.entries.truncate(max_len);
    }
}

pub fn get(ctx: &mut Ctx, args: &Args) {
    let mut count = 10usize;
    if args.len() == 3 {
        match parse_i64(args[2]) {
            Some(-1) => count = usize::MAX,
            Some(n) if n >= 0 => count = n as usize,
            _ => {
                return ctx
                    .out
                    .error("ERR count should be greater than or equal to -1")
            }
        }
    } else if args.len() > 3 {
        return super::subcommand_syntax_error(ctx, args);
    }
    let log = ctx.shared.diagnostics.slowlog.inner.lock();
    let n = count.min(log.entries.len());
    ctx.out.array(n);
    for e in log.entries.iter().take(n) {
        ctx.out.array(6);
        ctx.out.int(e.id as i64);
        ctx.out.int(e.time_secs as i64);
        ctx.out.int(e.micros as i64);
        ctx.out.strs(e.args.iter().map(|a| &a[..]));
        ctx.out.bulk(e.peer.as_bytes());
        ctx.out.bulk(e.name.as_bytes());
    }
}

pub fn len(ctx: &mut Ctx, _args: &Args) {
    let n = ctx.shared.diagnostics.slowlog.inner.lock().entries.len();
    ctx.out.int(n as i64);
}

pub fn reset(ctx: &mut Ctx, _args: &Args) {
    ctx.shared.diagnostics.slowlog.inner.lock().entries.clear();
    ctx.out.ok();
}

pub fn help(ctx: &mut Ctx, _args: &Args) {
    ctx.out.help(&[
        "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET [<count>]",
        "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
        "    Entries are made of:",
        "    id, timestamp, time in microseconds, arguments array, client IP and port,",
        "    client name",
        "LEN",
        "    Return the length of the slowlog.",
        "RESET",
        "    Reset the slowlog.",
        "HELP",
        "    Prints this help.",
    ]);
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("slowlog", -2, CONTAINER, NOKEYS, "server", "2.2.12", "A container for slow log commands", NO_HANDLER;
        complexity: "Depends on subcommand."),
    cmd!("slowlog|get", -2, ADMIN | LOADING_OK | STALE, NOKEYS, "server", "2.2.12", "Get the slow log's entries", get;
        complexity: "O(N) where N is the number of entries returned",
        args: "count:integer?",
        history: &[("4.0.0", "Added client IP address, port and name to the reply.")],
        tips: &["request_policy:all_nodes", "nondeterministic_output"]),
    cmd!("slowlog|len", 2, ADMIN | LOADING_OK | STALE, NOKEYS, "server", "2.2.12", "Get the slow log's length", len;
        complexity: "O(1)",
        tips: &["request_policy:all_nodes", "response_policy:agg_sum", "nondeterministic_output"]),
    cmd!("slowlog|reset", 2, ADMIN | LOADING_OK | STALE, NOKEYS, "server", "2.2.12", "Clear all entries from the slow log", reset;
        complexity: "O(N) where N is the number of entries in the slowlog",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"]),
    cmd!("slowlog|help", 2, LOADING_OK | STALE, NOKEYS, "server", "6.2.0", "Show helpful text about the different subcommands", help;
        complexity: "O(1)"),
];
