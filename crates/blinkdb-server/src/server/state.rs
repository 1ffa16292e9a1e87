//! State shared by all connections.

use crate::client::ClientInfo;
use crate::config::{Config, OnSet, Settings, Stage};
use blinkdb_engine::Engine;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::watch;

/// The DEBUG handle: switches DEBUG sets for Redis's tests.
pub struct DebugSwitches {
    /// DEBUG SET-ACTIVE-EXPIRE 0 turns the background expiry off.
    pub active_expire: AtomicBool,
    /// DEBUG PAUSE-CRON: the main 100 ms cron does nothing while set.
    pub cron_paused: AtomicBool,
    /// DEBUG REPLYBUFFER RESIZING: a reply buffer grown past 1 MB is dropped
    /// after its batch (off: kept as grown).
    pub reply_buffer_resizing: AtomicBool,
    /// DEBUG QUICKLIST-PACKED-THRESHOLD: list elements of this many bytes
    /// or more are plain nodes of their own (1 GB until set; a server-wide
    /// setting, as quicklist.c's static packed_threshold).
    pub list_packed_threshold: AtomicUsize,
    /// DEBUG SET-DISABLE-DENY-SCRIPTS 1: scripts may call the commands
    /// flagged `noscript` too (Redis's tests use it to reach DEBUG and
    /// CLIENT from Lua).
    pub scripts_may_call_noscript: AtomicBool,
}

impl Default for DebugSwitches {
    fn default() -> Self {
        DebugSwitches {
            active_expire: AtomicBool::new(true),
            cron_paused: AtomicBool::new(false),
            reply_buffer_resizing: AtomicBool::new(true),
            list_packed_threshold: AtomicUsize::new(blinkdb_engine::DEFAULT_PACKED_THRESHOLD),
            scripts_may_call_noscript: AtomicBool::new(false),
        }
    }
}

/// Why the server is stopping (SHUTDOWN or a signal).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stop {
    Running,
    Requested,
}

pub struct Shared {
    pub engine: Arc<Engine>,
    /// The options and their typed settings (config/live.rs).
    pub options: crate::config::live::Live<Shared>,
    /// Every connected client (CLIENT LIST/KILL, maxclients).
    pub clients: crate::client::registry::Registry,
    /// INFO's counters and instantaneous rates (info/stats.rs).
    pub stats: crate::info::stats::Stats,
    pub started_ms: u64,
    /// used_memory's samples and the eviction's state (memory/).
    pub memory: crate::memory::Memory,
    /// What saves, rewrites and loads record (persistence/).
    pub persistence: crate::persistence::Persistence,
    pub run_id: String,
    /// The EXEC gate, CLIENT PAUSE, blocked clients (exec/).
    pub exec: crate::exec::Pipeline,
    /// SLOWLOG, LATENCY, MONITOR (commands/).
    pub diagnostics: crate::commands::Diagnostics,
    /// What DEBUG switches off or on (commands/debug.rs).
    pub debug: DebugSwitches,
    /// Pub/Sub subscriptions of every connection.
    pub pubsub: Arc<crate::pubsub::Registry>,
    pub scripting: crate::scripting::Scripting,
    /// The replication stream and the replicas (replication/).
    pub replication: crate::replication::Replication,
    /// Keyspace events and client-side caching: the engine's observer.
    pub notify: Arc<crate::pubsub::notify::Notifier>,
    /// Redis Cluster state, when `cluster-enabled yes` (cluster/).
    pub cluster: Option<Arc<crate::cluster::Cluster>>,
    /// ACL users, ACL LOG and the refusal counts (acl/).
    pub acl: crate::server::acl::Acl,
    /// Serializes updates of the engine's interest mask.
    interest_update: Mutex<()>,
    stop: watch::Sender<Stop>,
    this: std::sync::OnceLock<std::sync::Weak<Shared>>,
    /// The listeners and the TLS contexts (net/).
    pub net: crate::net::Network,
}

/// What memory accounting and eviction read of the server (memory/ is
/// below this state and takes only this).
impl crate::memory::Host for Shared {
    fn memory(&self) -> &crate::memory::MemoryState {
        &self.memory.accounting
    }
    fn eviction(&self) -> &crate::memory::eviction::EvictionState {
        &self.memory.eviction
    }
    fn engine(&self) -> &Engine {
        &self.engine
    }
    fn settings(&self) -> Arc<Settings> {
        Shared::settings(self)
    }
    fn lua_vm_bytes(&self) -> u64 {
        let (eval_vm, functions_vm) = self.scripting.vm_memory();
        (eval_vm + functions_vm) as u64
    }
    fn replication_buffer(&self) -> crate::memory::ReplicationBuffer {
        let b = self.replication.feed.lock();
        crate::memory::ReplicationBuffer {
            bytes: b.buffer_bytes(),
            backlog_size: b.size as u64,
            replicas: !b.replicas.is_empty(),
        }
    }
    fn note_used_memory(&self, used: u64) -> u64 {
        self.stats.instant.note_memory(used)
    }
    fn between_commands(&self, f: &mut dyn FnMut()) {
        if let Some(_gate) = self.exec.gate.shared_unless(&self.scripting.busy) {
            f();
        }
    }
    fn clients(&self) -> Vec<Arc<ClientInfo>> {
        self.clients.snapshot()
    }
    fn clients_memory_total(&self) -> &AtomicU64 {
        &self.stats.clients_memory
    }
    fn evicted_clients(&self) -> &AtomicU64 {
        &self.stats.evicted_clients
    }
}

impl crate::exec::gate::HoldsGate for Shared {
    fn gate(&self) -> &crate::exec::gate::ExecGate {
        &self.exec.gate
    }
}

impl Shared {
    pub fn new(
        engine: Arc<Engine>,
        config: Config,
        on_loglevel: crate::server::logging::LevelSetter,
        config_set_effects: &'static [OnSet<Shared>],
    ) -> Self {
        crate::client::name_commands_with(|i| crate::commands::COMMANDS.get(i).map(|c| c.name));
        let settings = Arc::new(config.settings());
        let pubsub = Arc::new(crate::pubsub::Registry::default());
        let notify = Arc::new(crate::pubsub::notify::Notifier::new(pubsub.clone()));
        engine.set_observer(notify.clone());
        let replication = crate::replication::Replication::new(&settings);
        engine.set_feed(replication.feed.clone());
        let run_id: String = (0..40)
            .map(|_| format!("{:x}", rand::random::<u8>() % 16))
            .collect();
        Shared {
            engine,
            options: crate::config::live::Live::new(
                config,
                settings,
                config_set_effects,
                on_loglevel,
            ),
            clients: Default::default(),
            stats: Default::default(),
            started_ms: blinkdb_engine::now_ms(),
            memory: Default::default(),
            persistence: Default::default(),
            run_id,
            debug: Default::default(),
            exec: Default::default(),
            diagnostics: Default::default(),
            pubsub,
            scripting: Default::default(),
            replication,
            notify,
            cluster: None,
            acl: crate::server::acl::Acl::new(),
            interest_update: Mutex::new(()),
            stop: watch::channel(Stop::Running).0,
            this: std::sync::OnceLock::new(),
            net: Default::default(),
        }
    }

    /// Wraps a new Shared in an Arc that it can hand out itself (for
    /// background jobs started by commands).
    pub fn into_arc(self) -> Arc<Shared> {
        self.apply_notify_settings(&self.settings());
        let arc = Arc::new(self);
        let _ = arc.this.set(Arc::downgrade(&arc));
        // Functions libraries head every rewritten AOF (as FUNCTION LOAD).
        let weak = Arc::downgrade(&arc);
        arc.engine.set_rewrite_preamble(Box::new(move || {
            weak.upgrade()
                .map(|s| s.scripting.functions.lock().load_records())
                .unwrap_or_default()
        }));
        arc
    }

    pub fn arc(&self) -> Arc<Shared> {
        self.this
            .get()
            .and_then(|w| w.upgrade())
            .expect("Shared is always created through into_arc")
    }

    /// The current typed settings (cheap: an Arc clone).
    pub fn settings(&self) -> Arc<Settings> {
        self.options.settings()
    }

    pub fn settings_version(&self) -> u64 {
        self.options.version()
    }

    pub fn config(&self) -> parking_lot::RwLockReadGuard<'_, Config> {
        self.options.config()
    }

    /// Sets one option from inside the server (REPLICAOF's `replicaof`).
    pub fn config_set_internal(&self, name: &'static str, value: String) {
        let mut cfg = self.options.config_mut();
        cfg.set_internal(name, value);
        let settings = cfg.settings();
        // A master turned replica (or back) takes its class's OOM score.
        let _ = crate::server::process::apply_oom_score_adj(&settings);
        self.options.publish(Arc::new(settings));
    }

    /// Applies CONFIG SET pairs all-or-nothing; `protected_ok`: the client may
    /// change the `config::PROTECTED` options.
    pub fn config_set(
        &self,
        pairs: &[(String, String)],
        protected_ok: bool,
    ) -> Result<(), (String, String)> {
        // A parameter named twice is refused, as in Redis (which lets an
        // alias and its name through together).
        for (i, (k, _)) in pairs.iter().enumerate() {
            if crate::config::find(k).is_some() && pairs[..i].iter().any(|(p, _)| p == k) {
                return Err((k.clone(), "duplicate parameter".into()));
            }
        }
        let mut cfg = self.options.config_mut();
        let mut next = cfg.clone();
        for (k, v) in pairs {
            if !protected_ok && crate::config::PROTECTED.contains(&k.as_str()) {
                return Err((k.clone(), "can't set protected config".into()));
            }
            next.set_runtime(k, v).map_err(|e| (k.clone(), e))?;
        }
        // The typed settings of the new values, made once: the steps that can
        // fail come first, then those that cannot, then the commit.
        let settings = Arc::new(next.settings());
        let changed = |o: &str| next.get(o) != cfg.get(o);
        if let Err(e) = crate::config::hooks::run(
            self.options.effects,
            Stage::BeforeCommit,
            self,
            &settings,
            &changed,
        ) {
            // As Redis's rollback: the steps that ran are applied again with
            // the old values (an OOM score set before a port that failed).
            let old = Arc::new(cfg.settings());
            let restored = crate::config::hooks::run(
                self.options.effects,
                Stage::BeforeCommit,
                self,
                &old,
                &changed,
            );
            if let Err((name, err)) = restored {
                tracing::warn!("Failed applying restored value for '{name}': {err}");
            }
            return Err(e);
        }
        let old = std::mem::replace(&mut *cfg, next);
        let changed = |o: &str| cfg.get(o) != old.get(o);
        self.options.publish(settings.clone());
        self.apply_notify_settings(&settings);
        self.replication.apply(&settings);
        crate::config::hooks::run(
            self.options.effects,
            Stage::AfterCommit,
            self,
            &settings,
            &changed,
        )
    }

    /// CONFIG SET loglevel: the log filter follows at once.
    pub const LOGLEVEL_ON_SET: OnSet<Shared> = OnSet {
        options: &["loglevel"],
        stage: Stage::AfterCommit,
        apply: |s, settings, _| {
            (s.options.on_loglevel)(&settings.loglevel);
            Ok(())
        },
    };

    /// Hands `notify-keyspace-events`, the output limits and
    /// `tracking-table-max-keys` to the notifier, and the policy the access
    /// clocks follow (LRU, or LFU with its factor and decay) to the engine.
    fn apply_notify_settings(&self, s: &Settings) {
        use blinkdb_engine::EvictionRank;
        let rank = s.evict_sampled.map(|p| p.rank);
        self.engine.access.configure(
            rank == Some(EvictionRank::Lfu),
            rank == Some(EvictionRank::Lru),
            s.lfu_log_factor,
            s.lfu_decay_time,
        );
        self.notify
            .configure(s.notify_keyspace_events, s.output_limits.pubsub);
        self.notify
            .tracking
            .set_limits(s.output_limits, s.tracking_table_max_keys);
        self.refresh_interest();
    }

    /// Tells the engine what to report, after the event flags or the number
    /// of tracking clients changed.
    pub fn refresh_interest(&self) {
        let _one = self.interest_update.lock();
        self.engine.set_interest(self.notify.interest());
    }

    pub fn clock(&self) -> u64 {
        blinkdb_engine::now_ms()
    }

    pub fn unregister(&self, id: u64) {
        self.diagnostics.monitors.remove(id);
        // A connection that ended while blocked (a panic included) leaves
        // nothing registered.
        self.exec.blocking.unblock(self, id, false);
        self.clients.remove(id);
    }

    /// A persistence failure that refuses writes right now (Redis's
    /// writeCommandsDeniedByDiskError): the last BGSAVE failed under
    /// stop-writes-on-bgsave-error, or the log cannot write.
    pub fn disk_refusal(&self, settings: &Settings) -> Option<DiskError> {
        if settings.stop_writes_on_bgsave_error
            && !settings.save_points.is_empty()
            && !self
                .persistence
                .rdb_save
                .last_bgsave_ok
                .load(Ordering::Relaxed)
        {
            return Some(DiskError::Rdb);
        }
        let log = self.engine.log_handle()?;
        log.aof
            .write_status()
            .err()
            .map(|e| DiskError::Aof(e.to_string()))
    }

    /// What a write inside a script is refused with, in Redis's order for
    /// scripts: a persistence failure, then (`denyoom`) maxmemory or
    /// max-disk-size, under allkeys-fifo only once nothing is left to evict.
    pub fn write_refusal(&self, denyoom: bool, settings: &Settings) -> Option<String> {
        if let Some(e) = self.disk_refusal(settings) {
            return Some(e.message());
        }
        self.oom_refusal(denyoom, settings)
    }

    /// What a command is refused with before it runs, in the order of
    /// Redis's processCommand: memory first (`denyoom`), then a persistence
    /// failure, which refuses writes and PING. What our master sends is
    /// not refused for a failed BGSAVE (Redis obeys its master).
    pub fn command_refusal(
        &self,
        denyoom: bool,
        settings: &Settings,
        from_master: bool,
    ) -> Option<String> {
        if let Some(e) = self.oom_refusal(denyoom, settings) {
            return Some(e);
        }
        match self.disk_refusal(settings)? {
            DiskError::Rdb if from_master => None,
            e => Some(e.message()),
        }
    }

    /// Evicts while over maxmemory or max-disk-size, as Redis's
    /// performEvictions before a command; a `denyoom` command is refused if
    /// that could not bring memory under the limit.
    /// Inlined to the test of the limits, every command's cost without them
    /// (the eviction inlined with it made a call of 25 instructions).
    #[inline]
    pub fn oom_refusal(&self, denyoom: bool, settings: &Settings) -> Option<String> {
        if settings.maxmemory > 0 || settings.max_disk_size > 0 {
            return self.evict_for(denyoom, settings);
        }
        None
    }

    #[inline(never)]
    fn evict_for(&self, denyoom: bool, settings: &Settings) -> Option<String> {
        let refusal = crate::memory::eviction::refusal(self, settings);
        if denyoom {
            return refusal.map(str::to_string);
        }
        None
    }

    /// Stops listeners and cycles, and asks every connection to finish the
    /// batch in hand and close.
    pub fn request_stop(&self) {
        let _ = self.stop.send(Stop::Requested);
        self.clients.kill(|_| true, None);
    }

    pub fn stop_signal(&self) -> watch::Receiver<Stop> {
        self.stop.subscribe()
    }
}

/// Redis's reply to a write after a failed background save.
pub const ERR_BGSAVE: &str = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.";

/// Why writes are refused for persistence (see `Shared::disk_refusal`).
pub enum DiskError {
    /// The last BGSAVE failed.
    Rdb,
    /// The log's error, as a MISCONF reply.
    Aof(String),
}

impl DiskError {
    /// The reply to a refused command.
    pub fn message(self) -> String {
        match self {
            DiskError::Rdb => ERR_BGSAVE.to_string(),
            DiskError::Aof(e) => e,
        }
    }

    /// The reply to a script that declares it may write (Redis's
    /// scriptPrepareForRun), with the log's own reason.
    pub fn script_message(self) -> String {
        const BLOCKED: &str = "but it's currently unable to persist to disk. Writable scripts are blocked. Use 'no-writes' flag for read only scripts.";
        match self {
            DiskError::Rdb => {
                format!("MISCONF Redis is configured to save RDB snapshots, {BLOCKED}")
            }
            DiskError::Aof(e) => {
                let reason = e
                    .strip_prefix("MISCONF Errors writing to the AOF file: ")
                    .unwrap_or(&e);
                format!("MISCONF Redis is configured to persist data to AOF, {BLOCKED} AOF error: {reason}")
            }
        }
    }
}
