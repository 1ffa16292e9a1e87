//! Bitmap commands on string values: SETBIT, GETBIT, BITCOUNT, BITPOS and
//! BITOP, with Redis 7.0's argument checks, error texts and propagation.
//! The bit algorithms are in `blinkdb_engine::bitmap`.

use super::args::*;
use super::strings::string_of;
use super::Ctx;
use crate::protocol::Args;
use blinkdb_engine::{
    bitmap::{self, BitOp},
    event::{GENERIC, KEY_MISS, STRING},
    Entry, InlineBytes, Origin, Tx, Value,
};

const ERR_BIT_OFFSET: &str = "ERR bit offset is not an integer or out of range";
const ERR_BIT_VALUE: &str = "ERR bit is not an integer or out of range";
const ERR_BITPOS_BIT: &str = "ERR The bit argument must be 1 or 0.";
const ERR_NOT_ONE_KEY: &str = "ERR BITOP NOT must be called with a single source key.";
/// Growing a string failed to allocate (Redis would abort).
const ERR_NO_MEMORY: &str = "ERR out of memory growing the string value";

/// Redis matches option words with strcasecmp: an argument counts up to its
/// first NUL byte.
pub(super) fn word_is(arg: &[u8], word: &str) -> bool {
    let end = arg.iter().position(|&c| c == 0).unwrap_or(arg.len());
    arg[..end].eq_ignore_ascii_case(word.as_bytes())
}

/// A bit offset argument, at most `proto-max-bulk-len` bytes in. With
/// `field_bits` > 0 (BITFIELD), `#N` means N fields of that width; the
/// product wraps as Redis's does. Records replayed from the log are not
/// held to the limit (Redis obeys its AOF and master the same way).
pub(super) fn bit_offset(ctx: &mut Ctx, arg: &[u8], field_bits: u32) -> Result<u64, &'static str> {
    let hash = field_bits > 0 && arg.first() == Some(&b'#');
    let digits = if hash { &arg[1..] } else { arg };
    let mut offset = parse_i64(digits).ok_or(ERR_BIT_OFFSET)?;
    if hash {
        offset = offset.wrapping_mul(field_bits as i64);
    }
    let limit = ctx.client.settings(ctx.shared).proto_max_bulk_len;
    if offset < 0 || (!ctx.shared.engine.is_loading() && (offset >> 3) >= limit) {
        return Err(ERR_BIT_OFFSET);
    }
    Ok(offset as u64)
}

/// A string as a bit command that writes found it.
pub(super) enum Target<'t> {
    Absent,
    /// In memory: changed in place.
    Inline(&'t [u8]),
    /// Kept in the log: its bytes (read back) and TTL, stored in memory once changed.
    Read(Vec<u8>, u64),
}

impl Target<'_> {
    pub(super) fn bytes(&self) -> &[u8] {
        match self {
            Target::Absent => &[],
            Target::Inline(s) => s,
            Target::Read(v, _) => v,
        }
    }

    /// Where to write, without the borrow of the entry.
    pub(super) fn into_found(self) -> Found {
        match self {
            Target::Absent => Found::Absent,
            Target::Inline(_) => Found::Inline,
            Target::Read(v, at) => Found::Read(v, at),
        }
    }
}

/// Where a bit command writes: see [`Target`].
pub(super) enum Found {
    Absent,
    Inline,
    Read(Vec<u8>, u64),
}

/// The string at `key` for a bit command that writes; Err holds the error
/// reply (WRONGTYPE, a failed read from the log).
pub(super) fn find_for_write<'t>(
    tx: &'t mut Tx,
    engine: &blinkdb_engine::Engine,
    db: usize,
    key: &[u8],
) -> Result<Target<'t>, String> {
    match tx.get(db, key) {
        None => Ok(Target::Absent),
        Some(e) if !e.value().is_string() => Err(ERR_WRONGTYPE.into()),
        Some(e) => match e.value() {
            Value::Str(s, _) => Ok(Target::Inline(s)),
            _ => Ok(Target::Read(
                string_of(engine, e)?.into_owned(),
                e.expire_at,
            )),
        },
    }
}

/// Makes the string at `key` `len` bytes long (zero padded, never shorter
/// than it is) with the bytes `patch` (index, value) written over it.
pub(super) fn write_bytes(
    tx: &mut Tx,
    db: usize,
    key: &[u8],
    found: Found,
    len: usize,
    patch: &[(usize, u8)],
) -> Result<(), &'static str> {
    let apply = |s: &mut [u8]| {
        for &(i, b) in patch {
            s[i] = b;
        }
    };
    match found {
        Found::Absent => {
            let mut v = Vec::new();
            v.try_reserve_exact(len).map_err(|_| ERR_NO_MEMORY)?;
            v.resize(len, 0);
            apply(&mut v);
            tx.insert(db, key, Entry::string_expiring(v, 0));
        }
        Found::Inline => {
            // In place: copying a large bitmap whole for each bit would make
            // SETBIT O(n). The key keeps its label and TTL.
            let grown = tx.update(db, key, |e| match e.value_mut() {
                Value::Str(s, _) => {
                    grow(s, len)?;
                    apply(s);
                    Ok(())
                }
                _ => unreachable!("the bit command found an in-memory string"),
            });
            grown.unwrap_or(Ok(()))?;
        }
        Found::Read(mut v, expire_at) => {
            if v.len() < len {
                v.try_reserve_exact(len - v.len())
                    .map_err(|_| ERR_NO_MEMORY)?;
                v.resize(len, 0);
            }
            apply(&mut v);
            tx.insert(db, key, Entry::string_expiring(v, expire_at));
        }
    }
    Ok(())
}

/// Zero-pads `s` to `len` bytes, reserving ahead as Redis's sds does (double
/// below 1 MB, 1 MB more above) so that a bitmap grown bit by bit is not
/// copied at every step (APPEND and SETRANGE grow strings with it too).
pub(super) fn grow(s: &mut InlineBytes, len: usize) -> Result<(), &'static str> {
    if s.len() >= len {
        return Ok(());
    }
    if len > s.capacity() {
        const MB: usize = 1 << 20;
        let greedy = if len < MB { len * 2 } else { len + MB };
        if s.try_reserve_exact(greedy - s.len()).is_err() {
            s.try_reserve_exact(len - s.len())
                .map_err(|_| ERR_NO_MEMORY)?;
        }
    }
    s.resize(len, 0);
    Ok(())
}

pub fn setbit(ctx: &mut Ctx, args: &Args) {
    let offset = match bit_offset(ctx, args[2], 0) {
        Ok(o) => o,
        Err(e) => return ctx.out.error(e),
    };
    let on = match parse_i64(args[3]) {
        Some(v @ (0 | 1)) => v == 1,
        _ => return ctx.out.error(ERR_BIT_VALUE),
    };
    let key = args[1];
    let byte = (offset >> 3) as usize;
    let mask = 1u8 << (7 - (offset & 7));
    let engine = &ctx.shared.engine;
    ctx.write1(key, |tx, db, out| {
        let target = match find_for_write(tx, engine, db, key) {
            Ok(t) => t,
            Err(e) => return out.error(&e),
        };
        let old = target.bytes().get(byte).copied().unwrap_or(0);
        let old_len = target.bytes().len();
        let found = target.into_found();
        let was_on = old & mask != 0;
        let dirty = matches!(found, Found::Absent) || byte >= old_len;
        if dirty || was_on != on {
            let new = if on { old | mask } else { old & !mask };
            let len = old_len.max(byte + 1);
            if let Err(e) = write_bytes(tx, db, key, found, len, &[(byte, new)]) {
                return out.error(e);
            }
            tx.log(db, &[b"SETBIT", key, args[2], args[3]]);
            tx.notify(STRING, "setbit", db, key);
        }
        out.int(was_on as i64);
    });
}

pub fn getbit(ctx: &mut Ctx, args: &Args) {
    let offset = match bit_offset(ctx, args[2], 0) {
        Ok(o) => o,
        Err(e) => return ctx.out.error(e),
    };
    let out = &mut *ctx.out;
    let engine = &ctx.shared.engine;
    engine.read(ctx.client.db, args[1], |e| {
        let Some(e) = e else { return out.int(0) };
        match string_of(engine, e) {
            Ok(s) => {
                let byte = s.get((offset >> 3) as usize).copied().unwrap_or(0);
                out.int(((byte >> (7 - (offset & 7))) & 1) as i64)
            }
            Err(err) => out.error(&err),
        }
    });
}

/// A BITCOUNT/BITPOS range in bytes, with the bits of its first and last
/// bytes that lie outside it (a BIT range).
struct Range {
    start: i64,
    end: i64,
    first_out: u8,
    last_out: u8,
}

/// Turns start/end (negative: from the end) into a byte range of a string
/// of `len` bytes, counted in bits when `in_bits`, as Redis clamps them.
fn byte_range(len: u64, mut start: i64, mut end: i64, in_bits: bool) -> Range {
    let total = if in_bits {
        (len as i64) << 3
    } else {
        len as i64
    };
    if start < 0 {
        start += total;
    }
    if end < 0 {
        end += total;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= total {
        end = total - 1;
    }
    let mut r = Range {
        start,
        end,
        first_out: 0,
        last_out: 0,
    };
    if in_bits && start <= end {
        r.first_out = !((1u32 << (8 - (start & 7))) - 1) as u8;
        r.last_out = ((1u32 << (7 - (end & 7))) - 1) as u8;
        r.start >>= 3;
        r.end >>= 3;
    }
    r
}

/// BIT or BYTE (Err: a syntax error).
fn index_unit(arg: &[u8]) -> Result<bool, ()> {
    if word_is(arg, "bit") {
        Ok(true)
    } else if word_is(arg, "byte") {
        Ok(false)
    } else {
        Err(())
    }
}

pub fn bitcount(ctx: &mut Ctx, args: &Args) {
    let out = &mut *ctx.out;
    let engine = &ctx.shared.engine;
    engine.read(ctx.client.db, args[1], |e| {
        // Redis looks the key up before it reads the range.
        let Some(e) = e else { return out.int(0) };
        let Some(len) = e.value().str_len().filter(|_| e.value().is_string()) else {
            return out.error(ERR_WRONGTYPE);
        };
        let range = match args.len() {
            2 => Range {
                start: 0,
                end: len as i64 - 1,
                first_out: 0,
                last_out: 0,
            },
            4 | 5 => {
                let (Some(start), Some(end)) = (parse_i64(args[2]), parse_i64(args[3])) else {
                    return out.error(ERR_NOT_INT);
                };
                if start < 0 && end < 0 && start > end {
                    return out.int(0);
                }
                let in_bits = match args.get(4).map(|a| index_unit(a)) {
                    Some(Err(())) => return out.error(ERR_SYNTAX),
                    Some(Ok(b)) => b,
                    None => false,
                };
                byte_range(len as u64, start, end, in_bits)
            }
            _ => return out.error(ERR_SYNTAX),
        };
        if range.start > range.end {
            return out.int(0);
        }
        let s = match string_of(engine, e) {
            Ok(s) => s,
            Err(err) => return out.error(&err),
        };
        let (start, end) = (range.start as usize, range.end as usize);
        let mut count = bitmap::popcount(&s[start..=end]);
        count -= bitmap::popcount(&[s[start] & range.first_out, s[end] & range.last_out]);
        out.int(count as i64);
    });
}

pub fn bitpos(ctx: &mut Ctx, args: &Args) {
    let bit = match parse_i64(args[2]) {
        Some(b @ (0 | 1)) => b == 1,
        Some(_) => return ctx.out.error(ERR_BITPOS_BIT),
        None => return ctx.out.error(ERR_NOT_INT),
    };
    let out = &mut *ctx.out;
    let engine = &ctx.shared.engine;
    engine.read(ctx.client.db, args[1], |e| {
        // A missing key is an endless run of zeros.
        let Some(e) = e else {
            return out.int(if bit { -1 } else { 0 });
        };
        let Some(len) = e.value().str_len().filter(|_| e.value().is_string()) else {
            return out.error(ERR_WRONGTYPE);
        };
        let mut end_given = false;
        let range = match args.len() {
            3 => Range {
                start: 0,
                end: len as i64 - 1,
                first_out: 0,
                last_out: 0,
            },
            4..=6 => {
                let Some(start) = parse_i64(args[3]) else {
                    return out.error(ERR_NOT_INT);
                };
                let in_bits = match args.get(5).map(|a| index_unit(a)) {
                    Some(Err(())) => return out.error(ERR_SYNTAX),
                    Some(Ok(b)) => b,
                    None => false,
                };
                let end = match args.get(4) {
                    Some(a) => match parse_i64(a) {
                        Some(end) => {
                            end_given = true;
                            end
                        }
                        None => return out.error(ERR_NOT_INT),
                    },
                    None => len as i64 - 1,
                };
                byte_range(len as u64, start, end, in_bits)
            }
            _ => return out.error(ERR_SYNTAX),
        };
        if range.start > range.end {
            return out.int(-1);
        }
        let s = match string_of(engine, e) {
            Ok(s) => s,
            Err(err) => return out.error(&err),
        };
        out.int(find_in_range(&s, &range, bit, end_given));
    });
}

/// BITPOS over a non-empty range, as Redis scans it: the partial first byte,
/// the whole bytes, then the partial last byte.
fn find_in_range(p: &[u8], r: &Range, bit: bool, end_given: bool) -> i64 {
    // The out-of-range bits of an edge byte are set to what is not sought.
    let mask_out = |b: u8, out: u8| if bit { b & !out } else { b | out };
    let mut start = r.start as usize;
    let mut bytes = (r.end - r.start + 1) as usize;
    let pos = 'found: {
        if r.first_out != 0 {
            let mut b = mask_out(p[start], r.first_out);
            if r.last_out != 0 && bytes == 1 {
                b = mask_out(b, r.last_out);
            }
            let pos = bitmap::first_bit(&[b], bit);
            if bytes == 1 || (pos != -1 && pos != 8) {
                break 'found pos;
            }
            start += 1;
            bytes -= 1;
        }
        let whole = bytes - (r.last_out != 0) as usize;
        if whole > 0 {
            let pos = bitmap::first_bit(&p[start..start + whole], bit);
            if bytes == whole || (pos != -1 && pos != (whole as i64) << 3) {
                break 'found pos;
            }
            start += whole;
            bytes -= whole;
        }
        bitmap::first_bit(&[mask_out(p[r.end as usize], r.last_out)], bit)
    };
    // With an explicit end, the bits past the range are not taken for zeros.
    if end_given && !bit && pos == (bytes as i64) << 3 {
        return -1;
    }
    if pos == -1 {
        -1
    } else {
        pos + ((start as i64) << 3)
    }
}

pub fn bitop(ctx: &mut Ctx, args: &Args) {
    let op = if word_is(args[1], "and") {
        BitOp::And
    } else if word_is(args[1], "or") {
        BitOp::Or
    } else if word_is(args[1], "xor") {
        BitOp::Xor
    } else if word_is(args[1], "not") {
        BitOp::Not
    } else {
        return ctx.out.error(ERR_SYNTAX);
    };
    if op == BitOp::Not && args.len() != 4 {
        return ctx.out.error(ERR_NOT_ONE_KEY);
    }
    let db = ctx.client.db;
    let keys: Vec<(usize, &[u8])> = args[2..].iter().map(|k| (db, &k[..])).collect();
    let engine = &ctx.shared.engine;
    ctx.write(&keys, |tx, out| {
        let mut srcs: Vec<Vec<u8>> = Vec::with_capacity(args.len() - 3);
        // The result is rebuilt from its sources' records: it is evicted with
        // the oldest of them (docs/cache-mode.md).
        let mut oldest: Option<u64> = None;
        for key in &args[3..] {
            match tx.get(db, key) {
                None => {
                    tx.notify(KEY_MISS, "keymiss", db, key);
                    srcs.push(Vec::new());
                }
                Some(e) => {
                    let origin = e.origin();
                    match string_of(engine, e) {
                        Ok(s) => srcs.push(s.into_owned()),
                        Err(err) => return out.error(&err),
                    }
                    if origin.is_set() {
                        oldest = Some(oldest.map_or(origin.seg(), |o| o.min(origin.seg())));
                    }
                }
            }
        }
        let refs: Vec<&[u8]> = srcs.iter().map(|s| &s[..]).collect();
        let result = bitmap::bitop(op, &refs);
        let len = result.len();
        let dest = args[2];
        let mut rec: Vec<&[u8]> = Vec::with_capacity(args.len());
        rec.push(b"BITOP");
        rec.extend(args[1..].iter().map(|a| &a[..]));
        if len > 0 {
            tx.log(db, &rec);
            let mut entry = Entry::new(Value::str(result));
            if let Some(seg) = oldest {
                entry.set_origin(Origin::new(seg, true));
            }
            tx.insert(db, dest, entry);
            tx.notify(STRING, "set", db, dest);
        } else if tx.remove(db, dest).is_some() {
            tx.log(db, &rec);
            tx.notify(GENERIC, "del", db, dest);
        }
        out.int(len as i64);
    });
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    // bitmaps
    cmd!("setbit", 4, W, KEY1, "bitmap", "2.2.0", "Sets or clears the bit at offset in the string value stored at key", setbit;
        acl: acl::BITMAP,
        complexity: "O(1)",
        args: "key:key offset:integer value:integer"),
    cmd!("getbit", 3, READONLY | FAST, KEY1, "bitmap", "2.2.0", "Returns the bit value at offset in the string value stored at key", getbit;
        acl: acl::BITMAP,
        complexity: "O(1)",
        args: "key:key offset:integer"),
    cmd!("bitcount", -2, READONLY, KEY1, "bitmap", "2.6.0", "Count set bits in a string", bitcount;
        acl: acl::BITMAP,
        complexity: "O(N)",
        args: "key:key index:block?(start:integer end:integer index_unit:oneof?^7.0.0(byte:BYTE bit:BIT))",
        history: &[("7.0.0", "Added the `BYTE|BIT` option.")]),
    cmd!("bitpos", -3, READONLY, KEY1, "bitmap", "2.8.7", "Find first bit set or clear in a string", bitpos;
        acl: acl::BITMAP,
        complexity: "O(N)",
        args: "key:key bit:integer index:block?(start:integer end_index:block?(end:integer index_unit:oneof?^7.0.0(byte:BYTE bit:BIT)))",
        history: &[("7.0.0", "Added the `BYTE|BIT` option.")]),
    cmd!("bitop", -4, W, (2, -1, 1), "bitmap", "2.6.0", "Perform bitwise operations between strings", bitop;
        acl: acl::BITMAP,
        complexity: "O(N)",
        keys: "OW,update index:2 range:0:1:0; RO,access index:3 range:-1:1:0",
        args: "operation:string destkey:key key:key#1*"),
];
