//! `cjson`: JSON encode and decode with lua-cjson's rules as Redis ships
//! it (arrays are tables with only positive integer keys, `/` is escaped,
//! numbers use 14 significant digits, `cjson.null` stands for null).
//! Decoding parses with serde_json.

use mlua::{LightUserData, Lua, Result, Table, Value};

struct Config {
    encode_max_depth: usize,
    decode_max_depth: usize,
    encode_invalid_numbers: bool,
    decode_invalid_numbers: bool,
    number_precision: usize,
    keep_buffer: bool,
    sparse_ratio: usize,
    sparse_safe: usize,
    sparse_convert: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            encode_invalid_numbers: false,
            decode_invalid_numbers: true,
            number_precision: 14,
            keep_buffer: true,
            sparse_ratio: 2,
            sparse_safe: 10,
            sparse_convert: false,
        }
    }
}

fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

fn cfg<R>(lua: &Lua, f: impl FnOnce(&mut Config) -> R) -> R {
    if lua.app_data_ref::<Config>().is_none() {
        lua.set_app_data(Config::default());
    }
    let mut c = lua.app_data_mut::<Config>().expect("set above");
    f(&mut c)
}

fn number_text(n: f64, precision: usize) -> String {
    let mut buf = [0u8; 64];
    let fmt = format!("%.{precision}g\0");
    // SAFETY: a 64-byte buffer, snprintf bounded by its length, one double.
    let len = unsafe {
        libc::snprintf(
            buf.as_mut_ptr() as *mut libc::c_char,
            buf.len(),
            fmt.as_ptr() as *const libc::c_char,
            n,
        )
    };
    String::from_utf8_lossy(&buf[..(len.max(0) as usize).min(63)]).into_owned()
}

fn encode_string(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            c if c < 0x20 || c == 0x7f => out.extend_from_slice(format!("\\u{c:04x}").as_bytes()),
            c => out.push(c),
        }
    }
    out.push(b'"');
}

fn encode_number(out: &mut Vec<u8>, n: f64, c: &Config) -> Result<()> {
    if !n.is_finite() && !c.encode_invalid_numbers {
        return Err(mlua::Error::runtime(
            "Cannot serialise number: must not be NaN or Inf",
        ));
    }
    let text = if n.is_nan() {
        "nan".to_string()
    } else if n.is_infinite() {
        if n > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        number_text(n, c.number_precision)
    };
    out.extend_from_slice(text.as_bytes());
    Ok(())
}

/// The array length of `t` if it is an array (only positive integer keys,
/// not too sparse), None for an object.
fn array_len(t: &Table, c: &Config) -> Result<Option<usize>> {
    let (mut max, mut items) = (0usize, 0usize);
    for pair in t.pairs::<Value, Value>() {
        let (k, _) = pair?;
        let idx = match k {
            Value::Integer(i) if i >= 1 => i as usize,
            Value::Number(n) if n >= 1.0 && n.fract() == 0.0 => n as usize,
            _ => return Ok(None),
        };
        max = max.max(idx);
        items += 1;
    }
    if c.sparse_ratio > 0 && max > items * c.sparse_ratio && max > c.sparse_safe {
        if c.sparse_convert {
            return Ok(None);
        }
        return Err(mlua::Error::runtime(
            "Cannot serialise table: excessively sparse array",
        ));
    }
    Ok((max > 0).then_some(max))
}

fn encode_value(out: &mut Vec<u8>, v: &Value, c: &Config, depth: usize) -> Result<()> {
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(i) => encode_number(out, *i as f64, c)?,
        Value::Number(n) => encode_number(out, *n, c)?,
        Value::String(s) => encode_string(out, &s.as_bytes()),
        Value::Table(t) => {
            let depth = depth + 1;
            if depth > c.encode_max_depth {
                return Err(mlua::Error::runtime(format!(
                    "Cannot serialise, excessive nesting ({depth})"
                )));
            }
            match array_len(t, c)? {
                Some(len) => {
                    out.push(b'[');
                    for i in 1..=len {
                        if i > 1 {
                            out.push(b',');
                        }
                        encode_value(out, &t.raw_get::<Value>(i)?, c, depth)?;
                    }
                    out.push(b']');
                }
                None => {
                    out.push(b'{');
                    let mut first = true;
                    for pair in t.pairs::<Value, Value>() {
                        let (k, v) = pair?;
                        if !first {
                            out.push(b',');
                        }
                        first = false;
                        match &k {
                            Value::String(s) => encode_string(out, &s.as_bytes()),
                            Value::Integer(i) => encode_string(
                                out,
                                number_text(*i as f64, c.number_precision).as_bytes(),
                            ),
                            Value::Number(n) => {
                                encode_string(out, number_text(*n, c.number_precision).as_bytes())
                            }
                            _ => {
                                return Err(mlua::Error::runtime(
                                    "Cannot serialise table: table key must be a number or string",
                                ))
                            }
                        }
                        out.push(b':');
                        encode_value(out, &v, c, depth)?;
                    }
                    out.push(b'}');
                }
            }
        }
        other => {
            return Err(mlua::Error::runtime(format!(
                "Cannot serialise {}: type not supported",
                other.type_name()
            )))
        }
    }
    Ok(())
}

/// Lua stack slots lua_cjson's decoder can get (Lua 5.1's LUAI_MAXCSTACK):
/// it takes 2 per open array and 3 per open object, and past this it
/// fails as past `decode_max_depth`, whatever that is set to. Also what
/// bounds this decoder's recursion (a few hundred bytes of stack a level).
const MAX_STACK_SLOTS: usize = 8000;

/// lua_cjson's nesting check, made before parsing (serde_json's own stops
/// at 128): the first `[` or `{` past `limit` levels, or past the stack
/// slots, as its error (depth, and the character after that bracket).
fn nesting_error(text: &[u8], limit: usize) -> Option<String> {
    let (mut open, mut slots) = (Vec::new(), 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for (i, &b) in text.iter().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                let need = if b == b'[' { 2 } else { 3 };
                open.push(need);
                slots += need;
                if open.len() > limit || slots > MAX_STACK_SLOTS {
                    return Some(format!(
                        "Found too many nested data structures ({}) at character {}",
                        open.len(),
                        i + 1
                    ));
                }
            }
            b']' | b'}' => slots -= open.pop().unwrap_or(0),
            _ => {}
        }
    }
    None
}

fn to_lua(lua: &Lua, v: &serde_json::Value) -> Result<Value> {
    Ok(match v {
        serde_json::Value::Null => null(),
        serde_json::Value::Bool(b) => Value::Boolean(*b),
        serde_json::Value::Number(n) => Value::Number(n.as_f64().unwrap_or(f64::NAN)),
        serde_json::Value::String(s) => Value::String(lua.create_string(s)?),
        serde_json::Value::Array(a) => {
            let t = lua.create_table_with_capacity(a.len(), 0)?;
            for (i, item) in a.iter().enumerate() {
                t.raw_set(i + 1, to_lua(lua, item)?)?;
            }
            Value::Table(t)
        }
        serde_json::Value::Object(o) => {
            let t = lua.create_table_with_capacity(0, o.len())?;
            for (k, item) in o {
                t.raw_set(lua.create_string(k)?, to_lua(lua, item)?)?;
            }
            Value::Table(t)
        }
    })
}

/// A config function: sets the value when given one, returns the current.
fn setting<T: mlua::FromLua + mlua::IntoLua + Copy + 'static>(
    lua: &Lua,
    get: fn(&mut Config) -> &mut T,
) -> Result<mlua::Function> {
    lua.create_function(move |lua, v: Option<T>| {
        Ok(cfg(lua, |c| {
            if let Some(v) = v {
                *get(c) = v;
            }
            *get(c)
        }))
    })
}

pub fn open(lua: &Lua) -> Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "encode",
        lua.create_function(|lua, v: Value| {
            let mut out = Vec::new();
            cfg(lua, |c| encode_value(&mut out, &v, c, 0))?;
            lua.create_string(&out)
        })?,
    )?;
    t.set(
        "decode",
        lua.create_function(|lua, text: mlua::String| {
            let text = text.as_bytes();
            let limit = cfg(lua, |c| c.decode_max_depth);
            if let Some(e) = nesting_error(&text, limit) {
                return Err(mlua::Error::runtime(e));
            }
            // Nesting is bounded above, so serde_json's own limit is off.
            let mut de = serde_json::Deserializer::from_slice(&text);
            de.disable_recursion_limit();
            let mut values = de.into_iter::<serde_json::Value>();
            let invalid = |column: usize| {
                mlua::Error::runtime(format!(
                    "Expected value but found invalid token at character {}",
                    column.max(1)
                ))
            };
            // One value, then nothing but whitespace.
            let parsed = match (values.next(), values.next()) {
                (Some(Ok(v)), None) => v,
                (Some(Err(e)), _) | (_, Some(Err(e))) => return Err(invalid(e.column())),
                (Some(Ok(_)), Some(Ok(_))) => return Err(invalid(values.byte_offset())),
                (None, _) => return Err(invalid(1)),
            };
            to_lua(lua, &parsed)
        })?,
    )?;
    t.set("null", null())?;
    t.set(
        "encode_max_depth",
        setting::<usize>(lua, |c| &mut c.encode_max_depth)?,
    )?;
    t.set(
        "decode_max_depth",
        setting::<usize>(lua, |c| &mut c.decode_max_depth)?,
    )?;
    t.set(
        "encode_invalid_numbers",
        setting::<bool>(lua, |c| &mut c.encode_invalid_numbers)?,
    )?;
    t.set(
        "decode_invalid_numbers",
        setting::<bool>(lua, |c| &mut c.decode_invalid_numbers)?,
    )?;
    t.set(
        "encode_number_precision",
        lua.create_function(|lua, v: Option<usize>| {
            Ok(cfg(lua, |c| {
                if let Some(v) = v {
                    c.number_precision = v.clamp(1, 14);
                }
                c.number_precision
            }))
        })?,
    )?;
    t.set(
        "encode_keep_buffer",
        setting::<bool>(lua, |c| &mut c.keep_buffer)?,
    )?;
    t.set(
        "encode_sparse_array",
        lua.create_function(
            |lua, (convert, ratio, safe): (Option<bool>, Option<usize>, Option<usize>)| {
                Ok(cfg(lua, |c| {
                    if let Some(v) = convert {
                        c.sparse_convert = v;
                    }
                    if let Some(v) = ratio {
                        c.sparse_ratio = v;
                    }
                    if let Some(v) = safe {
                        c.sparse_safe = v;
                    }
                    (c.sparse_convert, c.sparse_ratio, c.sparse_safe)
                }))
            },
        )?,
    )?;
    Ok(t)
}
