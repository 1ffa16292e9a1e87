//! Replaying base then incr files in manifest order.
//!
//! Recovery rules (see docs/aof-format.md): a batch's commands are handed out only after
//! its `#BK` checksum verified; a file without any `#BK` line (written by Redis) is applied
//! command by command like Redis does; MULTI/EXEC wrappers are removed and the commands
//! inside are handed out together once EXEC is read. A torn tail of the last file is cut
//! back to the last good point; anything else bad refuses to load unless `allow_corrupt`.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use xxhash_rust::xxh3::Xxh3;

use super::error::{AofError, Result};
use super::manifest::ManifestEntry;
use super::record::parse_batch_annotation;
use super::scan::{header_number, Line, Scanner};
use super::storage::LogFile;
use super::types::{BlobRef, FileId, Lsn};
use super::writer::Inner;

/// Without any `#BK` line this many inline bytes in, a file is treated as Redis-written and
/// its commands are handed out as they are read instead of being held for a checksum.
const REDIS_MODE_AFTER_BYTES: usize = 64 << 20;
/// Progress is reported at least this often.
const PROGRESS_EVERY: u64 = 4 << 20;

/// One argument of a loaded command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    /// A slice of one buffer that holds all its record's inline arguments
    /// (keeping one keeps that buffer: consumers copy what they store).
    Inline(Bytes),
    /// An argument of at least `blob_threshold` bytes: only its location and checksum.
    Blob(BlobRef),
}

/// An argument while its record is read: an inline one's range in the
/// record's buffer.
enum Part {
    Inline(usize, usize),
    Blob(BlobRef),
}

/// One command read back from the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedCommand {
    pub args: Vec<Arg>,
    pub file: FileId,
    /// Offset of the command's `*` in its file.
    pub offset: u64,
    /// Stream position just after the command; base-file commands get the position of the
    /// start of the first incr file, which they precede.
    pub lsn: Lsn,
}

/// Reported while loading so a server can show `loading:1` and log progress.
#[derive(Debug, Clone)]
pub struct LoadProgress {
    pub bytes_done: u64,
    pub bytes_total: u64,
    pub file: String,
}

/// What a load did.
#[derive(Debug, Clone, Default)]
pub struct LoadStats {
    pub files: usize,
    pub commands: u64,
    pub batches: u64,
    pub bytes: u64,
    /// `(file, offset)` where a torn tail was cut off.
    pub truncated: Option<(String, u64)>,
    /// `(file, offset, reason)` of corrupt regions skipped because `allow_corrupt` was set.
    pub skipped_corrupt: Vec<(String, u64, String)>,
}

#[derive(Debug)]
enum ProblemKind {
    Torn,
    Corrupt,
}

struct Problem {
    kind: ProblemKind,
    /// Where the damage was found (reported).
    offset: u64,
    /// Where the file is cut if the damage is tolerated: the end of the last good unit.
    cut: u64,
    reason: String,
}

struct FileParse<'a, F: FnMut(LoadedCommand) -> Result<()>> {
    file: FileId,
    lsn_base: Option<Lsn>,
    blob_threshold: usize,
    on_command: &'a mut F,
    pending: Vec<LoadedCommand>,
    pending_bytes: usize,
    multi: Option<(u64, Vec<LoadedCommand>)>,
    saw_batch: bool,
    redis_mode: bool,
    last_good: u64,
    batch_start: u64,
    commands: u64,
    batches: u64,
    /// A record's arguments while it is read (kept for the next record).
    parts: Vec<Part>,
    data: Vec<u8>,
}

enum Step {
    Eof,
    Problem(Problem),
}

impl<F: FnMut(LoadedCommand) -> Result<()>> FileParse<'_, F> {
    fn lsn_at(&self, pos: u64) -> Lsn {
        self.lsn_base
            .unwrap_or_else(|| Lsn::new(self.file.seq(), pos))
    }

    fn deliver(&mut self, cmds: Vec<LoadedCommand>) -> Result<()> {
        for c in cmds {
            self.commands += 1;
            (self.on_command)(c)?;
        }
        Ok(())
    }

    /// Damage whose detection point reaches into a zero-filled tail is a torn write;
    /// anything else is corruption.
    fn corrupt_or_torn(&self, s: &mut Scanner, at: u64, reason: &str) -> Result<Problem> {
        let detected = s.pos().max(at + 1);
        let zero_from = s.zero_tail_start().map_err(io_at(at))?;
        let zero = zero_from < s.len && zero_from < detected;
        Ok(Problem {
            kind: if zero {
                ProblemKind::Torn
            } else {
                ProblemKind::Corrupt
            },
            offset: at,
            cut: self.last_good,
            reason: if zero {
                format!("zero-filled tail from offset {zero_from}")
            } else {
                reason.to_string()
            },
        })
    }

    fn run(&mut self, s: &mut Scanner, progress: &mut dyn FnMut(u64)) -> Result<Step> {
        let mut reported = 0u64;
        loop {
            if s.pos() - reported >= PROGRESS_EVERY {
                reported = s.pos();
                progress(reported);
            }
            let unit_start = s.pos();
            if s.at_eof() {
                progress(s.pos());
                return Ok(Step::Eof);
            }
            let line = match s.line().map_err(io_at(unit_start))? {
                Line::Full(l) => l,
                Line::Torn => return Ok(Step::Problem(torn(self.last_good))),
                Line::TooLong => {
                    let p = self.corrupt_or_torn(s, unit_start, "line too long")?;
                    return Ok(Step::Problem(p));
                }
            };
            if line[0] == b'#' {
                if let Some((len, sum)) = parse_batch_annotation(&line) {
                    let actual_len = unit_start - self.batch_start;
                    let actual = s.batch_hash.digest();
                    // A file Redis wrote and BlinkDB went on appending to: before
                    // BlinkDB's first annotation lie Redis's unannotated commands,
                    // which the batch does not cover; its own bytes must match.
                    let after_redis = !self.saw_batch
                        && len < actual_len
                        && s.hash_range(unit_start - len, unit_start)
                            .map_err(io_at(unit_start))?
                            == sum;
                    if !after_redis && (len != actual_len || sum != actual) {
                        let kind = if s.at_eof() {
                            ProblemKind::Torn
                        } else {
                            ProblemKind::Corrupt
                        };
                        return Ok(Step::Problem(Problem {
                            kind,
                            offset: self.batch_start,
                            cut: self.last_good,
                            reason: format!(
                                "batch checksum mismatch (annotation at offset {unit_start})"
                            ),
                        }));
                    }
                    let cmds = std::mem::take(&mut self.pending);
                    self.pending_bytes = 0;
                    self.deliver(cmds)?;
                    self.batches += 1;
                    self.saw_batch = true;
                    self.redis_mode = false;
                    self.batch_start = s.pos();
                    s.batch_hash = Xxh3::new();
                    if self.multi.is_none() {
                        self.last_good = s.pos();
                    }
                } else {
                    s.batch_hash.update(&line);
                }
                continue;
            }
            s.batch_hash.update(&line);
            let Some(argc) = header_number(&line, b'*').filter(|&n| n >= 1) else {
                let p = self.corrupt_or_torn(s, unit_start, "expected '*<argc>'")?;
                return Ok(Step::Problem(p));
            };
            // The record's inline arguments are gathered in a buffer kept
            // from record to record, then copied into one allocation of
            // their exact size and handed out as slices of it: one
            // allocation per record, not one per argument (a restart
            // holding back a t-digest's 500-value TDIGEST.ADD records spent
            // half its time in malloc, realloc and free for them).
            let mut parts = std::mem::take(&mut self.parts);
            let mut data = std::mem::take(&mut self.data);
            parts.clear();
            data.clear();
            for _ in 0..argc {
                if let Some(v) = s.inline_arg_in_buffer(self.blob_threshold as u64) {
                    let at = data.len();
                    data.extend_from_slice(v);
                    parts.push(Part::Inline(at, data.len()));
                    continue;
                }
                let at = s.pos();
                let line = match s.line().map_err(io_at(at))? {
                    Line::Full(l) => l,
                    Line::Torn => return Ok(Step::Problem(torn(self.last_good))),
                    Line::TooLong => {
                        let p = self.corrupt_or_torn(s, at, "line too long")?;
                        return Ok(Step::Problem(p));
                    }
                };
                s.batch_hash.update(&line);
                let Some(len) = header_number(&line, b'$') else {
                    let p = self.corrupt_or_torn(s, at, "expected '$<len>'")?;
                    return Ok(Step::Problem(p));
                };
                let payload_at = s.pos();
                let arg = if len >= self.blob_threshold as u64 {
                    let mut h = Xxh3::new();
                    if s.payload(len, false, Some(&mut h))
                        .map_err(io_at(payload_at))?
                        .is_none()
                    {
                        return Ok(Step::Problem(torn(self.last_good)));
                    }
                    Part::Blob(BlobRef {
                        file: self.file,
                        offset: payload_at,
                        len,
                        checksum: h.digest(),
                    })
                } else {
                    match s.payload(len, true, None).map_err(io_at(payload_at))? {
                        Some(v) => {
                            let at = data.len();
                            data.extend_from_slice(&v);
                            Part::Inline(at, data.len())
                        }
                        None => return Ok(Step::Problem(torn(self.last_good))),
                    }
                };
                let crlf_at = s.pos();
                match s.payload(2, true, None).map_err(io_at(crlf_at))? {
                    Some(v) if v == b"\r\n" => {}
                    Some(_) => {
                        let p = self.corrupt_or_torn(s, crlf_at, "missing CRLF after bulk")?;
                        return Ok(Step::Problem(p));
                    }
                    None => return Ok(Step::Problem(torn(self.last_good))),
                }
                parts.push(arg);
            }
            let inline_bytes = data.len();
            let bytes = Bytes::copy_from_slice(&data);
            let mut args = Vec::with_capacity(parts.len());
            args.extend(parts.drain(..).map(|p| match p {
                Part::Inline(a, b) => Arg::Inline(bytes.slice(a..b)),
                Part::Blob(r) => Arg::Blob(r),
            }));
            (self.parts, self.data) = (parts, data);
            let cmd = LoadedCommand {
                args,
                file: self.file,
                offset: unit_start,
                lsn: self.lsn_at(s.pos()),
            };
            self.complete(cmd, unit_start, inline_bytes, s.pos())?;
        }
    }

    /// Routes a fully parsed command through MULTI/EXEC handling and the batch gate.
    fn complete(&mut self, cmd: LoadedCommand, start: u64, bytes: usize, end: u64) -> Result<()> {
        let name = match cmd.args.first() {
            Some(Arg::Inline(b)) => b.to_ascii_uppercase(),
            _ => Vec::new(),
        };
        let unit = match (name.as_slice(), self.multi.take()) {
            (b"MULTI", None) => {
                self.multi = Some((start, Vec::new()));
                return Ok(());
            }
            (b"EXEC", Some((_, cmds))) => cmds,
            (_, Some((s, mut cmds))) => {
                cmds.push(cmd);
                self.multi = Some((s, cmds));
                return Ok(());
            }
            (_, None) => vec![cmd],
        };
        if self.redis_mode {
            self.deliver(unit)?;
            self.last_good = end;
            return Ok(());
        }
        self.pending.extend(unit);
        self.pending_bytes += bytes;
        if !self.saw_batch && self.pending_bytes > REDIS_MODE_AFTER_BYTES {
            self.redis_mode = true;
            let cmds = std::mem::take(&mut self.pending);
            self.deliver(cmds)?;
            self.last_good = end;
        }
        Ok(())
    }

    /// Called at a clean EOF: what remains without a closing annotation.
    fn finish(&mut self, end: u64) -> Result<Option<Problem>> {
        if let Some((start, _)) = self.multi.take() {
            // Like Redis: keep what preceded the MULTI, drop the unfinished transaction.
            if !self.saw_batch {
                let cmds = std::mem::take(&mut self.pending);
                self.deliver(cmds)?;
                self.last_good = start;
            }
            return Ok(Some(Problem {
                kind: ProblemKind::Torn,
                offset: start,
                cut: self.last_good,
                reason: "incomplete MULTI/EXEC transaction".into(),
            }));
        }
        if self.pending.is_empty() {
            return Ok(None);
        }
        if self.saw_batch {
            return Ok(Some(Problem {
                kind: ProblemKind::Torn,
                offset: self.last_good,
                cut: self.last_good,
                reason: "commands after the last batch annotation".into(),
            }));
        }
        let cmds = std::mem::take(&mut self.pending);
        self.deliver(cmds)?;
        self.last_good = end;
        Ok(None)
    }
}

fn torn(at: u64) -> Problem {
    Problem {
        kind: ProblemKind::Torn,
        offset: at,
        cut: at,
        reason: "unexpected end of file".into(),
    }
}

fn io_at(offset: u64) -> impl Fn(std::io::Error) -> AofError {
    move |e| AofError::Corrupt {
        file: String::new(),
        offset,
        reason: format!("read error: {e}"),
    }
}

/// Parses `<prefix><decimal>\r\n`.
/// An RDB-format base the caller loads itself (see `Aof::load_with_rdb_base`).
pub struct RdbBase {
    pub path: std::path::PathBuf,
    /// The name the manifest gives it.
    pub name: String,
    /// Its id: a large value the caller keeps in place points into it.
    pub file: FileId,
    pub len: u64,
}

impl Inner {
    pub fn load(
        &self,
        mut on_command: impl FnMut(LoadedCommand) -> Result<()>,
        on_rdb_base: Option<&mut dyn FnMut(RdbBase) -> Result<u64>>,
        mut on_progress: impl FnMut(LoadProgress),
    ) -> Result<LoadStats> {
        let mut on_rdb_base = on_rdb_base;
        if self.append.lock().loaded {
            return Err(AofError::AlreadyLoaded);
        }
        let manifest = self.writer.lock().manifest.clone();
        let first_incr = manifest.incr.first().map_or(1, |e| e.seq);
        let mut files: Vec<(&ManifestEntry, FileId)> = Vec::new();
        if let Some(b) = &manifest.base {
            files.push((b, FileId::base(b.seq)));
        }
        for e in &manifest.incr {
            files.push((e, FileId::incr(e.seq)));
        }
        let mut handles = Vec::new();
        let mut total = 0u64;
        for (entry, id) in &files {
            let f = self.cached_or_open(*id, &entry.name)?;
            let path = self.path(&entry.name);
            let len = f.size().map_err(|e| AofError::io("fstat", &path, e))?;
            total += len;
            handles.push((f, len));
        }
        // The total is known before the first byte is read; report it at once.
        if let Some((entry, _)) = files.first() {
            on_progress(LoadProgress {
                bytes_done: 0,
                bytes_total: total,
                file: entry.name.clone(),
            });
        }
        let mut stats = LoadStats {
            files: files.len(),
            ..LoadStats::default()
        };
        let mut done_before = 0u64;
        let mut final_sizes = 0u64;
        let last_index = files.len().saturating_sub(1);
        for (i, ((entry, id), (f, len))) in files.iter().zip(handles).enumerate() {
            let is_last = i == last_index;
            let mut s = Scanner::new(f.clone(), len);
            if len >= 5 && is_rdb(&*f) {
                if !id.is_base() {
                    return Err(AofError::Corrupt {
                        file: entry.name.clone(),
                        offset: 0,
                        reason: "an RDB-format file is only read as the base".into(),
                    });
                }
                stats.commands += match on_rdb_base.as_mut() {
                    Some(load_base) => load_base(RdbBase {
                        path: self.path(&entry.name),
                        name: entry.name.clone(),
                        file: *id,
                        len,
                    })?,
                    None => super::rdb_base::replay(
                        &*f,
                        len,
                        *id,
                        Lsn::new(first_incr, 0),
                        &entry.name,
                        &mut on_command,
                    )?,
                };
                done_before += len;
                final_sizes += len;
                continue;
            }
            let mut fp = FileParse {
                file: *id,
                lsn_base: id.is_base().then(|| Lsn::new(first_incr, 0)),
                blob_threshold: self
                    .blob_threshold
                    .load(std::sync::atomic::Ordering::Relaxed),
                on_command: &mut on_command,
                pending: Vec::new(),
                pending_bytes: 0,
                multi: None,
                saw_batch: false,
                redis_mode: false,
                last_good: 0,
                batch_start: 0,
                commands: 0,
                batches: 0,
                parts: Vec::new(),
                data: Vec::new(),
            };
            let name = entry.name.clone();
            let mut progress = |pos: u64| {
                on_progress(LoadProgress {
                    bytes_done: done_before + pos,
                    bytes_total: total,
                    file: name.clone(),
                })
            };
            let step = fp
                .run(&mut s, &mut progress)
                .map_err(|e| name_file(e, &entry.name))?;
            let problem = match step {
                Step::Eof => fp.finish(len)?,
                Step::Problem(p) => Some(p),
            };
            stats.commands += fp.commands;
            stats.batches += fp.batches;
            done_before += len;
            let mut kept = len;
            if let Some(p) = problem {
                kept = self.handle_problem(p, entry, &f, is_last, &mut stats)?;
            }
            final_sizes += kept;
            if is_last && !id.is_base() {
                let mut w = self.writer.lock();
                if w.file_seq == id.seq() {
                    w.written_end = kept;
                }
            }
        }
        stats.bytes = final_sizes;
        self.finish_load(&manifest, final_sizes);
        // Plain RESP after a `#BK` batch would read back as a torn tail: without batch
        // checksums, appends go to a new incr file unless the last one is empty.
        let last_written = self.writer.lock().written_end;
        if !self.opts.batch_checksums && last_written > 0 {
            self.rotate_incr()?;
        }
        Ok(stats)
    }

    /// Applies the recovery rules; returns the file's length after any truncation.
    fn handle_problem(
        &self,
        p: Problem,
        entry: &ManifestEntry,
        f: &Arc<dyn LogFile>,
        is_last: bool,
        stats: &mut LoadStats,
    ) -> Result<u64> {
        let path = self.path(&entry.name);
        let tolerated = match p.kind {
            ProblemKind::Torn => is_last && self.opts.load_truncated,
            ProblemKind::Corrupt => false,
        };
        if tolerated || self.opts.allow_corrupt {
            if !tolerated {
                tracing::warn!(
                    "!!! Skipping corrupt AOF data in {} from offset {} ({}) because \
                     allow-corrupt is set !!!",
                    entry.name,
                    p.offset,
                    p.reason
                );
                stats
                    .skipped_corrupt
                    .push((entry.name.clone(), p.offset, p.reason.clone()));
                if !is_last {
                    return f.size().map_err(|e| AofError::io("fstat", &path, e));
                }
            } else {
                tracing::warn!(
                    "!!! Warning: short read while loading the AOF file {} ({} at offset {}); \
                     truncating it at offset {} !!!",
                    entry.name,
                    p.reason,
                    p.offset,
                    p.cut
                );
                stats.truncated = Some((entry.name.clone(), p.cut));
            }
            let rw = self
                .storage
                .open(&path)
                .map_err(|e| AofError::io("open", &path, e))?;
            rw.set_len(p.cut)
                .map_err(|e| AofError::io("ftruncate", &path, e))?;
            rw.sync_data()
                .map_err(|e| AofError::io("fdatasync", &path, e))?;
            return Ok(p.cut);
        }
        let reason = match p.kind {
            ProblemKind::Torn if !is_last => {
                format!("{} (the truncated file is not the last file)", p.reason)
            }
            ProblemKind::Torn => format!("{} (aof-load-truncated is off)", p.reason),
            ProblemKind::Corrupt => p.reason,
        };
        Err(AofError::Corrupt {
            file: entry.name.clone(),
            offset: p.offset,
            reason,
        })
    }

    fn finish_load(&self, manifest: &super::manifest::Manifest, total: u64) {
        let base_size = manifest
            .base
            .as_ref()
            .and_then(|b| self.files.read().get(&FileId::base(b.seq)).cloned())
            .and_then(|f| f.size().ok())
            .unwrap_or(0);
        self.counters.base_size.store(base_size, Ordering::Relaxed);
        self.counters.total_size.store(total, Ordering::Relaxed);
        let w = self.writer.lock();
        let end = Lsn::new(w.file_seq, w.written_end);
        let mut a = self.append.lock();
        a.file_seq = w.file_seq;
        a.open_start = w.written_end;
        a.open.clear();
        a.loaded = true;
        self.written_lsn.store(end.0, Ordering::Release);
        self.synced_lsn.store(end.0, Ordering::Release);
    }

    pub fn cached_or_open(&self, id: FileId, name: &str) -> Result<Arc<dyn LogFile>> {
        if let Some(f) = self.files.read().get(&id) {
            return Ok(f.clone());
        }
        let path = self.path(name);
        let f = self
            .storage
            .open_read(&path)
            .map_err(|e| AofError::io("open", &path, e))?;
        self.files.write().insert(id, f.clone());
        Ok(f)
    }
}

fn is_rdb(f: &dyn LogFile) -> bool {
    let mut sig = [0u8; 5];
    matches!(f.read_at(&mut sig, 0), Ok(5)) && &sig == b"REDIS"
}

fn name_file(e: AofError, name: &str) -> AofError {
    match e {
        AofError::Corrupt { offset, reason, .. } => AofError::Corrupt {
            file: name.to_string(),
            offset,
            reason,
        },
        other => other,
    }
}
