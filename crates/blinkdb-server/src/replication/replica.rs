//! The replica side: REPLICAOF, the link to the master (handshake, PSYNC,
//! the full sync's RDB spooled to a file and loaded, or parsed from the
//! socket (diskless_load.rs), then the master's
//! stream applied by a client flagged as the master's), REPLCONF ACKs, and
//! the replica's INFO/ROLE fields. docs/replication.md has the wire formats.
//!
//! The link connects, handshakes and syncs on a thread of its own (a
//! current-thread runtime), so the main runtime's accept loop and crons never
//! wait for it; then it hands the socket to a connection thread, which applies
//! the stream under the transaction gate in the same event loop as its
//! clients, as Redis's one loop does.

use crate::client::{ClientInfo, Peer, FLAG_MASTER};
use crate::commands::table::props;
use crate::commands::Ctx;
use crate::exec::session::Client;
use crate::net::tls::TlsSocket;
use crate::protocol::{Args, Out, RequestLimits, RequestParser};
use crate::server::dataset::Aside;
use crate::server::state::Shared;
use bytes::{Buf, BytesMut};
use parking_lot::Mutex;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Where the link stands (ROLE's state names; INFO's link status).
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum LinkState {
    /// Waiting to connect (after a failure: once a second).
    Connect,
    Connecting,
    /// PING, AUTH, REPLCONF, PSYNC.
    Handshake,
    /// Receiving the RDB of a full sync (and loading it).
    Transfer,
    /// Streaming.
    Connected,
}

impl LinkState {
    fn role_name(self) -> &'static str {
        match self {
            LinkState::Connect => "connect",
            LinkState::Connecting => "connecting",
            LinkState::Handshake => "handshake",
            LinkState::Transfer => "sync",
            LinkState::Connected => "connected",
        }
    }
}

/// What INFO and ROLE show of the link.
pub struct Status {
    pub host: String,
    pub port: u16,
    pub state: LinkState,
    /// Last byte from the master (ms).
    pub last_io_ms: u64,
    /// When the link went down (0: it was never up).
    pub down_since_ms: u64,
    /// Bytes read from the master's stream (applied or not).
    pub read_offset: u64,
    /// The full sync's payload: total (-1: EOF-marked) and read so far.
    pub sync_total: i64,
    pub sync_read: u64,
    pub sync_last_io_ms: u64,
    /// The current connection (handshake on), killed by REPLICAOF and
    /// CLIENT KILL TYPE master.
    pub conn: Option<Arc<ClientInfo>>,
}

pub struct Link {
    /// Set while this server is a replica (read on every write command).
    pub is_replica: AtomicBool,
    /// Bumped by every REPLICAOF: a link thread of an older one ends.
    generation: AtomicU64,
    pub status: Mutex<Option<Status>>,
}

impl Default for Link {
    fn default() -> Self {
        Link {
            is_replica: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            status: Mutex::new(None),
        }
    }
}

/// `replicaof` as stored: "host port" (validated).
pub fn parse_replicaof(value: &str) -> Result<String, String> {
    let words: Vec<&str> = value.split_whitespace().collect();
    match words.as_slice() {
        [host, port] if port.parse::<u16>().is_ok() => Ok(format!("{host} {port}")),
        _ => Err("Invalid master port".into()),
    }
}

/// `replicaof`'s check (registered in boot::CONFIG_CHECKS): empty for a
/// master, else "host port".
pub const CONFIG_CHECK: crate::config::Check = crate::config::Check {
    option: "replicaof",
    check: check_replicaof,
};

fn check_replicaof(value: &str) -> Result<String, String> {
    if value.is_empty() {
        return Ok(String::new());
    }
    parse_replicaof(value)
}

fn eq_ic(a: &[u8], b: &str) -> bool {
    a.eq_ignore_ascii_case(b.as_bytes())
}

/// REPLICAOF host port | NO ONE (and SLAVEOF).
pub fn replicaof(ctx: &mut Ctx, args: &Args) {
    // A cluster node replicates the master CLUSTER REPLICATE names.
    if ctx.shared.cluster.is_some() {
        return ctx.out.error("ERR REPLICAOF not allowed in cluster mode.");
    }
    if ctx.client.info.flags.load(Ordering::Relaxed) & crate::client::FLAG_REPLICA != 0 {
        return ctx
            .out
            .error("ERR Command is not valid when client is a replica.");
    }
    if ctx.shared.replication.failover.phase() != super::failover::Phase::NoFailover {
        return ctx
            .out
            .error("ERR REPLICAOF not allowed while failing over.");
    }
    if eq_ic(args[1], "no") && eq_ic(args[2], "one") {
        if ctx
            .shared
            .replication
            .link
            .is_replica
            .load(Ordering::Acquire)
        {
            promote(ctx.shared);
            tracing::info!(
                "MASTER MODE enabled (user request from '{}')",
                ctx.client.info.addr
            );
        }
        return ctx.out.ok();
    }
    let port = crate::commands::args::parse_i64(args[2]).filter(|p| (0..=65535).contains(p));
    let Some(port) = port else {
        return ctx.out.error("ERR Invalid master port");
    };
    let host = String::from_utf8_lossy(args[1]).into_owned();
    let port = port as u16;
    let link = &ctx.shared.replication.link;
    if link.is_replica.load(Ordering::Acquire) {
        let same = link
            .status
            .lock()
            .as_ref()
            .is_some_and(|s| s.host.eq_ignore_ascii_case(&host) && s.port == port);
        if same {
            tracing::info!("REPLICAOF would result into synchronization with the master we are already connected with. No operation performed.");
            ctx.out
                .buf
                .extend_from_slice(b"+OK Already connected to specified master\r\n");
            return;
        }
    }
    follow(ctx.shared, host.clone(), port);
    tracing::info!(
        "REPLICAOF {host}:{port} enabled (user request from '{}')",
        ctx.client.info.addr
    );
    ctx.out.ok();
}

/// Makes this server a replica of host:port and starts its link.
pub fn follow(shared: &Shared, host: String, port: u16) {
    let repl = &shared.replication;
    let generation = repl.link.generation.fetch_add(1, Ordering::AcqRel) + 1;
    repl.link.is_replica.store(true, Ordering::Release);
    {
        let mut st = repl.link.status.lock();
        if let Some(conn) = st.as_ref().and_then(|s| s.conn.as_ref()) {
            conn.kill();
        }
        *st = Some(Status {
            host: host.clone(),
            port,
            state: LinkState::Connect,
            last_io_ms: 0,
            down_since_ms: 0,
            read_offset: repl.feed.lock().offset,
            sync_total: 0,
            sync_read: 0,
            sync_last_io_ms: 0,
            conn: None,
        });
    }
    // Our replicas resync with us (they may PSYNC on), as Redis's
    // replicationSetMaster; our own writes stop feeding the stream.
    repl.feed.unfollow(true);
    repl.feed.set_proxy(true);
    shared.engine.set_replica(true);
    // Clients blocked in a master, now a replica, are told so and
    // disconnected (Redis's disconnectAllBlockedClients).
    shared.exec.blocking.fail_where(shared, |_| {
        Some((
            "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)".into(),
            true,
        ))
    });
    shared.config_set_internal("replicaof", format!("{host} {port}"));
    let s = shared.arc();
    let spawned = std::thread::Builder::new()
        .name("repl-link".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            rt.block_on(run(s, generation));
        });
    if let Err(e) = spawned {
        tracing::warn!("Can't start the replication link thread: {e}");
    }
}

/// REPLICAOF NO ONE: a master again, with a new replication id (the old one
/// kept as replid2 so that replicas of the old master PSYNC on).
pub fn promote(shared: &Shared) {
    let repl = &shared.replication;
    repl.link.generation.fetch_add(1, Ordering::AcqRel);
    repl.link.is_replica.store(false, Ordering::Release);
    if let Some(st) = repl.link.status.lock().take() {
        if let Some(conn) = st.conn {
            conn.kill();
        }
    }
    repl.feed.promote();
    super::checkpoint::remove(shared);
    shared.engine.set_replica(false);
    shared.config_set_internal("replicaof", String::new());
}

fn current(shared: &Shared, generation: u64) -> bool {
    shared.replication.link.generation.load(Ordering::Acquire) == generation
}

fn set_state(shared: &Shared, generation: u64, f: impl FnOnce(&mut Status)) {
    if !current(shared, generation) {
        return;
    }
    if let Some(st) = shared.replication.link.status.lock().as_mut() {
        f(st);
    }
}

/// The link: connect, sync, stream; on any failure, again a second later.
async fn run(shared: Arc<Shared>, generation: u64) {
    loop {
        if !current(&shared, generation) {
            return;
        }
        let target = shared
            .replication
            .link
            .status
            .lock()
            .as_ref()
            .map(|s| (s.host.clone(), s.port));
        let Some((host, port)) = target else { return };
        set_state(&shared, generation, |s| s.state = LinkState::Connecting);
        tracing::info!("Connecting to MASTER {host}:{port}");
        let result = session(&shared, generation, &host, port).await;
        let was_up = matches!(result, Err((true, _)));
        if let Err((_, e)) = &result {
            tracing::warn!("Replication link with MASTER {host}:{port}: {e}");
        }
        if !current(&shared, generation) {
            return;
        }
        set_state(&shared, generation, |s| {
            s.state = LinkState::Connect;
            s.conn = None;
            if was_up || s.down_since_ms != 0 {
                s.down_since_ms = blinkdb_engine::now_ms();
            }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// One connection's error: (whether the link had reached streaming, text).
type LinkError = (bool, String);

fn early(e: impl std::fmt::Display) -> LinkError {
    (false, e.to_string())
}

/// The socket with the master: plain, or a TLS session (tls-replication yes).
pub(super) enum LinkSock {
    Plain(TcpStream),
    Tls(Box<TlsSocket<TcpStream>>),
}

impl tokio::io::AsyncRead for LinkSock {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.get_mut() {
            LinkSock::Plain(s) => std::pin::Pin::new(s).poll_read(cx, buf),
            LinkSock::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl tokio::io::AsyncWrite for LinkSock {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        match self.get_mut() {
            LinkSock::Plain(s) => std::pin::Pin::new(s).poll_write(cx, buf),
            LinkSock::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }
    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.get_mut() {
            LinkSock::Plain(s) => std::pin::Pin::new(s).poll_flush(cx),
            LinkSock::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_flush(cx),
        }
    }
    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.get_mut() {
            LinkSock::Plain(s) => std::pin::Pin::new(s).poll_shutdown(cx),
            LinkSock::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// The socket with the master, its unread bytes and its client identity.
pub(super) struct Conn {
    sock: LinkSock,
    pub(super) buf: BytesMut,
    info: Arc<ClientInfo>,
    timeout: Duration,
}

impl Conn {
    /// Reads more into `buf`: errors on EOF, timeout, or a kill.
    pub(super) async fn fill(&mut self) -> Result<usize, String> {
        if self.buf.capacity() - self.buf.len() < 16 * 1024 {
            self.buf.reserve(64 * 1024);
        }
        loop {
            tokio::select! {
                r = tokio::time::timeout(self.timeout, self.sock.read_buf(&mut self.buf)) => {
                    return match r {
                        Err(_) => Err("Timeout connecting to the MASTER...".into()),
                        Ok(Ok(0)) => Err("Connection lost".into()),
                        Ok(Ok(n)) => {
                            super::NET_REPL_INPUT.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
                            Ok(n)
                        }
                        Ok(Err(e)) => Err(format!("Error reading from MASTER: {e}")),
                    };
                }
                _ = self.info.kill_signal.notified() => {
                    if self.info.is_killed() {
                        return Err("Link killed".into());
                    }
                }
            }
        }
    }

    /// One line (without its CR LF); bare newlines (the master's
    /// keepalives) give empty lines.
    async fn line(&mut self) -> Result<String, String> {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let mut line = self.buf.split_to(i + 1);
                line.truncate(i);
                if line.last() == Some(&b'\r') {
                    line.truncate(i - 1);
                }
                return Ok(String::from_utf8_lossy(&line).into_owned());
            }
            if self.buf.len() > 64 * 1024 {
                return Err("Line from the MASTER too long".into());
            }
            self.fill().await?;
        }
    }

    async fn send(&mut self, args: &[&[u8]]) -> Result<(), String> {
        let mut cmd = Vec::new();
        let _ = write!(cmd, "*{}\r\n", args.len());
        for a in args {
            let _ = write!(cmd, "${}\r\n", a.len());
            cmd.extend_from_slice(a);
            cmd.extend_from_slice(b"\r\n");
        }
        // Flushed: a TLS session's records go out now.
        let write = async {
            self.sock.write_all(&cmd).await?;
            self.sock.flush().await
        };
        match tokio::time::timeout(self.timeout, write).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("Error writing to MASTER: {e}")),
            Err(_) => Err("Timeout writing to MASTER".into()),
        }
    }

    /// Sends a command and reads its one-line reply.
    async fn ask(&mut self, args: &[&[u8]]) -> Result<String, String> {
        self.send(args).await?;
        loop {
            let line = self.line().await?;
            if !line.is_empty() {
                return Ok(line);
            }
        }
    }
}

/// PSYNC's answer.
enum Sync {
    Full { replid: String, offset: u64 },
    Continue(Option<String>),
}

/// One connection to the master, from connect to its end.
async fn session(
    shared: &Arc<Shared>,
    generation: u64,
    host: &str,
    port: u16,
) -> Result<(), LinkError> {
    let timeout = shared.replication.timeout();
    let sock = tokio::time::timeout(timeout, TcpStream::connect((host, port)))
        .await
        .map_err(|_| early("Timeout connecting to the MASTER..."))?
        .map_err(|e| early(format!("Error condition on socket for SYNC: {e}")))?;
    let _ = sock.set_nodelay(true);
    let peer = sock.peer_addr().map_err(early)?;
    let local = sock.local_addr().map(|a| a.to_string()).unwrap_or_default();
    let info = Arc::new(ClientInfo::new(
        shared.clients.next_id(),
        peer.to_string(),
        local,
        std::os::fd::AsRawFd::as_raw_fd(&sock),
        Peer::Tcp(peer.ip()),
        shared.clock(),
    ));
    info.flags.fetch_or(FLAG_MASTER, Ordering::Relaxed);
    if !current(shared, generation) {
        return Ok(());
    }
    let sock = if shared.settings().tls.replication {
        let contexts = shared
            .net
            .tls
            .current()
            .ok_or_else(|| early("TLS is not configured (tls-replication yes)"))?;
        let tls = crate::net::tls::connect(&contexts, sock, timeout)
            .await
            .map_err(|e| early(format!("Error condition on socket for SYNC: TLS: {e}")))?;
        LinkSock::Tls(Box::new(tls))
    } else {
        LinkSock::Plain(sock)
    };
    set_state(shared, generation, |s| {
        s.state = LinkState::Handshake;
        s.conn = Some(info.clone());
    });
    tracing::info!("MASTER <-> REPLICA sync started");
    let mut conn = Conn {
        sock,
        buf: BytesMut::with_capacity(64 * 1024),
        info,
        timeout,
    };
    let sync = handshake(shared, &mut conn).await.map_err(early)?;
    match sync {
        Sync::Full { replid, offset } => {
            set_state(shared, generation, |s| {
                s.state = LinkState::Transfer;
                s.sync_total = 0;
                s.sync_read = 0;
            });
            full_sync(shared, generation, &mut conn, &replid, offset)
                .await
                .map_err(early)?;
        }
        Sync::Continue(new_id) => {
            tracing::info!("Successful partial resynchronization with master.");
            shared.replication.feed.follow_continue(new_id.as_deref());
        }
    }
    if !current(shared, generation) {
        return Ok(());
    }
    stream_on_connection_thread(shared, generation, conn)
        .await
        .map_err(|e| (true, e))
}

/// Applies the master's stream on a connection thread (one event loop for
/// the stream and the clients, as Redis has) and waits for its end; on this
/// thread when there are none (servers embedded in tests).
async fn stream_on_connection_thread(
    shared: &Arc<Shared>,
    generation: u64,
    conn: Conn,
) -> Result<(), String> {
    if !crate::net::io_threads::started() {
        return stream(shared, generation, conn).await;
    }
    let Conn {
        sock,
        buf,
        info,
        timeout,
    } = conn;
    // A TLS session moves as its socket and its state.
    let (sock, session) = match sock {
        LinkSock::Plain(s) => (s, None),
        LinkSock::Tls(t) => {
            let (s, session) = t.into_parts();
            (s, Some(session))
        }
    };
    let sock = sock.into_std().map_err(|e| e.to_string())?;
    let (done, ended) = tokio::sync::oneshot::channel();
    let shared = shared.clone();
    let started = crate::net::io_threads::start_on_thread(Box::new(move || {
        crate::net::busy_poll::register(std::os::fd::AsRawFd::as_raw_fd(&sock));
        let sock = match TcpStream::from_std(sock) {
            Ok(s) => match session {
                Some(session) => LinkSock::Tls(Box::new(TlsSocket::new(s, session))),
                None => LinkSock::Plain(s),
            },
            Err(e) => {
                let _ = done.send(Err(e.to_string()));
                return;
            }
        };
        let conn = Conn {
            sock,
            buf,
            info,
            timeout,
        };
        drop(tokio::spawn(async move {
            let _ = done.send(stream(&shared, generation, conn).await);
        }));
    }));
    if !started {
        return Err("no connection thread to apply the stream on".into());
    }
    ended
        .await
        .unwrap_or_else(|_| Err("the stream's connection thread is gone".into()))
}

async fn handshake(shared: &Shared, conn: &mut Conn) -> Result<Sync, String> {
    let pong = conn.ask(&[b"PING"]).await?;
    // An error about authentication is fine here: AUTH follows.
    if pong.starts_with('-')
        && !pong.starts_with("-NOAUTH")
        && !pong.starts_with("-NOPERM")
        && !pong.starts_with("-ERR operation not permitted")
    {
        return Err(format!("Error reply to PING from master: '{pong}'"));
    }
    let settings = shared.settings();
    if let Some(pass) = &settings.masterauth {
        let reply = match &settings.masteruser {
            Some(user) => {
                conn.ask(&[b"AUTH", user.as_bytes(), pass.as_bytes()])
                    .await?
            }
            None => conn.ask(&[b"AUTH", pass.as_bytes()]).await?,
        };
        if reply.starts_with('-') {
            return Err(format!("Unable to AUTH to MASTER: {reply}"));
        }
    }
    // replica-announce-port/-ip (when set) are what the master lists; else
    // the port a peer of this link would use: the TLS one with
    // tls-replication yes (Sentinel connects to replicas there), as Redis.
    let port = match settings.replica_announce_port {
        0 if settings.tls.replication && settings.tls_port != 0 => settings.tls_port,
        0 => settings.port,
        p => p,
    }
    .to_string();
    let reply = conn
        .ask(&[b"REPLCONF", b"listening-port", port.as_bytes()])
        .await?;
    if reply.starts_with('-') {
        tracing::info!(
            "(Non critical) Master does not understand REPLCONF listening-port: {reply}"
        );
    }
    if let Some(ip) = &settings.replica_announce_ip {
        let reply = conn
            .ask(&[b"REPLCONF", b"ip-address", ip.as_bytes()])
            .await?;
        if reply.starts_with('-') {
            tracing::info!(
                "(Non critical) Master does not understand REPLCONF ip-address: {reply}"
            );
        }
    }
    let reply = conn
        .ask(&[b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"])
        .await?;
    if reply.starts_with('-') {
        tracing::info!("(Non critical) Master does not understand REPLCONF capa: {reply}");
    }
    let (replid, offset) = match shared.replication.feed.resume_point() {
        Some((id, off)) => (id, (off + 1).to_string()),
        None => ("?".to_string(), "-1".to_string()),
    };
    if replid != "?" {
        tracing::info!("Trying a partial resynchronization (request {replid}:{offset}).");
    }
    // A master handing over to us (FAILOVER) asks the target to promote
    // itself: `PSYNC <replid> <offset> FAILOVER`, as Redis 7.0.
    let handover = super::failover::handing_over(shared);
    let mut psync: Vec<&[u8]> = vec![b"PSYNC", replid.as_bytes(), offset.as_bytes()];
    if handover {
        psync.push(b"FAILOVER");
    }
    if let Err(e) = conn.send(&psync).await {
        super::failover::psync_answered(shared, false, true);
        return Err(e);
    }
    let reply = loop {
        match conn.line().await {
            Ok(line) if line.is_empty() => continue,
            Ok(line) => break line,
            Err(e) => {
                super::failover::psync_answered(shared, false, false);
                return Err(e);
            }
        }
    };
    if handover {
        let accepted = reply.starts_with("+FULLRESYNC") || reply.starts_with("+CONTINUE");
        super::failover::psync_answered(shared, accepted, false);
    }
    if let Some(rest) = reply.strip_prefix("+FULLRESYNC") {
        let mut w = rest.split_whitespace();
        let id = w.next().filter(|id| id.len() == 40);
        let off = w.next().and_then(|o| o.parse::<u64>().ok());
        let (Some(id), Some(off)) = (id, off) else {
            return Err(format!(
                "Master replied with wrong +FULLRESYNC syntax: {reply}"
            ));
        };
        tracing::info!("Full resync from master: {id}:{off}");
        return Ok(Sync::Full {
            replid: id.to_string(),
            offset: off,
        });
    }
    if let Some(rest) = reply.strip_prefix("+CONTINUE") {
        let id = rest.trim();
        let id = (id.len() == 40).then(|| id.to_string());
        return Ok(Sync::Continue(id));
    }
    Err(format!("Unexpected reply to PSYNC from master: {reply}"))
}

/// Receives the RDB (`$<len>` or `$EOF:<mark>`) into a temp file, then
/// loads it in place of the whole dataset, or (repl-diskless-load) loads it
/// from the socket as it arrives; clients get -LOADING meanwhile.
async fn full_sync(
    shared: &Arc<Shared>,
    generation: u64,
    conn: &mut Conn,
    replid: &str,
    offset: u64,
) -> Result<(), String> {
    let header = loop {
        let line = conn.line().await?;
        if !line.is_empty() {
            break line;
        }
        // A newline: the master is still making the snapshot.
        set_state(shared, generation, |s| {
            s.last_io_ms = blinkdb_engine::now_ms();
        });
    };
    if header.starts_with('-') {
        return Err(format!(
            "MASTER aborted replication with an error: {header}"
        ));
    }
    let Some(spec) = header.strip_prefix('$') else {
        return Err(format!(
            "Bad protocol from MASTER, the first byte is not '$' (we received '{header}'), are you sure the host and port are right?"
        ));
    };
    let payload = super::diskless_load::Payload::new(spec)?;
    set_state(shared, generation, |s| {
        s.sync_total = payload.total().map_or(-1, |t| t as i64)
    });
    super::checkpoint::remove(shared);
    if let Some(mode) = super::diskless_load::from_socket(shared) {
        match payload.total() {
            Some(len) => tracing::info!(
                "MASTER <-> REPLICA sync: receiving {len} bytes from master to parser ({})",
                if mode == super::diskless_load::Mode::Swapdb {
                    "swapdb"
                } else {
                    "on-empty-db"
                }
            ),
            None => tracing::info!(
                "MASTER <-> REPLICA sync: receiving streamed RDB from master with EOF to parser"
            ),
        }
        super::diskless_load::load(shared, generation, conn, payload, mode).await?;
        if !current(shared, generation) {
            return Err("REPLICAOF changed during the transfer".into());
        }
        shared.replication.feed.follow_full(replid, offset);
        tracing::info!("MASTER <-> REPLICA sync: Finished with success");
        return Ok(());
    }
    let settings = shared.settings();
    let tmp = crate::persistence::stale_temp::receive_name(&settings.dir, blinkdb_engine::now_ms());
    let result = receive(shared, generation, conn, payload, &tmp).await;
    let result = match result {
        Ok(()) => {
            if !current(shared, generation) {
                let _ = std::fs::remove_file(&tmp);
                return Err("REPLICAOF changed during the transfer".into());
            }
            tracing::info!("MASTER <-> REPLICA sync: Loading DB in memory");
            let (s, path) = (shared.clone(), tmp.clone());
            tokio::task::spawn_blocking(move || {
                load(&s, false, "disk", |shared, settings| {
                    crate::persistence::rdb_file::import(shared, settings, &path)
                })
            })
            .await
            .unwrap_or_else(|e| Err(format!("loading task failed: {e}")))
        }
        Err(e) => Err(e),
    };
    let _ = std::fs::remove_file(&tmp);
    result?;
    shared.replication.feed.follow_full(replid, offset);
    tracing::info!("MASTER <-> REPLICA sync: Finished with success");
    Ok(())
}

/// The full sync's progress: `read` bytes of the payload in.
pub(super) fn sync_progress(shared: &Shared, generation: u64, read: u64) {
    set_state(shared, generation, |s| {
        let now = blinkdb_engine::now_ms();
        s.sync_read = read;
        s.last_io_ms = now;
        s.sync_last_io_ms = now;
    })
}

/// The payload into `path`.
async fn receive(
    shared: &Shared,
    generation: u64,
    conn: &mut Conn,
    mut payload: super::diskless_load::Payload,
    path: &std::path::Path,
) -> Result<(), String> {
    let mut file = std::fs::File::create(path).map_err(|e| {
        format!("Opening the temp file needed for MASTER <-> REPLICA synchronization: {e}")
    })?;
    match payload.total() {
        Some(len) => {
            tracing::info!("MASTER <-> REPLICA sync: receiving {len} bytes from master to disk")
        }
        None => tracing::info!(
            "MASTER <-> REPLICA sync: receiving streamed RDB from master with EOF to disk"
        ),
    }
    while let Some(bytes) = payload.next(conn).await? {
        file.write_all(&bytes)
            .map_err(|e| format!("Write error writing to the temp file for the sync: {e}"))?;
        sync_progress(shared, generation, payload.read);
    }
    file.sync_all().map_err(|e| e.to_string())
}

/// Replaces the dataset with the master's RDB, read by `import` (a file,
/// checked whole before any key goes in, or the socket: diskless_load.rs),
/// then rewrites the AOF from it. With `swap`, the old keys and libraries
/// are set aside first and come back if the load fails; without, the
/// dataset is flushed first and again on a failure. Either way a load that
/// fails never leaves a part of the master's data served. `from` names the
/// source in the log ("disk", "socket").
pub(super) fn load(
    shared: &Shared,
    swap: bool,
    from: &str,
    import: impl FnOnce(&Shared, &crate::config::Settings) -> Result<u64, String>,
) -> Result<(), String> {
    let settings = shared.settings();
    {
        // No command is half-way when loading starts.
        let _alone = shared.exec.gate.exclusive();
        shared.engine.set_loading(true);
    }
    shared
        .persistence
        .loading
        .start_ms
        .store(shared.clock(), Ordering::Relaxed);
    let engine = &shared.engine;
    // The function libraries go too (Redis's emptyData at a full sync): the
    // master's, if it has any, come with the RDB.
    let aside = if swap {
        tracing::info!("MASTER <-> REPLICA sync: Setting the current data aside (swapdb)");
        Some(Aside::take(shared))
    } else {
        tracing::info!("MASTER <-> REPLICA sync: Flushing old data");
        engine.flush(None, &[b"FLUSHALL"], false, 0);
        drop(std::mem::take(&mut *shared.scripting.functions.lock()));
        None
    };
    let mut result = import(shared, &settings).map(|_| ());
    match (&result, aside) {
        (Err(e), Some(aside)) => {
            tracing::warn!("Failed trying to load the MASTER synchronization DB from {from}: {e}");
            tracing::warn!(
                "MASTER <-> REPLICA sync: Discarding temporary DB in background (the old data restored: {} keys)",
                aside.keys()
            );
            aside.put_back(shared);
        }
        (Err(e), None) => {
            tracing::warn!("Failed trying to load the MASTER synchronization DB from {from}: {e}");
            tracing::warn!("MASTER <-> REPLICA sync: Discarding the half-loaded data");
            engine.flush(None, &[b"FLUSHALL"], false, 0);
            drop(std::mem::take(&mut *shared.scripting.functions.lock()));
        }
        (Ok(()), Some(aside)) => {
            tracing::info!("MASTER <-> REPLICA sync: Discarding old DB in background");
            aside.discard(shared);
        }
        (Ok(()), None) => {}
    }
    if result.is_ok() && settings.appendonly {
        let moved = keep_large_values_in_the_log(shared);
        if moved > 0 {
            tracing::info!("MASTER <-> REPLICA sync: {moved} large values kept in the log");
        }
        if let Err(e) = crate::persistence::rdb_file::rewrite_aof(shared) {
            result = Err(format!("Writing the synced data into the AOF: {e}"));
        }
    }
    engine.set_loading(false);
    result
}

/// After a full sync, the strings of at least `blob-threshold` bytes go to
/// the log as a SET puts them (the index keeps their place, not the bytes),
/// so that a replica keeps large values on disk as its master does; the AOF
/// rewrite that follows moves them into its base. Returns how many.
fn keep_large_values_in_the_log(shared: &Shared) -> usize {
    use blinkdb_engine::{Entry, Value};
    let engine = &shared.engine;
    let Some(threshold) = engine.log_handle().map(|l| l.aof.blob_threshold()) else {
        return 0;
    };
    let mut moved = 0;
    for db in 0..engine.databases() {
        let mut cursor = 0;
        loop {
            let mut large = Vec::new();
            cursor = engine.scan(db, cursor, 1024, |key, e| {
                if matches!(e.value(), Value::Str(s, _) if s.len() >= threshold) {
                    large.push(key.to_vec());
                }
            });
            for key in large {
                let (done, _) = engine.write1(db, &key, |tx| {
                    let Some(e) = tx.get(db, &key) else {
                        return false;
                    };
                    let Value::Str(s, _) = e.value() else {
                        return false;
                    };
                    let (val, at) = (s.to_vec(), e.expire_at);
                    let at_text = at.to_string();
                    let refs = if at != 0 {
                        tx.log(db, &[b"SET", &key, &val, b"PXAT", at_text.as_bytes()])
                    } else {
                        tx.log(db, &[b"SET", &key, &val])
                    };
                    let Some(r) = refs.get(2).copied().flatten() else {
                        return false;
                    };
                    let mut entry = Entry::new(Value::blob(r));
                    entry.expire_at = at;
                    tx.insert_after_log(db, &key, entry);
                    true
                });
                moved += usize::from(done);
            }
            if cursor == 0 {
                break;
            }
        }
    }
    moved
}

/// Unregisters the master client when the stream ends.
struct Registered<'a>(&'a Shared, u64);

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.0.unregister(self.1);
    }
}

/// The master's stream, applied in order; an ACK every second.
async fn stream(shared: &Arc<Shared>, generation: u64, mut conn: Conn) -> Result<(), String> {
    let info = conn.info.clone();
    shared.clients.register(info.clone());
    let _registered = Registered(shared, info.id);
    let mut client = Client::new(info.clone(), shared);
    client.authenticated = true;
    let mut parser = RequestParser::default();
    let mut out = Out::new(2);
    set_state(shared, generation, |s| {
        s.state = LinkState::Connected;
        s.last_io_ms = blinkdb_engine::now_ms();
        s.down_since_ms = 0;
    });
    tracing::info!("MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization or the RDB is loaded; streaming.");
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut marks = super::fack::FsyncMarks::default();
    let mut checkpointed = None;
    // First ACK at once (a diskless master puts us online on it).
    let off = shared.replication.feed.lock().offset;
    send_ack(&mut conn, off, marks.fack(shared, off, client.pending_lsn)).await?;
    loop {
        if !current(shared, generation) || info.is_killed() {
            return Err("Link closed".into());
        }
        let applied = apply(shared, &mut client, &mut parser, &mut conn.buf, &mut out)?;
        if let Some(paused) = &applied.paused {
            finish_script(shared, &mut client, &mut out, paused).await;
        }
        let getack = applied.getack;
        let off = shared.replication.feed.lock().offset;
        set_state(shared, generation, |s| {
            s.read_offset = off + conn.buf.len() as u64;
        });
        if getack {
            send_ack(&mut conn, off, marks.fack(shared, off, client.pending_lsn)).await?;
        }
        if applied.paused.is_some() {
            continue; // the rest of the buffer first
        }
        if applied.waiting {
            tokio::time::sleep(Duration::from_millis(1)).await;
            continue;
        }
        tokio::select! {
            r = conn.fill() => {
                r?;
                set_state(shared, generation, |s| s.last_io_ms = blinkdb_engine::now_ms());
            }
            _ = tick.tick() => {
                let (replid, off) = {
                    let b = shared.replication.feed.lock();
                    (b.replid.clone(), b.offset)
                };
                send_ack(&mut conn, off, marks.fack(shared, off, client.pending_lsn)).await?;
                // Every applied command is in the AOF (none queued in a MULTI).
                if client.multi.is_none() && checkpointed != Some(off) {
                    super::checkpoint::save(shared, &replid, off);
                    checkpointed = Some(off);
                }
            }
        }
    }
}

/// REPLCONF ACK <offset>, with FACK <offset> when this server writes an AOF (as a
/// Redis 7.2+ replica sends it; the master's WAITAOF counts it).
async fn send_ack(conn: &mut Conn, off: u64, fack: Option<u64>) -> Result<(), String> {
    let off = off.to_string();
    match fack {
        Some(f) => {
            let f = f.to_string();
            conn.send(&[b"REPLCONF", b"ACK", off.as_bytes(), b"FACK", f.as_bytes()])
                .await
        }
        None => conn.send(&[b"REPLCONF", b"ACK", off.as_bytes()]).await,
    }
}

/// What `apply` did with a buffer.
struct Applied {
    /// A command was REPLCONF GETACK (the caller answers with an ACK).
    getack: bool,
    /// A script paused past busy-reply-threshold: `apply` stopped after it,
    /// and the caller finishes it (`finish_script`), then applies the rest.
    paused: Option<Paused>,
    /// A script is past its busy threshold: `apply` stopped before the next
    /// command, and the caller tries again a little later.
    waiting: bool,
}

/// A script command from the master that paused past busy-reply-threshold.
struct Paused {
    /// The command's bytes, proxied once it ends, and its MULTI state.
    raw: Vec<u8>,
    multi: Option<bool>,
    /// Its name, and the errors `out` had counted before it.
    name: Vec<u8>,
    errors: u64,
}

/// Runs the rest of a script from the master that paused past
/// busy-reply-threshold, letting this connection thread's other clients in
/// between its slices (they get BUSY, as Redis answers them while its master
/// client runs a long script), then ends the command as `apply` ends one.
async fn finish_script(shared: &Shared, client: &mut Client, out: &mut Out, paused: &Paused) {
    while client.script.is_some() {
        tokio::task::yield_now().await;
        crate::scripting::run::resume(shared, client, out);
    }
    client.script_gate = None;
    shared
        .replication
        .feed
        .proxy_bytes(&paused.raw, paused.multi);
    after_command(shared, client, out, paused.errors, &paused.name);
}

/// What follows each command of the stream once it ran and was proxied: a
/// blocking command's wait dropped (a replica never blocks its master's
/// stream), clients blocked on keys it filled served, an error reply logged
/// as Redis's "== CRITICAL ==" and perhaps stopping the server, as
/// `propagation-error-behavior` says (`errors`: the count before the command).
fn after_command(shared: &Shared, client: &mut Client, out: &mut Out, errors: u64, name: &[u8]) {
    if let Some(crate::exec::session::Block::Waiting(w)) = client.block.take() {
        shared.exec.blocking.cancel(shared, &w);
    }
    if blinkdb_engine::ready_keys::pending() {
        crate::exec::blocking::serve_ready(shared);
    }
    if out.errors > errors {
        let settings = shared.settings();
        shared
            .stats
            .unexpected_error_replies
            .fetch_add(1, Ordering::Relaxed);
        let source = crate::exec::propagation::Source::Master;
        if let Err(message) =
            crate::exec::propagation::after_error(&settings, source, &out.buf, name)
        {
            crate::exec::propagation::panic(&message);
        }
    }
    out.clear();
}

/// Runs every complete command in `buf` as the master's client, each
/// proxied to this server's backlog once applied, up to a script that
/// pauses (on a connection thread only).
fn apply(
    shared: &Shared,
    client: &mut Client,
    parser: &mut RequestParser,
    buf: &mut BytesMut,
    out: &mut Out,
) -> Result<Applied, String> {
    let mut consumed = 0;
    let mut getack = false;
    let mut paused = None;
    let mut waiting = false;
    let on_thread = crate::net::io_threads::on_connection_thread();
    let feed = &shared.replication.feed;
    // One clock read per run of commands, as a connection's batch has (a read
    // per SET was 4% of the link thread's time under a SET stream, perf), taken
    // again every CLOCK_EVERY commands so a long backlog is not run at one time.
    let mut clock = blinkdb_engine::batch_clock();
    let mut since_clock = 0;
    loop {
        if since_clock == CLOCK_EVERY {
            drop(clock);
            clock = blinkdb_engine::batch_clock();
            since_clock = 0;
        }
        since_clock += 1;
        if on_thread && shared.scripting.busy.load(Ordering::Acquire) {
            // A script past its busy threshold, perhaps paused on this very
            // thread holding the gate: the stream waits, as Redis's master
            // client's input does (processInputBuffer), not the thread.
            waiting = true;
            break;
        }
        let limits = RequestLimits {
            max_bulk_len: i64::MAX,
            authenticated: true,
        };
        let parsed = match parser.parse(&buf[consumed..], limits) {
            Ok(p) => p,
            Err(e) => return Err(format!("Protocol error from MASTER: {}", e.0)),
        };
        let Some(args) = parsed.args else {
            consumed += parsed.consumed;
            break;
        };
        let raw = &buf[consumed..consumed + parsed.consumed];
        consumed += parsed.consumed;
        if args.len() >= 2 && eq_ic(args[0], "replconf") && eq_ic(args[1], "getack") {
            getack = true;
            feed.proxy_bytes(raw, None);
            continue;
        }
        // Looked up once; what the master sends is admitted as its own.
        let found = crate::exec::lookup(&args);
        let known = found.and_then(Result::ok);
        let has = |p: u32| known.is_some_and(|s| s.has_prop(p));
        let multi = if has(props::TX_OPEN) {
            Some(true)
        } else if has(props::TX_CLOSE) {
            Some(false)
        } else {
            None
        };
        let errors = out.errors;
        let master = crate::exec::Source::Master;
        if has(props::RUNS_QUEUE) {
            let _alone = shared.exec.gate.exclusive();
            crate::exec::process(shared, client, out, &args, found, master);
            feed.proxy_bytes(raw, multi);
        } else if client.multi.is_none() && has(props::RUNS_SCRIPT) {
            client.script_gate = Some(crate::exec::gate::ExclusiveToken::take(shared.arc()));
            crate::exec::process(shared, client, out, &args, found, master);
            if client.script.is_some() {
                paused = Some(Paused {
                    raw: raw.to_vec(),
                    multi,
                    name: args[0].to_vec(),
                    errors,
                });
                break;
            }
            client.script_gate = None;
            feed.proxy_bytes(raw, multi);
        } else {
            let _gate = shared.exec.gate.shared();
            crate::exec::process(shared, client, out, &args, found, master);
            feed.proxy_bytes(raw, multi);
        }
        after_command(shared, client, out, errors, args[0]);
    }
    drop(clock);
    buf.advance(consumed);
    shared.notify.tracking.broadcast();
    Ok(Applied {
        getack,
        paused,
        waiting,
    })
}

/// Commands `apply` runs on one reading of the clock.
const CLOCK_EVERY: usize = 256;

/// Whether the link to our master is streaming (Redis's REPL_STATE_CONNECTED).
pub fn link_up(shared: &Shared) -> bool {
    shared
        .replication
        .link
        .status
        .lock()
        .as_ref()
        .is_some_and(|s| s.state == LinkState::Connected)
}

/// ROLE, as a replica: ["slave", host, port, state, offset].
pub fn role(ctx: &mut Ctx) -> bool {
    let st = ctx.shared.replication.link.status.lock();
    let Some(s) = st.as_ref() else {
        return false;
    };
    let (host, port, state) = (s.host.clone(), s.port, s.state);
    drop(st);
    let offset = if state == LinkState::Connected {
        ctx.shared.replication.feed.lock().offset as i64
    } else {
        -1
    };
    ctx.out.array(5);
    ctx.out.bulk(b"slave");
    ctx.out.bulk(host.as_bytes());
    ctx.out.int(port as i64);
    ctx.out.bulk(state.role_name().as_bytes());
    ctx.out.int(offset);
    true
}

/// INFO replication's replica fields (after `role:slave`), in Redis 7.0's
/// order; false when this server is a master.
pub fn info_fields(shared: &Shared, o: &mut String) -> bool {
    use std::fmt::Write as _;
    let st = shared.replication.link.status.lock();
    let Some(s) = st.as_ref() else {
        return false;
    };
    let now = blinkdb_engine::now_ms();
    let settings = shared.settings();
    let applied = shared.replication.feed.lock().offset;
    let up = s.state == LinkState::Connected;
    let _ = write!(
        o,
        "role:slave\r\nmaster_host:{}\r\nmaster_port:{}\r\nmaster_link_status:{}\r\nmaster_last_io_seconds_ago:{}\r\nmaster_sync_in_progress:{}\r\nslave_read_repl_offset:{}\r\nslave_repl_offset:{}\r\n",
        s.host,
        s.port,
        if up { "up" } else { "down" },
        if up { (now.saturating_sub(s.last_io_ms) / 1000) as i64 } else { -1 },
        u8::from(s.state == LinkState::Transfer),
        if up { s.read_offset.max(applied) } else { applied },
        applied,
    );
    if s.state == LinkState::Transfer {
        let total = s.sync_total;
        let left = if total > 0 {
            total - s.sync_read as i64
        } else {
            0
        };
        let perc = if total > 0 {
            s.sync_read as f64 * 100.0 / total as f64
        } else {
            0.0
        };
        let _ = write!(
            o,
            "master_sync_total_bytes:{total}\r\nmaster_sync_read_bytes:{}\r\nmaster_sync_left_bytes:{left}\r\nmaster_sync_perc:{perc:.2}\r\nmaster_sync_last_io_seconds_ago:{}\r\n",
            s.sync_read,
            now.saturating_sub(s.sync_last_io_ms) / 1000
        );
    }
    if !up {
        let down = if s.down_since_ms == 0 {
            -1
        } else {
            (now.saturating_sub(s.down_since_ms) / 1000) as i64
        };
        let _ = write!(o, "master_link_down_since_seconds:{down}\r\n");
    }
    let _ = write!(
        o,
        "slave_priority:{}\r\nslave_read_only:{}\r\nreplica_announced:{}\r\n",
        settings.replica_priority,
        u8::from(settings.replica_read_only),
        u8::from(settings.replica_announced)
    );
    true
}

/// Why a client's command is refused for replication's sake (Redis's
/// processCommand checks, in its order), if it is: NOREPLICAS on a master
/// short of good replicas (min-replicas-to-write), READONLY for a write on
/// a replica, MASTERDOWN while its link is down and stale data is not served.
pub fn refusal(shared: &Shared, client: &mut Client, flags: u32) -> Option<&'static str> {
    use crate::commands::table::{STALE, WRITE};
    if !shared.replication.link.is_replica.load(Ordering::Relaxed) {
        if flags & WRITE == 0 {
            return None;
        }
        let settings = client.settings(shared);
        let (min, lag) = (
            settings.min_replicas_to_write,
            settings.min_replicas_max_lag,
        );
        if min > 0 && lag > 0 && super::good_replicas(shared, lag) < min {
            return Some("NOREPLICAS Not enough good replicas to write.");
        }
        return None;
    }
    if client.info.is_master() || matches!(client.info.peer, Peer::Internal) {
        return None;
    }
    let settings = client.settings(shared);
    if flags & WRITE != 0 && settings.replica_read_only {
        return Some("READONLY You can't write against a read only replica.");
    }
    if !settings.replica_serve_stale_data && flags & STALE == 0 {
        let up = shared
            .replication
            .link
            .status
            .lock()
            .as_ref()
            .is_some_and(|s| s.state == LinkState::Connected);
        if !up {
            return Some(
                "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
            );
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicaof_values() {
        assert_eq!(parse_replicaof("h  6379").unwrap(), "h 6379");
        assert!(parse_replicaof("h 70000").is_err());
        assert!(parse_replicaof("h").is_err());
        assert_eq!(crate::config::master_of("h 1"), Some(("h".into(), 1)));
        assert_eq!(crate::config::master_of(""), None);
    }
}
