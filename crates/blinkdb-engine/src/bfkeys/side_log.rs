//! Side logs: the values a filter counted as newly added, in order, because
//! neither a kernel map nor a Bloom file can give its items back and an AOF
//! rewrite must keep them (`<id:016x>.klog`: kernel values; `<id:016x>.ilog`:
//! a user filter's items as their xxh3-128 digests, which are its probe
//! hashes, each followed since version 2 by the item's RedisBloom hash pair,
//! which its exact `MBbloom--` export sets bits with).
//!
//! Byte layout (little-endian):
//!
//! ```text
//! offset  size  field
//! 0       8     magic        b"BLINKKL\0"
//! 8       4     version      1: values as they are (every .klog; .ilog before
//!                               RedisBloom pairs); 2: .ilog entries of 32 bytes;
//!                            3: as 2, but an add was answered "present" (see
//!                               `ItemLog::swallowed`): pairs no longer exported
//! 12      4     value size   v: version 1: 16 (xxh3-128 digest) or a kernel
//!                            filter's RAW width; versions 2 and 3: 32
//! 16      v*n   values       in the order they were added; a torn tail is cut
//!
//! version 2 entry (.ilog):
//! 0       16    xxh3-128 digest of the item (the filter's probe hash)
//! 16      8     a = MurmurHash64A(item, 0xc6a4a7935bd1e995)   (RedisBloom 2.8's
//! 24      8     b = MurmurHash64A(item, a)                      bloom_calc_hash64;
//!                                                               0, 0 in version 3)
//! ```

use crate::bloom::BloomError;
use parking_lot::Mutex;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

const MAGIC: [u8; 8] = *b"BLINKKL\0";
/// Values as they are: kernel logs, and item logs of digests only.
pub(crate) const PLAIN: u32 = 1;
/// Item logs whose entries carry RedisBloom's hash pair after the digest.
const PAIRED: u32 = 2;
/// A paired log of a filter that swallowed an add (its pairs are not used).
const SWALLOWED: u32 = 3;
const HEADER: u64 = 16;

/// A user filter's digest log.
pub(crate) fn item_log_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id:016x}.ilog"))
}

pub(crate) fn storage(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> BloomError {
    let path = path.display().to_string();
    move |e| BloomError::Storage(format!("{op} {path}: {e}"))
}

/// Logs up to this size are read at once when snapshotted (no descriptor held).
const SNAPSHOT_READ_NOW_BYTES: u64 = 64 * 1024;

/// The first `entries` values of a side log as they are now. A small log (or
/// one snapshotted with `hold_open` false) is read at once into one buffer; a
/// large one is read later in chunks through a handle opened now: the file is
/// append-only, and the handle keeps it readable even if the filter is deleted
/// (and its log unlinked) meanwhile.
pub struct ValuesSnapshot {
    source: SnapshotSource,
    path: PathBuf,
    value_size: usize,
    entries: u64,
}

enum SnapshotSource {
    File(File),
    Read(Vec<u8>),
}

impl ValuesSnapshot {
    pub(crate) fn open(
        path: &Path,
        value_size: usize,
        entries: u64,
        hold_open: bool,
    ) -> Result<ValuesSnapshot, BloomError> {
        use std::os::unix::fs::FileExt;
        let file = File::open(path).map_err(storage("open", path))?;
        let bytes = entries.saturating_mul(value_size as u64);
        let source = if hold_open && bytes > SNAPSHOT_READ_NOW_BYTES {
            SnapshotSource::File(file)
        } else {
            let len = usize::try_from(bytes)
                .map_err(|_| BloomError::Storage(format!("{}: too large", path.display())))?;
            let mut raw = vec![0u8; len];
            file.read_exact_at(&mut raw, HEADER)
                .map_err(storage("read", path))?;
            SnapshotSource::Read(raw)
        };
        Ok(ValuesSnapshot {
            source,
            path: path.to_path_buf(),
            value_size,
            entries,
        })
    }

    /// Whether this snapshot holds a file descriptor until it is written.
    pub fn holds_file(&self) -> bool {
        matches!(self.source, SnapshotSource::File(_))
    }

    /// Calls `f` with the values from number `from` on, in order, at most
    /// `per_call` at a time; stops at the first error.
    pub fn for_each_chunk(
        &self,
        from: u64,
        per_call: usize,
        mut f: impl FnMut(&[&[u8]]) -> Result<(), BloomError>,
    ) -> Result<(), BloomError> {
        use std::os::unix::fs::FileExt;
        let size = self.value_size.max(1);
        let mut buf = match self.source {
            SnapshotSource::File(_) => vec![0u8; per_call * size],
            SnapshotSource::Read(_) => Vec::new(),
        };
        let mut done = from;
        while done < self.entries {
            let n = (self.entries - done).min(per_call as u64) as usize;
            let chunk: &[u8] = match &self.source {
                SnapshotSource::File(file) => {
                    let chunk = &mut buf[..n * size];
                    file.read_exact_at(chunk, HEADER + done * size as u64)
                        .map_err(storage("read", &self.path))?;
                    chunk
                }
                SnapshotSource::Read(raw) => {
                    let at = done as usize * size;
                    &raw[at..at + n * size]
                }
            };
            let values: Vec<&[u8]> = chunk.chunks_exact(size).collect();
            f(&values)?;
            done += n as u64;
        }
        Ok(())
    }
}

/// Opens the side log for appending, writing its header if new and cutting a
/// torn last value; returns it and the number of whole values.
pub(crate) fn open_side_log(path: &Path, value_size: u32) -> Result<(File, u64), BloomError> {
    let (file, entries, _) = open_side_log_as(path, &[(PLAIN, value_size)])?;
    Ok((file, entries))
}

/// [`open_side_log`] for a log that may have one of several (version, value
/// size) headers: a new log gets the first; returns the one it has.
fn open_side_log_as(
    path: &Path,
    accepted: &[(u32, u32)],
) -> Result<(File, u64, (u32, u32)), BloomError> {
    let mut file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .map_err(storage("open", path))?;
    let len = file.metadata().map_err(storage("fstat", path))?.len();
    if len < HEADER {
        let (version, value_size) = accepted[0];
        file.set_len(0).map_err(storage("truncate", path))?;
        file.write_all(&side_log_header(version, value_size))
            .map_err(storage("write", path))?;
        return Ok((file, 0, accepted[0]));
    }
    let mut header = [0u8; HEADER as usize];
    file.read_exact(&mut header)
        .map_err(storage("read", path))?;
    let found = accepted
        .iter()
        .copied()
        .find(|&(version, size)| header == side_log_header(version, size));
    let Some((version, value_size)) = found else {
        return Err(BloomError::Storage(format!(
            "side log {} has a bad header or another value size",
            path.display()
        )));
    };
    let entries = (len - HEADER) / value_size as u64;
    let whole = HEADER + entries * value_size as u64;
    if whole != len {
        tracing::warn!(path = %path.display(), "cutting a torn value off a side log");
        file.set_len(whole).map_err(storage("truncate", path))?;
    }
    Ok((file, entries, (version, value_size)))
}

fn side_log_header(version: u32, value_size: u32) -> [u8; HEADER as usize] {
    let mut header = [0u8; HEADER as usize];
    header[..8].copy_from_slice(&MAGIC);
    header[8..12].copy_from_slice(&version.to_le_bytes());
    header[12..].copy_from_slice(&value_size.to_le_bytes());
    header
}

/// One item as an item log keeps it: its xxh3-128 digest, and RedisBloom's
/// MurmurHash64A pair when known (items replayed from a version-1 log or an
/// older rewrite's digest-only `BLINKDB.BFVALUES` have none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LoggedItem {
    pub digest: [u8; 16],
    pub pair: Option<(u64, u64)>,
}

impl LoggedItem {
    /// What a live add (or the replay of a logged item) records.
    pub(crate) fn of(item: &[u8]) -> LoggedItem {
        LoggedItem {
            digest: crate::filter::ItemHash::of(item).to_digest(),
            pair: Some(crate::bloom::redisbloom_hash(item)),
        }
    }

    /// A stored value: 16 bytes (digest) or 32 (digest, then the pair).
    pub(crate) fn decode(value: &[u8]) -> Option<LoggedItem> {
        let digest = value.get(..16)?.try_into().ok()?;
        let pair = match value.len() {
            16 => None,
            32 => {
                let word = |at: usize| u64::from_le_bytes(value[at..at + 8].try_into().expect("8"));
                Some((word(16), word(24)))
            }
            _ => return None,
        };
        Some(LoggedItem { digest, pair })
    }

    fn encode_into(&self, paired: bool, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.digest);
        if paired {
            let (a, b) = self.pair.unwrap_or_default();
            out.extend_from_slice(&a.to_le_bytes());
            out.extend_from_slice(&b.to_le_bytes());
        }
    }
}

/// A user filter's item log, and whether it holds items #1.. of the filter's
/// whole life (false after a gap: a filter restored by BF.LOADCHUNK, or bound by
/// a binding whose counted items it lacks).
///
/// Appends are buffered in memory and written at the periodic flush (or when
/// 64 KiB pile up), and a new filter's file is only created then: a `write()` per
/// added item and a file per BF.RESERVE would cost more than the add itself. A
/// digest lost from the buffer by a crash is still in the AOF, whose replay
/// appends what the log lacks.
///
/// New logs are version 2 (digest + RedisBloom pair per item). A version-1
/// log (from before pairs) stays version 1; an item without a pair arriving
/// at a version-2 log turns it into version 1 (logged): the filter's RedisBloom
/// export is then saturated, as before pairs.
pub(crate) struct ItemLog {
    path: PathBuf,
    inner: Mutex<ItemLogState>,
    /// `!paired || swallowed`, readable without the lock: once set it stays,
    /// and an add answered "present" then costs no lock (`swallowed`).
    pairs_off: AtomicBool,
}

struct ItemLogState {
    /// None until the first write-out of a new log.
    file: Option<File>,
    /// Entries not written yet.
    pending: Vec<u8>,
    /// Entries in the file plus pending ones.
    entries: u64,
    complete: bool,
    /// Versions 2 and 3: entries are 32 bytes (digest and pair).
    paired: bool,
    /// Version 3: an add was answered "present", so some item's pair may be
    /// missing; the pairs are not exported (nor computed) any more.
    swallowed: bool,
    /// The file was missing at replay: the first replayed item marks the log
    /// swallowed (see [`ItemLog::swallowed`]).
    refilled: bool,
}

impl ItemLogState {
    fn entry_size(&self) -> u32 {
        if self.paired {
            PAIRED_ENTRY
        } else {
            DIGEST
        }
    }
}

const DIGEST: u32 = 16;
const PAIRED_ENTRY: u32 = 32;
const WRITE_OUT_BYTES: usize = 64 * 1024;

/// What an item log can give a RedisBloom export.
pub(crate) enum LoggedPairs {
    /// The entries of every item of the filter's life, in order (none
    /// when the filter never counted an item).
    Complete(Option<ValuesSnapshot>),
    /// Why not: the reason, for the log line of a saturated export.
    Missing(&'static str),
}

impl ItemLog {
    /// A new, empty log for a new filter (a stale file is replaced at the first write-out).
    pub(crate) fn create(dir: &Path, id: u64) -> Result<ItemLog, BloomError> {
        Ok(ItemLog {
            path: item_log_path(dir, id),
            pairs_off: AtomicBool::new(false),
            inner: Mutex::new(ItemLogState {
                file: None,
                pending: Vec::new(),
                entries: 0,
                complete: true,
                paired: true,
                swallowed: false,
                refilled: false,
            }),
        })
    }

    /// The log at replay; `base` items were counted before the binding record.
    pub(crate) fn open(dir: &Path, id: u64, base: u64) -> Result<ItemLog, BloomError> {
        let path = item_log_path(dir, id);
        let existed = path.exists();
        let (file, entries, (version, _)) = open_side_log_as(
            &path,
            &[
                (PAIRED, PAIRED_ENTRY),
                (SWALLOWED, PAIRED_ENTRY),
                (PLAIN, DIGEST),
            ],
        )?;
        let log = ItemLog {
            path,
            pairs_off: AtomicBool::new(version != PAIRED),
            inner: Mutex::new(ItemLogState {
                file: Some(file),
                pending: Vec::new(),
                entries,
                complete: entries >= base,
                paired: version != PLAIN,
                swallowed: version == SWALLOWED,
                refilled: false,
            }),
        };
        // Refilled by replay, which never sees an add answered "present":
        // whether the filter swallowed one is unknown once it had items.
        log.inner.lock().refilled = !existed;
        Ok(log)
    }

    /// A log that cannot be complete (BF.LOADCHUNK: the items are unknown).
    pub(crate) fn incomplete(dir: &Path, id: u64) -> Result<ItemLog, BloomError> {
        let log = ItemLog::create(dir, id)?;
        log.inner.lock().complete = false;
        Ok(log)
    }

    /// A live add's item: its digest, and its pair unless no longer exported.
    /// A new item of the filter: its digest, and its RedisBloom pair while
    /// the log keeps pairs (one lock for both).
    /// `hash` is the chain's: its pair, when the chain computed one (it has flat
    /// sub-filters, whose rebuild needs it), is logged even after the log stopped
    /// computing pairs for the export.
    pub(crate) fn append_item(
        &self,
        item: &[u8],
        hash: &crate::bloom::ProbeHash,
    ) -> Result<(), BloomError> {
        let digest = hash.hash.to_digest();
        let mut state = self.inner.lock();
        let pair = hash.pair.or_else(|| {
            (state.paired && !state.swallowed).then(|| crate::bloom::redisbloom_hash(item))
        });
        self.append_locked(&mut state, &LoggedItem { digest, pair })
    }

    /// An item of a chain with no flat sub-filter (no pair computed by it).
    #[cfg(test)]
    pub(crate) fn append_item_plain(&self, item: &[u8]) -> Result<(), BloomError> {
        let hash = crate::bloom::ProbeHash {
            hash: crate::filter::ItemHash::of(item),
            pair: None,
        };
        self.append_item(item, &hash)
    }

    pub(crate) fn append(&self, item: &LoggedItem) -> Result<(), BloomError> {
        self.append_locked(&mut self.inner.lock(), item)
    }

    fn append_locked(&self, state: &mut ItemLogState, item: &LoggedItem) -> Result<(), BloomError> {
        if state.paired && !state.swallowed && item.pair.is_none() {
            self.drop_pairs(state)?;
        }
        let paired = state.paired;
        item.encode_into(paired, &mut state.pending);
        state.entries += 1;
        if state.pending.len() >= WRITE_OUT_BYTES {
            self.write_out(state)?;
        }
        Ok(())
    }

    /// Replay of the filter's item number `n` (1-based): appended unless the
    /// log already has it; a gap makes the log incomplete.
    pub(crate) fn replayed(&self, n: u64, item: &LoggedItem) -> Result<(), BloomError> {
        let (entries, refilled) = {
            let mut state = self.inner.lock();
            if n > state.entries + 1 {
                state.complete = false;
            }
            (state.entries, std::mem::take(&mut state.refilled))
        };
        if refilled {
            self.swallowed()?;
        }
        if n == entries + 1 {
            self.append(item)?;
        }
        Ok(())
    }

    /// The filter answered "present" to an add. The item is not logged (the
    /// log holds counted items, which replay and rewrites count on), but it
    /// may have been a false positive of BlinkDB's bits, and then nothing
    /// sets its bits in RedisBloom's scheme: an export from the pairs would
    /// answer 0 for an item the client was told is present. From now on the
    /// export is saturated; the version-3 header records it (written at once,
    /// no fsync: a crash that loses it also loses the adds after it, which
    /// the AOF holds, but not this one, so it is durable with the next sync).
    pub(crate) fn swallowed(&self) -> Result<(), BloomError> {
        if self.pairs_off.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut state = self.inner.lock();
        if !state.paired || state.swallowed {
            return Ok(());
        }
        state.swallowed = true;
        self.pairs_off.store(true, Ordering::Release);
        if state.file.is_some() {
            use std::os::unix::fs::FileExt;
            // The append handle ignores offsets (O_APPEND): a second one.
            OpenOptions::new()
                .write(true)
                .open(&self.path)
                .and_then(|f| f.write_all_at(&SWALLOWED.to_le_bytes(), 8))
                .map_err(storage("write header", &self.path))?;
        }
        Ok(())
    }

    /// Whether adds still need their RedisBloom pair computed.
    #[cfg(test)]
    pub(crate) fn wants_pairs(&self) -> bool {
        !self.pairs_off.load(Ordering::Acquire)
    }

    pub(crate) fn is_complete(&self) -> bool {
        self.inner.lock().complete
    }

    /// Whether the log has a file (a log never written out has none to delete).
    pub(crate) fn on_disk(&self) -> bool {
        self.inner.lock().file.is_some()
    }

    /// The entries logged so far, written out (rebuild, AOF rewrite; see
    /// `ValuesSnapshot`): 16 bytes each (digest), or 32 (digest and pair).
    pub(crate) fn snapshot(&self, hold_open: bool) -> Result<Option<ValuesSnapshot>, BloomError> {
        let mut state = self.inner.lock();
        self.write_out(&mut state)?;
        if state.file.is_none() {
            return Ok(None);
        }
        let size = state.entry_size() as usize;
        ValuesSnapshot::open(&self.path, size, state.entries, hold_open).map(Some)
    }

    /// The entries, for a RedisBloom export, if they are the filter's whole
    /// life (`card` items) with their pairs.
    pub(crate) fn pairs(&self, card: u64) -> Result<LoggedPairs, BloomError> {
        let (complete, paired, swallowed, entries) = {
            let state = self.inner.lock();
            (state.complete, state.paired, state.swallowed, state.entries)
        };
        if !complete {
            return Ok(LoggedPairs::Missing(
                "its item log lacks items (BF.LOADCHUNK, a load from an RDB file, or files older than item logs)",
            ));
        }
        if !paired {
            return Ok(LoggedPairs::Missing(
                "its item log holds digests only (written before RedisBloom pairs were kept)",
            ));
        }
        if swallowed {
            return Ok(LoggedPairs::Missing(
                "an add was answered \"present\" (a false positive's item is not logged, so its bits in RedisBloom's scheme are unknown)",
            ));
        }
        if entries != card {
            return Ok(LoggedPairs::Missing(
                "its item log and its item count disagree",
            ));
        }
        Ok(LoggedPairs::Complete(self.snapshot(true)?))
    }

    /// Writes the buffered entries and fdatasyncs the file.
    pub(crate) fn sync(&self) -> Result<(), BloomError> {
        let mut state = self.inner.lock();
        self.write_out(&mut state)?;
        match &state.file {
            Some(file) => file.sync_data().map_err(storage("fsync", &self.path)),
            None => Ok(()),
        }
    }

    fn write_out(&self, state: &mut ItemLogState) -> Result<(), BloomError> {
        if state.file.is_none() {
            if state.pending.is_empty() {
                return Ok(());
            }
            let _ = std::fs::remove_file(&self.path);
            let header = if state.swallowed {
                (SWALLOWED, PAIRED_ENTRY)
            } else if state.paired {
                (PAIRED, PAIRED_ENTRY)
            } else {
                (PLAIN, DIGEST)
            };
            state.file = Some(open_side_log_as(&self.path, &[header])?.0);
        }
        if !state.pending.is_empty() {
            let file = state.file.as_mut().expect("opened above");
            file.write_all(&state.pending)
                .map_err(storage("append", &self.path))?;
            state.pending.clear();
        }
        Ok(())
    }

    /// Turns a version-2 log into version 1 (digests only), because an item
    /// without its pair is to be logged: the file is rewritten beside and
    /// renamed over (a crash leaves one or the other whole).
    fn drop_pairs(&self, state: &mut ItemLogState) -> Result<(), BloomError> {
        tracing::warn!(
            path = %self.path.display(),
            "an item without its RedisBloom hash pair (an older log or AOF rewrite): \
             this filter will export to RedisBloom saturated"
        );
        let strip = |entries: &[u8]| -> Vec<u8> {
            entries
                .chunks_exact(PAIRED_ENTRY as usize)
                .flat_map(|e| e[..DIGEST as usize].iter().copied())
                .collect()
        };
        state.pending = strip(&state.pending);
        state.paired = false;
        self.pairs_off.store(true, Ordering::Release);
        let Some(file) = state.file.take() else {
            return Ok(());
        };
        use std::os::unix::fs::FileExt;
        let pending = std::mem::take(&mut state.pending);
        let written = state.entries - (pending.len() / DIGEST as usize) as u64;
        let mut raw = vec![0u8; (written * PAIRED_ENTRY as u64) as usize];
        file.read_exact_at(&mut raw, HEADER)
            .map_err(storage("read", &self.path))?;
        drop(file);
        let mut plain = side_log_header(PLAIN, DIGEST).to_vec();
        plain.extend_from_slice(&strip(&raw));
        let tmp = self.path.with_extension("ilog.tmp");
        std::fs::write(&tmp, &plain).map_err(storage("write", &tmp))?;
        File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(storage("fsync", &tmp))?;
        std::fs::rename(&tmp, &self.path).map_err(storage("rename", &self.path))?;
        state.file = Some(open_side_log_as(&self.path, &[(PLAIN, DIGEST)])?.0);
        state.pending = pending;
        Ok(())
    }

    /// COPY: the same items under filter `to`.
    pub(crate) fn copy_to(&self, dir: &Path, to: u64) -> Result<ItemLog, BloomError> {
        self.sync()?;
        let (on_disk, entries, complete, paired, swallowed) = {
            let state = self.inner.lock();
            let s = &*state;
            (
                s.file.is_some(),
                s.entries,
                s.complete,
                s.paired,
                s.swallowed,
            )
        };
        let copy = if on_disk {
            let path = item_log_path(dir, to);
            std::fs::copy(&self.path, &path).map_err(storage("copy to", &path))?;
            ItemLog::open(dir, to, entries)?
        } else {
            ItemLog::create(dir, to)?
        };
        let mut state = copy.inner.lock();
        state.complete = complete;
        state.paired &= paired;
        state.swallowed |= swallowed;
        drop(state);
        Ok(copy)
    }

    pub(crate) fn remove(dir: &Path, id: u64) -> Result<(), BloomError> {
        let path = item_log_path(dir, id);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(storage("remove", &path)(e)),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::redisbloom_hash;

    fn items(n: usize) -> Vec<Vec<u8>> {
        (0..n).map(|i| format!("item:{i}").into_bytes()).collect()
    }

    fn entries(snapshot: &ValuesSnapshot) -> Vec<LoggedItem> {
        let mut out = Vec::new();
        snapshot
            .for_each_chunk(0, 7, |chunk| {
                out.extend(chunk.iter().map(|v| LoggedItem::decode(v).unwrap()));
                Ok(())
            })
            .unwrap();
        out
    }

    fn header_version(path: &Path) -> u32 {
        let raw = std::fs::read(path).unwrap();
        u32::from_le_bytes(raw[8..12].try_into().unwrap())
    }

    #[test]
    fn a_new_log_keeps_digests_and_pairs_across_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let log = ItemLog::create(dir.path(), 1).unwrap();
        let all = items(100);
        for item in &all {
            log.append_item_plain(item).unwrap();
        }
        log.sync().unwrap();
        drop(log);
        let path = item_log_path(dir.path(), 1);
        assert_eq!(header_version(&path), PAIRED);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), HEADER + 100 * 32);
        let log = ItemLog::open(dir.path(), 1, 100).unwrap();
        let LoggedPairs::Complete(Some(snapshot)) = log.pairs(100).unwrap() else {
            panic!("a complete paired log");
        };
        let expected: Vec<LoggedItem> = all.iter().map(|i| LoggedItem::of(i)).collect();
        assert_eq!(entries(&snapshot), expected);
        assert_eq!(expected[3].pair, Some(redisbloom_hash(b"item:3")));
        assert!(matches!(log.pairs(99).unwrap(), LoggedPairs::Missing(_)));
    }

    #[test]
    fn a_version_1_log_still_loads_and_stays_digest_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = item_log_path(dir.path(), 2);
        let mut raw = side_log_header(PLAIN, DIGEST).to_vec();
        let old = LoggedItem::of(b"old");
        raw.extend_from_slice(&old.digest);
        std::fs::write(&path, raw).unwrap();
        let log = ItemLog::open(dir.path(), 2, 1).unwrap();
        assert!(!log.wants_pairs());
        log.append_item_plain(b"new").unwrap();
        log.sync().unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), HEADER + 2 * 16);
        assert!(matches!(log.pairs(2).unwrap(), LoggedPairs::Missing(_)));
        let snapshot = log.snapshot(false).unwrap().unwrap();
        let digests: Vec<[u8; 16]> = entries(&snapshot).iter().map(|e| e.digest).collect();
        assert_eq!(digests, [old.digest, LoggedItem::of(b"new").digest]);
    }

    #[test]
    fn an_add_answered_present_is_recorded_in_the_header() {
        let dir = tempfile::tempdir().unwrap();
        let log = ItemLog::create(dir.path(), 3).unwrap();
        log.append_item_plain(b"a").unwrap();
        log.sync().unwrap();
        log.swallowed().unwrap();
        assert!(!log.wants_pairs());
        log.append_item_plain(b"b").unwrap();
        log.sync().unwrap();
        drop(log);
        let path = item_log_path(dir.path(), 3);
        assert_eq!(header_version(&path), SWALLOWED);
        let log = ItemLog::open(dir.path(), 3, 2).unwrap();
        assert!(matches!(log.pairs(2).unwrap(), LoggedPairs::Missing(_)));
        // The digests still rebuild the filter.
        let snapshot = log.snapshot(false).unwrap().unwrap();
        let got: Vec<[u8; 16]> = entries(&snapshot).iter().map(|e| e.digest).collect();
        assert_eq!(
            got,
            [LoggedItem::of(b"a").digest, LoggedItem::of(b"b").digest]
        );
        // Swallowed before the first write-out: the header says so from the start.
        let fresh = ItemLog::create(dir.path(), 4).unwrap();
        fresh.swallowed().unwrap();
        fresh.append_item_plain(b"c").unwrap();
        fresh.sync().unwrap();
        assert_eq!(header_version(&item_log_path(dir.path(), 4)), SWALLOWED);
    }

    #[test]
    fn an_item_without_a_pair_turns_the_log_into_version_1() {
        let dir = tempfile::tempdir().unwrap();
        let log = ItemLog::create(dir.path(), 5).unwrap();
        for item in items(10) {
            log.append_item_plain(&item).unwrap();
        }
        log.sync().unwrap();
        log.append_item_plain(b"pending").unwrap();
        let digest_only = LoggedItem {
            digest: LoggedItem::of(b"x").digest,
            pair: None,
        };
        log.replayed(12, &digest_only).unwrap();
        log.sync().unwrap();
        let path = item_log_path(dir.path(), 5);
        assert_eq!(header_version(&path), PLAIN);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), HEADER + 12 * 16);
        let snapshot = log.snapshot(false).unwrap().unwrap();
        let got: Vec<[u8; 16]> = entries(&snapshot).iter().map(|e| e.digest).collect();
        let mut expected: Vec<[u8; 16]> =
            items(10).iter().map(|i| LoggedItem::of(i).digest).collect();
        expected.push(LoggedItem::of(b"pending").digest);
        expected.push(digest_only.digest);
        assert_eq!(got, expected);
    }

    #[test]
    fn a_log_refilled_by_replay_does_not_export_pairs() {
        let dir = tempfile::tempdir().unwrap();
        // An empty filter whose log never reached the disk stays exportable.
        let empty = ItemLog::open(dir.path(), 6, 0).unwrap();
        assert!(matches!(empty.pairs(0).unwrap(), LoggedPairs::Complete(_)));
        let log = ItemLog::open(dir.path(), 7, 0).unwrap();
        log.replayed(1, &LoggedItem::of(b"a")).unwrap();
        assert!(matches!(log.pairs(1).unwrap(), LoggedPairs::Missing(_)));
    }
}
