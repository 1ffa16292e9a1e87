//! The command families, their table, and what their handlers share (`Ctx`).
//! Admission and the call around a handler are in `exec/`.

pub mod access;
pub mod acl;
pub mod args;
mod bitfield;
mod bitops;
mod bloom;
mod bpop;
pub mod collection;
mod command;
pub(crate) mod conn;
mod debug;
mod debug_reload;
mod digest;
mod dump;
mod geo;
mod hash;
mod hash_ttl;
mod hyperloglog;
mod keys;
pub mod latency;
mod lcs;
mod list;
pub mod migrate;
pub mod monitor;
pub mod multi;
mod object;
mod pubsub;
mod random;
mod scripting;
mod server;
mod set;
mod sketch;
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

use crate::exec::session::Client;
use crate::protocol::{Args, Out};
use crate::server::state::Shared;

/// The diagnostics handle: SLOWLOG's and LATENCY's records and the MONITOR
/// clients, fed by the pipeline (exec/call.rs) and read by their commands.
#[derive(Default)]
pub struct Diagnostics {
    pub slowlog: slowlog::SlowLog,
    pub latency: latency::LatencyMonitor,
    pub monitors: monitor::Monitors,
}
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

impl<'a> Ctx<'a> {
    /// Counts a keyspace hit or miss for each of `keys`, as Redis's
    /// lookupKeyRead does, for commands whose reads do not go through a
    /// helper that counts (collection::read): a key that exists (of any
    /// type) is a hit.
    pub fn count_lookups(&mut self, keys: &[&[u8]]) {
        let db = self.db();
        for key in keys {
            let hit = self.shared.engine.peek(db, key, |e| e.is_some());
            self.client.count_lookup(hit);
        }
    }

    pub fn db(&self) -> usize {
        self.client.db
    }

    /// The clients registry (CLIENT LIST/KILL, ACL, TRACKING REDIRECT).
    pub fn clients(&self) -> &'a crate::client::registry::Registry {
        &self.shared.clients
    }

    /// What saves, rewrites and loads record (LASTSAVE).
    pub fn persistence(&self) -> &'a crate::persistence::Persistence {
        &self.shared.persistence
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

pub(crate) fn unknown_subcommand_text(args: &Args) -> Vec<u8> {
    let sub = args.get(1).copied().unwrap_or_default();
    let mut msg = b"ERR unknown subcommand '".to_vec();
    msg.extend_from_slice(&sub[..sub.len().min(128)]);
    msg.extend_from_slice(b"'. Try ");
    msg.extend(args[0].to_ascii_uppercase());
    msg.extend_from_slice(b" HELP.");
    msg
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

/// The keys a `numkeys key [key ...]` command names after its numkeys at
/// `at` (none when numkeys is not a count that fits).
pub fn numkeys_args<'a, 'b>(args: &'b Args<'a>, at: usize) -> &'b [&'a [u8]] {
    let n = args
        .get(at)
        .and_then(|a| std::str::from_utf8(a).ok()?.parse::<usize>().ok())
        .unwrap_or(0);
    args.get(at + 1..at + 1 + n).unwrap_or_default()
}
