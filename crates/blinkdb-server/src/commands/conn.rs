//! Connection commands: PING, ECHO, SELECT, QUIT, RESET, HELLO, AUTH, CLIENT.

use super::args::*;
use super::Ctx;
use crate::client::ClientType;
use crate::protocol::Args;

pub fn ping(ctx: &mut Ctx, args: &Args) {
    if args.len() <= 2 && ctx.client.in_resp2_subscribed() {
        // A RESP2 subscriber reads only arrays, so PING answers with one.
        ctx.out.array(2);
        ctx.out.bulk(b"pong");
        return ctx.out.bulk(args.get(1).copied().unwrap_or(b""));
    }
    match args.len() {
        1 => ctx.out.simple("PONG"),
        2 => ctx.out.bulk(args[1]),
        _ => ctx.arity_error("ping"),
    }
}

pub fn echo(ctx: &mut Ctx, args: &Args) {
    ctx.out.bulk(args[1]);
}

pub fn select(ctx: &mut Ctx, args: &Args) {
    if ctx.shared.cluster.is_some() {
        match super::args::parse_i64(args[1]).filter(|n| i32::try_from(*n).is_ok()) {
            None => return ctx.out.error(super::args::ERR_NOT_INT),
            Some(0) => {}
            Some(_) => return ctx.out.error("ERR SELECT is not allowed in cluster mode"),
        }
    }
    if let Some(db) = super::keys::parse_db(ctx, args[1]) {
        ctx.client.set_db(db);
        ctx.out.ok();
    }
}

pub fn quit(ctx: &mut Ctx, _args: &Args) {
    ctx.out.ok();
    ctx.client.close_after_reply = true;
}

pub fn reset(ctx: &mut Ctx, _args: &Args) {
    super::multi::end(ctx.client);
    ctx.client.set_cluster_readonly(false);
    super::multi::unwatch_all(ctx.shared, ctx.client);
    crate::pubsub::unsubscribe_all(&ctx.shared.pubsub, &ctx.client.info, &mut ctx.client.pubsub);
    super::tracking::disable(ctx.shared, ctx.client);
    ctx.client.set_db(0);
    ctx.client.set_proto(2);
    ctx.out.proto = 2;
    ctx.client.set_name(None);
    // Back to the default user, authenticated when it needs no password.
    let user = ctx.shared.acl.default_user();
    ctx.client.authenticated = user.nopass && user.enabled;
    ctx.client.info.set_user_name(&user.name);
    ctx.client.user = user;
    ctx.client.acl_version = ctx.shared.acl.version();
    if ctx.client.monitor.take().is_some() {
        ctx.shared.diagnostics.monitors.remove(ctx.client.id);
    }
    ctx.client.reply_off = false;
    ctx.client.reply_skip_next = false;
    let info = &ctx.client.info;
    info.set_flag(
        crate::client::FLAG_MONITOR | crate::client::FLAG_NO_EVICT,
        false,
    );
    ctx.out.simple("RESET");
}

const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

pub fn auth(ctx: &mut Ctx, args: &Args) {
    if args.len() > 3 {
        return ctx.syntax_error();
    }
    let default_nopass = ctx.shared.acl.default_user().nopass;
    if args.len() == 2 && default_nopass {
        return ctx.out.error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
    }
    let (user, pass): (&[u8], &[u8]) = if args.len() == 2 {
        (b"default", args[1])
    } else {
        (args[1], args[2])
    };
    if super::acl::authenticate(ctx, user, pass, args[0]) {
        ctx.out.ok();
    } else {
        ctx.out.error(WRONGPASS);
    }
}

fn valid_name(name: &[u8]) -> bool {
    name.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

pub fn hello(ctx: &mut Ctx, args: &Args) {
    let mut proto = ctx.client.proto;
    let mut j = 1;
    if args.len() >= 2 {
        match parse_i64(args[1]) {
            None => {
                return ctx
                    .out
                    .error("ERR Protocol version is not an integer or out of range")
            }
            Some(v) if !(2..=3).contains(&v) => {
                return ctx.out.error("NOPROTO unsupported protocol version")
            }
            Some(v) => proto = v as u8,
        }
        j = 2;
    }
    let mut setname: Option<&[u8]> = None;
    while j < args.len() {
        let more = args.len() - j - 1;
        if eq_ic(args[j], "auth") && more >= 2 {
            if !super::acl::authenticate(ctx, args[j + 1], args[j + 2], args[0]) {
                return ctx.out.error(WRONGPASS);
            }
            j += 3;
        } else if eq_ic(args[j], "setname") && more >= 1 {
            setname = Some(args[j + 1]);
            j += 2;
        } else {
            return ctx.out.error(&format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(args[j])
            ));
        }
    }
    if !ctx.client.authenticated {
        return ctx.out.error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time");
    }
    if let Some(name) = setname {
        if !valid_name(name) {
            return ctx
                .out
                .error("ERR Client names cannot contain spaces, newlines or special characters.");
        }
        ctx.client.set_name(Some(name));
    }
    ctx.client.set_proto(proto);
    ctx.out.proto = proto;
    let version = ctx.shared.settings().announce_redis_version.clone();
    let out = &mut *ctx.out;
    out.map(7);
    out.bulk(b"server");
    out.bulk(b"redis");
    out.bulk(b"version");
    out.bulk(version.as_bytes());
    out.bulk(b"proto");
    out.int(proto as i64);
    out.bulk(b"id");
    out.int(ctx.client.id as i64);
    out.bulk(b"mode");
    out.bulk(b"standalone");
    out.bulk(b"role");
    out.bulk(b"master");
    out.bulk(b"modules");
    out.array(1);
    super::server::reply_module(out);
}

pub fn client(ctx: &mut Ctx, args: &Args) {
    let sub = String::from_utf8_lossy(args[1]).to_ascii_lowercase();
    let arity_ok = match sub.as_str() {
        "id" | "getname" | "info" | "getredir" | "trackinginfo" => args.len() == 2,
        "setname" | "caching" => args.len() == 3,
        "unblock" => args.len() == 3 || args.len() == 4,
        "tracking" => args.len() >= 3,
        "setinfo" => args.len() == 4,
        "list" | "kill" => true,
        "help" => args.len() == 2,
        _ => true,
    };
    if !arity_ok {
        return ctx.arity_error(&format!("client|{sub}"));
    }
    match sub.as_str() {
        "id" => ctx.out.int(ctx.client.id as i64),
        "getname" => {
            let name = ctx.client.info.name();
            if name.is_empty() {
                ctx.out.null()
            } else {
                ctx.out.bulk(name.as_bytes())
            }
        }
        "setname" => {
            if !valid_name(args[2]) {
                return ctx.out.error(
                    "ERR Client names cannot contain spaces, newlines or special characters.",
                );
            }
            ctx.client
                .set_name(Some(&args[2]).filter(|n| !n.is_empty()).map(|n| &n[..]));
            ctx.out.ok();
        }
        "setinfo" => client_setinfo(ctx, args),
        "info" => {
            let line = ctx.client.info.describe(&ctx.shared.clock());
            ctx.out.verbatim(&format!("{line}\n"));
        }
        "list" => client_list(ctx, args),
        "kill" => client_kill(ctx, args),
        "unblock" => client_unblock(ctx, args),
        "pause" => client_pause(ctx, args),
        "unpause" => {
            ctx.shared.exec.pause.unpause();
            if !ctx.shared.exec.pause.failover() {
                ctx.shared.engine.hold_expiry_until(0);
            }
            ctx.out.ok();
        }
        "reply" => client_reply(ctx, args),
        // BlinkDB never evicts clients: the flag shows in CLIENT LIST.
        "no-evict" => set_client_flag(ctx, args[2], crate::client::FLAG_NO_EVICT),
        // Redis 7.2's CLIENT NO-TOUCH (issue 18 lists it): the client's
        // commands other than TOUCH do not update access clocks (mod.rs).
        "no-touch" => set_client_flag(ctx, args[2], crate::client::FLAG_NO_TOUCH),
        "tracking" => super::tracking::tracking(ctx, args),
        "caching" => super::tracking::caching(ctx, args),
        "getredir" => super::tracking::getredir(ctx),
        "trackinginfo" => super::tracking::trackinginfo(ctx),
        "help" => {
            let lines = [
                "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "CACHING (YES|NO)",
                "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
                "GETREDIR",
                "    Return the client ID we are redirecting to when tracking is enabled.",
                "GETNAME",
                "    Return the name of the current connection.",
                "ID",
                "    Return the ID of the current connection.",
                "INFO",
                "    Return information about the current client connection.",
                "KILL <ip:port>",
                "    Kill connection made from <ip:port>.",
                "KILL <option> <value> [<option> <value> [...]]",
                "    Kill connections. Options are:",
                "    * ADDR (<ip:port>|<unixsocket>:0)",
                "      Kill connections made from the specified address",
                "    * LADDR (<ip:port>|<unixsocket>:0)",
                "      Kill connections made to specified local address",
                "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
                "      Kill connections by type.",
                "    * USER <username>",
                "      Kill connections authenticated by <username>.",
                "    * SKIPME (YES|NO)",
                "      Skip killing current connection (default: yes).",
                "    * ID <client-id>",
                "      Kill connections by client id.",
                "    * MAXAGE <maxage>",
                "      Kill connections older than the specified age.",
                "LIST [TYPE normal] [ID <id> [<id> ...]]",
                "    Return information about client connections.",
                "UNPAUSE",
                "    Stop the current client pause, resuming traffic.",
                "PAUSE <timeout> [WRITE|ALL]",
                "    Suspend all, or just write, clients for <timeout> milliseconds.",
                "REPLY (ON|OFF|SKIP)",
                "    Control the replies sent to the current connection.",
                "SETINFO <option> <value>",
                "    Set client meta attr. Options are: LIB-NAME, LIB-VER.",
                "SETNAME <name>",
                "    Assign the name <name> to the current connection.",
                "UNBLOCK <clientid> [TIMEOUT|ERROR]",
                "    Unblock the specified blocked client.",
                "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
                "         [OPTIN] [OPTOUT] [NOLOOP]",
                "    Control server assisted client side caching.",
                "TRACKINGINFO",
                "    Report tracking status for the current connection.",
                "NO-EVICT (ON|OFF)",
                "    Protect current client connection from eviction.",
                "NO-TOUCH (ON|OFF)",
                "    Will not touch LRU/LFU stats when this mode is on.",
                "HELP",
                "    Prints this help.",
            ];
            ctx.out.help(&lines);
        }
        _ => ctx.out.error(&format!(
            "ERR unknown subcommand '{}'. Try CLIENT HELP.",
            String::from_utf8_lossy(args[1])
        )),
    }
}

/// A timeout in milliseconds as Redis reads one: the absolute end time (0
/// for 0), or the error reply's text.
pub fn timeout_ms(arg: &[u8]) -> Result<u64, &'static str> {
    match parse_i64(arg) {
        None => Err("ERR timeout is not an integer or out of range"),
        Some(n) if n < 0 => Err("ERR timeout is negative"),
        Some(0) => Ok(0),
        Some(n) => (n as u64)
            .checked_add(blinkdb_engine::now_ms())
            .filter(|end| *end <= i64::MAX as u64)
            .ok_or("ERR timeout is out of range"),
    }
}

/// CLIENT UNBLOCK id [TIMEOUT|ERROR]: ends a blocked client's wait as a
/// timeout would, or with an UNBLOCKED error.
fn client_unblock(ctx: &mut Ctx, args: &Args) {
    let error = match args.get(3) {
        None => false,
        Some(w) if eq_ic(w, "timeout") => false,
        Some(w) if eq_ic(w, "error") => true,
        Some(_) => {
            return ctx
                .out
                .error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
        }
    };
    let Some(id) = parse_i64(args[2]) else {
        return ctx.out.error(super::args::ERR_NOT_INT);
    };
    let unblocked = id >= 0
        && ctx
            .shared
            .exec
            .blocking
            .unblock(ctx.shared, id as u64, error);
    if unblocked && error {
        ctx.out.foreign_errors += 1;
    }
    ctx.out.int(unblocked as i64);
}

fn client_pause(ctx: &mut Ctx, args: &Args) {
    let mut mode = crate::exec::pause::ALL;
    if args.len() == 4 {
        if eq_ic(args[3], "write") {
            mode = crate::exec::pause::WRITE;
        } else if !eq_ic(args[3], "all") {
            return ctx.out.error("ERR CLIENT PAUSE mode must be WRITE or ALL");
        }
    } else if args.len() > 4 {
        return super::subcommand_syntax_error(ctx, args);
    }
    match timeout_ms(args[2]) {
        Ok(end) => {
            ctx.shared.exec.pause.pause(mode, end);
            if !ctx.shared.exec.pause.failover() {
                ctx.shared
                    .engine
                    .hold_expiry_until(ctx.shared.exec.pause.end_ms());
            }
            ctx.out.ok();
        }
        Err(e) => ctx.out.error(e),
    }
}

/// CLIENT NO-EVICT / NO-TOUCH `ON|OFF`: sets or clears `flag`.
fn set_client_flag(ctx: &mut Ctx, arg: &[u8], flag: u8) {
    let on = if eq_ic(arg, "on") {
        true
    } else if eq_ic(arg, "off") {
        false
    } else {
        return ctx.syntax_error();
    };
    ctx.client.info.set_flag(flag, on);
    ctx.out.ok();
}

fn client_reply(ctx: &mut Ctx, args: &Args) {
    let c = &mut *ctx.client;
    if eq_ic(args[2], "on") {
        c.reply_off = false;
        c.reply_skip = false;
        ctx.out.ok();
    } else if eq_ic(args[2], "off") {
        c.reply_off = true;
    } else if eq_ic(args[2], "skip") {
        if !c.reply_off {
            c.reply_skip_next = true;
        }
    } else {
        ctx.syntax_error();
    }
}

fn client_setinfo(ctx: &mut Ctx, args: &Args) {
    let attr = String::from_utf8_lossy(args[2]).to_ascii_lowercase();
    if attr != "lib-name" && attr != "lib-ver" {
        return ctx.out.error(&format!(
            "ERR Unrecognized option '{}'",
            String::from_utf8_lossy(args[2])
        ));
    }
    if !valid_name(args[3]) {
        return ctx.out.error(&format!(
            "ERR {} cannot contain spaces, newlines or special characters.",
            attr.to_ascii_uppercase()
        ));
    }
    let value = String::from_utf8_lossy(args[3]).into_owned();
    ctx.client.info.set_lib(attr == "lib-name", value);
    ctx.out.ok();
}

fn client_list(ctx: &mut Ctx, args: &Args) {
    let mut ids: Option<Vec<u64>> = None;
    let mut kind: Option<ClientType> = None;
    let mut j = 2;
    while j < args.len() {
        if eq_ic(args[j], "type") && j + 1 < args.len() {
            let t = String::from_utf8_lossy(args[j + 1]).to_ascii_lowercase();
            kind = Some(match t.as_str() {
                "normal" => ClientType::Normal,
                "pubsub" => ClientType::Pubsub,
                "replica" | "slave" => ClientType::Replica,
                "master" => ClientType::Master,
                _ => return ctx.out.error(&format!("ERR Unknown client type '{t}'")),
            });
            j += 2;
        } else if eq_ic(args[j], "id") && j + 1 < args.len() {
            // Any integer (Redis lists no client for 0 or -1), in the order given.
            let mut list = vec![];
            for a in &args[j + 1..] {
                match parse_i64(a) {
                    Some(n) => list.extend(u64::try_from(n).ok()),
                    None => return ctx.out.error("ERR Invalid client ID"),
                }
            }
            ids = Some(list);
            j = args.len();
        } else {
            return ctx.syntax_error();
        }
    }
    let now = ctx.shared.clock();
    let clients = ctx.clients().snapshot();
    let listed: Vec<&std::sync::Arc<crate::client::ClientInfo>> = match &ids {
        None => clients.iter().collect(),
        Some(ids) => ids
            .iter()
            // The snapshot is sorted by id.
            .filter_map(|id| {
                let at = clients.binary_search_by_key(id, |c| c.id).ok()?;
                Some(&clients[at])
            })
            .collect(),
    };
    let mut text = String::new();
    for info in listed {
        if kind.is_some_and(|k| k != ClientType::of(info)) {
            continue;
        }
        text.push_str(&info.describe(&now));
        text.push('\n');
    }
    ctx.out.verbatim(&text);
}

fn client_kill(ctx: &mut Ctx, args: &Args) {
    if args.len() == 3 {
        let addr = String::from_utf8_lossy(args[2]);
        let n = ctx.clients().kill(|c| c.addr == addr, None);
        return if n > 0 {
            ctx.out.ok()
        } else {
            ctx.out.error("ERR No such client")
        };
    }
    let mut id: Option<u64> = None;
    let mut addr: Option<String> = None;
    let mut laddr: Option<String> = None;
    let mut skipme = true;
    let mut kind: Option<ClientType> = None;
    let mut user: Option<&[u8]> = None;
    // Redis 7.4's MAXAGE: only connections at least this many seconds old.
    let mut max_age: Option<u64> = None;
    // Redis reads the pairs in order and answers the first bad one, so an
    // odd count is a syntax error only once the pairs before it are valid.
    for pair in args[2..].chunks(2) {
        if pair.len() < 2 {
            return ctx.syntax_error();
        }
        let v = String::from_utf8_lossy(pair[1]).into_owned();
        if eq_ic(pair[0], "type") {
            kind = Some(match v.to_ascii_lowercase().as_str() {
                "normal" => ClientType::Normal,
                "pubsub" => ClientType::Pubsub,
                "replica" | "slave" => ClientType::Replica,
                "master" => ClientType::Master,
                _ => return ctx.out.error(&format!("ERR Unknown client type '{v}'")),
            });
        } else if eq_ic(pair[0], "user") {
            if ctx.shared.acl.get(pair[1]).is_none() {
                return ctx.out.error(&format!("ERR No such user '{v}'"));
            }
            user = Some(pair[1]);
        } else if eq_ic(pair[0], "id") {
            match parse_i64(pair[1]).filter(|n| *n > 0) {
                Some(n) => id = Some(n as u64),
                None => return ctx.out.error("ERR client-id should be greater than 0"),
            }
        } else if eq_ic(pair[0], "maxage") {
            match parse_i64(pair[1]) {
                None => {
                    return ctx
                        .out
                        .error("ERR maxage is not an integer or out of range")
                }
                Some(n) if n <= 0 => return ctx.out.error("ERR maxage should be greater than 0"),
                Some(n) => max_age = Some(n as u64),
            }
        } else if eq_ic(pair[0], "addr") {
            addr = Some(v);
        } else if eq_ic(pair[0], "laddr") {
            laddr = Some(v);
        } else if eq_ic(pair[0], "skipme") {
            skipme = match v.to_ascii_lowercase().as_str() {
                "yes" => true,
                "no" => false,
                _ => return ctx.syntax_error(),
            };
        } else {
            return ctx.syntax_error();
        }
    }
    // Ages in whole seconds of the wall clock, as Redis compares its
    // second-resolution ctime with the command's time.
    let now_s = blinkdb_engine::now_ms() / 1000;
    let me = skipme.then_some(ctx.client.id);
    let n = ctx.clients().kill(
        |c| {
            kind.is_none_or(|k| k == ClientType::of(c))
                && id.is_none_or(|i| c.id == i)
                && addr.as_ref().is_none_or(|a| &c.addr == a)
                && laddr.as_ref().is_none_or(|a| &c.laddr == a)
                && user.is_none_or(|u| *c.user_name() == *u)
                && max_age.is_none_or(|m| now_s.saturating_sub(c.created_ms / 1000) >= m)
        },
        me,
    );
    if ctx.client.info.is_killed() {
        ctx.client.close_after_reply = true;
    }
    ctx.out.int(n as i64);
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("select", 2, LOADING_OK | STALE | FAST, NOKEYS, "connection", "1.0.0", "Change the selected database for the current connection", select;
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "index:integer"),
    cmd!("ping", -1, FAST, NOKEYS, "connection", "1.0.0", "Ping the server", ping;
        props: props::SUBSCRIBED_OK | props::MISCONF_CHECKED,
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "message:string?",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    cmd!("echo", 2, LOADING_OK | STALE | FAST, NOKEYS, "connection", "1.0.0", "Echo the given string", echo;
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "message:string"),
    cmd!("quit", -1, ALLOW_BUSY | NOSCRIPT | LOADING_OK | STALE | FAST | NO_AUTH | TX_CONTROL, NOKEYS, "connection", "1.0.0", "Close the connection", quit;
        props: props::SUBSCRIBED_OK,
        acl: acl::CONNECTION,
        complexity: "O(1)"),
    cmd!("reset", 1, NOSCRIPT | LOADING_OK | STALE | FAST | NO_AUTH | ALLOW_BUSY | TX_CONTROL, NOKEYS, "connection", "6.2.0", "Reset the connection", reset;
        props: props::SUBSCRIBED_OK,
        acl: acl::CONNECTION,
        complexity: "O(1)"),
    cmd!("hello", -1, NOSCRIPT | LOADING_OK | STALE | FAST | NO_AUTH | ALLOW_BUSY, NOKEYS, "connection", "6.0.0", "Handshake with Redis", hello;
        redact: Some(super::monitor::redact_hello),
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "arguments:block?(protover:integer username_password:block=AUTH?(username:string password:string) clientname:string=SETNAME?)",
        history: &[("6.2.0", "`protover` made optional; when called without arguments the command reports the current connection's context.")]),
    cmd!("auth", -2, NOSCRIPT | LOADING_OK | STALE | FAST | NO_AUTH | ALLOW_BUSY, NOKEYS, "connection", "1.0.0", "Authenticate to the server", auth;
        redact: Some(super::monitor::redact_auth),
        acl: acl::CONNECTION,
        complexity: "O(N) where N is the number of passwords defined for the user",
        args: "username:string?^6.0.0 password:string",
        history: &[("6.0.0", "Added ACL style (username and password).")]),
    cmd!("client", -2, CONTAINER, NOKEYS, "connection", "2.4.0", "A container for client connection commands", NO_HANDLER;
        props: props::KEEPS_CACHING,
        complexity: "Depends on subcommand."),
    cmd!("client|getname", 2, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "2.6.9", "Get the current connection name", client;
        props: props::KEEPS_CACHING,
        acl: acl::CONNECTION,
        complexity: "O(1)"),
    cmd!("client|id", 2, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "5.0.0", "Returns the client ID for the current connection", client;
        props: props::KEEPS_CACHING,
        acl: acl::CONNECTION,
        complexity: "O(1)"),
    cmd!("client|info", 2, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "6.2.0", "Returns information about the current client connection.", client;
        props: props::KEEPS_CACHING,
        acl: acl::CONNECTION,
        complexity: "O(1)",
        tips: &["nondeterministic_output"]),
    cmd!("client|kill", -3, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "2.4.0", "Kill the connection of a client", client;
        props: props::KEEPS_CACHING,
        acl: acl::CONNECTION,
        complexity: "O(N) where N is the number of client connections",
        // Redis 8.0's arguments (7.4 added MAXAGE and renamed the others).
        args: "filter:oneof(old-format:string~2.8.12 new-format:oneof*(client-id:integer=ID?^2.8.12 client-type:oneof=TYPE?^2.8.12(normal:NORMAL master:MASTER^3.2.0 slave:SLAVE replica:REPLICA^5.0.0 pubsub:PUBSUB) username:string=USER? addr:string=ADDR? laddr:string=LADDR?^6.2.0 skipme:oneof=SKIPME?(yes:YES no:NO) maxage:integer=MAXAGE?^7.4.0))",
        history: &[("2.8.12", "Added new filter format."), ("2.8.12", "`ID` option."), ("3.2.0", "Added `master` type in for `TYPE` option."), ("5.0.0", "Replaced `slave` `TYPE` with `replica`. `slave` still supported for backward compatibility."), ("6.2.0", "`LADDR` option."), ("7.4.0", "`MAXAGE` option.")]),
    cmd!("client|list", -2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "2.4.0", "Get the list of client connections", client;
        props: props::KEEPS_CACHING,
        acl: acl::CONNECTION,
        complexity: "O(N) where N is the number of client connections",
        args: "normal_master_replica_pubsub:oneof=TYPE?^5.0.0(normal:NORMAL master:MASTER replica:REPLICA pubsub:PUBSUB) id:block=ID?^6.2.0(client-id:integer*)",
        history: &[("2.8.12", "Added unique client `id` field."), ("5.0.0", "Added optional `TYPE` filter."), ("6.0.0", "Added `user` field."), ("6.2.0", "Added `argv-mem`, `tot-mem`, `laddr` and `redir` fields and the optional `ID` filter."), ("7.0.0", "Added `resp`, `multi-mem`, `rbs` and `rbp` fields."), ("7.0.3", "Added `ssub` field.")],
        tips: &["nondeterministic_output"]),
    cmd!("client|setname", 3, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "2.6.9", "Set the current connection name", client;
        props: props::KEEPS_CACHING,
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "connection-name:string"),
    // Redis 7.2's (7.0.15 lacks it; clients such as redis-py send it at connect).
    cmd!("client|setinfo", 4, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "7.2.0", "Sets information specific to the client or connection.", client;
        props: props::KEEPS_CACHING,
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "attr:oneof(libname:string=LIB-NAME libver:string=LIB-VER)",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"]),
    cmd!("client|help", 2, LOADING_OK | STALE, NOKEYS, "connection", "5.0.0", "Show helpful text about the different subcommands", client;
        props: props::KEEPS_CACHING,
        acl: acl::CONNECTION,
        complexity: "O(1)"),
    cmd!("client|no-evict", 3, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "7.0.0", "Set client eviction mode for the current connection", client;
        props: props::KEEPS_CACHING,
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "enabled:oneof(on:ON off:OFF)"),
    // Redis 7.2's entry (src/commands/client-no-touch.json): 7.0.15 has none.
    cmd!("client|no-touch", 3, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "7.2.0", "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.", client;
        props: props::KEEPS_CACHING,
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "enabled:oneof(on:ON off:OFF)"),
    cmd!("client|pause", -3, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "2.9.50", "Stop processing commands from clients for some time", client;
        props: props::KEEPS_CACHING,
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "timeout:integer mode:oneof?^6.2.0(write:WRITE all:ALL)",
        history: &[("6.2.0", "`CLIENT PAUSE WRITE` mode added along with the `mode` option.")]),
    cmd!("client|unblock", -3, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "5.0.0", "Unblock a client blocked in a blocking command from a different connection", client;
        props: props::KEEPS_CACHING,
        acl: acl::CONNECTION,
        complexity: "O(log N) where N is the number of client connections",
        args: "client-id:integer timeout_error:oneof?(timeout:TIMEOUT error:ERROR)"),
    cmd!("client|unpause", 2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "6.2.0", "Resume processing of clients that were paused", client;
        props: props::KEEPS_CACHING,
        acl: acl::CONNECTION,
        complexity: "O(N) Where N is the number of paused clients"),
    cmd!("client|reply", 3, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "3.2.0", "Instruct the server whether to reply to commands", client;
        props: props::KEEPS_CACHING,
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "on_off_skip:oneof(on:ON off:OFF skip:SKIP)"),
    cmd!("client|tracking", -3, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "6.0.0", "Enable or disable server assisted client side caching support", client;
        props: props::KEEPS_CACHING,
        acl: acl::CONNECTION,
        complexity: "O(1). Some options may introduce additional complexity.",
        args: "status:oneof(on:ON off:OFF) client-id:integer=REDIRECT? prefix:string=PREFIX?*+ bcast:BCAST? optin:OPTIN? optout:OPTOUT? noloop:NOLOOP?"),
    cmd!("client|caching", 3, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "6.0.0", "Instruct the server about tracking or not keys in the next request", client;
        props: props::KEEPS_CACHING,
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "mode:oneof(yes:YES no:NO)"),
    cmd!("client|getredir", 2, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "6.0.0", "Get tracking notifications redirection client ID if any", client;
        props: props::KEEPS_CACHING,
        acl: acl::CONNECTION,
        complexity: "O(1)"),
    cmd!("client|trackinginfo", 2, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "6.2.0", "Return information about server assisted client side caching for the current connection", client;
        props: props::KEEPS_CACHING,
        acl: acl::CONNECTION,
        complexity: "O(1)"),
];
