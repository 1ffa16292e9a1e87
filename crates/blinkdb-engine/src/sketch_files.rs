//! Sketch files: count-min sketches, cuckoo filters, top-k and t-digests
//! persisted without replay (issue 45;
//! docs/design.md "Persistence without replay for fixed-size structures",
//! format in docs/sketch-file-format.md).
//!
//! Writes go to memory and to the log as before; the log stays the source
//! of truth. Once a second (and at shutdown) `checkpoint` writes each changed
//! sketch's changed pages (taken under the key's lock) to its file, notes the log's
//! end as the file's checkpoint, syncs the log up to there, then the file.
//! At start the server binds each file that verifies (`open_all`) and skips
//! the key's log records up to the checkpoint (persistence/sketch_replay.rs).

use crate::engine::Engine;
use crate::keyspace::{Entry, Value};
use crate::sketch::cells::PAGE;
use crate::sketch::file::{self, Header, Layout, Opened, KIND_COUNT_MIN, MAX_KEY};
use crate::sketch::{Sketch, SketchKind};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

type Key = (usize, Box<[u8]>);

/// A `Key` borrowed from a request: `touch` runs on every CMS.INCRBY and
/// finds a key already pending without allocating its `Key` (an allocation,
/// a free and a SipHash per write were a tenth of a CMS.INCRBY's
/// instructions). Hashes as `Key` does (a tuple's fields in order; a `Box`
/// as what it holds).
#[derive(Hash)]
struct KeyRef<'a>(usize, &'a [u8]);

impl hashbrown::Equivalent<Key> for KeyRef<'_> {
    fn equivalent(&self, key: &Key) -> bool {
        self.0 == key.0 && self.1 == &*key.1
    }
}

/// One key's file, as the checkpoints keep it.
struct Bound {
    id: u64,
    path: PathBuf,
    file: File,
    layout: Layout,
    /// The structure (`file::KIND_*`).
    kind: u32,
    /// A count-min sketch's dimensions (0 for the encoded kinds).
    width: u64,
    depth: u64,
    /// The generation of its last checkpoint.
    generation: u32,
    /// Its page table as on disk after the last checkpoint.
    table: Vec<u64>,
    /// Created since the last start: its unwritten pages are zeros.
    fresh: bool,
    /// Bound at start: the structure read from it may map it.
    from_start: bool,
    /// The header on disk while it has the clean flag (no page written
    /// after it); taken, and the flag cleared on disk, before a page is.
    clean: Option<Header>,
}

impl Bound {
    /// Whether a structure whose marks are relative to file `marks` is
    /// written into this file: when they are this file's, or the file was
    /// made by this run (never mapped). Otherwise (a copy made by a snapshot's copy-on-write, a key
    /// moved back) every page would be written, and a file bound at start
    /// may still be mapped by the structure it was read into (a count-min
    /// sketch's counters, a cuckoo filter's slots, a top-k's buckets): a
    /// page that mapping never changed shows the file's bytes, so writing
    /// other bytes there would change what that structure (say, the one an
    /// AOF rewrite is saving) holds. Such a structure gets a new file.
    fn takes_marks(&self, marks: u64) -> bool {
        !self.from_start || marks == self.id
    }

    /// Clears the clean flag on disk (synced) before the first page write
    /// after it: a crash during that write must not leave a file whose
    /// header lets the next start skip the check of a torn page.
    fn unclean(&mut self) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        if let Some(h) = self.clean.take() {
            let h = Header { clean: false, ..h };
            self.file.write_all_at(&h.encode(), 0)?;
            self.file.sync_data()?;
        }
        Ok(())
    }
}

#[derive(Default)]
pub struct SketchFileStats {
    /// Files bound at the last start (their records skipped).
    pub bound: AtomicU64,
    /// Files that failed to verify at the last start (their keys replayed).
    pub rebuilt: AtomicU64,
    /// Of `bound`, those whose header said clean: pages not re-read.
    pub clean: AtomicU64,
    /// Log records not replayed because a file covered them.
    pub skipped_records: AtomicU64,
    pub checkpoints: AtomicU64,
    pub pages_written: AtomicU64,
}

pub struct SketchFiles {
    dir: PathBuf,
    bound: Mutex<HashMap<Key, Arc<Mutex<Bound>>>>,
    /// Keys changed since their last checkpoint.
    pending: Mutex<hashbrown::HashSet<Key>>,
    next_id: AtomicU64,
    /// Held by a checkpoint pass: one at a time (the periodic one, shutdown).
    pass: Mutex<()>,
    pub stats: SketchFileStats,
}

/// A verified file found at start, for the replay to bind.
pub struct Found {
    pub db: usize,
    pub key: Vec<u8>,
    /// The log position it holds the sketch as of (`Lsn`).
    pub checkpoint: u64,
    pub id: u64,
    pub path: PathBuf,
    opened: Opened,
}

fn file_name(id: u64) -> String {
    format!("{id:016x}.sketch")
}

fn parse_id(name: &str) -> Option<u64> {
    let hex = name.strip_suffix(".sketch")?;
    (hex.len() == 16).then(|| u64::from_str_radix(hex, 16).ok())?
}

impl SketchFiles {
    pub fn new(data_dir: &Path) -> SketchFiles {
        SketchFiles {
            dir: data_dir.join("sketch"),
            bound: Mutex::new(HashMap::new()),
            pending: Mutex::new(hashbrown::HashSet::new()),
            next_id: AtomicU64::new(1),
            pass: Mutex::new(()),
            stats: SketchFileStats::default(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A count-min sketch at `key` changed: checkpoint it at the next pass.
    pub fn touch(&self, db: usize, key: &[u8]) {
        if key.len() <= MAX_KEY {
            let mut pending = self.pending.lock();
            if !pending.contains(&KeyRef(db, key)) {
                pending.insert((db, key.into()));
            }
        }
    }

    /// Every bound key at the next pass (after an AOF rewrite: their
    /// checkpoints must move past the new base, which holds them again).
    pub fn touch_all(&self) {
        let keys: Vec<Key> = self.bound.lock().keys().cloned().collect();
        self.pending.lock().extend(keys);
    }

    /// Every bound key whose file's header is not marked clean, for the
    /// shutdown pass (which marks them).
    pub fn touch_unclean(&self) {
        let keys: Vec<Key> = self
            .bound
            .lock()
            .iter()
            .filter(|(_, b)| b.lock().clean.is_none())
            .map(|(k, _)| k.clone())
            .collect();
        self.pending.lock().extend(keys);
    }

    pub fn has_pending(&self) -> bool {
        !self.pending.lock().is_empty()
    }

    /// Whether keys wait for a checkpoint or one is under way: false means
    /// every file holds its key as of its last write (tests wait on it
    /// before a kill -9 that must find whole files). Pending is read first:
    /// a pass takes the keys only while it holds `pass`.
    pub fn busy(&self) -> bool {
        self.has_pending() || self.pass.is_locked()
    }

    pub fn files(&self) -> usize {
        self.bound.lock().len()
    }

    /// Reads every file in the directory: those that verify are returned
    /// for binding, the others are counted, logged and removed.
    /// `oldest`: a file checkpointed before this position (before the
    /// log's base) is stale.
    pub fn open_all(&self, oldest: u64) -> Vec<Found> {
        let mut found = Vec::new();
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return found;
        };
        let mut seen: HashMap<Key, usize> = HashMap::new();
        let mut names = Vec::new();
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(id) = parse_id(&name) else { continue };
            self.next_id.fetch_max(id + 1, Ordering::Relaxed);
            names.push((name, id, e.path()));
        }
        let opened = open_files(&names);
        for ((name, id, path), opened) in names.into_iter().zip(opened) {
            let reject = |why: String| {
                tracing::warn!("Sketch file {name}: {why}; its key is rebuilt from the AOF");
                self.stats.rebuilt.fetch_add(1, Ordering::Relaxed);
                let _ = std::fs::remove_file(&path);
            };
            match opened {
                Err(r) => reject(r.to_string()),
                Ok(o) if o.header.checkpoint < oldest => {
                    reject("checkpointed before the AOF's base".into())
                }
                Ok(o) => {
                    let key: Key = (o.header.db as usize, o.header.key.clone().into());
                    let f = Found {
                        db: o.header.db as usize,
                        key: o.header.key.clone(),
                        checkpoint: o.header.checkpoint,
                        id,
                        path: path.clone(),
                        opened: o,
                    };
                    // Two files for one key: the later checkpoint wins.
                    match seen.get(&key) {
                        Some(&i) if found[i].checkpoint >= f.checkpoint => {
                            let _ = std::fs::remove_file(&path);
                        }
                        Some(&i) => {
                            let _ = std::fs::remove_file(&found[i].path);
                            found[i] = f;
                        }
                        None => {
                            seen.insert(key, found.len());
                            found.push(f);
                        }
                    }
                }
            }
        }
        found
    }

    /// Drops a found file that the replay could not use.
    pub fn discard(&self, f: Found, why: &str) {
        tracing::warn!(
            "Sketch file {}: {why}; its key is rebuilt from the AOF",
            f.path.display()
        );
        self.stats.rebuilt.fetch_add(1, Ordering::Relaxed);
        let _ = std::fs::remove_file(&f.path);
    }

    /// Puts a found file's sketch at its key (keeping the key's expiry, if
    /// the log gave it one before) and keeps the file for checkpoints.
    pub fn install(&self, engine: &Engine, f: Found) {
        let Found {
            db,
            key,
            id,
            path,
            opened,
            ..
        } = f;
        let Opened {
            file,
            header,
            layout,
            table,
            sketch,
        } = opened;
        engine.write1(db, &key, |tx| {
            let expire_at = tx.get(db, &key).map_or(0, |e| e.expire_at);
            let mut entry = Entry::new(Value::sketch(sketch));
            entry.expire_at = expire_at;
            tx.insert(db, &key, entry);
        });
        self.stats.bound.fetch_add(1, Ordering::Relaxed);
        if header.clean {
            self.stats.clean.fetch_add(1, Ordering::Relaxed);
        }
        let encoded = file::encoded(header.kind);
        self.bound.lock().insert(
            (db, key.into()),
            Arc::new(Mutex::new(Bound {
                id,
                path,
                file,
                layout,
                kind: header.kind,
                width: if encoded { 0 } else { header.width },
                depth: header.depth,
                generation: header.generation,
                table,
                fresh: false,
                from_start: true,
                clean: header.clean.then_some(header),
            })),
        );
    }

    /// A new file: a count-min sketch's of `width` x `depth` counters, or
    /// an encoded body's of `depth` pages (`width` 0).
    fn new_bound(&self, kind: u32, width: u64, depth: u64) -> std::io::Result<Bound> {
        std::fs::create_dir_all(&self.dir)?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.join(file_name(id));
        let layout = match kind {
            KIND_COUNT_MIN => Layout::of((width * depth) as usize),
            _ => Layout::of_pages(depth as usize),
        };
        let file = file::create(&path, layout)?;
        Ok(Bound {
            id,
            path,
            file,
            layout,
            kind,
            width,
            depth,
            generation: 0,
            table: vec![0; layout.pages],
            fresh: true,
            from_start: false,
            clean: None,
        })
    }
}

/// Fewer files than this per thread are opened on the calling thread.
const FILES_PER_THREAD: usize = 16;

/// Opens (verifies, maps or decodes) the files found, in their order: on up
/// to one thread per core when there are many, since each is independent and
/// a restart with hundreds of t-digests' files spends its time reading and
/// decoding them.
fn open_files(files: &[(String, u64, PathBuf)]) -> Vec<Result<Opened, file::Reject>> {
    let open = |c: &[(String, u64, PathBuf)]| -> Vec<_> {
        c.iter()
            .map(|(_, id, path)| file::open(path, *id))
            .collect()
    };
    let threads = file::cores().min(files.len() / FILES_PER_THREAD).max(1);
    if threads == 1 {
        return open(files);
    }
    let per = files.len().div_ceil(threads);
    std::thread::scope(|s| {
        let parts: Vec<_> = files
            .chunks(per)
            .map(|c| s.spawn(move || open(c)))
            .collect();
        parts
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// What the locked part of a checkpoint leaves for the synced part.
struct Done {
    bound: Arc<Mutex<Bound>>,
    header: Header,
    pages: Vec<usize>,
}

/// Checkpoints every sketch changed since the last pass (the log must be
/// open: without it there is nothing to skip). Returns the files written.
/// `shutdown`: the last pass, after which nothing writes the files: every
/// file's header gets the clean flag (pages then trusted at start).
pub fn checkpoint(engine: &Engine, shutdown: bool) -> std::io::Result<usize> {
    let files = &engine.sketch_files;
    let _pass = files.pass.lock();
    let Some(log) = engine.log_handle().cloned() else {
        return Ok(0);
    };
    if !engine.logging() {
        return Ok(0);
    }
    if shutdown {
        files.touch_unclean();
    }
    let keys: Vec<Key> = std::mem::take(&mut *files.pending.lock())
        .into_iter()
        .collect();
    let mut done = Vec::new();
    let mut error = None;
    for key in keys {
        match write_pages(engine, &log, &key, shutdown) {
            Ok(Some(d)) => done.push(d),
            Ok(None) => {}
            Err(e) => {
                // Tried again at the next pass; the log still holds it all.
                files.pending.lock().insert(key);
                error = Some(e);
            }
        }
    }
    if done.is_empty() {
        return error.map_or(Ok(0), Err);
    }
    // Every record a header will claim must be as durable as the file.
    log.aof.flush_all().map_err(std::io::Error::other)?;
    let n = done.len();
    for d in done {
        let mut b = d.bound.lock();
        let synced = file::write_table(&b.file, b.layout, &b.table, &d.pages)
            .and_then(|()| b.file.sync_data())
            .and_then(|()| {
                use std::os::unix::fs::FileExt;
                b.file.write_all_at(&d.header.encode(), 0)
            })
            .and_then(|()| b.file.sync_data());
        if let Err(e) = synced {
            error = Some(e);
            continue;
        }
        b.fresh = false;
        b.clean = d.header.clean.then_some(d.header);
        files.stats.checkpoints.fetch_add(1, Ordering::Relaxed);
    }
    error.map_or(Ok(n), Err)
}

/// The file a sketch needs: its kind and dimensions (a count-min sketch's
/// width and depth; an encoded body's length and the pages a new file gives
/// it).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Shape {
    kind: u32,
    width: u64,
    depth: u64,
    /// Encoded kinds: the pages the body takes now, and a new file's pages.
    need: usize,
    room: usize,
}

impl Shape {
    fn of(s: &Sketch) -> Shape {
        let kind = s.file_kind();
        if !file::encoded(kind) {
            let c = crate::sketch::cms::CountMin::of(s).expect("the unencoded kind");
            return Shape {
                kind,
                width: c.width(),
                depth: c.depth(),
                need: 0,
                room: 0,
            };
        }
        let len = s.file_len();
        let need = len.div_ceil(PAGE).max(1);
        Shape {
            kind,
            width: len as u64,
            depth: 0,
            need,
            room: s.file_capacity(len).div_ceil(PAGE).max(need),
        }
    }

    /// Whether file `b` can take it: a count-min sketch's of its very
    /// dimensions; an encoded body's of its kind with room for the body, and
    /// at most twice the room a new file would have (a smaller structure
    /// that replaced a large one gives the disk back).
    fn fits(&self, b: &Bound) -> bool {
        match file::encoded(self.kind) {
            false => (b.kind, b.width, b.depth) == (self.kind, self.width, self.depth),
            true => {
                b.kind == self.kind
                    && b.layout.pages >= self.need
                    && b.layout.pages <= 2 * self.room
            }
        }
    }
}

/// The key's changed pages with the next generation, the log's end as the
/// checkpoint: under the key's lock, the pages its structure marked since
/// its file got them (all of them for a new file) are taken, and written
/// with their table entries once the lock is released (copied out first),
/// or under it past `SNAPSHOT_PAGES`. One path for every kind: the structure gives the marked
/// pages' bytes (`Sketch::file_pages`). A structure that no longer fits its
/// file (a count-min sketch of other dimensions, a cuckoo filter that grew,
/// a top-k's items, another kind) gets a new file. None when the key no
/// longer holds a sketch (its file is removed).
fn write_pages(
    engine: &Engine,
    log: &crate::persist::Log,
    key: &Key,
    shutdown: bool,
) -> std::io::Result<Option<Done>> {
    let files = &engine.sketch_files;
    let (db, name) = (key.0, &key.1[..]);
    let look = engine.read(db, name, |e| {
        e.and_then(|e| e.value().as_sketch())
            .map(|s| (Shape::of(s), s.file_dirty().file()))
    });
    let Some((shape, marks)) = look else {
        if let Some(b) = files.bound.lock().remove(key) {
            let _ = std::fs::remove_file(&b.lock().path);
        }
        return Ok(None);
    };
    let existing = files.bound.lock().get(key).cloned();
    let bound = match existing {
        Some(b)
            if {
                let g = b.lock();
                shape.fits(&g) && g.takes_marks(marks)
            } =>
        {
            b
        }
        _ => {
            // A new sketch, or one the file cannot take: a new file.
            let depth = match file::encoded(shape.kind) {
                true => shape.room as u64,
                false => shape.depth,
            };
            let b = files.new_bound(
                shape.kind,
                if file::encoded(shape.kind) {
                    0
                } else {
                    shape.width
                },
                depth,
            )?;
            let b = Arc::new(Mutex::new(b));
            if let Some(old) = files.bound.lock().insert(key.clone(), b.clone()) {
                let _ = std::fs::remove_file(&old.lock().path);
            }
            b
        }
    };
    let mut guard = bound.lock();
    let b = &mut *guard;
    // The flag's clearing is synced: done here, not under the key's lock,
    // when pages are known to be waiting (else below, under it).
    let dirty = engine.read(db, name, |e| {
        e.and_then(|e| e.value().as_sketch())
            .is_some_and(|s| s.file_dirty().any(b.id))
    });
    if dirty {
        b.unclean()?;
    }
    let generation = b.generation.wrapping_add(1);
    let (id, fresh, data, file_pages) = (b.id, b.fresh, b.layout.data, b.layout.pages);
    let (result, _) = engine.write1(db, name, |tx| -> std::io::Result<Option<Taken>> {
        let s = tx.get(db, name).and_then(|e| e.value().as_sketch());
        let now = s.map(|s| Shape::of(s));
        let (Some(s), Some(now)) = (s, now) else {
            // Gone since the look above: the next pass removes its file.
            files.touch(db, name);
            return Ok(None);
        };
        if !now.fits(b) || !b.takes_marks(s.file_dirty().file()) {
            // Changed since the look above: the next pass makes its file.
            files.touch(db, name);
            return Ok(None);
        }
        let checkpoint = log.aof.end_lsn().0;
        // An encoded body's pages only (a t-digest's file has room for
        // its compression's nodes; pages past the body are never read).
        let body_pages = match file::encoded(now.kind) {
            true => now.need,
            false => file_pages,
        };
        let pages = s.file_dirty().take(id, body_pages);
        let failed = |e: std::io::Error| {
            // Its pages are written again whole at the next pass.
            s.file_dirty().forget();
            files.touch(db, name);
            Err(e)
        };
        if !pages.is_empty() {
            if let Err(e) = b.unclean() {
                return failed(e);
            }
        }
        // Up to SNAPSHOT_PAGES, the pages are copied out here and
        // checksummed and written once the key's lock is released: a
        // write to the key waits for a copy, not for the file. The copy is
        // an anonymous mapping, outside malloc, so it is no part of
        // used_memory and never counts against maxmemory (as a fork's
        // copy-on-write pages are not in Redis's).
        let snapshot = if pages.is_empty() {
            None
        } else if pages.len() <= SNAPSHOT_PAGES {
            let map = memmap2::MmapOptions::new()
                .len(pages.len() * PAGE)
                .populate()
                .map_anon();
            let mut copy = match map {
                Ok(map) => map,
                Err(e) => return failed(e),
            };
            let mut at = 0;
            let copied = s.file_pages(&pages, &mut |_, page| {
                copy[at..at + PAGE].copy_from_slice(page);
                at += PAGE;
                Ok(())
            });
            if let Err(e) = copied {
                return failed(e);
            }
            Some(copy)
        } else {
            // Written here, RUN_PAGES at a time, by the same writer.
            let (mut run, mut numbers) = (Vec::with_capacity(RUN_PAGES * PAGE), Vec::new());
            let written = s.file_pages(&pages, &mut |p, page| {
                run.extend_from_slice(page);
                numbers.push(p);
                if numbers.len() == RUN_PAGES {
                    write_copy(b, generation, fresh, data, &numbers, &run)?;
                    run.clear();
                    numbers.clear();
                }
                Ok(())
            });
            if let Err(e) =
                written.and_then(|()| write_copy(b, generation, fresh, data, &numbers, &run))
            {
                return failed(e);
            }
            None
        };
        let (width, depth, counter) = match file::encoded(now.kind) {
            true => (now.width, file_pages as u64, 0),
            false => (
                now.width,
                now.depth,
                crate::sketch::cms::CountMin::of(s).map_or(0, |c| c.count()),
            ),
        };
        let header = Header {
            kind: now.kind,
            generation,
            checkpoint,
            db: db as u32,
            width,
            depth,
            counter,
            key: name.to_vec(),
            // Still clean if no page was written since the flag was.
            clean: shutdown || b.clean.is_some(),
        };
        Ok(Some((header, pages, snapshot)))
    });
    let Some((header, pages, snapshot)) = result? else {
        return Ok(None);
    };
    if let Some(copy) = snapshot {
        if let Err(e) = write_copy(b, generation, fresh, data, &pages, &copy) {
            // Its pages are written again whole at the next pass.
            engine.read(db, name, |e| {
                if let Some(s) = e.and_then(|e| e.value().as_sketch()) {
                    s.file_dirty().forget();
                }
            });
            files.touch(db, name);
            return Err(e);
        }
    }
    files
        .stats
        .pages_written
        .fetch_add(pages.len() as u64, Ordering::Relaxed);
    b.generation = generation;
    drop(guard);
    Ok(Some(Done {
        bound,
        header,
        pages,
    }))
}

/// What a checkpoint took under a key's lock: the header it will write,
/// the pages, and their bytes when copied out to be written after the lock.
type Taken = (Header, Vec<usize>, Option<memmap2::MmapMut>);

/// Most pages a checkpoint copies out under a key's lock to write after it
/// (64 MiB of anonymous mapping, for the moment of the copy); a larger
/// change is written under the lock.
const SNAPSHOT_PAGES: usize = 16 * 1024;
/// Most consecutive pages one write call takes (1 MiB): a page per call
/// cost five times as much kernel time as 1 MiB calls.
const RUN_PAGES: usize = 256;

/// Writes a checkpoint's pages into a bound file (`copy` holds `pages`, in
/// order): each page's table entry (generation and checksum), then runs of
/// consecutive pages straight from the copy, one call each; zero pages of a
/// new file are left unwritten (a new file is zeros already).
fn write_copy(
    b: &mut Bound,
    generation: u32,
    fresh: bool,
    data: u64,
    pages: &[usize],
    copy: &[u8],
) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let page = |i: usize| &copy[i * PAGE..(i + 1) * PAGE];
    for (i, &p) in pages.iter().enumerate() {
        b.table[p] = file::entry(generation, page(i));
    }
    let skipped = |i: usize| fresh && page(i).iter().all(|x| *x == 0);
    let mut i = 0;
    while i < pages.len() {
        if skipped(i) {
            i += 1;
            continue;
        }
        let first = i;
        i += 1;
        while i < pages.len()
            && i - first < RUN_PAGES
            && pages[i] == pages[i - 1] + 1
            && !skipped(i)
        {
            i += 1;
        }
        let at = data + (pages[first] * PAGE) as u64;
        b.file.write_all_at(&copy[first * PAGE..i * PAGE], at)?;
    }
    Ok(())
}

/// Notes every bound key that no longer holds a sketch (DEL, RENAME,
/// FLUSHALL, expiry): the next pass removes its file.
pub fn sweep(engine: &Engine) {
    let files = &engine.sketch_files;
    let keys: Vec<Key> = files.bound.lock().keys().cloned().collect();
    for key in keys {
        let held = engine.peek(key.0, &key.1, |e| {
            e.and_then(|e| e.value().as_sketch()).is_some()
        });
        if !held {
            files.pending.lock().insert(key);
        }
    }
}
