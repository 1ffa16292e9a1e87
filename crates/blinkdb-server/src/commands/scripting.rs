//! EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT, FCALL, FCALL_RO and FUNCTION
//! (crate::scripting does the work).

use super::Ctx;
use crate::protocol::Args;

pub fn eval(ctx: &mut Ctx, args: &Args) {
    crate::scripting::eval(ctx, args, false, false);
}

pub fn evalsha(ctx: &mut Ctx, args: &Args) {
    crate::scripting::eval(ctx, args, true, false);
}

pub fn eval_ro(ctx: &mut Ctx, args: &Args) {
    crate::scripting::eval(ctx, args, false, true);
}

pub fn evalsha_ro(ctx: &mut Ctx, args: &Args) {
    crate::scripting::eval(ctx, args, true, true);
}

pub fn script(ctx: &mut Ctx, args: &Args) {
    crate::scripting::script(ctx, args);
}

pub fn fcall(ctx: &mut Ctx, args: &Args) {
    crate::scripting::functions::fcall(ctx, args, false);
}

pub fn fcall_ro(ctx: &mut Ctx, args: &Args) {
    crate::scripting::functions::fcall(ctx, args, true);
}

pub fn function(ctx: &mut Ctx, args: &Args) {
    crate::scripting::functions::function(ctx, args);
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    // scripting
    cmd!("eval", -3, NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | MAY_REPLICATE, NOKEYS, "scripting", "2.6.0", "Execute a Lua script server side", eval;
        props: props::RUNS_SCRIPT,
        acl: acl::SCRIPTING,
        complexity: "Depends on the script that is executed.",
        keys: "RW,access,update index:2 keynum:0:1:1 | We cannot tell how the keys will be used so we assume the worst, RW and UPDATE",
        args: "script:string numkeys:integer key:key?* arg:string?*"),
    cmd!("evalsha", -3, NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | MAY_REPLICATE, NOKEYS, "scripting", "2.6.0", "Execute a Lua script server side", evalsha;
        props: props::RUNS_SCRIPT | props::BY_SHA,
        acl: acl::SCRIPTING,
        complexity: "Depends on the script that is executed.",
        keys: "RW,access,update index:2 keynum:0:1:1",
        args: "sha1:string numkeys:integer key:key?* arg:string?*"),
    cmd!("eval_ro", -3, READONLY | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS, NOKEYS, "scripting", "7.0.0", "Execute a read-only Lua script server side", eval_ro;
        props: props::RUNS_SCRIPT,
        acl: acl::SCRIPTING,
        complexity: "Depends on the script that is executed.",
        keys: "RO,access index:2 keynum:0:1:1 | We cannot tell how the keys will be used so we assume the worst, RO and ACCESS",
        args: "script:string numkeys:integer key:key?* arg:string?*"),
    cmd!("evalsha_ro", -3, READONLY | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS, NOKEYS, "scripting", "7.0.0", "Execute a read-only Lua script server side", evalsha_ro;
        props: props::RUNS_SCRIPT | props::BY_SHA,
        acl: acl::SCRIPTING,
        complexity: "Depends on the script that is executed.",
        keys: "RO,access index:2 keynum:0:1:1",
        args: "sha1:string numkeys:integer key:key?* arg:string?*"),
    cmd!("script", -2, CONTAINER, NOKEYS, "scripting", "2.6.0", "A container for Lua scripts management commands", NO_HANDLER;
        complexity: "Depends on subcommand."),
    cmd!("script|debug", 3, NOSCRIPT, NOKEYS, "scripting", "3.2.0", "Set the debug mode for executed scripts.", script;
        acl: acl::SCRIPTING,
        complexity: "O(1)",
        args: "mode:oneof(yes:YES sync:SYNC no:NO)"),
    cmd!("script|exists", -3, NOSCRIPT, NOKEYS, "scripting", "2.6.0", "Check existence of scripts in the script cache.", script;
        acl: acl::SCRIPTING,
        complexity: "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).",
        args: "sha1:string*",
        tips: &["request_policy:all_shards", "response_policy:agg_logical_and"]),
    cmd!("script|flush", -2, NOSCRIPT, NOKEYS, "scripting", "2.6.0", "Remove all the scripts from the script cache.", script;
        acl: acl::SCRIPTING,
        complexity: "O(N) with N being the number of scripts in cache",
        args: "async:oneof?^6.2.0(async:ASYNC sync:SYNC)",
        history: &[("6.2.0", "Added the `ASYNC` and `SYNC` flushing mode modifiers.")],
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"]),
    cmd!("script|help", 2, LOADING_OK | STALE, NOKEYS, "scripting", "5.0.0", "Show helpful text about the different subcommands", script;
        acl: acl::SCRIPTING,
        complexity: "O(1)"),
    cmd!("script|kill", 2, NOSCRIPT | ALLOW_BUSY, NOKEYS, "scripting", "2.6.0", "Kill the script currently in execution.", script;
        acl: acl::SCRIPTING,
        complexity: "O(1)",
        tips: &["request_policy:all_shards", "response_policy:one_succeeded"]),
    cmd!("script|load", 3, NOSCRIPT | STALE, NOKEYS, "scripting", "2.6.0", "Load the specified Lua script into the script cache.", script;
        acl: acl::SCRIPTING,
        complexity: "O(N) with N being the length in bytes of the script body.",
        args: "script:string",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"]),    cmd!("fcall", -3, NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS, NOKEYS, "scripting", "7.0.0", "Invoke a function", fcall;
        props: props::RUNS_SCRIPT | props::CALLS_FUNCTION,
        acl: acl::SCRIPTING,
        complexity: "Depends on the function that is executed.",
        keys: "RW,access,update index:2 keynum:0:1:1 | We cannot tell how the keys will be used so we assume the worst, RW and UPDATE",
        args: "function:string numkeys:integer key:key?* arg:string?*"),
    cmd!("fcall_ro", -3, READONLY | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS, NOKEYS, "scripting", "7.0.0", "Invoke a read-only function", fcall_ro;
        props: props::RUNS_SCRIPT | props::CALLS_FUNCTION,
        acl: acl::SCRIPTING,
        complexity: "Depends on the function that is executed.",
        keys: "RO,access index:2 keynum:0:1:1 | We cannot tell how the keys will be used so we assume the worst, RO and ACCESS",
        args: "function:string numkeys:integer key:key?* arg:string?*"),
    cmd!("function", -2, CONTAINER, NOKEYS, "scripting", "7.0.0", "A container for function commands", NO_HANDLER;
        complexity: "Depends on subcommand."),
    cmd!("function|load", -3, WRITE | DENYOOM | NOSCRIPT, NOKEYS, "scripting", "7.0.0", "Create a function with the given arguments (name, code, description)", function;
        acl: acl::SCRIPTING,
        complexity: "O(1) (considering compilation time is redundant)",
        args: "replace:REPLACE? function-code:string",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    cmd!("function|delete", 3, WRITE | NOSCRIPT, NOKEYS, "scripting", "7.0.0", "Delete a function by name", function;
        acl: acl::SCRIPTING,
        complexity: "O(1)",
        args: "library-name:string",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    cmd!("function|flush", -2, WRITE | NOSCRIPT, NOKEYS, "scripting", "7.0.0", "Deleting all functions", function;
        acl: acl::SCRIPTING,
        complexity: "O(N) where N is the number of functions deleted",
        args: "async:oneof?(async:ASYNC sync:SYNC)",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    cmd!("function|list", -2, NOSCRIPT, NOKEYS, "scripting", "7.0.0", "List information about all the functions", function;
        acl: acl::SCRIPTING,
        complexity: "O(N) where N is the number of functions",
        args: "library-name-pattern:string=LIBRARYNAME? withcode:WITHCODE?",
        tips: &["nondeterministic_output_order"]),
    cmd!("function|stats", 2, NOSCRIPT | ALLOW_BUSY, NOKEYS, "scripting", "7.0.0", "Return information about the function currently running (name, description, duration)", function;
        acl: acl::SCRIPTING,
        complexity: "O(1)",
        tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"]),
    cmd!("function|kill", 2, NOSCRIPT | ALLOW_BUSY, NOKEYS, "scripting", "7.0.0", "Kill the function currently in execution.", function;
        acl: acl::SCRIPTING,
        complexity: "O(1)",
        tips: &["request_policy:all_shards", "response_policy:one_succeeded"]),
    cmd!("function|dump", 2, NOSCRIPT, NOKEYS, "scripting", "7.0.0", "Dump all functions into a serialized binary payload", function;
        acl: acl::SCRIPTING,
        complexity: "O(N) where N is the number of functions"),
    cmd!("function|restore", -3, WRITE | DENYOOM | NOSCRIPT, NOKEYS, "scripting", "7.0.0", "Restore all the functions on the given payload", function;
        acl: acl::SCRIPTING,
        complexity: "O(N) where N is the number of functions on the payload",
        args: "serialized-value:string policy:oneof?(flush:FLUSH append:APPEND replace:REPLACE)",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    cmd!("function|help", 2, LOADING_OK | STALE, NOKEYS, "scripting", "7.0.0", "Show helpful text about the different subcommands", function;
        acl: acl::SCRIPTING,
        complexity: "O(1)"),
];
