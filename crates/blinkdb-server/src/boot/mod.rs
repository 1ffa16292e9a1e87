//! Start-up, background cycles and graceful shutdown.

pub mod logo;

use crate::config::Config;
use crate::net::socket::bind_unix;
use crate::serve::listen::{accept_loop, UnixAcceptor};
use crate::server::state::Shared;
use blinkdb_engine::{Engine, EngineOptions};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Lets the process hold one descriptor per allowed client, as Redis does.
fn raise_nofile(want: u64) {
    // SAFETY: plain getrlimit/setrlimit on a local struct.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 || lim.rlim_cur >= want {
            return;
        }
        let target = want.min(lim.rlim_max);
        lim.rlim_cur = target;
        if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 || target < want {
            tracing::warn!(
                "You requested maxclients of {} requiring at least {} max file descriptors; the limit is {}",
                want - 32,
                want,
                target
            );
        }
    }
}

/// Starts the connection threads (net/io_threads.rs), each with the
/// thread-local services that serving a connection uses: the AOF flusher's
/// handle and the blocked clients' timer wheel.
pub fn start_io_threads(n: usize, busy_poll: Duration) -> std::io::Result<()> {
    crate::net::io_threads::start(
        n,
        busy_poll,
        &[
            crate::persistence::flusher::install,
            crate::exec::block_timer::install,
        ],
    )
}

/// Runs the server until SHUTDOWN or SIGTERM/SIGINT.
pub async fn run(
    config: Config,
    on_loglevel: crate::server::logging::LevelSetter,
) -> Result<(), String> {
    let settings = config.settings();
    std::fs::create_dir_all(&settings.dir).map_err(|e| {
        format!(
            "Can't create data directory '{}': {e}",
            settings.dir.display()
        )
    })?;
    // Before anything of ours writes there: a save cut short by a crash.
    crate::persistence::stale_temp::remove_stale(&settings.dir);
    raise_nofile(settings.maxclients as u64 + 32);
    crate::persistence::apply_debug_delays(&settings);
    crate::exec::propagation::apply_exit_on_panic(&settings);
    let engine = Arc::new(Engine::new(EngineOptions {
        databases: settings.databases,
        data_dir: settings.dir.clone(),
        bpf_pin_root: settings.bpf_pin_root.clone(),
        existence_filter_size: settings.existence_filter_size,
    }));
    let config_file = config.file.clone();
    let cluster = if config.get("cluster-enabled") == "yes" {
        // Keys by slot (docs/cluster.md), before any data loads.
        engine.enable_slot_index();
        Some(Arc::new(crate::cluster::Cluster::open(&config, &settings)?))
    } else {
        None
    };
    let users = config.users.clone();
    let mut shared = Shared::new(engine, config, on_loglevel, CONFIG_SET_EFFECTS);
    shared.cluster = cluster;
    crate::commands::acl::load_at_startup(&shared, &users, &settings)?;
    let shared = shared.into_arc();
    crate::memory::note_startup(&*shared);
    // Without an AOF the RDB file is the dataset, as in redis-server.
    let rdb_to_load = if settings.appendonly {
        None
    } else {
        settings
            .load_rdb
            .clone()
            .or_else(|| Some(crate::persistence::rdb_file::path(&settings)).filter(|p| p.exists()))
    };
    if settings.appendonly || rdb_to_load.is_some() {
        // Clients may connect while the data loads; they get -LOADING (set
        // before the listeners open, so no PING sees PONG before a failed load).
        shared.engine.set_loading(true);
        // INFO must show when loading began from the first moment it says loading:1.
        shared
            .persistence
            .loading
            .start_ms
            .store(shared.clock(), Ordering::Relaxed);
    }

    let mut listening = shared
        .net
        .listeners
        .start(
            &crate::serve::listen::accepting(&shared),
            &settings.bind,
            settings.port,
            settings.tcp_backlog,
        )
        .map_err(|e| {
            // Redis's two lines; its test harness retries another port on the second.
            tracing::warn!("Warning: Could not create server TCP listening socket {e}");
            format!(
                "Failed listening on port {} (tcp), aborting.",
                settings.port
            )
        })?;
    if crate::net::tls::wanted(settings.tls_port, &settings.tls) {
        shared
            .net
            .tls
            .configure(&settings.tls)
            .map_err(|_| "Failed to configure TLS. Check logs for more info.".to_string())?;
    }
    // Started at port 0 too: CONFIG SET tls-port opens them later.
    {
        let tls = shared
            .net
            .tls_listeners
            .start(
                &crate::serve::listen::accepting_tls(&shared),
                &settings.bind,
                settings.tls_port,
                settings.tcp_backlog,
            )
            .map_err(|e| {
                tracing::warn!("Warning: Could not create server TCP listening socket {e}");
                format!(
                    "Failed listening on port {} (tls), aborting.",
                    settings.tls_port
                )
            })?;
        listening.extend(tls.into_iter().map(|a| format!("{a} (tls)")));
    }
    if let Some(path) = &settings.unixsocket {
        let l = bind_unix(path, settings.unixsocketperm)
            .map_err(|e| format!("Failed opening unix socket {}: {e}", path.display()))?;
        let local = path.display().to_string();
        listening.push(local.clone());
        tokio::spawn(accept_loop(
            shared.clone(),
            UnixAcceptor(l, local.clone()),
            local,
            None,
        ));
    }
    if let Some(pidfile) = crate::server::process::pidfile(&settings) {
        if let Err(e) = std::fs::write(&pidfile, format!("{}\n", std::process::id())) {
            tracing::warn!("Failed to write PID file: {e}");
        }
    }
    crate::server::process::disable_thp(&settings);
    let _ = crate::server::process::apply_oom_score_adj(&settings);
    tracing::info!(
        "BlinkDB {} (Redis {} compatible) started: pid={}, listening on {}, config file: {}",
        env!("CARGO_PKG_VERSION"),
        crate::REDIS_COMPAT_VERSION,
        std::process::id(),
        listening.join(", "),
        config_file
            .as_ref()
            .map_or("none (embedded defaults)".to_string(), |p| p
                .display()
                .to_string())
    );
    crate::boot::logo::show(&settings, shared.cluster.is_some());
    // Redis logs this before loading its data; Redis 8.0's test harness
    // waits for it after the logo's PID line.
    tracing::info!("Server initialized");
    if settings.appendonly {
        let (s, st) = (shared.clone(), settings.clone());
        let loaded = tokio::task::spawn_blocking(move || crate::persistence::load(&*s, &st))
            .await
            .map_err(|e| format!("AOF loading task failed: {e}"))?;
        // A failed load exits still loading: no client sees PONG from a
        // server about to abort.
        loaded?;
        shared.engine.set_loading(false);
    } else if let Some(file) = rdb_to_load {
        let (s, st) = (shared.clone(), settings.clone());
        let loaded = tokio::task::spawn_blocking(move || {
            crate::persistence::rdb_file::import(&*s, &st, &file)
        })
        .await
        .map_err(|e| format!("RDB loading task failed: {e}"))?;
        loaded?;
        shared.engine.set_loading(false);
    }
    tracing::info!("Ready to accept connections");
    crate::server::supervise::ready();
    tokio::spawn(expire_cycle(shared.clone()));
    tokio::spawn(cron(shared.clone()));
    tokio::spawn(crate::replication::cron(shared.clone()));
    if shared.cluster.is_some() {
        crate::cluster::bus::run(shared.clone(), settings.bind.clone()).await?;
    }
    tokio::spawn(crate::persistence::bloom_flush::cycle(
        shared.engine.clone(),
        shared.stop_signal(),
    ));
    tokio::spawn(crate::persistence::sketch_flush::cycle(
        shared.engine.clone(),
        shared.stop_signal(),
    ));

    // A signal stops the server as SHUTDOWN with shutdown-on-sigterm's (or
    // -sigint's) flags would: the RDB file written first with `save` points
    // or SAVE, not with NOSAVE; a failed save keeps the server running
    // unless FORCE, as Redis's prepareForShutdown.
    while let Some(flags) = wait_for_stop(&shared).await {
        tracing::warn!("User requested shutdown...");
        crate::server::supervise::notify("STOPPING=1\n");
        let current = shared.settings();
        let save = flags.save || (!flags.nosave && !current.save_points.is_empty());
        if save {
            tracing::info!("Saving the final RDB snapshot before exiting.");
            let s = shared.clone();
            let saved =
                match tokio::task::spawn_blocking(move || crate::persistence::rdb_file::save(&*s))
                    .await
                {
                    Ok(r) => r,
                    Err(e) => Err(e.to_string()),
                };
            if let Err(e) = saved {
                if flags.force {
                    tracing::warn!("Error trying to save the DB. Exit anyway. ({e})");
                } else {
                    tracing::warn!("Error trying to save the DB, can't exit. ({e})");
                    tracing::warn!(
                        "Errors trying to shut down the server. Check the logs for more information."
                    );
                    continue;
                }
            }
        }
        shared.request_stop();
        break;
    }
    shutdown(&shared, &settings).await;
    Ok(())
}

/// Waits for SHUTDOWN or a signal: the signal's shutdown flags, or None
/// once SHUTDOWN stopped the server.
async fn wait_for_stop(shared: &Shared) -> Option<crate::config::ShutdownFlags> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    let mut stop = shared.stop_signal();
    tokio::select! {
        _ = term.recv() => {
            tracing::warn!("Received SIGTERM scheduling shutdown...");
            Some(shared.settings().shutdown_on_sigterm)
        }
        _ = int.recv() => {
            tracing::warn!("Received SIGINT scheduling shutdown...");
            Some(shared.settings().shutdown_on_sigint)
        }
        _ = stop.changed() => None,
    }
}

async fn shutdown(shared: &Shared, settings: &crate::config::Settings) {
    // Connections finish the batch in hand, then close; give them a moment.
    // Not a script past busy-reply-threshold (SHUTDOWN NOSAVE's case): its
    // connection finishes nothing until the script ends, and Redis exits at once.
    let deadline = Instant::now() + Duration::from_secs(2);
    while shared.clients.connected() > 0 && Instant::now() < deadline && !shared.scripting.is_busy()
    {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    if let Some(log) = shared.engine.log_handle() {
        tracing::info!("Flushing and syncing the AOF on shutdown");
        if let Err(e) = log.aof.flush_all() {
            tracing::error!("Error flushing the AOF on shutdown: {e}");
        }
    }
    if let Some(path) = &settings.unixsocket {
        let _ = std::fs::remove_file(path);
    }
    crate::persistence::bloom_flush::flush_now(&shared.engine);
    crate::persistence::sketch_flush::flush_now(&shared.engine);
    if let Some(pidfile) = crate::server::process::pidfile(settings) {
        let _ = std::fs::remove_file(pidfile);
    }
    tracing::warn!("BlinkDB is now ready to exit, bye bye...");
}

/// Every 100 ms: samples memory use (INFO, maxmemory), evicts in cache mode,
/// evicts clients over `maxmemory-clients`, closes clients whose output stays
/// over its soft limit
/// and checks the automatic AOF rewrite trigger and the `save` points.
async fn cron(shared: Arc<Shared>) {
    let mut stop = shared.stop_signal();
    loop {
        if shared.debug.cron_paused.load(Ordering::Relaxed) {
            // DEBUG PAUSE-CRON 1: tests see what happens without it.
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                _ = stop.changed() => return,
            }
            continue;
        }
        crate::memory::cron(&*shared);
        let stats = &shared.stats;
        shared.stats.instant.sample(
            shared.clock(),
            [
                stats.commands.load(Ordering::Relaxed),
                stats.net_input_bytes.load(Ordering::Relaxed),
                stats.net_output_bytes.load(Ordering::Relaxed),
                crate::replication::NET_REPL_INPUT.load(Ordering::Relaxed),
                crate::replication::NET_REPL_OUTPUT.load(Ordering::Relaxed),
            ],
        );
        let evicting = shared.clone();
        let _ =
            tokio::task::spawn_blocking(move || crate::memory::eviction::cron(&*evicting)).await;
        crate::memory::client_eviction::cron(&*shared);
        crate::serve::output_limits::cron(&shared);
        crate::persistence::maybe_auto_rewrite(&shared);
        crate::persistence::rdb_file::save_points_cron(&shared);
        crate::commands::migrate::cached_sockets();
        if shared.notify.tracking.count() > 0 {
            // Also done after reads; here too so that a lowered limit
            // applies while nobody reads.
            shared.notify.tracking.limit_used_slots();
        }
        shared.notify.tracking.broadcast();
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            _ = stop.changed() => return,
        }
    }
}

/// What CONFIG SET does when an option changed, registered by the option's
/// owner; in this order (Redis's: the OOM score, then the listeners, whose
/// failures refuse the CONFIG SET in that order), each stage in turn.
pub static CONFIG_SET_EFFECTS: &[crate::config::OnSet<Shared>] = &[
    crate::server::process::oom_on_set::<Shared>(),
    crate::serve::listen::ON_SET,
    crate::serve::listen::TLS_ON_SET,
    crate::net::busy_poll::on_set::<Shared>(),
    crate::persistence::on_set::<Shared>(),
    crate::persistence::appendonly_on_set::<Shared>(),
    crate::replication::waitaof::APPENDONLY_ON_SET,
    crate::persistence::debug_delays_on_set::<Shared>(),
    crate::persistence::log_on_set::<Shared>(),
    crate::persistence::fixed_on_set::<Shared>(),
    crate::exec::propagation::EXIT_ON_PANIC_ON_SET,
    Shared::LOGLEVEL_ON_SET,
    crate::commands::acl::ON_SET,
];

/// The checks the options' owners register for their values (config knows
/// options by kind only).
pub static CONFIG_CHECKS: &[crate::config::Check] = &[
    crate::persistence::rdb_file::CONFIG_CHECKS[0],
    crate::persistence::rdb_file::CONFIG_CHECKS[1],
    crate::server::process::CONFIG_CHECKS[0],
    crate::server::process::CONFIG_CHECKS[1],
    crate::server::process::WATCHDOG_CHECK,
    crate::scripting::DEPRECATED_API_CHECK,
    crate::replication::replica::CONFIG_CHECK,
    crate::exec::stats::CONFIG_CHECK,
    crate::memory::DEFRAG_CHECK,
    HZ_CHECK,
    crate::net::tls::CONFIG_CHECKS[0],
    crate::net::tls::CONFIG_CHECKS[1],
    crate::net::tls::CONFIG_CHECKS[2],
];

/// `hz`'s check: like Redis, a value
/// outside 1..=500 is taken as the nearest bound.
pub const HZ_CHECK: crate::config::Check = crate::config::Check {
    option: "hz",
    check: clamp_hz,
};

fn clamp_hz(value: &str) -> Result<String, String> {
    // The kind's check (an integer in range) ran first.
    let n: i64 = value
        .parse()
        .map_err(|_| "argument couldn't be parsed into an integer")?;
    Ok(n.clamp(1, 500).to_string())
}

/// Reclaims expired keys in the background, `hz` times a second, spending
/// at most a quarter of each period so expiry never starves clients.
async fn expire_cycle(shared: Arc<Shared>) {
    let mut stop = shared.stop_signal();
    loop {
        let period = Duration::from_millis(1000 / shared.settings().hz.max(1) as u64);
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = stop.changed() => return,
        }
        // Off by DEBUG SET-ACTIVE-EXPIRE 0, and while CLIENT PAUSE holds
        // writes back (an expiry is a write), as in Redis.
        if !shared.debug.active_expire.load(Ordering::Relaxed)
            || shared.exec.pause.mode() != crate::exec::pause::NONE
        {
            continue;
        }
        // Redis's share of each cycle: 25%, and 2% more per step of
        // active-expire-effort past 1.
        let effort = shared.settings().active_expire_effort.clamp(1, 10);
        let budget = period * (25 + 2 * (effort - 1)) / 100;
        let start = Instant::now();
        // Every shard of every database once per cycle (a batch that found
        // nothing says nothing of the shards after it: stopping there left a
        // key 1.6 s past its TTL), and on while keys keep expiring, within
        // the budget.
        let (positions, batch) = (shared.engine.expire_positions(), 256);
        let (mut visited, mut expired, mut looked) = (0, 0, 0);
        // Hash fields first, as Redis 8.0 runs its field cycle before the
        // keys', in the order of their TTLs: Redis's base of 10,000 fields
        // a second spread over the cycles, more while the budget lasts and
        // each round was used up.
        let fields_per_round = (10_000 / shared.settings().hz.max(1) as usize).max(1);
        while start.elapsed() < budget {
            let Some(_gate) = shared.exec.gate.shared_unless(&shared.scripting.busy) else {
                break;
            };
            if shared.engine.active_expire_fields(fields_per_round) < fields_per_round {
                break;
            }
        }
        let mut capped = true;
        while start.elapsed() < budget {
            // Not inside a transaction: EXEC sees no key vanish midway.
            let Some(_gate) = shared.exec.gate.shared_unless(&shared.scripting.busy) else {
                capped = false;
                break;
            };
            let (removed, seen) = shared.engine.active_expire(batch, 64);
            (expired, looked) = (expired + removed, looked + seen);
            visited += batch;
            if removed == 0 && visited >= positions {
                capped = false;
                break;
            }
        }
        note_expire_cycle(&shared.stats, start.elapsed(), capped, expired, looked);
        let threshold = shared.settings().latency_monitor_threshold_ms;
        let ms = start.elapsed().as_millis() as u64;
        shared
            .diagnostics
            .latency
            .add_if_needed("expire-cycle", ms, threshold);
        // BCAST invalidations of the keys that expired.
        shared.notify.tracking.broadcast();
    }
}

/// INFO's expiry figures, as Redis's activeExpireCycle keeps them: the time
/// spent, the cycles its time budget cut short, and a running mean (weight
/// 5% per cycle) of the share of keys with a TTL it looked at that were due.
fn note_expire_cycle(
    stats: &crate::info::stats::Stats,
    spent: Duration,
    capped: bool,
    expired: usize,
    looked: usize,
) {
    stats
        .expire_cycle_us
        .fetch_add(spent.as_micros() as u64, Ordering::Relaxed);
    if capped {
        stats
            .expire_time_cap_reached
            .fetch_add(1, Ordering::Relaxed);
    }
    let current = if looked == 0 {
        0
    } else {
        expired as u64 * 1_000_000 / looked as u64
    };
    let old = stats.expired_stale_ppm.load(Ordering::Relaxed);
    stats
        .expired_stale_ppm
        .store((current * 5 + old * 95) / 100, Ordering::Relaxed);
}

#[cfg(test)]
mod config_check_tests {
    use crate::config::Config;

    #[test]
    fn owners_checks_apply_to_config_set_and_the_config_file() {
        let mut c = Config::new(super::CONFIG_CHECKS);
        c.set_runtime("hz", "1000").unwrap();
        assert_eq!(c.get("hz"), "500");
        c.set_runtime("hz", "0").unwrap();
        assert_eq!(c.get("hz"), "1");
        // The kind's check comes first: its text, not the owner's.
        assert_eq!(
            c.set_runtime("hz", "+5").unwrap_err(),
            "argument couldn't be parsed into an integer"
        );
        c.set_runtime("save", "100 10").unwrap();
        assert!(c.set_runtime("save", "100  10").is_err());
        assert_eq!(c.get("save"), "100 10");
        assert_eq!(c.settings().save_points, vec![(100, 10)]);
        assert_eq!(
            c.set_runtime("dbfilename", "a/b").unwrap_err(),
            "dbfilename can't be a path, just a filename"
        );
        c.set_runtime("latency-tracking-info-percentiles", "50.0 99")
            .unwrap();
        assert_eq!(c.get("latency-tracking-info-percentiles"), "50 99");
        assert_eq!(c.settings().latency_percentiles, vec![50.0, 99.0]);
        c.set_runtime("oom-score-adj-values", "0  100 900").unwrap();
        assert_eq!(c.settings().oom_score_adj_values, [0, 100, 900]);
        assert!(c.set_runtime("proc-title-template", "{foo}").is_err());
        let args: Vec<String> = ["--replicaof", "h", "70000"].map(String::from).to_vec();
        let Err(e) = Config::from_args(&args, super::CONFIG_CHECKS) else {
            panic!("a bad replicaof port was accepted");
        };
        assert!(e.ends_with("Invalid master port"), "{e}");
        let args: Vec<String> = ["--replicaof", "h", "7000"].map(String::from).to_vec();
        let c = Config::from_args(&args, super::CONFIG_CHECKS).unwrap();
        assert_eq!(c.settings().replicaof, Some(("h".into(), 7000)));
    }
}
