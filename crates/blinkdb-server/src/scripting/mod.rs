//! Lua scripting with Redis 7.0's semantics: EVAL, EVALSHA and their _RO
//! forms, SCRIPT LOAD / EXISTS / FLUSH / KILL, and Functions (FUNCTION *,
//! FCALL, FCALL_RO: functions.rs, rdb.rs).
//!
//! - vm.rs: the interpreter, its sandbox (sandbox.lua) and compiled scripts
//! - bytecode.rs: the sandbox's bytecode without debug information
//! - api.rs: the native half of the `redis` table
//! - convert.rs: replies to Lua values and back
//! - cache.rs: SHA1 names and `#!lua` flags
//! - ldb/: the Lua debugger (SCRIPT DEBUG SYNC)
//! - run.rs: one script's run, on a fiber, and the commands it calls
//! - libs/: cjson, cmsgpack, bit and struct
//!
//! A script runs with every other command held out (the exec gate taken
//! exclusively, as EXEC does). Past `busy-reply-threshold` other clients
//! get BUSY and may send SCRIPT KILL (docs/design.md, "Scripting").

mod api;
mod bytecode;
pub mod cache;
mod convert;
pub mod functions;
mod ldb;
mod libs;
pub mod rdb;
pub mod run;
mod vm;

use crate::commands::{CommandSpec, Ctx};
use crate::protocol::Args;
use crate::server::state::Shared;
use cache::{ScriptFlags, Sha};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use vm::{Compiled, Vm};

/// `lua-enable-deprecated-api` (immutable, as in Redis): only `no`, as
/// BlinkDB's Lua has no switch to bring setfenv, getfenv and newproxy back.
pub const DEPRECATED_API_CHECK: crate::config::Check = crate::config::Check {
    option: "lua-enable-deprecated-api",
    check: |v| match v {
        "no" => Ok(v.to_string()),
        _ => Err("BlinkDB's Lua offers no switch for setfenv, getfenv and newproxy".into()),
    },
};

pub const ERR_NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";
pub const ERR_BUSY: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
/// BUSY while a function (FCALL) runs.
pub const ERR_BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";

/// The script or function running (FUNCTION STATS, the BUSY texts).
#[derive(Clone)]
pub struct Current {
    pub name: Arc<str>,
    pub argv: Vec<Vec<u8>>,
    pub started: std::time::Instant,
    /// A function (FCALL), not an EVAL script.
    pub function: bool,
    /// Sent by our master (SCRIPT KILL refuses to stop it).
    pub from_master: bool,
}

/// The scripting state shared by all connections.
#[derive(Default)]
pub struct Scripting {
    vm: Mutex<Option<Arc<Vm>>>,
    /// A script is running.
    running: AtomicBool,
    /// The running script is past busy-reply-threshold: other clients get
    /// BUSY instead of waiting for it.
    pub busy: AtomicBool,
    /// SCRIPT KILL asked the running script to stop.
    kill: AtomicBool,
    /// The running script has written (SCRIPT KILL refuses it).
    dirty: AtomicBool,
    /// What runs, while `running`.
    current: Mutex<Option<Current>>,
    /// The Functions libraries and their interpreter.
    pub functions: Mutex<functions::Registry>,
}

impl Scripting {
    fn started(&self) {
        self.kill.store(false, Ordering::Release);
        self.dirty.store(false, Ordering::Release);
        self.running.store(true, Ordering::Release);
    }

    fn set_current(&self, current: Current) {
        *self.current.lock() = Some(current);
    }

    /// The BUSY error other clients get now: its text names the KILL that
    /// stops what runs.
    pub fn busy_error(&self) -> &'static str {
        match &*self.current.lock() {
            Some(c) if c.function => ERR_BUSY_FUNCTION,
            _ => ERR_BUSY,
        }
    }

    fn ended(&self) {
        *self.current.lock() = None;
        self.running.store(false, Ordering::Release);
        self.busy.store(false, Ordering::Release);
        self.kill.store(false, Ordering::Release);
        self.dirty.store(false, Ordering::Release);
    }

    fn wrote(&self) {
        self.dirty.store(true, Ordering::Release);
    }

    fn killed(&self) -> bool {
        self.kill.load(Ordering::Acquire)
    }

    pub fn is_busy(&self) -> bool {
        self.busy.load(Ordering::Acquire)
    }

    /// The interpreter, made on first use.
    fn vm(&self, memory_limit: usize) -> Result<Arc<Vm>, String> {
        let mut vm = self.vm.lock();
        if let Some(vm) = vm.as_ref() {
            return Ok(vm.clone());
        }
        let made = Arc::new(Vm::new(memory_limit).map_err(|e| api::error_text(&e))?);
        *vm = Some(made.clone());
        Ok(made)
    }

    /// INFO memory's scripting fields, in Redis 7.0's order and names.
    /// The interpreters' memory: EVAL's and FUNCTION's (INFO
    /// `used_memory_vm_eval`, `used_memory_vm_functions`).
    pub fn vm_memory(&self) -> (usize, usize) {
        let eval_vm = self.vm.lock().as_ref().map_or(0, |vm| vm.memory());
        (eval_vm, self.functions.lock().memory())
    }

    /// What the script caches hold, as Redis's `lua.caches` and
    /// `functions.caches` count it: each cached script's SHA (40 bytes) and
    /// body, and the libraries' code.
    pub fn caches(&self) -> (usize, usize) {
        let (cached, bodies) = self.cached_scripts();
        (
            cached * 40 + bodies,
            self.functions.lock().current.code_bytes(),
        )
    }

    /// The number of cached scripts (MEMORY DOCTOR's "many scripts").
    pub fn cached_script_count(&self) -> usize {
        self.cached_scripts().0
    }

    /// The number of cached scripts and the sum of their bodies.
    fn cached_scripts(&self) -> (usize, usize) {
        self.vm.lock().as_ref().map_or((0, 0), |vm| {
            let scripts = vm.scripts.lock();
            (scripts.len(), scripts.values().map(|c| c.body_len).sum())
        })
    }

    pub fn info_memory(&self, o: &mut String) {
        use std::fmt::Write;
        let (eval_vm, functions_vm) = self.vm_memory();
        let (cached, _) = self.cached_scripts();
        let (scripts_eval, libraries) = self.caches();
        let (functions, libs) = {
            let registry = self.functions.lock();
            (
                registry.current.function_count(),
                registry.current.libs.len(),
            )
        };
        let human = |b: usize| crate::memory::human(b as u64);
        let _ = write!(
            o,
            "used_memory_lua:{eval_vm}\r\nused_memory_vm_eval:{eval_vm}\r\nused_memory_lua_human:{}\r\nused_memory_scripts_eval:{scripts_eval}\r\nnumber_of_cached_scripts:{cached}\r\nnumber_of_functions:{functions}\r\nnumber_of_libraries:{libs}\r\nused_memory_vm_functions:{functions_vm}\r\nused_memory_vm_total:{}\r\nused_memory_vm_total_human:{}\r\nused_memory_functions:{libraries}\r\nused_memory_scripts:{}\r\nused_memory_scripts_human:{}\r\n",
            human(eval_vm),
            eval_vm + functions_vm,
            human(eval_vm + functions_vm),
            scripts_eval + libraries,
            human(scripts_eval + libraries),
        );
    }
}

/// The flags a script command is checked with (pause, MULTI), as Redis's
/// getCommandFlags makes them: a script or function that declares flags
/// (a shebang, or any function) is a write only without `no-writes`, and no
/// longer "may replicate"; without declared flags, the command's own flags.
pub fn command_flags(shared: &Shared, spec: &CommandSpec, args: &[&[u8]]) -> u32 {
    use crate::commands::table::{props, DENYOOM, MAY_REPLICATE, STALE, WRITE};
    let spec_flags = spec.flags;
    if !spec.has_prop(props::RUNS_SCRIPT) || args.len() < 2 {
        return spec_flags;
    }
    let declared = if spec.has_prop(props::CALLS_FUNCTION) {
        let fname = String::from_utf8_lossy(args[1]);
        shared
            .scripting
            .functions
            .lock()
            .current
            .function(&fname)
            .map(|f| f.script_flags())
    } else if spec.has_prop(props::BY_SHA) {
        let vm = shared.scripting.vm.lock().clone();
        cache::parse_sha(args[1])
            .zip(vm)
            .and_then(|(sha, vm)| vm.get(&sha))
            .map(|c| c.flags)
    } else {
        cache::shebang(args[1]).ok().map(|(f, _)| f)
    };
    match declared {
        Some(f) if f.shebang => {
            let mut flags = spec_flags & !(STALE | DENYOOM | WRITE | MAY_REPLICATE);
            if !f.no_writes {
                flags |= WRITE;
                if !f.allow_oom {
                    flags |= DENYOOM;
                }
            }
            if f.allow_stale {
                flags |= STALE;
            }
            flags
        }
        _ => spec_flags,
    }
}

/// Finds a script by body, compiling it into the cache if new; the reply
/// error text on failure.
fn load(vm: &Vm, body: &[u8]) -> Result<(Sha, Arc<Compiled>), String> {
    let sha = cache::sha1hex(body);
    if let Some(c) = vm.get(&sha) {
        return Ok((sha, c));
    }
    let (flags, skip) = cache::shebang(body).map_err(|e| format!("ERR {e}"))?;
    let func = vm
        .compile(&body[skip..])
        .map_err(|e| format!("ERR Error compiling script (new function): {e}"))?;
    let compiled = Arc::new(Compiled {
        func,
        flags,
        body_len: body.len(),
    });
    vm.scripts.lock().insert(sha, compiled.clone());
    Ok((sha, compiled))
}

fn vm_for(ctx: &mut Ctx) -> Option<Arc<Vm>> {
    let limit = ctx.client.settings(ctx.shared).lua_memory_limit;
    match ctx.shared.scripting.vm(limit) {
        Ok(vm) => Some(vm),
        Err(e) => {
            ctx.out
                .error(&format!("ERR can't start the Lua interpreter: {e}"));
            None
        }
    }
}

/// EVAL, EVALSHA, EVAL_RO and EVALSHA_RO.
pub fn eval(ctx: &mut Ctx, args: &Args, by_sha: bool, ro: bool) {
    let gate = ctx.client.script_gate.take();
    feed_monitors(ctx, args);
    if by_sha && args[1].len() != 40 {
        return ctx.out.error(ERR_NOSCRIPT);
    }
    let debug = ctx.client.script_debug;
    if debug && by_sha {
        return ctx
            .out
            .error("ERR Please use EVAL instead of EVALSHA for debugging");
    }
    if debug && gate.is_none() {
        // Inside EXEC (no exclusive gate of its own): the debugger's stops
        // would let the transaction's next commands run before the script
        // ends. Redis debugs it there, blocking the server in a read.
        return ctx.out.error(
            "ERR Lua debugging is not supported inside MULTI/EXEC: run the EVAL outside the transaction",
        );
    }
    let Some(numkeys) = numkeys(ctx, args, crate::commands::args::ERR_NOT_INT) else {
        return;
    };
    let Some(vm) = vm_for(ctx) else { return };
    let (sha, compiled) = if by_sha {
        let sha = cache::parse_sha(args[1]).expect("length checked");
        match vm.get(&sha) {
            Some(c) => (sha, c),
            None => return ctx.out.error(ERR_NOSCRIPT),
        }
    } else {
        match load(&vm, args[1]) {
            Ok(found) => found,
            Err(e) => return ctx.out.error(&e),
        }
    };
    if let Err(e) = check_flags(ctx, compiled.flags, ro) {
        return ctx.out.error(&e);
    }
    let flags = compiled.flags;
    let call = Call {
        name: Arc::from(&*String::from_utf8_lossy(&sha)),
        read_only: ro || (flags.shebang && flags.no_writes),
        allow_oom: flags.shebang && flags.allow_oom,
        vm,
        target: run::Target::Script(compiled),
        function: false,
        debug: debug.then_some(args[1]),
    };
    start_call(ctx, args, gate, numkeys, call);
}

/// Feeds MONITOR an EVAL or FCALL before the script runs, so that its
/// commands follow it (EVAL and FCALL skip MONITOR's feed after the call).
pub(crate) fn feed_monitors(ctx: &mut Ctx, args: &Args) {
    if ctx.shared.diagnostics.monitors.active() {
        if let Some(Ok(spec)) = crate::commands::table::resolve(args) {
            let (info, db) = (&*ctx.client.info, ctx.client.db);
            crate::commands::monitor::feed(
                &ctx.shared.diagnostics.monitors,
                Some(info),
                db,
                spec,
                args,
            );
        }
    }
}

/// EVAL's and FCALL's `numkeys` (args[2]), checked as Redis does; `not_int`
/// is the error for one that is not a number (EVAL's and FCALL's differ).
/// None: the error was replied.
pub(crate) fn numkeys(ctx: &mut Ctx, args: &Args, not_int: &str) -> Option<usize> {
    let Some(numkeys) = crate::commands::args::parse_i64(args[2]) else {
        ctx.out.error(not_int);
        return None;
    };
    if numkeys > args.len() as i64 - 3 {
        ctx.out
            .error("ERR Number of keys can't be greater than number of args");
        return None;
    }
    if numkeys < 0 {
        ctx.out.error("ERR Number of keys can't be negative");
        return None;
    }
    Some(numkeys as usize)
}

/// What differs between running EVAL's script and FCALL's function.
pub(crate) struct Call<'a> {
    /// The script's SHA1 or the function's name.
    pub name: Arc<str>,
    pub read_only: bool,
    pub allow_oom: bool,
    pub vm: Arc<Vm>,
    pub target: run::Target,
    pub function: bool,
    /// SCRIPT DEBUG SYNC: the body of the script to debug.
    pub debug: Option<&'a [u8]>,
}

/// Runs a checked EVAL or FCALL: keys are args[3..3 + numkeys], the
/// arguments the rest; `gate` the exclusive token the caller took first.
pub(crate) fn start_call(
    ctx: &mut Ctx,
    args: &Args,
    gate: Option<crate::exec::gate::ExclusiveToken>,
    numkeys: usize,
    call: Call,
) {
    let threshold_ms = ctx.client.settings(ctx.shared).busy_reply_threshold_ms;
    let state = run::RunState {
        name: call.name.clone(),
        read_only: call.read_only,
        allow_oom: call.allow_oom,
        caller_db: ctx.client.db,
        wrote: false,
        multi_logged: false,
        clock_ms: blinkdb_engine::now_ms(),
        gate,
        tracked_keys: match ctx.client.tracking {
            Some(_) => args[3..3 + numkeys].iter().map(|a| a.to_vec()).collect(),
            None => Vec::new(),
        },
        debugger_waiting: false,
        client_gone: false,
        paused_call: None,
    };
    let may_pause = state.gate.is_some() && crate::net::io_threads::on_connection_thread();
    let launch = run::Launch {
        vm: call.vm,
        target: call.target,
        keys: &args[3..3 + numkeys],
        argv: &args[3 + numkeys..],
        client_proto: ctx.out.proto,
        may_pause,
        threshold_ms,
        debug: call.debug,
    };
    ctx.shared.scripting.set_current(Current {
        name: call.name,
        // Only FUNCTION STATS shows the command, and only a function's.
        argv: match call.function {
            true => args.iter().map(|a| a.to_vec()).collect(),
            false => Vec::new(),
        },
        started: std::time::Instant::now(),
        function: call.function,
        from_master: ctx.client.info.is_master(),
    });
    run::start(ctx.shared, ctx.client, ctx.out, state, launch);
}

/// SCRIPT KILL (`function` false) and FUNCTION KILL (scriptKill): each
/// stops only its own kind.
pub fn kill(ctx: &mut Ctx, function: bool) {
    let s = &ctx.shared.scripting;
    let (running_function, from_master) = match s.current.lock().as_ref() {
        Some(c) => (Some(c.function), c.from_master),
        None => (None, false),
    };
    if !s.running.load(Ordering::Acquire) {
        ctx.out.error("NOTBUSY No scripts in execution right now.");
    } else if from_master {
        ctx.out.error("UNKILLABLE The busy script was sent by a master instance in the context of replication and cannot be killed.");
    } else if s.dirty.load(Ordering::Acquire) {
        ctx.out.error("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.");
    } else if !function && running_function == Some(true) {
        ctx.out.error(ERR_BUSY_FUNCTION);
    } else if function && running_function == Some(false) {
        ctx.out.error(ERR_BUSY);
    } else {
        s.kill.store(true, Ordering::Release);
        ctx.out.ok();
    }
}

/// The checks Redis makes before running a script that has a shebang.
pub(crate) fn check_flags(ctx: &mut Ctx, flags: ScriptFlags, ro: bool) -> Result<(), String> {
    if !flags.shebang {
        return Ok(());
    }
    if !flags.no_writes {
        // Redis's order: a read-only replica, a persistence failure (not for
        // our master), the _RO form, then too few good replicas.
        let write = crate::commands::table::WRITE | crate::commands::table::STALE;
        let replica = crate::replication::replica::refusal(ctx.shared, ctx.client, write);
        if replica.is_some_and(|e| e.starts_with("READONLY")) {
            return Err("READONLY Can not run script with write flag on readonly replica".into());
        }
        if !ctx.client.info.is_master() {
            let settings = ctx.client.settings(ctx.shared);
            if let Some(e) = ctx.shared.disk_refusal(settings) {
                return Err(e.script_message());
            }
        }
        if ro {
            return Err("ERR Can not execute a script with write flag using *_ro command.".into());
        }
        if let Some(e) = replica {
            return Err(e.into());
        }
        if !flags.allow_oom {
            let settings = ctx.client.settings(ctx.shared);
            if ctx.shared.oom_refusal(true, settings).is_some() {
                return Err("OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'".into());
            }
        }
    }
    Ok(())
}

/// SCRIPT DEBUG YES|SYNC|NO: the mode of this client's next scripts.
fn debug_mode(ctx: &mut Ctx, mode: &[u8]) {
    // Redis refuses it with replies pending: the debugger's own frames
    // would interleave with them (and inside EXEC).
    if !ctx.out.buf.is_empty() || ctx.client.in_exec {
        return ctx
            .out
            .error("ERR SCRIPT DEBUG must be called outside a pipeline");
    }
    if mode.eq_ignore_ascii_case(b"no") {
        ctx.client.script_debug = false;
        ctx.out.ok();
    } else if mode.eq_ignore_ascii_case(b"sync") {
        ctx.client.script_debug = true;
        ctx.out.ok();
    } else if mode.eq_ignore_ascii_case(b"yes") {
        // Redis forks a session whose changes are thrown away; BlinkDB does
        // not fork, and SYNC would keep them (docs/compatibility.md).
        ctx.out.error("ERR SCRIPT DEBUG YES (a forked session whose changes are discarded) is not supported: use SCRIPT DEBUG SYNC (changes are kept)");
    } else {
        ctx.out.error("ERR Use SCRIPT DEBUG YES/SYNC/NO");
    }
}

const SCRIPT_HELP: &[&str] = &[
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DEBUG (YES|SYNC|NO)",
    "    Set the debug mode for subsequent scripts executed.",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    "HELP",
    "    Prints this help.",
];

/// SCRIPT LOAD / EXISTS / FLUSH / KILL / HELP.
pub fn script(ctx: &mut Ctx, args: &Args) {
    let sub = String::from_utf8_lossy(args[1]).to_ascii_lowercase();
    let arity = match sub.as_str() {
        "help" | "kill" => 2,
        "load" | "debug" => 3,
        "exists" => -3,
        "flush" => -2,
        _ => {
            return ctx.out.error(&format!(
                "ERR unknown subcommand '{}'. Try SCRIPT HELP.",
                String::from_utf8_lossy(&args[1][..args[1].len().min(128)])
            ))
        }
    };
    let argc = args.len() as i32;
    if (arity > 0 && argc != arity) || argc < -arity {
        return ctx.out.error(&format!(
            "ERR wrong number of arguments for 'script|{sub}' command"
        ));
    }
    match (sub.as_str(), args.len()) {
        ("help", 2) => ctx.out.help(SCRIPT_HELP),
        ("load", 3) => {
            let Some(vm) = vm_for(ctx) else { return };
            match load(&vm, args[2]) {
                Ok((sha, _)) => ctx.out.bulk(&sha),
                Err(e) => ctx.out.error(&e),
            }
        }
        ("exists", n) if n >= 3 => {
            let vm = ctx.shared.scripting.vm.lock().clone();
            ctx.out.array(n - 2);
            for name in &args[2..] {
                let found = match (&vm, cache::parse_sha(name)) {
                    (Some(vm), Some(sha)) => vm.get(&sha).is_some(),
                    _ => false,
                };
                ctx.out.int(found as i64);
            }
        }
        ("flush", 2 | 3) => {
            let is_async = match args.get(2) {
                None => false,
                Some(m) if m.eq_ignore_ascii_case(b"sync") => false,
                Some(m) if m.eq_ignore_ascii_case(b"async") => true,
                Some(_) => {
                    return ctx
                        .out
                        .error("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
                }
            };
            let old = ctx.shared.scripting.vm.lock().take();
            if let Some(old) = old {
                if is_async {
                    std::thread::spawn(move || drop(old));
                } else {
                    drop(old);
                }
            }
            ctx.out.ok();
        }
        ("kill", 2) => kill(ctx, false),
        ("debug", 3) => debug_mode(ctx, args[2]),
        _ => ctx.out.error(&format!(
            "ERR Unknown subcommand or wrong number of arguments for '{}'. Try SCRIPT HELP.",
            String::from_utf8_lossy(args[1])
        )),
    }
}
