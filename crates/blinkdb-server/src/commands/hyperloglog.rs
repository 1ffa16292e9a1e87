//! HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST, over
//! sketches kept in string values in Redis's own format
//! (`blinkdb_engine::hll`). What they propagate is what Redis 7.0
//! propagates: PFADD and PFMERGE as given, PFCOUNT of one key when it
//! refreshed the cached count, PFDEBUG GETREG/TODENSE when they turned a
//! sketch dense.

use super::args::{eq_ic, ERR_WRONGTYPE};
use super::Ctx;
use crate::protocol::{Args, Out};
use blinkdb_engine::{
    event::{KEY_MISS, STRING},
    hll::{self, Encoding, HllError, REGISTERS},
    Engine, Entry, Tx, Value,
};
use std::borrow::Cow;

/// `hll-sparse-max-bytes` for this client's command.
fn sparse_max_bytes(ctx: &mut Ctx) -> usize {
    ctx.client.settings(ctx.shared).hll_sparse_max_bytes
}

/// The bytes of a string entry; Err holds the reply (WRONGTYPE, or a failed
/// read of a value kept in the log).
fn bytes_of<'e>(engine: &Engine, e: &'e Entry) -> Result<Cow<'e, [u8]>, String> {
    if !e.value().is_string() {
        return Err(ERR_WRONGTYPE.into());
    }
    engine.string_bytes(e.value())
}

/// Runs `f` on the string at `key` (present, a string), in place when it is
/// in memory. A value kept in the log is read, and stored back in memory if
/// `f` says it changed the bytes. `f` returns its result and that flag.
fn edit<R>(
    tx: &mut Tx,
    engine: &Engine,
    db: usize,
    key: &[u8],
    f: impl FnOnce(&mut Vec<u8>) -> (R, bool),
) -> Result<R, String> {
    let mut f = Some(f);
    if let Some((r, _)) = tx.with_str_mut(db, key, |v| f.take().expect("runs once")(v)) {
        return Ok(r);
    }
    let f = f.expect("not run on an in-memory string");
    let (mut bytes, expire_at) = match tx.get(db, key) {
        Some(e) => (bytes_of(engine, e)?.into_owned(), e.expire_at),
        None => return Err(ERR_WRONGTYPE.into()),
    };
    let (r, changed) = f(&mut bytes);
    if changed {
        tx.insert(db, key, Entry::string_expiring(bytes, expire_at));
    }
    Ok(r)
}

/// Adds `elements` to a sketch. Returns whether a register changed, or the
/// error, and whether the bytes changed: as in Redis, additions made before
/// an element hit a corrupt code stay (and are neither logged nor notified).
fn add_all(v: &mut Vec<u8>, elements: &[&[u8]], max: usize) -> (Result<bool, HllError>, bool) {
    if let Err(e) = hll::encoding_of(v) {
        return (Err(e), false);
    }
    let mut updated = false;
    for e in elements {
        match hll::add(v, e, max) {
            Ok(changed) => updated |= changed,
            Err(err) => return (Err(err), updated),
        }
    }
    if updated {
        hll::invalidate_cache(v);
    }
    (Ok(updated), updated)
}

/// `cmd key args...` as the log record.
fn record<'a>(cmd: &'static [u8], args: &'a Args) -> Vec<&'a [u8]> {
    let mut rec: Vec<&[u8]> = Vec::with_capacity(args.len());
    rec.push(cmd);
    rec.extend(args[1..].iter().map(|a| &a[..]));
    rec
}

fn hll_error(out: &mut Out, e: HllError) {
    out.error(&e.to_string());
}

pub fn pfadd(ctx: &mut Ctx, args: &Args) {
    let key = args[1];
    let elements = &args[2..];
    let engine = &ctx.shared.engine;
    // Adding elements a large sketch already holds, the usual case once it
    // is dense, changes nothing: answered under the shared lock, with no
    // write, event or record, as Redis answers it.
    let held = engine.read_live(ctx.client.db, key, |e| match e.value() {
        Value::Str(s, _) => hll::dense_holds_all(s, elements),
        _ => false,
    });
    if held == Some(true) {
        return ctx.out.int(0);
    }
    let max = sparse_max_bytes(ctx);
    ctx.write1(key, |tx, db, out| {
        // An in-memory string is edited in place at the first lookup; the
        // other cases (absent, another type, a value kept in the log) look
        // again.
        let mut created = false;
        let added = match tx.with_str_mut(db, key, |v| add_all(v, elements, max).0) {
            Some(r) => Ok(r),
            None => match tx.get(db, key) {
                None => {
                    // A new sketch counts as an update even with no elements.
                    let mut v = hll::new_sparse();
                    let _ = add_all(&mut v, elements, max);
                    hll::invalidate_cache(&mut v);
                    tx.insert(db, key, Entry::new(Value::str(v)));
                    created = true;
                    Ok(Ok(true))
                }
                Some(e) if !e.value().is_string() => return out.error(ERR_WRONGTYPE),
                Some(_) => edit(tx, engine, db, key, |v| add_all(v, elements, max)),
            },
        };
        let updated = match added {
            Err(e) => return out.error(&e),
            Ok(Err(e)) => return hll_error(out, e),
            Ok(Ok(updated)) => updated,
        };
        if updated {
            if !created {
                tx.modified(db, key);
            }
            tx.log(db, &record(b"PFADD", args));
            tx.notify(STRING, "pfadd", db, key);
        }
        out.int(updated as i64);
    });
}

/// What PFCOUNT of one key found under the shared lock.
enum Seen {
    Answered,
    /// A sketch whose cached count is stale, or a value kept in the log.
    NeedsWrite,
}

pub fn pfcount(ctx: &mut Ctx, args: &Args) {
    if args.len() > 2 {
        return pfcount_union(ctx, args);
    }
    let key = args[1];
    let db = ctx.client.db;
    let engine = &ctx.shared.engine;
    let out = &mut *ctx.out;
    let mut hit = false;
    let seen = engine.read(db, key, |e| {
        let Some(e) = e else {
            out.int(0);
            return Seen::Answered;
        };
        hit = true;
        match e.value() {
            Value::Str(s, _) => match hll::encoding_of(s) {
                Err(err) => hll_error(out, err),
                Ok(_) => match hll::cached_count(s) {
                    Some(c) => out.int(c as i64),
                    None => return Seen::NeedsWrite,
                },
            },
            Value::Blob(..) => return Seen::NeedsWrite,
            _ => out.error(ERR_WRONGTYPE),
        }
        Seen::Answered
    });
    ctx.client.count_lookup(hit);
    if let Seen::NeedsWrite = seen {
        refresh_count(ctx, key);
    }
}

/// PFCOUNT of one key whose cached count must be recomputed: stores it in
/// the sketch and logs PFCOUNT, as Redis propagates it.
fn refresh_count(ctx: &mut Ctx, key: &[u8]) {
    let engine = &ctx.shared.engine;
    ctx.write1(key, |tx, db, out| {
        match tx.get(db, key) {
            None => return out.int(0),
            Some(e) if !e.value().is_string() => return out.error(ERR_WRONGTYPE),
            Some(_) => {}
        }
        let counted = edit(tx, engine, db, key, |v| {
            if let Err(e) = hll::encoding_of(v) {
                return (Err(e), false);
            }
            if let Some(c) = hll::cached_count(v) {
                return (Ok((c, false)), false);
            }
            match hll::count(v) {
                Ok(c) => {
                    hll::set_cached_count(v, c);
                    (Ok((c, true)), true)
                }
                Err(e) => (Err(e), false),
            }
        });
        match counted {
            Err(e) => out.error(&e),
            Ok(Err(e)) => hll_error(out, e),
            Ok(Ok((c, stored))) => {
                if stored {
                    tx.modified(db, key);
                    tx.log(db, &[b"PFCOUNT", key]);
                }
                out.int(c as i64);
            }
        }
    });
}

/// PFCOUNT of several keys: the estimate of their union, cached nowhere.
fn pfcount_union(ctx: &mut Ctx, args: &Args) {
    let db = ctx.client.db;
    let engine = &ctx.shared.engine;
    let mut max = Box::new([0u8; REGISTERS]);
    for key in &args[1..] {
        let merged = engine.read(db, key, |e| match e {
            None => Ok(false),
            Some(e) => bytes_of(engine, e).and_then(|b| {
                hll::merge_into(&mut max, &b)
                    .map(|_| true)
                    .map_err(|e| e.to_string())
            }),
        });
        match merged {
            Ok(hit) => ctx.client.count_lookup(hit),
            Err(e) => {
                ctx.client.count_lookup(true);
                return ctx.out.error(&e);
            }
        }
    }
    ctx.out.int(hll::estimate(&hll::raw_histogram(&max)) as i64);
}

pub fn pfmerge(ctx: &mut Ctx, args: &Args) {
    let db = ctx.client.db;
    let max_bytes = sparse_max_bytes(ctx);
    let engine = &ctx.shared.engine;
    let keys: Vec<(usize, &[u8])> = args[1..].iter().map(|k| (db, &k[..])).collect();
    let (hits, misses) = ctx.write(&keys, |tx, out| {
        let (mut hits, mut misses) = (0, 0);
        let mut max = Box::new([0u8; REGISTERS]);
        let mut make_dense = false;
        // The destination is a source too, as in Redis.
        for key in &args[1..] {
            let Some(e) = tx.get(db, key) else {
                misses += 1;
                tx.notify(KEY_MISS, "keymiss", db, key);
                continue;
            };
            hits += 1;
            let merged = bytes_of(engine, e).and_then(|b| {
                make_dense |= hll::encoding_of(&b) == Ok(Encoding::Dense);
                hll::merge_into(&mut max, &b).map_err(|e| e.to_string())
            });
            if let Err(e) = merged {
                out.error(&e);
                return (hits, misses);
            }
        }
        let dest = args[1];
        let stored = if tx.exists(db, dest) {
            let r = edit(tx, engine, db, dest, |v| {
                let r = hll::store_merged(v, &max, make_dense, max_bytes);
                let changed = r.is_ok();
                (r, changed)
            });
            if let Ok(Ok(())) = r {
                tx.modified(db, dest);
            }
            r
        } else {
            let mut v = hll::new_sparse();
            let r = hll::store_merged(&mut v, &max, make_dense, max_bytes);
            tx.insert(db, dest, Entry::new(Value::str(v)));
            Ok(r)
        };
        match stored {
            Err(e) => out.error(&e),
            Ok(Err(e)) => hll_error(out, e),
            Ok(Ok(())) => {
                tx.log(db, &record(b"PFMERGE", args));
                // Redis reports a merge as a mass PFADD.
                tx.notify(STRING, "pfadd", db, dest);
                out.ok();
            }
        }
        (hits, misses)
    });
    ctx.client.keyspace_hits += hits;
    ctx.client.keyspace_misses += misses;
}

/// What a PFDEBUG subcommand answers.
enum Debug {
    Registers(Vec<u8>),
    Text(String),
    Status(&'static str),
    Int(i64),
}

pub fn pfdebug(ctx: &mut Ctx, args: &Args) {
    let (sub, key) = (args[1], args[2]);
    let engine = &ctx.shared.engine;
    ctx.write1(key, |tx, db, out| {
        match tx.get(db, key) {
            None => return out.error("ERR The specified key does not exist"),
            Some(e) if !e.value().is_string() => return out.error(ERR_WRONGTYPE),
            Some(_) => {}
        }
        let done = edit(tx, engine, db, key, |v| {
            let enc = match hll::encoding_of(v) {
                Ok(enc) => enc,
                Err(e) => return (Err(e.to_string()), false),
            };
            let getreg = eq_ic(sub, "getreg");
            if getreg || eq_ic(sub, "todense") {
                let converted = enc == Encoding::Sparse;
                if converted {
                    match hll::to_dense(v) {
                        Ok(dense) => *v = dense,
                        Err(e) => return (Err(e.to_string()), false),
                    }
                }
                let reply = if getreg {
                    Debug::Registers(hll::dense_registers(v).collect())
                } else {
                    Debug::Int(converted as i64)
                };
                (Ok((reply, converted)), converted)
            } else if eq_ic(sub, "decode") {
                if enc != Encoding::Sparse {
                    return (Err("ERR HLL encoding is not sparse".into()), false);
                }
                (Ok((Debug::Text(hll::decode_sparse(v)), false)), false)
            } else if eq_ic(sub, "encoding") {
                (Ok((Debug::Status(enc.name()), false)), false)
            } else {
                // Redis formats the name as a C string.
                let name = &sub[..sub.iter().position(|&b| b == 0).unwrap_or(sub.len())];
                let msg = format!(
                    "ERR Unknown PFDEBUG subcommand '{}'",
                    String::from_utf8_lossy(name)
                );
                (Err(msg), false)
            }
        });
        let (reply, converted) = match done {
            Ok(Ok(r)) => r,
            Ok(Err(e)) | Err(e) => return out.error(&e),
        };
        if converted {
            // Redis propagates the conversion, without a keyspace event.
            let sub = sub.to_ascii_uppercase();
            tx.log(db, &[b"PFDEBUG", &sub, key]);
        }
        match reply {
            Debug::Registers(regs) => {
                out.array(regs.len());
                for r in regs {
                    out.int(r as i64);
                }
            }
            Debug::Text(t) => out.bulk(t.as_bytes()),
            Debug::Status(s) => out.simple(s),
            Debug::Int(n) => out.int(n),
        }
    });
}

pub fn pfselftest(ctx: &mut Ctx, _args: &Args) {
    let max = sparse_max_bytes(ctx);
    match hll::selftest(&mut rand::thread_rng(), max) {
        Ok(()) => ctx.out.ok(),
        Err(e) => ctx.out.error(&e),
    }
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("pfadd", -2, WRITE | DENYOOM | FAST, KEY1, "hyperloglog", "2.8.9", "Adds the specified elements to the specified HyperLogLog.", pfadd;
        acl: acl::HYPERLOGLOG,
        complexity: "O(1) to add every element.",
        keys: "RW,insert index:1 range:0:1:0",
        args: "key:key element:string?*"),
    cmd!("pfcount", -2, READONLY | MAY_REPLICATE, ALLKEYS, "hyperloglog", "2.8.9", "Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s).", pfcount;
        acl: acl::HYPERLOGLOG,
        complexity: "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.",
        keys: "RW,access index:1 range:-1:1:0 | RW because it may change the internal representation of the key, and propagate to replicas",
        args: "key:key*"),
    cmd!("pfmerge", -2, WRITE | DENYOOM, ALLKEYS, "hyperloglog", "2.8.9", "Merge N different HyperLogLogs into a single one.", pfmerge;
        acl: acl::HYPERLOGLOG,
        complexity: "O(N) to merge N HyperLogLogs, but with high constant times.",
        keys: "RW,access,insert index:1 range:0:1:0; RO,access index:2 range:-1:1:0",
        args: "destkey:key sourcekey:key#1*"),
    // Gated by enable-debug-command (PROTECTED) in BlinkDB; Redis 7.0 runs it
    // for anyone.
    cmd!("pfdebug", 3, WRITE | DENYOOM | ADMIN | PROTECTED, (2, 2, 1), "hyperloglog", "2.8.9", "Internal commands for debugging HyperLogLog values", pfdebug;
        acl: acl::HYPERLOGLOG,
        complexity: "N/A",
        keys: "RW,access index:2 range:0:1:0",
        args: "subcommand:string key:key",
        doc_flags: doc::SYSCMD),
    cmd!("pfselftest", 1, ADMIN, NOKEYS, "hyperloglog", "2.8.9", "An internal command for testing HyperLogLog values", pfselftest;
        acl: acl::HYPERLOGLOG,
        complexity: "N/A",
        doc_flags: doc::SYSCMD),
];
