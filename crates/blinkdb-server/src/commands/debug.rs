//! DEBUG, behind `enable-debug-command` as in Redis 7: the subcommands tools
//! and Redis's test suite use that BlinkDB can honor.

use super::args::eq_ic;
use super::object::encoding;
use super::Ctx;
use crate::protocol::Args;
use blinkdb_engine::Value;
use std::sync::atomic::{AtomicBool, Ordering};

/// Bytes Redis's RDB format would take for a string, uncompressed: an
/// integer of up to 32 bits in 2/3/5 bytes, else a length prefix and the
/// bytes (BlinkDB writes no RDB; rdbcompression's LZF is not applied).
fn rdb_string_len(s: &[u8]) -> usize {
    if s.len() <= 11 {
        if let Some(n) = super::args::parse_i64(s) {
            if i8::try_from(n).is_ok() {
                return 2;
            } else if i16::try_from(n).is_ok() {
                return 3;
            } else if i32::try_from(n).is_ok() {
                return 5;
            }
        }
    }
    length_prefix(s.len()) + s.len()
}

/// Bytes of an RDB length of `n`.
fn length_prefix(n: usize) -> usize {
    match n {
        0..=63 => 1,
        64..=16383 => 2,
        n if n <= u32::MAX as usize => 5,
        _ => 9,
    }
}

fn object(ctx: &mut Ctx, args: &Args) {
    let integers_shared = super::object::integers_shared(ctx);
    let found = ctx.shared.engine.peek_stale(ctx.client.db, args[2], |e| {
        e.map(|e| {
            let v = e.value();
            let (enc, refcount) = encoding(v);
            let refcount = if integers_shared { refcount } else { 1 };
            let len = match v {
                Value::Str(s, _) => rdb_string_len(s),
                Value::Blob(..) => {
                    let n = v.str_len().unwrap_or(0);
                    length_prefix(n) + n
                }
                Value::Bloom(b, _) => b.size_bytes(),
                // Redis's serialized length of a collection is its RDB
                // payload; until the RDB codec exists, the in-memory size.
                Value::Hash(..)
                | Value::Set(..)
                | Value::ZSet(..)
                | Value::List(..)
                | Value::Stream(..)
                | Value::Sketch(..) => v.heap_size(),
            };
            let (lru, idle) = super::access::debug_fields(e);
            // A list adds what Redis's DEBUG OBJECT says of its quicklist.
            let quicklist = match v {
                Value::List(l, _) => format!(
                    " ql_nodes:{} ql_avg_node:{:.2} ql_listpack_max:{} ql_compressed:{} ql_uncompressed_size:{}",
                    l.node_count(),
                    l.len() as f64 / l.node_count().max(1) as f64,
                    l.fill(),
                    (l.depth() != 0) as u8,
                    l.uncompressed_bytes()
                ),
                _ => String::new(),
            };
            format!(
                "Value at:{:p} refcount:{refcount} encoding:{enc} serializedlength:{len} lru:{lru} lru_seconds_idle:{idle}{quicklist}",
                e as *const _
            )
        })
    });
    match found {
        Some(line) => ctx.out.simple(&line),
        None => ctx.out.error(super::args::ERR_NO_SUCH_KEY),
    }
}

/// DEBUG LISTPACK key: a listpack-encoded value's entries printed on
/// stdout, one a line, as Redis's lpRepr prints its listpack (the layout of
/// the lines is BlinkDB's own).
fn listpack(ctx: &mut Ctx, key: &[u8]) {
    let printed = ctx.shared.engine.peek(ctx.client.db, key, |e| {
        let v = e?.value();
        let (enc, _) = encoding(v);
        if enc != "listpack" && enc != "listpackex" {
            return Some(false);
        }
        let mut lines: Vec<String> = Vec::new();
        let show = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        match v {
            Value::Hash(h, _) => {
                for (f, val, at) in h.iter_ttl() {
                    lines.push(show(f));
                    lines.push(show(val));
                    if enc == "listpackex" {
                        lines.push(if at == 0 {
                            String::new()
                        } else {
                            at.to_string()
                        });
                    }
                }
            }
            Value::ZSet(z, _) => {
                for (m, score) in z.iter() {
                    lines.push(show(m));
                    lines.push(score.to_string());
                }
            }
            Value::Set(s, _) => lines.extend(s.iter().map(|m| show(&m))),
            Value::List(l, _) => lines.extend(l.iter().map(|m| show(&m))),
            _ => {}
        }
        let mut text = format!("{{num_elements {}}}\n", lines.len());
        for (i, l) in lines.iter().enumerate() {
            text.push_str(&format!("\t[{i}] {l}\n"));
        }
        let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes());
        Some(true)
    });
    match printed {
        None => ctx.out.error(super::args::ERR_NO_SUCH_KEY),
        Some(false) => ctx.out.error("ERR Not a listpack encoded object."),
        Some(true) => ctx.out.simple("Listpack structure printed on stdout"),
    }
}

/// DEBUG's on/off switches, `DEBUG <name> <0|1>`: PAUSE-CRON stops the
/// main cron's work, SET-ACTIVE-EXPIRE 0 the background expiry, and
/// SET-DISABLE-DENY-SCRIPTS 1 lets scripts call `noscript` commands.
type Switch = fn(&crate::server::state::DebugSwitches) -> &AtomicBool;
const SWITCHES: [(&str, Switch); 3] = [
    ("pause-cron", |d| &d.cron_paused),
    ("set-active-expire", |d| &d.active_expire),
    ("set-disable-deny-scripts", |d| &d.scripts_may_call_noscript),
];

pub fn debug(ctx: &mut Ctx, args: &Args) {
    let sub = args[1];
    if eq_ic(sub, "help") && args.len() == 2 {
        return ctx.out.help(&[
            "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CONFIG-REWRITE-FORCE-ALL",
            "    Like CONFIG REWRITE but writes all configuration options, including",
            "    keywords not listed in original configuration file or default values.",
            "DIGEST",
            "    Output a hex signature representing the current DB content.",
            "DIGEST-VALUE <key> [<key> ...]",
            "    Output a hex signature of the values of all the specified keys.",
            "LISTPACK <key>",
            "    Show low level info about the listpack encoding of <key>.",
            "LOG <message>",
            "    Write <message> to the server log.",
            "LOADAOF",
            "    Flush the AOF buffers on disk and reload the AOF in memory.",
            "OBJECT <key>",
            "    Show low level info about the <key> and associated value.",
            "RELOAD [option ...]",
            "    Save the RDB on disk and reload it back to memory. Valid <option> values:",
            "    * MERGE: conflicting keys will be loaded from RDB.",
            "    * NOFLUSH: the existing database will not be removed before load, but",
            "      conflicting keys will generate an exception and kill the server.",
            "    * NOSAVE: the database will be loaded from an existing RDB file.",
            "    Examples:",
            "    * DEBUG RELOAD: verify that the server is able to persist, flush and reload",
            "      the database.",
            "    * DEBUG RELOAD NOSAVE: replace the current database with the contents of an",
            "      existing RDB file.",
            "    * DEBUG RELOAD NOSAVE NOFLUSH MERGE: add the contents of an existing RDB",
            "      file to the database.",
            "POPULATE <count> [<prefix>] [<size>]",
            "    Create <count> string keys named key:<num>. If <prefix> is specified then",
            "    it is used instead of the 'key' prefix. These are not propagated to",
            "    replicas. Cluster slots are not respected so keys not belonging to the",
            "    current node can be created in cluster mode.",
            "PROTOCOL <type>",
            "    Reply with a test value of the specified type. <type> can be: string,",
            "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
            "    true, false.",
            "SET-ACTIVE-EXPIRE <0|1>",
            "    Setting it to 0 disables expiring keys in background when they are not",
            "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
            "    default.",
            "QUICKLIST-PACKED-THRESHOLD <size>",
            "    Sets the threshold for elements to be inserted as plain vs packed nodes",
            "    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
            "PAUSE-CRON <0|1>",
            "    Stop periodic cron job processing.",
            "REPLYBUFFER RESIZING <0|1>",
            "    Enable or disable the reply buffer resize cron job",
            "SLEEP <seconds>",
            "    Stop the server for <seconds>. Decimals allowed.",
            "HELP",
            "    Prints this help.",
        ]);
    }
    if eq_ic(sub, "config-rewrite-force-all") && args.len() == 2 {
        // CONFIG REWRITE, writing every option, defaults included.
        return match ctx
            .shared
            .config()
            .rewrite(true, &super::acl::config_user_lines(ctx.shared))
        {
            Ok(()) => ctx.out.ok(),
            Err(e) => ctx
                .out
                .error(&format!("ERR CONFIG-REWRITE-FORCE-ALL failed: {e}")),
        };
    }
    if eq_ic(sub, "sleep") && args.len() == 3 {
        // strtod's reading: what does not parse sleeps 0.
        let secs = std::str::from_utf8(args[2])
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .unwrap_or(0.0);
        std::thread::sleep(std::time::Duration::from_secs_f64(secs.min(1e9)));
        return ctx.out.ok();
    }
    if let Some((_, flag)) = SWITCHES.iter().find(|(name, _)| eq_ic(sub, name)) {
        if args.len() == 3 {
            // atoi's reading: a leading integer, else 0; on when not 0.
            let on = atoi(args[2]) != 0;
            flag(&ctx.shared.debug).store(on, Ordering::Relaxed);
            return ctx.out.ok();
        }
    }
    if eq_ic(sub, "replybuffer") && args.len() == 4 && eq_ic(args[2], "resizing") {
        let on = atoi(args[3]) != 0;
        ctx.shared
            .debug
            .reply_buffer_resizing
            .store(on, Ordering::Relaxed);
        return ctx.out.ok();
    }
    if eq_ic(sub, "quicklist-packed-threshold") && args.len() == 3 {
        // memtoull's reading ("1b", "10kb"), then quicklist.c's bounds.
        let threshold = std::str::from_utf8(args[2])
            .ok()
            .and_then(crate::config::parse_memory)
            .and_then(blinkdb_engine::packed_threshold);
        let Some(threshold) = threshold else {
            return ctx
                .out
                .error("ERR argument must be a memory value bigger than 1 and smaller than 4gb");
        };
        ctx.shared
            .debug
            .list_packed_threshold
            .store(threshold, Ordering::Relaxed);
        return ctx.out.ok();
    }
    if eq_ic(sub, "protocol") && args.len() == 3 {
        return protocol(ctx, args[2]);
    }
    if eq_ic(sub, "log") && args.len() == 3 {
        tracing::warn!("DEBUG LOG: {}", String::from_utf8_lossy(args[2]));
        return ctx.out.ok();
    }
    if eq_ic(sub, "populate") && (3..=5).contains(&args.len()) {
        return populate(ctx, args);
    }
    if eq_ic(sub, "reload") {
        return super::debug_reload::reload(ctx, args);
    }
    if eq_ic(sub, "loadaof") {
        return super::debug_reload::loadaof(ctx);
    }
    if eq_ic(sub, "listpack") && args.len() == 3 {
        return listpack(ctx, args[2]);
    }
    if eq_ic(sub, "object") && args.len() == 3 {
        return object(ctx, args);
    }
    if eq_ic(sub, "digest") && args.len() == 2 {
        return match super::digest::dataset(&ctx.shared.engine) {
            Ok(d) => ctx.out.simple(&super::digest::hex(&d)),
            Err(e) => ctx.out.error(&e),
        };
    }
    if eq_ic(sub, "digest-value") {
        let mut digests = Vec::with_capacity(args.len() - 2);
        for key in &args[2..] {
            match super::digest::key_value(&ctx.shared.engine, ctx.client.db, key) {
                Ok(d) => digests.push(super::digest::hex(&d)),
                Err(e) => return ctx.out.error(&e),
            }
        }
        ctx.out.array(digests.len());
        for d in &digests {
            ctx.out.simple(d);
        }
        return;
    }
    super::subcommand_syntax_error(ctx, args);
}

/// DEBUG PROTOCOL <type>: a sample reply of each RESP3 type (RESP2's
/// rendering of it on a RESP2 connection), as Redis's debug.c sends them, so
/// that clients can test their parsers.
fn protocol(ctx: &mut Ctx, name: &[u8]) {
    let out = &mut ctx.out;
    if eq_ic(name, "string") {
        out.bulk(b"Hello World");
    } else if eq_ic(name, "integer") {
        out.int(12345);
    } else if eq_ic(name, "double") {
        // Redis's sample value, not pi.
        #[allow(clippy::approx_constant)]
        out.double(3.141);
    } else if eq_ic(name, "bignum") {
        out.bignum(b"1234567999999999999999999999999999999");
    } else if eq_ic(name, "null") {
        out.null();
    } else if eq_ic(name, "array") || eq_ic(name, "set") {
        if eq_ic(name, "array") {
            out.array(3);
        } else {
            out.set(3);
        }
        for j in 0..3 {
            out.int(j);
        }
    } else if eq_ic(name, "map") {
        out.map(3);
        for j in 0..3 {
            out.int(j);
            out.boolean(j == 1);
        }
    } else if eq_ic(name, "attrib") {
        // Attributes are not a reply: a real one follows (alone in RESP2).
        if out.resp3() {
            out.attributes(1);
            out.bulk(b"key-popularity");
            out.array(2);
            out.bulk(b"key:123");
            out.int(90);
        }
        out.bulk(b"Some real reply following the attribute");
    } else if eq_ic(name, "push") {
        if !out.resp3() {
            return out.error("ERR RESP2 is not supported by this command");
        }
        out.push(2);
        out.bulk(b"server-cpu-usage");
        out.int(42);
        // A push is out of band: a reply follows for the client waiting on one.
        out.bulk(b"Some real reply following the push reply");
    } else if eq_ic(name, "true") || eq_ic(name, "false") {
        out.boolean(eq_ic(name, "true"));
    } else if eq_ic(name, "verbatim") {
        out.verbatim("This is a verbatim\nstring");
    } else {
        out.error(
            "ERR Wrong protocol type name. Please use one of the following: \
             string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
        );
    }
}

/// DEBUG POPULATE <count> [<prefix>] [<size>]: keys `<prefix>:<n>` (prefix
/// `key`) holding `value:<n>`, cut or zero-padded to `size` bytes when given;
/// keys that exist are left alone. As in Redis, the keys are neither logged
/// nor sent to replicas (a restart from the AOF does not bring them back).
fn populate(ctx: &mut Ctx, args: &Args) {
    // getPositiveLongFromObjectOrReply: one error for a non-number and a negative.
    let positive = |raw: &[u8]| match super::args::parse_i64(raw) {
        Some(n) if n >= 0 => Ok(n as u64),
        _ => Err("ERR value is out of range, must be positive"),
    };
    let count = match positive(args[2]) {
        Ok(n) => n,
        Err(e) => return ctx.out.error(e),
    };
    let size = match args.get(4).map(|raw| positive(raw)) {
        None => 0,
        Some(Ok(n)) if n as i64 > ctx.shared.settings().proto_max_bulk_len => {
            // Redis allocates whatever it is asked; a value no client could
            // send is refused here rather than risk an allocation without bound.
            return ctx
                .out
                .error("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
        }
        Some(Ok(n)) => n as usize,
        Some(Err(e)) => return ctx.out.error(e),
    };
    let prefix: &[u8] = args.get(3).map_or(b"key", |p| &p[..]);
    blinkdb_engine::unlogged(|| {
        let mut key = Vec::with_capacity(prefix.len() + 21);
        for n in 0..count {
            key.clear();
            key.extend_from_slice(prefix);
            key.push(b':');
            key.extend_from_slice(n.to_string().as_bytes());
            ctx.write1(&key, |tx, db, _| {
                if tx.exists(db, &key) {
                    return;
                }
                let mut value = format!("value:{n}").into_bytes();
                if size != 0 {
                    value.resize(size, 0);
                }
                tx.insert(db, &key, blinkdb_engine::Entry::new(Value::str(&value[..])));
            });
        }
    });
    ctx.out.ok();
}

/// C's atoi: a leading integer, else 0.
fn atoi(arg: &[u8]) -> i64 {
    let text = String::from_utf8_lossy(arg);
    let digits: String = text
        .trim_start()
        .chars()
        .enumerate()
        .take_while(|(i, c)| c.is_ascii_digit() || (*i == 0 && (*c == '-' || *c == '+')))
        .map(|(_, c)| c)
        .collect();
    digits.parse::<i64>().unwrap_or(0)
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("debug", -2, ADMIN | NOSCRIPT | LOADING_OK | STALE | PROTECTED, NOKEYS, "server", "1.0.0", "A container for debugging commands", debug;
        props: props::NO_TOUCH,
        alone_if: Some(super::debug_reload::runs_alone),
        complexity: "Depends on subcommand.",
        doc_flags: doc::SYSCMD),
];

#[cfg(test)]
mod tests {
    use super::rdb_string_len;

    #[test]
    fn rdb_lengths() {
        assert_eq!(rdb_string_len(b"12"), 2);
        assert_eq!(rdb_string_len(b"1000"), 3);
        assert_eq!(rdb_string_len(b"100000"), 5);
        assert_eq!(rdb_string_len(b"12345678901"), 12);
        assert_eq!(rdb_string_len(b"abc"), 4);
        assert_eq!(rdb_string_len(&[b'a'; 100]), 102);
    }
}
