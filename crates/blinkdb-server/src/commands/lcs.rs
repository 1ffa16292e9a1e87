//! LCS: the longest common subsequence of two strings (`algo/lcs.rs`), its
//! table's size bounded by proto-max-bulk-len, with Redis 7.0's options,
//! errors and reply shapes.

use super::args::*;
use super::strings::string_of;
use super::Ctx;
use crate::algo::lcs::{walk, Table, TableError};
use crate::protocol::Args;

const ERR_NOT_STRINGS: &str = "ERR The specified keys must contain string values";
const ERR_LEN_AND_IDX: &str = "ERR If you want both the length and indexes, please just use IDX.";
const ERR_TOO_LONG: &str = "ERR String too long for LCS";
const ERR_TABLE_LIMIT: &str =
    "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len";
const ERR_TABLE_ALLOC: &str = "ERR Insufficient memory, failed allocating transient memory for LCS";

enum Input {
    Str(Vec<u8>),
    WrongType,
}

#[derive(Default)]
struct Options {
    len: bool,
    idx: bool,
    with_match_len: bool,
    min_match_len: i64,
}

fn options(args: &Args) -> Result<Options, &'static str> {
    let mut o = Options::default();
    let mut j = 3;
    while j < args.len() {
        let opt = args[j];
        let more = j + 1 < args.len();
        if super::bitops::word_is(opt, "idx") {
            o.idx = true;
        } else if super::bitops::word_is(opt, "len") {
            o.len = true;
        } else if super::bitops::word_is(opt, "withmatchlen") {
            o.with_match_len = true;
        } else if super::bitops::word_is(opt, "minmatchlen") && more {
            o.min_match_len = parse_i64(args[j + 1]).ok_or(ERR_NOT_INT)?.max(0);
            j += 1;
        } else {
            return Err(ERR_SYNTAX);
        }
        j += 1;
    }
    if o.len && o.idx {
        return Err(ERR_LEN_AND_IDX);
    }
    Ok(o)
}

pub fn lcs(ctx: &mut Ctx, args: &Args) {
    let db = ctx.client.db;
    let engine = &ctx.shared.engine;
    let read = |key: &[u8]| {
        engine.read(db, key, |e| match e {
            None => Ok(Input::Str(Vec::new())),
            Some(e) if !e.value().is_string() => Ok(Input::WrongType),
            Some(e) => string_of(engine, e).map(|s| Input::Str(s.into_owned())),
        })
    };
    let (a, b) = match (read(args[1]), read(args[2])) {
        (Err(e), _) | (_, Err(e)) => return ctx.out.error(&e),
        (Ok(Input::Str(a)), Ok(Input::Str(b))) => (a, b),
        _ => return ctx.out.error(ERR_NOT_STRINGS),
    };
    let o = match options(args) {
        Ok(o) => o,
        Err(e) => return ctx.out.error(e),
    };
    let max = u32::MAX as usize - 1;
    if a.len() >= max || b.len() >= max {
        return ctx.out.error(ERR_TOO_LONG);
    }
    let limit = ctx.client.settings(ctx.shared).proto_max_bulk_len;
    let table = match Table::build(&a, &b, limit) {
        Ok(t) => t,
        Err(TableError::OverLimit) => return ctx.out.error(ERR_TABLE_LIMIT),
        Err(TableError::AllocFailed) => return ctx.out.error(ERR_TABLE_ALLOC),
    };
    let total = table.at(a.len(), b.len());
    let out = &mut *ctx.out;
    if o.len && !o.idx {
        return out.int(total as i64);
    }
    let (text, matches) = walk(&a, &b, &table, o.min_match_len, o.idx);
    if !o.idx {
        return out.bulk(&text);
    }
    out.map(2);
    out.bulk(b"matches");
    out.array(matches.len());
    for m in &matches {
        out.array(2 + o.with_match_len as usize);
        for (start, end) in [m.a, m.b] {
            out.array(2);
            out.int(start as i64);
            out.int(end as i64);
        }
        if o.with_match_len {
            out.int((m.a.1 - m.a.0 + 1) as i64);
        }
    }
    out.bulk(b"len");
    out.int(total as i64);
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("lcs", -3, READONLY, (1, 2, 1), "string", "7.0.0", "Find longest common substring", lcs;
        acl: acl::STRING,
        complexity: "O(N*M) where N and M are the lengths of s1 and s2, respectively",
        args: "key1:key key2:key len:LEN? idx:IDX? len:integer=MINMATCHLEN? withmatchlen:WITHMATCHLEN?"),
];
