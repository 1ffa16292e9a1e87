//! `dump.rdb`: loading one at start (no AOF yet, or `--load-rdb`), SAVE, and
//! the INFO persistence `rdb_*` figures. The codec is the engine's (rdb).

use crate::config::{Check, Settings};
use crate::persistence::Host;
use blinkdb_engine::{
    rdb_format::{self, RdbError, RdbFileWriter},
    Db, Entry, InlineBytes, SHARDS,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// INFO persistence's rdb_* fields.
pub struct SaveStats {
    /// Writes since the last successful save (or load).
    pub dirty_at_save: AtomicU64,
    pub in_progress: AtomicBool,
    pub last_ok: AtomicBool,
    pub last_duration_sec: AtomicI64,
    pub saves: AtomicU64,
    pub last_keys: AtomicU64,
    /// When the running BGSAVE started (0: none running).
    pub bgsave_started_ms: AtomicU64,
    pub last_bgsave_ok: AtomicBool,
    pub last_bgsave_duration_sec: AtomicI64,
    /// When the last BGSAVE was tried (Unix ms), for the retry delay.
    pub last_bgsave_try_ms: AtomicU64,
    /// Keys the last RDB load applied, and the expired ones it left out.
    pub load_loaded: AtomicU64,
    pub load_expired: AtomicU64,
}

impl Default for SaveStats {
    fn default() -> Self {
        SaveStats {
            dirty_at_save: AtomicU64::new(0),
            in_progress: AtomicBool::new(false),
            last_ok: AtomicBool::new(true),
            last_duration_sec: AtomicI64::new(-1),
            saves: AtomicU64::new(0),
            last_keys: AtomicU64::new(0),
            bgsave_started_ms: AtomicU64::new(0),
            last_bgsave_ok: AtomicBool::new(true),
            last_bgsave_duration_sec: AtomicI64::new(-1),
            last_bgsave_try_ms: AtomicU64::new(0),
            load_loaded: AtomicU64::new(0),
            load_expired: AtomicU64::new(0),
        }
    }
}

/// `save`'s value: "" (none) or pairs "seconds changes ...", seconds at
/// least 1 and changes at least 0, with Redis's error otherwise. As Redis,
/// the words are split on each single space, and an empty word reads as 0
/// (strtoll's whole-string check), so "5 " is the point (5, 0).
/// `save`'s and `dbfilename`'s checks (registered in boot::CONFIG_CHECKS).
pub const CONFIG_CHECKS: [Check; 2] = [
    Check {
        option: "save",
        check: canonical_save,
    },
    Check {
        option: "dbfilename",
        check: check_dbfilename,
    },
];

/// `save` kept as Redis shows it: "seconds changes" pairs, spaced.
fn canonical_save(value: &str) -> Result<String, String> {
    parse_save_points(value).map(|points| {
        points
            .iter()
            .map(|(s, c)| format!("{s} {c}"))
            .collect::<Vec<_>>()
            .join(" ")
    })
}

/// As Redis's isValidDBfilename: a name inside `dir`, not a path.
fn check_dbfilename(value: &str) -> Result<String, String> {
    if value.is_empty() || value.contains('/') {
        return Err("dbfilename can't be a path, just a filename".into());
    }
    Ok(value.to_string())
}

pub fn parse_save_points(value: &str) -> Result<Vec<(u64, u64)>, String> {
    const ERR: &str = "Invalid save parameters";
    if value.is_empty() {
        return Ok(Vec::new());
    }
    let words: Vec<&str> = value.split(' ').collect();
    if !words.len().is_multiple_of(2) {
        return Err(ERR.into());
    }
    let num = |w: &str| -> Option<i64> {
        if w.is_empty() {
            return Some(0);
        }
        // strtoll skips leading white space; the rest must be the number.
        let t = w.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
        if t.len() == w.len() || !t.is_empty() {
            t.parse().ok()
        } else {
            None
        }
    };
    words
        .chunks(2)
        .map(|p| match (num(p[0]), num(p[1])) {
            (Some(s), Some(c)) if s >= 1 && c >= 0 => Ok((s as u64, c as u64)),
            _ => Err(ERR.into()),
        })
        .collect()
}

/// The `save` points, checked by the server's cron as Redis's serverCron
/// does: a BGSAVE when some point has at least `changes` writes since the
/// last save and more than `seconds` have passed since it, unless the last
/// BGSAVE failed less than 5 seconds ago (CONFIG_BGSAVE_RETRY_DELAY).
pub fn save_points_cron<H: Host>(shared: &Arc<H>) {
    let settings = shared.settings();
    if settings.save_points.is_empty() {
        return;
    }
    let stats = &shared.persistence().rdb_save;
    if stats.in_progress.load(Ordering::Acquire)
        || shared
            .persistence()
            .rewrite
            .started_ms
            .load(Ordering::Relaxed)
            != 0
    {
        return;
    }
    let now = blinkdb_engine::now_ms();
    let dirty = changes_since_save(&**shared);
    let since_save = now.saturating_sub(shared.persistence().last_save_ms()) / 1000;
    let since_try = now.saturating_sub(stats.last_bgsave_try_ms.load(Ordering::Relaxed)) / 1000;
    let retry_ok = since_try > 5 || stats.last_bgsave_ok.load(Ordering::Relaxed);
    for &(seconds, changes) in &settings.save_points {
        if dirty >= changes && since_save > seconds && retry_ok {
            tracing::info!("{changes} changes in {seconds} seconds. Saving...");
            if let Err(e) = bgsave(shared, false) {
                tracing::warn!("Automatic BGSAVE did not start: {e}");
            }
            break;
        }
    }
}

/// Writes since the last successful save (INFO's rdb_changes_since_last_save).
pub fn changes_since_save<H: Host>(shared: &H) -> u64 {
    shared
        .engine()
        .stats
        .changes
        .load(Ordering::Relaxed)
        .saturating_sub(
            shared
                .persistence()
                .rdb_save
                .dirty_at_save
                .load(Ordering::Relaxed),
        )
}

pub fn path(settings: &Settings) -> PathBuf {
    settings.dir.join(&settings.dbfilename)
}

/// One key of a file being loaded, waiting in its shard's batch.
struct Pending {
    key: InlineBytes,
    value: rdb_format::Loaded,
    expire_at: u64,
    idle: Option<u64>,
    freq: Option<u8>,
}

/// Keys parsed and not yet handed to the inserting thread, at most: small
/// enough that the values are still in the CPU's cache when inserted.
const LOAD_WINDOW: usize = 1 << 14;

/// A window's keys: (database, one shard's keys) for each shard with keys.
type Window = Vec<(usize, Vec<Pending>)>;

/// The parsed keys of the current window, one batch per shard of each database.
struct Batches {
    dbs: Vec<Vec<Vec<Pending>>>,
    pending: usize,
}

impl Batches {
    fn shards(&mut self, db: usize) -> &mut Vec<Vec<Pending>> {
        let batches = &mut self.dbs[db];
        if batches.is_empty() {
            batches.resize_with(SHARDS, Vec::new);
        }
        batches
    }

    /// Adds a key; returns the full window when it is one.
    fn push(&mut self, db: usize, p: Pending) -> Option<Window> {
        let shard = Db::shard_index(&p.key);
        self.shards(db)[shard].push(p);
        self.pending += 1;
        (self.pending >= LOAD_WINDOW).then(|| self.take())
    }

    fn take(&mut self) -> Window {
        self.pending = 0;
        let mut window = Vec::new();
        for (db, batches) in self.dbs.iter_mut().enumerate() {
            for batch in batches.iter_mut().filter(|b| !b.is_empty()) {
                let each = batch.len();
                window.push((db, std::mem::replace(batch, Vec::with_capacity(each))));
            }
        }
        window
    }
}

/// Inserts a window's keys, each shard's under one lock and one transaction
/// (its table is sized once, the clock read once). Returns the keys inserted,
/// or, under `Dups::Refuse`, the first key already present (Redis's
/// "RDB has duplicated key" without RDBFLAGS_ALLOW_DUP), with the keys of
/// its shard before it inserted.
fn insert_window(
    engine: &blinkdb_engine::Engine,
    window: Window,
    dups: Dups,
) -> Result<u64, String> {
    let mut done = 0;
    for (db, batch) in window {
        let Some(first) = batch.first().map(|p| p.key.clone()) else {
            continue;
        };
        let n = batch.len();
        let _clock = blinkdb_engine::batch_clock();
        let (dup, _) = engine.write1(db, &first, |tx| {
            tx.reserve(db, &first, n);
            for p in batch {
                if dups == Dups::Refuse && tx.get(db, &p.key).is_some() {
                    return Some(p.key);
                }
                // Files never hold the one value that can fail here (a
                // blinkdbBF dump: the parser refuses it).
                let value = match p.value.into_value(engine) {
                    Ok(v) => v,
                    Err(e) => {
                        tracing::warn!("Loading RDB: a key's value did not load: {e}");
                        continue;
                    }
                };
                let mut entry = Entry::new(value);
                entry.expire_at = p.expire_at;
                // A fresh value replacing any of the same name (its label
                // does not derive from the old one: as a DEL then a SET).
                tx.insert_after_log(db, &p.key, entry);
                if p.idle.is_some() || p.freq.is_some() {
                    tx.set_access(db, &p.key, p.idle, p.freq);
                }
            }
            None
        });
        if let Some(key) = dup {
            let key = String::from_utf8_lossy(&key);
            tracing::warn!("RDB has duplicated key '{key}' in DB {db}");
            return Err(format!("duplicated key '{key}' in DB {db}"));
        }
        done += n as u64;
    }
    Ok(done)
}

/// What a load does with a key (or function library) the keyspace already
/// holds: every load but DEBUG RELOAD NOFLUSH without MERGE replaces it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Dups {
    Replace,
    Refuse,
}

/// Loads the RDB file at `path` into the keyspace (keys replace keys of the
/// same name; libraries replace libraries of the same name). The file's
/// CRC-64 is checked before any key is applied; a file damaged in a way
/// the checksum misses (or without one) fails part-way, with some keys
/// applied: the callers stop the server then.
///
/// Each database's tables are sized from the file's RESIZEDB hint first.
/// This thread parses; a second one inserts, a window of LOAD_WINDOW keys
/// at a time, gathered by shard: a shard's keys go in under one lock, in a
/// row (keys in file order hit a random shard each). On 2 cores the two
/// halves overlap (a 500k-key file: about 45% of the work is inserting).
pub fn import<H: Host>(shared: &H, settings: &Settings, path: &Path) -> Result<u64, String> {
    import_from(shared, settings, Input::File(path), None, Dups::Replace)
}

/// `import` for DEBUG RELOAD: with `Dups::Refuse`, a key or library the
/// keyspace holds already fails the load.
pub fn import_with<H: Host>(
    shared: &H,
    settings: &Settings,
    path: &Path,
    dups: Dups,
) -> Result<u64, String> {
    import_from(shared, settings, Input::File(path), None, dups)
}

/// An RDB-format AOF base (`aof-use-rdb-preamble yes`, BlinkDB's or
/// Redis's), loaded at start by the same batched loader as a dump.rdb
/// (instead of one RESTORE per key): as Redis loads a preamble, keys already
/// expired are kept (the incr files after it may still refer to them), and a
/// string of at least `blob-threshold` bytes stored uncompressed stays on
/// disk, its entry pointing into the base (as for a RESP base's SET).
pub fn import_aof_base<H: Host>(
    shared: &H,
    settings: &Settings,
    base: &blinkdb_engine::RdbBase,
) -> Result<u64, String> {
    shared.engine().set_replay_file(base.file);
    import_from(
        shared,
        settings,
        Input::File(&base.path),
        Some((base.file, settings.blob_threshold.max(1))),
        Dups::Replace,
    )
}

/// An AOF rewrite by `aof-use-rdb-preamble`: an RDB-format base (AUX
/// `aof-base 1`, as Redis's preamble, then the function libraries) or a
/// RESP one.
pub fn rewrite_aof<H: Host>(shared: &H) -> Result<blinkdb_engine::RewriteReport, String> {
    let settings = shared.settings();
    if !settings.aof_use_rdb_preamble {
        return shared.engine().rewrite_aof();
    }
    // Taken before the rewrite holds every shard (used-mem reads them).
    let mut aux = aux_fields(shared);
    for (k, v) in aux.iter_mut() {
        if *k == "aof-base" {
            *v = "1".to_string();
        }
    }
    // Called with every shard held (the libraries are those of that instant).
    let start = |path: &Path| -> Result<RdbFileWriter, String> {
        let w = RdbFileWriter::create_in_place(
            path,
            &aux,
            settings.rdbcompression,
            settings.rdbchecksum,
        )
        .map_err(|e| e.to_string())?;
        with_functions(shared, w)
    };
    shared.engine().rewrite_aof_rdb(&start)
}

/// A full sync's RDB read from the master's socket (a diskless load):
/// `more` gives the payload's next bytes, `None` at its end; `total` is its
/// length when the master sent one. Loaded by the same loader as a file,
/// but the checksum is only known at the end: on an error some keys are in.
pub fn import_stream<H: Host>(
    shared: &H,
    settings: &Settings,
    more: rdb_format::More<'_>,
    total: Option<u64>,
) -> Result<u64, String> {
    import_from(
        shared,
        settings,
        Input::Stream { more, total },
        None,
        Dups::Replace,
    )
}

/// Where an import's bytes come from.
enum Input<'a> {
    File(&'a Path),
    Stream {
        more: rdb_format::More<'a>,
        total: Option<u64>,
    },
}

/// A file's RESIZEDB hint is held to what it could hold (a key takes at
/// least 2 bytes); a stream of unknown length to this many bytes' worth.
const UNKNOWN_STREAM_HINT_BYTES: u64 = 1 << 23;

fn import_from<H: Host>(
    shared: &H,
    settings: &Settings,
    input: Input<'_>,
    aof_base: Option<(blinkdb_engine::FileId, usize)>,
    dups: Dups,
) -> Result<u64, String> {
    let start = Instant::now();
    let (label, data, total, more) = match input {
        Input::File(path) => {
            let data =
                std::fs::read(path).map_err(|e| format!("Reading {}: {e}", path.display()))?;
            let total = data.len() as u64;
            (path.display().to_string(), data, total, None)
        }
        Input::Stream { more, total } => (
            "from the MASTER's socket".to_string(),
            Vec::new(),
            total.unwrap_or(0),
            Some(more),
        ),
    };
    let hint_bytes = if more.is_some() && total == 0 {
        UNKNOWN_STREAM_HINT_BYTES
    } else {
        total
    };
    // An AOF base is the first of the AOF's files: the AOF loader reported
    // the total of them all already, and the base's offsets count from 0.
    // (A stream's total is its `$<len>`, 0 for an EOF-marked one, as Redis.)
    if aof_base.is_none() {
        shared
            .persistence()
            .loading
            .total_bytes
            .store(total, Ordering::Relaxed);
        shared
            .persistence()
            .loading
            .loaded_bytes
            .store(0, Ordering::Relaxed);
    }
    let limits = settings.collection_limits;
    let engine = shared.engine();
    // A preamble keeps expired keys (0: nothing counts as expired).
    let now = match aof_base {
        Some(_) => 0,
        None => blinkdb_engine::now_ms(),
    };
    let mut batches = Batches {
        dbs: (0..engine.databases()).map(|_| Vec::new()).collect(),
        pending: 0,
    };
    let inserted = AtomicU64::new(0);
    let (to_inserter, windows) = std::sync::mpsc::sync_channel::<Window>(2);
    let parsed = std::thread::scope(|scope| {
        let inserter = std::thread::Builder::new()
            .name("blinkdb-rdb-load".into())
            .spawn_scoped(scope, || {
                let mut failed = None;
                for window in windows {
                    // After a failure the parser's windows are drained unread.
                    if failed.is_some() {
                        continue;
                    }
                    match insert_window(engine, window, dups) {
                        Ok(n) => {
                            inserted.fetch_add(n, Ordering::Relaxed);
                        }
                        Err(e) => failed = Some(e),
                    }
                }
                failed
            })
            .map_err(|e| format!("Loading RDB {label}: no thread: {e}"))?;
        let mut last_report = Instant::now();
        let mut on_resize = |db, keys: u64| {
            // A hint only: a damaged count is held to what the input
            // could hold (a key takes at least 2 bytes).
            engine.reserve_keys(db, keys.min(hint_bytes / 2) as usize);
        };
        // loading-process-events-interval-bytes: progress is published at
        // least each time the load crosses a multiple of it (clients are
        // served all along: they get -LOADING from other threads).
        let interval = settings.loading_process_events_interval_bytes.max(1);
        let mut next_publish = interval;
        let mut on_key = |k: rdb_format::LoadedKey| {
            blinkdb_engine::debug_delay::pause(&blinkdb_engine::debug_delay::KEY_LOAD_DELAY, 1);
            let end = k.raw.end as u64;
            // One comparison a key; the division only when a mark is crossed.
            if end >= next_publish {
                next_publish = (end / interval + 1) * interval;
                shared
                    .persistence()
                    .loading
                    .loaded_bytes
                    .store(end, Ordering::Relaxed);
            }
            let mut value = k.value;
            if let Some((file, threshold)) = aof_base {
                if k.kind == rdb_format::kind::STRING {
                    if let Some(r) =
                        rdb_format::string_in_place(&data, k.raw.clone(), file, threshold)
                    {
                        value = rdb_format::Loaded::Value(blinkdb_engine::Value::blob(r));
                    }
                }
            }
            let full = batches.push(
                k.db,
                Pending {
                    key: k.key,
                    value,
                    expire_at: k.expire_at,
                    idle: k.idle,
                    freq: k.freq,
                },
            );
            if let Some(window) = full {
                // The inserter stops only after this sender is dropped.
                let _ = to_inserter.send(window);
                shared
                    .persistence()
                    .loading
                    .loaded_bytes
                    .store(k.raw.end as u64, Ordering::Relaxed);
                if last_report.elapsed().as_secs() >= 1 {
                    last_report = Instant::now();
                    let done = inserted.load(Ordering::Relaxed);
                    tracing::info!("Loading RDB {label}: {done} keys");
                }
            }
            Ok(())
        };
        let (limits, dbs, crc) = (&limits, engine.databases(), settings.rdbchecksum);
        let parsed = match more {
            None => rdb_format::load_file_sized(
                &data,
                limits,
                dbs,
                crc,
                now,
                &mut on_resize,
                &mut on_key,
            ),
            Some(more) => {
                rdb_format::load_stream(more, limits, dbs, crc, now, &mut on_resize, &mut on_key)
            }
        };
        if parsed.is_ok() {
            let _ = to_inserter.send(batches.take());
        }
        drop(to_inserter);
        match inserter.join() {
            Err(_) => return Err(format!("Loading RDB {label}: inserting failed")),
            Ok(Some(e)) => return Err(format!("Loading RDB {label}: {e}")),
            Ok(None) => {}
        }
        parsed.map_err(|e| {
            if matches!(e, RdbError::Corrupt(m) if m.starts_with("Unexpected EOF")) {
                // Redis's rdbLoadRioWithLoadingCtx says this first on a short read.
                tracing::warn!("Short read or OOM loading DB. Unrecoverable error, aborting now.");
            }
            if matches!(e, RdbError::Corrupt(m) if m.starts_with("Wrong RDB checksum")) {
                // The words Redis's rdbReportCorruptRDB logs, which tools look for.
                tracing::warn!("RDB CRC error: the file's checksum does not match its contents");
            }
            format!("Loading RDB {label}: {e}")
        })
    });
    let contents = parsed?;
    drop(data);
    let read = shared
        .persistence()
        .loading
        .loaded_bytes
        .load(Ordering::Relaxed);
    shared
        .persistence()
        .loading
        .loaded_bytes
        .store(total.max(read), Ordering::Relaxed);
    if !contents.functions.is_empty() {
        let codes: Vec<&[u8]> = contents.functions.iter().map(|c| &c[..]).collect();
        shared
            .restore_functions(&codes, dups == Dups::Replace)
            .map_err(|e| format!("Loading the RDB's functions: {e}"))?;
    }
    let rs = &shared.persistence().rdb_save;
    rs.load_loaded.store(contents.keys, Ordering::Relaxed);
    rs.load_expired.store(contents.expired, Ordering::Relaxed);
    rs.dirty_at_save.store(
        shared.engine().stats.changes.load(Ordering::Relaxed),
        Ordering::Relaxed,
    );
    tracing::info!(
        "DB loaded from RDB {} (version {}): {} keys, {} expired and {} empty skipped, {} libraries, {:.3} seconds",
        label,
        contents.version,
        contents.keys,
        contents.expired,
        contents.empty,
        contents.functions.len(),
        start.elapsed().as_secs_f64()
    );
    Ok(contents.keys)
}

/// After the AOF is open: loads `--load-rdb`'s file, or `dbfilename` when
/// the AOF did not exist before this start, then rewrites the AOF so that
/// its base holds what was loaded (the AOF stays the record).
pub fn load_into_aof<H: Host>(
    shared: &H,
    settings: &Settings,
    aof_was_new: bool,
) -> Result<(), String> {
    let file = match &settings.load_rdb {
        Some(p) => p.clone(),
        None if aof_was_new && path(settings).exists() => path(settings),
        None => return Ok(()),
    };
    import(shared, settings, &file)?;
    rewrite_aof(shared).map_err(|e| format!("Writing the loaded RDB into the AOF: {e}"))?;
    Ok(())
}

fn read_blob<H: Host>(
    shared: &H,
) -> impl FnMut(&blinkdb_engine::BlobRef) -> Result<bytes::Bytes, RdbError> + '_ {
    move |r| shared.engine().read_blob(r).map_err(RdbError::Io)
}

/// SAVE: writes every database to `dir/dbfilename` through a temp file and
/// a rename. Writers wait while it runs (as every client waits for Redis's
/// SAVE); readers do not: the shards are held for reading.
pub fn save<H: Host>(shared: &H) -> Result<(), String> {
    if shared
        .persistence()
        .rdb_save
        .in_progress
        .swap(true, Ordering::AcqRel)
    {
        return Err("ERR Background save already in progress".into());
    }
    save_claimed(shared)
}

/// After FLUSHALL, as Redis's flushAllDataAndResetRDB: a BGSAVE under way
/// (of the keys before the flush) is aborted, and with save points the
/// emptied dataset replaces dump.rdb at once, so that a restart does not
/// bring the flushed keys back and rdb_changes_since_last_save starts from 0.
pub fn after_flushall<H: Host>(shared: &H) {
    shared.engine().abort_bgsave();
    if shared.settings().save_points.is_empty() {
        return;
    }
    // The aborted save ends at its next shard.
    let in_progress = &shared.persistence().rdb_save.in_progress;
    while in_progress
        .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    // A failure is logged and recorded (rdb_last_bgsave_status) by save_claimed.
    let _ = save_claimed(shared);
}

/// SAVE's work once its caller has set `in_progress`, which it clears.
fn save_claimed<H: Host>(shared: &H) -> Result<(), String> {
    let settings = shared.settings();
    let stats = &shared.persistence().rdb_save;
    let start = Instant::now();
    let dirty = shared.engine().stats.changes.load(Ordering::Relaxed);
    let result = write_snapshot(shared, &settings);
    stats.in_progress.store(false, Ordering::Release);
    stats
        .last_duration_sec
        .store(start.elapsed().as_secs() as i64, Ordering::Relaxed);
    match result {
        Ok(keys) => {
            stats.last_ok.store(true, Ordering::Relaxed);
            // As Redis's rdbSave: a good SAVE clears a failed BGSAVE's MISCONF.
            stats.last_bgsave_ok.store(true, Ordering::Relaxed);
            stats.saves.fetch_add(1, Ordering::Relaxed);
            stats.last_keys.store(keys, Ordering::Relaxed);
            stats.dirty_at_save.store(dirty, Ordering::Relaxed);
            shared
                .persistence()
                .last_save_ms
                .store(blinkdb_engine::now_ms(), Ordering::Relaxed);
            tracing::info!(
                "DB saved on disk: {keys} keys, {:.3} seconds",
                start.elapsed().as_secs_f64()
            );
            Ok(())
        }
        Err(e) => {
            stats.last_ok.store(false, Ordering::Relaxed);
            tracing::warn!("Failed saving the DB: {e}");
            Err(format!("ERR {e}"))
        }
    }
}

/// A new file in `dir` with Redis's AUX fields and every function library.
fn aux_fields<H: Host>(shared: &H) -> [(&'static str, String); 5] {
    [
        ("redis-ver", crate::REDIS_COMPAT_VERSION.to_string()),
        ("redis-bits", "64".to_string()),
        ("ctime", (blinkdb_engine::now_ms() / 1000).to_string()),
        ("used-mem", crate::memory::used_memory(shared).to_string()),
        ("aof-base", "0".to_string()),
    ]
}

fn start_file<H: Host>(shared: &H, settings: &Settings) -> Result<RdbFileWriter, RdbError> {
    let mut w = RdbFileWriter::create(
        &path(settings),
        &aux_fields(shared),
        settings.rdbcompression,
        settings.rdbchecksum,
    )?;
    for code in shared.library_codes() {
        if let Err(e) = w.function(&code) {
            w.abort();
            return Err(e);
        }
    }
    Ok(w)
}

/// A full sync's file at `path` (written through `tmp`), with the AUX
/// fields and function libraries every RDB file starts with.
pub fn start_sync_file<H: Host>(
    shared: &H,
    path: &Path,
    tmp: PathBuf,
) -> Result<RdbFileWriter, String> {
    let settings = shared.settings();
    let w = RdbFileWriter::create_via(
        path,
        tmp,
        &aux_fields(shared),
        settings.rdbcompression,
        settings.rdbchecksum,
    )
    .map_err(|e| e.to_string())?;
    with_functions(shared, w)
}

/// A diskless full sync's RDB, streamed into `sink`, with the same AUX
/// fields and function libraries as a file.
pub fn start_sync_sink<H: Host>(
    shared: &H,
    sink: Box<dyn std::io::Write + Send>,
) -> Result<RdbFileWriter, String> {
    let settings = shared.settings();
    let w = RdbFileWriter::to_sink(
        sink,
        &aux_fields(shared),
        settings.rdbcompression,
        settings.rdbchecksum,
    )
    .map_err(|e| e.to_string())?;
    with_functions(shared, w)
}

/// The function libraries, at the head of an RDB file; on an error the file
/// is abandoned.
fn with_functions<H: Host>(shared: &H, mut w: RdbFileWriter) -> Result<RdbFileWriter, String> {
    for code in shared.library_codes() {
        if let Err(e) = w.function(&code) {
            w.abort();
            return Err(e.to_string());
        }
    }
    Ok(w)
}

fn write_snapshot<H: Host>(shared: &H, settings: &Settings) -> Result<u64, String> {
    let engine = shared.engine();
    let mut w = start_file(shared, settings).map_err(|e| e.to_string())?;
    let result = (|| -> Result<u64, RdbError> {
        let now = blinkdb_engine::now_ms();
        w.save_clocks(engine.access.save_mode(now));
        let mut blob = read_blob(shared);
        let mut keys = 0u64;
        // Every shard of every database held at once, in the order writers
        // lock them: one point in time.
        let all: Vec<Vec<_>> = (0..engine.databases())
            .map(|d| engine.db(d).shards().iter().map(|s| s.read()).collect())
            .collect();
        for (d, guards) in all.iter().enumerate() {
            let (n, expires) = guards
                .iter()
                .fold((0, 0), |(n, e), s| (n + s.len(), e + s.expires_len()));
            if n == 0 {
                continue;
            }
            w.select_db(d, n, expires)?;
            for shard in guards {
                for (key, entry) in shard.iter() {
                    if entry.is_expired(now) {
                        continue;
                    }
                    w.key(key, entry.value(), entry.expire_at, &mut blob)?;
                    // SAVE blocks every client while it runs, as in Redis.
                    blinkdb_engine::debug_delay::pause(
                        &blinkdb_engine::debug_delay::KEY_SAVE_DELAY,
                        1,
                    );
                    keys += 1;
                }
            }
        }
        Ok(keys)
    })();
    match result {
        Ok(keys) => {
            w.finish().map_err(|e| e.to_string())?;
            Ok(keys)
        }
        Err(e) => {
            w.abort();
            Err(e.to_string())
        }
    }
}

/// BGSAVE [SCHEDULE]: the RDB file written by a background thread from the
/// engine's copy-before-write snapshot (no fork, no second copy of the data);
/// the reply text, or the error.
pub fn bgsave<H: Host>(shared: &Arc<H>, schedule: bool) -> Result<&'static str, String> {
    let stats = &shared.persistence().rdb_save;
    let rewriting = shared
        .persistence()
        .rewrite
        .started_ms
        .load(Ordering::Relaxed)
        != 0;
    if rewriting && !schedule {
        return Err("ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.".into());
    }
    if stats.in_progress.swap(true, Ordering::AcqRel) {
        return Err("ERR Background save already in progress".into());
    }
    // Redis's child exists from here (a scheduled one once it forks, after
    // the rewrite): a FLUSHALL from now on aborts this save, even before its
    // thread begins.
    let ticket = (!rewriting).then(|| shared.engine().bgsave_ticket());
    stats
        .last_bgsave_try_ms
        .store(blinkdb_engine::now_ms(), Ordering::Relaxed);
    let settings = shared.settings();
    let file = match start_file(&**shared, &settings) {
        Ok(f) => f,
        Err(e) => {
            // A save that could not start failed (Redis's child would have
            // failed opening its file): stop-writes-on-bgsave-error sees it.
            stats.last_bgsave_ok.store(false, Ordering::Relaxed);
            tracing::warn!("Background saving error: {e}");
            stats.in_progress.store(false, Ordering::Release);
            return Err(format!("ERR {e}"));
        }
    };
    stats
        .bgsave_started_ms
        .store(blinkdb_engine::now_ms(), Ordering::Relaxed);
    let dirty = shared.engine().stats.changes.load(Ordering::Relaxed);
    let s = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("bgsave".into())
        .spawn(move || {
            let start = Instant::now();
            tracing::info!("Background saving started");
            // Waits for a running AOF rewrite first (SCHEDULE).
            let result = s.engine().save_rdb(file, ticket);
            // The save held a copy of each compact collection from the shard
            // pass to its end, in this thread's arena, and glibc keeps freed
            // arena pages: a save during a load of 300,000 5-field hashes left
            // 37 MB free there, 124 bytes a key of RSS (docs/design.md).
            crate::memory::alloc_count::purge();
            let st = &s.persistence().rdb_save;
            st.last_bgsave_duration_sec
                .store(start.elapsed().as_secs() as i64, Ordering::Relaxed);
            match result {
                Ok(keys) => {
                    st.last_bgsave_ok.store(true, Ordering::Relaxed);
                    st.last_ok.store(true, Ordering::Relaxed);
                    st.saves.fetch_add(1, Ordering::Relaxed);
                    st.last_keys.store(keys, Ordering::Relaxed);
                    st.dirty_at_save.store(dirty, Ordering::Relaxed);
                    s.persistence()
                        .last_save_ms
                        .store(blinkdb_engine::now_ms(), Ordering::Relaxed);
                    tracing::info!(
                        "Background saving terminated with success: {keys} keys, {:.3} seconds",
                        start.elapsed().as_secs_f64()
                    );
                }
                // As Redis's child killed by FLUSHALL (SIGUSR1): not a failure,
                // so rdb_last_bgsave_status and MISCONF stay as they were.
                Err(e) if e == blinkdb_engine::BGSAVE_ABORTED => {
                    tracing::warn!("Background saving terminated: {e}");
                }
                Err(e) => {
                    st.last_bgsave_ok.store(false, Ordering::Relaxed);
                    tracing::warn!("Background saving error: {e}");
                }
            }
            st.bgsave_started_ms.store(0, Ordering::Relaxed);
            st.in_progress.store(false, Ordering::Release);
        });
    if spawned.is_err() {
        stats.bgsave_started_ms.store(0, Ordering::Relaxed);
        stats.in_progress.store(false, Ordering::Release);
        return Err("ERR Can't start the background save thread".into());
    }
    Ok(if rewriting {
        "Background saving scheduled"
    } else {
        "Background saving started"
    })
}
