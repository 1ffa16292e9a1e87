//! INFO's `# Stats` section: Redis 7.0's fields in Redis's order, then
//! BlinkDB's own (busy polling). Fields whose mechanism BlinkDB lacks (fork,
//! active defragmentation, writable replicas' expiry tracking, the reply
//! buffer's cron resizing) show 0: docs/compatibility.md says why.

use crate::info::instant::Metric;
use crate::info::Host;
use crate::pubsub::Kind;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// The statistics handle: the server's counters (CONFIG RESETSTAT zeroes
/// them) and the cron's instantaneous rates.
#[derive(Default)]
pub struct Stats {
    pub connections_received: AtomicU64,
    pub rejected_connections: AtomicU64,
    pub commands: AtomicU64,
    pub keyspace_hits: AtomicU64,
    pub keyspace_misses: AtomicU64,
    pub net_input_bytes: AtomicU64,
    pub net_output_bytes: AtomicU64,
    /// Reads from client sockets, and reply batches written to them.
    pub reads_processed: AtomicU64,
    pub writes_processed: AtomicU64,
    /// Error replies to commands from the master or the AOF (propagation.rs).
    pub unexpected_error_replies: AtomicU64,
    /// RESTORE payloads checked in full as `sanitize-dump-payload` asked.
    pub dump_payload_sanitizations: AtomicU64,
    /// The active expiry cycle (server.rs): time spent in it (us), cycles
    /// cut short by its time budget, and the running mean of the share of
    /// keys it looked at that were due (Redis's stat_expired_stale_perc, x1e6).
    pub expire_cycle_us: AtomicU64,
    pub expire_time_cap_reached: AtomicU64,
    pub expired_stale_ppm: AtomicU64,
    /// Clients closed by `maxmemory-clients` (INFO `evicted_clients`).
    pub evicted_clients: AtomicU64,
    /// The normal and Pub/Sub clients' memory as each last published it
    /// (Redis's stat_clients_type_memory), kept while `maxmemory-clients`
    /// is on (`client_eviction.rs`); not a statistic CONFIG RESETSTAT resets.
    pub clients_memory: AtomicU64,
    /// INFO's instantaneous_* rates and used_memory_peak (cron samples).
    pub instant: crate::info::instant::Instant,
}

impl Stats {
    pub fn reset(&self) {
        for c in [
            &self.connections_received,
            &self.rejected_connections,
            &self.commands,
            &self.keyspace_hits,
            &self.keyspace_misses,
            &self.net_input_bytes,
            &self.net_output_bytes,
            &self.reads_processed,
            &self.writes_processed,
            &self.unexpected_error_replies,
            &self.dump_payload_sanitizations,
            &self.expire_cycle_us,
            &self.expire_time_cap_reached,
            &self.expired_stale_ppm,
            &self.evicted_clients,
        ] {
            c.store(0, Ordering::Relaxed);
        }
    }
}

pub fn section<H: Host>(shared: &H, o: &mut String) {
    let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let stats = shared.stats();
    let engine = shared.engine();
    let [sync_full, sync_partial_ok, sync_partial_err] = shared.syncs();
    let (repl_input, repl_output) = shared.repl_net_bytes();
    let kbps = |m: Metric| stats.instant.rate(m) / 1024.0;
    let (tracked_keys, tracked_items, prefixes) = shared.notifier().tracking.stats();
    let (exceeded_now, exceeded_total) = shared.eviction().exceeded_ms();
    let (reads, writes) = (l(&stats.reads_processed), l(&stats.writes_processed));
    // Every read and write runs on a connection thread; with more than one,
    // those are Redis's active I/O threads.
    let threaded = crate::net::io_threads::thread_ids().len() > 1;
    let _ = write!(
        o,
        "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\ninstantaneous_ops_per_sec:{}\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\ntotal_net_repl_input_bytes:{}\r\ntotal_net_repl_output_bytes:{}\r\ninstantaneous_input_kbps:{:.2}\r\ninstantaneous_output_kbps:{:.2}\r\ninstantaneous_input_repl_kbps:{:.2}\r\ninstantaneous_output_repl_kbps:{:.2}\r\nrejected_connections:{}\r\nsync_full:{}\r\nsync_partial_ok:{}\r\nsync_partial_err:{}\r\nexpired_subkeys:{}\r\nexpired_keys:{}\r\nexpired_stale_perc:{:.2}\r\nexpired_time_cap_reached_count:{}\r\nexpire_cycle_cpu_milliseconds:{}\r\nevicted_keys:{}\r\nevicted_clients:{}\r\ntotal_eviction_exceeded_time:{exceeded_total}\r\ncurrent_eviction_exceeded_time:{exceeded_now}\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\npubsubshard_channels:{}\r\nlatest_fork_usec:0\r\ntotal_forks:0\r\nmigrate_cached_sockets:{}\r\nslave_expires_tracked_keys:0\r\nactive_defrag_hits:0\r\nactive_defrag_misses:0\r\nactive_defrag_key_hits:0\r\nactive_defrag_key_misses:0\r\ntotal_active_defrag_time:0\r\ncurrent_active_defrag_time:0\r\ntracking_total_keys:{tracked_keys}\r\ntracking_total_items:{tracked_items}\r\ntracking_total_prefixes:{prefixes}\r\nunexpected_error_replies:{}\r\ntotal_error_replies:{}\r\ndump_payload_sanitizations:{}\r\ntotal_reads_processed:{reads}\r\ntotal_writes_processed:{writes}\r\nio_threaded_reads_processed:{}\r\nio_threaded_writes_processed:{}\r\nreply_buffer_shrinks:0\r\nreply_buffer_expands:0\r\n",
        l(&stats.connections_received),
        l(&stats.commands),
        stats.instant.rate(Metric::Ops) as u64,
        l(&stats.net_input_bytes),
        l(&stats.net_output_bytes),
        repl_input,
        repl_output,
        kbps(Metric::NetInput),
        kbps(Metric::NetOutput),
        kbps(Metric::NetReplInput),
        kbps(Metric::NetReplOutput),
        l(&stats.rejected_connections),
        sync_full,
        sync_partial_ok,
        sync_partial_err,
        // Redis 7.4's field (hash fields removed on their TTL), where 8.0 puts it.
        l(&engine.stats.expired_subkeys),
        l(&engine.stats.expired_keys),
        l(&stats.expired_stale_ppm) as f64 / 10_000.0,
        l(&stats.expire_time_cap_reached),
        l(&stats.expire_cycle_us) / 1000,
        l(&engine.stats.evicted_keys),
        l(&stats.evicted_clients),
        l(&stats.keyspace_hits),
        l(&stats.keyspace_misses),
        shared.pubsub().count(Kind::Channel),
        shared.pubsub().count(Kind::Pattern),
        shared.pubsub().count(Kind::Shard),
        shared.migrate_cached_sockets(),
        l(&stats.unexpected_error_replies),
        crate::protocol::errorstats::total_error_replies(),
        l(&stats.dump_payload_sanitizations),
        if threaded { reads } else { 0 },
        if threaded { writes } else { 0 },
    );
    // Redis 7.2's ACL refusal counts (7.0.15 has none; issue 40 asks for them).
    let [auth, cmd, key, channel] = shared.acl_denied();
    let _ = write!(
        o,
        "acl_access_denied_auth:{auth}\r\nacl_access_denied_cmd:{cmd}\r\nacl_access_denied_key:{key}\r\nacl_access_denied_channel:{channel}\r\n",
    );
    let [polls, poll_hits, naps, nap_hits] = crate::net::busy_poll::counts();
    let _ = write!(
        o,
        "busy_poll_polls:{polls}\r\nbusy_poll_hits:{poll_hits}\r\nbusy_poll_naps:{naps}\r\nbusy_poll_nap_hits:{nap_hits}\r\n"
    );
}
