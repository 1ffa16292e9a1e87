//! The connection's own state (Redis's client struct less what other
//! connections see, which is `client::ClientInfo`): its database, protocol,
//! transaction, subscriptions, script, tracking and replica hand-off.

use crate::client::{ClientInfo, Peer, FLAG_READONLY};
use crate::server::state::Shared;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// State owned by the connection task.
pub struct Client {
    settings: Arc<crate::config::Settings>,
    settings_version: u64,
    last_stats_flush_ms: u64,
    pub id: u64,
    pub db: usize,
    pub proto: u8,
    pub authenticated: bool,
    /// The ACL user (`default` until AUTH), as of ACL version `acl_version`.
    pub user: Arc<crate::server::acl::User>,
    pub acl_version: u64,
    pub info: Arc<ClientInfo>,
    /// Highest log position written by this batch of commands.
    pub pending_lsn: u64,
    /// Highest log position of the batches before (WAITAOF waits for its fsync).
    pub woff_lsn: u64,
    pub close_after_reply: bool,
    pub commands_processed: u64,
    pub keyspace_hits: u64,
    pub keyspace_misses: u64,
    pub net_in: u64,
    pub net_out: u64,
    /// Reads from the socket and reply batches written (INFO's
    /// total_reads_processed/total_writes_processed).
    pub reads: u64,
    pub writes: u64,
    /// Open transaction (MULTI until EXEC or DISCARD).
    pub multi: Option<crate::commands::multi::Transaction>,
    pub watching: Option<crate::commands::multi::Watching>,
    /// Set by MONITOR: the lines this connection streams.
    pub monitor: Option<std::sync::Arc<crate::commands::monitor::Sink>>,
    /// CLIENT REPLY OFF.
    pub reply_off: bool,
    /// The reply of the command now running is dropped (CLIENT REPLY SKIP
    /// was the command before).
    pub reply_skip: bool,
    /// Set by CLIENT REPLY SKIP: drop the next command's reply.
    pub reply_skip_next: bool,
    /// Set by a command that makes the connection wait before its reply.
    pub block: Option<Block>,
    /// Running inside EXEC (or a script): commands that would block answer
    /// at once instead, as for Redis's CLIENT_DENY_BLOCKING.
    pub deny_blocking: bool,
    /// Pub/Sub subscriptions, while there are any.
    pub pubsub: Option<Box<crate::pubsub::Subscriptions>>,
    /// The script this client runs, while it is paused past the busy
    /// threshold (scripting/run.rs).
    pub script: Option<Box<crate::scripting::run::RunState>>,
    /// SCRIPT DEBUG SYNC: this client's next EVAL runs under the debugger.
    pub script_debug: bool,
    /// Exclusive mode taken by the connection for the script command it is
    /// about to dispatch; the script keeps it until it ends.
    pub script_gate: Option<crate::exec::gate::ExclusiveToken>,
    /// Client-side caching, while CLIENT TRACKING is on.
    pub tracking: Option<Box<crate::tracking::ClientTracking>>,
    /// Running the commands of EXEC (a CLIENT CACHING given before it lasts
    /// for all of them).
    pub in_exec: bool,
    /// Cluster mode: ASKING was sent (the next command may use an importing slot).
    pub cluster_asking: bool,
    /// Cluster mode: READONLY (reads served by a replica).
    pub cluster_readonly: bool,
    /// The reply buffer was allocated since its last batch (CLIENT LIST `rbp`).
    pub reply_buffer_fresh: bool,
    /// What a replica said with REPLCONF before PSYNC.
    pub repl_conf: crate::replication::master::ReplConf,
    /// Set by PSYNC/SYNC: the connection becomes a replica's stream once
    /// the reply is out.
    pub replica_handoff: Option<crate::replication::master::Handoff>,
}

/// Why a connection waits before answering (and runs nothing else meanwhile).
pub enum Block {
    /// Registered as waiting (blocking.rs): a blocking command that found
    /// nothing, or WAIT for replicas (which never come: there is no
    /// replication, so it answers 0 at its deadline).
    Waiting(std::sync::Arc<crate::exec::blocking::Waiter>),
}

impl Client {
    /// Redis's authRequired: the client has not logged in and the default
    /// user needs a password or is off. Not the same as `!authenticated`:
    /// once the default user is `nopass` and on, a client that never
    /// logged in runs commands as `default` (and loses that again if a
    /// password comes back), as in Redis.
    pub fn auth_required(&self, shared: &Shared) -> bool {
        !self.authenticated && shared.acl.auth_required()
    }

    /// An authenticated client of the server's own (AOF or RDB loading runs
    /// its commands through one), named `name` in logs and CLIENT LIST.
    pub fn internal(shared: &Shared, name: &str) -> Self {
        let info = Arc::new(ClientInfo::new(
            0,
            name.into(),
            name.into(),
            -1,
            Peer::Internal,
            shared.clock(),
        ));
        let mut client = Client::new(info, shared);
        client.authenticated = true;
        client
    }

    pub fn new(info: Arc<ClientInfo>, shared: &Shared) -> Self {
        let settings = shared.settings();
        let acl_version = shared.acl.version();
        let user = shared.acl.default_user();
        info.usage
            .session_mem
            .store(std::mem::size_of::<Client>() as u64, Ordering::Relaxed);
        Client {
            settings_version: shared.settings_version(),
            authenticated: info.open_at_accept.load(Ordering::Relaxed),
            user,
            acl_version,
            settings,
            last_stats_flush_ms: 0,
            id: info.id,
            db: 0,
            proto: 2,
            info,
            pending_lsn: 0,
            woff_lsn: 0,
            close_after_reply: false,
            script_debug: false,
            commands_processed: 0,
            keyspace_hits: 0,
            keyspace_misses: 0,
            net_in: 0,
            net_out: 0,
            reads: 0,
            writes: 0,
            multi: None,
            watching: None,
            monitor: None,
            reply_off: false,
            reply_skip: false,
            reply_skip_next: false,
            block: None,
            deny_blocking: false,
            pubsub: None,
            script: None,
            script_gate: None,
            tracking: None,
            in_exec: false,
            cluster_asking: false,
            cluster_readonly: false,
            reply_buffer_fresh: true,
            repl_conf: Default::default(),
            replica_handoff: None,
        }
    }

    /// This connection's copy of the settings, refreshed after CONFIG SET
    /// (a plain load on the hot path instead of a shared lock and refcount).
    pub fn settings(&mut self, shared: &Shared) -> &crate::config::Settings {
        let v = shared.settings_version();
        if v != self.settings_version {
            self.settings = shared.settings();
            self.settings_version = v;
        }
        &self.settings
    }

    pub fn note_lsn(&mut self, lsn: u64) {
        self.pending_lsn = self.pending_lsn.max(lsn);
    }

    pub fn count_lookup(&mut self, hit: bool) {
        if hit {
            self.keyspace_hits += 1;
        } else {
            self.keyspace_misses += 1;
        }
    }

    /// Cluster READONLY or READWRITE (RESET too), as CLIENT LIST's flag `r` shows it.
    pub fn set_cluster_readonly(&mut self, on: bool) {
        self.cluster_readonly = on;
        self.info.set_flag(FLAG_READONLY, on);
    }

    pub fn set_db(&mut self, db: usize) {
        self.db = db;
        self.info.db.store(db, Ordering::Relaxed);
    }

    pub fn set_proto(&mut self, proto: u8) {
        self.proto = proto;
        self.info.proto.store(proto, Ordering::Relaxed);
        if let Some(inbox) = self.info.inbox_if_any() {
            inbox.set_proto(proto);
        }
    }

    /// True in the RESP2 subscribed context, where replies change shape (PING).
    pub fn in_resp2_subscribed(&self) -> bool {
        self.proto == 2 && self.pubsub.is_some()
    }

    pub fn set_name(&mut self, name: Option<&[u8]>) {
        self.info.set_name(name);
    }

    /// Moves this connection's counters into the server totals, at most
    /// every 10 ms unless `force` (shared counters are contended cache lines).
    pub fn flush_stats(&mut self, shared: &Shared, now_ms: u64, force: bool) {
        if !force && now_ms.saturating_sub(self.last_stats_flush_ms) < 10 {
            return;
        }
        self.last_stats_flush_ms = now_ms;
        let s = &shared.stats;
        if self.net_in > 0 {
            s.net_input_bytes
                .fetch_add(std::mem::take(&mut self.net_in), Ordering::Relaxed);
        }
        if self.net_out > 0 {
            s.net_output_bytes
                .fetch_add(std::mem::take(&mut self.net_out), Ordering::Relaxed);
        }
        if self.reads > 0 {
            s.reads_processed
                .fetch_add(std::mem::take(&mut self.reads), Ordering::Relaxed);
        }
        if self.writes > 0 {
            s.writes_processed
                .fetch_add(std::mem::take(&mut self.writes), Ordering::Relaxed);
        }
        if self.commands_processed > 0 {
            s.commands
                .fetch_add(self.commands_processed, Ordering::Relaxed);
            self.commands_processed = 0;
        }
        if self.keyspace_hits > 0 {
            s.keyspace_hits
                .fetch_add(self.keyspace_hits, Ordering::Relaxed);
            self.keyspace_hits = 0;
        }
        if self.keyspace_misses > 0 {
            s.keyspace_misses
                .fetch_add(self.keyspace_misses, Ordering::Relaxed);
            self.keyspace_misses = 0;
        }
    }
}
