//! TDIGEST.* with RedisBloom 2.8.2's replies and error texts, on the digest
//! of `blinkdb_engine::tdigest` (RedisBloom's t-digest-c).
//!
//! What RedisBloom's module API does around its code, done here too:
//! - A key opened for writing (CREATE, RESET, ADD) is signalled modified
//!   when closed, even on an error reply: WATCH sees it.
//! - MERGE stores its result with RedisModule_ModuleTypeSetValue: the old
//!   value goes (and its TTL), the key is `new` again.
//! - Queries (QUANTILE, CDF, TRIMMED_MEAN, RANK, BYRANK and the reverse ones)
//!   and MERGE's sources compress the digest in place, unsignalled and
//!   unlogged: later answers depend on when that happened, as RedisBloom's do.
//! - Keys opened for reading count a keyspace hit or miss.
//! - Writes are logged and propagated as sent, only when they succeed.

use super::super::args::{parse_i64, ERR_WRONGTYPE};
use super::super::table::cmd;
use super::super::Ctx;
use super::{create as store, get, modify_found, read, update, WrongType};
use crate::protocol::{Args, Out};
use blinkdb_engine::tdigest::{c_double_to_i64, string_to_double, TDigest, DEFAULT_COMPRESSION};
use blinkdb_engine::Tx;
use smallvec::SmallVec;

const ERR_NO_KEY: &str = "ERR T-Digest: key does not exist";
const ERR_OVERFLOW: &str = "ERR T-Digest: overflow detected";
const ERR_KEYWORD: &str = "ERR T-Digest: wrong keyword";

/// `_TDigest_KeyCheck`'s reply for a key that is not a digest.
fn key_error(found: &Result<Option<&TDigest>, WrongType>) -> Option<&'static str> {
    match found {
        Ok(Some(_)) => None,
        Ok(None) => Some(ERR_NO_KEY),
        Err(WrongType) => Some(ERR_WRONGTYPE),
    }
}

/// Runs `f` on the key's digest in place, unsignalled (a query's
/// compression, or a write that signals for itself). A digest with buffered
/// samples may be compressed: its file takes it at the next checkpoint, so
/// a restart has the digest the server had (a log replay, which runs no
/// query, has it uncompressed, as it had before files).
fn with_digest<R>(tx: &mut Tx, db: usize, key: &[u8], f: impl FnOnce(&mut TDigest) -> R) -> R {
    if matches!(get::<TDigest>(tx, db, key), Ok(Some(t)) if t.unmerged_nodes() > 0) {
        tx.sketch_changed(db, key);
    }
    tx.unsignaled(|tx| modify_found::<TDigest, R>(tx, db, key, f))
}

/// `_TDigest_ParseCompressionParameter`.
fn parse_compression(arg: &[u8]) -> Result<i64, &'static str> {
    let c = parse_i64(arg).ok_or("ERR T-Digest: error parsing compression parameter")?;
    if c <= 0 {
        return Err("ERR T-Digest: compression parameter needs to be a positive integer");
    }
    Ok(c)
}

/// `RMUtil_ArgIndex`: the first argument equal to `word`, ignoring case.
fn arg_index(word: &str, args: &[&[u8]]) -> Option<usize> {
    args.iter()
        .position(|a| a.eq_ignore_ascii_case(word.as_bytes()))
}

/// `td_init` within `sketch-max-memory`, its buffer allocated whole.
fn create_digest(compression: i64, max_bytes: u64) -> Result<TDigest, ()> {
    let mut t = TDigest::new(compression as f64, max_bytes).map_err(|_| ())?;
    t.allocate_all();
    Ok(t)
}

fn max_bytes(ctx: &mut Ctx) -> u64 {
    ctx.client.settings(ctx.shared).sketch_max_memory
}

pub fn create(ctx: &mut Ctx, args: &Args) {
    if args.len() != 2 && args.len() != 4 {
        return ctx.arity_error("tdigest.create");
    }
    let key = args[1];
    let max = max_bytes(ctx);
    ctx.write1(key, |tx, db, out| {
        tx.modified(db, key);
        match get::<TDigest>(tx, db, key) {
            Err(WrongType) => return out.error(ERR_WRONGTYPE),
            Ok(Some(_)) => return out.error("ERR T-Digest: key already exists"),
            Ok(None) => {}
        }
        let mut compression = DEFAULT_COMPRESSION;
        if args.len() == 4 {
            if arg_index("COMPRESSION", &args[2..]).is_none() {
                return out.error(ERR_KEYWORD);
            }
            compression = match parse_compression(args[3]) {
                Ok(c) => c,
                Err(e) => return out.error(e),
            };
        }
        let Ok(t) = create_digest(compression, max) else {
            return out.error("ERR T-Digest: allocation failed");
        };
        store(tx, db, key, t);
        tx.log(db, args);
        tx.sketch_changed(db, key);
        out.ok();
    });
}

pub fn reset(ctx: &mut Ctx, args: &Args) {
    if args.len() != 2 {
        return ctx.arity_error("tdigest.reset");
    }
    let key = args[1];
    ctx.write1(key, |tx, db, out| {
        tx.modified(db, key);
        if let Some(e) = key_error(&get::<TDigest>(tx, db, key)) {
            return out.error(e);
        }
        with_digest(tx, db, key, |t| t.reset());
        tx.log(db, args);
        tx.sketch_changed(db, key);
        out.ok();
    });
}

pub fn add(ctx: &mut Ctx, args: &Args) {
    if args.len() < 3 {
        return ctx.arity_error("tdigest.add");
    }
    let key = args[1];
    // Parsed before the lookup; a key error still comes first. Room
    // reserved once (a collect through `Result` grows it value by value).
    let values = (|| {
        let mut values = SmallVec::<[f64; 8]>::with_capacity(args.len() - 2);
        for a in &args[2..] {
            match string_to_double(a) {
                None => return Err("ERR T-Digest: error parsing val parameter"),
                Some(v) if !v.is_finite() => {
                    return Err("ERR T-Digest: val parameter needs to be a finite number")
                }
                Some(v) => values.push(v),
            }
        }
        Ok(values)
    })();
    ctx.write1(key, |tx, db, out| {
        // One lookup (`update`); samples added before an overflow stay,
        // unlogged, as in RedisBloom.
        let added = update(tx, db, key, |t: &mut TDigest| {
            let values = values.as_ref().ok()?;
            Some(values.iter().try_for_each(|v| t.add(*v, 1)))
        });
        if !matches!(added, Ok(Some(_))) {
            // Opened for writing: signalled whatever is found.
            tx.modified(db, key);
        }
        match added {
            Err(WrongType) => out.error(ERR_WRONGTYPE),
            Ok(None) => out.error(ERR_NO_KEY),
            Ok(Some(Some(Ok(())))) => {
                tx.log(db, args);
                tx.sketch_changed(db, key);
                out.ok()
            }
            Ok(Some(Some(Err(_)))) => out.error(ERR_OVERFLOW),
            Ok(Some(None)) => out.error(values.expect_err("added nothing: a value is bad")),
        }
    });
}

/// MERGE's options after the source keys: COMPRESSION and OVERRIDE found
/// anywhere among them (other words are ignored once one is there).
struct MergeOptions {
    compression: Option<i64>,
    override_: bool,
}

fn merge_options(rest: &[&[u8]]) -> Result<MergeOptions, MergeError> {
    let mut o = MergeOptions {
        compression: None,
        override_: false,
    };
    if rest.is_empty() {
        return Ok(o);
    }
    let at = arg_index("COMPRESSION", rest);
    if let Some(i) = at {
        let value = rest.get(i + 1).ok_or(MergeError::Arity)?;
        o.compression = Some(parse_compression(value).map_err(MergeError::Text)?);
    }
    o.override_ = arg_index("OVERRIDE", rest).is_some();
    if at.is_none() && !o.override_ {
        return Err(MergeError::Text(ERR_KEYWORD));
    }
    Ok(o)
}

enum MergeError {
    Arity,
    Text(&'static str),
}

pub fn merge(ctx: &mut Ctx, args: &Args) {
    if args.len() < 4 {
        return ctx.arity_error("tdigest.merge");
    }
    let dest = args[1];
    let db = ctx.db();
    let max = max_bytes(ctx);
    // Every key named may be a source: lock them all (RedisBloom declares
    // only the destination as a key).
    let mut keys: Vec<(usize, &[u8])> = vec![(db, dest)];
    keys.extend(args[3..].iter().map(|a| (db, &a[..])));
    let mut arity = false;
    let mut lookups: Vec<bool> = Vec::new();
    ctx.write(&keys, |tx, out| {
        // The destination is opened for reading first.
        let start_compression = match get::<TDigest>(tx, db, dest) {
            Err(WrongType) => {
                lookups.push(true);
                return out.error(ERR_WRONGTYPE);
            }
            Ok(t) => t.map(|t| t.compression()),
        };
        lookups.push(start_compression.is_some());
        let Some(numkeys) = parse_i64(args[2]) else {
            return out.error("ERR T-Digest: error parsing numkeys");
        };
        if numkeys <= 0 {
            return out.error("ERR T-Digest: numkeys needs to be a positive integer");
        }
        if numkeys > (args.len() - 3) as i64 {
            arity = true;
            return;
        }
        let numkeys = numkeys as usize;
        let sources = &args[3..3 + numkeys];
        let options = match merge_options(&args[3 + numkeys..]) {
            Ok(o) => o,
            Err(MergeError::Arity) => {
                arity = true;
                return;
            }
            Err(MergeError::Text(e)) => return out.error(e),
        };
        // Compression: the one given; else the destination's (when it
        // exists and OVERRIDE is absent); else the largest of the sources'.
        let use_max =
            options.compression.is_none() && (options.override_ || start_compression.is_none());
        let mut compression = match (options.compression, start_compression) {
            (Some(c), _) => c,
            (None, Some(c)) if !options.override_ => c_double_to_i64(c),
            _ => 0,
        };
        for key in sources {
            let found = if *key == dest {
                if start_compression.is_none() {
                    return out.error(ERR_NO_KEY);
                }
                start_compression
            } else {
                let found = get::<TDigest>(tx, db, key);
                lookups.push(!matches!(found, Ok(None)));
                if let Some(e) = key_error(&found) {
                    return out.error(e);
                }
                found.ok().flatten().map(|t| t.compression())
            };
            if use_max {
                let c = c_double_to_i64(found.expect("checked"));
                compression = compression.max(c);
            }
        }
        let Ok(mut merged) = create_digest(compression, max) else {
            return out.error("ERR T-Digest: allocation of destination digest failed");
        };
        if start_compression.is_some() && !options.override_ {
            // RedisBloom does not check td_merge's result for the
            // destination's own digest either.
            let _ = merge_in(tx, db, dest, &mut merged);
        }
        for key in sources {
            if merge_in(tx, db, key, &mut merged).is_err() {
                return out.error(ERR_OVERFLOW);
            }
        }
        tx.remove(db, dest);
        store(tx, db, dest, merged);
        tx.log(db, args);
        tx.sketch_changed(db, dest);
        out.ok();
    });
    for hit in lookups {
        ctx.client.count_lookup(hit);
    }
    if arity {
        ctx.arity_error("tdigest.merge");
    }
}

/// `td_merge(into, key's digest)`: both are compressed first, the source in
/// place.
fn merge_in(tx: &mut Tx, db: usize, key: &[u8], into: &mut TDigest) -> Result<(), ()> {
    into.compress().map_err(|_| ())?;
    with_digest(tx, db, key, |t| t.compress()).map_err(|_| ())?;
    match get::<TDigest>(tx, db, key) {
        Ok(Some(src)) => into.merge_from(src).map_err(|_| ()),
        _ => Err(()),
    }
}

/// The queries' start: arity, then the key check; `f` runs on the digest
/// in place under the key's lock (the queries compress it).
fn query(
    ctx: &mut Ctx,
    args: &Args,
    name: &str,
    arity_ok: bool,
    f: impl FnOnce(&mut TDigest, &mut Out),
) {
    if !arity_ok {
        return ctx.arity_error(name);
    }
    let key = args[1];
    let hit = ctx.write1(key, |tx, db, out| {
        let found = get::<TDigest>(tx, db, key);
        let hit = !matches!(found, Ok(None));
        if let Some(e) = key_error(&found) {
            out.error(e);
            return hit;
        }
        with_digest(tx, db, key, |t| f(t, out));
        hit
    });
    ctx.client.count_lookup(hit);
}

/// A read that leaves the digest as it is (MIN, MAX, INFO): no write lock.
fn peek(
    ctx: &mut Ctx,
    args: &Args,
    name: &str,
    arity_ok: bool,
    f: impl FnOnce(&TDigest, &mut Out),
) {
    if !arity_ok {
        return ctx.arity_error(name);
    }
    read::<TDigest, ()>(ctx, args[1], |found, out| match key_error(&found) {
        Some(e) => out.error(e),
        None => f(found.ok().flatten().expect("checked"), out),
    });
}

pub fn min(ctx: &mut Ctx, args: &Args) {
    peek(ctx, args, "tdigest.min", args.len() == 2, |t, out| {
        out.double(if t.size() > 0 { t.min() } else { f64::NAN })
    });
}

pub fn max(ctx: &mut Ctx, args: &Args) {
    peek(ctx, args, "tdigest.max", args.len() == 2, |t, out| {
        out.double(if t.size() > 0 { t.max() } else { f64::NAN })
    });
}

fn doubles(out: &mut Out, values: &[f64]) {
    out.array(values.len());
    for v in values {
        out.double(*v);
    }
}

/// Parses every argument after the key with `parse`, or the first error.
fn parse_all<T>(
    args: &Args,
    parse: impl Fn(&[u8]) -> Result<T, &'static str>,
) -> Result<Vec<T>, &'static str> {
    args[2..].iter().map(|a| parse(a)).collect()
}

pub fn quantile(ctx: &mut Ctx, args: &Args) {
    query(ctx, args, "tdigest.quantile", args.len() >= 3, |t, out| {
        let qs = parse_all(args, |a| {
            let q = string_to_double(a).ok_or("ERR T-Digest: error parsing quantile")?;
            if !(0.0..=1.0).contains(&q) {
                return Err("ERR T-Digest: quantile should be in [0,1]");
            }
            Ok(q)
        });
        match qs {
            Ok(qs) => doubles(out, &t.quantile_runs(&qs)),
            Err(e) => out.error(e),
        }
    });
}

pub fn cdf(ctx: &mut Ctx, args: &Args) {
    query(ctx, args, "tdigest.cdf", args.len() >= 3, |t, out| {
        let vals = parse_all(args, |a| {
            string_to_double(a).ok_or("ERR T-Digest: error parsing cdf")
        });
        match vals {
            Ok(vals) => {
                let answers: Vec<f64> = vals.iter().map(|v| t.cdf(*v)).collect();
                doubles(out, &answers)
            }
            Err(e) => out.error(e),
        }
    });
}

pub fn trimmed_mean(ctx: &mut Ctx, args: &Args) {
    query(
        ctx,
        args,
        "tdigest.trimmed_mean",
        args.len() == 4,
        |t, out| {
            let Some(low) = string_to_double(args[2]) else {
                return out.error("ERR T-Digest: error parsing low_cut_percentile");
            };
            let Some(high) = string_to_double(args[3]) else {
                return out.error("ERR T-Digest: error parsing high_cut_percentile");
            };
            if !(0.0..=1.0).contains(&low) || !(0.0..=1.0).contains(&high) {
                return out.error(
                    "ERR T-Digest: low_cut_percentile and high_cut_percentile should be in [0,1]",
                );
            }
            if low >= high {
                return out.error(
                    "ERR T-Digest: low_cut_percentile should be lower than high_cut_percentile",
                );
            }
            out.double(t.trimmed_mean(low, high));
        },
    );
}

fn rank(ctx: &mut Ctx, args: &Args, name: &str, reverse: bool) {
    query(ctx, args, name, args.len() >= 3, |t, out| {
        let vals = parse_all(args, |a| {
            string_to_double(a).ok_or("ERR T-Digest: error parsing value")
        });
        match vals {
            Ok(vals) => {
                let ranks = t.ranks(&vals, reverse);
                out.array(ranks.len());
                for r in ranks {
                    out.int(r);
                }
            }
            Err(e) => out.error(e),
        }
    });
}

pub fn rank_cmd(ctx: &mut Ctx, args: &Args) {
    rank(ctx, args, "tdigest.rank", false);
}

pub fn revrank(ctx: &mut Ctx, args: &Args) {
    rank(ctx, args, "tdigest.revrank", true);
}

fn by_rank(ctx: &mut Ctx, args: &Args, name: &str, reverse: bool) {
    query(ctx, args, name, args.len() >= 3, |t, out| {
        let ranks = parse_all(args, |a| {
            let r = parse_i64(a).ok_or("ERR T-Digest: error parsing rank")?;
            if r < 0 {
                return Err("ERR T-Digest: rank needs to be non negative");
            }
            Ok(r)
        });
        match ranks {
            Ok(ranks) => doubles(out, &t.by_ranks(&ranks, reverse)),
            Err(e) => out.error(e),
        }
    });
}

pub fn byrank(ctx: &mut Ctx, args: &Args) {
    by_rank(ctx, args, "tdigest.byrank", false);
}

pub fn byrevrank(ctx: &mut Ctx, args: &Args) {
    by_rank(ctx, args, "tdigest.byrevrank", true);
}

pub fn info(ctx: &mut Ctx, args: &Args) {
    peek(ctx, args, "tdigest.info", args.len() == 2, |t, out| {
        out.map(9);
        let fields: [(&str, i64); 9] = [
            ("Compression", c_double_to_i64(t.compression())),
            ("Capacity", t.cap() as i64),
            ("Merged nodes", t.merged_nodes() as i64),
            ("Unmerged nodes", t.unmerged_nodes() as i64),
            ("Merged weight", t.merged_weight()),
            ("Unmerged weight", t.unmerged_weight()),
            ("Observations", t.size()),
            ("Total compressions", t.total_compressions()),
            ("Memory usage", t.mem_usage() as i64),
        ];
        for (name, v) in fields {
            out.simple(name);
            out.int(v);
        }
    });
}

/// TDIGEST.*, as redis-server with RedisBloom 2.8.2 lists them: module
/// commands with flags only (no ACL categories, no docs beyond the module's
/// name), arity -1, and one RW key spec even for the reads (MERGE's sources
/// are not declared, as in RedisBloom).
#[rustfmt::skip]
pub(crate) const COMMANDS: &[super::super::table::CommandSpec] = &[
    cmd!("tdigest.create", -1, W | MODULE, KEY1, "module", "2.4.0", "Allocates memory and initializes a new t-digest sketch", create;
        complexity: "O(1)",
        props: props::FILE_COVERED,
        args: "key:key compression:integer=COMPRESSION?"),
    cmd!("tdigest.reset", -1, W | MODULE, KEY1, "module", "2.4.0", "Resets a t-digest sketch: empty the sketch and re-initializes it.", reset;
        complexity: "O(1)",
        props: props::FILE_COVERED,
        args: "key:key"),
    cmd!("tdigest.add", -1, W | MODULE, KEY1, "module", "2.4.0", "Adds one or more observations to a t-digest sketch", add;
        complexity: "O(N) , where N is the number of samples to add",
        props: props::FILE_COVERED,
        args: "key:key value:double*"),
    cmd!("tdigest.merge", -1, W | MODULE, KEY1, "module", "2.4.0", "Merges multiple t-digest sketches into a single sketch", merge;
        complexity: "O(N*K), where N is the number of centroids and K being the number of input sequences",
        args: "destination-key:key numkeys:integer source-key:key* compression:integer=COMPRESSION? override:OVERRIDE?"),
    cmd!("tdigest.min", -1, READONLY | MODULE, KEY1, "module", "2.4.0", "Returns the minimum observation value from a t-digest sketch", min;
        complexity: "O(1)",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key"),
    cmd!("tdigest.max", -1, READONLY | MODULE, KEY1, "module", "2.4.0", "Returns the maximum observation value from a t-digest sketch", max;
        complexity: "O(1)",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key"),
    cmd!("tdigest.quantile", -1, READONLY | MODULE, KEY1, "module", "2.4.0", "Returns, for each input fraction, an estimation of the value (floating point) that is smaller than the given fraction of observations", quantile;
        complexity: "O(N) where N is the number of quantiles specified.",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key quantile:double*"),
    cmd!("tdigest.cdf", -1, READONLY | MODULE, KEY1, "module", "2.4.0", "Returns, for each input value, an estimation of the fraction (floating-point) of (observations smaller than the given value + half the observations equal to the given value)", cdf;
        complexity: "O(N) where N is the number of values specified.",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key value:double*"),
    cmd!("tdigest.trimmed_mean", -1, READONLY | MODULE, KEY1, "module", "2.4.0", "Returns an estimation of the mean value from the sketch, excluding observation values outside the low and high cutoff quantiles", trimmed_mean;
        complexity: "O(N) where N is the number of centroids",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key low_cut_quantile:double high_cut_quantile:double"),
    cmd!("tdigest.rank", -1, READONLY | MODULE, KEY1, "module", "2.4.0", "Returns, for each input value (floating-point), the estimated rank of the value (the number of observations in the sketch that are smaller than the value + half the number of observations that are equal to the value)", rank_cmd;
        complexity: "O(1)",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key value:double*"),
    cmd!("tdigest.revrank", -1, READONLY | MODULE, KEY1, "module", "2.4.0", "Returns, for each input value (floating-point), the estimated reverse rank of the value (the number of observations in the sketch that are larger than the value + half the number of observations that are equal to the value)", revrank;
        complexity: "O(1)",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key value:double*"),
    cmd!("tdigest.byrank", -1, READONLY | MODULE, KEY1, "module", "2.4.0", "Returns, for each input rank, an estimation of the value (floating-point) with that rank", byrank;
        complexity: "O(1)",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key rank:double*"),
    cmd!("tdigest.byrevrank", -1, READONLY | MODULE, KEY1, "module", "2.4.0", "Returns, for each input reverse rank, an estimation of the value (floating-point) with that reverse rank", byrevrank;
        complexity: "O(1)",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key reverse_rank:double*"),
    cmd!("tdigest.info", -1, READONLY | MODULE, KEY1, "module", "2.4.0", "Returns information and statistics about a t-digest sketch", info;
        complexity: "O(1)",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key"),
];
