//! Running one script: the Lua side runs on a stack of its own (a fiber),
//! the caller's side runs the commands it asks for.
//!
//! Why a fiber: a script that runs past `busy-reply-threshold` must let the
//! other connections of its own connection thread get BUSY replies and send
//! SCRIPT KILL, while it keeps every other command out (exec_gate.rs). The
//! fiber lets the script's connection task go back to its event loop in the
//! middle of the script, whatever Lua frames (pcall, metamethods) are on
//! the script's stack, and resume it on the next turn. A script that ends
//! sooner never leaves the thread: the switch costs a few nanoseconds.
//!
//! redis.call goes through the same switch: the fiber hands the command to
//! the caller's side, which runs it with the calling client (so the Lua
//! side never holds the client) and hands back the reply bytes.

use super::vm::{Compiled, Vm};
use crate::client::Client;
use crate::commands::{table, Ctx};
use crate::protocol::{Args, Out};
use crate::state::Shared;
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use mlua::{HookTriggers, Value, VmState};
use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// Instructions between two checks for SCRIPT KILL and the busy threshold
/// (Redis's count hook period).
const HOOK_PERIOD: u32 = 100_000;
/// Room for the Lua interpreter's C recursion and the reply conversion;
/// pages are only committed when touched.
const FIBER_STACK: usize = 4 << 20;
/// Lua garbage-collector steps are taken every this many scripts, as Redis
/// does, so that no single script pays for a full cycle.
const GC_PERIOD: u64 = 50;
/// The least time between two checks made after redis.call (the count hook
/// makes its own).
const POLL_INTERVAL: std::time::Duration = std::time::Duration::from_millis(1);

pub const KILLED: &str = "Script killed by user with SCRIPT KILL...";

/// What the script's side asks of the caller's side.
pub enum Request {
    /// Run this command with this protocol and send back its reply; the
    /// third field: redis.set_repl's flags.
    Call(Vec<Vec<u8>>, u8, u8),
    /// The script is over the busy threshold: let the event loop run.
    Pause,
}

/// What the caller's side hands back.
pub enum Answer {
    Go,
    Reply(Vec<u8>),
}

type Fiber = Coroutine<Answer, Request, Vec<u8>, DefaultStack>;

/// What the script's own stack knows while it runs (through SIDE).
struct ScriptSide {
    yielder: *const Yielder<Answer, Request>,
    resp: Cell<u8>,
    /// redis.set_repl's flags (REPL_AOF = 1, REPL_REPLICA = 2): without
    /// REPL_AOF the script's writes stay out of the AOF.
    repl: Cell<u8>,
    started: Instant,
    threshold_ms: u64,
    may_pause: bool,
    shared: Arc<Shared>,
    /// The script's SHA1 or the function's name (in errors and the log).
    name: String,
    /// The kill was seen (logged once, hook made per-instruction).
    kill_seen: Cell<bool>,
    /// When `poll` last ran from after_call or paused the script.
    last_poll: Cell<Instant>,
    /// The interpreter (the Vm the Launch holds outlives the fiber).
    lua: *const mlua::Lua,
}

thread_local! {
    static SIDE: Cell<*const ScriptSide> = const { Cell::new(std::ptr::null()) };
    /// The script suspended on this thread, if any (one at most: it holds
    /// every other script out).
    static PARKED: RefCell<Option<Fiber>> = const { RefCell::new(None) };
    static STACKS: RefCell<Vec<DefaultStack>> = const { RefCell::new(Vec::new()) };
    static RUNS: Cell<u64> = const { Cell::new(0) };
    /// A command run by redis.call is running on this thread (Redis's
    /// CLIENT_SCRIPT flag: SORT orders a set it would leave unsorted).
    static IN_CALL: Cell<bool> = const { Cell::new(false) };
}

/// Whether the running command was called by a script.
pub fn in_script_call() -> bool {
    IN_CALL.with(|c| c.get())
}

fn with_side<R>(f: impl FnOnce(&ScriptSide) -> R) -> Option<R> {
    SIDE.with(|s| {
        let p = s.get();
        // SAFETY: SIDE points at the ScriptSide on the running fiber's stack;
        // it is set when the fiber starts and cleared before it returns, and
        // only code on that fiber (Lua callbacks and hooks) reads it.
        (!p.is_null()).then(|| f(unsafe { &*p }))
    })
}

/// redis.call's round trip: runs on the fiber, returns the reply bytes.
pub fn call(argv: Vec<Vec<u8>>) -> Vec<u8> {
    with_side(|side| {
        // SAFETY: the yielder lives as long as the fiber that is running us.
        let yielder = unsafe { &*side.yielder };
        match yielder.suspend(Request::Call(argv, side.resp.get(), side.repl.get())) {
            Answer::Reply(r) => r,
            Answer::Go => b"-ERR script resumed without a reply\r\n".to_vec(),
        }
    })
    .unwrap_or_else(|| {
        b"-ERR redis.call/pcall can only be called inside a script invocation\r\n".to_vec()
    })
}

pub fn set_resp(resp: u8) {
    with_side(|side| side.resp.set(resp));
}

pub fn set_repl(flags: u8) {
    with_side(|side| side.repl.set(flags));
}

/// The checks made every HOOK_PERIOD instructions and after redis.call:
/// marks the script busy past its threshold, lets the event loop run while
/// it is busy, and tells whether SCRIPT KILL came.
fn poll(side: &ScriptSide) -> bool {
    let state = &side.shared.scripting;
    if !state.killed() && !state.busy.load(Ordering::Acquire) {
        let elapsed = side.started.elapsed().as_millis() as u64;
        if side.threshold_ms > 0 && elapsed >= side.threshold_ms {
            tracing::warn!(
                "Slow script detected: still in execution after {elapsed} milliseconds. You can try killing the script using the SCRIPT KILL command. Script name is: {}.",
                side.name
            );
            state.busy.store(true, Ordering::Release);
        }
    }
    if state.busy.load(Ordering::Acquire) && side.may_pause && !state.killed() {
        side.last_poll.set(Instant::now());
        // SAFETY: as in `call`.
        let yielder = unsafe { &*side.yielder };
        yielder.suspend(Request::Pause);
    }
    state.killed()
}

/// SCRIPT KILL was seen: from now on every instruction is checked, so that
/// the next one of the script's own fails and pcall cannot catch the kill
/// and go on. This must happen wherever the kill is first seen: a loop that
/// spends most of its instructions in the sandbox's Lua code (redis.call's
/// wrapper, the globals' __index) can have every periodic check land there.
fn note_kill(lua: &mlua::Lua) {
    if with_side(|side| !side.kill_seen.replace(true)).unwrap_or(false) {
        tracing::warn!("Lua script killed by user with SCRIPT KILL.");
        lua.set_hook(HookTriggers::new().every_nth_instruction(1), hook);
    }
}

/// Called on the fiber after each redis.call returns: a script whose time
/// goes into slow commands rather than Lua instructions must still pause
/// for BUSY replies and see SCRIPT KILL (its next own instruction fails).
pub fn after_call() {
    let killed = with_side(|side| {
        if side.shared.scripting.killed() {
            return true;
        }
        if side.last_poll.get().elapsed() < POLL_INTERVAL {
            return false;
        }
        side.last_poll.set(Instant::now());
        poll(side)
    })
    .unwrap_or(false);
    if killed {
        // SAFETY: as in `call`: the Lua the side points at runs this fiber.
        with_side(|side| note_kill(unsafe { &*side.lua }));
    }
}

fn hook(lua: &mlua::Lua, debug: mlua::Debug) -> mlua::Result<VmState> {
    if with_side(poll).unwrap_or(false) {
        note_kill(lua);
        // Only the script's own code fails: the sandbox's error handler
        // must still run to report where the script stopped.
        let source = debug.source().source;
        if !matches!(source.as_deref(), Some("@user_script" | "@user_function")) {
            return Ok(VmState::Continue);
        }
        return Err(mlua::Error::runtime(KILLED));
    }
    Ok(VmState::Continue)
}

/// The caller's side of a running script.
pub struct RunState {
    /// The script's SHA1 or the function's name.
    pub name: String,
    pub read_only: bool,
    pub allow_oom: bool,
    /// The caller's database, restored when the script ends (SELECT inside
    /// a script does not change it).
    pub caller_db: usize,
    /// The script has run a write: it can no longer be killed, and its
    /// writes reach the log between MULTI and EXEC.
    pub wrote: bool,
    pub multi_logged: bool,
    /// Every other command held out, for a script started outside EXEC.
    pub gate: Option<crate::exec_gate::ExclusiveToken>,
    /// The script's declared keys, kept when its caller tracks keys: they are
    /// what a read from the script makes the caller track, as in Redis.
    pub tracked_keys: Vec<Vec<u8>>,
}

/// What runs: an EVAL script (KEYS and ARGV are globals) or a function
/// (called with the keys and the arguments).
pub enum Target {
    Script(Arc<Compiled>),
    Function(mlua::Function),
}

/// What a script needs to start.
pub struct Launch {
    pub vm: Arc<Vm>,
    pub target: Target,
    pub keys: Vec<Vec<u8>>,
    pub argv: Vec<Vec<u8>>,
    pub client_proto: u8,
    pub may_pause: bool,
    pub threshold_ms: u64,
}

/// Starts a script and runs it until it ends (its reply then goes to `out`)
/// or pauses (then `client.script` holds it and the caller must `resume` it
/// after letting its event loop run).
pub fn start(shared: &Shared, client: &mut Client, out: &mut Out, run: RunState, launch: Launch) {
    let shared_arc = shared.arc();
    let name = run.name.clone();
    let stack = STACKS
        .with(|s| s.borrow_mut().pop())
        .map(Ok)
        .unwrap_or_else(|| DefaultStack::new(FIBER_STACK));
    let stack = match stack {
        Ok(s) => s,
        Err(e) => {
            finish(shared, client, run);
            return out.error(&format!("ERR can't allocate a stack for the script: {e}"));
        }
    };
    shared.scripting.started();
    let fiber: Fiber = Coroutine::with_stack(stack, move |yielder, _: Answer| {
        let side = ScriptSide {
            yielder: yielder as *const _,
            resp: Cell::new(2),
            repl: Cell::new(3),
            started: Instant::now(),
            threshold_ms: launch.threshold_ms,
            may_pause: launch.may_pause,
            shared: shared_arc,
            name,
            kill_seen: Cell::new(false),
            last_poll: Cell::new(Instant::now()),
            lua: &launch.vm.lua as *const mlua::Lua,
        };
        SIDE.with(|s| s.set(&side as *const _));
        let reply = execute_script(&side, &launch);
        SIDE.with(|s| s.set(std::ptr::null()));
        reply
    });
    drive(shared, client, out, fiber, run, Answer::Go);
}

/// Continues the script suspended by this client.
pub fn resume(shared: &Shared, client: &mut Client, out: &mut Out) {
    let Some(run) = client.script.take() else {
        return;
    };
    let Some(fiber) = PARKED.with(|p| p.borrow_mut().take()) else {
        finish(shared, client, *run);
        return out.error("ERR the running script was lost");
    };
    drive(shared, client, out, fiber, *run, Answer::Go);
}

fn drive(
    shared: &Shared,
    client: &mut Client,
    out: &mut Out,
    mut fiber: Fiber,
    mut run: RunState,
    mut input: Answer,
) {
    loop {
        match fiber.resume(input) {
            CoroutineResult::Yield(Request::Call(argv, resp, repl)) => {
                let aof = repl & 1 != 0;
                input = Answer::Reply(execute(shared, client, &mut run, &argv, resp, aof));
            }
            CoroutineResult::Yield(Request::Pause) => {
                PARKED.with(|p| *p.borrow_mut() = Some(fiber));
                client.script = Some(Box::new(run));
                return;
            }
            CoroutineResult::Return(reply) => {
                STACKS.with(|s| {
                    let mut s = s.borrow_mut();
                    if s.len() < 2 {
                        s.push(fiber.into_stack());
                    }
                });
                finish(shared, client, run);
                out.buf.extend_from_slice(&reply);
                return;
            }
        }
    }
}

/// Ends a script's run on the caller's side: closes its transaction in the
/// log, gives the caller its database back, and lets other commands in.
fn finish(shared: &Shared, client: &mut Client, mut run: RunState) {
    if run.multi_logged {
        let (lsn, _) = shared.engine.log(client.db, &[b"EXEC"]);
        client.note_lsn(lsn);
    }
    client.set_db(run.caller_db);
    shared.scripting.ended();
    drop(run.gate.take());
}

/// Runs the script on its fiber; returns the reply to the caller, encoded
/// with the caller's protocol.
fn execute_script(side: &ScriptSide, launch: &Launch) -> Vec<u8> {
    let vm = &launch.vm;
    let lua = &vm.lua;
    let mut out = Out::new(launch.client_proto);
    let result = (|| -> mlua::Result<(bool, Value)> {
        let hook_on = || lua.set_hook(HookTriggers::new().every_nth_instruction(HOOK_PERIOD), hook);
        let r = match &launch.target {
            Target::Script(compiled) => {
                super::convert::set_script_args(lua, &launch.keys, &launch.argv)?;
                hook_on();
                vm.driver.call::<(bool, Value)>(compiled.func.clone())
            }
            Target::Function(f) => {
                let (keys, argv) = super::convert::function_args(lua, &launch.keys, &launch.argv)?;
                hook_on();
                vm.call_function
                    .call::<(bool, Value)>((f.clone(), keys, argv))
            }
        };
        lua.remove_hook();
        r
    })();
    let sha = side.name.clone();
    match result {
        Ok((true, v)) => super::convert::lua_to_reply(lua, &mut out, v, side.resp.get()),
        Ok((false, Value::Table(t))) => {
            let msg = match t.raw_get::<Value>("err") {
                Ok(Value::String(s)) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
                _ => "ERR unknown error".to_string(),
            };
            let mut line = format!("-{msg}");
            if let (Ok(Value::String(source)), Ok(lineno)) =
                (t.raw_get::<Value>("source"), t.raw_get::<Value>("line"))
            {
                let lineno = match lineno {
                    Value::Integer(i) => i.to_string(),
                    Value::Number(n) => format!("{}", n as i64),
                    _ => String::new(),
                };
                if !lineno.is_empty() {
                    line.push_str(&format!(
                        " script: {sha}, on {}:{lineno}.",
                        String::from_utf8_lossy(&source.as_bytes())
                    ));
                }
            }
            super::convert::error_line(&mut out, line.as_bytes());
        }
        Ok((false, other)) => {
            let msg = match &other {
                Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
                _ => "execution failure".to_string(),
            };
            run_error(&mut out, &sha, &msg);
        }
        Err(e) => run_error(&mut out, &sha, &super::api::error_text(&e)),
    }
    let runs = RUNS.with(|r| {
        r.set(r.get() + 1);
        r.get()
    });
    if matches!(lua.used_memory(), m if m > vm.memory_limit / 2 && vm.memory_limit > 0) {
        let _ = lua.gc_collect();
    } else if runs.is_multiple_of(GC_PERIOD) {
        let _ = lua.gc_step_kbytes(GC_PERIOD as i32);
    }
    out.buf.to_vec()
}

fn run_error(out: &mut Out, sha: &str, msg: &str) {
    let cut: String = msg.chars().take(100).collect();
    let line = format!("-ERR Error running script {sha}, {cut}");
    super::convert::error_line(out, line.as_bytes());
}

/// Runs one command for redis.call with the checks Redis makes for scripts;
/// returns its reply (RESP bytes in the script's protocol).
fn execute(
    shared: &Shared,
    client: &mut Client,
    run: &mut RunState,
    argv: &[Vec<u8>],
    resp: u8,
    aof: bool,
) -> Vec<u8> {
    let err = |m: &str| format!("-ERR {m}\r\n").into_bytes();
    let args: Args = argv.iter().map(|a| &a[..]).collect();
    // A container's subcommand is the command (its flags and arity apply).
    let Some(Ok(spec)) = table::resolve(&args) else {
        return err("Unknown Redis command called from script");
    };
    let argc = argv.len() as i32;
    if (spec.arity > 0 && argc != spec.arity) || argc < -spec.arity {
        return err("Wrong number of args calling Redis command from script");
    }
    if spec.has(table::NOSCRIPT) {
        return err("This Redis command is not allowed from script");
    }
    // May-replicate commands (PUBLISH...) count as writes here, as in Redis.
    if run.read_only && (spec.has(table::WRITE) || spec.has(table::MAY_REPLICATE)) {
        return err("Write commands are not allowed from read-only scripts.");
    }
    if spec.has(table::WRITE) {
        if !run.wrote {
            let settings = client.settings(shared);
            let denyoom = spec.has(table::DENYOOM) && !run.allow_oom;
            if let Some(refusal) = shared.write_refusal(denyoom, settings) {
                let mut line = Out::new(resp);
                line.error(&refusal);
                return line.buf.to_vec();
            }
            let write = table::WRITE | table::STALE;
            if let Some(refusal) = crate::replication::replica::refusal(shared, client, write) {
                let mut line = Out::new(resp);
                line.error(refusal);
                return line.buf.to_vec();
            }
            run.wrote = true;
            shared.scripting.wrote();
        }
        if !run.multi_logged && aof {
            let (lsn, _) = shared.engine.log(client.db, &[b"MULTI"]);
            client.note_lsn(lsn);
            run.multi_logged = true;
        }
    }
    let mut out = Out::new(resp);
    client.commands_processed += 1;
    // A script never blocks: BLMPOP and the like answer at once, as in Redis.
    let deny_blocking = std::mem::replace(&mut client.deny_blocking, true);
    let mut ctx = Ctx {
        shared,
        client,
        out: &mut out,
    };
    let timer = crate::cmdstats::Timer::start();
    IN_CALL.with(|c| c.set(true));
    if aof {
        crate::commands::access::run_in_script(&mut ctx, spec, &args);
    } else {
        // redis.set_repl without REPL_AOF: applied, not logged.
        blinkdb_engine::engine::unlogged(|| {
            crate::commands::access::run_in_script(&mut ctx, spec, &args)
        });
    }
    IN_CALL.with(|c| c.set(false));
    let nanos = timer.elapsed_nanos();
    ctx.client.deny_blocking = deny_blocking;
    // Counted as Redis counts a script's calls: INFO commandstats, the slow
    // log, latency and MONITOR (as `lua`).
    let failed = ctx.out.errors > 0;
    crate::commands::after_call(&mut ctx, spec, spec.index(), &args, nanos, failed, true);
    if spec.has(table::READONLY) && !run.tracked_keys.is_empty() {
        crate::commands::tracking::remember_script_keys(shared, client, &run.tracked_keys);
    }
    resolve_files(out)
}

/// The reply bytes with the large values that were left to be read at send
/// time read now (the script needs them).
fn resolve_files(out: Out) -> Vec<u8> {
    if out.files.is_empty() {
        return out.buf.to_vec();
    }
    let mut bytes = Vec::with_capacity(out.buf.len());
    let mut at = 0;
    for (pos, src) in out.files {
        bytes.extend_from_slice(&out.buf[at..pos]);
        match src.read() {
            Ok(value) => {
                bytes.extend_from_slice(format!("${}\r\n", value.len()).as_bytes());
                bytes.extend_from_slice(&value);
                bytes.extend_from_slice(b"\r\n");
            }
            Err(e) => crate::protocol::push_error_line(
                &mut bytes,
                blinkdb_engine::engine::blob_read_error(&e).as_bytes(),
            ),
        }
        at = pos;
    }
    bytes.extend_from_slice(&out.buf[at..]);
    bytes
}
