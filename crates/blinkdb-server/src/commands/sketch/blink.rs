//! BlinkDB's own commands on RedisBloom's structures (issue 45's "beyond
//! RedisBloom"): BLINK.CFMERGE merges cuckoo filters, BLINK.CMSDECAY ages a
//! count-min sketch. They live in their own `BLINK.` namespace so that a
//! later RedisBloom command of the same purpose (a CF.MERGE, say) cannot
//! clash with them, and they change no RedisBloom reply. (`BLINKDB.` is
//! taken: it names the log's internal records, which replication rewrites.)
//!
//! They are ordinary commands, not module ones: ACL categories derived from
//! their flags (`@write @slow`), arity and key specs checked by the table.
//! Both are deterministic (a fixed merge order, IEEE arithmetic), so they
//! are logged as sent: BlinkDB replicas and AOF replay rebuild the same
//! bytes. redis-server with RedisBloom does not know them (docs/compatibility.md).
//! The structures keep RedisBloom's module types, so RDB, DUMP and SCANDUMP
//! of a merged filter or decayed sketch load on RedisBloom unchanged.

use super::{create, get, modify_found, WrongType};
use crate::commands::args::{parse_f64, ERR_WRONGTYPE};
use crate::commands::Ctx;
use crate::protocol::Args;
use blinkdb_engine::cf::{CuckooFilter, MergeError};
use blinkdb_engine::cms::CountMin;
use blinkdb_engine::{Sketch, SketchKind, Tx};
use std::sync::Arc;

/// The key's structure, shared (a merge reads its sources while it writes).
fn shared<T: SketchKind>(
    tx: &mut Tx,
    db: usize,
    key: &[u8],
) -> Result<Option<Arc<Sketch>>, WrongType> {
    get::<T>(tx, db, key)?;
    Ok(tx.get(db, key).and_then(|e| e.value().as_sketch().cloned()))
}

/// BLINK.CFMERGE destination source [source ...]: adds every fingerprint of
/// the sources to the destination (created empty in the first source's
/// shape when absent). Same-shape filters only; nothing changes on an error.
pub fn cfmerge(ctx: &mut Ctx, args: &Args) {
    let max = ctx.client.settings(ctx.shared).sketch_max_memory;
    let db = ctx.db();
    let dest = args[1];
    let keys: Vec<(usize, &[u8])> = args[1..].iter().map(|k| (db, *k)).collect();
    ctx.write(&keys, |tx, out| {
        let mut sources = Vec::with_capacity(args.len() - 2);
        for key in &args[2..] {
            match shared::<CuckooFilter>(tx, db, key) {
                Ok(Some(s)) => sources.push(s),
                Ok(None) => return out.error("ERR not found"),
                Err(WrongType) => return out.error(ERR_WRONGTYPE),
            }
        }
        let refs: Vec<&CuckooFilter> = sources
            .iter()
            .map(|s| CuckooFilter::of(s).expect("checked by shared"))
            .collect();
        let existing = match shared::<CuckooFilter>(tx, db, dest) {
            Ok(e) => e,
            Err(WrongType) => return out.error(ERR_WRONGTYPE),
        };
        let base = match &existing {
            Some(s) => CuckooFilter::of(s).expect("checked by shared").clone(),
            None => refs[0].empty_like(),
        };
        let merged = match base.merged(&refs, max) {
            Ok((merged, _)) => merged,
            Err(e) => {
                return out.error(match e {
                    MergeError::Shape => {
                        "ERR cuckoo filters differ in bucket size, buckets or expansion"
                    }
                    MergeError::Full => "Filter is full",
                    MergeError::MaxExpansions => "Maximum expansions reached",
                    MergeError::TooBig => "Memory allocation failure",
                })
            }
        };
        // Nothing of ours shares the destination any more: it changes in place.
        drop(refs);
        drop(sources);
        match existing {
            Some(e) => {
                drop(e);
                modify_found(tx, db, dest, |cf: &mut CuckooFilter| *cf = merged);
            }
            None => create(tx, db, dest, merged),
        }
        tx.modified(db, dest);
        tx.log(db, args);
        out.ok();
    });
}

/// BLINK.CMSDECAY key factor: every counter (and the count) times `factor`
/// (0 to 1), rounded down. Called every period, it makes an aging sketch
/// (0.5: halving).
pub fn cmsdecay(ctx: &mut Ctx, args: &Args) {
    let key = args[1];
    let factor = parse_f64(args[2]).filter(|f| (0.0..=1.0).contains(f));
    ctx.write1(key, |tx, db, out| {
        match get::<CountMin>(tx, db, key) {
            Err(WrongType) => return out.error(ERR_WRONGTYPE),
            Ok(None) => return out.error("CMS: key does not exist"),
            Ok(Some(_)) => {}
        }
        let Some(factor) = factor else {
            return out.error("CMS: invalid decay factor (a number from 0 to 1)");
        };
        modify_found(tx, db, key, |cms: &mut CountMin| cms.decay(factor));
        tx.modified(db, key);
        tx.log(db, args);
        // Its file (if kept in one) takes the change at the next checkpoint.
        tx.sketch_changed(db, key);
        out.ok();
    });
}

use crate::commands::table::cmd;

#[rustfmt::skip]
pub(in crate::commands) const COMMANDS: &[crate::commands::table::CommandSpec] = &[
    cmd!("blink.cfmerge", -3, W, ALLKEYS, "module", "0.1.0", "Merges cuckoo filters of the same shape into one (BlinkDB)", cfmerge;
        complexity: "O(n) where n is the number of slots of the source filters",
        keys: "RW,update index:1 range:0:1:0; RO,access index:2 range:-1:1:0",
        args: "destination:key source:key#1*"),
    cmd!("blink.cmsdecay", 3, W, KEY1, "module", "0.1.0", "Multiplies every counter of a Count-Min Sketch by a factor, rounding down (BlinkDB)", cmsdecay;
        complexity: "O(width * depth)",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key factor:double"),
];
