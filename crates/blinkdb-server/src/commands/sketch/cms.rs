//! CMS.* with RedisBloom 2.8.2's replies and error texts (src/rm_cms.c), on
//! count-min sketches (`blinkdb_engine::sketch::cms`).
//!
//! RedisBloom checks in a fixed order (arity, the key, then each argument) and
//! answers the first failure; the handlers below keep that order. Writes are
//! logged as sent (RedisBloom replicates them verbatim), and only when
//! RedisBloom replicates them: CMS.INCRBY also when a counter overflowed.
//! RedisBloom publishes no keyspace events for these commands.
//!
//! RedisBloom 2.8.2 as released (commit 205ed64d, which the `v2.8.2` tag
//! predates) refuses dimensions whose product overflows and a numkeys below 1;
//! a sketch too large to allocate aborts redis-server 7.0 (no TryCalloc there).
//! Here counters past `sketch-max-memory` are refused with the text RedisBloom
//! gives when its allocation fails.

use super::{create, get, modify, read, update, WrongType};
use crate::commands::args::{parse_f64, parse_i64, ERR_WRONGTYPE};
use crate::commands::Ctx;
use crate::protocol::{Args, Out};
use blinkdb_engine::cms::{dims_from_prob, CountMin};
use blinkdb_engine::{Sketch, SketchKind, Tx};
use smallvec::SmallVec;
use std::sync::Arc;

const ERR_NO_KEY: &str = "CMS: key does not exist";
const ERR_EXISTS: &str = "CMS: key already exists";
const ERR_WIDTH: &str = "CMS: invalid width";
const ERR_DEPTH: &str = "CMS: invalid depth";
const ERR_OVER_EST: &str = "CMS: invalid overestimation value";
const ERR_PROB: &str = "CMS: invalid prob value";
const ERR_NUMBER: &str = "CMS: Cannot parse number";
const ERR_NEGATIVE: &str = "CMS: Number cannot be negative";
const ERR_INCR_OVERFLOW: &str = "CMS: INCRBY overflow";
const ERR_NUMKEYS: &str = "CMS: invalid numkeys";
const ERR_NUMKEYS_POSITIVE: &str = "CMS: Number of keys must be positive";
const ERR_KEY_COUNT: &str = "CMS: wrong number of keys";
const ERR_KEY_WEIGHT_COUNT: &str = "CMS: wrong number of keys/weights";
const ERR_WEIGHT: &str = "CMS: invalid weight value";
const ERR_DIMS: &str = "CMS: width/depth is not equal";

fn max_bytes(ctx: &mut Ctx) -> u64 {
    ctx.client.settings(ctx.shared).sketch_max_memory
}

/// GetCMSKey's errors: no key, or a key of another type.
fn lookup_error<T>(found: &Result<Option<T>, WrongType>) -> &'static str {
    match found {
        Err(WrongType) => ERR_WRONGTYPE,
        _ => ERR_NO_KEY,
    }
}

/// The key's sketch, shared (a merge reads several while it writes one).
fn shared_sketch(tx: &mut Tx, db: usize, key: &[u8]) -> Result<Option<Arc<Sketch>>, WrongType> {
    get::<CountMin>(tx, db, key)?;
    Ok(tx.get(db, key).and_then(|e| e.value().as_sketch().cloned()))
}

/// CMS.INITBYDIM's width and depth, or CMS.INITBYPROB's error and
/// probability turned into them.
fn parse_dims(args: &Args, by_prob: bool) -> Result<(u64, u64), &'static str> {
    if !by_prob {
        let width = parse_i64(args[2]).filter(|w| *w >= 1).ok_or(ERR_WIDTH)?;
        let depth = parse_i64(args[3]).filter(|d| *d >= 1).ok_or(ERR_DEPTH)?;
        return Ok((width as u64, depth as u64));
    }
    let error = parse_f64(args[2])
        .filter(|e| *e > 0.0 && *e < 1.0)
        .ok_or(ERR_OVER_EST)?;
    let prob = parse_f64(args[3])
        .filter(|p| *p > 0.0 && *p < 1.0)
        .ok_or(ERR_PROB)?;
    Ok(dims_from_prob(error, prob))
}

fn init(ctx: &mut Ctx, args: &Args, by_prob: bool, name: &str) {
    if args.len() != 4 {
        return ctx.arity_error(name);
    }
    let key = args[1];
    let max = max_bytes(ctx);
    ctx.write1(key, |tx, db, out| {
        // Opened for writing: watchers see a change even when refused.
        tx.modified(db, key);
        if tx.get(db, key).is_some() {
            return out.error(ERR_EXISTS);
        }
        let made = parse_dims(args, by_prob)
            .and_then(|(w, d)| CountMin::new(w, d, max).map_err(|e| -> &'static str { e.text() }));
        match made {
            Ok(cms) => {
                create(tx, db, key, cms);
                tx.log(db, args);
                tx.sketch_changed(db, key);
                out.ok()
            }
            Err(e) => out.error(e),
        }
    });
}

pub fn initbydim(ctx: &mut Ctx, args: &Args) {
    init(ctx, args, false, "cms.initbydim");
}

pub fn initbyprob(ctx: &mut Ctx, args: &Args) {
    init(ctx, args, true, "cms.initbyprob");
}

pub fn incrby(ctx: &mut Ctx, args: &Args) {
    if args.len() < 4 || args.len() % 2 == 1 {
        return ctx.arity_error("cms.incrby");
    }
    let key = args[1];
    // Parsed before the lookup; a key error still comes first. Room
    // reserved once (a collect through `Result` grows it pair by pair).
    let pairs = (|| {
        let mut pairs = SmallVec::<[(&[u8], u64); 4]>::with_capacity(args.len() / 2 - 1);
        for pair in args[2..].chunks_exact(2) {
            match parse_i64(pair[1]) {
                None => return Err(ERR_NUMBER),
                Some(v) if v < 0 => return Err(ERR_NEGATIVE),
                Some(v) => pairs.push((pair[0], v as u64)),
            }
        }
        Ok(pairs)
    })();
    // The key's lookup is a keyspace hit or miss (RedisBloom opens it for
    // reading, as the queries do).
    let hit = ctx.write1(key, |tx, db, out| {
        let pairs = match pairs {
            Ok(pairs) => pairs,
            Err(e) => {
                let found = get::<CountMin>(tx, db, key).map(|c| c.map(|_| ()));
                out.error(if matches!(found, Ok(Some(()))) {
                    e
                } else {
                    lookup_error(&found)
                });
                return !matches!(found, Ok(None));
            }
        };
        // One lookup (`update`): a refused command signals nothing.
        let mins = update(tx, db, key, |cms: &mut CountMin| {
            pairs
                .iter()
                .map(|(item, value)| cms.incr_by(item, *value))
                .collect::<SmallVec<[u32; 4]>>()
        });
        let mins = match mins {
            Ok(Some(mins)) => mins,
            refused => {
                out.error(lookup_error(&refused));
                return !matches!(refused, Ok(None));
            }
        };
        out.array(mins.len());
        for min in mins {
            match min {
                u32::MAX => out.error(ERR_INCR_OVERFLOW),
                n => out.int(n as i64),
            }
        }
        // RedisBloom 2.8.2 opens the key read-only here (no WATCH signal): a
        // change it made is signalled all the same (by `update`), as
        // RedisBloom 8 does.
        tx.log(db, args);
        tx.sketch_changed(db, key);
        true
    });
    ctx.client.count_lookup(hit);
}

pub fn query(ctx: &mut Ctx, args: &Args) {
    if args.len() < 3 {
        return ctx.arity_error("cms.query");
    }
    read(
        ctx,
        args[1],
        |cms: Result<Option<&CountMin>, _>, out| match cms {
            Ok(Some(cms)) => {
                out.array(args.len() - 2);
                for item in &args[2..] {
                    out.int(cms.query(item) as i64);
                }
            }
            missing => out.error(lookup_error(&missing)),
        },
    );
}

/// CMS.MERGE's weights and source count, checked against the arguments
/// before anything is looked up or allocated.
fn merge_layout(args: &Args) -> Result<(usize, bool), &'static str> {
    let numkeys = parse_i64(args[2]).ok_or(ERR_NUMKEYS)?;
    if numkeys <= 0 {
        return Err(ERR_NUMKEYS_POSITIVE);
    }
    let rest = &args[3..];
    // RMUtil_ArgIndex: the first argument equal to WEIGHTS, any case.
    let weights_at = rest.iter().position(|a| a.eq_ignore_ascii_case(b"WEIGHTS"));
    let n = rest.len() as i64;
    match weights_at {
        None if numkeys != n => Err(ERR_KEY_COUNT),
        Some(pos) if pos as i64 != numkeys || n != 1 + 2 * numkeys => Err(ERR_KEY_WEIGHT_COUNT),
        _ => Ok((numkeys as usize, weights_at.is_some())),
    }
}

pub fn merge(ctx: &mut Ctx, args: &Args) {
    if args.len() < 4 {
        return ctx.arity_error("cms.merge");
    }
    let dest = args[1];
    let db = ctx.db();
    let keys: Vec<(usize, &[u8])> = std::iter::once(dest)
        .chain(args[3..].iter().copied())
        .map(|k| (db, k))
        .collect();
    ctx.write(&keys, |tx, out| {
        tx.modified(db, dest);
        let target = match shared_sketch(tx, db, dest) {
            Ok(Some(s)) => s,
            missing => return out.error(lookup_error(&missing)),
        };
        let (numkeys, weighted) = match merge_layout(args) {
            Ok(l) => l,
            Err(e) => return out.error(e),
        };
        let mut sources: Vec<(Arc<Sketch>, i64)> = Vec::with_capacity(numkeys);
        let target_cms = CountMin::of(&target).expect("checked by shared_sketch");
        for i in 0..numkeys {
            let weight = if weighted {
                match parse_i64(args[3 + numkeys + 1 + i]) {
                    Some(w) => w,
                    None => return out.error(ERR_WEIGHT),
                }
            } else {
                1
            };
            let src = match shared_sketch(tx, db, args[3 + i]) {
                Ok(Some(s)) => s,
                missing => return out.error(lookup_error(&missing)),
            };
            let cms = CountMin::of(&src).expect("checked by shared_sketch");
            if cms.width() != target_cms.width() || cms.depth() != target_cms.depth() {
                return out.error(ERR_DIMS);
            }
            sources.push((src, weight));
        }
        let refs: Vec<(&CountMin, i64)> = sources
            .iter()
            .map(|(s, w)| (CountMin::of(s).expect("checked above"), *w))
            .collect();
        let merged = target_cms.merged(&refs);
        // Nothing shares the destination any more: it changes in place.
        drop(refs);
        drop(sources);
        drop(target);
        match merged {
            Ok(merged) => {
                modify(tx, db, dest, |cms: &mut CountMin| *cms = merged).expect("checked above");
                tx.log(db, args);
                tx.sketch_changed(db, dest);
                out.ok()
            }
            Err(e) => out.error(e.text()),
        }
    });
}

pub fn info(ctx: &mut Ctx, args: &Args) {
    if args.len() != 2 {
        return ctx.arity_error("cms.info");
    }
    read(
        ctx,
        args[1],
        |cms: Result<Option<&CountMin>, _>, out: &mut Out| match cms {
            Ok(Some(cms)) => {
                out.map(3);
                out.simple("width");
                out.int(cms.width() as i64);
                out.simple("depth");
                out.int(cms.depth() as i64);
                out.simple("count");
                // A size_t replied as a long long.
                out.int(cms.count() as i64);
            }
            missing => out.error(lookup_error(&missing)),
        },
    );
}

use crate::commands::table::cmd;

/// This family's entries of the command table, as redis-server with
/// RedisBloom 2.8.2 lists them: module commands (no ACL categories), arity
/// -1, key range 1 1 1 (MERGE's sources are not declared), `write deny-oom`
/// or `readonly`. DOCS add RedisBloom's summary, complexity and arguments
/// (commands.json).
#[rustfmt::skip]
pub(in crate::commands) const COMMANDS: &[crate::commands::table::CommandSpec] = &[
    cmd!("cms.initbydim", -1, W | MODULE, KEY1, "module", "2.0.0", "Initializes a Count-Min Sketch to dimensions specified by user", initbydim;
        complexity: "O(1)",
        props: props::FILE_COVERED,
        args: "key:key width:integer depth:integer"),
    cmd!("cms.initbyprob", -1, W | MODULE, KEY1, "module", "2.0.0", "Initializes a Count-Min Sketch to accommodate requested tolerances.", initbyprob;
        complexity: "O(1)",
        props: props::FILE_COVERED,
        args: "key:key error:double probability:double"),
    cmd!("cms.incrby", -1, W | MODULE, KEY1, "module", "2.0.0", "Increases the count of one or more items by increment", incrby;
        complexity: "O(n) where n is the number of items",
        props: props::FILE_COVERED,
        args: "key:key items:block*(item:string increment:integer)"),
    cmd!("cms.query", -1, READONLY | MODULE, KEY1, "module", "2.0.0", "Returns the count for one or more items in a sketch", query;
        complexity: "O(n) where n is the number of items",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key item:string*"),
    cmd!("cms.merge", -1, W | MODULE, KEY1, "module", "2.0.0", "Merges several sketches into one sketch", merge;
        complexity: "O(n) where n is the number of sketches",
        args: "destination:key numKeys:integer source:key* weight:block?(weights:WEIGHTS weight:double*)"),
    cmd!("cms.info", -1, READONLY | MODULE, KEY1, "module", "2.0.0", "Returns information about a sketch", info;
        complexity: "O(1)",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key"),
];
