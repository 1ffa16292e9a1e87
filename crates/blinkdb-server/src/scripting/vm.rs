//! One Lua 5.1 interpreter with Redis's sandbox (sandbox.lua), its
//! libraries, and the scripts compiled into it. SCRIPT FLUSH replaces the
//! whole interpreter, as Redis does.

use super::api;
use super::cache::{ScriptFlags, Sha};
use hashbrown::HashMap;
use mlua::{ChunkMode, Function, Lua, LuaOptions, StdLib, Table};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// A full garbage collection runs after the script that leaves this many
/// bytes more than the last one left (see `Vm::collect_garbage`).
const GC_SLACK: usize = 24 << 10;
/// Work for one LUA_GCSTEP, in Lua's units (as if this many KB had been
/// allocated): enough to end a cycle over a heap of a few hundred KB; a
/// larger heap's cycle goes on in the steps Lua takes as scripts allocate.
const GC_STEP_KB: std::ffi::c_int = 1024;

const SANDBOX: &str = include_str!("sandbox.lua");

/// sandbox.lua compiled without debug information (bytecode.rs), made once
/// per process with the first interpreter; None if this build's bytecode
/// is not the format the stripper knows (the text is loaded instead).
fn sandbox_bytecode(lua: &Lua) -> mlua::Result<Option<&'static [u8]>> {
    static STRIPPED: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    if let Some(code) = STRIPPED.get() {
        return Ok(code.as_deref());
    }
    let dump = lua
        .load(SANDBOX)
        .set_name("=sandbox")
        .set_mode(ChunkMode::Text)
        .into_function()?
        .dump(false);
    Ok(STRIPPED
        .get_or_init(|| super::bytecode::strip(&dump))
        .as_deref())
}

/// A script compiled into the interpreter.
pub struct Compiled {
    pub func: Function,
    pub flags: ScriptFlags,
    pub body_len: usize,
}

pub struct Vm {
    pub lua: Lua,
    env: Table,
    /// Runs a compiled script under the error handler: `(ok, result)`.
    pub driver: Function,
    /// Runs a library's code for FUNCTION LOAD: `(ok, registered | error)`.
    pub load_library: Function,
    /// Runs a registered function with `(keys, args)` under the error
    /// handler: `(ok, result)`.
    pub call_function: Function,
    pub scripts: Mutex<HashMap<Sha, Arc<Compiled>>>,
    /// Bytes the interpreter may allocate (0: no limit).
    pub memory_limit: usize,
    /// The heap's size after the last full collection.
    gc_base: AtomicUsize,
    /// The heap's size after the last script: what INFO and the memory cron
    /// read, without waiting for the interpreter's lock while a script runs
    /// (the cron runs on the thread that accepts connections).
    heap_seen: AtomicUsize,
}

impl Vm {
    pub fn new(memory_limit: usize) -> mlua::Result<Vm> {
        // SAFETY: the debug library is only used by sandbox.lua, which keeps
        // getinfo for its error handler and removes `debug` from the globals.
        let lua = unsafe {
            Lua::unsafe_new_with(
                StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG,
                LuaOptions::new(),
            )
        };
        super::libs::register(&lua)?;
        let native = api::native_table(&lua)?;
        let sandbox = match sandbox_bytecode(&lua)? {
            Some(code) => lua.load(code).set_mode(ChunkMode::Binary),
            None => lua.load(SANDBOX).set_mode(ChunkMode::Text),
        };
        let (env, driver, load_library, call_function): (Table, Function, Function, Function) =
            sandbox.set_name("=sandbox").call(native)?;
        if memory_limit > 0 {
            lua.set_memory_limit(memory_limit)?;
        }

        let heap = lua.used_memory();
        Ok(Vm {
            lua,
            env,
            driver,
            load_library,
            call_function,
            scripts: Mutex::new(HashMap::new()),
            memory_limit,
            gc_base: AtomicUsize::new(0),
            heap_seen: AtomicUsize::new(heap),
        })
    }

    /// The sandbox environment scripts run in (the debugger's `eval` and
    /// `print KEYS` read it).
    pub fn env(&self) -> Table {
        self.env.clone()
    }

    /// Compiles a script body (without its shebang line) as Redis does:
    /// chunk name `@user_script`, text only, in the sandbox environment.
    pub fn compile(&self, code: &[u8]) -> Result<Function, String> {
        self.compile_as(code, "@user_script")
    }

    /// Compiles code under a chunk name (`@user_function` for a library).
    pub fn compile_as(&self, code: &[u8], chunk: &str) -> Result<Function, String> {
        self.lua
            .load(code)
            .set_name(chunk)
            .set_mode(ChunkMode::Text)
            .set_environment(self.env.clone())
            .into_function()
            .map_err(|e| match e {
                mlua::Error::SyntaxError { message, .. } => message,
                other => api::error_text(&other),
            })
    }

    pub fn get(&self, sha: &Sha) -> Option<Arc<Compiled>> {
        self.scripts.lock().get(sha).cloned()
    }

    /// The interpreter's heap as the last script left it.
    pub fn memory(&self) -> usize {
        self.heap_seen.load(Ordering::Relaxed)
    }

    /// Called after each script. Redis steps the collector through a whole
    /// cycle every 50 scripts, so that no script pays for one; here a
    /// cycle runs once the scripts have left GC_SLACK bytes of garbage, so
    /// that scripts that leave less garbage pay less often (each cycle
    /// marks the whole heap, ~68 KB here: the sandbox is Lua code where
    /// Redis's is C, though loaded without debug information, bytecode.rs). The heap stays within the slack of what is live, as
    /// Redis's does (its suite checks 10,000 scripts leave under 100 KB).
    pub fn collect_garbage(&self) {
        self.collect();
        self.note_heap();
    }

    /// Records the heap's size for `memory` (after a script, a library's load).
    pub fn note_heap(&self) {
        self.heap_seen
            .store(self.lua.used_memory(), Ordering::Relaxed);
    }

    fn collect(&self) {
        let used = self.lua.used_memory();
        let base = self.gc_base.load(Ordering::Relaxed);
        if used < base {
            // Lua's own collector ran (a script that allocated much).
            self.gc_base.store(used, Ordering::Relaxed);
            return;
        }
        if self.memory_limit > 0 && used > self.memory_limit / 2 {
            let _ = self.lua.gc_collect();
            self.gc_base
                .store(self.lua.used_memory(), Ordering::Relaxed);
        } else if used >= base + GC_SLACK {
            // Incremental steps to the cycle's end: a full collection
            // (LUA_GCCOLLECT) sweeps the whole heap twice.
            if let Ok(true) = self.lua.gc_step_kbytes(GC_STEP_KB) {
                self.gc_base
                    .store(self.lua.used_memory(), Ordering::Relaxed);
            }
        }
    }
}
