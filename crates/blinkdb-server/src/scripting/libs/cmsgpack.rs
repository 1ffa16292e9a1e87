//! `cmsgpack`: MessagePack pack and unpack with lua-cmsgpack's rules as
//! Redis ships it (tables with keys 1..n are arrays, others maps; integral
//! numbers pack as integers, others as doubles; tables nest 16 deep at
//! most). The wire format is written and read with rmpv.

use mlua::{Lua, MultiValue, Result, Table, Value, Variadic};
use rmpv::Value as Mp;

/// Nesting lua-cmsgpack encodes before it writes nil instead.
const MAX_NESTING: usize = 16;

fn table_is_array(t: &Table) -> Result<Option<usize>> {
    let mut count = 0usize;
    for pair in t.pairs::<Value, Value>() {
        let (k, _) = pair?;
        match k {
            Value::Integer(i) if i >= 1 => {}
            Value::Number(n) if n >= 1.0 && n.fract() == 0.0 => {}
            _ => return Ok(None),
        }
        count += 1;
    }
    // Keys must be exactly 1..count.
    for i in 1..=count {
        if t.raw_get::<Value>(i)?.is_nil() {
            return Ok(None);
        }
    }
    Ok(Some(count))
}

fn pack_number(out: &mut Vec<u8>, n: f64) {
    if n.fract() == 0.0 && (-9.2e18..=1.8e19).contains(&n) {
        if n >= 0.0 {
            let _ = rmp::encode::write_uint(out, n as u64);
        } else {
            let _ = rmp::encode::write_sint(out, n as i64);
        }
    } else if n as f32 as f64 == n {
        let _ = rmp::encode::write_f32(out, n as f32);
    } else {
        let _ = rmp::encode::write_f64(out, n);
    }
}

/// Writes `v` in MessagePack; strings as str types, as lua-cmsgpack does.
fn pack_value(out: &mut Vec<u8>, v: &Value, depth: usize) -> Result<()> {
    match v {
        Value::Boolean(b) => {
            let _ = rmp::encode::write_bool(out, *b);
        }
        Value::Integer(i) => pack_number(out, *i as f64),
        Value::Number(n) => pack_number(out, *n),
        Value::String(s) => {
            let bytes = s.as_bytes();
            let _ = rmp::encode::write_str_len(out, bytes.len() as u32);
            out.extend_from_slice(&bytes);
        }
        Value::Table(t) if depth < MAX_NESTING => match table_is_array(t)? {
            Some(n) => {
                let _ = rmp::encode::write_array_len(out, n as u32);
                for i in 1..=n {
                    pack_value(out, &t.raw_get::<Value>(i)?, depth + 1)?;
                }
            }
            None => {
                // Pair by pair: collecting them would hold a Lua reference per
                // string, past what mlua's reference stack holds (a 100k-key map).
                let n = t.pairs::<Value, Value>().count();
                let _ = rmp::encode::write_map_len(out, n as u32);
                for pair in t.pairs::<Value, Value>() {
                    let (k, v) = pair?;
                    pack_value(out, &k, depth + 1)?;
                    pack_value(out, &v, depth + 1)?;
                }
            }
        },
        _ => rmp::encode::write_nil(out).map_err(|e| mlua::Error::runtime(e.to_string()))?,
    }
    Ok(())
}

fn to_lua(lua: &Lua, v: &Mp) -> Result<Value> {
    Ok(match v {
        Mp::Nil => Value::Nil,
        Mp::Boolean(b) => Value::Boolean(*b),
        Mp::Integer(i) => Value::Number(i.as_f64().unwrap_or(0.0)),
        Mp::F32(f) => Value::Number(*f as f64),
        Mp::F64(f) => Value::Number(*f),
        Mp::String(s) => Value::String(lua.create_string(s.as_bytes())?),
        Mp::Binary(b) => Value::String(lua.create_string(b)?),
        Mp::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, to_lua(lua, item)?)?;
            }
            Value::Table(t)
        }
        Mp::Map(entries) => {
            let t = lua.create_table_with_capacity(0, entries.len())?;
            for (k, item) in entries {
                let k = to_lua(lua, k)?;
                if !k.is_nil() {
                    t.raw_set(k, to_lua(lua, item)?)?;
                }
            }
            Value::Table(t)
        }
        Mp::Ext(_, b) => Value::String(lua.create_string(b)?),
    })
}

/// Unpacks up to `limit` objects (0: all) from `data` at `offset`; returns
/// the offset after them (-1 at the end) and the objects.
fn unpack(lua: &Lua, data: &[u8], offset: usize, limit: usize) -> Result<(i64, Vec<Value>)> {
    let mut cursor = std::io::Cursor::new(data);
    cursor.set_position(offset.min(data.len()) as u64);
    let mut values = Vec::new();
    while (cursor.position() as usize) < data.len() && (limit == 0 || values.len() < limit) {
        let v = rmpv::decode::read_value(&mut cursor)
            .map_err(|_| mlua::Error::runtime("Missing bytes in input."))?;
        values.push(to_lua(lua, &v)?);
    }
    let at = cursor.position() as usize;
    Ok((if at >= data.len() { -1 } else { at as i64 }, values))
}

pub fn open(lua: &Lua) -> Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "pack",
        lua.create_function(|lua, args: Variadic<Value>| {
            if args.is_empty() {
                return Err(mlua::Error::runtime("MessagePack pack needs input."));
            }
            let mut out = Vec::new();
            for a in args.iter() {
                pack_value(&mut out, a, 0)?;
            }
            lua.create_string(&out)
        })?,
    )?;
    t.set(
        "unpack",
        lua.create_function(|lua, data: mlua::String| {
            let (_, values) = unpack(lua, &data.as_bytes(), 0, 0)?;
            Ok(MultiValue::from_iter(values))
        })?,
    )?;
    t.set(
        "unpack_one",
        lua.create_function(|lua, (data, offset): (mlua::String, Option<i64>)| {
            let (next, values) = unpack(
                lua,
                &data.as_bytes(),
                offset.unwrap_or(0).max(0) as usize,
                1,
            )?;
            let mut out = vec![Value::Number(next as f64)];
            out.extend(values);
            Ok(MultiValue::from_iter(out))
        })?,
    )?;
    t.set(
        "unpack_limit",
        lua.create_function(
            |lua, (data, limit, offset): (mlua::String, i64, Option<i64>)| {
                let (next, values) = unpack(
                    lua,
                    &data.as_bytes(),
                    offset.unwrap_or(0).max(0) as usize,
                    limit.max(0) as usize,
                )?;
                let mut out = vec![Value::Number(next as f64)];
                out.extend(values);
                Ok(MultiValue::from_iter(out))
            },
        )?,
    )?;
    Ok(t)
}
