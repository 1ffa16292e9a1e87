//! BITFIELD and BITFIELD_RO: integer fields of 1 to 64 bits at any bit
//! offset of a string, read, set and incremented with Redis 7.0's overflow
//! rules, argument checks and propagation (the command as sent, when it
//! changed the string).

use super::args::*;
use super::bitops::{bit_offset, find_for_write, word_is, write_bytes, Found};
use super::strings::string_of;
use super::Ctx;
use crate::protocol::Args;
use blinkdb_engine::{
    bitmap::{self, Overflow},
    event::STRING,
};
use hashbrown::HashMap;
use std::borrow::Cow;

const ERR_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";
const ERR_OVERFLOW_TYPE: &str = "ERR Invalid OVERFLOW type specified";
const ERR_RO: &str = "ERR BITFIELD_RO only supports the GET subcommand";

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Get,
    Set,
    IncrBy,
}

struct Op {
    kind: Kind,
    offset: u64,
    /// SET's value or INCRBY's increment.
    value: i64,
    overflow: Overflow,
    bits: u32,
    signed: bool,
}

/// `i1`..`i64` or `u1`..`u63`: (signed, bits). Redis reads the width as a
/// C string, so it ends at a NUL byte.
fn field_type(arg: &[u8]) -> Option<(bool, u32)> {
    let signed = match arg.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return None,
    };
    let width = &arg[1..];
    let width = &width[..width.iter().position(|&c| c == 0).unwrap_or(width.len())];
    let bits = parse_i64(width)?;
    let max = if signed { 64 } else { 63 };
    (1..=max).contains(&bits).then_some((signed, bits as u32))
}

/// The operations of a BITFIELD command and the highest bit a SET or INCRBY
/// reaches (None: only GETs), or the error reply.
fn parse(ctx: &mut Ctx, args: &Args) -> Result<(Vec<Op>, Option<u64>), &'static str> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut highest: Option<u64> = None;
    let mut j = 2;
    while j < args.len() {
        let more = args.len() - j - 1;
        let sub = args[j];
        let kind = if word_is(sub, "get") && more >= 2 {
            Kind::Get
        } else if word_is(sub, "set") && more >= 3 {
            Kind::Set
        } else if word_is(sub, "incrby") && more >= 3 {
            Kind::IncrBy
        } else if word_is(sub, "overflow") && more >= 1 {
            let name = args[j + 1];
            overflow = if word_is(name, "wrap") {
                Overflow::Wrap
            } else if word_is(name, "sat") {
                Overflow::Sat
            } else if word_is(name, "fail") {
                Overflow::Fail
            } else {
                return Err(ERR_OVERFLOW_TYPE);
            };
            j += 2;
            continue;
        } else {
            return Err(ERR_SYNTAX);
        };
        let (signed, bits) = field_type(args[j + 1]).ok_or(ERR_TYPE)?;
        let offset = bit_offset(ctx, args[j + 2], bits)?;
        let mut value = 0;
        if kind != Kind::Get {
            let last = offset + bits as u64 - 1;
            highest = Some(highest.map_or(last, |h| h.max(last)));
            value = parse_i64(args[j + 3]).ok_or(ERR_NOT_INT)?;
        }
        ops.push(Op {
            kind,
            offset,
            value,
            overflow,
            bits,
            signed,
        });
        j += if kind == Kind::Get { 3 } else { 4 };
    }
    Ok((ops, highest))
}

/// The string being changed: its bytes as found, zero-padded to `len`, with
/// the bytes changed so far on top.
struct Bitmap<'a> {
    base: &'a [u8],
    len: usize,
    changed: HashMap<usize, u8>,
}

/// A field spans at most 9 bytes (7 bits of offset into the first, 64 bits).
const WINDOW: usize = 9;

impl Bitmap<'_> {
    fn byte(&self, i: usize) -> u8 {
        match self.changed.get(&i) {
            Some(&b) => b,
            None => self.base.get(i).copied().unwrap_or(0),
        }
    }

    /// The bytes holding `op`'s field, and the field's bit offset in them.
    fn window(&self, op: &Op) -> ([u8; WINDOW], u64) {
        let first = op.offset >> 3;
        let mut w = [0u8; WINDOW];
        for (k, b) in w.iter_mut().enumerate() {
            let i = first.saturating_add(k as u64);
            if i < self.len as u64 {
                *b = self.byte(i as usize);
            }
        }
        (w, op.offset & 7)
    }

    fn store(&mut self, op: &Op, w: &[u8; WINDOW]) {
        let first = (op.offset >> 3) as usize;
        let end = (first + WINDOW).min(self.len);
        for (i, &b) in (first..end).zip(w.iter()) {
            self.changed.insert(i, b);
        }
    }

    fn get(&self, op: &Op) -> i64 {
        let (w, at) = self.window(op);
        if op.signed {
            bitmap::get_signed(&w, at, op.bits)
        } else {
            bitmap::get_unsigned(&w, at, op.bits) as i64
        }
    }

    /// Runs a SET or INCRBY: its reply (None: refused by OVERFLOW FAIL) and
    /// whether it changed the field.
    fn write(&mut self, op: &Op) -> (Option<i64>, bool) {
        let (mut w, at) = self.window(op);
        let (old, new, reply) = if op.signed {
            let old = bitmap::get_signed(&w, at, op.bits);
            let (start, incr) = match op.kind {
                Kind::IncrBy => (old, op.value),
                _ => (op.value, 0),
            };
            let Some(new) = bitmap::add_signed(start, incr, op.bits, op.overflow).1 else {
                return (None, false);
            };
            bitmap::set_unsigned(&mut w, at, op.bits, new as u64);
            let reply = if op.kind == Kind::IncrBy { new } else { old };
            (old as u64, new as u64, reply)
        } else {
            let old = bitmap::get_unsigned(&w, at, op.bits);
            let (start, incr) = match op.kind {
                Kind::IncrBy => (old, op.value),
                _ => (op.value as u64, 0),
            };
            let Some(new) = bitmap::add_unsigned(start, incr, op.bits, op.overflow).1 else {
                return (None, false);
            };
            bitmap::set_unsigned(&mut w, at, op.bits, new);
            let reply = if op.kind == Kind::IncrBy { new } else { old };
            (old, new, reply as i64)
        };
        self.store(op, &w);
        (Some(reply), old != new)
    }
}

pub fn bitfield(ctx: &mut Ctx, args: &Args) {
    run(ctx, args, false);
}

pub fn bitfield_ro(ctx: &mut Ctx, args: &Args) {
    run(ctx, args, true);
}

fn run(ctx: &mut Ctx, args: &Args, read_only: bool) {
    let (ops, highest) = match parse(ctx, args) {
        Ok(p) => p,
        Err(e) => return ctx.out.error(e),
    };
    match highest {
        None => get_only(ctx, args[1], &ops),
        Some(_) if read_only => ctx.out.error(ERR_RO),
        Some(highest) => write(ctx, args, &ops, highest),
    }
}

/// Only GETs: a read, which creates nothing.
fn get_only(ctx: &mut Ctx, key: &[u8], ops: &[Op]) {
    let out = &mut *ctx.out;
    let engine = &ctx.shared.engine;
    engine.read(ctx.client.db, key, |e| {
        let bytes = match e {
            None => Cow::Borrowed(&[][..]),
            Some(e) if !e.value().is_string() => return out.error(ERR_WRONGTYPE),
            // Nothing to read: a value kept in the log is not read back.
            Some(_) if ops.is_empty() => Cow::Borrowed(&[][..]),
            Some(e) => match string_of(engine, e) {
                Ok(s) => s,
                Err(err) => return out.error(&err),
            },
        };
        let map = Bitmap {
            base: &bytes,
            len: bytes.len(),
            changed: HashMap::new(),
        };
        out.array(ops.len());
        for op in ops {
            out.int(map.get(op));
        }
    });
}

fn write(ctx: &mut Ctx, args: &Args, ops: &[Op], highest: u64) {
    let key = args[1];
    let engine = &ctx.shared.engine;
    ctx.write1(key, |tx, db, out| {
        let target = match find_for_write(tx, engine, db, key) {
            Ok(t) => t,
            Err(e) => return out.error(&e),
        };
        let old_len = target.bytes().len();
        let Ok(reach) = usize::try_from((highest >> 3) + 1) else {
            return out.error(ERR_TOO_BIG);
        };
        let mut map = Bitmap {
            base: target.bytes(),
            len: old_len.max(reach),
            changed: HashMap::new(),
        };
        let created = matches!(target, super::bitops::Target::Absent);
        let dirty = created || map.len != old_len;
        let mut replies = Vec::with_capacity(ops.len());
        let mut changes = 0;
        for op in ops {
            if op.kind == Kind::Get {
                replies.push(Some(map.get(op)));
                continue;
            }
            let (reply, changed) = map.write(op);
            if reply.is_some() && (dirty || changed) {
                changes += 1;
            }
            replies.push(reply);
        }
        let len = map.len;
        let patch: Vec<(usize, u8)> = map.changed.into_iter().collect();
        let found: Found = target.into_found();
        // Redis creates or pads the string even when every write failed
        // (OVERFLOW FAIL), then neither signals the key (WATCH, tracking) nor
        // propagates the command. The record is logged here anyway, so that
        // a restart rebuilds what memory holds.
        if changes > 0 || dirty {
            let written = if changes > 0 {
                write_bytes(tx, db, key, found, len, &patch)
            } else {
                tx.unsignaled(|tx| write_bytes(tx, db, key, found, len, &patch))
            };
            if let Err(e) = written {
                return out.error(e);
            }
            let mut rec: Vec<&[u8]> = Vec::with_capacity(args.len());
            rec.push(b"BITFIELD");
            rec.extend(args[1..].iter().map(|a| &a[..]));
            tx.log(db, &rec);
        }
        if changes > 0 {
            tx.notify(STRING, "setbit", db, key);
        }
        out.array(replies.len());
        for r in replies {
            match r {
                Some(v) => out.int(v),
                None => out.null(),
            }
        }
    });
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("bitfield", -2, W, KEY1, "bitmap", "3.2.0", "Perform arbitrary bitfield integer operations on strings", bitfield;
        acl: acl::BITMAP,
        complexity: "O(1) for each subcommand specified",
        keys: "RW,access,update,variable_flags index:1 range:0:1:0 | This command allows both access and modification of the key",
        args: "key:key operation:oneof?*(encoding_offset:block=GET(encoding:string offset:integer) write:block(wrap_sat_fail:oneof=OVERFLOW?(wrap:WRAP sat:SAT fail:FAIL) write_operation:oneof(encoding_offset_value:block=SET(encoding:string offset:integer value:integer) encoding_offset_increment:block=INCRBY(encoding:string offset:integer increment:integer))))"),
    cmd!("bitfield_ro", -2, READONLY | FAST, KEY1, "bitmap", "6.0.0", "Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD", bitfield_ro;
        acl: acl::BITMAP,
        complexity: "O(1) for each subcommand specified",
        args: "key:key encoding_offset:block=GET?*+(encoding:string offset:integer)"),
];
