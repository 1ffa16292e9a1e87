//! MIGRATE: DUMP here, RESTORE on another server (redis-server or BlinkDB)
//! over a client connection, then DEL here unless COPY; as Redis 7.0 does it,
//! connections are cached per host:port for 10 seconds of idleness (64 at most).

use super::args::{eq_ic, parse_i64, ERR_NOT_INT};
use super::Ctx;
use crate::protocol::Args;
use blinkdb_engine::{event::GENERIC, rdb_format};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

const CACHE_ITEMS: usize = 64;
const CACHE_TTL: Duration = Duration::from_secs(10);

struct Cached {
    stream: BufReader<TcpStream>,
    /// The database the connection has selected (-1: unknown).
    last_db: i64,
    last_use: Instant,
    /// Whether the target is BlinkDB (probed once per connection, when a
    /// filter is to be sent; None: not probed yet).
    blinkdb: Option<bool>,
}

fn cache() -> &'static Mutex<HashMap<String, Cached>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Cached>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Closes connections idle for 10 seconds; the number left (INFO's
/// migrate_cached_sockets).
pub fn cached_sockets() -> usize {
    let mut c = cache().lock().unwrap_or_else(|e| e.into_inner());
    c.retain(|_, s| s.last_use.elapsed() < CACHE_TTL);
    c.len()
}

fn connect(host: &[u8], port: &[u8], timeout: Duration) -> Option<Cached> {
    let host = std::str::from_utf8(host).ok()?;
    let port: u16 = std::str::from_utf8(port).ok()?.parse().ok()?;
    let addr = (host, port).to_socket_addrs().ok()?.next()?;
    let stream = TcpStream::connect_timeout(&addr, timeout).ok()?;
    stream.set_nodelay(true).ok()?;
    Some(Cached {
        stream: BufReader::new(stream),
        last_db: -1,
        last_use: Instant::now(),
        blinkdb: None,
    })
}

fn bulk(out: &mut Vec<u8>, b: &[u8]) {
    out.push(b'$');
    out.extend_from_slice(itoa::Buffer::new().format(b.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(b);
    out.extend_from_slice(b"\r\n");
}

fn command(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.push(b'*');
    out.extend_from_slice(itoa::Buffer::new().format(args.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in args {
        bulk(out, a);
    }
}

/// Whether the target is BlinkDB: its `INFO server` has a `blinkdb_version`
/// field (redis-server's has none; an error reply, such as an ACL denial,
/// counts as not BlinkDB: the portable RedisBloom form goes then). Sent
/// after AUTH when MIGRATE has one. Err: the connection failed.
fn probe_blinkdb(
    conn: &mut Cached,
    auth: Option<(Option<&[u8]>, &[u8])>,
    timeout: Duration,
) -> std::io::Result<bool> {
    let mut buf = Vec::new();
    if let Some((user, pass)) = auth {
        match user {
            Some(user) => command(&mut buf, &[b"AUTH", user, pass]),
            None => command(&mut buf, &[b"AUTH", pass]),
        }
    }
    command(&mut buf, &[b"INFO", b"server"]);
    let s = conn.stream.get_mut();
    s.set_write_timeout(Some(timeout))?;
    s.set_read_timeout(Some(timeout))?;
    s.write_all(&buf)?;
    s.flush()?;
    if auth.is_some() {
        read_line(&mut conn.stream)?;
    }
    let head = read_line(&mut conn.stream)?;
    let Some(len) = head.strip_prefix(b"$") else {
        return Ok(false); // an error reply
    };
    let len: usize = std::str::from_utf8(len)
        .ok()
        .and_then(|l| l.parse().ok())
        .filter(|&l| l <= 1 << 20)
        .ok_or(std::io::ErrorKind::InvalidData)?;
    let mut body = vec![0u8; len + 2];
    conn.stream.read_exact(&mut body)?;
    Ok(body
        .split(|&c| c == b'\n')
        .any(|l| l.starts_with(b"blinkdb_version:")))
}

/// One reply line (syncReadLine: at most 1024 bytes, CRLF removed).
fn read_line(s: &mut BufReader<TcpStream>) -> std::io::Result<Vec<u8>> {
    let mut line = Vec::new();
    let n = s.by_ref().take(1024).read_until(b'\n', &mut line)?;
    if n == 0 || !line.ends_with(b"\n") {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    while line.last().is_some_and(|&c| c == b'\n' || c == b'\r') {
        line.pop();
    }
    Ok(line)
}

enum Outcome {
    /// Replies: (auth, select, restore per key) lines.
    Replies(Option<Vec<u8>>, Option<Vec<u8>>, Vec<Vec<u8>>),
    /// Writing failed, or reading failed (after `read` RESTORE replies).
    WriteError,
    ReadError {
        read: Vec<Vec<u8>>,
        timed_out: bool,
    },
}

pub fn migrate(ctx: &mut Ctx, args: &Args) {
    let (mut copy, mut replace) = (false, false);
    let (mut user, mut pass): (Option<&[u8]>, Option<&[u8]>) = (None, None);
    let (mut first_key, mut num_keys) = (3usize, 1usize);
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if eq_ic(args[j], "copy") {
            copy = true;
        } else if eq_ic(args[j], "replace") {
            replace = true;
        } else if eq_ic(args[j], "auth") {
            if more == 0 {
                return ctx.syntax_error();
            }
            j += 1;
            pass = Some(args[j]);
        } else if eq_ic(args[j], "auth2") {
            if more < 2 {
                return ctx.syntax_error();
            }
            user = Some(args[j + 1]);
            pass = Some(args[j + 2]);
            j += 2;
        } else if eq_ic(args[j], "keys") {
            if !args[3].is_empty() {
                return ctx.out.error(
                    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string",
                );
            }
            first_key = j + 1;
            num_keys = args.len() - j - 1;
            break;
        } else {
            return ctx.syntax_error();
        }
        j += 1;
    }
    let (Some(timeout), Some(db_to)) = (parse_i64(args[5]), parse_i64(args[4])) else {
        return ctx.out.error(ERR_NOT_INT);
    };
    let timeout = Duration::from_millis(if timeout <= 0 { 1000 } else { timeout as u64 });
    let db = ctx.db();
    let compress = ctx.client.settings(ctx.shared).rdbcompression;
    // The keys that exist, with their values (shared, not copied) and expiry.
    let found: Vec<(&[u8], blinkdb_engine::Value, u64)> = args[first_key..first_key + num_keys]
        .iter()
        .filter_map(|k| {
            ctx.shared.engine.read(db, k, |e| {
                e.map(|e| (&k[..], e.value().clone(), e.expire_at))
            })
        })
        .collect();
    if found.is_empty() {
        return ctx.out.simple("NOKEY");
    }
    let name = format!(
        "{}:{}",
        String::from_utf8_lossy(args[1]),
        String::from_utf8_lossy(args[2])
    );
    let mut may_retry = true;
    loop {
        let cached = cache()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&name);
        let mut conn = match cached {
            Some(c) => c,
            None => match connect(args[1], args[2], timeout) {
                Some(c) => c,
                None => {
                    return ctx
                        .out
                        .error("IOERR error or timeout connecting to the client")
                }
            },
        };
        // A filter BlinkDB made goes exactly to another BlinkDB (module type
        // blinkdbBF), as RedisBloom's value to anything else.
        let has_filter = found
            .iter()
            .any(|(_, v, _)| matches!(v, blinkdb_engine::Value::Bloom(..)));
        if has_filter && conn.blinkdb.is_none() {
            match probe_blinkdb(&mut conn, pass.map(|p| (user, p)), timeout) {
                Ok(is) => conn.blinkdb = Some(is),
                Err(_) if may_retry => {
                    may_retry = false;
                    continue;
                }
                Err(_) => {
                    return ctx
                        .out
                        .error("IOERR error or timeout writing to target instance")
                }
            }
        }
        let native = conn.blinkdb == Some(true);
        let mut buf = Vec::new();
        if let Some(pass) = pass {
            match user {
                Some(user) => command(&mut buf, &[b"AUTH", user, pass]),
                None => command(&mut buf, &[b"AUTH", pass]),
            }
        }
        let select = conn.last_db != db_to;
        if select {
            command(&mut buf, &[b"SELECT", db_to.to_string().as_bytes()]);
        }
        let now = blinkdb_engine::now_ms();
        let mut sent: Vec<&[u8]> = Vec::new();
        for (key, value, at) in &found {
            let mut ttl = 0i64;
            if *at != 0 {
                ttl = *at as i64 - now as i64;
                if ttl < 0 {
                    continue;
                }
                ttl = ttl.max(1);
            }
            // A filter whose RedisBloom export is exact goes as that: the
            // native dump carries no item log, and the copy would export
            // saturated.
            let exact = matches!(value, blinkdb_engine::Value::Bloom(f, _) if f.exports_exactly());
            let payload = if native && !exact {
                rdb_format::dump_value_native(&ctx.shared.engine, value, compress)
            } else {
                rdb_format::dump_value(&ctx.shared.engine, value, compress)
            };
            let payload = match payload {
                Ok(p) => p,
                Err(e) => return ctx.out.error(&format!("ERR {e}")),
            };
            let ttl = ttl.to_string();
            // In cluster mode the target may be importing the slot.
            let restore: &[u8] = if ctx.shared.cluster.is_some() {
                b"RESTORE-ASKING"
            } else {
                b"RESTORE"
            };
            let mut cmd: Vec<&[u8]> = vec![restore, key, ttl.as_bytes(), &payload];
            if replace {
                cmd.push(b"REPLACE");
            }
            command(&mut buf, &cmd);
            sent.push(key);
        }
        let outcome = exchange(&mut conn, &buf, timeout, pass.is_some(), select, sent.len());
        let (auth_reply, select_reply, replies) = match outcome {
            Outcome::Replies(a, s, r) => (a, s, r),
            Outcome::WriteError => {
                // The connection is dropped; a cached one may have gone stale: retry once.
                if may_retry {
                    may_retry = false;
                    continue;
                }
                return ctx
                    .out
                    .error("IOERR error or timeout writing to target instance");
            }
            Outcome::ReadError { read, timed_out } => {
                if read.is_empty() && may_retry && !timed_out {
                    may_retry = false;
                    continue;
                }
                apply(ctx, db, copy, &sent, &read);
                return ctx
                    .out
                    .error("IOERR error or timeout reading to target instance");
            }
        };
        let failed = [&auth_reply, &select_reply]
            .into_iter()
            .flatten()
            .chain(replies.iter())
            .find(|l| l.first() == Some(&b'-'))
            .cloned();
        let acked: Vec<Vec<u8>> = if failed.is_some()
            && (auth_reply.as_ref().is_some_and(|l| l.starts_with(b"-"))
                || select_reply.as_ref().is_some_and(|l| l.starts_with(b"-")))
        {
            Vec::new()
        } else {
            replies
        };
        apply(ctx, db, copy, &sent, &acked);
        conn.last_db = if failed.is_some() { -1 } else { db_to };
        conn.last_use = Instant::now();
        let mut c = cache().lock().unwrap_or_else(|e| e.into_inner());
        if c.len() >= CACHE_ITEMS {
            if let Some(k) = c.keys().next().cloned() {
                c.remove(&k);
            }
        }
        c.insert(name, conn);
        drop(c);
        return match failed {
            Some(line) => ctx.out.error(&format!(
                "ERR Target instance replied with error: {}",
                String::from_utf8_lossy(&line[1..])
            )),
            None => ctx.out.ok(),
        };
    }
}

/// Sends the batch and reads its replies.
fn exchange(
    conn: &mut Cached,
    buf: &[u8],
    timeout: Duration,
    auth: bool,
    select: bool,
    keys: usize,
) -> Outcome {
    let s = conn.stream.get_mut();
    let _ = s.set_write_timeout(Some(timeout));
    let _ = s.set_read_timeout(Some(timeout));
    if s.write_all(buf).and_then(|_| s.flush()).is_err() {
        return Outcome::WriteError;
    }
    let read_err = |e: std::io::Error, read: Vec<Vec<u8>>| Outcome::ReadError {
        read,
        timed_out: matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    };
    let line = |c: &mut Cached| read_line(&mut c.stream);
    let auth_reply = match auth.then(|| line(conn)).transpose() {
        Ok(r) => r,
        Err(e) => return read_err(e, Vec::new()),
    };
    let select_reply = match select.then(|| line(conn)).transpose() {
        Ok(r) => r,
        Err(e) => return read_err(e, Vec::new()),
    };
    let mut replies = Vec::with_capacity(keys);
    for _ in 0..keys {
        match line(conn) {
            Ok(l) => replies.push(l),
            Err(e) => return read_err(e, replies),
        }
    }
    Outcome::Replies(auth_reply, select_reply, replies)
}

/// Without COPY, deletes the keys the target acknowledged (+OK), logged as
/// one DEL, as Redis propagates MIGRATE.
fn apply(ctx: &mut Ctx, db: usize, copy: bool, sent: &[&[u8]], replies: &[Vec<u8>]) {
    if copy {
        return;
    }
    let acked: Vec<&[u8]> = sent
        .iter()
        .zip(replies)
        .filter(|(_, r)| r.first() != Some(&b'-'))
        .map(|(k, _)| *k)
        .collect();
    if acked.is_empty() {
        return;
    }
    let keys: Vec<(usize, &[u8])> = acked.iter().map(|k| (db, *k)).collect();
    ctx.write(&keys, |tx, _| {
        let mut record: Vec<&[u8]> = vec![b"DEL"];
        for k in &acked {
            if tx.remove(db, k).is_some() {
                tx.notify(GENERIC, "del", db, k);
                record.push(k);
            }
        }
        if record.len() > 1 {
            tx.log(db, &record);
        }
    });
}

/// MIGRATE's keys (Redis's migrateGetKeys): the key argument, or those after
/// KEYS when the key argument is empty (COPY, REPLACE, AUTH pass and AUTH2
/// user pass skipped on the way).
pub fn migrate_keys(argv: &[&[u8]]) -> Option<super::spec::KeyPositions> {
    use super::spec::{KEY_ACCESS, KEY_RW};
    const KEY_DELETE: u16 = 1 << 7;
    let (mut first, mut num) = (3usize, 1usize);
    let mut i = 6;
    while i < argv.len() {
        let a = argv[i];
        if a.eq_ignore_ascii_case(b"keys") {
            if !argv[3].is_empty() {
                return Some(Default::default());
            }
            first = i + 1;
            num = argv.len() - first;
            break;
        }
        if a.eq_ignore_ascii_case(b"auth") {
            i += 1;
        } else if a.eq_ignore_ascii_case(b"auth2") {
            i += 2;
        }
        i += 1;
    }
    let flags = KEY_RW | KEY_ACCESS | KEY_DELETE;
    Some((first..first + num).map(|p| (p, flags)).collect())
}

/// MIGRATE's AUTH password and AUTH2 user and password are hidden in
/// MONITOR and SLOWLOG (as Redis's migrateCommand redacts them while it
/// reads its options).
pub fn redact_migrate(argv: &[&[u8]], hide: &mut [bool]) {
    let mut j = 6;
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        let a = argv[j];
        if a.eq_ignore_ascii_case(b"copy") || a.eq_ignore_ascii_case(b"replace") {
        } else if a.eq_ignore_ascii_case(b"auth") && more >= 1 {
            hide[j + 1] = true;
            j += 1;
        } else if a.eq_ignore_ascii_case(b"auth2") && more >= 2 {
            hide[j + 1] = true;
            hide[j + 2] = true;
            j += 2;
        } else {
            // KEYS (the rest are keys) or an error: nothing more to hide.
            break;
        }
        j += 1;
    }
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("migrate", -6, WRITE, (3, 3, 1), "generic", "2.6.0", "Atomically transfer a key from a Redis instance to another one.", migrate;
        getkeys: Some(migrate_keys),
        redact: Some(redact_migrate),
        props: props::MIGRATING_OK,
        acl: acl::KEYSPACE | acl::DANGEROUS,
        complexity: "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target instance. See the pages of these commands for time complexity. Also an O(N) data transfer between the two instances is performed.",
        keys: "RW,access,delete index:3 range:0:1:0; RW,access,delete,incomplete keyword:KEYS:-2 range:-1:1:0",
        args: "host:string port:integer key_or_empty_string:oneof(key:key empty_string:) destination-db:integer timeout:integer copy:COPY?^3.0.0 replace:REPLACE?^3.0.0 authentication:oneof?(password:string=AUTH?^4.0.7 username_password:block=AUTH2?^6.0.0(username:string password:string)) key:key=KEYS?*^3.0.6#1",
        history: &[("3.0.0", "Added the `COPY` and `REPLACE` options."), ("3.0.6", "Added the `KEYS` option."), ("4.0.7", "Added the `AUTH` option."), ("6.0.0", "Added the `AUTH2` option.")],
        tips: &["nondeterministic_output"]),
];
