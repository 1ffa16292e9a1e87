//! INFO output, with Redis's section and field names so that tools parsing
//! it (redis-cli, ioredis's ready check, monitoring agents) work.

pub mod bloom;
pub mod instant;
pub mod memory;
pub mod stats;

use crate::memory::human;
use std::fmt::Write;
use std::sync::atomic::Ordering;

/// What INFO (and MEMORY STATS/DOCTOR) read of the server: info/ is below
/// the server's state (`Shared` implements this, as it does
/// `persistence::Host` and `memory::Host`). The sections whose figures
/// belong to a module above (replication, the per-command statistics) are
/// written by that module through `section`.
pub trait Host: crate::persistence::Host {
    fn stats(&self) -> &stats::Stats;
    fn client_registry(&self) -> &crate::client::registry::Registry;
    fn pubsub(&self) -> &crate::pubsub::Registry;
    fn notifier(&self) -> &crate::pubsub::notify::Notifier;
    /// When the server started (Unix ms), and its run id.
    fn started_ms(&self) -> u64;
    fn run_id(&self) -> &str;
    /// The config file the server started with, if any.
    fn config_file(&self) -> Option<String>;
    /// `process_supervised`: "upstart", "systemd" or "no".
    fn supervised(&self) -> &'static str;
    /// Clients blocked (on keys, WAIT, CLIENT PAUSE), and those of them in
    /// the timeout table.
    fn blocked_clients(&self) -> (usize, usize);
    /// The nodes the cluster knows; None without `cluster-enabled`.
    fn cluster_nodes(&self) -> Option<usize>;
    /// The Lua lines of INFO memory.
    fn lua_memory(&self, o: &mut String);
    /// The script caches' bytes (EVAL's, FUNCTION's) and the number of
    /// cached scripts.
    fn script_caches(&self) -> ((usize, usize), usize);
    /// Full syncs, partial syncs accepted and refused; bytes the
    /// replication links read and wrote.
    fn syncs(&self) -> [u64; 3];
    fn repl_net_bytes(&self) -> (u64, u64);
    /// MIGRATE's cached connections.
    fn migrate_cached_sockets(&self) -> usize;
    /// ACL refusals: auth, command, key, channel.
    fn acl_denied(&self) -> [u64; 4];
    /// The module line's name and version (RedisBloom's).
    fn module(&self) -> (&'static str, u32);
    /// Writes a section owned by a module above: "replication",
    /// "commandstats", "latencystats".
    fn section(&self, name: &str, o: &mut String);
}

/// Every section, in Redis's order (BlinkDB's `bloom` last), and whether a
/// plain INFO (or "default") shows it; "all" shows every one.
const SECTIONS: &[(&str, bool)] = &[
    ("server", true),
    ("clients", true),
    ("memory", true),
    ("persistence", true),
    ("stats", true),
    ("replication", true),
    ("cpu", true),
    ("modules", true),
    ("commandstats", false),
    ("errorstats", true),
    ("latencystats", false),
    ("cluster", true),
    ("keyspace", true),
    ("bloom", true),
];

/// The machine's memory, read once as Redis does at startup.
fn total_system_memory() -> u64 {
    static TOTAL: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TOTAL.get_or_init(|| proc_kb_field("/proc/meminfo", "MemTotal:"))
}

/// A "Name: N kB" line of a /proc file, in bytes (0 if unreadable).
fn proc_kb_field(path: &str, name: &str) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// An error code as INFO may show it: no characters that break its lines.
fn info_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if matches!(c, ':' | '\r' | '\n') {
                '_'
            } else {
                c
            }
        })
        .collect()
}

fn cpu_times() -> (f64, f64) {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (t(ru.ru_stime), t(ru.ru_utime))
}

/// The CPU time (system, user) of the threads that run commands: the
/// connection threads, which do Redis's main thread's work (the process's
/// own main thread only accepts and runs the crons). From
/// /proc/self/task/<tid>/stat, in clock ticks.
fn command_threads_cpu() -> (f64, f64) {
    // SAFETY: sysconf only reads a constant of the system.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let (mut sys, mut user) = (0u64, 0u64);
    for tid in crate::net::io_threads::thread_ids() {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")) else {
            continue;
        };
        // After the command name's closing parenthesis: state is field 3,
        // utime 14 and stime 15.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let tick = |i: usize| {
            fields
                .get(i)
                .and_then(|f| f.parse::<u64>().ok())
                .unwrap_or(0)
        };
        user += tick(11);
        sys += tick(12);
    }
    (sys as f64 / hz, user as f64 / hz)
}

/// Renders the requested sections ("all", "everything", "default" or names,
/// lowercase).
pub fn render<H: Host>(shared: &H, requested: &[String]) -> String {
    let all = requested.iter().any(|s| s == "all" || s == "everything");
    let defaults = requested.is_empty() || requested.iter().any(|s| s == "default");
    let mut out = String::new();
    for (section, default) in SECTIONS {
        let named = requested
            .iter()
            .any(|s| s == section || (*section == "modules" && s == "module_list"));
        if !(all || named || (defaults && *default)) {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        section_text(shared, section, &mut out);
    }
    out
}

fn section_text<H: Host>(shared: &H, section: &str, o: &mut String) {
    let settings = shared.settings();
    let now = blinkdb_engine::now_ms();
    let uptime = now.saturating_sub(shared.started_ms()) / 1000;
    let engine = shared.engine();
    match section {
        "server" => {
            let _ = write!(
                o,
                // The clock is Instant's (CLOCK_MONOTONIC), atomics Rust's (the C11
                // model); Redis prints gcc_version 0.0.0 when GCC did not build it.
                "# Server\r\nredis_version:{}\r\nblinkdb_version:{}\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_build_id:0\r\nredis_mode:{}\r\nos:{}\r\narch_bits:64\r\nmonotonic_clock:POSIX clock_gettime\r\nmultiplexing_api:epoll\r\natomicvar_api:c11-builtin\r\ngcc_version:0.0.0\r\nprocess_id:{}\r\nprocess_supervised:{}\r\nrun_id:{}\r\ntcp_port:{}\r\nserver_time_usec:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\nhz:{}\r\nconfigured_hz:{}\r\nlru_clock:{}\r\nexecutable:{}\r\nconfig_file:{}\r\nio_threads_active:{}\r\n",
                settings.announce_redis_version,
                env!("CARGO_PKG_VERSION"),
                if shared.cluster_nodes().is_some() {
                    "cluster"
                } else {
                    "standalone"
                },
                os_name(),
                std::process::id(),
                shared.supervised(),
                shared.run_id(),
                settings.port,
                blinkdb_engine::now_us(),
                uptime,
                uptime / 86400,
                settings.hz,
                settings.hz,
                blinkdb_engine::access::lru_clock(now),
                std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default(),
                shared.config_file().unwrap_or_default(),
                // Several event loops serve connections at once, as Redis's
                // I/O threads when active.
                u8::from(crate::net::io_threads::thread_ids().len() > 1),
            );
        }
        "clients" => {
            // The largest buffers now (Redis keeps the peaks of the last seconds).
            let clients = shared.client_registry();
            let (input, output) = clients.max(|c| (c.input_buffer(), c.output_pending()));
            let (blocked, timed) = shared.blocked_clients();
            let _ = write!(
                o,
                "# Clients\r\nconnected_clients:{}\r\ncluster_connections:{}\r\nmaxclients:{}\r\nclient_recent_max_input_buffer:{input}\r\nclient_recent_max_output_buffer:{output}\r\nblocked_clients:{}\r\ntracking_clients:{}\r\nclients_in_timeout_table:{}\r\n",
                clients.connected(),
                // Redis counts one link each way to every other node.
                shared.cluster_nodes().map_or(0, |n| n.saturating_sub(1) * 2),
                settings.maxclients,
                blocked,
                shared.notifier().tracking.count(),
                timed,
            );
        }
        "memory" => {
            let mh = memory::overhead(shared);
            o.push_str("# Memory\r\n");
            memory::info_head(o, &mh, total_system_memory());
            shared.lua_memory(o);
            let _ = write!(
                o,
                "maxmemory:{}\r\nmaxmemory_human:{}\r\nmaxmemory_policy:{}\r\nmax_disk_size:{}\r\n",
                settings.maxmemory,
                human(settings.maxmemory),
                settings.maxmemory_policy,
                settings.max_disk_size,
            );
            memory::info_tail(o, shared, &mh);
            let _ = write!(
                o,
                "lazyfree_pending_objects:{}\r\nlazyfreed_objects:{}\r\n",
                blinkdb_engine::LAZYFREE_PENDING.load(Ordering::Relaxed),
                blinkdb_engine::LAZYFREED.load(Ordering::Relaxed),
            );
        }
        "persistence" => crate::persistence::info(shared, o),
        "stats" => stats::section(shared, o),
        "replication" | "commandstats" | "latencystats" => shared.section(section, o),
        "cpu" => {
            let (sys, user) = cpu_times();
            let _ = write!(
                o,
                // BlinkDB never forks: its children used no CPU.
                "# CPU\r\nused_cpu_sys:{sys:.6}\r\nused_cpu_user:{user:.6}\r\nused_cpu_sys_children:0.000000\r\nused_cpu_user_children:0.000000\r\n"
            );
            let (sys, user) = command_threads_cpu();
            let _ = write!(
                o,
                "used_cpu_sys_main_thread:{sys:.6}\r\nused_cpu_user_main_thread:{user:.6}\r\n"
            );
        }
        "bloom" => crate::info::bloom::section(engine, o),
        "modules" => {
            o.push_str("# Modules\r\n");
            let (name, version) = shared.module();
            let _ = write!(
                o,
                "module:name={name},ver={version},api=1,filters=0,usedby=[],using=[],options=[]\r\n",
            );
        }
        "errorstats" => {
            o.push_str("# Errorstats\r\n");
            for (code, n) in crate::protocol::errorstats::error_counts() {
                let _ = write!(o, "errorstat_{}:count={n}\r\n", info_safe(&code));
            }
        }
        "cluster" => o.push_str(if shared.cluster_nodes().is_some() {
            "# Cluster\r\ncluster_enabled:1\r\n"
        } else {
            "# Cluster\r\ncluster_enabled:0\r\n"
        }),
        "keyspace" => {
            o.push_str("# Keyspace\r\n");
            // Redis 7.4's `subexpiry` (hashes with field TTLs) only when
            // BlinkDB announces a version that has it: parsers written for
            // 7.0's three fields (redis_exporter before 7.4 support) drop a
            // line with a fourth (docs/compatibility.md, Hash-field expiration).
            let subexpiry = !settings.announce_redis_version.starts_with("7.0");
            for i in 0..engine.databases() {
                let db = engine.db(i);
                let keys = db.len();
                if keys > 0 {
                    let now = blinkdb_engine::now_ms();
                    let (expires, avg_ttl) = db.expires_and_avg_ttl(now);
                    let _ = write!(o, "db{i}:keys={keys},expires={expires},avg_ttl={avg_ttl}");
                    if subexpiry {
                        let _ = write!(o, ",subexpiry={}", db.field_ttl_keys());
                    }
                    o.push_str("\r\n");
                }
            }
        }
        _ => {}
    }
}

/// The kernel's name, release and machine, as Redis prints `os:` (uname).
fn os_name() -> &'static str {
    static OS: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    OS.get_or_init(|| {
        // SAFETY: uname fills the zeroed struct; each field is NUL-terminated.
        let mut u: libc::utsname = unsafe { std::mem::zeroed() };
        if unsafe { libc::uname(&mut u) } != 0 {
            return format!("{} {}", std::env::consts::OS, std::env::consts::ARCH);
        }
        let field = |f: &[libc::c_char]| {
            let bytes: Vec<u8> = f
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8)
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        };
        format!(
            "{} {} {}",
            field(&u.sysname),
            field(&u.release),
            field(&u.machine)
        )
    })
}
