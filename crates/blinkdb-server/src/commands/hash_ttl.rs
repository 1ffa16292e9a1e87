//! Hash-field expiration (Redis 7.4 and 8.0, issue 43): HEXPIRE and its
//! family, HTTL and its family, HPERSIST, HGETEX, HSETEX, HGETDEL, with
//! Redis 8.0.2's replies, errors, events and propagation (relative times
//! logged as absolute HPEXPIREAT / HSETEX PXAT, a field removed on its time
//! as HDEL). How fields hold their TTLs: `types/hash.rs`.
//!
//! As in 8.0.2's t_hash.c, a command touches only the fields it names:
//! HGETEX, HGETDEL and HSETEX's FNX/FXX check remove a named field past its
//! TTL (`expire_named`: an `HDEL key field` record, `expired_subkeys`, one
//! `hexpired` per command, none from HSETEX); HEXPIRE and its family set a
//! named field's time whether or not it passed (its old time still decides
//! NX/XX/GT/LT); HPERSIST answers -2 for one past its TTL and leaves it.
//! Every record a command logs goes out in one MULTI/EXEC when there are
//! several (8.0's also_propagate of the HDELs, then the command's own).

use super::args::{parse_i64, ERR_NOT_INT, ERR_WRONGTYPE};
use super::collection::{self, modify};
use super::hash::{log_wrapped, read_now, write_now};
use super::Ctx;
use crate::protocol::{Args, Out};
use blinkdb_engine::{
    event::{GENERIC, HASH},
    hash_field_expired, HashValue, Tx,
};

/// Redis's bound on a field's expiry: EB_EXPIRE_TIME_MAX >> 2 ms.
const MAX_ABS_TIME_MS: i64 = (((1u64 << 48) - 1) >> 2) as i64;

const ERR_FIELDS: &str = "ERR Mandatory argument FIELDS is missing or not at the right position";
const ERR_NUMFIELDS_MATCH: &str =
    "ERR The `numfields` parameter must match the number of arguments";
const ERR_NUMFIELDS: &str = "ERR Number of fields must be a positive integer";

/// HEXPIRE's per-field results (Redis's SetExRes).
const NO_FIELD: i64 = -2;
const NOT_MET: i64 = 0;
const SET: i64 = 1;
const DELETED: i64 = 2;

#[derive(Clone, Copy, PartialEq)]
enum Cond {
    None,
    Nx,
    Xx,
    Gt,
    Lt,
}

/// An expiry argument in `ms` (or seconds) from `base`, as Redis's
/// parseExpireTime checks it; `cmd` (the command's name as sent) is
/// named in the error, in lower case.
fn parse_expire(arg: &[u8], seconds: bool, base: u64, cmd: &[u8]) -> Result<u64, String> {
    let Some(mut v) = parse_i64(arg) else {
        return Err(ERR_NOT_INT.into());
    };
    if v < 0 {
        return Err("ERR invalid expire time, must be >= 0".into());
    }
    let too_big = || {
        let cmd = String::from_utf8_lossy(cmd).to_ascii_lowercase();
        format!("ERR invalid expire time in '{cmd}' command")
    };
    if seconds {
        if v > MAX_ABS_TIME_MS / 1000 {
            return Err(too_big());
        }
        v *= 1000;
    }
    if v > MAX_ABS_TIME_MS - base as i64 {
        return Err(too_big());
    }
    Ok(v as u64 + base)
}

/// `FIELDS numfields field...` with FIELDS at `at`: the fields.
fn parse_fields<'a>(args: &'a Args, at: usize, count_err: &str) -> Result<&'a [&'a [u8]], String> {
    if at + 1 >= args.len() || !args[at].eq_ignore_ascii_case(b"FIELDS") {
        return Err(ERR_FIELDS.into());
    }
    let n = match parse_i64(args[at + 1]) {
        Some(n) if n >= 1 => n as usize,
        _ => return Err(count_err.into()),
    };
    if n != args.len() - at - 2 {
        return Err(ERR_NUMFIELDS_MATCH.into());
    }
    Ok(&args[at + 2..])
}

/// The command's clock for "already expired": 0 on a replica or while
/// loading (the time is kept; the master's HDEL removes the field).
fn immediate(now: u64, at: u64) -> bool {
    now != 0 && at <= now
}

/// Redis 8.0's lazy expiry of a field a command names (hashTypeGetValue
/// with HFE_LAZY_NO_NOTIFICATION and HFE_LAZY_AVOID_HASH_DEL): past its TTL
/// at `now` (0: nothing expires, on a replica, while loading or while
/// expiry is held) it is removed and true returned. The caller logs
/// `HDEL key field` among its records, counts it in expired_subkeys and
/// sends the events; the hash stays until the command ends, even empty.
fn expire_named(h: &mut HashValue, field: &[u8], now: u64) -> bool {
    matches!(h.find(field, now), Some((_, true))) && h.remove(field)
}

/// `arg` in capitals, in `buf`, to match against an option's name without
/// an allocation; an argument longer than any option comes back empty,
/// which matches none.
fn option_word<'a>(arg: &[u8], buf: &'a mut [u8; 8]) -> &'a [u8] {
    let Some(word) = buf.get_mut(..arg.len()) else {
        return &[];
    };
    word.copy_from_slice(arg);
    word.make_ascii_uppercase();
    word
}

/// `HDEL key field`, a field's record when a time past or its TTL removed it.
fn hdel_record<'a>(key: &'a [u8], field: &'a [u8]) -> Vec<&'a [u8]> {
    vec![b"HDEL", key, field]
}

/// Deletes `key` if no field is left, with the `del` event.
fn drop_if_empty(tx: &mut Tx, db: usize, key: &[u8]) {
    collection::drop_if_empty::<HashValue>(tx, db, key);
}

/// Sets `field`'s expiry to `at` under `cond` (Redis's hashTypeSetEx):
/// one of NO_FIELD, NOT_MET, SET, DELETED. `at` None persists.
fn set_field_expire(h: &mut HashValue, field: &[u8], at: Option<u64>, cond: Cond, now: u64) -> i64 {
    let Some((_, prev)) = h.lookup(field) else {
        return NO_FIELD;
    };
    set_known_field_expire(h, field, prev, at, cond, now)
}

/// `set_field_expire` of a field the caller found, whose expiry is `prev`
/// (0: none).
fn set_known_field_expire(
    h: &mut HashValue,
    field: &[u8],
    prev: u64,
    at: Option<u64>,
    cond: Cond,
    now: u64,
) -> i64 {
    let Some(at) = at else {
        if prev == 0 {
            return NOT_MET;
        }
        h.set_expire(field, 0);
        return SET;
    };
    if prev != 0 {
        if (cond == Cond::Gt && prev >= at) || (cond == Cond::Lt && prev <= at) || cond == Cond::Nx
        {
            return NOT_MET;
        }
    } else if matches!(cond, Cond::Xx | Cond::Gt) {
        return NOT_MET;
    }
    if immediate(now, at) {
        h.remove(field);
        return DELETED;
    }
    // 0 stores "no TTL": time 0 kept on a replica becomes 1 ms.
    h.set_expire(field, at.max(1));
    SET
}

fn hexpire_generic(ctx: &mut Ctx, args: &Args, seconds: bool, relative: bool) {
    let key = args[1];
    let now = write_now(ctx);
    let clock = ctx.shared.engine.now();
    ctx.write1(key, |tx, db, out| {
        if collection::get::<HashValue>(tx, db, key).is_err() {
            return out.error(ERR_WRONGTYPE);
        }
        let base = if relative { clock } else { 0 };
        let at = match parse_expire(args[2], seconds, base, args[0]) {
            Ok(at) => at,
            Err(e) => return out.error(&e),
        };
        let mut word = [0u8; 8];
        let (cond, fields_at) = match option_word(args[3], &mut word) {
            b"NX" => (Cond::Nx, 4),
            b"XX" => (Cond::Xx, 4),
            b"GT" => (Cond::Gt, 4),
            b"LT" => (Cond::Lt, 4),
            _ => (Cond::None, 3),
        };
        let fields = match parse_fields(
            args,
            fields_at,
            "ERR Parameter `numFields` should be greater than 0",
        ) {
            Ok(f) => f,
            Err(e) => return out.error(&e),
        };
        let results = modify(tx, db, key, false, |h: &mut HashValue| {
            h.to_ex();
            fields
                .iter()
                .map(|f| set_field_expire(h, f, Some(at), cond, now))
                .collect::<Vec<_>>()
        });
        let Ok(Some(results)) = results else {
            out.array(fields.len());
            return fields.iter().for_each(|_| out.int(NO_FIELD));
        };
        out.array(fields.len());
        results.iter().for_each(|r| out.int(*r));
        let (mut set, mut deleted) = (Vec::with_capacity(fields.len()), false);
        let mut records: Vec<Vec<&[u8]>> = Vec::new();
        for (f, r) in fields.iter().zip(&results) {
            match *r {
                SET => set.push(*f),
                DELETED => {
                    deleted = true;
                    records.push(hdel_record(key, f));
                }
                _ => {}
            }
        }
        let (at_text, n) = (at.to_string(), set.len().to_string());
        if !set.is_empty() {
            // As HPEXPIREAT of the fields set, the condition kept.
            let mut rec: Vec<&[u8]> = Vec::with_capacity(set.len() + 6);
            rec.extend_from_slice(&[b"HPEXPIREAT", key, at_text.as_bytes()]);
            if cond != Cond::None {
                rec.push(args[3]);
            }
            rec.extend_from_slice(&[b"FIELDS", n.as_bytes()]);
            rec.extend_from_slice(&set);
            records.push(rec);
        }
        log_wrapped(tx, db, &records);
        // A field a time past removed counts as expired, as Redis 8.0 counts it.
        let gone = results.iter().filter(|r| **r == DELETED).count();
        if gone > 0 {
            tx.count_expired_subkeys(gone);
        }
        if deleted || !set.is_empty() {
            tx.notify(HASH, if deleted { "hdel" } else { "hexpire" }, db, key);
        }
        // Only a removal can have left the hash empty: no look up again.
        if deleted {
            drop_if_empty(tx, db, key);
        }
    });
}

pub fn hexpire(ctx: &mut Ctx, args: &Args) {
    hexpire_generic(ctx, args, true, true);
}

pub fn hpexpire(ctx: &mut Ctx, args: &Args) {
    hexpire_generic(ctx, args, false, true);
}

pub fn hexpireat(ctx: &mut Ctx, args: &Args) {
    hexpire_generic(ctx, args, true, false);
}

pub fn hpexpireat(ctx: &mut Ctx, args: &Args) {
    hexpire_generic(ctx, args, false, false);
}

/// HTTL, HPTTL, HEXPIRETIME, HPEXPIRETIME: per field -2 (none or
/// expired), -1 (no TTL), else the time left or the time, in seconds
/// rounded up or in ms.
fn httl_generic(ctx: &mut Ctx, args: &Args, seconds: bool, relative: bool) {
    let now = read_now(ctx);
    let base = if relative { now } else { 0 };
    collection::read_or_reply(ctx, args[1], |h: Option<&HashValue>, out| {
        let fields = match parse_fields(args, 2, ERR_NUMFIELDS) {
            Ok(f) => f,
            Err(e) => return out.error(&e),
        };
        out.array(fields.len());
        for f in fields {
            let r = match h.and_then(|h| h.lookup(f)) {
                None => -2,
                Some((_, 0)) => -1,
                Some((_, at)) if now != 0 && at <= now => -2,
                Some((_, at)) if seconds => ((at + 999).saturating_sub(base) / 1000) as i64,
                Some((_, at)) => at as i64 - base as i64,
            };
            out.int(r);
        }
    });
}

pub fn httl(ctx: &mut Ctx, args: &Args) {
    httl_generic(ctx, args, true, true);
}

pub fn hpttl(ctx: &mut Ctx, args: &Args) {
    httl_generic(ctx, args, false, true);
}

pub fn hexpiretime(ctx: &mut Ctx, args: &Args) {
    httl_generic(ctx, args, true, false);
}

pub fn hpexpiretime(ctx: &mut Ctx, args: &Args) {
    httl_generic(ctx, args, false, false);
}

/// Per field: -2 none (or expired), -1 no TTL, 1 persisted.
pub fn hpersist(ctx: &mut Ctx, args: &Args) {
    let key = args[1];
    let now = write_now(ctx);
    ctx.write1(key, |tx, db, out| {
        if collection::get::<HashValue>(tx, db, key).is_err() {
            return out.error(ERR_WRONGTYPE);
        }
        let fields = match parse_fields(args, 2, ERR_NUMFIELDS) {
            Ok(f) => f,
            Err(e) => return out.error(&e),
        };
        // A field past its TTL answers -2 and stays (8.0's hpersistCommand
        // removes nothing).
        let results = modify(tx, db, key, false, |h: &mut HashValue| {
            fields
                .iter()
                .map(|f| match h.find(f, now) {
                    None | Some((_, true)) => -2,
                    Some(_) => match set_field_expire(h, f, None, Cond::None, now) {
                        SET => 1,
                        _ => -1,
                    },
                })
                .collect::<Vec<i64>>()
        });
        let results = match results {
            Ok(Some(r)) => r,
            _ => vec![-2; fields.len()],
        };
        out.array(fields.len());
        results.iter().for_each(|r| out.int(*r));
        if results.contains(&1) {
            tx.log(db, args);
            tx.notify(HASH, "hpersist", db, key);
        }
        drop_if_empty(tx, db, key);
    });
}

/// HGETDEL key FIELDS numfields field...: the values, and the fields gone.
pub fn hgetdel(ctx: &mut Ctx, args: &Args) {
    let key = args[1];
    let now = write_now(ctx);
    ctx.write1(key, |tx, db, out| {
        if collection::get::<HashValue>(tx, db, key).is_err() {
            return out.error(ERR_WRONGTYPE);
        }
        let fields = match parse_fields(args, 2, ERR_NUMFIELDS) {
            Ok(f) => f,
            Err(e) => return out.error(&e),
        };
        let r = modify(tx, db, key, false, |h: &mut HashValue| {
            out.array(fields.len());
            let (mut expired, mut deleted) = (Vec::new(), 0);
            for f in fields {
                if expire_named(h, f, now) {
                    expired.push(*f);
                    out.null();
                    continue;
                }
                let v = h.lookup(f).map(|(v, _)| v.to_vec());
                out.bulk_opt(v.as_deref());
                if v.is_some() {
                    h.remove(f);
                    deleted += 1;
                }
            }
            (expired, deleted)
        });
        let (expired, deleted) = match r {
            Ok(Some(r)) => r,
            _ => {
                out.array(fields.len());
                return fields.iter().for_each(|_| out.null());
            }
        };
        // Each field met past its TTL as HDEL, then the command as HDEL of
        // every field it names.
        let mut records: Vec<Vec<&[u8]>> = expired.iter().map(|f| hdel_record(key, f)).collect();
        if deleted > 0 {
            let mut rec: Vec<&[u8]> = vec![b"HDEL", key];
            rec.extend_from_slice(fields);
            records.push(rec);
        }
        log_wrapped(tx, db, &records);
        if !expired.is_empty() {
            tx.count_expired_subkeys(expired.len());
            tx.notify(HASH, "hexpired", db, key);
        }
        if deleted > 0 {
            tx.notify(HASH, "hdel", db, key);
        }
        drop_if_empty(tx, db, key);
    });
}

#[derive(Clone, Copy, PartialEq)]
enum GetEx {
    Keep,
    Persist,
    At(u64),
}

/// HGETEX key [EX|PX|EXAT|PXAT time | PERSIST] FIELDS numfields field...
pub fn hgetex(ctx: &mut Ctx, args: &Args) {
    let key = args[1];
    let now = write_now(ctx);
    let clock = ctx.shared.engine.now();
    ctx.write1(key, |tx, db, out| {
        if collection::get::<HashValue>(tx, db, key).is_err() {
            return out.error(ERR_WRONGTYPE);
        }
        let mut word = [0u8; 8];
        let opt = option_word(args[2], &mut word);
        let timed = match opt {
            b"EX" => Some((true, clock)),
            b"PX" => Some((false, clock)),
            b"EXAT" => Some((true, 0)),
            b"PXAT" => Some((false, 0)),
            _ => None,
        };
        let (mode, fields_at) = match timed {
            Some((seconds, base)) => match parse_expire(args[3], seconds, base, b"hgetex") {
                Ok(at) => (GetEx::At(at), 4),
                Err(e) => return out.error(&e),
            },
            None if opt == b"PERSIST" => (GetEx::Persist, 3),
            None => (GetEx::Keep, 2),
        };
        let fields = match parse_fields(args, fields_at, ERR_NUMFIELDS) {
            Ok(f) => f,
            Err(e) => return out.error(&e),
        };
        let r = modify(tx, db, key, false, |h: &mut HashValue| {
            if mode != GetEx::Keep {
                h.to_ex();
            }
            out.array(fields.len());
            // The fields removed, in the order met: past their TTL
            // (`expired`) or past the new time (`deleted`).
            let (mut removed, mut expired, mut updated, mut deleted) = (Vec::new(), 0, 0, 0);
            for f in fields {
                // One look for the field: its value and TTL (expire_named's
                // test, then set_field_expire's).
                let Some((v, prev)) = h.lookup(f) else {
                    out.null();
                    continue;
                };
                if hash_field_expired(prev, now) {
                    h.remove(f);
                    removed.push(*f);
                    expired += 1;
                    out.null();
                    continue;
                }
                out.bulk(v);
                if mode == GetEx::Keep {
                    continue;
                }
                let at = match mode {
                    GetEx::At(at) => Some(at),
                    _ => None,
                };
                match set_known_field_expire(h, f, prev, at, Cond::None, now) {
                    SET => updated += 1,
                    DELETED => {
                        removed.push(*f);
                        deleted += 1;
                    }
                    _ => {}
                }
            }
            (removed, expired, updated, deleted)
        });
        let (removed, expired, updated, deleted) = match r {
            Ok(Some(r)) => r,
            _ => {
                out.array(fields.len());
                return fields.iter().for_each(|_| out.null());
            }
        };
        let mut records: Vec<Vec<&[u8]>> = removed.iter().map(|f| hdel_record(key, f)).collect();
        if !removed.is_empty() {
            tx.count_expired_subkeys(removed.len());
        }
        if expired > 0 {
            tx.notify(HASH, "hexpired", db, key);
        }
        let n = fields.len().to_string();
        let at_text;
        if updated > 0 {
            // Logged with every field named, as Redis rewrites it.
            let mut rec: Vec<&[u8]> = Vec::with_capacity(fields.len() + 5);
            match mode {
                GetEx::At(at) => {
                    at_text = at.to_string();
                    rec.extend_from_slice(&[b"HPEXPIREAT", key, at_text.as_bytes()]);
                    tx.notify(HASH, "hexpire", db, key);
                }
                _ => {
                    rec.extend_from_slice(&[b"HPERSIST", key]);
                    tx.notify(HASH, "hpersist", db, key);
                }
            }
            rec.extend_from_slice(&[b"FIELDS", n.as_bytes()]);
            rec.extend_from_slice(fields);
            records.push(rec);
        } else if deleted > 0 {
            tx.notify(HASH, "hdel", db, key);
        }
        log_wrapped(tx, db, &records);
        // Only a removal can have left the hash empty: no look up again.
        if !removed.is_empty() {
            drop_if_empty(tx, db, key);
        }
    });
}

/// HSETEX's options, parsed before the key is looked at (as Redis does).
struct SetEx<'a> {
    fnx: bool,
    fxx: bool,
    /// The absolute expiry, and the index of the time argument when it
    /// was not PXAT already (logged as PXAT then).
    at: Option<(u64, Option<usize>)>,
    keep_ttl: bool,
    pairs: &'a [&'a [u8]],
}

fn parse_hsetex<'a>(args: &'a Args, clock: u64, out: &mut Out) -> Option<SetEx<'a>> {
    let arity = "ERR wrong number of arguments for 'hsetex' command";
    let mut o = SetEx {
        fnx: false,
        fxx: false,
        at: None,
        keep_ttl: false,
        pairs: &[],
    };
    let mut i = 2;
    while i < args.len() {
        let mut word = [0u8; 8];
        let a = option_word(args[i], &mut word);
        let timed = match a {
            b"FIELDS" => {
                if i + 3 >= args.len() {
                    out.error(arity);
                    return None;
                }
                let n = match parse_i64(args[i + 1]) {
                    Some(n) if (1..=i32::MAX as i64).contains(&n) => n as usize,
                    _ => {
                        out.error("ERR invalid number of fields");
                        return None;
                    }
                };
                let remaining = args.len() - i - 2;
                if !remaining.is_multiple_of(2) || n != remaining / 2 {
                    out.error(arity);
                    return None;
                }
                o.pairs = &args[i + 2..];
                return Some(o);
            }
            b"EX" => Some((true, clock, false)),
            b"PX" => Some((false, clock, false)),
            b"EXAT" => Some((true, 0, false)),
            b"PXAT" => Some((false, 0, true)),
            b"KEEPTTL" => None,
            b"FXX" | b"FNX" => {
                if o.fxx || o.fnx {
                    out.error("ERR Only one of FXX or FNX arguments can be specified");
                    return None;
                }
                if a == b"FXX" {
                    o.fxx = true;
                } else {
                    o.fnx = true;
                }
                i += 1;
                continue;
            }
            _ => {
                out.error(&format!(
                    "ERR unknown argument: {}",
                    String::from_utf8_lossy(args[i])
                ));
                return None;
            }
        };
        if o.at.is_some() || o.keep_ttl {
            out.error("ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified");
            return None;
        }
        match timed {
            None => o.keep_ttl = true,
            Some((seconds, base, pxat)) => {
                if i + 1 >= args.len() {
                    out.error("ERR missing expire time");
                    return None;
                }
                i += 1;
                match parse_expire(args[i], seconds, base, b"hsetex") {
                    Ok(at) => o.at = Some((at, (!pxat).then_some(i))),
                    Err(e) => {
                        out.error(&e);
                        return None;
                    }
                }
            }
        }
        i += 1;
    }
    out.error(arity);
    None
}

pub fn hsetex(ctx: &mut Ctx, args: &Args) {
    let key = args[1];
    let clock = ctx.shared.engine.now();
    let Some(o) = parse_hsetex(args, clock, ctx.out) else {
        return;
    };
    let limits = ctx.client.settings(ctx.shared).collection_limits;
    let now = write_now(ctx);
    ctx.write1(key, |tx, db, out| {
        let exists = match collection::get::<HashValue>(tx, db, key) {
            Err(_) => return out.error(ERR_WRONGTYPE),
            Ok(h) => h.is_some(),
        };
        if !exists && o.fxx {
            return out.int(0);
        }
        let r = modify(tx, db, key, true, |h: &mut HashValue| {
            // FNX/FXX look at the named fields in turn, each past its TTL
            // removed, up to the first that decides against the command
            // (8.0's hashTypeExists loop, which stops there).
            let mut expired = Vec::new();
            if o.fxx || o.fnx {
                let mut found = 0;
                for p in o.pairs.chunks(2) {
                    // One look: expire_named's test and whether it exists.
                    let exists = match h.lookup(p[0]) {
                        Some((_, at)) if hash_field_expired(at, now) => {
                            h.remove(p[0]);
                            expired.push(p[0]);
                            false
                        }
                        found => found.is_some(),
                    };
                    found += usize::from(exists);
                    if (o.fxx && !exists) || (o.fnx && exists) {
                        break;
                    }
                }
                let n = o.pairs.len() / 2;
                if (o.fnx && found != 0) || (o.fxx && found != n) {
                    return (expired, None);
                }
            }
            let mut deleted = Vec::new();
            if o.at.is_some() {
                h.to_ex();
            }
            for p in o.pairs.chunks(2) {
                match o.at {
                    // A time past: set, then removed (set_field_expire's
                    // DELETED).
                    Some((at, _)) if immediate(now, at) => {
                        h.set_keep_ttl(p[0], p[1], &limits);
                        h.remove(p[0]);
                        deleted.push(p[0]);
                    }
                    // Value and time in one look for the field; 0 stores
                    // "no TTL": time 0 kept on a replica becomes 1 ms.
                    Some((at, _)) => {
                        h.set_expiring(p[0], p[1], at.max(1), &limits);
                    }
                    None if o.keep_ttl => {
                        h.set_keep_ttl(p[0], p[1], &limits);
                    }
                    None => {
                        h.set(p[0], p[1], &limits);
                    }
                }
            }
            (expired, Some(deleted))
        });
        let Ok(Some((expired, r))) = r else {
            return out.error(ERR_WRONGTYPE);
        };
        // The fields met past their TTL (no event: 8.0 checks them with
        // HFE_LAZY_NO_NOTIFICATION), those a time past removed, then the
        // command itself unless it removed some: one MULTI/EXEC if several.
        let mut records: Vec<Vec<&[u8]>> = expired.iter().map(|f| hdel_record(key, f)).collect();
        let gone = expired.len() + r.as_ref().map_or(0, Vec::len);
        if gone > 0 {
            tx.count_expired_subkeys(gone);
        }
        let Some(deleted) = r else {
            log_wrapped(tx, db, &records);
            out.int(0);
            drop_if_empty(tx, db, key);
            return;
        };
        records.extend(deleted.iter().map(|f| hdel_record(key, f)));
        let at_text;
        if deleted.is_empty() {
            match o.at {
                Some((at, Some(i))) => {
                    at_text = at.to_string();
                    let mut rec: Vec<&[u8]> = args.to_vec();
                    rec[i - 1] = b"PXAT";
                    rec[i] = at_text.as_bytes();
                    records.push(rec);
                }
                _ => records.push(args.to_vec()),
            }
        }
        log_wrapped(tx, db, &records);
        tx.notify(HASH, "hset", db, key);
        if o.at.is_some() {
            tx.notify(
                HASH,
                if deleted.is_empty() {
                    "hexpire"
                } else {
                    "hdel"
                },
                db,
                key,
            );
        }
        out.int(1);
        if drop_if_empty_gone(tx, db, key) {
            tx.notify(GENERIC, "del", db, key);
        }
    });
}

/// Deletes `key` if its hash is empty, without an event; true if it did.
fn drop_if_empty_gone(tx: &mut Tx, db: usize, key: &[u8]) -> bool {
    let empty = matches!(collection::get::<HashValue>(tx, db, key), Ok(Some(h)) if h.is_empty());
    if empty {
        tx.remove(db, key);
    }
    empty
}

use super::table::cmd;

/// This family's entries of the command table.
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("hexpire", -6, WRITE | FAST, KEY1, "hash", "7.4.0", "Set expiry for hash field using relative time to expire (seconds)", hexpire;
        acl: acl::HASH,
        complexity: "O(N) where N is the number of specified fields",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key seconds:integer condition:oneof?(nx:NX xx:XX gt:GT lt:LT) fields:block=FIELDS(numfields:integer field:string*)"),
    cmd!("hpexpire", -6, WRITE | FAST, KEY1, "hash", "7.4.0", "Set expiry for hash field using relative time to expire (milliseconds)", hpexpire;
        acl: acl::HASH,
        complexity: "O(N) where N is the number of specified fields",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key milliseconds:integer condition:oneof?(nx:NX xx:XX gt:GT lt:LT) fields:block=FIELDS(numfields:integer field:string*)"),
    cmd!("hexpireat", -6, WRITE | FAST, KEY1, "hash", "7.4.0", "Set expiry for hash field using an absolute Unix timestamp (seconds)", hexpireat;
        acl: acl::HASH,
        complexity: "O(N) where N is the number of specified fields",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key unix-time-seconds:unix-time condition:oneof?(nx:NX xx:XX gt:GT lt:LT) fields:block=FIELDS(numfields:integer field:string*)"),
    cmd!("hpexpireat", -6, WRITE | FAST, KEY1, "hash", "7.4.0", "Set expiry for hash field using an absolute Unix timestamp (milliseconds)", hpexpireat;
        acl: acl::HASH,
        complexity: "O(N) where N is the number of specified fields",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key unix-time-milliseconds:unix-time condition:oneof?(nx:NX xx:XX gt:GT lt:LT) fields:block=FIELDS(numfields:integer field:string*)"),
    cmd!("httl", -5, READONLY | FAST, KEY1, "hash", "7.4.0", "Returns the TTL in seconds of a hash field.", httl;
        acl: acl::HASH,
        complexity: "O(N) where N is the number of specified fields",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key fields:block=FIELDS(numfields:integer field:string*)",
        tips: &["nondeterministic_output"]),
    cmd!("hpttl", -5, READONLY | FAST, KEY1, "hash", "7.4.0", "Returns the TTL in milliseconds of a hash field.", hpttl;
        acl: acl::HASH,
        complexity: "O(N) where N is the number of specified fields",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key fields:block=FIELDS(numfields:integer field:string*)",
        tips: &["nondeterministic_output"]),
    cmd!("hexpiretime", -5, READONLY | FAST, KEY1, "hash", "7.4.0", "Returns the expiration time of a hash field as a Unix timestamp, in seconds.", hexpiretime;
        acl: acl::HASH,
        complexity: "O(N) where N is the number of specified fields",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key fields:block=FIELDS(numfields:integer field:string*)"),
    cmd!("hpexpiretime", -5, READONLY | FAST, KEY1, "hash", "7.4.0", "Returns the expiration time of a hash field as a Unix timestamp, in msec.", hpexpiretime;
        acl: acl::HASH,
        complexity: "O(N) where N is the number of specified fields",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key fields:block=FIELDS(numfields:integer field:string*)"),
    cmd!("hpersist", -5, WRITE | FAST, KEY1, "hash", "7.4.0", "Removes the expiration time for each specified field", hpersist;
        acl: acl::HASH,
        complexity: "O(N) where N is the number of specified fields",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key fields:block=FIELDS(numfields:integer field:string*)"),
    cmd!("hgetex", -5, WRITE | FAST, KEY1, "hash", "8.0.0", "Get the value of one or more fields of a given hash key, and optionally set their expiration.", hgetex;
        acl: acl::HASH,
        complexity: "O(N) where N is the number of specified fields",
        keys: "RW,access,update index:1 range:0:1:0 | RW and UPDATE because it changes the TTL",
        args: "key:key expiration:oneof?(seconds:integer=EX milliseconds:integer=PX unix-time-seconds:unix-time=EXAT unix-time-milliseconds:unix-time=PXAT persist:PERSIST) fields:block=FIELDS(numfields:integer field:string*)"),
    cmd!("hsetex", -6, WRITE | DENYOOM | FAST, KEY1, "hash", "8.0.0", "Set the value of one or more fields of a given hash key, and optionally set their expiration.", hsetex;
        acl: acl::HASH,
        complexity: "O(N) where N is the number of fields being set.",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key condition:oneof?(fnx:FNX fxx:FXX) expiration:oneof?(seconds:integer=EX milliseconds:integer=PX unix-time-seconds:unix-time=EXAT unix-time-milliseconds:unix-time=PXAT keepttl:KEEPTTL) fields:block=FIELDS(numfields:integer data:block*(field:string value:string))"),
    cmd!("hgetdel", -5, WRITE | FAST, KEY1, "hash", "8.0.0", "Returns the value of a field and deletes it from the hash.", hgetdel;
        acl: acl::HASH,
        complexity: "O(N) where N is the number of specified fields",
        keys: "RW,access,delete index:1 range:0:1:0",
        args: "key:key fields:block=FIELDS(numfields:integer field:string*)"),
];
