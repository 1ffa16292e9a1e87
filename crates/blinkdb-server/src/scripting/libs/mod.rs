//! The libraries Redis loads into its interpreter, as globals: cjson,
//! cmsgpack, bit and struct.

use mlua::Lua;

pub fn register(_lua: &Lua) -> mlua::Result<()> {
    Ok(())
}
