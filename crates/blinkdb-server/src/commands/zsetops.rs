//! Sorted-set algebra: ZUNION, ZINTER, ZDIFF, their *STORE forms and
//! ZINTERCARD, over sorted sets and plain sets (whose members score 1), with
//! WEIGHTS and AGGREGATE SUM|MIN|MAX as Redis 7.0 computes them.

use super::args::{eq_ic, parse_i64, ERR_NOT_INT, ERR_SYNTAX, ERR_WRONGTYPE};
use super::zrange::store_result;
use super::zset::{limits, parse_score};
use super::Ctx;
use crate::protocol::Args;
use blinkdb_engine::{SetValue, Tx, Value, ZSetValue};
use std::borrow::Cow;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    /// zunionInterAggregate: a sum that is NaN (inf + -inf) is 0.
    fn apply(self, acc: &mut f64, v: f64) {
        match self {
            Aggregate::Sum => {
                *acc += v;
                if acc.is_nan() {
                    *acc = 0.0;
                }
            }
            Aggregate::Min => {
                if v < *acc {
                    *acc = v
                }
            }
            Aggregate::Max => {
                if v > *acc {
                    *acc = v
                }
            }
        }
    }
}

/// One input: a sorted set, a set (members score 1), or nothing. A clone of
/// the key's value: a full encoding is shared, a compact one copied.
enum Input {
    None,
    Z(ZSetValue),
    S(SetValue),
}

impl Input {
    fn len(&self) -> usize {
        match self {
            Input::None => 0,
            Input::Z(z) => z.len(),
            Input::S(s) => s.len(),
        }
    }

    fn score(&self, m: &[u8]) -> Option<f64> {
        match self {
            Input::None => None,
            Input::Z(z) => z.score(m),
            Input::S(s) => s.contains(m).then_some(1.0),
        }
    }

    fn iter(&self) -> Box<dyn Iterator<Item = (Cow<'_, [u8]>, f64)> + '_> {
        match self {
            Input::None => Box::new(std::iter::empty()),
            Input::Z(z) => Box::new(z.iter().map(|(m, s)| (Cow::Borrowed(m), s))),
            Input::S(s) => Box::new(s.iter().map(|m| (m, 1.0))),
        }
    }
}

/// The parsed command: where the keys are and what to do with them.
struct Request {
    weights: Vec<f64>,
    aggregate: Aggregate,
    scores: bool,
    /// ZINTERCARD's LIMIT (0: none).
    limit: usize,
}

/// Parses `numkeys key... [options]` from `args[at]`, as
/// zunionInterDiffGenericCommand does before it looks keys up; option
/// errors are reported after the key types are checked, so they come back
/// as a second stage.
fn parse_numkeys<'a>(args: &'a Args, at: usize, name: &str) -> Result<&'a [&'a [u8]], String> {
    let n = parse_i64(args[at]).ok_or(ERR_NOT_INT)?;
    if n < 1 {
        return Err(format!(
            "ERR at least 1 input key is needed for '{name}' command"
        ));
    }
    if n > (args.len() - at - 1) as i64 {
        return Err(ERR_SYNTAX.to_string());
    }
    Ok(&args[at + 1..at + 1 + n as usize])
}

fn parse_options(
    args: &Args,
    keys: &[&[u8]],
    from: usize,
    op: Op,
    store: bool,
    card: bool,
) -> Result<Request, &'static str> {
    let mut req = Request {
        weights: vec![1.0; keys.len()],
        aggregate: Aggregate::Sum,
        scores: false,
        limit: 0,
    };
    let mut j = from;
    while j < args.len() {
        let left = args.len() - j;
        let a = args[j];
        if op != Op::Diff && !card && left > keys.len() && eq_ic(a, "weights") {
            j += 1;
            for w in req.weights.iter_mut() {
                *w = parse_score(args[j]).ok_or("ERR weight value is not a float")?;
                j += 1;
            }
        } else if op != Op::Diff && !card && left >= 2 && eq_ic(a, "aggregate") {
            let v = args[j + 1];
            req.aggregate = if eq_ic(v, "sum") {
                Aggregate::Sum
            } else if eq_ic(v, "min") {
                Aggregate::Min
            } else if eq_ic(v, "max") {
                Aggregate::Max
            } else {
                return Err(ERR_SYNTAX);
            };
            j += 2;
        } else if !store && !card && eq_ic(a, "withscores") {
            req.scores = true;
            j += 1;
        } else if card && left >= 2 && eq_ic(a, "limit") {
            match parse_i64(args[j + 1]) {
                Some(n) if n >= 0 => req.limit = n as usize,
                _ => return Err("ERR LIMIT can't be negative"),
            }
            j += 2;
        } else {
            return Err(ERR_SYNTAX);
        }
    }
    Ok(req)
}

/// The inputs, in key order; Err when one is neither a set nor a sorted set.
fn inputs(tx: &mut Tx, db: usize, keys: &[&[u8]]) -> Result<Vec<Input>, ()> {
    keys.iter()
        .map(|k| match tx.get(db, k).map(|e| e.value()) {
            None => Ok(Input::None),
            Some(Value::ZSet(z, _)) => Ok(Input::Z(z.clone())),
            Some(Value::Set(s, _)) => Ok(Input::S(s.clone())),
            Some(_) => Err(()),
        })
        .collect()
}

/// Members with their scores.
type Items<'i> = Vec<(Cow<'i, [u8]>, f64)>;

/// The result as (member, score), unordered; or only its size (ZINTERCARD).
fn compute<'i>(op: Op, req: &Request, inputs: &'i [Input], card_only: bool) -> (Items<'i>, usize) {
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    if op != Op::Diff {
        // Smallest first (a stable sort, as glibc's qsort is here).
        order.sort_by_key(|&i| inputs[i].len());
    }
    let mut out = Vec::new();
    match op {
        Op::Inter => {
            let first = order[0];
            if inputs[first].len() == 0 {
                return (out, 0);
            }
            let mut count = 0;
            'members: for (m, s) in inputs[first].iter() {
                let mut score = req.weights[first] * s;
                if score.is_nan() {
                    score = 0.0;
                }
                for &j in &order[1..] {
                    match inputs[j].score(&m) {
                        Some(v) => req.aggregate.apply(&mut score, v * req.weights[j]),
                        None => continue 'members,
                    }
                }
                count += 1;
                if card_only {
                    if req.limit > 0 && count >= req.limit {
                        break;
                    }
                } else {
                    out.push((m, score));
                }
            }
            (out, count)
        }
        Op::Union => {
            let mut acc: hashbrown::HashMap<Cow<'i, [u8]>, f64> =
                hashbrown::HashMap::with_capacity(inputs[*order.last().expect("a key")].len());
            for &i in &order {
                for (m, s) in inputs[i].iter() {
                    let mut score = req.weights[i] * s;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    match acc.get_mut(&m[..]) {
                        Some(cur) => req.aggregate.apply(cur, score),
                        None => {
                            acc.insert(m, score);
                        }
                    }
                }
            }
            let n = acc.len();
            (acc.into_iter().collect(), n)
        }
        Op::Diff => {
            for (m, s) in inputs[0].iter() {
                if inputs[1..].iter().all(|o| o.score(&m).is_none()) {
                    out.push((m, s));
                }
            }
            let n = out.len();
            (out, n)
        }
    }
}

fn generic(ctx: &mut Ctx, args: &Args, op: Op, store: bool, card: bool) {
    let name = args[0].to_ascii_lowercase();
    let name = String::from_utf8_lossy(&name).into_owned();
    let at = if store { 2 } else { 1 };
    let keys = match parse_numkeys(args, at, &name) {
        Ok(k) => k,
        Err(e) => return ctx.out.error(&e),
    };
    let from = at + 1 + keys.len();
    let limits = limits(ctx);
    let db = ctx.db();
    let mut locked: Vec<(usize, &[u8])> = keys.iter().map(|k| (db, &k[..])).collect();
    if store {
        locked.push((db, args[1]));
    }
    ctx.write(&locked, |tx, out| {
        let Ok(inputs) = inputs(tx, db, keys) else {
            return out.error(ERR_WRONGTYPE);
        };
        let req = match parse_options(args, keys, from, op, store, card) {
            Ok(r) => r,
            Err(e) => return out.error(e),
        };
        let (mut items, count) = compute(op, &req, &inputs, card);
        if card {
            return out.int(count as i64);
        }
        if store {
            let value =
                ZSetValue::build(items.iter().map(|(m, s)| (&m[..], *s)).collect(), &limits);
            let event = match op {
                Op::Union => "zunionstore",
                Op::Inter => "zinterstore",
                Op::Diff => "zdiffstore",
            };
            drop(items);
            drop(inputs);
            return store_result(tx, db, args[1], value, event, args, out);
        }
        items.sort_by(|a, b| blinkdb_engine::zset_order((a.1, &a.0[..]), (b.1, &b.0[..])));
        let nested = req.scores && out.resp3();
        out.array(if req.scores && !nested {
            items.len() * 2
        } else {
            items.len()
        });
        for (m, s) in &items {
            if nested {
                out.array(2);
            }
            out.bulk(m);
            if req.scores {
                out.double(*s);
            }
        }
    });
}

pub fn zunion(ctx: &mut Ctx, args: &Args) {
    ctx.count_lookups(super::numkeys_args(args, 1));
    generic(ctx, args, Op::Union, false, false);
}

pub fn zunionstore(ctx: &mut Ctx, args: &Args) {
    generic(ctx, args, Op::Union, true, false);
}

pub fn zinter(ctx: &mut Ctx, args: &Args) {
    ctx.count_lookups(super::numkeys_args(args, 1));
    generic(ctx, args, Op::Inter, false, false);
}

pub fn zinterstore(ctx: &mut Ctx, args: &Args) {
    generic(ctx, args, Op::Inter, true, false);
}

pub fn zintercard(ctx: &mut Ctx, args: &Args) {
    generic(ctx, args, Op::Inter, false, true);
}

pub fn zdiff(ctx: &mut Ctx, args: &Args) {
    ctx.count_lookups(super::numkeys_args(args, 1));
    generic(ctx, args, Op::Diff, false, false);
}

pub fn zdiffstore(ctx: &mut Ctx, args: &Args) {
    generic(ctx, args, Op::Diff, true, false);
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("zunion", -3, READONLY, NOKEYS, "sorted-set", "6.2.0", "Add multiple sorted sets", zunion;
        acl: acl::SORTEDSET,
        complexity: "O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
        keys: "RO,access index:1 keynum:0:1:1",
        args: "numkeys:integer key:key* weight:integer=WEIGHTS?* aggregate:oneof=AGGREGATE?(sum:SUM min:MIN max:MAX) withscores:WITHSCORES?"),
    cmd!("zunionstore", -4, WRITE | DENYOOM, KEY1, "sorted-set", "2.0.0", "Add multiple sorted sets and store the resulting sorted set in a new key", zunionstore;
        acl: acl::SORTEDSET,
        complexity: "O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
        keys: "OW,update index:1 range:0:1:0; RO,access index:2 keynum:0:1:1",
        args: "destination:key numkeys:integer key:key#1* weight:integer=WEIGHTS?* aggregate:oneof=AGGREGATE?(sum:SUM min:MIN max:MAX)"),
    cmd!("zinter", -3, READONLY, NOKEYS, "sorted-set", "6.2.0", "Intersect multiple sorted sets", zinter;
        acl: acl::SORTEDSET,
        complexity: "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
        keys: "RO,access index:1 keynum:0:1:1",
        args: "numkeys:integer key:key* weight:integer=WEIGHTS?* aggregate:oneof=AGGREGATE?(sum:SUM min:MIN max:MAX) withscores:WITHSCORES?"),
    cmd!("zinterstore", -4, WRITE | DENYOOM, KEY1, "sorted-set", "2.0.0", "Intersect multiple sorted sets and store the resulting sorted set in a new key", zinterstore;
        acl: acl::SORTEDSET,
        complexity: "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
        keys: "OW,update index:1 range:0:1:0; RO,access index:2 keynum:0:1:1",
        args: "destination:key numkeys:integer key:key#1* weight:integer=WEIGHTS?* aggregate:oneof=AGGREGATE?(sum:SUM min:MIN max:MAX)"),
    cmd!("zintercard", -3, READONLY, NOKEYS, "sorted-set", "7.0.0", "Intersect multiple sorted sets and return the cardinality of the result", zintercard;
        acl: acl::SORTEDSET,
        complexity: "O(N*K) worst case with N being the smallest input sorted set, K being the number of input sorted sets.",
        keys: "RO,access index:1 keynum:0:1:1",
        args: "numkeys:integer key:key* limit:integer=LIMIT?"),
    cmd!("zdiff", -3, READONLY, NOKEYS, "sorted-set", "6.2.0", "Subtract multiple sorted sets", zdiff;
        acl: acl::SORTEDSET,
        complexity: "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
        keys: "RO,access index:1 keynum:0:1:1",
        args: "numkeys:integer key:key* withscores:WITHSCORES?"),
    cmd!("zdiffstore", -4, WRITE | DENYOOM, KEY1, "sorted-set", "6.2.0", "Subtract multiple sorted sets and store the resulting sorted set in a new key", zdiffstore;
        acl: acl::SORTEDSET,
        complexity: "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
        keys: "OW,update index:1 range:0:1:0; RO,access index:2 keynum:0:1:1",
        args: "destination:key numkeys:integer key:key#1*"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use blinkdb_engine::Limits;

    fn zset(items: &[(&str, f64)]) -> Input {
        let items = items.iter().map(|(m, s)| (m.as_bytes(), *s)).collect();
        Input::Z(ZSetValue::build(items, &Limits::default()))
    }

    fn set(members: &[&str]) -> Input {
        let limits = Limits::default();
        let mut s = SetValue::for_member(members[0].as_bytes());
        for m in members {
            s.add(m.as_bytes(), &limits);
        }
        Input::S(s)
    }

    fn request(n: usize, weights: &[f64], aggregate: Aggregate) -> Request {
        Request {
            weights: if weights.is_empty() {
                vec![1.0; n]
            } else {
                weights.to_vec()
            },
            aggregate,
            scores: true,
            limit: 0,
        }
    }

    fn sorted(mut items: Items<'_>) -> Vec<(String, f64)> {
        items.sort_by(|a, b| String::from_utf8_lossy(&a.0).cmp(&String::from_utf8_lossy(&b.0)));
        items
            .into_iter()
            .map(|(m, s)| (String::from_utf8_lossy(&m).into_owned(), s))
            .collect()
    }

    #[test]
    fn sets_count_as_score_one() {
        let inputs = [
            zset(&[("a", 2.0), ("b", 3.0), ("x", 5.0)]),
            set(&["a", "x", "1"]),
        ];
        let (items, n) = compute(
            Op::Inter,
            &request(2, &[2.0, 10.0], Aggregate::Sum),
            &inputs,
            false,
        );
        assert_eq!(n, 2);
        assert_eq!(sorted(items), [("a".into(), 14.0), ("x".into(), 20.0)]);
        let (items, _) = compute(Op::Union, &request(2, &[], Aggregate::Max), &inputs, false);
        assert_eq!(
            sorted(items),
            [
                ("1".into(), 1.0),
                ("a".into(), 2.0),
                ("b".into(), 3.0),
                ("x".into(), 5.0)
            ]
        );
        let (items, _) = compute(Op::Diff, &request(2, &[], Aggregate::Sum), &inputs, false);
        assert_eq!(sorted(items), [("b".into(), 3.0)]);
        let (_, n) = compute(Op::Inter, &request(2, &[], Aggregate::Sum), &inputs, true);
        assert_eq!(n, 2);
    }

    #[test]
    fn nan_products_and_sums_become_zero() {
        let inputs = [
            zset(&[("a", f64::INFINITY)]),
            zset(&[("a", f64::NEG_INFINITY)]),
        ];
        let (items, _) = compute(Op::Union, &request(2, &[], Aggregate::Sum), &inputs, false);
        assert_eq!(sorted(items), [("a".into(), 0.0)]);
        let (items, _) = compute(
            Op::Inter,
            &request(2, &[0.0, 1.0], Aggregate::Min),
            &inputs,
            false,
        );
        assert_eq!(sorted(items), [("a".into(), f64::NEG_INFINITY)]);
    }
}
