//! Server commands: COMMAND, CONFIG, INFO, TIME, SHUTDOWN, MEMORY, LASTSAVE.

use super::args::*;
use super::table::{CommandSpec, COMMANDS};
use super::Ctx;
use crate::protocol::{Args, Out};
use blinkdb_engine::pattern::glob_match;

fn reply_command_info(out: &mut Out, c: &CommandSpec) {
    out.array(10);
    out.bulk(c.name.as_bytes());
    out.int(c.arity as i64);
    let flags = c.flag_names();
    out.set(flags.len());
    for f in flags {
        out.simple(f);
    }
    out.int(c.first_key as i64);
    out.int(c.last_key as i64);
    out.int(c.step as i64);
    let cat = format!("@{}", c.group);
    out.set(1);
    out.simple(&cat);
    out.array(0); // tips
    out.array(0); // key specs
    out.array(0); // subcommands
}

fn reply_command_docs(out: &mut Out, c: &CommandSpec) {
    out.bulk(c.name.as_bytes());
    out.map(3);
    out.bulk(b"summary");
    out.bulk(c.summary.as_bytes());
    out.bulk(b"since");
    out.bulk(c.since.as_bytes());
    out.bulk(b"group");
    out.bulk(c.group.as_bytes());
}

pub fn command(ctx: &mut Ctx, args: &Args) {
    if args.len() == 1 {
        ctx.out.array(COMMANDS.len());
        for c in COMMANDS {
            reply_command_info(ctx.out, c);
        }
        return;
    }
    let sub = String::from_utf8_lossy(args[1]).to_ascii_lowercase();
    match sub.as_str() {
        "count" if args.len() == 2 => ctx.out.int(COMMANDS.len() as i64),
        "list" => {
            let mut names: Vec<&str> = COMMANDS.iter().map(|c| c.name).collect();
            if args.len() == 5 && eq_ic(args[2], "filterby") && eq_ic(args[3], "pattern") {
                names.retain(|n| glob_match(args[4], n.as_bytes(), true));
            } else if args.len() != 2 {
                return ctx.syntax_error();
            }
            ctx.out.strs(names.iter().map(|n| n.as_bytes()));
        }
        "info" => {
            let specs: Vec<_> = if args.len() == 2 {
                COMMANDS.iter().map(Some).collect()
            } else {
                args[2..].iter().map(|n| super::lookup(n)).collect()
            };
            ctx.out.array(specs.len());
            for s in specs {
                match s {
                    Some(c) => reply_command_info(ctx.out, c),
                    None => ctx.out.null_array(),
                }
            }
        }
        "docs" => {
            let specs: Vec<_> = if args.len() == 2 {
                COMMANDS.iter().collect()
            } else {
                args[2..].iter().filter_map(|n| super::lookup(n)).collect()
            };
            ctx.out.map(specs.len());
            for c in specs {
                reply_command_docs(ctx.out, c);
            }
        }
        "getkeys" if args.len() >= 3 => command_getkeys(ctx, args),
        "count" | "getkeys" => ctx.arity_error(&format!("command|{sub}")),
        _ => ctx.out.error(&format!(
            "ERR unknown subcommand '{}'. Try COMMAND HELP.",
            String::from_utf8_lossy(args[1])
        )),
    }
}

fn command_getkeys(ctx: &mut Ctx, args: &Args) {
    let Some(c) = super::lookup(args[2]) else {
        return ctx.out.error("ERR Invalid command specified");
    };
    let argv = &args[2..];
    let argc = argv.len() as i32;
    if (c.arity > 0 && argc != c.arity) || argc < -c.arity {
        return ctx
            .out
            .error("ERR Invalid number of arguments specified for command");
    }
    if c.first_key == 0 {
        return ctx.out.error("ERR The command has no key arguments");
    }
    let last = if c.last_key < 0 {
        argc + c.last_key
    } else {
        c.last_key
    };
    let keys: Vec<&[u8]> = (c.first_key..=last)
        .step_by(c.step.max(1) as usize)
        .filter_map(|i| argv.get(i as usize).map(|a| &a[..]))
        .collect();
    ctx.out.strs(keys.into_iter());
}

pub fn config(ctx: &mut Ctx, args: &Args) {
    let sub = String::from_utf8_lossy(args[1]).to_ascii_lowercase();
    match sub.as_str() {
        "get" if args.len() >= 3 => {
            let cfg = ctx.shared.config();
            let pairs: Vec<(&str, String)> = cfg
                .iter()
                .filter(|(name, _)| {
                    args[2..]
                        .iter()
                        .any(|p| glob_match(p, name.as_bytes(), true))
                })
                .map(|(n, v)| (n, crate::config::Config::shown(n, v)))
                .collect();
            drop(cfg);
            ctx.out.map(pairs.len());
            for (n, v) in pairs {
                ctx.out.bulk(n.as_bytes());
                ctx.out.bulk(v.as_bytes());
            }
        }
        "set" if args.len() >= 4 && args.len().is_multiple_of(2) => {
            let pairs: Vec<(String, String)> = args[2..]
                .chunks(2)
                .map(|p| {
                    (
                        String::from_utf8_lossy(p[0]).to_ascii_lowercase(),
                        String::from_utf8_lossy(p[1]).into_owned(),
                    )
                })
                .collect();
            match ctx.shared.config_set(&pairs) {
                Ok(()) => ctx.out.ok(),
                Err((name, e)) if e == "unknown" => ctx.out.error(&format!(
                    "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
                )),
                Err((name, e)) => ctx.out.error(&format!(
                    "ERR CONFIG SET failed (possibly related to argument '{name}') - {e}"
                )),
            }
        }
        "resetstat" if args.len() == 2 => {
            ctx.shared.stats.reset();
            let engine = &ctx.shared.engine.stats;
            engine
                .evicted_keys
                .store(0, std::sync::atomic::Ordering::Relaxed);
            engine
                .expired_keys
                .store(0, std::sync::atomic::Ordering::Relaxed);
            ctx.out.ok();
        }
        "rewrite" if args.len() == 2 => match ctx.shared.config().rewrite() {
            Ok(()) => ctx.out.ok(),
            Err(e) => ctx.out.error(&format!("ERR {e}")),
        },
        "get" | "set" | "resetstat" | "rewrite" => ctx.arity_error(&format!("config|{sub}")),
        "help" => {
            let lines = [
                "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "GET <pattern>",
                "    Return parameters matching the glob-like <pattern> and their values.",
                "SET <directive> <value>",
                "    Set the configuration <directive> to <value>.",
                "RESETSTAT",
                "    Reset statistics reported by the INFO command.",
                "REWRITE",
                "    Rewrite the configuration file.",
                "HELP",
                "    Print this help.",
            ];
            ctx.out.help(&lines);
        }
        _ => ctx.out.error(&format!(
            "ERR unknown subcommand '{}'. Try CONFIG HELP.",
            String::from_utf8_lossy(args[1])
        )),
    }
}

pub fn info(ctx: &mut Ctx, args: &Args) {
    ctx.client.flush_stats(ctx.shared, 0, true);
    let sections: Vec<String> = args[1..]
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    let text = crate::info::render(ctx.shared, &sections);
    ctx.out.verbatim(&text);
}

pub fn time(ctx: &mut Ctx, _args: &Args) {
    let us = blinkdb_engine::clock::now_us();
    ctx.out.array(2);
    ctx.out.bulk((us / 1_000_000).to_string().as_bytes());
    ctx.out.bulk((us % 1_000_000).to_string().as_bytes());
}

pub fn shutdown(ctx: &mut Ctx, args: &Args) {
    for a in &args[1..] {
        let ok = ["nosave", "save", "now", "force", "abort"]
            .iter()
            .any(|o| eq_ic(a, o));
        if !ok {
            return ctx.syntax_error();
        }
        if eq_ic(a, "abort") {
            return ctx.out.error("ERR No shutdown in progress.");
        }
    }
    tracing::warn!("User requested shutdown...");
    ctx.shared.request_stop();
    ctx.client.close_after_reply = true;
}

pub fn memory(ctx: &mut Ctx, args: &Args) {
    let sub = String::from_utf8_lossy(args[1]).to_ascii_lowercase();
    match sub.as_str() {
        "usage" if args.len() >= 3 => {
            let mut j = 3;
            while j < args.len() {
                if eq_ic(args[j], "samples") && j + 1 < args.len() {
                    match parse_i64(args[j + 1]) {
                        None => return ctx.out.error(ERR_NOT_INT),
                        Some(n) if n < 0 => return ctx.syntax_error(),
                        Some(_) => {}
                    }
                    j += 2;
                } else {
                    return ctx.syntax_error();
                }
            }
            let key = &args[2];
            // Key and value bytes, plus the map slot, entry and allocator headers.
            let size = ctx.shared.engine.peek(ctx.db(), key, |e| {
                e.map(|e| key.len() + e.value().heap_size() + 72)
            });
            match size {
                Some(n) => ctx.out.int(n as i64),
                None => ctx.out.null(),
            }
        }
        "usage" => ctx.arity_error("memory|usage"),
        "help" => {
            let lines = [
                "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "USAGE <key> [SAMPLES <count>]",
                "    Return memory in bytes used by <key> and its value.",
                "HELP",
                "    Print this help.",
            ];
            ctx.out.help(&lines);
        }
        _ => ctx.out.error(&format!(
            "ERR unknown subcommand '{}'. Try MEMORY HELP.",
            String::from_utf8_lossy(args[1])
        )),
    }
}

pub fn bgrewriteaof(ctx: &mut Ctx, _args: &Args) {
    match crate::persistence::start_rewrite(&ctx.shared.arc()) {
        Ok(()) => ctx
            .out
            .simple("Background append only file rewriting started"),
        Err(e) => ctx.out.error(e),
    }
}

pub fn lastsave(ctx: &mut Ctx, _args: &Args) {
    ctx.out.int((ctx.shared.last_save_ms() / 1000) as i64);
}
