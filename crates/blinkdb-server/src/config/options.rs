//! The option table: every option with its default, whether CONFIG SET may
//! change it and its kind; the older names Redis still accepts; `--help`'s
//! option list, described from config/blinkdb.conf.

#[derive(Clone, Copy, PartialEq)]
pub enum Kind {
    Bool,
    Int(i64, i64),
    /// A byte size with k/kb/m/mb/g/gb suffixes, within bounds.
    Memory(u64, u64),
    /// A byte size, or a percentage of `maxmemory` written `N%` (0 to 100).
    MemoryOrPercent,
    Str,
    Enum(&'static [&'static str]),
    /// File permission bits, written in octal as in redis.conf.
    Octal,
    /// `client-output-buffer-limit`: classes with limits; a value replaces only
    /// the classes it names (`limits.rs`).
    OutputLimits,
    /// `notify-keyspace-events`: Redis's flag letters, shown in its canonical
    /// order (`events.rs`).
    KeyspaceEvents,
    /// `shutdown-on-sigterm`/`-sigint`: SHUTDOWN's flags (`ShutdownFlags`).
    ShutdownFlags,
}

pub struct OptionDef {
    pub name: &'static str,
    pub default: &'static str,
    /// Can CONFIG SET change it while running?
    pub mutable: bool,
    pub kind: Kind,
}

const fn opt(name: &'static str, default: &'static str, mutable: bool, kind: Kind) -> OptionDef {
    OptionDef {
        name,
        default,
        mutable,
        kind,
    }
}

const MIB: u64 = 1 << 20;
const I64: u64 = i64::MAX as u64;
const U64: u64 = u64::MAX;
/// Log positions keep 40 bits of offset, half of it for one segment.
const SEGMENT_MAX: u64 = (1 << 39) - 1;

pub static OPTIONS: &[OptionDef] = &[
    opt("bind", "127.0.0.1", true, Kind::Str),
    opt("port", "6379", true, Kind::Int(0, 65535)),
    opt("dir", "./data", false, Kind::Str),
    opt("databases", "16", false, Kind::Int(1, 1_000_000)),
    opt(
        "loglevel",
        "notice",
        true,
        Kind::Enum(&["debug", "verbose", "notice", "warning", "nothing"]),
    ),
    opt("logfile", "", false, Kind::Str),
    opt("pidfile", "", false, Kind::Str),
    opt("requirepass", "", true, Kind::Str),
    opt("aclfile", "", false, Kind::Str),
    opt(
        "acl-pubsub-default",
        "resetchannels",
        true,
        Kind::Enum(&["allchannels", "resetchannels"]),
    ),
    opt("acllog-max-len", "128", true, Kind::Int(0, i64::MAX)),
    opt("protected-mode", "yes", true, Kind::Bool),
    // TLS (tls/): Redis 7.0's options and defaults. Values rustls cannot
    // honour (TLSv1/1.1, CBC suites, DH params, encrypted keys) are refused
    // by tls::CONFIG_CHECKS or when the contexts are built.
    opt("tls-port", "0", true, Kind::Int(0, 65535)),
    opt("tls-cert-file", "", true, Kind::Str),
    opt("tls-key-file", "", true, Kind::Str),
    opt("tls-key-file-pass", "", true, Kind::Str),
    opt("tls-client-cert-file", "", true, Kind::Str),
    opt("tls-client-key-file", "", true, Kind::Str),
    opt("tls-client-key-file-pass", "", true, Kind::Str),
    opt("tls-dh-params-file", "", true, Kind::Str),
    opt("tls-ca-cert-file", "", true, Kind::Str),
    opt("tls-ca-cert-dir", "", true, Kind::Str),
    opt(
        "tls-auth-clients",
        "yes",
        true,
        Kind::Enum(&["no", "yes", "optional"]),
    ),
    opt("tls-replication", "no", true, Kind::Bool),
    opt("tls-cluster", "no", true, Kind::Bool),
    opt("tls-protocols", "", true, Kind::Str),
    opt("tls-ciphers", "", true, Kind::Str),
    opt("tls-ciphersuites", "", true, Kind::Str),
    opt("tls-prefer-server-ciphers", "no", true, Kind::Bool),
    opt("tls-session-caching", "yes", true, Kind::Bool),
    opt(
        "tls-session-cache-size",
        "20480",
        true,
        Kind::Int(0, i32::MAX as i64),
    ),
    opt(
        "tls-session-cache-timeout",
        "300",
        true,
        Kind::Int(0, i32::MAX as i64),
    ),
    // BlinkDB's: a client that has not finished its handshake by then is dropped.
    opt(
        "tls-handshake-timeout",
        "10",
        true,
        Kind::Int(1, i32::MAX as i64),
    ),
    opt("maxclients", "10000", true, Kind::Int(1, 1_000_000)),
    opt("timeout", "0", true, Kind::Int(0, i32::MAX as i64)),
    opt("tcp-backlog", "511", false, Kind::Int(0, i32::MAX as i64)),
    opt("tcp-keepalive", "300", true, Kind::Int(0, i32::MAX as i64)),
    opt("io-threads", "0", false, Kind::Int(0, 1024)),
    opt("busy-poll-us", "50", true, Kind::Int(0, 1_000_000)),
    opt("unixsocket", "", false, Kind::Str),
    opt("unixsocketperm", "0", false, Kind::Octal),
    opt("proto-max-bulk-len", "512mb", true, Kind::Memory(MIB, I64)),
    opt(
        "client-query-buffer-limit",
        "1gb",
        true,
        Kind::Memory(MIB, I64),
    ),
    opt("hz", "10", true, Kind::Int(0, i32::MAX as i64)),
    opt(
        "client-output-buffer-limit",
        super::limits::DEFAULT,
        true,
        Kind::OutputLimits,
    ),
    opt("notify-keyspace-events", "", true, Kind::KeyspaceEvents),
    // What SIGINT and SIGTERM do, as SHUTDOWN's flags (server.rs).
    opt("shutdown-on-sigint", "default", true, Kind::ShutdownFlags),
    opt("shutdown-on-sigterm", "default", true, Kind::ShutdownFlags),
    opt("repl-backlog-size", "1mb", true, Kind::Memory(0, I64)),
    opt("repl-timeout", "60", true, Kind::Int(1, i32::MAX as i64)),
    // Full sync to replicas (replication/diskless.rs): the RDB streamed to
    // the sockets (EOF-marked), replicas arriving within the delay sharing it.
    opt("repl-diskless-sync", "no", true, Kind::Bool),
    opt(
        "repl-diskless-sync-delay",
        "5",
        true,
        Kind::Int(0, i32::MAX as i64),
    ),
    opt(
        "repl-diskless-sync-max-replicas",
        "0",
        true,
        Kind::Int(0, i32::MAX as i64),
    ),
    opt(
        "repl-ping-replica-period",
        "10",
        true,
        Kind::Int(1, i32::MAX as i64),
    ),
    // The replica side (replication/replica.rs). `replicaof` is set by
    // REPLICAOF, not CONFIG SET (immutable, as in Redis).
    opt("replicaof", "", false, Kind::Str),
    opt("masterauth", "", true, Kind::Str),
    opt("masteruser", "", true, Kind::Str),
    opt("replica-read-only", "yes", true, Kind::Bool),
    opt("replica-serve-stale-data", "yes", true, Kind::Bool),
    opt(
        "replica-priority",
        "100",
        true,
        Kind::Int(0, i32::MAX as i64),
    ),
    opt("replica-announced", "yes", true, Kind::Bool),
    opt(
        "min-replicas-to-write",
        "0",
        true,
        Kind::Int(0, i32::MAX as i64),
    ),
    opt(
        "min-replicas-max-lag",
        "10",
        true,
        Kind::Int(0, i32::MAX as i64),
    ),
    // A full sync's RDB: spooled to a file then loaded (disabled), or
    // parsed from the socket (replication/diskless_load.rs).
    opt(
        "repl-diskless-load",
        "disabled",
        true,
        Kind::Enum(&["disabled", "on-empty-db", "swapdb"]),
    ),
    opt(
        "tracking-table-max-keys",
        "1000000",
        true,
        Kind::Int(0, i64::MAX),
    ),
    opt("cluster-enabled", "no", false, Kind::Bool),
    opt("cluster-config-file", "nodes.conf", false, Kind::Str),
    opt(
        "cluster-node-timeout",
        "15000",
        true,
        Kind::Int(0, i64::MAX),
    ),
    opt("cluster-port", "0", false, Kind::Int(0, 65535)),
    opt("cluster-require-full-coverage", "yes", true, Kind::Bool),
    opt("cluster-allow-reads-when-down", "no", true, Kind::Bool),
    opt(
        "cluster-allow-pubsubshard-when-down",
        "yes",
        true,
        Kind::Bool,
    ),
    opt(
        "cluster-replica-validity-factor",
        "10",
        true,
        Kind::Int(0, i32::MAX as i64),
    ),
    opt("cluster-replica-no-failover", "no", true, Kind::Bool),
    opt(
        "cluster-migration-barrier",
        "1",
        true,
        Kind::Int(0, i32::MAX as i64),
    ),
    opt("cluster-allow-replica-migration", "yes", true, Kind::Bool),
    opt("cluster-announce-ip", "", true, Kind::Str),
    opt("cluster-announce-port", "0", true, Kind::Int(0, 65535)),
    opt("cluster-announce-bus-port", "0", true, Kind::Int(0, 65535)),
    opt("save", "3600 1 300 100 60 10000", true, Kind::Str),
    // CONFIG SET turns it on (with a rewrite) and off (persistence.rs).
    opt("appendonly", "yes", true, Kind::Bool),
    opt(
        "appendfsync",
        "everysec",
        true,
        // In Redis's order, which its error text lists.
        Kind::Enum(&["everysec", "always", "no"]),
    ),
    opt("appenddirname", "appendonlydir", false, Kind::Str),
    opt("appendfilename", "appendonly.aof", false, Kind::Str),
    opt("dbfilename", "dump.rdb", true, Kind::Str),
    opt("rdbcompression", "yes", true, Kind::Bool),
    opt("rdbchecksum", "yes", true, Kind::Bool),
    // Mutable: the next incr file, the next write, the next read, the next
    // load (persistence::LOG_ON_SET).
    opt("segment-size", "64mb", true, Kind::Memory(0, SEGMENT_MAX)),
    opt("blob-threshold", "16kb", true, Kind::Memory(0, U64)),
    opt("verify-blobs-on-read", "yes", true, Kind::Bool),
    opt("aof-load-truncated", "yes", true, Kind::Bool),
    opt("aof-load-corrupt", "no", true, Kind::Bool),
    // CONFIG SET takes only the value in force (persistence::fixed_on_set).
    opt("aof-batch-checksums", "yes", true, Kind::Bool),
    opt("aof-use-rdb-preamble", "yes", true, Kind::Bool),
    opt(
        "auto-aof-rewrite-percentage",
        "100",
        true,
        Kind::Int(0, i32::MAX as i64),
    ),
    opt(
        "auto-aof-rewrite-min-size",
        "64mb",
        true,
        Kind::Memory(0, I64),
    ),
    opt("maxmemory", "0", true, Kind::Memory(0, U64)),
    opt("maxmemory-clients", "0", true, Kind::MemoryOrPercent),
    opt(
        "maxmemory-policy",
        "noeviction",
        true,
        // Redis's policies in Redis's order (sampled key eviction,
        // blinkdb-engine's evict_sampled.rs), then cache mode's.
        Kind::Enum(&[
            "volatile-lru",
            "volatile-lfu",
            "volatile-random",
            "volatile-ttl",
            "allkeys-lru",
            "allkeys-lfu",
            "allkeys-random",
            "noeviction",
            "allkeys-fifo",
        ]),
    ),
    opt(
        "maxmemory-samples",
        "5",
        true,
        Kind::Int(1, i32::MAX as i64),
    ),
    opt("maxmemory-eviction-tenacity", "10", true, Kind::Int(0, 100)),
    opt("lfu-log-factor", "10", true, Kind::Int(0, i32::MAX as i64)),
    opt("lfu-decay-time", "1", true, Kind::Int(0, i32::MAX as i64)),
    opt("max-disk-size", "0", true, Kind::Memory(0, U64)),
    opt("bf-max-memory", "0", true, Kind::Memory(0, U64)),
    opt("sketch-max-memory", "1gb", true, Kind::Memory(0, U64)),
    opt(
        "bf-default-backend",
        "user",
        true,
        Kind::Enum(&["user", "kernel"]),
    ),
    // Fixed at start: CONFIG SET takes the current value only
    // (persistence::FIXED_ON_SET says why, as config/blinkdb.conf).
    opt("bpf-pin-root", "/sys/fs/bpf/blinkdb", true, Kind::Str),
    opt("existence-filter-size", "0", true, Kind::Memory(0, U64)),
    opt("busy-reply-threshold", "5000", true, Kind::Int(0, i64::MAX)),
    opt("lua-memory-limit", "1gb", true, Kind::Memory(0, U64)),
    opt(
        "hash-max-listpack-entries",
        "512",
        true,
        Kind::Int(0, i64::MAX),
    ),
    opt("hash-max-listpack-value", "64", true, Kind::Memory(0, I64)),
    opt(
        "set-max-intset-entries",
        "512",
        true,
        Kind::Int(0, i64::MAX),
    ),
    opt(
        "zset-max-listpack-entries",
        "128",
        true,
        Kind::Int(0, i64::MAX),
    ),
    opt("zset-max-listpack-value", "64", true, Kind::Memory(0, I64)),
    opt(
        "list-max-listpack-size",
        "-2",
        true,
        Kind::Int(i32::MIN as i64, i32::MAX as i64),
    ),
    opt(
        "list-compress-depth",
        "0",
        true,
        Kind::Int(0, i32::MAX as i64),
    ),
    opt("stream-node-max-bytes", "4096", true, Kind::Memory(0, I64)),
    opt(
        "stream-node-max-entries",
        "100",
        true,
        Kind::Int(0, i64::MAX),
    ),
    opt(
        "slowlog-log-slower-than",
        "10000",
        true,
        Kind::Int(-1, i64::MAX),
    ),
    opt("slowlog-max-len", "128", true, Kind::Int(0, i64::MAX)),
    opt(
        "latency-monitor-threshold",
        "0",
        true,
        Kind::Int(0, i64::MAX),
    ),
    opt("latency-tracking", "yes", true, Kind::Bool),
    opt(
        "latency-tracking-info-percentiles",
        "50 99 99.9",
        true,
        Kind::Str,
    ),
    opt("hll-sparse-max-bytes", "3000", true, Kind::Memory(0, I64)),
    // Process options (process.rs): fork to the background, the kernel's
    // OOM-killer score, transparent huge pages.
    opt("daemonize", "no", false, Kind::Bool),
    opt(
        "oom-score-adj",
        "no",
        true,
        Kind::Enum(&["no", "yes", "relative", "absolute"]),
    ),
    opt("oom-score-adj-values", "0 200 800", true, Kind::Str),
    opt("disable-thp", "yes", false, Kind::Bool),
    // Accepted for redis.conf compatibility, kept for CONFIG GET/REWRITE;
    // config/blinkdb.conf says why each changes nothing here.
    opt("always-show-logo", "no", false, Kind::Bool),
    opt("set-proc-title", "yes", false, Kind::Bool),
    opt(
        "proc-title-template",
        "{title} {listen-addr} {server-mode}",
        true,
        Kind::Str,
    ),
    opt("stop-writes-on-bgsave-error", "yes", true, Kind::Bool),
    opt("rdb-del-sync-files", "no", true, Kind::Bool),
    opt("repl-disable-tcp-nodelay", "no", true, Kind::Bool),
    opt("lazyfree-lazy-eviction", "no", true, Kind::Bool),
    opt("lazyfree-lazy-expire", "no", true, Kind::Bool),
    opt("lazyfree-lazy-server-del", "no", true, Kind::Bool),
    opt("replica-lazy-flush", "no", true, Kind::Bool),
    opt("lazyfree-lazy-user-del", "no", true, Kind::Bool),
    opt("lazyfree-lazy-user-flush", "no", true, Kind::Bool),
    opt("no-appendfsync-on-rewrite", "no", true, Kind::Bool),
    opt("aof-timestamp-enabled", "no", true, Kind::Bool),
    opt("activerehashing", "yes", true, Kind::Bool),
    opt("dynamic-hz", "yes", true, Kind::Bool),
    opt("aof-rewrite-incremental-fsync", "yes", true, Kind::Bool),
    opt("rdb-save-incremental-fsync", "yes", true, Kind::Bool),
    opt("jemalloc-bg-thread", "yes", true, Kind::Bool),
    // Redis 7.0's other parameters (issue 44): what each does in BlinkDB, or
    // why it changes nothing, is in config/blinkdb.conf.
    opt("active-expire-effort", "1", true, Kind::Int(1, 10)),
    opt(
        "sanitize-dump-payload",
        "no",
        true,
        Kind::Enum(&["no", "yes", "clients"]),
    ),
    // What INFO server and HELLO announce (docs/compatibility.md, "Redis 8").
    opt(
        "announce-redis-version",
        "7.0.15",
        true,
        Kind::Enum(&["7.0.15", "8.0.2"]),
    ),
    opt("replica-announce-ip", "", true, Kind::Str),
    opt("replica-announce-port", "0", true, Kind::Int(0, 65535)),
    opt(
        "supervised",
        "no",
        false,
        Kind::Enum(&["upstart", "systemd", "auto", "no"]),
    ),
    opt("activedefrag", "no", true, Kind::Bool),
    opt(
        "active-defrag-ignore-bytes",
        "100mb",
        true,
        Kind::Memory(1, I64),
    ),
    opt(
        "active-defrag-threshold-lower",
        "10",
        true,
        Kind::Int(0, 1000),
    ),
    opt(
        "active-defrag-threshold-upper",
        "100",
        true,
        Kind::Int(0, 1000),
    ),
    opt("active-defrag-cycle-min", "1", true, Kind::Int(1, 99)),
    opt("active-defrag-cycle-max", "25", true, Kind::Int(1, 99)),
    opt(
        "active-defrag-max-scan-fields",
        "1000",
        true,
        Kind::Int(1, i64::MAX),
    ),
    opt("aof-disable-auto-gc", "no", true, Kind::Bool),
    opt("server_cpulist", "", false, Kind::Str),
    opt("bio_cpulist", "", false, Kind::Str),
    opt("aof_rewrite_cpulist", "", false, Kind::Str),
    opt("bgsave_cpulist", "", false, Kind::Str),
    opt("bind-source-addr", "", true, Kind::Str),
    opt("socket-mark-id", "0", false, Kind::Int(0, u32::MAX as i64)),
    opt("io-threads-do-reads", "no", false, Kind::Bool),
    opt("crash-log-enabled", "yes", true, Kind::Bool),
    opt("crash-memcheck-enabled", "yes", true, Kind::Bool),
    opt("ignore-warnings", "", true, Kind::Str),
    opt(
        "shutdown-timeout",
        "10",
        true,
        Kind::Int(0, i32::MAX as i64),
    ),
    opt("repl-backlog-ttl", "3600", true, Kind::Int(0, i64::MAX)),
    opt("replica-ignore-maxmemory", "yes", true, Kind::Bool),
    opt("replica-ignore-disk-write-errors", "no", true, Kind::Bool),
    opt("syslog-enabled", "no", false, Kind::Bool),
    opt("syslog-ident", "redis", false, Kind::Str),
    opt(
        "syslog-facility",
        "local0",
        false,
        Kind::Enum(&[
            "user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7",
        ]),
    ),
    opt("cluster-announce-hostname", "", true, Kind::Str),
    opt("cluster-announce-tls-port", "0", true, Kind::Int(0, 65535)),
    opt(
        "cluster-preferred-endpoint-type",
        "ip",
        true,
        Kind::Enum(&["ip", "hostname", "unknown-endpoint"]),
    ),
    opt(
        "cluster-link-sendbuf-limit",
        "0",
        true,
        Kind::Memory(0, U64),
    ),
    opt(
        "enable-debug-command",
        "no",
        false,
        Kind::Enum(&["no", "yes", "local"]),
    ),
    // MODULE LOAD/LOADEX/UNLOAD's gate, as Redis's; BlinkDB loads no
    // modules, so past the gate they answer that (commands/server.rs).
    opt(
        "enable-module-command",
        "no",
        false,
        Kind::Enum(&["no", "yes", "local"]),
    ),
    // What a replica (read-only) or the AOF loader does when a command it
    // applies fails: log it only, or log it and stop (commands/propagation.rs).
    opt(
        "propagation-error-behavior",
        "ignore",
        true,
        Kind::Enum(&["ignore", "panic", "panic-on-replicas"]),
    ),
    opt(
        "enable-protected-configs",
        "no",
        false,
        Kind::Enum(&["no", "yes", "local"]),
    ),
    // Redis's hidden options (`HIDDEN`), for its tests and debugging.
    opt(
        "key-load-delay",
        "0",
        true,
        Kind::Int(i32::MIN as i64, i32::MAX as i64),
    ),
    opt(
        "rdb-key-save-delay",
        "0",
        true,
        Kind::Int(i32::MIN as i64, i32::MAX as i64),
    ),
    opt(
        "loading-process-events-interval-bytes",
        "2097152",
        true,
        Kind::Int(1024, i32::MAX as i64),
    ),
    // Only 0: BlinkDB has no SIGALRM watchdog (persistence::WATCHDOG_CHECK).
    opt("watchdog-period", "0", true, Kind::Int(0, i32::MAX as i64)),
    opt("use-exit-on-panic", "no", true, Kind::Bool),
    // Only no: BlinkDB's Lua has no switch for the deprecated API
    // (scripting's check refuses yes).
    opt("lua-enable-deprecated-api", "no", false, Kind::Bool),
];

/// Redis's HIDDEN_CONFIG options: CONFIG GET answers them only when named
/// exactly, never for a pattern (CONFIG REWRITE writes them, as any option,
/// only when set away from their default).
pub const HIDDEN: &[&str] = &[
    "key-load-delay",
    "rdb-key-save-delay",
    "loading-process-events-interval-bytes",
    "watchdog-period",
    "use-exit-on-panic",
    "lua-enable-deprecated-api",
];

/// Options CONFIG SET changes only as `enable-protected-configs` allows, as in
/// Redis (`dir` stays fixed at start in BlinkDB even then).
pub const PROTECTED: &[&str] = &["dir", "dbfilename"];

/// Options whose value is several words (Redis's MULTI_ARG options, and
/// `replicaof`'s host and port, exactly two).
pub(super) const MULTI_ARG: &[&str] = &[
    "bind",
    "save",
    "client-output-buffer-limit",
    "oom-score-adj-values",
    "latency-tracking-info-percentiles",
    "replicaof",
    "shutdown-on-sigint",
    "shutdown-on-sigterm",
];

/// Older names Redis still accepts for an option.
const ALIASES: &[(&str, &str)] = &[
    ("lua-time-limit", "busy-reply-threshold"),
    ("hash-max-ziplist-entries", "hash-max-listpack-entries"),
    ("hash-max-ziplist-value", "hash-max-listpack-value"),
    ("zset-max-ziplist-entries", "zset-max-listpack-entries"),
    ("zset-max-ziplist-value", "zset-max-listpack-value"),
    ("list-max-ziplist-size", "list-max-listpack-size"),
    ("slaveof", "replicaof"),
    ("slave-read-only", "replica-read-only"),
    (
        "cluster-slave-validity-factor",
        "cluster-replica-validity-factor",
    ),
    ("cluster-slave-no-failover", "cluster-replica-no-failover"),
    ("slave-serve-stale-data", "replica-serve-stale-data"),
    ("slave-priority", "replica-priority"),
    ("repl-ping-slave-period", "repl-ping-replica-period"),
    ("slave-announce-ip", "replica-announce-ip"),
    ("slave-announce-port", "replica-announce-port"),
    ("slave-ignore-maxmemory", "replica-ignore-maxmemory"),
    ("slave-lazy-flush", "replica-lazy-flush"),
    ("min-slaves-to-write", "min-replicas-to-write"),
    ("min-slaves-max-lag", "min-replicas-max-lag"),
];

/// The shipped configuration file, which documents every option.
const SHIPPED_CONF: &str = include_str!("../../../../config/blinkdb.conf");

/// The option a `# name value` line of config/blinkdb.conf shows (`#`, one
/// space, an option's name): not an indented or wrapped line of text that
/// merely starts with an option's name.
fn shown_option(line: &str) -> Option<&'static OptionDef> {
    let rest = line.strip_prefix("# ")?;
    if rest.starts_with(char::is_whitespace) {
        return None;
    }
    find(rest.split_whitespace().next()?)
}

/// The description config/blinkdb.conf gives an option: the comment block
/// whose closing `# name default` lines include it, first sentence only
/// (section banners left out).
pub(super) fn described(name: &str) -> Option<String> {
    // A section banner: `#####...` or `# ----- name`, at either end of a block.
    let banner = |l: &str| {
        l.strip_prefix('#')
            .is_some_and(|t| t.starts_with('#') || t.trim_start().starts_with("---"))
    };
    for block in SHIPPED_CONF.split("\n\n") {
        let lines: Vec<&str> = block
            .lines()
            .map(str::trim)
            .filter(|l| !banner(l))
            .collect();
        // The block's last lines show its options; everything above is text.
        let shown = lines
            .iter()
            .rev()
            .take_while(|l| shown_option(l).is_some())
            .count();
        let (text, options) = lines.split_at(lines.len() - shown);
        if !options
            .iter()
            .any(|l| shown_option(l).is_some_and(|o| o.name == name))
        {
            continue;
        }
        let text: Vec<&str> = text
            .iter()
            .filter_map(|l| l.strip_prefix('#'))
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let text = text.join(" ");
        // The first sentence: up to a ". " that a capital letter follows.
        let end = text
            .match_indices(". ")
            .find(|(i, _)| text[i + 2..].starts_with(|c: char| c.is_ascii_uppercase()))
            .map_or(text.len(), |(i, _)| i + 1);
        let sentence = text[..end].trim_end_matches(" [runtime]");
        return Some(sentence.to_string());
    }
    None
}

/// `blinkdb --help`'s option list: every option with its default, and its
/// description from config/blinkdb.conf.
pub fn options_help() -> String {
    let mut out = String::from(
        "Options (a config-file line `name value`, or `--name value` on the command line;\n[runtime]: CONFIG SET changes it while the server runs):\n",
    );
    for def in OPTIONS {
        let default = if def.default.is_empty() || def.default.contains(' ') {
            format!("\"{}\"", def.default)
        } else {
            def.default.to_string()
        };
        let runtime = if def.mutable { " [runtime]" } else { "" };
        out.push_str(&format!("  --{} {default}{runtime}\n", def.name));
        if let Some(text) = described(def.name).filter(|t| !t.is_empty()) {
            out.push_str(&format!("      {text}\n"));
        }
    }
    out
}

/// The older names and the options they stand for (CONFIG GET lists them
/// too, as Redis does).
pub fn aliases() -> &'static [(&'static str, &'static str)] {
    ALIASES
}

pub fn find(name: &str) -> Option<&'static OptionDef> {
    let name = ALIASES
        .iter()
        .find(|(old, _)| old.eq_ignore_ascii_case(name))
        .map_or(name, |(_, new)| new);
    OPTIONS.iter().find(|o| o.name.eq_ignore_ascii_case(name))
}
