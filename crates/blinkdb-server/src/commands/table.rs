//! The command table: what an entry holds (`CommandSpec`: what Redis 7.0.15's
//! COMMAND reports about a command, arity, flags, key positions and key specs,
//! ACL categories, docs, plus the properties the server acts on), and COMMANDS,
//! gathered from the families. Each family module declares its own entries
//! with `cmd!` in a `COMMANDS` list of its own (`use super::table::prelude::*`);
//! adding a command touches its family's module only. Subcommands are entries
//! of their own named `container|sub`, right after their container. The
//! key-spec and argument syntax is described in `spec.rs`.

use super::{
    access, acl as acl_family, bitfield, bitops, bloom, bpop, command, conn, debug, dump, geo,
    hash, hash_ttl, hyperloglog, keys, latency, lcs, list, migrate, monitor, multi, object, pubsub,
    scripting, server, set, sketch, slowlog, sort, stream, stream_group, stream_info, strings,
    zrange, zset, zsetops, Handler,
};
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
/// A write that may add data.
pub const W: u32 = WRITE | DENYOOM;

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
    /// With RUNS_SCRIPT: the script is a library function named by its
    /// first argument (FCALL, FCALL_RO).
    pub const CALLS_FUNCTION: u32 = 1 << 15;
    /// With RUNS_SCRIPT: the script is named by its SHA1 in the cache
    /// (EVALSHA, EVALSHA_RO).
    pub const BY_SHA: u32 = 1 << 16;
    /// Leaves a CLIENT CACHING yes/no in force for the next command (CLIENT
    /// and its subcommands, as Redis's resetClient spares clientCommand).
    pub const KEEPS_CACHING: u32 = 1 << 17;
    /// A write whose effect on its one key, a count-min sketch, depends only
    /// on that sketch and the arguments: replay skips it when the key's
    /// sketch file covers its log position (persistence/sketch_replay.rs).
    pub const FILE_COVERED: u32 = 1 << 18;
    /// Makes its key from a payload (RESTORE): in the form `RESTORE key 0
    /// payload` (a rewrite's record of a sketch) it is covered as above.
    pub const RESTORES_PAYLOAD: u32 = 1 << 19;
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

#[derive(Clone, Copy)]
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

/// A container's handler: it runs only when the subcommand is unknown.
pub const NO_HANDLER: Handler = no_handler;

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
        handler: NO_HANDLER,
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

    /// The container's name for a subcommand, else the name.
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

/// One entry: `cmd!(name, arity, flags, keys, group, since, summary, handler;
/// field: value, ...)`. The values are read with the table's names (flags,
/// `acl::*`, `props::*`, key ranges) in scope, whatever the family module
/// itself defines under those names.
macro_rules! cmd {
    ($name:literal, $arity:expr, $flags:expr, $keys:expr, $group:literal, $since:literal, $summary:literal, $h:path $(; $($field:ident : $val:expr),* $(,)?)?) => {
        $crate::commands::table::CommandSpec {
            name: $name,
            arity: $arity,
            flags: { #[allow(unused_imports)] use $crate::commands::table::prelude::*; $flags },
            first_key: { #[allow(unused_imports)] use $crate::commands::table::prelude::*; $keys.0 },
            last_key: { #[allow(unused_imports)] use $crate::commands::table::prelude::*; $keys.1 },
            step: { #[allow(unused_imports)] use $crate::commands::table::prelude::*; $keys.2 },
            group: $group,
            since: $since,
            summary: $summary,
            handler: { #[allow(unused_imports)] use $crate::commands::table::prelude::*; $h },
            $($($field: { #[allow(unused_imports)] use $crate::commands::table::prelude::*; $val },)*)?
            ..$crate::commands::table::CommandSpec::BASE
        }
    };
}
pub(crate) use cmd;

/// Key ranges (first, last, step) of the common cases.
pub const NOKEYS: (i32, i32, i32) = (0, 0, 0);
pub const KEY1: (i32, i32, i32) = (1, 1, 1);
pub const ALLKEYS: (i32, i32, i32) = (1, -1, 1);

/// The names a `cmd!` entry's values are read with.
pub mod prelude {
    pub use super::{
        acl, doc, props, CommandSpec, ADMIN, ALLKEYS, ALLOW_BUSY, ASKING, BLOCKING, CONTAINER,
        DENYOOM, FAST, KEY1, LOADING_OK, MAY_REPLICATE, MODULE, NOKEYS, NOSCRIPT, NO_ASYNC_LOADING,
        NO_AUTH, NO_HANDLER, NO_MANDATORY_KEYS, NO_MULTI, PROTECTED, PROTECTED_MODULE, PUBSUB,
        READONLY, SKIP_MONITOR, SKIP_SLOWLOG, STALE, TX_CONTROL, W, WRITE,
    };
}

const fn total(families: &[&[CommandSpec]]) -> usize {
    let (mut n, mut i) = (0, 0);
    while i < families.len() {
        n += families[i].len();
        i += 1;
    }
    n
}

/// The families' lists one after the other (a const fn, so COMMANDS is one
/// static array and an entry's position is its address's offset).
const fn gather<const N: usize>(families: &[&[CommandSpec]]) -> [CommandSpec; N] {
    let mut all = [CommandSpec::BASE; N];
    let (mut k, mut i) = (0, 0);
    while i < families.len() {
        let mut j = 0;
        while j < families[i].len() {
            all[k] = families[i][j];
            k += 1;
            j += 1;
        }
        i += 1;
    }
    all
}

/// Each family's entries, in the order COMMAND and INFO commandstats list them.
const FAMILIES: &[&[CommandSpec]] = &[
    strings::COMMANDS,
    lcs::COMMANDS,
    bitops::COMMANDS,
    bitfield::COMMANDS,
    hash::COMMANDS,
    hash_ttl::COMMANDS,
    set::COMMANDS,
    list::COMMANDS,
    bpop::COMMANDS,
    hyperloglog::COMMANDS,
    zset::COMMANDS,
    zrange::COMMANDS,
    zsetops::COMMANDS,
    stream::COMMANDS,
    stream_info::COMMANDS,
    stream_group::COMMANDS,
    geo::COMMANDS,
    sort::COMMANDS,
    keys::COMMANDS,
    access::COMMANDS,
    dump::COMMANDS,
    migrate::COMMANDS,
    conn::COMMANDS,
    multi::COMMANDS,
    command::COMMANDS,
    acl_family::COMMANDS,
    server::COMMANDS,
    object::COMMANDS,
    slowlog::COMMANDS,
    latency::COMMANDS,
    monitor::COMMANDS,
    crate::replication::commands::COMMANDS,
    debug::COMMANDS,
    bloom::COMMANDS,
    // RedisBloom's other structures, one list each (commands/sketch/).
    sketch::cuckoo::COMMANDS,
    sketch::cms::COMMANDS,
    sketch::topk::COMMANDS,
    sketch::tdigest::COMMANDS,
    sketch::blink::COMMANDS,
    pubsub::COMMANDS,
    scripting::COMMANDS,
    crate::cluster::commands::COMMANDS,
];

/// Every command, gathered from the families at compile time; a subcommand
/// follows its container.
pub static COMMANDS: [CommandSpec; total(FAMILIES)] = gather(FAMILIES);

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
        let (subs, tops): (Vec<&CommandSpec>, Vec<_>) =
            COMMANDS.iter().partition(|c| c.is_subcommand());
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
        for c in COMMANDS.iter() {
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
