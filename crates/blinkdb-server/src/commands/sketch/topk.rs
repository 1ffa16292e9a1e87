//! TOPK.* with RedisBloom 2.8.2's replies and error texts (src/rm_topk.c), on
//! top-k sketches (`blinkdb_engine::sketch::topk`).
//!
//! Items are replied as RedisBloom replies them, as C strings: up to their
//! first NUL byte. Writes are logged as sent (RedisBloom replicates them
//! verbatim, TOPK.INCRBY even when it stopped at a bad increment); each sketch
//! draws its decay from its own generator, so a replayed log or a replica's
//! stream decays as the original did. No keyspace events, as RedisBloom.
//!
//! Where RedisBloom 2.8.2 misbehaves, BlinkDB answers as RedisBloom 8: k, width
//! or depth past u32 (2.8.2 truncates them; k 2^32 aborts) is refused, a size
//! past `sketch-max-memory` too; a bad TOPK.INCRBY increment ends a well-formed
//! array of the pairs handled and the error (2.8.2's reply declares every pair
//! and sends fewer).

use super::{create, read, update, WrongType};
use crate::commands::args::{parse_f64, parse_i64, ERR_WRONGTYPE};
use crate::commands::Ctx;
use crate::protocol::{Args, Out};
use blinkdb_engine::topk::{c_string, TopK, DEFAULT_DECAY, DEFAULT_DEPTH, DEFAULT_WIDTH};

const ERR_NO_KEY: &str = "TopK: key does not exist";
const ERR_EXISTS: &str = "TopK: key already exists";
const ERR_K: &str = "TopK: invalid k";
const ERR_WIDTH: &str = "TopK: invalid width";
const ERR_DEPTH: &str = "TopK: invalid depth";
const ERR_DECAY: &str = "TopK: invalid decay value. must be '<= 1' & '> 0'";
// Two C literals joined by a line continuation: the spaces are RedisBloom's.
const ERR_INCREMENT: &str = "TopK: increment must be an integer greater or equal to 0                            and smaller or equal to 100,000";
const ERR_WITHCOUNT: &str = "WITHCOUNT keyword expected";
const MAX_INCREMENT: i64 = 100_000;

fn max_bytes(ctx: &mut Ctx) -> u64 {
    ctx.client.settings(ctx.shared).sketch_max_memory
}

/// GetTopKKey's errors: no key, or a key of another type.
fn lookup_error<T>(found: &Result<Option<T>, WrongType>) -> &'static str {
    match found {
        Err(WrongType) => ERR_WRONGTYPE,
        _ => ERR_NO_KEY,
    }
}

/// The generator seed of a new sketch: its key's hash, so that replaying the
/// log (or a replica's stream) draws what the original drew.
fn seed(key: &[u8]) -> u64 {
    let h = blinkdb_engine::cms::murmur2(key, 0x0070_b04b) as u64;
    h << 32 | blinkdb_engine::cms::murmur2(key, 0x5eed) as u64
}

fn dim(arg: &[u8], err: &'static str) -> Result<u32, &'static str> {
    parse_i64(arg)
        .filter(|v| *v >= 1)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or(err)
}

fn parse_reserve(args: &Args) -> Result<(u32, u32, u32, f64), &'static str> {
    let k = dim(args[2], ERR_K)?;
    if args.len() == 3 {
        return Ok((k, DEFAULT_WIDTH, DEFAULT_DEPTH, DEFAULT_DECAY));
    }
    let width = dim(args[3], ERR_WIDTH)?;
    let depth = dim(args[4], ERR_DEPTH)?;
    let decay = parse_f64(args[5])
        .filter(|d| *d > 0.0 && *d <= 1.0)
        .ok_or(ERR_DECAY)?;
    Ok((k, width, depth, decay))
}

pub fn reserve(ctx: &mut Ctx, args: &Args) {
    if args.len() != 3 && args.len() != 6 {
        return ctx.arity_error("topk.reserve");
    }
    let key = args[1];
    let max = max_bytes(ctx);
    ctx.write1(key, |tx, db, out| {
        tx.modified(db, key);
        if tx.get(db, key).is_some() {
            return out.error(ERR_EXISTS);
        }
        let made = parse_reserve(args).and_then(|(k, w, d, decay)| {
            TopK::new(k, w, d, decay, max, seed(key)).map_err(|e| e.text())
        });
        match made {
            Ok(topk) => {
                create(tx, db, key, topk);
                tx.log(db, args);
                tx.sketch_changed(db, key);
                out.ok()
            }
            Err(e) => out.error(e),
        }
    });
}

/// An ADD/INCRBY answer: the expelled item, or a null.
fn expelled(out: &mut Out, item: Option<Box<[u8]>>) {
    match item {
        Some(item) => out.bulk(c_string(&item)),
        None => out.null(),
    }
}

/// Checks the key, then runs `f` on its sketch; RedisBloom's error otherwise.
fn with_top_k<R>(
    tx: &mut blinkdb_engine::Tx,
    db: usize,
    key: &[u8],
    out: &mut Out,
    f: impl FnOnce(&mut TopK) -> R,
) -> Option<R> {
    // One lookup (`update`). Opened for writing: watchers see a change even
    // when refused.
    match update(tx, db, key, f) {
        Ok(Some(r)) => Some(r),
        refused => {
            tx.modified(db, key);
            out.error(lookup_error(&refused));
            None
        }
    }
}

pub fn add(ctx: &mut Ctx, args: &Args) {
    if args.len() < 3 {
        return ctx.arity_error("topk.add");
    }
    let key = args[1];
    ctx.write1(key, |tx, db, out| {
        let expelled_items = with_top_k(tx, db, key, out, |topk| {
            let mut expelled = Vec::with_capacity(args.len() - 2);
            topk.add_each(args[2..].iter().map(|item| (&item[..], 1)), |e| {
                expelled.push(e)
            });
            expelled
        });
        let Some(expelled_items) = expelled_items else {
            return;
        };
        out.array(expelled_items.len());
        for item in expelled_items {
            expelled(out, item);
        }
        tx.log(db, args);
        tx.sketch_changed(db, key);
    });
}

pub fn incrby(ctx: &mut Ctx, args: &Args) {
    if args.len() < 4 || args.len() % 2 == 1 {
        return ctx.arity_error("topk.incrby");
    }
    let key = args[1];
    ctx.write1(key, |tx, db, out| {
        let pairs: Vec<(&[u8], Option<u32>)> = args[2..]
            .chunks_exact(2)
            .map(|p| {
                let incr = parse_i64(p[1]).filter(|v| (0..=MAX_INCREMENT).contains(v));
                (p[0], incr.map(|v| v as u32))
            })
            .collect();
        // The pairs before the first bad increment are counted, then it stops.
        let good = pairs.iter().take_while(|(_, incr)| incr.is_some()).count();
        let results = with_top_k(tx, db, key, out, |topk| {
            let mut expelled = Vec::with_capacity(good);
            let counted = pairs[..good]
                .iter()
                .map(|(item, incr)| (*item, incr.expect("taken while some")));
            topk.add_each(counted, |e| expelled.push(e));
            expelled
        });
        let Some(results) = results else {
            return;
        };
        let bad = good < pairs.len();
        out.array(good + bad as usize);
        for item in results {
            expelled(out, item);
        }
        if bad {
            out.error(ERR_INCREMENT);
        }
        tx.log(db, args);
        tx.sketch_changed(db, key);
    });
}

pub fn query(ctx: &mut Ctx, args: &Args) {
    if args.len() < 3 {
        return ctx.arity_error("topk.query");
    }
    read(
        ctx,
        args[1],
        |topk: Result<Option<&TopK>, _>, out| match topk {
            Ok(Some(topk)) => {
                out.array(args.len() - 2);
                for item in &args[2..] {
                    out.boolean(topk.query(item));
                }
            }
            missing => out.error(lookup_error(&missing)),
        },
    );
}

pub fn count(ctx: &mut Ctx, args: &Args) {
    if args.len() < 3 {
        return ctx.arity_error("topk.count");
    }
    read(
        ctx,
        args[1],
        |topk: Result<Option<&TopK>, _>, out| match topk {
            Ok(Some(topk)) => {
                out.array(args.len() - 2);
                for item in &args[2..] {
                    out.int(topk.count(item) as i64);
                }
            }
            missing => out.error(lookup_error(&missing)),
        },
    );
}

/// `strncasecmp(arg, word, len(arg)) == 0` with C strings: `arg` is a
/// prefix of `word` in any case, or `word` and then a NUL.
fn c_prefix_ic(arg: &[u8], word: &[u8]) -> bool {
    for (i, &x) in arg.iter().enumerate() {
        let y = word.get(i).copied().unwrap_or(0);
        if !x.eq_ignore_ascii_case(&y) {
            return false;
        }
        if x == 0 {
            return true;
        }
    }
    true
}

pub fn list(ctx: &mut Ctx, args: &Args) {
    if args.len() != 2 && args.len() != 3 {
        return ctx.arity_error("topk.list");
    }
    // strncasecmp over the argument's length: any prefix of WITHCOUNT, even
    // an empty one, is WITHCOUNT.
    let with_count = match args.get(2) {
        None => false,
        Some(a) if c_prefix_ic(a, b"WITHCOUNT") => true,
        Some(_) => return ctx.out.error(ERR_WITHCOUNT),
    };
    read(
        ctx,
        args[1],
        |topk: Result<Option<&TopK>, _>, out| match topk {
            Ok(Some(topk)) => {
                let list = topk.list();
                out.array(list.len() * (1 + with_count as usize));
                for (item, n) in list {
                    out.bulk(c_string(item));
                    if with_count {
                        out.int(n as i64);
                    }
                }
            }
            missing => out.error(lookup_error(&missing)),
        },
    );
}

pub fn info(ctx: &mut Ctx, args: &Args) {
    if args.len() != 2 {
        return ctx.arity_error("topk.info");
    }
    read(
        ctx,
        args[1],
        |topk: Result<Option<&TopK>, _>, out| match topk {
            Ok(Some(topk)) => {
                out.map(4);
                out.simple("k");
                out.int(topk.k() as i64);
                out.simple("width");
                out.int(topk.width() as i64);
                out.simple("depth");
                out.int(topk.depth() as i64);
                out.simple("decay");
                out.double(topk.decay());
            }
            missing => out.error(lookup_error(&missing)),
        },
    );
}

use crate::commands::table::cmd;

/// This family's entries of the command table, as redis-server with
/// RedisBloom 2.8.2 lists them: module commands (no ACL categories), arity
/// -1, key range 1 1 1, `write deny-oom` or `readonly`, and TOPK.COUNT
/// `write` (RedisBloom registers it so). DOCS add RedisBloom's summary,
/// complexity and arguments (commands.json).
#[rustfmt::skip]
pub(in crate::commands) const COMMANDS: &[crate::commands::table::CommandSpec] = &[
    cmd!("topk.reserve", -1, W | MODULE, KEY1, "module", "2.0.0", "Initializes a TopK with specified parameters", reserve;
        complexity: "O(1)",
        props: props::FILE_COVERED,
        args: "key:key topk:integer params:block?(width:integer depth:integer decay:double)"),
    cmd!("topk.add", -1, W | MODULE, KEY1, "module", "2.0.0", "Increases the count of one or more items by increment", add;
        complexity: "O(n * k) where n is the number of items and k is the depth",
        props: props::FILE_COVERED,
        args: "key:key items:string*"),
    cmd!("topk.incrby", -1, W | MODULE, KEY1, "module", "2.0.0", "Increases the count of one or more items by increment", incrby;
        complexity: "O(n * k * incr) where n is the number of items, k is the depth and incr is the increment",
        props: props::FILE_COVERED,
        args: "key:key items:block*(item:string increment:integer)"),
    cmd!("topk.query", -1, READONLY | MODULE, KEY1, "module", "2.0.0", "Checks whether one or more items are in a sketch", query;
        complexity: "O(n) where n is the number of items",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key item:string*"),
    cmd!("topk.count", -1, WRITE | MODULE, KEY1, "module", "2.0.0", "Return the count for one or more items are in a sketch", count;
        complexity: "O(n) where n is the number of items",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key item:string*"),
    cmd!("topk.list", -1, READONLY | MODULE, KEY1, "module", "2.0.0", "Return full list of items in Top K list", list;
        complexity: "O(k) where k is the value of top-k",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key withcount:WITHCOUNT?"),
    cmd!("topk.info", -1, READONLY | MODULE, KEY1, "module", "2.0.0", "Returns information about a sketch", info;
        complexity: "O(1)",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key"),
];
