//! Consumer-group commands (XGROUP, XREADGROUP, XACK, XPENDING, XCLAIM,
//! XAUTOCLAIM) with Redis 7.0's replies and errors. What reaches the AOF is
//! what Redis propagates: XREADGROUP, XCLAIM and XAUTOCLAIM log one
//! `XCLAIM ... FORCE JUSTID LASTID` per entry they hand out (and XGROUP
//! SETID or CREATECONSUMER where Redis sends those), never themselves.

use super::args::{eq_ic, parse_i64, ERR_NOT_INT, ERR_WRONGTYPE};
use super::collection;
use super::stream::{
    msg, owned, parse_bound, parse_id, parse_read_args, parse_strict, reply_id, reply_served,
    Served, BLOCKED_DEFAULT_COUNT,
};
use super::Ctx;
use crate::exec::blocking::Who;
use crate::exec::session::Block;
use crate::protocol::{Args, Out};
use blinkdb_engine::{
    event::STREAM,
    stream::{Group, Nack, StreamId},
    StreamValue, Tx,
};
use smallvec::SmallVec;

fn now_ms() -> i64 {
    blinkdb_engine::now_ms() as i64
}

fn nogroup_for_key(group: &[u8], key: &[u8]) -> Vec<u8> {
    msg(&[
        b"NOGROUP No such consumer group '",
        group,
        b"' for key name '",
        key,
        b"'",
    ])
}

fn nogroup(key: &[u8], group: &[u8]) -> Vec<u8> {
    msg(&[
        b"NOGROUP No such key '",
        key,
        b"' or consumer group '",
        group,
        b"'",
    ])
}

/// One command for the AOF, as Redis propagates it: its arguments end to
/// end in one buffer. XREADGROUP makes one per entry it hands out, and an
/// allocation per argument (with numbers formatted through `fmt`) was a
/// measurable part of it.
#[derive(Default)]
struct Record {
    bytes: Vec<u8>,
    ends: SmallVec<[usize; 14]>,
}

impl Record {
    /// A record starting with `args`, with room for the IDs and numbers
    /// the XCLAIM and XGROUP SETID records add.
    fn of(args: &[&[u8]]) -> Record {
        let more = 96;
        let mut r = Record {
            bytes: Vec::with_capacity(args.iter().map(|a| a.len()).sum::<usize>() + more),
            ends: SmallVec::new(),
        };
        for a in args {
            r.push(a);
        }
        r
    }

    fn push(&mut self, arg: &[u8]) -> &mut Record {
        self.bytes.extend_from_slice(arg);
        self.ends.push(self.bytes.len());
        self
    }

    fn push_int(&mut self, n: impl itoa::Integer) -> &mut Record {
        self.push(itoa::Buffer::new().format(n).as_bytes())
    }

    /// A stream ID as `ms-seq`.
    fn push_id(&mut self, id: StreamId) -> &mut Record {
        let mut digits = itoa::Buffer::new();
        self.bytes
            .extend_from_slice(digits.format(id.ms).as_bytes());
        self.bytes.push(b'-');
        self.push_int(id.seq)
    }

    fn args(&self) -> SmallVec<[&[u8]; 14]> {
        crate::protocol::request::split_at_ends(&self.bytes, &self.ends)
    }
}

/// What Redis's streamPropagateXCLAIM sends for pending entry `id`, with
/// the group's last ID at that moment.
fn xclaim_record(key: &[u8], group: &[u8], id: StreamId, nack: &Nack, last: StreamId) -> Record {
    let mut r = Record::of(&[b"XCLAIM", key, group, &nack.consumer, b"0"]);
    r.push_id(id)
        .push(b"TIME")
        .push_int(nack.delivery_time)
        .push(b"RETRYCOUNT")
        .push_int(nack.delivery_count)
        .push(b"FORCE")
        .push(b"JUSTID")
        .push(b"LASTID")
        .push_id(last);
    r
}

/// Redis's streamPropagateGroupID: the group's last ID and entries-read.
fn setid_record(key: &[u8], group: &[u8], g: &Group) -> Record {
    let mut r = Record::of(&[b"XGROUP", b"SETID", key, group]);
    r.push_id(g.last_id)
        .push(b"ENTRIESREAD")
        .push_int(g.entries_read.map_or(-1, |n| n as i64));
    r
}

/// Logs what one command propagates: several records go inside MULTI/EXEC,
/// as Redis wraps a command's propagated effects.
fn log_records(tx: &mut Tx, db: usize, records: &[Record]) {
    if records.len() > 1 {
        crate::exec::wrapper::multi(tx, db);
    }
    for r in records {
        tx.log(db, &r.args());
    }
    if records.len() > 1 {
        crate::exec::wrapper::exec(tx, db);
    }
}

/// Changes the stream at `key` without signalling it (WATCH, tracking):
/// Redis signals a stream's key only for XADD, XDEL, XTRIM and a stream
/// XGROUP CREATE MKSTREAM makes, not for its groups' changes.
fn quietly<R>(
    tx: &mut Tx,
    db: usize,
    key: &[u8],
    f: impl FnOnce(&mut StreamValue) -> R,
) -> Option<R> {
    tx.unsignaled(|tx| collection::modify(tx, db, key, false, f).ok().flatten())
}

/// Runs `f` on the stream at `key` with its group table taken out (so both
/// can change), and puts the table back. None if absent or another type.
fn with_groups<R>(
    tx: &mut Tx,
    db: usize,
    key: &[u8],
    f: impl FnOnce(&mut StreamValue, &mut std::collections::BTreeMap<Box<[u8]>, Group>) -> R,
) -> Option<R> {
    quietly(tx, db, key, |s: &mut StreamValue| {
        let mut groups = std::mem::take(&mut s.groups);
        let r = f(s, &mut groups);
        s.groups = groups;
        r
    })
}

/// XGROUP's option loop (arguments from 5) and key checks, as Redis's
/// xgroupCommand runs them before any subcommand.
struct GroupArgs {
    mkstream: bool,
    entries_read: Option<u64>,
}

fn group_options(ctx: &mut Ctx, args: &Args) -> Option<GroupArgs> {
    let sub = args[1];
    let (create, setid) = (eq_ic(sub, "create"), eq_ic(sub, "setid"));
    let mut g = GroupArgs {
        mkstream: false,
        entries_read: None,
    };
    let mut i = 5;
    while i < args.len() {
        if create && eq_ic(args[i], "mkstream") {
            g.mkstream = true;
            i += 1;
        } else if (create || setid) && eq_ic(args[i], "entriesread") && i + 1 < args.len() {
            match parse_i64(args[i + 1]) {
                None => {
                    ctx.out.error(ERR_NOT_INT);
                    return None;
                }
                Some(n) if n < -1 => {
                    ctx.out
                        .error("ERR value for ENTRIESREAD must be positive or -1");
                    return None;
                }
                Some(n) => g.entries_read = (n >= 0).then_some(n as u64),
            }
            i += 2;
        } else {
            super::subcommand_syntax_error(ctx, args);
            return None;
        }
    }
    Some(g)
}

/// The checks every XGROUP subcommand with a key makes inside its write:
/// the key's type, its existence (unless MKSTREAM), and (but for CREATE
/// and DESTROY) the group's. Err carries the reply.
fn check_group(tx: &mut Tx, db: usize, args: &Args, mkstream: bool) -> Result<Option<()>, Vec<u8>> {
    let (key, group) = (args[2], args[3]);
    let s = collection::get::<StreamValue>(tx, db, key)
        .map_err(|_| ERR_WRONGTYPE.as_bytes().to_vec())?;
    if mkstream {
        return Ok(s.map(|_| ()));
    }
    let Some(s) = s else {
        return Err(b"ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.".to_vec());
    };
    let sub = args[1];
    if !s.groups.contains_key(group)
        && (eq_ic(sub, "setid") || eq_ic(sub, "createconsumer") || eq_ic(sub, "delconsumer"))
    {
        return Err(nogroup_for_key(group, key));
    }
    Ok(Some(()))
}

pub fn create(ctx: &mut Ctx, args: &Args) {
    let Some(opts) = group_options(ctx, args) else {
        return;
    };
    if args.len() > 8 {
        return super::subcommand_syntax_error(ctx, args);
    }
    let (key, group) = (args[2], args[3]);
    ctx.write1(key, |tx, db, out| {
        let exists = match check_group(tx, db, args, opts.mkstream) {
            Err(e) => return out.error_bytes(&e),
            Ok(e) => e.is_some(),
        };
        let last = collection::get::<StreamValue>(tx, db, key)
            .ok()
            .flatten()
            .map_or(StreamId::MIN, |s| s.last_id);
        let id = if args[4] == b"$" {
            last
        } else {
            match parse_strict(args[4]) {
                Ok(id) => id,
                Err(e) => return out.error(e),
            }
        };
        let add = |s: &mut StreamValue| {
            if s.groups.contains_key(group) {
                return false;
            }
            s.groups
                .insert(group.into(), Group::new(id, opts.entries_read));
            true
        };
        let created = if exists {
            Ok(quietly(tx, db, key, add))
        } else {
            collection::modify(tx, db, key, true, add)
        };
        match created {
            Ok(Some(true)) => {
                tx.notify(STREAM, "xgroup-create", db, key);
                tx.log(db, args);
                out.ok()
            }
            Ok(Some(false)) => out.error("BUSYGROUP Consumer Group name already exists"),
            _ => out.error(ERR_WRONGTYPE),
        }
    });
}

pub fn setid(ctx: &mut Ctx, args: &Args) {
    let Some(opts) = group_options(ctx, args) else {
        return;
    };
    if args.len() != 5 && args.len() != 7 {
        return super::subcommand_syntax_error(ctx, args);
    }
    let (key, group) = (args[2], args[3]);
    ctx.write1(key, |tx, db, out| {
        if let Err(e) = check_group(tx, db, args, false) {
            return out.error_bytes(&e);
        }
        let id = if args[4] == b"$" {
            None
        } else {
            match parse_id(args[4], 0) {
                Ok(id) => Some(id),
                Err(e) => return out.error(e),
            }
        };
        let _ = quietly(tx, db, key, |s: &mut StreamValue| {
            let last = s.last_id;
            if let Some(g) = s.groups.get_mut(group) {
                g.last_id = id.unwrap_or(last);
                g.entries_read = opts.entries_read;
            }
        });
        tx.notify(STREAM, "xgroup-setid", db, key);
        tx.log(db, args);
        out.ok()
    });
}

pub fn destroy(ctx: &mut Ctx, args: &Args) {
    if group_options(ctx, args).is_none() {
        return;
    }
    let (key, group) = (args[2], args[3]);
    ctx.write1(key, |tx, db, out| {
        if let Err(e) = check_group(tx, db, args, false) {
            return out.error_bytes(&e);
        }
        let has = collection::get::<StreamValue>(tx, db, key)
            .ok()
            .flatten()
            .is_some_and(|s| s.groups.contains_key(group));
        if !has {
            return out.int(0);
        }
        let _ = quietly(tx, db, key, |s: &mut StreamValue| s.groups.remove(group));
        tx.notify(STREAM, "xgroup-destroy", db, key);
        tx.signal_ready(db, key);
        tx.log(db, args);
        out.int(1)
    });
}

pub fn createconsumer(ctx: &mut Ctx, args: &Args) {
    if group_options(ctx, args).is_none() {
        return;
    }
    let (key, group, consumer) = (args[2], args[3], args[4]);
    let now = now_ms();
    ctx.write1(key, |tx, db, out| {
        if let Err(e) = check_group(tx, db, args, false) {
            return out.error_bytes(&e);
        }
        let exists = collection::get::<StreamValue>(tx, db, key)
            .ok()
            .flatten()
            .and_then(|s| s.groups.get(group))
            .is_some_and(|g| g.consumers.contains_key(consumer));
        if exists {
            return out.int(0);
        }
        let _ = quietly(tx, db, key, |s: &mut StreamValue| {
            s.groups
                .get_mut(group)
                .map(|g| g.create_consumer(consumer, now))
        });
        tx.notify(STREAM, "xgroup-createconsumer", db, key);
        tx.log(db, args);
        out.int(1)
    });
}

pub fn delconsumer(ctx: &mut Ctx, args: &Args) {
    if group_options(ctx, args).is_none() {
        return;
    }
    let (key, group, consumer) = (args[2], args[3], args[4]);
    ctx.write1(key, |tx, db, out| {
        if let Err(e) = check_group(tx, db, args, false) {
            return out.error_bytes(&e);
        }
        let exists = collection::get::<StreamValue>(tx, db, key)
            .ok()
            .flatten()
            .and_then(|s| s.groups.get(group))
            .is_some_and(|g| g.consumers.contains_key(consumer));
        if !exists {
            return out.int(0);
        }
        let pending = quietly(tx, db, key, |s: &mut StreamValue| {
            s.groups
                .get_mut(group)
                .and_then(|g| g.delete_consumer(consumer))
        });
        let pending = pending.flatten().unwrap_or(0);
        tx.notify(STREAM, "xgroup-delconsumer", db, key);
        tx.log(db, args);
        out.int(pending as i64)
    });
}

pub fn help(ctx: &mut Ctx, _args: &Args) {
    ctx.out.help(&[
        "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CREATE <key> <groupname> <id|$> [option]",
        "    Create a new consumer group. Options are:",
        "    * MKSTREAM",
        "      Create the empty stream if it does not exist.",
        "    * ENTRIESREAD entries_read",
        "      Set the group's entries_read counter (internal use).",
        "CREATECONSUMER <key> <groupname> <consumer>",
        "    Create a new consumer in the specified group.",
        "DELCONSUMER <key> <groupname> <consumer>",
        "    Remove the specified consumer.",
        "DESTROY <key> <groupname>",
        "    Remove the specified group.",
        "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
        "    Set the current group ID and entries_read counter.",
        "HELP",
        "    Prints this help.",
    ]);
}

/// What one stream of an XREADGROUP served: new entries, or the
/// consumer's history (entries it has pending; deleted ones as null).
enum GroupRead {
    New(Served),
    History(Vec<Claimed>),
}

/// One stream's part of XREADGROUP, inside its write: serves it if there
/// is something (always for a history read), changing the group and
/// logging what Redis propagates. None: nothing to serve now.
#[allow(clippy::too_many_arguments)]
fn serve_group(
    tx: &mut Tx,
    db: usize,
    key: &[u8],
    group: &[u8],
    consumer: &[u8],
    after: Option<StreamId>,
    count: usize,
    noack: bool,
    now: i64,
    records: &mut Vec<Record>,
) -> Option<GroupRead> {
    let s = collection::get::<StreamValue>(tx, db, key).ok().flatten()?;
    let g = s.groups.get(group)?;
    let new_from = match after {
        Some(_) => None,
        None => {
            let top = s.last_live_id()?;
            if top <= g.last_id {
                return None;
            }
            Some(g.last_id)
        }
    };
    let mut created = false;
    let read = with_groups(tx, db, key, |s, groups| {
        let g = groups.get_mut(group).expect("checked above");
        match g.consumers.get_mut(consumer) {
            Some(c) => c.seen_time = now,
            None => {
                g.create_consumer(consumer, now);
                created = true;
                if noack {
                    records.push(Record::of(&[
                        b"XGROUP",
                        b"CREATECONSUMER",
                        key,
                        group,
                        consumer,
                    ]));
                }
            }
        }
        let Some(last) = new_from else {
            // History: the consumer's pending entries from the given ID.
            let start = after.expect("history read");
            let ids: Vec<StreamId> = g.consumers[consumer]
                .pel
                .range(start..)
                .take(if count == 0 { usize::MAX } else { count })
                .copied()
                .collect();
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                match s.get(id) {
                    Some(f) => {
                        let f = f.map(|(a, b)| (a.to_vec(), b.to_vec())).collect();
                        if let Some(n) = g.pel.get_mut(&id) {
                            n.delivery_time = now;
                            n.delivery_count += 1;
                        }
                        out.push((id, Some(f)));
                    }
                    None => out.push((id, None)),
                }
            }
            return GroupRead::History(out);
        };
        let start = last.next().unwrap_or(StreamId::MAX);
        let it = s.range(start, StreamId::MAX, false);
        let entries = if count > 0 {
            owned(it.take(count))
        } else {
            owned(it)
        };
        for (id, _) in &entries {
            s.advance_group(g, *id);
            if !noack {
                let nack = g.deliver(*id, consumer, now).clone();
                records.push(xclaim_record(key, group, *id, &nack, g.last_id));
            }
        }
        if noack && !entries.is_empty() {
            records.push(setid_record(key, group, g));
        }
        GroupRead::New(entries)
    })?;
    if created {
        tx.notify(STREAM, "xgroup-createconsumer", db, key);
    }
    Some(read)
}

pub fn xreadgroup(ctx: &mut Ctx, args: &Args) {
    let in_script = crate::scripting::run::in_script_call();
    let r = match parse_read_args(args, true, in_script) {
        Ok(r) => r,
        Err(e) => return ctx.out.error_bytes(&e),
    };
    let (group, consumer) = r.group.expect("XREADGROUP parsed GROUP");
    let db = ctx.db();
    let keys: Vec<(usize, &[u8])> = r.keys.iter().map(|k| (db, *k)).collect();
    let now = now_ms();
    let (count, noack, block) = (r.count, r.noack, r.block);
    let deny_blocking = ctx.client.deny_blocking;
    let shared = ctx.shared;
    let who = Who::of(ctx.client);
    let end_ms = match block {
        Some(0) | None => 0,
        Some(ms) => (ms as u64).saturating_add(blinkdb_engine::now_ms()),
    };
    // Keyspace hits and misses as Redis counts them: each key looked up once
    // while checked, then each again when served.
    let (mut hits, mut misses) = (0, 0);
    let waiter = ctx.write(&keys, |tx, out| {
        // Every key, group and ID is checked before anything is served.
        let mut after: Vec<Option<StreamId>> = Vec::with_capacity(r.keys.len());
        for (key, id) in r.keys.iter().zip(&r.ids) {
            let s = match collection::get::<StreamValue>(tx, db, key) {
                Err(_) => {
                    hits += 1;
                    out.error(ERR_WRONGTYPE);
                    return None;
                }
                Ok(s) => s,
            };
            if s.is_some() {
                hits += 1;
            } else {
                misses += 1;
            }
            if !s.is_some_and(|s| s.groups.contains_key(group)) {
                out.error_bytes(&msg(&[
                    b"NOGROUP No such key '",
                    key,
                    b"' or consumer group '",
                    group,
                    b"' in XREADGROUP with GROUP option",
                ]));
                return None;
            }
            if *id == b"$" {
                out.error("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.");
                return None;
            }
            if *id == b">" {
                after.push(None);
                continue;
            }
            match parse_strict(id) {
                Ok(id) => after.push(id.next().or(Some(StreamId::MAX))),
                Err(e) => {
                    out.error(e);
                    return None;
                }
            }
        }
        hits += r.keys.len() as u64;
        let mut served: Vec<(&[u8], GroupRead)> = Vec::new();
        let mut records = Vec::new();
        for (key, after) in r.keys.iter().zip(&after) {
            let read = serve_group(tx, db, key, group, consumer, *after, count, noack, now, &mut records);
            if let Some(read) = read {
                served.push((key, read));
            }
        }
        log_records(tx, db, &records);
        if served.is_empty() {
            if block.is_some() && !deny_blocking {
                // Only `>` reads get here (history reads always answer):
                // `serve_xreadgroup` serves the wait.
                let waiter = shared.exec.blocking.block_on_keys(
                    shared,
                    &who,
                    &r.keys,
                    args,
                    serve_xreadgroup,
                    end_ms,
                );
                // A deleted stream ends the wait with an error, as in Redis.
                waiter.serve_when_key_gone(&shared.exec.blocking);
                waiter.check_ready_with(xreadgroup_may_serve);
                return Some(waiter);
            }
            out.null_array();
            return None;
        }
        if out.resp3() {
            out.map(served.len());
        } else {
            out.array(served.len());
        }
        for (key, read) in &served {
            if !out.resp3() {
                out.array(2);
            }
            out.bulk(key);
            match read {
                GroupRead::New(entries) => reply_served(out, entries),
                GroupRead::History(entries) => {
                    out.array(entries.len());
                    for (id, fields) in entries {
                        out.array(2);
                        reply_id(out, *id);
                        match fields {
                            None => out.null_array(),
                            Some(f) => {
                                out.array(f.len() * 2);
                                for (a, b) in f {
                                    out.bulk(a);
                                    out.bulk(b);
                                }
                            }
                        }
                    }
                }
            }
        }
        None
    });
    ctx.client.keyspace_hits += hits;
    ctx.client.keyspace_misses += misses;
    if let Some(w) = waiter {
        ctx.client.block = Some(Block::Waiting(w));
    }
}

/// Whether a write to `key` can serve a waiting XREADGROUP (GROUP `args[2]`),
/// looked at without locking it for a write: when the stream moved past the
/// group's last delivered ID, or it or the group is gone (the wait then ends
/// with an error). As Redis 7.0 compares the IDs before it unblocks a reader,
/// an XADD with many readers blocked does not run a full read for each one.
/// A write racing this look notes the key ready again and serves it itself.
fn xreadgroup_may_serve(
    shared: &crate::server::state::Shared,
    db: usize,
    args: &Args,
    key: &[u8],
) -> bool {
    let Some(group) = args.get(2) else {
        return true;
    };
    shared.engine.peek(db, key, |e| match e.map(|e| e.value()) {
        Some(blinkdb_engine::Value::Stream(s, _)) => {
            s.groups.get(*group).is_none_or(|g| s.last_id > g.last_id)
        }
        _ => true,
    })
}

/// Serves a waiting XREADGROUP from `key`, which a write made ready: the
/// entries past the group's last ID if the stream moved past it; an error
/// when the stream or the group is gone.
fn serve_xreadgroup(ctx: &mut Ctx, args: &Args, key: &[u8]) -> bool {
    let Ok(r) = parse_read_args(args, true, false) else {
        return false;
    };
    let Some((group, consumer)) = r.group else {
        return false;
    };
    let count = if r.count == 0 {
        BLOCKED_DEFAULT_COUNT
    } else {
        r.count
    };
    let now = now_ms();
    ctx.write1(key, |tx, db, out| {
        let last = match collection::get::<StreamValue>(tx, db, key) {
            Ok(Some(s)) => s.groups.get(group).map(|g| (s.last_id, g.last_id)),
            _ => {
                out.error("UNBLOCKED the stream key no longer exists");
                return true;
            }
        };
        let Some((top, delivered)) = last else {
            out.error("NOGROUP the consumer group this client was blocked on no longer exists");
            return true;
        };
        if top <= delivered {
            return false;
        }
        let mut records = Vec::new();
        let read = serve_group(
            tx,
            db,
            key,
            group,
            consumer,
            None,
            count,
            r.noack,
            now,
            &mut records,
        );
        log_records(tx, db, &records);
        let entries = match read {
            Some(GroupRead::New(e)) => e,
            _ => Vec::new(),
        };
        if out.resp3() {
            out.map(1);
        } else {
            out.array(1);
            out.array(2);
        }
        out.bulk(key);
        reply_served(out, &entries);
        true
    })
}

pub fn xack(ctx: &mut Ctx, args: &Args) {
    let (key, group) = (args[1], args[2]);
    ctx.write1(key, |tx, db, out| {
        match collection::get::<StreamValue>(tx, db, key) {
            Err(_) => return out.error(ERR_WRONGTYPE),
            Ok(Some(s)) if s.groups.contains_key(group) => {}
            Ok(_) => return out.int(0),
        }
        let ids: Result<Vec<StreamId>, _> = args[3..].iter().map(|a| parse_strict(a)).collect();
        let ids = match ids {
            Ok(ids) => ids,
            Err(e) => return out.error(e),
        };
        let pending = collection::get::<StreamValue>(tx, db, key)
            .ok()
            .flatten()
            .and_then(|s| s.groups.get(group))
            .is_some_and(|g| ids.iter().any(|id| g.pel.contains_key(id)));
        if !pending {
            return out.int(0);
        }
        let acked = quietly(tx, db, key, |s: &mut StreamValue| {
            let g = s.groups.get_mut(group).expect("checked above");
            ids.iter().filter(|id| g.ack(**id)).count()
        });
        let acked = acked.unwrap_or(0);
        tx.log(db, args);
        out.int(acked as i64)
    });
}

pub fn xpending(ctx: &mut Ctx, args: &Args) {
    let (key, group) = (args[1], args[2]);
    let summary = args.len() == 3;
    if args.len() != 3 && !(6..=9).contains(&args.len()) {
        return ctx.syntax_error();
    }
    let mut min_idle = 0i64;
    let mut range = (StreamId::MIN, StreamId::MAX, 0usize);
    let mut consumer: Option<&[u8]> = None;
    if !summary {
        let mut at = 3;
        if eq_ic(args[3], "idle") {
            match parse_i64(args[4]) {
                None => return ctx.out.error(ERR_NOT_INT),
                Some(n) => min_idle = n,
            }
            if args.len() < 8 {
                return ctx.syntax_error();
            }
            at += 2;
        }
        let count = match parse_i64(args[at + 2]) {
            None => return ctx.out.error(ERR_NOT_INT),
            Some(n) => n.max(0) as usize,
        };
        let start = match parse_bound(args[at], false) {
            Ok(id) => id,
            Err(e) => return ctx.out.error(e),
        };
        let end = match parse_bound(args[at + 1], true) {
            Ok(id) => id,
            Err(e) => return ctx.out.error(e),
        };
        range = (start, end, count);
        consumer = args.get(at + 3).copied();
    }
    let now = now_ms();
    let read = collection::read(ctx, key, |s: Option<&StreamValue>, out| {
        let Some(g) = s.and_then(|s| s.groups.get(group)) else {
            return out.error_bytes(&nogroup(key, group));
        };
        if summary {
            out.array(4);
            out.int(g.pel.len() as i64);
            let (Some((first, _)), Some((last, _))) =
                (g.pel.iter().next(), g.pel.iter().next_back())
            else {
                out.null();
                out.null();
                return out.null_array();
            };
            reply_id(out, *first);
            reply_id(out, *last);
            let busy: Vec<_> = g
                .consumers
                .iter()
                .filter(|(_, c)| !c.pel.is_empty())
                .collect();
            out.array(busy.len());
            for (name, c) in busy {
                out.array(2);
                out.bulk(name);
                out.bulk(c.pel.len().to_string().as_bytes());
            }
            return;
        }
        let (start, end, count) = range;
        let ids: Box<dyn Iterator<Item = StreamId> + '_> = match consumer {
            Some(name) => match g.consumers.get(name) {
                None => return out.array(0),
                Some(c) if start > end => {
                    let _ = c;
                    Box::new(std::iter::empty())
                }
                Some(c) => Box::new(c.pel.range(start..=end).copied()),
            },
            None if start > end => Box::new(std::iter::empty()),
            None => Box::new(g.pel.range(start..=end).map(|(id, _)| *id)),
        };
        let rows: Vec<(StreamId, &Nack)> = ids
            .filter_map(|id| g.pel.get(&id).map(|n| (id, n)))
            .filter(|(_, n)| min_idle == 0 || now - n.delivery_time >= min_idle)
            .take(count)
            .collect();
        out.array(rows.len());
        for (id, n) in rows {
            out.array(4);
            reply_id(out, id);
            out.bulk(&n.consumer);
            out.int((now - n.delivery_time).max(0));
            out.int(n.delivery_count as i64);
        }
    });
    if read.is_err() {
        ctx.wrongtype();
    }
}

/// XCLAIM's options after the IDs.
struct ClaimOpts {
    force: bool,
    justid: bool,
    delivery_time: Option<i64>,
    retrycount: Option<i64>,
    last_id: StreamId,
}

fn claim_options(args: &Args, from: usize, now: i64) -> Result<ClaimOpts, Vec<u8>> {
    let mut o = ClaimOpts {
        force: false,
        justid: false,
        delivery_time: None,
        retrycount: None,
        last_id: StreamId::MIN,
    };
    let mut j = from;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let opt = args[j];
        if eq_ic(opt, "force") {
            o.force = true;
        } else if eq_ic(opt, "justid") {
            o.justid = true;
        } else if eq_ic(opt, "idle") && more > 0 {
            j += 1;
            let n = parse_i64(args[j]).ok_or("ERR Invalid IDLE option argument for XCLAIM")?;
            o.delivery_time = Some(now.wrapping_sub(n));
        } else if eq_ic(opt, "time") && more > 0 {
            j += 1;
            let n = parse_i64(args[j]).ok_or("ERR Invalid TIME option argument for XCLAIM")?;
            o.delivery_time = Some(n);
        } else if eq_ic(opt, "retrycount") && more > 0 {
            j += 1;
            let n =
                parse_i64(args[j]).ok_or("ERR Invalid RETRYCOUNT option argument for XCLAIM")?;
            o.retrycount = Some(n);
        } else if eq_ic(opt, "lastid") && more > 0 {
            j += 1;
            o.last_id = parse_strict(args[j])?;
        } else {
            return Err(msg(&[b"ERR Unrecognized XCLAIM option '", opt, b"'"]));
        }
        j += 1;
    }
    Ok(o)
}

/// One claimed entry for the reply: its ID and (unless JUSTID) fields.
type Claimed = (StreamId, Option<Vec<(Vec<u8>, Vec<u8>)>>);

fn reply_claimed(out: &mut Out, claimed: &[Claimed]) {
    out.array(claimed.len());
    for (id, fields) in claimed {
        match fields {
            None => reply_id(out, *id),
            Some(f) => {
                out.array(2);
                reply_id(out, *id);
                out.array(f.len() * 2);
                for (a, b) in f {
                    out.bulk(a);
                    out.bulk(b);
                }
            }
        }
    }
}

pub fn xclaim(ctx: &mut Ctx, args: &Args) {
    ctx.count_lookups(&[args[1]]);
    let (key, group, consumer) = (args[1], args[2], args[3]);
    let now = now_ms();
    ctx.write1(key, |tx, db, out| {
        match collection::get::<StreamValue>(tx, db, key) {
            Err(_) => return out.error(ERR_WRONGTYPE),
            Ok(Some(s)) if s.groups.contains_key(group) => {}
            Ok(_) => return out.error_bytes(&nogroup(key, group)),
        }
        let min_idle = match parse_i64(args[4]) {
            None => return out.error("ERR Invalid min-idle-time argument for XCLAIM"),
            Some(n) => n.max(0),
        };
        let mut ids = Vec::new();
        let mut j = 5;
        while j < args.len() {
            match parse_strict(args[j]) {
                Ok(id) => ids.push(id),
                Err(_) => break,
            }
            j += 1;
        }
        let o = match claim_options(args, j, now) {
            Ok(o) => o,
            Err(e) => return out.error_bytes(&e),
        };
        let delivery_time = match o.delivery_time {
            Some(t) if t >= 0 && t <= now => t,
            _ => now,
        };
        let mut records: Vec<Record> = Vec::new();
        let mut created = false;
        let mut propagate_last = false;
        let claimed = with_groups(tx, db, key, |s, groups| {
            let g = groups.get_mut(group).expect("checked above");
            if o.last_id > g.last_id {
                g.last_id = o.last_id;
                propagate_last = true;
            }
            let mut claimed: Vec<Claimed> = Vec::new();
            for id in &ids {
                let id = *id;
                if !s.contains(id) {
                    if let Some(nack) = g.pel.get(&id).cloned() {
                        records.push(xclaim_record(key, group, id, &nack, g.last_id));
                        propagate_last = false;
                        g.ack(id);
                    }
                    continue;
                }
                let mut fresh = false;
                if o.force && !g.pel.contains_key(&id) {
                    g.pel.insert(
                        id,
                        Nack {
                            consumer: consumer.into(),
                            delivery_time: now,
                            delivery_count: 1,
                        },
                    );
                    fresh = true;
                }
                let Some(nack) = g.pel.get(&id) else {
                    continue;
                };
                if !fresh && min_idle > 0 && now - nack.delivery_time < min_idle {
                    continue;
                }
                match g.consumers.get_mut(consumer) {
                    Some(c) => c.seen_time = now,
                    None => {
                        g.create_consumer(consumer, now);
                        created = true;
                    }
                }
                g.assign(id, consumer);
                let nack = g.pel.get_mut(&id).expect("pending");
                nack.delivery_time = delivery_time;
                if let Some(n) = o.retrycount.filter(|n| *n >= 0) {
                    nack.delivery_count = n as u64;
                } else if !o.justid {
                    nack.delivery_count += 1;
                }
                records.push(xclaim_record(key, group, id, nack, g.last_id));
                propagate_last = false;
                let fields = (!o.justid).then(|| {
                    s.get(id)
                        .map(|f| f.map(|(a, b)| (a.to_vec(), b.to_vec())).collect())
                        .unwrap_or_default()
                });
                claimed.push((id, fields));
            }
            if propagate_last {
                records.push(setid_record(key, group, g));
            }
            claimed
        })
        .unwrap_or_default();
        if created {
            tx.notify(STREAM, "xgroup-createconsumer", db, key);
        }
        log_records(tx, db, &records);
        reply_claimed(out, &claimed);
    });
}

pub fn xautoclaim(ctx: &mut Ctx, args: &Args) {
    ctx.count_lookups(&[args[1]]);
    let (key, group, consumer) = (args[1], args[2], args[3]);
    let min_idle = match parse_i64(args[4]) {
        None => {
            return ctx
                .out
                .error("ERR Invalid min-idle-time argument for XAUTOCLAIM")
        }
        Some(n) => n.max(0),
    };
    let start = match parse_bound(args[5], false) {
        Ok(id) => id,
        Err(e) => return ctx.out.error(e),
    };
    let mut count: u64 = 100;
    let mut justid = false;
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if eq_ic(args[j], "count") && more > 0 {
            // Redis bounds COUNT so that count * 10 attempts and count IDs
            // fit in memory arithmetic: LONG_MAX / 16.
            const MAX_COUNT: i64 = i64::MAX / 16;
            match parse_i64(args[j + 1]) {
                Some(n) if (1..=MAX_COUNT).contains(&n) => count = n as u64,
                _ => return ctx.out.error("ERR COUNT must be > 0"),
            }
            j += 1;
        } else if eq_ic(args[j], "justid") {
            justid = true;
        } else {
            return ctx.syntax_error();
        }
        j += 1;
    }
    let now = now_ms();
    ctx.write1(key, |tx, db, out| {
        match collection::get::<StreamValue>(tx, db, key) {
            Err(_) => return out.error(ERR_WRONGTYPE),
            Ok(Some(s)) if s.groups.contains_key(group) => {}
            Ok(_) => return out.error_bytes(&nogroup(key, group)),
        }
        let mut records: Vec<Record> = Vec::new();
        let mut created = false;
        let done = with_groups(tx, db, key, |s, groups| {
            let g = groups.get_mut(group).expect("checked above");
            let mut attempts = count.saturating_mul(10);
            let mut left = count;
            let mut claimed: Vec<Claimed> = Vec::new();
            let mut deleted: Vec<StreamId> = Vec::new();
            let mut cursor = start;
            let mut next = StreamId::MIN;
            while let Some((&id, nack)) = g.pel.range(cursor..).next() {
                if attempts == 0 || left == 0 {
                    next = id;
                    break;
                }
                attempts -= 1;
                cursor = match id.next() {
                    Some(n) => n,
                    None => StreamId::MAX,
                };
                let at_end = id == StreamId::MAX;
                if !s.contains(id) {
                    records.push(xclaim_record(key, group, id, nack, g.last_id));
                    g.ack(id);
                    deleted.push(id);
                    left -= 1;
                } else if min_idle > 0 && now - nack.delivery_time < min_idle {
                    // Not idle long enough.
                } else {
                    match g.consumers.get_mut(consumer) {
                        Some(c) => c.seen_time = now,
                        None => {
                            g.create_consumer(consumer, now);
                            created = true;
                        }
                    }
                    g.assign(id, consumer);
                    let nack = g.pel.get_mut(&id).expect("pending");
                    nack.delivery_time = now;
                    if !justid {
                        nack.delivery_count += 1;
                    }
                    records.push(xclaim_record(key, group, id, nack, g.last_id));
                    let fields = (!justid).then(|| {
                        s.get(id)
                            .map(|f| f.map(|(a, b)| (a.to_vec(), b.to_vec())).collect())
                            .unwrap_or_default()
                    });
                    claimed.push((id, fields));
                    left -= 1;
                }
                if at_end {
                    break;
                }
            }
            (next, claimed, deleted)
        });
        let Some((next, claimed, deleted)) = done else {
            return out.error(ERR_WRONGTYPE);
        };
        if created {
            tx.notify(STREAM, "xgroup-createconsumer", db, key);
        }
        log_records(tx, db, &records);
        out.array(3);
        reply_id(out, next);
        reply_claimed(out, &claimed);
        out.array(deleted.len());
        for id in deleted {
            reply_id(out, id);
        }
    });
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("xgroup", -2, CONTAINER, NOKEYS, "stream", "5.0.0", "A container for consumer groups commands", NO_HANDLER;
        complexity: "Depends on subcommand."),
    cmd!("xgroup|create", -5, WRITE | DENYOOM, (2, 2, 1), "stream", "5.0.0", "Create a consumer group.", create;
        acl: acl::STREAM,
        complexity: "O(1)",
        keys: "RW,insert index:2 range:0:1:0",
        args: "key:key groupname:string id:oneof(id:string new_id:$) mkstream:MKSTREAM? entries_read:integer=ENTRIESREAD?",
        history: &[("7.0.0", "Added the `entries_read` named argument.")]),
    cmd!("xgroup|setid", -5, WRITE, (2, 2, 1), "stream", "5.0.0", "Set a consumer group to an arbitrary last delivered ID value.", setid;
        acl: acl::STREAM,
        complexity: "O(1)",
        keys: "RW,update index:2 range:0:1:0",
        args: "key:key groupname:string id:oneof(id:string new_id:$) entries_read:integer=ENTRIESREAD?",
        history: &[("7.0.0", "Added the optional `entries_read` argument.")]),
    cmd!("xgroup|destroy", 4, WRITE, (2, 2, 1), "stream", "5.0.0", "Destroy a consumer group.", destroy;
        acl: acl::STREAM,
        complexity: "O(N) where N is the number of entries in the group's pending entries list (PEL).",
        keys: "RW,delete index:2 range:0:1:0",
        args: "key:key groupname:string"),
    cmd!("xgroup|createconsumer", 5, WRITE | DENYOOM, (2, 2, 1), "stream", "6.2.0", "Create a consumer in a consumer group.", createconsumer;
        acl: acl::STREAM,
        complexity: "O(1)",
        keys: "RW,insert index:2 range:0:1:0",
        args: "key:key groupname:string consumername:string"),
    cmd!("xgroup|delconsumer", 5, WRITE, (2, 2, 1), "stream", "5.0.0", "Delete a consumer from a consumer group.", delconsumer;
        acl: acl::STREAM,
        complexity: "O(1)",
        keys: "RW,delete index:2 range:0:1:0",
        args: "key:key groupname:string consumername:string"),
    cmd!("xgroup|help", 2, LOADING_OK | STALE, NOKEYS, "stream", "5.0.0", "Show helpful text about the different subcommands", help;
        acl: acl::STREAM,
        complexity: "O(1)"),
    cmd!("xreadgroup", -7, WRITE | BLOCKING, NOKEYS, "stream", "5.0.0", "Return new entries from a stream using a consumer group, or access the history of the pending entries for a given consumer. Can block.", xreadgroup;
        acl: acl::STREAM,
        complexity: "For each stream mentioned: O(M) with M being the number of elements returned. If M is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1). On the other side when XREADGROUP blocks, XADD will pay the O(N) time in order to serve the N clients blocked on the stream getting new data.",
        keys: "RO,access keyword:STREAMS:4 range:-1:1:2",
        args: "group_consumer:block=GROUP(group:string consumer:string) count:integer=COUNT? milliseconds:integer=BLOCK? noack:NOACK? streams:block=STREAMS(key:key* id:string*)"),
    cmd!("xack", -4, WRITE | FAST, KEY1, "stream", "5.0.0", "Marks a pending message as correctly processed, effectively removing it from the pending entries list of the consumer group. Return value of the command is the number of messages successfully acknowledged, that is, the IDs we were actually able to resolve in the PEL.", xack;
        acl: acl::STREAM,
        complexity: "O(1) for each message ID processed.",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key group:string id:string*"),
    cmd!("xpending", -3, READONLY, KEY1, "stream", "5.0.0", "Return information and entries from a stream consumer group pending entries list, that are messages fetched but never acknowledged.", xpending;
        acl: acl::STREAM,
        complexity: "O(N) with N being the number of elements returned, so asking for a small fixed number of entries per call is O(1). O(M), where M is the total number of entries scanned when used with the IDLE filter. When the command returns just the summary and the list of consumers is small, it runs in O(1) time; otherwise, an additional O(N) time for iterating every consumer.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key group:string filters:block?(min-idle-time:integer=IDLE?^6.2.0 start:string end:string count:integer consumer:string?)",
        history: &[("6.2.0", "Added the `IDLE` option and exclusive range intervals.")],
        tips: &["nondeterministic_output"]),
    cmd!("xclaim", -6, WRITE | FAST, KEY1, "stream", "5.0.0", "Changes (or acquires) ownership of a message in a consumer group, as if the message was delivered to the specified consumer.", xclaim;
        acl: acl::STREAM,
        complexity: "O(log N) with N being the number of messages in the PEL of the consumer group.",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key group:string consumer:string min-idle-time:string id:string* ms:integer=IDLE? unix-time-milliseconds:unix-time=TIME? count:integer=RETRYCOUNT? force:FORCE? justid:JUSTID? id:string=LASTID?",
        tips: &["nondeterministic_output"]),
    cmd!("xautoclaim", -6, WRITE | FAST, KEY1, "stream", "6.2.0", "Changes (or acquires) ownership of messages in a consumer group, as if the messages were delivered to the specified consumer.", xautoclaim;
        acl: acl::STREAM,
        complexity: "O(1) if COUNT is small.",
        keys: "RW,delete index:1 range:0:1:0",
        args: "key:key group:string consumer:string min-idle-time:string start:string count:integer=COUNT? justid:JUSTID?",
        history: &[("7.0.0", "Added an element to the reply array, containing deleted entries the command cleared from the PEL")],
        tips: &["nondeterministic_output"]),
];
