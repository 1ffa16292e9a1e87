//! COMMAND and its subcommands: what the command table says about every
//! command served, in Redis 7.0's reply shapes.

use super::args::eq_ic;
use super::spec::{self, ArgDoc, BeginSearch, FindKeys, KeySpec};
use super::table::{self, acl, CommandSpec};
use super::Ctx;
use crate::protocol::{Args, Out};
use blinkdb_engine::glob_match;

fn reply_info(out: &mut Out, c: &'static CommandSpec) {
    out.array(10);
    out.bulk(c.name.as_bytes());
    out.int(c.arity as i64);
    let mut flags = c.flag_names();
    if spec::movable_keys(c) {
        flags.push("movablekeys");
    }
    if c.has(table::ALLOW_BUSY) {
        flags.push("allow_busy");
    }
    out.set(flags.len());
    for f in flags {
        out.simple(f);
    }
    out.int(c.first_key as i64);
    out.int(c.last_key as i64);
    out.int(c.step as i64);
    let cats = c.acl_categories();
    let names: Vec<&str> = acl::NAMES
        .iter()
        .enumerate()
        .filter(|(i, _)| cats & (1 << i) != 0)
        .map(|(_, n)| *n)
        .collect();
    out.set(names.len());
    for n in names {
        out.simple(&format!("@{n}"));
    }
    out.set(c.tips.len());
    for t in c.tips {
        out.bulk(t.as_bytes());
    }
    let specs = &spec::parsed(c).key_specs;
    out.set(specs.len());
    for s in specs {
        reply_key_spec(out, s);
    }
    let subs = table::subcommands(c);
    if subs.is_empty() {
        out.set(0);
    } else {
        out.array(subs.len());
        for s in subs {
            reply_info(out, s);
        }
    }
}

fn reply_key_flags(out: &mut Out, flags: u16) {
    let names: Vec<&str> = spec::key_flag_names(flags).collect();
    out.set(names.len());
    for n in names {
        out.simple(n);
    }
}

fn reply_key_spec(out: &mut Out, s: &KeySpec) {
    out.map(3 + s.notes.is_some() as usize);
    if let Some(notes) = &s.notes {
        out.bulk(b"notes");
        out.bulk(notes.as_bytes());
    }
    out.bulk(b"flags");
    reply_key_flags(out, s.flags);
    out.bulk(b"begin_search");
    out.map(2);
    out.bulk(b"type");
    match &s.begin {
        BeginSearch::Index(pos) => {
            out.bulk(b"index");
            out.bulk(b"spec");
            out.map(1);
            out.bulk(b"index");
            out.int(*pos as i64);
        }
        BeginSearch::Keyword(word, from) => {
            out.bulk(b"keyword");
            out.bulk(b"spec");
            out.map(2);
            out.bulk(b"keyword");
            out.bulk(word.as_bytes());
            out.bulk(b"startfrom");
            out.int(*from as i64);
        }
        BeginSearch::Unknown => {
            out.bulk(b"unknown");
            out.bulk(b"spec");
            out.map(0);
        }
    }
    out.bulk(b"find_keys");
    out.map(2);
    out.bulk(b"type");
    match &s.find {
        FindKeys::Range {
            lastkey,
            step,
            limit,
        } => {
            out.bulk(b"range");
            out.bulk(b"spec");
            out.map(3);
            for (k, v) in [("lastkey", lastkey), ("keystep", step), ("limit", limit)] {
                out.bulk(k.as_bytes());
                out.int(*v as i64);
            }
        }
        FindKeys::Keynum { idx, first, step } => {
            out.bulk(b"keynum");
            out.bulk(b"spec");
            out.map(3);
            for (k, v) in [("keynumidx", idx), ("firstkey", first), ("keystep", step)] {
                out.bulk(k.as_bytes());
                out.int(*v as i64);
            }
        }
        FindKeys::Unknown => {
            out.bulk(b"unknown");
            out.bulk(b"spec");
            out.map(0);
        }
    }
}

fn reply_docs(out: &mut Out, c: &'static CommandSpec) {
    let parsed = spec::parsed(c);
    let subs = table::subcommands(c);
    let module = c.has(table::MODULE);
    let fields = 1
        + !c.summary.is_empty() as usize
        + !c.since.is_empty() as usize
        + module as usize
        + !c.complexity.is_empty() as usize
        + (c.doc_flags != 0) as usize
        + !c.deprecated_since.is_empty() as usize
        + !c.replaced_by.is_empty() as usize
        + !c.history.is_empty() as usize
        + !parsed.args.is_empty() as usize
        + !subs.is_empty() as usize;
    out.map(fields);
    let field = |out: &mut Out, k: &str, v: &str| {
        if !v.is_empty() {
            out.bulk(k.as_bytes());
            out.bulk(v.as_bytes());
        }
    };
    field(out, "summary", c.summary);
    field(out, "since", c.since);
    field(out, "group", c.group);
    field(out, "complexity", c.complexity);
    if module {
        field(out, "module", table::MODULE_NAME);
    }
    if c.doc_flags != 0 {
        out.bulk(b"doc_flags");
        let names: Vec<&str> = [
            (table::doc::DEPRECATED, "deprecated"),
            (table::doc::SYSCMD, "syscmd"),
        ]
        .iter()
        .filter(|(f, _)| c.doc_flags & f != 0)
        .map(|(_, n)| *n)
        .collect();
        out.set(names.len());
        for n in names {
            out.simple(n);
        }
    }
    field(out, "deprecated_since", c.deprecated_since);
    field(out, "replaced_by", c.replaced_by);
    if !c.history.is_empty() {
        out.bulk(b"history");
        out.set(c.history.len());
        for (since, what) in c.history {
            out.array(2);
            out.bulk(since.as_bytes());
            out.bulk(what.as_bytes());
        }
    }
    if !parsed.args.is_empty() {
        out.bulk(b"arguments");
        reply_args(out, &parsed.args);
    }
    if !subs.is_empty() {
        out.bulk(b"subcommands");
        out.map(subs.len());
        for s in subs {
            out.bulk(s.name.as_bytes());
            reply_docs(out, s);
        }
    }
}

fn reply_args(out: &mut Out, args: &[ArgDoc]) {
    out.array(args.len());
    for a in args {
        let fields = 2
            + a.key_spec_index.is_some() as usize
            + a.token.is_some() as usize
            + a.since.is_some() as usize
            + a.deprecated_since.is_some() as usize
            + (a.flags != 0) as usize
            + a.args.is_some() as usize;
        out.map(fields);
        out.bulk(b"name");
        out.bulk(a.name.as_bytes());
        out.bulk(b"type");
        out.bulk(a.kind.as_bytes());
        if let Some(i) = a.key_spec_index {
            out.bulk(b"key_spec_index");
            out.int(i as i64);
        }
        for (k, v) in [
            ("token", &a.token),
            ("since", &a.since),
            ("deprecated_since", &a.deprecated_since),
        ] {
            if let Some(v) = v {
                out.bulk(k.as_bytes());
                out.bulk(v.as_bytes());
            }
        }
        if a.flags != 0 {
            out.bulk(b"flags");
            let names: Vec<&str> = [
                (spec::ARG_OPTIONAL, "optional"),
                (spec::ARG_MULTIPLE, "multiple"),
                (spec::ARG_MULTIPLE_TOKEN, "multiple_token"),
            ]
            .iter()
            .filter(|(f, _)| a.flags & f != 0)
            .map(|(_, n)| *n)
            .collect();
            out.set(names.len());
            for n in names {
                out.simple(n);
            }
        }
        if let Some(sub) = &a.args {
            out.bulk(b"arguments");
            reply_args(out, sub);
        }
    }
}

/// COMMAND: every top-level command.
pub fn command(ctx: &mut Ctx, _args: &Args) {
    let all: Vec<_> = table::top_level().collect();
    ctx.out.array(all.len());
    for c in all {
        reply_info(ctx.out, c);
    }
}

pub fn count(ctx: &mut Ctx, _args: &Args) {
    ctx.out.int(table::top_level().count() as i64);
}

pub fn info(ctx: &mut Ctx, args: &Args) {
    if args.len() == 2 {
        return command(ctx, args);
    }
    ctx.out.array(args.len() - 2);
    for name in &args[2..] {
        match table::lookup_full(name) {
            Some(c) => reply_info(ctx.out, c),
            None => ctx.out.null_array(),
        }
    }
}

pub fn docs(ctx: &mut Ctx, args: &Args) {
    let specs: Vec<&'static CommandSpec> = if args.len() == 2 {
        table::top_level().collect()
    } else {
        args[2..]
            .iter()
            .filter_map(|n| table::lookup_full(n))
            .collect()
    };
    ctx.out.map(specs.len());
    for c in specs {
        ctx.out.bulk(c.name.as_bytes());
        reply_docs(ctx.out, c);
    }
}

enum Filter<'a> {
    Module(&'a [u8]),
    AclCat(Option<u32>),
    Pattern(&'a [u8]),
}

impl Filter<'_> {
    fn keeps(&self, c: &CommandSpec) -> bool {
        match self {
            Filter::Module(name) => {
                c.has(table::MODULE) && name.eq_ignore_ascii_case(table::MODULE_NAME.as_bytes())
            }
            Filter::AclCat(cat) => cat.is_some_and(|cat| c.acl_categories() & cat != 0),
            Filter::Pattern(p) => glob_match(p, c.name.as_bytes(), true),
        }
    }
}

pub fn list(ctx: &mut Ctx, args: &Args) {
    let filter = match &args[2..] {
        [] => None,
        [by, kind, value] if eq_ic(by, "filterby") => {
            if eq_ic(kind, "module") {
                Some(Filter::Module(value))
            } else if eq_ic(kind, "aclcat") {
                let cat = acl::NAMES
                    .iter()
                    .position(|n| eq_ic(value, n))
                    .map(|i| 1 << i);
                Some(Filter::AclCat(cat))
            } else if eq_ic(kind, "pattern") {
                Some(Filter::Pattern(value))
            } else {
                return ctx.syntax_error();
            }
        }
        _ => return ctx.syntax_error(),
    };
    let names: Vec<&[u8]> = table::COMMANDS
        .iter()
        .filter(|c| filter.as_ref().is_none_or(|f| f.keeps(c)))
        .map(|c| c.name.as_bytes())
        .collect();
    ctx.out.strs(names.into_iter());
}

pub fn getkeys(ctx: &mut Ctx, args: &Args) {
    getkeys_reply(ctx, args, false);
}

pub fn getkeysandflags(ctx: &mut Ctx, args: &Args) {
    getkeys_reply(ctx, args, true);
}

fn getkeys_reply(ctx: &mut Ctx, args: &Args, with_flags: bool) {
    let argv = &args[2..];
    let Some(Ok(c)) = table::resolve(argv) else {
        return ctx.out.error("ERR Invalid command specified");
    };
    if !spec::has_keys(c) {
        return ctx.out.error("ERR The command has no key arguments");
    }
    let argc = argv.len() as i32;
    if (c.arity > 0 && argc != c.arity) || argc < -c.arity {
        return ctx
            .out
            .error("ERR Invalid number of arguments specified for command");
    }
    let Some(keys) = spec::command_keys(c, argv) else {
        if c.has(table::NO_MANDATORY_KEYS) {
            return ctx.out.array(0);
        }
        return ctx.out.error("ERR Invalid arguments specified for command");
    };
    ctx.out.array(keys.len());
    for (pos, flags) in keys {
        if with_flags {
            ctx.out.array(2);
            ctx.out.bulk(argv[pos]);
            reply_key_flags(ctx.out, flags);
        } else {
            ctx.out.bulk(argv[pos]);
        }
    }
}

pub fn help(ctx: &mut Ctx, _args: &Args) {
    ctx.out.help(&[
        "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "(no subcommand)",
        "    Return details about all Redis commands.",
        "COUNT",
        "    Return the total number of commands in this Redis server.",
        "LIST",
        "    Return a list of all commands in this Redis server.",
        "INFO [<command-name> ...]",
        "    Return details about multiple Redis commands.",
        "    If no command names are given, documentation details for all",
        "    commands are returned.",
        "DOCS [<command-name> ...]",
        "    Return documentation details about multiple Redis commands.",
        "    If no command names are given, documentation details for all",
        "    commands are returned.",
        "GETKEYS <full-command>",
        "    Return the keys from a full Redis command.",
        "GETKEYSANDFLAGS <full-command>",
        "    Return the keys and the access flags from a full Redis command.",
        "HELP",
        "    Prints this help.",
    ]);
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("command", -1, LOADING_OK | STALE | CONTAINER, NOKEYS, "server", "2.8.13", "Get array of Redis command details", command;
        acl: acl::CONNECTION,
        complexity: "O(N) where N is the total number of Redis commands",
        tips: &["nondeterministic_output_order"]),
    cmd!("command|count", 2, LOADING_OK | STALE, NOKEYS, "server", "2.8.13", "Get total number of Redis commands", count;
        acl: acl::CONNECTION,
        complexity: "O(1)"),
    cmd!("command|docs", -2, LOADING_OK | STALE, NOKEYS, "server", "7.0.0", "Get array of specific Redis command documentation", docs;
        acl: acl::CONNECTION,
        complexity: "O(N) where N is the number of commands to look up",
        args: "command-name:string?*",
        tips: &["nondeterministic_output_order"]),
    cmd!("command|getkeys", -4, LOADING_OK | STALE, NOKEYS, "server", "2.8.13", "Extract keys given a full Redis command", getkeys;
        acl: acl::CONNECTION,
        complexity: "O(N) where N is the number of arguments to the command"),
    cmd!("command|getkeysandflags", -4, LOADING_OK | STALE, NOKEYS, "server", "7.0.0", "Extract keys and access flags given a full Redis command", getkeysandflags;
        acl: acl::CONNECTION,
        complexity: "O(N) where N is the number of arguments to the command"),
    cmd!("command|help", 2, LOADING_OK | STALE, NOKEYS, "server", "5.0.0", "Show helpful text about the different subcommands", help;
        acl: acl::CONNECTION,
        complexity: "O(1)"),
    cmd!("command|info", -2, LOADING_OK | STALE, NOKEYS, "server", "2.8.13", "Get array of specific Redis command details, or all when no argument is given.", info;
        acl: acl::CONNECTION,
        complexity: "O(N) where N is the number of commands to look up",
        args: "command-name:string?*",
        history: &[("7.0.0", "Allowed to be called with no argument to get info on all commands.")],
        tips: &["nondeterministic_output_order"]),
    cmd!("command|list", -2, LOADING_OK | STALE, NOKEYS, "server", "7.0.0", "Get an array of Redis command names", list;
        acl: acl::CONNECTION,
        complexity: "O(N) where N is the total number of Redis commands",
        args: "filterby:oneof=FILTERBY?(module-name:string=MODULE category:string=ACLCAT pattern:pattern=PATTERN)",
        tips: &["nondeterministic_output_order"]),
];
