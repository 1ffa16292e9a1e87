//! The master side: SYNC/PSYNC, REPLCONF from a replica, the full sync (an
//! RDB snapshot made without fork, sent as a `$<len>` bulk), then the write
//! stream from the backlog, and the replica's REPLCONF ACKs.

use super::backlog::ReplicaState;
use crate::client::FLAG_REPLICA;
use crate::commands::Ctx;
use crate::exec::session::Client;
use crate::net::socket::Socket;
use crate::protocol::{Args, RequestLimits, RequestParser};
use crate::server::state::Shared;
use bytes::BytesMut;
use std::io::Read;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::sync::Notify;

/// What a replica said about itself before PSYNC (REPLCONF).
#[derive(Default, Debug, Clone)]
pub struct ReplConf {
    pub listening_port: u16,
    pub ip_address: Option<String>,
    pub capa_eof: bool,
    pub capa_psync2: bool,
}

/// PSYNC's outcome, acted on by the connection once the reply is out: the
/// connection becomes the replica's stream.
pub enum Handoff {
    /// A full sync: snapshot, RDB, then the stream; true for SYNC (no
    /// `+FULLRESYNC` line: a pre-PSYNC replica does not expect one).
    Full(bool),
    /// `+CONTINUE` was sent: the stream, from the offset PSYNC asked for.
    Continue(Arc<Notify>),
}

fn eq_ic(a: &[u8], b: &str) -> bool {
    a.eq_ignore_ascii_case(b.as_bytes())
}

fn peer_ip(client: &Client) -> String {
    match &client.info.peer {
        crate::client::Peer::Tcp(ip) => ip.to_string(),
        _ => "?".into(),
    }
}

/// REPLCONF <option> <value> ...
pub fn replconf(ctx: &mut Ctx, args: &Args) {
    if args.len().is_multiple_of(2) {
        return ctx.out.error("ERR syntax error");
    }
    let mut conf = ctx.client.repl_conf.clone();
    for pair in args[1..].chunks(2) {
        let (opt, val) = (pair[0], pair[1]);
        if eq_ic(opt, "listening-port") {
            match std::str::from_utf8(val)
                .ok()
                .and_then(|v| v.parse::<i64>().ok())
            {
                Some(p) => conf.listening_port = p.clamp(0, 65535) as u16,
                None => return ctx.out.error("ERR value is not an integer or out of range"),
            }
        } else if eq_ic(opt, "ip-address") {
            if val.len() >= 46 {
                return ctx
                    .out
                    .error("ERR REPLCONF ip-address provided by replica instance is too long: 46 bytes or more");
            }
            conf.ip_address = Some(String::from_utf8_lossy(val).into_owned());
        } else if eq_ic(opt, "capa") {
            if eq_ic(val, "eof") {
                conf.capa_eof = true;
            } else if eq_ic(val, "psync2") {
                conf.capa_psync2 = true;
            }
            // Unknown capabilities are ignored, as by Redis.
        } else if eq_ic(opt, "ack") || eq_ic(opt, "fack") {
            // Only a replica's stream carries ACKs (read by `stream`); from
            // anyone else Redis ignores them, without a reply.
            return;
        } else if eq_ic(opt, "getack") {
            // Only a replica answers GETACK, on its master's link; Redis
            // ignores it from anyone else, without a reply.
            return;
        } else {
            return ctx.out.error(&format!(
                "ERR Unrecognized REPLCONF option: {}",
                String::from_utf8_lossy(opt)
            ));
        }
    }
    ctx.client.repl_conf = conf;
    ctx.out.ok();
}

/// SYNC and PSYNC <replid> <offset>.
pub fn psync(ctx: &mut Ctx, args: &Args) {
    if ctx.client.info.flags.load(Ordering::Relaxed) & FLAG_REPLICA != 0 {
        return;
    }
    let repl = &ctx.shared.replication;
    if args.len() > 3 && eq_ic(args[0], "psync") && eq_ic(args[3], "failover") {
        // FAILOVER from our master: we become the master if we follow the
        // same history (Redis 7.0's syncCommand).
        tracing::warn!(
            "Failover request received for replid {}.",
            String::from_utf8_lossy(args[1])
        );
        if !repl.link.is_replica.load(Ordering::Acquire) {
            return ctx
                .out
                .error("ERR PSYNC FAILOVER can't be sent to a master.");
        }
        let ours = repl.feed.lock().replid.clone();
        if !args[1].eq_ignore_ascii_case(ours.as_bytes()) {
            return ctx
                .out
                .error("ERR PSYNC FAILOVER replid must match my replid.");
        }
        super::replica::promote(ctx.shared);
        tracing::info!(
            "MASTER MODE enabled (failover request from '{}')",
            ctx.client.info.addr
        );
    }
    if repl.failover.phase() != super::failover::Phase::NoFailover {
        return ctx.out.error("NOMASTERLINK Can't SYNC while failing over");
    }
    if repl.link.is_replica.load(Ordering::Acquire) && !super::replica::link_up(ctx.shared) {
        return ctx
            .out
            .error("NOMASTERLINK Can't SYNC while not connected with my master");
    }
    let conf = ctx.client.repl_conf.clone();
    let ip = conf
        .ip_address
        .clone()
        .unwrap_or_else(|| peer_ip(ctx.client));
    let feed = &ctx.shared.replication.feed;
    if eq_ic(args[0], "psync") {
        let offset = std::str::from_utf8(args[2])
            .ok()
            .and_then(|v| v.parse::<i64>().ok());
        let replid = String::from_utf8_lossy(args[1]);
        if let Some(offset) = offset.filter(|o| *o > 0) {
            if let Some((id, wake)) = feed.try_continue(
                &ctx.client.info,
                ip,
                conf.listening_port,
                &replid,
                offset as u64,
            ) {
                let line = if conf.capa_psync2 {
                    format!("+CONTINUE {id}\r\n")
                } else {
                    "+CONTINUE\r\n".into()
                };
                ctx.out.buf.extend_from_slice(line.as_bytes());
                mark_replica(ctx.client);
                feed.sync_partial_ok.fetch_add(1, Ordering::Relaxed);
                tracing::info!(
                    "Partial resynchronization request from {} accepted. Sending {} bytes of backlog starting from offset {offset}.",
                    ctx.client.info.addr,
                    feed.pending(ctx.client.id)
                );
                ctx.client.replica_handoff = Some(Handoff::Continue(wake));
                return;
            }
        }
        if replid != "?" {
            feed.sync_partial_err.fetch_add(1, Ordering::Relaxed);
            tracing::info!(
                "Partial resynchronization not accepted for replica {}: full sync",
                ctx.client.info.addr
            );
        }
    }
    tracing::info!("Replica {} asks for synchronization", ctx.client.info.addr);
    mark_replica(ctx.client);
    feed.sync_full.fetch_add(1, Ordering::Relaxed);
    ctx.client.replica_handoff = Some(Handoff::Full(eq_ic(args[0], "sync")));
}

fn mark_replica(client: &mut Client) {
    client.info.flags.fetch_or(FLAG_REPLICA, Ordering::Relaxed);
}

/// Writes `bytes`, giving up if the client is killed meanwhile.
async fn send<S: Socket>(sock: &mut S, client: &mut Client, bytes: &[u8]) -> bool {
    let info = client.info.clone();
    // Flushed too: a TLS session's last records go out now, not with the next write.
    let mut write = std::pin::pin!(async {
        sock.write_all(bytes).await?;
        sock.flush().await
    });
    let ok = loop {
        tokio::select! {
            r = &mut write => break r.is_ok(),
            _ = info.kill_signal.notified() => if info.is_killed() { break false },
        }
    };
    if ok {
        // A replica's stream is replication traffic, not client output.
        super::NET_REPL_OUTPUT.fetch_add(bytes.len() as u64, std::sync::atomic::Ordering::Relaxed);
    }
    ok
}

/// Serves the connection as a replica's from now on, until it ends.
pub async fn serve<S: Socket>(
    shared: &Arc<Shared>,
    sock: &mut S,
    client: &mut Client,
    inbuf: BytesMut,
    handoff: Handoff,
) {
    let id = client.id;
    // After a diskless transfer the stream waits for the replica's first
    // ACK: it finds the RDB's end by the EOF mark being the last bytes it
    // read, so nothing may follow the mark until it says it is done.
    let mut wait_ack = false;
    let wake = match handoff {
        Handoff::Continue(wake) => wake,
        Handoff::Full(pre_psync) => {
            let conf = client.repl_conf.clone();
            let ip = conf.ip_address.clone().unwrap_or_else(|| peer_ip(client));
            let wake =
                shared
                    .replication
                    .feed
                    .add_replica(client.info.clone(), ip, conf.listening_port);
            // A replica without `capa eof` gets the disk form, as from
            // Redis.
            let diskless = conf.capa_eof && shared.settings().repl_diskless_sync;
            let synced = if diskless {
                wait_ack = true;
                diskless_sync(shared, sock, client).await
            } else {
                full_sync(shared, sock, client, pre_psync).await
            };
            if !synced {
                shared.replication.feed.remove_replica(id);
                return;
            }
            wake
        }
    };
    shared.replication.feed.set_state(id, ReplicaState::Online);
    if wait_ack {
        tracing::info!(
            "Streamed RDB transfer with replica {} succeeded (socket). Waiting for REPLCONF ACK from replica to enable streaming",
            client.info.addr
        );
    } else {
        tracing::info!(
            "Synchronization with replica {} succeeded",
            client.info.addr
        );
    }
    stream(shared, sock, client, inbuf, wake, wait_ack).await;
    shared.replication.feed.remove_replica(id);
}

/// The snapshot, written to a file of its own by a thread, then sent as
/// `+FULLRESYNC <replid> <offset>` and a `$<len>` bulk. False if the
/// replica is gone or the snapshot failed.
async fn full_sync<S: Socket>(
    shared: &Arc<Shared>,
    sock: &mut S,
    client: &mut Client,
    pre_psync: bool,
) -> bool {
    let id = client.id;
    let settings = shared.settings();
    let (tmp, path) = crate::persistence::stale_temp::sync_names(&settings.dir, id);
    let (at_tx, at_rx) = tokio::sync::oneshot::channel::<u64>();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<Result<u64, String>>();
    let s = shared.clone();
    let file_path = path.clone();
    let spawned = std::thread::Builder::new()
        .name("repl-sync".into())
        .spawn(move || {
            let result = crate::persistence::rdb_file::start_sync_file(&*s, &file_path, tmp)
                .and_then(|file| {
                    s.engine.save_rdb_at(
                        file,
                        || s.exec.gate.exclusive(),
                        |gate| {
                            let _ = at_tx.send(s.replication.feed.start_full(id));
                            drop(gate);
                        },
                    )
                });
            let _ = done_tx.send(result);
        });
    if spawned.is_err() {
        tracing::warn!("Can't start the replication snapshot thread");
        return false;
    }
    tracing::info!(
        "Starting BGSAVE for SYNC with target: disk (replica {})",
        client.info.addr
    );
    let offset = match at_rx.await {
        Ok(o) => o,
        Err(_) => {
            let e = done_rx.await.unwrap_or_else(|_| Err("lost".into()));
            tracing::warn!("Replication snapshot failed: {e:?}");
            let _ = std::fs::remove_file(&path);
            return false;
        }
    };
    let replid = shared.replication.feed.lock().replid.clone();
    let line = if pre_psync {
        String::new()
    } else {
        format!("+FULLRESYNC {replid} {offset}\r\n")
    };
    if !send(sock, client, line.as_bytes()).await {
        // The thread still finishes its file: remove it when done.
        tokio::spawn(async move {
            let _ = done_rx.await;
            let _ = std::fs::remove_file(&path);
        });
        return false;
    }
    // Newlines keep the replica's link alive while the file is written.
    let mut done_rx = done_rx;
    let result = loop {
        tokio::select! {
            r = &mut done_rx => break r.unwrap_or_else(|_| Err("snapshot thread lost".into())),
            _ = tokio::time::sleep(Duration::from_secs(1)) => {
                if !send(sock, client, b"\n").await {
                    tokio::spawn(async move {
                        let _ = done_rx.await;
                        let _ = std::fs::remove_file(&path);
                    });
                    return false;
                }
            }
        }
    };
    if let Err(e) = result {
        tracing::warn!("Replication snapshot for {} failed: {e}", client.info.addr);
        let _ = std::fs::remove_file(&path);
        return false;
    }
    let sent = send_file(sock, client, &path).await;
    let _ = std::fs::remove_file(&path);
    sent
}

/// The diskless form (diskless.rs): waits, sending a newline a second, for
/// the next snapshot to start, then sends `+FULLRESYNC <replid> <offset>`,
/// `$EOF:<mark>`, the RDB as the snapshot thread hands it over, and the mark.
/// False if the replica is gone, too slow (repl-timeout), or the snapshot
/// failed.
async fn diskless_sync<S: Socket>(shared: &Arc<Shared>, sock: &mut S, client: &mut Client) -> bool {
    let diskless = &shared.replication.diskless;
    let mut start_rx = diskless.enqueue(shared, client.id);
    let mut last_newline = tokio::time::Instant::now();
    let start = loop {
        tokio::select! {
            r = &mut start_rx => match r {
                Ok(start) => break start,
                Err(_) => return false,
            },
            _ = tokio::time::sleep(Duration::from_millis(100)) => {
                diskless.maybe_start(shared);
                if last_newline.elapsed() >= Duration::from_secs(1) {
                    last_newline = tokio::time::Instant::now();
                    if !send(sock, client, b"\n").await {
                        return false;
                    }
                }
            }
        }
    };
    let replid = shared.replication.feed.lock().replid.clone();
    let head = format!(
        "+FULLRESYNC {replid} {}\r\n$EOF:{}\r\n",
        start.offset, start.mark
    );
    if !send(sock, client, head.as_bytes()).await {
        return false;
    }
    let timeout = shared.replication.timeout();
    let mut data = start.data;
    loop {
        match data.recv().await {
            Some(super::diskless::Msg::Data(chunk)) => {
                match tokio::time::timeout(timeout, send(sock, client, &chunk)).await {
                    Ok(true) => {
                        start.sent.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                    }
                    Ok(false) => return false,
                    Err(_) => {
                        tracing::warn!(
                            "Disconnecting timedout replica (full sync): {}",
                            client.info.addr
                        );
                        return false;
                    }
                }
            }
            Some(super::diskless::Msg::End(Ok(()))) => break,
            Some(super::diskless::Msg::End(Err(_))) | None => return false,
        }
    }
    send(sock, client, start.mark.as_bytes()).await
}

async fn send_file<S: Socket>(sock: &mut S, client: &mut Client, path: &std::path::Path) -> bool {
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => {
            tracing::warn!("Opening the sync file failed: {e}");
            return false;
        }
    };
    let len = match file.metadata() {
        Ok(m) => m.len(),
        Err(_) => return false,
    };
    if !send(sock, client, format!("${len}\r\n").as_bytes()).await {
        return false;
    }
    let mut buf = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let want = (left as usize).min(buf.len());
        if file.read_exact(&mut buf[..want]).is_err() {
            tracing::warn!("Reading the sync file failed");
            return false;
        }
        if !send(sock, client, &buf[..want]).await {
            return false;
        }
        left -= want as u64;
    }
    true
}

/// Stream bytes copied out of the backlog for one write. The copy is memory
/// the replica's link holds besides the backlog, which maxmemory counts:
/// kept to Redis's 16 KB replication-buffer block, as a stopped replica
/// holds one write's worth (at 256 KB, a replica that stopped reading made
/// the master evict keys with 32 KB of room; maxmemory.tcl).
const SEND_CHUNK: usize = 16 * 1024;

/// The stream: bytes from the backlog as they come; REPLCONF ACKs read from
/// the replica; dropped past the replica output limit, when killed, or when
/// the replica has been silent for repl-timeout.
async fn stream<S: Socket>(
    shared: &Arc<Shared>,
    sock: &mut S,
    client: &mut Client,
    mut inbuf: BytesMut,
    wake: Arc<Notify>,
    mut wait_ack: bool,
) {
    let id = client.id;
    let info = client.info.clone();
    let feed = &shared.replication.feed;
    let mut parser = RequestParser::default();
    // Its room taken now, not as the stream first fills it (which counted
    // against a maxmemory set in between).
    let mut chunk = Vec::with_capacity(SEND_CHUNK);
    let mut soft_since = 0u64;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    // Commands the replica pipelined after PSYNC.
    if !read_acks(shared, client, &mut parser, &mut inbuf, &mut wait_ack) {
        return;
    }
    loop {
        if info.is_killed() {
            return;
        }
        if feed.peek(id, SEND_CHUNK, &mut chunk).is_err() {
            return;
        }
        if wait_ack {
            chunk.clear();
        }
        if !chunk.is_empty() {
            if !send(sock, client, &chunk).await {
                return;
            }
            feed.sent(id, chunk.len());
            continue;
        }
        tokio::select! {
            _ = wake.notified() => {}
            _ = info.kill_signal.notified() => if info.is_killed() { return },
            r = sock.readable() => {
                if r.is_err() {
                    return;
                }
                if inbuf.capacity() - inbuf.len() < 4096 {
                    inbuf.reserve(16 * 1024);
                }
                match sock.read_now(&mut inbuf) {
                    Ok(0) => return,
                    Ok(n) => client.net_in += n as u64,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(_) => return,
                }
                if !read_acks(shared, client, &mut parser, &mut inbuf, &mut wait_ack) {
                    return;
                }
            }
            _ = tick.tick() => {
                let settings = shared.settings();
                let now = blinkdb_engine::now_ms();
                let pending = feed.pending(id) as usize;
                if settings.output_limits.replica.exceeded(pending, &mut soft_since, now) {
                    tracing::warn!(
                        "Client id={} addr={} closed for overcoming of output buffer limits.",
                        id, info.addr
                    );
                    return;
                }
                let last = feed.lock().replicas.iter().find(|r| r.info.id == id).map_or(now, |r| r.ack_ms);
                let timeout = shared.replication.timeout_secs.load(Ordering::Relaxed);
                if timeout > 0 && now.saturating_sub(last) > timeout * 1000 {
                    tracing::warn!("Disconnecting timedout replica (streaming sync): {}", info.addr);
                    return;
                }
            }
        }
    }
}

/// Runs what the replica sent: REPLCONF ACK <offset> (and PING); false on a
/// protocol error. An ACK clears `wait_ack`.
fn read_acks(
    shared: &Shared,
    client: &mut Client,
    parser: &mut RequestParser,
    inbuf: &mut BytesMut,
    wait_ack: &mut bool,
) -> bool {
    let mut consumed = 0;
    let ok = loop {
        let limits = RequestLimits {
            max_bulk_len: 1 << 20,
            authenticated: true,
        };
        match parser.parse(&inbuf[consumed..], limits) {
            Ok(parsed) => {
                consumed += parsed.consumed;
                let Some(args) = parsed.args else {
                    break true;
                };
                client
                    .info
                    .last_active_ms
                    .store(blinkdb_engine::now_ms(), Ordering::Relaxed);
                if args.len() >= 3 && eq_ic(args[0], "replconf") && eq_ic(args[1], "ack") {
                    let num = |a: &[u8]| std::str::from_utf8(a).ok()?.parse::<u64>().ok();
                    let Some(off) = num(args[2]) else {
                        continue;
                    };
                    // Redis 7.2+ replicas with an AOF add `FACK <offset>`: how
                    // far their AOF is fsync'd (WAITAOF counts those).
                    let fsynced = match args.get(3..5) {
                        Some([kw, v]) if eq_ic(kw, "fack") => match num(v) {
                            Some(f) => Some(f),
                            None => continue,
                        },
                        _ => None,
                    };
                    *wait_ack = false;
                    for waiter in shared.replication.feed.ack(client.id, off, fsynced) {
                        shared.exec.blocking.wake_wait(shared, waiter);
                    }
                }
            }
            Err(e) => {
                tracing::warn!("Protocol error from replica {}: {}", client.info.addr, e.0);
                break false;
            }
        }
    };
    bytes::Buf::advance(inbuf, consumed);
    ok
}
