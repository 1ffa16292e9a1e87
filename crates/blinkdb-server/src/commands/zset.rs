//! Sorted-set commands on members and scores (ZADD, ZINCRBY, ZREM, ZSCORE,
//! ZRANK, ZPOPMIN, ZRANDMEMBER, ZSCAN...), with Redis 7.0's replies, errors,
//! keyspace events and AOF records. Ranges are in `zrange.rs`, the set
//! algebra in `zsetops.rs`.

use super::args::{eq_ic, parse_cursor, parse_i64, ERR_SYNTAX, ERR_WRONGTYPE};
use super::collection::{self, ScanArgs};
use super::Ctx;
use crate::protocol::{Args, Out};
use blinkdb_engine::{event::ZSET, Limits, ZSetValue};
use smallvec::SmallVec;

pub const ERR_NOT_FLOAT: &str = "ERR value is not a valid float";
const ERR_NAN: &str = "ERR resulting score is not a number (NaN)";
const ERR_NOT_POSITIVE: &str = "ERR value is out of range, must be positive";

pub fn limits(ctx: &mut Ctx) -> Limits {
    ctx.client.settings(ctx.shared).collection_limits
}

/// C's strtod over `s` as Redis hands it a NUL-terminated sds: the value and
/// how many bytes it read (it stops at an embedded NUL, as C does).
pub fn strtod(s: &[u8]) -> (f64, usize, bool) {
    match strtod_plain(s) {
        Some(v) => (v, s.len(), false),
        None => strtod_libc(s),
    }
}

/// What strtod reads from the plain forms clients send most (a score bound
/// or a ZADD score): an optional sign, then up to 15 digits (an integer
/// below 2^53, so exact) or `inf`. None for anything else.
fn strtod_plain(s: &[u8]) -> Option<f64> {
    let (neg, body) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let v = if body == b"inf" {
        f64::INFINITY
    } else if !body.is_empty() && body.len() <= 15 && body.iter().all(u8::is_ascii_digit) {
        body.iter().fold(0u64, |n, &d| n * 10 + u64::from(d - b'0')) as f64
    } else {
        return None;
    };
    Some(if neg { -v } else { v })
}

fn strtod_libc(s: &[u8]) -> (f64, usize, bool) {
    // On the stack for the usual short argument (a score bound per call).
    let mut buf: SmallVec<[u8; 64]> = SmallVec::with_capacity(s.len() + 1);
    buf.extend_from_slice(s);
    buf.push(0);
    let mut end: *mut libc::c_char = std::ptr::null_mut();
    // SAFETY: `buf` is NUL-terminated and outlives the call; errno is this
    // thread's and is read right after.
    let (v, erange) = unsafe {
        *libc::__errno_location() = 0;
        let v = libc::strtod(buf.as_ptr() as *const libc::c_char, &mut end);
        (v, *libc::__errno_location() == libc::ERANGE)
    };
    let used = end as usize - buf.as_ptr() as usize;
    (v, used, erange)
}

/// A score or weight argument, read as Redis's string2d does: the whole
/// argument through strtod, no leading space, no overflow or underflow to
/// zero, not NaN. `inf`, `-inf` and `+inf` are scores.
pub fn parse_score(s: &[u8]) -> Option<f64> {
    if s.is_empty() || s[0].is_ascii_whitespace() || s[0] == 0x0b || s[0] == 0x0c {
        return None;
    }
    let (v, used, erange) = strtod(s);
    let overflow = erange && (v.is_infinite() || v == 0.0);
    (used == s.len() && !overflow && !v.is_nan()).then_some(v)
}

/// A count that must not be negative (getPositiveLongFromObjectOrReply:
/// one error text for both a non-integer and a negative count).
fn positive_count(arg: &[u8]) -> Result<i64, &'static str> {
    match parse_i64(arg) {
        Some(n) if n >= 0 => Ok(n),
        _ => Err(ERR_NOT_POSITIVE),
    }
}

#[derive(Default, Clone, Copy)]
struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

fn zadd_generic(ctx: &mut Ctx, args: &Args, mut flags: AddFlags) {
    let key = args[1];
    let mut at = 2;
    while at < args.len() {
        let opt = args[at];
        if eq_ic(opt, "nx") {
            flags.nx = true;
        } else if eq_ic(opt, "xx") {
            flags.xx = true;
        } else if eq_ic(opt, "ch") {
            flags.ch = true;
        } else if eq_ic(opt, "incr") {
            flags.incr = true;
        } else if eq_ic(opt, "gt") {
            flags.gt = true;
        } else if eq_ic(opt, "lt") {
            flags.lt = true;
        } else {
            break;
        }
        at += 1;
    }
    let pairs = &args[at..];
    if pairs.is_empty() || !pairs.len().is_multiple_of(2) {
        return ctx.out.error(ERR_SYNTAX);
    }
    let f = flags;
    if f.nx && f.xx {
        return ctx
            .out
            .error("ERR XX and NX options at the same time are not compatible");
    }
    if (f.nx && (f.gt || f.lt)) || (f.gt && f.lt) {
        return ctx
            .out
            .error("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if f.incr && pairs.len() > 2 {
        return ctx
            .out
            .error("ERR INCR option supports a single increment-element pair");
    }
    let mut scores = Vec::with_capacity(pairs.len() / 2);
    for p in pairs.chunks(2) {
        match parse_score(p[0]) {
            Some(s) => scores.push(s),
            None => return ctx.out.error(ERR_NOT_FLOAT),
        }
    }
    let limits = limits(ctx);
    ctx.write1(key, |tx, db, out| {
        let exists = match collection::get::<ZSetValue>(tx, db, key) {
            Err(_) => return out.error(ERR_WRONGTYPE),
            Ok(z) => z.is_some(),
        };
        let (mut added, mut updated, mut processed) = (0i64, 0i64, 0);
        let mut last = 0.0;
        let mut nan = false;
        if exists || !f.xx {
            let _ = collection::modify(tx, db, key, true, |z: &mut ZSetValue| {
                for (p, &score) in pairs.chunks(2).zip(&scores) {
                    let member = p[1];
                    match z.score(member) {
                        Some(cur) => {
                            if f.nx {
                                continue;
                            }
                            let new = if f.incr { score + cur } else { score };
                            if new.is_nan() {
                                nan = true;
                                return;
                            }
                            if (f.lt && new >= cur) || (f.gt && new <= cur) {
                                continue;
                            }
                            last = new;
                            processed += 1;
                            // -0 and 0 are equal: the stored score stays.
                            if new != cur {
                                z.insert(member, new, &limits);
                                updated += 1;
                            }
                        }
                        None if f.xx => {}
                        None => {
                            z.insert(member, score, &limits);
                            last = score;
                            added += 1;
                            processed += 1;
                        }
                    }
                }
            });
        }
        if added + updated > 0 {
            tx.log(db, args);
            tx.notify(ZSET, if f.incr { "zincr" } else { "zadd" }, db, key);
        }
        if nan {
            return out.error(ERR_NAN);
        }
        if f.incr {
            if processed > 0 {
                out.double(last)
            } else {
                out.null()
            }
        } else {
            out.int(if f.ch { added + updated } else { added })
        }
    });
}

pub fn zadd(ctx: &mut Ctx, args: &Args) {
    zadd_generic(ctx, args, AddFlags::default());
}

pub fn zincrby(ctx: &mut Ctx, args: &Args) {
    // ZINCRBY key increment member: ZADD's INCR path on the same arguments.
    let Some(by) = parse_score(args[2]) else {
        return ctx.out.error(ERR_NOT_FLOAT);
    };
    let (key, member) = (args[1], args[3]);
    let limits = limits(ctx);
    ctx.write1(key, |tx, db, out| {
        let cur = match collection::get::<ZSetValue>(tx, db, key) {
            Err(_) => return out.error(ERR_WRONGTYPE),
            Ok(z) => z.and_then(|z| z.score(member)),
        };
        // A new member takes the increment itself (-0 stays -0).
        let new = cur.map_or(by, |c| by + c);
        if new.is_nan() {
            return out.error(ERR_NAN);
        }
        if cur != Some(new) {
            let _ = collection::modify(tx, db, key, true, |z: &mut ZSetValue| {
                z.insert(member, new, &limits)
            });
            tx.log(db, args);
            tx.notify(ZSET, "zincr", db, key);
        }
        out.double(new);
    });
}

pub fn zrem(ctx: &mut Ctx, args: &Args) {
    let key = args[1];
    ctx.write1(key, |tx, db, out| {
        let removed = collection::modify(tx, db, key, false, |z: &mut ZSetValue| {
            let mut n = 0;
            for m in &args[2..] {
                if z.remove(m).is_some() {
                    n += 1;
                }
                if z.is_empty() {
                    break;
                }
            }
            n
        });
        let removed = match removed {
            Err(_) => return out.error(ERR_WRONGTYPE),
            Ok(n) => n.unwrap_or(0),
        };
        if removed > 0 {
            tx.log(db, args);
            tx.notify(ZSET, "zrem", db, key);
            collection::drop_if_empty::<ZSetValue>(tx, db, key);
        }
        out.int(removed);
    });
}

pub fn zcard(ctx: &mut Ctx, args: &Args) {
    collection::read_or_reply(ctx, args[1], |z: Option<&ZSetValue>, out| {
        out.int(z.map_or(0, |z| z.len()) as i64)
    });
}

pub fn zscore(ctx: &mut Ctx, args: &Args) {
    let member = args[2];
    collection::read_or_reply(ctx, args[1], |z: Option<&ZSetValue>, out| {
        match z.and_then(|z| z.score(member)) {
            Some(s) => out.double(s),
            None => out.null(),
        }
    });
}

pub fn zmscore(ctx: &mut Ctx, args: &Args) {
    let members = &args[2..];
    collection::read_or_reply(ctx, args[1], |z: Option<&ZSetValue>, out| {
        out.array(members.len());
        for m in members {
            match z.and_then(|z| z.score(m)) {
                Some(s) => out.double(s),
                None => out.null(),
            }
        }
    });
}

/// ZRANK/ZREVRANK key member [WITHSCORE] (the option is Redis 7.2's: the
/// rank and the score as a pair, a null array for a missing member).
fn rank_generic(ctx: &mut Ctx, args: &Args, rev: bool) {
    if args.len() > 4 {
        return ctx.arity_error(if rev { "zrevrank" } else { "zrank" });
    }
    let with_score = match args.get(3) {
        None => false,
        Some(a) if eq_ic(a, "withscore") => true,
        Some(_) => return ctx.syntax_error(),
    };
    let member = args[2];
    collection::read_or_reply(ctx, args[1], |z: Option<&ZSetValue>, out| {
        let found = z.and_then(|z| Some((z.rank(member)?, z.len(), z.score(member)?)));
        match found {
            Some((r, len, score)) => {
                let rank = if rev { len - 1 - r } else { r } as i64;
                if with_score {
                    out.array(2);
                    out.int(rank);
                    out.double(score);
                } else {
                    out.int(rank);
                }
            }
            None if with_score => out.null_array(),
            None => out.null(),
        }
    });
}

pub fn zrank(ctx: &mut Ctx, args: &Args) {
    rank_generic(ctx, args, false);
}

pub fn zrevrank(ctx: &mut Ctx, args: &Args) {
    rank_generic(ctx, args, true);
}

/// Pops up to `count` members from one end of `key`'s set (the caller
/// checked its type); returns them. Sends the pop event, and `del` when the
/// set is left empty.
pub(super) fn pop_members(
    tx: &mut blinkdb_engine::Tx,
    db: usize,
    key: &[u8],
    count: usize,
    max: bool,
) -> Vec<(Vec<u8>, f64)> {
    let popped = collection::modify(tx, db, key, false, |z: &mut ZSetValue| {
        let n = count.min(z.len());
        let items: Vec<(Vec<u8>, f64)> = z
            .range(0, max)
            .take(n)
            .map(|(m, s)| (m.to_vec(), s))
            .collect();
        let len = z.len();
        if max {
            z.remove_ranks(len - n, len);
        } else {
            z.remove_ranks(0, n);
        }
        items
    });
    let items = popped.ok().flatten().unwrap_or_default();
    if !items.is_empty() {
        tx.notify(ZSET, if max { "zpopmax" } else { "zpopmin" }, db, key);
        collection::drop_if_empty::<ZSetValue>(tx, db, key);
    }
    items
}

/// Members and scores: a flat array, or with `nested` an array of pairs.
pub(super) fn reply_pairs(out: &mut Out, items: &[(Vec<u8>, f64)], nested: bool) {
    out.array(if nested { items.len() } else { items.len() * 2 });
    for (m, s) in items {
        if nested {
            out.array(2);
        }
        out.bulk(m);
        out.double(*s);
    }
}

fn pop_generic(ctx: &mut Ctx, args: &Args, max: bool) {
    if args.len() > 3 {
        return ctx.out.error(ERR_SYNTAX);
    }
    let count = match args.get(2).map(|a| positive_count(a)) {
        None => None,
        Some(Ok(n)) => Some(n as usize),
        Some(Err(e)) => return ctx.out.error(e),
    };
    let key = args[1];
    ctx.write1(key, |tx, db, out| {
        match collection::get::<ZSetValue>(tx, db, key) {
            Err(_) => return out.error(ERR_WRONGTYPE),
            Ok(None) => return out.array(0),
            Ok(Some(_)) if count == Some(0) => return out.array(0),
            Ok(Some(_)) => {}
        }
        let items = pop_members(tx, db, key, count.unwrap_or(1), max);
        tx.log(db, args);
        let nested = out.resp3() && count.is_some();
        reply_pairs(out, &items, nested);
    });
}

pub fn zpopmin(ctx: &mut Ctx, args: &Args) {
    pop_generic(ctx, args, false);
}

pub fn zpopmax(ctx: &mut Ctx, args: &Args) {
    pop_generic(ctx, args, true);
}

/// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]: pops from the first
/// non-empty key; logged as ZPOPMIN/ZPOPMAX key count, as Redis does.
pub fn zmpop(ctx: &mut Ctx, args: &Args) {
    let (keys, which, count) = match collection::mpop_args(args, 1, ["min", "max"]) {
        Ok(parsed) => parsed,
        Err(e) => return ctx.out.error(e),
    };
    let max = which == 1;
    let db = ctx.db();
    let keys: Vec<(usize, &[u8])> = keys.iter().map(|k| (db, &k[..])).collect();
    ctx.write(&keys, |tx, out| {
        for (_, key) in &keys {
            match collection::get::<ZSetValue>(tx, db, key) {
                Err(_) => return out.error(ERR_WRONGTYPE),
                Ok(None) => continue,
                Ok(Some(_)) => {}
            }
            let items = pop_members(tx, db, key, count, max);
            let n = items.len().to_string();
            let cmd: &[u8] = if max { b"ZPOPMAX" } else { b"ZPOPMIN" };
            tx.log(db, &[cmd, key, n.as_bytes()]);
            out.array(2);
            out.bulk(key);
            return reply_pairs(out, &items, true);
        }
        out.null_array();
    });
}

/// One member, or a member and its score (RESP3 pairs them in an array).
fn random_item(out: &mut Out, m: &[u8], s: f64, scores: bool) {
    if scores && out.resp3() {
        out.array(2);
    }
    out.bulk(m);
    if scores {
        out.double(s);
    }
}

pub fn zrandmember(ctx: &mut Ctx, args: &Args) {
    if args.len() == 2 {
        let mut rng = rand::thread_rng();
        return collection::read_or_reply(ctx, args[1], |z: Option<&ZSetValue>, out| {
            match z.and_then(|z| z.random(&mut rng)) {
                Some((m, _)) => out.bulk(m),
                None => out.null(),
            }
        });
    }
    let Some((count, scores)) = super::random::count_args(ctx, args, "withscores") else {
        return;
    };
    let mut rng = rand::thread_rng();
    collection::read_or_reply(ctx, args[1], |z: Option<&ZSetValue>, out| {
        let Some(z) = z.filter(|_| count != 0) else {
            return out.array(0);
        };
        let per = if scores && !out.resp3() { 2 } else { 1 };
        if count < 0 || count == 1 {
            // Repeats allowed: each pick is independent.
            let n = count.unsigned_abs() as usize;
            out.array(n * per);
            for _ in 0..n {
                if out.full() {
                    break;
                }
                let (m, s) = z.random(&mut rng).expect("not empty");
                random_item(out, m, s, scores);
            }
            return;
        }
        let picked = super::random::distinct(z.len(), count as usize, &mut rng);
        out.array(picked.len() * per);
        match picked {
            super::random::Picked::All(_) => {
                for (m, s) in z.iter() {
                    random_item(out, m, s, scores);
                }
            }
            super::random::Picked::Some(ranks) => {
                for r in ranks {
                    let (m, s) = z.nth(r);
                    random_item(out, m, s, scores);
                }
            }
        }
    });
}

/// A score as the compact encoding stores it (Redis's d2string): an
/// integer when it is one within ±2^62, else `%.17g`. ZSCAN of a small set
/// returns these texts.
fn packed_score_text(s: f64) -> String {
    const LIM: f64 = (i64::MAX / 2) as f64;
    if s.is_finite() && s != 0.0 && (-LIM..=LIM).contains(&s) && s.trunc() == s {
        return (s as i64).to_string();
    }
    blinkdb_engine::fmt_double(s)
}

pub fn zscan(ctx: &mut Ctx, args: &Args) {
    if parse_cursor(args[2]).is_none() {
        return ctx.out.error("ERR invalid cursor");
    }
    collection::read_or_reply(ctx, args[1], |z: Option<&ZSetValue>, out| {
        let Some(z) = z else {
            out.array(2);
            out.bulk(b"0");
            return out.array(0);
        };
        let scan = match ScanArgs::parse(args) {
            Ok(s) if s.novalues => return out.error(collection::ERR_NOVALUES),
            Ok(s) => s,
            Err(e) => return out.error(e),
        };
        let compact = z.encoding() == "listpack";
        let (items, next) = z.scan(scan.cursor, scan.count);
        let items: Vec<_> = items.into_iter().filter(|(m, _)| scan.matches(m)).collect();
        out.array(2);
        out.bulk(next.to_string().as_bytes());
        out.array(items.len() * 2);
        for (m, s) in items {
            out.bulk(m);
            if compact {
                out.bulk(packed_score_text(s).as_bytes());
            } else {
                out.bulk(blinkdb_engine::fmt_double(s).as_bytes());
            }
        }
    });
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("zadd", -4, WRITE | DENYOOM | FAST, KEY1, "sorted-set", "1.2.0", "Add one or more members to a sorted set, or update its score if it already exists", zadd;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key condition:oneof?^3.0.2(nx:NX xx:XX) comparison:oneof?^6.2.0(gt:GT lt:LT) change:CH?^3.0.2 increment:INCR?^3.0.2 score_member:block*(score:double member:string)",
        history: &[("2.4.0", "Accepts multiple elements."), ("3.0.2", "Added the `XX`, `NX`, `CH` and `INCR` options."), ("6.2.0", "Added the `GT` and `LT` options.")]),
    cmd!("zincrby", 4, WRITE | DENYOOM | FAST, KEY1, "sorted-set", "1.2.0", "Increment the score of a member in a sorted set", zincrby;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)) where N is the number of elements in the sorted set.",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key increment:integer member:string"),
    cmd!("zrem", -3, WRITE | FAST, KEY1, "sorted-set", "1.2.0", "Remove one or more members from a sorted set", zrem;
        acl: acl::SORTEDSET,
        complexity: "O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed.",
        keys: "RW,delete index:1 range:0:1:0",
        args: "key:key member:string*",
        history: &[("2.4.0", "Accepts multiple elements.")]),
    cmd!("zcard", 2, READONLY | FAST, KEY1, "sorted-set", "1.2.0", "Get the number of members in a sorted set", zcard;
        acl: acl::SORTEDSET,
        complexity: "O(1)",
        keys: "RO index:1 range:0:1:0",
        args: "key:key"),
    cmd!("zscore", 3, READONLY | FAST, KEY1, "sorted-set", "1.2.0", "Get the score associated with the given member in a sorted set", zscore;
        acl: acl::SORTEDSET,
        complexity: "O(1)",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key member:string"),
    cmd!("zmscore", -3, READONLY | FAST, KEY1, "sorted-set", "6.2.0", "Get the score associated with the given members in a sorted set", zmscore;
        acl: acl::SORTEDSET,
        complexity: "O(N) where N is the number of members being requested.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key member:string*"),
    cmd!("zrank", -3, READONLY | FAST, KEY1, "sorted-set", "2.0.0", "Determine the index of a member in a sorted set", zrank;
        acl: acl::SORTEDSET,
        complexity: "O(log(N))",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key member:string withscore:WITHSCORE?",
        history: &[("7.2.0", "Added the optional `WITHSCORE` argument.")]),
    cmd!("zrevrank", -3, READONLY | FAST, KEY1, "sorted-set", "2.0.0", "Determine the index of a member in a sorted set, with scores ordered from high to low", zrevrank;
        acl: acl::SORTEDSET,
        complexity: "O(log(N))",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key member:string withscore:WITHSCORE?",
        history: &[("7.2.0", "Added the optional `WITHSCORE` argument.")]),
    cmd!("zpopmin", -2, WRITE | FAST, KEY1, "sorted-set", "5.0.0", "Remove and return members with the lowest scores in a sorted set", zpopmin;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.",
        keys: "RW,access,delete index:1 range:0:1:0",
        args: "key:key count:integer?"),
    cmd!("zpopmax", -2, WRITE | FAST, KEY1, "sorted-set", "5.0.0", "Remove and return members with the highest scores in a sorted set", zpopmax;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.",
        keys: "RW,access,delete index:1 range:0:1:0",
        args: "key:key count:integer?"),
    cmd!("zmpop", -4, WRITE, NOKEYS, "sorted-set", "7.0.0", "Remove and return members with scores in a sorted set", zmpop;
        acl: acl::SORTEDSET,
        complexity: "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
        keys: "RW,access,delete index:1 keynum:0:1:1",
        args: "numkeys:integer key:key* where:oneof(min:MIN max:MAX) count:integer=COUNT?"),
    cmd!("zrandmember", -2, READONLY, KEY1, "sorted-set", "6.2.0", "Get one or multiple random elements from a sorted set", zrandmember;
        acl: acl::SORTEDSET,
        complexity: "O(N) where N is the number of elements returned",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key options:block?(count:integer withscores:WITHSCORES?)",
        tips: &["nondeterministic_output"]),
    cmd!("zscan", -3, READONLY, KEY1, "sorted-set", "2.8.0", "Incrementally iterate sorted sets elements and associated scores", zscan;
        acl: acl::SORTEDSET,
        complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key cursor:integer pattern:pattern=MATCH? count:integer=COUNT?",
        tips: &["nondeterministic_output"]),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_follow_string2d() {
        for (text, want) in [
            ("1", 1.0),
            ("-2.5", -2.5),
            ("inf", f64::INFINITY),
            ("+inf", f64::INFINITY),
            ("-inf", f64::NEG_INFINITY),
            ("1e3", 1000.0),
            ("0x10", 16.0),
            (" +1"[1..].as_ref(), 1.0),
        ] {
            assert_eq!(parse_score(text.as_bytes()), Some(want), "{text}");
        }
        for bad in ["", " 1", "1 ", "nan", "abc", "1e400", "1e-400", "1\0"] {
            assert_eq!(parse_score(bad.as_bytes()), None, "{bad:?}");
        }
    }

    #[test]
    fn plain_forms_read_as_libc_strtod_reads_them() {
        for text in [
            "0",
            "-0",
            "+0",
            "7",
            "000001",
            "123456789012345",
            "-999999999999999",
            "1234567890123456",
            "inf",
            "+inf",
            "-inf",
            "Inf",
            "infinity",
            "+",
            "-",
            "",
            "1.5",
            "12a",
            " 1",
        ] {
            let (a, b) = (strtod(text.as_bytes()), strtod_libc(text.as_bytes()));
            assert_eq!(
                (a.0.to_bits(), a.1, a.2),
                (b.0.to_bits(), b.1, b.2),
                "{text:?}"
            );
        }
        assert!(strtod_plain(b"42").is_some() && strtod_plain(b"-inf").is_some());
        assert!(strtod_plain(b"1234567890123456").is_none());
    }

    #[test]
    fn packed_scores_print_as_d2string() {
        assert_eq!(packed_score_text(1e17), "100000000000000000");
        assert_eq!(packed_score_text(1.5), "1.5");
        assert_eq!(packed_score_text(-0.0), "-0");
        assert_eq!(packed_score_text(1e300), "1.0000000000000001e+300");
        assert_eq!(packed_score_text(f64::INFINITY), "inf");
    }
}
