//! Keyspace commands: deletion, existence, expiry, iteration, renaming.

use super::args::*;
use super::Ctx;
use crate::protocol::Args;
use blinkdb_engine::{event::GENERIC, glob_match, Tx, Value};

pub fn del(ctx: &mut Ctx, args: &Args) {
    let db = ctx.db();
    let keys: Vec<(usize, &[u8])> = args[1..].iter().map(|k| (db, &k[..])).collect();
    ctx.write(&keys, |tx, out| {
        let mut deleted: Vec<&[u8]> = vec![&args[0]];
        for (_, k) in &keys {
            if tx.remove(db, k).is_some() {
                tx.notify(GENERIC, "del", db, k);
                deleted.push(k);
            }
        }
        if deleted.len() > 1 {
            tx.log(db, &deleted);
        }
        out.int(deleted.len() as i64 - 1);
    });
}

pub fn exists(ctx: &mut Ctx, args: &Args) {
    ctx.count_lookups(&args[1..]);
    let db = ctx.db();
    let n = args[1..]
        .iter()
        .filter(|k| ctx.shared.engine.read(db, k, |e| e.is_some()))
        .count();
    ctx.out.int(n as i64);
}

pub fn type_(ctx: &mut Ctx, args: &Args) {
    ctx.count_lookups(&[args[1]]);
    let t = ctx.shared.engine.read(ctx.db(), args[1], |e| {
        e.map_or("none", |e| e.value().type_name())
    });
    ctx.out.simple(t);
}

const NX: u8 = 1;
const XX: u8 = 2;
const GT: u8 = 4;
const LT: u8 = 8;

fn expire_generic(ctx: &mut Ctx, args: &Args, seconds: bool, absolute: bool) {
    let mut flags = 0u8;
    for opt in &args[3..] {
        flags |= match () {
            _ if eq_ic(opt, "nx") => NX,
            _ if eq_ic(opt, "xx") => XX,
            _ if eq_ic(opt, "gt") => GT,
            _ if eq_ic(opt, "lt") => LT,
            _ => {
                return ctx.out.error(&format!(
                    "ERR Unsupported option {}",
                    String::from_utf8_lossy(opt)
                ))
            }
        };
    }
    if flags & NX != 0 && flags & (XX | GT | LT) != 0 {
        return ctx
            .out
            .error("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if flags & GT != 0 && flags & LT != 0 {
        return ctx
            .out
            .error("ERR GT and LT options at the same time are not compatible");
    }
    let Some(mut when) = parse_i64(args[2]) else {
        return ctx.out.error(ERR_NOT_INT);
    };
    let name = String::from_utf8_lossy(args[0]).to_ascii_lowercase();
    let invalid = format!("ERR invalid expire time in '{name}' command");
    if seconds {
        if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
            return ctx.out.error(&invalid);
        }
        when *= 1000;
    }
    let now = ctx.shared.engine.now() as i64;
    let base = if absolute { 0 } else { now };
    if when > i64::MAX - base {
        return ctx.out.error(&invalid);
    }
    when += base;
    let key = &args[1];
    ctx.write1(key, |tx, db, out| {
        let Some(e) = tx.get(db, key) else {
            return out.int(0);
        };
        let current = if e.expire_at == 0 {
            -1
        } else {
            e.expire_at as i64
        };
        let refuse = (flags & NX != 0 && current != -1)
            || (flags & XX != 0 && current == -1)
            || (flags & GT != 0 && (current == -1 || when <= current))
            || (flags & LT != 0 && current != -1 && when >= current);
        if refuse {
            return out.int(0);
        }
        if when <= now && now != 0 {
            tx.remove(db, key);
            tx.log(db, &[b"DEL", key]);
            tx.notify(GENERIC, "del", db, key);
        } else {
            tx.set_expire(db, key, when as u64);
            tx.log(db, &[b"PEXPIREAT", key, when.to_string().as_bytes()]);
            tx.notify(GENERIC, "expire", db, key);
        }
        out.int(1);
    });
}

pub fn expire(ctx: &mut Ctx, args: &Args) {
    expire_generic(ctx, args, true, false);
}
pub fn pexpire(ctx: &mut Ctx, args: &Args) {
    expire_generic(ctx, args, false, false);
}
pub fn expireat(ctx: &mut Ctx, args: &Args) {
    expire_generic(ctx, args, true, true);
}
pub fn pexpireat(ctx: &mut Ctx, args: &Args) {
    expire_generic(ctx, args, false, true);
}

fn ttl_generic(ctx: &mut Ctx, args: &Args, ms: bool, absolute: bool) {
    let now = ctx.shared.engine.now() as i64;
    let at = ctx
        .shared
        .engine
        .read(ctx.db(), args[1], |e| e.map(|e| e.expire_at as i64));
    let reply = match at {
        None => -2,
        Some(0) => -1,
        Some(at) => {
            let ttl = if absolute { at } else { (at - now).max(0) };
            if ms {
                ttl
            } else {
                // PEXPIREAT k 9223372036854775807 makes ttl + 500 overflow;
                // Redis replies the exact quotient.
                ((ttl as i128 + 500) / 1000) as i64
            }
        }
    };
    ctx.out.int(reply);
}

pub fn ttl(ctx: &mut Ctx, args: &Args) {
    ctx.count_lookups(&[args[1]]);
    ttl_generic(ctx, args, false, false);
}
pub fn pttl(ctx: &mut Ctx, args: &Args) {
    ctx.count_lookups(&[args[1]]);
    ttl_generic(ctx, args, true, false);
}
pub fn expiretime(ctx: &mut Ctx, args: &Args) {
    ctx.count_lookups(&[args[1]]);
    ttl_generic(ctx, args, false, true);
}
pub fn pexpiretime(ctx: &mut Ctx, args: &Args) {
    ttl_generic(ctx, args, true, true);
}

pub fn persist(ctx: &mut Ctx, args: &Args) {
    let key = &args[1];
    ctx.write1(key, |tx, db, out| {
        let has_ttl = tx.get(db, key).is_some_and(|e| e.expire_at != 0);
        if has_ttl {
            tx.set_expire(db, key, 0);
            tx.log(db, &[b"PERSIST", key]);
            tx.notify(GENERIC, "persist", db, key);
        }
        out.int(has_ttl as i64);
    });
}

pub fn keys(ctx: &mut Ctx, args: &Args) {
    let pattern = args[1];
    let all = pattern == b"*";
    let mut found: Vec<Box<[u8]>> = Vec::new();
    let mut cursor = 0;
    loop {
        cursor = ctx
            .shared
            .engine
            .scan(ctx.db(), cursor, usize::MAX, |k, _| {
                if all || glob_match(pattern, k, false) {
                    found.push(k.into());
                }
            });
        if cursor == 0 {
            break;
        }
    }
    ctx.out.strs(found.iter().map(|k| &k[..]));
}

pub fn scan(ctx: &mut Ctx, args: &Args) {
    let Some(cursor) = parse_cursor(args[1]) else {
        return ctx.out.error("ERR invalid cursor");
    };
    let mut count = 10usize;
    let mut pattern: Option<&[u8]> = None;
    let mut type_name: Option<&[u8]> = None;
    let mut i = 2;
    while i < args.len() {
        let has_value = args.len() - i >= 2;
        if eq_ic(args[i], "count") && has_value {
            match parse_i64(args[i + 1]) {
                None => return ctx.out.error(ERR_NOT_INT),
                Some(n) if n < 1 => return ctx.syntax_error(),
                Some(n) => count = n as usize,
            }
        } else if eq_ic(args[i], "match") && has_value {
            pattern = Some(&args[i + 1])
                .filter(|p| &p[..] != b"*")
                .map(|p| &p[..]);
        } else if eq_ic(args[i], "type") && has_value {
            type_name = Some(args[i + 1]);
        } else {
            return ctx.syntax_error();
        }
        i += 2;
    }
    let mut found: Vec<Box<[u8]>> = Vec::new();
    let next = ctx.shared.engine.scan(ctx.db(), cursor, count, |k, e| {
        let type_ok =
            type_name.is_none_or(|t| t.eq_ignore_ascii_case(e.value().type_name().as_bytes()));
        if type_ok && pattern.is_none_or(|p| glob_match(p, k, false)) {
            found.push(k.into());
        }
    });
    ctx.out.array(2);
    ctx.out.bulk(next.to_string().as_bytes());
    ctx.out.strs(found.iter().map(|k| &k[..]));
}

pub fn randomkey(ctx: &mut Ctx, _args: &Args) {
    let k = ctx.shared.engine.random_key(ctx.db());
    ctx.out.bulk_opt(k.as_deref());
}

fn rename_generic(ctx: &mut Ctx, args: &Args, nx: bool) {
    let (src, dst) = (&args[1], &args[2]);
    let db = ctx.db();
    ctx.write(&[(db, src), (db, dst)], |tx, out| {
        if !tx.exists(db, src) {
            return out.error(ERR_NO_SUCH_KEY);
        }
        if src == dst {
            return if nx { out.int(0) } else { out.ok() };
        }
        if nx && tx.exists(db, dst) {
            return out.int(0);
        }
        if let Err(e) = relocate_filter(tx, db, src, db, dst) {
            return out.error(&e.to_string());
        }
        // The destination is deleted, then added: a `new` event even when it
        // existed, as in Redis.
        tx.remove(db, dst);
        let entry = tx.remove(db, src).expect("checked above");
        tx.insert(db, dst, entry);
        tx.log(db, &[if nx { b"RENAMENX" } else { b"RENAME" }, src, dst]);
        tx.notify(GENERIC, "rename_from", db, src);
        tx.notify(GENERIC, "rename_to", db, dst);
        if nx {
            out.int(1);
        } else {
            out.ok();
        }
    });
}

/// A kernel-backed filter's pin follows its key (`<pin root>/<db>/<key>`);
/// done before the keyspace changes so a failure leaves everything as it was.
fn relocate_filter(
    tx: &mut Tx,
    src_db: usize,
    src: &[u8],
    dst_db: usize,
    dst: &[u8],
) -> Result<(), blinkdb_engine::bf::BloomError> {
    match tx.get(src_db, src).and_then(|e| e.value().as_bloom()) {
        Some(filter) => filter.relocate(dst_db, dst),
        None => Ok(()),
    }
}

pub fn rename(ctx: &mut Ctx, args: &Args) {
    rename_generic(ctx, args, false);
}
pub fn renamenx(ctx: &mut Ctx, args: &Args) {
    rename_generic(ctx, args, true);
}

pub(super) fn parse_db(ctx: &mut Ctx, raw: &[u8]) -> Option<usize> {
    // Redis's getIntFromObjectOrReply: an integer past i32 has its own text.
    let Some(n) = parse_i64(raw) else {
        ctx.out.error(ERR_NOT_INT);
        return None;
    };
    if i32::try_from(n).is_err() {
        ctx.out.error(ERR_INT_RANGE);
        return None;
    }
    if n < 0 || n as usize >= ctx.shared.engine.databases() {
        ctx.out.error(ERR_DB_INDEX);
        return None;
    }
    Some(n as usize)
}

pub fn copy(ctx: &mut Ctx, args: &Args) {
    ctx.count_lookups(&[args[1]]);
    let src_db = ctx.db();
    let mut dst_db = src_db;
    let mut replace = false;
    let mut j = 3;
    while j < args.len() {
        if eq_ic(args[j], "replace") {
            replace = true;
        } else if eq_ic(args[j], "db") && j + 1 < args.len() {
            match parse_db(ctx, args[j + 1]) {
                Some(d) => dst_db = d,
                None => return,
            }
            j += 1;
        } else {
            return ctx.syntax_error();
        }
        j += 1;
    }
    if ctx.shared.cluster.is_some() && (src_db != 0 || dst_db != 0) {
        return ctx
            .out
            .error("ERR Copying to another database is not allowed in cluster mode");
    }
    let (src, dst) = (&args[1], &args[2]);
    if src_db == dst_db && src == dst {
        return ctx
            .out
            .error("ERR source and destination objects are the same");
    }
    ctx.write(&[(src_db, src), (dst_db, dst)], |tx, out| {
        let Some(mut entry) = tx.get(src_db, src).cloned() else {
            return out.int(0);
        };
        if tx.exists(dst_db, dst) && !replace {
            return out.int(0);
        }

        // A filter is copied to new files and logged as a binding of those files.
        if let Some(filter) = entry.value().as_bloom() {
            let (copy, binding) = match filter.duplicate() {
                Ok(copied) => copied,
                Err(e) => return out.error(&e.to_string()),
            };
            // The copy's label stays the source's: replaying the COPY needs it.
            entry.set_value(Value::bloom(copy));
            let at = entry.expire_at;
            // Replaced by deleting then adding: a `new` event, as in Redis.
            tx.remove(dst_db, dst);
            tx.insert(dst_db, dst, entry);
            let record = binding.encode(dst);
            tx.log(dst_db, &record.iter().map(|a| &a[..]).collect::<Vec<_>>());
            if at != 0 {
                tx.log(dst_db, &[b"PEXPIREAT", dst, at.to_string().as_bytes()]);
            }
            tx.notify(GENERIC, "copy_to", dst_db, dst);
            return out.int(1);
        }
        tx.remove(dst_db, dst);
        tx.insert(dst_db, dst, entry);
        let db_s = dst_db.to_string();
        let mut rec: Vec<&[u8]> = vec![b"COPY", src, dst, b"DB", db_s.as_bytes()];
        if replace {
            rec.push(b"REPLACE");
        }
        tx.log(src_db, &rec);
        tx.notify(GENERIC, "copy_to", dst_db, dst);
        out.int(1);
    });
}

pub fn move_(ctx: &mut Ctx, args: &Args) {
    if ctx.shared.cluster.is_some() {
        return ctx.out.error("ERR MOVE is not allowed in cluster mode");
    }
    let Some(dst_db) = parse_db(ctx, args[2]) else {
        return;
    };
    let src_db = ctx.db();
    if src_db == dst_db {
        return ctx
            .out
            .error("ERR source and destination objects are the same");
    }
    let key = &args[1];
    ctx.write(&[(src_db, key), (dst_db, key)], |tx, out| {
        if !tx.exists(src_db, key) || tx.exists(dst_db, key) {
            return out.int(0);
        }
        if let Err(e) = relocate_filter(tx, src_db, key, dst_db, key) {
            return out.error(&e.to_string());
        }
        let entry = tx.remove(src_db, key).expect("checked above");
        tx.insert(dst_db, key, entry);
        tx.log(src_db, &[b"MOVE", key, args[2]]);
        tx.notify(GENERIC, "move_from", src_db, key);
        tx.notify(GENERIC, "move_to", dst_db, key);
        out.int(1);
    });
}

pub fn dbsize(ctx: &mut Ctx, _args: &Args) {
    let n = ctx.shared.engine.db(ctx.db()).len();
    ctx.out.int(n as i64);
}

/// FLUSHDB/FLUSHALL's optional ASYNC|SYNC argument: Some(lazy) or None on
/// error; without one, `lazyfree-lazy-user-flush` decides (as in Redis).
fn flush_mode(ctx: &mut Ctx, args: &Args) -> Option<bool> {
    match args.len() {
        1 => Some(ctx.client.settings(ctx.shared).lazyfree_lazy_user_flush),
        2 if eq_ic(args[1], "async") => Some(true),
        2 if eq_ic(args[1], "sync") => Some(false),
        _ => None,
    }
}

pub fn flushdb(ctx: &mut Ctx, args: &Args) {
    let Some(lazy) = flush_mode(ctx, args) else {
        return ctx.syntax_error();
    };
    let streams = crate::exec::blocking::waited_streams(ctx.shared, Some(ctx.db()));
    let lsn = ctx
        .shared
        .engine
        .flush(Some(ctx.db()), &[b"FLUSHDB"], lazy, ctx.client.id);
    crate::exec::blocking::signal_all(&streams);
    ctx.client.note_lsn(lsn);
    ctx.out.ok();
}

pub fn flushall(ctx: &mut Ctx, args: &Args) {
    let Some(lazy) = flush_mode(ctx, args) else {
        return ctx.syntax_error();
    };
    let streams = crate::exec::blocking::waited_streams(ctx.shared, None);
    let lsn = ctx
        .shared
        .engine
        .flush(None, &[b"FLUSHALL"], lazy, ctx.client.id);
    crate::exec::blocking::signal_all(&streams);
    crate::persistence::rdb_file::after_flushall(ctx.shared);
    ctx.client.note_lsn(lsn);
    ctx.out.ok();
}

pub fn swapdb(ctx: &mut Ctx, args: &Args) {
    if ctx.shared.cluster.is_some() {
        return ctx.out.error("ERR SWAPDB is not allowed in cluster mode");
    }
    let index = |raw: &[u8]| parse_i64(raw).filter(|n| i32::try_from(*n).is_ok());
    let Some(a) = index(args[1]) else {
        return ctx.out.error("ERR invalid first DB index");
    };
    let Some(b) = index(args[2]) else {
        return ctx.out.error("ERR invalid second DB index");
    };
    let dbs = ctx.shared.engine.databases() as i64;
    if !(0..dbs).contains(&a) || !(0..dbs).contains(&b) {
        return ctx.out.error("ERR DB index is out of range");
    }
    let lsn = ctx
        .shared
        .engine
        .swap_dbs(a as usize, b as usize, &[b"SWAPDB", args[1], args[2]]);
    ctx.client.note_lsn(lsn);
    // Clients blocked in either database may find their keys there now.
    crate::exec::blocking::signal_existing(ctx.shared, a as usize);
    crate::exec::blocking::signal_existing(ctx.shared, b as usize);
    ctx.out.ok();
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("del", -2, WRITE, ALLKEYS, "generic", "1.0.0", "Delete a key", del;
        acl: acl::KEYSPACE,
        complexity: "O(N) where N is the number of keys that will be removed. When a key to remove holds a value other than a string, the individual complexity for this key is O(M) where M is the number of elements in the list, set, sorted set or hash. Removing a single key that holds a string value is O(1).",
        keys: "RM,delete index:1 range:-1:1:0",
        args: "key:key*",
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"]),
    cmd!("unlink", -2, WRITE | FAST, ALLKEYS, "generic", "4.0.0", "Delete a key asynchronously in another thread. Otherwise it is just as DEL, but non blocking.", del;
        acl: acl::KEYSPACE,
        complexity: "O(1) for each key removed regardless of its size. Then the command does O(N) work in a different thread in order to reclaim memory, where N is the number of allocations the deleted objects where composed of.",
        keys: "RM,delete index:1 range:-1:1:0",
        args: "key:key*",
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"]),
    cmd!("exists", -2, READONLY | FAST, ALLKEYS, "generic", "1.0.0", "Determine if a key exists", exists;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(N) where N is the number of keys to check.",
        keys: "RO index:1 range:-1:1:0",
        args: "key:key*",
        history: &[("3.0.3", "Accepts multiple `key` arguments.")],
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"]),
    cmd!("type", 2, READONLY | FAST, KEY1, "generic", "1.0.0", "Determine the type stored at key", type_;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RO index:1 range:0:1:0",
        args: "key:key"),
    cmd!("expire", -3, WRITE | FAST, KEY1, "generic", "1.0.0", "Set a key's time to live in seconds", expire;
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key seconds:integer condition:oneof?^7.0.0(nx:NX xx:XX gt:GT lt:LT)",
        history: &[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")]),
    cmd!("pexpire", -3, WRITE | FAST, KEY1, "generic", "2.6.0", "Set a key's time to live in milliseconds", pexpire;
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key milliseconds:integer condition:oneof?^7.0.0(nx:NX xx:XX gt:GT lt:LT)",
        history: &[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")]),
    cmd!("expireat", -3, WRITE | FAST, KEY1, "generic", "1.2.0", "Set the expiration for a key as a UNIX timestamp", expireat;
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key unix-time-seconds:unix-time condition:oneof?^7.0.0(nx:NX xx:XX gt:GT lt:LT)",
        history: &[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")]),
    cmd!("pexpireat", -3, WRITE | FAST, KEY1, "generic", "2.6.0", "Set the expiration for a key as a UNIX timestamp specified in milliseconds", pexpireat;
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key unix-time-milliseconds:unix-time condition:oneof?^7.0.0(nx:NX xx:XX gt:GT lt:LT)",
        history: &[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")]),
    cmd!("ttl", 2, READONLY | FAST, KEY1, "generic", "1.0.0", "Get the time to live for a key in seconds", ttl;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        args: "key:key",
        history: &[("2.8.0", "Added the -2 reply.")],
        tips: &["nondeterministic_output"]),
    cmd!("pttl", 2, READONLY | FAST, KEY1, "generic", "2.6.0", "Get the time to live for a key in milliseconds", pttl;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        args: "key:key",
        history: &[("2.8.0", "Added the -2 reply.")],
        tips: &["nondeterministic_output"]),
    cmd!("expiretime", 2, READONLY | FAST, KEY1, "generic", "7.0.0", "Get the expiration Unix timestamp for a key", expiretime;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        args: "key:key"),
    cmd!("pexpiretime", 2, READONLY | FAST, KEY1, "generic", "7.0.0", "Get the expiration Unix timestamp for a key in milliseconds", pexpiretime;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        args: "key:key"),
    cmd!("persist", 2, WRITE | FAST, KEY1, "generic", "2.2.0", "Remove the expiration from a key", persist;
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key"),
    cmd!("keys", 2, READONLY, NOKEYS, "generic", "1.0.0", "Find all keys matching the given pattern", keys;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE | acl::DANGEROUS,
        complexity: "O(N) with N being the number of keys in the database, under the assumption that the key names in the database and the given pattern have limited length.",
        args: "pattern:pattern",
        tips: &["request_policy:all_shards", "nondeterministic_output_order"]),
    cmd!("scan", -2, READONLY, NOKEYS, "generic", "2.8.0", "Incrementally iterate the keys space", scan;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
        args: "cursor:integer pattern:pattern=MATCH? count:integer=COUNT? type:string=TYPE?^6.0.0",
        history: &[("6.0.0", "Added the `TYPE` subcommand.")],
        tips: &["nondeterministic_output", "request_policy:special"]),
    cmd!("randomkey", 1, READONLY, NOKEYS, "generic", "1.0.0", "Return a random key from the keyspace", randomkey;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        tips: &["request_policy:all_shards", "nondeterministic_output"]),
    cmd!("rename", 3, WRITE, (1, 2, 1), "generic", "1.0.0", "Rename a key", rename;
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RW,access,delete index:1 range:0:1:0; OW,update index:2 range:0:1:0",
        args: "key:key newkey:key#1",
        history: &[]),
    cmd!("renamenx", 3, WRITE | FAST, (1, 2, 1), "generic", "1.0.0", "Rename a key, only if the new key does not exist", renamenx;
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RW,access,delete index:1 range:0:1:0; OW,insert index:2 range:0:1:0",
        args: "key:key newkey:key#1",
        history: &[("3.2.0", "The command no longer returns an error when source and destination names are the same.")]),
    cmd!("copy", -3, WRITE | DENYOOM, (1, 2, 1), "generic", "6.2.0", "Copy a key", copy;
        acl: acl::KEYSPACE,
        complexity: "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.",
        keys: "RO,access index:1 range:0:1:0; OW,update index:2 range:0:1:0",
        args: "source:key destination:key#1 destination-db:integer=DB? replace:REPLACE?"),
    cmd!("move", 3, WRITE | FAST, KEY1, "generic", "1.0.0", "Move a key to another database", move_;
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        args: "key:key db:integer"),
    cmd!("dbsize", 1, READONLY | FAST, NOKEYS, "server", "1.0.0", "Return the number of keys in the selected database", dbsize;
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        tips: &["request_policy:all_shards", "response_policy:agg_sum"]),
    cmd!("flushdb", -1, WRITE, NOKEYS, "server", "1.0.0", "Remove all keys from the current database", flushdb;
        acl: acl::KEYSPACE | acl::DANGEROUS,
        complexity: "O(N) where N is the number of keys in the selected database",
        args: "async:oneof?(async:ASYNC^4.0.0 sync:SYNC^6.2.0)",
        history: &[("4.0.0", "Added the `ASYNC` flushing mode modifier."), ("6.2.0", "Added the `SYNC` flushing mode modifier.")],
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    cmd!("flushall", -1, WRITE, NOKEYS, "server", "1.0.0", "Remove all keys from all databases", flushall;
        acl: acl::KEYSPACE | acl::DANGEROUS,
        complexity: "O(N) where N is the total number of keys in all databases",
        args: "async:oneof?(async:ASYNC^4.0.0 sync:SYNC^6.2.0)",
        history: &[("4.0.0", "Added the `ASYNC` flushing mode modifier."), ("6.2.0", "Added the `SYNC` flushing mode modifier.")],
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    cmd!("swapdb", 3, WRITE | FAST, NOKEYS, "server", "4.0.0", "Swaps two Redis databases", swapdb;
        acl: acl::KEYSPACE | acl::DANGEROUS,
        complexity: "O(N) where N is the count of clients watching or blocking on keys from both databases.",
        args: "index1:integer index2:integer"),
];
