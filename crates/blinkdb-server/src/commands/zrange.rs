//! Sorted-set ranges by rank, score and lexicographic order: ZRANGE and its
//! older forms, ZRANGESTORE, ZCOUNT, ZLEXCOUNT and ZREMRANGEBY*, with
//! Redis 7.0's parsing rules, replies, events and AOF records.

use super::args::{eq_ic, parse_i64, ERR_NOT_INT, ERR_SYNTAX, ERR_WRONGTYPE};
use super::collection;
use super::zset::{limits, strtod};
use super::Ctx;
use crate::protocol::{Args, Out};
use blinkdb_engine::{event::ZSET, ZSetValue};
use smallvec::SmallVec;

const ERR_SCORE_RANGE: &str = "ERR min or max is not a float";
const ERR_LEX_RANGE: &str = "ERR min or max not valid string range item";

/// A score interval (zslParseRange): `(` makes a bound exclusive.
#[derive(Clone, Copy, Debug)]
pub struct ScoreRange {
    pub min: f64,
    pub minex: bool,
    pub max: f64,
    pub maxex: bool,
}

/// One bound read as zslParseRange reads it: strtod up to the end (or an
/// embedded NUL), leading spaces allowed, overflow to inf allowed; NaN not.
fn score_bound(arg: &[u8]) -> Option<(f64, bool)> {
    let (ex, text) = match arg.first() {
        Some(b'(') => (true, &arg[1..]),
        _ => (false, arg),
    };
    let (v, used, _) = strtod(text);
    let stop = text.get(used).copied().unwrap_or(0);
    (stop == 0 && !v.is_nan()).then_some((v, ex))
}

impl ScoreRange {
    pub fn parse(min: &[u8], max: &[u8]) -> Option<Self> {
        let (min, minex) = score_bound(min)?;
        let (max, maxex) = score_bound(max)?;
        Some(ScoreRange {
            min,
            minex,
            max,
            maxex,
        })
    }

    pub fn gte_min(&self, s: f64) -> bool {
        if self.minex {
            s > self.min
        } else {
            s >= self.min
        }
    }

    pub fn lte_max(&self, s: f64) -> bool {
        if self.maxex {
            s < self.max
        } else {
            s <= self.max
        }
    }

    /// The ranks in range: `start..end`.
    pub fn ranks(&self, z: &ZSetValue) -> (usize, usize) {
        let start = self.start(z);
        let end = z.partition_by_score(|s| self.lte_max(s)).max(start);
        (start, end)
    }

    /// The rank of the first member at or past the minimum.
    fn start(&self, z: &ZSetValue) -> usize {
        z.partition_by_score(|s| !self.gte_min(s))
    }

    /// Visits the members in range from the near bound (the minimum, or with
    /// `rev` the maximum) while the far bound holds, at most `take` of them,
    /// as Redis walks its skiplist: one search instead of two when nothing
    /// is skipped (ZRANGEBYSCORE ... LIMIT 0 n on a large set).
    fn walk<'z>(
        &self,
        z: &'z ZSetValue,
        rev: bool,
        take: usize,
        mut emit: impl FnMut(&'z [u8], f64),
    ) {
        if take == 0 {
            return;
        }
        let mut left = take;
        let mut step = |m, sc, far: bool| {
            if !far {
                return false;
            }
            emit(m, sc);
            left -= 1;
            left > 0
        };
        if rev {
            z.walk_by_score(
                |s| self.lte_max(s),
                true,
                |m, sc| step(m, sc, self.gte_min(sc)),
            );
        } else {
            z.walk_by_score(
                |s| !self.gte_min(s),
                false,
                |m, sc| step(m, sc, self.lte_max(sc)),
            );
        }
    }
}

/// A lexicographic bound: `-`, `+`, `[x` (inclusive) or `(x` (exclusive).
#[derive(Clone, Debug)]
enum LexBound {
    Least,
    Greatest,
    At(Vec<u8>, bool),
}

impl LexBound {
    fn parse(arg: &[u8]) -> Option<Self> {
        // Redis reads a C string: "+" and "-" must end at the next byte.
        let alone = arg.len() == 1 || arg.get(1) == Some(&0);
        match arg.first() {
            Some(b'+') if alone => Some(LexBound::Greatest),
            Some(b'-') if alone => Some(LexBound::Least),
            Some(b'(') => Some(LexBound::At(arg[1..].to_vec(), true)),
            Some(b'[') => Some(LexBound::At(arg[1..].to_vec(), false)),
            _ => None,
        }
    }
}

/// A lexicographic interval (zslParseLexRange).
#[derive(Clone, Debug)]
pub struct LexRange {
    min: LexBound,
    max: LexBound,
}

impl LexRange {
    pub fn parse(min: &[u8], max: &[u8]) -> Option<Self> {
        Some(LexRange {
            min: LexBound::parse(min)?,
            max: LexBound::parse(max)?,
        })
    }

    pub fn gte_min(&self, m: &[u8]) -> bool {
        match &self.min {
            LexBound::Least => true,
            LexBound::Greatest => false,
            LexBound::At(b, true) => m > &b[..],
            LexBound::At(b, false) => m >= &b[..],
        }
    }

    pub fn lte_max(&self, m: &[u8]) -> bool {
        match &self.max {
            LexBound::Least => false,
            LexBound::Greatest => true,
            LexBound::At(b, true) => m < &b[..],
            LexBound::At(b, false) => m <= &b[..],
        }
    }

    /// Whether the range is empty whatever the set holds (zslParseLexRange's
    /// callers: min above max, or equal with an exclusive end).
    fn always_empty(&self) -> bool {
        use std::cmp::Ordering::*;
        let cmp = match (&self.min, &self.max) {
            (LexBound::Least, LexBound::Least) | (LexBound::Greatest, LexBound::Greatest) => Equal,
            (LexBound::Least, _) | (_, LexBound::Greatest) => Less,
            (LexBound::Greatest, _) | (_, LexBound::Least) => Greater,
            (LexBound::At(a, _), LexBound::At(b, _)) => a.cmp(b),
        };
        let exclusive = |b: &LexBound| !matches!(b, LexBound::At(_, false));
        cmp == Greater || (cmp == Equal && (exclusive(&self.min) || exclusive(&self.max)))
    }

    /// The ranks `start..end` of the members in range. Members of one score
    /// are in lexicographic order and any search finds them; with mixed
    /// scores the answer is Redis's unspecified one, which for the compact
    /// encoding is reproduced here: its first and last members are checked
    /// against the range, then a scan from the head (or, for `rev`, from the
    /// tail) finds the first member past the near bound and runs while the
    /// members stay within the far one.
    pub fn ranks_dir(&self, z: &ZSetValue, rev: bool) -> (usize, usize) {
        let len = z.len();
        if len == 0
            || self.always_empty()
            || !self.gte_min(z.nth(len - 1).0)
            || !self.lte_max(z.nth(0).0)
        {
            return (0, 0);
        }
        if let ZSetValue::Pack(_) = z {
            let members: Vec<&[u8]> = z.iter().map(|(m, _)| m).collect();
            return if rev {
                let Some(last) = members.iter().rposition(|m| self.lte_max(m)) else {
                    return (0, 0);
                };
                let run = members[..=last]
                    .iter()
                    .rev()
                    .take_while(|m| self.gte_min(m))
                    .count();
                (last + 1 - run, last + 1)
            } else {
                let Some(first) = members.iter().position(|m| self.gte_min(m)) else {
                    return (0, 0);
                };
                let run = members[first..]
                    .iter()
                    .take_while(|m| self.lte_max(m))
                    .count();
                (first, first + run)
            };
        }
        let start = z.partition(|m, _| !self.gte_min(m));
        let end = z.partition(|m, _| self.lte_max(m)).max(start);
        (start, end)
    }

    pub fn ranks(&self, z: &ZSetValue) -> (usize, usize) {
        self.ranks_dir(z, false)
    }
}

/// ZRANGE's kind of range.
#[derive(Clone, Copy, PartialEq, Eq)]
enum By {
    Rank,
    Score,
    Lex,
}

/// A parsed ZRANGE-family request.
struct Request {
    by: By,
    rev: bool,
    scores: bool,
    /// LIMIT offset count (count < 0: no limit).
    offset: i64,
    limit: i64,
    start: i64,
    end: i64,
    score: Option<ScoreRange>,
    lex: Option<LexRange>,
}

/// Parses `<min> <max> [options]` of the ZRANGE family starting at `args[src]`
/// (the source key), as zrangeGenericCommand does; `by`/`rev` are fixed by
/// the older commands. Errors come back as their reply text.
fn parse(
    args: &Args,
    src: usize,
    store: bool,
    by: Option<By>,
    rev: Option<bool>,
) -> Result<Request, &'static str> {
    // A fixed kind or direction (the older commands) takes no option for it;
    // ZRANGE takes each at most once.
    let (mut by_opt, mut rev_opt) = (by, rev);
    let mut scores = false;
    let (mut offset, mut limit) = (0i64, -1i64);
    let mut j = src + 3;
    while j < args.len() {
        let left = args.len() - j - 1;
        let a = args[j];
        if !store && eq_ic(a, "withscores") {
            scores = true;
        } else if eq_ic(a, "limit") && left >= 2 {
            offset = parse_i64(args[j + 1]).ok_or(ERR_NOT_INT)?;
            limit = parse_i64(args[j + 2]).ok_or(ERR_NOT_INT)?;
            j += 2;
        } else if rev_opt.is_none() && eq_ic(a, "rev") {
            rev_opt = Some(true);
        } else if by_opt.is_none() && eq_ic(a, "bylex") {
            by_opt = Some(By::Lex);
        } else if by_opt.is_none() && eq_ic(a, "byscore") {
            by_opt = Some(By::Score);
        } else {
            return Err(ERR_SYNTAX);
        }
        j += 1;
    }
    let by = by_opt.unwrap_or(By::Rank);
    let rev = rev_opt.unwrap_or(false);
    if limit != -1 && by == By::Rank {
        return Err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        );
    }
    if scores && by == By::Lex {
        return Err("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    }
    let (mut lo, mut hi) = (args[src + 1], args[src + 2]);
    if rev && by != By::Rank {
        std::mem::swap(&mut lo, &mut hi);
    }
    let mut req = Request {
        by,
        rev,
        scores,
        offset,
        limit,
        start: 0,
        end: 0,
        score: None,
        lex: None,
    };
    match by {
        By::Rank => {
            req.start = parse_i64(lo).ok_or(ERR_NOT_INT)?;
            req.end = parse_i64(hi).ok_or(ERR_NOT_INT)?;
        }
        By::Score => req.score = Some(ScoreRange::parse(lo, hi).ok_or(ERR_SCORE_RANGE)?),
        By::Lex => req.lex = Some(LexRange::parse(lo, hi).ok_or(ERR_LEX_RANGE)?),
    }
    Ok(req)
}

/// Rank `start..=end` of a set of `len` (negative from the end), clamped as
/// Redis does; None when empty.
fn rank_span(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut start = if start < 0 { len + start } else { start };
    let mut end = if end < 0 { len + end } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= len {
        return None;
    }
    if end >= len {
        end = len - 1;
    }
    Some((start as usize, end as usize))
}

/// Visits the members the request selects, in reply order.
fn select<'z>(req: &Request, z: &'z ZSetValue, mut emit: impl FnMut(&'z [u8], f64)) {
    let len = z.len();
    let (first, last) = match req.by {
        By::Rank => {
            let Some((s, e)) = rank_span(req.start, req.end, len) else {
                return;
            };
            let n = e - s + 1;
            for (m, sc) in z.range(s, req.rev).take(n) {
                emit(m, sc);
            }
            return;
        }
        By::Score if req.offset == 0 => {
            let take = usize::try_from(req.limit).unwrap_or(usize::MAX);
            return req
                .score
                .as_ref()
                .expect("parsed")
                .walk(z, req.rev, take, emit);
        }
        By::Score => req.score.as_ref().expect("parsed").ranks(z),
        By::Lex => req.lex.as_ref().expect("parsed").ranks_dir(z, req.rev),
    };
    // LIMIT: a negative offset skips everything, a negative count takes all.
    if req.offset < 0 || last <= first {
        return;
    }
    let offset = req.offset as usize;
    let in_range = last - first;
    if offset >= in_range {
        return;
    }
    let take = if req.limit < 0 {
        in_range - offset
    } else {
        (req.limit as usize).min(in_range - offset)
    };
    let from = if req.rev {
        len - last + offset
    } else {
        first + offset
    };
    for (m, sc) in z.range(from, req.rev).take(take) {
        emit(m, sc);
    }
}

fn reply_range(out: &mut Out, req: &Request, z: Option<&ZSetValue>) {
    let Some(z) = z else {
        return out.array(0);
    };
    // The count goes first: members are gathered, on the stack for a short
    // range (LIMIT 0 10).
    let mut items: SmallVec<[(&[u8], f64); 16]> = SmallVec::new();
    select(req, z, |m, s| items.push((m, s)));
    let nested = req.scores && out.resp3();
    out.array(if req.scores && !nested {
        items.len() * 2
    } else {
        items.len()
    });
    for (m, s) in items {
        if nested {
            out.array(2);
        }
        out.bulk(m);
        if req.scores {
            out.double(s);
        }
    }
}

fn range_generic(ctx: &mut Ctx, args: &Args, by: Option<By>, rev: Option<bool>) {
    let req = match parse(args, 1, false, by, rev) {
        Ok(r) => r,
        Err(e) => return ctx.out.error(e),
    };
    collection::read_or_reply(ctx, args[1], |z: Option<&ZSetValue>, out| {
        reply_range(out, &req, z)
    });
}

pub fn zrange(ctx: &mut Ctx, args: &Args) {
    range_generic(ctx, args, None, None);
}

pub fn zrevrange(ctx: &mut Ctx, args: &Args) {
    range_generic(ctx, args, Some(By::Rank), Some(true));
}

pub fn zrangebyscore(ctx: &mut Ctx, args: &Args) {
    range_generic(ctx, args, Some(By::Score), Some(false));
}

pub fn zrevrangebyscore(ctx: &mut Ctx, args: &Args) {
    range_generic(ctx, args, Some(By::Score), Some(true));
}

pub fn zrangebylex(ctx: &mut Ctx, args: &Args) {
    range_generic(ctx, args, Some(By::Lex), Some(false));
}

pub fn zrevrangebylex(ctx: &mut Ctx, args: &Args) {
    range_generic(ctx, args, Some(By::Lex), Some(true));
}

/// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count].
pub fn zrangestore(ctx: &mut Ctx, args: &Args) {
    let mut req = match parse(args, 2, true, None, None) {
        Ok(r) => r,
        Err(e) => return ctx.out.error(e),
    };
    req.scores = true;
    let (dst, src) = (args[1], args[2]);
    let limits = limits(ctx);
    let db = ctx.db();
    ctx.write(&[(db, dst), (db, src)], |tx, out| {
        let source = match collection::get::<ZSetValue>(tx, db, src) {
            Err(_) => return out.error(ERR_WRONGTYPE),
            Ok(z) => z,
        };
        let built = source.map(|z| {
            let mut items = Vec::new();
            select(&req, z, |m, s| items.push((m, s)));
            ZSetValue::build(items, &limits)
        });
        let built = built.unwrap_or_default();
        store_result(tx, db, dst, built, "zrangestore", args, out);
    });
}

/// Stores a *STORE command's result at `dst` (or deletes `dst` when it is
/// empty), with Redis's reply, events and AOF record.
pub fn store_result(
    tx: &mut blinkdb_engine::Tx,
    db: usize,
    dst: &[u8],
    value: ZSetValue,
    event: &'static str,
    args: &Args,
    out: &mut Out,
) {
    let n = value.len();
    if n > 0 {
        collection::store(tx, db, dst, value);
        tx.log(db, args);
        tx.notify(ZSET, event, db, dst);
    } else if tx.remove(db, dst).is_some() {
        tx.log(db, args);
        tx.notify(blinkdb_engine::event::GENERIC, "del", db, dst);
    }
    out.int(n as i64);
}

/// Where a parsed range lies in a set: its ranks `start..end`.
type Ranks = Box<dyn Fn(&ZSetValue) -> (usize, usize)>;

fn count_generic(ctx: &mut Ctx, args: &Args, lex: bool) {
    let (lo, hi) = (args[2], args[3]);
    let ranks: Ranks = if lex {
        match LexRange::parse(lo, hi) {
            Some(r) => Box::new(move |z: &ZSetValue| r.ranks(z)),
            None => return ctx.out.error(ERR_LEX_RANGE),
        }
    } else {
        match ScoreRange::parse(lo, hi) {
            Some(r) => Box::new(move |z: &ZSetValue| r.ranks(z)),
            None => return ctx.out.error(ERR_SCORE_RANGE),
        }
    };
    collection::read_or_reply(ctx, args[1], |z: Option<&ZSetValue>, out| {
        let n = z.map_or(0, |z| {
            let (s, e) = ranks(z);
            e - s
        });
        out.int(n as i64)
    });
}

pub fn zcount(ctx: &mut Ctx, args: &Args) {
    count_generic(ctx, args, false);
}

pub fn zlexcount(ctx: &mut Ctx, args: &Args) {
    count_generic(ctx, args, true);
}

fn remrange_generic(ctx: &mut Ctx, args: &Args, by: By) {
    let (lo, hi) = (args[2], args[3]);
    let (event, ranks): (&str, Ranks) = match by {
        By::Rank => {
            let (Some(start), Some(end)) = (parse_i64(lo), parse_i64(hi)) else {
                return ctx.out.error(ERR_NOT_INT);
            };
            (
                "zremrangebyrank",
                Box::new(move |z: &ZSetValue| {
                    rank_span(start, end, z.len()).map_or((0, 0), |(s, e)| (s, e + 1))
                }),
            )
        }
        By::Score => match ScoreRange::parse(lo, hi) {
            Some(r) => (
                "zremrangebyscore",
                Box::new(move |z: &ZSetValue| r.ranks(z)),
            ),
            None => return ctx.out.error(ERR_SCORE_RANGE),
        },
        By::Lex => match LexRange::parse(lo, hi) {
            Some(r) => ("zremrangebylex", Box::new(move |z: &ZSetValue| r.ranks(z))),
            None => return ctx.out.error(ERR_LEX_RANGE),
        },
    };
    let key = args[1];
    ctx.write1(key, |tx, db, out| {
        // An empty range leaves the key untouched (WATCH), as in Redis.
        let span = match collection::get::<ZSetValue>(tx, db, key) {
            Err(_) => return out.error(ERR_WRONGTYPE),
            Ok(None) => (0, 0),
            Ok(Some(z)) => ranks(z),
        };
        if span.0 >= span.1 {
            return out.int(0);
        }
        let removed = collection::modify(tx, db, key, false, |z: &mut ZSetValue| {
            let (s, e) = ranks(z);
            z.remove_ranks(s, e)
        });
        let removed = match removed {
            Err(_) => return out.error(ERR_WRONGTYPE),
            Ok(n) => n.unwrap_or(0),
        };
        if removed > 0 {
            tx.log(db, args);
            tx.notify(ZSET, event, db, key);
            collection::drop_if_empty::<ZSetValue>(tx, db, key);
        }
        out.int(removed as i64);
    });
}

pub fn zremrangebyrank(ctx: &mut Ctx, args: &Args) {
    remrange_generic(ctx, args, By::Rank);
}

pub fn zremrangebyscore(ctx: &mut Ctx, args: &Args) {
    remrange_generic(ctx, args, By::Score);
}

pub fn zremrangebylex(ctx: &mut Ctx, args: &Args) {
    remrange_generic(ctx, args, By::Lex);
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("zcount", 4, READONLY | FAST, KEY1, "sorted-set", "2.0.0", "Count the members in a sorted set with scores within the given values", zcount;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)) with N being the number of elements in the sorted set.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key min:double max:double"),
    cmd!("zlexcount", 4, READONLY | FAST, KEY1, "sorted-set", "2.8.9", "Count the number of members in a sorted set between a given lexicographical range", zlexcount;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)) with N being the number of elements in the sorted set.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key min:string max:string"),
    cmd!("zrange", -4, READONLY, KEY1, "sorted-set", "1.2.0", "Return a range of members in a sorted set", zrange;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key start:string stop:string sortby:oneof?^6.2.0(byscore:BYSCORE bylex:BYLEX) rev:REV?^6.2.0 offset_count:block=LIMIT?^6.2.0(offset:integer count:integer) withscores:WITHSCORES?",
        history: &[("6.2.0", "Added the `REV`, `BYSCORE`, `BYLEX` and `LIMIT` options.")]),
    cmd!("zrangestore", -5, WRITE | DENYOOM, (1, 2, 1), "sorted-set", "6.2.0", "Store a range of members from sorted set into another key", zrangestore;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements stored into the destination key.",
        keys: "OW,update index:1 range:0:1:0; RO,access index:2 range:0:1:0",
        args: "dst:key src:key#1 min:string max:string sortby:oneof?(byscore:BYSCORE bylex:BYLEX) rev:REV? offset_count:block=LIMIT?(offset:integer count:integer)"),
    cmd!("zrevrange", -4, READONLY, KEY1, "sorted-set", "1.2.0", "Return a range of members in a sorted set, by index, with scores ordered from high to low", zrevrange;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key start:integer stop:integer withscores:WITHSCORES?",
        doc_flags: doc::DEPRECATED,
        deprecated_since: "6.2.0",
        replaced_by: "`ZRANGE` with the `REV` argument"),
    cmd!("zrangebyscore", -4, READONLY, KEY1, "sorted-set", "1.0.5", "Return a range of members in a sorted set, by score", zrangebyscore;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key min:double max:double withscores:WITHSCORES?^2.0.0 offset_count:block=LIMIT?(offset:integer count:integer)",
        history: &[("2.0.0", "Added the `WITHSCORES` modifier.")],
        doc_flags: doc::DEPRECATED,
        deprecated_since: "6.2.0",
        replaced_by: "`ZRANGE` with the `BYSCORE` argument"),
    cmd!("zrevrangebyscore", -4, READONLY, KEY1, "sorted-set", "2.2.0", "Return a range of members in a sorted set, by score, with scores ordered from high to low", zrevrangebyscore;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key max:double min:double withscores:WITHSCORES? offset_count:block=LIMIT?(offset:integer count:integer)",
        history: &[("2.1.6", "`min` and `max` can be exclusive.")],
        doc_flags: doc::DEPRECATED,
        deprecated_since: "6.2.0",
        replaced_by: "`ZRANGE` with the `REV` and `BYSCORE` arguments"),
    cmd!("zrangebylex", -4, READONLY, KEY1, "sorted-set", "2.8.9", "Return a range of members in a sorted set, by lexicographical range", zrangebylex;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key min:string max:string offset_count:block=LIMIT?(offset:integer count:integer)",
        doc_flags: doc::DEPRECATED,
        deprecated_since: "6.2.0",
        replaced_by: "`ZRANGE` with the `BYLEX` argument"),
    cmd!("zrevrangebylex", -4, READONLY, KEY1, "sorted-set", "2.8.9", "Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings.", zrevrangebylex;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key max:string min:string offset_count:block=LIMIT?(offset:integer count:integer)",
        doc_flags: doc::DEPRECATED,
        deprecated_since: "6.2.0",
        replaced_by: "`ZRANGE` with the `REV` and `BYLEX` arguments"),
    cmd!("zremrangebyrank", 4, WRITE, KEY1, "sorted-set", "2.0.0", "Remove all members in a sorted set within the given indexes", zremrangebyrank;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
        keys: "RW,delete index:1 range:0:1:0",
        args: "key:key start:integer stop:integer"),
    cmd!("zremrangebyscore", 4, WRITE, KEY1, "sorted-set", "1.2.0", "Remove all members in a sorted set within the given scores", zremrangebyscore;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
        keys: "RW,delete index:1 range:0:1:0",
        args: "key:key min:double max:double"),
    cmd!("zremrangebylex", 4, WRITE, KEY1, "sorted-set", "2.8.9", "Remove all members in a sorted set between the given lexicographical range", zremrangebylex;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
        keys: "RW,delete index:1 range:0:1:0",
        args: "key:key min:string max:string"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_bounds_follow_zsl_parse_range() {
        let r = ScoreRange::parse(b"(1", b"+inf").unwrap();
        assert!(r.minex && !r.maxex && r.max.is_infinite());
        assert!(!r.gte_min(1.0) && r.gte_min(1.5));
        // strtod skips leading spaces and reads "(" as 0; overflow is inf.
        assert_eq!(ScoreRange::parse(b" 2", b"(").unwrap().min, 2.0);
        assert!(ScoreRange::parse(b"1e400", b"2").unwrap().min.is_infinite());
        assert!(ScoreRange::parse(b"nan", b"1").is_none());
        assert!(ScoreRange::parse(b"1x", b"1").is_none());
        assert!(ScoreRange::parse(b"1 ", b"1").is_none());
    }

    #[test]
    fn lex_bounds() {
        let r = LexRange::parse(b"[b", b"(d").unwrap();
        assert!(r.gte_min(b"b") && !r.gte_min(b"a") && r.lte_max(b"c") && !r.lte_max(b"d"));
        let all = LexRange::parse(b"-", b"+").unwrap();
        assert!(all.gte_min(b"") && all.lte_max(b"\xff"));
        let none = LexRange::parse(b"+", b"-").unwrap();
        assert!(!none.gte_min(b"x") && !none.lte_max(b"x"));
        for bad in [&b"a"[..], b"", b"+x", b"-1"] {
            assert!(LexRange::parse(bad, b"+").is_none());
        }
    }

    #[test]
    fn rank_spans_like_redis() {
        assert_eq!(rank_span(0, -1, 5), Some((0, 4)));
        assert_eq!(rank_span(-100, 2, 5), Some((0, 2)));
        assert_eq!(rank_span(3, 100, 5), Some((3, 4)));
        assert_eq!(rank_span(5, 10, 5), None);
        assert_eq!(rank_span(2, 1, 5), None);
        assert_eq!(rank_span(0, -1, 0), None);
    }
}
