//! Replication on Redis's own protocol (docs/replication.md): this server as
//! a master of redis-server or BlinkDB replicas.
//!
//! - `backlog`: the write stream, tapped from the engine's log calls, and
//!   the replicas' positions in it;
//! - `master`: SYNC/PSYNC, REPLCONF, the full sync and the streaming;
//! - `replica`: REPLICAOF and the link to a master (this server as a replica);
//! - `diskless_load`: repl-diskless-load, a full sync's RDB read from the socket;
//! - `fack`: a replica's FACK, how far its AOF is fsync'd (for WAITAOF);
//! - `waitaof`: WAITAOF, the local and the replicas' AOF fsyncs;
//! - here: the state in `Shared`, WAIT, ROLE, INFO replication and the cron.

pub mod backlog;
pub mod checkpoint;
pub(crate) mod commands;
pub mod diskless;
pub mod diskless_load;
pub mod fack;
pub mod failover;
pub mod master;
pub mod replica;
pub mod waitaof;

use crate::commands::Ctx;
use crate::protocol::Args;
use crate::server::state::Shared;
use backlog::Feed;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Replication traffic, counted apart from the clients' (INFO's
/// total_net_repl_*_bytes, as Redis 7.0): what this replica reads from its
/// master, sync payload included, and what this master writes to its replicas.
pub static NET_REPL_INPUT: AtomicU64 = AtomicU64::new(0);
pub static NET_REPL_OUTPUT: AtomicU64 = AtomicU64::new(0);

pub struct Replication {
    pub feed: Arc<Feed>,
    /// repl-timeout, seconds.
    pub timeout_secs: AtomicU64,
    /// This server as a replica (REPLICAOF).
    pub link: replica::Link,
    /// FAILOVER's state.
    pub failover: failover::Failover,
    /// The diskless full sync's scheduler.
    pub diskless: diskless::Diskless,
}

impl Replication {
    pub fn new(settings: &crate::config::Settings) -> Self {
        let r = Replication {
            feed: Arc::new(Feed::new(settings.repl_backlog_size)),
            timeout_secs: AtomicU64::new(settings.repl_timeout_secs),
            link: replica::Link::default(),
            failover: failover::Failover::default(),
            diskless: diskless::Diskless::default(),
        };
        r.apply(settings);
        r
    }

    /// Takes the replication options of `settings` (startup, CONFIG SET).
    pub fn apply(&self, settings: &crate::config::Settings) {
        self.feed.set_limits(
            settings.repl_backlog_size,
            settings.output_limits.replica.hard,
        );
        self.timeout_secs
            .store(settings.repl_timeout_secs, Ordering::Relaxed);
    }

    /// `repl-timeout` as a duration (at least a second).
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.timeout_secs.load(Ordering::Relaxed).max(1))
    }
}

/// WAIT numreplicas timeout: blocks until that many replicas acknowledged
/// the stream up to now (or the timeout), then answers how many did.
pub fn wait(ctx: &mut Ctx, args: &Args) {
    if ctx
        .shared
        .replication
        .link
        .is_replica
        .load(Ordering::Acquire)
    {
        return ctx.out.error("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.");
    }
    let Some(wanted) = crate::commands::args::parse_i64(args[1]) else {
        return ctx.out.error("ERR value is not an integer or out of range");
    };
    let end = match crate::commands::conn::timeout_ms(args[2]) {
        Ok(end) => end,
        Err(e) => return ctx.out.error(e),
    };
    let feed = &ctx.shared.replication.feed;
    let offset = feed.lock().offset;
    let acked = feed.lock().acked(offset);
    if wanted <= 0 || acked as i64 >= wanted || ctx.client.deny_blocking {
        return ctx.out.int(acked as i64);
    }
    let waiter = ctx.shared.exec.blocking.block_for_acks(
        ctx.client,
        args,
        end,
        crate::exec::blocking::TimeoutReply::Acks(offset),
    );
    feed.add_wait(ctx.client.id, offset, wanted as usize);
    ctx.client.block = Some(crate::exec::session::Block::Waiting(waiter));
}

/// ROLE, as a master: ["master", offset, [[ip, port, acked offset]...]].
pub fn role(ctx: &mut Ctx, _args: &Args) {
    if replica::role(ctx) {
        return;
    }
    let b = ctx.shared.replication.feed.lock();
    let online: Vec<_> = b
        .replicas
        .iter()
        .filter(|r| r.state == backlog::ReplicaState::Online)
        .map(|r| (r.ip.clone(), r.port, r.ack))
        .collect();
    let offset = b.offset;
    drop(b);
    ctx.out.array(3);
    ctx.out.bulk(b"master");
    ctx.out.int(offset as i64);
    ctx.out.array(online.len());
    for (ip, port, ack) in online {
        ctx.out.array(3);
        ctx.out.bulk(ip.as_bytes());
        ctx.out.bulk(port.to_string().as_bytes());
        ctx.out.bulk(ack.to_string().as_bytes());
    }
}

/// Online replicas whose last ACK is at most `max_lag` seconds old (Redis's
/// repl_good_slaves_count).
pub fn good_replicas(shared: &Shared, max_lag: u64) -> usize {
    let now = blinkdb_engine::now_ms() / 1000;
    shared
        .replication
        .feed
        .lock()
        .replicas
        .iter()
        .filter(|r| {
            r.state == backlog::ReplicaState::Online
                && now.saturating_sub(r.ack_ms / 1000) <= max_lag
        })
        .count()
}

/// INFO's replication section, with Redis 7.0's field names.
pub fn info_section(shared: &Shared, o: &mut String) {
    o.push_str("# Replication\r\n");
    if !replica::info_fields(shared, o) {
        o.push_str("role:master\r\n");
    }
    let settings = shared.settings();
    let failover_state = shared.replication.failover.phase().name();
    let good = (settings.min_replicas_to_write > 0 && settings.min_replicas_max_lag > 0)
        .then(|| good_replicas(shared, settings.min_replicas_max_lag));
    let b = shared.replication.feed.lock();
    let now = blinkdb_engine::now_ms();
    let _ = write!(o, "connected_slaves:{}\r\n", b.replicas.len());
    if let Some(good) = good {
        let _ = write!(o, "min_slaves_good_slaves:{good}\r\n");
    }
    for (i, r) in b.replicas.iter().enumerate() {
        let _ = write!(
            o,
            "slave{i}:ip={},port={},state={},offset={},lag={}\r\n",
            r.ip,
            r.port,
            r.state.name(),
            r.ack,
            now.saturating_sub(r.ack_ms) / 1000
        );
    }
    let _ = write!(
        o,
        "master_failover_state:{}\r\nmaster_replid:{}\r\nmaster_replid2:{}\r\nmaster_repl_offset:{}\r\nsecond_repl_offset:{}\r\nrepl_backlog_active:{}\r\nrepl_backlog_size:{}\r\nrepl_backlog_first_byte_offset:{}\r\nrepl_backlog_histlen:{}\r\n",
        failover_state,
        b.replid,
        b.replid2,
        b.offset,
        b.second_offset,
        u8::from(b.active),
        b.size,
        b.first_byte_offset(),
        b.histlen()
    );
}

/// Once a second: a PING into the stream every repl-ping-replica-period
/// seconds while replicas are connected, as Redis's replicationCron does.
pub async fn cron(shared: Arc<Shared>) {
    if let Some((host, port)) = shared.settings().replicaof.clone() {
        // Restarted as a replica: where the AOF just loaded left us in the
        // master's stream, if the checkpoint says so (checkpoint.rs).
        if let Some((replid, offset)) = checkpoint::load(&shared) {
            shared.replication.feed.follow_full(&replid, offset);
        }
        replica::follow(&shared, host, port);
    }
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut seconds = 0u64;
    loop {
        tick.tick().await;
        seconds += 1;
        let period = shared.settings().repl_ping_replica_period.max(1);
        // No PING while FAILOVER waits for a replica to catch up (it would
        // move the offset the replica must acknowledge).
        if seconds.is_multiple_of(period)
            && !shared.exec.pause.failover()
            && !shared.replication.feed.lock().replicas.is_empty()
        {
            shared.replication.feed.feed_raw(&[b"PING"]);
        }
    }
}
