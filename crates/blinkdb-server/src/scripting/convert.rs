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
use mlua::{Lua, Table, Value};

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

/// Reads one reply from `buf` at `*at` (bytes our own reply writer made) and
/// builds its Lua value.
pub fn reply_to_lua(lua: &Lua, buf: &[u8], at: &mut usize) -> mlua::Result<Value> {
    let line = read_line(buf, at)?;
    let (kind, rest) = (line[0], &line[1..]);
    Ok(match kind {
        b':' => Value::Number(parse_i64(rest)? as f64),
        b'$' => {
            let n = parse_i64(rest)?;
            if n < 0 {
                return Ok(Value::Boolean(false));
            }
            Value::String(lua.create_string(read_bulk(buf, at, n as usize)?)?)
        }
        b'+' => single(lua, "ok", Value::String(lua.create_string(rest)?))?,
        b'-' => Value::Table(super::api::error_table(lua, line)?),
        b'*' => {
            let n = parse_i64(rest)?;
            if n < 0 {
                return Ok(Value::Boolean(false));
            }
            let t = lua.create_table_with_capacity(n as usize, 0)?;
            for i in 1..=n {
                t.raw_seti(i as usize, reply_to_lua(lua, buf, at)?)?;
            }
            Value::Table(t)
        }
        b'%' => {
            let n = parse_i64(rest)?;
            let map = lua.create_table_with_capacity(0, n as usize)?;
            for _ in 0..n {
                let k = reply_to_lua(lua, buf, at)?;
                let v = reply_to_lua(lua, buf, at)?;
                map.raw_set(k, v)?;
            }
            single(lua, "map", Value::Table(map))?
        }
        b'~' => {
            let n = parse_i64(rest)?;
            let set = lua.create_table_with_capacity(0, n as usize)?;
            for _ in 0..n {
                set.raw_set(reply_to_lua(lua, buf, at)?, true)?;
            }
            single(lua, "set", Value::Table(set))?
        }
        b'_' => Value::Nil,
        b'#' => Value::Boolean(rest == b"t"),
        b',' => {
            let text = std::str::from_utf8(rest).unwrap_or("nan");
            let d = match text {
                "inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                t => t.parse().unwrap_or(f64::NAN),
            };
            single(lua, "double", Value::Number(d))?
        }
        b'(' => single(lua, "big_number", Value::String(lua.create_string(rest)?))?,
        b'=' => {
            let n = parse_i64(rest)? as usize;
            let body = read_bulk(buf, at, n)?;
            let (format, text) = if body.len() >= 4 {
                (&body[..3], &body[4..])
            } else {
                (&b"txt"[..], body)
            };
            let v = lua.create_table()?;
            v.raw_set("string", lua.create_string(text)?)?;
            v.raw_set("format", lua.create_string(format)?)?;
            single(lua, "verbatim_string", Value::Table(v))?
        }
        _ => return Err(mlua::Error::runtime("unexpected reply from command")),
    })
}

fn single(lua: &Lua, field: &str, v: Value) -> mlua::Result<Value> {
    let t = lua.create_table_with_capacity(0, 1)?;
    t.raw_set(field, v)?;
    Ok(Value::Table(t))
}

fn read_line<'a>(buf: &'a [u8], at: &mut usize) -> mlua::Result<&'a [u8]> {
    let start = *at;
    let end = buf[start..]
        .windows(2)
        .position(|w| w == b"\r\n")
        .map(|p| start + p)
        .filter(|&e| e > start)
        .ok_or_else(|| mlua::Error::runtime("truncated reply from command"))?;
    *at = end + 2;
    Ok(&buf[start..end])
}

fn read_bulk<'a>(buf: &'a [u8], at: &mut usize, n: usize) -> mlua::Result<&'a [u8]> {
    let start = *at;
    if buf.len() < start + n + 2 {
        return Err(mlua::Error::runtime("truncated reply from command"));
    }
    *at = start + n + 2;
    Ok(&buf[start..start + n])
}

fn parse_i64(digits: &[u8]) -> mlua::Result<i64> {
    std::str::from_utf8(digits)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| mlua::Error::runtime("bad number in reply from command"))
}

/// Writes the script's result as the reply to the caller. `script_resp` is
/// the protocol the script chose with redis.setresp (it decides what a Lua
/// boolean means); `out.proto` is the caller's.
pub fn lua_to_reply(out: &mut Out, v: &Value, script_resp: u8) {
    write_value(out, v, script_resp, 0);
}

fn write_value(out: &mut Out, v: &Value, script_resp: u8, depth: usize) {
    match v {
        Value::String(s) => out.bulk(&s.as_bytes()),
        Value::Boolean(b) => {
            if script_resp == 2 {
                if *b {
                    out.int(1)
                } else {
                    out.null()
                }
            } else {
                out.boolean(*b)
            }
        }
        Value::Integer(i) => out.int(*i),
        Value::Number(n) => out.int(truncate(*n)),
        Value::Table(t) => {
            if depth >= MAX_DEPTH {
                return out.error("ERR reached lua stack limit");
            }
            write_table(out, t, script_resp, depth)
        }
        _ => out.null(),
    }
}

fn write_table(out: &mut Out, t: &Table, script_resp: u8, depth: usize) {
    if let Ok(Value::String(e)) = t.raw_get::<Value>("err") {
        let mut line = b"-".to_vec();
        line.extend_from_slice(&e.as_bytes());
        return error_line(out, &line);
    }
    if let Ok(Value::String(s)) = t.raw_get::<Value>("ok") {
        let text = String::from_utf8_lossy(&s.as_bytes()).replace(['\r', '\n'], " ");
        return out.simple(&text);
    }
    if let Ok(Value::Number(d)) = t.raw_get::<Value>("double") {
        return double(out, d);
    }
    if let Ok(Value::Integer(d)) = t.raw_get::<Value>("double") {
        return double(out, d as f64);
    }
    if let Ok(Value::String(s)) = t.raw_get::<Value>("big_number") {
        let text: Vec<u8> = s
            .as_bytes()
            .iter()
            .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c })
            .collect();
        return if out.resp3() {
            out.buf.extend_from_slice(b"(");
            out.buf.extend_from_slice(&text);
            out.buf.extend_from_slice(b"\r\n");
        } else {
            out.bulk(&text)
        };
    }
    if let Ok(Value::Table(v)) = t.raw_get::<Value>("verbatim_string") {
        if let (Ok(Value::String(format)), Ok(Value::String(text))) =
            (v.raw_get::<Value>("format"), v.raw_get::<Value>("string"))
        {
            let text = text.as_bytes();
            return if out.resp3() {
                let format = format.as_bytes();
                let mut f = [b' '; 3];
                for (d, s) in f.iter_mut().zip(format.iter()) {
                    *d = *s;
                }
                out.buf
                    .extend_from_slice(format!("={}\r\n", text.len() + 4).as_bytes());
                out.buf.extend_from_slice(&f);
                out.buf.extend_from_slice(b":");
                out.buf.extend_from_slice(&text);
                out.buf.extend_from_slice(b"\r\n");
            } else {
                out.bulk(&text)
            };
        }
    }
    if let Ok(Value::Table(map)) = t.raw_get::<Value>("map") {
        let pairs: Vec<(Value, Value)> = map.pairs::<Value, Value>().flatten().collect();
        out.map(pairs.len());
        for (k, v) in &pairs {
            write_value(out, k, script_resp, depth + 1);
            write_value(out, v, script_resp, depth + 1);
        }
        return;
    }
    if let Ok(Value::Table(set)) = t.raw_get::<Value>("set") {
        let members: Vec<Value> = set
            .pairs::<Value, Value>()
            .flatten()
            .map(|(k, _)| k)
            .collect();
        out.set(members.len());
        for m in &members {
            write_value(out, m, script_resp, depth + 1);
        }
        return;
    }
    let mut items = Vec::new();
    let mut i = 1;
    loop {
        match t.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => items.push(v),
        }
        i += 1;
    }
    out.array(items.len());
    for v in &items {
        write_value(out, v, script_resp, depth + 1);
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
    let mut end = msg.len();
    while end > 1 && (msg[end - 1] == b'\r' || msg[end - 1] == b'\n') {
        end -= 1;
    }
    out.error_bytes(&msg[1..end]);
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
