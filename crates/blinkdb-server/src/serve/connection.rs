//! One client connection: read what is there, run every complete command,
//! then write all replies at once (pipelining never flushes per reply). What
//! the socket does not take waits in the output queue (`output.rs`) while the
//! connection goes on reading and running commands.

use crate::client::ClientInfo;
use crate::commands::table::props;
use crate::exec::blocking::Outcome;
use crate::exec::session::{Block, Client};
use crate::exec::{self, Source};
use crate::net::output::OutputQueue;
use crate::net::socket::Socket;
use crate::protocol::{push_error_line, Out, RequestLimits, RequestParser};
use crate::server::state::Shared;
use blinkdb_engine::AofError;
use bytes::{Buf, BytesMut};
use std::future::Future;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::AsyncWriteExt;

const READ_CHUNK: usize = 16 * 1024;
/// Read buffers an event-loop thread keeps for its connections to borrow.
const SPARE_READ_BUFFERS: usize = 64;

thread_local! {
    /// Read buffers of connections that went idle. An idle connection holds no
    /// buffer (10k idle clients cost little), and a busy one borrows one from
    /// here instead of a fresh 16 KB allocation per request: that malloc/free
    /// pair (with glibc's fastbin consolidation) was measurable per round trip.
    static SPARE_INBUFS: std::cell::RefCell<Vec<BytesMut>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn borrow_read_buffer() -> BytesMut {
    SPARE_INBUFS
        .with(|spare| spare.borrow_mut().pop())
        .unwrap_or_else(|| BytesMut::with_capacity(READ_CHUNK))
}

fn return_read_buffer(mut buf: BytesMut) {
    buf.clear();
    // Empty and unshared, so this moves the start back instead of allocating.
    buf.reserve(READ_CHUNK);
    if buf.capacity() > 4 * READ_CHUNK {
        return; // grown by a big request: not kept
    }
    SPARE_INBUFS.with(|spare| {
        let mut spare = spare.borrow_mut();
        if spare.len() < SPARE_READ_BUFFERS {
            spare.push(buf);
        }
    });
}

/// Removes a client from the registry when its task ends, also by a panic
/// (a command that panics closes only its own connection: docs/design.md).
struct Registered<'a>(&'a Shared, &'a ClientInfo);

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        crate::memory::client_eviction::forget(self.0, self.1);
        self.0.unregister(self.1.id);
    }
}

/// Why a connection's wait for its next batch ended.
enum Woken {
    /// The socket has something to read (a request, or its end).
    Readable,
    /// Messages to write, or news that another connection made this client's
    /// inbox: a batch runs without a read.
    Messages,
    /// MONITOR lines to write.
    MonitorLines,
    /// Killed (CLIENT KILL, shutdown, an output limit), idle past `timeout`,
    /// or the socket failed.
    Close,
}

/// The idle timeout (`timeout`) of a connection: one timer for the
/// connection's life, moved only when it fires before the connection has been
/// idle long enough, rather than one timer armed and dropped per request.
#[derive(Default)]
struct IdleTimer {
    /// The timeout it runs for (0: none) and its timer.
    armed: Option<(u64, std::pin::Pin<Box<tokio::time::Sleep>>)>,
    /// When the connection last started waiting.
    since: Option<tokio::time::Instant>,
}

impl IdleTimer {
    /// The connection starts waiting, with `timeout` seconds (0: never times out).
    fn start(&mut self, timeout: u64) {
        if timeout == 0 {
            self.armed = None;
            return;
        }
        let now = tokio::time::Instant::now();
        self.since = Some(now);
        if !matches!(&self.armed, Some((secs, _)) if *secs == timeout) {
            let due = now + Duration::from_secs(timeout);
            self.armed = Some((timeout, Box::pin(tokio::time::sleep_until(due))));
        }
    }

    /// Ready once the connection has waited `timeout` since `start`.
    fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let (Some((secs, sleep)), Some(since)) = (&mut self.armed, self.since) else {
            return Poll::Pending;
        };
        let due = since + Duration::from_secs(*secs);
        while sleep.as_mut().poll(cx).is_ready() {
            if tokio::time::Instant::now() >= due {
                return Poll::Ready(());
            }
            // Armed during an earlier wait: the connection has been busy since.
            sleep.as_mut().reset(due);
        }
        Poll::Pending
    }
}

/// What the connection does after a batch of commands.
enum Next {
    /// Read more.
    Read,
    /// Close once the replies are written.
    Close,
    /// CLIENT PAUSE holds back the next command: wait, then run the rest.
    Paused,
    /// The last command waits before it answers (`Client::block`).
    Blocked,
}

pub async fn serve<S: Socket>(shared: Arc<Shared>, mut sock: S, info: Arc<ClientInfo>) {
    let _registered = Registered(&shared, &info);
    let mut client = Client::new(info.clone(), &shared);
    let mut parser = RequestParser::default();
    let mut inbuf = BytesMut::new();
    let mut out = Out::new(2);
    let mut queue = OutputQueue::new(info.clone());
    // Byte ranges in `out.buf` of the replies of commands that wrote to the log.
    let mut logged_replies = Vec::new();
    // Commands already in `inbuf` that a pause or a block held back.
    let mut held = false;
    let mut idle = IdleTimer::default();
    loop {
        if !held {
            if inbuf.is_empty() && inbuf.capacity() > 0 && !parser.in_progress() {
                return_read_buffer(std::mem::take(&mut inbuf));
                info.qbuf_free.store(0, Ordering::Relaxed);
            }
            // Subscribers and monitors never time out, as in Redis.
            let timeout = match (&client.pubsub, &client.monitor) {
                (None, None) => client.settings(&shared).timeout_secs,
                _ => 0,
            };
            idle.start(timeout);
            let monitor = client.monitor.clone();
            let mut monitor_lines =
                std::pin::pin!(monitor.as_ref().map(|sink| sink.ready.notified()));
            // One hand-written wait rather than a select! of futures made and
            // dropped per request: the socket, the kill signal and the inbox
            // each keep one waker slot that a poll refreshes in place.
            // Shutdown and CLIENT KILL both arrive through the kill signal; so
            // does the news that another connection made this client's inbox.
            // Replies waiting for the socket are written as it takes them,
            // while the connection also waits for what else may come.
            let (socket, info, idle, pending) = (&mut sock, &*info, &mut idle, &mut queue);
            let woken = std::future::poll_fn(move |cx| {
                if info.kill_signal.poll_raised(cx).is_ready() {
                    return Poll::Ready(if info.is_killed() {
                        Woken::Close
                    } else {
                        Woken::Messages
                    });
                }
                if !pending.is_empty()
                    && matches!(pending.poll_drain(socket, cx), Poll::Ready(Err(_)))
                {
                    return Poll::Ready(Woken::Close);
                }
                match socket.poll_read_ready(cx) {
                    Poll::Ready(Ok(())) => return Poll::Ready(Woken::Readable),
                    Poll::Ready(Err(_)) => return Poll::Ready(Woken::Close),
                    Poll::Pending => {}
                }
                if crate::pubsub::poll_messages(info, cx).is_ready() {
                    return Poll::Ready(Woken::Messages);
                }
                if idle.poll_expired(cx).is_ready() {
                    return Poll::Ready(Woken::Close);
                }
                if let Some(lines) = monitor_lines.as_mut().as_pin_mut() {
                    if lines.poll(cx).is_ready() {
                        return Poll::Ready(Woken::MonitorLines);
                    }
                }
                Poll::Pending
            })
            .await;
            let readable = match woken {
                Woken::Readable => true,
                Woken::Messages => false,
                Woken::Close => break,
                Woken::MonitorLines => {
                    if !send_monitor_lines(&mut sock, &mut client, &mut queue) {
                        break;
                    }
                    continue;
                }
            };
            // Woken for messages to write (or an inbox made elsewhere), it
            // does not read: a read would almost always find nothing (one
            // recvfrom per wake-up of a subscriber), and a request that did
            // come is read on the next turn, the socket being ready then.
            if readable {
                let awaited = parser.awaited_len();
                if awaited > inbuf.capacity() {
                    // A large argument: a buffer of its size, once, rather
                    // than doublings that would hold up to twice as much.
                    let mut sized = BytesMut::with_capacity(awaited);
                    sized.extend_from_slice(&inbuf);
                    inbuf = sized;
                } else if inbuf.capacity() == 0 {
                    inbuf = borrow_read_buffer();
                } else if awaited == 0 || inbuf.len() >= awaited {
                    // (While a large argument is still coming into a buffer
                    // that holds it, the room left is enough: growing there
                    // doubled the buffer when its last bytes were late, and
                    // client eviction then counted twice the argument.)
                    make_room(&mut inbuf);
                }
                match sock.read_now(&mut inbuf) {
                    Ok(0) => break,
                    Ok(n) => {
                        client.net_in += n as u64;
                        client.reads += 1;
                        crate::net::busy_poll::read_done(info.id);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    Err(_) => break,
                }
            }
        }
        held = false;
        let clock = blinkdb_engine::batch_clock();
        let now = clock.now;
        info.last_active_ms.store(now, Ordering::Relaxed);
        logged_replies.clear();
        // Messages that arrived before these commands were read go out before
        // their replies, as they would from Redis's output buffer.
        crate::pubsub::flush_mailbox(&client.info, &mut out);
        out.cap = crate::serve::output_limits::hard_cap(&mut client, &shared)
            .saturating_sub(queue.bytes());
        let mut next = run_commands(
            &shared,
            &mut client,
            &mut parser,
            &mut inbuf,
            &mut out,
            &mut logged_replies,
        );
        drop(clock);
        while crate::scripting::run::runnable(&client) {
            // A script past its busy threshold paused: the other connections
            // of this thread get their turn (BUSY, SCRIPT KILL), then it goes on.
            // (One stopped in the debugger waits for the client's next
            // request instead: run_commands hands it over.)
            let (lsn_before, reply_start) = (client.pending_lsn, out.buf.len());
            while crate::scripting::run::runnable(&client) {
                tokio::task::yield_now().await;
                crate::scripting::run::resume(&shared, &mut client, &mut out);
            }
            let mut served_lsn = 0;
            if blinkdb_engine::ready_keys::pending() {
                served_lsn = crate::exec::blocking::serve_ready(&shared);
            }
            // What the script changed: invalidations after its reply.
            shared.notify.tracking.broadcast();
            if client.tracking.is_some() {
                crate::pubsub::flush_mailbox(&client.info, &mut out);
            }
            if client.pending_lsn > lsn_before {
                logged_replies.push((reply_start, out.buf.len()));
            }
            client.pending_lsn = client.pending_lsn.max(served_lsn);
            if matches!(next, Next::Close) {
                break;
            }
            // The commands pipelined after the script.
            let _clock = blinkdb_engine::batch_clock();
            next = run_commands(
                &shared,
                &mut client,
                &mut parser,
                &mut inbuf,
                &mut out,
                &mut logged_replies,
            );
        }
        if inbuf.len() > client.settings(&shared).client_query_buffer_limit {
            tracing::warn!(
                "Closing client that reached max query buffer length: id={} addr={} (qbuf={})",
                client.id,
                info.addr,
                inbuf.len()
            );
            break;
        }
        if client.pending_lsn > 0 {
            let lsn = std::mem::take(&mut client.pending_lsn);
            client.woff_lsn = client.woff_lsn.max(lsn);
            match crate::persistence::flusher::durable(&shared.engine, lsn).await {
                Ok(()) => {}
                Err(e @ (AofError::WriteFailed { .. } | AofError::SyncFailed { .. })) => {
                    // Not durable: every write of the batch answers MISCONF instead
                    // of its reply; reads keep theirs and the connection stays open.
                    tracing::warn!(
                        "AOF write failed before replying to client id={}: {e}",
                        client.id
                    );
                    let files = std::mem::take(&mut out.files);
                    (out.buf, out.files) =
                        refuse_writes(&out.buf, files, &logged_replies, &e.to_string());
                }
                Err(e) => {
                    tracing::warn!(
                        "Closing client id={}: AOF unavailable before replying: {e}",
                        client.id
                    );
                    break;
                }
            }
        }
        let pending = queue.bytes() + out.len();
        if crate::serve::output_limits::replies_over_limit(&mut client, &shared, pending, now) {
            break;
        }
        if !send_replies(&mut sock, &mut client, &mut out, &mut queue, &shared) {
            break;
        }
        let client_memory_limit = client.settings(&shared).maxmemory_clients;
        if crate::memory::client_eviction::check_client(&*shared, &client.info, client_memory_limit)
        {
            break;
        }
        client.flush_stats(&shared, now, false);
        if let Some(handoff) = client.replica_handoff.take() {
            // PSYNC/SYNC: the connection is the replica's stream from now on,
            // after the replies before it.
            if !flush(&mut sock, &mut queue, &info).await {
                break;
            }
            if client.settings(&shared).repl_disable_tcp_nodelay {
                crate::net::socket::disable_nodelay(sock.as_raw_fd());
            }
            let rest = std::mem::take(&mut inbuf);
            crate::replication::master::serve(&shared, &mut sock, &mut client, rest, handoff).await;
            break;
        }
        if client.monitor.is_some() && !send_monitor_lines(&mut sock, &mut client, &mut queue) {
            break;
        }
        match next {
            Next::Close => {
                if flush(&mut sock, &mut queue, &info).await {
                    let _ = sock.shutdown().await;
                }
                break;
            }
            Next::Read => {}
            Next::Paused => {
                let pause = shared.exec.pause.wait();
                let _held = shared.exec.pause.hold();
                let held_io = Held {
                    inbuf: &mut inbuf,
                    queue: &mut queue,
                };
                if !hold(&mut sock, held_io, &info, &mut client, pause).await {
                    break;
                }
                held = true;
            }
            Next::Blocked => {
                let Some(Block::Waiting(waiter)) = client.block.take() else {
                    continue;
                };
                let until = crate::exec::block_timer::wait(
                    &waiter,
                    waiter.deadline,
                    waiter.seq(),
                    waiter.woken(),
                );
                let held_io = Held {
                    inbuf: &mut inbuf,
                    queue: &mut queue,
                };
                if !hold(&mut sock, held_io, &info, &mut client, until).await {
                    shared.exec.blocking.cancel(&shared, &waiter);
                    break;
                }
                info.usage.set_argv(0);
                let mut close = false;
                match shared.exec.blocking.finish(&shared, &waiter) {
                    Outcome::Served(reply, lsn) => {
                        if lsn > 0 && !wait_durable(&shared, &client, lsn).await {
                            break;
                        }
                        if !client.reply_off {
                            out.buf.extend_from_slice(&reply);
                        }
                    }
                    unserved => {
                        close = matches!(unserved, Outcome::Failed { close: true, .. });
                        if !client.reply_off {
                            let reply = waiter.timeout_reply;
                            crate::exec::blocking::reply_unserved(
                                &shared, client.id, &mut out, reply, &unserved,
                            );
                        }
                    }
                }
                if !send_replies(&mut sock, &mut client, &mut out, &mut queue, &shared) {
                    break;
                }
                if close {
                    if flush(&mut sock, &mut queue, &info).await {
                        let _ = sock.shutdown().await;
                    }
                    break;
                }
                // Commands the client sent while it waited run now; with none
                // (a queue consumer's usual case) the loop goes straight back
                // to reading instead of running an empty batch first.
                held = !inbuf.is_empty();
            }
        }
        if info.is_killed() {
            let _ = sock.shutdown().await;
            break;
        }
    }
    // A script the closed connection left suspended (stopped in the
    // debugger) runs to its end, so that it lets the other clients in.
    crate::scripting::run::abandon(&shared, &mut client);
    client.flush_stats(&shared, 0, true);
    crate::commands::multi::unwatch_all(&shared, &mut client);
    crate::pubsub::unsubscribe_all(&shared.pubsub, &client.info, &mut client.pubsub);
    crate::commands::tracking::disable(&shared, &mut client);
}

/// [`run_commands`] for the fuzz targets (fuzz/): one read's worth of bytes through
/// the parser and dispatch as a connection runs them, without a socket.
#[doc(hidden)]
pub fn run_commands_for_fuzzing(
    shared: &Shared,
    client: &mut Client,
    parser: &mut RequestParser,
    inbuf: &mut BytesMut,
    out: &mut Out,
) -> bool {
    let _clock = blinkdb_engine::batch_clock();
    loop {
        let next = run_commands(shared, client, parser, inbuf, out, &mut Vec::new());
        // Without a socket there is no time to wait: a blocked command ends
        // at once, as if its timeout passed (or with what served it), and
        // the commands after it run.
        let Some(Block::Waiting(waiter)) = client.block.take() else {
            return matches!(next, Next::Close);
        };
        match shared.exec.blocking.finish(shared, &waiter) {
            Outcome::Served(reply, _) => out.buf.extend_from_slice(&reply),
            unserved => crate::exec::blocking::reply_unserved(
                shared,
                client.id,
                out,
                waiter.timeout_reply,
                &unserved,
            ),
        }
    }
}

/// Waits until the log holds a served blocked command's effect, as its reply
/// must (the fsync policy); false if it never will (the connection closes).
async fn wait_durable(shared: &Arc<Shared>, client: &Client, lsn: u64) -> bool {
    match crate::persistence::flusher::served_durable(&shared.engine, lsn).await {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(
                "Closing client id={}: the AOF failed before a blocked command's reply: {e}",
                client.id
            );
            false
        }
    }
}

/// Room for the next read. A large read buffer (one sized to a large
/// argument, full with it) grows by a quarter rather than doubling: a
/// request left unfinished would hold twice its size (its client's memory,
/// which client eviction counts); still geometric, so a client streaming
/// into a held buffer costs amortized linear copying.
fn make_room(inbuf: &mut BytesMut) {
    if inbuf.capacity() - inbuf.len() >= READ_CHUNK / 4 {
        return;
    }
    if inbuf.capacity() >= 1 << 20 {
        let len = inbuf.len();
        let mut grown = BytesMut::with_capacity(len + (len / 4).max(READ_CHUNK));
        grown.extend_from_slice(inbuf);
        *inbuf = grown;
    } else {
        inbuf.reserve(READ_CHUNK);
    }
}

/// Redis's PROTO_REPLY_CHUNK_BYTES: the largest reply buffer a client keeps
/// between batches.
const REPLY_CHUNK: usize = 16 * 1024;

/// Writes the gathered replies, with the messages waiting for this client,
/// as far as the socket takes them now; the rest joins the output queue.
/// False if the connection must close.
fn send_replies<S: Socket>(
    sock: &mut S,
    client: &mut Client,
    out: &mut Out,
    queue: &mut OutputQueue,
    shared: &Shared,
) -> bool {
    let messages = crate::pubsub::take_messages(&client.info, &mut out.buf).map_or(0, |(_, n)| n);
    if out.is_empty() {
        return true;
    }
    let (len, fresh) = (out.buf.len(), client.reply_buffer_fresh);
    client.net_out += out.len() as u64;
    client.writes += 1;
    if queue.is_empty() && out.files.is_empty() {
        let done = match sock.write_now(&out.buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
            Err(_) => return false,
        };
        if done < len {
            // The rest waits for the client to read, without copying it.
            let allocated = out.buf.capacity();
            let mut rest = std::mem::take(&mut out.buf);
            rest.advance(done);
            queue.push_buffer(rest, allocated, messages);
        } else if let Some(inbox) = client.info.inbox_if_any() {
            inbox.written(messages);
        }
    } else {
        queue.push_out(out, messages);
        if queue.drain_now(sock).is_err() {
            return false;
        }
    }
    out.clear();
    // A buffer given to the queue, or grown past Redis's 16 KB reply chunk,
    // is not kept (unless DEBUG REPLYBUFFER RESIZING 0 keeps it as grown):
    // Redis keeps at most that buffer, and frees the blocks a larger batch
    // took once they are written. Kept, a batch's buffer would hold its peak
    // per client: with maxmemory, the invalidations of evicted keys growing
    // tracking clients' buffers would evict more keys, and so on.
    let shrink = shared.debug.reply_buffer_resizing.load(Ordering::Relaxed);
    client.reply_buffer_fresh =
        out.buf.capacity() == 0 || (shrink && out.buf.capacity() > REPLY_CHUNK);
    if client.reply_buffer_fresh {
        out.buf = BytesMut::new();
    }
    client
        .info
        .usage
        .set_reply_buffer(out.buf.capacity(), len, fresh);
    true
}

/// Writes everything queued, unless the client is killed first; false if the
/// connection must close without it.
async fn flush<S: Socket>(sock: &mut S, queue: &mut OutputQueue, info: &ClientInfo) -> bool {
    std::future::poll_fn(|cx| {
        if info.kill_signal.poll_raised(cx).is_ready() && info.is_killed() {
            return Poll::Ready(false);
        }
        match std::task::ready!(queue.poll_drain(sock, cx)) {
            // A TLS session's last records too (nothing to do for plain sockets).
            Ok(()) => std::pin::Pin::new(&mut *sock)
                .poll_flush(cx)
                .map(|r| r.is_ok()),
            Err(_) => Poll::Ready(false),
        }
    })
    .await
}

/// Queues the lines MONITOR gathered for this connection; false if it must
/// close (the socket failed, or it fell too far behind).
fn send_monitor_lines<S: Socket>(
    sock: &mut S,
    client: &mut Client,
    queue: &mut OutputQueue,
) -> bool {
    let Some(sink) = &client.monitor else {
        return true;
    };
    if sink.overflowed() {
        return false;
    }
    let lines = sink.take();
    if lines.is_empty() {
        return true;
    }
    client.net_out += lines.len() as u64;
    queue.push_bytes(lines.into(), 0);
    queue.drain_now(sock).is_ok()
}

/// What a held connection keeps serving: the commands it reads are kept for
/// later, the replies queued before are written.
struct Held<'a> {
    inbuf: &'a mut BytesMut,
    queue: &'a mut OutputQueue,
}

/// Waits for `until` while the connection holds commands back, still
/// reading what the client sends (kept for later) so that a client that goes
/// away, or is killed, is noticed. False when the connection must close.
async fn hold<S: Socket>(
    sock: &mut S,
    held: Held<'_>,
    info: &ClientInfo,
    client: &mut Client,
    until: impl Future<Output = ()>,
) -> bool {
    let Held { inbuf, queue } = held;
    let mut until = std::pin::pin!(until);
    std::future::poll_fn(|cx| loop {
        if until.as_mut().poll(cx).is_ready() {
            return Poll::Ready(true);
        }
        if info.kill_signal.poll_raised(cx).is_ready() && info.is_killed() {
            return Poll::Ready(false);
        }
        if !queue.is_empty() && matches!(queue.poll_drain(sock, cx), Poll::Ready(Err(_))) {
            return Poll::Ready(false);
        }
        match sock.poll_read_ready(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Err(_)) => return Poll::Ready(false),
            Poll::Ready(Ok(())) => {}
        }
        make_room(inbuf);
        match sock.read_now(inbuf) {
            Ok(0) => return Poll::Ready(false),
            Ok(n) => {
                client.net_in += n as u64;
                client.reads += 1;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => return Poll::Ready(false),
        }
    })
    .await
}

/// Runs every complete command in `inbuf`, then drops their bytes from it.
fn run_commands(
    shared: &Shared,
    client: &mut Client,
    parser: &mut RequestParser,
    inbuf: &mut BytesMut,
    out: &mut Out,
    logged_replies: &mut Vec<(usize, usize)>,
) -> Next {
    let max_bulk = client.settings(shared).proto_max_bulk_len;
    let client_memory_limit = client.settings(shared).maxmemory_clients;
    let mut consumed = 0;
    // Held for the whole batch: an EXEC on another thread waits for its end.
    // None while a script is past its busy threshold: commands get BUSY.
    let busy = &shared.scripting.busy;
    let mut gate = shared.exec.gate.shared_unless(busy);
    let next = loop {
        let limits = RequestLimits {
            max_bulk_len: max_bulk,
            authenticated: !client.auth_required(shared),
        };
        match parser.parse(&inbuf[consumed..], limits) {
            Ok(parsed) => {
                let Some(args) = parsed.args else {
                    consumed += parsed.consumed;
                    break Next::Read;
                };
                if crate::scripting::run::awaits_debugger(client) {
                    // A debugger command for the stopped script (SCRIPT
                    // DEBUG SYNC), not a command to run.
                    consumed += parsed.consumed;
                    crate::scripting::run::debugger_input(shared, client, out, &args);
                    if client.script.is_none() {
                        break Next::Close;
                    }
                    if crate::scripting::run::awaits_debugger(client) {
                        continue;
                    }
                    break Next::Read;
                }
                // Looked up once: the pause, the gate and admission use it.
                let found = exec::lookup(&args);
                if shared.exec.pause.mode() != crate::exec::pause::NONE
                    && exec::admit::paused(shared, client, found, &args)
                {
                    break Next::Paused; // not consumed: it runs after the pause
                }
                let info = &client.info;
                info.qbuf
                    .store((inbuf.len() - consumed) as u64, Ordering::Relaxed);
                let free = (inbuf.capacity() - inbuf.len()) as u64;
                info.qbuf_free.store(free, Ordering::Relaxed);
                consumed += parsed.consumed;
                if client_memory_limit > 0 {
                    // The arguments count in the client's memory while it
                    // runs: one this large has it evicted before it runs.
                    info.usage.set_argv(args.iter().map(|a| a.len()).sum());
                    if crate::memory::client_eviction::check_client(
                        shared,
                        info,
                        client_memory_limit,
                    ) {
                        break Next::Close;
                    }
                }
                let (lsn_before, reply_start) = (client.pending_lsn, out.buf.len());
                let files_before = out.files.len();
                if gate.is_none() {
                    gate = shared.exec.gate.shared_unless(busy);
                }
                let known = found.and_then(Result::ok);
                let alone = |client: &Client| {
                    known.is_some_and(|spec| {
                        // EXEC always; a SORT with patterns, outside MULTI.
                        spec.has_prop(props::RUNS_QUEUE)
                            || (client.multi.is_none() && spec.runs_alone(&args))
                    })
                };
                let script = |client: &Client| {
                    client.multi.is_none() && known.is_some_and(|s| s.has_prop(props::RUNS_SCRIPT))
                };
                let run = |client: &mut Client, out: &mut Out, busy: bool| {
                    exec::process(shared, client, out, &args, found, Source::Client { busy })
                };
                if gate.is_none() {
                    // A script is past its busy threshold: admission refuses
                    // all but the few commands allowed then.
                    run(client, out, true);
                } else if script(client) {
                    // Alone too; the script keeps the exclusive mode if it
                    // pauses past its busy threshold (scripting/run.rs).
                    drop(gate.take());
                    client.script_gate =
                        Some(crate::exec::gate::ExclusiveToken::take(shared.arc()));
                    run(client, out, false);
                    client.script_gate = None;
                    if client.script.is_some() {
                        break Next::Read;
                    }
                    gate = shared.exec.gate.shared_unless(busy);
                } else if alone(client) {
                    // Alone on every connection thread: no other command
                    // interleaves (EXEC, and a SORT reading keys its
                    // patterns name or storing).
                    drop(gate.take());
                    let exclusive = shared.exec.gate.exclusive();
                    run(client, out, false);
                    drop(exclusive);
                    gate = shared.exec.gate.shared_unless(busy);
                } else {
                    run(client, out, false);
                }
                let mut served_lsn = 0;
                if blinkdb_engine::ready_keys::pending() {
                    // Clients blocked on keys this command filled are served
                    // before the next command runs, as in Redis.
                    served_lsn = crate::exec::blocking::serve_ready(shared);
                }
                if client.reply_off || client.reply_skip {
                    // CLIENT REPLY OFF / SKIP: the reply is dropped, but not
                    // the Pub/Sub frames the command wrote (as in Redis).
                    out.buf.truncate(reply_start.max(out.pushed_to));
                    out.files.truncate(files_before);
                } else if client.pending_lsn > lsn_before {
                    logged_replies.push((reply_start, out.buf.len()));
                }
                // The effects of the pops served go out in this thread's
                // round too, so that the woken connections find them written.
                client.pending_lsn = client.pending_lsn.max(served_lsn);
                if client.tracking.is_some() {
                    // Invalidations this command caused to this client come after
                    // its reply (and after a transaction's whole reply), as in Redis.
                    crate::pubsub::flush_mailbox(&client.info, out);
                }
                client.reply_skip = std::mem::take(&mut client.reply_skip_next);
                if client.close_after_reply {
                    break Next::Close;
                }
                if out.buf.len() >= out.cap {
                    // Over the hard output limit: the connection closes after
                    // this batch, and runs none of the commands after it (as
                    // Redis's CLIENT_CLOSE_ASAP stops reading).
                    break Next::Read;
                }
                if client.block.is_some() {
                    break Next::Blocked;
                }
            }
            Err(e) => {
                tracing::debug!("Protocol error from client id={}: {}", client.id, e.0);
                out.error(&format!("ERR {}", e.0));
                break Next::Close;
            }
        }
    };
    drop(gate);
    // BCAST invalidations of keys this batch changed (Redis sends them before
    // its event loop sleeps).
    shared.notify.tracking.broadcast();
    inbuf.advance(consumed);
    let info = &client.info;
    let (taken, partial_args) = parser.progress();
    if !matches!(next, Next::Blocked) {
        // A blocked command keeps its arguments; else those of the request
        // still being received.
        info.usage.set_argv(partial_args);
    }
    info.qbuf
        .store((inbuf.len() - taken) as u64, Ordering::Relaxed);
    let free = inbuf.capacity() - inbuf.len();
    info.qbuf_free.store(free as u64, Ordering::Relaxed);
    next
}

/// The batch's replies with each reply in `logged` (ascending, disjoint ranges)
/// replaced by the error line `-<error>`, and `files` (values read when sending,
/// each sent before the buffer byte at its position) moved with the bytes around
/// them. A logged reply holds no such value (only GET makes them, and it is not
/// logged).
fn refuse_writes<T>(
    replies: &[u8],
    files: Vec<(usize, T)>,
    logged: &[(usize, usize)],
    error: &str,
) -> (BytesMut, Vec<(usize, T)>) {
    let mut rebuilt = BytesMut::with_capacity(replies.len());
    let mut moved = Vec::with_capacity(files.len());
    let mut files = files.into_iter().peekable();
    let mut at = 0;
    for &(start, end) in logged {
        while let Some((pos, src)) = files.next_if(|(pos, _)| *pos <= start) {
            moved.push((rebuilt.len() + pos - at, src));
        }
        rebuilt.extend_from_slice(&replies[at..start]);
        while files.next_if(|(pos, _)| *pos < end).is_some() {}
        push_error_line(&mut rebuilt, error.as_bytes());
        at = end;
    }
    for (pos, src) in files {
        moved.push((rebuilt.len() + pos - at, src));
    }
    rebuilt.extend_from_slice(&replies[at..]);
    (rebuilt, moved)
}

#[cfg(test)]
mod tests {
    use super::refuse_writes;

    #[test]
    fn only_logged_replies_become_errors() {
        let replies = b"$1\r\na\r\n+OK\r\n:1\r\n+OK\r\n";
        let logged = [(7, 12), (16, 21)];
        let (rebuilt, files) = refuse_writes::<()>(replies, vec![], &logged, "MISCONF x");
        assert_eq!(
            &rebuilt[..],
            b"$1\r\na\r\n-MISCONF x\r\n:1\r\n-MISCONF x\r\n"
        );
        assert!(files.is_empty());
    }

    #[test]
    fn values_read_when_sending_move_with_the_bytes_around_them() {
        // Replies: <GET a> +OK(SET) :1 <GET b> +OK(SET) <GET c>, where each GET's
        // reply is a file entry (no bytes in the buffer yet).
        let replies = b"+OK\r\n:1\r\n+OK\r\n";
        let files = vec![(0, "a"), (9, "b"), (14, "c")];
        let logged = [(0, 5), (9, 14)];
        let (rebuilt, files) = refuse_writes(replies, files, &logged, "MISCONF x");
        assert_eq!(&rebuilt[..], b"-MISCONF x\r\n:1\r\n-MISCONF x\r\n");
        assert_eq!(files, vec![(0, "a"), (16, "b"), (28, "c")]);
    }
}
