//! LCS: the longest common subsequence of two strings, by Redis 7.0's
//! dynamic programming table (its size bounded by proto-max-bulk-len) and
//! its walk back through it, so that the subsequence and the IDX ranges are
//! the ones Redis picks.

use super::args::*;
use super::strings::string_of;
use super::Ctx;
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

/// One matching run: the ranges in the first and the second string.
struct Match {
    a: (u32, u32),
    b: (u32, u32),
}

/// The table's cells: LCS length of a[..i] and b[..j] at `j + i * (blen + 1)`.
struct Table {
    cells: Vec<u32>,
    width: usize,
}

impl Table {
    fn build(a: &[u8], b: &[u8], limit: i64) -> Result<Table, &'static str> {
        let width = b.len() + 1;
        let cells = ((a.len() + 1) as u64).checked_mul(width as u64);
        let bytes = cells.and_then(|c| c.checked_mul(4));
        let (Some(cells), Some(bytes)) = (cells, bytes) else {
            return Err(ERR_TABLE_ALLOC);
        };
        if bytes > limit.max(0) as u64 {
            return Err(ERR_TABLE_LIMIT);
        }
        let mut t = Vec::new();
        t.try_reserve_exact(cells as usize)
            .map_err(|_| ERR_TABLE_ALLOC)?;
        t.resize(cells as usize, 0u32);
        for i in 1..=a.len() {
            let (prev, row) = t[(i - 1) * width..(i + 1) * width].split_at_mut(width);
            for j in 1..width {
                row[j] = if a[i - 1] == b[j - 1] {
                    prev[j - 1] + 1
                } else {
                    prev[j].max(row[j - 1])
                };
            }
        }
        Ok(Table { cells: t, width })
    }

    fn at(&self, i: usize, j: usize) -> u32 {
        self.cells[j + i * self.width]
    }
}

/// Walks back from the end of both strings, as Redis does, collecting the
/// subsequence and the runs of at least `min_len` bytes (0: all).
fn walk(a: &[u8], b: &[u8], t: &Table, min_len: i64, runs: bool) -> (Vec<u8>, Vec<Match>) {
    let total = t.at(a.len(), b.len()) as usize;
    let mut lcs = vec![0u8; total];
    let mut left = total;
    let mut matches = Vec::new();
    let alen = a.len() as u32;
    // `a_start == alen`: no run is open.
    let (mut a_start, mut a_end, mut b_start, mut b_end) = (alen, 0u32, 0u32, 0u32);
    let (mut i, mut j) = (a.len(), b.len());
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            lcs[left - 1] = a[i - 1];
            let (ii, jj) = ((i - 1) as u32, (j - 1) as u32);
            if a_start == alen {
                (a_start, a_end, b_start, b_end) = (ii, ii, jj, jj);
            } else if a_start == ii + 1 && b_start == jj + 1 {
                a_start -= 1;
                b_start -= 1;
            } else {
                emit = true;
            }
            if a_start == 0 || b_start == 0 {
                emit = true;
            }
            left -= 1;
            i -= 1;
            j -= 1;
        } else {
            if t.at(i - 1, j) > t.at(i, j - 1) {
                i -= 1;
            } else {
                j -= 1;
            }
            if a_start != alen {
                emit = true;
            }
        }
        if emit {
            let len = a_end.wrapping_sub(a_start).wrapping_add(1);
            if runs && (min_len == 0 || len as i64 >= min_len) {
                matches.push(Match {
                    a: (a_start, a_end),
                    b: (b_start, b_end),
                });
            }
            a_start = alen;
        }
    }
    (lcs, matches)
}

pub fn lcs(ctx: &mut Ctx, args: &Args) {
    ctx.count_lookups(&args[1..3]);
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
        Err(e) => return ctx.out.error(e),
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
