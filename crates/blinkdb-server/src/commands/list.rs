//! List commands that do not block (LPUSH, LRANGE, LMOVE, LPOS, LMPOP...),
//! with Redis 7.0's replies, errors, keyspace events and AOF records.
//! The blocking forms are in bpop.rs.

use super::args::{eq_ic, parse_i64, ERR_NOT_INT, ERR_NO_SUCH_KEY, ERR_SYNTAX, ERR_WRONGTYPE};
use super::collection;
use super::Ctx;
use crate::protocol::Args;
use blinkdb_engine::{event::LIST, ListShape, ListValue, Tx};

const ERR_POSITIVE: &str = "ERR value is out of range, must be positive";

#[derive(Clone, Copy, PartialEq)]
pub(super) enum End {
    Left,
    Right,
}

impl End {
    pub(super) fn parse(word: &[u8]) -> Option<End> {
        if eq_ic(word, "left") {
            Some(End::Left)
        } else if eq_ic(word, "right") {
            Some(End::Right)
        } else {
            None
        }
    }

    fn push_event(self) -> &'static str {
        match self {
            End::Left => "lpush",
            End::Right => "rpush",
        }
    }

    fn pop_event(self) -> &'static str {
        match self {
            End::Left => "lpop",
            End::Right => "rpop",
        }
    }
}

/// A list index (negative from the tail) as a position, if in range.
fn position(len: usize, index: i64) -> Option<usize> {
    let i = if index < 0 { len as i64 + index } else { index };
    (0..len as i64).contains(&i).then_some(i as usize)
}

/// LRANGE/LTRIM bounds clamped as Redis clamps them; None when empty.
fn clamp(len: usize, start: i64, stop: i64) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 {
        (len + start).max(0)
    } else {
        start
    };
    let stop = if stop < 0 {
        len + stop
    } else {
        stop.min(len - 1)
    };
    (start <= stop && start < len).then_some((start as usize, stop as usize))
}

/// `list-max-listpack-size`, `list-compress-depth` and the plain-node
/// threshold (DEBUG QUICKLIST-PACKED-THRESHOLD), for a push or a change.
pub(super) fn fill(ctx: &mut Ctx) -> ListShape {
    let threshold = ctx
        .shared
        .debug
        .list_packed_threshold
        .load(std::sync::atomic::Ordering::Relaxed);
    ListShape {
        packed_threshold: threshold,
        ..ctx
            .client
            .settings(ctx.shared)
            .collection_limits
            .list_shape()
    }
}

fn push_generic(ctx: &mut Ctx, args: &Args, end: End, only_existing: bool) {
    let key = args[1];
    let fill = fill(ctx);
    ctx.write1(key, |tx, db, out| {
        let len = collection::modify(tx, db, key, !only_existing, |l: &mut ListValue| {
            for e in &args[2..] {
                match end {
                    End::Left => l.push_front(e, fill),
                    End::Right => l.push_back(e, fill),
                }
            }
            l.len()
        });
        match len {
            Err(_) => out.error(ERR_WRONGTYPE),
            Ok(None) => out.int(0),
            Ok(Some(n)) => {
                tx.log(db, args);
                tx.notify(LIST, end.push_event(), db, key);
                out.int(n as i64)
            }
        }
    });
}

pub fn lpush(ctx: &mut Ctx, args: &Args) {
    push_generic(ctx, args, End::Left, false);
}

pub fn rpush(ctx: &mut Ctx, args: &Args) {
    push_generic(ctx, args, End::Right, false);
}

pub fn lpushx(ctx: &mut Ctx, args: &Args) {
    push_generic(ctx, args, End::Left, true);
}

pub fn rpushx(ctx: &mut Ctx, args: &Args) {
    push_generic(ctx, args, End::Right, true);
}

/// Pops up to `count` elements from one end of `key` (which must hold a
/// list), logging and notifying as Redis does; None if absent.
pub(super) fn pop_some(
    tx: &mut Tx,
    db: usize,
    key: &[u8],
    end: End,
    count: usize,
    record: &[&[u8]],
) -> Result<Option<Vec<Vec<u8>>>, collection::WrongType> {
    let popped = collection::modify(tx, db, key, false, |l: &mut ListValue| {
        let mut v = Vec::with_capacity(count.min(l.len()));
        while v.len() < count {
            match match end {
                End::Left => l.pop_front(),
                End::Right => l.pop_back(),
            } {
                Some(e) => v.push(e),
                None => break,
            }
        }
        v
    })?;
    if let Some(v) = &popped {
        if !v.is_empty() {
            tx.log(db, record);
            tx.notify(LIST, end.pop_event(), db, key);
            collection::drop_if_empty::<ListValue>(tx, db, key);
        }
    }
    Ok(popped)
}

fn pop_generic(ctx: &mut Ctx, args: &Args, end: End) {
    let key = args[1];
    let count = match args.get(2) {
        None => None,
        Some(_) if args.len() > 3 => {
            let name = if end == End::Left { "lpop" } else { "rpop" };
            return ctx.arity_error(name);
        }
        // Redis's getPositiveLongFromObjectOrReply: one text for both failures.
        Some(c) => match parse_i64(c) {
            Some(n) if n >= 0 => Some(n as usize),
            _ => return ctx.out.error(ERR_POSITIVE),
        },
    };
    ctx.write1(key, |tx, db, out| {
        if count == Some(0) {
            // Nothing popped, nothing changed.
            return match collection::get::<ListValue>(tx, db, key) {
                Err(_) => out.error(ERR_WRONGTYPE),
                Ok(None) => out.null_array(),
                Ok(Some(_)) => out.array(0),
            };
        }
        let popped = pop_some(tx, db, key, end, count.unwrap_or(1), args);
        match (popped, count) {
            (Err(_), _) => out.error(ERR_WRONGTYPE),
            (Ok(None), None) => out.null(),
            (Ok(None), Some(_)) => out.null_array(),
            (Ok(Some(v)), None) => out.bulk(&v[0]),
            (Ok(Some(v)), Some(_)) => out.strs(v.iter().map(|e| &e[..])),
        }
    });
}

pub fn lpop(ctx: &mut Ctx, args: &Args) {
    pop_generic(ctx, args, End::Left);
}

pub fn rpop(ctx: &mut Ctx, args: &Args) {
    pop_generic(ctx, args, End::Right);
}

pub fn llen(ctx: &mut Ctx, args: &Args) {
    collection::read_or_reply(ctx, args[1], |l: Option<&ListValue>, out| {
        out.int(l.map_or(0, |l| l.len()) as i64)
    });
}

/// The key is looked at before the index is parsed, as in Redis.
pub fn lindex(ctx: &mut Ctx, args: &Args) {
    let index = parse_i64(args[2]);
    collection::read_or_reply(ctx, args[1], |l: Option<&ListValue>, out| {
        let Some(l) = l else {
            return out.null();
        };
        let Some(index) = index else {
            return out.error(ERR_NOT_INT);
        };
        out.bulk_opt(position(l.len(), index).and_then(|i| l.get(i)).as_deref())
    });
}

pub fn lset(ctx: &mut Ctx, args: &Args) {
    let (key, value) = (args[1], args[3]);
    let index = parse_i64(args[2]);
    let shape = fill(ctx);
    ctx.write1(key, |tx, db, out| {
        // The key is looked at before the index is parsed, as in Redis.
        let index = match (collection::get::<ListValue>(tx, db, key), index) {
            (Err(_), _) => return out.error(ERR_WRONGTYPE),
            (Ok(None), _) => return out.error(ERR_NO_SUCH_KEY),
            (Ok(Some(_)), None) => return out.error(ERR_NOT_INT),
            (Ok(Some(_)), Some(index)) => index,
        };
        match collection::get::<ListValue>(tx, db, key) {
            Err(_) => return out.error(ERR_WRONGTYPE),
            Ok(None) => return out.error(ERR_NO_SUCH_KEY),
            Ok(Some(l)) if position(l.len(), index).is_none() => {
                return out.error("ERR index out of range")
            }
            Ok(Some(_)) => {}
        }
        let done = collection::modify(tx, db, key, false, |l: &mut ListValue| {
            position(l.len(), index).is_some_and(|i| l.set(i, value, shape))
        });
        match done {
            Err(_) => out.error(ERR_WRONGTYPE),
            Ok(None) => out.error(ERR_NO_SUCH_KEY),
            Ok(Some(false)) => out.error("ERR index out of range"),
            Ok(Some(true)) => {
                tx.log(db, args);
                tx.notify(LIST, "lset", db, key);
                out.ok()
            }
        }
    });
}

pub fn lrange(ctx: &mut Ctx, args: &Args) {
    let (Some(start), Some(stop)) = (parse_i64(args[2]), parse_i64(args[3])) else {
        return ctx.out.error(ERR_NOT_INT);
    };
    collection::read_or_reply(ctx, args[1], |l: Option<&ListValue>, out| {
        match l.and_then(|l| clamp(l.len(), start, stop).map(|r| (l, r))) {
            None => out.array(0),
            Some((l, (a, b))) => {
                out.array(b - a + 1);
                for e in l.range(a, b) {
                    out.bulk(&e);
                }
            }
        }
    });
}

pub fn ltrim(ctx: &mut Ctx, args: &Args) {
    let key = args[1];
    let (Some(start), Some(stop)) = (parse_i64(args[2]), parse_i64(args[3])) else {
        return ctx.out.error(ERR_NOT_INT);
    };
    ctx.write1(key, |tx, db, out| {
        let done = collection::modify(tx, db, key, false, |l: &mut ListValue| {
            match clamp(l.len(), start, stop) {
                Some((a, b)) => l.trim(a, b),
                None => l.trim(1, 0),
            }
        });
        match done {
            Err(_) => out.error(ERR_WRONGTYPE),
            Ok(None) => out.ok(),
            Ok(Some(())) => {
                tx.log(db, args);
                tx.notify(LIST, "ltrim", db, key);
                collection::drop_if_empty::<ListValue>(tx, db, key);
                out.ok()
            }
        }
    });
}

pub fn lrem(ctx: &mut Ctx, args: &Args) {
    let (key, item) = (args[1], args[3]);
    let Some(count) = parse_i64(args[2]) else {
        return ctx.out.error(ERR_NOT_INT);
    };
    ctx.write1(key, |tx, db, out| {
        // Only a list that holds the element changes (for WATCH too).
        match collection::get::<ListValue>(tx, db, key) {
            Err(_) => return out.error(ERR_WRONGTYPE),
            Ok(None) => return out.int(0),
            Ok(Some(l)) if !l.iter().any(|e| e == item) => return out.int(0),
            Ok(Some(_)) => {}
        }
        let removed = collection::modify(tx, db, key, false, |l: &mut ListValue| {
            l.remove(count, item)
        })
        .ok()
        .flatten()
        .unwrap_or(0);
        tx.log(db, args);
        tx.notify(LIST, "lrem", db, key);
        collection::drop_if_empty::<ListValue>(tx, db, key);
        out.int(removed as i64);
    });
}

pub fn linsert(ctx: &mut Ctx, args: &Args) {
    let (key, pivot, item) = (args[1], args[3], args[4]);
    let before = if eq_ic(args[2], "before") {
        true
    } else if eq_ic(args[2], "after") {
        false
    } else {
        return ctx.out.error(ERR_SYNTAX);
    };
    let shape = fill(ctx);
    ctx.write1(key, |tx, db, out| {
        match collection::get::<ListValue>(tx, db, key) {
            Err(_) => return out.error(ERR_WRONGTYPE),
            Ok(None) => return out.int(0),
            Ok(Some(l)) if !l.iter().any(|e| e == pivot) => return out.int(-1),
            Ok(Some(_)) => {}
        }
        let len = collection::modify(tx, db, key, false, |l: &mut ListValue| {
            l.insert(before, pivot, item, shape);
            l.len()
        })
        .ok()
        .flatten()
        .unwrap_or(0);
        tx.log(db, args);
        tx.notify(LIST, "linsert", db, key);
        out.int(len as i64);
    });
}

pub fn lpos(ctx: &mut Ctx, args: &Args) {
    let item = args[2];
    let (mut rank, mut count, mut maxlen) = (1i64, None, 0usize);
    let mut i = 3;
    while i < args.len() {
        let Some(v) = args.get(i + 1) else {
            return ctx.out.error(ERR_SYNTAX);
        };
        let n = parse_i64(v);
        if eq_ic(args[i], "rank") {
            match n {
                None => return ctx.out.error(ERR_NOT_INT),
                Some(0) => {
                    return ctx.out.error(
                        "ERR RANK can't be zero: use 1 to start from the first match, 2 from \
                         the second ... or use negative to start from the end of the list",
                    )
                }
                Some(n) => rank = n,
            }
        } else if eq_ic(args[i], "count") {
            match n {
                Some(n) if n >= 0 => count = Some(n as usize),
                _ => return ctx.out.error("ERR COUNT can't be negative"),
            }
        } else if eq_ic(args[i], "maxlen") {
            match n {
                Some(n) if n >= 0 => maxlen = n as usize,
                _ => return ctx.out.error("ERR MAXLEN can't be negative"),
            }
        } else {
            return ctx.out.error(ERR_SYNTAX);
        }
        i += 2;
    }
    collection::read_or_reply(ctx, args[1], |l: Option<&ListValue>, out| {
        let Some(l) = l else {
            return match count {
                Some(_) => out.array(0),
                None => out.null(),
            };
        };
        let len = l.len();
        let limit = if maxlen == 0 { len } else { maxlen.min(len) };
        let want = match count {
            Some(0) => usize::MAX,
            Some(c) => c,
            None => 1,
        };
        // Redis 7.0 negates a RANK of i64::MIN into itself: from the tail,
        // every match qualifies, and COUNT stops nothing.
        let want = if rank == i64::MIN { usize::MAX } else { want };
        let mut skip = if rank == i64::MIN {
            0
        } else {
            rank.unsigned_abs() - 1
        };
        let mut found = Vec::new();
        let mut visit = |idx: usize, e: &[u8]| {
            if e == item {
                if skip > 0 {
                    skip -= 1;
                } else {
                    found.push(idx);
                }
            }
            found.len() < want
        };
        if rank > 0 {
            for (idx, e) in l.iter().enumerate().take(limit) {
                if !visit(idx, &e) {
                    break;
                }
            }
        } else {
            for (n, e) in l.iter().rev().enumerate().take(limit) {
                if !visit(len - 1 - n, &e) {
                    break;
                }
            }
        }
        match count {
            None => match found.first() {
                Some(&p) => out.int(p as i64),
                None => out.null(),
            },
            Some(_) => {
                out.array(found.len());
                for p in found {
                    out.int(p as i64);
                }
            }
        }
    });
}

/// Moves one element from `src` to `dst` (both locked) and replies with
/// it, logging `record`; replies null when `src` is absent. Returns whether
/// `src` held a list (the reply is WRONGTYPE when either key holds another type).
#[allow(clippy::too_many_arguments)]
pub(super) fn move_locked(
    tx: &mut Tx,
    out: &mut crate::protocol::Out,
    db: usize,
    (src, dst): (&[u8], &[u8]),
    (from, to): (End, End),
    fill: ListShape,
    record: &[&[u8]],
) -> bool {
    match collection::get::<ListValue>(tx, db, src) {
        Err(_) => {
            out.error(ERR_WRONGTYPE);
            return false;
        }
        Ok(None) => {
            out.null();
            return false;
        }
        Ok(Some(_)) => {}
    }
    if collection::get::<ListValue>(tx, db, dst).is_err() {
        out.error(ERR_WRONGTYPE);
        return true;
    }
    let Ok(Some(mut v)) = pop_some(tx, db, src, from, 1, record) else {
        out.null();
        return true;
    };
    let e = v.pop().expect("the list was not empty");
    let _ = collection::modify(tx, db, dst, true, |l: &mut ListValue| match to {
        End::Left => l.push_front(&e, fill),
        End::Right => l.push_back(&e, fill),
    });
    tx.notify(LIST, to.push_event(), db, dst);
    out.bulk(&e);
    true
}

fn move_generic(ctx: &mut Ctx, args: &Args, from: End, to: End) {
    let (src, dst) = (args[1], args[2]);
    let fill = fill(ctx);
    let db = ctx.db();
    ctx.write(&[(db, src), (db, dst)], |tx, out| {
        move_locked(tx, out, db, (src, dst), (from, to), fill, args);
    });
}

pub fn rpoplpush(ctx: &mut Ctx, args: &Args) {
    move_generic(ctx, args, End::Right, End::Left);
}

pub fn lmove(ctx: &mut Ctx, args: &Args) {
    let (Some(from), Some(to)) = (End::parse(args[3]), End::parse(args[4])) else {
        return ctx.out.error(ERR_SYNTAX);
    };
    move_generic(ctx, args, from, to);
}

/// LMPOP numkeys key... LEFT|RIGHT [COUNT n]: pops from the first non-empty
/// list; logged as the LPOP/RPOP with count that has the same effect.
pub fn lmpop(ctx: &mut Ctx, args: &Args) {
    let (keys, which, count) = match collection::mpop_args(args, 1, ["left", "right"]) {
        Ok(parsed) => parsed,
        Err(e) => return ctx.out.error(e),
    };
    let end = [End::Left, End::Right][which];
    let db = ctx.db();
    let locked: Vec<(usize, &[u8])> = keys.iter().map(|k| (db, *k)).collect();
    ctx.write(&locked, |tx, out| {
        for key in keys {
            let count_text = count.to_string();
            let verb: &[u8] = if end == End::Left { b"LPOP" } else { b"RPOP" };
            let record: [&[u8]; 3] = [verb, key, count_text.as_bytes()];
            match pop_some(tx, db, key, end, count, &record) {
                Err(_) => return out.error(ERR_WRONGTYPE),
                Ok(None) => continue,
                Ok(Some(v)) => {
                    out.array(2);
                    out.bulk(key);
                    return out.strs(v.iter().map(|e| &e[..]));
                }
            }
        }
        out.null_array();
    });
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("lpush", -3, WRITE | DENYOOM | FAST, KEY1, "list", "1.0.0", "Prepend one or multiple elements to a list", lpush;
        acl: acl::LIST,
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        keys: "RW,insert index:1 range:0:1:0",
        args: "key:key element:string*",
        history: &[("2.4.0", "Accepts multiple `element` arguments.")]),
    cmd!("rpush", -3, WRITE | DENYOOM | FAST, KEY1, "list", "1.0.0", "Append one or multiple elements to a list", rpush;
        acl: acl::LIST,
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        keys: "RW,insert index:1 range:0:1:0",
        args: "key:key element:string*",
        history: &[("2.4.0", "Accepts multiple `element` arguments.")]),
    cmd!("lpushx", -3, WRITE | DENYOOM | FAST, KEY1, "list", "2.2.0", "Prepend an element to a list, only if the list exists", lpushx;
        acl: acl::LIST,
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        keys: "RW,insert index:1 range:0:1:0",
        args: "key:key element:string*",
        history: &[("4.0.0", "Accepts multiple `element` arguments.")]),
    cmd!("rpushx", -3, WRITE | DENYOOM | FAST, KEY1, "list", "2.2.0", "Append an element to a list, only if the list exists", rpushx;
        acl: acl::LIST,
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        keys: "RW,insert index:1 range:0:1:0",
        args: "key:key element:string*",
        history: &[("4.0.0", "Accepts multiple `element` arguments.")]),
    cmd!("lpop", -2, WRITE | FAST, KEY1, "list", "1.0.0", "Remove and get the first elements in a list", lpop;
        acl: acl::LIST,
        complexity: "O(N) where N is the number of elements returned",
        keys: "RW,access,delete index:1 range:0:1:0",
        args: "key:key count:integer?^6.2.0",
        history: &[("6.2.0", "Added the `count` argument.")]),
    cmd!("rpop", -2, WRITE | FAST, KEY1, "list", "1.0.0", "Remove and get the last elements in a list", rpop;
        acl: acl::LIST,
        complexity: "O(N) where N is the number of elements returned",
        keys: "RW,access,delete index:1 range:0:1:0",
        args: "key:key count:integer?^6.2.0",
        history: &[("6.2.0", "Added the `count` argument.")]),
    cmd!("llen", 2, READONLY | FAST, KEY1, "list", "1.0.0", "Get the length of a list", llen;
        acl: acl::LIST,
        complexity: "O(1)",
        keys: "RO index:1 range:0:1:0",
        args: "key:key"),
    cmd!("lindex", 3, READONLY, KEY1, "list", "1.0.0", "Get an element from a list by its index", lindex;
        acl: acl::LIST,
        complexity: "O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1).",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key index:integer"),
    cmd!("lset", 4, WRITE | DENYOOM, KEY1, "list", "1.0.0", "Set the value of an element in a list by its index", lset;
        acl: acl::LIST,
        complexity: "O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1).",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key index:integer element:string"),
    cmd!("lrange", 4, READONLY, KEY1, "list", "1.0.0", "Get a range of elements from a list", lrange;
        acl: acl::LIST,
        complexity: "O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key start:integer stop:integer"),
    cmd!("ltrim", 4, WRITE, KEY1, "list", "1.0.0", "Trim a list to the specified range", ltrim;
        acl: acl::LIST,
        complexity: "O(N) where N is the number of elements to be removed by the operation.",
        keys: "RW,delete index:1 range:0:1:0",
        args: "key:key start:integer stop:integer"),
    cmd!("lrem", 4, WRITE, KEY1, "list", "1.0.0", "Remove elements from a list", lrem;
        acl: acl::LIST,
        complexity: "O(N+M) where N is the length of the list and M is the number of elements removed.",
        keys: "RW,delete index:1 range:0:1:0",
        args: "key:key count:integer element:string"),
    cmd!("linsert", 5, WRITE | DENYOOM, KEY1, "list", "2.2.0", "Insert an element before or after another element in a list", linsert;
        acl: acl::LIST,
        complexity: "O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N).",
        keys: "RW,insert index:1 range:0:1:0",
        args: "key:key where:oneof(before:BEFORE after:AFTER) pivot:string element:string"),
    cmd!("lpos", -3, READONLY, KEY1, "list", "6.0.6", "Return the index of matching elements on a list", lpos;
        acl: acl::LIST,
        complexity: "O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key element:string rank:integer=RANK? num-matches:integer=COUNT? len:integer=MAXLEN?"),
    cmd!("rpoplpush", 3, WRITE | DENYOOM, (1, 2, 1), "list", "1.2.0", "Remove the last element in a list, prepend it to another list and return it", rpoplpush;
        acl: acl::LIST,
        complexity: "O(1)",
        keys: "RW,access,delete index:1 range:0:1:0; RW,insert index:2 range:0:1:0",
        args: "source:key destination:key#1",
        doc_flags: doc::DEPRECATED,
        deprecated_since: "6.2.0",
        replaced_by: "`LMOVE` with the `RIGHT` and `LEFT` arguments"),
    cmd!("lmove", 5, WRITE | DENYOOM, (1, 2, 1), "list", "6.2.0", "Pop an element from a list, push it to another list and return it", lmove;
        acl: acl::LIST,
        complexity: "O(1)",
        keys: "RW,access,delete index:1 range:0:1:0; RW,insert index:2 range:0:1:0",
        args: "source:key destination:key#1 wherefrom:oneof(left:LEFT right:RIGHT) whereto:oneof(left:LEFT right:RIGHT)"),
    cmd!("lmpop", -4, WRITE, NOKEYS, "list", "7.0.0", "Pop elements from a list", lmpop;
        acl: acl::LIST,
        complexity: "O(N+M) where N is the number of provided keys and M is the number of elements returned.",
        keys: "RW,access,delete index:1 keynum:0:1:1",
        args: "numkeys:integer key:key* where:oneof(left:LEFT right:RIGHT) count:integer=COUNT?"),
];
