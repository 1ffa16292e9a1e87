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

use super::convert::call_and_reply;
use super::vm::{Compiled, Vm};
use crate::commands::{table, Ctx};
use crate::exec::admit::{Source, Verdict};
use crate::exec::session::Client;
use crate::protocol::{Args, Out};
use crate::server::state::Shared;
use bytes::BytesMut;
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
/// The least time between two checks made after redis.call (the count hook
/// makes its own).
const POLL_INTERVAL: std::time::Duration = std::time::Duration::from_millis(1);
/// After redis.call the clock is read only once the commands called since
/// the last reading took POLL_INTERVAL, or after this many calls: a read
/// per call cost more than the call's reply conversion.
const CALLS_PER_CLOCK_READ: u32 = 64;
/// The buffers kept for the next script (CALL_ARGS, CALL_REPLY, RESULT)
/// are dropped instead once they have grown past this (a script that read
/// a large value must not hold its size).
const KEEP_BUFFER: usize = 64 << 10;

pub const KILLED: &str = "Script killed by user with SCRIPT KILL...";

/// What the script's side asks of the caller's side.
pub enum Request {
    /// Run the command in CALL_ARGS with this protocol and leave its reply
    /// in CALL_REPLY; the second field: redis.set_repl's flags.
    Call(u8, u8),
    /// The script is over the busy threshold: let the event loop run.
    Pause,
    /// The debugger stopped (ldb/): send its log, then hand back the
    /// client's next request (ldb::set_input) with Go, or Gone.
    Debug,
}

/// What the caller's side hands back.
pub enum Answer {
    Go,
    /// The debugging client went away: the script runs on without stops.
    Gone,
    /// The reply is in CALL_REPLY.
    Reply,
}

/// The script's reply is left in RESULT.
type Fiber = Coroutine<Answer, Request, (), DefaultStack>;

/// The command a script passes to redis.call: its arguments one after the
/// other in `bytes`, each ending where its `ends` entry says.
#[derive(Default)]
pub struct CallArgs {
    pub bytes: Vec<u8>,
    pub ends: Vec<usize>,
}

impl CallArgs {
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    pub fn push(&mut self, arg: &[u8]) {
        self.bytes.extend_from_slice(arg);
        self.ends.push(self.bytes.len());
    }

    fn capacity(&self) -> usize {
        self.bytes.capacity() + self.ends.capacity() * std::mem::size_of::<usize>()
    }

    pub(super) fn args(&self) -> Args<'_> {
        crate::protocol::request::split_at_ends(&self.bytes, &self.ends)
    }
}

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
    name: Arc<str>,
    /// The kill was seen (logged once, hook made per-instruction).
    kill_seen: Cell<bool>,
    /// When `poll` last ran from after_call or paused the script.
    last_poll: Cell<Instant>,
    /// The interpreter (the Vm the Launch holds outlives the fiber).
    lua: *const mlua::Lua,
    /// The calling client's user (redis.acl_check_cmd; the rules cannot
    /// change while a script runs, as it holds every other client out).
    user: Arc<crate::server::acl::User>,
    /// Runs under SCRIPT DEBUG SYNC (ldb/).
    debug: bool,
}

thread_local! {
    static SIDE: Cell<*const ScriptSide> = const { Cell::new(std::ptr::null()) };
    /// The script suspended on this thread, if any (one at most: it holds
    /// every other script out).
    static PARKED: RefCell<Option<Fiber>> = const { RefCell::new(None) };
    static STACKS: RefCell<Vec<DefaultStack>> = const { RefCell::new(Vec::new()) };
    /// redis.call's command, its reply, and the script's own reply: buffers
    /// kept for the next script, so that a call allocates nothing once they
    /// have grown. Each is taken out while in use (never borrowed across a
    /// Lua call, which may unwind past the borrow).
    static CALL_ARGS: Cell<CallArgs> = Cell::new(CallArgs::default());
    static CALL_REPLY: Cell<BytesMut> = Cell::new(BytesMut::new());
    static RESULT: Cell<BytesMut> = Cell::new(BytesMut::new());
    /// Error replies in RESULT: they fail the EVAL/FCALL (failed_calls).
    static RESULT_ERRORS: Cell<u64> = const { Cell::new(0) };
    /// An EVAL script's KEYS then ARGV, packed for its fiber (kept as the
    /// buffers above are).
    static SCRIPT_ARGS: Cell<CallArgs> = Cell::new(CallArgs::default());
    /// Nanoseconds the commands called since the last clock reading took,
    /// and how many they were (after_call).
    static CALL_NANOS: Cell<u64> = const { Cell::new(0) };
    static CALLS: Cell<u32> = const { Cell::new(0) };
    /// A command run by redis.call is running on this thread (Redis's
    /// CLIENT_SCRIPT flag: SORT orders a set it would leave unsorted).
    static IN_CALL: Cell<bool> = const { Cell::new(false) };
    /// The last redis.call was refused before it ran (the debugger logs
    /// such a refusal differently from a command's error reply).
    static REFUSED: Cell<bool> = const { Cell::new(false) };
}

/// Whether the last redis.call was refused before it ran.
pub fn call_refused() -> bool {
    REFUSED.get()
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

/// redis.acl_check_cmd: whether the calling client's user may run the
/// command `args` names, with these keys and channels (Redis's
/// ACLCheckAllUserCommandPerm); None when no such command (or subcommand)
/// exists or no script runs.
pub fn acl_allows(args: &[&[u8]]) -> Option<bool> {
    let spec = table::resolve(args)?.ok()?;
    with_side(|side| crate::server::acl::check::check(&side.user, spec, args).is_ok())
}

/// Fills the command redis.call passes (see CallArgs); what `fill` returns.
pub fn fill_call_args<R>(fill: impl FnOnce(&mut CallArgs) -> R) -> R {
    let mut args = CALL_ARGS.take();
    args.clear();
    let r = fill(&mut args);
    CALL_ARGS.set(args);
    r
}

/// Reads the command the script passes to redis.call (the debugger logs it).
pub(super) fn with_call_args<R>(read: impl FnOnce(&CallArgs) -> R) -> R {
    let args = CALL_ARGS.take();
    let r = read(&args);
    CALL_ARGS.set(args);
    r
}

/// redis.call's round trip: runs on the fiber the command fill_call_args
/// left; its reply is then what `call_reply` reads.
pub fn call() {
    let answer = with_side(|side| {
        // SAFETY: the yielder lives as long as the fiber that is running us.
        let yielder = unsafe { &*side.yielder };
        yielder.suspend(Request::Call(side.resp.get(), side.repl.get()))
    });
    let error: &[u8] = match answer {
        Some(Answer::Reply) => return,
        Some(Answer::Go | Answer::Gone) => b"-ERR script resumed without a reply\r\n",
        None => b"-ERR redis.call/pcall can only be called inside a script invocation\r\n",
    };
    let mut reply = reused(CALL_REPLY.take());
    reply.extend_from_slice(error);
    CALL_REPLY.set(reply);
}

/// The reply of the last `call`.
///
/// # Safety
/// The slice is valid until the next `call` (nothing else changes the
/// buffer); the caller must not hold it past that.
pub unsafe fn call_reply<'a>() -> &'a [u8] {
    let reply = CALL_REPLY.take();
    // The buffer is put back untouched: the slice points into its heap
    // allocation, which moving the handle does not move.
    let slice = std::slice::from_raw_parts(reply.as_ptr(), reply.len());
    CALL_REPLY.set(reply);
    slice
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
        let calls = CALLS.get() + 1;
        if CALL_NANOS.get() < POLL_INTERVAL.as_nanos() as u64 && calls < CALLS_PER_CLOCK_READ {
            CALLS.set(calls);
            return false;
        }
        CALLS.set(0);
        CALL_NANOS.set(0);
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

/// The hook of a script run under the debugger (ldb/): stops on lines
/// and waits for the client's commands by suspending the fiber.
fn debug_hook(lua: &mlua::Lua, debug: mlua::Debug) -> mlua::Result<VmState> {
    if with_side(|side| side.shared.scripting.killed()).unwrap_or(false) {
        return Err(mlua::Error::runtime(KILLED));
    }
    let wait = || {
        let answer = with_side(|side| {
            // SAFETY: as in `call`.
            let yielder = unsafe { &*side.yielder };
            yielder.suspend(Request::Debug)
        });
        matches!(answer, Some(Answer::Go))
    };
    match super::ldb::hook(lua, &debug, wait) {
        super::ldb::Stop::Go => Ok(VmState::Continue),
        super::ldb::Stop::Fail(msg) => Err(mlua::Error::runtime(msg)),
    }
}

/// The caller's side of a running script.
pub struct RunState {
    /// The script's SHA1 or the function's name.
    pub name: Arc<str>,
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
    pub gate: Option<crate::exec::gate::ExclusiveToken>,
    /// The script's declared keys, kept when its caller tracks keys: they are
    /// what a read from the script makes the caller track, as in Redis.
    pub tracked_keys: Vec<Vec<u8>>,
    /// The debugger stopped the script and waits for the client's next
    /// request (`debugger_input`).
    pub debugger_waiting: bool,
    /// The debugging client closed its connection (`abandon`).
    pub client_gone: bool,
    /// Set by exec::call when the script paused past its busy threshold:
    /// what its end adds to the EVAL's statistics and slow log.
    pub paused_call: Option<crate::exec::call::PausedCall>,
}

/// What runs: an EVAL script (KEYS and ARGV are globals) or a function
/// (called with the keys and the arguments).
pub enum Target {
    Script(Arc<Compiled>),
    Function(mlua::Function),
}

/// A target with its keys and arguments made Lua values: the globals KEYS
/// and ARGV set, or the two tables a function is called with.
enum Prepared {
    /// The script, its keys then its arguments, and how many are keys: the
    /// fiber sets KEYS and ARGV in the protected call that runs the script.
    Script(Arc<Compiled>, CallArgs, usize),
    Function(mlua::Function, mlua::Table, mlua::Table),
}

/// What a script needs to start.
pub struct Launch<'a> {
    pub vm: Arc<Vm>,
    pub target: Target,
    pub keys: &'a [&'a [u8]],
    pub argv: &'a [&'a [u8]],
    pub client_proto: u8,
    pub may_pause: bool,
    pub threshold_ms: u64,
    /// SCRIPT DEBUG SYNC: the script's body (the debugger lists it).
    pub debug: Option<&'a [u8]>,
}

/// Starts a script and runs it until it ends (its reply then goes to `out`)
/// or pauses (then `client.script` holds it and the caller must `resume` it
/// after letting its event loop run).
pub fn start(shared: &Shared, client: &mut Client, out: &mut Out, run: RunState, launch: Launch) {
    // The keys and arguments become Lua values here, on the caller's stack:
    // the fiber then needs no copy of them.
    let lua = &launch.vm.lua;
    let prepared = match launch.target {
        Target::Script(compiled) => {
            let mut packed = SCRIPT_ARGS.take();
            packed.clear();
            for arg in launch.keys.iter().chain(launch.argv) {
                packed.push(arg);
            }
            Ok(Prepared::Script(compiled, packed, launch.keys.len()))
        }
        Target::Function(f) => super::convert::function_args(lua, launch.keys, launch.argv)
            .map(|(keys, argv)| Prepared::Function(f, keys, argv)),
    };
    let prepared = match prepared {
        Ok(p) => p,
        Err(e) => {
            let msg = super::api::error_text(&e);
            let name = run.name.clone();
            finish(shared, client, run);
            return run_error(out, &name, &msg);
        }
    };
    let debug = launch.debug.is_some();
    if let Some(body) = launch.debug {
        let timeout = if launch.threshold_ms > 0 {
            launch.threshold_ms
        } else {
            5000
        };
        super::ldb::start(body, launch.vm.env(), timeout);
        // The script holds the keyspace while it waits for the client:
        // the other clients get BUSY (Redis's SYNC mode blocks them).
        shared.scripting.busy.store(true, Ordering::Release);
    }
    let (vm, client_proto) = (launch.vm, launch.client_proto);
    let (threshold_ms, may_pause) = (launch.threshold_ms, launch.may_pause);
    let shared_arc = shared.arc();
    let name = run.name.clone();
    let user = client.user.clone();
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
        let now = Instant::now();
        let side = ScriptSide {
            yielder: yielder as *const _,
            resp: Cell::new(2),
            repl: Cell::new(3),
            started: now,
            threshold_ms,
            may_pause,
            shared: shared_arc,
            name,
            kill_seen: Cell::new(false),
            last_poll: Cell::new(now),
            lua: &vm.lua as *const mlua::Lua,
            user,
            debug,
        };
        SIDE.with(|s| s.set(&side as *const _));
        execute_script(&side, &vm, prepared, client_proto);
        SIDE.with(|s| s.set(std::ptr::null()));
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
    let input = if run.client_gone {
        Answer::Gone
    } else {
        Answer::Go
    };
    drive(shared, client, out, fiber, *run, input);
}

/// Whether this client's script waits for a debugger command (the
/// connection then reads the client's requests and hands each to
/// `debugger_input` instead of running it).
pub fn awaits_debugger(client: &Client) -> bool {
    client.script.as_ref().is_some_and(|r| r.debugger_waiting)
}

/// Whether this client has a script to resume on its next turn.
pub fn runnable(client: &Client) -> bool {
    client.script.as_ref().is_some_and(|r| !r.debugger_waiting)
}

/// Hands a request of the debugging client to its stopped script, which
/// runs until it stops again or ends (then the connection closes after the
/// reply, as Redis's does).
pub fn debugger_input(shared: &Shared, client: &mut Client, out: &mut Out, args: &Args) {
    super::ldb::set_input(args);
    if let Some(run) = client.script.as_mut() {
        run.debugger_waiting = false;
    }
    resume(shared, client, out);
}

/// The connection of a client whose script is suspended is closing: the
/// script runs to its end (a debugged one without stops), its reply
/// dropped, so that it lets the other clients in.
pub fn abandon(shared: &Shared, client: &mut Client) {
    if let Some(run) = client.script.as_mut() {
        run.client_gone = true;
        run.debugger_waiting = false;
    }
    let mut out = Out::new(client.proto);
    while client.script.is_some() {
        resume(shared, client, &mut out);
    }
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
            CoroutineResult::Yield(Request::Call(resp, repl)) => {
                let aof = repl & 1 != 0;
                let args = CALL_ARGS.take();
                let mut reply = Out::new(resp);
                reply.buf = reused(CALL_REPLY.take());
                let reply = execute(shared, client, &mut run, &args.args(), reply, aof);
                CALL_REPLY.set(reply);
                if args.capacity() <= KEEP_BUFFER {
                    CALL_ARGS.set(args);
                }
                input = Answer::Reply;
            }
            CoroutineResult::Yield(Request::Debug) if run.client_gone => {
                super::ldb::take_output();
                input = Answer::Gone;
            }
            CoroutineResult::Yield(Request::Debug) => {
                out.buf.extend_from_slice(&super::ldb::take_output());
                run.debugger_waiting = true;
                PARKED.with(|p| *p.borrow_mut() = Some(fiber));
                client.script = Some(Box::new(run));
                return;
            }
            CoroutineResult::Yield(Request::Pause) if run.client_gone => input = Answer::Go,
            CoroutineResult::Yield(Request::Pause) => {
                PARKED.with(|p| *p.borrow_mut() = Some(fiber));
                client.script = Some(Box::new(run));
                return;
            }
            CoroutineResult::Return(()) => {
                STACKS.with(|s| {
                    let mut s = s.borrow_mut();
                    if s.len() < 2 {
                        s.push(fiber.into_stack());
                    }
                });
                let paused_call = run.paused_call.take();
                finish(shared, client, run);
                if let Some(paused) = paused_call {
                    let failed = RESULT_ERRORS.get() > 0;
                    crate::exec::call::count_resumed(shared, client, paused, failed);
                }
                if super::ldb::active() {
                    // The session's last log and <endsession> go first; the
                    // connection closes after the reply.
                    out.buf.extend_from_slice(&super::ldb::end());
                    client.close_after_reply = true;
                }
                let reply = RESULT.take();
                out.buf.extend_from_slice(&reply);
                // Already in errorstats (counted as they were written).
                out.errors += RESULT_ERRORS.take();
                RESULT.set(reused(reply));
                CALL_REPLY.set(reused(CALL_REPLY.take()));
                return;
            }
        }
    }
}

/// A kept buffer emptied for its next use, or a new one in place of one
/// grown past KEEP_BUFFER.
fn reused(mut buf: BytesMut) -> BytesMut {
    if buf.capacity() > KEEP_BUFFER {
        return BytesMut::new();
    }
    buf.clear();
    buf
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

/// Runs the script on its fiber; leaves the reply to the caller, encoded
/// with the caller's protocol, in RESULT.
fn execute_script(side: &ScriptSide, vm: &Vm, prepared: Prepared, client_proto: u8) {
    let lua = &vm.lua;
    let mut out = Out::new(client_proto);
    out.buf = reused(RESULT.take());
    if side.debug {
        let triggers = HookTriggers::new()
            .every_line()
            .every_nth_instruction(HOOK_PERIOD);
        lua.set_hook(triggers, debug_hook);
    } else {
        lua.set_hook(HookTriggers::new().every_nth_instruction(HOOK_PERIOD), hook);
    }
    let result = match prepared {
        Prepared::Script(compiled, packed, nkeys) => {
            let all = packed.args();
            let (keys, argv) = all.split_at(nkeys);
            let result = call_and_reply(
                lua,
                &mut out,
                &side.resp,
                Some((keys, argv)),
                (&vm.driver, &compiled.func),
            );
            drop(all);
            if packed.capacity() <= KEEP_BUFFER {
                SCRIPT_ARGS.set(packed);
            }
            result
        }
        Prepared::Function(f, keys, argv) => call_and_reply(
            lua,
            &mut out,
            &side.resp,
            None,
            (&vm.call_function, f, keys, argv),
        ),
    };
    lua.remove_hook();
    let sha = &*side.name;
    match result {
        Ok(None) => {}
        Ok(Some(Value::Table(t))) => {
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
            // A command's error the script raised (redis.call) was counted
            // when the command failed.
            let counted = matches!(
                t.raw_get::<Value>(super::convert::IGNORE_STATS),
                Ok(Value::Boolean(true))
            );
            super::convert::error_line_of(&mut out, line.as_bytes(), counted);
        }
        Ok(Some(other)) => {
            let msg = match &other {
                Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
                _ => "execution failure".to_string(),
            };
            run_error(&mut out, sha, &msg);
        }
        Err(e) => run_error(&mut out, sha, &super::api::error_text(&e)),
    }
    vm.collect_garbage();
    RESULT_ERRORS.set(out.errors);
    RESULT.set(out.buf);
}

fn run_error(out: &mut Out, sha: &str, msg: &str) {
    let cut: String = msg.chars().take(100).collect();
    let line = format!("-ERR Error running script {sha}, {cut}");
    super::convert::error_line(out, line.as_bytes());
}

/// Runs one command for redis.call with the checks Redis makes for scripts;
/// returns its reply (RESP bytes in the script's protocol, written to
/// `out`'s empty buffer).
fn execute(
    shared: &Shared,
    client: &mut Client,
    run: &mut RunState,
    args: &Args,
    mut out: Out,
    aof: bool,
) -> BytesMut {
    // As Redis's scriptCall: a refused call is an error reply counted in
    // errorstats (the script's own error reply made of it is not counted
    // again) and, once the command is known, one of its rejected_calls.
    let source = Source::Script {
        read_only: run.read_only,
        first_write: !run.wrote,
        allow_oom: run.allow_oom,
    };
    let found = crate::exec::lookup(args);
    let spec = match crate::exec::admit::admit(shared, client, &mut out, args, found, source) {
        Verdict::Run(spec) => spec,
        _ => {
            REFUSED.set(true);
            return out.buf;
        }
    };
    REFUSED.set(false);
    if spec.has(table::WRITE) {
        if !run.wrote {
            run.wrote = true;
            shared.scripting.wrote();
        }
        // Inside EXEC's MULTI the script opens none of its own.
        if !run.multi_logged && aof && !crate::exec::wrapper::open() {
            let (lsn, _) = shared.engine.log(client.db, &[b"MULTI"]);
            client.note_lsn(lsn);
            run.multi_logged = true;
        }
    }
    let mut ctx = Ctx {
        shared,
        client,
        out: &mut out,
    };
    IN_CALL.with(|c| c.set(true));
    // The script's MULTI is open for what the command logs (synchronously,
    // on this thread).
    let _wrapped = run.multi_logged.then(crate::exec::wrapper::Open::begin);
    let nanos = crate::exec::call::call_in_script(&mut ctx, spec, args, aof);
    IN_CALL.with(|c| c.set(false));
    CALL_NANOS.set(CALL_NANOS.get().saturating_add(nanos));
    if spec.has(table::READONLY) && !run.tracked_keys.is_empty() {
        crate::commands::tracking::remember_script_keys(shared, client, &run.tracked_keys);
    }
    resolve_files(out)
}

/// The reply bytes with the large values that were left to be read at send
/// time read now (the script needs them).
fn resolve_files(out: Out) -> BytesMut {
    if out.files.is_empty() {
        return out.buf;
    }
    let mut bytes = BytesMut::with_capacity(out.buf.len());
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
                blinkdb_engine::blob_read_error(&e).as_bytes(),
            ),
        }
        at = pos;
    }
    bytes.extend_from_slice(&out.buf[at..]);
    bytes
}
