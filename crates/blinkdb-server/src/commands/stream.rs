//! Stream commands without consumer groups (XADD, XRANGE, XREVRANGE, XLEN,
//! XDEL, XTRIM, XREAD, XSETID), with Redis 7.0's replies, errors, keyspace
//! events and AOF records. XADD and XTRIM log an approximate trim as the
//! exact one it turned out to be, and XADD logs the ID it chose, as Redis
//! propagates them. XREAD BLOCK with nothing to read waits on its keys
//! (blocking.rs) and is served by the write that adds past its IDs.

use super::args::{eq_ic, parse_i64, ERR_NOT_INT, ERR_SYNTAX, ERR_WRONGTYPE};
use super::collection;
use super::Ctx;
use crate::exec::blocking::Who;
use crate::exec::session::Block;
use crate::protocol::{Args, Out};
use blinkdb_engine::{
    event::STREAM,
    stream::{EntryRef, ParsedId, StreamId, Trim},
    StreamValue, Tx,
};

pub(super) const ERR_INVALID_ID: &str =
    "ERR Invalid stream ID specified as stream command argument";
const ERR_TOP_ITEM: &str =
    "ERR The ID specified in XADD is equal or smaller than the target stream top item";

/// An ID argument where `-` and `+` are allowed.
pub(super) fn parse_id(arg: &[u8], missing_seq: u64) -> Result<StreamId, &'static str> {
    StreamId::parse(arg, missing_seq, false, false)
        .map(|p| p.id)
        .ok_or(ERR_INVALID_ID)
}

/// An ID argument where `-` and `+` are not.
pub(super) fn parse_strict(arg: &[u8]) -> Result<StreamId, &'static str> {
    StreamId::parse(arg, 0, true, false)
        .map(|p| p.id)
        .ok_or(ERR_INVALID_ID)
}

/// A range bound: `(id` is exclusive (and strict); returns the inclusive
/// bound, or Redis's error for an exclusive bound past the last ID.
pub(super) fn parse_bound(arg: &[u8], end: bool) -> Result<StreamId, &'static str> {
    if arg.len() > 1 && arg[0] == b'(' {
        let id = StreamId::parse(&arg[1..], if end { u64::MAX } else { 0 }, true, false)
            .ok_or(ERR_INVALID_ID)?
            .id;
        return if end {
            id.prev().ok_or("ERR invalid end ID for the interval")
        } else {
            id.next().ok_or("ERR invalid start ID for the interval")
        };
    }
    parse_id(arg, if end { u64::MAX } else { 0 })
}

/// An error text from parts, each cut at its first NUL as Redis's `%s`
/// cuts a name (the bytes are kept as they are otherwise).
pub(super) fn msg(parts: &[&[u8]]) -> Vec<u8> {
    let mut m = Vec::new();
    for p in parts {
        m.extend_from_slice(&p[..p.iter().position(|&c| c == 0).unwrap_or(p.len())]);
    }
    m
}

pub(super) fn reply_id(out: &mut Out, id: StreamId) {
    // `ms-seq` on the stack: every entry a read returns has one.
    let (mut ms, mut seq) = (itoa::Buffer::new(), itoa::Buffer::new());
    let (ms, seq) = (ms.format(id.ms).as_bytes(), seq.format(id.seq).as_bytes());
    let mut text = [0u8; 41];
    text[..ms.len()].copy_from_slice(ms);
    text[ms.len()] = b'-';
    text[ms.len() + 1..][..seq.len()].copy_from_slice(seq);
    out.bulk(&text[..ms.len() + 1 + seq.len()]);
}

/// `[id, [field, value, ...]]`.
pub(super) fn reply_entry(out: &mut Out, (id, fields): EntryRef<'_>) {
    out.array(2);
    reply_id(out, id);
    out.array(fields.len() * 2);
    for (f, v) in fields {
        out.bulk(f);
        out.bulk(v);
    }
}

pub(super) fn reply_entries<'a>(out: &mut Out, entries: impl Iterator<Item = EntryRef<'a>>) {
    let entries: Vec<EntryRef<'a>> = entries.collect();
    out.array(entries.len());
    for e in entries {
        reply_entry(out, e);
    }
}

pub(super) fn node_limits(ctx: &mut Ctx) -> blinkdb_engine::stream::NodeLimits {
    ctx.client
        .settings(ctx.shared)
        .collection_limits
        .stream_node
}

/// The trimming and ID arguments of XADD and XTRIM.
struct AddArgs {
    trim: Option<Trim>,
    approx: bool,
    limit: u64,
    /// Index of the MAXLEN/MINID threshold (rewritten for the log).
    threshold_at: usize,
    /// XADD: the ID argument's index (None for `*`) and its value.
    id: Option<ParsedId>,
    id_at: usize,
    nomkstream: bool,
}

/// Redis's streamParseAddOrTrimArgsOrReply. `obey`: the command comes from
/// the log, where LIMIT is ignored (the threshold was written exact).
fn parse_add_args(
    args: &Args,
    xadd: bool,
    obey: bool,
    node_max_entries: usize,
) -> Result<AddArgs, String> {
    let mut a = AddArgs {
        trim: None,
        approx: false,
        limit: 0,
        threshold_at: 0,
        id: None,
        id_at: args.len(),
        nomkstream: false,
    };
    let mut limit_given = false;
    let mut i = 2;
    while i < args.len() {
        let more = args.len() - 1 - i;
        let opt = args[i];
        if xadd && opt == b"*" {
            a.id_at = i;
            break;
        } else if (eq_ic(opt, "maxlen") || eq_ic(opt, "minid")) && more > 0 {
            if a.trim.is_some() {
                return Err("ERR syntax error, MAXLEN and MINID options at the same time are not compatible".into());
            }
            a.approx = false;
            let next = args[i + 1];
            if more >= 2 && next == b"~" {
                a.approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            let threshold = args[i + 1];
            if eq_ic(opt, "maxlen") {
                let n = parse_i64(threshold).ok_or(ERR_NOT_INT)?;
                if n < 0 {
                    return Err("ERR The MAXLEN argument must be >= 0.".into());
                }
                a.trim = Some(Trim::MaxLen(n as u64));
            } else {
                a.trim = Some(Trim::MinId(parse_strict(threshold)?));
            }
            i += 1;
            a.threshold_at = i;
        } else if eq_ic(opt, "limit") && more > 0 {
            let n = parse_i64(args[i + 1]).ok_or(ERR_NOT_INT)?;
            if n < 0 {
                return Err("ERR The LIMIT argument must be >= 0.".into());
            }
            a.limit = n as u64;
            limit_given = true;
            i += 1;
        } else if xadd && eq_ic(opt, "nomkstream") {
            a.nomkstream = true;
        } else if xadd {
            let id = StreamId::parse(opt, 0, true, true).ok_or(ERR_INVALID_ID)?;
            a.id = Some(id);
            a.id_at = i;
            break;
        } else {
            return Err(ERR_SYNTAX.into());
        }
        i += 1;
    }
    if a.limit != 0 && a.trim.is_none() {
        return Err(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy".into(),
        );
    }
    if !xadd && a.trim.is_none() {
        return Err("ERR syntax error, XTRIM must be called with a trimming strategy".into());
    }
    if obey {
        a.limit = 0;
    } else if limit_given {
        if !a.approx {
            return Err(
                "ERR syntax error, LIMIT cannot be used without the special ~ option".into(),
            );
        }
    } else if a.approx {
        // At most 100 nodes' worth of work, as Redis bounds it.
        let n = 100u64.saturating_mul(node_max_entries as u64);
        a.limit = if n == 0 { 10_000 } else { n.min(1_000_000) };
    } else {
        a.limit = 0;
    }
    Ok(a)
}

/// The trim threshold an approximate trim is logged with: the length or
/// first ID it left, so that replaying it is exact.
fn exact_threshold(s: &StreamValue, trim: Trim) -> Vec<u8> {
    match trim {
        Trim::MaxLen(_) => s.len().to_string().into_bytes(),
        Trim::MinId(_) => s.first_id_with_tombstones().to_bytes(),
    }
}

fn replaying(ctx: &Ctx) -> bool {
    ctx.shared.engine.is_loading()
}

pub fn xadd(ctx: &mut Ctx, args: &Args) {
    let limits = node_limits(ctx);
    let a = match parse_add_args(args, true, replaying(ctx), limits.max_entries) {
        Ok(a) => a,
        Err(e) => return ctx.out.error(&e),
    };
    let fields_at = a.id_at + 1;
    if args.len() < fields_at + 2 || !(args.len() - fields_at).is_multiple_of(2) {
        return ctx.arity_error("xadd");
    }
    if let Some(p) = a.id {
        if p.seq_given && p.id.is_zero() {
            return ctx
                .out
                .error("ERR The ID specified in XADD must be greater than 0-0");
        }
    }
    let key = args[1];
    let now = blinkdb_engine::now_ms();
    ctx.write1(key, |tx, db, out| {
        let id =
            match collection::get::<StreamValue>(tx, db, key) {
                Err(_) => return out.error(ERR_WRONGTYPE),
                Ok(None) if a.nomkstream => return out.null(),
                Ok(None) => StreamValue::default().next_id(a.id, now),
                Ok(Some(s)) if s.last_id == StreamId::MAX => return out.error(
                    "ERR The stream has exhausted the last possible ID, unable to add more items",
                ),
                Ok(Some(s)) => s.next_id(a.id, now),
            };
        let Ok(id) = id else {
            return out.error(ERR_TOP_ITEM);
        };
        let done = collection::modify(tx, db, key, true, |s: &mut StreamValue| {
            s.append(id, &args[fields_at..], limits);
            let trimmed = a.trim.map_or(0, |t| s.trim(t, a.approx, a.limit));
            let threshold = match a.trim {
                Some(t) if a.approx => Some(exact_threshold(s, t)),
                _ => None,
            };
            (trimmed, threshold)
        });
        let Ok(Some((trimmed, threshold))) = done else {
            return out.error(ERR_WRONGTYPE);
        };
        let id_text = id.to_bytes();
        reply_id_bytes(out, &id_text);
        tx.notify(STREAM, "xadd", db, key);
        tx.signal_ready(db, key);
        if trimmed > 0 {
            tx.notify(STREAM, "xtrim", db, key);
        }
        let mut record: Vec<&[u8]> = args.to_vec();
        if let Some(t) = &threshold {
            record[a.threshold_at - 1] = b"=";
            record[a.threshold_at] = t;
        }
        if !a.id.is_some_and(|p| p.seq_given) {
            record[a.id_at] = &id_text;
        }
        tx.log(db, &record);
    });
}

fn reply_id_bytes(out: &mut Out, id: &[u8]) {
    out.bulk(id);
}

fn range_generic(ctx: &mut Ctx, args: &Args, rev: bool) {
    let (start_arg, end_arg) = if rev {
        (args[3], args[2])
    } else {
        (args[2], args[3])
    };
    let bounds = parse_bound(start_arg, false).and_then(|s| Ok((s, parse_bound(end_arg, true)?)));
    let (start, end) = match bounds {
        Ok(b) => b,
        Err(e) => return ctx.out.error(e),
    };
    let mut count: Option<usize> = None;
    let mut j = 4;
    while j < args.len() {
        if eq_ic(args[j], "count") && j + 1 < args.len() {
            match parse_i64(args[j + 1]) {
                None => return ctx.out.error(ERR_NOT_INT),
                Some(n) => count = Some(n.max(0) as usize),
            }
            j += 2;
        } else {
            return ctx.syntax_error();
        }
    }
    collection::read_or_reply(ctx, args[1], |s: Option<&StreamValue>, out| {
        let Some(s) = s else {
            return out.array(0);
        };
        match count {
            Some(0) => out.null_array(),
            Some(n) => reply_entries(out, s.range(start, end, rev).take(n)),
            None => reply_entries(out, s.range(start, end, rev)),
        }
    });
}

pub fn xrange(ctx: &mut Ctx, args: &Args) {
    range_generic(ctx, args, false);
}

pub fn xrevrange(ctx: &mut Ctx, args: &Args) {
    range_generic(ctx, args, true);
}

pub fn xlen(ctx: &mut Ctx, args: &Args) {
    collection::read_or_reply(ctx, args[1], |s: Option<&StreamValue>, out| {
        out.int(s.map_or(0, |s| s.len()) as i64)
    });
}

pub fn xdel(ctx: &mut Ctx, args: &Args) {
    let key = args[1];
    ctx.write1(key, |tx, db, out| {
        match collection::get::<StreamValue>(tx, db, key) {
            Err(_) => return out.error(ERR_WRONGTYPE),
            Ok(None) => return out.int(0),
            Ok(Some(_)) => {}
        }
        let ids: Result<Vec<StreamId>, _> = args[2..].iter().map(|a| parse_strict(a)).collect();
        let ids = match ids {
            Ok(ids) => ids,
            Err(e) => return out.error(e),
        };
        // Nothing deleted: the key is not touched (WATCH), as in Redis.
        let any = collection::get::<StreamValue>(tx, db, key)
            .ok()
            .flatten()
            .is_some_and(|s| ids.iter().any(|id| s.contains(*id)));
        if !any {
            return out.int(0);
        }
        let deleted = collection::modify(tx, db, key, false, |s: &mut StreamValue| {
            ids.iter().filter(|id| s.delete(**id)).count()
        });
        let deleted = deleted.ok().flatten().unwrap_or(0);
        if deleted > 0 {
            tx.notify(STREAM, "xdel", db, key);
            tx.log(db, args);
        }
        out.int(deleted as i64)
    });
}

pub fn xtrim(ctx: &mut Ctx, args: &Args) {
    let limits = node_limits(ctx);
    let a = match parse_add_args(args, false, replaying(ctx), limits.max_entries) {
        Ok(a) => a,
        Err(e) => return ctx.out.error(&e),
    };
    let key = args[1];
    let trim = a.trim.expect("XTRIM parsed a strategy");
    ctx.write1(key, |tx, db, out| {
        match collection::get::<StreamValue>(tx, db, key) {
            Err(_) => return out.error(ERR_WRONGTYPE),
            Ok(None) => return out.int(0),
            // Nothing to trim: the key is not touched (WATCH), as in Redis.
            Ok(Some(s)) if !s.would_trim(trim, a.approx, a.limit) => return out.int(0),
            Ok(Some(_)) => {}
        }
        let done = collection::modify(tx, db, key, false, |s: &mut StreamValue| {
            let n = s.trim(trim, a.approx, a.limit);
            (n, (n > 0 && a.approx).then(|| exact_threshold(s, trim)))
        });
        let (deleted, threshold) = done.ok().flatten().unwrap_or((0, None));
        if deleted > 0 {
            tx.notify(STREAM, "xtrim", db, key);
            let mut record: Vec<&[u8]> = args.to_vec();
            if let Some(t) = &threshold {
                record[a.threshold_at - 1] = b"=";
                record[a.threshold_at] = t;
            }
            tx.log(db, &record);
        }
        out.int(deleted as i64)
    });
}

/// The arguments XREAD and XREADGROUP share.
pub(super) struct ReadArgs<'a> {
    /// BLOCK's milliseconds, if given.
    pub block: Option<i64>,
    /// 0: no limit.
    pub count: usize,
    pub group: Option<(&'a [u8], &'a [u8])>,
    pub noack: bool,
    pub keys: Vec<&'a [u8]>,
    pub ids: Vec<&'a [u8]>,
}

/// Redis's xreadCommand argument loop.
pub(super) fn parse_read_args<'a>(
    args: &Args<'a>,
    group_cmd: bool,
    in_script: bool,
) -> Result<ReadArgs<'a>, Vec<u8>> {
    let mut r = ReadArgs {
        block: None,
        count: 0,
        group: None,
        noack: false,
        keys: Vec::new(),
        ids: Vec::new(),
    };
    let mut streams_at = None;
    let mut i = 1;
    while i < args.len() {
        let more = args.len() - i - 1;
        let o = args[i];
        if eq_ic(o, "block") && more > 0 {
            if in_script {
                return Err(msg(&[
                    b"ERR ",
                    args[0],
                    b" command is not allowed with BLOCK option from scripts",
                ]));
            }
            i += 1;
            r.block = Some(parse_timeout_ms(args[i])?);
        } else if eq_ic(o, "count") && more > 0 {
            i += 1;
            let n = parse_i64(args[i]).ok_or(ERR_NOT_INT)?;
            r.count = n.max(0) as usize;
        } else if eq_ic(o, "streams") && more > 0 {
            let n = args.len() - i - 1;
            if !n.is_multiple_of(2) {
                // Redis 7.0.15's text for both commands (8.0 names the command
                // and lists `+`): BlinkDB answers as the version it reports.
                return Err(
                    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."
                        .into(),
                );
            }
            streams_at = Some(i + 1);
            break;
        } else if eq_ic(o, "group") && more >= 2 {
            if !group_cmd {
                return Err(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."
                        .into(),
                );
            }
            r.group = Some((args[i + 1], args[i + 2]));
            i += 2;
        } else if eq_ic(o, "noack") {
            if !group_cmd {
                return Err(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."
                        .into(),
                );
            }
            r.noack = true;
        } else {
            return Err(ERR_SYNTAX.into());
        }
        i += 1;
    }
    let Some(at) = streams_at else {
        return Err(ERR_SYNTAX.into());
    };
    if group_cmd && r.group.is_none() {
        return Err("ERR Missing GROUP option for XREADGROUP".into());
    }
    let n = (args.len() - at) / 2;
    r.keys = args[at..at + n].to_vec();
    r.ids = args[at + n..].to_vec();
    Ok(r)
}

/// BLOCK's timeout, as Redis's getTimeoutFromObjectOrReply in milliseconds.
fn parse_timeout_ms(arg: &[u8]) -> Result<i64, String> {
    let n = parse_i64(arg).ok_or("ERR timeout is not an integer or out of range")?;
    if n < 0 {
        return Err("ERR timeout is negative".into());
    }
    Ok(n)
}

/// One stream's entries after an ID, copied out of the shard.
pub(super) type Served = Vec<(StreamId, Vec<(Vec<u8>, Vec<u8>)>)>;

pub(super) fn owned<'a>(entries: impl Iterator<Item = EntryRef<'a>>) -> Served {
    entries
        .map(|(id, f)| (id, f.map(|(a, b)| (a.to_vec(), b.to_vec())).collect()))
        .collect()
}

pub(super) fn reply_served(out: &mut Out, entries: &Served) {
    out.array(entries.len());
    for (id, fields) in entries {
        out.array(2);
        reply_id(out, *id);
        out.array(fields.len() * 2);
        for (f, v) in fields {
            out.bulk(f);
            out.bulk(v);
        }
    }
}

/// Writes XREAD's reply for the streams that had something: a map of
/// key to entries in RESP3, an array of `[key, entries]` pairs in RESP2.
pub(super) fn reply_streams<K: AsRef<[u8]>>(out: &mut Out, served: &[(K, Served)]) {
    if out.resp3() {
        out.map(served.len());
    } else {
        out.array(served.len());
    }
    for (key, entries) in served {
        if !out.resp3() {
            out.array(2);
        }
        out.bulk(key.as_ref());
        reply_served(out, entries);
    }
}

/// What XREAD asked of each stream: entries after this ID.
pub(super) struct XreadRequest<'a> {
    pub keys: Vec<&'a [u8]>,
    pub after: Vec<StreamId>,
    pub count: usize,
}

/// Serves XREAD now if any stream has an entry past its ID; None means
/// the caller would block (or answer as a timeout).
pub(super) fn try_xread(ctx: &mut Ctx, req: &XreadRequest) -> Option<Vec<(Vec<u8>, Served)>> {
    let mut served = Vec::new();
    for (key, after) in req.keys.iter().zip(&req.after) {
        let Some(start) = after.next() else {
            continue;
        };
        let count = req.count;
        let got = collection::read(ctx, key, |s: Option<&StreamValue>, _| {
            let s = s?;
            let last = s.last_live_id()?;
            if last <= *after {
                return None;
            }
            let it = s.range(start, StreamId::MAX, false);
            Some(if count > 0 {
                owned(it.take(count))
            } else {
                owned(it)
            })
        });
        if let Ok(Some(entries)) = got {
            served.push((key.to_vec(), entries));
        }
    }
    (!served.is_empty()).then_some(served)
}

/// Entries past `after` in `key`'s stream (None: nothing new), read in a
/// write that holds the key's lock.
fn read_after(tx: &mut Tx, db: usize, key: &[u8], after: StreamId, count: usize) -> Option<Served> {
    let s = collection::get::<StreamValue>(tx, db, key).ok().flatten()?;
    let start = after.next()?;
    if s.last_live_id()? <= after {
        return None;
    }
    let it = s.range(start, StreamId::MAX, false);
    Some(if count > 0 {
        owned(it.take(count))
    } else {
        owned(it)
    })
}

/// A stream's last ID and its last live entry's (None when empty), which
/// XREAD's `$` and `+` resolve to.
type LastIds = (StreamId, Option<StreamId>);

fn last_ids(s: &StreamValue) -> LastIds {
    (s.last_id, s.last_live_id())
}

/// XREAD's IDs resolved against the streams (`$`: the last ID now; `+`, Redis
/// 7.4's: just before the last entry, so that it is read), or the error reply.
/// `get` reads a key's last IDs (Err: another type).
fn resolve_ids(
    r: &ReadArgs,
    mut get: impl FnMut(&[u8]) -> Result<Option<LastIds>, ()>,
) -> Result<Vec<StreamId>, &'static str> {
    let mut after = Vec::with_capacity(r.keys.len());
    for (key, id) in r.keys.iter().zip(&r.ids) {
        let last = get(key).map_err(|_| ERR_WRONGTYPE)?;
        let id = if *id == b"$" {
            last.map_or(StreamId::MIN, |(last, _)| last)
        } else if *id == b"+" {
            // An empty or missing stream: from 0-0, so the first entry added is read.
            last.and_then(|(_, live)| live?.prev())
                .unwrap_or(StreamId::MIN)
        } else if *id == b">" {
            return Err("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.");
        } else {
            parse_strict(id)?
        };
        after.push(id);
    }
    Ok(after)
}

/// Entries a served BLOCK read takes at most without COUNT (Redis's
/// XREAD_BLOCKED_DEFAULT_COUNT).
pub(super) const BLOCKED_DEFAULT_COUNT: usize = 1000;

pub fn xread(ctx: &mut Ctx, args: &Args) {
    let in_script = crate::scripting::run::in_script_call();
    let r = match parse_read_args(args, false, in_script) {
        Ok(r) => r,
        Err(e) => return ctx.out.error_bytes(&e),
    };
    if r.block.is_some() && !ctx.client.deny_blocking {
        return xread_or_block(ctx, args, &r);
    }
    let after = resolve_ids(&r, |key| {
        collection::read(ctx, key, |s: Option<&StreamValue>, _| s.map(last_ids)).map_err(|_| ())
    });
    let after = match after {
        Ok(a) => a,
        Err(e) => return ctx.out.error(e),
    };
    let req = XreadRequest {
        keys: r.keys,
        after,
        count: r.count,
    };
    match try_xread(ctx, &req) {
        Some(served) => reply_streams(ctx.out, &served),
        // Nothing to read (or blocking denied in MULTI and scripts): as a
        // timeout.
        None => ctx.out.null_array(),
    }
}

/// XREAD BLOCK: serves what is there now, else registers the client on its
/// keys while holding their locks, with `$` written as the ID it meant.
fn xread_or_block(ctx: &mut Ctx, args: &Args, r: &ReadArgs) {
    let db = ctx.db();
    let shared = ctx.shared;
    let who = Who::of(ctx.client);
    let end_ms = match r.block {
        Some(0) | None => 0,
        Some(ms) => (ms as u64).saturating_add(blinkdb_engine::now_ms()),
    };
    let locked: Vec<(usize, &[u8])> = r.keys.iter().map(|k| (db, *k)).collect();
    let waiter = ctx.write(&locked, |tx, out| {
        let after = resolve_ids(r, |key| match collection::get::<StreamValue>(tx, db, key) {
            Err(_) => Err(()),
            Ok(s) => Ok(s.map(last_ids)),
        });
        let after = match after {
            Ok(a) => a,
            Err(e) => {
                out.error(e);
                return None;
            }
        };
        let mut served = Vec::new();
        for (key, after) in r.keys.iter().zip(&after) {
            if let Some(entries) = read_after(tx, db, key, *after, r.count) {
                served.push((*key, entries));
            }
        }
        if !served.is_empty() {
            reply_streams(out, &served);
            return None;
        }
        // The wait is served by `serve_xread`, from the IDs resolved now.
        let ids: Vec<Vec<u8>> = after.iter().map(|id| id.to_bytes()).collect();
        let first_id = args.len() - ids.len();
        let mut record: Args = args.iter().copied().collect();
        for (i, id) in ids.iter().enumerate() {
            record[first_id + i] = id;
        }
        Some(shared.exec.blocking.block_on_keys(
            shared,
            &who,
            &r.keys,
            &record,
            serve_xread,
            end_ms,
        ))
    });
    if let Some(w) = waiter {
        ctx.client.block = Some(Block::Waiting(w));
    }
}

/// Serves a waiting XREAD from `key`, which a write made ready: the entries
/// past the ID it waits for (the first given for a key named twice), if the
/// stream's last ID moved past it.
fn serve_xread(ctx: &mut Ctx, args: &Args, key: &[u8]) -> bool {
    let Ok(r) = parse_read_args(args, false, false) else {
        return false;
    };
    let Some(i) = r.keys.iter().position(|k| *k == key) else {
        return false;
    };
    let Ok(after) = parse_strict(r.ids[i]) else {
        return false;
    };
    let count = if r.count == 0 {
        BLOCKED_DEFAULT_COUNT
    } else {
        r.count
    };
    ctx.write1(key, |tx, db, out| {
        let Ok(Some(s)) = collection::get::<StreamValue>(tx, db, key) else {
            return false;
        };
        if s.last_id <= after {
            return false;
        }
        let start = after.next().unwrap_or(StreamId::MAX);
        let entries = owned(s.range(start, StreamId::MAX, false).take(count));
        reply_streams(out, &[(key, entries)]);
        true
    })
}

pub fn xsetid(ctx: &mut Ctx, args: &Args) {
    let id = match parse_strict(args[2]) {
        Ok(id) => id,
        Err(e) => return ctx.out.error(e),
    };
    let mut entries_added: Option<u64> = None;
    let mut max_deleted = StreamId::MIN;
    let mut i = 3;
    while i < args.len() {
        let more = args.len() - 1 - i;
        if eq_ic(args[i], "entriesadded") && more > 0 {
            match parse_i64(args[i + 1]) {
                None => return ctx.out.error(ERR_NOT_INT),
                Some(n) if n < 0 => return ctx.out.error("ERR entries_added must be positive"),
                Some(n) => entries_added = Some(n as u64),
            }
        } else if eq_ic(args[i], "maxdeletedid") && more > 0 {
            match parse_strict(args[i + 1]) {
                Err(e) => return ctx.out.error(e),
                Ok(m) if id < m => {
                    return ctx.out.error(
                        "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                    )
                }
                Ok(m) => max_deleted = m,
            }
        } else {
            return ctx.syntax_error();
        }
        i += 2;
    }
    let key = args[1];
    ctx.write1(key, |tx, db, out| {
        match collection::get::<StreamValue>(tx, db, key) {
            Err(_) => return out.error(ERR_WRONGTYPE),
            Ok(None) => return out.error(super::args::ERR_NO_SUCH_KEY),
            Ok(Some(s)) if !s.is_empty() => {
                if s.last_live_id().is_some_and(|top| id < top) {
                    return out.error(
                        "ERR The ID specified in XSETID is smaller than the target stream top item",
                    );
                }
                if entries_added.is_some_and(|n| s.len() > n) {
                    return out.error("ERR The entries_added specified in XSETID is smaller than the target stream length");
                }
            }
            Ok(Some(_)) => {}
        }
        let _ = tx.unsignaled(|tx| {
            collection::modify(tx, db, key, false, |s: &mut StreamValue| {
            s.last_id = id;
            if let Some(n) = entries_added {
                s.entries_added = n;
            }
            if !max_deleted.is_zero() {
                s.max_deleted_id = max_deleted;
            }
            })
        });
        tx.notify(STREAM, "xsetid", db, key);
        tx.log(db, args);
        out.ok()
    });
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    // streams
    cmd!("xadd", -5, WRITE | DENYOOM | FAST, KEY1, "stream", "5.0.0", "Appends a new entry to a stream", xadd;
        acl: acl::STREAM,
        complexity: "O(1) when adding a new entry, O(N) when trimming where N being the number of entries evicted.",
        keys: "RW,update index:1 range:0:1:0 | UPDATE instead of INSERT because of the optional trimming feature",
        args: "key:key nomkstream:NOMKSTREAM?^6.2.0 trim:block?(strategy:oneof(maxlen:MAXLEN minid:MINID^6.2.0) operator:oneof?(equal:= approximately:~) threshold:string count:integer=LIMIT?^6.2.0) id_or_auto:oneof(auto_id:* id:string) field_value:block*(field:string value:string)",
        history: &[("6.2.0", "Added the `NOMKSTREAM` option, `MINID` trimming strategy and the `LIMIT` option."), ("7.0.0", "Added support for the `<ms>-*` explicit ID form.")],
        tips: &["nondeterministic_output"]),
    cmd!("xrange", -4, READONLY, KEY1, "stream", "5.0.0", "Return a range of elements in a stream, with IDs matching the specified IDs interval", xrange;
        acl: acl::STREAM,
        complexity: "O(N) with N being the number of elements being returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key start:string end:string count:integer=COUNT?",
        history: &[("6.2.0", "Added exclusive ranges.")]),
    cmd!("xrevrange", -4, READONLY, KEY1, "stream", "5.0.0", "Return a range of elements in a stream, with IDs matching the specified IDs interval, in reverse order (from greater to smaller IDs) compared to XRANGE", xrevrange;
        acl: acl::STREAM,
        complexity: "O(N) with N being the number of elements returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key end:string start:string count:integer=COUNT?",
        history: &[("6.2.0", "Added exclusive ranges.")]),
    cmd!("xlen", 2, READONLY | FAST, KEY1, "stream", "5.0.0", "Return the number of entries in a stream", xlen;
        acl: acl::STREAM,
        complexity: "O(1)",
        keys: "RO index:1 range:0:1:0",
        args: "key:key"),
    cmd!("xdel", -3, WRITE | FAST, KEY1, "stream", "5.0.0", "Removes the specified entries from the stream. Returns the number of items actually deleted, that may be different from the number of IDs passed in case certain IDs do not exist.", xdel;
        acl: acl::STREAM,
        complexity: "O(1) for each single item to delete in the stream, regardless of the stream size.",
        keys: "RW,delete index:1 range:0:1:0",
        args: "key:key id:string*"),
    cmd!("xtrim", -4, WRITE, KEY1, "stream", "5.0.0", "Trims the stream to (approximately if '~' is passed) a certain size", xtrim;
        acl: acl::STREAM,
        complexity: "O(N), with N being the number of evicted entries. Constant times are very small however, since entries are organized in macro nodes containing multiple entries that can be released with a single deallocation.",
        keys: "RW,delete index:1 range:0:1:0",
        args: "key:key trim:block(strategy:oneof(maxlen:MAXLEN minid:MINID^6.2.0) operator:oneof?(equal:= approximately:~) threshold:string count:integer=LIMIT?^6.2.0)",
        history: &[("6.2.0", "Added the `MINID` trimming strategy and the `LIMIT` option.")],
        tips: &["nondeterministic_output"]),
    cmd!("xread", -4, READONLY | BLOCKING, NOKEYS, "stream", "5.0.0", "Return never seen elements in multiple streams, with IDs greater than the ones reported by the caller for each stream. Can block.", xread;
        acl: acl::STREAM,
        complexity: "For each stream mentioned: O(N) with N being the number of elements being returned, it means that XREAD-ing with a fixed COUNT is O(1). Note that when the BLOCK option is used, XADD will pay O(M) time in order to serve the M clients blocked on the stream getting new data.",
        keys: "RO,access keyword:STREAMS:1 range:-1:1:2",
        args: "count:integer=COUNT? milliseconds:integer=BLOCK? streams:block=STREAMS(key:key* id:string*)"),
    cmd!("xsetid", -3, WRITE | DENYOOM | FAST, KEY1, "stream", "5.0.0", "An internal command for replicating stream values", xsetid;
        acl: acl::STREAM,
        complexity: "O(1)",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key last-id:string entries_added:integer=ENTRIESADDED?^7.0.0 max_deleted_entry_id:string=MAXDELETEDID?^7.0.0",
        history: &[("7.0.0", "Added the `entries_added` and `max_deleted_entry_id` arguments.")]),
];
