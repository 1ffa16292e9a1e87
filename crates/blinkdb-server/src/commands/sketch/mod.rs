//! The commands of RedisBloom's structures besides Bloom filters (CF.* now;
//! CMS.*, TOPK.*, TDIGEST.* plug in the same way), one module per structure
//! with its own table entries, on keys holding `Value::Sketch`
//! (`blinkdb_engine::Sketch`, one variant per structure).
//!
//! What they share is here: typed access to a key's structure (RedisBloom's
//! `getValue` statuses: missing, the right type, another type), creation,
//! and changes in place (copied first when shared by COPY or a running
//! rewrite). A structure's module logs its commands as sent once they
//! changed something (their effect is deterministic, so replay and a
//! replica, RedisBloom's included, rebuild the same bytes).
//!
//! A new structure: its module here (`mod x;`) and its `COMMANDS` in
//! `commands/table.rs`'s FAMILIES; see the engine's `sketch/mod.rs` for the
//! engine side.

pub mod blink;
pub mod cms;
pub mod cuckoo;
pub mod tdigest;
pub mod topk;

use super::Ctx;
use crate::protocol::Out;
use blinkdb_engine::{Entry, SketchKind, Tx, Value};

/// The key holds another type (RedisBloom's SB_MISMATCH).
pub struct WrongType;

/// Reads `key`'s structure under the shard's read lock: `Ok(None)` when the
/// key is absent; counts a keyspace hit or miss.
pub fn read<T: SketchKind, R>(
    ctx: &mut Ctx,
    key: &[u8],
    f: impl FnOnce(Result<Option<&T>, WrongType>, &mut Out) -> R,
) -> R {
    let out = &mut *ctx.out;
    let (r, hit) = ctx.shared.engine.read(ctx.client.db, key, |e| match e {
        None => (f(Ok(None), out), false),
        Some(e) => {
            let s = e.value().as_sketch().and_then(|s| T::of(s));
            (f(s.map(Some).ok_or(WrongType), out), true)
        }
    });
    ctx.client.count_lookup(hit);
    r
}

/// Inside a write: the structure at `key`, None when absent.
pub fn get<'t, T: SketchKind>(
    tx: &'t mut Tx,
    db: usize,
    key: &[u8],
) -> Result<Option<&'t T>, WrongType> {
    match tx.get(db, key) {
        None => Ok(None),
        Some(e) => match e.value().as_sketch() {
            Some(s) => T::of(s).map(Some).ok_or(WrongType),
            None => Err(WrongType),
        },
    }
}

/// Inside a write: stores a new structure at `key` (a `new` event).
pub fn create<T: SketchKind>(tx: &mut Tx, db: usize, key: &[u8], value: T) {
    tx.insert(db, key, Entry::new(Value::sketch(value.wrap())));
}

/// Inside a write: runs `f` on the structure at `key` in place (its memory
/// counted again after); None when the key holds no such structure.
pub fn modify<T: SketchKind, R>(
    tx: &mut Tx,
    db: usize,
    key: &[u8],
    f: impl FnOnce(&mut T) -> R,
) -> Option<R> {
    get::<T>(tx, db, key).ok()??;
    tx.update(db, key, |e| {
        let s = e.value_mut().as_sketch_mut().expect("checked above");
        f(T::of_mut(s).expect("checked above"))
    })
}

/// Inside a write: `get` and `modify_found` in one lookup (the second was
/// a tenth of a TOPK.ADD's instructions): runs `f` on the structure at
/// `key`, `Ok(None)` when the key is absent. Only a run of `f` signals the
/// key (WATCH, tracking); a command that signals whatever it finds calls
/// `tx.modified` for the other outcomes.
pub fn update<T: SketchKind, R>(
    tx: &mut Tx,
    db: usize,
    key: &[u8],
    f: impl FnOnce(&mut T) -> R,
) -> Result<Option<R>, WrongType> {
    let mut wrong = false;
    let r = tx.update_if(db, key, |e| {
        // Checked before `as_sketch_mut`, which copies a shared value.
        if e.value().as_sketch().is_none_or(|s| T::of(s).is_none()) {
            wrong = true;
            return None;
        }
        let s = e.value_mut().as_sketch_mut().expect("checked above");
        Some(f(T::of_mut(s).expect("checked above")))
    });
    match r {
        Some(r) => Ok(Some(r)),
        None if wrong => Err(WrongType),
        None => Ok(None),
    }
}

/// `modify` for a caller that found the structure under the same lock
/// (`get`): skips `modify`'s own lookup, a tenth of a CF.ADD's instructions.
/// Panics if the key holds no such structure.
pub fn modify_found<T: SketchKind, R>(
    tx: &mut Tx,
    db: usize,
    key: &[u8],
    f: impl FnOnce(&mut T) -> R,
) -> R {
    tx.update(db, key, |e| {
        let s = e.value_mut().as_sketch_mut().expect("found by the caller");
        f(T::of_mut(s).expect("found by the caller"))
    })
    .expect("found by the caller")
}
