//! The blocking pops: BLPOP, BRPOP, BLMPOP, BLMOVE, BRPOPLPUSH, BZPOPMIN,
//! BZPOPMAX and BZMPOP. Each first does what its non-blocking form would;
//! finding nothing, it registers the client (blocking.rs) while it still
//! holds its keys' locks. A write that later creates one of the keys serves
//! it through the command's `serve_*` function, which pops from that key and
//! logs what Redis propagates (LPOP, LMOVE, ZPOPMIN... never the blocking
//! command). Inside MULTI or a script they answer at once, as in Redis.

use super::args::ERR_WRONGTYPE;
use super::list::{fill, move_locked, pop_some, End};
use super::zset::{pop_members, reply_pairs};
use super::{collection, Ctx};
use crate::exec::blocking::{timeout_secs, ServeFn, Who};
use crate::exec::session::Block;
use crate::protocol::{Args, Out};
use blinkdb_engine::{ListValue, Tx, ZSetValue};

/// What a pop takes, and how it answers.
#[derive(Clone, Copy)]
enum Pop {
    /// BLPOP/BRPOP (count None: `[key, element]`) and BLMPOP
    /// (`[key, [elements]]`).
    List(End, Option<usize>),
    /// BZPOPMIN/BZPOPMAX (count None: `[key, member, score]`) and BZMPOP
    /// (`[key, [[member, score]...]]`), `true` for the highest scores.
    ZSet(bool, Option<usize>),
}

/// Pops from `key` if it holds a non-empty value of the pop's type: replies
/// and logs as the non-blocking pop would. Ok(false): nothing there.
fn pop_from(tx: &mut Tx, out: &mut Out, db: usize, key: &[u8], pop: Pop) -> Result<bool, ()> {
    match pop {
        Pop::List(end, count) => {
            let verb: &[u8] = if end == End::Left { b"LPOP" } else { b"RPOP" };
            let n = count.unwrap_or(1);
            let len = match collection::get::<ListValue>(tx, db, key) {
                Err(_) => return Err(()),
                Ok(None) => return Ok(false),
                Ok(Some(l)) => l.len(),
            };
            let mut n_text = itoa::Buffer::new();
            let record: &[&[u8]] = match count {
                None => &[verb, key],
                Some(_) => &[verb, key, n_text.format(n.min(len)).as_bytes()],
            };
            let Ok(Some(v)) = pop_some(tx, db, key, end, n, record) else {
                return Ok(false);
            };
            out.array(2);
            out.bulk(key);
            match count {
                None => out.bulk(&v[0]),
                Some(_) => out.strs(v.iter().map(|e| &e[..])),
            }
        }
        Pop::ZSet(max, count) => {
            match collection::get::<ZSetValue>(tx, db, key) {
                Err(_) => return Err(()),
                Ok(None) => return Ok(false),
                Ok(Some(_)) => {}
            }
            let items = pop_members(tx, db, key, count.unwrap_or(1), max);
            let verb: &[u8] = if max { b"ZPOPMAX" } else { b"ZPOPMIN" };
            let n_text = items.len().to_string();
            match count {
                None => tx.log(db, &[verb, key]),
                Some(_) => tx.log(db, &[verb, key, n_text.as_bytes()]),
            };
            match count {
                None => {
                    let (m, s) = &items[0];
                    out.array(3);
                    out.bulk(key);
                    out.bulk(m);
                    out.double(*s);
                }
                Some(_) => {
                    out.array(2);
                    out.bulk(key);
                    reply_pairs(out, &items, true);
                }
            }
        }
    }
    Ok(true)
}

/// Pops from the first of `keys` that has something, else blocks on all of
/// them until `end_ms` (0: forever), to be served by `serve`.
fn pop_or_block(ctx: &mut Ctx, args: &Args, keys: &[&[u8]], pop: Pop, end_ms: u64, serve: ServeFn) {
    let db = ctx.db();
    let shared = ctx.shared;
    let deny = ctx.client.deny_blocking;
    let who = Who::of(ctx.client);
    let locked: Vec<(usize, &[u8])> = keys.iter().map(|k| (db, *k)).collect();
    let waiter = ctx.write(&locked, |tx, out| {
        for key in keys {
            match pop_from(tx, out, db, key, pop) {
                Err(()) => {
                    out.error(ERR_WRONGTYPE);
                    return None;
                }
                Ok(true) => return None,
                Ok(false) => {}
            }
        }
        if deny {
            // Not allowed to block (MULTI, a script): as a timeout, at once.
            out.null_array();
            return None;
        }
        Some(
            shared
                .exec
                .blocking
                .block_on_keys(shared, &who, keys, args, serve, end_ms),
        )
    });
    if let Some(w) = waiter {
        ctx.client.block = Some(Block::Waiting(w));
    }
}

/// Serves a waiting pop from `key` (the key a write filled).
fn serve_from(ctx: &mut Ctx, key: &[u8], pop: Pop) -> bool {
    ctx.write1(key, |tx, db, out| {
        pop_from(tx, out, db, key, pop) == Ok(true)
    })
}

/// BLPOP/BRPOP/BZPOPMIN/BZPOPMAX key... timeout: the pop these names make.
fn single_pop(args: &Args) -> Pop {
    let name = args[0];
    if name.eq_ignore_ascii_case(b"blpop") {
        Pop::List(End::Left, None)
    } else if name.eq_ignore_ascii_case(b"brpop") {
        Pop::List(End::Right, None)
    } else if name.eq_ignore_ascii_case(b"bzpopmax") {
        Pop::ZSet(true, None)
    } else {
        Pop::ZSet(false, None)
    }
}

fn single(ctx: &mut Ctx, args: &Args) {
    let end_ms = match timeout_secs(args[args.len() - 1]) {
        Ok(end) => end,
        Err(e) => return ctx.out.error(e),
    };
    let keys = &args[1..args.len() - 1];
    pop_or_block(ctx, args, keys, single_pop(args), end_ms, serve_single);
}

fn serve_single(ctx: &mut Ctx, args: &Args, key: &[u8]) -> bool {
    serve_from(ctx, key, single_pop(args))
}

pub fn blpop(ctx: &mut Ctx, args: &Args) {
    single(ctx, args);
}

pub fn brpop(ctx: &mut Ctx, args: &Args) {
    single(ctx, args);
}

pub fn bzpopmin(ctx: &mut Ctx, args: &Args) {
    single(ctx, args);
}

pub fn bzpopmax(ctx: &mut Ctx, args: &Args) {
    single(ctx, args);
}

/// BLMPOP/BZMPOP timeout numkeys key... WHERE [COUNT n]: the keys and pop.
fn multi_pop<'a, 'b>(args: &'b Args<'a>) -> Result<(&'b [&'a [u8]], Pop), &'static str> {
    if args[0].eq_ignore_ascii_case(b"blmpop") {
        let (keys, which, count) = collection::mpop_args(args, 2, ["left", "right"])?;
        Ok((keys, Pop::List([End::Left, End::Right][which], Some(count))))
    } else {
        let (keys, which, count) = collection::mpop_args(args, 2, ["min", "max"])?;
        Ok((keys, Pop::ZSet(which == 1, Some(count))))
    }
}

fn multi(ctx: &mut Ctx, args: &Args) {
    let (keys, pop) = match multi_pop(args) {
        Ok(parsed) => parsed,
        Err(e) => return ctx.out.error(e),
    };
    let end_ms = match timeout_secs(args[1]) {
        Ok(end) => end,
        Err(e) => return ctx.out.error(e),
    };
    pop_or_block(ctx, args, keys, pop, end_ms, serve_multi);
}

fn serve_multi(ctx: &mut Ctx, args: &Args, key: &[u8]) -> bool {
    match multi_pop(args) {
        Ok((_, pop)) => serve_from(ctx, key, pop),
        Err(_) => false,
    }
}

pub fn blmpop(ctx: &mut Ctx, args: &Args) {
    multi(ctx, args);
}

pub fn bzmpop(ctx: &mut Ctx, args: &Args) {
    multi(ctx, args);
}

/// BLMOVE's and BRPOPLPUSH's ends, and the record Redis propagates for the
/// move (LMOVE, or RPOPLPUSH for BRPOPLPUSH).
fn move_ends(args: &Args) -> Option<(End, End)> {
    if args.len() == 4 {
        return Some((End::Right, End::Left));
    }
    Some((End::parse(args[3])?, End::parse(args[4])?))
}

fn move_record<'a>(args: &Args<'a>) -> Vec<&'a [u8]> {
    if args.len() == 4 {
        vec![b"RPOPLPUSH", args[1], args[2]]
    } else {
        let upper = |w: &[u8]| -> &'static [u8] {
            if w.eq_ignore_ascii_case(b"left") {
                b"LEFT"
            } else {
                b"RIGHT"
            }
        };
        vec![b"LMOVE", args[1], args[2], upper(args[3]), upper(args[4])]
    }
}

/// BLMOVE src dst LEFT|RIGHT LEFT|RIGHT timeout, BRPOPLPUSH src dst timeout:
/// moves at once if `src` has an element, else blocks on `src` alone.
fn block_move(ctx: &mut Ctx, args: &Args) {
    let Some(ends) = move_ends(args) else {
        return ctx.syntax_error();
    };
    let end_ms = match timeout_secs(args[args.len() - 1]) {
        Ok(end) => end,
        Err(e) => return ctx.out.error(e),
    };
    let (src, dst) = (args[1], args[2]);
    let fill = fill(ctx);
    let db = ctx.db();
    let shared = ctx.shared;
    let deny = ctx.client.deny_blocking;
    let who = Who::of(ctx.client);
    let record = move_record(args);
    let waiter = ctx.write(&[(db, src), (db, dst)], |tx, out| {
        match collection::get::<ListValue>(tx, db, src) {
            Err(_) => out.error(ERR_WRONGTYPE),
            Ok(Some(_)) => {
                move_locked(tx, out, db, (src, dst), ends, fill, &record);
            }
            Ok(None) if deny => out.null(),
            Ok(None) => {
                let serve: ServeFn = serve_move;
                return Some(shared.exec.blocking.block_on_keys(
                    shared,
                    &who,
                    &[src],
                    args,
                    serve,
                    end_ms,
                ));
            }
        }
        None
    });
    if let Some(w) = waiter {
        ctx.client.block = Some(Block::Waiting(w));
    }
}

/// Serves a waiting move once `src` has an element; a destination of
/// another type ends the wait with WRONGTYPE and takes nothing, as in Redis.
fn serve_move(ctx: &mut Ctx, args: &Args, _key: &[u8]) -> bool {
    let Some(ends) = move_ends(args) else {
        return false;
    };
    let (src, dst) = (args[1], args[2]);
    let fill = fill(ctx);
    let db = ctx.db();
    let record = move_record(args);
    ctx.write(&[(db, src), (db, dst)], |tx, out| {
        move_locked(tx, out, db, (src, dst), ends, fill, &record)
    })
}

pub fn blmove(ctx: &mut Ctx, args: &Args) {
    block_move(ctx, args);
}

pub fn brpoplpush(ctx: &mut Ctx, args: &Args) {
    block_move(ctx, args);
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("blpop", -3, WRITE | NOSCRIPT | BLOCKING, (1, -2, 1), "list", "2.0.0", "Remove and get the first element in a list, or block until one is available", blpop;
        acl: acl::LIST,
        complexity: "O(N) where N is the number of provided keys.",
        keys: "RW,access,delete index:1 range:-2:1:0",
        args: "key:key* timeout:double",
        history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")]),
    cmd!("brpop", -3, WRITE | NOSCRIPT | BLOCKING, (1, -2, 1), "list", "2.0.0", "Remove and get the last element in a list, or block until one is available", brpop;
        acl: acl::LIST,
        complexity: "O(N) where N is the number of provided keys.",
        keys: "RW,access,delete index:1 range:-2:1:0",
        args: "key:key* timeout:double",
        history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")]),
    cmd!("brpoplpush", 4, WRITE | DENYOOM | NOSCRIPT | BLOCKING, (1, 2, 1), "list", "2.2.0", "Pop an element from a list, push it to another list and return it; or block until one is available", brpoplpush;
        acl: acl::LIST,
        complexity: "O(1)",
        keys: "RW,access,delete index:1 range:0:1:0; RW,insert index:2 range:0:1:0",
        args: "source:key destination:key#1 timeout:double",
        history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")],
        doc_flags: doc::DEPRECATED,
        deprecated_since: "6.2.0",
        replaced_by: "`BLMOVE` with the `RIGHT` and `LEFT` arguments"),
    cmd!("blmove", 6, WRITE | DENYOOM | NOSCRIPT | BLOCKING, (1, 2, 1), "list", "6.2.0", "Pop an element from a list, push it to another list and return it; or block until one is available", blmove;
        acl: acl::LIST,
        complexity: "O(1)",
        keys: "RW,access,delete index:1 range:0:1:0; RW,insert index:2 range:0:1:0",
        args: "source:key destination:key#1 wherefrom:oneof(left:LEFT right:RIGHT) whereto:oneof(left:LEFT right:RIGHT) timeout:double"),
    cmd!("blmpop", -5, WRITE | BLOCKING, NOKEYS, "list", "7.0.0", "Pop elements from a list, or block until one is available", blmpop;
        acl: acl::LIST,
        complexity: "O(N+M) where N is the number of provided keys and M is the number of elements returned.",
        keys: "RW,access,delete index:2 keynum:0:1:1",
        args: "timeout:double numkeys:integer key:key* where:oneof(left:LEFT right:RIGHT) count:integer=COUNT?"),
    cmd!("bzpopmin", -3, WRITE | NOSCRIPT | BLOCKING | FAST, (1, -2, 1), "sorted-set", "5.0.0", "Remove and return the member with the lowest score from one or more sorted sets, or block until one is available", bzpopmin;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)) with N being the number of elements in the sorted set.",
        keys: "RW,access,delete index:1 range:-2:1:0",
        args: "key:key* timeout:double",
        history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")]),
    cmd!("bzpopmax", -3, WRITE | NOSCRIPT | BLOCKING | FAST, (1, -2, 1), "sorted-set", "5.0.0", "Remove and return the member with the highest score from one or more sorted sets, or block until one is available", bzpopmax;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)) with N being the number of elements in the sorted set.",
        keys: "RW,access,delete index:1 range:-2:1:0",
        args: "key:key* timeout:double",
        history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")]),
    cmd!("bzmpop", -5, WRITE | BLOCKING, NOKEYS, "sorted-set", "7.0.0", "Remove and return members with scores in a sorted set or block until one is available", bzmpop;
        acl: acl::SORTEDSET,
        complexity: "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
        keys: "RW,access,delete index:2 keynum:0:1:1",
        args: "timeout:double numkeys:integer key:key* where:oneof(min:MIN max:MAX) count:integer=COUNT?"),
];
