//! The command table and dispatch: look up, check arity/auth/loading, run.

pub mod args;
mod bloom;
mod conn;
mod keys;
pub mod multi;
mod pubsub;
mod scripting;
mod server;
mod strings;
pub mod table;
pub mod tracking;

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

/// Runs one command. Returns false when the connection must close after
/// the replies gathered so far are written (QUIT, SHUTDOWN, killed).
pub fn dispatch(shared: &Shared, client: &mut Client, out: &mut Out, args: &Args) {
    let Some(spec) = lookup(args[0]) else {
        multi::flag_error(client);
        out.error_bytes(&unknown_command(args));
        return;
    };
    let argc = args.len() as i32;
    if (spec.arity > 0 && argc != spec.arity) || argc < -spec.arity {
        multi::flag_error(client);
        out.error(&format!(
            "ERR wrong number of arguments for '{}' command",
            spec.name
        ));
        return;
    }
    if !client.authenticated && !spec.has(table::NO_AUTH) {
        multi::flag_error(client);
        out.error("NOAUTH Authentication required.");
        return;
    }
    if client.multi.is_some() && spec.has(table::NO_MULTI) {
        multi::flag_error(client);
        out.error("ERR Command not allowed inside a transaction");
        return;
    }
    if shared.engine.is_loading() && !spec.has(table::LOADING_OK) {
        multi::flag_error(client);
        out.error("LOADING BlinkDB is loading the dataset in memory");
        return;
    }
    let flags = multi::effective_flags(spec, client);
    if flags & table::WRITE != 0 {
        let settings = client.settings(shared);
        if let Some(err) = shared.write_refusal(flags & table::DENYOOM != 0, settings) {
            let mut ctx = Ctx {
                shared,
                client,
                out,
            };
            if spec.name == "exec" {
                return multi::exec_abort(&mut ctx, &err);
            }
            multi::flag_error(ctx.client);
            ctx.out.error(&err);
            return;
        }
    }
    if let Some(err) = crate::pubsub::context_refusal(client, spec.name, args) {
        multi::flag_error(client);
        out.error(&err);
        return;
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
    (spec.handler)(&mut ctx, args);
    if ctx.client.tracking.is_some() {
        tracking::after_command(&mut ctx, spec, args);
    }
}
