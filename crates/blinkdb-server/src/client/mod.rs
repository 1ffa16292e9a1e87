//! Per-connection state, and the registry entry other connections see
//! (CLIENT LIST / KILL).

pub mod registry;
pub mod signal;

use crate::client::signal::Signal;
use crate::pubsub::Mailbox;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// Where a client connects from.
#[derive(Debug, Clone, PartialEq)]
pub enum Peer {
    Tcp(std::net::IpAddr),
    /// The unix socket's path.
    Unix(String),
    /// The log replay's pseudo-client.
    Internal,
}

impl Peer {
    /// A loopback address or the unix socket (`enable-debug-command local`).
    pub fn is_local(&self) -> bool {
        match self {
            Peer::Tcp(ip) => ip.is_loopback(),
            Peer::Unix(_) | Peer::Internal => true,
        }
    }
}

/// CLIENT LIST flags other connections can see.
pub const FLAG_MONITOR: u8 = 1;
pub const FLAG_NO_EVICT: u8 = 1 << 1;
/// Waiting in a blocking command or WAIT (blocking.rs).
pub const FLAG_BLOCKED: u8 = 1 << 2;
/// CLIENT NO-TOUCH ON: its commands leave the keys' access clocks alone.
pub const FLAG_NO_TOUCH: u8 = 1 << 3;
/// A replica's link (CLIENT LIST flags=S).
pub const FLAG_REPLICA: u8 = 1 << 4;
/// This replica's link to its master (CLIENT LIST flags=M).
pub const FLAG_MASTER: u8 = 1 << 5;
/// Cluster READONLY: reads served by a replica (CLIENT LIST flags=r).
pub const FLAG_READONLY: u8 = 1 << 6;
/// Connected through a TLS session. No CLIENT LIST letter (Redis has none):
/// the cluster's replies and redirections name ports by it.
pub const FLAG_TLS: u8 = 1 << 7;

/// The sizes CLIENT LIST reports, stored by the client's own connection as
/// they change (one relaxed store each), read by whoever lists the clients.
#[derive(Default)]
pub struct Usage {
    /// Commands queued by an open MULTI, plus one (0: no MULTI): `multi=`, flag `x`.
    multi: AtomicU64,
    /// The queued commands' bytes as MULTI accounts them against
    /// `client-query-buffer-limit`: `multi-mem=`.
    multi_mem: AtomicU64,
    /// Argument bytes of the command running or blocked (0 between commands,
    /// as Redis frees argv after each): `argv-mem=`.
    argv_mem: AtomicU64,
    /// The reply buffer's capacity and the largest batch it held since it was
    /// allocated (it is dropped past 16 KB, Redis's reply chunk): `rbs=` and `rbp=`.
    reply_cap: AtomicU64,
    reply_peak: AtomicU64,
    /// Reply bytes the socket has not taken yet (a client that reads slowly,
    /// or pipelines before it reads: `output.rs`), and the chunks they are
    /// queued in: `obl=`/`oll=`, part of `omem=`, and `events=rw` while they last.
    reply_pending: AtomicU64,
    reply_chunks: AtomicU64,
    /// When the unsent replies went over the class's soft output limit (0:
    /// they are not): set by the connection after a batch and by the cron
    /// (`net/output_limits.rs`).
    pub soft_limit_since_ms: AtomicU64,
    /// What the client's WATCHed keys and CLIENT TRACKING BCAST prefixes hold
    /// (stored when they change): part of `tot-mem`, as in Redis, so that a
    /// client piling them up is evicted like one with large buffers.
    watched_mem: AtomicU64,
    prefixes_mem: AtomicU64,
    /// What this client last added to the clients' running total while
    /// `maxmemory-clients` is on (`client_eviction.rs`).
    pub evict_counted: AtomicU64,
    /// The size of the connection's own state (`exec::session::Client`),
    /// stored when it is made: part of `tot-mem`.
    pub session_mem: AtomicU64,
}

impl Usage {
    pub fn set_multi(&self, queued: Option<(usize, usize)>) {
        let (count, mem) = queued.map_or((0, 0), |(n, bytes)| (n as u64 + 1, bytes as u64));
        self.multi.store(count, Ordering::Relaxed);
        self.multi_mem.store(mem, Ordering::Relaxed);
    }

    pub fn set_watched(&self, bytes: usize) {
        self.watched_mem.store(bytes as u64, Ordering::Relaxed);
    }

    pub fn set_tracking_prefixes(&self, bytes: usize) {
        self.prefixes_mem.store(bytes as u64, Ordering::Relaxed);
    }

    pub fn set_argv(&self, bytes: usize) {
        self.argv_mem.store(bytes as u64, Ordering::Relaxed);
    }

    pub fn argv(&self) -> u64 {
        self.argv_mem.load(Ordering::Relaxed)
    }

    /// After a batch of replies went out of a buffer of `capacity` holding `len`
    /// bytes at most; `fresh` when the buffer was (re)allocated since the last one.
    pub fn set_reply_buffer(&self, capacity: usize, len: usize, fresh: bool) {
        self.reply_cap.store(capacity as u64, Ordering::Relaxed);
        let peak = if fresh {
            len as u64
        } else {
            self.reply_peak.load(Ordering::Relaxed).max(len as u64)
        };
        self.reply_peak.store(peak, Ordering::Relaxed);
    }

    pub fn set_reply_pending(&self, bytes: usize, chunks: usize) {
        self.reply_pending.store(bytes as u64, Ordering::Relaxed);
        self.reply_chunks.store(chunks as u64, Ordering::Relaxed);
    }

    fn in_multi(&self) -> bool {
        self.multi.load(Ordering::Relaxed) != 0
    }
}

/// CLIENT LIST/KILL TYPE and client eviction: Redis's getClientType classes.
#[derive(Clone, Copy, PartialEq)]
pub enum ClientType {
    Normal,
    Replica,
    Pubsub,
    Master,
}

impl ClientType {
    pub fn of(c: &ClientInfo) -> Self {
        let flags = c.flags.load(Ordering::Relaxed);
        if flags & FLAG_REPLICA != 0 && flags & FLAG_MONITOR == 0 {
            ClientType::Replica
        } else if flags & FLAG_MASTER != 0 {
            ClientType::Master
        } else if c.subs.active() {
            ClientType::Pubsub
        } else {
            ClientType::Normal
        }
    }
}

/// The name of the command at a table position (`set_last_cmd`), given by
/// the layer that holds the table (`Shared::new`), so that this module
/// imports none of it.
pub type CommandName = fn(usize) -> Option<&'static str>;
static COMMAND_NAME: OnceLock<CommandName> = OnceLock::new();

/// Sets how CLIENT LIST names a client's last command (once per process).
pub fn name_commands_with(name: CommandName) {
    let _ = COMMAND_NAME.set(name);
}

/// What other connections may read or signal about a client.
pub struct ClientInfo {
    pub id: u64,
    pub addr: String,
    pub laddr: String,
    /// The socket's descriptor (stays the same when the socket moves to a
    /// connection thread); -1 for the log replay's pseudo-client, as Redis's
    /// AOF client.
    pub fd: i32,
    pub peer: Peer,
    pub created_ms: u64,
    pub last_active_ms: AtomicU64,
    pub db: AtomicUsize,
    pub proto: AtomicU8,
    name: Mutex<String>,
    lib: Mutex<(String, String)>,
    /// Table index of the last command run (u32::MAX: none yet).
    last_cmd: AtomicU32,
    /// `FLAG_*` bits.
    pub flags: AtomicU8,
    /// Unprocessed input bytes (the running command's included) and the
    /// room left in the read buffer: CLIENT LIST `qbuf` and `qbuf-free`.
    pub qbuf: AtomicU64,
    pub qbuf_free: AtomicU64,
    killed: AtomicBool,
    pub kill_signal: Signal,
    pub subs: crate::pubsub::SubCounts,
    /// Messages for this client from other connections (Pub/Sub, keyspace
    /// events, tracking invalidations); made when first needed.
    inbox: OnceLock<Arc<Mailbox>>,
    /// Set when the connection has ended (a tracking redirection is broken).
    gone: AtomicBool,
    /// Client-side caching as CLIENT LIST shows it (`tracking.rs`).
    pub tracking: crate::tracking::TrackingFlags,
    pub usage: Usage,
    /// The WATCH state while keys are watched (CLIENT LIST flag `d` once one changed).
    watch: Mutex<Option<Arc<blinkdb_engine::WatchFlag>>>,
    /// The ACL user's name (CLIENT LIST, CLIENT KILL USER, ACL changes).
    user: Mutex<Arc<[u8]>>,
    /// Authenticated from the start: the default user needed no password
    /// when the connection was accepted (Redis decides it in createClient).
    pub open_at_accept: AtomicBool,
}

impl ClientInfo {
    pub fn new(id: u64, addr: String, laddr: String, fd: i32, peer: Peer, now_ms: u64) -> Self {
        ClientInfo {
            id,
            addr,
            laddr,
            fd,
            peer,
            created_ms: now_ms,
            last_active_ms: AtomicU64::new(now_ms),
            db: AtomicUsize::new(0),
            proto: AtomicU8::new(2),
            name: Mutex::new(String::new()),
            lib: Mutex::new((String::new(), String::new())),
            last_cmd: AtomicU32::new(u32::MAX),
            flags: AtomicU8::new(0),
            qbuf: AtomicU64::new(0),
            qbuf_free: AtomicU64::new(0),
            killed: AtomicBool::new(false),
            kill_signal: Signal::new(),
            subs: Default::default(),
            inbox: OnceLock::new(),
            gone: AtomicBool::new(false),
            tracking: Default::default(),
            usage: Usage::default(),
            watch: Mutex::new(None),
            user: Mutex::new(Arc::from(&b"default"[..])),
            open_at_accept: AtomicBool::new(true),
        }
    }

    pub fn user_name(&self) -> Arc<[u8]> {
        self.user.lock().clone()
    }

    pub fn set_user_name(&self, name: &[u8]) {
        *self.user.lock() = Arc::from(name);
    }

    pub fn set_watch(&self, flag: Option<Arc<blinkdb_engine::WatchFlag>>) {
        *self.watch.lock() = flag;
    }

    /// This client's inbox, made on first use by its own connection.
    pub fn inbox(self: &Arc<Self>) -> &Arc<Mailbox> {
        self.inbox
            .get_or_init(|| Mailbox::new(Arc::downgrade(self), self.proto.load(Ordering::Relaxed)))
    }

    /// The inbox, for another connection writing to it. If this makes it, the
    /// owner's loop (which waits on an inbox only once it exists) is woken
    /// through the kill signal, which it takes as a wake-up unless killed.
    pub fn inbox_from_elsewhere(self: &Arc<Self>) -> &Arc<Mailbox> {
        if let Some(inbox) = self.inbox.get() {
            return inbox;
        }
        let inbox = self.inbox();
        self.kill_signal.notify_one();
        inbox
    }

    /// The inbox if it exists.
    pub fn inbox_if_any(&self) -> Option<&Arc<Mailbox>> {
        self.inbox.get()
    }

    /// The connection ended (its registry entry is gone).
    pub fn mark_gone(&self) {
        self.gone.store(true, Ordering::Release);
    }

    pub fn is_gone(&self) -> bool {
        self.gone.load(Ordering::Acquire)
    }

    pub fn name(&self) -> String {
        self.name.lock().clone()
    }

    pub fn set_lib(&self, is_name: bool, value: String) {
        let mut lib = self.lib.lock();
        if is_name {
            lib.0 = value;
        } else {
            lib.1 = value;
        }
    }

    /// Remembers the command being run (CLIENT LIST `cmd=`): one store.
    pub fn set_last_cmd(&self, index: usize) {
        self.last_cmd.store(index as u32, Ordering::Relaxed);
    }

    fn last_cmd_name(&self) -> &'static str {
        let i = self.last_cmd.load(Ordering::Relaxed) as usize;
        COMMAND_NAME
            .get()
            .and_then(|name| name(i))
            .unwrap_or("NULL")
    }

    pub fn set_name(&self, name: Option<&[u8]>) {
        *self.name.lock() = name
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .unwrap_or_default();
    }

    pub fn is_tls(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & FLAG_TLS != 0
    }

    pub fn set_flag(&self, flag: u8, on: bool) {
        if on {
            self.flags.fetch_or(flag, Ordering::Relaxed);
        } else {
            self.flags.fetch_and(!flag, Ordering::Relaxed);
        }
    }

    /// CLIENT LIST's `flags=` letters.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        self.kill_signal.notify_one();
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    /// This is a replica's link (flag `S`).
    pub fn is_replica(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & FLAG_REPLICA != 0
    }

    /// This is our master's link (flag `M`).
    pub fn is_master(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & FLAG_MASTER != 0
    }

    /// CLIENT LIST's flags, in Redis's order (N when none).
    fn flag_letters(&self) -> String {
        let bits = self.flags.load(Ordering::Relaxed);
        let mut f = String::new();
        if bits & FLAG_REPLICA != 0 {
            f.push('S');
        }
        if bits & FLAG_MONITOR != 0 {
            f.push('O');
        }
        if bits & FLAG_MASTER != 0 {
            f.push('M');
        }
        if self.subs.active() {
            f.push('P');
        }
        if self.usage.in_multi() {
            f.push('x');
        }
        if bits & FLAG_BLOCKED != 0 {
            f.push('b');
        }
        f.push_str(&self.tracking.letters());
        if self.watch.lock().as_ref().is_some_and(|w| w.is_dirty()) {
            f.push('d');
        }
        if self.is_killed() {
            f.push('A');
        }
        if matches!(self.peer, Peer::Unix(_)) {
            f.push('U');
        }
        if bits & FLAG_READONLY != 0 {
            f.push('r');
        }
        if bits & FLAG_NO_EVICT != 0 {
            f.push('e');
        }
        if bits & FLAG_NO_TOUCH != 0 {
            f.push('T');
        }
        if f.is_empty() {
            f.push('N');
        }
        f
    }

    fn queued_messages(&self) -> u64 {
        self.inbox.get().map_or(0, |m| m.queued() as u64)
    }

    /// The read buffer this client holds (INFO's `client_recent_max_input_buffer`).
    pub fn input_buffer(&self) -> u64 {
        self.qbuf.load(Ordering::Relaxed) + self.qbuf_free.load(Ordering::Relaxed)
    }

    /// Replies and messages its socket has not taken (`omem`; INFO's
    /// `client_recent_max_output_buffer`).
    pub fn output_pending(&self) -> u64 {
        self.usage.reply_pending.load(Ordering::Relaxed) + self.queued_messages()
    }

    /// Everything this client holds (CLIENT LIST `tot-mem`, client eviction):
    /// its unsent replies and messages, read and reply buffers, the running
    /// command's and MULTI's arguments, its watched keys, subscriptions and
    /// tracking prefixes, and its own state.
    pub fn memory(&self) -> u64 {
        self.output_pending() + self.memory_besides_output()
    }

    /// `memory` without the unsent output (which CLIENT LIST has in hand).
    fn memory_besides_output(&self) -> u64 {
        let u = &self.usage;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        self.input_buffer()
            + load(&u.reply_cap)
            + load(&u.argv_mem)
            + load(&u.multi_mem)
            + load(&u.watched_mem)
            + load(&u.prefixes_mem)
            + self.subs.memory()
            + load(&u.session_mem)
            + std::mem::size_of::<ClientInfo>() as u64
    }

    /// One CLIENT LIST line, with Redis's field names. The memory fields count
    /// what this client holds: `omem` the replies and messages not yet taken by
    /// its socket, `tot-mem` those plus its read and reply buffers, the running
    /// command's and MULTI's arguments and its own state.
    pub fn describe(&self, now_ms: &u64) -> String {
        let lib = self.lib.lock().clone();
        let u = &self.usage;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let (queued, multi_mem, argv_mem) = (load(&u.multi), load(&u.multi_mem), load(&u.argv_mem));
        let (pending, messages) = (load(&u.reply_pending), self.queued_messages());
        let omem = pending + messages;
        // As Redis's: the first 16 KB sit in the client's fixed buffer (`obl`),
        // the rest in its reply list (`oll` nodes); waiting messages are one more.
        let obl = pending.min(16 * 1024);
        let oll = if pending > obl {
            load(&u.reply_chunks).max(1)
        } else {
            0
        } + (messages > 0) as u64;
        let (qbuf, qbuf_free) = (load(&self.qbuf), load(&self.qbuf_free));
        let tot_mem = omem + self.memory_besides_output();
        format!(
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free={} argv-mem={} multi-mem={} rbs={} rbp={} obl={} oll={} omem={} tot-mem={} events={} cmd={} user={} redir={} resp={} lib-name={} lib-ver={}",
            self.id,
            self.addr,
            self.laddr,
            self.fd,
            self.name.lock(),
            now_ms.saturating_sub(self.created_ms) / 1000,
            now_ms.saturating_sub(self.last_active_ms.load(Ordering::Relaxed)) / 1000,
            self.flag_letters(),
            self.db.load(Ordering::Relaxed),
            self.subs.channels.load(Ordering::Relaxed),
            self.subs.patterns.load(Ordering::Relaxed),
            self.subs.shard.load(Ordering::Relaxed),
            queued as i64 - 1,
            qbuf,
            qbuf_free,
            argv_mem,
            multi_mem,
            load(&u.reply_cap),
            load(&u.reply_peak),
            obl,
            oll,
            omem,
            tot_mem,
            if pending > 0 { "rw" } else { "r" },
            self.last_cmd_name(),
            String::from_utf8_lossy(&self.user_name()),
            self.tracking.redirect_shown(),
            self.proto.load(Ordering::Relaxed),
            lib.0,
            lib.1,
        )
    }
}
