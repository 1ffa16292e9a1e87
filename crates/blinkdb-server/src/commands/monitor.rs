//! MONITOR: every command any connection runs, streamed to the monitoring
//! clients in Redis's line format, and the argument redaction MONITOR and
//! SLOWLOG share.

use super::table::CommandSpec;
use super::Ctx;
use crate::client::ClientInfo;
use crate::protocol::Args;
use parking_lot::Mutex;
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

/// Bytes a monitor may leave unread before it is disconnected (Redis's
/// replica output-buffer hard limit, which monitors fall under).
const PENDING_LIMIT: usize = 256 << 20;

/// One monitoring connection's pending lines.
pub struct Sink {
    pub client_id: u64,
    pending: Mutex<Vec<u8>>,
    pub ready: Notify,
    overflowed: AtomicBool,
}

impl Sink {
    /// The lines fed since the last call.
    pub fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.pending.lock())
    }

    /// Fell behind by more than the limit: to be disconnected.
    pub fn overflowed(&self) -> bool {
        self.overflowed.load(Ordering::Acquire)
    }
}

/// The monitors of a server.
#[derive(Default)]
pub struct Monitors {
    count: AtomicUsize,
    sinks: Mutex<Vec<Arc<Sink>>>,
}

impl Monitors {
    /// Any monitor connected? (a load per command on the hot path)
    pub fn active(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    fn add(&self, client_id: u64) -> Arc<Sink> {
        let sink = Arc::new(Sink {
            client_id,
            pending: Mutex::new(Vec::new()),
            ready: Notify::new(),
            overflowed: AtomicBool::new(false),
        });
        let mut sinks = self.sinks.lock();
        sinks.push(sink.clone());
        self.count.store(sinks.len(), Ordering::Relaxed);
        sink
    }

    pub fn remove(&self, client_id: u64) {
        let mut sinks = self.sinks.lock();
        sinks.retain(|s| s.client_id != client_id);
        self.count.store(sinks.len(), Ordering::Relaxed);
    }

    fn feed(&self, line: &[u8]) {
        for sink in self.sinks.lock().iter() {
            let mut pending = sink.pending.lock();
            if pending.len() + line.len() > PENDING_LIMIT {
                if !sink.overflowed.swap(true, Ordering::AcqRel) {
                    tracing::warn!(
                        "Client id={} scheduled to be closed ASAP for overcoming of output buffer limits (MONITOR)",
                        sink.client_id
                    );
                }
            } else {
                pending.extend_from_slice(line);
            }
            drop(pending);
            sink.ready.notify_one();
        }
    }
}

/// Which arguments of a command line hold secrets, as Redis redacts them in
/// MONITOR and SLOWLOG (the entry's `redact`).
pub fn redacted(spec: &CommandSpec, args: &Args) -> Vec<bool> {
    let mut hide = vec![false; args.len()];
    if let Some(mark) = spec.redact {
        mark(args, &mut hide);
    }
    hide
}

/// AUTH's password (and user).
pub fn redact_auth(args: &[&[u8]], hide: &mut [bool]) {
    if args.len() <= 3 {
        for h in hide.iter_mut().skip(1) {
            *h = true;
        }
    }
}

/// HELLO's AUTH pair.
pub fn redact_hello(args: &[&[u8]], hide: &mut [bool]) {
    let mut j = 2;
    while j < args.len() {
        let more = args.len() - j - 1;
        if args[j].eq_ignore_ascii_case(b"auth") && more >= 2 {
            hide[j + 1] = true;
            hide[j + 2] = true;
            j += 3;
        } else if args[j].eq_ignore_ascii_case(b"setname") && more >= 1 {
            j += 2;
        } else {
            break;
        }
    }
}

/// CONFIG SET's values of password options.
pub fn redact_config_set(args: &[&[u8]], hide: &mut [bool]) {
    for j in (2..args.len()).step_by(2) {
        let sensitive = ["requirepass", "masterauth", "masteruser"]
            .iter()
            .any(|n| args[j].eq_ignore_ascii_case(n.as_bytes()));
        if sensitive && j + 1 < args.len() {
            hide[j + 1] = true;
        }
    }
}

/// Appends `arg` quoted as Redis's sdscatrepr does.
fn push_repr(line: &mut Vec<u8>, arg: &[u8]) {
    line.push(b'"');
    for &c in arg {
        match c {
            b'\\' | b'"' => line.extend_from_slice(&[b'\\', c]),
            b'\n' => line.extend_from_slice(b"\\n"),
            b'\r' => line.extend_from_slice(b"\\r"),
            b'\t' => line.extend_from_slice(b"\\t"),
            0x07 => line.extend_from_slice(b"\\a"),
            0x08 => line.extend_from_slice(b"\\b"),
            0x20..=0x7e => line.push(c),
            _ => line.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
        }
    }
    line.push(b'"');
}

/// Feeds the command a client just ran to every monitor:
/// `+<unix time>.<micros> [<db> <peer>] "arg" ...`, where the peer is `lua`
/// for a command a script ran (`from` is None).
pub fn feed(
    monitors: &Monitors,
    from: Option<&ClientInfo>,
    db: usize,
    spec: &CommandSpec,
    args: &Args,
) {
    let us = blinkdb_engine::now_us();
    let mut head = String::with_capacity(48);
    let _ = write!(head, "+{}.{:06} [{db} ", us / 1_000_000, us % 1_000_000);
    match from {
        None => head.push_str("lua] "),
        Some(info) => match &info.peer {
            crate::client::Peer::Unix(path) => {
                let _ = write!(head, "unix:{path}] ");
            }
            _ => {
                let _ = write!(head, "{}] ", info.addr);
            }
        },
    }
    let mut line = head.into_bytes();
    let hide = redacted(spec, args);
    for (j, arg) in args.iter().enumerate() {
        if j > 0 {
            line.push(b' ');
        }
        push_repr(&mut line, if hide[j] { b"(redacted)" } else { arg });
    }
    line.extend_from_slice(b"\r\n");
    monitors.feed(&line);
}

pub fn monitor(ctx: &mut Ctx, _args: &Args) {
    if ctx.client.deny_blocking {
        // Inside EXEC: a reply per command is expected.
        return ctx
            .out
            .error("ERR MONITOR isn't allowed for DENY BLOCKING client");
    }
    if ctx.client.monitor.is_some() {
        return; // already monitoring: no reply, as Redis
    }
    ctx.client.monitor = Some(ctx.shared.diagnostics.monitors.add(ctx.client.id));
    ctx.client.info.set_flag(crate::client::FLAG_MONITOR, true);
    ctx.out.ok();
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("monitor", 1, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "1.0.0", "Listen for all requests received by the server in real time", monitor;
        history: &[]),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_as_sdscatrepr() {
        let mut line = Vec::new();
        push_repr(&mut line, b"a\"b\\c\n\r\t\x07\x08\x00\xff z");
        assert_eq!(line, b"\"a\\\"b\\\\c\\n\\r\\t\\a\\b\\x00\\xff z\"");
    }
}
