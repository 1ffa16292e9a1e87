//! Replies to Lua values and back, with Redis 7.0's rules.
//!
//! Redis → Lua (what redis.call returns): integer → number, bulk → string,
//! null bulk or null array → false, status → {ok=s}, error → {err=s},
//! array → table; after redis.setresp(3) also map → {map={k=v}},
//! set → {set={m=true}}, null → nil, boolean → boolean, double →
//! {double=n}, big number → {big_number=s}, verbatim → {verbatim_string=
//! {string=s, format=f}}.
//!
//! Lua → Redis (what the script returns): number → integer (truncated),
//! string → bulk, table → array up to its first nil, or error / status /
//! double / big number / verbatim / map / set when it has that single field,
//! false → null, true → 1 (RESP3 booleans after redis.setresp(3)), nil → null.

use crate::protocol::Out;
use mlua::{ffi, Lua, Table, Value};
use std::ffi::{c_char, c_int};

/// How deep a returned table may nest before the reply becomes Redis's
/// stack-limit error (a table that contains itself must end somewhere).
const MAX_DEPTH: usize = 1000;

/// `%.17g`, the format Redis gives Lua numbers passed to commands and
/// double replies.
pub fn fmt_g17(x: f64) -> String {
    let mut buf = [0u8; 64];
    // SAFETY: the buffer is 64 bytes and snprintf writes at most that many,
    // NUL included; "%.17g" takes exactly one double.
    let n = unsafe {
        libc::snprintf(
            buf.as_mut_ptr() as *mut libc::c_char,
            buf.len(),
            c"%.17g".as_ptr(),
            x,
        )
    };
    String::from_utf8_lossy(&buf[..(n.max(0) as usize).min(63)]).into_owned()
}

/// C's `(long long)` of a double as x86 computes it: out of range and NaN
/// give i64::MIN.
pub fn truncate(x: f64) -> i64 {
    // 2^63 as a double: the first value past i64::MAX.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if x.is_nan() || !(-LIMIT..LIMIT).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

// The conversions below use Lua's C API directly, each inside one protected
// call (`Lua::exec_raw`): mlua's own calls are protected one by one once a
// memory limit is set, and in Lua 5.1 each protection allocates a C closure,
// which made a three-command script cost twice Redis's CPU. Inside them, no
// Rust value that owns memory lives across a Lua call that may raise an
// error (a raised error unwinds past these frames with longjmp).

/// A byte slice of a string on the Lua stack; valid while it stays there.
unsafe fn stack_str<'a>(state: *mut ffi::lua_State, idx: c_int) -> &'a [u8] {
    let mut len = 0usize;
    let p = ffi::lua_tolstring(state, idx, &mut len);
    if p.is_null() {
        &[]
    } else {
        std::slice::from_raw_parts(p as *const u8, len)
    }
}

unsafe fn push_bytes(state: *mut ffi::lua_State, b: &[u8]) {
    ffi::lua_pushlstring(state, b.as_ptr() as *const c_char, b.len());
}

/// Pushes a sequence of strings (KEYS, ARGV).
unsafe fn push_strings(state: *mut ffi::lua_State, items: &[&[u8]]) {
    ffi::lua_createtable(state, items.len().min(i32::MAX as usize) as c_int, 0);
    for (i, item) in items.iter().enumerate() {
        push_bytes(state, item);
        ffi::lua_rawseti(state, -2, (i + 1) as ffi::lua_Integer);
    }
}

/// An EVAL script's KEYS and ARGV.
pub type ScriptGlobals<'a, 'b> = (&'a [&'b [u8]], &'a [&'b [u8]]);

/// Sets the globals KEYS and ARGV of an EVAL script (raw sets: the
/// sandbox's globals refuse ordinary writes).
///
/// The last script's tables are refilled when that script left them plain
/// sequences (no metatable, no other key): the next script cannot tell
/// them from new ones, and two tables fewer per script is a third less
/// garbage for the collector (vm.rs, collect_garbage).
///
/// Runs inside a protected call already made (call_and_reply's); leaves the
/// stack as it was.
unsafe fn set_globals(state: *mut ffi::lua_State, keys: &[&[u8]], argv: &[&[u8]]) {
    for (name, items) in [(&b"KEYS"[..], keys), (&b"ARGV"[..], argv)] {
        push_bytes(state, name);
        push_bytes(state, name);
        ffi::lua_rawget(state, ffi::LUA_GLOBALSINDEX);
        match plain_sequence(state) {
            Some(len) => refill(state, items, len),
            None => {
                ffi::lua_pop(state, 1);
                push_strings(state, items);
            }
        }
        ffi::lua_rawset(state, ffi::LUA_GLOBALSINDEX);
    }
}

/// The length of the value on top if it is a table without a metatable
/// whose keys are exactly 1..len.
unsafe fn plain_sequence(state: *mut ffi::lua_State) -> Option<usize> {
    if ffi::lua_type(state, -1) != ffi::LUA_TTABLE {
        return None;
    }
    if ffi::lua_getmetatable(state, -1) != 0 {
        ffi::lua_pop(state, 1);
        return None;
    }
    let len = ffi::lua_objlen(state, -1);
    let mut count = 0;
    ffi::lua_pushnil(state);
    while ffi::lua_next(state, -2) != 0 {
        ffi::lua_pop(state, 1);
        let key = ffi::lua_tonumber(state, -1);
        let in_range = ffi::lua_type(state, -1) == ffi::LUA_TNUMBER
            && key >= 1.0
            && key <= len as f64
            && key.trunc() == key;
        count += 1;
        if !in_range || count > len {
            ffi::lua_pop(state, 1);
            return None;
        }
    }
    // `len` distinct keys, each an integer in 1..=len: all of them.
    (count == len).then_some(len)
}

/// Sets the sequence on top of the stack to `items` (it had `len`).
unsafe fn refill(state: *mut ffi::lua_State, items: &[&[u8]], len: usize) {
    for (i, item) in items.iter().enumerate() {
        push_bytes(state, item);
        ffi::lua_rawseti(state, -2, (i + 1) as ffi::lua_Integer);
    }
    for i in items.len() + 1..=len {
        ffi::lua_pushnil(state);
        ffi::lua_rawseti(state, -2, i as ffi::lua_Integer);
    }
}

/// The `keys` and `args` tables a function (FCALL) is called with.
pub fn function_args(lua: &Lua, keys: &[&[u8]], argv: &[&[u8]]) -> mlua::Result<(Table, Table)> {
    // SAFETY: only Lua API calls on the stack exec_raw gives, which it
    // restores; the closure holds borrowed slices only.
    unsafe {
        lua.exec_raw((), |state| {
            push_strings(state, keys);
            push_strings(state, argv);
        })
    }
}

/// `{err = "CODE message"}` from "-CODE message" or "message" (which gets the
/// ERR code), with line breaks at the ends trimmed: how Redis shapes every
/// error a script sees.
pub fn error_table(lua: &Lua, msg: &[u8]) -> mlua::Result<Table> {
    // SAFETY: as in function_args.
    unsafe { lua.exec_raw((), |state| push_error_table(state, msg)) }
}

/// Pushes `{err = ...}` (see error_table). May raise a Lua memory error.
pub unsafe fn push_error_table(state: *mut ffi::lua_State, msg: &[u8]) {
    let (code, text): (&[u8], &[u8]) = match msg.strip_prefix(b"-") {
        Some(rest) => match rest.iter().position(|&c| c == b' ') {
            Some(sp) => (&rest[..sp], &rest[sp + 1..]),
            None => (b"ERR", rest),
        },
        None => (b"ERR", msg),
    };
    let is_break = |c: &u8| *c == b'\r' || *c == b'\n';
    let start = text.iter().position(|c| !is_break(c)).unwrap_or(text.len());
    let end = text
        .iter()
        .rposition(|c| !is_break(c))
        .map_or(start, |e| e + 1);
    ffi::lua_createtable(state, 0, 1);
    push_bytes(state, b"err");
    push_bytes(state, code);
    push_bytes(state, b" ");
    push_bytes(state, &text[start..end.max(start)]);
    ffi::lua_concat(state, 3);
    ffi::lua_rawset(state, -3);
}

/// Pushes the Lua value of one reply in `buf` (bytes our own reply writer
/// made), or an error table if they are not a whole reply. May raise a Lua
/// memory error.
pub unsafe fn push_reply_or_error(state: *mut ffi::lua_State, buf: &[u8]) {
    let base = ffi::lua_gettop(state);
    let mut at = 0;
    if !push_reply(state, buf, &mut at) {
        ffi::lua_settop(state, base);
        push_error_table(state, b"-ERR unexpected reply from command");
    }
}

/// Pushes the Lua value of the reply at `*at`; false (with the stack left
/// for the caller to reset) when the bytes are not a whole reply.
unsafe fn push_reply(state: *mut ffi::lua_State, buf: &[u8], at: &mut usize) -> bool {
    if ffi::lua_checkstack(state, 4) == 0 {
        return false;
    }
    let Some(line) = read_line(buf, at) else {
        return false;
    };
    let (kind, rest) = (line[0], &line[1..]);
    match kind {
        b':' => match parse_i64(rest) {
            Some(n) => ffi::lua_pushnumber(state, n as f64),
            None => return false,
        },
        b'$' => match parse_i64(rest) {
            Some(n) if n < 0 => ffi::lua_pushboolean(state, 0),
            Some(n) => match read_bulk(buf, at, n as usize) {
                Some(b) => push_bytes(state, b),
                None => return false,
            },
            None => return false,
        },
        b'+' => {
            ffi::lua_createtable(state, 0, 1);
            push_bytes(state, b"ok");
            push_bytes(state, rest);
            ffi::lua_rawset(state, -3);
        }
        b'-' => push_error_table(state, line),
        b'*' => match parse_i64(rest) {
            Some(n) if n < 0 => ffi::lua_pushboolean(state, 0),
            Some(n) => {
                ffi::lua_createtable(state, n.min(1 << 20) as c_int, 0);
                for i in 1..=n {
                    if !push_reply(state, buf, at) {
                        return false;
                    }
                    ffi::lua_rawseti(state, -2, i as ffi::lua_Integer);
                }
            }
            None => return false,
        },
        b'%' | b'~' => {
            let Some(n) = parse_i64(rest) else {
                return false;
            };
            ffi::lua_createtable(state, 0, 1);
            push_bytes(state, if kind == b'%' { b"map" } else { b"set" });
            ffi::lua_createtable(state, 0, n.clamp(0, 1 << 20) as c_int);
            for _ in 0..n {
                if !push_reply(state, buf, at) {
                    return false;
                }
                if kind == b'%' {
                    if !push_reply(state, buf, at) {
                        return false;
                    }
                } else {
                    ffi::lua_pushboolean(state, 1);
                }
                ffi::lua_rawset(state, -3);
            }
            ffi::lua_rawset(state, -3);
        }
        b'|' => {
            // Attributes are not shown to scripts (as in Redis): their pairs
            // are read past, and the reply they precede is the value.
            let Some(n) = parse_i64(rest) else {
                return false;
            };
            for _ in 0..n.max(0).saturating_mul(2) {
                if !push_reply(state, buf, at) {
                    return false;
                }
                ffi::lua_pop(state, 1);
            }
            return push_reply(state, buf, at);
        }
        b'_' => ffi::lua_pushnil(state),
        b'#' => ffi::lua_pushboolean(state, (rest == b"t") as c_int),
        b',' => {
            let d = match std::str::from_utf8(rest).unwrap_or("nan") {
                "inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                t => t.parse().unwrap_or(f64::NAN),
            };
            ffi::lua_createtable(state, 0, 1);
            push_bytes(state, b"double");
            ffi::lua_pushnumber(state, d);
            ffi::lua_rawset(state, -3);
        }
        b'(' => {
            ffi::lua_createtable(state, 0, 1);
            push_bytes(state, b"big_number");
            push_bytes(state, rest);
            ffi::lua_rawset(state, -3);
        }
        b'=' => {
            let Some(body) = parse_i64(rest).and_then(|n| read_bulk(buf, at, n as usize)) else {
                return false;
            };
            let (format, text) = if body.len() >= 4 {
                (&body[..3], &body[4..])
            } else {
                (&b"txt"[..], body)
            };
            ffi::lua_createtable(state, 0, 1);
            push_bytes(state, b"verbatim_string");
            ffi::lua_createtable(state, 0, 2);
            push_bytes(state, b"string");
            push_bytes(state, text);
            ffi::lua_rawset(state, -3);
            push_bytes(state, b"format");
            push_bytes(state, format);
            ffi::lua_rawset(state, -3);
            ffi::lua_rawset(state, -3);
        }
        _ => return false,
    }
    true
}

fn read_line<'a>(buf: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
    let start = *at;
    let end = buf
        .get(start..)?
        .windows(2)
        .position(|w| w == b"\r\n")
        .map(|p| start + p)
        .filter(|&e| e > start)?;
    *at = end + 2;
    Some(&buf[start..end])
}

fn read_bulk<'a>(buf: &'a [u8], at: &mut usize, n: usize) -> Option<&'a [u8]> {
    let start = *at;
    if buf.len() < start.checked_add(n)?.checked_add(2)? {
        return None;
    }
    *at = start + n + 2;
    Some(&buf[start..start + n])
}

fn parse_i64(digits: &[u8]) -> Option<i64> {
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// Calls the function first in `callee` with the rest as its arguments: a
/// driver (vm.rs) that returns `(ok, value)`. When ok, writes the value as
/// the reply and returns None; else returns the
/// error value. One protected call for both: in Lua 5.1 each protection
/// allocates a C closure, and mlua's own call then conversion took three.
/// `script_resp` is read once the script has run: it is the protocol the
/// script chose with redis.setresp (it decides what a Lua boolean means);
/// `out.proto` is the caller's.
///
/// `globals`, when given, are an EVAL script's KEYS and ARGV, set (as
/// set_globals does) inside the same protected call: a second one
/// per script was 80 of the ~160 bytes of garbage every script leaves.
pub fn call_and_reply(
    lua: &Lua,
    out: &mut Out,
    script_resp: &std::cell::Cell<u8>,
    globals: Option<ScriptGlobals>,
    callee: impl mlua::IntoLuaMulti,
) -> mlua::Result<Option<Value>> {
    let mark = out.buf.len();
    let mut ran = false;
    // SAFETY: as in function_args; `out` and `ran` are borrowed from the
    // caller, and nothing owned lives across the Lua calls.
    let result = unsafe {
        lua.exec_raw::<Option<Value>>(callee, |state| {
            if let Some((keys, argv)) = globals {
                set_globals(state, keys, argv);
            }
            ffi::lua_call(state, ffi::lua_gettop(state) - 1, 2);
            ran = true;
            if ffi::lua_toboolean(state, -2) != 0 {
                write_top(state, out, script_resp.get(), 0);
                ffi::lua_settop(state, 0);
            } else {
                ffi::lua_remove(state, -2);
            }
        })
    };
    match result {
        Err(e) if ran => {
            // The conversion failed (the Lua stack could not grow).
            out.buf.truncate(mark);
            out.error(&format!("ERR {}", super::api::error_text(&e)));
            Ok(None)
        }
        other => other,
    }
}

/// Writes the value on top of the stack, leaving the stack as it was.
unsafe fn write_top(state: *mut ffi::lua_State, out: &mut Out, script_resp: u8, depth: usize) {
    match ffi::lua_type(state, -1) {
        ffi::LUA_TSTRING => out.bulk(stack_str(state, -1)),
        ffi::LUA_TBOOLEAN => {
            let b = ffi::lua_toboolean(state, -1) != 0;
            if script_resp == 2 {
                if b {
                    out.int(1)
                } else {
                    out.null()
                }
            } else {
                out.boolean(b)
            }
        }
        ffi::LUA_TNUMBER => out.int(truncate(ffi::lua_tonumber(state, -1))),
        ffi::LUA_TTABLE => {
            if depth >= MAX_DEPTH || ffi::lua_checkstack(state, 4) == 0 {
                return out.error("ERR reached lua stack limit");
            }
            write_table(state, out, script_resp, depth)
        }
        _ => out.null(),
    }
}

/// Pushes field `name` of the table on top; returns its Lua type.
unsafe fn field(state: *mut ffi::lua_State, name: &[u8]) -> c_int {
    push_bytes(state, name);
    ffi::lua_rawget(state, -2);
    ffi::lua_type(state, -1)
}

/// Counts the entries of the table at -1 (lua_next never allocates).
unsafe fn count_pairs(state: *mut ffi::lua_State) -> usize {
    let mut n = 0;
    ffi::lua_pushnil(state);
    while ffi::lua_next(state, -2) != 0 {
        ffi::lua_pop(state, 1);
        n += 1;
    }
    n
}

/// Whether the table on top has no key past its border `#t`: then it has
/// none of the named fields (err, ok, double...) and is written as an
/// array. Looking the seven names up costs more than the reply (each name
/// is hashed, and made anew when no live string has it); lua_next
/// allocates nothing, and `#t`, when not 0, is a key it accepts (t[#t] is
/// not nil).
unsafe fn sequence_only(state: *mut ffi::lua_State) -> bool {
    let border = ffi::lua_objlen(state, -1);
    if border == 0 {
        ffi::lua_pushnil(state);
    } else {
        ffi::lua_pushnumber(state, border as ffi::lua_Number);
    }
    if ffi::lua_next(state, -2) != 0 {
        ffi::lua_pop(state, 2);
        return false;
    }
    true
}

unsafe fn write_table(state: *mut ffi::lua_State, out: &mut Out, script_resp: u8, depth: usize) {
    if !sequence_only(state) {
        write_typed_table(state, out, script_resp, depth)
    } else {
        write_array(state, out, script_resp, depth)
    }
}

/// A table that may be a typed reply ({err = ...}, {ok = ...}, ...).
unsafe fn write_typed_table(
    state: *mut ffi::lua_State,
    out: &mut Out,
    script_resp: u8,
    depth: usize,
) {
    if field(state, b"err") == ffi::LUA_TSTRING {
        let e = stack_str(state, -1);
        let mut line = Vec::with_capacity(e.len() + 1);
        line.push(b'-');
        line.extend_from_slice(e);
        ffi::lua_pop(state, 1);
        let counted = field(state, IGNORE_STATS.as_bytes()) == ffi::LUA_TBOOLEAN
            && ffi::lua_toboolean(state, -1) != 0;
        error_line_of(out, &line, counted);
        drop(line);
        return ffi::lua_pop(state, 1);
    }
    ffi::lua_pop(state, 1);
    if field(state, b"ok") == ffi::LUA_TSTRING {
        let text = String::from_utf8_lossy(stack_str(state, -1)).replace(['\r', '\n'], " ");
        out.simple(&text);
        drop(text);
        return ffi::lua_pop(state, 1);
    }
    ffi::lua_pop(state, 1);
    if field(state, b"double") == ffi::LUA_TNUMBER {
        double(out, ffi::lua_tonumber(state, -1));
        return ffi::lua_pop(state, 1);
    }
    ffi::lua_pop(state, 1);
    if field(state, b"big_number") == ffi::LUA_TSTRING {
        let text: Vec<u8> = stack_str(state, -1)
            .iter()
            .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c })
            .collect();
        out.bignum(&text);
        drop(text);
        return ffi::lua_pop(state, 1);
    }
    ffi::lua_pop(state, 1);
    if field(state, b"verbatim_string") == ffi::LUA_TTABLE {
        let format_type = field(state, b"format");
        // Read from the verbatim table, under the format just pushed (not
        // from the format: a raw get on a string crashed the server).
        push_bytes(state, b"string");
        ffi::lua_rawget(state, -3);
        let string_type = ffi::lua_type(state, -1);
        if format_type == ffi::LUA_TSTRING && string_type == ffi::LUA_TSTRING {
            out.verbatim_as(stack_str(state, -2), stack_str(state, -1));
            return ffi::lua_pop(state, 3);
        }
        // Only the named fields were pushed: "format" sits under "string".
        ffi::lua_pop(state, 2);
    }
    ffi::lua_pop(state, 1);
    for (name, map) in [(&b"map"[..], true), (&b"set"[..], false)] {
        if field(state, name) == ffi::LUA_TTABLE {
            let n = count_pairs(state);
            if map {
                out.map(n);
            } else {
                out.set(n);
            }
            ffi::lua_pushnil(state);
            while ffi::lua_next(state, -2) != 0 {
                // Key at -2, value at -1; write the key from a copy so that
                // lua_next gets its key back untouched.
                ffi::lua_pushvalue(state, -2);
                write_top(state, out, script_resp, depth + 1);
                ffi::lua_pop(state, 1);
                if map {
                    write_top(state, out, script_resp, depth + 1);
                }
                ffi::lua_pop(state, 1);
            }
            return ffi::lua_pop(state, 1);
        }
        ffi::lua_pop(state, 1);
    }
    write_array(state, out, script_resp, depth)
}

/// The table on top as an array: its items up to the first nil.
unsafe fn write_array(state: *mut ffi::lua_State, out: &mut Out, script_resp: u8, depth: usize) {
    let mut n = 0;
    loop {
        ffi::lua_rawgeti(state, -1, n as ffi::lua_Integer + 1);
        let nil = ffi::lua_type(state, -1) == ffi::LUA_TNIL;
        ffi::lua_pop(state, 1);
        if nil {
            break;
        }
        n += 1;
    }
    out.array(n);
    for i in 1..=n {
        ffi::lua_rawgeti(state, -1, i as ffi::lua_Integer);
        write_top(state, out, script_resp, depth + 1);
        ffi::lua_pop(state, 1);
    }
}

fn double(out: &mut Out, d: f64) {
    let text = if d.is_infinite() {
        if d > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        fmt_g17(d)
    };
    if out.resp3() {
        out.buf.extend_from_slice(b",");
        out.buf.extend_from_slice(text.as_bytes());
        out.buf.extend_from_slice(b"\r\n");
    } else {
        out.bulk(text.as_bytes());
    }
}

/// An error line from a message that already starts with `-`: trailing line
/// breaks dropped, inner ones turned into spaces.
pub fn error_line(out: &mut Out, msg: &[u8]) {
    error_line_of(out, msg, false);
}

/// `error_line`; `counted`: the error came from a command the script ran,
/// which counted it in errorstats already (its error table carries
/// IGNORE_STATS).
pub fn error_line_of(out: &mut Out, msg: &[u8], counted: bool) {
    let mut end = msg.len();
    while end > 1 && (msg[end - 1] == b'\r' || msg[end - 1] == b'\n') {
        end -= 1;
    }
    if counted {
        out.error_counted_before(&msg[1..end]);
    } else {
        out.error_bytes(&msg[1..end]);
    }
}

/// The field Redis sets in the error table of a command's error reply
/// inside a script: that error is in errorstats already.
pub const IGNORE_STATS: &str = "ignore_error_stats_update";

/// Marks the error table on top of the stack as counted (IGNORE_STATS).
/// May raise a Lua memory error.
pub unsafe fn mark_counted(state: *mut ffi::lua_State) {
    push_bytes(state, IGNORE_STATS.as_bytes());
    ffi::lua_pushboolean(state, 1);
    ffi::lua_rawset(state, -3);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g17_and_truncation() {
        assert_eq!(fmt_g17(3.0), "3");
        assert_eq!(fmt_g17(0.1), "0.10000000000000001");
        assert_eq!(fmt_g17(1e20), "1e+20");
        assert_eq!(truncate(3.9), 3);
        assert_eq!(truncate(-3.9), -3);
        assert_eq!(truncate(f64::NAN), i64::MIN);
    }
}
