//! Lua 5.1 bytecode without its debug information, for the sandbox.
//!
//! sandbox.lua's compiled functions were half of the eval interpreter's live
//! heap (~37 KB of ~76 KB; Redis's whole heap is ~32 KB, its sandbox being C),
//! and every garbage collection cycle marks and sweeps all of it. Line numbers,
//! local variable names and upvalue names are only read by the debug library
//! and by error messages, and the sandbox never reports its own positions: its
//! errors name the script's line (level 0 or 2 errors, and the error handler
//! skips every frame but the script's). Lua 5.1's `lua_dump` cannot strip (5.2
//! can), so this rewrites the dump with those three lists empty, as `luac -s`
//! does; `lundump` accepts a function without them.
//!
//! The format (lundump.c / ldump.c of Lua 5.1): a 12-byte header, then one
//! function: source (string), line defined and last line defined (ints),
//! upvalue count, parameter count, vararg flag and stack size (bytes), code
//! (int count, 4-byte instructions), constants (int count, each a type byte and
//! its value), nested functions (int count, each a function), then the debug
//! lists: line info (int count, ints), locals (int count, each a string and two
//! ints) and upvalue names (int count, strings). A string is its size with
//! the trailing NUL as a size_t (0: none), then its bytes.

const HEADER: usize = 12;
const INT: usize = 4;
const SIZE_T: usize = std::mem::size_of::<usize>();
const INSTRUCTION: usize = 4;
const NUMBER: usize = 8;

/// `dump` (from `lua_dump` on this build) without debug information; None if
/// it is not the format this build writes (the caller keeps the original).
pub fn strip(dump: &[u8]) -> Option<Vec<u8>> {
    // Signature, version 5.1, official format, little endian, then the sizes
    // of int, size_t, Instruction and lua_Number, and lua_Number not integral.
    let header = [
        0x1b,
        b'L',
        b'u',
        b'a',
        0x51,
        0,
        cfg!(target_endian = "little") as u8,
        INT as u8,
        SIZE_T as u8,
        INSTRUCTION as u8,
        NUMBER as u8,
        0,
    ];
    if dump.get(..HEADER)? != header {
        return None;
    }
    let mut reader = Reader {
        bytes: dump,
        at: HEADER,
    };
    let mut out = Vec::with_capacity(dump.len());
    out.extend_from_slice(&header);
    function(&mut reader, &mut out)?;
    (reader.at == dump.len()).then_some(out)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let bytes = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(bytes)
    }

    /// A non-negative count.
    fn count(&mut self) -> Option<usize> {
        let n = i32::from_ne_bytes(self.take(INT)?.try_into().ok()?);
        usize::try_from(n).ok()
    }

    /// A string with its size prefix, as written.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        let size = usize::from_ne_bytes(self.take(SIZE_T)?.try_into().ok()?);
        self.take(size)?;
        Some(&self.bytes[start..self.at])
    }
}

fn put_count(out: &mut Vec<u8>, n: usize) -> Option<()> {
    out.extend_from_slice(&i32::try_from(n).ok()?.to_ne_bytes());
    Some(())
}

fn function(r: &mut Reader, out: &mut Vec<u8>) -> Option<()> {
    out.extend_from_slice(r.string()?);
    // Line defined, last line defined, and the four bytes after them.
    out.extend_from_slice(r.take(2 * INT + 4)?);
    let code = r.count()?;
    put_count(out, code)?;
    out.extend_from_slice(r.take(code.checked_mul(INSTRUCTION)?)?);
    let constants = r.count()?;
    put_count(out, constants)?;
    for _ in 0..constants {
        let kind = r.take(1)?[0];
        out.push(kind);
        match kind {
            0 => {}                                      // nil
            1 => out.extend_from_slice(r.take(1)?),      // boolean
            3 => out.extend_from_slice(r.take(NUMBER)?), // number
            4 => out.extend_from_slice(r.string()?),     // string
            _ => return None,
        }
    }
    let functions = r.count()?;
    put_count(out, functions)?;
    for _ in 0..functions {
        function(r, out)?;
    }
    // The debug lists, read past and written empty.
    let lines = r.count()?;
    r.take(lines.checked_mul(INT)?)?;
    for _ in 0..r.count()? {
        r.string()?;
        r.take(2 * INT)?;
    }
    for _ in 0..r.count()? {
        r.string()?;
    }
    for _ in 0..3 {
        put_count(out, 0)?;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mlua::{ChunkMode, Lua};

    fn lua() -> Lua {
        // SAFETY: binary chunks are what is tested; only this test's own.
        unsafe { Lua::unsafe_new() }
    }

    const CODE: &str = "
        local up = 10
        local function add(a, b) local s = a + b return s + up end
        local t = {1, 'two', 3.5, true, nil}
        return add(t[1], 2), t[2], t[3], t[4], function() return up end
    ";

    #[test]
    fn stripped_code_runs_the_same_and_is_smaller() {
        let lua = lua();
        let dump = lua.load(CODE).into_function().unwrap().dump(false);
        let stripped = strip(&dump).expect("this build's format");
        assert!(stripped.len() < dump.len());
        let (sum, two, num, yes, f): (i64, String, f64, bool, mlua::Function) = lua
            .load(&stripped[..])
            .set_mode(ChunkMode::Binary)
            .call(())
            .unwrap();
        assert_eq!((sum, two.as_str(), num, yes), (13, "two", 3.5, true));
        assert_eq!(f.call::<i64>(()).unwrap(), 10);
        // Stripping what has nothing left to strip changes nothing.
        assert_eq!(strip(&stripped).as_deref(), Some(&stripped[..]));
    }

    #[test]
    fn stripped_code_has_no_line_numbers() {
        let lua = lua();
        let dump = lua
            .load("local x = nil\nreturn x.y")
            .set_name("=chunk")
            .into_function()
            .unwrap()
            .dump(false);
        let full = lua.load(&dump[..]).set_mode(ChunkMode::Binary).exec();
        assert!(full.unwrap_err().to_string().contains("chunk:2:"));
        let stripped = strip(&dump).unwrap();
        let err = lua
            .load(&stripped[..])
            .set_mode(ChunkMode::Binary)
            .exec()
            .unwrap_err()
            .to_string();
        assert!(!err.contains("chunk:2:"), "{err}");
    }

    #[test]
    fn anything_else_is_refused() {
        let lua = lua();
        let dump = lua.load("return 1").into_function().unwrap().dump(false);
        assert!(strip(&dump[..dump.len() - 1]).is_none());
        let mut longer = dump.clone();
        longer.push(0);
        assert!(strip(&longer).is_none());
        let mut other_version = dump.clone();
        other_version[4] = 0x52;
        assert!(strip(&other_version).is_none());
        assert!(strip(b"return 1").is_none());
        assert!(strip(b"").is_none());
    }
}
