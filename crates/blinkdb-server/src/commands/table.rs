//! Every supported command, one `cmd!` entry each, with what Redis 7.0.15's
//! COMMAND reports about it: arity, flags, key positions and key specs, ACL
//! categories, docs (summary, complexity, history, arguments). Subcommands are
//! entries of their own named `container|sub`, right after their container.
//! The key-spec and argument syntax is described in `spec.rs`.

use super::{
    access, acl as acl_cmd, bitfield, bitops, bloom, bpop, command, conn, debug, dump, geo, hash,
    hyperloglog, keys, latency, lcs, list, migrate, monitor, multi, object, pubsub, scripting,
    server, set, slowlog, sort, stream, stream_group, stream_info, strings, zrange, zset, zsetops,
    Handler,
};
use crate::cluster::commands as cluster;
use hashbrown::HashMap;
use std::sync::OnceLock;

pub const WRITE: u32 = 1;
pub const READONLY: u32 = 1 << 1;
pub const DENYOOM: u32 = 1 << 2;
pub const FAST: u32 = 1 << 3;
pub const NO_AUTH: u32 = 1 << 4;
pub const LOADING_OK: u32 = 1 << 5;
pub const ADMIN: u32 = 1 << 6;
pub const STALE: u32 = 1 << 7;
/// Runs at once inside MULTI instead of being queued (EXEC, DISCARD, MULTI,
/// WATCH, QUIT, RESET).
pub const TX_CONTROL: u32 = 1 << 8;
pub const NO_MULTI: u32 = 1 << 9;
pub const MODULE: u32 = 1 << 10;
pub const PUBSUB: u32 = 1 << 11;
pub const NOSCRIPT: u32 = 1 << 12;
pub const BLOCKING: u32 = 1 << 13;
pub const SKIP_MONITOR: u32 = 1 << 14;
pub const SKIP_SLOWLOG: u32 = 1 << 15;
pub const ASKING: u32 = 1 << 16;
/// Not listed by COMMAND (as in Redis), but paused by CLIENT PAUSE WRITE.
pub const MAY_REPLICATE: u32 = 1 << 17;
pub const NO_MANDATORY_KEYS: u32 = 1 << 18;
pub const NO_ASYNC_LOADING: u32 = 1 << 19;
pub const ALLOW_BUSY: u32 = 1 << 20;
/// Needs `enable-debug-command` (DEBUG); not listed by COMMAND, as in Redis.
pub const PROTECTED: u32 = 1 << 21;
/// Has subcommands: the entry that runs is the `name|sub` one.
pub const CONTAINER: u32 = 1 << 22;
/// Needs `enable-module-command` (MODULE LOAD/LOADEX/UNLOAD); Redis marks
/// these `protected` too, gated by their own option.
pub const PROTECTED_MODULE: u32 = 1 << 23;
const W: u32 = WRITE | DENYOOM;

/// What the server needs to know of a command besides what COMMAND lists
/// (`CommandSpec::props`): Redis decides these by comparing command procs;
/// here they are data in the entry.
pub mod props {
    /// Its lookups leave access clocks alone (Redis 7.0's LOOKUP_NOTOUCH
    /// callers, bare dictFinds, and the keyspace walks).
    pub const NO_TOUCH: u32 = 1;
    /// Its lookups touch the keys even for a CLIENT NO-TOUCH client (TOUCH).
    pub const TOUCH: u32 = 1 << 1;
    /// Allowed in the RESP2 subscribed context.
    pub const SUBSCRIBED_OK: u32 = 1 << 2;
    /// Runs a script (EVAL*, FCALL*): runs alone, and a script's declared
    /// flags replace the command's (Redis's getCommandFlags).
    pub const RUNS_SCRIPT: u32 = 1 << 3;
    /// Runs the MULTI queue (EXEC): runs alone, is checked with the queued
    /// commands' flags and keys.
    pub const RUNS_QUEUE: u32 = 1 << 4;
    /// Opens a transaction (MULTI), in a log or a master's stream.
    pub const TX_OPEN: u32 = 1 << 5;
    /// Closes a transaction (EXEC, DISCARD), in a log or a master's stream.
    pub const TX_CLOSE: u32 = 1 << 6;
    /// Refused on a persistence error as a write is (PING, so that a
    /// health check sees MISCONF).
    pub const MISCONF_CHECKED: u32 = 1 << 7;
    /// Runs on a migrating or importing slot without a redirection (MIGRATE).
    pub const MIGRATING_OK: u32 = 1 << 8;
    /// Its key positions name shard channels (SSUBSCRIBE, SPUBLISH...):
    /// cluster routing hashes them as keys.
    pub const SHARD_CHANNELS: u32 = 1 << 9;
    /// Its logged values may stay in the AOF (SET, MSET: the index keeps
    /// their place on replay).
    pub const LOGGED_VALUES: u32 = 1 << 10;
    /// Sets the ASKING state the next command uses (ASKING): it does not
    /// clear it.
    pub const SETS_ASKING: u32 = 1 << 11;
    /// Its first argument is a channel it publishes to (ACL channel rules).
    pub const PUBLISHES: u32 = 1 << 12;
    /// Its arguments are channels it subscribes to (ACL channel rules).
    pub const SUBSCRIBES: u32 = 1 << 13;
    /// The channels it subscribes to are patterns: ACL rules match them
    /// literally.
    pub const PATTERN_CHANNELS: u32 = 1 << 14;
}

/// Key positions and flags, as COMMAND GETKEYSANDFLAGS answers them.
pub type GetKeys = fn(&[&[u8]]) -> Option<super::spec::KeyPositions>;
/// Whether a command line must run alone (SORT reading other keys).
pub type AloneIf = fn(&[&[u8]]) -> bool;
/// Marks the arguments to hide (true) in MONITOR and SLOWLOG.
pub type Redact = fn(&[&[u8]], &mut [bool]);

/// The flags COMMAND lists, in Redis's order (`movablekeys` is computed).
const FLAG_NAMES: &[(u32, &str)] = &[
    (WRITE, "write"),
    (READONLY, "readonly"),
    (DENYOOM, "denyoom"),
    (MODULE, "module"),
    (ADMIN, "admin"),
    (PUBSUB, "pubsub"),
    (NOSCRIPT, "noscript"),
    (BLOCKING, "blocking"),
    (LOADING_OK, "loading"),
    (STALE, "stale"),
    (SKIP_MONITOR, "skip_monitor"),
    (SKIP_SLOWLOG, "skip_slowlog"),
    (ASKING, "asking"),
    (FAST, "fast"),
    (NO_AUTH, "no_auth"),
    (NO_MANDATORY_KEYS, "no_mandatory_keys"),
    (NO_ASYNC_LOADING, "no_async_loading"),
    (NO_MULTI, "no_multi"),
];

/// ACL categories, in the order Redis lists them.
#[allow(dead_code)]
pub mod acl {
    pub const KEYSPACE: u32 = 1;
    pub const READ: u32 = 1 << 1;
    pub const WRITE: u32 = 1 << 2;
    pub const SET: u32 = 1 << 3;
    pub const SORTEDSET: u32 = 1 << 4;
    pub const LIST: u32 = 1 << 5;
    pub const HASH: u32 = 1 << 6;
    pub const STRING: u32 = 1 << 7;
    pub const BITMAP: u32 = 1 << 8;
    pub const HYPERLOGLOG: u32 = 1 << 9;
    pub const GEO: u32 = 1 << 10;
    pub const STREAM: u32 = 1 << 11;
    pub const PUBSUB: u32 = 1 << 12;
    pub const ADMIN: u32 = 1 << 13;
    pub const FAST: u32 = 1 << 14;
    pub const SLOW: u32 = 1 << 15;
    pub const BLOCKING: u32 = 1 << 16;
    pub const DANGEROUS: u32 = 1 << 17;
    pub const CONNECTION: u32 = 1 << 18;
    pub const TRANSACTION: u32 = 1 << 19;
    pub const SCRIPTING: u32 = 1 << 20;
    pub const NAMES: [&str; 21] = [
        "keyspace",
        "read",
        "write",
        "set",
        "sortedset",
        "list",
        "hash",
        "string",
        "bitmap",
        "hyperloglog",
        "geo",
        "stream",
        "pubsub",
        "admin",
        "fast",
        "slow",
        "blocking",
        "dangerous",
        "connection",
        "transaction",
        "scripting",
    ];
}

/// Doc flags (COMMAND DOCS `doc_flags`).
pub mod doc {
    pub const DEPRECATED: u8 = 1;
    pub const SYSCMD: u8 = 2;
}

/// The only module whose commands BlinkDB serves natively (RedisBloom's name).
pub const MODULE_NAME: &str = "bf";
/// The RedisBloom version whose replies BF.* follows (2.8.2), as MODULE LIST
/// and INFO modules report it.
pub const MODULE_VERSION: u32 = 20802;

pub struct CommandSpec {
    /// Lowercase; `container|sub` for a subcommand.
    pub name: &'static str,
    /// Redis arity: n means exactly n arguments, -n means at least n.
    pub arity: i32,
    pub flags: u32,
    pub first_key: i32,
    pub last_key: i32,
    pub step: i32,
    pub group: &'static str,
    pub since: &'static str,
    pub summary: &'static str,
    pub handler: Handler,
    /// ACL categories besides those the flags imply (`acl::*`).
    pub acl: u32,
    pub complexity: &'static str,
    /// Key specs (`spec.rs`); empty: one spec derived from the key range and flags.
    pub keys: &'static str,
    /// Argument docs (`spec.rs`).
    pub args: &'static str,
    pub history: &'static [(&'static str, &'static str)],
    pub tips: &'static [&'static str],
    pub doc_flags: u8,
    pub deprecated_since: &'static str,
    pub replaced_by: &'static str,
    /// `props::*`: properties COMMAND does not list.
    pub props: u32,
    /// Finds the keys where the key specs cannot (Redis's getkeys_proc).
    pub getkeys: Option<GetKeys>,
    /// Whether this command line must run with no other command interleaved.
    pub alone_if: Option<AloneIf>,
    /// Marks the arguments MONITOR and SLOWLOG hide (secrets).
    pub redact: Option<Redact>,
}

fn no_handler(ctx: &mut super::Ctx, args: &crate::protocol::Args) {
    super::unknown_subcommand(ctx, args);
}

impl CommandSpec {
    /// What an entry holds unless its `cmd!` line says otherwise.
    pub const BASE: CommandSpec = CommandSpec {
        name: "",
        arity: 0,
        flags: 0,
        first_key: 0,
        last_key: 0,
        step: 0,
        group: "",
        since: "",
        summary: "",
        handler: no_handler,
        acl: 0,
        complexity: "",
        keys: "",
        args: "",
        history: &[],
        tips: &[],
        doc_flags: 0,
        deprecated_since: "",
        replaced_by: "",
        props: 0,
        getkeys: None,
        alone_if: None,
        redact: None,
    };

    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }

    pub fn has_prop(&self, prop: u32) -> bool {
        self.props & prop != 0
    }

    /// Whether this command line runs with every other connection held out:
    /// EXEC and scripts always, SORT when its patterns read other keys.
    pub fn runs_alone(&self, args: &[&[u8]]) -> bool {
        self.has_prop(props::RUNS_QUEUE | props::RUNS_SCRIPT)
            || self.alone_if.is_some_and(|f| f(args))
    }

    pub fn flag_names(&self) -> Vec<&'static str> {
        FLAG_NAMES
            .iter()
            .filter(|(f, _)| self.has(*f))
            .map(|(_, n)| *n)
            .collect()
    }

    /// Explicit categories plus those Redis derives from the flags (module
    /// commands have none, as RedisBloom registers them).
    pub fn acl_categories(&self) -> u32 {
        if self.has(MODULE) {
            return self.acl;
        }
        let mut c = self.acl;
        for (flag, cat) in [
            (WRITE, acl::WRITE),
            (ADMIN, acl::ADMIN | acl::DANGEROUS),
            (PUBSUB, acl::PUBSUB),
            (FAST, acl::FAST),
            (BLOCKING, acl::BLOCKING),
        ] {
            if self.has(flag) {
                c |= cat;
            }
        }
        if self.has(READONLY) && c & acl::SCRIPTING == 0 {
            c |= acl::READ;
        }
        if c & acl::FAST == 0 {
            c |= acl::SLOW;
        }
        c
    }

    pub fn is_subcommand(&self) -> bool {
        self.name.contains('|')
    }

    /// The container's name for a subcommand, else the name.
    /// The option that gates this command (Redis's protected commands), and
    /// the name its refusal gives.
    pub fn protected_by(&self) -> Option<&'static str> {
        if self.has(PROTECTED) {
            Some("enable-debug-command")
        } else if self.has(PROTECTED_MODULE) {
            Some("enable-module-command")
        } else {
            None
        }
    }

    pub fn base_name(&self) -> &'static str {
        self.name.split('|').next().unwrap_or(self.name)
    }

    /// Position in [`COMMANDS`] (per-command statistics are kept by it);
    /// None for an entry of another table.
    pub fn index(&self) -> Option<usize> {
        let offset = (self as *const CommandSpec as usize).wrapping_sub(COMMANDS.as_ptr() as usize);
        let at = offset / std::mem::size_of::<CommandSpec>();
        (at < COMMANDS.len()).then_some(at)
    }
}

macro_rules! cmd {
    ($name:literal, $arity:expr, $flags:expr, $keys:expr, $group:literal, $since:literal, $summary:literal, $h:path $(; $($field:ident : $val:expr),* $(,)?)?) => {
        CommandSpec {
            name: $name,
            arity: $arity,
            flags: $flags,
            first_key: $keys.0,
            last_key: $keys.1,
            step: $keys.2,
            group: $group,
            since: $since,
            summary: $summary,
            handler: $h,
            $($($field: $val,)*)?
            ..CommandSpec::BASE
        }
    };
}

const NOKEYS: (i32, i32, i32) = (0, 0, 0);
const KEY1: (i32, i32, i32) = (1, 1, 1);
const ALLKEYS: (i32, i32, i32) = (1, -1, 1);

#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    cmd!("get", 2, READONLY | FAST, KEY1, "string", "1.0.0", "Get the value of a key", strings::get;
        acl: acl::STRING,
        complexity: "O(1)",
        args: "key:key"),
    cmd!("set", -3, WRITE | DENYOOM, KEY1, "string", "1.0.0", "Set the string value of a key", strings::set;
        getkeys: Some(strings::set_keys),
        props: props::LOGGED_VALUES,
        acl: acl::STRING,
        complexity: "O(1)",
        keys: "RW,access,update,variable_flags index:1 range:0:1:0 | RW and ACCESS due to the optional `GET` argument",
        args: "key:key value:string condition:oneof?^2.6.12(nx:NX xx:XX) get:GET?^6.2.0 expiration:oneof?(seconds:integer=EX^2.6.12 milliseconds:integer=PX^2.6.12 unix-time-seconds:unix-time=EXAT^6.2.0 unix-time-milliseconds:unix-time=PXAT^6.2.0 keepttl:KEEPTTL^6.0.0)",
        history: &[("2.6.12", "Added the `EX`, `PX`, `NX` and `XX` options."), ("6.0.0", "Added the `KEEPTTL` option."), ("6.2.0", "Added the `GET`, `EXAT` and `PXAT` option."), ("7.0.0", "Allowed the `NX` and `GET` options to be used together.")]),
    cmd!("setnx", 3, WRITE | DENYOOM | FAST, KEY1, "string", "1.0.0", "Set the value of a key, only if the key does not exist", strings::setnx;
        acl: acl::STRING,
        complexity: "O(1)",
        keys: "OW,insert index:1 range:0:1:0",
        args: "key:key value:string"),
    cmd!("setex", 4, WRITE | DENYOOM, KEY1, "string", "2.0.0", "Set the value and expiration of a key", strings::setex;
        acl: acl::STRING,
        complexity: "O(1)",
        keys: "OW,update index:1 range:0:1:0",
        args: "key:key seconds:integer value:string"),
    cmd!("psetex", 4, WRITE | DENYOOM, KEY1, "string", "2.6.0", "Set the value and expiration in milliseconds of a key", strings::psetex;
        acl: acl::STRING,
        complexity: "O(1)",
        keys: "OW,update index:1 range:0:1:0",
        args: "key:key milliseconds:integer value:string"),
    cmd!("mget", -2, READONLY | FAST, ALLKEYS, "string", "1.0.0", "Get the values of all the given keys", strings::mget;
        acl: acl::STRING,
        complexity: "O(N) where N is the number of keys to retrieve.",
        args: "key:key*",
        tips: &["request_policy:multi_shard"]),
    cmd!("mset", -3, WRITE | DENYOOM, (1, -1, 2), "string", "1.0.1", "Set multiple keys to multiple values", strings::mset;
        props: props::LOGGED_VALUES,
        acl: acl::STRING,
        complexity: "O(N) where N is the number of keys to set.",
        keys: "OW,update index:1 range:-1:2:0",
        args: "key_value:block*(key:key value:string)",
        tips: &["request_policy:multi_shard", "response_policy:all_succeeded"]),
    cmd!("msetnx", -3, WRITE | DENYOOM, (1, -1, 2), "string", "1.0.1", "Set multiple keys to multiple values, only if none of the keys exist", strings::msetnx;
        acl: acl::STRING,
        complexity: "O(N) where N is the number of keys to set.",
        keys: "OW,insert index:1 range:-1:2:0",
        args: "key_value:block*(key:key value:string)",
        tips: &["request_policy:multi_shard", "response_policy:agg_min"]),
    cmd!("getset", 3, WRITE | DENYOOM | FAST, KEY1, "string", "1.0.0", "Set the string value of a key and return its old value", strings::getset;
        acl: acl::STRING,
        complexity: "O(1)",
        args: "key:key value:string",
        doc_flags: doc::DEPRECATED,
        deprecated_since: "6.2.0",
        replaced_by: "`SET` with the `!GET` argument"),
    cmd!("getdel", 2, WRITE | FAST, KEY1, "string", "6.2.0", "Get the value of a key and delete the key", strings::getdel;
        acl: acl::STRING,
        complexity: "O(1)",
        keys: "RW,access,delete index:1 range:0:1:0",
        args: "key:key"),
    cmd!("getex", -2, WRITE | FAST, KEY1, "string", "6.2.0", "Get the value of a key and optionally set its expiration", strings::getex;
        acl: acl::STRING,
        complexity: "O(1)",
        keys: "RW,access,update index:1 range:0:1:0 | RW and UPDATE because it changes the TTL",
        args: "key:key expiration:oneof?(seconds:integer=EX milliseconds:integer=PX unix-time-seconds:unix-time=EXAT unix-time-milliseconds:unix-time=PXAT persist:PERSIST)"),
    cmd!("append", 3, WRITE | DENYOOM | FAST, KEY1, "string", "2.0.0", "Append a value to a key", strings::append;
        acl: acl::STRING,
        complexity: "O(1). The amortized time complexity is O(1) assuming the appended value is small and the already present value is of any size, since the dynamic string library used by Redis will double the free space available on every reallocation.",
        keys: "RW,insert index:1 range:0:1:0",
        args: "key:key value:string"),
    cmd!("strlen", 2, READONLY | FAST, KEY1, "string", "2.2.0", "Get the length of the value stored in a key", strings::strlen;
        acl: acl::STRING,
        complexity: "O(1)",
        keys: "RO index:1 range:0:1:0",
        args: "key:key"),
    cmd!("getrange", 4, READONLY, KEY1, "string", "2.4.0", "Get a substring of the string stored at a key", strings::getrange;
        acl: acl::STRING,
        complexity: "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.",
        args: "key:key start:integer end:integer"),
    cmd!("substr", 4, READONLY, KEY1, "string", "1.0.0", "Get a substring of the string stored at a key", strings::getrange;
        acl: acl::STRING,
        complexity: "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.",
        args: "key:key start:integer end:integer",
        doc_flags: doc::DEPRECATED,
        deprecated_since: "2.0.0",
        replaced_by: "`GETRANGE`"),
    cmd!("setrange", 4, WRITE | DENYOOM, KEY1, "string", "2.2.0", "Overwrite part of a string at key starting at the specified offset", strings::setrange;
        acl: acl::STRING,
        complexity: "O(1), not counting the time taken to copy the new string in place. Usually, this string is very small so the amortized complexity is O(1). Otherwise, complexity is O(M) with M being the length of the value argument.",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key offset:integer value:string"),
    cmd!("incr", 2, WRITE | DENYOOM | FAST, KEY1, "string", "1.0.0", "Increment the integer value of a key by one", strings::incr;
        acl: acl::STRING,
        complexity: "O(1)",
        args: "key:key"),
    cmd!("decr", 2, WRITE | DENYOOM | FAST, KEY1, "string", "1.0.0", "Decrement the integer value of a key by one", strings::decr;
        acl: acl::STRING,
        complexity: "O(1)",
        args: "key:key"),
    cmd!("incrby", 3, WRITE | DENYOOM | FAST, KEY1, "string", "1.0.0", "Increment the integer value of a key by the given amount", strings::incrby;
        acl: acl::STRING,
        complexity: "O(1)",
        args: "key:key increment:integer"),
    cmd!("decrby", 3, WRITE | DENYOOM | FAST, KEY1, "string", "1.0.0", "Decrement the integer value of a key by the given number", strings::decrby;
        acl: acl::STRING,
        complexity: "O(1)",
        args: "key:key decrement:integer"),
    cmd!("incrbyfloat", 3, WRITE | DENYOOM | FAST, KEY1, "string", "2.6.0", "Increment the float value of a key by the given amount", strings::incrbyfloat;
        acl: acl::STRING,
        complexity: "O(1)",
        args: "key:key increment:double"),
    cmd!("lcs", -3, READONLY, (1, 2, 1), "string", "7.0.0", "Find longest common substring", lcs::lcs;
        acl: acl::STRING,
        complexity: "O(N*M) where N and M are the lengths of s1 and s2, respectively",
        args: "key1:key key2:key len:LEN? idx:IDX? len:integer=MINMATCHLEN? withmatchlen:WITHMATCHLEN?"),
    // bitmaps
    cmd!("setbit", 4, W, KEY1, "bitmap", "2.2.0", "Sets or clears the bit at offset in the string value stored at key", bitops::setbit;
        acl: acl::BITMAP,
        complexity: "O(1)",
        args: "key:key offset:integer value:integer"),
    cmd!("getbit", 3, READONLY | FAST, KEY1, "bitmap", "2.2.0", "Returns the bit value at offset in the string value stored at key", bitops::getbit;
        acl: acl::BITMAP,
        complexity: "O(1)",
        args: "key:key offset:integer"),
    cmd!("bitcount", -2, READONLY, KEY1, "bitmap", "2.6.0", "Count set bits in a string", bitops::bitcount;
        acl: acl::BITMAP,
        complexity: "O(N)",
        args: "key:key index:block?(start:integer end:integer index_unit:oneof?^7.0.0(byte:BYTE bit:BIT))",
        history: &[("7.0.0", "Added the `BYTE|BIT` option.")]),
    cmd!("bitpos", -3, READONLY, KEY1, "bitmap", "2.8.7", "Find first bit set or clear in a string", bitops::bitpos;
        acl: acl::BITMAP,
        complexity: "O(N)",
        args: "key:key bit:integer index:block?(start:integer end_index:block?(end:integer index_unit:oneof?^7.0.0(byte:BYTE bit:BIT)))",
        history: &[("7.0.0", "Added the `BYTE|BIT` option.")]),
    cmd!("bitop", -4, W, (2, -1, 1), "bitmap", "2.6.0", "Perform bitwise operations between strings", bitops::bitop;
        acl: acl::BITMAP,
        complexity: "O(N)",
        keys: "OW,update index:2 range:0:1:0; RO,access index:3 range:-1:1:0",
        args: "operation:string destkey:key key:key#1*"),
    cmd!("bitfield", -2, W, KEY1, "bitmap", "3.2.0", "Perform arbitrary bitfield integer operations on strings", bitfield::bitfield;
        getkeys: Some(bitfield::bitfield_keys),
        acl: acl::BITMAP,
        complexity: "O(1) for each subcommand specified",
        keys: "RW,access,update,variable_flags index:1 range:0:1:0 | This command allows both access and modification of the key",
        args: "key:key operation:oneof?*(encoding_offset:block=GET(encoding:string offset:integer) write:block(wrap_sat_fail:oneof=OVERFLOW?(wrap:WRAP sat:SAT fail:FAIL) write_operation:oneof(encoding_offset_value:block=SET(encoding:string offset:integer value:integer) encoding_offset_increment:block=INCRBY(encoding:string offset:integer increment:integer))))"),
    cmd!("bitfield_ro", -2, READONLY | FAST, KEY1, "bitmap", "6.0.0", "Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD", bitfield::bitfield_ro;
        acl: acl::BITMAP,
        complexity: "O(1) for each subcommand specified",
        args: "key:key encoding_offset:block=GET?*+(encoding:string offset:integer)"),
    cmd!("hset", -4, WRITE | DENYOOM | FAST, KEY1, "hash", "2.0.0", "Set the string value of a hash field", hash::hset;
        acl: acl::HASH,
        complexity: "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key field_value:block*(field:string value:string)",
        history: &[("4.0.0", "Accepts multiple `field` and `value` arguments.")]),
    cmd!("hsetnx", 4, WRITE | DENYOOM | FAST, KEY1, "hash", "2.0.0", "Set the value of a hash field, only if the field does not exist", hash::hsetnx;
        acl: acl::HASH,
        complexity: "O(1)",
        keys: "RW,insert index:1 range:0:1:0",
        args: "key:key field:string value:string"),
    cmd!("hget", 3, READONLY | FAST, KEY1, "hash", "2.0.0", "Get the value of a hash field", hash::hget;
        acl: acl::HASH,
        complexity: "O(1)",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key field:string"),
    cmd!("hmget", -3, READONLY | FAST, KEY1, "hash", "2.0.0", "Get the values of all the given hash fields", hash::hmget;
        acl: acl::HASH,
        complexity: "O(N) where N is the number of fields being requested.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key field:string*"),
    cmd!("hmset", -4, WRITE | DENYOOM | FAST, KEY1, "hash", "2.0.0", "Set multiple hash fields to multiple values", hash::hmset;
        acl: acl::HASH,
        complexity: "O(N) where N is the number of fields being set.",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key field_value:block*(field:string value:string)",
        doc_flags: doc::DEPRECATED,
        deprecated_since: "4.0.0",
        replaced_by: "`HSET` with multiple field-value pairs"),
    cmd!("hdel", -3, WRITE | FAST, KEY1, "hash", "2.0.0", "Delete one or more hash fields", hash::hdel;
        acl: acl::HASH,
        complexity: "O(N) where N is the number of fields to be removed.",
        keys: "RW,delete index:1 range:0:1:0",
        args: "key:key field:string*",
        history: &[("2.4.0", "Accepts multiple `field` arguments.")]),
    cmd!("hexists", 3, READONLY | FAST, KEY1, "hash", "2.0.0", "Determine if a hash field exists", hash::hexists;
        acl: acl::HASH,
        complexity: "O(1)",
        keys: "RO index:1 range:0:1:0",
        args: "key:key field:string"),
    cmd!("hlen", 2, READONLY | FAST, KEY1, "hash", "2.0.0", "Get the number of fields in a hash", hash::hlen;
        acl: acl::HASH,
        complexity: "O(1)",
        keys: "RO index:1 range:0:1:0",
        args: "key:key"),
    cmd!("hstrlen", 3, READONLY | FAST, KEY1, "hash", "3.2.0", "Get the length of the value of a hash field", hash::hstrlen;
        acl: acl::HASH,
        complexity: "O(1)",
        keys: "RO index:1 range:0:1:0",
        args: "key:key field:string"),
    cmd!("hkeys", 2, READONLY, KEY1, "hash", "2.0.0", "Get all the fields in a hash", hash::hkeys;
        acl: acl::HASH,
        complexity: "O(N) where N is the size of the hash.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key",
        tips: &["nondeterministic_output_order"]),
    cmd!("hvals", 2, READONLY, KEY1, "hash", "2.0.0", "Get all the values in a hash", hash::hvals;
        acl: acl::HASH,
        complexity: "O(N) where N is the size of the hash.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key",
        tips: &["nondeterministic_output_order"]),
    cmd!("hgetall", 2, READONLY, KEY1, "hash", "2.0.0", "Get all the fields and values in a hash", hash::hgetall;
        acl: acl::HASH,
        complexity: "O(N) where N is the size of the hash.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key",
        tips: &["nondeterministic_output_order"]),
    cmd!("hincrby", 4, WRITE | DENYOOM | FAST, KEY1, "hash", "2.0.0", "Increment the integer value of a hash field by the given number", hash::hincrby;
        acl: acl::HASH,
        complexity: "O(1)",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key field:string increment:integer"),
    cmd!("hincrbyfloat", 4, WRITE | DENYOOM | FAST, KEY1, "hash", "2.6.0", "Increment the float value of a hash field by the given amount", hash::hincrbyfloat;
        acl: acl::HASH,
        complexity: "O(1)",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key field:string increment:double"),
    cmd!("hrandfield", -2, READONLY, KEY1, "hash", "6.2.0", "Get one or multiple random fields from a hash", hash::hrandfield;
        acl: acl::HASH,
        complexity: "O(N) where N is the number of fields returned",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key options:block?(count:integer withvalues:WITHVALUES?)",
        tips: &["nondeterministic_output"]),
    cmd!("hscan", -3, READONLY, KEY1, "hash", "2.8.0", "Incrementally iterate hash fields and associated values", hash::hscan;
        acl: acl::HASH,
        complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key cursor:integer pattern:pattern=MATCH? count:integer=COUNT?",
        tips: &["nondeterministic_output"]),
    cmd!("sadd", -3, WRITE | DENYOOM | FAST, KEY1, "set", "1.0.0", "Add one or more members to a set", set::sadd;
        acl: acl::SET,
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        keys: "RW,insert index:1 range:0:1:0",
        args: "key:key member:string*",
        history: &[("2.4.0", "Accepts multiple `member` arguments.")]),
    cmd!("srem", -3, WRITE | FAST, KEY1, "set", "1.0.0", "Remove one or more members from a set", set::srem;
        acl: acl::SET,
        complexity: "O(N) where N is the number of members to be removed.",
        keys: "RW,delete index:1 range:0:1:0",
        args: "key:key member:string*",
        history: &[("2.4.0", "Accepts multiple `member` arguments.")]),
    cmd!("sismember", 3, READONLY | FAST, KEY1, "set", "1.0.0", "Determine if a given value is a member of a set", set::sismember;
        acl: acl::SET,
        complexity: "O(1)",
        keys: "RO index:1 range:0:1:0",
        args: "key:key member:string"),
    cmd!("smismember", -3, READONLY | FAST, KEY1, "set", "6.2.0", "Returns the membership associated with the given elements for a set", set::smismember;
        acl: acl::SET,
        complexity: "O(N) where N is the number of elements being checked for membership",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key member:string*"),
    cmd!("smembers", 2, READONLY, KEY1, "set", "1.0.0", "Get all the members in a set", set::smembers;
        acl: acl::SET,
        complexity: "O(N) where N is the set cardinality.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key",
        tips: &["nondeterministic_output_order"]),
    cmd!("scard", 2, READONLY | FAST, KEY1, "set", "1.0.0", "Get the number of members in a set", set::scard;
        acl: acl::SET,
        complexity: "O(1)",
        keys: "RO index:1 range:0:1:0",
        args: "key:key"),
    cmd!("spop", -2, WRITE | FAST, KEY1, "set", "1.0.0", "Remove and return one or multiple random members from a set", set::spop;
        acl: acl::SET,
        complexity: "Without the count argument O(1), otherwise O(N) where N is the value of the passed count.",
        keys: "RW,access,delete index:1 range:0:1:0",
        args: "key:key count:integer?^3.2.0",
        history: &[("3.2.0", "Added the `count` argument.")],
        tips: &["nondeterministic_output"]),
    cmd!("srandmember", -2, READONLY, KEY1, "set", "1.0.0", "Get one or multiple random members from a set", set::srandmember;
        acl: acl::SET,
        complexity: "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key count:integer?^2.6.0",
        history: &[("2.6.0", "Added the optional `count` argument.")],
        tips: &["nondeterministic_output"]),
    cmd!("smove", 4, WRITE | FAST, (1, 2, 1), "set", "1.0.0", "Move a member from one set to another", set::smove;
        acl: acl::SET,
        complexity: "O(1)",
        keys: "RW,access,delete index:1 range:0:1:0; RW,insert index:2 range:0:1:0",
        args: "source:key destination:key#1 member:string"),
    cmd!("sinter", -2, READONLY, ALLKEYS, "set", "1.0.0", "Intersect multiple sets", set::sinter;
        acl: acl::SET,
        complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
        keys: "RO,access index:1 range:-1:1:0",
        args: "key:key*",
        tips: &["nondeterministic_output_order"]),
    cmd!("sintercard", -3, READONLY, NOKEYS, "set", "7.0.0", "Intersect multiple sets and return the cardinality of the result", set::sintercard;
        acl: acl::SET,
        complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
        keys: "RO,access index:1 keynum:0:1:1",
        args: "numkeys:integer key:key* limit:integer=LIMIT?"),
    cmd!("sinterstore", -3, WRITE | DENYOOM, ALLKEYS, "set", "1.0.0", "Intersect multiple sets and store the resulting set in a key", set::sinterstore;
        acl: acl::SET,
        complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
        keys: "RW,update index:1 range:0:1:0; RO,access index:2 range:-1:1:0",
        args: "destination:key key:key#1*"),
    cmd!("sunion", -2, READONLY, ALLKEYS, "set", "1.0.0", "Add multiple sets", set::sunion;
        acl: acl::SET,
        complexity: "O(N) where N is the total number of elements in all given sets.",
        keys: "RO,access index:1 range:-1:1:0",
        args: "key:key*",
        tips: &["nondeterministic_output_order"]),
    cmd!("sunionstore", -3, WRITE | DENYOOM, ALLKEYS, "set", "1.0.0", "Add multiple sets and store the resulting set in a key", set::sunionstore;
        acl: acl::SET,
        complexity: "O(N) where N is the total number of elements in all given sets.",
        keys: "OW,update index:1 range:0:1:0; RO,access index:2 range:-1:1:0",
        args: "destination:key key:key#1*"),
    cmd!("sdiff", -2, READONLY, ALLKEYS, "set", "1.0.0", "Subtract multiple sets", set::sdiff;
        acl: acl::SET,
        complexity: "O(N) where N is the total number of elements in all given sets.",
        keys: "RO,access index:1 range:-1:1:0",
        args: "key:key*",
        tips: &["nondeterministic_output_order"]),
    cmd!("sdiffstore", -3, WRITE | DENYOOM, ALLKEYS, "set", "1.0.0", "Subtract multiple sets and store the resulting set in a key", set::sdiffstore;
        acl: acl::SET,
        complexity: "O(N) where N is the total number of elements in all given sets.",
        keys: "OW,update index:1 range:0:1:0; RO,access index:2 range:-1:1:0",
        args: "destination:key key:key#1*"),
    cmd!("sscan", -3, READONLY, KEY1, "set", "2.8.0", "Incrementally iterate Set elements", set::sscan;
        acl: acl::SET,
        complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key cursor:integer pattern:pattern=MATCH? count:integer=COUNT?",
        tips: &["nondeterministic_output"]),
    cmd!("lpush", -3, WRITE | DENYOOM | FAST, KEY1, "list", "1.0.0", "Prepend one or multiple elements to a list", list::lpush;
        acl: acl::LIST,
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        keys: "RW,insert index:1 range:0:1:0",
        args: "key:key element:string*",
        history: &[("2.4.0", "Accepts multiple `element` arguments.")]),
    cmd!("rpush", -3, WRITE | DENYOOM | FAST, KEY1, "list", "1.0.0", "Append one or multiple elements to a list", list::rpush;
        acl: acl::LIST,
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        keys: "RW,insert index:1 range:0:1:0",
        args: "key:key element:string*",
        history: &[("2.4.0", "Accepts multiple `element` arguments.")]),
    cmd!("lpushx", -3, WRITE | DENYOOM | FAST, KEY1, "list", "2.2.0", "Prepend an element to a list, only if the list exists", list::lpushx;
        acl: acl::LIST,
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        keys: "RW,insert index:1 range:0:1:0",
        args: "key:key element:string*",
        history: &[("4.0.0", "Accepts multiple `element` arguments.")]),
    cmd!("rpushx", -3, WRITE | DENYOOM | FAST, KEY1, "list", "2.2.0", "Append an element to a list, only if the list exists", list::rpushx;
        acl: acl::LIST,
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        keys: "RW,insert index:1 range:0:1:0",
        args: "key:key element:string*",
        history: &[("4.0.0", "Accepts multiple `element` arguments.")]),
    cmd!("lpop", -2, WRITE | FAST, KEY1, "list", "1.0.0", "Remove and get the first elements in a list", list::lpop;
        acl: acl::LIST,
        complexity: "O(N) where N is the number of elements returned",
        keys: "RW,access,delete index:1 range:0:1:0",
        args: "key:key count:integer?^6.2.0",
        history: &[("6.2.0", "Added the `count` argument.")]),
    cmd!("rpop", -2, WRITE | FAST, KEY1, "list", "1.0.0", "Remove and get the last elements in a list", list::rpop;
        acl: acl::LIST,
        complexity: "O(N) where N is the number of elements returned",
        keys: "RW,access,delete index:1 range:0:1:0",
        args: "key:key count:integer?^6.2.0",
        history: &[("6.2.0", "Added the `count` argument.")]),
    cmd!("llen", 2, READONLY | FAST, KEY1, "list", "1.0.0", "Get the length of a list", list::llen;
        acl: acl::LIST,
        complexity: "O(1)",
        keys: "RO index:1 range:0:1:0",
        args: "key:key"),
    cmd!("lindex", 3, READONLY, KEY1, "list", "1.0.0", "Get an element from a list by its index", list::lindex;
        acl: acl::LIST,
        complexity: "O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1).",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key index:integer"),
    cmd!("lset", 4, WRITE | DENYOOM, KEY1, "list", "1.0.0", "Set the value of an element in a list by its index", list::lset;
        acl: acl::LIST,
        complexity: "O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1).",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key index:integer element:string"),
    cmd!("lrange", 4, READONLY, KEY1, "list", "1.0.0", "Get a range of elements from a list", list::lrange;
        acl: acl::LIST,
        complexity: "O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key start:integer stop:integer"),
    cmd!("ltrim", 4, WRITE, KEY1, "list", "1.0.0", "Trim a list to the specified range", list::ltrim;
        acl: acl::LIST,
        complexity: "O(N) where N is the number of elements to be removed by the operation.",
        keys: "RW,delete index:1 range:0:1:0",
        args: "key:key start:integer stop:integer"),
    cmd!("lrem", 4, WRITE, KEY1, "list", "1.0.0", "Remove elements from a list", list::lrem;
        acl: acl::LIST,
        complexity: "O(N+M) where N is the length of the list and M is the number of elements removed.",
        keys: "RW,delete index:1 range:0:1:0",
        args: "key:key count:integer element:string"),
    cmd!("linsert", 5, WRITE | DENYOOM, KEY1, "list", "2.2.0", "Insert an element before or after another element in a list", list::linsert;
        acl: acl::LIST,
        complexity: "O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N).",
        keys: "RW,insert index:1 range:0:1:0",
        args: "key:key where:oneof(before:BEFORE after:AFTER) pivot:string element:string"),
    cmd!("lpos", -3, READONLY, KEY1, "list", "6.0.6", "Return the index of matching elements on a list", list::lpos;
        acl: acl::LIST,
        complexity: "O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key element:string rank:integer=RANK? num-matches:integer=COUNT? len:integer=MAXLEN?"),
    cmd!("rpoplpush", 3, WRITE | DENYOOM, (1, 2, 1), "list", "1.2.0", "Remove the last element in a list, prepend it to another list and return it", list::rpoplpush;
        acl: acl::LIST,
        complexity: "O(1)",
        keys: "RW,access,delete index:1 range:0:1:0; RW,insert index:2 range:0:1:0",
        args: "source:key destination:key#1",
        doc_flags: doc::DEPRECATED,
        deprecated_since: "6.2.0",
        replaced_by: "`LMOVE` with the `RIGHT` and `LEFT` arguments"),
    cmd!("lmove", 5, WRITE | DENYOOM, (1, 2, 1), "list", "6.2.0", "Pop an element from a list, push it to another list and return it", list::lmove;
        acl: acl::LIST,
        complexity: "O(1)",
        keys: "RW,access,delete index:1 range:0:1:0; RW,insert index:2 range:0:1:0",
        args: "source:key destination:key#1 wherefrom:oneof(left:LEFT right:RIGHT) whereto:oneof(left:LEFT right:RIGHT)"),
    cmd!("blpop", -3, WRITE | NOSCRIPT | BLOCKING, (1, -2, 1), "list", "2.0.0", "Remove and get the first element in a list, or block until one is available", bpop::blpop;
        acl: acl::LIST,
        complexity: "O(N) where N is the number of provided keys.",
        keys: "RW,access,delete index:1 range:-2:1:0",
        args: "key:key* timeout:double",
        history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")]),
    cmd!("brpop", -3, WRITE | NOSCRIPT | BLOCKING, (1, -2, 1), "list", "2.0.0", "Remove and get the last element in a list, or block until one is available", bpop::brpop;
        acl: acl::LIST,
        complexity: "O(N) where N is the number of provided keys.",
        keys: "RW,access,delete index:1 range:-2:1:0",
        args: "key:key* timeout:double",
        history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")]),
    cmd!("brpoplpush", 4, WRITE | DENYOOM | NOSCRIPT | BLOCKING, (1, 2, 1), "list", "2.2.0", "Pop an element from a list, push it to another list and return it; or block until one is available", bpop::brpoplpush;
        acl: acl::LIST,
        complexity: "O(1)",
        keys: "RW,access,delete index:1 range:0:1:0; RW,insert index:2 range:0:1:0",
        args: "source:key destination:key#1 timeout:double",
        history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")],
        doc_flags: doc::DEPRECATED,
        deprecated_since: "6.2.0",
        replaced_by: "`BLMOVE` with the `RIGHT` and `LEFT` arguments"),
    cmd!("blmove", 6, WRITE | DENYOOM | NOSCRIPT | BLOCKING, (1, 2, 1), "list", "6.2.0", "Pop an element from a list, push it to another list and return it; or block until one is available", bpop::blmove;
        acl: acl::LIST,
        complexity: "O(1)",
        keys: "RW,access,delete index:1 range:0:1:0; RW,insert index:2 range:0:1:0",
        args: "source:key destination:key#1 wherefrom:oneof(left:LEFT right:RIGHT) whereto:oneof(left:LEFT right:RIGHT) timeout:double"),
    cmd!("blmpop", -5, WRITE | BLOCKING, NOKEYS, "list", "7.0.0", "Pop elements from a list, or block until one is available", bpop::blmpop;
        acl: acl::LIST,
        complexity: "O(N+M) where N is the number of provided keys and M is the number of elements returned.",
        keys: "RW,access,delete index:2 keynum:0:1:1",
        args: "timeout:double numkeys:integer key:key* where:oneof(left:LEFT right:RIGHT) count:integer=COUNT?"),
    cmd!("bzpopmin", -3, WRITE | NOSCRIPT | BLOCKING | FAST, (1, -2, 1), "sorted-set", "5.0.0", "Remove and return the member with the lowest score from one or more sorted sets, or block until one is available", bpop::bzpopmin;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)) with N being the number of elements in the sorted set.",
        keys: "RW,access,delete index:1 range:-2:1:0",
        args: "key:key* timeout:double",
        history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")]),
    cmd!("bzpopmax", -3, WRITE | NOSCRIPT | BLOCKING | FAST, (1, -2, 1), "sorted-set", "5.0.0", "Remove and return the member with the highest score from one or more sorted sets, or block until one is available", bpop::bzpopmax;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)) with N being the number of elements in the sorted set.",
        keys: "RW,access,delete index:1 range:-2:1:0",
        args: "key:key* timeout:double",
        history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")]),
    cmd!("bzmpop", -5, WRITE | BLOCKING, NOKEYS, "sorted-set", "7.0.0", "Remove and return members with scores in a sorted set or block until one is available", bpop::bzmpop;
        acl: acl::SORTEDSET,
        complexity: "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
        keys: "RW,access,delete index:2 keynum:0:1:1",
        args: "timeout:double numkeys:integer key:key* where:oneof(min:MIN max:MAX) count:integer=COUNT?"),
    cmd!("lmpop", -4, WRITE, NOKEYS, "list", "7.0.0", "Pop elements from a list", list::lmpop;
        acl: acl::LIST,
        complexity: "O(N+M) where N is the number of provided keys and M is the number of elements returned.",
        keys: "RW,access,delete index:1 keynum:0:1:1",
        args: "numkeys:integer key:key* where:oneof(left:LEFT right:RIGHT) count:integer=COUNT?"),
    cmd!("pfadd", -2, WRITE | DENYOOM | FAST, KEY1, "hyperloglog", "2.8.9", "Adds the specified elements to the specified HyperLogLog.", hyperloglog::pfadd;
        acl: acl::HYPERLOGLOG,
        complexity: "O(1) to add every element.",
        keys: "RW,insert index:1 range:0:1:0",
        args: "key:key element:string?*"),
    cmd!("pfcount", -2, READONLY | MAY_REPLICATE, ALLKEYS, "hyperloglog", "2.8.9", "Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s).", hyperloglog::pfcount;
        acl: acl::HYPERLOGLOG,
        complexity: "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.",
        keys: "RW,access index:1 range:-1:1:0 | RW because it may change the internal representation of the key, and propagate to replicas",
        args: "key:key*"),
    cmd!("pfmerge", -2, WRITE | DENYOOM, ALLKEYS, "hyperloglog", "2.8.9", "Merge N different HyperLogLogs into a single one.", hyperloglog::pfmerge;
        acl: acl::HYPERLOGLOG,
        complexity: "O(N) to merge N HyperLogLogs, but with high constant times.",
        keys: "RW,access,insert index:1 range:0:1:0; RO,access index:2 range:-1:1:0",
        args: "destkey:key sourcekey:key#1*"),
    // Gated by enable-debug-command (PROTECTED) in BlinkDB; Redis 7.0 runs it
    // for anyone.
    cmd!("pfdebug", 3, WRITE | DENYOOM | ADMIN | PROTECTED, (2, 2, 1), "hyperloglog", "2.8.9", "Internal commands for debugging HyperLogLog values", hyperloglog::pfdebug;
        acl: acl::HYPERLOGLOG,
        complexity: "N/A",
        keys: "RW,access index:2 range:0:1:0",
        args: "subcommand:string key:key",
        doc_flags: doc::SYSCMD),
    cmd!("pfselftest", 1, ADMIN, NOKEYS, "hyperloglog", "2.8.9", "An internal command for testing HyperLogLog values", hyperloglog::pfselftest;
        acl: acl::HYPERLOGLOG,
        complexity: "N/A",
        doc_flags: doc::SYSCMD),
    cmd!("zadd", -4, WRITE | DENYOOM | FAST, KEY1, "sorted-set", "1.2.0", "Add one or more members to a sorted set, or update its score if it already exists", zset::zadd;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key condition:oneof?^3.0.2(nx:NX xx:XX) comparison:oneof?^6.2.0(gt:GT lt:LT) change:CH?^3.0.2 increment:INCR?^3.0.2 score_member:block*(score:double member:string)",
        history: &[("2.4.0", "Accepts multiple elements."), ("3.0.2", "Added the `XX`, `NX`, `CH` and `INCR` options."), ("6.2.0", "Added the `GT` and `LT` options.")]),
    cmd!("zincrby", 4, WRITE | DENYOOM | FAST, KEY1, "sorted-set", "1.2.0", "Increment the score of a member in a sorted set", zset::zincrby;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)) where N is the number of elements in the sorted set.",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key increment:integer member:string"),
    cmd!("zrem", -3, WRITE | FAST, KEY1, "sorted-set", "1.2.0", "Remove one or more members from a sorted set", zset::zrem;
        acl: acl::SORTEDSET,
        complexity: "O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed.",
        keys: "RW,delete index:1 range:0:1:0",
        args: "key:key member:string*",
        history: &[("2.4.0", "Accepts multiple elements.")]),
    cmd!("zcard", 2, READONLY | FAST, KEY1, "sorted-set", "1.2.0", "Get the number of members in a sorted set", zset::zcard;
        acl: acl::SORTEDSET,
        complexity: "O(1)",
        keys: "RO index:1 range:0:1:0",
        args: "key:key"),
    cmd!("zscore", 3, READONLY | FAST, KEY1, "sorted-set", "1.2.0", "Get the score associated with the given member in a sorted set", zset::zscore;
        acl: acl::SORTEDSET,
        complexity: "O(1)",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key member:string"),
    cmd!("zmscore", -3, READONLY | FAST, KEY1, "sorted-set", "6.2.0", "Get the score associated with the given members in a sorted set", zset::zmscore;
        acl: acl::SORTEDSET,
        complexity: "O(N) where N is the number of members being requested.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key member:string*"),
    cmd!("zrank", 3, READONLY | FAST, KEY1, "sorted-set", "2.0.0", "Determine the index of a member in a sorted set", zset::zrank;
        acl: acl::SORTEDSET,
        complexity: "O(log(N))",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key member:string"),
    cmd!("zrevrank", 3, READONLY | FAST, KEY1, "sorted-set", "2.0.0", "Determine the index of a member in a sorted set, with scores ordered from high to low", zset::zrevrank;
        acl: acl::SORTEDSET,
        complexity: "O(log(N))",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key member:string"),
    cmd!("zpopmin", -2, WRITE | FAST, KEY1, "sorted-set", "5.0.0", "Remove and return members with the lowest scores in a sorted set", zset::zpopmin;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.",
        keys: "RW,access,delete index:1 range:0:1:0",
        args: "key:key count:integer?"),
    cmd!("zpopmax", -2, WRITE | FAST, KEY1, "sorted-set", "5.0.0", "Remove and return members with the highest scores in a sorted set", zset::zpopmax;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.",
        keys: "RW,access,delete index:1 range:0:1:0",
        args: "key:key count:integer?"),
    cmd!("zmpop", -4, WRITE, NOKEYS, "sorted-set", "7.0.0", "Remove and return members with scores in a sorted set", zset::zmpop;
        acl: acl::SORTEDSET,
        complexity: "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
        keys: "RW,access,delete index:1 keynum:0:1:1",
        args: "numkeys:integer key:key* where:oneof(min:MIN max:MAX) count:integer=COUNT?"),
    cmd!("zrandmember", -2, READONLY, KEY1, "sorted-set", "6.2.0", "Get one or multiple random elements from a sorted set", zset::zrandmember;
        acl: acl::SORTEDSET,
        complexity: "O(N) where N is the number of elements returned",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key options:block?(count:integer withscores:WITHSCORES?)",
        tips: &["nondeterministic_output"]),
    cmd!("zscan", -3, READONLY, KEY1, "sorted-set", "2.8.0", "Incrementally iterate sorted sets elements and associated scores", zset::zscan;
        acl: acl::SORTEDSET,
        complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key cursor:integer pattern:pattern=MATCH? count:integer=COUNT?",
        tips: &["nondeterministic_output"]),
    cmd!("zcount", 4, READONLY | FAST, KEY1, "sorted-set", "2.0.0", "Count the members in a sorted set with scores within the given values", zrange::zcount;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)) with N being the number of elements in the sorted set.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key min:double max:double"),
    cmd!("zlexcount", 4, READONLY | FAST, KEY1, "sorted-set", "2.8.9", "Count the number of members in a sorted set between a given lexicographical range", zrange::zlexcount;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)) with N being the number of elements in the sorted set.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key min:string max:string"),
    cmd!("zrange", -4, READONLY, KEY1, "sorted-set", "1.2.0", "Return a range of members in a sorted set", zrange::zrange;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key start:string stop:string sortby:oneof?^6.2.0(byscore:BYSCORE bylex:BYLEX) rev:REV?^6.2.0 offset_count:block=LIMIT?^6.2.0(offset:integer count:integer) withscores:WITHSCORES?",
        history: &[("6.2.0", "Added the `REV`, `BYSCORE`, `BYLEX` and `LIMIT` options.")]),
    cmd!("zrangestore", -5, WRITE | DENYOOM, (1, 2, 1), "sorted-set", "6.2.0", "Store a range of members from sorted set into another key", zrange::zrangestore;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements stored into the destination key.",
        keys: "OW,update index:1 range:0:1:0; RO,access index:2 range:0:1:0",
        args: "dst:key src:key#1 min:string max:string sortby:oneof?(byscore:BYSCORE bylex:BYLEX) rev:REV? offset_count:block=LIMIT?(offset:integer count:integer)"),
    cmd!("zrevrange", -4, READONLY, KEY1, "sorted-set", "1.2.0", "Return a range of members in a sorted set, by index, with scores ordered from high to low", zrange::zrevrange;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key start:integer stop:integer withscores:WITHSCORES?",
        doc_flags: doc::DEPRECATED,
        deprecated_since: "6.2.0",
        replaced_by: "`ZRANGE` with the `REV` argument"),
    cmd!("zrangebyscore", -4, READONLY, KEY1, "sorted-set", "1.0.5", "Return a range of members in a sorted set, by score", zrange::zrangebyscore;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key min:double max:double withscores:WITHSCORES?^2.0.0 offset_count:block=LIMIT?(offset:integer count:integer)",
        history: &[("2.0.0", "Added the `WITHSCORES` modifier.")],
        doc_flags: doc::DEPRECATED,
        deprecated_since: "6.2.0",
        replaced_by: "`ZRANGE` with the `BYSCORE` argument"),
    cmd!("zrevrangebyscore", -4, READONLY, KEY1, "sorted-set", "2.2.0", "Return a range of members in a sorted set, by score, with scores ordered from high to low", zrange::zrevrangebyscore;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key max:double min:double withscores:WITHSCORES? offset_count:block=LIMIT?(offset:integer count:integer)",
        history: &[("2.1.6", "`min` and `max` can be exclusive.")],
        doc_flags: doc::DEPRECATED,
        deprecated_since: "6.2.0",
        replaced_by: "`ZRANGE` with the `REV` and `BYSCORE` arguments"),
    cmd!("zrangebylex", -4, READONLY, KEY1, "sorted-set", "2.8.9", "Return a range of members in a sorted set, by lexicographical range", zrange::zrangebylex;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key min:string max:string offset_count:block=LIMIT?(offset:integer count:integer)",
        doc_flags: doc::DEPRECATED,
        deprecated_since: "6.2.0",
        replaced_by: "`ZRANGE` with the `BYLEX` argument"),
    cmd!("zrevrangebylex", -4, READONLY, KEY1, "sorted-set", "2.8.9", "Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings.", zrange::zrevrangebylex;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key max:string min:string offset_count:block=LIMIT?(offset:integer count:integer)",
        doc_flags: doc::DEPRECATED,
        deprecated_since: "6.2.0",
        replaced_by: "`ZRANGE` with the `REV` and `BYLEX` arguments"),
    cmd!("zremrangebyrank", 4, WRITE, KEY1, "sorted-set", "2.0.0", "Remove all members in a sorted set within the given indexes", zrange::zremrangebyrank;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
        keys: "RW,delete index:1 range:0:1:0",
        args: "key:key start:integer stop:integer"),
    cmd!("zremrangebyscore", 4, WRITE, KEY1, "sorted-set", "1.2.0", "Remove all members in a sorted set within the given scores", zrange::zremrangebyscore;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
        keys: "RW,delete index:1 range:0:1:0",
        args: "key:key min:double max:double"),
    cmd!("zremrangebylex", 4, WRITE, KEY1, "sorted-set", "2.8.9", "Remove all members in a sorted set between the given lexicographical range", zrange::zremrangebylex;
        acl: acl::SORTEDSET,
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
        keys: "RW,delete index:1 range:0:1:0",
        args: "key:key min:string max:string"),
    cmd!("zunion", -3, READONLY, NOKEYS, "sorted-set", "6.2.0", "Add multiple sorted sets", zsetops::zunion;
        acl: acl::SORTEDSET,
        complexity: "O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
        keys: "RO,access index:1 keynum:0:1:1",
        args: "numkeys:integer key:key* weight:integer=WEIGHTS?* aggregate:oneof=AGGREGATE?(sum:SUM min:MIN max:MAX) withscores:WITHSCORES?"),
    cmd!("zunionstore", -4, WRITE | DENYOOM, KEY1, "sorted-set", "2.0.0", "Add multiple sorted sets and store the resulting sorted set in a new key", zsetops::zunionstore;
        acl: acl::SORTEDSET,
        complexity: "O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
        keys: "OW,update index:1 range:0:1:0; RO,access index:2 keynum:0:1:1",
        args: "destination:key numkeys:integer key:key#1* weight:integer=WEIGHTS?* aggregate:oneof=AGGREGATE?(sum:SUM min:MIN max:MAX)"),
    cmd!("zinter", -3, READONLY, NOKEYS, "sorted-set", "6.2.0", "Intersect multiple sorted sets", zsetops::zinter;
        acl: acl::SORTEDSET,
        complexity: "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
        keys: "RO,access index:1 keynum:0:1:1",
        args: "numkeys:integer key:key* weight:integer=WEIGHTS?* aggregate:oneof=AGGREGATE?(sum:SUM min:MIN max:MAX) withscores:WITHSCORES?"),
    cmd!("zinterstore", -4, WRITE | DENYOOM, KEY1, "sorted-set", "2.0.0", "Intersect multiple sorted sets and store the resulting sorted set in a new key", zsetops::zinterstore;
        acl: acl::SORTEDSET,
        complexity: "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
        keys: "OW,update index:1 range:0:1:0; RO,access index:2 keynum:0:1:1",
        args: "destination:key numkeys:integer key:key#1* weight:integer=WEIGHTS?* aggregate:oneof=AGGREGATE?(sum:SUM min:MIN max:MAX)"),
    cmd!("zintercard", -3, READONLY, NOKEYS, "sorted-set", "7.0.0", "Intersect multiple sorted sets and return the cardinality of the result", zsetops::zintercard;
        acl: acl::SORTEDSET,
        complexity: "O(N*K) worst case with N being the smallest input sorted set, K being the number of input sorted sets.",
        keys: "RO,access index:1 keynum:0:1:1",
        args: "numkeys:integer key:key* limit:integer=LIMIT?"),
    cmd!("zdiff", -3, READONLY, NOKEYS, "sorted-set", "6.2.0", "Subtract multiple sorted sets", zsetops::zdiff;
        acl: acl::SORTEDSET,
        complexity: "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
        keys: "RO,access index:1 keynum:0:1:1",
        args: "numkeys:integer key:key* withscores:WITHSCORES?"),
    cmd!("zdiffstore", -4, WRITE | DENYOOM, KEY1, "sorted-set", "6.2.0", "Subtract multiple sorted sets and store the resulting sorted set in a new key", zsetops::zdiffstore;
        acl: acl::SORTEDSET,
        complexity: "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
        keys: "OW,update index:1 range:0:1:0; RO,access index:2 keynum:0:1:1",
        args: "destination:key numkeys:integer key:key#1*"),
    // streams
    cmd!("xadd", -5, WRITE | DENYOOM | FAST, KEY1, "stream", "5.0.0", "Appends a new entry to a stream", stream::xadd;
        acl: acl::STREAM,
        complexity: "O(1) when adding a new entry, O(N) when trimming where N being the number of entries evicted.",
        keys: "RW,update index:1 range:0:1:0 | UPDATE instead of INSERT because of the optional trimming feature",
        args: "key:key nomkstream:NOMKSTREAM?^6.2.0 trim:block?(strategy:oneof(maxlen:MAXLEN minid:MINID^6.2.0) operator:oneof?(equal:= approximately:~) threshold:string count:integer=LIMIT?^6.2.0) id_or_auto:oneof(auto_id:* id:string) field_value:block*(field:string value:string)",
        history: &[("6.2.0", "Added the `NOMKSTREAM` option, `MINID` trimming strategy and the `LIMIT` option."), ("7.0.0", "Added support for the `<ms>-*` explicit ID form.")],
        tips: &["nondeterministic_output"]),
    cmd!("xrange", -4, READONLY, KEY1, "stream", "5.0.0", "Return a range of elements in a stream, with IDs matching the specified IDs interval", stream::xrange;
        acl: acl::STREAM,
        complexity: "O(N) with N being the number of elements being returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key start:string end:string count:integer=COUNT?",
        history: &[("6.2.0", "Added exclusive ranges.")]),
    cmd!("xrevrange", -4, READONLY, KEY1, "stream", "5.0.0", "Return a range of elements in a stream, with IDs matching the specified IDs interval, in reverse order (from greater to smaller IDs) compared to XRANGE", stream::xrevrange;
        acl: acl::STREAM,
        complexity: "O(N) with N being the number of elements returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key end:string start:string count:integer=COUNT?",
        history: &[("6.2.0", "Added exclusive ranges.")]),
    cmd!("xlen", 2, READONLY | FAST, KEY1, "stream", "5.0.0", "Return the number of entries in a stream", stream::xlen;
        acl: acl::STREAM,
        complexity: "O(1)",
        keys: "RO index:1 range:0:1:0",
        args: "key:key"),
    cmd!("xdel", -3, WRITE | FAST, KEY1, "stream", "5.0.0", "Removes the specified entries from the stream. Returns the number of items actually deleted, that may be different from the number of IDs passed in case certain IDs do not exist.", stream::xdel;
        acl: acl::STREAM,
        complexity: "O(1) for each single item to delete in the stream, regardless of the stream size.",
        keys: "RW,delete index:1 range:0:1:0",
        args: "key:key id:string*"),
    cmd!("xtrim", -4, WRITE, KEY1, "stream", "5.0.0", "Trims the stream to (approximately if '~' is passed) a certain size", stream::xtrim;
        acl: acl::STREAM,
        complexity: "O(N), with N being the number of evicted entries. Constant times are very small however, since entries are organized in macro nodes containing multiple entries that can be released with a single deallocation.",
        keys: "RW,delete index:1 range:0:1:0",
        args: "key:key trim:block(strategy:oneof(maxlen:MAXLEN minid:MINID^6.2.0) operator:oneof?(equal:= approximately:~) threshold:string count:integer=LIMIT?^6.2.0)",
        history: &[("6.2.0", "Added the `MINID` trimming strategy and the `LIMIT` option.")],
        tips: &["nondeterministic_output"]),
    cmd!("xread", -4, READONLY | BLOCKING, NOKEYS, "stream", "5.0.0", "Return never seen elements in multiple streams, with IDs greater than the ones reported by the caller for each stream. Can block.", stream::xread;
        acl: acl::STREAM,
        complexity: "For each stream mentioned: O(N) with N being the number of elements being returned, it means that XREAD-ing with a fixed COUNT is O(1). Note that when the BLOCK option is used, XADD will pay O(M) time in order to serve the M clients blocked on the stream getting new data.",
        keys: "RO,access keyword:STREAMS:1 range:-1:1:2",
        args: "count:integer=COUNT? milliseconds:integer=BLOCK? streams:block=STREAMS(key:key* id:string*)"),
    cmd!("xsetid", -3, WRITE | DENYOOM | FAST, KEY1, "stream", "5.0.0", "An internal command for replicating stream values", stream::xsetid;
        acl: acl::STREAM,
        complexity: "O(1)",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key last-id:string entries_added:integer=ENTRIESADDED?^7.0.0 max_deleted_entry_id:string=MAXDELETEDID?^7.0.0",
        history: &[("7.0.0", "Added the `entries_added` and `max_deleted_entry_id` arguments.")]),
    cmd!("xinfo", -2, CONTAINER, NOKEYS, "stream", "5.0.0", "A container for stream introspection commands", no_handler;
        complexity: "Depends on subcommand."),
    cmd!("xinfo|consumers", 4, READONLY, (2, 2, 1), "stream", "5.0.0", "List the consumers in a consumer group", stream_info::consumers;
        acl: acl::STREAM,
        complexity: "O(1)",
        keys: "RO,access index:2 range:0:1:0",
        args: "key:key groupname:string",
        tips: &["nondeterministic_output"]),
    cmd!("xinfo|groups", 3, READONLY, (2, 2, 1), "stream", "5.0.0", "List the consumer groups of a stream", stream_info::groups;
        acl: acl::STREAM,
        complexity: "O(1)",
        keys: "RO,access index:2 range:0:1:0",
        args: "key:key",
        history: &[("7.0.0", "Added the `entries-read` and `lag` fields")]),
    cmd!("xinfo|stream", -3, READONLY, (2, 2, 1), "stream", "5.0.0", "Get information about a stream", stream_info::stream;
        acl: acl::STREAM,
        complexity: "O(1)",
        keys: "RO,access index:2 range:0:1:0",
        args: "key:key full:block=FULL?(count:integer=COUNT?)",
        history: &[("6.0.0", "Added the `FULL` modifier."), ("7.0.0", "Added the `max-deleted-entry-id`, `entries-added`, `recorded-first-entry-id`, `entries-read` and `lag` fields")]),
    cmd!("xinfo|help", 2, LOADING_OK | STALE, NOKEYS, "stream", "5.0.0", "Show helpful text about the different subcommands", stream_info::help;
        acl: acl::STREAM,
        complexity: "O(1)"),
    cmd!("xgroup", -2, CONTAINER, NOKEYS, "stream", "5.0.0", "A container for consumer groups commands", no_handler;
        complexity: "Depends on subcommand."),
    cmd!("xgroup|create", -5, WRITE | DENYOOM, (2, 2, 1), "stream", "5.0.0", "Create a consumer group.", stream_group::create;
        acl: acl::STREAM,
        complexity: "O(1)",
        keys: "RW,insert index:2 range:0:1:0",
        args: "key:key groupname:string id:oneof(id:string new_id:$) mkstream:MKSTREAM? entries_read:integer=ENTRIESREAD?",
        history: &[("7.0.0", "Added the `entries_read` named argument.")]),
    cmd!("xgroup|setid", -5, WRITE, (2, 2, 1), "stream", "5.0.0", "Set a consumer group to an arbitrary last delivered ID value.", stream_group::setid;
        acl: acl::STREAM,
        complexity: "O(1)",
        keys: "RW,update index:2 range:0:1:0",
        args: "key:key groupname:string id:oneof(id:string new_id:$) entries_read:integer=ENTRIESREAD?",
        history: &[("7.0.0", "Added the optional `entries_read` argument.")]),
    cmd!("xgroup|destroy", 4, WRITE, (2, 2, 1), "stream", "5.0.0", "Destroy a consumer group.", stream_group::destroy;
        acl: acl::STREAM,
        complexity: "O(N) where N is the number of entries in the group's pending entries list (PEL).",
        keys: "RW,delete index:2 range:0:1:0",
        args: "key:key groupname:string"),
    cmd!("xgroup|createconsumer", 5, WRITE | DENYOOM, (2, 2, 1), "stream", "6.2.0", "Create a consumer in a consumer group.", stream_group::createconsumer;
        acl: acl::STREAM,
        complexity: "O(1)",
        keys: "RW,insert index:2 range:0:1:0",
        args: "key:key groupname:string consumername:string"),
    cmd!("xgroup|delconsumer", 5, WRITE, (2, 2, 1), "stream", "5.0.0", "Delete a consumer from a consumer group.", stream_group::delconsumer;
        acl: acl::STREAM,
        complexity: "O(1)",
        keys: "RW,delete index:2 range:0:1:0",
        args: "key:key groupname:string consumername:string"),
    cmd!("xgroup|help", 2, LOADING_OK | STALE, NOKEYS, "stream", "5.0.0", "Show helpful text about the different subcommands", stream_group::help;
        acl: acl::STREAM,
        complexity: "O(1)"),
    cmd!("xreadgroup", -7, WRITE | BLOCKING, NOKEYS, "stream", "5.0.0", "Return new entries from a stream using a consumer group, or access the history of the pending entries for a given consumer. Can block.", stream_group::xreadgroup;
        acl: acl::STREAM,
        complexity: "For each stream mentioned: O(M) with M being the number of elements returned. If M is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1). On the other side when XREADGROUP blocks, XADD will pay the O(N) time in order to serve the N clients blocked on the stream getting new data.",
        keys: "RO,access keyword:STREAMS:4 range:-1:1:2",
        args: "group_consumer:block=GROUP(group:string consumer:string) count:integer=COUNT? milliseconds:integer=BLOCK? noack:NOACK? streams:block=STREAMS(key:key* id:string*)"),
    cmd!("xack", -4, WRITE | FAST, KEY1, "stream", "5.0.0", "Marks a pending message as correctly processed, effectively removing it from the pending entries list of the consumer group. Return value of the command is the number of messages successfully acknowledged, that is, the IDs we were actually able to resolve in the PEL.", stream_group::xack;
        acl: acl::STREAM,
        complexity: "O(1) for each message ID processed.",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key group:string id:string*"),
    cmd!("xpending", -3, READONLY, KEY1, "stream", "5.0.0", "Return information and entries from a stream consumer group pending entries list, that are messages fetched but never acknowledged.", stream_group::xpending;
        acl: acl::STREAM,
        complexity: "O(N) with N being the number of elements returned, so asking for a small fixed number of entries per call is O(1). O(M), where M is the total number of entries scanned when used with the IDLE filter. When the command returns just the summary and the list of consumers is small, it runs in O(1) time; otherwise, an additional O(N) time for iterating every consumer.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key group:string filters:block?(min-idle-time:integer=IDLE?^6.2.0 start:string end:string count:integer consumer:string?)",
        history: &[("6.2.0", "Added the `IDLE` option and exclusive range intervals.")],
        tips: &["nondeterministic_output"]),
    cmd!("xclaim", -6, WRITE | FAST, KEY1, "stream", "5.0.0", "Changes (or acquires) ownership of a message in a consumer group, as if the message was delivered to the specified consumer.", stream_group::xclaim;
        acl: acl::STREAM,
        complexity: "O(log N) with N being the number of messages in the PEL of the consumer group.",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key group:string consumer:string min-idle-time:string id:string* ms:integer=IDLE? unix-time-milliseconds:unix-time=TIME? count:integer=RETRYCOUNT? force:FORCE? justid:JUSTID? id:string=LASTID?",
        tips: &["nondeterministic_output"]),
    cmd!("xautoclaim", -6, WRITE | FAST, KEY1, "stream", "6.2.0", "Changes (or acquires) ownership of messages in a consumer group, as if the messages were delivered to the specified consumer.", stream_group::xautoclaim;
        acl: acl::STREAM,
        complexity: "O(1) if COUNT is small.",
        keys: "RW,delete index:1 range:0:1:0",
        args: "key:key group:string consumer:string min-idle-time:string start:string count:integer=COUNT? justid:JUSTID?",
        history: &[("7.0.0", "Added an element to the reply array, containing deleted entries the command cleared from the PEL")],
        tips: &["nondeterministic_output"]),
    // geo (sorted sets of geohash scores)
    cmd!("geoadd", -5, WRITE | DENYOOM, KEY1, "geo", "3.2.0", "Add one or more geospatial items in the geospatial index represented using a sorted set", geo::geoadd;
        acl: acl::GEO,
        complexity: "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key condition:oneof?^6.2.0(nx:NX xx:XX) change:CH?^6.2.0 longitude_latitude_member:block*(longitude:double latitude:double member:string)",
        history: &[("6.2.0", "Added the `CH`, `NX` and `XX` options.")]),
    cmd!("geopos", -2, READONLY, KEY1, "geo", "3.2.0", "Returns longitude and latitude of members of a geospatial index", geo::geopos;
        acl: acl::GEO,
        complexity: "O(N) where N is the number of members requested.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key member:string*"),
    cmd!("geodist", -4, READONLY, KEY1, "geo", "3.2.0", "Returns the distance between two members of a geospatial index", geo::geodist;
        acl: acl::GEO,
        complexity: "O(log(N))",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key member1:string member2:string unit:oneof?(m:M km:KM ft:FT mi:MI)"),
    cmd!("geohash", -2, READONLY, KEY1, "geo", "3.2.0", "Returns members of a geospatial index as standard geohash strings", geo::geohash_cmd;
        acl: acl::GEO,
        complexity: "O(log(N)) for each member requested, where N is the number of elements in the sorted set.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key member:string*"),
    cmd!("georadius", -6, WRITE | DENYOOM, KEY1, "geo", "3.2.0", "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a point", geo::georadius;
        acl: acl::GEO,
        complexity: "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.",
        keys: "RO,access index:1 range:0:1:0; OW,update keyword:STORE:6 range:0:1:0; OW,update keyword:STOREDIST:6 range:0:1:0",
        args: "key:key longitude:double latitude:double radius:double unit:oneof(m:M km:KM ft:FT mi:MI) withcoord:WITHCOORD? withdist:WITHDIST? withhash:WITHHASH? count:block?(count:integer=COUNT any:ANY?^6.2.0) order:oneof?(asc:ASC desc:DESC) key:key=STORE#1? key:key=STOREDIST#2?",
        history: &[("6.2.0", "Added the `ANY` option for `COUNT`."), ("7.0.0", "Added support for uppercase unit names.")],
        doc_flags: doc::DEPRECATED,
        deprecated_since: "6.2.0",
        replaced_by: "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` argument"),
    cmd!("georadius_ro", -6, READONLY, KEY1, "geo", "3.2.10", "A read-only variant for GEORADIUS", geo::georadius_ro;
        acl: acl::GEO,
        complexity: "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key longitude:double latitude:double radius:double unit:oneof(m:M km:KM ft:FT mi:MI) withcoord:WITHCOORD? withdist:WITHDIST? withhash:WITHHASH? count:block?(count:integer=COUNT any:ANY?^6.2.0) order:oneof?(asc:ASC desc:DESC)",
        history: &[("6.2.0", "Added the `ANY` option for `COUNT`.")],
        doc_flags: doc::DEPRECATED,
        deprecated_since: "6.2.0",
        replaced_by: "`GEOSEARCH` with the `BYRADIUS` argument"),
    cmd!("georadiusbymember", -5, WRITE | DENYOOM, KEY1, "geo", "3.2.0", "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a member", geo::georadiusbymember;
        acl: acl::GEO,
        complexity: "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.",
        keys: "RO,access index:1 range:0:1:0; OW,update keyword:STORE:5 range:0:1:0; OW,update keyword:STOREDIST:5 range:0:1:0",
        args: "key:key member:string radius:double unit:oneof(m:M km:KM ft:FT mi:MI) withcoord:WITHCOORD? withdist:WITHDIST? withhash:WITHHASH? count:block?(count:integer=COUNT any:ANY?) order:oneof?(asc:ASC desc:DESC) key:key=STORE#1? key:key=STOREDIST#2?",
        history: &[("7.0.0", "Added support for uppercase unit names.")],
        doc_flags: doc::DEPRECATED,
        deprecated_since: "6.2.0",
        replaced_by: "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` and `FROMMEMBER` arguments"),
    cmd!("georadiusbymember_ro", -5, READONLY, KEY1, "geo", "3.2.10", "A read-only variant for GEORADIUSBYMEMBER", geo::georadiusbymember_ro;
        acl: acl::GEO,
        complexity: "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key member:string radius:double unit:oneof(m:M km:KM ft:FT mi:MI) withcoord:WITHCOORD? withdist:WITHDIST? withhash:WITHHASH? count:block?(count:integer=COUNT any:ANY?) order:oneof?(asc:ASC desc:DESC)",
        doc_flags: doc::DEPRECATED,
        deprecated_since: "6.2.0",
        replaced_by: "`GEOSEARCH` with the `BYRADIUS` and `FROMMEMBER` arguments"),
    cmd!("geosearch", -7, READONLY, KEY1, "geo", "6.2.0", "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle.", geo::geosearch;
        acl: acl::GEO,
        complexity: "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key from:oneof(member:string=FROMMEMBER longitude_latitude:block=FROMLONLAT(longitude:double latitude:double)) by:oneof(circle:block(radius:double=BYRADIUS unit:oneof(m:M km:KM ft:FT mi:MI)) box:block(width:double=BYBOX height:double unit:oneof(m:M km:KM ft:FT mi:MI))) order:oneof?(asc:ASC desc:DESC) count:block?(count:integer=COUNT any:ANY?) withcoord:WITHCOORD? withdist:WITHDIST? withhash:WITHHASH?",
        history: &[("7.0.0", "Added support for uppercase unit names.")]),
    cmd!("geosearchstore", -8, WRITE | DENYOOM, (1, 2, 1), "geo", "6.2.0", "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle, and store the result in another key.", geo::geosearchstore;
        acl: acl::GEO,
        complexity: "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape",
        keys: "OW,update index:1 range:0:1:0; RO,access index:2 range:0:1:0",
        args: "destination:key source:key#1 from:oneof(member:string=FROMMEMBER longitude_latitude:block=FROMLONLAT(longitude:double latitude:double)) by:oneof(circle:block(radius:double=BYRADIUS unit:oneof(m:M km:KM ft:FT mi:MI)) box:block(width:double=BYBOX height:double unit:oneof(m:M km:KM ft:FT mi:MI))) order:oneof?(asc:ASC desc:DESC) count:block?(count:integer=COUNT any:ANY?) storedist:STOREDIST?",
        history: &[("7.0.0", "Added support for uppercase unit names.")]),
    // sort
    cmd!("sort", -2, WRITE | DENYOOM, KEY1, "generic", "1.0.0", "Sort the elements in a list, set or sorted set", sort::sort;
        alone_if: Some(sort::runs_alone),
        getkeys: Some(sort::keys),
        acl: acl::SET | acl::SORTEDSET | acl::LIST | acl::DANGEROUS,
        complexity: "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).",
        keys: "RO,access index:1 range:0:1:0; RO,access unknown unknown | For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort; OW,update unknown unknown | For the optional STORE keyword. It is marked 'unknown' because the keyword can appear anywhere in the argument array",
        args: "key:key pattern:pattern=BY#1? offset_count:block=LIMIT?(offset:integer count:integer) pattern:pattern=GET#1?*+ order:oneof?(asc:ASC desc:DESC) sorting:ALPHA? destination:key=STORE#2?"),
    cmd!("sort_ro", -2, READONLY, KEY1, "generic", "7.0.0", "Sort the elements in a list, set or sorted set. Read-only variant of SORT.", sort::sort_ro;
        alone_if: Some(sort::runs_alone),
        getkeys: Some(sort::ro_keys),
        acl: acl::SET | acl::SORTEDSET | acl::LIST | acl::DANGEROUS,
        complexity: "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).",
        keys: "RO,access index:1 range:0:1:0; RO,access unknown unknown | For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort",
        args: "key:key pattern:pattern=BY#1? offset_count:block=LIMIT?(offset:integer count:integer) pattern:pattern=GET#1?*+ order:oneof?(asc:ASC desc:DESC) sorting:ALPHA?"),
    cmd!("del", -2, WRITE, ALLKEYS, "generic", "1.0.0", "Delete a key", keys::del;
        acl: acl::KEYSPACE,
        complexity: "O(N) where N is the number of keys that will be removed. When a key to remove holds a value other than a string, the individual complexity for this key is O(M) where M is the number of elements in the list, set, sorted set or hash. Removing a single key that holds a string value is O(1).",
        keys: "RM,delete index:1 range:-1:1:0",
        args: "key:key*",
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"]),
    cmd!("unlink", -2, WRITE | FAST, ALLKEYS, "generic", "4.0.0", "Delete a key asynchronously in another thread. Otherwise it is just as DEL, but non blocking.", keys::del;
        acl: acl::KEYSPACE,
        complexity: "O(1) for each key removed regardless of its size. Then the command does O(N) work in a different thread in order to reclaim memory, where N is the number of allocations the deleted objects where composed of.",
        keys: "RM,delete index:1 range:-1:1:0",
        args: "key:key*",
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"]),
    cmd!("exists", -2, READONLY | FAST, ALLKEYS, "generic", "1.0.0", "Determine if a key exists", keys::exists;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(N) where N is the number of keys to check.",
        keys: "RO index:1 range:-1:1:0",
        args: "key:key*",
        history: &[("3.0.3", "Accepts multiple `key` arguments.")],
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"]),
    cmd!("type", 2, READONLY | FAST, KEY1, "generic", "1.0.0", "Determine the type stored at key", keys::type_;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RO index:1 range:0:1:0",
        args: "key:key"),
    cmd!("touch", -2, READONLY | FAST, ALLKEYS, "generic", "3.2.1", "Alters the last access time of a key(s). Returns the number of existing keys specified.", access::touch;
        props: props::TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(N) where N is the number of keys that will be touched.",
        keys: "RO index:1 range:-1:1:0",
        args: "key:key*",
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"]),
    cmd!("expire", -3, WRITE | FAST, KEY1, "generic", "1.0.0", "Set a key's time to live in seconds", keys::expire;
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key seconds:integer condition:oneof?^7.0.0(nx:NX xx:XX gt:GT lt:LT)",
        history: &[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")]),
    cmd!("pexpire", -3, WRITE | FAST, KEY1, "generic", "2.6.0", "Set a key's time to live in milliseconds", keys::pexpire;
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key milliseconds:integer condition:oneof?^7.0.0(nx:NX xx:XX gt:GT lt:LT)",
        history: &[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")]),
    cmd!("expireat", -3, WRITE | FAST, KEY1, "generic", "1.2.0", "Set the expiration for a key as a UNIX timestamp", keys::expireat;
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key unix-time-seconds:unix-time condition:oneof?^7.0.0(nx:NX xx:XX gt:GT lt:LT)",
        history: &[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")]),
    cmd!("pexpireat", -3, WRITE | FAST, KEY1, "generic", "2.6.0", "Set the expiration for a key as a UNIX timestamp specified in milliseconds", keys::pexpireat;
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key unix-time-milliseconds:unix-time condition:oneof?^7.0.0(nx:NX xx:XX gt:GT lt:LT)",
        history: &[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")]),
    cmd!("ttl", 2, READONLY | FAST, KEY1, "generic", "1.0.0", "Get the time to live for a key in seconds", keys::ttl;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        args: "key:key",
        history: &[("2.8.0", "Added the -2 reply.")],
        tips: &["nondeterministic_output"]),
    cmd!("pttl", 2, READONLY | FAST, KEY1, "generic", "2.6.0", "Get the time to live for a key in milliseconds", keys::pttl;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        args: "key:key",
        history: &[("2.8.0", "Added the -2 reply.")],
        tips: &["nondeterministic_output"]),
    cmd!("expiretime", 2, READONLY | FAST, KEY1, "generic", "7.0.0", "Get the expiration Unix timestamp for a key", keys::expiretime;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        args: "key:key"),
    cmd!("pexpiretime", 2, READONLY | FAST, KEY1, "generic", "7.0.0", "Get the expiration Unix timestamp for a key in milliseconds", keys::pexpiretime;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        args: "key:key"),
    cmd!("persist", 2, WRITE | FAST, KEY1, "generic", "2.2.0", "Remove the expiration from a key", keys::persist;
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key"),
    cmd!("keys", 2, READONLY, NOKEYS, "generic", "1.0.0", "Find all keys matching the given pattern", keys::keys;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE | acl::DANGEROUS,
        complexity: "O(N) with N being the number of keys in the database, under the assumption that the key names in the database and the given pattern have limited length.",
        args: "pattern:pattern",
        tips: &["request_policy:all_shards", "nondeterministic_output_order"]),
    cmd!("scan", -2, READONLY, NOKEYS, "generic", "2.8.0", "Incrementally iterate the keys space", keys::scan;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
        args: "cursor:integer pattern:pattern=MATCH? count:integer=COUNT? type:string=TYPE?^6.0.0",
        history: &[("6.0.0", "Added the `TYPE` subcommand.")],
        tips: &["nondeterministic_output", "request_policy:special"]),
    cmd!("randomkey", 1, READONLY, NOKEYS, "generic", "1.0.0", "Return a random key from the keyspace", keys::randomkey;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        tips: &["request_policy:all_shards", "nondeterministic_output"]),
    cmd!("rename", 3, WRITE, (1, 2, 1), "generic", "1.0.0", "Rename a key", keys::rename;
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RW,access,delete index:1 range:0:1:0; OW,update index:2 range:0:1:0",
        args: "key:key newkey:key#1",
        history: &[]),
    cmd!("renamenx", 3, WRITE | FAST, (1, 2, 1), "generic", "1.0.0", "Rename a key, only if the new key does not exist", keys::renamenx;
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RW,access,delete index:1 range:0:1:0; OW,insert index:2 range:0:1:0",
        args: "key:key newkey:key#1",
        history: &[("3.2.0", "The command no longer returns an error when source and destination names are the same.")]),
    cmd!("copy", -3, WRITE | DENYOOM, (1, 2, 1), "generic", "6.2.0", "Copy a key", keys::copy;
        acl: acl::KEYSPACE,
        complexity: "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.",
        keys: "RO,access index:1 range:0:1:0; OW,update index:2 range:0:1:0",
        args: "source:key destination:key#1 destination-db:integer=DB? replace:REPLACE?"),
    cmd!("dump", 2, READONLY, KEY1, "generic", "2.6.0", "Return a serialized version of the value stored at the specified key.", dump::dump;
        acl: acl::KEYSPACE,
        complexity: "O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key",
        tips: &["nondeterministic_output"]),
    cmd!("restore-asking", -4, WRITE | DENYOOM | ASKING, KEY1, "server", "3.0.0", "An internal command for migrating keys in a cluster", dump::restore;
        acl: acl::KEYSPACE | acl::DANGEROUS,
        complexity: "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).",
        keys: "OW,update index:1 range:0:1:0",
        args: "key:key ttl:integer serialized-value:string replace:REPLACE?^3.0.0 absttl:ABSTTL?^5.0.0 seconds:integer=IDLETIME?^5.0.0 frequency:integer=FREQ?^5.0.0",
        history: &[("3.0.0", "Added the `REPLACE` modifier."), ("5.0.0", "Added the `ABSTTL` modifier."), ("5.0.0", "Added the `IDLETIME` and `FREQ` options.")],
        doc_flags: doc::SYSCMD),
    cmd!("restore", -4, WRITE | DENYOOM, KEY1, "generic", "2.6.0", "Create a key using the provided serialized value, previously obtained using DUMP.", dump::restore;
        acl: acl::KEYSPACE | acl::DANGEROUS,
        complexity: "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).",
        keys: "OW,update index:1 range:0:1:0",
        args: "key:key ttl:integer serialized-value:string replace:REPLACE?^3.0.0 absttl:ABSTTL?^5.0.0 seconds:integer=IDLETIME?^5.0.0 frequency:integer=FREQ?^5.0.0",
        history: &[("3.0.0", "Added the `REPLACE` modifier."), ("5.0.0", "Added the `ABSTTL` modifier."), ("5.0.0", "Added the `IDLETIME` and `FREQ` options.")]),
    cmd!("migrate", -6, WRITE, (3, 3, 1), "generic", "2.6.0", "Atomically transfer a key from a Redis instance to another one.", migrate::migrate;
        getkeys: Some(migrate::migrate_keys),
        redact: Some(migrate::redact_migrate),
        props: props::MIGRATING_OK,
        acl: acl::KEYSPACE | acl::DANGEROUS,
        complexity: "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target instance. See the pages of these commands for time complexity. Also an O(N) data transfer between the two instances is performed.",
        keys: "RW,access,delete index:3 range:0:1:0; RW,access,delete,incomplete keyword:KEYS:-2 range:-1:1:0",
        args: "host:string port:integer key_or_empty_string:oneof(key:key empty_string:) destination-db:integer timeout:integer copy:COPY?^3.0.0 replace:REPLACE?^3.0.0 authentication:oneof?(password:string=AUTH?^4.0.7 username_password:block=AUTH2?^6.0.0(username:string password:string)) key:key=KEYS?*^3.0.6#1",
        history: &[("3.0.0", "Added the `COPY` and `REPLACE` options."), ("3.0.6", "Added the `KEYS` option."), ("4.0.7", "Added the `AUTH` option."), ("6.0.0", "Added the `AUTH2` option.")],
        tips: &["nondeterministic_output"]),
    cmd!("move", 3, WRITE | FAST, KEY1, "generic", "1.0.0", "Move a key to another database", keys::move_;
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        args: "key:key db:integer"),
    cmd!("dbsize", 1, READONLY | FAST, NOKEYS, "server", "1.0.0", "Return the number of keys in the selected database", keys::dbsize;
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        tips: &["request_policy:all_shards", "response_policy:agg_sum"]),
    cmd!("flushdb", -1, WRITE, NOKEYS, "server", "1.0.0", "Remove all keys from the current database", keys::flushdb;
        acl: acl::KEYSPACE | acl::DANGEROUS,
        complexity: "O(N) where N is the number of keys in the selected database",
        args: "async:oneof?(async:ASYNC^4.0.0 sync:SYNC^6.2.0)",
        history: &[("4.0.0", "Added the `ASYNC` flushing mode modifier."), ("6.2.0", "Added the `SYNC` flushing mode modifier.")],
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    cmd!("flushall", -1, WRITE, NOKEYS, "server", "1.0.0", "Remove all keys from all databases", keys::flushall;
        acl: acl::KEYSPACE | acl::DANGEROUS,
        complexity: "O(N) where N is the total number of keys in all databases",
        args: "async:oneof?(async:ASYNC^4.0.0 sync:SYNC^6.2.0)",
        history: &[("4.0.0", "Added the `ASYNC` flushing mode modifier."), ("6.2.0", "Added the `SYNC` flushing mode modifier.")],
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    cmd!("select", 2, LOADING_OK | STALE | FAST, NOKEYS, "connection", "1.0.0", "Change the selected database for the current connection", conn::select;
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "index:integer"),
    cmd!("multi", 1, NOSCRIPT | LOADING_OK | STALE | FAST | ALLOW_BUSY | TX_CONTROL, NOKEYS, "transactions", "1.2.0", "Mark the start of a transaction block", multi::multi;
        props: props::TX_OPEN,
        acl: acl::TRANSACTION,
        complexity: "O(1)"),
    cmd!("exec", 1, NOSCRIPT | LOADING_OK | STALE | SKIP_SLOWLOG | TX_CONTROL, NOKEYS, "transactions", "1.2.0", "Execute all commands issued after MULTI", multi::exec;
        props: props::RUNS_QUEUE | props::TX_CLOSE,
        acl: acl::TRANSACTION,
        complexity: "Depends on commands in the transaction"),
    cmd!("discard", 1, NOSCRIPT | LOADING_OK | STALE | FAST | ALLOW_BUSY | TX_CONTROL, NOKEYS, "transactions", "2.0.0", "Discard all commands issued after MULTI", multi::discard;
        props: props::TX_CLOSE,
        acl: acl::TRANSACTION,
        complexity: "O(N), when N is the number of queued commands"),
    cmd!("watch", -2, NOSCRIPT | LOADING_OK | STALE | FAST | ALLOW_BUSY | TX_CONTROL, ALLKEYS, "transactions", "2.2.0", "Watch the given keys to determine execution of the MULTI/EXEC block", multi::watch;
        acl: acl::TRANSACTION,
        complexity: "O(1) for every key.",
        keys: "RO index:1 range:-1:1:0",
        args: "key:key*"),
    cmd!("unwatch", 1, NOSCRIPT | LOADING_OK | STALE | FAST | ALLOW_BUSY, NOKEYS, "transactions", "2.2.0", "Forget about all watched keys", multi::unwatch;
        acl: acl::TRANSACTION,
        complexity: "O(1)"),
    cmd!("swapdb", 3, WRITE | FAST, NOKEYS, "server", "4.0.0", "Swaps two Redis databases", keys::swapdb;
        acl: acl::KEYSPACE | acl::DANGEROUS,
        complexity: "O(N) where N is the count of clients watching or blocking on keys from both databases.",
        args: "index1:integer index2:integer"),
    cmd!("ping", -1, FAST, NOKEYS, "connection", "1.0.0", "Ping the server", conn::ping;
        props: props::SUBSCRIBED_OK | props::MISCONF_CHECKED,
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "message:string?",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    cmd!("echo", 2, LOADING_OK | STALE | FAST, NOKEYS, "connection", "1.0.0", "Echo the given string", conn::echo;
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "message:string"),
    cmd!("quit", -1, ALLOW_BUSY | NOSCRIPT | LOADING_OK | STALE | FAST | NO_AUTH | TX_CONTROL, NOKEYS, "connection", "1.0.0", "Close the connection", conn::quit;
        props: props::SUBSCRIBED_OK,
        acl: acl::CONNECTION,
        complexity: "O(1)"),
    cmd!("reset", 1, NOSCRIPT | LOADING_OK | STALE | FAST | NO_AUTH | ALLOW_BUSY | TX_CONTROL, NOKEYS, "connection", "6.2.0", "Reset the connection", conn::reset;
        props: props::SUBSCRIBED_OK,
        acl: acl::CONNECTION,
        complexity: "O(1)"),
    cmd!("hello", -1, NOSCRIPT | LOADING_OK | STALE | FAST | NO_AUTH | ALLOW_BUSY, NOKEYS, "connection", "6.0.0", "Handshake with Redis", conn::hello;
        redact: Some(monitor::redact_hello),
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "arguments:block?(protover:integer username_password:block=AUTH?(username:string password:string) clientname:string=SETNAME?)",
        history: &[("6.2.0", "`protover` made optional; when called without arguments the command reports the current connection's context.")]),
    cmd!("auth", -2, NOSCRIPT | LOADING_OK | STALE | FAST | NO_AUTH | ALLOW_BUSY, NOKEYS, "connection", "1.0.0", "Authenticate to the server", conn::auth;
        redact: Some(monitor::redact_auth),
        acl: acl::CONNECTION,
        complexity: "O(N) where N is the number of passwords defined for the user",
        args: "username:string?^6.0.0 password:string",
        history: &[("6.0.0", "Added ACL style (username and password).")]),
    cmd!("client", -2, CONTAINER, NOKEYS, "connection", "2.4.0", "A container for client connection commands", no_handler;
        complexity: "Depends on subcommand."),
    cmd!("client|getname", 2, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "2.6.9", "Get the current connection name", conn::client;
        acl: acl::CONNECTION,
        complexity: "O(1)"),
    cmd!("client|id", 2, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "5.0.0", "Returns the client ID for the current connection", conn::client;
        acl: acl::CONNECTION,
        complexity: "O(1)"),
    cmd!("client|info", 2, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "6.2.0", "Returns information about the current client connection.", conn::client;
        acl: acl::CONNECTION,
        complexity: "O(1)",
        tips: &["nondeterministic_output"]),
    cmd!("client|kill", -3, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "2.4.0", "Kill the connection of a client", conn::client;
        acl: acl::CONNECTION,
        complexity: "O(N) where N is the number of client connections",
        args: "filter:oneof(ip:port:string~2.8.12 new-format:oneof*(client-id:integer=ID?^2.8.12 normal_master_slave_pubsub:oneof=TYPE?^2.8.12(normal:NORMAL master:MASTER^3.2.0 slave:SLAVE replica:REPLICA^5.0.0 pubsub:PUBSUB) username:string=USER? ip:port:string=ADDR? ip:port:string=LADDR?^6.2.0 yes/no:string=SKIPME?))",
        history: &[("2.8.12", "Added new filter format."), ("2.8.12", "`ID` option."), ("3.2.0", "Added `master` type in for `TYPE` option."), ("5.0.0", "Replaced `slave` `TYPE` with `replica`. `slave` still supported for backward compatibility."), ("6.2.0", "`LADDR` option.")]),
    cmd!("client|list", -2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "2.4.0", "Get the list of client connections", conn::client;
        acl: acl::CONNECTION,
        complexity: "O(N) where N is the number of client connections",
        args: "normal_master_replica_pubsub:oneof=TYPE?^5.0.0(normal:NORMAL master:MASTER replica:REPLICA pubsub:PUBSUB) id:block=ID?^6.2.0(client-id:integer*)",
        history: &[("2.8.12", "Added unique client `id` field."), ("5.0.0", "Added optional `TYPE` filter."), ("6.0.0", "Added `user` field."), ("6.2.0", "Added `argv-mem`, `tot-mem`, `laddr` and `redir` fields and the optional `ID` filter."), ("7.0.0", "Added `resp`, `multi-mem`, `rbs` and `rbp` fields."), ("7.0.3", "Added `ssub` field.")],
        tips: &["nondeterministic_output"]),
    cmd!("client|setname", 3, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "2.6.9", "Set the current connection name", conn::client;
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "connection-name:string"),
    // Redis 7.2's (7.0.15 lacks it; clients such as redis-py send it at connect).
    cmd!("client|setinfo", 4, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "7.2.0", "Sets information specific to the client or connection.", conn::client;
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "attr:oneof(libname:string=LIB-NAME libver:string=LIB-VER)",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"]),
    cmd!("client|help", 2, LOADING_OK | STALE, NOKEYS, "connection", "5.0.0", "Show helpful text about the different subcommands", conn::client;
        acl: acl::CONNECTION,
        complexity: "O(1)"),
    cmd!("client|no-evict", 3, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "7.0.0", "Set client eviction mode for the current connection", conn::client;
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "enabled:oneof(on:ON off:OFF)"),
    // Redis 7.2's entry (src/commands/client-no-touch.json): 7.0.15 has none.
    cmd!("client|no-touch", 3, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "7.2.0", "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.", conn::client;
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "enabled:oneof(on:ON off:OFF)"),
    cmd!("client|pause", -3, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "2.9.50", "Stop processing commands from clients for some time", conn::client;
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "timeout:integer mode:oneof?^6.2.0(write:WRITE all:ALL)",
        history: &[("6.2.0", "`CLIENT PAUSE WRITE` mode added along with the `mode` option.")]),
    cmd!("client|unblock", -3, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "5.0.0", "Unblock a client blocked in a blocking command from a different connection", conn::client;
        acl: acl::CONNECTION,
        complexity: "O(log N) where N is the number of client connections",
        args: "client-id:integer timeout_error:oneof?(timeout:TIMEOUT error:ERROR)"),
    cmd!("client|unpause", 2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "6.2.0", "Resume processing of clients that were paused", conn::client;
        acl: acl::CONNECTION,
        complexity: "O(N) Where N is the number of paused clients"),
    cmd!("client|reply", 3, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "3.2.0", "Instruct the server whether to reply to commands", conn::client;
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "on_off_skip:oneof(on:ON off:OFF skip:SKIP)"),
    cmd!("client|tracking", -3, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "6.0.0", "Enable or disable server assisted client side caching support", conn::client;
        acl: acl::CONNECTION,
        complexity: "O(1). Some options may introduce additional complexity.",
        args: "status:oneof(on:ON off:OFF) client-id:integer=REDIRECT? prefix:string=PREFIX?*+ bcast:BCAST? optin:OPTIN? optout:OPTOUT? noloop:NOLOOP?"),
    cmd!("client|caching", 3, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "6.0.0", "Instruct the server about tracking or not keys in the next request", conn::client;
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "mode:oneof(yes:YES no:NO)"),
    cmd!("client|getredir", 2, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "6.0.0", "Get tracking notifications redirection client ID if any", conn::client;
        acl: acl::CONNECTION,
        complexity: "O(1)"),
    cmd!("client|trackinginfo", 2, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "connection", "6.2.0", "Return information about server assisted client side caching for the current connection", conn::client;
        acl: acl::CONNECTION,
        complexity: "O(1)"),
    cmd!("command", -1, LOADING_OK | STALE | CONTAINER, NOKEYS, "server", "2.8.13", "Get array of Redis command details", command::command;
        acl: acl::CONNECTION,
        complexity: "O(N) where N is the total number of Redis commands",
        tips: &["nondeterministic_output_order"]),
    cmd!("command|count", 2, LOADING_OK | STALE, NOKEYS, "server", "2.8.13", "Get total number of Redis commands", command::count;
        acl: acl::CONNECTION,
        complexity: "O(1)"),
    cmd!("command|docs", -2, LOADING_OK | STALE, NOKEYS, "server", "7.0.0", "Get array of specific Redis command documentation", command::docs;
        acl: acl::CONNECTION,
        complexity: "O(N) where N is the number of commands to look up",
        args: "command-name:string?*",
        tips: &["nondeterministic_output_order"]),
    cmd!("command|getkeys", -4, LOADING_OK | STALE, NOKEYS, "server", "2.8.13", "Extract keys given a full Redis command", command::getkeys;
        acl: acl::CONNECTION,
        complexity: "O(N) where N is the number of arguments to the command"),
    cmd!("command|getkeysandflags", -4, LOADING_OK | STALE, NOKEYS, "server", "7.0.0", "Extract keys and access flags given a full Redis command", command::getkeysandflags;
        acl: acl::CONNECTION,
        complexity: "O(N) where N is the number of arguments to the command"),
    cmd!("command|help", 2, LOADING_OK | STALE, NOKEYS, "server", "5.0.0", "Show helpful text about the different subcommands", command::help;
        acl: acl::CONNECTION,
        complexity: "O(1)"),
    cmd!("command|info", -2, LOADING_OK | STALE, NOKEYS, "server", "2.8.13", "Get array of specific Redis command details, or all when no argument is given.", command::info;
        acl: acl::CONNECTION,
        complexity: "O(N) where N is the number of commands to look up",
        args: "command-name:string?*",
        history: &[("7.0.0", "Allowed to be called with no argument to get info on all commands.")],
        tips: &["nondeterministic_output_order"]),
    cmd!("command|list", -2, LOADING_OK | STALE, NOKEYS, "server", "7.0.0", "Get an array of Redis command names", command::list;
        acl: acl::CONNECTION,
        complexity: "O(N) where N is the total number of Redis commands",
        args: "filterby:oneof=FILTERBY?(module-name:string=MODULE category:string=ACLCAT pattern:pattern=PATTERN)",
        tips: &["nondeterministic_output_order"]),
    cmd!("acl", -2, CONTAINER, NOKEYS, "server", "6.0.0", "A container for Access List Control commands ", no_handler;
        complexity: "Depends on subcommand."),
    cmd!("acl|cat", -2, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "List the ACL categories or the commands inside a category", acl_cmd::acl;
        complexity: "O(1) since the categories and commands are a fixed set.",
        args: "categoryname:string?"),
    cmd!("acl|deluser", -3, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "Remove the specified ACL users and the associated rules", acl_cmd::acl;
        complexity: "O(1) amortized time considering the typical user.",
        args: "username:string*"),
    cmd!("acl|dryrun", -4, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "7.0.0", "Returns whether the user can execute the given command without executing the command.", acl_cmd::acl;
        complexity: "O(1).",
        args: "username:string command:string arg:string?*"),
    cmd!("acl|genpass", -2, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "Generate a pseudorandom secure password to use for ACL users", acl_cmd::acl;
        complexity: "O(1)",
        args: "bits:integer?"),
    cmd!("acl|getuser", 3, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "Get the rules for a specific ACL user", acl_cmd::acl;
        complexity: "O(N). Where N is the number of password, command and pattern rules that the user has.",
        args: "username:string",
        history: &[("6.2.0", "Added Pub/Sub channel patterns."), ("7.0.0", "Added selectors and changed the format of key and channel patterns from a list to their rule representation.")]),
    cmd!("acl|help", 2, LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "Show helpful text about the different subcommands", acl_cmd::acl;
        complexity: "O(1)"),
    cmd!("acl|list", 2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "List the current ACL rules in ACL config file format", acl_cmd::acl;
        complexity: "O(N). Where N is the number of configured users."),
    cmd!("acl|load", 2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "Reload the ACLs from the configured ACL file", acl_cmd::acl;
        complexity: "O(N). Where N is the number of configured users."),
    cmd!("acl|log", -2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "List latest events denied because of ACLs in place", acl_cmd::acl;
        complexity: "O(N) with N being the number of entries shown.",
        args: "operation:oneof?(count:integer reset:RESET)"),
    cmd!("acl|save", 2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "Save the current ACL rules in the configured ACL file", acl_cmd::acl;
        complexity: "O(N). Where N is the number of configured users."),
    cmd!("acl|setuser", -3, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "Modify or create the rules for a specific ACL user", acl_cmd::acl;
        redact: Some(acl_cmd::redact_setuser),
        complexity: "O(N). Where N is the number of rules provided.",
        args: "username:string rule:string?*",
        history: &[("6.2.0", "Added Pub/Sub channel patterns."), ("7.0.0", "Added selectors and key based permissions.")]),
    cmd!("acl|users", 2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "List the username of all the configured ACL rules", acl_cmd::acl;
        complexity: "O(N). Where N is the number of configured users."),
    cmd!("acl|whoami", 2, NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "6.0.0", "Return the name of the user associated to the current connection", acl_cmd::acl;
        complexity: "O(1)"),
    cmd!("config", -2, CONTAINER, NOKEYS, "server", "2.0.0", "A container for server configuration commands", no_handler;
        complexity: "Depends on subcommand."),
    cmd!("config|get", -3, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "2.0.0", "Get the values of configuration parameters", server::config;
        complexity: "O(N) when N is the number of configuration parameters provided",
        args: "parameter:block*(parameter:string)",
        history: &[("7.0.0", "Added the ability to pass multiple pattern parameters in one call")]),
    cmd!("config|set", -4, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "2.0.0", "Set configuration parameters to the given values", server::config;
        redact: Some(monitor::redact_config_set),
        complexity: "O(N) when N is the number of configuration parameters provided",
        args: "parameter_value:block*(parameter:string value:string)",
        history: &[("7.0.0", "Added the ability to set multiple parameters in one call.")],
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"]),
    cmd!("config|resetstat", 2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "2.0.0", "Reset the stats returned by INFO", server::config;
        complexity: "O(1)"),
    cmd!("config|rewrite", 2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "2.8.0", "Rewrite the configuration file with the in memory configuration", server::config;
        complexity: "O(1)"),
    cmd!("config|help", 2, LOADING_OK | STALE, NOKEYS, "server", "5.0.0", "Show helpful text about the different subcommands", server::config;
        complexity: "O(1)"),
    cmd!("info", -1, LOADING_OK | STALE, NOKEYS, "server", "1.0.0", "Get information and statistics about the server", server::info;
        acl: acl::DANGEROUS,
        complexity: "O(1)",
        args: "section:string?*",
        history: &[("7.0.0", "Added support for taking multiple section arguments.")],
        tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"]),
    cmd!("lolwut", -1, READONLY | FAST, NOKEYS, "server", "5.0.0", "Display some computer art and the Redis version", server::lolwut;
        args: "version:integer=VERSION?"),
    cmd!("time", 1, LOADING_OK | STALE | FAST, NOKEYS, "server", "2.6.0", "Return the current server time", server::time;
        complexity: "O(1)",
        tips: &["nondeterministic_output"]),
    cmd!("shutdown", -1, ADMIN | NOSCRIPT | LOADING_OK | STALE | NO_MULTI | ALLOW_BUSY, NOKEYS, "server", "1.0.0", "Synchronously save the dataset to disk and then shut down the server", server::shutdown;
        complexity: "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)",
        args: "nosave_save:oneof?(nosave:NOSAVE save:SAVE) now:NOW?^7.0.0 force:FORCE?^7.0.0 abort:ABORT?^7.0.0",
        history: &[("7.0.0", "Added the `NOW`, `FORCE` and `ABORT` modifiers.")]),
    cmd!("memory", -2, CONTAINER, NOKEYS, "server", "4.0.0", "A container for memory diagnostics commands", no_handler;
        props: props::NO_TOUCH,
        complexity: "Depends on subcommand."),
    cmd!("memory|doctor", 2, 0, NOKEYS, "server", "4.0.0", "Outputs memory problems report", server::memory;
        props: props::NO_TOUCH,
        complexity: "O(1)",
        tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"]),
    cmd!("memory|malloc-stats", 2, 0, NOKEYS, "server", "4.0.0", "Show allocator internal stats", server::memory;
        props: props::NO_TOUCH,
        complexity: "Depends on how much memory is allocated, could be slow",
        tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"]),
    cmd!("memory|purge", 2, 0, NOKEYS, "server", "4.0.0", "Ask the allocator to release memory", server::memory;
        props: props::NO_TOUCH,
        complexity: "Depends on how much memory is allocated, could be slow",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    cmd!("memory|stats", 2, 0, NOKEYS, "server", "4.0.0", "Show memory usage details", server::memory;
        props: props::NO_TOUCH,
        complexity: "O(1)",
        tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"]),
    cmd!("memory|usage", -3, READONLY, (2, 2, 1), "server", "4.0.0", "Estimate the memory usage of a key", server::memory;
        props: props::NO_TOUCH,
        complexity: "O(N) where N is the number of samples.",
        keys: "RO index:2 range:0:1:0",
        args: "key:key count:integer=SAMPLES?"),
    cmd!("memory|help", 2, LOADING_OK | STALE, NOKEYS, "server", "4.0.0", "Show helpful text about the different subcommands", server::memory;
        props: props::NO_TOUCH,
        complexity: "O(1)"),
    cmd!("bgrewriteaof", 1, NO_ASYNC_LOADING | ADMIN | NOSCRIPT, NOKEYS, "server", "1.0.0", "Asynchronously rewrite the append-only file", server::bgrewriteaof;
        complexity: "O(1)"),
    cmd!("save", 1, NO_ASYNC_LOADING | ADMIN | NOSCRIPT | NO_MULTI, NOKEYS, "server", "1.0.0", "Synchronously save the dataset to disk", server::save;
        complexity: "O(N) where N is the total number of keys in all databases"),
    cmd!("bgsave", -1, NO_ASYNC_LOADING | ADMIN | NOSCRIPT, NOKEYS, "server", "1.0.0", "Asynchronously save the dataset to disk", server::bgsave;
        complexity: "O(1)",
        args: "schedule:SCHEDULE?^3.2.2",
        history: &[("3.2.2", "Added the `SCHEDULE` option.")]),
    cmd!("lastsave", 1, LOADING_OK | STALE | FAST, NOKEYS, "server", "1.0.0", "Get the UNIX time stamp of the last successful save to disk", server::lastsave;
        acl: acl::ADMIN | acl::DANGEROUS,
        complexity: "O(1)",
        tips: &["nondeterministic_output"]),
    cmd!("object", -2, CONTAINER, NOKEYS, "generic", "2.2.3", "A container for object introspection commands", no_handler;
        props: props::NO_TOUCH,
        complexity: "Depends on subcommand."),
    cmd!("object|encoding", 3, READONLY, (2, 2, 1), "generic", "2.2.3", "Inspect the internal encoding of a Redis object", object::encoding_cmd;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RO index:2 range:0:1:0",
        args: "key:key",
        tips: &["nondeterministic_output"]),
    cmd!("object|freq", 3, READONLY, (2, 2, 1), "generic", "4.0.0", "Get the logarithmic access frequency counter of a Redis object", object::freq;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RO index:2 range:0:1:0",
        args: "key:key",
        tips: &["nondeterministic_output"]),
    cmd!("object|idletime", 3, READONLY, (2, 2, 1), "generic", "2.2.3", "Get the time since a Redis object was last accessed", object::idletime;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RO index:2 range:0:1:0",
        args: "key:key",
        tips: &["nondeterministic_output"]),
    cmd!("object|refcount", 3, READONLY, (2, 2, 1), "generic", "2.2.3", "Get the number of references to the value of the key", object::refcount;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1)",
        keys: "RO index:2 range:0:1:0",
        args: "key:key",
        tips: &["nondeterministic_output"]),
    cmd!("object|help", 2, LOADING_OK | STALE, NOKEYS, "generic", "6.2.0", "Show helpful text about the different subcommands", object::help;
        props: props::NO_TOUCH,
        acl: acl::KEYSPACE,
        complexity: "O(1)"),
    cmd!("slowlog", -2, CONTAINER, NOKEYS, "server", "2.2.12", "A container for slow log commands", no_handler;
        complexity: "Depends on subcommand."),
    cmd!("slowlog|get", -2, ADMIN | LOADING_OK | STALE, NOKEYS, "server", "2.2.12", "Get the slow log's entries", slowlog::get;
        complexity: "O(N) where N is the number of entries returned",
        args: "count:integer?",
        history: &[("4.0.0", "Added client IP address, port and name to the reply.")],
        tips: &["request_policy:all_nodes", "nondeterministic_output"]),
    cmd!("slowlog|len", 2, ADMIN | LOADING_OK | STALE, NOKEYS, "server", "2.2.12", "Get the slow log's length", slowlog::len;
        complexity: "O(1)",
        tips: &["request_policy:all_nodes", "response_policy:agg_sum", "nondeterministic_output"]),
    cmd!("slowlog|reset", 2, ADMIN | LOADING_OK | STALE, NOKEYS, "server", "2.2.12", "Clear all entries from the slow log", slowlog::reset;
        complexity: "O(N) where N is the number of entries in the slowlog",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"]),
    cmd!("slowlog|help", 2, LOADING_OK | STALE, NOKEYS, "server", "6.2.0", "Show helpful text about the different subcommands", slowlog::help;
        complexity: "O(1)"),
    cmd!("latency", -2, CONTAINER, NOKEYS, "server", "2.8.13", "A container for latency diagnostics commands", no_handler;
        complexity: "Depends on subcommand."),
    cmd!("latency|latest", 2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "2.8.13", "Return the latest latency samples for all events.", latency::latest;
        complexity: "O(1)",
        tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"]),
    cmd!("latency|history", 3, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "2.8.13", "Return timestamp-latency samples for the event.", latency::history;
        complexity: "O(1)",
        args: "event:string",
        tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"]),
    cmd!("latency|reset", -2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "2.8.13", "Reset latency data for one or more events.", latency::reset;
        complexity: "O(1)",
        args: "event:string?*",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"]),
    cmd!("latency|doctor", 2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "2.8.13", "Return a human readable latency analysis report.", latency::doctor;
        complexity: "O(1)",
        tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"]),
    cmd!("latency|graph", 3, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "2.8.13", "Return a latency graph for the event.", latency::graph;
        complexity: "O(1)",
        args: "event:string",
        tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"]),
    cmd!("latency|histogram", -2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "7.0.0", "Return the cumulative distribution of latencies of a subset of commands or all.", latency::histogram;
        complexity: "O(N) where N is the number of commands with latency information being retrieved.",
        args: "command:string?*",
        tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"]),
    cmd!("latency|help", 2, LOADING_OK | STALE, NOKEYS, "server", "2.8.13", "Show helpful text about the different subcommands.", latency::help;
        complexity: "O(1)"),
    cmd!("module", -2, CONTAINER, NOKEYS, "server", "4.0.0", "A container for module commands", no_handler;
        complexity: "Depends on subcommand."),
    cmd!("module|list", 2, ADMIN | NOSCRIPT, NOKEYS, "server", "4.0.0", "List all modules loaded by the server", server::module_list;
        complexity: "O(N) where N is the number of loaded modules.",
        tips: &["nondeterministic_output_order"]),
    cmd!("module|load", -3, NO_ASYNC_LOADING | ADMIN | NOSCRIPT | PROTECTED_MODULE, NOKEYS, "server", "4.0.0", "Load a module", server::module_load;
        complexity: "O(1)",
        args: "path:string arg:string?*"),
    cmd!("module|loadex", -3, NO_ASYNC_LOADING | ADMIN | NOSCRIPT | PROTECTED_MODULE, NOKEYS, "server", "7.0.0", "Load a module with extended parameters", server::module_load;
        complexity: "O(1)",
        args: "path:string configs:block=CONFIG?*+(name:string value:string) args:block=ARGS?*(arg:string)"),
    cmd!("module|unload", 3, NO_ASYNC_LOADING | ADMIN | NOSCRIPT | PROTECTED_MODULE, NOKEYS, "server", "4.0.0", "Unload a module", server::module_unload;
        complexity: "O(1)",
        args: "name:string"),
    cmd!("module|help", 2, LOADING_OK | STALE, NOKEYS, "server", "5.0.0", "Show helpful text about the different subcommands", server::module_help;
        complexity: "O(1)"),
    cmd!("monitor", 1, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "1.0.0", "Listen for all requests received by the server in real time", monitor::monitor;
        history: &[]),
    cmd!("wait", 3, NOSCRIPT, NOKEYS, "generic", "3.0.0", "Wait for the synchronous replication of all the write commands sent in the context of the current connection", crate::replication::wait;
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "numreplicas:integer timeout:integer",
        tips: &["request_policy:all_shards", "response_policy:agg_min"]),
    cmd!("role", 1, NOSCRIPT | LOADING_OK | STALE | FAST, NOKEYS, "server", "2.8.12", "Return the role of the instance in the context of replication", crate::replication::role;
        acl: acl::ADMIN | acl::DANGEROUS,
        complexity: "O(1)"),
    cmd!("replicaof", 3, ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING, NOKEYS, "server", "5.0.0", "Make the server a replica of another instance, or promote it as master.", crate::replication::replica::replicaof;
        acl: acl::ADMIN | acl::DANGEROUS,
        complexity: "O(1)",
        args: "args:oneof(host-port:block(host:string port:integer) no-one:block(no:NO one:ONE))"),
    cmd!("slaveof", 3, ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING, NOKEYS, "server", "1.0.0", "Make the server a replica of another instance, or promote it as master.", crate::replication::replica::replicaof;
        acl: acl::ADMIN | acl::DANGEROUS,
        complexity: "O(1)",
        args: "args:oneof(host-port:block(host:string port:integer) no-one:block(no:NO one:ONE))",
        doc_flags: doc::DEPRECATED,
        deprecated_since: "5.0.0",
        replaced_by: "`REPLICAOF`"),
    cmd!("failover", -1, ADMIN | NOSCRIPT | STALE, NOKEYS, "server", "6.2.0", "Start a coordinated failover between this server and one of its replicas.", crate::replication::failover::command;
        acl: acl::ADMIN | acl::DANGEROUS,
        complexity: "O(1)",
        args: "target:block=TO?(host:string port:integer force:FORCE?) abort:ABORT? milliseconds:integer=TIMEOUT?"),
    cmd!("psync", -3, ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI, NOKEYS, "server", "2.8.0", "Internal command used for replication", crate::replication::master::psync;
        args: "replicationid:string offset:integer"),
    cmd!("sync", 1, ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI, NOKEYS, "server", "1.0.0", "Internal command used for replication", crate::replication::master::psync),
    cmd!("replconf", -1, ADMIN | NOSCRIPT | LOADING_OK | STALE | ALLOW_BUSY, NOKEYS, "server", "3.0.0", "An internal command for configuring the replication stream", crate::replication::master::replconf;
        complexity: "O(1)",
        doc_flags: doc::SYSCMD),
    cmd!("debug", -2, ADMIN | NOSCRIPT | LOADING_OK | STALE | PROTECTED, NOKEYS, "server", "1.0.0", "A container for debugging commands", debug::debug;
        props: props::NO_TOUCH,
        complexity: "Depends on subcommand.",
        doc_flags: doc::SYSCMD),
    // Bloom filters, as redis-server with RedisBloom 2.8 lists them: module
    // commands (group "module", no ACL categories), arity -1 (they check counts
    // themselves), RW key specs even for reads. BACKEND and RAW are BlinkDB's.
    cmd!("bf.reserve", -1, W | MODULE, KEY1, "module", "1.0.0", "Creates a new Bloom Filter", bloom::reserve;
        complexity: "O(1)",
        args: "key:key error_rate:double capacity:integer expansion:integer=EXPANSION? nonscaling:NONSCALING? backend:oneof=BACKEND?(user:USER kernel:KERNEL) width:integer=RAW?"),
    cmd!("bf.add", -1, W | MODULE, KEY1, "module", "1.0.0", "Adds an item to a Bloom Filter", bloom::add;
        complexity: "O(k), where k is the number of hash functions used by the last sub-filter",
        args: "key:key item:string"),
    cmd!("bf.madd", -1, W | MODULE, KEY1, "module", "1.0.0", "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist", bloom::madd;
        complexity: "O(k * n), where k is the number of hash functions and n is the number of items",
        args: "key:key item:string*"),
    cmd!("bf.insert", -1, W | MODULE, KEY1, "module", "1.0.0", "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist", bloom::insert;
        complexity: "O(k * n), where k is the number of hash functions and n is the number of items",
        args: "key:key capacity:integer=CAPACITY? error:double=ERROR? expansion:integer=EXPANSION? nocreate:NOCREATE? nonscaling:NONSCALING? backend:oneof=BACKEND?(user:USER kernel:KERNEL) width:integer=RAW? items:ITEMS item:string*"),
    cmd!("bf.exists", -1, READONLY | FAST | MODULE, KEY1, "module", "1.0.0", "Checks whether an item exists in a Bloom Filter", bloom::exists;
        complexity: "O(k), where k is the number of hash functions used by the last sub-filter",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key item:string"),
    cmd!("bf.mexists", -1, READONLY | FAST | MODULE, KEY1, "module", "1.0.0", "Checks whether one or more items exist in a Bloom Filter", bloom::mexists;
        complexity: "O(k * n), where k is the number of hash functions and n is the number of items",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key item:string*"),
    cmd!("bf.info", -1, READONLY | FAST | MODULE, KEY1, "module", "1.0.0", "Returns information about a Bloom Filter", bloom::info;
        complexity: "O(1)",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key single_value:oneof?(capacity:CAPACITY size:SIZE filters:FILTERS items:ITEMS expansion:EXPANSION)"),
    cmd!("bf.card", -1, READONLY | FAST | MODULE, KEY1, "module", "2.4.4", "Returns the cardinality of a Bloom filter", bloom::card;
        complexity: "O(1)",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key"),
    cmd!("bf.scandump", -1, READONLY | FAST | MODULE, KEY1, "module", "1.0.0", "Begins an incremental save of the bloom filter", bloom::scandump;
        complexity: "O(n), where n is the capacity",
        keys: "RW,access,update index:1 range:0:1:0",
        args: "key:key iterator:integer"),
    cmd!("bf.loadchunk", -1, W | MODULE, KEY1, "module", "1.0.0", "Restores a filter previously saved using SCANDUMP", bloom::loadchunk;
        complexity: "O(n), where n is the capacity",
        args: "key:key iterator:integer data:string"),
    // pub/sub
    cmd!("subscribe", -2, PUBSUB | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "pubsub", "2.0.0", "Listen for messages published to the given channels", pubsub::subscribe;
        props: props::SUBSCRIBED_OK | props::SUBSCRIBES,
        complexity: "O(N) where N is the number of channels to subscribe to.",
        args: "channel:string*"),
    cmd!("unsubscribe", -1, PUBSUB | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "pubsub", "2.0.0", "Stop listening for messages posted to the given channels", pubsub::unsubscribe;
        props: props::SUBSCRIBED_OK,
        complexity: "O(N) where N is the number of clients already subscribed to a channel.",
        args: "channel:string?*"),
    cmd!("psubscribe", -2, PUBSUB | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "pubsub", "2.0.0", "Listen for messages published to channels matching the given patterns", pubsub::psubscribe;
        props: props::SUBSCRIBED_OK | props::SUBSCRIBES | props::PATTERN_CHANNELS,
        complexity: "O(N) where N is the number of patterns the client is already subscribed to.",
        args: "pattern:block*(pattern:pattern)"),
    cmd!("punsubscribe", -1, PUBSUB | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "pubsub", "2.0.0", "Stop listening for messages posted to channels matching the given patterns", pubsub::punsubscribe;
        props: props::SUBSCRIBED_OK,
        complexity: "O(N+M) where N is the number of patterns the client is already subscribed and M is the number of total patterns subscribed in the system (by any client).",
        args: "pattern:pattern?*"),
    cmd!("ssubscribe", -2, PUBSUB | NOSCRIPT | LOADING_OK | STALE, ALLKEYS, "pubsub", "7.0.0", "Listen for messages published to the given shard channels", pubsub::ssubscribe;
        props: props::SUBSCRIBED_OK | props::SHARD_CHANNELS | props::SUBSCRIBES,
        complexity: "O(N) where N is the number of shard channels to subscribe to.",
        keys: "not_key index:1 range:-1:1:0",
        args: "shardchannel:string*"),
    cmd!("sunsubscribe", -1, PUBSUB | NOSCRIPT | LOADING_OK | STALE, ALLKEYS, "pubsub", "7.0.0", "Stop listening for messages posted to the given shard channels", pubsub::sunsubscribe;
        props: props::SUBSCRIBED_OK | props::SHARD_CHANNELS,
        complexity: "O(N) where N is the number of clients already subscribed to a shard channel.",
        keys: "not_key index:1 range:-1:1:0",
        args: "shardchannel:string?*"),
    cmd!("publish", 3, PUBSUB | LOADING_OK | STALE | FAST | MAY_REPLICATE, NOKEYS, "pubsub", "2.0.0", "Post a message to a channel", pubsub::publish;
        props: props::PUBLISHES,
        complexity: "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).",
        args: "channel:string message:string"),
    cmd!("spublish", 3, PUBSUB | LOADING_OK | STALE | FAST | MAY_REPLICATE, KEY1, "pubsub", "7.0.0", "Post a message to a shard channel", pubsub::spublish;
        props: props::SHARD_CHANNELS | props::PUBLISHES,
        complexity: "O(N) where N is the number of clients subscribed to the receiving shard channel.",
        keys: "not_key index:1 range:0:1:0",
        args: "shardchannel:string message:string"),
    cmd!("pubsub", -2, CONTAINER, NOKEYS, "pubsub", "2.8.0", "A container for Pub/Sub commands", no_handler;
        complexity: "Depends on subcommand."),
    cmd!("pubsub|channels", -2, PUBSUB | LOADING_OK | STALE, NOKEYS, "pubsub", "2.8.0", "List active channels", pubsub::pubsub;
        complexity: "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)",
        args: "pattern:pattern?"),
    cmd!("pubsub|help", 2, LOADING_OK | STALE, NOKEYS, "pubsub", "6.2.0", "Show helpful text about the different subcommands", pubsub::pubsub;
        complexity: "O(1)"),
    cmd!("pubsub|numpat", 2, PUBSUB | LOADING_OK | STALE, NOKEYS, "pubsub", "2.8.0", "Get the count of unique patterns pattern subscriptions", pubsub::pubsub;
        complexity: "O(1)"),
    cmd!("pubsub|numsub", -2, PUBSUB | LOADING_OK | STALE, NOKEYS, "pubsub", "2.8.0", "Get the count of subscribers for channels", pubsub::pubsub;
        complexity: "O(N) for the NUMSUB subcommand, where N is the number of requested channels",
        args: "channel:string?*"),
    cmd!("pubsub|shardchannels", -2, PUBSUB | LOADING_OK | STALE, NOKEYS, "pubsub", "7.0.0", "List active shard channels", pubsub::pubsub;
        complexity: "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).",
        args: "pattern:pattern?"),
    cmd!("pubsub|shardnumsub", -2, PUBSUB | LOADING_OK | STALE, NOKEYS, "pubsub", "7.0.0", "Get the count of subscribers for shard channels", pubsub::pubsub;
        complexity: "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels",
        args: "shardchannel:string?*"),
    // scripting
    cmd!("eval", -3, NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | MAY_REPLICATE, NOKEYS, "scripting", "2.6.0", "Execute a Lua script server side", scripting::eval;
        props: props::RUNS_SCRIPT,
        acl: acl::SCRIPTING,
        complexity: "Depends on the script that is executed.",
        keys: "RW,access,update index:2 keynum:0:1:1 | We cannot tell how the keys will be used so we assume the worst, RW and UPDATE",
        args: "script:string numkeys:integer key:key?* arg:string?*"),
    cmd!("evalsha", -3, NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | MAY_REPLICATE, NOKEYS, "scripting", "2.6.0", "Execute a Lua script server side", scripting::evalsha;
        props: props::RUNS_SCRIPT,
        acl: acl::SCRIPTING,
        complexity: "Depends on the script that is executed.",
        keys: "RW,access,update index:2 keynum:0:1:1",
        args: "sha1:string numkeys:integer key:key?* arg:string?*"),
    cmd!("eval_ro", -3, READONLY | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS, NOKEYS, "scripting", "7.0.0", "Execute a read-only Lua script server side", scripting::eval_ro;
        props: props::RUNS_SCRIPT,
        acl: acl::SCRIPTING,
        complexity: "Depends on the script that is executed.",
        keys: "RO,access index:2 keynum:0:1:1 | We cannot tell how the keys will be used so we assume the worst, RO and ACCESS",
        args: "script:string numkeys:integer key:key?* arg:string?*"),
    cmd!("evalsha_ro", -3, READONLY | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS, NOKEYS, "scripting", "7.0.0", "Execute a read-only Lua script server side", scripting::evalsha_ro;
        props: props::RUNS_SCRIPT,
        acl: acl::SCRIPTING,
        complexity: "Depends on the script that is executed.",
        keys: "RO,access index:2 keynum:0:1:1",
        args: "sha1:string numkeys:integer key:key?* arg:string?*"),
    cmd!("script", -2, CONTAINER, NOKEYS, "scripting", "2.6.0", "A container for Lua scripts management commands", no_handler;
        complexity: "Depends on subcommand."),
    cmd!("script|exists", -3, NOSCRIPT, NOKEYS, "scripting", "2.6.0", "Check existence of scripts in the script cache.", scripting::script;
        acl: acl::SCRIPTING,
        complexity: "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).",
        args: "sha1:string*",
        tips: &["request_policy:all_shards", "response_policy:agg_logical_and"]),
    cmd!("script|flush", -2, NOSCRIPT, NOKEYS, "scripting", "2.6.0", "Remove all the scripts from the script cache.", scripting::script;
        acl: acl::SCRIPTING,
        complexity: "O(N) with N being the number of scripts in cache",
        args: "async:oneof?^6.2.0(async:ASYNC sync:SYNC)",
        history: &[("6.2.0", "Added the `ASYNC` and `SYNC` flushing mode modifiers.")],
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"]),
    cmd!("script|help", 2, LOADING_OK | STALE, NOKEYS, "scripting", "5.0.0", "Show helpful text about the different subcommands", scripting::script;
        acl: acl::SCRIPTING,
        complexity: "O(1)"),
    cmd!("script|kill", 2, NOSCRIPT | ALLOW_BUSY, NOKEYS, "scripting", "2.6.0", "Kill the script currently in execution.", scripting::script;
        acl: acl::SCRIPTING,
        complexity: "O(1)",
        tips: &["request_policy:all_shards", "response_policy:one_succeeded"]),
    cmd!("script|load", 3, NOSCRIPT | STALE, NOKEYS, "scripting", "2.6.0", "Load the specified Lua script into the script cache.", scripting::script;
        acl: acl::SCRIPTING,
        complexity: "O(N) with N being the length in bytes of the script body.",
        args: "script:string",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"]),    cmd!("fcall", -3, NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS, NOKEYS, "scripting", "7.0.0", "Invoke a function", scripting::fcall;
        props: props::RUNS_SCRIPT,
        acl: acl::SCRIPTING,
        complexity: "Depends on the function that is executed.",
        keys: "RW,access,update index:2 keynum:0:1:1 | We cannot tell how the keys will be used so we assume the worst, RW and UPDATE",
        args: "function:string numkeys:integer key:key?* arg:string?*"),
    cmd!("fcall_ro", -3, READONLY | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS, NOKEYS, "scripting", "7.0.0", "Invoke a read-only function", scripting::fcall_ro;
        props: props::RUNS_SCRIPT,
        acl: acl::SCRIPTING,
        complexity: "Depends on the function that is executed.",
        keys: "RO,access index:2 keynum:0:1:1 | We cannot tell how the keys will be used so we assume the worst, RO and ACCESS",
        args: "function:string numkeys:integer key:key?* arg:string?*"),
    cmd!("function", -2, CONTAINER, NOKEYS, "scripting", "7.0.0", "A container for function commands", no_handler;
        complexity: "Depends on subcommand."),
    cmd!("function|load", -3, WRITE | DENYOOM | NOSCRIPT, NOKEYS, "scripting", "7.0.0", "Create a function with the given arguments (name, code, description)", scripting::function;
        acl: acl::SCRIPTING,
        complexity: "O(1) (considering compilation time is redundant)",
        args: "replace:REPLACE? function-code:string",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    cmd!("function|delete", 3, WRITE | NOSCRIPT, NOKEYS, "scripting", "7.0.0", "Delete a function by name", scripting::function;
        acl: acl::SCRIPTING,
        complexity: "O(1)",
        args: "library-name:string",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    cmd!("function|flush", -2, WRITE | NOSCRIPT, NOKEYS, "scripting", "7.0.0", "Deleting all functions", scripting::function;
        acl: acl::SCRIPTING,
        complexity: "O(N) where N is the number of functions deleted",
        args: "async:oneof?(async:ASYNC sync:SYNC)",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    cmd!("function|list", -2, NOSCRIPT, NOKEYS, "scripting", "7.0.0", "List information about all the functions", scripting::function;
        acl: acl::SCRIPTING,
        complexity: "O(N) where N is the number of functions",
        args: "library-name-pattern:string=LIBRARYNAME? withcode:WITHCODE?",
        tips: &["nondeterministic_output_order"]),
    cmd!("function|stats", 2, NOSCRIPT | ALLOW_BUSY, NOKEYS, "scripting", "7.0.0", "Return information about the function currently running (name, description, duration)", scripting::function;
        acl: acl::SCRIPTING,
        complexity: "O(1)",
        tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"]),
    cmd!("function|kill", 2, NOSCRIPT | ALLOW_BUSY, NOKEYS, "scripting", "7.0.0", "Kill the function currently in execution.", scripting::function;
        acl: acl::SCRIPTING,
        complexity: "O(1)",
        tips: &["request_policy:all_shards", "response_policy:one_succeeded"]),
    cmd!("function|dump", 2, NOSCRIPT, NOKEYS, "scripting", "7.0.0", "Dump all functions into a serialized binary payload", scripting::function;
        acl: acl::SCRIPTING,
        complexity: "O(N) where N is the number of functions"),
    cmd!("function|restore", -3, WRITE | DENYOOM | NOSCRIPT, NOKEYS, "scripting", "7.0.0", "Restore all the functions on the given payload", scripting::function;
        acl: acl::SCRIPTING,
        complexity: "O(N) where N is the number of functions on the payload",
        args: "serialized-value:string policy:oneof?(flush:FLUSH append:APPEND replace:REPLACE)",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    cmd!("function|help", 2, LOADING_OK | STALE, NOKEYS, "scripting", "7.0.0", "Show helpful text about the different subcommands", scripting::function;
        acl: acl::SCRIPTING,
        complexity: "O(1)"),
    cmd!("cluster", -2, CONTAINER, NOKEYS, "cluster", "3.0.0", "A container for cluster commands", no_handler;
        complexity: "Depends on subcommand."),
    cmd!("cluster|addslots", -3, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "3.0.0", "Assign new hash slots to receiving node", cluster::addslots;
        complexity: "O(N) where N is the total number of hash slot arguments",
        args: "slot:integer*"),
    cmd!("cluster|addslotsrange", -4, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "7.0.0", "Assign new hash slots to receiving node", cluster::addslotsrange;
        complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments.",
        args: "start-slot_end-slot:block*(start-slot:integer end-slot:integer)"),
    cmd!("cluster|bumpepoch", 2, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "3.0.0", "Advance the cluster config epoch", cluster::bumpepoch;
        complexity: "O(1)",
        tips: &["nondeterministic_output"]),
    cmd!("cluster|count-failure-reports", 3, ADMIN | STALE, NOKEYS, "cluster", "3.0.0", "Return the number of failure reports active for a given node", cluster::count_failure_reports;
        complexity: "O(N) where N is the number of failure reports",
        args: "node-id:string",
        tips: &["nondeterministic_output"]),
    cmd!("cluster|countkeysinslot", 3, STALE, NOKEYS, "cluster", "3.0.0", "Return the number of local keys in the specified hash slot", cluster::countkeysinslot;
        complexity: "O(1)",
        args: "slot:integer"),
    cmd!("cluster|delslots", -3, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "3.0.0", "Set hash slots as unbound in receiving node", cluster::delslots;
        complexity: "O(N) where N is the total number of hash slot arguments",
        args: "slot:integer*"),
    cmd!("cluster|delslotsrange", -4, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "7.0.0", "Set hash slots as unbound in receiving node", cluster::delslotsrange;
        complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments.",
        args: "start-slot_end-slot:block*(start-slot:integer end-slot:integer)"),
    cmd!("cluster|failover", -2, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "3.0.0", "Forces a replica to perform a manual failover of its master.", cluster::failover;
        complexity: "O(1)",
        args: "options:oneof?(force:FORCE takeover:TAKEOVER)"),
    cmd!("cluster|flushslots", 2, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "3.0.0", "Delete a node's own slots information", cluster::flushslots;
        complexity: "O(1)"),
    cmd!("cluster|forget", 3, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "3.0.0", "Remove a node from the nodes table", cluster::forget;
        complexity: "O(1)",
        args: "node-id:string"),
    cmd!("cluster|getkeysinslot", 4, STALE, NOKEYS, "cluster", "3.0.0", "Return local key names in the specified hash slot", cluster::getkeysinslot;
        complexity: "O(log(N)) where N is the number of requested keys",
        args: "slot:integer count:integer",
        tips: &["nondeterministic_output"]),
    cmd!("cluster|help", 2, LOADING_OK | STALE, NOKEYS, "cluster", "5.0.0", "Show helpful text about the different subcommands", cluster::help;
        complexity: "O(1)"),
    cmd!("cluster|info", 2, STALE, NOKEYS, "cluster", "3.0.0", "Provides info about Redis Cluster node state", cluster::info;
        complexity: "O(1)",
        tips: &["nondeterministic_output"]),
    cmd!("cluster|keyslot", 3, STALE, NOKEYS, "cluster", "3.0.0", "Returns the hash slot of the specified key", cluster::keyslot;
        complexity: "O(N) where N is the number of bytes in the key",
        args: "key:string"),
    cmd!("cluster|links", 2, STALE, NOKEYS, "cluster", "7.0.0", "Returns a list of all TCP links to and from peer nodes in cluster", cluster::links;
        complexity: "O(N) where N is the total number of Cluster nodes",
        tips: &["nondeterministic_output"]),
    cmd!("cluster|meet", -4, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "3.0.0", "Force a node cluster to handshake with another node", cluster::meet;
        complexity: "O(1)",
        args: "ip:string port:integer cluster_bus_port:integer?^4.0.0",
        history: &[("4.0.0", "Added the optional `cluster_bus_port` argument.")]),
    cmd!("cluster|myid", 2, STALE, NOKEYS, "cluster", "3.0.0", "Return the node id", cluster::myid;
        complexity: "O(1)"),
    cmd!("cluster|nodes", 2, STALE, NOKEYS, "cluster", "3.0.0", "Get Cluster config for the node", cluster::nodes;
        complexity: "O(N) where N is the total number of Cluster nodes",
        tips: &["nondeterministic_output"]),
    cmd!("cluster|replicas", 3, ADMIN | STALE, NOKEYS, "cluster", "5.0.0", "List replica nodes of the specified master node", cluster::replicas;
        complexity: "O(1)",
        args: "node-id:string",
        tips: &["nondeterministic_output"]),
    cmd!("cluster|replicate", 3, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "3.0.0", "Reconfigure a node as a replica of the specified master node", cluster::replicate;
        complexity: "O(1)",
        args: "node-id:string"),
    cmd!("cluster|reset", -2, ADMIN | NOSCRIPT | STALE, NOKEYS, "cluster", "3.0.0", "Reset a Redis Cluster node", cluster::reset;
        complexity: "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.",
        args: "hard_soft:oneof?(hard:HARD soft:SOFT)"),
    cmd!("cluster|saveconfig", 2, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "3.0.0", "Forces the node to save cluster state on disk", cluster::saveconfig;
        complexity: "O(1)"),
    cmd!("cluster|set-config-epoch", 3, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "3.0.0", "Set the configuration epoch in a new node", cluster::set_config_epoch;
        complexity: "O(1)",
        args: "config-epoch:integer"),
    cmd!("cluster|setslot", -4, ADMIN | STALE | NO_ASYNC_LOADING, NOKEYS, "cluster", "3.0.0", "Bind a hash slot to a specific node", cluster::setslot;
        complexity: "O(1)",
        args: "slot:integer subcommand:oneof(node-id:string=IMPORTING node-id:string=MIGRATING node-id:string=NODE stable:STABLE)"),
    cmd!("cluster|shards", 2, STALE, NOKEYS, "cluster", "7.0.0", "Get array of cluster slots to node mappings", cluster::shards;
        complexity: "O(N) where N is the total number of cluster nodes",
        tips: &["nondeterministic_output"]),
    cmd!("cluster|slaves", 3, ADMIN | STALE, NOKEYS, "cluster", "3.0.0", "List replica nodes of the specified master node", cluster::slaves;
        complexity: "O(1)",
        args: "node-id:string",
        tips: &["nondeterministic_output"],
        doc_flags: doc::DEPRECATED,
        deprecated_since: "5.0.0",
        replaced_by: "`CLUSTER REPLICAS`"),
    cmd!("cluster|slots", 2, STALE, NOKEYS, "cluster", "3.0.0", "Get array of Cluster slot to node mappings", cluster::slots;
        complexity: "O(N) where N is the total number of Cluster nodes",
        history: &[("4.0.0", "Added node IDs."), ("7.0.0", "Added additional networking metadata field.")],
        tips: &["nondeterministic_output"],
        doc_flags: doc::DEPRECATED,
        deprecated_since: "7.0.0",
        replaced_by: "`CLUSTER SHARDS`"),
    cmd!("asking", 1, FAST, NOKEYS, "cluster", "3.0.0", "Sent by cluster clients after an -ASK redirect", cluster::asking;
        props: props::SETS_ASKING,
        acl: acl::CONNECTION,
        complexity: "O(1)"),
    cmd!("readonly", 1, LOADING_OK | STALE | FAST, NOKEYS, "cluster", "3.0.0", "Enables read queries for a connection to a cluster replica node", cluster::readonly;
        acl: acl::CONNECTION,
        complexity: "O(1)"),
    cmd!("readwrite", 1, LOADING_OK | STALE | FAST, NOKEYS, "cluster", "3.0.0", "Disables read queries for a connection to a cluster replica node", cluster::readwrite;
        acl: acl::CONNECTION,
        complexity: "O(1)"),
];

/// Records only the log replay may run (clients get "unknown command"):
/// not listed by COMMAND.
pub static INTERNAL: &[CommandSpec] = &[
    cmd!(
        "blinkdb.bfbind",
        -2,
        W | LOADING_OK,
        KEY1,
        "bf",
        "0.1.0",
        "Binds a key to its Bloom filter files (log replay only).",
        bloom::internal_bind
    ),
    cmd!(
        "blinkdb.bfloadhdr",
        -2,
        W | LOADING_OK,
        KEY1,
        "bf",
        "0.1.0",
        "Replays a BF.LOADCHUNK header step (log replay only).",
        bloom::internal_load_header
    ),
    cmd!(
        "blinkdb.bfvalues",
        -2,
        W | LOADING_OK,
        KEY1,
        "bf",
        "0.1.0",
        "Replays stored kernel filter values (log replay only).",
        bloom::internal_values
    ),
];

/// Finds an internal (replay-only) record name, ignoring ASCII case.
pub fn lookup_internal(name: &[u8]) -> Option<&'static CommandSpec> {
    INTERNAL
        .iter()
        .find(|c| c.name.as_bytes().eq_ignore_ascii_case(name))
}

struct Index {
    top: HashMap<&'static str, &'static CommandSpec>,
    /// Subcommands by full name (`config|get`).
    sub: HashMap<&'static str, &'static CommandSpec>,
}

fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| {
        let (subs, tops): (Vec<_>, Vec<_>) = COMMANDS.iter().partition(|c| c.is_subcommand());
        Index {
            top: tops.into_iter().map(|c| (c.name, c)).collect(),
            sub: subs.into_iter().map(|c| (c.name, c)).collect(),
        }
    })
}

/// `name` lowercased into `buf`, if it fits and is UTF-8.
fn lowercase<'a>(name: &[u8], buf: &'a mut [u8; 64]) -> Option<&'a str> {
    let lower = buf.get_mut(..name.len())?;
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    std::str::from_utf8(lower).ok()
}

/// The name bytes (as sent, up to 16) a thread looked up last, and what they
/// found: clients repeat a command, and the same bytes find the same entry.
type LastLookup = (usize, [u8; 16], Option<&'static CommandSpec>);

thread_local! {
    static LAST_LOOKUP: std::cell::Cell<LastLookup> = const { std::cell::Cell::new((0, [0; 16], None)) };
}

/// Finds a top-level command by name, ignoring ASCII case.
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    let short = name.len() <= 16;
    if short {
        let (len, bytes, spec) = LAST_LOOKUP.with(|l| l.get());
        if len == name.len() && spec.is_some() && bytes[..len] == *name {
            return spec;
        }
    }
    let mut buf = [0u8; 64];
    let found = lowercase(name, &mut buf).and_then(|n| index().top.get(n).copied());
    if short && found.is_some() {
        let mut bytes = [0; 16];
        bytes[..name.len()].copy_from_slice(name);
        LAST_LOOKUP.with(|l| l.set((name.len(), bytes, found)));
    }
    found
}

/// Finds a subcommand of `container` by its name, ignoring ASCII case.
pub fn lookup_sub(container: &CommandSpec, sub: &[u8]) -> Option<&'static CommandSpec> {
    let mut full = [0u8; 64];
    let base = container.name.len();
    if base + 1 + sub.len() > full.len() {
        return None;
    }
    full[..base].copy_from_slice(container.name.as_bytes());
    full[base] = b'|';
    full[base + 1..base + 1 + sub.len()].copy_from_slice(sub);
    let mut buf = [0u8; 64];
    lowercase(&full[..base + 1 + sub.len()], &mut buf).and_then(|n| index().sub.get(n).copied())
}

/// The command an argument vector runs: a container's subcommand when there
/// is one (`Err(container)` when the subcommand is unknown).
pub fn resolve(args: &[&[u8]]) -> Option<Result<&'static CommandSpec, &'static CommandSpec>> {
    let spec = lookup(args.first()?)?;
    if !spec.has(CONTAINER) || args.len() < 2 {
        return Some(Ok(spec));
    }
    Some(lookup_sub(spec, args[1]).ok_or(spec))
}

/// A command by its full name (`get`, `config|get`), as COMMAND INFO takes it.
pub fn lookup_full(name: &[u8]) -> Option<&'static CommandSpec> {
    let mut parts = name.split(|&c| c == b'|');
    let base = lookup(parts.next()?)?;
    match (parts.next(), parts.next()) {
        (None, _) => Some(base),
        (Some(sub), None) if base.has(CONTAINER) => lookup_sub(base, sub),
        _ => None,
    }
}

/// The top-level commands (COMMAND, COMMAND COUNT).
pub fn top_level() -> impl Iterator<Item = &'static CommandSpec> {
    COMMANDS.iter().filter(|c| !c.is_subcommand())
}

/// A container's subcommands (they follow it in the table).
pub fn subcommands(container: &'static CommandSpec) -> &'static [CommandSpec] {
    let Some(at) = container.index() else {
        return &[];
    };
    let rest = &COMMANDS[at + 1..];
    let n = rest
        .iter()
        .take_while(|c| {
            c.name
                .strip_prefix(container.name)
                .is_some_and(|s| s.starts_with('|'))
        })
        .count();
    &rest[..n]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_lookups_find_what_a_fresh_one_finds() {
        let name = |n: &[u8]| lookup(n).map(|c| c.name);
        for n in [
            &b"GET"[..],
            b"GET",
            b"get",
            b"GETX",
            b"GET",
            b"SET",
            b"GE",
            b"GETRANGE",
            b"GETRANGE",
            b"getrange1",
            b"zrangebyscore",
            b"ZRANGEBYSCORExx",
        ] {
            let fresh = index()
                .top
                .get(String::from_utf8_lossy(n).to_lowercase().as_str())
                .map(|c| c.name);
            assert_eq!(name(n), fresh, "{}", String::from_utf8_lossy(n));
        }
    }

    #[test]
    fn every_entry_parses_and_subcommands_follow_their_container() {
        for c in COMMANDS {
            assert_eq!(c.name, c.name.to_ascii_lowercase());
            super::super::spec::parse_key_specs(c.keys)
                .unwrap_or_else(|e| panic!("{}: {e}", c.name));
            super::super::spec::parse_args(c.args).unwrap_or_else(|e| panic!("{}: {e}", c.name));
            if c.is_subcommand() {
                let container = lookup(c.base_name().as_bytes()).expect("container exists");
                assert!(container.has(CONTAINER), "{}", c.name);
                assert!(
                    subcommands(container).iter().any(|s| s.name == c.name),
                    "{} is not right after its container",
                    c.name
                );
            }
            if c.has(CONTAINER) {
                assert!(!subcommands(c).is_empty(), "{}", c.name);
            }
        }
        let names: std::collections::HashSet<_> = COMMANDS.iter().map(|c| c.name).collect();
        assert_eq!(names.len(), COMMANDS.len(), "duplicate names");
    }

    #[test]
    fn lookups() {
        assert_eq!(lookup(b"GeT").unwrap().name, "get");
        assert!(lookup(b"config|get").is_none());
        let config = lookup(b"config").unwrap();
        assert_eq!(lookup_sub(config, b"GET").unwrap().name, "config|get");
        assert!(lookup_sub(config, b"nope").is_none());
        assert_eq!(lookup_full(b"CONFIG|get").unwrap().name, "config|get");
        assert!(lookup_full(b"get|key").is_none());
        assert!(lookup_full(b"config|get|key").is_none());
        let get = lookup(b"get").unwrap();
        assert_eq!(COMMANDS[get.index().unwrap()].name, "get");
        assert!(INTERNAL[0].index().is_none());
        assert_eq!(get.acl_categories(), acl::READ | acl::STRING | acl::FAST);
    }
}
