//! OBJECT: how a value is held, with Redis's encoding names.
//!
//! A string is "int" when it reads as a 64-bit integer of at most 20
//! characters, "embstr" up to 44 bytes and "raw" beyond, the choice Redis
//! makes for a value it stores from a command argument; a large value kept in
//! the log, and a Bloom filter (as RedisBloom's module type), is "raw".
//! IDLETIME and FREQ read the key's access clock (commands/access.rs).

use super::args::parse_i64;
use super::Ctx;
use crate::protocol::Args;
use blinkdb_engine::Value;

/// Redis's OBJ_ENCODING_EMBSTR_SIZE_LIMIT.
const EMBSTR_MAX: usize = 44;
/// Integers Redis stores as shared objects (refcount INT_MAX).
const SHARED_INTEGERS: i64 = 10_000;
const SHARED_REFCOUNT: i64 = i32::MAX as i64;

/// Redis's encoding name for a value, and its refcount.
pub fn encoding(v: &Value) -> (&'static str, i64) {
    match v {
        Value::Str(s, _) => {
            let as_int = if s.len() <= 20 { parse_i64(s) } else { None };
            match as_int {
                Some(n) if (0..SHARED_INTEGERS).contains(&n) => ("int", SHARED_REFCOUNT),
                Some(_) => ("int", 1),
                None if s.len() <= EMBSTR_MAX => ("embstr", 1),
                None => ("raw", 1),
            }
        }
        // Module values: Redis's objects of type OBJ_MODULE say "raw".
        Value::Blob(..) | Value::Bloom(..) | Value::Sketch(..) => ("raw", 1),
        Value::Hash(..)
        | Value::Set(..)
        | Value::ZSet(..)
        | Value::List(..)
        | Value::Stream(..) => (v.collection_encoding().unwrap_or("raw"), 1),
    }
}

/// Looks the key up (counting a hit or miss, as Redis's OBJECT does) and
/// replies with `f` of its value, or null.
fn with_value(
    ctx: &mut Ctx,
    key: &[u8],
    f: impl FnOnce(&Value) -> (&'static str, i64),
    text: bool,
) {
    let found = ctx
        .shared
        .engine
        .read(ctx.client.db, key, |e| e.map(|e| f(e.value())));
    ctx.client.count_lookup(found.is_some());
    match found {
        None => ctx.out.null(),
        Some((name, _)) if text => ctx.out.bulk(name.as_bytes()),
        Some((_, n)) => ctx.out.int(n),
    }
}

pub fn encoding_cmd(ctx: &mut Ctx, args: &Args) {
    with_value(ctx, args[2], encoding, true);
}

pub fn refcount(ctx: &mut Ctx, args: &Args) {
    let shared = integers_shared(ctx);
    with_value(
        ctx,
        args[2],
        |v| {
            let (enc, n) = encoding(v);
            (enc, if shared { n } else { 1 })
        },
        false,
    );
}

/// Whether small integers count as Redis's shared objects: not under a
/// maxmemory with an LRU or LFU policy, where each value needs its own
/// access clock (Redis's MAXMEMORY_FLAG_NO_SHARED_INTEGERS). Redis decides
/// it when the value is stored; here it is read from the settings now.
pub fn integers_shared(ctx: &mut Ctx) -> bool {
    let s = ctx.client.settings(ctx.shared);
    let p = s.maxmemory_policy.as_str();
    s.maxmemory == 0 || !(p.ends_with("-lru") || p.ends_with("-lfu"))
}

/// IDLETIME (`freq` false) or FREQ: the seconds since the key's last
/// access, or its LFU counter, each answered only under its kind of policy.
/// The lookup leaves the clock as it is (its table entry is NO_TOUCH).
fn clock_figure(ctx: &mut Ctx, key: &[u8], freq: bool) {
    let found = ctx.shared.engine.read(ctx.client.db, key, |e| {
        e.map(|e| super::access::object_figure(ctx, e, freq))
    });
    ctx.client.count_lookup(found.is_some());
    match found {
        None => ctx.out.null(),
        Some(Ok(n)) => ctx.out.int(n),
        Some(Err(msg)) => ctx.out.error(msg),
    }
}

pub fn idletime(ctx: &mut Ctx, args: &Args) {
    clock_figure(ctx, args[2], false);
}

pub fn freq(ctx: &mut Ctx, args: &Args) {
    clock_figure(ctx, args[2], true);
}

pub fn help(ctx: &mut Ctx, _args: &Args) {
    ctx.out.help(&[
        "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ENCODING <key>",
        "    Return the kind of internal representation used in order to store the value",
        "    associated with a <key>.",
        "FREQ <key>",
        "    Return the access frequency index of the <key>. The returned integer is",
        "    proportional to the logarithm of the recent access frequency of the key.",
        "IDLETIME <key>",
        "    Return the idle time of the <key>, that is the approximated number of",
        "    seconds elapsed since the last access to the key.",
        "REFCOUNT <key>",
        "    Return the number of references of the value associated with the specified",
        "    <key>.",
        "HELP",
        "    Prints this help.",
    ]);
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("object", -2, CONTAINER, NOKEYS, "generic", "2.2.3", "A container for object introspection commands", NO_HANDLER;
        props: props::NO_TOUCH,
        complexity: "Depends on subcommand."),
    cmd!("object|encoding", 3, READONLY, (2, 2, 1), "generic", "2.2.3", "Inspect the internal encoding of a Redis object", encoding_cmd;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RO index:2 range:0:1:0",
        args: "key:key",
        tips: &["nondeterministic_output"]),
    cmd!("object|freq", 3, READONLY, (2, 2, 1), "generic", "4.0.0", "Get the logarithmic access frequency counter of a Redis object", freq;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RO index:2 range:0:1:0",
        args: "key:key",
        tips: &["nondeterministic_output"]),
    cmd!("object|idletime", 3, READONLY, (2, 2, 1), "generic", "2.2.3", "Get the time since a Redis object was last accessed", idletime;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RO index:2 range:0:1:0",
        args: "key:key",
        tips: &["nondeterministic_output"]),
    cmd!("object|refcount", 3, READONLY, (2, 2, 1), "generic", "2.2.3", "Get the number of references to the value of the key", refcount;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RO index:2 range:0:1:0",
        args: "key:key",
        tips: &["nondeterministic_output"]),
    cmd!("object|help", 2, LOADING_OK | STALE, NOKEYS, "generic", "6.2.0", "Show helpful text about the different subcommands", help;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1)"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_as_redis_chooses_them() {
        let enc = |s: &[u8]| encoding(&Value::str(s));
        assert_eq!(enc(b"123"), ("int", SHARED_REFCOUNT));
        assert_eq!(enc(b"10000"), ("int", 1));
        assert_eq!(enc(b"-5"), ("int", 1));
        assert_eq!(enc(b"-0"), ("embstr", 1));
        assert_eq!(enc(b"007"), ("embstr", 1));
        assert_eq!(enc(b"12345678901234567890123"), ("embstr", 1));
        assert_eq!(enc(&[b'a'; 44]), ("embstr", 1));
        assert_eq!(enc(&[b'a'; 45]), ("raw", 1));
    }
}
