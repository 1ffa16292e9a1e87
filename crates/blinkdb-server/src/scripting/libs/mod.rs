//! The libraries Redis loads into its interpreter, as globals: cjson,
//! cmsgpack, bit and struct.

mod bit;
mod cjson;
mod cmsgpack;
mod structlib;

use mlua::Lua;

pub fn register(lua: &Lua) -> mlua::Result<()> {
    let g = lua.globals();
    g.set("bit", bit::open(lua)?)?;
    g.set("cjson", cjson::open(lua)?)?;
    g.set("cmsgpack", cmsgpack::open(lua)?)?;
    g.set("struct", structlib::open(lua)?)?;
    Ok(())
}
