//! INFO's `# Stats` section: Redis 7.0's fields in Redis's order, then
//! BlinkDB's own (busy polling). Fields whose mechanism BlinkDB lacks (fork,
//! active defragmentation, writable replicas' expiry tracking, the reply
//! buffer's cron resizing) show 0: docs/compatibility.md says why.

use crate::info::instant::Metric;
use crate::pubsub::Kind;
use crate::server::state::Shared;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

pub fn section(shared: &Shared, o: &mut String) {
    let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let stats = &shared.stats;
    let engine = &shared.engine;
    let feed = &shared.replication.feed;
    let kbps = |m: Metric| shared.instant.rate(m) / 1024.0;
    let (tracked_keys, tracked_items, prefixes) = shared.notify.tracking.stats();
    let (exceeded_now, exceeded_total) = shared.eviction.exceeded_ms();
    let (reads, writes) = (l(&stats.reads_processed), l(&stats.writes_processed));
    // Every read and write runs on a connection thread; with more than one,
    // those are Redis's active I/O threads.
    let threaded = crate::net::io_threads::thread_ids().len() > 1;
    let _ = write!(
        o,
        "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\ninstantaneous_ops_per_sec:{}\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\ntotal_net_repl_input_bytes:{}\r\ntotal_net_repl_output_bytes:{}\r\ninstantaneous_input_kbps:{:.2}\r\ninstantaneous_output_kbps:{:.2}\r\ninstantaneous_input_repl_kbps:{:.2}\r\ninstantaneous_output_repl_kbps:{:.2}\r\nrejected_connections:{}\r\nsync_full:{}\r\nsync_partial_ok:{}\r\nsync_partial_err:{}\r\nexpired_keys:{}\r\nexpired_stale_perc:{:.2}\r\nexpired_time_cap_reached_count:{}\r\nexpire_cycle_cpu_milliseconds:{}\r\nevicted_keys:{}\r\nevicted_clients:{}\r\ntotal_eviction_exceeded_time:{exceeded_total}\r\ncurrent_eviction_exceeded_time:{exceeded_now}\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\npubsubshard_channels:{}\r\nlatest_fork_usec:0\r\ntotal_forks:0\r\nmigrate_cached_sockets:{}\r\nslave_expires_tracked_keys:0\r\nactive_defrag_hits:0\r\nactive_defrag_misses:0\r\nactive_defrag_key_hits:0\r\nactive_defrag_key_misses:0\r\ntotal_active_defrag_time:0\r\ncurrent_active_defrag_time:0\r\ntracking_total_keys:{tracked_keys}\r\ntracking_total_items:{tracked_items}\r\ntracking_total_prefixes:{prefixes}\r\nunexpected_error_replies:{}\r\ntotal_error_replies:{}\r\ndump_payload_sanitizations:{}\r\ntotal_reads_processed:{reads}\r\ntotal_writes_processed:{writes}\r\nio_threaded_reads_processed:{}\r\nio_threaded_writes_processed:{}\r\nreply_buffer_shrinks:0\r\nreply_buffer_expands:0\r\n",
        l(&stats.connections_received),
        l(&stats.commands),
        shared.instant.rate(Metric::Ops) as u64,
        l(&stats.net_input_bytes),
        l(&stats.net_output_bytes),
        l(&crate::replication::NET_REPL_INPUT),
        l(&crate::replication::NET_REPL_OUTPUT),
        kbps(Metric::NetInput),
        kbps(Metric::NetOutput),
        kbps(Metric::NetReplInput),
        kbps(Metric::NetReplOutput),
        l(&stats.rejected_connections),
        l(&feed.sync_full),
        l(&feed.sync_partial_ok),
        l(&feed.sync_partial_err),
        l(&engine.stats.expired_keys),
        l(&stats.expired_stale_ppm) as f64 / 10_000.0,
        l(&stats.expire_time_cap_reached),
        l(&stats.expire_cycle_us) / 1000,
        l(&engine.stats.evicted_keys),
        l(&stats.evicted_clients),
        l(&stats.keyspace_hits),
        l(&stats.keyspace_misses),
        shared.pubsub.count(Kind::Channel),
        shared.pubsub.count(Kind::Pattern),
        shared.pubsub.count(Kind::Shard),
        crate::commands::migrate::cached_sockets(),
        l(&stats.unexpected_error_replies),
        crate::exec::stats::total_error_replies(),
        l(&stats.dump_payload_sanitizations),
        if threaded { reads } else { 0 },
        if threaded { writes } else { 0 },
    );
    // Redis 7.2's ACL refusal counts (7.0.15 has none; issue 40 asks for them).
    let acl = &shared.acl;
    let _ = write!(
        o,
        "acl_access_denied_auth:{}\r\nacl_access_denied_cmd:{}\r\nacl_access_denied_key:{}\r\nacl_access_denied_channel:{}\r\n",
        l(&acl.denied_auth),
        l(&acl.denied_cmd),
        l(&acl.denied_key),
        l(&acl.denied_channel),
    );
    let (polls, poll_hits) = crate::net::busy_poll::counts();
    let _ = write!(
        o,
        "busy_poll_polls:{polls}\r\nbusy_poll_hits:{poll_hits}\r\n"
    );
}
