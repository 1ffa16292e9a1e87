//! Redis 7.0 Functions: the library registry (FUNCTION LOAD / DELETE /
//! FLUSH / LIST / STATS / DUMP / RESTORE) and FCALL / FCALL_RO.
//!
//! Libraries live in a Lua interpreter of their own (SCRIPT FLUSH does not
//! touch them); a library's code runs once at load with only the library
//! API (`redis.register_function`, `redis.log`) as its globals, and its
//! registered callbacks run like EVAL scripts (run.rs, on the fiber, under
//! the exclusive gate). The DUMP payload is Redis's: RDB_OPCODE_FUNCTION2
//! and the library code as an RDB string per library, then the RDB version
//! and a CRC-64 (rdb.rs).

use super::cache::ScriptFlags;
use super::vm::Vm;
use super::{api, run};
use crate::commands::Ctx;
use crate::protocol::Args;
use hashbrown::HashMap;
use mlua::{HookTriggers, Value, VmState};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// FUNCTION LOAD's limit on running a library's code (Redis's
/// LOAD_TIMEOUT_MS); none while the log is replayed.
const LOAD_TIMEOUT: Duration = Duration::from_millis(500);
const ERR_NAME: &str = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

/// Redis's script flags, in scripts_flags_def's order (the bits sandbox.lua
/// gives them).
pub const FLAG_NAMES: [&str; 5] = [
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];

pub struct FunctionInfo {
    pub name: String,
    pub desc: Option<Vec<u8>>,
    /// Bits in FLAG_NAMES's order.
    pub flags: u32,
    pub callback: mlua::Function,
}

impl FunctionInfo {
    pub fn script_flags(&self) -> ScriptFlags {
        let has = |i: u32| self.flags & (1 << i) != 0;
        ScriptFlags {
            shebang: true,
            no_writes: has(0),
            allow_oom: has(1),
            allow_stale: has(2),
            no_cluster: has(3),
            allow_cross_slot: has(4),
        }
    }
}

pub struct Library {
    pub name: String,
    /// The whole code as loaded, shebang included (DUMP and WITHCODE).
    pub code: Vec<u8>,
    pub functions: BTreeMap<String, Arc<FunctionInfo>>,
}

/// A set of libraries and the index of their functions.
#[derive(Default)]
pub struct Libraries {
    pub libs: BTreeMap<String, Library>,
    /// Every library's functions by lowercased name: FCALL's lookup and
    /// the collision checks ignore case, as Redis's functions dict does.
    pub funcs: HashMap<String, Arc<FunctionInfo>>,
}

impl Libraries {
    fn link(&mut self, lib: Library) {
        for (name, f) in &lib.functions {
            self.funcs.insert(name.to_ascii_lowercase(), f.clone());
        }
        self.libs.insert(lib.name.clone(), lib);
    }

    fn unlink(&mut self, name: &str) -> Option<Library> {
        let lib = self.libs.remove(name)?;
        for f in lib.functions.keys() {
            self.funcs.remove(&f.to_ascii_lowercase());
        }
        Some(lib)
    }

    /// The function of this name, whatever its case.
    pub fn function(&self, name: &str) -> Option<&Arc<FunctionInfo>> {
        self.funcs.get(&name.to_ascii_lowercase())
    }

    pub fn function_count(&self) -> usize {
        self.funcs.len()
    }

    /// The libraries' code, in bytes (INFO's used_memory_functions).
    pub fn code_bytes(&self) -> usize {
        self.libs.values().map(|l| l.code.len()).sum()
    }
}

/// The registry: its interpreter and the current libraries.
#[derive(Default)]
pub struct Registry {
    vm: Option<Arc<Vm>>,
    pub current: Libraries,
}

impl Registry {
    fn vm(&mut self, memory_limit: usize) -> Result<Arc<Vm>, String> {
        if let Some(vm) = &self.vm {
            return Ok(vm.clone());
        }
        let vm = Arc::new(Vm::new(memory_limit).map_err(|e| api::error_text(&e))?);
        self.vm = Some(vm.clone());
        Ok(vm)
    }

    /// Memory the functions' interpreter uses (INFO's used_memory_vm_functions).
    pub fn memory(&self) -> usize {
        self.vm.as_ref().map_or(0, |vm| vm.memory())
    }

    /// The FUNCTION LOAD records that rebuild the libraries (AOF rewrite).
    pub fn load_records(&self) -> Vec<Vec<Vec<u8>>> {
        self.current
            .libs
            .values()
            .map(|l| vec![b"FUNCTION".to_vec(), b"LOAD".to_vec(), l.code.clone()])
            .collect()
    }
}

struct Metadata {
    name: String,
    engine: Vec<u8>,
    /// The code after the shebang line (from its newline on).
    code_at: usize,
}

/// Reads the `#!<engine> name=<library>` line (functionExtractLibMetaData).
fn metadata(code: &[u8]) -> Result<Metadata, String> {
    if !code.starts_with(b"#!") {
        return Err("Missing library metadata".into());
    }
    let Some(end) = code.iter().position(|&c| c == b'\n') else {
        return Err("Invalid library metadata".into());
    };
    let parts = blinkdb_engine::split_args(&code[..end])
        .filter(|p| !p.is_empty())
        .ok_or_else(|| "Invalid library metadata".to_string())?;
    let engine = parts[0][2..].to_vec();
    let mut name = None;
    for part in &parts[1..] {
        if part.len() >= 5 && part[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err(
                    "Invalid metadata value, name argument was given multiple times".into(),
                );
            }
            name = Some(String::from_utf8_lossy(&part[5..]).into_owned());
            continue;
        }
        return Err(format!(
            "Invalid metadata value given: {}",
            String::from_utf8_lossy(part)
        ));
    }
    let name = name.ok_or_else(|| "Library name was not given".to_string())?;
    Ok(Metadata {
        name,
        engine,
        code_at: end,
    })
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// The text of an error the library's code raised (luaExtractErrorInformation).
fn load_error_text(v: &Value) -> String {
    match v {
        Value::String(s) => format!("ERR {}", String::from_utf8_lossy(&s.as_bytes())),
        Value::Table(t) => match t.raw_get::<Value>("err") {
            Ok(Value::String(s)) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
            _ => "ERR unknown error".into(),
        },
        Value::Error(e) => format!("ERR {}", api::error_text(e)),
        Value::Integer(i) => format!("ERR {i}"),
        Value::Number(n) => format!("ERR {n}"),
        _ => "ERR unknown error".into(),
    }
}

/// Compiles and runs a library's code; its functions on success.
fn run_library(
    vm: &Vm,
    name: &str,
    body: &[u8],
    timeout: bool,
) -> Result<BTreeMap<String, Arc<FunctionInfo>>, String> {
    let func = vm
        .compile_as(body, "@user_function")
        .map_err(|e| format!("Error compiling function: {e}"))?;
    let lua = &vm.lua;
    if timeout {
        let started = Instant::now();
        lua.set_hook(
            HookTriggers::new().every_nth_instruction(100_000),
            move |lua, _| {
                if started.elapsed() > LOAD_TIMEOUT {
                    // Every instruction fails from now on, so that pcall in
                    // the library cannot go on (Redis's line hook).
                    lua.set_hook(HookTriggers::new().every_nth_instruction(1), |_, _| {
                        Err(mlua::Error::runtime("FUNCTION LOAD timeout"))
                    });
                    return Err(mlua::Error::runtime("FUNCTION LOAD timeout"));
                }
                Ok(VmState::Continue)
            },
        );
    }
    let result = vm.load_library.call::<(bool, Value)>(func);
    lua.remove_hook();
    vm.note_heap();
    let regs = match result {
        Ok((true, Value::Table(regs))) => regs,
        Ok((_, e)) => {
            return Err(format!(
                "Error registering functions: {}",
                load_error_text(&e)
            ))
        }
        Err(e) => {
            return Err(format!(
                "Error registering functions: ERR {}",
                api::error_text(&e)
            ))
        }
    };
    let _ = name;
    let mut functions = BTreeMap::new();
    for reg in regs.sequence_values::<mlua::Table>() {
        let reg = reg.map_err(|e| api::error_text(&e))?;
        let fname: String = reg.raw_get(1).map_err(|e| api::error_text(&e))?;
        let callback: mlua::Function = reg.raw_get(2).map_err(|e| api::error_text(&e))?;
        let flags: f64 = reg.raw_get(3).map_err(|e| api::error_text(&e))?;
        let desc: Option<mlua::String> = reg.raw_get(4).map_err(|e| api::error_text(&e))?;
        functions.insert(
            fname.clone(),
            Arc::new(FunctionInfo {
                name: fname,
                desc: desc.map(|d| d.as_bytes().to_vec()),
                flags: flags as u32,
                callback,
            }),
        );
    }
    Ok(functions)
}

/// Loads a library into `libs` (functionsCreateWithLibraryCtx); its name,
/// or the error text (without its ERR code).
fn create(
    vm: &Vm,
    code: &[u8],
    replace: bool,
    libs: &mut Libraries,
    timeout: bool,
) -> Result<String, String> {
    let md = metadata(code)?;
    if !valid_name(&md.name) {
        return Err(ERR_NAME.into());
    }
    if !md.engine.eq_ignore_ascii_case(b"lua") {
        return Err(format!(
            "Engine '{}' not found",
            String::from_utf8_lossy(&md.engine)
        ));
    }
    if libs.libs.contains_key(&md.name) && !replace {
        return Err(format!("Library '{}' already exists", md.name));
    }
    let old = libs.unlink(&md.name);
    let result = (|| {
        let functions = run_library(vm, &md.name, &code[md.code_at..], timeout)?;
        if functions.is_empty() {
            return Err("No functions registered".to_string());
        }
        if let Some(f) = functions.keys().find(|f| libs.function(f).is_some()) {
            return Err(format!("Function {f} already exists"));
        }
        Ok(functions)
    })();
    match result {
        Ok(functions) => {
            libs.link(Library {
                name: md.name.clone(),
                code: code.to_vec(),
                functions,
            });
            Ok(md.name)
        }
        Err(e) => {
            if let Some(old) = old {
                libs.link(old);
            }
            Err(e)
        }
    }
}

/// Moves `src` into `dst` (libraryJoin): with `replace`, libraries of the
/// same name are replaced; a function name taken in `dst` aborts it all.
fn join(dst: &mut Libraries, src: Libraries, replace: bool) -> Result<(), String> {
    let mut replaced = Vec::new();
    for name in src.libs.keys() {
        if dst.libs.contains_key(name) {
            if !replace {
                for old in replaced {
                    dst.link(old);
                }
                return Err(format!("Library {name} already exists"));
            }
            replaced.extend(dst.unlink(name));
        }
    }
    if let Some(f) = src.funcs.values().find(|f| dst.function(&f.name).is_some()) {
        let e = format!("Function {} already exists", f.name);
        for old in replaced {
            dst.link(old);
        }
        return Err(e);
    }
    for (_, lib) in src.libs {
        dst.link(lib);
    }
    Ok(())
}

fn vm_or_reply(ctx: &mut Ctx, reg: &mut Registry) -> Option<Arc<Vm>> {
    let limit = ctx.client.settings(ctx.shared).lua_memory_limit;
    match reg.vm(limit) {
        Ok(vm) => Some(vm),
        Err(e) => {
            ctx.out
                .error(&format!("ERR can't start the Lua interpreter: {e}"));
            None
        }
    }
}

/// Logs a FUNCTION command that changed the libraries, as Redis propagates it.
fn log(ctx: &mut Ctx, args: &Args) {
    let (lsn, _) = ctx.shared.engine.log(ctx.client.db, args);
    ctx.client.note_lsn(lsn);
}

fn replaying(ctx: &Ctx) -> bool {
    ctx.shared.engine.is_loading()
}

const HELP: &[&str] = &[
    "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
    "HELP",
    "    Prints this help.",
];

fn syntax_error(ctx: &mut Ctx, args: &Args) {
    ctx.out.error(&format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try FUNCTION HELP.",
        String::from_utf8_lossy(args[1])
    ));
}

/// FUNCTION <subcommand>: the table resolved the subcommand and checked
/// its arity.
pub fn function(ctx: &mut Ctx, args: &Args) {
    let sub = String::from_utf8_lossy(args[1]).to_ascii_lowercase();
    match sub.as_str() {
        "load" => load(ctx, args),
        "delete" => delete(ctx, args),
        "flush" => flush(ctx, args),
        "list" => list(ctx, args),
        "stats" => stats(ctx),
        "kill" => super::kill(ctx, true),
        "dump" => dump(ctx),
        "restore" => restore(ctx, args),
        "help" => ctx.out.help(HELP),
        _ => syntax_error(ctx, args),
    }
}

fn load(ctx: &mut Ctx, args: &Args) {
    let mut replace = false;
    let mut at = 2;
    while at < args.len() - 1 {
        let a = args[at];
        at += 1;
        if a.eq_ignore_ascii_case(b"replace") {
            replace = true;
            continue;
        }
        return ctx.out.error(&format!(
            "ERR Unknown option given: {}",
            String::from_utf8_lossy(a)
        ));
    }
    if at >= args.len() {
        return ctx.out.error("ERR Function code is missing");
    }
    let code = args[at];
    let shared = ctx.shared;
    let mut reg = shared.scripting.functions.lock();
    let Some(vm) = vm_or_reply(ctx, &mut reg) else {
        return;
    };
    let timeout = !replaying(ctx);
    match create(&vm, code, replace, &mut reg.current, timeout) {
        Ok(name) => {
            log(ctx, args);
            ctx.out.bulk(name.as_bytes());
        }
        Err(e) => ctx.out.error(&format!("ERR {e}")),
    }
}

fn delete(ctx: &mut Ctx, args: &Args) {
    let shared = ctx.shared;
    let mut reg = shared.scripting.functions.lock();
    let name = String::from_utf8_lossy(args[2]);
    if reg.current.unlink(&name).is_none() {
        return ctx.out.error("ERR Library not found");
    }
    log(ctx, args);
    ctx.out.ok();
}

fn flush(ctx: &mut Ctx, args: &Args) {
    if args.len() > 3 {
        return syntax_error(ctx, args);
    }
    let lazy = match args.get(2) {
        // lazyfree-lazy-user-flush's default (BlinkDB has no such setting).
        None => false,
        Some(m) if m.eq_ignore_ascii_case(b"sync") => false,
        Some(m) if m.eq_ignore_ascii_case(b"async") => true,
        Some(_) => {
            return ctx
                .out
                .error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
        }
    };
    let shared = ctx.shared;
    let mut reg = shared.scripting.functions.lock();
    // A new interpreter: the old one's memory goes with its libraries.
    let old = std::mem::take(&mut *reg);
    log(ctx, args);
    drop(reg);
    if lazy {
        std::thread::spawn(move || drop(old));
    } else {
        drop(old);
    }
    ctx.out.ok();
}

fn list(ctx: &mut Ctx, args: &Args) {
    let mut with_code = false;
    let mut pattern: Option<&[u8]> = None;
    let mut i = 2;
    while i < args.len() {
        let a = args[i];
        if !with_code && a.eq_ignore_ascii_case(b"withcode") {
            with_code = true;
        } else if pattern.is_none() && a.eq_ignore_ascii_case(b"libraryname") {
            if i >= args.len() - 1 {
                return ctx.out.error("ERR library name argument was not given");
            }
            i += 1;
            pattern = Some(args[i]);
        } else {
            return ctx.out.error(&format!(
                "ERR Unknown argument {}",
                String::from_utf8_lossy(a)
            ));
        }
        i += 1;
    }
    let reg = ctx.shared.scripting.functions.lock();
    let libs: Vec<&Library> = reg
        .current
        .libs
        .values()
        .filter(|l| pattern.is_none_or(|p| blinkdb_engine::glob_match(p, l.name.as_bytes(), false)))
        .collect();
    let out = &mut *ctx.out;
    out.array(libs.len());
    for lib in libs {
        out.map(if with_code { 4 } else { 3 });
        out.bulk(b"library_name");
        out.bulk(lib.name.as_bytes());
        out.bulk(b"engine");
        out.bulk(b"LUA");
        out.bulk(b"functions");
        out.array(lib.functions.len());
        for f in lib.functions.values() {
            out.map(3);
            out.bulk(b"name");
            out.bulk(f.name.as_bytes());
            out.bulk(b"description");
            match &f.desc {
                Some(d) => out.bulk(d),
                None => out.null(),
            }
            out.bulk(b"flags");
            let names: Vec<&str> = FLAG_NAMES
                .iter()
                .enumerate()
                .filter(|(i, _)| f.flags & (1 << i) != 0)
                .map(|(_, n)| *n)
                .collect();
            out.set(names.len());
            for n in names {
                out.simple(n);
            }
        }
        if with_code {
            out.bulk(b"library_code");
            out.bulk(&lib.code);
        }
    }
}

fn stats(ctx: &mut Ctx) {
    let state = &ctx.shared.scripting;
    let running = state.current.lock().clone();
    if let Some(r) = &running {
        if !r.function {
            return ctx.out.error(super::ERR_BUSY);
        }
    }
    let (libs, funcs) = {
        let reg = state.functions.lock();
        (reg.current.libs.len(), reg.current.function_count())
    };
    let out = &mut *ctx.out;
    out.map(2);
    out.bulk(b"running_script");
    match running {
        None => out.null(),
        Some(r) => {
            out.map(3);
            out.bulk(b"name");
            out.bulk(r.name.as_bytes());
            out.bulk(b"command");
            out.array(r.argv.len());
            for a in &r.argv {
                out.bulk(a);
            }
            out.bulk(b"duration_ms");
            out.int(r.started.elapsed().as_millis() as i64);
        }
    }
    out.bulk(b"engines");
    out.map(1);
    out.bulk(b"LUA");
    out.map(2);
    out.bulk(b"libraries_count");
    out.int(libs as i64);
    out.bulk(b"functions_count");
    out.int(funcs as i64);
}

/// Every library's code, for SAVE.
pub fn library_codes(shared: &crate::server::state::Shared) -> Vec<Vec<u8>> {
    let reg = shared.scripting.functions.lock();
    reg.current.libs.values().map(|l| l.code.to_vec()).collect()
}

fn dump(ctx: &mut Ctx) {
    let reg = ctx.shared.scripting.functions.lock();
    let codes: Vec<&[u8]> = reg.current.libs.values().map(|l| &l.code[..]).collect();
    let payload = super::rdb::dump_payload(&codes);
    drop(reg);
    ctx.out.bulk(&payload);
}

#[derive(PartialEq)]
enum Policy {
    Append,
    Replace,
    Flush,
}

fn restore(ctx: &mut Ctx, args: &Args) {
    if args.len() > 4 {
        return syntax_error(ctx, args);
    }
    let policy =
        match args.get(3) {
            None => Policy::Append,
            Some(p) if p.eq_ignore_ascii_case(b"append") => Policy::Append,
            Some(p) if p.eq_ignore_ascii_case(b"replace") => Policy::Replace,
            Some(p) if p.eq_ignore_ascii_case(b"flush") => Policy::Flush,
            Some(_) => return ctx.out.error(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            ),
        };
    let codes = match super::rdb::parse_payload(args[2]) {
        Ok(codes) => codes,
        Err(e) => return ctx.out.error(&format!("ERR {e}")),
    };
    let shared = ctx.shared;
    let mut reg = shared.scripting.functions.lock();
    let Some(vm) = vm_or_reply(ctx, &mut reg) else {
        return;
    };
    let mut fresh = Libraries::default();
    for code in &codes {
        if let Err(e) = create(&vm, code, false, &mut fresh, false) {
            return ctx.out.error(&format!("ERR {e}"));
        }
    }
    if policy == Policy::Flush {
        let old = std::mem::replace(&mut reg.current, fresh);
        drop(old);
    } else if let Err(e) = join(&mut reg.current, fresh, policy == Policy::Replace) {
        return ctx.out.error(&format!("ERR {e}"));
    }
    log(ctx, args);
    ctx.out.ok();
}

/// FCALL and FCALL_RO.
pub fn fcall(ctx: &mut Ctx, args: &Args, ro: bool) {
    let gate = ctx.client.script_gate.take();
    super::feed_monitors(ctx, args);
    let name = String::from_utf8_lossy(args[1]).into_owned();
    let (func, vm) = {
        let reg = ctx.shared.scripting.functions.lock();
        match (reg.current.function(&name), &reg.vm) {
            (Some(f), Some(vm)) => (f.clone(), vm.clone()),
            _ => return ctx.out.error("ERR Function not found"),
        }
    };
    let Some(numkeys) = super::numkeys(ctx, args, "ERR Bad number of keys provided") else {
        return;
    };
    let flags = func.script_flags();
    if let Err(e) = super::check_flags(ctx, flags, ro) {
        return ctx.out.error(&e);
    }
    let call = super::Call {
        name: Arc::from(&*func.name),
        read_only: ro || flags.no_writes,
        allow_oom: flags.allow_oom,
        vm,
        target: run::Target::Function(func.callback.clone()),
        function: true,
        // FCALL is never debugged (as in Redis).
        debug: None,
    };
    super::start_call(ctx, args, gate, numkeys, call);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_errors() {
        assert_eq!(metadata(b"x").err().unwrap(), "Missing library metadata");
        assert_eq!(
            metadata(b"#!lua").err().unwrap(),
            "Invalid library metadata"
        );
        assert_eq!(
            metadata(b"#!lua\n").err().unwrap(),
            "Library name was not given"
        );
        assert_eq!(
            metadata(b"#!lua foo=bar\n").err().unwrap(),
            "Invalid metadata value given: foo=bar"
        );
        let md = metadata(b"#!lua name=lib\nreturn").unwrap();
        assert_eq!(md.name, "lib");
        assert_eq!(md.engine, b"lua");
        assert_eq!(md.code_at, 14);
    }
}
