//! XINFO STREAM [FULL [COUNT n]], XINFO GROUPS and XINFO CONSUMERS, with
//! Redis 7.0's fields in its order (maps in RESP3, flat arrays in RESP2).

use super::args::{eq_ic, parse_i64, ERR_NOT_INT, ERR_NO_SUCH_KEY};
use super::collection;
use super::stream::{reply_entry, reply_id};
use super::Ctx;
use crate::protocol::{Args, Out};
use blinkdb_engine::{
    stream::{Group, StreamId},
    StreamValue,
};

fn now_ms() -> i64 {
    blinkdb_engine::now_ms() as i64
}

/// Reads the stream at `args[2]`, replying `ERR no such key` or
/// WRONGTYPE when it is not one.
fn with_stream(ctx: &mut Ctx, args: &Args, f: impl FnOnce(&StreamValue, &mut Out)) {
    let r = collection::read(ctx, args[2], |s: Option<&StreamValue>, out| match s {
        None => out.error(ERR_NO_SUCH_KEY),
        Some(s) => f(s, out),
    });
    if r.is_err() {
        ctx.wrongtype();
    }
}

fn entries_read(out: &mut Out, g: &Group) {
    match g.entries_read {
        Some(n) => out.int(n as i64),
        None => out.null(),
    }
}

fn lag(out: &mut Out, s: &StreamValue, g: &Group) {
    match s.lag(g) {
        Some(n) => out.int(n),
        None => out.null(),
    }
}

pub fn stream(ctx: &mut Ctx, args: &Args) {
    let opts = &args[3..];
    let mut full = false;
    let mut count: usize = 10;
    let mut syntax = false;
    let mut bad_count = false;
    if !opts.is_empty() {
        if (opts.len() != 1 && opts.len() != 3)
            || !eq_ic(opts[0], "full")
            || (opts.len() == 3 && !eq_ic(opts[1], "count"))
        {
            syntax = true;
        } else {
            full = true;
            if opts.len() == 3 {
                match parse_i64(opts[2]) {
                    None => bad_count = true,
                    Some(n) if n < 0 => count = 10,
                    Some(n) => count = n as usize,
                }
            }
        }
    }
    let mut after: Option<bool> = None;
    with_stream(ctx, args, |s, out| {
        if syntax {
            after = Some(true);
            return;
        }
        if bad_count {
            return out.error(ERR_NOT_INT);
        }
        out.map(if full { 9 } else { 10 });
        out.bulk(b"length");
        out.int(s.len() as i64);
        out.bulk(b"radix-tree-keys");
        out.int(s.nodes() as i64);
        out.bulk(b"radix-tree-nodes");
        out.int(s.tree_nodes() as i64);
        out.bulk(b"last-generated-id");
        reply_id(out, s.last_id);
        out.bulk(b"max-deleted-entry-id");
        reply_id(out, s.max_deleted_id);
        out.bulk(b"entries-added");
        out.int(s.entries_added as i64);
        out.bulk(b"recorded-first-entry-id");
        reply_id(out, s.first_id);
        if !full {
            out.bulk(b"groups");
            out.int(s.groups.len() as i64);
            out.bulk(b"first-entry");
            match s.range(StreamId::MIN, StreamId::MAX, false).next() {
                Some(e) => reply_entry(out, e),
                None => out.null(),
            }
            out.bulk(b"last-entry");
            match s.range(StreamId::MIN, StreamId::MAX, true).next() {
                Some(e) => reply_entry(out, e),
                None => out.null(),
            }
            return;
        }
        let limit = if count == 0 { usize::MAX } else { count };
        out.bulk(b"entries");
        super::stream::reply_entries(
            out,
            s.range(StreamId::MIN, StreamId::MAX, false).take(limit),
        );
        out.bulk(b"groups");
        out.array(s.groups.len());
        for (name, g) in &s.groups {
            out.map(7);
            out.bulk(b"name");
            out.bulk(name);
            out.bulk(b"last-delivered-id");
            reply_id(out, g.last_id);
            out.bulk(b"entries-read");
            entries_read(out, g);
            out.bulk(b"lag");
            lag(out, s, g);
            out.bulk(b"pel-count");
            out.int(g.pel.len() as i64);
            out.bulk(b"pending");
            let pel: Vec<_> = g.pel.iter().take(limit).collect();
            out.array(pel.len());
            for (id, n) in pel {
                out.array(4);
                reply_id(out, *id);
                out.bulk(&n.consumer);
                out.int(n.delivery_time);
                out.int(n.delivery_count as i64);
            }
            out.bulk(b"consumers");
            out.array(g.consumers.len());
            for (cname, c) in &g.consumers {
                out.map(4);
                out.bulk(b"name");
                out.bulk(cname);
                out.bulk(b"seen-time");
                out.int(c.seen_time);
                out.bulk(b"pel-count");
                out.int(c.pel.len() as i64);
                out.bulk(b"pending");
                let pel: Vec<_> = c.pel.iter().take(limit).collect();
                out.array(pel.len());
                for id in pel {
                    let n = &g.pel[id];
                    out.array(3);
                    reply_id(out, *id);
                    out.int(n.delivery_time);
                    out.int(n.delivery_count as i64);
                }
            }
        }
    });
    if after == Some(true) {
        super::subcommand_syntax_error(ctx, args);
    }
}

pub fn groups(ctx: &mut Ctx, args: &Args) {
    with_stream(ctx, args, |s, out| {
        out.array(s.groups.len());
        for (name, g) in &s.groups {
            out.map(6);
            out.bulk(b"name");
            out.bulk(name);
            out.bulk(b"consumers");
            out.int(g.consumers.len() as i64);
            out.bulk(b"pending");
            out.int(g.pel.len() as i64);
            out.bulk(b"last-delivered-id");
            reply_id(out, g.last_id);
            out.bulk(b"entries-read");
            entries_read(out, g);
            out.bulk(b"lag");
            lag(out, s, g);
        }
    });
}

pub fn consumers(ctx: &mut Ctx, args: &Args) {
    let (key, group) = (args[2], args[3]);
    let now = now_ms();
    with_stream(ctx, args, |s, out| {
        let Some(g) = s.groups.get(group) else {
            return out.error_bytes(&super::stream::msg(&[
                b"NOGROUP No such consumer group '",
                group,
                b"' for key name '",
                key,
                b"'",
            ]));
        };
        out.array(g.consumers.len());
        for (name, c) in &g.consumers {
            out.map(3);
            out.bulk(b"name");
            out.bulk(name);
            out.bulk(b"pending");
            out.int(c.pel.len() as i64);
            out.bulk(b"idle");
            out.int((now - c.seen_time).max(0));
        }
    });
}

pub fn help(ctx: &mut Ctx, _args: &Args) {
    ctx.out.help(&[
        "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CONSUMERS <key> <groupname>",
        "    Show consumers of <groupname>.",
        "GROUPS <key>",
        "    Show the stream consumer groups.",
        "STREAM <key> [FULL [COUNT <count>]",
        "    Show information about the stream.",
        "HELP",
        "    Prints this help.",
    ]);
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("xinfo", -2, CONTAINER, NOKEYS, "stream", "5.0.0", "A container for stream introspection commands", NO_HANDLER;
        complexity: "Depends on subcommand."),
    cmd!("xinfo|consumers", 4, READONLY, (2, 2, 1), "stream", "5.0.0", "List the consumers in a consumer group", consumers;
        acl: acl::STREAM,
        complexity: "O(1)",
        keys: "RO,access index:2 range:0:1:0",
        args: "key:key groupname:string",
        tips: &["nondeterministic_output"]),
    cmd!("xinfo|groups", 3, READONLY, (2, 2, 1), "stream", "5.0.0", "List the consumer groups of a stream", groups;
        acl: acl::STREAM,
        complexity: "O(1)",
        keys: "RO,access index:2 range:0:1:0",
        args: "key:key",
        history: &[("7.0.0", "Added the `entries-read` and `lag` fields")]),
    cmd!("xinfo|stream", -3, READONLY, (2, 2, 1), "stream", "5.0.0", "Get information about a stream", stream;
        acl: acl::STREAM,
        complexity: "O(1)",
        keys: "RO,access index:2 range:0:1:0",
        args: "key:key full:block=FULL?(count:integer=COUNT?)",
        history: &[("6.0.0", "Added the `FULL` modifier."), ("7.0.0", "Added the `max-deleted-entry-id`, `entries-added`, `recorded-first-entry-id`, `entries-read` and `lag` fields")]),
    cmd!("xinfo|help", 2, LOADING_OK | STALE, NOKEYS, "stream", "5.0.0", "Show helpful text about the different subcommands", help;
        acl: acl::STREAM,
        complexity: "O(1)"),
];
