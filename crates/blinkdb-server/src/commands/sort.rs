//! SORT and SORT_RO over lists, sets and sorted sets: BY (weights from
//! other keys or hash fields, or `nosort` for no sorting), GET, LIMIT,
//! ASC|DESC, ALPHA and STORE (into a list), with Redis 7.0's parsing,
//! ordering (equal elements keep their load order, as glibc's merge-sorting
//! qsort keeps them, or as Redis's partial quicksort leaves them for a LIMIT
//! window with BY), errors, events and AOF record (the command itself).
//!
//! A SORT that reads keys named by patterns, or stores, runs alone on the
//! exec gate (see `runs_alone`), so its reads and its write see one state.

use super::args::{eq_ic, parse_i64, ERR_NOT_INT, ERR_SYNTAX, ERR_WRONGTYPE};
use super::collection::{self, Collection};
use super::spec::{KeyPositions, KEY_ACCESS, KEY_OW, KEY_RO, KEY_UPDATE};
use super::zset::strtod;
use super::Ctx;
use crate::protocol::Args;
use blinkdb_engine::{
    event::{GENERIC, LIST},
    Entry, HashValue, ListValue, SetValue, ZSetValue,
};
use smallvec::smallvec;
use std::borrow::Cow;
use std::cmp::Ordering;

const ERR_SCORES: &str = "ERR One or more scores can't be converted into double";

/// Whether a command line is a SORT that must run with no other command
/// interleaved: one that names other keys (BY, GET) or writes (STORE).
/// The connection takes the exec gate exclusively for it.
pub fn runs_alone(args: &[&[u8]]) -> bool {
    args.iter()
        .skip(2)
        .any(|a| eq_ic(a, "by") || eq_ic(a, "get") || eq_ic(a, "store"))
}

/// SORT's keys as Redis's sortGetKeys finds them (its BY/GET key specs are
/// unknown): the sorted key, and the last STORE's key (LIMIT skips two
/// arguments, GET and BY one).
pub fn keys(argv: &[&[u8]]) -> Option<KeyPositions> {
    let mut keys: KeyPositions = smallvec![(1, KEY_RO | KEY_ACCESS)];
    let mut store = None;
    let mut i = 2;
    while i < argv.len() {
        let a = argv[i];
        if a.eq_ignore_ascii_case(b"limit") {
            i += 2;
        } else if a.eq_ignore_ascii_case(b"store") && i + 1 < argv.len() {
            store = Some(i + 1);
        } else if a.eq_ignore_ascii_case(b"get") || a.eq_ignore_ascii_case(b"by") {
            i += 1;
        }
        i += 1;
    }
    keys.extend(store.map(|s| (s, KEY_OW | KEY_UPDATE)));
    Some(keys)
}

/// SORT_RO's key (Redis's sortROGetKeys).
pub fn ro_keys(_argv: &[&[u8]]) -> Option<KeyPositions> {
    Some(smallvec![(1, KEY_RO | KEY_ACCESS)])
}

/// A parsed SORT.
struct Request<'a> {
    desc: bool,
    alpha: bool,
    limit_start: i64,
    limit_count: i64,
    store: Option<&'a [u8]>,
    by: Option<&'a [u8]>,
    /// A BY pattern without `*` was given: keep the native order.
    dontsort: bool,
    gets: Vec<&'a [u8]>,
}

/// The bytes of a NUL-terminated C string `s` would be.
fn c_str(s: &[u8]) -> &[u8] {
    &s[..s.iter().position(|&b| b == 0).unwrap_or(s.len())]
}

fn parse<'a>(
    args: &Args<'a>,
    readonly: bool,
    full_read: bool,
) -> Result<Request<'a>, &'static str> {
    let mut req = Request {
        desc: false,
        alpha: false,
        limit_start: 0,
        limit_count: -1,
        store: None,
        by: None,
        dontsort: false,
        gets: Vec::new(),
    };
    let mut j = 2;
    while j < args.len() {
        let left = args.len() - j - 1;
        let a = args[j];
        if eq_ic(a, "asc") {
            req.desc = false;
        } else if eq_ic(a, "desc") {
            req.desc = true;
        } else if eq_ic(a, "alpha") {
            req.alpha = true;
        } else if eq_ic(a, "limit") && left >= 2 {
            req.limit_start = parse_i64(args[j + 1]).ok_or(ERR_NOT_INT)?;
            req.limit_count = parse_i64(args[j + 2]).ok_or(ERR_NOT_INT)?;
            j += 2;
        } else if !readonly && eq_ic(a, "store") && left >= 1 {
            req.store = Some(args[j + 1]);
            j += 1;
        } else if eq_ic(a, "by") && left >= 1 {
            let pattern = args[j + 1];
            req.by = Some(pattern);
            // Once set, a later BY with a pattern does not clear it (as Redis).
            if !c_str(pattern).contains(&b'*') {
                req.dontsort = true;
            } else if !full_read {
                return Err("ERR BY option of SORT denied due to insufficient ACL permissions.");
            }
            j += 1;
        } else if eq_ic(a, "get") && left >= 1 {
            if !full_read {
                return Err("ERR GET option of SORT denied due to insufficient ACL permissions.");
            }
            req.gets.push(args[j + 1]);
            j += 1;
        } else {
            return Err(ERR_SYNTAX);
        }
        j += 1;
    }
    Ok(req)
}

/// What the sorted key held, as SORT loads it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    List,
    Set,
    ZSet,
}

/// The elements to sort, in load order, and the output window
/// `start..=end` over them (i64: `end` may be `start - 1`).
struct Loaded {
    elems: Vec<Vec<u8>>,
    start: i64,
    end: i64,
}

/// Loads the elements of `e` (None: an empty list) as sortCommandGeneric
/// does, applying LIMIT directly where the order is native.
fn load(e: Option<&Entry>, req: &mut Request, in_script: bool) -> Result<Loaded, ()> {
    let value = e.map(|e| e.value());
    let list = value.and_then(ListValue::of);
    let set = value.and_then(SetValue::of);
    let zset = value.and_then(ZSetValue::of);
    let (kind, len) = match (list, set, zset) {
        (Some(l), _, _) => (Kind::List, l.len()),
        (_, Some(s), _) => (Kind::Set, s.len()),
        (_, _, Some(z)) => (Kind::ZSet, z.len()),
        _ if value.is_some() => return Err(()),
        _ => (Kind::List, 0),
    };
    // A set has no native order: replicas and scripts must see the same
    // result, so it is sorted ALPHA then.
    if req.dontsort && kind == Kind::Set && (req.store.is_some() || in_script) {
        req.dontsort = false;
        req.alpha = true;
        req.by = None;
    }
    let vlen = len as i64;
    let mut start = req.limit_start.max(0).min(vlen);
    let count = req.limit_count.max(-1).min(vlen);
    let mut end = if count < 0 {
        vlen - 1
    } else {
        start + count - 1
    };
    if start >= vlen {
        start = vlen - 1;
        end = vlen - 2;
    }
    if end >= vlen {
        end = vlen - 1;
    }
    let ranged = req.dontsort && kind != Kind::Set && (start != 0 || end != vlen - 1);
    let take = if ranged {
        (end - start + 1).max(0) as usize
    } else {
        len
    };
    let mut elems: Vec<Vec<u8>> = Vec::with_capacity(take);
    match kind {
        Kind::List if req.dontsort => {
            if end >= start {
                if let Some(l) = list {
                    let skip = start as usize;
                    if req.desc {
                        elems.extend(l.iter().rev().skip(skip).take(take).map(Cow::into_owned));
                    } else {
                        elems.extend(l.iter().skip(skip).take(take).map(Cow::into_owned));
                    }
                }
                end -= start;
                start = 0;
            }
        }
        Kind::List => {
            if let Some(l) = list {
                elems.extend(l.iter().map(Cow::into_owned));
            }
        }
        Kind::Set => {
            let s = set.expect("a set");
            elems.extend(s.iter().map(|m| m.into_owned()));
        }
        Kind::ZSet => {
            let z = zset.expect("a sorted set");
            if req.dontsort {
                let from = start.max(0) as usize;
                elems.extend(z.range(from, req.desc).take(take).map(|(m, _)| m.to_vec()));
                end -= start;
                start = 0;
            } else {
                elems.extend(z.iter().map(|(m, _)| m.to_vec()));
            }
        }
    }
    Ok(Loaded { elems, start, end })
}

/// The value `pattern` names for `elem` (lookupKeyByPattern): `#` is the
/// element itself; the first `*` is replaced by it; `key->field` reads a
/// hash field. None for a missing key or field or a key of another type.
fn lookup(ctx: &mut Ctx, pattern: &[u8], elem: &[u8]) -> Option<Vec<u8>> {
    if pattern.first() == Some(&b'#') && pattern.get(1).copied().unwrap_or(0) == 0 {
        return Some(elem.to_vec());
    }
    let text = c_str(pattern);
    let star = text.iter().position(|&b| b == b'*')?;
    let arrow = text[star + 1..]
        .windows(2)
        .position(|w| w == b"->")
        .map(|i| star + 1 + i)
        .filter(|&f| text.get(f + 2).is_some());
    let (postfix_end, field) = match arrow {
        Some(f) => (f, Some(&pattern[f + 2..])),
        None => (pattern.len(), None),
    };
    let mut key = Vec::with_capacity(pattern.len() + elem.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(elem);
    key.extend_from_slice(&pattern[star + 1..postfix_end]);
    let engine = &ctx.shared.engine;
    let now = engine.now();
    let (found, hit) = ctx.shared.engine.read(ctx.client.db, &key, |e| {
        let Some(e) = e else {
            return (None, false);
        };
        let v = match field {
            Some(f) => HashValue::of(e.value()).and_then(|h| h.get(f, now).map(<[u8]>::to_vec)),
            None => super::strings::string_of(engine, e)
                .ok()
                .map(|s| s.into_owned()),
        };
        (v, true)
    });
    ctx.client.count_lookup(hit);
    found
}

/// A numeric weight as SORT reads it: strtod up to the end of the C
/// string, no overflow, not NaN.
fn weight(v: &[u8]) -> Option<f64> {
    let (x, used, erange) = strtod(v);
    let stop = v.get(used).copied().unwrap_or(0);
    (stop == 0 && !erange && !x.is_nan()).then_some(x)
}

/// One element and what it sorts by.
struct Item {
    elem: Vec<u8>,
    score: f64,
    /// ALPHA with BY: the weight's bytes (None: the weight key is missing).
    by: Option<Vec<u8>>,
}

/// Binary order (memcmp, then length).
fn binary(a: &[u8], b: &[u8]) -> Ordering {
    a.cmp(b)
}

/// strcoll in the C locale: bytes up to the first NUL.
fn collate(a: &[u8], b: &[u8]) -> Ordering {
    c_str(a).cmp(c_str(b))
}

/// Redis converts a sorted set it sorts to the skiplist encoding, for good
/// (OBJECT ENCODING shows it); unseen by WATCH and tracking, as there.
fn convert_small_zset(ctx: &mut Ctx, key: &[u8]) {
    let (packed, _) = ctx.shared.engine.peek(ctx.db(), key, |e| {
        let z = e.and_then(|e| ZSetValue::of(e.value()));
        (z.is_some_and(|z| z.encoding() == "listpack"), ())
    });
    if packed {
        ctx.write1(key, |tx, db, _| {
            tx.unsignaled(|tx| {
                let _ = collection::modify(tx, db, key, false, |z: &mut ZSetValue| z.convert());
            })
        });
    }
}

fn sort_generic(ctx: &mut Ctx, args: &Args, readonly: bool) {
    // BY and GET patterns name any key: only a user who may read every key
    // may use them.
    let full_read = super::table::lookup(args[0]).is_none_or(|spec| {
        crate::server::acl::check::unrestricted_read(&ctx.client.user, spec, args)
    });
    let mut req = match parse(args, readonly, full_read) {
        Ok(r) => r,
        Err(e) => return ctx.out.error(e),
    };
    let in_script = crate::scripting::run::in_script_call();
    let db = ctx.db();
    convert_small_zset(ctx, args[1]);
    let (loaded, hit) = ctx
        .shared
        .engine
        .read(db, args[1], |e| (load(e, &mut req, in_script), e.is_some()));
    ctx.client.count_lookup(hit);
    let Ok(Loaded { elems, start, end }) = loaded else {
        return ctx.out.error(ERR_WRONGTYPE);
    };
    let mut items: Vec<Item> = elems
        .into_iter()
        .map(|elem| Item {
            elem,
            score: 0.0,
            by: None,
        })
        .collect();
    let mut bad_weight = false;
    if !req.dontsort {
        for item in items.iter_mut() {
            let by_value = match req.by {
                Some(p) => match lookup(ctx, p, &item.elem) {
                    Some(v) => Some(v),
                    None => continue,
                },
                None => None,
            };
            if req.alpha {
                item.by = by_value;
            } else {
                match weight(by_value.as_deref().unwrap_or(&item.elem)) {
                    Some(x) => item.score = x,
                    None => bad_weight = true,
                }
            }
        }
        let (alpha, by, store) = (req.alpha, req.by.is_some(), req.store.is_some());
        let cmp = |a: &Item, b: &Item| -> Ordering {
            if !alpha {
                return a
                    .score
                    .partial_cmp(&b.score)
                    .unwrap_or(Ordering::Equal)
                    .then_with(|| binary(&a.elem, &b.elem));
            }
            if by {
                return match (&a.by, &b.by) {
                    (None, None) => Ordering::Equal,
                    (None, Some(_)) => Ordering::Less,
                    (Some(_), None) => Ordering::Greater,
                    (Some(x), Some(y)) if store => binary(x, y),
                    (Some(x), Some(y)) => collate(x, y),
                };
            }
            if store {
                binary(&a.elem, &b.elem)
            } else {
                collate(&a.elem, &b.elem)
            }
        };
        let desc = req.desc;
        let order = |a: &Item, b: &Item| {
            let c = cmp(a, b);
            if desc {
                c.reverse()
            } else {
                c
            }
        };
        // Redis sorts only the LIMIT window when weights come from other
        // keys (its partial quicksort), else all of it (glibc's stable qsort).
        if by && (start != 0 || end != items.len() as i64 - 1) {
            crate::algo::pqsort::partial_sort(&mut items, start, end, order);
        } else {
            items.sort_by(order);
        }
    }
    let end = end.min(items.len() as i64 - 1);
    let window: &[Item] = if end >= start && start >= 0 {
        &items[start as usize..=end as usize]
    } else {
        &[]
    };
    if bad_weight {
        return ctx.out.error(ERR_SCORES);
    }
    let Some(dst) = req.store else {
        let per = req.gets.len().max(1);
        let mut values: Vec<Option<Vec<u8>>> = Vec::with_capacity(window.len() * per);
        for item in window {
            if req.gets.is_empty() {
                values.push(Some(item.elem.clone()));
            }
            for g in &req.gets {
                values.push(lookup(ctx, g, &item.elem));
            }
        }
        ctx.out.array(values.len());
        for v in values {
            ctx.out.bulk_opt(v.as_deref());
        }
        return;
    };
    let fill = super::list::fill(ctx);
    let mut result = ListValue::default();
    for item in window {
        if req.gets.is_empty() {
            result.push_back(&item.elem, fill);
        }
        for g in &req.gets {
            let v = lookup(ctx, g, &item.elem).unwrap_or_default();
            result.push_back(&v, fill);
        }
    }
    let n = result.len();
    ctx.write1(dst, |tx, db, out| {
        if n > 0 {
            collection::store(tx, db, dst, result);
            tx.log(db, args);
            tx.notify(LIST, "sortstore", db, dst);
        } else if tx.remove(db, dst).is_some() {
            tx.log(db, args);
            tx.notify(GENERIC, "del", db, dst);
        }
        out.int(n as i64);
    });
}

pub fn sort(ctx: &mut Ctx, args: &Args) {
    sort_generic(ctx, args, false);
}

pub fn sort_ro(ctx: &mut Ctx, args: &Args) {
    sort_generic(ctx, args, true);
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    // sort
    cmd!("sort", -2, WRITE | DENYOOM, KEY1, "generic", "1.0.0", "Sort the elements in a list, set or sorted set", sort;
        alone_if: Some(runs_alone),
        getkeys: Some(keys),
        acl: acl::SET | acl::SORTEDSET | acl::LIST | acl::DANGEROUS,
        complexity: "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).",
        keys: "RO,access index:1 range:0:1:0; RO,access unknown unknown | For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort; OW,update unknown unknown | For the optional STORE keyword. It is marked 'unknown' because the keyword can appear anywhere in the argument array",
        args: "key:key pattern:pattern=BY#1? offset_count:block=LIMIT?(offset:integer count:integer) pattern:pattern=GET#1?*+ order:oneof?(asc:ASC desc:DESC) sorting:ALPHA? destination:key=STORE#2?"),
    cmd!("sort_ro", -2, READONLY, KEY1, "generic", "7.0.0", "Sort the elements in a list, set or sorted set. Read-only variant of SORT.", sort_ro;
        alone_if: Some(runs_alone),
        getkeys: Some(ro_keys),
        acl: acl::SET | acl::SORTEDSET | acl::LIST | acl::DANGEROUS,
        complexity: "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).",
        keys: "RO,access index:1 range:0:1:0; RO,access unknown unknown | For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort",
        args: "key:key pattern:pattern=BY#1? offset_count:block=LIMIT?(offset:integer count:integer) pattern:pattern=GET#1?*+ order:oneof?(asc:ASC desc:DESC) sorting:ALPHA?"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_read_as_strtod() {
        assert_eq!(weight(b"1.5"), Some(1.5));
        assert_eq!(weight(b""), Some(0.0));
        assert_eq!(weight(b" 2"), Some(2.0));
        assert_eq!(weight(b"3\0junk"), Some(3.0));
        assert_eq!(weight(b"1e400"), None);
        assert_eq!(weight(b"abc"), None);
        assert_eq!(weight(b"nan"), None);
    }

    #[test]
    fn gate_only_for_patterns_and_store() {
        let a = |v: &[&'static [u8]]| -> Args<'static> { v.iter().copied().collect() };
        assert!(!runs_alone(&a(&[b"SORT", b"k", b"desc"])));
        assert!(runs_alone(&a(&[b"sort", b"k", b"BY", b"w_*"])));
        assert!(runs_alone(&a(&[b"sort", b"k", b"store", b"d"])));
    }
}
