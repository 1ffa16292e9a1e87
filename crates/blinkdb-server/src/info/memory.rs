//! INFO memory and MEMORY STATS/DOCTOR: Redis's getMemoryOverheadData and
//! its reports, from memory/'s accounting and every part of the server that
//! holds memory (clients, scripts, the keyspace's index).

use crate::info::Host;
use crate::memory::{aof_buffer, human, not_counted, replication_memory, used_memory};
use std::fmt::Write;

/// One database's index memory (MEMORY STATS `db.N`).
pub struct DbOverhead {
    pub id: usize,
    pub main: u64,
    pub expires: u64,
}

/// Redis's redisMemOverhead.
pub struct Overhead {
    pub used: u64,
    pub peak: u64,
    pub startup: u64,
    pub repl_backlog: u64,
    pub repl_buffer: u64,
    pub clients_slaves: u64,
    pub clients_normal: u64,
    pub normal_clients: u64,
    pub replica_clients: u64,
    pub aof_buffer: u64,
    pub lua_caches: u64,
    pub cached_scripts_over_1000: bool,
    pub functions_caches: u64,
    pub dbs: Vec<DbOverhead>,
    pub total: u64,
    pub keys: u64,
    pub dataset: u64,
    pub dataset_perc: f64,
    pub peak_perc: f64,
    pub bytes_per_key: u64,
    pub rss: u64,
    pub allocator_allocated: u64,
    pub allocator_active: u64,
    pub allocator_resident: u64,
    /// used_memory as the cron sampled it with `rss` (their ratio is the
    /// fragmentation).
    pub sampled_used: u64,
}

impl Overhead {
    /// RSS over used_memory (`mem_fragmentation_ratio`), from the cron's
    /// samples as Redis's.
    pub fn total_frag(&self) -> (f64, i64) {
        let used = self.sampled_used;
        (ratio(self.rss, used), self.rss as i64 - used as i64)
    }
    pub fn allocator_frag(&self) -> (f64, i64) {
        let (a, b) = (self.allocator_active, self.allocator_allocated);
        (ratio(a, b), a as i64 - b as i64)
    }
    pub fn allocator_rss(&self) -> (f64, i64) {
        let (a, b) = (self.allocator_resident, self.allocator_active);
        (ratio(a, b), a as i64 - b as i64)
    }
    pub fn rss_extra(&self) -> (f64, i64) {
        let (a, b) = (self.rss, self.allocator_resident);
        (ratio(a, b), a as i64 - b as i64)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    a as f64 / b.max(1) as f64
}

/// Redis's getMemoryOverheadData.
pub fn overhead<H: Host>(shared: &H) -> Overhead {
    let m = shared.memory().samples();
    let used = used_memory(shared);
    let peak = shared.stats().instant.note_memory(used);
    let startup = m.startup;
    let clients = shared.client_registry().memory();
    let repl = replication_memory(shared);
    let repl_buffer = repl.buffer;
    let aof_buffer = aof_buffer(shared);
    let ((lua_caches, functions_caches), cached_scripts) = shared.script_caches();
    let mut total = startup
        + repl.backlog
        + repl.beyond_backlog
        + clients.replicas
        + clients.normal
        + aof_buffer
        + (lua_caches + functions_caches) as u64;
    let mut dbs = Vec::new();
    let mut keys = 0u64;
    for id in 0..shared.engine().databases() {
        let o = shared.engine().db(id).overhead();
        if o.keys == 0 {
            continue;
        }
        keys += o.keys as u64;
        total += (o.main_bytes + o.expires_bytes) as u64;
        dbs.push(DbOverhead {
            id,
            main: o.main_bytes as u64,
            expires: o.expires_bytes as u64,
        });
    }
    let dataset = used.saturating_sub(total);
    let net = if used > startup { used - startup } else { 1 };
    let rss = m.rss;
    let lua_vm = m.lua_vm;
    Overhead {
        used,
        peak,
        startup,
        repl_backlog: repl.backlog,
        repl_buffer,
        clients_slaves: repl.beyond_backlog + clients.replicas,
        clients_normal: clients.normal,
        normal_clients: clients.normal_count,
        replica_clients: clients.replica_count,
        aof_buffer,
        lua_caches: lua_caches as u64,
        cached_scripts_over_1000: cached_scripts > 1000,
        functions_caches: functions_caches as u64,
        dbs,
        total,
        keys,
        dataset,
        dataset_perc: dataset as f64 * 100.0 / net as f64,
        peak_perc: used as f64 * 100.0 / peak.max(1) as f64,
        bytes_per_key: net.checked_div(keys).unwrap_or(0),
        rss,
        allocator_allocated: m.allocator_allocated,
        allocator_active: m.allocator_active,
        // glibc cannot tell its resident part: as Redis without jemalloc,
        // the process's RSS less what the Lua interpreters hold.
        allocator_resident: rss.saturating_sub(lua_vm),
        sampled_used: m.used,
    }
}

/// INFO memory's fields from used_memory to used_memory_dataset_perc,
/// then allocator_* and total_system_memory (the caller goes on with the
/// scripts' fields).
pub fn info_head(o: &mut String, mh: &Overhead, system: u64) {
    let _ = write!(
        o,
        "used_memory:{}\r\nused_memory_human:{}\r\nused_memory_rss:{}\r\nused_memory_rss_human:{}\r\nused_memory_peak:{}\r\nused_memory_peak_human:{}\r\nused_memory_peak_perc:{:.2}%\r\nused_memory_overhead:{}\r\nused_memory_startup:{}\r\nused_memory_dataset:{}\r\nused_memory_dataset_perc:{:.2}%\r\nallocator_allocated:{}\r\nallocator_active:{}\r\nallocator_resident:{}\r\ntotal_system_memory:{system}\r\ntotal_system_memory_human:{}\r\n",
        mh.used,
        human(mh.used),
        mh.rss,
        human(mh.rss),
        mh.peak,
        human(mh.peak),
        mh.peak_perc,
        mh.total,
        mh.startup,
        mh.dataset,
        mh.dataset_perc,
        mh.allocator_allocated,
        mh.allocator_active,
        mh.allocator_resident,
        human(system),
    );
}

/// INFO memory's fields after maxmemory_policy, to mem_allocator.
pub fn info_tail<H: Host>(o: &mut String, shared: &H, mh: &Overhead) {
    let (af, afb) = mh.allocator_frag();
    let (ar, arb) = mh.allocator_rss();
    let (re, reb) = mh.rss_extra();
    let (tf, tfb) = mh.total_frag();
    let _ = write!(
        o,
        "allocator_frag_ratio:{af:.2}\r\nallocator_frag_bytes:{afb}\r\nallocator_rss_ratio:{ar:.2}\r\nallocator_rss_bytes:{arb}\r\nrss_overhead_ratio:{re:.2}\r\nrss_overhead_bytes:{reb}\r\nmem_fragmentation_ratio:{tf:.2}\r\nmem_fragmentation_bytes:{tfb}\r\nmem_not_counted_for_evict:{}\r\nmem_replication_backlog:{}\r\nmem_total_replication_buffers:{}\r\nmem_clients_slaves:{}\r\nmem_clients_normal:{}\r\nmem_cluster_links:0\r\nmem_aof_buffer:{}\r\nmem_allocator:libc\r\nactive_defrag_running:0\r\n",
        not_counted(shared),
        mh.repl_backlog,
        mh.repl_buffer,
        mh.clients_slaves,
        mh.clients_normal,
        mh.aof_buffer,
    );
}

/// MEMORY STATS, with Redis 7.0's fields in its order.
pub fn stats<H: Host>(out: &mut crate::protocol::reply::Out, shared: &H) {
    let mh = overhead(shared);
    out.map(27 + mh.dbs.len());
    let int = |out: &mut crate::protocol::reply::Out, name: &str, v: i64| {
        out.bulk(name.as_bytes());
        out.int(v);
    };
    int(out, "peak.allocated", mh.peak as i64);
    int(out, "total.allocated", mh.used as i64);
    int(out, "startup.allocated", mh.startup as i64);
    int(out, "replication.backlog", mh.repl_backlog as i64);
    int(out, "clients.slaves", mh.clients_slaves as i64);
    int(out, "clients.normal", mh.clients_normal as i64);
    int(out, "cluster.links", 0);
    int(out, "aof.buffer", mh.aof_buffer as i64);
    int(out, "lua.caches", mh.lua_caches as i64);
    int(out, "functions.caches", mh.functions_caches as i64);
    for db in &mh.dbs {
        out.bulk(format!("db.{}", db.id).as_bytes());
        out.map(3);
        int(out, "overhead.hashtable.main", db.main as i64);
        int(out, "overhead.hashtable.expires", db.expires as i64);
        // The key-by-slot index is outside the key table, kept in cluster
        // mode only; not counted here.
        int(out, "overhead.hashtable.slot-to-keys", 0);
    }
    int(out, "overhead.total", mh.total as i64);
    int(out, "keys.count", mh.keys as i64);
    int(out, "keys.bytes-per-key", mh.bytes_per_key as i64);
    int(out, "dataset.bytes", mh.dataset as i64);
    let double = |out: &mut crate::protocol::reply::Out, name: &str, v: f64| {
        out.bulk(name.as_bytes());
        out.double(v);
    };
    double(out, "dataset.percentage", mh.dataset_perc);
    double(out, "peak.percentage", mh.peak_perc);
    int(out, "allocator.allocated", mh.allocator_allocated as i64);
    int(out, "allocator.active", mh.allocator_active as i64);
    int(out, "allocator.resident", mh.allocator_resident as i64);
    let (r, b) = mh.allocator_frag();
    double(out, "allocator-fragmentation.ratio", r);
    int(out, "allocator-fragmentation.bytes", b);
    let (r, b) = mh.allocator_rss();
    double(out, "allocator-rss.ratio", r);
    int(out, "allocator-rss.bytes", b);
    let (r, b) = mh.rss_extra();
    double(out, "rss-overhead.ratio", r);
    int(out, "rss-overhead.bytes", b);
    let (r, b) = mh.total_frag();
    double(out, "fragmentation", r);
    int(out, "fragmentation.bytes", b);
}

/// MEMORY DOCTOR's report, with Redis's texts and thresholds.
pub fn doctor<H: Host>(shared: &H) -> String {
    let mh = overhead(shared);
    let mut reports: Vec<&str> = Vec::new();
    let over = |(r, b): (f64, i64), limit: f64| r > limit && b > 10 << 20;
    if mh.used < 5 << 20 {
        return EMPTY.to_string();
    }
    if mh.peak as f64 / mh.used.max(1) as f64 > 1.5 {
        reports.push(BIG_PEAK);
    }
    if over(mh.total_frag(), 1.4) {
        reports.push(HIGH_FRAG);
    }
    if over(mh.allocator_frag(), 1.1) {
        reports.push(HIGH_ALLOC_FRAG);
    }
    if over(mh.allocator_rss(), 1.1) {
        reports.push(HIGH_ALLOC_RSS);
    }
    if over(mh.rss_extra(), 1.1) {
        reports.push(HIGH_PROC_RSS);
    }
    // Redis checks the replicas' buffers before the clients' in its report.
    let big_clients = mh.clients_normal / mh.normal_clients.max(1) > 200 * 1024;
    let big_replicas = mh.replica_clients > 0 && mh.clients_slaves > 10 << 20;
    if big_replicas {
        reports.push(BIG_REPLICA_BUF);
    }
    if big_clients {
        reports.push(BIG_CLIENT_BUF);
    }
    if mh.cached_scripts_over_1000 {
        reports.push(MANY_SCRIPTS);
    }
    if reports.is_empty() {
        return "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n".to_string();
    }
    let mut s =
        String::from("Sam, I detected a few issues in this Redis instance memory implants:\n\n");
    for r in reports {
        s.push_str(r);
        s.push_str("\n\n");
    }
    s.push_str("I'm here to keep you safe, Sam. I want to help you.\n");
    s
}

const EMPTY: &str = "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n";
const BIG_PEAK: &str = " * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.";
const HIGH_FRAG: &str = " * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, then there is no issue. Otherwise, make sure you are using the Jemalloc allocator and not the default libc malloc. Note: The currently used allocator is \"libc\".";
const HIGH_ALLOC_FRAG: &str = " * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' config option.";
const HIGH_ALLOC_RSS: &str = " * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the allocator is much larger than the sum what the allocator actually holds). This problem is usually due to a large peak memory (check if there is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim it.";
const HIGH_PROC_RSS: &str = " * High process RSS overhead: This instance has non-allocator RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the Redis process is much larger than the RSS the allocator holds). This problem may be due to Lua scripts or Modules.";
const BIG_REPLICA_BUF: &str = " * Big replica buffers: The replica output buffers in this instance are greater than 10MB for each replica (on average). This likely means that there is some replica instance that is struggling receiving data, either because it is too slow or because of networking issues. As a result, data piles on the master output buffers. Please try to identify what replica is not receiving data correctly and why. You can use the INFO output in order to check the replicas delays and the CLIENT LIST command to check the output buffers of each replica.";
const BIG_CLIENT_BUF: &str = " * Big client buffers: The clients output buffers in this instance are greater than 200K per client (on average). This may result from different causes, like Pub/Sub clients subscribed to channels bot not receiving data fast enough, so that data piles on the Redis instance output buffer, or clients sending commands with large replies or very large sequences of commands in the same pipeline. Please use the CLIENT LIST command in order to investigate the issue if it causes problems in your instance, or to understand better why certain clients are using a big amount of memory.";
const MANY_SCRIPTS: &str = " * Many scripts: There seem to be many cached scripts in this instance (more than 1000). This may be because scripts are generated and `EVAL`ed, instead of being parameterized (with KEYS and ARGV), `SCRIPT LOAD`ed and `EVALSHA`ed. Unless `SCRIPT FLUSH` is called periodically, the scripts' caches may end up consuming most of your memory.";
