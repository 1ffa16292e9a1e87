//! `struct`: Roberto Ierusalimschy's struct library as Redis bundles it
//! (pack, unpack, size), for an x86-64 build: native little-endian, `long` and
//! `size_t` of 8 bytes, `int` of 4, maximum alignment 8. Written here because
//! no crate offers it; integers go through an unsigned 64-bit value exactly as
//! the C code's `unsigned long` does, so sizes above 8 behave as Redis's.

use mlua::{Lua, MultiValue, Result, String as LuaString, Table, Value, Variadic};

const MAXINTSIZE: usize = 32;
const MAXALIGN: usize = 8;

#[derive(Clone, Copy)]
struct Header {
    little: bool,
    align: usize,
}

impl Default for Header {
    fn default() -> Self {
        Header {
            little: true,
            align: 1,
        }
    }
}

fn err(msg: String) -> mlua::Error {
    mlua::Error::runtime(msg)
}

fn arg_err(n: usize, func: &str, msg: &str) -> mlua::Error {
    err(format!("bad argument #{n} to '{func}' ({msg})"))
}

/// A number in the format at `*i`, or `default`.
fn getnum(fmt: &[u8], i: &mut usize, default: usize) -> Result<usize> {
    if !fmt.get(*i).is_some_and(u8::is_ascii_digit) {
        return Ok(default);
    }
    let mut a: usize = 0;
    while let Some(d) = fmt.get(*i).filter(|c| c.is_ascii_digit()) {
        let d = (d - b'0') as usize;
        if a > (i32::MAX as usize) / 10 || a * 10 > i32::MAX as usize - d {
            return Err(err("integral size overflow".into()));
        }
        a = a * 10 + d;
        *i += 1;
    }
    Ok(a)
}

fn optsize(opt: u8, fmt: &[u8], i: &mut usize) -> Result<usize> {
    Ok(match opt {
        b'B' | b'b' => 1,
        b'H' | b'h' => 2,
        b'L' | b'l' | b'T' | b'd' => 8,
        b'f' => 4,
        b'x' => 1,
        b'c' => getnum(fmt, i, 1)?,
        b'i' | b'I' => {
            let sz = getnum(fmt, i, 4)?;
            if sz > MAXINTSIZE {
                return Err(err(format!(
                    "integral size {sz} is larger than limit of {MAXINTSIZE}"
                )));
            }
            sz
        }
        _ => 0,
    })
}

fn gettoalign(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    (size - (len & (size - 1))) & (size - 1)
}

/// The endianness and alignment options; anything else is an error.
fn controloptions(opt: u8, fmt: &[u8], i: &mut usize, h: &mut Header, func: &str) -> Result<()> {
    match opt {
        b' ' => {}
        b'>' => h.little = false,
        b'<' => h.little = true,
        b'!' => {
            let a = getnum(fmt, i, MAXALIGN)?;
            if a == 0 || a & (a - 1) != 0 {
                return Err(err(format!("alignment {a} is not a power of 2")));
            }
            h.align = a;
        }
        _ => {
            let msg = format!("invalid format option '{}'", opt as char);
            return Err(arg_err(1, func, &msg));
        }
    }
    Ok(())
}

fn number(v: Option<&Value>, n: usize, func: &str) -> Result<f64> {
    match v {
        Some(Value::Integer(i)) => Ok(*i as f64),
        Some(Value::Number(x)) => Ok(*x),
        Some(Value::String(s)) => s
            .to_str()
            .ok()
            .and_then(|t| t.trim().parse::<f64>().ok())
            .ok_or_else(|| arg_err(n, func, "number expected, got string")),
        Some(other) => Err(arg_err(
            n,
            func,
            &format!("number expected, got {}", other.type_name()),
        )),
        None => Err(arg_err(n, func, "number expected, got no value")),
    }
}

fn bytes(v: Option<&Value>, n: usize, func: &str) -> Result<Vec<u8>> {
    match v {
        Some(Value::String(s)) => Ok(s.as_bytes().to_vec()),
        Some(Value::Integer(i)) => Ok(i.to_string().into_bytes()),
        Some(Value::Number(x)) => Ok(crate::scripting::api::lua_number_text(*x).into_bytes()),
        Some(other) => Err(arg_err(
            n,
            func,
            &format!("string expected, got {}", other.type_name()),
        )),
        None => Err(arg_err(n, func, "string expected, got no value")),
    }
}

/// The C code's conversion of a Lua number to `unsigned long`.
fn to_unsigned(n: f64) -> u64 {
    if n < 0.0 {
        (n as i64) as u64
    } else {
        n as u64
    }
}

fn pack(lua: &Lua, args: Variadic<Value>) -> Result<LuaString> {
    let fmt = bytes(args.first(), 1, "pack")?;
    // The C code pushes a nil after its arguments: the first missing one
    // reads as nil, those past it as no value.
    let nil = Value::Nil;
    let get = |i: usize| match i.cmp(&args.len()) {
        std::cmp::Ordering::Less => args.get(i),
        std::cmp::Ordering::Equal => Some(&nil),
        std::cmp::Ordering::Greater => None,
    };
    let mut h = Header::default();
    let mut arg = 1;
    let mut out: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let mut size = optsize(opt, &fmt, &mut i)?;
        let toalign = gettoalign(out.len(), &h, opt, size);
        out.resize(out.len() + toalign, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let mut value = to_unsigned(number(get(arg), arg + 1, "pack")?);
                arg += 1;
                let mut buf = vec![0u8; size];
                for k in 0..size {
                    let at = if h.little { k } else { size - 1 - k };
                    buf[at] = value as u8;
                    value >>= 8;
                }
                out.extend_from_slice(&buf);
            }
            b'x' => out.push(0),
            b'f' => {
                let f = number(get(arg), arg + 1, "pack")? as f32;
                arg += 1;
                out.extend(if h.little {
                    f.to_le_bytes()
                } else {
                    f.to_be_bytes()
                });
            }
            b'd' => {
                let d = number(get(arg), arg + 1, "pack")?;
                arg += 1;
                out.extend(if h.little {
                    d.to_le_bytes()
                } else {
                    d.to_be_bytes()
                });
            }
            b'c' | b's' => {
                let s = bytes(get(arg), arg + 1, "pack")?;
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    return Err(arg_err(arg + 1, "pack", "string too short"));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => controloptions(opt, &fmt, &mut i, &mut h, "pack")?,
        }
    }
    lua.create_string(&out)
}

fn getinteger(buf: &[u8], little: bool, signed: bool) -> f64 {
    let mut l: u64 = 0;
    let size = buf.len();
    for k in 0..size {
        let b = if little { buf[size - 1 - k] } else { buf[k] };
        l = (l << 8) | b as u64;
    }
    if !signed {
        return l as f64;
    }
    let mask = (!0u64).wrapping_shl((size * 8 - 1) as u32);
    if l & mask != 0 {
        l |= mask;
    }
    l as i64 as f64
}

fn unpack(lua: &Lua, args: Variadic<Value>) -> Result<MultiValue> {
    let fmt = bytes(args.first(), 1, "unpack")?;
    let data = bytes(args.get(1), 2, "unpack")?;
    let ld = data.len();
    let start = match args.get(2) {
        None | Some(Value::Nil) => 1.0,
        v => number(v, 3, "unpack")?,
    };
    if start <= 0.0 {
        return Err(arg_err(3, "unpack", "offset must be 1 or greater"));
    }
    let mut pos = start as usize - 1;
    let mut h = Header::default();
    let mut results: Vec<Value> = Vec::new();
    let mut i = 0;
    let short = || arg_err(2, "unpack", "data string too short");
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let mut size = optsize(opt, &fmt, &mut i)?;
        pos += gettoalign(pos, &h, opt, size);
        if size > ld || pos > ld - size {
            return Err(short());
        }
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let v = getinteger(&data[pos..pos + size], h.little, opt.is_ascii_lowercase());
                results.push(Value::Number(v));
            }
            b'x' => {}
            b'f' => {
                let raw: [u8; 4] = data[pos..pos + 4].try_into().expect("4 bytes");
                let f = if h.little {
                    f32::from_le_bytes(raw)
                } else {
                    f32::from_be_bytes(raw)
                };
                results.push(Value::Number(f as f64));
            }
            b'd' => {
                let raw: [u8; 8] = data[pos..pos + 8].try_into().expect("8 bytes");
                let d = if h.little {
                    f64::from_le_bytes(raw)
                } else {
                    f64::from_be_bytes(raw)
                };
                results.push(Value::Number(d));
            }
            b'c' => {
                if size == 0 {
                    let Some(Value::Number(n)) = results.pop() else {
                        return Err(err("format 'c0' needs a previous size".into()));
                    };
                    size = n as usize;
                    if size > ld || pos > ld - size {
                        return Err(short());
                    }
                }
                results.push(Value::String(lua.create_string(&data[pos..pos + size])?));
            }
            b's' => {
                let Some(end) = data[pos..].iter().position(|&b| b == 0) else {
                    return Err(err("unfinished string in data".into()));
                };
                results.push(Value::String(lua.create_string(&data[pos..pos + end])?));
                size = end + 1;
            }
            _ => controloptions(opt, &fmt, &mut i, &mut h, "unpack")?,
        }
        pos += size;
    }
    results.push(Value::Integer(pos as i64 + 1));
    Ok(MultiValue::from_iter(results))
}

fn size(_: &Lua, args: Variadic<Value>) -> Result<f64> {
    let fmt = bytes(args.first(), 1, "size")?;
    let mut h = Header::default();
    let mut pos = 0usize;
    let mut i = 0;
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let size = optsize(opt, &fmt, &mut i)?;
        pos += gettoalign(pos, &h, opt, size);
        if opt == b's' {
            return Err(arg_err(1, "size", "option 's' has no fixed size"));
        } else if opt == b'c' && size == 0 {
            return Err(arg_err(1, "size", "option 'c0' has no fixed size"));
        }
        if !opt.is_ascii_alphanumeric() {
            controloptions(opt, &fmt, &mut i, &mut h, "size")?;
        }
        pos += size;
    }
    Ok(pos as f64)
}

pub fn open(lua: &Lua) -> Result<Table> {
    let t = lua.create_table()?;
    t.set("pack", lua.create_function(pack)?)?;
    t.set("unpack", lua.create_function(unpack)?)?;
    t.set("size", lua.create_function(size)?)?;
    Ok(t)
}
