//! The native half of the `redis` API (sandbox.lua builds the Lua half):
//! redis.call's argument checks and command round trip, error tables,
//! sha1hex, log, setresp, and Redis's deterministic random generator.

pub use super::convert::error_table;
use super::convert::{self, fmt_g17};
use super::run;
use mlua::{ffi, Function, Lua, Table, Value};
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering};

/// Builds the table of native functions sandbox.lua receives.
pub fn native_table(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    // SAFETY: `call` follows the rules of a Lua C function (see its doc).
    t.set("call", unsafe { lua.create_c_function(call)? })?;
    // SAFETY: as `call`.
    t.set("pcall", unsafe { lua.create_c_function(pcall)? })?;
    t.set(
        "cwrap",
        lua.create_function(|lua, f: Function| {
            // SAFETY: pushes one C closure over the one argument exec_raw
            // put on the stack.
            unsafe { lua.exec_raw::<Function>(f, |state| ffi::lua_pushcclosure(state, cwrap, 1)) }
        })?,
    )?;
    t.set(
        "error_table",
        lua.create_function(|lua, msg: mlua::String| error_table(lua, &msg.as_bytes()))?,
    )?;
    t.set(
        "errtext",
        lua.create_function(|_, v: Value| {
            // Errors raised by native library functions get the script's
            // position, as luaL_error gives Redis's C libraries; SCRIPT
            // KILL's and the debugger's (abort) do not.
            let text = value_error_text(&v);
            let positioned = matches!(v, Value::Error(_))
                && text != super::run::KILLED
                && !super::ldb::raised_by_debugger(&text);
            Ok((text, positioned))
        })?,
    )?;
    t.set(
        "sha1hex",
        lua.create_function(|_, v: Value| {
            let bytes = match &v {
                Value::String(s) => s.as_bytes().to_vec(),
                Value::Integer(i) => i.to_string().into_bytes(),
                Value::Number(n) => lua_number_text(*n).into_bytes(),
                _ => Vec::new(),
            };
            let sha = super::cache::sha1hex(&bytes);
            Ok(String::from_utf8_lossy(&sha).into_owned())
        })?,
    )?;
    t.set(
        "log",
        lua.create_function(|_, (level, msg): (i64, mlua::String)| {
            let msg = String::from_utf8_lossy(&msg.as_bytes()).into_owned();
            match level {
                0 | 1 => tracing::debug!("{msg}"),
                2 => tracing::info!("{msg}"),
                _ => tracing::warn!("{msg}"),
            }
            Ok(())
        })?,
    )?;
    t.set(
        "setresp",
        lua.create_function(|_, resp: u8| {
            run::set_resp(resp);
            Ok(())
        })?,
    )?;
    t.set(
        "set_repl",
        lua.create_function(|_, flags: u8| {
            run::set_repl(flags);
            Ok(())
        })?,
    )?;
    t.set(
        "acl_check",
        lua.create_function(|_, args: mlua::Variadic<Value>| {
            let mut owned: Vec<Vec<u8>> = Vec::with_capacity(args.len());
            for a in args.iter() {
                match lua_arg_bytes(a) {
                    Some(b) => owned.push(b),
                    None => {
                        return Ok((
                            None,
                            Some("Lua redis lib command arguments must be strings or integers"),
                        ))
                    }
                }
            }
            let argv: Vec<&[u8]> = owned.iter().map(|a| a.as_slice()).collect();
            Ok(match run::acl_allows(&argv) {
                Some(allowed) => (Some(allowed), None),
                None => (
                    None,
                    Some("Invalid command passed to redis.acl_check_cmd()"),
                ),
            })
        })?,
    )?;
    t.set(
        "debug",
        lua.create_function(|_, args: mlua::Variadic<Value>| {
            super::ldb::debug(&args);
            Ok(())
        })?,
    )?;
    t.set(
        "breakpoint",
        lua.create_function(|_, ()| Ok(super::ldb::breakpoint()))?,
    )?;
    t.set("rand", lua.create_function(|_, ()| Ok(rand_unit()))?)?;
    t.set(
        "srand",
        lua.create_function(|_, seed: f64| {
            srand48(seed as i64 as i32);
            Ok(())
        })?,
    )?;
    t.set("version", crate::REDIS_COMPAT_VERSION)?;
    t.set("version_num", version_num() as f64)?;
    Ok(t)
}

/// A C function that calls its upvalue with its arguments and returns what
/// it returns. The API functions written in Lua go through it so that a
/// script's `return redis.call(...)` is not a Lua tail call: the script's
/// frame stays on the stack and errors name its line, as with Redis's C
/// functions.
unsafe extern "C-unwind" fn cwrap(state: *mut ffi::lua_State) -> c_int {
    // Only Lua API calls here: an error raised by the callee unwinds
    // through this frame, which owns nothing.
    let n = ffi::lua_gettop(state);
    ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
    ffi::lua_insert(state, 1);
    ffi::lua_call(state, n, ffi::LUA_MULTRET);
    ffi::lua_gettop(state)
}

/// 7.0.15 → 0x00070f.
fn version_num() -> u32 {
    let mut parts = crate::REDIS_COMPAT_VERSION
        .split('.')
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (a, b, c) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    (a << 16) | (b << 8) | c
}

/// Lua's own number to string (`%.14g`), for values Lua would print.
pub(crate) fn lua_number_text(n: f64) -> String {
    let mut buf = [0u8; 64];
    // SAFETY: as in convert::fmt_g17.
    let len = unsafe {
        libc::snprintf(
            buf.as_mut_ptr() as *mut libc::c_char,
            buf.len(),
            c"%.14g".as_ptr(),
            n,
        )
    };
    String::from_utf8_lossy(&buf[..(len.max(0) as usize).min(63)]).into_owned()
}

/// The text of an error raised in Lua that is not an error table.
fn value_error_text(v: &Value) -> String {
    match v {
        Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
        Value::Error(e) => error_text(e),
        Value::Nil => "nil".into(),
        Value::Boolean(b) => b.to_string(),
        Value::Integer(i) => i.to_string(),
        Value::Number(n) => lua_number_text(*n),
        other => other.type_name().to_string(),
    }
}

/// The message of an mlua error without mlua's decorations (callback
/// tracebacks, "runtime error:" prefixes).
pub fn error_text(e: &mlua::Error) -> String {
    match e {
        mlua::Error::CallbackError { cause, .. } => error_text(cause),
        mlua::Error::RuntimeError(m) | mlua::Error::MemoryError(m) => m.clone(),
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::WithContext { cause, .. } => error_text(cause),
        other => other.to_string(),
    }
}

/// redis.call: runs the command and returns its reply, or raises the
/// error table of an error reply (a plain C function, as Redis's: an mlua
/// callback converts every argument and protects every push, and a Lua
/// wrapper would cost a Lua call and the C closure that keeps the
/// script's frame on the stack for error lines).
unsafe extern "C-unwind" fn call(state: *mut ffi::lua_State) -> c_int {
    if run_call(state) {
        // The error table is on top; nothing owned lives in this frame.
        ffi::lua_error(state);
    }
    1
}

/// redis.pcall: the reply, an error reply as its error table.
unsafe extern "C-unwind" fn pcall(state: *mut ffi::lua_State) -> c_int {
    run_call(state);
    1
}

/// redis.call / redis.pcall's common half: runs the command the arguments
/// name and pushes its reply; true when the reply is an error (its error
/// table is pushed).
///
/// No Rust value that owns memory is alive across a Lua call that may raise
/// (a raised error unwinds past this frame with longjmp): the arguments are
/// copied out before anything is pushed, and the reply is read from a
/// thread-local buffer.
unsafe fn run_call(state: *mut ffi::lua_State) -> bool {
    // The arguments are copied (into a buffer kept for the next call): their
    // stack room is the reply's (a call with 7999 arguments leaves no room
    // otherwise). Reading them raises no Lua error.
    if let Err(msg) = run::fill_call_args(|argv| command_args(state, argv)) {
        super::ldb::log_error(msg.as_bytes());
        convert::push_error_table(state, msg.as_bytes());
        return true;
    }
    ffi::lua_settop(state, 0);
    if super::ldb::active() {
        run::with_call_args(|argv| super::ldb::log_call(&argv.args()));
    }
    run::call();
    run::after_call();
    // SAFETY: the buffer only changes on the next call, after this one has
    // pushed its value (pushing runs no script code).
    let reply = run::call_reply();
    if super::ldb::active() {
        log_outcome(reply);
    }
    convert::push_reply_or_error(state, reply);
    let failed = reply.first() == Some(&b'-');
    if failed {
        // Counted in errorstats when the command failed or was refused.
        convert::mark_counted(state);
    }
    failed
}

/// The debugger's log of a redis.call's outcome, as Redis's: a refused
/// call (unknown command, arity, ACL...) shows its error without a reply
/// and without the ERR code; a command's error reply shows as an error and
/// as the reply.
fn log_outcome(reply: &[u8]) {
    if reply.first() != Some(&b'-') {
        return super::ldb::log_reply(reply);
    }
    let line = reply.split(|&b| b == b'\r').next().unwrap_or_default();
    if run::call_refused() {
        super::ldb::log_error(line.strip_prefix(b"-ERR ").unwrap_or(line));
    } else {
        super::ldb::log_error(line);
        super::ldb::log_reply(reply);
    }
}

/// One argument of a command a script names, as `command_args` reads it.
fn lua_arg_bytes(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Integer(i) => Some(i.to_string().into_bytes()),
        Value::Number(x) => Some(number_arg(*x).into_bytes()),
        _ => None,
    }
}

/// A number as a command argument: `%.17g`, which prints an integer below
/// 1e17 in full, as itoa does (but -0 as "-0").
fn number_arg(x: f64) -> String {
    if x.trunc() == x && x.abs() < 1e17 && !(x == 0.0 && x.is_sign_negative()) {
        itoa::Buffer::new().format(x as i64).to_string()
    } else {
        fmt_g17(x)
    }
}

/// The command a script passes to redis.call: strings as they are, numbers
/// as Redis 7.0 prints them (`%.17g`); Redis's error text otherwise.
unsafe fn command_args(
    state: *mut ffi::lua_State,
    argv: &mut run::CallArgs,
) -> Result<(), &'static str> {
    let n = ffi::lua_gettop(state);
    if n == 0 {
        return Err("Please specify at least one argument for this redis lib call");
    }
    for i in 1..=n {
        match ffi::lua_type(state, i) {
            ffi::LUA_TSTRING => {
                let mut len = 0usize;
                let p = ffi::lua_tolstring(state, i, &mut len);
                argv.push(std::slice::from_raw_parts(p as *const u8, len));
            }
            ffi::LUA_TNUMBER => {
                let x = ffi::lua_tonumber(state, i);
                // `%.17g` prints an integer below 1e17 in full, as itoa does
                // (but -0 as "-0").
                if x.trunc() == x && x.abs() < 1e17 && !(x == 0.0 && x.is_sign_negative()) {
                    argv.push(itoa::Buffer::new().format(x as i64).as_bytes());
                } else {
                    argv.push(fmt_g17(x).as_bytes());
                }
            }
            _ => return Err("Lua redis lib command arguments must be strings or integers"),
        }
    }
    Ok(())
}

// Redis's rand48: the 48-bit linear congruential generator of drand48, so a
// seed gives the same sequence everywhere. One state for the server, as in
// Redis.
const RAND48_A: u64 = 0x5_DEEC_E66D;
const RAND48_C: u64 = 0xB;
const RAND48_MASK: u64 = (1 << 48) - 1;
static RAND48: AtomicU64 = AtomicU64::new(0x1234_ABCD_330E);

fn lrand48() -> i32 {
    let x = RAND48.load(Ordering::Relaxed);
    let next = (x.wrapping_mul(RAND48_A).wrapping_add(RAND48_C)) & RAND48_MASK;
    RAND48.store(next, Ordering::Relaxed);
    (next >> 17) as i32
}

fn srand48(seed: i32) {
    RAND48.store(
        (((seed as u32) as u64) << 16 | 0x330E) & RAND48_MASK,
        Ordering::Relaxed,
    );
}

/// A number in [0, 1): Redis's `(lrand48() % INT32_MAX) / INT32_MAX`.
fn rand_unit() -> f64 {
    (lrand48() % i32::MAX) as f64 / i32::MAX as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" {
        fn srand48(seed: std::ffi::c_long);
        fn lrand48() -> std::ffi::c_long;
    }

    #[test]
    fn rand48_matches_libc_sequence() {
        for seed in [0, 1, 42, -7, i32::MAX] {
            super::srand48(seed);
            // SAFETY: plain libc calls; only this test uses libc's generator.
            unsafe { srand48(seed as std::ffi::c_long) };
            for _ in 0..5 {
                assert_eq!(super::lrand48() as i64, unsafe { lrand48() } as i64);
            }
        }
    }

    #[test]
    fn version_number() {
        assert_eq!(version_num(), 0x07000f);
    }
}
