//! `bit`: LuaBitOp's operations on 32-bit integers, as Redis bundles it.

use mlua::{Lua, Result, Table, Variadic};

/// LuaBitOp's number normalisation: the low 32 bits of the number rounded
/// to an integer (adding 2^52 + 2^51 puts them in the mantissa's low word).
fn tobit(x: f64) -> i32 {
    (x + 6_755_399_441_055_744.0).to_bits() as u32 as i32
}

fn fold(name: &'static str, f: fn(i32, i32) -> i32) -> impl Fn(&Lua, Variadic<f64>) -> Result<f64> {
    move |_, args: Variadic<f64>| {
        let mut it = args.iter();
        let first = it.next().ok_or_else(|| {
            mlua::Error::runtime(format!(
                "bad argument #1 to '{name}' (number expected, got no value)"
            ))
        })?;
        Ok(it.fold(tobit(*first), |acc, x| f(acc, tobit(*x))) as f64)
    }
}

pub fn open(lua: &Lua) -> Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "tobit",
        lua.create_function(|_, x: f64| Ok(tobit(x) as f64))?,
    )?;
    t.set(
        "bnot",
        lua.create_function(|_, x: f64| Ok(!tobit(x) as f64))?,
    )?;
    t.set("band", lua.create_function(fold("band", |a, b| a & b))?)?;
    t.set("bor", lua.create_function(fold("bor", |a, b| a | b))?)?;
    t.set("bxor", lua.create_function(fold("bxor", |a, b| a ^ b))?)?;
    let shift = |f: fn(i32, u32) -> i32| {
        move |_: &Lua, (x, n): (f64, f64)| Ok(f(tobit(x), (tobit(n) & 31) as u32) as f64)
    };
    t.set(
        "lshift",
        lua.create_function(shift(|x, n| ((x as u32) << n) as i32))?,
    )?;
    t.set(
        "rshift",
        lua.create_function(shift(|x, n| ((x as u32) >> n) as i32))?,
    )?;
    t.set("arshift", lua.create_function(shift(|x, n| x >> n))?)?;
    t.set(
        "rol",
        lua.create_function(shift(|x, n| (x as u32).rotate_left(n) as i32))?,
    )?;
    t.set(
        "ror",
        lua.create_function(shift(|x, n| (x as u32).rotate_right(n) as i32))?,
    )?;
    t.set(
        "bswap",
        lua.create_function(|_, x: f64| Ok((tobit(x) as u32).swap_bytes() as i32 as f64))?,
    )?;
    t.set(
        "tohex",
        lua.create_function(|_, (x, n): (f64, Option<f64>)| {
            let x = tobit(x) as u32;
            let n = n.map_or(8, tobit);
            let upper = n < 0;
            // |i32::MIN| does not fit an i32: LuaBitOp then keeps 8 digits.
            let digits = (n.unsigned_abs()).min(8) as usize;
            let text = if upper {
                format!("{x:08X}")
            } else {
                format!("{x:08x}")
            };
            Ok(text[8 - digits..].to_string())
        })?,
    )?;
    Ok(t)
}
