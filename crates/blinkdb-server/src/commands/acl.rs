//! ACL SETUSER/GETUSER/DELUSER/USERS/LIST/WHOAMI/CAT/GENPASS/LOG/SAVE/LOAD/
//! DRYRUN/HELP, with Redis 7.0's replies; the users live in `crate::server::acl`.

use super::args::*;
use super::table;
use super::Ctx;
use crate::protocol::{Args, Out};
use crate::server::acl::check::Denied;
use crate::server::acl::{self, User};

/// ACL SETUSER hides every argument after the name in MONITOR and SLOWLOG.
pub fn redact_setuser(_args: &[&[u8]], hide: &mut [bool]) {
    for h in hide.iter_mut().skip(2) {
        *h = true;
    }
}

const NO_FILE: &str = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";

pub fn acl(ctx: &mut Ctx, args: &Args) {
    let sub = String::from_utf8_lossy(args[1]).to_ascii_lowercase();
    let argc = args.len();
    match sub.as_str() {
        "setuser" if argc >= 3 => setuser(ctx, args),
        "deluser" if argc >= 3 => deluser(ctx, args),
        "getuser" if argc == 3 => getuser(ctx, args[2]),
        "list" | "users" if argc == 2 => {
            let users = ctx.shared.acl.users();
            ctx.out.array(users.len());
            for u in users {
                if sub == "users" {
                    ctx.out.bulk(&u.name);
                } else {
                    let line = format!("user {} {}", String::from_utf8_lossy(&u.name), u.describe());
                    ctx.out.bulk(line.as_bytes());
                }
            }
        }
        "whoami" if argc == 2 => {
            let name = ctx.client.user.name.clone();
            ctx.out.bulk(&name);
        }
        "load" | "save" if ctx.client.settings(ctx.shared).aclfile.is_none() => {
            ctx.out.error(NO_FILE)
        }
        "load" if argc == 2 => load(ctx),
        "save" if argc == 2 => {
            let path = aclfile_path(&ctx.shared.settings()).unwrap_or_default();
            match acl::file::save(&ctx.shared.acl, &path) {
                Ok(()) => ctx.out.ok(),
                Err(_) => ctx.out.error("ERR There was an error trying to save the ACLs. Please check the server logs for more information"),
            }
        }
        "cat" if argc == 2 => {
            ctx.out.array(table::acl::NAMES.len());
            for n in table::acl::NAMES {
                ctx.out.bulk(n.as_bytes());
            }
        }
        "cat" if argc == 3 => {
            let Some(cat) = acl::selector::category(args[2]) else {
                let name = &args[2][..args[2].len().min(128)];
                return ctx.out.error(&format!(
                    "ERR Unknown category '{}'",
                    String::from_utf8_lossy(name)
                ));
            };
            let names: Vec<&str> = table::COMMANDS
                .iter()
                .filter(|c| !c.has(table::MODULE) && c.acl_categories() & cat != 0)
                .map(|c| c.name)
                .collect();
            ctx.out.array(names.len());
            for n in names {
                ctx.out.bulk(n.as_bytes());
            }
        }
        "genpass" if argc == 2 || argc == 3 => genpass(ctx, args),
        "log" if argc == 2 || argc == 3 => log(ctx, args),
        "dryrun" if argc >= 4 => dryrun(ctx, args),
        "help" if argc == 2 => ctx.out.help(&[
            "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CAT [<category>]",
            "    List all commands that belong to <category>, or all command categories",
            "    when no category is specified.",
            "DELUSER <username> [<username> ...]",
            "    Delete a list of users.",
            "DRYRUN <username> <command> [<arg> ...]",
            "    Returns whether the user can execute the given command without executing the command.",
            "GETUSER <username>",
            "    Get the user's details.",
            "GENPASS [<bits>]",
            "    Generate a secure 256-bit user password. The optional `bits` argument can",
            "    be used to specify a different size.",
            "LIST",
            "    Show users details in config file format.",
            "LOAD",
            "    Reload users from the ACL file.",
            "LOG [<count> | RESET]",
            "    Show the ACL log entries.",
            "SAVE",
            "    Save the current config to the ACL file.",
            "SETUSER <username> <attribute> [<attribute> ...]",
            "    Create or modify a user with the specified attributes.",
            "USERS",
            "    List all the registered usernames.",
            "WHOAMI",
            "    Return the current connection username.",
            "HELP",
            "    Prints this help.",
        ]),
        _ => super::subcommand_syntax_error(ctx, args),
    }
}

fn setuser(ctx: &mut Ctx, args: &Args) {
    let name = args[2];
    if !acl::user::valid_name(name) {
        return ctx
            .out
            .error("ERR Usernames can't contain spaces or null characters");
    }
    let rules: Vec<Vec<u8>> = args[3..].iter().map(|a| a.to_vec()).collect();
    let pubsub_all = ctx.client.settings(ctx.shared).acl_pubsub_all;
    match ctx.shared.acl.set_user(name, &rules, pubsub_all) {
        Ok((old, new)) => {
            if let Some(old) = old {
                kill_pubsub_clients_if_needed(ctx, &old, &new);
            }
            ctx.out.ok();
        }
        Err(e) => ctx.out.error(&format!("ERR {e}")),
    }
}

/// Clients of a user whose channel rights shrank are disconnected when one
/// of their subscriptions is no longer allowed (Redis's
/// ACLKillPubsubClientsIfNeeded).
fn kill_pubsub_clients_if_needed(ctx: &mut Ctx, old: &User, new: &User) {
    if new.selectors.iter().any(|s| s.all_channels) {
        return;
    }
    let kept = |s: &acl::selector::Selector| {
        !s.all_channels
            && s.channels.iter().all(|c| {
                new.selectors
                    .iter()
                    .any(|n| n.channels.iter().any(|m| m == c))
            })
    };
    if old.selectors.iter().all(kept) {
        return;
    }
    let victims = ctx.shared.pubsub.subscribers_where(|name, kind, info| {
        *info.user_name() == *new.name && {
            let pattern = kind == crate::pubsub::Kind::Pattern;
            !acl::check::user_channel_ok(new, name, pattern)
        }
    });
    for info in victims {
        if info.id == ctx.client.id {
            ctx.client.close_after_reply = true;
        }
        info.kill();
    }
}

fn deluser(ctx: &mut Ctx, args: &Args) {
    if args[2..].iter().any(|n| *n == b"default") {
        return ctx.out.error("ERR The 'default' user cannot be removed");
    }
    let names: Vec<&[u8]> = args[2..].to_vec();
    let gone = ctx.shared.acl.delete(&names);
    for u in &gone {
        kill_clients_of(ctx, &u.name);
    }
    ctx.out.int(gone.len() as i64);
}

/// Disconnects the clients authenticated as a user that is gone (the
/// current one after its reply).
pub fn kill_clients_of(ctx: &mut Ctx, name: &[u8]) {
    let me = ctx.client.id;
    let n = ctx.clients().kill(|c| *c.user_name() == *name, Some(me));
    let _ = n;
    if *ctx.client.user.name == *name {
        ctx.client.close_after_reply = true;
        ctx.client.authenticated = false;
    }
}

fn getuser(ctx: &mut Ctx, name: &[u8]) {
    let Some(u) = ctx.shared.acl.get(name) else {
        return ctx.out.null();
    };
    let out = &mut *ctx.out;
    out.map(6);
    out.bulk(b"flags");
    let flags = u.flag_names();
    out.set(flags.len());
    for f in flags {
        out.bulk(f.as_bytes());
    }
    out.bulk(b"passwords");
    out.array(u.passwords.len());
    for p in &u.passwords {
        out.bulk(p.as_bytes());
    }
    describe_selector(out, u.root());
    out.bulk(b"selectors");
    out.array(u.selectors.len() - 1);
    for s in &u.selectors[1..] {
        out.map(3);
        describe_selector(out, s);
    }
}

fn describe_selector(out: &mut Out, s: &acl::selector::Selector) {
    out.bulk(b"commands");
    out.bulk(s.describe_commands().as_bytes());
    out.bulk(b"keys");
    out.bulk(s.describe_keys().as_bytes());
    out.bulk(b"channels");
    out.bulk(s.describe_channels().as_bytes());
}

fn genpass(ctx: &mut Ctx, args: &Args) {
    const MAX_BITS: i64 = 4096;
    let bits = match args.get(2) {
        None => 256,
        Some(a) => match parse_i64(a) {
            Some(n) => n,
            None => return ctx.out.error(ERR_NOT_INT),
        },
    };
    if bits <= 0 || bits > MAX_BITS {
        return ctx.out.error(&format!("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to {MAX_BITS}"));
    }
    let chars = ((bits + 3) / 4) as usize;
    let hex: String = (0..chars)
        .map(|_| char::from(b"0123456789abcdef"[(rand::random::<u8>() & 15) as usize]))
        .collect();
    ctx.out.bulk(hex.as_bytes());
}

fn log(ctx: &mut Ctx, args: &Args) {
    let mut count = 10i64;
    if let Some(a) = args.get(2) {
        if eq_ic(a, "reset") {
            ctx.shared.acl.log.lock().reset();
            return ctx.out.ok();
        }
        match parse_i64(a) {
            Some(n) => count = n.max(0),
            None => return ctx.out.error(ERR_NOT_INT),
        }
    }
    let now = blinkdb_engine::now_ms();
    let log = ctx.shared.acl.log.lock();
    let n = (count as usize).min(log.len());
    let out = &mut *ctx.out;
    out.array(n);
    for e in log.entries().take(n) {
        out.map(7);
        out.bulk(b"count");
        out.int(e.count as i64);
        out.bulk(b"reason");
        out.bulk(e.reason.name().as_bytes());
        out.bulk(b"context");
        out.bulk(e.context.name().as_bytes());
        out.bulk(b"object");
        out.bulk(&e.object);
        out.bulk(b"username");
        out.bulk(&e.username);
        out.bulk(b"age-seconds");
        out.double(now.saturating_sub(e.ctime_ms) as f64 / 1000.0);
        out.bulk(b"client-info");
        out.bulk(e.client_info.as_bytes());
    }
}

fn dryrun(ctx: &mut Ctx, args: &Args) {
    let Some(user) = ctx.shared.acl.get(args[2]) else {
        return ctx.out.error(&format!(
            "ERR User '{}' not found",
            String::from_utf8_lossy(args[2])
        ));
    };
    let line = &args[3..];
    let Some(Ok(spec)) = table::resolve(line) else {
        return ctx.out.error(&format!(
            "ERR Command '{}' not found",
            String::from_utf8_lossy(args[3])
        ));
    };
    if !crate::exec::arity_ok(spec, line.len()) {
        return ctx.out.error(&format!(
            "ERR wrong number of arguments for '{}' command",
            spec.name
        ));
    }
    match acl::check::check(&user, spec, line) {
        Ok(()) => ctx.out.ok(),
        Err(Denied::Command) => ctx.out.bulk(
            format!(
                "This user has no permissions to run the '{}' command",
                spec.name
            )
            .as_bytes(),
        ),
        Err(Denied::Key(i)) => ctx.out.bulk(
            format!(
                "This user has no permissions to access the '{}' key",
                String::from_utf8_lossy(line[i])
            )
            .as_bytes(),
        ),
        Err(Denied::Channel(i)) => ctx.out.bulk(
            format!(
                "This user has no permissions to access the '{}' channel",
                String::from_utf8_lossy(line[i])
            )
            .as_bytes(),
        ),
    }
}

/// ACL LOAD: every user from the file, or none; the clients of the users
/// it replaced are disconnected (their users are gone), as in Redis.
fn load(ctx: &mut Ctx) {
    let settings = ctx.shared.settings();
    let path = aclfile_path(&settings).unwrap_or_default();
    let name = settings.aclfile.clone().unwrap_or_default();
    match acl::file::load_named(&path, &name, settings.acl_pubsub_all) {
        Err(e) => ctx.out.error(&format!("ERR {e}")),
        Ok(users) => {
            let old = ctx.shared.acl.replace_all(users);
            for (name, _) in old.iter().filter(|(n, _)| n.as_slice() != b"default") {
                kill_clients_of(ctx, name);
            }
            ctx.out.ok();
        }
    }
}

/// The user a connection runs as now: its own, or the new version of it
/// after an ACL change.
#[inline]
pub fn current_user(
    shared: &crate::server::state::Shared,
    client: &mut crate::exec::session::Client,
) {
    let v = shared.acl.version();
    if v != client.acl_version {
        client.acl_version = v;
        if let Some(u) = shared.acl.get(&client.user.name) {
            client.user = u;
        }
    }
}

/// Authenticates the client as `user` with `pass`; on failure the attempt is
/// logged (reason auth) and counted.
pub fn authenticate(ctx: &mut Ctx, user: &[u8], pass: &[u8], object: &[u8]) -> bool {
    match ctx.shared.acl.get(user) {
        Some(u) if u.password_ok(pass) => {
            ctx.client.info.set_user_name(&u.name);
            ctx.client.user = u;
            ctx.client.acl_version = ctx.shared.acl.version();
            ctx.client.authenticated = true;
            true
        }
        _ => {
            let context = if ctx.client.multi.is_some() {
                acl::log::Context::Multi
            } else {
                acl::log::Context::Toplevel
            };
            add_log_entry(
                ctx.shared,
                ctx.client,
                acl::log::Reason::Auth,
                context,
                object,
                user,
            );
            false
        }
    }
}

/// Adds an ACL LOG entry and counts the refusal (INFO acl_access_denied_*).
pub fn add_log_entry(
    shared: &crate::server::state::Shared,
    client: &crate::exec::session::Client,
    reason: acl::log::Reason,
    context: acl::log::Context,
    object: &[u8],
    username: &[u8],
) {
    shared.acl.count_denied(reason);
    let now = blinkdb_engine::now_ms();
    let entry = acl::log::Entry {
        count: 1,
        reason,
        context,
        object: object.to_vec(),
        username: username.to_vec(),
        ctime_ms: now,
        client_info: client.info.describe(&now),
    };
    let max = shared.settings().acllog_max_len;
    shared.acl.log.lock().add(entry, max);
}

/// The `user` lines CONFIG REWRITE writes: every user, unless an ACL file
/// holds them (Redis's rewriteConfigUserOption).
pub fn config_user_lines(shared: &crate::server::state::Shared) -> Vec<String> {
    if shared.settings().aclfile.is_some() {
        return Vec::new();
    }
    acl::file::lines(&shared.acl)
}

/// The ACL file's path: relative to `dir`, as Redis (which changes into
/// `dir`) reads it.
pub fn aclfile_path(settings: &crate::config::Settings) -> Option<String> {
    let name = settings.aclfile.as_deref()?;
    Some(settings.dir.join(name).to_string_lossy().into_owned())
}

/// Startup: `requirepass`, then the `user` directives, then the ACL file;
/// Err: why the server must not start, in Redis's words.
pub fn load_at_startup(
    shared: &crate::server::state::Shared,
    users: &[(usize, String, Vec<Vec<u8>>)],
    settings: &crate::config::Settings,
) -> Result<(), String> {
    if let Some(p) = &settings.requirepass {
        shared.acl.set_default_password(Some(p));
    }
    if settings.aclfile.is_some() && !users.is_empty() {
        return Err("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.".into());
    }
    let pubsub_all = settings.acl_pubsub_all;
    let mut seen: Vec<&[u8]> = Vec::new();
    for (n, line, words) in users {
        // Redis names the word at the failing rule's index counted from
        // `user` (so the user name for the first rule).
        let fatal = |at: usize, why: &str| {
            let word = match at {
                0 => "user".to_string(),
                i => String::from_utf8_lossy(&words[i - 1]).into_owned(),
            };
            format!(
                "\n*** FATAL CONFIG FILE ERROR (Redis {}) ***\nReading the configuration file, at line {n}\n>>> '{line}'\nError in user declaration '{word}': {why}",
                crate::REDIS_COMPAT_VERSION
            )
        };
        let name = &words[0][..];
        if seen.contains(&name) {
            return Err(fatal(
                1,
                "Duplicate user found. A user can only be defined once in config files",
            ));
        }
        seen.push(name);
        let rules = match acl::user::merge_selectors(&words[1..]) {
            Ok(r) => r,
            Err(at) => {
                let j = words[1..].iter().position(|w| *w == at).unwrap_or(0);
                return Err(fatal(j, "Syntax error"));
            }
        };
        let mut trial = User::new(name, pubsub_all);
        for (j, op) in rules.iter().enumerate() {
            match trial.apply(op, pubsub_all) {
                Err(e) if e != acl::SetError::UnknownName => return Err(fatal(j, e.message())),
                _ => {}
            }
        }
        if !acl::user::valid_name(name) {
            tracing::warn!("Spaces not allowed in ACL usernames");
            return Err("Critical error while loading ACLs. Exiting.".into());
        }
        let mut u = if name == b"default" {
            let mut d = (*shared.acl.default_user()).clone();
            let _ = d.apply(b"reset", pubsub_all);
            d
        } else {
            User::new(name, pubsub_all)
        };
        for op in &rules {
            if let Err(e) = u.apply(op, pubsub_all) {
                tracing::warn!(
                    "Error loading ACL rule '{}' for the user named '{}': {}",
                    String::from_utf8_lossy(op),
                    String::from_utf8_lossy(name),
                    e.message()
                );
                return Err("Critical error while loading ACLs. Exiting.".into());
            }
        }
        if !u.enabled {
            tracing::info!("The user '{}' is disabled (there is no 'on' modifier in the user description). Make sure this is not a configuration error.", String::from_utf8_lossy(name));
        }
        u.refresh();
        shared.acl.put(u);
    }
    if let Some(path) = aclfile_path(settings) {
        let shown = settings.aclfile.clone().unwrap_or_default();
        let loaded = acl::file::load_named(&path, &shown, pubsub_all)
            .map_err(|e| format!("Aborting Redis startup because of ACL errors: {e}"))?;
        shared.acl.replace_all(loaded);
    }
    Ok(())
}

/// CONFIG SET requirepass sets the default user's password (empty:
/// nopass), as Redis's ACLUpdateDefaultUserPassword.
pub const ON_SET: crate::config::OnSet<crate::server::state::Shared> = crate::config::OnSet {
    options: &["requirepass"],
    stage: crate::config::Stage::AfterCommit,
    apply: |shared, s, _| {
        shared.acl.set_default_password(s.requirepass.as_deref());
        Ok(())
    },
};

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("acl", -2, CONTAINER, NOKEYS, "server", "6.0.0", "A container for Access List Control commands ", NO_HANDLER;
        complexity: "Depends on subcommand."),
    cmd!("acl|cat", -2, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "List the ACL categories or the commands inside a category", acl;
        complexity: "O(1) since the categories and commands are a fixed set.",
        args: "categoryname:string?"),
    cmd!("acl|deluser", -3, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "Remove the specified ACL users and the associated rules", acl;
        complexity: "O(1) amortized time considering the typical user.",
        args: "username:string*"),
    cmd!("acl|dryrun", -4, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "7.0.0", "Returns whether the user can execute the given command without executing the command.", acl;
        complexity: "O(1).",
        args: "username:string command:string arg:string?*"),
    cmd!("acl|genpass", -2, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "Generate a pseudorandom secure password to use for ACL users", acl;
        complexity: "O(1)",
        args: "bits:integer?"),
    cmd!("acl|getuser", 3, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "Get the rules for a specific ACL user", acl;
        complexity: "O(N). Where N is the number of password, command and pattern rules that the user has.",
        args: "username:string",
        history: &[("6.2.0", "Added Pub/Sub channel patterns."), ("7.0.0", "Added selectors and changed the format of key and channel patterns from a list to their rule representation.")]),
    cmd!("acl|help", 2, LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "Show helpful text about the different subcommands", acl;
        complexity: "O(1)"),
    cmd!("acl|list", 2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "List the current ACL rules in ACL config file format", acl;
        complexity: "O(N). Where N is the number of configured users."),
    cmd!("acl|load", 2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "Reload the ACLs from the configured ACL file", acl;
        complexity: "O(N). Where N is the number of configured users."),
    cmd!("acl|log", -2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "List latest events denied because of ACLs in place", acl;
        complexity: "O(N) with N being the number of entries shown.",
        args: "operation:oneof?(count:integer reset:RESET)"),
    cmd!("acl|save", 2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "Save the current ACL rules in the configured ACL file", acl;
        complexity: "O(N). Where N is the number of configured users."),
    cmd!("acl|setuser", -3, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "Modify or create the rules for a specific ACL user", acl;
        redact: Some(redact_setuser),
        complexity: "O(N). Where N is the number of rules provided.",
        args: "username:string rule:string?*",
        history: &[("6.2.0", "Added Pub/Sub channel patterns."), ("7.0.0", "Added selectors and key based permissions.")]),
    cmd!("acl|users", 2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "List the username of all the configured ACL rules", acl;
        complexity: "O(N). Where N is the number of configured users."),
    cmd!("acl|whoami", 2, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "Return the name of the user associated to the current connection", acl;
        complexity: "O(1)"),
];
