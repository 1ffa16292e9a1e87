//! Opening and replaying the AOF at start, BGREWRITEAOF and its automatic
//! trigger, and the figures INFO persistence reports.

pub mod bloom_flush;
pub mod flusher;
pub mod rdb_file;
pub mod sketch_flush;
pub mod sketch_replay;
pub mod stale_temp;

use crate::config::{OnSet, Settings, Stage};
use crate::protocol::Args;
use blinkdb_engine::{Aof, AofArg, AofOptions, Entry, FsyncPolicy, LoadedCommand, Log, Value};
use bytes::Bytes;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// What persistence reads of the server and asks of it: persistence/ is
/// below the server's state (`Shared` implements this, as it does
/// `memory::Host`), so running a logged command or a file's FUNCTION
/// RESTORE is the host's, and the functions here are generic over it.
pub trait Host: crate::memory::Host + Send + Sync + 'static {
    /// The AOF replay's pseudo-client, kept across the log's commands.
    type Replayer<'a>: Replayer
    where
        Self: 'a;
    fn persistence(&self) -> &Persistence;
    fn replayer(&self) -> Self::Replayer<'_>;
    /// How the replay treats a command named `name` (the command table's
    /// properties).
    fn replay_kind(&self, name: &[u8]) -> ReplayKind;
    /// How a logged command named `name` concerns sketch files (the command
    /// table's properties).
    fn replay_scope(&self, name: &[u8]) -> sketch_replay::Scope;
    /// The function libraries' code, as every RDB file starts with them.
    fn library_codes(&self) -> Vec<Vec<u8>>;
    /// A file's libraries, loaded as FUNCTION RESTORE (with `replace`,
    /// ... REPLACE); its error reply is the error.
    fn restore_functions(&self, codes: &[&[u8]], replace: bool) -> Result<(), String>;
}

/// Runs the AOF's commands, one at a time, as the log's client.
pub trait Replayer {
    /// The database the log's client has selected.
    fn db(&self) -> usize;
    /// Runs one command: Err when it cannot run at all (a record that is
    /// no command, or has the wrong number of arguments).
    fn run(&mut self, args: &Args) -> Result<(), String>;
}

/// What the replay does with a logged command.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ReplayKind {
    /// MULTI and EXEC: replayed in order, a transaction's commands stay
    /// atomic without them.
    Skip,
    /// A SET/MSET whose values may live in the log (`props::LOGGED_VALUES`).
    LoggedValues,
    Run,
}

/// The persistence handle: what saves, rewrites and loads record, read by
/// INFO persistence, LASTSAVE, the save points and MISCONF.
pub struct Persistence {
    /// When the last save (or rewrite) succeeded, Unix ms.
    pub last_save_ms: AtomicU64,
    pub loading: LoadingState,
    pub rewrite: RewriteStats,
    pub rdb_save: rdb_file::SaveStats,
}

impl Default for Persistence {
    fn default() -> Self {
        Persistence {
            last_save_ms: AtomicU64::new(blinkdb_engine::now_ms()),
            loading: Default::default(),
            rewrite: Default::default(),
            rdb_save: Default::default(),
        }
    }
}

impl Persistence {
    pub fn last_save_ms(&self) -> u64 {
        self.last_save_ms.load(Ordering::Relaxed)
    }
}

#[derive(Default)]
pub struct LoadingState {
    pub start_ms: AtomicU64,
    pub loaded_bytes: AtomicU64,
    pub total_bytes: AtomicU64,
}

pub struct RewriteStats {
    pub started_ms: AtomicU64,
    /// DEBUG RELOAD's rewrites accepted but not yet ended: counted before
    /// their thread starts, so DEBUG LOADAOF cannot run between the two.
    pub pending: AtomicU64,
    pub last_ok: AtomicBool,
    pub last_duration_sec: AtomicI64,
    pub count: AtomicU64,
    /// Rewrites failed since the last that succeeded (INFO's
    /// aof_rewrites_consecutive_failures).
    pub consecutive_failures: AtomicU64,
    /// A rewrite the cron starts next (CONFIG SET appendonly yes).
    pub scheduled: AtomicBool,
    /// Base size after the last rewrite (or at load), for the automatic trigger.
    pub base_size: AtomicU64,
}

impl Default for RewriteStats {
    fn default() -> Self {
        RewriteStats {
            started_ms: AtomicU64::new(0),
            pending: AtomicU64::new(0),
            last_ok: AtomicBool::new(true),
            last_duration_sec: AtomicI64::new(-1),
            count: AtomicU64::new(0),
            consecutive_failures: AtomicU64::new(0),
            scheduled: AtomicBool::new(false),
            base_size: AtomicU64::new(0),
        }
    }
}

/// CONFIG SET segment-size, blob-threshold and verify-blobs-on-read reach
/// the open log at once: the next incr file, the next write, the next read.
/// (aof-load-truncated and aof-load-corrupt need nothing: the next load,
/// CONFIG SET appendonly yes or a restart, reads them from the settings.)
pub const fn log_on_set<H: Host>() -> OnSet<H> {
    OnSet {
        options: &["segment-size", "blob-threshold", "verify-blobs-on-read"],
        stage: Stage::AfterCommit,
        apply: set_log_options::<H>,
    }
}

fn set_log_options<H: Host>(
    shared: &H,
    s: &Settings,
    _: &dyn Fn(&str) -> bool,
) -> Result<(), (String, String)> {
    if let Some(log) = shared.engine().log_handle() {
        log.aof.set_segment_size(s.segment_size.max(4096));
        log.aof.set_blob_threshold(s.blob_threshold.max(1));
        log.set_verify_blobs(s.verify_blobs_on_read);
    }
    Ok(())
}

/// `existence-filter-size`, `bpf-pin-root` and `aof-batch-checksums` are
/// taken at start only: the existence filter is sized and filled once, before
/// any read relies on it, kernel filters stay pinned where they were made, and
/// an incr file is written in one form from its first record (plain commands
/// after checksummed batches would read as a torn tail). CONFIG SET accepts
/// the value in force (so a config round trip works) and refuses another.
const FIXED: &[&str] = &[
    "existence-filter-size",
    "bpf-pin-root",
    "aof-batch-checksums",
];

pub const fn fixed_on_set<S>() -> OnSet<S> {
    OnSet {
        options: FIXED,
        stage: Stage::BeforeCommit,
        apply: refuse_fixed::<S>,
    }
}

fn refuse_fixed<S>(
    _: &S,
    _: &Settings,
    changed: &dyn Fn(&str) -> bool,
) -> Result<(), (String, String)> {
    let name = FIXED
        .iter()
        .copied()
        .find(|o| changed(o))
        .unwrap_or(FIXED[0]);
    Err((
        name.to_string(),
        "can't change it at runtime: it takes effect at start (set it in the config file and restart)".into(),
    ))
}

/// The hidden `key-load-delay` and `rdb-key-save-delay`, handed to the
/// engine's load and save loops (also at start: `apply_debug_delays`).
pub const fn debug_delays_on_set<S>() -> OnSet<S> {
    OnSet {
        options: &["key-load-delay", "rdb-key-save-delay"],
        stage: Stage::AfterCommit,
        apply: |_, s, _| {
            apply_debug_delays(s);
            Ok(())
        },
    }
}

pub fn apply_debug_delays(s: &Settings) {
    use blinkdb_engine::debug_delay::{KEY_LOAD_DELAY, KEY_SAVE_DELAY};
    KEY_LOAD_DELAY.store(s.key_load_delay, Ordering::Relaxed);
    KEY_SAVE_DELAY.store(s.rdb_key_save_delay, Ordering::Relaxed);
}

/// CONFIG SET appendfsync hands the new policy to the log at once.
pub const fn on_set<H: Host>() -> OnSet<H> {
    OnSet {
        options: &["appendfsync"],
        stage: Stage::BeforeCommit,
        apply: set_fsync_policy::<H>,
    }
}

fn set_fsync_policy<H: Host>(
    shared: &H,
    s: &Settings,
    _: &dyn Fn(&str) -> bool,
) -> Result<(), (String, String)> {
    if let Some(log) = shared.engine().log_handle() {
        log.aof.set_fsync_policy(fsync_policy(&s.appendfsync));
    }
    Ok(())
}

/// CONFIG SET appendonly, as Redis 7.0: "no" stops logging writes at once;
/// "yes" opens the AOF if this server started without one and schedules a
/// rewrite, which turns logging on as it starts (its base holds everything
/// written before, the new incr file what follows).
pub const fn appendonly_on_set<H: Host>() -> OnSet<H> {
    OnSet {
        options: &["appendonly"],
        stage: Stage::BeforeCommit,
        apply: switch_aof::<H>,
    }
}

fn switch_aof<H: Host>(
    shared: &H,
    s: &Settings,
    _: &dyn Fn(&str) -> bool,
) -> Result<(), (String, String)> {
    if !s.appendonly {
        shared
            .persistence()
            .rewrite
            .scheduled
            .store(false, Ordering::Relaxed);
        if shared.engine().logging() {
            shared.engine().pause_logging(true);
            tracing::info!("AOF turned off: writes are no longer logged");
        }
        return Ok(());
    }
    if shared.engine().logging() {
        return Ok(());
    }
    if shared.engine().log_handle().is_none() {
        let refused = |e: String| {
            tracing::warn!("Can't open the append-only file: {e}");
            (
                "appendonly".to_string(),
                "Unable to turn on AOF. Check server logs.".to_string(),
            )
        };
        let aof = Aof::open(aof_options(s)).map_err(|e| refused(e.to_string()))?;
        // Files a former run left are read through, not applied (the log
        // appends only after a load); the rewrite then replaces them.
        aof.load(|_| Ok(()), |_| {})
            .map_err(|e| refused(e.to_string()))?;
        let log = Log::new(aof, s.verify_blobs_on_read, s.blob_threshold.max(1));
        // Nothing is logged before the rewrite's base exists.
        shared.engine().pause_logging(true);
        shared.engine().set_log(Arc::new(log));
    }
    shared
        .persistence()
        .rewrite
        .scheduled
        .store(true, Ordering::Relaxed);
    Ok(())
}

/// `appendfsync`'s value as the log's policy.
pub fn fsync_policy(appendfsync: &str) -> FsyncPolicy {
    match appendfsync {
        "always" => FsyncPolicy::Always,
        "no" => FsyncPolicy::No,
        _ => FsyncPolicy::EverySec,
    }
}

fn aof_options(s: &Settings) -> AofOptions {
    let mut o = AofOptions::new(s.dir.join(&s.appenddirname));
    o.basename = s.appendfilename.clone();
    o.fsync = fsync_policy(&s.appendfsync);
    o.segment_size = s.segment_size.max(4096);
    o.blob_threshold = s.blob_threshold.max(1);
    o.load_truncated = s.aof_load_truncated;
    o.allow_corrupt = s.aof_load_corrupt;
    o.batch_checksums = s.aof_batch_checksums;
    o
}

/// Opens the AOF, replays it into the keyspace, then installs it as the
/// engine's log. Runs on a blocking thread while clients get -LOADING.
pub fn load<H: Host>(shared: &H, settings: &Settings) -> Result<(), String> {
    let manifest = settings
        .dir
        .join(&settings.appenddirname)
        .join(format!("{}.manifest", settings.appendfilename));
    let aof_was_new = !manifest.exists();
    let aof = Aof::open(aof_options(settings)).map_err(|e| format!("Opening the AOF: {e}"))?;
    // Sketch files checkpointed before the base are older than what the
    // base holds of their keys.
    let manifest_now = aof.manifest();
    let oldest = match manifest_now.base {
        Some(_) => blinkdb_engine::Lsn::new(manifest_now.incr.first().map_or(1, |e| e.seq), 0).0,
        None => 0,
    };
    let mut sketches =
        sketch_replay::SketchReplay::new(shared.engine().sketch_files.open_all(oldest));
    let log = Arc::new(Log::new(
        aof,
        settings.verify_blobs_on_read,
        settings.blob_threshold.max(1),
    ));
    shared.engine().set_replay_log(log.clone());
    let stats = replay_files(shared, settings, &log, Some(&mut sketches))?;
    shared
        .persistence()
        .rewrite
        .base_size
        .store(log.aof.stats().current_size, Ordering::Relaxed);
    shared.engine().set_log(log);
    crate::persistence::rdb_file::load_into_aof(shared, settings, aof_was_new)?;
    let keys: usize = (0..shared.engine().databases())
        .map(|d| shared.engine().db(d).len())
        .sum();
    tracing::info!(
        "DB loaded from append only file: {:.3} seconds, {} commands, {} keys",
        stats.1.as_secs_f64(),
        stats.0,
        keys
    );
    Ok(())
}

/// DEBUG LOADAOF: the live AOF's files, read again through a second handle
/// (after everything written so far reached them) and replayed into the
/// keyspace, which the caller emptied; nothing is logged again. The live
/// log stays installed: the files are the same, so the large values the
/// replay leaves in them are read through it. Returns the keys loaded.
pub fn reload_aof<H: Host>(shared: &H, settings: &Settings) -> Result<usize, String> {
    let live = shared.engine().log_handle().ok_or("the AOF is off")?;
    live.aof
        .flush_all()
        .map_err(|e| format!("Writing the AOF: {e}"))?;
    let aof = Aof::open(aof_options(settings)).map_err(|e| format!("Opening the AOF: {e}"))?;
    let log = Log::new(
        aof,
        settings.verify_blobs_on_read,
        settings.blob_threshold.max(1),
    );
    blinkdb_engine::unlogged(|| replay_files(shared, settings, &log, None))?;
    Ok((0..shared.engine().databases())
        .map(|d| shared.engine().db(d).len())
        .sum())
}

/// Replays `log`'s files (an RDB base through the batched loader); returns
/// the commands replayed and the time taken. `sketches`: at start, the
/// sketch files found, whose covered records are not replayed; DEBUG
/// LOADAOF replays every record.
fn replay_files<H: Host>(
    shared: &H,
    settings: &Settings,
    log: &Log,
    mut sketches: Option<&mut sketch_replay::SketchReplay>,
) -> Result<(u64, std::time::Duration), String> {
    let start = Instant::now();
    let mut client = shared.replayer();
    let mut last_report = Instant::now();
    let mut rdb_base = false;
    let mut load_base = |base: blinkdb_engine::RdbBase| {
        rdb_base = true;
        crate::persistence::rdb_file::import_aof_base(shared, settings, &base).map_err(|e| {
            blinkdb_engine::AofError::Corrupt {
                file: base.name.clone(),
                offset: 0,
                reason: format!("RDB base: {e}"),
            }
        })
    };
    let stats = log
        .aof
        .load_with_rdb_base(
            |cmd| {
                blinkdb_engine::debug_delay::pause(&blinkdb_engine::debug_delay::KEY_LOAD_DELAY, 1);
                let (file, offset) = (cmd.file.to_string(), cmd.offset);
                let replayed = match sketches.as_deref_mut() {
                    Some(sketches) => replay_record(shared, log, &mut client, sketches, cmd),
                    None => replay(shared, log, &mut client, cmd),
                };
                replayed.map_err(|reason| blinkdb_engine::AofError::Corrupt {
                    file,
                    offset,
                    reason,
                })
            },
            &mut load_base,
            |p| {
                shared
                    .persistence()
                    .loading
                    .loaded_bytes
                    .store(p.bytes_done, Ordering::Relaxed);
                shared
                    .persistence()
                    .loading
                    .total_bytes
                    .store(p.bytes_total, Ordering::Relaxed);
                if last_report.elapsed().as_secs() >= 1 {
                    last_report = Instant::now();
                    tracing::info!(
                        "Loading AOF {}: {} of {} bytes ({:.0}%)",
                        p.file,
                        p.bytes_done,
                        p.bytes_total,
                        100.0 * p.bytes_done as f64 / p.bytes_total.max(1) as f64
                    );
                }
            },
        )
        .map_err(|e| format!("Loading the AOF failed: {e}"))?;
    if let Some(sketches) = sketches {
        let held = sketches.finish(shared.engine(), log.aof.end_lsn().0);
        sketch_replay::run_held(&mut client, held, |c, cmd| replay(shared, log, c, cmd))
            .map_err(|e| format!("Loading the AOF failed: {e}"))?;
        // Files of keys the log deleted after their checkpoint go at the first
        // pass; the others' checkpoints move to the log's end.
        shared.engine().sketch_files.touch_all();
        let files = &shared.engine().sketch_files.stats;
        files
            .skipped_records
            .store(sketches.skipped - sketches.flushed, Ordering::Relaxed);
        if sketches.installed > 0 || sketches.skipped > 0 {
            tracing::info!(
                "Sketch files: {} bound ({} marked clean, their pages not re-read), {} AOF records not replayed ({} held back, {} of them run after all)",
                sketches.installed,
                files.clean.load(Ordering::Relaxed),
                sketches.skipped - sketches.flushed,
                sketches.skipped,
                sketches.flushed
            );
        }
    }
    // Kernel pins are opened only now, where their keys ended up after every
    // RENAME/MOVE in the log; a failure leaves those filters answering errors.
    if let Err(e) = shared.engine().blooms.attach_all() {
        tracing::warn!("Kernel Bloom filters: {e}");
    }
    if rdb_base {
        let removed = shared.engine().blooms.remove_unbound_files();
        if removed > 0 {
            tracing::info!(
                "Removed {removed} filter files no key holds (the RDB base rebuilt its filters)"
            );
        }
    }
    if let Some((file, offset)) = &stats.truncated {
        tracing::warn!(
            "AOF {file} was truncated at offset {offset}: its tail was incomplete or torn"
        );
    }
    for (file, offset, why) in &stats.skipped_corrupt {
        tracing::warn!("AOF {file}: skipped corrupt data from offset {offset} ({why}), as aof-load-corrupt allows");
    }
    Ok((stats.commands, start.elapsed()))
}

/// Applies one logged command unless a sketch file covers it
/// (sketch_replay.rs).
fn replay_record<H: Host>(
    shared: &H,
    log: &Log,
    client: &mut H::Replayer<'_>,
    sketches: &mut sketch_replay::SketchReplay,
    cmd: LoadedCommand,
) -> Result<(), String> {
    if sketches.is_empty() {
        return replay(shared, log, client, cmd);
    }
    let scope = match cmd.args.first() {
        Some(AofArg::Inline(name)) => shared.replay_scope(name),
        _ => sketch_replay::Scope::Args,
    };
    let Some(run) = sketches.before(shared.engine(), client.db(), scope, cmd) else {
        return Ok(());
    };
    sketch_replay::run_held(client, run.first, |c, cmd| replay(shared, log, c, cmd))?;
    replay(shared, log, client, run.cmd)
}

/// Applies one logged command. SET/MSET values that live in the log stay
/// there (the index keeps their place); other large arguments are read back.
fn replay<H: Host>(
    shared: &H,
    log: &Log,
    client: &mut H::Replayer<'_>,
    cmd: LoadedCommand,
) -> Result<(), String> {
    let name = match cmd.args.first() {
        Some(AofArg::Inline(b)) => b.clone(),
        _ => return Err("a command name cannot be a large value".into()),
    };
    let kind = shared.replay_kind(&name);
    if kind == ReplayKind::Skip {
        return Ok(()); // Replayed in order, a transaction's commands stay atomic.
    }
    shared.engine().set_replay_file(cmd.file);
    let has_blob = cmd.args.iter().any(|a| matches!(a, AofArg::Blob(_)));
    if has_blob && kind == ReplayKind::LoggedValues {
        return replay_blob_set(shared.engine(), client.db(), &name, &cmd.args);
    }
    let mut owned = Vec::with_capacity(cmd.args.len());
    for a in cmd.args {
        owned.push(match a {
            AofArg::Inline(b) => b,
            AofArg::Blob(r) => log.read_blob(&r).map_err(|e| e.to_string())?,
        });
    }
    let args: Args = owned.iter().map(|b| &b[..]).collect();
    client.run(&args)
}

fn inline(a: &AofArg) -> Option<&Bytes> {
    match a {
        AofArg::Inline(b) => Some(b),
        AofArg::Blob(_) => None,
    }
}

fn replay_blob_set(
    engine: &blinkdb_engine::Engine,
    db: usize,
    name: &[u8],
    args: &[AofArg],
) -> Result<(), String> {
    let value_of = |a: &AofArg| match a {
        AofArg::Inline(b) => Value::str(&b[..]),
        AofArg::Blob(r) => Value::blob(*r),
    };
    let bad = || {
        format!(
            "Unexpected form of {} in the AOF",
            String::from_utf8_lossy(name)
        )
    };
    if name.eq_ignore_ascii_case(b"mset") {
        for pair in args[1..].chunks(2) {
            let (Some(key), Some(v)) = (inline(&pair[0]), pair.get(1)) else {
                return Err(bad());
            };
            engine.write1(db, key, |tx| {
                tx.insert_after_log(db, key, Entry::new(value_of(v)))
            });
        }
        return Ok(());
    }
    let (Some(key), Some(v)) = (args.get(1).and_then(inline), args.get(2)) else {
        return Err(bad());
    };
    let opts: Vec<&Bytes> = args[3..]
        .iter()
        .map(|a| inline(a).ok_or_else(bad))
        .collect::<Result<_, _>>()?;
    engine
        .write1(db, key, |tx| {
            let mut entry = Entry::new(value_of(v));
            match opts.as_slice() {
                [] => {}
                [k] if k.eq_ignore_ascii_case(b"keepttl") => {
                    entry.expire_at = tx.get(db, key).map_or(0, |e| e.expire_at);
                    if entry.expire_at != 0 {
                        tx.insert(db, key, entry);
                        return Ok(());
                    }
                }
                [k, at] if k.eq_ignore_ascii_case(b"pxat") => {
                    entry.expire_at = std::str::from_utf8(at)
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .ok_or_else(bad)?;
                }
                _ => return Err(bad()),
            }
            tx.insert_after_log(db, key, entry);
            Ok(())
        })
        .0
}

/// Starts BGREWRITEAOF on a background thread.
pub fn start_rewrite<H: Host>(shared: &Arc<H>) -> Result<(), &'static str> {
    // Not after CONFIG SET appendonly no either: a rewrite turns logging on.
    if shared.engine().log_handle().is_none() || !shared.settings().appendonly {
        return Err(
            "ERR Background append only file rewriting is not possible while appendonly is off",
        );
    }
    if shared
        .persistence()
        .rewrite
        .started_ms
        .compare_exchange(
            0,
            blinkdb_engine::now_ms(),
            Ordering::AcqRel,
            Ordering::Relaxed,
        )
        .is_err()
    {
        return Err("ERR Background append only file rewriting already in progress");
    }
    let shared = shared.clone();
    std::thread::Builder::new()
        .name("aof-rewrite".into())
        .spawn(move || run_rewrite(&shared))
        .map_err(|_| "ERR Can't start the background rewrite thread")?;
    Ok(())
}

/// A rewrite on a background thread once any running one has ended (DEBUG
/// RELOAD's: the AOF's base then holds the reloaded keys and filters);
/// `keep` (what the old AOF still names: the filters the reload replaced,
/// whose files go when they are dropped) is dropped after it. With AOF off,
/// or no thread, `keep` is dropped at once and the error returned.
pub fn rewrite_then_drop<H: Host, T: Send + 'static>(
    shared: &Arc<H>,
    keep: T,
) -> Result<(), &'static str> {
    if shared.engine().log_handle().is_none() || !shared.settings().appendonly {
        return Err(
            "ERR Background append only file rewriting is not possible while appendonly is off",
        );
    }
    let pending = &shared.persistence().rewrite.pending;
    pending.fetch_add(1, Ordering::AcqRel);
    let shared = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("aof-rewrite".into())
        .spawn(move || {
            let started = &shared.persistence().rewrite.started_ms;
            // A BGREWRITEAOF running now copied the keyspace before the
            // reload replaced it: this rewrite follows it.
            while started
                .compare_exchange(
                    0,
                    blinkdb_engine::now_ms(),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_err()
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            run_rewrite(&shared);
            drop(keep);
            shared
                .persistence()
                .rewrite
                .pending
                .fetch_sub(1, Ordering::AcqRel);
        });
    if spawned.is_err() {
        pending.fetch_sub(1, Ordering::AcqRel);
        return Err("ERR Can't start the background rewrite thread");
    }
    Ok(())
}

/// BGREWRITEAOF's work and bookkeeping; `started_ms` is set by the caller.
fn run_rewrite<H: Host>(shared: &Arc<H>) {
    let start = Instant::now();
    tracing::info!("Background append only file rewriting started");
    let result = crate::persistence::rdb_file::rewrite_aof(&**shared);
    // As after a BGSAVE (`rdb_file::bgsave`): the copies it wrote from.
    crate::memory::alloc_count::purge();
    let r = &shared.persistence().rewrite;
    r.last_duration_sec
        .store(start.elapsed().as_secs() as i64, Ordering::Relaxed);
    match result {
        Ok(report) => {
            r.last_ok.store(true, Ordering::Relaxed);
            r.consecutive_failures.store(0, Ordering::Relaxed);
            r.count.fetch_add(1, Ordering::Relaxed);
            // The new base holds every sketch again: their files'
            // checkpoints move past it at the next pass.
            shared.engine().sketch_files.touch_all();
            if let Some(log) = shared.engine().log_handle() {
                r.base_size
                    .store(log.aof.stats().current_size, Ordering::Relaxed);
            }
            shared
                .persistence()
                .last_save_ms
                .store(blinkdb_engine::now_ms(), Ordering::Relaxed);
            tracing::info!(
                "Background AOF rewrite finished successfully: {} keys, base of {} bytes, {:.3} seconds",
                report.keys,
                report.base_bytes,
                start.elapsed().as_secs_f64()
            );
        }
        Err(e) => {
            r.last_ok.store(false, Ordering::Relaxed);
            r.consecutive_failures.fetch_add(1, Ordering::Relaxed);
            tracing::warn!("Background AOF rewrite failed: {e}");
        }
    }
    r.started_ms.store(0, Ordering::Release);
}

/// auto-aof-rewrite-percentage / -min-size, checked from the server cron.
pub fn maybe_auto_rewrite<H: Host>(shared: &Arc<H>) {
    if shared
        .persistence()
        .rewrite
        .scheduled
        .swap(false, Ordering::Relaxed)
    {
        if let Err(e) = start_rewrite(shared) {
            // Tried again by the next cron while another one runs.
            let again = e.contains("already in progress");
            shared
                .persistence()
                .rewrite
                .scheduled
                .store(again, Ordering::Relaxed);
        }
        return;
    }
    let Some(log) = shared
        .engine()
        .log_handle()
        .filter(|_| shared.engine().logging())
    else {
        return;
    };
    let s = shared.settings();
    // Never while a full sync loads: the keyspace then holds a part of the
    // master's data (and with swapdb the old data is set aside).
    if s.auto_aof_rewrite_percentage == 0
        || shared
            .persistence()
            .rewrite
            .started_ms
            .load(Ordering::Relaxed)
            != 0
        || shared.engine().is_loading()
    {
        return;
    }
    let size = log.aof.stats().current_size;
    let base = shared
        .persistence()
        .rewrite
        .base_size
        .load(Ordering::Relaxed)
        .max(1);
    let growth = (size.saturating_sub(base)) * 100 / base;
    if size >= s.auto_aof_rewrite_min_size && growth >= s.auto_aof_rewrite_percentage {
        tracing::info!("Starting automatic rewriting of AOF on {growth}% growth");
        let _ = start_rewrite(shared);
    }
}

/// INFO persistence.
pub fn info<H: Host>(shared: &H, o: &mut String) {
    use std::fmt::Write;
    let loading = shared.engine().is_loading();
    let l = &shared.persistence().loading;
    let (done, total) = (
        l.loaded_bytes.load(Ordering::Relaxed),
        l.total_bytes.load(Ordering::Relaxed),
    );
    let _ = write!(
        o,
        // No fork, so no copy-on-write (docs/compatibility.md); a save's
        // progress in keys is not counted.
        "# Persistence\r\nloading:{}\r\nasync_loading:0\r\ncurrent_cow_peak:0\r\ncurrent_cow_size:0\r\ncurrent_cow_size_age:0\r\ncurrent_fork_perc:0.00\r\ncurrent_save_keys_processed:0\r\ncurrent_save_keys_total:0\r\n",
        loading as u8
    );
    if loading {
        let elapsed =
            blinkdb_engine::now_ms().saturating_sub(l.start_ms.load(Ordering::Relaxed)) / 1000;
        let _ = write!(
            o,
            "loading_start_time:{}\r\nloading_total_bytes:{total}\r\nloading_loaded_bytes:{done}\r\nloading_loaded_perc:{:.2}\r\nloading_eta_seconds:{}\r\n",
            l.start_ms.load(Ordering::Relaxed) / 1000,
            100.0 * done as f64 / total.max(1) as f64,
            (elapsed * total.saturating_sub(done)).checked_div(done).unwrap_or(1),
        );
    }
    let r = &shared.persistence().rewrite;
    let rs = &shared.persistence().rdb_save;
    let bg_started = rs.bgsave_started_ms.load(Ordering::Relaxed);
    let started = r.started_ms.load(Ordering::Relaxed);
    // aof_enabled once CONFIG SET appendonly yes, its rewrite pending or not.
    let appendonly = shared.settings().appendonly;
    let stats = shared
        .engine()
        .log_handle()
        .filter(|_| appendonly)
        .map(|log| log.aof.stats());
    let _ = write!(
        o,
        "rdb_changes_since_last_save:{}\r\nrdb_bgsave_in_progress:{}\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:{}\r\nrdb_last_bgsave_time_sec:{}\r\nrdb_current_bgsave_time_sec:{}\r\nrdb_saves:{}\r\nrdb_last_cow_size:0\r\nrdb_last_load_keys_expired:{}\r\nrdb_last_load_keys_loaded:{}\r\naof_enabled:{}\r\naof_rewrite_in_progress:{}\r\naof_rewrite_scheduled:{}\r\naof_last_rewrite_time_sec:{}\r\naof_current_rewrite_time_sec:{}\r\naof_last_bgrewrite_status:{}\r\naof_rewrites:{}\r\naof_rewrites_consecutive_failures:{}\r\naof_last_write_status:{}\r\naof_last_cow_size:0\r\nmodule_fork_in_progress:0\r\nmodule_fork_last_cow_size:0\r\n",
        shared.engine().stats.changes.load(Ordering::Relaxed).saturating_sub(rs.dirty_at_save.load(Ordering::Relaxed)),
        (bg_started != 0) as u8,
        shared.persistence().last_save_ms() / 1000,
        if rs.last_bgsave_ok.load(Ordering::Relaxed) { "ok" } else { "err" },
        rs.last_bgsave_duration_sec.load(Ordering::Relaxed),
        if bg_started == 0 { -1 } else { (blinkdb_engine::now_ms().saturating_sub(bg_started) / 1000) as i64 },
        rs.saves.load(Ordering::Relaxed),
        rs.load_expired.load(Ordering::Relaxed),
        rs.load_loaded.load(Ordering::Relaxed),
        stats.is_some() as u8,
        (started != 0) as u8,
        r.scheduled.load(Ordering::Relaxed) as u8,
        r.last_duration_sec.load(Ordering::Relaxed),
        if started == 0 { -1 } else { (blinkdb_engine::now_ms().saturating_sub(started) / 1000) as i64 },
        if r.last_ok.load(Ordering::Relaxed) { "ok" } else { "err" },
        r.count.load(Ordering::Relaxed),
        r.consecutive_failures.load(Ordering::Relaxed),
        if stats.as_ref().is_some_and(|s| s.last_write_error.is_some()) { "err" } else { "ok" },
    );
    if let Some(s) = stats {
        let _ = write!(
            o,
            "aof_current_size:{}\r\naof_base_size:{}\r\naof_buffer_length:0\r\naof_pending_bio_fsync:0\r\naof_delayed_fsync:0\r\naof_fsyncs:{}\r\naof_incr_file:{}\r\n",
            s.current_size,
            r.base_size.load(Ordering::Relaxed),
            s.fsyncs,
            s.current_incr_seq,
        );
    }
    let f = &shared.engine().sketch_files;
    let _ = write!(
        o,
        "sketch_files:{}\r\nsketch_files_bound_at_start:{}\r\nsketch_files_rebuilt_at_start:{}\r\nsketch_files_clean_at_start:{}\r\nsketch_records_not_replayed:{}\r\nsketch_checkpoints:{}\r\nsketch_pages_written:{}\r\nsketch_checkpoint_busy:{}\r\n",
        f.files(),
        f.stats.bound.load(Ordering::Relaxed),
        f.stats.rebuilt.load(Ordering::Relaxed),
        f.stats.clean.load(Ordering::Relaxed),
        f.stats.skipped_records.load(Ordering::Relaxed),
        f.stats.checkpoints.load(Ordering::Relaxed),
        f.stats.pages_written.load(Ordering::Relaxed),
        u8::from(f.busy()),
    );
}
