//! Server commands: CONFIG, INFO, TIME, SHUTDOWN, MEMORY, LASTSAVE.

use super::args::*;
use super::Ctx;
use crate::protocol::Args;
use blinkdb_engine::pattern::glob_match;

pub fn config(ctx: &mut Ctx, args: &Args) {
    let sub = String::from_utf8_lossy(args[1]).to_ascii_lowercase();
    match sub.as_str() {
        "get" if args.len() >= 3 => {
            let cfg = ctx.shared.config();
            let wanted = |name: &str| {
                args[2..]
                    .iter()
                    .any(|p| glob_match(p, name.as_bytes(), true))
            };
            let mut pairs: Vec<(&str, String)> = cfg
                .iter()
                .filter(|(name, _)| wanted(name))
                .map(|(n, v)| (n, crate::config::Config::shown(n, v)))
                .collect();
            // Old names (hash-max-ziplist-entries...) answer with their
            // option's value.
            for (old, new) in crate::config::aliases() {
                if wanted(old) {
                    if let Some((n, v)) = cfg.iter().find(|(n, _)| n == new) {
                        pairs.push((old, crate::config::Config::shown(n, v)));
                    }
                }
            }
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
            let protected = ctx
                .client
                .settings(ctx.shared)
                .enable_protected_configs
                .clone();
            let protected_ok = super::allows(&protected, ctx.client);
            match ctx.shared.config_set(&pairs, protected_ok) {
                Ok(()) => {
                    // A lowered maxmemory-clients (or maxmemory under a
                    // percentage) evicts now, as Redis's CONFIG SET does;
                    // nothing to do while the limit is off.
                    crate::client_eviction::from_command(ctx.shared, &ctx.client.info);
                    ctx.out.ok()
                }
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
            crate::cmdstats::reset();
            let engine = &ctx.shared.engine.stats;
            engine
                .evicted_keys
                .store(0, std::sync::atomic::Ordering::Relaxed);
            engine
                .expired_keys
                .store(0, std::sync::atomic::Ordering::Relaxed);
            blinkdb_engine::types::LAZYFREED.store(0, std::sync::atomic::Ordering::Relaxed);
            ctx.shared.replication.feed.reset_stats();
            ctx.out.ok();
        }
        "rewrite" if args.len() == 2 => match ctx.shared.config().rewrite(false) {
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
                "    Prints this help.",
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
    let has = |o: &str| args[1..].iter().any(|a| eq_ic(a, o));
    // As Redis: SAVE, or `save` points without NOSAVE, write the RDB file
    // first; a failed save stops the shutdown unless FORCE.
    let save = has("save") || (!has("nosave") && !ctx.shared.settings().save_points.is_empty());
    tracing::warn!("User requested shutdown...");
    if save {
        tracing::info!("Saving the final RDB snapshot before exiting.");
        if let Err(e) = crate::rdb_file::save(ctx.shared) {
            tracing::warn!("Error trying to save the DB, can't exit: {e}");
            if !has("force") {
                return ctx.out.error("ERR Errors trying to SHUTDOWN. Check logs.");
            }
        }
    }
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
        "help" if args.len() == 2 => {
            let lines = [
                "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "DOCTOR",
                "    Return memory problems reports.",
                "MALLOC-STATS",
                "    Return internal statistics report from the memory allocator.",
                "PURGE",
                "    Attempt to purge dirty pages for reclamation by the allocator.",
                "STATS",
                "    Return information about the memory usage of the server.",
                "USAGE <key> [SAMPLES <count>]",
                "    Return memory in bytes used by <key> and its value. Nested values are",
                "    sampled up to <count> times (default: 5, 0 means sample all).",
                "HELP",
                "    Prints this help.",
            ];
            ctx.out.help(&lines);
        }
        "stats" if args.len() == 2 => crate::memory::stats(ctx.out, ctx.shared),
        "doctor" if args.len() == 2 => ctx.out.verbatim(&crate::memory::doctor(ctx.shared)),
        "malloc-stats" if args.len() == 2 => ctx.out.verbatim(&crate::memory::malloc_stats()),
        "purge" if args.len() == 2 => {
            crate::alloc_count::purge();
            ctx.out.ok()
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

/// SAVE: the dataset to `dir/dbfilename` now (see rdb_file::save).
pub fn save(ctx: &mut Ctx, _args: &Args) {
    match crate::rdb_file::save(ctx.shared) {
        Ok(()) => ctx.out.ok(),
        Err(e) => ctx.out.error(&e),
    }
}

/// BGSAVE [SCHEDULE] (see rdb_file::bgsave).
pub fn bgsave(ctx: &mut Ctx, args: &Args) {
    let schedule = match args.get(1) {
        None => false,
        Some(a) if a.eq_ignore_ascii_case(b"schedule") && args.len() == 2 => true,
        Some(_) => return ctx.syntax_error(),
    };
    let shared = ctx.shared.arc();
    match crate::rdb_file::bgsave(&shared, schedule) {
        Ok(text) => ctx.out.simple(text),
        Err(e) => ctx.out.error(&e),
    }
}

pub fn lastsave(ctx: &mut Ctx, _args: &Args) {
    ctx.out.int((ctx.shared.last_save_ms() / 1000) as i64);
}

/// One MODULE LIST entry: the Bloom commands BlinkDB serves itself, named
/// and versioned as RedisBloom, so that tools checking for the `bf` module
/// find it (its path is this server's executable).
pub fn reply_module(out: &mut crate::protocol::Out) {
    let path = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    out.map(4);
    out.bulk(b"name");
    out.bulk(super::table::MODULE_NAME.as_bytes());
    out.bulk(b"ver");
    out.int(super::table::MODULE_VERSION as i64);
    out.bulk(b"path");
    out.bulk(path.as_bytes());
    out.bulk(b"args");
    out.array(0);
}

pub fn module_list(ctx: &mut Ctx, _args: &Args) {
    ctx.out.array(1);
    reply_module(ctx.out);
}

pub fn module_help(ctx: &mut Ctx, _args: &Args) {
    ctx.out.help(&[
        "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LIST",
        "    Return a list of loaded modules.",
        "LOAD <path> [<arg> ...]",
        "    Load a module library from <path>, passing to it any optional arguments.",
        "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
        "    Load a module library from <path>, while passing it module configurations and optional arguments.",
        "UNLOAD <name>",
        "    Unload a module.",
        "HELP",
        "    Prints this help.",
    ]);
}

/// MODULE LOAD and LOADEX, past `enable-module-command`: BlinkDB runs no
/// module code, so loading fails, with Redis's text followed by why (and the
/// reason in the log, where Redis's text points).
pub fn module_load(ctx: &mut Ctx, args: &Args) {
    tracing::warn!(
        "Module {} failed to load: BlinkDB does not load modules",
        String::from_utf8_lossy(args[2])
    );
    ctx.out.error(
        "ERR Error loading the extension. Please check the server logs. (BlinkDB does not load modules; its Bloom filter commands are built in)",
    );
}

/// MODULE UNLOAD: only the built-in `bf` module is ever listed, and it stays.
pub fn module_unload(ctx: &mut Ctx, args: &Args) {
    let why = if args[2] == super::table::MODULE_NAME.as_bytes() {
        "the bf module is built into BlinkDB, can't unload"
    } else {
        "no such module with that name"
    };
    ctx.out.error(&format!("ERR Error unloading module: {why}"));
}
