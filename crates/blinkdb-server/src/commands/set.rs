//! Set commands (SADD, SPOP, SINTER, SMOVE, SSCAN...), with Redis 7.0's
//! replies, errors, keyspace events and AOF records.

use super::args::{eq_ic, parse_i64, ERR_NOT_INT, ERR_SYNTAX, ERR_WRONGTYPE};
use super::collection::{self, ScanArgs, WrongType};
use super::Ctx;
use crate::protocol::{Args, Out};
use blinkdb_engine::{event::SET, Limits, SetValue, Tx};
use std::borrow::Cow;

/// Members per SREM record when SPOP's effect is logged (Redis batches the
/// same way, so a huge SPOP does not make one huge record).
const SPOP_BATCH: usize = 1024;

fn limits(ctx: &mut Ctx) -> Limits {
    ctx.client.settings(ctx.shared).collection_limits
}

/// A RESP3 set header (an array in RESP2).
fn set_reply(out: &mut Out, items: &[Cow<[u8]>]) {
    out.set(items.len());
    for m in items {
        out.bulk(m);
    }
}

pub fn sadd(ctx: &mut Ctx, args: &Args) {
    let key = args[1];
    let limits = limits(ctx);
    ctx.write1(key, |tx, db, out| {
        let exists = match collection::get::<SetValue>(tx, db, key) {
            Err(_) => return out.error(ERR_WRONGTYPE),
            // Adding only members it has changes nothing (for WATCH too).
            Ok(Some(s)) if args[2..].iter().all(|m| s.contains(m)) => return out.int(0),
            Ok(s) => s.is_some(),
        };
        if !exists {
            tx.insert(
                db,
                key,
                blinkdb_engine::Entry::new(blinkdb_engine::Value::set(SetValue::for_members(
                    args[2],
                    args.len() - 2,
                ))),
            );
        }
        let added = collection::modify(tx, db, key, false, |s: &mut SetValue| {
            args[2..].iter().filter(|m| s.add(m, &limits)).count()
        })
        .ok()
        .flatten()
        .unwrap_or(0);
        if added > 0 {
            tx.log(db, args);
            tx.notify(SET, "sadd", db, key);
        }
        out.int(added as i64);
    });
}

pub fn srem(ctx: &mut Ctx, args: &Args) {
    let key = args[1];
    ctx.write1(key, |tx, db, out| {
        // A removal of nothing changes nothing (for WATCH too).
        match collection::get::<SetValue>(tx, db, key) {
            Err(_) => return out.error(ERR_WRONGTYPE),
            Ok(Some(s)) if args[2..].iter().any(|m| s.contains(m)) => {}
            Ok(_) => return out.int(0),
        }
        let removed = match collection::modify(tx, db, key, false, |s: &mut SetValue| {
            args[2..].iter().filter(|m| s.remove(m)).count()
        }) {
            Err(_) => return out.error(ERR_WRONGTYPE),
            Ok(n) => n.unwrap_or(0),
        };
        if removed > 0 {
            tx.log(db, args);
            tx.notify(SET, "srem", db, key);
            collection::drop_if_empty::<SetValue>(tx, db, key);
        }
        out.int(removed as i64);
    });
}

pub fn sismember(ctx: &mut Ctx, args: &Args) {
    let m = args[2];
    collection::read_or_reply(ctx, args[1], |s: Option<&SetValue>, out| {
        out.int(s.is_some_and(|s| s.contains(m)) as i64)
    });
}

pub fn smismember(ctx: &mut Ctx, args: &Args) {
    let ms = &args[2..];
    collection::read_or_reply(ctx, args[1], |s: Option<&SetValue>, out| {
        out.array(ms.len());
        for m in ms {
            out.int(s.is_some_and(|s| s.contains(m)) as i64);
        }
    });
}

pub fn smembers(ctx: &mut Ctx, args: &Args) {
    collection::read_or_reply(ctx, args[1], |s: Option<&SetValue>, out| {
        out.set(s.map_or(0, |s| s.len()));
        for m in s.iter().flat_map(|s| s.iter()) {
            out.bulk(&m);
        }
    });
}

pub fn scard(ctx: &mut Ctx, args: &Args) {
    collection::read_or_reply(ctx, args[1], |s: Option<&SetValue>, out| {
        out.int(s.map_or(0, |s| s.len()) as i64)
    });
}

/// Logs removed members as SREM records of at most SPOP_BATCH members.
fn log_srem(tx: &mut Tx, db: usize, key: &[u8], members: &[Vec<u8>]) {
    for chunk in members.chunks(SPOP_BATCH) {
        let mut rec: Vec<&[u8]> = vec![b"SREM", key];
        rec.extend(chunk.iter().map(|m| &m[..]));
        tx.log(db, &rec);
    }
}

pub fn spop(ctx: &mut Ctx, args: &Args) {
    let key = args[1];
    let count = match args.get(2) {
        None => None,
        Some(_) if args.len() > 3 => return ctx.out.error(ERR_SYNTAX),
        Some(c) => match parse_i64(c) {
            None => return ctx.out.error(ERR_NOT_INT),
            Some(n) if n < 0 => {
                return ctx.out.error("ERR value is out of range, must be positive")
            }
            Some(n) => Some(n as u64),
        },
    };
    let mut rng = rand::thread_rng();
    ctx.write1(key, |tx, db, out| {
        let size = match collection::get::<SetValue>(tx, db, key) {
            Err(_) => return out.error(ERR_WRONGTYPE),
            Ok(s) => s.map_or(0, |s| s.len()),
        };
        if size == 0 {
            return match count {
                None => out.null(),
                Some(_) => out.set(0),
            };
        }
        let want = count.map_or(1, |c| c.min(size as u64) as usize);
        if want == 0 {
            return out.set(0);
        }
        let popped: Vec<Vec<u8>> = collection::modify(tx, db, key, false, |s: &mut SetValue| {
            let mut popped = Vec::with_capacity(want);
            for _ in 0..want {
                let m = s.random(&mut rng).expect("not empty").into_owned();
                s.remove(&m);
                popped.push(m);
            }
            popped
        })
        .ok()
        .flatten()
        .unwrap_or_default();
        log_srem(tx, db, key, &popped);
        tx.notify(SET, "spop", db, key);
        collection::drop_if_empty::<SetValue>(tx, db, key);
        match count {
            None => out.bulk(&popped[0]),
            Some(_) => {
                out.set(popped.len());
                for m in &popped {
                    out.bulk(m);
                }
            }
        }
    });
}

pub fn srandmember(ctx: &mut Ctx, args: &Args) {
    let mut rng = rand::thread_rng();
    if args.len() == 2 {
        return collection::read_or_reply(ctx, args[1], |s: Option<&SetValue>, out| {
            match s.and_then(|s| s.random(&mut rng)) {
                Some(m) => out.bulk(&m),
                None => out.null(),
            }
        });
    }
    if args.len() > 3 {
        return ctx.out.error(ERR_SYNTAX);
    }
    let count = match parse_i64(args[2]) {
        Some(n) if n != i64::MIN => n,
        Some(_) => {
            return ctx.out.error(
                "ERR value is out of range, value must between -9223372036854775807 and \
                 9223372036854775807",
            )
        }
        None => return ctx.out.error(ERR_NOT_INT),
    };
    if super::random::too_many_repeats(ctx, count) {
        return ctx.out.error("ERR value is out of range");
    }
    collection::read_or_reply(ctx, args[1], |s: Option<&SetValue>, out| {
        let Some(s) = s.filter(|_| count != 0) else {
            return out.array(0);
        };
        if count < 0 {
            let n = count.unsigned_abs() as usize;
            out.array(n);
            for _ in 0..n {
                if out.full() {
                    break;
                }
                out.bulk(&s.random(&mut rng).expect("not empty"));
            }
            return;
        }
        let picked = super::random::distinct(s.len(), count as usize, &mut rng);
        out.array(picked.len());
        match picked {
            super::random::Picked::All(_) => {
                for m in s.iter() {
                    out.bulk(&m);
                }
            }
            super::random::Picked::Some(idx) => {
                let all: Vec<_> = s.iter().collect();
                for i in idx {
                    out.bulk(&all[i]);
                }
            }
        }
    });
}

pub fn smove(ctx: &mut Ctx, args: &Args) {
    let (src, dst, m) = (args[1], args[2], args[3]);
    let db = ctx.db();
    let limits = limits(ctx);
    ctx.write(&[(db, src), (db, dst)], |tx, out| {
        let src_has = match collection::get::<SetValue>(tx, db, src) {
            Err(_) => return out.error(ERR_WRONGTYPE),
            Ok(None) => return out.int(0),
            Ok(s) => s.map(|s| s.contains(m)),
        };
        if collection::get::<SetValue>(tx, db, dst).is_err() {
            return out.error(ERR_WRONGTYPE);
        }
        match src_has {
            None | Some(false) => return out.int(0),
            Some(true) if src == dst => return out.int(1),
            Some(true) => {}
        }
        let _ = collection::modify(tx, db, src, false, |s: &mut SetValue| s.remove(m));
        tx.notify(SET, "srem", db, src);
        collection::drop_if_empty::<SetValue>(tx, db, src);
        // The destination changes (for WATCH too) only if the member is new.
        match collection::get::<SetValue>(tx, db, dst).ok().flatten() {
            Some(d) if d.contains(m) => {}
            found => {
                if found.is_none() {
                    let fresh = blinkdb_engine::Value::set(SetValue::for_member(m));
                    tx.insert(db, dst, blinkdb_engine::Entry::new(fresh));
                }
                let _ =
                    collection::modify(tx, db, dst, false, |s: &mut SetValue| s.add(m, &limits));
                tx.notify(SET, "sadd", db, dst);
            }
        }
        tx.log(db, args);
        out.int(1);
    });
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// The members of `op` over `keys` (every key type-checked first, as Redis
/// does), or WRONGTYPE. `limit` stops an intersection early (SINTERCARD).
fn combine(
    tx: &mut Tx,
    db: usize,
    keys: &[&[u8]],
    op: Op,
    limit: usize,
) -> Result<Vec<Vec<u8>>, WrongType> {
    let mut sets = Vec::with_capacity(keys.len());
    for k in keys {
        sets.push(collection::get_shared::<SetValue>(tx, db, k)?);
    }
    let sets: Vec<Option<&SetValue>> = sets.iter().map(|s| s.as_deref()).collect();
    Ok(combine_sets(&sets, op, limit))
}

fn combine_sets(sets: &[Option<&SetValue>], op: Op, limit: usize) -> Vec<Vec<u8>> {
    match op {
        Op::Inter => {
            if sets.iter().any(|s| s.is_none_or(|s| s.is_empty())) {
                return Vec::new();
            }
            let mut order: Vec<&SetValue> = sets.iter().flatten().copied().collect();
            order.sort_by_key(|s| s.len());
            let mut out = Vec::new();
            for m in order[0].iter() {
                if order[1..].iter().all(|s| s.contains(&m)) {
                    out.push(m.into_owned());
                    if limit != 0 && out.len() >= limit {
                        break;
                    }
                }
            }
            out
        }
        Op::Union => {
            let mut seen = hashbrown::HashSet::new();
            let mut out = Vec::new();
            for s in sets.iter().flatten() {
                for m in s.iter() {
                    if seen.insert(m.clone().into_owned()) {
                        out.push(m.into_owned());
                    }
                }
            }
            out
        }
        Op::Diff => {
            let Some(Some(first)) = sets.first() else {
                return Vec::new();
            };
            first
                .iter()
                .filter(|m| !sets[1..].iter().flatten().any(|s| s.contains(m)))
                .map(|m| m.into_owned())
                .collect()
        }
    }
}

fn db_keys<'a>(db: usize, keys: &[&'a [u8]]) -> Vec<(usize, &'a [u8])> {
    keys.iter().map(|k| (db, *k)).collect()
}

fn combine_reply(ctx: &mut Ctx, args: &Args, op: Op) {
    let db = ctx.db();
    let keys = &args[1..];
    let found = ctx.write(&db_keys(db, keys), |tx, _| combine(tx, db, keys, op, 0));
    match found {
        Err(_) => ctx.wrongtype(),
        Ok(members) => {
            let items: Vec<Cow<[u8]>> = members.into_iter().map(Cow::Owned).collect();
            set_reply(ctx.out, &items)
        }
    }
}

fn combine_store(ctx: &mut Ctx, args: &Args, op: Op, event: &'static str) {
    let db = ctx.db();
    let dst = args[1];
    let keys = &args[2..];
    let mut locked = db_keys(db, keys);
    locked.push((db, dst));
    let limits = limits(ctx);
    ctx.write(&locked, |tx, out| {
        let members = match combine(tx, db, keys, op, 0) {
            Err(_) => return out.error(ERR_WRONGTYPE),
            Ok(m) => m,
        };
        let mut set = SetValue::for_member(members.first().map_or(&b"0"[..], |m| &m[..]));
        for m in &members {
            set.add(m, &limits);
        }
        let n = set.len();
        let existed = collection::store(tx, db, dst, set);
        tx.log(db, args);
        if n > 0 {
            tx.notify(SET, event, db, dst);
        } else if existed {
            tx.notify(blinkdb_engine::event::GENERIC, "del", db, dst);
        }
        out.int(n as i64);
    });
}

pub fn sinter(ctx: &mut Ctx, args: &Args) {
    ctx.count_lookups(&args[1..]);
    combine_reply(ctx, args, Op::Inter);
}

pub fn sunion(ctx: &mut Ctx, args: &Args) {
    ctx.count_lookups(&args[1..]);
    combine_reply(ctx, args, Op::Union);
}

pub fn sdiff(ctx: &mut Ctx, args: &Args) {
    ctx.count_lookups(&args[1..]);
    combine_reply(ctx, args, Op::Diff);
}

pub fn sinterstore(ctx: &mut Ctx, args: &Args) {
    combine_store(ctx, args, Op::Inter, "sinterstore");
}

pub fn sunionstore(ctx: &mut Ctx, args: &Args) {
    combine_store(ctx, args, Op::Union, "sunionstore");
}

pub fn sdiffstore(ctx: &mut Ctx, args: &Args) {
    combine_store(ctx, args, Op::Diff, "sdiffstore");
}

pub fn sintercard(ctx: &mut Ctx, args: &Args) {
    ctx.count_lookups(super::numkeys_args(args, 1));
    let n = match parse_i64(args[1]) {
        Some(n) if n > 0 => n as usize,
        _ => return ctx.out.error("ERR numkeys should be greater than 0"),
    };
    if n > args.len() - 2 {
        return ctx
            .out
            .error("ERR Number of keys can't be greater than number of args");
    }
    let keys = &args[2..2 + n];
    let mut limit = 0;
    let mut i = 2 + n;
    while i < args.len() {
        if eq_ic(args[i], "limit") && i + 1 < args.len() {
            match parse_i64(args[i + 1]) {
                Some(l) if l >= 0 => limit = l as usize,
                _ => return ctx.out.error("ERR LIMIT can't be negative"),
            }
            i += 2;
        } else {
            return ctx.syntax_error();
        }
    }
    let db = ctx.db();
    let found = ctx.write(&db_keys(db, keys), |tx, _| {
        combine(tx, db, keys, Op::Inter, limit)
    });
    match found {
        Err(_) => ctx.wrongtype(),
        Ok(m) => ctx.out.int(m.len() as i64),
    }
}

pub fn sscan(ctx: &mut Ctx, args: &Args) {
    let scan = match ScanArgs::parse(args) {
        Ok(s) => s,
        Err(e) => return ctx.out.error(e),
    };
    collection::read_or_reply(ctx, args[1], |s: Option<&SetValue>, out| {
        if scan.novalues && s.is_some() {
            return out.error(collection::ERR_NOVALUES);
        }
        let (items, next) = s.map_or((Vec::new(), 0), |s| s.scan(scan.cursor, scan.count));
        let items: Vec<_> = items.into_iter().filter(|m| scan.matches(m)).collect();
        out.array(2);
        out.bulk(next.to_string().as_bytes());
        out.array(items.len());
        for m in items {
            out.bulk(&m);
        }
    });
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("sadd", -3, WRITE | DENYOOM | FAST, KEY1, "set", "1.0.0", "Add one or more members to a set", sadd;
        acl: acl::SET,
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        keys: "RW,insert index:1 range:0:1:0",
        args: "key:key member:string*",
        history: &[("2.4.0", "Accepts multiple `member` arguments.")]),
    cmd!("srem", -3, WRITE | FAST, KEY1, "set", "1.0.0", "Remove one or more members from a set", srem;
        acl: acl::SET,
        complexity: "O(N) where N is the number of members to be removed.",
        keys: "RW,delete index:1 range:0:1:0",
        args: "key:key member:string*",
        history: &[("2.4.0", "Accepts multiple `member` arguments.")]),
    cmd!("sismember", 3, READONLY | FAST, KEY1, "set", "1.0.0", "Determine if a given value is a member of a set", sismember;
        acl: acl::SET,
        complexity: "O(1)",
        keys: "RO index:1 range:0:1:0",
        args: "key:key member:string"),
    cmd!("smismember", -3, READONLY | FAST, KEY1, "set", "6.2.0", "Returns the membership associated with the given elements for a set", smismember;
        acl: acl::SET,
        complexity: "O(N) where N is the number of elements being checked for membership",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key member:string*"),
    cmd!("smembers", 2, READONLY, KEY1, "set", "1.0.0", "Get all the members in a set", smembers;
        acl: acl::SET,
        complexity: "O(N) where N is the set cardinality.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key",
        tips: &["nondeterministic_output_order"]),
    cmd!("scard", 2, READONLY | FAST, KEY1, "set", "1.0.0", "Get the number of members in a set", scard;
        acl: acl::SET,
        complexity: "O(1)",
        keys: "RO index:1 range:0:1:0",
        args: "key:key"),
    cmd!("spop", -2, WRITE | FAST, KEY1, "set", "1.0.0", "Remove and return one or multiple random members from a set", spop;
        acl: acl::SET,
        complexity: "Without the count argument O(1), otherwise O(N) where N is the value of the passed count.",
        keys: "RW,access,delete index:1 range:0:1:0",
        args: "key:key count:integer?^3.2.0",
        history: &[("3.2.0", "Added the `count` argument.")],
        tips: &["nondeterministic_output"]),
    cmd!("srandmember", -2, READONLY, KEY1, "set", "1.0.0", "Get one or multiple random members from a set", srandmember;
        acl: acl::SET,
        complexity: "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key count:integer?^2.6.0",
        history: &[("2.6.0", "Added the optional `count` argument.")],
        tips: &["nondeterministic_output"]),
    cmd!("smove", 4, WRITE | FAST, (1, 2, 1), "set", "1.0.0", "Move a member from one set to another", smove;
        acl: acl::SET,
        complexity: "O(1)",
        keys: "RW,access,delete index:1 range:0:1:0; RW,insert index:2 range:0:1:0",
        args: "source:key destination:key#1 member:string"),
    cmd!("sinter", -2, READONLY, ALLKEYS, "set", "1.0.0", "Intersect multiple sets", sinter;
        acl: acl::SET,
        complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
        keys: "RO,access index:1 range:-1:1:0",
        args: "key:key*",
        tips: &["nondeterministic_output_order"]),
    cmd!("sintercard", -3, READONLY, NOKEYS, "set", "7.0.0", "Intersect multiple sets and return the cardinality of the result", sintercard;
        acl: acl::SET,
        complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
        keys: "RO,access index:1 keynum:0:1:1",
        args: "numkeys:integer key:key* limit:integer=LIMIT?"),
    cmd!("sinterstore", -3, WRITE | DENYOOM, ALLKEYS, "set", "1.0.0", "Intersect multiple sets and store the resulting set in a key", sinterstore;
        acl: acl::SET,
        complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
        keys: "RW,update index:1 range:0:1:0; RO,access index:2 range:-1:1:0",
        args: "destination:key key:key#1*"),
    cmd!("sunion", -2, READONLY, ALLKEYS, "set", "1.0.0", "Add multiple sets", sunion;
        acl: acl::SET,
        complexity: "O(N) where N is the total number of elements in all given sets.",
        keys: "RO,access index:1 range:-1:1:0",
        args: "key:key*",
        tips: &["nondeterministic_output_order"]),
    cmd!("sunionstore", -3, WRITE | DENYOOM, ALLKEYS, "set", "1.0.0", "Add multiple sets and store the resulting set in a key", sunionstore;
        acl: acl::SET,
        complexity: "O(N) where N is the total number of elements in all given sets.",
        keys: "OW,update index:1 range:0:1:0; RO,access index:2 range:-1:1:0",
        args: "destination:key key:key#1*"),
    cmd!("sdiff", -2, READONLY, ALLKEYS, "set", "1.0.0", "Subtract multiple sets", sdiff;
        acl: acl::SET,
        complexity: "O(N) where N is the total number of elements in all given sets.",
        keys: "RO,access index:1 range:-1:1:0",
        args: "key:key*",
        tips: &["nondeterministic_output_order"]),
    cmd!("sdiffstore", -3, WRITE | DENYOOM, ALLKEYS, "set", "1.0.0", "Subtract multiple sets and store the resulting set in a key", sdiffstore;
        acl: acl::SET,
        complexity: "O(N) where N is the total number of elements in all given sets.",
        keys: "OW,update index:1 range:0:1:0; RO,access index:2 range:-1:1:0",
        args: "destination:key key:key#1*"),
    cmd!("sscan", -3, READONLY, KEY1, "set", "2.8.0", "Incrementally iterate Set elements", sscan;
        acl: acl::SET,
        complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key cursor:integer pattern:pattern=MATCH? count:integer=COUNT?",
        tips: &["nondeterministic_output"]),
];
