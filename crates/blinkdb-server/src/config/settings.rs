//! The typed view of the configuration. Values are read in the canonical form
//! their kind's check and their owner's check stored (`values.rs`, `hooks.rs`).

use super::limits::OutputLimits;
use super::values::ShutdownFlags;
use super::{events, Config};
use std::path::PathBuf;
use std::str::FromStr;

/// Typed view of the configuration, rebuilt whenever it changes.
#[derive(Clone, Debug)]
pub struct Settings {
    pub bind: Vec<String>,
    pub port: u16,
    /// `tls-port`: TLS clients (0: none).
    pub tls_port: u16,
    /// The other `tls-*` options.
    pub tls: TlsSettings,
    pub dir: PathBuf,
    pub databases: usize,
    pub loglevel: String,
    pub logfile: Option<String>,
    pub pidfile: Option<String>,
    pub requirepass: Option<String>,
    /// The ACL file (`aclfile`), if any.
    pub aclfile: Option<String>,
    /// acl-pubsub-default allchannels: new users may use every channel.
    pub acl_pubsub_all: bool,
    pub acllog_max_len: usize,
    pub protected_mode: bool,
    pub maxclients: usize,
    pub timeout_secs: u64,
    /// Connection-serving threads; 0 = half the CPU cores, at least one.
    pub io_threads: usize,
    /// How long a connection thread polls its sockets before it sleeps.
    pub busy_poll_us: u64,
    pub tcp_backlog: u32,
    pub unixsocket: Option<PathBuf>,
    pub unixsocketperm: u32,
    pub proto_max_bulk_len: i64,
    /// Largest sparse HyperLogLog; a sketch that would grow past it turns dense.
    pub hll_sparse_max_bytes: usize,
    pub client_query_buffer_limit: usize,
    pub output_limits: OutputLimits,
    pub hz: u32,
    /// `notify-keyspace-events` as Redis's flag bits (blinkdb_engine::event).
    pub notify_keyspace_events: u32,
    /// Keys the tracking table holds at most (0: no limit).
    pub tracking_table_max_keys: u64,
    pub appendonly: bool,
    /// Active expiry's effort, 1 to 10 (a larger time budget per cycle).
    pub active_expire_effort: u32,
    /// RESTORE's `sanitize-dump-payload`: no, yes or clients.
    pub sanitize_dump_payload: String,
    /// What a replica tells its master to list it as (REPLCONF ip-address,
    /// listening-port), instead of its address and `port`.
    pub replica_announce_ip: Option<String>,
    pub replica_announce_port: u16,
    /// `supervised`: how the process tells its supervisor it is ready.
    pub supervised: String,
    /// The Redis version INFO server's redis_version and HELLO's version name.
    pub announce_redis_version: String,
    pub appendfsync: String,
    pub appenddirname: String,
    pub appendfilename: String,
    /// The RDB file SAVE writes and a start without an AOF loads, in `dir`.
    pub dbfilename: String,
    /// `save`: BGSAVE once `changes` writes are at least `seconds` old
    /// (none by default: the AOF is the record).
    pub save_points: Vec<(u64, u64)>,
    /// `--load-rdb`: imported once into the AOF at start.
    pub load_rdb: Option<PathBuf>,
    /// LZF-compress RDB strings past 20 bytes (files and DUMP payloads).
    pub rdbcompression: bool,
    /// Write and check the CRC-64 trailer of RDB files.
    pub rdbchecksum: bool,
    pub segment_size: u64,
    pub blob_threshold: usize,
    pub verify_blobs_on_read: bool,
    pub aof_load_truncated: bool,
    pub aof_load_corrupt: bool,
    pub aof_batch_checksums: bool,
    /// Hidden `key-load-delay` and `rdb-key-save-delay`: µs per key loaded
    /// or saved (negative: 1 µs for one key in N), handed to the engine.
    pub key_load_delay: i32,
    pub rdb_key_save_delay: i32,
    /// Hidden `loading-process-events-interval-bytes`: how often a load
    /// publishes its progress (INFO's loading_loaded_bytes).
    pub loading_process_events_interval_bytes: u64,
    /// Hidden `use-exit-on-panic`: a panic exits with 1 instead of aborting.
    pub use_exit_on_panic: bool,
    /// The AOF rewrite writes an RDB-format base (`<appendfilename>.<seq>.base.rdb`).
    pub aof_use_rdb_preamble: bool,
    pub auto_aof_rewrite_percentage: u64,
    pub auto_aof_rewrite_min_size: u64,
    pub maxmemory: u64,
    /// `maxmemory-clients` in bytes (0: no client eviction).
    pub maxmemory_clients: u64,
    pub maxmemory_policy: String,
    /// `maxmemory-policy allkeys-fifo`: cache mode evicts whole segments.
    pub evict_fifo: bool,
    /// Redis's policies: keys evicted one by one after sampling.
    pub evict_sampled: Option<blinkdb_engine::EvictionPolicy>,
    pub maxmemory_samples: usize,
    /// How long a command may spend evicting (see eviction::time_limit).
    pub maxmemory_eviction_tenacity: u32,
    pub lfu_log_factor: u32,
    pub lfu_decay_time: u32,
    /// Bytes the AOF directory may hold in cache mode (0: unlimited).
    pub max_disk_size: u64,
    /// Largest file size of one Bloom filter.
    pub bf_max_memory: u64,
    /// Largest size of one CF/CMS/TOPK/TDIGEST structure.
    pub sketch_max_memory: u64,
    /// BF.* filters made without BACKEND go to the kernel.
    pub bf_default_kernel: bool,
    pub bpf_pin_root: PathBuf,
    /// Bytes of the key-existence filter (0: off).
    pub existence_filter_size: u64,
    /// Commands running at least this many microseconds go to the slow log
    /// (negative: none; 0: all).
    pub slowlog_log_slower_than: i64,
    pub slowlog_max_len: usize,
    /// Events lasting at least this many milliseconds are kept by LATENCY
    /// (0: monitor off).
    pub latency_monitor_threshold_ms: u64,
    /// Per-command latency histograms (LATENCY HISTOGRAM, INFO latencystats).
    pub latency_tracking: bool,
    pub latency_percentiles: Vec<f64>,
    /// no, yes or local (from loopback and unix-socket clients only).
    pub enable_debug_command: String,
    /// `no`, `yes` or `local`: who may CONFIG SET the `PROTECTED` options.
    pub enable_protected_configs: String,
    /// no, yes or local: who may run MODULE LOAD/LOADEX/UNLOAD.
    pub enable_module_command: String,
    /// ignore, panic or panic-on-replicas (commands/propagation.rs).
    pub propagation_error_behavior: String,
    /// What SIGINT and SIGTERM do (server.rs).
    pub shutdown_on_sigint: ShutdownFlags,
    pub shutdown_on_sigterm: ShutdownFlags,
    /// Print the start-up logo (with ` PID: <pid>`) even when the log is
    /// not a terminal (logo.rs).
    pub always_show_logo: bool,
    /// Fork to the background at start (process.rs).
    pub daemonize: bool,
    /// no, yes/relative or absolute: how `oom_score_adj_values` are written.
    pub oom_score_adj: String,
    /// The OOM score (adjustment) of a master, a replica, a background child.
    pub oom_score_adj_values: [i32; 3],
    /// Turn transparent huge pages off for this process when they are `always`.
    pub disable_thp: bool,
    /// FLUSHALL/FLUSHDB without SYNC or ASYNC free the data in the background.
    pub lazyfree_lazy_user_flush: bool,
    /// Refuse writes (MISCONF) while the last BGSAVE failed and `save` is set.
    pub stop_writes_on_bgsave_error: bool,
    /// Replicas' streams sent without TCP_NODELAY (fewer, larger packets).
    pub repl_disable_tcp_nodelay: bool,
    /// When a collection leaves its compact encoding (the `*-max-listpack-*`
    /// and `set-max-intset-entries` options).
    pub collection_limits: blinkdb_engine::Limits,
    /// A script running longer than this makes other clients get BUSY (and
    /// lets them send SCRIPT KILL); 0: never.
    pub busy_reply_threshold_ms: u64,
    /// Bytes the Lua interpreter may allocate (0: no limit).
    pub lua_memory_limit: usize,
    /// The replication backlog's size (bytes kept for partial resyncs).
    pub repl_backlog_size: usize,
    /// A replica silent this long is dropped.
    pub repl_timeout_secs: u64,
    /// Full syncs streamed to the replicas' sockets instead of a file.
    pub repl_diskless_sync: bool,
    /// Seconds a diskless full sync waits for more replicas to share it.
    pub repl_diskless_sync_delay: u64,
    /// A diskless full sync starts at once with this many waiting (0: off).
    pub repl_diskless_sync_max_replicas: usize,
    /// `disabled`, `on-empty-db` or `swapdb`: how a full sync's RDB is loaded.
    pub repl_diskless_load: String,
    /// How often the master PINGs its replicas through the stream.
    pub repl_ping_replica_period: u64,
    /// `replicaof host port`: the master this server follows.
    pub replicaof: Option<(String, u16)>,
    pub masterauth: Option<String>,
    pub masteruser: Option<String>,
    pub replica_read_only: bool,
    pub replica_serve_stale_data: bool,
    pub replica_priority: i64,
    pub replica_announced: bool,
    /// Writes are refused (NOREPLICAS) with fewer replicas than this whose
    /// last ACK is at most `min_replicas_max_lag` seconds old (0: off).
    pub min_replicas_to_write: usize,
    pub min_replicas_max_lag: u64,
}

/// The `tls-*` options as configured (their meaning is tls/'s).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TlsSettings {
    pub cert_file: Option<String>,
    pub key_file: Option<String>,
    pub key_file_pass: Option<String>,
    pub client_cert_file: Option<String>,
    pub client_key_file: Option<String>,
    pub client_key_file_pass: Option<String>,
    pub dh_params_file: Option<String>,
    pub ca_cert_file: Option<String>,
    pub ca_cert_dir: Option<String>,
    /// `no`, `yes` or `optional`.
    pub auth_clients: String,
    pub replication: bool,
    pub cluster: bool,
    pub protocols: Option<String>,
    pub ciphers: Option<String>,
    pub ciphersuites: Option<String>,
    pub prefer_server_ciphers: bool,
    pub session_caching: bool,
    pub session_cache_size: usize,
    pub session_cache_timeout: u64,
    pub handshake_timeout_secs: u64,
}

impl Config {
    pub fn settings(&self) -> Settings {
        let opt_str = |n: &str| Some(self.get(n).to_string()).filter(|s| !s.is_empty());
        Settings {
            bind: self
                .get("bind")
                .split_whitespace()
                .map(String::from)
                .collect(),
            port: self.int("port") as u16,
            tls_port: self.int("tls-port") as u16,
            tls: TlsSettings {
                cert_file: opt_str("tls-cert-file"),
                key_file: opt_str("tls-key-file"),
                key_file_pass: opt_str("tls-key-file-pass"),
                client_cert_file: opt_str("tls-client-cert-file"),
                client_key_file: opt_str("tls-client-key-file"),
                client_key_file_pass: opt_str("tls-client-key-file-pass"),
                dh_params_file: opt_str("tls-dh-params-file"),
                ca_cert_file: opt_str("tls-ca-cert-file"),
                ca_cert_dir: opt_str("tls-ca-cert-dir"),
                auth_clients: self.get("tls-auth-clients").to_string(),
                replication: self.flag("tls-replication"),
                cluster: self.flag("tls-cluster"),
                protocols: opt_str("tls-protocols"),
                ciphers: opt_str("tls-ciphers"),
                ciphersuites: opt_str("tls-ciphersuites"),
                prefer_server_ciphers: self.flag("tls-prefer-server-ciphers"),
                session_caching: self.flag("tls-session-caching"),
                session_cache_size: self.int("tls-session-cache-size") as usize,
                session_cache_timeout: self.int("tls-session-cache-timeout") as u64,
                handshake_timeout_secs: self.int("tls-handshake-timeout") as u64,
            },
            dir: PathBuf::from(self.get("dir")),
            databases: self.int("databases") as usize,
            loglevel: self.get("loglevel").to_string(),
            logfile: opt_str("logfile"),
            pidfile: opt_str("pidfile"),
            requirepass: opt_str("requirepass"),
            aclfile: opt_str("aclfile"),
            acl_pubsub_all: self.get("acl-pubsub-default") == "allchannels",
            acllog_max_len: self.int("acllog-max-len") as usize,
            protected_mode: self.flag("protected-mode"),
            maxclients: self.int("maxclients") as usize,
            timeout_secs: self.int("timeout") as u64,
            io_threads: self.int("io-threads") as usize,
            busy_poll_us: self.int("busy-poll-us") as u64,
            tcp_backlog: self.int("tcp-backlog") as u32,
            unixsocket: opt_str("unixsocket").map(PathBuf::from),
            unixsocketperm: u32::from_str_radix(self.get("unixsocketperm"), 8).unwrap_or(0),
            proto_max_bulk_len: self.bytes("proto-max-bulk-len") as i64,
            hll_sparse_max_bytes: self.bytes("hll-sparse-max-bytes").min(usize::MAX as u64)
                as usize,
            client_query_buffer_limit: self.bytes("client-query-buffer-limit") as usize,
            output_limits: OutputLimits::parse_canonical(self.get("client-output-buffer-limit")),
            hz: self.int("hz") as u32,
            repl_backlog_size: self.bytes("repl-backlog-size").min(usize::MAX as u64) as usize,
            repl_timeout_secs: self.int("repl-timeout") as u64,
            repl_diskless_sync: self.flag("repl-diskless-sync"),
            repl_diskless_sync_delay: self.int("repl-diskless-sync-delay") as u64,
            repl_diskless_sync_max_replicas: self.int("repl-diskless-sync-max-replicas") as usize,
            repl_diskless_load: self.get("repl-diskless-load").to_string(),
            repl_ping_replica_period: self.int("repl-ping-replica-period") as u64,
            replicaof: master_of(self.get("replicaof")),
            masterauth: opt_str("masterauth"),
            masteruser: opt_str("masteruser"),
            replica_read_only: self.flag("replica-read-only"),
            replica_serve_stale_data: self.flag("replica-serve-stale-data"),
            replica_priority: self.int("replica-priority"),
            replica_announced: self.flag("replica-announced"),
            min_replicas_to_write: self.int("min-replicas-to-write") as usize,
            min_replicas_max_lag: self.int("min-replicas-max-lag") as u64,
            notify_keyspace_events: events::parse_flags(self.get("notify-keyspace-events"))
                .unwrap_or(0),
            tracking_table_max_keys: self.int("tracking-table-max-keys") as u64,
            appendonly: self.flag("appendonly"),
            active_expire_effort: self.int("active-expire-effort") as u32,
            sanitize_dump_payload: self.get("sanitize-dump-payload").to_string(),
            replica_announce_ip: opt_str("replica-announce-ip"),
            replica_announce_port: self.int("replica-announce-port") as u16,
            supervised: self.get("supervised").to_string(),
            announce_redis_version: self.get("announce-redis-version").to_string(),
            appendfsync: self.get("appendfsync").to_string(),
            appenddirname: self.get("appenddirname").to_string(),
            appendfilename: self.get("appendfilename").to_string(),
            dbfilename: self.get("dbfilename").to_string(),
            save_points: save_points(self.get("save")),
            load_rdb: self.load_rdb.clone(),
            rdbcompression: self.flag("rdbcompression"),
            rdbchecksum: self.flag("rdbchecksum"),
            segment_size: self.bytes("segment-size"),
            blob_threshold: self.bytes("blob-threshold").min(usize::MAX as u64) as usize,
            verify_blobs_on_read: self.flag("verify-blobs-on-read"),
            aof_load_truncated: self.flag("aof-load-truncated"),
            aof_load_corrupt: self.flag("aof-load-corrupt"),
            aof_batch_checksums: self.flag("aof-batch-checksums"),
            key_load_delay: self.int("key-load-delay") as i32,
            rdb_key_save_delay: self.int("rdb-key-save-delay") as i32,
            loading_process_events_interval_bytes: self
                .int("loading-process-events-interval-bytes")
                .max(1) as u64,
            use_exit_on_panic: self.flag("use-exit-on-panic"),
            aof_use_rdb_preamble: self.flag("aof-use-rdb-preamble"),
            auto_aof_rewrite_percentage: self.int("auto-aof-rewrite-percentage") as u64,
            auto_aof_rewrite_min_size: self.bytes("auto-aof-rewrite-min-size"),
            maxmemory: self.bytes("maxmemory"),
            maxmemory_clients: maxmemory_clients(
                self.get("maxmemory-clients"),
                self.bytes("maxmemory"),
            ),
            maxmemory_policy: self.get("maxmemory-policy").to_string(),
            evict_fifo: self.get("maxmemory-policy") == "allkeys-fifo",
            evict_sampled: blinkdb_engine::EvictionPolicy::parse(self.get("maxmemory-policy")),
            maxmemory_samples: self.int("maxmemory-samples") as usize,
            maxmemory_eviction_tenacity: self.int("maxmemory-eviction-tenacity") as u32,
            lfu_log_factor: self.int("lfu-log-factor") as u32,
            lfu_decay_time: self.int("lfu-decay-time") as u32,
            max_disk_size: self.bytes("max-disk-size"),
            bf_max_memory: self.bytes("bf-max-memory"),
            sketch_max_memory: self.bytes("sketch-max-memory"),
            bf_default_kernel: self.get("bf-default-backend") == "kernel",
            bpf_pin_root: PathBuf::from(self.get("bpf-pin-root")),
            busy_reply_threshold_ms: self.int("busy-reply-threshold") as u64,
            lua_memory_limit: self.bytes("lua-memory-limit") as usize,
            existence_filter_size: self.bytes("existence-filter-size"),
            slowlog_log_slower_than: self.int("slowlog-log-slower-than"),
            slowlog_max_len: self.int("slowlog-max-len") as usize,
            latency_monitor_threshold_ms: self.int("latency-monitor-threshold") as u64,
            latency_tracking: self.flag("latency-tracking"),
            latency_percentiles: numbers(self.get("latency-tracking-info-percentiles")),
            enable_debug_command: self.get("enable-debug-command").to_string(),
            enable_module_command: self.get("enable-module-command").to_string(),
            propagation_error_behavior: self.get("propagation-error-behavior").to_string(),
            always_show_logo: self.flag("always-show-logo"),
            shutdown_on_sigint: ShutdownFlags::parse(self.get("shutdown-on-sigint"))
                .unwrap_or_default(),
            shutdown_on_sigterm: ShutdownFlags::parse(self.get("shutdown-on-sigterm"))
                .unwrap_or_default(),
            enable_protected_configs: self.get("enable-protected-configs").to_string(),
            daemonize: self.flag("daemonize"),
            oom_score_adj: self.get("oom-score-adj").to_string(),
            oom_score_adj_values: oom_values(self.get("oom-score-adj-values"))
                .unwrap_or([0, 200, 800]),
            disable_thp: self.flag("disable-thp"),
            lazyfree_lazy_user_flush: self.flag("lazyfree-lazy-user-flush"),
            stop_writes_on_bgsave_error: self.flag("stop-writes-on-bgsave-error"),
            repl_disable_tcp_nodelay: self.flag("repl-disable-tcp-nodelay"),
            collection_limits: blinkdb_engine::Limits {
                hash_max_listpack_entries: self.int("hash-max-listpack-entries") as usize,
                hash_max_listpack_value: self.bytes("hash-max-listpack-value") as usize,
                set_max_intset_entries: self.int("set-max-intset-entries") as usize,
                zset_max_listpack_entries: self.int("zset-max-listpack-entries") as usize,
                zset_max_listpack_value: self.bytes("zset-max-listpack-value") as usize,
                list_max_listpack_size: self.int("list-max-listpack-size"),
                list_compress_depth: self.int("list-compress-depth") as usize,
                stream_node: blinkdb_engine::stream::NodeLimits {
                    max_bytes: self.bytes("stream-node-max-bytes") as usize,
                    max_entries: self.int("stream-node-max-entries") as usize,
                },
            },
        }
    }
}

/// The whitespace-separated numbers of a stored value (those that parse).
fn numbers<T: FromStr>(stored: &str) -> Vec<T> {
    stored
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// `save`, stored as "seconds changes" pairs.
fn save_points(stored: &str) -> Vec<(u64, u64)> {
    numbers(stored)
        .chunks_exact(2)
        .map(|p| (p[0], p[1]))
        .collect()
}

/// `oom-score-adj-values`, stored as three integers (master, replica, child).
fn oom_values(stored: &str) -> Option<[i32; 3]> {
    numbers(stored).try_into().ok()
}

/// The master a stored `replicaof` ("host port") names.
pub fn master_of(stored: &str) -> Option<(String, u16)> {
    let mut w = stored.split_whitespace();
    let host = w.next()?.to_string();
    let port = w.next()?.parse().ok()?;
    Some((host, port))
}

/// Redis's floor of `maxmemory-clients`, so that a bad setting cannot cut
/// every client off.
const MIN_CLIENTS_LIMIT: u64 = 128 * 1024;

/// `maxmemory-clients` in bytes from its stored form (`N%` of `maxmemory`,
/// or a size); 0 when off, as Redis's getClientEvictionLimit.
pub fn maxmemory_clients(stored: &str, maxmemory: u64) -> u64 {
    let bytes = match stored.strip_suffix('%') {
        Some(p) if maxmemory > 0 => {
            (maxmemory as f64 * p.parse::<f64>().unwrap_or(0.0) / 100.0) as u64
        }
        Some(_) => 0,
        None => stored.parse().unwrap_or(0),
    };
    if bytes == 0 {
        0
    } else {
        bytes.max(MIN_CLIENTS_LIMIT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_as_redis_computes_it() {
        assert_eq!(maxmemory_clients("0", 1 << 30), 0);
        assert_eq!(
            maxmemory_clients("10%", 0),
            0,
            "a percentage of no maxmemory is off"
        );
        assert_eq!(maxmemory_clients("10%", 100 << 20), 10 << 20);
        assert_eq!(maxmemory_clients("1000", 0), 128 * 1024, "Redis's floor");
        assert_eq!(maxmemory_clients("5242880", 0), 5 << 20);
    }
}
