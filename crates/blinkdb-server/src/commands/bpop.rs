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
use crate::blocking::{timeout_secs, ServeFn, Who};
use crate::client::Block;
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
                return Some(shared.blocking.block_on_keys(
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
