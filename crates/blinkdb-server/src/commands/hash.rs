//! Hash commands (HSET, HGET, HINCRBY, HRANDFIELD, HSCAN...), with Redis
//! 7.0's replies, errors, keyspace events and AOF records.

use super::args::{incr_by_float_as, parse_i64, ERR_NOT_INT, ERR_OVERFLOW};
use super::collection::{self, Collection, ScanArgs};
use super::Ctx;
use crate::protocol::{Args, Out};
use blinkdb_engine::{
    event::{GENERIC, HASH},
    Engine, HashValue, Tx,
};

fn limits(ctx: &mut Ctx) -> blinkdb_engine::Limits {
    ctx.client.settings(ctx.shared).collection_limits
}

/// The clock a read checks field TTLs against (0 while loading).
pub(super) fn read_now(ctx: &Ctx) -> u64 {
    ctx.shared.engine.now()
}

/// The clock by which a command removes a field it meets past its TTL
/// (Redis 8.0's lazy field expiry): 0 on a replica, which removes no field
/// itself (its master's HDELs do), while loading and while expiry is held.
pub(super) fn write_now(ctx: &Ctx) -> u64 {
    ctx.shared.engine.lazy_expiry_now()
}

/// `collection::modify` of a hash whose fields expired before `now` are
/// removed first: each logged as `HDEL key field`, as Redis 8.0 propagates
/// them, with one `hexpired` event (HRANDFIELD's hashTypeExpireIfNeeded, the
/// one command that removes every expired field; the others touch only the
/// fields they name). The caller calls `drop_if_empty` after, as for any
/// change.
fn expire_then_modify<R>(
    tx: &mut Tx,
    db: usize,
    key: &[u8],
    create: bool,
    now: u64,
    f: impl FnOnce(&mut HashValue) -> R,
) -> Result<Option<R>, collection::WrongType> {
    let mut gone = Vec::new();
    let r = collection::modify(tx, db, key, create, |h: &mut HashValue| {
        if now != 0 && h.has_ttls() {
            gone = h.expire_due(now, usize::MAX);
        }
        f(h)
    })?;
    if !gone.is_empty() {
        let records: Vec<Vec<&[u8]>> = gone.iter().map(|f| vec![&b"HDEL"[..], key, f]).collect();
        log_wrapped(tx, db, &records);
        tx.notify(HASH, "hexpired", db, key);
        tx.count_expired_subkeys(gone.len());
    }
    Ok(r)
}

/// Logs what one command propagates: several records go inside MULTI/EXEC,
/// as Redis wraps a command's propagated effects (HRANDFIELD's HDELs,
/// HEXPIRE's fields removed by a time past, HGETEX's fields met past their
/// TTL with its own record).
pub(super) fn log_wrapped(tx: &mut Tx, db: usize, records: &[Vec<&[u8]>]) {
    if records.len() > 1 {
        crate::exec::wrapper::multi(tx, db);
    }
    for r in records {
        tx.log(db, r);
    }
    if records.len() > 1 {
        crate::exec::wrapper::exec(tx, db);
    }
}

/// What a command met at one field (Redis 8.0's GetFieldRes).
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Met {
    Missing,
    Live,
    /// Past its TTL, and removed.
    Expired,
    /// Removed, and the hash with it (it was the last field).
    ExpiredHash,
}

impl Met {
    /// The field was past its TTL and removed.
    pub(super) fn removed(self) -> bool {
        matches!(self, Met::Expired | Met::ExpiredHash)
    }
}

/// Redis 8.0's lazy field expiry (hashTypeGetValue), inside a write: if
/// `field` of the hash at `key` expired before `now` (0: nothing expires),
/// it is removed, logged as `HDEL key field` and counted in
/// expired_subkeys; with `events`, `hexpired` is sent. A hash left empty is
/// deleted (`del` with `events`). With `multi`, for a command that logs a
/// record of its own after it, the HDEL opens a MULTI, which the caller
/// closes with EXEC after that record when a field was removed
/// (`Met::removed`), as Redis wraps both.
pub(super) fn expire_field(
    tx: &mut Tx,
    db: usize,
    key: &[u8],
    field: &[u8],
    now: u64,
    events: bool,
    multi: bool,
) -> Met {
    let expired = match collection::get::<HashValue>(tx, db, key) {
        Ok(Some(h)) => match h.find(field, now) {
            None => return Met::Missing,
            Some((_, expired)) => expired,
        },
        _ => return Met::Missing,
    };
    if !expired {
        return Met::Live;
    }
    let _ = collection::modify(tx, db, key, false, |h: &mut HashValue| h.remove(field));
    if multi {
        crate::exec::wrapper::multi(tx, db);
    }
    tx.log(db, &[b"HDEL", key, field]);
    tx.count_expired_subkeys(1);
    if events {
        tx.notify(HASH, "hexpired", db, key);
    }
    let empty = matches!(collection::get::<HashValue>(tx, db, key), Ok(Some(h)) if h.is_empty());
    if !empty {
        return Met::Expired;
    }
    tx.remove(db, key);
    if events {
        tx.notify(GENERIC, "del", db, key);
    }
    Met::ExpiredHash
}

/// One field read under the read lock: its value, or whether the command
/// must remove it (expired, and this server removes fields: `lazy`). The
/// clock is read only for a hash with TTLs.
enum Read<'a> {
    Value(Option<&'a [u8]>),
    Expired,
}

fn read_field<'a>(h: Option<&'a HashValue>, field: &[u8], engine: &Engine) -> Read<'a> {
    let Some(h) = h else {
        return Read::Value(None);
    };
    if !h.has_ttls() {
        return Read::Value(h.get(field, 0));
    }
    match h.find(field, engine.now()) {
        Some((v, false)) => Read::Value(Some(v)),
        Some((_, true)) if engine.lazy_expiry_now() != 0 => Read::Expired,
        _ => Read::Value(None),
    }
}

/// The slow path of HGET, HSTRLEN and HEXISTS once the read met the field
/// expired: the write removes it (if it still is) and replies from what it
/// finds then.
fn expire_and_reply(
    ctx: &mut Ctx,
    key: &[u8],
    field: &[u8],
    reply: impl FnOnce(&mut Out, Option<&[u8]>),
) {
    let now = write_now(ctx);
    ctx.write1(key, |tx, db, out| {
        if expire_field(tx, db, key, field, now, true, false) != Met::Live {
            return reply(out, None);
        }
        let h = collection::get::<HashValue>(tx, db, key).ok().flatten();
        reply(out, h.and_then(|h| h.get(field, 0)))
    });
}

/// One field's reply (HGET, HSTRLEN, HEXISTS), removing it if expired.
fn one_field(ctx: &mut Ctx, key: &[u8], field: &[u8], reply: impl Fn(&mut Out, Option<&[u8]>)) {
    let shared = ctx.shared;
    let engine = &shared.engine;
    let mut expired = false;
    collection::read_or_reply(ctx, key, |h: Option<&HashValue>, out| {
        match read_field(h, field, engine) {
            Read::Value(v) => reply(out, v),
            Read::Expired => expired = true,
        }
    });
    if expired {
        expire_and_reply(ctx, key, field, reply);
    }
}

fn set_generic(ctx: &mut Ctx, args: &Args, hmset: bool) {
    if !args.len().is_multiple_of(2) {
        return ctx.arity_error(if hmset { "hmset" } else { "hset" });
    }
    let key = args[1];
    let limits = limits(ctx);
    // No field is removed first: one past its TTL is overwritten (and counts
    // as not new), as Redis 8.0's HSET does.
    ctx.write1(key, |tx, db, out| {
        let added = collection::modify(tx, db, key, true, |h: &mut HashValue| {
            args[2..]
                .chunks(2)
                .filter(|fv| h.set(fv[0], fv[1], &limits))
                .count()
        });
        let Ok(Some(added)) = added else {
            return out.error(super::args::ERR_WRONGTYPE);
        };
        tx.log(db, args);
        tx.notify(HASH, "hset", db, key);
        if hmset {
            out.ok()
        } else {
            out.int(added as i64)
        }
    });
}

pub fn hset(ctx: &mut Ctx, args: &Args) {
    set_generic(ctx, args, false);
}

pub fn hmset(ctx: &mut Ctx, args: &Args) {
    set_generic(ctx, args, true);
}

pub fn hsetnx(ctx: &mut Ctx, args: &Args) {
    let (key, field, value) = (args[1], args[2], args[3]);
    let limits = limits(ctx);
    let now = write_now(ctx);
    ctx.write1(key, |tx, db, out| {
        if collection::get::<HashValue>(tx, db, key).is_err() {
            return out.error(super::args::ERR_WRONGTYPE);
        }
        // A field past its TTL is removed (and the hash, if it was the
        // last), then set anew, as Redis 8.0's hashTypeExists does.
        let met = expire_field(tx, db, key, field, now, true, true);
        if met == Met::Live {
            return out.int(0);
        }
        let wrap = met.removed();
        let _ = collection::modify(tx, db, key, true, |h: &mut HashValue| {
            h.set(field, value, &limits)
        });
        tx.log(db, args);
        if wrap {
            crate::exec::wrapper::exec(tx, db);
        }
        tx.notify(HASH, "hset", db, key);
        out.int(1);
    });
}

pub fn hget(ctx: &mut Ctx, args: &Args) {
    one_field(ctx, args[1], args[2], |out, v| out.bulk_opt(v));
}

pub fn hmget(ctx: &mut Ctx, args: &Args) {
    let (key, fields) = (args[1], &args[2..]);
    let shared = ctx.shared;
    let engine = &shared.engine;
    let mut expired = false;
    collection::read_or_reply(ctx, key, |h: Option<&HashValue>, out| {
        let ttls = h.is_some_and(HashValue::has_ttls);
        if ttls
            && fields
                .iter()
                .any(|f| matches!(read_field(h, f, engine), Read::Expired))
        {
            expired = true;
            return;
        }
        out.array(fields.len());
        for f in fields {
            if let Read::Value(v) = read_field(h, f, engine) {
                out.bulk_opt(v);
            }
        }
    });
    if !expired {
        return;
    }
    // As Redis 8.0's HMGET: each field met past its TTL removed without an
    // event of its own, then one `hexpired` (and `del`) if a field went
    // without taking the hash with it.
    let now = write_now(ctx);
    ctx.write1(key, |tx, db, out| {
        out.array(fields.len());
        let (mut expired, mut deleted) = (0, false);
        for f in fields {
            if deleted {
                out.null();
                continue;
            }
            match expire_field(tx, db, key, f, now, false, false) {
                Met::Live => {
                    let h = collection::get::<HashValue>(tx, db, key).ok().flatten();
                    out.bulk_opt(h.and_then(|h| h.get(f, 0)));
                }
                Met::Expired => {
                    expired += 1;
                    out.null();
                }
                Met::ExpiredHash => {
                    deleted = true;
                    out.null();
                }
                Met::Missing => out.null(),
            }
        }
        if expired > 0 {
            tx.notify(HASH, "hexpired", db, key);
            if deleted {
                tx.notify(GENERIC, "del", db, key);
            }
        }
    });
}

/// A field past its TTL not yet removed is removed as any other (and
/// counted), as Redis 8.0's HDEL does: it checks no TTL.
pub fn hdel(ctx: &mut Ctx, args: &Args) {
    let key = args[1];
    ctx.write1(key, |tx, db, out| {
        // A removal of nothing changes nothing (for WATCH too).
        match collection::get::<HashValue>(tx, db, key) {
            Err(_) => return out.error(super::args::ERR_WRONGTYPE),
            Ok(Some(h)) if args[2..].iter().any(|f| h.lookup(f).is_some()) => {}
            Ok(_) => return out.int(0),
        }
        let removed = collection::modify(tx, db, key, false, |h: &mut HashValue| {
            args[2..].iter().filter(|f| h.remove(f)).count()
        });
        let removed = match removed {
            Err(_) => return out.error(super::args::ERR_WRONGTYPE),
            Ok(n) => n.unwrap_or(0),
        };
        if removed > 0 {
            tx.log(db, args);
            tx.notify(HASH, "hdel", db, key);
            collection::drop_if_empty::<HashValue>(tx, db, key);
        }
        out.int(removed as i64);
    });
}

pub fn hexists(ctx: &mut Ctx, args: &Args) {
    one_field(ctx, args[1], args[2], |out, v| out.int(v.is_some() as i64));
}

/// Every stored field: as Redis 8.0, one expired but not yet removed still
/// counts (docs/compatibility.md, Hash-field expiration).
pub fn hlen(ctx: &mut Ctx, args: &Args) {
    collection::read_or_reply(ctx, args[1], |h: Option<&HashValue>, out| {
        out.int(h.map_or(0, |h| h.len()) as i64)
    });
}

pub fn hstrlen(ctx: &mut Ctx, args: &Args) {
    one_field(ctx, args[1], args[2], |out, v| {
        out.int(v.map_or(0, |v| v.len()) as i64)
    });
}

#[derive(Clone, Copy)]
enum Part {
    Keys,
    Values,
    Both,
}

fn getall_generic(ctx: &mut Ctx, args: &Args, part: Part) {
    let now = read_now(ctx);
    collection::read_or_reply(ctx, args[1], |h: Option<&HashValue>, out| {
        let n = h.map_or(0, |h| h.live_len(now));
        match part {
            Part::Both => out.map(n),
            _ => out.array(n),
        }
        for (f, v) in h.iter().flat_map(|h| h.iter_live(now)) {
            match part {
                Part::Keys => out.bulk(f),
                Part::Values => out.bulk(v),
                Part::Both => {
                    out.bulk(f);
                    out.bulk(v);
                }
            }
        }
    });
}

pub fn hkeys(ctx: &mut Ctx, args: &Args) {
    getall_generic(ctx, args, Part::Keys);
}

pub fn hvals(ctx: &mut Ctx, args: &Args) {
    getall_generic(ctx, args, Part::Values);
}

pub fn hgetall(ctx: &mut Ctx, args: &Args) {
    getall_generic(ctx, args, Part::Both);
}

pub fn hincrby(ctx: &mut Ctx, args: &Args) {
    let (key, field) = (args[1], args[2]);
    let Some(by) = parse_i64(args[3]) else {
        return ctx.out.error(ERR_NOT_INT);
    };
    let limits = limits(ctx);
    let now = write_now(ctx);
    ctx.write1(key, |tx, db, out| {
        if collection::get::<HashValue>(tx, db, key).is_err() {
            return out.error(super::args::ERR_WRONGTYPE);
        }
        // A field past its TTL is removed first and counts as absent.
        let wrap = expire_field(tx, db, key, field, now, true, true).removed();
        let current = collection::get::<HashValue>(tx, db, key)
            .ok()
            .flatten()
            .and_then(|h| h.get(field, 0))
            .map(|v| parse_i64(v).ok_or(()));
        let current = match current {
            None => 0,
            Some(Ok(v)) => v,
            Some(Err(())) => return out.error("ERR hash value is not an integer"),
        };
        let Some(new) = current.checked_add(by) else {
            return out.error(ERR_OVERFLOW);
        };
        let text = itoa::Buffer::new().format(new).as_bytes().to_vec();
        // The field keeps its TTL, as in Redis 8.0.
        let _ = collection::modify(tx, db, key, true, |h: &mut HashValue| {
            h.set_keep_ttl(field, &text, &limits)
        });
        tx.log(db, args);
        if wrap {
            crate::exec::wrapper::exec(tx, db);
        }
        tx.notify(HASH, "hincrby", db, key);
        out.int(new);
    });
}

pub fn hincrbyfloat(ctx: &mut Ctx, args: &Args) {
    let (key, field) = (args[1], args[2]);
    // Only a written infinity: a long double holds what overflows a double.
    let digits = args[3].strip_prefix(b"-").or(args[3].strip_prefix(b"+"));
    let not_finite = [b"inf".as_slice(), b"infinity"]
        .iter()
        .any(|w| digits.unwrap_or(args[3]).eq_ignore_ascii_case(w));
    if not_finite {
        return ctx.out.error("ERR value is NaN or Infinity");
    }
    // The increment is checked before the key's type, as in Redis.
    if let Err(e) = incr_by_float_as(None, args[3], "") {
        return ctx.out.error(e);
    }
    let limits = limits(ctx);
    let now = write_now(ctx);
    ctx.write1(key, |tx, db, out| {
        if collection::get::<HashValue>(tx, db, key).is_err() {
            return out.error(super::args::ERR_WRONGTYPE);
        }
        let wrap = expire_field(tx, db, key, field, now, true, true).removed();
        let current = collection::get::<HashValue>(tx, db, key)
            .ok()
            .flatten()
            .and_then(|h| h.get(field, 0))
            .map(|v| v.to_vec());
        let new =
            match incr_by_float_as(current.as_deref(), args[3], "ERR hash value is not a float") {
                Ok(v) => v,
                Err(e) => {
                    if wrap {
                        crate::exec::wrapper::exec(tx, db);
                    }
                    return out.error(e);
                }
            };
        let _ = collection::modify(tx, db, key, true, |h: &mut HashValue| {
            h.set_keep_ttl(field, &new, &limits)
        });
        // Replicas and the AOF get the result, not the increment, as in
        // Redis (float formatting may differ between machines).
        tx.log(db, &[b"HSET", key, field, &new]);
        if wrap {
            crate::exec::wrapper::exec(tx, db);
        }
        tx.notify(HASH, "hincrbyfloat", db, key);
        out.bulk(&new);
    });
}

/// One field, or a field and its value (RESP3 pairs them in an array).
fn random_item(out: &mut Out, f: &[u8], v: &[u8], values: bool) {
    if values && out.resp3() {
        out.array(2);
    }
    out.bulk(f);
    if values {
        out.bulk(v);
    }
}

/// Removes every field of `key` past its TTL, as Redis 8.0's HRANDFIELD
/// does first (hashTypeExpireIfNeeded), if the read finds one.
fn expire_all_if_needed(ctx: &mut Ctx, key: &[u8]) {
    let now = write_now(ctx);
    if now == 0 {
        return;
    }
    let due = ctx.shared.engine.peek(ctx.client.db, key, |e| {
        e.and_then(|e| HashValue::of(e.value()))
            .is_some_and(|h| h.has_ttls() && h.live_len(now) != h.len())
    });
    if due {
        ctx.write1(key, |tx, db, _| {
            let _ = expire_then_modify(tx, db, key, false, now, |_: &mut HashValue| ());
            collection::drop_if_empty::<HashValue>(tx, db, key);
        });
    }
}

pub fn hrandfield(ctx: &mut Ctx, args: &Args) {
    expire_all_if_needed(ctx, args[1]);
    let now = read_now(ctx);
    if args.len() == 2 {
        let mut rng = rand::thread_rng();
        return collection::read_or_reply(ctx, args[1], |h: Option<&HashValue>, out| {
            match h.and_then(|h| h.random(&mut rng, now)) {
                Some((f, _)) => out.bulk(f),
                None => out.null(),
            }
        });
    }
    let Some((count, values)) = super::random::count_args(ctx, args, "withvalues") else {
        return;
    };
    let mut rng = rand::thread_rng();
    collection::read_or_reply(ctx, args[1], |h: Option<&HashValue>, out| {
        let Some(h) = h.filter(|h| count != 0 && h.live_len(now) != 0) else {
            return out.array(0);
        };
        let per = if values && !out.resp3() { 2 } else { 1 };
        if count < 0 || count == 1 {
            // Repeats allowed: each pick is independent.
            let n = count.unsigned_abs() as usize;
            out.array(n * per);
            for _ in 0..n {
                if out.full() {
                    break;
                }
                let Some((f, v)) = h.random(&mut rng, now) else {
                    break;
                };
                random_item(out, f, v, values);
            }
            return;
        }
        let picked = super::random::distinct(h.live_len(now), count as usize, &mut rng);
        out.array(picked.len() * per);
        match picked {
            super::random::Picked::All(_) => {
                for (f, v) in h.iter_live(now) {
                    random_item(out, f, v, values);
                }
            }
            super::random::Picked::Some(idx) => {
                let all: Vec<_> = h.iter_live(now).collect();
                for i in idx {
                    let (f, v) = all[i];
                    random_item(out, f, v, values);
                }
            }
        }
    });
}

pub fn hscan(ctx: &mut Ctx, args: &Args) {
    let scan = match ScanArgs::parse(args) {
        Ok(s) => s,
        Err(e) => return ctx.out.error(e),
    };
    let now = read_now(ctx);
    collection::read_or_reply(ctx, args[1], |h: Option<&HashValue>, out| {
        let (items, next) = h.map_or((Vec::new(), 0), |h| h.scan(scan.cursor, scan.count, now));
        let items: Vec<_> = items.into_iter().filter(|(f, _)| scan.matches(f)).collect();
        out.array(2);
        out.bulk(next.to_string().as_bytes());
        out.array(items.len() * if scan.novalues { 1 } else { 2 });
        for (f, v) in items {
            out.bulk(f);
            if !scan.novalues {
                out.bulk(v);
            }
        }
    });
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("hset", -4, WRITE | DENYOOM | FAST, KEY1, "hash", "2.0.0", "Set the string value of a hash field", hset;
        acl: acl::HASH,
        complexity: "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key field_value:block*(field:string value:string)",
        history: &[("4.0.0", "Accepts multiple `field` and `value` arguments.")]),
    cmd!("hsetnx", 4, WRITE | DENYOOM | FAST, KEY1, "hash", "2.0.0", "Set the value of a hash field, only if the field does not exist", hsetnx;
        acl: acl::HASH,
        complexity: "O(1)",
        keys: "RW,insert index:1 range:0:1:0",
        args: "key:key field:string value:string"),
    cmd!("hget", 3, READONLY | FAST, KEY1, "hash", "2.0.0", "Get the value of a hash field", hget;
        acl: acl::HASH,
        complexity: "O(1)",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key field:string"),
    cmd!("hmget", -3, READONLY | FAST, KEY1, "hash", "2.0.0", "Get the values of all the given hash fields", hmget;
        acl: acl::HASH,
        complexity: "O(N) where N is the number of fields being requested.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key field:string*"),
    cmd!("hmset", -4, WRITE | DENYOOM | FAST, KEY1, "hash", "2.0.0", "Set multiple hash fields to multiple values", hmset;
        acl: acl::HASH,
        complexity: "O(N) where N is the number of fields being set.",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key field_value:block*(field:string value:string)",
        doc_flags: doc::DEPRECATED,
        deprecated_since: "4.0.0",
        replaced_by: "`HSET` with multiple field-value pairs"),
    cmd!("hdel", -3, WRITE | FAST, KEY1, "hash", "2.0.0", "Delete one or more hash fields", hdel;
        acl: acl::HASH,
        complexity: "O(N) where N is the number of fields to be removed.",
        keys: "RW,delete index:1 range:0:1:0",
        args: "key:key field:string*",
        history: &[("2.4.0", "Accepts multiple `field` arguments.")]),
    cmd!("hexists", 3, READONLY | FAST, KEY1, "hash", "2.0.0", "Determine if a hash field exists", hexists;
        acl: acl::HASH,
        complexity: "O(1)",
        keys: "RO index:1 range:0:1:0",
        args: "key:key field:string"),
    cmd!("hlen", 2, READONLY | FAST, KEY1, "hash", "2.0.0", "Get the number of fields in a hash", hlen;
        acl: acl::HASH,
        complexity: "O(1)",
        keys: "RO index:1 range:0:1:0",
        args: "key:key"),
    cmd!("hstrlen", 3, READONLY | FAST, KEY1, "hash", "3.2.0", "Get the length of the value of a hash field", hstrlen;
        acl: acl::HASH,
        complexity: "O(1)",
        keys: "RO index:1 range:0:1:0",
        args: "key:key field:string"),
    cmd!("hkeys", 2, READONLY, KEY1, "hash", "2.0.0", "Get all the fields in a hash", hkeys;
        acl: acl::HASH,
        complexity: "O(N) where N is the size of the hash.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key",
        tips: &["nondeterministic_output_order"]),
    cmd!("hvals", 2, READONLY, KEY1, "hash", "2.0.0", "Get all the values in a hash", hvals;
        acl: acl::HASH,
        complexity: "O(N) where N is the size of the hash.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key",
        tips: &["nondeterministic_output_order"]),
    cmd!("hgetall", 2, READONLY, KEY1, "hash", "2.0.0", "Get all the fields and values in a hash", hgetall;
        acl: acl::HASH,
        complexity: "O(N) where N is the size of the hash.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key",
        tips: &["nondeterministic_output_order"]),
    cmd!("hincrby", 4, WRITE | DENYOOM | FAST, KEY1, "hash", "2.0.0", "Increment the integer value of a hash field by the given number", hincrby;
        acl: acl::HASH,
        complexity: "O(1)",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key field:string increment:integer"),
    cmd!("hincrbyfloat", 4, WRITE | DENYOOM | FAST, KEY1, "hash", "2.6.0", "Increment the float value of a hash field by the given amount", hincrbyfloat;
        acl: acl::HASH,
        complexity: "O(1)",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key field:string increment:double"),
    cmd!("hrandfield", -2, READONLY, KEY1, "hash", "6.2.0", "Get one or multiple random fields from a hash", hrandfield;
        acl: acl::HASH,
        complexity: "O(N) where N is the number of fields returned",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key options:block?(count:integer withvalues:WITHVALUES?)",
        tips: &["nondeterministic_output"]),
    cmd!("hscan", -3, READONLY, KEY1, "hash", "2.8.0", "Incrementally iterate hash fields and associated values", hscan;
        acl: acl::HASH,
        complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key cursor:integer pattern:pattern=MATCH? count:integer=COUNT? novalues:NOVALUES?",
        tips: &["nondeterministic_output"]),
];
