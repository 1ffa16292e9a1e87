//! SCRIPT DEBUG SYNC: Redis's Lua debugger (LDB), as redis-cli --ldb-sync-mode
//! speaks to it.
//!
//! How it waits for the user: the script runs on a fiber (run.rs). When the
//! line hook stops, it hands the session's log to the caller's side and
//! suspends (run::debug_wait); the connection writes the log, reads the
//! next request and gives it back through `run::debugger_input`, which
//! resumes the script. So the debugger never blocks its connection thread
//! in a read (Redis does, in SYNC mode): the thread's other connections
//! keep being served (they get BUSY, as while a slow script runs, since the
//! script holds the keyspace until it ends).
//!
//! YES (Redis forks a child that runs the session on a copy of the data
//! and throws its changes away) is refused: BlinkDB does not fork, and
//! running YES as SYNC would keep changes Redis discards
//! (docs/compatibility.md).

mod render;

use bytes::BytesMut;
use mlua::{ffi, Lua, Table, Value};
use render::{atoi, cat_value, human};
use std::cell::RefCell;
use std::time::Instant;

/// Redis's LDB_BREAKPOINTS_MAX and LDB_MAX_LEN_DEFAULT.
const BREAKPOINTS_MAX: usize = 64;
const MAX_LEN_DEFAULT: usize = 256;
/// A debugger command longer than this ends the session with an error
/// (Redis's 1 MB command buffer limit), arguments as Redis's parser takes
/// them: at most 1024, each at most 1024 bytes.
const MAX_ARGS: usize = 1024;
const MAX_ARG_LEN: usize = 1024;

/// One debugging session (one EVAL of a client in SCRIPT DEBUG SYNC).
struct Session {
    src: Vec<Vec<u8>>,
    bp: Vec<i32>,
    /// Stop at the next line whatever the breakpoints.
    step: bool,
    /// redis.breakpoint() was called: stop at the next line.
    luabp: bool,
    currentline: i32,
    maxlen: usize,
    maxlen_hint_sent: bool,
    logs: Vec<Vec<u8>>,
    /// Frames to write to the client (each a multi-bulk of status lines).
    output: BytesMut,
    /// The request the client sent while the script waited.
    input: Option<Vec<Vec<u8>>>,
    /// The script's environment (where `eval` runs its code).
    env: Table,
    /// When the script last resumed (the infinite loop timeout).
    resumed: Instant,
    timeout_ms: u64,
}

thread_local! {
    /// The session of the script running on this thread (one at most: a
    /// script holds every other one out).
    static LDB: RefCell<Option<Session>> = const { RefCell::new(None) };
}

fn with<R>(f: impl FnOnce(&mut Session) -> R) -> Option<R> {
    LDB.with(|l| l.borrow_mut().as_mut().map(f))
}

/// Starts a session for a script with this body, before it runs.
pub(super) fn start(body: &[u8], env: Table, timeout_ms: u64) {
    let mut body = body;
    while let [rest @ .., b'\n' | b'\r'] = body {
        body = rest;
    }
    let src = body.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    let session = Session {
        src,
        bp: Vec::new(),
        step: true,
        luabp: false,
        currentline: -1,
        maxlen: MAX_LEN_DEFAULT,
        maxlen_hint_sent: false,
        logs: Vec::new(),
        output: BytesMut::new(),
        input: None,
        env,
        resumed: Instant::now(),
        timeout_ms,
    };
    LDB.with(|l| *l.borrow_mut() = Some(session));
    tracing::warn!("Redis synchronous debugging eval session started");
}

/// Whether a session runs on this thread.
pub fn active() -> bool {
    LDB.with(|l| l.borrow().is_some())
}

/// Ends the session: its last log and `<endsession>`, the bytes to send
/// before the script's reply.
pub(super) fn end() -> BytesMut {
    let Some(mut s) = LDB.with(|l| l.borrow_mut().take()) else {
        return BytesMut::new();
    };
    s.log(b"<endsession>".to_vec());
    s.send_logs();
    tracing::warn!("Redis synchronous debugging eval session ended");
    s.output
}

/// The frames the session has to send.
pub(super) fn take_output() -> BytesMut {
    with(|s| std::mem::take(&mut s.output)).unwrap_or_default()
}

/// The client's request, for the script waiting on it.
pub(super) fn set_input(args: &[&[u8]]) {
    with(|s| s.input = Some(args.iter().map(|a| a.to_vec()).collect()));
}

/// Redis's ldbIsEnabled: redis.call logs its command and reply only while
/// stepping.
fn logging() -> bool {
    with(|s| s.step).unwrap_or(false)
}

/// redis.call is about to run `args`: logged while stepping.
pub fn log_call(args: &[&[u8]]) {
    if !logging() {
        return;
    }
    let mut line = b"<redis>".to_vec();
    for (j, a) in args.iter().enumerate() {
        if j == 10 {
            line.extend_from_slice(format!(" ... ({} more)", args.len() - j - 1).as_bytes());
            break;
        }
        line.push(b' ');
        line.extend_from_slice(a);
    }
    with(|s| s.log(line));
}

/// redis.call's reply (RESP): logged while stepping, as Redis shows it.
pub fn log_reply(reply: &[u8]) {
    if !logging() {
        return;
    }
    let mut line = b"<reply> ".to_vec();
    let mut at = 0;
    human(&mut line, reply, &mut at);
    with(|s| s.log_maxlen(line));
}

/// An error raised to the script by redis.call while stepping.
pub fn log_error(msg: &[u8]) {
    if !logging() {
        return;
    }
    let mut line = b"<error> ".to_vec();
    line.extend_from_slice(msg);
    with(|s| s.log(line));
}

/// redis.debug(...): the values rendered in the log.
pub fn debug(values: &[Value]) {
    with(|s| {
        let mut line = format!("<debug> line {}: ", s.currentline).into_bytes();
        for (i, v) in values.iter().enumerate() {
            if i > 0 {
                line.extend_from_slice(b", ");
            }
            cat_value(&mut line, v, 0);
        }
        s.log(line);
    });
}

/// redis.breakpoint(): stop at the next line; false outside a session.
pub fn breakpoint() -> bool {
    with(|s| s.luabp = true).is_some()
}

impl Session {
    fn log(&mut self, line: Vec<u8>) {
        self.logs.push(line);
    }

    fn log_maxlen(&mut self, mut line: Vec<u8>) {
        if self.maxlen > 0 && line.len() > self.maxlen {
            line.truncate(self.maxlen);
            line.extend_from_slice(b" ...");
            self.log(line);
            if !self.maxlen_hint_sent {
                self.maxlen_hint_sent = true;
                self.log(
                    b"<hint> The above reply was trimmed. Use 'maxlen 0' to disable trimming."
                        .to_vec(),
                );
            }
        } else {
            self.log(line);
        }
    }

    /// The logs as a multi-bulk of status lines (newlines made spaces).
    fn send_logs(&mut self) {
        let logs = std::mem::take(&mut self.logs);
        self.output
            .extend_from_slice(format!("*{}\r\n", logs.len()).as_bytes());
        for mut l in logs {
            for b in l.iter_mut() {
                if *b == b'\r' || *b == b'\n' {
                    *b = b' ';
                }
            }
            self.output.extend_from_slice(b"+");
            self.output.extend_from_slice(&l);
            self.output.extend_from_slice(b"\r\n");
        }
    }

    fn source_line(&self, line: i32) -> &[u8] {
        match usize::try_from(line - 1).ok().and_then(|i| self.src.get(i)) {
            Some(l) => l,
            None => b"<out of range source code line>",
        }
    }

    fn log_source_line(&mut self, line: i32) {
        let bp = self.bp.contains(&line);
        let prefix = match (self.currentline == line, bp) {
            (true, true) => "->#",
            (true, false) => "-> ",
            (false, true) => "  #",
            (false, false) => "   ",
        };
        let mut l = format!("{prefix}{line:<3} ").into_bytes();
        l.extend_from_slice(self.source_line(line));
        self.log(l);
    }

    fn list(&mut self, around: i32, context: i32) {
        for j in 1..=self.src.len() as i32 {
            if around != 0 && (around as i64 - j as i64).abs() > context as i64 {
                continue;
            }
            self.log_source_line(j);
        }
    }

    fn add_breakpoint(&mut self, line: i32) -> bool {
        if line <= 0 || line as usize > self.src.len() {
            return false;
        }
        if !self.bp.contains(&line) && self.bp.len() != BREAKPOINTS_MAX {
            self.bp.push(line);
            return true;
        }
        false
    }

    fn breaks(&mut self, argv: &[Vec<u8>]) {
        if argv.len() == 1 {
            if self.bp.is_empty() {
                self.log(b"No breakpoints set. Use 'b <line>' to add one.".to_vec());
            } else {
                self.log(format!("{} breakpoints set:", self.bp.len()).into_bytes());
                for l in self.bp.clone() {
                    self.log_source_line(l);
                }
            }
            return;
        }
        for arg in &argv[1..] {
            let Some(line) = std::str::from_utf8(arg)
                .ok()
                .and_then(|t| crate::commands::args::parse_i64(t.as_bytes()))
            else {
                let mut l = b"Invalid argument:'".to_vec();
                l.extend_from_slice(arg);
                l.push(b'\'');
                self.log(l);
                continue;
            };
            if line == 0 {
                self.bp.clear();
                self.log(b"All breakpoints removed.".to_vec());
            } else if line > 0 {
                if self.bp.len() == BREAKPOINTS_MAX {
                    self.log(b"Too many breakpoints set.".to_vec());
                } else if line <= i32::MAX as i64 && self.add_breakpoint(line as i32) {
                    self.list(line as i32, 1);
                } else {
                    self.log(b"Wrong line number.".to_vec());
                }
            } else {
                let line = line.unsigned_abs();
                match self.bp.iter().position(|&b| b as u64 == line) {
                    Some(i) => {
                        self.bp.remove(i);
                        self.log(b"Breakpoint removed.".to_vec());
                    }
                    None => self.log(b"No breakpoint in the specified line.".to_vec()),
                }
            }
        }
    }

    fn maxlen(&mut self, argv: &[Vec<u8>]) {
        if argv.len() == 2 {
            let mut n = atoi(&argv[1]);
            self.maxlen_hint_sent = true;
            if n != 0 && n <= 60 {
                n = 60;
            }
            // atoi of a negative number, stored in a size_t by Redis.
            self.maxlen = n as i64 as u64 as usize;
        }
        let line = if self.maxlen > 0 {
            format!(
                "<value> replies are truncated at {} bytes.",
                self.maxlen as i32
            )
        } else {
            "<value> replies are unlimited.".to_string()
        };
        self.log(line.into_bytes());
    }
}

const ABORTED: &str = "script aborted for user request";
const PROTOCOL_ERROR: &str = "protocol error";

/// The errors the debugger raises in the script: Redis raises them as
/// error tables, which carry no position.
pub fn raised_by_debugger(text: &str) -> bool {
    text == ABORTED || text == PROTOCOL_ERROR
}

/// What the line hook decides.
pub(super) enum Stop {
    Go,
    /// Raise this error in the script (abort, a protocol error).
    Fail(String),
}

/// The debugger's line (and count) hook, on the script's fiber: stops on
/// a step, a breakpoint, redis.breakpoint() or a script running too long,
/// then serves the client's debugger commands until one resumes.
pub(super) fn hook(lua: &Lua, debug: &mlua::Debug, wait: impl Fn() -> bool) -> Stop {
    let source = debug.source();
    let user = source
        .short_src
        .as_deref()
        .is_some_and(|s| s.contains("user_script"));
    if !user {
        return Stop::Go;
    }
    let line = debug.curr_line();
    let count = matches!(debug.event(), mlua::DebugEvent::Count);
    let decided = with(|s| {
        s.currentline = line;
        let bp = s.bp.contains(&line) || s.luabp;
        let mut timeout = false;
        if count && !s.step && !bp {
            if s.resumed.elapsed().as_millis() as u64 >= s.timeout_ms {
                timeout = true;
                s.step = true;
            } else {
                return false;
            }
        }
        if !(s.step || bp) {
            return false;
        }
        let reason = if bp {
            if s.luabp {
                "redis.breakpoint() called"
            } else {
                "break point"
            }
        } else if timeout {
            "timeout reached, infinite loop?"
        } else {
            "step over"
        };
        s.step = false;
        s.luabp = false;
        s.log(format!("* Stopped at {line}, stop reason = {reason}").into_bytes());
        s.log_source_line(line);
        s.send_logs();
        true
    });
    if decided != Some(true) {
        return Stop::Go;
    }
    let stop = repl(lua, wait);
    with(|s| s.resumed = Instant::now());
    stop
}

/// Serves debugger commands until one resumes the script (ldbRepl).
fn repl(lua: &Lua, wait: impl Fn() -> bool) -> Stop {
    loop {
        if !wait() {
            // The client went away: the script runs on without stops.
            with(|s| {
                s.step = false;
                s.bp.clear();
            });
            return Stop::Go;
        }
        let Some(argv) = with(|s| s.input.take()).flatten() else {
            continue;
        };
        if argv.is_empty()
            || argv.len() > MAX_ARGS
            || argv.iter().any(|a| a.is_empty() || a.len() > MAX_ARG_LEN)
        {
            return Stop::Fail(PROTOCOL_ERROR.into());
        }
        let cmd = String::from_utf8_lossy(&argv[0]).to_ascii_lowercase();
        match cmd.as_str() {
            "h" | "help" => with(|s| {
                for l in HELP {
                    s.log(l.as_bytes().to_vec());
                }
            }),
            "s" | "step" | "n" | "next" => {
                with(|s| s.step = true);
                return Stop::Go;
            }
            "c" | "continue" => return Stop::Go,
            "t" | "trace" => {
                trace(lua);
                Some(())
            }
            "m" | "maxlen" => with(|s| s.maxlen(&argv)),
            "b" | "break" => with(|s| s.breaks(&argv)),
            "e" | "eval" => {
                eval(lua, &argv);
                Some(())
            }
            "a" | "abort" => return Stop::Fail(ABORTED.into()),
            "r" | "redis" if argv.len() > 1 => {
                redis(lua, &argv);
                Some(())
            }
            "p" | "print" => {
                if argv.len() == 2 {
                    print(lua, &argv[1]);
                } else {
                    print_all(lua);
                }
                Some(())
            }
            "l" | "list" => with(|s| {
                let mut around = s.currentline;
                let mut ctx = 5;
                if argv.len() > 1 {
                    let n = atoi(&argv[1]);
                    if n > 0 {
                        around = n;
                    }
                }
                if argv.len() > 2 {
                    ctx = atoi(&argv[2]);
                }
                s.list(around, ctx);
            }),
            "w" | "whole" => with(|s| s.list(1, 1_000_000)),
            _ => with(|s| {
                s.log(
                    b"<error> Unknown Redis Lua debugger command or wrong number of arguments."
                        .to_vec(),
                )
            }),
        };
        with(|s| s.send_logs());
    }
}

const HELP: &[&str] = &[
    "Redis Lua debugger help:",
    "[h]elp               Show this help.",
    "[s]tep               Run current line and stop again.",
    "[n]ext               Alias for step.",
    "[c]ontinue           Run till next breakpoint.",
    "[l]ist               List source code around current line.",
    "[l]ist [line]        List source code around [line].",
    "                     line = 0 means: current position.",
    "[l]ist [line] [ctx]  In this form [ctx] specifies how many lines",
    "                     to show before/after [line].",
    "[w]hole              List all source code. Alias for 'list 1 1000000'.",
    "[p]rint              Show all the local variables.",
    "[p]rint <var>        Show the value of the specified variable.",
    "                     Can also show global vars KEYS and ARGV.",
    "[b]reak              Show all breakpoints.",
    "[b]reak <line>       Add a breakpoint to the specified line.",
    "[b]reak -<line>      Remove breakpoint from the specified line.",
    "[b]reak 0            Remove all breakpoints.",
    "[t]race              Show a backtrace.",
    "[e]val <code>        Execute some Lua code (in a different callframe).",
    "[r]edis <cmd>        Execute a Redis command.",
    "[m]axlen [len]       Trim logged Redis replies and Lua var dumps to len.",
    "                     Specifying zero as <len> means unlimited.",
    "[a]bort              Stop the execution of the script. In sync",
    "                     mode dataset changes will be retained.",
    "",
    "Debugger functions you can call from Lua scripts:",
    "redis.debug()        Produce logs in the debugger console.",
    "redis.breakpoint()   Stop execution like if there was a breakpoint in the",
    "                     next line of code.",
];

fn log_value(prefix: &[u8], v: &Value) {
    let mut line = prefix.to_vec();
    cat_value(&mut line, v, 0);
    with(|s| s.log_maxlen(line));
}

/// The local variables of the frame `level` levels above the hooked one
/// (0: the running function), by name and value.
fn locals(lua: &Lua, level: i32) -> Option<Vec<(Vec<u8>, Value)>> {
    let mut found = Vec::new();
    // SAFETY: only Lua API calls that raise no error (getstack, getlocal,
    // pushes): exec_raw's protected call is one C frame more on the stack.
    let r = unsafe {
        lua.exec_raw::<mlua::MultiValue>((), |state| {
            let mut ar: ffi::lua_Debug = std::mem::zeroed();
            if ffi::lua_getstack(state, level + 1, &mut ar) == 0 {
                return;
            }
            let mut i = 1;
            loop {
                let name = ffi::lua_getlocal(state, &ar, i);
                if name.is_null() {
                    break;
                }
                let bytes = std::ffi::CStr::from_ptr(name).to_bytes();
                ffi::lua_pushlstring(state, bytes.as_ptr() as *const _, bytes.len());
                ffi::lua_insert(state, -2);
                i += 1;
            }
        })
    };
    let values: Vec<Value> = r.ok()?.into_iter().collect();
    if values.is_empty() && !frame_exists(lua, level) {
        return None;
    }
    for pair in values.chunks(2) {
        if let [Value::String(n), v] = pair {
            found.push((n.as_bytes().to_vec(), v.clone()));
        }
    }
    Some(found)
}

fn frame_exists(lua: &Lua, level: i32) -> bool {
    lua.inspect_stack(level as usize).is_some()
}

fn print(lua: &Lua, name: &[u8]) {
    let mut level = 0;
    while let Some(vars) = locals(lua, level) {
        if let Some((_, v)) = vars.iter().find(|(n, _)| n == name) {
            return log_value(b"<value> ", v);
        }
        level += 1;
    }
    if name == b"ARGV" || name == b"KEYS" {
        // EVAL sets them in the real globals (convert.rs).
        let name = std::str::from_utf8(name).unwrap_or_default();
        let v = lua.globals().raw_get::<Value>(name).unwrap_or(Value::Nil);
        log_value(b"<value> ", &v);
    } else {
        with(|s| s.log(b"No such variable.".to_vec()));
    }
}

fn print_all(lua: &Lua) {
    let mut vars = 0;
    for (name, v) in locals(lua, 0).unwrap_or_default() {
        if name.windows(12).any(|w| w == b"(*temporary)") {
            continue;
        }
        let mut prefix = b"<value> ".to_vec();
        prefix.extend_from_slice(&name);
        prefix.extend_from_slice(b" = ");
        log_value(&prefix, &v);
        vars += 1;
    }
    if vars == 0 {
        with(|s| s.log(b"No local variables in the current context.".to_vec()));
    }
}

fn trace(lua: &Lua) {
    let mut level = 0;
    while let Some(d) = lua.inspect_stack(level) {
        let src = d.source();
        if src
            .short_src
            .as_deref()
            .is_some_and(|s| s.contains("user_script"))
        {
            let names = d.names();
            let name = names.name.as_deref().unwrap_or("top level").to_string();
            let line = d.curr_line();
            with(|s| {
                let at = if level == 0 { "In" } else { "From" };
                s.log(format!("{at} {name}:").into_bytes());
                s.log_source_line(line);
            });
        }
        level += 1;
    }
    if level == 0 {
        with(|s| s.log(b"<error> Can't retrieve Lua stack.".to_vec()));
    }
}

fn eval(lua: &Lua, argv: &[Vec<u8>]) {
    let code = argv[1..].join(&b' ');
    let Some(env) = with(|s| s.env.clone()) else {
        return;
    };
    let load = |text: &[u8]| {
        lua.load(text)
            .set_name("@ldb_eval")
            .set_mode(mlua::ChunkMode::Text)
            .set_environment(env.clone())
            .into_function()
    };
    let mut expr = b"return ".to_vec();
    expr.extend_from_slice(&code);
    let f = match load(&expr).or_else(|_| load(&code)) {
        Ok(f) => f,
        Err(e) => return log_error_value(&e),
    };
    // A plain pcall, as Redis's: mlua's own call would add a traceback to
    // the error's text.
    // SAFETY: pcall catches what the code raises; the pushes cannot fail
    // (pcall leaves one value, the boolean takes the slot it freed).
    let result = unsafe {
        lua.exec_raw::<(bool, Value)>(f, |state| {
            let ok = ffi::lua_pcall(state, 0, 1, 0) == 0;
            ffi::lua_pushboolean(state, ok as std::ffi::c_int);
            ffi::lua_insert(state, -2);
        })
    };
    match result {
        Ok((true, v)) => log_value(b"<retval> ", &v),
        Ok((false, v)) => {
            let text = match &v {
                Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
                Value::Error(e) => super::api::error_text(e),
                Value::Table(t) => t.raw_get::<String>("err").unwrap_or_default(),
                other => other.type_name().to_string(),
            };
            with(|s| s.log(format!("<error> {text}").into_bytes()));
        }
        Err(e) => log_error_value(&e),
    }
}

fn log_error_value(e: &mlua::Error) {
    let text = match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        other => super::api::error_text(other),
    };
    with(|s| s.log(format!("<error> {text}").into_bytes()));
}

/// `redis <cmd>`: redis.call with the step flag set, so that the command
/// and its reply are logged.
fn redis(lua: &Lua, argv: &[Vec<u8>]) {
    let call = lua
        .globals()
        .raw_get::<Table>("redis")
        .or_else(|_| {
            with(|s| s.env.raw_get::<Table>("redis"))
                .unwrap_or(Err(mlua::Error::runtime("no redis table")))
        })
        .and_then(|r| r.get::<mlua::Function>("pcall"));
    let Ok(call) = call else { return };
    let args: Vec<mlua::String> = argv[1..]
        .iter()
        .filter_map(|a| lua.create_string(a).ok())
        .collect();
    with(|s| s.step = true);
    let _ = call.call::<Value>(mlua::Variadic::from_iter(args));
    with(|s| s.step = false);
}
