//! The command layer as a whole: sequences of argument vectors, command names
//! biased to the real table and arguments to the words and numbers commands
//! look for, sent by two clients (pipelined or not) to one in-process server
//! through the same parser and dispatch as a socket's bytes.
//!
//! Checks: no panic; every command gets exactly one reply and the replies are
//! well-formed RESP2/RESP3 (an aggregate with a wrong count desynchronizes a
//! client); a connection closes only when it should (QUIT, SHUTDOWN, CLIENT
//! KILL, a protocol error).
#![no_main]

use blinkdb_fuzz::server::{Conn, Server};
use blinkdb_fuzz::{count_replies, encode_request, Cursor};
use blinkdb_server::commands::COMMANDS;
use libfuzzer_sys::fuzz_target;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// Words the commands parse, keys, patterns and configuration names.
const WORDS: &[&str] = &[
    "k",
    "k1",
    "k2",
    "{k}x",
    "",
    "EX",
    "PX",
    "EXAT",
    "PXAT",
    "KEEPTTL",
    "NX",
    "XX",
    "GT",
    "LT",
    "GET",
    "PERSIST",
    "MATCH",
    "COUNT",
    "TYPE",
    "string",
    "MBbloom--",
    "none",
    "CAPACITY",
    "ERROR",
    "EXPANSION",
    "NOCREATE",
    "NONSCALING",
    "ITEMS",
    "BACKEND",
    "user",
    "kernel",
    "WIDTH",
    "DB",
    "REPLACE",
    "ASYNC",
    "SYNC",
    "ID",
    "KILL",
    "LIST",
    "SETNAME",
    "GETNAME",
    "INFO",
    "SETINFO",
    "lib-name",
    "lib-ver",
    "ADDR",
    "LADDR",
    "SKIPME",
    "yes",
    "no",
    "normal",
    "NOSAVE",
    "NOW",
    "FORCE",
    "ABORT",
    "GETKEYS",
    "DOCS",
    "FILTERBY",
    "PATTERN",
    "USAGE",
    "SAMPLES",
    "SET",
    "RESETSTAT",
    "REWRITE",
    "HELP",
    "AUTH",
    "default",
    "pass",
    "*",
    "k*",
    "[a-z]*",
    "?",
    "\\",
    "maxmemory",
    "hz",
    "timeout",
    "requirepass",
    "maxmemory-policy",
    "allkeys-fifo",
    "noeviction",
    "loglevel",
    "warning",
    "maxclients",
    "bf-default-backend",
    "auto-aof-rewrite-percentage",
    "max-disk-size",
    "client-query-buffer-limit",
    "everything",
    "default",
    "server",
    "keyspace",
    "persistence",
    "stats",
    "bloom",
    "CAPACITY",
    "SIZE",
    "FILTERS",
    "ITEMS",
    "EXPANSION",
    "set",
    "get",
    "bf.add",
    "multi",
    "exec",
    "INCRBY",
    "OVERFLOW",
    "WRAP",
    "SAT",
    "FAIL",
    "u8",
    "i5",
    "i64",
    "u63",
    "#3",
    "AND",
    "OR",
    "XOR",
    "NOT",
    "BIT",
    "BYTE",
    "IDX",
    "LEN",
    "MINMATCHLEN",
    "WITHMATCHLEN",
];

/// Numbers near the edges commands check.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "10",
    "100",
    "1000000",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775806",
    "-9223372036854775807",
    "4294967296",
    "2147483647",
    "-2147483648",
    "2147483648",
    "1.5",
    "-0.5",
    "1e308",
    "-1e308",
    "inf",
    "-inf",
    "nan",
    "0.01",
    "0.999",
    "1e-5",
    "536870912",
    "536870911",
    "1048576",
    "17",
    "+1",
    "01",
    "0x10",
    " 1",
    "1 ",
    "-0",
    "0.0",
    "1e400",
    "15",
    "16",
    "4503599627370496",
    "1000000000000",
];

fn arg(c: &mut Cursor) -> Vec<u8> {
    match c.u8() {
        s @ 0..=111 => WORDS[s as usize % WORDS.len()].as_bytes().to_vec(),
        s @ 112..=175 => NUMBERS[s as usize % NUMBERS.len()].as_bytes().to_vec(),
        176..=191 => (c.u64() as i64).to_string().into_bytes(),
        192..=253 => {
            let n = c.u8() as usize % 40;
            c.bytes(n).to_vec()
        }
        // A long value: a repeated byte (SETRANGE/APPEND limits, blob paths).
        _ => vec![c.u8(); c.u16() as usize * 4],
    }
}

fn name(c: &mut Cursor) -> Vec<u8> {
    let s = c.u8();
    if s >= 250 {
        let n = c.u8() as usize % 20;
        return c.bytes(n).to_vec();
    }
    let mut n = match COMMANDS[s as usize % COMMANDS.len()].name {
        // Ten million additions: seconds in a sanitized build, nothing new to
        // find (the hll target covers its code).
        "pfselftest" => "pfcount",
        name => name,
    }
    .as_bytes()
    .to_vec();
    if s & 1 == 1 {
        n.make_ascii_uppercase();
    }
    n
}

struct Client {
    conn: Conn,
    pending: Vec<u8>,
    commands: usize,
    /// The batch holds a CONFIG command.
    configures: bool,
    /// The connection ran a (un)subscribe command (one reply per name, then
    /// messages), CLIENT (REPLY OFF|SKIP drops replies) or MONITOR (a feed
    /// joins the replies): its replies are no longer one per command.
    uncounted: bool,
}

impl Client {
    fn flush(&mut self, server: &Server) {
        if self.pending.is_empty() {
            return;
        }
        let closed = self.conn.feed(server, &self.pending);
        let replies = count_replies(&self.conn.out.buf);
        if closed || self.conn.info.is_killed() {
            assert!(
                self.uncounted || replies <= self.commands,
                "{replies} replies to {} commands",
                self.commands
            );
            self.conn.close(server);
            self.conn = server.connect();
            self.uncounted = false;
        } else {
            assert!(
                self.uncounted || replies == self.commands,
                "replies to a batch of {} commands: {:?}",
                self.commands,
                String::from_utf8_lossy(&self.conn.out.buf)
            );
            assert!(self.conn.inbuf.is_empty(), "a whole request left unparsed");
        }
        self.conn.out.clear();
        self.pending.clear();
        self.commands = 0;
        if std::mem::take(&mut self.configures) {
            // CONFIG SET may have lifted the bounds that keep an input small.
            server.rebound();
            CONFIGURED.store(true, Ordering::Relaxed);
        }
    }
}

fn is_subscription(name: &[u8]) -> bool {
    const NAMES: [&str; 6] = [
        "subscribe",
        "psubscribe",
        "ssubscribe",
        "unsubscribe",
        "punsubscribe",
        "sunsubscribe",
    ];
    NAMES
        .iter()
        .any(|n| name.eq_ignore_ascii_case(n.as_bytes()))
}

/// One server for every input, emptied and reconfigured to its defaults
/// before each (`Server::reset`): five times the inputs a second of a new
/// server per input.
static SERVER: OnceLock<Server> = OnceLock::new();
/// The last input ran CONFIG: the next one starts by restoring the defaults.
static CONFIGURED: AtomicBool = AtomicBool::new(false);

fuzz_target!(|data: &[u8]| {
    let mut c = Cursor::new(data);
    let server = SERVER.get_or_init(|| Server::new(&[]));
    server.reset(CONFIGURED.swap(false, Ordering::Relaxed));
    let mut clients: Vec<Client> = (0..2)
        .map(|_| Client {
            conn: server.connect(),
            pending: Vec::new(),
            commands: 0,
            configures: false,
            uncounted: false,
        })
        .collect();
    let mut sent = 0;
    while !c.is_empty() && sent < 200 {
        let head = c.u8();
        let who = (head >> 7) as usize;
        let mut args = vec![name(&mut c)];
        for _ in 0..(head & 7) {
            args.push(arg(&mut c));
        }
        let client = &mut clients[who];
        client.configures |= args[0].eq_ignore_ascii_case(b"config");
        client.uncounted |= is_subscription(&args[0])
            || args[0].eq_ignore_ascii_case(b"client")
            || args[0].eq_ignore_ascii_case(b"monitor");
        encode_request(&args, &mut client.pending);
        client.commands += 1;
        sent += 1;
        // Pipelined unless bit 6 says to send now.
        if head & 0x40 != 0 {
            client.flush(server);
        }
    }
    for client in &mut clients {
        client.flush(server);
        client.conn.close(server);
    }
});
