//! What every collection command shares: typed access to a key's hash, set or
//! sorted set (WRONGTYPE for another type), creation on the first write, and
//! deletion of a collection its last member left, as Redis does.

use super::Ctx;
use blinkdb_engine::{
    event::GENERIC, Entry, HashValue, ListValue, SetValue, StreamValue, Tx, Value, ZSetValue,
};
use std::sync::Arc;

/// The key holds another type.
#[derive(Debug, PartialEq, Eq)]
pub struct WrongType;

pub trait Collection: Clone + Default + 'static {
    fn of(v: &Value) -> Option<&Arc<Self>>;
    fn of_mut(v: &mut Value) -> Option<&mut Arc<Self>>;
    fn wrap(self) -> Value;
    fn is_empty(&self) -> bool;
}

macro_rules! collection {
    ($t:ty, $variant:ident, $make:ident) => {
        impl Collection for $t {
            fn of(v: &Value) -> Option<&Arc<Self>> {
                match v {
                    Value::$variant(c, _) => Some(c),
                    _ => None,
                }
            }
            fn of_mut(v: &mut Value) -> Option<&mut Arc<Self>> {
                match v {
                    Value::$variant(c, _) => Some(c),
                    _ => None,
                }
            }
            fn wrap(self) -> Value {
                Value::$make(self)
            }
            fn is_empty(&self) -> bool {
                <$t>::is_empty(self)
            }
        }
    };
}

collection!(HashValue, Hash, hash);
collection!(SetValue, Set, set);
collection!(ZSetValue, ZSet, zset);
collection!(ListValue, List, list);

/// A stream stays when its last entry goes (XDEL, XTRIM), as in Redis: it
/// is never "empty" in the sense that deletes the key.
impl Collection for StreamValue {
    fn of(v: &Value) -> Option<&Arc<Self>> {
        match v {
            Value::Stream(c, _) => Some(c),
            _ => None,
        }
    }
    fn of_mut(v: &mut Value) -> Option<&mut Arc<Self>> {
        match v {
            Value::Stream(c, _) => Some(c),
            _ => None,
        }
    }
    fn wrap(self) -> Value {
        Value::stream(self)
    }
    fn is_empty(&self) -> bool {
        false
    }
}

/// Reads `key`'s collection under the shard's read lock: `f(None)` when the
/// key is absent; counts a keyspace hit or miss.
pub fn read<T: Collection, R>(
    ctx: &mut Ctx,
    key: &[u8],
    f: impl FnOnce(Option<&T>, &mut crate::protocol::Out) -> R,
) -> Result<R, WrongType> {
    let out = &mut *ctx.out;
    let (r, hit) = ctx.shared.engine.read(ctx.client.db, key, |e| match e {
        None => (Ok(f(None, out)), false),
        Some(e) => match T::of(e.value()) {
            Some(c) => (Ok(f(Some(c), out)), true),
            None => (Err(WrongType), true),
        },
    });
    ctx.client.count_lookup(hit);
    r
}

/// Like `read`, but replies WRONGTYPE itself.
pub fn read_or_reply<T: Collection>(
    ctx: &mut Ctx,
    key: &[u8],
    f: impl FnOnce(Option<&T>, &mut crate::protocol::Out),
) {
    if read(ctx, key, f).is_err() {
        ctx.wrongtype();
    }
}

/// Inside a write: the collection at `key` for reading, None when absent.
pub fn get<'t, T: Collection>(
    tx: &'t mut Tx,
    db: usize,
    key: &[u8],
) -> Result<Option<&'t T>, WrongType> {
    match tx.get(db, key) {
        None => Ok(None),
        Some(e) => T::of(e.value()).map(|c| Some(&**c)).ok_or(WrongType),
    }
}

/// Inside a write: the collection at `key`, shared (a clone of its `Arc`),
/// for commands that read several keys at once.
pub fn get_shared<T: Collection>(
    tx: &mut Tx,
    db: usize,
    key: &[u8],
) -> Result<Option<Arc<T>>, WrongType> {
    match tx.get(db, key) {
        None => Ok(None),
        Some(e) => T::of(e.value()).cloned().map(Some).ok_or(WrongType),
    }
}

/// Inside a write: runs `f` on `key`'s collection, which is created empty
/// first when absent and `create` is set (else `Ok(None)`). A shared
/// collection (COPY, a running rewrite) is copied first. The caller logs and
/// notifies, then calls `drop_if_empty`.
pub fn modify<T: Collection, R>(
    tx: &mut Tx,
    db: usize,
    key: &[u8],
    create: bool,
    f: impl FnOnce(&mut T) -> R,
) -> Result<Option<R>, WrongType> {
    match tx.get(db, key).map(|e| T::of(e.value()).is_some()) {
        Some(false) => return Err(WrongType),
        None if !create => return Ok(None),
        None => {
            tx.insert(db, key, Entry::new(T::default().wrap()));
        }
        Some(true) => {}
    }
    Ok(tx.update(db, key, |e| {
        let c = T::of_mut(e.value_mut()).expect("checked above");
        f(Arc::make_mut(c))
    }))
}

/// Deletes `key` if its collection is empty now (the last member left), with
/// the `del` event Redis sends then; true if it did.
pub fn drop_if_empty<T: Collection>(tx: &mut Tx, db: usize, key: &[u8]) -> bool {
    let empty = matches!(tx.get(db, key).and_then(|e| T::of(e.value())), Some(c) if c.is_empty());
    if empty {
        tx.remove(db, key);
        tx.notify(GENERIC, "del", db, key);
    }
    empty
}

/// Stores `value` as `key`'s new collection (the *STORE commands), or deletes
/// the key when it is empty. Returns whether a key was there before.
pub fn store<T: Collection>(tx: &mut Tx, db: usize, key: &[u8], value: T) -> bool {
    if value.is_empty() {
        return tx.remove(db, key).is_some();
    }
    tx.insert(db, key, Entry::new(value.wrap())).is_some()
}

/// The arguments of HSCAN, SSCAN and ZSCAN: `key cursor [MATCH p] [COUNT n]
/// [NOVALUES]` (NOVALUES is Redis 7.4's, for HSCAN only: the others refuse it
/// once their key exists, with `ERR_NOVALUES`).
pub struct ScanArgs<'a> {
    pub cursor: u64,
    pub count: usize,
    pub pattern: Option<&'a [u8]>,
    pub novalues: bool,
}

pub const ERR_NOVALUES: &str = "ERR NOVALUES option can only be used in HSCAN";

impl<'a> ScanArgs<'a> {
    /// Parses them, or returns Redis's error.
    pub fn parse(args: &crate::protocol::Args<'a>) -> Result<Self, &'static str> {
        use super::args::{eq_ic, parse_cursor, parse_i64, ERR_NOT_INT, ERR_SYNTAX};
        let cursor = parse_cursor(args[2]).ok_or("ERR invalid cursor")?;
        let mut scan = ScanArgs {
            cursor,
            count: 10,
            pattern: None,
            novalues: false,
        };
        let mut i = 3;
        while i < args.len() {
            if eq_ic(args[i], "novalues") {
                scan.novalues = true;
                i += 1;
                continue;
            }
            if args.len() - i < 2 {
                return Err(ERR_SYNTAX);
            }
            if eq_ic(args[i], "count") {
                match parse_i64(args[i + 1]) {
                    None => return Err(ERR_NOT_INT),
                    Some(n) if n < 1 => return Err(ERR_SYNTAX),
                    Some(n) => scan.count = n as usize,
                }
            } else if eq_ic(args[i], "match") {
                scan.pattern = Some(args[i + 1]).filter(|p| *p != b"*");
            } else {
                return Err(ERR_SYNTAX);
            }
            i += 2;
        }
        Ok(scan)
    }

    pub fn matches(&self, member: &[u8]) -> bool {
        self.pattern
            .is_none_or(|p| blinkdb_engine::glob_match(p, member, false))
    }
}

/// LMPOP's and ZMPOP's parsed arguments: the keys, which of the two WHERE
/// words was given (0 or 1) and the count (1 by default).
pub type MpopArgs<'a, 'b> = (&'b [&'a [u8]], usize, usize);

/// The arguments of LMPOP and ZMPOP (and of BLMPOP/BZMPOP after the
/// timeout): `numkeys key... WHERE [COUNT n]` from `args[at]`, WHERE one of
/// `wheres`, with Redis's errors in its order (a numkeys past the arguments
/// is a syntax error here).
pub fn mpop_args<'a, 'b>(
    args: &'b crate::protocol::Args<'a>,
    at: usize,
    wheres: [&str; 2],
) -> Result<MpopArgs<'a, 'b>, &'static str> {
    use super::args::{eq_ic, parse_i64, ERR_SYNTAX};
    let numkeys = match parse_i64(args[at]) {
        Some(n) if n >= 1 => n as u64,
        _ => return Err("ERR numkeys should be greater than 0"),
    };
    let where_at = (at as u64 + 1).saturating_add(numkeys);
    if where_at >= args.len() as u64 {
        return Err(ERR_SYNTAX);
    }
    let where_at = where_at as usize;
    let Some(which) = wheres.iter().position(|w| eq_ic(args[where_at], w)) else {
        return Err(ERR_SYNTAX);
    };
    let mut count = None;
    let mut j = where_at + 1;
    while j < args.len() {
        if count.is_none() && eq_ic(args[j], "count") && j + 1 < args.len() {
            match parse_i64(args[j + 1]) {
                Some(n) if n >= 1 => count = Some(n as usize),
                _ => return Err("ERR count should be greater than 0"),
            }
            j += 2;
        } else {
            return Err(ERR_SYNTAX);
        }
    }
    Ok((&args[at + 1..where_at], which, count.unwrap_or(1)))
}
