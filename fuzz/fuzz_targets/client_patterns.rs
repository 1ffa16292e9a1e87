//! Clients that read late, slowly or never, served by the real connection
//! loop (`connection::serve`, its output queue `output.rs`) over unix socket
//! pairs on one single-threaded runtime: pipeliners that send everything
//! before they read, non-readers, blocked clients with replies queued before
//! their block, pushers, a subscriber that never reads and its publisher,
//! started in an order and with yields the input chooses, under an output
//! limit (`client-output-buffer-limit normal`) and `maxmemory-clients` or none.
//!
//! Checks (liveness: a panic is a finding): within 10 s every client that
//! reads gets exactly one well-formed reply per command, unless a limit it
//! could have reached closed it (its replies add up to the limit, or client
//! eviction killed it); every pipeline is taken whole by the server (a server
//! that stops reading while its replies wait deadlocks with such a client);
//! a fresh client's PING is answered while the non-readers stay connected; a
//! non-reader whose replies pass the hard limit by more than the socket holds
//! is disconnected, and the bytes queued for any client never pass the hard
//! limit by more than a reply's worth (nor, without limits, what it asked
//! for); at the end every connection has ended and the registry is empty.
#![no_main]

use blinkdb_fuzz::server::{Conn, Server};
use blinkdb_fuzz::{count_complete_replies, encode_request, Cursor};
use blinkdb_server::client::{ClientInfo, Peer};
use blinkdb_server::serve::connection::serve;
use libfuzzer_sys::fuzz_target;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::task::JoinHandle;
use tokio::time::{timeout_at, Instant};

/// Wall time one input has for all its clients' answers, and again for the
/// disconnections and the end of every connection.
const DEADLINE: Duration = Duration::from_secs(10);
/// Reply bytes one input asks for in all (keeps an input in tens of ms).
const REPLY_BUDGET: usize = 8 << 20;
/// Requests of one pipeline at most.
const REQUEST_BUDGET: usize = 200 << 10;
/// The size of an output queue's reply block (output.rs).
const REPLY_BLOCK: usize = 16 * 1024;
/// The largest reply of LRANGE l0 0 9 (ten short elements), INCR, RPUSH,
/// BLPOP/BLMOVE: a bound for the replies that are not GETs of `big`.
const SMALL_REPLY: usize = 256;
/// The list the pipeliners, pushers and blockers share, and a second one.
const LISTS: [&str; 2] = ["l0", "l1"];

struct Env {
    server: Server,
    rt: tokio::runtime::Runtime,
}

thread_local! {
    static ENV: Env = {
        // libFuzzer's main is not Rust's: a write to a closed socket would
        // kill the process instead of failing with EPIPE.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        // What a connection thread runs besides its connections (io_threads.rs).
        rt.block_on(async {
            blinkdb_server::persistence::flusher::install();
            blinkdb_server::exec::block_timer::install();
        });
        Env {
            server: Server::new(&[]),
            rt,
        }
    };
}

#[derive(Clone, Copy, Debug)]
enum Cmd {
    GetBig,
    Set,
    Incr,
    Rpush,
    Lrange,
}

/// A pipeliner's commands (shown by their count in a finding's message).
struct Cmds(Vec<Cmd>);

impl std::fmt::Debug for Cmds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let gets = self.0.iter().filter(|c| matches!(c, Cmd::GetBig)).count();
        write!(f, "{} commands, {gets} GETs of big", self.0.len())
    }
}

#[derive(Debug)]
enum Role {
    /// Sends every command in one write, then reads every reply.
    Pipeliner { cmds: Cmds },
    /// Sends GETs of `big` in one write and never reads.
    NonReader { gets: usize },
    /// GETs of `big` and a blocking pop in one write, then reads.
    Blocker {
        gets: usize,
        op: u8,
        list: usize,
        timeout_ms: u64,
    },
    /// RPUSHes, pipelined or one at a time.
    Pusher { pushes: usize, pipelined: bool },
    /// SUBSCRIBE, then never reads.
    Subscriber,
    /// PUBLISHes `big` to the subscriber's channel, pipelined or not.
    Publisher { count: usize, pipelined: bool },
}

impl Role {
    fn reads(&self) -> bool {
        !matches!(self, Role::NonReader { .. } | Role::Subscriber)
    }
}

#[derive(Debug)]
struct Plan {
    role: Role,
    /// Yields before the client starts, and between its steps.
    delay: u8,
    step_yields: u8,
    /// A 16 KB send buffer on the server's end of the socket (replies spill
    /// into the output queue sooner) and on the client's (a pipeline fills
    /// it: a server that stopped reading would block the client's write).
    small_sndbuf: bool,
    small_request_buf: bool,
}

#[derive(Debug, Default)]
struct Limits {
    hard: u64,
    soft: u64,
    soft_secs: u64,
    maxmemory_clients: u64,
}

impl Limits {
    /// The reply bytes pending at which the output limit may close a client
    /// (the soft limit after its seconds): 0 when there is none.
    fn closing(&self) -> u64 {
        match (self.hard, self.soft) {
            (0, s) | (s, 0) => s,
            (h, s) => h.min(s),
        }
    }
}

fn bulk_len(n: usize) -> usize {
    1 + n.to_string().len() + 2 + n + 2
}

fn decode(c: &mut Cursor) -> (Limits, usize, Vec<Plan>) {
    let mut limits = Limits::default();
    let mode = c.u8();
    let output_limit = (mode & 0x7f) % 3;
    if output_limit != 0 {
        // In steps of 16 bytes: 64 KB to 1 MB.
        limits.hard = 64 * 1024 + u64::from(c.u16()) * 16 % (960 * 1024);
        if output_limit == 2 {
            limits.soft = limits.hard / 2 + u64::from(c.u16()) * 16 % (limits.hard / 2);
            limits.soft_secs = u64::from(c.u8() % 3);
        }
    }
    if mode & 0x80 != 0 {
        limits.maxmemory_clients = (1 + u64::from(c.u8() % 4)) << 20;
    }
    let big = 1 + usize::from(c.u16()) % 4000;
    let get_len = bulk_len(big);
    let mut budget = REPLY_BUDGET;
    let mut take_gets = |wanted: usize| {
        let n = wanted.min(budget / get_len).min(REQUEST_BUDGET / 24);
        budget -= n * get_len;
        n
    };
    let clients = 1 + c.u8() % 6;
    let mut plans = Vec::new();
    for _ in 0..clients {
        let head = c.u8();
        let (delay, step_yields) = (c.u8() % 16, c.u8() % 4);
        let role = match (head & 0x3f) % 6 {
            0 => {
                let n = 1 + usize::from(c.u16()) % 5000;
                let pattern = c.bytes(8);
                let mut cmds = Vec::with_capacity(n);
                for i in 0..n {
                    let kind = pattern.get(i % pattern.len().max(1)).copied().unwrap_or(0);
                    cmds.push(match kind % 8 {
                        0..=3 => Cmd::GetBig,
                        4 => Cmd::Set,
                        5 => Cmd::Incr,
                        6 => Cmd::Rpush,
                        _ => Cmd::Lrange,
                    });
                }
                let gets = cmds.iter().filter(|c| matches!(c, Cmd::GetBig)).count();
                let allowed = take_gets(gets);
                // Over the budget: the GETs past it become SETs.
                let mut seen = 0;
                for cmd in &mut cmds {
                    if matches!(cmd, Cmd::GetBig) {
                        seen += 1;
                        if seen > allowed {
                            *cmd = Cmd::Set;
                        }
                    }
                }
                Role::Pipeliner { cmds: Cmds(cmds) }
            }
            1 => Role::NonReader {
                gets: take_gets(1 + usize::from(c.u16()) % 1000),
            },
            2 => Role::Blocker {
                gets: take_gets(usize::from(c.u8())),
                op: c.u8() % 3,
                list: usize::from(c.u8() % 2),
                timeout_ms: 50 + u64::from(c.u8() % 26) * 10,
            },
            3 => Role::Pusher {
                pushes: 1 + usize::from(c.u8() % 50),
                pipelined: c.u8() & 1 == 0,
            },
            4 => Role::Subscriber,
            _ => {
                let count = 1 + usize::from(c.u8() % 200);
                Role::Publisher {
                    count: take_gets(count.min(REQUEST_BUDGET / (big + 40))).max(1),
                    pipelined: c.u8() & 1 == 0,
                }
            }
        };
        plans.push(Plan {
            role,
            delay,
            step_yields,
            small_sndbuf: head & 0x80 != 0,
            small_request_buf: head & 0x40 != 0,
        });
    }
    (limits, big, plans)
}

fn request(args: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    let args: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
    encode_request(&args, &mut out);
    out
}

/// The requests of one client, by write, and the number of replies they ask
/// for and a bound on those replies' bytes.
struct Script {
    writes: Vec<Vec<u8>>,
    replies: usize,
    reply_bytes: usize,
}

fn script(role: &Role, big: usize, who: usize) -> Script {
    let get = request(&[b"GET", b"big"]);
    let get_len = bulk_len(big);
    let mut s = Script {
        writes: Vec::new(),
        replies: 0,
        reply_bytes: 0,
    };
    match role {
        Role::Pipeliner { cmds } => {
            let mut w = Vec::new();
            for (i, cmd) in cmds.0.iter().enumerate() {
                let key = format!("s{who}");
                let value = format!("v{i}");
                let (req, bytes) = match cmd {
                    Cmd::GetBig => (get.clone(), get_len),
                    Cmd::Set => (request(&[b"SET", key.as_bytes(), value.as_bytes()]), 5),
                    Cmd::Incr => (request(&[b"INCR", b"ctr"]), SMALL_REPLY),
                    Cmd::Rpush => (
                        request(&[b"RPUSH", LISTS[0].as_bytes(), value.as_bytes()]),
                        SMALL_REPLY,
                    ),
                    Cmd::Lrange => (
                        request(&[b"LRANGE", LISTS[0].as_bytes(), b"0", b"9"]),
                        SMALL_REPLY,
                    ),
                };
                w.extend_from_slice(&req);
                s.reply_bytes += bytes;
                s.replies += 1;
            }
            s.writes.push(w);
        }
        Role::NonReader { gets } => {
            s.writes.push(get.repeat(*gets));
            s.replies = *gets;
            s.reply_bytes = gets * get_len;
        }
        Role::Blocker {
            gets,
            op,
            list,
            timeout_ms,
        } => {
            let mut w = get.repeat(*gets);
            let timeout = format!("{}.{:03}", timeout_ms / 1000, timeout_ms % 1000);
            let (src, dst) = (LISTS[*list].as_bytes(), LISTS[1 - *list].as_bytes());
            w.extend_from_slice(&match op {
                0 => request(&[b"BLPOP", src, timeout.as_bytes()]),
                1 => request(&[b"BRPOP", src, timeout.as_bytes()]),
                _ => request(&[b"BLMOVE", src, dst, b"LEFT", b"RIGHT", timeout.as_bytes()]),
            });
            s.writes.push(w);
            s.replies = gets + 1;
            s.reply_bytes = gets * get_len + SMALL_REPLY;
        }
        Role::Pusher { pushes, pipelined } => {
            let reqs = (0..*pushes).map(|i| {
                let value = format!("p{who}-{i}");
                request(&[b"RPUSH", LISTS[i % 2].as_bytes(), value.as_bytes()])
            });
            if *pipelined {
                s.writes.push(reqs.flatten().collect());
            } else {
                s.writes.extend(reqs);
            }
            s.replies = *pushes;
            s.reply_bytes = pushes * SMALL_REPLY;
        }
        Role::Subscriber => {
            s.writes.push(request(&[b"SUBSCRIBE", b"ch"]));
            s.replies = 1;
            s.reply_bytes = SMALL_REPLY;
        }
        Role::Publisher { count, pipelined } => {
            let value = vec![b'm'; big];
            let req = request(&[b"PUBLISH", b"ch", &value]);
            if *pipelined {
                s.writes.push(req.repeat(*count));
            } else {
                s.writes.extend(std::iter::repeat_n(req, *count));
            }
            s.replies = *count;
            s.reply_bytes = count * SMALL_REPLY;
        }
    }
    s
}

/// One connection: the client's end, and the server's task serving the other.
struct Connection {
    info: Arc<ClientInfo>,
    served: JoinHandle<()>,
    /// Bytes the server's end of the socket may hold in flight, at most.
    in_flight: usize,
}

fn small_send_buffer(fd: i32) {
    let size: libc::c_int = 16 * 1024;
    // SAFETY: a valid socket and an int option of the right length.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            &size as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "SO_SNDBUF");
}

fn connect(
    server: &Server,
    small_sndbuf: bool,
    small_request_buf: bool,
) -> (UnixStream, Connection) {
    let (client_end, server_end) = UnixStream::pair().expect("socket pair");
    let fd = server_end.as_raw_fd();
    if small_sndbuf {
        small_send_buffer(fd);
    }
    if small_request_buf {
        small_send_buffer(client_end.as_raw_fd());
    }
    let mut sndbuf: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: as above, with room for the answer.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            &mut sndbuf as *mut _ as *mut libc::c_void,
            &mut len,
        )
    };
    assert_eq!(rc, 0, "SO_SNDBUF");
    let shared = &server.shared;
    // As the listener registers a client (fuzz/src/server.rs's connect()).
    let id = shared.clients.next_id();
    let info = Arc::new(ClientInfo::new(
        id,
        format!("/tmp/fuzz.sock:{id}"),
        "/tmp/fuzz.sock:0".into(),
        fd,
        Peer::Unix("/tmp/fuzz.sock".into()),
        shared.clock(),
    ));
    shared.clients.register(info.clone());
    let served = tokio::spawn(serve(shared.clone(), server_end, info.clone()));
    // A unix stream socket's sender may have its buffer size in flight, plus
    // one packet of up to half of it.
    let in_flight = 2 * sndbuf as usize;
    (
        client_end,
        Connection {
            info,
            served,
            in_flight,
        },
    )
}

async fn yields(n: u8) {
    for _ in 0..n {
        tokio::task::yield_now().await;
    }
}

/// How a reading client's exchange ended.
#[derive(Debug)]
enum Ended {
    /// Every reply came, and nothing more.
    Answered,
    /// The server closed the connection after `got` replies (a write failed
    /// if `written` is false).
    Closed { got: usize, written: bool },
}

/// Reads replies until `expected` have come; false if the connection ended first.
async fn read_replies(sock: &mut UnixStream, expected: usize, got: &mut usize) -> bool {
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    while *got < expected {
        let n = match sock.read(&mut chunk).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        let (complete, used) = count_complete_replies(&buf);
        *got += complete;
        buf.drain(..used);
        assert!(
            *got <= expected,
            "{got} replies to {expected} commands",
            got = *got
        );
    }
    assert!(
        buf.is_empty(),
        "bytes after the last reply: {:?}",
        String::from_utf8_lossy(&buf[..buf.len().min(200)])
    );
    true
}

/// A client that reads: its writes, each followed by reading its replies
/// (a pipeline is one write).
async fn reader(mut sock: UnixStream, plan_yields: u8, delay: u8, s: Script) -> Ended {
    yields(delay).await;
    let per_write: Vec<usize> = split_replies(&s);
    let mut got = 0;
    for (w, expected) in s.writes.iter().zip(per_write) {
        if sock.write_all(w).await.is_err() {
            return Ended::Closed {
                got,
                written: false,
            };
        }
        yields(plan_yields).await;
        let target = got + expected;
        if !read_replies(&mut sock, target, &mut got).await {
            return Ended::Closed { got, written: true };
        }
    }
    Ended::Answered
}

/// How many replies each write asks for (one write: all; else one each).
fn split_replies(s: &Script) -> Vec<usize> {
    if s.writes.len() == 1 {
        vec![s.replies]
    } else {
        vec![1; s.writes.len()]
    }
}

/// A client that writes and never reads: returns its socket (kept open) and
/// whether the write was taken whole.
async fn non_reader(mut sock: UnixStream, delay: u8, s: Script) -> (UnixStream, bool) {
    yields(delay).await;
    let mut written = true;
    for w in &s.writes {
        written &= sock.write_all(w).await.is_ok();
    }
    (sock, written)
}

/// Runs a joined task's panic on this thread, so libFuzzer sees it.
fn joined<T>(r: Result<T, tokio::task::JoinError>) -> T {
    match r {
        Ok(v) => v,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("task failed: {e}"),
    }
}

fn client_list(server: &Server) -> String {
    let now = server.shared.clock();
    server
        .shared
        .clients
        .snapshot()
        .iter()
        .map(|c| c.describe(&now))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Polls `done` every millisecond until it holds; panics with `what` at `deadline`.
async fn wait_for(server: &Server, deadline: Instant, what: &str, done: impl Fn() -> bool) {
    while !done() {
        if Instant::now() >= deadline {
            panic!(
                "{what} within {DEADLINE:?}; clients:\n{}",
                client_list(server)
            );
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

fn config(server: &Server, limits: &Limits, big: usize) {
    let mut setup: Conn = server.connect();
    let hard_soft = format!(
        "normal {} {} {}",
        limits.hard, limits.soft, limits.soft_secs
    );
    let mmc = limits.maxmemory_clients.to_string();
    let mut req = Vec::new();
    let args: Vec<Vec<u8>> = [
        "CONFIG",
        "SET",
        "client-output-buffer-limit",
        &hard_soft,
        "maxmemory-clients",
        &mmc,
    ]
    .iter()
    .map(|a| a.as_bytes().to_vec())
    .collect();
    encode_request(&args, &mut req);
    encode_request(
        &[b"SET".to_vec(), b"big".to_vec(), vec![b'b'; big]],
        &mut req,
    );
    setup.feed(server, &req);
    assert_eq!(&setup.out.buf[..], b"+OK\r\n+OK\r\n", "setup");
    setup.close(server);
}

fuzz_target!(|data: &[u8]| {
    let mut c = Cursor::new(data);
    let (limits, big, plans) = decode(&mut c);
    ENV.with(|env| run(env, &limits, big, plans));
});

fn run(env: &Env, limits: &Limits, big: usize, plans: Vec<Plan>) {
    let server = &env.server;
    server.reset(false);
    config(server, limits, big);
    env.rt.block_on(async {
        let deadline = Instant::now() + DEADLINE;
        let mut conns = Vec::new();
        let mut readers = Vec::new();
        let mut silent = Vec::new();
        let mut published = 0;
        for (who, plan) in plans.iter().enumerate() {
            let (sock, conn) = connect(server, plan.small_sndbuf, plan.small_request_buf);
            let s = script(&plan.role, big, who);
            let bytes = s.reply_bytes;
            if let Role::Publisher { count, .. } = plan.role {
                published += count;
            }
            if plan.role.reads() {
                readers.push((
                    who,
                    s.replies,
                    bytes,
                    tokio::spawn(reader(sock, plan.step_yields, plan.delay, s)),
                ));
            } else {
                silent.push((who, bytes, tokio::spawn(non_reader(sock, plan.delay, s))));
            }
            conns.push(conn);
        }
        // What a subscriber may be sent: the messages (`big` and the frame).
        let message_bytes = published * (bulk_len(big) + 64);
        // The queued bytes of every connection, sampled between the tasks' turns,
        // and client eviction as the server's cron runs it.
        let stop = Arc::new(AtomicBool::new(false));
        let infos: Vec<Arc<ClientInfo>> = conns.iter().map(|c| c.info.clone()).collect();
        let evicting = limits.maxmemory_clients > 0;
        let sampler = {
            let (stop, shared) = (stop.clone(), server.shared.clone());
            tokio::spawn(async move {
                let mut peak = vec![0u64; infos.len()];
                while !stop.load(Ordering::Relaxed) {
                    for (p, info) in peak.iter_mut().zip(&infos) {
                        *p = (*p).max(info.output_pending());
                    }
                    if evicting {
                        blinkdb_server::memory::client_eviction::cron(&*shared);
                    }
                    // Every round of the scheduler: a connection can fill its
                    // queue and be closed for it within a millisecond.
                    tokio::task::yield_now().await;
                }
                peak
            })
        };

        let closing = limits.closing() as usize;
        for (who, replies, bytes, task) in readers {
            let Ok(ended) = timeout_at(deadline, task).await else {
                panic!(
                    "client {who} ({:?}) waits for its {replies} replies after {DEADLINE:?}; clients:\n{}",
                    plans[who].role,
                    client_list(server)
                );
            };
            match joined(ended) {
                Ended::Answered => {}
                Ended::Closed { got, written } => {
                    let info = &conns[who].info;
                    let limited = closing > 0 && bytes >= closing;
                    assert!(
                        limited || info.is_killed(),
                        "client {who} ({:?}) closed after {got} of {replies} replies \
                         (write taken: {written}; replies at most {bytes} bytes, limits {limits:?})",
                        plans[who].role
                    );
                }
            }
        }
        let mut kept = Vec::new();
        for (who, bytes, task) in silent {
            let Ok(done) = timeout_at(deadline, task).await else {
                panic!(
                    "client {who} ({:?}): the server did not take its requests within {DEADLINE:?}; clients:\n{}",
                    plans[who].role,
                    client_list(server)
                );
            };
            let (sock, written) = joined(done);
            let info = &conns[who].info;
            assert!(
                written || info.is_gone(),
                "client {who} ({:?}): a write failed on a connection still open",
                plans[who].role
            );
            kept.push((who, bytes, sock));
        }

        // The non-readers, still connected, do not stop a new client.
        let (mut ping, ping_conn) = connect(server, false, false);
        let answered = timeout_at(deadline, async {
            ping.write_all(&request(&[b"PING"])).await.is_ok()
                && read_replies(&mut ping, 1, &mut 0).await
        })
        .await;
        assert!(
            matches!(answered, Ok(true)),
            "PING unanswered ({answered:?}) next to non-readers; clients:\n{}",
            client_list(server)
        );
        drop(ping);
        // Nothing closed the others: no limit they reached, no eviction.
        for (who, bytes, _) in &kept {
            let info = &conns[*who].info;
            let limited = !matches!(plans[*who].role, Role::Subscriber)
                && closing > 0
                && *bytes >= closing;
            assert!(
                !info.is_gone() || limited || info.is_killed(),
                "client {who} ({:?}, {bytes} reply bytes, limits {limits:?}) disconnected",
                plans[*who].role
            );
        }

        // A non-reader whose replies pass the hard limit by more than its
        // socket can hold is closed.
        for (who, bytes, _) in &kept {
            let conn = &conns[*who];
            if limits.hard > 0 && *bytes >= limits.hard as usize + conn.in_flight {
                let info = conn.info.clone();
                let what = format!(
                    "client {who} ({:?}, {bytes} reply bytes, limits {limits:?}) not disconnected",
                    plans[*who].role
                );
                wait_for(server, Instant::now() + DEADLINE, &what, || info.is_gone()).await;
            }
        }
        stop.store(true, Ordering::Relaxed);
        let peak = joined(sampler.await);
        if std::env::var_os("CLIENT_PATTERNS_VERBOSE").is_some() {
            // What the input exercised: the largest output queue of each client.
            for (who, plan) in plans.iter().enumerate() {
                let info = &conns[who].info;
                eprintln!(
                    "client {who}: {:?} big={big} queued at most {} bytes, closed: {} (limits {limits:?})",
                    plan.role,
                    peak[who],
                    info.is_gone()
                );
            }
        }
        for (who, plan) in plans.iter().enumerate() {
            let asked = script(&plan.role, big, who).reply_bytes;
            // What waits counts its buffers' room too, as Redis's reply
            // blocks (output.rs): a full 16 KB block wastes less than the
            // 4 KB a small reply can be, a large buffer keeps at most a
            // quarter of its bytes as room, and the tail block has what is left.
            let with_room = |bytes: usize| bytes * 4 / 3 + REPLY_BLOCK;
            let bound = match plan.role {
                Role::Subscriber => with_room(asked + message_bytes),
                _ if limits.hard > 0 => {
                    // A batch stops running commands at the limit; the reply
                    // that crosses it, or a served blocked command's, is the most over.
                    with_room((limits.hard as usize + bulk_len(big) + SMALL_REPLY).min(asked))
                }
                _ => with_room(asked),
            };
            assert!(
                peak[who] as usize <= bound,
                "client {who} ({:?}): {} bytes queued, over {bound} (limits {limits:?})",
                plan.role,
                peak[who]
            );
        }

        // Every connection ends once its client has gone, and leaves nothing behind.
        drop(kept);
        for (who, conn) in conns.into_iter().chain([ping_conn]).enumerate() {
            let Ok(ended) = timeout_at(Instant::now() + DEADLINE, conn.served).await else {
                panic!(
                    "connection {who} still served after its client closed; clients:\n{}",
                    client_list(server)
                );
            };
            joined(ended);
        }
        let left = client_list(server);
        assert!(left.is_empty(), "clients left registered:\n{left}");
    });
}
